//! The world-state trie, kept in memory and updated block by block.
//!
//! Storage keeps the plain state; this trie is rebuilt from it when ingest starts and then only
//! rehashes what each block (or, before Byzantium, each transaction) changed. Changes are
//! journaled so that a block that fails verification can be rolled back.

use crate::trie::MerkleTrie;
use alloy_primitives::{Address, B256, U256, keccak256, map::HashMap};
use alloy_rlp::Encodable;
use alloy_trie::TrieAccount;
use quarry_storage::{RestoredAccount, StoredAccount};
use std::collections::BTreeMap;

enum Undo {
    Account(B256, Option<Vec<u8>>),
    StorageTrie(Address, Option<MerkleTrie>),
    Slot(Address, B256, Option<Vec<u8>>),
}

/// Accounts trie plus one storage trie per account that has storage.
#[derive(Default)]
pub struct StateTrie {
    accounts: MerkleTrie,
    storage: HashMap<Address, MerkleTrie>,
    undo: Vec<Undo>,
    /// While held (see `hold`), committed changes stay in `undo` below this mark so that a
    /// whole reorganisation can still be undone.
    held: Option<usize>,
}

fn encode_value(value: U256) -> Vec<u8> {
    let mut out = Vec::with_capacity(33);
    value.encode(&mut out);
    out
}

impl StateTrie {
    pub fn new() -> Self {
        Self::default()
    }

    /// Loads a storage slot without journaling (initial load from storage).
    pub fn load_slot(&mut self, address: Address, slot: B256, value: U256) {
        if !value.is_zero() {
            self.storage
                .entry(address)
                .or_default()
                .insert(keccak256(slot), encode_value(value));
        }
    }

    /// Loads an account without journaling; its slots must be loaded first.
    pub fn load_account(&mut self, address: Address, fields: StoredAccount) {
        let leaf = self.account_leaf(&address, fields);
        self.accounts.insert(keccak256(address), leaf);
    }

    fn account_leaf(&mut self, address: &Address, fields: StoredAccount) -> Vec<u8> {
        let storage_root = self
            .storage
            .get_mut(address)
            .map_or(alloy_trie::EMPTY_ROOT_HASH, MerkleTrie::root);
        let account = TrieAccount {
            nonce: fields.nonce,
            balance: fields.balance,
            storage_root,
            code_hash: fields.code_hash,
        };
        let mut out = Vec::with_capacity(account.length());
        account.encode(&mut out);
        out
    }

    /// Sets one account's new state: `None` deletes it (with its storage); `wiped` clears its
    /// storage before `slots` are applied.
    pub fn apply_account(
        &mut self,
        address: Address,
        fields: Option<StoredAccount>,
        wiped: bool,
        slots: impl IntoIterator<Item = (U256, U256)>,
    ) {
        let key = keccak256(address);
        let Some(fields) = fields else {
            let previous = self.accounts.get(&key).map(<[u8]>::to_vec);
            self.accounts.remove(&key);
            self.undo.push(Undo::Account(key, previous));
            if let Some(trie) = self.storage.remove(&address) {
                self.undo.push(Undo::StorageTrie(address, Some(trie)));
            }
            return;
        };
        if wiped && let Some(trie) = self.storage.remove(&address) {
            self.undo.push(Undo::StorageTrie(address, Some(trie)));
        }
        for (slot, value) in slots {
            let slot_key = keccak256(B256::from(slot));
            if !self.storage.contains_key(&address) {
                self.undo.push(Undo::StorageTrie(address, None));
            }
            let trie = self.storage.entry(address).or_default();
            let previous = trie.get(&slot_key).map(<[u8]>::to_vec);
            if value.is_zero() {
                trie.remove(&slot_key);
            } else {
                trie.insert(slot_key, encode_value(value));
            }
            self.undo.push(Undo::Slot(address, slot_key, previous));
        }
        let leaf = self.account_leaf(&address, fields);
        let previous = self.accounts.get(&key).map(<[u8]>::to_vec);
        self.accounts.insert(key, leaf);
        self.undo.push(Undo::Account(key, previous));
    }

    /// Sets every account and slot an unwind restored back to its value at the ancestor
    /// (journaled like any change).
    pub fn restore(&mut self, restored: &BTreeMap<Address, RestoredAccount>) {
        for (address, entry) in restored {
            self.apply_account(
                *address,
                entry.account,
                false,
                entry
                    .storage
                    .iter()
                    .map(|(slot, value)| (U256::from_be_bytes(slot.0), *value)),
            );
        }
    }

