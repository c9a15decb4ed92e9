//! Entries whose keys are spread at random (transaction lookups, the log index by topic and
//! address, and the state trie's history), staged by a write transaction and written in key
//! order; and the state trie's branch nodes, staged until the transaction commits.
//!
//! A block's hundred transaction hashes, its logs' topics and the leaves and nodes it changes
//! land on as many different B-tree pages, so putting them one by one costs a search from the
//! root each. Staged over many blocks and written sorted, consecutive keys often share a page
//! (one account's or node's records over many blocks sit side by side), which MDBX reaches from
//! where the cursor stands. Nothing in a write transaction reads these tables except an
//! unwind, which writes what is staged first, and so does a commit; a history read in a write
//! transaction that still stages history is refused (see [`StorageTx::check_history_written`]).

use crate::{Error, Result, StorageTx, Table, trie_history};
use signet_libmdbx::{MdbxError, RwSync, TransactionKind, WriteFlags};
use std::{
    collections::BTreeMap,
    ops::Bound,
    sync::{Mutex, MutexGuard, PoisonError},
};

/// How many entries are staged before they are written: a bound on the memory they take
/// (80 bytes to a few hundred each) that still leaves many keys per page of each table.
const STAGED_LIMIT: usize = 1 << 18;
/// And how many bytes: branch node history records are several hundred bytes each.
const STAGED_BYTES_LIMIT: usize = 64 << 20;

/// How a staged table's entries are written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Written {
    /// Put; of two entries with one key, the later staged wins.
    LastWins,
    /// The leaf history: put unless the key is there; the first record of a block is the
    /// value before it.
    FirstWins,
    /// The node history: as `FirstWins`, and each record written adds its entry to the
    /// `TrieChangeSets` index (staged values carry it, see [`trie_history::staged_node_record`]).
    FirstWinsIndexed,
}

fn written(table: Table) -> Written {
    match table {
        Table::HashedAccountsHistory | Table::HashedStoragesHistory => Written::FirstWins,
        Table::AccountsTrieHistory | Table::StoragesTrieHistory => Written::FirstWinsIndexed,
        _ => Written::LastWins,
    }
}

/// Where a staged entry's key and value are in [`Staged::bytes`].
struct Entry {
    table: Table,
    start: usize,
    key_end: usize,
    end: usize,
}

/// Staged entries: their keys and values one after another, and where each is.
#[derive(Default)]
struct Staged {
    bytes: Vec<u8>,
    entries: Vec<Entry>,
    /// Whether any entry is of the trie history.
    history: bool,
}

impl Staged {
    fn key(&self, entry: &Entry) -> &[u8] {
        &self.bytes[entry.start..entry.key_end]
    }

    fn value(&self, entry: &Entry) -> &[u8] {
        &self.bytes[entry.key_end..entry.end]
    }
}

/// Entries staged for the random-keyed index tables.
#[derive(Default)]
pub(crate) struct StagedIndexes(Mutex<Staged>);

