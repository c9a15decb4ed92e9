//! eth_subscribe and the watcher that feeds subscriptions and filters.
//!
//! Another process (`quarry ingest`, `quarry follow`) writes the database; `quarry serve` only
//! reads it. One watcher thread per network asks MDBX for its last commit id every
//! `new_block_poll_ms` (a read of the meta pages, no snapshot). When it changed, the watcher
//! opens a snapshot (through the `Node`, so the caches follow unwinds as they do for requests)
//! and compares its canonical chain with the one of the snapshot it kept from the last change,
//! which it holds open until then:
//!
//! - the common ancestor is the highest block whose hash both snapshots store at its height
//!   (for a chain that only grew, the old head itself, found with one lookup);
//! - every block above it in the old snapshot was removed: its logs go out with
//!   `removed: true`, read from the old snapshot, which still holds them, oldest block first
//!   (geth's order);
//! - then every block above it in the new snapshot, in order: a `newHeads` notification and
//!   its logs.
//!
//! Two consecutive snapshots are compared however many commits landed between them (several
//! writers, or many commits in one poll interval), so each canonical block is sent exactly once
//! and never repeated, and a block that was canonical only between two polls is neither sent
//! nor removed. Reads and the formatting of notifications happen on the watcher's thread; the
//! connections' writer tasks only send.

use crate::{
    error::{Result, RpcError},
    logs::{Filter, LogCriteria},
    node::{Node, Snapshot, Syncing},
    params::Args,
    service::{Networks, Service},
    types::{HeaderJson, LogJson, SyncProgressJson, SyncingJson, TxContext},
    ws::{Connection, Refused},
};
use alloy_primitives::{B256, Log};
use jsonrpsee::{RpcModule, types::ErrorObjectOwned};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError, RwLock},
    time::{Duration, Instant},
};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

/// A subscription or filter id: 16 random bytes in hex, as geth makes them.
pub type SubId = Arc<str>;

/// How often the sync status is re-read when nothing was committed (a killed ingest stops
/// syncing without a commit).
const SYNC_CHECK: Duration = Duration::from_secs(1);

/// A new id in geth's form: `0x` and 16 random bytes in hex without leading zeros.
pub fn new_id() -> Result<SubId> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| RpcError::Internal(format!("cannot draw a random id: {e}")))?;
    let hex = alloy_primitives::hex::encode(bytes);
    let digits = hex.trim_start_matches('0');
    Ok(format!("0x{}", if digits.is_empty() { "0" } else { digits }).into())
}

/// What a subscription wants.
#[derive(Debug, Clone)]
pub enum SubKind {
    NewHeads,
    Logs(Arc<LogCriteria>),
    Syncing,
}

impl SubKind {
    /// Its slot among the metrics' kinds.
    pub fn slot(&self) -> usize {
        match self {
            Self::NewHeads => 0,
            Self::Logs(_) => 1,
            Self::Syncing => 2,
        }
    }
}

/// One log of a new or removed block, its JSON written once for every subscriber and filter.
#[derive(Debug)]
pub struct LogEvent {
    pub log: Log,
    pub block: u64,
    /// Shared by every notification of it: connections' writers frame it.
    pub json: Arc<str>,
}

/// One block that joined the canonical chain, or left it (`removed`).
#[derive(Debug)]
pub struct BlockEvent {
    pub hash: B256,
    pub removed: bool,
    /// geth's header JSON, when someone wants new heads.
    pub header: Option<Arc<str>>,
    /// Its logs in order, when someone wants logs.
    pub logs: Vec<Arc<LogEvent>>,
}

/// Which parts of a block anyone listens for.
#[derive(Debug, Clone, Copy, Default)]
pub struct Wants {
    pub heads: bool,
    pub logs: bool,
}

impl std::ops::BitOr for Wants {
    type Output = Self;

    fn bitor(self, other: Self) -> Self {
        Self {
            heads: self.heads || other.heads,
            logs: self.logs || other.logs,
        }
    }
}

/// The subscriptions of one network.
#[derive(Debug, Default)]
pub struct Hub {
    subs: RwLock<HashMap<SubId, Subscriber>>,
    /// The sync status last sent: a new `syncing` subscription gets it at once.
    syncing: Mutex<Option<SyncingJson>>,
}

#[derive(Debug)]
struct Subscriber {
    conn: Arc<Connection>,
    kind: SubKind,
}

