//! The encoding of a block's receipts (the value of `Receipts`), built so that a reader pays
//! for what it uses: one receipt is found through an offset table without reading the others,
//! and a log's address and topics sit apart from its data, so a log filter can test every log
//! of a block without reading, decoding or copying the data of the logs it skips.
//!
//! Layout, integers big-endian:
//!
//! ```text
//! block:   count u32 | offset u32 × (count + 1) | record × count
//!          (offset i: where record i starts, counted from the first record; the last offset
//!           is where the records end)
//! record:  tx_type u8
//!          outcome u8 (0 failed, 1 succeeded, 2 a post-state root: 32 bytes follow)
//!          cumulative_gas_used u64 | gas_used u64 | effective_gas_price u128
//!          contract u8 (0 none, 1: 20-byte address follows)
//!          blob u8 (0 none, 1: blob gas used u64 and blob gas price u128 follow)
//!          first_log_index u32 (logs of the block's earlier receipts)
//!          log_count u32
//!          log head × log_count: address 20 | topic_count u8 | topic 32 × topic_count | data_len u32
//!          data of every log, concatenated in log order
//! ```

use crate::{Error, ReceiptOutcome, Result, StoredReceipt};
use alloy_primitives::{Address, B256, Bytes, Log, LogData};

const U32: usize = 4;

/// Encodes a block's receipts.
pub fn encode_block_receipts(receipts: &[StoredReceipt]) -> Vec<u8> {
    let mut records = Vec::new();
    let mut offsets = Vec::with_capacity(receipts.len() + 1);
    let mut first_log_index = 0u32;
    for receipt in receipts {
        offsets.push(records.len() as u32);
        encode_record(receipt, first_log_index, &mut records);
        first_log_index += receipt.logs.len() as u32;
    }
    offsets.push(records.len() as u32);
    let mut out = Vec::with_capacity(U32 * (offsets.len() + 1) + records.len());
    out.extend_from_slice(&(receipts.len() as u32).to_be_bytes());
    for offset in offsets {
        out.extend_from_slice(&offset.to_be_bytes());
    }
    out.extend_from_slice(&records);
    out
}

fn encode_record(receipt: &StoredReceipt, first_log_index: u32, out: &mut Vec<u8>) {
    out.push(receipt.tx_type);
    match receipt.outcome {
        ReceiptOutcome::Status(ok) => out.push(u8::from(ok)),
        ReceiptOutcome::PostState(root) => {
            out.push(2);
            out.extend_from_slice(root.as_slice());
        }
    }
    out.extend_from_slice(&receipt.cumulative_gas_used.to_be_bytes());
    out.extend_from_slice(&receipt.gas_used.to_be_bytes());
    out.extend_from_slice(&receipt.effective_gas_price.to_be_bytes());
    match receipt.contract_address {
        Some(address) => {
            out.push(1);
            out.extend_from_slice(address.as_slice());
        }
        None => out.push(0),
    }
    match receipt.blob_gas {
        Some((used, price)) => {
            out.push(1);
            out.extend_from_slice(&used.to_be_bytes());
            out.extend_from_slice(&price.to_be_bytes());
        }
        None => out.push(0),
    }
    out.extend_from_slice(&first_log_index.to_be_bytes());
    out.extend_from_slice(&(receipt.logs.len() as u32).to_be_bytes());
    for log in &receipt.logs {
        out.extend_from_slice(log.address.as_slice());
        out.push(log.topics().len() as u8);
        for topic in log.topics() {
            out.extend_from_slice(topic.as_slice());
        }
        out.extend_from_slice(&(log.data.data.len() as u32).to_be_bytes());
    }
    for log in &receipt.logs {
        out.extend_from_slice(&log.data.data);
    }
}

