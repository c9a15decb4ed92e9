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

use crate::{Error, Result, StorageTx, Table, history::trie_history, models::encode_branch};
use alloy_primitives::{B256, map::B256Map};
use alloy_trie::BranchNodeCompact;
use signet_libmdbx::{MdbxError, RwSync, TransactionKind, WriteFlags};
use std::{
    collections::BTreeMap,
    ops::Bound,
    sync::{Mutex, MutexGuard, PoisonError},
};

/// How many entries are staged before they are written: a bound on the memory they take
/// (80 bytes to a few hundred each) that still leaves many keys per page of each table.
/// Measured with bench/ab.sh, half as many made ingest faster (sorting and writing stay in the
/// caches) and its peak memory 20 MB lower; a quarter as many made it slower.
const STAGED_LIMIT: usize = 1 << 17;
/// And how many bytes: branch node history records are several hundred bytes each.
const STAGED_BYTES_LIMIT: usize = 32 << 20;

/// How a staged table's entries are written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Written {
    /// Put; of two entries with one key, the later staged wins (in a table of fixed-size
    /// duplicates, `TxLookupGroups`, both are kept: each is one of the key's values).
    LastWins,
    /// The node history: put unless the key is there (the first record of a window is the
    /// node before it), and each record written adds its entry to the `TrieChangeSets` index
    /// (staged values carry it, see [`trie_history::staged_node_record`]).
    FirstWinsIndexed,
}

