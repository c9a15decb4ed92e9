//! quarry-storage owns the MDBX database: the tables, their key and value encodings, and typed
//! reads and writes of blocks, receipts, bytecode, the latest state and the full state history.
//! It knows nothing of RPC or of revm.

mod blocks;
mod env;
mod history;
mod indexes;
mod legacy;
mod maintenance;
mod meta_key;
mod models;
mod staged;
mod state;
mod tables;

// Modules other crates name by path, where they were before the folders.
pub use blocks::{block_codec, block_dictionary};
pub use state::keccak;

pub use blocks::block_codec::{BlockCompressor, BlockData, CompressedBlockData};
pub use blocks::receipts::{BlockReceiptsView, LogView, LogViews, ReceiptView};
pub use env::capacity::{DEFAULT_MAX_SIZE, DatabaseOptions, free_space};
pub use env::tail::TailWarmer;
pub use history::changesets::{AccountBefore, RestoredAccount, Unwound};
pub use history::proof_history::{COARSE_NODE_WINDOW, DEFAULT_PROOF_HISTORY, PRUNE_BUDGET};
pub use history::state_window::STATE_PRUNE_CATCH_UP;
pub use history::trie_history::NODE_HISTORY_WINDOW;
pub use indexes::log_index::{LocatedLog, LogFilter, LogLimits, LogsOutcome, MAX_TOPICS};
pub use indexes::trace_index::block_named_addresses;
pub use legacy::LegacyTable;
pub use maintenance::backup::BackupReport;
pub use maintenance::free_pages::Released;
pub use maintenance::migrate::{
    CHANGESETS_LAYOUT, COMPRESSED_BLOCKS_LAYOUT, NARROW_CHANGESETS_LAYOUT, SCHEMA_VERSION,
    STATE_LISTS_LAYOUT, TOPIC_LISTS_LAYOUT, TRACE_LISTS_LAYOUT,
};
pub use meta_key::{BlockMark, MetaKey};
pub use models::{ReceiptOutcome, StorageRootBefore, StoredAccount, StoredReceipt, TxLocation};
pub use state::plain::AccountChange;
pub use state::trie::{
    Leaf, LeafCursor, LeafWriter, TrieNodeCursor, complete_leaf_hashes, first_key_under,
    leaf_child_hash,
};
pub use tables::{Table, TrieId};

use alloy_consensus::{BlockBody, Header, TxEnvelope};
use alloy_primitives::{Address, B256, U256};
use alloy_rlp::Decodable;
use models::be_u64;
use signet_libmdbx::{
    DatabaseFlags, Environment, EnvironmentFlags, Geometry, MdbxError, Mode, RoSync, RwSync,
    SyncMode, TransactionKind, WriteFlags,
    sys::PageSize,
    tx::{Cursor, Tx},
};
use std::{borrow::Cow, path::Path, sync::Arc};

/// The block a running `quarry ingest` is importing towards, and that process's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncTarget {
    pub block: u64,
    pub pid: u32,
}

/// The head a `quarry follow` last saw its upstream at, and when (unix seconds): a replica's
/// readiness compares its own head with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpstreamHead {
    pub block: u64,
    pub seen_at: u64,
    /// The upstream's `net_peerCount` then, when it answered one.
    pub peers: Option<u64>,
}

/// Everything stored for one block besides state.
pub struct BlockRecord<'a> {
    pub hash: B256,
    pub header: &'a Header,
    pub body: &'a StoredBody,
    pub senders: &'a [Address],
    pub receipts: &'a [StoredReceipt],
    pub total_difficulty: U256,
}

