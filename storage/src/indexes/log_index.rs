//! The log index (which blocks hold logs of an address, and in which of their receipts; which
//! blocks hold a topic at a position, as block lists) and the eth_getLogs query over it:
//! candidate blocks from the index, then only the receipts of those blocks that may hold a
//! match.

use crate::{
    Error, LegacyTable, LogView, MetaKey, Result, StorageTx, StoredReceipt, Table,
    history::state_lists::Lists, maintenance::migrate::TOPIC_LISTS_LAYOUT, models::be_u64,
};
use alloy_primitives::{Address, B256, Bloom, BloomInput, Log};
use signet_libmdbx::{RwSync, TransactionKind};
use std::{borrow::Cow, collections::BTreeMap, time::Instant};

/// Topic positions a log can have (LOG0..LOG4).
pub const MAX_TOPICS: usize = 4;

/// The key of a topic's list at one position: the topic, then the position.
fn topic_list_key(topic: &B256, position: usize) -> [u8; 33] {
    let mut key = [0u8; 33];
    key[..32].copy_from_slice(topic.as_slice());
    key[32] = position as u8;
    key
}

/// What eth_getLogs asks for. An empty `addresses` matches any address; `topics[i]` empty
/// matches any topic at position i (and logs with fewer than i + 1 topics fail only non-empty
/// positions).
#[derive(Debug, Clone, Default)]
pub struct LogFilter {
    pub from: u64,
    pub to: u64,
    pub addresses: Vec<Address>,
    pub topics: Vec<Vec<B256>>,
}

impl LogFilter {
    pub fn matches(&self, log: &Log) -> bool {
        let topics = log.topics();
        self.matches_by(
            |address| *address == log.address,
            |position, topic| topics.get(position) == Some(topic),
        )
    }

    /// `matches` for a log read in place: its data is not looked at.
    pub fn matches_view(&self, log: &LogView<'_>) -> bool {
        self.matches_by(
            |address| log.is_from(address),
            |position, topic| log.has_topic_at(position, topic),
        )
    }

    /// The rules, over a log's address and its topic at each position.
    fn matches_by(
        &self,
        is_from: impl Fn(&Address) -> bool,
        has_topic_at: impl Fn(usize, &B256) -> bool,
    ) -> bool {
        (self.addresses.is_empty() || self.addresses.iter().any(is_from))
            && self.topics.iter().enumerate().all(|(position, wanted)| {
                wanted.is_empty() || wanted.iter().any(|topic| has_topic_at(position, topic))
            })
    }

    /// Whether a block with this bloom may hold a matching log.
    fn may_match(&self, bloom: &Bloom) -> bool {
        let has = |input: &[u8]| bloom.contains_input(BloomInput::Raw(input));
        (self.addresses.is_empty() || self.addresses.iter().any(|a| has(a.as_slice())))
            && self
                .topics
                .iter()
                .all(|wanted| wanted.is_empty() || wanted.iter().any(|t| has(t.as_slice())))
    }

    /// Whether the index can narrow the blocks: some address or topic is named.
    fn is_selective(&self) -> bool {
        !self.addresses.is_empty() || self.topics.iter().any(|t| !t.is_empty())
    }
}

/// A matching log and where it is in the chain.
#[derive(Debug, Clone)]
pub struct LocatedLog {
    pub log: Log,
    pub block_number: u64,
    pub block_hash: B256,
    pub block_timestamp: u64,
    pub transaction_hash: B256,
    pub transaction_index: u32,
    pub log_index: u32,
}

/// Bounds on one query.
#[derive(Debug, Clone, Copy)]
pub struct LogLimits {
    pub max_results: usize,
    pub deadline: Instant,
    /// `false` reads every block's header bloom instead of the index (the reference scan).
    pub use_index: bool,
}

#[derive(Debug)]
pub enum LogsOutcome {
    Found(Vec<LocatedLog>),
    /// More than `max_results` logs match. `fits_through`: the last block such that the range
    /// from the filter's `from` to it holds at most `max_results` (`None`: not even the first
    /// matching block alone fits).
    TooMany {
        fits_through: Option<u64>,
    },
    /// The deadline passed; the query stopped.
    TimedOut,
}

