//! The `quarry` command line.

mod chain;
mod export_era;

use chain::ChainArgs;
use clap::{Parser, Subcommand};
use eyre::{Context, Result, bail};
use quarry_ingest::{ImportStats, Importer, Progress, blocktest};
use quarry_storage::{BlockMark, Database};
use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

#[derive(Parser)]
#[command(
    name = "quarry",
    version,
    about = "A self-hosted Ethereum JSON-RPC query node"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum KeysAction {
    /// Issue a new key and print it (it is shown only this once; only its hash is stored).
    Add {
        #[arg(long)]
        plan: quarry_gateway::Plan,
        /// Who the key is for.
        #[arg(long, default_value = "")]
        name: String,
        /// Limit the key to this network (repeat for several); default: every network.
        #[arg(long = "network")]
        networks: Vec<String>,
        #[command(flatten)]
        allow: AllowArgs,
        /// Give the key a secret, printed once after the key (the store keeps its hash): a
        /// request carrying it as HTTP Basic auth (`curl --user :SECRET`) is not held to the
        /// allowlists.
        #[arg(long)]
        secret: bool,
        /// Refuse requests without the secret (401).
        #[arg(long, requires = "secret")]
        require_secret: bool,
        #[command(flatten)]
        jwt: JwtArgs,
    },
    /// Replace a key's allowlists (each type given replaces that type's list); a running
    /// server applies the change within a second, to open WebSockets too.
    Update {
        id: String,
        #[command(flatten)]
        allow: AllowArgs,
        /// Remove every allowlist first (then add the ones given, if any).
        #[arg(long)]
        clear_allowlists: bool,
        /// Draw a new secret and print it once (the old one stops working).
        #[arg(long)]
        new_secret: bool,
        /// Refuse requests without the secret from now on.
        #[arg(long, conflicts_with = "no_require_secret")]
        require_secret: bool,
        /// Accept requests without the secret again.
        #[arg(long)]
        no_require_secret: bool,
        #[command(flatten)]
        jwt: JwtArgs,
    },
    /// List the keys: id, plan, name, networks, created and revoked times, allowlists.
    List,
    /// Revoke a key by its id; a running server refuses it within a second.
    Revoke { id: String },
}

/// A key's JWT public keys on the command line (`quarry keys update`).
#[derive(clap::Args)]
struct JwtArgs {
    /// Accept JWTs signed with this public key (PEM: RSA for RS256, EC P-256 for ES256), named
    /// NAME, the tokens' `kid` (repeatable; a name given again replaces its key).
    #[arg(long = "jwt-key", value_name = "NAME=PEMFILE")]
    add: Vec<String>,
    /// Stop accepting JWTs signed with the public key named NAME (repeatable).
    #[arg(long = "remove-jwt-key", value_name = "NAME")]
    remove: Vec<String>,
    /// Refuse requests without a valid JWT (401), unless they carry the key's secret.
    #[arg(long, conflicts_with = "no_require_jwt")]
    require_jwt: bool,
    /// Accept requests without a JWT again.
    #[arg(long)]
    no_require_jwt: bool,
}

impl JwtArgs {
    fn is_empty(&self) -> bool {
        self.add.is_empty() && self.remove.is_empty() && !self.require_jwt && !self.no_require_jwt
    }

    /// The change they ask for, with the public keys they name read and parsed.
    fn change(self) -> Result<quarry_gateway::keys::JwtChange> {
        use quarry_gateway::key_jwts::JwtPublicKey;
        let mut add = Vec::new();
        for given in &self.add {
            let (name, file) = given
                .split_once('=')
                .ok_or_else(|| eyre::eyre!("--jwt-key {given:?}: write NAME=PEMFILE"))?;
            let pem = std::fs::read_to_string(file)
                .map_err(|e| eyre::eyre!("--jwt-key {name}: cannot read {file}: {e}"))?;
            let key = JwtPublicKey::from_pem(&pem)
                .map_err(|e| eyre::eyre!("--jwt-key {name}: {file}: {e}"))?;
            add.push((name.to_string(), key));
        }
        let require = match (self.require_jwt, self.no_require_jwt) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        };
        Ok(quarry_gateway::keys::JwtChange {
            add,
            remove: self.remove,
            require,
        })
    }

    /// The change for a new key, which has nothing to remove and requires no JWT yet.
    fn new_key_change(self) -> Result<quarry_gateway::keys::JwtChange> {
        if !self.remove.is_empty() || self.no_require_jwt {
            eyre::bail!(
                "--remove-jwt-key and --no-require-jwt change an existing key: use `quarry keys update`"
            );
        }
        self.change()
    }
}

/// A key's JWT public keys in one `quarry keys list` column.
fn jwt_column(record: &quarry_gateway::keys::KeyRecord) -> String {
    let keys: Vec<String> = record
        .jwt_keys
        .iter()
        .map(|(name, key)| format!("{name}:{}", key.alg.name()))
        .collect();
    match (keys.is_empty(), record.require_jwt) {
        (true, _) => "-".into(),
        (false, true) => format!("required,{}", keys.join(",")),
        (false, false) => keys.join(","),
    }
}

/// A key's allowlists on the command line. A key without allowlists accepts everything;
/// the types are ANDed, the entries of one type ORed; at most 30 entries per type.
#[derive(clap::Args, Default)]
struct AllowArgs {
    /// Allow pages on this origin: [scheme://]host[:port], the host possibly *.name for its
    /// subdomains (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    origins: Vec<String>,
    /// Allow requests whose User-Agent contains this text (repeatable).
    #[arg(long = "allow-user-agent", value_name = "TEXT")]
    user_agents: Vec<String>,
    /// Allow this JSON-RPC method (repeatable).
    #[arg(long = "allow-method", value_name = "NAME")]
    methods: Vec<String>,
    /// Allow calls that name this contract address (repeatable); see the README for the
    /// methods that name addresses.
    #[arg(long = "allow-contract", value_name = "ADDRESS")]
    contracts: Vec<String>,
}

