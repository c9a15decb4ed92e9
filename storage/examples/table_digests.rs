//! Prints each table's entry count and a digest of its keys and values, one line per table, so
//! that two datadirs written by different builds can be compared with `diff`:
//! `cargo run --release -p quarry-storage --example table_digests -- DATADIR`.
use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: table_digests DATADIR")?;
    let db = quarry_storage::Database::open(Path::new(&path))?;
    let reader = db.reader()?;
    for table in quarry_storage::Table::ALL {
        let (entries, digest) = reader.table_digest(*table)?;
        println!("{:<26} {entries:>12} {digest}", table.name());
    }
    Ok(())
}
