//! The state-history window (`--state-history N`): a full node's datadir, as geth and reth run
//! one. It keeps the per-block changesets, the state history's block lists and the trie node
//! history of its last N blocks only; blocks, receipts, logs and their index and transaction
//! lookups stay for every block.
//!
//! Pruning block `b` takes `b` out of the block lists of every key its changesets hold,
//! deletes those changeset entries, and deletes the node history records `b` wrote (records
//! keyed by a window that starts at or before `b`, which no read at a kept block seeks: the
//! state after block `n` reads records of windows starting after `n`). `state_kept_from`
//! moves past `b` in the same commit, so a reader sees the history before or after, never
//! between; reads of the state after an older block fail with [`Error::PrunedHistory`].
//! Pruning runs in the importer's commits, a bounded number of changeset entries per commit.
//! The pages pruning frees go back to the file system with `Database::release_free_pages`.

use crate::{
    Error, MetaKey, Result, StorageTx, Table, history::state_lists::Lists,
    state::trie::hashed_slot_key,
};
use alloy_primitives::{Address, B256, keccak256};
use signet_libmdbx::{RwSync, TransactionKind};

/// Blocks an import's commit prunes beyond as many as it imported: a backlog (a window set on
/// an archive) goes over several commits, each one's work following its own import's.
pub const STATE_PRUNE_CATCH_UP: u64 = 64;

impl<K: TransactionKind> StorageTx<K> {
    /// How many blocks of state history the datadir keeps (`None`: all, an archive).
    pub fn state_history_window(&self) -> Result<Option<u64>> {
        self.meta_u64(MetaKey::StateHistoryWindow)
    }

    /// The oldest block whose state this datadir holds (0 in an archive).
    pub fn oldest_state(&self) -> Result<u64> {
        Ok(self
            .state_kept_from
            .get(|| self.meta_u64(MetaKey::StateKeptFrom))?
            .unwrap_or(0))
    }

    /// Fails with [`Error::PrunedHistory`] when the state after `block` was pruned.
    pub fn check_state_kept(&self, block: u64) -> Result<()> {
        let oldest = self.oldest_state()?;
        if block < oldest {
            return Err(Error::PrunedHistory { block, oldest });
        }
        Ok(())
    }
}

impl StorageTx<RwSync> {
    /// Keeps the state history of the last `blocks` blocks, from the next commits on. A window
    /// can narrow but never widen: what was pruned is gone.
    pub fn set_state_history_window(&self, blocks: u64) -> Result<()> {
        if blocks == 0 {
            return Err(Error::StateWindow(
                "--state-history must be at least 1: the state of the head's parent is what \
                 undoing a one-block reorganisation needs"
                    .into(),
            ));
        }
        match self.state_history_window()? {
            Some(kept) if blocks > kept => {
                return Err(Error::StateWindow(format!(
                    "this datadir keeps the state history of its last {kept} blocks; it cannot \
                     widen to {blocks}: the older history was pruned. Ingest into a new datadir \
                     for a wider window (without --state-history for an archive)"
                )));
            }
            Some(kept) if blocks == kept => return Ok(()),
            _ => {}
        }
        if self.schema_version()? < crate::SCHEMA_VERSION {
            return Err(Error::StateWindow(
                "this datadir is in an older layout: run `quarry migrate` on it first".into(),
            ));
        }
        self.put_meta(MetaKey::StateHistoryWindow, &blocks.to_be_bytes())
    }

    /// Prunes the state history of the blocks that fell behind the window, oldest first, at
    /// most `max_blocks` blocks and about `budget` changeset entries (whole blocks: at least
    /// one). Returns `true` when none is left to prune.
    pub fn prune_state_history(&self, budget: u64, max_blocks: u64) -> Result<bool> {
        let (Some(window), Some((head, _))) = (self.state_history_window()?, self.head()?) else {
            return Ok(true);
        };
        let target = head.saturating_sub(window);
        let oldest = self.oldest_state()?;
        if oldest >= target {
            return Ok(true);
        }
        // Deletions must not meet list blocks and node records still staged.
        self.write_staged()?;
        let (mut read, mut blocks) = (0, 0);
        // The state after block k needs the changesets of the blocks after k only.
        let mut next = if oldest == 0 { 0 } else { oldest + 1 };
        while next <= target {
            if read >= budget || blocks >= max_blocks.max(1) {
                return Ok(false);
            }
            read += self.prune_block_state(next)?;
            // Block 0 records no progress (the oldest kept state is at least block 1): it
            // counts with block 1, so that a call always moves `state_kept_from` on.
            if next > 0 {
                blocks += 1;
                self.put_meta(MetaKey::StateKeptFrom, &next.to_be_bytes())?;
                self.state_kept_from.set(Some(next));
            }
            next += 1;
        }
        Ok(true)
    }

