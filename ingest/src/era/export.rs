//! `quarry export-era`: the stored history written as era1 or ere files, one era (8,192
//! blocks) a file, from one read snapshot, each file written under a temporary name and
//! renamed once whole, then a `checksums.txt` of the files written.

use super::{BLOCKS_PER_ERA, EraError, Format, checksums, era1, ere, split_block};
use alloy_consensus::Eip658Value;
use alloy_primitives::{U256, logs_bloom};
use quarry_storage::{Database, ReadTx};
use std::path::{Path, PathBuf};

/// Which eras to write, and where.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    pub out: PathBuf,
    pub format: Format,
    pub from_era: u64,
    /// The last era to write; `None`: the era of the head (for era1, of the last stored
    /// pre-merge block).
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
    Era(Box<EraError>),
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

impl From<EraError> for ExportError {
    fn from(err: EraError) -> Self {
        ExportError::Era(Box::new(err))
    }
}

/// The name the chain's files start with: the public network's name, else its chain id (as
/// reth names an unnamed chain).
pub fn network_name(reader: &ReadTx) -> Result<String, ExportError> {
    if let Some(name) = crate::stored_network(reader)? {
        return Ok(name);
    }
    let spec = quarry_executor::ChainSpec::stored(reader)
        .map_err(|e| quarry_storage::Error::Corrupt(e.to_string()))?;
    Ok(spec.map_or(0, |spec| spec.chain_id).to_string())
}

/// Writes eras `from_era..=to_era` of the stored chain in `options.out`.
pub fn export(db: &Database, options: &ExportOptions) -> Result<Vec<Exported>, ExportError> {
    let reader = db.reader()?;
    let (head, _) = reader
        .head()?
        .ok_or_else(|| quarry_storage::Error::Corrupt("no head".into()))?;
    let network = network_name(&reader)?;
    // era1 holds pre-merge blocks only: by default it ends with the last of them.
    let end = match options.format {
        Format::Era1 => last_pre_merge(&reader, head)?.ok_or(ExportError::NothingPreMerge)?,
        Format::Ere => head,
    };
    let to_era = options.to_era.unwrap_or(end / BLOCKS_PER_ERA);
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
        let first = era * BLOCKS_PER_ERA;
        if first > head {
            return Err(ExportError::NotStored { era, first, head });
        }
        let last = (first + BLOCKS_PER_ERA - 1).min(head);
        // Only the default range stops at the merge; a range asked for must be all pre-merge.
        let last = if options.to_era.is_none() {
            last.min(end)
        } else {
            last
        };
        let file = EraFile {
            network: &network,
            era,
            first,
            last,
            out: &options.out,
        };
        written.push(match options.format {
            Format::Era1 => write_era1(&reader, &file)?,
            Format::Ere => write_ere(&reader, &file)?,
        });
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

/// One file to write: its era and blocks, and where.
struct EraFile<'a> {
    network: &'a str,
    era: u64,
    first: u64,
    last: u64,
    out: &'a Path,
}

impl EraFile<'_> {
    fn partial(&self, extension: &str) -> PathBuf {
        self.out.join(format!(
            ".{}-{:05}.{extension}.partial",
            self.network, self.era
        ))
    }

    /// Moves the whole file under its name, or removes what was written of it.
    /// Moves the whole file under its name (from what the writer returned), or removes what
    /// was written of it when reading the datadir (`failure`) or writing failed.
    fn finish<T>(
        &self,
        partial: &Path,
        failure: Option<ExportError>,
        written: Result<T, EraError>,
        name: impl FnOnce(T) -> String,
    ) -> Result<Exported, ExportError> {
        let named = match (failure, written) {
            (Some(err), _) => Err(err),
            (None, Err(err)) => Err(err.into()),
            (None, Ok(written)) => Ok(name(written)),
        };
        let name = named.inspect_err(|_| {
            let _ = std::fs::remove_file(partial);
        })?;
        let path = self.out.join(name);
        std::fs::rename(partial, &path).map_err(|source| EraError::Write {
            path: path.display().to_string(),
            source,
        })?;
        Ok(Exported {
            path,
            first: self.first,
            last: self.last,
        })
    }
}

