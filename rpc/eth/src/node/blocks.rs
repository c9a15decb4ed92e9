//! Blocks, headers, uncles, transactions and receipts: the by-number, by-hash, raw and
//! debug_getRaw* answers.

use super::{BlockAt, Node, Reads, Snapshot};
use crate::{
    cache::{BlockReceipts, CachedBlock, Json, JsonKey, ReceiptRead},
    rpc_error::{Result, RpcError},
    types::{BlockJson, ReceiptJson, TransactionJson, TxContext},
};
use alloy_consensus::Transaction;
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256, Bytes, U64};
use std::sync::Arc;

/// eth_getTransactionReceipt reads a block's receipts whole, and keeps them for the block's
/// other transactions, when they take at most this many bytes; from a larger block it reads
/// only the one receipt.
const WHOLE_RECEIPTS_BYTES: usize = 256 << 10;

impl Node {
    pub fn block(&self, reads: &Reads, at: BlockAt, full: bool) -> Result<Option<Option<Json>>> {
        let Some(block) = self.find_block(reads, at)? else {
            return Ok(None);
        };
        let Some(block) = block else {
            return Ok(Some(None));
        };
        let key = JsonKey::Block {
            hash: block.hash,
            full,
        };
        let json = self.answers.get_or_make(key, || {
            Ok(BlockJson::block(
                &block.header,
                block.hash,
                block.size,
                block.total_difficulty,
                &block.body,
                &block.uncle_hashes,
                full.then_some(block.senders.as_slice()),
            ))
        })?;
        Ok(Some(Some(json)))
    }

    /// eth_getHeaderBy*: `null` for a block not stored.
    pub fn header(&self, reads: &Reads, at: BlockAt) -> Result<Option<Option<serde_json::Value>>> {
        let Some(block) = self.find_block(reads, at)? else {
            return Ok(None);
        };
        block
            .map(|block| BlockJson::header_only(&block.header, block.hash))
            .transpose()
            .map(Some)
            .map_err(|e| RpcError::Internal(format!("a header's JSON: {e}")))
    }

    pub fn uncle(
        &self,
        reads: &Reads,
        at: BlockAt,
        index: u64,
    ) -> Result<Option<Option<BlockJson>>> {
        Ok(self.find_block(reads, at)?.map(|block| {
            let block = block?;
            let index = usize::try_from(index).ok()?;
            Some(BlockJson::uncle(
                block.body.ommers.get(index)?,
                *block.uncle_hashes.get(index)?,
            ))
        }))
    }

    pub fn transaction(
        &self,
        reads: &Reads,
        at: BlockAt,
        index: u64,
    ) -> Result<Option<Option<Json>>> {
        let Some(block) = self.find_block(reads, at)? else {
            return Ok(None);
        };
        let Some(block) = block else {
            return Ok(Some(None));
        };
        let Ok(index) = usize::try_from(index) else {
            return Ok(Some(None));
        };
        self.transaction_json(&block, index).map(Some)
    }

    /// Transaction `index` of `block` as eth_getTransactionBy* answer it; `None` when the block
    /// has no such transaction.
    fn transaction_json(&self, block: &CachedBlock, index: usize) -> Result<Option<Json>> {
        let Some(transaction) = block.body.transactions.get(index) else {
            return Ok(None);
        };
        let key = JsonKey::Transaction {
            block: block.hash,
            index,
        };
        self.answers
            .get_or_make(key, || {
                let at = TxContext::new(&block.header, block.hash, index);
                Ok(TransactionJson::new(transaction, block.sender(index)?, &at))
            })
            .map(Some)
    }

    /// The block holding transaction `hash` and its index there: `Some(None)` when it is not
    /// stored, `None` when only the cache was asked and it cannot tell.
    pub(super) fn locate_transaction(
        &self,
        reads: &Reads,
        hash: B256,
    ) -> Result<Option<Option<TxInBlock>>> {
        match reads {
            Reads::Cache => Ok(self
                .in_memory(|memory| memory.blocks.by_transaction(&hash))?
                .map(Some)),
            Reads::Snapshot(tx) => {
                let Some(location) = tx.tx_location(&hash)? else {
                    return Ok(Some(None));
                };
                let block = self.stored_block(tx, location.block_number)?;
                Ok(Some(block.map(|block| (block, location.index as usize))))
            }
        }
    }

    pub fn transaction_receipt(&self, reads: &Reads, hash: B256) -> Result<Option<Option<Json>>> {
        let Some(found) = self.locate_transaction(reads, hash)? else {
            return Ok(None);
        };
        let Some((block, index)) = found else {
            return Ok(Some(None));
        };
        let key = JsonKey::Receipt {
            block: block.hash,
            index,
        };
        // Kept by block hash, which names the same block on every chain.
        if let Some(json) = self.answers.get(&key) {
            return Ok(Some(Some(json)));
        }
        let Some(receipt) = self.receipt_json(reads, &block, index)? else {
            return Ok(None);
        };
        Ok(Some(match receipt {
            Some(receipt) => Some(self.answers.keep(key, &receipt)?),
            None => None,
        }))
    }

