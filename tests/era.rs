//! Public networks by name and era1 history files, end to end with the real binary, on mainnet's
//! real era 0 (testdata/era1, blocks 0–8191): import, serve, export and import again, and every
//! kind of bad input. Expected values come from outside quarry: the published block 8191 hash
//! and total difficulty, the published genesis hashes, and a miner's balance summed here from
//! the file's own headers and uncles by the Frontier reward rules.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_consensus::Header;
use alloy_primitives::{Address, B256, U256, b256};
use alloy_rlp::Decodable;
use serde_json::json;
use std::{
    ffi::{OsStr, OsString},
    io::Read,
    path::{Path, PathBuf},
    sync::OnceLock,
};
use support::{Server, ingest_args, quarry_fails, run_quarry, stored_head};

const ERA0_NAME: &str = "mainnet-00000-5ec1ffb8.era1";
const BLOCK_8191: B256 =
    b256!("0xa6860fefa339c963e1bb622526cc8dd4344eedd2a9b969e74de5cccc445fbed4");
const TD_8191: &str = "0x4c6ed9b5e35a8";

fn era0() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/era1")
        .join(ERA0_NAME)
}

fn quarry<S: AsRef<OsStr>>(args: &[S]) -> (String, String) {
    run_quarry(args.iter().map(AsRef::as_ref))
}

fn fails<S: AsRef<OsStr>>(args: &[S]) -> String {
    quarry_fails(args.iter().map(AsRef::as_ref))
}

/// What `quarry ingest` prints last once mainnet's era 0 is stored.
fn assert_mainnet_head(stdout: &str) {
    assert!(
        stdout.contains(&format!("head: block 8191 ({BLOCK_8191})")),
        "{stdout}"
    );
}

fn os(text: &str) -> &OsStr {
    OsStr::new(text)
}

/// The arguments of `quarry ingest` of `files` into `datadir`, which knows its chain.
fn ingest_into<'a>(datadir: &'a Path, files: &[&'a Path]) -> Vec<&'a OsStr> {
    let mut args = vec![os("ingest"), os("--datadir"), datadir.as_os_str()];
    args.extend(files.iter().map(|file| file.as_os_str()));
    args
}

/// The arguments of `quarry ingest --chain <chain>` of `files` into `datadir`.
fn ingest_chain<'a>(chain: &'a str, datadir: &'a Path, files: &[&'a Path]) -> Vec<&'a OsStr> {
    let mut args = vec![os("ingest"), os("--chain"), os(chain)];
    args.extend(ingest_into(datadir, files).into_iter().skip(1));
    args
}

/// A datadir holding mainnet's era 0, imported once per test binary run.
fn mainnet_era0() -> &'static Path {
    static DATADIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, datadir) = DATADIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let datadir = dir.path().join("mainnet");
        let (stdout, _) = quarry(&ingest_mainnet(&datadir, &era0()));
        assert_mainnet_head(&stdout);
        (dir, datadir)
    });
    datadir
}

/// One e2store record: its type and data.
type Record = (u16, Vec<u8>);

/// An e2store file's records, read here by the format's definition (not quarry's reader).
fn records(path: &Path) -> Vec<Record> {
    let bytes = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let kind = u16::from_le_bytes([bytes[at], bytes[at + 1]]);
        let len = u32::from_le_bytes(bytes[at + 2..at + 6].try_into().unwrap()) as usize;
        out.push((kind, bytes[at + 8..at + 8 + len].to_vec()));
        at += 8 + len;
    }
    out
}

/// A record's data, decompressed when it is snappy-framed (header, body, receipts).
fn plain((kind, data): &Record) -> Vec<u8> {
    if matches!(kind, 3..=5) {
        let mut out = Vec::new();
        snap::read::FrameDecoder::new(data.as_slice())
            .read_to_end(&mut out)
            .unwrap();
        out
    } else {
        data.clone()
    }
}

