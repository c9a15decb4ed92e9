//! The record types of execution history files: e2store's type field, two bytes little-endian.

/// A block's header, snappy-framed RLP (era1 and ere).
pub const HEADER: u16 = 0x03;
/// A block's body, `[transactions, uncles, withdrawals?]`, snappy-framed RLP (era1 and ere).
pub const BODY: u16 = 0x04;
/// A block's receipts with blooms, as the network encodes them, snappy-framed (era1).
pub const RECEIPTS: u16 = 0x05;
/// A block's total difficulty, 32 bytes little-endian (era1; ere before the merge).
pub const TOTAL_DIFFICULTY: u16 = 0x06;
/// The SSZ hash tree root of the (block hash, total difficulty) list (era1; ere before the merge).
pub const ACCUMULATOR: u16 = 0x07;
/// era1's block index: first number, one offset per block, count.
pub const BLOCK_INDEX: u16 = 0x3266;
/// A block's receipts without blooms, `[type, status, cumulative gas, logs]` each (ere).
pub const SLIM_RECEIPTS: u16 = 0x0a;
/// A block's proof of inclusion in the beacon chain's history (ere; never written here).
pub const PROOF: u16 = 0x0b;
/// ere's block index: first number, each block's record offsets, components, count.
pub const DYNAMIC_INDEX: u16 = 0x3267;
