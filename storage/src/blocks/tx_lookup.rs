//! The transaction lookup: where a transaction is, found by its hash.
//!
//! A transaction is found by its hash's first `PREFIX` bytes, its block number and its index in
//! the block. Where the block number fits in 4 bytes and the index in 2, that is an entry of
//! `TxLookupGroups`: the first `GROUP` bytes are the key, and the entry one of the key's sorted
//! fixed-size values (the rest of the prefix, the block number, the index), which MDBX packs
//! 12 bytes each where a key of its own would take 24 with its node header. Otherwise, and for
//! lookups written before that table, it is a key of `TxLookup`: the prefix, then the block
//! number (u32 BE) and index (u16 BE), or the block number as u64 BE and the index as u32 BE;
//! the key's length tells them apart, and the value is empty.
//!
//! Hashes that share a prefix have adjacent entries, and a lookup takes the one whose block
//! holds the hash at that index, checked against the block's transaction hashes
//! (`BlockTxHashes`). An 8-byte prefix is a quarter of a hash, and on 2 million transactions two
//! share one with odds of about 1 in 10 million; when they do, both stay found.

use crate::{Error, Result, StorageTx, Table, TxLocation};
use alloy_primitives::B256;
use signet_libmdbx::{RwSync, TransactionKind};

/// The bytes of a hash a key keeps.
const PREFIX: usize = 8;
/// A narrow location: the block number (u32 BE), the index (u16 BE).
const NARROW: usize = 6;
/// A key: the prefix, then a narrow location.
const KEY: usize = PREFIX + NARROW;
/// A wide key: the prefix, the block number (u64 BE), the index (u32 BE).
const WIDE_KEY: usize = PREFIX + 12;

/// The bytes of a hash that key a group of `TxLookupGroups`.
const GROUP: usize = 2;
/// A group's value: the prefix's other bytes, the block number (u32 BE), the index (u16 BE).
const GROUP_VALUE: usize = PREFIX - GROUP + NARROW;

/// A location in 6 bytes, block number (u32 BE) then index (u16 BE), when both fit: how a
/// group's value and a narrow `TxLookup` key end.
fn narrow_location(location: TxLocation) -> Option<[u8; NARROW]> {
    let block = u32::try_from(location.block_number).ok()?;
    let index = u16::try_from(location.index).ok()?;
    let mut narrow = [0u8; NARROW];
    narrow[..4].copy_from_slice(&block.to_be_bytes());
    narrow[4..].copy_from_slice(&index.to_be_bytes());
    Some(narrow)
}

/// The location of `narrow_location`'s 6 bytes; `None` when they are not 6.
fn decode_narrow_location(narrow: &[u8]) -> Option<TxLocation> {
    let (block, index) = narrow.split_first_chunk::<4>()?;
    let index: [u8; 2] = index.try_into().ok()?;
    Some(TxLocation {
        block_number: u64::from(u32::from_be_bytes(*block)),
        index: u32::from(u16::from_be_bytes(index)),
    })
}

/// The `TxLookupGroups` value of the transaction at `location`, when its block number and
/// index fit.
fn group_value(hash: &B256, location: TxLocation) -> Option<[u8; GROUP_VALUE]> {
    let narrow = narrow_location(location)?;
    let mut value = [0u8; GROUP_VALUE];
    value[..PREFIX - GROUP].copy_from_slice(&hash[GROUP..PREFIX]);
    value[PREFIX - GROUP..].copy_from_slice(&narrow);
    Some(value)
}

/// The location a `TxLookupGroups` value names.
fn group_value_location(value: &[u8]) -> Result<TxLocation> {
    value
        .get(PREFIX - GROUP..)
        .and_then(decode_narrow_location)
        .ok_or_else(|| {
            Error::Corrupt(format!(
                "tx lookup group value of {} bytes, expected {GROUP_VALUE}",
                value.len()
            ))
        })
}

/// The `TxLookup` key of the transaction at `location` as written before groups: narrow when
/// its block number and index fit.
fn lookup_key(hash: &B256, location: TxLocation) -> Vec<u8> {
    match narrow_location(location) {
        Some(narrow) => [&hash[..PREFIX], &narrow[..]].concat(),
        None => wide_key(hash, location),
    }
}

