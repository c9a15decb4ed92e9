//! eth_subscribe over WebSocket and geth's polling filters, against a real `quarry serve` whose
//! datadir other processes (`quarry ingest`, `quarry ingest --reorg`) grow and reorganise: every
//! new canonical block once and in order, logs removed by a reorganisation sent again with
//! `removed: true` before the new branch's, the same through eth_getFilterChanges; the errors
//! and limits; a subscriber that does not read is dropped while others keep up.

#![allow(clippy::unwrap_used)]

mod support;

use serde_json::{Value, json};
use std::{
    collections::{HashMap, VecDeque},
    net::TcpStream,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};
use support::{Block, KEY, Server, decode_blocks, encode_blocks, ingest_args, run_quarry, within};
use tungstenite::{Message, WebSocket, stream::MaybeTlsStream};

/// A JSON-RPC client over one WebSocket that keeps the notifications it reads while waiting
/// for answers.
struct Client {
    socket: WebSocket<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    notifications: VecDeque<(String, Value)>,
}

impl Client {
    fn connect(server: &Server) -> Self {
        Self::connect_as(server, "localhost")
    }

    /// Connects with `host` in the Host header, which picks the network.
    fn connect_as(server: &Server, host: &str) -> Self {
        use tungstenite::client::IntoClientRequest;
        let mut request = server.ws_url(KEY).into_client_request().unwrap();
        request.headers_mut().insert("Host", host.parse().unwrap());
        let (socket, _) = tungstenite::connect(request).unwrap();
        if let MaybeTlsStream::Plain(stream) = socket.get_ref() {
            stream
                .set_read_timeout(Some(Duration::from_secs(30)))
                .unwrap();
        }
        Self {
            socket,
            next_id: 1,
            notifications: VecDeque::new(),
        }
    }

    /// One call: its whole answer (`result` or `error`).
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.socket
            .send(Message::Text(request.to_string().into()))
            .unwrap();
        loop {
            let message = self.read().expect("an answer");
            if message["id"] == id {
                return message;
            }
            self.keep(message);
        }
    }

    fn subscribe(&mut self, params: Value) -> String {
        let answer = self.call("eth_subscribe", params);
        answer["result"]
            .as_str()
            .unwrap_or_else(|| panic!("{answer}"))
            .to_string()
    }

    fn read(&mut self) -> Option<Value> {
        loop {
            match self.socket.read() {
                Ok(Message::Text(text)) => return Some(serde_json::from_str(&text).unwrap()),
                Ok(Message::Close(frame)) => panic!("the server closed the connection: {frame:?}"),
                Ok(_) => continue,
                Err(e) if support::read_timed_out(&e) => return None,
                Err(e) => panic!("reading the WebSocket: {e}"),
            }
        }
    }

    fn keep(&mut self, message: Value) {
        assert_eq!(message["method"], "eth_subscription", "{message}");
        let params = &message["params"];
        self.notifications.push_back((
            params["subscription"].as_str().unwrap().to_string(),
            params["result"].clone(),
        ));
    }

    /// Notifications, by subscription, until `done` holds of them (failing after 60 s).
    fn collect(
        &mut self,
        mut done: impl FnMut(&HashMap<String, Vec<Value>>) -> bool,
    ) -> HashMap<String, Vec<Value>> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut got: HashMap<String, Vec<Value>> = HashMap::new();
        loop {
            while let Some((id, result)) = self.notifications.pop_front() {
                got.entry(id).or_default().push(result);
            }
            if done(&got) {
                return got;
            }
            assert!(Instant::now() < deadline, "timed out; got {got:#?}");
            if let Some(message) = self.read() {
                self.keep(message);
            }
        }
    }

    /// Whatever arrives within `wait`.
    fn drain(&mut self, wait: Duration) -> Vec<(String, Value)> {
        if let MaybeTlsStream::Plain(stream) = self.socket.get_ref() {
            stream.set_read_timeout(Some(wait)).unwrap();
        }
        while let Some(message) = self.read() {
            self.keep(message);
        }
        if let MaybeTlsStream::Plain(stream) = self.socket.get_ref() {
            stream
                .set_read_timeout(Some(Duration::from_secs(30)))
                .unwrap();
        }
        self.notifications.drain(..).collect()
    }
}

