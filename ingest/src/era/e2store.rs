//! The e2store container that era1 and ere files share: records of an 8-byte header (type as
//! u16 little-endian, length as u32 little-endian, two zero bytes) and their data, read one at
//! a time from a stream and written the same way.
//!
//! Written here rather than taken from reth's era crate, which is not published on crates.io
//! (the only registry this project builds from); the format is these few lines.

use std::io::{self, Read, Seek, SeekFrom, Write};

/// The version record that opens every e2store file: type `65 32`, empty.
pub const VERSION: u16 = 0x3265;
/// Its header as it stands at the start of a file.
pub const VERSION_HEADER: [u8; 8] = [0x65, 0x32, 0, 0, 0, 0, 0, 0];
/// Every record's header length.
pub const HEADER_LEN: u64 = 8;
/// The largest record data quarry reads: a block's compressed body or receipts is far below.
pub const MAX_RECORD_LEN: u32 = 256 * 1024 * 1024;

/// A record's header: where it starts, its type and the length of its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    pub offset: u64,
    pub kind: u16,
    pub len: u32,
}

impl RecordHeader {
    /// The offset of the record after this one.
    pub fn end(&self) -> u64 {
        self.offset + HEADER_LEN + u64::from(self.len)
    }
}

/// Why a record could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("the file ends inside the record header at byte offset {offset}")]
    TruncatedHeader { offset: u64 },
    #[error(
        "the record at byte offset {offset} (type 0x{kind:04x}) announces {len} bytes, the file ends first"
    )]
    TruncatedData { offset: u64, kind: u16, len: u32 },
    #[error("the record header at byte offset {offset} has nonzero reserved bytes")]
    Reserved { offset: u64 },
    #[error(
        "the record at byte offset {offset} (type 0x{kind:04x}) announces {len} bytes, more than any era record holds"
    )]
    TooLarge { offset: u64, kind: u16, len: u32 },
    #[error("read error at byte offset {offset}: {source}")]
    Io { offset: u64, source: io::Error },
}

/// Reads records one after another from a stream, keeping its position.
pub struct RecordReader<R> {
    inner: R,
    position: u64,
}

impl<R: Read> RecordReader<R> {
    pub fn new(inner: R) -> Self {
        Self { inner, position: 0 }
    }

    pub fn position(&self) -> u64 {
        self.position
    }

    /// The next record's header, or `None` at a clean end of the stream.
    pub fn next_header(&mut self) -> Result<Option<RecordHeader>, RecordError> {
        let offset = self.position;
        let mut header = [0u8; 8];
        let mut filled = 0;
        while filled < header.len() {
            match self.inner.read(&mut header[filled..]) {
                Ok(0) if filled == 0 => return Ok(None),
                Ok(0) => return Err(RecordError::TruncatedHeader { offset }),
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => return Err(RecordError::Io { offset, source }),
            }
        }
        self.position += HEADER_LEN;
        let kind = u16::from_le_bytes([header[0], header[1]]);
        let len = u32::from_le_bytes([header[2], header[3], header[4], header[5]]);
        if header[6] != 0 || header[7] != 0 {
            return Err(RecordError::Reserved { offset });
        }
        if len > MAX_RECORD_LEN {
            return Err(RecordError::TooLarge { offset, kind, len });
        }
        Ok(Some(RecordHeader { offset, kind, len }))
    }

    /// The data of the record whose header was just read.
    pub fn read_data(&mut self, header: &RecordHeader) -> Result<Vec<u8>, RecordError> {
        let mut data = vec![0u8; header.len as usize];
        self.inner
            .read_exact(&mut data)
            .map_err(|source| match source.kind() {
                io::ErrorKind::UnexpectedEof => RecordError::TruncatedData {
                    offset: header.offset,
                    kind: header.kind,
                    len: header.len,
                },
                _ => RecordError::Io {
                    offset: header.offset,
                    source,
                },
            })?;
        self.position += u64::from(header.len);
        Ok(data)
    }
}

impl<R: Read + Seek> RecordReader<std::io::BufReader<R>> {
    /// Moves to the record at `offset`.
    pub fn seek_to(&mut self, offset: u64) -> io::Result<()> {
        self.inner.seek(SeekFrom::Start(offset))?;
        self.position = offset;
        Ok(())
    }

    /// Passes over the data of the record whose header was just read, checking that the
    /// stream holds all of it. A relative seek keeps what the buffer holds past it (a plain
    /// seek would drop the buffer and read it again for every record passed over).
    pub fn skip_data(&mut self, header: &RecordHeader, file_len: u64) -> Result<(), RecordError> {
        if header.end() > file_len {
            return Err(RecordError::TruncatedData {
                offset: header.offset,
                kind: header.kind,
                len: header.len,
            });
        }
        self.inner
            .seek_relative(i64::from(header.len))
            .map_err(|source| RecordError::Io {
                offset: header.offset,
                source,
            })?;
        self.position += u64::from(header.len);
        Ok(())
    }
}

/// Writes records one after another, counting the bytes written.
pub struct RecordWriter<W> {
    inner: W,
    position: u64,
}

impl<W: Write> RecordWriter<W> {
    pub fn new(inner: W) -> Self {
        Self { inner, position: 0 }
    }

    pub fn position(&self) -> u64 {
        self.position
    }

