//! What era1 and ere share when they are read: an open file whose problems are reported with
//! its name and the block, the summary a checking pass leaves for the import, and the
//! accumulator (the SSZ hash tree root of the epoch's block hashes and total difficulties).

use super::{
    EraError,
    e2store::{RecordHeader, RecordReader},
};
use alloy_consensus::Header;
use alloy_primitives::{B256, U256};
use alloy_rlp::Decodable;
use std::{fs::File, io::BufReader, path::Path};

/// Blocks in one era (and at most in one file).
pub const BLOCKS_PER_ERA: u64 = 8192;

/// What the checking pass learned of an era file: its blocks' hashes, their total
/// difficulties where the file carries them, and what the first block must continue.
#[derive(Debug, Clone)]
pub struct Summary {
    pub first: u64,
    pub hashes: Vec<B256>,
    /// Each block's total difficulty: era1 files carry them, ere files before the merge.
    pub total_difficulties: Option<Vec<U256>>,
    pub first_difficulty: U256,
    pub first_parent: B256,
}

impl Summary {
    pub fn last(&self) -> u64 {
        self.first + self.hashes.len() as u64 - 1
    }
}

/// The SSZ hash tree root of the epoch's `List[HeaderRecord, 8192]`, where a `HeaderRecord`
/// is the container (block_hash: Bytes32, total_difficulty: uint256): sigp's tree_hash
/// merkleizes it (the record root is the hash of its two chunks, the total difficulty's
/// little-endian). Not written out with ethereum_ssz's derive: the list is only ever hashed.
pub fn accumulator_root(records: &[(B256, U256)]) -> Result<B256, String> {
    if records.len() as u64 > BLOCKS_PER_ERA {
        return Err(format!(
            "accumulator: {} records, more than an era's 8,192",
            records.len()
        ));
    }
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

/// One open era file and where the problems it finds are reported.
pub struct Checker<'a> {
    pub path: &'a Path,
    pub reader: RecordReader<BufReader<File>>,
    pub file_len: u64,
    unframer: super::e2store::Unframer,
}

impl<'a> Checker<'a> {
    pub fn open(path: &'a Path) -> Result<Self, EraError> {
        let open_error = |source| EraError::Open {
            path: path.display().to_string(),
            source,
        };
        let file = File::open(path).map_err(open_error)?;
        let file_len = file.metadata().map_err(open_error)?.len();
        Ok(Self {
            path,
            reader: RecordReader::new(BufReader::with_capacity(256 * 1024, file)),
            file_len,
            unframer: Default::default(),
        })
    }

    /// A snappy-framed record's data, decompressed; `what` names the record in an error.
    pub fn unframe(
        &mut self,
        data: &[u8],
        what: &str,
        block: Option<u64>,
    ) -> Result<Vec<u8>, EraError> {
        self.unframer
            .unframe(data)
            .map_err(|e| self.invalid(block, format!("{what} record: {e}")))
    }

    pub fn invalid(&self, block: Option<u64>, reason: impl Into<String>) -> EraError {
        EraError::invalid(self.path, block, reason)
    }

    pub fn header(&mut self, block: Option<u64>) -> Result<Option<RecordHeader>, EraError> {
        self.reader
            .next_header()
            .map_err(|e| self.invalid(block, e.to_string()))
    }

    pub fn data(&mut self, record: &RecordHeader, block: Option<u64>) -> Result<Vec<u8>, EraError> {
        self.reader
            .read_data(record)
            .map_err(|e| self.invalid(block, e.to_string()))
    }

    pub fn skip(&mut self, record: &RecordHeader, block: Option<u64>) -> Result<(), EraError> {
        let file_len = self.file_len;
        self.reader
            .skip_data(record, file_len)
            .map_err(|e| self.invalid(block, e.to_string()))
    }

