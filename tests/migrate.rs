//! `quarry migrate` of a datadir written by an older quarry: the dev chain as quarry stored it
//! in layout 6, before the storage rework (testdata/layout6-devnet, see testdata/README.md),
//! is refused by `quarry serve` with what to run, then migrated, and then answers every block,
//! receipt, log query, trace filter, historical state read and proof exactly as a fresh ingest
//! of the same chain does.

#![allow(clippy::unwrap_used)]

mod support;

use serde_json::{Value, json};
use std::{
    collections::BTreeSet,
    io::{Read, Seek, SeekFrom, Write},
    path::Path,
};
use support::{QUARRY, Server, hex_quantity, ingested, run_quarry};

/// Unpacks the gzipped data file into `dir`, leaving its all-zero pages as holes (the file is
/// MDBX's full map size, mostly never written).
fn unpack_layout6(dir: &Path) {
    let packed = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/layout6-devnet/mdbx.dat.gz");
    let mut input = flate2::read::GzDecoder::new(std::fs::File::open(packed).unwrap());
    let mut out = std::fs::File::create(dir.join("mdbx.dat")).unwrap();
    let mut page = vec![0u8; 4096];
    let mut length = 0u64;
    loop {
        let mut filled = 0;
        while filled < page.len() {
            match input.read(&mut page[filled..]).unwrap() {
                0 => break,
                n => filled += n,
            }
        }
        if filled == 0 {
            break;
        }
        if page[..filled].iter().any(|&b| b != 0) {
            out.seek(SeekFrom::Start(length)).unwrap();
            out.write_all(&page[..filled]).unwrap();
        }
        length += filled as u64;
    }
    out.set_len(length).unwrap();
}

/// Calls per JSON-RPC batch (the server's default `max_batch_requests` is 100).
const BATCH: usize = 100;

/// Every request of the comparison: blocks, receipts and block traces; eth_getLogs over the
/// chain, per emitter and per first topic; trace_filter per contract; each account's balance,
/// nonce and code and each contract's first slots at every block; proofs at every 8th block.
fn requests(server: &Server, head: u64) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut accounts = BTreeSet::new();
    let mut emitters = BTreeSet::new();
    let mut topics = BTreeSet::new();
    for n in 0..=head {
        for (method, params) in [
            ("eth_getBlockByNumber", json!([hex_quantity(n), true])),
            ("eth_getBlockReceipts", json!([hex_quantity(n)])),
            ("trace_block", json!([hex_quantity(n)])),
        ] {
            out.push((method.to_string(), params));
        }
        let block = server.result("eth_getBlockByNumber", json!([hex_quantity(n), true]));
        accounts.insert(block["miner"].as_str().unwrap().to_string());
        for tx in block["transactions"].as_array().unwrap() {
            accounts.insert(tx["from"].as_str().unwrap().to_string());
            if let Some(to) = tx["to"].as_str() {
                accounts.insert(to.to_string());
            }
        }
    }
    let all = server.result(
        "eth_getLogs",
        json!([{"fromBlock": "0x0", "toBlock": "latest"}]),
    );
    for log in all.as_array().unwrap() {
        emitters.insert(log["address"].as_str().unwrap().to_string());
        if let Some(topic) = log["topics"][0].as_str() {
            topics.insert(topic.to_string());
        }
    }
    assert!(
        !emitters.is_empty() && accounts.len() > 3,
        "the dev chain has logs and accounts"
    );
    out.push((
        "eth_getLogs".into(),
        json!([{"fromBlock": "0x0", "toBlock": "latest"}]),
    ));
    for emitter in &emitters {
        let filter = json!({"fromBlock": "0x0", "toBlock": "latest", "address": emitter});
        out.push(("eth_getLogs".into(), json!([filter])));
    }
    for topic in &topics {
        let filter = json!({"fromBlock": "0x0", "toBlock": "latest", "topics": [topic]});
        out.push(("eth_getLogs".into(), json!([filter])));
    }
    // Each trace_filter replays its candidate blocks: the contracts, and two senders, at most
    // 25 traces each, keep the test's time in bounds.
    for contract in &emitters {
        out.push((
            "trace_filter".into(),
            json!([{"toAddress": [contract], "count": 25}]),
        ));
    }
    for account in accounts.iter().take(2) {
        out.push((
            "trace_filter".into(),
            json!([{"fromAddress": [account], "count": 25}]),
        ));
    }
    for account in &accounts {
        for n in 0..=head {
            for method in ["eth_getBalance", "eth_getTransactionCount", "eth_getCode"] {
                out.push((method.into(), json!([account, hex_quantity(n)])));
            }
        }
    }
    for contract in &emitters {
        for n in 0..=head {
            for slot in 0..4u64 {
                out.push((
                    "eth_getStorageAt".into(),
                    json!([contract, hex_quantity(slot), hex_quantity(n)]),
                ));
            }
            if n % 8 == 0 {
                let slots = json!(["0x0", "0x1", "0x2"]);
                out.push((
                    "eth_getProof".into(),
                    json!([contract, slots, hex_quantity(n)]),
                ));
            }
        }
    }
    out
}

#[test]
fn a_layout6_datadir_migrates_to_answers_equal_to_a_fresh_ingest() {
    let dir = tempfile::tempdir().unwrap();
    unpack_layout6(dir.path());

    // Served as it is, it is refused with the command that brings it up to date.
    let served = std::process::Command::new(QUARRY)
        .args(["serve", "--datadir"])
        .arg(dir.path())
        .args(["--config", "/dev/null", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&served.stderr);
    assert!(!served.status.success(), "{said}");
    assert!(
        said.contains("layout 6") && said.contains("quarry migrate --datadir"),
        "{said}"
    );

    let (out, _) = run_quarry([
        "migrate".as_ref(),
        "--datadir".as_ref(),
        dir.path().as_os_str(),
    ]);
    assert!(out.contains("is at layout"), "{out}");
    let fresh = ingested(&Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet"));
    let migrated = Server::start(dir.path(), "");
    let reference = Server::start(&fresh, "");
    let head = reference.result("eth_blockNumber", json!([]));
    assert_eq!(migrated.result("eth_blockNumber", json!([])), head);
    let head = u64::from_str_radix(head.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    let requests = requests(&reference, head);
    assert!(requests.len() > 1000, "{} requests", requests.len());
    for chunk in requests.chunks(BATCH) {
        let expected = reference.batch(chunk);
        for (answer, (method, params)) in expected.iter().zip(chunk) {
            assert!(answer.get("error").is_none(), "{method} {params}: {answer}");
        }
        let answers = migrated.batch(chunk);
        for ((answer, expected), (method, params)) in answers.iter().zip(&expected).zip(chunk) {
            assert_eq!(answer, expected, "{method} {params}");
        }
    }

    // Migrating again finds nothing to do and changes no answer.
    drop(migrated);
    run_quarry([
        "migrate".as_ref(),
        "--datadir".as_ref(),
        dir.path().as_os_str(),
    ]);
    let migrated = Server::start(dir.path(), "");
    let sample: Vec<_> = requests.iter().step_by(17).cloned().collect();
    for chunk in sample.chunks(BATCH) {
        assert_eq!(migrated.batch(chunk), reference.batch(chunk));
    }
}
