//! What the commands that write an existing datadir share: opening it, giving its free pages
//! back to the file system, and reading `--max-db-size`.

use eyre::{Context, Result, bail};
use quarry_storage::Database;
use std::{path::Path, time::Instant};

/// A size in bytes: a number, optionally followed by K, M, G or T (powers of 1,024; an
/// optional "iB" or "B" after them).
pub fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let trimmed = text.trim();
    let unit_at = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (digits, unit) = trimmed.split_at(unit_at);
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size (e.g. 512M, 2G)"))?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(format!("{text:?}: unknown unit (K, M, G or T)")),
    };
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// Opens the database a datadir already holds (an error naming the datadir when it holds none).
pub fn open_existing(datadir: &Path, options: quarry_storage::DatabaseOptions) -> Result<Database> {
    if !datadir.join("mdbx.dat").exists() {
        bail!("no quarry database in {}", datadir.display());
    }
    Database::open_with(datadir, options)
        .wrap_err_with(|| format!("cannot open database in {}", datadir.display()))
}

/// Punches the free pages the last commits left out of the data file (see
/// `Database::release_free_pages`) and says how much went back to the file system.
pub fn give_back_free_pages(db: &Database) -> Result<()> {
    let started = Instant::now();
    let released = db.release_free_pages().map_err(|e| db.explain(e))?;
    if released.unsupported {
        println!(
            "{}: {released} (quarry backup --compact writes a copy without them)",
            db.datadir().display()
        );
    } else {
        println!("{released} in {:.2}s", started.elapsed().as_secs_f64());
    }
    Ok(())
}
