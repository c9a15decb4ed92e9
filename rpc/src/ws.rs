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
    answer::{self, BodyLimits},
    calls::Calls,
    config::Config,
    reply::{self, Reply},
    service::{Caller, Service},
    subscriptions::{SubId, SubKind},
};
use futures_util::{SinkExt, StreamExt};
use jsonrpsee::{
    MethodResponse, Methods,
    core::middleware::{Batch, BatchEntry, Notification, RpcServiceT},
    server::{HttpRequest, MethodCallback},
    types::{ErrorCode, ErrorObject, Request},
};
use std::{
    collections::{HashMap, VecDeque},
    sync::{
        Arc, Mutex, MutexGuard, PoisonError, Weak,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};
use tokio::sync::{Notify, Semaphore, watch};
use tokio_tungstenite::{
    WebSocketStream,
    tungstenite::{
        Message,
        protocol::{CloseFrame, Role, WebSocketConfig, frame::coding::CloseCode},
    },
};

/// Calls of one connection running at once; the reader waits for one to finish before it
/// reads the next message.
const MAX_CALLS_IN_FLIGHT: usize = 64;
/// Messages the writer takes from the outbox at once and sends with one flush.
const SEND_BATCH: usize = 256;
/// What a connection reads into at once: 1,000 idle connections should not hold 128 KiB each
/// (tungstenite's default).
const READ_BUFFER: usize = 16 << 10;
/// How long a closing connection may take to send its close frame before the socket is
/// dropped (a client that does not read never takes it).
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The send-buffer bounds of every connection.
#[derive(Debug, Clone, Copy)]
pub struct SendLimits {
    pub messages: usize,
    pub bytes: usize,
}

/// What every WebSocket connection shares: the service, the methods behind the call layer, and
/// the limits.
pub struct Transport {
    service: Arc<Service>,
    rpc: Calls<Dispatch>,
    bodies: BodyLimits,
    limits: SendLimits,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport").finish_non_exhaustive()
    }
}

impl Transport {
    pub fn new(config: &Config, service: Arc<Service>, rpc: Calls<Dispatch>) -> Self {
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
        let mut ended = conn.ended.subscribe();
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
                transport.service.activate(&conn);
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
        let answer = answer::answer(&self.rpc, self.bodies, text.as_bytes(), extensions).await;
        // jsonrpsee answers a notification it did not run with `null`: no answer.
        (!answer.text.is_empty() && answer.text != "null").then_some(answer.text)
    }
}

/// Sends what the outbox holds until the connection closes.
async fn write<S>(conn: Arc<Connection>, mut sink: S)
where
    S: futures_util::Sink<Message> + Unpin,
{
    let mut ended = conn.ended.subscribe();
    let mut abandon = conn.abandon.subscribe();
    loop {
        let ready = conn.ready.notified();
        tokio::pin!(ready);
        ready.as_mut().enable();
        let next = conn.outbox().next();
        match next {
            Next::Send(batch) => {
                // One write for the batch, not one per message.
                let send = async {
                    for message in batch {
                        sink.feed(Message::text(message.into_text())).await?;
                    }
                    sink.flush().await
                };
                tokio::select! {
                    sent = send => if sent.is_err() { break },
                    // A send stuck on a full socket gives way to the close frame.
                    _ = abandon.wait_for(|abandon| *abandon) => {}
                    _ = ended.wait_for(|ended| *ended) => break,
                }
            }
            Next::Close(frame) => {
                let _ =
                    tokio::time::timeout(CLOSE_GRACE, sink.send(Message::Close(Some(frame)))).await;
                break;
            }
            Next::Wait => {
                tokio::select! {
                    _ = ready => {}
                    _ = ended.wait_for(|ended| *ended) => break,
                }
            }
        }
    }
    // The reader stops too: nothing more is sent on this connection.
    let _ = conn.ended.send(true);
}

/// Every open WebSocket connection, for revocation.
#[derive(Debug, Default)]
pub struct Connections {
    next_id: AtomicU64,
    live: Mutex<HashMap<u64, Weak<Connection>>>,
}

impl Connections {
    fn open_connection(&self, caller: Caller, limits: SendLimits) -> Arc<Connection> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Connection {
            id,
            caller,
            limits,
            outbox: Mutex::default(),
            ready: Notify::new(),
            abandon: watch::Sender::new(false),
            runtime: tokio::runtime::Handle::current(),
            ended: watch::Sender::new(false),
            subscriptions: Mutex::default(),
        });
        self.lock().insert(id, Arc::downgrade(&conn));
        conn
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Weak<Connection>>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn forget(&self, conn: &Connection) {
        self.lock().remove(&conn.id);
    }

    /// The open connections.
    pub fn all(&self) -> Vec<Arc<Connection>> {
        self.lock().values().filter_map(Weak::upgrade).collect()
    }
}

