//! The served methods, made from quarry-eth's method table: each method runs where its cost
//! class says (the async thread, the read pool behind the caches, or a heavy job of the
//! caller's key on the read or the calls' pool), answering with its result serialized, which
//! `dispatch::Dispatch` turns into the reply text at once (see `reply`). Each is also in
//! jsonrpsee's module, with the methods the service answers itself (filters, subscriptions),
//! for jsonrpsee's body handling and for the fuzz harness, which calls the module.

use crate::{
    ServeError,
    caller::Networks,
    heavy,
    pool::{Pools, ReadPool},
    reply,
};
use jsonrpsee::{RpcModule, types::ErrorObjectOwned};
use quarry_eth::{
    Cost, Handler, MethodAnswer, MethodSpec, Node, NodeFn, Pool, Reads, RpcError, params::Args,
};
use serde_json::value::RawValue;
use std::sync::Arc;

type MethodResult = std::result::Result<Box<RawValue>, ErrorObjectOwned>;

/// The methods quarry serves, in jsonrpsee's module and as `Reply` answers.
pub struct Registry {
    pub module: RpcModule<Networks>,
    answered: reply::Methods,
    networks: Arc<Networks>,
}

impl Registry {
    pub fn new(networks: Networks) -> Self {
        Self {
            module: RpcModule::new(networks.clone()),
            answered: reply::Methods::new(),
            networks: Arc::new(networks),
        }
    }

    /// Registers `method`, answered by `answer` with the networks and the call's parameters
    /// and extensions.
    fn add<F, Fut>(&mut self, method: &'static str, answer: F) -> Result<(), ServeError>
    where
        F: Fn(Arc<Networks>, jsonrpsee::types::Params<'static>, jsonrpsee::Extensions) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: std::future::Future<Output = MethodResult> + Send + 'static,
    {
        let answer = Arc::new(answer);
        let networks = self.networks.clone();
        let answered = answer.clone();
        let method_answer: reply::Method = Arc::new(move |params, extensions| {
            Box::pin(answered(networks.clone(), params, extensions))
        });
        if self.answered.insert(method, method_answer).is_some() {
            return Err(ServeError::Register(method.to_string()));
        }
        self.module
            .register_async_method(method, move |params, networks, extensions| {
                answer(networks, params, extensions)
            })
            .map_err(|_| ServeError::Register(method.to_string()))?;
        Ok(())
    }

    /// Registers every method of `table`, each on the pool its cost class names.
    pub fn add_table(&mut self, table: Vec<MethodSpec>, pools: &Pools) -> Result<(), ServeError> {
        for spec in table {
            let MethodSpec {
                name,
                params,
                required,
                cost,
                handler,
            } = spec;
            let handler = match handler {
                Handler::Constant(answer) => {
                    self.add(name, move |_, call_params, _| {
                        let answer = answer.clone();
                        async move {
                            let args = Args::parse(&call_params, params, required)?;
                            Ok(answer(&args)?)
                        }
                    })?;
                    continue;
                }
                Handler::Node(handler) => handler,
            };
            // The one pool this method runs on, chosen once: each call clones only it.
            let pool = match cost {
                Cost::Heavy {
                    pool: Pool::Call, ..
                } => pools.call.clone(),
                _ => pools.read.clone(),
            };
            self.add(name, move |networks, call_params, extensions| {
                let (handler, pool) = (handler.clone(), pool.clone());
                async move {
                    let node = networks.of(&extensions)?;
                    let args = Args::parse(&call_params, params, required)?;
                    match cost {
                        Cost::Inline => inline(name, &node, &args, &*handler),
                        Cost::Cached => cached(name, &pool, node, args, handler).await,
                        Cost::Snapshot => snapshot(name, &pool, node, args, handler).await,
                        Cost::Heavy { limit, .. } => {
                            let key = heavy::key_of(&extensions);
                            heavy::run(&pool, key, limit, node, name, move |node, tx| {
                                answered(name, handler(node, &Reads::Snapshot(tx), &args))
                            })
                            .await
                            .map_err(ErrorObjectOwned::from)
                        }
                    }
                }
            })?;
        }
        Ok(())
    }

    /// jsonrpsee's module, and the methods answered as `Reply`s.
    pub fn into_parts(self) -> (RpcModule<Networks>, reply::Methods) {
        (self.module, self.answered)
    }
}

/// A snapshot's answer, which a method must give.
fn answered(method: &str, answer: MethodAnswer) -> quarry_eth::Result<Box<RawValue>> {
    answer?.ok_or_else(|| RpcError::Internal(format!("{method}: no answer from a snapshot")))
}

/// A method answered from what the node holds for good, on the async thread.
fn inline(method: &str, node: &Node, args: &Args, handler: &NodeFn) -> MethodResult {
    handler(node, &Reads::Cache, args)?
        .ok_or_else(|| RpcError::Internal(format!("{method}: no answer from memory")).into())
}

/// A method asked with `Reads::Cache` on the async thread first: if memory holds the answer it
/// is sent at once; otherwise the request goes to the read pool.
async fn cached(
    method: &'static str,
    pool: &ReadPool,
    node: Arc<Node>,
    args: Args,
    handler: Arc<NodeFn>,
) -> MethodResult {
    if let Some(answer) = handler(&node, &Reads::Cache, &args)? {
        return Ok(answer);
    }
    snapshot(method, pool, node, args, handler).await
}

/// A method answered on the read pool from a fresh snapshot: database reads never run on async
/// threads.
async fn snapshot(
    method: &'static str,
    pool: &ReadPool,
    node: Arc<Node>,
    args: Args,
    handler: Arc<NodeFn>,
) -> MethodResult {
    let (reply, answer) = tokio::sync::oneshot::channel();
    pool.spawn(move || {
        let answer = node
            .reader()
            .and_then(|tx| answered(method, handler(&node, &Reads::Snapshot(&tx), &args)));
        let _ = reply.send(answer);
    })?;
    match answer.await {
        Ok(answer) => answer.map_err(ErrorObjectOwned::from),
        Err(_) => Err(ErrorObjectOwned::from(RpcError::Internal(format!(
            "{method}: the read task panicked"
        )))),
    }
}
