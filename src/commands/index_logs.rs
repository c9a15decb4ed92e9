//! `quarry index-logs`: the eth_getLogs index of a database written before quarry had one.

use eyre::{Context, Result, bail};
use quarry_storage::Database;
use std::{path::PathBuf, time::Instant};

#[derive(clap::Args)]
pub struct IndexLogsArgs {
    #[arg(long)]
    datadir: PathBuf,
}

pub fn run(args: IndexLogsArgs) -> Result<()> {
    const BATCH: u64 = 1000;
    let datadir = args.datadir;
    if !datadir.join("mdbx.dat").exists() {
        bail!("no quarry database in {}", datadir.display());
    }
    let db = Database::open(&datadir)
        .wrap_err_with(|| format!("cannot open database in {}", datadir.display()))?;
    let head = db.reader()?.head()?.map_or(0, |(number, _)| number);
    let started = Instant::now();
    loop {
        let step = || {
            let tx = db.writer()?;
            let before = tx.log_index_head()?;
            let indexed = tx.build_log_index(BATCH)?;
            tx.commit()?;
            Ok::<_, quarry_storage::Error>((before, indexed))
        };
        let (before, indexed) = step().map_err(|e| db.explain(e))?;
        eprintln!("log index through block {indexed} of {head}");
        if before == Some(indexed) || indexed >= head {
            break;
        }
    }
    println!(
        "log index complete through block {head} in {:.2}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
