//! The genesis block of a chain whose forks start at block 0 (geth --dev, reth --dev, anvil):
//! its header, body, RPC object and raw bytes follow geth's `Genesis.ToBlock` rules. The
//! expected values are built here from those rules (and the state root with alloy-trie from the
//! allocation), never from quarry's own output.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_consensus::{EMPTY_OMMER_ROOT_HASH, Header};
use alloy_eips::eip7685::EMPTY_REQUESTS_HASH;
use alloy_primitives::{B64, B256, Bytes, U256, hex};
use alloy_rlp::Encodable;
use alloy_trie::EMPTY_ROOT_HASH;
use serde_json::{Value, json};
use std::path::Path;
use support::{Server, ingest_args, run_quarry};

/// The last fork active at genesis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum LastFork {
    London,
    Shanghai,
    Cancun,
    Prague,
    Osaka,
}

/// The genesis.json of `quarry devchain --forks genesis`, cut back to forks through `last`.
fn genesis_through(all_forks: &Value, last: LastFork) -> Value {
    let mut genesis = all_forks.clone();
    let config = genesis["config"].as_object_mut().unwrap();
    let later = [
        (LastFork::London, "shanghaiTime", None),
        (LastFork::Shanghai, "cancunTime", Some("cancun")),
        (LastFork::Cancun, "pragueTime", Some("prague")),
        (LastFork::Prague, "osakaTime", Some("osaka")),
    ];
    for (fork, time, blobs) in later {
        if last <= fork {
            config.remove(time);
            if let Some(blobs) = blobs {
                config["blobSchedule"]
                    .as_object_mut()
                    .unwrap()
                    .remove(blobs);
            }
        }
    }
    genesis
}

/// Block 0 by geth's rules: each fork's header fields exactly when the fork is active at
/// genesis, zero where geth fills them (blob gas, the parent beacon root), and an empty
/// withdrawals list in the body from Shanghai on.
fn expected_header(genesis: &Value, last: LastFork) -> Header {
    let parsed: alloy_genesis::Genesis = serde_json::from_value(genesis.clone()).unwrap();
    let quantity = |field: &str| {
        u64::from_str_radix(
            genesis[field].as_str().unwrap().trim_start_matches("0x"),
            16,
        )
        .unwrap()
    };
    let state_root = alloy_trie::root::state_root_unhashed(parsed.alloc.clone());
    Header {
        parent_hash: B256::ZERO,
        ommers_hash: EMPTY_OMMER_ROOT_HASH,
        beneficiary: parsed.coinbase,
        state_root,
        transactions_root: EMPTY_ROOT_HASH,
        receipts_root: EMPTY_ROOT_HASH,
        logs_bloom: Default::default(),
        difficulty: U256::ZERO,
        number: 0,
        gas_limit: quantity("gasLimit"),
        gas_used: 0,
        timestamp: quantity("timestamp"),
        extra_data: parsed.extra_data.clone(),
        mix_hash: B256::ZERO,
        nonce: B64::ZERO,
        // London at block 0: geth's initial base fee, 1 gwei.
        base_fee_per_gas: Some(1_000_000_000),
        withdrawals_root: (last >= LastFork::Shanghai).then_some(EMPTY_ROOT_HASH),
        blob_gas_used: (last >= LastFork::Cancun).then_some(0),
        excess_blob_gas: (last >= LastFork::Cancun).then_some(0),
        parent_beacon_block_root: (last >= LastFork::Cancun).then_some(B256::ZERO),
        requests_hash: (last >= LastFork::Prague).then_some(EMPTY_REQUESTS_HASH),
        // Amsterdam's fields: no fork here has them.
        block_access_list_hash: None,
        slot_number: None,
    }
}

/// The raw block: RLP list of the header, no transactions, no uncles and, from Shanghai on, an
/// empty withdrawals list (each empty list is the byte 0xc0).
fn expected_raw_block(header: &Header, last: LastFork) -> Vec<u8> {
    let mut header_rlp = Vec::new();
    header.encode(&mut header_rlp);
    let empty_lists: &[u8] = if last >= LastFork::Shanghai {
        &[0xc0, 0xc0, 0xc0]
    } else {
        &[0xc0, 0xc0]
    };
    let mut payload = header_rlp;
    payload.extend_from_slice(empty_lists);
    let mut raw = Vec::new();
    alloy_rlp::Header {
        list: true,
        payload_length: payload.len(),
    }
    .encode(&mut raw);
    raw.extend_from_slice(&payload);
    raw
}

fn hex_quantity(value: u64) -> Value {
    json!(format!("{value:#x}"))
}

