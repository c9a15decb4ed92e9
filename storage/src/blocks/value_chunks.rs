//! Block-keyed values stored so that they waste little of their pages. MDBX gives a value
//! longer than about half a page (2,019 bytes beside a 9-byte key with 4 KiB pages) whole pages
//! of its own, so a block's 2.2 KB record took 4 KiB and a 12.1 KB body 16 KiB. A value of more
//! than [`CHUNK`] bytes and at most [`UNCUT_ABOVE`] is stored as parts: first its bulk, the most
//! of it that fills whole large pages (none when it is shorter than a page), then the rest in
//! chunks of [`CHUNK`] bytes (the last shorter), which share leaf pages with their neighbours
//! when appended in key order. The first part is keyed by the block number (u64 BE), as a whole
//! value is, so values written before read the same; part i ≥ 1 by the number then i (one
//! byte). Every part but the last is a multiple of 160 bytes long, so a sender (20 bytes) or a
//! transaction hash (32) lies in one part. Values over [`UNCUT_ABOVE`] stay whole: their
//! rounding costs little, and a large raw value (a block's receipts over 256 KiB) is then read
//! in place.

use crate::{Result, StorageTx, Table};
use signet_libmdbx::{RwSync, TransactionKind};
use std::borrow::Cow;

/// The length of a value's tail chunks (but its last): small beside a page, so a page's unused
/// end is small.
pub(crate) const CHUNK: usize = 640;
/// Values longer than this are stored whole.
pub(crate) const UNCUT_ABOVE: usize = 64 * 1024;
/// Parts are multiples of this: of 20 and 32.
const UNIT: usize = 160;
/// MDBX's page size on this platform, and what a large value's first page spends on its header.
const PAGE: usize = 4096;
const LARGE_PAGE_HEADER: usize = 20;

/// The key of part `index` of block `number`'s value.
fn part_key(number: u64, index: usize) -> Vec<u8> {
    let mut key = number.to_be_bytes().to_vec();
    if index > 0 {
        // At most 1 + PAGE / CHUNK + 1 parts.
        key.push(index as u8);
    }
    key
}

/// Whether `key` is a later part's key of block `number`.
fn continues(key: &[u8], number: u64) -> bool {
    key.len() == 9 && key[..8] == number.to_be_bytes()
}

/// Whether a first part of `len` bytes may have parts after it.
fn may_continue(len: usize) -> bool {
    (CHUNK..=UNCUT_ABOVE).contains(&len) && len.is_multiple_of(UNIT)
}

/// How `len` bytes are cut: the lengths of the parts, in order (one: stored whole).
fn part_lengths(len: usize) -> Vec<usize> {
    if len <= CHUNK || len > UNCUT_ABOVE {
        return vec![len];
    }
    // A value that nearly fills its large pages stays whole.
    let pages_up = (len + LARGE_PAGE_HEADER).div_ceil(PAGE);
    if pages_up > 1 && pages_up * PAGE - LARGE_PAGE_HEADER - len <= CHUNK {
        return vec![len];
    }
    let pages = (len + LARGE_PAGE_HEADER) / PAGE;
    let bulk = match pages {
        0 => 0,
        pages => {
            let room = pages * PAGE - LARGE_PAGE_HEADER;
            room - room % UNIT
        }
    };
    let mut parts = Vec::new();
    if bulk > 0 {
        parts.push(bulk);
    }
    let mut rest = len - bulk;
    while rest > 0 {
        let chunk = rest.min(CHUNK);
        parts.push(chunk);
        rest -= chunk;
    }
    parts
}

