//! Recently served blocks, decoded, shared between requests.
//!
//! A block hash always names the same block, but a block number names the same block only until
//! an unwind removes it: another process (`quarry ingest --reorg`, `quarry follow`) may commit
//! one at any time, and the number may then name another block, or none; so may the indexes
//! from block and transaction hashes to numbers. A `BlockCache` therefore holds facts about one
//! chain only, the chain of one unwind count (which each unwind raises in its own commit): every
//! entry was read from a snapshot with that count. The `Node` gives each snapshot the cache of
//! its count and starts a new, empty cache when a snapshot shows a higher one (see `Caches` in
//! `node.rs`), and it answers a request from memory, without opening the database and so
//! without leaving the async thread, only while MDBX's last commit is still the one the cache
//! was last checked against, asked after the cache was read: between two commits nothing can
//! be unwound.

use crate::rpc_error::{Result, RpcError};
use alloy_consensus::Header;
use alloy_primitives::{Address, B256, Bloom, U256, logs_bloom};
use quarry_storage::{BlockReceiptsView, ReadTx, StoredBody, StoredReceipt};
use serde_json::value::RawValue;
use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex, PoisonError},
};

/// A canonical block as decoded from storage.
#[derive(Debug)]
pub struct CachedBlock {
    pub hash: B256,
    pub header: Header,
    pub body: StoredBody,
    pub total_difficulty: U256,
    pub senders: Vec<Address>,
    pub uncle_hashes: Vec<B256>,
    /// The block's RLP size: what the cache's memory bound counts.
    pub size: usize,
}

impl CachedBlock {
    /// Reads block `number` from `tx`, if the snapshot holds it.
    pub fn read(tx: &ReadTx, number: u64) -> Result<Option<Self>> {
        let Some(hash) = tx.canonical_hash(number)? else {
            return Ok(None);
        };
        let (Some(header), Some(body)) = (tx.header(number)?, tx.body(number)?) else {
            return Ok(None);
        };
        let size = crate::types::block_size(&header, &body);
        Ok(Some(Self {
            hash,
            uncle_hashes: body.ommers.iter().map(Header::hash_slow).collect(),
            header,
            body,
            total_difficulty: tx.total_difficulty(number)?.unwrap_or_default(),
            senders: tx.senders(number)?.unwrap_or_default(),
            size,
        }))
    }

    /// The block as the executor's tracers take it.
    pub fn as_block_ref(&self) -> quarry_executor::trace::BlockRef<'_> {
        quarry_executor::trace::BlockRef {
            hash: self.hash,
            header: &self.header,
            transactions: &self.body.transactions,
            senders: &self.senders,
            ommers: &self.body.ommers,
            withdrawals: self.body.withdrawals.as_ref().map(|w| w.as_slice()),
        }
    }

    pub fn sender(&self, index: usize) -> Result<Address> {
        self.senders.get(index).copied().ok_or_else(|| {
            RpcError::Storage(quarry_storage::Error::Corrupt(format!(
                "no sender stored for transaction {index} of block {}",
                self.header.number
            )))
        })
    }
}

/// A block's receipts with each one's logs bloom, which is not stored.
#[derive(Debug)]
pub struct BlockReceipts {
    pub list: Vec<StoredReceipt>,
    pub blooms: Vec<Bloom>,
    /// Their encoded size: what the receipt cache's bound counts.
    pub size: usize,
}

impl BlockReceipts {
    /// Block `number`'s receipts as `tx` holds them.
    pub fn read(tx: &ReadTx, number: u64) -> Result<Self> {
        tx.with_receipts(number, |view| Self::decode(&view))?
            .unwrap_or_else(|| Err(not_in_snapshot(number)))
    }

    fn decode(view: &BlockReceiptsView<'_>) -> Result<Self> {
        let list = view.decode_all()?;
        let blooms = list.iter().map(|r| logs_bloom(&r.logs)).collect();
        Ok(Self {
            list,
            blooms,
            size: view.encoded_size(),
        })
    }
}

/// Every stored block has a receipt list (empty without transactions): one missing from a
/// snapshot means it began before the commit that stored a block another snapshot has read.
fn not_in_snapshot(number: u64) -> RpcError {
    RpcError::Storage(quarry_storage::Error::Corrupt(format!(
        "the receipts of block {number} are not in this snapshot yet"
    )))
}