    /// Receipt `index` of `block`: `Some(None)` when the block has no such transaction, `None`
    /// when only memory was asked and it does not hold the receipt.
    fn receipt_json(
        &self,
        reads: &Reads,
        block: &CachedBlock,
        index: usize,
    ) -> Result<Option<Option<ReceiptJson>>> {
        let Some(transaction) = block.body.transactions.get(index) else {
            return Ok(Some(None));
        };
        let at = TxContext::new(&block.header, block.hash, index);
        let sender = block.sender(index)?;
        let answer = |receipt: &quarry_storage::StoredReceipt, bloom, first_log_index| {
            Ok(Some(Some(ReceiptJson::new(
                receipt,
                bloom,
                transaction,
                sender,
                &at,
                first_log_index,
            ))))
        };
        let whole = |receipts: &BlockReceipts| {
            let (Some(receipt), Some(bloom)) =
                (receipts.list.get(index), receipts.blooms.get(index))
            else {
                return Ok(Some(None));
            };
            let first_log_index = receipts.list[..index].iter().map(|r| r.logs.len()).sum();
            answer(receipt, *bloom, first_log_index)
        };
        if let Some(receipts) = self.receipts.block(&block.hash) {
            return whole(&receipts);
        }
        if let Some(one) = self.receipts.one(&block.hash, index) {
            return answer(&one.receipt, one.bloom, one.first_log_index);
        }
        let Reads::Snapshot(tx) = reads else {
            return Ok(None);
        };
        // A block of small receipts is read whole and kept for its other transactions; from a
        // block of large ones, this receipt alone is read, and kept alone.
        match ReceiptRead::read(tx, block.header.number, index, WHOLE_RECEIPTS_BYTES)? {
            ReceiptRead::Whole(receipts) => {
                self.receipts.insert_block(block.hash, receipts.clone());
                whole(&receipts)
            }
            ReceiptRead::One(Some(one)) => {
                self.receipts.insert_one(block.hash, index, one.clone());
                answer(&one.receipt, one.bloom, one.first_log_index)
            }
            ReceiptRead::One(None) => Ok(Some(None)),
        }
    }

    /// Block `block`'s receipts: from the receipt cache, or read from the snapshot and kept.
    /// `None` when only memory was asked and does not hold them.
    pub(crate) fn receipts_of(
        &self,
        reads: &Reads,
        block: &CachedBlock,
    ) -> Result<Option<Arc<BlockReceipts>>> {
        if let Some(found) = self.receipts.block(&block.hash) {
            return Ok(Some(found));
        }
        let Reads::Snapshot(tx) = reads else {
            return Ok(None);
        };
        let receipts = Arc::new(BlockReceipts::read(tx, block.header.number)?);
        self.receipts.insert_block(block.hash, receipts.clone());
        Ok(Some(receipts))
    }

    /// eth_getTransactionByHash.
    pub fn transaction_by_hash(&self, reads: &Reads, hash: B256) -> Result<Option<Option<Json>>> {
        let Some(found) = self.locate_transaction(reads, hash)? else {
            return Ok(None);
        };
        let Some((block, index)) = found else {
            return Ok(Some(None));
        };
        self.transaction_json(&block, index).map(Some)
    }

    /// eth_getBlockReceipts: every receipt of the block, `null` for a block not stored.
    pub fn block_receipts(
        &self,
        reads: &Reads,
        at: BlockAt,
    ) -> Result<Option<Option<Vec<ReceiptJson>>>> {
        let Some(block) = self.find_block(reads, at)? else {
            return Ok(None);
        };
        let Some(block) = block else {
            return Ok(Some(None));
        };
        let Some(receipts) = self.receipts_of(reads, &block)? else {
            return Ok(None);
        };
        let mut first_log_index = 0;
        let mut out = Vec::with_capacity(receipts.list.len());
        for (index, ((transaction, receipt), bloom)) in block
            .body
            .transactions
            .iter()
            .zip(&receipts.list)
            .zip(&receipts.blooms)
            .enumerate()
        {
            let at = TxContext::new(&block.header, block.hash, index);
            out.push(ReceiptJson::new(
                receipt,
                *bloom,
                transaction,
                block.sender(index)?,
                &at,
                first_log_index,
            ));
            first_log_index += receipt.logs.len();
        }
        Ok(Some(Some(out)))
    }

