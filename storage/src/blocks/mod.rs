//! Blocks as stored: the chain's headers, bodies, senders and receipts by number and a block's
//! insert, the compressed values of bodies and receipts with their codecs and zstd
//! dictionaries, the in-place receipt encoding, the transaction lookup by hash, and block-keyed
//! values packed to waste little of their pages.

pub mod block_codec;
pub mod block_dictionary;
pub(crate) mod chain;
pub(crate) mod receipts;
pub(crate) mod tx_lookup;
pub(crate) mod value_chunks;
