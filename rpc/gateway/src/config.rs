//! `quarry serve`'s TOML configuration: where to listen, the networks and their host names,
//! the API keys and their plans' limits, request limits, partner forwarding, and optionally
//! the blocks that `safe` and `finalized` name.

pub use crate::limits::weights::WeightsConfig;
use serde::Deserialize;
use std::{
    collections::HashSet,
    net::SocketAddr,
    path::{Path, PathBuf},
};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Address and port of the one listener serving HTTP and WebSocket.
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// Largest request body (or WebSocket message) accepted, in bytes.
    #[serde(default = "default_max_request_bytes")]
    pub max_request_bytes: u32,
    /// Largest response body, in bytes.
    #[serde(default = "default_max_response_bytes")]
    pub max_response_bytes: u32,
    /// Most calls in one JSON-RPC batch.
    #[serde(default = "default_max_batch")]
    pub max_batch_requests: u32,
    #[serde(default = "default_max_connections")]
    pub max_connections: u32,
    /// Wall-clock limit of one eth_call, or of one whole eth_estimateGas, in ms.
    #[serde(default = "default_call_timeout_ms")]
    pub call_timeout_ms: u64,
    /// debug_trace*: most bytes of struct logs one request may produce (estimated while
    /// tracing); past it the trace stops with an error instead of exhausting memory.
    #[serde(default = "default_max_trace_bytes")]
    pub max_trace_bytes: usize,
    /// eth_getProof: how many blocks behind the head a proof may be asked for (its cost follows
    /// the state changed since that block).
    #[serde(default = "default_proof_window")]
    pub proof_window: u64,
    /// eth_getLogs: most logs in one answer; more is error -32005 with a range that fits.
    #[serde(default = "default_max_logs")]
    pub max_logs: usize,
    /// eth_getLogs: wall-clock limit of one query, in ms; past it, error -32005.
    #[serde(default = "default_logs_timeout_ms")]
    pub logs_timeout_ms: u64,
    /// eth_getLogs: most addresses plus topic entries in one filter.
    #[serde(default = "default_max_log_params")]
    pub max_log_params: usize,
    /// eth_getLogs: use the log index (`false`: scan every block's bloom, the reference the
    /// benchmark compares with).
    #[serde(default = "default_true")]
    pub log_index: bool,
    /// The block `safe` names; unset: the ingest flag's value, else the head.
    pub safe_block: Option<u64>,
    /// The block `finalized` names; unset: the ingest flag's value, else the head.
    pub finalized_block: Option<u64>,
    /// Keys written in the config itself (the operator's own); `quarry keys` manages the
    /// others in `keys_file`.
    #[serde(default)]
    pub keys: Vec<ApiKey>,
    /// The key store that `quarry keys` writes (only hashes of keys). Re-read while serving:
    /// added and revoked keys take effect within a second or two.
    pub keys_file: Option<PathBuf>,
    /// The networks served, each on its own host names. None: the one `--datadir`, on any host.
    #[serde(default)]
    pub networks: Vec<NetworkConfig>,
    /// Rate limits and daily quotas per plan.
    #[serde(default)]
    pub plans: Plans,
    /// How long a forward to a partner may take before quarry's own error is returned, in ms.
    #[serde(default = "default_forward_timeout_ms")]
    pub forward_timeout_ms: u64,
    /// How long the transactions upstream may take to answer, in ms (eth_sendRawTransactionSync
    /// adds the wait it asks for).
    #[serde(default = "default_transactions_timeout_ms")]
    pub transactions_timeout_ms: u64,
    /// Most reads waiting for the read pool; past it a read is refused as overload.
    #[serde(default = "default_max_queued_reads")]
    pub max_queued_reads: usize,
    /// Subscriptions (eth_subscribe) one WebSocket connection may hold at once.
    #[serde(default = "default_max_subscriptions_per_connection")]
    pub max_subscriptions_per_connection: usize,
    /// Polling filters (eth_newFilter, eth_newBlockFilter) one API key may hold at once.
    #[serde(default = "default_max_filters_per_key")]
    pub max_filters_per_key: usize,
    /// Seconds a filter lives without being polled (geth's deadline: 5 minutes).
    #[serde(default = "default_filter_timeout_secs")]
    pub filter_timeout_secs: u64,
    /// Most changes (logs or block hashes) a filter keeps between two polls; past it the
    /// filter is dropped and its next poll says so.
    #[serde(default = "default_max_filter_changes")]
    pub max_filter_changes: usize,
    /// Messages waiting to be sent on one WebSocket: past it (or past `ws_send_buffer_bytes`)
    /// a notification closes the connection as a slow consumer.
    #[serde(default = "default_ws_send_buffer_messages")]
    pub ws_send_buffer_messages: usize,
    /// Bytes waiting to be sent on one WebSocket (see `ws_send_buffer_messages`).
    #[serde(default = "default_ws_send_buffer_bytes")]
    pub ws_send_buffer_bytes: usize,
    /// How often each network's database is asked whether another process committed, in ms.
    #[serde(default = "default_new_block_poll_ms")]
    pub new_block_poll_ms: u64,
    /// What each method weighs against a key's rate and daily quota (`[weights]`).
    #[serde(default)]
    pub weights: WeightsConfig,
    /// A key's share of a pool's heavy jobs (eth_call, eth_estimateGas, eth_createAccessList,
    /// eth_getLogs): each pool keeps this many threads in reserve for keys running fewer heavy
    /// jobs than this, unless it is as many as the pool's heavy slots (one key may then fill
    /// the pool); unset: half the call pool's threads, at least 1.
    pub max_concurrent_heavy_per_key: Option<usize>,
    /// Threads of the pool that runs eth_call, eth_estimateGas and eth_createAccessList;
    /// unset: one per core.
    pub call_threads: Option<usize>,
    /// Threads of the pool that runs every other database read; unset: one per core.
    pub read_threads: Option<usize>,
    /// `/ready`: most blocks a network's head may be behind the best head this replica knows
    /// of (its peers', or the upstream head that `quarry follow` recorded) before it answers 503.
    #[serde(default = "default_max_head_lag")]
    pub max_head_lag: u64,
    /// `/ready`: seconds a network's head may stay unchanged while the best known head moves
    /// on before it answers 503.
    #[serde(default = "default_max_head_age_s")]
    pub max_head_age_s: u64,
    /// `/ready`: megabytes that must be free on a network's datadir's file system; under it
    /// the network answers 503, since a full disk stops its writer (ingest, follow).
    #[serde(default = "default_min_free_mb")]
    pub min_free_mb: u64,
    /// The `--datadir` network's peers (see `NetworkConfig::peers`).
    #[serde(default)]
    pub peers: Vec<String>,
    /// The `--datadir` network's transactions upstream (see `NetworkConfig::transactions_url`).
    pub transactions_url: Option<String>,
    /// The `--datadir` network's CORS origins (see `NetworkConfig::cors_origins`).
    #[serde(default = "default_cors_origins")]
    pub cors_origins: Vec<String>,
    /// `redis://host:port/db`: every key's rate and daily quota kept in Redis, shared by all
    /// replicas and kept across restarts. Unset: in this process only.
    pub limits_store: Option<String>,
    /// `redis://host:port/db`: the key store that `quarry keys --store` writes, kept in Redis
    /// and re-read by every replica (instead of `keys_file`).
    pub keys_store: Option<String>,
    /// What calls get while the `limits_store` cannot be reached: `local` (admitted under this
    /// process's own limiter) or `refuse` (error -32603, "rate limiter unavailable").
    #[serde(default)]
    pub limits_fallback: LimitsFallback,
    /// Longest wait for one Redis answer, in ms; past it Redis counts as unreachable.
    #[serde(default = "default_redis_timeout_ms")]
    pub redis_timeout_ms: u64,
}

