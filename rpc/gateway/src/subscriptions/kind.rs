//! What a subscription or a filter is: its id, in geth's form, and what a subscription wants.

use quarry_eth::{Result, RpcError, log_filter::LogCriteria};
use std::sync::Arc;

/// A subscription or filter id: 16 random bytes in hex, as geth makes them.
pub type SubId = Arc<str>;

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
}
