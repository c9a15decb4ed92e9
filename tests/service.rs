//! The service layer end to end: networks chosen by host name, the keys CLI and revocation on a
//! running server, partner forwarding (plan x method x cause, partner up, down and slow), rate
//! limits and daily quotas across HTTP and WebSocket, and `/metrics`, `/health`, `/ready`.

#![allow(clippy::unwrap_used)]

mod support;

use serde_json::{Value, json};
use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    time::{Duration, Instant},
};
use support::{KEY, Server, fixtures, ingested, keys_cli, metric_value, partial_datadir, within};

fn devnet() -> PathBuf {
    ingested(&Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet"))
}

/// A TOML string value (paths with backslashes or quotes stay intact).
fn toml_path(path: &Path) -> String {
    Value::from(path.display().to_string()).to_string()
}

/// A `[[networks]]` entry answering on `host`, forwarding to `partner` if given.
fn network_toml(name: &str, host: &str, datadir: &Path, partner: Option<&str>) -> String {
    let partner = partner.map_or(String::new(), |url| format!("partner_url = \"{url}\"\n"));
    format!(
        "[[networks]]\nname = \"{name}\"\nhosts = [\"{host}\"]\ndatadir = {}\n{partner}\n",
        toml_path(datadir)
    )
}

/// One HTTP/1.1 exchange with a chosen Host header: (status, headers, body).
fn raw_http(addr: &str, method: &str, host: &str, path: &str, body: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_string(), body.to_string())
}

/// A JSON-RPC call to `host` with `key`: (HTTP status, response).
fn rpc(server: &Server, host: &str, key: &str, method: &str, params: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
    let (status, _, text) = raw_http(&server.addr, "POST", host, &format!("/v3/{key}"), &body);
    (status, serde_json::from_str(&text).unwrap())
}

fn ws(url: &str) -> support::WsClient {
    support::WsClient::connect(url)
}

fn ws_call(client: &mut support::WsClient, method: &str, params: Value) -> Value {
    client.exchange(
        &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string(),
    )
}

fn rpc_compat_chain_id() -> u64 {
    let genesis: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("genesis.json")).unwrap())
            .unwrap();
    genesis["config"]["chainId"].as_u64().unwrap()
}

#[test]
fn networks_are_chosen_by_host_name() {
    let (dev, compat) = (devnet(), ingested(&fixtures()));
    let server = Server::with_config(&format!(
        r#"
[[networks]]
name = "dev"
hosts = ["localhost"]
datadir = {}
chain_id = 1337

[[networks]]
name = "compat"
hosts = ["127.0.0.1", "compat.example"]
datadir = {}
rollup_of = "dev"

[[keys]]
key = "{KEY}"

[[keys]]
key = "dev-only-key"
networks = ["dev"]
"#,
        toml_path(&dev),
        toml_path(&compat)
    ));
    let port = server.addr.split(':').nth(1).unwrap().to_string();
    let chain_id =
        |host: &str| rpc(&server, host, KEY, "eth_chainId", json!([])).1["result"].clone();
    let compat_id = json!(format!("{:#x}", rpc_compat_chain_id()));
    assert_eq!(chain_id("localhost"), "0x539");
    assert_eq!(chain_id(&format!("LocalHost:{port}")), "0x539");
    assert_eq!(chain_id("127.0.0.1"), compat_id);
    assert_eq!(chain_id("compat.example"), compat_id);
    // Each network answers from its own chain.
    let head =
        |host: &str| rpc(&server, host, KEY, "eth_blockNumber", json!([])).1["result"].clone();
    assert_eq!(head("localhost"), "0x40");
    assert_eq!(head("127.0.0.1"), "0x36");
    // The rollup's L1 context is the dev network's head.
    let info = rpc(&server, "127.0.0.1", KEY, "rollup_getInfo", json!([])).1;
    assert_eq!(info["result"]["ethContext"]["blockNumber"], 64, "{info}");

    let (status, _, body) = raw_http(
        &server.addr,
        "POST",
        "unknown.example",
        &format!("/v3/{KEY}"),
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}"#,
    );
    assert_eq!(status, 404);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"]["code"], -32600);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"unknown.example\"") && message.contains("localhost"),
        "{message}"
    );

    // A key limited to one network is refused on the others.
    let (status, body) = rpc(
        &server,
        "127.0.0.1",
        "dev-only-key",
        "eth_chainId",
        json!([]),
    );
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("compat"),
        "{body}"
    );
    assert_eq!(
        rpc(
            &server,
            "localhost",
            "dev-only-key",
            "eth_chainId",
            json!([])
        )
        .0,
        200
    );

    // The WebSocket upgrade is routed the same way.
    let mut dev_ws = ws(&format!("ws://localhost:{port}/ws/v3/{KEY}"));
    assert_eq!(
        ws_call(&mut dev_ws, "eth_chainId", json!([]))["result"],
        "0x539"
    );
    let mut compat_ws = ws(&format!("ws://127.0.0.1:{port}/ws/v3/{KEY}"));
    assert_eq!(
        ws_call(&mut compat_ws, "eth_chainId", json!([]))["result"],
        compat_id
    );
}

