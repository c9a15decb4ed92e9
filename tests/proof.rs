//! eth_getProof on the bundled dev chain: every proof, at the head and at older blocks, verifies
//! against that block's `stateRoot` with alloy-trie's verifier (inclusion and exclusion proofs
//! alike), and its values are those eth_getBalance, eth_getTransactionCount, eth_getCode and
//! eth_getStorageAt give at the same block.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use alloy_trie::{EMPTY_ROOT_HASH, Nibbles, TrieAccount, proof::verify_proof};
use quarry_devchain::{Contracts, DevAccounts, MINER};
use quarry_executor::{OlderState, ProofState, account_proof};
use serde_json::{Value, json};
use std::path::Path;
use support::{Server, devchain, ingested};

fn devnet_server(extra: &str) -> (Server, DevAccounts, Contracts) {
    let datadir = ingested(&Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet"));
    let accounts = DevAccounts::new(quarry_devchain::account_count(
        quarry_devchain::GenerateOptions::default().txs_per_block,
    ))
    .unwrap();
    let contracts = Contracts::of(accounts.address(0));
    (Server::start(&datadir, extra), accounts, contracts)
}

fn quantity(value: &Value) -> U256 {
    value.as_str().unwrap().parse().unwrap()
}

fn hash(value: &Value) -> B256 {
    value.as_str().unwrap().parse().unwrap()
}

fn nodes(value: &Value) -> Vec<Bytes> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|node| node.as_str().unwrap().parse().unwrap())
        .collect()
}

/// The accounts and slots the tests prove: the dev chain's contracts, its miner, an absent
/// account and a few senders; Store's `count` (slot 0) and `balances` entries (mapping in slot
/// 1), a few low slots, and a slot no contract uses.
fn sample(accounts: &DevAccounts, contracts: &Contracts) -> (Vec<Address>, Vec<B256>) {
    let absent = Address::repeat_byte(0x5a);
    let mut addresses = vec![
        contracts.store,
        contracts.token,
        contracts.reverter,
        MINER,
        absent,
    ];
    addresses.extend(accounts.addresses().take(6));
    let mut slots: Vec<B256> = (0..3u64).map(|i| B256::from(U256::from(i))).collect();
    for index in 0..4 {
        let mut preimage = [0u8; 64];
        preimage[12..32].copy_from_slice(accounts.address(index).as_slice());
        preimage[63] = 1;
        slots.push(keccak256(preimage));
    }
    slots.push(B256::repeat_byte(0x77));
    (addresses, slots)
}

