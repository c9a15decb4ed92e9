//! The dev chain: `quarry devchain` is deterministic and reproduces the committed
//! testdata/devnet byte for byte, and that chain ingests and has everything it promises
//! (uncles, the merge, withdrawals, every transaction type, events, storage, reverts, a failed
//! transaction), checked through `quarry serve`.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_primitives::{Address, B256, U256, keccak256};
use alloy_sol_types::{SolCall, SolEvent};
use quarry_devchain::{
    CANCUN_BLOCK, Contracts, DevAccounts, MERGE_BLOCK, PRAGUE_BLOCK, SHANGHAI_BLOCK,
    contracts::{Reverter, Store, Token},
};
use serde_json::{Value, json};
use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};
use support::{
    Server, decode_blocks, devchain, encode_blocks, ingest_args, ingested, quarry_fails,
    run_quarry, stored_head,
};

fn devnet() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet")
}

/// An address as quarry writes it in JSON: lowercase hex.
fn lower(address: Address) -> Value {
    json!(format!("{address:#x}"))
}

fn read(path: PathBuf) -> Vec<u8> {
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn generation_is_deterministic_and_reproduces_the_bundled_chain() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second, other) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("c"),
    );
    devchain(&first, &[]);
    devchain(&second, &[]);
    devchain(&other, &["--seed", "2"]);
    for file in ["genesis.json", "chain.rlp"] {
        assert_eq!(read(first.join(file)), read(second.join(file)), "{file}");
        assert_eq!(
            read(first.join(file)),
            read(devnet().join(file)),
            "testdata/devnet/{file} is not what `quarry devchain` makes; regenerate it"
        );
    }
    assert_ne!(read(first.join("chain.rlp")), read(other.join("chain.rlp")));
    assert!(!first.join("chain.rlp.partial").exists());
}

/// `--fork-at N`: blocks 1..=N are the ordinary chain's byte for byte; every block after N is
/// a different, valid block (its own mix, extra data "quarry devchain fork") on the fork's own
/// parent. Another `--fork-seed` gives another branch; fork points before the merge, at or past
/// the last block, and `--fork-seed` alone are refused.
#[test]
fn a_fork_shares_the_chain_up_to_its_fork_point_and_differs_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let chain_args = ["--blocks", "24", "--txs-per-block", "3", "--seed", "4"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        chain_args.iter().chain(extra).copied().collect()
    };
    let (base, fork, other) = (
        dir.path().join("base"),
        dir.path().join("fork"),
        dir.path().join("other"),
    );
    devchain(&base, &chain_args);
    devchain(&fork, &with(&["--fork-at", "16", "--fork-seed", "3"]));
    devchain(&other, &with(&["--fork-at", "16", "--fork-seed", "4"]));
    assert_eq!(
        read(base.join("genesis.json")),
        read(fork.join("genesis.json"))
    );
    let (base_bytes, fork_bytes) = (read(base.join("chain.rlp")), read(fork.join("chain.rlp")));
    let (base_blocks, fork_blocks) = (decode_blocks(&base_bytes), decode_blocks(&fork_bytes));
    assert_eq!(fork_blocks.len(), 24);
    let shared = encode_blocks(&base_blocks[..16]).len();
    assert_eq!(base_bytes[..shared], fork_bytes[..shared]);
    assert_ne!(base_bytes[shared..], fork_bytes[shared..]);
    for (base_block, fork_block) in base_blocks[16..].iter().zip(&fork_blocks[16..]) {
        let number = fork_block.header.number;
        assert_ne!(
            base_block.header.hash_slow(),
            fork_block.header.hash_slow(),
            "block {number}"
        );
        assert_eq!(
            fork_block.header.extra_data.as_ref(),
            quarry_devchain::FORK_EXTRA_DATA
        );
        assert_ne!(base_block.body.transactions, fork_block.body.transactions);
        // The same scripted transactions (blobs from Cancun on, the delegation at Prague) and
        // as large a mix.
        assert_eq!(
            fork_block.body.transactions.len(),
            base_block.body.transactions.len(),
            "block {number}"
        );
    }
    assert_eq!(
        fork_blocks[16].header.parent_hash,
        base_blocks[15].header.hash_slow()
    );
    let other_blocks = decode_blocks(&read(other.join("chain.rlp")));
    assert_eq!(other_blocks[15], fork_blocks[15]);
    assert_ne!(other_blocks[16], fork_blocks[16]);

    // Every fork block is valid: the fork ingests into an empty datadir.
    let datadir = ingested(&fork);
    assert_eq!(
        stored_head(&datadir),
        (24, fork_blocks[23].header.hash_slow())
    );

    let refused = |args: &[&str]| {
        let out = dir.path().join("refused");
        let command = ["devchain".as_ref(), "--out".as_ref(), out.as_os_str()];
        quarry_fails(command.into_iter().chain(args.iter().map(|a| a.as_ref())))
    };
    let before_merge = refused(&with(&["--fork-at", "11"]));
    assert!(
        before_merge.contains("--fork-at 11 is before the merge")
            && before_merge.contains(&format!("at least {MERGE_BLOCK}")),
        "{before_merge}"
    );
    let past_end = refused(&with(&["--fork-at", "24"]));
    assert!(
        past_end.contains("--fork-at 24 must be below --blocks 24"),
        "{past_end}"
    );
    let seed_alone = refused(&with(&["--fork-seed", "3"]));
    assert!(seed_alone.contains("--fork-at"), "{seed_alone}");
    let genesis_zero = refused(&["--blocks", "3", "--forks", "genesis", "--fork-at", "0"]);
    assert!(
        genesis_zero.contains("must be at least 1"),
        "{genesis_zero}"
    );
    // With every fork at genesis, a fork may start at block 1.
    let early = dir.path().join("early");
    devchain(
        &early,
        &["--blocks", "3", "--forks", "genesis", "--fork-at", "1"],
    );
    assert_eq!(decode_blocks(&read(early.join("chain.rlp"))).len(), 3);
}

