//! Foundry as contract developers use it against quarry: `anvil --fork-url` of quarry serving
//! the dev chain runs a token transfer on the fork, reading every account and slot it needs
//! from quarry, and quarry's metrics show no call to a method it does not serve; `cast` reads
//! the same answers quarry gives (call, storage, logs, receipt, proof) and replays a stored
//! transaction with `cast run`.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_primitives::{Address, U256};
use alloy_sol_types::SolCall;
use quarry_devchain::{Contracts, DevAccounts, contracts::Token};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use support::{Anvil, KEY, Server, ingested};

/// The result of one call to the fork, which must succeed.
fn result(fork: &Anvil, method: &str, params: Value) -> Value {
    let answer = fork.call(method, params);
    assert!(answer.get("error").is_none(), "{method}: {answer}");
    answer["result"].clone()
}

#[test]
fn anvil_forks_quarry_and_runs_a_token_transfer() {
    let datadir = ingested(&Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet"));
    let server = Server::start(&datadir, "");
    let accounts = DevAccounts::new(4).unwrap();
    let holder = accounts.address(0);
    let token = Contracts::of(holder).token;
    let to = Address::repeat_byte(0x77);
    let balance_of = |fork: &Anvil, who: Address| {
        let data = Token::balanceOfCall { holder: who }.abi_encode();
        let answer = result(
            fork,
            "eth_call",
            json!([{"to": token, "data": data}, "latest"]),
        );
        U256::from_str_radix(answer.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    };
    // No on-disk fork cache: a cache an earlier anvil wrote for the same chain and block would
    // answer in quarry's place.
    let Some(fork) = Anvil::start(&["--fork-url", &server.http_url(KEY), "--no-storage-caching"])
    else {
        return;
    };
    let before = balance_of(&fork, holder);
    assert!(
        before > U256::ZERO,
        "the dev chain's account 0 holds tokens"
    );
    result(&fork, "anvil_impersonateAccount", json!([holder]));
    let data = Token::transferCall {
        to,
        value: U256::from(5),
    }
    .abi_encode();
    let hash = result(
        &fork,
        "eth_sendTransaction",
        json!([{"from": holder, "to": token, "data": data}]),
    );
    let mut receipt = Value::Null;
    for _ in 0..100 {
        receipt = result(&fork, "eth_getTransactionReceipt", json!([hash]));
        if !receipt.is_null() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let pool = result(&fork, "txpool_content", json!([]));
    assert_eq!(receipt["status"], json!("0x1"), "{receipt} {pool}");
    assert_eq!(balance_of(&fork, holder), before - U256::from(5));
    assert_eq!(balance_of(&fork, to), U256::from(5));
    let metrics = support::metrics_text(&server);
    assert!(
        metrics.contains("quarry_requests_total{network=\"default\",method=\"eth_getAccountInfo\""),
        "the fork asked eth_getAccountInfo:\n{metrics}"
    );
    assert!(
        !metrics.contains("method=\"unknown\""),
        "the fork asked a method quarry does not serve:\n{metrics}"
    );
}

/// `cast ARGS --rpc-url URL`: its standard output, which must come with success; `None` (with
/// a message) when the npm package is not installed (`.ci/run` installs it).
fn cast(url: &str, args: &[&str]) -> Option<String> {
    let binary = support::foundry_tool("cast")?;
    let out = Command::new(binary)
        .args(args)
        .args(["--rpc-url", url])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "cast {args:?}: {stderr}\n{stdout}");
    Some(stdout.trim().to_string())
}

/// cast's JSON output of `args`.
fn cast_json(url: &str, args: &[&str]) -> Value {
    let out = cast(url, args).unwrap();
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("cast {args:?}: {e}: {out}"))
}

#[test]
fn cast_reads_what_quarry_answers_and_replays_a_transaction() {
    let datadir = ingested(&Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet"));
    let server = Server::start(&datadir, "");
    let url = server.http_url(KEY);
    let accounts = DevAccounts::new(4).unwrap();
    let holder = accounts.address(0);
    let token = format!("{:#x}", Contracts::of(holder).token);
    let Some(head) = cast(&url, &["block-number"]) else {
        return;
    };
    let latest = server.result("eth_blockNumber", json!([]));
    assert_eq!(
        u64::from_str_radix(latest.as_str().unwrap().trim_start_matches("0x"), 16).unwrap(),
        head.parse::<u64>().unwrap()
    );

    // A call and a slot: the raw words quarry returns.
    let data = format!(
        "0x{}",
        alloy_primitives::hex::encode(Token::balanceOfCall { holder }.abi_encode())
    );
    let called = server.result("eth_call", json!([{"to": token, "data": data}, "latest"]));
    assert_eq!(
        cast(&url, &["call", &token, &data]).unwrap(),
        called.as_str().unwrap()
    );
    let slot = server.result("eth_getStorageAt", json!([token, "0x0", "latest"]));
    assert_eq!(
        cast(&url, &["storage", &token, "0"]).unwrap(),
        slot.as_str().unwrap()
    );

    // The token's Transfer logs, then the receipt of the newest one's transaction.
    let filter = json!({"address": token, "fromBlock": "0x0", "toBlock": "latest"});
    let logs = server.result("eth_getLogs", json!([filter]));
    let logs = logs.as_array().unwrap();
    assert!(!logs.is_empty(), "the dev chain has token transfers");
    let cast_logs = cast_json(
        &url,
        &[
            "logs",
            "--json",
            "--from-block",
            "0",
            "--to-block",
            "latest",
            "--address",
            &token,
        ],
    );
    let key = |log: &Value| {
        (
            log["transactionHash"].clone(),
            log["logIndex"].clone(),
            log["data"].clone(),
            log["topics"].clone(),
        )
    };
    let cast_keys: Vec<_> = cast_logs.as_array().unwrap().iter().map(key).collect();
    assert_eq!(cast_keys, logs.iter().map(key).collect::<Vec<_>>());
    // The newest: `cast run` executes with its newest EVM for a chain it does not know, which
    // is the dev chain's fork only at its end.
    let hash = logs[logs.len() - 1]["transactionHash"]
        .as_str()
        .unwrap()
        .to_string();
    let receipt = server.result("eth_getTransactionReceipt", json!([hash]));
    let cast_receipt = cast_json(&url, &["receipt", "--json", &hash]);
    for field in [
        "transactionHash",
        "blockHash",
        "blockNumber",
        "status",
        "gasUsed",
        "cumulativeGasUsed",
        "from",
        "to",
        "logsBloom",
    ] {
        assert_eq!(cast_receipt[field], receipt[field], "receipt {field}");
    }
    assert_eq!(cast_receipt["logs"], receipt["logs"]);

    // A proof of the token's slot 0, as quarry proves it.
    let proof = server.result("eth_getProof", json!([token, ["0x0"], "latest"]));
    let cast_proof = cast_json(&url, &["proof", "--json", &token, "0"]);
    for field in [
        "accountProof",
        "storageHash",
        "codeHash",
        "balance",
        "nonce",
    ] {
        assert_eq!(cast_proof[field], proof[field], "proof {field}");
    }
    assert_eq!(
        cast_proof["storageProof"][0]["proof"],
        proof["storageProof"][0]["proof"]
    );

    // `cast run` replays the block's earlier transactions and then this one on state it reads
    // from quarry at the parent block, and must reach the stored outcome.
    let run = cast(&url, &["run", &hash]).unwrap();
    assert!(
        run.contains("Transaction successfully executed"),
        "cast run {hash}:\n{run}"
    );
    let gas_used = run
        .lines()
        .find_map(|line| line.strip_prefix("Gas used: "))
        .unwrap_or_else(|| panic!("cast run prints the gas used:\n{run}"));
    assert_eq!(
        format!("{:#x}", gas_used.trim().parse::<u64>().unwrap()),
        receipt["gasUsed"].as_str().unwrap(),
        "cast run's replay used the stored transaction's gas"
    );
}