/// A block body as stored.
pub type StoredBody = BlockBody<TxEnvelope>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("database: {0}")]
    Mdbx(#[from] signet_libmdbx::MdbxError),
    #[error(
        "the file system holding the datadir {datadir} is full ({free} bytes free); nothing was lost: every commit up to the last one is stored. Free space there (or grow the file system) and run the command again; it resumes from the stored head"
    )]
    DiskFull { datadir: String, free: u64 },
    #[error(
        "the database in {datadir} reached its size bound of {bound} bytes (the setting --max-db-size); nothing was lost: every commit up to the last one is stored. Raise --max-db-size and run the command again; it resumes from the stored head"
    )]
    MapFull { datadir: String, bound: u64 },
    #[error("database read: {0}")]
    Read(#[from] signet_libmdbx::ReadError),
    #[error("database holds a malformed value: {0}")]
    Corrupt(String),
    #[error("cannot compress a value of {table}: {reason}")]
    Compress { table: &'static str, reason: String },
    #[error(
        "the trie history was read in a write transaction before its staged records were written"
    )]
    HistoryStaged,
    #[error(
        "block {0} is beyond the state history's block lists, which hold block numbers up to 2^32 - 1"
    )]
    BlockBeyondLists(u64),
    /// A read of the state after a block older than the state history window keeps.
    #[error(
        "pruned history unavailable: the state after block {block} is older than this datadir's state history window; the oldest block with state is {oldest}"
    )]
    PrunedHistory { block: u64, oldest: u64 },
    /// An unwind below the oldest block whose state the window keeps.
    #[error(
        "cannot unwind to block {ancestor}: this datadir keeps the state history of its last {window} blocks (state from block {oldest} on), so a reorganisation below block {oldest} cannot be undone"
    )]
    UnwindBeyondWindow {
        ancestor: u64,
        oldest: u64,
        window: u64,
    },
    /// A state history window that cannot be set: why.
    #[error("{0}")]
    StateWindow(String),
    #[error("cannot create database directory {path}: {source}")]
    CreateDir {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "{datadir} was written by a newer quarry (layout {found}; this build reads layouts up to {supported}): run that quarry or a newer one on it"
    )]
    NewerLayout {
        datadir: String,
        found: u64,
        supported: u64,
    },
    #[error("backup into {out}: {reason}")]
    Backup { out: String, reason: String },
    #[error("cannot read the size on disk of {file}: {source}")]
    DataFileSize {
        file: String,
        source: std::io::Error,
    },
    #[error("the database in {datadir} {reason}")]
    Locked { datadir: String, reason: String },
    /// An account's trie leaf after `block` was asked of the leaf history, and the changeset
    /// that holds it does not record the storage root (see [`StorageRootBefore::NotRecorded`]):
    /// the reader computes the root from the trie instead.
    #[error(
        "the changeset of block {changeset} does not record the storage root of {address} before it (its leaf after block {block} is read from the trie instead)"
    )]
    StorageRootNotRecorded {
        address: Address,
        block: u64,
        changeset: u64,
    },
    /// A benchmark setting from the environment that cannot be used: the variable and why.
    #[error("{variable}={value}: {reason}")]
    BenchSetting {
        variable: &'static str,
        value: String,
        reason: &'static str,
    },
    #[error("cannot give the free pages of {file} back to the file system: {reason}")]
    ReleasePages { file: String, reason: String },
}

pub type Result<T> = std::result::Result<T, Error>;

/// An open quarry database. Cheap to clone; share it between threads.
#[derive(Clone)]
pub struct Database {
    env: Environment,
    dbs: Arc<Vec<signet_libmdbx::Database>>,
    /// Entries read by whole-table scans and trie walks, by every transaction of this handle
    /// (see `state_entries_scanned`).
    scanned: Arc<std::sync::atomic::AtomicU64>,
    /// MDBX's data file in the datadir.
    data_file: Arc<std::path::PathBuf>,
    datadir: Arc<std::path::PathBuf>,
    /// The data file's size bound it was opened with (`--max-db-size`).
    max_size: u64,
    /// MDBX's page size, read at open: `Environment::stat` from another thread while this
    /// process holds the write transaction would read that transaction (MDBX_NOTLS) as its
    /// owner works on it.
    page_size: u64,
    /// The block data tables' zstd dictionaries, digested once per handle.
    dictionaries: Arc<blocks::block_dictionary::Dictionaries>,
    /// This process's mark that the datadir is open, cleared when the last clone drops (after
    /// `env`, declared before it).
    _open_mark: Arc<env::env_open::OpenMark>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").finish_non_exhaustive()
    }
}

