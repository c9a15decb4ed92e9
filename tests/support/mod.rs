//! A real `quarry serve` for end-to-end tests: a chain ingested with the real binary, a server
//! process on a free port, and minimal HTTP and WebSocket JSON-RPC clients.

#![allow(clippy::unwrap_used, dead_code)]

use serde_json::Value;
use std::{
    collections::HashMap,
    ffi::OsStr,
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Mutex, OnceLock},
    time::{Duration, Instant},
};

pub const QUARRY: &str = env!("CARGO_BIN_EXE_quarry");
pub const KEY: &str = "test-key-0123456789";

/// The fixture folder: `QUARRY_RPC_FIXTURES`, default `../shared/fixtures/rpc-compat`.
pub fn fixtures() -> PathBuf {
    match std::env::var_os("QUARRY_RPC_FIXTURES") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/rpc-compat"),
    }
}

/// A datadir holding `folder`'s genesis.json and chain.rlp, ingested afresh once per test
/// binary run (so no datadir from an older build is ever reused).
pub fn ingested(folder: &Path) -> PathBuf {
    static DONE: OnceLock<Mutex<HashMap<PathBuf, PathBuf>>> = OnceLock::new();
    let done = DONE.get_or_init(Default::default);
    let mut done = done.lock().unwrap();
    if let Some(datadir) = done.get(folder) {
        return datadir.clone();
    }
    let name: String = folder
        .display()
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let datadir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("datadir-{name}"));
    if datadir.exists() {
        std::fs::remove_dir_all(&datadir).unwrap();
    }
    ingest_folder(&datadir, folder);
    done.insert(folder.to_path_buf(), datadir.clone());
    datadir
}

/// Ingests into `datadir` the chain of `folder` (a fixture's or `quarry devchain`'s): its
/// genesis.json and chain.rlp.
pub fn ingest_folder(datadir: &Path, folder: &Path) {
    let (genesis, chain) = (folder.join("genesis.json"), folder.join("chain.rlp"));
    run_quarry(ingest_args(datadir, &genesis, &[&chain]));
}

/// Runs `quarry` with `args`, which must succeed: its stdout and stderr.
pub fn run_quarry<'a>(args: impl IntoIterator<Item = &'a OsStr>) -> (String, String) {
    let args: Vec<&OsStr> = args.into_iter().collect();
    let output = Command::new(QUARRY).args(&args).output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    );
    assert!(output.status.success(), "quarry {args:?} failed: {stderr}");
    (stdout, stderr)
}

/// Runs `quarry` with `args`, which must fail: its stderr.
pub fn quarry_fails<'a>(args: impl IntoIterator<Item = &'a OsStr>) -> String {
    let args: Vec<&OsStr> = args.into_iter().collect();
    let output = Command::new(QUARRY).args(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "quarry {args:?} succeeded");
    stderr
}

/// Runs `quarry devchain --out <out>` with `args`, which must succeed.
pub fn devchain(out: &Path, args: &[&str]) {
    let command = ["devchain".as_ref(), "--out".as_ref(), out.as_os_str()];
    run_quarry(command.into_iter().chain(args.iter().map(|a| a.as_ref())));
}

/// The stored head of `datadir`: number and hash.
pub fn stored_head(datadir: &Path) -> (u64, alloy_primitives::B256) {
    let db = quarry_storage::Database::open(datadir).unwrap();
    db.reader().unwrap().head().unwrap().unwrap()
}

/// The oldest block whose state `datadir` keeps (0 in an archive).
pub fn oldest_state(datadir: &Path) -> u64 {
    let db = quarry_storage::Database::open(datadir).unwrap();
    db.reader().unwrap().oldest_state().unwrap()
}

/// Asserts that `datadir`'s data file takes on disk no more than its pages in use (its free
/// pages given back to the file system), within 1 MiB; returns what it takes.
pub fn assert_free_pages_given_back(datadir: &Path, what: &str) -> u64 {
    let space = quarry_storage::Database::open(datadir)
        .unwrap()
        .space()
        .unwrap();
    assert!(
        space.allocated_bytes <= space.used_bytes - space.free_bytes + (1 << 20),
        "{what}: {space:?}"
    );
    space.allocated_bytes
}

