//! `quarry follow`: a datadir kept in step with an upstream JSON-RPC node, every new block
//! executed and verified, the upstream's reorganisations followed.

use super::{
    chain::ChainArgs,
    import::{HistoryArgs, apply_history, reorg_depth},
};
use eyre::Result;
use quarry_storage::Database;
use std::{path::PathBuf, time::Duration};

#[derive(clap::Args)]
pub struct FollowArgs {
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
    #[command(flatten)]
    history: HistoryArgs,
}

pub fn run(args: FollowArgs) -> Result<()> {
    let FollowArgs {
        datadir,
        chain,
        upstream,
        poll_ms,
        max_reorg_depth,
        fetch,
        concurrency,
        history,
    } = args;
    let history = history.history(true, false);
    let mut options = quarry_follow::FollowOptions {
        upstream,
        fetch,
        poll: Duration::from_millis(poll_ms),
        max_reorg_depth: quarry_ingest::DEFAULT_MAX_REORG_DEPTH,
        concurrency,
    };
    let database = quarry_storage::DatabaseOptions {
        max_size: history.max_db_size,
    };
    let mut importer = chain.open_importer(&datadir, database)?;
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
        let db = Database::open(&datadir)?;
        db.reader()?.head()?.unwrap_or_default()
    };
    println!("head: block {number} ({hash})");
    Ok(())
}
