//! What `/metrics` shows, in Prometheus' text format: calls by network, method and outcome,
//! their latency, forwards to partners, rate-limit refusals, refusals by a key's allowlists
//! (by rule), each network's head, and what is
//! pushed: WebSocket connections, subscriptions and filters, notifications, slow consumers;
//! each network's lag behind the best head known (`/ready`); Redis' answers, failures and
//! latency, and what the limiter did while Redis was unreachable.

use crate::access::allowlists::Rule;
use std::{
    collections::HashMap,
    fmt::Write,
    sync::{
        Mutex, PoisonError,
        atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering},
    },
    time::Duration,
};

/// How a call ended, as counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Error,
    /// Answered by the network's partner.
    Forwarded,
    RateLimited,
    /// The key was revoked while its WebSocket stayed open.
    Revoked,
    /// Refused by the key's allowlists.
    NotAllowed,
}

impl Outcome {
    const ALL: [Self; 6] = [
        Self::Ok,
        Self::Error,
        Self::Forwarded,
        Self::RateLimited,
        Self::Revoked,
        Self::NotAllowed,
    ];

    fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Forwarded => "forwarded",
            Self::RateLimited => "rate_limited",
            Self::Revoked => "revoked",
            Self::NotAllowed => "not_allowed",
        }
    }
}

/// Latency bucket bounds, in seconds.
const BUCKETS: [f64; 12] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5, 10.0,
];

#[derive(Debug, Default, Clone)]
struct Series {
    outcomes: [u64; Outcome::ALL.len()],
    buckets: [u64; BUCKETS.len()],
    seconds: f64,
    count: u64,
}

/// A network's head and sync state, as last read by the server's watcher.
#[derive(Debug, Default)]
pub struct NetworkStatus {
    pub head: AtomicU64,
    pub has_head: AtomicBool,
    pub syncing: AtomicBool,
    /// What `/ready` judges by (see `ready`).
    pub readiness: crate::ready::Readiness,
}

/// The Redis stores, in `RedisStats`' order.
#[derive(Debug, Clone, Copy)]
pub enum Store {
    Limits = 0,
    Keys = 1,
}

const STORES: [&str; 2] = ["limits", "keys"];

/// How Redis answered (`limits_store`, `keys_store`).
#[derive(Debug, Default)]
pub struct RedisStats {
    answered: [AtomicU64; 2],
    failed: [AtomicU64; 2],
    /// The limits store's round trips: bucket counts, total seconds, count.
    latency: Mutex<([u64; BUCKETS.len()], f64, u64)>,
    /// Calls admitted by this process's own limiter because Redis was unreachable.
    fallback_local: AtomicU64,
    /// Calls refused because Redis was unreachable (`limits_fallback = "refuse"`).
    refused_unavailable: AtomicU64,
    /// Calls admitted from units Redis leased to this replica (charged when granted).
    from_lease: AtomicU64,
}

impl RedisStats {
    pub fn answered(&self, store: Store, took: Option<Duration>) {
        self.answered[store as usize].fetch_add(1, Ordering::Relaxed);
        if let Some(took) = took {
            let seconds = took.as_secs_f64();
            let mut latency = self.latency.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(bucket) = BUCKETS.iter().position(|bound| seconds <= *bound) {
                latency.0[bucket] += 1;
            }
            latency.1 += seconds;
            latency.2 += 1;
        }
    }

