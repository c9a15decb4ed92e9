//! Per-block changesets, the unwind that uses them, and their one-time build from the history.
//!
//! A block's changeset holds every account and slot the block changed, as it was before the
//! block. Unwinding a block restores those values into the latest state, deletes the block's
//! history entries, and removes the block from every table that holds it, all inside the one
//! write transaction: a reader sees the chain before or after, never part of an unwind.

use crate::{
    BlockMark, CHANGESETS_LAYOUT, Error, LegacyTable, MetaKey, Result, StorageTx, StoredAccount,
    Table, b256, history_key,
    models::{self, SlotValue, StorageRootBefore, be_u64},
    slot_key,
};
use alloy_primitives::{Address, B256, U256};
use signet_libmdbx::{RwSync, TransactionKind};
use std::collections::BTreeMap;

/// The key of an account's group of slot entries (and, in layouts before 11, of its changeset
/// entry): the block number (u64 BE) then the address.
fn block_address_key(block: u64, address: &Address) -> [u8; 28] {
    let mut key = [0u8; 28];
    key[..8].copy_from_slice(&block.to_be_bytes());
    key[8..].copy_from_slice(address.as_slice());
    key
}

/// The key of an account's changeset entry: the block number (u32 BE) then the address. Blocks
/// beyond u32 are refused, as the block lists refuse them.
fn account_changeset_key(block: u64, address: &Address) -> Result<[u8; 24]> {
    let mut key = [0u8; 24];
    key[..4].copy_from_slice(&account_changeset_prefix(block)?);
    key[4..].copy_from_slice(address.as_slice());
    Ok(key)
}

/// What every `NarrowAccountChangeSets` key of block `block` starts with: the block as u32 BE.
pub(crate) fn account_changeset_prefix(block: u64) -> Result<[u8; 4]> {
    u32::try_from(block)
        .map(u32::to_be_bytes)
        .map_err(|_| Error::BlockBeyondLists(block))
}

/// A slot's entry in its `StorageChangeGroups` group: the slot, then its value before the
/// block without leading zero bytes.
fn slot_change_value(slot: &B256, before: U256) -> Vec<u8> {
    [slot.as_slice(), SlotValue::new(before).as_slice()].concat()
}

/// A `StorageChangeGroups` entry as (address, slot, value before the block).
fn decode_slot_change(key: &[u8], value: &[u8]) -> Result<(Address, B256, U256)> {
    match (key.get(8..28), value.get(..32), value.get(32..)) {
        (Some(address), Some(slot), Some(before)) if key.len() == 28 && before.len() <= 32 => Ok((
            Address::from_slice(address),
            B256::from_slice(slot),
            U256::from_be_slice(before),
        )),
        _ => Err(Error::Corrupt(format!(
            "malformed storage change group entry ({} key bytes, {} value bytes)",
            key.len(),
            value.len()
        ))),
    }
}

/// An account changeset entry: the account before the block (`None`: there was none) and what
/// it records of its storage root then (entries written before layout 8 record none, which
/// reads as the empty trie's).
pub type AccountBefore = Option<(StoredAccount, StorageRootBefore)>;

fn decode_account_before(value: &[u8]) -> Result<AccountBefore> {
    if value.is_empty() {
        return Ok(None);
    }
    models::decode_account_before(value).map(Some)
}

fn decode_account(value: &[u8]) -> Result<Option<StoredAccount>> {
    Ok(decode_account_before(value)?.map(|(account, _)| account))
}

/// One account as an unwind left it: its state at the ancestor, and each slot the unwound
/// blocks had changed, with its value at the ancestor (zero: unset). Every block that changes
/// a slot also records its account, so `account` is always the ancestor's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestoredAccount {
    pub account: Option<StoredAccount>,
    pub storage: BTreeMap<B256, U256>,
}

/// What `unwind_to` did.
#[derive(Debug, Clone, Default)]
pub struct Unwound {
    /// The blocks removed, highest first: number and hash.
    pub removed: Vec<(u64, B256)>,
    /// Every account and slot the removed blocks had changed, as the ancestor has it.
    pub restored: BTreeMap<Address, RestoredAccount>,
}

impl<K: TransactionKind> StorageTx<K> {
    /// How many unwinds were ever committed: a reader that remembers answers by block number
    /// drops them when this changes.
    pub fn unwind_count(&self) -> Result<u64> {
        Ok(self.meta_u64(MetaKey::Unwinds)?.unwrap_or(0))
    }

    /// The accounts block `number` changed, each as it was before the block.
    pub fn account_changeset(&self, number: u64) -> Result<Vec<(Address, Option<StoredAccount>)>> {
        let mut out = Vec::new();
        // No block beyond u32 has a changeset.
        let Ok(prefix) = account_changeset_prefix(number) else {
            return Ok(out);
        };
        self.for_each_with_prefix(Table::NarrowAccountChangeSets, &prefix, |key, value| {
            out.push((Address::from_slice(&key[4..]), decode_account(value)?));
            Ok(())
        })?;
        Ok(out)
    }

