//! `quarry devchain`: a deterministic test chain (genesis.json and chain.rlp) signed by the dev
//! accounts.

use eyre::{Context, Result};
use std::{path::PathBuf, time::Instant};

#[derive(clap::Args)]
pub struct DevchainArgs {
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    #[arg(long, default_value_t = quarry_devchain::GenerateOptions::default().blocks)]
    blocks: u64,
    /// Transactions in each block's mix (blocks 1 and 2 and fork blocks add scripted ones).
    #[arg(long, default_value_t = quarry_devchain::GenerateOptions::default().txs_per_block)]
    txs_per_block: usize,
    /// Seed of the mix: the same seed gives the same bytes.
    #[arg(long, default_value_t = quarry_devchain::GenerateOptions::default().seed)]
    seed: u64,
    /// Fork schedule: `staged` (proof of work with uncles, the merge at block 12, then
    /// Shanghai, Cancun, Prague and Osaka every 4 blocks), `genesis` (every fork through
    /// Osaka active at block 0, as geth --dev and reth --dev start) or `pow` (every fork
    /// through Gray Glacier at block 0 and never the merge: every block proof of work,
    /// with uncles, for era1 export; no --fork-at).
    #[arg(long, default_value = "staged")]
    forks: quarry_devchain::Forks,
    /// Write a competing branch of the chain the other options describe: blocks 1..=N
    /// identical to it byte for byte, then blocks N+1..=--blocks with a different mix and
    /// withdrawals (from --fork-seed) and the extra data "quarry devchain fork". `quarry
    /// ingest --reorg` takes it over the ordinary chain. N must be after the merge (at
    /// least 12 with --forks staged, 1 with --forks genesis) and below --blocks.
    #[arg(long, value_name = "N")]
    fork_at: Option<u64>,
    /// With --fork-at: seed of the branch's own blocks (default 1); each seed gives a
    /// different branch.
    #[arg(long, value_name = "S", requires = "fork_at")]
    fork_seed: Option<u64>,
}

pub fn run(args: DevchainArgs) -> Result<()> {
    let DevchainArgs {
        out,
        blocks,
        txs_per_block,
        seed,
        forks,
        fork_at,
        fork_seed,
    } = args;
    let options = quarry_devchain::GenerateOptions {
        blocks,
        txs_per_block,
        seed,
        forks,
        fork: fork_at.map(|at| quarry_devchain::ForkBranch {
            at,
            seed: fork_seed.unwrap_or(1),
        }),
    };
    let mut last_report = Instant::now();
    let summary = quarry_devchain::generate(&out, &options, &mut |s| {
        if last_report.elapsed().as_secs() >= 2 {
            last_report = Instant::now();
            eprintln!(
                "block {}/{}: {} transactions, {:.0} blocks/s",
                s.blocks,
                options.blocks,
                s.transactions,
                s.blocks as f64 / s.elapsed.as_secs_f64()
            );
        }
    })
    .wrap_err_with(|| format!("cannot generate a chain in {}", out.display()))?;
    let secs = summary.elapsed.as_secs_f64();
    println!(
        "generated {} blocks, {} transactions, {} gas, {} bytes in {:.2}s: {:.0} blocks/s, {:.0} tx/s, {:.1} Mgas/s",
        summary.blocks,
        summary.transactions,
        summary.gas,
        summary.bytes,
        secs,
        summary.blocks as f64 / secs,
        summary.transactions as f64 / secs,
        summary.gas as f64 / 1e6 / secs
    );
    println!(
        "stages: planning and signing {:.2}s, building {:.2}s",
        summary.planning.as_secs_f64(),
        summary.building.as_secs_f64()
    );
    println!(
        "wrote {} and {}",
        out.join("genesis.json").display(),
        out.join("chain.rlp").display()
    );
    Ok(())
}