impl StagedIndexes {
    fn take(&self) -> Staged {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Takes back the buffers of a batch that was written, emptied, for the next batch.
    fn reuse(&self, mut spent: Staged) {
        spent.bytes.clear();
        spent.entries.clear();
        spent.history = false;
        let mut staged = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if staged.entries.is_empty() {
            *staged = spent;
        }
    }

    /// Whether trie history entries are staged.
    fn holds_history(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .history
    }

    /// Stages an entry; true when enough are staged to write them.
    fn stage(&self, table: Table, key: &[u8], value: &[u8]) -> bool {
        let mut staged = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if staged.entries.capacity() == 0 {
            // Reserved once per write transaction: memory is backed only as it is filled, and
            // a batch never grows by copying itself.
            staged.bytes.reserve(STAGED_BYTES_LIMIT + (1 << 20));
            staged.entries.reserve(STAGED_LIMIT);
        }
        staged.history |= written(table) != Written::LastWins;
        let start = staged.bytes.len();
        staged.bytes.extend_from_slice(key);
        staged.bytes.extend_from_slice(value);
        let entry = Entry {
            table,
            start,
            key_end: start + key.len(),
            end: staged.bytes.len(),
        };
        staged.entries.push(entry);
        staged.entries.len() >= STAGED_LIMIT || staged.bytes.len() >= STAGED_BYTES_LIMIT
    }
}

/// How many branch nodes a write transaction stages before it writes them: a bound on their
/// memory (a few hundred bytes each) well above the nodes a commit's blocks change again and
/// again.
const STAGED_NODES_LIMIT: usize = 1 << 16;

/// A staged node: its encoding, or `None` when it is deleted.
type NodeValue = Option<Vec<u8>>;

/// Branch node writes of a write transaction (`AccountsTrie` and `StoragesTrie`), by table
/// key. The nodes near the root, and those of busy contracts' storage tries, change in nearly
/// every block: staged, each is written once per commit instead of once per block, and the
/// next block's walk reads it from memory. The trie node cursor reads through them.
#[derive(Default)]
pub(crate) struct StagedNodes(Mutex<[BTreeMap<Vec<u8>, NodeValue>; 2]>);

fn node_map(table: Table) -> usize {
    match table {
        Table::AccountsTrie => 0,
        _ => 1,
    }
}

impl StagedNodes {
    fn lock(&self) -> MutexGuard<'_, [BTreeMap<Vec<u8>, NodeValue>; 2]> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The staged value of `key`: `None` when it is not staged, `Some(None)` when it is
    /// staged deleted.
    pub(crate) fn get(&self, table: Table, key: &[u8]) -> Option<NodeValue> {
        self.lock()[node_map(table)].get(key).cloned()
    }

    pub(crate) fn contains(&self, table: Table, key: &[u8]) -> bool {
        self.lock()[node_map(table)].contains_key(key)
    }

    /// The first staged node (not a deletion) with a key after `from` (or at it, when
    /// `inclusive`).
    pub(crate) fn first_after(
        &self,
        table: Table,
        from: &[u8],
        inclusive: bool,
    ) -> Option<(Vec<u8>, Vec<u8>)> {
        let start = if inclusive {
            Bound::Included(from)
        } else {
            Bound::Excluded(from)
        };
        self.lock()[node_map(table)]
            .range::<[u8], _>((start, Bound::Unbounded))
            .find_map(|(key, value)| value.as_ref().map(|value| (key.clone(), value.clone())))
    }

    /// Stages a node; true when enough are staged to write them.
    fn stage(&self, table: Table, key: Vec<u8>, value: NodeValue) -> bool {
        let mut maps = self.lock();
        maps[node_map(table)].insert(key, value);
        maps.iter().map(BTreeMap::len).sum::<usize>() >= STAGED_NODES_LIMIT
    }

    /// Takes the staged nodes of `table` whose keys start with `prefix`.
    fn take_under(&self, table: Table, prefix: &[u8]) -> BTreeMap<Vec<u8>, NodeValue> {
        let mut maps = self.lock();
        let map = &mut maps[node_map(table)];
        if prefix.is_empty() {
            return std::mem::take(map);
        }
        let keys: Vec<Vec<u8>> = map
            .range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix))
            .map(|(key, _)| key.clone())
            .collect();
        keys.into_iter()
            .filter_map(|key| map.remove_entry(&key))
            .collect()
    }
}

impl StorageTx<RwSync> {
    /// Stages a branch node write (`None`: its deletion) for `write_staged`.
    pub(crate) fn stage_node(&self, table: Table, key: Vec<u8>, value: NodeValue) -> Result<()> {
        if self.staged_nodes.stage(table, key, value) {
            self.write_staged_nodes(None)?;
        }
        Ok(())
    }

