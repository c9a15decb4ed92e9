//! The state trie on disk, as reth keeps it: the hashed state (the trie's leaves, keyed by the
//! keccak hash of the address and of the slot, so a cursor walks them in trie order) and the
//! trie's branch nodes in `BranchNodeCompact` form, keyed by their nibble path. Leaves and
//! extension nodes are not stored: they follow from the hashed state.

use crate::{
    Error, Result, StorageTx, StoredAccount, Table,
    trie_history::{AsOf, Entries, history_path, logical_key, path_of_history},
};
use alloy_primitives::{B256, U256};
use alloy_trie::{BranchNodeCompact, Nibbles, TrieAccount, TrieMask};
use signet_libmdbx::{RwSync, TransactionKind, tx::Cursor};
use std::sync::atomic::Ordering;

/// Which trie: the accounts trie, or the storage trie of the account with this hashed address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TrieId {
    Accounts,
    Storage(B256),
}

impl TrieId {
    /// The bytes every key of this trie starts with, in `HashedStorages` and `StoragesTrie`.
    pub(crate) fn prefix(&self) -> &[u8] {
        match self {
            TrieId::Accounts => &[],
            TrieId::Storage(account) => account.as_slice(),
        }
    }

    fn nodes_table(&self) -> Table {
        match self {
            TrieId::Accounts => Table::AccountsTrie,
            TrieId::Storage(_) => Table::StoragesTrie,
        }
    }

    fn leaves_table(&self) -> Table {
        match self {
            TrieId::Accounts => Table::HashedAccounts,
            TrieId::Storage(_) => Table::HashedStorages,
        }
    }

    fn table(&self, entries: Entries) -> Table {
        match entries {
            Entries::Nodes => self.nodes_table(),
            Entries::Leaves => self.leaves_table(),
        }
    }
}

/// A trie leaf's value as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf {
    Account(TrieAccount),
    Slot(U256),
}

/// `HashedAccounts` value: the account as `PlainAccounts` holds it (`StoredAccount`), then
/// its storage root.
const TRIE_ACCOUNT_LEN: usize = StoredAccount::ENCODED_LEN + 32;

pub(crate) fn encode_trie_account(account: &TrieAccount) -> [u8; TRIE_ACCOUNT_LEN] {
    let fields = StoredAccount {
        nonce: account.nonce,
        balance: account.balance,
        code_hash: account.code_hash,
    };
    let mut out = [0u8; TRIE_ACCOUNT_LEN];
    out[..StoredAccount::ENCODED_LEN].copy_from_slice(&fields.encode());
    out[StoredAccount::ENCODED_LEN..].copy_from_slice(account.storage_root.as_slice());
    out
}

pub(crate) fn decode_trie_account(bytes: &[u8]) -> Result<TrieAccount> {
    if bytes.len() != TRIE_ACCOUNT_LEN {
        return Err(Error::Corrupt(format!(
            "hashed account has {} bytes, expected {TRIE_ACCOUNT_LEN}",
            bytes.len()
        )));
    }
    let fields = StoredAccount::decode(&bytes[..StoredAccount::ENCODED_LEN])?;
    Ok(TrieAccount {
        nonce: fields.nonce,
        balance: fields.balance,
        storage_root: B256::from_slice(&bytes[StoredAccount::ENCODED_LEN..]),
        code_hash: fields.code_hash,
    })
}

/// `AccountsTrie` / `StoragesTrie` value: state, tree and hash masks (u16 BE each), then the
/// hashes of the children in the hash mask, then the root hash for the node at the empty path.
pub(crate) fn encode_branch(node: &BranchNodeCompact) -> Vec<u8> {
    let mut out = Vec::with_capacity(6 + 32 * (node.hashes.len() + 1));
    for mask in [node.state_mask, node.tree_mask, node.hash_mask] {
        out.extend_from_slice(&mask.get().to_be_bytes());
    }
    for hash in node.hashes.iter() {
        out.extend_from_slice(hash.as_slice());
    }
    if let Some(root) = node.root_hash {
        out.extend_from_slice(root.as_slice());
    }
    out
}

