//! Per-key block lists: for each account and each storage slot, the blocks whose changesets
//! hold it (`AccountChangeLists`, `StorageChangeLists`: the state history, as reth and Erigon
//! keep their history indices), and for each address, the blocks whose call frames name it
//! (`TraceAddressLists`: the trace index's lists, trace_index.rs), and for each log topic and
//! position, the blocks holding a log with it there (`LogTopicLists`, log_index.rs). A key's list is cut into shards of at most [`SHARD_BLOCKS`] blocks,
//! each a serialized roaring bitmap or a list of varint deltas, whichever is shorter
//! ([`encode_shard`]), keyed by the key's hash and the shard's highest block (the
//! last shard by `u64::MAX`), so one seek at (hashed key, N + 1) lands on the shard holding the
//! key's first change after block N. That block's changeset entry is the value before it, so the
//! value after N: two seeks, however far back N is. No change after N: the latest value.
//!
//! A write transaction stages the blocks of each changed key and merges them into the key's
//! last shard once per flush (at the latest on commit), not once per change. An unwind takes
//! its blocks out of the lists; `quarry migrate` builds them from the changesets of a datadir
//! whose state history was the leaf history (`hashed_accounts_history`,
//! `hashed_storages_history`), and then empties those tables (state_lists_migrate.rs).

use crate::{
    Error, Result, StorageTx, StoredAccount, Table, history::changesets::AccountBefore, slot_key,
    state::trie::hashed_slot_key,
};
use alloy_primitives::{Address, B256, U256, keccak256, map::HashMap};
use roaring::RoaringBitmap;
use signet_libmdbx::{RwSync, TransactionKind, WriteFlags, tx::Cursor};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The most blocks one shard lists: a hot account's shard stays a few kilobytes, read whole.
pub(crate) const SHARD_BLOCKS: u64 = 2_000;
/// The block part of the key of a list's last shard, the one new blocks go to.
const OPEN_SHARD: u64 = u64::MAX;
/// How many keys a write transaction stages before it merges them into their lists: a bound
/// on their memory (about 150 bytes each) that still spans many blocks.
const STAGED_LIST_KEYS: usize = 1 << 17;

/// Which lists: the accounts' or the storage slots' changes, or the trace index's addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lists {
    Accounts,
    Storages,
    /// Keyed by the plain address (trace_filter seeks addresses, not hashes), so a shard's
    /// value is the bitmap alone.
    Traces,
    /// The log index's topics: keyed by the topic and its position in a log (log_index.rs),
    /// the value the bitmap alone.
    Topics,
}

impl Lists {
    pub(crate) fn table(self) -> Table {
        match self {
            Lists::Accounts => Table::AccountChangeLists,
            Lists::Storages => Table::StorageChangeLists,
            Lists::Traces => Table::TraceAddressLists,
            Lists::Topics => Table::LogTopicLists,
        }
    }

