//! Streaming reader for files of concatenated RLP-encoded blocks.
//!
//! This is the format `geth export` writes and `geth import` / `reth import` read: the
//! RLP encodings of whole blocks, one after another, with no separators or framing. The
//! file may be plain or gzip-compressed; gzip is detected by its magic bytes (`1f 8b`),
//! not by the file name.
//!
//! Memory use is bounded: the reader reads each item's RLP list header (at most 9 bytes),
//! then exactly that item's bytes, so only one block is held in memory at a time, and a
//! single block may be at most [`MAX_BLOCK_BYTES`] long.

use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Cursor, Read};
use std::iter::FusedIterator;
use std::path::Path;

use alloy_rlp::Header;

/// Largest block (RLP header plus payload) the reader accepts: 64 MiB.
pub const MAX_BLOCK_BYTES: u64 = 64 * 1024 * 1024;

/// Magic bytes at the start of every gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Longest possible RLP header: one prefix byte plus up to 8 length bytes.
const MAX_HEADER_LEN: usize = 9;

/// Size of the buffer between the (possibly decompressed) stream and the block parser.
const BUFFER_SIZE: usize = 64 * 1024;

/// One raw block as it appears in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawBlock {
    /// Byte offset of the block's first byte in the stream. For gzip-compressed files
    /// this is an offset into the decompressed stream, not into the file on disk.
    pub offset: u64,
    /// The complete RLP item, including its list header.
    pub bytes: Vec<u8>,
}

/// Why a block file could not be read.
///
/// Every message names the file (or the name given to [`BlockReader::from_reader`]) and,
/// once reading has started, the byte offset of the block concerned. For gzip-compressed
/// files offsets are into the decompressed stream.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// An era file that breaks its format's rules or does not fit the stored chain.
    #[error(transparent)]
    Era(Box<crate::era::error::EraError>),
    /// The file could not be opened, or its first bytes could not be read.
    #[error("{path}: cannot open file: {source}")]
    Open {
        /// File path.
        path: String,
        /// Underlying I/O error.
        source: io::Error,
    },
    /// Reading (or decompressing) failed while reading the block starting at `offset`.
    #[error("{path}: read error in block at byte offset {offset}: {source}")]
    Io {
        /// File path.
        path: String,
        /// Offset of the block being read.
        offset: u64,
        /// Underlying I/O error (for gzip files, possibly a decompression error).
        source: io::Error,
    },
    /// The item starting at `offset` is an RLP string, not an RLP list, so it cannot be a block.
    #[error(
        "{path}: item at byte offset {offset} is not an RLP list (first byte 0x{first_byte:02x}), \
         so it is not an RLP-encoded block"
    )]
    NotAList {
        /// File path.
        path: String,
        /// Offset of the item.
        offset: u64,
        /// The item's first byte (below `0xc0` for RLP strings).
        first_byte: u8,
    },
    /// The file ends inside the RLP header of the block starting at `offset`.
    #[error(
        "{path}: truncated block at byte offset {offset}: the file ends inside its \
         {expected}-byte RLP header, {found} bytes left"
    )]
    TruncatedHeader {
        /// File path.
        path: String,
        /// Offset of the block.
        offset: u64,
        /// Length of the RLP header, as announced by its first byte.
        expected: u64,
        /// Bytes left in the stream from `offset` on.
        found: u64,
    },
    /// The file ends inside the block starting at `offset`.
    #[error(
        "{path}: truncated block at byte offset {offset}: header says {expected} bytes, \
         file has {found} left"
    )]
    Truncated {
        /// File path.
        path: String,
        /// Offset of the block.
        offset: u64,
        /// Length of the whole block (header plus payload) according to its header.
        expected: u64,
        /// Bytes left in the stream from `offset` on.
        found: u64,
    },
    /// The RLP header of the item starting at `offset` is malformed (e.g. a non-canonical
    /// length encoding).
    #[error("{path}: malformed RLP header at byte offset {offset}: {reason}")]
    Malformed {
        /// File path.
        path: String,
        /// Offset of the item.
        offset: u64,
        /// What is wrong with the header.
        reason: String,
    },
    /// The header of the block starting at `offset` announces more than [`MAX_BLOCK_BYTES`].
    #[error(
        "{path}: block at byte offset {offset} is too large: header says {size} bytes, \
         the limit is {limit} bytes (64 MiB) per block"
    )]
    TooLarge {
        /// File path.
        path: String,
        /// Offset of the block.
        offset: u64,
        /// Length of the whole block (header plus payload) according to its header.
        size: u64,
        /// The limit, [`MAX_BLOCK_BYTES`].
        limit: u64,
    },
}

