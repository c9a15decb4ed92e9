//! debug_trace* end to end: the dev chain (testdata/devnet) and a few blocks built on top of it
//! whose transactions revert in every style (Error(string), Panic, a custom error, a revert
//! bubbled up from a nested call), traced through `quarry serve`; and the limits: geth's
//! `timeout`, the server's deadline, and the bound on struct logs.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_consensus::{TxEip1559, TxEnvelope, TypedTransaction};
use alloy_eips::eip2930::AccessList;
use alloy_primitives::{Address, B64, B256, Bytes, TxKind, U256, hex, keccak256};
use alloy_sol_types::{SolCall, SolError};
use quarry_devchain::{Contracts, DevAccounts, contracts::Reverter};
use quarry_executor::{BlockTemplate, verify};
use serde_json::{Value, json};
use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
};
use support::{Server, ingest_args, ingested, run_quarry};

const GWEI: u128 = 1_000_000_000;
/// The dev account that sends the reverting transactions.
const SENDER: usize = 5;

fn devnet() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet")
}

fn accounts() -> DevAccounts {
    DevAccounts::new(quarry_devchain::account_count(
        quarry_devchain::GenerateOptions::default().txs_per_block,
    ))
    .unwrap()
}

/// How one transaction of the extension reverts.
#[derive(Debug, Clone)]
struct Revert {
    name: &'static str,
    hash: B256,
    /// The calldata (or, for the nested revert, the init code) it ran.
    input: Bytes,
    /// The revert reason geth decodes (Error(string) and Panic only).
    reason: Option<&'static str>,
    /// The payload the transaction reverted with.
    payload: Vec<u8>,
    nested: bool,
}

/// Init code that calls `Reverter.failWithReason()` at `reverter` and reverts with what the
/// call returned: a revert at depth 2 bubbled up to depth 1.
fn nested_revert(reverter: Address) -> Vec<u8> {
    let mut code = vec![0x63];
    code.extend_from_slice(&Reverter::failWithReasonCall::SELECTOR);
    // PUSH1 0xe0 SHL PUSH1 0 MSTORE: the selector at memory 0.
    code.extend_from_slice(&[0x60, 0xe0, 0x1b, 0x60, 0x00, 0x52]);
    // CALL(gas, reverter, 0, 0, 4, 0, 0)
    code.extend_from_slice(&[
        0x60, 0x00, 0x60, 0x00, 0x60, 0x04, 0x60, 0x00, 0x60, 0x00, 0x73,
    ]);
    code.extend_from_slice(reverter.as_slice());
    code.extend_from_slice(&[0x5a, 0xf1, 0x50]);
    // RETURNDATACOPY(0, 0, RETURNDATASIZE), REVERT(0, RETURNDATASIZE)
    code.extend_from_slice(&[0x3d, 0x60, 0x00, 0x60, 0x00, 0x3e, 0x3d, 0x60, 0x00, 0xfd]);
    code
}

fn error_string(reason: &str) -> Vec<u8> {
    alloy_sol_types::Revert::from(reason).abi_encode()
}

fn panic_payload(code: u8) -> Vec<u8> {
    alloy_sol_types::Panic::from(code as u64).abi_encode()
}

/// One reverting transaction to build.
struct Plan {
    name: &'static str,
    to: TxKind,
    input: Vec<u8>,
    reason: Option<&'static str>,
    payload: Vec<u8>,
    nested: bool,
}

struct Extended {
    datadir: PathBuf,
    reverts: Vec<Revert>,
    /// The block holding them.
    block: u64,
}

