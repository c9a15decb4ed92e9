//! `quarry ingest --reorg` end to end: dev chains and competing branches of them written by
//! `quarry devchain --fork-at`, ingested by the real binary into real datadirs, compared table
//! by table with a fresh ingest of the branch, and served by `quarry serve`.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_consensus::Transaction;
use alloy_primitives::B256;
use quarry_devchain::{Contracts, DevAccounts};
use quarry_storage::Table;
use serde_json::{Value, json};
use std::{
    ffi::OsStr,
    path::{Path, PathBuf},
    sync::OnceLock,
};
use support::{
    Block, Server, decode_blocks, devchain, encode_blocks, ingest_args, ingest_folder, ingested,
    quarry_fails, run_quarry, stored_head, table_digests,
};
use tempfile::TempDir;

/// The stored chain: blocks 1..=40 of a small dev chain.
const STORED: u64 = 40;
/// The last block every branch shares with it.
const FORK_AT: u64 = 30;
/// The long branch's last block (the short one ends at `SHORT`).
const LONG: u64 = 45;
const SHORT: u64 = 35;
const TXS_PER_BLOCK: &str = "6";
/// A seed whose blocks above `FORK_AT` deploy contracts, so that unwinding covers creations.
const SEED: &str = "2";

/// Tables an unwind leaves as they are: `Meta` (sync target, unwind count, log index head)
/// and `Bytecodes` (code by hash, kept whichever branch deployed it).
const UNWIND_KEEPS: [Table; 2] = [Table::Meta, Table::Bytecodes];

/// The three chains, each a folder with genesis.json and chain.rlp (one genesis for all).
struct Chains {
    genesis: PathBuf,
    /// Blocks 1..=`STORED`.
    stored: PathBuf,
    /// Blocks 1..=`LONG`, the same as `stored` through `FORK_AT`.
    long: PathBuf,
    /// Blocks 1..=`SHORT`, the same as `stored` through `FORK_AT`, shorter than `stored`.
    short: PathBuf,
}

/// The chains, generated once per test binary run.
fn chains() -> &'static Chains {
    static CHAINS: OnceLock<Chains> = OnceLock::new();
    CHAINS.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("reorg-chains");
        if root.exists() {
            std::fs::remove_dir_all(&root).unwrap();
        }
        let generate = |name: &str, blocks: u64, fork: &[&str]| {
            let out = root.join(name);
            let blocks = blocks.to_string();
            let mut args = vec![
                "--blocks",
                &blocks,
                "--txs-per-block",
                TXS_PER_BLOCK,
                "--seed",
                SEED,
            ];
            args.extend(fork);
            devchain(&out, &args);
            out
        };
        let fork_at = FORK_AT.to_string();
        let stored = generate("stored", STORED, &[]);
        let chains = Chains {
            genesis: stored.join("genesis.json"),
            stored,
            long: generate("long", LONG, &["--fork-at", &fork_at, "--fork-seed", "2"]),
            short: generate("short", SHORT, &["--fork-at", &fork_at, "--fork-seed", "3"]),
        };
        assert_eq!(
            std::fs::read(&chains.genesis).unwrap(),
            std::fs::read(chains.long.join("genesis.json")).unwrap()
        );
        // Both ways, the blocks a reorganisation replaces deploy a contract.
        for folder in [&chains.stored, &chains.long] {
            assert!(
                blocks(folder)[FORK_AT as usize..]
                    .iter()
                    .flat_map(|block| &block.body.transactions)
                    .any(|tx| alloy_consensus::Transaction::kind(tx).is_create()),
                "{}: no contract creation above block {FORK_AT}",
                folder.display()
            );
        }
        chains
    })
}

fn blocks(folder: &Path) -> Vec<Block> {
    decode_blocks(&std::fs::read(folder.join("chain.rlp")).unwrap())
}

/// The hash of block `number` of `folder`'s chain.
fn hash(folder: &Path, number: u64) -> B256 {
    blocks(folder)[number as usize - 1].header.hash_slow()
}

