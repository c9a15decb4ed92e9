//! Index entries whose keys are spread at random (transaction lookups and the log index by
//! topic and address), staged by a write transaction and written in key order.
//!
//! A block's hundred transaction hashes and its logs' topics land on a hundred different
//! B-tree pages, so putting them one by one costs a search from the root each. Staged over
//! many blocks and written sorted, consecutive keys mostly share a page, which MDBX reaches
//! from where the cursor stands. Nothing in a write transaction reads these tables except an
//! unwind, which writes what is staged first, and so does a commit; reads of them in the same
//! transaction go through [`StorageTx::write_staged`] first.

use crate::{Result, StorageTx, Table};
use signet_libmdbx::{RwSync, WriteFlags};
use std::sync::{Mutex, PoisonError};

/// How many entries are staged before they are written: a bound on the memory they take
/// (about 80 bytes each) that still leaves many keys per page of each table.
const STAGED_LIMIT: usize = 1 << 18;

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

    /// Stages an entry; true when enough are staged to write them.
    fn stage(&self, table: Table, key: &[u8], value: &[u8]) -> bool {
        let mut staged = self.0.lock().unwrap_or_else(PoisonError::into_inner);
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
        staged.entries.len() >= STAGED_LIMIT
    }
}

impl StorageTx<RwSync> {
    /// Puts an entry of a table whose keys are spread at random: staged, and written with the
    /// others in key order (see the module's documentation).
    pub(crate) fn put_staged(&self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        if self.staged.stage(table, key, value) {
            self.write_staged()?;
        }
        Ok(())
    }

    /// Writes every staged index entry, table by table in key order through one cursor each,
    /// so that each put starts from the page the last one left.
    pub fn write_staged(&self) -> Result<()> {
        let mut staged = self.staged.take();
        if staged.entries.is_empty() {
            return Ok(());
        }
        let mut entries = std::mem::take(&mut staged.entries);
        // Stable: of two entries with one key, the later staged is written last.
        entries.sort_by(|a, b| (a.table as u8, staged.key(a)).cmp(&(b.table as u8, staged.key(b))));
        let mut entries = entries.iter().peekable();
        while let Some(table) = entries.peek().map(|entry| entry.table) {
            let mut cursor = self.tx.cursor(self.db(table))?;
            while let Some(entry) = entries.next_if(|entry| entry.table == table) {
                cursor.put(staged.key(entry), staged.value(entry), WriteFlags::empty())?;
            }
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