    /// The plain key's length, as the changesets hold it after the block.
    pub(crate) fn plain_len(self) -> usize {
        match self {
            Lists::Accounts => 20,
            Lists::Storages => 52,
            Lists::Traces | Lists::Topics => 0,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A shard's key: the hashed key, then the shard's highest block (u64 BE).
pub(crate) fn shard_key(hashed: &[u8], highest: u64) -> Vec<u8> {
    [hashed, &highest.to_be_bytes()].concat()
}

/// A block number as the lists hold it.
fn list_block(block: u64) -> Result<u32> {
    u32::try_from(block).map_err(|_| Error::BlockBeyondLists(block))
}

/// The first byte of a list's delta encoding. A serialized roaring bitmap starts with its
/// cookie, 12,346 or 12,347 little-endian (0x3a or 0x3b), never with this.
const DELTA_LIST: u8 = 0;

/// A shard's value: the plain key, then the blocks, in whichever of two encodings is shorter:
/// a serialized roaring bitmap, or [`DELTA_LIST`] then the first block and each difference
/// from the one before as LEB128 varints. Most keys change in a few blocks, where the bitmap's
/// 16 bytes of header weigh more than the blocks (a one-block list: 18 bytes against 4).
fn encode_shard(plain: &[u8], blocks: &mut RoaringBitmap) -> Result<Vec<u8>> {
    // Runs (a key changed in consecutive blocks) as run containers where that is smaller.
    blocks.optimize();
    let mut deltas = vec![DELTA_LIST];
    let mut previous = 0;
    for block in blocks.iter() {
        push_varint(&mut deltas, block - previous);
        previous = block;
    }
    let bitmap_len = blocks.serialized_size();
    let mut out = Vec::with_capacity(plain.len() + bitmap_len.min(deltas.len()));
    out.extend_from_slice(plain);
    if deltas.len() <= bitmap_len {
        out.extend_from_slice(&deltas);
    } else {
        blocks
            .serialize_into(&mut out)
            .map_err(|e| Error::Corrupt(format!("cannot serialize a block list: {e}")))?;
    }
    Ok(out)
}

/// Appends `value` as an LEB128 varint: seven bits a byte, low bits first, the high bit set on
/// every byte but the last.
fn push_varint(out: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// The blocks of a [`DELTA_LIST`] encoding (after its first byte), in order: each `None` where
/// the encoding is cut short, overflows or does not ascend (and nothing after it).
struct Deltas<'v> {
    bytes: &'v [u8],
    previous: Option<u32>,
}

impl<'v> Deltas<'v> {
    fn new(bytes: &'v [u8]) -> Self {
        Self {
            bytes,
            previous: None,
        }
    }

    /// The next varint, or `None` when it is cut short or overflows.
    fn varint(&mut self) -> Option<u32> {
        let (mut value, mut shift) = (0u32, 0u32);
        loop {
            let (&byte, rest) = self.bytes.split_first()?;
            self.bytes = rest;
            let bits = u32::from(byte & 0x7f);
            if shift > 28 || (shift == 28 && bits > 0xf) {
                return None;
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
            shift += 7;
        }
    }
}

impl Iterator for Deltas<'_> {
    type Item = Option<u32>;

    fn next(&mut self) -> Option<Option<u32>> {
        if self.bytes.is_empty() {
            return None;
        }
        let block = self.varint().and_then(|value| match self.previous {
            None => Some(value),
            Some(_) if value == 0 => None,
            Some(previous) => previous.checked_add(value),
        });
        match block {
            Some(block) => self.previous = Some(block),
            // Nothing after a malformed varint can be read.
            None => self.bytes = &[],
        }
        Some(block)
    }
}

/// The blocks of a [`DELTA_LIST`] encoding (after its first byte); `None` when it is cut
/// short, overflows or is not ascending.
fn decode_deltas(bytes: &[u8]) -> Option<RoaringBitmap> {
    let blocks: Option<Vec<u32>> = Deltas::new(bytes).collect();
    RoaringBitmap::from_sorted_iter(blocks?).ok()
}

/// A shard's blocks as stored, in one of [`encode_shard`]'s two encodings.
enum ShardBlocks<'v> {
    /// [`DELTA_LIST`]'s varints (after that byte).
    Deltas(&'v [u8]),
    /// A serialized roaring bitmap.
    Bitmap(&'v [u8]),
}

/// The error for a malformed shard of `lists` at `key`.
fn corrupt_shard(lists: Lists, key: &[u8], what: &str) -> Error {
    Error::Corrupt(format!(
        "{} shard {}: {what}",
        lists.table().name(),
        alloy_primitives::hex::encode(key)
    ))
}

/// A shard's plain key and its blocks as stored; `key` names it in errors.
fn split_shard<'v>(
    lists: Lists,
    key: &[u8],
    value: &'v [u8],
) -> Result<(&'v [u8], ShardBlocks<'v>)> {
    let (plain, blocks) = value
        .split_at_checked(lists.plain_len())
        .ok_or_else(|| corrupt_shard(lists, key, "shorter than its plain key"))?;
    Ok(match blocks.split_first() {
        Some((&DELTA_LIST, deltas)) => (plain, ShardBlocks::Deltas(deltas)),
        _ => (plain, ShardBlocks::Bitmap(blocks)),
    })
}

/// What a malformed [`DELTA_LIST`] encoding is reported as.
const MALFORMED_DELTAS: &str = "a malformed list of block deltas";

/// The blocks of a shard, split by [`split_shard`]; `key` names it in errors.
fn decode_blocks(lists: Lists, key: &[u8], blocks: ShardBlocks<'_>) -> Result<RoaringBitmap> {
    match blocks {
        ShardBlocks::Deltas(deltas) => {
            decode_deltas(deltas).ok_or_else(|| corrupt_shard(lists, key, MALFORMED_DELTAS))
        }
        ShardBlocks::Bitmap(bitmap) => RoaringBitmap::deserialize_from(bitmap)
            .map_err(|e| corrupt_shard(lists, key, &e.to_string())),
    }
}

/// A shard's plain key and blocks; `key` names it in errors.
fn decode_shard<'v>(
    lists: Lists,
    key: &[u8],
    value: &'v [u8],
) -> Result<(&'v [u8], RoaringBitmap)> {
    let (plain, blocks) = split_shard(lists, key, value)?;
    Ok((plain, decode_blocks(lists, key, blocks)?))
}

/// A shard's plain key and its first block after `block`. A delta list (most keys' shards)
/// is read only up to that block, without building its bitmap: a historical read asks one
/// block of a list, and building the whole list was most of the read's own work.
fn shard_first_after<'v>(
    lists: Lists,
    key: &[u8],
    value: &'v [u8],
    block: u64,
) -> Result<(&'v [u8], Option<u64>)> {
    let (plain, blocks) = split_shard(lists, key, value)?;
    let ShardBlocks::Deltas(deltas) = blocks else {
        return Ok((
            plain,
            first_after(&decode_blocks(lists, key, blocks)?, block),
        ));
    };
    for listed in Deltas::new(deltas) {
        let listed = listed.ok_or_else(|| corrupt_shard(lists, key, MALFORMED_DELTAS))?;
        if u64::from(listed) > block {
            return Ok((plain, Some(u64::from(listed))));
        }
    }
    Ok((plain, None))
}

/// The first block in `blocks` after `block`.
fn first_after(blocks: &RoaringBitmap, block: u64) -> Option<u64> {
    let Ok(block) = u32::try_from(block) else {
        return None;
    };
    let rank = u32::try_from(blocks.rank(block)).ok()?;
    blocks.select(rank).map(u64::from)
}

/// A key's staged blocks, in the order staged (block order), with its plain key.
struct StagedList {
    plain: Vec<u8>,
    blocks: Vec<u32>,
}

/// Blocks a write transaction staged for the lists, by table and hashed key. Hashed: a block
/// stages a key per changed slot, log topic and traced address, and a B-tree's search compared
/// whole keys at every level; the keys are put in order once, when they are written.
#[derive(Default)]
struct ListMaps {
    lists: [HashMap<Vec<u8>, StagedList>; 4],
    keys: usize,
    /// The last address hashed for a slot key (a block's slots come account by account).
    last_address: Option<(Address, B256)>,
}

/// The lists' staged blocks of a write transaction (see the module's documentation).
#[derive(Default)]
pub(crate) struct StagedLists(Mutex<ListMaps>);

impl StagedLists {
    fn lock(&self) -> MutexGuard<'_, ListMaps> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether blocks are staged (the lists then miss them).
    pub(crate) fn holds_blocks(&self) -> bool {
        self.lock().keys > 0
    }