/// `(entries, digest)` of every table of `datadir` but those in `except`, in
/// `Table::ALL` order.
pub fn table_digests(
    datadir: &Path,
    except: &[quarry_storage::Table],
) -> Vec<(quarry_storage::Table, (u64, alloy_primitives::B256))> {
    let db = quarry_storage::Database::open(datadir).unwrap();
    let reader = db.reader().unwrap();
    quarry_storage::Table::ALL
        .iter()
        .filter(|table| !except.contains(table))
        .map(|&table| (table, reader.table_digest(table).unwrap()))
        .collect()
}

/// The arguments of `quarry ingest` of `files` into `datadir` with `genesis`.
pub fn ingest_args<'a>(datadir: &'a Path, genesis: &'a Path, files: &[&'a Path]) -> Vec<&'a OsStr> {
    let mut args: Vec<&OsStr> = vec![
        "ingest".as_ref(),
        "--datadir".as_ref(),
        datadir.as_os_str(),
        "--genesis".as_ref(),
        genesis.as_os_str(),
    ];
    args.extend(files.iter().map(|file| file.as_os_str()));
    args
}

pub type Block = alloy_consensus::Block<alloy_consensus::TxEnvelope>;

/// The blocks of a file of concatenated RLP blocks.
pub fn decode_blocks(bytes: &[u8]) -> Vec<Block> {
    let mut rest = bytes;
    let mut blocks = Vec::new();
    while !rest.is_empty() {
        blocks.push(alloy_rlp::Decodable::decode(&mut rest).unwrap());
    }
    blocks
}

/// `blocks` as a file of concatenated RLP blocks.
pub fn encode_blocks<'a>(blocks: impl IntoIterator<Item = &'a Block>) -> Vec<u8> {
    let mut out = Vec::new();
    for block in blocks {
        alloy_rlp::Encodable::encode(block, &mut out);
    }
    out
}

/// The fixture chain's blocks, decoded from chain.rlp.
pub fn chain_blocks() -> Vec<Block> {
    decode_blocks(&std::fs::read(fixtures().join("chain.rlp")).unwrap())
}

/// A fresh datadir (in `<dir>/data`) holding the fixture chain up to block `last` only.
pub fn partial_datadir(last: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let blocks = chain_blocks();
    let prefix = encode_blocks(blocks.iter().filter(|b| b.header.number <= last));
    let file = dir.path().join("prefix.rlp");
    std::fs::write(&file, prefix).unwrap();
    let (datadir, genesis) = (dir.path().join("data"), fixtures().join("genesis.json"));
    run_quarry(ingest_args(&datadir, &genesis, &[&file]));
    dir
}

/// The text of `server`'s `/metrics`.
pub fn metrics_text(server: &Server) -> String {
    let mut response = ureq::get(format!("http://{}/metrics", server.addr))
        .call()
        .unwrap();
    response.body_mut().read_to_string().unwrap()
}

