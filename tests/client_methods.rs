//! End-to-end tests of the methods wallets and tools call beside the fixtures' ones: headers,
//! accounts, raw transactions, transactions by sender and nonce and the net_/web3_ helpers, on the rpc-compat chain and the
//! bundled dev chain, over HTTP and WebSocket, checked against the answers they must agree with.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_primitives::{B256, keccak256};
use serde_json::{Value, json};
use std::path::Path;
use support::{Server, WsClient, fixtures, ingested};

/// One way of asking: over HTTP, or over one WebSocket.
enum Transport<'a> {
    Http(&'a Server),
    Ws(Box<WsClient>),
}

impl Transport<'_> {
    fn ask(&mut self, method: &str, params: Value) -> Value {
        let response = match self {
            Transport::Http(server) => server.call(method, params.clone()),
            Transport::Ws(ws) => ws.exchange(
                &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string(),
            ),
        };
        assert!(
            response.get("error").is_none(),
            "{method} {params}: {response}"
        );
        response["result"].clone()
    }
}

fn number(value: &Value) -> u64 {
    u64::from_str_radix(value.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// Runs `check` over HTTP and over a WebSocket of a server of `folder`'s chain.
fn on_both_transports(folder: &Path, check: impl Fn(&mut Transport)) {
    let server = Server::start(&ingested(folder), "proof_window = 100000");
    check(&mut Transport::Http(&server));
    check(&mut Transport::Ws(Box::new(server.ws())));
}

fn devnet() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet")
}

/// eth_getHeaderBy* is the block's answer without what only a block has, by number and by hash.
fn headers_are_blocks_without_their_bodies(rpc: &mut Transport) {
    let head = number(&rpc.ask("eth_blockNumber", json!([])));
    for n in 0..=head {
        let mut block = rpc.ask("eth_getBlockByNumber", json!([format!("{n:#x}"), false]));
        let header = rpc.ask("eth_getHeaderByNumber", json!([format!("{n:#x}")]));
        let by_hash = rpc.ask("eth_getHeaderByHash", json!([block["hash"]]));
        assert_eq!(header, by_hash, "block {n}");
        let fields = block.as_object_mut().unwrap();
        for key in [
            "size",
            "totalDifficulty",
            "transactions",
            "uncles",
            "withdrawals",
        ] {
            fields.remove(key);
        }
        assert_eq!(header, block, "block {n}");
    }
    let latest = rpc.ask("eth_getHeaderByNumber", json!(["latest"]));
    assert_eq!(number(&latest["number"]), head);
    assert_eq!(
        rpc.ask("eth_getHeaderByNumber", json!([format!("{:#x}", head + 1)])),
        Value::Null
    );
    assert_eq!(
        rpc.ask("eth_getHeaderByHash", json!([B256::repeat_byte(7)])),
        Value::Null
    );
}

/// Every stored transaction's raw bytes, by hash and by position, hash to the transaction's
/// hash and equal debug_getRawTransaction's.
fn raw_transactions_hash_to_their_hashes(rpc: &mut Transport) {
    let head = number(&rpc.ask("eth_blockNumber", json!([])));
    let mut seen = 0;
    for n in 0..=head {
        let block = rpc.ask("eth_getBlockByNumber", json!([format!("{n:#x}"), false]));
        let hashes = block["transactions"].as_array().unwrap().clone();
        for (index, hash) in hashes.iter().enumerate() {
            let raw = rpc.ask("eth_getRawTransactionByHash", json!([hash]));
            let bytes = alloy_primitives::hex::decode(raw.as_str().unwrap()).unwrap();
            assert_eq!(json!(keccak256(&bytes)), *hash, "block {n} index {index}");
            assert_eq!(rpc.ask("debug_getRawTransaction", json!([hash])), raw);
            let at = json!([format!("{n:#x}"), format!("{index:#x}")]);
            let by_number = rpc.ask("eth_getRawTransactionByBlockNumberAndIndex", at);
            assert_eq!(by_number, raw);
            let at = json!([block["hash"], format!("{index:#x}")]);
            assert_eq!(rpc.ask("eth_getRawTransactionByBlockHashAndIndex", at), raw);
            seen += 1;
        }
        let past_end = json!([format!("{n:#x}"), format!("{:#x}", hashes.len())]);
        assert_eq!(
            rpc.ask("eth_getRawTransactionByBlockNumberAndIndex", past_end),
            Value::Null
        );
    }
    assert!(seen > 0, "the chain has no transactions");
    let unknown = json!([B256::repeat_byte(9)]);
    assert_eq!(rpc.ask("eth_getRawTransactionByHash", unknown), Value::Null);
}

/// The accounts a block's transactions touch: senders, recipients and the miner.
fn touched_accounts(rpc: &mut Transport, n: u64) -> Vec<Value> {
    let block = rpc.ask("eth_getBlockByNumber", json!([format!("{n:#x}"), true]));
    let mut accounts = vec![block["miner"].clone()];
    for tx in block["transactions"].as_array().unwrap() {
        accounts.push(tx["from"].clone());
        if !tx["to"].is_null() {
            accounts.push(tx["to"].clone());
        }
    }
    accounts.sort_by_key(|a| a.to_string());
    accounts.dedup();
    accounts
}

/// eth_getAccount agrees with eth_getProof, before and after blocks spread over the chain and
/// at the head, for every account those blocks touch (contracts with storage among them), and
/// eth_getAccountInfo with the single-field getters.
fn accounts_agree_with_proofs(rpc: &mut Transport) {
    let head = number(&rpc.ask("eth_blockNumber", json!([])));
    let mut with_storage = 0;
    for n in (1..=head).step_by((head / 6).max(1) as usize) {
        for address in touched_accounts(rpc, n) {
            for at in [n - 1, n, head] {
                let at = format!("{at:#x}");
                let account = rpc.ask("eth_getAccount", json!([address, at]));
                let proof = rpc.ask("eth_getProof", json!([address, [], at]));
                let info = rpc.ask("eth_getAccountInfo", json!([address, at]));
                let balance = rpc.ask("eth_getBalance", json!([address, at]));
                let nonce = rpc.ask("eth_getTransactionCount", json!([address, at]));
                let code = rpc.ask("eth_getCode", json!([address, at]));
                assert_eq!(
                    info,
                    json!({"balance": balance, "nonce": nonce, "code": code})
                );
                if account.is_null() {
                    assert_eq!(balance, json!("0x0"), "{address} at {at}");
                    continue;
                }
                support::assert_account_is_proved(&account, &proof, &format!("{address} at {at}"));
                if proof["storageHash"] != json!(alloy_trie::EMPTY_ROOT_HASH) {
                    with_storage += 1;
                }
            }
        }
    }
    assert!(with_storage > 0, "no account with storage was asked");
    let nobody = json!(["0x00000000000000000000000000000000deadbeef", "latest"]);
    assert_eq!(rpc.ask("eth_getAccount", nobody.clone()), Value::Null);
    assert_eq!(
        rpc.ask("eth_getAccountInfo", nobody),
        json!({"balance": "0x0", "nonce": "0x0", "code": "0x"})
    );
}

/// eth_getTransactionBySenderAndNonce finds every (sampled) stored transaction by its sender
/// and nonce; a nonce not yet used and a sender that never sent are `null`.
fn transactions_by_sender_and_nonce(rpc: &mut Transport) {
    let head = number(&rpc.ask("eth_blockNumber", json!([])));
    let mut found = 0;
    for n in 0..=head {
        let block = rpc.ask("eth_getBlockByNumber", json!([format!("{n:#x}"), true]));
        for tx in block["transactions"].as_array().unwrap().iter().step_by(5) {
            let params = json!([tx["from"], tx["nonce"]]);
            let by_nonce = rpc.ask("eth_getTransactionBySenderAndNonce", params);
            assert_eq!(by_nonce, *tx, "block {n}");
            found += 1;
        }
    }
    assert!(found > 0, "the chain has no transactions");
    let block = rpc.ask("eth_getBlockByNumber", json!(["latest", true]));
    let last = block["transactions"]
        .as_array()
        .and_then(|t| t.last().cloned());
    if let Some(last) = last {
        let next = format!("{:#x}", number(&last["nonce"]) + 1_000_000);
        let unused = rpc.ask(
            "eth_getTransactionBySenderAndNonce",
            json!([last["from"], next]),
        );
        assert_eq!(unused, Value::Null);
    }
    let nobody = json!(["0x00000000000000000000000000000000deadbeef", "0x0"]);
    assert_eq!(
        rpc.ask("eth_getTransactionBySenderAndNonce", nobody),
        Value::Null
    );
}

fn helpers_answer_as_geth_does(rpc: &mut Transport) {
    assert_eq!(rpc.ask("net_listening", json!([])), json!(true));
    assert_eq!(rpc.ask("eth_accounts", json!([])), json!([]));
    // Nothing follows these datadirs: no upstream, no peers.
    assert_eq!(rpc.ask("net_peerCount", json!([])), json!("0x0"));
    assert_eq!(
        rpc.ask("web3_sha3", json!(["0x68656c6c6f20776f726c64"])),
        json!("0x47173285a8d7341e5e972fc677286384f802f8ef42a5ec5f03bbfa254cb01fad")
    );
    assert_eq!(
        rpc.ask("web3_sha3", json!(["0x"])),
        json!(alloy_primitives::KECCAK256_EMPTY)
    );
}

#[test]
fn headers_on_the_rpc_compat_and_dev_chains() {
    on_both_transports(&fixtures(), headers_are_blocks_without_their_bodies);
    on_both_transports(&devnet(), headers_are_blocks_without_their_bodies);
}

#[test]
fn raw_transactions_on_the_rpc_compat_and_dev_chains() {
    on_both_transports(&fixtures(), raw_transactions_hash_to_their_hashes);
    on_both_transports(&devnet(), raw_transactions_hash_to_their_hashes);
}

#[test]
fn accounts_on_the_rpc_compat_and_dev_chains() {
    on_both_transports(&fixtures(), accounts_agree_with_proofs);
    on_both_transports(&devnet(), accounts_agree_with_proofs);
}

#[test]
fn transactions_by_sender_and_nonce_on_the_rpc_compat_and_dev_chains() {
    on_both_transports(&fixtures(), transactions_by_sender_and_nonce);
    on_both_transports(&devnet(), transactions_by_sender_and_nonce);
}

#[test]
fn net_and_web3_helpers() {
    on_both_transports(&fixtures(), helpers_answer_as_geth_does);
}

#[test]
fn bad_web3_sha3_input_names_what_is_wrong() {
    let server = Server::start(&ingested(&fixtures()), "");
    let response = server.call("web3_sha3", json!(["68656c6c6f"]));
    let message = response["error"]["message"].as_str().unwrap();
    assert!(message.contains("without 0x prefix"), "{response}");
    assert!(message.contains("argument 0 (data)"), "{response}");
    let response = server.call("web3_sha3", json!(["0xabc"]));
    assert_eq!(response["error"]["code"], json!(-32602), "{response}");
}