/// The access of a read snapshot ([`ReadTx`]).
pub use signet_libmdbx::RoSync as ReadOnly;
/// What a transaction may do, as a type parameter of [`StorageTx`]: code generic over it works
/// on a read snapshot and on the writer alike, without naming the MDBX binding.
pub use signet_libmdbx::TransactionKind as Access;

/// A read-only transaction: one consistent snapshot of the database.
pub type ReadTx = StorageTx<RoSync>;
/// The read-write transaction; it also reads its own uncommitted writes.
pub type WriteTx = StorageTx<RwSync>;

impl Database {
    /// Opens (creating if needed) the database in directory `path`, bounded at
    /// [`DEFAULT_MAX_SIZE`].
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with(path, DatabaseOptions::default())
    }

    /// Opens (creating if needed) the database in directory `path`.
    ///
    /// Commits are durable (MDBX's Durable mode): a committed transaction survives a killed
    /// process and an operating-system crash, and a partial one is never exposed. Commits are
    /// large and few, so syncing each costs less than SafeNoSync, where a transaction that
    /// needs pages freed since the last sync makes MDBX sync in the middle of it, writing back
    /// pages the transaction then dirties again. Dirty pages live in memory and are written
    /// with `pwrite` at commit (no WRITEMAP): a full file system fails that write with an
    /// error, where writing through the map would kill the process with SIGBUS (see
    /// `capacity.rs`). Pages of an uncommitted transaction are never reachable from a
    /// committed root.
    pub fn open_with(path: &Path, options: DatabaseOptions) -> Result<Self> {
        let bench_page_size = env::capacity::bench_page_size()?;
        std::fs::create_dir_all(path).map_err(|source| Error::CreateDir {
            path: path.display().to_string(),
            source,
        })?;
        let max_size = usize::try_from(options.max_size).unwrap_or(usize::MAX);
        let mut builder = Environment::builder();
        if env::capacity::bench_writemap() {
            builder.write_map();
        }
        builder
            .set_max_dbs(Table::ALL.len())
            .set_max_readers(1024)
            .set_flags(EnvironmentFlags {
                mode: Mode::ReadWrite {
                    sync_mode: SyncMode::Durable,
                },
                no_rdahead: true,
                ..Default::default()
            })
            .set_geometry(Geometry {
                size: Some(0..max_size),
                growth_step: Some(max_size.clamp(1 << 20, 256 << 20) as isize),
                page_size: bench_page_size.map(PageSize::Set),
                ..Default::default()
            });
        let (env, open_mark) = env::env_open::open(&builder, path)?;
        merge_half_empty_pages(&env)?;
        env::capacity::reserve_lock_file(path)?;
        let datadir = Arc::new(path.to_path_buf());
        let explain = |err: MdbxError| Self::explain_at(&datadir, options.max_size, err.into());
        let tx = env.begin_rw_sync().map_err(explain)?;
        maintenance::migrate::refuse_newer_layout(&tx, path)?;
        let mut dbs = Vec::with_capacity(Table::ALL.len());
        for table in Table::ALL {
            let flags = if table.fixed_size_duplicates() {
                DatabaseFlags::DUP_SORT | DatabaseFlags::DUP_FIXED
            } else if table.sorted_duplicates() {
                DatabaseFlags::DUP_SORT
            } else {
                DatabaseFlags::empty()
            };
            dbs.push(tx.create_db(Some(table.name()), flags).map_err(explain)?);
        }
        tx.commit().map_err(explain)?;
        let page_size = u64::from(env.stat()?.page_size());
        Ok(Self {
            env,
            dbs: Arc::new(dbs),
            scanned: Arc::default(),
            data_file: Arc::new(path.join("mdbx.dat")),
            datadir,
            max_size: options.max_size,
            page_size,
            dictionaries: Arc::default(),
            _open_mark: Arc::new(open_mark),
        })
    }

    /// Starts keeping the data file's unused tail in the page cache, for a writer about to
    /// write much (see [`TailWarmer`]); it stops when the returned guard drops.
    pub fn warm_tail(&self) -> TailWarmer {
        TailWarmer::start(self.env.clone(), &self.data_file, self.page_size)
    }

    /// MDBX's transaction `tx` with this database's tables, nothing staged yet.
    fn storage_tx<K: TransactionKind>(&self, tx: Tx<K>) -> StorageTx<K> {
        StorageTx {
            tx,
            dbs: self.dbs.clone(),
            scanned: self.scanned.clone(),
            dictionaries: self.dictionaries.clone(),
            node_window: Default::default(),
            fine_from: Default::default(),
            state_history_from: Default::default(),
            state_kept_from: Default::default(),
            recorded_nodes: Default::default(),
            staged: Default::default(),
            staged_nodes: Default::default(),
            staged_lists: Default::default(),
        }
    }

    pub fn reader(&self) -> Result<ReadTx> {
        Ok(self.storage_tx(self.env.begin_ro_sync()?))
    }

    /// The id of the newest committed transaction, from any process. It reads MDBX's meta pages,
    /// which every transaction touches (memory, never a B-tree lookup), so it is cheap enough to
    /// ask before each request: while it equals a snapshot's [`StorageTx::commit_id`], nothing
    /// was committed since that snapshot began.
    pub fn last_commit_id(&self) -> Result<u64> {
        Ok(self.env.info()?.last_txnid() as u64)
    }

    /// How many state entries this handle's transactions have read by whole-table scans of the
    /// plain state and by trie walks (hashed state and trie nodes): what tests assert "no full
    /// read" on.
    pub fn state_entries_scanned(&self) -> u64 {
        self.scanned.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Where the data file's pages go: those below the last used page, and of them the ones on
    /// MDBX's free list (freed by earlier commits, reused by later ones); what the tables hold
    /// is the difference. On disk the file takes about the first, less the free pages given
    /// back to the file system (`release_free_pages`).
    pub fn space(&self) -> Result<Space> {
        let last_page = self.env.info()?.last_pgno() as u64 + 1;
        let free_pages = self.env.freelist()? as u64;
        Ok(Space {
            used_bytes: last_page * self.page_size,
            free_bytes: free_pages * self.page_size,
            allocated_bytes: self.data_file_allocated()?,
        })
    }

    /// The bytes the file system allocated to the data file.
    fn data_file_allocated(&self) -> Result<u64> {
        maintenance::backup::allocated_bytes(&self.data_file).map_err(|source| {
            Error::DataFileSize {
                file: self.data_file.display().to_string(),
                source,
            }
        })
    }

    /// Each table's entry count and the bytes of its pages (branch, leaf and overflow), in a
    /// snapshot: what `storage/examples/table_sizes.rs` prints to see where a datadir's size goes.
    pub fn table_stats(&self) -> Result<Vec<TableStat>> {
        let tx = self.env.begin_ro_sync()?;
        let mut stats = Vec::with_capacity(Table::ALL.len());
        for (table, db) in Table::ALL.iter().zip(self.dbs.iter()) {
            let stat = tx.db_stat(db)?;
            let pages = stat.branch_pages() + stat.leaf_pages() + stat.overflow_pages();
            stats.push(TableStat {
                table: *table,
                entries: stat.entries() as u64,
                bytes: pages as u64 * u64::from(stat.page_size()),
            });
        }
        Ok(stats)
    }

    /// Begins the write transaction; blocks while another writer (in any process) holds it.
    pub fn writer(&self) -> Result<WriteTx> {
        Ok(self.storage_tx(self.env.begin_rw_sync()?))
    }
}

