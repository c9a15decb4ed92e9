//! Browsers and keys locked down, end to end against a real `quarry serve`: CORS (the
//! preflight, the headers on every answer, refusals included, browser WebSocket upgrades) and
//! each key's allowlists (origin with wildcard subdomains, user agent, method, contract
//! address; types ANDed, entries ORed), batches mixing allowed and refused calls, refusals
//! counted by rule, and a key's change reaching an open WebSocket.

#![allow(clippy::unwrap_used)]

mod support;

use serde_json::{Value, json};
use std::{
    path::{Path, PathBuf},
    time::Duration,
};
use support::{
    KEY, Server, WsClient, add_custom_key as add_key, ingested, keys_cli, metric, redis_server,
    within,
};

const A: &str = "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const C: &str = "0xcccccccccccccccccccccccccccccccccccccccc";

fn devnet() -> PathBuf {
    ingested(&Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet"))
}

use support::{HttpAnswer as Answer, http_exchange as exchange};

fn call_body(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()
}

/// A JSON-RPC call with `key` and extra headers.
fn call(
    server: &Server,
    key: &str,
    headers: &[(&str, &str)],
    method: &str,
    params: Value,
) -> Answer {
    exchange(
        &server.addr,
        "POST",
        &format!("/v3/{key}"),
        headers,
        &call_body(method, params),
    )
}

/// Asserts a refusal by `rule` with `message`: HTTP 403 and the JSON-RPC error naming it.
fn assert_refused(answer: &Answer, rule: &str, message: &str) {
    assert_eq!(answer.status, 403, "{}", answer.body);
    let error = &answer.json()["error"];
    assert_eq!(error["code"], -32002, "{error}");
    assert_eq!(error["data"]["rule"], rule, "{error}");
    assert_eq!(error["message"], message, "{error}");
}

#[test]
fn cors_preflight_and_headers_on_every_answer() {
    let server = Server::start(
        &devnet(),
        r#"
cors_origins = ["https://*.app.example", "http://127.0.0.1:9999"]
max_request_bytes = 2000
[plans.free]
requests_per_second = 1
requests_per_day = 1000
[[keys]]
key = "free-key"
plan = "free"
"#,
    );
    let allowed = ("Origin", "https://a.app.example");
    let preflight = |origin: &str| {
        exchange(
            &server.addr,
            "OPTIONS",
            &format!("/v3/{KEY}"),
            &[
                ("Origin", origin),
                ("Access-Control-Request-Method", "POST"),
                ("Access-Control-Request-Headers", "content-type"),
            ],
            "",
        )
    };
    let answer = preflight("https://a.app.example");
    assert_eq!(answer.status, 204, "{}", answer.head);
    assert_eq!(
        answer.header("access-control-allow-origin"),
        Some("https://a.app.example")
    );
    assert_eq!(
        answer.header("access-control-allow-methods"),
        Some("POST, OPTIONS")
    );
    assert_eq!(
        answer.header("access-control-allow-headers"),
        Some("content-type, authorization")
    );
    assert_eq!(answer.header("access-control-max-age"), Some("7200"));
    assert_eq!(answer.header("vary"), Some("origin"));
    let refused = preflight("https://evil.example");
    assert_eq!(refused.status, 403);
    assert_eq!(refused.header("access-control-allow-origin"), None);
    // A wildcard covers subdomains, not the parent; a port must match.
    assert_eq!(preflight("https://app.example").status, 403);
    assert_eq!(preflight("http://127.0.0.1:9999").status, 204);
    assert_eq!(preflight("http://127.0.0.1:9998").status, 403);

    // Answers to an allowed origin carry the header, errors included.
    let ok = call(&server, KEY, &[allowed], "eth_chainId", json!([]));
    assert_eq!(ok.status, 200);
    assert_eq!(
        ok.header("access-control-allow-origin"),
        Some("https://a.app.example")
    );
    let unknown_key = call(&server, "nope", &[allowed], "eth_chainId", json!([]));
    assert_eq!(unknown_key.status, 401);
    assert_eq!(
        unknown_key.header("access-control-allow-origin"),
        Some("https://a.app.example")
    );
    let too_large = exchange(
        &server.addr,
        "POST",
        &format!("/v3/{KEY}"),
        &[allowed],
        &call_body("eth_chainId", json!(["x".repeat(3000)])),
    );
    assert_eq!(too_large.status, 413);
    assert!(too_large.header("access-control-allow-origin").is_some());
    let limited = (0..20)
        .map(|_| call(&server, "free-key", &[allowed], "eth_chainId", json!([])))
        .find(|a| a.status == 429)
        .expect("the free key is never rate limited");
    assert_eq!(limited.json()["error"]["code"], -32005);
    assert!(limited.header("access-control-allow-origin").is_some());
    assert_eq!(
        limited.header("access-control-expose-headers"),
        Some("retry-after")
    );
    // Not a browser: no header, and no refusal.
    let plain = call(&server, KEY, &[], "eth_chainId", json!([]));
    assert_eq!(plain.status, 200);
    assert_eq!(plain.header("access-control-allow-origin"), None);
    // A page on another origin is refused outright.
    let evil = call(
        &server,
        KEY,
        &[("Origin", "https://evil.example")],
        "eth_chainId",
        json!([]),
    );
    assert_eq!(evil.status, 403);
    assert_eq!(
        evil.json()["error"]["message"],
        "origin https://evil.example may not call this network from a browser (its cors_origins)"
    );

    // WebSocket upgrades are checked against the same origins.
    let url = server.ws_url(KEY);
    assert_eq!(
        WsClient::connect_with(&url, &[("Origin", "https://evil.example")]).err(),
        Some(403)
    );
    let mut socket = WsClient::connect_with(&url, &[allowed]).unwrap();
    let answer = socket.exchange(&call_body("eth_chainId", json!([])));
    assert_eq!(answer["result"], "0x539");
    assert!(WsClient::connect_with(&url, &[]).is_ok());
}

#[test]
fn cors_default_allows_every_origin() {
    let server = Server::start(&devnet(), "");
    let origin = ("Origin", "https://anything.example");
    let preflight = exchange(
        &server.addr,
        "OPTIONS",
        &format!("/v3/{KEY}"),
        &[origin],
        "",
    );
    assert_eq!(preflight.status, 204);
    assert_eq!(preflight.header("access-control-allow-origin"), Some("*"));
    let answer = call(&server, KEY, &[origin], "eth_chainId", json!([]));
    assert_eq!(answer.header("access-control-allow-origin"), Some("*"));
    assert!(WsClient::connect_with(&server.ws_url(KEY), &[origin]).is_ok());
}

#[test]
fn every_allowlist_type_with_and_or_wildcards_and_batches() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("keys.json");
    let (origin_key, _) = add_key(
        &store,
        &[
            "--allow-origin",
            "https://*.app.example",
            "--allow-origin",
            "http://localhost:3000",
        ],
    );
    let (agent_key, _) = add_key(
        &store,
        &[
            "--allow-user-agent",
            "Firefox",
            "--allow-user-agent",
            "Chrome",
        ],
    );
    let (method_key, _) = add_key(
        &store,
        &[
            "--allow-method",
            "eth_chainId",
            "--allow-method",
            "eth_getBalance",
        ],
    );
    let (contract_key, _) = add_key(&store, &["--allow-contract", A, "--allow-contract", B]);
    let (both_key, _) = add_key(
        &store,
        &["--allow-method", "eth_getBalance", "--allow-contract", A],
    );
    let (list, _) = keys_cli(&store, &["list"]);
    assert!(
        list.to_lowercase().contains(&format!("contract={A},{B}"))
            && list.contains("origin=https://*.app.example,http://localhost:3000"),
        "{list}"
    );
    let too_many: Vec<String> = (0..31)
        .flat_map(|i| ["--allow-method".to_string(), format!("m{i}")])
        .collect();
    let mut args = vec![
        "keys".to_string(),
        "--store".into(),
        store.display().to_string(),
        "add".into(),
        "--plan".into(),
        "free".into(),
    ];
    args.extend(too_many);
    let failed = support::quarry_fails(args.iter().map(|a| a.as_ref()));
    assert!(failed.contains("at most 30"), "{failed}");

    let server = Server::start(
        &devnet(),
        &format!("keys_file = {}", Value::from(store.display().to_string())),
    );
    let balance = |key: &str, headers: &[(&str, &str)], address: &str| {
        call(
            &server,
            key,
            headers,
            "eth_getBalance",
            json!([address, "latest"]),
        )
    };

    // Origins: entries ORed, wildcard subdomains, no Origin refused.
    assert_eq!(
        balance(&origin_key, &[("Origin", "https://a.b.app.example")], C).status,
        200
    );
    assert_eq!(
        balance(&origin_key, &[("Origin", "http://localhost:3000")], C).status,
        200
    );
    assert_refused(
        &balance(&origin_key, &[("Origin", "https://evil.example")], C),
        "origin",
        "origin https://evil.example is not allowed for this key",
    );
    assert_eq!(
        balance(&origin_key, &[("Origin", "https://app.example")], C).status,
        403
    );
    assert_eq!(balance(&origin_key, &[], C).status, 403);

    // User agents: the entry anywhere in the header.
    let firefox = ("User-Agent", "Mozilla/5.0 (X11) Gecko Firefox/128.0");
    assert_eq!(balance(&agent_key, &[firefox], C).status, 200);
    assert_refused(
        &balance(&agent_key, &[("User-Agent", "curl/8.5")], C),
        "user_agent",
        "user agent \"curl/8.5\" is not allowed for this key",
    );

    // Methods.
    assert_eq!(
        call(&server, &method_key, &[], "eth_chainId", json!([])).status,
        200
    );
    assert_refused(
        &call(&server, &method_key, &[], "eth_blockNumber", json!([])),
        "method",
        "method eth_blockNumber is not allowed for this key",
    );

    contracts_on_every_method(&server, &contract_key);

    // Types ANDed: each must pass.
    assert_eq!(balance(&both_key, &[], A).status, 200);
    assert_eq!(
        balance(&both_key, &[], B).json()["error"]["data"]["rule"],
        "contract"
    );
    let code = call(&server, &both_key, &[], "eth_getCode", json!([A, "latest"]));
    assert_eq!(code.json()["error"]["data"]["rule"], "method");

    mixed_batch_and_metrics(&server, &contract_key);
}

