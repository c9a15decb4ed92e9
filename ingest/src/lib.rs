//! quarry-ingest owns getting chains into storage: streaming files of RLP blocks, decoding,
//! parallel sender recovery, executing and verifying each block through quarry-executor, and
//! committing in atomic batches with progress reporting. It also runs Ethereum
//! BlockchainTests through that same path.

pub mod blocktest;
mod decode;
pub mod era;
mod open;
mod progress;
pub mod reader;
mod reorg;

pub use decode::decode_raw_block;
pub use open::stored_network;
pub use progress::Progress;

use alloy_consensus::Header;
use alloy_hardforks::EthereumHardforks;
use alloy_primitives::B256;
use decode::{Decoded, Prepared, compressing_thread, prepare_batches, recover_senders};
use quarry_executor::{
    BlockTemplate, ChainSpec, ExecutedBlock, ExecutionCache, Network, SealedBlock, StateTrie,
    build_block, execute_block, execute_block_in_range,
};
use quarry_storage::{BlockRecord, Database, SyncTarget, WriteTx};
use reader::{BlockReader, RawBlock};
use reorg::Replaced;
use std::{
    path::Path,
    sync::{
        atomic::{AtomicU64, Ordering},
        mpsc,
    },
    time::{Duration, Instant},
};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Read(#[from] reader::ReadError),
    #[error("{path}: block at byte offset {offset} cannot be decoded: {reason}")]
    Decode {
        path: String,
        offset: u64,
        reason: String,
    },
    #[error(
        "{path}: block {number} at byte offset {offset}: cannot recover the sender of transaction {index}: {reason}"
    )]
    Sender {
        path: String,
        offset: u64,
        number: u64,
        index: usize,
        reason: String,
    },
    #[error(
        "{path}: block {number} ({hash}) at byte offset {offset} does not connect to the stored chain (head is block {head})"
    )]
    Gap {
        path: String,
        offset: u64,
        number: u64,
        hash: B256,
        head: u64,
    },
    #[error(
        "{path}: block {number} ({hash}) at byte offset {offset} differs from stored block {number} ({stored}); pass --reorg to replace stored blocks"
    )]
    Reorg {
        path: String,
        offset: u64,
        number: u64,
        hash: B256,
        stored: B256,
    },
    #[error(
        "{path}: block {number} ({hash}) at byte offset {offset} would replace {depth} stored blocks from block {number} ({stored}) on, more than the maximum reorg depth of {max_depth}; nothing was changed"
    )]
    ReorgTooDeep {
        path: String,
        offset: u64,
        number: u64,
        hash: B256,
        stored: B256,
        depth: u64,
        max_depth: u64,
    },
    #[error(
        "this datadir was written by an older quarry (layout {found}, current {current}): run `quarry migrate --datadir <DIR>` once to bring it up to date"
    )]
    NeedsMigration { found: u64, current: u64 },
    #[error("{path}: byte offset {offset}: {source}")]
    Block {
        path: String,
        offset: u64,
        source: Box<quarry_executor::Error>,
    },
    #[error(
        "blocks {first} to {last}, whose state root was to be taken once after the last: {reason}"
    )]
    RangeAbandoned {
        first: u64,
        last: u64,
        reason: String,
    },
    #[error(transparent)]
    Execution(#[from] quarry_executor::Error),
    #[error(transparent)]
    Storage(#[from] quarry_storage::Error),
    /// A benchmark setting from the environment that cannot be used: the variable and why.
    #[error("{variable}={value}: {reason}")]
    BenchSetting {
        variable: &'static str,
        value: String,
        reason: &'static str,
    },
    #[error(
        "this datadir holds a different chain: its genesis is {stored}, the given genesis is {given}"
    )]
    WrongGenesis { stored: B256, given: B256 },
    #[error(
        "this datadir holds {stored}, not {given}: use another --datadir, or leave out --chain to go on with {stored}"
    )]
    WrongNetwork { stored: String, given: String },
    #[error(
        "the {network} genesis built from the bundled allocation hashes to {computed}, not the published {published}"
    )]
    GenesisHash {
        network: Network,
        computed: B256,
        published: B256,
    },
    #[error("{datadir} holds no chain yet: give --chain NAME or --genesis FILE")]
    NoChain { datadir: String },
    #[error(
        "the stored state does not match head block {number}: state root {computed}, header says {expected}"
    )]
    StateMismatch {
        number: u64,
        computed: B256,
        expected: B256,
    },
}