impl AllowArgs {
    /// Applies the lists given onto `allow`: each type given replaces that type's list.
    fn apply(
        self,
        mut allow: quarry_gateway::allowlists::KeyAllowlists,
    ) -> Result<quarry_gateway::allowlists::KeyAllowlists> {
        use quarry_gateway::cors::OriginPattern;
        if !self.origins.is_empty() {
            allow.origins = self
                .origins
                .iter()
                .map(|o| OriginPattern::parse(o))
                .collect::<Result<_, _>>()
                .map_err(|e| eyre::eyre!("--allow-origin: {e}"))?;
        }
        if !self.user_agents.is_empty() {
            allow.user_agents = self.user_agents;
        }
        if !self.methods.is_empty() {
            allow.methods = self.methods;
        }
        if !self.contracts.is_empty() {
            allow.contracts = self
                .contracts
                .iter()
                .map(|a| quarry_gateway::allowlists::parse_contract(a))
                .collect::<Result<_, _>>()
                .map_err(|e| eyre::eyre!("--allow-contract: {e}"))?;
        }
        allow.check().map_err(|e| eyre::eyre!("{e}"))?;
        Ok(allow)
    }
}

/// A key's allowlists in one `quarry keys list` column.
fn allowlists_column(allow: &quarry_gateway::allowlists::KeyAllowlists) -> String {
    let mut parts = Vec::new();
    let mut add = |kind: &str, entries: Vec<String>| {
        if !entries.is_empty() {
            parts.push(format!("{kind}={}", entries.join(",")));
        }
    };
    add(
        "origin",
        allow
            .origins
            .iter()
            .map(|o| o.as_str().to_string())
            .collect(),
    );
    add("user-agent", allow.user_agents.clone());
    add("method", allow.methods.clone());
    add(
        "contract",
        allow.contracts.iter().map(|a| a.to_string()).collect(),
    );
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(" ")
    }
}

