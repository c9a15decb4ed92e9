//! Heavy jobs: the methods whose cost class is `Heavy` (calls, traces and simulations on the
//! calls' pool; eth_getLogs, eth_getFilterLogs and eth_getProof on the read pool) run as heavy
//! jobs of the caller's key (see `pool`): shared fairly between keys, and answered with the
//! method's timeout error, unrun, when they wait longer than the method's time limit.

use crate::{
    access::caller::Caller,
    limits::pool::{ReadPool, Ticket},
};
use quarry_eth::{Limit, Node, Result, RpcError, Snapshot};
use serde_json::value::RawValue;
use std::sync::Arc;

/// The key a heavy job is charged to: the caller's, which the gate attached.
pub fn key_of(extensions: &jsonrpsee::Extensions) -> Arc<str> {
    extensions
        .get::<Caller>()
        .map_or_else(|| Arc::from(""), |caller| caller.grant.id.clone())
}

/// Runs `handler` on a snapshot as a heavy job of `key` in `pool`, within `limit`'s time: a
/// job still waiting when that time is up is answered with the timeout error and never runs;
/// one that has started runs until that same time at most, so a job that waited long gets only
/// what is left of its time.
pub async fn run<F>(
    pool: &ReadPool,
    key: Arc<str>,
    limit: Limit,
    node: Arc<Node>,
    method: &'static str,
    handler: F,
) -> Result<Box<RawValue>>
where
    F: FnOnce(&Node, &Snapshot) -> Result<Box<RawValue>> + Send + 'static,
{
    let timeout = limit.timeout(&node);
    let deadline = std::time::Instant::now() + timeout;
    let ticket = Ticket::default();
    let (reply, mut answer) = tokio::sync::oneshot::channel();
    pool.spawn_heavy(key, ticket.clone(), move || {
        let answer = if std::time::Instant::now() >= deadline {
            Err(limit.expired(timeout))
        } else {
            node.reader_until(deadline)
                .and_then(|tx| handler(&node, &tx))
        };
        let _ = reply.send(answer);
    })?;
    let wait = tokio::time::timeout_at(tokio::time::Instant::from_std(deadline), &mut answer);
    let answer = match wait.await {
        Ok(answer) => answer,
        Err(_) if ticket.abandon() => return Err(limit.expired(timeout)),
        Err(_) => answer.await,
    };
    answer.map_err(|_| RpcError::Internal(format!("{method}: the read task panicked")))?
}
