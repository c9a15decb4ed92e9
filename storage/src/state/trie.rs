//! The state trie on disk, as reth keeps it: the hashed state (the trie's leaves, keyed by the
//! keccak hash of the address and of the slot, so a cursor walks them in trie order) and the
//! trie's branch nodes in `BranchNodeCompact` form, keyed by their nibble path. Leaves and
//! extension nodes are not stored: they follow from the hashed state. Unlike reth's, a stored
//! branch also names the hashes of its leaf children ([`complete_leaf_hashes`]).

use crate::models::{
    SlotValue, decode_branch, decode_trie_account, encode_branch, encode_trie_account,
};
use crate::{
    Error, Result, StorageTx,
    history::trie_history::{AsOf, history_path, logical_key, path_of_history},
    staged::StagedNodes,
    tables::{Entries, TrieId},
};
use alloy_primitives::{B256, U256};
use alloy_trie::{BranchNodeCompact, Nibbles, TrieAccount, TrieMask, nodes::LeafNodeRef};
use signet_libmdbx::{RwSync, TransactionKind, WriteFlags, tx::Cursor};
use std::sync::atomic::Ordering;

/// A trie leaf's value as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf {
    Account(TrieAccount),
    Slot(U256),
}

/// The hash of a leaf node that is the child at `child` (a path one nibble below its branch),
/// for the leaf with full key `key` and RLP value `value`; `None` when the node is shorter than
/// 32 bytes, so that its branch embeds it instead of naming its hash.
pub fn leaf_child_hash(key: &Nibbles, child: &Nibbles, value: &[u8]) -> Option<B256> {
    let rest = key.slice(child.len()..);
    let mut buf = Vec::with_capacity(value.len() + 40);
    LeafNodeRef::new(&rest, value).rlp(&mut buf).as_hash()
}

/// Completes branch nodes made by alloy-trie's `HashBuilder` to quarry's stored form: a stored
/// branch names the hash of every child that is a hashed leaf, not only of its branch children
/// (alloy-trie's form), so that a walk takes an unchanged leaf's hash from its parent instead of
/// reading and hashing the leaf again. `leaves`: the leaves the builder was given, sorted by key
/// (children it was given as hashes already have their bit).
pub fn complete_leaf_hashes(
    nodes: &mut alloy_primitives::map::HashMap<Nibbles, BranchNodeCompact>,
    leaves: &[(Nibbles, Vec<u8>)],
) {
    for (path, node) in nodes.iter_mut() {
        let missing = node.state_mask.get() & !node.tree_mask.get() & !node.hash_mask.get();
        if missing == 0 {
            continue;
        }
        let mut added = 0u16;
        let mut found = [None; 16];
        for (nibble, slot) in found.iter_mut().enumerate() {
            if missing & (1 << nibble) == 0 {
                continue;
            }
            let mut child = *path;
            child.push(nibble as u8);
            let at = leaves.partition_point(|(key, _)| *key < child);
            let under = |i: usize| leaves.get(i).filter(|(key, _)| key.starts_with(&child));
            // One leaf under the child is the child itself; more make an embedded branch.
            if let (Some((key, value)), None) = (under(at), under(at + 1))
                && let Some(hash) = leaf_child_hash(key, &child, value)
            {
                *slot = Some(hash);
                added |= 1 << nibble;
            }
        }
        if added == 0 {
            continue;
        }
        let hash_mask = node.hash_mask.get() | added;
        let mut stored = node.hashes.iter();
        let hashes = (0..16u8)
            .filter(|nibble| hash_mask & (1 << nibble) != 0)
            .filter_map(|nibble| match found[nibble as usize] {
                Some(hash) => Some(hash),
                None => stored.next().copied(),
            })
            .collect();
        *node = BranchNodeCompact::new(
            node.state_mask,
            node.tree_mask,
            TrieMask::new(hash_mask),
            hashes,
            node.root_hash,
        );
    }
}

