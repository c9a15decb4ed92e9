//! The migration step to `STATE_LISTS_LAYOUT`: builds the state history's block lists
//! (state_lists.rs) from the changesets of a datadir whose state history was the leaf history
//! (layout 6's `hashed_accounts_history` and `hashed_storages_history`, see legacy.rs), adds
//! to each account changeset entry the storage root that leaf history recorded, and then empties
//! those tables. Resumable: it records how far it got in `state_lists_progress`.

use crate::{
    Error, LegacyTable, MetaKey, Result, StorageTx, Table,
    history::state_lists::{Lists, shard_key},
    models::be_u64,
};
use alloy_primitives::{Address, B256, keccak256};
use signet_libmdbx::{RwSync, TransactionKind, tx::Cursor};

/// A changeset entry as (key, value).
type Entry = (Vec<u8>, Vec<u8>);

/// The changeset entry after position `last`, as `lists_from_changesets` records positions:
/// a `NarrowAccountChangeSets` key, or a `StorageChangeGroups` key (28 bytes) then the slot.
fn entry_after<K: TransactionKind>(
    cursor: &mut Cursor<'_, K>,
    last: &[u8],
) -> Result<Option<Entry>> {
    if last.len() != 60 {
        return Ok(match cursor.set_range::<Vec<u8>, Vec<u8>>(last)? {
            Some((key, _)) if key == last => cursor.next()?,
            other => other,
        });
    }
    let (key, slot) = last.split_at(28);
    if cursor.set_key::<(), ()>(key)?.is_none() {
        return Ok(cursor.set_range(key)?);
    }
    match cursor.get_both_range::<Vec<u8>>(key, slot)? {
        Some(value) if value.starts_with(slot) => Ok(cursor.next()?),
        Some(value) => Ok(Some((key.to_vec(), value))),
        // Every slot of the group sorts before it: the next group's first.
        None => {
            cursor.set_key::<(), ()>(key)?;
            Ok(cursor.next_nodup()?)
        }
    }
}

/// A listing position as this layout's tables have it: a build before layout 11 that stopped
/// listing the account changesets recorded an account key with the block in 8 bytes (28
/// bytes), which becomes the same key with the block in 4. Other positions stay as they are
/// (a storage position, 60 bytes, reads the same in the groups).
fn narrow_account_position(last: &[u8]) -> Result<Vec<u8>> {
    if last.len() != 28 {
        return Ok(last.to_vec());
    }
    let block = crate::history::changesets::account_changeset_prefix(be_u64(&last[..8])?)?;
    Ok([&block[..], &last[8..]].concat())
}

impl StorageTx<RwSync> {
    /// Builds the lists from the changesets, about `budget` changeset entries per call, and
    /// adds to each account changeset entry the storage root the leaf history recorded for it;
    /// once every entry is listed, empties the leaf history tables. Returns `true` when done.
    pub(crate) fn build_state_lists(&self, budget: u64) -> Result<bool> {
        let (mut phase, mut after) = match self.meta(MetaKey::StateListsProgress)? {
            Some(value) if !value.is_empty() => (value[0], Some(value[1..].to_vec())),
            _ => (0, None),
        };
        let mut budget = budget;
        while phase < 2 {
            let lists = if phase == 0 {
                Lists::Accounts
            } else {
                Lists::Storages
            };
            if !self.lists_from_changesets(lists, &mut after, &mut budget)? {
                let progress = [&[phase][..], after.as_deref().unwrap_or_default()].concat();
                self.put_meta(MetaKey::StateListsProgress, &progress)?;
                return Ok(false);
            }
            phase += 1;
            after = None;
        }
        for table in [
            Table::Legacy(LegacyTable::HashedAccountsHistory),
            Table::Legacy(LegacyTable::HashedStoragesHistory),
        ] {
            self.tx.clear_db(self.db(table))?;
        }
        self.del_meta(MetaKey::StateListsProgress)?;
        self.put_schema(crate::maintenance::migrate::STATE_LISTS_LAYOUT)?;
        Ok(true)
    }