/// The contract allowlist on every method that names an address.
fn contracts_on_every_method(server: &Server, contract_key: &str) {
    let balance = |address: &str| {
        call(
            server,
            contract_key,
            &[],
            "eth_getBalance",
            json!([address, "latest"]),
        )
    };
    // Contracts, on every kind of method that names one.
    assert_eq!(balance(A).status, 200);
    assert_eq!(balance(B).status, 200);
    assert_refused(
        &balance(C),
        "contract",
        "contract address 0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC is not allowed for this key (eth_getBalance)",
    );
    let refused = |method: &str, params: Value| {
        let answer = call(server, contract_key, &[], method, params);
        assert_eq!(answer.status, 403, "{method}: {}", answer.body);
        assert_eq!(answer.json()["error"]["data"]["rule"], "contract");
    };
    let allowed = |method: &str, params: Value| {
        let answer = call(server, contract_key, &[], method, params);
        assert_ne!(answer.status, 403, "{method}: {}", answer.body);
    };
    for (method, params) in [
        ("eth_getCode", json!([C, "latest"])),
        ("eth_getTransactionCount", json!([C, "latest"])),
        ("eth_getStorageAt", json!([C, "0x0", "latest"])),
        ("eth_getProof", json!([C, [], "latest"])),
        ("eth_call", json!([{"to": C}, "latest"])),
        ("eth_call", json!([{"data": "0x00"}, "latest"])),
        ("eth_estimateGas", json!([{"to": C}])),
        ("eth_createAccessList", json!([{"to": C}])),
        ("debug_traceCall", json!([{"to": C}, "latest"])),
        ("eth_getLogs", json!([{"fromBlock": "0x0"}])),
        ("eth_getLogs", json!([{"address": [A, C]}])),
        ("eth_newFilter", json!([{}])),
        (
            "eth_simulateV1",
            json!([{"blockStateCalls": [{"calls": [{"to": A}, {"to": C}]}]}]),
        ),
    ] {
        refused(method, params);
    }
    for (method, params) in [
        ("eth_getStorageAt", json!([A, "0x0", "latest"])),
        ("eth_call", json!([{"to": A}, "latest"])),
        (
            "eth_getLogs",
            json!([{"address": [A, B], "fromBlock": "0x0"}]),
        ),
        ("eth_newFilter", json!([{"address": B}])),
        ("eth_blockNumber", json!([])),
    ] {
        allowed(method, params);
    }
}

