//! Who is calling on which network: the served networks as the service sees them, the
//! `Caller` the gate attaches to each request, and the nodes the methods answer from, found by
//! the caller's network.

use crate::{access::cors::CorsOrigins, access::key_jwts::TokenGrant, access::keys::KeyGrant};
use jsonrpsee::{Extensions, types::ErrorObjectOwned};
use quarry_eth::{Node, RpcError};
use quarry_storage::Database;
use std::sync::Arc;

/// One served network, as the service layer sees it.
#[derive(Debug)]
pub struct Network {
    pub name: String,
    /// Lowercase host names; empty: any host (the single `--datadir` network).
    pub hosts: Vec<String>,
    pub partner_url: Option<String>,
    /// Where transactions go (`transactions_url`); None: the network takes none.
    pub transactions_url: Option<String>,
    /// JSON-RPC endpoints of the same chain whose heads `/ready` compares with.
    pub peers: Vec<String>,
    /// Which pages on other origins may call it from a browser.
    pub cors: CorsOrigins,
    pub db: Database,
}

/// Who is calling on which network: attached to a request by the gate, read by the call layer
/// and the methods (for WebSocket calls it comes from the upgrade request).
#[derive(Debug, Clone)]
pub struct Caller {
    pub grant: KeyGrant,
    pub network: usize,
    /// The request's (or the WebSocket upgrade's) headers that a key's allowlists read.
    pub client: ClientHeaders,
    /// The request carried the key's secret: the key's allowlists do not apply.
    pub bypass_allowlists: bool,
    /// The request's verified JWT, whose allowlists narrow the key's.
    pub token: Option<Arc<TokenGrant>>,
}

/// The `Origin` and `User-Agent` a request came with.
#[derive(Debug, Clone, Default)]
pub struct ClientHeaders {
    pub origin: Option<Arc<str>>,
    pub user_agent: Option<Arc<str>>,
}

impl ClientHeaders {
    pub fn of(headers: &http::HeaderMap) -> Self {
        let text = |name| {
            headers
                .get(name)
                .map(|v: &http::HeaderValue| Arc::from(String::from_utf8_lossy(v.as_bytes())))
        };
        Self {
            origin: text(http::header::ORIGIN),
            user_agent: text(http::header::USER_AGENT),
        }
    }
}

/// The nodes of the served networks: the methods' context.
#[derive(Debug, Clone)]
pub struct Networks(pub Vec<Arc<Node>>);

impl Networks {
    /// The node of the network the call came in on.
    pub fn of(&self, extensions: &Extensions) -> Result<Arc<Node>, ErrorObjectOwned> {
        extensions
            .get::<Caller>()
            .and_then(|caller| self.0.get(caller.network))
            .cloned()
            .ok_or_else(|| {
                ErrorObjectOwned::from(RpcError::Internal(
                    "a call reached a method without a network".into(),
                ))
            })
    }
}
