//! The state trie's history: every branch node a window of blocks changed, as it was before the
//! window (reth's trie changesets, indexed by path), and every leaf's values after older blocks,
//! read from the state history (the changesets through the block lists of state_lists.rs). With
//! it the trie after an older block (for nodes: one that ends a window) reads like the latest
//! one: each node or leaf is the current entry, unless a later block changed it, in which case it
//! is the value the first such change recorded, one seek away for a node and two for a leaf (its
//! list, then that block's changeset). A proof at an older block so costs the same however far
//! back it is.
//!
//! The state history answers from the block in the `state_history_from` meta entry on (the
//! block after genesis; for a datadir `quarry migrate` brought from an older layout, where its
//! trie history or else its head started), and older blocks' state is in the plain history
//! tables those layouts wrote. Node history is recorded from `trie_history_from` on, unless
//! `--no-trie-history` stopped it; proofs at blocks it does not cover undo the changesets in
//! memory instead.

use crate::{
    Error, MetaKey, Result, StorageTx, StoredAccount, Table,
    models::{SlotValue, StorageRootBefore, encode_trie_account},
    tables::{Entries, TrieId},
};
use alloy_primitives::{Address, B256, U256};
use alloy_trie::Nibbles;
use signet_libmdbx::{RwSync, TransactionKind, tx::Cursor};

/// The node history window of a new datadir: proofs at an older block undo or redo at most 16
/// blocks' changes.
pub const NODE_HISTORY_WINDOW: u64 = 32;

/// `TrieChangeSets` tags: which history table an entry's key belongs to.
const ACCOUNTS_TAG: u8 = 0;
const STORAGES_TAG: u8 = 1;

/// Node history values: empty when there was no node; otherwise a tag, then either the whole
/// node as the trie table holds it (`FULL`: with a window of more than one block, since the
/// node after the block changes again within the window; or the node was deleted, so there is
/// nothing after it to compare with), or (`DIFF`: datadirs whose window is one block, and the
/// records kept in thinned windows and those of a coarse window written whole, proof_history.rs)
/// the node
/// relative to the one after the block: its three masks, a mask of the children whose hash is
/// the same after the block, the other children's hashes, then the root hash if the node has
/// one. Reading a node back undoes every later change's record from the current node down, which
/// stops at the first `FULL` record.
const FULL: u8 = 1;
const DIFF: u8 = 2;

/// The node history table a `TrieChangeSets` entry (`key`) with table tag `tag` names.
pub(crate) fn tagged_history_table(tag: u8, key: &[u8]) -> Result<Table> {
    match tag {
        ACCOUNTS_TAG => Ok(Table::AccountsTrieHistory),
        STORAGES_TAG => Ok(Table::StoragesTrieHistory),
        _ => Err(Error::Corrupt(format!(
            "trie changeset key {} has no table tag",
            alloy_primitives::hex::encode(key)
        ))),
    }
}

/// The hash of `nibble`'s child in a node as the trie table holds it (masks, then hashes).
fn child_hash(node: &[u8], nibble: u8) -> Option<&[u8]> {
    let hash_mask = u16::from_be_bytes([*node.get(4)?, *node.get(5)?]);
    if hash_mask & (1 << nibble) == 0 {
        return None;
    }
    let index = (hash_mask & ((1u16 << nibble) - 1)).count_ones() as usize;
    node.get(6 + 32 * index..6 + 32 * (index + 1))
}

fn corrupt_record(record: &[u8]) -> Error {
    Error::Corrupt(format!(
        "malformed trie node history record of {} bytes",
        record.len()
    ))
}

/// The history record of a node that was `before` a block and is `after` it (`None`: deleted).
pub(crate) fn node_record(before: &[u8], after: Option<&[u8]>) -> Vec<u8> {
    let (Some(after), Some(masks)) = (after, before.get(..6)) else {
        return [&[FULL], before].concat();
    };
    let hash_mask = u16::from_be_bytes([masks[4], masks[5]]);
    let mut out = Vec::with_capacity(before.len() / 4 + 9);
    out.push(DIFF);
    out.extend_from_slice(masks);
    out.extend_from_slice(&[0, 0]);
    let mut same = 0u16;
    let mut hashes = 0;
    for nibble in 0..16u8 {
        let Some(hash) = child_hash(before, nibble) else {
            continue;
        };
        hashes += 1;
        if child_hash(after, nibble) == Some(hash) {
            same |= 1 << nibble;
        } else {
            out.extend_from_slice(hash);
        }
    }
    debug_assert_eq!(hashes, hash_mask.count_ones());
    // The root hash, if any, follows the children's hashes.
    out.extend_from_slice(before.get(6 + 32 * hashes as usize..).unwrap_or_default());
    out[7..9].copy_from_slice(&same.to_be_bytes());
    out
}

