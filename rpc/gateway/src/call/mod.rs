//! The method call: a body split into its calls (the JSON-RPC envelope as geth reads it), the
//! call layer (each call admitted by the key's allowlists, weighed against its limits, routed
//! and counted), the method table with one row per method, the reply's text, and the
//! transactions upstream and partner that some calls go on to.

pub mod body;
pub mod envelope;
pub mod layer;
pub mod remotes;
pub mod reply;
pub mod table;
pub mod transactions;
