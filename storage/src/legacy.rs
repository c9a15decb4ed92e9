//! The tables older datadir layouts left, which only those datadirs hold entries in: declared
//! apart from the live tables (tables.rs), each with the layouts that wrote it and who still
//! reads it. Every datadir has them (MDBX opens every table by name, `Table::Legacy`); a datadir
//! made at the current layout leaves them empty.
//!
//! - `AccountHistory`, `StorageHistory`: the plain state history of layouts 1 to 5. A datadir
//!   first written before layout 6 keeps them: the state after a block before its
//!   `state_history_from` is read from them (state/plain.rs), an unwind deletes its block's
//!   entries (changesets.rs), and the migration to layout 2 builds the changesets from them.
//! - `HashedAccountsHistory`, `HashedStoragesHistory`: the leaf history of layout 6, read by the
//!   migration to layout 8 (maintenance/state_lists_migrate.rs), which empties them.
//! - `LogTopics`: the log index by topic of layouts before 10, read by the migration to layout
//!   10 (indexes/log_index.rs, `list_log_topics`), which empties it.
//! - `AccountChangeSets`, `StorageChangeSets`: the changesets of layouts 2 to 10, emptied into
//!   `NarrowAccountChangeSets` and `StorageChangeGroups` by the migration to layout 11
//!   (changesets.rs, `move_wide_changesets`).
//!
//! Their names and encodings stay as those layouts wrote them.

/// A table only older layouts write; see the module's list for which datadirs still need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegacyTable {
    /// Account history as layouts before 6 kept it (now only read, for blocks before
    /// `state_history_from`; later ones read `AccountChangeLists`): one entry per block that
    /// changed the account, holding the account as it was after that block. Key: address (20
    /// bytes) then block number (u64 BE). Value: `StoredAccount` (72 bytes), or empty when the
    /// account did not exist after the block.
    AccountHistory,
    /// Storage history as layouts before 6 kept it (read as `AccountHistory` is): one entry per
    /// block that changed the slot, holding its value after that block. Key: address (20) then
    /// slot (32) then block number (u64 BE). Value: 32 bytes BE (zero when cleared).
    StorageHistory,
    /// The state history of layouts 6 (now only emptied, by `quarry migrate`): what each block
    /// changed in the accounts trie's leaves, as they were before the block. Key: keccak256 of
    /// the address (32) then the block number (u64 BE). Value: the leaf as in `HashedAccounts`,
    /// or empty when the account did not exist.
    HashedAccountsHistory,
    /// As `HashedAccountsHistory` (layout 6, emptied by `quarry migrate`), for the storage tries'
    /// leaves. Key: keccak256 of the address (32), of the slot (32), then the block number (u64
    /// BE). Value: the value as in `HashedStorages`, or empty when it was unset.
    HashedStoragesHistory,
    /// Log index by topic as layouts before 10 kept it (`quarry migrate` moves it into
    /// `LogTopicLists`): one entry per block where some log has the topic. Key: topic (32
    /// bytes) then block number (u64 BE). Value: one byte, bit i set when the topic is at
    /// position i (0-3) of some log of the block, then which receipts hold a log with the topic
    /// at any position (as in `LogAddresses`; absent in entries written before the lists).
    LogTopics,
    /// What each block changed, as layouts before 11 kept it (now only emptied, by `quarry
    /// migrate`, into `NarrowAccountChangeSets`). Key: block number (u64 BE) then address (20
    /// bytes). Value: as in `NarrowAccountChangeSets`.
    AccountChangeSets,
    /// Every storage slot a block changed (including the slots a self-destruct cleared), with
    /// its value before the block, as layouts before 11 kept them (now only emptied, by
    /// `quarry migrate`, into `StorageChangeGroups`). Key: block number (u64 BE) then address
    /// (20) then slot (32). Value: as in `PlainStorage` (empty when it was unset).
    StorageChangeSets,
}

impl LegacyTable {
    /// Every legacy table.
    pub const ALL: &'static [LegacyTable] = &[
        LegacyTable::AccountHistory,
        LegacyTable::StorageHistory,
        LegacyTable::HashedAccountsHistory,
        LegacyTable::HashedStoragesHistory,
        LegacyTable::LogTopics,
        LegacyTable::AccountChangeSets,
        LegacyTable::StorageChangeSets,
    ];

    /// The table's MDBX database name.
    pub const fn name(self) -> &'static str {
        match self {
            LegacyTable::AccountHistory => "account_history",
            LegacyTable::StorageHistory => "storage_history",
            LegacyTable::HashedAccountsHistory => "hashed_accounts_history",
            LegacyTable::HashedStoragesHistory => "hashed_storages_history",
            LegacyTable::LogTopics => "log_topics",
            LegacyTable::AccountChangeSets => "account_changesets",
            LegacyTable::StorageChangeSets => "storage_changesets",
        }
    }
}