/// The wide key of the transaction at `location`, as every key was written before narrow ones.
fn wide_key(hash: &B256, location: TxLocation) -> Vec<u8> {
    [&hash[..PREFIX], &location.encode()[..]].concat()
}

/// The location a key names, narrow or wide.
fn key_location(key: &[u8]) -> Result<TxLocation> {
    match key.len() {
        KEY => decode_narrow_location(&key[PREFIX..]).ok_or_else(|| bad_key(key)),
        WIDE_KEY => TxLocation::decode(&key[PREFIX..]),
        _ => Err(bad_key(key)),
    }
}

fn bad_key(key: &[u8]) -> Error {
    Error::Corrupt(format!(
        "tx lookup key of {} bytes, expected {KEY} or {WIDE_KEY} (run `quarry migrate`)",
        key.len()
    ))
}

impl<K: TransactionKind> StorageTx<K> {
    /// Where the transaction with this hash is, if stored.
    pub fn tx_location(&self, hash: &B256) -> Result<Option<TxLocation>> {
        let rest = &hash[GROUP..PREFIX];
        // The first of the group's values at or after the prefix's (MDBX compares a value of
        // full size with a group's, so the location's bytes are zeros).
        let mut first = [0u8; GROUP_VALUE];
        first[..PREFIX - GROUP].copy_from_slice(rest);
        let mut cursor = self.tx.cursor(self.db(Table::TxLookupGroups))?;
        let mut value = cursor.get_both_range::<Vec<u8>>(&hash[..GROUP], &first)?;
        while let Some(found) = value {
            if !found.starts_with(rest) {
                break;
            }
            let location = group_value_location(&found)?;
            if self.transaction_hash_at(location)? == Some(*hash) {
                return Ok(Some(location));
            }
            value = cursor.next_dup::<(), Vec<u8>>()?.map(|((), found)| found);
        }
        let prefix = &hash[..PREFIX];
        let mut cursor = self.tx.cursor(self.db(Table::TxLookup))?;
        let mut entry = cursor.set_range::<Vec<u8>, ()>(prefix)?;
        while let Some((key, ())) = entry {
            if !key.starts_with(prefix) {
                break;
            }
            let location = key_location(&key)?;
            if self.transaction_hash_at(location)? == Some(*hash) {
                return Ok(Some(location));
            }
            entry = cursor.next::<Vec<u8>, ()>()?;
        }
        Ok(None)
    }

    /// The hash of the transaction at `location`, from the block's transaction hashes.
    fn transaction_hash_at(&self, location: TxLocation) -> Result<Option<B256>> {
        let TxLocation {
            block_number,
            index,
        } = location;
        let start = index as usize * 32;
        if let Some(hash) = self.get_chunked_part(Table::BlockTxHashes, block_number, start, 32)? {
            return Ok(Some(B256::from_slice(&hash)));
        }
        Ok(self
            .transaction_hashes(block_number)?
            .and_then(|hashes| hashes.get(index as usize).copied()))
    }

    /// How many lookup entries are stored, and how many of them share their prefix with the
    /// entry before in their table (a check on the prefix's length).
    pub fn tx_lookup_collisions(&self) -> Result<(u64, u64)> {
        let (mut entries, mut shared) = (0u64, 0u64);
        for table in [Table::TxLookupGroups, Table::TxLookup] {
            let mut cursor = self.tx.cursor(self.db(table))?;
            let mut previous: Option<Vec<u8>> = None;
            let mut entry = cursor.first::<Vec<u8>, Vec<u8>>()?;
            while let Some((key, value)) = entry {
                let prefix = [key, value].concat();
                entries += 1;
                if previous.is_some_and(|p| prefix.get(..PREFIX) == p.get(..PREFIX)) {
                    shared += 1;
                }
                previous = Some(prefix);
                entry = cursor.next::<Vec<u8>, Vec<u8>>()?;
            }
        }
        Ok((entries, shared))
    }
}

impl StorageTx<RwSync> {
    /// Records where the transaction with this hash is (staged, written in key order).
    pub(crate) fn put_tx_lookup(&self, hash: &B256, location: TxLocation) -> Result<()> {
        match group_value(hash, location) {
            Some(value) => self.put_staged(Table::TxLookupGroups, &hash[..GROUP], &value),
            None => self.put_staged(Table::TxLookup, &wide_key(hash, location), &[]),
        }
    }