/// The notifications of one block, per connection, and the connections found too slow or out
/// of their key's daily quota.
struct Delivery<'s> {
    service: &'s Service,
    sent: HashMap<u64, (Arc<Connection>, u64)>,
    /// Per connection: how many more notifications its key may get today (`None`: no limit).
    budgets: HashMap<u64, Option<u64>>,
    slow: Vec<Arc<Connection>>,
    over_quota: Vec<Arc<Connection>>,
}

impl<'s> Delivery<'s> {
    fn new(service: &'s Service) -> Self {
        Self {
            service,
            sent: HashMap::new(),
            budgets: HashMap::new(),
            slow: Vec::new(),
            over_quota: Vec::new(),
        }
    }

    fn push(&mut self, conn: &Arc<Connection>, id: &SubId, result: &Arc<str>) {
        let budget = self.budgets.entry(conn.id).or_insert_with(|| {
            let grant = &conn.caller.grant;
            let limits = self.service.plans.limits(grant.plan);
            self.service.limiter.left_today(&grant.id, limits)
        });
        match budget {
            Some(0) => {
                if !self.over_quota.iter().any(|c| c.id == conn.id) {
                    self.over_quota.push(conn.clone());
                }
                return;
            }
            Some(left) => *left -= 1,
            None => {}
        }
        match conn.notify(id, result) {
            Ok(()) => {
                self.sent
                    .entry(conn.id)
                    .or_insert_with(|| (conn.clone(), 0))
                    .1 += 1;
            }
            Err(Refused::Full) => {
                if !self.slow.iter().any(|c| c.id == conn.id) {
                    self.slow.push(conn.clone());
                }
            }
            Err(Refused::Closed) => {}
        }
    }
}

impl Hub {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<SubId, Subscriber>> {
        self.subs.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<SubId, Subscriber>> {
        self.subs.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn wants(&self) -> Wants {
        let subs = self.read();
        Wants {
            heads: subs.values().any(|s| matches!(s.kind, SubKind::NewHeads)),
            logs: subs.values().any(|s| matches!(s.kind, SubKind::Logs(_))),
        }
    }

    /// Queues `event`'s notifications. Each subscription's writer is woken as soon as its
    /// notifications are queued, so that sending overlaps the queueing for the others.
    fn deliver(&self, event: &BlockEvent, delivery: &mut Delivery) {
        for (id, sub) in self.read().iter() {
            match &sub.kind {
                SubKind::NewHeads => {
                    if let (false, Some(header)) = (event.removed, &event.header) {
                        delivery.push(&sub.conn, id, header);
                        sub.conn.wake();
                    }
                }
                SubKind::Logs(criteria) => {
                    let mut any = false;
                    for log in &event.logs {
                        if criteria.matches(&log.log, log.block) {
                            delivery.push(&sub.conn, id, &log.json);
                            any = true;
                        }
                    }
                    if any {
                        sub.conn.wake();
                    }
                }
                SubKind::Syncing => {}
            }
        }
    }

    /// Records the sync status and sends it to `syncing` subscribers if it changed.
    fn set_syncing(&self, status: SyncingJson, delivery: &mut Delivery) -> Result<()> {
        {
            let mut last = self.syncing.lock().unwrap_or_else(PoisonError::into_inner);
            if last.as_ref() == Some(&status) {
                return Ok(());
            }
            *last = Some(status.clone());
        }
        let json: Arc<str> = to_json(&status)?.into();
        for (id, sub) in self.read().iter() {
            if matches!(sub.kind, SubKind::Syncing) {
                delivery.push(&sub.conn, id, &json);
            }
        }
        Ok(())
    }
}

fn to_json(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| RpcError::Internal(format!("cannot serialize a notification: {e}")))
}

/// eth_syncing's answer as the `syncing` subscription sends it.
fn syncing_json(status: Syncing) -> SyncingJson {
    match status {
        Syncing::Done(_) => SyncingJson::Done(false),
        Syncing::Progress {
            starting_block,
            current_block,
            highest_block,
        } => SyncingJson::Syncing {
            syncing: true,
            status: SyncProgressJson::blocks(
                starting_block.to(),
                current_block.to(),
                highest_block.to(),
            ),
        },
    }
}

impl Service {
    /// Reserves a subscription on `conn`: it is notified once `activate` ran after its id was
    /// queued.
    fn subscribe(&self, conn: &Connection, kind: SubKind) -> Result<SubId> {
        let mut subs = conn.subscriptions();
        if subs.closed {
            return Err(RpcError::Internal("the connection is closing".into()));
        }
        if subs.active.len() + subs.pending.len() >= self.max_subscriptions_per_connection {
            return Err(RpcError::TooManySubscriptions(
                self.max_subscriptions_per_connection,
            ));
        }
        let id = new_id()?;
        subs.pending.push((id.clone(), kind));
        Ok(id)
    }

