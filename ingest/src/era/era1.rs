//! era1 files: pre-merge history, 8,192 blocks a file, each block as a snappy-framed header,
//! body and receipts and its total difficulty, then an accumulator over the (hash, total
//! difficulty) list and a block index. Reading checks every rule of the format before the
//! first block is handed on; writing produces the same records from the stored chain.

use super::kinds::{ACCUMULATOR, BLOCK_INDEX, BODY, HEADER, RECEIPTS, TOTAL_DIFFICULTY};
use super::{
    BLOCKS_PER_ERA, Checker, EraError, Summary, accumulator_root, check_link, decode_header,
    e2store::{self, RecordWriter},
    expect_version, read_header,
};
use crate::reader::RawBlock;
use alloy_consensus::Header;
use alloy_primitives::{B256, U256, keccak256};
use std::{fs::File, io::BufWriter, path::Path};

/// Reads every header and total difficulty of an era1 file (bodies and receipts are passed
/// over), and checks the format's rules: consecutive blocks linked by parent hash, each
/// total difficulty the one before plus the block's difficulty, the accumulator root, and the
/// block index against the records' offsets.
pub fn check(path: &Path) -> Result<Summary, EraError> {
    let mut c = Checker::open(path)?;
    expect_version(&mut c)?;
    let mut records: Vec<(B256, U256)> = Vec::new();
    let mut offsets = Vec::new();
    let mut first: Option<Header> = None;
    let accumulator = loop {
        let expected = first.as_ref().map(|h| h.number + records.len() as u64);
        let Some(record) = c.header(expected)? else {
            return Err(c.invalid(expected, "the file ends before its accumulator record"));
        };
        if record.kind == ACCUMULATOR {
            break c.data(&record, expected)?;
        }
        if records.len() as u64 == BLOCKS_PER_ERA {
            return Err(c.invalid(expected, "more than 8,192 blocks in one file"));
        }
        let (header, hash) = read_header(&mut c, &record, expected)?;
        let number = header.number;
        offsets.push(record.offset);
        for (kind, what) in [(BODY, "body"), (RECEIPTS, "receipts")] {
            let record = c.expect(kind, what, Some(number))?;
            c.skip(&record, Some(number))?;
        }
        let record = c.expect(TOTAL_DIFFICULTY, "total difficulty", Some(number))?;
        let td = c.total_difficulty(&record, number)?;
        let parent = records.last().map(|&(hash, td)| (hash, Some(td)));
        check_link(&c, &header, parent, Some(td))?;
        records.push((hash, td));
        first.get_or_insert(header);
    };
    let first = first.ok_or_else(|| c.invalid(None, "no blocks before the accumulator record"))?;
    c.check_accumulator(&accumulator, &records)?;
    check_index(&mut c, first.number, &offsets)?;
    let (hashes, total_difficulties) = records.into_iter().unzip();
    Ok(Summary {
        first: first.number,
        hashes,
        total_difficulties: Some(total_difficulties),
        first_difficulty: first.difficulty,
        first_parent: first.parent_hash,
    })
}

/// The block index (first number, one offset per block relative to the index record's
/// start, the count) must name the header records where they stand, and end the file.
fn check_index(c: &mut Checker<'_>, first: u64, offsets: &[u64]) -> Result<(), EraError> {
    let record = c.expect(BLOCK_INDEX, "block index", None)?;
    let data = c.data(&record, None)?;
    let words: Vec<i64> = data
        .chunks(8)
        .map(|chunk| {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            i64::from_le_bytes(word)
        })
        .collect();
    let count = offsets.len();
    if data.len() != 16 + 8 * count {
        return Err(c.invalid(
            None,
            format!(
                "the block index holds {} bytes; {count} blocks need {}",
                data.len(),
                16 + 8 * count
            ),
        ));
    }
    let (start, listed) = (words[0], words[count + 1]);
    if u64::try_from(start).ok() != Some(first) || usize::try_from(listed).ok() != Some(count) {
        return Err(c.invalid(
            None,
            format!(
                "the block index names {listed} blocks from block {start}; the records are {count} from block {first}"
            ),
        ));
    }
    for (i, &offset) in offsets.iter().enumerate() {
        let named = i128::from(record.offset) + i128::from(words[i + 1]);
        if named != i128::from(offset) {
            return Err(c.invalid(
                Some(first + i as u64),
                format!(
                    "the block index puts its header at byte offset {named}, it stands at {offset}"
                ),
            ));
        }
    }
    if record.end() != c.file_len {
        return Err(c.invalid(
            None,
            format!("{} bytes after the block index", c.file_len - record.end()),
        ));
    }
    Ok(())
}