    /// Lists the entries of `lists`' changesets after key `after`, until `budget` runs out
    /// (`after` is then the last one done; returns false) or the table ends (true).
    fn lists_from_changesets(
        &self,
        lists: Lists,
        after: &mut Option<Vec<u8>>,
        budget: &mut u64,
    ) -> Result<bool> {
        let table = match lists {
            Lists::Accounts => Table::NarrowAccountChangeSets,
            Lists::Storages => Table::StorageChangeGroups,
            // Built from the blocks' frames and logs, not from changesets.
            Lists::Traces | Lists::Topics => return Ok(true),
        };
        let leaf_history_from = self.state_history_from()?;
        let mut roots = Vec::new();
        let mut cursor = self.tx.cursor(self.db(table))?;
        // Where an entry is: its key, then (a slot in its account's group) the slot.
        let position = |key: Vec<u8>, value: &[u8]| match lists {
            Lists::Storages => [&key[..], value.get(..32).unwrap_or_default()].concat(),
            _ => key,
        };
        let mut entry = match after.as_deref() {
            Some(last) => entry_after(&mut cursor, &narrow_account_position(last)?)?,
            None => cursor.first::<Vec<u8>, Vec<u8>>()?,
        };
        let done = loop {
            let Some((key, value)) = entry else {
                break true;
            };
            if *budget == 0 {
                break false;
            }
            let key = position(key, &value);
            // Account keys hold the block in 4 bytes, storage groups' in 8.
            let block_len = if lists == Lists::Accounts { 4 } else { 8 };
            if key.len() != block_len + lists.plain_len() {
                return Err(Error::Corrupt(format!(
                    "{} entry has {} key bytes",
                    table.name(),
                    key.len()
                )));
            }
            let block = match block_len {
                4 => u64::from(u32::from_be_bytes([key[0], key[1], key[2], key[3]])),
                _ => be_u64(&key[..8])?,
            };
            let address = Address::from_slice(&key[block_len..block_len + 20]);
            match lists {
                Lists::Accounts => {
                    self.list_account_change(block, &address, &keccak256(address))?;
                    if leaf_history_from.is_some_and(|from| block >= from) {
                        roots.push((block, address));
                    }
                }
                Lists::Storages => {
                    self.list_slot_change(block, &address, &B256::from_slice(&key[28..]))?
                }
                Lists::Traces | Lists::Topics => {}
            }
            *budget -= 1;
            *after = Some(key);
            entry = cursor.next::<Vec<u8>, Vec<u8>>()?;
        };
        drop(cursor);
        for (block, address) in roots {
            self.storage_root_from_leaf_history(block, &address)?;
        }
        Ok(done)
    }

