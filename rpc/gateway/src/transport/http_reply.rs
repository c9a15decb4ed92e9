//! An HTTP answer as the HTTP transport writes it: what the gate builds for the requests it
//! answers and for JSON-RPC bodies.

use bytes::Bytes;
use http_body_util::BodyExt;
use jsonrpsee::server::HttpResponse;

/// An HTTP answer, ready to be written.
#[derive(Debug)]
pub struct HttpReply {
    pub status: http::StatusCode,
    pub content_type: Option<http::HeaderValue>,
    /// Other headers; `content-length`, `date` and `connection` are the transport's.
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl HttpReply {
    /// A JSON answer, as jsonrpsee labels it.
    pub fn json(status: http::StatusCode, body: Bytes) -> Self {
        Self {
            status,
            content_type: Some(http::HeaderValue::from_static(
                "application/json; charset=utf-8",
            )),
            headers: http::HeaderMap::new(),
            body,
        }
    }

    /// A response built with the `http` types (the gate's refusals, jsonrpsee's errors).
    pub async fn from_response(response: HttpResponse) -> Self {
        let (mut parts, body) = response.into_parts();
        let content_type = parts.headers.remove(http::header::CONTENT_TYPE);
        for transport_header in [
            http::header::CONTENT_LENGTH,
            http::header::TRANSFER_ENCODING,
            http::header::CONNECTION,
            http::header::DATE,
        ] {
            parts.headers.remove(transport_header);
        }
        let body = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(_) => Bytes::new(),
        };
        Self {
            status: parts.status,
            content_type,
            headers: parts.headers,
            body,
        }
    }
}
