//! One JSON-RPC body in, its answer out: what HTTP and WebSocket share. The envelope is read
//! as geth reads it (see `envelope`). A single call, the common case, is parsed once and goes
//! straight to the call layer; everything else (batches, notifications, bodies that are not a
//! call) goes through jsonrpsee's own handling of a body, so errors keep jsonrpsee's shape.

use crate::{
    call::envelope::{self, BodyPlan},
    call::layer::{Calls, RateLimited, RefusedByAllowlist},
};
use http_body_util::BodyExt;
use jsonrpsee::{
    Extensions, MethodResponse,
    core::middleware::{Batch, Notification, RpcServiceT},
    server::{BatchRequestConfig, HttpBody, HttpRequest},
    types::Request,
};

/// What a body is answered with.
#[derive(Debug)]
pub struct BodyReply {
    /// 200, or jsonrpsee's status for a body it cannot read (400) or one too large (413).
    pub status: http::StatusCode,
    /// The JSON answer; empty when there is nothing to answer (only notifications).
    pub text: String,
    /// Set when a call was refused for its rate: HTTP makes the response a 429.
    pub rate_limited: Option<RateLimited>,
    /// Set when a single call (not a batch) was refused by the key's allowlists: HTTP makes
    /// the response a 403.
    pub not_allowed: bool,
}

/// The limits a body is read under.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimits {
    pub max_request_bytes: u32,
    pub max_batch_requests: u32,
}

impl BodyLimits {
    pub fn of(config: &crate::Config) -> Self {
        Self {
            max_request_bytes: config.max_request_bytes,
            max_batch_requests: config.max_batch_requests,
        }
    }
}

/// Answers `body` through `rpc`, each call carrying `extensions` (the caller, and for a
/// WebSocket its connection).
pub async fn answer(
    rpc: &Calls,
    limits: BodyLimits,
    body: &[u8],
    extensions: Extensions,
) -> BodyReply {
    if let Some(mut request) = envelope::call(body) {
        request.extensions = extensions;
        let (text, extensions) = rpc.call(request).await.into_parts();
        return BodyReply {
            status: http::StatusCode::OK,
            text,
            rate_limited: extensions.get::<RateLimited>().cloned(),
            not_allowed: extensions.get::<RefusedByAllowlist>().is_some(),
        };
    }
    match envelope::inspect(body, limits.max_batch_requests as usize) {
        BodyPlan::Answered(text) => BodyReply {
            status: http::StatusCode::OK,
            text,
            rate_limited: None,
            not_allowed: false,
        },
        // Boxed: jsonrpsee's handling of a body is a future of kilobytes, which the single
        // call above, the common case, would otherwise carry and move too.
        BodyPlan::Unchanged => Box::pin(run(rpc, limits, body, extensions)).await,
        BodyPlan::Rewrite(rewrite) => {
            let answer = Box::pin(run(rpc, limits, rewrite.body.as_bytes(), extensions)).await;
            BodyReply {
                text: rewrite.finish(&answer.text),
                ..answer
            }
        }
    }
}

async fn run(rpc: &Calls, limits: BodyLimits, body: &[u8], extensions: Extensions) -> BodyReply {
    let mut request = HttpRequest::new(HttpBody::from(body.to_vec()));
    *request.method_mut() = http::Method::POST;
    request.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    *request.extensions_mut() = extensions;
    let response = jsonrpsee::server::http::call_with_service(
        request,
        BatchRequestConfig::Limit(limits.max_batch_requests),
        limits.max_request_bytes,
        AsJsonrpsee(rpc.clone()),
    )
    .await;
    let status = response.status();
    let rate_limited = response.extensions().get::<RateLimited>().cloned();
    let not_allowed = response.extensions().get::<RefusedByAllowlist>().is_some();
    let text = match response.into_body().collect().await {
        Ok(collected) => String::from_utf8_lossy(&collected.to_bytes()).into_owned(),
        Err(_) => String::new(),
    };
    BodyReply {
        status,
        text,
        rate_limited,
        not_allowed,
    }
}

/// The call layer as jsonrpsee's body handling takes it: each call's `Reply` as a
/// `MethodResponse`.
#[derive(Clone)]
struct AsJsonrpsee(Calls);

impl RpcServiceT for AsJsonrpsee {
    type MethodResponse = MethodResponse;
    type NotificationResponse = MethodResponse;
    type BatchResponse = MethodResponse;

    fn call<'a>(&self, request: Request<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        let rpc = self.0.clone();
        async move { rpc.call(request).await.into_jsonrpsee() }
    }

    fn batch<'a>(&self, batch: Batch<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        self.0.batch(batch)
    }

    fn notification<'a>(
        &self,
        notification: Notification<'a>,
    ) -> impl Future<Output = MethodResponse> + Send + 'a {
        self.0.notification(notification)
    }
}