    /// The slots block `number` changed, each with its value before the block.
    pub fn storage_changeset(&self, number: u64) -> Result<Vec<(Address, B256, U256)>> {
        let mut out = Vec::new();
        // A cursor's `next` walks every value of a group before the next group.
        self.for_each_with_prefix(
            Table::StorageChangeGroups,
            &number.to_be_bytes(),
            |key, value| {
                out.push(decode_slot_change(key, value)?);
                Ok(())
            },
        )?;
        Ok(out)
    }

    /// Every account and slot that the blocks after `block` changed, each as it was after
    /// `block`: what an unwind to `block` would restore, read from the changesets alone. Its
    /// cost follows the changes since `block`, not the size of the state.
    pub fn reverts_to(&self, block: u64) -> Result<BTreeMap<Address, RestoredAccount>> {
        match self.head()? {
            Some((head, _)) => self.reverts_between(block, head),
            None => Ok(BTreeMap::new()),
        }
    }

    /// Every account and slot that blocks `block + 1` through `upto` changed, each as it was
    /// after `block`: what takes the state after `upto` back to the state after `block`.
    pub fn reverts_between(
        &self,
        block: u64,
        upto: u64,
    ) -> Result<BTreeMap<Address, RestoredAccount>> {
        self.check_state_kept(block)?;
        let mut restored: BTreeMap<Address, RestoredAccount> = BTreeMap::new();
        // From the latest block down, so that the oldest block's "before" values are kept.
        for number in (block.saturating_add(1)..=upto).rev() {
            for (address, before) in self.account_changeset(number)? {
                restored.entry(address).or_default().account = before;
            }
            for (address, slot, before) in self.storage_changeset(number)? {
                restored
                    .entry(address)
                    .or_default()
                    .storage
                    .insert(slot, before);
            }
        }
        Ok(restored)
    }

    /// The slots block `number` changed in `address`, each with its value before the block:
    /// the block's group for the account.
    pub(crate) fn account_storage_changeset(
        &self,
        number: u64,
        address: &Address,
    ) -> Result<Vec<(B256, U256)>> {
        let mut out = Vec::new();
        let group = [&number.to_be_bytes()[..], address.as_slice()].concat();
        self.for_each_with_prefix(Table::StorageChangeGroups, &group, |key, value| {
            let (_, slot, before) = decode_slot_change(key, value)?;
            out.push((slot, before));
            Ok(())
        })?;
        Ok(out)
    }

    /// Every account and slot that blocks `from + 1` through `block` changed, each as it was
    /// after `block` (from the state history): what takes the state after `from` forward to
    /// the state after `block`.
    pub fn changes_between(
        &self,
        from: u64,
        block: u64,
    ) -> Result<BTreeMap<Address, RestoredAccount>> {
        // The same keys as the reverts between the two, with their values after `block`.
        let mut changed = self.reverts_between(from, block)?;
        for (address, restored) in &mut changed {
            restored.account = self.account_at(address, block)?;
            for (slot, value) in &mut restored.storage {
                *value = self.storage_at(address, slot, block)?;
            }
        }
        Ok(changed)
    }

    /// The changeset entry of `address` at block `number`: `None` when the block did not change
    /// it, else the account before the block and its storage root then, if recorded.
    pub fn account_changeset_entry(
        &self,
        number: u64,
        address: &Address,
    ) -> Result<Option<AccountBefore>> {
        let Ok(key) = account_changeset_key(number, address) else {
            return Ok(None);
        };
        self.get(Table::NarrowAccountChangeSets, &key)?
            .map(|value| decode_account_before(&value))
            .transpose()
    }

    /// The changeset entry of the slot with plain key `plain` (address then slot) at block
    /// `number`: its value before the block, if the block changed it.
    pub(crate) fn slot_changeset_entry(&self, number: u64, plain: &[u8]) -> Result<Option<U256>> {
        let (Some(address), Some(slot)) = (plain.get(..20), plain.get(20..)) else {
            return Err(Error::Corrupt(format!(
                "a slot's plain key has {} bytes",
                plain.len()
            )));
        };
        let key = [&number.to_be_bytes()[..], address].concat();
        let mut cursor = self.tx.cursor(self.db(Table::StorageChangeGroups))?;
        // The group's first value at or after the slot: the slot's, if the block changed it.
        Ok(cursor
            .get_both_range::<Vec<u8>>(&key, slot)?
            .filter(|value| value.starts_with(slot))
            .map(|value| U256::from_be_slice(&value[slot.len()..])))
    }

