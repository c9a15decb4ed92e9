//! `quarry serve`'s TOML configuration: where to listen, the API keys, request limits, and
//! optionally the blocks that `safe` and `finalized` name.

use serde::Deserialize;
use std::{collections::HashSet, net::SocketAddr, path::Path};

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
    #[serde(default)]
    pub keys: Vec<ApiKey>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKey {
    pub key: String,
    /// Who the key belongs to, for the operator's own reference.
    #[serde(default)]
    pub name: String,
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
const fn default_call_timeout_ms() -> u64 {
    5000
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
    fn bad_configs_say_where() {
        let err = Config::parse("[[keys]]\nkey = \"a b\"\n").unwrap_err();
        assert!(err.starts_with("keys[0]:"), "{err}");
        let err = Config::parse("[[keys]]\nkey = \"k1\"\n[[keys]]\nkey = \"k1\"\n").unwrap_err();
        assert!(err.contains("keys[1]") && !err.contains("k1\n"), "{err}");
        let err = Config::parse("listen = 5\n").unwrap_err();
        assert!(err.contains("listen"), "{err}");
        let err = Config::parse("lisen = \"127.0.0.1:1\"\n").unwrap_err();
        assert!(err.contains("lisen"), "{err}");
    }
}
