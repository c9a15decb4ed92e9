//! Where an HTTP request goes: `/health`, `/ready` and `/metrics`; the network chosen by the
//! Host header; a browser's preflight `OPTIONS` answered from the network's CORS origins;
//! JSON-RPC only on `POST /v3/<KEY>` and WebSocket `/ws/v3/<KEY>`, from an origin the network
//! allows, with a live key allowed on that network, its secret or JWT when it has or requires
//! one, and whose origin and user agent allowlists (and the JWT's) admit the request. Anything
//! else is refused here with an HTTP status and a JSON-RPC error body (or jsonrpsee's answer
//! to a wrong method or content type). A JSON-RPC body is answered
//! through `answer`; a call refused for its rate turns the response into an HTTP 429, a single
//! call refused by the key's allowlists into a 403. An admitted WebSocket upgrade goes to
//! quarry's own transport (`ws`).

use crate::{
    access::allowlists::{Holder, NotAllowed, Rule},
    access::caller::{Caller, ClientHeaders},
    access::key_jwts::{TokenCheck, TokenGrant, check_token},
    access::key_secrets::{SecretCheck, check_secret},
    access::keys::KeyGrant,
    call::body::{self, BodyLimits},
    call::layer::Calls,
    service::Service,
    transport::http_reply::HttpReply,
};
use jsonrpsee::server::{
    HttpBody, HttpRequest, HttpResponse,
    http::{self as http_transport, response},
};
use std::sync::Arc;

/// Where a request goes.
#[derive(Debug)]
pub enum Route {
    /// Answered here, whatever the body: operations, refusals, wrong methods.
    Answered(HttpResponse),
    /// An admitted WebSocket upgrade, for `ws`.
    WebSocket(Caller),
    /// An admitted JSON-RPC body, for `json_rpc`.
    JsonRpc(Caller),
}

#[derive(Clone)]
pub struct Gate {
    service: Arc<Service>,
    rpc: Calls,
    limits: BodyLimits,
}