pub(crate) fn decode_branch(bytes: &[u8]) -> Result<BranchNodeCompact> {
    let corrupt = || Error::Corrupt(format!("malformed trie node of {} bytes", bytes.len()));
    if bytes.len() < 6 || !(bytes.len() - 6).is_multiple_of(32) {
        return Err(corrupt());
    }
    let mask = |at: usize| TrieMask::new(u16::from_be_bytes([bytes[at], bytes[at + 1]]));
    let (state_mask, tree_mask, hash_mask) = (mask(0), mask(2), mask(4));
    let count = hash_mask.count_ones() as usize;
    let stored = (bytes.len() - 6) / 32;
    let root_hash = match stored.checked_sub(count) {
        Some(0) => None,
        Some(1) => Some(B256::from_slice(&bytes[bytes.len() - 32..])),
        _ => return Err(corrupt()),
    };
    if !tree_mask.is_subset_of(state_mask) || !hash_mask.is_subset_of(state_mask) {
        return Err(corrupt());
    }
    let hashes = bytes[6..6 + 32 * count]
        .chunks_exact(32)
        .map(B256::from_slice)
        .collect();
    Ok(BranchNodeCompact::new(
        state_mask, tree_mask, hash_mask, hashes, root_hash,
    ))
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
/// the trie after an older block.
pub struct TrieNodeCursor<'tx, K: TransactionKind> {
    cursor: Cursor<'tx, K>,
    trie: TrieId,
    scanned: &'tx std::sync::atomic::AtomicU64,
    as_of: Option<AsOf<'tx, K>>,
}

impl<K: TransactionKind> TrieNodeCursor<'_, K> {
    /// The first stored node whose path is `path` or after it, in this trie.
    pub fn seek(&mut self, path: &Nibbles) -> Result<Option<(Nibbles, BranchNodeCompact)>> {
        if let Some(as_of) = &mut self.as_of {
            let entry = as_of.seek(&self.trie, &mut self.cursor, &history_path(path))?;
            return self.decode_as_of(entry);
        }
        let key = node_key(&self.trie, path);
        let entry = self.cursor.set_range::<Vec<u8>, Vec<u8>>(&key)?;
        self.decode(entry)
    }

    /// The node after the last one returned.
    pub fn advance(&mut self) -> Result<Option<(Nibbles, BranchNodeCompact)>> {
        if let Some(as_of) = &mut self.as_of {
            let entry = as_of.advance(&self.trie, &mut self.cursor)?;
            return self.decode_as_of(entry);
        }
        let entry = self.cursor.next::<Vec<u8>, Vec<u8>>()?;
        self.decode(entry)
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

    fn decode(
        &self,
        entry: Option<(Vec<u8>, Vec<u8>)>,
    ) -> Result<Option<(Nibbles, BranchNodeCompact)>> {
        self.scanned.fetch_add(1, Ordering::Relaxed);
        let prefix = self.trie.prefix();
        let Some((key, value)) = entry.filter(|(key, _)| key.starts_with(prefix)) else {
            return Ok(None);
        };
        let nibbles = &key[prefix.len()..];
        if nibbles.len() >= 64 || nibbles.iter().any(|n| *n > 0xf) {
            return Err(Error::Corrupt(format!(
                "trie node key {} is not a nibble path",
                alloy_primitives::hex::encode(&key)
            )));
        }
        Ok(Some((
            Nibbles::from_nibbles_unchecked(nibbles),
            decode_branch(&value)?,
        )))
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
    /// A cursor over the stored branch nodes of `trie`.
    pub fn trie_nodes(&self, trie: TrieId) -> Result<TrieNodeCursor<'_, K>> {
        self.trie_nodes_after(trie, None)
    }

    /// A cursor over the branch nodes of `trie` as they were after `block` (`None`: the latest
    /// ones). The history must cover that block ([`StorageTx::trie_history_covers`]), and the
    /// block must end a node history window ([`StorageTx::trie_history_checkpoint`]).
    pub fn trie_nodes_after(
        &self,
        trie: TrieId,
        block: Option<u64>,
    ) -> Result<TrieNodeCursor<'_, K>> {
        Ok(TrieNodeCursor {
            cursor: self.tx.cursor(self.db(trie.nodes_table()))?,
            as_of: block
                .map(|block| AsOf::new(self, &trie, Entries::Nodes, block))
                .transpose()?,
            trie,
            scanned: self.scanned.as_ref(),
        })
    }

    /// A cursor over the leaves of `trie`.
    pub fn trie_leaves(&self, trie: TrieId) -> Result<LeafCursor<'_, K>> {
        self.trie_leaves_after(trie, None)
    }

    /// A cursor over the leaves of `trie` as they were after `block` (`None`: the latest
    /// ones). The history must cover that block ([`StorageTx::trie_history_covers`]).
    pub fn trie_leaves_after(&self, trie: TrieId, block: Option<u64>) -> Result<LeafCursor<'_, K>> {
        Ok(LeafCursor {
            cursor: self.tx.cursor(self.db(trie.leaves_table()))?,
            as_of: block
                .map(|block| AsOf::new(self, &trie, Entries::Leaves, block))
                .transpose()?,
            trie,
            scanned: self.scanned.as_ref(),
        })
    }

    /// An account as the latest state trie holds it (with its storage root), by hashed address.
    pub fn hashed_account(&self, hashed: &B256) -> Result<Option<TrieAccount>> {
        self.get(Table::HashedAccounts, hashed.as_slice())?
            .map(|value| decode_trie_account(&value))
            .transpose()
    }
}

