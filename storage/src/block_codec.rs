//! The compressed values of the block data tables (`BlockBodies`, `Receipts`):
//! the codecs, and the typed reads and writes that compress and decompress them.
//!
//! A stored value is a codec tag, then (for a compressed one) the length of the uncompressed
//! encoding, then the payload:
//!
//! ```text
//! 0 | encoding                         (raw: values compression would not shrink)
//! 1 | length u32 BE | LZ4 block         (lz4_flex's block format)
//! 2 | length u32 BE | zstd frame
//! ```
//!
//! The uncompressed encoding is each table's own: RLP of the body, and receipts.rs's in-place
//! layout, which a reader decompresses once and then reads in place.
//! Which codec each table is written with is `BlockData::codec`, chosen by the figures of
//! storage/examples/block_codecs.rs (docs/benchmarks.md): LZ4, whose output takes as many
//! whole MDBX pages as zstd's there, at a third of zstd's decompression time.

use crate::{Error, Result, StorageTx, Table};
use signet_libmdbx::{RwSync, TransactionKind};
use std::borrow::Cow;

/// The zstd level the `Zstd` codec writes with.
pub const ZSTD_LEVEL: i32 = 3;

/// How a value's payload is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    Raw,
    Lz4,
    Zstd,
}

impl Codec {
    pub const ALL: [Codec; 3] = [Codec::Raw, Codec::Lz4, Codec::Zstd];

    const fn tag(self) -> u8 {
        match self {
            Codec::Raw => 0,
            Codec::Lz4 => 1,
            Codec::Zstd => 2,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Codec::Raw => "raw",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }
}

/// The largest receipts encoding that is compressed: LZ4 decompresses it in about 60 µs on
/// this machine, which a read of one receipt then pays (the scale chain's blocks are 17 KB).
pub const RAW_RECEIPTS_ABOVE: usize = 256 << 10;

/// The tag and length before a compressed payload.
const HEADER: usize = 5;

/// `raw` as stored with `codec`: tagged, and raw when compressing would not make it smaller.
pub fn compress(codec: Codec, raw: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let payload = match codec {
        Codec::Raw => None,
        Codec::Lz4 => Some(lz4_flex::block::compress(raw)),
        Codec::Zstd => {
            Some(zstd::bulk::compress(raw, ZSTD_LEVEL).map_err(|e| format!("zstd: {e}"))?)
        }
    };
    let length = u32::try_from(raw.len()).map_err(|_| format!("a value of {} bytes", raw.len()))?;
    Ok(match payload {
        Some(payload) if payload.len() + HEADER < raw.len() + 1 => {
            let mut out = Vec::with_capacity(HEADER + payload.len());
            out.push(codec.tag());
            out.extend_from_slice(&length.to_be_bytes());
            out.extend_from_slice(&payload);
            out
        }
        _ => {
            let mut out = Vec::with_capacity(1 + raw.len());
            out.push(Codec::Raw.tag());
            out.extend_from_slice(raw);
            out
        }
    })
}

/// The uncompressed encoding of a stored value: in place when it is raw.
pub fn decompress(stored: &[u8]) -> Result<Cow<'_, [u8]>> {
    let (&tag, rest) = stored
        .split_first()
        .ok_or_else(|| Error::Corrupt("an empty block value (no codec tag)".into()))?;
    if tag == Codec::Raw.tag() {
        return Ok(Cow::Borrowed(rest));
    }
    if rest.len() < HEADER - 1 {
        return Err(Error::Corrupt(format!(
            "a compressed block value of {} bytes",
            stored.len()
        )));
    }
    let (length, payload) = rest.split_at(HEADER - 1);
    let length = u32::from_be_bytes([length[0], length[1], length[2], length[3]]) as usize;
    let mut out = vec![0u8; length];
    let written = match tag {
        1 => lz4_flex::block::decompress_into(payload, &mut out)
            .map_err(|e| Error::Corrupt(format!("LZ4 block value: {e}")))?,
        2 => zstd::bulk::decompress_to_buffer(payload, &mut out)
            .map_err(|e| Error::Corrupt(format!("zstd block value: {e}")))?,
        tag => return Err(Error::Corrupt(format!("block value codec tag {tag}"))),
    };
    if written != length {
        return Err(Error::Corrupt(format!(
            "block value decompressed to {written} bytes, its header says {length}"
        )));
    }
    Ok(Cow::Owned(out))
}

/// The block data tables whose values are compressed. `Senders` is not one: neither codec
/// shrinks a block's senders (distinct addresses, 20 random-looking bytes each; 1.00x on the
/// scale chain), and the codec tag would push a 100-sender value (2,000 bytes) out of its
/// leaf page into a 4 KiB overflow page of its own: 82 MB for the scale chain's 41 MB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockData {
    Body,
    Receipts,
}

impl BlockData {
    pub const ALL: [BlockData; 2] = [BlockData::Body, BlockData::Receipts];

    pub const fn table(self) -> Table {
        match self {
            BlockData::Body => Table::BlockBodies,
            BlockData::Receipts => Table::Receipts,
        }
    }

    /// The codec a value of this table whose encoding has `len` bytes is written with. Receipts
    /// above `RAW_RECEIPTS_ABOVE` stay raw, so that one receipt of a block of huge logs is
    /// still read in place rather than after decompressing all of them.
    pub const fn codec(self, len: usize) -> Codec {
        match self {
            BlockData::Receipts if len > RAW_RECEIPTS_ABOVE => Codec::Raw,
            BlockData::Body | BlockData::Receipts => Codec::Lz4,
        }
    }
}

