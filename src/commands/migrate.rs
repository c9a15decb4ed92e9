//! `quarry migrate`: a datadir written by an older quarry brought to the current layout, its
//! node history thinned to its `proof_history`, and its trace index built.

use super::{
    datadir::{give_back_free_pages, open_existing, parse_size},
    index_traces::index_traces_of,
};
use eyre::Result;
use quarry_storage::Database;
use std::{path::PathBuf, time::Instant};

#[derive(clap::Args)]
pub struct MigrateArgs {
    #[arg(long)]
    datadir: PathBuf,
    /// Set the datadir's `proof_history` (as `quarry ingest --proof-history`) first, so
    /// that a datadir that kept its whole node history is thinned without importing.
    #[arg(long)]
    proof_history: Option<u64>,
    /// The most bytes the database file may grow to (suffixes K, M, G, T: powers of 1,024;
    /// default 1T). A commit that would need more stops with a message naming this setting.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "1T")]
    max_db_size: u64,
}

pub fn run(args: MigrateArgs) -> Result<()> {
    let MigrateArgs {
        datadir,
        proof_history,
        max_db_size,
    } = args;
    let options = quarry_storage::DatabaseOptions {
        max_size: max_db_size,
    };
    let db = open_existing(&datadir, options)?;
    let started = Instant::now();
    migrate_layout(&db, proof_history).map_err(|e| db.explain(e))?;
    // The trace index, for the blocks stored before it.
    index_traces_of(&db, &datadir)?;
    println!(
        "{} is at layout {} ({:.2}s)",
        datadir.display(),
        quarry_storage::SCHEMA_VERSION,
        started.elapsed().as_secs_f64()
    );
    give_back_free_pages(&db)
}

/// `quarry migrate`'s steps in the database itself, each batch its own commit.
fn migrate_layout(db: &Database, proof_history: Option<u64>) -> quarry_storage::Result<()> {
    // History entries or receipts per commit.
    const BATCH: u64 = 200_000;
    loop {
        let tx = db.writer()?;
        let layout = tx.schema_version()?;
        let done = tx.migrate_step(BATCH)?;
        tx.commit()?;
        if done {
            break;
        }
        eprintln!("layout {layout}: {BATCH} more entries migrated");
    }
    if let Some(blocks) = proof_history {
        let tx = db.writer()?;
        tx.set_proof_history(Some(blocks))?;
        tx.commit()?;
    }
    // Node history that fell behind `proof_history` (set on a datadir with a long history)
    // is thinned here too, a bounded part per commit, as imports would.
    loop {
        let tx = db.writer()?;
        let done = tx.prune_node_history(quarry_storage::PRUNE_BUDGET)?;
        tx.commit()?;
        if done {
            break;
        }
        eprintln!(
            "node history: thinned up to block {:?}",
            db.reader()?.trie_history_fine_from()?
        );
    }
    Ok(())
}