/// See `Config::limits_fallback`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LimitsFallback {
    #[default]
    Local,
    Refuse,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKey {
    pub key: String,
    /// Who the key belongs to, for the operator's own reference.
    #[serde(default)]
    pub name: String,
    /// Config keys are the operator's own: `custom` unless set.
    #[serde(default = "default_config_key_plan")]
    pub plan: Plan,
    /// The networks the key may use (by name); unset: all.
    pub networks: Option<Vec<String>>,
}

/// One served network.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    pub name: String,
    /// Host names (without port) whose requests this network answers.
    pub hosts: Vec<String>,
    pub datadir: PathBuf,
    /// Checked against the chain stored in `datadir` at start.
    pub chain_id: Option<u64>,
    /// The served network this one is a rollup of: rollup_getInfo's ethContext is its head.
    pub rollup_of: Option<String>,
    /// A partner JSON-RPC endpoint (full URL, key included) that growth and custom keys'
    /// eth_getBlockByNumber, eth_getUncleByBlockHashAndIndex and eth_getTransactionReceipt go
    /// to when this network cannot answer them.
    pub partner_url: Option<String>,
    /// The JSON-RPC endpoint (http:// or https://, key included) that eth_sendRawTransaction,
    /// eth_sendRawTransactionSync, pending nonces, transactions quarry has not stored and
    /// txpool_* go to: a node with a transaction pool, such as the one `quarry follow` follows.
    /// None: this network takes no transactions.
    pub transactions_url: Option<String>,
    /// JSON-RPC endpoints serving the same chain (other replicas, the upstream), full URLs
    /// with a key: their `eth_blockNumber` is the best head `/ready` measures lag against.
    #[serde(default)]
    pub peers: Vec<String>,
    /// The pages on other origins that may call this network from a browser:
    /// `[scheme://]host[:port]`, the host possibly `*.name` for its subdomains; `["*"]` (the
    /// default): any page; `[]`: none. A request from a browser on another origin is refused
    /// (403) otherwise, WebSocket upgrades included.
    #[serde(default = "default_cors_origins")]
    pub cors_origins: Vec<String>,
}

