//! The keys of the `Meta` table, declared once: every read and write of `Meta` names a
//! [`MetaKey`], whose ASCII string is the key stored on disk. Those strings are what existing
//! datadirs hold, so a variant's string never changes (the test below pins each one).

use std::borrow::Cow;

/// A key of the `Meta` table; each variant's doc says what its value holds and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaKey {
    /// `chain_config`: the genesis `config` as JSON.
    ChainConfig,
    /// `network`: the public network's name (`--chain`), as UTF-8; absent for a custom chain.
    Network,
    /// `log_index_head`: u64 BE, the block through which the log index (`LogAddresses`,
    /// `LogTopicLists`) is complete.
    LogIndexHead,
    /// `safe_block`: u64 BE, the block the `safe` tag names ([`BlockMark::Safe`]).
    SafeBlock,
    /// `finalized_block`: u64 BE, the block the `finalized` tag names
    /// ([`BlockMark::Finalized`]).
    FinalizedBlock,
    /// `sync_target`: block (u64 BE) ‖ pid (u32 BE) of a running ingest: the block it imports
    /// towards and its process.
    SyncTarget,
    /// `upstream_head`: block (u64 BE) ‖ unix seconds (u64 BE) when `quarry follow` last saw
    /// its upstream there (‖ its peer count, u64 BE, when it answered one).
    UpstreamHead,
    /// `schema`: the layout version (u64 BE; absent = 1, no changesets). See migrate.rs for
    /// what each version changed.
    Schema,
    /// `trace_index_head`: u64 BE, the block through which the trace index is complete.
    TraceIndexHead,
    /// `trie_history_from`: u64 BE, the first block the trie node history records.
    TrieHistoryFrom,
    /// `trie_history_window`: u64 BE, the node history's (fine) window in blocks (absent = 1).
    /// Blocks are grouped in windows of this many, aligned on multiples of it, and the history
    /// records a node once per window: as it was before the window's first change to it.
    /// Nodes near the root change in nearly every block, so a window of blocks writes each of
    /// them once instead of once per block; the trie after an older block is then read at the
    /// end of its window (or of the one before), with the blocks between undone (or redone)
    /// over it.
    TrieHistoryWindow,
    /// `proof_history`: u64 BE, how many blocks behind the head the node history keeps its
    /// fine windows (absent = all, as datadirs from before the setting; a new datadir: 1,024;
    /// `--proof-history N`).
    ProofHistory,
    /// `trie_history_coarse_window`: u64 BE, the window older node history is thinned to
    /// (absent = 1,024).
    TrieHistoryCoarseWindow,
    /// `trie_history_fine_from`: u64 BE, the first block from which every fine window's
    /// records are kept (absent = nothing thinned). A multiple of the coarse window.
    TrieHistoryFineFrom,
    /// `state_history_from`: u64 BE, the first block from which the state history (the lists,
    /// in layout 6 the leaf history) answers.
    StateHistoryFrom,
    /// `state_history_window`: u64 BE, how many blocks behind the head keep their state
    /// history (`--state-history N`; absent = all, an archive).
    StateHistoryWindow,
    /// `state_kept_from`: u64 BE, the oldest block whose state is kept, at least 1 (absent =
    /// every block's): the changesets of blocks up to it, their blocks in the lists and the
    /// node history records they wrote are pruned.
    StateKeptFrom,
    /// `unwinds`: u64 BE, how many unwinds were ever committed.
    Unwinds,
    /// `changesets_progress`: where `quarry migrate` stopped building the changesets: the
    /// history table being read (one byte, 0 accounts, 1 storage) ‖ the last history key done.
    ChangesetsProgress,
    /// `receipts_progress`: where `quarry migrate` stopped re-encoding the receipts: the next
    /// block to re-encode (u64 BE).
    ReceiptsProgress,
    /// `trie_progress`: where `quarry migrate` stopped building the state trie: the last
    /// address (20 bytes) whose storage trie and hashed state are written.
    TrieProgress,
    /// `compress_progress`: where `quarry migrate` stopped compressing the block data: the
    /// next block (u64 BE) whose body, receipts and lookups layout 7 rewrites.
    CompressProgress,
    /// `state_lists_progress`: where `quarry migrate` stopped building the state lists: the
    /// changesets being read (one byte, 0 accounts, 1 storage) ‖ the last changeset key done.
    StateListsProgress,
    /// `zstd_dictionary_block_bodies`: the zstd dictionary trained on `BlockBodies`' values
    /// (written once; see block_codec.rs).
    BlockBodiesDictionary,
    /// `zstd_dictionary_receipts`: the zstd dictionary trained on `Receipts`' values (written
    /// once; see block_codec.rs).
    ReceiptsDictionary,
    /// `scratch-<n>`: a value a test or a benchmark (examples/commit_latency.rs) puts and then
    /// deletes, to fill pages. No quarry command writes or reads one.
    Scratch(u32),
}