/// What eth_getTransactionReceipt reads of a block whose receipts no cache holds: all of them
/// when they are small, else only the one asked for (`None`: the block has no such receipt).
pub enum ReceiptRead {
    Whole(Arc<BlockReceipts>),
    One(Option<Arc<OneReceipt>>),
}

impl ReceiptRead {
    /// Block `number`'s receipts whole when they take at most `max_whole` encoded bytes, else
    /// receipt `index` alone: one read either way.
    pub fn read(tx: &ReadTx, number: u64, index: usize, max_whole: usize) -> Result<Self> {
        tx.with_receipts(number, |view| {
            if view.encoded_size() <= max_whole {
                return BlockReceipts::decode(&view).map(|all| Self::Whole(Arc::new(all)));
            }
            let Some(receipt) = view.get(index)? else {
                return Ok(Self::One(None));
            };
            let one = OneReceipt::new(receipt.decode()?, receipt.first_log_index as usize);
            Ok(Self::One(Some(Arc::new(one))))
        })?
        .unwrap_or_else(|| Err(not_in_snapshot(number)))
    }
}

/// One receipt read alone, from a block whose receipts are too large to keep whole.
#[derive(Debug)]
pub struct OneReceipt {
    pub receipt: StoredReceipt,
    pub bloom: Bloom,
    /// The block-wide index of its first log.
    pub first_log_index: usize,
    /// About what it holds in memory: what the receipt cache's bound counts.
    pub size: usize,
}

