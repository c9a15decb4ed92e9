//! `quarry index-traces`: the trace_filter index of the blocks a database stored before quarry
//! had one (`quarry migrate` builds it too, through [`index_traces_of`]).

use eyre::{Context, Result, bail};
use quarry_storage::Database;
use std::{
    path::{Path, PathBuf},
    time::Instant,
};

#[derive(clap::Args)]
pub struct IndexTracesArgs {
    #[arg(long)]
    datadir: PathBuf,
}

pub fn run(args: IndexTracesArgs) -> Result<()> {
    let datadir = args.datadir.as_path();
    if !datadir.join("mdbx.dat").exists() {
        bail!("no quarry database in {}", datadir.display());
    }
    let db = Database::open(datadir)
        .wrap_err_with(|| format!("cannot open database in {}", datadir.display()))?;
    index_traces_of(&db, datadir)
}

/// Builds the trace index of `db` (the database in `datadir`) up to its head. The caller's
/// environment is used: MDBX takes one environment per file in a process.
pub fn index_traces_of(db: &Database, datadir: &Path) -> Result<()> {
    const BATCH: u64 = 200;
    let Some(spec) = quarry_executor::ChainSpec::stored(&db.reader()?)? else {
        bail!("no chain in the database in {}", datadir.display());
    };
    let started = Instant::now();
    loop {
        let reader = db.reader()?;
        let head = reader.head()?.map_or(0, |(number, _)| number);
        let next = reader.trace_index_head()?.map_or(1, |indexed| indexed + 1);
        if next > head {
            println!(
                "trace index complete through block {head} in {:.2}s",
                started.elapsed().as_secs_f64()
            );
            return Ok(());
        }
        let last = head.min(next + BATCH - 1);
        let entries = quarry_executor::parity_trace::index_entries(&spec, &reader, next, last)
            .wrap_err_with(|| format!("cannot trace blocks {next} to {last}"))?;
        let traced = reader.canonical_hash(last)?;
        drop(reader);
        let tx = db.writer()?;
        if tx.canonical_hash(last)? != traced {
            // A reorganisation replaced the traced blocks: trace the new ones.
            continue;
        }
        if next == 1 {
            tx.index_block_traces(0, &[], &[])?;
        }
        let indexed = (|| {
            for (number, addresses) in &entries {
                let named = tx.stored_block_named_addresses(*number)?;
                tx.index_block_traces(*number, addresses, &named)?;
            }
            let indexed = tx.trace_index_head()?;
            tx.commit()?;
            Ok(indexed)
        })()
        .map_err(|e| db.explain(e))?;
        if indexed != Some(last) {
            // A reorganisation moved the chain under the batch: start again from the index.
            eprintln!("the chain changed while indexing blocks {next} to {last}; continuing");
            continue;
        }
        eprintln!("trace index through block {last} of {head}");
    }
}