impl<K: TransactionKind> StorageTx<K> {
    /// Block `number`'s value in `table`, its parts joined (borrowed from the map when it
    /// has one).
    pub(crate) fn get_chunked(&self, table: Table, number: u64) -> Result<Option<Cow<'_, [u8]>>> {
        let Some(first) = self.get(table, &number.to_be_bytes())? else {
            return Ok(None);
        };
        if !may_continue(first.len()) {
            return Ok(Some(first));
        }
        let mut whole: Option<Vec<u8>> = None;
        self.visit_later_parts(table, number, |part| {
            whole
                .get_or_insert_with(|| first.to_vec())
                .extend_from_slice(part);
            Ok(true)
        })?;
        Ok(Some(whole.map_or(first, Cow::Owned)))
    }

    /// Runs `visit` over the parts of block `number`'s value in `table` in order, with each
    /// part's offset in the whole value, until it returns `false`; `false` when the value is
    /// absent. A reader that needs only some of a value reads no part after them and joins
    /// none.
    pub(crate) fn visit_chunked(
        &self,
        table: Table,
        number: u64,
        mut visit: impl FnMut(usize, &[u8]) -> Result<bool>,
    ) -> Result<bool> {
        let Some(first) = self.get(table, &number.to_be_bytes())? else {
            return Ok(false);
        };
        if !visit(0, &first)? || !may_continue(first.len()) {
            return Ok(true);
        }
        let mut offset = first.len();
        self.visit_later_parts(table, number, |part| {
            let more = visit(offset, part)?;
            offset += part.len();
            Ok(more)
        })?;
        Ok(true)
    }

    /// Runs `visit` over the parts after the first of block `number`'s value in `table`, in
    /// order, until it returns `false`.
    fn visit_later_parts(
        &self,
        table: Table,
        number: u64,
        mut visit: impl FnMut(&[u8]) -> Result<bool>,
    ) -> Result<()> {
        let mut cursor = self.tx.cursor(self.db(table))?;
        let mut entry = cursor.set_range::<Cow<'_, [u8]>, Cow<'_, [u8]>>(&part_key(number, 1))?;
        while let Some((key, part)) = entry {
            if !continues(&key, number) || !visit(&part)? {
                break;
            }
            entry = cursor.next()?;
        }
        Ok(())
    }

    /// Bytes `start..start + len` of block `number`'s value in `table`, read from the one
    /// part holding them (`len` divides 160 and `start` is a multiple of it); `None` when the
    /// value is absent or shorter.
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
        if start + len <= first.len() || !may_continue(first.len()) {
            return Ok(first.get(start..start + len).map(<[u8]>::to_vec));
        }
        let past = start - first.len();
        let offset = past % CHUNK;
        Ok(self
            .get(table, &part_key(number, 1 + past / CHUNK))?
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
        let mut rest = value;
        for (index, len) in part_lengths(value.len()).into_iter().enumerate() {
            let (part, after) = rest.split_at(len);
            self.put_chunk(table, &part_key(number, index), part, append)?;
            rest = after;
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
        let mut entry = cursor.set_range::<Cow<'_, [u8]>, ()>(&part_key(number, 0))?;
        while let Some((key, ())) = entry {
            if key.as_ref() != number.to_be_bytes() && !continues(&key, number) {
                break;
            }
            entry = crate::delete_and_next::<Cow<'_, [u8]>, ()>(&mut cursor)?;
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
        // 12,345 bytes: a bulk of three pages (12,160 bytes), then one chunk; 12,000 bytes
        // nearly fill three pages: whole.
        assert_eq!(part_lengths(12_345), vec![12_160, 185]);
        assert_eq!(part_lengths(12_000), vec![12_000]);
        assert_eq!(part_lengths(2_020), vec![640, 640, 640, 100]);
        let mut cursor = r.tx.cursor(r.db(table)).unwrap();
        let mut keys = 0;
        let mut entry = cursor.first::<Vec<u8>, ()>().unwrap();
        while let Some((key, ())) = entry {
            keys += usize::from(key[..8] == 6u64.to_be_bytes());
            entry = cursor.next::<Vec<u8>, ()>().unwrap();
        }
        assert_eq!(keys, 2);
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
        // Visited part by part, the parts join to the value at their offsets; a visit that
        // stops sees no later part.
        for number in [1u64, 3, 4, 6, 7] {
            let mut joined = Vec::new();
            let found = r
                .visit_chunked(table, number, |offset, part| {
                    assert_eq!(offset, joined.len());
                    joined.extend_from_slice(part);
                    Ok(true)
                })
                .unwrap();
            assert!(found);
            assert_eq!(Some(joined), read(number), "block {number}");
        }
        let mut visited = 0;
        r.visit_chunked(table, 4, |_, _| {
            visited += 1;
            Ok(false)
        })
        .unwrap();
        assert_eq!(visited, 1);
        assert!(!r.visit_chunked(table, 5, |_, _| Ok(true)).unwrap());
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
