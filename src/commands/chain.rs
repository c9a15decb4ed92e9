//! Which chain a command opens a datadir for: a public network by name (`--chain`), a custom
//! chain's genesis.json (`--genesis`), or, with neither, the one the datadir recorded.

use eyre::{Context, Result, bail};
use quarry_executor::Network;
use quarry_ingest::Importer;
use quarry_storage::{Database, DatabaseOptions};
use std::path::{Path, PathBuf};

/// Where the bundled history files of `quarry dev --chain NAME` are, relative to the
/// repository (as `testdata/devnet` is).
const BUNDLED_HISTORY: &str = "testdata/era1";

#[derive(clap::Args, Debug, Clone, Default)]
pub struct ChainArgs {
    /// A public network: mainnet, sepolia, holesky or hoodi (its genesis and fork schedule are
    /// built in). Not needed once the datadir holds a chain.
    #[arg(long, conflicts_with = "genesis", value_name = "NAME")]
    pub chain: Option<Network>,
    /// A custom chain's genesis.json. Not needed once the datadir holds a chain.
    #[arg(long, value_name = "FILE")]
    pub genesis: Option<PathBuf>,
}

impl ChainArgs {
    pub fn network(network: Network) -> Self {
        Self {
            chain: Some(network),
            genesis: None,
        }
    }

    pub fn genesis_file(path: PathBuf) -> Self {
        Self {
            chain: None,
            genesis: Some(path),
        }
    }

    /// Opens (or creates) the database in `datadir` for the chain these arguments name, or
    /// for the one it holds when they name none.
    pub fn open_importer(&self, datadir: &Path, options: DatabaseOptions) -> Result<Importer> {
        let genesis = match &self.genesis {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .wrap_err_with(|| format!("cannot read {}", path.display()))?;
                let genesis: alloy_genesis::Genesis = serde_json::from_str(&text)
                    .wrap_err_with(|| format!("{} is not a valid genesis.json", path.display()))?;
                Some(genesis)
            }
            None => None,
        };
        if self.chain.is_none() && genesis.is_none() && !datadir.join("mdbx.dat").exists() {
            bail!(
                "{} holds no chain yet: give --chain NAME (mainnet, sepolia, holesky, hoodi) or --genesis FILE",
                datadir.display()
            );
        }
        // A bad benchmark setting is refused before the datadir is created.
        quarry_ingest::commit_interval()?;
        let db = Database::open_with(datadir, options)
            .wrap_err_with(|| format!("cannot open database in {}", datadir.display()))?;
        let opened = match (self.chain, genesis) {
            (Some(network), _) => Importer::open_network(db.clone(), network),
            (None, Some(genesis)) => Importer::open(db.clone(), &genesis),
            (None, None) => Importer::open_stored(db.clone()),
        };
        opened.map_err(|e| match e {
            quarry_ingest::Error::Storage(e) => db.explain(e).into(),
            other => other.into(),
        })
    }
}

/// The history files bundled for `quarry dev --chain NAME`: mainnet's era 0.
pub fn bundled_history(network: Network) -> Result<PathBuf> {
    let dir = Path::new(BUNDLED_HISTORY);
    let prefix = format!("{}-", network.name());
    let found = std::fs::read_dir(dir)
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .find(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with(&prefix) && name.ends_with(".era1"))
        });
    match found {
        Some(path) => Ok(path),
        None => bail!(
            "no bundled history of {network} in {BUNDLED_HISTORY} (run from the repository; only mainnet's era 0 is bundled): import era files with `quarry ingest --chain {network} --datadir DIR FILES`"
        ),
    }
}
