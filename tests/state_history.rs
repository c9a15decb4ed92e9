//! The state history's block lists, differentially: on the bundled dev chain (every key at
//! every block) and on a 2,000-block dev chain taken through a deep reorganisation and an
//! unwind (every key at every block that changed it, the block before, and every 200th block),
//! every account and slot the changesets name, read through the lists (`account_at`,
//! `storage_at`), equals the state the changesets give when replayed down from the latest one;
//! and proofs at sampled blocks lead to the block's stateRoot and verify with alloy-trie. The
//! same holds of a chain whose coarse windows took their state roots once each (ingest's
//! ranges), which stores what a block-by-block import stores, and a block that fails inside
//! such a window is named by the import, with the blocks before it kept.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_primitives::{Address, B256, U256, keccak256};
use alloy_trie::{EMPTY_ROOT_HASH, Nibbles, proof::verify_proof};
use quarry_executor::{OlderState, account_proof, trie_account_after};
use quarry_storage::{Database, Leaf, ReadTx, StorageRootBefore, StoredAccount, Table, TrieId};
use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
};
use support::{
    decode_blocks, devchain, encode_blocks, ingest_args, ingest_folder, ingested, quarry_fails,
    run_quarry, stored_head, table_digests,
};

/// The accounts and the slots one block changed.
type BlockKeys = (BTreeSet<Address>, BTreeSet<(Address, B256)>);

/// The accounts and slots some changeset names, with their values after each block from the
/// head down (the changesets replayed over the latest state), compared with the lists' answers:
/// every key at every block when `every` is 1; otherwise every key at every `every`-th block,
/// at the head and at block 0, and each key at every block that changed it and the block
/// before. The latter catch every fault of a key's list: a listed block that did not change
/// the key is the first change after the change before it (or after block 0), whose changeset
/// has no entry for the key (an error); a missing block, from the change before it on, makes
/// the next listed change's value before it the answer, which holds the missing change's value.
/// Returns how many values were compared.
fn compare_blocks(tx: &ReadTx, every: u64) -> usize {
    let (head, _) = tx.head().unwrap().unwrap();
    let mut accounts: BTreeMap<Address, Option<StoredAccount>> = BTreeMap::new();
    let mut slots: BTreeMap<(Address, B256), U256> = BTreeMap::new();
    // The keys each block changed, for the blocks at and after each transition.
    let mut changed: Vec<BlockKeys> = vec![Default::default(); head as usize + 2];
    for number in 1..=head {
        for (address, _) in tx.account_changeset(number).unwrap() {
            accounts.insert(address, None);
            changed[number as usize].0.insert(address);
        }
        for (address, slot, _) in tx.storage_changeset(number).unwrap() {
            slots.insert((address, slot), U256::ZERO);
            changed[number as usize].1.insert((address, slot));
        }
    }
    for (address, account) in &mut accounts {
        *account = tx.account(address).unwrap();
    }
    for ((address, slot), value) in &mut slots {
        *value = tx.storage(address, slot).unwrap();
    }
    let mut compared = 0;
    for number in (0..=head).rev() {
        // `accounts` and `slots` hold the state after `number`.
        let all = number % every == 0 || number == head;
        let (now, next) = (&changed[number as usize], &changed[number as usize + 1]);
        for (address, account) in &accounts {
            if all || now.0.contains(address) || next.0.contains(address) {
                let listed = tx.account_at(address, number).unwrap();
                assert_eq!(&listed, account, "account {address} after block {number}");
                compared += 1;
            }
        }
        for (key, value) in &slots {
            if all || now.1.contains(key) || next.1.contains(key) {
                let (address, slot) = key;
                let listed = tx.storage_at(address, slot, number).unwrap();
                assert_eq!(listed, *value, "{address} slot {slot} after block {number}");
                compared += 1;
            }
        }
        if number == 0 {
            break;
        }
        for (address, before) in tx.account_changeset(number).unwrap() {
            accounts.insert(address, before);
        }
        for (address, slot, before) in tx.storage_changeset(number).unwrap() {
            slots.insert((address, slot), before);
        }
    }
    assert!(
        accounts.len() > 10 && slots.len() > 10,
        "{} accounts, {} slots",
        accounts.len(),
        slots.len()
    );
    compared
}

