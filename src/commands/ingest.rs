//! `quarry ingest`: a chain's blocks from files (RLP, era1, ere) or a published folder of era
//! files, executed, verified and stored in a datadir.

use super::{
    chain::ChainArgs,
    datadir::give_back_free_pages,
    import::{HistoryArgs, import},
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
    /// Block files, imported in order: files of RLP blocks, era1 and ere files, and folders of
    /// them (imported in name order, checked against the folder's checksums.txt if it has
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
    #[command(flatten)]
    history: HistoryArgs,
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
        history,
        state_root_every_block,
    } = args;
    let reorgs = reorg.then_some(max_reorg_depth);
    let history = history.history(!no_trie_history, !state_root_every_block);
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