impl MetaKey {
    /// The key as stored on disk.
    pub(crate) fn key(self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Self::ChainConfig => "chain_config",
            Self::Network => "network",
            Self::LogIndexHead => "log_index_head",
            Self::SafeBlock => "safe_block",
            Self::FinalizedBlock => "finalized_block",
            Self::SyncTarget => "sync_target",
            Self::UpstreamHead => "upstream_head",
            Self::Schema => "schema",
            Self::TraceIndexHead => "trace_index_head",
            Self::TrieHistoryFrom => "trie_history_from",
            Self::TrieHistoryWindow => "trie_history_window",
            Self::ProofHistory => "proof_history",
            Self::TrieHistoryCoarseWindow => "trie_history_coarse_window",
            Self::TrieHistoryFineFrom => "trie_history_fine_from",
            Self::StateHistoryFrom => "state_history_from",
            Self::StateHistoryWindow => "state_history_window",
            Self::StateKeptFrom => "state_kept_from",
            Self::Unwinds => "unwinds",
            Self::ChangesetsProgress => "changesets_progress",
            Self::ReceiptsProgress => "receipts_progress",
            Self::TrieProgress => "trie_progress",
            Self::CompressProgress => "compress_progress",
            Self::StateListsProgress => "state_lists_progress",
            Self::BlockBodiesDictionary => "zstd_dictionary_block_bodies",
            Self::ReceiptsDictionary => "zstd_dictionary_receipts",
            Self::Scratch(n) => return Cow::Owned(format!("scratch-{n}")),
        })
    }
}

/// A block number kept in `Meta`: the blocks that `safe` and `finalized` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockMark {
    Safe,
    Finalized,
}

impl BlockMark {
    /// The `Meta` key holding the block.
    pub(crate) const fn key(self) -> MetaKey {
        match self {
            Self::Safe => MetaKey::SafeBlock,
            Self::Finalized => MetaKey::FinalizedBlock,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Table;
    use std::collections::HashSet;

    /// Every key as existing datadirs store it.
    const KEYS: [(MetaKey, &str); 25] = [
        (MetaKey::ChainConfig, "chain_config"),
        (MetaKey::Network, "network"),
        (MetaKey::LogIndexHead, "log_index_head"),
        (MetaKey::SafeBlock, "safe_block"),
        (MetaKey::FinalizedBlock, "finalized_block"),
        (MetaKey::SyncTarget, "sync_target"),
        (MetaKey::UpstreamHead, "upstream_head"),
        (MetaKey::Schema, "schema"),
        (MetaKey::TraceIndexHead, "trace_index_head"),
        (MetaKey::TrieHistoryFrom, "trie_history_from"),
        (MetaKey::TrieHistoryWindow, "trie_history_window"),
        (MetaKey::ProofHistory, "proof_history"),
        (
            MetaKey::TrieHistoryCoarseWindow,
            "trie_history_coarse_window",
        ),
        (MetaKey::TrieHistoryFineFrom, "trie_history_fine_from"),
        (MetaKey::StateHistoryFrom, "state_history_from"),
        (MetaKey::StateHistoryWindow, "state_history_window"),
        (MetaKey::StateKeptFrom, "state_kept_from"),
        (MetaKey::Unwinds, "unwinds"),
        (MetaKey::ChangesetsProgress, "changesets_progress"),
        (MetaKey::ReceiptsProgress, "receipts_progress"),
        (MetaKey::TrieProgress, "trie_progress"),
        (MetaKey::CompressProgress, "compress_progress"),
        (MetaKey::StateListsProgress, "state_lists_progress"),
        (
            MetaKey::BlockBodiesDictionary,
            "zstd_dictionary_block_bodies",
        ),
        (MetaKey::ReceiptsDictionary, "zstd_dictionary_receipts"),
    ];

    /// Fails to compile when a variant is added, so that it joins `KEYS` (the scratch keys
    /// aside: they are never kept).
    const fn listed(key: MetaKey) -> bool {
        match key {
            MetaKey::ChainConfig
            | MetaKey::Network
            | MetaKey::LogIndexHead
            | MetaKey::SafeBlock
            | MetaKey::FinalizedBlock
            | MetaKey::SyncTarget
            | MetaKey::UpstreamHead
            | MetaKey::Schema
            | MetaKey::TraceIndexHead
            | MetaKey::TrieHistoryFrom
            | MetaKey::TrieHistoryWindow
            | MetaKey::ProofHistory
            | MetaKey::TrieHistoryCoarseWindow
            | MetaKey::TrieHistoryFineFrom
            | MetaKey::StateHistoryFrom
            | MetaKey::StateHistoryWindow
            | MetaKey::StateKeptFrom
            | MetaKey::Unwinds
            | MetaKey::ChangesetsProgress
            | MetaKey::ReceiptsProgress
            | MetaKey::TrieProgress
            | MetaKey::CompressProgress
            | MetaKey::StateListsProgress
            | MetaKey::BlockBodiesDictionary
            | MetaKey::ReceiptsDictionary => true,
            MetaKey::Scratch(_) => false,
        }
    }

    #[test]
    fn every_key_is_the_string_datadirs_hold_and_none_repeats() {
        let mut seen = HashSet::new();
        for (key, stored) in KEYS {
            assert!(listed(key), "{key:?}");
            assert_eq!(key.key(), stored, "{key:?}");
            assert!(seen.insert(stored), "{stored} is used twice");
            // Scratch keys cannot land on a kept one.
            assert!(!stored.starts_with("scratch-"), "{stored}");
        }
        assert_eq!(MetaKey::Scratch(7).key(), "scratch-7");
        assert_eq!(BlockMark::Safe.key(), MetaKey::SafeBlock);
        assert_eq!(BlockMark::Finalized.key(), MetaKey::FinalizedBlock);
        // The dictionary keys are `zstd_dictionary_` and their table's name.
        for (key, table) in [
            (MetaKey::BlockBodiesDictionary, Table::BlockBodies),
            (MetaKey::ReceiptsDictionary, Table::Receipts),
        ] {
            assert_eq!(key.key(), format!("zstd_dictionary_{}", table.name()));
        }
    }
}