/// A node key: the trie's prefix, then one byte per nibble (so that byte order is trie order,
/// a path before the paths below it).
fn node_key(trie: &TrieId, path: &Nibbles) -> Vec<u8> {
    let prefix = trie.prefix();
    let mut key = Vec::with_capacity(prefix.len() + path.len());
    key.extend_from_slice(prefix);
    key.extend(path.iter());
    key
}

/// The smallest leaf key (hashed address or slot) under a nibble path: the path's nibbles
/// packed, zero after.
pub fn first_key_under(path: &Nibbles) -> B256 {
    let mut key = B256::ZERO;
    let packed = path.pack();
    let len = packed.len().min(32);
    key[..len].copy_from_slice(&packed[..len]);
    key
}

/// A storage leaf's key in `HashedStorages` (and, without its block, in
/// `HashedStoragesHistory`): the hashed address, then the hashed slot.
pub(crate) fn hashed_slot_key(account: &B256, slot: &B256) -> [u8; 64] {
    let mut key = [0u8; 64];
    key[..32].copy_from_slice(account.as_slice());
    key[32..].copy_from_slice(slot.as_slice());
    key
}

/// The table key to seek for the first leaf of `trie` under `path`.
fn leaf_seek_key(trie: &TrieId, path: &Nibbles) -> Vec<u8> {
    [trie.prefix(), first_key_under(path).as_slice()].concat()
}

/// Reads a trie's stored branch nodes in path order: the latest trie's, or (`as_of`) those of
/// the trie after an older block. The latest trie's are the table's merged with the nodes the
/// transaction has staged (see staged.rs).
pub struct TrieNodeCursor<'tx, K: TransactionKind> {
    cursor: Cursor<'tx, K>,
    trie: TrieId,
    scanned: &'tx std::sync::atomic::AtomicU64,
    as_of: Option<AsOf<'tx, K>>,
    staged: &'tx StagedNodes,
    /// The table key of the node last returned.
    last: Option<Vec<u8>>,
    /// Where the table's side of the merge stands.
    stored_next: StoredNext,
}

/// The table's next entry for a merge with the staged nodes.
enum StoredNext {
    /// Not known: the cursor must be placed after the last key returned.
    Unknown,
    /// The cursor stands on the entry last returned: the next is after it.
    AfterCurrent,
    /// The first entry after the last key returned that staging does not replace, where the
    /// cursor stands (`None`: none).
    Found(Option<(Vec<u8>, Vec<u8>)>),
}

