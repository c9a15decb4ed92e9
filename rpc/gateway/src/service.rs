//! The service around the nodes: which networks are served on which hosts, the live key ring,
//! rate limits, partners, metrics, subscriptions and filters, open WebSockets, and the watcher
//! that keeps keys and network status fresh.

use crate::{
    access::caller::Network,
    access::keys::{KeyError, KeyRing, KeySource},
    config::{Config, Plans},
    limits::local::Limiter,
    limits::weights::Weights,
    metrics::{Metrics, Store},
    subscriptions::connections::{Connection, Connections},
    subscriptions::filters::Filters,
    subscriptions::hub::Hub,
    subscriptions::kind::{SubId, SubKind, new_id},
};
use quarry_eth::RpcError;
use std::{
    sync::{Arc, atomic::Ordering},
    time::Duration,
};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

/// How often keys and network status are re-read.
pub const WATCH_INTERVAL: Duration = Duration::from_millis(500);

/// Everything the HTTP gate and the call layer share.
#[derive(Debug)]
pub struct Service {
    pub networks: Vec<Network>,
    pub keys: KeyRing,
    pub plans: Plans,
    pub limiter: Limiter,
    pub weights: Weights,
    pub metrics: Metrics,
    pub forward_timeout: Duration,
    pub transactions_timeout: Duration,
    /// The clients of the partners, peers and transactions upstreams, kept between calls.
    pub remotes: crate::call::remotes::Remotes,
    pub max_response_bytes: u32,
    /// Per network: its subscriptions.
    pub hubs: Vec<Hub>,
    pub filters: Filters,
    pub connections: Connections,
    pub max_subscriptions_per_connection: usize,
    pub ready_limits: crate::ready::ReadyLimits,
}

impl Service {
    /// The service of `networks` as `config` sets it up; with Redis stores, must run inside
    /// the server's runtime.
    pub fn new(config: &Config, networks: Vec<Network>) -> Result<Self, String> {
        let keys = KeyRing::new(&config.keys, KeySource::of(config)?).map_err(|e| e.to_string())?;
        let metrics = Metrics::new(networks.iter().map(|n| n.name.clone()).collect());
        let service = Self {
            keys,
            plans: config.plans.clone(),
            limiter: Limiter::new(config, metrics.redis.clone())?,
            weights: Weights::new(&config.weights),
            metrics,
            forward_timeout: Duration::from_millis(config.forward_timeout_ms),
            transactions_timeout: Duration::from_millis(config.transactions_timeout_ms),
            remotes: Default::default(),
            max_response_bytes: config.max_response_bytes,
            hubs: networks.iter().map(|_| Hub::default()).collect(),
            filters: Filters::new(config, networks.len()),
            connections: Connections::default(),
            max_subscriptions_per_connection: config.max_subscriptions_per_connection,
            networks,
            ready_limits: crate::ready::ReadyLimits {
                max_head_lag: config.max_head_lag,
                max_head_age: Duration::from_secs(config.max_head_age_s),
                min_free_mb: config.min_free_mb,
            },
        };
        service.refresh_status();
        Ok(service)
    }

    /// The network that answers `host` (lowercase, without port).
    pub fn network_for_host(&self, host: &str) -> Option<usize> {
        self.networks
            .iter()
            .position(|n| n.hosts.is_empty() || n.hosts.iter().any(|h| h == host))
    }

    /// Re-reads each network's head and sync state, and its datadir's free space. Blocking:
    /// database reads.
    pub fn refresh_status(&self) {
        for (network, status) in self.networks.iter().zip(&self.metrics.status) {
            let free = quarry_storage::free_space(network.db.datadir()).ok();
            status.readiness.observe_free(free);
            let read = network.db.reader().and_then(|tx| {
                let head = tx.head()?;
                let syncing = match (head, tx.sync_target()?) {
                    (Some((head, _)), Some(target)) => {
                        target.block > head && quarry_eth::process_alive(target.pid)
                    }
                    _ => false,
                };
                Ok((head, syncing, tx.upstream_head()?))
            });
            match read {
                Ok((head, syncing, upstream)) => {
                    status
                        .head
                        .store(head.map_or(0, |(n, _)| n), Ordering::Relaxed);
                    status.has_head.store(head.is_some(), Ordering::Relaxed);
                    status.syncing.store(syncing, Ordering::Relaxed);
                    status.readiness.observe_head(
                        head.map(|(n, _)| n),
                        upstream.map(|u| u.block),
                        std::time::Instant::now(),
                    );
                }
                Err(e) => {
                    tracing::warn!(network = %network.name, "cannot read the network's head: {e}");
                    status.has_head.store(false, Ordering::Relaxed);
                }
            }
        }
    }