/// A batch mixing allowed and refused calls, and the refusals counted by rule.
fn mixed_batch_and_metrics(server: &Server, contract_key: &str) {
    // A batch answers each call: allowed ones with results, refused ones with the rule.
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "eth_getBalance", "params": [A, "latest"]},
        {"jsonrpc": "2.0", "id": 2, "method": "eth_getBalance", "params": [C, "latest"]},
        {"jsonrpc": "2.0", "id": 3, "method": "eth_chainId", "params": []},
    ]);
    let answer = exchange(
        &server.addr,
        "POST",
        &format!("/v3/{contract_key}"),
        &[],
        &batch.to_string(),
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    let answers = answer.json();
    let by_id = |id: u64| {
        answers
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == id)
            .unwrap()
            .clone()
    };
    assert!(by_id(1)["result"].is_string(), "{answers}");
    assert_eq!(by_id(2)["error"]["data"]["rule"], "contract", "{answers}");
    assert_eq!(by_id(3)["result"], "0x539", "{answers}");

    // Refusals are counted by rule.
    for rule in ["origin", "user_agent", "method", "contract"] {
        let count = metric(
            server,
            &format!("quarry_key_refusals_total{{network=\"default\",rule=\"{rule}\"}}"),
        );
        assert!(count >= 1.0, "{rule}: {count}");
    }
    assert!(
        metric(
            server,
            "quarry_requests_total{network=\"default\",method=\"eth_getBalance\",outcome=\"not_allowed\"}"
        ) >= 1.0
    );
}