/// A reader over bytes that reports where a value ended early.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len());
        let Some(end) = end else {
            return Err(Error::Corrupt(format!(
                "receipt ends at byte {} of {}, {n} more expected",
                self.pos,
                self.bytes.len()
            )));
        };
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32> {
        self.array().map(u32::from_be_bytes)
    }

    fn u64(&mut self) -> Result<u64> {
        self.array().map(u64::from_be_bytes)
    }

    fn u128(&mut self) -> Result<u128> {
        self.array().map(u128::from_be_bytes)
    }
}

/// A block's encoded receipts, read in place.
#[derive(Debug, Clone, Copy)]
pub struct BlockReceiptsView<'a> {
    count: usize,
    offsets: &'a [u8],
    records: &'a [u8],
}

impl<'a> BlockReceiptsView<'a> {
    pub fn new(bytes: &'a [u8]) -> Result<Self> {
        let mut reader = Reader { bytes, pos: 0 };
        let count = reader.u32()? as usize;
        let offsets = reader.take(
            count
                .checked_add(1)
                .and_then(|n| n.checked_mul(U32))
                .ok_or_else(|| Error::Corrupt(format!("receipt count {count}")))?,
        )?;
        let records = &bytes[reader.pos..];
        Ok(Self {
            count,
            offsets,
            records,
        })
    }

    /// The bytes of the encoding.
    pub fn encoded_size(&self) -> usize {
        U32 + self.offsets.len() + self.records.len()
    }

    /// The number of receipts (the block's transactions).
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn offset(&self, index: usize) -> usize {
        let at = index * U32;
        u32::from_be_bytes([
            self.offsets[at],
            self.offsets[at + 1],
            self.offsets[at + 2],
            self.offsets[at + 3],
        ]) as usize
    }

    /// Receipt `index`, `None` past the last.
    pub fn get(&self, index: usize) -> Result<Option<ReceiptView<'a>>> {
        if index >= self.count {
            return Ok(None);
        }
        let (start, end) = (self.offset(index), self.offset(index + 1));
        let record = self.records.get(start..end).ok_or_else(|| {
            Error::Corrupt(format!(
                "receipt {index} at bytes {start}..{end} of {}",
                self.records.len()
            ))
        })?;
        ReceiptView::new(record).map(Some)
    }

    /// Every receipt, in transaction order.
    pub fn iter(&self) -> impl Iterator<Item = Result<ReceiptView<'a>>> + '_ {
        (0..self.count).filter_map(|index| self.get(index).transpose())
    }

    /// Every receipt, decoded.
    pub fn decode_all(&self) -> Result<Vec<StoredReceipt>> {
        self.iter().map(|r| r?.decode()).collect()
    }
}

/// One receipt read in place: the fixed fields decoded, the logs still bytes.
#[derive(Debug, Clone, Copy)]
pub struct ReceiptView<'a> {
    pub tx_type: u8,
    pub outcome: ReceiptOutcome,
    pub cumulative_gas_used: u64,
    pub gas_used: u64,
    pub effective_gas_price: u128,
    pub contract_address: Option<Address>,
    pub blob_gas: Option<(u64, u128)>,
    /// The block-wide index of this receipt's first log.
    pub first_log_index: u32,
    log_count: usize,
    heads: &'a [u8],
    data: &'a [u8],
}

