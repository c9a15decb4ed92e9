//! quarry-gateway owns the service around the nodes' answers: quarry's own HTTP and WebSocket
//! transports on one listener, the gate (host to network, API key), the envelope and replies,
//! keys, plans, weights, local and Redis limits, the heavy-job pools and fair scheduling,
//! metrics, config, readiness, filters and subscriptions, and partner forwarding. The answers
//! themselves come from quarry-eth's method table.

// The rooms a request walks down through, and its answer back up: the transports (HTTP and
// WebSocket connections, compression), access (the gate: network by Host, API key, CORS), the
// method call (a body's calls, the call layer that admits each against the key's allowlists,
// weighs it against its limits and routes it, and the method table) with the limits it
// consults (weights, rate limits, the pools heavy jobs run on), and subscriptions (what
// outlives a call). Beside them, what the whole service shares: its config, state, networks,
// metrics and readiness.
mod access;
mod call;
mod config;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz;
mod limits;
mod metrics;
mod networks;
mod ready;
mod service;
mod subscriptions;
mod transport;

pub use access::caller::Networks;
pub use access::{allowlists, cors, key_jwts, key_secrets, keys};
pub use config::{ApiKey, Config, ConfigError, NetworkConfig, Plan};

use jsonrpsee::server::ServerHandle;
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

/// Every method quarry serves, one row each: the service's own (subscriptions, filters,
/// transactions) and quarry-eth's table.
fn rows() -> Vec<call::table::Row> {
    let mut rows = subscriptions::methods::subscriptions();
    rows.extend(subscriptions::methods::filters());
    rows.extend(call::transactions::transactions());
    rows.extend(
        quarry_eth::methods()
            .into_iter()
            .map(call::table::from_node),
    );
    rows
}

/// The row of served method `method`, for tests that read what it declares.
#[cfg(test)]
fn row(method: &str) -> Option<call::table::Row> {
    rows().into_iter().find(|row| row.name == method)
}

/// The names of every method quarry serves, sorted.
pub fn served_methods() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = rows().iter().map(|row| row.name).collect();
    names.sort_unstable();
    names
}

/// Starts the server on `config.listen` (port 0 picks a free port) and returns at once. It
/// serves the config's networks, or `default_db` on any host when the config declares none.
pub async fn start(
    config: &Config,
    default_db: Option<Database>,
) -> std::result::Result<RunningServer, ServeError> {
    let opened = networks::open_networks(config, default_db)?;
    let nodes = networks::open_nodes(config, &opened)?;
    let networks = opened.into_iter().map(|(network, _)| network).collect();
    let service = Arc::new(service::Service::new(config, networks).map_err(ServeError::Open)?);
    service.watch();
    let pools =
        limits::pool::Pools::new(config).map_err(|e| ServeError::ReadPool(e.to_string()))?;
    let poll = std::time::Duration::from_millis(config.new_block_poll_ms.max(1));
    for (network, node) in nodes.iter().enumerate() {
        let sink = Arc::new(subscriptions::notifications::NetworkEvents::new(
            service.clone(),
            network,
        ));
        quarry_eth::watch(node.clone(), network, sink, poll)
            .map_err(|e| ServeError::Open(format!("cannot start the new-block watchers: {e}")))?;
    }
    let context = call::table::Context {
        service: service.clone(),
        networks: Networks(nodes),
        pools,
    };
    let table = call::table::Table::new(rows(), context, config.max_response_bytes)?;
    // HTTP and WebSockets are quarry's own transports (see `http` and `ws`), both answering
    // through the same call layer over the method table.
    let rpc = call::layer::Calls::new(service.clone(), table);
    let websockets = Arc::new(transport::ws::WsTransport::new(
        config,
        service.clone(),
        rpc.clone(),
    ));
    let gate = access::gate::Gate::new(service.clone(), rpc, call::body::BodyLimits::of(config));
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
    let transport = Arc::new(transport::http::HttpTransport::new(
        gate,
        websockets,
        config.max_request_bytes,
        config.max_connections,
    ));
    let (stop, handle) = jsonrpsee::server::stop_channel();
    tokio::spawn(transport::http::serve(listener, transport, stop));
    Ok(RunningServer {
        local_addr,
        handle,
        keys: service.keys.len(),
        networks: service.networks.iter().map(|n| n.name.clone()).collect(),
    })
}