#[test]
fn a_key_change_reaches_an_open_websocket() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("keys.json");
    let (key, id) = add_key(&store, &[]);
    let server = Server::start(
        &devnet(),
        &format!("keys_file = {}", Value::from(store.display().to_string())),
    );
    let origin = ("Origin", "https://shop.app.example");
    let mut socket = WsClient::connect_with(&server.ws_url(&key), &[origin]).unwrap();
    let balance = |socket: &mut WsClient, address: &str| {
        socket.exchange(&call_body("eth_getBalance", json!([address, "latest"])))
    };
    assert!(balance(&mut socket, C)["result"].is_string());

    keys_cli(&store, &["update", &id, "--allow-contract", A]);
    let took = within(Duration::from_secs(3), || {
        balance(&mut socket, C)["error"]["data"]["rule"] == "contract"
    });
    eprintln!("the allowlist reached the open WebSocket after {took:?}");
    assert!(balance(&mut socket, A)["result"].is_string());
    let logs = socket.exchange(&call_body("eth_subscribe", json!(["logs", {}])));
    assert_eq!(logs["error"]["data"]["rule"], "contract", "{logs}");
    let logs = socket.exchange(&call_body("eth_subscribe", json!(["logs", {"address": A}])));
    assert!(logs["result"].is_string(), "{logs}");

    // The origin the upgrade came with counts for every later call.
    keys_cli(
        &store,
        &["update", &id, "--allow-origin", "https://other.example"],
    );
    within(Duration::from_secs(3), || {
        balance(&mut socket, A)["error"]["data"]["rule"] == "origin"
    });
    // And a new upgrade from that origin is refused before it happens.
    assert_eq!(
        WsClient::connect_with(&server.ws_url(&key), &[origin]).err(),
        Some(403)
    );
    keys_cli(&store, &["update", &id, "--clear-allowlists"]);
    within(Duration::from_secs(3), || {
        balance(&mut socket, C)["result"].is_string()
    });
}

