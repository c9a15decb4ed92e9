//! The answers. Each method finds its block through `Reads`: on an async thread the block
//! cache alone (`Reads::Cache`, which may not know), on the read pool one short MDBX snapshot
//! behind the cache (`Reads::Snapshot`, which always answers). Then it builds the JSON shape.
//!
//! The caches of answers by block number (blocks, and the state calls and eth_getStorageAt
//! read) and the head hold only while no unwind has committed since they were filled; see
//! `Caches` for when they are dropped and when memory may answer.

use crate::{
    cache::{BlockCache, CachedBlock, JsonCache, ReceiptCache},
    params::{BlockId, BlockTag},
    rpc_error::{Result, RpcError},
};
use alloy_primitives::B256;
use fees::{DEFAULT_TIP, TipSuggestion};
use quarry_executor::{ChainSpec, StateCache};
use quarry_storage::{BlockMark, Database, ReadTx};
use std::{
    ops::Deref,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::{Duration, Instant},
};

mod blocks;
mod calls;
mod fees;
mod info;
mod logs;
mod parity;
mod proofs;
mod simulations;
mod state;
mod traces;

pub use blocks::RawPart;
pub use info::Syncing;

/// Where `safe` and `finalized` point when the config sets them; otherwise the ingest flags
/// recorded in the database decide, and failing those the head (no consensus client here).
#[derive(Debug, Clone, Copy, Default)]
pub struct BlockMarks {
    pub safe: Option<u64>,
    pub finalized: Option<u64>,
}

/// How many blocks behind the head eth_getProof reaches unless configured.
pub const DEFAULT_PROOF_WINDOW: u64 = 10_000;

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
/// Serialized block, transaction and receipt answers, by block hash: bounded by their length.
const JSON_CACHE_BYTES: usize = 64 << 20;

/// The state one server shares between its requests.
#[derive(Debug, Clone)]
pub struct Node {
    db: Database,
    marks: BlockMarks,
    /// Answers by block number and the head, and the commit they were last checked against.
    caches: Arc<Mutex<Caches>>,
    /// Receipts by block hash: true on every chain, so kept across unwinds.
    receipts: Arc<ReceiptCache>,
    /// Block, transaction and receipt answers as sent, by block hash: kept across unwinds too.
    answers: Arc<JsonCache>,
    /// The stored chain's rules; `None` for a database no ingest has written yet.
    spec: Option<Arc<ChainSpec>>,
    /// The wall-clock limit of one eth_call or one whole eth_estimateGas.
    call_timeout: Duration,
    logs: LogsConfig,
    /// How many blocks behind the head eth_getProof reaches.
    proof_window: u64,
    /// Most bytes of struct logs one trace may produce.
    max_trace_bytes: usize,
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
    /// The oldest block whose state is kept at `commit` (a state-history window's): memory
    /// answers no state of an older block, which a snapshot refuses (4444).
    oldest_state: u64,
    blocks: Arc<BlockCache>,
    /// Bytecode, accounts and slots that calls and eth_getStorageAt read.
    state: Arc<StateCache>,
}

/// What a node's answers depend on besides its database: the service's config maps into it,
/// so the answers never read the service's config.
#[derive(Debug, Clone, Copy)]
pub struct NodeConfig {
    pub marks: BlockMarks,
    /// The wall-clock limit of one eth_call or one whole eth_estimateGas.
    pub call_timeout: Duration,
    pub logs: LogsConfig,
    /// How many blocks behind the head eth_getProof reaches.
    pub proof_window: u64,
    /// Most bytes of struct logs one trace may produce.
    pub max_trace_bytes: usize,
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
    /// The node of `db`; `l1`: the database of the chain it is a rollup of.
    pub fn new(db: Database, config: NodeConfig, l1: Option<Database>) -> Result<Self> {
        let tx = db.reader()?;
        let spec = ChainSpec::stored(&tx).map_err(|e| match e {
            quarry_executor::Error::Storage(e) => RpcError::Storage(e),
            other => RpcError::Internal(other.to_string()),
        })?;
        let caches = Caches {
            commit: tx.commit_id()?,
            unwinds: tx.unwind_count()?,
            head: None,
            oldest_state: tx.oldest_state()?,
            blocks: Arc::new(BlockCache::new(BLOCK_CACHE_BYTES)),
            state: Arc::default(),
        };
        Ok(Self {
            db,
            marks: config.marks,
            caches: Arc::new(Mutex::new(caches)),
            receipts: Arc::new(ReceiptCache::new(RECEIPT_CACHE_BYTES)),
            answers: Arc::new(JsonCache::new(JSON_CACHE_BYTES)),
            spec: spec.map(Arc::new),
            call_timeout: config.call_timeout,
            logs: config.logs,
            proof_window: config.proof_window,
            max_trace_bytes: config.max_trace_bytes,
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
                oldest_state: tx.oldest_state()?,
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
            // Only blocks were added (and history pruned) since: the caches hold at this commit
            // too.
            caches.commit = commit;
            caches.head = None;
            caches.oldest_state = tx.oldest_state()?;
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
    pub fn max_log_params(&self) -> usize {
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
        // A full node's datadir keeps the state of its last blocks only: say so up front.
        if number != head {
            tx.check_state_kept(number)?;
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
}

/// Whether the process that announced a sync target still runs (a killed ingest leaves its
/// announcement behind).
pub fn process_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[cfg(test)]
mod unwind_tests {
    use super::*;
    use alloy_consensus::Header;
    use alloy_primitives::U256;
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
        let config = NodeConfig {
            marks: BlockMarks::default(),
            call_timeout: Duration::from_secs(1),
            logs,
            proof_window: DEFAULT_PROOF_WINDOW,
            max_trace_bytes: 1 << 20,
        };
        let node = Node::new(db.clone(), config, None).unwrap();
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
