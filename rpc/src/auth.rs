//! Routing and API keys: HTTP on `POST /v3/<KEY>`, WebSocket on `/ws/v3/<KEY>`. Anything else
//! is refused before jsonrpsee sees it, with an HTTP status and a JSON-RPC error body.

use crate::config::redact;
use jsonrpsee::server::{HttpBody, HttpRequest, HttpResponse};
use std::{
    collections::HashSet,
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};
use tower::{Layer, Service};

#[derive(Debug, Clone)]
pub struct AuthLayer {
    keys: Arc<HashSet<String>>,
}

impl AuthLayer {
    pub fn new(keys: impl IntoIterator<Item = String>) -> Self {
        Self {
            keys: Arc::new(keys.into_iter().collect()),
        }
    }
}

impl<S> Layer<S> for AuthLayer {
    type Service = Auth<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Auth {
            inner,
            keys: self.keys.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Auth<S> {
    inner: S,
    keys: Arc<HashSet<String>>,
}

/// Why a request was refused.
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    WrongPath,
    MissingKey,
    InvalidKey,
}

impl Refusal {
    fn response(&self) -> HttpResponse {
        let (status, message) = match self {
            Self::WrongPath => (
                http::StatusCode::NOT_FOUND,
                "unknown path: send JSON-RPC as POST /v3/<API_KEY>, or over a WebSocket at /ws/v3/<API_KEY>",
            ),
            Self::MissingKey => (
                http::StatusCode::UNAUTHORIZED,
                "missing API key: put it in the path, /v3/<API_KEY> or /ws/v3/<API_KEY>",
            ),
            Self::InvalidKey => (http::StatusCode::UNAUTHORIZED, "invalid API key"),
        };
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32600,"message":{}}}}}"#,
            serde_json::Value::from(message)
        );
        let mut response = HttpResponse::new(HttpBody::from(body));
        *response.status_mut() = status;
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        response
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

fn is_websocket_upgrade<B>(request: &HttpRequest<B>) -> bool {
    request
        .headers()
        .get(http::header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

impl<S, B> Service<HttpRequest<B>> for Auth<S>
where
    S: Service<HttpRequest<B>, Response = HttpResponse>,
    S::Future: Send + 'static,
    S::Error: 'static,
{
    type Response = HttpResponse;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: HttpRequest<B>) -> Self::Future {
        let websocket = is_websocket_upgrade(&request);
        let checked = key_in_path(request.uri().path(), websocket).and_then(|key| {
            if self.keys.contains(key) {
                Ok(())
            } else {
                tracing::debug!(key = %redact(key), "refused an unknown API key");
                Err(Refusal::InvalidKey)
            }
        });
        match checked {
            Ok(()) => Box::pin(self.inner.call(request)),
            Err(refusal) => {
                let response = refusal.response();
                Box::pin(async move { Ok(response) })
            }
        }
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
}