pub type Result<T> = std::result::Result<T, Error>;

/// How long each stage took, summed over an import. Reading, decoding and sender recovery run
/// on a thread of their own, overlapping execution, state roots and writing.
#[derive(Debug, Clone, Copy, Default)]
pub struct StageTimes {
    /// Reading raw blocks from the file (and decompressing).
    pub read: Duration,
    pub decode: Duration,
    pub senders: Duration,
    /// CPU time spent recovering senders, summed over the threads that did it.
    pub senders_cpu: Duration,
    pub execution: Duration,
    pub state_root: Duration,
    pub write: Duration,
    /// Time the executing thread waited for the decoding thread's next batch: the part of an
    /// import in which sender recovery, not execution and writing, set the pace.
    pub waiting: Duration,
}

/// What an import did.
#[derive(Debug, Clone, Copy, Default)]
pub struct ImportStats {
    pub blocks: u64,
    pub skipped: u64,
    pub transactions: u64,
    pub gas: u64,
    pub elapsed: Duration,
    pub stages: StageTimes,
}

impl std::ops::AddAssign for StageTimes {
    fn add_assign(&mut self, other: Self) {
        self.read += other.read;
        self.decode += other.decode;
        self.senders += other.senders;
        self.senders_cpu += other.senders_cpu;
        self.execution += other.execution;
        self.state_root += other.state_root;
        self.write += other.write;
        self.waiting += other.waiting;
    }
}

impl std::ops::AddAssign for ImportStats {
    fn add_assign(&mut self, other: Self) {
        self.blocks += other.blocks;
        self.skipped += other.skipped;
        self.transactions += other.transactions;
        self.gas += other.gas;
        self.elapsed += other.elapsed;
        self.stages += other.stages;
    }
}

impl ImportStats {
    pub fn mgas_per_second(&self) -> f64 {
        self.gas as f64 / 1e6 / self.elapsed.as_secs_f64().max(1e-9)
    }
    pub fn blocks_per_second(&self) -> f64 {
        self.blocks as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Blocks are read, decoded and recovered in batches of at most this many blocks.
const BATCH_BLOCKS: usize = 256;
/// A batch also ends once it holds about this many transactions.
const BATCH_TXS: usize = 20_000;
/// Decoded batches waiting for execution; with the batch being decoded and the one executing,
/// this bounds the blocks in memory.
const BATCHES_AHEAD: usize = 1;
/// A write transaction is committed once it holds this many transactions or blocks, or has
/// been open this long. Each commit rewrites every page it touched, so fewer, larger commits
/// write less; the interval bounds how long `quarry serve` waits to see new blocks.
const COMMIT_TXS: u64 = 1_000_000;
const COMMIT_BLOCKS: u64 = 16_384;
const COMMIT_INTERVAL: Duration = Duration::from_secs(20);

/// The commit interval, or the one a benchmark asked for (`QUARRY_BENCH_COMMIT_MS`,
/// milliseconds): each commit frees the old copies of the pages it rewrote, and those stay in
/// the data file as free pages until later commits reuse them, so shorter commits leave fewer
/// free pages at the cost of rewriting hot pages more often (docs/benchmarks.md, "Disk").
/// `Importer::open` checks it; a caller about to create a datadir may check it first.
pub fn commit_interval() -> Result<Duration> {
    const VARIABLE: &str = "QUARRY_BENCH_COMMIT_MS";
    match std::env::var_os(VARIABLE) {
        None => Ok(COMMIT_INTERVAL),
        Some(value) => commit_interval_setting(VARIABLE, value.to_string_lossy().into_owned()),
    }
}

fn commit_interval_setting(variable: &'static str, value: String) -> Result<Duration> {
    match value.parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(Error::BenchSetting {
            variable,
            value,
            reason: "the commit interval must be a whole number of milliseconds above 0",
        }),
    }
}

/// A source of raw blocks, read on the decoding thread.
pub type RawBlocks<'a> =
    dyn Iterator<Item = std::result::Result<RawBlock, reader::ReadError>> + Send + 'a;

/// What an import does with a block that differs from the stored block at its height.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reorgs {
    /// Refuse it (the default): a file that disagrees with the stored chain is an error.
    Refuse,
    /// Unwind to its parent and import the input's branch (`quarry ingest --reorg`, `quarry
    /// follow`: the input is the chain to have). Up to `max_depth` blocks may be replaced.
    Follow { max_depth: u64 },
    /// Import the input's branch and keep it only if, at the end of the input, its total
    /// difficulty is higher than the replaced chain's, or it reached the terminal total
    /// difficulty (the BlockchainTests' fork choice).
    Heavier { max_depth: u64 },
}