    /// Starts the subscriptions `conn` was answered for: from now on they are notified.
    pub(crate) fn activate(&self, conn: &Arc<Connection>) {
        let network = conn.caller.network;
        let Some(hub) = self.hubs.get(network) else {
            return;
        };
        let mut subs = conn.subscriptions();
        if subs.pending.is_empty() || subs.closed {
            subs.pending.clear();
            return;
        }
        let mut delivery = Delivery::new(self);
        let syncing = hub
            .syncing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for (id, kind) in std::mem::take(&mut subs.pending) {
            self.metrics.subscription(network, kind.slot(), 1);
            if let (SubKind::Syncing, Some(status)) = (&kind, &syncing)
                && let Ok(json) = to_json(status)
            {
                delivery.push(conn, &id, &json.into());
            }
            hub.write().insert(
                id.clone(),
                Subscriber {
                    conn: conn.clone(),
                    kind: kind.clone(),
                },
            );
            subs.active.insert(id, kind);
        }
        drop(subs);
        self.settle(network, delivery);
    }

    /// eth_unsubscribe: whether `id` was one of `conn`'s subscriptions.
    fn unsubscribe(&self, conn: &Connection, id: &str) -> Result<bool> {
        let network = conn.caller.network;
        let mut subs = conn.subscriptions();
        if let Some(kind) = subs.active.remove(id) {
            if let Some(hub) = self.hubs.get(network) {
                hub.write().remove(id);
            }
            self.metrics.subscription(network, kind.slot(), -1);
            return Ok(true);
        }
        let before = subs.pending.len();
        subs.pending.retain(|(pending, _)| &**pending != id);
        if subs.pending.len() < before {
            return Ok(true);
        }
        Err(RpcError::SubscriptionNotFound)
    }

    /// Ends `conn`'s subscriptions for good (it closed, or is being closed).
    pub(crate) fn release(&self, conn: &Connection) {
        let network = conn.caller.network;
        let mut subs = conn.subscriptions();
        subs.closed = true;
        subs.pending.clear();
        if let Some(hub) = self.hubs.get(network) {
            let mut hub = hub.write();
            for (id, kind) in subs.active.drain() {
                hub.remove(&id);
                self.metrics.subscription(network, kind.slot(), -1);
            }
        }
        drop(subs);
        self.connections.forget(conn);
    }

    /// Closes `conn` with a reason and ends its subscriptions.
    pub(crate) fn disconnect(&self, conn: &Connection, code: CloseCode, reason: &str) {
        tracing::info!(connection = conn.id, key = %conn.caller.grant.id, reason, "closing a WebSocket");
        conn.close(code, reason);
        self.release(conn);
    }

    /// After a block's notifications were queued: each connection's count is charged to its
    /// key's plan, and connections that could not take theirs are closed.
    fn settle(&self, network: usize, delivery: Delivery) {
        for conn in &delivery.slow {
            let (messages, bytes) = conn.waiting();
            self.metrics.slow_consumer(network);
            self.disconnect(
                conn,
                CloseCode::Policy,
                &format!(
                    "slow consumer: {messages} messages ({bytes} bytes) were waiting to be sent; \
                     read notifications faster or subscribe to fewer"
                ),
            );
        }
        let mut total = 0;
        let mut refused = delivery.over_quota;
        for (conn, count) in delivery.sent.into_values() {
            conn.wake();
            total += count;
            let limits = self.plans.limits(conn.caller.grant.plan);
            if self
                .limiter
                .charge(&conn.caller.grant.id, limits, count)
                .is_err()
                && !refused.iter().any(|c| c.id == conn.id)
            {
                refused.push(conn);
            }
        }
        for conn in refused {
            if conn.is_closing() {
                continue;
            }
            self.metrics.refusal(network, true);
            let limits = self.plans.limits(conn.caller.grant.plan);
            let allowed = limits.requests_per_day.unwrap_or_default();
            let reason = format!(
                "daily request quota exceeded: this key may make {allowed} requests (calls and notifications) per day"
            );
            tracing::info!(connection = conn.id, key = %conn.caller.grant.id, reason, "closing a WebSocket");
            // What was sent within the quota still goes out, then the close frame.
            conn.close_after_queued(CloseCode::Policy, &reason);
            self.release(&conn);
        }
        self.metrics.notifications(network, total);
    }

