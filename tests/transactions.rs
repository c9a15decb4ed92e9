//! End-to-end tests of transactions sent through quarry to a real node that validates and
//! mines them: anvil (from the npm package tests/clients installs) on the dev chain's chain id,
//! named as the dev chain's `transactions_url` (its HTTP and its WebSocket endpoint); and ethers v6 and viem sending through quarry
//! with their own wallet APIs.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256, TxKind, U256, hex, keccak256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use serde_json::{Value, json};
use std::{
    path::Path,
    time::{Duration, Instant},
};
use support::{Anvil, Server, ingested};

/// The dev chain's chain id, which anvil is started with.
const CHAIN_ID: u64 = 1337;
/// anvil's first dev account (the well-known "test test ... junk" mnemonic), funded there.
const ANVIL_KEY: &str = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

/// anvil on the dev chain's chain id, with a zero base fee: wallets price their transactions
/// from quarry's dev chain, whose base fee is not anvil's.
fn start_anvil() -> Option<Anvil> {
    let chain_id = CHAIN_ID.to_string();
    Anvil::start(&["--chain-id", &chain_id, "--block-base-fee-per-gas", "0"])
}

/// A transfer of `value` wei from anvil's first account, signed for `chain_id`.
fn transfer(nonce: u64, value: u64, chain_id: u64) -> (String, B256) {
    let key = PrivateKeySigner::from_slice(&hex::decode(ANVIL_KEY).unwrap()).unwrap();
    let tx = TxEip1559 {
        chain_id,
        nonce,
        gas_limit: 21_000,
        max_fee_per_gas: 20_000_000_000,
        max_priority_fee_per_gas: 1_000_000_000,
        to: TxKind::Call(Address::repeat_byte(0x42)),
        value: U256::from(value),
        ..Default::default()
    };
    let signature = key.sign_hash_sync(&tx.signature_hash()).unwrap();
    let bytes = TxEnvelope::from(tx.into_signed(signature)).encoded_2718();
    (hex::encode_prefixed(&bytes), keccak256(&bytes))
}

fn sender() -> Value {
    json!("0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266")
}

fn dev_server(extra: &str) -> Server {
    let devnet = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet");
    Server::start(&ingested(&devnet), extra)
}

fn metrics(server: &Server) -> String {
    support::metrics_text(server)
}

#[test]
fn a_signed_transfer_goes_upstream_and_the_upstream_answers_verbatim() {
    let Some(anvil) = start_anvil() else { return };
    sends_through(&anvil, &anvil.url);
}

/// The same over WebSocket: anvil serves it on the same port.
#[test]
fn a_websocket_upstream_gets_the_same_calls_and_answers() {
    let Some(anvil) = start_anvil() else { return };
    let ws_url = anvil.url.replacen("http://", "ws://", 1);
    sends_through(&anvil, &ws_url);
}

