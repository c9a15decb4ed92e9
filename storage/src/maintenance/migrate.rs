//! The database layout version, and the resumable steps (`quarry migrate`) that bring a
//! database written by an older quarry to the current layout.

use crate::{Leaf, MetaKey, Result, StorageTx, Table, TrieId, blocks::receipts, models::be_u64};
use alloy_primitives::keccak256;
use alloy_trie::{HashBuilder, Nibbles, TrieAccount};
use signet_libmdbx::{DatabaseFlags, RwSync, TransactionKind};

/// The first layout that records per-block changesets (layout 1 had none).
pub const CHANGESETS_LAYOUT: u64 = 2;
/// The first layout with receipts in the in-place encoding of `receipts.rs` (an RLP list before).
pub const RECEIPTS_LAYOUT: u64 = 3;
/// The first layout that stores the state trie (hashed state and branch nodes, `trie.rs`).
pub const TRIE_LAYOUT: u64 = 4;
/// The first layout that records the state trie's history (`trie_history.rs`).
pub const TRIE_HISTORY_LAYOUT: u64 = 5;
/// The first layout whose state history is the trie's leaf history: `AccountHistory` and
/// `StorageHistory` are no longer written, and only blocks before `state_history_from` read
/// them.
pub const STATE_HISTORY_LAYOUT: u64 = 6;
/// The first layout whose bodies and receipts are compressed (block_codec.rs) and whose
/// transaction lookups are keyed by a hash prefix (tx_lookup.rs); see block_migrate.rs.
pub const COMPRESSED_BLOCKS_LAYOUT: u64 = 7;
/// The first layout whose state history is the block lists of state_lists.rs over the
/// changesets (account changeset entries then hold the storage root before their block), not
/// the leaf history (`HashedAccountsHistory`, `HashedStoragesHistory`, emptied).
pub const STATE_LISTS_LAYOUT: u64 = 8;
/// The first layout whose trace index keeps each address's blocks as a block list
/// (`TraceAddressLists`), not one `TraceAddresses` entry per address and block.
pub const TRACE_LISTS_LAYOUT: u64 = 9;
/// The first layout whose log index keeps each topic's blocks as block lists per position
/// (`LogTopicLists`), not one `LogTopics` entry per topic and block.
pub const TOPIC_LISTS_LAYOUT: u64 = 10;
/// The first layout whose changesets are keyed narrower: the accounts' with the block number in
/// 4 bytes (`NarrowAccountChangeSets`), the slots' grouped by block and account
/// (`StorageChangeGroups`), not one `StorageChangeSets` entry per slot.
pub const NARROW_CHANGESETS_LAYOUT: u64 = 11;
/// The first layout whose account changeset entries may leave out the storage root before
/// their block (`StorageRootBefore::NotRecorded`: an import's coarse window taken whole records
/// each account's root at its first change in the window only). Older layouts' entries all
/// record it, so the step to this layout rewrites nothing.
pub const UNRECORDED_ROOTS_LAYOUT: u64 = 12;
/// The database layout this quarry writes.
pub const SCHEMA_VERSION: u64 = UNRECORDED_ROOTS_LAYOUT;

/// Refuses a database a newer quarry wrote: its layout may keep what this build reads in tables
/// this build does not know, and answering from the ones it knows would be wrong. Runs before
/// the open creates any table other than `Meta`.
pub(crate) fn refuse_newer_layout(
    tx: &signet_libmdbx::tx::Tx<RwSync>,
    datadir: &std::path::Path,
) -> Result<()> {
    let meta = tx.create_db(Some(Table::Meta.name()), DatabaseFlags::empty())?;
    let found = tx
        .get::<Vec<u8>>(meta.dbi(), MetaKey::Schema.key().as_bytes())?
        .map(|value| be_u64(&value))
        .transpose()?;
    match found {
        Some(found) if found > SCHEMA_VERSION => Err(crate::Error::NewerLayout {
            datadir: datadir.display().to_string(),
            found,
            supported: SCHEMA_VERSION,
        }),
        _ => Ok(()),
    }
}