/// The data file's pages (see [`Database::space`]).
#[derive(Debug, Clone, Copy)]
pub struct Space {
    pub used_bytes: u64,
    pub free_bytes: u64,
    /// What the file system allocated to the data file: what `du` counts.
    pub allocated_bytes: u64,
}

/// A table's key and value bytes against its leaf pages' bytes (`table_payload`).
#[derive(Debug, Default, Clone, Copy)]
pub struct TablePayload {
    pub key_bytes: u64,
    pub value_bytes: u64,
    pub leaf_bytes: u64,
}

/// Pages emptier than half are merged with a neighbour when a delete leaves them so (MDBX's
/// default is a quarter). Thinning the node history deletes most records of every page it
/// passes; at a quarter its tables kept their pages a third full. The setting belongs to this
/// process's handle, so every writer sets it as it opens.
fn merge_half_empty_pages(env: &Environment) -> Result<()> {
    const HALF: u64 = 1 << 15;
    // SAFETY: the environment pointer is used only within the closure, while `env` is alive.
    let code = env.with_raw_env_ptr(|env| unsafe {
        signet_mdbx_sys::mdbx_env_set_option(
            env,
            signet_mdbx_sys::MDBX_opt_merge_threshold_16dot16_percent,
            HALF,
        )
    });
    if code != 0 {
        return Err(MdbxError::from_err_code(code).into());
    }
    Ok(())
}