/// The value of `server`'s `/metrics` line that is `series` (labels included) and a value.
pub fn metric_value(server: &Server, series: &str) -> Option<f64> {
    metrics_text(server)
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// As `metric_value`, failing when `server` has no such line.
pub fn metric(server: &Server, series: &str) -> f64 {
    metric_value(server, series).unwrap_or_else(|| panic!("no {series} in the metrics"))
}

/// Polls `check` every 50 ms for up to `limit`, failing after it; returns how long it took to
/// hold.
pub fn within(limit: Duration, mut check: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < limit, "not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    start.elapsed()
}

/// The arguments of `quarry keys --store <store>` with `args`.
pub fn keys_args<'a>(store: &'a Path, args: &[&'a str]) -> Vec<&'a OsStr> {
    let mut all: Vec<&OsStr> = vec!["keys".as_ref(), "--store".as_ref(), store.as_os_str()];
    all.extend(args.iter().map(|a| OsStr::new(*a)));
    all
}

/// Runs `quarry keys --store <store>` with `args`, which must succeed: its stdout and stderr.
pub fn keys_cli<'a>(store: &'a Path, args: &[&'a str]) -> (String, String) {
    run_quarry(keys_args(store, args))
}

/// Adds a key on the custom plan with the further `args` (allowlists, JWT keys) to `store`:
/// (key, id).
pub fn add_custom_key(store: &Path, args: &[&str]) -> (String, String) {
    let mut all = vec!["add", "--plan", "custom"];
    all.extend_from_slice(args);
    let (key, said) = keys_cli(store, &all);
    let id = said.split_whitespace().nth(1).unwrap().to_string();
    (key.trim().to_string(), id)
}

/// Spawns `command` with its stdout piped: the process and the first line it printed (`quarry
/// serve`'s `listening on ...`).
pub fn spawn_first_line(command: &mut Command) -> (Child, String) {
    let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line)
}

/// A `quarry serve` process, killed when dropped.
pub struct Server {
    child: Child,
    pub addr: String,
    _config_dir: tempfile::TempDir,
}

impl Server {
    /// Serves `datadir` with one key, `KEY`, and `extra` appended to the TOML config.
    pub fn start(datadir: &Path, extra: &str) -> Self {
        Self::launch(
            Some(datadir),
            &format!("{extra}\n[[keys]]\nkey = \"{KEY}\"\n"),
            false,
        )
    }

    /// As `start`, logging everything (`RUST_LOG=debug`) to a file that `log` reads.
    pub fn start_logged(datadir: &Path, extra: &str) -> Self {
        Self::launch(
            Some(datadir),
            &format!("{extra}\n[[keys]]\nkey = \"{KEY}\"\n"),
            true,
        )
    }

    /// What a server from `start_logged` has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self._config_dir.path().join("server.log")).unwrap_or_default()
    }

    /// Serves what `config` declares (its `[[networks]]`), listening on a free port.
    pub fn with_config(config: &str) -> Self {
        Self::launch(None, config, false)
    }

    fn launch(datadir: Option<&Path>, config_text: &str, logged: bool) -> Self {
        let config_dir = tempfile::tempdir().unwrap();
        let config = config_dir.path().join("quarry.toml");
        std::fs::write(&config, format!("listen = \"127.0.0.1:0\"\n{config_text}")).unwrap();
        let mut command = Command::new(QUARRY);
        command.arg("serve");
        if let Some(datadir) = datadir {
            command.arg("--datadir").arg(datadir);
        }
        let stderr = if logged {
            command.env("RUST_LOG", "debug");
            Stdio::from(std::fs::File::create(config_dir.path().join("server.log")).unwrap())
        } else {
            Stdio::null()
        };
        let (child, line) = spawn_first_line(command.arg("--config").arg(&config).stderr(stderr));
        let addr = line
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("unexpected first line from quarry serve: {line:?}"))
            .to_string();
        Self {
            child,
            addr,
            _config_dir: config_dir,
        }
    }

    pub fn http_url(&self, key: &str) -> String {
        format!("http://{}/v3/{key}", self.addr)
    }

    pub fn ws_url(&self, key: &str) -> String {
        format!("ws://{}/ws/v3/{key}", self.addr)
    }

    /// POSTs `body` to `path` with a JSON content type: (status, body).
    pub fn post_raw(&self, path: &str, body: &str) -> (u16, String) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into();
        let mut response = agent
            .post(format!("http://{}{path}", self.addr))
            .header("Content-Type", "application/json")
            .send(body)
            .unwrap();
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .with_config()
            .limit(256 << 20)
            .read_to_string()
            .unwrap();
        (status, text)
    }

    /// One JSON-RPC exchange over HTTP with the test key.
    pub fn http(&self, body: &str) -> serde_json::Value {
        let (status, text) = self.post_raw(&format!("/v3/{KEY}"), body);
        assert_eq!(status, 200, "{text}");
        serde_json::from_str(&text).unwrap()
    }

    pub fn call(&self, method: &str, params: serde_json::Value) -> serde_json::Value {
        let request =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.http(&request.to_string())
    }

    /// The result of a call that must succeed.
    pub fn result(&self, method: &str, params: serde_json::Value) -> serde_json::Value {
        let response = self.call(method, params);
        assert!(response.get("error").is_none(), "{method}: {response}");
        response["result"].clone()
    }

    /// The answers to `calls` (method, params), sent as one JSON-RPC batch (at most the
    /// server's `max_batch_requests`, 100 by default), in the calls' order.
    pub fn batch<M: AsRef<str>>(&self, calls: &[(M, serde_json::Value)]) -> Vec<serde_json::Value> {
        let body: Vec<serde_json::Value> = calls
            .iter()
            .enumerate()
            .map(|(id, (method, params))| {
                serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method.as_ref(), "params": params})
            })
            .collect();
        let mut answers = self
            .http(&serde_json::Value::from(body).to_string())
            .as_array()
            .unwrap()
            .clone();
        answers.sort_by_key(|answer| answer["id"].as_u64().unwrap());
        assert_eq!(answers.len(), calls.len());
        answers
    }

    pub fn ws(&self) -> WsClient {
        WsClient::connect(&self.ws_url(KEY))
    }

    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's anonymous resident memory (its heap), in bytes.
    pub fn anon_rss(&self) -> u64 {
        self.memory("RssAnon")
    }

    /// The server's resident memory, the memory-mapped database's pages included, in bytes.
    pub fn rss(&self) -> u64 {
        self.memory("VmRSS")
    }

    /// A memory figure of the server's /proc status (`field`, in kB there), in bytes.
    fn memory(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let line = status
            .lines()
            .find(|l| {
                l.strip_prefix(field)
                    .is_some_and(|rest| rest.starts_with(':'))
            })
            .unwrap();
        let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kb * 1024
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct WsClient(
    tungstenite::WebSocket<tungstenite::stream::MaybeTlsStream<std::net::TcpStream>>,
);

impl WsClient {
    pub fn connect(url: &str) -> Self {
        let (socket, _) = tungstenite::connect(url).unwrap();
        Self(socket)
    }

    /// Connects to `url` with extra upgrade request headers (a browser's `Origin`, say);
    /// the HTTP status of a refused upgrade as the error.
    pub fn connect_with(url: &str, headers: &[(&str, &str)]) -> Result<Self, u16> {
        use tungstenite::client::IntoClientRequest;
        let mut request = url.into_client_request().unwrap();
        for (name, value) in headers {
            request.headers_mut().insert(
                tungstenite::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        match tungstenite::connect(request) {
            Ok((socket, _)) => Ok(Self(socket)),
            Err(tungstenite::Error::Http(response)) => Err(response.status().as_u16()),
            Err(e) => panic!("WebSocket connection to {url} failed: {e}"),
        }
    }

    /// Sends one text message without waiting for a reply.
    pub fn send(&mut self, body: &str) {
        self.0
            .send(tungstenite::Message::Text(body.to_string().into()))
            .unwrap();
    }

    /// Sends one text message and returns the one text reply, parsed.
    pub fn exchange(&mut self, body: &str) -> serde_json::Value {
        self.send(body);
        loop {
            match self.0.read().unwrap() {
                tungstenite::Message::Text(text) => return serde_json::from_str(&text).unwrap(),
                tungstenite::Message::Ping(_) | tungstenite::Message::Pong(_) => {}
                other => panic!("unexpected WebSocket message {other:?}"),
            }
        }
    }
}

/// What a WebSocket gave next: a message, or how it ended.
#[derive(Debug, Clone, PartialEq)]
pub enum WsEvent {
    Json(serde_json::Value),
    /// A close frame: its code and reason.
    Closed(u16, String),
    /// The connection ended without a close frame (reset, end of stream).
    Dropped,
}

impl WsClient {
    /// The next text message or the end of the connection, waiting at most `timeout`
    /// (`None`: nothing came).
    pub fn next_event(&mut self, timeout: Duration) -> Option<WsEvent> {
        if let tungstenite::stream::MaybeTlsStream::Plain(stream) = self.0.get_ref() {
            stream.set_read_timeout(Some(timeout)).unwrap();
        }
        loop {
            return match self.0.read() {
                Ok(tungstenite::Message::Text(text)) => {
                    Some(WsEvent::Json(serde_json::from_str(&text).unwrap()))
                }
                Ok(tungstenite::Message::Close(frame)) => Some(match frame {
                    Some(frame) => WsEvent::Closed(frame.code.into(), frame.reason.to_string()),
                    None => WsEvent::Closed(1005, String::new()),
                }),
                Ok(_) => continue,
                Err(e) if read_timed_out(&e) => None,
                Err(_) => Some(WsEvent::Dropped),
            };
        }
    }
}

/// Whether a WebSocket read failed only because its read timeout passed: nothing came.
pub fn read_timed_out(error: &tungstenite::Error) -> bool {
    matches!(
        error,
        tungstenite::Error::Io(e)
            if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
    )
}

/// One `.io` case: the requests (`>>`) and the expected responses (`<<`), in file order.
pub struct IoCase {
    pub name: String,
    pub exchanges: Vec<(String, serde_json::Value)>,
    /// A comment says `speconly`: the answer is checked by its shape only (`shape_mismatch`).
    pub speconly: bool,
}

/// The `.io` files of the methods in `QUARRY_RPC_METHODS` (comma-separated; default `methods`).
pub fn io_cases(folder: &Path, methods: &[&str]) -> Vec<IoCase> {
    let filter: Vec<String> = match std::env::var("QUARRY_RPC_METHODS") {
        Ok(list) => list.split(',').map(|m| m.trim().to_string()).collect(),
        Err(_) => methods.iter().map(|m| m.to_string()).collect(),
    };
    let mut cases = Vec::new();
    for method in filter {
        let dir = folder.join("tests").join(&method);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "io"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let mut exchanges = Vec::new();
            let mut request = None;
            let mut speconly = false;
            for line in text.lines() {
                if let Some(comment) = line.strip_prefix("//") {
                    speconly |= comment.contains("speconly");
                } else if let Some(req) = line.strip_prefix(">>") {
                    request = Some(req.trim().to_string());
                } else if let Some(resp) = line.strip_prefix("<<") {
                    let expected = serde_json::from_str(resp.trim()).unwrap();
                    exchanges.push((request.take().unwrap(), expected));
                }
            }
            cases.push(IoCase {
                name: format!("{method}/{}", file.file_name().unwrap().to_string_lossy()),
                exchanges,
                speconly,
            });
        }
    }
    cases
}

/// Whether `value` is a block object (it has a transactions root).
fn is_block(value: &serde_json::Value) -> bool {
    value.get("transactionsRoot").is_some() && value.get("sha3Uncles").is_some()
}

/// Hive's matching rules: error messages are ignored when both sides have an error; block
/// objects may carry `totalDifficulty` beyond what the fixture has. Returns a difference.
pub fn mismatch(expected: &serde_json::Value, actual: &serde_json::Value) -> Option<String> {
    let mut expected = expected.clone();
    let mut actual = actual.clone();
    if let (Some(e), Some(a)) = (
        expected.get_mut("error").and_then(|e| e.as_object_mut()),
        actual.get_mut("error").and_then(|e| e.as_object_mut()),
    ) {
        e.remove("message");
        a.remove("message");
    }
    if let (Some(e), Some(Value::Object(block))) =
        (expected.get("result"), actual.get_mut("result"))
        && is_block(e)
        && e.get("totalDifficulty").is_none()
    {
        block.remove("totalDifficulty");
    }
    (expected != actual).then(|| format!("expected {expected}\n  actual   {actual}"))
}

/// Hive's check of a `speconly` case: the answer has the same keys and JSON types as the
/// expected one, recursively (arrays element by element): a result where a result is expected,
/// an error where an error is. Returns a difference.
pub fn shape_mismatch(expected: &Value, actual: &Value) -> Option<String> {
    let part = if expected.get("error").is_some() {
        "error"
    } else {
        "result"
    };
    if actual.get(part).is_none() {
        return Some(format!("expected a {part}, got {actual}"));
    }
    shape(&expected[part], &actual[part], part)
}

fn shape(expected: &Value, actual: &Value, path: &str) -> Option<String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            let mut ek: Vec<&String> = e.keys().collect();
            let mut ak: Vec<&String> = a.keys().collect();
            ek.sort();
            ak.sort();
            if ek != ak {
                return Some(format!("{path}: keys {ek:?}, got {ak:?}"));
            }
            e.iter()
                .find_map(|(k, v)| shape(v, &a[k], &format!("{path}.{k}")))
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Some(format!("{path}: {} elements, got {}", e.len(), a.len()));
            }
            e.iter()
                .zip(a)
                .enumerate()
                .find_map(|(i, (e, a))| shape(e, a, &format!("{path}[{i}]")))
        }
        (Value::Null, Value::Null)
        | (Value::Bool(_), Value::Bool(_))
        | (Value::Number(_), Value::Number(_))
        | (Value::String(_), Value::String(_)) => None,
        _ => Some(format!("{path}: expected {expected}, got {actual}")),
    }
}

