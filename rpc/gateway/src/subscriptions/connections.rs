//! Open WebSocket connections as the rest of the server sees them: who is calling, the outbox
//! of answers and notifications waiting to be sent (bounded: a notification that does not fit
//! closes the connection as a slow consumer), the writer task that drains it, the connection's
//! subscriptions, and the registry of every open connection (for revocation).

use crate::{
    access::caller::Caller,
    subscriptions::kind::{SubId, SubKind},
};
use futures_util::SinkExt;
use std::{
    collections::{HashMap, VecDeque},
    sync::{
        Arc, Mutex, MutexGuard, PoisonError, Weak,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};
use tokio::sync::{Notify, watch};
use tokio_tungstenite::tungstenite::{
    Message,
    protocol::{CloseFrame, frame::coding::CloseCode},
};

/// Messages the writer takes from the outbox at once and sends with one flush.
const SEND_BATCH: usize = 256;
/// How long a closing connection may take to send its close frame before the socket is
/// dropped (a client that does not read never takes it).
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The send-buffer bounds of every connection.
#[derive(Debug, Clone, Copy)]
pub struct SendLimits {
    pub messages: usize,
    pub bytes: usize,
}

/// Sends what the outbox holds until the connection closes.
pub(crate) async fn write<S>(conn: Arc<Connection>, mut sink: S)
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
    pub(crate) fn open_connection(&self, caller: Caller, limits: SendLimits) -> Arc<Connection> {
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

    /// A receiver that sees the connection end.
    pub(crate) fn ended(&self) -> watch::Receiver<bool> {
        self.ended.subscribe()
    }

    /// Queues an answer to a call.
    pub(crate) fn respond(&self, text: String) {
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
    pub(crate) fn finish(&self) {
        let _ = self.ended.send(true);
        self.subscriptions().closed = true;
        self.ready.notify_one();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn notifications_are_geths_envelope() {
        let text = super::notification("0xab", r#"{"x":1}"#);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"jsonrpc": "2.0", "method": "eth_subscription",
                "params": {"subscription": "0xab", "result": {"x": 1}}})
        );
    }
}