    fn for_each_with_prefix(
        &self,
        table: Table,
        prefix: &[u8],
        mut f: impl FnMut(&[u8], &[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut cursor = self.tx.cursor(self.db(table))?;
        let mut entry = cursor.set_range::<Vec<u8>, Vec<u8>>(prefix)?;
        while let Some((key, value)) = entry {
            if !key.starts_with(prefix) {
                break;
            }
            f(&key, &value)?;
            entry = cursor.next::<Vec<u8>, Vec<u8>>()?;
        }
        Ok(())
    }
}

impl StorageTx<RwSync> {
    /// Records `address`'s account before `block` and what is known of its storage root then
    /// (a proof at an older block reads the account's trie leaf from the entry). Written
    /// whole, once: entries are appended in key order into full pages, and growing one later
    /// would split its page.
    pub(crate) fn record_account_before(
        &self,
        block: u64,
        address: &Address,
        before: Option<&StoredAccount>,
        storage_root: StorageRootBefore,
    ) -> Result<()> {
        let value = match before {
            Some(account) => models::encode_account_before(account, storage_root),
            None => Vec::new(),
        };
        self.append(
            Table::NarrowAccountChangeSets,
            &account_changeset_key(block, address)?,
            &value,
        )
    }

    /// Adds to the changeset entry of `address` at `block` its storage root before the block
    /// (nothing for the empty trie's, which is what an entry without one means): how
    /// `quarry migrate` gives the entries of older layouts their roots.
    pub(crate) fn add_storage_root(
        &self,
        block: u64,
        address: &Address,
        storage_root: B256,
    ) -> Result<()> {
        if storage_root == alloy_trie::EMPTY_ROOT_HASH {
            return Ok(());
        }
        let key = account_changeset_key(block, address)?;
        let Some(value) = self.get(Table::NarrowAccountChangeSets, &key)? else {
            return Ok(());
        };
        let Some((account, recorded)) = decode_account_before(&value)? else {
            return Ok(());
        };
        drop(value);
        let root = StorageRootBefore::Known(Some(storage_root));
        if recorded != root {
            let value = models::encode_account_before(&account, root);
            self.put(Table::NarrowAccountChangeSets, &key, &value)?;
        }
        Ok(())
    }

    /// Records `slot`'s value before `block` in the block's group for `address`. Each slot is
    /// recorded once per block: a second record would be a second value in the group.
    pub(crate) fn record_slot_before(
        &self,
        block: u64,
        address: &Address,
        slot: &B256,
        before: U256,
    ) -> Result<()> {
        self.append_to_group(
            Table::StorageChangeGroups,
            &block_address_key(block, address),
            &slot_change_value(slot, before),
        )
    }

    /// Deletes the values before block `number` of every slot of `address` it changed.
    pub(crate) fn del_storage_change_group(&self, number: u64, address: &Address) -> Result<()> {
        self.del(
            Table::StorageChangeGroups,
            &block_address_key(number, address),
        )
    }

    /// Removes every block above `ancestor` from every table that holds it and restores the
    /// latest state to what it was after `ancestor`; `safe` and `finalized` marks above it move
    /// down to it. Commit the transaction to make the unwind (and whatever is written after it)
    /// visible at once.
    pub fn unwind_to(&self, ancestor: u64) -> Result<Unwound> {
        // The unwound blocks' index entries may still be staged: they must be there to delete.
        self.write_staged()?;
        let mut unwound = Unwound::default();
        let Some((head, _)) = self.head()? else {
            return Ok(unwound);
        };
        if head <= ancestor {
            return Ok(unwound);
        }
        if self.canonical_hash(ancestor)?.is_none() {
            return Err(Error::Corrupt(format!(
                "cannot unwind to block {ancestor}: it is not stored"
            )));
        }
        self.check_unwind_within_window(ancestor)?;
        for number in (ancestor + 1..=head).rev() {
            let hash = self.unwind_block(number, &mut unwound.restored)?;
            unwound.removed.push((number, hash));
        }
        for mark in [BlockMark::Safe, BlockMark::Finalized] {
            if self.meta_block(mark)?.is_some_and(|block| block > ancestor) {
                self.put_meta_block(mark, ancestor)?;
            }
        }
        self.trie_history_unwound(ancestor)?;
        let count = self.unwind_count()? + 1;
        self.put_meta(MetaKey::Unwinds, &count.to_be_bytes())?;
        Ok(unwound)
    }

    /// Removes the head block `number`; returns its hash. Its changeset's values overwrite what
    /// `restored` holds, so after unwinding blocks from the head down it holds the oldest.
    fn unwind_block(
        &self,
        number: u64,
        restored: &mut BTreeMap<Address, RestoredAccount>,
    ) -> Result<B256> {
        let key = number.to_be_bytes();
        let missing = |what: &str| Error::Corrupt(format!("unwinding block {number}: no {what}"));
        let hash = self
            .canonical_hash(number)?
            .ok_or_else(|| missing("hash"))?;
        for (index, tx_hash) in self
            .transaction_hashes(number)?
            .into_iter()
            .flatten()
            .enumerate()
        {
            let location = crate::TxLocation {
                block_number: number,
                index: index as u32,
            };
            self.del_tx_lookup(&tx_hash, location)?;
        }
        let receipts = self.receipts(number)?.unwrap_or_default();
        self.unindex_block_logs(number, &receipts)?;
        self.unindex_block_traces(number)?;
        self.del(Table::HeaderNumbers, hash.as_slice())?;
        for table in [
            Table::Headers,
            Table::CanonicalHashes,
            Table::TotalDifficulty,
            Table::TxCounts,
        ] {
            self.del(table, &key)?;
        }
        for table in [
            Table::BlockBodies,
            Table::Senders,
            Table::Receipts,
            Table::BlockTxHashes,
        ] {
            self.del_chunked(table, number)?;
        }

        let accounts = self.account_changeset(number)?;
        let slots = self.storage_changeset(number)?;
        self.delete_trie_history(number, &accounts, &slots)?;
        for (address, before) in accounts {
            match &before {
                Some(account) => {
                    self.put(Table::PlainAccounts, address.as_slice(), &account.encode())?
                }
                None => self.del(Table::PlainAccounts, address.as_slice())?,
            }
            self.del(
                Table::Legacy(LegacyTable::AccountHistory),
                &history_key(address.as_slice(), number),
            )?;
            self.del(
                Table::NarrowAccountChangeSets,
                &account_changeset_key(number, &address)?,
            )?;
            restored.entry(address).or_default().account = before;
        }
        // The slots come group by group: each group is deleted whole, once.
        let mut deleted_group = None;
        for (address, slot, before) in slots {
            if deleted_group != Some(address) {
                self.del_storage_change_group(number, &address)?;
                deleted_group = Some(address);
            }
            let plain = slot_key(&address, &slot);
            if before.is_zero() {
                self.del(Table::PlainStorage, &plain)?;
            } else {
                self.put(
                    Table::PlainStorage,
                    &plain,
                    SlotValue::new(before).as_slice(),
                )?;
            }
            self.del(
                Table::Legacy(LegacyTable::StorageHistory),
                &history_key(&plain, number),
            )?;
            restored
                .entry(address)
                .or_default()
                .storage
                .insert(slot, before);
        }
        Ok(hash)
    }

    /// Moves at most `max_entries` changeset entries of layouts before 11 into this layout's
    /// tables: the accounts' from `AccountChangeSets` to their narrow keys, then the slots' from
    /// `StorageChangeSets` into their groups, deleting each where it was in the same
    /// transaction, so a migration stopped at any commit resumes where the old tables still
    /// hold entries. Returns `true` once both are empty.
    pub(crate) fn move_wide_changesets(&self, max_entries: u64) -> Result<bool> {
        let mut budget = max_entries;
        let accounts_done = self.drain(
            Table::Legacy(LegacyTable::AccountChangeSets),
            &mut budget,
            |key, value| {
                let (Some(block), Some(address)) = (key.get(..8), key.get(8..)) else {
                    return Err(Error::Corrupt("malformed account changeset key".into()));
                };
                if address.len() != 20 {
                    return Err(Error::Corrupt(format!(
                        "account changeset key of {} bytes",
                        key.len()
                    )));
                }
                let narrow = account_changeset_key(be_u64(block)?, &Address::from_slice(address))?;
                self.append(Table::NarrowAccountChangeSets, &narrow, value)
            },
        )?;
        if !accounts_done {
            return Ok(false);
        }
        self.drain(
            Table::Legacy(LegacyTable::StorageChangeSets),
            &mut budget,
            |key, value| {
                let (Some(group), Some(slot)) = (key.get(..28), key.get(28..)) else {
                    return Err(Error::Corrupt("malformed storage changeset key".into()));
                };
                if slot.len() != 32 || value.len() > 32 {
                    return Err(Error::Corrupt(format!(
                        "storage changeset entry of {} key and {} value bytes",
                        key.len(),
                        value.len()
                    )));
                }
                // Values of layouts before compact ones hold all 32 bytes.
                let before = SlotValue::new(U256::from_be_slice(value));
                let grouped = [slot, before.as_slice()].concat();
                self.append_to_group(Table::StorageChangeGroups, group, &grouped)
            },
        )
    }

    /// Hands `table`'s entries from the first to `moved` and deletes each, until `budget` runs
    /// out (returns `false`) or the table is empty (`true`).
    fn drain(
        &self,
        table: Table,
        budget: &mut u64,
        mut moved: impl FnMut(&[u8], &[u8]) -> Result<()>,
    ) -> Result<bool> {
        let mut cursor = self.tx.cursor(self.db(table))?;
        let mut entry = cursor.first::<Vec<u8>, Vec<u8>>()?;
        while let Some((key, value)) = entry {
            if *budget == 0 {
                return Ok(false);
            }
            moved(&key, &value)?;
            *budget -= 1;
            entry = crate::delete_and_next::<Vec<u8>, Vec<u8>>(&mut cursor)?;
        }
        Ok(true)
    }

    /// Builds the changesets of a database written before quarry recorded them (layout 1),
    /// from its history: the value before block N is the history entry before N's, or none.
    /// Processes at most `max_entries` history entries per call, recording how far it got in
    /// the same transaction, so a migration interrupted at any point resumes. Returns `true`
    /// once every changeset is built (and the layout is 2).
    pub(crate) fn build_changesets(&self, max_entries: u64) -> Result<bool> {
        if self.schema_version()? >= CHANGESETS_LAYOUT {
            return Ok(true);
        }
        let (mut phase, mut after) = match self.meta(MetaKey::ChangesetsProgress)? {
            Some(value) if !value.is_empty() => (value[0], Some(value[1..].to_vec())),
            _ => (0, None),
        };
        let mut budget = max_entries;
        while phase < 2 {
            let (table, prefix_len) = if phase == 0 {
                (Table::Legacy(LegacyTable::AccountHistory), 20)
            } else {
                (Table::Legacy(LegacyTable::StorageHistory), 52)
            };
            let done = self.changesets_from_history(table, prefix_len, &mut after, &mut budget)?;
            if !done {
                let mut progress = vec![phase];
                progress.extend_from_slice(after.as_deref().unwrap_or_default());
                self.put_meta(MetaKey::ChangesetsProgress, &progress)?;
                return Ok(false);
            }
            phase += 1;
            after = None;
        }
        self.del_meta(MetaKey::ChangesetsProgress)?;
        self.put_schema(CHANGESETS_LAYOUT)?;
        Ok(true)
    }

    /// Walks `table` (keys: a prefix of `prefix_len` bytes, then the block) past key `after`,
    /// writing one changeset entry per history entry of a block above 0. Returns whether the
    /// table is done; otherwise `after` is the last key written.
    fn changesets_from_history(
        &self,
        table: Table,
        prefix_len: usize,
        after: &mut Option<Vec<u8>>,
        budget: &mut u64,
    ) -> Result<bool> {
        let mut cursor = self.tx.cursor(self.db(table))?;
        // The value before the first entry of a key is "none"; resuming, it is the value of
        // the last entry done, if that entry has the same prefix.
        let (mut entry, mut previous) = match after.as_deref() {
            Some(last) => {
                let at = cursor.set_key::<Vec<u8>, Vec<u8>>(last)?;
                let previous = at.map(|(key, value)| (key[..prefix_len].to_vec(), value));
                (cursor.next::<Vec<u8>, Vec<u8>>()?, previous)
            }
            None => (cursor.first::<Vec<u8>, Vec<u8>>()?, None),
        };
        while let Some((key, value)) = entry {
            if *budget == 0 {
                return Ok(false);
            }
            if key.len() != prefix_len + 8 {
                return Err(Error::Corrupt(format!(
                    "{} key has {} bytes",
                    table.name(),
                    key.len()
                )));
            }
            let (prefix, block) = key.split_at(prefix_len);
            let block = be_u64(block)?;
            let before = previous
                .as_ref()
                .filter(|(p, _)| p.as_slice() == prefix)
                .map(|(_, v)| v.as_slice());
            if block > 0 {
                let address = Address::from_slice(&prefix[..20]);
                if prefix_len == 20 {
                    let before = before.map(decode_account).transpose()?.flatten();
                    // Layout 1's history predates the trie: no storage roots to record.
                    self.record_account_before(
                        block,
                        &address,
                        before.as_ref(),
                        StorageRootBefore::Known(None),
                    )?;
                } else {
                    let slot = b256("history slot", &prefix[20..])?;
                    let before = before.map_or(U256::ZERO, U256::from_be_slice);
                    self.record_slot_before(block, &address, &slot, before)?;
                }
            }
            *budget -= 1;
            *after = Some(key.clone());
            previous = Some((prefix.to_vec(), value));
            entry = cursor.next::<Vec<u8>, Vec<u8>>()?;
        }
        Ok(true)
    }
}

/// Moves every changeset entry into the tables and keys of layouts before 11: the accounts'
/// to `AccountChangeSets` with the block in 8 bytes, the slots out of their groups into
/// `StorageChangeSets`. What a test starts an older layout's migration from.
#[cfg(test)]
pub(crate) fn widen_changesets(tx: &StorageTx<RwSync>) {
    let mut entries = Vec::new();
    for table in [Table::NarrowAccountChangeSets, Table::StorageChangeGroups] {
        let mut cursor = tx.tx.cursor(tx.db(table)).unwrap();
        let mut entry = cursor.first::<Vec<u8>, Vec<u8>>().unwrap();
        while let Some((key, value)) = entry {
            entries.push(match table {
                Table::NarrowAccountChangeSets => {
                    let block = u64::from(u32::from_be_bytes(key[..4].try_into().unwrap()));
                    let wide = [&block.to_be_bytes()[..], &key[4..]].concat();
                    (Table::Legacy(LegacyTable::AccountChangeSets), wide, value)
                }
                _ => (
                    Table::Legacy(LegacyTable::StorageChangeSets),
                    [&key[..], &value[..32]].concat(),
                    value[32..].to_vec(),
                ),
            });
            entry = cursor.next::<Vec<u8>, Vec<u8>>().unwrap();
        }
        drop(cursor);
        tx.tx.clear_db(tx.db(table)).unwrap();
    }
    assert!(
        entries
            .iter()
            .any(|(t, ..)| *t == Table::Legacy(LegacyTable::StorageChangeSets)),
        "no storage changesets to widen"
    );
    for (table, key, value) in entries {
        tx.put(table, &key, &value).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AccountChange, BlockRecord, Database, ReceiptOutcome, StoredBody, StoredReceipt};
    use alloy_consensus::{Header, Signed, TxEnvelope, TxLegacy};
    use alloy_primitives::{Log, LogData, Signature, TxKind, address};

    const A: Address = address!("0x00000000000000000000000000000000000000aa");
    const B: Address = address!("0x00000000000000000000000000000000000000bb");

    fn account(nonce: u64) -> StoredAccount {
        StoredAccount {
            nonce,
            balance: U256::from(nonce * 7),
            code_hash: B256::ZERO,
        }
    }

    /// Block `number` of branch `branch`: one transaction with one log, and state changes
    /// that differ by branch (creations, deletions, slot writes and a self-destruct).
    fn write_block(tx: &StorageTx<RwSync>, number: u64, branch: u8) {
        let header = Header {
            number,
            extra_data: vec![branch].into(),
            ..Default::default()
        };
        let legacy = TxLegacy {
            nonce: number,
            gas_limit: 21_000 + u64::from(branch),
            to: TxKind::Call(A),
            ..Default::default()
        };
        let hash = B256::with_last_byte(number as u8 ^ (branch << 4));
        let transaction = TxEnvelope::Legacy(Signed::new_unchecked(
            legacy,
            Signature::test_signature(),
            hash,
        ));
        let body = StoredBody {
            transactions: vec![transaction],
            ommers: Vec::new(),
            withdrawals: None,
        };
        let log = Log {
            address: if branch == 0 { A } else { B },
            data: LogData::new_unchecked(vec![B256::with_last_byte(branch)], Default::default()),
        };
        let receipt = StoredReceipt {
            tx_type: 0,
            outcome: ReceiptOutcome::Status(true),
            cumulative_gas_used: 21_000,
            gas_used: 21_000,
            effective_gas_price: 1,
            contract_address: None,
            blob_gas: None,
            logs: vec![log],
        };
        tx.insert_block(&BlockRecord {
            hash: header.hash_slow(),
            header: &header,
            body: &body,
            senders: &[B],
            receipts: &[receipt],
            total_difficulty: U256::from(number),
        })
        .unwrap();
        // The frames name the sender B and the recipient A, which the block names itself, and
        // an address only a frame names: the unwind must take the block out of all three lists.
        let named = crate::block_named_addresses(&header, &body, &[B]);
        let internal = Address::repeat_byte(0xc0 + branch);
        tx.index_block_traces(number, &[B, A, internal], &named)
            .unwrap();
        let slot = |k: u8| B256::with_last_byte(k);
        let changes = match (number, branch) {
            (1, _) => vec![AccountChange {
                address: A,
                account: Some(account(1)),
                wiped: false,
                storage: vec![(slot(1), U256::from(11)), (slot(2), U256::from(12))],
            }],
            (_, 0) => vec![
                AccountChange {
                    address: A,
                    account: Some(account(number)),
                    wiped: number == 3,
                    storage: vec![(slot(3), U256::from(number))],
                },
                AccountChange {
                    address: B,
                    account: number.is_multiple_of(2).then(|| account(100 + number)),
                    wiped: false,
                    storage: Vec::new(),
                },
            ],
            _ => vec![AccountChange {
                address: A,
                account: Some(account(50 + number)),
                wiped: false,
                storage: vec![(slot(1), U256::ZERO), (slot(4), U256::from(number))],
            }],
        };
        tx.apply_state_changes(number, &changes, &[]).unwrap();
    }

    /// Digests of every table but Meta (its unwind counter differs by design).
    use crate::maintenance::migrate::table_digests as digests;

    fn chain(db: &Database, blocks: &[(u64, u8)]) {
        let tx = db.writer().unwrap();
        tx.put_schema_version().unwrap();
        tx.apply_state_changes(0, &[], &[]).unwrap();
        tx.insert_block(&BlockRecord {
            hash: Header::default().hash_slow(),
            header: &Header::default(),
            body: &StoredBody::default(),
            senders: &[],
            receipts: &[],
            total_difficulty: U256::ZERO,
        })
        .unwrap();
        tx.index_block_traces(0, &[], &[]).unwrap();
        for (number, branch) in blocks {
            write_block(&tx, *number, *branch);
        }
        tx.commit().unwrap();
    }

    /// Unwinding to block 1 and applying another branch leaves every table exactly as a
    /// database that only ever held the new chain.
    #[test]
    fn unwind_then_branch_equals_the_branch_alone() {
        let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (reorged, fresh) = (
            Database::open(dir_a.path()).unwrap(),
            Database::open(dir_b.path()).unwrap(),
        );
        chain(&reorged, &[(1, 0), (2, 0), (3, 0), (4, 0)]);
        chain(&fresh, &[(1, 0), (2, 1), (3, 1)]);

        let tx = reorged.writer().unwrap();
        tx.put_meta_block(BlockMark::Safe, 4).unwrap();
        let unwound = tx.unwind_to(1).unwrap();
        assert_eq!(
            unwound.removed.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            [4, 3, 2]
        );
        // The restored values are block 1's: A as created there with its two slots, B absent.
        assert_eq!(unwound.restored[&A].account, Some(account(1)));
        assert_eq!(
            unwound.restored[&A].storage[&B256::with_last_byte(1)],
            U256::from(11)
        );
        assert_eq!(
            unwound.restored[&A].storage[&B256::with_last_byte(3)],
            U256::ZERO
        );
        assert_eq!(unwound.restored[&B].account, None);
        assert_eq!(tx.head().unwrap().map(|(n, _)| n), Some(1));
        assert_eq!(tx.meta_block(BlockMark::Safe).unwrap(), Some(1));
        write_block(&tx, 2, 1);
        write_block(&tx, 3, 1);
        tx.commit().unwrap();

        for ((table, got), (_, want)) in digests(&reorged).into_iter().zip(digests(&fresh)) {
            assert_eq!(got, want, "table {}", table.name());
        }
        let r = reorged.reader().unwrap();
        assert_eq!(r.unwind_count().unwrap(), 1);
        assert_eq!(r.log_index_head().unwrap(), Some(3));
    }

    /// A layout 10 datadir's changesets (account keys with 8-byte blocks, one entry per slot)
    /// move into this layout's tables in resumable steps: the tables then equal those the
    /// current layout writes, and the values before each block read as they did.
    #[test]
    fn layout_10_changesets_move_into_narrow_keys_and_groups() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        chain(&db, &[(1, 0), (2, 0), (3, 0), (4, 0)]);
        let written = digests(&db);
        let befores = |db: &Database| {
            let r = db.reader().unwrap();
            let mut out = Vec::new();
            for number in 1..=4 {
                for (address, before) in r.account_changeset(number).unwrap() {
                    let entry = r.account_changeset_entry(number, &address).unwrap();
                    let entry = entry.unwrap().map(|(account, _)| account);
                    assert_eq!(entry, before, "block {number} account {address}");
                    let balance = before.map(|account| U256::from(account.nonce));
                    out.push((number, address, B256::ZERO, balance.unwrap_or(U256::MAX)));
                }
                for (address, slot, before) in r.storage_changeset(number).unwrap() {
                    let plain = slot_key(&address, &slot);
                    let entry = r.slot_changeset_entry(number, &plain).unwrap();
                    assert_eq!(entry, Some(before), "block {number} slot {slot}");
                    out.push((number, address, slot, before));
                }
                let absent = slot_key(&A, &B256::repeat_byte(0xee));
                assert_eq!(r.slot_changeset_entry(number, &absent).unwrap(), None);
            }
            out
        };
        let before = befores(&db);
        assert!(before.len() >= 6, "{before:?}");
        let tx = db.writer().unwrap();
        widen_changesets(&tx);
        tx.put_schema(crate::maintenance::migrate::TOPIC_LISTS_LAYOUT)
            .unwrap();
        tx.commit().unwrap();
        assert_ne!(digests(&db), written);

        let steps = crate::maintenance::migrate::migrate_in_steps(&db, 1);
        assert!(steps >= before.len(), "{steps} steps");
        assert_eq!(digests(&db), written);
        assert_eq!(befores(&db), before);
        let r = db.reader().unwrap();
        assert_eq!(r.schema_version().unwrap(), crate::SCHEMA_VERSION);
        for table in [
            Table::Legacy(LegacyTable::AccountChangeSets),
            Table::Legacy(LegacyTable::StorageChangeSets),
        ] {
            assert_eq!(r.table_digest(table).unwrap().0, 0, "{}", table.name());
        }
    }

    /// A datadir of the layout before the trie history records it from the block after its
    /// head on; an unwind below that start moves it down to the block after the ancestor.
    #[test]
    fn trie_history_starts_after_the_head_of_a_migrated_datadir() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        chain(&db, &[(1, 0), (2, 0), (3, 0), (4, 0)]);
        let tx = db.writer().unwrap();
        tx.put_schema(crate::maintenance::migrate::TRIE_HISTORY_LAYOUT - 1)
            .unwrap();
        tx.del_meta(MetaKey::StateHistoryFrom).unwrap();
        assert!(!tx.migrate_step(10).unwrap());
        while !tx.migrate_step(10).unwrap() {}
        tx.commit().unwrap();
        let r = db.reader().unwrap();
        assert_eq!(r.schema_version().unwrap(), crate::SCHEMA_VERSION);
        assert_eq!(r.trie_history_from().unwrap(), Some(5));
        assert_eq!(r.state_history_from().unwrap(), Some(5));
        assert!(r.trie_history_covers(4).unwrap());
        assert!(!r.trie_history_covers(3).unwrap());
        drop(r);
        let tx = db.writer().unwrap();
        tx.unwind_to(2).unwrap();
        tx.commit().unwrap();
        let r = db.reader().unwrap();
        assert_eq!(r.trie_history_from().unwrap(), Some(3));
        assert_eq!(r.state_history_from().unwrap(), Some(3));
    }