/// The default `--max-reorg-depth`.
pub const DEFAULT_MAX_REORG_DEPTH: u64 = 128;

/// Imports blocks into one database; the state trie lives in it, updated block by block.
pub struct Importer {
    db: Database,
    spec: ChainSpec,
    head: Header,
    head_hash: B256,
    reorgs: Reorgs,
    /// Whether staged blocks record the state trie's node history (the datadir has it on; the
    /// leaf history, which is the state history, is always recorded).
    trie_history: bool,
    /// What executing the last block left in memory, for its child to start from.
    execution_cache: ExecutionCache,
    /// The last block of the input, when it is a straight chain (a file whose blocks are
    /// numbered one after another): its coarse windows may take their state roots once each.
    input_last: Option<u64>,
    /// The range of blocks being executed whose state root is taken after its last block.
    range: Option<OpenRange>,
    /// Whether files of consecutive blocks may be imported in ranges (the default).
    ranges: bool,
    /// How long a write transaction may stay open before it commits.
    commit_interval: Duration,
}

/// Blocks `first..end` of a straight chain, executed with every check but the state root's,
/// which is taken once, after block `end - 1`, as reth's pipeline takes it: `trie` holds all
/// their state changes, written with that block. The node history records each node the range
/// changed once, as it was before the range: what thinning its coarse window would keep, so
/// ranges are whole coarse windows that the input passes by `proof_history` blocks. A range
/// commits whole or not at all: on any failure in it the open transaction is dropped and the
/// import goes on from the last commit with a root per block, which names the failing block.
struct OpenRange {
    first: u64,
    end: u64,
    trie: StateTrie,
}

impl OpenRange {
    fn abandoned(&self, reason: String) -> Error {
        Error::RangeAbandoned {
            first: self.first,
            last: self.end - 1,
            reason,
        }
    }
}

/// The open write transaction and what it holds so far.
struct OpenBatch {
    tx: WriteTx,
    opened: Instant,
    blocks: u64,
    transactions: u64,
    /// Set when this transaction unwound stored blocks: it commits only once the new branch
    /// is complete, so no reader ever sees part of a reorganisation.
    replaced: Option<Replaced>,
}

impl OpenBatch {
    /// Whether the transaction holds enough to commit (never an unfinished reorganisation),
    /// or has been open for `interval`.
    fn full(&self, interval: Duration) -> bool {
        self.replaced.is_none()
            && (self.transactions >= COMMIT_TXS
                || self.blocks >= COMMIT_BLOCKS
                || self.opened.elapsed() >= interval)
    }
}