impl<'a> ReceiptView<'a> {
    fn new(record: &'a [u8]) -> Result<Self> {
        let mut r = Reader {
            bytes: record,
            pos: 0,
        };
        let tx_type = r.u8()?;
        let outcome = match r.u8()? {
            0 => ReceiptOutcome::Status(false),
            1 => ReceiptOutcome::Status(true),
            2 => ReceiptOutcome::PostState(B256::from(r.array::<32>()?)),
            tag => return Err(Error::Corrupt(format!("receipt outcome tag {tag}"))),
        };
        let cumulative_gas_used = r.u64()?;
        let gas_used = r.u64()?;
        let effective_gas_price = r.u128()?;
        let contract_address = match r.u8()? {
            0 => None,
            1 => Some(Address::from(r.array::<20>()?)),
            tag => return Err(Error::Corrupt(format!("receipt contract tag {tag}"))),
        };
        let blob_gas = match r.u8()? {
            0 => None,
            1 => Some((r.u64()?, r.u128()?)),
            tag => return Err(Error::Corrupt(format!("receipt blob gas tag {tag}"))),
        };
        let first_log_index = r.u32()?;
        let log_count = r.u32()? as usize;
        // Walk the heads once to find where the data begins and that it is all there.
        let heads_start = r.pos;
        let mut data_len = 0usize;
        for _ in 0..log_count {
            r.take(20)?;
            let topics = r.u8()? as usize;
            r.take(32 * topics)?;
            data_len = data_len.saturating_add(r.u32()? as usize);
        }
        let heads = &record[heads_start..r.pos];
        let data = r.take(data_len)?;
        if r.pos != record.len() {
            return Err(Error::Corrupt(format!(
                "receipt has {} bytes after its logs",
                record.len() - r.pos
            )));
        }
        Ok(Self {
            tx_type,
            outcome,
            cumulative_gas_used,
            gas_used,
            effective_gas_price,
            contract_address,
            blob_gas,
            first_log_index,
            log_count,
            heads,
            data,
        })
    }

    pub fn log_count(&self) -> usize {
        self.log_count
    }

    /// The logs, each with its address, topics and a reference to its data.
    pub fn logs(&self) -> LogViews<'a> {
        LogViews {
            heads: self.heads,
            data: self.data,
            remaining: self.log_count,
        }
    }

    pub fn decode(&self) -> Result<StoredReceipt> {
        Ok(StoredReceipt {
            tx_type: self.tx_type,
            outcome: self.outcome,
            cumulative_gas_used: self.cumulative_gas_used,
            gas_used: self.gas_used,
            effective_gas_price: self.effective_gas_price,
            contract_address: self.contract_address,
            blob_gas: self.blob_gas,
            logs: self.logs().map(|log| log.to_log()).collect(),
        })
    }
}

/// The logs of one receipt; the record was checked when its view was made.
#[derive(Debug, Clone)]
pub struct LogViews<'a> {
    heads: &'a [u8],
    data: &'a [u8],
    remaining: usize,
}

impl<'a> Iterator for LogViews<'a> {
    type Item = LogView<'a>;

    fn next(&mut self) -> Option<LogView<'a>> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let (address, rest) = self.heads.split_at_checked(20)?;
        let (&topic_count, rest) = rest.split_first()?;
        let (topics, rest) = rest.split_at_checked(32 * topic_count as usize)?;
        let (len, rest) = rest.split_at_checked(U32)?;
        let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let (data, data_rest) = self.data.split_at_checked(len)?;
        self.heads = rest;
        self.data = data_rest;
        Some(LogView {
            address,
            topics,
            data,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.remaining))
    }
}

/// One log read in place.
#[derive(Debug, Clone, Copy)]
pub struct LogView<'a> {
    address: &'a [u8],
    topics: &'a [u8],
    data: &'a [u8],
}

impl LogView<'_> {
    pub fn address(&self) -> Address {
        Address::from_slice(self.address)
    }

    pub fn topic_count(&self) -> usize {
        self.topics.len() / 32
    }

    /// Topic `position`, if the log has that many.
    pub fn topic(&self, position: usize) -> Option<B256> {
        self.topics
            .get(position * 32..position * 32 + 32)
            .map(B256::from_slice)
    }

    pub fn is_from(&self, address: &Address) -> bool {
        self.address == address.as_slice()
    }

    /// Whether the topic at `position` is `topic`.
    pub fn has_topic_at(&self, position: usize, topic: &B256) -> bool {
        self.topics.get(position * 32..position * 32 + 32) == Some(topic.as_slice())
    }

    /// The log, with its data copied.
    pub fn to_log(&self) -> Log {
        Log {
            address: self.address(),
            data: LogData::new_unchecked(
                self.topics.chunks_exact(32).map(B256::from_slice).collect(),
                Bytes::copy_from_slice(self.data),
            ),
        }
    }
}