#[derive(Subcommand)]
enum Command {
    /// Execute, verify and store a chain: genesis.json plus files of concatenated RLP blocks
    /// (plain or gzip). Re-running continues from the stored head.
    Ingest {
        /// Database directory (created if missing).
        #[arg(long)]
        datadir: PathBuf,
        #[command(flatten)]
        chain: ChainArgs,
        /// Block files, imported in order: files of RLP blocks, era1 files, and folders of era1
        /// files (imported in name order, checked against the folder's checksums.txt if it has
        /// one). Era files are known by their content. None: write the genesis and stop.
        files: Vec<PathBuf>,
        /// A list of era files' sha256 sums (`<sha256>  <file name>` a line, as go-ethereum
        /// publishes them) to check files of those names against before importing them; the
        /// published mainnet and Sepolia lists are built in. Repeatable.
        #[arg(long, value_name = "FILE")]
        era_checksums: Vec<PathBuf>,
        /// A published folder of era files (its index page, or the folder's URL): after FILES,
        /// its files from the one holding the block after the head on are downloaded one ahead
        /// of the import into DATADIR/era-download, each checked against the sha256 that the
        /// folder's checksums.txt (line N for era N) or a published list gives, and removed
        /// once imported.
        #[arg(long, value_name = "URL")]
        era_url: Option<String>,
        /// Record the block that the `safe` tag names (default: the head).
        #[arg(long)]
        safe: Option<u64>,
        /// Record the block that the `finalized` tag names (default: the head).
        #[arg(long)]
        finalized: Option<u64>,
        /// Accept blocks that replace stored ones: the stored chain is unwound to the new
        /// block's parent and the file's branch imported, in one commit. Without it, a block
        /// that differs from a stored one is an error.
        #[arg(long)]
        reorg: bool,
        /// With --reorg: the most stored blocks one reorganisation may replace (default: 128,
        /// or the state history window if smaller; never more than the window).
        #[arg(long)]
        max_reorg_depth: Option<u64>,
        /// Stop recording the state trie's history, from this import on: blocks write about a
        /// third less, and eth_getProof at an older block undoes the changes since it in memory
        /// instead (its cost then follows those changes). Stays off for the datadir.
        #[arg(long)]
        no_trie_history: bool,
        /// Keep the trie node history's 32-block windows for this many blocks behind the head
        /// (eth_getProof there undoes at most 16 blocks' changes); older ones are thinned to
        /// 1,024-block windows (at most 512 blocks' changes). Recorded in the datadir, so later
        /// imports keep it (a new datadir: 1,024).
        #[arg(long)]
        proof_history: Option<u64>,
        /// Keep the state history (changesets, the state's block lists, the trie node history)
        /// of the last N blocks only, as a full node: state methods at older blocks answer
        /// 4444 "pruned history unavailable"; blocks, receipts, logs and transaction lookups stay
        /// for every block. Recorded in the datadir; it can narrow but never widen (default:
        /// the datadir's, a new one an archive).
        #[arg(long, value_name = "N")]
        state_history: Option<u64>,
        /// The most bytes the database file may grow to (suffixes K, M, G, T: powers of 1,024;
        /// default 1T). A commit that would need more stops with a message naming this setting.
        #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "1T")]
        max_db_size: u64,
        /// Compare every block's state root with its header. Without it, in a file of
        /// consecutive blocks, each 1,024-block window that lies `proof_history` blocks or more
        /// before the file's last block takes its state root once, after its last block (as
        /// reth's pipeline does); every other check is still made per block, and a window whose
        /// root differs is imported again block by block, which names the first bad block.
        #[arg(long)]
        state_root_every_block: bool,
    },
    /// Keep a datadir in step with an upstream Ethereum JSON-RPC node (geth, reth, a hosted
    /// provider, another quarry): catch up, then import each new block as it appears, every
    /// block executed and verified, following the upstream's reorganisations.
    Follow {
        /// Database directory (created if missing).
        #[arg(long)]
        datadir: PathBuf,
        #[command(flatten)]
        chain: ChainArgs,
        /// The upstream's JSON-RPC URL: http(s):// or ws(s):// (a WebSocket upstream that
        /// offers eth_subscribe pushes new heads; otherwise quarry polls).
        #[arg(long)]
        upstream: String,
        /// How often to ask for a new head when the upstream does not push them.
        #[arg(long, default_value_t = 1000)]
        poll_ms: u64,
        /// The most stored blocks one reorganisation may replace; a deeper one is refused
        /// (default: 128, or the state history window if smaller; never more than the window).
        #[arg(long)]
        max_reorg_depth: Option<u64>,
        /// How to fetch blocks: `raw` (debug_getRawBlock), `json` (eth_getBlockByNumber and
        /// the uncles, rebuilt), or `auto` (raw when the upstream answers it).
        #[arg(long, default_value = "auto")]
        fetch: quarry_follow::Fetch,
        /// Blocks requested at once while catching up.
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        /// Keep the trie node history's 32-block windows for this many blocks behind the head
        /// (eth_getProof there undoes at most 16 blocks' changes); older ones are thinned to
        /// 1,024-block windows (at most 512 blocks' changes). Recorded in the datadir, so later
        /// imports keep it (a new datadir: 1,024).
        #[arg(long)]
        proof_history: Option<u64>,
        /// Keep the state history (changesets, the state's block lists, the trie node history)
        /// of the last N blocks only, as a full node: state methods at older blocks answer
        /// 4444 "pruned history unavailable"; blocks, receipts, logs and transaction lookups stay
        /// for every block. Recorded in the datadir; it can narrow but never widen (default:
        /// the datadir's, a new one an archive).
        #[arg(long, value_name = "N")]
        state_history: Option<u64>,
        /// The most bytes the database file may grow to (suffixes K, M, G, T: powers of 1,024;
        /// default 1T). A commit that would need more stops with a message naming this setting.
        #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "1T")]
        max_db_size: u64,
    },
    /// Answer JSON-RPC over HTTP (POST /v3/<API_KEY>) and WebSocket (/ws/v3/<API_KEY>) from a
    /// database that `quarry ingest` wrote (and may still be writing).
    Serve {
        /// The database to serve on any host; omit it when the config declares [[networks]].
        #[arg(long)]
        datadir: Option<PathBuf>,
        /// TOML config: networks, API keys, plans, limits, listen address (see
        /// config/dev.toml and config/service.toml).
        #[arg(long)]
        config: PathBuf,
        /// Listen address, overriding the config's `listen`.
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
    },
    /// Ingest the bundled dev chain (testdata/devnet) if it is not stored yet, then serve it on
    /// 127.0.0.1:8545 with the dev API key: the one command to try quarry. `--chain mainnet`
    /// serves mainnet's first 8,192 blocks from the bundled era1 file instead.
    Dev {
        /// The chain to run: a directory with genesis.json and chain.rlp, or `mainnet`.
        #[arg(long, default_value = "testdata/devnet")]
        chain: PathBuf,
        /// Default: data/devnet, or data/<network> for a network.
        #[arg(long)]
        datadir: Option<PathBuf>,
        #[arg(long, default_value = "config/dev.toml")]
        config: PathBuf,
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
    },
    /// Generate a deterministic test chain (genesis.json and chain.rlp) signed by the dev
    /// accounts: the bundled devnet by default, or a scale chain for benchmarks.
    Devchain {
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = quarry_devchain::GenerateOptions::default().blocks)]
        blocks: u64,
        /// Transactions in each block's mix (blocks 1 and 2 and fork blocks add scripted ones).
        #[arg(long, default_value_t = quarry_devchain::GenerateOptions::default().txs_per_block)]
        txs_per_block: usize,
        /// Seed of the mix: the same seed gives the same bytes.
        #[arg(long, default_value_t = quarry_devchain::GenerateOptions::default().seed)]
        seed: u64,
        /// Fork schedule: `staged` (proof of work with uncles, the merge at block 12, then
        /// Shanghai, Cancun, Prague and Osaka every 4 blocks), `genesis` (every fork through
        /// Osaka active at block 0, as geth --dev and reth --dev start) or `pow` (every fork
        /// through Gray Glacier at block 0 and never the merge: every block proof of work,
        /// with uncles, for era1 export; no --fork-at).
        #[arg(long, default_value = "staged")]
        forks: quarry_devchain::Forks,
        /// Write a competing branch of the chain the other options describe: blocks 1..=N
        /// identical to it byte for byte, then blocks N+1..=--blocks with a different mix and
        /// withdrawals (from --fork-seed) and the extra data "quarry devchain fork". `quarry
        /// ingest --reorg` takes it over the ordinary chain. N must be after the merge (at
        /// least 12 with --forks staged, 1 with --forks genesis) and below --blocks.
        #[arg(long, value_name = "N")]
        fork_at: Option<u64>,
        /// With --fork-at: seed of the branch's own blocks (default 1); each seed gives a
        /// different branch.
        #[arg(long, value_name = "S", requires = "fork_at")]
        fork_seed: Option<u64>,
    },
    /// Manage API keys in a key store: a file (the config's `keys_file`) or Redis (the
    /// config's `keys_store`).
    Keys {
        /// The key store: a JSON file (created on the first `add`), or a redis:// URL.
        #[arg(long)]
        store: String,
        #[command(subcommand)]
        action: KeysAction,
    },
    /// Build the eth_getLogs index of a database written before quarry had one (ingest keeps
    /// it up to date otherwise). Resumable: each batch of blocks commits on its own.
    IndexLogs {
        #[arg(long)]
        datadir: PathBuf,
    },
    /// Build the trace_filter index of a database whose blocks were stored before quarry had
    /// one (ingest keeps it up to date otherwise; `quarry migrate` runs this too): each block
    /// past the index is re-executed for the addresses its call frames name. Resumable: each
    /// batch of blocks commits on its own.
    IndexTraces {
        #[arg(long)]
        datadir: PathBuf,
    },
    /// Remove every block above a given one from a datadir, as a reorganisation does before
    /// it applies a new branch (state, history, receipts, log index and trie return to that
    /// block's), in one commit.
    Unwind {
        #[arg(long)]
        datadir: PathBuf,
        #[command(flatten)]
        chain: ChainArgs,
        /// The block to keep as the new head.
        #[arg(long)]
        to: u64,
    },
    /// Bring a datadir written by an older quarry to the current layout (builds the per-block
    /// changesets that unwinding needs from the state history, and re-encodes the receipts).
    /// Resumable: each batch commits on its own, and running it again continues. Also thins
    /// the trie node history that lies behind the datadir's `proof_history`.
    Migrate {
        #[arg(long)]
        datadir: PathBuf,
        /// Set the datadir's `proof_history` (as `quarry ingest --proof-history`) first, so
        /// that a datadir that kept its whole node history is thinned without importing.
        #[arg(long)]
        proof_history: Option<u64>,
        /// The most bytes the database file may grow to (suffixes K, M, G, T: powers of 1,024;
        /// default 1T). A commit that would need more stops with a message naming this setting.
        #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "1T")]
        max_db_size: u64,
    },
    /// Write a consistent copy of a datadir as of one commit into a new directory, while an
    /// ingest or follow keeps committing to it: a new replica's datadir, served at once and
    /// followed from its head. Prints the copy's head, size and time.
    Backup {
        #[arg(long)]
        datadir: PathBuf,
        /// The directory the copy goes into (created; it must not hold a datadir).
        #[arg(long)]
        out: PathBuf,
        /// Leave out free pages and renumber the rest: a smaller copy, a little more CPU.
        #[arg(long)]
        compact: bool,
    },
    /// Turn a datadir into one that keeps the state history of its last N blocks only (see
    /// `quarry ingest --state-history`), pruning the older history a bounded part per commit.
    /// Resumable: running it again continues. At the end the freed pages are given back to the
    /// file system (punched out of the data file).
    Prune {
        #[arg(long)]
        datadir: PathBuf,
        /// How many blocks behind the head keep their state history.
        #[arg(long, value_name = "N")]
        state_history: u64,
        /// Changeset entries pruned per commit at most (whole blocks: at least one). A commit's
        /// pages wait in memory until it lands: this bounds the memory too.
        #[arg(long, default_value_t = 200_000)]
        batch: u64,
    },
    /// Write the stored history as era1 files, 8,192 blocks a file (era N holds blocks
    /// N*8192 to N*8192+8191), named as the format names them, with a checksums.txt.
    ExportEra(export_era::ExportEraArgs),
    /// Run Ethereum BlockchainTests JSON files (or folders of them) through quarry's import path.
    Blocktest {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
}

