//! API keys' JWTs end to end against a real `quarry serve`: public keys uploaded with `quarry
//! keys update --jwt-key` (RSA and EC P-256 pairs made by the `openssl` command), valid tokens
//! of both algorithms, each refusal (expired, not yet valid, another audience, another signer,
//! an unknown kid, `alg: none`, HS256 keyed with the public key's PEM), a token's allowlists
//! narrowing the key's over HTTP and on a WebSocket, `--require-jwt`, a public key's removal
//! reaching the server and an open WebSocket, public keys in a Redis key store, refusals counted by rule, and tokens absent from the log and the metrics.

#![allow(clippy::unwrap_used)]

mod support;

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};
use support::{
    Server, WsClient, add_custom_key, ingested, keys_args, keys_cli, metric, quarry_fails,
    redis_server, within,
};

fn devnet() -> PathBuf {
    ingested(&Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet"))
}

/// Runs `openssl` with `args` in `dir`; the tests need it to make key pairs.
fn openssl(dir: &Path, args: &[&str]) {
    let status = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("these tests make key pairs with openssl: {e}"));
    assert!(status.success(), "openssl {args:?} failed");
}

/// A key pair written to `dir`: (private key PEM, path of the public key PEM).
fn key_pair(dir: &Path, name: &str, rsa: bool) -> (String, PathBuf) {
    let private = format!("{name}.pem");
    let public = format!("{name}.pub.pem");
    if rsa {
        // PKCS#1, as jsonwebtoken's RSA signing key reads it.
        openssl(dir, &["genrsa", "-traditional", "-out", &private, "2048"]);
    } else {
        openssl(
            dir,
            &[
                "genpkey",
                "-algorithm",
                "EC",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-out",
                &private,
            ],
        );
    }
    openssl(dir, &["pkey", "-in", &private, "-pubout", "-out", &public]);
    (
        std::fs::read_to_string(dir.join(private)).unwrap(),
        dir.join(public),
    )
}

fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

fn sign(alg: Algorithm, private_pem: &str, kid: &str, claims: Value) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.to_string());
    let key = match alg {
        Algorithm::RS256 => EncodingKey::from_rsa_pem(private_pem.as_bytes()).unwrap(),
        Algorithm::ES256 => EncodingKey::from_ec_pem(private_pem.as_bytes()).unwrap(),
        _ => EncodingKey::from_secret(private_pem.as_bytes()),
    };
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

fn b64(value: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
}

use support::{HttpAnswer as Answer, http_exchange as exchange};

fn call_body(method: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": []}).to_string()
}

/// `method` with `key` and, when given, a Bearer token.
fn call(server: &Server, key: &str, token: Option<&str>, method: &str) -> Answer {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = bearer
        .as_deref()
        .map(|b| ("Authorization", b))
        .into_iter()
        .collect();
    exchange(
        &server.addr,
        "POST",
        &format!("/v3/{key}"),
        &headers,
        &call_body(method),
    )
}

/// Adds a key allowing `methods`: (key, id).
fn add_key(store: &Path, methods: &[&str]) -> (String, String) {
    let args: Vec<&str> = methods
        .iter()
        .flat_map(|method| ["--allow-method", method])
        .collect();
    add_custom_key(store, &args)
}

/// Asserts a 401 whose message is `invalid JWT: <reason>`.
fn assert_invalid(answer: &Answer, reason: &str) {
    assert_eq!(answer.status, 401, "{}", answer.body);
    assert_eq!(answer.message(), format!("invalid JWT: {reason}"));
}

/// The key pairs and the store of the tests: a key allowing three methods with an RSA and an
/// EC public key, and a key requiring a JWT.
struct Setup {
    dir: tempfile::TempDir,
    store: PathBuf,
    rsa: String,
    ec: String,
    other_ec: String,
    ec_public: String,
    key: String,
    id: String,
    required: String,
}