#[test]
fn proofs_verify_against_each_blocks_state_root() {
    let (server, accounts, contracts) = devnet_server("");
    let head = quantity(&server.result("eth_blockNumber", json!([]))).to::<u64>();
    let (addresses, slots) = sample(&accounts, &contracts);
    let (mut inclusions, mut exclusions, mut slot_values) = (0, 0, 0);
    let blocks: Vec<u64> = (0..=head).step_by(7).chain([head - 1, head]).collect();
    for block in blocks {
        let tag = format!("{block:#x}");
        let header = server.result("eth_getBlockByNumber", json!([tag, false]));
        let state_root = hash(&header["stateRoot"]);
        for address in &addresses {
            let proof = server.result("eth_getProof", json!([address, slots, tag]));
            let balance = quantity(&proof["balance"]);
            let nonce = quantity(&proof["nonce"]).to::<u64>();
            let code_hash = hash(&proof["codeHash"]);
            let storage_hash = hash(&proof["storageHash"]);
            assert_eq!(
                balance,
                quantity(&server.result("eth_getBalance", json!([address, tag])))
            );
            assert_eq!(
                U256::from(nonce),
                quantity(&server.result("eth_getTransactionCount", json!([address, tag])))
            );
            let code: Bytes = server
                .result("eth_getCode", json!([address, tag]))
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            // geth's shape: an absent account has zero code and storage hashes.
            let exists = !code_hash.is_zero();
            if exists {
                assert_eq!(code_hash, keccak256(&code), "{address} at {block}");
            } else {
                assert_eq!(storage_hash, B256::ZERO);
                assert!(code.is_empty() && balance.is_zero() && nonce == 0);
            }
            let leaf = exists.then(|| {
                alloy_rlp::encode(TrieAccount {
                    nonce,
                    balance,
                    storage_root: storage_hash,
                    code_hash,
                })
            });
            let key = Nibbles::unpack(keccak256(address));
            verify_proof(state_root, key, leaf, &nodes(&proof["accountProof"]))
                .unwrap_or_else(|e| panic!("account {address} at block {block}: {e}"));
            if exists {
                inclusions += 1;
            } else {
                exclusions += 1;
            }

            let storage = proof["storageProof"].as_array().unwrap();
            assert_eq!(storage.len(), slots.len());
            for (entry, slot) in storage.iter().zip(&slots) {
                assert_eq!(
                    entry["key"],
                    json!(slot),
                    "a 32-byte key is echoed as given"
                );
                let value = quantity(&entry["value"]);
                let stored =
                    quantity(&server.result("eth_getStorageAt", json!([address, slot, tag])));
                assert_eq!(value, stored, "{address} slot {slot} at {block}");
                let proof = nodes(&entry["proof"]);
                if !exists || storage_hash == EMPTY_ROOT_HASH {
                    assert!(proof.is_empty(), "an empty storage trie proves nothing");
                    continue;
                }
                let expected = (!value.is_zero()).then(|| alloy_rlp::encode(value));
                slot_values += usize::from(!value.is_zero());
                verify_proof(
                    storage_hash,
                    Nibbles::unpack(keccak256(slot)),
                    expected,
                    &proof,
                )
                .unwrap_or_else(|e| panic!("{address} slot {slot} at block {block}: {e}"));
            }
        }
    }
    assert!(
        inclusions > 20 && exclusions > 5 && slot_values > 5,
        "{inclusions} inclusions, {exclusions} exclusions, {slot_values} non-zero slots"
    );
}

/// Proofs at older blocks come from the trie history (at the end of the block's window, with
/// the window's later changesets undone); before it starts (a datadir migrated from an older
/// layout) they come from undoing the changesets over the latest trie. Both give the same
/// proofs, node for node, at every block: at window ends, within windows, and in the head's.
#[test]
fn proofs_from_the_trie_history_equal_those_from_undone_changesets() {
    // Long enough for two whole windows and part of a third, the head's.
    let chain = tempfile::tempdir().unwrap();
    let blocks = (2 * quarry_storage::NODE_HISTORY_WINDOW + 10).to_string();
    devchain(chain.path(), &["--blocks", &blocks]);
    let datadir = ingested(chain.path());
    let accounts = DevAccounts::new(quarry_devchain::account_count(
        quarry_devchain::GenerateOptions::default().txs_per_block,
    ))
    .unwrap();
    let (addresses, slots) = sample(&accounts, &Contracts::of(accounts.address(0)));
    let db = quarry_storage::Database::open(&datadir).unwrap();
    let tx = db.reader().unwrap();
    let (head, _) = tx.head().unwrap().unwrap();
    assert_eq!(tx.trie_history_from().unwrap(), Some(1));
    let window = tx.node_window().unwrap();
    assert_eq!(window, quarry_storage::NODE_HISTORY_WINDOW);
    assert!(head > 2 * window, "head {head}: windows to prove in");
    let mut compared = 0;
    let mut ways = std::collections::HashSet::new();
    for block in (0..head).step_by(3).chain([window - 1, 2 * window - 1]) {
        assert!(tx.trie_history_covers(block).unwrap());
        let reverts = tx.reverts_to(block).unwrap();
        let state_root = tx.header(block).unwrap().unwrap().state_root;
        let older = OlderState::of(&tx, block).unwrap();
        ways.insert(std::mem::discriminant(&older));
        for address in &addresses {
            let recorded = account_proof(&tx, older.state(), *address, &slots).unwrap();
            let reverted =
                account_proof(&tx, ProofState::Reverted(&reverts), *address, &slots).unwrap();
            assert_eq!(recorded, reverted, "{address} at block {block}");
            assert_eq!(recorded.state_root, state_root, "block {block}");
            compared += 1;
        }
    }
    assert!(compared > 100, "{compared} proofs compared");
    assert_eq!(
        ways.len(),
        3,
        "proved at window ends, within windows and in the head's"
    );
}