/// mimalloc: the request path allocates and frees many small and mid-sized buffers (request
/// and response bodies, JSON) across threads, where glibc's malloc spent about a sixth of the
/// network threads' time.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How often the purger returns freed memory to the OS (see [`spawn_memory_purger`]).
const PURGE_INTERVAL: Duration = Duration::from_millis(100);

/// The purge delay quarry sets unless `MIMALLOC_PURGE_DELAY` names one: mimalloc v2's default.
/// v3's is 1 s, which kept a burst's freed answers resident while the next ones were built.
const PURGE_DELAY_MS: std::ffi::c_long = 10;
/// `mi_option_purge_delay` in mimalloc v3's `mimalloc.h` (libmimalloc-sys names no constant).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// mimalloc returns freed memory to the OS once its purge delay ([`PURGE_DELAY_MS`],
/// `MIMALLOC_PURGE_DELAY`) has passed, but only when some thread next allocates or frees: after
/// a burst of large answers (eth_getBlockReceipts of a block of big logs is 21 MB of JSON) idle
/// threads would keep it resident. A purge delay of 0 avoids that at a price on every request:
/// each freed page is given back at once, with an madvise and a TLB shootdown on the other
/// cores, and faulted in again by the next request (about 5% of eth_getLogs' throughput).
/// Instead this thread wakes every [`PURGE_INTERVAL`] and purges whatever has waited past the
/// delay, which mimalloc does for the whole program.
fn spawn_memory_purger() -> std::io::Result<()> {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one of the allocator's options, which it reads atomically.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
    std::thread::Builder::new()
        .name("memory-purger".into())
        .spawn(|| {
            // mimalloc ignores collection requests from a thread that never allocated.
            drop(std::hint::black_box(vec![0u8; 16]));
            loop {
                std::thread::sleep(PURGE_INTERVAL);
                // SAFETY: a plain call into the allocator, which is thread-safe.
                unsafe { libmimalloc_sys::mi_collect(false) };
            }
        })
        .map(drop)
}

fn main() -> Result<()> {
    // RUST_LOG picks what is logged (default: info); `quarry_gateway=debug` logs every call.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    if let Err(err) = spawn_memory_purger() {
        // Only memory freed by idle threads then stays resident longer; every command works.
        eprintln!("warning: cannot start the memory purger thread: {err}");
    }
    match Cli::parse().command {
        Command::Ingest {
            datadir,
            chain,
            files,
            era_checksums,
            era_url,
            safe,
            finalized,
            reorg,
            max_reorg_depth,
            no_trie_history,
            proof_history,
            state_history,
            max_db_size,
            state_root_every_block,
        } => {
            let reorgs = reorg.then_some(max_reorg_depth);
            let history = History {
                trie: !no_trie_history,
                proofs: proof_history,
                state: state_history,
                max_db_size,
                root_per_window: !state_root_every_block,
            };
            let inputs = quarry_ingest::era::era_files(&files, &era_checksums, era_url)?;
            ingest(datadir, &chain, &inputs, safe, finalized, reorgs, history)
        }
        Command::Follow {
            datadir,
            chain,
            upstream,
            poll_ms,
            max_reorg_depth,
            fetch,
            concurrency,
            proof_history,
            state_history,
            max_db_size,
        } => follow(
            &datadir,
            &chain,
            History {
                trie: true,
                proofs: proof_history,
                state: state_history,
                max_db_size,
                root_per_window: false,
            },
            max_reorg_depth,
            quarry_follow::FollowOptions {
                upstream,
                fetch,
                poll: Duration::from_millis(poll_ms),
                max_reorg_depth: quarry_ingest::DEFAULT_MAX_REORG_DEPTH,
                concurrency,
            },
        ),
        Command::Serve {
            datadir,
            config,
            listen,
        } => serve(datadir, config, listen),
        Command::Dev {
            chain,
            datadir,
            config,
            listen,
        } => dev(chain, datadir, config, listen),
        Command::Devchain {
            out,
            blocks,
            txs_per_block,
            seed,
            forks,
            fork_at,
            fork_seed,
        } => devchain(
            out,
            quarry_devchain::GenerateOptions {
                blocks,
                txs_per_block,
                seed,
                forks,
                fork: fork_at.map(|at| quarry_devchain::ForkBranch {
                    at,
                    seed: fork_seed.unwrap_or(1),
                }),
            },
        ),
        Command::IndexLogs { datadir } => index_logs(datadir),
        Command::IndexTraces { datadir } => index_traces(&datadir),
        Command::Migrate {
            datadir,
            proof_history,
            max_db_size,
        } => migrate(datadir, proof_history, max_db_size),
        Command::Unwind { datadir, chain, to } => unwind(&datadir, &chain, to),
        Command::Backup {
            datadir,
            out,
            compact,
        } => backup(&datadir, &out, compact),
        Command::Prune {
            datadir,
            state_history,
            batch,
        } => prune(&datadir, state_history, batch),
        Command::Keys { store, action } => keys(&store, action),
        Command::ExportEra(args) => export_era::run(&args),
        Command::Blocktest { paths } => run_blocktests(paths),
    }
}