impl<K: TransactionKind> StorageTx<K> {
    /// The highest block through which the log index is complete; `None` in a database made
    /// before the index existed, until `build_log_index` has run.
    pub fn log_index_head(&self) -> Result<Option<u64>> {
        self.meta_u64(MetaKey::LogIndexHead)
    }

    /// The transaction hashes of a block, in order.
    pub fn transaction_hashes(&self, number: u64) -> Result<Option<Vec<B256>>> {
        if let Some(value) = self.get_chunked(Table::BlockTxHashes, number)? {
            if value.len() % 32 != 0 {
                return Err(Error::Corrupt(format!(
                    "transaction hashes of block {number}: {} bytes",
                    value.len()
                )));
            }
            return Ok(Some(value.chunks(32).map(B256::from_slice).collect()));
        }
        Ok(self
            .body(number)?
            .map(|body| body.transactions.iter().map(|tx| *tx.tx_hash()).collect()))
    }

    /// The logs matching `filter`, in chain order, within `limits`.
    pub fn logs(&self, filter: &LogFilter, limits: LogLimits) -> Result<LogsOutcome> {
        if filter.topics.iter().skip(MAX_TOPICS).any(|t| !t.is_empty()) {
            return Ok(LogsOutcome::Found(Vec::new()));
        }
        // The part of the range the index covers, if any.
        let indexed_through = match (limits.use_index, self.log_index_head()?) {
            (true, Some(head)) if head >= filter.from => Some(head.min(filter.to)),
            _ => None,
        };
        let mut found = Vec::new();
        let mut last_fitting = None;
        let mut visit = |number: u64,
                         only: Option<&[u32]>,
                         found: &mut Vec<LocatedLog>|
         -> Result<Option<LogsOutcome>> {
            if Instant::now() >= limits.deadline {
                return Ok(Some(LogsOutcome::TimedOut));
            }
            self.block_logs(number, filter, only, found)?;
            if found.len() > limits.max_results {
                return Ok(Some(LogsOutcome::TooMany {
                    fits_through: last_fitting,
                }));
            }
            last_fitting = Some(number);
            Ok(None)
        };
        if let Some(through) = indexed_through {
            let candidates = if filter.is_selective() {
                match self.indexed_candidates(filter, through, limits)? {
                    Some(candidates) => candidates,
                    None => return Ok(LogsOutcome::TimedOut),
                }
            } else {
                (filter.from..=through)
                    .map(|number| (number, None))
                    .collect()
            };
            for (number, only) in candidates {
                if let Some(end) = visit(number, only.as_deref(), &mut found)? {
                    return Ok(end);
                }
            }
        }
        // Blocks the index does not cover: the header bloom decides which to read.
        let unindexed = indexed_through.map_or(filter.from, |through| through + 1);
        for number in unindexed..=filter.to {
            let Some(header) = self.header(number)? else {
                break;
            };
            if filter.may_match(&header.logs_bloom) {
                if let Some(end) = visit(number, None, &mut found)? {
                    return Ok(end);
                }
            } else if Instant::now() >= limits.deadline {
                return Ok(LogsOutcome::TimedOut);
            }
        }
        Ok(LogsOutcome::Found(found))
    }