#[test]
fn proof_parameters_and_window() {
    let (server, _, contracts) = devnet_server("proof_window = 3");
    let head = quantity(&server.result("eth_blockNumber", json!([]))).to::<u64>();
    // A short key is echoed as a quantity, as geth does.
    let proof = server.result("eth_getProof", json!([contracts.store, ["0x00"], "latest"]));
    assert_eq!(proof["storageProof"][0]["key"], "0x0");
    let ask = |params: Value| {
        let request =
            json!({"jsonrpc": "2.0", "id": 1, "method": "eth_getProof", "params": params});
        server.http(&request.to_string())
    };
    let too_long = format!("0x{}", "11".repeat(33));
    let answer = ask(json!([contracts.store, [too_long], "latest"]));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("storage key too long"),
        "{answer}"
    );
    let answer = ask(json!([contracts.store, [], format!("{:#x}", head - 3)]));
    assert!(answer["result"].is_object(), "{answer}");
    let answer = ask(json!([contracts.store, [], format!("{:#x}", head - 4)]));
    assert_eq!(answer["error"]["code"], -32000, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        format!(
            "block {} is 4 blocks behind the head; eth_getProof reaches at most 3 blocks back (proof_window)",
            head - 4
        )
    );
    let answer = ask(json!([contracts.store, "0x01", "latest"]));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
}

/// Every proof of `addresses` (with `slots`) at `blocks`, the way eth_getProof makes it, each
/// checked to lead to its block's `stateRoot` and its account proof verified with alloy-trie.
fn proofs_at(
    db: &quarry_storage::Database,
    blocks: &[u64],
    addresses: &[Address],
    slots: &[B256],
) -> Vec<quarry_executor::AccountProof> {
    let tx = db.reader().unwrap();
    let mut proofs = Vec::new();
    for &block in blocks {
        let state_root = tx.header(block).unwrap().unwrap().state_root;
        let older = OlderState::of(&tx, block).unwrap();
        for address in addresses {
            let proof = account_proof(&tx, older.state(), *address, slots).unwrap();
            assert_eq!(proof.state_root, state_root, "{address} at block {block}");
            let leaf = proof.account.as_ref().map(alloy_rlp::encode);
            let key = Nibbles::unpack(keccak256(address));
            verify_proof(state_root, key, leaf, &proof.account_proof)
                .unwrap_or_else(|e| panic!("{address} at block {block}: {e}"));
            proofs.push(proof);
        }
    }
    proofs
}

/// Node history entries (both trie history tables and their index).
fn node_history_entries(db: &quarry_storage::Database) -> u64 {
    let tx = db.reader().unwrap();
    [
        quarry_storage::Table::AccountsTrieHistory,
        quarry_storage::Table::StoragesTrieHistory,
        quarry_storage::Table::TrieChangeSets,
    ]
    .iter()
    .map(|table| tx.table_digest(*table).unwrap().0)
    .sum()
}

