//! The transaction lookup (`TxLookup`): where a transaction is, found by its hash.
//!
//! A key is the hash's first `PREFIX` bytes, then the transaction's block number (u32 BE) and
//! index in the block (u16 BE), or, for a location beyond those widths and in keys written
//! before this layout, the block number as u64 BE and the index as u32 BE; the key's length
//! tells them apart. The value is empty. Hashes that share a prefix have adjacent
//! keys, and a lookup takes the one whose block holds the hash at that index, checked against
//! the block's transaction hashes (`BlockTxHashes`). An 8-byte prefix is a quarter of a hash,
//! and on 2 million transactions two share one with odds of about 1 in 10 million; when they
//! do, both stay found.

use crate::{Error, Result, StorageTx, Table, TxLocation};
use alloy_primitives::B256;
use signet_libmdbx::{RwSync, TransactionKind};

/// The bytes of a hash a key keeps.
const PREFIX: usize = 8;
/// A key: the prefix, the block number (u32 BE), the index (u16 BE).
const KEY: usize = PREFIX + 6;
/// A wide key: the prefix, the block number (u64 BE), the index (u32 BE).
const WIDE_KEY: usize = PREFIX + 12;

/// The key of the transaction at `location`: narrow when its block number and index fit.
fn lookup_key(hash: &B256, location: TxLocation) -> Vec<u8> {
    let narrow = (
        u32::try_from(location.block_number),
        u16::try_from(location.index),
    );
    match narrow {
        (Ok(block), Ok(index)) => {
            [&hash[..PREFIX], &block.to_be_bytes(), &index.to_be_bytes()].concat()
        }
        _ => wide_key(hash, location),
    }
}

/// The wide key of the transaction at `location`, as every key was written before narrow ones.
fn wide_key(hash: &B256, location: TxLocation) -> Vec<u8> {
    [&hash[..PREFIX], &location.encode()[..]].concat()
}

/// The location a key names, narrow or wide.
fn key_location(key: &[u8]) -> Result<TxLocation> {
    match key.len() {
        KEY => Ok(TxLocation {
            block_number: u64::from(u32::from_be_bytes(
                key[PREFIX..PREFIX + 4]
                    .try_into()
                    .map_err(|_| bad_key(key))?,
            )),
            index: u32::from(u16::from_be_bytes(
                key[PREFIX + 4..].try_into().map_err(|_| bad_key(key))?,
            )),
        }),
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
    /// entry before (a check on the prefix's length).
    pub fn tx_lookup_collisions(&self) -> Result<(u64, u64)> {
        let mut cursor = self.tx.cursor(self.db(Table::TxLookup))?;
        let (mut entries, mut shared) = (0u64, 0u64);
        let mut previous: Option<Vec<u8>> = None;
        let mut entry = cursor.first::<Vec<u8>, ()>()?;
        while let Some((key, ())) = entry {
            entries += 1;
            if previous.is_some_and(|p| key.get(..PREFIX) == p.get(..PREFIX)) {
                shared += 1;
            }
            previous = Some(key);
            entry = cursor.next::<Vec<u8>, ()>()?;
        }
        Ok((entries, shared))
    }
}

impl StorageTx<RwSync> {
    /// Records where the transaction with this hash is (staged, written in key order).
    pub(crate) fn put_tx_lookup(&self, hash: &B256, location: TxLocation) -> Result<()> {
        self.put_staged(Table::TxLookup, &lookup_key(hash, location), &[])
    }

    /// Removes the lookup of the transaction with this hash at `location` (an unwound block's),
    /// narrow or wide (written before narrow keys); another transaction whose hash shares the
    /// prefix keeps its own.
    pub(crate) fn del_tx_lookup(&self, hash: &B256, location: TxLocation) -> Result<()> {
        self.del(Table::TxLookup, &lookup_key(hash, location))?;
        self.del(Table::TxLookup, &wide_key(hash, location))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Database;

    /// The block number in a lookup key.
    fn key_block(key: &[u8]) -> Result<u64> {
        Ok(key_location(key)?.block_number)
    }

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
        let mut cursor = r.tx.cursor(r.db(Table::TxLookup)).unwrap();
        let (key, ()) = cursor.first::<Vec<u8>, ()>().unwrap().unwrap();
        assert_eq!((key.len(), key_block(&key).unwrap()), (KEY, 1));
    }

    /// Keys written wide (before narrow keys, or beyond their widths) are found beside narrow
    /// ones, and an unwind's removal deletes either.
    #[test]
    fn wide_keys_are_found_and_removed_beside_narrow_ones() {
        let (_dir, db) = crafted();
        let tx = db.writer().unwrap();
        let (old, far) = (hash(0xaa, 4), hash(0xbb, 5));
        let mut hashes = vec![0u8; 32 * 70_001];
        hashes[..32].copy_from_slice(old.as_slice());
        hashes[32 * 70_000..].copy_from_slice(far.as_slice());
        tx.put(Table::BlockTxHashes, &4u64.to_be_bytes(), &hashes)
            .unwrap();
        tx.put(Table::TxLookup, &wide_key(&old, at(4, 0)), &[])
            .unwrap();
        tx.put_tx_lookup(&far, at(4, 70_000)).unwrap();
        tx.commit().unwrap();
        let r = db.reader().unwrap();
        assert_eq!(r.tx_location(&old).unwrap(), Some(at(4, 0)));
        assert_eq!(r.tx_location(&far).unwrap(), Some(at(4, 70_000)));
        assert_eq!(r.tx_location(&hash(0xaa, 3)).unwrap(), Some(at(3, 1)));
        assert_eq!(lookup_key(&far, at(4, 70_000)).len(), WIDE_KEY);
        assert_eq!(lookup_key(&old, at(4, 0)).len(), KEY);
        drop(r);
        let tx = db.writer().unwrap();
        tx.del_tx_lookup(&old, at(4, 0)).unwrap();
        tx.del_tx_lookup(&far, at(4, 70_000)).unwrap();
        tx.commit().unwrap();
        let r = db.reader().unwrap();
        assert_eq!(r.tx_location(&old).unwrap(), None);
        assert_eq!(r.tx_location(&far).unwrap(), None);
        assert_eq!(r.tx_lookup_collisions().unwrap(), (5, 2));
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
