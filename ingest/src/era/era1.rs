//! era1 files: pre-merge history, 8,192 blocks a file, each block as a snappy-framed header,
//! body and receipts and its total difficulty, then an accumulator over the (hash, total
//! difficulty) list and a block index. Reading checks every rule of the format before the
//! first block is handed on; writing produces the same records from the stored chain.

use super::{
    EraError,
    e2store::{self, RecordHeader, RecordReader, RecordWriter},
};
use crate::reader::RawBlock;
use alloy_consensus::Header;
use alloy_primitives::{B256, U256, keccak256};
use alloy_rlp::Decodable;
use std::{
    fs::File,
    io::{BufReader, BufWriter, Write},
    path::Path,
};

/// Blocks in one era1 file (and one era).
pub const BLOCKS_PER_ERA: u64 = 8192;

pub const HEADER: u16 = 0x03;
pub const BODY: u16 = 0x04;
pub const RECEIPTS: u16 = 0x05;
pub const TOTAL_DIFFICULTY: u16 = 0x06;
pub const ACCUMULATOR: u16 = 0x07;
pub const BLOCK_INDEX: u16 = 0x3266;

/// What the checking pass learned of an era1 file: its blocks' hashes and total
/// difficulties (all the accumulator covers), their first header's difficulty and the root.
#[derive(Debug, Clone)]
pub struct Era1Summary {
    pub first: u64,
    /// (block hash, total difficulty) of each block, in order.
    pub records: Vec<(B256, U256)>,
    pub first_difficulty: U256,
    pub first_parent: B256,
    pub root: B256,
}

impl Era1Summary {
    pub fn last(&self) -> u64 {
        self.first + self.records.len() as u64 - 1
    }
}

/// The SSZ hash tree root of the epoch's `List[HeaderRecord, 8192]`, where a `HeaderRecord`
/// is the container (block_hash: Bytes32, total_difficulty: uint256): sigp's tree_hash
/// merkleizes it (the record root is the hash of its two chunks, the total difficulty's
/// little-endian).
pub fn accumulator_root(records: &[(B256, U256)]) -> Result<B256, String> {
    let mut list = tree_hash::MerkleHasher::with_leaves(BLOCKS_PER_ERA as usize);
    for (hash, total_difficulty) in records {
        let mut chunks = [0u8; 64];
        chunks[..32].copy_from_slice(hash.as_slice());
        chunks[32..].copy_from_slice(&total_difficulty.to_le_bytes::<32>());
        let record = tree_hash::merkle_root(&chunks, 2);
        list.write(record.as_slice())
            .map_err(|e| format!("accumulator: {e:?}"))?;
    }
    let root = list.finish().map_err(|e| format!("accumulator: {e:?}"))?;
    Ok(tree_hash::mix_in_length(&root, records.len()))
}

/// One open era1 file and where the problems it finds are reported.
struct Checker<'a> {
    path: &'a Path,
    reader: RecordReader<BufReader<File>>,
    file_len: u64,
}

impl Checker<'_> {
    fn invalid(&self, block: Option<u64>, reason: impl Into<String>) -> EraError {
        EraError::invalid(self.path, block, reason)
    }

    fn header(&mut self, block: Option<u64>) -> Result<Option<RecordHeader>, EraError> {
        self.reader
            .next_header()
            .map_err(|e| self.invalid(block, e.to_string()))
    }

    fn data(&mut self, record: &RecordHeader, block: Option<u64>) -> Result<Vec<u8>, EraError> {
        self.reader
            .read_data(record)
            .map_err(|e| self.invalid(block, e.to_string()))
    }

    fn expect(
        &mut self,
        kind: u16,
        what: &str,
        block: Option<u64>,
    ) -> Result<RecordHeader, EraError> {
        let at = self.reader.position();
        match self.header(block)? {
            Some(record) if record.kind == kind => Ok(record),
            Some(record) => Err(self.invalid(
                block,
                format!(
                    "expected the {what} record (type 0x{kind:04x}) at byte offset {at}, found type 0x{:04x}",
                    record.kind
                ),
            )),
            None => Err(self.invalid(
                block,
                format!("the file ends at byte offset {at}, where the {what} record belongs"),
            )),
        }
    }
}

fn open(path: &Path) -> Result<(RecordReader<BufReader<File>>, u64), EraError> {
    let file = File::open(path).map_err(|source| EraError::Open {
        path: path.display().to_string(),
        source,
    })?;
    let file_len = file
        .metadata()
        .map_err(|source| EraError::Open {
            path: path.display().to_string(),
            source,
        })?
        .len();
    Ok((
        RecordReader::new(BufReader::with_capacity(256 * 1024, file)),
        file_len,
    ))
}

fn decode_header(checker: &Checker<'_>, rlp: &[u8], block: u64) -> Result<Header, EraError> {
    let mut slice = rlp;
    let header = Header::decode(&mut slice)
        .map_err(|e| checker.invalid(Some(block), format!("header: {e}")))?;
    if !slice.is_empty() {
        return Err(checker.invalid(Some(block), "header: bytes after its RLP"));
    }
    Ok(header)
}

