//! `quarry blocktest`: Ethereum BlockchainTests JSON files run through quarry's import path.

use eyre::{Context, Result, bail};
use quarry_ingest::blocktest;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct BlocktestArgs {
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

pub fn run(args: BlocktestArgs) -> Result<()> {
    let mut files = Vec::new();
    for path in &args.paths {
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