/// The dev chain ingested afresh, plus one block whose transactions revert in every style,
/// built with the executor's `build_block` as `quarry devchain` builds its blocks.
fn extended() -> &'static Extended {
    static CHAIN: OnceLock<Extended> = OnceLock::new();
    CHAIN.get_or_init(|| {
        let datadir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("trace-devnet");
        if datadir.exists() {
            std::fs::remove_dir_all(&datadir).unwrap();
        }
        let (genesis_path, chain) = (devnet().join("genesis.json"), devnet().join("chain.rlp"));
        run_quarry(ingest_args(&datadir, &genesis_path, &[&chain]));
        let genesis: alloy_genesis::Genesis =
            serde_json::from_str(&std::fs::read_to_string(&genesis_path).unwrap()).unwrap();
        let db = quarry_storage::Database::open(&datadir).unwrap();
        let mut importer = quarry_ingest::Importer::open(db, &genesis).unwrap();
        let accounts = accounts();
        let contracts = Contracts::of(accounts.address(0));
        let sender = accounts.address(SENDER);
        let parent = importer.head_header().clone();
        let base_fee = verify::expected_base_fee(importer.spec(), &parent).unwrap();
        let nonce = importer
            .database()
            .reader()
            .unwrap()
            .account(&sender)
            .unwrap()
            .unwrap()
            .nonce;
        let custom = Reverter::Unauthorized {
            caller: sender,
            code: U256::from(42),
        }
        .abi_encode();
        let reverter = TxKind::Call(contracts.reverter);
        let on_purpose = "Reverter: failed on purpose";
        let plans = [
            Plan {
                name: "Error(string)",
                to: reverter,
                input: Reverter::failWithReasonCall {}.abi_encode(),
                reason: Some(on_purpose),
                payload: error_string(on_purpose),
                nested: false,
            },
            Plan {
                name: "Panic(assert)",
                to: reverter,
                input: Reverter::failAssertCall { x: U256::from(1) }.abi_encode(),
                reason: Some("assert(false)"),
                payload: panic_payload(0x01),
                nested: false,
            },
            Plan {
                name: "Panic(division)",
                to: reverter,
                input: Reverter::failDivideCall {
                    divisor: U256::ZERO,
                }
                .abi_encode(),
                reason: Some("division or modulo by zero"),
                payload: panic_payload(0x12),
                nested: false,
            },
            Plan {
                name: "custom error",
                to: reverter,
                input: Reverter::failCustomCall {}.abi_encode(),
                reason: None,
                payload: custom,
                nested: false,
            },
            Plan {
                name: "nested revert",
                to: TxKind::Create,
                input: nested_revert(contracts.reverter),
                reason: Some(on_purpose),
                payload: error_string(on_purpose),
                nested: true,
            },
        ];
        let mut transactions: Vec<TxEnvelope> = Vec::new();
        let mut reverts = Vec::new();
        for (offset, plan) in plans.into_iter().enumerate() {
            let Plan {
                name,
                to,
                input,
                reason,
                payload,
                nested,
            } = plan;
            let tx = TxEip1559 {
                chain_id: quarry_devchain::CHAIN_ID,
                nonce: nonce + offset as u64,
                gas_limit: 200_000,
                max_fee_per_gas: 2 * base_fee as u128 + GWEI,
                max_priority_fee_per_gas: GWEI,
                to,
                value: U256::ZERO,
                access_list: AccessList::default(),
                input: input.clone().into(),
            };
            let signed = accounts
                .sign(SENDER, TypedTransaction::Eip1559(tx))
                .unwrap();
            reverts.push(Revert {
                name,
                hash: *signed.tx_hash(),
                input: input.into(),
                reason,
                payload,
                nested,
            });
            transactions.push(signed);
        }
        let number = parent.number + 1;
        let template = BlockTemplate {
            timestamp: parent.timestamp + quarry_devchain::BLOCK_TIME,
            beneficiary: quarry_devchain::MINER,
            gas_limit: parent.gas_limit,
            extra_data: Bytes::from_static(b"quarry trace test"),
            mix_hash: keccak256(number.to_be_bytes()),
            nonce: B64::ZERO,
            parent_beacon_block_root: keccak256(b"beacon"),
            ommers: Vec::new(),
            senders: vec![sender; transactions.len()],
            transactions,
            withdrawals: Vec::new(),
        };
        let tx = importer.database().writer().unwrap();
        importer.build_block(&tx, template).unwrap();
        tx.commit().unwrap();
        Extended {
            datadir,
            reverts,
            block: number,
        }
    })
}

