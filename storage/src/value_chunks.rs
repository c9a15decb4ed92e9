//! Block-keyed values cut into chunks that fit in a B-tree page. MDBX stores a value longer
//! than about half a page (2,019 bytes beside a 9-byte key with 4 KiB pages) on pages of its
//! own, whole pages each: a block's 2.2 KB list takes 4 KiB, a 12.1 KB body 16 KiB. Cut into
//! chunks under that size and appended in key order, the values fill leaf pages nearly whole
//! instead. A value's first chunk is keyed by the block number (u64 BE), as an uncut value
//! is, so values written before read the same; chunk i ≥ 1 by the number then i (one byte).
//! Every chunk but the last is [`CHUNK`] bytes long, so a first chunk of another length is the
//! whole value. Values longer than [`UNCUT_ABOVE`] stay whole: their rounding costs little,
//! and a large raw value (a block's receipts over 256 KiB) is then read in place.

use crate::{Result, StorageTx, Table};
use signet_libmdbx::{RwSync, TransactionKind};
use std::borrow::Cow;

/// The length of every chunk but a value's last: with its node header (8 bytes) and a 9-byte
/// key, two fit in a 4 KiB page (MDBX's largest node there: 2,036 bytes). A multiple of 20 and
/// 32, so a sender or a transaction hash lies in one chunk.
pub(crate) const CHUNK: usize = 1_920;
/// Values longer than this are stored whole.
pub(crate) const UNCUT_ABOVE: usize = 64 * 1024;

/// The key of chunk `index` of block `number`'s value.
fn chunk_key(number: u64, index: usize) -> Vec<u8> {
    let mut key = number.to_be_bytes().to_vec();
    if index > 0 {
        // At most UNCUT_ABOVE / CHUNK + 1 chunks: well under 256.
        key.push(index as u8);
    }
    key
}

/// Whether `key` is a continuation chunk's key of block `number`.
fn continues(key: &[u8], number: u64) -> bool {
    key.len() == 9 && key[..8] == number.to_be_bytes()
}

impl<K: TransactionKind> StorageTx<K> {
    /// Block `number`'s value in `table`, its chunks joined (borrowed from the map when it
    /// has one).
    pub(crate) fn get_chunked(&self, table: Table, number: u64) -> Result<Option<Cow<'_, [u8]>>> {
        let key = number.to_be_bytes();
        let Some(first) = self.get(table, &key)? else {
            return Ok(None);
        };
        if first.len() != CHUNK {
            return Ok(Some(first));
        }
        let mut cursor = self.tx.cursor(self.db(table))?;
        let mut whole: Option<Vec<u8>> = None;
        let mut entry = cursor.set_range::<Cow<'_, [u8]>, Cow<'_, [u8]>>(&chunk_key(number, 1))?;
        while let Some((key, chunk)) = entry {
            if !continues(&key, number) {
                break;
            }
            whole
                .get_or_insert_with(|| first.to_vec())
                .extend_from_slice(&chunk);
            entry = cursor.next()?;
        }
        Ok(Some(whole.map_or(first, Cow::Owned)))
    }

    /// Bytes `start..start + len` of block `number`'s value in `table`, read from the one
    /// chunk holding them (`len` divides [`CHUNK`] and `start` is a multiple of it); `None`
    /// when the value is absent or shorter.
    pub(crate) fn get_chunked_part(
        &self,
        table: Table,
        number: u64,
        start: usize,
        len: usize,
    ) -> Result<Option<Vec<u8>>> {
        let Some(first) = self.get(table, &number.to_be_bytes())? else {
            return Ok(None);
        };
        let index = start / CHUNK;
        if first.len() != CHUNK || index == 0 {
            return Ok(first.get(start..start + len).map(<[u8]>::to_vec));
        }
        let offset = start % CHUNK;
        Ok(self
            .get(table, &chunk_key(number, index))?
            .and_then(|chunk| chunk.get(offset..offset + len).map(<[u8]>::to_vec)))
    }
}

