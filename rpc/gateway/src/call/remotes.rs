//! The JSON-RPC endpoints quarry asks: a network's partner (the calls it could not answer
//! itself), its peers (whose heads `/ready` measures lag against) and its transactions
//! upstream. All go through jsonrpsee's clients, as `quarry follow` does: one client per URL,
//! HTTP(S) or WebSocket, made at the first call and kept (an HTTP client keeps its
//! connections; a WebSocket one is opened again after it breaks). An endpoint's answer, its
//! errors included, comes back as it gave it.

use jsonrpsee::{
    core::{ClientError, client::ClientT, traits::ToRpcParams},
    http_client::{HttpClient, HttpClientBuilder, HttpResponse, RpcService},
    types::ErrorObjectOwned,
    ws_client::{WsClient, WsClientBuilder},
};
use serde_json::value::RawValue;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};
use tower::{ServiceBuilder, util::MapResponse};

/// The largest answer taken from an endpoint (txpool_content of a full pool runs to tens of MB).
const MAX_ANSWER_BYTES: u32 = 256 << 20;
/// The clients' own bound on a call. Every call has its caller's timeout around it; this only
/// backstops it.
const BACKSTOP: Duration = Duration::from_secs(600);

/// An endpoint's answer to one call: its result or its error (`Ok`); `Err`: it gave none, with
/// why.
pub type Asked = Result<Result<Box<RawValue>, ErrorObjectOwned>, String>;

type Incoming = HttpResponse<hyper::body::Incoming>;
type Http = HttpClient<
    jsonrpsee::core::middleware::layer::RpcLogger<
        RpcService<MapResponse<jsonrpsee::http_client::HttpBackend, fn(Incoming) -> Incoming>>,
    >,
>;

/// Whether `url` names a WebSocket endpoint.
pub fn is_ws_url(url: &str) -> bool {
    url.starts_with("ws://") || url.starts_with("wss://")
}

/// One endpoint's client.
#[derive(Clone)]
enum Remote {
    Http(Arc<Http>),
    Ws(Arc<WsClient>),
}

/// The clients, by URL.
#[derive(Default)]
pub struct Remotes {
    clients: Mutex<HashMap<String, Remote>>,
}

impl std::fmt::Debug for Remotes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remotes").finish_non_exhaustive()
    }
}

/// A call's parameters as the caller sent them (a JSON array or object, or none).
struct Forwarded(Option<Box<RawValue>>);

impl ToRpcParams for Forwarded {
    fn to_rpc_params(self) -> Result<Option<Box<RawValue>>, serde_json::Error> {
        Ok(self.0)
    }
}

/// A JSON answer with an error status (a hosted endpoint's 429 with its JSON-RPC error, say)
/// is read as an answer: jsonrpsee's HTTP client would otherwise drop its body, and the error
/// goes back verbatim. Other error statuses stay transport errors.
fn json_errors_as_answers(mut response: Incoming) -> Incoming {
    let json = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if json && !response.status().is_success() {
        *response.status_mut() = http::StatusCode::OK;
    }
    response
}

impl Remotes {
    /// One call to the endpoint at `url`: its result or its error, verbatim (`Ok`); `Err`: it
    /// gave no answer within `timeout` (connecting included), with why.
    pub async fn ask(
        &self,
        url: &str,
        timeout: Duration,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Asked {
        let asked = tokio::time::timeout(timeout, async {
            let remote = self.client(url, timeout).await?;
            let answer = match &remote {
                Remote::Http(client) => {
                    client
                        .request::<Box<RawValue>, _>(method, Forwarded(params))
                        .await
                }
                Remote::Ws(client) => {
                    client
                        .request::<Box<RawValue>, _>(method, Forwarded(params))
                        .await
                }
            };
            match answer {
                Ok(result) => Ok(Ok(result)),
                Err(ClientError::Call(error)) => Ok(Err(error)),
                Err(other) => {
                    // A WebSocket may be gone: the next call opens a new one.
                    self.forget(url, &remote);
                    Err(other.to_string())
                }
            }
        })
        .await;
        asked.unwrap_or_else(|_| Err("timed out".into()))
    }

    /// A peer's head: its answer to eth_blockNumber.
    pub async fn peer_head(&self, url: &str, timeout: Duration) -> Result<u64, String> {
        match self.ask(url, timeout, "eth_blockNumber", None).await? {
            Ok(result) => {
                let quantity: String = serde_json::from_str(result.get())
                    .map_err(|e| format!("eth_blockNumber: {e}"))?;
                u64::from_str_radix(quantity.trim_start_matches("0x"), 16)
                    .map_err(|e| format!("eth_blockNumber answered {quantity:?}: {e}"))
            }
            Err(error) => Err(format!("eth_blockNumber failed: {}", error.message())),
        }
    }

    /// The kept client of `url`, or a new one. A WebSocket connects outside the lock, so a
    /// slow endpoint does not hold up calls to the others.
    async fn client(&self, url: &str, timeout: Duration) -> Result<Remote, String> {
        let kept = self.lock().get(url).cloned();
        match kept {
            Some(Remote::Ws(client)) if !client.is_connected() => {}
            Some(remote) => return Ok(remote),
            None => {}
        }
        let remote = if is_ws_url(url) {
            let client = WsClientBuilder::default()
                .request_timeout(BACKSTOP)
                .connection_timeout(timeout)
                .max_response_size(MAX_ANSWER_BYTES)
                .build(url)
                .await
                .map_err(|e| e.to_string())?;
            Remote::Ws(Arc::new(client))
        } else {
            let layers = ServiceBuilder::new()
                .map_response(json_errors_as_answers as fn(Incoming) -> Incoming);
            let client = HttpClientBuilder::default()
                .set_http_middleware(layers)
                .request_timeout(BACKSTOP)
                .max_response_size(MAX_ANSWER_BYTES)
                .build(url)
                .map_err(|e| e.to_string())?;
            Remote::Http(Arc::new(client))
        };
        self.lock().insert(url.to_owned(), remote.clone());
        Ok(remote)
    }

    fn forget(&self, url: &str, broken: &Remote) {
        let Remote::Ws(broken) = broken else { return };
        let mut clients = self.lock();
        if matches!(clients.get(url), Some(Remote::Ws(c)) if Arc::ptr_eq(c, broken)) {
            clients.remove(url);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Remote>> {
        // The map holds clients only: one a panicking thread left is still whole.
        self.clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
