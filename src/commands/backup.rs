//! `quarry backup`: MDBX's copy of the datadir, made through one read transaction.

use super::datadir::open_existing;
use eyre::Result;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct BackupArgs {
    #[arg(long)]
    datadir: PathBuf,
    /// The directory the copy goes into (created; it must not hold a datadir).
    #[arg(long)]
    out: PathBuf,
    /// Leave out free pages and renumber the rest: a smaller copy, a little more CPU.
    #[arg(long)]
    compact: bool,
}

pub fn run(args: BackupArgs) -> Result<()> {
    let BackupArgs {
        datadir,
        out,
        compact,
    } = args;
    let db = open_existing(&datadir, quarry_storage::DatabaseOptions::default())?;
    let report = db.backup(&out, compact)?;
    let head = match report.head {
        Some((number, hash)) => format!("head block {number} ({hash})"),
        None => "no blocks".to_string(),
    };
    println!(
        "backed up {} to {}: {head}, {:.1} MB on disk{}, in {:.2} s",
        datadir.display(),
        out.display(),
        report.bytes as f64 / 1e6,
        if compact { " (compacted)" } else { "" },
        report.seconds
    );
    Ok(())
}