/// What an import records of the trie's history: whether its nodes (`--no-trie-history`
/// stops them) and how far back in fine windows (`--proof-history`; `None`: as the datadir
/// says); and how large the database may grow (`--max-db-size`).
struct History {
    trie: bool,
    proofs: Option<u64>,
    /// `--state-history`: `None` keeps the datadir's window (a new one: an archive).
    state: Option<u64>,
    max_db_size: u64,
    /// Whether a file of consecutive blocks may take its state roots once per coarse window
    /// (`--state-root-every-block` stops it).
    root_per_window: bool,
}

/// Records in the datadir what `history` asks of its history, for this import and later ones.
fn apply_history(importer: &mut Importer, history: &History) -> quarry_ingest::Result<()> {
    if !history.trie {
        importer.stop_trie_history()?;
    }
    if let Some(blocks) = history.proofs {
        importer.set_proof_history(blocks)?;
    }
    if let Some(blocks) = history.state {
        importer.set_state_history(blocks)?;
    }
    importer.set_root_per_window(history.root_per_window);
    Ok(())
}

/// The deepest reorganisation an import may follow: `given` (`--max-reorg-depth`), else 128,
/// and never more than the datadir's state history window, below which nothing can be undone.
fn reorg_depth(importer: &Importer, given: Option<u64>) -> Result<u64> {
    let window = importer.database().reader()?.state_history_window()?;
    match (given, window) {
        (Some(depth), Some(window)) if depth > window => bail!(
            "--max-reorg-depth {depth} exceeds the datadir's state history window of {window} \
             blocks: a reorganisation replacing more blocks than the window keeps cannot be \
             undone. Give --max-reorg-depth {window} or less"
        ),
        (Some(depth), _) => Ok(depth),
        (None, Some(window)) => Ok(quarry_ingest::DEFAULT_MAX_REORG_DEPTH.min(window)),
        (None, None) => Ok(quarry_ingest::DEFAULT_MAX_REORG_DEPTH),
    }
}

/// A size in bytes: a number, optionally followed by K, M, G or T (powers of 1,024; an
/// optional "iB" or "B" after them).
fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let trimmed = text.trim();
    let unit_at = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (digits, unit) = trimmed.split_at(unit_at);
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size (e.g. 512M, 2G)"))?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(format!("{text:?}: unknown unit (K, M, G or T)")),
    };
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// An import's error with the head it left.
fn stopped(importer: &Importer, err: quarry_ingest::Error) -> eyre::Report {
    let (number, hash) = importer.head();
    eyre::Report::new(err).wrap_err(format!("stopped at block {number} ({hash})"))
}

/// Opens (or creates) the database in `datadir` for the chain of the genesis file and imports
/// `files`, printing the summary.
fn import(
    datadir: &Path,
    chain: &ChainArgs,
    inputs: &quarry_ingest::era::EraFiles,
    reorgs: Option<Option<u64>>,
    history: History,
) -> Result<Importer> {
    let options = quarry_storage::DatabaseOptions {
        max_size: history.max_db_size,
    };
    let mut importer = chain.open_importer(datadir, options)?;
    apply_history(&mut importer, &history)?;
    // `reorgs`: `None` refuses them; `Some(depth)` follows them (`--reorg`).
    importer.set_reorgs(match reorgs {
        Some(given) => quarry_ingest::Reorgs::Follow {
            max_depth: reorg_depth(&importer, given)?,
        },
        None => quarry_ingest::Reorgs::Refuse,
    });
    let (number, hash) = importer.head();
    eprintln!(
        "datadir {}: head is block {number} ({hash})",
        datadir.display()
    );
    let started = Instant::now();
    let mut total = ImportStats::default();
    let mut progress = Progress::auto();
    for input in &inputs.inputs {
        total += importer
            .import_input(input, &inputs.checksums, &mut progress)
            .map_err(|e| stopped(&importer, e))?;
    }
    if let Some(url) = &inputs.url {
        let dir = datadir.join("era-download");
        total += importer
            .import_remote(url, &dir, &inputs.checksums, &mut progress)
            .map_err(|e| stopped(&importer, e))?;
    }
    total.elapsed = started.elapsed();
    println!(
        "imported {} blocks ({} already stored), {} transactions, {} gas in {:.2}s: {:.0} blocks/s, {:.1} Mgas/s",
        total.blocks,
        total.skipped,
        total.transactions,
        total.gas,
        total.elapsed.as_secs_f64(),
        total.blocks_per_second(),
        total.mgas_per_second()
    );
    let s = total.stages;
    println!(
        "stages: read {:.4}s, decode {:.4}s, senders {:.4}s, execution {:.4}s, state root {:.4}s, write {:.4}s, waiting for blocks {:.4}s",
        s.read.as_secs_f64(),
        s.decode.as_secs_f64(),
        s.senders.as_secs_f64(),
        s.execution.as_secs_f64(),
        s.state_root.as_secs_f64(),
        s.write.as_secs_f64(),
        s.waiting.as_secs_f64()
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "sender recovery alone: {:.4}s ({:.4}s of CPU time over {cores} cores)",
        s.senders_cpu.as_secs_f64() / cores as f64,
        s.senders_cpu.as_secs_f64()
    );
    Ok(importer)
}

fn ingest(
    datadir: PathBuf,
    chain: &ChainArgs,
    inputs: &quarry_ingest::era::EraFiles,
    safe: Option<u64>,
    finalized: Option<u64>,
    reorgs: Option<Option<u64>>,
    history: History,
) -> Result<()> {
    let importer = import(&datadir, chain, inputs, reorgs, history)?;
    if safe.is_some() || finalized.is_some() {
        let db = importer.database();
        let marked = (|| {
            let tx = db.writer()?;
            for (mark, number) in [(BlockMark::Safe, safe), (BlockMark::Finalized, finalized)] {
                if let Some(number) = number {
                    tx.put_meta_block(mark, number)?;
                }
            }
            tx.commit()
        })();
        marked.map_err(|e| db.explain(e))?;
    }
    give_back_free_pages(importer.database())?;
    let (number, hash) = importer.head();
    println!("head: block {number} ({hash})");
    Ok(())
}

