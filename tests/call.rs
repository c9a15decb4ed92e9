//! End-to-end tests of eth_call and eth_estimateGas with contracts of our own, placed in a test
//! genesis alloc (all forks through Prague active from block 0), served by the real binary.

#![allow(clippy::unwrap_used)]

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use support::{Server, fixtures, ingested};

const GAS_LIMIT: u64 = 2_000_000;
const SENDER: &str = "0x1000000000000000000000000000000000000001";

/// Code that copies `payload` (appended to it) into memory and ends with `opcode` (RETURN 0xf3
/// or REVERT 0xfd) over it.
fn ending_with(opcode: u8, payload: &[u8]) -> String {
    assert!(payload.len() < 256);
    let len = payload.len() as u8;
    let mut code = vec![
        0x60, len, 0x60, 12, 0x60, 0, 0x39, 0x60, len, 0x60, 0, opcode,
    ];
    code.extend_from_slice(payload);
    alloy_primitives::hex::encode_prefixed(code)
}

fn error_string(reason: &str) -> Vec<u8> {
    let mut payload = vec![0x08, 0xc3, 0x79, 0xa0];
    payload.extend_from_slice(&[0u8; 31]);
    payload.push(0x20);
    payload.extend_from_slice(&[0u8; 31]);
    payload.push(reason.len() as u8);
    let mut padded = reason.as_bytes().to_vec();
    padded.resize(reason.len().div_ceil(32) * 32, 0);
    payload.extend_from_slice(&padded);
    payload
}

fn panic_payload(code: u8) -> Vec<u8> {
    let mut payload = vec![0x4e, 0x48, 0x7b, 0x71];
    payload.extend_from_slice(&[0u8; 31]);
    payload.push(code);
    payload
}

/// `InsufficientBalance(uint256 available, uint256 required)` with 7 and 42: a custom error.
fn custom_error() -> Vec<u8> {
    let mut payload =
        alloy_primitives::keccak256("InsufficientBalance(uint256,uint256)")[..4].to_vec();
    for value in [7u8, 42] {
        payload.extend_from_slice(&[0u8; 31]);
        payload.push(value);
    }
    payload
}

fn address(n: u8) -> String {
    format!("0x{:040x}", 0xc0de_0000u64 + u64::from(n))
}

/// The contracts, by address number.
fn contracts() -> Vec<(u8, String)> {
    // CALL contract 1 (which reverts with Error("inner")), then revert with its return data.
    let nested =
        "0x600060006000600060007300000000000000000000000000000000c0de00015af1503d600060003e3d6000fd"
            .to_string();
    vec![
        (1, ending_with(0xfd, &error_string("inner"))),
        (2, ending_with(0xfd, &error_string("not enough tokens"))),
        (3, ending_with(0xfd, &panic_payload(0x11))),
        (4, ending_with(0xfd, &panic_payload(0x12))),
        (5, ending_with(0xfd, &panic_payload(0x32))),
        (6, ending_with(0xfd, &panic_payload(0x01))),
        (7, ending_with(0xfd, &custom_error())),
        (8, "0x60006000fd".into()),
        (9, nested),
        // JUMPDEST PUSH1 0 JUMP: loops until the gas runs out.
        (10, "0x5b600056".into()),
        // Returns GAS as a word.
        (11, "0x5a60005260206000f3".into()),
        // Returns storage slot 0 as a word.
        (12, "0x60005460005260206000f3".into()),
        (13, ending_with(0xf3, b"hello")),
        // Returns NUMBER, TIMESTAMP, BASEFEE, CHAINID as four words.
        (
            14,
            "0x436000524260205248604052466060526080 6000f3".replace(' ', ""),
        ),
        // INVALID.
        (15, "0xfe".into()),
    ]
}

