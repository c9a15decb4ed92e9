//! quarry's HTTP/1.1 transport on the wire: keep-alive and pipelining, HTTP/1.0, chunked bodies,
//! `100 Continue`, the limits and malformed requests, the connection limit, HEAD, and a
//! WebSocket upgrade whose first frame comes in the same packet as the upgrade request.

#![allow(clippy::unwrap_used)]

mod support;

use serde_json::{Value, json};
use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    time::Duration,
};
use support::{KEY, Server, fixtures, ingested};

/// One HTTP response read off the wire.
#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }
}

struct Conn {
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(server: &Server) -> Self {
        let stream = TcpStream::connect(&server.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        Self {
            reader: BufReader::new(stream),
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.reader.get_mut().write_all(bytes).unwrap();
    }

    /// Reads one response; `head_only` for an answer to HEAD (no body follows).
    fn read_response(&mut self, head_only: bool) -> Response {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let status = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {line:?}"));
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').unwrap();
            headers.push((name.to_string(), value.trim().to_string()));
        }
        let mut response = Response {
            status,
            headers,
            body: Vec::new(),
        };
        if !head_only && status != 100 {
            let length: usize = response.header("content-length").unwrap().parse().unwrap();
            response.body = vec![0; length];
            self.reader.read_exact(&mut response.body).unwrap();
        }
        response
    }

    /// Whether the server closed the connection (end of stream, nothing more to read).
    fn closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(self.reader.read(&mut byte), Ok(0) | Err(_))
    }
}

fn post(path: &str, body: &str, extra_headers: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n{extra_headers}\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn call(id: u64, method: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": []}).to_string()
}

fn server() -> Server {
    Server::start(&ingested(&fixtures()), "max_request_bytes = 2048")
}

#[test]
fn kept_alive_connections_answer_pipelined_requests_in_order() {
    let server = server();
    let path = format!("/v3/{KEY}");
    let mut conn = Conn::open(&server);
    // Two requests in one write, then a third after both answers.
    let mut both = post(&path, &call(1, "eth_chainId"), "");
    both.extend(post(&path, &call(2, "eth_blockNumber"), ""));
    conn.send(&both);
    let first = conn.read_response(false);
    let second = conn.read_response(false);
    assert_eq!((first.status, second.status), (200, 200));
    assert_eq!(first.json()["id"], 1);
    assert_eq!(second.json()["id"], 2);
    assert_eq!(second.json()["result"], "0x36");
    assert!(first.header("connection").is_none());
    assert!(first.header("date").is_some());
    conn.send(&post(&path, &call(3, "web3_clientVersion"), ""));
    assert_eq!(conn.read_response(false).json()["id"], 3);

    // `Connection: close` closes after the answer.
    conn.send(&post(
        &path,
        &call(4, "eth_chainId"),
        "Connection: close\r\n",
    ));
    let last = conn.read_response(false);
    assert_eq!(last.json()["id"], 4);
    assert_eq!(last.header("connection"), Some("close"));
    assert!(conn.closed());

    // HTTP/1.0 closes unless asked to keep the connection.
    let body = call(5, "eth_chainId");
    let http10 = |extra: &str| {
        format!(
            "POST {path} HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             {extra}\r\n{body}",
            body.len()
        )
    };
    let mut conn = Conn::open(&server);
    conn.send(http10("").as_bytes());
    let answer = conn.read_response(false);
    assert_eq!(answer.json()["id"], 5);
    assert_eq!(answer.header("connection"), Some("close"));
    assert!(conn.closed());
    let mut conn = Conn::open(&server);
    conn.send(http10("Connection: keep-alive\r\n").as_bytes());
    assert_eq!(
        conn.read_response(false).header("connection"),
        Some("keep-alive")
    );
    conn.send(http10("Connection: keep-alive\r\n").as_bytes());
    assert_eq!(conn.read_response(false).json()["id"], 5);
}

#[test]
fn chunked_bodies_and_100_continue() {
    let server = server();
    let path = format!("/v3/{KEY}");
    let body = call(7, "eth_chainId");
    let (a, b) = body.split_at(10);
    let mut conn = Conn::open(&server);
    conn.send(
        format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Transfer-Encoding: chunked\r\n\r\n{:x};ext=1\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\
             Trailer-Field: x\r\n\r\n",
            a.len(),
            b.len()
        )
        .as_bytes(),
    );
    let answer = conn.read_response(false);
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json()["id"], 7);
    assert_eq!(
        answer.json()["result"],
        server.result("eth_chainId", json!([]))
    );

    // The client waits for 100 Continue before it sends the body.
    let request = post(&path, &body, "Expect: 100-continue\r\n");
    let head_end = request.len() - body.len();
    conn.send(&request[..head_end]);
    assert_eq!(conn.read_response(false).status, 100);
    conn.send(&request[head_end..]);
    assert_eq!(conn.read_response(false).json()["id"], 7);

    // Framed both ways, the body is read as chunked, and the connection closes after it.
    let mut conn = Conn::open(&server);
    conn.send(
        format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    let answer = conn.read_response(false);
    assert_eq!(answer.json()["id"], 7);
    assert_eq!(answer.header("connection"), Some("close"));
    assert!(conn.closed());

    // A body over max_request_bytes is refused before it is sent.
    let big = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: 4096\r\nExpect: 100-continue\r\n\r\n"
    );
    let mut conn = Conn::open(&server);
    conn.send(big.as_bytes());
    let refused = conn.read_response(false);
    assert_eq!(refused.status, 413);
    assert_eq!(
        refused.json()["error"]["code"],
        -32007,
        "{:?}",
        refused.json()
    );
    assert!(conn.closed());

    // So is a chunked body that grows past it.
    let chunk = "x".repeat(1500);
    let mut conn = Conn::open(&server);
    conn.send(
        format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Transfer-Encoding: chunked\r\n\r\n5dc\r\n{chunk}\r\n5dc\r\n{chunk}\r\n0\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(conn.read_response(false).status, 413);
}

