//! The `quarry` command line: parses it and hands the command to its module in
//! `src/commands/`. Also the binary's global allocator and its memory purger.

mod commands;

use clap::{Parser, Subcommand};
use commands::{
    backup, blocktest, dev, devchain, export_era, follow, index_logs, index_traces, ingest, keys,
    migrate, prune, serve, unwind,
};
use eyre::Result;
use std::time::Duration;

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
enum Command {
    /// Execute, verify and store a chain: genesis.json plus files of concatenated RLP blocks
    /// (plain or gzip). Re-running continues from the stored head.
    Ingest(ingest::IngestArgs),
    /// Keep a datadir in step with an upstream Ethereum JSON-RPC node (geth, reth, a hosted
    /// provider, another quarry): catch up, then import each new block as it appears, every
    /// block executed and verified, following the upstream's reorganisations.
    Follow(follow::FollowArgs),
    /// Answer JSON-RPC over HTTP (POST /v3/<API_KEY>) and WebSocket (/ws/v3/<API_KEY>) from a
    /// database that `quarry ingest` wrote (and may still be writing).
    Serve(serve::ServeArgs),
    /// Ingest the bundled dev chain (testdata/devnet) if it is not stored yet, then serve it on
    /// 127.0.0.1:8545 with the dev API key: the one command to try quarry. `--chain mainnet`
    /// serves mainnet's first 8,192 blocks from the bundled era1 file instead.
    Dev(dev::DevArgs),
    /// Generate a deterministic test chain (genesis.json and chain.rlp) signed by the dev
    /// accounts: the bundled devnet by default, or a scale chain for benchmarks.
    Devchain(devchain::DevchainArgs),
    /// Manage API keys in a key store: a file (the config's `keys_file`) or Redis (the
    /// config's `keys_store`).
    Keys(keys::KeysArgs),
    /// Build the eth_getLogs index of a database written before quarry had one (ingest keeps
    /// it up to date otherwise). Resumable: each batch of blocks commits on its own.
    IndexLogs(index_logs::IndexLogsArgs),
    /// Build the trace_filter index of a database whose blocks were stored before quarry had
    /// one (ingest keeps it up to date otherwise; `quarry migrate` runs this too): each block
    /// past the index is re-executed for the addresses its call frames name. Resumable: each
    /// batch of blocks commits on its own.
    IndexTraces(index_traces::IndexTracesArgs),
    /// Remove every block above a given one from a datadir, as a reorganisation does before
    /// it applies a new branch (state, history, receipts, log index and trie return to that
    /// block's), in one commit.
    Unwind(unwind::UnwindArgs),
    /// Bring a datadir written by an older quarry to the current layout (builds the per-block
    /// changesets that unwinding needs from the state history, and re-encodes the receipts).
    /// Resumable: each batch commits on its own, and running it again continues. Also thins
    /// the trie node history that lies behind the datadir's `proof_history`.
    Migrate(migrate::MigrateArgs),
    /// Write a consistent copy of a datadir as of one commit into a new directory, while an
    /// ingest or follow keeps committing to it: a new replica's datadir, served at once and
    /// followed from its head. Prints the copy's head, size and time.
    Backup(backup::BackupArgs),
    /// Turn a datadir into one that keeps the state history of its last N blocks only (see
    /// `quarry ingest --state-history`), pruning the older history a bounded part per commit.
    /// Resumable: running it again continues. At the end the freed pages are given back to the
    /// file system (punched out of the data file).
    Prune(prune::PruneArgs),
    /// Write the stored history as era1 files, 8,192 blocks a file (era N holds blocks
    /// N*8192 to N*8192+8191), named as the format names them, with a checksums.txt.
    ExportEra(export_era::ExportEraArgs),
    /// Run Ethereum BlockchainTests JSON files (or folders of them) through quarry's import path.
    Blocktest(blocktest::BlocktestArgs),
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
        Command::Ingest(args) => ingest::run(args),
        Command::Follow(args) => follow::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Dev(args) => dev::run(args),
        Command::Devchain(args) => devchain::run(args),
        Command::Keys(args) => keys::run(args),
        Command::IndexLogs(args) => index_logs::run(args),
        Command::IndexTraces(args) => index_traces::run(args),
        Command::Unwind(args) => unwind::run(args),
        Command::Migrate(args) => migrate::run(args),
        Command::Backup(args) => backup::run(args),
        Command::Prune(args) => prune::run(args),
        Command::ExportEra(args) => export_era::run(args),
        Command::Blocktest(args) => blocktest::run(args),
    }
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