/// Punches the free pages the last commits left out of the data file (see
/// `Database::release_free_pages`) and says how much went back to the file system.
fn give_back_free_pages(db: &Database) -> Result<()> {
    let started = Instant::now();
    let released = db.release_free_pages().map_err(|e| db.explain(e))?;
    if released.unsupported {
        println!(
            "{}: {released} (quarry backup --compact writes a copy without them)",
            db.datadir().display()
        );
    } else {
        println!("{released} in {:.2}s", started.elapsed().as_secs_f64());
    }
    Ok(())
}

fn follow(
    datadir: &Path,
    chain: &ChainArgs,
    history: History,
    max_reorg_depth: Option<u64>,
    mut options: quarry_follow::FollowOptions,
) -> Result<()> {
    let database = quarry_storage::DatabaseOptions {
        max_size: history.max_db_size,
    };
    let mut importer = chain.open_importer(datadir, database)?;
    apply_history(&mut importer, &history).map_err(|e| importer.explain(e))?;
    options.max_reorg_depth = reorg_depth(&importer, max_reorg_depth)?;
    let (number, hash) = importer.head();
    eprintln!(
        "datadir {}: head is block {number} ({hash}); following {}",
        datadir.display(),
        options.upstream
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    quarry_follow::follow(importer, &options, stop)?;
    let (number, hash) = {
        let db = Database::open(datadir)?;
        db.reader()?.head()?.unwrap_or_default()
    };
    println!("head: block {number} ({hash})");
    Ok(())
}

fn serve(
    datadir: Option<PathBuf>,
    config: PathBuf,
    listen: Option<std::net::SocketAddr>,
) -> Result<()> {
    let mut config = quarry_gateway::Config::load(&config)?;
    if let Some(listen) = listen {
        config.listen = listen;
    }
    let Some(datadir) = datadir else {
        if config.networks.is_empty() {
            bail!("give --datadir, or declare [[networks]] in the config");
        }
        return run_server(None, &config, None);
    };
    if !config.networks.is_empty() {
        bail!("the config declares [[networks]]: serve them without --datadir");
    }
    if !datadir.join("mdbx.dat").exists() {
        bail!(
            "no quarry database in {}: run `quarry ingest --datadir {}` first",
            datadir.display(),
            datadir.display()
        );
    }
    let db = Database::open(&datadir)
        .wrap_err_with(|| format!("cannot open database in {}", datadir.display()))?;
    run_server(Some(db), &config, None)
}

/// Serves `db` until it stops or Ctrl-C. `welcome` gives a message to print once the server
/// listens on the address it is given.
fn run_server(
    db: Option<Database>,
    config: &quarry_gateway::Config,
    welcome: Option<&dyn Fn(std::net::SocketAddr) -> String>,
) -> Result<()> {
    let head = match &db {
        Some(db) => db.reader()?.head()?,
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let server = quarry_gateway::start(config, db).await?;
        match head {
            Some((number, hash)) => eprintln!("serving block 0 to {number} (head {hash})"),
            None if config.networks.is_empty() => eprintln!("serving an empty database"),
            None => eprintln!("serving networks {}", server.networks.join(", ")),
        }
        // Scripts wait for this line; it names the real port when the config asked for 0.
        println!(
            "listening on http://{addr}/v3/<API_KEY> and ws://{addr}/ws/v3/<API_KEY> ({} keys)",
            server.keys,
            addr = server.local_addr
        );
        if let Some(welcome) = welcome {
            println!("{}", welcome(server.local_addr));
        }
        tokio::select! {
            _ = server.handle.clone().stopped() => {}
            _ = tokio::signal::ctrl_c() => {
                eprintln!("stopping");
                let _ = server.handle.stop();
                server.handle.stopped().await;
            }
        }
        Ok::<_, eyre::Report>(())
    })
}

fn dev(
    chain: PathBuf,
    datadir: Option<PathBuf>,
    config_path: PathBuf,
    listen: Option<std::net::SocketAddr>,
) -> Result<()> {
    let mut config = quarry_gateway::Config::load(&config_path)?;
    if let Some(listen) = listen {
        config.listen = listen;
    }
    let Some(key) = config.keys.first().map(|k| k.key.clone()) else {
        bail!("{} names no API key", config_path.display());
    };
    let network = chain.to_str().and_then(|name| name.parse().ok());
    let (chain_args, files, datadir) = match network {
        Some(network) => {
            let era = chain::bundled_history(network)?;
            let datadir = datadir.unwrap_or_else(|| Path::new("data").join(network.name()));
            (ChainArgs::network(network), vec![era], datadir)
        }
        None => (
            ChainArgs::genesis_file(chain.join("genesis.json")),
            vec![chain.join("chain.rlp")],
            datadir.unwrap_or_else(|| PathBuf::from("data/devnet")),
        ),
    };
    let inputs = quarry_ingest::era::era_files(&files, &[], None)?;
    let importer = import(
        &datadir,
        &chain_args,
        &inputs,
        None,
        History {
            trie: true,
            proofs: None,
            state: None,
            max_db_size: quarry_storage::DEFAULT_MAX_SIZE,
            root_per_window: true,
        },
    )?;
    let db = importer.database().clone();
    drop(importer);
    let welcome = |addr: std::net::SocketAddr| {
        let body =
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}"#;
        format!(
            "\ndev chain {} in {}; API key {key}. Try:\n  \
             curl -s http://{addr}/v3/{key} -H 'content-type: application/json' -d '{body}'\n",
            chain.display(),
            datadir.display(),
        )
    };
    run_server(Some(db), &config, Some(&welcome))
}