fn quantity(value: &Value) -> u64 {
    u64::from_str_radix(value.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

fn hex_bytes(value: &Value) -> Vec<u8> {
    hex::decode(value.as_str().unwrap()).unwrap()
}

/// Each reverting transaction's struct logs end in a REVERT at the depth and pc where its code
/// holds REVERT, return what eth_call of the same call returns, and use the receipt's gas; its
/// call trace carries geth's error and reason, in the inner frame too for the nested revert.
#[test]
fn reverting_transactions_trace_where_they_revert() {
    let chain = extended();
    let server = Server::start(&chain.datadir, "");
    let reverter = Contracts::of(accounts().address(0)).reverter;
    let reverter_code = hex_bytes(&server.result("eth_getCode", json!([reverter, "latest"])));
    let block = server.result(
        "eth_getBlockByNumber",
        json!([format!("{:#x}", chain.block), false]),
    );
    assert_eq!(
        block["transactions"].as_array().unwrap().len(),
        chain.reverts.len()
    );
    for revert in &chain.reverts {
        let name = revert.name;
        let receipt = server.result("eth_getTransactionReceipt", json!([revert.hash]));
        assert_eq!(receipt["status"], "0x0", "{name}");
        let gas_used = quantity(&receipt["gasUsed"]);

        let trace = server.result("debug_traceTransaction", json!([revert.hash]));
        assert_eq!(trace["failed"], true, "{name}");
        assert_eq!(trace["gas"], gas_used, "{name}: the receipt's gas");
        assert_eq!(
            hex_bytes(&trace["returnValue"]),
            revert.payload,
            "{name}: the revert payload"
        );
        let logs = trace["structLogs"].as_array().unwrap();
        let last = logs.last().unwrap();
        assert_eq!(last["op"], "REVERT", "{name}");
        let pc = last["pc"].as_u64().unwrap() as usize;
        if revert.nested {
            // The inner REVERT, in Reverter's code at depth 2, comes first.
            let inner = logs.iter().find(|log| log["op"] == "REVERT").unwrap();
            assert_eq!(inner["depth"], 2, "{name}");
            let inner_pc = inner["pc"].as_u64().unwrap() as usize;
            assert_eq!(reverter_code[inner_pc], 0xfd, "{name}: inner pc {inner_pc}");
            assert_eq!(last["depth"], 1, "{name}");
            assert_eq!(
                pc,
                revert.input.len() - 1,
                "{name}: the init code's last byte"
            );
        } else {
            assert_eq!(last["depth"], 1, "{name}");
            assert_eq!(reverter_code[pc], 0xfd, "{name}: pc {pc}");
            assert!(logs.iter().all(|log| log["depth"] == 1), "{name}");
        }
        // The struct logs' gas agrees with itself: each step's gas less its cost is the next
        // step's gas, within a frame that makes no call.
        if !revert.nested {
            for pair in logs.windows(2) {
                assert_eq!(
                    pair[0]["gas"].as_u64().unwrap() - pair[0]["gasCost"].as_u64().unwrap(),
                    pair[1]["gas"].as_u64().unwrap(),
                    "{name}: {pair:?}"
                );
            }
        }

        // eth_call of the same call, on the state before the block, reverts with the payload.
        let call = json!({
            "from": format!("{:#x}", accounts().address(SENDER)),
            "to": (!revert.nested).then_some(reverter),
            "input": revert.input,
        });
        let parent = format!("{:#x}", chain.block - 1);
        let answer = server.call("eth_call", json!([call, parent]));
        assert_eq!(
            hex_bytes(&answer["error"]["data"]),
            revert.payload,
            "{name}: {answer}"
        );

        let frame = server.result(
            "debug_traceTransaction",
            json!([revert.hash, {"tracer": "callTracer"}]),
        );
        assert_eq!(frame["error"], "execution reverted", "{name}");
        assert_eq!(quantity(&frame["gasUsed"]), gas_used, "{name}");
        assert_eq!(hex_bytes(&frame["output"]), revert.payload, "{name}");
        assert_eq!(
            frame.get("revertReason").and_then(Value::as_str),
            revert.reason,
            "{name}"
        );
        if revert.nested {
            assert_eq!(frame["type"], "CREATE", "{name}");
            let inner = &frame["calls"][0];
            assert_eq!(inner["type"], "CALL", "{name}");
            assert_eq!(inner["to"], json!(reverter), "{name}");
            assert_eq!(inner["error"], "execution reverted", "{name}");
            assert_eq!(inner["revertReason"], revert.reason.unwrap(), "{name}");
            assert_eq!(hex_bytes(&inner["output"]), revert.payload, "{name}");
        } else {
            assert_eq!(frame["type"], "CALL", "{name}");
            assert!(frame.get("calls").is_none(), "{name}");
        }
    }
}

/// The dev chain's own failing transactions (`Reverter.attempt()`: a write, then
/// Error(string)) trace to their reason with the receipt's gas.
#[test]
fn the_dev_chains_failed_transactions_trace_to_their_reason() {
    let server = Server::start(&ingested(&devnet()), "");
    let reverter = Contracts::of(accounts().address(0)).reverter;
    let block = server.result("eth_getBlockByNumber", json!(["0x2", true]));
    let attempt = block["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tx| tx["to"] == json!(reverter))
        .unwrap();
    let hash = attempt["hash"].clone();
    let receipt = server.result("eth_getTransactionReceipt", json!([hash]));
    assert_eq!(receipt["status"], "0x0");
    let trace = server.result("debug_traceTransaction", json!([hash]));
    assert_eq!(trace["gas"], quantity(&receipt["gasUsed"]));
    assert_eq!(
        hex_bytes(&trace["returnValue"]),
        error_string("Reverter: attempt rejected")
    );
    let logs = trace["structLogs"].as_array().unwrap();
    // The write happened (SSTORE with geth's storage snapshot) before the revert.
    let store = logs.iter().find(|log| log["op"] == "SSTORE").unwrap();
    assert_eq!(store["storage"].as_object().unwrap().len(), 1);
    assert_eq!(logs.last().unwrap()["op"], "REVERT");
    let frame = server.result(
        "debug_traceTransaction",
        json!([hash, {"tracer": "callTracer"}]),
    );
    assert_eq!(frame["revertReason"], "Reverter: attempt rejected");
    // The prestate tracer's diff shows no change to the reverted write's slot.
    let diff = server.result(
        "debug_traceTransaction",
        json!([hash, {"tracer": "prestateTracer", "tracerConfig": {"diffMode": true}}]),
    );
    let reverter_key = format!("{reverter:#x}");
    assert!(
        diff["post"].get(&reverter_key).is_none(),
        "reverted writes are no change: {diff}"
    );
}

/// Every block of the dev chain (proof of work with uncles, the merge, withdrawals, blobs, an
/// EIP-7702 delegation, Osaka), re-executed: each transaction's call trace uses exactly its
/// receipt's gas, and the block traced by number, by hash and from its RLP is the same.
#[test]
fn block_traces_agree_with_the_stored_receipts() {
    let server = Server::start(&ingested(&devnet()), "");
    let head = quantity(&server.result("eth_blockNumber", json!([])));
    let call_tracer = json!({"tracer": "callTracer"});
    for number in 1..=head {
        let tag = format!("{number:#x}");
        let traces = server.result("debug_traceBlockByNumber", json!([tag, call_tracer]));
        let receipts = server.result("eth_getBlockReceipts", json!([tag]));
        let traces = traces.as_array().unwrap();
        let receipts = receipts.as_array().unwrap();
        assert_eq!(traces.len(), receipts.len(), "block {number}");
        for (trace, receipt) in traces.iter().zip(receipts) {
            assert_eq!(
                trace["txHash"], receipt["transactionHash"],
                "block {number}"
            );
            assert_eq!(
                trace["result"]["gasUsed"], receipt["gasUsed"],
                "block {number}: {trace}"
            );
            assert_eq!(
                trace["result"].get("error").is_some(),
                receipt["status"] == "0x0",
                "block {number}: {trace}"
            );
        }
        if number % 8 == 0 {
            let block = server.result("eth_getBlockByNumber", json!([tag, false]));
            let by_hash = server.result(
                "debug_traceBlockByHash",
                json!([block["hash"], call_tracer]),
            );
            assert_eq!(by_hash.as_array().unwrap(), traces, "block {number}");
            let rlp = server.result("debug_getRawBlock", json!([tag]));
            let from_rlp = server.result("debug_traceBlock", json!([rlp, call_tracer]));
            assert_eq!(from_rlp.as_array().unwrap(), traces, "block {number}");
        }
    }
    let genesis = server.call("debug_traceBlockByNumber", json!(["0x0"]));
    assert_eq!(
        genesis["error"],
        json!({"code": -32000, "message": "genesis is not traceable"})
    );
    let unknown = server.call("debug_traceTransaction", json!([B256::repeat_byte(1)]));
    assert_eq!(
        unknown["error"],
        json!({"code": -32000, "message": "transaction not found"})
    );
}

/// geth's tracers and options: the 4byte selectors, the prestate with and without code, mux,
/// flatCall, noop, and the struct logger's switches and limit.
#[test]
fn tracers_and_options() {
    let chain = extended();
    let server = Server::start(&chain.datadir, "");
    let revert = &chain.reverts[1];
    let trace =
        |options: Value| server.result("debug_traceTransaction", json!([revert.hash, options]));
    let selector = hex::encode_prefixed(&revert.input[..4]);
    let four = trace(json!({"tracer": "4byteTracer"}));
    assert_eq!(four, json!({format!("{selector}-32"): 1}));
    assert_eq!(trace(json!({"tracer": "noopTracer"})), json!({}));
    let mux = trace(
        json!({"tracer": "muxTracer", "tracerConfig": {"4byteTracer": {}, "callTracer": {}}}),
    );
    assert_eq!(mux["4byteTracer"], four);
    assert_eq!(mux["callTracer"]["error"], "execution reverted");
    let flat = trace(json!({"tracer": "flatCallTracer"}));
    assert_eq!(flat[0]["transactionHash"], json!(revert.hash));
    assert_eq!(flat[0]["error"], "Reverted");
    let prestate = trace(json!({"tracer": "prestateTracer"}));
    let reverter = format!("{:#x}", Contracts::of(accounts().address(0)).reverter);
    assert!(prestate[&reverter]["code"].is_string(), "{prestate}");
    let no_code = trace(json!({"tracer": "prestateTracer", "tracerConfig": {"disableCode": true}}));
    assert!(no_code[&reverter].get("code").is_none(), "{no_code}");

    let full = trace(json!({}));
    let steps = full["structLogs"].as_array().unwrap();
    assert!(
        steps
            .iter()
            .all(|s| s["stack"].is_array() && s.get("memory").is_none())
    );
    let limited = trace(json!({"limit": 5, "disableStack": true, "enableMemory": true}));
    let limited = limited["structLogs"].as_array().unwrap();
    assert_eq!(limited.len(), 5);
    assert!(limited.iter().all(|s| s.get("stack").is_none()));
    // Solidity's prologue writes the free memory pointer at step 3: memory from step 4 on.
    assert_eq!(limited[3]["memory"].as_array().unwrap().len(), 3);
    for (a, b) in limited.iter().zip(steps) {
        assert_eq!(
            (&a["pc"], &a["op"], &a["gas"]),
            (&b["pc"], &b["op"], &b["gas"])
        );
    }
    let bad = server.call(
        "debug_traceTransaction",
        json!([revert.hash, {"tracer": "noSuchTracer"}]),
    );
    assert_eq!(bad["error"]["code"], -32000, "{bad}");
}

/// A loop that never ends, as code override: it runs until a deadline stops it.
const ENDLESS: &str = "0x5b600056";
/// A loop that first grows memory to 32 KiB: every step of it is a large struct log with memory.
const MEMORY_LOOP: &str = "0x6000617fff535b600656";

/// debug_traceCall of `code` with 50M gas.
fn endless_call(server: &Server, code: &str, options: Value) -> Value {
    looping_call(server, code, 50_000_000, options)
}

fn looping_call(server: &Server, code: &str, gas: u64, options: Value) -> Value {
    let to = "0x00000000000000000000000000000000000000ee";
    let mut config = options;
    config["stateOverrides"] = json!({to: {"code": code}});
    server.call(
        "debug_traceCall",
        json!([{"to": to, "gas": format!("{gas:#x}")}, "latest", config]),
    )
}

/// geth's `timeout` and the server's own deadline both stop a trace with geth's error.
#[test]
fn traces_stop_at_their_timeout_and_the_servers_deadline() {
    let chain = extended();
    let server = Server::start(&chain.datadir, "");
    let answer = endless_call(
        &server,
        ENDLESS,
        json!({"tracer": "callTracer", "timeout": "50ms"}),
    );
    assert_eq!(
        answer["error"],
        json!({"code": -32000, "message": "execution timeout"})
    );
    let strict = Server::start(&chain.datadir, "call_timeout_ms = 50");
    let answer = endless_call(
        &strict,
        ENDLESS,
        json!({"tracer": "callTracer", "timeout": "1m"}),
    );
    assert_eq!(
        answer["error"],
        json!({"code": -32000, "message": "execution timeout"})
    );
}

/// A struct-log trace that would be gigabytes stops at the server's limit with a clear error,
/// and the server's memory stays bounded; the `limit` option gets a part of it.
#[test]
fn struct_logs_past_the_limit_are_refused_and_memory_stays_bounded() {
    let chain = extended();
    let server = Server::start(&chain.datadir, "");
    let before = server.rss();
    // 50M gas of this loop is about 7M steps of 32 KiB memory each: hundreds of gigabytes.
    let answer = endless_call(
        &server,
        MEMORY_LOOP,
        json!({"enableMemory": true, "timeout": "1m"}),
    );
    assert_eq!(answer["error"]["code"], -32005, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("limit of 67108864 bytes") && message.contains("\"limit\" option"),
        "{message}"
    );
    let after = server.rss();
    assert!(
        after < before + (512 << 20),
        "memory grew from {before} to {after} bytes"
    );
    // The `limit` option: the first steps only, whatever the rest would be.
    let part = looping_call(
        &server,
        MEMORY_LOOP,
        100_000,
        json!({"enableMemory": true, "limit": 3}),
    );
    let logs = part["result"]["structLogs"].as_array().unwrap();
    assert_eq!(logs.len(), 3);
    assert_eq!(part["result"]["failed"], true);

    let small = Server::start(&chain.datadir, "max_trace_bytes = 2000");
    let answer = small.call("debug_traceTransaction", json!([chain.reverts[0].hash]));
    assert_eq!(answer["error"]["code"], -32005, "{answer}");
    // Other tracers are not bounded by the struct logs' limit.
    let frame = small.result(
        "debug_traceTransaction",
        json!([chain.reverts[0].hash, {"tracer": "callTracer"}]),
    );
    assert_eq!(frame["error"], "execution reverted");
}
