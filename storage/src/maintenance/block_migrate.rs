//! The migration step to `COMPRESSED_BLOCKS_LAYOUT`: rewrites a datadir's bodies and receipts
//! in their compressed encoding (block_codec.rs) and its transaction lookups with
//! prefix keys (tx_lookup.rs), block by block, resumably.
//!
//! The first step empties `TxLookup`; each block's lookups are then written again from its
//! transaction hashes. Progress is the next block to rewrite (`Meta` key `compress_progress`),
//! written in the same transaction as the blocks before it: blocks below it are in the new encoding, the rest in
//! the old one, which is what `StorageTx::block_data` reads by.

use crate::{
    BlockData, Error, MetaKey, Result, StorageTx, StoredBody, Table, TxLocation, decode_rlp,
    maintenance::migrate::COMPRESSED_BLOCKS_LAYOUT, models::be_u64,
};
use alloy_primitives::B256;
use signet_libmdbx::{RwSync, TransactionKind};

impl<K: TransactionKind> StorageTx<K> {
    /// Whether block `number`'s body and receipts values are compressed: in the
    /// current layout always, during the migration to it below its progress.
    pub(crate) fn block_data_compressed(&self, number: u64) -> Result<bool> {
        if self.schema_version()? >= COMPRESSED_BLOCKS_LAYOUT {
            return Ok(true);
        }
        Ok(self
            .meta_u64(MetaKey::CompressProgress)?
            .is_some_and(|next| number < next))
    }

    /// The last block number with a stored body or receipts.
    fn last_block_data(&self) -> Result<Option<u64>> {
        let mut last = None;
        for kind in BlockData::ALL {
            let mut cursor = self.tx.cursor(self.db(kind.table()))?;
            if let Some((key, ())) = cursor.last::<Vec<u8>, ()>()? {
                // A value cut into chunks (value_chunks.rs) ends with a 9-byte key.
                last = last.max(Some(be_u64(key.get(..8).unwrap_or(&key))?));
            }
        }
        Ok(last)
    }
}

impl StorageTx<RwSync> {
    /// Rewrites the block data of the blocks from the recorded progress on, until about
    /// `budget` transactions (and one per block) are done. Returns `true` once every block
    /// is, and the layout is `COMPRESSED_BLOCKS_LAYOUT`.
    pub(crate) fn compress_block_data(&self, budget: u64) -> Result<bool> {
        let mut next = match self.meta_u64(MetaKey::CompressProgress)? {
            Some(next) => next,
            None => {
                // The lookups are rebuilt from the blocks' hashes: deleting the old keys one by
                // one would leave their pages half empty (163 MB on the scale chain, as before).
                // Nothing reads them until the layout is current.
                self.tx.clear_db(self.db(Table::TxLookup))?;
                0
            }
        };
        let last = self.last_block_data()?;
        let mut done = 0u64;
        while last.is_some_and(|last| next <= last) {
            if done >= budget {
                self.put_meta(MetaKey::CompressProgress, &next.to_be_bytes())?;
                return Ok(false);
            }
            done += 1 + self.compress_block(next)?;
            next += 1;
        }
        self.del_meta(MetaKey::CompressProgress)?;
        self.put_schema(COMPRESSED_BLOCKS_LAYOUT)?;
        Ok(true)
    }