fn keys(store: &str, action: KeysAction) -> Result<()> {
    let store = quarry_gateway::keys::KeySource::parse(store)?;
    match action {
        KeysAction::Add {
            plan,
            name,
            networks,
            allow,
            secret,
            require_secret,
            jwt,
        } => {
            let networks = (!networks.is_empty()).then_some(networks);
            let allow = allow.apply(Default::default())?;
            // The JWT change is checked with the new record, before it is stored: a refused
            // one adds no key.
            let jwt = jwt.new_key_change()?;
            let (key, record) = store.add(plan, name, networks, allow, jwt)?;
            let secret = if secret {
                store.set_secret(&record.id, true, Some(require_secret))?.1
            } else {
                None
            };
            eprintln!(
                "added {} ({} plan); the key is shown only now:",
                record.id,
                plan.name()
            );
            println!("{key}");
            if let Some(secret) = secret {
                eprintln!("and its secret, also shown only now:");
                println!("{secret}");
            }
        }
        KeysAction::List => {
            println!("id\tplan\tname\tnetworks\tallowlists\tsecret\tjwt\tcreated\trevoked");
            for key in &store.list()? {
                let secret = match (key.secret_hash.is_some(), key.require_secret) {
                    (true, true) => "required",
                    (true, false) => "yes",
                    (false, _) => "-",
                };
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    key.id,
                    key.plan.name(),
                    key.name,
                    key.networks
                        .as_ref()
                        .map_or("all".to_string(), |n| n.join(",")),
                    allowlists_column(&key.allow),
                    secret,
                    jwt_column(key),
                    key.created,
                    key.revoked.map_or("-".to_string(), |t| t.to_string()),
                );
            }
        }
        KeysAction::Update {
            id,
            allow,
            clear_allowlists,
            new_secret,
            require_secret,
            no_require_secret,
            jwt,
        } => {
            let current = store
                .list()?
                .into_iter()
                .find(|k| k.id == id)
                .ok_or_else(|| eyre::eyre!("no key with id {id:?} in the key store"))?;
            // Read before anything changes, so a bad file changes nothing.
            let jwt_change = (!jwt.is_empty()).then(|| jwt.change()).transpose()?;
            let base = if clear_allowlists {
                Default::default()
            } else {
                current.allow
            };
            let mut record = store.set_allowlists(&id, allow.apply(base)?)?;
            let require = match (require_secret, no_require_secret) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            };
            if new_secret || require.is_some() {
                let (changed, secret) = store.set_secret(&id, new_secret, require)?;
                record = changed;
                if let Some(secret) = secret {
                    eprintln!("the new secret of {id}, shown only now:");
                    println!("{secret}");
                }
            }
            if let Some(change) = jwt_change {
                record = store.set_jwt(&id, change)?;
            }
            eprintln!(
                "updated {} ({}): allowlists {}; JWT keys {}",
                record.id,
                record.name,
                allowlists_column(&record.allow),
                jwt_column(&record)
            );
        }
        KeysAction::Revoke { id } => {
            let record = store.revoke(&id)?;
            eprintln!("revoked {} ({})", record.id, record.name);
        }
    }
    Ok(())
}

fn devchain(out: PathBuf, options: quarry_devchain::GenerateOptions) -> Result<()> {
    let mut last_report = Instant::now();
    let summary = quarry_devchain::generate(&out, &options, &mut |s| {
        if last_report.elapsed().as_secs() >= 2 {
            last_report = Instant::now();
            eprintln!(
                "block {}/{}: {} transactions, {:.0} blocks/s",
                s.blocks,
                options.blocks,
                s.transactions,
                s.blocks as f64 / s.elapsed.as_secs_f64()
            );
        }
    })
    .wrap_err_with(|| format!("cannot generate a chain in {}", out.display()))?;
    let secs = summary.elapsed.as_secs_f64();
    println!(
        "generated {} blocks, {} transactions, {} gas, {} bytes in {:.2}s: {:.0} blocks/s, {:.0} tx/s, {:.1} Mgas/s",
        summary.blocks,
        summary.transactions,
        summary.gas,
        summary.bytes,
        secs,
        summary.blocks as f64 / secs,
        summary.transactions as f64 / secs,
        summary.gas as f64 / 1e6 / secs
    );
    println!(
        "stages: planning and signing {:.2}s, building {:.2}s",
        summary.planning.as_secs_f64(),
        summary.building.as_secs_f64()
    );
    println!(
        "wrote {} and {}",
        out.join("genesis.json").display(),
        out.join("chain.rlp").display()
    );
    Ok(())
}

