//! Who may call: the gate (the network by Host, the API key, CORS preflights), the key store with
//! its secrets, JWTs and allowlists, the addresses a call names, and the `Caller` attached to each
//! request.

pub mod allowlists;
pub mod caller;
pub mod cors;
pub mod gate;
pub mod key_jwts;
pub mod key_secrets;
pub mod keys;
pub mod named_addresses;
