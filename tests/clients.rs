//! Real client libraries, unmodified, against `quarry serve` on the dev chain: ethers v6
//! (npm) and web3.py (PyPI) connect over HTTP and WebSocket, read the chain id and head, fetch
//! blocks with and without transactions, a receipt, a token's Transfer logs, a balance and a
//! storage slot, and make a call whose revert reason the library itself reports. What the
//! libraries must find is read here first with plain JSON-RPC.

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
        quarry_devchain::Options::default().txs_per_block,
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
