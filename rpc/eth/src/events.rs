//! What the node tells listeners about its chain: each block that joined the canonical chain
//! or left it, with its header and logs as JSON, and the sync status; and the `EventSink` that
//! the service's subscriptions and filters implement to receive them.

use crate::node::Syncing;
use alloy_primitives::{B256, Log};
use std::sync::Arc;

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

/// Where one network's events go. Called from that network's watcher thread only, in chain
/// order: every canonical block once, removed blocks (oldest first) before the new ones.
pub trait EventSink: Send + Sync {
    /// What the listeners want of each block; `None` when nobody listens at all (then blocks
    /// are not even read).
    fn wants(&self) -> Option<Wants>;
    /// A block joined or left the canonical chain.
    fn block(&self, event: &BlockEvent);
    /// The sync status, read at least once a second and after every commit.
    fn syncing(&self, status: Syncing);
}
