//! Heavy methods: eth_call, eth_estimateGas and eth_createAccessList on the call pool, and
//! eth_getLogs on the read pool, run as heavy jobs of the caller's key (see `pool`): shared
//! fairly between keys, and answered with the method's timeout error, unrun, when they wait
//! longer than the method's time limit.

use crate::{
    RpcError, ServeError, error::Result, node::Node, node::Snapshot, params::Args, pool::ReadPool,
    pool::Ticket, service::Caller, to_raw,
};
use jsonrpsee::types::ErrorObjectOwned;
use serde::Serialize;
use std::{sync::Arc, time::Duration};

/// Which time limit a heavy method has, and which error says it ran out.
#[derive(Debug, Clone, Copy)]
pub enum Limit {
    /// eth_call's: `call_timeout_ms`, "execution aborted (timeout = ...)".
    Call,
    /// eth_getLogs': `logs_timeout_ms`, "query timeout exceeded".
    Logs,
}

impl Limit {
    fn timeout(self, node: &Node) -> Duration {
        match self {
            Self::Call => node.call_timeout(),
            Self::Logs => node.logs_timeout(),
        }
    }

    fn expired(self, timeout: Duration) -> RpcError {
        match self {
            Self::Call => quarry_executor::CallError::Timeout(timeout).into(),
            Self::Logs => RpcError::LogsTimeout,
        }
    }
}

/// Registers a heavy method that answers from a snapshot, as `register_snapshot` does, but as
/// a heavy job of the caller's key in `pool`.
pub fn register<R, F>(
    registry: &mut crate::Registry,
    pool: &ReadPool,
    limit: Limit,
    method: &'static str,
    names: &'static [&'static str],
    required: usize,
    handler: F,
) -> std::result::Result<(), ServeError>
where
    R: Serialize,
    F: Fn(&Node, &Snapshot, &Args) -> Result<R> + Clone + Send + Sync + 'static,
{
    let pool = pool.clone();
    registry.add_with_args(method, names, required, move |node, args, extensions| {
        let handler = handler.clone();
        let pool = pool.clone();
        async move {
            let key: Arc<str> = extensions
                .get::<Caller>()
                .map_or_else(|| Arc::from(""), |caller| caller.grant.id.clone());
            run(&pool, key, limit, node, method, move |node, tx| {
                handler(node, tx, &args)
            })
            .await
            .map_err(ErrorObjectOwned::from)
        }
    })
}

/// Runs `handler` on a snapshot as a heavy job of `key` in `pool`, within `limit`'s time: a
/// job still waiting when that time is up is answered with the timeout error and never runs;
/// one that has started runs until that same time at most, so a job that waited long gets only
/// what is left of its time.
pub async fn run<R, F>(
    pool: &ReadPool,
    key: Arc<str>,
    limit: Limit,
    node: Arc<Node>,
    method: &'static str,
    handler: F,
) -> Result<Box<serde_json::value::RawValue>>
where
    R: Serialize,
    F: FnOnce(&Node, &Snapshot) -> Result<R> + Send + 'static,
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
                .and_then(|tx| to_raw(method, &handler(&node, &tx)?))
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
