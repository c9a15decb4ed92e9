//! The latest state (`PlainAccounts`, `PlainStorage`, the bytecodes), its reads as of an older
//! block (through the state history's lists, or the plain history of layouts before 6), and a
//! block's state changes written into it and recorded in the history.

use alloy_primitives::{Address, B256, Bytes, U256, map::HashMap};
use signet_libmdbx::{RwSync, TransactionKind, WriteFlags, tx::Cursor};

use crate::{
    LegacyTable, Result, StorageRootBefore, StorageTx, StoredAccount, Table, TrieId, history,
    models::{SlotValue, be_u64},
    slot_key, state,
};

impl<K: TransactionKind> StorageTx<K> {
    pub fn bytecode(&self, code_hash: &B256) -> Result<Option<Bytes>> {
        Ok(self
            .get(Table::Bytecodes, code_hash.as_slice())?
            .map(|code| Bytes::copy_from_slice(&code)))
    }

    /// The account in the latest state.
    pub fn account(&self, address: &Address) -> Result<Option<StoredAccount>> {
        self.get(Table::PlainAccounts, address.as_slice())?
            .map(|v| StoredAccount::decode(&v))
            .transpose()
    }

    /// A storage value in the latest state (zero when unset).
    pub fn storage(&self, address: &Address, slot: &B256) -> Result<U256> {
        let key = slot_key(address, slot);
        Ok(self
            .get(Table::PlainStorage, &key)?
            .map(|v| U256::from_be_slice(&v))
            .unwrap_or_default())
    }

    /// The account as it was after block `block`: the changeset entry of the first later block
    /// that changed it (the account before that block), or the latest account.
    pub fn account_at(&self, address: &Address, block: u64) -> Result<Option<StoredAccount>> {
        self.check_state_kept(block)?;
        if !self.state_history_covers(block)? {
            return self.plain_account_at(address, block);
        }
        let hashed = alloy_primitives::keccak256(address);
        let mut lookup = self.list_cursor(history::state_lists::Lists::Accounts)?;
        match self.listed_account_after(&mut lookup, &hashed, block)? {
            Some((_, _, then)) => Ok(then.map(|(account, _)| account)),
            None => self.account(address),
        }
    }

    /// A storage value as it was after block `block` (zero when unset): the changeset entry of
    /// the first later block that changed it, or the latest value.
    pub fn storage_at(&self, address: &Address, slot: &B256, block: u64) -> Result<U256> {
        self.check_state_kept(block)?;
        if !self.state_history_covers(block)? {
            return self.plain_storage_at(address, slot, block);
        }
        let key = state::trie::hashed_slot_key(
            &alloy_primitives::keccak256(address),
            &alloy_primitives::keccak256(slot),
        );
        let mut lookup = self.list_cursor(history::state_lists::Lists::Storages)?;
        match self.listed_slot_after(&mut lookup, &key, block)? {
            Some(value) => Ok(value),
            None => self.storage(address, slot),
        }
    }

    /// The account after `block` from the plain history (the state history of layouts before
    /// 6): its last entry at or before the block.
    fn plain_account_at(&self, address: &Address, block: u64) -> Result<Option<StoredAccount>> {
        match self.history_entry(
            Table::Legacy(LegacyTable::AccountHistory),
            address.as_slice(),
            block,
        )? {
            Some(value) if value.is_empty() => Ok(None),
            Some(value) => StoredAccount::decode(&value).map(Some),
            None => Ok(None),
        }
    }

    /// A storage value after `block` from the plain history.
    fn plain_storage_at(&self, address: &Address, slot: &B256, block: u64) -> Result<U256> {
        let prefix = slot_key(address, slot);
        Ok(self
            .history_entry(Table::Legacy(LegacyTable::StorageHistory), &prefix, block)?
            .map(|v| U256::from_be_slice(&v))
            .unwrap_or_default())
    }

    /// Every account of the latest state, in address order.
    pub fn for_each_account(
        &self,
        mut f: impl FnMut(Address, StoredAccount) -> Result<()>,
    ) -> Result<()> {
        let mut cursor = self.tx.cursor(self.db(Table::PlainAccounts))?;
        let mut entry = cursor.first::<Vec<u8>, Vec<u8>>()?;
        while let Some((key, value)) = entry {
            self.count_scanned();
            f(Address::from_slice(&key), StoredAccount::decode(&value)?)?;
            entry = cursor.next::<Vec<u8>, Vec<u8>>()?;
        }
        Ok(())
    }

