//! The state as it is now: the stored state trie with its hashed leaves and branch nodes, and
//! the keccak hashing that state roots are made of.

pub mod keccak;
pub(crate) mod trie;
