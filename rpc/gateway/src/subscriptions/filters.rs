//! geth's polling filters, on both transports: eth_newFilter and eth_newBlockFilter install one,
//! the subscription watcher appends each new block's hash or matching logs to it (removed logs
//! too, marked), eth_getFilterChanges takes what gathered since the last poll, and a filter not
//! polled for `filter_timeout_secs` (geth: 5 minutes) is gone. A filter belongs to the key and
//! network that installed it: any other asker gets geth's `filter not found`.
//!
//! Each filter keeps at most `max_filter_changes` entries between polls; one that gathers more is
//! dropped, and its next poll says why (geth would keep growing). Logs are shared between the
//! filters that match them, so a filter costs a pointer per entry.

use crate::{
    access::keys::KeyGrant,
    config::Config,
    metrics::Metrics,
    subscriptions::kind::{SubId, new_id},
};
use alloy_primitives::B256;
use quarry_eth::{
    Result, RpcError,
    events::{BlockEvent, LogEvent, Wants},
    log_filter::{Filter as LogsFilter, LogCriteria},
};
use serde_json::value::RawValue;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::{Duration, Instant},
};

/// What a filter gathers.
#[derive(Debug)]
pub enum FilterKind {
    /// Hashes of new canonical blocks.
    Blocks(Vec<B256>),
    /// Matching logs of new blocks, and of removed ones marked `removed`.
    Logs {
        filter: Box<LogsFilter>,
        criteria: Box<LogCriteria>,
        changes: Vec<Arc<LogEvent>>,
    },
}

#[derive(Debug)]
struct Installed {
    grant: KeyGrant,
    kind: FilterKind,
    polled: Instant,
    /// More changes came than it may keep: its next poll is an error.
    overflowed: bool,
}

impl Installed {
    fn pending(&self) -> usize {
        match &self.kind {
            FilterKind::Blocks(hashes) => hashes.len(),
            FilterKind::Logs { changes, .. } => changes.len(),
        }
    }
}

/// The filters of every network.
#[derive(Debug)]
pub struct Filters {
    networks: Vec<Mutex<HashMap<SubId, Installed>>>,
    /// Filters per key id, across networks.
    per_key: Mutex<HashMap<Arc<str>, usize>>,
    timeout: Duration,
    max_per_key: usize,
    max_changes: usize,
}

impl Filters {
    pub fn new(config: &Config, networks: usize) -> Self {
        Self {
            networks: (0..networks).map(|_| Mutex::default()).collect(),
            per_key: Mutex::default(),
            timeout: Duration::from_secs(config.filter_timeout_secs),
            max_per_key: config.max_filters_per_key,
            max_changes: config.max_filter_changes,
        }
    }