/// The RLP list that held a block's receipts before layout 3, read only to migrate.
pub(crate) mod legacy {
    use crate::{Error, ReceiptOutcome, Result, StoredReceipt};
    use alloy_primitives::{Address, B256, Bytes, Log};
    use alloy_rlp::{Decodable, RlpDecodable, RlpEncodable};

    /// Options were empty byte strings.
    #[derive(RlpDecodable, RlpEncodable)]
    struct ReceiptRlp {
        tx_type: u8,
        outcome: Bytes,
        cumulative_gas_used: u64,
        gas_used: u64,
        effective_gas_price: u128,
        contract_address: Bytes,
        blob_gas_used: Bytes,
        blob_gas_price: Bytes,
        logs: Vec<Log>,
    }

    pub(crate) fn decode_list(mut bytes: &[u8]) -> Result<Vec<StoredReceipt>> {
        let list = Vec::<ReceiptRlp>::decode(&mut bytes)
            .map_err(|e| Error::Corrupt(format!("receipts of layout 2: {e}")))?;
        list.into_iter().map(from_rlp).collect()
    }

    fn from_rlp(r: ReceiptRlp) -> Result<StoredReceipt> {
        let outcome = match r.outcome.len() {
            1 => ReceiptOutcome::Status(r.outcome[0] == 1),
            32 => ReceiptOutcome::PostState(B256::from_slice(&r.outcome)),
            n => return Err(Error::Corrupt(format!("receipt outcome has {n} bytes"))),
        };
        let contract_address = match r.contract_address.len() {
            0 => None,
            20 => Some(Address::from_slice(&r.contract_address)),
            n => return Err(Error::Corrupt(format!("contract address has {n} bytes"))),
        };
        let blob_gas = match (r.blob_gas_used.len(), r.blob_gas_price.len()) {
            (0, 0) => None,
            (8, 16) => {
                let mut used = [0u8; 8];
                used.copy_from_slice(&r.blob_gas_used);
                let mut price = [0u8; 16];
                price.copy_from_slice(&r.blob_gas_price);
                Some((u64::from_be_bytes(used), u128::from_be_bytes(price)))
            }
            _ => return Err(Error::Corrupt("malformed receipt blob gas".into())),
        };
        Ok(StoredReceipt {
            tx_type: r.tx_type,
            outcome,
            cumulative_gas_used: r.cumulative_gas_used,
            gas_used: r.gas_used,
            effective_gas_price: r.effective_gas_price,
            contract_address,
            blob_gas,
            logs: r.logs,
        })
    }

