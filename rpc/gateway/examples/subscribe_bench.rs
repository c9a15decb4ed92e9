//! The client side of bench/subscribe.sh: many WebSocket connections, each subscribed to
//! `newHeads` and to `logs` (a mix of address filters), while this program appends blocks of a
//! chain file to the served datadir with `quarry ingest`, one process per step, as another
//! writer would. It notes when each commit lands (polling MDBX's last commit id every
//! millisecond from this process) and when each notification arrives, and reports the delay
//! from commit to notification (p50, p99, max) and the server's memory.
//!
//! subscribe_bench --url ws://HOST:PORT/ws/v3/KEY --pid SERVER_PID --quarry BIN --datadir DIR
//!   --genesis FILE --chain FILE --from N --steps S [--per-step K] [--interval-ms MS]
//!   [--connections C] [--addresses A,B,...]
//! subscribe_bench --chain FILE --write-prefix OUT --from N   (blocks 1..=N of FILE into OUT)

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use alloy_consensus::{Block, TxEnvelope};
use futures_util::{SinkExt, StreamExt};
use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};
use tokio_tungstenite::tungstenite::Message;

struct BenchArgs {
    url: String,
    pid: u32,
    quarry: PathBuf,
    datadir: PathBuf,
    genesis: PathBuf,
    chain: PathBuf,
    from: u64,
    steps: u64,
    per_step: u64,
    interval: Duration,
    connections: usize,
    addresses: Vec<String>,
}

fn options() -> HashMap<String, String> {
    let mut map = HashMap::new();
    let mut raw = std::env::args().skip(1);
    while let (Some(name), Some(value)) = (raw.next(), raw.next()) {
        map.insert(name.trim_start_matches("--").to_string(), value);
    }
    map
}

fn read_blocks(path: &std::path::Path) -> Vec<Block<TxEnvelope>> {
    let chain = std::fs::read(path).unwrap();
    let mut rest = chain.as_slice();
    let mut blocks = Vec::new();
    while !rest.is_empty() {
        blocks.push(alloy_rlp::Decodable::decode(&mut rest).unwrap());
    }
    blocks
}

fn write_blocks(path: &std::path::Path, blocks: &[Block<TxEnvelope>]) {
    let mut bytes = Vec::new();
    for block in blocks {
        alloy_rlp::Encodable::encode(block, &mut bytes);
    }
    std::fs::write(path, bytes).unwrap();
}

fn args() -> BenchArgs {
    let map = options();
    let get = |name: &str| {
        map.get(name)
            .cloned()
            .unwrap_or_else(|| panic!("missing --{name}"))
    };
    let or = |name: &str, default: &str| map.get(name).cloned().unwrap_or(default.to_string());
    BenchArgs {
        url: get("url"),
        pid: get("pid").parse().unwrap(),
        quarry: get("quarry").into(),
        datadir: get("datadir").into(),
        genesis: get("genesis").into(),
        chain: get("chain").into(),
        from: get("from").parse().unwrap(),
        steps: get("steps").parse().unwrap(),
        per_step: or("per-step", "1").parse().unwrap(),
        interval: Duration::from_millis(or("interval-ms", "250").parse().unwrap()),
        connections: or("connections", "1000").parse().unwrap(),
        addresses: or("addresses", "")
            .split(',')
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect(),
    }
}

/// The server's anonymous resident memory (its heap: what buffers and caches take), in bytes.
/// VmRSS would count the database's pages it maps too, which belong to the page cache.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("RssAnon:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The number after `"key":"0x` in a notification, without parsing the whole JSON.
fn quantity_after(text: &str, key: &str) -> Option<u64> {
    let start = text.find(key)? + key.len();
    let rest = &text[start..];
    let end = rest.find('"')?;
    u64::from_str_radix(&rest[..end], 16).ok()
}

