//! `quarry dev`: the bundled dev chain (or mainnet's bundled era 0) imported if it is not
//! stored yet, then served with the dev API key.

use super::{
    chain::{self, ChainArgs},
    import::{History, import},
    server::run_server,
};
use eyre::{Result, bail};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct DevArgs {
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
}

pub fn run(args: DevArgs) -> Result<()> {
    let DevArgs {
        chain,
        datadir,
        config: config_path,
        listen,
    } = args;
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