#[test]
fn keys_cli_round_trip_and_revocation_on_a_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("keys.json");
    let (key, added) = keys_cli(&store, &["add", "--plan", "growth", "--name", "alice"]);
    let key = key.trim().to_string();
    assert_eq!(key.len(), 64, "{key}");
    let id = added.split_whitespace().nth(1).unwrap().to_string();
    assert!(id.starts_with("key-"), "{added}");
    let stored = std::fs::read_to_string(&store).unwrap();
    assert!(!stored.contains(&key), "only the key's hash is stored");

    let (list, _) = keys_cli(&store, &["list"]);
    let row = list.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(
        row.contains("\tgrowth\talice\tall\t") && row.ends_with("\t-"),
        "{row}"
    );

    let server = Server::start(&devnet(), &format!("keys_file = {}", toml_path(&store)));
    let call = |key: &str| rpc(&server, "localhost", key, "eth_chainId", json!([]));
    assert_eq!(call(&key).0, 200);
    let mut socket = ws(&server.ws_url(&key));
    assert_eq!(
        ws_call(&mut socket, "eth_chainId", json!([]))["result"],
        "0x539"
    );

    // A key added while the server runs is accepted within seconds.
    let (second, _) = keys_cli(&store, &["add", "--plan", "free"]);
    let second = second.trim().to_string();
    within(Duration::from_secs(3), || call(&second).0 == 200);

    keys_cli(&store, &["revoke", &id]);
    let took = within(Duration::from_secs(3), || call(&key).0 == 401);
    eprintln!("revocation took effect over HTTP after {took:?}");
    let (_, refused) = call(&key);
    assert_eq!(refused["error"]["code"], -32600);
    assert_eq!(refused["error"]["message"], "invalid API key");
    // The open WebSocket is closed, with the reason (a call that beats the close is refused).
    let closed = loop {
        match socket.next_event(Duration::from_secs(3)) {
            Some(support::WsEvent::Closed(code, reason)) => break (code, reason),
            Some(support::WsEvent::Json(answer)) => {
                assert_eq!(answer["error"]["code"], -32600, "{answer}")
            }
            other => panic!("the revoked key's WebSocket stayed open: {other:?}"),
        }
    };
    assert_eq!(closed, (1008, "API key revoked".to_string()));
    // The other key and the config's key still work; the list shows the revocation.
    assert_eq!(call(&second).0, 200);
    assert_eq!(call(KEY).0, 200);
    let (list, _) = keys_cli(&store, &["list"]);
    let row = list.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(!row.ends_with("\t-"), "{row}");
}

/// Writes a sync target above the head of `datadir` held by this (live) process: the node is
/// then "still syncing".
fn announce_syncing(datadir: &Path) {
    let db = quarry_storage::Database::open(datadir).unwrap();
    let tx = db.writer().unwrap();
    tx.put_sync_target(Some(quarry_storage::SyncTarget {
        block: 54,
        pid: std::process::id(),
    }))
    .unwrap();
    tx.commit().unwrap();
}

/// A partner that accepts connections and never answers.
fn silent_partner() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    url
}

/// A partner address where nothing listens.
fn absent_partner() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    drop(listener);
    url
}

const PLANS: [&str; 3] = ["free", "growth", "custom"];

fn plan_keys() -> String {
    PLANS
        .iter()
        .map(|plan| format!("[[keys]]\nkey = \"{plan}-key\"\nplan = \"{plan}\"\n"))
        .collect()
}

