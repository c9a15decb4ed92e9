//! Every MDBX table quarry uses, declared once (the tables only older layouts write are
//! declared in legacy.rs, and named here where they stand in `Table::ALL`), and which tables
//! hold a trie's entries (`TrieId`).
//!
//! Integers in keys are big-endian so that MDBX's byte order is numeric order, which is what
//! makes "the last entry at or before block N" a single cursor seek.

use crate::legacy::LegacyTable;
use alloy_primitives::B256;

macro_rules! tables {
    // Reads the declarations one at a time: a live table's variant and name, or `legacy X;`,
    // a table of legacy.rs at that place in `Table::ALL`.
    (@read [$($live:tt)*] [$($all:tt)*] [$($order:ident)*] [$($legacy:ident)*]) => {
        tables!(@emit [$($live)*] [$($all)*] [$($order)*] [$($legacy)*]);
    };
    (@read [$($live:tt)*] [$($all:tt)*] [$($order:ident)*] [$($legacy:ident)*]
        legacy $name:ident; $($rest:tt)*) => {
        tables!(@read [$($live)*] [$($all)* Table::Legacy(LegacyTable::$name),]
            [$($order)* $name] [$($legacy)* $name] $($rest)*);
    };
    (@read [$($live:tt)*] [$($all:tt)*] [$($order:ident)*] [$($legacy:ident)*]
        $(#[$doc:meta])* $name:ident = $label:literal; $($rest:tt)*) => {
        tables!(@read [$($live)* $(#[$doc])* $name = $label;] [$($all)* Table::$name,]
            [$($order)* $name] [$($legacy)*] $($rest)*);
    };
    (@emit [$( $(#[$doc:meta])* $name:ident = $label:literal; )*] [$($all:expr,)*]
        [$($order:ident)*] [$($legacy:ident)*]) => {
        /// A table: its MDBX name is `Table::name()`.
        #[derive(Clone, Copy, PartialEq, Eq)]
        pub enum Table {
            $( $(#[$doc])* $name, )*
            /// A table only older datadir layouts write (legacy.rs).
            Legacy(LegacyTable),
        }

        /// Each table's place in `Table::ALL`.
        enum Place { $( $order, )* }

        impl Table {
            /// Every table, in declaration order.
            pub const ALL: &'static [Table] = &[ $( $all, )* ];

            /// The table's MDBX database name.
            pub const fn name(self) -> &'static str {
                match self {
                    $( Table::$name => $label, )*
                    Table::Legacy(table) => table.name(),
                }
            }

            /// The table's place in [`Table::ALL`].
            pub(crate) const fn index(self) -> usize {
                match self {
                    $( Table::$name => Place::$name as usize, )*
                    $( Table::Legacy(LegacyTable::$legacy) => Place::$legacy as usize, )*
                }
            }
        }

        impl std::fmt::Debug for Table {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self {
                    $( Table::$name => f.write_str(stringify!($name)), )*
                    Table::Legacy(table) => std::fmt::Debug::fmt(table, f),
                }
            }
        }
    };
    ($($declarations:tt)*) => {
        tables!(@read [] [] [] [] $($declarations)*);
    };
}

tables! {
    /// Chain-level facts. Key: ASCII name. Values: `chain_config`: the genesis.json `config`
    /// object as JSON; `safe_block`, `finalized_block`: a block number (u64 BE) set by
    /// `quarry ingest --safe/--finalized`; `sync_target`: while an ingest runs, the highest
    /// block number it has read (u64 BE) then its process id (u32 BE); `upstream_head`: the
    /// head `quarry follow` last saw its upstream at (u64 BE) then when (unix seconds, u64
    /// BE), then its `net_peerCount` (u64 BE) when it answered one; `log_index_head`: the
    /// highest block through which `LogAddresses` and `LogTopicLists` are complete (u64 BE);
    /// `schema`: the layout version (u64 BE, see `SCHEMA_VERSION`); `compress_progress`: while
    /// `quarry migrate` compresses the block data, the next block to rewrite (u64 BE); `unwinds`: how many
    /// unwinds were ever committed (u64 BE), so a reader that caches by block number can tell
    /// that stored blocks changed; `trie_history_from`: the first block whose trie node changes
    /// the trie history tables record (u64 BE); `trie_history_window`: how many blocks the node
    /// history groups into one record per node (u64 BE; absent: 1); `proof_history`: how many
    /// blocks behind the head the node history keeps those windows (u64 BE; absent: all);
    /// `trie_history_coarse_window`: the window older node history is thinned to (u64 BE;
    /// absent: 1,024); `trie_history_fine_from`: the first block from which every window's node
    /// records are kept (u64 BE; absent: none thinned; see proof_history.rs); `state_history_from`: the first block from
    /// which the state history (the block lists of `AccountChangeLists` and
    /// `StorageChangeLists` over the changesets) answers (u64 BE); `state_lists_progress`: how
    /// far `quarry migrate` has built those lists (see state_lists_migrate.rs);
    /// `zstd_dictionary_block_bodies`, `zstd_dictionary_receipts`: the zstd dictionary trained
    /// on the table's own values, which its later values are compressed with (written once and
    /// never changed; see block_codec.rs).
    Meta = "meta";
    /// Key: block number (u64 BE). Value: the RLP-encoded header.
    Headers = "headers";
    /// The canonical chain. Key: block number (u64 BE). Value: block hash (32 bytes). The last
    /// key is the head.
    CanonicalHashes = "canonical_hashes";
    /// Key: block hash (32 bytes). Value: block number (u64 BE).
    HeaderNumbers = "header_numbers";
    /// Key: block number (u64 BE). Value: total difficulty up to and including the block
    /// (U256, 32 bytes BE).
    TotalDifficulty = "total_difficulty";
    /// Key: block number (u64 BE). Value: compressed (a codec tag, see block_codec.rs) RLP of
    /// `BlockBody<TxEnvelope>` (transactions in their network encoding, ommer headers, optional
    /// withdrawals).
    BlockBodies = "block_bodies";
    /// Key: block number (u64 BE). Value: the recovered sender of each transaction, 20 bytes each,
    /// concatenated in block order (uncompressed: see `BlockData` in block_codec.rs).
    Senders = "senders";
    /// Transaction lookups that `TxLookupGroups` cannot hold, and those written before it. Key:
    /// the transaction hash's first 8 bytes, then its block number as u64 BE and index in the
    /// block as u32 BE (a location beyond a group's widths, or any written before narrow keys),
    /// or, as written before groups, the block number (u32 BE) and index (u16 BE); the key's
    /// length tells them apart (see tx_lookup.rs). Value: empty. Hashes that share the prefix
    /// are told apart by the block's `BlockTxHashes`. Layouts before 7: key the whole hash,
    /// value the block number then the index.
    TxLookup = "tx_lookup";
    /// The transaction lookup (tx_lookup.rs), grouped: MDBX DUPSORT with fixed-size values,
    /// which it packs in pages without a header each. Key: the transaction hash's first 2
    /// bytes. Values (12 bytes each, sorted): the hash's next 6 bytes, the block number (u32
    /// BE), the index in the block (u16 BE). Locations beyond those widths, and lookups written
    /// before this table, are in `TxLookup`.
    TxLookupGroups = "tx_lookup_groups";
    /// Key: block number (u64 BE). Value: the number of transactions in blocks 0 through this
    /// one (u64 BE), so a transaction's position in the whole chain is one read away.
    TxCounts = "tx_counts";
    /// Key: block number (u64 BE). Value: compressed (see block_codec.rs): the block's receipts
    /// in receipts.rs's in-place encoding, in transaction order.
    Receipts = "receipts";
    /// Key: block number (u64 BE). Value: the hashes of the block's transactions, 32 bytes each,
    /// concatenated in block order (what a log needs without decoding the body).
    BlockTxHashes = "block_tx_hashes";
    /// Log index by emitting contract: one entry per block holding at least one log of the
    /// address. Key: address (20 bytes) then block number (u64 BE). Value: which of the block's
    /// receipts hold such a log (see `encode_receipt_list` in logs.rs), or empty (every receipt
    /// may): when they are more than half the block's, or in entries written before the lists.
    LogAddresses = "log_addresses";
    legacy LogTopics;
    /// The trace index's record of each block (trace_index.rs), what an unwind takes out of
    /// `TraceAddressLists`. Key: block number (u64 BE). Value: the addresses its call frames
    /// name, 20 bytes each. (Layouts before 9 also held one entry per address and block here,
    /// keyed by the address then the block number, value empty; `quarry migrate` moves them to
    /// `TraceAddressLists`.)
    TraceAddresses = "trace_addresses";
    /// Key: code hash (32 bytes). Value: the raw bytecode.
    Bytecodes = "bytecodes";
    /// Latest state of every existing account. Key: address (20 bytes). Value: `StoredAccount`
    /// (nonce u64 BE, balance 32 bytes BE, code hash 32 bytes: 72 bytes).
    PlainAccounts = "plain_accounts";
    /// Latest non-zero storage. Key: address (20 bytes) then slot (32 bytes). Value: the value
    /// (32 bytes BE).
    PlainStorage = "plain_storage";
    legacy AccountHistory;
    legacy StorageHistory;
    legacy AccountChangeSets;
    /// What each block changed, for unwinding it and for the state history: every account the
    /// block changed, as it was before the block. Key: block number (u32 BE, as the block lists
    /// hold them) then address (20 bytes). Value: the account in the compact encoding of
    /// models.rs (`encode_account`), with its storage root before the block when that is not
    /// the empty trie's (older entries: `StoredAccount`'s 72 bytes), or empty when the account
    /// did not exist before the block.
    NarrowAccountChangeSets = "narrow_account_changesets";
    legacy StorageChangeSets;
    /// Every storage slot a block changed (including the slots a self-destruct cleared), with
    /// its value before the block, grouped by account: MDBX DUPSORT, so the block and address
    /// are stored once for all the slots they hold (a block changes about 18 slots of each
    /// account it writes on the scale chain). Key: block number (u64 BE) then address (20).
    /// Values (sorted): the slot (32) then its value before the block as in `PlainStorage`
    /// (nothing when it was unset). See changesets.rs.
    StorageChangeGroups = "storage_change_groups";
    /// The latest state trie's account leaves. Key: keccak256 of the address (32 bytes). Value:
    /// `StoredAccount` (72 bytes) then the storage root: 104 bytes (see trie.rs).
    HashedAccounts = "hashed_accounts";
    /// The latest state trie's storage leaves. Key: keccak256 of the address (32) then of the
    /// slot (32). Value: the non-zero value (32 bytes BE).
    HashedStorages = "hashed_storages";
    /// The accounts trie's branch nodes. Key: the node's nibble path, one byte per nibble (the
    /// root's is empty). Value: `BranchNodeCompact` (masks, child hashes, root hash; see trie.rs).
    AccountsTrie = "accounts_trie";
    /// The storage tries' branch nodes. Key: keccak256 of the address (32) then the node's nibble
    /// path, one byte per nibble. Value: as in `AccountsTrie`.
    StoragesTrie = "storages_trie";
    /// What each window of blocks changed in the accounts trie's branch nodes, as they were
    /// before the window: one entry per node a window changed (a window is one block in
    /// datadirs whose `trie_history_window` is absent). Key: the node's path as a history path
    /// (one byte per nibble plus one, then a zero byte, so keys sort in trie order and a path's
    /// entries are contiguous; see trie_history.rs) then the window's first block number (u64
    /// BE). Value: the node before the window, tagged whole or (one-block windows) as a diff
    /// from the node after it (see trie_history.rs), or empty when there was none. Before
    /// `trie_history_fine_from`, only a node's first record in each coarse window is kept,
    /// as a diff from its next record or the current node (see proof_history.rs).
    AccountsTrieHistory = "accounts_trie_history";
    /// As `AccountsTrieHistory`, for the storage tries. Key: keccak256 of the address (32),
    /// the history path, then the block number (u64 BE). Value: as in `AccountsTrieHistory`.
    StoragesTrieHistory = "storages_trie_history";
    /// Which node history entries each block wrote (the first change of a node in its window),
    /// so an unwind finds them. Key: the block number (u64 BE), then 0 and the
    /// `AccountsTrieHistory` key without its block number, or 1 and the `StoragesTrieHistory`
    /// key without it. Value: empty.
    TrieChangeSets = "trie_changesets";
    legacy HashedAccountsHistory;
    legacy HashedStoragesHistory;
    /// The state history's block lists for accounts (see state_lists.rs): the blocks whose
    /// `AccountChangeSets` hold an account, cut in shards of at most 2,000. Key: keccak256 of
    /// the address (32 bytes, so keys walk in the accounts trie's order) then the shard's
    /// highest block (u64 BE; `u64::MAX` for the last shard). Value: the address (20 bytes), then
    /// the shard's block numbers as a serialized roaring bitmap, or as a byte 0 then varint
    /// deltas when that is shorter (state_lists.rs, `encode_shard`). An account after block N
    /// is the changeset entry of its first listed block after N, or else the latest account.
    AccountChangeLists = "account_change_lists";
    /// As `AccountChangeLists`, for storage slots and `StorageChangeSets`. Key: keccak256 of the
    /// address (32), of the slot (32), then the shard's highest block (u64 BE). Value: the
    /// address (20) and slot (32), then the blocks as in `AccountChangeLists`.
    StorageChangeLists = "storage_change_lists";
    /// The trace index's lists (trace_index.rs): per address, the blocks whose call frames
    /// name it, sharded as `AccountChangeLists` (state_lists.rs). Key: the address (20 bytes),
    /// then the shard's highest block (u64 BE; u64::MAX for the address's last shard). Value:
    /// the blocks as in `AccountChangeLists`.
    TraceAddressLists = "trace_address_lists";
    /// The log index by topic (log_index.rs): per topic and position in a log (0-3), the
    /// blocks holding a log with the topic there, sharded as `AccountChangeLists`. Key: the
    /// topic (32 bytes), the position (1 byte), then the shard's highest block (u64 BE;
    /// u64::MAX for the last shard). Value: the blocks as in `AccountChangeLists`.
    LogTopicLists = "log_topic_lists";
}

impl Table {
    /// Whether the table holds sorted fixed-size values under each key (MDBX's DUPSORT and
    /// DUPFIXED).
    pub const fn fixed_size_duplicates(self) -> bool {
        matches!(self, Table::TxLookupGroups)
    }

    /// Whether the table holds sorted values of any size under each key (MDBX's DUPSORT).
    pub const fn sorted_duplicates(self) -> bool {
        matches!(self, Table::StorageChangeGroups)
    }
}

/// Which of a trie's two kinds of entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entries {
    Nodes,
    Leaves,
}

/// Which trie: the accounts trie, or the storage trie of the account with this hashed address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TrieId {
    Accounts,
    Storage(B256),
}

impl TrieId {
    /// The bytes every key of this trie starts with, in `HashedStorages` and `StoragesTrie`.
    pub(crate) fn prefix(&self) -> &[u8] {
        match self {
            TrieId::Accounts => &[],
            TrieId::Storage(account) => account.as_slice(),
        }
    }

    pub(crate) fn nodes_table(&self) -> Table {
        match self {
            TrieId::Accounts => Table::AccountsTrie,
            TrieId::Storage(_) => Table::StoragesTrie,
        }
    }

    pub(crate) fn leaves_table(&self) -> Table {
        match self {
            TrieId::Accounts => Table::HashedAccounts,
            TrieId::Storage(_) => Table::HashedStorages,
        }
    }

    pub(crate) fn table(&self, entries: Entries) -> Table {
        match entries {
            Entries::Nodes => self.nodes_table(),
            Entries::Leaves => self.leaves_table(),
        }
    }

    pub(crate) fn history_table(&self, entries: Entries) -> Table {
        match (self, entries) {
            (TrieId::Accounts, Entries::Nodes) => Table::AccountsTrieHistory,
            (TrieId::Storage(_), Entries::Nodes) => Table::StoragesTrieHistory,
            (TrieId::Accounts, Entries::Leaves) => Table::AccountChangeLists,
            (TrieId::Storage(_), Entries::Leaves) => Table::StorageChangeLists,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tables keep their names and their order (how `Table::ALL` lists them, what a
    /// datadir's digests and sizes are printed in), the legacy ones where they stood.
    #[test]
    fn every_table_keeps_its_name_and_place() {
        let names: Vec<&str> = Table::ALL.iter().map(|table| table.name()).collect();
        assert_eq!(
            names,
            [
                "meta",
                "headers",
                "canonical_hashes",
                "header_numbers",
                "total_difficulty",
                "block_bodies",
                "senders",
                "tx_lookup",
                "tx_lookup_groups",
                "tx_counts",
                "receipts",
                "block_tx_hashes",
                "log_addresses",
                "log_topics",
                "trace_addresses",
                "bytecodes",
                "plain_accounts",
                "plain_storage",
                "account_history",
                "storage_history",
                "account_changesets",
                "narrow_account_changesets",
                "storage_changesets",
                "storage_change_groups",
                "hashed_accounts",
                "hashed_storages",
                "accounts_trie",
                "storages_trie",
                "accounts_trie_history",
                "storages_trie_history",
                "trie_changesets",
                "hashed_accounts_history",
                "hashed_storages_history",
                "account_change_lists",
                "storage_change_lists",
                "trace_address_lists",
                "log_topic_lists",
            ]
        );
        for (place, table) in Table::ALL.iter().enumerate() {
            assert_eq!(table.index(), place, "{table:?}");
        }
        for legacy in LegacyTable::ALL {
            assert!(Table::ALL.contains(&Table::Legacy(*legacy)), "{legacy:?}");
        }
        assert_eq!(
            format!("{:?}", Table::Legacy(LegacyTable::LogTopics)),
            "LogTopics"
        );
    }
}
