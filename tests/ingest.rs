//! End-to-end tests of `quarry ingest`: the real binary, run on the rpc-compat fixture chain
//! (genesis plus blocks 1..=54), each test in its own temporary datadir, the result read back
//! with quarry-storage.

// `allow-unwrap-in-tests` covers `#[test]` functions only, not this file's helpers.
#![allow(clippy::unwrap_used)]

mod support;

use alloy_consensus::{Block, Transaction, TxEnvelope};
use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use alloy_rlp::{Decodable, Encodable};
use quarry_storage::{Database, ReadTx, Table};
use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    str::FromStr,
    sync::OnceLock,
    time::Duration,
};
use support::encode_blocks;
use tempfile::TempDir;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures/rpc-compat");
const QUARRY: &str = env!("CARGO_BIN_EXE_quarry");
/// The last block of the fixture chain.
const LAST: u64 = 54;

/// A block number and hash.
type Head = (u64, B256);
/// Every table's `(entries, digest)`, in `Table::ALL` order.
type Digests = Vec<(Table, (u64, B256))>;

fn fixture(name: &str) -> PathBuf {
    Path::new(FIXTURES).join(name)
}

fn genesis_path() -> PathBuf {
    fixture("genesis.json")
}

fn chain_path() -> PathBuf {
    fixture("chain.rlp")
}

fn read_json(name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The head hash the fixture's engine_forkchoiceUpdated call names: the hash of block 54.
fn headfcu_hash() -> B256 {
    let fcu = read_json("headfcu.json");
    let hash = fcu["params"][0]["headBlockHash"].as_str().unwrap();
    B256::from_str(hash).unwrap()
}

/// chain.rlp, split into its items with `alloy_rlp::Header`, and decoded.
struct Chain {
    bytes: Vec<u8>,
    /// `(offset, length)` of block `n` at index `n - 1`.
    items: Vec<(usize, usize)>,
    /// Block `n` at index `n - 1`.
    blocks: Vec<Block<TxEnvelope>>,
}

fn chain() -> &'static Chain {
    static CHAIN: OnceLock<Chain> = OnceLock::new();
    CHAIN.get_or_init(|| {
        let bytes = std::fs::read(chain_path()).unwrap();
        let mut items = Vec::new();
        let mut offset = 0;
        while offset < bytes.len() {
            let mut rest = &bytes[offset..];
            let header = alloy_rlp::Header::decode(&mut rest).unwrap();
            assert!(header.list, "item at byte offset {offset} is not a list");
            let header_len = bytes.len() - offset - rest.len();
            let len = header_len + header.payload_length;
            items.push((offset, len));
            offset += len;
        }
        let blocks: Vec<Block<TxEnvelope>> = items
            .iter()
            .map(|&(offset, len)| {
                let mut item = &bytes[offset..offset + len];
                let block = Block::decode(&mut item).unwrap();
                assert!(item.is_empty());
                block
            })
            .collect();
        for (i, block) in blocks.iter().enumerate() {
            assert_eq!(
                block.header.number,
                i as u64 + 1,
                "chain.rlp is out of order"
            );
            // Re-encoding is byte-exact, so modified files differ only where a test says.
            let (offset, len) = items[i];
            assert_eq!(alloy_rlp::encode(block), &bytes[offset..offset + len]);
        }
        assert_eq!(blocks.len() as u64, LAST);
        Chain {
            bytes,
            items,
            blocks,
        }
    })
}

impl Chain {
    /// The RLP bytes of block `n`.
    fn item(&self, n: u64) -> &[u8] {
        let (offset, len) = self.items[n as usize - 1];
        &self.bytes[offset..offset + len]
    }

    /// The byte offset of block `n` in chain.rlp.
    fn offset(&self, n: u64) -> usize {
        self.items[n as usize - 1].0
    }

    /// Blocks `from..=to`, as they appear in chain.rlp.
    fn range(&self, from: u64, to: u64) -> Vec<u8> {
        (from..=to)
            .map(|n| self.item(n))
            .collect::<Vec<_>>()
            .concat()
    }

    fn block(&self, n: u64) -> &Block<TxEnvelope> {
        &self.blocks[n as usize - 1]
    }

