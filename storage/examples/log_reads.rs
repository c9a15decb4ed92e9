//! Times `StorageTx::logs` in process on a datadir of the rpc-compat chain: the two eth_getLogs
//! rows of bench/serve.sh, and an address with no logs (what a query costs before it reads any
//! receipt). Each query runs in a read transaction of its own, as a request does; no server,
//! JSON or network is timed. Prints one line per query: its name, the logs it found, and the
//! microseconds a query took, the best of `ROUNDS` rounds of `N` queries.
//! `cargo run --release -p quarry-storage --example log_reads -- DATADIR` (bench/log_reads.sh).
//!
//! It uses only the API the layouts before the block lists had too, so that bench/log_reads.sh
//! builds it in an older tree as well.
use alloy_primitives::{Address, B256, address, b256};
use quarry_storage::{Database, LogFilter, LogLimits, LogsOutcome};
use std::{
    path::Path,
    time::{Duration, Instant},
};

/// The emitter contract of the rpc-compat chain and its topics (bench/serve.sh).
const EMITTER: Address = address!("7dcd17433742f4c0ca53122ab541d0ba67fc27df");
const EMIT: B256 = b256!("00000000000000000000000000000000000000000000000000000000656d6974");
const EMIT_TOPIC1: B256 = b256!("95b7276947f6331672b0c63eca28c1d39f25286d5e2793d6a487837ff1475ba0");

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: log_reads DATADIR")?;
    let env = |name: &str, default: u32| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (n, rounds) = (env("N", 50_000), env("ROUNDS", 5));
    let db = Database::open(Path::new(&path))?;
    let queries = [
        ("address, blocks 1-4", filter(1, 4, vec![EMITTER], vec![])),
        (
            "two topics, blocks 1-54",
            filter(1, 54, vec![], vec![vec![EMIT], vec![EMIT_TOPIC1]]),
        ),
        (
            "address without logs, blocks 1-4",
            filter(1, 4, vec![Address::with_last_byte(1)], vec![]),
        ),
    ];
    for (name, filter) in &queries {
        let mut best = f64::MAX;
        let mut found = 0;
        for _ in 0..rounds {
            let start = Instant::now();
            for _ in 0..n {
                let tx = db.reader()?;
                let limits = LogLimits {
                    max_results: 10_000,
                    deadline: Instant::now() + Duration::from_secs(10),
                    use_index: true,
                };
                match tx.logs(filter, limits)? {
                    LogsOutcome::Found(logs) => found = logs.len(),
                    other => return Err(format!("{name}: {other:?}").into()),
                }
            }
            best = best.min(start.elapsed().as_secs_f64() * 1e6 / f64::from(n));
        }
        println!("{name}|{found}|{best:.2}");
    }
    Ok(())
}

fn filter(from: u64, to: u64, addresses: Vec<Address>, topics: Vec<Vec<B256>>) -> LogFilter {
    LogFilter {
        from,
        to,
        addresses,
        topics,
    }
}