/// One table's size (see [`Database::table_stats`]).
#[derive(Debug, Clone, Copy)]
pub struct TableStat {
    pub table: Table,
    pub entries: u64,
    pub bytes: u64,
}

/// A transaction over quarry's tables.
pub struct StorageTx<K: TransactionKind> {
    tx: Tx<K>,
    dbs: Arc<Vec<signet_libmdbx::Database>>,
    /// The database handle's count of entries read by scans and trie walks.
    scanned: Arc<std::sync::atomic::AtomicU64>,
    /// The database handle's digested dictionaries (see block_dictionary.rs).
    dictionaries: Arc<blocks::block_dictionary::Dictionaries>,
    /// `Meta` numbers read on hot paths, read once per transaction.
    node_window: CachedMeta,
    fine_from: CachedMeta,
    state_history_from: CachedMeta,
    state_kept_from: CachedMeta,
    /// Node history keys this transaction knows to be recorded in the current window.
    recorded_nodes: history::trie_history::RecordedNodes,
    /// Random-keyed index entries a write transaction writes sorted, at the latest on commit.
    staged: staged::StagedIndexes,
    /// Trie node writes of a write transaction, written at the latest on commit.
    staged_nodes: staged::StagedNodes,
    /// Changed keys' blocks a write transaction adds to the state history's lists on commit.
    staged_lists: history::state_lists::StagedLists,
}

/// A `Meta` number a transaction reads once and keeps (for numbers that are never 0 or
/// `u64::MAX`, which stand for "not read yet" and "absent").
#[derive(Default)]
struct CachedMeta(std::sync::atomic::AtomicU64);

impl CachedMeta {
    const ABSENT: u64 = u64::MAX;

    fn get(&self, read: impl FnOnce() -> Result<Option<u64>>) -> Result<Option<u64>> {
        use std::sync::atomic::Ordering::Relaxed;
        match self.0.load(Relaxed) {
            0 => {
                let value = read()?;
                self.set(value);
                Ok(value)
            }
            Self::ABSENT => Ok(None),
            value => Ok(Some(value)),
        }
    }

