//! End-to-end tests of `quarry serve`: the rpc-compat chain ingested by the real binary, served by
//! the real binary, and asked over HTTP and WebSocket.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_consensus::Header;
use alloy_primitives::B256;
use serde_json::{Value, json};
use support::{
    KEY, Server, chain_blocks, fixtures, ingested, io_cases, mismatch, partial_datadir,
    shape_mismatch,
};

/// The methods quarry serves that have rpc-compat fixtures.
const METHODS: &[&str] = &[
    "eth_getBlockByHash",
    "eth_getBlockByNumber",
    "eth_getUncleByBlockHashAndIndex",
    "eth_getUncleByBlockNumberAndIndex",
    "eth_getTransactionByBlockHashAndIndex",
    "eth_getTransactionByBlockNumberAndIndex",
    "eth_getTransactionReceipt",
    "eth_getStorageAt",
    "eth_getLogs",
    "rollup_getInfo",
    "eth_call",
    "eth_estimateGas",
    "eth_chainId",
    "net_version",
    "eth_blockNumber",
    "eth_syncing",
    "eth_getBalance",
    "eth_getCode",
    "eth_getTransactionCount",
    "eth_getTransactionByHash",
    "eth_getBlockReceipts",
    "eth_getBlockTransactionCountByHash",
    "eth_getBlockTransactionCountByNumber",
    "debug_getRawHeader",
    "debug_getRawBlock",
    "debug_getRawReceipts",
    "debug_getRawTransaction",
    "eth_blobBaseFee",
    "eth_feeHistory",
    "eth_createAccessList",
    "debug_traceTransaction",
    "debug_traceBlockByNumber",
    "debug_traceBlockByHash",
    "debug_traceBlock",
    "debug_traceCall",
    "eth_getStorageValues",
    "eth_config",
    "eth_capabilities",
    "eth_baseFee",
    "eth_simulateV1",
    "eth_getProof",
];

/// The rpc-compat methods quarry does not serve yet, whose fixtures the runner skips.
const SKIPPED: &[&str] = &[];

/// Every method with rpc-compat fixtures is either run or listed as skipped.
#[test]
fn the_runner_covers_every_fixture_method() {
    let mut unlisted = Vec::new();
    for entry in std::fs::read_dir(fixtures().join("tests")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !METHODS.contains(&name.as_str()) && !SKIPPED.contains(&name.as_str()) {
            unlisted.push(name);
        }
    }
    assert!(
        unlisted.is_empty(),
        "fixtures of unlisted methods: {unlisted:?}"
    );
}

fn server() -> Server {
    Server::start(&ingested(&fixtures()), "")
}