fn expected_block_object(header: &Header, size: usize, last: LastFork) -> Value {
    let mut block = json!({
        "baseFeePerGas": hex_quantity(header.base_fee_per_gas.unwrap()),
        "difficulty": "0x0",
        "extraData": header.extra_data,
        "gasLimit": hex_quantity(header.gas_limit),
        "gasUsed": "0x0",
        "hash": header.hash_slow(),
        "logsBloom": Bytes::from(vec![0u8; 256]),
        "miner": format!("{:#x}", header.beneficiary),
        "mixHash": B256::ZERO,
        "nonce": "0x0000000000000000",
        "number": "0x0",
        "parentHash": B256::ZERO,
        "receiptsRoot": EMPTY_ROOT_HASH,
        "sha3Uncles": EMPTY_OMMER_ROOT_HASH,
        "size": hex_quantity(size as u64),
        "stateRoot": header.state_root,
        "timestamp": hex_quantity(header.timestamp),
        "totalDifficulty": "0x0",
        "transactions": [],
        "transactionsRoot": EMPTY_ROOT_HASH,
        "uncles": [],
    });
    let fields = block.as_object_mut().unwrap();
    if last >= LastFork::Shanghai {
        fields.insert("withdrawals".into(), json!([]));
        fields.insert("withdrawalsRoot".into(), json!(EMPTY_ROOT_HASH));
    }
    if last >= LastFork::Cancun {
        fields.insert("blobGasUsed".into(), json!("0x0"));
        fields.insert("excessBlobGas".into(), json!("0x0"));
        fields.insert("parentBeaconBlockRoot".into(), json!(B256::ZERO));
    }
    if last >= LastFork::Prague {
        fields.insert("requestsHash".into(), json!(EMPTY_REQUESTS_HASH));
    }
    block
}

/// Ingests `genesis` alone (an empty block file) into a fresh datadir under `dir`.
fn ingest_genesis(dir: &Path, genesis: &Value) -> std::path::PathBuf {
    let (genesis_path, empty, datadir) = (
        dir.join("genesis.json"),
        dir.join("empty.rlp"),
        dir.join("data"),
    );
    std::fs::write(&genesis_path, genesis.to_string()).unwrap();
    std::fs::write(&empty, b"").unwrap();
    run_quarry(ingest_args(&datadir, &genesis_path, &[&empty]));
    datadir
}

#[test]
fn genesis_blocks_of_late_starting_chains_follow_geths_rules() {
    let dir = tempfile::tempdir().unwrap();
    let chain = dir.path().join("chain");
    let out = chain.as_os_str();
    run_quarry([
        "devchain".as_ref(),
        "--out".as_ref(),
        out,
        "--blocks".as_ref(),
        "1".as_ref(),
        "--forks".as_ref(),
        "genesis".as_ref(),
    ]);
    let all_forks: Value =
        serde_json::from_str(&std::fs::read_to_string(chain.join("genesis.json")).unwrap())
            .unwrap();
    for last in [
        LastFork::London,
        LastFork::Shanghai,
        LastFork::Cancun,
        LastFork::Prague,
        LastFork::Osaka,
    ] {
        let case = dir.path().join(format!("{last:?}"));
        std::fs::create_dir_all(&case).unwrap();
        let genesis = genesis_through(&all_forks, last);
        let datadir = ingest_genesis(&case, &genesis);
        let server = Server::start(&datadir, "");

        let header = expected_header(&genesis, last);
        let raw = expected_raw_block(&header, last);
        let mut header_rlp = Vec::new();
        header.encode(&mut header_rlp);
        let block = expected_block_object(&header, raw.len(), last);
        let hash = header.hash_slow();

        for full in [false, true] {
            assert_eq!(
                server.result("eth_getBlockByNumber", json!(["0x0", full])),
                block,
                "{last:?}: eth_getBlockByNumber(0, {full})"
            );
        }
        assert_eq!(
            server.result("eth_getBlockByHash", json!([hash, false])),
            block,
            "{last:?}: eth_getBlockByHash"
        );
        assert_eq!(
            server.result("debug_getRawBlock", json!(["0x0"])),
            json!(format!("0x{}", hex::encode(&raw))),
            "{last:?}: debug_getRawBlock"
        );
        assert_eq!(
            server.result("debug_getRawHeader", json!(["0x0"])),
            json!(format!("0x{}", hex::encode(&header_rlp))),
            "{last:?}: debug_getRawHeader"
        );
    }
}

/// A datadir written before genesis bodies carried their withdrawals list is repaired by the
/// next `quarry ingest`: block 0 then has `withdrawals: []` like a fresh one.
#[test]
fn an_old_genesis_body_is_repaired_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let chain = dir.path().join("chain");
    run_quarry([
        "devchain".as_ref(),
        "--out".as_ref(),
        chain.as_os_str(),
        "--blocks".as_ref(),
        "1".as_ref(),
        "--forks".as_ref(),
        "genesis".as_ref(),
    ]);
    let genesis: Value =
        serde_json::from_str(&std::fs::read_to_string(chain.join("genesis.json")).unwrap())
            .unwrap();
    let datadir = ingest_genesis(dir.path(), &genesis);
    {
        // What older quarry stored: a body with no withdrawals list at all.
        let db = quarry_storage::Database::open(&datadir).unwrap();
        let tx = db.writer().unwrap();
        tx.replace_empty_body(0, &Default::default()).unwrap();
        tx.commit().unwrap();
        assert_eq!(
            db.reader().unwrap().body(0).unwrap().unwrap().withdrawals,
            None
        );
    }
    let empty = dir.path().join("empty.rlp");
    let genesis_path = dir.path().join("genesis.json");
    run_quarry(ingest_args(&datadir, &genesis_path, &[&empty]));
    let db = quarry_storage::Database::open(&datadir).unwrap();
    let body = db.reader().unwrap().body(0).unwrap().unwrap();
    assert_eq!(body.withdrawals.map(|w| w.len()), Some(0));
}