impl OneReceipt {
    pub fn new(receipt: StoredReceipt, first_log_index: usize) -> Self {
        let size = 256
            + receipt
                .logs
                .iter()
                .map(|log| 64 + 32 * log.topics().len() + log.data.data.len())
                .sum::<usize>();
        Self {
            bloom: logs_bloom(&receipt.logs),
            receipt,
            first_log_index,
            size,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum ReceiptKey {
    Block(B256),
    One(B256, usize),
}

#[derive(Debug, Clone)]
enum Receipts {
    Block(Arc<BlockReceipts>),
    One(Arc<OneReceipt>),
}

impl Receipts {
    fn size(&self) -> usize {
        match self {
            Self::Block(receipts) => receipts.size,
            Self::One(receipt) => receipt.size,
        }
    }
}

/// JsonEntries that go oldest first once their sizes add up past a bound; an entry that alone would
/// take more than an eighth of it is not kept.
#[derive(Debug)]
struct Bounded<K, V> {
    max_bytes: usize,
    entries: Mutex<BoundedEntries<K, V>>,
}

#[derive(Debug)]
struct BoundedEntries<K, V> {
    map: HashMap<K, (V, usize)>,
    order: VecDeque<K>,
    bytes: usize,
}

impl<K: Copy + Eq + std::hash::Hash, V: Clone> Bounded<K, V> {
    fn new(max_bytes: usize) -> Self {
        Self {
            max_bytes,
            entries: Mutex::new(BoundedEntries {
                map: HashMap::new(),
                order: VecDeque::new(),
                bytes: 0,
            }),
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, BoundedEntries<K, V>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get(&self, key: &K) -> Option<V> {
        self.entries().map.get(key).map(|(value, _)| value.clone())
    }

    fn insert(&self, key: K, value: V, size: usize) {
        if size > self.max_bytes / 8 {
            return;
        }
        let mut entries = self.entries();
        if entries.map.contains_key(&key) {
            return;
        }
        entries.bytes += size;
        entries.order.push_back(key);
        entries.map.insert(key, (value, size));
        while entries.bytes > self.max_bytes {
            let Some(oldest) = entries.order.pop_front() else {
                break;
            };
            if let Some((_, size)) = entries.map.remove(&oldest) {
                entries.bytes -= size;
            }
        }
    }

    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.entries().bytes
    }
}

/// Decoded receipts by block hash (a block's whole list, or single receipts of a block too large
/// to keep whole), which always names the same block, so entries hold across unwinds; the oldest
/// go first once their size passes the bound. Receipts that alone would take more than an eighth
/// of it are not kept.
#[derive(Debug)]
pub struct ReceiptCache {
    entries: Bounded<ReceiptKey, Receipts>,
}

impl ReceiptCache {
    pub fn new(max_bytes: usize) -> Self {
        Self {
            entries: Bounded::new(max_bytes),
        }
    }

    /// Every receipt of the block `block_hash`.
    pub fn block(&self, block_hash: &B256) -> Option<Arc<BlockReceipts>> {
        match self.entries.get(&ReceiptKey::Block(*block_hash))? {
            Receipts::Block(receipts) => Some(receipts),
            Receipts::One(_) => None,
        }
    }

    /// The receipt of transaction `index` of block `block_hash`, kept alone.
    pub fn one(&self, block_hash: &B256, index: usize) -> Option<Arc<OneReceipt>> {
        match self.entries.get(&ReceiptKey::One(*block_hash, index))? {
            Receipts::One(receipt) => Some(receipt),
            Receipts::Block(_) => None,
        }
    }

    pub fn insert_block(&self, block_hash: B256, receipts: Arc<BlockReceipts>) {
        self.insert(ReceiptKey::Block(block_hash), Receipts::Block(receipts));
    }

    pub fn insert_one(&self, block_hash: B256, index: usize, receipt: Arc<OneReceipt>) {
        self.insert(ReceiptKey::One(block_hash, index), Receipts::One(receipt));
    }

    fn insert(&self, key: ReceiptKey, receipts: Receipts) {
        let size = receipts.size();
        self.entries.insert(key, receipts, size);
    }

    /// The bytes held.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.entries.bytes()
    }
}

/// An answer already serialized, shared by every request that gets it.
#[derive(Debug, Clone)]
pub struct Json(Arc<RawValue>);

impl serde::Serialize for Json {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// What a serialized answer is of: a block's JSON (with hashes or full transactions), one of
/// its transactions, or one of its receipts, by block hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JsonKey {
    Block { hash: B256, full: bool },
    Transaction { block: B256, index: usize },
    Receipt { block: B256, index: usize },
}

/// Answers of the block, transaction and receipt methods as sent, by block hash: a hash names
/// the same block on every chain, so, like the receipt cache, entries hold across unwinds (a
/// request by number or tag finds its block's hash first, on the chain it reads). The oldest
/// go first once their size passes the bound.
#[derive(Debug)]
pub struct JsonCache {
    entries: Bounded<JsonKey, Json>,
}

impl JsonCache {
    pub fn new(max_bytes: usize) -> Self {
        Self {
            entries: Bounded::new(max_bytes),
        }
    }

    pub fn get(&self, key: &JsonKey) -> Option<Json> {
        self.entries.get(key)
    }

    /// The answer for `key`: kept, or made by `make`, serialized, and kept.
    pub fn get_or_make<T: serde::Serialize>(
        &self,
        key: JsonKey,
        make: impl FnOnce() -> Result<T>,
    ) -> Result<Json> {
        match self.entries.get(&key) {
            Some(json) => Ok(json),
            None => self.keep(key, &make()?),
        }
    }

    /// Serializes `answer`, the answer for `key`, and keeps it.
    pub fn keep(&self, key: JsonKey, answer: &impl serde::Serialize) -> Result<Json> {
        let raw = serde_json::value::to_raw_value(answer)
            .map_err(|e| RpcError::Internal(format!("cannot serialize an answer: {e}")))?;
        let size = raw.get().len() + 64;
        let json = Json(Arc::from(raw));
        self.entries.insert(key, json.clone(), size);
        Ok(json)
    }
}

/// Blocks by number, with indexes by block hash and transaction hash, all of one chain (one
/// unwind count, see the module doc); the oldest entries go first once the blocks' total size
/// passes the bound.
#[derive(Debug)]
pub struct BlockCache {
    max_bytes: usize,
    entries: Mutex<JsonEntries>,
}

#[derive(Debug, Default)]
struct JsonEntries {
    by_number: HashMap<u64, Arc<CachedBlock>>,
    by_hash: HashMap<B256, u64>,
    /// Transaction hash to (block number, index).
    transactions: HashMap<B256, (u64, usize)>,
    order: VecDeque<u64>,
    bytes: usize,
}

impl BlockCache {
    pub fn new(max_bytes: usize) -> Self {
        Self {
            max_bytes,
            entries: Mutex::default(),
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, JsonEntries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn by_number(&self, number: u64) -> Option<Arc<CachedBlock>> {
        self.entries().by_number.get(&number).cloned()
    }

    pub fn by_hash(&self, hash: &B256) -> Option<Arc<CachedBlock>> {
        let entries = self.entries();
        let number = entries.by_hash.get(hash)?;
        entries.by_number.get(number).cloned()
    }

    /// The block holding transaction `hash`, and the transaction's index in it.
    pub fn by_transaction(&self, hash: &B256) -> Option<(Arc<CachedBlock>, usize)> {
        let entries = self.entries();
        let (number, index) = entries.transactions.get(hash)?;
        Some((entries.by_number.get(number)?.clone(), *index))
    }

    pub fn insert(&self, block: Arc<CachedBlock>) {
        let mut entries = self.entries();
        let number = block.header.number;
        if entries.by_number.contains_key(&number) {
            return;
        }
        entries.by_hash.insert(block.hash, number);
        for (index, tx) in block.body.transactions.iter().enumerate() {
            entries.transactions.insert(*tx.tx_hash(), (number, index));
        }
        entries.bytes += block.size;
        entries.order.push_back(number);
        entries.by_number.insert(number, block);
        while entries.bytes > self.max_bytes && entries.order.len() > 1 {
            let Some(oldest) = entries.order.pop_front() else {
                break;
            };
            if let Some(evicted) = entries.by_number.remove(&oldest) {
                entries.bytes -= evicted.size;
                entries.by_hash.remove(&evicted.hash);
                for tx in &evicted.body.transactions {
                    entries.transactions.remove(tx.tx_hash());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipts(size: usize) -> Arc<BlockReceipts> {
        Arc::new(BlockReceipts {
            list: Vec::new(),
            blooms: Vec::new(),
            size,
        })
    }

    #[test]
    fn the_receipt_cache_keeps_its_byte_bound_and_skips_blocks_too_large_for_it() {
        let cache = ReceiptCache::new(8000);
        let hash = |i: u8| B256::repeat_byte(i);
        for i in 0..10 {
            cache.insert_block(hash(i), receipts(1000));
        }
        assert_eq!(cache.bytes(), 8000);
        assert!(cache.block(&hash(1)).is_none(), "the oldest went first");
        assert!(cache.block(&hash(9)).is_some());
        cache.insert_block(hash(20), receipts(1001));
        assert!(
            cache.block(&hash(20)).is_none(),
            "over an eighth of the bound"
        );
        assert_eq!(cache.bytes(), 8000);
        // A single receipt of a block is kept apart from the block's list.
        let one = OneReceipt::new(
            StoredReceipt {
                tx_type: 2,
                outcome: quarry_storage::ReceiptOutcome::Status(true),
                cumulative_gas_used: 1,
                gas_used: 1,
                effective_gas_price: 1,
                contract_address: None,
                blob_gas: None,
                logs: Vec::new(),
            },
            3,
        );
        cache.insert_one(hash(9), 4, Arc::new(one));
        assert_eq!(cache.one(&hash(9), 4).unwrap().first_log_index, 3);
        assert!(cache.one(&hash(9), 5).is_none());
        assert!(cache.block(&hash(9)).is_some());
        assert_eq!(cache.bytes(), 7256, "the oldest list made room");
    }

    #[test]
    fn answers_are_made_once_per_block_hash_and_kept_within_the_bound() {
        let cache = JsonCache::new(8 * 1000);
        let key = |i: u8| JsonKey::Block {
            hash: B256::repeat_byte(i),
            full: false,
        };
        let made = std::cell::Cell::new(0);
        let make = |text: &str| {
            made.set(made.get() + 1);
            Ok(text.to_string())
        };
        let first = cache.get_or_make(key(1), || make("one")).unwrap();
        let again = cache.get_or_make(key(1), || make("other")).unwrap();
        assert_eq!(serde_json::to_string(&first).unwrap(), r#""one""#);
        assert_eq!(serde_json::to_string(&again).unwrap(), r#""one""#);
        assert_eq!(made.get(), 1, "the second request is answered from memory");
        let full = JsonKey::Block {
            hash: B256::repeat_byte(1),
            full: true,
        };
        assert!(cache.get(&full).is_none(), "full blocks are another answer");
        // A failed answer is not kept.
        assert!(
            cache
                .get_or_make(key(2), || Err::<String, _>(RpcError::HeaderNotFound))
                .is_err()
        );
        assert!(cache.get(&key(2)).is_none());
        // 930 bytes each (with the entry's overhead): eight fit, the oldest go first.
        let big = "x".repeat(864);
        for i in 10..30 {
            cache.get_or_make(key(i), || make(&big)).unwrap();
        }
        assert!(cache.entries.bytes() <= 8000);
        assert!(cache.get(&key(10)).is_none());
        assert!(cache.get(&key(29)).is_some());
        // Over an eighth of the bound: answered, not kept.
        let huge = "x".repeat(2000);
        cache.get_or_make(key(40), || make(&huge)).unwrap();
        assert!(cache.get(&key(40)).is_none());
    }
}
