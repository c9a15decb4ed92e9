//! quarry-gateway owns the service around the nodes' answers: quarry's own HTTP and WebSocket
//! transports on one listener, the gate (host to network, API key), the envelope and replies,
//! keys, plans, weights, local and Redis limits, the heavy-job pools and fair scheduling,
//! metrics, config, readiness, filters and subscriptions, and partner forwarding. The answers
//! themselves come from quarry-eth's method table.

mod answer;
mod call_layer;
mod caller;
mod config;
mod connections;
mod dispatch;
mod envelope;
mod filters;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz;
mod gate;
mod heavy;
mod http;
mod http_reply;
pub mod keys;
mod limits;
mod metrics;
mod notifications;
mod partner;
mod pool;
mod ready;
mod registry;
mod reply;
mod service;
mod service_methods;
mod shared_limits;
mod sub_kind;
mod subscriptions;
mod verdict;
mod weights;
mod ws;

pub use caller::Networks;
pub use config::{ApiKey, Config, ConfigError, NetworkConfig, Plan};

use jsonrpsee::server::ServerHandle;
use quarry_eth::{BlockMarks, LogsConfig, Node, NodeConfig};
use quarry_storage::Database;
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
) -> std::result::Result<Vec<(caller::Network, Option<&NetworkConfig>)>, ServeError> {
    if config.networks.is_empty() {
        let db = default_db.ok_or_else(|| {
            ServeError::Open("no database given and no [[networks]] in the config".into())
        })?;
        check_layout(&db, None)?;
        let network = caller::Network {
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
            let opened = caller::Network {
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

/// What the nodes' answers take from the config.
fn node_config(config: &Config) -> NodeConfig {
    NodeConfig {
        marks: BlockMarks {
            safe: config.safe_block,
            finalized: config.finalized_block,
        },
        call_timeout: std::time::Duration::from_millis(config.call_timeout_ms),
        logs: LogsConfig {
            max_results: config.max_logs,
            timeout: std::time::Duration::from_millis(config.logs_timeout_ms),
            max_params: config.max_log_params,
            use_index: config.log_index,
        },
        proof_window: config.proof_window,
        max_trace_bytes: config.max_trace_bytes,
    }
}

/// One node per opened network; a network declared a rollup of another gets that one's
/// database as its L1, and a declared chain id must be the stored one.
fn open_nodes(
    config: &Config,
    opened: &[(caller::Network, Option<&NetworkConfig>)],
) -> Result<Vec<Arc<Node>>, ServeError> {
    let node_config = node_config(config);
    let mut nodes = Vec::with_capacity(opened.len());
    for (network, declared) in opened {
        let l1 = declared
            .and_then(|n| n.rollup_of.as_ref())
            .and_then(|l1| opened.iter().find(|(n, _)| &n.name == l1))
            .map(|(n, _)| n.db.clone());
        let node = Node::new(network.db.clone(), node_config, l1)
            .map_err(|e| ServeError::Open(format!("network {}: {e}", network.name)))?;
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
        nodes.push(Arc::new(node));
    }
    Ok(nodes)
}

/// Every method quarry serves over `nodes`: the ones the service answers itself
/// (subscriptions, filters) and quarry-eth's table.
fn register_methods(
    nodes: Vec<Arc<Node>>,
    service: &Arc<service::Service>,
    pools: &pool::Pools,
) -> Result<registry::Registry, ServeError> {
    let mut registry = registry::Registry::new(Networks(nodes));
    service_methods::register_subscriptions(&mut registry.module, service)?;
    service_methods::register_filters(&mut registry.module, &pools.read, service)?;
    registry.add_table(quarry_eth::methods(), pools)?;
    Ok(registry)
}

/// Starts the server on `config.listen` (port 0 picks a free port) and returns at once. It
/// serves the config's networks, or `default_db` on any host when the config declares none.
pub async fn start(
    config: &Config,
    default_db: Option<Database>,
) -> std::result::Result<RunningServer, ServeError> {
    let opened = open_networks(config, default_db)?;
    let nodes = open_nodes(config, &opened)?;
    let networks = opened.into_iter().map(|(network, _)| network).collect();
    let service = Arc::new(service::Service::new(config, networks).map_err(ServeError::Open)?);
    service.watch();
    let pools = pool::Pools::new(config).map_err(|e| ServeError::ReadPool(e.to_string()))?;
    let poll = std::time::Duration::from_millis(config.new_block_poll_ms.max(1));
    for (network, node) in nodes.iter().enumerate() {
        let sink = Arc::new(notifications::NetworkEvents::new(service.clone(), network));
        quarry_eth::watch(node.clone(), network, sink, poll)
            .map_err(|e| ServeError::Open(format!("cannot start the new-block watchers: {e}")))?;
    }
    let (module, answered) = register_methods(nodes, &service, &pools)?.into_parts();
    let method_names: Vec<&'static str> = module.method_names().collect();
    let call_layer = call_layer::CallLayer::new(service.clone(), method_names);
    // HTTP and WebSockets are quarry's own transports (see `http` and `ws`), both answering
    // through the same call layer over the methods.
    let rpc = tower::Layer::layer(
        &call_layer,
        dispatch::Dispatch::new(module, answered, config.max_response_bytes),
    );
    let websockets = Arc::new(ws::WsTransport::new(config, service.clone(), rpc.clone()));
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
    let transport = Arc::new(http::HttpTransport::new(
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