    /// Writes the staged nodes whose keys in `table` start with the given prefix (`None`: every
    /// staged node of both node tables), in key order through one cursor per table.
    pub(crate) fn write_staged_nodes(&self, under: Option<(Table, &[u8])>) -> Result<()> {
        let all = [
            (Table::AccountsTrie, &[][..]),
            (Table::StoragesTrie, &[][..]),
        ];
        let parts = match &under {
            Some(part) => std::slice::from_ref(part),
            None => &all[..],
        };
        for (table, prefix) in parts {
            let nodes = self.staged_nodes.take_under(*table, prefix);
            if nodes.is_empty() {
                continue;
            }
            let mut cursor = self.tx.cursor(self.db(*table))?;
            for (key, value) in nodes {
                match value {
                    Some(value) => cursor.put(&key, &value, WriteFlags::empty())?,
                    None => {
                        if cursor.set::<()>(&key)?.is_some() {
                            cursor.del()?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Puts an entry of a table whose keys are spread at random: staged, and written with the
    /// others in key order (see the module's documentation).
    pub(crate) fn put_staged(&self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        if self.staged.stage(table, key, value) {
            self.write_staged()?;
        }
        Ok(())
    }

    /// Writes every staged node and entry, table by table in key order through one cursor
    /// each, so that each put starts from the page the last one left.
    pub fn write_staged(&self) -> Result<()> {
        self.write_staged_nodes(None)?;
        let mut staged = self.staged.take();
        if staged.entries.is_empty() {
            self.staged.reuse(staged);
            return Ok(());
        }
        let mut sorted = std::mem::take(&mut staged.entries);
        // Stable: entries with one key are written in the order they were staged.
        sorted.sort_by(|a, b| (a.table as u8, staged.key(a)).cmp(&(b.table as u8, staged.key(b))));
        let mut index = Vec::new();
        let mut entries = sorted.iter().peekable();
        while let Some(table) = entries.peek().map(|entry| entry.table) {
            let mut cursor = self.tx.cursor(self.db(table))?;
            let how = written(table);
            while let Some(entry) = entries.next_if(|entry| entry.table == table) {
                let (key, value) = (staged.key(entry), staged.value(entry));
                let (index_prefix, record) = match how {
                    Written::LastWins => {
                        cursor.put(key, value, WriteFlags::empty())?;
                        continue;
                    }
                    Written::FirstWins => (None, value),
                    Written::FirstWinsIndexed => {
                        let (prefix, record) = trie_history::split_staged_node_record(value)?;
                        (Some(prefix), record)
                    }
                };
                match cursor.put(key, record, WriteFlags::NO_OVERWRITE) {
                    Ok(()) => {
                        if let Some(prefix) = index_prefix {
                            index.push(trie_history::changeset_index(prefix, key));
                        }
                    }
                    Err(MdbxError::KeyExist) => {}
                    Err(err) => return Err(err.into()),
                }
            }
        }
        if !index.is_empty() {
            index.sort_unstable();
            let mut cursor = self.tx.cursor(self.db(Table::TrieChangeSets))?;
            for key in index {
                cursor.put(&key, &[], WriteFlags::empty())?;
            }
        }
        staged.entries = sorted;
        self.staged.reuse(staged);
        Ok(())
    }
}

impl<K: TransactionKind> StorageTx<K> {
    /// Refuses a read of the trie history while this transaction stages some: the read would
    /// miss it. Nothing does that today; an unwind writes what is staged before it reads.
    pub(crate) fn check_history_written(&self) -> Result<()> {
        if self.staged.holds_history() {
            return Err(Error::HistoryStaged);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Database;

    #[test]
    fn staged_entries_are_written_in_order_and_the_last_of_a_key_wins() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        tx.put_staged(Table::TxLookup, &[3; 32], &[1]).unwrap();
        tx.put_staged(Table::LogTopics, &[9; 40], &[2]).unwrap();
        tx.put_staged(Table::TxLookup, &[1; 32], &[3]).unwrap();
        tx.put_staged(Table::TxLookup, &[3; 32], &[4]).unwrap();
        tx.commit().unwrap();

        let rx = db.reader().unwrap();
        assert_eq!(
            rx.get(Table::TxLookup, &[3; 32]).unwrap().as_deref(),
            Some(&[4][..])
        );
        assert_eq!(
            rx.get(Table::TxLookup, &[1; 32]).unwrap().as_deref(),
            Some(&[3][..])
        );
        assert_eq!(
            rx.get(Table::LogTopics, &[9; 40]).unwrap().as_deref(),
            Some(&[2][..])
        );
    }

    #[test]
    fn an_aborted_transaction_writes_nothing_it_staged() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        tx.put_staged(Table::TxLookup, &[3; 32], &[1]).unwrap();
        drop(tx);
        let rx = db.reader().unwrap();
        assert_eq!(rx.get(Table::TxLookup, &[3; 32]).unwrap(), None);
    }
}