    /// The next record, which must be of type `kind`.
    pub fn expect(
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

    /// The file's accumulator record must be the root of `records`.
    pub fn check_accumulator(
        &self,
        accumulator: &[u8],
        records: &[(B256, U256)],
    ) -> Result<(), EraError> {
        let root = accumulator_root(records).map_err(|e| self.invalid(None, e))?;
        if accumulator != root.as_slice() {
            return Err(self.invalid(
                None,
                format!(
                    "the accumulator record is 0x{}, the root of the file's headers and total difficulties is {root}",
                    alloy_primitives::hex::encode(accumulator)
                ),
            ));
        }
        Ok(())
    }

    /// A block's receipts must have the root its header commits to; execution then compares
    /// that root with the receipts it produces.
    pub fn check_receipts_root(
        &self,
        number: u64,
        found: B256,
        header: B256,
    ) -> Result<(), EraError> {
        if found != header {
            return Err(self.invalid(
                Some(number),
                format!(
                    "its receipts record has root {found}, the header's receipts root is {header}"
                ),
            ));
        }
        Ok(())
    }

    /// A total difficulty record: 32 bytes, little-endian.
    pub fn total_difficulty(
        &mut self,
        record: &RecordHeader,
        number: u64,
    ) -> Result<U256, EraError> {
        let td = self.data(record, Some(number))?;
        if td.len() != 32 {
            return Err(self.invalid(
                Some(number),
                format!("a total difficulty of {} bytes, not 32", td.len()),
            ));
        }
        Ok(U256::from_le_slice(&td))
    }
}

/// A header record's RLP, decoded whole.
pub fn decode_header(checker: &Checker<'_>, rlp: &[u8], block: u64) -> Result<Header, EraError> {
    let mut slice = rlp;
    let header = Header::decode(&mut slice)
        .map_err(|e| checker.invalid(Some(block), format!("header: {e}")))?;
    if !slice.is_empty() {
        return Err(checker.invalid(Some(block), "header: bytes after its RLP"));
    }
    Ok(header)
}

/// Each block's parent hash must be the block before's hash, and its total difficulty the one
/// before plus its own difficulty.
pub fn check_link(
    checker: &Checker<'_>,
    header: &Header,
    parent: Option<(B256, Option<U256>)>,
    total_difficulty: Option<U256>,
) -> Result<(), EraError> {
    let Some((parent_hash, parent_td)) = parent else {
        return Ok(());
    };
    let number = header.number;
    if header.parent_hash != parent_hash {
        return Err(checker.invalid(
            Some(number),
            format!(
                "its parent hash {} is not block {}'s hash {parent_hash}",
                header.parent_hash,
                number - 1
            ),
        ));
    }
    if let (Some(parent_td), Some(td)) = (parent_td, total_difficulty)
        && parent_td.checked_add(header.difficulty) != Some(td)
    {
        return Err(checker.invalid(
            Some(number),
            format!(
                "total difficulty {td} is not block {}'s {parent_td} plus the block's difficulty {}",
                number - 1,
                header.difficulty
            ),
        ));
    }
    Ok(())
}

/// The version record that opens an era file.
pub fn expect_version(checker: &mut Checker<'_>) -> Result<(), EraError> {
    match checker.header(None)? {
        Some(record) if record.kind == super::e2store::VERSION && record.len == 0 => Ok(()),
        _ => Err(EraError::NotEra(checker.path.display().to_string())),
    }
}

/// A header record, which must hold block `expected` (any block for the file's first):
/// the header and its hash.
pub fn read_header(
    checker: &mut Checker<'_>,
    record: &RecordHeader,
    expected: Option<u64>,
) -> Result<(Header, B256), EraError> {
    if record.kind != super::kinds::HEADER {
        return Err(checker.invalid(
            expected,
            format!(
                "expected a header record (type 0x0003) at byte offset {}, found type 0x{:04x}",
                record.offset, record.kind
            ),
        ));
    }
    let compressed = checker.data(record, expected)?;
    let rlp = checker.unframe(&compressed, "header", expected)?;
    let header = decode_header(checker, &rlp, expected.unwrap_or_default())?;
    if let Some(expected) = expected
        && header.number != expected
    {
        return Err(checker.invalid(
            Some(header.number),
            format!(
                "expected block {expected} here, found block {}",
                header.number
            ),
        ));
    }
    Ok((header, alloy_primitives::keccak256(&rlp)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::b256;

    /// Known answers of `hash_tree_root(List[HeaderRecord, 8192])` (the era1 spec's
    /// accumulator, as reth's era crate tests it), and mainnet era 0's published root.
    #[test]
    fn accumulator_roots_are_the_known_answers() {
        assert_eq!(
            accumulator_root(&[]).unwrap(),
            b256!("0x4a8c3a07c8d23adc5bac61157555c3c784d53d9bc110c1370809bd23cd93777d")
        );
        assert_eq!(
            accumulator_root(&[(B256::ZERO, U256::ZERO)]).unwrap(),
            b256!("0x81fd641249670887a731386e756a7a1538dc781b1b0bf016889045d350812817")
        );
        assert_eq!(
            accumulator_root(&[(B256::repeat_byte(1), U256::from(100))]).unwrap(),
            b256!("0xada35c48d81117f4fd588554cd4c4752356336e84cb41106dea1ceb4cfac8799")
        );
        let too_many = vec![(B256::ZERO, U256::ZERO); BLOCKS_PER_ERA as usize + 1];
        assert!(accumulator_root(&too_many).is_err());
    }
}