    /// Stages `block` in the list of `hashed`; true when enough keys are staged to write them.
    fn stage(&self, lists: Lists, hashed: &[u8], plain: &[u8], block: u32) -> bool {
        let mut maps = self.lock();
        let added = match maps.lists[lists.index()].get_mut(hashed) {
            Some(staged) => {
                if staged.blocks.last() != Some(&block) {
                    staged.blocks.push(block);
                }
                false
            }
            None => {
                let staged = StagedList {
                    plain: plain.to_vec(),
                    blocks: vec![block],
                };
                maps.lists[lists.index()].insert(hashed.to_vec(), staged);
                true
            }
        };
        maps.keys += usize::from(added);
        maps.keys >= STAGED_LIST_KEYS
    }

    /// The staged keys of `lists`, in key order, with their blocks.
    fn take(&self, lists: Lists) -> Vec<(Vec<u8>, StagedList)> {
        let taken = {
            let mut maps = self.lock();
            let taken = std::mem::take(&mut maps.lists[lists.index()]);
            maps.keys = maps.keys.saturating_sub(taken.len());
            taken
        };
        let mut sorted: Vec<(Vec<u8>, StagedList)> = taken.into_iter().collect();
        sorted.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        sorted
    }
}

impl<K: TransactionKind> StorageTx<K> {
    /// The first block after `block` whose changeset holds the key hashed to `hashed`, and the
    /// key's plain form (`None`: nothing changed it since). `lookup` is a cursor over `lists`'
    /// table.
    pub(crate) fn first_change_after(
        &self,
        lookup: &mut Cursor<'_, K>,
        lists: Lists,
        hashed: &[u8],
        block: u64,
    ) -> Result<Option<(u64, Vec<u8>)>> {
        self.check_history_written()?;
        let seek = shard_key(hashed, block.saturating_add(1));
        let Some((key, value)) = lookup.set_range::<Vec<u8>, Vec<u8>>(&seek)? else {
            return Ok(None);
        };
        if key.len() != seek.len() || !key.starts_with(hashed) {
            return Ok(None);
        }
        let (plain, first) = shard_first_after(lists, &key, &value, block)?;
        Ok(first.map(|first| (first, plain.to_vec())))
    }

