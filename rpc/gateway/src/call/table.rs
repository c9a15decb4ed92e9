//! The method table: every served method as one row (quarry-eth's `MethodSpec`, whose answer
//! here is the service's `MethodFn`), quarry-eth's methods and the service's own (filters,
//! subscriptions, transactions) alike, looked up once per call by the call layer and answered
//! from here. Each quarry-eth method runs where its cost class says: on the async thread, on
//! the read pool behind the caches, or as a heavy job of the caller's key on the read or the
//! calls' pool; its result comes serialized and becomes the reply's text at once (see `reply`).

use crate::{
    ServeError,
    access::caller::Networks,
    call::reply::Reply,
    limits::heavy,
    limits::pool::{Pools, ReadPool},
    service::Service,
};
use jsonrpsee::{
    Extensions,
    types::{ErrorCode, ErrorObject, ErrorObjectOwned, Params, Request},
};
use quarry_eth::{
    Answer, Cost, MethodAnswer, MethodSpec, Node, NodeFn, Pool, Reads, RpcError, params::Args,
};
use serde::Serialize;
use serde_json::value::RawValue;
use std::{collections::HashMap, future::Future, pin::Pin, sync::Arc};

/// A method's result, serialized, or its error.
pub type MethodResult = Result<Box<RawValue>, ErrorObjectOwned>;

/// How a served method answers one call.
pub type MethodFn =
    dyn Fn(Arc<Context>, Call) -> Pin<Box<dyn Future<Output = MethodResult> + Send>> + Send + Sync;

/// One served method, with everything known of it.
pub type Row = MethodSpec<Arc<MethodFn>>;

/// What every method may use: the service, the networks' nodes and the thread pools.
pub struct Context {
    pub service: Arc<Service>,
    pub networks: Networks,
    pub pools: Pools,
}

/// One call as its method gets it: its parameters read by the row's names, the same parameters
/// as they came (for methods that forward them), and the call's extensions (the caller, and
/// for a WebSocket its connection).
pub struct Call {
    pub args: Args,
    pub params: Params<'static>,
    pub extensions: Extensions,
}

/// A method's answer from an async function whose result comes already serialized (logs, an
/// upstream's answer): sent as it is.
pub fn serialized<F, Fut>(answer: F) -> Arc<MethodFn>
where
    F: Fn(Arc<Context>, Call) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = MethodResult> + Send + 'static,
{
    Arc::new(move |context, call| Box::pin(answer(context, call)))
}

/// A method's answer from an async function whose result is serialized here.
pub fn answer<F, Fut, R>(answer: F) -> Arc<MethodFn>
where
    F: Fn(Arc<Context>, Call) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ErrorObjectOwned>> + Send + 'static,
    R: Serialize,
{
    serialized(move |context, call| {
        let answered = answer(context, call);
        async move {
            let result = answered.await?;
            Ok(serde_json::value::to_raw_value(&result)
                .map_err(|e| RpcError::Internal(format!("cannot serialize the answer: {e}")))?)
        }
    })
}

/// The served methods by name, and what they answer with.
pub struct Table {
    rows: HashMap<&'static str, Row>,
    context: Arc<Context>,
    max_response_bytes: usize,
}

impl Table {
    /// `rows` by name (each method once), answering over `context`.
    pub fn new(
        rows: Vec<Row>,
        context: Context,
        max_response_bytes: u32,
    ) -> Result<Self, ServeError> {
        let mut table = HashMap::new();
        for row in rows {
            if let Some(twice) = table.insert(row.name, row) {
                return Err(ServeError::Register(twice.name.to_string()));
            }
        }
        Ok(Self {
            rows: table,
            context: Arc::new(context),
            max_response_bytes: max_response_bytes as usize,
        })
    }

    /// The row of `method`, if it is served.
    pub fn row(&self, method: &str) -> Option<&Row> {
        self.rows.get(method)
    }