    fn hash(&self, n: u64) -> B256 {
        self.block(n).header.hash_slow()
    }
}

fn write_file(dir: &TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

struct Outcome {
    success: bool,
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "success: {}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.success, self.stdout, self.stderr
        )
    }
}

fn ingest_command(datadir: &Path, files: &[&Path]) -> Command {
    let genesis = genesis_path();
    let mut command = Command::new(QUARRY);
    command
        .args(support::ingest_args(datadir, &genesis, files))
        .stdin(Stdio::null());
    command
}

fn ingest(datadir: &Path, files: &[&Path]) -> Outcome {
    let output = ingest_command(datadir, files).output().unwrap();
    Outcome {
        success: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs an ingest that must succeed; returns its stdout.
fn ingest_ok(datadir: &Path, files: &[&Path]) -> String {
    let outcome = ingest(datadir, files);
    assert!(outcome.success, "ingest failed:\n{outcome}");
    outcome.stdout
}

/// Runs an ingest that must fail; returns its stderr.
fn ingest_err(datadir: &Path, files: &[&Path]) -> String {
    let outcome = ingest(datadir, files);
    assert!(
        !outcome.success,
        "ingest unexpectedly succeeded:\n{outcome}"
    );
    outcome.stderr
}

fn assert_contains(text: &str, wanted: &str) {
    assert!(text.contains(wanted), "expected {wanted:?} in:\n{text}");
}

/// Opens the database in `datadir` (while no ingest runs on it).
///
/// A datadir must not be open twice at once in this process: MDBX's OFD locks make the second
/// open fail with EAGAIN. The same can happen for a moment after closing it, while a child that
/// another test thread is spawning still holds a copy of the lock file's descriptor, so an
/// open is retried for a while.
fn open_db(datadir: &Path) -> Database {
    let mut attempts = 0;
    loop {
        match Database::open(datadir) {
            Ok(db) => return db,
            Err(err) if attempts < 100 => {
                attempts += 1;
                eprintln!("opening {}: {err}; retrying", datadir.display());
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(err) => panic!("cannot open {}: {err}", datadir.display()),
        }
    }
}

/// The stored head.
fn head(reader: &ReadTx) -> Head {
    reader.head().unwrap().expect("the database has no head")
}

/// Asserts the stored head is block `n` of the fixture chain.
fn assert_head(datadir: &Path, n: u64) {
    let db = open_db(datadir);
    let head = head(&db.reader().unwrap());
    assert_eq!(head, (n, chain().hash(n)), "head of {}", datadir.display());
}

/// Asserts that an ingest reported, and the database holds, the full fixture chain.
fn check_complete(reader: &ReadTx, stdout: &str) {
    let expected = headfcu_hash();
    assert_contains(stdout, &format!("head: block {LAST} ({expected})"));
    assert_eq!(head(reader), (LAST, expected));
}

/// Ingests the whole chain.rlp into a datadir that already holds blocks up to `stored`, and
/// checks it skips exactly those and ends complete.
fn resume_to_end(datadir: &Path, stored: u64) {
    let stdout = ingest_ok(datadir, &[&chain_path()]);
    assert_contains(
        &stdout,
        &format!(
            "imported {} blocks ({stored} already stored)",
            LAST - stored
        ),
    );
    assert_complete(datadir, &stdout);
}

fn assert_complete(datadir: &Path, stdout: &str) {
    check_complete(&open_db(datadir).reader().unwrap(), stdout);
}

/// Every table's `(entries, digest)`.
fn digests(reader: &ReadTx) -> Digests {
    Table::ALL
        .iter()
        .map(|&table| (table, reader.table_digest(table).unwrap()))
        .collect()
}

#[test]
fn rpc_compat_chain_ingests_and_head_matches_headfcu() {
    let dir = TempDir::new().unwrap();
    let stdout = ingest_ok(dir.path(), &[&chain_path()]);
    assert_contains(
        &stdout,
        &format!("imported {LAST} blocks (0 already stored)"),
    );
    let db = open_db(dir.path());
    let reader = db.reader().unwrap();
    check_complete(&reader, &stdout);
    for n in 0..=LAST {
        let header = reader
            .header(n)
            .unwrap()
            .unwrap_or_else(|| panic!("no header {n}"));
        assert_eq!(header.number, n);
        let hash = header.hash_slow();
        assert_eq!(reader.canonical_hash(n).unwrap(), Some(hash), "block {n}");
        assert_eq!(reader.block_number(&hash).unwrap(), Some(n), "block {n}");
        if n > 0 {
            assert_eq!(hash, chain().hash(n), "block {n} differs from chain.rlp");
            assert_eq!(
                Some(header.parent_hash),
                reader.canonical_hash(n - 1).unwrap(),
                "block {n} does not link to block {}",
                n - 1
            );
        }
    }
    assert_eq!(reader.header(LAST + 1).unwrap(), None);
    assert_eq!(reader.canonical_hash(LAST + 1).unwrap(), None);
}

#[test]
fn truncated_file_reports_offset_and_keeps_whole_blocks() {
    let chain = chain();
    let dir = TempDir::new().unwrap();
    let datadir = dir.path().join("db");

    // Blocks 1..=30 and the first half of block 31.
    let k = 30;
    let partial = &chain.item(k + 1)[..chain.item(k + 1).len() / 2];
    let mut bytes = chain.range(1, k);
    bytes.extend_from_slice(partial);
    let file = write_file(&dir, "truncated.rlp", &bytes);
    let stderr = ingest_err(&datadir, &[&file]);
    assert_contains(
        &stderr,
        &format!(
            "{}: truncated block at byte offset {}: header says {} bytes, file has {} left",
            file.display(),
            chain.offset(k + 1),
            chain.item(k + 1).len(),
            partial.len()
        ),
    );
    assert_head(&datadir, k);

    // Blocks 1..=40, then a file that ends inside block 41's 3-byte RLP list header.
    let k2 = 40;
    assert_eq!(
        chain.item(k2 + 1)[0],
        0xf9,
        "block 41 should have a 3-byte header"
    );
    let mut bytes = chain.range(1, k2);
    bytes.extend_from_slice(&chain.item(k2 + 1)[..2]);
    let file = write_file(&dir, "truncated-header.rlp", &bytes);
    let stderr = ingest_err(&datadir, &[&file]);
    assert_contains(
        &stderr,
        &format!(
            "{}: truncated block at byte offset {}: the file ends inside its 3-byte RLP \
             header, 2 bytes left",
            file.display(),
            chain.offset(k2 + 1)
        ),
    );
    assert_head(&datadir, k2);

    // The full file resumes after the stored blocks.
    resume_to_end(&datadir, k2);
}

#[test]
fn corrupt_block_reports_offset() {
    let chain = chain();
    let dir = TempDir::new().unwrap();
    let datadir = dir.path().join("db");

    // Block 10's first byte becomes 0x80 (the empty string): the item is not an RLP list, so
    // the file cannot even be split there.
    let mut bytes = chain.bytes.clone();
    let offset = chain.offset(10);
    bytes[offset] = 0x80;
    let file = write_file(&dir, "not-a-list.rlp", &bytes);
    let stderr = ingest_err(&datadir, &[&file]);
    assert_contains(
        &stderr,
        &format!(
            "{}: item at byte offset {offset} is not an RLP list (first byte 0x80)",
            file.display()
        ),
    );
    assert_head(&datadir, 9);

    // Block 20's outer list is intact, but its header (the list's first item) is turned from a
    // list into a string of the same length: the file splits fine, block 20 does not decode.
    // Blocks 10..=19, read and decoded along with it, are still imported.
    let mut bytes = chain.bytes.clone();
    let offset = chain.offset(20);
    let outer_header_len = match chain.bytes[offset] {
        0xc0..=0xf7 => 1,
        first => 1 + usize::from(first - 0xf7),
    };
    let inner = offset + outer_header_len;
    assert_eq!(
        bytes[inner], 0xf9,
        "block 20's header should be a long list"
    );
    bytes[inner] = 0xb9; // a long string with the same 2-byte length
    let file = write_file(&dir, "undecodable.rlp", &bytes);
    let stderr = ingest_err(&datadir, &[&file]);
    assert_contains(
        &stderr,
        &format!(
            "{}: block at byte offset {offset} cannot be decoded",
            file.display()
        ),
    );
    assert_head(&datadir, 19);

    // Nothing of the corrupt blocks was stored: the real chain continues from block 19.
    resume_to_end(&datadir, 19);
}

/// A block may hold a blob transaction only in its canonical form: the first blob transaction
/// of the chain, put back into its block with a (empty) sidecar, makes that block undecodable
/// at its offset, and the blocks before it are imported.
#[test]
fn blob_transaction_with_its_sidecar_in_a_block_is_rejected() {
    use alloy_consensus::{Signed, TxEip4844Variant, TxEip4844WithSidecar};
    use alloy_eips::eip7594::BlobTransactionSidecarVariant;
    let chain = chain();
    let (number, index) = (1..=LAST)
        .find_map(|n| {
            let txs = &chain.block(n).body.transactions;
            txs.iter().position(|tx| tx.is_eip4844()).map(|i| (n, i))
        })
        .expect("the rpc-compat chain has a blob transaction");
    let mut block = chain.block(number).clone();
    let TxEnvelope::Eip4844(signed) = &block.body.transactions[index] else {
        unreachable!("found as a blob transaction");
    };
    let TxEip4844Variant::TxEip4844(tx) = signed.tx().clone() else {
        panic!("block {number} holds a blob transaction with its sidecar already");
    };
    let with_sidecar =
        TxEip4844Variant::TxEip4844WithSidecar(TxEip4844WithSidecar::from_tx_and_sidecar(
            tx,
            BlobTransactionSidecarVariant::Eip4844(Default::default()),
        ));
    block.body.transactions[index] = TxEnvelope::Eip4844(Signed::new_unchecked(
        with_sidecar,
        *signed.signature(),
        *signed.hash(),
    ));

    let dir = TempDir::new().unwrap();
    let datadir = dir.path().join("db");
    let bytes = [chain.range(1, number - 1), alloy_rlp::encode(&block)].concat();
    let file = write_file(&dir, "full-blob.rlp", &bytes);
    let stderr = ingest_err(&datadir, &[&file]);
    assert_contains(
        &stderr,
        &format!(
            "{}: block at byte offset {} cannot be decoded: transaction {index} is a blob transaction in its network form",
            file.display(),
            chain.offset(number)
        ),
    );
    assert_head(&datadir, number - 1);
}

#[test]
fn wrong_state_root_is_rejected_and_earlier_blocks_stay() {
    let chain = chain();
    let dir = TempDir::new().unwrap();
    let datadir = dir.path().join("db");

    let mut blocks: Vec<Block<TxEnvelope>> = (1..=20).map(|n| chain.block(n).clone()).collect();
    let good_root = blocks[19].header.state_root;
    let bad_root = keccak256(b"not the state root");
    blocks[19].header.state_root = bad_root;
    let bad_hash = blocks[19].header.hash_slow();
    let file = write_file(&dir, "bad-root.rlp", &encode_blocks(&blocks));

    let stderr = ingest_err(&datadir, &[&file]);
    assert_contains(
        &stderr,
        &format!(
            "{}: byte offset {}: block 20 ({bad_hash}) rejected: stateRoot mismatch: \
             block says {bad_root}, computed {good_root}",
            file.display(),
            chain.offset(20)
        ),
    );
    {
        let db = open_db(&datadir);
        let reader = db.reader().unwrap();
        assert_eq!(head(&reader), (19, chain.hash(19)));
        assert_eq!(reader.block_number(&bad_hash).unwrap(), None);
        assert_eq!(reader.header(20).unwrap(), None);
    }

    // The bad block was never stored: the real chain continues from block 19.
    resume_to_end(&datadir, 19);
}

#[test]
fn file_that_does_not_connect_is_refused() {
    let chain = chain();
    let dir = TempDir::new().unwrap();
    let datadir = dir.path().join("db");

    let first = write_file(&dir, "1-10.rlp", &chain.range(1, 10));
    let stdout = ingest_ok(&datadir, &[&first]);
    assert_contains(&stdout, "imported 10 blocks (0 already stored)");
    assert_head(&datadir, 10);

    // A gap: blocks 20..=25 after head 10.
    let gap = write_file(&dir, "20-25.rlp", &chain.range(20, 25));
    let stderr = ingest_err(&datadir, &[&gap]);
    assert_contains(
        &stderr,
        &format!(
            "{}: block 20 ({}) at byte offset 0 does not connect to the stored chain \
             (head is block 10)",
            gap.display(),
            chain.hash(20)
        ),
    );
    assert_head(&datadir, 10);

    // A different block 5 (other extra data) among the real blocks 1..=4 and 6..=15.
    let mut other = chain.block(5).clone();
    other.header.extra_data = Bytes::from_static(b"another block 5");
    let other_hash = other.header.hash_slow();
    assert_ne!(other_hash, chain.hash(5));
    let mut bytes = chain.range(1, 4);
    let other_offset = bytes.len();
    other.encode(&mut bytes);
    bytes.extend(chain.range(6, 15));
    let fork = write_file(&dir, "fork.rlp", &bytes);
    let stderr = ingest_err(&datadir, &[&fork]);
    assert_contains(
        &stderr,
        &format!(
            "{}: block 5 ({other_hash}) at byte offset {other_offset} differs from stored \
             block 5 ({}); pass --reorg to replace stored blocks",
            fork.display(),
            chain.hash(5)
        ),
    );
    let db = open_db(&datadir);
    let reader = db.reader().unwrap();
    assert_eq!(head(&reader), (10, chain.hash(10)));
    assert_eq!(reader.canonical_hash(5).unwrap(), Some(chain.hash(5)));
    assert_eq!(reader.block_number(&other_hash).unwrap(), None);
}

/// One file per block, so that an import commits after every block.
fn per_block_files(dir: &TempDir) -> Vec<PathBuf> {
    (1..=LAST)
        .map(|n| write_file(dir, &format!("block-{n:02}.rlp"), chain().item(n)))
        .collect()
}

/// The head a run started from, as it reports on stderr: "datadir ...: head is block N (hash)".
fn start_head(stderr: &str) -> Head {
    let line = stderr
        .lines()
        .find(|line| line.starts_with("datadir ") && line.contains(": head is block "))
        .unwrap_or_else(|| panic!("no start head in:\n{stderr}"));
    let rest = &line[line.find(": head is block ").unwrap() + ": head is block ".len()..];
    let (number, hash) = rest.split_once(" (").unwrap();
    let hash = hash.strip_suffix(')').unwrap();
    (number.parse().unwrap(), B256::from_str(hash).unwrap())
}

/// What a datadir looked like once a killed ingest had been run to completion.
struct Resumed {
    what: String,
    /// The head the completing run found: `(number, hash)`.
    start: Head,
    stdout: String,
    digests: Digests,
}

/// Runs the ingest to completion after a kill, without looking at the datadir first.
fn resume(datadir: &Path, what: String) -> Resumed {
    let outcome = ingest(datadir, &[&chain_path()]);
    assert!(outcome.success, "{what}: resuming failed:\n{outcome}");
    let db = open_db(datadir);
    let reader = db.reader().unwrap();
    check_complete(&reader, &outcome.stdout);
    Resumed {
        start: start_head(&outcome.stderr),
        stdout: outcome.stdout,
        digests: digests(&reader),
        what,
    }
}

/// Checks that a resumed run started from a stored prefix of the chain, skipped exactly that
/// prefix, and ended with every table equal to the reference database's.
fn compare(resumed: &Resumed, reference: &Reference) {
    let what = &resumed.what;
    let (stored, hash) = resumed.start;
    eprintln!("{what}: the completing run started from block {stored}");
    assert_eq!(
        hash, reference.hashes[stored as usize],
        "{what}: stored head"
    );
    assert_contains(
        &resumed.stdout,
        &format!(
            "imported {} blocks ({stored} already stored)",
            LAST - stored
        ),
    );
    for ((table, want), (_, got)) in reference.digests.iter().zip(&resumed.digests) {
        assert_eq!(got, want, "{what}: table {} differs", table.name());
    }
}

/// A database that ingested the whole chain without interruption.
struct Reference {
    digests: Digests,
    /// The canonical hash of every block, genesis included.
    hashes: Vec<B256>,
}

fn reference(datadir: &Path) -> Reference {
    let stdout = ingest_ok(datadir, &[&chain_path()]);
    let db = open_db(datadir);
    let reader = db.reader().unwrap();
    check_complete(&reader, &stdout);
    Reference {
        digests: digests(&reader),
        hashes: (0..=LAST)
            .map(|n| reader.canonical_hash(n).unwrap().unwrap())
            .collect(),
    }
}

/// Starts an ingest of `files` on a fresh datadir and kills it after `delay` milliseconds.
fn kill_after(files: &[&Path], delay: u64) -> TempDir {
    let dir = TempDir::new().unwrap();
    let mut child = ingest_command(dir.path(), files)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(delay));
    child.kill().unwrap();
    child.wait().unwrap();
    dir
}

/// Kills ingests of `files` on one datadir once each reaches a given block, each resuming from
/// what the one before it left, then completes the import. Also returns, for each killed run,
/// the block it was killed at and the head it started from.
fn kill_repeatedly_mid_run(files: &[&Path]) -> (Resumed, Vec<(u64, Head)>) {
    let dir = TempDir::new().unwrap();
    let mut starts = Vec::new();
    for (trigger, delay) in [(3, 0), (12, 1), (25, 2), (40, 0), (LAST, 1)] {
        let mut child = ingest_command(dir.path(), files)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let wanted = format!("importing {}", files[trigger as usize - 1].display());
        let mut seen = String::new();
        for line in BufReader::new(child.stderr.take().unwrap()).lines() {
            let line = line.unwrap();
            seen.push_str(&line);
            seen.push('\n');
            if line == wanted {
                std::thread::sleep(Duration::from_millis(delay));
                child.kill().unwrap();
                break;
            }
        }
        child.wait().unwrap();
        assert_contains(&seen, &wanted);
        starts.push((trigger, start_head(&seen)));
    }
    let resumed = resume(dir.path(), "killed mid-run repeatedly".into());
    (resumed, starts)
}

#[test]
fn killed_ingest_resumes_to_identical_database() {
    // The killed runs import one file per block, so they commit after every block.
    let files_dir = TempDir::new().unwrap();
    let files = per_block_files(&files_dir);
    let files: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let reference_dir = TempDir::new().unwrap();

    // Kills at fixed times on fresh datadirs, one at a time before anything else starts: in a
    // debug build they land before the database exists, while it is created and genesis stored,
    // and after block 1 while block 2 (most of the chain's gas) executes.
    let killed: Vec<(u64, TempDir)> = [0, 5, 15, 40]
        .into_iter()
        .map(|delay| (delay, kill_after(&files, delay)))
        .collect();

    // Each import (and the digest of its receipts) takes seconds in a debug build, so the
    // completing runs go side by side.
    let (reference, killed, (repeated, starts)) = std::thread::scope(|scope| {
        let files = &files;
        let killed: Vec<_> = killed
            .iter()
            .map(|(delay, dir)| {
                scope.spawn(move || resume(dir.path(), format!("killed after {delay} ms")))
            })
            .collect();
        let repeated = scope.spawn(move || kill_repeatedly_mid_run(files));
        let reference = reference(reference_dir.path());
        let killed: Vec<Resumed> = killed.into_iter().map(|run| run.join().unwrap()).collect();
        (reference, killed, repeated.join().unwrap())
    });
    for resumed in killed.iter().chain([&repeated]) {
        compare(resumed, &reference);
    }
    let mut committed = 0;
    for (trigger, (stored, hash)) in starts {
        assert_eq!(
            hash, reference.hashes[stored as usize],
            "stored head {stored}"
        );
        assert!(
            stored >= committed,
            "head went back from {committed} to {stored}"
        );
        // A run that reached file `trigger` had committed every earlier file.
        committed = trigger - 1;
    }
    assert!(repeated.start.0 >= committed);
}

/// The genesis.json allocation's storage: `(address, slot, value)`.
fn genesis_storage() -> Vec<(Address, B256, U256)> {
    let genesis = read_json("genesis.json");
    let mut out = Vec::new();
    for (address, account) in genesis["alloc"].as_object().unwrap() {
        let address = Address::from_str(address).unwrap();
        if let Some(storage) = account.get("storage") {
            for (slot, value) in storage.as_object().unwrap() {
                out.push((
                    address,
                    B256::from_str(slot).unwrap(),
                    U256::from_str(value.as_str().unwrap()).unwrap(),
                ));
            }
        }
    }
    out
}

/// The genesis.json value of a slot (zero when the allocation does not set it).
fn genesis_value(genesis: &[(Address, B256, U256)], address: &Address, slot: &B256) -> U256 {
    genesis
        .iter()
        .find(|(a, s, _)| a == address && s == slot)
        .map_or(U256::ZERO, |(_, _, value)| *value)
}

#[test]
fn storage_slot_history_at_old_blocks() {
    let chain = chain();
    let dir = TempDir::new().unwrap();
    let stdout = ingest_ok(dir.path(), &[&chain_path()]);
    let db = open_db(dir.path());
    let reader = db.reader().unwrap();
    check_complete(&reader, &stdout);

    // The genesis allocation's storage, as of block 0.
    let genesis = genesis_storage();
    assert!(!genesis.is_empty());
    for (address, slot, value) in &genesis {
        assert_eq!(reader.storage_at(address, slot, 0).unwrap(), *value);
    }

    // Scan every slot of every account with storage: its value after each block.
    let mut accounts = Vec::new();
    reader
        .for_each_account(|address, _| {
            accounts.push(address);
            Ok(())
        })
        .unwrap();
    let mut changed = Vec::new(); // (address, slot, n1, v1, n2, v2): v1 after n1, v2 after n2
    for address in &accounts {
        for (slot, latest) in reader.account_storage(address).unwrap() {
            let values: Vec<U256> = (0..=LAST)
                .map(|n| reader.storage_at(address, &slot, n).unwrap())
                .collect();
            assert_eq!(
                values[0],
                genesis_value(&genesis, address, &slot),
                "{address} {slot} at 0"
            );
            assert_eq!(values[LAST as usize], latest, "{address} {slot} at {LAST}");
            assert_eq!(reader.storage(address, &slot).unwrap(), latest);
            for n in 1..=LAST as usize {
                if values[n] != values[n - 1] && !values[n - 1].is_zero() {
                    changed.push((
                        *address,
                        slot,
                        n as u64 - 1,
                        values[n - 1],
                        n as u64,
                        values[n],
                    ));
                }
            }
        }
    }
    assert!(
        !changed.is_empty(),
        "no slot changed from one non-zero value to another"
    );

    // The genesis contract 0x7dcd..27df keeps a call counter in slot 0 and, for each call,
    // stores the counter's old value at keccak256(calldata):
    //   CALLDATACOPY; SHA3; SLOAD(0); SSTORE(hash, n); SSTORE(0, n + 1); LOG2
    let counter = Address::from_str("0x7dcd17433742f4c0ca53122ab541d0ba67fc27df").unwrap();
    assert!(
        changed
            .iter()
            .any(|(a, s, ..)| *a == counter && s.is_zero()),
        "the counter slot should be among the changing slots"
    );
    let mut calls = 0u64;
    for n in 1..=LAST {
        let calls_before = calls;
        for tx in &chain.block(n).body.transactions {
            if tx.to() != Some(counter) {
                continue;
            }
            let key = keccak256(tx.input());
            assert_eq!(
                reader.storage_at(&counter, &key, n - 1).unwrap(),
                U256::ZERO
            );
            assert_eq!(
                reader.storage_at(&counter, &key, n).unwrap(),
                U256::from(calls),
                "call {calls} in block {n}"
            );
            assert_eq!(
                reader.storage_at(&counter, &key, LAST).unwrap(),
                U256::from(calls)
            );
            calls += 1;
        }
        // The counter before and after block n.
        assert_eq!(
            reader.storage_at(&counter, &B256::ZERO, n - 1).unwrap(),
            U256::from(calls_before),
            "counter after block {}",
            n - 1
        );
        assert_eq!(
            reader.storage_at(&counter, &B256::ZERO, n).unwrap(),
            U256::from(calls),
            "counter after block {n}"
        );
    }
    assert!(calls > 10, "only {calls} calls to the counter");
    assert_eq!(
        reader.storage(&counter, &B256::ZERO).unwrap(),
        U256::from(calls)
    );

    // EIP-2935 (Prague, block 45 on): each block stores its parent's hash in slot
    // (number - 1) % 8191 of the history contract.
    let history = Address::from_str("0x0000f90827f1c53a10cb7a02335b175320002935").unwrap();
    for n in 45..=LAST {
        let slot = B256::from(U256::from(n - 1));
        let parent = U256::from_be_bytes(chain.hash(n - 1).0);
        assert_eq!(
            reader.storage_at(&history, &slot, n - 1).unwrap(),
            U256::ZERO
        );
        assert_eq!(
            reader.storage_at(&history, &slot, n).unwrap(),
            parent,
            "block {n}"
        );
        assert_eq!(reader.storage_at(&history, &slot, LAST).unwrap(), parent);
    }
    assert_eq!(
        reader
            .storage_at(&history, &B256::from(U256::from(43)), LAST)
            .unwrap(),
        U256::ZERO,
        "block 44 predates Prague"
    );

    // EIP-4788 (Cancun, block 42 on): the beacon roots contract stores the timestamp at
    // timestamp % 8191 and the parent beacon block root 8191 slots further.
    let beacon = Address::from_str("0x000f3df6d732807ef1319fb7b8bb8522d0beac02").unwrap();
    for n in 42..=LAST {
        let header = &chain.block(n).header;
        let time_slot = B256::from(U256::from(header.timestamp % 8191));
        let root_slot = B256::from(U256::from(header.timestamp % 8191 + 8191));
        let root = U256::from_be_bytes(header.parent_beacon_block_root.unwrap().0);
        for (slot, value) in [(time_slot, U256::from(header.timestamp)), (root_slot, root)] {
            assert_eq!(
                reader.storage_at(&beacon, &slot, n - 1).unwrap(),
                U256::ZERO
            );
            assert_eq!(
                reader.storage_at(&beacon, &slot, n).unwrap(),
                value,
                "block {n}"
            );
        }
    }
}

/// A chain given as two files split at a coarse window's first block (as consecutive era
/// files are): the second import opens that window whole, after thinning the first file's
/// last fine windows, which hold the table's last trie changesets; deleting the last of them
/// once left the cursor at the table's end, and the import failed. Both imports keep every
/// block, and the datadir equals one imported from a single file.
#[test]
fn a_chain_split_at_a_coarse_window_imports_in_two_files() {
    let dir = TempDir::new().unwrap();
    let chain = dir.path().join("chain");
    support::devchain(
        &chain,
        &["--forks", "pow", "--blocks", "3072", "--txs-per-block", "1"],
    );
    let blocks = support::decode_blocks(&std::fs::read(chain.join("chain.rlp")).unwrap());
    let first = write_file(&dir, "first.rlp", &encode_blocks(&blocks[..1023]));
    let second = write_file(&dir, "second.rlp", &encode_blocks(&blocks[1023..]));
    let genesis = chain.join("genesis.json");
    let run = |datadir: &Path, files: &[&Path]| {
        let mut args = vec![
            "ingest".as_ref(),
            "--genesis".as_ref(),
            genesis.as_os_str(),
            "--datadir".as_ref(),
            datadir.as_os_str(),
        ];
        args.extend(files.iter().map(|f| f.as_os_str()));
        support::run_quarry(args).0
    };
    let split = dir.path().join("split");
    run(&split, &[&first]);
    assert_eq!(support::stored_head(&split).0, 1023);
    let stdout = run(&split, &[&second]);
    assert_eq!(support::stored_head(&split).0, 3072);
    let whole = dir.path().join("whole");
    let expected = run(&whole, &[&chain.join("chain.rlp")]);
    assert_eq!(stdout.lines().last(), expected.lines().last());
    let state = |datadir: &Path| {
        let db = open_db(datadir);
        let reader = db.reader().unwrap();
        [
            Table::PlainAccounts,
            Table::PlainStorage,
            Table::AccountsTrie,
        ]
        .map(|table| reader.table_digest(table).unwrap())
    };
    assert_eq!(state(&split), state(&whole));
}
