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
//! 3 | length u32 BE | zstd frame made with the table's dictionary (its id in the frame)
//! ```
//!
//! The uncompressed encoding is each table's own: RLP of the body, and receipts.rs's in-place
//! layout, which a reader decompresses once and then reads in place.
//!
//! Which codec each table is written with, chosen by the figures of
//! storage/examples/block_codecs.rs (docs/benchmarks.md): LZ4 (`BlockData::codec`) until the
//! datadir has a dictionary for the table, then zstd with that dictionary. The dictionary is
//! trained once, on the table's own values of the blocks before (`TRAIN_BYTES` of them, looked
//! for every `TRAIN_EVERY` blocks), as reth trains its static files' dictionaries on their
//! data; values written before it stay LZ4. See block_dictionary.rs for how it is kept.

use crate::{
    BlockRecord, Error, MetaKey, Result, StorageTx, Table,
    blocks::block_dictionary::{Dictionary, frame_dictionary_id},
    blocks::receipts,
};
use alloy_rlp::Encodable;
use signet_libmdbx::{RwSync, TransactionKind};
use std::{borrow::Cow, sync::Arc};

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

/// The tag of a value compressed with its table's dictionary.
const DICTIONARY_TAG: u8 = 3;

/// The size a table's dictionary is trained to.
pub const DICTIONARY_BYTES: usize = 64 << 10;

/// How many bytes of a table's values (uncompressed) a dictionary is trained on: about a
/// hundred times its size, as zstd's guide advises.
pub const TRAIN_BYTES: usize = 8 << 20;

/// How often (in block numbers) a table without a dictionary looks for enough values to train
/// one on.
pub const TRAIN_EVERY: u64 = 256;

/// How many blocks back a training looks for its values: a chain of small blocks trains later,
/// on recent values, rather than reading its whole history at each look.
pub const TRAIN_WINDOW: u64 = 4096;

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

/// `raw` as stored with its table's dictionary: tagged, and raw when compressing would not
/// make it smaller.
pub fn compress_with_dictionary(
    dictionary: &Dictionary,
    raw: &[u8],
) -> std::result::Result<Vec<u8>, String> {
    let frame = dictionary.compress(raw)?;
    let length = u32::try_from(raw.len()).map_err(|_| format!("a value of {} bytes", raw.len()))?;
    let mut out;
    if frame.len() + HEADER < raw.len() + 1 {
        out = Vec::with_capacity(HEADER + frame.len());
        out.push(DICTIONARY_TAG);
        out.extend_from_slice(&length.to_be_bytes());
        out.extend_from_slice(&frame);
    } else {
        out = Vec::with_capacity(1 + raw.len());
        out.push(Codec::Raw.tag());
        out.extend_from_slice(raw);
    }
    Ok(out)
}

/// The uncompressed encoding of a stored value of the codecs without a dictionary: in place
/// when it is raw.
pub fn decompress(stored: &[u8]) -> Result<Cow<'_, [u8]>> {
    decompress_with(stored, |id| {
        Err(Error::Corrupt(format!(
            "a value compressed with zstd dictionary {id}, read without it"
        )))
    })
}

/// The uncompressed encoding of a stored value: in place when it is raw. `dictionary` gives the
/// dictionary of the id a value of tag 3 names.
pub fn decompress_with(
    stored: &[u8],
    dictionary: impl FnOnce(u32) -> Result<Arc<Dictionary>>,
) -> Result<Cow<'_, [u8]>> {
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
        DICTIONARY_TAG => {
            let id = frame_dictionary_id(payload).ok_or_else(|| {
                Error::Corrupt("a dictionary-compressed value naming no dictionary".into())
            })?;
            dictionary(id)?.decompress_into(payload, &mut out)?
        }
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

    /// The zstd level the table is written with once it has a dictionary. On the scale chain
    /// (storage/examples/block_codecs.rs), level 3 makes bodies 1% smaller than level 1 at
    /// almost four times the cost (229 against 63 µs a block); receipts 8% smaller, at 78
    /// against 61 µs. An ingest of that chain writing receipts at level 1 as well was no
    /// faster (bench/ab.sh), and its receipts took 84.0 MB against 76.3.
    pub const fn dictionary_level(self) -> i32 {
        match self {
            BlockData::Body => 1,
            BlockData::Receipts => 3,
        }
    }

    /// The `Meta` key of the table's dictionary.
    pub const fn dictionary_key(self) -> MetaKey {
        match self {
            BlockData::Body => MetaKey::BlockBodiesDictionary,
            BlockData::Receipts => MetaKey::ReceiptsDictionary,
        }
    }
}

impl<K: TransactionKind> StorageTx<K> {
    /// The dictionary `kind`'s values are written with (`None`: none trained yet).
    pub fn block_dictionary(&self, kind: BlockData) -> Result<Option<Arc<Dictionary>>> {
        let Some(bytes) = self.meta_in_place(kind.dictionary_key())? else {
            return Ok(None);
        };
        self.dictionaries
            .get_or_digest(&bytes, kind.dictionary_level())
            .map(Some)
    }