/// Sends, resends, a Sync send and the pool reads through quarry with anvil at `url` (its
/// HTTP or its WebSocket endpoint) as the dev chain's `transactions_url`.
fn sends_through(anvil: &Anvil, url: &str) {
    let server = dev_server(&format!("transactions_url = \"{url}\""));
    let (raw, hash) = transfer(0, 1_000, CHAIN_ID);

    // 1. quarry answers the upstream's hash, and anvil mines the transaction.
    let sent = server.result("eth_sendRawTransaction", json!([raw]));
    assert_eq!(sent, json!(hash));
    let receipt = anvil.mined_receipt(&json!(hash));
    assert_eq!(receipt["result"]["status"], json!("0x1"), "{receipt}");

    // 2. The same bytes again: anvil's own error, exactly as anvil gives it directly.
    let again = server.call("eth_sendRawTransaction", json!([raw]));
    let direct = anvil.call("eth_sendRawTransaction", json!([raw]));
    assert!(direct.get("error").is_some(), "{direct}");
    assert_eq!(again["error"], direct["error"]);

    // EIP-7966: the Sync call goes as it is, and the upstream's receipt comes back.
    let (raw_sync, hash_sync) = transfer(1, 1_000, CHAIN_ID);
    let receipt = server.result("eth_sendRawTransactionSync", json!([raw_sync]));
    assert_eq!(receipt["transactionHash"], json!(hash_sync), "{receipt}");
    assert_eq!(receipt["status"], json!("0x1"), "{receipt}");

    // 5. Pending nonces and transactions quarry has not stored come from the upstream; the
    // latest nonce stays the dev chain's own (anvil's account never sent there).
    let pending = server.result("eth_getTransactionCount", json!([sender(), "pending"]));
    assert_eq!(pending, json!("0x2"));
    let latest = server.result("eth_getTransactionCount", json!([sender(), "latest"]));
    assert_eq!(latest, json!("0x0"));
    let by_hash = server.result("eth_getTransactionByHash", json!([hash]));
    assert_eq!(by_hash["hash"], json!(hash), "{by_hash}");
    let status = server.result("txpool_status", json!([]));
    assert_eq!(status, anvil.call("txpool_status", json!([]))["result"]);

    let metrics = metrics(&server);
    for line in [
        r#"quarry_transactions_total{network="default",outcome="sent"} 2"#,
        r#"quarry_transactions_total{network="default",outcome="rejected"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
}

#[test]
fn quarry_refuses_what_it_can_tell_is_wrong_and_the_upstream_never_sees_it() {
    let Some(anvil) = start_anvil() else { return };
    let server = dev_server(&format!("transactions_url = \"{}\"", anvil.url));
    let (other_chain, other_hash) = transfer(0, 1, 1);
    let refused = server.call("eth_sendRawTransaction", json!([other_chain]));
    assert_eq!(
        refused["error"]["message"],
        json!("invalid chain id: the transaction is for chain 1, this network is 1337")
    );
    let (raw, _) = transfer(0, 1, CHAIN_ID);
    let truncated = &raw[..raw.len() - 10];
    let malformed = server.call("eth_sendRawTransaction", json!([truncated]));
    let message = malformed["error"]["message"].as_str().unwrap();
    assert!(message.contains("does not decode"), "{malformed}");
    let not_hex = server.call("eth_sendRawTransaction", json!(["0xzz"]));
    assert_eq!(not_hex["error"]["code"], json!(-32602), "{not_hex}");
    // anvil saw none of them.
    let seen = anvil.call("eth_getTransactionByHash", json!([other_hash]));
    assert_eq!(seen["result"], Value::Null);
    let nonce = anvil.call("eth_getTransactionCount", json!([sender(), "pending"]));
    assert_eq!(nonce["result"], json!("0x0"));
    assert!(
        metrics(&server)
            .contains(r#"quarry_transactions_total{network="default",outcome="refused"} 2"#)
    );
}

#[test]
fn an_unreachable_upstream_is_a_clear_error_within_the_timeout() {
    for scheme in ["http", "ws"] {
        unreachable_upstream(scheme);
    }
}

fn unreachable_upstream(scheme: &str) {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("{scheme}://{}/secret-key", closed.local_addr().unwrap());
    drop(closed);
    let server = dev_server(&format!(
        "transactions_url = \"{url}\"\ntransactions_timeout_ms = 1000"
    ));
    let (raw, _) = transfer(0, 1, CHAIN_ID);
    let started = Instant::now();
    let response = server.call("eth_sendRawTransaction", json!([raw]));
    assert!(started.elapsed() < Duration::from_secs(5));
    let message = response["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("the transaction was not sent: the network's transactions upstream gave no answer within 1000 ms"),
        "{scheme}: {response}"
    );
    assert!(!message.contains("secret-key"), "the URL leaked: {message}");
    assert!(
        metrics(&server)
            .contains(r#"quarry_transactions_total{network="default",outcome="unavailable"} 1"#)
    );
}

/// An endpoint that answers every HTTP request with `status`, `content_type` and `body`, as a
/// hosted provider refusing a key over its rate does; how many requests it read.
fn refusing_upstream(
    status: &'static str,
    content_type: &'static str,
    body: &'static str,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v3/key", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            // One request per connection.
            let _ = support::read_request_body(&mut reader);
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, seen)
}

#[test]
fn an_upstream_refusal_with_a_json_rpc_error_goes_back_verbatim() {
    let (url, seen) = refusing_upstream(
        "429 Too Many Requests",
        "application/json",
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"daily request count exceeded, request rate limited","data":{"see":"https://infura.io/dashboard"}}}"#,
    );
    let server = dev_server(&format!("transactions_url = \"{url}\""));
    let (raw, _) = transfer(0, 1, CHAIN_ID);
    let response = server.call("eth_sendRawTransaction", json!([raw]));
    assert_eq!(
        response["error"],
        json!({"code": -32005, "message": "daily request count exceeded, request rate limited", "data": {"see": "https://infura.io/dashboard"}}),
        "{response}"
    );
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(
        metrics(&server)
            .contains(r#"quarry_transactions_total{network="default",outcome="rejected"} 1"#)
    );

    // An error status without a JSON-RPC answer is no answer.
    let (url, _) = refusing_upstream("503 Service Unavailable", "text/plain", "upstream down");
    let server = dev_server(&format!("transactions_url = \"{url}\""));
    let response = server.call("eth_sendRawTransaction", json!([raw]));
    let message = response["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "the transaction was not sent: the network's transactions upstream gave no answer"
        ) && message.contains("503"),
        "{response}"
    );
}

