//! `quarry export-era`: a datadir's stored history written out as era1 files.

use eyre::{Context, Result, bail};
use quarry_ingest::era::{
    Format,
    export::{ExportOptions, export},
};
use quarry_storage::Database;
use std::path::PathBuf;

/// The format of the files written.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum EraFormat {
    /// Pre-merge history: headers, bodies, receipts and total difficulties, with the
    /// accumulator.
    Era1,
    /// Post-merge history with slim receipts (reth's `.ere`).
    Ere,
}

#[derive(clap::Args, Debug)]
pub struct ExportEraArgs {
    #[arg(long)]
    datadir: PathBuf,
    /// The folder to write into (created if missing).
    #[arg(long)]
    out: PathBuf,
    #[arg(long, value_enum, default_value = "era1")]
    format: EraFormat,
    /// The first era to write (era N holds blocks N*8192 to N*8192+8191).
    #[arg(long, default_value_t = 0)]
    from_era: u64,
    /// The last era to write (default: the head's era; for era1, the era of the last stored
    /// pre-merge block).
    #[arg(long)]
    to_era: Option<u64>,
}

pub fn run(args: ExportEraArgs) -> Result<()> {
    if !args.datadir.join("mdbx.dat").exists() {
        bail!("no quarry database in {}", args.datadir.display());
    }
    let db = Database::open(&args.datadir)
        .wrap_err_with(|| format!("cannot open database in {}", args.datadir.display()))?;
    let options = ExportOptions {
        out: args.out.clone(),
        format: match args.format {
            EraFormat::Era1 => Format::Era1,
            EraFormat::Ere => Format::Ere,
        },
        from_era: args.from_era,
        to_era: args.to_era,
    };
    let written = export(&db, &options)?;
    for file in &written {
        println!(
            "{}: blocks {} to {}",
            file.path.display(),
            file.first,
            file.last
        );
    }
    println!(
        "wrote {} {} files and {}",
        written.len(),
        match args.format {
            EraFormat::Era1 => "era1",
            EraFormat::Ere => "ere",
        },
        args.out.join("checksums.txt").display()
    );
    Ok(())
}
