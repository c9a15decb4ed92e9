//! The HTTP gate in front of jsonrpsee: `/health`, `/ready` and `/metrics`; the network chosen
//! by the Host header; JSON-RPC only on `POST /v3/<KEY>` and WebSocket `/ws/v3/<KEY>`, with a
//! live key allowed on that network. Anything else is refused here with an HTTP status and a
//! JSON-RPC error body. A call refused for its rate turns the response into an HTTP 429. An
//! admitted WebSocket upgrade goes to quarry's own transport (`ws`). A JSON-RPC body over HTTP
//! is read here first, and where geth would answer it otherwise than jsonrpsee does
//! (notifications, odd ids: see `envelope`) it is answered or rewritten here.

use crate::{
    calls::RateLimited,
    envelope::{self, Plan},
    service::{Caller, Service},
};
use http_body_util::Full;
use jsonrpsee::server::{
    HttpBody, HttpRequest, HttpResponse,
    http::{self as http_transport, response},
};
use std::{
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};
use tower::{Layer, Service as TowerService};

#[derive(Debug, Clone)]
pub struct GateLayer {
    service: Arc<Service>,
    websockets: Arc<crate::ws::Transport>,
}

impl GateLayer {
    pub fn new(service: Arc<Service>, websockets: Arc<crate::ws::Transport>) -> Self {
        Self {
            service,
            websockets,
        }
    }
}

impl<S> Layer<S> for GateLayer {
    type Service = Gate<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Gate {
            inner,
            service: self.service.clone(),
            websockets: self.websockets.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Gate<S> {
    inner: S,
    service: Arc<Service>,
    websockets: Arc<crate::ws::Transport>,
}

/// Why a request was refused.
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    WrongPath,
    MissingKey,
    InvalidKey,
    UnknownHost(String),
    KeyNotForNetwork(String),
}

fn json_response(status: http::StatusCode, body: String) -> HttpResponse {
    let mut response = HttpResponse::new(HttpBody::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

impl Refusal {
    fn response(&self, service: &Service) -> HttpResponse {
        let (status, message) = match self {
            Self::WrongPath => (
                http::StatusCode::NOT_FOUND,
                "unknown path: send JSON-RPC as POST /v3/<API_KEY>, or over a WebSocket at /ws/v3/<API_KEY>".to_string(),
            ),
            Self::MissingKey => (
                http::StatusCode::UNAUTHORIZED,
                "missing API key: put it in the path, /v3/<API_KEY> or /ws/v3/<API_KEY>"
                    .to_string(),
            ),
            Self::InvalidKey => (http::StatusCode::UNAUTHORIZED, "invalid API key".to_string()),
            Self::UnknownHost(host) => {
                let known: Vec<&str> = service
                    .networks
                    .iter()
                    .flat_map(|n| n.hosts.iter().map(String::as_str))
                    .collect();
                (
                    http::StatusCode::NOT_FOUND,
                    format!(
                        "unknown host {host:?}: this server answers for {}",
                        known.join(", ")
                    ),
                )
            }
            Self::KeyNotForNetwork(network) => (
                http::StatusCode::FORBIDDEN,
                format!("this API key may not use network {network:?}"),
            ),
        };
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32600,"message":{}}}}}"#,
            serde_json::Value::from(message)
        );
        json_response(status, body)
    }
}

/// The key in `path`, given whether the request is a WebSocket upgrade.
fn key_in_path(path: &str, websocket: bool) -> Result<&str, Refusal> {
    let prefix = if websocket { "/ws/v3" } else { "/v3" };
    let rest = path.strip_prefix(prefix).ok_or(Refusal::WrongPath)?;
    let key = match rest {
        "" | "/" => return Err(Refusal::MissingKey),
        rest => rest.strip_prefix('/').ok_or(Refusal::WrongPath)?,
    };
    let key = key.strip_suffix('/').unwrap_or(key);
    if key.contains('/') {
        return Err(Refusal::WrongPath);
    }
    Ok(key)
}

