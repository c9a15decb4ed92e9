//! quarry's HTTP/1.1 transport. Each connection is one task that reads a request head
//! (httparse), asks the gate where it goes, reads the body (Content-Length or chunked, with
//! `100 Continue` when the client waits for it), and writes the answer with one write. HTTP/1.1
//! connections stay open unless the client says `Connection: close`; HTTP/1.0 ones close
//! unless it says `keep-alive`; pipelined requests are answered in order. Every answer to a
//! page on an origin the network allows carries the CORS headers, refusals included. An
//! admitted WebSocket upgrade hands the socket to `ws`. There is no HTTP/2. Answers of 1 KiB
//! or more go compressed to clients that accept gzip or zstd (`compression.rs`).
//!
//! jsonrpsee's server (hyper) is not used for HTTP: at the trivial-call ceiling it cost about a
//! third more CPU per request than this loop does (bench/serve.sh), and every request pays it.

use crate::{
    access::gate::{Gate, Route},
    transport::compression::{self, COMPRESS_FROM, ContentEncoding},
    transport::http_reply::HttpReply,
    transport::ws::WsTransport,
};
use bytes::{Buf, Bytes, BytesMut};
use jsonrpsee::server::{ConnectionGuard, HttpRequest, StopHandle, http::response};
use std::{
    cell::RefCell,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::{Duration, SystemTime, UNIX_EPOCH},
};
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf},
    net::{TcpListener, TcpStream},
    time::Instant,
};

/// The largest request head (request line and headers) read; past it, 431.
const MAX_HEAD_BYTES: usize = 64 << 10;
/// The most header lines a request may have; past it, 431.
const MAX_HEADERS: usize = 64;
/// How long a kept-alive connection may wait for its next request (geth: 120 s).
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a client may take to send a request once it has begun, head and body (geth's
/// read timeout).
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Bodies up to this size are written with the head in one write; larger ones after it,
/// without copying.
const COPY_BODY_BELOW: usize = 64 << 10;

/// What every HTTP connection shares.
pub struct HttpTransport {
    gate: Gate,
    websockets: Arc<WsTransport>,
    max_request_bytes: u32,
    connections: ConnectionGuard,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport").finish_non_exhaustive()
    }
}

impl HttpTransport {
    pub fn new(
        gate: Gate,
        websockets: Arc<WsTransport>,
        max_request_bytes: u32,
        max_connections: u32,
    ) -> Self {
        Self {
            gate,
            websockets,
            max_request_bytes,
            connections: ConnectionGuard::new(max_connections as usize),
        }
    }
}

/// Accepts connections on `listener` until `stop` says so.
pub async fn serve(listener: TcpListener, transport: Arc<HttpTransport>, stop: StopHandle) {
    let stop = stop.shutdown();
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut stop => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, for instance: wait for some to close.
                tracing::warn!("cannot accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Answers are written whole; waiting for more to send only adds latency.
        let _ = stream.set_nodelay(true);
        let transport = transport.clone();
        match transport.connections.try_acquire() {
            Some(permit) => {
                tokio::spawn(async move {
                    transport.connection(stream).await;
                    drop(permit);
                });
            }
            None => {
                // jsonrpsee's answer when it is at `max_connections`.
                tokio::spawn(async move {
                    let reply = HttpReply::from_response(response::too_many_requests()).await;
                    last_reply(stream, reply, false).await;
                });
            }
        }
    }
}

/// Why a request could not be read.
#[derive(Debug)]
enum RequestError {
    /// The connection closed, failed or timed out: nothing to answer.
    Gone,
    /// The head is larger than `MAX_HEAD_BYTES` or has more than `MAX_HEADERS` lines.
    HeadTooLarge,
    /// The body is larger than `max_request_bytes`.
    BodyTooLarge,
    /// Not HTTP/1.x as it should be: 400 with the reason.
    Malformed(String),
}

/// How the answer ends the exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// HTTP/1.1: the connection stays open.
    KeepAlive,
    /// HTTP/1.0 with `Connection: keep-alive`: stays open, and says so.
    KeepAliveAsked,
    /// `Connection: close` goes with the answer, then the socket closes.
    Close,
}

/// How a request's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyLength {
    Length(u64),
    Chunked,
}