/// A dev chain and a fork of it: `main` (40 blocks) and `fork` (diverging after block
/// `FORK_AT`, 45 blocks), with their genesis, generated by the real `quarry devchain`.
pub struct ForkedChains {
    _dir: tempfile::TempDir,
    pub dir: PathBuf,
    pub genesis: PathBuf,
    pub main: Vec<Block>,
    pub fork: Vec<Block>,
}

impl ForkedChains {
    /// The last block `main` and `fork` share.
    pub const FORK_AT: u64 = 30;

    pub fn generate() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        let generate = |out: &Path, extra: &[&str]| {
            let output = Command::new(QUARRY)
                .args(["devchain", "--out"])
                .arg(out)
                .args(["--txs-per-block", "4"])
                .args(extra)
                .output()
                .unwrap();
            assert!(output.status.success(), "{output:?}");
        };
        generate(&path.join("main"), &["--blocks", "40"]);
        let fork_at = Self::FORK_AT.to_string();
        generate(
            &path.join("fork"),
            &["--blocks", "45", "--fork-at", &fork_at, "--fork-seed", "7"],
        );
        let read =
            |name: &str| decode_blocks(&std::fs::read(path.join(name).join("chain.rlp")).unwrap());
        Self {
            genesis: path.join("main/genesis.json"),
            main: read("main"),
            fork: read("fork"),
            dir: path,
            _dir: dir,
        }
    }

    /// Blocks `1..=last` of `blocks` in a file named `name`.
    pub fn file(&self, name: &str, blocks: &[Block], last: u64) -> PathBuf {
        let path = self.dir.join(name);
        let chosen = blocks.iter().filter(|b| b.header.number <= last);
        std::fs::write(&path, encode_blocks(chosen)).unwrap();
        path
    }

    /// A fresh datadir holding exactly `blocks`.
    pub fn fresh(&self, name: &str, blocks: &[Block]) -> PathBuf {
        let file = self.file(&format!("{name}.rlp"), blocks, u64::MAX);
        let datadir = self.dir.join(name);
        run_quarry(ingest_args(&datadir, &self.genesis, &[&file]));
        datadir
    }
}