/// The node a history record says was there before its block, given the node `after` it
/// (`None`: none was).
pub(crate) fn node_before(record: &[u8], after: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
    match record.first() {
        None => Ok(None),
        Some(&FULL) => Ok(Some(record[1..].to_vec())),
        Some(&DIFF) => {
            let corrupt = || corrupt_record(record);
            let after = after.ok_or_else(corrupt)?;
            let masks = record.get(1..7).ok_or_else(corrupt)?;
            let same = record.get(7..9).ok_or_else(corrupt)?;
            let same = u16::from_be_bytes([same[0], same[1]]);
            let hash_mask = u16::from_be_bytes([masks[4], masks[5]]);
            let mut out = Vec::with_capacity(6 + 32 * (hash_mask.count_ones() as usize + 1));
            out.extend_from_slice(masks);
            let mut at = 9;
            for nibble in 0..16u8 {
                if hash_mask & (1 << nibble) == 0 {
                    continue;
                }
                let hash = if same & (1 << nibble) != 0 {
                    child_hash(after, nibble)
                } else {
                    at += 32;
                    record.get(at - 32..at)
                };
                out.extend_from_slice(hash.ok_or_else(corrupt)?);
            }
            out.extend_from_slice(record.get(at..).ok_or_else(corrupt)?);
            Ok(Some(out))
        }
        Some(_) => Err(corrupt_record(record)),
    }
}

/// A node path as history keys hold it: each nibble plus one, then a zero byte. Byte order is
/// then trie order (a path before the paths below it), and one path's entries, which follow it
/// with their block numbers, are contiguous.
pub(crate) fn history_path(path: &Nibbles) -> Vec<u8> {
    history_path_of(path.iter())
}

fn history_path_of(nibbles: impl Iterator<Item = u8>) -> Vec<u8> {
    nibbles.map(|nibble| nibble + 1).chain([0]).collect()
}

/// The key history holds for an entry whose current table key (after the trie's prefix) is
/// `key`: a node's history path, a leaf's hashed key.
pub(crate) fn logical_key(entries: Entries, key: &[u8]) -> Vec<u8> {
    match entries {
        Entries::Nodes => history_path_of(key.iter().copied()),
        Entries::Leaves => key.to_vec(),
    }
}

/// The inverse of [`history_path`], for a key the history table holds.
pub(crate) fn path_of_history(bytes: &[u8]) -> Result<Nibbles> {
    let corrupt = || {
        Error::Corrupt(format!(
            "trie history key {} is not a nibble path",
            alloy_primitives::hex::encode(bytes)
        ))
    };
    let (last, nibbles) = bytes.split_last().ok_or_else(corrupt)?;
    if *last != 0 || nibbles.len() >= 64 || nibbles.iter().any(|n| *n == 0 || *n > 0x10) {
        return Err(corrupt());
    }
    Ok(Nibbles::from_nibbles_unchecked(
        nibbles.iter().map(|n| n - 1).collect::<Vec<u8>>(),
    ))
}

/// Whether a history recorded from block `from` on (`None`: not recorded) covers the state
/// after `block`: every later block's changes are recorded.
fn history_covers(from: Option<u64>, block: u64) -> bool {
    from.is_some_and(|from| block.saturating_add(1) >= from)
}

/// The node history keys a write transaction has recorded, or found recorded, in the window
/// it is writing. Nodes near the root change in nearly every block, and all but a window's
/// first change find their record there already: knowing that spares a B-tree search each.
/// Only keys of one window are kept, and an unwind, which deletes records, forgets them all.
#[derive(Default)]
pub(crate) struct RecordedNodes(std::sync::Mutex<(u64, alloy_primitives::map::HashSet<Vec<u8>>)>);

impl RecordedNodes {
    fn contains(&self, window_start: u64, key: &[u8]) -> bool {
        let known = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        known.0 == window_start && known.1.contains(key)
    }

    fn insert(&self, window_start: u64, key: Vec<u8>) {
        let mut known = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if known.0 != window_start {
            known.0 = window_start;
            known.1.clear();
        }
        known.1.insert(key);
    }

    pub(crate) fn forget(&self) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .1
            .clear();
    }
}

/// A node history record as a write transaction stages it: the block that changed the node
/// and its trie's `TrieChangeSets` tag go before the record, for the index entry written with
/// it (a record already there from an earlier commit in the window is kept, without one).
fn staged_node_record(block: u64, tag: u8, record: &[u8]) -> Vec<u8> {
    [&block.to_be_bytes()[..], &[tag], record].concat()
}

/// The `TrieChangeSets` prefix (block, tag) and the record of a staged node history value.
pub(crate) fn split_staged_node_record(value: &[u8]) -> Result<(&[u8], &[u8])> {
    if value.len() < 9 {
        return Err(corrupt_record(value));
    }
    Ok(value.split_at(9))
}

