//! Foundry as contract developers use it against quarry: `anvil --fork-url` of quarry serving
//! the dev chain runs a token transfer on the fork, reading every account and slot it needs
//! from quarry, and quarry's metrics show no call to a method it does not serve.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_primitives::{Address, U256};
use alloy_sol_types::SolCall;
use quarry_devchain::{Contracts, DevAccounts, contracts::Token};
use serde_json::{Value, json};
use std::path::Path;
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
    let Some(fork) = Anvil::start(&["--fork-url", &server.http_url(KEY)]) else {
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