/// Frontier's rewards (no transactions in era 0, so no fees): the miner of a block gets 5 ether
/// plus 1/32 of that per uncle, an uncle's miner (8 + uncle - block) / 8 of 5 ether.
fn balance_from_rewards(path: &Path, who: Address, genesis_balance: U256) -> U256 {
    let ether = U256::from(10).pow(U256::from(18));
    let reward = ether * U256::from(5);
    let mut balance = genesis_balance;
    let all = records(path);
    let headers: Vec<&Record> = all.iter().filter(|r| r.0 == 3).collect();
    let bodies: Vec<&Record> = all.iter().filter(|r| r.0 == 4).collect();
    for (header, body) in headers.iter().zip(&bodies) {
        let header = Header::decode(&mut plain(header).as_slice()).unwrap();
        let body = plain(body);
        let mut rest = body.as_slice();
        alloy_rlp::Header::decode(&mut rest).unwrap();
        let _transactions = alloy_rlp::Header::decode_bytes(&mut rest, true).unwrap();
        let uncles: Vec<Header> = Vec::decode(&mut rest).unwrap();
        if header.number == 0 {
            continue;
        }
        if header.beneficiary == who {
            balance += reward + reward / U256::from(32) * U256::from(uncles.len());
        }
        for uncle in uncles.iter().filter(|u| u.beneficiary == who) {
            balance += reward * U256::from(8 + uncle.number - header.number) / U256::from(8);
        }
    }
    balance
}