/// A fresh datadir (`<dir>/data`) holding the stored chain.
fn stored_datadir() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let datadir = dir.path().join("data");
    let c = chains();
    ingest_folder(&datadir, &c.stored);
    assert_eq!(stored_head(&datadir), (STORED, hash(&c.stored, STORED)));
    (dir, datadir)
}

/// `quarry ingest` of `file` into `datadir` with `genesis` and `extra` arguments (`--reorg`,
/// ...).
fn ingest_with<'a>(
    datadir: &'a Path,
    genesis: &'a Path,
    file: &'a Path,
    extra: &[&'a str],
) -> Vec<&'a OsStr> {
    let mut args = ingest_args(datadir, genesis, &[file]);
    args.extend(extra.iter().map(|arg| OsStr::new(*arg)));
    args
}

fn reorg_ok(datadir: &Path, file: &Path) -> String {
    run_quarry(ingest_with(datadir, &chains().genesis, file, &["--reorg"])).0
}

/// Every table of `folder`'s chain ingested into an empty datadir, but those in `except`.
fn fresh_digests(folder: &Path, except: &[Table]) -> Vec<(Table, (u64, B256))> {
    table_digests(&ingested(folder), except)
}

fn assert_tables_equal(
    actual: &[(Table, (u64, B256))],
    expected: &[(Table, (u64, B256))],
    what: &str,
) {
    assert_eq!(actual.len(), expected.len());
    for ((table, got), (_, want)) in actual.iter().zip(expected) {
        assert_eq!(
            got, want,
            "{what}: table {table:?} differs ((entries, digest))"
        );
    }
}

/// A reorganisation to a longer branch: the head is the branch's last block and every table
/// but `Meta` and `Bytecodes` is what a fresh ingest of the branch writes; `quarry serve`
/// answers the blocks above the fork point with the branch's, eth_getLogs over the branch's
/// blocks as over the fresh datadir, and a transaction only the replaced chain had is gone.
#[test]
fn a_reorg_to_a_longer_branch_equals_a_fresh_ingest_of_it() {
    let c = chains();
    let (_dir, datadir) = stored_datadir();
    let stdout = reorg_ok(&datadir, &c.long.join("chain.rlp"));
    assert!(
        stdout.contains(&format!(
            "imported {} blocks ({FORK_AT} already stored)",
            LONG - FORK_AT
        )),
        "{stdout}"
    );
    assert_eq!(stored_head(&datadir), (LONG, hash(&c.long, LONG)));
    assert_tables_equal(
        &table_digests(&datadir, &UNWIND_KEEPS),
        &fresh_digests(&c.long, &UNWIND_KEEPS),
        "after the reorg",
    );

    let fresh = ingested(&c.long);
    let (reorged, fresh) = (Server::start(&datadir, ""), Server::start(&fresh, ""));
    assert_eq!(
        reorged.result("eth_blockNumber", json!([])),
        json!(format!("{LONG:#x}"))
    );
    for number in FORK_AT - 2..=LONG {
        let params = json!([format!("{number:#x}"), true]);
        let block = reorged.result("eth_getBlockByNumber", params.clone());
        assert_eq!(
            block,
            fresh.result("eth_getBlockByNumber", params),
            "block {number}"
        );
        let expected = if number <= FORK_AT {
            &c.stored
        } else {
            &c.long
        };
        assert_eq!(
            block["hash"],
            json!(hash(expected, number)),
            "block {number}"
        );
    }
    let stored_only = blocks(&c.stored)[FORK_AT as usize..]
        .iter()
        .flat_map(|b| b.body.transactions.iter().map(|tx| *tx.tx_hash()))
        .collect::<Vec<_>>();
    assert!(!stored_only.is_empty());
    for tx in &stored_only {
        if fresh
            .result("eth_getTransactionByHash", json!([tx]))
            .is_null()
        {
            assert_eq!(
                reorged.result("eth_getTransactionByHash", json!([tx])),
                Value::Null,
                "{tx}"
            );
            assert_eq!(
                reorged.result("eth_getTransactionReceipt", json!([tx])),
                Value::Null,
                "{tx}"
            );
        }
    }

    let accounts = DevAccounts::new(quarry_devchain::account_count(
        TXS_PER_BLOCK.parse().unwrap(),
    ))
    .unwrap();
    let contracts = Contracts::of(accounts.address(0));
    let range =
        json!({"fromBlock": format!("{:#x}", FORK_AT + 1), "toBlock": format!("{LONG:#x}")});
    let by_address = json!({"fromBlock": "0x0", "toBlock": "latest", "address": contracts.store});
    let whole = json!({"fromBlock": "0x0", "toBlock": "latest"});
    for filter in [range, by_address, whole] {
        let logs = reorged.result("eth_getLogs", json!([filter]));
        assert!(!logs.as_array().unwrap().is_empty(), "{filter}: no logs");
        assert_eq!(
            logs,
            fresh.result("eth_getLogs", json!([filter])),
            "{filter}"
        );
    }
    // No log of the replaced blocks remains above the fork point.
    let logs = reorged.result(
        "eth_getLogs",
        json!([{"fromBlock": format!("{:#x}", FORK_AT + 1), "toBlock": "latest"}]),
    );
    for log in logs.as_array().unwrap() {
        let number = u64::from_str_radix(
            log["blockNumber"]
                .as_str()
                .unwrap()
                .trim_start_matches("0x"),
            16,
        )
        .unwrap();
        assert_eq!(log["blockHash"], json!(hash(&c.long, number)), "{log}");
    }
}