/// Reads every header and total difficulty of an era1 file (bodies and receipts are passed
/// over), and checks the format's rules: consecutive blocks linked by parent hash, each
/// total difficulty the one before plus the block's difficulty, the accumulator root, and the
/// block index against the records' offsets.
pub fn check(path: &Path) -> Result<Era1Summary, EraError> {
    let (reader, file_len) = open(path)?;
    let mut c = Checker {
        path,
        reader,
        file_len,
    };
    match c.header(None)? {
        Some(record) if record.kind == e2store::VERSION && record.len == 0 => {}
        _ => return Err(EraError::NotEra(path.display().to_string())),
    }
    let mut records: Vec<(B256, U256)> = Vec::new();
    let mut offsets = Vec::new();
    let (mut first, mut first_difficulty, mut first_parent) = (0, U256::ZERO, B256::ZERO);
    let accumulator = loop {
        let expected = first + records.len() as u64;
        let block = (!records.is_empty()).then_some(expected);
        let Some(record) = c.header(block)? else {
            return Err(c.invalid(block, "the file ends before its accumulator record"));
        };
        if record.kind == ACCUMULATOR {
            break c.data(&record, block)?;
        }
        if record.kind != HEADER {
            return Err(c.invalid(
                block,
                format!(
                    "expected a header record (type 0x0003) at byte offset {}, found type 0x{:04x}",
                    record.offset, record.kind
                ),
            ));
        }
        if records.len() as u64 == BLOCKS_PER_ERA {
            return Err(c.invalid(block, "more than 8,192 blocks in one file"));
        }
        let compressed = c.data(&record, block)?;
        let rlp = e2store::snappy_unframe(&compressed)
            .map_err(|e| c.invalid(block, format!("header record: {e}")))?;
        let header = decode_header(&c, &rlp, expected)?;
        if records.is_empty() {
            (first, first_difficulty, first_parent) =
                (header.number, header.difficulty, header.parent_hash);
        } else if header.number != expected {
            return Err(c.invalid(
                Some(header.number),
                format!(
                    "expected block {expected} here, found block {}",
                    header.number
                ),
            ));
        }
        let number = header.number;
        if let Some((parent, _)) = records.last()
            && header.parent_hash != *parent
        {
            return Err(c.invalid(
                Some(number),
                format!(
                    "its parent hash {} is not block {}'s hash {parent}",
                    header.parent_hash,
                    number - 1
                ),
            ));
        }
        offsets.push(record.offset);
        for (kind, what) in [(BODY, "body"), (RECEIPTS, "receipts")] {
            let record = c.expect(kind, what, Some(number))?;
            let file_len = c.file_len;
            c.reader
                .skip_data(&record, file_len)
                .map_err(|e| c.invalid(Some(number), e.to_string()))?;
        }
        let record = c.expect(TOTAL_DIFFICULTY, "total difficulty", Some(number))?;
        let td = c.data(&record, Some(number))?;
        if td.len() != 32 {
            return Err(c.invalid(
                Some(number),
                format!("a total difficulty of {} bytes, not 32", td.len()),
            ));
        }
        let td = U256::from_le_slice(&td);
        if let Some((_, parent_td)) = records.last()
            && parent_td.checked_add(header.difficulty) != Some(td)
        {
            return Err(c.invalid(
                Some(number),
                format!(
                    "total difficulty {td} is not block {}'s {parent_td} plus the block's difficulty {}",
                    number - 1,
                    header.difficulty
                ),
            ));
        }
        records.push((keccak256(&rlp), td));
    };
    if records.is_empty() {
        return Err(c.invalid(None, "no blocks before the accumulator record"));
    }
    let root = accumulator_root(&records).map_err(|e| c.invalid(None, e))?;
    if accumulator.as_slice() != root.as_slice() {
        return Err(c.invalid(
            None,
            format!(
                "the accumulator record is 0x{}, the root of the file's headers and total difficulties is {root}",
                alloy_primitives::hex::encode(&accumulator)
            ),
        ));
    }
    check_index(&mut c, first, &offsets)?;
    Ok(Era1Summary {
        first,
        records,
        first_difficulty,
        first_parent,
        root,
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
    summary: &'a Era1Summary,
    next: usize,
}

impl<'a> Era1Blocks<'a> {
    pub fn open(path: &'a Path, summary: &'a Era1Summary) -> Result<Self, EraError> {
        let (mut reader, file_len) = open(path)?;
        reader
            .next_header()
            .map_err(|e| EraError::invalid(path, None, e.to_string()))?;
        Ok(Self {
            checker: Some(Checker {
                path,
                reader,
                file_len,
            }),
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
    let [header, body, receipts] = parts.map(|p| e2store::snappy_unframe(&p));
    let header = header.map_err(|e| c.invalid(block, format!("header record: {e}")))?;
    if keccak256(&header) != expected_hash {
        return Err(c.invalid(block, "its header changed since the file was checked"));
    }
    let body = body.map_err(|e| c.invalid(block, format!("body record: {e}")))?;
    let receipts = receipts.map_err(|e| c.invalid(block, format!("receipts record: {e}")))?;
    let decoded = decode_header(c, &header, number)?;
    let root = super::receipts_root(&receipts).map_err(|e| c.invalid(block, e))?;
    if root != decoded.receipts_root {
        return Err(c.invalid(
            block,
            format!(
                "its receipts record has root {root}, the header's receipts root is {}",
                decoded.receipts_root
            ),
        ));
    }
    let bytes = super::join_block(&header, &body).map_err(|e| c.invalid(block, e))?;
    Ok(RawBlock {
        offset: header_record.offset,
        bytes,
    })
}

impl Iterator for Era1Blocks<'_> {
    type Item = Result<RawBlock, crate::reader::ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.summary.records.len() {
            return None;
        }
        let number = self.summary.first + self.next as u64;
        let (hash, _) = self.summary.records[self.next];
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
    let mut file = out
        .into_inner()
        .into_inner()
        .map_err(|e| fail(e.into_error()))?;
    file.flush().map_err(fail)?;
    file.sync_all().map_err(fail)?;
    Ok(root)
}