    /// The blocks in `filter.from..=through` that the index says may match, in order, each
    /// with the receipts that may hold a match (`None`: every receipt, where an entry has no
    /// list); `None` when the deadline passed while reading the index.
    fn indexed_candidates(
        &self,
        filter: &LogFilter,
        through: u64,
        limits: LogLimits,
    ) -> Result<Option<Vec<Candidate>>> {
        // One set per criterion (the addresses, each topic position): the union of its keys'
        // entries. A matching log meets every criterion, so its block and receipt are in the
        // intersection of the sets.
        let mut sets: Vec<BTreeMap<u64, Option<Vec<u32>>>> = Vec::new();
        if !filter.addresses.is_empty() {
            let mut set = BTreeMap::new();
            for address in &filter.addresses {
                if Instant::now() >= limits.deadline {
                    return Ok(None);
                }
                self.indexed_blocks(address, filter.from, through, &mut set)?;
            }
            sets.push(set);
        }
        if filter.topics.iter().any(|wanted| !wanted.is_empty()) {
            // Blocks a write transaction staged are not in the lists yet.
            self.check_history_written()?;
        }
        let mut cursor = self.list_cursor(Lists::Topics)?;
        let mut blocks = Vec::new();
        for (position, wanted) in filter.topics.iter().enumerate() {
            if wanted.is_empty() {
                continue;
            }
            blocks.clear();
            for topic in wanted {
                if Instant::now() >= limits.deadline {
                    return Ok(None);
                }
                self.listed_blocks(
                    &mut cursor,
                    Lists::Topics,
                    &topic_list_key(topic, position),
                    (filter.from, through),
                    &mut blocks,
                )?;
            }
            // The lists say which blocks, not which receipts: every receipt of them may match.
            sets.push(blocks.iter().map(|&block| (block, None)).collect());
        }
        sets.sort_by_key(BTreeMap::len);
        let mut sets = sets.into_iter();
        let Some(first) = sets.next() else {
            return Ok(Some(Vec::new()));
        };
        let mut candidates: Vec<Candidate> = first.into_iter().collect();
        for set in sets {
            candidates.retain_mut(|(block, receipts)| match set.get(block) {
                None => false,
                Some(other) => {
                    *receipts = intersect(receipts.take(), other.as_deref());
                    receipts.as_ref().is_none_or(|r| !r.is_empty())
                }
            });
        }
        Ok(Some(candidates))
    }

    /// Adds the blocks in `from..=to` holding logs of `address` to `set`, with their receipt
    /// lists.
    fn indexed_blocks(
        &self,
        address: &Address,
        from: u64,
        to: u64,
        set: &mut BTreeMap<u64, Option<Vec<u32>>>,
    ) -> Result<()> {
        let prefix = address.as_slice();
        let mut cursor = self.tx.cursor(self.db(Table::LogAddresses))?;
        let mut seek = prefix.to_vec();
        seek.extend_from_slice(&from.to_be_bytes());
        let mut entry = cursor.set_range::<Cow<'_, [u8]>, Cow<'_, [u8]>>(&seek)?;
        while let Some((key, receipts)) = entry {
            if key.len() != prefix.len() + 8 || !key.starts_with(prefix) {
                break;
            }
            let block = be_u64(&key[prefix.len()..])?;
            if block > to {
                break;
            }
            let receipts = (!receipts.is_empty())
                .then(|| decode_receipt_list(&receipts))
                .transpose()?;
            let merged = match set.remove(&block) {
                None => receipts,
                Some(known) => union(known, receipts),
            };
            set.insert(block, merged);
            entry = cursor.next()?;
        }
        Ok(())
    }

    /// Appends the matching logs of one block, looking only at the receipts in `only` when
    /// given. Only the logs' addresses and topics are read to match; a log's data is copied
    /// only when it matches.
    fn block_logs(
        &self,
        number: u64,
        filter: &LogFilter,
        only: Option<&[u32]>,
        out: &mut Vec<LocatedLog>,
    ) -> Result<()> {
        let hits = self.with_receipts(number, |receipts| -> Result<Vec<(u32, u32, Log)>> {
            let mut hits = Vec::new();
            let indices: Box<dyn Iterator<Item = usize>> = match only {
                Some(only) => Box::new(only.iter().map(|&i| i as usize)),
                None => Box::new(0..receipts.len()),
            };
            for tx_index in indices {
                let receipt = receipts.get(tx_index)?.ok_or_else(|| {
                    Error::Corrupt(format!(
                        "the log index names receipt {tx_index} of block {number}, which has {}",
                        receipts.len()
                    ))
                })?;
                for (position, log) in receipt.logs().enumerate() {
                    if filter.matches_view(&log) {
                        let log_index = receipt.first_log_index + position as u32;
                        hits.push((tx_index as u32, log_index, log.to_log()));
                    }
                }
            }
            Ok(hits)
        })?;
        let hits = hits.transpose()?.unwrap_or_default();
        if hits.is_empty() {
            return Ok(());
        }
        // The hits are in transaction order: the transactions they name, each once.
        let mut transactions: Vec<u32> = hits.iter().map(|(index, _, _)| *index).collect();
        transactions.dedup();
        let (hash, timestamp, tx_hashes) = self.block_context(number, &transactions)?;
        for (transaction_index, log_index, log) in hits {
            let transaction_hash = transactions
                .binary_search(&transaction_index)
                .ok()
                .and_then(|at| tx_hashes.get(at))
                .copied()
                .ok_or_else(|| {
                    Error::Corrupt(format!(
                        "block {number} has more receipts than transactions"
                    ))
                })?;
            out.push(LocatedLog {
                log,
                block_number: number,
                block_hash: hash,
                block_timestamp: timestamp,
                transaction_hash,
                transaction_index,
                log_index,
            });
        }
        Ok(())
    }