fn genesis() -> Value {
    let mut alloc = serde_json::Map::new();
    for (n, code) in contracts() {
        let mut account = json!({"balance": "0x0", "code": code});
        if n == 12 {
            account["storage"] = json!({"0x0000000000000000000000000000000000000000000000000000000000000000": "0x07"});
        }
        alloc.insert(address(n), account);
    }
    alloc.insert(SENDER.into(), json!({"balance": "0x3635c9adc5dea00000"}));
    json!({
        "config": {
            "chainId": 1337,
            "homesteadBlock": 0, "eip150Block": 0, "eip155Block": 0, "eip158Block": 0,
            "byzantiumBlock": 0, "constantinopleBlock": 0, "petersburgBlock": 0,
            "istanbulBlock": 0, "berlinBlock": 0, "londonBlock": 0,
            "mergeNetsplitBlock": 0, "terminalTotalDifficulty": 0,
            "shanghaiTime": 0, "cancunTime": 0, "pragueTime": 0,
            "depositContractAddress": "0x0000000000000000000000000000000000000000",
            "blobSchedule": {
                "cancun": {"target": 3, "max": 6, "baseFeeUpdateFraction": 3338477},
                "prague": {"target": 6, "max": 9, "baseFeeUpdateFraction": 5007716}
            }
        },
        "nonce": "0x0",
        "timestamp": "0x0",
        "extraData": "0x",
        "gasLimit": format!("{GAS_LIMIT:#x}"),
        "difficulty": "0x0",
        "baseFeePerGas": "0x3b9aca00",
        "mixHash": "0x0000000000000000000000000000000000000000000000000000000000000000",
        "coinbase": "0x0000000000000000000000000000000000000000",
        "alloc": alloc,
    })
}

/// A folder with the test genesis and an empty chain file, laid out like a fixture folder.
fn chain_folder() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("call-test-chain");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("genesis.json"), genesis().to_string()).unwrap();
    std::fs::write(dir.join("chain.rlp"), b"").unwrap();
    dir
}

fn server(extra: &str) -> Server {
    Server::start(&ingested(&chain_folder()), extra)
}

fn call(server: &Server, to: u8, extra: Value) -> Value {
    let mut object = json!({"from": SENDER, "to": address(to)});
    for (k, v) in extra.as_object().unwrap() {
        object[k] = v.clone();
    }
    server.call("eth_call", json!([object, "latest"]))
}

fn hex(bytes: &[u8]) -> Value {
    json!(alloy_primitives::hex::encode_prefixed(bytes))
}

#[test]
fn reverts_carry_geths_messages_and_the_payload() {
    let server = server("");
    let cases: Vec<(u8, &str, Vec<u8>)> = vec![
        (
            2,
            "execution reverted: not enough tokens",
            error_string("not enough tokens"),
        ),
        (
            3,
            "execution reverted: arithmetic underflow or overflow",
            panic_payload(0x11),
        ),
        (
            4,
            "execution reverted: division or modulo by zero",
            panic_payload(0x12),
        ),
        (
            5,
            "execution reverted: out-of-bounds access of an array or bytesN",
            panic_payload(0x32),
        ),
        (6, "execution reverted: assert(false)", panic_payload(0x01)),
        (7, "execution reverted", custom_error()),
        (8, "execution reverted", vec![]),
        // The inner contract's revert, bubbled up by the outer one.
        (9, "execution reverted: inner", error_string("inner")),
    ];
    for (to, message, payload) in cases {
        let response = call(&server, to, json!({}));
        assert_eq!(
            response["error"],
            json!({"code": 3, "message": message, "data": hex(&payload)}),
            "contract {to}"
        );
        // eth_estimateGas reports the same revert.
        let estimate = server.call(
            "eth_estimateGas",
            json!([{"from": SENDER, "to": address(to)}]),
        );
        assert_eq!(
            estimate["error"], response["error"],
            "estimate, contract {to}"
        );
    }
    assert_eq!(call(&server, 8, json!({}))["error"]["data"], "0x");
    assert_eq!(call(&server, 13, json!({}))["result"], hex(b"hello"));
}

