//! Foundry as contract developers use it against quarry: `anvil --fork-url` of quarry serving
//! the dev chain runs a token transfer on the fork, reading every account and slot it needs
//! from quarry, and quarry's metrics show no call to a method it does not serve.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_primitives::{Address, U256};
use alloy_sol_types::SolCall;
use quarry_devchain::{Contracts, DevAccounts, contracts::Token};
use serde_json::{Value, json};
use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
};
use support::{KEY, Server, ingested};

fn anvil_binary() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/node_modules/.bin/anvil")
}

struct Fork {
    child: Child,
    url: String,
}

impl Drop for Fork {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Fork {
    fn call(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut response = ureq::post(&self.url)
            .header("Content-Type", "application/json")
            .send(body.to_string())
            .unwrap();
        let answer: Value =
            serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }
}

/// `anvil --fork-url` of `url`, on a free port.
fn fork_of(url: &str) -> Fork {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(anvil_binary())
        .args(["--port", &port.to_string(), "--fork-url", url])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        if line.unwrap().starts_with("Listening on") {
            break;
        }
    }
    std::thread::spawn(move || lines.for_each(drop));
    Fork {
        child,
        url: format!("http://127.0.0.1:{port}"),
    }
}

#[test]
fn anvil_forks_quarry_and_runs_a_token_transfer() {
    if !anvil_binary().exists() {
        eprintln!("skipping: anvil is not installed (cd tests/clients && npm ci)");
        return;
    }
    let datadir = ingested(&Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet"));
    let server = Server::start(&datadir, "");
    let accounts = DevAccounts::new(4).unwrap();
    let holder = accounts.address(0);
    let token = Contracts::of(holder).token;
    let to = Address::repeat_byte(0x77);
    let balance_of = |fork: &Fork, who: Address| {
        let data = Token::balanceOfCall { holder: who }.abi_encode();
        let answer = fork.call("eth_call", json!([{"to": token, "data": data}, "latest"]));
        U256::from_str_radix(answer.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    };
    let fork = fork_of(&server.http_url(KEY));
    let before = balance_of(&fork, holder);
    assert!(
        before > U256::ZERO,
        "the dev chain's account 0 holds tokens"
    );
    fork.call("anvil_impersonateAccount", json!([holder]));
    let data = Token::transferCall {
        to,
        value: U256::from(5),
    }
    .abi_encode();
    let hash = fork.call(
        "eth_sendTransaction",
        json!([{"from": holder, "to": token, "data": data}]),
    );
    let mut receipt = Value::Null;
    for _ in 0..100 {
        receipt = fork.call("eth_getTransactionReceipt", json!([hash]));
        if !receipt.is_null() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let pool = fork.call("txpool_content", json!([]));
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