    /// Rewrites one block's values from the layout before; returns its transaction count.
    /// A block whose body is already in the new encoding (it starts with a codec tag, where
    /// an RLP list starts with 0xc0 or above) was written whole by this layout's writer, and
    /// only its lookups are put again (they are the same keys).
    fn compress_block(&self, number: u64) -> Result<u64> {
        let written_new = self
            .get_chunked(Table::BlockBodies, number)?
            .is_some_and(|body| body.first().is_some_and(|&first| first < 0xc0));
        let hashes = match self.get_chunked(Table::BlockTxHashes, number)? {
            Some(value) => value.chunks_exact(32).map(B256::from_slice).collect(),
            None => match self.get_chunked(Table::BlockBodies, number)? {
                Some(body) if !written_new => decode_rlp::<StoredBody>("block body", &body)?
                    .transactions
                    .iter()
                    .map(|tx| *tx.tx_hash())
                    .collect(),
                _ => Vec::new(),
            },
        };
        if !written_new {
            for kind in BlockData::ALL {
                if let Some(old) = self.get_chunked(kind.table(), number)? {
                    let old = old.into_owned();
                    self.put_block_data(kind, number, &old, false)?;
                }
            }
        }
        for (index, hash) in hashes.iter().enumerate() {
            let location = TxLocation {
                block_number: number,
                index: u32::try_from(index).map_err(|_| {
                    Error::Corrupt(format!("block {number} has {} transactions", hashes.len()))
                })?,
            };
            self.put_tx_lookup(hash, location)?;
        }
        Ok(hashes.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        BlockRecord, Database, ReceiptOutcome, SCHEMA_VERSION, StoredReceipt, blocks::block_codec,
    };
    use alloy_consensus::{Header, Signed, TxEnvelope, TxLegacy};
    use alloy_primitives::{Address, Bytes, Log, LogData, Signature, TxKind, U256};

    /// Block `number`: `number % 4` transactions (hashes built from the block and index, the
    /// last block's sharing an 8-byte prefix with block 1's first), each with a receipt of
    /// two logs, and senders.
    fn write_block(tx: &StorageTx<RwSync>, number: u64) {
        let header = Header {
            number,
            ..Default::default()
        };
        let count = number % 4;
        let mut transactions = Vec::new();
        let mut receipts = Vec::new();
        for i in 0..count {
            let mut hash = [0u8; 32];
            hash[..8].copy_from_slice(&(number * 16 + i).to_be_bytes());
            hash[31] = number as u8;
            if number == 9 && i == 0 {
                hash[..8].copy_from_slice(&16u64.to_be_bytes());
            }
            let legacy = TxLegacy {
                nonce: i,
                gas_limit: 21_000,
                to: TxKind::Call(Address::repeat_byte(0xaa)),
                input: Bytes::from(vec![number as u8; 64]),
                ..Default::default()
            };
            transactions.push(TxEnvelope::Legacy(Signed::new_unchecked(
                legacy,
                Signature::test_signature(),
                B256::from(hash),
            )));
            let log = |topic: u8| Log {
                address: Address::repeat_byte(topic),
                data: LogData::new_unchecked(
                    vec![B256::repeat_byte(topic), B256::with_last_byte(number as u8)],
                    Bytes::from(vec![topic; 32]),
                ),
            };
            receipts.push(StoredReceipt {
                tx_type: 0,
                outcome: ReceiptOutcome::Status(i % 2 == 0),
                cumulative_gas_used: 21_000 * (i + 1),
                gas_used: 21_000,
                effective_gas_price: 7,
                contract_address: None,
                blob_gas: None,
                logs: vec![log(1), log(2 + i as u8)],
            });
        }
        let body = StoredBody {
            transactions,
            ommers: Vec::new(),
            withdrawals: None,
        };
        let senders: Vec<Address> = (0..count).map(|i| Address::repeat_byte(i as u8)).collect();
        tx.insert_block(&BlockRecord {
            hash: header.hash_slow(),
            header: &header,
            body: &body,
            senders: &senders,
            receipts: &receipts,
            total_difficulty: U256::from(number),
        })
        .unwrap();
    }

    fn chain(db: &Database) {
        let tx = db.writer().unwrap();
        tx.put_schema_version().unwrap();
        for number in 0..10 {
            write_block(&tx, number);
        }
        tx.commit().unwrap();
    }

    /// Rewrites a current datadir's blocks as the layout before wrote them: uncompressed
    /// values, lookups keyed by the whole hash.
    fn downgrade(db: &Database) {
        let tx = db.writer().unwrap();
        for number in 0..10u64 {
            let key = number.to_be_bytes();
            for kind in BlockData::ALL {
                let stored = tx.get(kind.table(), &key).unwrap().unwrap().into_owned();
                let raw = block_codec::decompress(&stored).unwrap().into_owned();
                tx.put(kind.table(), &key, &raw).unwrap();
            }
            let hashes = tx.transaction_hashes(number).unwrap().unwrap();
            for (index, hash) in hashes.iter().enumerate() {
                let location = TxLocation {
                    block_number: number,
                    index: index as u32,
                };
                tx.del_tx_lookup(hash, location).unwrap();
                tx.put(Table::TxLookup, hash.as_slice(), &location.encode())
                    .unwrap();
            }
        }
        tx.put_schema(COMPRESSED_BLOCKS_LAYOUT - 1).unwrap();
        tx.commit().unwrap();
    }

    /// Digests of every table but Meta.
    use crate::maintenance::migrate::table_digests as digests;

    /// A datadir of the layout before, migrated in small resumable steps (reading every
    /// block in either layout between them), holds exactly the tables a fresh write of the
    /// same blocks does, and answers the same.
    #[test]
    fn a_migrated_datadir_equals_a_fresh_one() {
        let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (fresh, old) = (
            Database::open(dir_a.path()).unwrap(),
            Database::open(dir_b.path()).unwrap(),
        );
        chain(&fresh);
        chain(&old);
        downgrade(&old);
        assert_ne!(digests(&fresh), digests(&old));
        let raw_values = |db: &Database| {
            let r = db.reader().unwrap();
            let mut all = Vec::new();
            for number in 0..10 {
                for kind in BlockData::ALL {
                    all.push(r.block_data(kind, number).unwrap().unwrap());
                }
            }
            all
        };
        let expected = raw_values(&fresh);
        assert_eq!(raw_values(&old), expected);
        let mut steps = 0;
        loop {
            let tx = old.writer().unwrap();
            let done = tx.migrate_step(5).unwrap();
            tx.commit().unwrap();
            steps += 1;
            assert_eq!(raw_values(&old), expected, "after step {steps}");
            if done {
                break;
            }
        }
        assert!(steps >= 4, "{steps} steps");
        assert_eq!(digests(&old), digests(&fresh));
        let r = old.reader().unwrap();
        assert_eq!(r.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(r.meta(MetaKey::CompressProgress).unwrap(), None);
        // The lookups, one pair sharing a prefix.
        assert_eq!(r.tx_lookup_collisions().unwrap(), (13, 1));
        for number in 0..10 {
            let f = fresh.reader().unwrap();
            assert_eq!(r.body(number).unwrap(), f.body(number).unwrap());
            assert_eq!(r.senders(number).unwrap(), f.senders(number).unwrap());
            assert_eq!(r.receipts(number).unwrap(), f.receipts(number).unwrap());
            for (index, hash) in r
                .transaction_hashes(number)
                .unwrap()
                .unwrap()
                .iter()
                .enumerate()
            {
                let location = r.tx_location(hash).unwrap().unwrap();
                assert_eq!(
                    (location.block_number, location.index),
                    (number, index as u32)
                );
            }
        }
    }

    /// A datadir that says it has the layout before but whose blocks this layout wrote (as
    /// tests make them) is left as it is.
    #[test]
    fn blocks_already_compressed_are_not_compressed_again() {
        let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (fresh, relabelled) = (
            Database::open(dir_a.path()).unwrap(),
            Database::open(dir_b.path()).unwrap(),
        );
        chain(&fresh);
        chain(&relabelled);
        let tx = relabelled.writer().unwrap();
        tx.put_schema(COMPRESSED_BLOCKS_LAYOUT - 1).unwrap();
        while !tx.migrate_step(3).unwrap() {}
        tx.commit().unwrap();
        assert_eq!(digests(&relabelled), digests(&fresh));
    }
}