    /// Encodes receipts the old way, for the migration's tests.
    #[cfg(test)]
    pub(crate) fn encode_list(receipts: &[StoredReceipt]) -> Vec<u8> {
        use alloy_rlp::Encodable;
        let list: Vec<ReceiptRlp> = receipts
            .iter()
            .map(|r| ReceiptRlp {
                tx_type: r.tx_type,
                outcome: match r.outcome {
                    ReceiptOutcome::Status(ok) => Bytes::from(vec![u8::from(ok)]),
                    ReceiptOutcome::PostState(root) => Bytes::copy_from_slice(root.as_slice()),
                },
                cumulative_gas_used: r.cumulative_gas_used,
                gas_used: r.gas_used,
                effective_gas_price: r.effective_gas_price,
                contract_address: r
                    .contract_address
                    .map(|a| Bytes::copy_from_slice(a.as_slice()))
                    .unwrap_or_default(),
                blob_gas_used: r
                    .blob_gas
                    .map(|(u, _)| Bytes::copy_from_slice(&u.to_be_bytes()))
                    .unwrap_or_default(),
                blob_gas_price: r
                    .blob_gas
                    .map(|(_, p)| Bytes::copy_from_slice(&p.to_be_bytes()))
                    .unwrap_or_default(),
                logs: r.logs.clone(),
            })
            .collect();
        let mut out = Vec::new();
        list.encode(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::address;

    pub(crate) fn sample() -> Vec<StoredReceipt> {
        vec![
            StoredReceipt {
                tx_type: 0,
                outcome: ReceiptOutcome::PostState(B256::repeat_byte(9)),
                cumulative_gas_used: 21000,
                gas_used: 21000,
                effective_gas_price: 1,
                contract_address: None,
                blob_gas: None,
                logs: vec![],
            },
            StoredReceipt {
                tx_type: 3,
                outcome: ReceiptOutcome::Status(false),
                cumulative_gas_used: 50000,
                gas_used: 29000,
                effective_gas_price: 7,
                contract_address: Some(address!("0x00000000000000000000000000000000000000aa")),
                blob_gas: Some((131072, 1)),
                logs: vec![
                    Log {
                        address: Address::repeat_byte(1),
                        data: LogData::new_unchecked(
                            vec![B256::repeat_byte(2)],
                            Bytes::from(vec![3; 1000]),
                        ),
                    },
                    Log {
                        address: Address::repeat_byte(4),
                        data: LogData::new_unchecked(vec![], Bytes::new()),
                    },
                ],
            },
            StoredReceipt {
                tx_type: 2,
                outcome: ReceiptOutcome::Status(true),
                cumulative_gas_used: 90000,
                gas_used: 40000,
                effective_gas_price: 9,
                contract_address: None,
                blob_gas: None,
                logs: vec![Log {
                    address: Address::repeat_byte(5),
                    data: LogData::new_unchecked(
                        vec![
                            B256::repeat_byte(6),
                            B256::repeat_byte(7),
                            B256::repeat_byte(8),
                        ],
                        Bytes::from(vec![1, 2, 3]),
                    ),
                }],
            },
        ]
    }

    #[test]
    fn receipts_round_trip_and_each_is_found_alone() {
        let receipts = sample();
        let encoded = encode_block_receipts(&receipts);
        let view = BlockReceiptsView::new(&encoded).unwrap();
        assert_eq!(view.len(), 3);
        assert_eq!(view.decode_all().unwrap(), receipts);
        let third = view.get(2).unwrap().unwrap();
        assert_eq!(third.first_log_index, 2);
        assert_eq!(third.decode().unwrap(), receipts[2]);
        assert!(view.get(3).unwrap().is_none());
        let log = third.logs().next().unwrap();
        assert!(log.is_from(&Address::repeat_byte(5)));
        assert!(log.has_topic_at(2, &B256::repeat_byte(8)));
        assert!(!log.has_topic_at(3, &B256::repeat_byte(8)));
        assert_eq!(log.topic(1), Some(B256::repeat_byte(7)));
        assert_eq!(log.topic_count(), 3);
        let empty = encode_block_receipts(&[]);
        assert!(BlockReceiptsView::new(&empty).unwrap().is_empty());
    }

    #[test]
    fn truncated_or_padded_receipts_are_corrupt() {
        let encoded = encode_block_receipts(&sample());
        for cut in [1, 5, 30, encoded.len() - 1] {
            let view = BlockReceiptsView::new(&encoded[..cut]);
            let all = view.and_then(|v| v.decode_all());
            assert!(all.is_err(), "cut at {cut}");
        }
        // A record with bytes after its logs.
        let mut padded = encode_block_receipts(&sample()[..1]);
        let end = padded.len() as u32 + 1 - 12;
        padded[8..12].copy_from_slice(&end.to_be_bytes());
        padded.push(0);
        assert!(
            BlockReceiptsView::new(&padded)
                .unwrap()
                .decode_all()
                .is_err()
        );
    }

    #[test]
    fn the_old_encoding_still_reads_for_migration() {
        let receipts = sample();
        assert_eq!(
            legacy::decode_list(&legacy::encode_list(&receipts)).unwrap(),
            receipts
        );
    }
}