    /// The dictionary of id `id`, which a value of `kind` names.
    fn dictionary_named(&self, kind: BlockData, id: u32) -> Result<Arc<Dictionary>> {
        if let Some(found) = self.dictionaries.get(id) {
            return Ok(found);
        }
        match self.block_dictionary(kind)? {
            Some(dictionary) if dictionary.id() == id => Ok(dictionary),
            stored => Err(Error::Corrupt(format!(
                "a value compressed with zstd dictionary {id}, where the datadir's {} dictionary is {}",
                kind.table().name(),
                stored.map_or("absent".to_string(), |d| d.id().to_string())
            ))),
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
        let raw = decompress_with(&stored, |id| self.dictionary_named(kind, id)).map_err(|e| {
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

/// What compressing a block's values needs from the datadir: each table's dictionary, once
/// trained. It reads nothing else, so an import compresses a block's values on another thread
/// while the write transaction's thread writes the block's state.
pub struct BlockCompressor {
    body: Option<Arc<Dictionary>>,
    receipts: Option<Arc<Dictionary>>,
}

/// A block's body and receipts, encoded and compressed as `BlockBodies` and `Receipts` store
/// them (`StorageTx::insert_compressed_block` stores them).
pub struct CompressedBlockData {
    pub(crate) body: Vec<u8>,
    pub(crate) receipts: Vec<u8>,
}

impl BlockCompressor {
    /// Encodes and compresses `block`'s body and receipts.
    pub fn compress(&self, block: &BlockRecord<'_>) -> Result<CompressedBlockData> {
        let mut body = Vec::new();
        block.body.encode(&mut body);
        let receipts = receipts::encode_block_receipts(block.receipts);
        Ok(CompressedBlockData {
            body: compress_block_data(BlockData::Body, self.body.as_deref(), &body)?,
            receipts: compress_block_data(
                BlockData::Receipts,
                self.receipts.as_deref(),
                &receipts,
            )?,
        })
    }
}

/// `raw` as `kind`'s table stores it: with the table's dictionary once there is one.
fn compress_block_data(
    kind: BlockData,
    dictionary: Option<&Dictionary>,
    raw: &[u8],
) -> Result<Vec<u8>> {
    let codec = kind.codec(raw.len());
    match dictionary {
        Some(dictionary) if codec != Codec::Raw => compress_with_dictionary(dictionary, raw),
        _ => compress(codec, raw),
    }
    .map_err(|reason| Error::Compress {
        table: kind.table().name(),
        reason,
    })
}

impl<K: TransactionKind> StorageTx<K> {
    /// What compresses the next block's values as this transaction would store them.
    pub fn block_compressor(&self) -> Result<BlockCompressor> {
        Ok(BlockCompressor {
            body: self.block_dictionary(BlockData::Body)?,
            receipts: self.block_dictionary(BlockData::Receipts)?,
        })
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
        let dictionary = self.block_dictionary(kind)?;
        let stored = compress_block_data(kind, dictionary.as_deref(), raw)?;
        self.store_block_data(kind, number, &stored, append)
    }

    /// Stores block `number`'s compressed `kind` value; every `TRAIN_EVERY` blocks, a table
    /// without a dictionary looks for enough values to train one on.
    pub(crate) fn store_block_data(
        &self,
        kind: BlockData,
        number: u64,
        stored: &[u8],
        append: bool,
    ) -> Result<()> {
        self.put_chunked(kind.table(), number, stored, append)?;
        if number.is_multiple_of(TRAIN_EVERY) && self.block_dictionary(kind)?.is_none() {
            self.train_block_dictionary(kind, number, TRAIN_BYTES)?;
        }
        Ok(())
    }

    /// Trains `kind`'s dictionary on the values of block `number` and those before it, when
    /// `TRAIN_WINDOW` blocks back hold at least `min_bytes` of them, and stores it. Returns
    /// whether it did. A training zstd refuses (too few distinct values) is tried again at a
    /// later block, not an error: the values stay LZ4 meanwhile.
    pub(crate) fn train_block_dictionary(
        &self,
        kind: BlockData,
        number: u64,
        min_bytes: usize,
    ) -> Result<bool> {
        let mut samples = Vec::new();
        let mut total = 0;
        let first = number.saturating_sub(TRAIN_WINDOW - 1);
        for n in (first..=number).rev() {
            if total >= min_bytes {
                break;
            }
            if let Some(raw) = self.block_data(kind, n)?
                && !raw.is_empty()
            {
                total += raw.len();
                samples.push(raw);
            }
        }
        if total < min_bytes {
            return Ok(false);
        }
        let Ok(bytes) = zstd::dict::from_samples(&samples, DICTIONARY_BYTES) else {
            return Ok(false);
        };
        self.dictionaries
            .get_or_digest(&bytes, kind.dictionary_level())?;
        self.put_meta(kind.dictionary_key(), &bytes)?;
        Ok(true)
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
        let small = crate::blocks::receipts::encode_block_receipts(&[]);
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

    /// A block's receipts-like value: the same structure in every block, numbers that vary.
    fn receipts_like(number: u64, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len);
        let mut i = 0u64;
        while v.len() < len {
            v.extend_from_slice(b"\x02\xf9\x01\x09\x01\x83\x52\x08");
            v.extend_from_slice(&[0u8; 12]);
            v.extend_from_slice(&(number.wrapping_mul(0x9e37_79b9) ^ i).to_be_bytes());
            v.extend_from_slice(b"\xdd\xf2\x52\xad\x1b\xe2\xc8\x9b\x69\xc2\xb0\x68");
            v.extend_from_slice(&(i * 1_000_003 + number).to_le_bytes());
            i += 1;
        }
        v.truncate(len);
        v
    }

    fn stored_tag(db: &crate::Database, kind: BlockData, number: u64) -> u8 {
        let r = db.reader().unwrap();
        r.get_chunked(kind.table(), number).unwrap().unwrap()[0]
    }

    /// Once a table has a dictionary, the values written after use it and those before stay
    /// LZ4; a fresh handle (as another process) reads both, digesting the stored dictionary.
    #[test]
    fn a_trained_dictionary_compresses_later_values_and_a_fresh_handle_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        tx.put_schema_version().unwrap();
        for n in 0..300 {
            tx.put_block_data(BlockData::Receipts, n, &receipts_like(n, 4000), true)
                .unwrap();
        }
        // 1.2 MB written: block 256 looked and found less than TRAIN_BYTES.
        assert!(tx.block_dictionary(BlockData::Receipts).unwrap().is_none());
        assert!(
            !tx.train_block_dictionary(BlockData::Receipts, 299, 2 << 20)
                .unwrap()
        );
        assert!(
            tx.train_block_dictionary(BlockData::Receipts, 299, 1 << 20)
                .unwrap()
        );
        for n in 300..400 {
            tx.put_block_data(BlockData::Receipts, n, &receipts_like(n, 4000), true)
                .unwrap();
        }
        tx.commit().unwrap();
        assert_eq!(stored_tag(&db, BlockData::Receipts, 299), Codec::Lz4.tag());
        assert_eq!(stored_tag(&db, BlockData::Receipts, 300), DICTIONARY_TAG);
        let sizes = |db: &crate::Database, n: u64| {
            let r = db.reader().unwrap();
            r.get_chunked(Table::Receipts, n).unwrap().unwrap().len()
        };
        let lz4 = sizes(&db, 299);
        let with_dictionary = sizes(&db, 301);
        assert!(with_dictionary < lz4, "{with_dictionary} against {lz4}");
        drop(db);
        let db = crate::Database::open(dir.path()).unwrap();
        let r = db.reader().unwrap();
        for n in 0..400 {
            assert_eq!(
                r.block_data(BlockData::Receipts, n).unwrap().unwrap(),
                receipts_like(n, 4000),
                "block {n}"
            );
        }
        // The bodies table has none: it trains on its own values.
        assert!(r.block_dictionary(BlockData::Body).unwrap().is_none());
    }

    /// A table trains by itself at the first multiple of `TRAIN_EVERY` with `TRAIN_BYTES` of
    /// values behind it.
    #[test]
    fn a_table_trains_its_dictionary_once_it_holds_enough_values() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::Database::open(dir.path()).unwrap();
        let len = 20_000;
        let trained_at = (TRAIN_BYTES / len) as u64 / TRAIN_EVERY * TRAIN_EVERY + TRAIN_EVERY;
        let tx = db.writer().unwrap();
        tx.put_schema_version().unwrap();
        for n in 0..=trained_at + 1 {
            tx.put_block_data(BlockData::Body, n, &receipts_like(n, len), true)
                .unwrap();
            let trained = tx.block_dictionary(BlockData::Body).unwrap().is_some();
            assert_eq!(trained, n >= trained_at, "block {n}");
        }
        tx.commit().unwrap();
        assert_eq!(
            stored_tag(&db, BlockData::Body, trained_at),
            Codec::Lz4.tag()
        );
        assert_eq!(
            stored_tag(&db, BlockData::Body, trained_at + 1),
            DICTIONARY_TAG
        );
        let r = db.reader().unwrap();
        let back = r.block_data(BlockData::Body, trained_at + 1).unwrap();
        assert_eq!(back.unwrap(), receipts_like(trained_at + 1, len));
    }

    /// A value naming a dictionary the datadir does not have is an error that says so.
    #[test]
    fn a_value_of_an_unknown_dictionary_is_an_error() {
        let samples: Vec<Vec<u8>> = (0..200).map(|n| receipts_like(n, 2000)).collect();
        let bytes = zstd::dict::from_samples(&samples, 4 << 10).unwrap();
        let dictionary = Dictionary::new(&bytes, ZSTD_LEVEL).unwrap();
        let stored = compress_with_dictionary(&dictionary, &samples[3]).unwrap();
        assert_eq!(stored[0], DICTIONARY_TAG);
        let err = decompress(&stored).unwrap_err().to_string();
        assert!(err.contains(&dictionary.id().to_string()), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let db = crate::Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        tx.put_chunked(Table::Receipts, 1, &stored, true).unwrap();
        let err = tx
            .with_block_data(BlockData::Receipts, 1, |raw| Ok(raw.len()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("dictionary is absent"), "{err}");
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