/// The `TrieChangeSets` entry of a node history record: its block and tag, then its history
/// key without the window's block.
pub(crate) fn changeset_index(prefix: &[u8], history_key: &[u8]) -> Vec<u8> {
    [prefix, &history_key[..history_key.len() - 8]].concat()
}

/// A history key: the trie's prefix, the entry's key as history holds it, the block.
fn history_key(trie: &TrieId, logical: &[u8], block: u64) -> Vec<u8> {
    [trie.prefix(), logical, &block.to_be_bytes()].concat()
}

/// Reads a trie's entries as they were after `block`: the current table merged with the
/// history table, each key resolved to its value after the block. Keys are compared in their
/// history form ("logical" keys), which sorts as the current table does.
pub(crate) struct AsOf<'tx, K: TransactionKind> {
    tx: &'tx StorageTx<K>,
    block: u64,
    entries: Entries,
    /// Walks the history table's distinct keys (for leaves: the block lists', state_lists.rs).
    keys: Cursor<'tx, K>,
    /// Resolves one key: its first change after `block`.
    lookup: Cursor<'tx, K>,
    /// The logical key last returned, for `advance`.
    last: Option<Vec<u8>>,
}

impl<'tx, K: TransactionKind> AsOf<'tx, K> {
    pub(crate) fn new(
        tx: &'tx StorageTx<K>,
        trie: &TrieId,
        entries: Entries,
        block: u64,
    ) -> Result<Self> {
        tx.check_history_written()?;
        let table = tx.db(trie.history_table(entries));
        Ok(Self {
            tx,
            block,
            entries,
            keys: tx.tx.cursor(table)?,
            lookup: tx.tx.cursor(table)?,
            last: None,
        })
    }

    /// The key as the current table holds it after the trie's prefix.
    fn current_key(&self, logical: &[u8]) -> Vec<u8> {
        match self.entries {
            Entries::Nodes => logical[..logical.len() - 1].iter().map(|n| n - 1).collect(),
            Entries::Leaves => logical.to_vec(),
        }
    }

    /// The first distinct logical key in the history table at or after `from` (after it, when
    /// `after`).
    fn next_history_key(
        &mut self,
        trie: &TrieId,
        from: &[u8],
        after: bool,
    ) -> Result<Option<Vec<u8>>> {
        let block = if after { u64::MAX } else { 0 };
        let mut entry = self
            .keys
            .set_range::<Vec<u8>, ()>(&history_key(trie, from, block))?;
        let prefix = trie.prefix();
        loop {
            let Some((key, ())) = entry else {
                return Ok(None);
            };
            if !key.starts_with(prefix) || key.len() < prefix.len() + 8 {
                return Ok(None);
            }
            let logical = key[prefix.len()..key.len() - 8].to_vec();
            if after && logical.as_slice() <= from {
                entry = self.keys.next::<Vec<u8>, ()>()?;
                continue;
            }
            return Ok(Some(logical));
        }
    }

    /// The first entry at logical key `from` or after it that exists after `block`, with its
    /// value then. `current` is a cursor over the trie's current table.
    pub(crate) fn seek(
        &mut self,
        trie: &TrieId,
        current: &mut Cursor<'tx, K>,
        from: &[u8],
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.next(trie, current, from, false)
    }

