//! Compressed HTTP answers: which encoding a request accepts (`Accept-Encoding`: gzip, or zstd
//! when the client ranks it at least as high), and writing an answer compressed. A large answer
//! is compressed on a blocking thread as it is written, in chunks (`Transfer-Encoding:
//! chunked`), so that besides the answer itself at most a few chunks of compressed bytes are in
//! memory; a small one is compressed whole and sent with its length.

use bytes::Bytes;
use std::io::Write;
use tokio::{io::AsyncWriteExt, net::TcpStream, sync::mpsc};

/// Answers shorter than this go uncompressed: the headers would cost more than they save.
pub const COMPRESS_FROM: usize = 1024;
/// How much of an answer is compressed at a time; answers up to this size are compressed whole.
const CHUNK: usize = 64 << 10;
/// Compressed chunks waiting for the socket: bounds memory when the client reads slowly.
const CHUNKS_IN_FLIGHT: usize = 2;

/// A `Content-Encoding` quarry writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentEncoding {
    Gzip,
    Zstd,
}

impl ContentEncoding {
    pub fn token(self) -> &'static str {
        match self {
            Self::Gzip => "gzip",
            Self::Zstd => "zstd",
        }
    }

    /// The encoding `Accept-Encoding` allows (RFC 9110 section 12.5.3): the one with the
    /// highest weight, zstd on a tie; `*` stands for gzip. None: identity only.
    pub fn negotiate(headers: &http::HeaderMap) -> Option<Self> {
        let (mut gzip, mut zstd, mut any) = (None, None, None);
        for value in headers.get_all(http::header::ACCEPT_ENCODING) {
            let Ok(value) = value.to_str() else { continue };
            for entry in value.split(',') {
                let mut parts = entry.split(';');
                let token = parts.next().unwrap_or_default().trim();
                let weight = parts
                    .find_map(|p| p.trim().strip_prefix("q="))
                    .map_or(Some(1.0), |q| q.trim().parse::<f32>().ok());
                let Some(weight) = weight else { continue };
                match token.to_ascii_lowercase().as_str() {
                    "gzip" | "x-gzip" => gzip = Some(weight),
                    "zstd" => zstd = Some(weight),
                    "*" => any = Some(weight),
                    _ => {}
                }
            }
        }
        let gzip = gzip.or(any).unwrap_or(0.0);
        let zstd = zstd.unwrap_or(0.0);
        match (gzip > 0.0, zstd > 0.0) {
            (_, true) if zstd >= gzip => Some(Self::Zstd),
            (true, _) => Some(Self::Gzip),
            _ => None,
        }
    }
}

/// A compressor writing into a buffer that is emptied chunk by chunk.
enum Compressor {
    Gzip(flate2::write::GzEncoder<Vec<u8>>),
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
}

impl Compressor {
    fn new(encoding: ContentEncoding) -> std::io::Result<Self> {
        Ok(match encoding {
            // The fastest levels: an answer is compressed while the client waits for it.
            ContentEncoding::Gzip => Self::Gzip(flate2::write::GzEncoder::new(
                Vec::new(),
                flate2::Compression::fast(),
            )),
            ContentEncoding::Zstd => Self::Zstd(zstd::stream::write::Encoder::new(Vec::new(), 1)?),
        })
    }

    fn write(&mut self, input: &[u8]) -> std::io::Result<()> {
        match self {
            Self::Gzip(encoder) => encoder.write_all(input),
            Self::Zstd(encoder) => encoder.write_all(input),
        }
    }

    /// The compressed bytes produced so far and not yet taken.
    fn take(&mut self) -> Vec<u8> {
        match self {
            Self::Gzip(encoder) => std::mem::take(encoder.get_mut()),
            Self::Zstd(encoder) => std::mem::take(encoder.get_mut()),
        }
    }

    /// The rest of the compressed bytes.
    fn finish(self) -> std::io::Result<Vec<u8>> {
        match self {
            Self::Gzip(encoder) => encoder.finish(),
            Self::Zstd(encoder) => encoder.finish(),
        }
    }
}

