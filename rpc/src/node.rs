//! The answers. Each method finds its block through `Reads`: on an async thread the block
//! cache alone (`Reads::Cache`, which may not know), on the read pool one short MDBX snapshot
//! behind the cache (`Reads::Snapshot`, which always answers). Then it builds the JSON shape.
//!
//! The caches of answers by block number (blocks, and the state calls and eth_getStorageAt
//! read) and the head hold only while no unwind has committed since they were filled; see
//! `Caches` for when they are dropped and when memory may answer.

use crate::call::{Call, revert_reason};
use crate::{
    cache::{BlockCache, BlockReceipts, CachedBlock, OneReceipt, ReceiptCache},
    error::{Result, RpcError},
    logs::Filter,
    params::{BlockId, BlockTag},
    types::{BlockJson, LogJson, ReceiptJson, TransactionJson, TxContext},
};
use alloy_consensus::Header;
use alloy_consensus::constants::KECCAK_EMPTY;
use alloy_eips::eip2718::Encodable2718;
use alloy_hardforks::EthereumHardforks;
use alloy_primitives::{Address, B256, Bytes, U64, U128, U256};
use quarry_executor::{
    CallContext, CallOutcome, ChainSpec, StateCache, StateOverrides,
    call::{HaltReason, TX_GAS_LIMIT_CAP, halt_message},
};
use quarry_storage::{
    BlockMark, Database, LogFilter, LogLimits, LogsOutcome, ReadTx, StoredAccount,
};

use serde::Serialize;
use std::{
    ops::Deref,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::{Duration, Instant},
};

mod info;
mod simulate;
mod traces;

/// eth_call and eth_estimateGas may use at most this many times the block's gas limit.
const GAS_CAP_MULTIPLIER: u64 = 10;

/// Where `safe` and `finalized` point when the config sets them; otherwise the ingest flags
/// recorded in the database decide, and failing those the head (no consensus client here).
#[derive(Debug, Clone, Copy, Default)]
pub struct BlockMarks {
    pub safe: Option<u64>,
    pub finalized: Option<u64>,
}

/// What a method may read.
pub enum Reads<'a> {
    /// Memory only: the answer is `None` when the cache cannot give it.
    Cache,
    /// A database snapshot (behind the caches of its chain): there is always an answer.
    Snapshot(&'a Snapshot),
}

/// One MDBX snapshot with the caches that hold facts about the chain it sees: one per request on
/// the read pool, held only while it is answered. It reads as a `ReadTx`.
pub struct Snapshot {
    tx: ReadTx,
    /// The id of the commit it sees.
    commit: u64,
    blocks: Arc<BlockCache>,
    state: Arc<StateCache>,
    /// When the request being answered must be answered by (a heavy job's, set when it was
    /// queued): work started late gets only what is left, not a whole time limit of its own.
    request_deadline: Option<Instant>,
}

impl Snapshot {
    /// The id of the commit the snapshot sees.
    pub(crate) fn commit(&self) -> u64 {
        self.commit
    }

    /// When work of time limit `timeout` starting now must stop: `timeout` from now, or the
    /// request's own deadline if that comes first.
    pub(crate) fn deadline(&self, timeout: Duration) -> Instant {
        let own = Instant::now() + timeout;
        self.request_deadline
            .map_or(own, |request| request.min(own))
    }
}

impl Deref for Snapshot {
    type Target = ReadTx;

    fn deref(&self) -> &ReadTx {
        &self.tx
    }
}

/// A block as the by-number and by-hash methods name it.
#[derive(Debug, Clone, Copy)]
pub enum BlockAt {
    Tag(BlockTag),
    Hash(B256),
}

/// Decoded blocks kept across requests: bounded by the blocks' RLP size.
const BLOCK_CACHE_BYTES: usize = 64 << 20;
/// Decoded receipts kept across requests, by block hash: bounded by their encoded size.
const RECEIPT_CACHE_BYTES: usize = 64 << 20;
/// eth_getTransactionReceipt reads a block's receipts whole, and keeps them for the block's
/// other transactions, when they take at most this many bytes; from a larger block it reads
/// only the one receipt.
const WHOLE_RECEIPTS_BYTES: usize = 256 << 10;

/// The state one server shares between its requests.
#[derive(Debug, Clone)]
pub struct Node {
    db: Database,
    marks: BlockMarks,
    /// Answers by block number and the head, and the commit they were last checked against.
    caches: Arc<Mutex<Caches>>,
    /// Receipts by block hash: true on every chain, so kept across unwinds.
    receipts: Arc<ReceiptCache>,
    /// The stored chain's rules; `None` for a database no ingest has written yet.
    spec: Option<Arc<ChainSpec>>,
    /// The wall-clock limit of one eth_call or one whole eth_estimateGas.
    call_timeout: Duration,
    logs: LogsConfig,
    /// The network this one is a rollup of: rollup_getInfo's ethContext is its head.
    l1: Option<Database>,
    /// The last tip suggestion and the head it was computed at (by hash: still right after an
    /// unwind, since a head hash names its whole chain).
    last_tip: Arc<Mutex<TipSuggestion>>,
}

/// What memory knows about the stored chain: decoded blocks by number (and, through them, by
/// block and transaction hash), the accounts and slots calls and eth_getStorageAt read, by
/// block number, and the head.
///
/// A block number names the same block only until an unwind removes it, which another process
/// (an ingest, `quarry follow`) may commit at any time; each unwind adds one to the database's
/// unwind count in the same commit. So:
///
/// - every entry was read from a snapshot whose unwind count was `unwinds`, and holds for
///   every commit with that count;
/// - each snapshot is checked when it is opened (`Node::reader`): one with a higher count
///   replaces the caches with empty ones (bytecode by code hash is kept) before it answers
///   anything; one with a lower count (begun before an unwind a newer snapshot has seen) gets
///   empty caches of its own, dropped with it, so it neither reads nor fills the shared ones;
/// - memory answers a request (`Node::in_memory`) only while the database's last commit is
///   `commit`, whose count is `unwinds`, checked AFTER the cache is read: if no commit landed
///   before that check, no unwind did, and the answer was true at that instant; if one did, the
///   request goes to a snapshot, which alone can tell whether the commit was an unwind.
///
/// An entry a slow snapshot adds after the caches were replaced goes to the caches that snapshot
/// was given, never to the new ones, so no interleaving brings a removed block back.
#[derive(Debug)]
struct Caches {
    /// The newest commit a snapshot has checked the caches against.
    commit: u64,
    /// The unwind count at `commit`.
    unwinds: u64,
    /// The head at `commit`, once a snapshot of that commit has read it: `latest` from memory.
    head: Option<u64>,
    blocks: Arc<BlockCache>,
    /// Bytecode, accounts and slots that calls and eth_getStorageAt read.
    state: Arc<StateCache>,
}