/// Proofs of the accounts and slots the changesets name, at every `step`-th block and the two
/// below the head: each leads to the block's stateRoot, verifies with alloy-trie, and holds
/// the values `account_at` and `storage_at` give, and the account's leaf as the leaf history
/// reads it (eth_getAccount's read) is the proved one: where the changeset leaves out the
/// storage root, as `trie_account_after` walks it. Returns how many accounts were proved and
/// how many leaves were walked.
fn prove_sampled_blocks(tx: &ReadTx, step: usize) -> (usize, usize) {
    let (head, _) = tx.head().unwrap().unwrap();
    let mut touched: BTreeMap<Address, BTreeSet<B256>> = BTreeMap::new();
    for number in 1..=head {
        for (address, _) in tx.account_changeset(number).unwrap() {
            touched.entry(address).or_default();
        }
        for (address, slot, _) in tx.storage_changeset(number).unwrap() {
            touched.entry(address).or_default().insert(slot);
        }
    }
    // The accounts with the most slots (contracts), and a few others.
    let mut sample: Vec<(&Address, &BTreeSet<B256>)> = touched.iter().collect();
    sample.sort_by_key(|(address, slots)| (std::cmp::Reverse(slots.len()), **address));
    sample.truncate(6);
    sample.extend(touched.iter().step_by(7).take(6));
    let (mut proved, mut walked) = (0, 0);
    let blocks = (0..head).step_by(step).chain([head - 2, head - 1]);
    for block in blocks {
        let state_root = tx.header(block).unwrap().unwrap().state_root;
        let older = OlderState::of(tx, block).unwrap();
        for (address, slots) in &sample {
            let slots: Vec<B256> = slots.iter().take(8).copied().collect();
            let proof = account_proof(tx, older.state(), **address, &slots).unwrap();
            assert_eq!(proof.state_root, state_root, "{address} at block {block}");
            let account = tx.account_at(address, block).unwrap();
            assert_eq!(
                proof.account.map(|a| StoredAccount::from(&a)),
                account,
                "{address} at block {block}"
            );
            let mut leaves = tx.trie_leaves_after(TrieId::Accounts, Some(block)).unwrap();
            let read = match leaves.get(&keccak256(address)) {
                Ok(leaf) => leaf.map(|leaf| match leaf {
                    Leaf::Account(account) => account,
                    Leaf::Slot(_) => panic!("a slot in the accounts trie"),
                }),
                Err(quarry_storage::Error::StorageRootNotRecorded { .. }) => {
                    walked += 1;
                    trie_account_after(tx, **address, block).unwrap()
                }
                Err(err) => panic!("{address}'s leaf after block {block}: {err}"),
            };
            assert_eq!(read, proof.account, "{address}'s leaf after block {block}");
            let leaf = proof.account.map(alloy_rlp::encode);
            let key = Nibbles::unpack(keccak256(address));
            verify_proof(state_root, key, leaf, &proof.account_proof)
                .unwrap_or_else(|e| panic!("account {address} at block {block}: {e}"));
            let storage_root = proof.storage_hash();
            for entry in &proof.storage {
                let value = tx.storage_at(address, &entry.slot, block).unwrap();
                assert_eq!(
                    entry.value, value,
                    "{address} slot {} at {block}",
                    entry.slot
                );
                if account.is_none() || storage_root == EMPTY_ROOT_HASH {
                    continue;
                }
                let expected = (!value.is_zero()).then(|| alloy_rlp::encode(value));
                let key = Nibbles::unpack(keccak256(entry.slot));
                verify_proof(storage_root, key, expected, &entry.proof).unwrap_or_else(|e| {
                    panic!("{address} slot {} at block {block}: {e}", entry.slot)
                });
            }
            proved += 1;
        }
    }
    (proved, walked)
}