impl<K: TransactionKind> TrieNodeCursor<'_, K> {
    /// The first stored node whose path is `path` or after it, in this trie.
    pub fn seek(&mut self, path: &Nibbles) -> Result<Option<(Nibbles, BranchNodeCompact)>> {
        if let Some(as_of) = &mut self.as_of {
            let entry = as_of.seek(&self.trie, &mut self.cursor, &history_path(path))?;
            return self.decode_as_of(entry);
        }
        let key = node_key(&self.trie, path);
        let table = self.trie.nodes_table();
        // A node staged at `path` itself is the first: nothing lies between.
        if let Some(Some(node)) = self.staged.get_node(table, &key) {
            self.scanned.fetch_add(1, Ordering::Relaxed);
            self.last = Some(key);
            self.stored_next = StoredNext::Unknown;
            return Ok(Some((*path, node)));
        }
        let entry = self.cursor.set_range::<Vec<u8>, Vec<u8>>(&key)?;
        self.stored_next = StoredNext::Found(self.not_staged(entry)?);
        self.take_next(&key, true)
    }

    /// The node after the last one returned.
    pub fn advance(&mut self) -> Result<Option<(Nibbles, BranchNodeCompact)>> {
        if let Some(as_of) = &mut self.as_of {
            let entry = as_of.advance(&self.trie, &mut self.cursor)?;
            return self.decode_as_of(entry);
        }
        let Some(last) = self.last.take() else {
            return Ok(None);
        };
        match self.stored_next {
            StoredNext::Found(_) => {}
            StoredNext::AfterCurrent => {
                let entry = self.cursor.next::<Vec<u8>, Vec<u8>>()?;
                self.stored_next = StoredNext::Found(self.not_staged(entry)?);
            }
            StoredNext::Unknown => {
                let mut entry = self.cursor.set_range::<Vec<u8>, Vec<u8>>(&last)?;
                if entry.as_ref().is_some_and(|(key, _)| *key == last) {
                    entry = self.cursor.next::<Vec<u8>, Vec<u8>>()?;
                }
                self.stored_next = StoredNext::Found(self.not_staged(entry)?);
            }
        }
        self.take_next(&last, false)
    }

    /// `entry`, or the first table entry after it, that staging does not replace.
    fn not_staged(
        &mut self,
        mut entry: Option<(Vec<u8>, Vec<u8>)>,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let table = self.trie.nodes_table();
        while let Some((key, _)) = &entry {
            if !self.staged.contains(table, key) {
                break;
            }
            entry = self.cursor.next::<Vec<u8>, Vec<u8>>()?;
        }
        Ok(entry)
    }

    /// Returns the first of the table's next entry and the first staged node from `from` (at
    /// it too when `inclusive`).
    fn take_next(
        &mut self,
        from: &[u8],
        inclusive: bool,
    ) -> Result<Option<(Nibbles, BranchNodeCompact)>> {
        let staged = self
            .staged
            .first_after(self.trie.nodes_table(), from, inclusive);
        let StoredNext::Found(stored) = &mut self.stored_next else {
            return Err(Error::Corrupt("trie node cursor lost its place".into()));
        };
        let entry = match (staged, stored.as_ref()) {
            (Some(staged), Some((key, _))) if staged.0 < *key => Some(staged),
            (Some(staged), None) => Some(staged),
            _ => {
                let entry = stored.take();
                self.stored_next = StoredNext::AfterCurrent;
                // The next trie's first node, where this one ends, is none of this trie's: it
                // is not decoded. (Staged nodes are only ever this trie's.)
                entry
                    .filter(|(key, _)| key.starts_with(self.trie.prefix()))
                    .map(|(key, value)| decode_branch(&value).map(|node| (key, node)))
                    .transpose()?
            }
        };
        self.last = entry.as_ref().map(|(key, _)| key.clone());
        self.node_at(entry)
    }

    /// A node read through the history: its history path and its value.
    fn decode_as_of(
        &self,
        entry: Option<(Vec<u8>, Vec<u8>)>,
    ) -> Result<Option<(Nibbles, BranchNodeCompact)>> {
        self.scanned.fetch_add(1, Ordering::Relaxed);
        match entry {
            Some((logical, value)) => {
                Ok(Some((path_of_history(&logical)?, decode_branch(&value)?)))
            }
            None => Ok(None),
        }
    }

    /// The path in this trie of `entry`, a node of this trie (or none).
    fn node_at(
        &self,
        entry: Option<(Vec<u8>, BranchNodeCompact)>,
    ) -> Result<Option<(Nibbles, BranchNodeCompact)>> {
        self.scanned.fetch_add(1, Ordering::Relaxed);
        let prefix = self.trie.prefix();
        let Some((key, node)) = entry else {
            return Ok(None);
        };
        let nibbles = &key[prefix.len()..];
        if nibbles.len() >= 64 || nibbles.iter().any(|n| *n > 0xf) {
            return Err(Error::Corrupt(format!(
                "trie node key {} is not a nibble path",
                alloy_primitives::hex::encode(&key)
            )));
        }
        Ok(Some((Nibbles::from_nibbles_unchecked(nibbles), node)))
    }
}

/// Reads a trie's leaves (the hashed state) in key order: the latest state's, or (`as_of`)
/// the state's after an older block.
pub struct LeafCursor<'tx, K: TransactionKind> {
    cursor: Cursor<'tx, K>,
    trie: TrieId,
    scanned: &'tx std::sync::atomic::AtomicU64,
    as_of: Option<AsOf<'tx, K>>,
}