impl<K: TransactionKind> StorageTx<K> {
    /// The layout version the database says it has (1 when it names none).
    pub fn schema_version(&self) -> Result<u64> {
        Ok(self.meta_u64(MetaKey::Schema)?.unwrap_or(1))
    }
}

impl StorageTx<RwSync> {
    /// Records that this database has the current layout (a new one, or a migrated one).
    pub fn put_schema_version(&self) -> Result<()> {
        self.put_schema(SCHEMA_VERSION)
    }

    pub(crate) fn put_schema(&self, version: u64) -> Result<()> {
        self.put_meta(MetaKey::Schema, &version.to_be_bytes())
    }

    /// One step of the migration to the current layout, doing about `budget` units of work
    /// (history entries, or receipts) and recording its progress in the same transaction, so
    /// that a migration stopped at any commit resumes. Returns `true` once the layout is
    /// current.
    pub fn migrate_step(&self, budget: u64) -> Result<bool> {
        let layout = self.schema_version()?;
        // Before any other step: every step that reads or writes changesets (building them,
        // listing them) does so in this layout's tables and keys.
        if layout < NARROW_CHANGESETS_LAYOUT && !self.move_wide_changesets(budget)? {
            return Ok(false);
        }
        match layout {
            layout if layout < CHANGESETS_LAYOUT => self.build_changesets(budget)?,
            layout if layout < RECEIPTS_LAYOUT => self.reencode_receipts(budget)?,
            layout if layout < TRIE_LAYOUT => self.build_state_trie(budget)?,
            layout if layout < TRIE_HISTORY_LAYOUT => self.start_recording_trie_history()?,
            layout if layout < STATE_HISTORY_LAYOUT => self.start_leaf_state_history()?,
            layout if layout < COMPRESSED_BLOCKS_LAYOUT => self.compress_block_data(budget)?,
            layout if layout < STATE_LISTS_LAYOUT => self.build_state_lists(budget)?,
            layout if layout < TRACE_LISTS_LAYOUT => self.list_trace_entries(budget)?,
            layout if layout < TOPIC_LISTS_LAYOUT => self.list_log_topics(budget)?,
            layout if layout < NARROW_CHANGESETS_LAYOUT => {
                // The changesets were moved above.
                self.put_schema(NARROW_CHANGESETS_LAYOUT)?;
                true
            }
            layout if layout < UNRECORDED_ROOTS_LAYOUT => {
                self.put_schema(UNRECORDED_ROOTS_LAYOUT)?;
                true
            }
            _ => return Ok(true),
        };
        Ok(self.schema_version()? >= SCHEMA_VERSION)
    }

    /// Builds the state trie's tables from the plain state: each account's hashed storage,
    /// storage trie and hashed account, about `budget` slots per call (resuming after the last
    /// account done); once every account is done, the accounts trie in one pass over the
    /// hashed accounts.
    fn build_state_trie(&self, budget: u64) -> Result<bool> {
        let progress = self.meta(MetaKey::TrieProgress)?;
        let mut cursor = self.tx.cursor(self.db(Table::PlainAccounts))?;
        let mut entry = match &progress {
            Some(last) => match cursor.set_range::<Vec<u8>, Vec<u8>>(last)? {
                Some((key, _)) if key == *last => cursor.next::<Vec<u8>, Vec<u8>>()?,
                other => other,
            },
            None => cursor.first::<Vec<u8>, Vec<u8>>()?,
        };
        let mut done = 0u64;
        while let Some((key, value)) = entry {
            if done >= budget {
                return Ok(false);
            }
            let address = alloy_primitives::Address::from_slice(&key);
            let account = crate::StoredAccount::decode(&value)?;
            let slots = self.account_storage(&address)?;
            done += 1 + slots.len() as u64;
            let storage_root = self.build_storage_trie(&address, &slots)?;
            self.put_hashed_account(
                &keccak256(address),
                Some(&TrieAccount {
                    nonce: account.nonce,
                    balance: account.balance,
                    storage_root,
                    code_hash: account.code_hash,
                }),
            )?;
            self.put_meta(MetaKey::TrieProgress, &key)?;
            entry = cursor.next::<Vec<u8>, Vec<u8>>()?;
        }
        drop(cursor);
        let mut hb = HashBuilder::default().with_updates(true);
        let mut leaves = self.trie_leaves(TrieId::Accounts)?;
        let mut leaf = leaves.seek(&Nibbles::default())?;
        let mut fed = Vec::new();
        while let Some((key, Leaf::Account(account))) = leaf {
            let key = Nibbles::unpack(key);
            let value = alloy_rlp::encode(account);
            hb.add_leaf(key, &value);
            fed.push((key, value));
            leaf = leaves.advance()?;
        }
        hb.root();
        let (_, mut nodes) = hb.split();
        crate::complete_leaf_hashes(&mut nodes, &fed);
        for (path, node) in &nodes {
            self.put_trie_node(&TrieId::Accounts, path, Some(node), None)?;
        }
        self.del_meta(MetaKey::TrieProgress)?;
        self.put_schema(TRIE_LAYOUT)?;
        Ok(true)
    }

