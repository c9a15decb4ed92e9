//! Transactions upstreams reached over WebSocket (`transactions_url = "ws://…"` or
//! `"wss://…"`): one connection per URL, opened at the first call and kept for the next ones,
//! and opened again after it breaks. The upstream's answer, its errors included, comes back as
//! it gave it.

use jsonrpsee::{
    core::{ClientError, client::ClientT, traits::ToRpcParams},
    types::ErrorObjectOwned,
    ws_client::{WsClient, WsClientBuilder},
};
use serde_json::value::RawValue;
use std::{collections::HashMap, sync::Arc, time::Duration};
use tokio::sync::Mutex;

/// The largest answer taken from an upstream (txpool_content of a full pool runs to tens of MB).
const MAX_ANSWER_BYTES: u32 = 256 << 20;

/// Whether `url` names a WebSocket upstream.
pub fn is_ws_url(url: &str) -> bool {
    url.starts_with("ws://") || url.starts_with("wss://")
}

/// The open connections, by URL.
#[derive(Debug, Default)]
pub struct WsUpstreams {
    clients: Mutex<HashMap<String, Arc<WsClient>>>,
}

/// A call's parameters as the caller sent them (a JSON array or object, or none).
struct Forwarded(Option<Box<RawValue>>);

impl ToRpcParams for Forwarded {
    fn to_rpc_params(self) -> Result<Option<Box<RawValue>>, serde_json::Error> {
        Ok(self.0)
    }
}

impl WsUpstreams {
    /// One call to the upstream at `url`: its result or its error, verbatim (`Ok`); `Err`: it
    /// gave no answer within `timeout` (connecting included), with why.
    pub async fn ask(
        &self,
        url: &str,
        timeout: Duration,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<Result<Box<RawValue>, ErrorObjectOwned>, String> {
        let asked = tokio::time::timeout(timeout, async {
            let client = self.client(url, timeout).await?;
            let answer = client
                .request::<Box<RawValue>, _>(method, Forwarded(params))
                .await;
            match answer {
                Ok(result) => Ok(Ok(result)),
                Err(ClientError::Call(error)) => Ok(Err(error)),
                Err(other) => {
                    // The connection may be gone: the next call opens a new one.
                    self.forget(url, &client).await;
                    Err(other.to_string())
                }
            }
        })
        .await;
        asked.unwrap_or_else(|_| Err("timed out".into()))
    }

    /// The open connection to `url`, or a new one.
    async fn client(&self, url: &str, timeout: Duration) -> Result<Arc<WsClient>, String> {
        let mut clients = self.clients.lock().await;
        if let Some(client) = clients.get(url).filter(|c| c.is_connected()) {
            return Ok(client.clone());
        }
        let client = WsClientBuilder::default()
            .request_timeout(timeout)
            .connection_timeout(timeout)
            .max_response_size(MAX_ANSWER_BYTES)
            .build(url)
            .await
            .map_err(|e| e.to_string())?;
        let client = Arc::new(client);
        clients.insert(url.to_owned(), client.clone());
        Ok(client)
    }

    async fn forget(&self, url: &str, broken: &Arc<WsClient>) {
        let mut clients = self.clients.lock().await;
        if clients.get(url).is_some_and(|c| Arc::ptr_eq(c, broken)) {
            clients.remove(url);
        }
    }
}