    /// Hash and timestamp of a stored block, and the hashes of its transactions at
    /// `transactions` (ascending).
    fn block_context(&self, number: u64, transactions: &[u32]) -> Result<(B256, u64, Vec<B256>)> {
        let missing =
            |what: &str| Error::Corrupt(format!("block {number} has receipts but no {what}"));
        let hash = self
            .canonical_hash(number)?
            .ok_or_else(|| missing("hash"))?;
        let header = self.header(number)?.ok_or_else(|| missing("header"))?;
        let tx_hashes = self
            .transaction_hashes_at(number, transactions)?
            .ok_or_else(|| missing("transactions"))?;
        Ok((hash, header.timestamp, tx_hashes))
    }

    /// The hashes of block `number`'s transactions at `indices` (ascending), as far as the
    /// block has them: each read from the part of the block's list that holds it, so that a
    /// query naming a few transactions of a large block neither joins nor copies the rest.
    fn transaction_hashes_at(&self, number: u64, indices: &[u32]) -> Result<Option<Vec<B256>>> {
        let mut found = Vec::with_capacity(indices.len());
        let stored = self.visit_chunked(Table::BlockTxHashes, number, |offset, part| {
            while let Some(&index) = indices.get(found.len()) {
                // A part's length is a multiple of 32 but the last's, so a hash lies in one.
                let start = (index as usize * 32).checked_sub(offset).ok_or_else(|| {
                    Error::Corrupt(format!(
                        "transaction hashes of block {number}: hash {index} spans two parts"
                    ))
                })?;
                match part.get(start..start + 32) {
                    Some(hash) => found.push(B256::from_slice(hash)),
                    None => return Ok(true),
                }
            }
            Ok(false)
        })?;
        if stored {
            return Ok(Some(found));
        }
        Ok(self.transaction_hashes(number)?.map(|all| {
            indices
                .iter()
                .map_while(|&index| all.get(index as usize).copied())
                .collect()
        }))
    }
}

/// A candidate block of a log query and the receipts that may match (`None`: every one).
type Candidate = (u64, Option<Vec<u32>>);

/// Two receipt lists merged (`None`, every receipt, absorbs the other).
fn union(a: Option<Vec<u32>>, b: Option<Vec<u32>>) -> Option<Vec<u32>> {
    let (mut a, b) = (a?, b?);
    a.extend(b);
    a.sort_unstable();
    a.dedup();
    Some(a)
}

/// The receipts in both lists (`None`, every receipt, leaves the other).
fn intersect(a: Option<Vec<u32>>, b: Option<&[u32]>) -> Option<Vec<u32>> {
    match (a, b) {
        (None, None) => None,
        (None, Some(b)) => Some(b.to_vec()),
        (Some(a), None) => Some(a),
        (Some(mut a), Some(b)) => {
            a.retain(|index| b.binary_search(index).is_ok());
            Some(a)
        }
    }
}