    /// Deletes block `number`'s changesets, its blocks in the lists and its node history
    /// records. Returns how many changeset entries it read.
    fn prune_block_state(&self, number: u64) -> Result<u64> {
        let mut read = 0;
        let mut cursor = self.tx.cursor(self.db(Table::NarrowAccountChangeSets))?;
        let prefix = crate::history::changesets::account_changeset_prefix(number)?;
        let mut entry = cursor.set_range::<Vec<u8>, ()>(&prefix)?;
        while let Some((key, ())) = entry {
            if !key.starts_with(&prefix) {
                break;
            }
            let address = key
                .get(4..24)
                .ok_or_else(|| Error::Corrupt("malformed account changeset key".into()))?;
            self.unlist_block(Lists::Accounts, keccak256(address).as_slice(), number)?;
            read += 1;
            entry = crate::delete_and_next::<Vec<u8>, ()>(&mut cursor)?;
        }
        // A block's slots come account by account: hash each address once, and delete its
        // group once.
        let mut hashed_address: Option<(Address, B256)> = None;
        for (address, slot, _) in self.storage_changeset(number)? {
            let hashed = match hashed_address {
                Some((known, hashed)) if known == address => hashed,
                _ => {
                    self.del_storage_change_group(number, &address)?;
                    let hashed = keccak256(address);
                    hashed_address = Some((address, hashed));
                    hashed
                }
            };
            let key = hashed_slot_key(&hashed, &keccak256(slot));
            self.unlist_block(Lists::Storages, &key, number)?;
            read += 1;
        }
        self.delete_node_records(number)?;
        Ok(read)
    }