/// A request head, parsed.
#[derive(Debug)]
struct Head {
    request: HttpRequest<()>,
    body: BodyLength,
    framing: Framing,
    expects_continue: bool,
    /// When the rest of the request must have arrived: `READ_TIMEOUT` after its first byte.
    deadline: Instant,
}

impl HttpTransport {
    /// Serves one connection until it closes.
    async fn connection(&self, mut stream: TcpStream) {
        let mut buf = BytesMut::with_capacity(8 << 10);
        loop {
            let head = match read_head(&mut stream, &mut buf).await {
                Ok(Some(head)) => head,
                Ok(None) => return,
                Err(error) => {
                    if let Some(reply) = error_reply(error, self.max_request_bytes).await {
                        last_reply(stream, reply, false).await;
                    }
                    return;
                }
            };
            let route = self.gate.route(&head.request);
            if let Route::WebSocket(caller) = route {
                self.upgrade(stream, buf, head, caller).await;
                return;
            }
            let cors = self.gate.cors_headers(&head.request);
            let is_head = head.request.method() == http::Method::HEAD;
            let body = match read_body(&mut stream, &mut buf, &head, self.max_request_bytes).await {
                Ok(body) => body,
                Err(error) => {
                    // A refusal stands as it is, whatever the body; a body to run that is too
                    // large gets jsonrpsee's 413.
                    let reply = match (route, error) {
                        (_, RequestError::Gone) => None,
                        (Route::Answered(response), RequestError::BodyTooLarge) => {
                            Some(HttpReply::from_response(response).await)
                        }
                        (_, error) => error_reply(error, self.max_request_bytes).await,
                    };
                    if let Some(reply) = reply.map(|r| with_cors(r, cors.as_ref())) {
                        last_reply(stream, reply, is_head).await;
                    }
                    return;
                }
            };
            let reply = match route {
                Route::Answered(response) => HttpReply::from_response(response).await,
                Route::JsonRpc(caller) => self.gate.json_rpc(&body, caller).await,
                Route::WebSocket(_) => return,
            };
            let reply = with_cors(reply, cors.as_ref());
            let encoding = ContentEncoding::negotiate(head.request.headers());
            let chunked_ok = head.request.version() == http::Version::HTTP_11;
            let encoding = encoding.map(|encoding| (encoding, chunked_ok));
            if write_reply(&mut stream, reply, head.framing, is_head, encoding)
                .await
                .is_err()
            {
                return;
            }
            if head.framing == Framing::Close {
                close_after_reply(stream).await;
                return;
            }
        }
    }

    /// Answers an admitted upgrade with 101 and runs the WebSocket on the socket, starting
    /// with whatever the client sent after the head.
    async fn upgrade(
        &self,
        mut stream: TcpStream,
        buf: BytesMut,
        head: Head,
        caller: crate::access::caller::Caller,
    ) {
        let accept = match self.websockets.handshake(&head.request) {
            Ok(accepted) => accepted,
            Err((status, text)) => {
                let reply = HttpReply {
                    status,
                    content_type: None,
                    headers: http::HeaderMap::new(),
                    body: Bytes::from_static(text.as_bytes()),
                };
                last_reply(stream, reply, false).await;
                return;
            }
        };
        let switching = format!(
            "HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: websocket\r\n\
             sec-websocket-accept: {accept}\r\ndate: {}\r\n\r\n",
            http_date()
        );
        if stream.write_all(switching.as_bytes()).await.is_err() {
            return;
        }
        let io = Rewind {
            prefix: buf.freeze(),
            inner: stream,
        };
        self.websockets.clone().run(io, caller).await;
    }
}

/// Reads the next request head from `stream` into `buf` (which may already hold some or all
/// of it): `None` when the connection closed cleanly before a new request began.
async fn read_head(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
) -> Result<Option<Head>, RequestError> {
    // Idle until the request's first byte, then `READ_TIMEOUT` for all of it.
    if buf.is_empty() {
        match tokio::time::timeout(IDLE_TIMEOUT, stream.read_buf(buf)).await {
            Ok(Ok(0)) => return Ok(None),
            Ok(Ok(_)) => {}
            Ok(Err(_)) | Err(_) => return Err(RequestError::Gone),
        }
    }
    let deadline = Instant::now() + READ_TIMEOUT;
    loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(buf) {
            Ok(httparse::Status::Complete(length)) if length > MAX_HEAD_BYTES => {
                return Err(RequestError::HeadTooLarge);
            }
            Ok(httparse::Status::Complete(length)) => {
                let head = head_of(&parsed, deadline)?;
                buf.advance(length);
                return Ok(Some(head));
            }
            Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD_BYTES => {
                return Err(RequestError::HeadTooLarge);
            }
            Ok(httparse::Status::Partial) => {}
            Err(httparse::Error::TooManyHeaders) => return Err(RequestError::HeadTooLarge),
            Err(e) => return Err(RequestError::Malformed(format!("bad request head: {e}"))),
        }
        let wanted = buf.len() + 1;
        fill(stream, buf, wanted, deadline).await?;
    }
}