/// The body of the next HTTP request on `reader` (its headers read up to the blank line, then
/// `Content-Length` bytes), or `None` when the client has closed the connection.
pub fn read_request_body(reader: &mut impl BufRead) -> std::io::Result<Option<Vec<u8>>> {
    let mut length = 0;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Some(body))
}

/// eth_getAccount's answer holds what eth_getProof proves of the same account and block
/// (`storageRoot` is the proof's `storageHash`); `what` names them in a failure.
pub fn assert_account_is_proved(account: &Value, proof: &Value, what: &str) {
    for (field, proved) in [
        ("balance", "balance"),
        ("nonce", "nonce"),
        ("codeHash", "codeHash"),
        ("storageRoot", "storageHash"),
    ] {
        assert_eq!(account[field], proof[proved], "{what}: {field}");
    }
}

/// `n` as a JSON-RPC quantity (`0x`-prefixed hex).
pub fn hex_quantity(n: u64) -> String {
    format!("{n:#x}")
}

/// Runs `node <script>` in tests/clients (which needs `npm ci` there first) with `args`, which
/// must succeed: its stdout.
pub fn node_client(script: &str, args: &[&str]) -> String {
    let clients = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients");
    assert!(
        clients.join("node_modules/ethers").exists(),
        "run `npm ci` in tests/clients first (.ci/run does)"
    );
    let output = Command::new("node")
        .current_dir(&clients)
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Foundry's `tool` (anvil, cast) from the npm package tests/clients installs, or `None` (with
/// a message) when it is not installed (`.ci/run` installs it).
pub fn foundry_tool(tool: &str) -> Option<PathBuf> {
    let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/node_modules");
    // The platform package's binary itself (`@foundry-rs/anvil-linux-amd64/bin/anvil`): the
    // `.bin` wrapper is a node process, and killing it leaves the tool running.
    let platform = std::fs::read_dir(modules.join("@foundry-rs"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with(&format!("{tool}-"))
        })
        .map(|entry| entry.path().join("bin").join(tool))
        .find(|binary| binary.exists());
    if let Some(binary) = platform {
        return Some(binary);
    }
    let binary = modules.join(".bin").join(tool);
    if binary.exists() {
        return Some(binary);
    }
    eprintln!(
        "skipping: {tool} is not installed (cd tests/clients && npm ci installs @foundry-rs/{tool})"
    );
    None
}

/// An anvil process (the npm package tests/clients installs) on a free port, killed when
/// dropped.
pub struct Anvil {
    child: Child,
    pub url: String,
}

impl Anvil {
    /// Starts anvil with `args`, or `None` (with a message) when the npm package is not
    /// installed (`.ci/run` installs it).
    pub fn start(args: &[&str]) -> Option<Self> {
        let binary = foundry_tool("anvil")?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new(binary)
            .args(["--port", &port.to_string()])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        for line in lines.by_ref() {
            if line.unwrap().starts_with("Listening on") {
                break;
            }
        }
        // anvil logs every call: keep draining its output so it never blocks.
        std::thread::spawn(move || lines.for_each(drop));
        Some(Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        })
    }

    /// One call: anvil's whole answer.
    pub fn call(&self, method: &str, params: Value) -> Value {
        let body =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut response = ureq::post(&self.url)
            .header("Content-Type", "application/json")
            .send(body.to_string())
            .unwrap();
        serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap()
    }

    /// The receipt of transaction `hash` once anvil has mined it (its automine answers the
    /// send before the block is in), waiting up to 10 s: anvil's whole answer.
    pub fn mined_receipt(&self, hash: &Value) -> Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let receipt = self.call("eth_getTransactionReceipt", serde_json::json!([hash]));
            if !receipt["result"].is_null() || std::time::Instant::now() >= deadline {
                return receipt;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Anvil {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `redis-server` on a free port, stopped when dropped (its directory goes with it).
pub struct RedisServer(Child, u16, #[allow(dead_code)] tempfile::TempDir);

impl RedisServer {
    /// Its URL, database 0.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.1)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A `redis-server` answering PING, or `None` when none is installed. The port is free
/// when picked but may be taken before redis binds it (by another test's listener or an
/// outgoing connection), so a redis that exits, or a port that answers anything but PONG,
/// is retried on a new port.
pub fn redis_server() -> Option<RedisServer> {
    for _ in 0..5 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let mut redis = RedisServer(child, port, dir);
        if redis_answers_ping(&mut redis) {
            return Some(redis);
        }
    }
    panic!("redis-server did not answer PING on any of 5 ports");
}

/// Waits up to 5 s for `redis` to answer PING with PONG; false once it has exited.
fn redis_answers_ping(redis: &mut RedisServer) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if redis.0.try_wait().ok().flatten().is_some() {
            return false;
        }
        if answers_ping(redis.1) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Whether a Redis on this local port answers PING with PONG now (within a second): a listener
/// that is not Redis, or none, does not.
pub fn answers_ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let mut answer = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut answer).is_ok()
        && &answer == b"+PONG\r\n"
}

/// An HTTP answer: status, head (lowercased), body.
pub struct HttpAnswer {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl HttpAnswer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|_| panic!("not JSON: {}", self.body))
    }

    /// The JSON-RPC error message.
    pub fn message(&self) -> String {
        self.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The value of header `name`, if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (n, v) = line.split_once(':')?;
            (n.trim() == name).then(|| v.trim())
        })
    }
}

/// One HTTP/1.1 exchange with extra headers.
pub fn http_exchange(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> HttpAnswer {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let head = head
        .lines()
        .map(|l| match l.split_once(':') {
            Some((n, v)) => format!("{}:{v}", n.to_ascii_lowercase()),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    HttpAnswer {
        status,
        head,
        body: body.to_string(),
    }
}