#[test]
fn mainnet_era0_imports_verified_and_answers_for_mainnet() {
    let datadir = mainnet_era0();
    let server = Server::start(datadir, "");
    let block = server.result("eth_getBlockByNumber", json!(["0x1fff", false]));
    assert_eq!(block["hash"], json!(BLOCK_8191.to_string()));
    assert_eq!(block["totalDifficulty"], json!(TD_8191));
    assert_eq!(server.result("eth_chainId", json!([])), json!("0x1"));
    assert_eq!(server.result("net_version", json!([])), json!("1"));

    // Block 8191's miner, its balance summed from the file's headers and uncles.
    let miner: Address = serde_json::from_value(block["miner"].clone()).unwrap();
    let genesis: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("executor/res/genesis/mainnet.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let allocated = genesis["alloc"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(address, _)| address.parse::<Address>().unwrap() == miner)
        .map_or(U256::ZERO, |(_, account)| {
            account["balance"].as_str().unwrap().parse().unwrap()
        });
    let expected = balance_from_rewards(&era0(), miner, allocated);
    let balance = server.result("eth_getBalance", json!([miner, "0x1fff"]));
    assert_eq!(balance, json!(format!("{expected:#x}")), "miner {miner}");

    // The 1,410 uncles of era 0 are all served where the file has them.
    let all = records(&era0());
    let mut uncles = 0;
    let mut calls = Vec::new();
    for (number, body) in all.iter().filter(|r| r.0 == 4).enumerate() {
        let body = plain(body);
        let mut rest = body.as_slice();
        alloy_rlp::Header::decode(&mut rest).unwrap();
        alloy_rlp::Header::decode_bytes(&mut rest, true).unwrap();
        let count = Vec::<Header>::decode(&mut rest).unwrap().len();
        uncles += count;
        if count > 0 && calls.len() < 100 {
            calls.push((number, count));
        }
    }
    assert_eq!(uncles, 1410);
    let answers = server.batch(
        &calls
            .iter()
            .map(|(n, _)| ("eth_getUncleCountByBlockNumber", json!([format!("{n:#x}")])))
            .collect::<Vec<_>>(),
    );
    for ((number, count), answer) in calls.iter().zip(answers) {
        assert_eq!(
            answer["result"],
            json!(format!("{count:#x}")),
            "block {number}"
        );
    }
}

#[test]
fn every_network_writes_its_published_genesis_and_the_datadir_remembers_it() {
    let dir = tempfile::tempdir().unwrap();
    let published = [
        (
            "mainnet",
            "0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3",
        ),
        (
            "sepolia",
            "0x25a5cc106eea7138acab33231d7160d69cb777ee0c2c553fcddf5138993e6dd9",
        ),
        (
            "holesky",
            "0xb5f7f912443c940f21fd611f12828d75b534364ed9e95ca4e307729a4661bde4",
        ),
        (
            "hoodi",
            "0xbbe312868b376a3001692a646dd2d7d1e4406380dfd86b98aa8a34d1557c971b",
        ),
    ];
    for (network, hash) in published {
        let datadir = dir.path().join(network);
        let (stdout, _) = quarry(&ingest_chain(network, &datadir, &[]));
        assert!(
            stdout.contains(&format!("head: block 0 ({hash})")),
            "{network}: {stdout}"
        );
    }
    let sepolia = dir.path().join("sepolia");
    // Later commands need no --chain; another network's is refused.
    let (stdout, _) = quarry(&ingest_into(&sepolia, &[]));
    assert!(stdout.contains("head: block 0 (0x25a5cc10"), "{stdout}");
    let err = fails(&ingest_chain("mainnet", &sepolia, &[]));
    assert!(err.contains("holds sepolia, not mainnet"), "{err}");
    let devnet = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet/genesis.json");
    let err = fails(&ingest_args(&sepolia, &devnet, &[]));
    assert!(err.contains("different chain"), "{err}");
    let empty = dir.path().join("empty");
    let err = fails(&ingest_into(&empty, &[]));
    assert!(
        err.contains("holds no chain yet") && err.contains("--chain"),
        "{err}"
    );
    assert!(
        !empty.exists(),
        "a refused ingest created {}",
        empty.display()
    );
    let err = fails(&ingest_chain("goerli", &empty, &[]));
    assert!(err.contains("goerli"), "{err}");

    let server = Server::start(&sepolia, "");
    assert_eq!(server.result("eth_chainId", json!([])), json!("0xaa36a7"));
    assert_eq!(server.result("net_version", json!([])), json!("11155111"));
}

#[test]
fn export_then_import_gives_identical_records() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (stdout, _) = quarry(&[
        os("export-era"),
        os("--datadir"),
        mainnet_era0().as_os_str(),
        os("--out"),
        out.as_os_str(),
    ]);
    assert!(stdout.contains("blocks 0 to 8191"), "{stdout}");
    let exported = out.join(ERA0_NAME);
    let (original, copy) = (records(&era0()), records(&exported));
    assert_eq!(original.len(), copy.len());
    for (i, (a, b)) in original.iter().zip(&copy).enumerate() {
        assert_eq!(a.0, b.0, "record {i}'s type");
        assert_eq!(plain(a), plain(b), "record {i} (type {:#x})", a.0);
    }
    // checksums.txt as geth and reth write it: one 0x-prefixed sha256 a line.
    let list = std::fs::read_to_string(out.join("checksums.txt")).unwrap();
    let sum = {
        use sha2::Digest;
        alloy_primitives::hex::encode(sha2::Sha256::digest(std::fs::read(&exported).unwrap()))
    };
    assert_eq!(list, format!("0x{sum}\n"));

    // The folder imports again, checked against its checksums.txt.
    let datadir = dir.path().join("again");
    let (stdout, _) = quarry(&ingest_mainnet(&datadir, &out));
    assert_mainnet_head(&stdout);

    let err = fails(&[
        os("export-era"),
        os("--datadir"),
        mainnet_era0().as_os_str(),
        os("--out"),
        dir.path().join("later").as_os_str(),
        os("--from-era"),
        os("1"),
        os("--to-era"),
        os("1"),
    ]);
    assert!(
        err.contains("era 1 starts at block 8192") && err.contains("8191"),
        "{err}"
    );
}

/// A copy of era 0 with one byte of record `index`'s data changed, named `name`.
fn damaged_copy(dir: &Path, name: &str, record: usize, at: usize) -> PathBuf {
    let mut bytes = std::fs::read(era0()).unwrap();
    let mut offset = 0;
    for _ in 0..record {
        let len = u32::from_le_bytes(bytes[offset + 2..offset + 6].try_into().unwrap()) as usize;
        offset += 8 + len;
    }
    bytes[offset + 8 + at] ^= 0x55;
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn ingest_mainnet<'a>(datadir: &'a Path, file: &'a Path) -> Vec<&'a OsStr> {
    ingest_chain("mainnet", datadir, &[file])
}

#[test]
fn a_damaged_record_keeps_the_blocks_before_it_and_a_good_file_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    // Record 1 + 4 * 5000 + 1 is block 5000's body; its last byte is inside a CRC-checked chunk.
    let body = 1 + 4 * 5000 + 1;
    let file = damaged_copy(dir.path(), "damaged.era1", body, 20);
    let datadir = dir.path().join("d");
    let err = fails(&ingest_mainnet(&datadir, &file));
    assert!(
        err.contains("damaged.era1") && err.contains("block 5000"),
        "{err}"
    );
    assert_eq!(stored_head(&datadir).0, 4999);
    let (stdout, _) = quarry(&ingest_mainnet(&datadir, &era0()));
    assert_mainnet_head(&stdout);
}