type Chains = support::ForkedChains;

/// The devnet chain (its genesis, its whole chain.rlp and its blocks), and a temporary folder
/// holding `prefix.rlp`: its first ten blocks.
struct Devnet {
    genesis: PathBuf,
    chain: PathBuf,
    blocks: Vec<Block>,
    dir: tempfile::TempDir,
    prefix: PathBuf,
}

impl Devnet {
    fn with_prefix() -> Self {
        let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet");
        let chain = folder.join("chain.rlp");
        let blocks = decode_blocks(&std::fs::read(&chain).unwrap());
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("prefix.rlp");
        std::fs::write(&prefix, encode_blocks(blocks.iter().take(10))).unwrap();
        Self {
            genesis: folder.join("genesis.json"),
            chain,
            blocks,
            dir,
            prefix,
        }
    }

    /// Another process's `quarry ingest` of `file` into `datadir`.
    fn ingest(&self, datadir: &Path, file: &Path) {
        run_quarry(ingest_args(datadir, &self.genesis, &[file]));
    }
}

fn hashes(blocks: &[Block], numbers: std::ops::RangeInclusive<u64>) -> Vec<Value> {
    numbers
        .map(|n| json!(blocks[n as usize - 1].header.hash_slow()))
        .collect()
}

fn quantity(value: &Value) -> u64 {
    u64::from_str_radix(value.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// The numbers of `heads`, newHeads notifications.
fn head_numbers(heads: &[Value]) -> Vec<u64> {
    heads.iter().map(|h| quantity(&h["number"])).collect()
}

fn logs(server: &Server, from: u64, to: u64, extra: Value) -> Vec<Value> {
    let mut filter = json!({"fromBlock": format!("{from:#x}"), "toBlock": format!("{to:#x}")});
    if let (Value::Object(filter), Value::Object(extra)) = (&mut filter, extra) {
        filter.extend(extra);
    }
    let found = server.result("eth_getLogs", json!([filter]));
    found.as_array().unwrap().clone()
}

fn removed(logs: &[Value]) -> Vec<Value> {
    logs.iter()
        .map(|log| {
            let mut log = log.clone();
            log["removed"] = json!(true);
            log
        })
        .collect()
}

/// Subscribers and filters installed on a served datadir see the blocks another process
/// appends, each once and in order, then a reorganisation committed by another process: the
/// removed blocks' logs with `removed: true` (oldest first), then the new branch's heads and
/// logs; eth_getFilterChanges gives the same over HTTP.
#[test]
fn subscriptions_and_filters_follow_other_processes_through_a_reorg() {
    let chains = Chains::generate();
    let datadir = chains.dir.join("served");
    let first = chains.file("first20.rlp", &chains.main, 20);
    run_quarry(ingest_args(&datadir, &chains.genesis, &[&first]));
    let server = Server::start(&datadir, "");
    let accounts = quarry_devchain::DevAccounts::new(quarry_devchain::account_count(4)).unwrap();
    let token = quarry_devchain::Contracts::of(accounts.address(0)).token;

    let mut client = Client::connect(&server);
    let heads = client.subscribe(json!(["newHeads"]));
    let all = client.subscribe(json!(["logs"]));
    let of_token = client.subscribe(json!(["logs", {"address": [token]}]));
    let log_filter = server.result("eth_newFilter", json!([{}]));
    let block_filter = server.result("eth_newBlockFilter", json!([]));
    let changes = |filter: &Value| {
        let got = server.result("eth_getFilterChanges", json!([filter]));
        got.as_array().unwrap().clone()
    };
    assert_eq!(changes(&log_filter), Vec::<Value>::new());

    // Another process appends blocks 21 to 40.
    let main = chains.file("main.rlp", &chains.main, 40);
    run_quarry(ingest_args(&datadir, &chains.genesis, &[&main]));
    let new_logs = logs(&server, 21, 40, json!({}));
    let token_logs = logs(&server, 21, 40, json!({"address": token}));
    assert!(
        !new_logs.is_empty() && !token_logs.is_empty() && token_logs.len() < new_logs.len(),
        "the blocks have logs, some of the token"
    );
    let got = client.collect(|got| {
        got.get(&heads).map_or(0, Vec::len) == 20
            && got.get(&all).map_or(0, Vec::len) == new_logs.len()
            && got.get(&of_token).map_or(0, Vec::len) == token_logs.len()
    });
    assert_eq!(head_numbers(&got[&heads]), (21..=40).collect::<Vec<_>>());
    let head_hashes: Vec<Value> = got[&heads].iter().map(|h| h["hash"].clone()).collect();
    assert_eq!(head_hashes, hashes(&chains.main, 21..=40));
    // geth's header shape: every field, null where the block has none, no transactions.
    let head = &got[&heads][0];
    assert!(head.get("transactions").is_none() && head.get("totalDifficulty").is_none());
    assert!(head["parentBeaconBlockRoot"].is_string() && head["slotNumber"].is_null());
    assert_eq!(got[&all], new_logs);
    assert_eq!(got[&of_token], token_logs);
    assert_eq!(changes(&log_filter), new_logs);
    assert_eq!(changes(&block_filter), hashes(&chains.main, 21..=40));
    // Nothing is sent twice: no more notifications come.
    assert_eq!(client.drain(Duration::from_millis(500)), Vec::new());
    assert_eq!(changes(&log_filter), Vec::<Value>::new());

    // Another process switches the datadir to the fork, blocks 31 to 40 replaced by 31 to 45.
    let old_logs = logs(&server, 31, 40, json!({}));
    let old_token_logs = logs(&server, 31, 40, json!({"address": token}));
    let fork = chains.file("fork.rlp", &chains.fork, 45);
    let mut args = ingest_args(&datadir, &chains.genesis, &[&fork]);
    args.push("--reorg".as_ref());
    run_quarry(args);
    let fork_logs = logs(&server, 31, 45, json!({}));
    let fork_token_logs = logs(&server, 31, 45, json!({"address": token}));
    assert_ne!(old_logs, fork_logs);
    let expected_all: Vec<Value> = removed(&old_logs).into_iter().chain(fork_logs).collect();
    let expected_token: Vec<Value> = removed(&old_token_logs)
        .into_iter()
        .chain(fork_token_logs)
        .collect();
    let got = client.collect(|got| {
        got.get(&heads).map_or(0, Vec::len) == 15
            && got.get(&all).map_or(0, Vec::len) == expected_all.len()
            && got.get(&of_token).map_or(0, Vec::len) == expected_token.len()
    });
    let head_hashes: Vec<Value> = got[&heads].iter().map(|h| h["hash"].clone()).collect();
    assert_eq!(head_hashes, hashes(&chains.fork, 31..=45));
    assert_eq!(got[&all], expected_all);
    assert_eq!(got[&of_token], expected_token);
    assert_eq!(changes(&log_filter), expected_all);
    assert_eq!(changes(&block_filter), hashes(&chains.fork, 31..=45));
    assert_eq!(client.drain(Duration::from_millis(500)), Vec::new());

    // eth_getFilterLogs runs the filter's query on the new chain.
    let filter = server.result(
        "eth_newFilter",
        json!([{"fromBlock": "0x1f", "toBlock": "0x2d", "address": token}]),
    );
    let found = server.result("eth_getFilterLogs", json!([filter]));
    assert_eq!(
        found.as_array().unwrap(),
        &logs(&server, 31, 45, json!({"address": token}))
    );
    assert_eq!(server.result("eth_uninstallFilter", json!([filter])), true);
    assert_eq!(server.result("eth_uninstallFilter", json!([filter])), false);
    assert_eq!(
        error(&server.call("eth_unsubscribe", json!([heads]))).0,
        -32601
    );
    assert_eq!(
        client.call("eth_unsubscribe", json!([heads]))["result"],
        true
    );
}

/// The error (code, message) of a call that must fail.
fn error(answer: &Value) -> (i64, String) {
    let error = &answer["error"];
    assert!(error.is_object(), "expected an error: {answer}");
    (
        error["code"].as_i64().unwrap(),
        error["message"].as_str().unwrap().to_string(),
    )
}

/// Bad input and limits: each a clear JSON-RPC error, geth's where geth has one.
#[test]
fn bad_input_and_limits_are_clear_errors() {
    let datadir = support::partial_datadir(5);
    let server = Server::start(
        &datadir.path().join("data"),
        "max_subscriptions_per_connection = 3\nmax_filters_per_key = 2\nfilter_timeout_secs = 1\n\
         [[keys]]\nkey = \"another-key\"\n",
    );
    // Over HTTP there are no notifications.
    let (code, message) = error(&server.call("eth_subscribe", json!(["newHeads"])));
    assert_eq!(
        (code, message.as_str()),
        (-32601, "notifications not supported")
    );
    assert_eq!(
        error(&server.call("eth_unsubscribe", json!(["0x1"]))).0,
        -32601
    );

    let mut client = Client::connect(&server);
    let (code, message) = error(&client.call("eth_subscribe", json!(["newBlocks"])));
    assert_eq!(
        (code, message.as_str()),
        (-32601, r#"no "newBlocks" subscription in eth namespace"#)
    );
    let (code, message) = error(&client.call("eth_subscribe", json!(["newPendingTransactions"])));
    assert_eq!(code, -32601);
    assert!(message.contains("no transaction pool"), "{message}");
    let (code, message) =
        error(&client.call("eth_subscribe", json!(["logs", {"address": "0x12"}])));
    assert_eq!(code, -32602);
    assert!(
        message.starts_with("invalid argument 1 (options): address"),
        "{message}"
    );
    let (code, message) = error(&client.call(
        "eth_subscribe",
        json!(["logs", {"topics": [null, null, null, null, null]}]),
    ));
    assert_eq!(code, -32602);
    assert!(message.contains("exceed max topics"), "{message}");
    let (code, message) = error(&client.call("eth_subscribe", json!(["newHeads", {}])));
    assert_eq!(
        (code, message.as_str()),
        (-32602, "too many arguments, want at most 1")
    );
    assert_eq!(error(&client.call("eth_subscribe", json!([]))).0, -32602);

    // At most 3 subscriptions on the connection; unsubscribing makes room.
    let ids: Vec<String> = (0..3)
        .map(|_| client.subscribe(json!(["newHeads"])))
        .collect();
    let (code, message) = error(&client.call("eth_subscribe", json!(["syncing"])));
    assert_eq!(code, -32005);
    assert!(message.contains("at most 3"), "{message}");
    assert_eq!(
        client.call("eth_unsubscribe", json!([ids[0]]))["result"],
        true
    );
    let (code, message) = error(&client.call("eth_unsubscribe", json!([ids[0]])));
    assert_eq!((code, message.as_str()), (-32000, "subscription not found"));
    // Another connection cannot end this one's subscriptions.
    let mut other = Client::connect(&server);
    assert_eq!(
        error(&other.call("eth_unsubscribe", json!([ids[1]]))).0,
        -32000
    );
    // The syncing subscription says at once that nothing is syncing.
    let syncing = client.subscribe(json!(["syncing"]));
    let got = client.collect(|got| got.contains_key(&syncing));
    assert_eq!(got[&syncing], vec![json!(false)]);

    // Filters: unknown ids, pending transactions, malformed criteria, the per-key limit.
    let (code, message) = error(&server.call("eth_getFilterChanges", json!(["0x1234"])));
    assert_eq!((code, message.as_str()), (-32000, "filter not found"));
    assert_eq!(
        error(&server.call("eth_getFilterLogs", json!(["0x1234"]))).1,
        "filter not found"
    );
    assert_eq!(
        server.result("eth_uninstallFilter", json!(["0x1234"])),
        false
    );
    let (code, message) = error(&server.call("eth_newPendingTransactionFilter", json!([])));
    assert_eq!(code, -32601);
    assert!(message.contains("no transaction pool"), "{message}");
    let (code, message) = error(&server.call("eth_newFilter", json!([{"topics": ["0x12"]}])));
    assert_eq!(code, -32602);
    assert!(
        message.starts_with("invalid argument 0 (filter): topics[0]"),
        "{message}"
    );
    let blocks = server.result("eth_newBlockFilter", json!([]));
    let logs = server.result("eth_newFilter", json!([{"fromBlock": "0x1"}]));
    let (code, message) = error(&server.call("eth_newBlockFilter", json!([])));
    assert_eq!(code, -32005);
    assert!(message.contains("at most 2"), "{message}");
    // geth: a block filter has no logs.
    assert_eq!(
        error(&server.call("eth_getFilterLogs", json!([blocks]))).1,
        "filter not found"
    );
    // Another key cannot see them (and has filters of its own).
    let (status, text) = server.post_raw(
        "/v3/another-key",
        &json!({"jsonrpc": "2.0", "id": 1, "method": "eth_getFilterChanges", "params": [logs]})
            .to_string(),
    );
    assert_eq!(status, 200);
    assert_eq!(
        error(&serde_json::from_str(&text).unwrap()).1,
        "filter not found"
    );
    // Filters work over a WebSocket too, for the same key.
    assert_eq!(
        client.call("eth_getFilterChanges", json!([logs]))["result"],
        json!([])
    );
    // A filter not polled within filter_timeout_secs is gone.
    std::thread::sleep(Duration::from_millis(2600));
    assert_eq!(
        error(&server.call("eth_getFilterChanges", json!([logs]))).1,
        "filter not found"
    );
    assert_eq!(
        error(&server.call("eth_getFilterChanges", json!([blocks]))).1,
        "filter not found"
    );
    server.result("eth_newBlockFilter", json!([]));
    server.result("eth_newBlockFilter", json!([]));
}

/// The value of the first `/metrics` line starting with `series`.
fn metric(server: &Server, series: &str) -> Option<f64> {
    support::metrics_text(server)
        .lines()
        .find(|line| line.starts_with(series))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

/// A subscriber that never reads (200 `logs` subscriptions, about 80 MB of notifications for
/// the blocks another process appends) is closed as a slow consumer once its send buffer is
/// full, and the server's memory does not grow with what it was sent; another subscriber on
/// the same server gets every head and log, in order.
#[test]
fn a_subscriber_that_never_reads_is_dropped_and_others_keep_up() {
    let devnet = Devnet::with_prefix();
    let datadir = devnet.dir.path().join("data");
    devnet.ingest(&datadir, &devnet.prefix);
    // Room for what the fast client is sent at once when the rest of the chain is committed in
    // one transaction (every head and log: more than 256 messages, of about 800 bytes each),
    // and far less than the slow client's 200 subscriptions bring.
    let server = Server::start(
        &datadir,
        "ws_send_buffer_messages = 2048\nws_send_buffer_bytes = 2097152\n",
    );

    let mut slow = Client::connect(&server);
    for _ in 0..200 {
        slow.subscribe(json!(["logs"]));
    }
    let mut fast = Client::connect(&server);
    let heads = fast.subscribe(json!(["newHeads"]));
    let all = fast.subscribe(json!(["logs", {}]));
    // Warm up what every block read allocates anyway before measuring.
    server.result(
        "eth_getLogs",
        json!([{"fromBlock": "0x0", "toBlock": "latest"}]),
    );
    let before = server.anon_rss();

    devnet.ingest(&datadir, &devnet.chain);
    let last = devnet.blocks.len() as u64;
    let expected_logs = logs(&server, 11, last, json!({}));
    assert!(expected_logs.len() > 300, "{}", expected_logs.len());
    let got = fast.collect(|got| {
        got.get(&heads).map_or(0, Vec::len) == (last - 10) as usize
            && got.get(&all).map_or(0, Vec::len) == expected_logs.len()
    });
    assert_eq!(head_numbers(&got[&heads]), (11..=last).collect::<Vec<_>>());
    assert_eq!(got[&all], expected_logs);

    // The slow subscriber is dropped.
    within(Duration::from_secs(10), || {
        metric(&server, "quarry_slow_consumers_total{") == Some(1.0)
    });
    let grown = server.anon_rss().saturating_sub(before);
    assert!(grown < 40 << 20, "the server grew by {} MB", grown >> 20);
    assert_eq!(
        metric(
            &server,
            "quarry_subscriptions{network=\"default\",kind=\"logs\"}"
        ),
        Some(1.0)
    );

    // The slow client finds at most what was buffered, then the close frame with the reason
    // (or a dropped connection when the frame did not fit either).
    let mut read = 0;
    let end = loop {
        match slow.socket.read() {
            Ok(Message::Text(_)) => read += 1,
            Ok(Message::Close(frame)) => break Some(frame.unwrap().reason.to_string()),
            Ok(_) => {}
            Err(_) => break None,
        }
    };
    let sent = 200 * expected_logs.len();
    assert!(read < sent / 2, "{read} of {sent} notifications were sent");
    if let Some(reason) = end {
        assert!(reason.starts_with("slow consumer"), "{reason}");
    }
    // The fast client is still served.
    assert_eq!(
        fast.call("eth_blockNumber", json!([]))["result"],
        format!("{last:#x}")
    );
}

/// A subscription belongs to the network of its connection's Host: blocks committed to
/// another network's datadir are not sent to it.
#[test]
fn subscriptions_belong_to_the_network_of_their_host() {
    let devnet = Devnet::with_prefix();
    let dir = devnet.dir.path();
    let (first, second) = (dir.join("first"), dir.join("second"));
    for datadir in [&first, &second] {
        devnet.ingest(datadir, &devnet.prefix);
    }
    let network = |name: &str, datadir: &Path| {
        format!(
            "[[networks]]\nname = \"{name}\"\nhosts = [\"{name}.localhost\"]\ndatadir = {}\n",
            Value::from(datadir.display().to_string())
        )
    };
    let server = Server::with_config(&format!(
        "{}{}[[keys]]\nkey = \"{KEY}\"\n",
        network("first", &first),
        network("second", &second)
    ));
    let mut on_first = Client::connect_as(&server, "first.localhost");
    let mut on_second = Client::connect_as(&server, "second.localhost");
    let first_heads = on_first.subscribe(json!(["newHeads"]));
    let second_heads = on_second.subscribe(json!(["newHeads"]));

    // Another process grows `datadir` to `last`: the numbers of the heads `client` is sent.
    let grow = |datadir: &Path, last: usize, client: &mut Client, heads: &str| {
        let file = dir.join(format!("first{last}.rlp"));
        std::fs::write(&file, encode_blocks(devnet.blocks.iter().take(last))).unwrap();
        devnet.ingest(datadir, &file);
        let got = client.collect(|got| got.get(heads).map_or(0, Vec::len) == last - 10);
        head_numbers(&got[heads])
    };
    assert_eq!(
        grow(&second, 20, &mut on_second, &second_heads),
        (11..=20).collect::<Vec<_>>()
    );
    assert_eq!(on_first.drain(Duration::from_millis(300)), Vec::new());
    assert_eq!(grow(&first, 12, &mut on_first, &first_heads), vec![11, 12]);
    assert_eq!(on_second.drain(Duration::from_millis(300)), Vec::new());
}

/// Notifications count against the key's plan like calls: a key whose daily quota they use up
/// has its connection closed with the reason, and its calls are refused too.
#[test]
fn notifications_use_up_the_plan_s_daily_quota() {
    let devnet = Devnet::with_prefix();
    let datadir = devnet.dir.path().join("data");
    devnet.ingest(&datadir, &devnet.prefix);
    let server = Server::start(
        &datadir,
        "[plans.free]\nrequests_per_day = 30\n[[keys]]\nkey = \"free-key\"\nplan = \"free\"\n",
    );
    let url = server.ws_url("free-key");
    let (mut socket, _) = tungstenite::connect(url).unwrap();
    let subscribe =
        json!({"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["logs"]});
    socket
        .send(Message::Text(subscribe.to_string().into()))
        .unwrap();
    devnet.ingest(&datadir, &devnet.chain);
    let mut notifications = 0;
    let reason = loop {
        match socket.read().unwrap() {
            Message::Text(text) if text.contains("eth_subscription") => notifications += 1,
            Message::Close(frame) => break frame.unwrap().reason.to_string(),
            _ => {}
        }
    };
    // One call and 29 notifications fit in the quota of 30.
    assert_eq!(notifications, 29);
    assert!(
        reason.starts_with("daily request quota exceeded"),
        "{reason}"
    );
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []});
    let (status, _) = server.post_raw("/v3/free-key", &body.to_string());
    assert_eq!(status, 429);
}