    /// What this transaction just wrote.
    fn set(&self, value: Option<u64>) {
        let stored = value.unwrap_or(Self::ABSENT);
        self.0.store(stored, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The key of a slot in PlainStorage, and the prefix of its StorageHistory keys.
fn slot_key(address: &Address, slot: &B256) -> [u8; 52] {
    let mut key = [0u8; 52];
    key[..20].copy_from_slice(address.as_slice());
    key[20..].copy_from_slice(slot.as_slice());
    key
}

/// A history key: the account address (or slot key) followed by the block number.
fn history_key(prefix: &[u8], block: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(prefix.len() + 8);
    key.extend_from_slice(prefix);
    key.extend_from_slice(&block.to_be_bytes());
    key
}

fn decode_rlp<T: Decodable>(what: &str, bytes: &[u8]) -> Result<T> {
    let mut buf = bytes;
    T::decode(&mut buf).map_err(|e| Error::Corrupt(format!("{what}: {e}")))
}

fn b256(what: &str, bytes: &[u8]) -> Result<B256> {
    if bytes.len() != 32 {
        return Err(Error::Corrupt(format!(
            "{what} has {} bytes, expected 32",
            bytes.len()
        )));
    }
    Ok(B256::from_slice(bytes))
}

impl<K: TransactionKind> StorageTx<K> {
    fn db(&self, table: Table) -> signet_libmdbx::Database {
        self.dbs[table.index()]
    }

    /// For a read snapshot, the id of the commit it sees (compare [`Database::last_commit_id`]).
    pub fn commit_id(&self) -> Result<u64> {
        Ok(self.tx.id()?)
    }

    /// The value under `key`, in place in the memory map for a read snapshot (copied only
    /// when the writer has changed its page).
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Cow<'_, [u8]>>> {
        Ok(self.tx.get::<Cow<'_, [u8]>>(self.db(table).dbi(), key)?)
    }

    /// The entry of `prefix`'s plain history in `table` (keys: `prefix`, then a block number;
    /// values: the value after that block) at or before `block`: the last one.
    fn history_entry(&self, table: Table, prefix: &[u8], block: u64) -> Result<Option<Vec<u8>>> {
        let mut cursor = self.tx.cursor(self.db(table))?;
        let seek = history_key(prefix, block.saturating_add(1));
        let entry = match cursor.set_range::<Vec<u8>, Vec<u8>>(&seek)? {
            Some(_) => cursor.prev::<Vec<u8>, Vec<u8>>()?,
            None => cursor.last::<Vec<u8>, Vec<u8>>()?,
        };
        Ok(entry.and_then(|(key, value)| {
            (key.len() == prefix.len() + 8 && key.starts_with(prefix)).then_some(value)
        }))
    }

    /// The value stored under a `Meta` key.
    pub fn meta(&self, key: MetaKey) -> Result<Option<Vec<u8>>> {
        Ok(self.meta_in_place(key)?.map(Cow::into_owned))
    }

    /// As [`StorageTx::meta`], in place in the memory map for a read snapshot.
    fn meta_in_place(&self, key: MetaKey) -> Result<Option<Cow<'_, [u8]>>> {
        self.get(Table::Meta, key.key().as_bytes())
    }

    /// A number stored under a `Meta` key (u64 BE).
    pub(crate) fn meta_u64(&self, key: MetaKey) -> Result<Option<u64>> {
        self.meta_in_place(key)?.map(|v| be_u64(&v)).transpose()
    }

    /// The block `mark` names ([`MetaKey::SafeBlock`], [`MetaKey::FinalizedBlock`]).
    pub fn meta_block(&self, mark: BlockMark) -> Result<Option<u64>> {
        self.meta_u64(mark.key())
    }

    /// The head `quarry follow` last saw its upstream at (`None`: never followed).
    pub fn upstream_head(&self) -> Result<Option<UpstreamHead>> {
        let Some(value) = self.meta(MetaKey::UpstreamHead)? else {
            return Ok(None);
        };
        if value.len() != 16 && value.len() != 24 {
            return Err(Error::Corrupt(format!(
                "upstream head has {} bytes, expected 16 or 24",
                value.len()
            )));
        }
        Ok(Some(UpstreamHead {
            block: be_u64(&value[..8])?,
            seen_at: be_u64(&value[8..16])?,
            peers: value
                .get(16..)
                .filter(|p| !p.is_empty())
                .map(be_u64)
                .transpose()?,
        }))
    }

    /// What a running ingest announced: the block it is importing towards, and its process.
    pub fn sync_target(&self) -> Result<Option<SyncTarget>> {
        let Some(value) = self.meta(MetaKey::SyncTarget)? else {
            return Ok(None);
        };
        if value.len() != 12 {
            return Err(Error::Corrupt(format!(
                "sync target has {} bytes, expected 12",
                value.len()
            )));
        }
        let mut pid = [0u8; 4];
        pid.copy_from_slice(&value[8..]);
        Ok(Some(SyncTarget {
            block: be_u64(&value[..8])?,
            pid: u32::from_be_bytes(pid),
        }))
    }

    /// A digest of every key and value in `table`, to compare two databases' contents.
    pub fn table_digest(&self, table: Table) -> Result<(u64, B256)> {
        let mut cursor = self.tx.cursor(self.db(table))?;
        let mut hasher = alloy_primitives::Keccak256::new();
        let mut entries = 0u64;
        let mut entry = cursor.first::<Vec<u8>, Vec<u8>>()?;
        while let Some((key, value)) = entry {
            for part in [&key, &value] {
                hasher.update((part.len() as u64).to_be_bytes());
                hasher.update(part);
            }
            entries += 1;
            entry = cursor.next::<Vec<u8>, Vec<u8>>()?;
        }
        Ok((entries, hasher.finalize()))
    }

    /// The bytes of `table`'s keys and values, and its leaf pages' bytes: how full its pages
    /// are (a B-tree filled by inserts at random keys keeps its pages about two thirds full).
    pub fn table_payload(&self, table: Table) -> Result<TablePayload> {
        let mut cursor = self.tx.cursor(self.db(table))?;
        let mut payload = TablePayload::default();
        let mut entry = cursor.first::<Cow<'_, [u8]>, Cow<'_, [u8]>>()?;
        while let Some((key, value)) = entry {
            payload.key_bytes += key.len() as u64;
            payload.value_bytes += value.len() as u64;
            entry = cursor.next::<Cow<'_, [u8]>, Cow<'_, [u8]>>()?;
        }
        let stat = self.tx.db_stat(&self.db(table))?;
        payload.leaf_bytes = stat.leaf_pages() as u64 * u64::from(stat.page_size());
        Ok(payload)
    }

    fn count_scanned(&self) {
        self.scanned
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl StorageTx<RwSync> {
    fn put(&self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self
            .tx
            .put(self.db(table), key, value, WriteFlags::empty())?)
    }

    /// Puts an entry of a table keyed by block number first, written in block order: its key
    /// normally sorts after every stored one, and MDBX then only compares it with the last key
    /// instead of searching the tree. A key that does not sort last is put as usual.
    fn append(&self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        match self.tx.put(self.db(table), key, value, WriteFlags::APPEND) {
            Err(MdbxError::KeyMismatch) => self.put(table, key, value),
            result => Ok(result?),
        }
    }

    /// Adds `value` to the values of `key` in a table of sorted duplicates, written in key
    /// order as `append` is: a key after every stored one, or a value after every value of
    /// the last key, only compares with the last entry. Anything else is put as usual.
    pub(crate) fn append_to_group(&self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        let flags = WriteFlags::APPEND | WriteFlags::APPEND_DUP;
        match self.tx.put(self.db(table), key, value, flags) {
            Err(MdbxError::KeyMismatch) => self.put(table, key, value),
            result => Ok(result?),
        }
    }

    fn del(&self, table: Table, key: &[u8]) -> Result<()> {
        self.tx.del(self.db(table), key, None)?;
        Ok(())
    }

    /// Stores `value` under a `Meta` key.
    pub fn put_meta(&self, key: MetaKey, value: &[u8]) -> Result<()> {
        self.put(Table::Meta, key.key().as_bytes(), value)
    }

    /// Deletes a `Meta` entry (absent: nothing to do).
    pub fn del_meta(&self, key: MetaKey) -> Result<()> {
        self.del(Table::Meta, key.key().as_bytes())
    }

    pub fn put_meta_block(&self, mark: BlockMark, number: u64) -> Result<()> {
        self.put_meta(mark.key(), &number.to_be_bytes())
    }

    /// Records the head `quarry follow` saw its upstream at.
    pub fn put_upstream_head(&self, head: UpstreamHead) -> Result<()> {
        let mut value = Vec::with_capacity(24);
        value.extend_from_slice(&head.block.to_be_bytes());
        value.extend_from_slice(&head.seen_at.to_be_bytes());
        if let Some(peers) = head.peers {
            value.extend_from_slice(&peers.to_be_bytes());
        }
        self.put_meta(MetaKey::UpstreamHead, &value)
    }

    /// Announces (or with `None` withdraws) the target of a running ingest.
    pub fn put_sync_target(&self, target: Option<SyncTarget>) -> Result<()> {
        match target {
            Some(SyncTarget { block, pid }) => {
                let mut value = [0u8; 12];
                value[..8].copy_from_slice(&block.to_be_bytes());
                value[8..].copy_from_slice(&pid.to_be_bytes());
                self.put_meta(MetaKey::SyncTarget, &value)
            }
            None => self.del_meta(MetaKey::SyncTarget),
        }
    }

    pub fn commit(self) -> Result<()> {
        self.write_staged()?;
        Ok(self.tx.commit()?)
    }
}

/// Deletes the entry under `key` through `cursor`, if there is one.
pub(crate) fn delete_at(cursor: &mut Cursor<'_, RwSync>, key: &[u8]) -> Result<()> {
    if cursor.set::<()>(key)?.is_some() {
        cursor.del()?;
    }
    Ok(())
}

/// Deletes the entry `cursor` stands on and returns the one after it, `None` past the table's
/// end. MDBX leaves a cursor that deleted the table's last entry at its end, where reading the
/// current entry still answers and a second delete fails (ENODATA): its end is asked first.
pub(crate) fn delete_and_next<'c, K, V>(cursor: &mut Cursor<'c, RwSync>) -> Result<Option<(K, V)>>
where
    K: signet_libmdbx::TableObject<'c>,
    V: signet_libmdbx::TableObject<'c>,
{
    cursor.del()?;
    if cursor.is_eof() {
        return Ok(None);
    }
    Ok(cursor.get_current::<K, V>()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::address;

    #[test]
    fn commit_ids_tell_whether_a_snapshot_is_still_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let before = db.reader().unwrap();
        assert_eq!(before.commit_id().unwrap(), db.last_commit_id().unwrap());
        let a = address!("0x00000000000000000000000000000000000000aa");
        let tx = db.writer().unwrap();
        let account = StoredAccount {
            nonce: 1,
            balance: alloy_primitives::U256::from(10),
            code_hash: B256::ZERO,
        };
        tx.set_account(&a, Some(&account)).unwrap();
        tx.commit().unwrap();
        assert!(db.last_commit_id().unwrap() > before.commit_id().unwrap());
        let after = db.reader().unwrap();
        assert_eq!(after.commit_id().unwrap(), db.last_commit_id().unwrap());
    }

    #[test]
    fn the_upstream_head_keeps_its_peer_count_and_reads_the_older_record() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        // A record from before peer counts: block, then when.
        tx.put_meta(
            MetaKey::UpstreamHead,
            &[[0, 0, 0, 0, 0, 0, 0, 7], [0, 0, 0, 0, 0, 0, 0, 9]].concat(),
        )
        .unwrap();
        let older = tx.upstream_head().unwrap().unwrap();
        assert_eq!((older.block, older.seen_at, older.peers), (7, 9, None));
        for peers in [Some(25), None] {
            let head = UpstreamHead {
                block: 8,
                seen_at: 10,
                peers,
            };
            tx.put_upstream_head(head).unwrap();
            assert_eq!(tx.upstream_head().unwrap(), Some(head));
        }
        tx.put_meta(MetaKey::UpstreamHead, &[1, 2, 3]).unwrap();
        assert!(tx.upstream_head().is_err());
    }

    /// Deleting two entries of every three leaves pages a third full; the handle merges pages
    /// emptier than half with their neighbours, so they end more than half full.
    #[test]
    fn pages_emptied_by_deletes_are_merged() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let key = |i: u32| [&[7u8; 32][..], &i.to_be_bytes()].concat();
        let tx = db.writer().unwrap();
        for i in 0..30_000u32 {
            tx.put(Table::StoragesTrieHistory, &key(i), &[i as u8; 100])
                .unwrap();
        }
        tx.commit().unwrap();
        let tx = db.writer().unwrap();
        for i in (0..30_000u32).filter(|i| i % 3 != 0) {
            tx.del(Table::StoragesTrieHistory, &key(i)).unwrap();
        }
        tx.commit().unwrap();
        let payload = db
            .reader()
            .unwrap()
            .table_payload(Table::StoragesTrieHistory)
            .unwrap();
        assert_eq!(payload.key_bytes, 10_000 * 36);
        let used = payload.key_bytes + payload.value_bytes + 10 * 10_000;
        let fill = used as f64 / payload.leaf_bytes as f64;
        assert!(fill > 0.5, "leaf pages {:.0}% full", fill * 100.0);
    }
}
