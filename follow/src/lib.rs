//! quarry-follow keeps a datadir in step with an upstream Ethereum JSON-RPC node: it fetches
//! the blocks the datadir lacks (many at once while catching up), feeds them through
//! quarry-ingest's importer (the same execution and verification as `quarry ingest`), follows
//! the upstream's reorganisations with the importer's unwind, mirrors its `safe` and
//! `finalized` blocks, and survives upstream faults and a full disk by retrying with backoff.

mod upstream;

pub use upstream::{Fetch, Upstream};

use alloy_primitives::B256;
use futures_util::StreamExt;
use quarry_ingest::{Importer, Progress, Reorgs, reader::RawBlock};
use quarry_storage::BlockMark;
use std::{
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};
use tokio::sync::Notify;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot reach the upstream {url}: {reason}")]
    Connect { url: String, reason: String },
    #[error("upstream {method} failed: {reason}")]
    Upstream {
        method: &'static str,
        reason: String,
    },
    #[error("upstream sent a malformed {what}: {reason}")]
    Malformed { what: String, reason: String },
    #[error("upstream block {number}: it names hash {named}, its contents hash to {computed}")]
    HashMismatch {
        number: u64,
        named: B256,
        computed: B256,
    },
    #[error("the upstream no longer has block {number} (it reorganised while it was fetched)")]
    Missing { number: u64 },
    #[error(
        "the upstream's chain leaves the stored one more than {max_depth} blocks below the head: stored block {number} is {stored}, the upstream's is {upstream}; not reorganising"
    )]
    ReorgTooDeep {
        number: u64,
        stored: B256,
        upstream: B256,
        max_depth: u64,
    },
    #[error(
        "the upstream serves another chain: its genesis is {upstream}, the stored one is {stored}"
    )]
    OtherChain { stored: B256, upstream: B256 },
    #[error(transparent)]
    Import(#[from] quarry_ingest::Error),
    #[error(transparent)]
    Storage(#[from] quarry_storage::Error),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

pub type Result<T> = std::result::Result<T, Error>;

/// What `quarry follow` is asked for.
#[derive(Debug, Clone)]
pub struct FollowOptions {
    pub upstream: String,
    pub fetch: Fetch,
    /// How often to ask an upstream that does not push new heads.
    pub poll: Duration,
    pub max_reorg_depth: u64,
    /// Blocks requested from the upstream at once while catching up.
    pub concurrency: usize,
}

/// Retries after a failure start at this delay and double up to the maximum.
const MIN_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How often the free pages commits leave are punched out of the data file (after the first
/// catch-up, then at this pace): a follower's commits are small, so what piles up between is
/// little, and a punched page a commit reuses must be allocated again.
const RELEASE_EVERY: Duration = Duration::from_secs(600);

/// Follows the upstream until `stop` is set (Ctrl-C sets it too). Upstream faults, blocks
/// that fail verification and a full disk or database are logged and retried; only another
/// local storage failure ends it.
pub fn follow(
    mut importer: Importer,
    options: &FollowOptions,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    importer.set_reorgs(Reorgs::Follow {
        max_depth: options.max_reorg_depth,
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    let wake = Arc::new(Notify::new());
    {
        let (stop, wake) = (stop.clone(), wake.clone());
        runtime.spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                tracing::info!("stopping: the last committed block stays");
                stop.store(true, Ordering::SeqCst);
                wake.notify_waiters();
            }
        });
    }
    let mut follower = Follower {
        importer,
        runtime,
        options: options.clone(),
        stop,
        wake,
        released_at: None,
    };
    follower.run()
}

struct Follower {
    importer: Importer,
    runtime: tokio::runtime::Runtime,
    options: FollowOptions,
    stop: Arc<AtomicBool>,
    wake: Arc<Notify>,
    /// When free pages were last given back to the file system.
    released_at: Option<Instant>,
}

impl Follower {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Waits `delay`, or less if stopped.
    fn sleep(&self, delay: Duration) {
        let wake = self.wake.clone();
        self.runtime.block_on(async {
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = wake.notified() => {}
            }
        });
    }

    fn run(&mut self) -> Result<()> {
        let mut backoff = MIN_BACKOFF;
        let upstream = loop {
            if self.stopped() {
                return Ok(());
            }
            match self.runtime.block_on(Upstream::connect(
                &self.options.upstream,
                self.options.fetch,
            )) {
                Ok(upstream) => break Arc::new(upstream),
                Err(e) => {
                    tracing::warn!("{e}; retrying in {backoff:?}");
                    self.sleep(backoff);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        };
        self.check_genesis(&upstream)?;
        let mut heads = self.runtime.block_on(upstream.new_heads());
        let mut backoff = MIN_BACKOFF;
        // Commits a full disk or database refused since the start (follow has no metrics
        // endpoint: the count is in each warning).
        let mut room_faults = 0u64;
        while !self.stopped() {
            match self.sync(&upstream) {
                Ok(()) => {
                    backoff = MIN_BACKOFF;
                    self.release_free_pages();
                }
                Err(Error::Storage(e) | Error::Import(quarry_ingest::Error::Storage(e))) => {
                    let e = self.importer.database().explain(e);
                    if !e.is_out_of_room() {
                        return Err(Error::Storage(e));
                    }
                    // The failed transaction was dropped: the datadir holds the last commit,
                    // which the importer has gone back to. Retry once there may be room.
                    room_faults += 1;
                    tracing::warn!(
                        "{e} (storage fault {room_faults} since start); retrying in {backoff:?}"
                    );
                    self.sleep(backoff);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
                Err(e) => {
                    tracing::warn!("{e}; retrying in {backoff:?}");
                    self.sleep(backoff);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            }
            self.wait_for_head(&mut heads);
        }
        Ok(())
    }

    /// Gives the free pages of the commits since the last time back to the file system, once
    /// caught up and then every [`RELEASE_EVERY`]. A failure is logged and the follow goes on:
    /// the pages stay allocated, as MDBX left them.
    fn release_free_pages(&mut self) {
        if self
            .released_at
            .is_some_and(|at| at.elapsed() < RELEASE_EVERY)
        {
            return;
        }
        self.released_at = Some(Instant::now());
        let db = self.importer.database();
        match db.release_free_pages() {
            Ok(released) => tracing::info!("{}: {released}", db.datadir().display()),
            Err(e) => tracing::warn!("cannot give free pages back: {}", db.explain(e)),
        }
    }

    /// Refuses an upstream whose block 0 is not the stored genesis: following it would
    /// unwind everything.
    fn check_genesis(&self, upstream: &Upstream) -> Result<()> {
        loop {
            match self.runtime.block_on(upstream.block_hash(0)) {
                Ok(Some(upstream_hash)) => {
                    let stored = self
                        .importer
                        .database()
                        .reader()?
                        .canonical_hash(0)?
                        .unwrap_or_default();
                    if stored != upstream_hash {
                        return Err(Error::OtherChain {
                            stored,
                            upstream: upstream_hash,
                        });
                    }
                    return Ok(());
                }
                Ok(None) => {
                    return Err(Error::Malformed {
                        what: "chain".into(),
                        reason: "the upstream has no block 0".into(),
                    });
                }
                Err(e) => {
                    tracing::warn!("{e}; retrying");
                    self.sleep(MIN_BACKOFF);
                    if self.stopped() {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Waits for the next head: a pushed one, the poll interval, or a stop.
    fn wait_for_head(
        &self,
        heads: &mut Option<jsonrpsee::core::client::Subscription<serde_json::Value>>,
    ) {
        let (wake, poll) = (self.wake.clone(), self.options.poll);
        let ended = self.runtime.block_on(async {
            match heads {
                Some(subscription) => tokio::select! {
                    next = subscription.next() => next.is_none(),
                    _ = wake.notified() => false,
                    // Pushed heads can be lost (a dropped connection): poll slowly as well.
                    _ = tokio::time::sleep(poll.max(Duration::from_secs(12))) => false,
                },
                None => {
                    tokio::select! {
                        _ = tokio::time::sleep(poll) => {}
                        _ = wake.notified() => {}
                    }
                    false
                }
            }
        });
        if ended {
            tracing::warn!("the upstream ended its newHeads subscription; polling");
            *heads = None;
        }
    }

    /// Brings the datadir to the upstream's head: finds where the two chains meet, then
    /// imports the upstream's blocks above that (unwinding stored ones if they differ).
    fn sync(&mut self, upstream: &Arc<Upstream>) -> Result<()> {
        let target = self.runtime.block_on(upstream.head_number())?;
        self.record_upstream_head(upstream, target)?;
        let (head, head_hash) = self.importer.head();
        let ancestor = self.common_ancestor(upstream, head, target)?;
        if target > ancestor {
            let started = Instant::now();
            let stats = self.import_range(upstream, ancestor + 1, target)?;
            let (new_head, new_hash) = self.importer.head();
            if ancestor < head {
                tracing::info!(
                    "reorg: replaced blocks {} to {head} (head {head_hash}) with blocks {} to {new_head} from the upstream; head {new_hash}",
                    ancestor + 1,
                    ancestor + 1,
                );
            }
            if stats.blocks == 1 {
                tracing::info!(
                    "block {new_head} ({new_hash}): {} transactions, {} gas, imported in {:.1} ms",
                    stats.transactions,
                    stats.gas,
                    started.elapsed().as_secs_f64() * 1e3
                );
            } else if stats.blocks > 1 {
                tracing::info!(
                    "imported blocks {} to {new_head} in {:.2}s: {:.0} blocks/s, {:.1} Mgas/s; head {new_hash}",
                    ancestor + 1,
                    stats.elapsed.as_secs_f64(),
                    stats.blocks_per_second(),
                    stats.mgas_per_second()
                );
            }
        }
        self.mirror_tags(upstream)
    }

    /// Records the upstream's head in the datadir when it moved, so that the replicas serving
    /// this datadir know how far behind it they are (`/ready`), even while this catches up.
    /// Its peer count goes with it, for `net_peerCount`; an upstream that does not answer one
    /// has none recorded.
    fn record_upstream_head(&self, upstream: &Upstream, block: u64) -> Result<()> {
        let db = self.importer.database();
        let stored = db.reader()?.upstream_head()?;
        if stored.is_some_and(|s| s.block == block) {
            return Ok(());
        }
        let peers = match self.runtime.block_on(upstream.peer_count()) {
            Ok(peers) => Some(peers),
            Err(e) => {
                tracing::debug!("the upstream's peer count: {e}");
                None
            }
        };
        let seen_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let tx = db.writer()?;
        tx.put_upstream_head(quarry_storage::UpstreamHead {
            block,
            seen_at,
            peers,
        })?;
        tx.commit()?;
        Ok(())
    }

    /// The highest stored block that the upstream also has at its height.
    fn common_ancestor(&self, upstream: &Upstream, head: u64, target: u64) -> Result<u64> {
        let reader = self.importer.database().reader()?;
        let mut number = head.min(target);
        loop {
            let stored = reader.canonical_hash(number)?;
            let theirs = self.runtime.block_on(upstream.block_hash(number))?;
            if stored.is_some() && stored == theirs {
                return Ok(number);
            }
            let depth = head - number;
            if depth >= self.options.max_reorg_depth || number == 0 {
                return Err(Error::ReorgTooDeep {
                    number,
                    stored: stored.unwrap_or_default(),
                    upstream: theirs.unwrap_or_default(),
                    max_depth: self.options.max_reorg_depth,
                });
            }
            number -= 1;
        }
    }

    /// Fetches blocks `first..=last` (up to `concurrency` at once, in order) and imports them
    /// as they arrive. A fetch failure ends the input there: what came before it is kept.
    fn import_range(
        &mut self,
        upstream: &Arc<Upstream>,
        first: u64,
        last: u64,
    ) -> Result<quarry_ingest::ImportStats> {
        let concurrency = self.options.concurrency.max(1);
        let (sender, mut receiver) = tokio::sync::mpsc::channel(concurrency * 2);
        let failure: Arc<Mutex<Option<Error>>> = Arc::default();
        {
            let (upstream, failure, stop) = (upstream.clone(), failure.clone(), self.stop.clone());
            self.runtime.spawn(async move {
                let mut blocks = futures_util::stream::iter(first..=last)
                    .map(|number| {
                        let upstream = upstream.clone();
                        async move { (number, upstream.block(number).await) }
                    })
                    .buffered(concurrency);
                while let Some((number, fetched)) = blocks.next().await {
                    let block = match fetched {
                        Ok(Some(block)) => block,
                        Ok(None) => {
                            *failure.lock().unwrap_or_else(PoisonError::into_inner) =
                                Some(Error::Missing { number });
                            return None;
                        }
                        Err(e) => {
                            *failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                            return None;
                        }
                    };
                    if stop.load(Ordering::SeqCst) || sender.send(block).await.is_err() {
                        return None;
                    }
                }
                Some(())
            });
        }
        let mut blocks = std::iter::from_fn(move || {
            receiver.blocking_recv().map(|block| {
                Ok(RawBlock {
                    offset: 0,
                    bytes: block.rlp,
                })
            })
        });
        let mut progress = if last > first {
            Progress::auto()
        } else {
            Progress::hidden()
        };
        progress.start_range(&format!("upstream {}", upstream.url()), first, last);
        let name = format!("upstream {}", upstream.url());
        let stats = self
            .importer
            .import_blocks(&name, &mut blocks, &mut progress)?;
        if let Some(e) = failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            return Err(e);
        }
        Ok(stats)
    }

    /// Stores the upstream's `safe` and `finalized` blocks when it names them (a node without
    /// a consensus client, or before the merge, may not).
    fn mirror_tags(&self, upstream: &Upstream) -> Result<()> {
        let (head, _) = self.importer.head();
        let mut marks = Vec::new();
        for (mark, tag) in [
            (BlockMark::Safe, "safe"),
            (BlockMark::Finalized, "finalized"),
        ] {
            match self.runtime.block_on(upstream.tag_number(tag)) {
                Ok(Some(number)) if number <= head => marks.push((mark, number)),
                Ok(_) => {}
                Err(e) => tracing::debug!("upstream {tag} block: {e}"),
            }
        }
        let db = self.importer.database();
        let stored = {
            let reader = db.reader()?;
            marks
                .iter()
                .map(|(mark, _)| reader.meta_block(*mark))
                .collect::<quarry_storage::Result<Vec<_>>>()?
        };
        let changed: Vec<_> = marks
            .into_iter()
            .zip(stored)
            .filter(|((_, number), stored)| *stored != Some(*number))
            .map(|(mark, _)| mark)
            .collect();
        if changed.is_empty() {
            return Ok(());
        }
        let tx = db.writer()?;
        for (mark, number) in changed {
            tx.put_meta_block(mark, number)?;
        }
        tx.commit()?;
        Ok(())
    }
}
