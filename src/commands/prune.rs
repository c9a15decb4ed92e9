//! `quarry prune`: sets the state history window, then prunes what lies behind it, each
//! bounded part its own commit.

use super::datadir::{give_back_free_pages, open_existing};
use eyre::Result;
use std::{path::PathBuf, time::Instant};

#[derive(clap::Args)]
pub struct PruneArgs {
    #[arg(long)]
    datadir: PathBuf,
    /// How many blocks behind the head keep their state history.
    #[arg(long, value_name = "N")]
    state_history: u64,
    /// Changeset entries pruned per commit at most (whole blocks: at least one). A commit's
    /// pages wait in memory until it lands: this bounds the memory too.
    #[arg(long, default_value_t = 200_000)]
    batch: u64,
}

pub fn run(args: PruneArgs) -> Result<()> {
    let PruneArgs {
        datadir,
        state_history: blocks,
        batch,
    } = args;
    let db = open_existing(&datadir, quarry_storage::DatabaseOptions::default())?;
    let started = Instant::now();
    let pruned = (|| -> quarry_storage::Result<u64> {
        let tx = db.writer()?;
        tx.set_state_history_window(blocks)?;
        tx.commit()?;
        loop {
            let tx = db.writer()?;
            let done = tx.prune_state_history(batch, u64::MAX)?;
            let oldest = tx.oldest_state()?;
            tx.commit()?;
            if done {
                return Ok(oldest);
            }
            eprintln!("state history pruned up to block {oldest}");
        }
    })()
    .map_err(|e| db.explain(e))?;
    println!(
        "{} keeps the state history of its last {blocks} blocks: the oldest block with state is {pruned} ({:.2}s)",
        datadir.display(),
        started.elapsed().as_secs_f64()
    );
    give_back_free_pages(&db)
}
