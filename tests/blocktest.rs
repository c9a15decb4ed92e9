//! `quarry blocktest` on BlockchainTests made here from dev chains: the fork choice between
//! competing branches after the merge.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_consensus::{Block, BlockBody, TxEnvelope};
use serde_json::json;
use std::path::Path;
use support::{decode_blocks, devchain, ingest_args, run_quarry, stored_head};

fn hex(bytes: &[u8]) -> String {
    format!("0x{}", alloy_primitives::hex::encode(bytes))
}

/// After the merge the consensus layer chooses the head, and BlockchainTests take the newest
/// block imported, as geth does once the terminal total difficulty is reached: a branch that
/// leaves the chain at block 1 and is imported after it becomes the chain although both weigh
/// the same (every block's difficulty is zero).
#[test]
fn after_the_merge_the_branch_imported_last_becomes_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let (main, branch) = (dir.path().join("main"), dir.path().join("branch"));
    let common = ["--forks", "genesis", "--txs-per-block", "2"];
    devchain(&main, &[&common[..], &["--blocks", "3"]].concat());
    devchain(
        &branch,
        &[&common[..], &["--blocks", "4", "--fork-at", "1"]].concat(),
    );
    let read = |chain: &Path| decode_blocks(&std::fs::read(chain.join("chain.rlp")).unwrap());
    let (main_blocks, branch_blocks) = (read(&main), read(&branch));
    assert_eq!(
        main_blocks[0], branch_blocks[0],
        "the branch shares block 1"
    );
    assert_ne!(main_blocks[1], branch_blocks[1]);

    // The genesis header, as quarry stores it for the dev chain's genesis.json.
    let genesis_path = main.join("genesis.json");
    let datadir = dir.path().join("db");
    let chain_path = main.join("chain.rlp");
    run_quarry(ingest_args(&datadir, &genesis_path, &[&chain_path]));
    assert_eq!(stored_head(&datadir).0, 3);
    let db = quarry_storage::Database::open(&datadir).unwrap();
    let genesis_header = db.reader().unwrap().header(0).unwrap().unwrap();
    let genesis_block = Block::<TxEnvelope> {
        header: genesis_header,
        body: BlockBody {
            transactions: Vec::new(),
            ommers: Vec::new(),
            withdrawals: Some(Vec::new().into()),
        },
    };
    let genesis: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&genesis_path).unwrap()).unwrap();

    // Valid blocks carry their header as JSON too; the runner only needs to see it there.
    let rlp = |block: &Block<TxEnvelope>| {
        json!({
            "rlp": hex(&alloy_rlp::encode(block)),
            "blockHeader": {"hash": block.header.hash_slow()},
        })
    };
    let blocks: Vec<_> = main_blocks
        .iter()
        .chain(&branch_blocks[1..])
        .map(rlp)
        .collect();
    let last = branch_blocks.last().unwrap().header.hash_slow();
    let case = json!({
        "network": "Osaka",
        "genesisRLP": hex(&alloy_rlp::encode(&genesis_block)),
        "pre": genesis["alloc"],
        "blocks": blocks,
        "lastblockhash": last.to_string(),
        "config": {
            "chainid": format!("{:#x}", quarry_devchain::CHAIN_ID),
            "blobSchedule": genesis["config"]["blobSchedule"],
        },
    });
    let file = dir.path().join("branch-after-merge.json");
    std::fs::write(&file, json!({ "branch_after_merge": case }).to_string()).unwrap();
    let (stdout, _) = run_quarry(["blocktest".as_ref(), file.as_os_str()]);
    assert!(stdout.contains("1 passed, 0 failed"), "{stdout}");
}
