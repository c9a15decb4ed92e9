//! Asking another JSON-RPC endpoint over HTTP: a network's partner, for the calls quarry could
//! not answer itself, and a peer's head, which `/ready` measures lag against.

use jsonrpsee::types::ErrorObjectOwned;
use serde_json::value::RawValue;
use std::time::Duration;

/// A peer's head: its answer to eth_blockNumber (`/ready` measures lag against it).
pub fn peer_head(url: &str, timeout: Duration) -> Result<u64, String> {
    match ask_partner(url, timeout, "eth_blockNumber", None)? {
        Ok(result) => {
            let quantity: String =
                serde_json::from_str(result.get()).map_err(|e| format!("eth_blockNumber: {e}"))?;
            u64::from_str_radix(quantity.trim_start_matches("0x"), 16)
                .map_err(|e| format!("eth_blockNumber answered {quantity:?}: {e}"))
        }
        Err(error) => Err(format!("eth_blockNumber failed: {}", error.message())),
    }
}

/// The partner's answer to one call: its result or its error. `Err`: it gave none.
pub fn ask_partner(
    url: &str,
    timeout: Duration,
    method: &str,
    params: Option<&RawValue>,
) -> Result<Result<Box<RawValue>, ErrorObjectOwned>, String> {
    ask(
        &ureq::Agent::new_with_defaults(),
        url,
        timeout,
        method,
        params,
    )
}

/// One call to the endpoint at `url` through `agent` (whose connections are kept for the next
/// call): its result or its error, verbatim. `Err`: it gave none within `timeout`.
pub fn ask(
    agent: &ureq::Agent,
    url: &str,
    timeout: Duration,
    method: &str,
    params: Option<&RawValue>,
) -> Result<Result<Box<RawValue>, ErrorObjectOwned>, String> {
    #[derive(serde::Deserialize)]
    struct PartnerReply {
        result: Option<Box<RawValue>>,
        error: Option<ErrorObjectOwned>,
    }
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": params.map_or(Ok(serde_json::Value::Array(vec![])), |p| serde_json::from_str(p.get())).map_err(|e| e.to_string())?,
    });
    let mut response = agent
        .post(url)
        .header("Content-Type", "application/json")
        .config()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .send(body.to_string())
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let text = response
        .body_mut()
        .read_to_string()
        .map_err(|e| e.to_string())?;
    let reply: PartnerReply = serde_json::from_str(&text)
        .map_err(|e| format!("HTTP {status}, not a JSON-RPC answer: {e}"))?;
    match (reply.result, reply.error) {
        (_, Some(error)) => Ok(Err(error)),
        (Some(result), None) => Ok(Ok(result)),
        (None, None) => serde_json::value::to_raw_value(&serde_json::Value::Null)
            .map(Ok)
            .map_err(|e| e.to_string()),
    }
}
