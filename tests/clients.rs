//! Real client libraries, unmodified, against `quarry serve` on the dev chain: ethers v6
//! (npm) and web3.py (PyPI) connect over HTTP and WebSocket, read the chain id and head, fetch
//! blocks with and without transactions, a receipt, a token's Transfer logs, a balance and a
//! storage slot, and make a call whose revert reason the library itself reports. What the
//! libraries must find is read here first with plain JSON-RPC. Then, as applications listen:
//! ethers' `provider.on("block")` and `contract.on("Transfer")` over WebSocket (eth_subscribe)
//! and over HTTP (polling, through the filter it installs), and web3.py's subscriptions, get the
//! blocks and events that another process commits after they subscribed.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_primitives::{Address, U256};
use alloy_sol_types::SolEvent;
use quarry_devchain::{Contracts, DevAccounts, contracts::Token};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::{KEY, Server, ingested};

/// The block whose transactions the clients fetch: block 2 holds the first uses of the
/// contracts.
const BLOCK: u64 = 2;

fn clients() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// The dev chain served, and what the clients must find in it.
fn served_devnet() -> (Server, Value) {
    let datadir = ingested(&Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet"));
    let server = Server::start(&datadir, "");
    let accounts = DevAccounts::new(quarry_devchain::account_count(
        quarry_devchain::GenerateOptions::default().txs_per_block,
    ))
    .unwrap();
    let account = accounts.address(0);
    let contracts = Contracts::of(account);
    let quantity = |value: &Value| {
        U256::from_str_radix(value.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    };

    let head = quantity(&server.result("eth_blockNumber", json!([])));
    let block = server.result(
        "eth_getBlockByNumber",
        json!([format!("{BLOCK:#x}"), false]),
    );
    let first = block["transactions"][0].clone();
    let receipt = server.result("eth_getTransactionReceipt", json!([first]));
    let from: Address = receipt["from"].as_str().unwrap().parse().unwrap();
    let transfers = server.result(
        "eth_getLogs",
        json!([{"fromBlock": "0x0", "toBlock": "latest", "address": contracts.token, "topics": [Token::Transfer::SIGNATURE_HASH]}]),
    );
    let transfers = transfers.as_array().unwrap();
    assert!(!transfers.is_empty(), "the dev chain has Transfer events");
    let balance = quantity(&server.result("eth_getBalance", json!([account, "latest"])));
    let slot0 = server.result(
        "eth_getStorageAt",
        json!([contracts.store, "0x0", "latest"]),
    );
    assert_ne!(
        slot0,
        json!(format!("0x{}", "0".repeat(64))),
        "Store.count is set"
    );

    let expected = json!({
        "http": server.http_url(KEY),
        "ws": server.ws_url(KEY),
        "chainId": quarry_devchain::CHAIN_ID,
        "head": head.to::<u64>(),
        "block": {"number": BLOCK, "hash": block["hash"], "transactions": block["transactions"]},
        "tx": {
            "hash": first,
            // Checksummed, as both libraries write addresses.
            "from": from.to_string(),
            "status": quantity(&receipt["status"]).to::<u64>(),
            "gasUsed": receipt["gasUsed"],
            "logs": receipt["logs"].as_array().unwrap().len(),
        },
        "token": contracts.token,
        "transfers": {
            "count": transfers.len(),
            "firstValue": quantity(&transfers[0]["data"]).to_string(),
            "firstTransaction": transfers[0]["transactionHash"],
        },
        "account": account,
        "balance": balance.to_string(),
        "store": contracts.store,
        "slot0": slot0,
        "reverter": contracts.reverter,
        "revertReason": "Reverter: failed on purpose",
    });
    (server, expected)
}

/// Runs a client program; every check it makes prints an `ok:` line. Returns them.
fn run_client(program: &Path, args: &[&str], expected: &Value) -> Vec<String> {
    let output = std::process::Command::new(program)
        .current_dir(clients())
        .args(args)
        .arg(expected.to_string())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .filter(|l| l.starts_with("ok: "))
        .map(str::to_string)
        .collect()
}

/// 11 checks on each of the two transports.
const CHECKS: usize = 2 * 11;

#[test]
fn ethers_v6_uses_quarry_over_http_and_websocket() {
    assert!(
        clients().join("node_modules/ethers").exists(),
        "run `npm ci` in tests/clients first (.ci/run does)"
    );
    let (_server, expected) = served_devnet();
    let ok = run_client(Path::new("node"), &["ethers-app.mjs"], &expected);
    assert_eq!(ok.len(), CHECKS, "{ok:#?}");
}

#[test]
fn web3_py_uses_quarry_over_http_and_websocket() {
    let python = clients().join(".venv/bin/python");
    assert!(
        python.exists(),
        "create tests/clients/.venv with tests/clients/requirements.txt first (.ci/run does)"
    );
    let (_server, expected) = served_devnet();
    let ok = run_client(&python, &["web3_app.py"], &expected);
    assert_eq!(ok.len(), CHECKS, "{ok:#?}");
}

/// The dev chain's first 20 blocks served, and what clients listening from then on must get
/// once the rest is committed: block numbers (and hashes) 21 to the head, and the token's
/// Transfer logs of those blocks.
fn listening_setup() -> (tempfile::TempDir, PathBuf, Server, Value) {
    let devnet = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet");
    let full = Server::start(&ingested(&devnet), "");
    let blocks = support::decode_blocks(&std::fs::read(devnet.join("chain.rlp")).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix.rlp");
    std::fs::write(&prefix, support::encode_blocks(blocks.iter().take(20))).unwrap();
    let datadir = dir.path().join("data");
    let genesis = devnet.join("genesis.json");
    support::run_quarry(support::ingest_args(&datadir, &genesis, &[&prefix]));
    let server = Server::start(&datadir, "");

    let accounts = DevAccounts::new(quarry_devchain::account_count(
        quarry_devchain::GenerateOptions::default().txs_per_block,
    ))
    .unwrap();
    let token = Contracts::of(accounts.address(0)).token;
    let head = blocks.len() as u64;
    let transfers = full.result(
        "eth_getLogs",
        json!([{"fromBlock": "0x15", "toBlock": format!("{head:#x}"), "address": token, "topics": [Token::Transfer::SIGNATURE_HASH]}]),
    );
    let transfers: Vec<Value> = transfers
        .as_array()
        .unwrap()
        .iter()
        .map(|log| {
            json!({
                "block": u64::from_str_radix(log["blockNumber"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap(),
                "tx": log["transactionHash"],
                "index": u64::from_str_radix(log["logIndex"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap(),
            })
        })
        .collect();
    assert!(
        transfers.len() > 5,
        "the dev chain's later blocks have transfers"
    );
    let hashes: serde_json::Map<String, Value> = blocks[20..]
        .iter()
        .map(|b| (b.header.number.to_string(), json!(b.header.hash_slow())))
        .collect();
    let expected = json!({
        "ws": server.ws_url(KEY),
        "http": server.http_url(KEY),
        "token": token,
        "transferTopic": Token::Transfer::SIGNATURE_HASH,
        "blocks": (21..=head).collect::<Vec<_>>(),
        "hashes": hashes,
        "transfers": transfers,
    });
    (dir, datadir, server, expected)
}

/// Runs a listening client: once it says "ready" and the server counts `series` at least
/// `count`, another process commits the rest of the dev chain, in two commits. Returns the
/// client's `ok:` lines.
fn run_listener(program: &Path, args: &[&str], series: &str, count: f64) -> Vec<String> {
    use std::io::BufRead;
    let (dir, datadir, server, expected) = listening_setup();
    let mut child = std::process::Command::new(program)
        .current_dir(clients())
        .args(args)
        .arg(expected.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "the client ended before it was ready"
        );
        if line.trim() == "ready" {
            break;
        }
        lines.push(line);
    }
    let metrics = format!("http://{}/metrics", server.addr);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let text = ureq::get(&metrics)
            .call()
            .unwrap()
            .body_mut()
            .read_to_string()
            .unwrap();
        let value = text
            .lines()
            .find(|l| l.starts_with(series))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
        if value.is_some_and(|v| v >= count) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{series} never reached {count}:\n{text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let devnet = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet");
    let blocks = support::decode_blocks(&std::fs::read(devnet.join("chain.rlp")).unwrap());
    let middle = dir.path().join("middle.rlp");
    std::fs::write(&middle, support::encode_blocks(blocks.iter().take(40))).unwrap();
    let genesis = devnet.join("genesis.json");
    support::run_quarry(support::ingest_args(&datadir, &genesis, &[&middle]));
    support::run_quarry(support::ingest_args(
        &datadir,
        &genesis,
        &[&devnet.join("chain.rlp")],
    ));
    let output = child.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    lines.extend(rest.lines().map(str::to_string));
    assert!(
        output.status.success(),
        "{}\n{}",
        lines.join("\n"),
        String::from_utf8_lossy(&output.stderr)
    );
    lines
        .into_iter()
        .filter(|l| l.starts_with("ok: "))
        .collect()
}

#[test]
fn ethers_v6_gets_new_blocks_and_events_over_websocket() {
    let ok = run_listener(
        Path::new("node"),
        &["ethers-subscribe.mjs", "ws"],
        "quarry_subscriptions{network=\"default\",kind=\"logs\"}",
        1.0,
    );
    assert_eq!(ok.len(), 2, "{ok:#?}");
}

#[test]
fn ethers_v6_gets_new_blocks_and_events_over_http_filters() {
    let ok = run_listener(
        Path::new("node"),
        &["ethers-subscribe.mjs", "http"],
        "quarry_filters{network=\"default\"}",
        1.0,
    );
    assert_eq!(ok.len(), 2, "{ok:#?}");
}

#[test]
fn web3_py_gets_new_heads_and_logs_over_websocket() {
    let ok = run_listener(
        &clients().join(".venv/bin/python"),
        &["web3_subscribe.py"],
        "quarry_subscriptions{network=\"default\",kind=\"logs\"}",
        1.0,
    );
    assert!(
        ok.iter()
            .any(|l| l.contains("new heads, each once, in order")),
        "{ok:#?}"
    );
    assert!(
        ok.iter().any(|l| l.contains("Transfer logs, in order")),
        "{ok:#?}"
    );
}