/// A branch shorter than the stored chain is the chain to have as well: the head goes down to
/// its last block, and the tables are a fresh ingest's.
#[test]
fn a_reorg_to_a_shorter_branch_is_accepted() {
    let c = chains();
    let (_dir, datadir) = stored_datadir();
    reorg_ok(&datadir, &c.short.join("chain.rlp"));
    assert_eq!(stored_head(&datadir), (SHORT, hash(&c.short, SHORT)));
    assert_tables_equal(
        &table_digests(&datadir, &UNWIND_KEEPS),
        &fresh_digests(&c.short, &UNWIND_KEEPS),
        "after the reorg",
    );
}

/// A `quarry serve` that has answered receipts, blocks and transactions of the stored chain (so
/// its caches hold them, decoded and as sent) while another process commits a reorg to the long
/// branch: afterwards every one it gives, by number or by transaction hash, is the new chain's,
/// as a server of a fresh ingest gives them.
#[test]
fn a_running_server_answers_receipts_and_blocks_of_the_new_chain_after_a_reorg() {
    let c = chains();
    let (_dir, datadir) = stored_datadir();
    let server = Server::start(&datadir, "");
    let tx_hashes = |folder: &Path| {
        blocks(folder)[FORK_AT as usize..]
            .iter()
            .flat_map(|b| b.body.transactions.iter().map(|tx| *tx.tx_hash()))
            .collect::<Vec<_>>()
    };
    let (stored_only, long_only) = (tx_hashes(&c.stored), tx_hashes(&c.long));
    assert!(!stored_only.is_empty() && !long_only.is_empty());
    for tx in &stored_only {
        assert!(
            !server
                .result("eth_getTransactionReceipt", json!([tx]))
                .is_null()
        );
    }
    // Every answer kept by block hash (blocks, transactions, receipts) is asked for first.
    let by_number = |number: u64| {
        let n = format!("{number:#x}");
        [
            ("eth_getBlockReceipts", json!([n])),
            ("eth_getBlockByNumber", json!([n, false])),
            ("eth_getBlockByNumber", json!([n, true])),
            ("eth_getTransactionByBlockNumberAndIndex", json!([n, "0x0"])),
        ]
    };
    for number in FORK_AT + 1..=STORED {
        for (method, params) in by_number(number) {
            assert!(
                !server.result(method, params).is_null(),
                "{method} {number}"
            );
        }
    }

    reorg_ok(&datadir, &c.long.join("chain.rlp"));
    let fresh = Server::start(&ingested(&c.long), "");
    for number in FORK_AT + 1..=LONG {
        for (method, params) in by_number(number) {
            assert_eq!(
                server.result(method, params.clone()),
                fresh.result(method, params),
                "{method} {number}"
            );
        }
    }
    for tx in stored_only.iter().chain(&long_only) {
        for method in ["eth_getTransactionReceipt", "eth_getTransactionByHash"] {
            assert_eq!(
                server.result(method, json!([tx])),
                fresh.result(method, json!([tx])),
                "{method} {tx}"
            );
        }
    }
}