/// Why a request was refused.
#[derive(Debug, PartialEq, Eq)]
enum Rejection {
    WrongPath,
    MissingKey,
    InvalidKey,
    UnknownHost(String),
    KeyNotForNetwork(String),
    /// A browser page on an origin the network's `cors_origins` does not list.
    OriginNotServed(String),
    /// The key's origin or user agent allowlist.
    NotAllowed(NotAllowed),
    /// Basic credentials that are not the key's secret.
    InvalidSecret,
    /// The key requires its secret and the request has none.
    SecretRequired,
    /// A Bearer token the key's public keys refuse, and why (never the token).
    InvalidJwt(String),
    /// The key requires a JWT and the request has none.
    JwtRequired,
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

impl Rejection {
    fn response(&self, service: &Service) -> HttpResponse {
        let (status, message) = match self {
            Self::NotAllowed(refusal) => {
                let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": refusal.error()});
                return json_response(http::StatusCode::FORBIDDEN, body.to_string());
            }
            Self::OriginNotServed(origin) => (
                http::StatusCode::FORBIDDEN,
                format!("origin {origin} may not call this network from a browser (its cors_origins)"),
            ),
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
            Self::InvalidSecret => (
                http::StatusCode::UNAUTHORIZED,
                "invalid API key secret".to_string(),
            ),
            Self::SecretRequired => (
                http::StatusCode::UNAUTHORIZED,
                "this API key requires its secret: send it as HTTP Basic auth with an empty user name (curl --user :SECRET)".to_string(),
            ),
            Self::InvalidJwt(reason) => (
                http::StatusCode::UNAUTHORIZED,
                format!("invalid JWT: {reason}"),
            ),
            Self::JwtRequired => (
                http::StatusCode::UNAUTHORIZED,
                "this API key requires a JWT signed with one of its public keys: send it as Authorization: Bearer <token>".to_string(),
            ),
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
fn key_in_path(path: &str, websocket: bool) -> Result<&str, Rejection> {
    let prefix = if websocket { "/ws/v3" } else { "/v3" };
    let rest = path.strip_prefix(prefix).ok_or(Rejection::WrongPath)?;
    let key = match rest {
        "" | "/" => return Err(Rejection::MissingKey),
        rest => rest.strip_prefix('/').ok_or(Rejection::WrongPath)?,
    };
    let key = key.strip_suffix('/').unwrap_or(key);
    if key.contains('/') {
        return Err(Rejection::WrongPath);
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

impl Gate {
    pub fn new(service: Arc<Service>, rpc: Calls, limits: BodyLimits) -> Self {
        Self {
            service,
            rpc,
            limits,
        }
    }

    /// Where `request` goes, from its head alone.
    pub fn route(&self, request: &HttpRequest<()>) -> Route {
        if let Some(response) = self.operations(request.uri().path()) {
            return Route::Answered(response);
        }
        if request.method() == http::Method::OPTIONS && request.uri().path().starts_with("/v3/") {
            return Route::Answered(self.preflight(request));
        }
        match self.admit(request) {
            // An admitted WebSocket is quarry's own (see `ws`).
            Ok(caller) if is_websocket_upgrade(request) => Route::WebSocket(caller),
            Ok(caller)
                if request.method() == http::Method::POST
                    && http_transport::is_json(
                        request.headers().get(http::header::CONTENT_TYPE),
                    ) =>
            {
                Route::JsonRpc(caller)
            }
            // jsonrpsee's answers to the wrong method or content type.
            Ok(_) if request.method() == http::Method::POST => {
                Route::Answered(response::unsupported_content_type())
            }
            Ok(_) => Route::Answered(response::method_not_allowed()),
            Err(refusal) => Route::Answered(refusal.response(&self.service)),
        }
    }

    /// The answer to an admitted JSON-RPC body. A call refused for its rate makes the whole
    /// response an HTTP 429 with Retry-After.
    pub async fn json_rpc(&self, body: &[u8], caller: Caller) -> HttpReply {
        let mut extensions = jsonrpsee::Extensions::new();
        extensions.insert(caller);
        let answer = body::answer(&self.rpc, self.limits, body, extensions).await;
        let mut reply = HttpReply::json(answer.status, answer.text.into());
        if answer.not_allowed {
            reply.status = http::StatusCode::FORBIDDEN;
        }
        if let Some(limited) = answer.rate_limited {
            reply.status = http::StatusCode::TOO_MANY_REQUESTS;
            let seconds = limited.retry_after.as_secs_f64().ceil().max(1.0) as u64;
            reply
                .headers
                .insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
        }
        reply
    }

    /// The caller a JSON-RPC request comes from, or why it is refused.
    fn admit<B>(&self, request: &HttpRequest<B>) -> Result<Caller, Rejection> {
        let host = host_of(request);
        let network = self
            .service
            .network_for_host(&host)
            .ok_or(Rejection::UnknownHost(host))?;
        let client = ClientHeaders::of(request.headers());
        let served = &self.service.networks[network];
        if let Some(origin) = client.origin.as_deref()
            && !served.cors.allows(Some(origin))
        {
            return Err(Rejection::OriginNotServed(origin.to_string()));
        }
        let key = key_in_path(request.uri().path(), is_websocket_upgrade(request))?;
        let Some(grant) = self.service.keys.grant(key) else {
            tracing::debug!(key = %crate::config::redact(key), "refused an unknown API key");
            return Err(Rejection::InvalidKey);
        };
        if !grant.allows(&served.name) {
            return Err(Rejection::KeyNotForNetwork(served.name.clone()));
        }
        let authorization = request.headers().get(http::header::AUTHORIZATION);
        let bypass_allowlists = match check_secret(authorization, grant.secret_hash.as_ref()) {
            SecretCheck::Valid => true,
            SecretCheck::Invalid => {
                self.service.metrics.not_allowed(network, Rule::Secret);
                tracing::info!(key = %grant.id, "refused a request with a wrong key secret");
                return Err(Rejection::InvalidSecret);
            }
            SecretCheck::Absent if grant.require_secret => {
                self.service.metrics.not_allowed(network, Rule::Secret);
                return Err(Rejection::SecretRequired);
            }
            SecretCheck::Absent => false,
        };
        let token = if bypass_allowlists {
            None
        } else {
            self.token(network, &grant, authorization)?
        };
        let (origin, user_agent) = (client.origin.as_deref(), client.user_agent.as_deref());
        let key_lists = grant.allow.as_ref().filter(|_| !bypass_allowlists);
        let token_lists = token.as_ref().and_then(|t| t.allow.as_ref());
        let refused = key_lists
            .and_then(|allow| allow.admit_client(origin, user_agent).err())
            .or_else(|| {
                token_lists.and_then(|allow| {
                    allow
                        .admit_client_of(Holder::Token, origin, user_agent)
                        .err()
                })
            });
        if let Some(refusal) = refused {
            self.service.metrics.not_allowed(network, refusal.rule);
            tracing::info!(key = %grant.id, rule = refusal.rule.label(), "request refused by the key's or its JWT's allowlists");
            return Err(Rejection::NotAllowed(refusal));
        }
        Ok(Caller {
            grant,
            network,
            client,
            bypass_allowlists,
            token,
        })
    }

    /// The request's JWT checked against the key's public keys: verified, absent (and not
    /// required), or why it is refused. Neither the token nor its claims are logged.
    fn token(
        &self,
        network: usize,
        grant: &KeyGrant,
        authorization: Option<&http::HeaderValue>,
    ) -> Result<Option<Arc<TokenGrant>>, Rejection> {
        match check_token(authorization, grant.jwt.as_deref()) {
            TokenCheck::Valid(token) => Ok(Some(Arc::new(token))),
            TokenCheck::Invalid(reason) => {
                self.service.metrics.not_allowed(network, Rule::Jwt);
                tracing::info!(key = %grant.id, reason, "refused a request with an invalid JWT");
                Err(Rejection::InvalidJwt(reason))
            }
            TokenCheck::Absent if grant.require_jwt => {
                self.service.metrics.not_allowed(network, Rule::Jwt);
                Err(Rejection::JwtRequired)
            }
            TokenCheck::Absent => Ok(None),
        }
    }

    /// The answer to a preflight `OPTIONS` on `/v3/...`, from the network's CORS origins alone:
    /// a browser sends no key-specific headers with it, and the page must be able to read the
    /// key's refusals afterwards.
    fn preflight(&self, request: &HttpRequest<()>) -> HttpResponse {
        let host = host_of(request);
        let Some(network) = self.service.network_for_host(&host) else {
            return Rejection::UnknownHost(host).response(&self.service);
        };
        let origin = request
            .headers()
            .get(http::header::ORIGIN)
            .and_then(|v| v.to_str().ok());
        let (parts, ()) = self.service.networks[network]
            .cors
            .preflight(origin)
            .into_parts();
        HttpResponse::from_parts(parts, HttpBody::empty())
    }

    /// The CORS headers every answer to `request` carries, refusals included, when it comes from
    /// a page on an origin its network allows.
    pub fn cors_headers(&self, request: &HttpRequest<()>) -> Option<http::HeaderMap> {
        let origin = request.headers().get(http::header::ORIGIN)?.to_str().ok()?;
        let network = self.service.network_for_host(&host_of(request))?;
        self.service.networks[network].cors.headers(Some(origin))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(key_in_path("/v3/abc", false), Ok("abc"));
        assert_eq!(key_in_path("/v3/abc/", false), Ok("abc"));
        assert_eq!(key_in_path("/ws/v3/abc", true), Ok("abc"));
        assert_eq!(key_in_path("/v3", false), Err(Rejection::MissingKey));
        assert_eq!(key_in_path("/v3/", false), Err(Rejection::MissingKey));
        assert_eq!(key_in_path("/ws/v3/", true), Err(Rejection::MissingKey));
        assert_eq!(key_in_path("/", false), Err(Rejection::WrongPath));
        assert_eq!(key_in_path("/v3abc", false), Err(Rejection::WrongPath));
        assert_eq!(key_in_path("/v3/a/b", false), Err(Rejection::WrongPath));
        // A WebSocket must use /ws/v3 and plain HTTP must not.
        assert_eq!(key_in_path("/v3/abc", true), Err(Rejection::WrongPath));
        assert_eq!(key_in_path("/ws/v3/abc", false), Err(Rejection::WrongPath));
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
