//! The `quarry` command line.

use clap::{Parser, Subcommand};
use eyre::{Context, Result, bail};
use quarry_ingest::{ImportStats, Importer, Progress, blocktest};
use quarry_storage::Database;
use std::{path::PathBuf, time::Instant};

#[derive(Parser)]
#[command(
    name = "quarry",
    version,
    about = "A self-hosted Ethereum JSON-RPC query node"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Execute, verify and store a chain: genesis.json plus files of concatenated RLP blocks
    /// (plain or gzip). Re-running continues from the stored head.
    Ingest {
        /// Database directory (created if missing).
        #[arg(long)]
        datadir: PathBuf,
        /// The chain's genesis.json.
        #[arg(long)]
        genesis: PathBuf,
        /// Block files, imported in order.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Run Ethereum BlockchainTests JSON files (or folders of them) through quarry's import path.
    Blocktest {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Ingest {
            datadir,
            genesis,
            files,
        } => ingest(datadir, genesis, files),
        Command::Blocktest { paths } => run_blocktests(paths),
    }
}

fn ingest(datadir: PathBuf, genesis: PathBuf, files: Vec<PathBuf>) -> Result<()> {
    let text = std::fs::read_to_string(&genesis)
        .wrap_err_with(|| format!("cannot read {}", genesis.display()))?;
    let genesis: alloy_genesis::Genesis = serde_json::from_str(&text)
        .wrap_err_with(|| format!("{} is not a valid genesis.json", genesis.display()))?;
    let db = Database::open(&datadir)
        .wrap_err_with(|| format!("cannot open database in {}", datadir.display()))?;
    let mut importer = Importer::open(db, &genesis)?;
    let (number, hash) = importer.head();
    eprintln!(
        "datadir {}: head is block {number} ({hash})",
        datadir.display()
    );
    let started = Instant::now();
    let mut total = ImportStats::default();
    let mut progress = Progress::auto();
    for file in &files {
        total += importer.import_file(file, &mut progress)?;
    }
    total.elapsed = started.elapsed();
    let (number, hash) = importer.head();
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
        "stages: decode {:.4}s, senders {:.4}s, execution {:.4}s, state root {:.4}s, write {:.4}s",
        s.decode.as_secs_f64(),
        s.senders.as_secs_f64(),
        s.execution.as_secs_f64(),
        s.state_root.as_secs_f64(),
        s.write.as_secs_f64()
    );
    println!("head: block {number} ({hash})");
    Ok(())
}

fn run_blocktests(paths: Vec<PathBuf>) -> Result<()> {
    let mut files = Vec::new();
    for path in &paths {
        files.extend(
            blocktest::test_files(path)
                .wrap_err_with(|| format!("cannot read {}", path.display()))?,
        );
    }
    let (mut passed, mut failed) = (0usize, 0usize);
    for file in files {
        for outcome in blocktest::run_file(&file) {
            match outcome.failure {
                None => {
                    passed += 1;
                    println!("PASS {}", outcome.name);
                }
                Some(reason) => {
                    failed += 1;
                    println!("FAIL {}\n    {reason}", outcome.name);
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        bail!("{failed} blockchain tests failed");
    }
    Ok(())
}
