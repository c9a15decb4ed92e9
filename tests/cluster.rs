//! Past one machine: `quarry serve` replicas behind a real HAProxy running the repository's
//! `deploy/haproxy.cfg`, with keys and rate limits shared in a real Redis. Each test starts the
//! processes it needs; where `haproxy` or `redis-server` is not installed it says so and
//! skips (`.ci/run` installs both).

#![allow(clippy::unwrap_used)]

mod support;

use serde_json::{Value, json};
use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};
use support::{KEY, QUARRY, WsClient, WsEvent, ingest_args, run_quarry};

fn installed(binary: &str) -> bool {
    Command::new(binary)
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether `binaries` are all installed; if not, says which test is skipped and why.
fn can_run(test: &str, binaries: &[&str]) -> bool {
    let missing: Vec<&str> = binaries.iter().copied().filter(|b| !installed(b)).collect();
    if !missing.is_empty() {
        eprintln!(
            "SKIPPED {test}: {} not installed (apt-get install haproxy redis-server)",
            missing.join(" and ")
        );
    }
    missing.is_empty()
}

fn devnet_folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet")
}

fn devnet() -> PathBuf {
    support::ingested(&devnet_folder())
}

/// A port free right now (the processes here must keep theirs across restarts).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One HTTP/1.1 exchange on a new connection: (status, body).
fn http(addr: &str, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split(' ').nth(1)?.parse().ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    Some((
        status,
        if chunked {
            dechunk(body)?
        } else {
            body.to_string()
        },
    ))
}

/// A chunked HTTP/1.1 body's content.
fn dechunk(mut body: &str) -> Option<String> {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n")?;
        let size = usize::from_str_radix(size.trim(), 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        out.push_str(rest.get(..size)?);
        body = rest.get(size + 2..)?;
    }
}

fn call_body(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()
}

/// A real Redis on a port of its own, with an append-only file in a temporary directory, so
/// that what it held survives its restart (as an operator runs it).
struct Redis {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
}

