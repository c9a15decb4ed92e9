//! The state trie lives in the datadir: an ingest that starts on a stored chain reads its
//! root, not the state, and importing one more block reads only the paths that block changes.

#![allow(clippy::unwrap_used)]

mod support;

use quarry_ingest::{Importer, Progress, reader::RawBlock};
use quarry_storage::{Database, Table};
use support::{decode_blocks, devchain, encode_blocks, ingest_args, run_quarry};

#[test]
fn a_restart_reads_the_root_and_one_block_reads_its_own_paths() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chain");
    devchain(&out, &["--blocks", "300", "--txs-per-block", "30"]);
    let blocks = decode_blocks(&std::fs::read(out.join("chain.rlp")).unwrap());
    let (last, earlier) = blocks.split_last().unwrap();
    let earlier_file = dir.path().join("earlier.rlp");
    std::fs::write(&earlier_file, encode_blocks(earlier)).unwrap();
    let datadir = dir.path().join("data");
    let genesis_file = out.join("genesis.json");
    run_quarry(ingest_args(&datadir, &genesis_file, &[&earlier_file]));

    let db = Database::open(&datadir).unwrap();
    let reader = db.reader().unwrap();
    let state_tables = [
        Table::PlainAccounts,
        Table::PlainStorage,
        Table::HashedAccounts,
        Table::HashedStorages,
        Table::AccountsTrie,
        Table::StoragesTrie,
    ];
    let state_entries: u64 = state_tables
        .iter()
        .map(|table| reader.table_digest(*table).unwrap().0)
        .sum();
    drop(reader);
    assert_eq!(db.state_entries_scanned(), 0);

    let genesis: alloy_genesis::Genesis =
        serde_json::from_slice(&std::fs::read(&genesis_file).unwrap()).unwrap();
    let mut importer = Importer::open(db.clone(), &genesis).unwrap();
    let at_open = db.state_entries_scanned();
    assert!(at_open <= 1, "opening read {at_open} state entries");

    let raw = encode_blocks([last]);
    let mut one = std::iter::once(Ok(RawBlock {
        offset: 0,
        bytes: raw,
    }));
    let stats = importer
        .import_blocks("last block", &mut one, &mut Progress::hidden())
        .unwrap();
    assert_eq!(stats.blocks, 1);
    assert_eq!(importer.head().0, last.header.number);
    let for_block = db.state_entries_scanned() - at_open;
    let changed = last.body.transactions.len() as u64;
    assert!(
        for_block < state_entries / 10,
        "one block of {changed} transactions read {for_block} of {state_entries} state entries"
    );
}