    fn network(&self, network: usize) -> Result<MutexGuard<'_, HashMap<SubId, Installed>>> {
        self.networks
            .get(network)
            .map(|filters| filters.lock().unwrap_or_else(PoisonError::into_inner))
            .ok_or_else(|| RpcError::Internal(format!("no network {network}")))
    }

    fn counts(&self) -> MutexGuard<'_, HashMap<Arc<str>, usize>> {
        self.per_key.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Installs a filter for `grant` on `network`: its id.
    pub fn install(
        &self,
        network: usize,
        grant: &KeyGrant,
        kind: FilterKind,
        metrics: &Metrics,
    ) -> Result<SubId> {
        let mut filters = self.network(network)?;
        {
            let mut counts = self.counts();
            let count = counts.entry(grant.id.clone()).or_default();
            if *count >= self.max_per_key {
                return Err(RpcError::TooManyFilters(self.max_per_key));
            }
            *count += 1;
        }
        let id = new_id()?;
        filters.insert(
            id.clone(),
            Installed {
                grant: grant.clone(),
                kind,
                polled: Instant::now(),
                overflowed: false,
            },
        );
        metrics.filters(network, 1);
        Ok(id)
    }

    /// Forgets a removed filter in the per-key counts and the metrics.
    fn removed(&self, network: usize, filter: &Installed, metrics: &Metrics) {
        let mut counts = self.counts();
        if let Some(count) = counts.get_mut(&filter.grant.id) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&filter.grant.id);
            }
        }
        metrics.filters(network, -1);
    }

    /// The filter `id` if `key` installed it on this network and it has not expired (then it
    /// is removed).
    fn find<'a>(
        &self,
        filters: &'a mut HashMap<SubId, Installed>,
        network: usize,
        key: &str,
        id: &str,
        metrics: &Metrics,
    ) -> Result<&'a mut Installed> {
        let expired = match filters.get(id) {
            Some(filter) if &*filter.grant.id == key => filter.polled.elapsed() > self.timeout,
            _ => return Err(RpcError::FilterNotFound),
        };
        if expired {
            if let Some(filter) = filters.remove(id) {
                self.removed(network, &filter, metrics);
            }
            return Err(RpcError::FilterNotFound);
        }
        filters.get_mut(id).ok_or(RpcError::FilterNotFound)
    }

    /// eth_getFilterChanges: what gathered since the last poll.
    pub fn changes(
        &self,
        network: usize,
        key: &str,
        id: &str,
        metrics: &Metrics,
    ) -> Result<Box<RawValue>> {
        let mut filters = self.network(network)?;
        let filter = self.find(&mut filters, network, key, id, metrics)?;
        if filter.overflowed {
            if let Some(filter) = filters.remove(id) {
                self.removed(network, &filter, metrics);
            }
            return Err(RpcError::FilterOverflow(self.max_changes));
        }
        filter.polled = Instant::now();
        let json = match &mut filter.kind {
            FilterKind::Blocks(hashes) => serde_json::to_string(&std::mem::take(hashes))
                .map_err(|e| RpcError::Internal(e.to_string()))?,
            FilterKind::Logs { changes, .. } => {
                let changes = std::mem::take(changes);
                drop(filters);
                let mut json = String::with_capacity(
                    2 + changes.iter().map(|l| l.json.len() + 1).sum::<usize>(),
                );
                json.push('[');
                for (i, log) in changes.iter().enumerate() {
                    if i > 0 {
                        json.push(',');
                    }
                    json.push_str(&log.json);
                }
                json.push(']');
                json
            }
        };
        RawValue::from_string(json).map_err(|e| RpcError::Internal(e.to_string()))
    }

    /// eth_getFilterLogs: the filter object of log filter `id` (the query runs as eth_getLogs).
    pub fn logs_filter(
        &self,
        network: usize,
        key: &str,
        id: &str,
        metrics: &Metrics,
    ) -> Result<LogsFilter> {
        let mut filters = self.network(network)?;
        let filter = self.find(&mut filters, network, key, id, metrics)?;
        match &filter.kind {
            FilterKind::Logs { filter, .. } => Ok(LogsFilter::clone(filter)),
            // geth: only log filters have logs.
            FilterKind::Blocks(_) => Err(RpcError::FilterNotFound),
        }
    }

    /// eth_uninstallFilter: whether there was such a filter of `key`.
    pub fn uninstall(
        &self,
        network: usize,
        key: &str,
        id: &str,
        metrics: &Metrics,
    ) -> Result<bool> {
        let mut filters = self.network(network)?;
        match filters.get(id) {
            Some(filter) if &*filter.grant.id == key => {}
            _ => return Ok(false),
        }
        if let Some(filter) = filters.remove(id) {
            self.removed(network, &filter, metrics);
        }
        Ok(true)
    }

    /// What the filters of `network` want of each block.
    pub fn wants(&self, network: usize) -> Wants {
        let Ok(filters) = self.network(network) else {
            return Wants::default();
        };
        Wants {
            heads: false,
            logs: filters
                .values()
                .any(|f| matches!(f.kind, FilterKind::Logs { .. })),
        }
    }

    pub fn has_any(&self, network: usize) -> bool {
        self.network(network)
            .is_ok_and(|filters| !filters.is_empty())
    }

    /// Adds a block that joined or left the canonical chain to the filters of `network`.
    pub fn deliver(&self, network: usize, event: &BlockEvent) {
        let Ok(mut filters) = self.network(network) else {
            return;
        };
        for filter in filters.values_mut() {
            if filter.overflowed {
                continue;
            }
            match &mut filter.kind {
                FilterKind::Blocks(hashes) => {
                    // geth's block filters list new heads only.
                    if !event.removed {
                        hashes.push(event.hash);
                    }
                }
                FilterKind::Logs {
                    criteria, changes, ..
                } => changes.extend(
                    event
                        .logs
                        .iter()
                        .filter(|log| criteria.matches(&log.log, log.block))
                        .cloned(),
                ),
            }
            if filter.pending() > self.max_changes {
                filter.overflowed = true;
                match &mut filter.kind {
                    FilterKind::Blocks(hashes) => *hashes = Vec::new(),
                    FilterKind::Logs { changes, .. } => *changes = Vec::new(),
                }
            }
        }
    }

    /// Removes expired filters and those of keys no longer `live`.
    pub fn sweep(&self, live: impl Fn(&KeyGrant) -> bool, metrics: &Metrics) {
        for network in 0..self.networks.len() {
            let Ok(mut filters) = self.network(network) else {
                continue;
            };
            let gone: Vec<SubId> = filters
                .iter()
                .filter(|(_, f)| f.polled.elapsed() > self.timeout || !live(&f.grant))
                .map(|(id, _)| id.clone())
                .collect();
            for id in gone {
                if let Some(filter) = filters.remove(&id) {
                    self.removed(network, &filter, metrics);
                }
            }
        }
    }
}
