//! The `quarry` commands: one module per command, each holding its clap arguments and its
//! `run`, and the helpers several of them share (which chain a datadir holds, opening one,
//! importing into it, serving it).

pub mod backup;
pub mod blocktest;
mod chain;
mod datadir;
pub mod dev;
pub mod devchain;
pub mod export_era;
pub mod follow;
mod import;
pub mod index_logs;
pub mod index_traces;
pub mod ingest;
pub mod keys;
pub mod migrate;
pub mod prune;
pub mod serve;
mod server;
pub mod unwind;