#[test]
fn forwarding_follows_plan_method_cause_and_partner() {
    let partner = Server::start(&ingested(&fixtures()), "");
    // The primary's networks hold blocks 0-10 of the chain the partner has whole.
    let (up, down, slow) = (
        partial_datadir(10),
        partial_datadir(10),
        partial_datadir(10),
    );
    let primary = Server::with_config(&format!(
        "forward_timeout_ms = 500\n{}{}{}{}",
        network_toml(
            "up",
            "up.test",
            &up.path().join("data"),
            Some(&partner.http_url(KEY))
        ),
        network_toml(
            "down",
            "down.test",
            &down.path().join("data"),
            Some(&absent_partner())
        ),
        network_toml(
            "slow",
            "slow.test",
            &slow.path().join("data"),
            Some(&silent_partner())
        ),
        plan_keys(),
    ));
    for dir in [&up, &down, &slow] {
        announce_syncing(&dir.path().join("data"));
    }
    for network in ["up", "down", "slow"] {
        within(Duration::from_secs(5), || {
            metric_value(
                &primary,
                &format!("quarry_syncing{{network=\"{network}\"}}"),
            ) == Some(1.0)
        });
    }

    // What lies beyond the primary's head: a block, a receipt, an uncle.
    let block = partner.result("eth_getBlockByNumber", json!(["0x14", false]));
    let receipt_tx = (11..=54)
        .map(|n| partner.result("eth_getBlockByNumber", json!([format!("{n:#x}"), false])))
        .find_map(|b| b["transactions"].as_array().unwrap().first().cloned())
        .unwrap();
    let with_uncle = (11..=54)
        .map(|n| partner.result("eth_getBlockByNumber", json!([format!("{n:#x}"), false])))
        .find(|b| !b["uncles"].as_array().unwrap().is_empty())
        .unwrap();
    let cases = [
        ("eth_getBlockByNumber", json!(["0x14", false])),
        ("eth_getTransactionReceipt", json!([receipt_tx])),
        (
            "eth_getUncleByBlockHashAndIndex",
            json!([with_uncle["hash"], "0x0"]),
        ),
    ];
    for (method, params) in &cases {
        let from_partner = partner.result(method, params.clone());
        assert!(!from_partner.is_null(), "{method}");
        for plan in PLANS {
            let key = format!("{plan}-key");
            let (_, answer) = rpc(&primary, "up.test", &key, method, params.clone());
            let expected = if plan == "free" {
                &Value::Null
            } else {
                &from_partner
            };
            assert_eq!(
                &answer["result"], expected,
                "{method}, {plan} key, partner up"
            );
            // A partner that is down, or too slow, leaves quarry's own answer.
            let (_, answer) = rpc(&primary, "down.test", &key, method, params.clone());
            assert_eq!(
                answer["result"],
                Value::Null,
                "{method}, {plan} key, partner down"
            );
            let started = Instant::now();
            let (_, answer) = rpc(&primary, "slow.test", &key, method, params.clone());
            assert_eq!(
                answer["result"],
                Value::Null,
                "{method}, {plan} key, partner slow"
            );
            if plan != "free" {
                let took = started.elapsed();
                assert!(
                    took >= Duration::from_millis(500) && took < Duration::from_secs(5),
                    "{took:?}"
                );
            }
        }
    }
    // Other methods are never forwarded, and what the node has is answered by the node.
    let by_hash = rpc(
        &primary,
        "up.test",
        "growth-key",
        "eth_getBlockByHash",
        json!([block["hash"], false]),
    )
    .1;
    assert_eq!(by_hash["result"], Value::Null);
    let own = rpc(
        &primary,
        "up.test",
        "growth-key",
        "eth_getBlockByNumber",
        json!(["0x5", false]),
    )
    .1;
    assert_eq!(own["result"]["number"], "0x5");

    // Every forward is counted: two plans x three methods on each network.
    for method in [
        "eth_getBlockByNumber",
        "eth_getTransactionReceipt",
        "eth_getUncleByBlockHashAndIndex",
    ] {
        let up = format!(
            "quarry_forwards_total{{network=\"up\",method=\"{method}\",result=\"answered\"}}"
        );
        assert_eq!(metric_value(&primary, &up), Some(2.0), "{up}");
        for network in ["down", "slow"] {
            let failed = format!(
                "quarry_forwards_total{{network=\"{network}\",method=\"{method}\",result=\"failed\"}}"
            );
            assert_eq!(metric_value(&primary, &failed), Some(2.0), "{failed}");
        }
    }
}