    /// Every 500 ms: connections and filters of revoked keys go, and so do expired filters.
    pub fn sweep(&self) {
        for conn in self.connections.all() {
            if !conn.is_closing() && !self.keys.is_live(&conn.caller.grant) {
                self.disconnect(&conn, CloseCode::Policy, "API key revoked");
            }
        }
        self.filters
            .sweep(|grant| self.keys.is_live(grant), &self.metrics);
    }
}

/// Registers eth_subscribe and eth_unsubscribe.
pub fn register(
    module: &mut RpcModule<Networks>,
    service: &Arc<Service>,
) -> std::result::Result<(), crate::ServeError> {
    let subscribe_service = service.clone();
    module
        .register_async_method("eth_subscribe", move |params, networks, extensions| {
            let service = subscribe_service.clone();
            async move {
                let Some(conn) = extensions.get::<Arc<Connection>>().cloned() else {
                    return Err(ErrorObjectOwned::from(RpcError::NotificationsUnsupported));
                };
                let node = networks.of(&extensions)?;
                let args = Args::parse(&params, &["subscriptionName", "options"], 1)?;
                let name: String = args.required(0)?;
                let kind = match name.as_str() {
                    "newHeads" | "syncing" if args.optional::<serde_json::Value>(1)?.is_some() => {
                        return Err(RpcError::InvalidParams(
                            "too many arguments, want at most 1".into(),
                        )
                        .into());
                    }
                    "newHeads" => SubKind::NewHeads,
                    "syncing" => SubKind::Syncing,
                    "logs" => {
                        let filter = args.optional::<Filter>(1)?.unwrap_or_default();
                        SubKind::Logs(Arc::new(LogCriteria::new(&filter, node.max_log_params())?))
                    }
                    "newPendingTransactions" => {
                        return Err(RpcError::NoTransactionPool("newPendingTransactions").into());
                    }
                    other => return Err(RpcError::UnknownSubscription(other.to_string()).into()),
                };
                let id = service.subscribe(&conn, kind)?;
                Ok::<_, ErrorObjectOwned>(id.to_string())
            }
        })
        .map_err(|_| crate::ServeError::Register("eth_subscribe".into()))?;
    let unsubscribe_service = service.clone();
    module
        .register_method("eth_unsubscribe", move |params, _, extensions| {
            let Some(conn) = extensions.get::<Arc<Connection>>() else {
                return Err(ErrorObjectOwned::from(RpcError::NotificationsUnsupported));
            };
            let args = Args::parse(&params, &["subscriptionId"], 1)?;
            let id: String = args.required(0)?;
            Ok::<_, ErrorObjectOwned>(unsubscribe_service.unsubscribe(conn, &id)?)
        })
        .map_err(|_| crate::ServeError::Register("eth_unsubscribe".into()))?;
    Ok(())
}

/// Starts one watcher thread per network.
pub fn start_watchers(
    nodes: &[Arc<Node>],
    service: &Arc<Service>,
    poll: Duration,
) -> std::io::Result<()> {
    for (network, node) in nodes.iter().enumerate() {
        let watcher = Watcher {
            node: node.clone(),
            network,
            service: service.clone(),
            seen: None,
            synced_at: None,
        };
        std::thread::Builder::new()
            .name(format!("quarry-watch-{network}"))
            .spawn(move || watcher.run(poll))?;
    }
    Ok(())
}

/// What the watcher last saw: a snapshot, held open, and its head.
struct Seen {
    snapshot: Snapshot,
    head: Option<(u64, B256)>,
}

struct Watcher {
    node: Arc<Node>,
    network: usize,
    service: Arc<Service>,
    seen: Option<Seen>,
    /// When the sync status was last read.
    synced_at: Option<Instant>,
}

impl Watcher {
    fn run(mut self, poll: Duration) {
        loop {
            if let Err(e) = self.step() {
                tracing::warn!(network = self.network, "watching for new blocks: {e}");
                std::thread::sleep(Duration::from_millis(500));
            }
            std::thread::sleep(poll);
        }
    }

    /// One look at the database: publishes what changed since the last one.
    fn step(&mut self) -> Result<()> {
        let commit = self.node.last_commit_id()?;
        let unchanged = self
            .seen
            .as_ref()
            .is_some_and(|seen| seen.snapshot.commit() == commit);
        let sync_due = self.synced_at.is_none_or(|at| at.elapsed() >= SYNC_CHECK);
        if unchanged && !sync_due {
            return Ok(());
        }
        let snapshot = self.node.reader()?;
        let head = snapshot.head()?;
        if let Some(seen) = &self.seen
            && seen.head != head
        {
            self.publish(seen, &snapshot, head)?;
        }
        self.update_syncing(&snapshot)?;
        // The old snapshot is released only now: the next change is compared with this one.
        self.seen = Some(Seen { snapshot, head });
        Ok(())
    }

