//! The service around the nodes: which networks are served on which hosts, the live key ring,
//! rate limits, partners, metrics, subscriptions and filters, open WebSockets, and the watcher
//! that keeps keys and network status fresh.

use crate::{
    config::{Config, Plans},
    filters::Filters,
    keys::{KeyGrant, KeyRing},
    limits::RateLimiter,
    metrics::Metrics,
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
    pub db: Database,
}

/// Everything the HTTP gate and the call layer share.
#[derive(Debug)]
pub struct Service {
    pub networks: Vec<Network>,
    pub keys: KeyRing,
    pub plans: Plans,
    pub limiter: RateLimiter,
    pub weights: Weights,
    pub metrics: Metrics,
    pub forward_timeout: Duration,
    pub max_response_bytes: u32,
    /// Per network: its subscriptions.
    pub hubs: Vec<Hub>,
    pub filters: Filters,
    pub connections: Connections,
    pub max_subscriptions_per_connection: usize,
    pub max_request_bytes: u32,
    pub max_batch_requests: u32,
}

/// Who is calling on which network: attached to a request by the gate, read by the call layer
/// and the methods (for WebSocket calls it comes from the upgrade request).
#[derive(Debug, Clone)]
pub struct Caller {
    pub grant: KeyGrant,
    pub network: usize,
}

impl Service {
    pub fn new(config: &Config, networks: Vec<Network>) -> Result<Self, crate::keys::KeyError> {
        let keys = KeyRing::new(&config.keys, config.keys_file.clone())?;
        let metrics = Metrics::new(networks.iter().map(|n| n.name.clone()).collect());
        let service = Self {
            keys,
            plans: config.plans.clone(),
            limiter: RateLimiter::default(),
            weights: Weights::new(&config.weights),
            metrics,
            forward_timeout: Duration::from_millis(config.forward_timeout_ms),
            max_response_bytes: config.max_response_bytes,
            hubs: networks.iter().map(|_| Hub::default()).collect(),
            filters: Filters::new(config, networks.len()),
            connections: Connections::default(),
            max_subscriptions_per_connection: config.max_subscriptions_per_connection,
            networks,
            max_request_bytes: config.max_request_bytes,
            max_batch_requests: config.max_batch_requests,
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
                Ok((head, syncing))
            });
            match read {
                Ok((head, syncing)) => {
                    status
                        .head
                        .store(head.map_or(0, |(n, _)| n), Ordering::Relaxed);
                    status.has_head.store(head.is_some(), Ordering::Relaxed);
                    status.syncing.store(syncing, Ordering::Relaxed);
                }
                Err(e) => {
                    tracing::warn!(network = %network.name, "cannot read the network's head: {e}");
                    status.has_head.store(false, Ordering::Relaxed);
                }
            }
        }
    }

    /// Keeps the key ring and network status fresh until the runtime stops.
    pub fn watch(self: &Arc<Self>) {
        let service = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(WATCH_INTERVAL);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let service = service.clone();
                let _ = tokio::task::spawn_blocking(move || {
                    if let Err(e) = service.keys.refresh() {
                        tracing::warn!("keeping the keys read before: {e}");
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
#[derive(Debug)]
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