/// `body` compressed whole (for answers up to `CHUNK` bytes).
pub fn compress(body: &[u8], encoding: ContentEncoding) -> std::io::Result<Vec<u8>> {
    let mut compressor = Compressor::new(encoding)?;
    compressor.write(body)?;
    let mut out = compressor.take();
    out.extend(compressor.finish()?);
    Ok(out)
}

/// Whether an answer of `len` bytes is sent compressed whole (else chunked as it streams).
pub fn compressed_whole(len: usize) -> bool {
    len <= CHUNK
}

/// Writes `head` (which must say `transfer-encoding: chunked`), then `body` compressed in
/// chunks on a blocking thread.
pub async fn write_chunked(
    stream: &mut TcpStream,
    head: &[u8],
    body: Bytes,
    encoding: ContentEncoding,
) -> std::io::Result<()> {
    let (sender, mut chunks) = mpsc::channel::<std::io::Result<Vec<u8>>>(CHUNKS_IN_FLIGHT);
    let compressing = tokio::task::spawn_blocking(move || {
        let run = || -> std::io::Result<()> {
            let mut compressor = Compressor::new(encoding)?;
            for input in body.chunks(CHUNK) {
                compressor.write(input)?;
                let out = compressor.take();
                // A closed channel: the client is gone, stop compressing.
                if !out.is_empty() && sender.blocking_send(Ok(out)).is_err() {
                    return Ok(());
                }
            }
            let _ = sender.blocking_send(Ok(compressor.finish()?));
            Ok(())
        };
        if let Err(e) = run() {
            let _ = sender.blocking_send(Err(e));
        }
    });
    stream.write_all(head).await?;
    while let Some(chunk) = chunks.recv().await {
        let chunk = chunk?;
        if chunk.is_empty() {
            continue;
        }
        let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
        framed.extend_from_slice(&chunk);
        framed.extend_from_slice(b"\r\n");
        stream.write_all(&framed).await?;
    }
    drop(chunks);
    let _ = compressing.await;
    stream.write_all(b"0\r\n\r\n").await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn accepting(value: &str) -> Option<ContentEncoding> {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::ACCEPT_ENCODING,
            http::HeaderValue::from_str(value).unwrap(),
        );
        ContentEncoding::negotiate(&headers)
    }

    #[test]
    fn the_encoding_follows_the_clients_weights() {
        use ContentEncoding::{Gzip, Zstd};
        assert_eq!(ContentEncoding::negotiate(&http::HeaderMap::new()), None);
        assert_eq!(accepting("gzip"), Some(Gzip));
        assert_eq!(accepting("gzip, deflate, br"), Some(Gzip));
        assert_eq!(accepting("gzip, deflate, br, zstd"), Some(Zstd));
        assert_eq!(accepting("zstd;q=0.5, gzip"), Some(Gzip));
        assert_eq!(accepting("gzip;q=0, zstd;q=0"), None);
        assert_eq!(accepting("*"), Some(Gzip));
        assert_eq!(accepting("*;q=0.1, gzip;q=0"), None);
        assert_eq!(accepting("identity, br, deflate"), None);
        assert_eq!(accepting("GZIP ; q=0.8"), Some(Gzip));
        assert_eq!(accepting("gzip;q=bad"), None);
    }

    #[test]
    fn both_encodings_decompress_to_the_answer() {
        let body: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("{{\"n\":\"{i:#x}\"}},").into_bytes())
            .collect();
        let gzip = compress(&body, ContentEncoding::Gzip).unwrap();
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(gzip.as_slice())
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, body);
        let zstd = compress(&body, ContentEncoding::Zstd).unwrap();
        assert_eq!(zstd::decode_all(zstd.as_slice()).unwrap(), body);
        assert!(gzip.len() * 4 < body.len() && zstd.len() * 4 < body.len());
    }
}