    /// Adds to the changeset entry of `address` at `block` the storage root that the leaf
    /// history of older layouts recorded as the account's before the block.
    fn storage_root_from_leaf_history(&self, block: u64, address: &Address) -> Result<()> {
        let key = shard_key(keccak256(address).as_slice(), block);
        let Some(leaf) = self.get(Table::Legacy(LegacyTable::HashedAccountsHistory), &key)? else {
            return Ok(());
        };
        if leaf.is_empty() {
            return Ok(());
        }
        let root = crate::models::decode_trie_account(&leaf)?.storage_root;
        drop(leaf);
        self.add_storage_root(block, address, root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Database, StoredAccount, state::trie::hashed_slot_key};
    use alloy_primitives::U256;

    /// Writes `blocks` blocks as an import does: accounts 1-3 change in turn, account 3 with
    /// storage (a storage root of its own in each block, and a slot), and account 2 is
    /// deleted in block 5 and created again in block 8.
    fn write_chain(db: &Database, blocks: u64) {
        use crate::AccountChange;
        let tx = db.writer().unwrap();
        tx.start_trie_history(1, 1).unwrap();
        for block in 0..=blocks {
            let mut changes = Vec::new();
            for i in 1..=3u8 {
                if block > 0 && (block + u64::from(i)) % 2 != 0 && i != 3 {
                    continue;
                }
                let gone = i == 2 && (5..8).contains(&block);
                let account = (!gone).then(|| StoredAccount {
                    nonce: block,
                    balance: U256::from(block * 100 + u64::from(i)),
                    code_hash: B256::repeat_byte(i),
                });
                let storage = if i == 3 {
                    vec![(
                        B256::with_last_byte((block % 3) as u8),
                        U256::from(block + 1),
                    )]
                } else {
                    Vec::new()
                };
                changes.push(AccountChange {
                    address: Address::repeat_byte(i),
                    account,
                    wiped: false,
                    storage,
                });
            }
            tx.apply_state_changes(block, &changes, &[]).unwrap();
            for change in &changes {
                let hashed = keccak256(change.address);
                for (slot, value) in &change.storage {
                    tx.put_hashed_slot(&hashed, &keccak256(slot), *value)
                        .unwrap();
                }
                let root = match change.address == Address::repeat_byte(3) {
                    true => B256::repeat_byte(block as u8 + 1),
                    false => alloy_trie::EMPTY_ROOT_HASH,
                };
                let leaf = change.account.map(|a| alloy_trie::TrieAccount {
                    nonce: a.nonce,
                    balance: a.balance,
                    storage_root: root,
                    code_hash: a.code_hash,
                });
                tx.put_hashed_account(&hashed, leaf.as_ref()).unwrap();
            }
        }
        tx.put_schema_version().unwrap();
        tx.commit().unwrap();
    }

    /// Rewrites a datadir as layout 6 held it: the leaf history (each changed leaf before its
    /// block) instead of the lists, and account changeset entries without storage roots.
    fn downgrade_to_leaf_history(db: &Database) {
        use crate::models::{SlotValue, encode_trie_account};
        let tx = db.writer().unwrap();
        let mut wide_entries = Vec::new();
        let (head, _) = tx.head().unwrap().unwrap_or_default();
        let head = head.max(20);
        for block in 1..=head {
            for (address, _) in tx.account_changeset(block).unwrap() {
                let key = shard_key(keccak256(address).as_slice(), block);
                let leaf = match tx
                    .account_changeset_entry(block, &address)
                    .unwrap()
                    .unwrap()
                {
                    Some((account, crate::StorageRootBefore::Known(root))) => {
                        // Layout 6's entries: without the storage root, keyed wide.
                        wide_entries.push((
                            [&block.to_be_bytes()[..], address.as_slice()].concat(),
                            account.encode(),
                        ));
                        encode_trie_account(&alloy_trie::TrieAccount {
                            nonce: account.nonce,
                            balance: account.balance,
                            storage_root: root.unwrap_or(alloy_trie::EMPTY_ROOT_HASH),
                            code_hash: account.code_hash,
                        })
                    }
                    Some((_, crate::StorageRootBefore::NotRecorded)) => {
                        unreachable!("this test's entries record their roots")
                    }
                    None => Vec::new(),
                };
                tx.put(
                    Table::Legacy(LegacyTable::HashedAccountsHistory),
                    &key,
                    &leaf,
                )
                .unwrap();
            }
            for (address, slot, before) in tx.storage_changeset(block).unwrap() {
                let hashed = hashed_slot_key(&keccak256(address), &keccak256(slot));
                let value = match before.is_zero() {
                    true => Vec::new(),
                    false => SlotValue::new(before).as_slice().to_vec(),
                };
                tx.put(
                    Table::Legacy(LegacyTable::HashedStoragesHistory),
                    &shard_key(&hashed, block),
                    &value,
                )
                .unwrap();
            }
        }
        for lists in [Lists::Accounts, Lists::Storages] {
            tx.tx.clear_db(tx.db(lists.table())).unwrap();
        }
        crate::history::changesets::widen_changesets(&tx);
        for (key, value) in wide_entries {
            tx.put(Table::Legacy(LegacyTable::AccountChangeSets), &key, &value)
                .unwrap();
        }
        tx.put_schema(crate::maintenance::migrate::STATE_HISTORY_LAYOUT)
            .unwrap();
        tx.commit().unwrap();
    }

    /// A layout 6 datadir migrated in small resumable steps holds what the current layout
    /// writes, table for table: the lists, the storage roots in the account changesets, and no
    /// leaf history.
    #[test]
    fn the_leaf_history_migrates_to_the_lists_resumably() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        // Blocks are not stored here: the changesets and state are what the lists follow.
        write_chain(&db, 20);
        let tables = [
            Table::Legacy(LegacyTable::AccountChangeSets),
            Table::NarrowAccountChangeSets,
            Table::Legacy(LegacyTable::StorageChangeSets),
            Table::StorageChangeGroups,
            Table::AccountChangeLists,
            Table::StorageChangeLists,
            Table::HashedAccounts,
        ];
        let digests = |db: &Database| -> Vec<(u64, B256)> {
            let rx = db.reader().unwrap();
            tables.map(|t| rx.table_digest(t).unwrap()).to_vec()
        };
        let written = digests(&db);
        assert!(written[4].0 >= 3 && written[5].0 >= 3, "{written:?}");
        let reads = |db: &Database| -> Vec<(Option<StoredAccount>, U256)> {
            let rx = db.reader().unwrap();
            (0..=20)
                .flat_map(|block| (1..=3u8).map(move |i| (Address::repeat_byte(i), block)))
                .map(|(address, block)| {
                    let slot = B256::with_last_byte((block % 3) as u8);
                    (
                        rx.account_at(&address, block).unwrap(),
                        rx.storage_at(&address, &slot, block).unwrap(),
                    )
                })
                .collect()
        };
        let answers = reads(&db);
        // Account 3's storage roots went into its changeset entries.
        let rx = db.reader().unwrap();
        let entry = rx.account_changeset_entry(6, &Address::repeat_byte(3));
        assert_eq!(
            entry.unwrap().unwrap().unwrap().1,
            crate::StorageRootBefore::Known(Some(B256::repeat_byte(6)))
        );
        drop(rx);

        downgrade_to_leaf_history(&db);
        assert_ne!(digests(&db), written);
        let steps = crate::maintenance::migrate::migrate_in_steps(&db, 7);
        assert!(steps > 5, "{steps} steps");
        assert_eq!(digests(&db), written);
        assert_eq!(reads(&db), answers);
        let rx = db.reader().unwrap();
        assert_eq!(rx.schema_version().unwrap(), crate::SCHEMA_VERSION);
        for table in [
            Table::Legacy(LegacyTable::HashedAccountsHistory),
            Table::Legacy(LegacyTable::HashedStoragesHistory),
        ] {
            assert_eq!(rx.table_digest(table).unwrap().0, 0, "{}", table.name());
        }
    }

