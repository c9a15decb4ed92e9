//! quarry-rpc owns the JSON-RPC service: the jsonrpsee server (HTTP and WebSocket on one
//! listener), API keys and routing, request limits, the methods' parameters and JSON shapes, and
//! the one place where errors become JSON-RPC errors.

mod answer;
mod cache;
mod call;
mod calls;
mod config;
mod envelope;
mod error;
mod filters;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz;
mod gate;
mod heavy;
mod http;
mod info;
pub mod keys;
mod limits;
mod logs;
mod metrics;
mod node;
mod params;
mod pool;
mod ready;
mod reply;
mod service;
mod shared_limits;
mod simulate;
mod subscriptions;
mod trace;
mod types;
mod weights;
mod ws;

pub use config::{ApiKey, Config, ConfigError, NetworkConfig, Plan};
pub use error::{Result, RpcError};
pub use node::{BlockAt, BlockMarks, LogsConfig, Node, RawPart, Reads, Snapshot};
pub use service::Networks;

use jsonrpsee::{RpcModule, server::ServerHandle, types::ErrorObjectOwned};
use params::{Args, BlockId, BlockTag, Index, ProofKeys, StorageKey};
use pool::ReadPool;
use quarry_storage::Database;
use serde::Serialize;
use serde_json::value::RawValue;
use std::{net::SocketAddr, sync::Arc};

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot read the database: {0}")]
    Open(String),
    #[error("cannot start the read thread pool: {0}")]
    ReadPool(String),
    #[error("registering method {0}: duplicate name")]
    Register(String),
}

/// A running server; it stops when `stop` is called or the handle is dropped after `stopped`.
pub struct RunningServer {
    pub local_addr: SocketAddr,
    pub handle: ServerHandle,
    /// How many keys were live at start.
    pub keys: usize,
    pub networks: Vec<String>,
}

/// Serializes an answer on the thread that produced it.
fn to_raw(method: &str, value: &impl Serialize) -> Result<Box<RawValue>> {
    serde_json::value::to_raw_value(value)
        .map_err(|e| RpcError::Internal(format!("{method}: cannot serialize the answer: {e}")))
}

/// The methods quarry serves. Most answer with their result serialized (`answered`), and
/// `ws::Dispatch` turns that into the reply text at once (see `reply`); each is also in
/// jsonrpsee's module, with the methods registered there alone (filters, subscriptions), for
/// the names and for the fuzz harness, which calls the module.
pub(crate) struct Registry {
    pub module: RpcModule<Networks>,
    answered: reply::Methods,
    networks: Arc<Networks>,
}

impl Registry {
    fn new(networks: Networks) -> Self {
        Self {
            module: RpcModule::new(networks.clone()),
            answered: reply::Methods::new(),
            networks: Arc::new(networks),
        }
    }

    /// Registers `method`, answered by `answer` with the networks and the call's parameters
    /// and extensions.
    fn add<F, Fut>(
        &mut self,
        method: &'static str,
        answer: F,
    ) -> std::result::Result<(), ServeError>
    where
        F: Fn(Arc<Networks>, jsonrpsee::types::Params<'static>, jsonrpsee::Extensions) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: std::future::Future<Output = std::result::Result<Box<RawValue>, ErrorObjectOwned>>
            + Send
            + 'static,
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

    /// Registers `method` as `add` does, answered by `answer` with the network's node and the
    /// parameters (named `names`, the first `required` mandatory), both found on the async
    /// thread before `answer` runs.
    fn add_with_args<F, Fut>(
        &mut self,
        method: &'static str,
        names: &'static [&'static str],
        required: usize,
        answer: F,
    ) -> std::result::Result<(), ServeError>
    where
        F: Fn(Arc<Node>, Args, jsonrpsee::Extensions) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = std::result::Result<Box<RawValue>, ErrorObjectOwned>>
            + Send
            + 'static,
    {
        let answer = Arc::new(answer);
        self.add(method, move |networks, params, extensions| {
            let answer = answer.clone();
            async move {
                let node = networks.of(&extensions)?;
                let args = Args::parse(&params, names, required)?;
                answer(node, args, extensions).await
            }
        })
    }

