//! `quarry export-era`: the stored history written as era1 files, one era (8,192 blocks) a
//! file, from one read snapshot, each file written under a temporary name and renamed once
//! whole, then a `checksums.txt` of the files written.

use super::{EraError, checksums, era1, split_block};
use alloy_primitives::{U256, logs_bloom};
use quarry_storage::{Database, ReadTx};
use std::path::{Path, PathBuf};

/// Which eras to write, and where.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    pub out: PathBuf,
    pub from_era: u64,
    /// The last era to write; `None`: the era of the last stored pre-merge block.
    pub to_era: Option<u64>,
}

/// A written file and the blocks it holds.
#[derive(Debug, Clone)]
pub struct Exported {
    pub path: PathBuf,
    pub first: u64,
    pub last: u64,
}

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Era(#[from] EraError),
    #[error(transparent)]
    Storage(#[from] quarry_storage::Error),
    #[error(
        "era {era} starts at block {first}, but the datadir's head is block {head}: those blocks are not stored"
    )]
    NotStored { era: u64, first: u64, head: u64 },
    #[error(
        "block {block} is after the merge, and era1 holds only pre-merge blocks: export it with --format ere"
    )]
    PostMerge { block: u64 },
    #[error(
        "the datadir holds no pre-merge block after block 0 to write as era1: use --format ere"
    )]
    NothingPreMerge,
    #[error("--from-era {from} is after --to-era {to}")]
    Range { from: u64, to: u64 },
}

/// The name the chain's files start with: the public network's name, else `chain<id>`.
pub fn network_name(db: &Database, reader: &ReadTx) -> Result<String, ExportError> {
    if let Some(name) = crate::stored_network(db).map_err(|e| match e {
        crate::Error::Storage(e) => ExportError::Storage(e),
        other => ExportError::Storage(quarry_storage::Error::Corrupt(other.to_string())),
    })? {
        return Ok(name);
    }
    let spec = quarry_executor::ChainSpec::stored(reader)
        .map_err(|e| quarry_storage::Error::Corrupt(e.to_string()))?;
    Ok(format!("chain{}", spec.map_or(0, |spec| spec.chain_id)))
}

/// Writes eras `from_era..=to_era` of the stored chain as era1 files in `options.out`.
pub fn export_era1(db: &Database, options: &ExportOptions) -> Result<Vec<Exported>, ExportError> {
    let reader = db.reader()?;
    let (head, _) = reader
        .head()?
        .ok_or_else(|| quarry_storage::Error::Corrupt("no head".into()))?;
    let network = network_name(db, &reader)?;
    let last_pre_merge = last_pre_merge(&reader, head)?;
    let to_era = match options.to_era {
        Some(era) => era,
        None => last_pre_merge.ok_or(ExportError::NothingPreMerge)? / era1::BLOCKS_PER_ERA,
    };
    if options.from_era > to_era {
        return Err(ExportError::Range {
            from: options.from_era,
            to: to_era,
        });
    }
    std::fs::create_dir_all(&options.out).map_err(|source| EraError::Write {
        path: options.out.display().to_string(),
        source,
    })?;
    let mut written = Vec::new();
    for era in options.from_era..=to_era {
        let first = era * era1::BLOCKS_PER_ERA;
        if first > head {
            return Err(ExportError::NotStored { era, first, head });
        }
        let last = (first + era1::BLOCKS_PER_ERA - 1).min(head);
        // Only the default range stops at the merge; a range asked for must be all pre-merge.
        let last = match (options.to_era, last_pre_merge) {
            (None, Some(pre)) => last.min(pre),
            _ => last,
        };
        written.push(write_era(
            &reader,
            &network,
            era,
            first,
            last,
            &options.out,
        )?);
    }
    let files: Vec<PathBuf> = written.iter().map(|e| e.path.clone()).collect();
    let list = checksums::folder_list(&files)?;
    write_whole(&options.out.join("checksums.txt"), list.as_bytes())?;
    Ok(written)
}

/// The last stored block with a difficulty (proof of work), by binary search: difficulty is
/// zero from the merge on.
fn last_pre_merge(reader: &ReadTx, head: u64) -> Result<Option<u64>, ExportError> {
    let pow = |number: u64| -> Result<bool, ExportError> {
        let header = reader
            .header(number)?
            .ok_or_else(|| quarry_storage::Error::Corrupt(format!("no header {number}")))?;
        Ok(!header.difficulty.is_zero())
    };
    if head == 0 || !pow(1)? {
        return Ok(None);
    }
    let (mut low, mut high) = (1, head);
    while low < high {
        let mid = low + (high - low).div_ceil(2);
        if pow(mid)? {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    Ok(Some(low))
}

fn write_era(
    reader: &ReadTx,
    network: &str,
    era: u64,
    first: u64,
    last: u64,
    out: &Path,
) -> Result<Exported, ExportError> {
    let partial = out.join(format!(".{network}-{era:05}.era1.partial"));
    let mut failure = None;
    let blocks = (first..=last).map_while(|number| match block_records(reader, number) {
        Ok(records) => Some(Ok(records)),
        Err(err) => {
            failure = Some(err);
            None
        }
    });
    let root = era1::write(&partial, first, blocks);
    if let Some(err) = failure {
        let _ = std::fs::remove_file(&partial);
        return Err(err);
    }
    let root = root.inspect_err(|_| {
        let _ = std::fs::remove_file(&partial);
    })?;
    let name = format!(
        "{network}-{era:05}-{}.era1",
        alloy_primitives::hex::encode(&root[..4])
    );
    let path = out.join(name);
    std::fs::rename(&partial, &path).map_err(|source| EraError::Write {
        path: path.display().to_string(),
        source,
    })?;
    Ok(Exported { path, first, last })
}

type Records = (Vec<u8>, Vec<u8>, Vec<u8>, U256);

/// One block's era1 records, uncompressed: header RLP, body RLP, receipts RLP (geth's
/// network encoding, with blooms), total difficulty.
fn block_records(reader: &ReadTx, number: u64) -> Result<Records, ExportError> {
    let missing =
        |what: &str| quarry_storage::Error::Corrupt(format!("no {what} for block {number}"));
    let header = reader.header(number)?.ok_or_else(|| missing("header"))?;
    if header.difficulty.is_zero() && number > 0 {
        return Err(ExportError::PostMerge { block: number });
    }
    let body = reader.body(number)?.ok_or_else(|| missing("body"))?;
    let receipts = reader
        .receipts(number)?
        .ok_or_else(|| missing("receipts"))?;
    let total_difficulty = reader
        .total_difficulty(number)?
        .ok_or_else(|| missing("total difficulty"))?;
    let block = alloy_rlp::encode(alloy_consensus::Block::new(header, body));
    let (header, body) =
        split_block(&block).map_err(|e| quarry_storage::Error::Corrupt(e.to_string()))?;
    let receipts = receipts
        .iter()
        .map(|receipt| quarry_executor::consensus_receipt(receipt, logs_bloom(&receipt.logs)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((header, body, alloy_rlp::encode(&receipts), total_difficulty))
}

/// Writes a small file whole or not at all: a temporary name, then a rename.
fn write_whole(path: &Path, data: &[u8]) -> Result<(), EraError> {
    let fail = |source| EraError::Write {
        path: path.display().to_string(),
        source,
    };
    let partial = path.with_extension("partial");
    std::fs::write(&partial, data).map_err(fail)?;
    std::fs::rename(&partial, path).map_err(fail)
}
