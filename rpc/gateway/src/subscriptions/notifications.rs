//! Sending notifications: the event sink each network's watcher (quarry-eth) feeds, which hands
//! every block to that network's subscriptions and filters, and the delivery of a block's
//! notifications, counted against each connection's daily quota, with the connections found too
//! slow or over their quota closed once the block's notifications are queued.

use crate::{
    service::Service,
    subscriptions::connections::{Connection, Refused},
    subscriptions::hub::{syncing_json, to_json},
    subscriptions::kind::{SubId, SubKind},
};
use quarry_eth::{
    Syncing,
    events::{BlockEvent, EventSink, Wants},
};
use std::{collections::HashMap, sync::Arc};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

/// The notifications of one block, per connection, and the connections found too slow or out
/// of their key's daily quota.
pub(crate) struct Delivery<'s> {
    service: &'s Service,
    sent: HashMap<u64, (Arc<Connection>, u64)>,
    /// Per connection: how many more notifications its key may get today (`None`: no limit).
    budgets: HashMap<u64, Option<u64>>,
    slow: Vec<Arc<Connection>>,
    over_quota: Vec<Arc<Connection>>,
}

impl<'s> Delivery<'s> {
    pub(crate) fn new(service: &'s Service) -> Self {
        Self {
            service,
            sent: HashMap::new(),
            budgets: HashMap::new(),
            slow: Vec::new(),
            over_quota: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, conn: &Arc<Connection>, id: &SubId, result: &Arc<str>) {
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

/// Starts the subscriptions `conn` was answered for: from now on they are notified.
pub(crate) fn activate(service: &Service, conn: &Arc<Connection>) {
    let network = conn.caller.network;
    let Some(hub) = service.hubs.get(network) else {
        return;
    };
    let mut subs = conn.subscriptions();
    if subs.pending.is_empty() || subs.closed {
        subs.pending.clear();
        return;
    }
    let mut delivery = Delivery::new(service);
    let syncing = hub.last_syncing();
    for (id, kind) in std::mem::take(&mut subs.pending) {
        service.metrics.subscription(network, kind.slot(), 1);
        if let (SubKind::Syncing, Some(status)) = (&kind, &syncing)
            && let Ok(json) = to_json(status)
        {
            delivery.push(conn, &id, &json.into());
        }
        hub.insert(id.clone(), conn.clone(), kind.clone());
        subs.active.insert(id, kind);
    }
    drop(subs);
    settle(service, network, delivery);
}

/// After a block's notifications were queued: each connection's count is charged to its
/// key's plan, and connections that could not take theirs are closed.
pub(crate) fn settle(service: &Service, network: usize, delivery: Delivery) {
    for conn in &delivery.slow {
        let (messages, bytes) = conn.waiting();
        service.metrics.slow_consumer(network);
        service.disconnect(
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
        let limits = service.plans.limits(conn.caller.grant.plan);
        if service
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
        service.metrics.refusal(network, true);
        let limits = service.plans.limits(conn.caller.grant.plan);
        let allowed = limits.requests_per_day.unwrap_or_default();
        let reason = format!(
            "daily request quota exceeded: this key may make {allowed} requests (calls and notifications) per day"
        );
        tracing::info!(connection = conn.id, key = %conn.caller.grant.id, reason, "closing a WebSocket");
        // What was sent within the quota still goes out, then the close frame.
        conn.close_after_queued(CloseCode::Policy, &reason);
        service.release(&conn);
    }
    service.metrics.notifications(network, total);
}

/// One network's event sink: its subscriptions and its filters.
pub struct NetworkEvents {
    service: Arc<Service>,
    network: usize,
}

impl NetworkEvents {
    pub fn new(service: Arc<Service>, network: usize) -> Self {
        Self { service, network }
    }
}

impl EventSink for NetworkEvents {
    fn wants(&self) -> Option<Wants> {
        let filters = &self.service.filters;
        let wants = self.service.hubs[self.network].wants() | filters.wants(self.network);
        (wants.heads || wants.logs || filters.has_any(self.network)).then_some(wants)
    }

    fn block(&self, event: &BlockEvent) {
        let mut delivery = Delivery::new(&self.service);
        self.service.hubs[self.network].deliver(event, &mut |conn, id, result| {
            delivery.push(conn, id, result)
        });
        self.service.filters.deliver(self.network, event);
        settle(&self.service, self.network, delivery);
    }

    fn syncing(&self, status: Syncing) {
        let Some(hub) = self.service.hubs.get(self.network) else {
            return;
        };
        let mut delivery = Delivery::new(&self.service);
        let mut push =
            |conn: &Arc<Connection>, id: &SubId, result: &Arc<str>| delivery.push(conn, id, result);
        match hub.set_syncing(syncing_json(status), &mut push) {
            Ok(()) => settle(&self.service, self.network, delivery),
            Err(e) => tracing::warn!(network = self.network, "sending the sync status: {e}"),
        }
    }
}
