//! How far back the trie node history stays fine-grained (the `proof_history` setting), and the
//! thinning of what lies beyond it into coarse windows.
//!
//! The node history records each branch node once per window of `trie_history_window` blocks
//! (the fine windows, 32 blocks), so a proof at any block undoes or redoes at most half a
//! window's changesets. Older than `proof_history` blocks behind the head, one record per node
//! and coarse window (`trie_history_coarse_window`, 1,024 blocks) is enough: a proof there
//! starts from a coarse window's end and undoes or redoes at most half a coarse window. As the
//! head moves, each whole coarse window that falls more than `proof_history` blocks behind is
//! thinned in the importer's own commit: of a node's records in that window only the first
//! (the node as it was before the window) is kept, as a diff from the node after the window,
//! and `trie_history_fine_from` moves past the window in the same commit. Readers of another process see the history before or after, never
//! between, and a block before `trie_history_fine_from` is read at coarse window ends only.

use crate::{
    Error, MetaKey, Result, StorageTx, Table, history::trie_history::tagged_history_table,
};
use signet_libmdbx::{RwSync, TransactionKind};

/// The `proof_history` of a new datadir: proofs 1,000 blocks back read the fine history.
pub const DEFAULT_PROOF_HISTORY: u64 = 1024;
/// The coarse window: a proof older than `proof_history` undoes or redoes at most 512 blocks'
/// changesets over the history at a coarse window's end.
pub const COARSE_NODE_WINDOW: u64 = 1024;
/// `TrieChangeSets` entries one commit thins at most (whole coarse windows: one more window
/// starts while fewer were read), so a datadir with a backlog is thinned over several commits.
pub const PRUNE_BUDGET: u64 = 4_000_000;

impl<K: TransactionKind> StorageTx<K> {
    /// How many blocks behind the head the node history keeps its fine windows (`None`: all).
    pub fn proof_history(&self) -> Result<Option<u64>> {
        self.meta_u64(MetaKey::ProofHistory)
    }

    /// The coarse window of the thinned node history.
    pub fn coarse_node_window(&self) -> Result<u64> {
        Ok(self
            .meta_u64(MetaKey::TrieHistoryCoarseWindow)?
            .unwrap_or(COARSE_NODE_WINDOW))
    }

    /// The first block from which the node history keeps every fine window (`None`: nothing
    /// was thinned).
    pub fn trie_history_fine_from(&self) -> Result<Option<u64>> {
        self.fine_from
            .get(|| self.meta_u64(MetaKey::TrieHistoryFineFrom))
    }

    /// The node history window that the trie after `block` is read at: the fine window, or the
    /// coarse one when the history after `block` is thinned (`block + 1` before
    /// `trie_history_fine_from`).
    pub(crate) fn read_window(&self, block: u64) -> Result<u64> {
        let fine = self.node_window()?;
        match self.trie_history_fine_from()? {
            Some(fine_from) if block.saturating_add(1) < fine_from => self.coarse_node_window(),
            _ => Ok(fine),
        }
    }
}

impl StorageTx<RwSync> {
    /// Keeps the node history's fine windows for `blocks` behind the head, thinning older ones
    /// to one record per node and coarse window from the next commits on (`None`: keeps all
    /// from now on; what was thinned stays thinned).
    pub fn set_proof_history(&self, blocks: Option<u64>) -> Result<()> {
        let Some(blocks) = blocks else {
            return self.del_meta(MetaKey::ProofHistory);
        };
        // One-block windows hold diffs from the next record, which thinning would cut off.
        if self.trie_history_from()?.is_some() && self.node_window()? < 2 {
            return Err(Error::Corrupt(
                "this datadir's node history is recorded per block, as diffs: it cannot be \
                 thinned (proof_history needs a datadir ingested by a newer quarry)"
                    .into(),
            ));
        }
        if self.meta_u64(MetaKey::TrieHistoryCoarseWindow)?.is_none() {
            self.set_coarse_node_window(COARSE_NODE_WINDOW)?;
        }
        self.put_meta(MetaKey::ProofHistory, &blocks.to_be_bytes())
    }

    /// Sets the coarse window: a multiple of the fine one, so a coarse window's end ends a fine
    /// window too. Only before anything was thinned (its windows would no longer be whole).
    pub fn set_coarse_node_window(&self, blocks: u64) -> Result<()> {
        let fine = self.node_window()?;
        if blocks < fine || !blocks.is_multiple_of(fine) || self.trie_history_fine_from()?.is_some()
        {
            return Err(Error::Corrupt(format!(
                "coarse node history window {blocks}: must be a multiple of the fine window \
                 ({fine}), set before any was thinned"
            )));
        }
        self.put_meta(MetaKey::TrieHistoryCoarseWindow, &blocks.to_be_bytes())
    }