/// What a key may do, by plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    Free,
    Growth,
    Custom,
}

impl Plan {
    pub fn name(self) -> &'static str {
        match self {
            Self::Free => "free",
            Self::Growth => "growth",
            Self::Custom => "custom",
        }
    }

    /// Whether requests may go to a partner during an outage (the spec: Growth and Custom).
    pub fn may_forward(self) -> bool {
        !matches!(self, Self::Free)
    }
}

impl std::str::FromStr for Plan {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "free" => Ok(Self::Free),
            "growth" => Ok(Self::Growth),
            "custom" => Ok(Self::Custom),
            other => Err(format!(
                "unknown plan {other:?}: use free, growth or custom"
            )),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plans {
    #[serde(default = "PlanLimits::free")]
    pub free: PlanLimits,
    #[serde(default = "PlanLimits::growth")]
    pub growth: PlanLimits,
    #[serde(default)]
    pub custom: PlanLimits,
}

impl Default for Plans {
    fn default() -> Self {
        Self {
            free: PlanLimits::free(),
            growth: PlanLimits::growth(),
            custom: PlanLimits::default(),
        }
    }
}

impl Plans {
    pub fn limits(&self, plan: Plan) -> &PlanLimits {
        match plan {
            Plan::Free => &self.free,
            Plan::Growth => &self.growth,
            Plan::Custom => &self.custom,
        }
    }
}

/// A plan's limits per key, in weight units (see `weights`: a cheap read is 1); unset means
/// unlimited. The config may call them `units_per_second` and `units_per_day`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanLimits {
    /// Weight units per second.
    #[serde(alias = "units_per_second")]
    pub requests_per_second: Option<u32>,
    /// Weight units per UTC day.
    #[serde(alias = "units_per_day")]
    pub requests_per_day: Option<u64>,
}

impl PlanLimits {
    fn free() -> Self {
        Self {
            requests_per_second: Some(10),
            requests_per_day: Some(100_000),
        }
    }

    fn growth() -> Self {
        Self {
            requests_per_second: Some(100),
            requests_per_day: Some(5_000_000),
        }
    }
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8545))
}
const fn default_max_request_bytes() -> u32 {
    5 << 20
}
const fn default_max_response_bytes() -> u32 {
    128 << 20
}
const fn default_max_batch() -> u32 {
    100
}
const fn default_proof_window() -> u64 {
    quarry_eth::DEFAULT_PROOF_WINDOW
}

const fn default_call_timeout_ms() -> u64 {
    5000
}
const fn default_max_trace_bytes() -> usize {
    64 << 20
}
const fn default_max_logs() -> usize {
    10_000
}
const fn default_logs_timeout_ms() -> u64 {
    10_000
}
const fn default_max_log_params() -> usize {
    5_000
}
const fn default_true() -> bool {
    true
}
const fn default_max_connections() -> u32 {
    1024
}
/// Whether `url` is one quarry can call: HTTP(S), or also WebSocket where `ws`.
fn is_upstream_url(url: &str, ws: bool) -> bool {
    url.starts_with("http://")
        || url.starts_with("https://")
        || (ws && crate::call::remotes::is_ws_url(url))
}
const fn default_transactions_timeout_ms() -> u64 {
    10_000
}
const fn default_forward_timeout_ms() -> u64 {
    5000
}
const fn default_max_queued_reads() -> usize {
    16_384
}
const fn default_max_subscriptions_per_connection() -> usize {
    1000
}
const fn default_max_filters_per_key() -> usize {
    100
}
const fn default_filter_timeout_secs() -> u64 {
    300
}
const fn default_max_filter_changes() -> usize {
    10_000
}
const fn default_ws_send_buffer_messages() -> usize {
    4096
}
const fn default_ws_send_buffer_bytes() -> usize {
    8 << 20
}
const fn default_new_block_poll_ms() -> u64 {
    10
}
const fn default_max_head_lag() -> u64 {
    5
}
const fn default_max_head_age_s() -> u64 {
    60
}
const fn default_min_free_mb() -> u64 {
    64
}
const fn default_redis_timeout_ms() -> u64 {
    100
}
fn default_cors_origins() -> Vec<String> {
    vec!["*".into()]
}
const fn default_config_key_plan() -> Plan {
    Plan::Custom
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("config {path}: {message}")]
    Invalid { path: String, message: String },
}