/// Runs every `.io` case with `exchange` and fails listing every case that did not match.
fn run_fixtures(mut exchange: impl FnMut(&str) -> Value) {
    let cases = io_cases(&fixtures(), METHODS);
    assert!(
        !cases.is_empty(),
        "no .io files found under {:?}",
        fixtures()
    );
    let mut failures = Vec::new();
    for case in &cases {
        for (request, expected) in &case.exchanges {
            let actual = exchange(request);
            let diff = if case.speconly {
                shape_mismatch(expected, &actual)
            } else {
                mismatch(expected, &actual)
            };
            if let Some(diff) = diff {
                failures.push(format!("{}:\n  {diff}", case.name));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn rpc_compat_fixtures_over_http() {
    let server = server();
    run_fixtures(|request| server.http(request));
}

#[test]
fn rpc_compat_fixtures_over_websocket() {
    let server = server();
    let mut ws = server.ws();
    run_fixtures(|request| ws.exchange(request));
}

fn quantity(n: u64) -> Value {
    json!(format!("{n:#x}"))
}

/// Every uncle of chain.rlp, asked by block number and by block hash, field by field.
#[test]
fn uncles_match_the_headers_in_chain_rlp() {
    let server = server();
    let mut uncles = 0;
    for block in chain_blocks() {
        let number = block.header.number;
        let hash = block.header.hash_slow();
        for (index, uncle) in block.body.ommers.iter().enumerate() {
            let by_number = server.call(
                "eth_getUncleByBlockNumberAndIndex",
                json!([quantity(number), quantity(index as u64)]),
            );
            let by_hash = server.call(
                "eth_getUncleByBlockHashAndIndex",
                json!([hash, quantity(index as u64)]),
            );
            assert_eq!(by_number, by_hash);
            check_uncle(&by_number["result"], uncle);
            uncles += 1;
        }
        let past_end = server.call(
            "eth_getUncleByBlockNumberAndIndex",
            json!([quantity(number), quantity(block.body.ommers.len() as u64)]),
        );
        assert_eq!(past_end["result"], Value::Null, "block {number}");
    }
    assert_eq!(uncles, 18);
}

fn check_uncle(json: &Value, uncle: &Header) {
    let object = json.as_object().unwrap();
    let hex = |bytes: &[u8]| json!(alloy_primitives::hex::encode_prefixed(bytes));
    let expected = [
        ("hash", json!(uncle.hash_slow())),
        ("parentHash", json!(uncle.parent_hash)),
        ("sha3Uncles", json!(uncle.ommers_hash)),
        ("miner", json!(uncle.beneficiary)),
        ("stateRoot", json!(uncle.state_root)),
        ("transactionsRoot", json!(uncle.transactions_root)),
        ("receiptsRoot", json!(uncle.receipts_root)),
        ("logsBloom", json!(uncle.logs_bloom)),
        ("difficulty", json!(format!("{:#x}", uncle.difficulty))),
        ("number", quantity(uncle.number)),
        ("gasLimit", quantity(uncle.gas_limit)),
        ("gasUsed", quantity(uncle.gas_used)),
        ("timestamp", quantity(uncle.timestamp)),
        ("extraData", hex(&uncle.extra_data)),
        ("mixHash", json!(uncle.mix_hash)),
        ("nonce", hex(uncle.nonce.as_slice())),
        ("uncles", json!([])),
        ("totalDifficulty", Value::Null),
    ];
    for (field, value) in &expected {
        assert_eq!(object.get(*field), Some(value), "uncle field {field}");
    }
    assert!(
        object.get("transactions").is_none(),
        "uncles have no transactions"
    );
    if let Some(base_fee) = uncle.base_fee_per_gas {
        assert_eq!(object["baseFeePerGas"], quantity(base_fee));
    } else {
        assert!(object.get("baseFeePerGas").is_none());
    }
    // size is the RLP length of [header, [], []].
    let header_len = alloy_rlp::Encodable::length(uncle);
    let payload = header_len + 2;
    let size = payload + alloy_rlp::length_of_length(payload);
    assert_eq!(object["size"], quantity(size as u64));
    assert_eq!(
        object.len(),
        expected.len() + 1 + usize::from(uncle.base_fee_per_gas.is_some())
    );
}

#[test]
fn missing_and_unknown_keys_are_refused_with_401() {
    let server = server();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"web3_clientVersion","params":[]}"#;
    for (path, message) in [
        ("/v3/", "missing API key"),
        ("/v3", "missing API key"),
        ("/v3/not-a-key", "invalid API key"),
    ] {
        let (status, text) = server.post_raw(path, body);
        assert_eq!(status, 401, "{path}: {text}");
        let error: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(error["error"]["code"], -32600, "{path}");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with(message),
            "{path}: {text}"
        );
    }
    let (status, _) = server.post_raw("/", body);
    assert_eq!(status, 404);
    let (status, text) = server.post_raw(&format!("/v3/{KEY}"), body);
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("quarry/v"), "{text}");
}

#[test]
fn websocket_upgrades_without_a_valid_key_are_refused() {
    let server = server();
    for key in ["", "wrong-key"] {
        match tungstenite::connect(server.ws_url(key)) {
            Err(tungstenite::Error::Http(response)) => {
                assert_eq!(response.status().as_u16(), 401, "key {key:?}");
                let body: Value =
                    serde_json::from_slice(response.body().as_deref().unwrap()).unwrap();
                assert_eq!(body["error"]["code"], -32600);
            }
            other => panic!("key {key:?}: expected a 401 refusal, got {other:?}"),
        }
    }
    // The HTTP path is not a WebSocket endpoint.
    let plain = format!("ws://{}/v3/{KEY}", server.addr);
    assert!(tungstenite::connect(plain).is_err());
}

#[test]
fn batches_mix_valid_and_invalid_calls_on_both_transports() {
    let server = server();
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "eth_getBlockByNumber", "params": ["0x0", false]},
        {"jsonrpc": "2.0", "id": 2, "method": "eth_noSuchMethod", "params": []},
        {"jsonrpc": "2.0", "id": 3, "method": "eth_getBlockByNumber", "params": ["0x0"]},
        {"jsonrpc": "2.0", "id": 4},
        {"jsonrpc": "2.0", "id": 5, "method": "eth_getTransactionReceipt", "params": [B256::ZERO]},
    ])
    .to_string();
    let check = |response: Value| {
        let mut by_id = std::collections::BTreeMap::new();
        for entry in response.as_array().unwrap() {
            by_id.insert(entry["id"].to_string(), entry.clone());
        }
        assert_eq!(by_id["1"]["result"]["number"], "0x0");
        assert_eq!(by_id["2"]["error"]["code"], -32601);
        assert_eq!(by_id["3"]["error"]["code"], -32602);
        assert!(
            by_id["3"]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("fullTransactions")
        );
        assert_eq!(by_id["4"]["error"]["code"], -32600);
        assert_eq!(by_id["5"]["result"], Value::Null);
    };
    check(server.http(&batch));
    check(server.ws().exchange(&batch));
}

