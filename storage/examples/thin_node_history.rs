//! Thins a datadir's trie node history as imports do past `proof_history`, with a chosen
//! coarse window, and prints how long it took (bench/thin.sh compares coarse windows):
//! `cargo run --release -p quarry-storage --example thin_node_history -- DATADIR PROOF_HISTORY COARSE`.
use std::{path::Path, time::Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, keep, coarse] = args.as_slice() else {
        return Err("usage: thin_node_history DATADIR PROOF_HISTORY COARSE".into());
    };
    let db = quarry_storage::Database::open(Path::new(path))?;
    let tx = db.writer()?;
    tx.set_coarse_node_window(coarse.parse()?)?;
    tx.set_proof_history(Some(keep.parse()?))?;
    tx.commit()?;
    let started = Instant::now();
    let mut commits = 0;
    loop {
        let tx = db.writer()?;
        let done = tx.prune_node_history(quarry_storage::PRUNE_BUDGET)?;
        tx.commit()?;
        commits += 1;
        if done {
            break;
        }
    }
    let fine_from = db.reader()?.trie_history_fine_from()?;
    println!(
        "thinned to block {fine_from:?} with coarse window {coarse} in {:.2}s ({commits} commits)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