/// One WebSocket connection as the rest of the server sees it: who is calling, what waits to be
/// sent, and its subscriptions.
pub struct Connection {
    pub id: u64,
    pub caller: Caller,
    limits: SendLimits,
    outbox: Mutex<Outbox>,
    /// Wakes the writer when the outbox gets something.
    ready: Notify,
    /// Set when what waits to be sent is dropped for the close frame.
    abandon: watch::Sender<bool>,
    /// For the deadline of a close that lets the queue drain first.
    runtime: tokio::runtime::Handle,
    /// Set when the connection is over: both tasks stop.
    ended: watch::Sender<bool>,
    subscriptions: Mutex<ConnSubscriptions>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// A connection's subscriptions: `pending` ones are answered but not yet notified (see
/// `Service::activate`).
#[derive(Debug, Default)]
pub struct ConnSubscriptions {
    pub active: HashMap<SubId, SubKind>,
    pub pending: Vec<(SubId, SubKind)>,
    /// Set once the connection ended: nothing may subscribe any more.
    pub closed: bool,
}

/// One message waiting to be sent. A notification holds its result shared with every other
/// connection that gets it: its text is written by this connection's writer task, so the
/// watcher's thread does not copy each result once per subscriber.
#[derive(Debug)]
enum Outgoing {
    Text(String),
    Notification { id: SubId, result: Arc<str> },
}

impl Outgoing {
    /// The size of the text it becomes.
    fn len(&self) -> usize {
        match self {
            Self::Text(text) => text.len(),
            Self::Notification { id, result } => notification_len(id, result),
        }
    }

    fn into_text(self) -> String {
        match self {
            Self::Text(text) => text,
            Self::Notification { id, result } => notification(&id, &result),
        }
    }
}

const NOTIFICATION_HEAD: &str =
    r#"{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":""#;
const NOTIFICATION_MIDDLE: &str = r#"","result":"#;
const NOTIFICATION_TAIL: &str = "}}";

fn notification_len(id: &str, result: &str) -> usize {
    NOTIFICATION_HEAD.len()
        + id.len()
        + NOTIFICATION_MIDDLE.len()
        + result.len()
        + NOTIFICATION_TAIL.len()
}

/// `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":ID,"result":RESULT}}`.
pub(crate) fn notification(id: &str, result: &str) -> String {
    let mut text = String::with_capacity(notification_len(id, result));
    text.push_str(NOTIFICATION_HEAD);
    text.push_str(id);
    text.push_str(NOTIFICATION_MIDDLE);
    text.push_str(result);
    text.push_str(NOTIFICATION_TAIL);
    text
}

#[derive(Debug, Default)]
struct Outbox {
    queue: VecDeque<Outgoing>,
    bytes: usize,
    close: Option<CloseFrame>,
    /// A close frame was queued: nothing more goes out.
    closing: bool,
}

enum Next {
    Send(Vec<Outgoing>),
    Close(CloseFrame),
    Wait,
}

impl Outbox {
    fn next(&mut self) -> Next {
        if !self.queue.is_empty() {
            let count = self.queue.len().min(SEND_BATCH);
            let batch: Vec<Outgoing> = self.queue.drain(..count).collect();
            self.bytes -= batch.iter().map(Outgoing::len).sum::<usize>();
            return Next::Send(batch);
        }
        match self.close.take() {
            Some(frame) => Next::Close(frame),
            None => Next::Wait,
        }
    }
}

/// Why a notification was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The connection is closing.
    Closed,
    /// The outbox is full: the client does not read fast enough.
    Full,
}

impl Connection {
    fn outbox(&self) -> MutexGuard<'_, Outbox> {
        self.outbox.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn subscriptions(&self) -> MutexGuard<'_, ConnSubscriptions> {
        self.subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues an answer to a call.
    fn respond(&self, text: String) {
        let mut outbox = self.outbox();
        if outbox.closing {
            return;
        }
        outbox.bytes += text.len();
        outbox.queue.push_back(Outgoing::Text(text));
        drop(outbox);
        self.ready.notify_one();
    }

    /// Queues subscription `id`'s notification of `result`, unless the outbox is over its
    /// bounds (one message always fits an empty outbox, however large). The writer is woken by
    /// `wake`, once for all of a subscription's notifications of a block, so that it sends them
    /// in one write.
    pub fn notify(&self, id: &SubId, result: &Arc<str>) -> Result<(), Refused> {
        let message = Outgoing::Notification {
            id: id.clone(),
            result: result.clone(),
        };
        let size = message.len();
        let mut outbox = self.outbox();
        if outbox.closing {
            return Err(Refused::Closed);
        }
        if !outbox.queue.is_empty()
            && (outbox.queue.len() >= self.limits.messages
                || outbox.bytes + size > self.limits.bytes)
        {
            return Err(Refused::Full);
        }
        outbox.bytes += size;
        outbox.queue.push_back(message);
        // A block with many notifications for one connection is sent as it is queued.
        if outbox.queue.len().is_multiple_of(SEND_BATCH) {
            drop(outbox);
            self.ready.notify_one();
        }
        Ok(())
    }

    /// Wakes the writer for what `notify` queued.
    pub fn wake(&self) {
        self.ready.notify_one();
    }

    /// How many messages and bytes wait to be sent.
    pub fn waiting(&self) -> (usize, usize) {
        let outbox = self.outbox();
        (outbox.queue.len(), outbox.bytes)
    }