/// `<network>-<era>-<first 4 bytes of the accumulator root>.era1`.
fn write_era1(reader: &ReadTx, file: &EraFile<'_>) -> Result<Exported, ExportError> {
    let partial = file.partial("era1");
    let mut failure = None;
    let blocks = (file.first..=file.last).map_while(|number| {
        match stored_block(reader, number).and_then(StoredBlock::era1_records) {
            Ok(records) => Some(Ok(records)),
            Err(err) => {
                failure = Some(err);
                None
            }
        }
    });
    let written = era1::write(&partial, file.first, blocks);
    file.finish(&partial, failure, written, |root| {
        let hash = alloy_primitives::hex::encode(&root[..4]);
        format!("{}-{:05}-{hash}.era1", file.network, file.era)
    })
}

/// reth's name: `<network>-<era>-<first 4 bytes of the last block's hash>-noproofs.ere`.
fn write_ere(reader: &ReadTx, file: &EraFile<'_>) -> Result<Exported, ExportError> {
    let partial = file.partial("ere");
    let mut failure = None;
    let written = ere::write(&partial, file.first, file.last, |number| {
        stored_block(reader, number)
            .map(StoredBlock::ere_block)
            .map_err(|err| {
                let message = err.to_string();
                failure = Some(err);
                EraError::invalid(&partial, Some(number), message)
            })
    });
    file.finish(&partial, failure, written, |last_hash| {
        let hash = alloy_primitives::hex::encode(&last_hash[..4]);
        format!("{}-{:05}-{hash}-noproofs.ere", file.network, file.era)
    })
}

/// One stored block as history files take it: header and body RLP, receipts, difficulties.
struct StoredBlock {
    number: u64,
    header: Vec<u8>,
    body: Vec<u8>,
    receipts: Vec<quarry_storage::StoredReceipt>,
    difficulty: U256,
    total_difficulty: U256,
}

fn stored_block(reader: &ReadTx, number: u64) -> Result<StoredBlock, ExportError> {
    let missing =
        |what: &str| quarry_storage::Error::Corrupt(format!("no {what} for block {number}"));
    let header = reader.header(number)?.ok_or_else(|| missing("header"))?;
    let difficulty = header.difficulty;
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
    Ok(StoredBlock {
        number,
        header,
        body,
        receipts,
        difficulty,
        total_difficulty,
    })
}

/// One block's era1 records, uncompressed: header RLP, body RLP, receipts RLP (geth's
/// network encoding, with blooms), total difficulty.
type Records = (Vec<u8>, Vec<u8>, Vec<u8>, U256);

impl StoredBlock {
    fn era1_records(self) -> Result<Records, ExportError> {
        if self.difficulty.is_zero() && self.number > 0 {
            return Err(ExportError::PostMerge { block: self.number });
        }
        let receipts = self
            .receipts
            .iter()
            .map(|receipt| quarry_executor::consensus_receipt(receipt, logs_bloom(&receipt.logs)))
            .collect::<Result<Vec<_>, _>>()?;
        let receipts = alloy_rlp::encode(&receipts);
        Ok((self.header, self.body, receipts, self.total_difficulty))
    }

    /// The slim receipts: `[type, status or post-state, cumulative gas, logs]` each, no bloom.
    fn ere_block(self) -> ere::EreBlock {
        let mut items = Vec::new();
        for receipt in &self.receipts {
            let status = match receipt.outcome {
                quarry_storage::ReceiptOutcome::PostState(root) => Eip658Value::PostState(root),
                quarry_storage::ReceiptOutcome::Status(ok) => Eip658Value::Eip658(ok),
            };
            ere::encode_slim(
                receipt.tx_type,
                status,
                receipt.cumulative_gas_used,
                &receipt.logs,
                &mut items,
            );
        }
        let mut slim_receipts = Vec::with_capacity(items.len() + 9);
        alloy_rlp::Header {
            list: true,
            payload_length: items.len(),
        }
        .encode(&mut slim_receipts);
        slim_receipts.extend_from_slice(&items);
        ere::EreBlock {
            header: self.header,
            body: self.body,
            slim_receipts,
            difficulty: self.difficulty,
            total_difficulty: self.total_difficulty,
        }
    }
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