#[test]
fn gas_is_capped_at_ten_block_gas_limits() {
    // The endless loop below runs 20 Mgas in a debug build: on a loaded machine that outlasts
    // the default 5 s timeout, which is not what this test is about.
    let server = server("call_timeout_ms = 120000");
    let cap = 10 * GAS_LIMIT;
    let gas_seen = |gas: Option<u64>| -> u64 {
        let extra = gas.map_or(json!({}), |g| json!({"gas": format!("{g:#x}")}));
        let result = call(&server, 11, extra)["result"]
            .as_str()
            .unwrap()
            .to_string();
        u64::from_str_radix(result.trim_start_matches("0x"), 16).unwrap()
    };
    // GAS inside the call: the gas limit less the 21000 intrinsic gas and GAS's own 2.
    assert_eq!(gas_seen(None), cap - 21_000 - 2);
    assert_eq!(gas_seen(Some(u64::MAX >> 1)), cap - 21_000 - 2);
    assert_eq!(gas_seen(Some(100_000)), 100_000 - 21_000 - 2);

    // An endless loop stops at the cap with geth's out-of-gas error.
    let looping = call(&server, 10, json!({}));
    assert_eq!(looping["error"]["code"], -32000, "{looping}");
    assert_eq!(looping["error"]["message"], "out of gas");
    let estimate = server.call(
        "eth_estimateGas",
        json!([{"from": SENDER, "to": address(10)}]),
    );
    assert_eq!(
        estimate["error"]["message"],
        format!("gas required exceeds allowance ({GAS_LIMIT})")
    );
}

#[test]
fn a_call_that_runs_too_long_is_aborted() {
    // 20 ms: far less than an endless loop hashing 4 KiB a turn needs to burn its 20M gas
    // (about 10 ns a gas in a release build), and enough for a short call to wait for its
    // thread and run (the time limit counts from the request's arrival: a call still waiting
    // at its deadline is answered unrun).
    let server = server("call_timeout_ms = 20");
    // JUMPDEST PUSH2 0x1000 PUSH1 0 KECCAK256 POP PUSH1 0 JUMP, in place of contract 10.
    let hashing_loop = json!({ address(10): {"code": "0x5b61100060002050600056"} });
    let response = server.call(
        "eth_call",
        json!([{"from": SENDER, "to": address(10)}, "latest", hashing_loop]),
    );
    assert_eq!(response["error"]["code"], -32000, "{response}");
    assert_eq!(
        response["error"]["message"],
        "execution aborted (timeout = 20ms)"
    );
    // A call that ends in time is unaffected.
    assert_eq!(call(&server, 13, json!({}))["result"], hex(b"hello"));
}

#[test]
fn state_overrides_replace_balance_code_and_storage() {
    let server = server("");
    let slot0 = "0x0000000000000000000000000000000000000000000000000000000000000000";
    let word = |n: u8| json!(format!("0x{n:064x}"));
    let read = |overrides: Value| {
        server.call(
            "eth_call",
            json!([{"from": SENDER, "to": address(12)}, "latest", overrides]),
        )["result"]
            .clone()
    };
    assert_eq!(read(json!({})), word(7));
    assert_eq!(
        read(json!({address(12): {"stateDiff": {slot0: word(9)}}})),
        word(9)
    );
    assert_eq!(read(json!({address(12): {"state": {}}})), word(0));
    // New code at an empty address.
    let fresh = "0x00000000000000000000000000000000000000ff";
    let response = server.call(
        "eth_call",
        json!([{"from": SENDER, "to": fresh}, "latest", {fresh: {"code": ending_with(0xf3, b"hi")}}]),
    );
    assert_eq!(response["result"], hex(b"hi"));
    // A balance override pays for a call with a gas price.
    let poor = "0x00000000000000000000000000000000000000aa";
    let priced =
        json!({"from": poor, "to": address(13), "gasPrice": "0x3b9aca00", "gas": "0x10000"});
    let refused = server.call("eth_call", json!([priced, "latest"]));
    assert_eq!(refused["error"]["code"], -32000);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("insufficient funds for gas * price + value"),
        "{refused}"
    );
    let paid = server.call(
        "eth_call",
        json!([priced, "latest", {poor: {"balance": "0xde0b6b3a7640000"}}]),
    );
    assert_eq!(paid["result"], hex(b"hello"));
    let both = server.call(
        "eth_call",
        json!([{"to": address(12)}, "latest", {address(12): {"state": {}, "stateDiff": {}}}]),
    );
    assert_eq!(both["error"]["code"], -32602);
}