    /// The entry after the last one returned that exists after `block`, with its value then.
    pub(crate) fn advance(
        &mut self,
        trie: &TrieId,
        current: &mut Cursor<'tx, K>,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        match self.last.clone() {
            Some(last) => self.next(trie, current, &last, true),
            None => Ok(None),
        }
    }

    /// The entry at logical key `from` or the first after it (strictly after, when `after`)
    /// that exists after `block`, with its value then.
    fn next(
        &mut self,
        trie: &TrieId,
        current: &mut Cursor<'tx, K>,
        from: &[u8],
        after: bool,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let prefix = trie.prefix();
        let read_current = |entry: Option<(Vec<u8>, Vec<u8>)>, this: &Self| {
            entry
                .filter(|(key, _)| key.starts_with(prefix))
                .map(|(key, value)| (logical_key(this.entries, &key[prefix.len()..]), value))
        };
        let seek = [prefix, &self.current_key(from)].concat();
        let mut now = read_current(current.set_range::<Vec<u8>, Vec<u8>>(&seek)?, self);
        if after && now.as_ref().is_some_and(|(key, _)| key.as_slice() <= from) {
            now = read_current(current.next::<Vec<u8>, Vec<u8>>()?, self);
        }
        let mut changed = self.next_history_key(trie, from, after)?;
        loop {
            let key = match (&now, &changed) {
                (Some((a, _)), Some(b)) => a.min(b).clone(),
                (Some((a, _)), None) => a.clone(),
                (None, Some(b)) => b.clone(),
                (None, None) => return Ok(None),
            };
            let current_value = now
                .as_ref()
                .filter(|(k, _)| *k == key)
                .map(|(_, value)| value.as_slice());
            let is_current = current_value.is_some();
            // A key the history does not name has not changed since the history began: its
            // value is the current one, with no lookup.
            let value = if changed.as_ref() == Some(&key) {
                self.value_after_block(trie, &key, current_value)?
            } else {
                current_value.map(<[u8]>::to_vec)
            };
            if let Some(value) = value {
                self.last = Some(key.clone());
                return Ok(Some((key, value)));
            }
            // The key did not exist after `block`: go past it.
            if is_current {
                now = read_current(current.next::<Vec<u8>, Vec<u8>>()?, self);
            }
            if changed.as_ref() == Some(&key) {
                changed = self.next_history_key(trie, &key, true)?;
            }
        }
    }

    /// The value of `logical` after `block`, given its current value: the value the first
    /// later change recorded (a leaf's in its changeset; a node's undone from the current one
    /// through every later change's record), or the current one when nothing changed it since.
    fn value_after_block(
        &mut self,
        trie: &TrieId,
        logical: &[u8],
        current: Option<&[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        if self.entries == Entries::Leaves {
            return self.leaf_after_block(trie, logical, current);
        }
        let seek = history_key(trie, logical, self.block.saturating_add(1));
        let len = seek.len();
        let of_key = |entry: Option<(Vec<u8>, Vec<u8>)>| {
            entry.filter(|(key, _)| key.len() == len && key[..len - 8] == seek[..len - 8])
        };
        let first = of_key(self.lookup.set_range::<Vec<u8>, Vec<u8>>(&seek)?);
        let Some((_, record)) = first else {
            return Ok(current.map(<[u8]>::to_vec));
        };
        // A whole node (or none) needs nothing after it; a diff needs every later record.
        if record.first() != Some(&DIFF) {
            return node_before(&record, None);
        }
        let mut records = vec![record];
        while let Some((_, record)) = of_key(self.lookup.next::<Vec<u8>, Vec<u8>>()?) {
            let whole = record.first() != Some(&DIFF);
            records.push(record);
            if whole {
                break;
            }
        }
        let mut value = current.map(<[u8]>::to_vec);
        for record in records.iter().rev() {
            value = node_before(record, value.as_deref())?;
        }
        Ok(value)
    }
}

impl<K: TransactionKind> AsOf<'_, K> {
    /// A leaf's value after `block`, encoded as the leaves table holds it: from the changeset
    /// of the first later block its list names (for an account, with the storage root that
    /// entry holds), or `current` when none does.
    fn leaf_after_block(
        &mut self,
        trie: &TrieId,
        logical: &[u8],
        current: Option<&[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        let tx = self.tx;
        match trie {
            TrieId::Accounts => {
                let hashed = B256::try_from(logical).map_err(|_| {
                    Error::Corrupt(format!("account list key of {} bytes", logical.len()))
                })?;
                let Some((first, address, before)) =
                    tx.listed_account_after(&mut self.lookup, &hashed, self.block)?
                else {
                    return Ok(current.map(<[u8]>::to_vec));
                };
                let (account, storage_root) = match before {
                    None => return Ok(None),
                    Some((_, StorageRootBefore::NotRecorded)) => {
                        return Err(Error::StorageRootNotRecorded {
                            address,
                            block: self.block,
                            changeset: first,
                        });
                    }
                    Some((account, StorageRootBefore::Known(root))) => (account, root),
                };
                Ok(Some(encode_trie_account(&alloy_trie::TrieAccount {
                    nonce: account.nonce,
                    balance: account.balance,
                    storage_root: storage_root.unwrap_or(alloy_trie::EMPTY_ROOT_HASH),
                    code_hash: account.code_hash,
                })))
            }
            TrieId::Storage(address) => {
                let hashed = [address.as_slice(), logical].concat();
                Ok(
                    match tx.listed_slot_after(&mut self.lookup, &hashed, self.block)? {
                        None => current.map(<[u8]>::to_vec),
                        Some(value) if value.is_zero() => None,
                        Some(value) => Some(SlotValue::new(value).as_slice().to_vec()),
                    },
                )
            }
        }
    }
}

impl<K: TransactionKind> StorageTx<K> {
    /// The first block whose trie node changes are recorded, if any are.
    pub fn trie_history_from(&self) -> Result<Option<u64>> {
        self.meta_u64(MetaKey::TrieHistoryFrom)
    }