    /// An account after `block` from the lists: `None` when no later block changed it (the
    /// latest account holds), else the first block that did, the address, and that block's
    /// changeset entry: the account then (`None`: it did not exist) and what the entry records
    /// of its storage root.
    pub(crate) fn listed_account_after(
        &self,
        lookup: &mut Cursor<'_, K>,
        hashed: &B256,
        block: u64,
    ) -> Result<Option<(u64, Address, AccountBefore)>> {
        let Some((first, plain)) =
            self.first_change_after(lookup, Lists::Accounts, hashed.as_slice(), block)?
        else {
            return Ok(None);
        };
        let address = Address::from_slice(&plain);
        match self.account_changeset_entry(first, &address)? {
            Some(before) => Ok(Some((first, address, before))),
            None => Err(unlisted(Lists::Accounts, &plain, first)),
        }
    }

    /// A slot's value after `block` from the lists: `None` when no later block changed it,
    /// else its value then (zero: unset).
    pub(crate) fn listed_slot_after(
        &self,
        lookup: &mut Cursor<'_, K>,
        hashed: &[u8],
        block: u64,
    ) -> Result<Option<U256>> {
        let Some((first, plain)) =
            self.first_change_after(lookup, Lists::Storages, hashed, block)?
        else {
            return Ok(None);
        };
        match self.slot_changeset_entry(first, &plain)? {
            Some(before) => Ok(Some(before)),
            None => Err(unlisted(Lists::Storages, &plain, first)),
        }
    }

    /// Every slot of `address` that blocks `block + 1` through `upto` changed, with its value
    /// after `block`: `reverts_between` for one account, at a cost that follows that account's
    /// changes (the blocks its list names; a block that changes a slot also lists its
    /// account), not every account's.
    pub fn account_slot_reverts(
        &self,
        address: &Address,
        block: u64,
        upto: u64,
    ) -> Result<BTreeMap<B256, U256>> {
        self.check_state_kept(block)?;
        let mut blocks = Vec::new();
        let mut cursor = self.list_cursor(Lists::Accounts)?;
        let hashed = keccak256(address);
        let range = (block.saturating_add(1), upto);
        self.listed_blocks(
            &mut cursor,
            Lists::Accounts,
            hashed.as_slice(),
            range,
            &mut blocks,
        )?;
        let mut reverts = BTreeMap::new();
        // From the latest block down, so that the oldest block's "before" values are kept.
        for number in blocks.into_iter().rev() {
            reverts.extend(self.account_storage_changeset(number, address)?);
        }
        Ok(reverts)
    }

