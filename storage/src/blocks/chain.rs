//! The chain as stored: headers, the canonical hashes, bodies, senders, receipts and the
//! transaction counts, read by block number or hash, and a block stored and made canonical.

use alloy_consensus::Header;
use alloy_primitives::{Address, B256, U256};
use alloy_rlp::Encodable;
use signet_libmdbx::{RwSync, TransactionKind};

use crate::{
    BlockData, BlockReceiptsView, BlockRecord, CompressedBlockData, Error, Result, StorageTx,
    StoredBody, StoredReceipt, Table, TxLocation, b256, decode_rlp, models::be_u64,
};

impl<K: TransactionKind> StorageTx<K> {
    /// The highest canonical block: its number and hash.
    pub fn head(&self) -> Result<Option<(u64, B256)>> {
        let mut cursor = self.tx.cursor(self.db(Table::CanonicalHashes))?;
        match cursor.last::<Vec<u8>, Vec<u8>>()? {
            Some((key, value)) => Ok(Some((be_u64(&key)?, b256("canonical hash", &value)?))),
            None => Ok(None),
        }
    }

    pub fn canonical_hash(&self, number: u64) -> Result<Option<B256>> {
        self.get(Table::CanonicalHashes, &number.to_be_bytes())?
            .map(|v| b256("canonical hash", &v))
            .transpose()
    }

    pub fn block_number(&self, hash: &B256) -> Result<Option<u64>> {
        self.get(Table::HeaderNumbers, hash.as_slice())?
            .map(|v| be_u64(&v))
            .transpose()
    }

    pub fn header(&self, number: u64) -> Result<Option<Header>> {
        self.get(Table::Headers, &number.to_be_bytes())?
            .map(|v| decode_rlp("header", &v))
            .transpose()
    }

    pub fn total_difficulty(&self, number: u64) -> Result<Option<U256>> {
        Ok(self
            .get(Table::TotalDifficulty, &number.to_be_bytes())?
            .map(|v| U256::from_be_slice(&v)))
    }

    pub fn body(&self, number: u64) -> Result<Option<StoredBody>> {
        self.with_block_data(BlockData::Body, number, |v| decode_rlp("block body", v))
    }

    pub fn senders(&self, number: u64) -> Result<Option<Vec<Address>>> {
        Ok(self
            .get_chunked(Table::Senders, number)?
            .map(|v| v.chunks_exact(20).map(Address::from_slice).collect()))
    }

    /// Every receipt of block `number`, decoded.
    pub fn receipts(&self, number: u64) -> Result<Option<Vec<StoredReceipt>>> {
        self.with_receipts(number, |view| view.decode_all())?
            .transpose()
    }

    /// Runs `read` over block `number`'s receipts read in place, without decoding the ones it
    /// does not ask for (`None` when the block is not stored).
    pub fn with_receipts<T>(
        &self,
        number: u64,
        read: impl FnOnce(BlockReceiptsView<'_>) -> T,
    ) -> Result<Option<T>> {
        self.with_block_data(BlockData::Receipts, number, |bytes| {
            let view = BlockReceiptsView::new(bytes)
                .map_err(|e| Error::Corrupt(format!("receipts of block {number}: {e}")))?;
            Ok(read(view))
        })
    }

    /// The number of transactions in blocks 0 through `number`.
    pub fn transactions_through(&self, number: u64) -> Result<Option<u64>> {
        self.get(Table::TxCounts, &number.to_be_bytes())?
            .map(|v| be_u64(&v))
            .transpose()
    }
}

impl StorageTx<RwSync> {
    /// Stores a block and makes it canonical at its number.
    pub fn insert_block(&self, block: &BlockRecord<'_>) -> Result<()> {
        let data = self.block_compressor()?.compress(block)?;
        self.insert_compressed_block(block, data)
    }

    /// As [`StorageTx::insert_block`], with the block's values compressed already (by a
    /// [`BlockCompressor`] of this transaction, made after the block before was stored).
    pub fn insert_compressed_block(
        &self,
        block: &BlockRecord<'_>,
        data: CompressedBlockData,
    ) -> Result<()> {
        let number = block.header.number;
        let key = number.to_be_bytes();
        let mut buf = Vec::with_capacity(block.header.length());
        block.header.encode(&mut buf);
        self.append(Table::Headers, &key, &buf)?;
        self.append(Table::CanonicalHashes, &key, block.hash.as_slice())?;
        self.put(Table::HeaderNumbers, block.hash.as_slice(), &key)?;
        self.append(
            Table::TotalDifficulty,
            &key,
            &block.total_difficulty.to_be_bytes::<32>(),
        )?;
        self.store_block_data(BlockData::Body, number, &data.body, true)?;
        let senders: Vec<u8> = block.senders.iter().flat_map(|a| a.0.0).collect();
        self.put_chunked(Table::Senders, number, &senders, true)?;
        let hashes: Vec<u8> = block
            .body
            .transactions
            .iter()
            .flat_map(|tx| tx.tx_hash().0)
            .collect();
        self.put_chunked(Table::BlockTxHashes, number, &hashes, true)?;
        self.store_block_data(BlockData::Receipts, number, &data.receipts, true)?;
        self.index_block_logs(number, block.receipts)?;
        let earlier = match number.checked_sub(1) {
            Some(parent) => self.transactions_through(parent)?.unwrap_or(0),
            None => 0,
        };
        let through = earlier + block.body.transactions.len() as u64;
        self.append(Table::TxCounts, &key, &through.to_be_bytes())?;
        for (index, tx) in block.body.transactions.iter().enumerate() {
            let location = TxLocation {
                block_number: number,
                index: index as u32,
            };
            self.put_tx_lookup(tx.tx_hash(), location)?;
        }
        Ok(())
    }

    /// Rewrites the body of a stored block that has no transactions (so nothing indexes it):
    /// the repair of a genesis body stored before it carried its withdrawals list.
    pub fn replace_empty_body(&self, number: u64, body: &StoredBody) -> Result<()> {
        let stored = self.body(number)?;
        if stored.is_none_or(|b| !b.transactions.is_empty()) || !body.transactions.is_empty() {
            return Err(Error::Corrupt(format!(
                "block {number}: only a stored body without transactions can be replaced"
            )));
        }
        let mut buf = Vec::new();
        body.encode(&mut buf);
        self.put_block_data(BlockData::Body, number, &buf, false)
    }
}
