//! `quarry serve`: JSON-RPC over HTTP and WebSocket from one datadir or the config's networks.

use super::server::run_server;
use eyre::{Context, Result, bail};
use quarry_storage::Database;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ServeArgs {
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
}

pub fn run(args: ServeArgs) -> Result<()> {
    let ServeArgs {
        datadir,
        config,
        listen,
    } = args;
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