impl Setup {
    /// A valid RS256 token for the key, expiring at `exp`, with the key's id as its audience.
    fn rs256(&self, exp: u64) -> String {
        sign(
            Algorithm::RS256,
            &self.rsa,
            "rsa",
            json!({"exp": exp, "aud": self.id}),
        )
    }
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let (rsa, rsa_public) = key_pair(dir.path(), "rsa", true);
    let (ec, ec_public) = key_pair(dir.path(), "ec", false);
    let (other_ec, _) = key_pair(dir.path(), "other", false);
    let store = dir.path().join("keys.json");
    let (key, id) = add_key(&store, &["eth_blockNumber", "eth_chainId", "net_version"]);
    let rsa_arg = format!("rsa={}", rsa_public.display());
    let ec_arg = format!("ec={}", ec_public.display());
    keys_cli(
        &store,
        &["update", &id, "--jwt-key", &rsa_arg, "--jwt-key", &ec_arg],
    );
    let (_, other_id) = add_key(&store, &[]);
    // A key cannot require a JWT before it has a public key, nor take a private key; a new
    // key refused for either is not added.
    let refused = quarry_fails(keys_args(&store, &["update", &other_id, "--require-jwt"]));
    assert!(refused.contains("needs a public key"), "{refused}");
    let private_arg = format!("app={}", dir.path().join("ec.pem").display());
    let refused = quarry_fails(keys_args(
        &store,
        &["update", &other_id, "--jwt-key", &private_arg],
    ));
    assert!(refused.contains("this is a private key"), "{refused}");
    for args in [
        &["add", "--plan", "custom", "--require-jwt"][..],
        &["add", "--plan", "custom", "--jwt-key", &private_arg],
    ] {
        let refused = quarry_fails(keys_args(&store, args));
        assert!(
            refused.contains("needs a public key") || refused.contains("this is a private key"),
            "{refused}"
        );
    }
    // A key made with its public key and the requirement at once.
    let (required, said) = keys_cli(
        &store,
        &[
            "add",
            "--plan",
            "custom",
            "--jwt-key",
            &ec_arg,
            "--require-jwt",
        ],
    );
    let required = required.trim().to_string();
    let (list, _) = keys_cli(&store, &["list"]);
    assert_eq!(
        list.lines().count(),
        4,
        "a header and three keys:\n{list}\n{said}"
    );
    assert!(
        list.contains("\tec:ES256,rsa:RS256\t") && list.contains("\trequired,ec:ES256\t"),
        "{list}"
    );
    let ec_public = std::fs::read_to_string(&ec_public).unwrap();
    Setup {
        dir,
        store,
        rsa,
        ec,
        other_ec,
        ec_public,
        key,
        id,
        required,
    }
}

/// Asserts that no token, nor its signature, is in the server's log or metrics.
fn assert_never_shown(server: &Server, tokens: &[&String]) {
    let log = server.log();
    let metrics = exchange(&server.addr, "GET", "/metrics", &[], "").body;
    for token in tokens {
        let signature = token.rsplit('.').next().unwrap();
        for text in [&log, &metrics] {
            assert!(!text.contains(token.as_str()), "a token leaked");
            assert!(
                signature.is_empty() || !text.contains(signature),
                "a token's signature leaked"
            );
        }
    }
}

fn serve(s: &Setup) -> Server {
    Server::start_logged(
        &devnet(),
        &format!("keys_file = {}", Value::from(s.store.display().to_string())),
    )
}

#[test]
fn tokens_are_verified_and_refusals_say_why_but_never_show_them() {
    let s = setup();
    let server = serve(&s);
    let exp = now() + 600;
    let rs256 = s.rs256(exp);
    let es256 = sign(Algorithm::ES256, &s.ec, "ec", json!({"exp": exp}));
    for valid in [&rs256, &es256] {
        let answer = call(&server, &s.key, Some(valid), "eth_chainId");
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(answer.json()["result"], "0x539");
    }
    // The key without a token is as before.
    assert_eq!(call(&server, &s.key, None, "eth_chainId").status, 200);

    let expired = sign(Algorithm::ES256, &s.ec, "ec", json!({"exp": now() - 600}));
    assert_invalid(
        &call(&server, &s.key, Some(&expired), "eth_chainId"),
        "it has expired (exp)",
    );
    let early = sign(
        Algorithm::ES256,
        &s.ec,
        "ec",
        json!({"exp": exp, "nbf": now() + 600}),
    );
    assert_invalid(
        &call(&server, &s.key, Some(&early), "eth_chainId"),
        "it is not valid yet (nbf)",
    );
    let elsewhere = sign(
        Algorithm::RS256,
        &s.rsa,
        "rsa",
        json!({"exp": exp, "aud": "key-0000000000"}),
    );
    assert_invalid(
        &call(&server, &s.key, Some(&elsewhere), "eth_chainId"),
        "its audience (aud) is not this key's id",
    );
    let forged = sign(Algorithm::ES256, &s.other_ec, "ec", json!({"exp": exp}));
    assert_invalid(
        &call(&server, &s.key, Some(&forged), "eth_chainId"),
        "its signature does not verify with public key \"ec\"",
    );
    let unknown = sign(Algorithm::ES256, &s.ec, "mobile", json!({"exp": exp}));
    assert_invalid(
        &call(&server, &s.key, Some(&unknown), "eth_chainId"),
        "unknown kid \"mobile\": this key's public keys are ec, rsa",
    );
    let unsigned = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT", "kid": "ec"})),
        b64(&json!({"exp": exp}))
    );
    assert_invalid(
        &call(&server, &s.key, Some(&unsigned), "eth_chainId"),
        "alg none is refused: a token must be signed (RS256 or ES256)",
    );
    // HMAC keyed with the public key's PEM, which anyone may have.
    let confused = sign(Algorithm::HS256, &s.ec_public, "ec", json!({"exp": exp}));
    assert_invalid(
        &call(&server, &s.key, Some(&confused), "eth_chainId"),
        "alg \"HS256\" is refused: public key \"ec\" takes ES256 tokens only",
    );

    // A key that requires a JWT.
    let missing = call(&server, &s.required, None, "eth_chainId");
    assert_eq!(missing.status, 401);
    assert!(
        missing.message().starts_with("this API key requires a JWT"),
        "{}",
        missing.body
    );
    assert_eq!(
        call(&server, &s.required, Some(&es256), "eth_chainId").status,
        200
    );

    // Refusals are counted by rule; no token reaches the log or the metrics.
    assert!(
        metric(
            &server,
            "quarry_key_refusals_total{network=\"default\",rule=\"jwt\"}"
        ) >= 8.0
    );
    let log = server.log();
    assert!(
        log.contains("refused a request with an invalid JWT"),
        "{log}"
    );
    assert_never_shown(
        &server,
        &[
            &rs256, &es256, &expired, &early, &elsewhere, &forged, &unknown, &unsigned, &confused,
        ],
    );
    drop(s.dir);
}

