//! ere files (eraE, as reth 2.5.1 reads and writes them): execution history of any era, before
//! or after the merge, 8,192 blocks a file, sectioned by record type: every header, then every
//! body, every slim receipts list (no blooms), total difficulties before the merge, an
//! accumulator over the pre-merge blocks, and a dynamic block index naming each block's records.

use super::{
    BLOCKS_PER_ERA, Checker, EraError, Summary, accumulator_root, check_link,
    e2store::{self, RecordWriter},
    expect_version,
    kinds::{ACCUMULATOR, BODY, DYNAMIC_INDEX, HEADER, PROOF, SLIM_RECEIPTS, TOTAL_DIFFICULTY},
    read_header,
};
use crate::reader::RawBlock;
use alloy_consensus::{Eip658Value, Receipt, ReceiptEnvelope, ReceiptWithBloom, TxType};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{B256, Log, U256, keccak256, logs_bloom};
use alloy_rlp::{Decodable, Encodable};
use std::{fs::File, io::BufWriter, path::Path};

/// Where an ere file's sections start, for reading its blocks in step.
#[derive(Debug, Clone)]
pub struct Layout {
    first_header: u64,
    first_body: u64,
    first_receipts: Option<u64>,
}

/// Every record of the file after the headers, by kind, in order.
#[derive(Default)]
struct Sections {
    bodies: Vec<u64>,
    receipts: Vec<u64>,
    proofs: Vec<u64>,
    total_difficulties: Vec<(u64, U256)>,
    accumulator: Option<Vec<u8>>,
}

/// Reads an ere file's headers and total difficulties (bodies, receipts and proofs are
/// passed over) and checks its rules: consecutive blocks linked by parent hash, a section of
/// each kind for every block or none, total difficulties that add up, the accumulator over
/// the pre-merge blocks, and the dynamic block index against the records' offsets.
pub fn check(path: &Path) -> Result<(Summary, Layout), EraError> {
    let mut c = Checker::open(path)?;
    expect_version(&mut c)?;
    let mut headers: Vec<(alloy_consensus::Header, B256, u64)> = Vec::new();
    let mut next = c.header(None)?;
    while let Some(record) = next.filter(|r| r.kind == HEADER) {
        if headers.len() as u64 == BLOCKS_PER_ERA {
            return Err(c.invalid(None, "more than 8,192 blocks in one file"));
        }
        let expected = headers
            .first()
            .map(|(h, ..)| h.number + headers.len() as u64);
        let (header, hash) = read_header(&mut c, &record, expected)?;
        check_link(
            &c,
            &header,
            headers.last().map(|(_, h, _)| (*h, None)),
            None,
        )?;
        headers.push((header, hash, record.offset));
        next = c.header(None)?;
    }
    let Some((first, ..)) = headers.first() else {
        return Err(c.invalid(None, "no header records after the version record"));
    };
    let first = first.number;
    let mut sections = Sections::default();
    let index = loop {
        let Some(record) = next else {
            return Err(c.invalid(None, "the file ends before its block index record"));
        };
        let block = |count: usize| Some(first + count as u64);
        match record.kind {
            BODY => {
                sections.bodies.push(record.offset);
                c.skip(&record, block(sections.bodies.len()))?;
            }
            SLIM_RECEIPTS => {
                sections.receipts.push(record.offset);
                c.skip(&record, block(sections.receipts.len()))?;
            }
            PROOF => {
                sections.proofs.push(record.offset);
                c.skip(&record, block(sections.proofs.len()))?;
            }
            TOTAL_DIFFICULTY => {
                let number = first + sections.total_difficulties.len() as u64;
                let td = c.total_difficulty(&record, number)?;
                sections.total_difficulties.push((record.offset, td));
            }
            ACCUMULATOR => sections.accumulator = Some(c.data(&record, None)?),
            DYNAMIC_INDEX => break (record, c.data(&record, None)?),
            _ => c.skip(&record, None)?,
        }
        next = c.header(None)?;
    };
    if index.0.end() != c.file_len {
        return Err(c.invalid(None, "records after the block index"));
    }
    let summary = check_sections(&c, &headers, &sections)?;
    check_index(&c, &headers, &sections, &index)?;
    let layout = Layout {
        first_header: headers[0].2,
        first_body: sections.bodies[0],
        first_receipts: sections.receipts.first().copied(),
    };
    Ok((summary, layout))
}

