//! Compressed HTTP answers: which encoding a request accepts (`Accept-Encoding`: gzip, or zstd
//! when the client ranks it at least as high), and writing an answer compressed. A large answer
//! is compressed as it is written, a chunk at a time between the socket's writes
//! (`Transfer-Encoding: chunked`), so that besides the answer itself one chunk of compressed
//! bytes is in memory; a small one is compressed whole and sent with its length.

use crate::{transport::gzip::GzipEncoder, transport::heap_buffer::HeapBuffer};
use bytes::Bytes;
use std::io::Write;
use tokio::{io::AsyncWriteExt, net::TcpStream};

/// Answers shorter than this go uncompressed: the headers would cost more than they save.
pub const COMPRESS_FROM: usize = 1024;
/// How much of an answer is compressed at a time; answers up to this size are compressed whole.
const CHUNK: usize = 64 << 10;
/// Room for a chunk's size line: 8 hex digits and CRLF (a chunk is at most about `CHUNK`).
const SIZE_LINE_ROOM: usize = 10;

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

/// A compressor appending to the caller's buffer.
enum Compressor {
    Gzip(GzipEncoder),
    // zstd's encoder owns its output buffer; `write_to` moves what it holds.
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
}

impl Compressor {
    fn new(encoding: ContentEncoding) -> std::io::Result<Self> {
        Ok(match encoding {
            // Fast levels: an answer is compressed while the client waits for it (gzip.rs says
            // why gzip's is 2).
            ContentEncoding::Gzip => Self::Gzip(GzipEncoder::new()?),
            ContentEncoding::Zstd => Self::Zstd(zstd::stream::write::Encoder::new(Vec::new(), 1)?),
        })
    }

    /// Compresses `input`, appending to `out` what the compressor emits now.
    fn write_to(&mut self, input: &[u8], out: &mut HeapBuffer) -> std::io::Result<()> {
        match self {
            Self::Gzip(encoder) => encoder.write(input, out),
            Self::Zstd(encoder) => {
                encoder.write_all(input)?;
                let held = encoder.get_mut();
                out.extend_from_slice(held)?;
                held.clear();
                Ok(())
            }
        }
    }

    /// Appends the rest of the compressed bytes to `out`.
    fn finish_to(self, out: &mut HeapBuffer) -> std::io::Result<()> {
        match self {
            Self::Gzip(encoder) => encoder.finish(out),
            Self::Zstd(encoder) => out.extend_from_slice(&encoder.finish()?),
        }
    }
}

/// `body` compressed whole (for answers up to `CHUNK` bytes), in one allocation on the C heap.
pub fn compress(body: &[u8], encoding: ContentEncoding) -> std::io::Result<Bytes> {
    Ok(Bytes::from_owner(compress_into_heap(body, encoding)?))
}

fn compress_into_heap(body: &[u8], encoding: ContentEncoding) -> std::io::Result<HeapBuffer> {
    let mut compressor = Compressor::new(encoding)?;
    let mut out = HeapBuffer::with_capacity(room_for(body.len()))?;
    compressor.write_to(body, &mut out)?;
    compressor.finish_to(&mut out)?;
    Ok(out)
}

/// Room for `len` bytes compressed, in the worst case of either encoding (incompressible input
/// grows by stored blocks' headers, well under 1%) with its stream's header and trailer.
fn room_for(len: usize) -> usize {
    len + len / 64 + 64
}

/// Whether an answer of `len` bytes is sent compressed whole (else chunked as it streams).
pub fn compressed_whole(len: usize) -> bool {
    len <= CHUNK
}

/// Writes `head` (which must say `transfer-encoding: chunked`), then `body` compressed a chunk
/// at a time between writes on the connection's task. Each step compresses at most `CHUNK`
/// bytes, as much as an answer compressed whole does there, and one frame buffer serves the
/// whole answer: nothing waits in a queue, and no buffer is made per chunk.
pub async fn write_chunked(
    stream: &mut TcpStream,
    head: &[u8],
    body: Bytes,
    encoding: ContentEncoding,
) -> std::io::Result<()> {
    stream.write_all(head).await?;
    let mut compressor = Compressor::new(encoding)?;
    let mut frame = ChunkFrame::new()?;
    for input in body.chunks(CHUNK) {
        compressor.write_to(input, frame.data()?)?;
        frame.send(stream).await?;
    }
    compressor.finish_to(frame.data()?)?;
    frame.send(stream).await?;
    stream.write_all(b"0\r\n\r\n").await
}

/// One chunk of a chunked body, reused for every chunk of an answer: its size line is written
/// into room left before the data once the data's length is known, so a chunk goes out as one
/// write without a copy.
struct ChunkFrame(HeapBuffer);

impl ChunkFrame {
    fn new() -> std::io::Result<Self> {
        // Room for a chunk's worst case, made once.
        Ok(Self(HeapBuffer::with_capacity(
            SIZE_LINE_ROOM + room_for(CHUNK) + 2,
        )?))
    }

    /// The buffer the next chunk's data is appended to, emptied.
    fn data(&mut self) -> std::io::Result<&mut HeapBuffer> {
        self.0.clear();
        self.0.extend_from_slice(&[0; SIZE_LINE_ROOM])?;
        Ok(&mut self.0)
    }

    /// Writes the chunk framed, if it holds any data (a compressor may hold its output back).
    async fn send(&mut self, stream: &mut TcpStream) -> std::io::Result<()> {
        let len = self.0.len() - SIZE_LINE_ROOM;
        if len == 0 {
            return Ok(());
        }
        let mut line = [0u8; SIZE_LINE_ROOM];
        let mut rest = &mut line[..];
        write!(rest, "{len:x}\r\n")?;
        let start = rest.len();
        self.0[start..SIZE_LINE_ROOM].copy_from_slice(&line[..SIZE_LINE_ROOM - start]);
        self.0.extend_from_slice(b"\r\n")?;
        stream.write_all(&self.0[start..]).await
    }
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
    fn incompressible_answers_fit_the_room_made_for_them() {
        // Random bytes: no compressor can shrink them.
        let mut body = vec![0u8; CHUNK];
        getrandom::fill(&mut body).unwrap();
        for encoding in [ContentEncoding::Gzip, ContentEncoding::Zstd] {
            for len in [COMPRESS_FROM, 10_000, CHUNK] {
                let out = compress_into_heap(&body[..len], encoding).unwrap();
                assert!(out.len() > len, "{encoding:?}: random bytes do not shrink");
                assert_eq!(out.capacity(), room_for(len), "{encoding:?} of {len} grew");
            }
        }
    }

    #[test]
    fn both_encodings_decompress_to_the_answer() {
        let body: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("{{\"n\":\"{i:#x}\"}},").into_bytes())
            .collect();
        let gzip = compress(&body, ContentEncoding::Gzip).unwrap();
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&gzip[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, body);
        let zstd = compress(&body, ContentEncoding::Zstd).unwrap();
        assert_eq!(zstd::decode_all(&zstd[..]).unwrap(), body);
        assert!(gzip.len() * 4 < body.len() && zstd.len() * 4 < body.len());
    }
}