impl<K: TransactionKind> LeafCursor<'_, K> {
    /// The first leaf at or after the smallest key under `path`.
    pub fn seek(&mut self, path: &Nibbles) -> Result<Option<(B256, Leaf)>> {
        if let Some(as_of) = &mut self.as_of {
            let from = first_key_under(path);
            let entry = as_of.seek(&self.trie, &mut self.cursor, from.as_slice())?;
            return self.decode_as_of(entry);
        }
        let key = leaf_seek_key(&self.trie, path);
        let entry = self.cursor.set_range::<Vec<u8>, Vec<u8>>(&key)?;
        self.decode(entry)
    }

    /// The leaf after the last one returned.
    pub fn advance(&mut self) -> Result<Option<(B256, Leaf)>> {
        if let Some(as_of) = &mut self.as_of {
            let entry = as_of.advance(&self.trie, &mut self.cursor)?;
            return self.decode_as_of(entry);
        }
        let entry = self.cursor.next::<Vec<u8>, Vec<u8>>()?;
        self.decode(entry)
    }

    /// The leaf with exactly this key, if it exists.
    pub fn get(&mut self, key: &B256) -> Result<Option<Leaf>> {
        Ok(self
            .seek(&Nibbles::unpack(key))?
            .filter(|(found, _)| found == key)
            .map(|(_, leaf)| leaf))
    }

    /// A leaf read through the history: its hashed key and its value.
    fn decode_as_of(&self, entry: Option<(Vec<u8>, Vec<u8>)>) -> Result<Option<(B256, Leaf)>> {
        self.scanned.fetch_add(1, Ordering::Relaxed);
        match entry {
            Some((key, value)) => Ok(Some((
                crate::b256("hashed state key", &key)?,
                self.leaf(&value)?,
            ))),
            None => Ok(None),
        }
    }

    fn decode(&self, entry: Option<(Vec<u8>, Vec<u8>)>) -> Result<Option<(B256, Leaf)>> {
        self.scanned.fetch_add(1, Ordering::Relaxed);
        let prefix = self.trie.prefix();
        let Some((key, value)) = entry.filter(|(key, _)| key.starts_with(prefix)) else {
            return Ok(None);
        };
        let hashed = crate::b256("hashed state key", &key[prefix.len()..])?;
        Ok(Some((hashed, self.leaf(&value)?)))
    }

    fn leaf(&self, value: &[u8]) -> Result<Leaf> {
        Ok(match self.trie {
            TrieId::Accounts => Leaf::Account(decode_trie_account(value)?),
            TrieId::Storage(_) => Leaf::Slot(U256::from_be_slice(value)),
        })
    }
}

impl<K: TransactionKind> StorageTx<K> {
    /// The storage root in the stored leaf of the account hashed to `hashed`: `None` when
    /// there is no leaf or its storage is the empty trie.
    pub fn stored_storage_root(&self, hashed: &B256) -> Result<Option<B256>> {
        let Some(leaf) = self.get(crate::Table::HashedAccounts, hashed.as_slice())? else {
            return Ok(None);
        };
        let root = decode_trie_account(&leaf)?.storage_root;
        Ok((root != alloy_trie::EMPTY_ROOT_HASH).then_some(root))
    }

