//! A writer's commit latency: COMMITS write transactions in a row into DATADIR, each putting
//! 256 values of 1 KiB under `Meta` keys of its own (`MetaKey::Scratch`, overwritten in turn, so
//! the datadir holds at most 16 MiB of them, and pages freed by one commit are reused by the next
//! unless a reader holds them), timed from the write transaction's start to the end of its
//! commit (durable). bench/backup.sh runs it alone and during a `quarry backup`: the cost of a
//! copy to a live writer. Prints p50, p90, p99 and max in ms.
//! `cargo run --release -p quarry-storage --example commit_latency -- DATADIR COMMITS`.
use quarry_storage::MetaKey;
use std::{path::Path, time::Instant};

/// Values one commit puts.
const PER_COMMIT: u32 = 256;
/// Commits before their keys come round again: the datadir holds at most this many commits'.
const ROUNDS: u32 = 64;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, commits] = args.as_slice() else {
        return Err("usage: commit_latency DATADIR COMMITS".into());
    };
    let commits: usize = commits.parse()?;
    let db = quarry_storage::Database::open(Path::new(path))?;
    let value = vec![0x5au8; 1024];
    let mut took = Vec::with_capacity(commits);
    for commit in 0..commits {
        let started = Instant::now();
        let tx = db.writer()?;
        let round = commit as u32 % ROUNDS;
        for i in 0..PER_COMMIT {
            tx.put_meta(MetaKey::Scratch(round * PER_COMMIT + i), &value)?;
        }
        tx.commit()?;
        took.push(started.elapsed().as_secs_f64() * 1e3);
    }
    // Leave the datadir's Meta as it was.
    let tx = db.writer()?;
    for n in 0..ROUNDS * PER_COMMIT {
        tx.del_meta(MetaKey::Scratch(n))?;
    }
    tx.commit()?;
    took.sort_by(f64::total_cmp);
    let at = |q: f64| took[((took.len() - 1) as f64 * q) as usize];
    println!(
        "{commits} commits: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
    Ok(())
}
