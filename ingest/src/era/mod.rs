//! History files in and out: era1 (pre-merge) and ere (any era) files read into the import
//! pipeline and written from a datadir, the e2store container they share, and the checksum
//! lists that vouch for them. A file is known by its content (the e2store version record and
//! the records after it), not its name.

mod checker;
pub mod checksums;
pub mod download;
pub mod e2store;
pub mod era1;
pub mod ere;
pub mod error;
pub mod export;
mod import;
pub mod kinds;

pub use checker::{BLOCKS_PER_ERA, Summary, accumulator_root};
pub use checksums::Checksums;
pub use error::EraError;

use checker::{Checker, check_link, decode_header, expect_version, read_header};
pub use import::{EraFiles, Input, era_files};

use alloy_primitives::B256;
use std::{io::Read, path::Path};

/// Whether the file at `path` is an e2store file (era1 or ere): it opens with the version
/// record. Unreadable files are not, and are then reported by whoever reads them next.
pub fn is_e2store(path: &Path) -> bool {
    let mut head = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut head))
        .is_ok_and(|()| head == e2store::VERSION_HEADER)
}

/// The two formats of execution history files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Pre-merge blocks, records interleaved block by block, full receipts.
    Era1,
    /// Any blocks, records sectioned by type, slim receipts (reth's `.ere`).
    Ere,
}

/// Tells era1 from ere by the records after the version: era1's first header is followed by
/// its body and full receipts, ere's headers by more headers (or, for one block, its body and
/// slim receipts or the dynamic index).
pub fn format_of(path: &Path) -> Result<Format, EraError> {
    let mut c = Checker::open(path)?;
    expect_version(&mut c)?;
    let mut kinds = Vec::new();
    while kinds.len() < 4 {
        let Some(record) = c.header(None)? else {
            break;
        };
        kinds.push(record.kind);
        c.skip(&record, None)?;
        match kinds.as_slice() {
            [_, _, kinds::RECEIPTS] | [_, _, _, kinds::TOTAL_DIFFICULTY] => {
                return Ok(Format::Era1);
            }
            [kinds::HEADER, kinds::HEADER]
            | [
                _,
                _,
                kinds::SLIM_RECEIPTS | kinds::DYNAMIC_INDEX | kinds::PROOF,
            ] => {
                return Ok(Format::Ere);
            }
            _ => {}
        }
    }
    match kinds.first() {
        Some(&kinds::HEADER) => Err(EraError::invalid(
            path,
            None,
            "neither era1's nor ere's records follow its first header",
        )),
        Some(&kind) => Err(EraError::invalid(
            path,
            None,
            format!(
                "expected a header record (type 0x0003) after the version record, found type 0x{kind:04x}: not an execution history file"
            ),
        )),
        None => Err(EraError::invalid(
            path,
            None,
            "no records after the version record",
        )),
    }
}

/// The receipts root of a receipts record's RLP list as geth writes it: a legacy receipt is
/// an RLP list, a typed one an RLP string holding its type byte and payload (EIP-2718), and
/// the trie commits to each one's consensus encoding.
pub fn receipts_root(list: &[u8]) -> Result<B256, String> {
    let mut rest = list;
    let header = alloy_rlp::Header::decode(&mut rest).map_err(|e| format!("receipts: {e}"))?;
    if !header.list || rest.len() != header.payload_length {
        return Err("receipts: not one RLP list".into());
    }
    let mut items = Vec::new();
    while !rest.is_empty() {
        let start = rest;
        let item = alloy_rlp::Header::decode(&mut rest).map_err(|e| format!("receipts: {e}"))?;
        let header_len = start.len() - rest.len();
        let (payload, after) = rest
            .split_at_checked(item.payload_length)
            .ok_or("receipts: an item runs past the list")?;
        items.push(if item.list {
            &start[..header_len + item.payload_length]
        } else {
            payload
        });
        rest = after;
    }
    Ok(alloy_trie::root::ordered_trie_root_with_encoder(
        &items,
        |item, out| out.extend_from_slice(item),
    ))
}

/// A whole block's RLP from its header's RLP and its body's (`[transactions, uncles, ...]`):
/// the block list holds the header, then the body's fields.
pub fn join_block(header: &[u8], body: &[u8]) -> Result<Vec<u8>, String> {
    let mut rest = body;
    let list = alloy_rlp::Header::decode(&mut rest).map_err(|e| format!("body: {e}"))?;
    if !list.list || rest.len() != list.payload_length {
        return Err("body: not one RLP list".into());
    }
    let block = alloy_rlp::Header {
        list: true,
        payload_length: header.len() + rest.len(),
    };
    let mut out = Vec::with_capacity(block.length_with_payload());
    block.encode(&mut out);
    out.extend_from_slice(header);
    out.extend_from_slice(rest);
    Ok(out)
}

/// The body's RLP (`[transactions, uncles, ...]`) of a whole block's RLP: what follows the
/// header in the block list.
pub fn split_block(block: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut rest = block;
    let list = alloy_rlp::Header::decode(&mut rest).map_err(|e| format!("block: {e}"))?;
    if !list.list || rest.len() != list.payload_length {
        return Err("block: not one RLP list".into());
    }
    let start = rest;
    let header = alloy_rlp::Header::decode(&mut rest).map_err(|e| format!("header: {e}"))?;
    let header_len = start.len() - rest.len() + header.payload_length;
    let (header_rlp, fields) = start
        .split_at_checked(header_len)
        .ok_or("block: header runs past the block")?;
    let body = alloy_rlp::Header {
        list: true,
        payload_length: fields.len(),
    };
    let mut body_rlp = Vec::with_capacity(body.length_with_payload());
    body.encode(&mut body_rlp);
    body_rlp.extend_from_slice(fields);
    Ok((header_rlp.to_vec(), body_rlp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_splits_and_joins_back() {
        let header = alloy_consensus::Header {
            number: 7,
            ..Default::default()
        };
        let block = alloy_consensus::Block::<alloy_consensus::TxEnvelope>::new(
            header.clone(),
            alloy_consensus::BlockBody {
                transactions: vec![],
                ommers: vec![header],
                withdrawals: None,
            },
        );
        let rlp = alloy_rlp::encode(&block);
        let (header_rlp, body_rlp) = split_block(&rlp).unwrap();
        assert_eq!(join_block(&header_rlp, &body_rlp).unwrap(), rlp);
        assert!(join_block(&header_rlp, &[0x80]).is_err());
    }

    #[test]
    fn an_empty_receipts_list_has_the_empty_root() {
        assert_eq!(receipts_root(&[0xc0]).unwrap(), alloy_trie::EMPTY_ROOT_HASH);
        assert!(receipts_root(&[0xc2, 0x01]).is_err());
    }
}