    /// Refuses an unwind to `ancestor` whose state was pruned: undoing the blocks above it
    /// needs their changesets, and the state after it its own history.
    pub(crate) fn check_unwind_within_window(&self, ancestor: u64) -> Result<()> {
        let oldest = self.oldest_state()?;
        if ancestor < oldest {
            let window = self.state_history_window()?.unwrap_or_default();
            return Err(Error::UnwindBeyondWindow {
                ancestor,
                oldest,
                window,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::{AccountChange, Database, Error, StoredAccount, Table};
    use alloy_primitives::{Address, B256, U256};

    /// Blocks 0..=head where account 1 changes in every block and account 2's slot 0 in every
    /// even one, each holding its block's number; `head` canonical hashes make the head.
    fn write_chain(db: &Database, from: u64, head: u64) {
        let tx = db.writer().unwrap();
        if from == 0 {
            tx.start_trie_history(1, 1).unwrap();
        }
        for block in from..=head {
            let mut changes = vec![AccountChange {
                address: Address::repeat_byte(1),
                account: Some(StoredAccount {
                    nonce: block,
                    balance: U256::from(block),
                    code_hash: alloy_primitives::KECCAK256_EMPTY,
                }),
                wiped: false,
                storage: Vec::new(),
            }];
            if block % 2 == 0 {
                changes.push(AccountChange {
                    address: Address::repeat_byte(2),
                    account: Some(StoredAccount {
                        nonce: 1,
                        balance: U256::ZERO,
                        code_hash: alloy_primitives::KECCAK256_EMPTY,
                    }),
                    wiped: false,
                    storage: vec![(B256::ZERO, U256::from(block + 1))],
                });
            }
            tx.apply_state_changes(block, &changes, &[]).unwrap();
            tx.put(
                Table::CanonicalHashes,
                &block.to_be_bytes(),
                B256::with_last_byte(block as u8).as_slice(),
            )
            .unwrap();
        }
        tx.put_schema_version().unwrap();
        tx.commit().unwrap();
    }

    /// What the state after `block` holds of the two accounts, or the read's error.
    fn state_after(db: &Database, block: u64) -> Result<(u64, U256), Error> {
        let rx = db.reader().unwrap();
        let nonce = rx
            .account_at(&Address::repeat_byte(1), block)?
            .unwrap()
            .nonce;
        let slot = rx.storage_at(&Address::repeat_byte(2), &B256::ZERO, block)?;
        Ok((nonce, slot))
    }

    /// A window keeps the state of its last blocks equal to an archive's and refuses older
    /// reads and unwinds, whether pruned in one commit or over several with a small budget, and
    /// as the head moves on; it never widens.
    #[test]
    fn a_window_keeps_its_last_blocks_and_refuses_older_ones() {
        let (archive_dir, pruned_dir) =
            (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (archive, pruned) = (
            Database::open(archive_dir.path()).unwrap(),
            Database::open(pruned_dir.path()).unwrap(),
        );
        write_chain(&archive, 0, 40);
        write_chain(&pruned, 0, 40);
        let tx = pruned.writer().unwrap();
        tx.set_state_history_window(10).unwrap();
        // The first call prunes blocks 0 and 1 and keeps the state from block 1 on.
        assert!(!tx.prune_state_history(u64::MAX, 1).unwrap());
        assert_eq!(tx.oldest_state().unwrap(), 1);
        // Two changeset entries a block at most: a budget of 3 prunes two blocks a commit.
        let mut commits = 0;
        while !tx.prune_state_history(3, u64::MAX).unwrap() {
            commits += 1;
            assert!(commits < 40);
        }
        tx.commit().unwrap();
        assert!(commits > 5, "pruned over several calls");
        assert_eq!(pruned.reader().unwrap().oldest_state().unwrap(), 30);
        for block in 30..=40 {
            assert_eq!(
                state_after(&pruned, block).unwrap(),
                state_after(&archive, block).unwrap(),
                "after {block}"
            );
        }
        for block in [0, 1, 29] {
            match state_after(&pruned, block) {
                Err(Error::PrunedHistory {
                    block: b,
                    oldest: 30,
                }) => assert_eq!(b, block),
                other => panic!("after {block}: {other:?}"),
            }
        }
        let rx = pruned.reader().unwrap();
        assert!(rx.account_changeset(30).unwrap().is_empty());
        assert_eq!(rx.account_changeset(31).unwrap().len(), 1);
        drop(rx);

        let tx = pruned.writer().unwrap();
        assert!(matches!(
            tx.unwind_to(29),
            Err(Error::UnwindBeyondWindow {
                ancestor: 29,
                oldest: 30,
                window: 10
            })
        ));
        assert!(matches!(
            tx.set_state_history_window(11),
            Err(Error::StateWindow(_))
        ));
        tx.set_state_history_window(8).unwrap();
        tx.commit().unwrap();

        // The head moves on: each commit prunes what fell behind.
        write_chain(&archive, 41, 50);
        write_chain(&pruned, 41, 50);
        let tx = pruned.writer().unwrap();
        // A commit prunes at most the blocks it is given, and moves on with one.
        assert!(!tx.prune_state_history(u64::MAX, 1).unwrap());
        assert_eq!(tx.oldest_state().unwrap(), 31);
        assert!(tx.prune_state_history(u64::MAX, u64::MAX).unwrap());
        tx.commit().unwrap();
        assert_eq!(pruned.reader().unwrap().oldest_state().unwrap(), 42);
        for block in 42..=50 {
            assert_eq!(
                state_after(&pruned, block).unwrap(),
                state_after(&archive, block).unwrap(),
                "after {block}"
            );
        }
        assert!(matches!(
            state_after(&pruned, 41),
            Err(Error::PrunedHistory { oldest: 42, .. })
        ));
        // An unwind within the window works, and the state after it is the archive's.
        for db in [&archive, &pruned] {
            let tx = db.writer().unwrap();
            tx.unwind_to(45).unwrap();
            tx.commit().unwrap();
        }
        for block in 42..=45 {
            assert_eq!(
                state_after(&pruned, block).unwrap(),
                state_after(&archive, block).unwrap(),
                "after {block}"
            );
        }
    }
}