#[test]
fn a_scale_chain_ingests() {
    let dir = tempfile::tempdir().unwrap();
    let chain = dir.path().join("chain");
    devchain(
        &chain,
        &["--blocks", "40", "--txs-per-block", "60", "--seed", "9"],
    );
    let datadir = ingested(&chain);
    let server = Server::start(&datadir, "");
    let head = server.result("eth_getBlockByNumber", json!(["latest", false]));
    assert_eq!(head["number"], "0x28");
    // 60 mixed transactions a block, plus a blob transaction from Cancun on.
    assert_eq!(head["transactions"].as_array().unwrap().len(), 61);
}

/// `--forks genesis`: every fork through Osaka from block 0, as dev networks start. The chain
/// ingests (every block verified afresh) and has post-merge blocks from block 1 on, with
/// withdrawals, blob transactions and, at block 24, an EIP-7702 delegation.
#[test]
fn a_chain_with_every_fork_at_genesis_ingests() {
    let dir = tempfile::tempdir().unwrap();
    let chain = dir.path().join("chain");
    devchain(
        &chain,
        &[
            "--blocks",
            "25",
            "--txs-per-block",
            "4",
            "--forks",
            "genesis",
        ],
    );
    let genesis: Value =
        serde_json::from_str(&String::from_utf8(read(chain.join("genesis.json"))).unwrap())
            .unwrap();
    for fork in ["shanghaiTime", "cancunTime", "pragueTime", "osakaTime"] {
        assert_eq!(
            genesis["config"][fork],
            genesis["timestamp"]
                .as_str()
                .map(|t| { u64::from_str_radix(t.trim_start_matches("0x"), 16).unwrap() })
                .unwrap(),
            "{fork}"
        );
    }
    assert_eq!(genesis["config"]["terminalTotalDifficulty"], 0);
    assert_eq!(genesis["config"]["mergeNetsplitBlock"], 0);
    assert!(genesis["config"].get("ethash").is_none());

    let datadir = ingested(&chain);
    let server = Server::start(&datadir, "");
    let block0 = server.result("eth_getBlockByNumber", json!(["0x0", false]));
    assert_eq!(block0["withdrawals"], json!([]));
    assert_eq!(block0["difficulty"], "0x0");
    let block1 = server.result("eth_getBlockByNumber", json!(["0x1", true]));
    assert_eq!(block1["difficulty"], "0x0");
    assert_eq!(block1["uncles"], json!([]));
    assert_eq!(block1["withdrawals"].as_array().unwrap().len(), 2);
    let types: Vec<Value> = block1["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tx| tx["type"].clone())
        .collect();
    assert!(types.contains(&json!("0x3")), "block 1 types {types:?}");
    let block24 = server.result("eth_getBlockByNumber", json!(["0x18", true]));
    assert!(
        block24["transactions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|tx| tx["type"] == "0x4"),
        "no delegation in block 24"
    );
    assert_eq!(server.result("eth_blockNumber", json!([])), json!("0x19"));
}

/// `--forks pow`: every fork through Gray Glacier from block 0 and no merge, so that every
/// block is proof of work (nonzero difficulty, uncles, no withdrawals), with legacy,
/// access-list and EIP-1559 transactions and logs in their receipts: the chain era1 files are
/// made from. The same options give the same bytes; `--fork-at` is refused.
#[test]
fn a_proof_of_work_chain_never_merges() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--forks", "pow", "--blocks", "40", "--txs-per-block", "4"];
    let (chain, again) = (dir.path().join("chain"), dir.path().join("again"));
    devchain(&chain, &args);
    devchain(&again, &args);
    for file in ["genesis.json", "chain.rlp"] {
        assert_eq!(read(chain.join(file)), read(again.join(file)), "{file}");
    }
    let genesis: Value = serde_json::from_slice(&read(chain.join("genesis.json"))).unwrap();
    let config = &genesis["config"];
    for absent in [
        "terminalTotalDifficulty",
        "mergeNetsplitBlock",
        "shanghaiTime",
        "cancunTime",
        "pragueTime",
        "osakaTime",
        "blobSchedule",
    ] {
        assert!(config.get(absent).is_none(), "{absent}: {config}");
    }
    assert_eq!(config["grayGlacierBlock"], 0);
    assert_eq!(config["ethash"], json!({}));

    let blocks = decode_blocks(&read(chain.join("chain.rlp")));
    assert_eq!(blocks.len(), 40);
    let datadir = ingested(&chain);
    assert_eq!(stored_head(&datadir), (40, blocks[39].header.hash_slow()));
    let server = Server::start(&datadir, "");
    assert_eq!(server.result("eth_blockNumber", json!([])), json!("0x28"));
    let (mut uncles, mut types, mut types_with_logs) = (0, BTreeSet::new(), BTreeSet::new());
    for number in 1..=40u64 {
        let block = server.result(
            "eth_getBlockByNumber",
            json!([format!("{number:#x}"), false]),
        );
        assert_ne!(block["difficulty"], "0x0", "block {number}");
        assert!(block["withdrawals"].is_null(), "block {number}");
        assert!(block["blobGasUsed"].is_null(), "block {number}");
        uncles += block["uncles"].as_array().unwrap().len();
        let receipts = server.result("eth_getBlockReceipts", json!([format!("{number:#x}")]));
        for receipt in receipts.as_array().unwrap() {
            let kind = receipt["type"].as_str().unwrap().to_string();
            if !receipt["logs"].as_array().unwrap().is_empty() {
                types_with_logs.insert(kind.clone());
            }
            types.insert(kind);
        }
    }
    assert!(uncles > 0);
    assert_eq!(types.into_iter().collect::<Vec<_>>(), ["0x0", "0x1", "0x2"]);
    // The legacy deployment of Token logs its mint; the EIP-1559 calls log transfers and notes.
    assert_eq!(
        types_with_logs.into_iter().collect::<Vec<_>>(),
        ["0x0", "0x2"]
    );

    let out = dir.path().join("refused");
    let command = ["devchain".as_ref(), "--out".as_ref(), out.as_os_str()];
    let refused = quarry_fails(
        command
            .into_iter()
            .chain(args.iter().chain(&["--fork-at", "20"]).map(|a| a.as_ref())),
    );
    assert!(
        refused.contains("--fork-at 20 cannot be used with --forks pow"),
        "{refused}"
    );
}

/// Runs `quarry ingest` on `datadir` with `folder`'s genesis and `file`, which must fail: its
/// stderr.
fn ingest_fails(datadir: &Path, folder: &Path, file: &Path) -> String {
    let genesis = folder.join("genesis.json");
    quarry_fails(ingest_args(datadir, &genesis, &[file]))
}

/// Ingest decodes a batch (256 blocks) ahead of execution and commits many batches at once: a
/// failure several batches in, found by either thread, still keeps exactly the blocks before
/// it, and the run after it continues from there.
#[test]
fn failures_past_the_first_batches_keep_every_block_before_them() {
    let dir = tempfile::tempdir().unwrap();
    let chain = dir.path().join("chain");
    devchain(
        &chain,
        &["--blocks", "600", "--txs-per-block", "1", "--seed", "3"],
    );
    let blocks = decode_blocks(&read(chain.join("chain.rlp")));
    assert_eq!(blocks.len(), 600);
    let datadir = dir.path().join("db");

    // Block 520 (the third decoding batch) is turned undecodable: its header, a long list, is
    // made a long string of the same length.
    let offset = encode_blocks(&blocks[..519]).len();
    let mut file_bytes = encode_blocks(&blocks[..520]);
    let header_at = offset + 3;
    assert_eq!((file_bytes[offset], file_bytes[header_at]), (0xf9, 0xf9));
    file_bytes[header_at] = 0xb9;
    let file = dir.path().join("undecodable.rlp");
    std::fs::write(&file, &file_bytes).unwrap();
    let stderr = ingest_fails(&datadir, &chain, &file);
    assert!(
        stderr.contains(&format!("block at byte offset {offset} cannot be decoded")),
        "{stderr}"
    );
    assert_eq!(stored_head(&datadir), (519, blocks[518].header.hash_slow()));

    // Block 560 says a wrong state root: execution finds it, with 519 blocks stored before.
    let mut bad = blocks[..560].to_vec();
    bad[559].header.state_root = keccak256(b"not the state root");
    let file = dir.path().join("bad-root.rlp");
    std::fs::write(&file, encode_blocks(&bad)).unwrap();
    let stderr = ingest_fails(&datadir, &chain, &file);
    assert!(
        stderr.contains("block 560 (") && stderr.contains("stateRoot mismatch"),
        "{stderr}"
    );
    assert_eq!(stored_head(&datadir), (559, blocks[558].header.hash_slow()));

    let (genesis, file) = (chain.join("genesis.json"), chain.join("chain.rlp"));
    let (stdout, _) = run_quarry(ingest_args(&datadir, &genesis, &[&file]));
    assert!(
        stdout.contains("imported 41 blocks (559 already stored)"),
        "{stdout}"
    );
    assert_eq!(stored_head(&datadir), (600, blocks[599].header.hash_slow()));
}

/// The devnet served once for all the checks below.
struct Devnet {
    server: Server,
    contracts: Contracts,
    accounts: DevAccounts,
}

impl Devnet {
    fn start() -> Self {
        let datadir = ingested(&devnet());
        let accounts = DevAccounts::new(quarry_devchain::account_count(
            quarry_devchain::GenerateOptions::default().txs_per_block,
        ))
        .unwrap();
        Self {
            server: Server::start(&datadir, ""),
            contracts: Contracts::of(accounts.address(0)),
            accounts,
        }
    }

    fn block(&self, number: u64) -> Value {
        self.server.result(
            "eth_getBlockByNumber",
            json!([format!("{number:#x}"), true]),
        )
    }

    fn head(&self) -> u64 {
        let head = self
            .server
            .result("eth_getBlockByNumber", json!(["latest", false]));
        u64::from_str_radix(
            head["number"].as_str().unwrap().trim_start_matches("0x"),
            16,
        )
        .unwrap()
    }

    fn receipts(&self) -> Vec<Value> {
        (1..=self.head())
            .flat_map(|n| self.block(n)["transactions"].as_array().unwrap().clone())
            .map(|tx| {
                self.server
                    .result("eth_getTransactionReceipt", json!([tx["hash"]]))
            })
            .collect()
    }

    fn call(&self, to: Address, data: Vec<u8>) -> Value {
        let request = json!({
            "jsonrpc": "2.0", "id": 1, "method": "eth_call",
            "params": [{"to": to, "data": alloy_primitives::hex::encode_prefixed(data)}, "latest"],
        });
        self.server.http(&request.to_string())
    }

    fn storage(&self, address: Address, slot: B256, block: u64) -> U256 {
        let value = self.server.result(
            "eth_getStorageAt",
            json!([address, slot, format!("{block:#x}")]),
        );
        value.as_str().unwrap().parse().unwrap()
    }
}

#[test]
fn devnet_has_every_feature_it_promises() {
    let net = Devnet::start();
    let head = net.head();
    assert_eq!(head, quarry_devchain::GenerateOptions::default().blocks);

    // Proof of work with one and two uncles, then the merge.
    let uncle_counts: BTreeMap<u64, usize> = (1..MERGE_BLOCK)
        .map(|n| (n, net.block(n)["uncles"].as_array().unwrap().len()))
        .filter(|(_, count)| *count > 0)
        .collect();
    assert!(uncle_counts.values().any(|&c| c == 1), "{uncle_counts:?}");
    assert!(uncle_counts.values().any(|&c| c == 2), "{uncle_counts:?}");
    let (&with_two, _) = uncle_counts.iter().find(|(_, c)| **c == 2).unwrap();
    let uncle = net.server.result(
        "eth_getUncleByBlockNumberAndIndex",
        json!([format!("{with_two:#x}"), "0x1"]),
    );
    assert_eq!(uncle["miner"], lower(quarry_devchain::UNCLE_MINERS[1]));
    assert_ne!(net.block(MERGE_BLOCK - 1)["difficulty"], "0x0");
    assert_eq!(net.block(MERGE_BLOCK)["difficulty"], "0x0");
    assert!(net.block(SHANGHAI_BLOCK - 1)["withdrawals"].is_null());
    assert_eq!(
        net.block(SHANGHAI_BLOCK)["withdrawals"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // Every transaction type, and a legacy transaction without replay protection.
    let transactions: Vec<Value> = (1..=head)
        .flat_map(|n| net.block(n)["transactions"].as_array().unwrap().clone())
        .collect();
    let types: std::collections::BTreeSet<&str> = transactions
        .iter()
        .map(|tx| tx["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types.into_iter().collect::<Vec<_>>(),
        ["0x0", "0x1", "0x2", "0x3", "0x4"]
    );
    assert!(transactions.iter().any(|tx| tx["type"] == "0x0"
        && tx["chainId"].is_null()
        && (tx["v"] == "0x1b" || tx["v"] == "0x1c")));
    let blob = transactions.iter().find(|tx| tx["type"] == "0x3").unwrap();
    assert!(
        u64::from_str_radix(&blob["blockNumber"].as_str().unwrap()[2..], 16).unwrap()
            >= CANCUN_BLOCK
    );

    let receipts = net.receipts();
    // Contract creations, at the addresses the deployer's nonces give.
    let created: Vec<Value> = receipts
        .iter()
        .filter(|r| !r["contractAddress"].is_null())
        .map(|r| r["contractAddress"].clone())
        .collect();
    for address in [
        net.contracts.token,
        net.contracts.store,
        net.contracts.reverter,
        net.contracts.rare_token,
    ] {
        assert!(created.contains(&lower(address)), "{address} not created");
    }
    // Failed transactions are included with status 0.
    assert!(receipts.iter().any(|r| r["status"] == "0x0"));

    // Token events with indexed topics, and the anonymous event.
    let logs: Vec<&Value> = receipts
        .iter()
        .flat_map(|r| r["logs"].as_array().unwrap())
        .collect();
    let topic0 = |log: &Value| log["topics"][0].as_str().unwrap_or_default().to_string();
    let transfer = Token::Transfer::SIGNATURE_HASH.to_string();
    let approval = Token::Approval::SIGNATURE_HASH.to_string();
    let token_logs: Vec<&&Value> = logs
        .iter()
        .filter(|l| l["address"] == lower(net.contracts.token))
        .collect();
    assert!(
        token_logs
            .iter()
            .any(|l| topic0(l) == transfer && l["topics"].as_array().unwrap().len() == 3)
    );
    assert!(
        token_logs
            .iter()
            .any(|l| topic0(l) == approval && l["topics"].as_array().unwrap().len() == 3)
    );
    let noted = Store::Noted::SIGNATURE_HASH.to_string();
    let anonymous: Vec<&&Value> = logs
        .iter()
        .filter(|l| {
            l["address"] == lower(net.contracts.store) && l["topics"].as_array().unwrap().len() == 1
        })
        .collect();
    assert!(!anonymous.is_empty());
    assert!(anonymous.iter().all(|l| topic0(l) != noted));
    assert!(logs.len() > 500, "{} logs", logs.len());

    // Storage: the plain variable in slot 0 and the mapping in slot 1, as of block 2.
    let account1 = net.accounts.address(1);
    assert_eq!(
        net.storage(net.contracts.store, B256::ZERO, 2),
        U256::from(42)
    );
    let mut key = [0u8; 64];
    key[12..32].copy_from_slice(account1.as_slice());
    key[63] = 1;
    assert_eq!(
        net.storage(net.contracts.store, keccak256(key), 2),
        U256::from(1000)
    );
    assert_eq!(
        net.storage(net.contracts.store, keccak256(key), 1),
        U256::ZERO
    );

    // EIP-7702: account 3 runs Store's code in its own storage from the first Prague block.
    let authority = net.accounts.address(3);
    assert_eq!(
        net.storage(authority, B256::ZERO, PRAGUE_BLOCK - 1),
        U256::ZERO
    );
    assert_eq!(
        net.storage(authority, B256::ZERO, PRAGUE_BLOCK),
        U256::from(7702)
    );
}

#[test]
fn devnet_reverts_in_every_style() {
    let net = Devnet::start();
    let reverter = net.contracts.reverter;
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            Reverter::failWithReasonCall {}.abi_encode(),
            "execution reverted: Reverter: failed on purpose",
        ),
        (
            Reverter::failRequireCall { x: U256::from(3) }.abi_encode(),
            "execution reverted: Reverter: x must exceed 10",
        ),
        (
            Reverter::failAssertCall { x: U256::from(1) }.abi_encode(),
            "execution reverted: assert(false)",
        ),
        (
            Reverter::failDivideCall {
                divisor: U256::ZERO,
            }
            .abi_encode(),
            "execution reverted: division or modulo by zero",
        ),
        (
            Reverter::failIndexCall {
                index: U256::from(5),
            }
            .abi_encode(),
            "execution reverted: out-of-bounds access of an array or bytesN",
        ),
        (
            Reverter::failOverflowCall { x: U256::from(2) }.abi_encode(),
            "execution reverted: arithmetic underflow or overflow",
        ),
        (
            Reverter::failCustomCall {}.abi_encode(),
            "execution reverted",
        ),
        (
            Reverter::failEmptyCall {}.abi_encode(),
            "execution reverted",
        ),
    ];
    for (data, message) in cases {
        let response = net.call(reverter, data.clone());
        let error = &response["error"];
        assert_eq!(error["code"], 3, "{response}");
        assert_eq!(error["message"], message, "{response}");
        if message == "execution reverted" && data[..4] == Reverter::failEmptyCall::SELECTOR {
            assert_eq!(error["data"], "0x", "{response}");
        }
    }
    // The custom error's payload is returned whole: selector and both arguments.
    let response = net.call(reverter, Reverter::failCustomCall {}.abi_encode());
    let data = response["error"]["data"].as_str().unwrap();
    let selector = alloy_primitives::hex::encode(&keccak256("Unauthorized(address,uint256)")[..4]);
    assert!(data.starts_with(&format!("0x{selector}")), "{data}");
    assert!(data.ends_with(&format!("{:064x}", 42)), "{data}");

    // A reverting transaction left no trace of its storage write.
    let attempts = net.call(reverter, Reverter::attemptsCall {}.abi_encode());
    assert_eq!(attempts["result"], format!("0x{:064x}", 0));
    // And a view of real state: the deployer's airdropped balance is gone from its supply.
    let balance = net.call(
        net.contracts.token,
        Token::balanceOfCall {
            holder: net.accounts.address(0),
        }
        .abi_encode(),
    );
    assert!(balance["result"].as_str().unwrap().len() == 66, "{balance}");
}

/// eth_feeHistory over the dev chain's last blocks: shapes, the next block's fees, and tips
/// that grow with the percentile.
#[test]
fn fee_history_covers_the_requested_blocks() {
    let net = Devnet::start();
    let head = net.head();
    let history = net
        .server
        .result("eth_feeHistory", json!(["0x4", "latest", [10, 50, 90]]));
    assert_eq!(history["oldestBlock"], format!("{:#x}", head - 3));
    let base_fees = history["baseFeePerGas"].as_array().unwrap();
    assert_eq!(base_fees.len(), 5);
    assert_eq!(base_fees[3], net.block(head)["baseFeePerGas"]);
    assert_eq!(history["gasUsedRatio"].as_array().unwrap().len(), 4);
    assert_eq!(history["baseFeePerBlobGas"].as_array().unwrap().len(), 5);
    let rewards = history["reward"].as_array().unwrap();
    assert_eq!(rewards.len(), 4);
    for row in rewards {
        let tips: Vec<u128> = row
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                u128::from_str_radix(t.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
            })
            .collect();
        assert_eq!(tips.len(), 3);
        assert!(tips.windows(2).all(|w| w[0] <= w[1]), "{tips:?}");
    }
    // Without percentiles there is no reward field; a bad percentile names the parameter.
    let plain = net.server.result("eth_feeHistory", json!([1, "latest"]));
    assert!(plain.get("reward").is_none());
    let bad = net
        .server
        .call("eth_feeHistory", json!(["0x1", "latest", [50, 10]]));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}

fn quantity(value: &Value) -> u128 {
    u128::from_str_radix(value.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// eth_maxPriorityFeePerGas and eth_gasPrice follow the dev chain's tips: every EIP-1559
/// transaction tips 1 gwei and legacy ones tip more, so the three lowest tips of each block,
/// and their 60th percentile, are 1 gwei; the gas price adds the head's base fee.
#[test]
fn fee_suggestions_follow_the_chains_tips() {
    let net = Devnet::start();
    let tip = quantity(&net.server.result("eth_maxPriorityFeePerGas", json!([])));
    assert_eq!(tip, 1_000_000_000);
    let base_fee = quantity(&net.block(net.head())["baseFeePerGas"]);
    let price = quantity(&net.server.result("eth_gasPrice", json!([])));
    assert_eq!(price, tip + base_fee);
}

/// eth_createAccessList lists the slots a call touches (even the called contract's, whose
/// address geth excludes only as an entry of its own), and reports a revert in `error`.
#[test]
fn access_lists_name_the_touched_slots() {
    let net = Devnet::start();
    let sender = net.accounts.address(0);
    let key = net.accounts.address(5);
    let put = Store::putCall {
        key,
        value: U256::from(9),
    };
    let result = net.server.result(
        "eth_createAccessList",
        json!([{"from": sender, "to": net.contracts.store, "data": alloy_primitives::hex::encode_prefixed(put.abi_encode())}]),
    );
    let mapping_slot = keccak256([key.into_word().0, B256::with_last_byte(1).0].concat());
    assert_eq!(
        result["accessList"],
        json!([{"address": lower(net.contracts.store), "storageKeys": [mapping_slot]}]),
        "{result}"
    );
    assert!(result.get("error").is_none(), "{result}");
    // The gas used is what the call uses with that list: estimating with it agrees.
    let used = quantity(&result["gasUsed"]);
    let with_list = net.server.result(
        "eth_estimateGas",
        json!([{"from": sender, "to": net.contracts.store, "data": alloy_primitives::hex::encode_prefixed(put.abi_encode()), "accessList": result["accessList"]}]),
    );
    assert!(quantity(&with_list) >= used, "{with_list} < {used}");
    // A plain transfer touches nothing.
    let transfer = net.server.result(
        "eth_createAccessList",
        json!([{"from": sender, "to": key, "value": "0x1"}]),
    );
    assert_eq!(transfer, json!({"accessList": [], "gasUsed": "0x5208"}));
    // A revert still answers, with the list and geth's bare error.
    let reverted = net.server.result(
        "eth_createAccessList",
        json!([{"to": net.contracts.reverter, "data": alloy_primitives::hex::encode_prefixed(Reverter::failWithReasonCall {}.abi_encode())}]),
    );
    assert_eq!(reverted["error"], "execution reverted", "{reverted}");
}

/// EIP-7610 in eth_call: a creation at an address that has storage (here through a state
/// override) is a collision, as one at an address with a nonce or code; a balance alone is not.
#[test]
fn calls_that_create_over_storage_collide() {
    let net = Devnet::start();
    let sender = net.accounts.address(3);
    let nonce = quantity(
        &net.server
            .result("eth_getTransactionCount", json!([sender, "latest"])),
    ) as u64;
    let target = sender.create(nonce);
    // Init code that returns one byte of code (0x00).
    let create = json!({"from": sender, "data": "0x600160006000f3"});
    let with = |overrides: Value| {
        net.server
            .call("eth_call", json!([create, "latest", overrides]))
    };
    assert!(
        with(json!({})).get("error").is_none(),
        "{}",
        with(json!({}))
    );
    let funded = with(json!({ target.to_string(): {"balance": "0x1"} }));
    assert!(funded.get("error").is_none(), "{funded}");
    let stored = with(
        json!({ target.to_string(): {"stateDiff": {format!("{:#066x}", 0): format!("{:#066x}", 1)}} }),
    );
    assert_eq!(stored["error"]["code"], -32000, "{stored}");
    assert_eq!(stored["error"]["message"], "contract address collision");
    let nonce_set = with(json!({ target.to_string(): {"nonce": "0x1"} }));
    assert_eq!(nonce_set["error"]["message"], "contract address collision");
    // eth_createAccessList takes the same overrides and reports the collision in `error`.
    let access = net.server.result(
        "eth_createAccessList",
        json!([create, "latest", { target.to_string(): {"stateDiff": {format!("{:#066x}", 0): format!("{:#066x}", 1)}} }]),
    );
    assert_eq!(access["error"], "contract address collision", "{access}");

    // A contract's own CREATE over storage fails too (it pushes 0), though a call that
    // creates nothing runs uninspected: the creation has it run again with the check.
    let factory: Address = "0x1000000000000000000000000000000000000f00"
        .parse()
        .unwrap();
    // CREATE with empty init code, then return the address it pushed.
    let factory_code = "0x600060006000f060005260206000f3";
    let created = factory.create(1);
    let create_in = |target_overrides: Value| {
        let mut overrides = json!({ factory.to_string(): {"code": factory_code, "nonce": "0x1"} });
        if let Value::Object(extra) = target_overrides {
            overrides.as_object_mut().unwrap().extend(extra);
        }
        net.server
            .result("eth_call", json!([{"to": factory}, "latest", overrides]))
    };
    assert_eq!(
        create_in(json!({})),
        json!(format!("{:#066x}", U256::from_be_slice(created.as_slice())))
    );
    let over_storage = create_in(
        json!({ created.to_string(): {"stateDiff": {format!("{:#066x}", 0): format!("{:#066x}", 1)}} }),
    );
    assert_eq!(over_storage, json!(format!("{:#066x}", 0)));
}

/// From Prague on a block is invalid when either request contract (EIP-7002 withdrawals,
/// EIP-7251 consolidations) has no code, as geth rules: an empty block on a dev genesis that
/// lacks one is refused by the same execution that verifies imported blocks, and builds when
/// both are there.
#[test]
fn a_prague_block_needs_both_request_contracts() {
    use alloy_eips::{eip7002, eip7251};
    let accounts = DevAccounts::new(16).unwrap();
    let build = |without: Option<Address>| {
        let mut json = quarry_devchain::genesis_json(&accounts, quarry_devchain::Forks::Genesis);
        if let Some(address) = without {
            let alloc = json["alloc"].as_object_mut().unwrap();
            alloc.remove(&address.to_string()).unwrap();
        }
        let genesis: alloy_genesis::Genesis = serde_json::from_value(json).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let db = quarry_storage::Database::open(dir.path()).unwrap();
        let mut importer = quarry_ingest::Importer::open(db, &genesis).unwrap();
        let parent = importer.head_header().clone();
        let template = quarry_executor::BlockTemplate {
            timestamp: parent.timestamp + 12,
            gas_limit: parent.gas_limit,
            ..Default::default()
        };
        let tx = importer.database().writer().unwrap();
        importer
            .build_block(&tx, template)
            .map(|block| block.header.number)
            .map_err(|e| e.to_string())
    };
    assert_eq!(build(None), Ok(1));
    for (eip, address) in [
        (
            "EIP-7002 withdrawal",
            eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS,
        ),
        (
            "EIP-7251 consolidation",
            eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS,
        ),
    ] {
        let err = build(Some(address)).unwrap_err();
        assert!(
            err.contains(&format!("the {eip} request contract {address} has no code")),
            "{err}"
        );
    }
}

/// A chain that activates Constantinople without Petersburg meters SSTORE by EIP-1283, as
/// geth runs such chains (the BlockchainTests' `Constantinople` network): setting a fresh slot
/// and clearing it again in one transaction costs 20,200 with 19,800 refunded, where Petersburg
/// charges 25,000 and refunds 15,000.
#[test]
fn constantinople_without_petersburg_meters_sstore_by_eip_1283() {
    use alloy_consensus::{TxLegacy, TypedTransaction};
    use alloy_primitives::{Bytes, TxKind};
    let accounts = DevAccounts::new(16).unwrap();
    let store = Address::repeat_byte(0x57);
    let gas_used = |petersburg: u64| {
        let mut json = quarry_devchain::genesis_json(&accounts, quarry_devchain::Forks::Staged);
        let config = json["config"].as_object_mut().unwrap();
        for later in [
            "istanbulBlock",
            "muirGlacierBlock",
            "berlinBlock",
            "londonBlock",
            "arrowGlacierBlock",
            "grayGlacierBlock",
            "mergeNetsplitBlock",
            "terminalTotalDifficulty",
            "shanghaiTime",
            "cancunTime",
            "pragueTime",
            "osakaTime",
            "blobSchedule",
        ] {
            config.remove(later);
        }
        config.insert("petersburgBlock".into(), json!(petersburg));
        // SSTORE(0, 1); SSTORE(0, 0); STOP
        json["alloc"][store.to_string()] =
            json!({"balance": "0x0", "code": "0x60016000556000600055"});
        let genesis: alloy_genesis::Genesis = serde_json::from_value(json).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let db = quarry_storage::Database::open(dir.path()).unwrap();
        let mut importer = quarry_ingest::Importer::open(db, &genesis).unwrap();
        let parent = importer.head_header().clone();
        let tx = TxLegacy {
            chain_id: Some(quarry_devchain::CHAIN_ID),
            nonce: 0,
            gas_price: 1_000_000_000,
            gas_limit: 100_000,
            to: TxKind::Call(store),
            value: U256::ZERO,
            input: Bytes::new(),
        };
        let template = quarry_executor::BlockTemplate {
            timestamp: parent.timestamp + 12,
            gas_limit: parent.gas_limit,
            transactions: vec![accounts.sign(0, TypedTransaction::Legacy(tx)).unwrap()],
            senders: vec![accounts.address(0)],
            ..Default::default()
        };
        let writer = importer.database().writer().unwrap();
        let block = importer.build_block(&writer, template).unwrap();
        writer.commit().unwrap();
        drop(importer);
        // A replay for the tracer meters the SSTOREs as execution did.
        let server = Server::start(dir.path(), "");
        let hash = *block.body.transactions[0].tx_hash();
        let trace = server.result("debug_traceTransaction", json!([hash, {}]));
        let sstores: Vec<u64> = trace["structLogs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|log| log["op"] == "SSTORE")
            .map(|log| log["gasCost"].as_u64().unwrap())
            .collect();
        assert_eq!(trace["gas"].as_u64(), Some(block.header.gas_used));
        (block.header.gas_used, sstores)
    };
    // 21,000 intrinsic and four PUSH1s (12) besides the two SSTOREs, less the refund (at most
    // half the gas used).
    assert_eq!(
        gas_used(1_000),
        (21_000 + 12 + 20_000 + 200 - 19_800, vec![20_000, 200])
    );
    assert_eq!(
        gas_used(0),
        (21_000 + 12 + 20_000 + 5_000 - 15_000, vec![20_000, 5_000])
    );
}