#[test]
fn calls_see_the_block_environment_and_default_to_zero_fees() {
    let server = server("");
    // No fee fields: BASEFEE reads 0 (geth lowers the base fee for such calls), from defaults
    // to the zero address.
    let response = server.call("eth_call", json!([{"to": address(14)}, "latest"]));
    let words: Vec<u64> = response["result"].as_str().unwrap().as_bytes()[2..]
        .chunks(64)
        .map(|w| u64::from_str_radix(std::str::from_utf8(w).unwrap(), 16).unwrap())
        .collect();
    assert_eq!(words, vec![0, 0, 0, 1337]);
    // With a fee named, BASEFEE is the block's.
    let priced = server.call(
        "eth_call",
        json!([{"from": SENDER, "to": address(14), "maxFeePerGas": "0x77359400"}, "latest"]),
    );
    assert_eq!(
        &priced["result"].as_str().unwrap()[2 + 128..2 + 192],
        format!("{:064x}", 1_000_000_000u64)
    );
    // A fee cap under the block's base fee (1 gwei) is refused as geth refuses it.
    let cheap = server.call(
        "eth_call",
        json!([{"from": SENDER, "to": address(13), "maxFeePerGas": "0x10"}, "latest"]),
    );
    assert_eq!(cheap["error"]["code"], -32000);
    assert_eq!(
        cheap["error"]["message"],
        format!(
            "max fee per gas less than block base fee: address {}, maxFeePerGas: 16, baseFee: 1000000000",
            alloy_primitives::Address::from_str(SENDER).unwrap()
        )
    );
    let invalid = server.call("eth_call", json!([{"to": address(15)}, "latest"]));
    assert_eq!(
        invalid["error"],
        json!({"code": -32000, "message": "invalid opcode: INVALID"})
    );
    // input and data are the same field; both given must agree.
    let conflict = server.call(
        "eth_call",
        json!([{"to": address(13), "input": "0x01", "data": "0x02"}, "latest"]),
    );
    assert_eq!(conflict["error"]["code"], -32602);
}

#[test]
fn estimates_follow_geth() {
    let server = server("");
    let estimate = |to: &str| server.call("eth_estimateGas", json!([{"from": SENDER, "to": to}]));
    // A plain transfer to an account without code is exactly 21000.
    assert_eq!(
        estimate("0x00000000000000000000000000000000000000bb")["result"],
        "0x5208"
    );
    let returning = estimate(&address(13));
    let gas = u64::from_str_radix(
        returning["result"]
            .as_str()
            .unwrap()
            .trim_start_matches("0x"),
        16,
    )
    .unwrap();
    // 21000 plus a handful of cheap opcodes and memory.
    assert!((21_000..22_000).contains(&gas), "{gas}");
}

/// A call at an old block sees the state after that block: on the rpc-compat chain the counter
/// in slot 0 of 0x7dcd…27df was 6 after block 10 and is 0x38 at the head. The contract's code is
/// replaced (override) by one that returns slot 0; its storage stays the chain's.
#[test]
fn a_call_at_an_old_block_sees_the_old_state() {
    let server = Server::start(&ingested(&fixtures()), "");
    let counter = "0x7dcd17433742f4c0ca53122ab541d0ba67fc27df";
    let read = |at: Value| {
        server.call(
            "eth_call",
            json!([{"to": counter}, at, {counter: {"code": "0x60005460005260206000f3"}}]),
        )["result"]
            .clone()
    };
    assert_eq!(read(json!("0xa")), json!(format!("0x{:064x}", 6)));
    assert_eq!(read(json!("latest")), json!(format!("0x{:064x}", 0x38)));
    let hash = server.call("eth_getBlockByNumber", json!(["0xa", false]))["result"]["hash"].clone();
    assert_eq!(
        read(json!({"blockHash": hash})),
        json!(format!("0x{:064x}", 6))
    );
}