    /// The first block whose leaf changes are recorded: the state history from then on. Older
    /// blocks' state is in `AccountHistory` and `StorageHistory`, which layouts before 6 wrote.
    pub fn state_history_from(&self) -> Result<Option<u64>> {
        // Every read at an older block asks: one `Meta` read per transaction.
        self.state_history_from
            .get(|| self.meta_u64(MetaKey::StateHistoryFrom))
    }

    /// Whether the state after `block` reads from the leaf history (else from the plain
    /// history an older layout wrote).
    pub(crate) fn state_history_covers(&self, block: u64) -> Result<bool> {
        Ok(history_covers(self.state_history_from()?, block))
    }

    /// The node history's window (see `NODE_WINDOW`).
    pub fn node_window(&self) -> Result<u64> {
        let window = self
            .node_window
            .get(|| self.meta_u64(MetaKey::TrieHistoryWindow))?;
        Ok(window.unwrap_or(1).max(1))
    }

    /// The block at or after `block` that ends a node history window: the trie after it reads
    /// from the history ([`StorageTx::trie_nodes_after`]); the changesets of the blocks from
    /// `block` to it take the trie back to `block`.
    pub fn trie_history_checkpoint(&self, block: u64) -> Result<u64> {
        let window = self.read_window(block)?;
        Ok(block.saturating_add(window - 1 - block % window))
    }

    /// The block before `block` that ends a node history window, if the history covers it:
    /// the changes of the blocks after it up to `block` take its trie forward to `block`.
    pub fn trie_history_checkpoint_before(&self, block: u64) -> Result<Option<u64>> {
        let window_start = block - block % self.read_window(block)?;
        match window_start.checked_sub(1) {
            Some(before) if self.trie_history_covers(before)? => Ok(Some(before)),
            _ => Ok(None),
        }
    }

    /// Whether the trie after `block` can be read from the history: every later block's
    /// node and leaf changes are recorded.
    pub fn trie_history_covers(&self, block: u64) -> Result<bool> {
        Ok(history_covers(self.trie_history_from()?, block) && self.state_history_covers(block)?)
    }
}

impl StorageTx<RwSync> {
    /// Records the trie's history, nodes and leaves, from block `first` on (a new datadir),
    /// nodes once per window of `window` blocks.
    pub fn start_trie_history(&self, first: u64, window: u64) -> Result<()> {
        let window = window.max(1);
        self.put_meta(MetaKey::TrieHistoryFrom, &first.to_be_bytes())?;
        self.put_meta(MetaKey::TrieHistoryWindow, &window.to_be_bytes())?;
        self.node_window.set(Some(window));
        self.start_state_history(first)
    }

    /// Records the leaf history (the state history) from block `first` on.
    pub(crate) fn start_state_history(&self, first: u64) -> Result<()> {
        self.put_meta(MetaKey::StateHistoryFrom, &first.to_be_bytes())?;
        self.state_history_from.set(Some(first));
        Ok(())
    }

    /// Stops recording trie node history: proofs at older blocks undo the changesets instead.
    /// The leaf history, which is the state history, goes on.
    pub fn stop_trie_history(&self) -> Result<()> {
        self.del_meta(MetaKey::TrieHistoryFrom)
    }

    /// Whether this transaction knows the node history to hold a record of the node with
    /// history key `logical` for `block`'s window already (so a change need not look up the
    /// node before it).
    pub(crate) fn node_recorded(&self, trie: &TrieId, logical: &[u8], block: u64) -> Result<bool> {
        let window_start = block - block % self.node_window()?;
        let key = history_key(trie, logical, window_start);
        Ok(self.recorded_nodes.contains(window_start, &key))
    }

    /// Records `before`, the branch node of `trie` at history path `logical` before `block`
    /// (`None`: none), when it is `after` the block, unless this block's window already
    /// recorded one: the first is the node before the window.
    pub(crate) fn record_node_before(
        &self,
        trie: &TrieId,
        logical: &[u8],
        block: u64,
        before: Option<&[u8]>,
        after: Option<&[u8]>,
    ) -> Result<()> {
        let table = trie.history_table(Entries::Nodes);
        let window = self.node_window()?;
        let window_start = block - block % window;
        let key = history_key(trie, logical, window_start);
        if self.recorded_nodes.contains(window_start, &key) {
            return Ok(());
        }
        let record = match before {
            Some(before) if window == 1 => node_record(before, after),
            Some(before) => [&[FULL], before].concat(),
            None => Vec::new(),
        };
        let tag = match trie {
            TrieId::Accounts => ACCOUNTS_TAG,
            TrieId::Storage(_) => STORAGES_TAG,
        };
        self.put_staged(table, &key, &staged_node_record(block, tag, &record))?;
        self.recorded_nodes.insert(window_start, key);
        Ok(())
    }