#[test]
fn malformed_json_and_oversized_requests() {
    let server = Server::start(
        &ingested(&fixtures()),
        "max_batch_requests = 3\nmax_request_bytes = 2048",
    );
    let error = server.http(r#"{"jsonrpc":"2.0","id":1,"method":"#);
    assert_eq!(error["error"]["code"], -32700);
    let error = server.http("[]");
    assert_eq!(error["error"]["code"], -32600);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "web3_clientVersion"});
    // jsonrpsee's code for an over-long batch (geth uses -32600 with "batch too large").
    let error = server.http(&json!([call, call, call, call]).to_string());
    assert_eq!(error["error"]["code"], -32010, "{error}");
    assert_eq!(error["error"]["message"], "The batch request was too large");
    let (status, text) = server.post_raw(&format!("/v3/{KEY}"), &"x".repeat(4096));
    assert_eq!(status, 413, "{text}");
    let mut ws = server.ws();
    assert_eq!(ws.exchange("{oops")["error"]["code"], -32700);
    assert_eq!(
        ws.exchange(&json!([call, call]).to_string())
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// geth's reading of the envelope: a notification (no `id`) gets no answer, over HTTP an empty
/// 200; an `id` that is an object or an array is an invalid request (-32600, id `null`); an id
/// jsonrpsee cannot hold (a boolean, a negative or fractional number) is echoed as sent; in a
/// batch, the answers keep the order of the requests that get one.
#[test]
fn notifications_and_odd_ids_are_answered_as_geth_does() {
    let server = server();
    let path = format!("/v3/{KEY}");
    let post = |body: &str| server.post_raw(&path, body);
    let invalid = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "invalid request"}});
    let note = r#"{"jsonrpc":"2.0","method":"eth_chainId","params":[]}"#;
    assert_eq!(post(note), (200, String::new()));
    assert_eq!(post(&format!("[{note}, {note}]")), (200, String::new()));
    for id in [r#"{"a":1}"#, "[1]", "{}", "[]"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_chainId","params":[]}}"#);
        let (status, text) = post(&body);
        assert_eq!(status, 200, "{text}");
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            invalid,
            "id {id}"
        );
    }
    // Without an id and without a method (or with an empty one) it is no notification either.
    let (_, text) = post(r#"{"jsonrpc":"2.0","method":""}"#);
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), invalid);
    for id in ["true", "-1", "1.5", "18446744073709551616", "1e3"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_chainId","params":[]}}"#);
        let (status, text) = post(&body);
        assert_eq!(status, 200, "{text}");
        assert_eq!(
            text,
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"{}"}}"#, chain_id()),
            "id {id}"
        );
    }
    let batch = format!(
        r#"[{note},
            {{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}},
            {{"jsonrpc":"2.0","id":{{"x":1}},"method":"eth_chainId","params":[]}},
            {{"jsonrpc":"2.0","id":false,"method":"eth_chainId","params":[]}},
            {note},
            {{"jsonrpc":"2.0","id":"s","method":"eth_noSuchMethod","params":[]}},
            {{"jsonrpc":"2.0","id":-7,"method":"eth_getBlockByNumber","params":["nope", false]}}]"#
    );
    let (status, batch_answer) = post(&batch);
    assert_eq!(status, 200, "{batch_answer}");
    let answers: Vec<Value> = serde_json::from_str(&batch_answer).unwrap();
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(
        ids,
        [
            &json!(1),
            &Value::Null,
            &json!(false),
            &json!("s"),
            &json!(-7)
        ],
        "{batch_answer}"
    );
    assert_eq!(answers[0]["result"], chain_id());
    assert_eq!(answers[1], invalid);
    assert_eq!(answers[2]["result"], chain_id());
    assert_eq!(answers[3]["error"]["code"], -32601);
    assert_eq!(answers[4]["error"]["code"], -32602);
    // Ordinary ids are untouched, `null` included.
    let (_, text) = post(r#"{"jsonrpc":"2.0","id":null,"method":"eth_chainId","params":[]}"#);
    assert_eq!(
        text,
        format!(r#"{{"jsonrpc":"2.0","id":null,"result":"{}"}}"#, chain_id())
    );

    // Over a WebSocket the same: notifications get no message (the next message answers the
    // next call), odd ids are echoed and object ids are invalid.
    let mut ws = server.ws();
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "eth_chainId", "params": []});
    ws.send(note);
    ws.send(&format!("[{note},{note}]"));
    assert_eq!(ws.exchange(&call.to_string())["id"], 9);
    let answers = ws.exchange(&batch);
    assert_eq!(
        answers,
        serde_json::from_str::<Value>(&batch_answer).unwrap()
    );
    let odd = r#"{"jsonrpc":"2.0","id":true,"method":"eth_chainId","params":[]}"#;
    assert_eq!(ws.exchange(odd)["id"], true);
}

