//! The answers: each method reads one short MDBX snapshot and builds its JSON shape.
//! Everything here blocks; the server runs it on blocking threads, never on async workers.

use crate::{
    error::{Result, RpcError},
    params::{BlockId, BlockTag},
    types::{BlockJson, ReceiptJson, TransactionJson, TxContext},
};
use alloy_consensus::Header;
use alloy_primitives::{Address, B256};
use quarry_storage::{BlockMark, Database, ReadTx, StoredBody};
use serde::Serialize;

/// Where `safe` and `finalized` point when the config sets them; otherwise the ingest flags
/// recorded in the database decide, and failing those the head (no consensus client here).
#[derive(Debug, Clone, Copy, Default)]
pub struct BlockMarks {
    pub safe: Option<u64>,
    pub finalized: Option<u64>,
}

/// The state one server shares between its requests.
#[derive(Debug, Clone)]
pub struct Node {
    db: Database,
    marks: BlockMarks,
}

/// A canonical block as read from one snapshot.
struct StoredBlock {
    hash: B256,
    header: Header,
    body: StoredBody,
}

impl Node {
    pub fn new(db: Database, marks: BlockMarks) -> Self {
        Self { db, marks }
    }

    fn reader(&self) -> Result<ReadTx> {
        Ok(self.db.reader()?)
    }

    fn head(tx: &ReadTx) -> Result<u64> {
        Ok(tx.head()?.map_or(0, |(number, _)| number))
    }

    /// The block number a tag names now. `pending` is the head: quarry has no mempool.
    fn tag_number(&self, tx: &ReadTx, tag: BlockTag) -> Result<u64> {
        let mark = |configured: Option<u64>, mark: BlockMark| -> Result<u64> {
            match configured {
                Some(number) => Ok(number),
                None => match tx.meta_block(mark)? {
                    Some(number) => Ok(number),
                    None => Self::head(tx),
                },
            }
        };
        match tag {
            BlockTag::Number(number) => Ok(number),
            BlockTag::Earliest => Ok(0),
            BlockTag::Latest | BlockTag::Pending => Self::head(tx),
            BlockTag::Safe => mark(self.marks.safe, BlockMark::Safe),
            BlockTag::Finalized => mark(self.marks.finalized, BlockMark::Finalized),
        }
    }

    /// The stored block a state method names, or geth's "header not found" errors.
    fn state_block(&self, tx: &ReadTx, id: BlockId) -> Result<u64> {
        match id {
            BlockId::Tag(tag) => {
                let number = self.tag_number(tx, tag)?;
                match tx.canonical_hash(number)? {
                    Some(_) => Ok(number),
                    None => Err(RpcError::HeaderNotFound),
                }
            }
            BlockId::Hash {
                hash,
                require_canonical,
            } => {
                let number = tx
                    .block_number(&hash)?
                    .ok_or(RpcError::HeaderForHashNotFound)?;
                // Only canonical blocks are stored; the check guards against that changing.
                if require_canonical && tx.canonical_hash(number)? != Some(hash) {
                    return Err(RpcError::NotCanonical(hash));
                }
                Ok(number)
            }
        }
    }

    fn block_at(tx: &ReadTx, number: u64) -> Result<Option<StoredBlock>> {
        let Some(hash) = tx.canonical_hash(number)? else {
            return Ok(None);
        };
        let (Some(header), Some(body)) = (tx.header(number)?, tx.body(number)?) else {
            return Ok(None);
        };
        Ok(Some(StoredBlock { hash, header, body }))
    }

    fn block_by_hash_in(tx: &ReadTx, hash: &B256) -> Result<Option<StoredBlock>> {
        match tx.block_number(hash)? {
            Some(number) => Self::block_at(tx, number),
            None => Ok(None),
        }
    }

    fn block_json(tx: &ReadTx, block: &StoredBlock, full: bool) -> Result<BlockJson> {
        let number = block.header.number;
        let total_difficulty = tx.total_difficulty(number)?.unwrap_or_default();
        let senders = if full {
            Some(tx.senders(number)?.unwrap_or_default())
        } else {
            None
        };
        Ok(BlockJson::block(
            &block.header,
            block.hash,
            total_difficulty,
            &block.body,
            senders.as_deref(),
        ))
    }

    pub fn block_by_number(&self, tag: BlockTag, full: bool) -> Result<Option<BlockJson>> {
        let tx = self.reader()?;
        let number = self.tag_number(&tx, tag)?;
        Self::block_at(&tx, number)?
            .map(|block| Self::block_json(&tx, &block, full))
            .transpose()
    }

    pub fn block_by_hash(&self, hash: B256, full: bool) -> Result<Option<BlockJson>> {
        let tx = self.reader()?;
        Self::block_by_hash_in(&tx, &hash)?
            .map(|block| Self::block_json(&tx, &block, full))
            .transpose()
    }

    fn uncle_in(block: Option<StoredBlock>, index: u64) -> Option<BlockJson> {
        let block = block?;
        let uncle = block.body.ommers.get(usize::try_from(index).ok()?)?;
        Some(BlockJson::uncle(uncle))
    }