/// Checks `datadir`'s lists and proofs; returns how many leaves were walked for want of a
/// recorded storage root.
fn check(datadir: &Path, every: u64, step: usize, what: &str) -> usize {
    let db = Database::open(datadir).unwrap();
    let tx = db.reader().unwrap();
    let compared = compare_blocks(&tx, every);
    let (proved, walked) = prove_sampled_blocks(&tx, step);
    eprintln!(
        "{what}: {compared} values compared, {proved} accounts proved, {walked} leaves walked"
    );
    assert!(proved > 20, "{what}: {proved} proofs");
    walked
}

#[test]
fn the_bundled_dev_chain_reads_every_block_through_the_lists() {
    let datadir = ingested(&Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet"));
    // Blocks taken one by one record every storage root.
    assert_eq!(check(&datadir, 1, 5, "dev chain"), 0);
}

/// A 2,000-block chain, then a branch that replaces its last 300 blocks (and adds 50), then an
/// unwind of 850 more: each time the lists answer as the changesets do (see `compare_blocks`),
/// and unwound blocks are gone from them (a list naming one would read a changeset entry that
/// is gone, an error).
#[test]
fn deep_reorganisations_and_unwinds_keep_the_lists_equal_to_the_changesets() {
    let dir = tempfile::tempdir().unwrap();
    let common = ["--txs-per-block", "3", "--seed", "5"];
    let stored = dir.path().join("stored");
    let branch = dir.path().join("branch");
    devchain(&stored, &[&["--blocks", "2000"][..], &common].concat());
    let fork = ["--blocks", "2050", "--fork-at", "1700", "--fork-seed", "7"];
    devchain(&branch, &[&fork[..], &common].concat());
    let genesis = stored.join("genesis.json");
    let datadir = dir.path().join("data");
    ingest_folder(&datadir, &stored);
    // Blocks taken one by one record every storage root.
    assert_eq!(check(&datadir, 200, 400, "stored chain"), 0);

    let branch_file = branch.join("chain.rlp");
    let mut args = ingest_args(&datadir, &genesis, &[&branch_file]);
    args.extend(["--reorg", "--max-reorg-depth", "1000"].map(std::ffi::OsStr::new));
    run_quarry(args);
    // Blocks taken one by one record every storage root.
    assert_eq!(
        check(&datadir, 200, 400, "after a 300-block reorganisation"),
        0
    );

    let unwind = [
        "unwind",
        "--datadir",
        datadir.to_str().unwrap(),
        "--genesis",
        genesis.to_str().unwrap(),
        "--to",
        "1200",
    ];
    run_quarry(unwind.map(std::ffi::OsStr::new));
    // Blocks taken one by one record every storage root.
    assert_eq!(
        check(&datadir, 200, 300, "after an unwind of 850 blocks"),
        0
    );
}

/// `quarry ingest` of `file` into `datadir` with `--proof-history 64` and `extra`: the
/// args, for `run_quarry` or `quarry_fails`.
fn ingest_in_windows<'a>(
    datadir: &'a Path,
    genesis: &'a Path,
    file: &'a Path,
    extra: &[&'a str],
) -> Vec<&'a std::ffi::OsStr> {
    let mut args = ingest_args(datadir, genesis, &[file]);
    let options = ["--proof-history", "64"].iter().chain(extra);
    args.extend(options.map(|option| std::ffi::OsStr::new(*option)));
    args
}

