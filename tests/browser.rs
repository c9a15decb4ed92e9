//! A real browser against a real `quarry serve`: headless Chromium loads a page that this test
//! serves from another origin, and the page calls quarry with `fetch` (a JSON body, so the
//! browser sends a preflight first) and over a WebSocket. With the default CORS origins both
//! work; with a key that allows only another origin both are refused, the `fetch` readably with
//! the rule named, the WebSocket before its upgrade (counted by rule in `/metrics`, since a
//! browser shows a page nothing of a refused upgrade). The page writes what it saw into its
//! DOM, which Chromium dumps. Skipped, saying so, only where no Chromium can run.

#![allow(clippy::unwrap_used)]

mod support;

use serde_json::{Value, json};
use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{TcpListener, TcpStream},
    path::Path,
    process::{Command, Stdio},
    sync::{Arc, Condvar, Mutex},
    time::{Duration, Instant},
};
use support::{KEY, Server, add_custom_key, ingested};

/// The browser: Debian's package installs it as `chromium`.
const CHROMIUM: &str = "chromium";

/// Whether Chromium can run here at all.
fn chromium_runs() -> bool {
    Command::new(CHROMIUM)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The page: calls quarry at `http` and `ws` for each key, then writes the results as JSON
/// into `#out`.
fn page(quarry: &str, keys: &[(&str, &str)]) -> String {
    let keys = serde_json::to_string(
        &keys
            .iter()
            .map(|(label, key)| json!({"label": label, "key": key}))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    format!(
        r#"<!doctype html><html><body><pre id="out">pending</pre><img src="/hold"><script>
const quarry = "{quarry}";
const keys = {keys};
const body = JSON.stringify({{jsonrpc: "2.0", id: 1, method: "eth_chainId", params: []}});
async function viaFetch(key) {{
  try {{
    const r = await fetch("http://" + quarry + "/v3/" + key, {{
      method: "POST", headers: {{"content-type": "application/json"}}, body }});
    return {{status: r.status, body: await r.json()}};
  }} catch (e) {{ return {{error: String(e)}}; }}
}}
function viaWebSocket(key) {{
  return new Promise((resolve) => {{
    const ws = new WebSocket("ws://" + quarry + "/ws/v3/" + key);
    ws.onopen = () => ws.send(body);
    ws.onmessage = (m) => {{ resolve({{message: JSON.parse(m.data)}}); ws.close(); }};
    ws.onerror = () => resolve({{error: "websocket refused"}});
    setTimeout(() => resolve({{error: "timeout"}}), 4000);
  }});
}}
(async () => {{
  const results = {{}};
  for (const {{label, key}} of keys) {{
    results[label] = {{fetch: await viaFetch(key), ws: await viaWebSocket(key)}};
  }}
  document.getElementById("out").textContent = JSON.stringify(results);
  // Lets the page server answer /hold: the load event, and so the DOM dump, waits for it.
  await fetch("/done", {{method: "POST", body: "done"}});
}})();
</script></body></html>"#
    )
}

/// Serves the page on a free port of 127.0.0.1 (another origin than quarry's), one thread
/// per connection: `/hold` (an image of the page) is answered only once the page has posted
/// `/done`, so the page's load event, after which Chromium dumps the DOM, waits for its calls.
fn serve_page(html: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let done = Arc::new((Mutex::new(false), Condvar::new()));
    let html = Arc::new(html);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (html, done) = (html.clone(), done.clone());
            std::thread::spawn(move || answer_page(stream, &html, &done));
        }
    });
    format!("http://{addr}/page.html")
}

fn answer_page(mut stream: TcpStream, html: &str, done: &(Mutex<bool>, Condvar)) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    let _ = reader.read_line(&mut request_line);
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        line.clear();
    }
    let path = request_line.split(' ').nth(1).unwrap_or("");
    let body = match path {
        "/page.html" => html,
        "/done" => {
            *done.0.lock().unwrap() = true;
            done.1.notify_all();
            ""
        }
        "/hold" => {
            let guard = done.0.lock().unwrap();
            let _ = done
                .1
                .wait_timeout_while(guard, Duration::from_secs(60), |done| !*done)
                .unwrap();
            ""
        }
        _ => "",
    };
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// Loads `url` in headless Chromium and returns the JSON the page wrote.
fn load(url: &str) -> Value {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--dump-dom", url])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut dom = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut dom)
        .unwrap();
    let out = dom
        .split("<pre id=\"out\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| panic!("no #out in the page chromium dumped: {dom}"));
    let out = out.replace("&quot;", "\"").replace("&amp;", "&");
    serde_json::from_str(&out).unwrap_or_else(|_| panic!("the page did not finish: {out}"))
}

fn origin_refusals(server: &Server) -> f64 {
    support::metric(
        server,
        "quarry_key_refusals_total{network=\"default\",rule=\"origin\"}",
    )
}

#[test]
fn a_page_on_another_origin_calls_quarry_from_a_real_browser() {
    if !chromium_runs() {
        eprintln!(
            "SKIPPED: `{CHROMIUM} --version` does not run here; install Debian's chromium package"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("keys.json");
    let (locked, _) = add_custom_key(&store, &["--allow-origin", "https://other.example"]);
    let devnet = ingested(&Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/devnet"));
    let server = Server::start(
        &devnet,
        &format!("keys_file = {}", Value::from(store.display().to_string())),
    );
    let url = serve_page(page(
        &server.addr,
        &[("open", KEY), ("locked", locked.trim())],
    ));
    let page_origin = url.trim_end_matches("/page.html").to_string();
    let refusals_before = origin_refusals(&server);

    let seen = load(&url);

    // Default CORS: the preflight is answered, then the fetch and the WebSocket both work.
    let open = &seen["open"];
    assert_eq!(open["fetch"]["status"], 200, "{seen}");
    assert_eq!(open["fetch"]["body"]["result"], "0x539", "{seen}");
    assert_eq!(open["ws"]["message"]["result"], "0x539", "{seen}");
    // The locked key: the page reads the 403 and the rule that refused it.
    let locked = &seen["locked"];
    assert_eq!(locked["fetch"]["status"], 403, "{seen}");
    assert_eq!(
        locked["fetch"]["body"]["error"]["message"],
        format!("origin {page_origin} is not allowed for this key"),
        "{seen}"
    );
    assert_eq!(locked["fetch"]["body"]["error"]["data"]["rule"], "origin");
    // Its WebSocket is refused before the upgrade, by the same rule.
    assert_eq!(locked["ws"]["error"], "websocket refused", "{seen}");
    assert_eq!(origin_refusals(&server) - refusals_before, 2.0);
}
