//! The trace index: for each block, the addresses its call frames name (senders and
//! recipients of calls, creators and created contracts, self-destructed contracts and their
//! beneficiaries, and the block's rewarded miners), so that trace_filter re-executes only the
//! blocks that may hold a matching frame. Ingest writes each block's entries as it stores the
//! block (the executor gathers the addresses while executing it); `quarry index-traces` builds
//! them for blocks stored before; an unwind removes them. The block's own record, what the
//! unwind reads, leaves out the addresses the stored block already names (its senders,
//! recipients and beneficiaries): most of a block's frames, which the unwind reads back from
//! the block instead.

use crate::{
    Error, MetaKey, Result, StorageTx, StoredBody, Table, history::state_lists::Lists,
    maintenance::migrate::TRACE_LISTS_LAYOUT, models::be_u64,
};
use alloy_consensus::{Header, Transaction};
use alloy_primitives::Address;
use signet_libmdbx::{RwSync, TransactionKind};

/// The length of a layout 8 per-address entry's key in `TraceAddresses`: address ‖ block.
const ENTRY_KEY_LEN: usize = 28;

impl<K: TransactionKind> StorageTx<K> {
    /// The highest block through which the trace index is complete; `None` in a database
    /// whose blocks were stored before the index (until `quarry index-traces`).
    pub fn trace_index_head(&self) -> Result<Option<u64>> {
        self.meta(MetaKey::TraceIndexHead)?
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
        // Blocks a write transaction staged are not in the lists yet.
        self.check_history_written()?;
        let mut blocks = Vec::new();
        let mut cursor = self.list_cursor(Lists::Traces)?;
        for address in addresses {
            self.listed_blocks(
                &mut cursor,
                Lists::Traces,
                address.as_slice(),
                (from, to),
                &mut blocks,
            )?;
        }
        blocks.sort_unstable();
        blocks.dedup();
        Ok(Some(blocks))
    }
}

impl StorageTx<RwSync> {
    /// Records the addresses of block `number`'s frames if the index is complete up to its
    /// parent (or the block is the first after genesis, which has no frames): the block goes
    /// into each address's list, and the block's own record, under its number, is what an
    /// unwind takes out of them beside the addresses `named` (the stored block's own,
    /// [`block_named_addresses`]), which the record leaves out.
    pub fn index_block_traces(
        &self,
        number: u64,
        addresses: &[Address],
        named: &[Address],
    ) -> Result<()> {
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
        let mut named = named.to_vec();
        named.sort_unstable();
        let mut list = Vec::new();
        for address in &sorted {
            self.list_indexed_block(Lists::Traces, address.as_slice(), number)?;
            if named.binary_search(address).is_err() {
                list.extend_from_slice(address.as_slice());
            }
        }
        self.put_chunked(Table::TraceAddresses, number, &list, true)?;
        self.put_meta(MetaKey::TraceIndexHead, &number.to_be_bytes())
    }

    /// The addresses stored block `number` names itself ([`block_named_addresses`]); empty for
    /// a block not stored.
    pub fn stored_block_named_addresses(&self, number: u64) -> Result<Vec<Address>> {
        let (Some(header), Some(body)) = (self.header(number)?, self.body(number)?) else {
            return Ok(Vec::new());
        };
        let senders = self.senders(number)?.unwrap_or_default();
        Ok(block_named_addresses(&header, &body, &senders))
    }

    /// Removes block `number`'s entries (the block is being unwound; it must still be stored,
    /// since the addresses it names itself are read from it) and, if the index reached it,
    /// moves the index head to its parent.
    pub(crate) fn unindex_block_traces(&self, number: u64) -> Result<()> {
        let list = self
            .get_chunked(Table::TraceAddresses, number)?
            .map(|list| list.into_owned());
        if let Some(list) = list {
            if list.len() % 20 != 0 {
                return Err(Error::Corrupt(format!(
                    "trace index list of block {number} is {} bytes",
                    list.len()
                )));
            }
            // Records written before they left out the named addresses hold some of them
            // again: taking a block out of a list twice is a no-op.
            let named = self.stored_block_named_addresses(number)?;
            for address in list
                .chunks_exact(20)
                .chain(named.iter().map(|a| a.as_slice()))
            {
                self.unlist_block(Lists::Traces, address, number)?;
            }
            self.del_chunked(Table::TraceAddresses, number)?;
        }
        if let (Some(indexed), Some(parent)) = (self.trace_index_head()?, number.checked_sub(1))
            && indexed >= number
        {
            self.put_meta(MetaKey::TraceIndexHead, &parent.to_be_bytes())?;
        }
        Ok(())
    }