impl Importer {
    /// Block `number` (`hash`, at `offset` of input `name`) does not connect to the stored
    /// chain.
    fn gap(&self, name: &str, offset: u64, number: u64, hash: B256) -> Error {
        Error::Gap {
            path: name.to_string(),
            offset,
            number,
            hash,
            head: self.head.number,
        }
    }

    /// Imports every block of one file. Blocks already stored are skipped; the first block that
    /// fails ends the import with an error, after every block before it has been committed.
    pub fn import_file(&mut self, path: &Path, progress: &mut Progress) -> Result<ImportStats> {
        let name = path.display().to_string();
        let last = self
            .ranges
            .then(|| reader::straight_chain_end(path))
            .flatten();
        self.import_straight(last, |importer| {
            importer.import_file_once(path, &name, progress)
        })
    }

    /// Runs `import` over an input that is a straight chain ending at block `last` (`None`:
    /// not known to be one): its coarse windows take their state roots once each; if one
    /// fails, `import` runs again from the last commit with a root per block, which finds the
    /// block.
    pub(crate) fn import_straight(
        &mut self,
        last: Option<u64>,
        mut import: impl FnMut(&mut Self) -> Result<ImportStats>,
    ) -> Result<ImportStats> {
        self.input_last = last.filter(|_| self.ranges);
        let mut result = import(self);
        if let Err(Error::RangeAbandoned {
            first,
            last,
            reason,
        }) = &result
        {
            tracing::warn!(
                first,
                last,
                reason,
                "a range of blocks failed; importing from the last commit one block at a time"
            );
            self.input_last = None;
            result = import(self);
        }
        self.input_last = None;
        result
    }

    fn import_file_once(
        &mut self,
        path: &Path,
        name: &str,
        progress: &mut Progress,
    ) -> Result<ImportStats> {
        let mut reader = BlockReader::open(path)?;
        progress.start_file(name, std::fs::metadata(path).ok().map(|m| m.len()));
        self.import_blocks(name, &mut reader, progress)
    }

    /// Imports raw blocks from any source (tests and BlockchainTests use this). While it runs,
    /// the database names the block it is importing towards, so that `quarry serve` can report
    /// that it is syncing.
    pub fn import_blocks(
        &mut self,
        name: &str,
        blocks: &mut RawBlocks<'_>,
        progress: &mut Progress,
    ) -> Result<ImportStats> {
        let result = self.import_pipelined(name, blocks, progress);
        progress.finish();
        self.range = None;
        if matches!(
            result,
            Err(Error::Storage(_) | Error::RangeAbandoned { .. })
        ) {
            // The failed transaction is gone: the head is the last commit's again.
            self.reload_head()?;
        }
        let withdrawn = self.withdraw_target();
        let stats = result.map_err(|e| self.explain(e))?;
        withdrawn.map_err(|e| self.explain(e))?;
        Ok(stats)
    }

    /// `err` with a full disk or a full database named with the datadir and what to do.
    pub fn explain(&self, err: Error) -> Error {
        match err {
            Error::Storage(e) => Error::Storage(self.db.explain(e)),
            other => other,
        }
    }

    /// Takes the head from the database again, after a write transaction was dropped unseen
    /// (its blocks had moved the head in memory). What execution kept in memory belongs to
    /// that dropped chain.
    fn reload_head(&mut self) -> Result<()> {
        let reader = self.db.reader()?;
        let missing = || quarry_storage::Error::Corrupt("no head".into());
        let (number, hash) = reader.head()?.ok_or_else(missing)?;
        self.head = reader.header(number)?.ok_or_else(missing)?;
        self.head_hash = hash;
        self.execution_cache = ExecutionCache::default();
        Ok(())
    }

    /// Withdraws an announced sync target, if one is stored (a one-block import announces
    /// none, and its commit clears any).
    fn withdraw_target(&self) -> Result<()> {
        if self.db.reader()?.sync_target()?.is_some() {
            self.announce_target(None)?;
        }
        Ok(())
    }