/// eth_getProof on a server that stays up while another process (`quarry ingest --reorg`)
/// replaces blocks: at the replaced heights, the new ones and `latest`, its proofs are those of
/// a server started on the new chain (the state trie, its history and any answer kept by
/// number follow the unwind).
#[test]
fn a_running_server_proves_the_new_chain_after_a_reorg() {
    let c = chains();
    let (_dir, datadir) = stored_datadir();
    let server = Server::start(&datadir, "");
    let mut addresses: Vec<String> = [&c.stored, &c.long]
        .iter()
        .flat_map(|folder| blocks(folder))
        .skip(FORK_AT as usize - 1)
        .flat_map(|block| {
            let to = block
                .body
                .transactions
                .iter()
                .filter_map(|tx| tx.to())
                .collect::<Vec<_>>();
            to.into_iter().chain([block.header.beneficiary])
        })
        .map(|address| format!("{address:#x}"))
        .collect();
    addresses.sort();
    addresses.dedup();
    assert!(addresses.len() > 3);
    let slots = json!(["0x0", "0x1", "0x2"]);
    let proofs = |server: &Server, blocks: &[String]| -> Vec<Value> {
        let mut answers = Vec::new();
        for block in blocks {
            for address in &addresses {
                answers.push(server.result("eth_getProof", json!([address, slots, block])));
            }
        }
        answers
    };
    let numbered = |to: u64| -> Vec<String> {
        (FORK_AT..=to)
            .map(|n| format!("{n:#x}"))
            .chain(["latest".to_string()])
            .collect()
    };
    let before = proofs(&server, &numbered(STORED));

    reorg_ok(&datadir, &c.long.join("chain.rlp"));
    let fresh = Server::start(&ingested(&c.long), "");
    let after = proofs(&server, &numbered(LONG));
    assert_eq!(after, proofs(&fresh, &numbered(LONG)));
    // The fork point's proofs stand; the replaced heights' lead to other roots.
    let per_block = addresses.len();
    assert_eq!(before[..per_block], after[..per_block]);
    assert_ne!(
        before[per_block..2 * per_block],
        after[per_block..2 * per_block]
    );
}

/// Ingesting `file` of the long branch into the stored chain's `datadir` with `flags` fails
/// at the fork point's block, naming it, with `message`, and changes nothing.
fn refused_unchanged(datadir: &Path, file: &Path, flags: &[&str], message: &str) {
    let c = chains();
    let before = table_digests(datadir, &[Table::Meta]);
    let stderr = quarry_fails(ingest_with(datadir, &c.genesis, file, flags));
    let first = FORK_AT + 1;
    assert!(
        stderr.contains(&format!(
            "block {first} ({}) at byte offset",
            hash(&c.long, first)
        )) && stderr.contains(message),
        "{stderr}"
    );
    assert_eq!(stored_head(datadir), (STORED, hash(&c.stored, STORED)));
    assert_tables_equal(
        &table_digests(datadir, &[Table::Meta]),
        &before,
        "after the refusal",
    );
}

/// Without --reorg, a branch that differs from the stored chain is refused, and the datadir
/// is left exactly as it was.
#[test]
fn a_branch_without_reorg_is_refused_and_changes_nothing() {
    let c = chains();
    let (_dir, datadir) = stored_datadir();
    let first = FORK_AT + 1;
    refused_unchanged(
        &datadir,
        &c.long.join("chain.rlp"),
        &[],
        &format!(
            "differs from stored block {first} ({}); pass --reorg",
            hash(&c.stored, first)
        ),
    );
}