fn written(table: Table) -> Written {
    match table {
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

/// A node, or `None` when it is deleted. Staged decoded: the walks read the nodes near the
/// root in every block, and a node staged again and again is encoded once, when written.
pub(crate) type NodeValue = Option<BranchNodeCompact>;

/// A staged node write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StagedNode {
    pub(crate) value: NodeValue,
    /// The node history window (its first block) known to hold a record of the node, which
    /// spares the next change in that window a look into the history.
    pub(crate) recorded_window: Option<u64>,
}

/// One trie's staged nodes, by path (a nibble per byte, as node table keys hold it after the
/// trie's prefix).
type TrieNodes = BTreeMap<Vec<u8>, StagedNode>;

/// Branch node writes of a write transaction (`AccountsTrie` and `StoragesTrie`), by trie and
/// path. The nodes near the root, and those of busy contracts' storage tries, change in nearly
/// every block: staged, each is written once per commit instead of once per block, and the
/// next block's walk reads it from memory. The trie node cursor reads through them. Storage
/// tries are kept apart by hashed address, so that a lookup compares short paths, not keys that
/// all begin with the same 32 bytes.
#[derive(Default)]
pub(crate) struct StagedNodes(Mutex<NodeMaps>);

#[derive(Default)]
struct NodeMaps {
    accounts: TrieNodes,
    storages: B256Map<TrieNodes>,
    /// Staged nodes in all tries.
    len: usize,
}

/// A node table key's trie (`None`: the account trie; else the hashed address) and path.
fn split_node_key(table: Table, key: &[u8]) -> (Option<B256>, &[u8]) {
    match table {
        Table::AccountsTrie => (None, key),
        _ => {
            let (address, path) = key.split_at(key.len().min(32));
            (Some(B256::try_from(address).unwrap_or_default()), path)
        }
    }
}

impl NodeMaps {
    fn trie(&self, trie: Option<B256>) -> Option<&TrieNodes> {
        match trie {
            None => Some(&self.accounts),
            Some(address) => self.storages.get(&address),
        }
    }
}

/// A trie's table key: its prefix, then the path.
fn node_table_key(trie: Option<B256>, path: &[u8]) -> Vec<u8> {
    match trie {
        None => path.to_vec(),
        Some(address) => [address.as_slice(), path].concat(),
    }
}

impl StagedNodes {
    fn lock(&self) -> MutexGuard<'_, NodeMaps> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The staged write of `key`, if it is staged.
    pub(crate) fn get(&self, table: Table, key: &[u8]) -> Option<StagedNode> {
        let (trie, path) = split_node_key(table, key);
        self.lock().trie(trie)?.get(path).cloned()
    }

    /// The staged node at `key`: `Some(None)` when its deletion is staged, `None` when
    /// nothing is.
    pub(crate) fn get_node(&self, table: Table, key: &[u8]) -> Option<NodeValue> {
        let (trie, path) = split_node_key(table, key);
        Some(self.lock().trie(trie)?.get(path)?.value.clone())
    }

    /// The history window `key`'s staged node is known to be recorded in (`Some(None)`: none
    /// known), or `None` when it is not staged; unlike [`Self::get`], without copying the node.
    pub(crate) fn recorded_window(&self, table: Table, key: &[u8]) -> Option<Option<u64>> {
        let (trie, path) = split_node_key(table, key);
        Some(self.lock().trie(trie)?.get(path)?.recorded_window)
    }

    pub(crate) fn contains(&self, table: Table, key: &[u8]) -> bool {
        let (trie, path) = split_node_key(table, key);
        self.lock()
            .trie(trie)
            .is_some_and(|nodes| nodes.contains_key(path))
    }

    /// The first staged node (not a deletion) of `from`'s trie with a key after `from` (or at
    /// it, when `inclusive`). Nodes of other tries are not looked at: a trie node cursor
    /// returns none of them.
    pub(crate) fn first_after(
        &self,
        table: Table,
        from: &[u8],
        inclusive: bool,
    ) -> Option<(Vec<u8>, BranchNodeCompact)> {
        let (trie, path) = split_node_key(table, from);
        let start = if inclusive {
            Bound::Included(path)
        } else {
            Bound::Excluded(path)
        };
        self.lock()
            .trie(trie)?
            .range::<[u8], _>((start, Bound::Unbounded))
            .find_map(|(path, value)| {
                let value = value.value.as_ref()?;
                Some((node_table_key(trie, path), value.clone()))
            })
    }

    /// Stages a node; true when enough are staged to write them.
    fn stage(&self, table: Table, key: &[u8], value: StagedNode) -> bool {
        let (trie, path) = split_node_key(table, key);
        let mut maps = self.lock();
        let nodes = match trie {
            None => &mut maps.accounts,
            Some(address) => maps.storages.entry(address).or_default(),
        };
        // Replacing in place spares allocating the path for a node staged again.
        let added = match nodes.get_mut(path) {
            Some(staged) => {
                *staged = value;
                false
            }
            None => {
                nodes.insert(path.to_vec(), value);
                true
            }
        };
        maps.len += usize::from(added);
        maps.len >= STAGED_NODES_LIMIT
    }

    /// Takes the staged nodes of `table`, or of the one storage trie `account` names, in
    /// table key order.
    fn take(&self, table: Table, account: Option<&B256>) -> Vec<(Vec<u8>, NodeValue)> {
        let mut maps = self.lock();
        let taken: Vec<(Option<B256>, TrieNodes)> = match (table, account) {
            (Table::AccountsTrie, _) => vec![(None, std::mem::take(&mut maps.accounts))],
            (_, Some(account)) => maps
                .storages
                .remove(account)
                .map(|nodes| (Some(*account), nodes))
                .into_iter()
                .collect(),
            (_, None) => {
                let mut tries: Vec<(Option<B256>, TrieNodes)> = maps
                    .storages
                    .drain()
                    .map(|(address, nodes)| (Some(address), nodes))
                    .collect();
                tries.sort_unstable_by_key(|(address, _)| *address);
                tries
            }
        };
        let count: usize = taken.iter().map(|(_, nodes)| nodes.len()).sum();
        maps.len = maps.len.saturating_sub(count);
        drop(maps);
        let mut out = Vec::with_capacity(count);
        for (trie, nodes) in taken {
            for (path, node) in nodes {
                out.push((node_table_key(trie, &path), node.value));
            }
        }
        out
    }
}

impl StorageTx<RwSync> {
    /// Stages a branch node write (`None`: its deletion) for `write_staged`, with the node
    /// history window known to hold its record, if any.
    pub(crate) fn stage_node(
        &self,
        table: Table,
        key: &[u8],
        value: NodeValue,
        recorded_window: Option<u64>,
    ) -> Result<()> {
        let node = StagedNode {
            value,
            recorded_window,
        };
        if self.staged_nodes.stage(table, key, node) {
            self.write_staged_nodes(None)?;
        }
        Ok(())
    }

    /// Writes the staged nodes of the storage trie `account` names (`None`: every staged node
    /// of both node tables), in key order through one cursor per table.
    pub(crate) fn write_staged_nodes(&self, account: Option<&B256>) -> Result<()> {
        let parts = match account {
            Some(account) => vec![(Table::StoragesTrie, Some(account))],
            None => vec![(Table::AccountsTrie, None), (Table::StoragesTrie, None)],
        };
        for (table, account) in parts {
            let nodes = self.staged_nodes.take(table, account);
            if nodes.is_empty() {
                continue;
            }
            let mut cursor = self.tx.cursor(self.db(table))?;
            for (key, value) in nodes {
                match value {
                    Some(node) => cursor.put(&key, &encode_branch(&node), WriteFlags::empty())?,
                    None => crate::delete_at(&mut cursor, &key)?,
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
        self.write_staged_lists()?;
        let mut staged = self.staged.take();
        if staged.entries.is_empty() {
            self.staged.reuse(staged);
            return Ok(());
        }
        let mut sorted = std::mem::take(&mut staged.entries);
        // Stable: entries with one key are written in the order they were staged.
        sorted.sort_by(|a, b| {
            (a.table.index(), staged.key(a)).cmp(&(b.table.index(), staged.key(b)))
        });
        let mut index = Vec::new();
        let mut entries = sorted.iter().peekable();
        while let Some(table) = entries.peek().map(|entry| entry.table) {
            let mut cursor = self.tx.cursor(self.db(table))?;
            let how = written(table);
            while let Some(entry) = entries.next_if(|entry| entry.table == table) {
                let (key, value) = (staged.key(entry), staged.value(entry));
                if how == Written::LastWins {
                    cursor.put(key, value, WriteFlags::empty())?;
                    continue;
                }
                let (prefix, record) = trie_history::split_staged_node_record(value)?;
                match cursor.put(key, record, WriteFlags::NO_OVERWRITE) {
                    Ok(()) => index.push(trie_history::changeset_index(prefix, key)),
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
        if self.staged.holds_history() || self.staged_lists.holds_blocks() {
            return Err(Error::HistoryStaged);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Database, LegacyTable};

    #[test]
    fn staged_entries_are_written_in_order_and_the_last_of_a_key_wins() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        tx.put_staged(Table::TxLookup, &[3; 32], &[1]).unwrap();
        tx.put_staged(Table::Legacy(LegacyTable::LogTopics), &[9; 40], &[2])
            .unwrap();
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
            rx.get(Table::Legacy(LegacyTable::LogTopics), &[9; 40])
                .unwrap()
                .as_deref(),
            Some(&[2][..])
        );
    }

    #[test]
    fn staged_nodes_stay_in_their_trie_and_are_written_in_key_order() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        let storage_key = |address: u8, path: &[u8]| [&[address; 32][..], path].concat();
        let node = |mask: u16| {
            let (mask, none) = (
                alloy_trie::TrieMask::new(mask),
                alloy_trie::TrieMask::new(0),
            );
            BranchNodeCompact::new(mask, none, none, Vec::new(), None)
        };
        // The same path in the account trie and in two storage tries; trie 5's node at
        // [1, 2] is staged twice, the later write replacing the first.
        let writes = [
            (Table::AccountsTrie, vec![1, 2], Some(node(10)), None),
            (
                Table::StoragesTrie,
                storage_key(7, &[1, 2]),
                Some(node(11)),
                None,
            ),
            (
                Table::StoragesTrie,
                storage_key(5, &[1, 2]),
                Some(node(12)),
                None,
            ),
            (Table::StoragesTrie, storage_key(5, &[0]), None, Some(0)),
            (
                Table::StoragesTrie,
                storage_key(5, &[1, 2]),
                Some(node(13)),
                None,
            ),
        ];
        for (table, key, value, recorded_window) in writes {
            tx.stage_node(table, &key, value, recorded_window).unwrap();
        }
        let nodes = &tx.staged_nodes;
        assert_eq!(nodes.lock().len, 4);
        assert_eq!(
            nodes.get(Table::StoragesTrie, &storage_key(5, &[1, 2])),
            Some(StagedNode {
                value: Some(node(13)),
                recorded_window: None
            })
        );
        assert_eq!(
            nodes.get(Table::StoragesTrie, &storage_key(5, &[0])),
            Some(StagedNode {
                value: None,
                recorded_window: Some(0)
            })
        );
        assert_eq!(
            nodes.get(Table::StoragesTrie, &storage_key(6, &[1, 2])),
            None
        );
        // The window alone, as the staged writes say it.
        let window = |address: u8, path: &[u8]| {
            nodes.recorded_window(Table::StoragesTrie, &storage_key(address, path))
        };
        assert_eq!(window(5, &[0]), Some(Some(0)));
        assert_eq!(window(5, &[1, 2]), Some(None));
        assert_eq!(window(6, &[1, 2]), None);
        assert!(nodes.contains(Table::AccountsTrie, &[1, 2]));
        assert!(!nodes.contains(Table::AccountsTrie, &[1]));
        // The first node from the start of trie 5 skips the deletion; none follows in trie 5,
        // though trie 7 has one.
        assert_eq!(
            nodes.first_after(Table::StoragesTrie, &storage_key(5, &[]), true),
            Some((storage_key(5, &[1, 2]), node(13)))
        );
        assert_eq!(
            nodes.first_after(Table::StoragesTrie, &storage_key(5, &[1, 2]), false),
            None
        );
        assert_eq!(
            nodes.first_after(Table::StoragesTrie, &storage_key(5, &[1, 2]), true),
            Some((storage_key(5, &[1, 2]), node(13)))
        );

        // A storage trie's nodes are written alone; the rest in key order.
        tx.write_staged_nodes(Some(&B256::repeat_byte(7))).unwrap();
        assert_eq!(nodes.lock().len, 3);
        assert_eq!(
            tx.get(Table::StoragesTrie, &storage_key(7, &[1, 2]))
                .unwrap()
                .as_deref(),
            Some(&encode_branch(&node(11))[..])
        );
        assert_eq!(
            nodes.take(Table::StoragesTrie, None),
            vec![
                (storage_key(5, &[0]), None),
                (storage_key(5, &[1, 2]), Some(node(13)))
            ]
        );
        assert_eq!(nodes.lock().len, 1);
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
