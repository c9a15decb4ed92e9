//! Prints each table's entries and size in a datadir, largest first:
//! `cargo run --release -p quarry-storage --example table_sizes -- DATADIR`.
use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: table_sizes DATADIR")?;
    let db = quarry_storage::Database::open(Path::new(&path))?;
    let mut stats = db.table_stats()?;
    stats.sort_by_key(|stat| std::cmp::Reverse(stat.bytes));
    let total: u64 = stats.iter().map(|stat| stat.bytes).sum();
    println!(
        "{:<26} {:>12} {:>10} {:>9}",
        "table", "entries", "MB", "B/entry"
    );
    for stat in &stats {
        let per_entry = stat.bytes.checked_div(stat.entries).unwrap_or(0);
        println!(
            "{:<26} {:>12} {:>10.1} {:>9}",
            stat.table.name(),
            stat.entries,
            stat.bytes as f64 / 1e6,
            per_entry
        );
    }
    println!("{:<26} {:>12} {:>10.1}", "total", "", total as f64 / 1e6);
    // Not tables: the free list, and the file's pages up to the last used one.
    let space = db.space()?;
    println!(
        "{:<26} {:>12} {:>10.1}",
        "(free pages)",
        "",
        space.free_bytes as f64 / 1e6
    );
    println!(
        "{:<26} {:>12} {:>10.1}",
        "(file up to last page)",
        "",
        space.used_bytes as f64 / 1e6
    );
    // What `du` counts: free pages given back to the file system are holes.
    println!(
        "{:<26} {:>12} {:>10.1}",
        "(data file on disk)",
        "",
        space.allocated_bytes as f64 / 1e6
    );
    Ok(())
}
