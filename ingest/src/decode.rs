//! The decoding thread of an import: raw blocks read in batches, decoded, their senders
//! recovered on the recovery threads, and sent on for execution.

use alloy_consensus::{Block, TxEip4844Variant, TxEnvelope, transaction::SignerRecoverable};
use alloy_hardforks::EthereumHardforks;
use alloy_rlp::Decodable;
use quarry_executor::{ChainSpec, SealedBlock};
use rayon::prelude::*;
use std::{
    sync::{
        OnceLock,
        atomic::{AtomicU64, Ordering},
        mpsc,
    },
    time::{Duration, Instant},
};

use crate::{BATCH_BLOCKS, BATCH_TXS, Error, RawBlocks, Result, StageTimes, reader::RawBlock};

/// A decoded block with where it came from.
pub(crate) struct Decoded {
    pub(crate) offset: u64,
    pub(crate) block: SealedBlock,
}

/// Blocks decoded and with senders recovered, ready to execute; `error` is what stopped the
/// decoding thread right after them.
pub(crate) struct Prepared {
    pub(crate) blocks: Vec<Decoded>,
    pub(crate) error: Option<Error>,
    pub(crate) stages: StageTimes,
}

/// The decoding thread: reads batches of raw blocks, decodes them and recovers the senders of
/// blocks from `first_new` on, and sends each batch for execution. Stops after the first
/// failure (sent with the blocks before it), at the end of the input, or when execution stops
/// receiving.
pub(crate) fn prepare_batches(
    name: &str,
    blocks: &mut RawBlocks<'_>,
    spec: &ChainSpec,
    first_new: u64,
    highest_read: &AtomicU64,
    sender: mpsc::SyncSender<Prepared>,
) {
    loop {
        let mut stages = StageTimes::default();
        let mut raw = Vec::with_capacity(BATCH_BLOCKS);
        let mut approx_txs = 0;
        let mut error = None;
        let read_start = Instant::now();
        while raw.len() < BATCH_BLOCKS && approx_txs < BATCH_TXS {
            match blocks.next() {
                Some(Ok(block)) => {
                    approx_txs += block.bytes.len() / 120;
                    raw.push(block);
                }
                Some(Err(err)) => {
                    error = Some(Error::Read(err));
                    break;
                }
                None => break,
            }
        }
        stages.read = read_start.elapsed();
        if raw.is_empty() && error.is_none() {
            return;
        }
        let (blocks_ok, failure) = decode_batch(name, spec, first_new, raw, &mut stages);
        // A decoding failure comes before any read failure after it.
        let error = failure.or(error);
        let last = blocks_ok.last().map(|d| d.block.header.number);
        if let Some(last) = last {
            highest_read.fetch_max(last, Ordering::Relaxed);
        }
        let stop = error.is_some();
        let batch = Prepared {
            blocks: blocks_ok,
            error,
            stages,
        };
        if sender.send(batch).is_err() || stop {
            return;
        }
    }
}

/// Decodes a batch and recovers its senders in parallel. Returns the blocks before the first
/// one that fails, and that failure: the blocks before it are still imported.
fn decode_batch(
    name: &str,
    spec: &ChainSpec,
    first_new: u64,
    raw: Vec<RawBlock>,
    stages: &mut StageTimes,
) -> (Vec<Decoded>, Option<Error>) {
    let decode_start = Instant::now();
    let decoded: Vec<Result<Decoded>> = on_recovery_threads(|| {
        raw.into_par_iter()
            .map(|raw| decode_block(name, raw))
            .collect()
    });
    stages.decode = decode_start.elapsed();
    let senders_start = Instant::now();
    // Blocks already stored are only compared with the stored ones, by hash.
    let recovered: Vec<(Result<Decoded>, Duration)> = on_recovery_threads(|| {
        decoded
            .into_par_iter()
            // One block at a time: a block a recovery thread has taken waits while it is kept off
            // the cores, so it takes no more than one.
            .with_max_len(1)
            .map(|decoded| {
                let cpu_start = thread_cpu_time();
                let result = decoded.and_then(|d| {
                    if d.block.header.number < first_new {
                        Ok(d)
                    } else {
                        recover_senders(spec, name, d)
                    }
                });
                (result, thread_cpu_time().saturating_sub(cpu_start))
            })
            .collect()
    });
    stages.senders = senders_start.elapsed();
    let mut blocks = Vec::with_capacity(recovered.len());
    for (block, cpu) in recovered {
        stages.senders_cpu += cpu;
        match block {
            Ok(block) => blocks.push(block),
            Err(err) => return (blocks, Some(err)),
        }
    }
    (blocks, None)
}