/// An overloaded node (no read may wait) forwards growth and custom keys' calls; free keys get
/// quarry's own error.
#[test]
fn overload_is_forwarded_for_paying_plans() {
    let partner = Server::start(&ingested(&fixtures()), "");
    let busy = partial_datadir(10);
    let primary = Server::with_config(&format!(
        "max_queued_reads = 0\n{}{}",
        network_toml(
            "busy",
            "localhost",
            &busy.path().join("data"),
            Some(&partner.http_url(KEY))
        ),
        plan_keys(),
    ));
    let latest = json!(["latest", false]);
    let (_, free) = rpc(
        &primary,
        "localhost",
        "free-key",
        "eth_getBlockByNumber",
        latest.clone(),
    );
    assert_eq!(free["error"]["code"], -32603, "{free}");
    assert!(
        free["error"]["message"]
            .as_str()
            .unwrap()
            .contains("overloaded"),
        "{free}"
    );
    for key in ["growth-key", "custom-key"] {
        let (_, answer) = rpc(
            &primary,
            "localhost",
            key,
            "eth_getBlockByNumber",
            latest.clone(),
        );
        assert_eq!(answer["result"]["number"], "0x36", "{key}: {answer}");
    }
    // Not a forwardable method: the error stands.
    let (_, logs) = rpc(
        &primary,
        "localhost",
        "growth-key",
        "eth_blockNumber",
        json!([]),
    );
    assert_eq!(logs["error"]["code"], -32603, "{logs}");
}

#[test]
fn rate_limits_and_daily_quotas_hold_across_transports() {
    let server = Server::start(
        &devnet(),
        r#"
[plans.free]
requests_per_second = 5
requests_per_day = 1000
[plans.growth]
requests_per_day = 4

[[keys]]
key = "free-key"
plan = "free"
[[keys]]
key = "quota-key"
plan = "growth"
"#,
    );
    let call = |key: &str| rpc(&server, "localhost", key, "eth_chainId", json!([]));
    let mut statuses = Vec::new();
    let mut refusal = None;
    for _ in 0..20 {
        let (status, body) = call("free-key");
        if status == 429 && refusal.is_none() {
            refusal = Some(body);
        }
        statuses.push(status);
    }
    let admitted = statuses.iter().filter(|s| **s == 200).count();
    assert!((1..=10).contains(&admitted), "{statuses:?}");
    assert_eq!(
        admitted + statuses.iter().filter(|s| **s == 429).count(),
        20
    );
    let refusal = refusal.unwrap();
    assert_eq!(refusal["error"]["code"], -32005, "{refusal}");
    assert_eq!(
        refusal["error"]["data"]["allowed_units_per_second"], 5,
        "{refusal}"
    );
    assert_eq!(
        refusal["error"]["message"],
        "request rate exceeded: this key may use 5 weight units per second, and eth_chainId weighs 1"
    );
    assert!(
        refusal["error"]["data"]["backoff_seconds"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let (_, head, _) = raw_http(
        &server.addr,
        "POST",
        "localhost",
        "/v3/free-key",
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}"#,
    );
    assert!(
        head.to_ascii_lowercase().contains("retry-after: 1"),
        "{head}"
    );
    // Other keys are not affected.
    assert!((0..20).all(|_| call(KEY).0 == 200));

    // Every call of a batch counts.
    std::thread::sleep(Duration::from_millis(1200));
    let batch: Vec<Value> = (0..6)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "eth_chainId", "params": []}))
        .collect();
    let (status, _, body) = raw_http(
        &server.addr,
        "POST",
        "localhost",
        "/v3/free-key",
        &Value::from(batch).to_string(),
    );
    assert_eq!(status, 429);
    let answers: Vec<Value> = serde_json::from_str(&body).unwrap();
    let refused = answers
        .iter()
        .filter(|a| a["error"]["code"] == -32005)
        .count();
    assert!((4..=5).contains(&refused), "{body}");

    // The limit holds over a WebSocket as well.
    std::thread::sleep(Duration::from_millis(1200));
    let mut socket = ws(&server.ws_url("free-key"));
    let refused = (0..10)
        .filter(|_| ws_call(&mut socket, "eth_chainId", json!([]))["error"]["code"] == -32005)
        .count();
    assert!(refused >= 4, "{refused}");

    // The daily quota counts HTTP and WebSocket calls together.
    let mut quota_ws = ws(&server.ws_url("quota-key"));
    assert_eq!(call("quota-key").0, 200);
    assert_eq!(call("quota-key").0, 200);
    assert_eq!(
        ws_call(&mut quota_ws, "eth_chainId", json!([]))["result"],
        "0x539"
    );
    assert_eq!(
        ws_call(&mut quota_ws, "eth_chainId", json!([]))["result"],
        "0x539"
    );
    let (status, body) = call("quota-key");
    assert_eq!(status, 429);
    assert_eq!(body["error"]["code"], -32005);
    let daily = "daily quota exceeded: this key may use 4 weight units a day and has used 4, and eth_chainId weighs 1";
    assert_eq!(body["error"]["message"], daily);
    let over_ws = ws_call(&mut quota_ws, "eth_chainId", json!([]));
    assert_eq!(over_ws["error"]["message"], daily);

    assert!(
        metric_value(
            &server,
            r#"quarry_rate_limited_total{network="default",reason="rate"}"#
        )
        .unwrap()
            >= 20.0
    );
    assert_eq!(
        metric_value(
            &server,
            r#"quarry_rate_limited_total{network="default",reason="daily"}"#
        ),
        Some(2.0)
    );
}