    /// A layout 5 datadir whose trie history was stopped recorded no leaf history: after the
    /// migration its state history starts after the head.
    #[test]
    fn a_datadir_without_trie_history_gets_its_state_history_after_the_head() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        chain(&db, &[(1, 0), (2, 0), (3, 0)]);
        let tx = db.writer().unwrap();
        tx.put_schema(crate::maintenance::migrate::STATE_HISTORY_LAYOUT - 1)
            .unwrap();
        tx.stop_trie_history().unwrap();
        tx.del_meta(MetaKey::StateHistoryFrom).unwrap();
        while !tx.migrate_step(10).unwrap() {}
        tx.commit().unwrap();
        let r = db.reader().unwrap();
        assert_eq!(r.trie_history_from().unwrap(), None);
        assert_eq!(r.state_history_from().unwrap(), Some(4));
    }

    /// Writes the plain history layouts before 6 kept (each change's value after its block)
    /// from the changesets and the latest state: what a layout 1 datadir holds.
    fn write_plain_history(db: &Database) {
        let tx = db.writer().unwrap();
        let (head, _) = tx.head().unwrap().unwrap();
        let mut accounts: BTreeMap<Address, Vec<(u64, Option<StoredAccount>)>> = BTreeMap::new();
        let mut slots: BTreeMap<(Address, B256), Vec<(u64, U256)>> = BTreeMap::new();
        for number in 1..=head {
            for (address, before) in tx.account_changeset(number).unwrap() {
                accounts.entry(address).or_default().push((number, before));
            }
            for (address, slot, before) in tx.storage_changeset(number).unwrap() {
                slots
                    .entry((address, slot))
                    .or_default()
                    .push((number, before));
            }
        }
        for (address, changes) in accounts {
            for (i, (number, _)) in changes.iter().enumerate() {
                let after = match changes.get(i + 1) {
                    Some((_, before)) => *before,
                    None => tx.account(&address).unwrap(),
                };
                let value = after.map(|a| a.encode()).unwrap_or_default();
                let key = history_key(address.as_slice(), *number);
                tx.put(Table::Legacy(LegacyTable::AccountHistory), &key, &value)
                    .unwrap();
            }
        }
        for ((address, slot), changes) in slots {
            for (i, (number, _)) in changes.iter().enumerate() {
                let after = match changes.get(i + 1) {
                    Some((_, before)) => *before,
                    None => tx.storage(&address, &slot).unwrap(),
                };
                let key = history_key(&slot_key(&address, &slot), *number);
                tx.put(
                    Table::Legacy(LegacyTable::StorageHistory),
                    &key,
                    &after.to_be_bytes::<32>(),
                )
                .unwrap();
            }
        }
        tx.commit().unwrap();
    }

    /// Changesets built from the history of a database that had none equal the recorded ones,
    /// however many batches the build takes.
    #[test]
    fn changesets_built_from_history_equal_recorded_ones() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        chain(&db, &[(1, 0), (2, 0), (3, 0), (4, 0)]);
        write_plain_history(&db);
        let recorded = digests(&db);
        let tx = db.writer().unwrap();
        for table in [Table::NarrowAccountChangeSets, Table::StorageChangeGroups] {
            tx.tx.clear_db(tx.db(table)).unwrap();
        }
        tx.put_schema(1).unwrap();
        tx.commit().unwrap();
        assert_eq!(db.reader().unwrap().schema_version().unwrap(), 1);

        let mut batches = 0;
        loop {
            let tx = db.writer().unwrap();
            let done = tx.build_changesets(2).unwrap();
            tx.commit().unwrap();
            batches += 1;
            if done {
                break;
            }
        }
        assert!(batches > 3, "{batches} batches");
        assert_eq!(
            db.reader().unwrap().schema_version().unwrap(),
            CHANGESETS_LAYOUT
        );
        assert_eq!(digests(&db), recorded);
    }
}
