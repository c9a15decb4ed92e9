//! The state trie lives in the datadir: an ingest that starts on a stored chain reads its
//! root, not the state, and importing one more block reads only the paths that block changes.

#![allow(clippy::unwrap_used)]

mod support;

use quarry_ingest::{Importer, Progress, reader::RawBlock};
use quarry_storage::{Database, Table};
use support::{Server, decode_blocks, devchain, encode_blocks, ingest_args, run_quarry};

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

/// `quarry ingest --no-trie-history` records no trie node history (the leaf history, which is
/// the state history, goes on), and eth_getProof at an older block then undoes the changesets
/// instead; the proof still leads to that block's state root (the server checks it before
/// answering) and equals the one a datadir with history gives.
#[test]
fn without_trie_history_older_proofs_undo_the_changesets() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chain");
    devchain(&out, &["--blocks", "40", "--txs-per-block", "10"]);
    let genesis_file = out.join("genesis.json");
    let chain_file = out.join("chain.rlp");
    let with = dir.path().join("with");
    let without = dir.path().join("without");
    run_quarry(ingest_args(&with, &genesis_file, &[&chain_file]));
    let mut args = ingest_args(&without, &genesis_file, &[&chain_file]);
    args.push("--no-trie-history".as_ref());
    run_quarry(args);

    let node_history = [
        Table::AccountsTrieHistory,
        Table::StoragesTrieHistory,
        Table::TrieChangeSets,
    ];
    let leaf_history = [Table::AccountChangeLists, Table::StorageChangeLists];
    let without_db = Database::open(&without).unwrap();
    let reader = without_db.reader().unwrap();
    assert_eq!(reader.trie_history_from().unwrap(), None);
    assert!(!reader.trie_history_covers(39).unwrap());
    for table in node_history {
        assert_eq!(reader.table_digest(table).unwrap().0, 0, "{}", table.name());
    }
    let db = Database::open(&with).unwrap();
    let with_reader = db.reader().unwrap();
    assert!(with_reader.trie_history_covers(0).unwrap());
    assert!(
        with_reader
            .table_digest(Table::AccountsTrieHistory)
            .unwrap()
            .0
            > 0
    );
    for table in leaf_history {
        let digest = reader.table_digest(table).unwrap();
        assert!(digest.0 > 40, "{}", table.name());
        assert_eq!(digest, with_reader.table_digest(table).unwrap());
    }
    drop(reader);
    let reader = with_reader;

    drop(reader);
    let (with, without) = (Server::start(&with, ""), Server::start(&without, ""));
    let token = quarry_devchain::Contracts::of(
        quarry_devchain::DevAccounts::new(quarry_devchain::account_count(10))
            .unwrap()
            .address(0),
    )
    .token;
    for block in [1u64, 10, 25, 39] {
        let params = serde_json::json!([token, ["0x0", "0x1"], format!("{block:#x}")]);
        let answer = without.result("eth_getProof", params.clone());
        assert!(answer["accountProof"].as_array().unwrap().len() > 1);
        assert_eq!(answer, with.result("eth_getProof", params), "block {block}");
    }
}

/// `--proof-history` is the datadir's: an import without the flag keeps it and thins, in its
/// own commits, the node history that falls behind it. `quarry serve` then answers proofs at
/// thinned blocks (through the overlay from a coarse window's end) exactly as a datadir that
/// keeps its whole node history does.
#[test]
fn proof_history_is_kept_by_the_datadir_and_thinned_proofs_equal_whole_ones() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chain");
    devchain(&out, &["--blocks", "300", "--txs-per-block", "10"]);
    let genesis_file = out.join("genesis.json");
    let blocks = decode_blocks(&std::fs::read(out.join("chain.rlp")).unwrap());
    let part = |name: &str, range: std::ops::RangeInclusive<u64>| {
        let file = dir.path().join(name);
        let chosen = blocks.iter().filter(|b| range.contains(&b.header.number));
        std::fs::write(&file, encode_blocks(chosen)).unwrap();
        file
    };
    let (first, second, third) = (
        part("a", 1..=150),
        part("b", 151..=250),
        part("c", 251..=300),
    );
    let whole = dir.path().join("whole");
    let mut args = ingest_args(&whole, &genesis_file, &[&first, &second, &third]);
    args.extend([std::ffi::OsStr::new("--proof-history"), "1000000".as_ref()]);
    run_quarry(args);

    let thin = dir.path().join("thin");
    run_quarry(ingest_args(&thin, &genesis_file, &[&first]));
    let coarse = 2 * quarry_storage::NODE_HISTORY_WINDOW;
    let setting = |datadir: &std::path::Path| {
        let reader = Database::open(datadir).unwrap().reader().unwrap();
        (
            reader.proof_history().unwrap(),
            reader.trie_history_fine_from().unwrap(),
        )
    };
    assert_eq!(
        setting(&thin),
        (Some(quarry_storage::DEFAULT_PROOF_HISTORY), None)
    );
    {
        let db = Database::open(&thin).unwrap();
        let tx = db.writer().unwrap();
        tx.set_coarse_node_window(coarse).unwrap();
        tx.commit().unwrap();
    }
    let mut args = ingest_args(&thin, &genesis_file, &[&second]);
    args.extend([std::ffi::OsStr::new("--proof-history"), "40".as_ref()]);
    run_quarry(args);
    assert_eq!(
        setting(&thin),
        (Some(40), Some((251 - 40) / coarse * coarse))
    );
    run_quarry(ingest_args(&thin, &genesis_file, &[&third]));
    assert_eq!(
        setting(&thin),
        (Some(40), Some((301 - 40) / coarse * coarse))
    );
    assert_eq!(setting(&whole), (Some(1_000_000), None));

    let (whole, thin) = (Server::start(&whole, ""), Server::start(&thin, ""));
    let token = quarry_devchain::Contracts::of(
        quarry_devchain::DevAccounts::new(quarry_devchain::account_count(10))
            .unwrap()
            .address(0),
    )
    .token;
    for block in [
        1u64, 30, 62, 63, 64, 100, 127, 128, 150, 191, 200, 255, 256, 290,
    ] {
        let params = serde_json::json!([token, ["0x0", "0x1"], format!("{block:#x}")]);
        let answer = thin.result("eth_getProof", params.clone());
        assert!(answer["accountProof"].as_array().unwrap().len() > 1);
        assert_eq!(
            answer,
            whole.result("eth_getProof", params),
            "block {block}"
        );
    }

    // `quarry migrate --proof-history` thins a datadir that kept its whole node history.
    drop(whole);
    let whole = dir.path().join("whole");
    {
        let db = Database::open(&whole).unwrap();
        let tx = db.writer().unwrap();
        tx.set_coarse_node_window(coarse).unwrap();
        tx.commit().unwrap();
    }
    run_quarry([
        "migrate".as_ref(),
        "--datadir".as_ref(),
        whole.as_os_str(),
        "--proof-history".as_ref(),
        "100".as_ref(),
    ]);
    assert_eq!(
        setting(&whole),
        (Some(100), Some((301 - 100) / coarse * coarse))
    );
}