    /// The served methods' names.
    #[cfg(feature = "fuzzing")]
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.rows.keys().copied()
    }

    /// The answer of `row` (the row of the request's method; `None`: not served) to `request`.
    pub async fn answer(&self, row: Option<&Row>, request: Request<'_>) -> Reply {
        let Request {
            id,
            params,
            extensions,
            ..
        } = request;
        let Some(row) = row else {
            let error = ErrorObject::from(ErrorCode::MethodNotFound);
            return Reply::error(id, error).with_extensions(extensions);
        };
        let params = Params::new(params.as_ref().map(|p| p.get())).into_owned();
        let answered = match Args::parse(&params, row.params, row.required) {
            Ok(args) => {
                let call = Call {
                    args,
                    params,
                    extensions: extensions.clone(),
                };
                (row.answer)(self.context.clone(), call).await
            }
            Err(error) => Err(error.into()),
        };
        let reply = match answered {
            Ok(result) => Reply::result(id, &result, self.max_response_bytes),
            Err(error) => Reply::error(id, error),
        };
        reply.with_extensions(extensions)
    }
}

/// A quarry-eth method as a row: its answer runs where its cost class says.
pub fn from_node(spec: MethodSpec<Answer>) -> Row {
    let name = spec.name;
    spec.with_answer(|answer| -> Arc<MethodFn> {
        match answer {
            Answer::Constant(answer) => Arc::new(move |_, call| {
                let answered = answer(&call.args).map_err(ErrorObjectOwned::from);
                Box::pin(std::future::ready(answered))
            }),
            Answer::Node(cost, handler) => Arc::new(move |context, call| {
                Box::pin(on_node(name, cost, handler.clone(), context, call))
            }),
        }
    })
}

/// A node's method answered where `cost` says.
async fn on_node(
    name: &'static str,
    cost: Cost,
    handler: Arc<NodeFn>,
    context: Arc<Context>,
    call: Call,
) -> MethodResult {
    let node = context.networks.of(&call.extensions)?;
    let pool = match cost {
        Cost::Heavy {
            pool: Pool::Call, ..
        } => &context.pools.call,
        _ => &context.pools.read,
    };
    let args = call.args;
    match cost {
        Cost::Inline => inline(name, &node, &args, &*handler),
        Cost::Cached => cached(name, pool, node, args, handler).await,
        Cost::Snapshot => snapshot(name, pool, node, args, handler).await,
        Cost::Heavy { limit, .. } => {
            let key = heavy::key_of(&call.extensions);
            heavy::run(pool, key, limit, node, name, move |node, tx| {
                answered(name, handler(node, &Reads::Snapshot(tx), &args))
            })
            .await
            .map_err(ErrorObjectOwned::from)
        }
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

#[cfg(test)]
mod tests {
    use quarry_eth::AddressParams;
    use std::collections::HashSet;

    #[test]
    fn every_method_is_one_row() {
        let rows = crate::rows();
        let mut names = HashSet::new();
        for row in &rows {
            assert!(names.insert(row.name), "{} declared twice", row.name);
            assert!(row.required <= row.params.len(), "{}", row.name);
        }
        // quarry-eth's 67 and the service's 12.
        assert_eq!(rows.len(), 79);
    }

    #[test]
    fn the_spec_says_which_methods_a_partner_may_answer() {
        let mut forwardable: Vec<&str> = crate::rows()
            .iter()
            .filter(|row| row.forwardable)
            .map(|row| row.name)
            .collect();
        forwardable.sort_unstable();
        assert_eq!(
            forwardable,
            [
                "eth_getBlockByNumber",
                "eth_getTransactionReceipt",
                "eth_getUncleByBlockHashAndIndex"
            ]
        );
        let mut txpool: Vec<&str> = crate::rows()
            .iter()
            .filter(|row| row.txpool_reads.is_some())
            .map(|row| row.name)
            .collect();
        txpool.sort_unstable();
        assert_eq!(
            txpool,
            ["eth_getTransactionByHash", "eth_getTransactionCount"]
        );
    }

    #[test]
    fn methods_that_take_addresses_say_where() {
        let of = |name: &str| crate::row(name).map(|row| row.addresses);
        assert_eq!(of("eth_getBalance"), Some(AddressParams::Address(0)));
        assert_eq!(of("eth_call"), Some(AddressParams::CallTo(0)));
        assert_eq!(of("eth_newFilter"), Some(AddressParams::LogFilter(0)));
        assert_eq!(of("eth_subscribe"), Some(AddressParams::Subscription));
        assert_eq!(
            of("eth_sendRawTransaction"),
            Some(AddressParams::RawTransactionTo(0))
        );
        assert_eq!(of("eth_getBlockByHash"), Some(AddressParams::NoAddress));
        assert_eq!(of("eth_getFilterChanges"), Some(AddressParams::NoAddress));
    }
}