    /// Every non-zero storage slot of the latest state, in (address, slot) order.
    pub fn for_each_storage(
        &self,
        mut f: impl FnMut(Address, B256, U256) -> Result<()>,
    ) -> Result<()> {
        let mut cursor = self.tx.cursor(self.db(Table::PlainStorage))?;
        let mut entry = cursor.first::<Vec<u8>, Vec<u8>>()?;
        while let Some((key, value)) = entry {
            self.count_scanned();
            f(
                Address::from_slice(&key[..20]),
                B256::from_slice(&key[20..]),
                U256::from_be_slice(&value),
            )?;
            entry = cursor.next::<Vec<u8>, Vec<u8>>()?;
        }
        Ok(())
    }

    /// Whether an account has any non-zero storage slot in the latest state (EIP-7610 counts
    /// such an account as taken for contract creation).
    pub fn has_storage(&self, address: &Address) -> Result<bool> {
        let mut cursor = self.tx.cursor(self.db(Table::PlainStorage))?;
        let entry = cursor.set_range::<Vec<u8>, Vec<u8>>(address.as_slice())?;
        Ok(entry.is_some_and(|(key, _)| key.starts_with(address.as_slice())))
    }

    /// Whether an account had any non-zero storage slot after block `block`: its first slot
    /// then, read through the leaf history (or, before it, a walk over the plain history).
    pub fn has_storage_at(&self, address: &Address, block: u64) -> Result<bool> {
        if !self.state_history_covers(block)? {
            return self.plain_has_storage_at(address, block);
        }
        let trie = TrieId::Storage(alloy_primitives::keccak256(address));
        let mut leaves = self.trie_leaves_after(trie, Some(block))?;
        Ok(leaves.seek(&alloy_trie::Nibbles::default())?.is_some())
    }

    /// [`Self::has_storage_at`] from the plain history: one seek for an account that never had
    /// storage, else a walk over its slots' changes.
    fn plain_has_storage_at(&self, address: &Address, block: u64) -> Result<bool> {
        let mut cursor = self
            .tx
            .cursor(self.db(Table::Legacy(LegacyTable::StorageHistory)))?;
        let mut entry = cursor.set_range::<Vec<u8>, Vec<u8>>(address.as_slice())?;
        // Keys are address ‖ slot ‖ block: each slot's changes in block order.
        let mut slot: Option<Vec<u8>> = None;
        let mut value_then = false;
        while let Some((key, value)) = entry {
            if key.len() != 60 || !key.starts_with(address.as_slice()) {
                break;
            }
            if slot.as_deref() != Some(&key[20..52]) {
                if value_then {
                    return Ok(true);
                }
                slot = Some(key[20..52].to_vec());
                value_then = false;
            }
            if be_u64(&key[52..])? <= block {
                value_then = value.iter().any(|b| *b != 0);
            }
            entry = cursor.next::<Vec<u8>, Vec<u8>>()?;
        }
        Ok(value_then)
    }

    /// The non-zero storage slots of one account in the latest state.
    pub fn account_storage(&self, address: &Address) -> Result<Vec<(B256, U256)>> {
        let mut cursor = self.tx.cursor(self.db(Table::PlainStorage))?;
        let mut out = Vec::new();
        let mut entry = cursor.set_range::<Vec<u8>, Vec<u8>>(address.as_slice())?;
        while let Some((key, value)) = entry {
            if !key.starts_with(address.as_slice()) {
                break;
            }
            out.push((B256::from_slice(&key[20..]), U256::from_be_slice(&value)));
            entry = cursor.next::<Vec<u8>, Vec<u8>>()?;
        }
        Ok(out)
    }
}

/// One account's new state after a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountChange {
    pub address: Address,
    /// `None`: the account does not exist after the block.
    pub account: Option<StoredAccount>,
    /// Its storage was cleared (self-destruct) before `storage` applies.
    pub wiped: bool,
    /// Changed slots and their new values (zero: cleared).
    pub storage: Vec<(B256, U256)>,
}

impl StorageTx<RwSync> {
    pub fn put_bytecode(&self, code_hash: &B256, code: &[u8]) -> Result<()> {
        self.put(Table::Bytecodes, code_hash.as_slice(), code)
    }

    /// Sets an account in the latest state (`None`: it no longer exists) and returns it as it
    /// was. Its history is recorded by [`StorageTx::apply_state_changes`].
    pub fn set_account(
        &self,
        address: &Address,
        account: Option<&StoredAccount>,
    ) -> Result<Option<StoredAccount>> {
        let mut cursor = self.tx.cursor(self.db(Table::PlainAccounts))?;
        set_account_at(&mut cursor, address, account)
    }