#[test]
fn metrics_health_and_readiness() {
    let server = Server::start(&devnet(), "");
    let (status, _, body) = raw_http(&server.addr, "GET", "localhost", "/health", "");
    assert_eq!((status, body.as_str()), (200, r#"{"status":"ok"}"#));
    let (status, _, body) = raw_http(&server.addr, "GET", "localhost", "/ready", "");
    assert_eq!(status, 200, "{body}");
    let ready: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(ready["ready"], true, "{body}");
    let network = &ready["networks"][0];
    assert_eq!(
        (
            &network["name"],
            &network["head"],
            &network["lag"],
            &network["best_known_head"]
        ),
        (&json!("default"), &json!(64), &json!(0), &Value::Null),
        "{body}"
    );

    for _ in 0..3 {
        server.result("eth_chainId", json!([]));
    }
    let bad = server.call("eth_getBlockByNumber", json!(["nope", false]));
    assert_eq!(bad["error"]["code"], -32602);
    let (status, head, text) = raw_http(&server.addr, "GET", "localhost", "/metrics", "");
    assert_eq!(status, 200);
    assert!(head.contains("text/plain"), "{head}");
    for (series, value) in [
        (
            r#"quarry_requests_total{network="default",method="eth_chainId",outcome="ok"}"#,
            3.0,
        ),
        (
            r#"quarry_requests_total{network="default",method="eth_getBlockByNumber",outcome="error"}"#,
            1.0,
        ),
        (
            r#"quarry_request_duration_seconds_count{network="default",method="eth_chainId"}"#,
            3.0,
        ),
        (
            r#"quarry_request_duration_seconds_bucket{network="default",method="eth_chainId",le="+Inf"}"#,
            3.0,
        ),
        (r#"quarry_head_block{network="default"}"#, 64.0),
        (r#"quarry_syncing{network="default"}"#, 0.0),
    ] {
        let found = text.lines().find_map(|l| {
            l.strip_prefix(series)?
                .strip_prefix(' ')?
                .parse::<f64>()
                .ok()
        });
        assert_eq!(found, Some(value), "{series}\n{text}");
    }
    assert!(text.contains("# TYPE quarry_request_duration_seconds histogram"));

    // A network whose database holds no chain yet is not ready, and /ready names it.
    let empty = tempfile::tempdir().unwrap();
    let waiting = Server::with_config(&format!(
        "{}{}[[keys]]\nkey = \"{KEY}\"\n",
        network_toml("dev", "localhost", &devnet(), None),
        network_toml("fresh", "127.0.0.1", empty.path(), None),
    ));
    let (status, _, body) = raw_http(&waiting.addr, "GET", "localhost", "/ready", "");
    assert_eq!(status, 503, "{body}");
    let ready: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(ready["ready"], false, "{body}");
    assert_eq!(ready["networks"][0]["ready"], true, "{body}");
    assert_eq!(
        (
            &ready["networks"][1]["name"],
            &ready["networks"][1]["reason"]
        ),
        (&json!("fresh"), &json!("no chain stored yet")),
        "{body}"
    );
}

/// A dev account with a balance, as `from`.
const DEV: &str = "0x024aaB352Dc61220600a6f69Ea7694BC490CAA2E";

/// Plans count weight units: a heavy call costs its weight, a batch the sum of its calls'
/// weights, eth_getLogs more for a longer range, and the -32005 answers say so.
#[test]
fn weights_count_against_quotas_and_rates() {
    let server = Server::start(
        &devnet(),
        r#"
[weights]
logs_blocks_per_unit = 10
[weights.methods]
eth_estimateGas = 13
[plans.free]
units_per_day = 40
[plans.growth]
requests_per_day = 60
[plans.custom]
units_per_second = 10

[[keys]]
key = "free-key"
plan = "free"
[[keys]]
key = "growth-key"
plan = "growth"
[[keys]]
key = "rate-key"
"#,
    );
    let transfer = json!([{"from": DEV, "to": DEV}, "latest"]);
    let call =
        |key: &str, method: &str, params: Value| rpc(&server, "localhost", key, method, params);

    // eth_call weighs 5: a quota of 40 units is eight calls.
    for i in 0..8 {
        let (status, body) = call("free-key", "eth_call", transfer.clone());
        assert_eq!(
            (status, &body["result"]),
            (200, &json!("0x")),
            "call {i}: {body}"
        );
    }
    let (status, body) = call("free-key", "eth_call", transfer.clone());
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], -32005);
    assert_eq!(
        body["error"]["message"],
        "daily quota exceeded: this key may use 40 weight units a day and has used 40, and eth_call weighs 5"
    );
    assert_eq!(body["error"]["data"]["weight"], 5, "{body}");
    assert_eq!(body["error"]["data"]["allowed_units_per_day"], 40, "{body}");
    assert_eq!(call("free-key", "eth_chainId", json!([])).0, 429);

    // A batch costs the sum of its calls: 5 + 13 (configured) + 1 + 1 + eth_getLogs over the
    // dev chain's 65 blocks, 5 + 64 / 10 = 11: 31 of the 60 units.
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "eth_call", "params": transfer},
        {"jsonrpc": "2.0", "id": 2, "method": "eth_estimateGas", "params": [{"from": DEV, "to": DEV}]},
        {"jsonrpc": "2.0", "id": 3, "method": "eth_getBalance", "params": [DEV, "latest"]},
        {"jsonrpc": "2.0", "id": 4, "method": "eth_chainId", "params": []},
        {"jsonrpc": "2.0", "id": 5, "method": "eth_getLogs", "params": [{"fromBlock": "0x0", "toBlock": "latest"}]},
    ]);
    let (status, _, text) = raw_http(
        &server.addr,
        "POST",
        "localhost",
        "/v3/growth-key",
        &batch.to_string(),
    );
    assert_eq!(status, 200, "{text}");
    let answers: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert!(answers.iter().all(|a| a.get("result").is_some()), "{text}");
    for i in 0..29 {
        let (status, body) = call("growth-key", "eth_chainId", json!([]));
        assert_eq!(status, 200, "call {i}: {body}");
    }
    let (status, body) = call("growth-key", "eth_chainId", json!([]));
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["data"]["used_today"], 60, "{body}");

    // 10 units a second: one eth_call, and the next waits half a second.
    assert_eq!(call("rate-key", "eth_call", transfer.clone()).0, 200);
    let (status, body) = call("rate-key", "eth_call", transfer.clone());
    assert_eq!(status, 429, "{body}");
    assert_eq!(
        body["error"]["message"],
        "request rate exceeded: this key may use 10 weight units per second, and eth_call weighs 5"
    );
    let backoff = body["error"]["data"]["backoff_seconds"].as_f64().unwrap();
    assert!(backoff > 0.2 && backoff <= 0.5, "{body}");
    std::thread::sleep(Duration::from_secs_f64(backoff + 0.05));
    assert_eq!(call("rate-key", "eth_call", transfer).0, 200);
}

