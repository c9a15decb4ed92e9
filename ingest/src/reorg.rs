//! Reorganisations: a block that differs from the stored one at its height refused, or the
//! stored chain unwound to its parent in the open transaction, and `quarry unwind`.

use alloy_consensus::Header;
use alloy_primitives::B256;
use quarry_executor::{SealedBlock, StateTrie};
use quarry_storage::WriteTx;
use std::sync::atomic::AtomicU64;

use crate::{Error, ImportStats, Importer, OpenBatch, Reorgs, Result};

/// The chain an unwind in the open transaction replaced: what to go back to if the new branch
/// fails, and how far the new branch must reach before its transaction may commit.
pub(crate) struct Replaced {
    pub(crate) head: Header,
    pub(crate) head_hash: B256,
    pub(crate) total_difficulty: alloy_primitives::U256,
}

impl Importer {
    /// Removes every stored block above `ancestor` and commits (`quarry unwind`): the state,
    /// its history and the trie go back to the ancestor's, checked against its state root; on
    /// any failure nothing changes.
    pub fn unwind_to(&mut self, ancestor: u64) -> Result<()> {
        let tx = self.db.writer()?;
        let (head, head_hash) = (self.head.clone(), self.head_hash);
        match self.unwind(&tx, ancestor).and_then(|()| Ok(tx.commit()?)) {
            Ok(()) => Ok(()),
            Err(err) => {
                self.head = head;
                self.head_hash = head_hash;
                Err(err)
            }
        }
    }

    /// Unwinds the stored chain above `ancestor` in `tx` and the state trie with it, checking
    /// that the trie's root is then the ancestor's state root.
    fn unwind(&mut self, tx: &WriteTx, ancestor: u64) -> Result<()> {
        let missing = || quarry_storage::Error::Corrupt(format!("no stored block {ancestor}"));
        let header = tx.header(ancestor)?.ok_or_else(missing)?;
        let hash = tx.canonical_hash(ancestor)?.ok_or_else(missing)?;
        let unwound = tx.unwind_to(ancestor)?;
        let mut trie = StateTrie::new();
        trie.restore(&unwound.restored);
        let computed = trie.root(tx)?;
        if computed != header.state_root {
            return Err(Error::StateMismatch {
                number: ancestor,
                computed,
                expected: header.state_root,
            });
        }
        trie.write(tx, None, false)?;
        self.head = header;
        self.head_hash = hash;
        Ok(())
    }

    /// Handles a block at a stored height that differs from the stored block: refused, or
    /// (with reorgs allowed and within the depth limit) the stored chain is unwound to its
    /// parent in a transaction of its own. `Ok(Some(err))` rejects the block.
    pub(crate) fn replace_stored(
        &mut self,
        name: &str,
        offset: u64,
        block: &SealedBlock,
        pending: &mut Option<OpenBatch>,
        highest_read: &AtomicU64,
        stats: &mut ImportStats,
    ) -> Result<Option<Error>> {
        let number = block.header.number;
        let tx = match pending {
            Some(p) => &p.tx,
            None => &pending.insert(self.open_pending()?).tx,
        };
        let stored = tx.canonical_hash(number)?.unwrap_or_default();
        let max_depth = match self.reorgs {
            Reorgs::Refuse => {
                return Ok(Some(Error::Reorg {
                    path: name.to_string(),
                    offset,
                    number,
                    hash: block.hash,
                    stored,
                }));
            }
            Reorgs::Follow { max_depth } | Reorgs::Heavier { max_depth } => max_depth,
        };
        let ancestor = number - 1;
        if tx.canonical_hash(ancestor)? != Some(block.header.parent_hash) {
            return Ok(Some(self.gap(name, offset, number, block.hash)));
        }
        let depth = self.head.number - ancestor;
        if depth > max_depth {
            return Ok(Some(Error::ReorgTooDeep {
                path: name.to_string(),
                offset,
                number,
                hash: block.hash,
                stored,
                depth,
                max_depth,
            }));
        }
        if pending.as_ref().is_none_or(|p| p.replaced.is_none()) {
            // Whole blocks before the fork commit on their own; the reorganisation gets a
            // transaction of its own. (A second fork inside a reorganisation unwinds again in
            // the same transaction.)
            self.commit(pending.take(), highest_read, stats)?;
            let opened = self.open_pending()?;
            let total_difficulty = opened
                .tx
                .total_difficulty(self.head.number)?
                .unwrap_or_default();
            *pending = Some(OpenBatch {
                replaced: Some(Replaced {
                    head: self.head.clone(),
                    head_hash: self.head_hash,
                    total_difficulty,
                }),
                ..opened
            });
        }
        let Some(p) = pending.take() else {
            return Ok(None);
        };
        let result = self.unwind(&p.tx, ancestor);
        *pending = Some(p);
        result.map(|()| None)
    }
}