fn chain_id() -> String {
    let genesis: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("genesis.json")).unwrap())
            .unwrap();
    format!("{:#x}", genesis["config"]["chainId"].as_u64().unwrap())
}

#[test]
fn wrong_parameter_types_and_counts_name_the_parameter() {
    let server = server();
    let cases = [
        ("eth_getBlockByNumber", json!([]), "blockNumber"),
        (
            "eth_getBlockByNumber",
            json!(["0x1", "yes"]),
            "fullTransactions",
        ),
        (
            "eth_getBlockByNumber",
            json!(["0x01", false]),
            "blockNumber",
        ),
        (
            "eth_getBlockByNumber",
            json!(["lastest", false]),
            "blockNumber",
        ),
        (
            "eth_getBlockByNumber",
            json!(["0x1", false, 3]),
            "at most 2",
        ),
        ("eth_getBlockByHash", json!(["0x1234", false]), "blockHash"),
        (
            "eth_getTransactionByBlockNumberAndIndex",
            json!(["0x1", 0]),
            "transactionIndex",
        ),
        (
            "eth_getUncleByBlockHashAndIndex",
            json!([B256::ZERO]),
            "uncleIndex",
        ),
        ("eth_getTransactionReceipt", json!([42]), "transactionHash"),
        (
            "eth_getStorageAt",
            json!(["0x12", "0x0", "latest"]),
            "address",
        ),
        (
            "eth_getStorageAt",
            json!([B256::ZERO, "0x0", {"blockNumber": "0x1", "blockHash": B256::ZERO}]),
            "block",
        ),
        ("eth_getBlockByNumber", json!({"number": "0x1"}), "array"),
    ];
    for (method, params, needle) in cases {
        let response = server.call(method, params.clone());
        assert_eq!(
            response["error"]["code"], -32602,
            "{method} {params}: {response}"
        );
        let message = response["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{method} {params}: {message}");
    }
}