#[test]
fn a_damaged_file_under_its_published_name_fails_its_checksum_first() {
    let dir = tempfile::tempdir().unwrap();
    let file = damaged_copy(dir.path(), ERA0_NAME, 1 + 4 * 100, 10);
    let datadir = dir.path().join("d");
    let err = fails(&ingest_mainnet(&datadir, &file));
    assert!(
        err.contains(ERA0_NAME) && err.contains("sha256") && err.contains("9c3f42e0"),
        "{err}"
    );
    assert_eq!(stored_head(&datadir).0, 0);

    // A list given with --era-checksums vouches for files of other names.
    let renamed = dir.path().join("renamed.era1");
    std::fs::copy(&file, &renamed).unwrap();
    let list = dir.path().join("list.txt");
    std::fs::write(&list, format!("{}  renamed.era1\n", "00".repeat(32))).unwrap();
    let mut args = ingest_mainnet(&datadir, &renamed);
    args.extend([os("--era-checksums"), list.as_os_str()]);
    let err = fails(&args);
    assert!(
        err.contains("renamed.era1") && err.contains("list.txt"),
        "{err}"
    );
}

#[test]
fn a_damaged_header_or_accumulator_imports_nothing_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = dir.path().join("d");
    // Block 3000's header record: the file's accumulator no longer holds (or its CRC fails).
    let header = damaged_copy(dir.path(), "header.era1", 1 + 4 * 3000, 30);
    let err = fails(&ingest_mainnet(&datadir, &header));
    assert!(
        err.contains("header.era1") && err.contains("block 3000"),
        "{err}"
    );
    assert_eq!(stored_head(&datadir).0, 0);
    let accumulator = damaged_copy(dir.path(), "acc.era1", 1 + 4 * 8192, 0);
    let err = fails(&ingest_mainnet(&datadir, &accumulator));
    assert!(
        err.contains("acc.era1") && err.contains("accumulator"),
        "{err}"
    );
    // A total difficulty that is not the sum of the difficulties.
    let td = damaged_copy(dir.path(), "td.era1", 1 + 4 * 77 + 3, 0);
    let err = fails(&ingest_mainnet(&datadir, &td));
    assert!(
        err.contains("td.era1") && err.contains("block 77") && err.contains("total difficulty"),
        "{err}"
    );
    // The block index must name the header records where they stand.
    let index = damaged_copy(dir.path(), "index.era1", 1 + 4 * 8192 + 1, 8 + 8 * 12);
    let err = fails(&ingest_mainnet(&datadir, &index));
    assert!(
        err.contains("index.era1") && err.contains("block 12") && err.contains("index"),
        "{err}"
    );
    assert_eq!(stored_head(&datadir).0, 0);
}

