//! The state's history: each block's changesets and the unwind that uses them, the per-key
//! block lists that answer the state after an older block, the state-history window that
//! prunes them, and the state trie's node history with its thinning (`proof_history`).

pub(crate) mod changesets;
pub(crate) mod proof_history;
pub(crate) mod state_lists;
pub(crate) mod state_window;
pub(crate) mod trie_history;