    fn announce_target(&self, block: Option<u64>) -> Result<()> {
        let tx = self.db.writer()?;
        put_target(&tx, block)?;
        tx.commit()?;
        Ok(())
    }

    /// Decodes and recovers senders on a thread of its own, one batch ahead of execution, so
    /// that sender recovery overlaps execution, state roots and writing.
    fn import_pipelined(
        &mut self,
        name: &str,
        blocks: &mut RawBlocks<'_>,
        progress: &mut Progress,
    ) -> Result<ImportStats> {
        let started = Instant::now();
        let spec = self.spec.clone();
        let first_new = self.head.number + 1;
        let highest_read = AtomicU64::new(0);
        let mut stats = std::thread::scope(|scope| {
            let (sender, batches) = mpsc::sync_channel(BATCHES_AHEAD);
            let highest_read = &highest_read;
            scope.spawn(move || {
                prepare_batches(name, blocks, &spec, first_new, highest_read, sender)
            });
            // Returning drops `batches`, which ends the decoding thread at its next batch.
            self.execute_batches(name, batches, highest_read, progress)
        })?;
        stats.elapsed = started.elapsed();
        Ok(stats)
    }

    fn execute_batches(
        &mut self,
        name: &str,
        batches: mpsc::Receiver<Prepared>,
        highest_read: &AtomicU64,
        progress: &mut Progress,
    ) -> Result<ImportStats> {
        let mut stats = ImportStats::default();
        let mut pending: Option<OpenBatch> = None;
        let mut announced = false;
        // A batch of one block (`quarry follow` at the head) writes a few pages: the data
        // file's tail is warmed only for longer imports, from their first longer batch on.
        let mut warm_tail = None;
        loop {
            let wait_start = Instant::now();
            let Ok(batch) = batches.recv() else {
                break;
            };
            stats.stages.waiting += wait_start.elapsed();
            stats.stages += batch.stages;
            if warm_tail.is_none() && batch.blocks.len() > 1 {
                warm_tail = Some(self.db.warm_tail());
            }
            // An unfinished reorganisation must commit whole: the announcement, a commit of
            // its own, waits until it has.
            let reorganising = pending.as_ref().is_some_and(|p| p.replaced.is_some());
            if !announced && !reorganising {
                let target = batch.blocks.last().map(|d| d.block.header.number);
                // One new block needs no announcement: its own commit is the whole import.
                if target.is_some_and(|target| target > self.head.number + 1) {
                    // Earlier batches were all stored already: their transaction holds no block,
                    // and must end before the announcement's own.
                    self.commit(pending.take(), highest_read, &mut stats)?;
                    let write_start = Instant::now();
                    self.announce_target(target)?;
                    stats.stages.write += write_start.elapsed();
                    announced = true;
                }
            }
            // A storage error drops the open transaction unseen: it may hold part of a block.
            // A rejected block leaves only whole blocks before it, committed, unless they are
            // part of an unfinished reorganisation, which is undone whole.
            let rejected = match self.execute_batch(
                name,
                batch.blocks,
                &mut pending,
                highest_read,
                &mut stats,
                progress,
            ) {
                Ok(rejected) => rejected,
                Err(err) => {
                    self.abandon(pending.take());
                    return Err(err);
                }
            };
            let failure = rejected.or(batch.error);
            if let Some(err) = &failure
                && let Some(range) = self.range.take()
            {
                self.abandon(pending.take());
                return Err(range.abandoned(err.to_string()));
            }
            if let Some(err) = failure {
                if pending.as_ref().is_some_and(|p| p.replaced.is_some()) {
                    self.abandon(pending.take());
                } else {
                    self.commit(pending.take(), highest_read, &mut stats)?;
                }
                return Err(err);
            }
            self.finish_followed_reorg(&mut pending);
            // A range commits only whole (see `close_range`).
            if self.range.is_none()
                && pending
                    .as_ref()
                    .is_some_and(|open| open.full(self.commit_interval))
            {
                self.commit(pending.take(), highest_read, &mut stats)?;
            }
        }
        self.finish_input(pending.take(), highest_read, &mut stats)?;
        Ok(stats)
    }