    /// Starts the trie history after the head: older blocks have none, and proofs at them
    /// undo the changesets instead.
    fn start_recording_trie_history(&self) -> Result<bool> {
        let head = self.head()?.map_or(0, |(number, _)| number);
        self.start_trie_history(head + 1, crate::NODE_HISTORY_WINDOW)?;
        self.put_schema(TRIE_HISTORY_LAYOUT)?;
        Ok(true)
    }

    /// Makes the leaf history the state history: it is complete from where the trie history
    /// started, when that runs (every block since recorded its leaves), else from the block
    /// after the head; older blocks keep reading the plain history.
    fn start_leaf_state_history(&self) -> Result<bool> {
        let first = match self.trie_history_from()? {
            Some(from) => from,
            None => self.head()?.map_or(0, |(number, _)| number) + 1,
        };
        self.start_state_history(first)?;
        self.put_schema(STATE_HISTORY_LAYOUT)?;
        Ok(true)
    }

    /// Writes one account's hashed storage and storage trie nodes; returns its storage root.
    fn build_storage_trie(
        &self,
        address: &alloy_primitives::Address,
        slots: &[(alloy_primitives::B256, alloy_primitives::U256)],
    ) -> Result<alloy_primitives::B256> {
        let account = keccak256(address);
        let mut hashed: Vec<_> = slots
            .iter()
            .map(|(slot, value)| (keccak256(slot), *value))
            .collect();
        hashed.sort_unstable();
        let mut hb = HashBuilder::default().with_updates(true);
        let mut fed = Vec::with_capacity(hashed.len());
        // Sorted: the slots' leaves go in key order through one cursor.
        let mut leaves = self.leaf_writer();
        for (slot, value) in &hashed {
            leaves.put_slot(&account, slot, *value)?;
            let key = Nibbles::unpack(slot);
            let value = alloy_rlp::encode(value);
            hb.add_leaf(key, &value);
            fed.push((key, value));
        }
        let root = hb.root();
        let (_, mut nodes) = hb.split();
        crate::complete_leaf_hashes(&mut nodes, &fed);
        for (path, node) in &nodes {
            self.put_trie_node(&TrieId::Storage(account), path, Some(node), None)?;
        }
        Ok(root)
    }

    /// Rewrites layout 2's RLP receipt lists in the current encoding, block by block, until
    /// about `max_receipts` receipts are done. Returns `true` once all are.
    fn reencode_receipts(&self, max_receipts: u64) -> Result<bool> {
        let mut next = self.meta_u64(MetaKey::ReceiptsProgress)?.unwrap_or(0);
        let mut done = 0u64;
        let last = {
            let mut cursor = self.tx.cursor(self.db(Table::Receipts))?;
            match cursor.last::<Vec<u8>, ()>()? {
                Some((key, ())) => Some(be_u64(&key)?),
                None => None,
            }
        };
        while last.is_some_and(|last| next <= last) {
            if done >= max_receipts {
                self.put_meta(MetaKey::ReceiptsProgress, &next.to_be_bytes())?;
                return Ok(false);
            }
            let key = next.to_be_bytes();
            if let Some(old) = self.get(Table::Receipts, &key)? {
                let list = receipts::legacy::decode_list(&old)
                    .map_err(|e| crate::Error::Corrupt(format!("receipts of block {next}: {e}")))?;
                done += list.len().max(1) as u64;
                let new = receipts::encode_block_receipts(&list);
                drop(old);
                self.put(Table::Receipts, &key, &new)?;
            }
            next += 1;
        }
        self.del_meta(MetaKey::ReceiptsProgress)?;
        self.put_schema(RECEIPTS_LAYOUT)?;
        Ok(true)
    }
}

