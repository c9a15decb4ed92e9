//! quarry-rpc owns the JSON-RPC service: the jsonrpsee server (HTTP and WebSocket on one
//! listener), API keys and routing, request limits, the methods' parameters and JSON shapes, and
//! the one place where errors become JSON-RPC errors.

mod auth;
mod config;
mod error;
mod node;
mod params;
mod types;

pub use config::{ApiKey, Config, ConfigError};
pub use error::{Result, RpcError};
pub use node::{BlockMarks, Node};

use jsonrpsee::{
    RpcModule,
    server::{BatchRequestConfig, Server, ServerConfig, ServerHandle},
    types::{ErrorObjectOwned, Params},
};
use params::{Args, BlockId, BlockTag, Index, StorageKey};
use quarry_storage::Database;
use serde::Serialize;
use std::net::SocketAddr;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("registering method {0}: duplicate name")]
    Register(String),
}

/// A running server; it stops when `stop` is called or the handle is dropped after `stopped`.
pub struct RunningServer {
    pub local_addr: SocketAddr,
    pub handle: ServerHandle,
}

/// Registers a method whose handler runs on a blocking thread: it parses the positional
/// parameters named `names` (the first `required` of them mandatory) and answers from `node`.
fn register<R, F>(
    module: &mut RpcModule<Node>,
    method: &'static str,
    names: &'static [&'static str],
    required: usize,
    handler: F,
) -> std::result::Result<(), ServeError>
where
    R: Serialize + Clone + Send + 'static,
    F: Fn(&Node, Args) -> Result<R> + Clone + Send + Sync + 'static,
{
    module
        .register_blocking_method(
            method,
            move |params: Params<'_>, node, _| -> std::result::Result<R, ErrorObjectOwned> {
                let args = Args::parse(&params, names, required)?;
                Ok(handler(&node, args)?)
            },
        )
        .map_err(|_| ServeError::Register(method.to_string()))?;
    Ok(())
}

/// Every method quarry serves, answered from `node`.
pub fn methods(node: Node) -> std::result::Result<RpcModule<Node>, ServeError> {
    let mut module = RpcModule::new(node);
    register(
        &mut module,
        "eth_getBlockByNumber",
        &["blockNumber", "fullTransactions"],
        2,
        |node, args| node.block_by_number(args.required(0)?, args.required(1)?),
    )?;
    register(
        &mut module,
        "eth_getBlockByHash",
        &["blockHash", "fullTransactions"],
        2,
        |node, args| node.block_by_hash(args.required(0)?, args.required(1)?),
    )?;
    register(
        &mut module,
        "eth_getUncleByBlockNumberAndIndex",
        &["blockNumber", "uncleIndex"],
        2,
        |node, args| {
            let Index(index) = args.required(1)?;
            node.uncle_by_block_number(args.required(0)?, index)
        },
    )?;
    register(
        &mut module,
        "eth_getUncleByBlockHashAndIndex",
        &["blockHash", "uncleIndex"],
        2,
        |node, args| {
            let Index(index) = args.required(1)?;
            node.uncle_by_block_hash(args.required(0)?, index)
        },
    )?;
    register(
        &mut module,
        "eth_getTransactionByBlockNumberAndIndex",
        &["blockNumber", "transactionIndex"],
        2,
        |node, args| {
            let Index(index) = args.required(1)?;
            node.transaction_by_block_number(args.required::<BlockTag>(0)?, index)
        },
    )?;
    register(
        &mut module,
        "eth_getTransactionByBlockHashAndIndex",
        &["blockHash", "transactionIndex"],
        2,
        |node, args| {
            let Index(index) = args.required(1)?;
            node.transaction_by_block_hash(args.required(0)?, index)
        },
    )?;
    register(
        &mut module,
        "eth_getTransactionReceipt",
        &["transactionHash"],
        1,
        |node, args| node.transaction_receipt(args.required(0)?),
    )?;
    register(
        &mut module,
        "eth_getStorageAt",
        &["address", "storageSlot", "block"],
        2,
        |node, args| {
            let StorageKey(slot) = args.required(1)?;
            let at = args
                .optional::<BlockId>(2)?
                .unwrap_or(BlockId::Tag(BlockTag::Latest));
            node.storage_at(args.required(0)?, slot, at)
        },
    )?;
    register(&mut module, "rollup_getInfo", &[], 0, |node, _| {
        node.rollup_info()
    })?;
    register(&mut module, "web3_clientVersion", &[], 0, |_, _| {
        Ok(concat!("quarry/v", env!("CARGO_PKG_VERSION")))
    })?;
    Ok(module)
}

/// Starts the server on `config.listen` (port 0 picks a free port) and returns at once.
pub async fn start(
    config: &Config,
    db: Database,
) -> std::result::Result<RunningServer, ServeError> {
    let node = Node::new(
        db,
        BlockMarks {
            safe: config.safe_block,
            finalized: config.finalized_block,
        },
    );
    let module = methods(node)?;
    let auth = auth::AuthLayer::new(config.keys.iter().map(|k| k.key.clone()));
    let server_config = ServerConfig::builder()
        .max_request_body_size(config.max_request_bytes)
        .max_response_body_size(config.max_response_bytes)
        .max_connections(config.max_connections)
        .set_batch_request_config(BatchRequestConfig::Limit(config.max_batch_requests))
        .build();
    let server = Server::builder()
        .set_config(server_config)
        .set_http_middleware(tower::ServiceBuilder::new().layer(auth))
        .build(config.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: config.listen,
            source,
        })?;
    let local_addr = server.local_addr().map_err(|source| ServeError::Bind {
        addr: config.listen,
        source,
    })?;
    let handle = server.start(module);
    Ok(RunningServer { local_addr, handle })
}