impl StorageTx<RwSync> {
    /// Stores `value` as block `number`'s in `table`, cut into chunks when that saves pages.
    /// `append`: the block is past every stored one (MDBX's APPEND then fills pages whole);
    /// otherwise a value stored before, and its chunks, are replaced.
    pub(crate) fn put_chunked(
        &self,
        table: Table,
        number: u64,
        value: &[u8],
        append: bool,
    ) -> Result<()> {
        if !append {
            self.del_chunked(table, number)?;
        }
        if value.len() <= CHUNK || value.len() > UNCUT_ABOVE {
            return self.put_chunk(table, &chunk_key(number, 0), value, append);
        }
        for (index, chunk) in value.chunks(CHUNK).enumerate() {
            self.put_chunk(table, &chunk_key(number, index), chunk, append)?;
        }
        Ok(())
    }

    fn put_chunk(&self, table: Table, key: &[u8], chunk: &[u8], append: bool) -> Result<()> {
        if append {
            self.append(table, key, chunk)
        } else {
            self.put(table, key, chunk)
        }
    }

    /// Deletes block `number`'s value in `table` with all its chunks.
    pub(crate) fn del_chunked(&self, table: Table, number: u64) -> Result<()> {
        let mut cursor = self.tx.cursor(self.db(table))?;
        let mut entry = cursor.set_range::<Cow<'_, [u8]>, ()>(&chunk_key(number, 0))?;
        while let Some((key, ())) = entry {
            if key.as_ref() != number.to_be_bytes() && !continues(&key, number) {
                break;
            }
            cursor.del()?;
            entry = cursor.get_current::<Cow<'_, [u8]>, ()>()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Database;

    fn value(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect()
    }

    /// Values of every kind of length read back whole, appended or replaced, and deleting one
    /// leaves its neighbours.
    #[test]
    fn values_read_back_whole_and_delete_alone() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let table = Table::BlockTxHashes;
        let lengths = [
            0,
            7,
            CHUNK - 1,
            CHUNK,
            CHUNK + 1,
            3 * CHUNK,
            12_345,
            UNCUT_ABOVE + 5,
        ];
        let tx = db.writer().unwrap();
        for (number, len) in lengths.iter().enumerate() {
            tx.put_chunked(table, number as u64, &value(*len, 1), true)
                .unwrap();
        }
        tx.commit().unwrap();
        let r = db.reader().unwrap();
        for (number, len) in lengths.iter().enumerate() {
            let read = r.get_chunked(table, number as u64).unwrap().unwrap();
            assert_eq!(read.as_ref(), value(*len, 1).as_slice(), "{len}");
        }
        assert!(r.get_chunked(table, 99).unwrap().is_none());
        // 12,345 bytes: seven chunks, the first six full.
        let mut cursor = r.tx.cursor(r.db(table)).unwrap();
        let mut keys = 0;
        let mut entry = cursor.first::<Vec<u8>, ()>().unwrap();
        while let Some((key, ())) = entry {
            keys += usize::from(key[..8] == 6u64.to_be_bytes());
            entry = cursor.next::<Vec<u8>, ()>().unwrap();
        }
        assert_eq!(keys, 7);
        drop(cursor);
        drop(r);

        let tx = db.writer().unwrap();
        // Replaced by a shorter value, then by a longer one; block 5 deleted.
        tx.put_chunked(table, 6, &value(CHUNK + 3, 2), false)
            .unwrap();
        tx.put_chunked(table, 4, &value(5 * CHUNK, 3), false)
            .unwrap();
        tx.del_chunked(table, 5).unwrap();
        tx.commit().unwrap();
        let r = db.reader().unwrap();
        let read = |n: u64| r.get_chunked(table, n).unwrap().map(Cow::into_owned);
        assert_eq!(read(6), Some(value(CHUNK + 3, 2)));
        assert_eq!(read(4), Some(value(5 * CHUNK, 3)));
        assert_eq!(read(5), None);
        assert_eq!(read(3), Some(value(CHUNK, 1)));
        assert_eq!(read(7), Some(value(UNCUT_ABOVE + 5, 1)));
        // Parts of 32 bytes, from a cut value, an uncut one and a short one.
        for (number, len) in [(4u64, 5 * CHUNK), (7, UNCUT_ABOVE + 5), (1, 7)] {
            let whole = read(number).unwrap();
            for start in (0..len + 64).step_by(32) {
                assert_eq!(
                    r.get_chunked_part(table, number, start, 32).unwrap(),
                    whole.get(start..start + 32).map(<[u8]>::to_vec),
                    "{number} {start}"
                );
            }
        }
    }
}