    /// Thins every whole coarse window that lies more than `proof_history` blocks behind the
    /// head and is not thinned yet, oldest first, reading at most about `budget`
    /// `TrieChangeSets` entries. Returns `true` when none is left to thin.
    pub fn prune_node_history(&self, budget: u64) -> Result<bool> {
        let (Some(keep), Some(from), Some((head, _))) = (
            self.proof_history()?,
            self.trie_history_from()?,
            self.head()?,
        ) else {
            return Ok(true);
        };
        if self.node_window()? < 2 {
            return Ok(true);
        }
        let target = (head + 1).saturating_sub(keep);
        self.thin_windows_before(from, target, budget)
    }

    /// The end of the coarse window whose blocks from `first` on an import may write as one
    /// change ([`Self::write_whole_coarse_window`]), given that its input goes on to block
    /// `last`; `None` if they may not. They may when `first` starts the window (or the node
    /// history), and the head will pass the window by `proof_history` blocks, so that it would
    /// be thinned to what that write records: the windows before it, which will be too, are
    /// thinned first (however near the head), so the thinned history stays one range.
    pub fn begin_whole_coarse_window(&self, first: u64, last: u64) -> Result<Option<u64>> {
        let (Some(from), Some(keep)) = (self.trie_history_from()?, self.proof_history()?) else {
            return Ok(None);
        };
        let coarse = self.coarse_node_window()?;
        let start = first - first % coarse;
        let end = start + coarse;
        if self.node_window()? < 2
            || (first != start && first != from)
            || (end - 1).saturating_add(keep) > last
        {
            return Ok(None);
        }
        self.thin_windows_before(from, start, u64::MAX)?;
        Ok((self.fine_start(from)? == first).then_some(end))
    }

    /// Ends a coarse window from [`Self::begin_whole_coarse_window`] whose blocks `first..end`
    /// recorded their trie changes as `first`'s (each node once, as it was before the window):
    /// writes what `write` writes (the window's last changes), then rewrites each record as a
    /// diff from the node now, which is what thinning the window would have kept, and moves
    /// `trie_history_fine_from` to `end`: readers take the trie after its blocks at its ends.
    pub fn write_whole_coarse_window(
        &self,
        first: u64,
        end: u64,
        write: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let from = self.trie_history_from()?.unwrap_or(first);
        let coarse = self.coarse_node_window()?;
        if self.fine_start(from)? != first || !end.is_multiple_of(coarse) || end <= first {
            return Err(Error::Corrupt(format!(
                "blocks {first}..{end} are not a coarse window that can be written whole"
            )));
        }
        write()?;
        // The records and nodes must be in their tables to be read back.
        self.write_staged()?;
        let window_start = first - first % self.node_window()?;
        let prefix = first.to_be_bytes();
        let mut records = Vec::new();
        let mut cursor = self.tx.cursor(self.db(Table::TrieChangeSets))?;
        let mut entry = cursor.set_range::<Vec<u8>, ()>(&prefix)?;
        while let Some((key, ())) = entry.filter(|(key, _)| key.starts_with(&prefix)) {
            let tag = *key
                .get(8)
                .ok_or_else(|| Error::Corrupt("malformed trie changeset key".into()))?;
            records.push((tag, [&key[9..], &window_start.to_be_bytes()].concat()));
            entry = cursor.next::<Vec<u8>, ()>()?;
        }
        drop(cursor);
        records.sort_unstable();
        for (tag, key) in records {
            self.diff_kept_record(tagged_history_table(tag, &key)?, tag, &key)?;
        }
        self.put_meta(MetaKey::TrieHistoryFineFrom, &end.to_be_bytes())?;
        self.fine_from.set(Some(end));
        Ok(())
    }

    /// The first block whose fine windows are kept: where thinning goes on.
    fn fine_start(&self, from: u64) -> Result<u64> {
        Ok(self.trie_history_fine_from()?.unwrap_or(from).max(from))
    }