    /// Sets a storage slot in the latest state (zero deletes it) and returns its value before.
    pub fn set_storage(&self, address: &Address, slot: &B256, value: U256) -> Result<U256> {
        let mut cursor = self.tx.cursor(self.db(Table::PlainStorage))?;
        set_storage_at(&mut cursor, address, slot, value)
    }

    /// Clears every slot of an account (self-destruct, or creation over an address that had
    /// storage); returns the slots that were cleared with their values, in slot order.
    pub fn wipe_storage(&self, address: &Address) -> Result<Vec<(B256, U256)>> {
        let slots = self.account_storage(address)?;
        for (slot, _) in &slots {
            self.set_storage(address, slot, U256::ZERO)?;
        }
        Ok(slots)
    }

    /// Writes a block's state changes into the latest plain state and (above block 0) its
    /// changeset, each changed account and slot as it was before (an account with its storage
    /// root then), and lists the block in their block lists (the state history,
    /// state_lists.rs). The block's state trie is written after.
    pub fn apply_state_changes(
        &self,
        block: u64,
        accounts: &[AccountChange],
        bytecodes: &[(B256, Bytes)],
    ) -> Result<()> {
        self.apply_block_state_changes(block, accounts, bytecodes, &HashMap::default())
    }

    /// [`Self::apply_state_changes`], given what the changesets record of the storage root
    /// before the block of changed accounts (by hashed address), as a state root's walk finds
    /// them in the hashed state or an import of a range leaves them: the others' are read
    /// from the hashed state.
    pub fn apply_block_state_changes(
        &self,
        block: u64,
        accounts: &[AccountChange],
        bytecodes: &[(B256, Bytes)],
        storage_roots_before: &HashMap<B256, StorageRootBefore>,
    ) -> Result<()> {
        // Block 0 has no state before it to return to.
        let record = block > 0;
        for (hash, code) in bytecodes {
            self.put_bytecode(hash, code)?;
        }
        // One cursor per table for the whole block: its changes come in key order (accounts by
        // address, each one's slots by slot), and MDBX looks for a key on the page its cursor
        // stands on before it searches the tree from the root.
        let mut accounts_cursor = self.tx.cursor(self.db(Table::PlainAccounts))?;
        let mut storage_cursor = self.tx.cursor(self.db(Table::PlainStorage))?;
        for change in accounts {
            let address = &change.address;
            let wiped = if change.wiped || change.account.is_none() {
                self.wipe_storage(address)?
            } else {
                Vec::new()
            };
            if record {
                for (slot, before) in &wiped {
                    self.record_slot_before(block, address, slot, *before)?;
                    self.list_slot_change(block, address, slot)?;
                }
            }
            for (slot, value) in &change.storage {
                let before = set_storage_at(&mut storage_cursor, address, slot, *value)?;
                // A wiped slot's value before the block was recorded before the wipe.
                if record && wiped.binary_search_by_key(slot, |(s, _)| *s).is_err() {
                    self.record_slot_before(block, address, slot, before)?;
                    self.list_slot_change(block, address, slot)?;
                }
            }
            let before = set_account_at(&mut accounts_cursor, address, change.account.as_ref())?;
            if record {
                // The hashed state is still the state before the block: the block's trie
                // write comes after.
                let hashed = alloy_primitives::keccak256(address);
                let storage_root = match storage_roots_before.get(&hashed) {
                    Some(root) => *root,
                    None => StorageRootBefore::Known(self.stored_storage_root(&hashed)?),
                };
                self.record_account_before(block, address, before.as_ref(), storage_root)?;
                self.list_account_change(block, address, &hashed)?;
            }
        }
        Ok(())
    }
}

/// Sets an account in the latest state through `cursor` (on `PlainAccounts`) and returns it as
/// it was.
fn set_account_at(
    cursor: &mut Cursor<'_, RwSync>,
    address: &Address,
    account: Option<&StoredAccount>,
) -> Result<Option<StoredAccount>> {
    let account = account.map(StoredAccount::encode);
    let account = account.as_ref().map(|a| &a[..]);
    replace_at(cursor, address.as_slice(), account)?
        .map(|v| StoredAccount::decode(&v))
        .transpose()
}

