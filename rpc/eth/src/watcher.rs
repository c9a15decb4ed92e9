//! The watcher: one thread per network that turns the database's commits (appends and unwinds,
//! by whichever process writes) into `BlockEvent`s for an `EventSink`.
//!
//! Another process (`quarry ingest`, `quarry follow`) writes the database; `quarry serve` only
//! reads it. The watcher asks MDBX for its last commit id every poll interval (a read of the
//! meta pages, no snapshot). When it changed, the watcher opens a snapshot (through the `Node`,
//! so the caches follow unwinds as they do for requests) and compares its canonical chain with
//! the one of the snapshot it kept from the last change, which it holds open until then:
//!
//! - the common ancestor is the highest block whose hash both snapshots store at its height
//!   (for a chain that only grew, the old head itself, found with one lookup);
//! - every block above it in the old snapshot was removed: its logs go out with
//!   `removed: true`, read from the old snapshot, which still holds them, oldest block first
//!   (geth's order);
//! - then every block above it in the new snapshot, in order: its header and its logs.
//!
//! Two consecutive snapshots are compared however many commits landed between them (several
//! writers, or many commits in one poll interval), so each canonical block is sent exactly once
//! and never repeated, and a block that was canonical only between two polls is neither sent
//! nor removed. Reads and the JSON of events are made on the watcher's thread.

use crate::{
    events::{BlockEvent, EventSink, LogEvent, Wants},
    node::{Node, Reads, Snapshot},
    rpc_error::{Result, RpcError},
    types::{HeaderJson, LogJson, TxContext},
};
use alloy_primitives::B256;
use std::{
    sync::Arc,
    time::{Duration, Instant},
};

/// How often the sync status is re-read when nothing was committed (a killed ingest stops
/// syncing without a commit).
const SYNC_CHECK: Duration = Duration::from_secs(1);

/// Starts the watcher thread of network `network` (its index, for logs and the thread's name),
/// polling every `poll`.
pub fn watch(
    node: Arc<Node>,
    network: usize,
    sink: Arc<dyn EventSink>,
    poll: Duration,
) -> std::io::Result<()> {
    let watcher = Watcher {
        node,
        network,
        sink,
        seen: None,
        synced_at: None,
    };
    std::thread::Builder::new()
        .name(format!("quarry-watch-{network}"))
        .spawn(move || watcher.run(poll))?;
    Ok(())
}

/// What the watcher last saw: a snapshot, held open, and its head.
struct Seen {
    snapshot: Snapshot,
    head: Option<(u64, B256)>,
}

struct Watcher {
    node: Arc<Node>,
    network: usize,
    sink: Arc<dyn EventSink>,
    seen: Option<Seen>,
    /// When the sync status was last read.
    synced_at: Option<Instant>,
}

impl Watcher {
    fn run(mut self, poll: Duration) {
        loop {
            if let Err(e) = self.step() {
                tracing::warn!(network = self.network, "watching for new blocks: {e}");
                std::thread::sleep(Duration::from_millis(500));
            }
            std::thread::sleep(poll);
        }
    }

    /// One look at the database: publishes what changed since the last one.
    fn step(&mut self) -> Result<()> {
        let commit = self.node.last_commit_id()?;
        let unchanged = self
            .seen
            .as_ref()
            .is_some_and(|seen| seen.snapshot.commit() == commit);
        let sync_due = self.synced_at.is_none_or(|at| at.elapsed() >= SYNC_CHECK);
        if unchanged && !sync_due {
            return Ok(());
        }
        let snapshot = self.node.reader()?;
        let head = snapshot.head()?;
        if let Some(seen) = &self.seen
            && seen.head != head
        {
            self.publish(seen, &snapshot, head)?;
        }
        self.update_syncing(&snapshot)?;
        // The old snapshot is released only now: the next change is compared with this one.
        self.seen = Some(Seen { snapshot, head });
        Ok(())
    }

    fn update_syncing(&mut self, snapshot: &Snapshot) -> Result<()> {
        self.synced_at = Some(Instant::now());
        self.sink.syncing(self.node.syncing(snapshot)?);
        Ok(())
    }

    /// Sends the change from `old`'s chain to `new`'s (head `head`).
    fn publish(&self, old: &Seen, new: &Snapshot, head: Option<(u64, B256)>) -> Result<()> {
        let ancestor = match (old.head, head) {
            (Some((old_head, _)), Some((new_head, _))) => {
                let mut number = old_head.min(new_head);
                loop {
                    if old.snapshot.canonical_hash(number)? == new.canonical_hash(number)? {
                        break Some(number);
                    }
                    match number.checked_sub(1) {
                        Some(parent) => number = parent,
                        None => break None,
                    }
                }
            }
            _ => None,
        };
        let first_new = ancestor.map_or(0, |a| a + 1);
        let removed = old.head.map(|(old_head, _)| first_new..=old_head);
        let added = head.map(|(new_head, _)| first_new..=new_head);
        if let Some(removed) = removed.clone().filter(|r| !r.is_empty()) {
            tracing::info!(
                network = self.network,
                from = removed.start(),
                to = removed.end(),
                "the canonical chain was reorganised: notifying removed logs"
            );
        }
        let Some(wants) = self.sink.wants() else {
            return Ok(());
        };
        for number in removed.into_iter().flatten() {
            self.sink
                .block(&self.event(&old.snapshot, number, true, wants)?);
        }
        for number in added.into_iter().flatten() {
            self.sink.block(&self.event(new, number, false, wants)?);
        }
        Ok(())
    }

    /// Block `number` of `snapshot` as subscribers and filters see it.
    fn event(
        &self,
        snapshot: &Snapshot,
        number: u64,
        removed: bool,
        wants: Wants,
    ) -> Result<BlockEvent> {
        let block = self.node.stored_block(snapshot, number)?.ok_or_else(|| {
            RpcError::Storage(quarry_storage::Error::Corrupt(format!(
                "canonical block {number} is not stored"
            )))
        })?;
        let header = if wants.heads && !removed {
            Some(to_json(&HeaderJson::new(&block.header, block.hash))?.into())
        } else {
            None
        };
        let mut logs = Vec::new();
        if wants.logs {
            let receipts = self
                .node
                .receipts_of(&Reads::Snapshot(snapshot), &block)?
                .ok_or_else(|| {
                    RpcError::Internal(format!("no receipts read for block {number}"))
                })?;
            let mut log_index = 0;
            for (index, (transaction, receipt)) in block
                .body
                .transactions
                .iter()
                .zip(&receipts.list)
                .enumerate()
            {
                let at = TxContext::new(&block.header, block.hash, index);
                for log in &receipt.logs {
                    let mut json = LogJson::new(log, *transaction.tx_hash(), &at, log_index);
                    if removed {
                        json = json.removed();
                    }
                    logs.push(Arc::new(LogEvent {
                        log: log.clone(),
                        block: number,
                        json: to_json(&json)?.into(),
                    }));
                    log_index += 1;
                }
            }
        }
        Ok(BlockEvent {
            hash: block.hash,
            removed,
            header,
            logs,
        })
    }
}

fn to_json(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| RpcError::Internal(format!("cannot serialize an event: {e}")))
}