impl Redis {
    fn start() -> Self {
        let mut redis = Self {
            child: None,
            port: free_port(),
            dir: tempfile::tempdir().unwrap(),
        };
        redis.restart();
        redis
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn restart(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--appendonly", "yes", "--save", ""])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let port = self.port;
        wait_until(
            "redis-server to answer PING",
            Duration::from_secs(10),
            || support::answers_ping(port),
        );
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A `quarry serve` replica on a fixed port, so that it comes back where HAProxy expects it.
struct Replica {
    child: Option<Child>,
    port: u16,
    datadir: PathBuf,
    config: PathBuf,
    _dir: tempfile::TempDir,
}

impl Replica {
    fn start(datadir: &Path, config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quarry.toml");
        std::fs::write(&path, config).unwrap();
        let mut replica = Self {
            child: None,
            port: free_port(),
            datadir: datadir.to_path_buf(),
            config: path,
            _dir: dir,
        };
        replica.restart();
        replica
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn restart(&mut self) {
        let (child, line) = support::spawn_first_line(
            Command::new(QUARRY)
                .arg("serve")
                .arg("--datadir")
                .arg(&self.datadir)
                .arg("--config")
                .arg(&self.config)
                .arg("--listen")
                .arg(self.addr())
                .stderr(Stdio::null()),
        );
        assert!(line.starts_with("listening on"), "quarry serve: {line:?}");
        self.child = Some(child);
    }

    /// kill -9.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn ready(&self) -> Option<(u16, Value)> {
        let (status, body) = http(&self.addr(), "GET", "/ready", "")?;
        Some((status, serde_json::from_str(&body).ok()?))
    }

    /// The sum of the metrics lines starting with `prefix`.
    fn metric_sum(&self, prefix: &str) -> f64 {
        http(&self.addr(), "GET", "/metrics", "").map_or(0.0, |(_, text)| {
            text.lines()
                .filter(|l| l.starts_with(prefix))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum()
        })
    }

    /// Calls answered by this replica since it started.
    fn calls_answered(&self) -> f64 {
        self.metric_sum("quarry_requests_total{")
    }

    fn call(&self, key: &str, method: &str, params: Value) -> (u16, Value) {
        let (status, body) = http(
            &self.addr(),
            "POST",
            &format!("/v3/{key}"),
            &call_body(method, params),
        )
        .unwrap();
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// HAProxy running `deploy/haproxy.cfg` in front of three replicas.
struct Haproxy {
    child: Child,
    front: String,
    stats: String,
}

impl Haproxy {
    fn start(replicas: [&str; 3]) -> Self {
        let (front, stats) = (
            format!("127.0.0.1:{}", free_port()),
            format!("127.0.0.1:{}", free_port()),
        );
        let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/haproxy.cfg");
        let child = Command::new("haproxy")
            .arg("-f")
            .arg(config)
            .env("QUARRY_LB_BIND", &front)
            .env("QUARRY_STATS_BIND", &stats)
            .env("QUARRY_REPLICA_1", replicas[0])
            .env("QUARRY_REPLICA_2", replicas[1])
            .env("QUARRY_REPLICA_3", replicas[2])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let haproxy = Self {
            child,
            front,
            stats,
        };
        wait_until("HAProxy's stats page", Duration::from_secs(10), || {
            haproxy.status("replica1").is_some()
        });
        haproxy
    }

    /// A server's status on HAProxy's stats page: "UP", "DOWN", "UP 1/2"...
    fn status(&self, server: &str) -> Option<String> {
        let (_, csv) = http(&self.stats, "GET", "/stats;csv", "")?;
        let header: Vec<&str> = csv
            .lines()
            .next()?
            .trim_start_matches("# ")
            .split(',')
            .collect();
        let column = header.iter().position(|h| *h == "status")?;
        csv.lines().find_map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            (fields.first() == Some(&"replicas") && fields.get(1) == Some(&server))
                .then(|| fields.get(column).map(|s| s.to_string()))
                .flatten()
        })
    }

    fn wait_status(&self, server: &str, wanted: &str) {
        wait_until(
            &format!("HAProxy to mark {server} {wanted}"),
            Duration::from_secs(30),
            || self.status(server).as_deref() == Some(wanted),
        );
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a client thread saw.
#[derive(Debug, Default)]
struct Tally {
    answered: u64,
    /// -32005 / HTTP 429.
    limited: u64,
    failures: Vec<String>,
}

/// Client threads sending calls to `url` (one keep-alive connection each), each at most one
/// call per `pace`, until stopped.
struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<Tally>>,
    started: Instant,
    /// Calls refused by a limit so far, by all threads.
    limited: Arc<std::sync::atomic::AtomicU64>,
}

impl Load {
    fn start(url: &str, threads: usize, pace: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let limited = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let calls = [
            call_body("eth_blockNumber", json!([])),
            call_body(
                "eth_getBalance",
                json!(["0x024aaB352Dc61220600a6f69Ea7694BC490CAA2E", "latest"]),
            ),
            call_body("eth_getBlockByNumber", json!(["0x10", false])),
            call_body("eth_chainId", json!([])),
        ];
        let threads = (0..threads)
            .map(|t| {
                let (url, stop, calls) = (url.to_string(), stop.clone(), calls.clone());
                let limited = limited.clone();
                std::thread::spawn(move || {
                    let agent: ureq::Agent = ureq::Agent::config_builder()
                        .http_status_as_error(false)
                        .timeout_global(Some(Duration::from_secs(10)))
                        .build()
                        .into();
                    let mut tally = Tally::default();
                    let mut next = Instant::now();
                    let mut i = t;
                    while !stop.load(Ordering::Relaxed) {
                        let body = &calls[i % calls.len()];
                        i += 1;
                        match agent
                            .post(&url)
                            .header("Content-Type", "application/json")
                            .send(body.as_str())
                        {
                            Ok(mut response) => {
                                let status = response.status().as_u16();
                                let text = response.body_mut().read_to_string().unwrap_or_default();
                                let reply: Value =
                                    serde_json::from_str(&text).unwrap_or(Value::Null);
                                if status == 429 || reply["error"]["code"] == -32005 {
                                    tally.limited += 1;
                                    limited.fetch_add(1, Ordering::Relaxed);
                                } else if status == 200 && reply.get("result").is_some() {
                                    tally.answered += 1;
                                } else if tally.failures.len() < 10 {
                                    tally.failures.push(format!("HTTP {status}: {text}"));
                                }
                            }
                            Err(e) => tally.failures.push(e.to_string()),
                        }
                        next += pace;
                        if let Some(wait) = next.checked_duration_since(Instant::now()) {
                            std::thread::sleep(wait);
                        } else {
                            next = Instant::now();
                        }
                    }
                    tally
                })
            })
            .collect();
        Self {
            stop,
            threads,
            started: Instant::now(),
            limited,
        }
    }

    /// Whether a limit has refused one of its calls yet.
    fn was_limited(&self) -> bool {
        self.limited.load(Ordering::Relaxed) > 0
    }

    /// Stops the threads: what they saw together, and for how long they ran.
    fn finish(self) -> (Tally, Duration) {
        self.stop.store(true, Ordering::Relaxed);
        let mut total = Tally::default();
        for thread in self.threads {
            let tally = thread.join().unwrap();
            total.answered += tally.answered;
            total.limited += tally.limited;
            total.failures.extend(tally.failures);
        }
        (total, self.started.elapsed())
    }
}

fn three_replicas(datadir: &Path, config: &str) -> [Replica; 3] {
    [(); 3].map(|()| Replica::start(datadir, config))
}

fn addrs(replicas: &[Replica; 3]) -> [String; 3] {
    [0, 1, 2].map(|i| replicas[i].addr())
}

/// A datadir holding the dev chain's first `last` blocks, in `dir`.
fn devnet_prefix(dir: &Path, last: u64) -> PathBuf {
    let blocks = support::decode_blocks(&std::fs::read(devnet_folder().join("chain.rlp")).unwrap());
    let file = dir.join(format!("first{last}.rlp"));
    std::fs::write(
        &file,
        support::encode_blocks(blocks.iter().filter(|b| b.header.number <= last)),
    )
    .unwrap();
    let datadir = dir.join(format!("data-{last}"));
    run_quarry(ingest_args(
        &datadir,
        &devnet_folder().join("genesis.json"),
        &[&file],
    ));
    datadir
}

/// Three replicas over one datadir, which one `quarry ingest` grows meanwhile, behind HAProxy
/// under a steady load: one is killed with kill -9 and restarted; no client call fails
/// (HAProxy retries on another replica), the others take its share, it takes calls again
/// once HAProxy sees it ready, and all three serve what the writer committed.
#[test]
fn a_replica_killed_under_load_costs_no_call_and_rejoins() {
    if !can_run(
        "a_replica_killed_under_load_costs_no_call_and_rejoins",
        &["haproxy"],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let datadir = devnet_prefix(dir.path(), 40);
    let config = format!("[[keys]]\nkey = \"{KEY}\"\n");
    let mut replicas = three_replicas(&datadir, &config);
    let [a, b, c] = addrs(&replicas);
    let haproxy = Haproxy::start([&a, &b, &c]);
    for server in ["replica1", "replica2", "replica3"] {
        haproxy.wait_status(server, "UP");
    }
    // WebSockets pass through HAProxy too.
    let mut socket = WsClient::connect(&format!("ws://{}/ws/v3/{KEY}", haproxy.front));
    let reply = socket.exchange(&call_body("eth_blockNumber", json!([])));
    assert_eq!(reply["result"], "0x28", "{reply}");
    let load = Load::start(
        &format!("http://{}/v3/{KEY}", haproxy.front),
        4,
        Duration::from_millis(4),
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert!(replicas.iter().all(|r| r.calls_answered() > 0.0));

    replicas[1].kill();
    haproxy.wait_status("replica2", "DOWN");
    let before = [replicas[0].calls_answered(), replicas[2].calls_answered()];
    std::thread::sleep(Duration::from_millis(1500));
    let after = [replicas[0].calls_answered(), replicas[2].calls_answered()];
    assert!(
        after[0] > before[0] && after[1] > before[1],
        "the other replicas took the load: {before:?} -> {after:?}"
    );

    replicas[1].restart();
    haproxy.wait_status("replica2", "UP");
    assert_eq!(replicas[1].ready().unwrap().0, 200);
    // The one writer appends the rest of the chain while the replicas serve.
    let chain = devnet_folder().join("chain.rlp");
    run_quarry(ingest_args(
        &datadir,
        &devnet_folder().join("genesis.json"),
        &[&chain],
    ));
    let last = support::stored_head(&datadir).0;
    for replica in &replicas {
        wait_until(
            "every replica to serve the new head",
            Duration::from_secs(10),
            || head_of(replica) == Some(last),
        );
    }
    std::thread::sleep(Duration::from_millis(1000));
    let (tally, _) = load.finish();
    assert!(
        tally.failures.is_empty(),
        "{} calls failed: {:?}",
        tally.failures.len(),
        tally.failures
    );
    assert!(tally.answered > 500, "{tally:?}");
    assert!(
        replicas[1].calls_answered() > 0.0,
        "the restarted replica takes calls again"
    );
}

/// A `quarry follow` process keeping `datadir` in step with `upstream`.
struct Follower {
    child: Child,
}

impl Follower {
    fn start(datadir: &Path, upstream: &str) -> Self {
        let child = Command::new(QUARRY)
            .arg("follow")
            .arg("--datadir")
            .arg(datadir)
            .arg("--genesis")
            .arg(devnet_folder().join("genesis.json"))
            .args(["--upstream", upstream, "--poll-ms", "100"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Self { child }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn head_of(replica: &Replica) -> Option<u64> {
    let (_, reply) = replica.call(KEY, "eth_blockNumber", json!([]));
    u64::from_str_radix(reply["result"].as_str()?.trim_start_matches("0x"), 16).ok()
}

/// Replicas on their own datadirs, each kept current by `quarry follow` from a primary: one
/// whose follower stops falls more than `max_head_lag` behind, answers 503 on /ready and
/// leaves HAProxy's rotation, then rejoins once its follower has caught up.
#[test]
fn a_replica_that_falls_behind_leaves_the_rotation_until_it_catches_up() {
    let test = "a_replica_that_falls_behind_leaves_the_rotation_until_it_catches_up";
    if !can_run(test, &["haproxy"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let genesis = devnet_folder().join("genesis.json");
    let primary_dir = devnet_prefix(dir.path(), 20);
    let last = support::stored_head(&devnet()).0;
    let primary = support::Server::start(&primary_dir, "");
    let upstream = primary.http_url(KEY);

    let datadirs = [1, 2, 3].map(|i| dir.path().join(format!("replica{i}")));
    let mut followers: Vec<Option<Follower>> = datadirs
        .iter()
        .map(|d| Some(Follower::start(d, &upstream)))
        .collect();
    for datadir in &datadirs {
        wait_until(
            "the followers' first 20 blocks",
            Duration::from_secs(60),
            || {
                quarry_storage::Database::open(datadir)
                    .ok()
                    .and_then(|db| db.reader().ok()?.head().ok()?)
                    .is_some_and(|(n, _)| n == 20)
            },
        );
    }
    // Replicas 1 and 2 ask the primary for its head; replica 3 knows only what its follower
    // recorded of the upstream.
    let with_peer =
        format!("max_head_lag = 2\npeers = [\"{upstream}\"]\n[[keys]]\nkey = \"{KEY}\"\n");
    let without = format!("max_head_lag = 2\n[[keys]]\nkey = \"{KEY}\"\n");
    let replicas = [
        Replica::start(&datadirs[0], &with_peer),
        Replica::start(&datadirs[1], &with_peer),
        Replica::start(&datadirs[2], &without),
    ];
    let [a, b, c] = addrs(&replicas);
    let haproxy = Haproxy::start([&a, &b, &c]);
    for server in ["replica1", "replica2", "replica3"] {
        haproxy.wait_status(server, "UP");
    }

    // Replica 1's writer stops; the primary grows to the end of the chain.
    followers[0] = None;
    let all = devnet_folder().join("chain.rlp");
    run_quarry(ingest_args(&primary_dir, &genesis, &[&all]));
    for replica in &replicas[1..] {
        wait_until(
            "replicas 2 and 3 to follow",
            Duration::from_secs(60),
            || head_of(replica) == Some(last),
        );
    }
    haproxy.wait_status("replica1", "DOWN");
    // Replicas 2 and 3 were out too while they caught up; they are back once ready.
    haproxy.wait_status("replica2", "UP");
    haproxy.wait_status("replica3", "UP");
    let (status, body) = replicas[0].ready().unwrap();
    assert_eq!(status, 503, "{body}");
    let reason = body["networks"][0]["reason"].as_str().unwrap_or_default();
    assert_eq!(
        reason,
        format!(
            "head 20 is {} blocks behind the best known head {last} (max_head_lag 2)",
            last - 20
        ),
        "{body}"
    );
    assert_eq!(body["networks"][0]["lag"], last - 20);
    wait_until(
        "replica 3 to know the upstream's head",
        Duration::from_secs(10),
        || {
            replicas[2].ready().is_some_and(|(status, body)| {
                status == 200 && body["networks"][0]["best_known_head"] == last
            })
        },
    );
    // Through HAProxy every answer now comes from a current replica.
    let front = format!("http://{}/v3/{KEY}", haproxy.front);
    let agent = ureq::Agent::new_with_defaults();
    for _ in 0..30 {
        let text = agent
            .post(&front)
            .header("Content-Type", "application/json")
            .send(call_body("eth_blockNumber", json!([])))
            .unwrap()
            .body_mut()
            .read_to_string()
            .unwrap();
        let reply: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(reply["result"], format!("{last:#x}"));
    }

    // Its writer comes back and catches up: HAProxy takes it back.
    followers[0] = Some(Follower::start(&datadirs[0], &upstream));
    haproxy.wait_status("replica1", "UP");
    assert_eq!(head_of(&replicas[0]), Some(last));
    assert_eq!(replicas[0].ready().unwrap().0, 200);
}

/// Runs `quarry keys --store <store> add` and returns the new key.
fn add_key(store: &str, plan: &str, name: &str) -> (String, String) {
    let output = Command::new(QUARRY)
        .args([
            "keys", "--store", store, "add", "--plan", plan, "--name", name,
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let key = String::from_utf8(output.stdout).unwrap().trim().to_string();
    let stderr = String::from_utf8(output.stderr).unwrap();
    let id = stderr
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    (key, id)
}

/// One free-plan key sent at ten times its rate through HAProxy to three replicas sharing
/// their limits in Redis: the calls admitted cluster-wide stay within 5% of the plan's rate,
/// and another key sent at its own pace is not refused. A daily quota used up before every
/// replica restarts is still used up after.
#[test]
fn a_key_s_limits_hold_across_replicas_and_restarts() {
    let test = "a_key_s_limits_hold_across_replicas_and_restarts";
    if !can_run(test, &["haproxy", "redis-server"]) {
        return;
    }
    let redis = Redis::start();
    let url = redis.url();
    let (free, _) = add_key(&url, "free", "flooder");
    let (growth, _) = add_key(&url, "growth", "neighbour");
    let (custom, _) = add_key(&url, "custom", "daily");
    let config = format!(
        "limits_store = \"{url}\"\nkeys_store = \"{url}\"\n[plans.free]\nunits_per_second = 40\n[plans.growth]\nunits_per_second = 1000\n[plans.custom]\nunits_per_day = 25\n"
    );
    let mut replicas = three_replicas(&devnet(), &config);
    let [a, b, c] = addrs(&replicas);
    let haproxy = Haproxy::start([&a, &b, &c]);
    for server in ["replica1", "replica2", "replica3"] {
        haproxy.wait_status(server, "UP");
    }

    // 400 calls a second (ten times the rate) for five seconds, and the neighbour at 50.
    let flood = Load::start(
        &format!("http://{}/v3/{free}", haproxy.front),
        8,
        Duration::from_millis(20),
    );
    let neighbour = Load::start(
        &format!("http://{}/v3/{growth}", haproxy.front),
        1,
        Duration::from_millis(20),
    );
    std::thread::sleep(Duration::from_secs(5));
    let (flooded, took) = flood.finish();
    let (neighboured, _) = neighbour.finish();
    assert!(flooded.failures.is_empty(), "{:?}", flooded.failures);
    assert!(
        flooded.limited > flooded.answered * 5,
        "the flood is mostly refused: {flooded:?}"
    );
    // 40 a second over the run, plus the burst of a tenth of a second.
    let expected = 40.0 * took.as_secs_f64();
    let admitted = flooded.answered as f64;
    assert!(
        (admitted - expected).abs() <= 0.05 * expected + 4.0,
        "admitted {admitted} calls in {took:?}; the plan allows {expected:.0}"
    );
    assert!(
        replicas
            .iter()
            .all(|r| r.metric_sum("quarry_rate_limited_total{") > 0.0),
        "every replica refused some of the flood"
    );
    assert_eq!(neighboured.limited, 0, "{neighboured:?}");
    assert!(
        neighboured.failures.is_empty(),
        "{:?}",
        neighboured.failures
    );

    // The daily quota: 25 units, used up across the replicas, stays used up after every
    // replica restarts.
    let mut admitted = 0;
    for i in 0..30 {
        let (status, reply) = replicas[i % 3].call(&custom, "eth_chainId", json!([]));
        if status == 200 && reply.get("result").is_some() {
            admitted += 1;
        }
    }
    let fell_back: f64 = replicas
        .iter()
        .map(|r| r.metric_sum("quarry_limiter_unavailable_total{"))
        .sum();
    assert_eq!((admitted, fell_back), (25, 0.0));
    for replica in &mut replicas {
        replica.kill();
        replica.restart();
    }
    for replica in &replicas {
        let (status, reply) = replica.call(&custom, "eth_chainId", json!([]));
        assert_eq!(status, 429, "{reply}");
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("daily quota exceeded") && message.contains("has used 25"),
            "{reply}"
        );
    }
}

/// A key well within its limits is admitted from each replica's lease (a share of the headroom,
/// charged in Redis when granted) without waiting for a round trip per call: a daily quota used
/// up by calls to three replicas at once admits exactly what the quota allows, never more, and
/// once the leases have ended Redis' count of the day is exactly the calls admitted.
#[test]
fn calls_admitted_without_a_round_trip_are_each_charged_to_redis() {
    let test = "calls_admitted_without_a_round_trip_are_each_charged_to_redis";
    if !can_run(test, &["redis-server"]) {
        return;
    }
    let redis = Redis::start();
    let url = redis.url();
    let (bulk, _) = add_key(&url, "growth", "bulk");
    let config = format!(
        "limits_store = \"{url}\"\nkeys_store = \"{url}\"\n[plans.growth]\nunits_per_second = 100000\nunits_per_day = 3000\n"
    );
    let replicas = three_replicas(&devnet(), &config);
    let loads: Vec<Load> = addrs(&replicas)
        .iter()
        .map(|addr| Load::start(&format!("http://{addr}/v3/{bulk}"), 4, Duration::ZERO))
        .collect();
    // Until every replica has refused a call (about 3 s on an idle machine; a loaded one
    // answers fewer calls a second).
    let deadline = Instant::now() + Duration::from_secs(60);
    while !loads.iter().all(Load::was_limited) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(300));
    let mut admitted = 0;
    for load in loads {
        let (tally, _) = load.finish();
        assert!(tally.failures.is_empty(), "{:?}", tally.failures);
        assert!(tally.limited > 0, "the quota ran out: {tally:?}");
        admitted += tally.answered;
    }
    assert_eq!(admitted, 3000, "calls admitted under a quota of 3000");
    let from_leases: f64 = replicas
        .iter()
        .map(|r| r.metric_sum("quarry_limiter_allowance_total"))
        .sum();
    assert!(
        from_leases > admitted as f64 / 2.0,
        "{from_leases} of {admitted} calls admitted from leases"
    );
    // Every lease has ended (100 ms) and given back what it had left.
    std::thread::sleep(Duration::from_millis(200));
    let (status, reply) = replicas[0].call(&bulk, "eth_chainId", json!([]));
    assert_eq!(status, 429, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("has used {admitted}")),
        "Redis counts every admitted call once: {admitted} admitted; {reply}"
    );
}

/// A key revoked with `quarry keys revoke` in Redis is refused by every replica within a
/// second, over HTTP, and its open WebSockets are closed.
#[test]
fn a_key_revoked_in_redis_is_refused_by_every_replica_within_a_second() {
    let test = "a_key_revoked_in_redis_is_refused_by_every_replica_within_a_second";
    if !can_run(test, &["redis-server"]) {
        return;
    }
    let redis = Redis::start();
    let url = redis.url();
    let (key, id) = add_key(&url, "growth", "leaving");
    let config = format!("keys_store = \"{url}\"\n");
    let replicas = three_replicas(&devnet(), &config);
    let mut sockets: Vec<WsClient> = replicas
        .iter()
        .map(|r| WsClient::connect(&format!("ws://{}/ws/v3/{key}", r.addr())))
        .collect();
    for (replica, socket) in replicas.iter().zip(&mut sockets) {
        assert_eq!(replica.call(&key, "eth_chainId", json!([])).0, 200);
        let reply = socket.exchange(&call_body("eth_chainId", json!([])));
        assert!(reply.get("result").is_some(), "{reply}");
    }

    let revoked_at = Instant::now();
    run_quarry([
        "keys".as_ref(),
        "--store".as_ref(),
        url.as_ref(),
        "revoke".as_ref(),
        id.as_ref(),
    ]);
    let refused_by: Arc<Mutex<Vec<Duration>>> = Arc::default();
    for replica in &replicas {
        wait_until("the revocation", Duration::from_secs(5), || {
            replica.call(&key, "eth_chainId", json!([])).0 == 401
        });
        refused_by.lock().unwrap().push(revoked_at.elapsed());
    }
    let slowest = refused_by.lock().unwrap().iter().copied().max().unwrap();
    assert!(
        slowest <= Duration::from_secs(1),
        "every replica refused the key {slowest:?} after its revocation"
    );
    for socket in &mut sockets {
        let event = socket.next_event(Duration::from_secs(2));
        assert_eq!(
            event,
            Some(WsEvent::Closed(1008, "API key revoked".into())),
            "the key's WebSocket is closed"
        );
    }
}

/// Redis killed while calls come in: a replica with `limits_fallback = "local"` keeps
/// answering under its own limiter, one with `"refuse"` answers -32603; neither hangs, both
/// count it, and both go back to Redis once it returns.
#[test]
fn redis_going_away_is_survived_as_configured_and_recovered_from() {
    let test = "redis_going_away_is_survived_as_configured_and_recovered_from";
    if !can_run(test, &["redis-server"]) {
        return;
    }
    let mut redis = Redis::start();
    let keys = format!("[[keys]]\nkey = \"{KEY}\"\nplan = \"growth\"\n");
    let base = format!(
        "limits_store = \"{}\"\nredis_timeout_ms = 100\n[plans.growth]\nunits_per_second = 5000\n{keys}",
        redis.url()
    );
    let local = Replica::start(&devnet(), &format!("limits_fallback = \"local\"\n{base}"));
    let refuse = Replica::start(&devnet(), &format!("limits_fallback = \"refuse\"\n{base}"));
    for replica in [&local, &refuse] {
        assert!(
            replica
                .call(KEY, "eth_chainId", json!([]))
                .1
                .get("result")
                .is_some()
        );
    }
    let load = Load::start(
        &format!("http://{}/v3/{KEY}", local.addr()),
        2,
        Duration::from_millis(5),
    );
    std::thread::sleep(Duration::from_millis(500));
    redis.kill();
    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        let started = Instant::now();
        let (status, reply) = refuse.call(KEY, "eth_chainId", json!([]));
        slowest = slowest.max(started.elapsed());
        assert_eq!(status, 200, "{reply}");
        assert_eq!(reply["error"]["code"], -32603, "{reply}");
        assert!(
            reply["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("rate limiter unavailable")),
            "{reply}"
        );
        let started = Instant::now();
        let (_, reply) = local.call(KEY, "eth_chainId", json!([]));
        slowest = slowest.max(started.elapsed());
        assert!(reply.get("result").is_some(), "{reply}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        slowest < Duration::from_secs(2),
        "a call waited {slowest:?} for an unreachable Redis"
    );
    assert!(local.metric_sum("quarry_limiter_unavailable_total{action=\"local\"}") > 0.0);
    assert!(refuse.metric_sum("quarry_limiter_unavailable_total{action=\"refused\"}") > 0.0);
    assert!(
        local.metric_sum("quarry_redis_requests_total{store=\"limits\",result=\"failed\"}") > 0.0
    );

    redis.restart();
    wait_until(
        "calls to be admitted by Redis again",
        Duration::from_secs(10),
        || {
            refuse
                .call(KEY, "eth_chainId", json!([]))
                .1
                .get("result")
                .is_some()
        },
    );
    let answered =
        || local.metric_sum("quarry_redis_requests_total{store=\"limits\",result=\"answered\"}");
    let before = answered();
    wait_until(
        "the local-fallback replica to use Redis again",
        Duration::from_secs(10),
        || answered() > before,
    );
    let (tally, _) = load.finish();
    assert!(tally.failures.is_empty(), "{:?}", tally.failures);
    assert!(tally.answered > 100, "{tally:?}");
}

/// Clients that send a call and hang up before the answer, many at once, while Redis judges
/// their key's calls in batches: the key's later calls are still answered (no batch is left
/// waiting for a call that went away).
#[test]
fn calls_abandoned_mid_flight_leave_their_key_usable() {
    if !can_run(
        "calls_abandoned_mid_flight_leave_their_key_usable",
        &["redis-server"],
    ) {
        return;
    }
    let redis = Redis::start();
    let config = format!(
        "limits_store = \"{}\"\n[plans.growth]\nunits_per_second = 1000000\n[[keys]]\nkey = \"{KEY}\"\nplan = \"growth\"\n",
        redis.url()
    );
    let replica = Replica::start(&devnet(), &config);
    let body = call_body("eth_chainId", json!([]));
    let request = format!(
        "POST /v3/{KEY} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    for round in 0..20 {
        let load = Load::start(
            &format!("http://{}/v3/{KEY}", replica.addr()),
            2,
            Duration::ZERO,
        );
        let hang_ups: Vec<_> = (0..32)
            .map(|_| {
                let (addr, request) = (replica.addr(), request.clone());
                std::thread::spawn(move || {
                    let mut stream = TcpStream::connect(addr).unwrap();
                    stream.write_all(request.as_bytes()).unwrap();
                    // Gone before the answer.
                    drop(stream);
                })
            })
            .collect();
        for hang_up in hang_ups {
            hang_up.join().unwrap();
        }
        let (tally, _) = load.finish();
        assert!(
            tally.failures.is_empty(),
            "round {round}: {:?}",
            tally.failures
        );
    }
    let (status, reply) = replica.call(KEY, "eth_chainId", json!([]));
    assert_eq!(status, 200, "{reply}");
    assert!(reply.get("result").is_some(), "{reply}");
}