    /// With `Reorgs::Follow`, a reorganisation is complete once the new branch is as high as
    /// the chain it replaced: from then on its transaction commits like any other.
    fn finish_followed_reorg(&mut self, pending: &mut Option<OpenBatch>) {
        let Some(p) = pending else {
            return;
        };
        if matches!(self.reorgs, Reorgs::Follow { .. })
            && p.replaced
                .as_ref()
                .is_some_and(|r| self.head.number >= r.head.number)
        {
            p.replaced = None;
        }
    }

    /// At the end of the input: commits what is staged, unless it is a reorganisation that
    /// the fork choice does not take (`Reorgs::Heavier` and the new branch is neither heavier nor
    /// past the terminal total difficulty).
    fn finish_input(
        &mut self,
        pending: Option<OpenBatch>,
        highest_read: &AtomicU64,
        stats: &mut ImportStats,
    ) -> Result<()> {
        let Some(mut pending) = pending else {
            return Ok(());
        };
        if let Some(range) = self.range.take() {
            self.abandon(Some(pending));
            return Err(range.abandoned("the input ended inside it".into()));
        }
        if let (Some(replaced), Reorgs::Heavier { .. }) = (&pending.replaced, self.reorgs) {
            let new_td = pending
                .tx
                .total_difficulty(self.head.number)?
                .unwrap_or_default();
            // Past the terminal difficulty the newest block wins, as geth's blockchain tests
            // take it: a consensus layer would have chosen it.
            if new_td <= replaced.total_difficulty && !self.spec.reached_terminal_difficulty(new_td)
            {
                self.abandon(Some(pending));
                return Ok(());
            }
        }
        pending.replaced = None;
        self.commit(Some(pending), highest_read, stats)
    }

    /// Drops the open transaction unseen; if it had unwound stored blocks, the head goes back
    /// to the chain before the unwind (the trie is in the dropped transaction).
    fn abandon(&mut self, pending: Option<OpenBatch>) {
        let Some(pending) = pending else {
            return;
        };
        if let Some(replaced) = pending.replaced {
            self.head = replaced.head;
            self.head_hash = replaced.head_hash;
        }
        drop(pending.tx);
    }

    /// A range of blocks from block `number` on (see [`OpenRange`]), if the input allows one.
    fn open_range(&self, tx: &WriteTx, number: u64) -> Result<Option<OpenRange>> {
        let Some(last) = self.input_last else {
            return Ok(None);
        };
        if !self.spec.is_byzantium_active_at_block(number) {
            return Ok(None);
        }
        let end = if self.trie_history {
            tx.begin_whole_coarse_window(number, last)?
        } else {
            let coarse = tx.coarse_node_window()?;
            let start = number - number % coarse;
            let end = start + coarse;
            ((number == start || number == 1) && end - 1 <= last).then_some(end)
        };
        Ok(end.map(|end| OpenRange {
            first: number,
            end,
            trie: StateTrie::new(),
        }))
    }

    /// After the range's last block (the head): takes its state root, compares it with the
    /// head's, and writes the range's trie changes.
    fn close_range(&mut self, tx: &WriteTx, stats: &mut ImportStats) -> Result<()> {
        let Some(mut range) = self.range.take() else {
            return Ok(());
        };
        let started = Instant::now();
        let root = range.trie.root(tx)?;
        stats.stages.state_root += started.elapsed();
        if root != self.head.state_root {
            let expected = self.head.state_root;
            return Err(range.abandoned(format!(
                "state root {root} after block {}, whose header says {expected}",
                self.head.number
            )));
        }
        let started = Instant::now();
        if self.trie_history {
            let write = || range.trie.write(tx, Some(range.first), true);
            tx.write_whole_coarse_window(range.first, range.end, write)?;
        } else {
            range.trie.write(tx, Some(range.first), false)?;
        }
        stats.stages.write += started.elapsed();
        Ok(())
    }