impl From<crate::era::error::EraError> for ReadError {
    fn from(err: crate::era::error::EraError) -> Self {
        ReadError::Era(Box::new(err))
    }
}

/// Streaming iterator over the blocks of a file of concatenated RLP-encoded blocks.
///
/// Yields `Ok(RawBlock)` for each block, `None` at a clean end of file (end of stream
/// exactly at a block boundary, including an empty file), and after an error yields one
/// `Err` and then `None` for ever.
///
/// Only the outer RLP list header of each block is checked; the block's contents are not
/// decoded. For gzip-compressed files, [`RawBlock::offset`] and the offsets in errors are
/// offsets into the decompressed stream. Concatenated gzip members are read as one stream.
pub struct BlockReader {
    name: String,
    reader: BufReader<Box<dyn Read + Send>>,
    offset: u64,
    done: bool,
}

impl fmt::Debug for BlockReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockReader")
            .field("name", &self.name)
            .field("offset", &self.offset)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl BlockReader {
    /// Opens `path`, plain or gzip-compressed. Gzip is detected by its magic bytes
    /// (`1f 8b`) at the start of the file, not by the file name; offsets are then offsets
    /// into the decompressed stream.
    pub fn open(path: &Path) -> Result<Self, ReadError> {
        let name = path.display().to_string();
        let open_error = |source| ReadError::Open {
            path: name.clone(),
            source,
        };
        let mut file = File::open(path).map_err(open_error)?;
        let mut magic = [0u8; GZIP_MAGIC.len()];
        let n = read_up_to(&mut file, &mut magic).map_err(open_error)?;
        let is_gzip = magic[..n] == GZIP_MAGIC;
        // Put the bytes already read back in front of the rest of the file.
        let stream = Cursor::new(magic[..n].to_vec()).chain(file);
        let reader: Box<dyn Read + Send> = if is_gzip {
            Box::new(flate2::read::MultiGzDecoder::new(stream))
        } else {
            Box::new(stream)
        };
        Ok(Self::from_reader(name, reader))
    }

    /// Reads blocks from any reader (uncompressed; wrap it in a decoder first if needed).
    /// `name` is used in error messages in place of a file path.
    pub fn from_reader(name: String, reader: Box<dyn Read + Send>) -> Self {
        Self {
            name,
            reader: BufReader::with_capacity(BUFFER_SIZE, reader),
            offset: 0,
            done: false,
        }
    }

    /// Reads the next block; `Ok(None)` at a clean end of the stream.
    fn read_block(&mut self) -> Result<Option<RawBlock>, ReadError> {
        let offset = self.offset;
        let mut header = [0u8; MAX_HEADER_LEN];

        let n = read_up_to(&mut self.reader, &mut header[..1]).map_err(|e| self.io(e))?;
        if n == 0 {
            return Ok(None);
        }
        let first_byte = header[0];
        let header_len = match first_byte {
            0x00..=0xbf => {
                return Err(ReadError::NotAList {
                    path: self.name.clone(),
                    offset,
                    first_byte,
                });
            }
            0xc0..=0xf7 => 1,
            0xf8..=0xff => 1 + usize::from(first_byte - 0xf7),
        };

        let got =
            read_up_to(&mut self.reader, &mut header[1..header_len]).map_err(|e| self.io(e))?;
        if got < header_len - 1 {
            return Err(ReadError::TruncatedHeader {
                path: self.name.clone(),
                offset,
                expected: header_len as u64,
                found: 1 + got as u64,
            });
        }
        let header = &header[..header_len];

        // Let alloy-rlp validate the header (leading zeros, non-canonical long form, ...).
        // `Header::decode` also insists that the whole payload follow the header, which we
        // have not read yet, so given only the header bytes it fails with `InputTooShort`
        // for any well-formed header with a non-empty payload; every other error is real.
        match Header::decode(&mut &header[..]) {
            Ok(_) | Err(alloy_rlp::Error::InputTooShort) => {}
            Err(e) => {
                return Err(ReadError::Malformed {
                    path: self.name.clone(),
                    offset,
                    reason: format!("invalid RLP list header {}: {e}", hex(header)),
                });
            }
        }
        // For the same reason the payload length has to be taken from the header here.
        let payload_len = if header_len == 1 {
            u64::from(first_byte - 0xc0)
        } else {
            header[1..]
                .iter()
                .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
        };
        let total = payload_len.saturating_add(header_len as u64);
        let Some(capacity) = usize::try_from(total)
            .ok()
            .filter(|_| total <= MAX_BLOCK_BYTES)
        else {
            return Err(ReadError::TooLarge {
                path: self.name.clone(),
                offset,
                size: total,
                limit: MAX_BLOCK_BYTES,
            });
        };

        let mut bytes = Vec::with_capacity(capacity);
        bytes.extend_from_slice(header);
        (&mut self.reader)
            .take(payload_len)
            .read_to_end(&mut bytes)
            .map_err(|e| self.io(e))?;
        if bytes.len() < capacity {
            return Err(ReadError::Truncated {
                path: self.name.clone(),
                offset,
                expected: total,
                found: bytes.len() as u64,
            });
        }

        self.offset += total;
        Ok(Some(RawBlock { offset, bytes }))
    }

    fn io(&self, source: io::Error) -> ReadError {
        ReadError::Io {
            path: self.name.clone(),
            offset: self.offset,
            source,
        }
    }
}