/// ethers v6, as a contract developer uses it: the library itself surfaces the revert reason,
/// and decodes a Panic and a custom error from the error's data.
#[test]
fn ethers_surfaces_reverts() {
    let server = server("");
    let stdout = support::node_client(
        "ethers-reverts.mjs",
        &[
            &server.http_url(support::KEY),
            "1337",
            &address(2),
            &address(3),
            &address(7),
            &address(13),
        ],
    );
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok: ")).count(),
        8,
        "{stdout}"
    );
}

/// debug_traceCall with the callTracer of a call that reverts inside a nested call: the inner
/// frame carries the error and the revert reason, and so does the outer one that bubbled it
/// up, as geth reports them.
#[test]
fn traced_calls_show_the_inner_revert() {
    let server = server("");
    let payload = hex(&error_string("inner"));
    let frame = server.result(
        "debug_traceCall",
        json!([{"from": SENDER, "to": address(9)}, "latest", {"tracer": "callTracer"}]),
    );
    let inner = &frame["calls"][0];
    assert_eq!(
        inner,
        &json!({
            "from": address(9),
            "gas": inner["gas"],
            "gasUsed": inner["gasUsed"],
            "to": address(1),
            "input": "0x",
            "output": payload,
            "error": "execution reverted",
            "revertReason": "inner",
            "value": "0x0",
            "type": "CALL",
        })
    );
    assert_eq!(frame["error"], "execution reverted");
    assert_eq!(frame["revertReason"], "inner");
    assert_eq!(frame["output"], payload);
    assert_eq!(frame["from"], SENDER);
    assert_eq!(frame["to"], address(9));
    assert_eq!(frame["type"], "CALL");
    // The gas the call used is the one eth_estimateGas's failure and the struct logger see.
    let logs = server.result(
        "debug_traceCall",
        json!([{"from": SENDER, "to": address(9)}, "latest"]),
    );
    assert_eq!(
        json!(format!("{:#x}", logs["gas"].as_u64().unwrap())),
        frame["gasUsed"]
    );
    let reverts: Vec<&Value> = logs["structLogs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|log| log["op"] == "REVERT")
        .collect();
    assert_eq!(reverts.len(), 2);
    assert_eq!(
        (&reverts[0]["depth"], &reverts[1]["depth"]),
        (&json!(2), &json!(1))
    );
    // State overrides apply as in eth_call, block overrides change the environment.
    let fresh = "0x00000000000000000000000000000000000000ff";
    let overridden = server.result(
        "debug_traceCall",
        json!([{"to": fresh}, "latest", {
            "tracer": "callTracer",
            "stateOverrides": {fresh: {"code": ending_with(0xf3, b"hi")}},
        }]),
    );
    assert_eq!(overridden["output"], hex(b"hi"));
    let env = server.result(
        "debug_traceCall",
        json!([{"to": address(14)}, "latest", {
            "tracer": "callTracer",
            "blockOverrides": {"number": "0x99", "time": "0x1234"},
        }]),
    );
    let words = env["output"].as_str().unwrap();
    assert_eq!(&words[2..66], format!("{:064x}", 0x99));
    assert_eq!(&words[66..130], format!("{:064x}", 0x1234));
    let refused = server.call(
        "debug_traceCall",
        json!([{"to": address(14)}, "latest", {"blockOverrides": {"beaconRoot": format!("0x{:064x}", 1)}}]),
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

/// eth_getStorageValues reads several slots of several accounts at one block, as
/// eth_getStorageAt reads each, and refuses more than geth's 1024 slots with geth's code.
#[test]
fn storage_values_read_many_slots_at_one_block() {
    let server = Server::start(&ingested(&fixtures()), "");
    let counter = "0x7dcd17433742f4c0ca53122ab541d0ba67fc27df";
    let slot = |n: u8| format!("0x{n:064x}");
    let request = json!({counter: [slot(0), slot(1)], "0x00000000000000000000000000000000000000aa": [slot(0)]});
    for at in ["0xa", "latest"] {
        let values = server.result("eth_getStorageValues", json!([request, at]));
        for (address, slots) in request.as_object().unwrap() {
            for (i, key) in slots.as_array().unwrap().iter().enumerate() {
                let single = server.result("eth_getStorageAt", json!([address, key, at]));
                assert_eq!(values[address][i], single, "{address} {key} at {at}");
            }
        }
    }
    let at_ten = server.result("eth_getStorageValues", json!([request, "0xa"]));
    assert_eq!(at_ten[counter][0], json!(format!("0x{:064x}", 6)));
    let many: Vec<String> = (0..1025u32).map(|n| format!("0x{n:064x}")).collect();
    let refused = server.call("eth_getStorageValues", json!([{counter: many}]));
    assert_eq!(
        refused["error"],
        json!({"code": -38026, "message": "too many slots (max 1024)"})
    );
}

/// eth_estimateGas of a type-4 transaction: the authorizations' intrinsic cost (25000 each for
/// a new authority) counts, so the estimate of a plain transfer with one is not geth's 21000
/// shortcut (which used to fail with "intrinsic gas too low: have 21000, want 46000"), and a
/// call with the estimate succeeds.
#[test]
fn estimates_count_the_authorizations_intrinsic_cost() {
    let server = server("");
    let accounts = quarry_devchain::DevAccounts::new(1).unwrap();
    let authorization = accounts
        .authorize(
            0,
            alloy_eips::eip7702::Authorization {
                chain_id: alloy_primitives::U256::from(1337),
                address: alloy_primitives::Address::from_str(&address(13)).unwrap(),
                nonce: 0,
            },
        )
        .unwrap();
    let list = serde_json::to_value(vec![authorization]).unwrap();
    for to in ["0x00000000000000000000000000000000000000bb", &address(13)] {
        let call = json!({"from": SENDER, "to": to, "authorizationList": list});
        let estimate = server.call("eth_estimateGas", json!([call]));
        let gas = u64::from_str_radix(
            estimate["result"]
                .as_str()
                .unwrap_or_else(|| panic!("{to}: {estimate}"))
                .trim_start_matches("0x"),
            16,
        )
        .unwrap();
        // At least the intrinsic cost, and within geth's 1.5% search tolerance above it.
        assert!((46_000..47_000).contains(&gas), "{to}: {gas}");
        let mut limited = call.clone();
        limited["gas"] = json!(format!("{gas:#x}"));
        let answer = server.call("eth_call", json!([limited, "latest"]));
        assert!(answer.get("result").is_some(), "{to}: {answer}");
        limited["gas"] = json!(format!("{:#x}", 45_999));
        let short = server.call("eth_call", json!([limited, "latest"]));
        assert_eq!(
            short["error"]["message"], "intrinsic gas too low: have 45999, want 46000",
            "{to}"
        );
    }
    // Without authorizations the 21000 shortcut stands.
    let plain = server.call(
        "eth_estimateGas",
        json!([{"from": SENDER, "to": "0x00000000000000000000000000000000000000bb"}]),
    );
    assert_eq!(plain["result"], "0x5208");
}

/// geth's `movePrecompileToAddress`: the precompile answers at its new address, and code
/// overriding its old address runs there instead.
#[test]
fn state_overrides_move_precompiles() {
    let server = server("");
    let sha256 = "0x0000000000000000000000000000000000000002";
    let moved = "0x0000000000000000000000000000000000001234";
    let overrides =
        json!({sha256: {"movePrecompileToAddress": moved, "code": ending_with(0xf3, b"hi")}});
    let call = |to: &str| {
        server.call(
            "eth_call",
            json!([{"from": SENDER, "to": to}, "latest", overrides]),
        )["result"]
            .clone()
    };
    assert_eq!(
        call(moved),
        "0xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(call(sha256), hex(b"hi"));
    let not_precompile = server.call(
        "eth_call",
        json!([{"to": moved}, "latest", {address(13): {"movePrecompileToAddress": moved}}]),
    );
    assert_eq!(not_precompile["error"]["code"], -32000, "{not_precompile}");
}
