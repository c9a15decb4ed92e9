//! eth_getLogs end to end on the bundled dev chain: every filter rule against an oracle built
//! from the receipts, with and without the index, the errors, the result limit at its exact
//! boundary with the range hint, the timeout and the parameter limit.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_primitives::{Address, B256};
use alloy_sol_types::SolEvent;
use quarry_devchain::{
    Contracts, DevAccounts,
    contracts::{Store, Token},
};
use serde_json::{Value, json};
use std::path::Path;
use support::{Server, ingested};

fn devnet_datadir() -> std::path::PathBuf {
    ingested(&Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet"))
}

fn quantity(n: u64) -> String {
    format!("{n:#x}")
}

fn number(value: &Value) -> u64 {
    u64::from_str_radix(value.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

fn topic_of(address: Address) -> B256 {
    B256::left_padding_from(address.as_slice())
}

/// Every log of the chain, read from the receipts, in chain order.
fn all_logs(server: &Server) -> Vec<Value> {
    let head = number(&server.result("eth_getBlockByNumber", json!(["latest", false]))["number"]);
    let mut logs = Vec::new();
    for n in 0..=head {
        let block = server.result("eth_getBlockByNumber", json!([quantity(n), false]));
        for hash in block["transactions"].as_array().unwrap() {
            let receipt = server.result("eth_getTransactionReceipt", json!([hash]));
            logs.extend(receipt["logs"].as_array().unwrap().iter().cloned());
        }
    }
    logs
}

/// What a filter should return, by the rules, computed from `logs`.
fn expected(
    logs: &[Value],
    from: u64,
    to: u64,
    addresses: &[Address],
    topics: &[Vec<B256>],
) -> Vec<Value> {
    logs.iter()
        .filter(|log| (from..=to).contains(&number(&log["blockNumber"])))
        .filter(|log| {
            addresses.is_empty()
                || addresses
                    .iter()
                    .any(|a| log["address"] == json!(format!("{a:#x}")))
        })
        .filter(|log| {
            let have = log["topics"].as_array().unwrap();
            topics.iter().enumerate().all(|(i, wanted)| {
                wanted.is_empty()
                    || have
                        .get(i)
                        .is_some_and(|t| wanted.iter().any(|w| *t == json!(w)))
            })
        })
        .cloned()
        .collect()
}

#[test]
fn filter_rules_match_the_receipts_with_and_without_the_index() {
    let datadir = devnet_datadir();
    let indexed = Server::start(&datadir, "");
    let scanning = Server::start(&datadir, "log_index = false");
    let logs = all_logs(&indexed);
    assert!(logs.len() > 500);
    let head = number(&logs.last().unwrap()["blockNumber"]);
    let accounts = DevAccounts::new(quarry_devchain::account_count(
        quarry_devchain::Options::default().txs_per_block,
    ))
    .unwrap();
    let c = Contracts::of(accounts.address(0));
    let transfer = Token::Transfer::SIGNATURE_HASH;
    let approval = Token::Approval::SIGNATURE_HASH;
    let account0 = topic_of(accounts.address(0));
    let anonymous_sender = topic_of(accounts.address(0));

    type Case = (u64, u64, Vec<Address>, Vec<Vec<B256>>);
    let cases: Vec<Case> = vec![
        (0, head, vec![], vec![]),
        (0, head, vec![c.token], vec![]),
        (0, head, vec![c.token, c.store], vec![]),
        (0, head, vec![c.rare_token], vec![]),
        (0, head, vec![], vec![vec![transfer]]),
        (0, head, vec![], vec![vec![transfer, approval]]),
        (0, head, vec![], vec![vec![], vec![account0]]),
        (
            0,
            head,
            vec![],
            vec![vec![transfer], vec![], vec![account0]],
        ),
        (0, head, vec![c.store], vec![vec![anonymous_sender]]),
        (
            0,
            head,
            vec![c.store],
            vec![vec![Store::Stored::SIGNATURE_HASH]],
        ),
        (3, 9, vec![c.token], vec![vec![transfer]]),
        (head, head, vec![], vec![]),
        (0, head, vec![], vec![vec![B256::repeat_byte(0xee)]]),
        (0, head, vec![Address::repeat_byte(0xee)], vec![]),
        (
            0,
            head,
            vec![],
            vec![vec![], vec![], vec![], vec![], vec![]],
        ),
    ];
    let mut nonempty = 0;
    for (from, to, addresses, topics) in cases {
        let mut filter = json!({"fromBlock": quantity(from), "toBlock": quantity(to)});
        if !addresses.is_empty() {
            filter["address"] = json!(addresses);
        }
        if !topics.is_empty() {
            filter["topics"] = json!(
                topics
                    .iter()
                    .map(|t| if t.is_empty() { Value::Null } else { json!(t) })
                    .collect::<Vec<_>>()
            );
        }
        let want = expected(&logs, from, to, &addresses, &topics);
        nonempty += usize::from(!want.is_empty());
        for server in [&indexed, &scanning] {
            let got = server.call("eth_getLogs", json!([filter]));
            if topics.len() > 4 {
                assert_eq!(got["error"]["code"], -32602, "{got}");
                continue;
            }
            assert_eq!(got["result"], json!(want), "filter {filter}");
        }
    }
    assert!(nonempty >= 10, "{nonempty} cases had matches");

    // One block by hash, alone.
    let block = indexed.result("eth_getBlockByNumber", json!(["0x2", false]));
    let by_hash = indexed.result("eth_getLogs", json!([{"blockHash": block["hash"]}]));
    assert_eq!(by_hash, json!(expected(&logs, 2, 2, &[], &[])));
    // Tags: earliest..latest is everything; the defaults are latest..latest.
    let tagged = indexed.result(
        "eth_getLogs",
        json!([{"fromBlock": "earliest", "toBlock": "latest"}]),
    );
    assert_eq!(tagged, json!(logs));
    let defaults = indexed.result("eth_getLogs", json!([{}]));
    assert_eq!(defaults, json!(expected(&logs, head, head, &[], &[])));
    // Chain order and `removed: false` on every log.
    assert!(logs.iter().all(|log| log["removed"] == false));
}

#[test]
fn filter_errors() {
    let server = Server::start(&devnet_datadir(), "max_log_params = 3");
    let error = |filter: Value| {
        let response = server.call("eth_getLogs", json!([filter]));
        (
            response["error"]["code"].clone(),
            response["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    };
    let block = server.result("eth_getBlockByNumber", json!(["0x2", false]));
    assert_eq!(
        error(json!({"fromBlock": "0x5", "toBlock": "0x4"})),
        (json!(-32602), "invalid block range params".to_string())
    );
    let (code, message) = error(json!({"fromBlock": "0x1", "toBlock": "0x1000"}));
    assert_eq!(code, -32602);
    assert!(
        message.starts_with("block range extends beyond current head block"),
        "{message}"
    );
    let (code, message) = error(json!({"blockHash": block["hash"], "fromBlock": "0x1"}));
    assert_eq!(code, -32602);
    assert!(
        message.contains("cannot specify both BlockHash and FromBlock/ToBlock"),
        "{message}"
    );
    assert_eq!(
        error(json!({"blockHash": B256::repeat_byte(9)})),
        (json!(-32000), "unknown block".to_string())
    );
    let four = vec![Address::repeat_byte(1); 4];
    let (code, message) = error(json!({"fromBlock": "0x0", "address": four}));
    assert_eq!(code, -32602);
    assert_eq!(
        message,
        "too many filter parameters: 4 addresses and topics, at most 3"
    );
    let three = json!({"fromBlock": "0x0", "address": [Address::repeat_byte(1)], "topics": [[B256::ZERO, B256::ZERO]]});
    assert!(
        server
            .call("eth_getLogs", json!([three]))
            .get("result")
            .is_some()
    );
}

#[test]
fn the_result_limit_is_exact_and_hints_a_range_that_fits() {
    let datadir = devnet_datadir();
    let open = Server::start(&datadir, "");
    let all = open.result(
        "eth_getLogs",
        json!([{"fromBlock": "0x0", "toBlock": "latest"}]),
    );
    let total = all.as_array().unwrap().len();

    let exact = Server::start(&datadir, &format!("max_logs = {total}"));
    let answer = exact.result(
        "eth_getLogs",
        json!([{"fromBlock": "0x0", "toBlock": "latest"}]),
    );
    assert_eq!(answer.as_array().unwrap().len(), total);

    let limit = total - 1;
    let short = Server::start(&datadir, &format!("max_logs = {limit}"));
    let response = short.call(
        "eth_getLogs",
        json!([{"fromBlock": "0x0", "toBlock": "latest"}]),
    );
    let error = &response["error"];
    assert_eq!(error["code"], -32005, "{response}");
    assert_eq!(
        error["message"],
        format!("query returned more than {limit} results")
    );
    assert_eq!(error["data"]["from"], "0x0");
    assert_eq!(error["data"]["limit"], limit);
    let hinted = json!([{"fromBlock": error["data"]["from"], "toBlock": error["data"]["to"]}]);
    let fits = short.result("eth_getLogs", hinted);
    let fits = fits.as_array().unwrap();
    assert!(!fits.is_empty() && fits.len() <= limit);
    // The hint is as wide as it can be: one more block would not fit.
    let to = number(&error["data"]["to"]);
    let wider = short.call(
        "eth_getLogs",
        json!([{"fromBlock": "0x0", "toBlock": quantity(to + 1)}]),
    );
    assert_eq!(wider["error"]["code"], -32005, "{wider}");
}

#[test]
fn a_query_past_its_time_limit_stops_with_32005() {
    let server = Server::start(&devnet_datadir(), "logs_timeout_ms = 0");
    let response = server.call(
        "eth_getLogs",
        json!([{"fromBlock": "0x0", "toBlock": "latest"}]),
    );
    assert_eq!(response["error"]["code"], -32005, "{response}");
    assert_eq!(response["error"]["message"], "query timeout exceeded");
    assert!(response["error"].get("data").is_none());
}
