//! `quarry ingest`: a chain's blocks from files (RLP, era1, ere) or a published folder of era
//! files, executed, verified and stored in a datadir.

use super::{
    chain::ChainArgs,
    datadir::{give_back_free_pages, parse_size},
    import::{History, import},
};
use eyre::Result;
use quarry_storage::BlockMark;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct IngestArgs {
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
}

pub fn run(args: IngestArgs) -> Result<()> {
    let IngestArgs {
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
    } = args;
    let reorgs = reorg.then_some(max_reorg_depth);
    let history = History {
        trie: !no_trie_history,
        proofs: proof_history,
        state: state_history,
        max_db_size,
        root_per_window: !state_root_every_block,
    };
    let inputs = quarry_ingest::era::era_files(&files, &era_checksums, era_url)?;
    let importer = import(&datadir, &chain, &inputs, reorgs, history)?;
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