impl Iterator for BlockReader {
    type Item = Result<RawBlock, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.read_block() {
            Ok(Some(block)) => Some(Ok(block)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl FusedIterator for BlockReader {}

/// The number of the last block in `path` if its blocks are numbered one after another (a
/// straight chain, no branch): decoding only each block's header. `None` for anything else,
/// including a file that cannot be read, which the import itself then reports.
pub fn straight_chain_end(path: &Path) -> Option<u64> {
    let mut last: Option<u64> = None;
    for raw in BlockReader::open(path).ok()? {
        let raw = raw.ok()?;
        let mut bytes = raw.bytes.as_slice();
        Header::decode(&mut bytes).ok()?;
        let header = <alloy_consensus::Header as alloy_rlp::Decodable>::decode(&mut bytes).ok()?;
        let number = header.number;
        if last.is_some_and(|last| number != last + 1) {
            return None;
        }
        last = Some(number);
    }
    last
}

/// Fills `buf` as far as the reader allows; returns how many bytes were read, which is
/// less than `buf.len()` only at end of stream.
fn read_up_to(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::Bytes;
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use std::io::Write;

    /// An RLP list of byte strings.
    fn list(items: &[&[u8]]) -> Vec<u8> {
        let items: Vec<Bytes> = items.iter().map(|i| Bytes::copy_from_slice(i)).collect();
        alloy_rlp::encode(&items)
    }

    /// Blocks with empty, short (< 56 byte) and long (1- and 2-byte length) payloads.
    fn sample_blocks() -> Vec<Vec<u8>> {
        let blocks = vec![
            list(&[b"a", b"bc"]),
            list(&[]),
            list(&[&[0x55; 100], b"x"]),
            list(&[&[0xaa; 300], &[0x01; 10]]),
            alloy_rlp::encode(vec![1u64, 2, 3]),
        ];
        // Make sure every kind of header is exercised.
        assert_eq!(blocks[0], [0xc4, b'a', 0x82, b'b', b'c']);
        assert_eq!(blocks[1], [0xc0]);
        assert_eq!(blocks[2][0], 0xf8);
        assert_eq!(blocks[3][0], 0xf9);
        blocks
    }

    fn concat(blocks: &[Vec<u8>]) -> Vec<u8> {
        blocks.concat()
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    fn reader(data: Vec<u8>) -> BlockReader {
        BlockReader::from_reader("test.rlp".to_owned(), Box::new(Cursor::new(data)))
    }

    /// A reader that hands out one byte per `read` call, to exercise short reads.
    struct OneByte(Cursor<Vec<u8>>);
    impl Read for OneByte {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(1);
            self.0.read(&mut buf[..n])
        }
    }

    fn check_blocks(reader: BlockReader, blocks: &[Vec<u8>]) {
        let read: Vec<RawBlock> = reader.collect::<Result<_, _>>().unwrap();
        assert_eq!(read.len(), blocks.len());
        let mut offset = 0u64;
        for (got, want) in read.iter().zip(blocks) {
            assert_eq!(got.offset, offset);
            assert_eq!(&got.bytes, want);
            let mut buf = &got.bytes[..];
            let h = Header::decode(&mut buf).unwrap();
            assert!(h.list);
            assert_eq!(h.payload_length, buf.len());
            offset += want.len() as u64;
        }
    }

    #[test]
    fn reads_concatenated_blocks() {
        let blocks = sample_blocks();
        check_blocks(reader(concat(&blocks)), &blocks);
    }

    #[test]
    fn reads_with_short_reads() {
        let blocks = sample_blocks();
        let r = BlockReader::from_reader(
            "slow".to_owned(),
            Box::new(OneByte(Cursor::new(concat(&blocks)))),
        );
        check_blocks(r, &blocks);
    }

    #[test]
    fn reads_gzip_stream() {
        let blocks = sample_blocks();
        let gz = gzip(&concat(&blocks));
        let dec = flate2::read::MultiGzDecoder::new(Cursor::new(gz));
        check_blocks(
            BlockReader::from_reader("test.rlp.gz".to_owned(), Box::new(dec)),
            &blocks,
        );
    }

    #[test]
    fn open_detects_plain_and_gzip_by_magic() {
        let blocks = sample_blocks();
        let dir = tempfile::tempdir().unwrap();

        // Plain data under a ".gz" name, gzip data under a ".rlp" name.
        let plain = dir.path().join("chain.rlp.gz");
        std::fs::write(&plain, concat(&blocks)).unwrap();
        check_blocks(BlockReader::open(&plain).unwrap(), &blocks);

        let gz = dir.path().join("chain.rlp");
        std::fs::write(&gz, gzip(&concat(&blocks))).unwrap();
        check_blocks(BlockReader::open(&gz).unwrap(), &blocks);

        // Several gzip members in one file are one stream; offsets are decompressed offsets.
        let multi = dir.path().join("multi.gz");
        let (a, b) = blocks.split_at(2);
        std::fs::write(&multi, [gzip(&concat(a)), gzip(&concat(b))].concat()).unwrap();
        check_blocks(BlockReader::open(&multi).unwrap(), &blocks);

        // A one-byte file (shorter than the gzip magic) and an empty file.
        let one = dir.path().join("one");
        std::fs::write(&one, [0xc0]).unwrap();
        check_blocks(BlockReader::open(&one).unwrap(), &[vec![0xc0]]);
        let empty = dir.path().join("empty");
        std::fs::write(&empty, []).unwrap();
        assert_eq!(BlockReader::open(&empty).unwrap().count(), 0);
    }

    #[test]
    fn open_missing_file_names_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing.rlp");
        let err = BlockReader::open(&path).unwrap_err();
        assert!(matches!(err, ReadError::Open { .. }));
        assert!(err.to_string().contains("missing.rlp"), "{err}");
    }

    #[test]
    fn empty_input_yields_nothing() {
        let mut r = reader(Vec::new());
        assert!(r.next().is_none());
        assert!(r.next().is_none());
        let mut r = BlockReader::from_reader("e.gz".to_owned(), {
            Box::new(flate2::read::MultiGzDecoder::new(Cursor::new(gzip(&[]))))
        });
        assert!(r.next().is_none());
    }

    #[test]
    fn truncated_last_block() {
        let blocks = sample_blocks();
        let mut data = concat(&blocks);
        let last_offset = (data.len() - blocks[4].len()) as u64;
        // Replace the last block by the 2-byte-length block missing its last 7 bytes.
        data.truncate(data.len() - blocks[4].len());
        let big = &blocks[3];
        data.extend_from_slice(&big[..big.len() - 7]);

        let mut r = reader(data);
        for want in &blocks[..4] {
            assert_eq!(&r.next().unwrap().unwrap().bytes, want);
        }
        let err = r.next().unwrap().unwrap_err();
        match &err {
            ReadError::Truncated {
                offset,
                expected,
                found,
                ..
            } => {
                assert_eq!(*offset, last_offset);
                assert_eq!(*expected, big.len() as u64);
                assert_eq!(*found, big.len() as u64 - 7);
            }
            other => panic!("unexpected error {other:?}"),
        }
        assert_eq!(
            err.to_string(),
            format!(
                "test.rlp: truncated block at byte offset {last_offset}: header says {} bytes, \
                 file has {} left",
                big.len(),
                big.len() - 7
            )
        );
        assert!(r.next().is_none());
        assert!(r.next().is_none());
    }

    #[test]
    fn truncated_short_block_in_gzip() {
        let blocks = sample_blocks();
        let mut data = concat(&blocks[..1]);
        data.extend_from_slice(&blocks[0][..3]);
        let dec = flate2::read::MultiGzDecoder::new(Cursor::new(gzip(&data)));
        let mut r = BlockReader::from_reader("c.gz".to_owned(), Box::new(dec));
        assert!(r.next().unwrap().is_ok());
        let err = r.next().unwrap().unwrap_err();
        assert!(
            matches!(err, ReadError::Truncated { offset, expected: 5, found: 3, .. }
                if offset == blocks[0].len() as u64),
            "{err:?}"
        );
        assert!(r.next().is_none());
    }

    #[test]
    fn truncated_header() {
        let mut data = list(&[b"ok"]);
        let offset = data.len() as u64;
        data.extend_from_slice(&[0xf9, 0x01]); // 3-byte header cut after 2 bytes
        let mut r = reader(data);
        assert!(r.next().unwrap().is_ok());
        let err = r.next().unwrap().unwrap_err();
        assert!(
            matches!(err, ReadError::TruncatedHeader { offset: o, expected: 3, found: 2, .. } if o == offset),
            "{err:?}"
        );
        assert!(err.to_string().contains(&format!("byte offset {offset}")));
        assert!(r.next().is_none());
    }

    #[test]
    fn not_a_list() {
        let first = list(&[b"hello"]);
        let offset = first.len() as u64;
        let mut data = first;
        data.extend(alloy_rlp::encode(Bytes::from_static(
            b"a string, not a list",
        )));
        data.extend(list(&[b"never read"]));
        let mut r = reader(data);
        assert!(r.next().unwrap().is_ok());
        let err = r.next().unwrap().unwrap_err();
        assert!(
            matches!(err, ReadError::NotAList { offset: o, first_byte: 0x94, .. } if o == offset),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "test.rlp: item at byte offset {offset} is not an RLP list (first byte 0x94), \
                 so it is not an RLP-encoded block"
            )
        );
        assert!(r.next().is_none());

        // A single-byte item (an RLP string too) at offset 0.
        let err = reader(vec![0x05]).next().unwrap().unwrap_err();
        assert!(matches!(
            err,
            ReadError::NotAList {
                offset: 0,
                first_byte: 0x05,
                ..
            }
        ));
    }

    #[test]
    fn malformed_headers() {
        // Long form for a payload under 56 bytes.
        let mut data = vec![0xf8, 0x05];
        data.extend_from_slice(&[0x80; 5]);
        let err = reader(data).next().unwrap().unwrap_err();
        assert!(
            matches!(err, ReadError::Malformed { offset: 0, .. }),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .starts_with("test.rlp: malformed RLP header at byte offset 0: ")
        );

        // Length with a leading zero byte, after a good block.
        let mut data = list(&[b"x"]);
        let offset = data.len() as u64;
        data.extend_from_slice(&[0xf9, 0x00, 0x40]);
        data.extend_from_slice(&[0x80; 0x40]);
        let mut r = reader(data);
        assert!(r.next().unwrap().is_ok());
        let err = r.next().unwrap().unwrap_err();
        assert!(
            matches!(err, ReadError::Malformed { offset: o, .. } if o == offset),
            "{err:?}"
        );
        assert!(r.next().is_none());
    }

    #[test]
    fn too_large() {
        // 2^32-byte payload, refused before anything is allocated or read.
        let err = reader(vec![0xfc, 0x01, 0x00, 0x00, 0x00, 0x00])
            .next()
            .unwrap()
            .unwrap_err();
        assert!(
            matches!(err, ReadError::TooLarge { offset: 0, size, .. } if size == (1 << 32) + 6),
            "{err:?}"
        );
        assert!(err.to_string().contains("64 MiB"), "{err}");

        // Largest possible length.
        let err = reader(vec![0xff; 9]).next().unwrap().unwrap_err();
        assert!(
            matches!(err, ReadError::TooLarge { size: u64::MAX, .. }),
            "{err:?}"
        );

        // Just over the limit (5-byte header + payload), then exactly at it.
        let header = |payload: u64| {
            let mut h = vec![0xfb];
            h.extend_from_slice(&u32::try_from(payload).unwrap().to_be_bytes());
            h
        };
        let err = reader(header(MAX_BLOCK_BYTES - 4))
            .next()
            .unwrap()
            .unwrap_err();
        assert!(
            matches!(err, ReadError::TooLarge { size, .. } if size == MAX_BLOCK_BYTES + 1),
            "{err:?}"
        );
        let err = reader(header(MAX_BLOCK_BYTES - 5))
            .next()
            .unwrap()
            .unwrap_err();
        assert!(
            matches!(
                err,
                ReadError::Truncated {
                    expected: MAX_BLOCK_BYTES,
                    found: 5,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn gzip_corruption_is_io_error() {
        let mut gz = gzip(&concat(&sample_blocks()));
        let len = gz.len();
        gz[len / 2] ^= 0xff;
        gz.truncate(len - 4);
        let dec = flate2::read::MultiGzDecoder::new(Cursor::new(gz));
        let r = BlockReader::from_reader("bad.gz".to_owned(), Box::new(dec));
        let results: Vec<_> = r.collect();
        let last = results.last().unwrap();
        assert!(last.is_err(), "{results:?}");
        assert!(
            last.as_ref()
                .unwrap_err()
                .to_string()
                .starts_with("bad.gz: ")
        );
    }
}