/// A 2,150-block chain with `--proof-history 64`: its first two coarse windows (blocks 1-1,023
/// and 1,024-2,047, which the file passes by more than 64 blocks) take their state root once,
/// after their last block; the rest, block by block. Every table but the node history and the
/// account changesets equals a block-by-block import's (`--state-root-every-block`): the state,
/// the slots' changesets and the lists. The account changesets hold the same entries, and the
/// same storage roots except where a window's block changed an account whose storage an
/// earlier block of the window had changed: those leave the root out. The node history holds
/// as many entries, keyed by each window's first block instead of the first that changed the
/// node (so its digests differ), and reads the same: every key through the lists, proofs at
/// sampled blocks inside the windows, and each account's leaf, walked where its root is left
/// out, the same over eth_getAccount as eth_getProof proves it.
#[test]
fn coarse_windows_taken_whole_store_what_block_by_block_imports_store() {
    let dir = tempfile::tempdir().unwrap();
    let chain = dir.path().join("chain");
    devchain(
        &chain,
        &["--blocks", "2150", "--txs-per-block", "3", "--seed", "11"],
    );
    let (genesis, file) = (chain.join("genesis.json"), chain.join("chain.rlp"));
    let (whole, per_block) = (dir.path().join("whole"), dir.path().join("per-block"));
    run_quarry(ingest_in_windows(&whole, &genesis, &file, &[]));
    let every_block = ["--state-root-every-block"];
    run_quarry(ingest_in_windows(&per_block, &genesis, &file, &every_block));

    let history = [
        Table::AccountsTrieHistory,
        Table::StoragesTrieHistory,
        Table::TrieChangeSets,
    ];
    let changesets = Table::NarrowAccountChangeSets;
    let apart = [history.as_slice(), &[changesets]].concat();
    assert_eq!(
        table_digests(&whole, &apart),
        table_digests(&per_block, &apart)
    );
    let others: Vec<Table> = Table::ALL
        .iter()
        .copied()
        .filter(|table| !history.contains(table) && *table != changesets)
        .collect();
    let (whole_history, per_block_history) = (
        table_digests(&whole, &others),
        table_digests(&per_block, &others),
    );
    for ((table, (entries, digest)), (_, (other_entries, other_digest))) in
        whole_history.iter().zip(&per_block_history)
    {
        assert_eq!(entries, other_entries, "{table:?}");
        assert!(*entries > 100, "{table:?}: {entries} entries");
        // Keyed by the windows' first blocks: the windows were taken whole.
        assert_ne!(digest, other_digest, "{table:?}");
    }
    let left_out = compare_account_changesets(&whole, &per_block, 2047);
    assert!(left_out > 100, "{left_out} storage roots left out");
    let walked = check(&whole, 100, 97, "coarse windows taken whole");
    assert!(walked > 0, "no leaf was walked");
    accounts_agree_with_proofs(&whole);
}

/// The account changesets of `whole` (coarse windows taken whole up to block `windows_end`)
/// against `per_block`'s: the same entries, whose storage roots are the same or, in `whole`,
/// left out, only inside the windows and only for an account whose storage an earlier block
/// of the same window changed. Returns how many were left out.
fn compare_account_changesets(whole: &Path, per_block: &Path, windows_end: u64) -> usize {
    let (whole, per_block) = (
        Database::open(whole).unwrap(),
        Database::open(per_block).unwrap(),
    );
    let (whole, per_block) = (whole.reader().unwrap(), per_block.reader().unwrap());
    let (head, _) = whole.head().unwrap().unwrap();
    // Each account's storage-changing blocks so far, in its current coarse window.
    let mut storage_changed: BTreeMap<Address, u64> = BTreeMap::new();
    let mut left_out = 0;
    for number in 1..=head {
        let slots: BTreeSet<Address> = whole
            .storage_changeset(number)
            .unwrap()
            .into_iter()
            .map(|(address, _, _)| address)
            .collect();
        for (address, _) in whole.account_changeset(number).unwrap() {
            let entry = whole.account_changeset_entry(number, &address).unwrap();
            let expected = per_block.account_changeset_entry(number, &address).unwrap();
            let earlier_in_window = storage_changed
                .get(&address)
                .is_some_and(|block| block / 1024 == number / 1024);
            match entry.unwrap() {
                Some((account, StorageRootBefore::NotRecorded)) => {
                    assert!(
                        number <= windows_end && earlier_in_window,
                        "{address} at block {number}: root left out"
                    );
                    let recorded = expected.unwrap().unwrap();
                    assert_eq!(account, recorded.0, "{address} at block {number}");
                    left_out += 1;
                }
                other => assert_eq!(other, expected.unwrap(), "{address} at block {number}"),
            }
            if slots.contains(&address) {
                storage_changed.insert(address, number);
            }
        }
    }
    left_out
}

