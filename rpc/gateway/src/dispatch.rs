//! The dispatcher: the methods behind the call layer, for HTTP and WebSocket calls alike.
//! quarry's own registry of methods that answer with a serialized result becomes a `Reply` at
//! once; jsonrpsee's module answers the rest, called as jsonrpsee's own service calls them.

use crate::reply::{self, Reply};
use jsonrpsee::{
    MethodResponse, Methods,
    core::middleware::{Batch, BatchEntry, Notification, RpcServiceT},
    server::MethodCallback,
    types::{ErrorCode, ErrorObject, Request},
};
use std::sync::Arc;

/// The methods behind the call layer (for HTTP and WebSocket calls alike): quarry's own
/// registry of methods that answer with a serialized result (see `reply`), then jsonrpsee's
/// module for the rest, called as jsonrpsee's own service calls them.
#[derive(Clone)]
pub struct Dispatch {
    methods: Methods,
    answered: Arc<reply::Methods>,
    max_response_bytes: usize,
}

impl Dispatch {
    pub fn new(
        methods: impl Into<Methods>,
        answered: reply::Methods,
        max_response_bytes: u32,
    ) -> Self {
        Self {
            methods: methods.into(),
            answered: Arc::new(answered),
            max_response_bytes: max_response_bytes as usize,
        }
    }
}

impl RpcServiceT for Dispatch {
    type MethodResponse = Reply;
    type NotificationResponse = MethodResponse;
    type BatchResponse = MethodResponse;

    fn call<'a>(&self, request: Request<'a>) -> impl Future<Output = Reply> + Send + 'a {
        let methods = self.methods.clone();
        let answered = self.answered.get(request.method_name()).cloned();
        let max = self.max_response_bytes;
        async move {
            let Request {
                id,
                method,
                params,
                extensions,
                ..
            } = request;
            let params = jsonrpsee::types::Params::new(params.as_ref().map(|p| p.get()));
            if let Some(answer) = answered {
                let reply = match answer(params.into_owned(), extensions.clone()).await {
                    Ok(result) => Reply::result(id, &result, max),
                    Err(error) => Reply::error(id, error),
                };
                return reply.with_extensions(extensions);
            }
            let response = match methods.method_with_name(&method) {
                None => MethodResponse::error(id, ErrorObject::from(ErrorCode::MethodNotFound))
                    .with_extensions(extensions),
                Some((_, MethodCallback::Async(callback))) => {
                    let conn_id = jsonrpsee::core::server::ConnectionId(0);
                    callback(
                        id.into_owned(),
                        params.into_owned(),
                        conn_id,
                        max,
                        extensions,
                    )
                    .await
                }
                Some((_, MethodCallback::Sync(callback))) => callback(id, params, max, extensions),
                Some(_) => MethodResponse::error(id, ErrorObject::from(ErrorCode::InternalError))
                    .with_extensions(extensions),
            };
            Reply::from_jsonrpsee(response)
        }
    }

    /// The call layer answers each call of a batch through `call`; this is its fallback.
    fn batch<'a>(&self, batch: Batch<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        let this = self.clone();
        async move {
            let mut responses =
                jsonrpsee::BatchResponseBuilder::new_with_limit(this.max_response_bytes);
            for entry in batch {
                let response = match entry {
                    Ok(BatchEntry::Call(request)) => this.call(request).await.into_jsonrpsee(),
                    Ok(BatchEntry::Notification(_)) => continue,
                    Err(error) => {
                        let (error, id) = error.into_parts();
                        MethodResponse::error(id, error)
                    }
                };
                if let Err(too_big) = responses.append(response) {
                    return too_big;
                }
            }
            MethodResponse::from_batch(responses.finish())
        }
    }

    fn notification<'a>(
        &self,
        _notification: Notification<'a>,
    ) -> impl Future<Output = MethodResponse> + Send + 'a {
        std::future::ready(MethodResponse::notification())
    }
}