#[test]
fn block_parameters_and_tags() {
    let server = Server::start(
        &ingested(&fixtures()),
        "safe_block = 40\nfinalized_block = 30",
    );
    let number_of = |tag: Value| -> Value {
        server.call("eth_getBlockByNumber", json!([tag, false]))["result"]["number"].clone()
    };
    assert_eq!(number_of(json!("latest")), "0x36");
    assert_eq!(number_of(json!("pending")), "0x36");
    assert_eq!(number_of(json!("earliest")), "0x0");
    assert_eq!(number_of(json!("safe")), "0x28");
    assert_eq!(number_of(json!("finalized")), "0x1e");

    // Answers from the block cache (the second of each pair) equal answers from the database.
    let receipt = json!(["0x4bb6fa064c302d27ea9ac821e061bcc336b8fa40de77f01e116c6461d47e7ac1"]);
    for (method, params) in [
        ("eth_getBlockByNumber", json!(["0x2a", true])),
        ("eth_getTransactionReceipt", receipt),
        ("eth_getUncleByBlockNumberAndIndex", json!(["0x3", "0x0"])),
    ] {
        let first = server.call(method, params.clone());
        assert_ne!(first["result"], Value::Null, "{method}");
        assert_eq!(server.call(method, params), first, "{method}");
    }

    // Storage at an old block comes from history; EIP-1898 objects name blocks by hash.
    let contract = "0x7dcd17433742f4c0ca53122ab541d0ba67fc27df";
    let block_10 =
        server.call("eth_getBlockByNumber", json!(["0xa", false]))["result"]["hash"].clone();
    let latest = server.call("eth_getStorageAt", json!([contract, "0x0", "latest"]));
    assert_eq!(latest["result"], format!("0x{:064x}", 0x38));
    let omitted = server.call("eth_getStorageAt", json!([contract, "0x0"]));
    assert_eq!(omitted, latest);
    let old = server.call(
        "eth_getStorageAt",
        json!([contract, "0x0", {"blockHash": block_10, "requireCanonical": true}]),
    );
    assert_eq!(old["result"], format!("0x{:064x}", 6));
    for at in [
        json!("0xa"),
        block_10.clone(),
        json!({"blockNumber": "0xa"}),
    ] {
        let same = server.call("eth_getStorageAt", json!([contract, "0x0", at]));
        assert_eq!(same, old, "{at}");
    }
    let unknown = server.call(
        "eth_getStorageAt",
        json!([contract, "0x0", {"blockHash": B256::ZERO}]),
    );
    assert_eq!(unknown["error"]["code"], -32000);
    let future = server.call("eth_getStorageAt", json!([contract, "0x0", "0x100"]));
    assert_eq!(future["error"]["code"], -32000);
    assert_eq!(future["error"]["message"], "header not found");

    // index: the last transaction of the chain; verifiedIndex: the last one in the finalized
    // block 30 or before.
    let blocks = chain_blocks();
    let total: usize = blocks.iter().map(|b| b.body.transactions.len()).sum();
    let through_30: usize = blocks
        .iter()
        .filter(|b| b.header.number <= 30)
        .map(|b| b.body.transactions.len())
        .sum();
    let info = server.call("rollup_getInfo", json!([]));
    assert_eq!(
        info["result"],
        json!({
            "mode": "verifier",
            "syncing": false,
            "ethContext": {"blockNumber": 54, "timestamp": blocks[53].header.timestamp},
            "rollupContext": {"index": total - 1, "queueIndex": null, "verifiedIndex": through_30 - 1},
        })
    );
}

/// The runner's comparison must be able to fail: these differences are all mismatches.
#[test]
fn the_fixture_comparison_catches_differences() {
    let expected = json!({"jsonrpc": "2.0", "id": 1, "result": {"a": "0x1", "b": null}});
    for actual in [
        json!({"jsonrpc": "2.0", "id": 1, "result": {"a": "0x01", "b": null}}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"a": "0x1"}}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"a": "0x1", "b": null, "c": 1}}),
        json!({"jsonrpc": "2.0", "id": 2, "result": {"a": "0x1", "b": null}}),
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "x"}}),
    ] {
        assert!(mismatch(&expected, &actual).is_some(), "{actual}");
    }
    let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "a"}});
    let other_message =
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "b"}});
    let other_code = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "a"}});
    assert!(mismatch(&error, &other_message).is_none());
    assert!(mismatch(&error, &other_code).is_some());
    // Only block objects may carry an extra totalDifficulty.
    let block = json!({"jsonrpc": "2.0", "id": 1, "result": {"transactionsRoot": "0x", "sha3Uncles": "0x"}});
    let mut with_td = block.clone();
    with_td["result"]["totalDifficulty"] = json!("0x1");
    assert!(mismatch(&block, &with_td).is_none());
    let mut receipt = expected.clone();
    receipt["result"]["totalDifficulty"] = json!("0x1");
    assert!(mismatch(&expected, &receipt).is_some());
}