    /// A cursor over `lists`' table.
    pub(crate) fn list_cursor(&self, lists: Lists) -> Result<Cursor<'_, K>> {
        Ok(self.tx.cursor(self.db(lists.table()))?)
    }

    /// Appends to `out` the blocks of `from..=to` in the list of `key`, ascending: the shards
    /// from the one holding `from` on, until one reaches past `to`. `cursor` is over `lists`'
    /// table.
    pub(crate) fn listed_blocks(
        &self,
        cursor: &mut Cursor<'_, K>,
        lists: Lists,
        key: &[u8],
        (from, to): (u64, u64),
        out: &mut Vec<u64>,
    ) -> Result<()> {
        let (Ok(low), high) = (u32::try_from(from), u32::try_from(to).unwrap_or(u32::MAX)) else {
            return Ok(());
        };
        let mut entry = cursor.set_range::<Vec<u8>, Vec<u8>>(&shard_key(key, from))?;
        while let Some((shard, value)) = entry {
            if shard.len() != key.len() + 8 || !shard.starts_with(key) {
                break;
            }
            let (_, blocks) = decode_shard(lists, &shard, &value)?;
            out.extend(blocks.range(low..=high).map(u64::from));
            if blocks.max().is_none_or(|max| max >= high) {
                break;
            }
            entry = cursor.next::<Vec<u8>, Vec<u8>>()?;
        }
        Ok(())
    }
}

/// A list names a block whose changeset lacks its key.
fn unlisted(lists: Lists, plain: &[u8], block: u64) -> Error {
    Error::Corrupt(format!(
        "{} lists block {block} for {}, whose changeset has no entry for it",
        lists.table().name(),
        alloy_primitives::hex::encode(plain)
    ))
}

impl StorageTx<RwSync> {
    /// Lists `block` for the account `address` (its changeset holds it), hashed to `hashed`.
    pub(crate) fn list_account_change(
        &self,
        block: u64,
        address: &Address,
        hashed: &B256,
    ) -> Result<()> {
        self.stage_list_block(
            Lists::Accounts,
            hashed.as_slice(),
            address.as_slice(),
            block,
        )
    }

    /// Lists `block` under `key` in one of the indexes' lists (`Traces`, `Topics`), whose
    /// values hold no plain key.
    pub(crate) fn list_indexed_block(&self, lists: Lists, key: &[u8], block: u64) -> Result<()> {
        self.stage_list_block(lists, key, &[], block)
    }

    /// Lists `block` for the slot `slot` of `address`.
    pub(crate) fn list_slot_change(
        &self,
        block: u64,
        address: &Address,
        slot: &B256,
    ) -> Result<()> {
        let hashed_address = {
            let mut maps = self.staged_lists.lock();
            match maps.last_address {
                Some((last, hashed)) if last == *address => hashed,
                _ => {
                    let hashed = keccak256(address);
                    maps.last_address = Some((*address, hashed));
                    hashed
                }
            }
        };
        let hashed = hashed_slot_key(&hashed_address, &keccak256(slot));
        self.stage_list_block(Lists::Storages, &hashed, &slot_key(address, slot), block)
    }

    fn stage_list_block(
        &self,
        lists: Lists,
        hashed: &[u8],
        plain: &[u8],
        block: u64,
    ) -> Result<()> {
        if self
            .staged_lists
            .stage(lists, hashed, plain, list_block(block)?)
        {
            self.write_staged_lists()?;
        }
        Ok(())
    }

    /// Merges every staged block into its key's last shard, key by key in table order.
    pub(crate) fn write_staged_lists(&self) -> Result<()> {
        for lists in [
            Lists::Accounts,
            Lists::Storages,
            Lists::Traces,
            Lists::Topics,
        ] {
            let staged = self.staged_lists.take(lists);
            if staged.is_empty() {
                continue;
            }
            let mut cursor = self.tx.cursor(self.db(lists.table()))?;
            for (hashed, list) in staged {
                self.append_to_list(&mut cursor, lists, &hashed, &list.plain, &list.blocks)?;
            }
        }
        Ok(())
    }