#[test]
fn malformed_requests_are_refused_with_the_reason() {
    let server = server();
    let path = format!("/v3/{KEY}");
    let refused = |request: &[u8]| {
        let mut conn = Conn::open(&server);
        conn.send(request);
        let response = conn.read_response(false);
        assert!(
            conn.closed(),
            "the connection stays open after {response:?}"
        );
        (
            response.status,
            String::from_utf8_lossy(&response.body).into_owned(),
        )
    };
    let (status, reason) = refused(b"HELLO\r\n\r\n");
    assert_eq!(status, 400, "{reason}");
    assert!(reason.contains("bad request head"), "{reason}");
    let (status, reason) = refused(
        format!(
            "POST {path} HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\
             Content-Length: 3\r\n\r\n{{}}"
        )
        .as_bytes(),
    );
    assert_eq!(status, 400);
    assert!(reason.contains("conflicting Content-Length"), "{reason}");
    let (status, reason) = refused(
        format!(
            "POST {path} HTTP/1.1\r\nContent-Type: application/json\r\n\
             Transfer-Encoding: gzip\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(status, 400);
    assert!(reason.contains("Transfer-Encoding"), "{reason}");
    let (status, reason) = refused(
        format!(
            "POST {path} HTTP/1.1\r\nContent-Type: application/json\r\n\
             Transfer-Encoding: chunked\r\n\r\nzz\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(status, 400);
    assert!(reason.contains("chunk size"), "{reason}");
    let huge = format!(
        "GET /health HTTP/1.1\r\nX-Filler: {}\r\n\r\n",
        "a".repeat(70_000)
    );
    let (status, _) = refused(huge.as_bytes());
    assert_eq!(status, 431);
    let many: String = (0..80).map(|i| format!("X-{i}: {i}\r\n")).collect();
    let (status, _) = refused(format!("GET /health HTTP/1.1\r\n{many}\r\n").as_bytes());
    assert_eq!(status, 431);
}

#[test]
fn head_requests_get_the_head_alone() {
    let server = server();
    let mut conn = Conn::open(&server);
    conn.send(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let get = conn.read_response(false);
    assert_eq!(get.status, 200);
    conn.send(b"HEAD /health HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let head = conn.read_response(true);
    assert_eq!(head.status, 200);
    assert_eq!(
        head.header("content-length"),
        Some(get.body.len().to_string().as_str())
    );
    // Nothing but the next answer follows the HEAD answer.
    conn.send(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(conn.read_response(false).body, get.body);
}

#[test]
fn connections_past_the_limit_get_429() {
    let server = Server::start(&ingested(&fixtures()), "max_connections = 2");
    let path = format!("/v3/{KEY}");
    let mut open = Vec::new();
    for id in 0..2 {
        let mut conn = Conn::open(&server);
        conn.send(&post(&path, &call(id, "eth_chainId"), ""));
        assert_eq!(conn.read_response(false).status, 200);
        open.push(conn);
    }
    let mut third = Conn::open(&server);
    third.send(&post(&path, &call(3, "eth_chainId"), ""));
    let refused = third.read_response(false);
    assert_eq!(refused.status, 429);
    assert!(String::from_utf8_lossy(&refused.body).contains("Too many connections"));
    // A closed connection frees its place.
    drop(open.pop());
    let mut retried = None;
    for _ in 0..50 {
        let mut conn = Conn::open(&server);
        conn.send(&post(&path, &call(4, "eth_chainId"), ""));
        let response = conn.read_response(false);
        if response.status == 200 {
            retried = Some(response);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(retried.expect("no place freed").json()["id"], 4);
}

/// A masked client text frame (RFC 6455) of a short payload.
fn client_frame(payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() < 126);
    let mask = [0x12, 0x34, 0x56, 0x78];
    let mut frame = vec![0x81, 0x80 | payload.len() as u8];
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    frame
}

#[test]
fn a_websocket_frame_sent_with_the_upgrade_request_is_answered() {
    let server = server();
    let mut request = format!(
        "GET /ws/v3/{KEY} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\n\r\n"
    )
    .into_bytes();
    request.extend(client_frame(call(9, "eth_chainId").as_bytes()));
    let mut conn = Conn::open(&server);
    conn.send(&request);
    let switching = conn.read_response(true);
    assert_eq!(switching.status, 101);
    // RFC 6455's example key and its accept value.
    assert_eq!(
        switching.header("sec-websocket-accept"),
        Some("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    );
    let mut head = [0u8; 2];
    conn.reader.read_exact(&mut head).unwrap();
    assert_eq!(head[0], 0x81, "a final text frame");
    let length = match head[1] {
        126 => {
            let mut extended = [0u8; 2];
            conn.reader.read_exact(&mut extended).unwrap();
            u16::from_be_bytes(extended) as usize
        }
        short => short as usize,
    };
    let mut payload = vec![0; length];
    conn.reader.read_exact(&mut payload).unwrap();
    let answer: Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(answer["id"], 9);
    assert_eq!(answer["result"], server.result("eth_chainId", json!([])));
}

#[test]
fn answers_past_max_response_bytes_are_jsonrpsees_error() {
    let server = Server::start(&ingested(&fixtures()), "max_response_bytes = 4096");
    let too_big = json!({
        "code": -32008,
        "message": "Response is too big",
        "data": "Exceeded max limit of 4096"
    });
    // Block 2's receipts hold about 21 MB of JSON; block 54 with hashes fits.
    let receipts = json!({"jsonrpc": "2.0", "id": "a\"b", "method": "eth_getBlockReceipts", "params": ["0x2"]});
    let block = json!({"jsonrpc": "2.0", "id": 7, "method": "eth_getBlockByNumber", "params": ["0x36", false]});
    let answer = server.http(&receipts.to_string());
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": "a\"b", "error": too_big})
    );
    let fits = server.http(&block.to_string());
    assert_eq!(fits["id"], 7);
    assert_eq!(fits["result"]["number"], "0x36");

    let mut ws = server.ws();
    assert_eq!(ws.exchange(&receipts.to_string())["error"], too_big);
    assert_eq!(ws.exchange(&block.to_string()), fits);

    // In a batch, the call too large for the limit gets the error, the other its answer.
    let batch = server.http(&json!([block, receipts]).to_string());
    assert_eq!(
        batch,
        json!([fits, {"jsonrpc": "2.0", "id": "a\"b", "error": too_big}])
    );
}