    /// [`Self::prune_node_history`] up to `target`, rounded down to a coarse window's start.
    fn thin_windows_before(&self, from: u64, target: u64, budget: u64) -> Result<bool> {
        let coarse = self.coarse_node_window()?;
        let target = target - target % coarse;
        let mut start = self.fine_start(from)?;
        let mut read = 0;
        while start < target {
            if read >= budget {
                return Ok(false);
            }
            let end = start - start % coarse + coarse;
            read += self.thin_node_window(start, end)?;
            self.put_meta(MetaKey::TrieHistoryFineFrom, &end.to_be_bytes())?;
            self.fine_from.set(Some(end));
            start = end;
        }
        Ok(true)
    }

    /// Keeps, of the node records that blocks `start..end` wrote, each node's first (its value
    /// before the coarse window) and deletes the others with their `TrieChangeSets` entries.
    /// Returns how many entries it read.
    fn thin_node_window(&self, start: u64, end: u64) -> Result<u64> {
        // Deletions of one commit must not meet records still staged.
        self.write_staged()?;
        self.recorded_nodes.forget();
        let window = self.node_window()?;
        // Each node's kept record: its tag and history key.
        let mut seen = alloy_primitives::map::HashMap::<Vec<u8>, (u8, Vec<u8>)>::default();
        let mut doomed =
            [Table::AccountsTrieHistory, Table::StoragesTrieHistory].map(|t| (t, Vec::new()));
        let mut read = 0;
        let mut cursor = self.tx.cursor(self.db(Table::TrieChangeSets))?;
        let mut entry = cursor.set_range::<Vec<u8>, ()>(&start.to_be_bytes())?;
        while let Some((key, ())) = entry {
            let (Some(block), Some(&tag)) = (key.get(..8), key.get(8)) else {
                return Err(Error::Corrupt("malformed trie changeset key".into()));
            };
            let block = crate::models::be_u64(block)?;
            if block >= end {
                break;
            }
            read += 1;
            let window_start = block - block % window;
            let history_key = [&key[9..], &window_start.to_be_bytes()].concat();
            // Tag and node: the first entry of a node in the window is its earliest record.
            if let std::collections::hash_map::Entry::Vacant(first) = seen.entry(key[8..].to_vec())
            {
                first.insert((tag, history_key));
                entry = cursor.next::<Vec<u8>, ()>()?;
                continue;
            }
            let table = tagged_history_table(tag, &key)?;
            if let Some((_, keys)) = doomed.iter_mut().find(|(t, _)| *t == table) {
                keys.push(history_key);
            }
            entry = crate::delete_and_next::<Vec<u8>, ()>(&mut cursor)?;
        }
        drop(cursor);
        // Sorted, through one cursor: consecutive deletions often share a page (one node's
        // records sit side by side), where MDBX finds the key without a search from the root.
        for (table, mut keys) in doomed {
            keys.sort_unstable();
            let mut cursor = self.tx.cursor(self.db(table))?;
            for key in keys {
                crate::delete_at(&mut cursor, &key)?;
            }
        }
        let mut kept: Vec<(u8, Vec<u8>)> = seen.into_values().collect();
        kept.sort_unstable();
        for (tag, key) in kept {
            self.diff_kept_record(tagged_history_table(tag, &key)?, tag, &key)?;
        }
        Ok(read)
    }

