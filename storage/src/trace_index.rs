//! The trace index: for each block, the addresses its call frames name (senders and
//! recipients of calls, creators and created contracts, self-destructed contracts and their
//! beneficiaries, and the block's rewarded miners), so that trace_filter re-executes only the
//! blocks that may hold a matching frame. Ingest writes each block's entries as it stores the
//! block (the executor gathers the addresses while executing it); `quarry index-traces` builds
//! them for blocks stored before; an unwind removes them.

use crate::{Error, Result, StorageTx, Table, models::be_u64};
use alloy_primitives::Address;
use signet_libmdbx::{RwSync, TransactionKind};
use std::borrow::Cow;

/// Meta key: the highest block through which `TraceAddresses` is complete (u64 BE).
const TRACE_INDEX_HEAD: &str = "trace_index_head";

/// The key of one address's entry for one block: the address, then the block (u64 BE).
fn entry_key(address: &Address, block: u64) -> [u8; 28] {
    let mut key = [0u8; 28];
    key[..20].copy_from_slice(address.as_slice());
    key[20..].copy_from_slice(&block.to_be_bytes());
    key
}

impl<K: TransactionKind> StorageTx<K> {
    /// The highest block through which the trace index is complete; `None` in a database
    /// whose blocks were stored before the index (until `quarry index-traces`).
    pub fn trace_index_head(&self) -> Result<Option<u64>> {
        self.meta(TRACE_INDEX_HEAD)?
            .map(|bytes| be_u64(&bytes))
            .transpose()
    }

    /// The blocks in `from..=to` where some frame names one of `addresses`, ascending; `None`
    /// when the index is not complete through `to`.
    pub fn trace_candidates(
        &self,
        addresses: &[Address],
        from: u64,
        to: u64,
    ) -> Result<Option<Vec<u64>>> {
        if self.trace_index_head()?.is_none_or(|head| head < to) {
            return Ok(None);
        }
        let mut blocks = Vec::new();
        let mut cursor = self.tx.cursor(self.db(Table::TraceAddresses))?;
        for address in addresses {
            let mut entry =
                cursor.set_range::<Cow<'_, [u8]>, Cow<'_, [u8]>>(&entry_key(address, from))?;
            while let Some((key, _)) = entry {
                if key.len() != 28 || &key[..20] != address.as_slice() {
                    break;
                }
                let block = be_u64(&key[20..])?;
                if block > to {
                    break;
                }
                blocks.push(block);
                entry = cursor.next()?;
            }
        }
        blocks.sort_unstable();
        blocks.dedup();
        Ok(Some(blocks))
    }
}

impl StorageTx<RwSync> {
    /// Records the addresses of block `number`'s frames if the index is complete up to its
    /// parent (or the block is the first after genesis, which has no frames). Each address
    /// gets an entry under (address, block); the block's list, under the block number alone,
    /// is what an unwind removes.
    pub fn index_block_traces(&self, number: u64, addresses: &[Address]) -> Result<()> {
        let contiguous = match (self.trace_index_head()?, number.checked_sub(1)) {
            (_, None) => true,
            (Some(head), Some(parent)) => head == parent,
            (None, Some(parent)) => parent == 0,
        };
        if !contiguous {
            return Ok(());
        }
        let mut sorted = addresses.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut list = Vec::with_capacity(sorted.len() * 20);
        for address in &sorted {
            self.put(Table::TraceAddresses, &entry_key(address, number), &[])?;
            list.extend_from_slice(address.as_slice());
        }
        self.put(Table::TraceAddresses, &number.to_be_bytes(), &list)?;
        self.put_meta(TRACE_INDEX_HEAD, &number.to_be_bytes())
    }

    /// Removes block `number`'s entries (the block is being unwound) and, if the index reached
    /// it, moves the index head to its parent.
    pub(crate) fn unindex_block_traces(&self, number: u64) -> Result<()> {
        let block = number.to_be_bytes();
        let list = self
            .get(Table::TraceAddresses, &block)?
            .map(|list| list.into_owned());
        if let Some(list) = list {
            if list.len() % 20 != 0 {
                return Err(Error::Corrupt(format!(
                    "trace index list of block {number} is {} bytes",
                    list.len()
                )));
            }
            for address in list.chunks_exact(20) {
                self.del(
                    Table::TraceAddresses,
                    &entry_key(&Address::from_slice(address), number),
                )?;
            }
            self.del(Table::TraceAddresses, &block)?;
        }
        if let (Some(indexed), Some(parent)) = (self.trace_index_head()?, number.checked_sub(1))
            && indexed >= number
        {
            self.put_meta(TRACE_INDEX_HEAD, &parent.to_be_bytes())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Database;

    fn address(byte: u8) -> Address {
        Address::repeat_byte(byte)
    }

    #[test]
    fn the_index_finds_blocks_by_address_and_forgets_unwound_ones() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        assert_eq!(tx.trace_index_head().unwrap(), None);
        assert_eq!(tx.trace_candidates(&[address(1)], 0, 0).unwrap(), None);
        tx.index_block_traces(0, &[]).unwrap();
        tx.index_block_traces(1, &[address(1), address(2), address(1)])
            .unwrap();
        tx.index_block_traces(2, &[address(2)]).unwrap();
        tx.index_block_traces(3, &[address(1), address(3)]).unwrap();
        // Not contiguous: skipped.
        tx.index_block_traces(5, &[address(1)]).unwrap();
        assert_eq!(tx.trace_index_head().unwrap(), Some(3));
        let found =
            |addresses: &[Address], from, to| tx.trace_candidates(addresses, from, to).unwrap();
        assert_eq!(found(&[address(1)], 0, 3), Some(vec![1, 3]));
        assert_eq!(found(&[address(1), address(2)], 0, 3), Some(vec![1, 2, 3]));
        assert_eq!(found(&[address(2)], 2, 3), Some(vec![2]));
        assert_eq!(found(&[address(9)], 0, 3), Some(vec![]));
        assert_eq!(found(&[address(1)], 0, 4), None);
        tx.unindex_block_traces(3).unwrap();
        assert_eq!(tx.trace_index_head().unwrap(), Some(2));
        assert_eq!(found(&[address(1)], 0, 2), Some(vec![1]));
        assert_eq!(found(&[address(3)], 0, 2), Some(vec![]));
        tx.index_block_traces(3, &[address(3)]).unwrap();
        assert_eq!(found(&[address(3), address(1)], 0, 3), Some(vec![1, 3]));
    }

    #[test]
    fn a_database_stored_before_the_index_starts_it_only_from_genesis() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        // Block 7 of a database whose index never started: left for `index-traces`.
        tx.index_block_traces(7, &[address(1)]).unwrap();
        assert_eq!(tx.trace_index_head().unwrap(), None);
        tx.index_block_traces(1, &[address(1)]).unwrap();
        assert_eq!(tx.trace_index_head().unwrap(), Some(1));
    }
}
