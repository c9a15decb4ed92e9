//! Importing into a datadir, as `quarry ingest`, `quarry follow` and `quarry dev` do: what the
//! datadir records of its history, how deep a reorganisation may go, and the import itself
//! with its summary.

use super::chain::ChainArgs;
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