/// Beyond `proof_history` blocks the node history keeps one record per node and coarse window:
/// a proof there starts from a coarse window's end and undoes or redoes the changesets between.
/// Its proofs equal, node for node, those the whole history gave (and verify against each
/// block's `stateRoot`): after each bounded step of the thinning, after all of it, and after an
/// unwind into the thinned windows and the same blocks imported again.
#[test]
fn proofs_beyond_proof_history_equal_those_of_the_whole_history() {
    let window = quarry_storage::NODE_HISTORY_WINDOW;
    let coarse = 2 * window;
    let chain = tempfile::tempdir().unwrap();
    let blocks = (4 * coarse + 20).to_string();
    devchain(
        chain.path(),
        &["--blocks", &blocks, "--txs-per-block", "10"],
    );
    let datadir = tempfile::tempdir().unwrap();
    let data = datadir.path().join("data");
    let (genesis_file, chain_file) = (
        chain.path().join("genesis.json"),
        chain.path().join("chain.rlp"),
    );
    support::run_quarry(support::ingest_args(&data, &genesis_file, &[&chain_file]));
    let accounts = DevAccounts::new(quarry_devchain::account_count(10)).unwrap();
    let (addresses, slots) = sample(&accounts, &Contracts::of(accounts.address(0)));
    let db = quarry_storage::Database::open(&data).unwrap();
    let head = db.reader().unwrap().head().unwrap().unwrap().0;
    // Coarse window ends, their neighbours, fine windows' insides, the head's window.
    let mut sampled: Vec<u64> = (0..head)
        .step_by(5)
        .chain((1..=4).flat_map(|n| [n * coarse - 2, n * coarse - 1, n * coarse]))
        .filter(|block| *block < head)
        .collect();
    sampled.sort_unstable();
    sampled.dedup();
    let whole = proofs_at(&db, &sampled, &addresses, &slots);
    let entries = node_history_entries(&db);

    let keep = 40;
    let tx = db.writer().unwrap();
    assert_eq!(
        tx.proof_history().unwrap(),
        Some(quarry_storage::DEFAULT_PROOF_HISTORY)
    );
    tx.set_coarse_node_window(coarse).unwrap();
    tx.set_proof_history(Some(keep)).unwrap();
    // One coarse window per step: the reader between steps sees a history thinned so far.
    assert!(!tx.prune_node_history(1).unwrap());
    tx.commit().unwrap();
    assert_eq!(
        db.reader().unwrap().trie_history_fine_from().unwrap(),
        Some(coarse)
    );
    assert_eq!(proofs_at(&db, &sampled, &addresses, &slots), whole);
    let tx = db.writer().unwrap();
    assert!(tx.prune_node_history(u64::MAX).unwrap());
    tx.commit().unwrap();
    let fine_from = (head + 1 - keep) / coarse * coarse;
    let reader = db.reader().unwrap();
    assert_eq!(reader.trie_history_fine_from().unwrap(), Some(fine_from));
    // Thinned blocks are read at coarse window ends, never inside a thinned window.
    for block in sampled.iter().filter(|block| **block + 1 < fine_from) {
        let older = OlderState::of(&reader, *block).unwrap();
        let checkpoint = match &older {
            OlderState::Recorded(checkpoint) => *checkpoint,
            OlderState::RecordedReverted { checkpoint, .. } => *checkpoint,
            OlderState::Reverted(_) => panic!("block {block} is covered"),
        };
        assert_eq!(
            (checkpoint + 1) % coarse,
            0,
            "block {block} read after {checkpoint}"
        );
    }
    drop(reader);
    let thinned = node_history_entries(&db);
    assert!(
        thinned < entries * 4 / 5,
        "{thinned} of {entries} entries kept"
    );
    assert_eq!(proofs_at(&db, &sampled, &addresses, &slots), whole);

    // An unwind into a thinned window, then the same blocks again: the same proofs, and the
    // thinning goes on from the unwound window's end.
    let genesis: alloy_genesis::Genesis =
        serde_json::from_slice(&std::fs::read(&genesis_file).unwrap()).unwrap();
    let mut importer = quarry_ingest::Importer::open(db.clone(), &genesis).unwrap();
    let ancestor = coarse + window + 3;
    importer.unwind_to(ancestor).unwrap();
    assert_eq!(
        db.reader().unwrap().trie_history_fine_from().unwrap(),
        Some(2 * coarse)
    );
    let below: Vec<u64> = sampled.iter().copied().filter(|b| *b <= ancestor).collect();
    assert_eq!(
        proofs_at(&db, &below, &addresses, &slots),
        whole[..below.len() * addresses.len()]
    );
    importer
        .import_file(&chain_file, &mut quarry_ingest::Progress::hidden())
        .unwrap();
    assert_eq!(importer.head().0, head);
    assert_eq!(
        db.reader().unwrap().trie_history_fine_from().unwrap(),
        Some(fine_from)
    );
    assert_eq!(proofs_at(&db, &sampled, &addresses, &slots), whole);
}
