//! The service around the nodes: which networks are served on which hosts, the live key ring,
//! rate limits, partners, metrics, subscriptions and filters, open WebSockets, and the watcher
//! that keeps keys and network status fresh.

use crate::{
    config::{Config, Plans},
    filters::Filters,
    keys::{KeyError, KeyGrant, KeyRing, KeySource},
    limits::Limiter,
    metrics::{Metrics, Store},
    node::Node,
    subscriptions::Hub,
    weights::Weights,
    ws::Connections,
};
use jsonrpsee::{Extensions, types::ErrorObjectOwned};
use quarry_storage::Database;
use std::{
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

/// How often keys and network status are re-read.
pub const WATCH_INTERVAL: Duration = Duration::from_millis(500);

/// One served network, as the service layer sees it.
#[derive(Debug)]
pub struct Network {
    pub name: String,
    /// Lowercase host names; empty: any host (the single `--datadir` network).
    pub hosts: Vec<String>,
    pub partner_url: Option<String>,
    /// JSON-RPC endpoints of the same chain whose heads `/ready` compares with.
    pub peers: Vec<String>,
    pub db: Database,
}

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
    pub max_response_bytes: u32,
    /// Per network: its subscriptions.
    pub hubs: Vec<Hub>,
    pub filters: Filters,
    pub connections: Connections,
    pub max_subscriptions_per_connection: usize,
    pub max_head_lag: u64,
    pub max_head_age: Duration,
}

/// Who is calling on which network: attached to a request by the gate, read by the call layer
/// and the methods (for WebSocket calls it comes from the upgrade request).
#[derive(Debug, Clone)]
pub struct Caller {
    pub grant: KeyGrant,
    pub network: usize,
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
            max_response_bytes: config.max_response_bytes,
            hubs: networks.iter().map(|_| Hub::default()).collect(),
            filters: Filters::new(config, networks.len()),
            connections: Connections::default(),
            max_subscriptions_per_connection: config.max_subscriptions_per_connection,
            networks,
            max_head_lag: config.max_head_lag,
            max_head_age: Duration::from_secs(config.max_head_age_s),
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

    /// Re-reads each network's head and sync state. Blocking: database reads.
    pub fn refresh_status(&self) {
        for (network, status) in self.networks.iter().zip(&self.metrics.status) {
            let read = network.db.reader().and_then(|tx| {
                let head = tx.head()?;
                let syncing = match (head, tx.sync_target()?) {
                    (Some((head, _)), Some(target)) => {
                        target.block > head && crate::node::process_alive(target.pid)
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
                crate::ready::judge(
                    &network.name,
                    status.readiness.view(),
                    self.max_head_lag,
                    self.max_head_age,
                )
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
                    let asked = peers.iter().cloned().map(|url| {
                        tokio::task::spawn_blocking(move || {
                            let head = crate::calls::peer_head(&url, Duration::from_secs(1));
                            (url, head)
                        })
                    });
                    for (i, answer) in futures_util::future::join_all(asked)
                        .await
                        .into_iter()
                        .enumerate()
                    {
                        let head = match answer {
                            Ok((_, Ok(head))) => Some(head),
                            Ok((url, Err(why))) => {
                                tracing::debug!(network = %service.networks[index].name, peer = %url, "peer head: {why}");
                                None
                            }
                            Err(_) => None,
                        };
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

/// The nodes of the served networks: the methods' context.
#[derive(Debug, Clone)]
pub struct Networks(pub Vec<Arc<Node>>);

impl Networks {
    /// The node of the network the call came in on.
    pub fn of(&self, extensions: &Extensions) -> Result<Arc<Node>, ErrorObjectOwned> {
        extensions
            .get::<Caller>()
            .and_then(|caller| self.0.get(caller.network))
            .cloned()
            .ok_or_else(|| {
                ErrorObjectOwned::from(crate::RpcError::Internal(
                    "a call reached a method without a network".into(),
                ))
            })
    }
}