/// The blocks of an era1 file that [`check`] accepted, as whole-block RLP for the import
/// pipeline (read, decompressed and joined on its decoding thread). Each block's header must
/// hash as checked, and its receipts record must have the header's receipts root: execution
/// then compares that root with the receipts it produces.
pub struct Era1Blocks<'a> {
    checker: Option<Checker<'a>>,
    summary: &'a Summary,
    next: usize,
}

impl<'a> Era1Blocks<'a> {
    pub fn open(path: &'a Path, summary: &'a Summary) -> Result<Self, EraError> {
        let mut checker = Checker::open(path)?;
        checker.header(None)?;
        Ok(Self {
            checker: Some(checker),
            summary,
            next: 0,
        })
    }
}

fn read_one(c: &mut Checker<'_>, number: u64, expected_hash: B256) -> Result<RawBlock, EraError> {
    let block = Some(number);
    let header_record = c.expect(HEADER, "header", block)?;
    let mut parts = [Vec::new(), Vec::new(), Vec::new()];
    parts[0] = c.data(&header_record, block)?;
    for (i, (kind, what)) in [(BODY, "body"), (RECEIPTS, "receipts")]
        .into_iter()
        .enumerate()
    {
        let record = c.expect(kind, what, block)?;
        parts[i + 1] = c.data(&record, block)?;
    }
    let record = c.expect(TOTAL_DIFFICULTY, "total difficulty", block)?;
    c.data(&record, block)?;
    let [header, body, receipts] = parts;
    let header = c.unframe(&header, "header", block)?;
    if keccak256(&header) != expected_hash {
        return Err(c.invalid(block, "its header changed since the file was checked"));
    }
    let body = c.unframe(&body, "body", block)?;
    let receipts = c.unframe(&receipts, "receipts", block)?;
    let decoded = decode_header(c, &header, number)?;
    let root = super::receipts_root(&receipts).map_err(|e| c.invalid(block, e))?;
    c.check_receipts_root(number, root, decoded.receipts_root)?;
    let bytes = super::join_block(&header, &body).map_err(|e| c.invalid(block, e))?;
    Ok(RawBlock {
        offset: header_record.offset,
        bytes,
    })
}

impl Iterator for Era1Blocks<'_> {
    type Item = Result<RawBlock, crate::reader::ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        let hash = *self.summary.hashes.get(self.next)?;
        let number = self.summary.first + self.next as u64;
        let checker = self.checker.as_mut()?;
        let result = read_one(checker, number, hash);
        self.next += 1;
        if result.is_err() {
            self.checker = None;
        }
        Some(result.map_err(Into::into))
    }
}

/// Writes one era1 file of the blocks `blocks` yields: (header RLP, body RLP, receipts RLP,
/// total difficulty) each. Returns the accumulator root, which names the file.
pub fn write(
    path: &Path,
    first: u64,
    blocks: impl Iterator<Item = Result<(Vec<u8>, Vec<u8>, Vec<u8>, U256), EraError>>,
) -> Result<B256, EraError> {
    let fail = |e: std::io::Error| EraError::Write {
        path: path.display().to_string(),
        source: e,
    };
    let file = File::create(path).map_err(fail)?;
    let mut out = RecordWriter::new(BufWriter::with_capacity(1 << 20, file));
    out.write(e2store::VERSION, &[]).map_err(fail)?;
    let mut records = Vec::new();
    let mut offsets = Vec::new();
    for block in blocks {
        let (header, body, receipts, td) = block?;
        records.push((keccak256(&header), td));
        offsets.push(
            out.write(HEADER, &e2store::snappy_frame(&header).map_err(fail)?)
                .map_err(fail)?,
        );
        out.write(BODY, &e2store::snappy_frame(&body).map_err(fail)?)
            .map_err(fail)?;
        out.write(RECEIPTS, &e2store::snappy_frame(&receipts).map_err(fail)?)
            .map_err(fail)?;
        out.write(TOTAL_DIFFICULTY, &td.to_le_bytes::<32>())
            .map_err(fail)?;
    }
    let root = accumulator_root(&records).map_err(|e| EraError::invalid(path, None, e))?;
    out.write(ACCUMULATOR, root.as_slice()).map_err(fail)?;
    let index_at = out.position();
    let mut index = Vec::with_capacity(16 + 8 * offsets.len());
    index.extend_from_slice(&(first as i64).to_le_bytes());
    for offset in &offsets {
        index.extend_from_slice(&(*offset as i64 - index_at as i64).to_le_bytes());
    }
    index.extend_from_slice(&(offsets.len() as i64).to_le_bytes());
    out.write(BLOCK_INDEX, &index).map_err(fail)?;
    out.finish().map_err(fail)?;
    Ok(root)
}