#[test]
fn a_token_narrows_the_key_and_its_public_key_removed_cuts_it_off() {
    let s = setup();
    let server = serve(&s);
    let exp = now() + 600;
    let rs256 = s.rs256(exp);
    let forged = sign(Algorithm::ES256, &s.other_ec, "ec", json!({"exp": exp}));
    // A token's allowlists narrow the key's: a method the key allows, the token does not.
    let narrow = sign(
        Algorithm::RS256,
        &s.rsa,
        "rsa",
        json!({"exp": exp, "allow": {"methods": ["eth_chainId", "eth_getBalance"]}}),
    );
    assert_eq!(
        call(&server, &s.key, Some(&narrow), "eth_chainId").status,
        200
    );
    let refused = call(&server, &s.key, Some(&narrow), "eth_blockNumber");
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(refused.json()["error"]["data"]["rule"], "method");
    assert_eq!(
        refused.message(),
        "method eth_blockNumber is not allowed for this token"
    );
    // ... and the key's hold: the token cannot widen them.
    let wider = call(&server, &s.key, Some(&narrow), "eth_getBalance");
    assert_eq!(wider.status, 403);
    assert_eq!(
        wider.message(),
        "method eth_getBalance is not allowed for this key"
    );
    // The same on a WebSocket opened with the token.
    let bearer = format!("Bearer {narrow}");
    let mut socket =
        WsClient::connect_with(&server.ws_url(&s.key), &[("Authorization", &bearer)]).unwrap();
    assert_eq!(
        socket.exchange(&call_body("eth_chainId"))["result"],
        "0x539"
    );
    let on_socket = socket.exchange(&call_body("eth_blockNumber"));
    assert_eq!(on_socket["error"]["data"]["rule"], "method", "{on_socket}");
    let bad_bearer = format!("Bearer {forged}");
    assert_eq!(
        WsClient::connect_with(&server.ws_url(&s.key), &[("Authorization", &bad_bearer)]).err(),
        Some(401)
    );

    // Removing a public key reaches the server within a second or two.
    keys_cli(&s.store, &["update", &s.id, "--remove-jwt-key", "rsa"]);
    within(Duration::from_secs(3), || {
        call(&server, &s.key, Some(&rs256), "eth_chainId").status != 200
    });
    assert_invalid(
        &call(&server, &s.key, Some(&rs256), "eth_chainId"),
        "unknown kid \"rsa\": this key's public keys are ec",
    );
    // The WebSocket opened with a token it verified is cut off too.
    let cut = socket.exchange(&call_body("eth_chainId"));
    assert_eq!(cut["error"]["data"]["rule"], "jwt", "{cut}");
    assert_eq!(
        cut["error"]["message"],
        "the public key that verified this connection's JWT was removed or replaced"
    );

    assert!(
        metric(
            &server,
            "quarry_key_refusals_total{network=\"default\",rule=\"method\"}"
        ) >= 3.0
    );
    assert!(
        metric(
            &server,
            "quarry_key_refusals_total{network=\"default\",rule=\"jwt\"}"
        ) >= 3.0
    );
    assert_never_shown(&server, &[&rs256, &forged, &narrow]);
    drop(s.dir);
}

#[test]
fn public_keys_in_a_redis_key_store_reach_the_server() {
    let Some(redis) = redis_server() else {
        eprintln!("SKIPPED: redis-server is not installed (apt-get install redis-server)");
        return;
    };
    let url = redis.url();
    let store = Path::new(&url);
    let dir = tempfile::tempdir().unwrap();
    let (ec, ec_public) = key_pair(dir.path(), "ec", false);
    let (key, id) = add_key(store, &[]);
    let ec_arg = format!("ec={}", ec_public.display());
    keys_cli(store, &["update", &id, "--jwt-key", &ec_arg]);
    let server = Server::start(&devnet(), &format!("keys_store = \"{url}\""));
    let token = sign(Algorithm::ES256, &ec, "ec", json!({"exp": now() + 600}));
    assert_eq!(call(&server, &key, Some(&token), "eth_chainId").status, 200);
    assert_eq!(call(&server, &key, None, "eth_chainId").status, 200);
    keys_cli(store, &["update", &id, "--require-jwt"]);
    within(Duration::from_secs(3), || {
        call(&server, &key, None, "eth_chainId").status != 200
    });
    assert_eq!(call(&server, &key, None, "eth_chainId").status, 401);
    assert_eq!(call(&server, &key, Some(&token), "eth_chainId").status, 200);
}
