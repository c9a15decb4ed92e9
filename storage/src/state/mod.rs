//! The state: the latest plain state with its reads as of an older block and a block's changes
//! written into it, the stored state trie with its hashed leaves and branch nodes, and the
//! keccak hashing that state roots are made of.

pub mod keccak;
pub(crate) mod plain;
pub(crate) mod trie;