impl Config {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text).map_err(|message| ConfigError::Invalid {
            path: path.display().to_string(),
            message,
        })
    }

    /// Parses and checks a config; the error says what is wrong and where.
    pub fn parse(text: &str) -> Result<Self, String> {
        let config: Self = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut seen = HashSet::new();
        for (i, key) in config.keys.iter().enumerate() {
            if key.key.is_empty()
                || !key
                    .key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(format!(
                    "keys[{i}]: a key must be non-empty and use only letters, digits, '-' and '_'"
                ));
            }
            if !seen.insert(key.key.as_str()) {
                return Err(format!(
                    "keys[{i}]: key {} is listed twice",
                    redact(&key.key)
                ));
            }
            for network in key.networks.iter().flatten() {
                if !config.networks.iter().any(|n| &n.name == network) {
                    return Err(format!("keys[{i}]: no network is named {network:?}"));
                }
            }
        }
        crate::access::cors::CorsOrigins::parse(&config.cors_origins)
            .map_err(|e| format!("cors_origins: {e}"))?;
        for (i, network) in config.networks.iter().enumerate() {
            crate::access::cors::CorsOrigins::parse(&network.cors_origins)
                .map_err(|e| format!("networks[{i}].cors_origins: {e}"))?;
        }
        for (field, url) in [
            ("limits_store", &config.limits_store),
            ("keys_store", &config.keys_store),
        ] {
            if let Some(url) = url
                && !["redis://", "rediss://", "redis+unix://", "unix://"]
                    .iter()
                    .any(|scheme| url.starts_with(scheme))
            {
                return Err(format!(
                    "{field}: {url:?} is not a Redis URL (redis://host:port/db)"
                ));
            }
        }
        if config.keys_store.is_some() && config.keys_file.is_some() {
            return Err("keys_store and keys_file are both set: keep the key store in one".into());
        }
        if !config.peers.is_empty() && !config.networks.is_empty() {
            return Err("peers: with [[networks]], give each network its own peers instead".into());
        }
        if config.transactions_url.is_some() && !config.networks.is_empty() {
            return Err(
                "transactions_url: with [[networks]], give each network its own instead".into(),
            );
        }
        if let Some(url) = &config.transactions_url
            && !is_upstream_url(url, true)
        {
            return Err(
                "transactions_url must be an http://, https://, ws:// or wss:// URL".into(),
            );
        }
        let peers = std::iter::once(("peers".to_string(), &config.peers)).chain(
            config
                .networks
                .iter()
                .enumerate()
                .map(|(i, n)| (format!("networks[{i}] ({}): peers", n.name), &n.peers)),
        );
        for (field, urls) in peers {
            if let Some(url) = urls
                .iter()
                .find(|u| !(u.starts_with("http://") || u.starts_with("https://")))
            {
                return Err(format!(
                    "{field}: {url:?} is not an http:// or https:// URL"
                ));
            }
        }
        let mut names = HashSet::new();
        let mut hosts = HashSet::new();
        for (i, network) in config.networks.iter().enumerate() {
            if !names.insert(network.name.as_str()) {
                return Err(format!(
                    "networks[{i}]: the name {:?} is used twice",
                    network.name
                ));
            }
            if network.hosts.is_empty() {
                return Err(format!("networks[{i}] ({}): no hosts", network.name));
            }
            for host in &network.hosts {
                if !hosts.insert(host.to_ascii_lowercase()) {
                    return Err(format!(
                        "networks[{i}] ({}): host {host:?} belongs to two networks",
                        network.name
                    ));
                }
            }
            if let Some(l1) = &network.rollup_of
                && (l1 == &network.name || !config.networks.iter().any(|n| &n.name == l1))
            {
                return Err(format!(
                    "networks[{i}] ({}): rollup_of names no other network: {l1:?}",
                    network.name
                ));
            }
            for (name, url, ws) in [
                ("partner_url", &network.partner_url, false),
                ("transactions_url", &network.transactions_url, true),
            ] {
                if let Some(url) = url
                    && !is_upstream_url(url, ws)
                {
                    let schemes = if ws {
                        "an http://, https://, ws:// or wss://"
                    } else {
                        "an http:// or https://"
                    };
                    return Err(format!(
                        "networks[{i}] ({}): {name} must be {schemes} URL",
                        network.name
                    ));
                }
            }
        }
        Ok(config)
    }
}