/// The digest of every table of `db` but `Meta`, to compare two databases' contents.
#[cfg(test)]
pub(crate) fn table_digests(db: &crate::Database) -> Vec<(Table, (u64, alloy_primitives::B256))> {
    let r = db.reader().unwrap();
    Table::ALL
        .iter()
        .filter(|t| **t != Table::Meta)
        .map(|t| (*t, r.table_digest(*t).unwrap()))
        .collect()
}

/// Runs `quarry migrate`'s steps on `db` with `budget`, a commit each, until the layout is
/// current; returns how many steps it took.
#[cfg(test)]
pub(crate) fn migrate_in_steps(db: &crate::Database, budget: u64) -> usize {
    let mut steps = 0;
    loop {
        let tx = db.writer().unwrap();
        let done = tx.migrate_step(budget).unwrap();
        tx.commit().unwrap();
        steps += 1;
        if done {
            return steps;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Database, ReceiptOutcome, StoredReceipt};
    use alloy_primitives::{Address, Bytes, Log, LogData};

    /// A datadir a newer quarry wrote is refused at open, naming both layouts; the current
    /// layout and an unnumbered (new) one open.
    #[test]
    fn a_newer_layout_is_refused_at_open() {
        let dir = tempfile::tempdir().unwrap();
        drop(Database::open(dir.path()).unwrap());
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        tx.put_schema_version().unwrap();
        tx.commit().unwrap();
        drop(db);
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        tx.put_schema(SCHEMA_VERSION + 1).unwrap();
        tx.commit().unwrap();
        drop(db);
        let Err(err) = Database::open(dir.path()) else {
            panic!("a newer layout opened");
        };
        assert!(
            matches!(err, crate::Error::NewerLayout { found, .. } if found == SCHEMA_VERSION + 1)
        );
        let message = err.to_string();
        assert!(
            message.contains(&format!("layout {}", SCHEMA_VERSION + 1)),
            "{message}"
        );
        assert!(
            message.contains(&format!("up to {SCHEMA_VERSION}")),
            "{message}"
        );
    }

    fn receipts_of(block: u64) -> Vec<StoredReceipt> {
        (0..block % 3)
            .map(|i| StoredReceipt {
                tx_type: 2,
                outcome: ReceiptOutcome::Status(i % 2 == 0),
                cumulative_gas_used: 21000 * (i + 1),
                gas_used: 21000,
                effective_gas_price: 7,
                contract_address: None,
                blob_gas: None,
                logs: vec![Log {
                    address: Address::repeat_byte(block as u8),
                    data: LogData::new_unchecked(vec![], Bytes::from(vec![i as u8; 40])),
                }],
            })
            .collect()
    }

    /// A layout-2 database's receipts, re-encoded in small batches, read back as they were.
    #[test]
    fn receipts_are_reencoded_resumably() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        for block in 0..10u64 {
            let old = receipts::legacy::encode_list(&receipts_of(block));
            tx.put(Table::Receipts, &block.to_be_bytes(), &old).unwrap();
        }
        tx.put_schema(2).unwrap();
        tx.commit().unwrap();
        assert!(db.reader().unwrap().receipts(4).is_err());

        let steps = migrate_in_steps(&db, 2);
        assert!(steps > 3, "{steps} steps");
        let r = db.reader().unwrap();
        assert_eq!(r.schema_version().unwrap(), SCHEMA_VERSION);
        for block in 0..10u64 {
            assert_eq!(r.receipts(block).unwrap().unwrap(), receipts_of(block));
        }
    }
}