/// The request's host name, lowercase and without the port (HTTP/1 Host header, or the
/// authority of an HTTP/2 request).
fn host_of<B>(request: &HttpRequest<B>) -> String {
    let authority = request
        .headers()
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()))
        .unwrap_or("");
    let host = match authority.strip_prefix('[') {
        // [v6]:port
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority.split(':').next().unwrap_or(authority),
    };
    host.to_ascii_lowercase()
}

fn is_websocket_upgrade<B>(request: &HttpRequest<B>) -> bool {
    request
        .headers()
        .get(http::header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

impl<S> Gate<S> {
    /// The caller a JSON-RPC request comes from, or why it is refused.
    fn admit<B>(&self, request: &HttpRequest<B>) -> Result<Caller, Refusal> {
        let host = host_of(request);
        let network = self
            .service
            .network_for_host(&host)
            .ok_or(Refusal::UnknownHost(host))?;
        let key = key_in_path(request.uri().path(), is_websocket_upgrade(request))?;
        let Some(grant) = self.service.keys.grant(key) else {
            tracing::debug!(key = %crate::config::redact(key), "refused an unknown API key");
            return Err(Refusal::InvalidKey);
        };
        let name = &self.service.networks[network].name;
        if !grant.allows(name) {
            return Err(Refusal::KeyNotForNetwork(name.clone()));
        }
        Ok(Caller { grant, network })
    }

    /// `/health`, `/ready` and `/metrics`, answered without a key.
    fn operations(&self, path: &str) -> Option<HttpResponse> {
        let service = &self.service;
        match path {
            "/health" => Some(json_response(
                http::StatusCode::OK,
                r#"{"status":"ok"}"#.into(),
            )),
            "/ready" => {
                let (ready, networks) = service.readiness();
                let status = if ready {
                    http::StatusCode::OK
                } else {
                    http::StatusCode::SERVICE_UNAVAILABLE
                };
                let body = serde_json::json!({"ready": ready, "networks": networks});
                Some(json_response(status, body.to_string()))
            }
            "/metrics" => {
                let mut response = HttpResponse::new(HttpBody::from(service.metrics.render()));
                response.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static("text/plain; version=0.0.4"),
                );
                Some(response)
            }
            _ => None,
        }
    }
}

/// A response to a JSON-RPC request that jsonrpsee did not see: 200 with `body` (empty when
/// there is nothing to answer, as geth answers notifications).
fn answered_here(body: String) -> HttpResponse {
    json_response(http::StatusCode::OK, body)
}

/// A call refused for its rate makes the whole response an HTTP 429 with Retry-After.
fn mark_rate_limited(response: &mut HttpResponse) {
    if let Some(limited) = response.extensions().get::<RateLimited>().cloned() {
        *response.status_mut() = http::StatusCode::TOO_MANY_REQUESTS;
        let seconds = limited.retry_after.as_secs_f64().ceil().max(1.0) as u64;
        response
            .headers_mut()
            .insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
    }
}

/// The body of `request`, read whole up to `max` bytes; past it, jsonrpsee's 413.
async fn read_body<B>(body: B, max: u32) -> Result<bytes::Bytes, HttpResponse>
where
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    use http_body_util::BodyExt;
    match http_body_util::Limited::new(body, max as usize)
        .collect()
        .await
    {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(response::too_large(max)),
        Err(_) => Err(response::internal_error()),
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<S, B> TowerService<HttpRequest<B>> for Gate<S>
where
    S: TowerService<HttpRequest<HttpBody>, Response = HttpResponse> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = HttpResponse;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: HttpRequest<B>) -> Self::Future {
        if let Some(response) = self.operations(request.uri().path()) {
            return Box::pin(async move { Ok(response) });
        }
        let caller = match self.admit(&request) {
            // An admitted WebSocket is quarry's own (see `ws`), not jsonrpsee's.
            Ok(caller) if is_websocket_upgrade(&request) => {
                let response = self.websockets.accept(request, caller);
                return Box::pin(async move { Ok(response) });
            }
            Ok(caller) => caller,
            Err(refusal) => {
                let response = refusal.response(&self.service);
                return Box::pin(async move { Ok(response) });
            }
        };
        let mut request = request.map(HttpBody::new);
        request.extensions_mut().insert(caller);
        // A JSON-RPC body is read here first, to answer it as geth would where jsonrpsee
        // would not (see `envelope`); anything else is jsonrpsee's to refuse.
        let json_post = request.method() == http::Method::POST
            && http_transport::is_json(request.headers().get(http::header::CONTENT_TYPE));
        if !json_post {
            let answer = self.inner.call(request);
            return Box::pin(async move {
                let mut response = answer.await?;
                mark_rate_limited(&mut response);
                Ok(response)
            });
        }
        // The service polled ready is the one to call; a clone takes its place.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let (max_bytes, max_batch) = (
            self.service.max_request_bytes,
            self.service.max_batch_requests as usize,
        );
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let body = match read_body(body, max_bytes).await {
                Ok(body) => body,
                Err(refused) => return Ok(refused),
            };
            let rewrite = match envelope::inspect(&body, max_batch) {
                Plan::Answer(answer) => return Ok(answered_here(answer)),
                Plan::Unchanged => None,
                Plan::Rewrite(rewrite) => Some(rewrite),
            };
            let mut parts = parts;
            let body = match &rewrite {
                Some(rewrite) => {
                    parts.headers.remove(http::header::CONTENT_LENGTH);
                    bytes::Bytes::from(rewrite.body.clone())
                }
                None => body,
            };
            let request = HttpRequest::from_parts(parts, HttpBody::new(Full::new(body)));
            let mut response = inner.call(request).await?;
            if let Some(rewrite) = rewrite {
                let (mut parts, body) = response.into_parts();
                let text = match read_body(body, u32::MAX).await {
                    Ok(text) => String::from_utf8_lossy(&text).into_owned(),
                    Err(failed) => return Ok(failed),
                };
                parts.headers.remove(http::header::CONTENT_LENGTH);
                response = HttpResponse::from_parts(parts, HttpBody::from(rewrite.finish(&text)));
            }
            mark_rate_limited(&mut response);
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(key_in_path("/v3/abc", false), Ok("abc"));
        assert_eq!(key_in_path("/v3/abc/", false), Ok("abc"));
        assert_eq!(key_in_path("/ws/v3/abc", true), Ok("abc"));
        assert_eq!(key_in_path("/v3", false), Err(Refusal::MissingKey));
        assert_eq!(key_in_path("/v3/", false), Err(Refusal::MissingKey));
        assert_eq!(key_in_path("/ws/v3/", true), Err(Refusal::MissingKey));
        assert_eq!(key_in_path("/", false), Err(Refusal::WrongPath));
        assert_eq!(key_in_path("/v3abc", false), Err(Refusal::WrongPath));
        assert_eq!(key_in_path("/v3/a/b", false), Err(Refusal::WrongPath));
        // A WebSocket must use /ws/v3 and plain HTTP must not.
        assert_eq!(key_in_path("/v3/abc", true), Err(Refusal::WrongPath));
        assert_eq!(key_in_path("/ws/v3/abc", false), Err(Refusal::WrongPath));
    }

    #[test]
    fn hosts_lose_their_port_and_case() {
        let with_host = |host: &str| {
            http::Request::builder()
                .uri("/v3/k")
                .header(http::header::HOST, host)
                .body(())
                .unwrap()
        };
        assert_eq!(
            host_of(&with_host("Mainnet.Example:8545")),
            "mainnet.example"
        );
        assert_eq!(host_of(&with_host("localhost")), "localhost");
        assert_eq!(host_of(&with_host("[::1]:8545")), "::1");
    }
}