/// geth's fee oracle remembers its last answer: it is returned again while the head has not
/// moved, and stands in for blocks that give no sample.
#[derive(Debug, Clone, Copy)]
struct TipSuggestion {
    head: Option<B256>,
    tip: u128,
}

/// eth_getLogs' limits.
#[derive(Debug, Clone, Copy)]
pub struct LogsConfig {
    pub max_results: usize,
    pub timeout: Duration,
    pub max_params: usize,
    pub use_index: bool,
}

impl Node {
    pub fn new(
        db: Database,
        marks: BlockMarks,
        call_timeout: Duration,
        logs: LogsConfig,
        l1: Option<Database>,
    ) -> Result<Self> {
        let tx = db.reader()?;
        let spec = ChainSpec::stored(&tx).map_err(|e| match e {
            quarry_executor::Error::Storage(e) => RpcError::Storage(e),
            other => RpcError::Internal(other.to_string()),
        })?;
        let caches = Caches {
            commit: tx.commit_id()?,
            unwinds: tx.unwind_count()?,
            head: None,
            blocks: Arc::new(BlockCache::new(BLOCK_CACHE_BYTES)),
            state: Arc::default(),
        };
        Ok(Self {
            db,
            marks,
            caches: Arc::new(Mutex::new(caches)),
            receipts: Arc::new(ReceiptCache::new(RECEIPT_CACHE_BYTES)),
            spec: spec.map(Arc::new),
            call_timeout,
            logs,
            l1,
            last_tip: Arc::new(Mutex::new(TipSuggestion {
                head: None,
                tip: DEFAULT_TIP,
            })),
        })
    }

    /// The wall-clock limit of one eth_call or one whole eth_estimateGas.
    pub fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    /// The wall-clock limit of one eth_getLogs query.
    pub fn logs_timeout(&self) -> Duration {
        self.logs.timeout
    }

    fn caches(&self) -> MutexGuard<'_, Caches> {
        self.caches.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh snapshot, one per request, with the caches of the chain it sees: the shared ones,
    /// after dropping them if an unwind committed since they were filled (see `Caches`).
    pub fn reader(&self) -> Result<Snapshot> {
        self.snapshot(self.db.reader()?)
    }

    /// A fresh snapshot for a request that must be answered by `deadline`.
    pub fn reader_until(&self, deadline: Instant) -> Result<Snapshot> {
        let mut snapshot = self.reader()?;
        snapshot.request_deadline = Some(deadline);
        Ok(snapshot)
    }

    /// `tx` with the caches of the chain it sees (see `Caches`).
    fn snapshot(&self, tx: ReadTx) -> Result<Snapshot> {
        let commit = tx.commit_id()?;
        let snapshot = |caches: &Caches, tx| Snapshot {
            tx,
            commit,
            blocks: caches.blocks.clone(),
            state: caches.state.clone(),
            request_deadline: None,
        };
        {
            // The common case: nothing was committed since the caches were last checked.
            let caches = self.caches();
            if caches.commit == commit {
                return Ok(snapshot(&caches, tx));
            }
        }
        let unwinds = tx.unwind_count()?;
        let mut caches = self.caches();
        if unwinds > caches.unwinds {
            // An unwind committed since the caches were filled: any number may now name another
            // block, or none. Start over (code by hash holds on every branch), before this
            // snapshot answers anything and before memory may answer at this commit.
            tracing::info!(
                commit,
                unwinds,
                "the stored chain was unwound: dropping the caches of blocks and state by number"
            );
            let state = Arc::new(caches.state.after_unwind());
            *caches = Caches {
                commit,
                unwinds,
                head: None,
                blocks: Arc::new(BlockCache::new(BLOCK_CACHE_BYTES)),
                state,
            };
        } else if unwinds < caches.unwinds {
            // Begun before an unwind that a newer snapshot has seen: the shared caches hold the
            // newer chain. This one reads its own chain, through caches of its own.
            return Ok(Snapshot {
                tx,
                commit,
                blocks: Arc::new(BlockCache::new(BLOCK_CACHE_BYTES)),
                state: Arc::new(caches.state.after_unwind()),
                request_deadline: None,
            });
        } else if commit > caches.commit {
            // Only blocks were added since: the caches hold at this commit too.
            caches.commit = commit;
            caches.head = None;
        }
        Ok(snapshot(&caches, tx))
    }

    /// An answer from memory alone, or `None` when memory cannot give it. `read` looks in the
    /// caches as they were last checked; its answer stands only if the database's last commit
    /// is still the one they were checked against, and that is asked after `read`: a commit,
    /// perhaps an unwind, that lands before the check sends the request to a snapshot; one that
    /// lands after it came after the answer was read, which was then still true. Asking first
    /// would let an unwind commit between the check and the read. The check reads MDBX's meta
    /// pages (memory, no snapshot) and is made only when memory had the answer.
    fn in_memory<T>(&self, read: impl FnOnce(&Caches) -> Option<T>) -> Result<Option<T>> {
        let (commit, found) = {
            let caches = self.caches();
            (caches.commit, read(&caches))
        };
        let Some(found) = found else {
            return Ok(None);
        };
        Ok((self.db.last_commit_id()? == commit).then_some(found))
    }

    /// The id of the newest commit by any process (a read of MDBX's meta pages).
    pub(crate) fn last_commit_id(&self) -> Result<u64> {
        Ok(self.db.last_commit_id()?)
    }

    /// The most addresses plus topics a log filter may name.
    pub(crate) fn max_log_params(&self) -> usize {
        self.logs.max_params
    }

    fn head(tx: &ReadTx) -> Result<u64> {
        Ok(tx.head()?.map_or(0, |(number, _)| number))
    }

    /// The snapshot's head, kept for `latest` from memory when the snapshot is of the commit the
    /// caches were last checked against (a snapshot of an older commit knows an older head).
    fn snapshot_head(&self, tx: &Snapshot) -> Result<Option<u64>> {
        let head = tx.head()?.map(|(number, _)| number);
        if let Some(number) = head {
            let mut caches = self.caches();
            if caches.commit == tx.commit {
                caches.head = Some(number);
            }
        }
        Ok(head)
    }