#[test]
fn truncated_foreign_and_unreadable_files_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = dir.path().join("d");
    let bytes = std::fs::read(era0()).unwrap();
    let truncated = dir.path().join("truncated.era1");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let err = fails(&ingest_mainnet(&datadir, &truncated));
    assert!(
        err.contains("truncated.era1") && err.contains("ends"),
        "{err}"
    );
    assert_eq!(stored_head(&datadir).0, 0);

    // Not an era file at all: neither e2store nor RLP blocks.
    let text = dir.path().join("notes.era1");
    std::fs::write(&text, "these are not blocks\n").unwrap();
    let err = fails(&ingest_mainnet(&datadir, &text));
    assert!(err.contains("notes.era1") && err.contains("era"), "{err}");

    // An e2store file of another kind (a consensus-layer era file's block record).
    let mut other = bytes[..8].to_vec();
    other.extend_from_slice(&[0x01, 0x00, 0x02, 0, 0, 0, 0, 0, 0xaa, 0xbb]);
    let beacon = dir.path().join("beacon.era");
    std::fs::write(&beacon, other).unwrap();
    let err = fails(&ingest_mainnet(&datadir, &beacon));
    assert!(
        err.contains("beacon.era") && err.contains("0x0001"),
        "{err}"
    );

    // Mainnet's history into a Sepolia datadir.
    let sepolia = dir.path().join("sepolia");
    let err = fails(&ingest_chain("sepolia", &sepolia, &[&era0()]));
    assert!(
        err.contains(ERA0_NAME) && err.contains("another network") && err.contains("sepolia"),
        "{err}"
    );
    assert_eq!(stored_head(&sepolia).0, 0);

    let err = fails(&ingest_mainnet(&datadir, &dir.path().join("missing.era1")));
    assert!(err.contains("missing.era1"), "{err}");
}

#[test]
fn era1_holds_only_pre_merge_blocks() {
    // The bundled devnet merges at block 12: by default its first 12 blocks are written, and
    // asking for the whole era points to ere.
    let dir = tempfile::tempdir().unwrap();
    let devnet = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet");
    let datadir = dir.path().join("devnet");
    quarry(&ingest_args(
        &datadir,
        &devnet.join("genesis.json"),
        &[&devnet.join("chain.rlp")],
    ));
    let out = dir.path().join("out");
    let (stdout, _) = quarry(&[
        os("export-era"),
        os("--datadir"),
        datadir.as_os_str(),
        os("--out"),
        out.as_os_str(),
    ]);
    assert!(stdout.contains("blocks 0 to 11"), "{stdout}");
    let err = fails(&[
        os("export-era"),
        os("--datadir"),
        datadir.as_os_str(),
        os("--out"),
        out.as_os_str(),
        os("--to-era"),
        os("0"),
    ]);
    assert!(
        err.contains("block 12") && err.contains("--format ere"),
        "{err}"
    );

    // The pre-merge part, with its transactions and receipts, imports again.
    let again = dir.path().join("again");
    let (stdout, _) = quarry(&ingest_args(&again, &devnet.join("genesis.json"), &[&out]));
    assert!(stdout.contains("head: block 11 "), "{stdout}");
}

/// Every record of an e2store file, decompressed, by type.
fn plain_records(path: &Path) -> Vec<(u16, Vec<u8>)> {
    records(path)
        .iter()
        .map(|record| {
            let kind = record.0;
            let data = if matches!(kind, 3 | 4 | 5 | 0x0a) {
                let mut out = Vec::new();
                snap::read::FrameDecoder::new(record.1.as_slice())
                    .read_to_end(&mut out)
                    .unwrap();
                out
            } else {
                record.1.clone()
            };
            (kind, data)
        })
        .collect()
}

fn export(datadir: &Path, out: &Path, format: &str) -> String {
    quarry(&[
        os("export-era"),
        os("--datadir"),
        datadir.as_os_str(),
        os("--out"),
        out.as_os_str(),
        os("--format"),
        os(format),
    ])
    .0
}

fn only_file(dir: &Path, extension: &str) -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.pop().unwrap()
}