    /// jsonrpsee's module, and the methods answered as `Reply`s.
    fn into_parts(self) -> (RpcModule<Networks>, reply::Methods) {
        (self.module, self.answered)
    }
}

/// Registers a method. Its parameters (named `names`, the first `required` mandatory) are parsed
/// on the async thread, and `handler` is asked there with `Reads::Cache`: if memory holds the
/// answer it is sent at once. Otherwise the request goes to the read pool, where `handler` runs
/// again with a database snapshot and must answer; database reads never run on async threads.
/// Either way the answer is serialized where it was found.
fn register<R, F>(
    registry: &mut Registry,
    pool: &ReadPool,
    method: &'static str,
    names: &'static [&'static str],
    required: usize,
    handler: F,
) -> std::result::Result<(), ServeError>
where
    R: Serialize + Send + Sync + 'static,
    F: Fn(&Node, &Reads, &Args) -> Result<Option<R>> + Clone + Send + Sync + 'static,
{
    let pool = pool.clone();
    registry.add_with_args(method, names, required, move |node, args, _| {
        let handler = handler.clone();
        let pool = pool.clone();
        async move {
            if let Some(answer) = handler(&node, &Reads::Cache, &args)? {
                return Ok(to_raw(method, &answer)?);
            }
            let (reply, answer) = tokio::sync::oneshot::channel();
            pool.spawn(move || {
                let answer = node.reader().and_then(|tx| {
                    match handler(&node, &Reads::Snapshot(&tx), &args)? {
                        Some(answer) => to_raw(method, &answer),
                        None => Err(RpcError::Internal(format!(
                            "{method}: no answer from a snapshot"
                        ))),
                    }
                });
                let _ = reply.send(answer);
            })?;
            match answer.await {
                Ok(answer) => answer.map_err(ErrorObjectOwned::from),
                Err(_) => Err(ErrorObjectOwned::from(RpcError::Internal(format!(
                    "{method}: the read task panicked"
                )))),
            }
        }
    })
}

/// Registers a method that always reads the database (state, the head).
fn register_snapshot<R, F>(
    registry: &mut Registry,
    pool: &ReadPool,
    method: &'static str,
    names: &'static [&'static str],
    required: usize,
    handler: F,
) -> std::result::Result<(), ServeError>
where
    R: Serialize + Send + Sync + 'static,
    F: Fn(&Node, &Snapshot, &Args) -> Result<R> + Clone + Send + Sync + 'static,
{
    register(
        registry,
        pool,
        method,
        names,
        required,
        move |node, reads, args| match reads {
            Reads::Cache => Ok(None),
            Reads::Snapshot(tx) => handler(node, tx, args).map(Some),
        },
    )
}