/// The receipt list of a log index entry: which of the block's receipts hold a log of the
/// key, ascending (as `indices` must be), each as its distance from the one before (the first
/// as is) in LEB128, so a list of nearby transactions takes a byte each.
fn encode_receipt_list(indices: &[u32], out: &mut Vec<u8>) {
    let mut previous = None;
    for &index in indices {
        let mut delta = match previous {
            None => index,
            Some(previous) => index - previous,
        };
        previous = Some(index);
        loop {
            let byte = (delta & 0x7f) as u8;
            delta >>= 7;
            if delta == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
    }
}

fn decode_receipt_list(bytes: &[u8]) -> Result<Vec<u32>> {
    let corrupt = || Error::Corrupt(format!("malformed log index receipt list {bytes:02x?}"));
    let mut indices = Vec::new();
    let mut previous: Option<u32> = None;
    let mut rest = bytes;
    while !rest.is_empty() {
        let mut delta = 0u32;
        let mut shift = 0;
        loop {
            let (&byte, tail) = rest.split_first().ok_or_else(corrupt)?;
            rest = tail;
            let bits = u32::from(byte & 0x7f);
            if shift > 28 || (shift == 28 && bits > 0xf) {
                return Err(corrupt());
            }
            delta |= bits << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                break;
            }
        }
        let index = match previous {
            None => delta,
            Some(previous) if delta > 0 => previous.checked_add(delta).ok_or_else(corrupt)?,
            Some(_) => return Err(corrupt()),
        };
        indices.push(index);
        previous = Some(index);
    }
    Ok(indices)
}

impl StorageTx<RwSync> {
    /// Adds block `number`'s logs to the index if the index is complete up to its parent (a
    /// database made before the index gets it from `build_log_index`).
    pub(crate) fn index_block_logs(&self, number: u64, receipts: &[StoredReceipt]) -> Result<()> {
        let contiguous = match number.checked_sub(1) {
            None => true,
            Some(parent) => self.log_index_head()? == Some(parent),
        };
        if !contiguous {
            return Ok(());
        }
        // One (address, receipt) pair per log, sorted: each address's entries are then
        // together, its receipts ascending. And each topic at each position, once.
        let mut by_address: Vec<(Address, u32)> = Vec::new();
        let mut by_topic: Vec<[u8; 33]> = Vec::new();
        for (index, receipt) in receipts.iter().enumerate() {
            let index = u32::try_from(index)
                .map_err(|_| Error::Corrupt(format!("block {number} has too many receipts")))?;
            for log in &receipt.logs {
                by_address.push((log.address, index));
                for (position, topic) in log.topics().iter().enumerate().take(MAX_TOPICS) {
                    by_topic.push(topic_list_key(topic, position));
                }
            }
        }
        // A list that names most of the block's receipts saves a query little and costs ingest
        // its bytes (a token's own address, in nearly every transaction): such an address gets
        // none, which reads as every receipt.
        let narrows = |list: &[u32]| list.len() * 2 <= receipts.len();
        by_address.sort_unstable();
        by_address.dedup();
        let block = number.to_be_bytes();
        let mut key = Vec::with_capacity(28);
        let mut value = Vec::new();
        let mut receipts_of_key = Vec::new();
        for group in by_address.chunk_by(|a, b| a.0 == b.0) {
            key.clear();
            key.extend_from_slice(group[0].0.as_slice());
            key.extend_from_slice(&block);
            receipts_of_key.clear();
            receipts_of_key.extend(group.iter().map(|&(_, index)| index));
            value.clear();
            if narrows(&receipts_of_key) {
                encode_receipt_list(&receipts_of_key, &mut value);
            }
            self.put_staged(Table::LogAddresses, &key, &value)?;
        }
        by_topic.sort_unstable();
        by_topic.dedup();
        for key in &by_topic {
            self.list_indexed_block(Lists::Topics, key, number)?;
        }
        self.put_meta(MetaKey::LogIndexHead, &block)
    }