    fn update_syncing(&mut self, snapshot: &Snapshot) -> Result<()> {
        self.synced_at = Some(Instant::now());
        let Some(hub) = self.service.hubs.get(self.network) else {
            return Ok(());
        };
        let status = syncing_json(self.node.syncing(snapshot)?);
        let mut delivery = Delivery::new(&self.service);
        hub.set_syncing(status, &mut delivery)?;
        self.service.settle(self.network, delivery);
        Ok(())
    }

    /// Sends the change from `old`'s chain to `new`'s (head `head`).
    fn publish(&self, old: &Seen, new: &Snapshot, head: Option<(u64, B256)>) -> Result<()> {
        let ancestor = match (old.head, head) {
            (Some((old_head, _)), Some((new_head, _))) => {
                let mut number = old_head.min(new_head);
                loop {
                    if old.snapshot.canonical_hash(number)? == new.canonical_hash(number)? {
                        break Some(number);
                    }
                    match number.checked_sub(1) {
                        Some(parent) => number = parent,
                        None => break None,
                    }
                }
            }
            _ => None,
        };
        let first_new = ancestor.map_or(0, |a| a + 1);
        let removed = old.head.map(|(old_head, _)| first_new..=old_head);
        let added = head.map(|(new_head, _)| first_new..=new_head);
        if let Some(removed) = removed.clone().filter(|r| !r.is_empty()) {
            tracing::info!(
                network = self.network,
                from = removed.start(),
                to = removed.end(),
                "the canonical chain was reorganised: notifying removed logs"
            );
        }
        let hub = &self.service.hubs[self.network];
        let wants = hub.wants() | self.service.filters.wants(self.network);
        if !wants.heads && !wants.logs && !self.service.filters.has_any(self.network) {
            return Ok(());
        }
        for number in removed.into_iter().flatten() {
            let event = self.event(&old.snapshot, number, true, wants)?;
            self.deliver(hub, &event);
        }
        for number in added.into_iter().flatten() {
            let event = self.event(new, number, false, wants)?;
            self.deliver(hub, &event);
        }
        Ok(())
    }

    fn deliver(&self, hub: &Hub, event: &BlockEvent) {
        let mut delivery = Delivery::new(&self.service);
        hub.deliver(event, &mut delivery);
        self.service.filters.deliver(self.network, event);
        self.service.settle(self.network, delivery);
    }

    /// Block `number` of `snapshot` as subscribers and filters see it.
    fn event(
        &self,
        snapshot: &Snapshot,
        number: u64,
        removed: bool,
        wants: Wants,
    ) -> Result<BlockEvent> {
        let block = self.node.stored_block(snapshot, number)?.ok_or_else(|| {
            RpcError::Storage(quarry_storage::Error::Corrupt(format!(
                "canonical block {number} is not stored"
            )))
        })?;
        let header = if wants.heads && !removed {
            Some(to_json(&HeaderJson::new(&block.header, block.hash))?.into())
        } else {
            None
        };
        let mut logs = Vec::new();
        if wants.logs {
            let receipts = self
                .node
                .receipts_of(&crate::Reads::Snapshot(snapshot), &block)?
                .ok_or_else(|| {
                    RpcError::Internal(format!("no receipts read for block {number}"))
                })?;
            let mut log_index = 0;
            for (index, (transaction, receipt)) in block
                .body
                .transactions
                .iter()
                .zip(&receipts.list)
                .enumerate()
            {
                let at = TxContext::new(&block.header, block.hash, index);
                for log in &receipt.logs {
                    let mut json = LogJson::new(log, *transaction.tx_hash(), &at, log_index);
                    if removed {
                        json = json.removed();
                    }
                    logs.push(Arc::new(LogEvent {
                        log: log.clone(),
                        block: number,
                        json: to_json(&json)?.into(),
                    }));
                    log_index += 1;
                }
            }
        }
        Ok(BlockEvent {
            hash: block.hash,
            removed,
            header,
            logs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_look_like_geths() {
        let id = new_id().unwrap();
        assert!(
            id.starts_with("0x") && id.len() <= 34 && id.len() > 20,
            "{id}"
        );
        assert!(!id[2..].starts_with('0'));
        assert_ne!(new_id().unwrap(), id);
    }

    #[test]
    fn notifications_are_geths_envelope() {
        let text = crate::ws::notification("0xab", r#"{"x":1}"#);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"jsonrpc": "2.0", "method": "eth_subscription",
                "params": {"subscription": "0xab", "result": {"x": 1}}})
        );
    }
}