/// What one connection received: (block, arrival) per newHeads and per log notification.
#[derive(Default)]
struct Received {
    heads: Vec<(u64, Instant)>,
    logs: Vec<(u64, Instant)>,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let options = options();
    if let (Some(chain), Some(out), Some(from)) = (
        options.get("chain"),
        options.get("write-prefix"),
        options.get("from"),
    ) {
        let blocks = read_blocks(chain.as_ref());
        let from: usize = from.parse().unwrap();
        write_blocks(out.as_ref(), &blocks[..from.min(blocks.len())]);
        println!("{}", blocks.len());
        return;
    }
    let args = args();
    let blocks = read_blocks(&args.chain);
    let last = args.from + args.steps * args.per_step;
    assert!(
        last as usize <= blocks.len(),
        "the chain has {} blocks",
        blocks.len()
    );
    let rss_start = rss(args.pid);

    // Connect and subscribe, a few at a time.
    let received: Vec<Arc<Mutex<Received>>> =
        (0..args.connections).map(|_| Arc::default()).collect();
    let subscribed = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let tasks = connect(&args, &received, &subscribed, &stop);
    while subscribed.load(Ordering::SeqCst) < args.connections {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let rss_subscribed = rss(args.pid);
    println!(
        "{} connections subscribed to newHeads and logs; server heap (RssAnon) {} MB before, {} MB after",
        args.connections,
        rss_start >> 20,
        rss_subscribed >> 20
    );

    // Commits, as this process sees them land: (time, head).
    let commits: Arc<Mutex<Vec<(Instant, u64)>>> = Arc::default();
    let watching = Arc::new(AtomicBool::new(true));
    let watcher = {
        let (commits, watching, datadir) =
            (commits.clone(), watching.clone(), args.datadir.clone());
        std::thread::spawn(move || {
            let db = quarry_storage::Database::open(&datadir).unwrap();
            let mut seen = db.last_commit_id().unwrap();
            while watching.load(Ordering::Relaxed) {
                let id = db.last_commit_id().unwrap();
                if id != seen {
                    let at = Instant::now();
                    seen = id;
                    let head = db.reader().unwrap().head().unwrap().map_or(0, |h| h.0);
                    commits.lock().unwrap().push((at, head));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };

    let peak = Arc::new(std::sync::atomic::AtomicU64::new(rss_subscribed));
    let sampler = {
        let (peak, watching, pid) = (peak.clone(), watching.clone(), args.pid);
        std::thread::spawn(move || {
            while watching.load(Ordering::Relaxed) {
                peak.fetch_max(rss(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };

    let dir = tempdir();
    let started = Instant::now();
    for step in 0..args.steps {
        let first = args.from + step * args.per_step + 1;
        let file = dir.join(format!("step-{step}.rlp"));
        write_blocks(
            &file,
            &blocks[first as usize - 1..(first + args.per_step - 1) as usize],
        );
        let status = std::process::Command::new(&args.quarry)
            .arg("ingest")
            .arg("--datadir")
            .arg(&args.datadir)
            .arg("--genesis")
            .arg(&args.genesis)
            .arg(&file)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "quarry ingest of step {step} failed");
        tokio::time::sleep(args.interval).await;
    }
    let appending = started.elapsed();
    // Let the last notifications arrive.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let done = received
            .iter()
            .all(|r| r.lock().unwrap().heads.last().is_some_and(|h| h.0 >= last));
        if done || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    watching.store(false, Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    sampler.join().unwrap();
    let rss_end = rss(args.pid);

    let commits = commits.lock().unwrap().clone();
    let rss = Rss {
        start: rss_start,
        subscribed: rss_subscribed,
        peak: peak.load(Ordering::Relaxed),
        end: rss_end,
    };
    report(&args, &received, &commits, appending, rss);
    for task in tasks {
        task.abort();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Opens a connection per slot of `received`, each subscribed to newHeads and to logs (of one
/// of the addresses, all of them, or any), recording what arrives when until `stop`.
fn connect(
    args: &BenchArgs,
    received: &[Arc<Mutex<Received>>],
    subscribed: &Arc<AtomicUsize>,
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = Vec::new();
    let gate = Arc::new(tokio::sync::Semaphore::new(32));
    for (i, slot) in received.iter().enumerate() {
        let filter = match args.addresses.len() {
            0 => serde_json::json!({}),
            n => match i % (n + 1) {
                k if k < n => serde_json::json!({"address": args.addresses[k]}),
                _ => serde_json::json!({"address": args.addresses}),
            },
        };
        let (url, slot, subscribed, stop, gate) = (
            args.url.clone(),
            slot.clone(),
            subscribed.clone(),
            stop.clone(),
            gate.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let permit = gate.acquire_owned().await.unwrap();
            let (mut socket, _) = tokio_tungstenite::connect_async(url.as_str()).await.unwrap();
            for (id, params) in [
                (1, serde_json::json!(["newHeads"])),
                (2, serde_json::json!(["logs", filter])),
            ] {
                let request = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "eth_subscribe", "params": params});
                socket
                    .send(Message::text(request.to_string()))
                    .await
                    .unwrap();
                let answer = socket.next().await.unwrap().unwrap();
                assert!(answer.to_text().unwrap().contains("result"), "{answer}");
            }
            drop(permit);
            subscribed.fetch_add(1, Ordering::SeqCst);
            while let Some(Ok(message)) = socket.next().await {
                let now = Instant::now();
                let Message::Text(text) = message else {
                    continue;
                };
                let mut slot = slot.lock().unwrap();
                if let Some(number) = quantity_after(&text, r#""blockNumber":"0x"#) {
                    slot.logs.push((number, now));
                } else if let Some(number) = quantity_after(&text, r#""number":"0x"#) {
                    slot.heads.push((number, now));
                }
                if stop.load(Ordering::Relaxed) {
                    break;
                }
            }
        }));
    }
    tasks
}

/// The server's anonymous memory at the run's stages.
struct Rss {
    start: u64,
    subscribed: u64,
    peak: u64,
    end: u64,
}

/// Prints commit-to-arrival latencies of both kinds of notification, their order, and memory.
fn report(
    args: &BenchArgs,
    received: &[Arc<Mutex<Received>>],
    commits: &[(Instant, u64)],
    appending: Duration,
    rss: Rss,
) {
    let last = args.from + args.steps * args.per_step;
    // A block's commit: the first one whose head reached it.
    let committed = |block: u64| commits.iter().find(|(_, head)| *head >= block).map(|c| c.0);
    let (mut heads, mut logs, mut missing, mut out_of_order) = (Vec::new(), Vec::new(), 0, 0);
    for slot in received {
        let slot = slot.lock().unwrap();
        let numbers: Vec<u64> = slot.heads.iter().map(|h| h.0).collect();
        if numbers != (args.from + 1..=last).collect::<Vec<_>>() {
            out_of_order += 1;
        }
        for (block, at) in &slot.heads {
            match committed(*block) {
                Some(commit) => heads.push(at.saturating_duration_since(commit)),
                None => missing += 1,
            }
        }
        for (block, at) in &slot.logs {
            if let Some(commit) = committed(*block) {
                logs.push(at.saturating_duration_since(commit));
            }
        }
    }
    heads.sort();
    logs.sort();
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
    println!(
        "appended {} blocks in {} commits over {:.1} s ({} commits seen)",
        last - args.from,
        args.steps,
        appending.as_secs_f64(),
        commits.len()
    );
    println!(
        "newHeads: {} notifications, commit to arrival p50 {}, p99 {}, max {}",
        heads.len(),
        ms(percentile(&heads, 0.5)),
        ms(percentile(&heads, 0.99)),
        ms(heads.last().copied().unwrap_or_default())
    );
    println!(
        "logs: {} notifications, commit to arrival p50 {}, p99 {}, max {}",
        logs.len(),
        ms(percentile(&logs, 0.5)),
        ms(percentile(&logs, 0.99)),
        ms(logs.last().copied().unwrap_or_default())
    );
    println!(
        "connections whose heads were not exactly blocks {} to {last} in order: {out_of_order}; notifications without a commit seen: {missing}",
        args.from + 1
    );
    println!(
        "server heap (RssAnon): {} MB before connecting, {} MB subscribed, peak {} MB, {} MB at the end: growth while appending {} MB",
        rss.start >> 20,
        rss.subscribed >> 20,
        rss.peak >> 20,
        rss.end >> 20,
        rss.peak.saturating_sub(rss.subscribed) >> 20
    );
}

fn tempdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("subscribe-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