    /// A cursor over the stored branch nodes of `trie`.
    pub fn trie_nodes(&self, trie: TrieId) -> Result<TrieNodeCursor<'_, K>> {
        self.trie_nodes_after(trie, None)
    }

    /// A cursor over the branch nodes of `trie` as they were after `block` (`None`: the latest
    /// ones). The history must cover that block ([`StorageTx::trie_history_covers`]), and the
    /// block must end a node history window ([`StorageTx::trie_history_checkpoint`]). The
    /// history reads the node table as committed: a write transaction that staged nodes must
    /// write them first ([`StorageTx::write_staged`]).
    pub fn trie_nodes_after(
        &self,
        trie: TrieId,
        block: Option<u64>,
    ) -> Result<TrieNodeCursor<'_, K>> {
        if let Some(block) = block {
            self.check_state_kept(block)?;
        }
        Ok(TrieNodeCursor {
            cursor: self.tx.cursor(self.db(trie.nodes_table()))?,
            as_of: block
                .map(|block| AsOf::new(self, &trie, Entries::Nodes, block))
                .transpose()?,
            trie,
            scanned: self.scanned.as_ref(),
            staged: &self.staged_nodes,
            last: None,
            stored_next: StoredNext::Unknown,
        })
    }

    /// A cursor over the leaves of `trie`.
    pub fn trie_leaves(&self, trie: TrieId) -> Result<LeafCursor<'_, K>> {
        self.trie_leaves_after(trie, None)
    }

    /// A cursor over the leaves of `trie` as they were after `block` (`None`: the latest
    /// ones). The history must cover that block ([`StorageTx::trie_history_covers`]).
    pub fn trie_leaves_after(&self, trie: TrieId, block: Option<u64>) -> Result<LeafCursor<'_, K>> {
        if let Some(block) = block {
            self.check_state_kept(block)?;
        }
        Ok(LeafCursor {
            cursor: self.tx.cursor(self.db(trie.leaves_table()))?,
            as_of: block
                .map(|block| AsOf::new(self, &trie, Entries::Leaves, block))
                .transpose()?,
            trie,
            scanned: self.scanned.as_ref(),
        })
    }
}

/// Trie writes take `history`: the block whose history records what they change (`None`: not
/// a block's change, such as genesis, an unwind or a migration).
impl StorageTx<RwSync> {
    /// Sets (or with `None` deletes) an account's leaf in the latest state trie.
    pub fn put_hashed_account(&self, hashed: &B256, account: Option<&TrieAccount>) -> Result<()> {
        self.leaf_writer().put_account(hashed, account)
    }

    /// Sets a slot's leaf in an account's storage trie; zero deletes it.
    pub fn put_hashed_slot(&self, account: &B256, slot: &B256, value: U256) -> Result<()> {
        self.leaf_writer().put_slot(account, slot, value)
    }

    /// A writer of the state trie's leaves that keeps its cursors from one leaf to the next.
    pub fn leaf_writer(&self) -> LeafWriter<'_> {
        LeafWriter {
            tx: self,
            accounts: None,
            storages: None,
        }
    }

    /// Removes an account's whole storage trie: its leaves and its nodes, each recorded as it
    /// was before `history`'s block (the nodes only when `record_nodes`).
    pub fn wipe_hashed_storage(
        &self,
        account: &B256,
        history: Option<u64>,
        record_nodes: bool,
    ) -> Result<()> {
        let trie = TrieId::Storage(*account);
        self.write_staged_nodes(Some(account))?;
        for entries in [Entries::Leaves, Entries::Nodes] {
            // The leaves' history is the storage changesets (with the slots a wipe cleared).
            let history = history.filter(|_| entries == Entries::Nodes && record_nodes);
            let mut cursor = self.tx.cursor(self.db(trie.table(entries)))?;
            let mut entry = cursor.set_range::<Vec<u8>, Vec<u8>>(account.as_slice())?;
            while let Some((key, value)) =
                entry.filter(|(key, _)| key.starts_with(account.as_slice()))
            {
                if let Some(block) = history {
                    let logical = logical_key(entries, &key[trie.prefix().len()..]);
                    self.record_node_before(&trie, &logical, block, Some(&value), None)?;
                }
                entry = crate::delete_and_next::<Vec<u8>, Vec<u8>>(&mut cursor)?;
            }
        }
        Ok(())
    }

    /// Sets (or with `None` deletes) the branch node at `path` of `trie`.
    pub fn put_trie_node(
        &self,
        trie: &TrieId,
        path: &Nibbles,
        node: Option<&BranchNodeCompact>,
        history: Option<u64>,
    ) -> Result<()> {
        let key = node_key(trie, path);
        let value = node.cloned();
        let table = trie.nodes_table();
        let Some(block) = history else {
            return self.stage_node(table, &key, value, None);
        };
        let window = block - block % self.node_window()?;
        // Nodes near the root change in every block: all but a window's first change find it
        // recorded on the staged node, which they then need not copy.
        let staged_window = self.staged_nodes.recorded_window(table, &key);
        if staged_window == Some(Some(window)) {
            return self.stage_node(table, &key, value, Some(window));
        }
        let logical = logical_key(Entries::Nodes, &key[trie.prefix().len()..]);
        let mut recorded = self.node_recorded(trie, &logical, block)?;
        if !recorded {
            let staged = staged_window.and_then(|_| self.staged_nodes.get(table, &key));
            let before = match staged {
                Some(staged) => staged.value.as_ref().map(encode_branch),
                None => self.get(table, &key)?.map(|value| value.into_owned()),
            };
            let after = node.map(encode_branch);
            if before != after {
                let (before, after) = (before.as_deref(), after.as_deref());
                self.record_node_before(trie, &logical, block, before, after)?;
                recorded = true;
            }
        }
        self.stage_node(table, &key, value, recorded.then_some(window))
    }
}