#[test]
fn a_post_merge_chain_exports_as_ere_and_imports_again_with_identical_records() {
    let dir = tempfile::tempdir().unwrap();
    let devnet = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet");
    let genesis = devnet.join("genesis.json");
    let datadir = dir.path().join("devnet");
    let (stdout, _) = quarry(&ingest_args(
        &datadir,
        &genesis,
        &[&devnet.join("chain.rlp")],
    ));
    let head = stdout.lines().last().unwrap().to_string();
    let out = dir.path().join("ere");
    let stdout = export(&datadir, &out, "ere");
    assert!(stdout.contains("blocks 0 to 64"), "{stdout}");
    let file = only_file(&out, "ere");
    // reth's name: the network (the chain id of an unnamed one), the era, the first 4 bytes of
    // the last block's hash.
    let hash = head.split('(').nth(1).unwrap();
    let name = file.file_name().unwrap().to_str().unwrap();
    assert_eq!(name, format!("1337-00000-{}-noproofs.ere", &hash[2..10]));
    // Sectioned by type: 65 headers, 65 bodies, 65 slim receipts, total difficulties (the file
    // starts before the merge), the accumulator of the 12 pre-merge blocks, the index.
    let kinds: Vec<u16> = plain_records(&file).iter().map(|r| r.0).collect();
    let count = |kind| kinds.iter().filter(|&&k| k == kind).count();
    assert_eq!(
        (count(3), count(4), count(0x0a), count(6)),
        (65, 65, 65, 65)
    );
    assert_eq!(kinds[1..66], [3; 65]);
    assert_eq!(kinds.last(), Some(&0x3267));

    let again = dir.path().join("again");
    let (stdout, _) = quarry(&ingest_args(&again, &genesis, &[&out]));
    assert_eq!(stdout.lines().last().unwrap(), head);
    let out2 = dir.path().join("ere2");
    export(&again, &out2, "ere");
    assert_eq!(
        plain_records(&file),
        plain_records(&only_file(&out2, "ere"))
    );
    // Blocks from an ere file serve their (executed) receipts.
    let served = Server::start(&again, "");
    let receipts = served.result("eth_getBlockReceipts", json!(["0x20"]));
    assert!(!receipts.as_array().unwrap().is_empty());

    // Mainnet's era 0 as ere too: named by block 8191's hash, as published.
    let out3 = dir.path().join("mainnet-ere");
    export(mainnet_era0(), &out3, "ere");
    let file = only_file(&out3, "ere");
    assert!(
        file.ends_with("mainnet-00000-a6860fef-noproofs.ere"),
        "{file:?}"
    );
    let mainnet = dir.path().join("mainnet");
    let (stdout, _) = quarry(&ingest_mainnet(&mainnet, &out3));
    assert_mainnet_head(&stdout);
}

#[test]
fn a_damaged_ere_file_is_named_with_its_block() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ere");
    export(mainnet_era0(), &out, "ere");
    let file = only_file(&out, "ere");
    let mut bytes = std::fs::read(&file).unwrap();
    // Block 6000's body record: the 1 + 8192 + 6000th record.
    let mut offset = 0;
    for _ in 0..1 + 8192 + 6000 {
        let len = u32::from_le_bytes(bytes[offset + 2..offset + 6].try_into().unwrap()) as usize;
        offset += 8 + len;
    }
    assert_eq!(bytes[offset], 4);
    let len = u32::from_le_bytes(bytes[offset + 2..offset + 6].try_into().unwrap()) as usize;
    bytes[offset + 8 + len - 1] ^= 0x55;
    let damaged = dir.path().join("damaged.ere");
    std::fs::write(&damaged, bytes).unwrap();
    let datadir = dir.path().join("d");
    let err = fails(&ingest_mainnet(&datadir, &damaged));
    assert!(
        err.contains("damaged.ere") && err.contains("block 6000"),
        "{err}"
    );
    assert_eq!(stored_head(&datadir).0, 5999);
}

/// A plain HTTP server on 127.0.0.1 serving `routes` (path to body; others 404), one request a
/// connection, for as long as the test binary runs. Returns its base URL.
fn serve_files(routes: Vec<(String, Vec<u8>)>) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut line = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            // The rest of the head.
            let mut header = String::new();
            while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                header.clear();
            }
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
            let found = routes.iter().find(|(route, _)| *route == path);
            let (status, body) = match found {
                Some((_, body)) => ("200 OK", body.clone()),
                None => ("404 Not Found", b"not found".to_vec()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    format!("http://{addr}")
}

fn ingest_url(datadir: &Path, url: &str) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["ingest", "--chain", "mainnet", "--era-url", url]
        .map(OsString::from)
        .to_vec();
    args.extend(["--datadir".into(), datadir.into()]);
    args
}