    /// The block number a tag names now. `pending` is the head: quarry has no mempool.
    fn tag_number(&self, tx: &Snapshot, tag: BlockTag) -> Result<u64> {
        let mark = |configured: Option<u64>, mark: BlockMark| -> Result<u64> {
            if let Some(number) = configured {
                return Ok(number);
            }
            match tx.meta_block(mark)? {
                Some(number) => Ok(number),
                None => Self::head(tx),
            }
        };
        match tag {
            BlockTag::Number(number) => Ok(number),
            BlockTag::Earliest => Ok(0),
            BlockTag::Latest | BlockTag::Pending => Ok(self.snapshot_head(tx)?.unwrap_or(0)),
            BlockTag::Safe => mark(self.marks.safe, BlockMark::Safe),
            BlockTag::Finalized => mark(self.marks.finalized, BlockMark::Finalized),
        }
    }

    /// The stored block a state method names, and whether it is the head (whose state the
    /// plain tables hold), or geth's "header not found" errors.
    fn state_block(&self, tx: &Snapshot, id: BlockId) -> Result<(u64, bool)> {
        let head = self.snapshot_head(tx)?.ok_or(RpcError::HeaderNotFound)?;
        let number = match id {
            // The head is read once, here, for the most common case.
            BlockId::Tag(BlockTag::Latest | BlockTag::Pending) => head,
            BlockId::Tag(tag) => self.tag_number(tx, tag)?,
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
                number
            }
        };
        // The canonical chain is every block from genesis to the head.
        if number > head {
            return Err(RpcError::HeaderNotFound);
        }
        Ok((number, number == head))
    }

    /// Block `number` of the snapshot, through the cache.
    pub(crate) fn stored_block(
        &self,
        tx: &Snapshot,
        number: u64,
    ) -> Result<Option<Arc<CachedBlock>>> {
        if let Some(block) = tx.blocks.by_number(number) {
            return Ok(Some(block));
        }
        // Not cached: it may still be missing from this snapshot (a number past the head).
        let Some(block) = CachedBlock::read(tx, number)? else {
            return Ok(None);
        };
        let block = Arc::new(block);
        tx.blocks.insert(block.clone());
        Ok(Some(block))
    }

    /// The block `at` names: `None` when only the cache was asked and it cannot tell.
    fn find_block(&self, reads: &Reads, at: BlockAt) -> Result<Option<Option<Arc<CachedBlock>>>> {
        match (reads, at) {
            (Reads::Cache, at) => Ok(self
                .in_memory(|memory| {
                    let number = match at {
                        BlockAt::Tag(BlockTag::Number(number)) => number,
                        BlockAt::Tag(BlockTag::Latest | BlockTag::Pending) => memory.head?,
                        BlockAt::Hash(hash) => return memory.blocks.by_hash(&hash),
                        // The other marks are read from the database.
                        BlockAt::Tag(_) => return None,
                    };
                    memory.blocks.by_number(number)
                })?
                .map(Some)),
            (Reads::Snapshot(tx), at) => {
                let number = match at {
                    BlockAt::Tag(tag) => Some(self.tag_number(tx, tag)?),
                    BlockAt::Hash(hash) => match tx.blocks.by_hash(&hash) {
                        Some(block) => return Ok(Some(Some(block))),
                        None => tx.block_number(&hash)?,
                    },
                };
                match number {
                    Some(number) => self.stored_block(tx, number).map(Some),
                    None => Ok(Some(None)),
                }
            }
        }
    }

    pub fn block(
        &self,
        reads: &Reads,
        at: BlockAt,
        full: bool,
    ) -> Result<Option<Option<BlockJson>>> {
        Ok(self.find_block(reads, at)?.map(|block| {
            block.map(|block| {
                BlockJson::block(
                    &block.header,
                    block.hash,
                    block.size,
                    block.total_difficulty,
                    &block.body,
                    &block.uncle_hashes,
                    full.then_some(block.senders.as_slice()),
                )
            })
        }))
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
    ) -> Result<Option<Option<TransactionJson>>> {
        let Some(block) = self.find_block(reads, at)? else {
            return Ok(None);
        };
        let Some(block) = block else {
            return Ok(Some(None));
        };
        let Some(index) = usize::try_from(index)
            .ok()
            .filter(|&index| index < block.body.transactions.len())
        else {
            return Ok(Some(None));
        };
        let at = TxContext::new(&block.header, block.hash, index);
        Ok(Some(Some(TransactionJson::new(
            &block.body.transactions[index],
            block.sender(index)?,
            &at,
        ))))
    }

    /// The block holding transaction `hash` and its index there: `Some(None)` when it is not
    /// stored, `None` when only the cache was asked and it cannot tell.
    fn locate_transaction(&self, reads: &Reads, hash: B256) -> Result<Option<Option<TxInBlock>>> {
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

    pub fn transaction_receipt(
        &self,
        reads: &Reads,
        hash: B256,
    ) -> Result<Option<Option<ReceiptJson>>> {
        let Some(found) = self.locate_transaction(reads, hash)? else {
            return Ok(None);
        };
        let Some((block, index)) = found else {
            return Ok(Some(None));
        };
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
        let whole = match self.receipts.block(&block.hash) {
            Some(receipts) => Some(receipts),
            None => match self.receipts.one(&block.hash, index) {
                Some(one) => return answer(&one.receipt, one.bloom, one.first_log_index),
                None => match reads {
                    Reads::Cache => return Ok(None),
                    Reads::Snapshot(tx) => {
                        let size = tx.receipts_size(block.header.number)?.unwrap_or_default();
                        if size <= WHOLE_RECEIPTS_BYTES {
                            self.receipts_of(reads, &block)?
                        } else {
                            None
                        }
                    }
                },
            },
        };
        if let Some(receipts) = whole {
            let (Some(receipt), Some(bloom)) =
                (receipts.list.get(index), receipts.blooms.get(index))
            else {
                return Ok(Some(None));
            };
            let first_log_index = receipts.list[..index].iter().map(|r| r.logs.len()).sum();
            return answer(receipt, *bloom, first_log_index);
        }
        // A block of large receipts: this one alone, kept alone.
        let Reads::Snapshot(tx) = reads else {
            return Ok(None);
        };
        let Some((receipt, first_log_index)) = tx.receipt(block.header.number, index)? else {
            return Ok(Some(None));
        };
        let one = Arc::new(OneReceipt::new(receipt, first_log_index as usize));
        self.receipts.insert_one(block.hash, index, one.clone());
        answer(&one.receipt, one.bloom, one.first_log_index)
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

    /// The account `address` after block `at` (`None`: it does not exist).
    fn account_at(
        &self,
        tx: &Snapshot,
        address: Address,
        at: BlockId,
    ) -> Result<Option<StoredAccount>> {
        let (number, is_head) = self.state_block(tx, at)?;
        Ok(if is_head {
            tx.account(&address)?
        } else {
            tx.account_at(&address, number)?
        })
    }

    /// eth_getBalance: zero for an account that does not exist.
    pub fn balance(&self, tx: &Snapshot, address: Address, at: BlockId) -> Result<U256> {
        Ok(self
            .account_at(tx, address, at)?
            .map_or(U256::ZERO, |account| account.balance))
    }

    /// eth_getTransactionCount: the account's nonce.
    pub fn transaction_count(&self, tx: &Snapshot, address: Address, at: BlockId) -> Result<U64> {
        Ok(U64::from(
            self.account_at(tx, address, at)?
                .map_or(0, |account| account.nonce),
        ))
    }

    /// eth_getCode: `0x` for an account without code (an EIP-7702 account shows its
    /// delegation designator).
    pub fn code(&self, tx: &Snapshot, address: Address, at: BlockId) -> Result<Bytes> {
        let Some(account) = self.account_at(tx, address, at)? else {
            return Ok(Bytes::new());
        };
        if account.code_hash == KECCAK_EMPTY || account.code_hash.is_zero() {
            return Ok(Bytes::new());
        }
        tx.bytecode(&account.code_hash)?.ok_or_else(|| {
            RpcError::Storage(quarry_storage::Error::Corrupt(format!(
                "no bytecode stored for code hash {}",
                account.code_hash
            )))
        })
    }

    pub fn chain_id(&self) -> Result<U64> {
        Ok(U64::from(
            self.spec.as_ref().ok_or(RpcError::NoChain)?.chain_id,
        ))
    }

    pub fn block_number(&self, tx: &Snapshot) -> Result<U64> {
        Ok(U64::from(Self::head(tx)?))
    }

    /// eth_feeHistory with geth's rules: up to `MAX_FEE_HISTORY` blocks ending at `newest`,
    /// base fees (and blob base fees) including the block after it, and per block the
    /// effective tips at the given percentiles of gas used.
    pub fn fee_history(
        &self,
        tx: &Snapshot,
        count: u64,
        newest: BlockTag,
        percentiles: &[f64],
    ) -> Result<FeeHistory> {
        let spec = self.spec.as_ref().ok_or(RpcError::NoChain)?;
        let newest = self.tag_number(tx, newest)?;
        if newest > Self::head(tx)? {
            return Err(RpcError::HeaderNotFound);
        }
        let count = count.min(MAX_FEE_HISTORY).min(newest + 1);
        let oldest = newest + 1 - count;
        let mut history = FeeHistory {
            oldest_block: U64::from(oldest),
            reward: (!percentiles.is_empty()).then(Vec::new),
            base_fee_per_gas: Vec::new(),
            gas_used_ratio: Vec::new(),
            base_fee_per_blob_gas: Vec::new(),
            blob_gas_used_ratio: Vec::new(),
        };
        if count == 0 {
            return Ok(history);
        }
        let mut last = None;
        for number in oldest..=newest {
            let block = self
                .stored_block(tx, number)?
                .ok_or(RpcError::HeaderNotFound)?;
            let header = &block.header;
            history
                .base_fee_per_gas
                .push(U128::from(header.base_fee_per_gas.unwrap_or_default()));
            history
                .gas_used_ratio
                .push(GoFloat(header.gas_used as f64 / header.gas_limit as f64));
            let blob_params = spec.blob_params_at(header.timestamp);
            history.base_fee_per_blob_gas.push(U128::from(
                match (header.excess_blob_gas, blob_params) {
                    (Some(excess), Some(params)) => params.calc_blob_fee(excess),
                    _ => 0,
                },
            ));
            history
                .blob_gas_used_ratio
                .push(GoFloat(match (header.blob_gas_used, blob_params) {
                    (Some(used), Some(params)) if params.max_blob_gas_per_block() > 0 => {
                        used as f64 / params.max_blob_gas_per_block() as f64
                    }
                    _ => 0.0,
                }));
            if let Some(rewards) = history.reward.as_mut() {
                let receipts = self
                    .receipts_of(&Reads::Snapshot(tx), &block)?
                    .ok_or(RpcError::HeaderNotFound)?;
                rewards.push(block_rewards(&block, &receipts.list, percentiles));
            }
            last = Some(block);
        }
        if let Some(block) = last {
            let header = &block.header;
            history.base_fee_per_gas.push(U128::from(
                quarry_executor::verify::expected_base_fee(spec, header).unwrap_or_default(),
            ));
            let next_blob_fee =
                quarry_executor::verify::expected_excess_blob_gas(spec, header.timestamp, header)
                    .zip(spec.blob_params_at(header.timestamp))
                    .map_or(0, |(excess, params)| params.calc_blob_fee(excess));
            history
                .base_fee_per_blob_gas
                .push(U128::from(next_blob_fee));
        }
        Ok(history)
    }

    /// eth_blobBaseFee: the blob base fee of the head block, as geth answers (`null` before
    /// Cancun).
    pub fn blob_base_fee(&self, tx: &Snapshot) -> Result<Option<alloy_primitives::U128>> {
        let spec = self.spec.as_ref().ok_or(RpcError::NoChain)?;
        let head = Self::head(tx)?;
        let header = tx.header(head)?.ok_or(RpcError::HeaderNotFound)?;
        let (Some(excess), Some(params)) = (
            header.excess_blob_gas,
            spec.blob_params_at(header.timestamp),
        ) else {
            return Ok(None);
        };
        Ok(Some(alloy_primitives::U128::from(
            params.calc_blob_fee(excess),
        )))
    }

    /// eth_maxPriorityFeePerGas: geth's fee oracle over the last `TIP_BLOCKS` blocks (more
    /// when blocks give fewer than two samples): the three lowest effective tips of each
    /// block, ignoring tips under 2 wei and the miner's own transactions, at the 60th
    /// percentile, at most 500 gwei.
    pub fn suggest_tip(&self, tx: &Snapshot) -> Result<U128> {
        let (head, head_hash) = tx.head()?.ok_or(RpcError::HeaderNotFound)?;
        self.tip_at(tx, head, head_hash).map(U128::from)
    }

    /// The suggested tip with block `head` (hash `head_hash`) as the head.
    fn tip_at(&self, tx: &Snapshot, head: u64, head_hash: B256) -> Result<u128> {
        let last = *self.last_tip.lock().map_err(|_| poisoned())?;
        if last.head == Some(head_hash) {
            return Ok(last.tip);
        }
        let tip = suggest_tip(head, last.tip, |number| {
            let block = self
                .stored_block(tx, number)?
                .ok_or(RpcError::HeaderNotFound)?;
            lowest_tips(&block)
        })?;
        *self.last_tip.lock().map_err(|_| poisoned())? = TipSuggestion {
            head: Some(head_hash),
            tip,
        };
        Ok(tip)
    }

    /// eth_gasPrice: the suggested tip plus the head's base fee, as geth answers.
    pub fn gas_price(&self, tx: &Snapshot) -> Result<U128> {
        let (head, head_hash) = tx.head()?.ok_or(RpcError::HeaderNotFound)?;
        let tip = self.tip_at(tx, head, head_hash)?;
        let header = tx.header(head)?.ok_or(RpcError::HeaderNotFound)?;
        Ok(U128::from(tip.saturating_add(u128::from(
            header.base_fee_per_gas.unwrap_or_default(),
        ))))
    }

    /// eth_syncing: `false`, or geth's progress object while a live ingest is importing
    /// towards a block above the head.
    pub fn syncing(&self, tx: &Snapshot) -> Result<Syncing> {
        let head = Self::head(tx)?;
        Ok(match tx.sync_target()? {
            Some(target) if target.block > head && process_alive(target.pid) => Syncing::Progress {
                starting_block: U64::from(head),
                current_block: U64::from(head),
                highest_block: U64::from(target.block),
            },
            _ => Syncing::Done(false),
        })
    }

    /// eth_getTransactionByHash.
    pub fn transaction_by_hash(
        &self,
        reads: &Reads,
        hash: B256,
    ) -> Result<Option<Option<TransactionJson>>> {
        let Some(found) = self.locate_transaction(reads, hash)? else {
            return Ok(None);
        };
        let Some((block, index)) = found else {
            return Ok(Some(None));
        };
        let Some(transaction) = block.body.transactions.get(index) else {
            return Ok(Some(None));
        };
        let at = TxContext::new(&block.header, block.hash, index);
        Ok(Some(Some(TransactionJson::new(
            transaction,
            block.sender(index)?,
            &at,
        ))))
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
                    encoded.push(hex(consensus_receipt(receipt, *bloom)?.encoded_2718()));
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

    /// The 32-byte value of `slot` of `address` after block `at`. Values read are kept in the
    /// state cache that calls share; from memory, `latest` and block numbers are answered.
    pub fn storage_at(
        &self,
        reads: &Reads,
        address: Address,
        slot: B256,
        at: BlockId,
    ) -> Result<Option<B256>> {
        let index = U256::from_be_bytes(slot.0);
        let tx = match reads {
            Reads::Cache => {
                let value = self.in_memory(|memory| {
                    let number = match at {
                        BlockId::Tag(BlockTag::Latest | BlockTag::Pending) => memory.head?,
                        // Only a stored block's slots are cached.
                        BlockId::Tag(BlockTag::Number(number)) => number,
                        _ => return None,
                    };
                    memory.state.slot(number, address, index)
                })?;
                return Ok(value.map(B256::from));
            }
            Reads::Snapshot(tx) => tx,
        };
        let (number, is_head) = self.state_block(tx, at)?;
        let value = if is_head {
            tx.storage(&address, &slot)?
        } else {
            tx.storage_at(&address, &slot, number)?
        };
        tx.state.remember_slot(number, address, index, value);
        Ok(Some(B256::from(value)))
    }

    /// Runs `call` against the state after block `at` and returns what it returned.
    pub fn call(
        &self,
        tx: &Snapshot,
        call: &Call,
        at: BlockId,
        overrides: &StateOverrides,
    ) -> Result<Bytes> {
        self.with_call_context(tx, call, at, overrides, |context, header| {
            // The spec's cap: 10x the block's gas limit, the default too; more is lowered to it.
            let cap = header.gas_limit.saturating_mul(GAS_CAP_MULTIPLIER);
            let gas = call.request.gas.map_or(cap, |gas| gas.min(cap));
            match context.run(&call.request, gas)? {
                CallOutcome::Success { output, .. } => Ok(output),
                failed => Err(call_failure(failed, None)),
            }
        })
    }

    /// geth's gas estimate for `call` at block `at`.
    pub fn estimate_gas(
        &self,
        tx: &Snapshot,
        call: &Call,
        at: BlockId,
        overrides: &StateOverrides,
    ) -> Result<U64> {
        self.with_call_context(tx, call, at, overrides, |context, header| {
            let mut cap = header.gas_limit.saturating_mul(GAS_CAP_MULTIPLIER);
            // geth keeps estimates under the EIP-7825 per-transaction cap once Osaka is active.
            if context.spec.is_osaka_active_at_timestamp(header.timestamp) {
                cap = cap.min(TX_GAS_LIMIT_CAP);
            }
            let hi = call.request.gas.unwrap_or(header.gas_limit).min(cap);
            match context.estimate_gas(&call.request, hi)? {
                Ok(gas) => Ok(U64::from(gas)),
                Err(failed) => Err(call_failure(failed, Some(hi))),
            }
        })
    }

    /// eth_createAccessList: geth's access list for `call` at block `at` (with state overrides,
    /// as eth_call takes them), and the gas the call uses with it. A call that reverts or halts
    /// still answers, with geth's `error`.
    pub fn create_access_list(
        &self,
        tx: &Snapshot,
        call: &Call,
        at: BlockId,
        overrides: &StateOverrides,
    ) -> Result<AccessListJson> {
        self.with_call_context(tx, call, at, overrides, |context, header| {
            let cap = header.gas_limit.saturating_mul(GAS_CAP_MULTIPLIER);
            let gas = call.request.gas.map_or(cap, |gas| gas.min(cap));
            let found = context.create_access_list(&call.request, gas)?;
            let (gas_used, error) = match &found.outcome {
                CallOutcome::Success { gas_used, .. } => (*gas_used, None),
                // geth reports the bare error here, without the revert reason.
                CallOutcome::Revert { gas_used, .. } => {
                    (*gas_used, Some("execution reverted".to_string()))
                }
                CallOutcome::Halt { reason, gas_used } => (*gas_used, Some(halt_message(reason))),
            };
            Ok(AccessListJson {
                access_list: found.access_list,
                error,
                gas_used: U64::from(gas_used),
            })
        })
    }

    fn with_call_context<T>(
        &self,
        tx: &Snapshot,
        call: &Call,
        at: BlockId,
        overrides: &StateOverrides,
        run: impl FnOnce(&CallContext<'_>, &Header) -> Result<T>,
    ) -> Result<T> {
        let spec = self.spec.as_deref().ok_or(RpcError::NoChain)?;
        if let Some(chain_id) = call.chain_id.filter(|&id| id != spec.chain_id) {
            return Err(RpcError::InvalidParams(format!(
                "invalid argument 0 (transaction): chainId does not match node's (have={chain_id}, want={})",
                spec.chain_id
            )));
        }
        let (number, is_head) = self.state_block(tx, at)?;
        let header = tx.header(number)?.ok_or(RpcError::HeaderNotFound)?;
        let context = CallContext {
            spec,
            tx,
            header: &header,
            is_head,
            overrides,
            cache: &tx.state,
            deadline: tx.deadline(self.call_timeout),
            timeout: self.call_timeout,
        };
        run(&context, &header)
    }

    /// eth_getLogs: resolves the range as geth does, then runs the query within the limits.
    pub fn logs(&self, tx: &Snapshot, filter: &Filter) -> Result<Vec<LogJson>> {
        filter.check(self.logs.max_params)?;
        let (from, to) = match filter.block_hash {
            Some(hash) => {
                let number = tx.block_number(&hash)?.ok_or(RpcError::UnknownBlock)?;
                (number, number)
            }
            None => {
                let from = self.tag_number(tx, filter.from.unwrap_or(BlockTag::Latest))?;
                let to = self.tag_number(tx, filter.to.unwrap_or(BlockTag::Latest))?;
                if from > to {
                    return Err(RpcError::InvalidParams("invalid block range params".into()));
                }
                let head = Self::head(tx)?;
                if to > head {
                    return Err(RpcError::InvalidParams(format!(
                        "block range extends beyond current head block: requested {to}, head {head}"
                    )));
                }
                (from, to)
            }
        };
        let query = LogFilter {
            from,
            to,
            addresses: filter.addresses.clone(),
            topics: filter.topics.clone(),
        };
        let limits = LogLimits {
            max_results: self.logs.max_results,
            deadline: tx.deadline(self.logs.timeout),
            use_index: self.logs.use_index,
        };
        match tx.logs(&query, limits)? {
            LogsOutcome::Found(logs) => Ok(logs.iter().map(LogJson::located).collect()),
            LogsOutcome::TooMany { fits_through } => Err(RpcError::TooManyLogs {
                from,
                to: fits_through.unwrap_or(from),
                limit: self.logs.max_results,
            }),
            LogsOutcome::TimedOut => Err(RpcError::LogsTimeout),
        }
    }

    pub fn rollup_info(&self, tx: &Snapshot) -> Result<RollupInfo> {
        let head = Self::head(tx)?;
        let eth_context = match &self.l1 {
            Some(l1) => {
                let l1 = l1.reader()?;
                let l1_head = Self::head(&l1)?;
                EthContext {
                    block_number: l1_head,
                    timestamp: l1.header(l1_head)?.map_or(0, |h| h.timestamp),
                }
            }
            None => EthContext {
                block_number: head,
                timestamp: tx.header(head)?.map_or(0, |h| h.timestamp),
            },
        };
        let syncing = tx
            .sync_target()?
            .is_some_and(|target| target.block > head && process_alive(target.pid));
        let finalized = self.tag_number(tx, BlockTag::Finalized)?.min(head);
        let last_index = |number: u64| -> Result<Option<u64>> {
            Ok(tx
                .transactions_through(number)?
                .and_then(|count| count.checked_sub(1)))
        };
        Ok(RollupInfo {
            mode: "verifier",
            syncing,
            eth_context,
            rollup_context: RollupContext {
                index: last_index(head)?,
                // Deposit (L1-to-L2) transactions cannot be ingested: none is ever queued.
                queue_index: None,
                verified_index: last_index(finalized)?,
            },
        })
    }
}

/// The error for a call that did not succeed: a revert (code 3, with geth's reason) or a halt.
/// An estimate that runs out of gas at its highest bound `estimate_cap` says so as geth does.
fn call_failure(outcome: CallOutcome, estimate_cap: Option<u64>) -> RpcError {
    match outcome {
        CallOutcome::Revert { output, .. } => RpcError::Reverted {
            reason: revert_reason(&output),
            payload: output,
        },
        CallOutcome::Halt { reason, .. } => match (estimate_cap, &reason) {
            (Some(cap), HaltReason::OutOfGas(_)) => {
                RpcError::Execution(format!("gas required exceeds allowance ({cap})"))
            }
            _ => RpcError::Execution(halt_message(&reason)),
        },
        CallOutcome::Success { .. } => {
            RpcError::Internal("a successful call reported as failed".into())
        }
    }
}

/// Whether the process that announced a sync target still runs (a killed ingest leaves its
/// announcement behind).
pub(crate) fn process_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// eth_createAccessList's answer, in geth's field order.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessListJson {
    access_list: alloy_eips::eip2930::AccessList,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    gas_used: U64,
}

/// eth_feeHistory answers at most this many blocks, as geth's default.
const MAX_FEE_HISTORY: u64 = 1024;

/// eth_feeHistory's answer, in geth's field order.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FeeHistory {
    oldest_block: U64,
    #[serde(skip_serializing_if = "Option::is_none")]
    reward: Option<Vec<Vec<U128>>>,
    base_fee_per_gas: Vec<U128>,
    gas_used_ratio: Vec<GoFloat>,
    base_fee_per_blob_gas: Vec<U128>,
    blob_gas_used_ratio: Vec<GoFloat>,
}

/// A float written as Go's encoding/json writes it (geth's ratios): integral values without a
/// fraction (`0`, `1`), exponents below 1e-6 with two digits (`1e-07`).
#[derive(Debug, Clone, Copy)]
pub struct GoFloat(pub f64);

impl Serialize for GoFloat {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        let x = self.0;
        if x.fract() == 0.0 && x.abs() < 1e21 {
            return serializer.serialize_i64(x as i64);
        }
        if x.abs() >= 1e-6 && x.abs() < 1e21 {
            return serializer.serialize_f64(x);
        }
        let text = format!("{x:e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let (sign, digits) = match exponent.strip_prefix('-') {
            Some(digits) => ("-", digits),
            None => ("+", exponent),
        };
        let go = format!("{mantissa}e{sign}{digits:0>2}");
        let raw =
            serde_json::value::RawValue::from_string(go).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

/// The effective tips at `percentiles` of a block's gas used, as geth's fee oracle computes
/// them: transactions sorted by tip, each weighing its gas used.
fn block_rewards(
    block: &CachedBlock,
    receipts: &[quarry_storage::StoredReceipt],
    percentiles: &[f64],
) -> Vec<U128> {
    let base_fee = block.header.base_fee_per_gas;
    let mut tips: Vec<(u128, u64)> = block
        .body
        .transactions
        .iter()
        .zip(receipts)
        .map(|(transaction, receipt)| {
            (
                effective_tip(transaction, base_fee).unwrap_or_default(),
                receipt.gas_used,
            )
        })
        .collect();
    if tips.is_empty() {
        return vec![U128::ZERO; percentiles.len()];
    }
    tips.sort_by_key(|&(tip, _)| tip);
    let mut index = 0;
    let mut gas_so_far = tips[0].1;
    percentiles
        .iter()
        .map(|p| {
            let threshold = (block.header.gas_used as f64 * p / 100.0) as u64;
            while gas_so_far < threshold && index < tips.len() - 1 {
                index += 1;
                gas_so_far += tips[index].1;
            }
            U128::from(tips[index].0)
        })
        .collect()
}

/// What a transaction pays its block's miner per gas: `None` when its fee cap is under the
/// base fee.
fn effective_tip(
    transaction: &impl alloy_consensus::Transaction,
    base_fee: Option<u64>,
) -> Option<u128> {
    match base_fee {
        Some(base_fee) => transaction.effective_tip_per_gas(base_fee),
        None => Some(
            transaction
                .max_priority_fee_per_gas()
                .unwrap_or_else(|| transaction.max_fee_per_gas()),
        ),
    }
}

/// geth's fee-oracle suggestion from the blocks below `head` (the genesis block is never
/// sampled): `lowest_tips` gives a block's samples, `last` is the previous suggestion, which
/// stands in for a block without samples.
fn suggest_tip(
    head: u64,
    last: u128,
    mut lowest_tips: impl FnMut(u64) -> Result<Vec<u128>>,
) -> Result<u128> {
    // geth asks for the blocks in parallel; they are read here newest first, the order geth's
    // answers arrive in when every block takes as long.
    let oldest = head.saturating_sub(TIP_BLOCKS as u64 - 1).max(1);
    let mut pending: std::collections::VecDeque<u64> = (oldest..=head).rev().collect();
    let mut next = oldest - 1;
    let mut samples = Vec::new();
    while let Some(number) = pending.pop_front() {
        let mut tips = lowest_tips(number)?;
        if tips.is_empty() {
            tips.push(last);
        }
        // A block with a single sample widens the window, up to twice the blocks.
        if tips.len() == 1 && samples.len() + 1 + pending.len() < TIP_BLOCKS * 2 && next > 0 {
            pending.push_back(next);
            next -= 1;
        }
        samples.extend(tips);
    }
    samples.sort_unstable();
    Ok(samples
        .get(samples.len().saturating_sub(1) * TIP_PERCENTILE / 100)
        .copied()
        .unwrap_or(last)
        .min(MAX_TIP))
}

/// The fee oracle's samples from one block: its lowest effective tips (at most
/// `TIP_SAMPLES`), from transactions not sent by the block's miner.
fn lowest_tips(block: &CachedBlock) -> Result<Vec<u128>> {
    let base_fee = block.header.base_fee_per_gas;
    let mut tips = Vec::with_capacity(block.body.transactions.len());
    for (index, transaction) in block.body.transactions.iter().enumerate() {
        let Some(tip) = effective_tip(transaction, base_fee) else {
            continue;
        };
        if tip >= TIP_IGNORE_UNDER && block.sender(index)? != block.header.beneficiary {
            tips.push(tip);
        }
    }
    tips.sort_unstable();
    tips.truncate(TIP_SAMPLES);
    Ok(tips)
}

fn poisoned() -> RpcError {
    RpcError::Internal("the fee oracle's lock was poisoned".into())
}

/// geth's fee oracle defaults (`--gpo.*`).
const TIP_BLOCKS: usize = 20;
const TIP_PERCENTILE: usize = 60;
const TIP_SAMPLES: usize = 3;
const TIP_IGNORE_UNDER: u128 = 2;
const MAX_TIP: u128 = 500_000_000_000;
/// geth's starting suggestion: its default miner tip, 0.001 gwei.
const DEFAULT_TIP: u128 = 1_000_000;

/// A stored block and the index of one of its transactions.
type TxInBlock = (Arc<CachedBlock>, usize);

/// Which consensus encoding of a block debug_getRaw* returns.
#[derive(Debug, Clone, Copy)]
pub enum RawPart {
    Header,
    Block,
    Receipts,
}

/// A stored receipt as the chain encodes it (what the receipts root commits to).
fn consensus_receipt(
    receipt: &quarry_storage::StoredReceipt,
    bloom: alloy_primitives::Bloom,
) -> Result<alloy_consensus::ReceiptEnvelope> {
    let tx_type = alloy_consensus::TxType::try_from(receipt.tx_type).map_err(|_| {
        RpcError::Storage(quarry_storage::Error::Corrupt(format!(
            "receipt of unknown transaction type {}",
            receipt.tx_type
        )))
    })?;
    let status = match receipt.outcome {
        quarry_storage::ReceiptOutcome::PostState(root) => {
            alloy_consensus::Eip658Value::PostState(root)
        }
        quarry_storage::ReceiptOutcome::Status(ok) => alloy_consensus::Eip658Value::Eip658(ok),
    };
    let inner = alloy_consensus::Receipt {
        status,
        cumulative_gas_used: receipt.cumulative_gas_used,
        logs: receipt.logs.clone(),
    };
    Ok(alloy_consensus::ReceiptEnvelope::from_typed(
        tx_type,
        alloy_consensus::ReceiptWithBloom::new(inner, bloom),
    ))
}

/// eth_syncing's answer: `false`, or geth's progress object.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Syncing {
    Done(bool),
    #[serde(rename_all = "camelCase")]
    Progress {
        starting_block: U64,
        current_block: U64,
        highest_block: U64,
    },
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

#[cfg(test)]
mod unwind_tests {
    use super::*;
    use quarry_storage::{BlockRecord, StoredBody, WriteTx};

    /// Stores an empty block `number` of branch `branch` (its extra data), returns its hash.
    fn insert(tx: &WriteTx, number: u64, branch: u8) -> B256 {
        let header = Header {
            number,
            extra_data: vec![branch].into(),
            ..Default::default()
        };
        let hash = header.hash_slow();
        tx.insert_block(&BlockRecord {
            hash,
            header: &header,
            body: &StoredBody::default(),
            senders: &[],
            receipts: &[],
            total_difficulty: U256::ZERO,
        })
        .unwrap();
        hash
    }

    /// The hash of the block `node` finds: `Some(None)` when it is not stored, `None` when only
    /// memory was asked and it cannot tell.
    fn found(node: &Node, reads: &Reads, at: BlockAt) -> Option<Option<B256>> {
        let block = node.find_block(reads, at).unwrap();
        block.map(|block| block.map(|block| block.hash))
    }

    /// Blocks 0..=3 are stored, block 3 is cached, then another writer unwinds to block 1 and
    /// stores blocks 2 and 3 of another branch in the same commit. Memory stops answering at
    /// once; the first snapshot after the commit drops the caches; a snapshot begun before the
    /// commit but opened through the node only after that reads its own chain, and what it reads
    /// never reaches the caches of the new one.
    #[test]
    fn caches_never_mix_the_chains_before_and_after_an_unwind() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        let old: Vec<B256> = (0..=3).map(|number| insert(&tx, number, 0)).collect();
        tx.commit().unwrap();
        let logs = LogsConfig {
            max_results: 10,
            timeout: Duration::from_secs(1),
            max_params: 10,
            use_index: true,
        };
        let node = Node::new(
            db.clone(),
            BlockMarks::default(),
            Duration::from_secs(1),
            logs,
            None,
        )
        .unwrap();
        let number = |n| BlockAt::Tag(BlockTag::Number(n));
        let latest = BlockAt::Tag(BlockTag::Latest);

        let warm = node.reader().unwrap();
        assert_eq!(
            found(&node, &Reads::Snapshot(&warm), latest),
            Some(Some(old[3]))
        );
        drop(warm);
        for at in [number(3), latest, BlockAt::Hash(old[3])] {
            assert_eq!(found(&node, &Reads::Cache, at), Some(Some(old[3])));
        }
        let begun_before = db.reader().unwrap();

        let tx = db.writer().unwrap();
        tx.unwind_to(1).unwrap();
        let new: Vec<B256> = (2..=3).map(|number| insert(&tx, number, 1)).collect();
        tx.commit().unwrap();

        // A commit landed since the caches were checked: memory cannot tell what it was.
        for at in [number(3), latest, BlockAt::Hash(old[3])] {
            assert_eq!(found(&node, &Reads::Cache, at), None);
        }
        let after = node.reader().unwrap();
        let before = node.snapshot(begun_before).unwrap();
        // The older snapshot, checked after the newer one: its own chain, its own caches.
        assert_eq!(
            found(&node, &Reads::Snapshot(&before), number(3)),
            Some(Some(old[3]))
        );
        assert_eq!(
            found(&node, &Reads::Snapshot(&after), number(3)),
            Some(Some(new[1]))
        );
        assert_eq!(
            found(&node, &Reads::Snapshot(&after), BlockAt::Hash(old[3])),
            Some(None)
        );
        assert_eq!(
            found(&node, &Reads::Snapshot(&before), number(2)),
            Some(Some(old[2]))
        );
        // Memory holds the new chain only.
        assert_eq!(found(&node, &Reads::Cache, number(3)), Some(Some(new[1])));
        for at in [
            number(2),
            latest,
            BlockAt::Hash(old[3]),
            BlockAt::Hash(old[2]),
        ] {
            assert_eq!(found(&node, &Reads::Cache, at), None);
        }
        assert_eq!(
            found(&node, &Reads::Snapshot(&after), latest),
            Some(Some(new[1]))
        );
        assert_eq!(found(&node, &Reads::Cache, latest), Some(Some(new[1])));
    }
}

#[cfg(test)]
mod tests {
    use super::{GoFloat, MAX_TIP, suggest_tip};
    use std::cell::RefCell;

    const GWEI: u128 = 1_000_000_000;

    /// The suggestion over a chain whose blocks give `tips(number)`, and the blocks it read.
    fn suggestion(head: u64, last: u128, tips: impl Fn(u64) -> Vec<u128>) -> (u128, Vec<u64>) {
        let read = RefCell::new(Vec::new());
        let tip = suggest_tip(head, last, |number| {
            read.borrow_mut().push(number);
            Ok(tips(number))
        })
        .unwrap();
        (tip, read.into_inner())
    }

    #[test]
    fn the_tip_is_the_60th_percentile_of_the_last_20_blocks() {
        // 60 samples of 1, 2 and 3 gwei: index 59 * 60 / 100 = 35 is a 2 gwei sample.
        let (tip, read) = suggestion(100, GWEI, |_| vec![GWEI, 2 * GWEI, 3 * GWEI]);
        assert_eq!(tip, 2 * GWEI);
        assert_eq!(read, (81..=100).rev().collect::<Vec<_>>());
        // Newer blocks with higher tips move it.
        // Samples 81, 81, 81, 82, ...: index 35 is block 81 + 35 / 3.
        let (tip, _) = suggestion(100, GWEI, |n| vec![n as u128 * GWEI; 3]);
        assert_eq!(tip, 92 * GWEI);
    }

    #[test]
    fn empty_blocks_stand_in_the_last_suggestion_and_widen_the_window() {
        let (tip, read) = suggestion(100, 7, |_| Vec::new());
        assert_eq!(tip, 7);
        // Each single-sample block asks for one more, up to twice the 20 blocks.
        assert_eq!(read.len(), 40);
        assert_eq!(read.last(), Some(&61));
        // The genesis block is never sampled, and a chain of only genesis keeps the last tip.
        let (_, read) = suggestion(5, 7, |_| Vec::new());
        assert_eq!(read, vec![5, 4, 3, 2, 1]);
        assert_eq!(suggestion(0, 7, |_| vec![GWEI]).0, 7);
    }

    #[test]
    fn the_tip_is_capped_at_500_gwei() {
        assert_eq!(suggestion(30, GWEI, |_| vec![10_000 * GWEI]).0, MAX_TIP);
    }

    #[test]
    fn floats_are_written_as_go_writes_them() {
        let json = |x: f64| serde_json::to_string(&GoFloat(x)).unwrap();
        assert_eq!(json(0.0), "0");
        assert_eq!(json(1.0), "1");
        assert_eq!(json(0.00072868), "0.00072868");
        assert_eq!(json(0.5), "0.5");
        assert_eq!(json(1.5e-7), "1.5e-07");
    }
}
