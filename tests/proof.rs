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
        quarry_devchain::Options::default().txs_per_block,
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
        quarry_devchain::Options::default().txs_per_block,
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