    /// Adds `blocks` (all after the key's listed ones) to the list of `hashed`: its last shard
    /// with them, cut into shards of [`SHARD_BLOCKS`], the full ones keyed by their highest
    /// block and the rest by [`OPEN_SHARD`].
    fn append_to_list(
        &self,
        cursor: &mut Cursor<'_, RwSync>,
        lists: Lists,
        hashed: &[u8],
        plain: &[u8],
        blocks: &[u32],
    ) -> Result<()> {
        let open = shard_key(hashed, OPEN_SHARD);
        let last = match cursor.set_range::<Vec<u8>, Vec<u8>>(&open)? {
            Some((key, value)) if key == open => Some((key, value)),
            Some(_) => cursor.prev::<Vec<u8>, Vec<u8>>()?,
            None => cursor.last::<Vec<u8>, Vec<u8>>()?,
        }
        .filter(|(key, _)| key.len() == open.len() && key.starts_with(hashed));
        let mut list = match &last {
            Some((key, value)) => {
                let (stored_plain, list) = decode_shard(lists, key, value)?;
                if stored_plain != plain {
                    return Err(Error::Corrupt(format!(
                        "{} shard {} is of another plain key",
                        lists.table().name(),
                        alloy_primitives::hex::encode(key)
                    )));
                }
                if key != &open {
                    cursor.del()?;
                }
                list
            }
            None => RoaringBitmap::new(),
        };
        list.extend(blocks.iter().copied());
        while list.len() > SHARD_BLOCKS {
            let full = RoaringBitmap::from_sorted_iter(list.iter().take(SHARD_BLOCKS as usize))
                .map_err(|e| Error::Corrupt(format!("cannot cut a block list: {e}")))?;
            list.remove_smallest(SHARD_BLOCKS);
            let mut full = full;
            let highest = full.max().map_or(0, u64::from);
            let value = encode_shard(plain, &mut full)?;
            cursor.put(&shard_key(hashed, highest), &value, WriteFlags::empty())?;
        }
        if list.is_empty() {
            if cursor.set::<()>(&open)?.is_some() {
                cursor.del()?;
            }
            return Ok(());
        }
        let value = encode_shard(plain, &mut list)?;
        cursor.put(&open, &value, WriteFlags::empty())?;
        Ok(())
    }

    /// Takes block `block`, an unwound one, out of the list of `hashed`.
    pub(crate) fn unlist_block(&self, lists: Lists, hashed: &[u8], block: u64) -> Result<()> {
        let mut cursor = self.tx.cursor(self.db(lists.table()))?;
        let seek = shard_key(hashed, block);
        let Some((key, value)) = cursor
            .set_range::<Vec<u8>, Vec<u8>>(&seek)?
            .filter(|(key, _)| key.len() == seek.len() && key.starts_with(hashed))
        else {
            return Ok(());
        };
        let (plain, mut list) = decode_shard(lists, &key, &value)?;
        if !list.remove(list_block(block)?) {
            return Ok(());
        }
        if list.is_empty() {
            cursor.del()?;
        } else {
            let value = encode_shard(plain, &mut list)?;
            cursor.put(&key, &value, WriteFlags::CURRENT)?;
        }
        Ok(())
    }