    /// Rewrites the whole node record under `key` (a history key of `table`, the node history
    /// of trie `tag`) as a diff from the node's next value: its next record's, if that holds
    /// the node whole, or else, with no later record, the current node. A thinned window's kept
    /// record is the node before its coarse window, and its next record (or the current node)
    /// the node after it, whatever later thinning or unwinds delete: the node changed in no
    /// block between, so the next record left always holds that value. Deep nodes change one
    /// child in a window, so their diff holds one hash instead of up to sixteen.
    pub(crate) fn diff_kept_record(&self, table: Table, tag: u8, key: &[u8]) -> Result<()> {
        let node = key.len().saturating_sub(8);
        let mut cursor = self.tx.cursor(self.db(table))?;
        let Some(record) = cursor.set::<Vec<u8>>(key)? else {
            return Ok(());
        };
        if record.first() != Some(&FULL) {
            return Ok(());
        }
        let after = match cursor.next::<Vec<u8>, Vec<u8>>()? {
            Some((next, value)) if next.len() == key.len() && next[..node] == key[..node] => {
                // Empty (the node was gone after the window) or a diff: kept whole.
                if value.first() != Some(&FULL) {
                    return Ok(());
                }
                value[1..].to_vec()
            }
            _ => {
                let prefix = if tag == STORAGES_TAG { 32 } else { 0 };
                let (trie, path) = key[..node].split_at(prefix.min(node));
                // The node table's key: the trie's prefix, then a byte per nibble.
                path_of_history(path)?;
                let nibbles = path[..path.len() - 1].iter().map(|n| n - 1);
                let current: Vec<u8> = trie.iter().copied().chain(nibbles).collect();
                let nodes = match tag {
                    STORAGES_TAG => Table::StoragesTrie,
                    _ => Table::AccountsTrie,
                };
                match self.get(nodes, &current)? {
                    Some(value) => value.into_owned(),
                    None => return Ok(()),
                }
            }
        };
        drop(cursor);
        let diff = node_record(&record[1..], Some(&after));
        if diff.len() < record.len() {
            self.put(table, key, &diff)?;
        }
        Ok(())
    }

    /// Deletes what block `number` recorded in the trie history: `accounts` and `slots` are
    /// the block's changesets (every leaf it changed is under one of them).
    pub(crate) fn delete_trie_history(
        &self,
        number: u64,
        accounts: &[(Address, Option<StoredAccount>)],
        slots: &[(Address, B256, U256)],
    ) -> Result<()> {
        // What the block recorded must be written (`unwind_to` writes what is staged first).
        self.check_history_written()?;
        self.recorded_nodes.forget();
        self.unlist_changesets(number, accounts, slots)?;
        self.delete_node_records(number)
    }

    /// Deletes the node history records block `number` wrote, with its `TrieChangeSets`
    /// entries (an unwound block's, or a block that fell behind the state history window).
    pub(crate) fn delete_node_records(&self, number: u64) -> Result<()> {
        let block = number.to_be_bytes();
        // Node history keys name the block's window; `TrieChangeSets` the block that recorded
        // them, so only that block's removal deletes them.
        let window_start = number - number % self.node_window()?;
        let mut cursor = self.tx.cursor(self.db(Table::TrieChangeSets))?;
        let mut entry = cursor.set_range::<Vec<u8>, ()>(&block)?;
        while let Some((key, ())) = entry {
            if !key.starts_with(&block) {
                break;
            }
            let table = tagged_history_table(key.get(8).copied().unwrap_or(u8::MAX), &key)?;
            self.del(table, &[&key[9..], &window_start.to_be_bytes()].concat())?;
            entry = crate::delete_and_next::<Vec<u8>, ()>(&mut cursor)?;
        }
        Ok(())
    }