    /// debug_getRawHeader, debug_getRawBlock and debug_getRawReceipts: the block's consensus
    /// encodings, `null` for a block not stored.
    pub fn raw_block(
        &self,
        reads: &Reads,
        at: BlockAt,
        part: RawPart,
    ) -> Result<Option<Option<serde_json::Value>>> {
        let Some(block) = self.find_block(reads, at)? else {
            return Ok(None);
        };
        let Some(block) = block else {
            return Ok(Some(None));
        };
        let hex = |bytes: Vec<u8>| serde_json::Value::String(Bytes::from(bytes).to_string());
        let value = match part {
            RawPart::Header => hex(alloy_rlp::encode(&block.header)),
            RawPart::Block => {
                let full = alloy_consensus::Block::new(block.header.clone(), block.body.clone());
                hex(alloy_rlp::encode(&full))
            }
            RawPart::Receipts => {
                let Some(receipts) = self.receipts_of(reads, &block)? else {
                    return Ok(None);
                };
                let mut encoded = Vec::with_capacity(receipts.list.len());
                for (receipt, bloom) in receipts.list.iter().zip(&receipts.blooms) {
                    encoded.push(hex(quarry_executor::consensus_receipt(receipt, *bloom)
                        .map_err(RpcError::Storage)?
                        .encoded_2718()));
                }
                serde_json::Value::Array(encoded)
            }
        };
        Ok(Some(Some(value)))
    }

    /// debug_getRawTransaction: the transaction's EIP-2718 encoding.
    pub fn raw_transaction(&self, tx: &Snapshot, hash: B256) -> Result<Option<Bytes>> {
        let Some((block, index)) = self
            .locate_transaction(&Reads::Snapshot(tx), hash)?
            .flatten()
        else {
            return Ok(None);
        };
        Ok(block
            .body
            .transactions
            .get(index)
            .map(|transaction| transaction.encoded_2718().into()))
    }

    /// eth_getRawTransactionByBlock*AndIndex: `null` when the block or the transaction is not
    /// stored.
    pub fn raw_transaction_in(
        &self,
        reads: &Reads,
        at: BlockAt,
        index: u64,
    ) -> Result<Option<Option<Bytes>>> {
        Ok(self.find_block(reads, at)?.map(|block| {
            let block = block?;
            let transaction = block.body.transactions.get(usize::try_from(index).ok()?)?;
            Some(transaction.encoded_2718().into())
        }))
    }

    /// eth_getTransactionBySenderAndNonce (reth's, Otterscan's): the stored transaction
    /// `sender` sent with `nonce`, or `null`. The state history is the index: the sender's
    /// nonce only grows, so a binary search over blocks (about 2 log2(head) seeks) finds the
    /// first block after which it exceeds `nonce`, and that block's senders and nonces give
    /// the transaction. A nonce spent otherwise (a contract's CREATE, an EIP-7702
    /// authorization) has no transaction: `null`.
    pub fn transaction_by_sender_and_nonce(
        &self,
        tx: &Snapshot,
        sender: Address,
        nonce: u64,
    ) -> Result<Option<Json>> {
        let head = Self::head(tx)?;
        let nonce_after = |block: u64| -> Result<u64> {
            let account = if block == head {
                tx.account(&sender)?
            } else {
                tx.account_at(&sender, block)?
            };
            Ok(account.map_or(0, |account| account.nonce))
        };
        // A full node's datadir searches the blocks whose state it keeps; an older nonce
        // reads a pruned state (4444).
        let oldest = tx.oldest_state()?.min(head);
        if nonce_after(head)? <= nonce {
            return Ok(None);
        }
        if nonce_after(oldest)? > nonce {
            // Spent in a block at or before `oldest`: found only in the pruned state.
            return match oldest {
                0 => Ok(None),
                _ => Err(RpcError::Storage(quarry_storage::Error::PrunedHistory {
                    block: oldest - 1,
                    oldest,
                })),
            };
        }
        // nonce_after(low) <= nonce < nonce_after(high), and it never decreases.
        let (mut low, mut high) = (oldest, head);
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if nonce_after(middle)? > nonce {
                high = middle;
            } else {
                low = middle;
            }
        }
        let Some(block) = self.stored_block(tx, high)? else {
            return Ok(None);
        };
        let index = (0..block.body.transactions.len()).find(|&i| {
            block.senders.get(i) == Some(&sender) && block.body.transactions[i].nonce() == nonce
        });
        match index {
            Some(index) => self.transaction_json(&block, index),
            None => Ok(None),
        }
    }

    /// eth_getBlockTransactionCountBy*: `null` for a block not stored.
    pub fn block_transaction_count(
        &self,
        reads: &Reads,
        at: BlockAt,
    ) -> Result<Option<Option<U64>>> {
        Ok(self
            .find_block(reads, at)?
            .map(|block| block.map(|block| U64::from(block.body.transactions.len()))))
    }

    /// eth_getUncleCountBy*: `null` for a block not stored.
    pub fn uncle_count(&self, reads: &Reads, at: BlockAt) -> Result<Option<Option<U64>>> {
        Ok(self
            .find_block(reads, at)?
            .map(|block| block.map(|block| U64::from(block.body.ommers.len()))))
    }
}

/// A stored block and the index of one of its transactions.
type TxInBlock = (Arc<CachedBlock>, usize);

/// Which consensus encoding of a block debug_getRaw* returns.
#[derive(Debug, Clone, Copy)]
pub enum RawPart {
    Header,
    Block,
    Receipts,
}
