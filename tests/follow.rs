//! `quarry follow` against real upstreams: a `quarry serve` whose datadir another process grows
//! and reorganises, and a scripted upstream that serves a block failing verification.

#![allow(clippy::unwrap_used)]

mod support;

use alloy_primitives::B256;
use alloy_rlp::Encodable;
use quarry_storage::{BlockMark, Database, Table};
use serde_json::{Value, json};
use std::{
    io::{BufReader, Read, Write},
    net::TcpListener,
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};
use support::{Block, QUARRY, Server, ingest_args, run_quarry};

type Chains = support::ForkedChains;

fn head(datadir: &Path) -> Option<(u64, B256)> {
    if !datadir.join("mdbx.dat").exists() {
        return None;
    }
    Database::open(datadir)
        .unwrap()
        .reader()
        .unwrap()
        .head()
        .unwrap()
}

fn wait_for_head(datadir: &Path, wanted: B256, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while head(datadir).map(|(_, hash)| hash) != Some(wanted) {
        assert!(
            Instant::now() < deadline,
            "{what}: head {:?}, waiting for {wanted}",
            head(datadir)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every table's digest but Meta's (marks and counters differ by design) and Bytecodes' (code
/// of unwound blocks stays, keyed by its hash).
fn digests(datadir: &Path) -> Vec<(&'static str, (u64, B256))> {
    let db = Database::open(datadir).unwrap();
    let reader = db.reader().unwrap();
    Table::ALL
        .iter()
        .filter(|t| !matches!(t, Table::Meta | Table::Bytecodes))
        .map(|t| (t.name(), reader.table_digest(*t).unwrap()))
        .collect()
}

/// A `quarry follow` process, killed when dropped.
struct Follower {
    child: Child,
}

impl Follower {
    fn start(datadir: &Path, genesis: &Path, upstream: &str, extra: &[&str]) -> Self {
        let child = Command::new(QUARRY)
            .args(["follow", "--datadir"])
            .arg(datadir)
            .arg("--genesis")
            .arg(genesis)
            .args(["--upstream", upstream, "--poll-ms", "20"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Self { child }
    }

    /// Kills it (SIGKILL) and returns what it logged.
    fn kill(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut log = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            let _ = stderr.read_to_string(&mut log);
        }
        log
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A follower (raw blocks, and a second one rebuilding blocks from JSON) tracks an upstream
/// `quarry serve` whose datadir another process grows and then reorganises to a fork: both end
/// on the fork's head with every table equal to a fresh ingest of the fork, and answer their
/// upstream's peer count.
#[test]
fn followers_track_an_upstream_through_growth_and_a_reorg() {
    let chains = Chains::generate();
    let upstream_dir = chains.dir.join("upstream");
    let first = chains.file("first20.rlp", &chains.main, 20);
    run_quarry(ingest_args(&upstream_dir, &chains.genesis, &[&first]));
    let upstream = Server::start(&upstream_dir, "");
    // The same upstream without debug_getRawBlock, as many hosted providers serve it.
    let json_only = JsonOnlyProxy::start(&upstream.http_url(support::KEY));
    let (raw_dir, json_dir) = (chains.dir.join("raw"), chains.dir.join("json"));
    let raw = Follower::start(
        &raw_dir,
        &chains.genesis,
        &upstream.ws_url(support::KEY),
        &[],
    );
    let json = Follower::start(&json_dir, &chains.genesis, &json_only.url(), &[]);
    let hash = |blocks: &[Block], number: u64| blocks[number as usize - 1].header.hash_slow();
    for dir in [&raw_dir, &json_dir] {
        wait_for_head(dir, hash(&chains.main, 20), "first 20 blocks");
    }

    // Another process grows the upstream's datadir...
    let all = chains.file("main.rlp", &chains.main, u64::MAX);
    run_quarry(ingest_args(&upstream_dir, &chains.genesis, &[&all]));
    for dir in [&raw_dir, &json_dir] {
        wait_for_head(dir, hash(&chains.main, 40), "main chain");
    }
    // ...then switches it to the fork, 10 blocks deep.
    let fork = chains.file("fork.rlp", &chains.fork, u64::MAX);
    let mut args = ingest_args(&upstream_dir, &chains.genesis, &[&fork]);
    args.push("--reorg".as_ref());
    run_quarry(args);
    for dir in [&raw_dir, &json_dir] {
        wait_for_head(dir, hash(&chains.fork, 45), "fork");
    }
    // The upstream names no safe or finalized block of its own, so it answers its head for
    // both (quarry serve's default), and the followers keep that.
    let deadline = Instant::now() + Duration::from_secs(60);
    for dir in [&raw_dir, &json_dir] {
        let marks = || {
            let db = Database::open(dir).unwrap();
            let reader = db.reader().unwrap();
            [BlockMark::Safe, BlockMark::Finalized].map(|mark| reader.meta_block(mark).unwrap())
        };
        while marks() != [Some(45), Some(45)] {
            assert!(Instant::now() < deadline, "marks {:?}", marks());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let raw_log = raw.kill();
    let json_log = json.kill();
    assert!(
        raw_log.contains("reorg: replaced blocks 31 to 40"),
        "{raw_log}"
    );
    assert!(!raw_log.contains("fetching blocks as JSON"), "{raw_log}");
    // Once caught up it gave its free pages back to the file system; the digests below show
    // that nothing it stored went with them.
    assert!(
        raw_log.contains("of free pages back to the file system"),
        "{raw_log}"
    );
    assert!(json_log.contains("fetching blocks as JSON"), "{json_log}");
    assert!(
        json_log.contains("reorg: replaced blocks 31 to 40"),
        "{json_log}"
    );

    let fresh = digests(&chains.fresh("fresh-fork", &chains.fork));
    assert_eq!(digests(&raw_dir), fresh, "raw follower");
    assert_eq!(digests(&json_dir), fresh, "JSON follower");

    // net_peerCount on a follower's datadir is its upstream's: none for `quarry serve`, 25 for
    // the proxy.
    for (dir, peers) in [(&raw_dir, "0x0"), (&json_dir, "0x19")] {
        let server = Server::start(dir, "");
        assert_eq!(
            server.result("net_peerCount", json!([])),
            json!(peers),
            "{dir:?}"
        );
    }
}

/// An upstream that answers everything as `target` does but debug_getRawBlock, which it does
/// not offer (-32601), and net_peerCount, which it answers as a node with 25 peers, over HTTP.
struct JsonOnlyProxy {
    addr: String,
}

impl JsonOnlyProxy {
    fn start(target: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let target = target.to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let target = target.clone();
                std::thread::spawn(move || serve_http(stream, |request| forward(&target, request)));
            }
        });
        Self { addr }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

/// `request` sent to `target`, unless it is debug_getRawBlock or net_peerCount.
fn forward(target: &str, request: &Value) -> Value {
    if request["method"] == "debug_getRawBlock" {
        return json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601,
            "message": "the method debug_getRawBlock does not exist/is not available"}});
    }
    if request["method"] == "net_peerCount" {
        return json!({"jsonrpc": "2.0", "id": request["id"], "result": "0x19"});
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let text = agent
        .post(target)
        .header("Content-Type", "application/json")
        .send(request.to_string())
        .and_then(|mut response| {
            response
                .body_mut()
                .with_config()
                .limit(256 << 20)
                .read_to_string()
        })
        .unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Answers the JSON-RPC requests of one keep-alive HTTP connection with `answer`, until the
/// client closes it.
fn serve_http(
    stream: std::net::TcpStream,
    answer: impl Fn(&Value) -> Value,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    while let Some(body) = support::read_request_body(&mut reader)? {
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let response = answer(&request).to_string();
        write!(
            writer,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{response}",
            response.len()
        )?;
    }
    Ok(())
}

/// A scripted upstream over HTTP: eth_blockNumber, eth_getBlockByNumber (number and hash only)
/// and debug_getRawBlock over a fixed list of blocks, a thread per connection.
struct ScriptedUpstream {
    addr: String,
}

impl ScriptedUpstream {
    fn start(genesis: &Path, blocks: Vec<Block>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        // Block 0's hash, from a datadir holding only the genesis.
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.rlp");
        std::fs::write(&empty, b"").unwrap();
        let datadir = dir.path().join("data");
        run_quarry(ingest_args(&datadir, genesis, &[&empty]));
        let genesis_hash = head(&datadir).unwrap().1;
        let blocks = std::sync::Arc::new(blocks);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let blocks = blocks.clone();
                std::thread::spawn(move || serve_connection(stream, genesis_hash, &blocks));
            }
        });
        Self { addr }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

/// The scripted upstream's answers, on one connection.
fn serve_connection(
    stream: std::net::TcpStream,
    genesis_hash: B256,
    blocks: &[Block],
) -> std::io::Result<()> {
    serve_http(stream, |request| {
        let number = |value: &Value| {
            value
                .as_str()
                .and_then(|n| u64::from_str_radix(n.trim_start_matches("0x"), 16).ok())
        };
        let block = |n: Option<u64>| n.and_then(|n| blocks.iter().find(|b| b.header.number == n));
        let result = match request["method"].as_str() {
            Some("eth_blockNumber") => json!(format!("{:#x}", blocks.len())),
            Some("eth_getBlockByNumber") => {
                let n = number(&request["params"][0]);
                match (n, block(n)) {
                    (Some(0), _) => json!({"number": "0x0", "hash": genesis_hash}),
                    (Some(n), Some(b)) => {
                        json!({"number": format!("{n:#x}"), "hash": b.header.hash_slow()})
                    }
                    _ => Value::Null,
                }
            }
            Some("debug_getRawBlock") => match block(number(&request["params"][0])) {
                Some(b) => {
                    let mut rlp = Vec::new();
                    b.encode(&mut rlp);
                    json!(alloy_primitives::Bytes::from(rlp))
                }
                None => Value::Null,
            },
            _ => Value::Null,
        };
        json!({"jsonrpc": "2.0", "id": request["id"], "result": result})
    })
}

/// An upstream serving a block whose state root is wrong: the follower refuses it, keeps the
/// chain before it, says why, and keeps running.
#[test]
fn a_block_that_fails_verification_is_refused_and_the_chain_before_it_kept() {
    let chains = Chains::generate();
    let mut blocks: Vec<Block> = chains.main.iter().take(12).cloned().collect();
    blocks[11].header.state_root = B256::repeat_byte(0xee);
    let bad_hash = blocks[11].header.hash_slow();
    let upstream = ScriptedUpstream::start(&chains.genesis, blocks);
    let datadir = chains.dir.join("follower");
    let follower = Follower::start(&datadir, &chains.genesis, &upstream.url(), &[]);
    wait_for_head(
        &datadir,
        chains.main[10].header.hash_slow(),
        "blocks 1 to 11",
    );
    // Retried with backoff, refused every time.
    std::thread::sleep(Duration::from_millis(1500));
    let log = follower.kill();
    assert_eq!(head(&datadir).unwrap().0, 11);
    assert!(log.contains(&format!("block 12 ({bad_hash})")), "{log}");
    assert!(log.contains("stateRoot"), "{log}");
    assert!(log.matches("retrying").count() >= 2, "{log}");
}

/// A reorganisation deeper than --max-reorg-depth is refused, naming both blocks at the
/// height where the walk back stopped, and nothing changes.
#[test]
fn a_reorg_deeper_than_the_limit_is_refused() {
    let chains = Chains::generate();
    let datadir = chains.fresh("follower", &chains.main);
    let before = digests(&datadir);
    let upstream_dir = chains.fresh("upstream", &chains.fork);
    let upstream = Server::start(&upstream_dir, "");
    let follower = Follower::start(
        &datadir,
        &chains.genesis,
        &upstream.http_url(support::KEY),
        &["--max-reorg-depth", "5"],
    );
    std::thread::sleep(Duration::from_millis(1500));
    let log = follower.kill();
    assert!(
        log.contains("more than 5 blocks below the head: stored block 35"),
        "{log}"
    );
    assert!(
        log.contains(&chains.main[34].header.hash_slow().to_string()),
        "{log}"
    );
    assert_eq!(digests(&datadir), before);
}

/// A follower with a state history window prunes as it imports, follows a reorganisation
/// within the window, and refuses one deeper than the window (its default reorg limit), the
/// chain before it kept.
#[test]
fn a_follower_keeps_its_state_window_and_no_reorg_reaches_below_it() {
    let chains = Chains::generate();
    let upstream_dir = chains.dir.join("upstream");
    let first = chains.file("first20.rlp", &chains.main, 20);
    run_quarry(ingest_args(&upstream_dir, &chains.genesis, &[&first]));
    let upstream = Server::start(&upstream_dir, "");
    let hash = |blocks: &[Block], number: u64| blocks[number as usize - 1].header.hash_slow();
    // The fork replaces blocks 31 to 40: ten, within a window of 12.
    let datadir = chains.dir.join("windowed");
    let url = upstream.http_url(support::KEY);
    let follower = Follower::start(&datadir, &chains.genesis, &url, &["--state-history", "12"]);
    wait_for_head(&datadir, hash(&chains.main, 20), "first 20 blocks");
    assert_eq!(support::oldest_state(&datadir), 8);
    // A server on the follower's datadir remembers a slot at block 10 while it is kept...
    let server = Server::start(&datadir, "");
    let slot_at_10 = json!(["0x0000000000000000000000000000000000000001", "0x0", "0xa"]);
    for _ in 0..2 {
        server.result("eth_getStorageAt", slot_at_10.clone());
    }
    let all = chains.file("main.rlp", &chains.main, u64::MAX);
    run_quarry(ingest_args(&upstream_dir, &chains.genesis, &[&all]));
    wait_for_head(&datadir, hash(&chains.main, 40), "main chain");
    assert_eq!(support::oldest_state(&datadir), 28);
    // ...and refuses it, from memory too, once the follower has pruned it.
    for _ in 0..3 {
        let answer = server.call("eth_getStorageAt", slot_at_10.clone());
        assert_eq!(answer["error"]["code"], 4444, "{answer}");
        assert_eq!(answer["error"]["data"], "0x1c", "{answer}");
    }
    let fork = chains.file("fork.rlp", &chains.fork, u64::MAX);
    let mut args = ingest_args(&upstream_dir, &chains.genesis, &[&fork]);
    args.push("--reorg".as_ref());
    run_quarry(args);
    wait_for_head(&datadir, hash(&chains.fork, 45), "fork");
    assert_eq!(support::oldest_state(&datadir), 33);
    follower.kill();

    // A window of 8 cannot undo ten blocks: the follower's reorg limit is 8, and it refuses.
    let narrow = chains.dir.join("narrow");
    let main = chains.file("main.rlp", &chains.main, u64::MAX);
    let mut args = ingest_args(&narrow, &chains.genesis, &[&main]);
    args.extend(["--state-history".as_ref(), "8".as_ref()] as [&std::ffi::OsStr; 2]);
    run_quarry(args);
    let before = digests(&narrow);
    let follower = Follower::start(&narrow, &chains.genesis, &url, &[]);
    std::thread::sleep(Duration::from_millis(1500));
    let log = follower.kill();
    assert!(log.contains("more than 8 blocks below the head"), "{log}");
    assert_eq!(digests(&narrow), before);
    assert_eq!(support::oldest_state(&narrow), 32);
}

/// kill -9 at random moments of a catch-up and of an unwind: every restart finds one chain
/// whole (its state root checked on open) and the same command resumes to the upstream's head.
#[test]
fn kill_9_during_catch_up_and_unwind_leaves_one_whole_chain() {
    let chains = Chains::generate();
    let main_hashes: Vec<B256> = chains.main.iter().map(|b| b.header.hash_slow()).collect();
    let fork_hashes: Vec<B256> = chains.fork.iter().map(|b| b.header.hash_slow()).collect();
    let on_a_chain = |datadir: &Path| {
        // Killed before it created the datadir: nothing to check.
        let Some((number, hash)) = head(datadir) else {
            return true;
        };
        number == 0
            || main_hashes.get(number as usize - 1) == Some(&hash)
            || fork_hashes.get(number as usize - 1) == Some(&hash)
    };
    let upstream_dir = chains.fresh("upstream", &chains.main);
    let upstream = Server::start(&upstream_dir, "");
    let url = upstream.http_url(support::KEY);
    let datadir = chains.dir.join("follower");
    for delay_ms in [30, 90, 150, 250] {
        let follower = Follower::start(&datadir, &chains.genesis, &url, &["--concurrency", "2"]);
        std::thread::sleep(Duration::from_millis(delay_ms));
        follower.kill();
        assert!(on_a_chain(&datadir), "after kill at {delay_ms} ms");
    }
    let follower = Follower::start(&datadir, &chains.genesis, &url, &[]);
    wait_for_head(&datadir, main_hashes[39], "catch-up after kills");
    follower.kill();

    // The upstream switches to the fork; the follower is killed while it reorganises.
    let fork = chains.file("fork.rlp", &chains.fork, u64::MAX);
    let mut args = ingest_args(&upstream_dir, &chains.genesis, &[&fork]);
    args.push("--reorg".as_ref());
    run_quarry(args);
    for delay_ms in [5, 20, 40, 80, 120] {
        let follower = Follower::start(&datadir, &chains.genesis, &url, &[]);
        std::thread::sleep(Duration::from_millis(delay_ms));
        follower.kill();
        assert!(
            on_a_chain(&datadir),
            "after kill at {delay_ms} ms of the reorg"
        );
    }
    let follower = Follower::start(&datadir, &chains.genesis, &url, &[]);
    wait_for_head(&datadir, fork_hashes[44], "reorg after kills");
    follower.kill();
    assert_eq!(
        digests(&datadir),
        digests(&chains.fresh("fresh-fork", &chains.fork))
    );
}

/// While another process commits a reorganisation (`quarry ingest --reorg`), concurrent
/// readers of `quarry serve` get answers of the old chain or of the new one, never a mix or a
/// gap: blocks by number and `latest`, a slot that differs between the chains (EIP-2935's
/// record of block 35's hash) at `latest` and by number, and eth_getLogs by number and up to
/// `latest`.
#[test]
fn readers_see_one_chain_while_a_reorg_commits() {
    let chains = Chains::generate();
    let datadir = chains.fresh("served", &chains.main);
    let (main_server, fork_server) = (
        Server::start(&chains.fresh("main-only", &chains.main), ""),
        Server::start(&chains.fresh("fork-only", &chains.fork), ""),
    );
    let history = format!("{:#x}", alloy_eips::eip2935::HISTORY_STORAGE_ADDRESS);
    let slot35 = format!("{:#x}", 35);
    let logs = |server: &Server, to: &str| {
        server.result("eth_getLogs", json!([{"fromBlock": "0x19", "toBlock": to}]))
    };
    // Each query with its answer on the old chain and on the new one.
    let mut queries: Vec<(&str, Value, Value, Value)> = Vec::new();
    for tag in ["0x1e", "0x23", "0x28", "0x2b", "latest"] {
        let params = json!([tag, false]);
        let hash =
            |server: &Server| server.result("eth_getBlockByNumber", params.clone())["hash"].clone();
        queries.push((
            "eth_getBlockByNumber",
            params.clone(),
            hash(&main_server),
            hash(&fork_server),
        ));
    }
    for tag in ["0x24", "0x28", "latest"] {
        let params = json!([history, slot35, tag]);
        let value = |server: &Server| server.result("eth_getStorageAt", params.clone());
        queries.push((
            "eth_getStorageAt",
            params.clone(),
            value(&main_server),
            value(&fork_server),
        ));
    }
    for to in ["0x28", "latest"] {
        let params = json!([{"fromBlock": "0x19", "toBlock": to}]);
        queries.push((
            "eth_getLogs",
            params,
            logs(&main_server, to),
            logs(&fork_server, to),
        ));
    }
    for (method, params, old, new) in &queries {
        if params[0] != "0x1e" && params[2] != "0x24" {
            assert_ne!(old, new, "{method} {params} must tell the chains apart");
        }
    }

    let server = Server::start(&datadir, "");
    let done = std::sync::atomic::AtomicBool::new(false);
    let (old_seen, new_seen) = std::thread::scope(|scope| {
        let readers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let (mut old_seen, mut new_seen) = (0, 0);
                    while !done.load(std::sync::atomic::Ordering::SeqCst) {
                        for (method, params, old, new) in &queries {
                            let got = server.result(method, params.clone());
                            let project = |v: &Value| match *method {
                                "eth_getBlockByNumber" => v["hash"].clone(),
                                _ => v.clone(),
                            };
                            let got = project(&got);
                            assert!(
                                got == *old || got == *new,
                                "{method} {params}: {got} is of neither chain"
                            );
                            if old != new {
                                if got == *old {
                                    old_seen += 1;
                                } else {
                                    new_seen += 1;
                                }
                            }
                        }
                    }
                    (old_seen, new_seen)
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        let fork = chains.file("fork.rlp", &chains.fork, u64::MAX);
        let mut args = ingest_args(&datadir, &chains.genesis, &[&fork]);
        args.push("--reorg".as_ref());
        run_quarry(args);
        std::thread::sleep(Duration::from_millis(200));
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        readers
            .into_iter()
            .map(|r| r.join().unwrap())
            .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
    });
    assert!(
        old_seen > 0 && new_seen > 0,
        "old {old_seen}, new {new_seen}"
    );
    // Once the reorganisation has committed, nothing of the old chain is served.
    for (method, params, _, new) in &queries {
        let got = server.result(method, params.clone());
        let got = match *method {
            "eth_getBlockByNumber" => got["hash"].clone(),
            _ => got,
        };
        assert_eq!(got, *new, "{method} {params} after the reorg");
    }
}