    /// A listing that stopped inside a group of storage changes resumes at the group's next
    /// slot, or at the next group after its last, wherever the slot it stopped at sorts.
    #[test]
    fn listing_resumes_inside_and_after_a_group() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        let group = |block: u64, byte: u8| {
            [
                &block.to_be_bytes()[..],
                Address::repeat_byte(byte).as_slice(),
            ]
            .concat()
        };
        let slot = |byte: u8| B256::repeat_byte(byte);
        for (key, byte) in [(group(1, 1), 2), (group(1, 1), 4), (group(2, 1), 3)] {
            tx.append_to_group(Table::StorageChangeGroups, &key, slot(byte).as_slice())
                .unwrap();
        }
        let mut cursor = tx.tx.cursor(tx.db(Table::StorageChangeGroups)).unwrap();
        let mut after = |key: &[u8], byte: u8| {
            let position = [key, slot(byte).as_slice()].concat();
            entry_after(&mut cursor, &position)
                .unwrap()
                .map(|(key, value)| (key, value[0]))
        };
        assert_eq!(after(&group(1, 1), 2), Some((group(1, 1), 4)));
        assert_eq!(after(&group(1, 1), 3), Some((group(1, 1), 4)));
        assert_eq!(after(&group(1, 1), 1), Some((group(1, 1), 2)));
        assert_eq!(after(&group(1, 1), 4), Some((group(2, 1), 3)));
        assert_eq!(after(&group(1, 1), 5), Some((group(2, 1), 3)));
        assert_eq!(after(&group(1, 0), 9), Some((group(1, 1), 2)));
        assert_eq!(after(&group(2, 1), 3), None);
    }

    /// A layout 7 datadir whose listing of the account changesets a build before layout 11
    /// stopped (its progress an account key with an 8-byte block) resumes after that account,
    /// in the narrow keys the changesets have moved to, and lists every account change once.
    #[test]
    fn a_listing_stopped_before_the_narrow_keys_resumes_after_its_account() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        let (a, b, c) = (
            Address::repeat_byte(1),
            Address::repeat_byte(2),
            Address::repeat_byte(3),
        );
        for (block, address) in [(5u64, a), (5, b), (6, c)] {
            tx.record_account_before(block, &address, None, crate::StorageRootBefore::Known(None))
                .unwrap();
        }
        let mut budget = 10;
        // As the build before left it: a's entry of block 5 listed, its key wide.
        let mut after = Some([&5u64.to_be_bytes()[..], a.as_slice()].concat());
        assert!(
            tx.lists_from_changesets(Lists::Accounts, &mut after, &mut budget)
                .unwrap()
        );
        assert_eq!(budget, 8, "b and c listed, a not again");
        let narrow =
            |block: u32, address: Address| [&block.to_be_bytes()[..], address.as_slice()].concat();
        assert_eq!(after, Some(narrow(6, c)));
        assert_eq!(
            narrow_account_position(&narrow(5, a)).unwrap(),
            narrow(5, a),
            "a narrow position stays"
        );
    }
}