/// A reorganisation deeper than --max-reorg-depth is refused, naming the stored and the new
/// block at the fork point, and changes nothing; at exactly the limit it is taken.
#[test]
fn a_reorg_deeper_than_the_limit_is_refused_and_changes_nothing() {
    let c = chains();
    let (_dir, datadir) = stored_datadir();
    let file = c.long.join("chain.rlp");
    let depth = STORED - FORK_AT;
    let first = FORK_AT + 1;
    refused_unchanged(
        &datadir,
        &file,
        &["--reorg", "--max-reorg-depth", "5"],
        &format!(
            "would replace {depth} stored blocks from block {first} ({}) on, more than the maximum reorg depth of 5; nothing was changed",
            hash(&c.stored, first)
        ),
    );

    let depth = depth.to_string();
    run_quarry(ingest_with(
        &datadir,
        &c.genesis,
        &file,
        &["--reorg", "--max-reorg-depth", &depth],
    ));
    assert_eq!(stored_head(&datadir), (LONG, hash(&c.long, LONG)));
}

/// A branch with an invalid block past the fork point (block `FORK_AT + 3` says a wrong state
/// root) fails naming that block, and undoes the whole reorganisation: the stored chain stays
/// whole, none of the branch's valid blocks before the bad one is kept. So does a branch file
/// that ends inside that block. A later good reorganisation still works.
#[test]
fn a_bad_block_in_the_branch_undoes_the_whole_reorg() {
    let c = chains();
    let (dir, datadir) = stored_datadir();
    let before = table_digests(&datadir, &[Table::Meta]);
    let bad_number = FORK_AT + 3;
    let mut branch = blocks(&c.long);
    branch[bad_number as usize - 1].header.state_root =
        alloy_primitives::keccak256(b"not the state root");
    let bad_hash = branch[bad_number as usize - 1].header.hash_slow();
    let file = dir.path().join("bad-branch.rlp");
    std::fs::write(&file, encode_blocks(&branch)).unwrap();

    let stderr = quarry_fails(ingest_with(&datadir, &c.genesis, &file, &["--reorg"]));
    assert!(
        stderr.contains(&format!("block {bad_number} ({bad_hash})"))
            && stderr.contains("stateRoot mismatch"),
        "{stderr}"
    );
    assert_eq!(stored_head(&datadir), (STORED, hash(&c.stored, STORED)));
    assert_tables_equal(
        &table_digests(&datadir, &[Table::Meta]),
        &before,
        "after the failed reorg",
    );

    // A branch file cut short inside block `bad_number` (a download that stopped): the same.
    let good = blocks(&c.long);
    let offset = encode_blocks(&good[..bad_number as usize - 1]).len();
    let cut = offset + 100;
    let file = dir.path().join("cut-branch.rlp");
    std::fs::write(&file, &encode_blocks(&good)[..cut]).unwrap();
    let stderr = quarry_fails(ingest_with(&datadir, &c.genesis, &file, &["--reorg"]));
    assert!(
        stderr.contains(&format!("truncated block at byte offset {offset}")),
        "{stderr}"
    );
    assert_eq!(stored_head(&datadir), (STORED, hash(&c.stored, STORED)));
    assert_tables_equal(
        &table_digests(&datadir, &[Table::Meta]),
        &before,
        "after the cut-short reorg",
    );

    // The datadir opens (its state trie matches the head) and takes the good branch.
    reorg_ok(&datadir, &c.long.join("chain.rlp"));
    assert_eq!(stored_head(&datadir), (LONG, hash(&c.long, LONG)));
}

/// Unwind and reapply: after a reorganisation to the branch, `ingest --reorg` of the original
/// file brings the original chain back, table for table (but `Meta` and `Bytecodes`) what its
/// first ingest wrote.
#[test]
fn reorging_back_restores_the_original_chain_table_for_table() {
    let c = chains();
    let (_dir, datadir) = stored_datadir();
    let original = table_digests(&datadir, &UNWIND_KEEPS);
    reorg_ok(&datadir, &c.long.join("chain.rlp"));
    assert_eq!(stored_head(&datadir), (LONG, hash(&c.long, LONG)));
    let stdout = reorg_ok(&datadir, &c.stored.join("chain.rlp"));
    assert!(
        stdout.contains(&format!(
            "imported {} blocks ({FORK_AT} already stored)",
            STORED - FORK_AT
        )),
        "{stdout}"
    );
    assert_eq!(stored_head(&datadir), (STORED, hash(&c.stored, STORED)));
    assert_tables_equal(
        &table_digests(&datadir, &UNWIND_KEEPS),
        &original,
        "after reorging back",
    );
}