    /// Writes one record; returns the offset it starts at.
    pub fn write(&mut self, kind: u16, data: &[u8]) -> io::Result<u64> {
        let len = u32::try_from(data.len())
            .ok()
            .filter(|&len| len <= MAX_RECORD_LEN)
            .ok_or_else(|| io::Error::other(format!("a record of {} bytes", data.len())))?;
        let offset = self.position;
        let mut header = [0u8; 8];
        header[..2].copy_from_slice(&kind.to_le_bytes());
        header[2..6].copy_from_slice(&len.to_le_bytes());
        self.inner.write_all(&header)?;
        self.inner.write_all(data)?;
        self.position += HEADER_LEN + u64::from(len);
        Ok(offset)
    }

    pub fn into_inner(self) -> W {
        self.inner
    }
}

impl RecordWriter<std::io::BufWriter<std::fs::File>> {
    /// Writes out what is buffered and syncs the file: it is whole on disk when this returns.
    pub fn finish(self) -> io::Result<()> {
        let mut file = self.inner.into_inner().map_err(|e| e.into_error())?;
        file.flush()?;
        file.sync_all()
    }
}

/// Data compressed in snappy's framing format, as era files hold RLP (with a CRC-32C per
/// chunk, checked when read).
pub fn snappy_frame(data: &[u8]) -> io::Result<Vec<u8>> {
    let mut encoder = snap::write::FrameEncoder::new(Vec::with_capacity(data.len() / 2 + 64));
    encoder.write_all(data)?;
    encoder.into_inner().map_err(|e| e.into_error())
}

/// The chunk that opens every snappy-framed stream.
const STREAM_IDENTIFIER: [u8; 10] = [0xff, 0x06, 0x00, 0x00, b's', b'N', b'a', b'P', b'p', b'Y'];

/// Decompresses snappy-framed records one after another through one decoder, whose two
/// 64 KiB buffers are allocated (and zeroed) once rather than per record: three records a
/// block made that a third of an era file's import.
#[derive(Default)]
pub struct Unframer {
    decoder: Option<snap::read::FrameDecoder<Source>>,
}

/// The record the decoder reads now.
#[derive(Default)]
struct Source {
    data: Vec<u8>,
    at: usize,
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let rest = self.data.get(self.at..).unwrap_or_default();
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.at += n;
        Ok(n)
    }
}

impl Unframer {
    /// The data of a snappy-framed record, decompressed and its checksums checked.
    pub fn unframe(&mut self, data: &[u8]) -> io::Result<Vec<u8>> {
        // The decoder takes a later stream's identifier as it comes; each record's is checked.
        if !data.starts_with(&STREAM_IDENTIFIER) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "snappy: the record does not open with the stream identifier",
            ));
        }
        let decoder = self
            .decoder
            .get_or_insert_with(|| snap::read::FrameDecoder::new(Source::default()));
        let source = decoder.get_mut();
        source.data.clear();
        source.data.extend_from_slice(data);
        source.at = 0;
        let mut out = Vec::with_capacity(data.len() * 2);
        let read = decoder.read_to_end(&mut out);
        if read.is_err() {
            // What a failed stream left in the decoder is not known: the next gets a new one.
            self.decoder = None;
        }
        read.map(|_| out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn records_round_trip_and_truncation_is_named() {
        let mut writer = RecordWriter::new(Vec::new());
        writer.write(VERSION, &[]).unwrap();
        let at = writer.write(0x03, b"hello").unwrap();
        assert_eq!(at, 8);
        let bytes = writer.into_inner();
        assert_eq!(bytes[..8], VERSION_HEADER);

        let mut reader = RecordReader::new(Cursor::new(bytes.clone()));
        let version = reader.next_header().unwrap().unwrap();
        assert_eq!((version.kind, version.len), (VERSION, 0));
        let record = reader.next_header().unwrap().unwrap();
        assert_eq!(reader.read_data(&record).unwrap(), b"hello");
        assert!(reader.next_header().unwrap().is_none());

        let mut short = RecordReader::new(Cursor::new(bytes[..bytes.len() - 2].to_vec()));
        short.next_header().unwrap();
        let record = short.next_header().unwrap().unwrap();
        let err = short.read_data(&record).unwrap_err();
        assert!(
            matches!(err, RecordError::TruncatedData { offset: 8, .. }),
            "{err}"
        );
        let mut cut = RecordReader::new(Cursor::new(bytes[..11].to_vec()));
        cut.next_header().unwrap();
        assert!(matches!(
            cut.next_header(),
            Err(RecordError::TruncatedHeader { offset: 8 })
        ));
    }

    #[test]
    fn snappy_framing_checks_its_crc() {
        let data = b"quarry era record quarry era record quarry era record".repeat(20);
        let mut unframer = Unframer::default();
        let mut framed = snappy_frame(&data).unwrap();
        assert_eq!(unframer.unframe(&framed).unwrap(), data);
        // One decoder, record after record, each checked.
        let other = snappy_frame(b"a second record").unwrap();
        assert_eq!(unframer.unframe(&other).unwrap(), b"a second record");
        let last = framed.len() - 1;
        framed[last] ^= 0xff;
        assert!(unframer.unframe(&framed).is_err());
        assert_eq!(unframer.unframe(&other).unwrap(), b"a second record");
        assert!(unframer.unframe(&other[10..]).is_err());
        // A record cut inside a chunk.
        assert!(unframer.unframe(&other[..other.len() - 2]).is_err());
    }
}
