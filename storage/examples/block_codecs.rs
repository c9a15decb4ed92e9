//! Measures the block data codecs on a datadir's own blocks: every body and receipts value
//! compressed with LZ4, zstd, and zstd with a dictionary trained on the table's first values
//! as a datadir trains its own (at zstd levels 1 and 3); for each, the total size (the values' bytes, and the bytes of the
//! whole 4 KiB overflow pages MDBX gives a value above about half a page, or the value and 16
//! bytes of node in a leaf page)
//! and the time per block to compress and to decompress:
//! `cargo run --release -p quarry-storage --example block_codecs -- DATADIR [DICT_KB [TRAIN_KB]]`
//! (defaults: `DICTIONARY_BYTES` and `TRAIN_BYTES`, what a datadir trains with).
//!
//! It reads the values through `StorageTx::block_data`, so a datadir of the layout before
//! compression (or one half way through `quarry migrate`) works as well as a current one.
use quarry_storage::{
    BlockData, Database,
    block_codec::{
        Codec, DICTIONARY_BYTES, TRAIN_BYTES, ZSTD_LEVEL, compress, compress_with_dictionary,
        decompress, decompress_with,
    },
    block_dictionary::Dictionary,
};
use std::{path::Path, sync::Arc, time::Instant};

const PAGE: usize = 4096;

/// The largest node (8-byte key, value and node header) MDBX keeps in a 4 KiB leaf page.
const LEAF_NODE_MAX: usize = 2022;

/// The bytes a value of `len` bytes takes in MDBX: within a leaf page when small, else whole
/// overflow pages.
fn stored_bytes(len: usize) -> usize {
    if len + 16 <= LEAF_NODE_MAX {
        len + 16
    } else {
        (len + 16).div_ceil(PAGE) * PAGE
    }
}

#[derive(Default)]
struct Tally {
    bytes: usize,
    paged: usize,
    compress_ns: u128,
    decompress_ns: u128,
}

impl Tally {
    fn add(&mut self, len: usize, compress_ns: u128, decompress_ns: u128) {
        self.bytes += len;
        self.paged += stored_bytes(len);
        self.compress_ns += compress_ns;
        self.decompress_ns += decompress_ns;
    }

    fn print(&self, table: &str, codec: &str, raw: usize, blocks: usize) {
        println!(
            "{table:<14} {codec:<10} {:>9.1} {:>9.1} {:>7.2} {:>11.1} {:>13.1}",
            self.bytes as f64 / 1e6,
            self.paged as f64 / 1e6,
            raw as f64 / self.bytes.max(1) as f64,
            self.compress_ns as f64 / 1e3 / blocks as f64,
            self.decompress_ns as f64 / 1e3 / blocks as f64,
        );
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: block_codecs DATADIR [DICT_KB [TRAIN_KB]]")?;
    let dict_kb: usize = args
        .next()
        .map_or(Ok(DICTIONARY_BYTES >> 10), |kb| kb.parse())?;
    let train_bytes: usize = args
        .next()
        .map_or(Ok(TRAIN_BYTES), |kb| kb.parse::<usize>().map(|kb| kb << 10))?;
    let db = Database::open(Path::new(&path))?;
    let tx = db.reader()?;
    let (head, _) = tx.head()?.ok_or("the datadir has no blocks")?;
    let blocks = head as usize + 1;
    println!(
        "{:<14} {:<10} {:>9} {:>9} {:>7} {:>11} {:>13}",
        "table", "codec", "MB", "paged MB", "ratio", "comp µs/blk", "decomp µs/blk"
    );
    for kind in BlockData::ALL {
        let table = kind.table().name();
        let mut values = Vec::with_capacity(blocks);
        for number in 0..=head {
            values.push(tx.block_data(kind, number)?.unwrap_or_default());
        }
        let raw: usize = values.iter().map(Vec::len).sum();
        let mut tally = Tally::default();
        for value in &values {
            tally.add(value.len(), 0, 0);
        }
        tally.print(table, "none", raw, blocks);
        for codec in [Codec::Lz4, Codec::Zstd] {
            let mut tally = Tally::default();
            for value in &values {
                let started = Instant::now();
                let stored = compress(codec, value)?;
                let compressed = started.elapsed().as_nanos();
                let started = Instant::now();
                let back = decompress(&stored)?;
                let decompressed = started.elapsed().as_nanos();
                if back.as_ref() != value.as_slice() {
                    return Err(format!("{table}: {} did not round-trip", codec.name()).into());
                }
                tally.add(stored.len(), compressed, decompressed);
            }
            tally.print(table, codec.name(), raw, blocks);
        }
        // A dictionary trained as a datadir trains its own: on the first `TRAIN_BYTES` of
        // the table's values (the blocks after the first multiple of `TRAIN_EVERY` that has
        // them), at each level a table could be written with.
        let mut samples: Vec<&[u8]> = Vec::new();
        let mut total = 0;
        for value in values.iter().filter(|v| !v.is_empty()) {
            if total >= train_bytes {
                break;
            }
            total += value.len();
            samples.push(value);
        }
        let started = Instant::now();
        let dict = zstd::dict::from_samples(&samples, dict_kb << 10)?;
        let trained = started.elapsed();
        for level in [1, ZSTD_LEVEL] {
            let dictionary = Arc::new(Dictionary::new(&dict, level)?);
            let mut tally = Tally::default();
            for value in &values {
                let started = Instant::now();
                let stored = compress_with_dictionary(&dictionary, value)?;
                let compressed = started.elapsed().as_nanos();
                let started = Instant::now();
                let back = decompress_with(&stored, |_| Ok(dictionary.clone()))?;
                let decompressed = started.elapsed().as_nanos();
                if back.as_ref() != value.as_slice() {
                    return Err(
                        format!("{table}: zstd with a dictionary did not round-trip").into(),
                    );
                }
                tally.add(stored.len(), compressed, decompressed);
            }
            tally.print(table, &format!("dict-l{level}"), raw, blocks);
        }
        println!(
            "{table:<14} dictionary: {} KB from the first {} values ({:.1} MB), trained in {:.1} s",
            dict.len() >> 10,
            samples.len(),
            total as f64 / 1e6,
            trained.as_secs_f64()
        );
    }
    Ok(())
}
