//! `quarry unwind`: every block above a given one removed from a datadir, in one commit.

use super::chain::ChainArgs;
use eyre::{Result, bail};
use std::{path::PathBuf, time::Instant};

#[derive(clap::Args)]
pub struct UnwindArgs {
    #[arg(long)]
    datadir: PathBuf,
    #[command(flatten)]
    chain: ChainArgs,
    /// The block to keep as the new head.
    #[arg(long)]
    to: u64,
}

pub fn run(args: UnwindArgs) -> Result<()> {
    let UnwindArgs { datadir, chain, to } = args;
    if !datadir.join("mdbx.dat").exists() {
        bail!("no quarry database in {}", datadir.display());
    }
    let mut importer = chain.open_importer(&datadir, Default::default())?;
    let (head, _) = importer.head();
    if to >= head {
        bail!("--to {to} is not below the head, block {head}: nothing to unwind");
    }
    let started = Instant::now();
    importer.unwind_to(to).map_err(|e| importer.explain(e))?;
    let (number, hash) = importer.head();
    println!(
        "unwound {} blocks in {:.3}s; head: block {number} ({hash})",
        head - to,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