    pub fn uncle_by_block_number(&self, tag: BlockTag, index: u64) -> Result<Option<BlockJson>> {
        let tx = self.reader()?;
        let number = self.tag_number(&tx, tag)?;
        Ok(Self::uncle_in(Self::block_at(&tx, number)?, index))
    }

    pub fn uncle_by_block_hash(&self, hash: B256, index: u64) -> Result<Option<BlockJson>> {
        let tx = self.reader()?;
        Ok(Self::uncle_in(Self::block_by_hash_in(&tx, &hash)?, index))
    }

    fn transaction_in(
        tx: &ReadTx,
        block: Option<StoredBlock>,
        index: u64,
    ) -> Result<Option<TransactionJson>> {
        let Some(block) = block else {
            return Ok(None);
        };
        let Some(index) = usize::try_from(index).ok() else {
            return Ok(None);
        };
        let Some(transaction) = block.body.transactions.get(index) else {
            return Ok(None);
        };
        let from = sender(tx, block.header.number, index)?;
        let at = TxContext::new(&block.header, block.hash, index);
        Ok(Some(TransactionJson::new(transaction, from, &at)))
    }

    pub fn transaction_by_block_number(
        &self,
        tag: BlockTag,
        index: u64,
    ) -> Result<Option<TransactionJson>> {
        let tx = self.reader()?;
        let number = self.tag_number(&tx, tag)?;
        Self::transaction_in(&tx, Self::block_at(&tx, number)?, index)
    }

    pub fn transaction_by_block_hash(
        &self,
        hash: B256,
        index: u64,
    ) -> Result<Option<TransactionJson>> {
        let tx = self.reader()?;
        Self::transaction_in(&tx, Self::block_by_hash_in(&tx, &hash)?, index)
    }

    pub fn transaction_receipt(&self, hash: B256) -> Result<Option<ReceiptJson>> {
        let tx = self.reader()?;
        let Some(location) = tx.tx_location(&hash)? else {
            return Ok(None);
        };
        let number = location.block_number;
        let index = location.index as usize;
        let Some(block) = Self::block_at(&tx, number)? else {
            return Ok(None);
        };
        let receipts = tx.receipts(number)?.unwrap_or_default();
        let (Some(transaction), Some(receipt)) =
            (block.body.transactions.get(index), receipts.get(index))
        else {
            return Ok(None);
        };
        let first_log_index = receipts[..index].iter().map(|r| r.logs.len()).sum();
        let from = sender(&tx, number, index)?;
        let at = TxContext::new(&block.header, block.hash, index);
        Ok(Some(ReceiptJson::new(
            receipt,
            transaction,
            from,
            &at,
            first_log_index,
        )))
    }

    /// The 32-byte value of `slot` of `address` after block `at`.
    pub fn storage_at(&self, address: Address, slot: B256, at: BlockId) -> Result<B256> {
        let tx = self.reader()?;
        let number = self.state_block(&tx, at)?;
        let value = if Some(number) == tx.head()?.map(|(head, _)| head) {
            tx.storage(&address, &slot)?
        } else {
            tx.storage_at(&address, &slot, number)?
        };
        Ok(B256::from(value))
    }

    pub fn rollup_info(&self) -> Result<RollupInfo> {
        let tx = self.reader()?;
        let head = Self::head(&tx)?;
        let timestamp = tx.header(head)?.map_or(0, |h| h.timestamp);
        let syncing = tx
            .sync_target()?
            .is_some_and(|target| target.block > head && process_alive(target.pid));
        let finalized = self.tag_number(&tx, BlockTag::Finalized)?.min(head);
        let last_index = |number: u64| -> Result<Option<u64>> {
            Ok(tx
                .transactions_through(number)?
                .and_then(|count| count.checked_sub(1)))
        };
        Ok(RollupInfo {
            mode: "verifier",
            syncing,
            eth_context: EthContext {
                block_number: head,
                timestamp,
            },
            rollup_context: RollupContext {
                index: last_index(head)?,
                // Deposit (L1-to-L2) transactions cannot be ingested: none is ever queued.
                queue_index: None,
                verified_index: last_index(finalized)?,
            },
        })
    }
}

fn sender(tx: &ReadTx, number: u64, index: usize) -> Result<Address> {
    tx.senders(number)?
        .and_then(|senders| senders.get(index).copied())
        .ok_or_else(|| {
            RpcError::Storage(quarry_storage::Error::Corrupt(format!(
                "no sender stored for transaction {index} of block {number}"
            )))
        })
}

/// Whether the process that announced a sync target still runs (a killed ingest leaves its
/// announcement behind).
fn process_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// `rollup_getInfo`'s object, numbers as JSON numbers as l2geth writes them.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RollupInfo {
    mode: &'static str,
    syncing: bool,
    eth_context: EthContext,
    rollup_context: RollupContext,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct EthContext {
    block_number: u64,
    timestamp: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct RollupContext {
    index: Option<u64>,
    queue_index: Option<u64>,
    verified_index: Option<u64>,
}
