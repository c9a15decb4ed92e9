//! The migration step to `COMPRESSED_BLOCKS_LAYOUT`: rewrites a datadir's bodies, senders and
//! receipts in their compressed encoding (block_codec.rs) and its transaction lookups with
//! prefix keys (tx_lookup.rs), block by block, resumably.
//!
//! Progress is the next block to rewrite (`Meta` key `compress_progress`), written in the same
//! transaction as the blocks before it: blocks below it are in the new encoding, the rest in
//! the old one, which is what `StorageTx::block_data` reads by.

use crate::{
    BlockData, Error, Result, StorageTx, StoredBody, Table, TxLocation, decode_rlp,
    migrate::COMPRESSED_BLOCKS_LAYOUT, models::be_u64,
};
use alloy_primitives::B256;
use signet_libmdbx::{RwSync, TransactionKind};

/// Progress of the block data's rewrite: the next block to rewrite (u64 BE).
const COMPRESS_PROGRESS: &str = "compress_progress";

impl<K: TransactionKind> StorageTx<K> {
    /// Whether block `number`'s bodies, senders and receipts values are compressed: in the
    /// current layout always, during the migration to it below its progress.
    pub(crate) fn block_data_compressed(&self, number: u64) -> Result<bool> {
        if self.schema_version()? >= COMPRESSED_BLOCKS_LAYOUT {
            return Ok(true);
        }
        Ok(self
            .meta_u64(COMPRESS_PROGRESS)?
            .is_some_and(|next| number < next))
    }

    /// The last block number with a stored body, senders or receipts.
    fn last_block_data(&self) -> Result<Option<u64>> {
        let mut last = None;
        for kind in BlockData::ALL {
            let mut cursor = self.tx.cursor(self.db(kind.table()))?;
            if let Some((key, ())) = cursor.last::<Vec<u8>, ()>()? {
                last = last.max(Some(be_u64(&key)?));
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
        let mut next = self.meta_u64(COMPRESS_PROGRESS)?.unwrap_or(0);
        let last = self.last_block_data()?;
        let mut done = 0u64;
        while last.is_some_and(|last| next <= last) {
            if done >= budget {
                self.put_meta(COMPRESS_PROGRESS, &next.to_be_bytes())?;
                return Ok(false);
            }
            done += 1 + self.compress_block(next)?;
            next += 1;
        }
        self.del(Table::Meta, COMPRESS_PROGRESS.as_bytes())?;
        self.put_schema(COMPRESSED_BLOCKS_LAYOUT)?;
        Ok(true)
    }

    /// Rewrites one block's values from the layout before; returns its transaction count.
    /// A block whose body is already in the new encoding (it starts with a codec tag, where
    /// an RLP list starts with 0xc0 or above) was written whole by this layout's writer, and
    /// only its lookups are put again (they are the same keys).
    fn compress_block(&self, number: u64) -> Result<u64> {
        let key = number.to_be_bytes();
        let written_new = self
            .get(Table::BlockBodies, &key)?
            .is_some_and(|body| body.first().is_some_and(|&first| first < 0xc0));
        let hashes = match self.get(Table::BlockTxHashes, &key)? {
            Some(value) => value.chunks_exact(32).map(B256::from_slice).collect(),
            None => match self.get(Table::BlockBodies, &key)? {
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
                if let Some(old) = self.get(kind.table(), &key)? {
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
            self.del(Table::TxLookup, hash.as_slice())?;
            self.put_tx_lookup(hash, location)?;
        }
        Ok(hashes.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Database, SCHEMA_VERSION, StoredReceipt, receipts};
    use alloy_primitives::Address;

    /// A datadir whose blocks 0-5 were written in the layout before: raw values, lookups
    /// keyed by whole hashes.
    fn old_layout(dir: &std::path::Path) -> Database {
        let db = Database::open(dir).unwrap();
        let tx = db.writer().unwrap();
        for number in 0..6u64 {
            let key = number.to_be_bytes();
            let body = StoredBody::default();
            tx.put(Table::BlockBodies, &key, &alloy_rlp::encode(&body))
                .unwrap();
            let senders: Vec<u8> = (0..number).flat_map(|i| [i as u8; 20]).collect();
            tx.put(Table::Senders, &key, &senders).unwrap();
            let list: Vec<StoredReceipt> = Vec::new();
            tx.put(
                Table::Receipts,
                &key,
                &receipts::encode_block_receipts(&list),
            )
            .unwrap();
            let hashes: Vec<u8> = (0..number)
                .flat_map(|i| [number as u8 * 16 + i as u8; 32])
                .collect();
            tx.put(Table::BlockTxHashes, &key, &hashes).unwrap();
            for i in 0..number {
                let hash = [number as u8 * 16 + i as u8; 32];
                let location = TxLocation {
                    block_number: number,
                    index: i as u32,
                };
                tx.put(Table::TxLookup, &hash, &location.encode()).unwrap();
            }
        }
        tx.put_schema(COMPRESSED_BLOCKS_LAYOUT - 1).unwrap();
        tx.commit().unwrap();
        db
    }

    #[test]
    fn block_data_is_rewritten_resumably_and_read_in_both_layouts_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let db = old_layout(dir.path());
        let senders_of = |n: u64| {
            (0..n)
                .map(|i| Address::repeat_byte(i as u8))
                .collect::<Vec<_>>()
        };
        let mut steps = 0;
        loop {
            let tx = db.writer().unwrap();
            let done = tx.migrate_step(4).unwrap();
            tx.commit().unwrap();
            steps += 1;
            let r = db.reader().unwrap();
            for number in 0..6u64 {
                let raw = r.block_data(BlockData::Senders, number).unwrap().unwrap();
                assert_eq!(
                    raw.len(),
                    number as usize * 20,
                    "step {steps}, block {number}"
                );
            }
            if done {
                break;
            }
        }
        assert!(steps >= 3, "{steps} steps");
        let r = db.reader().unwrap();
        assert_eq!(r.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(r.meta(COMPRESS_PROGRESS).unwrap(), None);
        for number in 0..6u64 {
            assert_eq!(r.senders(number).unwrap().unwrap(), senders_of(number));
            assert_eq!(r.body(number).unwrap().unwrap(), StoredBody::default());
            assert_eq!(r.receipts(number).unwrap().unwrap(), Vec::new());
            for i in 0..number {
                let hash = B256::repeat_byte(number as u8 * 16 + i as u8);
                let location = r.tx_location(&hash).unwrap().unwrap();
                assert_eq!((location.block_number, location.index), (number, i as u32));
            }
        }
        assert_eq!(r.tx_lookup_collisions().unwrap(), (15, 0));
    }
}