/// Writes the state trie's leaves through one cursor per table. Leaves written in key order (a
/// block's, by [`StorageTx::leaf_writer`]'s caller) often share a page with the one before, and
/// MDBX looks for a key on the page its cursor stands on before it searches from the root. The
/// state history is the changesets (an account's entry carries its storage root before the
/// block: `apply_state_changes` reads it from this table before the block's trie write).
pub struct LeafWriter<'tx> {
    tx: &'tx StorageTx<RwSync>,
    accounts: Option<Cursor<'tx, RwSync>>,
    storages: Option<Cursor<'tx, RwSync>>,
}

impl LeafWriter<'_> {
    /// Sets (or with `None` deletes) an account's leaf.
    pub fn put_account(&mut self, hashed: &B256, account: Option<&TrieAccount>) -> Result<()> {
        let value = account.map(encode_trie_account);
        self.put(&TrieId::Accounts, hashed.as_slice(), value.as_deref())
    }

    /// Sets a slot's leaf in an account's storage trie; zero deletes it.
    pub fn put_slot(&mut self, account: &B256, slot: &B256, value: U256) -> Result<()> {
        let key = hashed_slot_key(account, slot);
        let value = (!value.is_zero()).then(|| SlotValue::new(value));
        self.put(
            &TrieId::Storage(*account),
            &key,
            value.as_ref().map(SlotValue::as_slice),
        )
    }

    fn put(&mut self, trie: &TrieId, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let tx = self.tx;
        let slot = match trie {
            TrieId::Accounts => &mut self.accounts,
            TrieId::Storage(_) => &mut self.storages,
        };
        let cursor = match slot {
            Some(cursor) => cursor,
            None => slot.insert(tx.tx.cursor(tx.db(trie.leaves_table()))?),
        };
        match value {
            Some(value) => Ok(cursor.put(key, value, WriteFlags::empty())?),
            None => crate::delete_at(cursor, key),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_nodes_round_trip() {
        let hashes = vec![B256::repeat_byte(1), B256::repeat_byte(2)];
        for root in [None, Some(B256::repeat_byte(9))] {
            let node = BranchNodeCompact::new(
                TrieMask::new(0b1011),
                TrieMask::new(0b0010),
                TrieMask::new(0b1010),
                hashes.clone(),
                root,
            );
            assert_eq!(decode_branch(&encode_branch(&node)).ok(), Some(node));
        }
        assert!(decode_branch(&[0; 7]).is_err());
        // A hash mask naming two children with one hash stored.
        assert!(decode_branch(&[0, 3, 0, 0, 0, 3, 1, 2, 3]).is_err());
    }

    /// The node cursor reads the table merged with the transaction's staged nodes: a staged
    /// node replaces the stored one, a staged deletion hides it, new ones appear in path order,
    /// and other tries' nodes do not; after the commit the table holds the same.
    #[test]
    fn node_cursor_reads_staged_nodes_over_stored_ones() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::Database::open(dir.path()).unwrap();
        let node = |seed: u8| {
            BranchNodeCompact::new(
                TrieMask::new(0b11),
                TrieMask::new(0),
                TrieMask::new(0b01),
                vec![B256::repeat_byte(seed)],
                None,
            )
        };
        let path = |nibbles: &[u8]| Nibbles::from_nibbles_unchecked(nibbles);
        let trie = TrieId::Storage(B256::repeat_byte(5));
        let other = TrieId::Storage(B256::repeat_byte(6));
        let tx = db.writer().unwrap();
        for (nibbles, seed) in [(&[][..], 1), (&[1], 2), (&[1, 2], 3), (&[4], 4), (&[9], 5)] {
            tx.put_trie_node(&trie, &path(nibbles), Some(&node(seed)), None)
                .unwrap();
        }
        tx.put_trie_node(&other, &path(&[0]), Some(&node(99)), None)
            .unwrap();
        tx.commit().unwrap();

        let tx = db.writer().unwrap();
        tx.put_trie_node(&trie, &path(&[1]), Some(&node(20)), None)
            .unwrap();
        tx.put_trie_node(&trie, &path(&[1, 2]), None, None).unwrap();
        tx.put_trie_node(&trie, &path(&[3]), Some(&node(30)), None)
            .unwrap();
        tx.put_trie_node(&trie, &path(&[9]), None, None).unwrap();
        tx.put_trie_node(&trie, &path(&[0xa]), Some(&node(40)), None)
            .unwrap();
        let expected = vec![
            (path(&[]), node(1)),
            (path(&[1]), node(20)),
            (path(&[3]), node(30)),
            (path(&[4]), node(4)),
            (path(&[0xa]), node(40)),
        ];
        fn all<K: TransactionKind>(
            tx: &StorageTx<K>,
            trie: TrieId,
            from: &Nibbles,
        ) -> Vec<(Nibbles, BranchNodeCompact)> {
            let mut cursor = tx.trie_nodes(trie).unwrap();
            let mut found = Vec::new();
            let mut entry = cursor.seek(from).unwrap();
            while let Some(node) = entry {
                found.push(node);
                entry = cursor.advance().unwrap();
            }
            found
        }
        assert_eq!(all(&tx, trie, &Nibbles::default()), expected);
        // Seeks land on staged and stored nodes, and on the next after a staged deletion.
        for (from, skip) in [(&[1][..], 1), (&[1, 0], 2), (&[2], 2), (&[4], 3), (&[9], 4)] {
            assert_eq!(
                all(&tx, trie, &path(from)),
                expected[skip..],
                "from {from:?}"
            );
        }
        tx.commit().unwrap();
        let rx = db.reader().unwrap();
        assert_eq!(all(&rx, trie, &Nibbles::default()), expected);
        let mut others = rx.trie_nodes(other).unwrap();
        assert_eq!(
            others.seek(&Nibbles::default()).unwrap(),
            Some((path(&[0]), node(99)))
        );
    }

    #[test]
    fn leaf_seek_keys_pack_nibbles() {
        let path = Nibbles::from_nibbles_unchecked([0xa, 0xb, 0xc]);
        let key = leaf_seek_key(&TrieId::Accounts, &path);
        assert_eq!(&key[..2], &[0xab, 0xc0]);
        assert!(key[2..].iter().all(|b| *b == 0));
        let account = B256::repeat_byte(7);
        let key = leaf_seek_key(&TrieId::Storage(account), &Nibbles::default());
        assert_eq!(&key[..32], account.as_slice());
        assert_eq!(key.len(), 64);
    }
}