    /// Drops what waits to be sent and closes the connection with `code` and `reason`: the
    /// close frame goes out at once if the client reads, and the socket is dropped after
    /// `CLOSE_GRACE` if not. The caller removes the subscriptions (`Service::release`).
    pub fn close(&self, code: CloseCode, reason: &str) {
        self.close_with(code, reason, false);
    }

    /// Closes the connection after what waits to be sent (which then has `CLOSE_GRACE`
    /// to go out only if the writer is stuck).
    pub fn close_after_queued(&self, code: CloseCode, reason: &str) {
        self.close_with(code, reason, true);
    }

    fn close_with(&self, code: CloseCode, reason: &str, keep_queued: bool) {
        let mut outbox = self.outbox();
        if outbox.closing {
            return;
        }
        outbox.closing = true;
        if !keep_queued {
            outbox.queue.clear();
            outbox.bytes = 0;
        }
        outbox.close = Some(CloseFrame {
            code,
            reason: reason.to_owned().into(),
        });
        drop(outbox);
        if keep_queued {
            // A client that does not read gets no longer than this to take the rest.
            let abandon = self.abandon.clone();
            self.runtime.spawn(async move {
                tokio::time::sleep(CLOSE_GRACE * 5).await;
                let _ = abandon.send(true);
            });
        } else {
            let _ = self.abandon.send(true);
        }
        self.ready.notify_one();
    }

    /// Whether the connection is closing or over.
    pub fn is_closing(&self) -> bool {
        self.outbox().closing || *self.ended.borrow()
    }

    /// The connection is over: both tasks stop, and nothing may subscribe on it any more.
    fn finish(&self) {
        let _ = self.ended.send(true);
        self.subscriptions().closed = true;
        self.ready.notify_one();
    }
}

/// The methods behind the call layer (for HTTP and WebSocket calls alike): quarry's own
/// registry of methods that answer with a serialized result (see `reply`), then jsonrpsee's
/// module for the rest, called as jsonrpsee's own service calls them.
#[derive(Clone)]
pub struct Dispatch {
    methods: Methods,
    answered: Arc<reply::Methods>,
    max_response_bytes: usize,
}

impl Dispatch {
    pub fn new(
        methods: impl Into<Methods>,
        answered: reply::Methods,
        max_response_bytes: u32,
    ) -> Self {
        Self {
            methods: methods.into(),
            answered: Arc::new(answered),
            max_response_bytes: max_response_bytes as usize,
        }
    }
}

impl RpcServiceT for Dispatch {
    type MethodResponse = Reply;
    type NotificationResponse = MethodResponse;
    type BatchResponse = MethodResponse;

    fn call<'a>(&self, request: Request<'a>) -> impl Future<Output = Reply> + Send + 'a {
        let methods = self.methods.clone();
        let answered = self.answered.get(request.method_name()).cloned();
        let max = self.max_response_bytes;
        async move {
            let Request {
                id,
                method,
                params,
                extensions,
                ..
            } = request;
            let params = jsonrpsee::types::Params::new(params.as_ref().map(|p| p.get()));
            if let Some(answer) = answered {
                let reply = match answer(params.into_owned(), extensions.clone()).await {
                    Ok(result) => Reply::result(id, &result, max),
                    Err(error) => Reply::error(id, error),
                };
                return reply.with_extensions(extensions);
            }
            let response = match methods.method_with_name(&method) {
                None => MethodResponse::error(id, ErrorObject::from(ErrorCode::MethodNotFound))
                    .with_extensions(extensions),
                Some((_, MethodCallback::Async(callback))) => {
                    let conn_id = jsonrpsee::core::server::ConnectionId(0);
                    callback(
                        id.into_owned(),
                        params.into_owned(),
                        conn_id,
                        max,
                        extensions,
                    )
                    .await
                }
                Some((_, MethodCallback::Sync(callback))) => callback(id, params, max, extensions),
                Some(_) => MethodResponse::error(id, ErrorObject::from(ErrorCode::InternalError))
                    .with_extensions(extensions),
            };
            Reply::from_jsonrpsee(response)
        }
    }

    /// The call layer answers each call of a batch through `call`; this is its fallback.
    fn batch<'a>(&self, batch: Batch<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        let this = self.clone();
        async move {
            let mut responses =
                jsonrpsee::BatchResponseBuilder::new_with_limit(this.max_response_bytes);
            for entry in batch {
                let response = match entry {
                    Ok(BatchEntry::Call(request)) => this.call(request).await.into_jsonrpsee(),
                    Ok(BatchEntry::Notification(_)) => continue,
                    Err(error) => {
                        let (error, id) = error.into_parts();
                        MethodResponse::error(id, error)
                    }
                };
                if let Err(too_big) = responses.append(response) {
                    return too_big;
                }
            }
            MethodResponse::from_batch(responses.finish())
        }
    }

    fn notification<'a>(
        &self,
        _notification: Notification<'a>,
    ) -> impl Future<Output = MethodResponse> + Send + 'a {
        std::future::ready(MethodResponse::notification())
    }
}