#[test]
fn a_published_folder_imports_over_http_and_a_lying_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = std::fs::read(era0()).unwrap();
    let sum = {
        use sha2::Digest;
        alloy_primitives::hex::encode(sha2::Sha256::digest(&file))
    };
    let index = format!(
        "<html><a href=\"{ERA0_NAME}\">{ERA0_NAME}</a> <a href=\"checksums.txt\">sums</a></html>"
    );
    let good = serve_files(vec![
        ("/era1/index.html".into(), index.clone().into_bytes()),
        (
            "/era1/checksums.txt".into(),
            format!("0x{sum}\n").into_bytes(),
        ),
        (format!("/era1/{ERA0_NAME}"), file.clone()),
    ]);
    let datadir = dir.path().join("good");
    let (stdout, _) = quarry(&ingest_url(&datadir, &format!("{good}/era1/index.html")));
    assert_mainnet_head(&stdout);
    // The downloaded file is gone once imported; running again has nothing left to fetch.
    assert_eq!(
        std::fs::read_dir(datadir.join("era-download"))
            .unwrap()
            .count(),
        0
    );
    let (stdout, _) = quarry(&ingest_url(&datadir, &format!("{good}/era1/")));
    assert!(stdout.contains("imported 0 blocks"), "{stdout}");

    // A server whose file is not the one its own list names.
    let mut damaged = file.clone();
    damaged[file.len() / 2] ^= 0x55;
    let lying = serve_files(vec![
        ("/index.html".into(), index.into_bytes()),
        ("/checksums.txt".into(), format!("0x{sum}\n").into_bytes()),
        (format!("/{ERA0_NAME}"), damaged),
    ]);
    let datadir = dir.path().join("lying");
    let err = fails(&ingest_url(&datadir, &format!("{lying}/index.html")));
    assert!(
        err.contains(ERA0_NAME) && err.contains("sha256") && err.contains(&sum),
        "{err}"
    );
    assert_eq!(stored_head(&datadir).0, 0);
    assert_eq!(
        std::fs::read_dir(datadir.join("era-download"))
            .unwrap()
            .count(),
        0
    );

    // A file that no list vouches for is not downloaded.
    let renamed = "other-00000-00000000.era1";
    let unlisted = serve_files(vec![
        (
            "/index.html".into(),
            format!("<a href=\"{renamed}\">").into_bytes(),
        ),
        (format!("/{renamed}"), file),
    ]);
    let err = fails(&ingest_url(
        &dir.path().join("unlisted"),
        &format!("{unlisted}/index.html"),
    ));
    assert!(
        err.contains(renamed) && err.contains("checksums.txt"),
        "{err}"
    );

    // Nobody listening.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let url = format!("http://{closed}/era1/");
    let err = fails(&ingest_url(&dir.path().join("closed"), &url));
    assert!(err.contains(&url) && err.contains("cannot read"), "{err}");
}

/// A proof-of-work chain of two eras (8,200 blocks, legacy, access-list and EIP-1559
/// transactions with logs, uncles), ingested once per test binary run.
fn pow_chain() -> &'static (tempfile::TempDir, PathBuf, String) {
    static CHAIN: OnceLock<(tempfile::TempDir, PathBuf, String)> = OnceLock::new();
    CHAIN.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let chain = dir.path().join("chain");
        support::devchain(
            &chain,
            &["--forks", "pow", "--blocks", "8200", "--txs-per-block", "2"],
        );
        let datadir = dir.path().join("datadir");
        let (stdout, _) = quarry(&ingest_args(
            &datadir,
            &chain.join("genesis.json"),
            &[&chain.join("chain.rlp")],
        ));
        let head = stdout.lines().last().unwrap().to_string();
        assert!(head.starts_with("head: block 8200 "), "{head}");
        (dir, datadir, head)
    })
}

