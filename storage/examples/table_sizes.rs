//! Prints each table's entries and size in a datadir, largest first:
//! `cargo run --release -p quarry-storage --example table_sizes -- DATADIR [--payload]`.
//! With `--payload` it also reads every entry and prints the key and value bytes each table
//! holds, and how full its leaf pages are (not for tables of duplicates, whose key is counted
//! once per value).
use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: table_sizes DATADIR [--payload]")?;
    let payload = std::env::args().nth(2).as_deref() == Some("--payload");
    let db = quarry_storage::Database::open(Path::new(&path))?;
    let reader = db.reader()?;
    let mut stats = db.table_stats()?;
    stats.sort_by_key(|stat| std::cmp::Reverse(stat.bytes));
    let total: u64 = stats.iter().map(|stat| stat.bytes).sum();
    print!(
        "{:<26} {:>12} {:>10} {:>9}",
        "table", "entries", "MB", "B/entry"
    );
    if payload {
        print!(" {:>9} {:>9} {:>6}", "key MB", "value MB", "fill");
    }
    println!();
    for stat in &stats {
        let per_entry = stat.bytes.checked_div(stat.entries).unwrap_or(0);
        print!(
            "{:<26} {:>12} {:>10.1} {:>9}",
            stat.table.name(),
            stat.entries,
            stat.bytes as f64 / 1e6,
            per_entry
        );
        if payload {
            let bytes = reader.table_payload(stat.table)?;
            // Each entry in a leaf page also takes an 8-byte node header and a 2-byte pointer.
            let used = bytes.key_bytes + bytes.value_bytes + 10 * stat.entries;
            print!(
                " {:>9.1} {:>9.1}",
                bytes.key_bytes as f64 / 1e6,
                bytes.value_bytes as f64 / 1e6,
            );
            // Duplicates share their key (and fixed-size ones take no node header each): the
            // bytes above count the key once per value, and the fill would mean nothing.
            if !stat.table.fixed_size_duplicates() && !stat.table.sorted_duplicates() {
                print!(
                    " {:>5.0}%",
                    100.0 * used as f64 / bytes.leaf_bytes.max(1) as f64
                );
            }
        }
        println!();
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
