//! quarry's own transports: HTTP/1.1 and WebSocket connections, and compressed answers. A
//! request's bytes come in here and go down to the gate; its answer's bytes go out from here.

pub mod compression;
pub mod gzip;
pub mod heap_buffer;
pub mod http;
pub mod http_reply;
pub mod ws;
