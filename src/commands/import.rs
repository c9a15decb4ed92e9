//! Importing into a datadir, as `quarry ingest`, `quarry follow` and `quarry dev` do: what the
//! datadir records of its history, how deep a reorganisation may go, and the import itself
//! with its summary.

use super::{chain::ChainArgs, datadir::parse_size};
use eyre::{Result, bail};
use quarry_ingest::{ImportStats, Importer, Progress};
use std::{path::Path, time::Instant};

/// What an import records of the trie's history: whether its nodes (`--no-trie-history`
/// stops them) and how far back in fine windows (`--proof-history`; `None`: as the datadir
/// says); and how large the database may grow (`--max-db-size`).
pub struct History {
    pub trie: bool,
    pub proofs: Option<u64>,
    /// `--state-history`: `None` keeps the datadir's window (a new one: an archive).
    pub state: Option<u64>,
    pub max_db_size: u64,
    /// Whether a file of consecutive blocks may take its state roots once per coarse window
    /// (`--state-root-every-block` stops it).
    pub root_per_window: bool,
}

/// The history flags `quarry ingest` and `quarry follow` share.
#[derive(clap::Args)]
pub struct HistoryArgs {
    /// Keep the trie node history's 32-block windows for this many blocks behind the head
    /// (eth_getProof there undoes at most 16 blocks' changes); older ones are thinned to
    /// 1,024-block windows (at most 512 blocks' changes). Recorded in the datadir, so later
    /// imports keep it (a new datadir: 1,024).
    #[arg(long)]
    pub proof_history: Option<u64>,
    /// Keep the state history (changesets, the state's block lists, the trie node history)
    /// of the last N blocks only, as a full node: state methods at older blocks answer
    /// 4444 "pruned history unavailable"; blocks, receipts, logs and transaction lookups stay
    /// for every block. Recorded in the datadir; it can narrow but never widen (default:
    /// the datadir's, a new one an archive).
    #[arg(long, value_name = "N")]
    pub state_history: Option<u64>,
    /// The most bytes the database file may grow to (suffixes K, M, G, T: powers of 1,024;
    /// default 1T). A commit that would need more stops with a message naming this setting.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "1T")]
    pub max_db_size: u64,
}

impl HistoryArgs {
    /// The history an import records: these flags, with whether the trie's nodes are kept and
    /// whether a file's coarse windows may take their roots once.
    pub fn history(self, trie: bool, root_per_window: bool) -> History {
        History {
            trie,
            proofs: self.proof_history,
            state: self.state_history,
            max_db_size: self.max_db_size,
            root_per_window,
        }
    }
}

/// Records in the datadir what `history` asks of its history, for this import and later ones.
pub fn apply_history(importer: &mut Importer, history: &History) -> quarry_ingest::Result<()> {
    if !history.trie {
        importer.stop_trie_history()?;
    }
    if let Some(blocks) = history.proofs {
        importer.set_proof_history(blocks)?;
    }
    if let Some(blocks) = history.state {
        importer.set_state_history(blocks)?;
    }
    importer.set_root_per_window(history.root_per_window);
    Ok(())
}

/// The deepest reorganisation an import may follow: `given` (`--max-reorg-depth`), else 128,
/// and never more than the datadir's state history window, below which nothing can be undone.
pub fn reorg_depth(importer: &Importer, given: Option<u64>) -> Result<u64> {
    let window = importer.database().reader()?.state_history_window()?;
    match (given, window) {
        (Some(depth), Some(window)) if depth > window => bail!(
            "--max-reorg-depth {depth} exceeds the datadir's state history window of {window} \
             blocks: a reorganisation replacing more blocks than the window keeps cannot be \
             undone. Give --max-reorg-depth {window} or less"
        ),
        (Some(depth), _) => Ok(depth),
        (None, Some(window)) => Ok(quarry_ingest::DEFAULT_MAX_REORG_DEPTH.min(window)),
        (None, None) => Ok(quarry_ingest::DEFAULT_MAX_REORG_DEPTH),
    }
}

/// An import's error with the head it left.
fn stopped(importer: &Importer, err: quarry_ingest::Error) -> eyre::Report {
    let (number, hash) = importer.head();
    eyre::Report::new(err).wrap_err(format!("stopped at block {number} ({hash})"))
}

/// Opens (or creates) the database in `datadir` for the chain of the genesis file and imports
/// `files`, printing the summary.
pub fn import(
    datadir: &Path,
    chain: &ChainArgs,
    inputs: &quarry_ingest::era::EraFiles,
    reorgs: Option<Option<u64>>,
    history: History,
) -> Result<Importer> {
    let options = quarry_storage::DatabaseOptions {
        max_size: history.max_db_size,
    };
    let mut importer = chain.open_importer(datadir, options)?;
    apply_history(&mut importer, &history)?;
    // `reorgs`: `None` refuses them; `Some(depth)` follows them (`--reorg`).
    importer.set_reorgs(match reorgs {
        Some(given) => quarry_ingest::Reorgs::Follow {
            max_depth: reorg_depth(&importer, given)?,
        },
        None => quarry_ingest::Reorgs::Refuse,
    });
    let (number, hash) = importer.head();
    eprintln!(
        "datadir {}: head is block {number} ({hash})",
        datadir.display()
    );
    let started = Instant::now();
    let mut total = ImportStats::default();
    let mut progress = Progress::auto();
    for input in &inputs.inputs {
        total += importer
            .import_input(input, &inputs.checksums, &mut progress)
            .map_err(|e| stopped(&importer, e))?;
    }
    if let Some(url) = &inputs.url {
        let dir = datadir.join("era-download");
        total += importer
            .import_remote(url, &dir, &inputs.checksums, &mut progress)
            .map_err(|e| stopped(&importer, e))?;
    }
    total.elapsed = started.elapsed();
    println!(
        "imported {} blocks ({} already stored), {} transactions, {} gas in {:.2}s: {:.0} blocks/s, {:.1} Mgas/s",
        total.blocks,
        total.skipped,
        total.transactions,
        total.gas,
        total.elapsed.as_secs_f64(),
        total.blocks_per_second(),
        total.mgas_per_second()
    );
    let s = total.stages;
    println!(
        "stages: read {:.4}s, decode {:.4}s, senders {:.4}s, execution {:.4}s, state root {:.4}s, write {:.4}s, waiting for blocks {:.4}s",
        s.read.as_secs_f64(),
        s.decode.as_secs_f64(),
        s.senders.as_secs_f64(),
        s.execution.as_secs_f64(),
        s.state_root.as_secs_f64(),
        s.write.as_secs_f64(),
        s.waiting.as_secs_f64()
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "sender recovery alone: {:.4}s ({:.4}s of CPU time over {cores} cores)",
        s.senders_cpu.as_secs_f64() / cores as f64,
        s.senders_cpu.as_secs_f64()
    );
    Ok(importer)
}