/// The head of a parsed request, with the `http` types the gate reads.
fn head_of(parsed: &httparse::Request<'_, '_>, deadline: Instant) -> Result<Head, RequestError> {
    let malformed = |what: &str| RequestError::Malformed(what.to_string());
    let method = http::Method::from_bytes(parsed.method.unwrap_or_default().as_bytes())
        .map_err(|_| malformed("bad method"))?;
    let uri: http::Uri = parsed
        .path
        .unwrap_or_default()
        .parse()
        .map_err(|_| malformed("bad request target"))?;
    let http10 = parsed.version == Some(0);
    let mut headers = http::HeaderMap::with_capacity(parsed.headers.len());
    for header in parsed.headers.iter() {
        let name = http::HeaderName::from_bytes(header.name.as_bytes())
            .map_err(|_| malformed("bad header name"))?;
        let value = http::HeaderValue::from_bytes(header.value)
            .map_err(|_| malformed("bad header value"))?;
        headers.append(name, value);
    }
    let body = body_length(&headers)?;
    let connection_says = |token: &str| {
        headers
            .get_all(http::header::CONNECTION)
            .iter()
            .any(|value| {
                value.to_str().is_ok_and(|v| {
                    v.split(',')
                        .any(|option| option.trim().eq_ignore_ascii_case(token))
                })
            })
    };
    // A body framed both ways may be read otherwise by a proxy in front (request smuggling):
    // answer it, then close (RFC 9112 section 6.1).
    let both_framings = headers.contains_key(http::header::TRANSFER_ENCODING)
        && headers.contains_key(http::header::CONTENT_LENGTH);
    let framing = if http10 || both_framings {
        if connection_says("keep-alive") && !both_framings {
            Framing::KeepAliveAsked
        } else {
            Framing::Close
        }
    } else if connection_says("close") {
        Framing::Close
    } else {
        Framing::KeepAlive
    };
    let expects_continue = !http10
        && headers
            .get(http::header::EXPECT)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let mut request = HttpRequest::new(());
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.version_mut() = if http10 {
        http::Version::HTTP_10
    } else {
        http::Version::HTTP_11
    };
    *request.headers_mut() = headers;
    Ok(Head {
        request,
        body,
        framing,
        expects_continue,
        deadline,
    })
}

/// How the body is delimited (RFC 9112 section 6.3): chunked when Transfer-Encoding ends with
/// it, else Content-Length (every copy the same), else none.
fn body_length(headers: &http::HeaderMap) -> Result<BodyLength, RequestError> {
    let malformed = |what: &str| RequestError::Malformed(what.to_string());
    let mut codings = headers
        .get_all(http::header::TRANSFER_ENCODING)
        .iter()
        .peekable();
    if codings.peek().is_some() {
        let last = codings
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|coding| !coding.is_empty())
            .last();
        return match last {
            Some(coding) if coding.eq_ignore_ascii_case("chunked") => Ok(BodyLength::Chunked),
            _ => Err(malformed(
                "unsupported Transfer-Encoding: only chunked is understood",
            )),
        };
    }
    let mut length = None;
    for value in headers.get_all(http::header::CONTENT_LENGTH) {
        let parsed = value
            .to_str()
            .ok()
            .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| malformed("bad Content-Length"))?;
        if length.is_some_and(|known| known != parsed) {
            return Err(malformed("conflicting Content-Length headers"));
        }
        length = Some(parsed);
    }
    Ok(BodyLength::Length(length.unwrap_or(0)))
}