    /// Removes block `number`'s logs from the index (the block is being unwound) and, if the
    /// index reached it, moves the index head to its parent.
    pub(crate) fn unindex_block_logs(&self, number: u64, receipts: &[StoredReceipt]) -> Result<()> {
        let block = number.to_be_bytes();
        let mut key = Vec::with_capacity(28);
        let mut topics = std::collections::BTreeSet::new();
        for log in receipts.iter().flat_map(|r| &r.logs) {
            key.clear();
            key.extend_from_slice(log.address.as_slice());
            key.extend_from_slice(&block);
            self.del(Table::LogAddresses, &key)?;
            for (position, topic) in log.topics().iter().enumerate().take(MAX_TOPICS) {
                topics.insert(topic_list_key(topic, position));
            }
        }
        for topic in &topics {
            self.unlist_block(Lists::Topics, topic, number)?;
        }
        if let (Some(indexed), Some(parent)) = (self.log_index_head()?, number.checked_sub(1))
            && indexed >= number
        {
            self.put_meta(MetaKey::LogIndexHead, &parent.to_be_bytes())?;
        }
        Ok(())
    }

    /// Moves layout 9's `LogTopics` entries into `LogTopicLists`, about `budget` per call, in
    /// key order (each topic's blocks ascending, the order its lists take them), deleting
    /// them as it goes; once none is left, records layout 10. Returns `true` then.
    pub(crate) fn list_log_topics(&self, budget: u64) -> Result<bool> {
        let mut moved = Vec::new();
        {
            let mut cursor = self
                .tx
                .cursor(self.db(Table::Legacy(LegacyTable::LogTopics)))?;
            let mut entry = cursor.first::<Vec<u8>, Vec<u8>>()?;
            while let Some((key, value)) = entry {
                if moved.len() as u64 >= budget {
                    break;
                }
                let (40, Some(&positions)) = (key.len(), value.first()) else {
                    return Err(Error::Corrupt(format!(
                        "log_topics entry {}",
                        alloy_primitives::hex::encode(&key)
                    )));
                };
                let (topic, block) = (B256::from_slice(&key[..32]), be_u64(&key[32..])?);
                moved.push((key, topic, block, positions));
                entry = cursor.next::<Vec<u8>, Vec<u8>>()?;
            }
        }
        for (key, topic, block, positions) in &moved {
            for position in (0..MAX_TOPICS).filter(|p| positions & (1 << p) != 0) {
                self.list_indexed_block(Lists::Topics, &topic_list_key(topic, position), *block)?;
            }
            self.del(Table::Legacy(LegacyTable::LogTopics), key)?;
        }
        if (moved.len() as u64) < budget {
            self.put_schema(TOPIC_LISTS_LAYOUT)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Extends the log index by up to `max_blocks` stored blocks past its head (or from block
    /// 0 in a database that has none). Returns the new index head.
    pub fn build_log_index(&self, max_blocks: u64) -> Result<u64> {
        let Some((head, _)) = self.head()? else {
            return Ok(0);
        };
        let mut next = match self.log_index_head()? {
            Some(indexed) => indexed + 1,
            None => 0,
        };
        let last = head.min(next.saturating_add(max_blocks).saturating_sub(1));
        while next <= last {
            let receipts = self.receipts(next)?.unwrap_or_default();
            self.index_block_logs(next, &receipts)?;
            next += 1;
        }
        Ok(self.log_index_head()?.unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Database, ReceiptOutcome};
    use alloy_primitives::LogData;

    fn receipt(logs: Vec<Log>) -> StoredReceipt {
        StoredReceipt {
            tx_type: 2,
            outcome: ReceiptOutcome::Status(true),
            cumulative_gas_used: 0,
            gas_used: 0,
            effective_gas_price: 0,
            contract_address: None,
            blob_gas: None,
            logs,
        }
    }

    fn log(address: Address, topics: Vec<B256>) -> Log {
        Log {
            address,
            data: LogData::new_unchecked(topics, Default::default()),
        }
    }

    /// What the index offers a filter over blocks 0 to `to`.
    fn candidates_through(
        r: &crate::ReadTx,
        to: u64,
        addresses: Vec<Address>,
        topics: Vec<Vec<B256>>,
    ) -> Vec<Candidate> {
        let limits = LogLimits {
            max_results: 10,
            deadline: Instant::now() + std::time::Duration::from_secs(60),
            use_index: true,
        };
        let filter = LogFilter {
            from: 0,
            to,
            addresses,
            topics,
        };
        r.indexed_candidates(&filter, to, limits).unwrap().unwrap()
    }

    /// What the index offers a filter over blocks 0 to 2.
    fn candidates_through_2(
        r: &crate::ReadTx,
        addresses: Vec<Address>,
        topics: Vec<Vec<B256>>,
    ) -> Vec<Candidate> {
        candidates_through(r, 2, addresses, topics)
    }

    #[test]
    fn the_index_finds_blocks_by_address_and_topic_position_and_only_grows_contiguously() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let (a, b) = (Address::repeat_byte(0xa), Address::repeat_byte(0xb));
        let (t0, t1) = (B256::repeat_byte(1), B256::repeat_byte(2));
        let tx = db.writer().unwrap();
        tx.index_block_logs(0, &[]).unwrap();
        tx.index_block_logs(1, &[receipt(vec![log(a, vec![t0, t1])])])
            .unwrap();
        tx.index_block_logs(2, &[receipt(vec![log(b, vec![t1])])])
            .unwrap();
        // Block 4 does not follow the index head (3 is missing): it is left for a rebuild.
        tx.index_block_logs(4, &[receipt(vec![log(a, vec![t0])])])
            .unwrap();
        tx.commit().unwrap();

        let r = db.reader().unwrap();
        assert_eq!(r.log_index_head().unwrap(), Some(2));
        let candidates = |addresses: Vec<Address>, topics: Vec<Vec<B256>>| {
            let found = candidates_through_2(&r, addresses, topics);
            found
                .into_iter()
                .map(|(block, _)| block)
                .collect::<Vec<_>>()
        };
        assert_eq!(candidates(vec![a], vec![]), vec![1]);
        assert_eq!(candidates(vec![a, b], vec![]), vec![1, 2]);
        assert_eq!(candidates(vec![], vec![vec![], vec![t1]]), vec![1]);
        assert_eq!(candidates(vec![], vec![vec![t1]]), vec![2]);
        assert_eq!(candidates(vec![b], vec![vec![t0]]), Vec::<u64>::new());
        assert_eq!(candidates(vec![], vec![vec![t0, t1]]), vec![1, 2]);
    }

    #[test]
    fn receipt_lists_round_trip_and_reject_garbage() {
        for list in [
            vec![0u32],
            vec![3, 4, 5, 200, 70_000, u32::MAX],
            vec![1, 1_000_000],
        ] {
            let mut bytes = Vec::new();
            encode_receipt_list(&list, &mut bytes);
            assert_eq!(decode_receipt_list(&bytes).unwrap(), list);
        }
        // Consecutive receipts take a byte each.
        let mut bytes = Vec::new();
        encode_receipt_list(&(10..20).collect::<Vec<_>>(), &mut bytes);
        assert_eq!(bytes.len(), 10);
        // A cut varint, a repeated index, and one past u32.
        assert!(decode_receipt_list(&[0x80]).is_err());
        assert!(decode_receipt_list(&[5, 0]).is_err());
        assert!(decode_receipt_list(&[0xff, 0xff, 0xff, 0xff, 0x1f]).is_err());
    }

    /// Address entries narrow a block to the receipts that may match, intersected across the
    /// addresses and topics; topic lists narrow blocks only; address entries without a list
    /// (written before lists existed, or naming most receipts) leave every receipt.
    #[test]
    fn candidates_carry_the_receipts_that_may_match() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let (a, b) = (Address::repeat_byte(0xa), Address::repeat_byte(0xb));
        let c = Address::repeat_byte(0xc);
        let (t0, t1) = (B256::repeat_byte(1), B256::repeat_byte(2));
        let tx = db.writer().unwrap();
        tx.index_block_logs(0, &[]).unwrap();
        tx.index_block_logs(
            1,
            &[
                receipt(vec![log(a, vec![t0]), log(c, vec![])]),
                receipt(vec![log(c, vec![])]),
                receipt(vec![log(b, vec![t1]), log(a, vec![t1])]),
                receipt(vec![log(b, vec![t0]), log(c, vec![])]),
            ],
        )
        .unwrap();
        // Block 2's address entry as a database from before the receipt lists holds it.
        tx.index_block_logs(2, &[receipt(vec![log(a, vec![t1])])])
            .unwrap();
        let key = |prefix: &[u8]| [prefix, &2u64.to_be_bytes()].concat();
        tx.put_staged(Table::LogAddresses, &key(a.as_slice()), &[])
            .unwrap();
        tx.commit().unwrap();

        let r = db.reader().unwrap();
        let candidates = |addresses, topics| candidates_through_2(&r, addresses, topics);
        assert_eq!(
            candidates(vec![a], vec![]),
            vec![(1, Some(vec![0, 2])), (2, None)]
        );
        assert_eq!(candidates(vec![b], vec![]), vec![(1, Some(vec![2, 3]))]);
        assert_eq!(
            candidates(vec![a, b], vec![]),
            vec![(1, Some(vec![0, 2, 3])), (2, None)]
        );
        // t1 (position 0) is in blocks 1 and 2; a's receipts narrow block 1.
        assert_eq!(
            candidates(vec![a], vec![vec![t1]]),
            vec![(1, Some(vec![0, 2])), (2, None)]
        );
        assert_eq!(
            candidates(vec![b], vec![vec![t0]]),
            vec![(1, Some(vec![2, 3]))]
        );
        // c is in three of block 1's four receipts: its entry has no list, and narrows nothing.
        assert_eq!(candidates(vec![c], vec![]), vec![(1, None)]);
        assert_eq!(candidates(vec![c], vec![vec![t1]]), vec![(1, None)]);
        // No block has t0 at position 1.
        assert_eq!(candidates(vec![], vec![vec![], vec![t0]]), vec![]);
    }

    /// A layout 9 topic index (one entry per topic and block, with its positions), moved into
    /// the lists in small steps, offers the same blocks, and its entries are gone; an unwind
    /// then takes a block out of the lists.
    #[test]
    fn layout_9_topic_entries_move_into_the_lists() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let (t0, t1) = (B256::repeat_byte(1), B256::repeat_byte(2));
        let tx = db.writer().unwrap();
        // t0 at position 0 in blocks 0 and 2, at 1 in block 1; t1 at 0 and 2 in block 1.
        for (topic, block, positions) in [(t0, 0u64, 1u8), (t0, 1, 2), (t0, 2, 1), (t1, 1, 5)] {
            let key = [topic.as_slice(), &block.to_be_bytes()].concat();
            tx.put(Table::Legacy(LegacyTable::LogTopics), &key, &[positions, 0])
                .unwrap();
        }
        tx.put_meta(MetaKey::LogIndexHead, &2u64.to_be_bytes())
            .unwrap();
        tx.put_schema(crate::TRACE_LISTS_LAYOUT).unwrap();
        tx.commit().unwrap();
        crate::maintenance::migrate::migrate_in_steps(&db, 1);
        let r = db.reader().unwrap();
        assert_eq!(r.schema_version().unwrap(), crate::SCHEMA_VERSION);
        let blocks = |topics: Vec<Vec<B256>>| {
            candidates_through_2(&r, vec![], topics)
                .into_iter()
                .map(|(block, receipts)| {
                    assert_eq!(receipts, None);
                    block
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(blocks(vec![vec![t0]]), vec![0, 2]);
        assert_eq!(blocks(vec![vec![], vec![t0]]), vec![1]);
        assert_eq!(blocks(vec![vec![t1], vec![], vec![t1]]), vec![1]);
        assert_eq!(blocks(vec![vec![], vec![t1]]), Vec::<u64>::new());
        let mut cursor =
            r.tx.cursor(r.db(Table::Legacy(LegacyTable::LogTopics)))
                .unwrap();
        assert!(cursor.first::<Vec<u8>, ()>().unwrap().is_none());
        drop(cursor);
        drop(r);
        let tx = db.writer().unwrap();
        tx.unindex_block_logs(2, &[receipt(vec![log(Address::ZERO, vec![t0])])])
            .unwrap();
        tx.commit().unwrap();
        let r = db.reader().unwrap();
        let found = candidates_through(&r, 1, vec![], vec![vec![t0]]);
        assert_eq!(found, vec![(0, None)]);
    }
}