    /// Moves layout 8's per-address entries of `TraceAddresses` into `TraceAddressLists`,
    /// about `budget` per call, in key order (each address's blocks ascending, the order its
    /// list takes them), deleting them as it goes; once none is left, records layout 9.
    /// Returns `true` then.
    pub(crate) fn list_trace_entries(&self, budget: u64) -> Result<bool> {
        let mut moved = Vec::new();
        {
            let mut cursor = self.tx.cursor(self.db(Table::TraceAddresses))?;
            let mut entry = cursor.first::<Vec<u8>, ()>()?;
            while let Some((key, ())) = entry {
                if moved.len() as u64 >= budget {
                    break;
                }
                if key.len() == ENTRY_KEY_LEN {
                    moved.push(key);
                }
                entry = cursor.next::<Vec<u8>, ()>()?;
            }
        }
        for key in &moved {
            let (address, block) = key.split_at(20);
            self.list_indexed_block(Lists::Traces, address, be_u64(block)?)?;
            self.del(Table::TraceAddresses, key)?;
        }
        if (moved.len() as u64) < budget {
            self.put_schema(TRACE_LISTS_LAYOUT)?;
            return Ok(true);
        }
        Ok(false)
    }
}

/// The addresses a block's own stored data names, all of which its frames name too: the
/// senders, the recipients of calls, the beneficiary and the ommers' beneficiaries. The trace
/// index's record of a block leaves them out, and an unwind reads them back from the block.
pub fn block_named_addresses(
    header: &Header,
    body: &StoredBody,
    senders: &[Address],
) -> Vec<Address> {
    let mut named = Vec::with_capacity(senders.len() * 2 + 1 + body.ommers.len());
    named.extend_from_slice(senders);
    named.extend(body.transactions.iter().filter_map(|tx| tx.to()));
    named.push(header.beneficiary);
    named.extend(body.ommers.iter().map(|ommer| ommer.beneficiary));
    named.sort_unstable();
    named.dedup();
    named
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
        tx.index_block_traces(0, &[], &[]).unwrap();
        tx.index_block_traces(1, &[address(1), address(2), address(1)], &[])
            .unwrap();
        tx.index_block_traces(2, &[address(2)], &[]).unwrap();
        tx.index_block_traces(3, &[address(1), address(3)], &[])
            .unwrap();
        // Not contiguous: skipped.
        tx.index_block_traces(5, &[address(1)], &[]).unwrap();
        assert_eq!(tx.trace_index_head().unwrap(), Some(3));
        assert!(matches!(
            tx.trace_candidates(&[address(1)], 0, 3),
            Err(Error::HistoryStaged)
        ));
        tx.write_staged().unwrap();
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
        tx.index_block_traces(3, &[address(3)], &[]).unwrap();
        tx.write_staged().unwrap();
        assert_eq!(found(&[address(3), address(1)], 0, 3), Some(vec![1, 3]));
    }

    /// The block's record holds only the addresses it does not name itself, while every
    /// address's list gets the block.
    #[test]
    fn the_record_leaves_out_the_named_addresses() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        tx.index_block_traces(0, &[], &[]).unwrap();
        let named = [address(2), address(1), address(9)];
        tx.index_block_traces(1, &[address(3), address(1), address(2)], &named)
            .unwrap();
        let record = tx.get_chunked(Table::TraceAddresses, 1).unwrap().unwrap();
        assert_eq!(record.as_ref(), address(3).as_slice());
        tx.write_staged().unwrap();
        for a in [address(1), address(2), address(3)] {
            assert_eq!(tx.trace_candidates(&[a], 0, 1).unwrap(), Some(vec![1]));
        }
        assert_eq!(
            tx.trace_candidates(&[address(9)], 0, 1).unwrap(),
            Some(vec![])
        );
    }

    #[test]
    fn a_database_stored_before_the_index_starts_it_only_from_genesis() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        // Block 7 of a database whose index never started: left for `index-traces`.
        tx.index_block_traces(7, &[address(1)], &[]).unwrap();
        assert_eq!(tx.trace_index_head().unwrap(), None);
        tx.index_block_traces(1, &[address(1)], &[]).unwrap();
        assert_eq!(tx.trace_index_head().unwrap(), Some(1));
    }

    /// An address named in more blocks than a shard holds: ranges within one shard, across
    /// shards and past the last all find exactly the named blocks, and an unwind takes the
    /// last ones out.
    #[test]
    fn ranges_read_across_shards() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        tx.index_block_traces(0, &[], &[]).unwrap();
        let named = |number: u64| !number.is_multiple_of(3);
        for number in 1..=5_000u64 {
            let addresses = match named(number) {
                true => vec![address(1), address(2)],
                false => vec![address(2)],
            };
            tx.index_block_traces(number, &addresses, &[]).unwrap();
        }
        tx.commit().unwrap();
        let tx = db.writer().unwrap();
        for (from, to) in [
            (1, 10),
            (1_990, 2_020),
            (2_999, 4_200),
            (4_990, 6_000),
            (1, 5_000),
        ] {
            let expected: Vec<u64> = (from..=to.min(5_000)).filter(|n| named(*n)).collect();
            let to_indexed = to.min(5_000);
            assert_eq!(
                tx.trace_candidates(&[address(1)], from, to_indexed)
                    .unwrap(),
                Some(expected),
                "{from}..={to}"
            );
        }
        assert_eq!(
            tx.trace_candidates(&[address(2)], 2_500, 2_502).unwrap(),
            Some(vec![2_500, 2_501, 2_502])
        );
        for number in (4_000..=5_000).rev() {
            tx.unindex_block_traces(number).unwrap();
        }
        assert_eq!(tx.trace_index_head().unwrap(), Some(3_999));
        let expected: Vec<u64> = (3_900..=3_999).filter(|n| named(*n)).collect();
        assert_eq!(
            tx.trace_candidates(&[address(1)], 3_900, 3_999).unwrap(),
            Some(expected)
        );
    }

    /// A layout 8 index (one entry per address and block), moved into the lists in small
    /// steps, finds the same blocks, and its per-address entries are gone.
    #[test]
    fn layout_8_entries_move_into_the_lists() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        let blocks: Vec<(u64, Vec<Address>)> = (1..=40u64)
            .map(|n| (n, (0..(n % 4) as u8).map(|i| address(i * 7 + 1)).collect()))
            .collect();
        for (number, addresses) in &blocks {
            let mut list = Vec::new();
            for a in addresses {
                let mut key = a.to_vec();
                key.extend_from_slice(&number.to_be_bytes());
                tx.put(Table::TraceAddresses, &key, &[]).unwrap();
                list.extend_from_slice(a.as_slice());
            }
            tx.put(Table::TraceAddresses, &number.to_be_bytes(), &list)
                .unwrap();
        }
        tx.put_meta(MetaKey::TraceIndexHead, &40u64.to_be_bytes())
            .unwrap();
        tx.put_schema(crate::STATE_LISTS_LAYOUT).unwrap();
        tx.commit().unwrap();
        let steps = crate::maintenance::migrate::migrate_in_steps(&db, 7);
        assert!(steps > 3, "{steps} steps");
        let tx = db.reader().unwrap();
        assert!(tx.schema_version().unwrap() >= TRACE_LISTS_LAYOUT);
        for i in 0..3u8 {
            let a = address(i * 7 + 1);
            let expected: Vec<u64> = blocks
                .iter()
                .filter(|(_, addresses)| addresses.contains(&a))
                .map(|(n, _)| *n)
                .collect();
            assert_eq!(tx.trace_candidates(&[a], 1, 40).unwrap(), Some(expected));
        }
        let mut cursor = tx.tx.cursor(tx.db(Table::TraceAddresses)).unwrap();
        let mut entry = cursor.first::<Vec<u8>, ()>().unwrap();
        while let Some((key, ())) = entry {
            assert_eq!(key.len(), 8);
            entry = cursor.next::<Vec<u8>, ()>().unwrap();
        }
    }
}