    fn open_pending(&self) -> Result<OpenBatch> {
        Ok(OpenBatch {
            tx: self.db.writer()?,
            opened: Instant::now(),
            blocks: 0,
            transactions: 0,
            replaced: None,
        })
    }

    /// Commits the staged blocks, naming in the same commit the block that reading has reached
    /// (what `quarry serve` reports as syncing towards).
    fn commit(
        &self,
        pending: Option<OpenBatch>,
        highest_read: &AtomicU64,
        stats: &mut ImportStats,
    ) -> Result<()> {
        let Some(pending) = pending else {
            return Ok(());
        };
        let write_start = Instant::now();
        if pending.blocks > 0 {
            let read = highest_read.load(Ordering::Relaxed);
            put_target(&pending.tx, (read > self.head.number).then_some(read))?;
            // What fell behind `proof_history` is thinned in the commit that moved the head.
            pending
                .tx
                .prune_node_history(quarry_storage::PRUNE_BUDGET)?;
            // And what fell behind the state history window, pruned: as many blocks as this
            // commit imports and a few more, so the work follows the import's.
            pending.tx.prune_state_history(
                u64::MAX,
                pending.blocks + quarry_storage::STATE_PRUNE_CATCH_UP,
            )?;
            pending.tx.commit()?;
        }
        stats.stages.write += write_start.elapsed();
        Ok(())
    }

    /// Executes and stages a batch into the open write transaction (opening one if needed).
    /// Returns the error of a rejected block, with the whole blocks before it staged; an `Err`
    /// is a storage failure, after which the transaction must not be committed.
    fn execute_batch(
        &mut self,
        name: &str,
        decoded: Vec<Decoded>,
        pending: &mut Option<OpenBatch>,
        highest_read: &AtomicU64,
        stats: &mut ImportStats,
        progress: &mut Progress,
    ) -> Result<Option<Error>> {
        for Decoded { offset, mut block } in decoded {
            let number = block.header.number;
            if number <= self.head.number {
                if let Some(range) = &self.range {
                    return Err(range.abandoned(format!("block {number} is already stored")));
                }
                let tx = match pending {
                    Some(p) => &p.tx,
                    None => &pending.insert(self.open_pending()?).tx,
                };
                if tx.canonical_hash(number)? == Some(block.hash) {
                    stats.skipped += 1;
                    continue;
                }
                if let Some(rejected) =
                    self.replace_stored(name, offset, &block, pending, highest_read, stats)?
                {
                    return Ok(Some(rejected));
                }
            }
            // The decoding thread recovers senders only above the head it started from: blocks
            // of a branch that replaces stored ones get theirs here.
            if block.senders.len() != block.body.transactions.len() {
                match recover_senders(&self.spec, name, Decoded { offset, block }) {
                    Ok(decoded) => block = decoded.block,
                    Err(err) => return Ok(Some(err)),
                }
            }
            let open = match pending {
                Some(open) => open,
                None => pending.insert(self.open_pending()?),
            };
            let tx = &open.tx;
            if number != self.head.number + 1 {
                return Ok(Some(self.gap(name, offset, number, block.hash)));
            }
            if self.range.is_none() && open.replaced.is_none() {
                self.range = self.open_range(tx, number)?;
            }
            let exec_start = Instant::now();
            // Execution only reads `tx`, so a failure here leaves the staged blocks whole.
            let cache = &mut self.execution_cache;
            let executed = match &mut self.range {
                Some(range) => {
                    execute_block_in_range(&self.spec, tx, &block, cache, &mut range.trie)
                }
                None => execute_block(&self.spec, tx, &block, cache),
            };
            let executed = match executed {
                Ok(executed) => executed,
                Err(source) if self.range.is_some() => {
                    let reason = format!("block {number}: {source}");
                    return Err(self
                        .range
                        .as_ref()
                        .map_or(source.into(), |r| r.abandoned(reason)));
                }
                Err(source) => {
                    return Ok(Some(Error::Block {
                        path: name.to_string(),
                        offset,
                        source: Box::new(source),
                    }));
                }
            };
            let exec_time = exec_start.elapsed();
            stats.stages.state_root += executed.state_root_time;
            stats.stages.execution += exec_time.saturating_sub(executed.state_root_time);

            let write_start = Instant::now();
            let transactions = executed.receipts.len() as u64;
            self.stage(tx, block, &executed)?;
            stats.stages.write += write_start.elapsed();
            stats.blocks += 1;
            stats.transactions += transactions;
            stats.gas += self.head.gas_used;
            open.blocks += 1;
            open.transactions += transactions;
            progress.block(number, offset, stats);
            if self
                .range
                .as_ref()
                .is_some_and(|range| range.end == number + 1)
            {
                self.close_range(tx, stats)?;
                if open.full(self.commit_interval) {
                    self.commit(pending.take(), highest_read, stats)?;
                }
            }
        }
        Ok(None)
    }