    /// `/ready`'s answer: every network's readiness, and whether all are ready.
    pub fn readiness(&self) -> (bool, Vec<crate::ready::NetworkReadiness>) {
        let networks: Vec<_> = self
            .networks
            .iter()
            .zip(&self.metrics.status)
            .map(|(network, status)| {
                crate::ready::judge(&network.name, status.readiness.view(), self.ready_limits)
            })
            .collect();
        (networks.iter().all(|n| n.ready), networks)
    }

    /// Asks every network's peers for their head, once per `WATCH_INTERVAL`, until the
    /// runtime stops. A peer that does not answer within a second is skipped that round.
    fn watch_peers(self: &Arc<Self>) {
        for (index, network) in self.networks.iter().enumerate() {
            if network.peers.is_empty() {
                continue;
            }
            let service = self.clone();
            tokio::spawn(async move {
                let mut ticks = tokio::time::interval(WATCH_INTERVAL);
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                let peers = service.networks[index].peers.clone();
                loop {
                    ticks.tick().await;
                    let service = &service;
                    let asked = peers.iter().map(|url| async move {
                        let head = service.remotes.peer_head(url, Duration::from_secs(1)).await;
                        head.map_err(|why| {
                            tracing::debug!(network = %service.networks[index].name, peer = %url, "peer head: {why}");
                        })
                    });
                    let heads = futures_util::future::join_all(asked).await;
                    for (i, head) in heads.into_iter().enumerate() {
                        let head = head.ok();
                        service.metrics.status[index]
                            .readiness
                            .observe_peer(i, peers.len(), head);
                    }
                }
            });
        }
    }

    /// Keeps the key ring and network status fresh until the runtime stops.
    pub fn watch(self: &Arc<Self>) {
        self.watch_peers();
        let service = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(WATCH_INTERVAL);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // Whether the key store failed last time: a failure is logged once, not per tick.
            let failing = Arc::new(std::sync::atomic::AtomicBool::new(false));
            loop {
                ticks.tick().await;
                let (service, failing) = (service.clone(), failing.clone());
                let _ = tokio::task::spawn_blocking(move || {
                    match service.keys.refresh() {
                        Ok(asked_redis) => {
                            if asked_redis {
                                service.metrics.redis.answered(Store::Keys, None);
                            }
                            if failing.swap(false, Ordering::Relaxed) {
                                tracing::info!("the key store answers again");
                            }
                        }
                        Err(e) => {
                            if matches!(e, KeyError::Redis(_)) {
                                service.metrics.redis.failed(Store::Keys);
                            }
                            if failing.swap(true, Ordering::Relaxed) {
                                tracing::debug!("keeping the keys read before: {e}");
                            } else {
                                tracing::warn!("keeping the keys read before: {e}");
                            }
                        }
                    }
                    service.sweep();
                    service.refresh_status();
                })
                .await;
            }
        });
    }
}

impl Service {
    /// Reserves a subscription on `conn`: it is notified once `activate` ran after its id was
    /// queued.
    pub(crate) fn subscribe(&self, conn: &Connection, kind: SubKind) -> quarry_eth::Result<SubId> {
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

    /// eth_unsubscribe: whether `id` was one of `conn`'s subscriptions.
    pub(crate) fn unsubscribe(&self, conn: &Connection, id: &str) -> quarry_eth::Result<bool> {
        let network = conn.caller.network;
        let mut subs = conn.subscriptions();
        if let Some(kind) = subs.active.remove(id) {
            if let Some(hub) = self.hubs.get(network) {
                hub.remove(id);
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
            let ended: Vec<(SubId, SubKind)> = subs.active.drain().collect();
            hub.remove_all(ended.iter().map(|(id, _)| id));
            for (_, kind) in ended {
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