/// What `quarry follow` relies on: an `Importer` that abandoned a reorganisation (a bad block
/// in the new branch) is back on the stored chain, in memory as on disk, and goes on with it.
/// Its state trie is the stored head's again: the original chain's next blocks import (each
/// checked against its state root), and so does a good branch afterwards.
#[test]
fn an_importer_that_abandoned_a_reorg_goes_on_from_the_stored_chain() {
    use quarry_ingest::{Importer, Progress, Reorgs};
    let c = chains();
    let dir = tempfile::tempdir().unwrap();
    let stored = blocks(&c.stored);
    let prefix = dir.path().join("prefix.rlp");
    std::fs::write(&prefix, encode_blocks(&stored[..STORED as usize - 2])).unwrap();
    let mut branch = blocks(&c.long);
    branch[FORK_AT as usize + 2].header.state_root =
        alloy_primitives::keccak256(b"not the state root");
    let bad = dir.path().join("bad-branch.rlp");
    std::fs::write(&bad, encode_blocks(&branch)).unwrap();

    let genesis: alloy_genesis::Genesis =
        serde_json::from_slice(&std::fs::read(&c.genesis).unwrap()).unwrap();
    let datadir = dir.path().join("data");
    let db = quarry_storage::Database::open(&datadir).unwrap();
    let mut importer = Importer::open(db, &genesis).unwrap();
    importer.set_reorgs(Reorgs::Follow { max_depth: 128 });
    let mut progress = Progress::hidden();
    importer.import_file(&prefix, &mut progress).unwrap();
    let head = (STORED - 2, hash(&c.stored, STORED - 2));
    assert_eq!(importer.head(), head);

    let err = importer.import_file(&bad, &mut progress).unwrap_err();
    assert!(err.to_string().contains("stateRoot mismatch"), "{err}");
    assert_eq!(importer.head(), head);
    let reader = importer.database().reader().unwrap();
    assert_eq!(reader.head().unwrap(), Some(head));
    drop(reader);

    let stats = importer
        .import_file(&c.stored.join("chain.rlp"), &mut progress)
        .unwrap();
    assert_eq!((stats.blocks, stats.skipped), (2, STORED - 2));
    assert_eq!(importer.head(), (STORED, hash(&c.stored, STORED)));

    importer
        .import_file(&c.long.join("chain.rlp"), &mut progress)
        .unwrap();
    assert_eq!(importer.head(), (LONG, hash(&c.long, LONG)));
    drop(importer);
    assert_tables_equal(
        &table_digests(&datadir, &UNWIND_KEEPS),
        &fresh_digests(&c.long, &UNWIND_KEEPS),
        "after the abandoned and the good reorg",
    );
}

