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
use quarry_storage::{LogFilter, LogLimits, LogsOutcome};
use serde_json::{Value, json};
use std::{
    path::Path,
    time::{Duration, Instant},
};
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
        quarry_devchain::GenerateOptions::default().txs_per_block,
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

/// Every log of blocks `from..=to` matching `filter`, by decoding every receipt in full and
/// matching the decoded logs: the reference the in-place matcher must equal.
fn full_decode_logs(
    tx: &quarry_storage::ReadTx,
    filter: &LogFilter,
) -> Vec<(u64, B256, B256, u32, u32, alloy_primitives::Log)> {
    let mut out = Vec::new();
    for number in filter.from..=filter.to {
        let receipts = tx.receipts(number).unwrap().unwrap();
        let hashes = tx.transaction_hashes(number).unwrap().unwrap();
        let block_hash = tx.canonical_hash(number).unwrap().unwrap();
        let mut log_index = 0;
        for (tx_index, receipt) in receipts.iter().enumerate() {
            for log in &receipt.logs {
                if filter.matches(log) {
                    let at = tx_index as u32;
                    out.push((
                        number,
                        block_hash,
                        hashes[tx_index],
                        at,
                        log_index,
                        log.clone(),
                    ));
                }
                log_index += 1;
            }
        }
    }
    out
}

/// Filters built from what a chain's logs hold: each address, each topic at each position,
/// pairs of both, several addresses, wildcards before a topic, and no condition at all, over
/// the whole chain and over parts of it.
fn filters_of(tx: &quarry_storage::ReadTx, head: u64) -> Vec<LogFilter> {
    let mut addresses = Vec::new();
    let mut topics: Vec<Vec<B256>> = vec![Vec::new(); 4];
    let mut pairs = Vec::new();
    for number in 0..=head {
        for receipt in tx.receipts(number).unwrap().unwrap() {
            for log in receipt.logs {
                if !addresses.contains(&log.address) {
                    addresses.push(log.address);
                    if let Some(first) = log.topics().first() {
                        pairs.push((log.address, *first));
                    }
                }
                for (position, topic) in log.topics().iter().enumerate() {
                    if topics[position].len() < 24 && !topics[position].contains(topic) {
                        topics[position].push(*topic);
                    }
                }
            }
        }
    }
    let filter = |from, to, addresses: Vec<Address>, topics: Vec<Vec<B256>>| LogFilter {
        from,
        to,
        addresses,
        topics,
    };
    let mut filters = vec![
        filter(0, head, vec![], vec![]),
        filter(head / 2, head, vec![], vec![]),
        filter(0, head, addresses.iter().take(3).copied().collect(), vec![]),
    ];
    for address in &addresses {
        filters.push(filter(0, head, vec![*address], vec![]));
        filters.push(filter(1, head.min(4), vec![*address], vec![]));
    }
    for (position, wanted) in topics.iter().enumerate() {
        for topic in wanted {
            let mut at = vec![Vec::new(); position + 1];
            at[position] = vec![*topic];
            filters.push(filter(0, head, vec![], at));
        }
    }
    for (address, topic) in pairs {
        filters.push(filter(0, head, vec![address], vec![vec![topic]]));
        filters.push(filter(
            head / 3,
            head,
            vec![address],
            vec![vec![], vec![topic]],
        ));
    }
    filters
}

/// The eth_getLogs path that matches logs in place (addresses and topics read where they are
/// stored, data copied only for a match) returns, log for log, what decoding every receipt of
/// the range and matching the decoded logs returns: on the dev chain and on the rpc-compat
/// chain, whose block 2 holds about 10 MB of log data, with and without the log index.
#[test]
fn the_in_place_matcher_equals_a_full_decode_log_for_log() {
    for datadir in [devnet_datadir(), ingested(&support::fixtures())] {
        let db = quarry_storage::Database::open(&datadir).unwrap();
        let tx = db.reader().unwrap();
        let (head, _) = tx.head().unwrap().unwrap();
        let filters = filters_of(&tx, head);
        assert!(filters.len() > 20, "{} filters", filters.len());
        let mut matched = 0;
        for filter in &filters {
            let expected = full_decode_logs(&tx, filter);
            matched += expected.len();
            for use_index in [true, false] {
                let limits = LogLimits {
                    max_results: usize::MAX,
                    deadline: Instant::now() + Duration::from_secs(600),
                    use_index,
                };
                let LogsOutcome::Found(found) = tx.logs(filter, limits).unwrap() else {
                    panic!("{filter:?} did not complete");
                };
                let found: Vec<_> = found
                    .into_iter()
                    .map(|l| {
                        (
                            l.block_number,
                            l.block_hash,
                            l.transaction_hash,
                            l.transaction_index,
                            l.log_index,
                            l.log,
                        )
                    })
                    .collect();
                assert_eq!(found, expected, "{filter:?}, index {use_index}");
            }
        }
        assert!(matched > 100, "{} logs matched in all", matched);
    }
}

/// On the rpc-compat chain, block 2's receipts are too large to read whole for one of them:
/// each of its transactions' receipts, read alone, equals its place in eth_getBlockReceipts,
/// and eth_getLogs for the emitter contract over blocks 1-4 returns its small logs beside them.
#[test]
fn receipts_read_alone_equal_the_block_receipts_on_a_block_of_large_logs() {
    let datadir = ingested(&support::fixtures());
    {
        let db = quarry_storage::Database::open(&datadir).unwrap();
        let tx = db.reader().unwrap();
        let size = tx
            .with_receipts(2, |view| view.encoded_size())
            .unwrap()
            .unwrap();
        assert!(size > 1 << 20, "block 2's receipts take {size} bytes");
    }
    let server = Server::start(&datadir, "");
    let block = server.result("eth_getBlockByNumber", json!(["0x2", false]));
    let hashes = block["transactions"].as_array().unwrap().clone();
    assert!(hashes.len() > 10);
    // Alone first, while no cache holds the block's receipts, then the whole block.
    let alone: Vec<Value> = hashes
        .iter()
        .map(|hash| server.result("eth_getTransactionReceipt", json!([hash])))
        .collect();
    let whole = server.result("eth_getBlockReceipts", json!(["0x2"]));
    assert_eq!(whole.as_array().unwrap(), &alone);

    let emitter = "0x7dcd17433742f4c0ca53122ab541d0ba67fc27df";
    let logs = server.result(
        "eth_getLogs",
        json!([{"fromBlock": "0x1", "toBlock": "0x4", "address": emitter}]),
    );
    let mut expected = Vec::new();
    for n in 1..=4u64 {
        for receipt in server
            .result("eth_getBlockReceipts", json!([quantity(n)]))
            .as_array()
            .unwrap()
        {
            for log in receipt["logs"].as_array().unwrap() {
                if log["address"] == emitter {
                    expected.push(log.clone());
                }
            }
        }
    }
    assert!(!expected.is_empty());
    assert_eq!(logs.as_array().unwrap(), &expected);
}
