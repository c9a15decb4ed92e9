//! quarry's WebSocket transport. jsonrpsee's own cannot close one connection with a reason,
//! nor bound what waits to be sent on it without stalling the sender, so the gate hands every
//! upgrade here: each connection has a reader task, which runs the calls it receives through the
//! same call layer and methods as HTTP (jsonrpsee's parsing, batches and limits), and a writer
//! task, which sends what waits in the connection's outbox: call answers, and the notifications
//! that the subscription watchers push from their own threads.
//!
//! A notification never waits: when the outbox already holds `ws_send_buffer_messages` messages
//! or `ws_send_buffer_bytes` bytes, the client is not reading fast enough, and the connection is
//! closed (code 1008, the reason in the close frame) instead of letting memory grow. Answers to
//! calls are always queued: at most `MAX_CALLS_IN_FLIGHT` run at once per connection, and the
//! reader stops reading while that many are running, so they are bounded too.

use crate::{
    access::caller::Caller,
    call::body::{self, BodyLimits},
    call::layer::Calls,
    config::Config,
    service::Service,
    subscriptions::connections::{Connection, SendLimits, write},
    subscriptions::notifications,
};
use futures_util::StreamExt;
use jsonrpsee::server::HttpRequest;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio_tungstenite::{
    WebSocketStream,
    tungstenite::{
        Message,
        protocol::{Role, WebSocketConfig, frame::coding::CloseCode},
    },
};

/// Calls of one connection running at once; the reader waits for one to finish before it
/// reads the next message.
const MAX_CALLS_IN_FLIGHT: usize = 64;
/// What a connection reads into at once: 1,000 idle connections should not hold 128 KiB each
/// (tungstenite's default).
const READ_BUFFER: usize = 16 << 10;

/// What every WebSocket connection shares: the service, the methods behind the call layer, and
/// the limits.
pub struct WsTransport {
    service: Arc<Service>,
    rpc: Calls,
    bodies: BodyLimits,
    limits: SendLimits,
}

impl std::fmt::Debug for WsTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsTransport").finish_non_exhaustive()
    }
}

impl WsTransport {
    pub fn new(config: &Config, service: Arc<Service>, rpc: Calls) -> Self {
        Self {
            service,
            rpc,
            bodies: BodyLimits::of(config),
            limits: SendLimits {
                messages: config.ws_send_buffer_messages.max(1),
                bytes: config.ws_send_buffer_bytes,
            },
        }
    }

    /// Checks an upgrade request from an admitted caller: the `Sec-WebSocket-Accept` value to
    /// answer it with, or the HTTP error to refuse it with. (`max_connections` is the HTTP
    /// transport's: an upgraded socket keeps its place there until it closes.)
    pub fn handshake(
        &self,
        request: &HttpRequest<()>,
    ) -> Result<String, (http::StatusCode, &'static str)> {
        let key = request
            .headers()
            .get(http::header::SEC_WEBSOCKET_KEY)
            .map(|key| key.as_bytes().to_vec());
        let version_ok = request
            .headers()
            .get(http::header::SEC_WEBSOCKET_VERSION)
            .is_some_and(|v| v.as_bytes() == b"13");
        let (Some(key), true) = (key, version_ok) else {
            return Err((
                http::StatusCode::BAD_REQUEST,
                "a WebSocket upgrade needs Sec-WebSocket-Key and Sec-WebSocket-Version: 13",
            ));
        };
        Ok(tokio_tungstenite::tungstenite::handshake::derive_accept_key(&key))
    }

    /// Serves one connection until either side closes it.
    /// `io` is the socket after the 101 answer.
    pub async fn run<S>(self: Arc<Self>, io: S, caller: Caller)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let config = WebSocketConfig::default()
            .read_buffer_size(READ_BUFFER)
            .max_message_size(Some(self.bodies.max_request_bytes as usize))
            .max_frame_size(Some(self.bodies.max_request_bytes as usize));
        let socket = WebSocketStream::from_raw_socket(io, Role::Server, Some(config)).await;
        let (sink, mut stream) = socket.split();
        let conn = self
            .service
            .connections
            .open_connection(caller, self.limits);
        let network = conn.caller.network;
        self.service.metrics.ws_connection(network, 1);
        let writer = tokio::spawn(write(conn.clone(), sink));
        let calls = Arc::new(Semaphore::new(MAX_CALLS_IN_FLIGHT));
        let mut ended = conn.ended();
        loop {
            let message = tokio::select! {
                message = stream.next() => message,
                _ = ended.wait_for(|ended| *ended) => break,
            };
            let text = match message {
                Some(Ok(Message::Text(text))) => text.as_str().to_owned(),
                Some(Ok(Message::Binary(bytes))) => match String::from_utf8(bytes.to_vec()) {
                    Ok(text) => text,
                    Err(_) => {
                        conn.close(CloseCode::Unsupported, "binary messages must be UTF-8 JSON");
                        continue;
                    }
                },
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
            };
            let Ok(permit) = calls.clone().acquire_owned().await else {
                break;
            };
            let (transport, conn) = (self.clone(), conn.clone());
            tokio::spawn(async move {
                if let Some(answer) = transport.call(&conn, text).await {
                    conn.respond(answer);
                }
                // Subscriptions start once their id is on its way, so none is notified first.
                notifications::activate(&transport.service, &conn);
                drop(permit);
            });
        }
        conn.finish();
        self.service.release(&conn);
        self.service.metrics.ws_connection(network, -1);
        let _ = writer.await;
    }

    /// Runs one message (a call, a notification or a batch) as HTTP would: its answer, or
    /// `None` when there is none (only notifications). The envelope is read as geth reads it
    /// (see `envelope`).
    async fn call(&self, conn: &Arc<Connection>, text: String) -> Option<String> {
        let mut extensions = jsonrpsee::Extensions::new();
        extensions.insert(conn.caller.clone());
        extensions.insert(conn.clone());
        let answer = body::answer(&self.rpc, self.bodies, text.as_bytes(), extensions).await;
        // jsonrpsee answers a notification it did not run with `null`: no answer.
        (!answer.text.is_empty() && answer.text != "null").then_some(answer.text)
    }
}