    /// Takes block `number`'s changes out of the lists: `accounts` and `slots` are its
    /// changesets.
    pub(crate) fn unlist_changesets(
        &self,
        number: u64,
        accounts: &[(Address, Option<StoredAccount>)],
        slots: &[(Address, B256, U256)],
    ) -> Result<()> {
        for (address, _) in accounts {
            self.unlist_block(Lists::Accounts, keccak256(address).as_slice(), number)?;
        }
        for (address, slot, _) in slots {
            let hashed = hashed_slot_key(&keccak256(address), &keccak256(slot));
            self.unlist_block(Lists::Storages, &hashed, number)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Database;
    use crate::models::be_u64;

    /// Every list comes back from its shard value as it went in, in the shorter encoding:
    /// deltas for a few blocks or sparse ones, the bitmap for runs; values in either encoding
    /// read alike (datadirs written before hold bitmaps only).
    #[test]
    fn shards_take_the_shorter_encoding_and_read_back() {
        let plain = [9u8; 52];
        let cases: Vec<(Vec<u32>, bool)> = vec![
            (vec![0], true),
            (vec![5], true),
            (vec![u32::MAX], true),
            (vec![17, 300_000, 300_001, 24_000_000], true),
            ((0..2_000).map(|i| i * 997).collect(), true),
            ((100..2_100).collect(), false),
            (vec![0, u32::MAX], true),
        ];
        for (blocks, deltas) in cases {
            let mut bitmap = RoaringBitmap::from_sorted_iter(blocks.iter().copied()).unwrap();
            let value = encode_shard(&plain, &mut bitmap).unwrap();
            assert_eq!(&value[..52], &plain);
            assert_eq!(value[52] == DELTA_LIST, deltas, "{} blocks", blocks.len());
            assert!(value.len() - 52 <= bitmap.serialized_size());
            let (read_plain, read) = decode_shard(Lists::Storages, b"k", &value).unwrap();
            assert_eq!(read_plain, &plain);
            assert_eq!(read.iter().collect::<Vec<_>>(), blocks);
            let mut serialized = plain.to_vec();
            bitmap.serialize_into(&mut serialized).unwrap();
            let (_, old) = decode_shard(Lists::Storages, b"k", &serialized).unwrap();
            assert_eq!(old, read);
            // The first block after any block, read from either encoding without decoding the
            // whole list, is the decoded list's.
            let mut asked: Vec<u64> = vec![0, u64::from(u32::MAX), u64::MAX];
            for block in blocks.iter().take(50).chain(blocks.iter().rev().take(50)) {
                let block = u64::from(*block);
                asked.extend([block.saturating_sub(1), block, block + 1]);
            }
            for block in asked {
                let expected = first_after(&read, block);
                for stored in [&value, &serialized] {
                    let (read_plain, first) =
                        shard_first_after(Lists::Storages, b"k", stored, block).unwrap();
                    assert_eq!(read_plain, &plain);
                    assert_eq!(first, expected, "after {block} in {} blocks", blocks.len());
                }
            }
        }
        let one = encode_shard(&[], &mut RoaringBitmap::from_iter([20_000u32])).unwrap();
        assert_eq!(one, [DELTA_LIST, 0xa0, 0x9c, 0x01]);
        for malformed in [
            vec![DELTA_LIST, 0x80],
            vec![DELTA_LIST, 5, 0],
            vec![DELTA_LIST, 0xff, 0xff, 0xff, 0xff, 0x1f],
            vec![DELTA_LIST, 0xff, 0xff, 0xff, 0xff, 0x0f, 1],
        ] {
            let error = decode_shard(Lists::Topics, b"k", &malformed).unwrap_err();
            assert!(error.to_string().contains("malformed"), "{error}");
            let error = shard_first_after(Lists::Topics, b"k", &malformed, u64::MAX).unwrap_err();
            assert!(error.to_string().contains("malformed"), "{error}");
        }
        // A scan stops at the block it looks for: what lies after it is not read.
        let cut = [DELTA_LIST, 5, 0x80];
        let (_, first) = shard_first_after(Lists::Topics, b"k", &cut, 4).unwrap();
        assert_eq!(first, Some(5));
    }

    fn listed(tx: &StorageTx<impl TransactionKind>, hashed: &[u8]) -> Vec<(u64, Vec<u32>)> {
        let mut cursor = tx.list_cursor(Lists::Accounts).unwrap();
        let mut out = Vec::new();
        let mut entry = cursor.set_range::<Vec<u8>, Vec<u8>>(hashed).unwrap();
        while let Some((key, value)) = entry.filter(|(key, _)| key.starts_with(hashed)) {
            let (_, blocks) = decode_shard(Lists::Accounts, &key, &value).unwrap();
            out.push((be_u64(&key[32..]).unwrap(), blocks.iter().collect()));
            entry = cursor.next::<Vec<u8>, Vec<u8>>().unwrap();
        }
        out
    }

    /// Blocks staged over several commits fill shards of `SHARD_BLOCKS`, the full ones keyed
    /// by their highest block; the first change after any block is found, and unwinding blocks
    /// takes them out (a shard left empty goes, and the next appends extend the last shard).
    #[test]
    fn lists_shard_find_the_next_change_and_unwind() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let address = Address::repeat_byte(7);
        let hashed = keccak256(address);
        let blocks: Vec<u64> = (1..=5_000).filter(|b| b % 3 != 0).collect();
        for chunk in blocks.chunks(700) {
            let tx = db.writer().unwrap();
            for block in chunk {
                tx.list_account_change(*block, &address, &keccak256(address))
                    .unwrap();
            }
            tx.commit().unwrap();
        }
        let rx = db.reader().unwrap();
        let shards = listed(&rx, hashed.as_slice());
        let keys: Vec<u64> = shards.iter().map(|(key, _)| *key).collect();
        assert_eq!(keys, vec![blocks[1_999], u64::MAX]);
        assert_eq!(shards[0].1.len(), 2_000);
        assert_eq!(shards[1].1.len(), blocks.len() - 2_000);
        let mut lookup = rx.list_cursor(Lists::Accounts).unwrap();
        for block in [0, 1, 2, 3, 2_999, 3_000, 3_001, 4_999, 5_000, u64::MAX] {
            let expected = blocks.iter().copied().find(|b| *b > block);
            let found = rx
                .first_change_after(&mut lookup, Lists::Accounts, hashed.as_slice(), block)
                .unwrap();
            assert_eq!(found.as_ref().map(|f| f.0), expected, "after {block}");
            if let Some((_, plain)) = found {
                assert_eq!(plain, address.as_slice());
            }
        }
        drop(lookup);
        drop(rx);

        // Unwind everything after the first shard, and one block more.
        let tx = db.writer().unwrap();
        for block in blocks[1_999..].iter().rev() {
            tx.unlist_block(Lists::Accounts, hashed.as_slice(), *block)
                .unwrap();
        }
        tx.commit().unwrap();
        let rx = db.reader().unwrap();
        let shards = listed(&rx, hashed.as_slice());
        assert_eq!(shards.len(), 1);
        assert_eq!(shards[0].0, blocks[1_999]);
        assert_eq!(shards[0].1.len(), 1_999);
        drop(rx);
        // New blocks extend the closed shard, which is cut again.
        let tx = db.writer().unwrap();
        for block in 6_000..6_010 {
            tx.list_account_change(block, &address, &keccak256(address))
                .unwrap();
        }
        tx.commit().unwrap();
        let rx = db.reader().unwrap();
        let shards = listed(&rx, hashed.as_slice());
        assert_eq!(shards.len(), 2);
        assert_eq!(shards[0].0, 6_000);
        assert_eq!(shards[1], (u64::MAX, (6_001..6_010).collect()));
        let mut lookup = rx.list_cursor(Lists::Accounts).unwrap();
        let mut after = |block| {
            rx.first_change_after(&mut lookup, Lists::Accounts, hashed.as_slice(), block)
                .unwrap()
                .map(|f| f.0)
        };
        assert_eq!(after(blocks[1_997]), Some(blocks[1_998]));
        assert_eq!(after(blocks[1_998]), Some(6_000));
        assert_eq!(after(6_000), Some(6_001));
        assert_eq!(after(6_009), None);
    }

    /// Blocks past u32 are refused with an error naming them, not wrapped.
    #[test]
    fn blocks_beyond_u32_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        let err = tx
            .list_account_change(1 << 32, &Address::ZERO, &keccak256(Address::ZERO))
            .unwrap_err();
        assert!(err.to_string().contains("4294967296"), "{err}");
    }
}
