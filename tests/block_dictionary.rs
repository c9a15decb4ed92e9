//! End-to-end tests of the block data tables' zstd dictionaries on a chain large enough to
//! train them (blocks of 300 transactions: both tables pass 8 MiB of values by block 256, where
//! they train, in an import that resumed a datadir written before it): the blocks on both sides of
//! the training serve what the chain file holds; a datadir unwound above the training and
//! imported again holds the same tables; one unwound below it keeps its dictionaries and serves
//! the blocks it writes again with them as a copy taken before served them written with LZ4.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_eips::eip2718::Encodable2718;
use quarry_storage::{BlockData, Database, Table};
use serde_json::{Value, json};
use std::{ffi::OsStr, path::Path};
use support::{Block, Server, decode_blocks, devchain, encode_blocks, ingest_args, run_quarry};

const BLOCKS: u64 = 260;
const TRAINED_AT: u64 = 256;

/// Each table's dictionary id in `datadir` (`None`: not trained).
fn dictionary_ids(datadir: &Path) -> Vec<Option<u32>> {
    let db = Database::open(datadir).unwrap();
    let reader = db.reader().unwrap();
    BlockData::ALL
        .iter()
        .map(|&kind| reader.block_dictionary(kind).unwrap().map(|d| d.id()))
        .collect()
}

fn quantity(value: &Value) -> u64 {
    u64::from_str_radix(value.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

fn unwind(datadir: &Path, genesis: &Path, to: u64) {
    let to = to.to_string();
    let args: [&OsStr; 7] = [
        "unwind".as_ref(),
        "--datadir".as_ref(),
        datadir.as_os_str(),
        "--genesis".as_ref(),
        genesis.as_os_str(),
        "--to".as_ref(),
        to.as_ref(),
    ];
    run_quarry(args);
}

/// Block `number`'s transactions, receipts and logs as `server` serves them, checked against
/// the chain file's block: each transaction's bytes, one receipt per transaction whose gas adds
/// up to the header's, and eth_getLogs of the block finding the receipts' logs.
fn served_block(server: &Server, block: &Block) -> Value {
    let number = block.header.number;
    let tag = json!(format!("0x{number:x}"));
    let count = block.body.transactions.len();
    for index in [0, count / 2, count - 1] {
        let raw = server.result(
            "eth_getRawTransactionByBlockNumberAndIndex",
            json!([tag, format!("0x{index:x}")]),
        );
        let expected = block.body.transactions[index].encoded_2718();
        assert_eq!(
            raw.as_str().unwrap(),
            format!("0x{}", alloy_primitives::hex::encode(expected)),
            "block {number}, transaction {index}"
        );
    }
    let receipts = server.result("eth_getBlockReceipts", json!([tag]));
    let list = receipts.as_array().unwrap();
    assert_eq!(list.len(), count, "block {number}");
    let gas: u64 = list.iter().map(|r| quantity(&r["gasUsed"])).sum();
    assert_eq!(gas, block.header.gas_used, "block {number}");
    let logs: Vec<Value> = list
        .iter()
        .flat_map(|r| r["logs"].as_array().unwrap().clone())
        .collect();
    if number >= 100 {
        assert!(!logs.is_empty(), "block {number} has no logs to check");
    }
    let filtered = server.result("eth_getLogs", json!([{"fromBlock": tag, "toBlock": tag}]));
    assert_eq!(filtered.as_array().unwrap(), &logs, "block {number}");
    let full = server.result("eth_getBlockByNumber", json!([tag, true]));
    json!([full, receipts])
}

#[test]
fn blocks_written_with_trained_dictionaries_serve_the_chain_and_survive_unwinds() {
    let dir = tempfile::tempdir().unwrap();
    let chain = dir.path().join("chain");
    let blocks_arg = BLOCKS.to_string();
    devchain(
        &chain,
        &[
            "--blocks",
            &blocks_arg,
            "--txs-per-block",
            "300",
            "--seed",
            "5",
        ],
    );
    let (genesis, file) = (chain.join("genesis.json"), chain.join("chain.rlp"));
    let blocks = decode_blocks(&std::fs::read(&file).unwrap());

    // Two steps: the first ends before either table could train, the second trains on values
    // the first committed and its own.
    let datadir = dir.path().join("data");
    let first = dir.path().join("first.rlp");
    let below: Vec<&Block> = blocks
        .iter()
        .filter(|b| b.header.number < TRAINED_AT - 8)
        .collect();
    std::fs::write(&first, encode_blocks(below)).unwrap();
    run_quarry(ingest_args(&datadir, &genesis, &[&first]));
    assert_eq!(dictionary_ids(&datadir), vec![None, None]);
    run_quarry(ingest_args(&datadir, &genesis, &[&file]));
    let trained = dictionary_ids(&datadir);
    assert!(trained.iter().all(Option::is_some), "{trained:?}");
    let except = [Table::Meta];
    let digests = support::table_digests(&datadir, &except);
    // The blocks as first written (LZ4 up to the training, the dictionaries after it).
    let copy = dir.path().join("copy");
    let backup = [
        "backup".as_ref(),
        "--datadir".as_ref(),
        datadir.as_os_str(),
        "--out".as_ref(),
        copy.as_os_str(),
    ];
    run_quarry(backup);

    // Unwound above the training and imported again: the same tables.
    unwind(&datadir, &genesis, TRAINED_AT + 2);
    run_quarry(ingest_args(&datadir, &genesis, &[&file]));
    assert_eq!(support::table_digests(&datadir, &except), digests);

    // Unwound below it: the dictionaries stay, and the blocks imported again are written with
    // them where the first import wrote LZ4.
    unwind(&datadir, &genesis, 100);
    assert_eq!(dictionary_ids(&datadir), trained);
    run_quarry(ingest_args(&datadir, &genesis, &[&file]));
    let again = support::table_digests(&datadir, &except);
    let differs = |table: Table| {
        let find = |list: &[(Table, (u64, alloy_primitives::B256))]| {
            list.iter().find(|(t, _)| *t == table).unwrap().1
        };
        find(&again) != find(&digests)
    };
    assert!(differs(Table::BlockBodies) && differs(Table::Receipts));
    assert!(
        !differs(Table::Headers) && !differs(Table::TxLookup) && !differs(Table::TxLookupGroups)
    );

    // Blocks written with LZ4 and with the dictionaries serve the chain file's blocks, and the
    // two datadirs serve the same answers.
    let servers = [Server::start(&copy, ""), Server::start(&datadir, "")];
    for number in [1, 100, 101, TRAINED_AT, TRAINED_AT + 1, BLOCKS] {
        let block = &blocks[number as usize - 1];
        assert_eq!(block.header.number, number);
        let answers: Vec<Value> = servers.iter().map(|s| served_block(s, block)).collect();
        assert_eq!(answers[0], answers[1], "block {number}");
    }
}