/// Trie writes take `history`: the block whose history records what they change (`None`: not
/// a block's change, such as genesis, an unwind or a migration).
impl StorageTx<RwSync> {
    /// Sets (or with `None` deletes) an account's leaf in the latest state trie.
    pub fn put_hashed_account(
        &self,
        hashed: &B256,
        account: Option<&TrieAccount>,
        history: Option<u64>,
    ) -> Result<()> {
        let value = account.map(encode_trie_account);
        let trie = TrieId::Accounts;
        self.put_trie_entry(
            &trie,
            Entries::Leaves,
            hashed.as_slice(),
            value.as_ref().map(|v| v.as_slice()),
            history,
        )
    }

    /// Sets a slot's leaf in an account's storage trie; zero deletes it.
    pub fn put_hashed_slot(
        &self,
        account: &B256,
        slot: &B256,
        value: U256,
        history: Option<u64>,
    ) -> Result<()> {
        let key = hashed_slot_key(account, slot);
        let value = (!value.is_zero()).then(|| value.to_be_bytes::<32>());
        self.put_trie_entry(
            &TrieId::Storage(*account),
            Entries::Leaves,
            &key,
            value.as_ref().map(|v| v.as_slice()),
            history,
        )
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
        for entries in [Entries::Leaves, Entries::Nodes] {
            let history = history.filter(|_| entries == Entries::Leaves || record_nodes);
            let mut cursor = self.tx.cursor(self.db(trie.table(entries)))?;
            let mut entry = cursor.set_range::<Vec<u8>, Vec<u8>>(account.as_slice())?;
            while let Some((key, value)) =
                entry.filter(|(key, _)| key.starts_with(account.as_slice()))
            {
                if let Some(block) = history {
                    let logical = logical_key(entries, &key[trie.prefix().len()..]);
                    self.record_before(&trie, entries, &logical, block, Some(&value), None)?;
                }
                cursor.del()?;
                entry = cursor.get_current::<Vec<u8>, Vec<u8>>()?;
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
        let value = node.map(encode_branch);
        self.put_trie_entry(trie, Entries::Nodes, &key, value.as_deref(), history)
    }

    /// Sets (or with `None` deletes) the entry of `trie` under table key `key`, recording its
    /// value before `history`'s block when it changes.
    fn put_trie_entry(
        &self,
        trie: &TrieId,
        entries: Entries,
        key: &[u8],
        value: Option<&[u8]>,
        history: Option<u64>,
    ) -> Result<()> {
        let table = trie.table(entries);
        let Some(block) = history else {
            return match value {
                Some(value) => self.put(table, key, value),
                None => self.del(table, key),
            };
        };
        let before = self.replace(table, key, value)?;
        if before.as_deref() == value {
            return Ok(());
        }
        let logical = logical_key(entries, &key[trie.prefix().len()..]);
        self.record_before(trie, entries, &logical, block, before.as_deref(), value)
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