    pub fn failed(&self, store: Store) {
        self.failed[store as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn fell_back(&self, refused: bool) {
        if refused {
            self.refused_unavailable.fetch_add(1, Ordering::Relaxed);
        } else {
            self.fallback_local.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn admitted_from_lease(&self) {
        self.from_lease.fetch_add(1, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String) {
        out.push_str("# HELP quarry_redis_requests_total Requests to Redis by store and result (failed: error or timeout).\n# TYPE quarry_redis_requests_total counter\n");
        for (i, store) in STORES.iter().enumerate() {
            for (result, counts) in [("answered", &self.answered), ("failed", &self.failed)] {
                let _ = writeln!(
                    out,
                    "quarry_redis_requests_total{{store=\"{store}\",result=\"{result}\"}} {}",
                    counts[i].load(Ordering::Relaxed)
                );
            }
        }
        out.push_str("# HELP quarry_redis_seconds Round trips to the limits store in Redis.\n# TYPE quarry_redis_seconds histogram\n");
        let (buckets, seconds, count) =
            *self.latency.lock().unwrap_or_else(PoisonError::into_inner);
        let mut cumulative = 0;
        for (bound, n) in BUCKETS.iter().zip(buckets) {
            cumulative += n;
            let _ = writeln!(
                out,
                "quarry_redis_seconds_bucket{{le=\"{bound}\"}} {cumulative}"
            );
        }
        let _ = writeln!(
            out,
            "quarry_redis_seconds_bucket{{le=\"+Inf\"}} {count}\nquarry_redis_seconds_sum {seconds}\nquarry_redis_seconds_count {count}"
        );
        out.push_str("# HELP quarry_limiter_unavailable_total Calls that came while the limits store was unreachable, by what they got.\n# TYPE quarry_limiter_unavailable_total counter\n");
        let _ = writeln!(
            out,
            "quarry_limiter_unavailable_total{{action=\"local\"}} {}\nquarry_limiter_unavailable_total{{action=\"refused\"}} {}",
            self.fallback_local.load(Ordering::Relaxed),
            self.refused_unavailable.load(Ordering::Relaxed)
        );
        out.push_str("# HELP quarry_limiter_allowance_total Calls admitted from units leased to this replica by Redis (charged there when granted), without waiting for a round trip.\n# TYPE quarry_limiter_allowance_total counter\n");
        let _ = writeln!(
            out,
            "quarry_limiter_allowance_total {}",
            self.from_lease.load(Ordering::Relaxed)
        );
    }
}

/// What one network pushes to clients.
#[derive(Debug, Default)]
struct Pushes {
    websockets: AtomicI64,
    /// By kind: newHeads, logs, syncing.
    subscriptions: [AtomicI64; 3],
    filters: AtomicI64,
    notifications: AtomicU64,
    slow_consumers: AtomicU64,
}

/// The kinds of subscription, in `Pushes::subscriptions` order.
const SUBSCRIPTION_KINDS: [&str; 3] = ["newHeads", "logs", "syncing"];

#[derive(Debug)]
pub struct Metrics {
    networks: Vec<String>,
    /// Per network: per method.
    calls: Vec<Mutex<HashMap<String, Series>>>,
    /// Per network: (method, answered) -> count.
    forwards: Vec<Mutex<HashMap<(String, bool), u64>>>,
    /// Per network: transactions sent through quarry, by outcome.
    transactions: Vec<Mutex<HashMap<&'static str, u64>>>,
    /// Per network: [rate, daily].
    refusals: Vec<[AtomicU64; 2]>,
    /// Per network: per allowlist rule (`Rule::ALL`).
    not_allowed: Vec<[AtomicU64; Rule::ALL.len()]>,
    pub status: Vec<NetworkStatus>,
    pushes: Vec<Pushes>,
    pub redis: std::sync::Arc<RedisStats>,
}

impl Metrics {
    pub fn new(networks: Vec<String>) -> Self {
        let n = networks.len();
        Self {
            networks,
            calls: (0..n).map(|_| Mutex::default()).collect(),
            forwards: (0..n).map(|_| Mutex::default()).collect(),
            transactions: (0..n).map(|_| Mutex::default()).collect(),
            refusals: (0..n).map(|_| Default::default()).collect(),
            not_allowed: (0..n).map(|_| Default::default()).collect(),
            status: (0..n).map(|_| NetworkStatus::default()).collect(),
            pushes: (0..n).map(|_| Pushes::default()).collect(),
            redis: std::sync::Arc::default(),
        }
    }

    pub fn ws_connection(&self, network: usize, change: i64) {
        if let Some(pushes) = self.pushes.get(network) {
            pushes.websockets.fetch_add(change, Ordering::Relaxed);
        }
    }

    /// A subscription of kind `slot` (see `SUBSCRIPTION_KINDS`) started (1) or ended (-1).
    pub fn subscription(&self, network: usize, slot: usize, change: i64) {
        if let Some(gauge) = self
            .pushes
            .get(network)
            .and_then(|p| p.subscriptions.get(slot))
        {
            gauge.fetch_add(change, Ordering::Relaxed);
        }
    }

    pub fn filters(&self, network: usize, change: i64) {
        if let Some(pushes) = self.pushes.get(network) {
            pushes.filters.fetch_add(change, Ordering::Relaxed);
        }
    }

    pub fn notifications(&self, network: usize, count: u64) {
        if let Some(pushes) = self.pushes.get(network) {
            pushes.notifications.fetch_add(count, Ordering::Relaxed);
        }
    }

    pub fn slow_consumer(&self, network: usize) {
        if let Some(pushes) = self.pushes.get(network) {
            pushes.slow_consumers.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts one call; `method` must be a served method's name (or "unknown"), so the
    /// number of series stays bounded.
    pub fn call(&self, network: usize, method: &str, outcome: Outcome, took: Duration) {
        let Some(calls) = self.calls.get(network) else {
            return;
        };
        let mut calls = calls.lock().unwrap_or_else(PoisonError::into_inner);
        let series = match calls.get_mut(method) {
            Some(series) => series,
            None => calls.entry(method.to_string()).or_default(),
        };
        let slot = Outcome::ALL.iter().position(|o| *o == outcome).unwrap_or(0);
        series.outcomes[slot] += 1;
        let seconds = took.as_secs_f64();
        if let Some(bucket) = BUCKETS.iter().position(|bound| seconds <= *bound) {
            series.buckets[bucket] += 1;
        }
        series.seconds += seconds;
        series.count += 1;
    }

    pub fn forward(&self, network: usize, method: &str, answered: bool) {
        if let Some(forwards) = self.forwards.get(network) {
            *forwards
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry((method.to_string(), answered))
                .or_default() += 1;
        }
    }

    /// A transaction sent through quarry and how it ended: `sent` (the upstream took it),
    /// `rejected` (the upstream answered an error), `refused` (quarry's checks), `unavailable`
    /// (no answer from the upstream) or `no_upstream`.
    pub fn transaction(&self, network: usize, outcome: &'static str) {
        if let Some(counts) = self.transactions.get(network) {
            *counts
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(outcome)
                .or_default() += 1;
        }
    }

    pub fn refusal(&self, network: usize, daily: bool) {
        if let Some(counts) = self.refusals.get(network) {
            counts[usize::from(daily)].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A request or call refused by a key's allowlist `rule`.
    pub fn not_allowed(&self, network: usize, rule: Rule) {
        let slot = Rule::ALL.iter().position(|r| *r == rule).unwrap_or(0);
        if let Some(counts) = self.not_allowed.get(network) {
            counts[slot].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The Prometheus text exposition of everything counted so far.
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str("# HELP quarry_requests_total JSON-RPC calls by network, method and outcome.\n# TYPE quarry_requests_total counter\n");
        let snapshot: Vec<Vec<(String, Series)>> = self
            .calls
            .iter()
            .map(|calls| {
                let calls = calls.lock().unwrap_or_else(PoisonError::into_inner);
                let mut rows: Vec<(String, Series)> = calls
                    .iter()
                    .map(|(method, series)| (method.clone(), series.clone()))
                    .collect();
                rows.sort_by(|a, b| a.0.cmp(&b.0));
                rows
            })
            .collect();
        for (network, rows) in self.networks.iter().zip(&snapshot) {
            for (method, series) in rows {
                for (outcome, count) in Outcome::ALL.iter().zip(series.outcomes) {
                    if count > 0 {
                        let _ = writeln!(
                            out,
                            "quarry_requests_total{{network=\"{network}\",method=\"{method}\",outcome=\"{}\"}} {count}",
                            outcome.label()
                        );
                    }
                }
            }
        }
        out.push_str("# HELP quarry_request_duration_seconds Time to answer a call, from the key check to the answer.\n# TYPE quarry_request_duration_seconds histogram\n");
        for (network, rows) in self.networks.iter().zip(&snapshot) {
            for (method, series) in rows {
                let labels = format!("network=\"{network}\",method=\"{method}\"");
                let mut cumulative = 0;
                for (bound, count) in BUCKETS.iter().zip(series.buckets) {
                    cumulative += count;
                    let _ = writeln!(
                        out,
                        "quarry_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {cumulative}"
                    );
                }
                let _ = writeln!(
                    out,
                    "quarry_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}\nquarry_request_duration_seconds_sum{{{labels}}} {}\nquarry_request_duration_seconds_count{{{labels}}} {}",
                    series.count, series.seconds, series.count
                );
            }
        }
        out.push_str("# HELP quarry_forwards_total Calls sent to a network's partner, by whether the partner answered.\n# TYPE quarry_forwards_total counter\n");
        for (network, forwards) in self.networks.iter().zip(&self.forwards) {
            let forwards = forwards.lock().unwrap_or_else(PoisonError::into_inner);
            let mut rows: Vec<_> = forwards.iter().collect();
            rows.sort();
            for ((method, answered), count) in rows {
                let result = if *answered { "answered" } else { "failed" };
                let _ = writeln!(
                    out,
                    "quarry_forwards_total{{network=\"{network}\",method=\"{method}\",result=\"{result}\"}} {count}"
                );
            }
        }
        out.push_str("# HELP quarry_transactions_total Transactions sent through quarry to a network's transactions upstream, by outcome.\n# TYPE quarry_transactions_total counter\n");
        for (network, counts) in self.networks.iter().zip(&self.transactions) {
            let counts = counts.lock().unwrap_or_else(PoisonError::into_inner);
            let mut rows: Vec<_> = counts.iter().collect();
            rows.sort();
            for (outcome, count) in rows {
                let _ = writeln!(
                    out,
                    "quarry_transactions_total{{network=\"{network}\",outcome=\"{outcome}\"}} {count}"
                );
            }
        }
        out.push_str("# HELP quarry_rate_limited_total Calls refused for a key's rate or daily quota.\n# TYPE quarry_rate_limited_total counter\n");
        for (network, counts) in self.networks.iter().zip(&self.refusals) {
            for (reason, count) in ["rate", "daily"].iter().zip(counts) {
                let _ = writeln!(
                    out,
                    "quarry_rate_limited_total{{network=\"{network}\",reason=\"{reason}\"}} {}",
                    count.load(Ordering::Relaxed)
                );
            }
        }
        out.push_str("# HELP quarry_key_refusals_total Requests and calls refused by a key's allowlists or its secret, by rule.\n# TYPE quarry_key_refusals_total counter\n");
        for (network, counts) in self.networks.iter().zip(&self.not_allowed) {
            for (rule, count) in Rule::ALL.iter().zip(counts) {
                let _ = writeln!(
                    out,
                    "quarry_key_refusals_total{{network=\"{network}\",rule=\"{}\"}} {}",
                    rule.label(),
                    count.load(Ordering::Relaxed)
                );
            }
        }
        out.push_str("# HELP quarry_head_block The highest block ingested, per network.\n# TYPE quarry_head_block gauge\n");
        for (network, status) in self.networks.iter().zip(&self.status) {
            let _ = writeln!(
                out,
                "quarry_head_block{{network=\"{network}\"}} {}",
                status.head.load(Ordering::Relaxed)
            );
        }
        out.push_str("# HELP quarry_syncing Whether an ingest is importing towards a block above the head.\n# TYPE quarry_syncing gauge\n");
        for (network, status) in self.networks.iter().zip(&self.status) {
            let _ = writeln!(
                out,
                "quarry_syncing{{network=\"{network}\"}} {}",
                u8::from(status.syncing.load(Ordering::Relaxed))
            );
        }
        out.push_str("# HELP quarry_best_known_head The highest head this replica knows of (peers, the followed upstream), per network.\n# TYPE quarry_best_known_head gauge\n");
        for (network, status) in self.networks.iter().zip(&self.status) {
            let view = status.readiness.view();
            let _ = writeln!(
                out,
                "quarry_best_known_head{{network=\"{network}\"}} {}",
                view.best_known.unwrap_or(0)
            );
        }
        out.push_str("# HELP quarry_head_lag Blocks the head is behind the best known head, per network.\n# TYPE quarry_head_lag gauge\n");
        for (network, status) in self.networks.iter().zip(&self.status) {
            let _ = writeln!(
                out,
                "quarry_head_lag{{network=\"{network}\"}} {}",
                status.readiness.view().lag()
            );
        }
        self.render_pushes(&mut out);
        self.redis.render(&mut out);
        out
    }

    fn render_pushes(&self, out: &mut String) {
        let series = |out: &mut String,
                      name: &str,
                      kind: &str,
                      help: &str,
                      value: &dyn Fn(&Pushes) -> String| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (network, pushes) in self.networks.iter().zip(&self.pushes) {
                let _ = writeln!(out, "{name}{{network=\"{network}\"}} {}", value(pushes));
            }
        };
        series(
            out,
            "quarry_websocket_connections",
            "gauge",
            "Open WebSocket connections.",
            &|p| p.websockets.load(Ordering::Relaxed).to_string(),
        );
        let _ = writeln!(
            out,
            "# HELP quarry_subscriptions Active eth_subscribe subscriptions, by kind.\n# TYPE quarry_subscriptions gauge"
        );
        for (network, pushes) in self.networks.iter().zip(&self.pushes) {
            for (kind, gauge) in SUBSCRIPTION_KINDS.iter().zip(&pushes.subscriptions) {
                let _ = writeln!(
                    out,
                    "quarry_subscriptions{{network=\"{network}\",kind=\"{kind}\"}} {}",
                    gauge.load(Ordering::Relaxed)
                );
            }
        }
        series(
            out,
            "quarry_filters",
            "gauge",
            "Installed polling filters (eth_newFilter, eth_newBlockFilter).",
            &|p| p.filters.load(Ordering::Relaxed).to_string(),
        );
        series(
            out,
            "quarry_notifications_total",
            "counter",
            "Subscription notifications queued for sending.",
            &|p| p.notifications.load(Ordering::Relaxed).to_string(),
        );
        series(
            out,
            "quarry_slow_consumers_total",
            "counter",
            "WebSocket connections closed because they did not read their notifications fast enough.",
            &|p| p.slow_consumers.load(Ordering::Relaxed).to_string(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_counts_calls_latency_forwards_and_refusals() {
        let metrics = Metrics::new(vec!["main".into(), "side".into()]);
        metrics.call(0, "eth_call", Outcome::Ok, Duration::from_micros(300));
        metrics.call(0, "eth_call", Outcome::Error, Duration::from_millis(3));
        metrics.call(1, "eth_getLogs", Outcome::RateLimited, Duration::ZERO);
        metrics.forward(0, "eth_getBlockByNumber", true);
        metrics.refusal(1, false);
        metrics.status[0].head.store(64, Ordering::Relaxed);
        metrics.subscription(0, 1, 1);
        metrics.subscription(0, 1, 1);
        metrics.subscription(0, 0, 1);
        metrics.subscription(0, 0, -1);
        metrics.filters(1, 1);
        metrics.notifications(0, 7);
        metrics.slow_consumer(0);
        metrics.ws_connection(0, 1);
        let text = metrics.render();
        for line in [
            r#"quarry_requests_total{network="main",method="eth_call",outcome="ok"} 1"#,
            r#"quarry_requests_total{network="main",method="eth_call",outcome="error"} 1"#,
            r#"quarry_requests_total{network="side",method="eth_getLogs",outcome="rate_limited"} 1"#,
            r#"quarry_request_duration_seconds_bucket{network="main",method="eth_call",le="0.0005"} 1"#,
            r#"quarry_request_duration_seconds_bucket{network="main",method="eth_call",le="0.005"} 2"#,
            r#"quarry_request_duration_seconds_count{network="main",method="eth_call"} 2"#,
            r#"quarry_forwards_total{network="main",method="eth_getBlockByNumber",result="answered"} 1"#,
            r#"quarry_rate_limited_total{network="side",reason="rate"} 1"#,
            r#"quarry_head_block{network="main"} 64"#,
            r#"quarry_syncing{network="side"} 0"#,
            r#"quarry_subscriptions{network="main",kind="logs"} 2"#,
            r#"quarry_filters{network="side"} 1"#,
            r#"quarry_notifications_total{network="main"} 7"#,
            r#"quarry_slow_consumers_total{network="main"} 1"#,
            r#"quarry_websocket_connections{network="main"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line}\n{text}");
        }
    }
}