    /// Removes the lookup of the transaction with this hash at `location` (an unwound block's),
    /// wherever it was written (a group, or a narrow or wide key written before groups);
    /// another transaction whose hash shares the prefix keeps its own.
    pub(crate) fn del_tx_lookup(&self, hash: &B256, location: TxLocation) -> Result<()> {
        if let Some(value) = group_value(hash, location) {
            self.tx.del(
                self.db(Table::TxLookupGroups),
                &hash[..GROUP],
                Some(&value[..]),
            )?;
        }
        self.del(Table::TxLookup, &lookup_key(hash, location))?;
        self.del(Table::TxLookup, &wide_key(hash, location))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Database;

    fn hash(prefix: u8, rest: u8) -> B256 {
        let mut hash = [rest; 32];
        hash[..PREFIX].fill(prefix);
        B256::from(hash)
    }

    fn at(block_number: u64, index: u32) -> TxLocation {
        TxLocation {
            block_number,
            index,
        }
    }

    /// Blocks 1-3 with crafted transaction hashes: three share the prefix 0xaa.., one other.
    fn crafted() -> (tempfile::TempDir, Database) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        let blocks = [
            (1u64, vec![hash(0xaa, 1), hash(0x11, 1)]),
            (2, vec![hash(0xaa, 2)]),
            (3, vec![hash(0x22, 3), hash(0xaa, 3)]),
        ];
        for (number, hashes) in &blocks {
            let value: Vec<u8> = hashes.iter().flat_map(|h| h.0).collect();
            tx.put(Table::BlockTxHashes, &number.to_be_bytes(), &value)
                .unwrap();
            for (index, hash) in hashes.iter().enumerate() {
                tx.put_tx_lookup(hash, at(*number, index as u32)).unwrap();
            }
        }
        tx.commit().unwrap();
        (dir, db)
    }

    #[test]
    fn colliding_prefixes_each_find_their_own_transaction() {
        let (_dir, db) = crafted();
        let r = db.reader().unwrap();
        assert_eq!(r.tx_lookup_collisions().unwrap(), (5, 2));
        assert_eq!(r.tx_location(&hash(0xaa, 1)).unwrap(), Some(at(1, 0)));
        assert_eq!(r.tx_location(&hash(0xaa, 2)).unwrap(), Some(at(2, 0)));
        assert_eq!(r.tx_location(&hash(0xaa, 3)).unwrap(), Some(at(3, 1)));
        assert_eq!(r.tx_location(&hash(0x11, 1)).unwrap(), Some(at(1, 1)));
        assert_eq!(r.tx_location(&hash(0x22, 3)).unwrap(), Some(at(3, 0)));
        // A hash with a stored prefix but in no block, and one with no stored prefix.
        assert_eq!(r.tx_location(&hash(0xaa, 9)).unwrap(), None);
        assert_eq!(r.tx_location(&hash(0x33, 3)).unwrap(), None);
    }

    #[test]
    fn removing_a_colliding_lookup_keeps_the_others() {
        let (_dir, db) = crafted();
        let tx = db.writer().unwrap();
        tx.del_tx_lookup(&hash(0xaa, 2), at(2, 0)).unwrap();
        tx.commit().unwrap();
        let r = db.reader().unwrap();
        assert_eq!(r.tx_location(&hash(0xaa, 2)).unwrap(), None);
        assert_eq!(r.tx_location(&hash(0xaa, 1)).unwrap(), Some(at(1, 0)));
        assert_eq!(r.tx_location(&hash(0xaa, 3)).unwrap(), Some(at(3, 1)));
        assert_eq!(r.tx_lookup_collisions().unwrap(), (4, 1));
        // Every lookup is a 12-byte value of its 2-byte group; none is a key of its own.
        let mut cursor = r.tx.cursor(r.db(Table::TxLookupGroups)).unwrap();
        let mut entry = cursor.first::<Vec<u8>, Vec<u8>>().unwrap();
        let mut groups = Vec::new();
        while let Some((key, value)) = entry {
            assert_eq!((key.len(), value.len()), (GROUP, GROUP_VALUE));
            groups.push((key[0], group_value_location(&value).unwrap()));
            entry = cursor.next::<Vec<u8>, Vec<u8>>().unwrap();
        }
        let expected = [
            (0x11, at(1, 1)),
            (0x22, at(3, 0)),
            (0xaa, at(1, 0)),
            (0xaa, at(3, 1)),
        ];
        assert_eq!(groups, expected);
        let mut cursor = r.tx.cursor(r.db(Table::TxLookup)).unwrap();
        assert_eq!(cursor.first::<Vec<u8>, ()>().unwrap(), None);
    }

