//! End-to-end tests of compressed HTTP answers: a client that accepts gzip or zstd gets answers
//! of 1 KiB or more compressed (the 21 MB eth_getBlockReceipts of rpc-compat block 2 as it
//! streams, in chunks), and they decompress to exactly the bytes an identity client gets.

#![allow(clippy::unwrap_used)]

mod support;

use serde_json::json;
use std::{
    io::{Read, Write},
    net::TcpStream,
    time::Duration,
};
use support::{KEY, Server, fixtures, ingested};

/// One answer as it came over the wire.
struct Wire {
    head: String,
    body: Vec<u8>,
}

impl Wire {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_string())
        })
    }

    /// The body with chunked framing undone, as the server encoded it.
    fn payload(&self) -> Vec<u8> {
        if self.header("transfer-encoding").as_deref() != Some("chunked") {
            return self.body.clone();
        }
        let (mut out, mut rest) = (Vec::new(), self.body.as_slice());
        loop {
            let line_end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let size = std::str::from_utf8(&rest[..line_end]).unwrap();
            let size = usize::from_str_radix(size, 16).unwrap();
            rest = &rest[line_end + 2..];
            if size == 0 {
                assert_eq!(rest, b"\r\n", "the last chunk ends the body");
                return out;
            }
            out.extend_from_slice(&rest[..size]);
            assert_eq!(&rest[size..size + 2], b"\r\n");
            rest = &rest[size + 2..];
        }
    }

    /// The answer's JSON bytes, decompressed as its Content-Encoding says.
    fn decoded(&self) -> Vec<u8> {
        let payload = self.payload();
        match self.header("content-encoding").as_deref() {
            None => payload,
            Some("gzip") => {
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(payload.as_slice())
                    .read_to_end(&mut out)
                    .unwrap();
                out
            }
            Some("zstd") => zstd::decode_all(payload.as_slice()).unwrap(),
            Some(other) => panic!("unexpected content-encoding {other}"),
        }
    }
}

/// POSTs `body` with `accept` as Accept-Encoding (none: no header) over HTTP/1.1.
fn post(server: &Server, body: &str, accept: Option<&str>) -> Wire {
    let mut stream = TcpStream::connect(&server.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let accept = accept.map_or(String::new(), |a| format!("Accept-Encoding: {a}\r\n"));
    write!(
        stream,
        "POST /v3/{KEY} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n{accept}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let split = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    Wire {
        head: String::from_utf8(response[..split].to_vec()).unwrap(),
        body: response[split + 4..].to_vec(),
    }
}

fn request(method: &str, params: serde_json::Value) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()
}

#[test]
fn large_answers_stream_compressed_and_decompress_to_the_same_bytes() {
    let server = Server::start(&ingested(&fixtures()), "");
    let receipts = request("eth_getBlockReceipts", json!(["0x2"]));
    let plain = post(&server, &receipts, None);
    assert!(plain.body.len() > 20 << 20, "{} bytes", plain.body.len());
    assert_eq!(plain.header("content-encoding"), None);
    assert_eq!(plain.header("vary").as_deref(), Some("accept-encoding"));
    for (accept, encoding) in [
        ("gzip", "gzip"),
        ("gzip, deflate, br, zstd", "zstd"),
        ("zstd;q=0.5, gzip", "gzip"),
    ] {
        let wire = post(&server, &receipts, Some(accept));
        assert_eq!(wire.header("content-encoding").as_deref(), Some(encoding));
        assert_eq!(wire.header("transfer-encoding").as_deref(), Some("chunked"));
        assert_eq!(wire.header("content-length"), None);
        let sent = wire.payload().len();
        assert!(sent * 5 < plain.body.len(), "{encoding}: {sent} bytes sent");
        assert!(
            wire.decoded() == plain.body,
            "{encoding} decodes to other bytes"
        );
    }
}

#[test]
fn small_answers_go_whole_and_tiny_ones_uncompressed() {
    let server = Server::start(&ingested(&fixtures()), "");
    let block = request("eth_getBlockByNumber", json!(["0x1", true]));
    let plain = post(&server, &block, None);
    assert!(plain.body.len() >= 1024, "{} bytes", plain.body.len());
    let wire = post(&server, &block, Some("gzip"));
    assert_eq!(wire.header("content-encoding").as_deref(), Some("gzip"));
    let length: usize = wire.header("content-length").unwrap().parse().unwrap();
    assert_eq!(length, wire.body.len());
    assert!(length < plain.body.len());
    assert_eq!(wire.decoded(), plain.body);

    let tiny = post(
        &server,
        &request("eth_blockNumber", json!([])),
        Some("gzip"),
    );
    assert_eq!(tiny.header("content-encoding"), None);
    assert!(tiny.body.starts_with(b"{\"jsonrpc\""));
    let refused = post(&server, &block, Some("identity, gzip;q=0"));
    assert_eq!(refused.header("content-encoding"), None);
    assert_eq!(refused.body, plain.body);
}