#[test]
fn a_transaction_heavy_pre_merge_chain_round_trips_through_era1_and_ere() {
    let (chain_dir, datadir, head) = pow_chain();
    let genesis = chain_dir.path().join("chain/genesis.json");
    let dir = tempfile::tempdir().unwrap();
    for format in ["era1", "ere"] {
        let out = dir.path().join(format);
        let stdout = export(datadir, &out, format);
        assert!(
            stdout.contains("blocks 0 to 8191") && stdout.contains("blocks 8192 to 8200"),
            "{stdout}"
        );
        let mut files: Vec<PathBuf> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == format))
            .collect();
        files.sort();
        assert_eq!(files.len(), 2, "{files:?}");

        // Era 1 before era 0: the message names the expected and the found block.
        let fresh = dir.path().join(format!("{format}-fresh"));
        let err = fails(&ingest_args(&fresh, &genesis, &[&files[1], &files[0]]));
        assert!(
            err.contains("expected block 1 next") && err.contains("starts at block 8192"),
            "{err}"
        );
        assert_eq!(stored_head(&fresh).0, 0);

        // The folder, in order, checked against its checksums.txt: the same chain again.
        let (stdout, _) = quarry(&ingest_into(&fresh, &[&out]));
        assert_eq!(stdout.lines().last().unwrap(), head);
        let again = dir.path().join(format!("{format}-again"));
        export(&fresh, &again, format);
        for file in &files {
            let copy = again.join(file.file_name().unwrap());
            assert_eq!(plain_records(file), plain_records(&copy), "{copy:?}");
        }
    }
}

#[test]
fn a_folder_whose_checksums_txt_disagrees_is_refused_before_any_block() {
    let (chain_dir, datadir, _) = pow_chain();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("era1");
    export(datadir, &out, "era1");
    let list = out.join("checksums.txt");
    let text = std::fs::read_to_string(&list).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[0] = format!("0x{}", "11".repeat(32));
    std::fs::write(&list, lines.join("\n")).unwrap();
    let fresh = dir.path().join("fresh");
    let err = fails(&ingest_args(
        &fresh,
        &chain_dir.path().join("chain/genesis.json"),
        &[&out],
    ));
    assert!(
        err.contains("checksums.txt") && err.contains(&"11".repeat(32)),
        "{err}"
    );
    assert_eq!(stored_head(&fresh).0, 0);
}

/// A datadir filled from era files goes on with an RLP file or with `quarry follow`, naming no
/// chain: the datadir knows it.
#[test]
fn a_datadir_filled_from_era_files_goes_on_with_rlp_or_follow() {
    let (chain_dir, datadir, head) = pow_chain();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("era1");
    export(datadir, &out, "era1");
    let era0 = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("-00000-"))
        .unwrap();
    let genesis = chain_dir.path().join("chain/genesis.json");
    let from_era = |name: &str| {
        let target = dir.path().join(name);
        quarry(&ingest_args(&target, &genesis, &[&era0]));
        assert_eq!(stored_head(&target).0, 8191);
        target
    };

    let rlp = from_era("rlp");
    let (stdout, _) = quarry(&ingest_into(
        &rlp,
        &[&chain_dir.path().join("chain/chain.rlp")],
    ));
    assert_eq!(stdout.lines().last().unwrap(), head);

    let followed = from_era("follow");
    let upstream = Server::start(datadir, "");
    let mut child = std::process::Command::new(support::QUARRY)
        .args(["follow", "--datadir"])
        .arg(&followed)
        .args([
            "--upstream",
            &upstream.http_url(support::KEY),
            "--poll-ms",
            "20",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let wanted: B256 = head.split(['(', ')']).nth(1).unwrap().parse().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while stored_head(&followed).1 != wanted {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "follow did not reach {wanted}: {:?}",
                stored_head(&followed)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `quarry dev --chain mainnet` serves mainnet's era 0 from the copy in testdata.
#[test]
fn dev_serves_mainnet_era0() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(support::QUARRY)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "dev",
            "--chain",
            "mainnet",
            "--listen",
            "127.0.0.1:0",
            "--datadir",
        ])
        .arg(dir.path().join("mainnet"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The import's summary comes first.
    let line = std::io::BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(Result::unwrap)
        .find(|line| line.starts_with("listening on"))
        .unwrap();
    let addr = line
        .strip_prefix("listening on http://")
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("{line:?}"))
        .to_string();
    let body =
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}"#;
    let mut response = ureq::post(format!("http://{addr}/v3/dev-key"))
        .header("Content-Type", "application/json")
        .send(body)
        .unwrap();
    let answer: serde_json::Value =
        serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        answer["result"]["hash"],
        json!(BLOCK_8191.to_string()),
        "{answer}"
    );
    assert_eq!(answer["result"]["number"], json!("0x1fff"));
}
