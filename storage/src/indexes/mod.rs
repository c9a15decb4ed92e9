//! The indexes over blocks: the log index with the eth_getLogs query over it, and the trace
//! index that trace_filter reads.

pub(crate) mod log_index;
pub(crate) mod trace_index;