/// Reads until `buf` holds at least `wanted` bytes, by `deadline`.
async fn fill(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
    wanted: usize,
    deadline: Instant,
) -> Result<(), RequestError> {
    while buf.len() < wanted {
        buf.reserve(wanted - buf.len());
        match tokio::time::timeout_at(deadline, stream.read_buf(buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return Err(RequestError::Gone),
            Ok(Ok(_)) => {}
        }
    }
    Ok(())
}

/// Reads a line ending in CRLF (of at most `MAX_HEAD_BYTES`), consuming it; the line without
/// its CRLF.
async fn read_line(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
    deadline: Instant,
) -> Result<Bytes, RequestError> {
    let mut searched = 0;
    loop {
        if let Some(at) = buf[searched..].windows(2).position(|w| w == b"\r\n") {
            let line = buf.split_to(searched + at).freeze();
            buf.advance(2);
            return Ok(line);
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(RequestError::Malformed("chunk line too long".into()));
        }
        searched = buf.len().saturating_sub(1);
        let wanted = buf.len() + 1;
        fill(stream, buf, wanted, deadline).await?;
    }
}

/// Reads the request's body, at most `max` bytes of it, consuming it from `buf`.
async fn read_body(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
    head: &Head,
    max: u32,
) -> Result<Bytes, RequestError> {
    let max = u64::from(max);
    if head.body == BodyLength::Length(0) {
        return Ok(Bytes::new());
    }
    if let BodyLength::Length(length) = head.body
        && length > max
    {
        return Err(RequestError::BodyTooLarge);
    }
    if head.expects_continue
        && stream
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await
            .is_err()
    {
        return Err(RequestError::Gone);
    }
    match head.body {
        BodyLength::Length(length) => {
            let length = length as usize;
            fill(stream, buf, length, head.deadline).await?;
            Ok(buf.split_to(length).freeze())
        }
        BodyLength::Chunked => {
            let mut body = BytesMut::new();
            loop {
                let line = read_line(stream, buf, head.deadline).await?;
                let size = std::str::from_utf8(&line)
                    .ok()
                    .map(|line| line.split(';').next().unwrap_or("").trim())
                    .and_then(|hex| u64::from_str_radix(hex, 16).ok())
                    .ok_or_else(|| RequestError::Malformed("bad chunk size".into()))?;
                if size == 0 {
                    // Trailers, then the empty line.
                    while !read_line(stream, buf, head.deadline).await?.is_empty() {}
                    return Ok(body.freeze());
                }
                if body.len() as u64 + size > max {
                    return Err(RequestError::BodyTooLarge);
                }
                let size = size as usize;
                fill(stream, buf, size + 2, head.deadline).await?;
                body.extend_from_slice(&buf[..size]);
                if &buf[size..size + 2] != b"\r\n" {
                    return Err(RequestError::Malformed("chunk not followed by CRLF".into()));
                }
                buf.advance(size + 2);
            }
        }
    }
}

/// `reply` with the CORS headers of its request, if it has any.
fn with_cors(mut reply: HttpReply, cors: Option<&http::HeaderMap>) -> HttpReply {
    for (name, value) in cors.into_iter().flatten() {
        reply.headers.insert(name, value.clone());
    }
    reply
}

/// The answer to a request that could not be read (`None`: the client is gone).
async fn error_reply(error: RequestError, max: u32) -> Option<HttpReply> {
    Some(match error {
        RequestError::Gone => return None,
        RequestError::HeadTooLarge => HttpReply {
            status: http::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            content_type: Some(http::HeaderValue::from_static("text/plain")),
            headers: http::HeaderMap::new(),
            body: Bytes::from(format!(
                "request head too large: at most {MAX_HEAD_BYTES} bytes and {MAX_HEADERS} headers\n"
            )),
        },
        RequestError::BodyTooLarge => HttpReply::from_response(response::too_large(max)).await,
        RequestError::Malformed(reason) => HttpReply {
            status: http::StatusCode::BAD_REQUEST,
            content_type: Some(http::HeaderValue::from_static("text/plain")),
            headers: http::HeaderMap::new(),
            body: Bytes::from(format!("{reason}\n")),
        },
    })
}

/// Writes `reply` as the connection's last answer, then closes the connection.
async fn last_reply(mut stream: TcpStream, reply: HttpReply, head_only: bool) {
    if write_reply(&mut stream, reply, Framing::Close, head_only, None)
        .await
        .is_ok()
    {
        close_after_reply(stream).await;
    }
}

/// Closes a connection after its last answer: FIN first, then whatever the client still sends
/// is read and dropped for a moment. Closing a socket with unread data sends a reset, which
/// can destroy the answer before the client reads it (a body refused unread, for instance).
async fn close_after_reply(mut stream: TcpStream) {
    const LINGER: Duration = Duration::from_secs(1);
    const DRAIN_BYTES: usize = 1 << 20;
    if stream.shutdown().await.is_err() {
        return;
    }
    let mut scratch = [0u8; 8 << 10];
    let mut drained = 0;
    let _ = tokio::time::timeout(LINGER, async {
        while drained < DRAIN_BYTES {
            match stream.read(&mut scratch).await {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
    })
    .await;
}

/// Writes `reply`; `head_only` leaves the body out (a HEAD request). With `encoding` (and
/// whether the client reads chunked bodies), a body of `COMPRESS_FROM` bytes or more goes
/// compressed: whole with its length when small, else chunked as it is compressed (an HTTP/1.0
/// client gets a large body as it is).
async fn write_reply(
    stream: &mut TcpStream,
    mut reply: HttpReply,
    framing: Framing,
    head_only: bool,
    encoding: Option<(ContentEncoding, bool)>,
) -> std::io::Result<()> {
    let large = reply.body.len() >= COMPRESS_FROM;
    if large {
        reply.headers.insert(
            http::header::VARY,
            http::HeaderValue::from_static("accept-encoding"),
        );
    }
    let mut chunked = None;
    if let Some((encoding, chunked_ok)) = encoding.filter(|_| large && !head_only) {
        let whole = compression::compressed_whole(reply.body.len());
        if whole || chunked_ok {
            reply.headers.insert(
                http::header::CONTENT_ENCODING,
                http::HeaderValue::from_static(encoding.token()),
            );
        }
        if whole {
            reply.body = compression::compress(&reply.body, encoding)?;
        } else if chunked_ok {
            chunked = Some(encoding);
        }
    }
    let head = reply_head(&reply, framing, chunked.is_some());
    if head_only {
        return stream.write_all(head.as_bytes()).await;
    }
    if let Some(encoding) = chunked {
        return compression::write_chunked(stream, head.as_bytes(), reply.body, encoding).await;
    }
    if reply.body.len() < COPY_BODY_BELOW {
        let mut out = head.into_bytes();
        out.extend_from_slice(&reply.body);
        stream.write_all(&out).await
    } else {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(&reply.body).await
    }
}

/// The status line and headers of `reply`: its length, or (`chunked`) chunked framing.
fn reply_head(reply: &HttpReply, framing: Framing, chunked: bool) -> String {
    use std::fmt::Write as _;
    let mut head = String::with_capacity(160);
    let _ = write!(
        head,
        "HTTP/1.1 {} {}\r\n",
        reply.status.as_str(),
        reply.status.canonical_reason().unwrap_or("")
    );
    let mut header = |name: &str, value: &[u8]| {
        head.push_str(name);
        head.push_str(": ");
        head.push_str(&String::from_utf8_lossy(value));
        head.push_str("\r\n");
    };
    if let Some(content_type) = &reply.content_type {
        header("content-type", content_type.as_bytes());
    }
    for (name, value) in &reply.headers {
        header(name.as_str(), value.as_bytes());
    }
    match framing {
        Framing::KeepAlive => {}
        Framing::KeepAliveAsked => header("connection", b"keep-alive"),
        Framing::Close => header("connection", b"close"),
    }
    if chunked {
        head.push_str("transfer-encoding: chunked\r\n");
    } else {
        let _ = write!(head, "content-length: {}\r\n", reply.body.len());
    }
    let _ = write!(head, "date: {}\r\n\r\n", http_date());
    head
}

/// The Date header's value, formatted once a second per thread.
fn http_date() -> String {
    thread_local! {
        static DATE: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    let now = SystemTime::now();
    let second = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    DATE.with(|date| {
        let mut date = date.borrow_mut();
        if date.0 != second {
            *date = (second, httpdate::fmt_http_date(now));
        }
        date.1.clone()
    })
}

/// The socket after an upgrade, with the bytes already read past the head in front.
struct Rewind {
    prefix: Bytes,
    inner: TcpStream,
}

impl AsyncRead for Rewind {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(out.remaining());
            out.put_slice(&self.prefix[..n]);
            self.prefix.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, out)
    }
}

impl AsyncWrite for Rewind {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, data)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