/// A key as it may appear in logs: its first four characters only.
pub fn redact(key: &str) -> String {
    let shown: String = key.chars().take(4).collect();
    format!("{shown}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_keys() {
        let config = Config::parse(
            r#"
            safe_block = 40
            [[keys]]
            key = "abc123"
            name = "alice"
            "#,
        )
        .unwrap();
        assert_eq!(config.listen, default_listen());
        assert_eq!(config.safe_block, Some(40));
        assert_eq!(config.finalized_block, None);
        assert_eq!(config.keys[0].key, "abc123");
    }

    #[test]
    fn the_example_configs_parse() {
        let service = Config::parse(include_str!("../../../config/service.toml")).unwrap();
        assert_eq!(service.networks[0].hosts, ["devnet.localhost", "localhost"]);
        assert_eq!(service.plans.free.requests_per_second, Some(10));
        assert_eq!(service.keys[0].plan, Plan::Custom);
        Config::parse(include_str!("../../../config/dev.toml")).unwrap();
    }

    #[test]
    fn networks_are_checked() {
        let network = |name: &str, host: &str| {
            format!("[[networks]]\nname = \"{name}\"\nhosts = [\"{host}\"]\ndatadir = \"d\"\n")
        };
        let twice = format!("{}{}", network("a", "h"), network("a", "g"));
        assert!(Config::parse(&twice).unwrap_err().contains("used twice"));
        let shared = format!("{}{}", network("a", "h"), network("b", "H"));
        assert!(Config::parse(&shared).unwrap_err().contains("two networks"));
        let rollup = format!("{}rollup_of = \"x\"\n", network("a", "h"));
        assert!(Config::parse(&rollup).unwrap_err().contains("rollup_of"));
        let key = format!(
            "{}[[keys]]\nkey = \"k\"\nnetworks = [\"b\"]\n",
            network("a", "h")
        );
        assert!(Config::parse(&key).unwrap_err().contains("keys[0]"));
    }

    #[test]
    fn limits_are_in_weight_units_and_weights_change() {
        let config = Config::parse(
            "max_concurrent_heavy_per_key = 2\ncall_threads = 3\n[plans.free]\nunits_per_second = 20\nunits_per_day = 500\n[plans.growth]\nrequests_per_second = 7\n[weights.methods]\neth_call = 9\n",
        )
        .unwrap();
        assert_eq!(config.plans.free.requests_per_second, Some(20));
        assert_eq!(config.plans.free.requests_per_day, Some(500));
        assert_eq!(config.plans.growth.requests_per_second, Some(7));
        assert_eq!(config.plans.growth.requests_per_day, None);
        assert_eq!(config.weights.methods["eth_call"], 9);
        assert_eq!(config.weights.default, 1);
        assert_eq!(config.max_concurrent_heavy_per_key, Some(2));
        assert_eq!(config.call_threads, Some(3));
        let err = Config::parse("[weights]\neth_call = 9\n").unwrap_err();
        assert!(err.contains("eth_call"), "{err}");
    }

    #[test]
    fn bad_configs_say_where() {
        let err = Config::parse("[[keys]]\nkey = \"a b\"\n").unwrap_err();
        assert!(err.starts_with("keys[0]:"), "{err}");
        let err = Config::parse("[[keys]]\nkey = \"k1\"\n[[keys]]\nkey = \"k1\"\n").unwrap_err();
        assert!(err.contains("keys[1]") && !err.contains("k1\n"), "{err}");
        let err = Config::parse("listen = 5\n").unwrap_err();
        assert!(err.contains("listen"), "{err}");
        let err = Config::parse("lisen = \"127.0.0.1:1\"\n").unwrap_err();
        assert!(err.contains("lisen"), "{err}");
        let err = Config::parse("limits_store = \"localhost:6379\"\n").unwrap_err();
        assert!(err.starts_with("limits_store:"), "{err}");
        let err =
            Config::parse("keys_store = \"redis://h\"\nkeys_file = \"k.json\"\n").unwrap_err();
        assert!(err.contains("both"), "{err}");
        let err = Config::parse("peers = [\"localhost:8545\"]\n").unwrap_err();
        assert!(err.starts_with("peers:"), "{err}");
        let err = Config::parse("limits_fallback = \"open\"\n").unwrap_err();
        assert!(err.contains("limits_fallback"), "{err}");
    }
}