/// Each optional section holds a record for every block or none; total difficulties add up
/// and the accumulator covers the blocks before the merge.
fn check_sections(
    c: &Checker<'_>,
    headers: &[(alloy_consensus::Header, B256, u64)],
    sections: &Sections,
) -> Result<Summary, EraError> {
    let count = headers.len();
    let counts = [
        ("body", sections.bodies.len(), false),
        ("receipts", sections.receipts.len(), true),
        ("proof", sections.proofs.len(), true),
        ("total difficulty", sections.total_difficulties.len(), true),
    ];
    for (what, found, optional) in counts {
        if found != count && !(optional && found == 0) {
            return Err(c.invalid(None, format!("{count} headers but {found} {what} records")));
        }
    }
    let tds: Option<Vec<U256>> = (!sections.total_difficulties.is_empty()).then(|| {
        sections
            .total_difficulties
            .iter()
            .map(|(_, td)| *td)
            .collect()
    });
    if let Some(tds) = &tds {
        for i in 1..count {
            let parent = Some((headers[i - 1].1, Some(tds[i - 1])));
            check_link(c, &headers[i].0, parent, Some(tds[i]))?;
        }
    }
    let pre_merge = headers
        .iter()
        .take_while(|(header, ..)| !header.difficulty.is_zero())
        .count();
    match (&sections.accumulator, &tds) {
        (Some(accumulator), Some(tds)) => {
            let records: Vec<(B256, U256)> = headers[..pre_merge]
                .iter()
                .zip(tds)
                .map(|((_, hash, _), td)| (*hash, *td))
                .collect();
            c.check_accumulator(accumulator, &records)?;
        }
        (Some(_), None) => {
            return Err(c.invalid(None, "an accumulator without total difficulties"));
        }
        _ => {}
    }
    let first = &headers[0].0;
    Ok(Summary {
        first: first.number,
        hashes: headers.iter().map(|(_, hash, _)| *hash).collect(),
        total_difficulties: tds,
        first_difficulty: first.difficulty,
        first_parent: first.parent_hash,
    })
}