#[test]
fn a_network_without_an_upstream_says_it_takes_no_transactions() {
    let server = dev_server("");
    let (raw, _) = transfer(0, 1, CHAIN_ID);
    let response = server.call("eth_sendRawTransaction", json!([raw]));
    assert_eq!(response["error"]["code"], json!(-32601), "{response}");
    let message = response["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("this network takes no transactions"),
        "{response}"
    );
    let pool = server.call("txpool_status", json!([]));
    assert_eq!(pool["error"]["code"], json!(-32601), "{pool}");
    // Without an upstream, pending is the latest block's, as before.
    let pending = server.result("eth_getTransactionCount", json!([sender(), "pending"]));
    assert_eq!(pending, json!("0x0"));
}

/// Dev chain account 0's key: funded on the dev chain (where wallets estimate gas through
/// quarry) and, by `anvil_setBalance`, on anvil (which executes the transfer).
fn dev_key() -> PrivateKeySigner {
    PrivateKeySigner::from_slice(keccak256("quarry devchain account 0").as_slice()).unwrap()
}

#[test]
fn ethers_and_viem_send_through_quarry_with_their_own_wallet_apis() {
    let Some(anvil) = start_anvil() else { return };
    let key = dev_key();
    let funded = anvil.call(
        "anvil_setBalance",
        json!([key.address(), "0xde0b6b3a7640000"]),
    );
    assert!(funded.get("error").is_none(), "{funded}");
    let server = dev_server(&format!("transactions_url = \"{}\"", anvil.url));
    let stdout = support::node_client(
        "wallets-send.mjs",
        &[
            &server.http_url(support::KEY),
            &hex::encode_prefixed(key.to_bytes()),
            &CHAIN_ID.to_string(),
        ],
    );
    let sent: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(sent.len(), 2, "{stdout}");
    for (entry, library) in sent.iter().zip(["ethers", "viem"]) {
        assert_eq!(entry["library"], json!(library));
        let receipt = anvil.mined_receipt(&entry["hash"]);
        assert_eq!(
            receipt["result"]["status"],
            json!("0x1"),
            "{library}: {receipt}"
        );
        let tx = anvil.call("eth_getTransactionByHash", json!([entry["hash"]]));
        let from = tx["result"]["from"]
            .as_str()
            .unwrap()
            .parse::<Address>()
            .unwrap();
        assert_eq!(from, key.address(), "{library}: {tx}");
    }
    let metrics = metrics(&server);
    let line = r#"quarry_transactions_total{network="default",outcome="sent"} 2"#;
    assert!(metrics.contains(line), "{line} not in\n{metrics}");
}
