//! quarry-executor owns execution: the chain's fork rules, block execution with revm through
//! alloy-evm, block verification (header rules, roots, gas, bloom, requests), state roots and
//! proofs from the trie stored by quarry-storage, genesis construction, and the one revm
//! database adapter over quarry-storage.

pub mod block;
pub mod call;
mod call_clock;
pub mod chain_spec;
mod collision;
mod eip1283;
pub mod error;
pub mod forks;
pub mod genesis;
pub mod networks;
pub mod overrides;
pub mod parity_trace;
mod receipt_builder;
pub mod simulate;
pub mod state_db;
pub mod state_root;
pub mod trace;
pub mod verify;

pub use block::{
    BlockTemplate, ExecutedBlock, ExecutionCache, SealedBlock, build_block, execute_block,
    execute_block_in_range,
};
pub use call::{BlockOverrides, CallContext, CallError, CallOutcome, CallRequest};
pub use chain_spec::ChainSpec;
pub use error::{BlockError, Error, Invalid, Result};
pub use networks::Network;
pub use overrides::{AccountOverride, StateOverrides};
pub use receipt_builder::consensus_receipt;
pub use state_db::{StateAt, StateCache, StateSnapshot};
pub use state_root::{
    AccountProof, OlderState, ProofState, SlotProof, StateTrie, account_proof, trie_account_after,
};
