//! quarry-storage owns the MDBX database: the tables, their key and value encodings, and typed
//! reads and writes of blocks, receipts, bytecode, the latest state and the full state history.
//! It knows nothing of RPC or of revm.

mod blocks;
mod env;
mod history;
mod indexes;
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
pub use maintenance::backup::BackupReport;
pub use maintenance::free_pages::Released;
pub use maintenance::migrate::{
    CHANGESETS_LAYOUT, COMPRESSED_BLOCKS_LAYOUT, NARROW_CHANGESETS_LAYOUT, SCHEMA_VERSION,
    STATE_LISTS_LAYOUT, TOPIC_LISTS_LAYOUT, TRACE_LISTS_LAYOUT,
};
pub use meta_key::{BlockMark, MetaKey};
pub use models::{ReceiptOutcome, StorageRootBefore, StoredAccount, StoredReceipt, TxLocation};
pub use state::trie::{
    Leaf, LeafCursor, LeafWriter, TrieNodeCursor, complete_leaf_hashes, first_key_under,
    leaf_child_hash,
};
pub use tables::{Table, TrieId};

use alloy_consensus::{BlockBody, Header, TxEnvelope};
use alloy_primitives::{Address, B256, Bytes, U256, map::HashMap};
use alloy_rlp::{Decodable, Encodable};
use models::{SlotValue, be_u64};
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

    pub fn reader(&self) -> Result<ReadTx> {
        Ok(StorageTx {
            tx: self.env.begin_ro_sync()?,
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
        })
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
        Ok(StorageTx {
            tx: self.env.begin_rw_sync()?,
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
        })
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
        self.dbs[table as usize]
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

    /// The highest canonical block: its number and hash.
    pub fn head(&self) -> Result<Option<(u64, B256)>> {
        let mut cursor = self.tx.cursor(self.db(Table::CanonicalHashes))?;
        match cursor.last::<Vec<u8>, Vec<u8>>()? {
            Some((key, value)) => Ok(Some((be_u64(&key)?, b256("canonical hash", &value)?))),
            None => Ok(None),
        }
    }

    pub fn canonical_hash(&self, number: u64) -> Result<Option<B256>> {
        self.get(Table::CanonicalHashes, &number.to_be_bytes())?
            .map(|v| b256("canonical hash", &v))
            .transpose()
    }

    pub fn block_number(&self, hash: &B256) -> Result<Option<u64>> {
        self.get(Table::HeaderNumbers, hash.as_slice())?
            .map(|v| be_u64(&v))
            .transpose()
    }

    pub fn header(&self, number: u64) -> Result<Option<Header>> {
        self.get(Table::Headers, &number.to_be_bytes())?
            .map(|v| decode_rlp("header", &v))
            .transpose()
    }

    pub fn total_difficulty(&self, number: u64) -> Result<Option<U256>> {
        Ok(self
            .get(Table::TotalDifficulty, &number.to_be_bytes())?
            .map(|v| U256::from_be_slice(&v)))
    }

    pub fn body(&self, number: u64) -> Result<Option<StoredBody>> {
        self.with_block_data(BlockData::Body, number, |v| decode_rlp("block body", v))
    }

    pub fn senders(&self, number: u64) -> Result<Option<Vec<Address>>> {
        Ok(self
            .get_chunked(Table::Senders, number)?
            .map(|v| v.chunks_exact(20).map(Address::from_slice).collect()))
    }

    /// Every receipt of block `number`, decoded.
    pub fn receipts(&self, number: u64) -> Result<Option<Vec<StoredReceipt>>> {
        self.with_receipts(number, |view| view.decode_all())?
            .transpose()
    }

    /// Runs `read` over block `number`'s receipts read in place, without decoding the ones it
    /// does not ask for (`None` when the block is not stored).
    pub fn with_receipts<T>(
        &self,
        number: u64,
        read: impl FnOnce(BlockReceiptsView<'_>) -> T,
    ) -> Result<Option<T>> {
        self.with_block_data(BlockData::Receipts, number, |bytes| {
            let view = BlockReceiptsView::new(bytes)
                .map_err(|e| Error::Corrupt(format!("receipts of block {number}: {e}")))?;
            Ok(read(view))
        })
    }

    /// The number of transactions in blocks 0 through `number`.
    pub fn transactions_through(&self, number: u64) -> Result<Option<u64>> {
        self.get(Table::TxCounts, &number.to_be_bytes())?
            .map(|v| be_u64(&v))
            .transpose()
    }

    pub fn bytecode(&self, code_hash: &B256) -> Result<Option<Bytes>> {
        Ok(self
            .get(Table::Bytecodes, code_hash.as_slice())?
            .map(|code| Bytes::copy_from_slice(&code)))
    }

    /// The account in the latest state.
    pub fn account(&self, address: &Address) -> Result<Option<StoredAccount>> {
        self.get(Table::PlainAccounts, address.as_slice())?
            .map(|v| StoredAccount::decode(&v))
            .transpose()
    }

    /// A storage value in the latest state (zero when unset).
    pub fn storage(&self, address: &Address, slot: &B256) -> Result<U256> {
        let key = slot_key(address, slot);
        Ok(self
            .get(Table::PlainStorage, &key)?
            .map(|v| U256::from_be_slice(&v))
            .unwrap_or_default())
    }

    /// The account as it was after block `block`: the changeset entry of the first later block
    /// that changed it (the account before that block), or the latest account.
    pub fn account_at(&self, address: &Address, block: u64) -> Result<Option<StoredAccount>> {
        self.check_state_kept(block)?;
        if !self.state_history_covers(block)? {
            return self.plain_account_at(address, block);
        }
        let hashed = alloy_primitives::keccak256(address);
        let mut lookup = self.list_cursor(history::state_lists::Lists::Accounts)?;
        match self.listed_account_after(&mut lookup, &hashed, block)? {
            Some((_, _, then)) => Ok(then.map(|(account, _)| account)),
            None => self.account(address),
        }
    }

    /// A storage value as it was after block `block` (zero when unset): the changeset entry of
    /// the first later block that changed it, or the latest value.
    pub fn storage_at(&self, address: &Address, slot: &B256, block: u64) -> Result<U256> {
        self.check_state_kept(block)?;
        if !self.state_history_covers(block)? {
            return self.plain_storage_at(address, slot, block);
        }
        let key = state::trie::hashed_slot_key(
            &alloy_primitives::keccak256(address),
            &alloy_primitives::keccak256(slot),
        );
        let mut lookup = self.list_cursor(history::state_lists::Lists::Storages)?;
        match self.listed_slot_after(&mut lookup, &key, block)? {
            Some(value) => Ok(value),
            None => self.storage(address, slot),
        }
    }

    /// The account after `block` from the plain history (the state history of layouts before
    /// 6): its last entry at or before the block.
    fn plain_account_at(&self, address: &Address, block: u64) -> Result<Option<StoredAccount>> {
        match self.history_entry(Table::AccountHistory, address.as_slice(), block)? {
            Some(value) if value.is_empty() => Ok(None),
            Some(value) => StoredAccount::decode(&value).map(Some),
            None => Ok(None),
        }
    }

    /// A storage value after `block` from the plain history.
    fn plain_storage_at(&self, address: &Address, slot: &B256, block: u64) -> Result<U256> {
        let prefix = slot_key(address, slot);
        Ok(self
            .history_entry(Table::StorageHistory, &prefix, block)?
            .map(|v| U256::from_be_slice(&v))
            .unwrap_or_default())
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

    /// Every account of the latest state, in address order.
    pub fn for_each_account(
        &self,
        mut f: impl FnMut(Address, StoredAccount) -> Result<()>,
    ) -> Result<()> {
        let mut cursor = self.tx.cursor(self.db(Table::PlainAccounts))?;
        let mut entry = cursor.first::<Vec<u8>, Vec<u8>>()?;
        while let Some((key, value)) = entry {
            self.count_scanned();
            f(Address::from_slice(&key), StoredAccount::decode(&value)?)?;
            entry = cursor.next::<Vec<u8>, Vec<u8>>()?;
        }
        Ok(())
    }

    /// Every non-zero storage slot of the latest state, in (address, slot) order.
    pub fn for_each_storage(
        &self,
        mut f: impl FnMut(Address, B256, U256) -> Result<()>,
    ) -> Result<()> {
        let mut cursor = self.tx.cursor(self.db(Table::PlainStorage))?;
        let mut entry = cursor.first::<Vec<u8>, Vec<u8>>()?;
        while let Some((key, value)) = entry {
            self.count_scanned();
            f(
                Address::from_slice(&key[..20]),
                B256::from_slice(&key[20..]),
                U256::from_be_slice(&value),
            )?;
            entry = cursor.next::<Vec<u8>, Vec<u8>>()?;
        }
        Ok(())
    }

    /// Whether an account has any non-zero storage slot in the latest state (EIP-7610 counts
    /// such an account as taken for contract creation).
    pub fn has_storage(&self, address: &Address) -> Result<bool> {
        let mut cursor = self.tx.cursor(self.db(Table::PlainStorage))?;
        let entry = cursor.set_range::<Vec<u8>, Vec<u8>>(address.as_slice())?;
        Ok(entry.is_some_and(|(key, _)| key.starts_with(address.as_slice())))
    }

    /// Whether an account had any non-zero storage slot after block `block`: its first slot
    /// then, read through the leaf history (or, before it, a walk over the plain history).
    pub fn has_storage_at(&self, address: &Address, block: u64) -> Result<bool> {
        if !self.state_history_covers(block)? {
            return self.plain_has_storage_at(address, block);
        }
        let trie = TrieId::Storage(alloy_primitives::keccak256(address));
        let mut leaves = self.trie_leaves_after(trie, Some(block))?;
        Ok(leaves.seek(&alloy_trie::Nibbles::default())?.is_some())
    }

    /// [`Self::has_storage_at`] from the plain history: one seek for an account that never had
    /// storage, else a walk over its slots' changes.
    fn plain_has_storage_at(&self, address: &Address, block: u64) -> Result<bool> {
        let mut cursor = self.tx.cursor(self.db(Table::StorageHistory))?;
        let mut entry = cursor.set_range::<Vec<u8>, Vec<u8>>(address.as_slice())?;
        // Keys are address ‖ slot ‖ block: each slot's changes in block order.
        let mut slot: Option<Vec<u8>> = None;
        let mut value_then = false;
        while let Some((key, value)) = entry {
            if key.len() != 60 || !key.starts_with(address.as_slice()) {
                break;
            }
            if slot.as_deref() != Some(&key[20..52]) {
                if value_then {
                    return Ok(true);
                }
                slot = Some(key[20..52].to_vec());
                value_then = false;
            }
            if be_u64(&key[52..])? <= block {
                value_then = value.iter().any(|b| *b != 0);
            }
            entry = cursor.next::<Vec<u8>, Vec<u8>>()?;
        }
        Ok(value_then)
    }

    /// The non-zero storage slots of one account in the latest state.
    pub fn account_storage(&self, address: &Address) -> Result<Vec<(B256, U256)>> {
        let mut cursor = self.tx.cursor(self.db(Table::PlainStorage))?;
        let mut out = Vec::new();
        let mut entry = cursor.set_range::<Vec<u8>, Vec<u8>>(address.as_slice())?;
        while let Some((key, value)) = entry {
            if !key.starts_with(address.as_slice()) {
                break;
            }
            out.push((B256::from_slice(&key[20..]), U256::from_be_slice(&value)));
            entry = cursor.next::<Vec<u8>, Vec<u8>>()?;
        }
        Ok(out)
    }
}

/// One account's new state after a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountChange {
    pub address: Address,
    /// `None`: the account does not exist after the block.
    pub account: Option<StoredAccount>,
    /// Its storage was cleared (self-destruct) before `storage` applies.
    pub wiped: bool,
    /// Changed slots and their new values (zero: cleared).
    pub storage: Vec<(B256, U256)>,
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

    /// Stores a block and makes it canonical at its number.
    pub fn insert_block(&self, block: &BlockRecord<'_>) -> Result<()> {
        let data = self.block_compressor()?.compress(block)?;
        self.insert_compressed_block(block, data)
    }

    /// As [`StorageTx::insert_block`], with the block's values compressed already (by a
    /// [`BlockCompressor`] of this transaction, made after the block before was stored).
    pub fn insert_compressed_block(
        &self,
        block: &BlockRecord<'_>,
        data: CompressedBlockData,
    ) -> Result<()> {
        let number = block.header.number;
        let key = number.to_be_bytes();
        let mut buf = Vec::with_capacity(block.header.length());
        block.header.encode(&mut buf);
        self.append(Table::Headers, &key, &buf)?;
        self.append(Table::CanonicalHashes, &key, block.hash.as_slice())?;
        self.put(Table::HeaderNumbers, block.hash.as_slice(), &key)?;
        self.append(
            Table::TotalDifficulty,
            &key,
            &block.total_difficulty.to_be_bytes::<32>(),
        )?;
        self.store_block_data(BlockData::Body, number, &data.body, true)?;
        let senders: Vec<u8> = block.senders.iter().flat_map(|a| a.0.0).collect();
        self.put_chunked(Table::Senders, number, &senders, true)?;
        let hashes: Vec<u8> = block
            .body
            .transactions
            .iter()
            .flat_map(|tx| tx.tx_hash().0)
            .collect();
        self.put_chunked(Table::BlockTxHashes, number, &hashes, true)?;
        self.store_block_data(BlockData::Receipts, number, &data.receipts, true)?;
        self.index_block_logs(number, block.receipts)?;
        let earlier = match number.checked_sub(1) {
            Some(parent) => self.transactions_through(parent)?.unwrap_or(0),
            None => 0,
        };
        let through = earlier + block.body.transactions.len() as u64;
        self.append(Table::TxCounts, &key, &through.to_be_bytes())?;
        for (index, tx) in block.body.transactions.iter().enumerate() {
            let location = TxLocation {
                block_number: number,
                index: index as u32,
            };
            self.put_tx_lookup(tx.tx_hash(), location)?;
        }
        Ok(())
    }

    /// Rewrites the body of a stored block that has no transactions (so nothing indexes it):
    /// the repair of a genesis body stored before it carried its withdrawals list.
    pub fn replace_empty_body(&self, number: u64, body: &StoredBody) -> Result<()> {
        let stored = self.body(number)?;
        if stored.is_none_or(|b| !b.transactions.is_empty()) || !body.transactions.is_empty() {
            return Err(Error::Corrupt(format!(
                "block {number}: only a stored body without transactions can be replaced"
            )));
        }
        let mut buf = Vec::new();
        body.encode(&mut buf);
        self.put_block_data(BlockData::Body, number, &buf, false)
    }

    pub fn put_bytecode(&self, code_hash: &B256, code: &[u8]) -> Result<()> {
        self.put(Table::Bytecodes, code_hash.as_slice(), code)
    }

    /// Sets an account in the latest state (`None`: it no longer exists) and returns it as it
    /// was. Its history is recorded by [`StorageTx::apply_state_changes`].
    pub fn set_account(
        &self,
        address: &Address,
        account: Option<&StoredAccount>,
    ) -> Result<Option<StoredAccount>> {
        let mut cursor = self.tx.cursor(self.db(Table::PlainAccounts))?;
        set_account_at(&mut cursor, address, account)
    }

    /// Sets a storage slot in the latest state (zero deletes it) and returns its value before.
    pub fn set_storage(&self, address: &Address, slot: &B256, value: U256) -> Result<U256> {
        let mut cursor = self.tx.cursor(self.db(Table::PlainStorage))?;
        set_storage_at(&mut cursor, address, slot, value)
    }

    /// Clears every slot of an account (self-destruct, or creation over an address that had
    /// storage); returns the slots that were cleared with their values, in slot order.
    pub fn wipe_storage(&self, address: &Address) -> Result<Vec<(B256, U256)>> {
        let slots = self.account_storage(address)?;
        for (slot, _) in &slots {
            self.set_storage(address, slot, U256::ZERO)?;
        }
        Ok(slots)
    }

    /// Writes a block's state changes into the latest plain state and (above block 0) its
    /// changeset, each changed account and slot as it was before (an account with its storage
    /// root then), and lists the block in their block lists (the state history,
    /// state_lists.rs). The block's state trie is written after.
    pub fn apply_state_changes(
        &self,
        block: u64,
        accounts: &[AccountChange],
        bytecodes: &[(B256, Bytes)],
    ) -> Result<()> {
        self.apply_block_state_changes(block, accounts, bytecodes, &HashMap::default())
    }

    /// [`Self::apply_state_changes`], given what the changesets record of the storage root
    /// before the block of changed accounts (by hashed address), as a state root's walk finds
    /// them in the hashed state or an import of a range leaves them: the others' are read
    /// from the hashed state.
    pub fn apply_block_state_changes(
        &self,
        block: u64,
        accounts: &[AccountChange],
        bytecodes: &[(B256, Bytes)],
        storage_roots_before: &HashMap<B256, StorageRootBefore>,
    ) -> Result<()> {
        // Block 0 has no state before it to return to.
        let record = block > 0;
        for (hash, code) in bytecodes {
            self.put_bytecode(hash, code)?;
        }
        // One cursor per table for the whole block: its changes come in key order (accounts by
        // address, each one's slots by slot), and MDBX looks for a key on the page its cursor
        // stands on before it searches the tree from the root.
        let mut accounts_cursor = self.tx.cursor(self.db(Table::PlainAccounts))?;
        let mut storage_cursor = self.tx.cursor(self.db(Table::PlainStorage))?;
        for change in accounts {
            let address = &change.address;
            let wiped = if change.wiped || change.account.is_none() {
                self.wipe_storage(address)?
            } else {
                Vec::new()
            };
            if record {
                for (slot, before) in &wiped {
                    self.record_slot_before(block, address, slot, *before)?;
                    self.list_slot_change(block, address, slot)?;
                }
            }
            for (slot, value) in &change.storage {
                let before = set_storage_at(&mut storage_cursor, address, slot, *value)?;
                // A wiped slot's value before the block was recorded before the wipe.
                if record && wiped.binary_search_by_key(slot, |(s, _)| *s).is_err() {
                    self.record_slot_before(block, address, slot, before)?;
                    self.list_slot_change(block, address, slot)?;
                }
            }
            let before = set_account_at(&mut accounts_cursor, address, change.account.as_ref())?;
            if record {
                // The hashed state is still the state before the block: the block's trie
                // write comes after.
                let hashed = alloy_primitives::keccak256(address);
                let storage_root = match storage_roots_before.get(&hashed) {
                    Some(root) => *root,
                    None => StorageRootBefore::Known(self.stored_storage_root(&hashed)?),
                };
                self.record_account_before(block, address, before.as_ref(), storage_root)?;
                self.list_account_change(block, address, &hashed)?;
            }
        }
        Ok(())
    }

    pub fn commit(self) -> Result<()> {
        self.write_staged()?;
        Ok(self.tx.commit()?)
    }
}

/// Sets an account in the latest state through `cursor` (on `PlainAccounts`) and returns it as
/// it was.
fn set_account_at(
    cursor: &mut Cursor<'_, RwSync>,
    address: &Address,
    account: Option<&StoredAccount>,
) -> Result<Option<StoredAccount>> {
    let account = account.map(StoredAccount::encode);
    let account = account.as_ref().map(|a| &a[..]);
    replace_at(cursor, address.as_slice(), account)?
        .map(|v| StoredAccount::decode(&v))
        .transpose()
}

/// Sets a slot in the latest state through `cursor` (on `PlainStorage`; zero deletes it) and
/// returns its value before.
fn set_storage_at(
    cursor: &mut Cursor<'_, RwSync>,
    address: &Address,
    slot: &B256,
    value: U256,
) -> Result<U256> {
    let value = (!value.is_zero()).then(|| SlotValue::new(value));
    let before = replace_at(
        cursor,
        &slot_key(address, slot),
        value.as_ref().map(SlotValue::as_slice),
    )?;
    Ok(before.map_or(U256::ZERO, |v| U256::from_be_slice(&v)))
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

/// Sets (`Some`) or deletes (`None`) an entry in one search, and returns its value before: the
/// search that finds it is where it is overwritten or deleted.
fn replace_at(
    cursor: &mut Cursor<'_, RwSync>,
    key: &[u8],
    value: Option<&[u8]>,
) -> Result<Option<Vec<u8>>> {
    let before = cursor.set::<Vec<u8>>(key)?;
    match (value, &before) {
        (Some(value), Some(before)) if before.as_slice() == value => {}
        (Some(value), Some(_)) => cursor.put(key, value, WriteFlags::CURRENT)?,
        (Some(value), None) => cursor.put(key, value, WriteFlags::empty())?,
        (None, Some(_)) => cursor.del()?,
        (None, None) => {}
    }
    Ok(before)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::address;

    fn account(nonce: u64) -> StoredAccount {
        StoredAccount {
            nonce,
            balance: U256::from(nonce * 10),
            code_hash: B256::ZERO,
        }
    }

    /// Sets an account after `block` as an import does: the plain state, its changeset entry
    /// and block list (block 0 records none), and the trie leaf.
    fn set_at(tx: &WriteTx, address: &Address, account: Option<StoredAccount>, block: u64) {
        let before = tx.set_account(address, account.as_ref()).unwrap();
        let hashed = alloy_primitives::keccak256(address);
        if block > 0 {
            tx.record_account_before(
                block,
                address,
                before.as_ref(),
                StorageRootBefore::Known(None),
            )
            .unwrap();
            tx.list_account_change(block, address, &hashed).unwrap();
        }
        let leaf = account.map(|a| alloy_trie::TrieAccount {
            nonce: a.nonce,
            balance: a.balance,
            storage_root: alloy_trie::EMPTY_ROOT_HASH,
            code_hash: a.code_hash,
        });
        tx.put_hashed_account(&hashed, leaf.as_ref()).unwrap();
    }

    fn set_slot_at(tx: &WriteTx, address: &Address, slot: &B256, value: U256, block: u64) {
        let before = tx.set_storage(address, slot, value).unwrap();
        if block > 0 {
            tx.record_slot_before(block, address, slot, before).unwrap();
            tx.list_slot_change(block, address, slot).unwrap();
        }
        let (account, slot) = (
            alloy_primitives::keccak256(address),
            alloy_primitives::keccak256(slot),
        );
        tx.put_hashed_slot(&account, &slot, value).unwrap();
    }

    #[test]
    fn history_answers_as_of_any_block() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let a = address!("0x00000000000000000000000000000000000000aa");
        let b = address!("0x00000000000000000000000000000000000000ab");
        let slot = B256::with_last_byte(1);
        let tx = db.writer().unwrap();
        tx.start_trie_history(1, 1).unwrap();
        set_at(&tx, &a, Some(account(1)), 0);
        set_at(&tx, &b, Some(account(9)), 1);
        set_slot_at(&tx, &a, &slot, U256::from(3), 2);
        set_at(&tx, &a, Some(account(2)), 5);
        set_slot_at(&tx, &a, &slot, U256::from(4), 6);
        set_at(&tx, &a, None, 8);
        tx.commit().unwrap();

        let r = db.reader().unwrap();
        assert_eq!(r.account_at(&a, 0).unwrap(), Some(account(1)));
        assert_eq!(r.account_at(&a, 4).unwrap(), Some(account(1)));
        assert_eq!(r.account_at(&a, 5).unwrap(), Some(account(2)));
        assert_eq!(r.account_at(&a, 7).unwrap(), Some(account(2)));
        assert_eq!(r.account_at(&a, 8).unwrap(), None);
        assert_eq!(r.account_at(&a, u64::MAX).unwrap(), None);
        assert_eq!(r.account_at(&b, 0).unwrap(), None);
        assert_eq!(r.account_at(&b, 1).unwrap(), Some(account(9)));
        assert_eq!(r.account_at(&b, u64::MAX).unwrap(), Some(account(9)));
        assert_eq!(r.account(&a).unwrap(), None);
        assert_eq!(r.storage_at(&a, &slot, 1).unwrap(), U256::ZERO);
        assert_eq!(r.storage_at(&a, &slot, 2).unwrap(), U256::from(3));
        assert_eq!(r.storage_at(&a, &slot, 5).unwrap(), U256::from(3));
        assert_eq!(r.storage_at(&a, &slot, 6).unwrap(), U256::from(4));
        assert_eq!(r.storage(&a, &slot).unwrap(), U256::from(4));
        assert_eq!(r.storage_at(&a, &B256::ZERO, 6).unwrap(), U256::ZERO);
    }

    /// A datadir from before layout 6 keeps its plain history for the blocks before the leaf
    /// history starts: reads at those blocks go there, later ones to the leaf history.
    #[test]
    fn blocks_before_the_leaf_history_read_the_plain_history() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let a = address!("0x00000000000000000000000000000000000000aa");
        let slot = B256::with_last_byte(1);
        let tx = db.writer().unwrap();
        // Blocks 0-4 as layout 5 wrote them: the plain state and its history.
        let plain = |block: u64, account: &StoredAccount| {
            let key = history_key(a.as_slice(), block);
            tx.put(Table::AccountHistory, &key, &account.encode())
                .unwrap();
        };
        plain(0, &account(1));
        plain(3, &account(2));
        let slot_history = history_key(&slot_key(&a, &slot), 2);
        tx.put(Table::StorageHistory, &slot_history, &[7; 32])
            .unwrap();
        set_at(&tx, &a, Some(account(2)), 0);
        set_slot_at(&tx, &a, &slot, U256::from_be_bytes([7; 32]), 0);
        // Then the migration, and block 6 under layout 6.
        tx.start_trie_history(5, 1).unwrap();
        set_at(&tx, &a, Some(account(3)), 6);
        set_slot_at(&tx, &a, &slot, U256::from(1), 6);
        tx.commit().unwrap();

        let r = db.reader().unwrap();
        let accounts: Vec<_> = (0..8).map(|n| r.account_at(&a, n).unwrap()).collect();
        let expected = [1, 1, 1, 2, 2, 2, 3, 3].map(|n| Some(account(n)));
        assert_eq!(accounts, expected);
        let slots: Vec<_> = (0..8)
            .map(|n| r.storage_at(&a, &slot, n).unwrap())
            .collect();
        let seven = U256::from_be_bytes([7; 32]);
        let one = U256::from(1);
        let expected = [U256::ZERO, U256::ZERO, seven, seven, seven, seven, one, one];
        assert_eq!(slots, expected);
        let present: Vec<_> = (0..8).map(|n| r.has_storage_at(&a, n).unwrap()).collect();
        assert_eq!(present, [false, false, true, true, true, true, true, true]);
    }

    /// A snapshot's commit id matches the last commit until another commit lands.
    #[test]
    fn commit_ids_tell_whether_a_snapshot_is_still_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let before = db.reader().unwrap();
        assert_eq!(before.commit_id().unwrap(), db.last_commit_id().unwrap());
        let a = address!("0x00000000000000000000000000000000000000aa");
        let tx = db.writer().unwrap();
        tx.set_account(&a, Some(&account(1))).unwrap();
        tx.commit().unwrap();
        assert!(db.last_commit_id().unwrap() > before.commit_id().unwrap());
        let after = db.reader().unwrap();
        assert_eq!(after.commit_id().unwrap(), db.last_commit_id().unwrap());
    }

    #[test]
    fn storage_presence_latest_and_as_of_a_block() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let a = address!("0x00000000000000000000000000000000000000aa");
        let b = address!("0x00000000000000000000000000000000000000ab");
        let (one, two) = (B256::with_last_byte(1), B256::with_last_byte(2));
        let tx = db.writer().unwrap();
        tx.start_trie_history(1, 1).unwrap();
        // a: slot 1 set at 2 and cleared at 4; slot 2 set at 6. b: nothing.
        set_slot_at(&tx, &a, &one, U256::from(3), 2);
        set_slot_at(&tx, &a, &one, U256::ZERO, 4);
        set_slot_at(&tx, &a, &two, U256::from(5), 6);
        tx.commit().unwrap();

        let r = db.reader().unwrap();
        let at = |block| r.has_storage_at(&a, block).unwrap();
        assert_eq!(
            [at(1), at(2), at(3), at(4), at(5), at(6), at(9)],
            [false, true, true, false, false, true, true]
        );
        assert!(r.has_storage(&a).unwrap());
        assert!(!r.has_storage(&b).unwrap());
        assert!(!r.has_storage_at(&b, 9).unwrap());
    }

    #[test]
    fn uncommitted_writes_are_invisible_to_readers() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let a = address!("0x00000000000000000000000000000000000000aa");
        let tx = db.writer().unwrap();
        tx.set_account(&a, Some(&account(1))).unwrap();
        assert_eq!(tx.account(&a).unwrap(), Some(account(1)));
        drop(tx);
        assert_eq!(db.reader().unwrap().account(&a).unwrap(), None);
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
