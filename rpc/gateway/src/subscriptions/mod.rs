//! What outlives a call: open WebSocket connections, their subscriptions (eth_subscribe) and
//! geth's polling filters, the methods that make them, and the notifications each new block sends.

pub mod connections;
pub mod filters;
pub mod hub;
pub mod kind;
pub mod methods;
pub mod notifications;