    /// The state root of everything applied so far.
    pub fn root(&mut self) -> B256 {
        self.accounts.root()
    }

    /// Keeps every change since the last commit or rollback.
    pub fn commit(&mut self) {
        match &mut self.held {
            Some(mark) => *mark = self.undo.len(),
            None => self.undo.clear(),
        }
    }

    /// From now on commits stay undoable by `rollback_held` until `release`: an unwind and the
    /// branch applied after it are kept or undone as one.
    pub fn hold(&mut self) {
        self.held = Some(self.undo.len());
    }

    /// Keeps everything committed while held.
    pub fn release(&mut self) {
        self.held = None;
        self.undo.clear();
    }

    /// Undoes everything since `hold`, committed or not.
    pub fn rollback_held(&mut self) {
        self.held = None;
        self.rollback();
    }

    /// Undoes every change since the last commit (or, while held, since the last commit).
    pub fn rollback(&mut self) {
        let keep = self.held.unwrap_or(0);
        while self.undo.len() > keep
            && let Some(undo) = self.undo.pop()
        {
            match undo {
                Undo::Account(key, Some(leaf)) => self.accounts.insert(key, leaf),
                Undo::Account(key, None) => self.accounts.remove(&key),
                Undo::StorageTrie(address, Some(trie)) => {
                    self.storage.insert(address, trie);
                }
                Undo::StorageTrie(address, None) => {
                    self.storage.remove(&address);
                }
                Undo::Slot(address, key, previous) => {
                    let trie = self.storage.entry(address).or_default();
                    match previous {
                        Some(value) => trie.insert(key, value),
                        None => trie.remove(&key),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(nonce: u64) -> StoredAccount {
        StoredAccount {
            nonce,
            balance: U256::from(nonce),
            code_hash: alloy_primitives::KECCAK256_EMPTY,
        }
    }

    #[test]
    fn rollback_restores_the_root() {
        let a = Address::repeat_byte(1);
        let b = Address::repeat_byte(2);
        let mut trie = StateTrie::new();
        trie.apply_account(a, Some(fields(1)), false, [(U256::from(1), U256::from(5))]);
        trie.apply_account(b, Some(fields(2)), false, []);
        trie.commit();
        let before = trie.root();

        trie.apply_account(a, Some(fields(3)), true, [(U256::from(2), U256::from(6))]);
        trie.apply_account(b, None, false, []);
        trie.apply_account(
            Address::repeat_byte(3),
            Some(fields(1)),
            false,
            [(U256::ONE, U256::ONE)],
        );
        assert_ne!(trie.root(), before);
        trie.rollback();
        assert_eq!(trie.root(), before);
    }

    #[test]
    fn a_held_trie_undoes_committed_blocks_too() {
        let a = Address::repeat_byte(1);
        let mut trie = StateTrie::new();
        trie.apply_account(a, Some(fields(1)), false, [(U256::from(1), U256::from(5))]);
        trie.commit();
        let before = trie.root();
        trie.hold();
        trie.apply_account(a, Some(fields(2)), false, [(U256::from(1), U256::ZERO)]);
        trie.commit();
        let middle = trie.root();
        trie.apply_account(a, None, false, []);
        // An ordinary rollback stops at the last commit...
        trie.rollback();
        assert_eq!(trie.root(), middle);
        trie.apply_account(a, None, false, []);
        trie.commit();
        // ...and rolling back what was held goes back to `hold`.
        trie.rollback_held();
        assert_eq!(trie.root(), before);
        trie.hold();
        trie.apply_account(a, Some(fields(3)), false, []);
        trie.commit();
        trie.release();
        let kept = trie.root();
        trie.rollback();
        assert_eq!(trie.root(), kept);
    }

    #[test]
    fn load_matches_apply() {
        let a = Address::repeat_byte(1);
        let mut applied = StateTrie::new();
        applied.apply_account(a, Some(fields(1)), false, [(U256::from(1), U256::from(5))]);
        let mut loaded = StateTrie::new();
        loaded.load_slot(a, B256::from(U256::from(1)), U256::from(5));
        loaded.load_account(a, fields(1));
        assert_eq!(applied.root(), loaded.root());
    }
}