    /// After an unwind to `ancestor`: history is recorded from the block after it at the
    /// latest (everything above it is gone).
    pub(crate) fn trie_history_unwound(&self, ancestor: u64) -> Result<()> {
        let first = ancestor + 1;
        self.proof_history_unwound(ancestor)?;
        if self.trie_history_from()?.is_some_and(|from| from > first) {
            self.put_meta(MetaKey::TrieHistoryFrom, &first.to_be_bytes())?;
        }
        if self.state_history_from()?.is_some_and(|from| from > first) {
            self.start_state_history(first)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_trie::{BranchNodeCompact, TrieMask};

    /// A node's history record, diffed against the node after its block, gives the node back
    /// (with or without a root hash, children added, removed or rehashed), and a deleted node's
    /// record holds it whole.
    #[test]
    fn node_records_give_the_node_before_back() {
        use crate::models::encode_branch;
        let node = |hash_mask: u16, seed: u8, root: bool| {
            let hashes = (0..hash_mask.count_ones() as u8)
                .map(|i| B256::repeat_byte(seed.wrapping_add(i)))
                .collect();
            encode_branch(&BranchNodeCompact::new(
                TrieMask::new(0xffff),
                TrieMask::new(hash_mask),
                TrieMask::new(hash_mask),
                hashes,
                root.then(|| B256::repeat_byte(0xee - seed)),
            ))
        };
        let cases = [
            (node(0b1011, 1, false), node(0b1011, 1, false)),
            (node(0b1011, 1, true), node(0b1011, 2, true)),
            (
                node(0b1111_0000_1011, 1, false),
                node(0b0111_0000_1111, 1, false),
            ),
            (node(0, 1, true), node(0b1, 3, true)),
            (node(0xffff, 7, false), node(0xfffe, 7, false)),
        ];
        for (before, after) in &cases {
            let record = node_record(before, Some(after));
            assert_eq!(record[0], DIFF);
            assert_eq!(
                node_before(&record, Some(after)).unwrap().as_ref(),
                Some(before)
            );
            let whole = node_record(before, None);
            assert_eq!(whole[0], FULL);
            assert_eq!(node_before(&whole, None).unwrap().as_ref(), Some(before));
        }
        // Unchanged children cost no bytes: 16 hashes, one of them changed.
        let (before, after) = (node(0xffff, 7, false), node(0xffff, 7, false));
        let mut changed = after.clone();
        changed[6] ^= 1;
        assert_eq!(node_record(&before, Some(&after)).len(), 9);
        assert_eq!(node_record(&before, Some(&changed)).len(), 9 + 32);
        assert_eq!(node_before(&[], Some(&after)).unwrap(), None);
        assert!(node_before(&[DIFF, 0, 0], Some(&after)).is_err());
        assert!(node_before(&node_record(&before, Some(&after)), None).is_err());
    }

    /// A branch node with two hashed children, both hashes `seed` repeated.
    fn branch(seed: u8) -> BranchNodeCompact {
        BranchNodeCompact::new(
            TrieMask::new(0b11),
            TrieMask::new(0),
            TrieMask::new(0b11),
            vec![B256::repeat_byte(seed); 2],
            None,
        )
    }

    /// Every key of `table`, in order.
    fn table_keys<K: TransactionKind>(tx: &StorageTx<K>, table: Table) -> Vec<Vec<u8>> {
        let mut cursor = tx.tx.cursor(tx.db(table)).unwrap();
        let mut keys = Vec::new();
        let mut entry = cursor.first::<Vec<u8>, ()>().unwrap();
        while let Some((key, ())) = entry {
            keys.push(key);
            entry = cursor.next::<Vec<u8>, ()>().unwrap();
        }
        keys
    }

    /// A window records a node once, however often its blocks change it; once an unwind has
    /// deleted that record, the window's next change records the node again.
    #[test]
    fn a_window_records_a_node_once_and_again_after_its_record_is_unwound() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        tx.start_trie_history(1, 4).unwrap();
        let records = || {
            tx.write_staged().unwrap();
            (
                table_keys(&tx, Table::AccountsTrieHistory).len(),
                table_keys(&tx, Table::TrieChangeSets).len(),
            )
        };
        let path = Nibbles::from_nibbles([1, 2]);
        let put = |seed: u8, block: u64| {
            tx.put_trie_node(&TrieId::Accounts, &path, Some(&branch(seed)), Some(block))
                .unwrap()
        };
        put(1, 4);
        put(2, 5);
        put(3, 6);
        assert_eq!(records(), (1, 1), "blocks 4 to 7 are one window");
        tx.delete_trie_history(6, &[], &[]).unwrap();
        tx.delete_trie_history(5, &[], &[]).unwrap();
        assert_eq!(records(), (1, 1), "block 4 wrote the record");
        tx.delete_trie_history(4, &[], &[]).unwrap();
        assert_eq!(records(), (0, 0));
        put(4, 5);
        assert_eq!(records(), (1, 1), "the window's record is written again");
    }

    /// Node history records are staged and written sorted: a node's record for a window an
    /// earlier commit already recorded is dropped with its index entry; and history is not read
    /// while some is staged (node records, or blocks for the state history's lists).
    #[test]
    fn staged_history_keeps_the_first_record_and_indexes_what_it_writes() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::Database::open(dir.path()).unwrap();
        let path = Nibbles::from_nibbles([1, 2]);

        let tx = db.writer().unwrap();
        tx.start_trie_history(1, 4).unwrap();
        tx.put_trie_node(&TrieId::Accounts, &path, Some(&branch(1)), Some(4))
            .unwrap();
        assert!(matches!(
            tx.trie_leaves_after(TrieId::Accounts, Some(4)),
            Err(Error::HistoryStaged)
        ));
        tx.commit().unwrap();

        // Block 6 is in block 4's window, which the last commit recorded.
        let tx = db.writer().unwrap();
        tx.put_trie_node(&TrieId::Accounts, &path, Some(&branch(2)), Some(6))
            .unwrap();
        tx.commit().unwrap();

        // Staged list blocks refuse reads of the state history too, until written.
        let tx = db.writer().unwrap();
        let address = Address::repeat_byte(1);
        tx.list_account_change(7, &address, &alloy_primitives::keccak256(address))
            .unwrap();
        assert!(matches!(
            tx.account_at(&Address::repeat_byte(1), 5),
            Err(Error::HistoryStaged)
        ));
        tx.write_staged().unwrap();
        assert!(tx.trie_leaves_after(TrieId::Accounts, Some(4)).is_ok());
        drop(tx);

        let rx = db.reader().unwrap();
        let all = |table: Table| table_keys(&rx, table);
        let logical = history_path(&path);
        assert_eq!(
            all(Table::AccountsTrieHistory),
            vec![history_key(&TrieId::Accounts, &logical, 4)]
        );
        let index = [&4u64.to_be_bytes()[..], &[ACCOUNTS_TAG], &logical].concat();
        assert_eq!(all(Table::TrieChangeSets), vec![index]);
        // The record of a node that was not there is empty.
        let record = rx
            .get(
                Table::AccountsTrieHistory,
                &history_key(&TrieId::Accounts, &logical, 4),
            )
            .unwrap()
            .unwrap();
        assert!(record.is_empty());
    }

