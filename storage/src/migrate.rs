//! The database layout version, and the resumable steps (`quarry migrate`) that bring a
//! database written by an older quarry to the current layout.

use crate::{Result, StorageTx, Table, models::be_u64, receipts};
use signet_libmdbx::{RwSync, TransactionKind};

/// The first layout that records per-block changesets (layout 1 had none).
pub const CHANGESETS_LAYOUT: u64 = 2;
/// The first layout with receipts in the in-place encoding of `receipts.rs` (an RLP list before).
pub const RECEIPTS_LAYOUT: u64 = 3;
/// The database layout this quarry writes.
pub const SCHEMA_VERSION: u64 = RECEIPTS_LAYOUT;
const SCHEMA: &str = "schema";
/// Progress of the receipts' re-encoding: the next block to re-encode (u64 BE).
const RECEIPTS_PROGRESS: &str = "receipts_progress";

impl<K: TransactionKind> StorageTx<K> {
    /// The layout version the database says it has (1 when it names none).
    pub fn schema_version(&self) -> Result<u64> {
        Ok(self
            .meta(SCHEMA)?
            .map(|v| be_u64(&v))
            .transpose()?
            .unwrap_or(1))
    }
}

impl StorageTx<RwSync> {
    /// Records that this database has the current layout (a new one, or a migrated one).
    pub fn put_schema_version(&self) -> Result<()> {
        self.put_schema(SCHEMA_VERSION)
    }

    pub(crate) fn put_schema(&self, version: u64) -> Result<()> {
        self.put_meta(SCHEMA, &version.to_be_bytes())
    }

    /// One step of the migration to the current layout, doing about `budget` units of work
    /// (history entries, or receipts) and recording its progress in the same transaction, so
    /// that a migration stopped at any commit resumes. Returns `true` once the layout is
    /// current.
    pub fn migrate_step(&self, budget: u64) -> Result<bool> {
        match self.schema_version()? {
            layout if layout < CHANGESETS_LAYOUT => self.build_changesets(budget).map(|_| false),
            layout if layout < RECEIPTS_LAYOUT => self.reencode_receipts(budget),
            _ => Ok(true),
        }
    }

    /// Rewrites layout 2's RLP receipt lists in the current encoding, block by block, until
    /// about `max_receipts` receipts are done.
    fn reencode_receipts(&self, max_receipts: u64) -> Result<bool> {
        let mut next = self
            .meta(RECEIPTS_PROGRESS)?
            .map(|v| be_u64(&v))
            .transpose()?
            .unwrap_or(0);
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
                self.put_meta(RECEIPTS_PROGRESS, &next.to_be_bytes())?;
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
        self.del(Table::Meta, RECEIPTS_PROGRESS.as_bytes())?;
        self.put_schema(RECEIPTS_LAYOUT)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Database, ReceiptOutcome, StoredReceipt};
    use alloy_primitives::{Address, Bytes, Log, LogData};

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

        let mut steps = 0;
        loop {
            let tx = db.writer().unwrap();
            let done = tx.migrate_step(2).unwrap();
            tx.commit().unwrap();
            steps += 1;
            if done {
                break;
            }
        }
        assert!(steps > 3, "{steps} steps");
        let r = db.reader().unwrap();
        assert_eq!(r.schema_version().unwrap(), SCHEMA_VERSION);
        for block in 0..10u64 {
            assert_eq!(r.receipts(block).unwrap().unwrap(), receipts_of(block));
        }
    }
}