/// The dynamic block index: the first number, each block's record offsets (header, body,
/// receipts?, total difficulty?, proof?) relative to the index record's start, the number of
/// components and the count.
fn check_index(
    c: &Checker<'_>,
    headers: &[(alloy_consensus::Header, B256, u64)],
    sections: &Sections,
    (record, data): &(e2store::RecordHeader, Vec<u8>),
) -> Result<(), EraError> {
    let word = |i: usize| -> Option<i64> {
        let bytes = data.get(i * 8..i * 8 + 8)?;
        Some(i64::from_le_bytes(bytes.try_into().ok()?))
    };
    let words = data.len() / 8;
    let (Some(start), Some(components), Some(count)) = (
        word(0),
        word(words.wrapping_sub(2)),
        word(words.wrapping_sub(1)),
    ) else {
        return Err(c.invalid(None, "a block index of fewer than 24 bytes"));
    };
    let mut columns: Vec<Vec<u64>> = vec![
        headers.iter().map(|(.., offset)| *offset).collect(),
        sections.bodies.clone(),
    ];
    for optional in [
        sections.receipts.clone(),
        sections
            .total_difficulties
            .iter()
            .map(|(o, _)| *o)
            .collect(),
        sections.proofs.clone(),
    ] {
        if !optional.is_empty() {
            columns.push(optional);
        }
    }
    let n = headers.len();
    let first = headers[0].0.number;
    if data.len() % 8 != 0
        || u64::try_from(start).ok() != Some(first)
        || usize::try_from(count).ok() != Some(n)
        || usize::try_from(components).ok() != Some(columns.len())
        || words != 3 + n * columns.len()
    {
        return Err(c.invalid(
            None,
            format!(
                "the block index names {count} blocks of {components} records from block {start} in {} bytes; the file holds {n} blocks of {} records from block {first}",
                data.len(),
                columns.len()
            ),
        ));
    }
    for block in 0..n {
        for (k, column) in columns.iter().enumerate() {
            let named = word(1 + block * columns.len() + k).unwrap_or_default();
            let named = i128::from(record.offset) + i128::from(named);
            if named != i128::from(column[block]) {
                return Err(c.invalid(
                    Some(first + block as u64),
                    format!(
                        "the block index puts its record {k} at byte offset {named}, it stands at {}",
                        column[block]
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The blocks of an ere file that [`check`] accepted, as whole-block RLP: three cursors walk
/// the header, body and receipts sections in step. Each header must hash as checked, and the
/// slim receipts must have its receipts root.
pub struct EreBlocks<'a> {
    cursors: Option<Cursors<'a>>,
    summary: &'a Summary,
    next: usize,
}

struct Cursors<'a> {
    headers: Checker<'a>,
    bodies: Checker<'a>,
    receipts: Option<Checker<'a>>,
}

impl<'a> EreBlocks<'a> {
    pub fn open(path: &'a Path, summary: &'a Summary, layout: &Layout) -> Result<Self, EraError> {
        let at = |offset: u64| -> Result<Checker<'a>, EraError> {
            let mut checker = Checker::open(path)?;
            checker
                .reader
                .seek_to(offset)
                .map_err(|e| checker.invalid(None, e.to_string()))?;
            Ok(checker)
        };
        Ok(Self {
            cursors: Some(Cursors {
                headers: at(layout.first_header)?,
                bodies: at(layout.first_body)?,
                receipts: layout.first_receipts.map(at).transpose()?,
            }),
            summary,
            next: 0,
        })
    }
}

/// The next record of a section, decompressed.
fn next_part(
    c: &mut Checker<'_>,
    kind: u16,
    what: &str,
    number: u64,
) -> Result<(u64, Vec<u8>), EraError> {
    let record = c.expect(kind, what, Some(number))?;
    let data = c.data(&record, Some(number))?;
    let plain = c.unframe(&data, what, Some(number))?;
    Ok((record.offset, plain))
}

fn read_one(
    cursors: &mut Cursors<'_>,
    number: u64,
    expected_hash: B256,
) -> Result<RawBlock, EraError> {
    let block = Some(number);
    let (offset, header) = next_part(&mut cursors.headers, HEADER, "header", number)?;
    let (_, body) = next_part(&mut cursors.bodies, BODY, "body", number)?;
    let c = &cursors.headers;
    if keccak256(&header) != expected_hash {
        return Err(c.invalid(block, "its header changed since the file was checked"));
    }
    let decoded = super::decode_header(c, &header, number)?;
    if let Some(receipts) = cursors.receipts.as_mut() {
        let (_, list) = next_part(receipts, SLIM_RECEIPTS, "receipts", number)?;
        let root = slim_receipts_root(&list).map_err(|e| receipts.invalid(block, e))?;
        receipts.check_receipts_root(number, root, decoded.receipts_root)?;
    }
    let bytes = super::join_block(&header, &body).map_err(|e| c.invalid(block, e))?;
    Ok(RawBlock { offset, bytes })
}

impl Iterator for EreBlocks<'_> {
    type Item = Result<RawBlock, crate::reader::ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        let hash = *self.summary.hashes.get(self.next)?;
        let number = self.summary.first + self.next as u64;
        let result = read_one(self.cursors.as_mut()?, number, hash);
        self.next += 1;
        if result.is_err() {
            self.cursors = None;
        }
        Some(result.map_err(Into::into))
    }
}

/// One slim receipt: `[tx-type, status or post-state, cumulative gas, logs]`, no bloom.
fn decode_slim(item: &mut &[u8]) -> alloy_rlp::Result<ReceiptEnvelope> {
    let header = alloy_rlp::Header::decode(item)?;
    if !header.list {
        return Err(alloy_rlp::Error::UnexpectedString);
    }
    let (mut fields, rest) = item
        .split_at_checked(header.payload_length)
        .ok_or(alloy_rlp::Error::InputTooShort)?;
    *item = rest;
    let tx_type = TxType::try_from(u8::decode(&mut fields)?)
        .map_err(|_| alloy_rlp::Error::Custom("unknown transaction type"))?;
    let status = Eip658Value::decode(&mut fields)?;
    let cumulative_gas_used = u64::decode(&mut fields)?;
    let logs = Vec::<Log>::decode(&mut fields)?;
    if !fields.is_empty() {
        return Err(alloy_rlp::Error::ListLengthMismatch {
            expected: header.payload_length - fields.len(),
            got: header.payload_length,
        });
    }
    let bloom = logs_bloom(&logs);
    let receipt = Receipt {
        status,
        cumulative_gas_used,
        logs,
    };
    Ok(ReceiptEnvelope::from_typed(
        tx_type,
        ReceiptWithBloom::new(receipt, bloom),
    ))
}

/// The receipts root of a block's slim receipts: each made whole (its bloom from its logs)
/// and committed to in its consensus encoding.
pub fn slim_receipts_root(list: &[u8]) -> Result<B256, String> {
    let mut rest = list;
    let header = alloy_rlp::Header::decode(&mut rest).map_err(|e| format!("receipts: {e}"))?;
    if !header.list || rest.len() != header.payload_length {
        return Err("receipts: not one RLP list".into());
    }
    let mut encoded = Vec::new();
    while !rest.is_empty() {
        let receipt = decode_slim(&mut rest).map_err(|e| format!("receipts: {e}"))?;
        encoded.push(receipt.encoded_2718());
    }
    Ok(alloy_trie::root::ordered_trie_root_with_encoder(
        &encoded,
        |item, out| out.extend_from_slice(item),
    ))
}

/// A receipt as an ere file holds it: `[tx-type, status or post-state, cumulative gas, logs]`.
pub fn encode_slim(
    tx_type: u8,
    status: Eip658Value,
    cumulative_gas_used: u64,
    logs: &[Log],
    out: &mut Vec<u8>,
) {
    let payload = tx_type.length()
        + status.length()
        + cumulative_gas_used.length()
        + alloy_rlp::list_length(logs);
    alloy_rlp::Header {
        list: true,
        payload_length: payload,
    }
    .encode(out);
    tx_type.encode(out);
    status.encode(out);
    cumulative_gas_used.encode(out);
    alloy_rlp::encode_list(logs, out);
}

/// One block as an ere file holds it, uncompressed.
pub struct EreBlock {
    pub header: Vec<u8>,
    pub body: Vec<u8>,
    pub slim_receipts: Vec<u8>,
    pub difficulty: U256,
    pub total_difficulty: U256,
}

/// Writes blocks `first..=last`, which `block` gives one at a time (once per section), as one
/// ere file in reth's layout: before the merge with total difficulties and the accumulator of
/// the pre-merge blocks, after it without. Returns the last block's hash, which names the file.
pub fn write(
    path: &Path,
    first: u64,
    last: u64,
    mut block: impl FnMut(u64) -> Result<EreBlock, EraError>,
) -> Result<B256, EraError> {
    let fail = |source: std::io::Error| EraError::Write {
        path: path.display().to_string(),
        source,
    };
    let frame = |data: &[u8]| e2store::snappy_frame(data).map_err(fail);
    let file = File::create(path).map_err(fail)?;
    let mut out = RecordWriter::new(BufWriter::with_capacity(1 << 20, file));
    out.write(e2store::VERSION, &[]).map_err(fail)?;
    let count = (last - first + 1) as usize;
    let pre_merge = !block(first)?.difficulty.is_zero();
    let components = if pre_merge { 4 } else { 3 };
    let mut offsets = vec![0u64; count * components];
    let mut records = Vec::new();
    let mut last_hash = B256::ZERO;
    for (i, number) in (first..=last).enumerate() {
        let b = block(number)?;
        last_hash = keccak256(&b.header);
        if !b.difficulty.is_zero() {
            records.push((last_hash, b.total_difficulty));
        }
        offsets[i * components] = out.write(HEADER, &frame(&b.header)?).map_err(fail)?;
    }
    for (i, number) in (first..=last).enumerate() {
        let body = frame(&block(number)?.body)?;
        offsets[i * components + 1] = out.write(BODY, &body).map_err(fail)?;
    }
    for (i, number) in (first..=last).enumerate() {
        let receipts = frame(&block(number)?.slim_receipts)?;
        offsets[i * components + 2] = out.write(SLIM_RECEIPTS, &receipts).map_err(fail)?;
    }
    if pre_merge {
        for (i, number) in (first..=last).enumerate() {
            let td = block(number)?.total_difficulty.to_le_bytes::<32>();
            offsets[i * components + 3] = out.write(TOTAL_DIFFICULTY, &td).map_err(fail)?;
        }
        let root = accumulator_root(&records).map_err(|e| EraError::invalid(path, None, e))?;
        out.write(ACCUMULATOR, root.as_slice()).map_err(fail)?;
    }
    let index_at = out.position() as i64;
    let mut index = Vec::with_capacity(24 + 8 * offsets.len());
    index.extend_from_slice(&first.to_le_bytes());
    for offset in &offsets {
        index.extend_from_slice(&(*offset as i64 - index_at).to_le_bytes());
    }
    index.extend_from_slice(&(components as u64).to_le_bytes());
    index.extend_from_slice(&(count as u64).to_le_bytes());
    out.write(DYNAMIC_INDEX, &index).map_err(fail)?;
    out.finish().map_err(fail)?;
    Ok(last_hash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{Address, Bytes};

    /// The same receipts, slim (no bloom, the type a plain field) and as era1 holds them (with
    /// blooms, typed ones as strings), have one root.
    #[test]
    fn slim_receipts_have_the_root_of_the_full_ones() {
        let log = Log::new_unchecked(
            Address::repeat_byte(7),
            vec![B256::repeat_byte(1)],
            Bytes::from_static(b"x"),
        );
        let receipts = [
            (
                0u8,
                Eip658Value::PostState(B256::repeat_byte(9)),
                21_000u64,
                vec![],
            ),
            (2, Eip658Value::Eip658(true), 60_000, vec![log.clone()]),
            (1, Eip658Value::Eip658(false), 90_000, vec![log]),
        ];
        let mut items = Vec::new();
        let mut full = Vec::new();
        for (tx_type, status, gas, logs) in &receipts {
            encode_slim(*tx_type, *status, *gas, logs, &mut items);
            let receipt = Receipt {
                status: *status,
                cumulative_gas_used: *gas,
                logs: logs.clone(),
            };
            full.push(ReceiptEnvelope::from_typed(
                TxType::try_from(*tx_type).unwrap(),
                ReceiptWithBloom::new(receipt, logs_bloom(logs)),
            ));
        }
        let mut slim = Vec::new();
        alloy_rlp::Header {
            list: true,
            payload_length: items.len(),
        }
        .encode(&mut slim);
        slim.extend_from_slice(&items);
        let era1_root = super::super::receipts_root(&alloy_rlp::encode(&full)).unwrap();
        assert_eq!(slim_receipts_root(&slim).unwrap(), era1_root);
        // The legacy type is the RLP of 0, not a raw zero byte.
        assert_eq!(slim[slim.len() - items.len() + 1], 0x80);
        let mut changed = slim.clone();
        let last = changed.len() - 1;
        changed[last] ^= 1;
        assert_ne!(slim_receipts_root(&changed).unwrap(), era1_root);
    }
}