    #[test]
    fn a_staged_node_knows_its_window_is_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::Database::open(dir.path()).unwrap();
        let trie = TrieId::Storage(B256::repeat_byte(3));
        let path = Nibbles::from_nibbles([4]);
        let key = [&[3u8; 32][..], &[4]].concat();
        let tx = db.writer().unwrap();
        tx.start_trie_history(1, 4).unwrap();
        let recorded_window = || {
            tx.staged_nodes
                .get(Table::StoragesTrie, &key)
                .unwrap()
                .recorded_window
        };
        // Blocks 4 and 5 share a window: one record, the node before block 4 (none).
        tx.put_trie_node(&trie, &path, Some(&branch(1)), Some(4))
            .unwrap();
        assert_eq!(recorded_window(), Some(4));
        tx.put_trie_node(&trie, &path, Some(&branch(2)), Some(5))
            .unwrap();
        assert_eq!(recorded_window(), Some(4));
        // Block 9's window records the node as the last one left it.
        tx.put_trie_node(&trie, &path, Some(&branch(3)), Some(9))
            .unwrap();
        assert_eq!(recorded_window(), Some(8));
        // Without history nothing is known recorded.
        tx.put_trie_node(&trie, &path, Some(&branch(4)), None)
            .unwrap();
        assert_eq!(recorded_window(), None);
        tx.commit().unwrap();

        let rx = db.reader().unwrap();
        let logical = history_path(&path);
        assert_eq!(
            table_keys(&rx, Table::StoragesTrieHistory),
            vec![
                history_key(&trie, &logical, 4),
                history_key(&trie, &logical, 8)
            ]
        );
        let record = |window: u64| {
            rx.get(
                Table::StoragesTrieHistory,
                &history_key(&trie, &logical, window),
            )
            .unwrap()
            .unwrap()
            .into_owned()
        };
        assert!(record(4).is_empty());
        assert_eq!(
            record(8),
            [&[FULL][..], &crate::models::encode_branch(&branch(2))].concat()
        );
    }

    #[test]
    fn history_paths_sort_in_trie_order_and_round_trip() {
        let paths: Vec<Nibbles> = [
            &[][..],
            &[0],
            &[0, 0],
            &[0, 0xf],
            &[1],
            &[1, 0],
            &[1, 0, 5],
            &[1, 1],
            &[0xf],
            &[0xf, 0xf],
        ]
        .iter()
        .map(Nibbles::from_nibbles_unchecked)
        .collect();
        let mut sorted = paths.clone();
        sorted.sort();
        assert_eq!(sorted, paths);
        let keys: Vec<Vec<u8>> = paths
            .iter()
            .map(|p| [history_path(p), u64::MAX.to_be_bytes().to_vec()].concat())
            .collect();
        // Every entry of a path (any block) sorts before the next path's first entry.
        for (a, b) in keys.iter().zip(&paths[1..]) {
            assert!(a < &[history_path(b), 0u64.to_be_bytes().to_vec()].concat());
        }
        for path in &paths {
            assert_eq!(path_of_history(&history_path(path)).unwrap(), *path);
        }
        assert!(path_of_history(&[3, 0x11, 0]).is_err());
        assert!(path_of_history(&[3]).is_err());
    }
}
