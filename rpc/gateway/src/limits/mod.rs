//! How much a caller may use: method weights, per-key rate limits and daily quotas (in this
//! process or shared in Redis) with their one verdict type, and the read and call pools where
//! heavy jobs take fair turns.

pub mod heavy;
pub mod local;
pub mod pool;
pub mod shared;
pub mod verdict;
pub mod weights;