/// A reorganisation longer than a decoding batch (256 blocks) and than the default depth
/// limit: 260 stored blocks replaced by a 280-block branch. A bad block in the second batch
/// still undoes all of it, the first batch's 216 valid new blocks included; the default limit
/// (128) refuses it; with the limit raised it is taken whole, equal to a fresh ingest.
#[test]
fn a_reorg_across_decoding_batches_is_undone_or_taken_whole() {
    const STORED: u64 = 300;
    const FORK_AT: u64 = 40;
    const LONG: u64 = 320;
    let dir = tempfile::tempdir().unwrap();
    let chain = ["--txs-per-block", "1", "--seed", "5"];
    let (stored, long) = (dir.path().join("stored"), dir.path().join("long"));
    devchain(&stored, &[&["--blocks", "300"], &chain[..]].concat());
    devchain(
        &long,
        &[&["--blocks", "320", "--fork-at", "40"], &chain[..]].concat(),
    );
    let genesis = stored.join("genesis.json");
    let datadir = dir.path().join("data");
    ingest_folder(&datadir, &stored);
    let head = (STORED, hash(&stored, STORED));
    assert_eq!(stored_head(&datadir), head);
    let before = table_digests(&datadir, &[Table::Meta]);
    let depth = (STORED - FORK_AT).to_string();
    let mut branch = blocks(&long);
    branch[289].header.state_root = alloy_primitives::keccak256(b"not the state root");
    let bad = dir.path().join("bad-branch.rlp");
    std::fs::write(&bad, encode_blocks(&branch)).unwrap();
    let raised = ["--reorg", "--max-reorg-depth", &depth];
    let stderr = quarry_fails(ingest_with(&datadir, &genesis, &bad, &raised));
    assert!(
        stderr.contains(&format!("block 290 ({})", branch[289].header.hash_slow()))
            && stderr.contains("stateRoot mismatch"),
        "{stderr}"
    );
    assert_eq!(stored_head(&datadir), head);
    assert_tables_equal(
        &table_digests(&datadir, &[Table::Meta]),
        &before,
        "after the failed reorg",
    );

    let file = long.join("chain.rlp");
    let stderr = quarry_fails(ingest_with(&datadir, &genesis, &file, &["--reorg"]));
    assert!(
        stderr.contains(&format!(
            "would replace {depth} stored blocks from block 41 ({}) on, more than the maximum reorg depth of {}",
            hash(&stored, FORK_AT + 1),
            quarry_ingest::DEFAULT_MAX_REORG_DEPTH
        )),
        "{stderr}"
    );
    assert_eq!(stored_head(&datadir), head);

    let (stdout, _) = run_quarry(ingest_with(&datadir, &genesis, &file, &raised));
    assert!(
        stdout.contains(&format!(
            "imported {} blocks ({FORK_AT} already stored)",
            LONG - FORK_AT
        )),
        "{stdout}"
    );
    assert_eq!(stored_head(&datadir), (LONG, hash(&long, LONG)));
    assert_tables_equal(
        &table_digests(&datadir, &UNWIND_KEEPS),
        &fresh_digests(&long, &UNWIND_KEEPS),
        "after the reorg",
    );
}

/// `quarry unwind --to N` leaves the datadir as a fresh ingest of blocks 1..=N writes it (but
/// `Meta` and `Bytecodes`), and ingesting the file again brings every block back.
#[test]
fn quarry_unwind_equals_a_shorter_ingest_and_the_blocks_come_back() {
    let c = chains();
    let (dir, datadir) = stored_datadir();
    let original = table_digests(&datadir, &UNWIND_KEEPS);
    let to = FORK_AT.to_string();
    let (stdout, _) = run_quarry([
        "unwind".as_ref(),
        "--datadir".as_ref(),
        datadir.as_os_str(),
        "--genesis".as_ref(),
        c.genesis.as_os_str(),
        "--to".as_ref(),
        to.as_ref(),
    ]);
    assert!(
        stdout.contains(&format!("unwound {} blocks", STORED - FORK_AT)),
        "{stdout}"
    );
    assert_eq!(stored_head(&datadir), (FORK_AT, hash(&c.stored, FORK_AT)));
    let prefix = dir.path().join("prefix.rlp");
    std::fs::write(
        &prefix,
        encode_blocks(blocks(&c.stored).iter().take(FORK_AT as usize)),
    )
    .unwrap();
    let shorter = dir.path().join("shorter");
    run_quarry(ingest_args(&shorter, &c.genesis, &[&prefix]));
    assert_tables_equal(
        &table_digests(&datadir, &UNWIND_KEEPS),
        &table_digests(&shorter, &UNWIND_KEEPS),
        "after quarry unwind",
    );
    ingest_folder(&datadir, &c.stored);
    assert_tables_equal(
        &table_digests(&datadir, &UNWIND_KEEPS),
        &original,
        "after ingesting the blocks again",
    );
}