/// An address that state overrides give an endless loop that hashes 4 KiB of memory a turn
/// (JUMPDEST PUSH2 0x1000 PUSH1 0 KECCAK256 POP PUSH1 0 JUMP): about 10 ns a gas, so the
/// devnet's 300M-gas cap lasts seconds, past the deadline, where a bare jump loop runs out of
/// gas in a quarter of a second.
const LOOP: &str = "0x1000000000000000000000000000000000000001";

/// eth_call's parameters for a call that loops until its deadline.
fn looping_call() -> Value {
    json!([{"from": DEV, "to": LOOP}, "latest", {LOOP: {"code": "0x5b61100060002050600056"}}])
}

/// The `q`-quantile of `samples`.
fn quantile(samples: &mut [Duration], q: f64) -> Duration {
    samples.sort_unstable();
    samples[((samples.len() - 1) as f64 * q).round() as usize]
}

/// Heavy calls are shared fairly between keys: a key flooding eth_call with calls that run
/// to the deadline, at its plan's permitted rate, may hold both call slots but never the
/// reserve, so another key's cheap calls keep their latency; a call that waits past its
/// deadline is answered with the timeout error without running.
#[test]
fn heavy_calls_are_shared_fairly_between_keys() {
    let server = Server::start(
        &devnet(),
        r#"
call_threads = 2
call_timeout_ms = 1000
max_concurrent_heavy_per_key = 1
[plans.free]
units_per_second = 10
[plans.growth]

[[keys]]
key = "flood-key"
plan = "free"
[[keys]]
key = "other-key"
plan = "growth"
[[keys]]
key = "burst-key"
"#,
    );
    let call = |key: &str, params: Value| rpc(&server, "localhost", key, "eth_call", params);
    let aborted = "execution aborted (timeout = 1s)";
    let started = Instant::now();
    let (_, answer) = call("burst-key", looping_call());
    assert_eq!(answer["error"]["message"], aborted, "{answer}");
    assert!(started.elapsed() >= Duration::from_secs(1));

    // Three looping calls of one key at once: two run to their deadline on the two slots,
    // and the one waiting behind them is answered at its own, unrun (or it would answer at
    // 2 s: the reserve is not for a key past its share).
    let started = Instant::now();
    std::thread::scope(|scope| {
        let calls: Vec<_> = (0..3)
            .map(|_| scope.spawn(|| call("burst-key", looping_call()).1))
            .collect();
        for answer in calls {
            let answer = answer.join().unwrap();
            assert_eq!(answer["error"]["message"], aborted, "{answer}");
        }
    });
    let took = started.elapsed();
    assert!(took < Duration::from_millis(1800), "{took:?}");

    let transfer = json!([{"from": DEV, "to": DEV}, "latest"]);
    // The other key's cheap calls, one every 50 ms for three seconds, each on its own thread
    // (so that a call that waits does not hold back the ones after it): their latencies.
    let cheap_calls = || -> Vec<Duration> {
        std::thread::scope(|scope| {
            let calls: Vec<_> = (0..60)
                .map(|_| {
                    std::thread::sleep(Duration::from_millis(50));
                    scope.spawn(|| {
                        let started = Instant::now();
                        let (status, answer) = call("other-key", transfer.clone());
                        assert_eq!((status, &answer["result"]), (200, &json!("0x")), "{answer}");
                        started.elapsed()
                    })
                })
                .collect();
            calls.into_iter().map(|c| c.join().unwrap()).collect()
        })
    };
    let mut alone = cheap_calls();

    // The flood: a looping call every 520 ms (the plan allows one every 500 ms).
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (mut during, flood) = std::thread::scope(|scope| {
        let flood = scope.spawn(|| {
            let mut calls = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                calls.push(scope.spawn(|| call("flood-key", looping_call())));
                std::thread::sleep(Duration::from_millis(520));
            }
            calls
                .into_iter()
                .map(|c| c.join().unwrap())
                .collect::<Vec<_>>()
        });
        // Let the flood's queue fill first.
        std::thread::sleep(Duration::from_millis(1500));
        let during = cheap_calls();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (during, flood.join().unwrap())
    });
    let timed_out = flood
        .iter()
        .filter(|(_, answer)| answer["error"]["message"] == aborted)
        .count();
    assert!(timed_out >= 3, "{flood:?}");
    let (p50_alone, p99_alone) = (quantile(&mut alone, 0.5), quantile(&mut alone, 0.99));
    let (p50_during, p99_during) = (quantile(&mut during, 0.5), quantile(&mut during, 0.99));
    eprintln!(
        "other key's eth_call: alone p50 {p50_alone:?} p99 {p99_alone:?}; during the flood p50 {p50_during:?} p99 {p99_during:?} ({} flood calls, {timed_out} timed out)",
        flood.len()
    );
    // Generous bounds for a shared machine: behind the flood (first come, first served) the
    // p99 would be most of a flood call's second.
    assert!(
        p99_during <= (p99_alone * 4).max(p99_alone + Duration::from_millis(150)),
        "p99 alone {p99_alone:?}, during the flood {p99_during:?}"
    );
}