fn index_logs(datadir: PathBuf) -> Result<()> {
    const BATCH: u64 = 1000;
    if !datadir.join("mdbx.dat").exists() {
        bail!("no quarry database in {}", datadir.display());
    }
    let db = Database::open(&datadir)
        .wrap_err_with(|| format!("cannot open database in {}", datadir.display()))?;
    let head = db.reader()?.head()?.map_or(0, |(number, _)| number);
    let started = Instant::now();
    loop {
        let step = || {
            let tx = db.writer()?;
            let before = tx.log_index_head()?;
            let indexed = tx.build_log_index(BATCH)?;
            tx.commit()?;
            Ok::<_, quarry_storage::Error>((before, indexed))
        };
        let (before, indexed) = step().map_err(|e| db.explain(e))?;
        eprintln!("log index through block {indexed} of {head}");
        if before == Some(indexed) || indexed >= head {
            break;
        }
    }
    println!(
        "log index complete through block {head} in {:.2}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn index_traces(datadir: &Path) -> Result<()> {
    if !datadir.join("mdbx.dat").exists() {
        bail!("no quarry database in {}", datadir.display());
    }
    let db = Database::open(datadir)
        .wrap_err_with(|| format!("cannot open database in {}", datadir.display()))?;
    index_traces_of(&db, datadir)
}

/// Builds the trace index of `db` (the database in `datadir`) up to its head. The caller's
/// environment is used: MDBX takes one environment per file in a process.
fn index_traces_of(db: &Database, datadir: &Path) -> Result<()> {
    const BATCH: u64 = 200;
    let Some(spec) = quarry_executor::ChainSpec::stored(&db.reader()?)? else {
        bail!("no chain in the database in {}", datadir.display());
    };
    let started = Instant::now();
    loop {
        let reader = db.reader()?;
        let head = reader.head()?.map_or(0, |(number, _)| number);
        let next = reader.trace_index_head()?.map_or(1, |indexed| indexed + 1);
        if next > head {
            println!(
                "trace index complete through block {head} in {:.2}s",
                started.elapsed().as_secs_f64()
            );
            return Ok(());
        }
        let last = head.min(next + BATCH - 1);
        let entries = quarry_executor::parity_trace::index_entries(&spec, &reader, next, last)
            .wrap_err_with(|| format!("cannot trace blocks {next} to {last}"))?;
        let traced = reader.canonical_hash(last)?;
        drop(reader);
        let tx = db.writer()?;
        if tx.canonical_hash(last)? != traced {
            // A reorganisation replaced the traced blocks: trace the new ones.
            continue;
        }
        if next == 1 {
            tx.index_block_traces(0, &[], &[])?;
        }
        let indexed = (|| {
            for (number, addresses) in &entries {
                let named = tx.stored_block_named_addresses(*number)?;
                tx.index_block_traces(*number, addresses, &named)?;
            }
            let indexed = tx.trace_index_head()?;
            tx.commit()?;
            Ok(indexed)
        })()
        .map_err(|e| db.explain(e))?;
        if indexed != Some(last) {
            // A reorganisation moved the chain under the batch: start again from the index.
            eprintln!("the chain changed while indexing blocks {next} to {last}; continuing");
            continue;
        }
        eprintln!("trace index through block {last} of {head}");
    }
}

fn unwind(datadir: &Path, chain: &ChainArgs, to: u64) -> Result<()> {
    if !datadir.join("mdbx.dat").exists() {
        bail!("no quarry database in {}", datadir.display());
    }
    let mut importer = chain.open_importer(datadir, Default::default())?;
    let (head, _) = importer.head();
    if to >= head {
        bail!("--to {to} is not below the head, block {head}: nothing to unwind");
    }
    let started = Instant::now();
    importer.unwind_to(to).map_err(|e| importer.explain(e))?;
    let (number, hash) = importer.head();
    println!(
        "unwound {} blocks in {:.3}s; head: block {number} ({hash})",
        head - to,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `quarry backup`: MDBX's copy of the datadir, made through one read transaction.
/// Opens the database a datadir already holds (an error naming the datadir when it holds none).
fn open_existing(datadir: &Path, options: quarry_storage::DatabaseOptions) -> Result<Database> {
    if !datadir.join("mdbx.dat").exists() {
        bail!("no quarry database in {}", datadir.display());
    }
    Database::open_with(datadir, options)
        .wrap_err_with(|| format!("cannot open database in {}", datadir.display()))
}

fn backup(datadir: &Path, out: &Path, compact: bool) -> Result<()> {
    let db = open_existing(datadir, quarry_storage::DatabaseOptions::default())?;
    let report = db.backup(out, compact)?;
    let head = match report.head {
        Some((number, hash)) => format!("head block {number} ({hash})"),
        None => "no blocks".to_string(),
    };
    println!(
        "backed up {} to {}: {head}, {:.1} MB on disk{}, in {:.2} s",
        datadir.display(),
        out.display(),
        report.bytes as f64 / 1e6,
        if compact { " (compacted)" } else { "" },
        report.seconds
    );
    Ok(())
}

/// `quarry prune`: sets the state history window, then prunes what lies behind it, each
/// bounded part its own commit.
fn prune(datadir: &Path, blocks: u64, batch: u64) -> Result<()> {
    let db = open_existing(datadir, quarry_storage::DatabaseOptions::default())?;
    let started = Instant::now();
    let pruned = (|| -> quarry_storage::Result<u64> {
        let tx = db.writer()?;
        tx.set_state_history_window(blocks)?;
        tx.commit()?;
        loop {
            let tx = db.writer()?;
            let done = tx.prune_state_history(batch, u64::MAX)?;
            let oldest = tx.oldest_state()?;
            tx.commit()?;
            if done {
                return Ok(oldest);
            }
            eprintln!("state history pruned up to block {oldest}");
        }
    })()
    .map_err(|e| db.explain(e))?;
    println!(
        "{} keeps the state history of its last {blocks} blocks: the oldest block with state is {pruned} ({:.2}s)",
        datadir.display(),
        started.elapsed().as_secs_f64()
    );
    give_back_free_pages(&db)
}

fn migrate(datadir: PathBuf, proof_history: Option<u64>, max_db_size: u64) -> Result<()> {
    let options = quarry_storage::DatabaseOptions {
        max_size: max_db_size,
    };
    let db = open_existing(&datadir, options)?;
    let started = Instant::now();
    migrate_layout(&db, proof_history).map_err(|e| db.explain(e))?;
    // The trace index, for the blocks stored before it.
    index_traces_of(&db, &datadir)?;
    println!(
        "{} is at layout {} ({:.2}s)",
        datadir.display(),
        quarry_storage::SCHEMA_VERSION,
        started.elapsed().as_secs_f64()
    );
    give_back_free_pages(&db)
}

/// `quarry migrate`'s steps in the database itself, each batch its own commit.
fn migrate_layout(db: &Database, proof_history: Option<u64>) -> quarry_storage::Result<()> {
    // History entries or receipts per commit.
    const BATCH: u64 = 200_000;
    loop {
        let tx = db.writer()?;
        let layout = tx.schema_version()?;
        let done = tx.migrate_step(BATCH)?;
        tx.commit()?;
        if done {
            break;
        }
        eprintln!("layout {layout}: {BATCH} more entries migrated");
    }
    if let Some(blocks) = proof_history {
        let tx = db.writer()?;
        tx.set_proof_history(Some(blocks))?;
        tx.commit()?;
    }
    // Node history that fell behind `proof_history` (set on a datadir with a long history)
    // is thinned here too, a bounded part per commit, as imports would.
    loop {
        let tx = db.writer()?;
        let done = tx.prune_node_history(quarry_storage::PRUNE_BUDGET)?;
        tx.commit()?;
        if done {
            break;
        }
        eprintln!(
            "node history: thinned up to block {:?}",
            db.reader()?.trie_history_fine_from()?
        );
    }
    Ok(())
}

fn run_blocktests(paths: Vec<PathBuf>) -> Result<()> {
    let mut files = Vec::new();
    for path in &paths {
        files.extend(
            blocktest::test_files(path)
                .wrap_err_with(|| format!("cannot read {}", path.display()))?,
        );
    }
    let (mut passed, mut failed) = (0usize, 0usize);
    for file in files {
        for outcome in blocktest::run_file(&file) {
            match outcome.failure {
                None => {
                    passed += 1;
                    println!("PASS {}", outcome.name);
                }
                Some(reason) => {
                    failed += 1;
                    println!("FAIL {}\n    {reason}", outcome.name);
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        bail!("{failed} blockchain tests failed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The option quarry sets is mimalloc's purge delay: v3's default of 1 s before it is set
    /// (no other option of v3 defaults to 1,000), and what quarry sets after.
    #[test]
    fn the_purge_delay_option_is_mimallocs() {
        use libmimalloc_sys::{mi_option_get, mi_option_set};
        // SAFETY: reads and sets one of the allocator's options.
        unsafe {
            assert_eq!(mi_option_get(super::MI_OPTION_PURGE_DELAY), 1000);
            mi_option_set(super::MI_OPTION_PURGE_DELAY, super::PURGE_DELAY_MS);
            assert_eq!(
                mi_option_get(super::MI_OPTION_PURGE_DELAY),
                super::PURGE_DELAY_MS
            );
        }
    }
}