    /// A lookup written again (a block imported again after an unwind that failed to commit)
    /// stays one entry.
    #[test]
    fn a_lookup_written_twice_is_one_entry() {
        let (_dir, db) = crafted();
        let tx = db.writer().unwrap();
        tx.put_tx_lookup(&hash(0xaa, 2), at(2, 0)).unwrap();
        tx.commit().unwrap();
        let r = db.reader().unwrap();
        assert_eq!(r.tx_lookup_collisions().unwrap(), (5, 2));
        assert_eq!(r.tx_location(&hash(0xaa, 2)).unwrap(), Some(at(2, 0)));
    }

    /// Keys written before groups (narrow, or wide before narrow keys) and wide keys of
    /// locations beyond a group's widths are found beside grouped lookups, and an unwind's
    /// removal deletes any of them.
    #[test]
    fn keys_of_tx_lookup_are_found_and_removed_beside_groups() {
        let (_dir, db) = crafted();
        let tx = db.writer().unwrap();
        let (old, narrow, far) = (hash(0xaa, 4), hash(0xaa, 6), hash(0xbb, 5));
        let mut hashes = vec![0u8; 32 * 70_001];
        hashes[..32].copy_from_slice(old.as_slice());
        hashes[32..64].copy_from_slice(narrow.as_slice());
        hashes[32 * 70_000..].copy_from_slice(far.as_slice());
        tx.put(Table::BlockTxHashes, &4u64.to_be_bytes(), &hashes)
            .unwrap();
        tx.put(Table::TxLookup, &wide_key(&old, at(4, 0)), &[])
            .unwrap();
        tx.put(Table::TxLookup, &lookup_key(&narrow, at(4, 1)), &[])
            .unwrap();
        tx.put_tx_lookup(&far, at(4, 70_000)).unwrap();
        tx.commit().unwrap();
        let r = db.reader().unwrap();
        assert_eq!(r.tx_location(&old).unwrap(), Some(at(4, 0)));
        assert_eq!(r.tx_location(&narrow).unwrap(), Some(at(4, 1)));
        assert_eq!(r.tx_location(&far).unwrap(), Some(at(4, 70_000)));
        assert_eq!(r.tx_location(&hash(0xaa, 3)).unwrap(), Some(at(3, 1)));
        assert_eq!(lookup_key(&narrow, at(4, 1)).len(), KEY);
        assert_eq!(group_value(&far, at(4, 70_000)), None);
        assert_eq!(r.tx_lookup_collisions().unwrap(), (8, 3));
        drop(r);
        let tx = db.writer().unwrap();
        tx.del_tx_lookup(&old, at(4, 0)).unwrap();
        tx.del_tx_lookup(&narrow, at(4, 1)).unwrap();
        tx.del_tx_lookup(&far, at(4, 70_000)).unwrap();
        tx.commit().unwrap();
        let r = db.reader().unwrap();
        assert_eq!(r.tx_location(&old).unwrap(), None);
        assert_eq!(r.tx_location(&narrow).unwrap(), None);
        assert_eq!(r.tx_location(&far).unwrap(), None);
        assert_eq!(r.tx_lookup_collisions().unwrap(), (5, 2));
        let mut cursor = r.tx.cursor(r.db(Table::TxLookup)).unwrap();
        assert_eq!(cursor.first::<Vec<u8>, ()>().unwrap(), None);
    }

    #[test]
    fn a_key_of_the_old_layout_is_an_error_naming_the_migration() {
        let (_dir, db) = crafted();
        let tx = db.writer().unwrap();
        let old = hash(0x44, 4);
        tx.put(Table::TxLookup, old.as_slice(), &at(4, 0).encode())
            .unwrap();
        tx.commit().unwrap();
        let error = db.reader().unwrap().tx_location(&old).unwrap_err();
        assert!(error.to_string().contains("quarry migrate"), "{error}");
    }
}