/// `quarry serve` keeps answering while `quarry ingest` appends to its datadir from another
/// process, and every head it reports is a whole block: the right hash, and a receipt for each
/// of its transactions.
#[test]
fn serve_follows_a_concurrent_ingest() {
    let dir = partial_datadir(20);
    let datadir = dir.path().join("data");
    let server = Server::start(&datadir, "");
    let blocks = chain_blocks();
    let latest = || server.call("eth_getBlockByNumber", json!(["latest", false]))["result"].clone();
    assert_eq!(latest()["number"], "0x14");

    let (genesis, chain) = (
        fixtures().join("genesis.json"),
        fixtures().join("chain.rlp"),
    );
    let mut ingest = std::process::Command::new(support::QUARRY)
        .args(support::ingest_args(&datadir, &genesis, &[&chain]))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    loop {
        let done = ingest.try_wait().unwrap().is_some();
        let head = latest();
        let number = u64::from_str_radix(
            head["number"].as_str().unwrap().trim_start_matches("0x"),
            16,
        )
        .unwrap();
        let block = &blocks[number as usize - 1];
        assert_eq!(
            head["hash"],
            json!(block.header.hash_slow()),
            "block {number}"
        );
        for hash in head["transactions"].as_array().unwrap() {
            let receipt = server.call("eth_getTransactionReceipt", json!([hash]));
            assert_eq!(receipt["result"]["blockNumber"], head["number"]);
        }
        if seen.last() != Some(&number) {
            seen.push(number);
        }
        if done {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(ingest.wait().unwrap().success());
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "heads went back: {seen:?}"
    );
    assert_eq!(seen.last(), Some(&54), "{seen:?}");
}

/// eth_getStorageAt answers `latest` from memory only while no commit has landed since the head
/// was read: after an ingest appends blocks, `latest` is the new head's value at once, and the
/// values at older blocks stay what they were.
#[test]
fn latest_storage_follows_an_ingest() {
    let dir = partial_datadir(20);
    let datadir = dir.path().join("data");
    let server = Server::start(&datadir, "");
    // The rpc-compat chain's counter contract: slot 0 grows block by block.
    let params = |at: &str| json!(["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df", "0x0", at]);
    let slot = |at: &str| server.result("eth_getStorageAt", params(at));
    let at_20 = slot("latest");
    assert_eq!(slot("latest"), at_20);
    assert_eq!(slot("0x14"), at_20);
    let past_head = server.call("eth_getStorageAt", params("0x15"));
    assert_eq!(past_head["error"]["message"], "header not found");

    let (genesis, chain) = (
        fixtures().join("genesis.json"),
        fixtures().join("chain.rlp"),
    );
    let ingest = std::process::Command::new(support::QUARRY)
        .args(support::ingest_args(&datadir, &genesis, &[&chain]))
        .output()
        .unwrap();
    assert!(ingest.status.success(), "{ingest:?}");

    // `latest` first: no other request has read the new head yet.
    let latest = slot("latest");
    assert_ne!(latest, at_20);
    assert_eq!(slot("latest"), latest);
    assert_eq!(slot("0x36"), latest);
    assert_eq!(slot("0x14"), at_20);
}

/// rollup_getInfo's `syncing` follows the target a live ingest announces, and ignores one that
/// a dead process left behind.
#[test]
fn syncing_follows_a_live_ingest_announcement() {
    let dir = partial_datadir(5);
    let datadir = dir.path().join("data");
    let server = Server::start(&datadir, "");
    let syncing = || server.call("rollup_getInfo", json!([]))["result"]["syncing"].clone();
    assert_eq!(syncing(), false);

    let db = quarry_storage::Database::open(&datadir).unwrap();
    let announce = |target: Option<quarry_storage::SyncTarget>| {
        let tx = db.writer().unwrap();
        tx.put_sync_target(target).unwrap();
        tx.commit().unwrap();
    };
    announce(Some(quarry_storage::SyncTarget {
        block: 54,
        pid: std::process::id(),
    }));
    assert_eq!(syncing(), true);
    // eth_syncing reports the same, as geth's progress object.
    let progress = server.call("eth_syncing", json!([]))["result"].clone();
    assert_eq!(progress["highestBlock"], "0x36", "{progress}");
    assert_eq!(progress["currentBlock"], "0x5", "{progress}");
    let mut exited = std::process::Command::new("true").spawn().unwrap();
    let dead = exited.id();
    exited.wait().unwrap();
    announce(Some(quarry_storage::SyncTarget {
        block: 54,
        pid: dead,
    }));
    assert_eq!(syncing(), false);
    announce(None);
    assert_eq!(syncing(), false);
    assert_eq!(server.call("eth_syncing", json!([]))["result"], false);
}

/// What an answer must be once blocks above the ancestor are unwound.
#[derive(Debug, Clone, Copy)]
enum AfterUnwind {
    /// As before: the block is at or below the ancestor.
    Same,
    /// `null`: the block or transaction was removed.
    Null,
    /// geth's error for a state request past the head.
    HeaderNotFound,
    /// What probe number `i` answered before (`latest` is now the ancestor).
    AsProbe(usize),
    /// The logs answered before, those of blocks up to the ancestor only.
    LogsThrough(u64),
    /// This block number.
    Number(u64),
}

/// One request `quarry serve` may answer from its caches (by block number, tag, block hash or
/// transaction hash), and what it must answer after the unwind.
#[derive(Debug)]
struct Probe {
    method: &'static str,
    params: Value,
    after_unwind: AfterUnwind,
}

/// Every request of the unwind test: the caches' every path, and the snapshot-only ones whose
/// range or value moves with the head.
fn unwind_probes(ancestor: u64) -> Vec<Probe> {
    let blocks = chain_blocks();
    let head = blocks.last().unwrap().header.number;
    let mut probes = Vec::new();
    let mut probe = |method, params, after_unwind| {
        probes.push(Probe {
            method,
            params,
            after_unwind,
        });
        probes.len() - 1
    };
    let stays = |number: u64| {
        if number <= ancestor {
            AfterUnwind::Same
        } else {
            AfterUnwind::Null
        }
    };
    let mut ancestor_block = None;
    for number in 0..=head {
        for full in [false, true] {
            let index = probe(
                "eth_getBlockByNumber",
                json!([quantity(number), full]),
                stays(number),
            );
            if number == ancestor && !full {
                ancestor_block = Some(index);
            }
        }
    }
    for block in &blocks {
        let number = block.header.number;
        probe(
            "eth_getBlockByHash",
            json!([block.header.hash_slow(), true]),
            stays(number),
        );
        for transaction in &block.body.transactions {
            let hash = transaction.tx_hash();
            probe("eth_getTransactionReceipt", json!([hash]), stays(number));
            probe("eth_getTransactionByHash", json!([hash]), stays(number));
        }
    }
    for number in ancestor - 1..=head {
        probe(
            "eth_getBlockReceipts",
            json!([quantity(number)]),
            stays(number),
        );
        probe(
            "eth_getBlockTransactionCountByNumber",
            json!([quantity(number)]),
            stays(number),
        );
    }
    probe(
        "eth_getBlockByNumber",
        json!(["latest", false]),
        AfterUnwind::AsProbe(ancestor_block.unwrap()),
    );
    // The rpc-compat chain's counter contract: slot 0 grows block by block.
    let contract = "0x7dcd17433742f4c0ca53122ab541d0ba67fc27df";
    let mut storage_at_ancestor = None;
    for number in ancestor - 2..=head {
        let index = probe(
            "eth_getStorageAt",
            json!([contract, "0x0", quantity(number)]),
            if number <= ancestor {
                AfterUnwind::Same
            } else {
                AfterUnwind::HeaderNotFound
            },
        );
        if number == ancestor {
            storage_at_ancestor = Some(index);
        }
    }
    probe(
        "eth_getStorageAt",
        json!([contract, "0x0", "latest"]),
        AfterUnwind::AsProbe(storage_at_ancestor.unwrap()),
    );
    probe(
        "eth_getLogs",
        json!([{"fromBlock": "0x0", "toBlock": "latest"}]),
        AfterUnwind::LogsThrough(ancestor),
    );
    probe("eth_blockNumber", json!([]), AfterUnwind::Number(ancestor));
    probes
}

fn block_number_of(value: &Value) -> u64 {
    u64::from_str_radix(value.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// Another process unwinds the chain `quarry serve` serves, after every cache was filled: from
/// the first request after the commit, no answer by number, tag or hash shows a removed block
/// (blocks, transactions and receipts above the ancestor are null, `latest` and
/// eth_blockNumber are the ancestor, storage above it is "header not found", eth_getLogs to
/// `latest` stops at it). Re-ingesting the chain brings every answer back as it was. Memory's
/// head (eth_blockNumber) is not answered across another process's commit either: asked first
/// after the re-ingest and after a second unwind, it is the new head.
#[test]
fn answers_follow_an_unwind_committed_by_another_process() {
    const ANCESTOR: u64 = 40;
    let dir = partial_datadir(u64::MAX);
    let datadir = dir.path().join("data");
    let server = Server::start(&datadir, "");
    let probes = unwind_probes(ANCESTOR);
    let ask = |probe: &Probe| server.call(probe.method, probe.params.clone());

    // Every answer twice: the second comes from the caches where they hold it.
    let before: Vec<Value> = probes.iter().map(ask).collect();
    for (probe, answer) in probes.iter().zip(&before) {
        assert_eq!(&ask(probe), answer, "{probe:?}");
        assert!(
            answer.get("error").is_none() && answer["result"] != Value::Null,
            "{probe:?}: {answer}"
        );
    }
    let logs = |answer: &Value| answer["result"].as_array().unwrap().clone();
    let log_blocks: Vec<u64> = probes
        .iter()
        .zip(&before)
        .filter(|(probe, _)| probe.method == "eth_getLogs")
        .flat_map(|(_, answer)| logs(answer))
        .map(|log| block_number_of(&log["blockNumber"]))
        .collect();
    assert!(
        log_blocks.iter().any(|&n| n <= ANCESTOR) && log_blocks.iter().any(|&n| n > ANCESTOR),
        "the chain must have logs on both sides of the ancestor: {log_blocks:?}"
    );

    // The unwind (state, history and trie), committed by another process while the server runs.
    let unwind = || {
        let (stdout, _) = support::run_quarry([
            "unwind".as_ref(),
            "--datadir".as_ref(),
            datadir.as_os_str(),
            "--genesis".as_ref(),
            fixtures().join("genesis.json").as_os_str(),
            "--to".as_ref(),
            ANCESTOR.to_string().as_ref(),
        ]);
        assert!(
            stdout.contains(&format!("unwound {} blocks", 54 - ANCESTOR)),
            "{stdout}"
        );
    };
    unwind();

    // The first request after the commit is one memory held: it may not answer it.
    let head = probes
        .iter()
        .position(|p| p.method == "eth_getBlockByNumber" && p.params == json!(["0x36", false]))
        .unwrap();
    assert_eq!(ask(&probes[head])["result"], Value::Null);
    // eth_blockNumber (memory's head went with the caches that request dropped); then
    // everything else.
    let check = |probe: &Probe, answer: &Value, before_answer: &Value| match probe.after_unwind {
        AfterUnwind::Same => assert_eq!(answer, before_answer, "{probe:?}"),
        AfterUnwind::Null => {
            assert!(answer.get("error").is_none(), "{probe:?}: {answer}");
            assert_eq!(answer["result"], Value::Null, "{probe:?}");
        }
        AfterUnwind::HeaderNotFound => {
            assert_eq!(answer["error"]["message"], "header not found", "{probe:?}")
        }
        AfterUnwind::AsProbe(other) => {
            assert_eq!(answer["result"], before[other]["result"], "{probe:?}")
        }
        AfterUnwind::LogsThrough(ancestor) => {
            let expected: Vec<Value> = logs(before_answer)
                .into_iter()
                .filter(|log| block_number_of(&log["blockNumber"]) <= ancestor)
                .collect();
            assert_eq!(logs(answer), expected, "{probe:?}");
        }
        AfterUnwind::Number(number) => assert_eq!(answer["result"], quantity(number)),
    };
    let number = probes.len() - 1;
    check(&probes[number], &ask(&probes[number]), &before[number]);
    // Twice: the second from whatever the caches learned since the unwind.
    for _ in 0..2 {
        for (probe, before_answer) in probes.iter().zip(&before) {
            check(probe, &ask(probe), before_answer);
        }
    }

    // The chain ingested again, by another `quarry ingest` process: every answer is back.
    let (genesis, chain) = (
        fixtures().join("genesis.json"),
        fixtures().join("chain.rlp"),
    );
    support::run_quarry(support::ingest_args(&datadir, &genesis, &[&chain]));
    // eth_blockNumber first: the re-ingested head.
    assert_eq!(ask(&probes[number]), before[number]);
    for _ in 0..2 {
        for (probe, before_answer) in probes.iter().zip(&before) {
            assert_eq!(&ask(probe), before_answer, "{probe:?}");
        }
    }

    // Unwound again, and eth_blockNumber is the first request after it: memory still holds the
    // head of the commit before (unless the server's watcher of new blocks has read the unwind
    // already), which it may not answer.
    unwind();
    assert_eq!(ask(&probes[number])["result"], quantity(ANCESTOR));
}

/// After a burst of large answers the server's heap goes back down even though the threads that
/// freed it then sit idle: six concurrent eth_getBlockReceipts of rpc-compat's block 2 (21 MB of
/// JSON each) would otherwise leave about 100 MB resident.
#[test]
fn memory_freed_after_a_burst_of_large_answers_goes_back() {
    let server = server();
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBlockReceipts","params":["0x2"]}"#;
    let receipts = |answer: Value| answer["result"].as_array().map_or(0, Vec::len);
    assert_eq!(receipts(server.http(request)), 59);
    let before = server.anon_rss();
    std::thread::scope(|scope| {
        for _ in 0..6 {
            scope.spawn(|| assert_eq!(receipts(server.http(request)), 59));
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let grown = server.anon_rss().saturating_sub(before);
        if grown < 48 << 20 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the server's heap stayed {} MB above what it was before the burst",
            grown >> 20
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