    /// After an unwind to `ancestor`: a coarse window the unwind reached into keeps its
    /// records (its first ones, from blocks it kept, and the fine ones of the blocks imported
    /// after it), read at its end; the windows after it, emptied by the unwind, are fine again.
    pub(crate) fn proof_history_unwound(&self, ancestor: u64) -> Result<()> {
        let Some(fine_from) = self.trie_history_fine_from()? else {
            return Ok(());
        };
        let coarse = self.coarse_node_window()?;
        let first = ancestor + 1;
        let window_end = first.div_ceil(coarse) * coarse;
        if window_end < fine_from {
            self.put_meta(MetaKey::TrieHistoryFineFrom, &window_end.to_be_bytes())?;
            self.fine_from.set(Some(window_end));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::{Database, Table, TrieId};
    use alloy_primitives::B256;
    use alloy_trie::{BranchNodeCompact, Nibbles, TrieMask};

    /// A branch of sixteen hashed children, of which only the first changes with `seed`.
    fn branch(seed: u64) -> BranchNodeCompact {
        let mut hashes = vec![B256::repeat_byte(0xaa); 16];
        hashes[0] = B256::from(alloy_primitives::U256::from(seed));
        BranchNodeCompact::new(
            TrieMask::new(0xffff),
            TrieMask::new(0),
            TrieMask::new(0xffff),
            hashes,
            None,
        )
    }

    /// The window starts of the records the accounts trie's history holds for `path`.
    fn windows(db: &Database, path: &Nibbles) -> Vec<u64> {
        let tx = db.reader().unwrap();
        let prefix = crate::history::trie_history::history_path(path);
        let mut cursor = tx.tx.cursor(tx.db(Table::AccountsTrieHistory)).unwrap();
        let mut entry = cursor.set_range::<Vec<u8>, ()>(&prefix).unwrap();
        let mut out = Vec::new();
        while let Some((key, ())) = entry {
            if !key.starts_with(&prefix) || key.len() != prefix.len() + 8 {
                break;
            }
            out.push(crate::models::be_u64(&key[prefix.len()..]).unwrap());
            entry = cursor.next::<Vec<u8>, ()>().unwrap();
        }
        out
    }

    /// Thinning keeps each node's first record in each whole coarse window that lies more than
    /// `proof_history` blocks behind the head, with its index entry, and moves the mark past
    /// those windows; the trie after a block before the mark is read at coarse window ends,
    /// where the kept records give the nodes as they were.
    #[test]
    fn thinning_keeps_each_nodes_first_record_per_coarse_window() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let (a, b) = (Nibbles::from_nibbles([1, 2]), Nibbles::from_nibbles([3]));
        let tx = db.writer().unwrap();
        tx.start_trie_history(1, 4).unwrap();
        tx.set_coarse_node_window(8).unwrap();
        tx.set_proof_history(Some(4)).unwrap();
        for block in 1..=20u64 {
            tx.put_trie_node(&TrieId::Accounts, &a, Some(&branch(block)), Some(block))
                .unwrap();
            if block % 3 == 0 {
                tx.put_trie_node(
                    &TrieId::Accounts,
                    &b,
                    Some(&branch(100 + block)),
                    Some(block),
                )
                .unwrap();
            }
            tx.put(Table::CanonicalHashes, &block.to_be_bytes(), &[0; 32])
                .unwrap();
        }
        tx.commit().unwrap();
        assert_eq!(windows(&db, &a), [0, 4, 8, 12, 16, 20]);
        assert_eq!(windows(&db, &b), [0, 4, 8, 12, 16]);
        let index = |db: &Database| {
            db.reader()
                .unwrap()
                .table_digest(Table::TrieChangeSets)
                .unwrap()
                .0
        };
        assert_eq!(index(&db), 11);

        // Head 20, 4 blocks kept: the windows 1..8 and 8..16 are thinned, 16.. stays fine.
        let tx = db.writer().unwrap();
        assert!(tx.prune_node_history(u64::MAX).unwrap());
        tx.commit().unwrap();
        assert_eq!(windows(&db, &a), [0, 8, 16, 20]);
        assert_eq!(windows(&db, &b), [0, 8, 16]);
        assert_eq!(index(&db), 7);
        let tx = db.reader().unwrap();
        // A kept record is a diff from the node's next record: the one child that changed.
        for path in [&a, &b] {
            let key = [
                crate::history::trie_history::history_path(path),
                8u64.to_be_bytes().to_vec(),
            ]
            .concat();
            let record = tx.get(Table::AccountsTrieHistory, &key).unwrap().unwrap();
            assert_eq!(record.len(), 9 + 32, "{path:?}");
        }
        assert_eq!(tx.trie_history_fine_from().unwrap(), Some(16));
        assert_eq!(tx.read_window(14).unwrap(), 8);
        assert_eq!(tx.read_window(15).unwrap(), 4);
        assert_eq!(tx.trie_history_checkpoint(9).unwrap(), 15);
        assert_eq!(tx.trie_history_checkpoint_before(9).unwrap(), Some(7));
        assert_eq!(tx.trie_history_checkpoint(16).unwrap(), 19);
        assert_eq!(tx.trie_history_checkpoint_before(17).unwrap(), Some(15));
        for (after, a_then, b_then) in [(7, 7, 106), (15, 15, 115)] {
            let mut nodes = tx.trie_nodes_after(TrieId::Accounts, Some(after)).unwrap();
            assert_eq!(
                nodes.seek(&a).unwrap(),
                Some((a, branch(a_then))),
                "after {after}"
            );
            assert_eq!(
                nodes.seek(&b).unwrap(),
                Some((b, branch(b_then))),
                "after {after}"
            );
        }
        drop(tx);

        // Nothing more to thin until the head moves a coarse window on.
        let tx = db.writer().unwrap();
        assert!(tx.prune_node_history(u64::MAX).unwrap());
        tx.commit().unwrap();
        assert_eq!(index(&db), 7);
    }
}
