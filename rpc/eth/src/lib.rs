//! quarry-eth owns the node's answers: the Ethereum JSON-RPC methods' semantics over
//! quarry-storage and quarry-executor (`node`), their parameters as geth parses them, geth's
//! JSON shapes, the caches, the one error type, the method table with each method's cost
//! class, and the watcher that turns commits and unwinds into block and log events. It knows
//! nothing of HTTP, API keys, plans, limits or Redis: the service (quarry-gateway) runs the
//! method table and implements the event sink.

mod cache;
pub mod call_params;
pub mod events;
pub mod log_filter;
mod methods;
mod node;
pub mod params;
mod parity_params;
pub mod raw_transaction;
mod rpc_error;
mod simulate_params;
mod trace_params;
pub mod types;
mod watcher;

pub use methods::{
    AddressParams, Answer, ConstantFn, Cost, Limit, MethodAnswer, MethodSpec, NodeFn, Pool,
    TxpoolRead, Unclassed, methods, to_raw,
};
pub use node::process_alive;
pub use node::{
    BlockAt, BlockMarks, DEFAULT_PROOF_WINDOW, LogsConfig, Node, NodeConfig, RawPart, Reads,
    Snapshot, Syncing,
};
pub use rpc_error::{Result, RpcError};
pub use watcher::watch;