impl<K: TransactionKind> StorageTx<K> {
    /// Runs `read` over the uncompressed encoding of block `number`'s `kind` value (`None`
    /// when the block is not stored).
    pub(crate) fn with_block_data<T>(
        &self,
        kind: BlockData,
        number: u64,
        read: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<Option<T>> {
        let Some(stored) = self.get_chunked(kind.table(), number)? else {
            return Ok(None);
        };
        let raw = decompress(&stored).map_err(|e| {
            Error::Corrupt(format!("{} of block {number}: {e}", kind.table().name()))
        })?;
        read(&raw).map(Some)
    }

    /// The uncompressed encoding of block `number`'s `kind` value, in the current layout or,
    /// during the migration to it, in the one before (see block_migrate.rs).
    pub fn block_data(&self, kind: BlockData, number: u64) -> Result<Option<Vec<u8>>> {
        if self.block_data_compressed(number)? {
            self.with_block_data(kind, number, |raw| Ok(raw.to_vec()))
        } else {
            Ok(self.get_chunked(kind.table(), number)?.map(Cow::into_owned))
        }
    }
}

impl StorageTx<RwSync> {
    /// Stores block `number`'s `kind` value, given its uncompressed encoding; `append` when
    /// it is written in block order (see `StorageTx::append`).
    pub(crate) fn put_block_data(
        &self,
        kind: BlockData,
        number: u64,
        raw: &[u8],
        append: bool,
    ) -> Result<()> {
        let stored = compress(kind.codec(raw.len()), raw).map_err(|reason| Error::Compress {
            table: kind.table().name(),
            reason,
        })?;
        self.put_chunked(kind.table(), number, &stored, append)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Vec<u8>> {
        let mut repetitive = Vec::new();
        for i in 0..500u32 {
            repetitive.extend_from_slice(&[0u8; 12]);
            repetitive.extend_from_slice(&(i % 7).to_be_bytes());
            repetitive.extend_from_slice(b"quarry block data");
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..300)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 32) as u8
            })
            .collect();
        vec![Vec::new(), vec![7], noise, repetitive]
    }

    #[test]
    fn every_codec_round_trips() {
        for codec in Codec::ALL {
            for raw in samples() {
                let stored = compress(codec, &raw).unwrap();
                assert_eq!(
                    decompress(&stored).unwrap().as_ref(),
                    raw.as_slice(),
                    "{codec:?}"
                );
            }
        }
    }

    #[test]
    fn compressible_values_shrink_and_others_stay_raw() {
        let [empty, _, noise, repetitive] = &samples()[..] else {
            panic!("four samples")
        };
        for codec in [Codec::Lz4, Codec::Zstd] {
            let stored = compress(codec, repetitive).unwrap();
            assert_eq!(stored[0], codec.tag());
            assert!(
                stored.len() * 4 < repetitive.len(),
                "{codec:?}: {}",
                stored.len()
            );
            assert_eq!(compress(codec, empty).unwrap(), vec![0]);
            let stored = compress(codec, noise).unwrap();
            assert_eq!(stored[0], Codec::Raw.tag(), "{codec:?}");
            assert_eq!(stored.len(), noise.len() + 1);
        }
    }

    /// Receipts above the limit are stored raw and read in place; below it, compressed.
    #[test]
    fn large_receipts_stay_raw() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        let small = crate::receipts::encode_block_receipts(&[]);
        let mut large = small.clone();
        large.resize(RAW_RECEIPTS_ABOVE + 1, 0);
        tx.put_block_data(BlockData::Receipts, 1, &large, true)
            .unwrap();
        tx.put_block_data(BlockData::Body, 1, &large, true).unwrap();
        let mut compressible = small.clone();
        compressible.resize(4096, 0);
        tx.put_block_data(BlockData::Receipts, 2, &compressible, true)
            .unwrap();
        tx.commit().unwrap();
        let r = db.reader().unwrap();
        let stored = |kind: BlockData, n: u64| {
            r.get(kind.table(), &n.to_be_bytes())
                .unwrap()
                .unwrap()
                .to_vec()
        };
        assert_eq!(stored(BlockData::Receipts, 1)[0], Codec::Raw.tag());
        assert_eq!(stored(BlockData::Body, 1)[0], Codec::Lz4.tag());
        assert_eq!(stored(BlockData::Receipts, 2)[0], Codec::Lz4.tag());
        for n in [1, 2] {
            let read = r.with_block_data(BlockData::Receipts, n, |raw| Ok(raw.len()));
            assert_eq!(read.unwrap(), Some(if n == 1 { large.len() } else { 4096 }));
        }
        let large_stored = stored(BlockData::Receipts, 1);
        assert!(matches!(
            decompress(&large_stored).unwrap(),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn damaged_values_are_errors_not_garbage() {
        let raw = &samples()[3];
        for codec in [Codec::Lz4, Codec::Zstd] {
            let stored = compress(codec, raw).unwrap();
            assert!(
                decompress(&stored[..stored.len() - 3]).is_err(),
                "{codec:?}"
            );
            let mut longer = stored.clone();
            longer[1..5].copy_from_slice(&(raw.len() as u32 + 1).to_be_bytes());
            assert!(decompress(&longer).is_err(), "{codec:?}");
        }
        assert!(decompress(&[]).is_err());
        assert!(decompress(&[9, 0, 0, 0, 1, 0]).is_err());
        assert!(decompress(&[1, 0, 0]).is_err());
    }
}
