//! Each network's subscriptions (`Hub`): which connection wants what, and what of a block or of
//! the sync status each of them is sent. Notifications are framed on the watcher's thread; the
//! connections' writer tasks only send.

use crate::{
    subscriptions::connections::Connection,
    subscriptions::kind::{SubId, SubKind},
};
use quarry_eth::{
    Result, RpcError, Syncing,
    events::{BlockEvent, Wants},
    types::{SyncProgressJson, SyncingJson},
};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError, RwLock},
};

/// The subscriptions of one network.
#[derive(Debug, Default)]
pub struct Hub {
    subs: RwLock<HashMap<SubId, Subscriber>>,
    /// The sync status last sent: a new `syncing` subscription gets it at once.
    syncing: Mutex<Option<SyncingJson>>,
}

#[derive(Debug)]
struct Subscriber {
    conn: Arc<Connection>,
    kind: SubKind,
}

impl Hub {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<SubId, Subscriber>> {
        self.subs.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<SubId, Subscriber>> {
        self.subs.write().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn wants(&self) -> Wants {
        let subs = self.read();
        Wants {
            heads: subs.values().any(|s| matches!(s.kind, SubKind::NewHeads)),
            logs: subs.values().any(|s| matches!(s.kind, SubKind::Logs(_))),
        }
    }

    /// Queues `event`'s notifications. Each subscription's writer is woken as soon as its
    /// notifications are queued, so that sending overlaps the queueing for the others.
    pub(crate) fn deliver(
        &self,
        event: &BlockEvent,
        push: &mut impl FnMut(&Arc<Connection>, &SubId, &Arc<str>),
    ) {
        for (id, sub) in self.read().iter() {
            match &sub.kind {
                SubKind::NewHeads => {
                    if let (false, Some(header)) = (event.removed, &event.header) {
                        push(&sub.conn, id, header);
                        sub.conn.wake();
                    }
                }
                SubKind::Logs(criteria) => {
                    let mut any = false;
                    for log in &event.logs {
                        if criteria.matches(&log.log, log.block) {
                            push(&sub.conn, id, &log.json);
                            any = true;
                        }
                    }
                    if any {
                        sub.conn.wake();
                    }
                }
                SubKind::Syncing => {}
            }
        }
    }

    /// Records the sync status and sends it to `syncing` subscribers if it changed.
    pub(crate) fn set_syncing(
        &self,
        status: SyncingJson,
        push: &mut impl FnMut(&Arc<Connection>, &SubId, &Arc<str>),
    ) -> Result<()> {
        {
            let mut last = self.syncing.lock().unwrap_or_else(PoisonError::into_inner);
            if last.as_ref() == Some(&status) {
                return Ok(());
            }
            *last = Some(status.clone());
        }
        let json: Arc<str> = to_json(&status)?.into();
        for (id, sub) in self.read().iter() {
            if matches!(sub.kind, SubKind::Syncing) {
                push(&sub.conn, id, &json);
            }
        }
        Ok(())
    }

    /// The sync status last sent, which a new `syncing` subscription gets at once.
    pub(crate) fn last_syncing(&self) -> Option<SyncingJson> {
        self.syncing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// From now on, `conn`'s subscription `id` is notified.
    pub(crate) fn insert(&self, id: SubId, conn: Arc<Connection>, kind: SubKind) {
        self.write().insert(id, Subscriber { conn, kind });
    }

    /// Subscription `id` is notified no more.
    pub(crate) fn remove(&self, id: &str) {
        self.write().remove(id);
    }

    /// The subscriptions `ids` are notified no more (one lock for all).
    pub(crate) fn remove_all<'a>(&self, ids: impl Iterator<Item = &'a SubId>) {
        let mut subs = self.write();
        for id in ids {
            subs.remove(id);
        }
    }
}

pub(crate) fn to_json(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| RpcError::Internal(format!("cannot serialize a notification: {e}")))
}

/// eth_syncing's answer as the `syncing` subscription sends it.
pub(crate) fn syncing_json(status: Syncing) -> SyncingJson {
    match status {
        Syncing::Done(_) => SyncingJson::Done(false),
        Syncing::Progress {
            starting_block,
            current_block,
            highest_block,
        } => SyncingJson::Syncing {
            syncing: true,
            status: SyncProgressJson::blocks(
                starting_block.to(),
                current_block.to(),
                highest_block.to(),
            ),
        },
    }
}