/// Sets a slot in the latest state through `cursor` (on `PlainStorage`; zero deletes it) and
/// returns its value before.
fn set_storage_at(
    cursor: &mut Cursor<'_, RwSync>,
    address: &Address,
    slot: &B256,
    value: U256,
) -> Result<U256> {
    let value = (!value.is_zero()).then(|| SlotValue::new(value));
    let before = replace_at(
        cursor,
        &slot_key(address, slot),
        value.as_ref().map(SlotValue::as_slice),
    )?;
    Ok(before.map_or(U256::ZERO, |v| U256::from_be_slice(&v)))
}

/// Sets (`Some`) or deletes (`None`) an entry in one search, and returns its value before: the
/// search that finds it is where it is overwritten or deleted.
fn replace_at(
    cursor: &mut Cursor<'_, RwSync>,
    key: &[u8],
    value: Option<&[u8]>,
) -> Result<Option<Vec<u8>>> {
    let before = cursor.set::<Vec<u8>>(key)?;
    match (value, &before) {
        (Some(value), Some(before)) if before.as_slice() == value => {}
        (Some(value), Some(_)) => cursor.put(key, value, WriteFlags::CURRENT)?,
        (Some(value), None) => cursor.put(key, value, WriteFlags::empty())?,
        (None, Some(_)) => cursor.del()?,
        (None, None) => {}
    }
    Ok(before)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Database, WriteTx, history_key};
    use alloy_primitives::address;

    fn account(nonce: u64) -> StoredAccount {
        StoredAccount {
            nonce,
            balance: U256::from(nonce * 10),
            code_hash: B256::ZERO,
        }
    }

    /// Sets an account after `block` as an import does: the plain state, its changeset entry
    /// and block list (block 0 records none), and the trie leaf.
    fn set_at(tx: &WriteTx, address: &Address, account: Option<StoredAccount>, block: u64) {
        let before = tx.set_account(address, account.as_ref()).unwrap();
        let hashed = alloy_primitives::keccak256(address);
        if block > 0 {
            tx.record_account_before(
                block,
                address,
                before.as_ref(),
                StorageRootBefore::Known(None),
            )
            .unwrap();
            tx.list_account_change(block, address, &hashed).unwrap();
        }
        let leaf = account.map(|a| alloy_trie::TrieAccount {
            nonce: a.nonce,
            balance: a.balance,
            storage_root: alloy_trie::EMPTY_ROOT_HASH,
            code_hash: a.code_hash,
        });
        tx.put_hashed_account(&hashed, leaf.as_ref()).unwrap();
    }

    fn set_slot_at(tx: &WriteTx, address: &Address, slot: &B256, value: U256, block: u64) {
        let before = tx.set_storage(address, slot, value).unwrap();
        if block > 0 {
            tx.record_slot_before(block, address, slot, before).unwrap();
            tx.list_slot_change(block, address, slot).unwrap();
        }
        let (account, slot) = (
            alloy_primitives::keccak256(address),
            alloy_primitives::keccak256(slot),
        );
        tx.put_hashed_slot(&account, &slot, value).unwrap();
    }

    #[test]
    fn history_answers_as_of_any_block() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let a = address!("0x00000000000000000000000000000000000000aa");
        let b = address!("0x00000000000000000000000000000000000000ab");
        let slot = B256::with_last_byte(1);
        let tx = db.writer().unwrap();
        tx.start_trie_history(1, 1).unwrap();
        set_at(&tx, &a, Some(account(1)), 0);
        set_at(&tx, &b, Some(account(9)), 1);
        set_slot_at(&tx, &a, &slot, U256::from(3), 2);
        set_at(&tx, &a, Some(account(2)), 5);
        set_slot_at(&tx, &a, &slot, U256::from(4), 6);
        set_at(&tx, &a, None, 8);
        tx.commit().unwrap();

        let r = db.reader().unwrap();
        assert_eq!(r.account_at(&a, 0).unwrap(), Some(account(1)));
        assert_eq!(r.account_at(&a, 4).unwrap(), Some(account(1)));
        assert_eq!(r.account_at(&a, 5).unwrap(), Some(account(2)));
        assert_eq!(r.account_at(&a, 7).unwrap(), Some(account(2)));
        assert_eq!(r.account_at(&a, 8).unwrap(), None);
        assert_eq!(r.account_at(&a, u64::MAX).unwrap(), None);
        assert_eq!(r.account_at(&b, 0).unwrap(), None);
        assert_eq!(r.account_at(&b, 1).unwrap(), Some(account(9)));
        assert_eq!(r.account_at(&b, u64::MAX).unwrap(), Some(account(9)));
        assert_eq!(r.account(&a).unwrap(), None);
        assert_eq!(r.storage_at(&a, &slot, 1).unwrap(), U256::ZERO);
        assert_eq!(r.storage_at(&a, &slot, 2).unwrap(), U256::from(3));
        assert_eq!(r.storage_at(&a, &slot, 5).unwrap(), U256::from(3));
        assert_eq!(r.storage_at(&a, &slot, 6).unwrap(), U256::from(4));
        assert_eq!(r.storage(&a, &slot).unwrap(), U256::from(4));
        assert_eq!(r.storage_at(&a, &B256::ZERO, 6).unwrap(), U256::ZERO);
    }

    /// A datadir from before layout 6 keeps its plain history for the blocks before the leaf
    /// history starts: reads at those blocks go there, later ones to the leaf history.
    #[test]
    fn blocks_before_the_leaf_history_read_the_plain_history() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let a = address!("0x00000000000000000000000000000000000000aa");
        let slot = B256::with_last_byte(1);
        let tx = db.writer().unwrap();
        // Blocks 0-4 as layout 5 wrote them: the plain state and its history.
        let plain = |block: u64, account: &StoredAccount| {
            let key = history_key(a.as_slice(), block);
            tx.put(
                Table::Legacy(LegacyTable::AccountHistory),
                &key,
                &account.encode(),
            )
            .unwrap();
        };
        plain(0, &account(1));
        plain(3, &account(2));
        let slot_history = history_key(&slot_key(&a, &slot), 2);
        tx.put(
            Table::Legacy(LegacyTable::StorageHistory),
            &slot_history,
            &[7; 32],
        )
        .unwrap();
        set_at(&tx, &a, Some(account(2)), 0);
        set_slot_at(&tx, &a, &slot, U256::from_be_bytes([7; 32]), 0);
        // Then the migration, and block 6 under layout 6.
        tx.start_trie_history(5, 1).unwrap();
        set_at(&tx, &a, Some(account(3)), 6);
        set_slot_at(&tx, &a, &slot, U256::from(1), 6);
        tx.commit().unwrap();

        let r = db.reader().unwrap();
        let accounts: Vec<_> = (0..8).map(|n| r.account_at(&a, n).unwrap()).collect();
        let expected = [1, 1, 1, 2, 2, 2, 3, 3].map(|n| Some(account(n)));
        assert_eq!(accounts, expected);
        let slots: Vec<_> = (0..8)
            .map(|n| r.storage_at(&a, &slot, n).unwrap())
            .collect();
        let seven = U256::from_be_bytes([7; 32]);
        let one = U256::from(1);
        let expected = [U256::ZERO, U256::ZERO, seven, seven, seven, seven, one, one];
        assert_eq!(slots, expected);
        let present: Vec<_> = (0..8).map(|n| r.has_storage_at(&a, n).unwrap()).collect();
        assert_eq!(present, [false, false, true, true, true, true, true, true]);
    }

    /// A snapshot's commit id matches the last commit until another commit lands.
    #[test]
    fn storage_presence_latest_and_as_of_a_block() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let a = address!("0x00000000000000000000000000000000000000aa");
        let b = address!("0x00000000000000000000000000000000000000ab");
        let (one, two) = (B256::with_last_byte(1), B256::with_last_byte(2));
        let tx = db.writer().unwrap();
        tx.start_trie_history(1, 1).unwrap();
        // a: slot 1 set at 2 and cleared at 4; slot 2 set at 6. b: nothing.
        set_slot_at(&tx, &a, &one, U256::from(3), 2);
        set_slot_at(&tx, &a, &one, U256::ZERO, 4);
        set_slot_at(&tx, &a, &two, U256::from(5), 6);
        tx.commit().unwrap();

        let r = db.reader().unwrap();
        let at = |block| r.has_storage_at(&a, block).unwrap();
        assert_eq!(
            [at(1), at(2), at(3), at(4), at(5), at(6), at(9)],
            [false, true, true, false, false, true, true]
        );
        assert!(r.has_storage(&a).unwrap());
        assert!(!r.has_storage(&b).unwrap());
        assert!(!r.has_storage_at(&b, 9).unwrap());
    }

    #[test]
    fn uncommitted_writes_are_invisible_to_readers() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let a = address!("0x00000000000000000000000000000000000000aa");
        let tx = db.writer().unwrap();
        tx.set_account(&a, Some(&account(1))).unwrap();
        assert_eq!(tx.account(&a).unwrap(), Some(account(1)));
        drop(tx);
        assert_eq!(db.reader().unwrap().account(&a).unwrap(), None);
    }
}