    /// Writes an executed block into `tx` and makes it the head. The block's body and
    /// receipts are compressed on the compressing thread meanwhile (a tenth of the writing
    /// thread's time otherwise), and stored after its state.
    fn stage(&mut self, tx: &WriteTx, block: SealedBlock, executed: &ExecutedBlock) -> Result<()> {
        let record = BlockRecord {
            hash: block.hash,
            header: &block.header,
            body: &block.body,
            senders: &block.senders,
            receipts: &executed.receipts,
            total_difficulty: executed.total_difficulty,
        };
        let compressor = tx.block_compressor()?;
        let write_state = || -> Result<()> {
            let number = block.header.number;
            let named =
                quarry_storage::block_named_addresses(&block.header, &block.body, &block.senders);
            tx.index_block_traces(number, &executed.trace_addresses, &named)?;
            tx.apply_block_state_changes(
                number,
                &executed.accounts,
                &executed.bytecodes,
                &executed.storage_roots_before,
            )?;
            executed.trie.write(tx, Some(number), self.trie_history)?;
            Ok(())
        };
        let mut compressed = None;
        let written = match compressing_thread() {
            Some(pool) => pool.in_place_scope(|scope| {
                scope.spawn(|_| compressed = Some(compressor.compress(&record)));
                write_state()
            }),
            None => write_state(),
        };
        written?;
        // Compressed beside the state writes when the compressing thread ran it (a panic there
        // resumes at the end of the scope), else here.
        let compressed = match compressed {
            Some(compressed) => compressed,
            None => compressor.compress(&record),
        }?;
        tx.insert_compressed_block(&record, compressed)?;
        self.head = block.header;
        self.head_hash = block.hash;
        Ok(())
    }

    /// Builds the block after the head from `template` (see `quarry_executor::build_block`) and
    /// stages it in `tx`, which must be this importer's writer; commit `tx` to keep it.
    pub fn build_block(&mut self, tx: &WriteTx, template: BlockTemplate) -> Result<SealedBlock> {
        let (block, executed) = build_block(&self.spec, tx, template)?;
        self.stage(tx, block.clone(), &executed)?;
        Ok(block)
    }
}

fn put_target(tx: &WriteTx, block: Option<u64>) -> Result<()> {
    tx.put_sync_target(block.map(|block| SyncTarget {
        block,
        pid: std::process::id(),
    }))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_interval_setting_is_positive_milliseconds_or_named_as_wrong() {
        for (value, ms) in [("1", 1), ("20000", 20_000), ("60000", 60_000)] {
            assert_eq!(
                commit_interval_setting("V", value.to_string()).unwrap(),
                Duration::from_millis(ms)
            );
        }
        for value in ["0", "-5", "20s", "1.5", ""] {
            let err = commit_interval_setting("V", value.to_string()).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "V={value}: the commit interval must be a whole number of milliseconds above 0"
                )
            );
        }
    }
}