/// Registers the by-number and by-hash twins of a method: all parameters required, the first
/// naming the block (`methods[0]` by number or tag, `methods[1]` by hash).
fn register_by_block<R, F>(
    registry: &mut Registry,
    pool: &ReadPool,
    methods: [(&'static str, &'static [&'static str]); 2],
    handler: F,
) -> std::result::Result<(), ServeError>
where
    R: Serialize + Send + Sync + 'static,
    F: Fn(&Node, &Reads, BlockAt, &Args) -> Result<Option<R>> + Clone + Send + Sync + 'static,
{
    let [(by_number, number_names), (by_hash, hash_names)] = methods;
    let by_tag = handler.clone();
    register(
        registry,
        pool,
        by_number,
        number_names,
        number_names.len(),
        move |node, reads, args| by_tag(node, reads, BlockAt::Tag(args.required(0)?), args),
    )?;
    register(
        registry,
        pool,
        by_hash,
        hash_names,
        hash_names.len(),
        move |node, reads, args| handler(node, reads, BlockAt::Hash(args.required(0)?), args),
    )
}

/// eth_call's and eth_estimateGas's parameters: the call, the block (default latest), and the
/// optional state overrides.
fn call_args(args: &Args) -> Result<(call::Call, BlockId, quarry_executor::StateOverrides)> {
    let at = block_or_latest(args, 1)?;
    let overrides = args
        .optional::<call::Overrides>(2)?
        .map(|o| o.0)
        .unwrap_or_default();
    Ok((args.required(0)?, at, overrides))
}

/// An optional block parameter of a state method: omitted means latest.
fn block_or_latest(args: &Args, position: usize) -> Result<BlockId> {
    Ok(args
        .optional::<BlockId>(position)?
        .unwrap_or(BlockId::Tag(BlockTag::Latest)))
}

/// A block named by number, tag or hash, for methods that read a block (not state).
fn block_at(id: BlockId) -> BlockAt {
    match id {
        BlockId::Tag(tag) => BlockAt::Tag(tag),
        BlockId::Hash { hash, .. } => BlockAt::Hash(hash),
    }
}

fn index(args: &Args, position: usize) -> Result<u64> {
    args.required::<Index>(position).map(|Index(index)| index)
}

/// Every method quarry serves, answered from `node`.
fn methods(
    networks: Networks,
    pool: &ReadPool,
    call_pool: &ReadPool,
    service: &std::sync::Arc<service::Service>,
    traces: trace::TraceLimits,
) -> std::result::Result<Registry, ServeError> {
    let mut registry = Registry::new(networks);
    let m = &mut registry;
    subscriptions::register(&mut m.module, service)?;
    filters::register(&mut m.module, pool, service)?;
    trace::register(m, call_pool, traces)?;
    info::register(m, pool)?;
    simulate::register(m, call_pool)?;
    register_by_block(
        m,
        pool,
        [
            ("eth_getBlockByNumber", &["blockNumber", "fullTransactions"]),
            ("eth_getBlockByHash", &["blockHash", "fullTransactions"]),
        ],
        |node, reads, at, args| node.block(reads, at, args.required(1)?),
    )?;
    register_by_block(
        m,
        pool,
        [
            (
                "eth_getUncleByBlockNumberAndIndex",
                &["blockNumber", "uncleIndex"],
            ),
            (
                "eth_getUncleByBlockHashAndIndex",
                &["blockHash", "uncleIndex"],
            ),
        ],
        |node, reads, at, args| node.uncle(reads, at, index(args, 1)?),
    )?;
    register_by_block(
        m,
        pool,
        [
            (
                "eth_getTransactionByBlockNumberAndIndex",
                &["blockNumber", "transactionIndex"],
            ),
            (
                "eth_getTransactionByBlockHashAndIndex",
                &["blockHash", "transactionIndex"],
            ),
        ],
        |node, reads, at, args| node.transaction(reads, at, index(args, 1)?),
    )?;
    register(
        m,
        pool,
        "eth_getTransactionReceipt",
        &["transactionHash"],
        1,
        |node, reads, args| node.transaction_receipt(reads, args.required(0)?),
    )?;
    let names = &["address", "storageSlot", "block"];
    register(
        m,
        pool,
        "eth_getStorageAt",
        names,
        2,
        |node, reads, args| {
            let StorageKey(slot) = args.required(1)?;
            let at = block_or_latest(args, 2)?;
            node.storage_at(reads, args.required(0)?, slot, at)
        },
    )?;
    // Heavy methods are shared fairly between keys (see `pool`).
    let logs = heavy::Limit::Logs;
    heavy::register(
        m,
        pool,
        logs,
        "eth_getLogs",
        &["filter"],
        1,
        |node, tx, args| node.logs(tx, &args.required(0)?),
    )?;
    // Proofs at older blocks cost what changed since; they take fair turns like calls.
    heavy::register(
        m,
        pool,
        heavy::Limit::Call,
        "eth_getProof",
        &["address", "storageKeys", "block"],
        2,
        |node, tx, args| {
            let ProofKeys(keys) = args.required(1)?;
            let at = block_or_latest(args, 2)?;
            node.proof(tx, args.required(0)?, &keys, at)
        },
    )?;
    register_snapshot(m, pool, "rollup_getInfo", &[], 0, |node, tx, _| {
        node.rollup_info(tx)
    })?;
    // Calls run on their own pool: a flood of them queues there and never delays reads.
    let call_names = &["transaction", "block", "stateOverrides"];
    let limit = heavy::Limit::Call;
    heavy::register(
        m,
        call_pool,
        limit,
        "eth_call",
        call_names,
        1,
        |node, tx, args| {
            let (call, at, overrides) = call_args(args)?;
            node.call(tx, &call, at, &overrides)
        },
    )?;
    heavy::register(
        m,
        call_pool,
        limit,
        "eth_estimateGas",
        call_names,
        1,
        |node, tx, args| {
            let (call, at, overrides) = call_args(args)?;
            node.estimate_gas(tx, &call, at, &overrides)
        },
    )?;
    heavy::register(
        m,
        call_pool,
        limit,
        "eth_createAccessList",
        call_names,
        1,
        |node, tx, args| {
            let (call, at, overrides) = call_args(args)?;
            node.create_access_list(tx, &call, at, &overrides)
        },
    )?;
    register(
        m,
        pool,
        "eth_getTransactionByHash",
        &["transactionHash"],
        1,
        |node, reads, args| node.transaction_by_hash(reads, args.required(0)?),
    )?;
    register(
        m,
        pool,
        "eth_getBlockReceipts",
        &["block"],
        1,
        |node, reads, args| node.block_receipts(reads, block_at(args.required(0)?)),
    )?;
    register_by_block(
        m,
        pool,
        [
            ("eth_getBlockTransactionCountByNumber", &["blockNumber"]),
            ("eth_getBlockTransactionCountByHash", &["blockHash"]),
        ],
        |node, reads, at, _| node.block_transaction_count(reads, at),
    )?;
    register_by_block(
        m,
        pool,
        [
            ("eth_getUncleCountByBlockNumber", &["blockNumber"]),
            ("eth_getUncleCountByBlockHash", &["blockHash"]),
        ],
        |node, reads, at, _| node.uncle_count(reads, at),
    )?;
    for (method, part) in [
        ("debug_getRawHeader", RawPart::Header),
        ("debug_getRawBlock", RawPart::Block),
        ("debug_getRawReceipts", RawPart::Receipts),
    ] {
        register(m, pool, method, &["block"], 1, move |node, reads, args| {
            node.raw_block(reads, block_at(args.required(0)?), part)
        })?;
    }
    register_snapshot(
        m,
        pool,
        "debug_getRawTransaction",
        &["transactionHash"],
        1,
        |node, tx, args| node.raw_transaction(tx, args.required(0)?),
    )?;
    let account_names = &["address", "block"];
    register_snapshot(
        m,
        pool,
        "eth_getBalance",
        account_names,
        1,
        |node, tx, args| node.balance(tx, args.required(0)?, block_or_latest(args, 1)?),
    )?;
    register_snapshot(
        m,
        pool,
        "eth_getCode",
        account_names,
        1,
        |node, tx, args| node.code(tx, args.required(0)?, block_or_latest(args, 1)?),
    )?;
    register_snapshot(
        m,
        pool,
        "eth_getTransactionCount",
        account_names,
        1,
        |node, tx, args| node.transaction_count(tx, args.required(0)?, block_or_latest(args, 1)?),
    )?;
    register_snapshot(m, pool, "eth_blockNumber", &[], 0, |node, tx, _| {
        node.block_number(tx)
    })?;
    let fee_names = &["blockCount", "newestBlock", "rewardPercentiles"];
    register_snapshot(m, pool, "eth_feeHistory", fee_names, 2, |node, tx, args| {
        let params::BlockCount(count) = args.required(0)?;
        let percentiles = args
            .optional::<params::Percentiles>(2)?
            .map(|p| p.0)
            .unwrap_or_default();
        node.fee_history(tx, count, args.required(1)?, &percentiles)
    })?;
    register_snapshot(
        m,
        pool,
        "eth_maxPriorityFeePerGas",
        &[],
        0,
        |node, tx, _| node.suggest_tip(tx),
    )?;
    register_snapshot(m, pool, "eth_gasPrice", &[], 0, |node, tx, _| {
        node.gas_price(tx)
    })?;
    register_snapshot(m, pool, "eth_blobBaseFee", &[], 0, |node, tx, _| {
        node.blob_base_fee(tx)
    })?;
    register_snapshot(m, pool, "eth_syncing", &[], 0, |node, tx, _| {
        node.syncing(tx)
    })?;
    // The chain id is fixed for the database: answered inline.
    m.add_with_args("eth_chainId", &[], 0, |node, _, _| async move {
        Ok(to_raw("eth_chainId", &node.chain_id()?)?)
    })?;
    m.add_with_args("net_version", &[], 0, |node, _, _| async move {
        let chain_id = node.chain_id()?.to::<u64>();
        Ok(to_raw("net_version", &chain_id.to_string())?)
    })?;
    // Reads nothing, so it runs inline: the cheapest call, the benchmarks' ceiling.
    m.add("web3_clientVersion", |_, params, _| async move {
        Args::parse(&params, &[], 0)?;
        Ok(to_raw(
            "web3_clientVersion",
            &concat!("quarry/v", env!("CARGO_PKG_VERSION")),
        )?)
    })?;
    Ok(registry)
}

/// Refuses a database that an older quarry wrote in a layout this one cannot read (an empty one
/// is fine: a writer will give it the current layout). `datadir`: where it is, if known.
fn check_layout(
    db: &Database,
    datadir: Option<&std::path::Path>,
) -> std::result::Result<(), ServeError> {
    let (name, arg) = match datadir {
        Some(path) => (path.display().to_string(), path.display().to_string()),
        None => ("the datadir".to_string(), "<DIR>".to_string()),
    };
    let open = |e: quarry_storage::Error| ServeError::Open(format!("{name}: {e}"));
    let tx = db.reader().map_err(open)?;
    let found = tx.schema_version().map_err(open)?;
    if tx.head().map_err(open)?.is_some() && found < quarry_storage::SCHEMA_VERSION {
        return Err(ServeError::Open(format!(
            "{name} was written by an older quarry (layout {found}, current {}): run `quarry migrate --datadir {arg}` once to bring it up to date",
            quarry_storage::SCHEMA_VERSION
        )));
    }
    Ok(())
}

/// The networks a config serves, each with its `[[networks]]` entry; or else `default_db` on
/// any host, with none.
fn open_networks(
    config: &Config,
    default_db: Option<Database>,
) -> std::result::Result<Vec<(service::Network, Option<&NetworkConfig>)>, ServeError> {
    if config.networks.is_empty() {
        let db = default_db.ok_or_else(|| {
            ServeError::Open("no database given and no [[networks]] in the config".into())
        })?;
        check_layout(&db, None)?;
        let network = service::Network {
            name: "default".into(),
            hosts: Vec::new(),
            partner_url: None,
            peers: config.peers.clone(),
            db,
        };
        return Ok(vec![(network, None)]);
    }
    config
        .networks
        .iter()
        .map(|network| {
            let db = Database::open(&network.datadir).map_err(|e| {
                ServeError::Open(format!(
                    "network {}: cannot open {}: {e}",
                    network.name,
                    network.datadir.display()
                ))
            })?;
            check_layout(&db, Some(&network.datadir))?;
            let opened = service::Network {
                name: network.name.clone(),
                hosts: network
                    .hosts
                    .iter()
                    .map(|h| h.to_ascii_lowercase())
                    .collect(),
                partner_url: network.partner_url.clone(),
                peers: network.peers.clone(),
                db,
            };
            Ok((opened, Some(network)))
        })
        .collect()
}

/// Starts the server on `config.listen` (port 0 picks a free port) and returns at once. It
/// serves the config's networks, or `default_db` on any host when the config declares none.
pub async fn start(
    config: &Config,
    default_db: Option<Database>,
) -> std::result::Result<RunningServer, ServeError> {
    let marks = BlockMarks {
        safe: config.safe_block,
        finalized: config.finalized_block,
    };
    let call_timeout = std::time::Duration::from_millis(config.call_timeout_ms);
    let logs = LogsConfig {
        max_results: config.max_logs,
        timeout: std::time::Duration::from_millis(config.logs_timeout_ms),
        max_params: config.max_log_params,
        use_index: config.log_index,
    };
    let opened = open_networks(config, default_db)?;
    let mut nodes = Vec::with_capacity(opened.len());
    for (network, declared) in &opened {
        let l1 = declared
            .and_then(|n| n.rollup_of.as_ref())
            .and_then(|l1| opened.iter().find(|(n, _)| &n.name == l1))
            .map(|(n, _)| n.db.clone());
        let node = Node::new(network.db.clone(), marks, call_timeout, logs, l1)
            .map_err(|e| ServeError::Open(format!("network {}: {e}", network.name)))?
            .with_proof_window(config.proof_window);
        if let Some((expected, declared)) = declared.and_then(|n| Some((n.chain_id?, n))) {
            let stored = node
                .chain_id()
                .map_err(|e| ServeError::Open(format!("network {}: {e}", network.name)))?;
            if stored.to::<u64>() != expected {
                return Err(ServeError::Open(format!(
                    "network {}: the config says chain id {expected}, {} holds chain {stored}",
                    network.name,
                    declared.datadir.display()
                )));
            }
        }
        nodes.push(std::sync::Arc::new(node));
    }
    let networks = opened.into_iter().map(|(network, _)| network).collect();
    let service =
        std::sync::Arc::new(service::Service::new(config, networks).map_err(ServeError::Open)?);
    service.watch();
    let pools = pool::Pools::new(config).map_err(|e| ServeError::ReadPool(e.to_string()))?;
    let (pool, call_pool) = (pools.read, pools.call);
    subscriptions::start_watchers(
        &nodes,
        &service,
        std::time::Duration::from_millis(config.new_block_poll_ms.max(1)),
    )
    .map_err(|e| ServeError::Open(format!("cannot start the new-block watchers: {e}")))?;
    let traces = trace::TraceLimits {
        max_bytes: config.max_trace_bytes,
    };
    let (module, answered) =
        methods(Networks(nodes), &pool, &call_pool, &service, traces)?.into_parts();
    let method_names: Vec<&'static str> = module.method_names().collect();
    let call_layer = calls::CallLayer::new(service.clone(), method_names);
    // HTTP and WebSockets are quarry's own transports (see `http` and `ws`), both answering
    // through the same call layer over the methods.
    let rpc = tower::Layer::layer(
        &call_layer,
        ws::Dispatch::new(module, answered, config.max_response_bytes),
    );
    let websockets = std::sync::Arc::new(ws::Transport::new(config, service.clone(), rpc.clone()));
    let gate = gate::Gate::new(service.clone(), rpc, answer::BodyLimits::of(config));
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: config.listen,
            source,
        })?;
    let local_addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: config.listen,
        source,
    })?;
    let transport = std::sync::Arc::new(http::Transport::new(
        gate,
        websockets,
        config.max_request_bytes,
        config.max_connections,
    ));
    let (stop, handle) = jsonrpsee::server::stop_channel();
    tokio::spawn(http::serve(listener, transport, stop));
    Ok(RunningServer {
        local_addr,
        handle,
        keys: service.keys.len(),
        networks: service.networks.iter().map(|n| n.name.clone()).collect(),
    })
}