/// `Authorization: Basic base64(":" secret)`, as `curl --user :SECRET` sends it.
fn basic(secret: &str) -> String {
    const TABLE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = format!(":{secret}").into_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(TABLE[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    format!("Basic {out}")
}

#[test]
fn a_key_secret_bypasses_the_allowlists_and_can_be_required() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("keys.json");
    let (printed, said) = keys_cli(
        &store,
        &["add", "--plan", "custom", "--secret", "--allow-contract", A],
    );
    let id = said.split_whitespace().nth(1).unwrap().to_string();
    let (key, secret) = printed.trim().split_once('\n').unwrap();
    let (key, secret) = (key.to_string(), secret.trim().to_string());
    assert_eq!(secret.len(), 64);
    let (required_printed, _) = keys_cli(
        &store,
        &["add", "--plan", "custom", "--secret", "--require-secret"],
    );
    let (required, required_secret) = required_printed.trim().split_once('\n').unwrap();
    let (required, required_secret) = (required.to_string(), required_secret.trim().to_string());
    let stored = std::fs::read_to_string(&store).unwrap();
    assert!(
        !stored.contains(&secret) && !stored.contains(&required_secret),
        "only hashes are stored"
    );
    let (list, _) = keys_cli(&store, &["list"]);
    assert!(
        list.contains("\tyes\t") && list.contains("\trequired\t"),
        "{list}"
    );

    let server = Server::start_logged(
        &devnet(),
        &format!("keys_file = {}", Value::from(store.display().to_string())),
    );
    let balance = |key: &str, headers: &[(&str, &str)]| {
        call(
            &server,
            key,
            headers,
            "eth_getBalance",
            json!([C, "latest"]),
        )
    };
    let right = basic(&secret);
    let wrong = basic("0123456789abcdef");
    // Without the secret the allowlist holds; with it, it does not apply.
    assert_eq!(balance(&key, &[]).status, 403);
    assert_eq!(balance(&key, &[("Authorization", &right)]).status, 200);
    let refused = balance(&key, &[("Authorization", &wrong)]);
    assert_eq!(refused.status, 401);
    assert_eq!(refused.json()["error"]["message"], "invalid API key secret");
    // A key that requires its secret.
    let missing = balance(&required, &[]);
    assert_eq!(missing.status, 401);
    assert!(
        missing.json()["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("this API key requires its secret"),
        "{}",
        missing.body
    );
    assert_eq!(
        balance(&required, &[("Authorization", &basic(&required_secret))]).status,
        200
    );
    assert_eq!(balance(&required, &[("Authorization", &right)]).status, 401);
    // WebSocket upgrades alike.
    let url = server.ws_url(&required);
    assert_eq!(WsClient::connect_with(&url, &[]).err(), Some(401));
    let auth = basic(&required_secret);
    let mut socket = WsClient::connect_with(&url, &[("Authorization", &auth)]).unwrap();
    assert_eq!(
        socket.exchange(&call_body("eth_chainId", json!([])))["result"],
        "0x539"
    );
    let mut bypassing =
        WsClient::connect_with(&server.ws_url(&key), &[("Authorization", &right)]).unwrap();
    assert!(
        bypassing.exchange(&call_body("eth_getBalance", json!([C, "latest"])))["result"]
            .is_string()
    );

    // A new secret replaces the old one.
    let (renewed, _) = keys_cli(&store, &["update", &id, "--new-secret"]);
    let renewed = renewed.trim().to_string();
    within(Duration::from_secs(3), || {
        balance(&key, &[("Authorization", &right)]).status == 401
    });
    assert_eq!(
        balance(&key, &[("Authorization", &basic(&renewed))]).status,
        200
    );

    // Secrets appear in no answer, no metric and no log line.
    let metrics = exchange(&server.addr, "GET", "/metrics", &[], "").body;
    let log = server.log();
    assert!(
        log.contains("refused a request with a wrong key secret"),
        "{log}"
    );
    assert!(
        metric(
            &server,
            "quarry_key_refusals_total{network=\"default\",rule=\"secret\"}"
        ) >= 3.0
    );
    for text in [metrics, log, refused.body, missing.body] {
        for secret in [&secret, &required_secret, &renewed] {
            let encoded = basic(secret);
            let encoded = encoded.trim_start_matches("Basic ").trim_end_matches('=');
            assert!(!text.contains(secret.as_str()), "a secret leaked: {text}");
            assert!(!text.contains(encoded), "a secret leaked, encoded: {text}");
        }
    }
}

#[test]
fn allowlists_in_a_redis_key_store_reach_the_server() {
    let Some(redis) = redis_server() else {
        eprintln!("SKIPPED: redis-server is not installed (apt-get install redis-server)");
        return;
    };
    let url = redis.url();
    let store = Path::new(&url);
    let (key, id) = add_key(store, &["--allow-contract", A]);
    let server = Server::start(&devnet(), &format!("keys_store = \"{url}\""));
    let balance = |address: &str| {
        call(
            &server,
            &key,
            &[],
            "eth_getBalance",
            json!([address, "latest"]),
        )
    };
    assert_eq!(balance(A).status, 200);
    assert_eq!(balance(C).json()["error"]["data"]["rule"], "contract");
    keys_cli(store, &["update", &id, "--allow-contract", C]);
    within(Duration::from_secs(3), || balance(C).status == 200);
    assert_eq!(balance(A).status, 403);
}