/// eth_getAccount agrees with eth_getProof over a server of `datadir`, for the accounts with
/// the most changed slots (the contracts) at blocks spread over the chain.
fn accounts_agree_with_proofs(datadir: &Path) {
    let mut contracts: BTreeMap<Address, usize> = BTreeMap::new();
    {
        let db = Database::open(datadir).unwrap();
        let tx = db.reader().unwrap();
        let (head, _) = tx.head().unwrap().unwrap();
        for number in 1..=head {
            for (address, _, _) in tx.storage_changeset(number).unwrap() {
                *contracts.entry(address).or_default() += 1;
            }
        }
    }
    let mut ranked: Vec<(usize, Address)> = contracts.into_iter().map(|(a, n)| (n, a)).collect();
    ranked.sort_unstable_by(|a, b| b.cmp(a));
    let server = support::Server::start(datadir, "proof_window = 100000");
    let mut asked = 0;
    for (_, address) in ranked.iter().take(3) {
        for block in (5..2150u64).step_by(131) {
            let params = serde_json::json!([address, format!("{block:#x}")]);
            let account = server.call("eth_getAccount", params.clone())["result"].clone();
            let proof_params = serde_json::json!([address, [], format!("{block:#x}")]);
            let proof = server.call("eth_getProof", proof_params)["result"].clone();
            if account.is_null() {
                assert!(proof["balance"] == "0x0", "{address} at {block}: {proof}");
                continue;
            }
            support::assert_account_is_proved(&account, &proof, &format!("{address} at {block}"));
            asked += 1;
        }
    }
    assert!(asked > 20, "{asked} accounts asked");
}

/// A block that fails inside a coarse window taken whole (its gasUsed altered), or at its end
/// (the window's last block's stateRoot altered, which only the window's root finds): the
/// window is dropped, the import goes on block by block from the last commit, names the
/// block as a block-by-block import does, and keeps every block before it.
#[test]
fn a_block_failing_in_a_coarse_window_is_named_and_the_blocks_before_it_kept() {
    let dir = tempfile::tempdir().unwrap();
    let chain = dir.path().join("chain");
    devchain(
        &chain,
        &["--blocks", "1200", "--txs-per-block", "3", "--seed", "12"],
    );
    let genesis = chain.join("genesis.json");
    let blocks = decode_blocks(&std::fs::read(chain.join("chain.rlp")).unwrap());
    for (number, field) in [(500u64, "gasUsed"), (1023, "stateRoot")] {
        let mut altered = blocks.clone();
        let block = altered
            .iter_mut()
            .find(|block| block.header.number == number)
            .unwrap();
        match field {
            "gasUsed" => block.header.gas_used -= 1,
            _ => block.header.state_root = keccak256(b"not the state root"),
        }
        let file = dir.path().join(format!("altered-{number}.rlp"));
        std::fs::write(&file, encode_blocks(&altered)).unwrap();
        let datadir = dir.path().join(format!("data-{number}"));
        let stderr = quarry_fails(ingest_in_windows(&datadir, &genesis, &file, &[]));
        assert!(
            stderr.contains("a range of blocks failed"),
            "block {number}: {stderr}"
        );
        let named = format!("block {number} (");
        let rejected = format!("rejected: {field} mismatch");
        assert!(
            stderr.contains(&named) && stderr.contains(&rejected),
            "block {number}: {stderr}"
        );
        assert_eq!(stored_head(&datadir).0, number - 1, "block {number}");
    }
}