/// Runs `work` on the threads that decode and recover senders: one per core, every one in
/// Linux's idle scheduling class, so that they run only on cores nothing else wants. The
/// executing thread bounds an import, and it waits for the side work it hands out (rayon's
/// pool hashes the transactions root and the receipts beside execution; the compressing thread
/// compresses the block beside its writes): a recovery thread at normal priority held a core
/// those threads then waited for, and the executing thread with them. Sender recovery still
/// takes the core the executing thread leaves, and both cores when it waits for a batch. If
/// that pool cannot be built, rayon's global pool does the work.
pub(crate) fn on_recovery_threads<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        rayon::ThreadPoolBuilder::new()
            .num_threads(cores)
            .thread_name(|i| format!("recover-{i}"))
            .start_handler(|_| run_at_idle_priority())
            .build()
            .ok()
    });
    match pool {
        Some(pool) => pool.install(work),
        None => work(),
    }
}

/// The thread that compresses each block's body and receipts while the executing thread
/// writes its state (`None` if it cannot be started: they are compressed in turn). At normal
/// priority, it takes its share of the core the idle recovery thread would have had.
pub(crate) fn compressing_thread() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "compress".to_string())
            .build()
            .ok()
    })
    .as_ref()
}

/// Moves the calling thread to Linux's idle scheduling class (or, where that is refused, to
/// the lowest priority), so that it never takes a core from a thread that wants it.
fn run_at_idle_priority() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler and setpriority only read the arguments given; pid/who 0 is
    // the calling thread.
    let idle = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } == 0;
    if !idle {
        let lowest = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) } == 0;
        tracing::debug!(
            lowest,
            "idle scheduling class refused for a recovery thread"
        );
    }
}

/// CPU time the calling thread has used so far: a stage's own cost, which its wall time
/// overstates while other threads compete for the cores.
pub(crate) fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only into the timespec it is given.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if status != 0 {
        return Duration::ZERO;
    }
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

pub(crate) fn recover_senders(spec: &ChainSpec, name: &str, mut d: Decoded) -> Result<Decoded> {
    // EIP-2 (Homestead) rejects high-s signatures; Frontier accepted them.
    let homestead = spec.is_homestead_active_at_block(d.block.header.number);
    d.block.senders = d
        .block
        .body
        .transactions
        .iter()
        .enumerate()
        .map(|(index, tx)| {
            // The hash is cached in the transaction: computed here, on a recovery thread, the
            // executing thread (which bounds an import) finds it when it stores the block.
            tx.tx_hash();
            let recovered = if homestead {
                tx.recover_signer()
            } else {
                tx.recover_signer_unchecked()
            };
            recovered.map_err(|e| Error::Sender {
                path: name.to_string(),
                offset: d.offset,
                number: d.block.header.number,
                index,
                reason: e.to_string(),
            })
        })
        .collect::<Result<_>>()?;
    Ok(d)
}

/// Decodes one raw block as ingest does: the fuzz targets' way in.
#[doc(hidden)]
pub fn decode_raw_block(raw: RawBlock) -> Result<SealedBlock> {
    decode_block("fuzz", raw).map(|decoded| decoded.block)
}

fn decode_block(name: &str, raw: RawBlock) -> Result<Decoded> {
    let mut bytes = raw.bytes.as_slice();
    let decode_err = |reason: String| Error::Decode {
        path: name.to_string(),
        offset: raw.offset,
        reason,
    };
    let block = Block::<TxEnvelope>::decode(&mut bytes).map_err(|e| decode_err(e.to_string()))?;
    if !bytes.is_empty() {
        return Err(decode_err(format!(
            "{} bytes left over after the block",
            bytes.len()
        )));
    }
    // A block holds blob transactions in their canonical form; the network form, with the
    // blobs, commitments and proofs, is for the transaction pool only (EIP-4844).
    if let Some(index) = block.body.transactions.iter().position(|tx| {
        matches!(tx, TxEnvelope::Eip4844(signed)
            if matches!(signed.tx(), TxEip4844Variant::TxEip4844WithSidecar(_)))
    }) {
        return Err(decode_err(format!(
            "transaction {index} is a blob transaction in its network form (with its blobs), \
             which a block may not hold"
        )));
    }
    let hash = block.header.hash_slow();
    Ok(Decoded {
        offset: raw.offset,
        block: SealedBlock {
            hash,
            header: block.header,
            body: block.body,
            senders: Vec::new(),
        },
    })
}
