//! Opening the served networks: each datadir checked for a layout this quarry reads, and one
//! node per network, built from the config (`NodeConfig`), with its rollup's L1 and its
//! declared chain id checked.

use crate::{
    ServeError,
    access::caller::Network,
    access::cors::CorsOrigins,
    config::{Config, NetworkConfig},
};
use quarry_eth::{BlockMarks, LogsConfig, Node, NodeConfig};
use quarry_storage::Database;
use std::sync::Arc;

/// Refuses a database that an older quarry wrote in a layout this one cannot read (an empty one
/// is fine: a writer will give it the current layout). `datadir`: where it is, if known.
fn check_layout(
    db: &Database,
    datadir: Option<&std::path::Path>,
) -> std::result::Result<(), ServeError> {
    let (name, arg) = match datadir {
        Some(path) => (path.display().to_string(), path.display().to_string()),
        None => ("the datadir".to_string(), "<DIR>".to_string()),
    };
    let open = |e: quarry_storage::Error| ServeError::Open(format!("{name}: {e}"));
    let tx = db.reader().map_err(open)?;
    let found = tx.schema_version().map_err(open)?;
    if tx.head().map_err(open)?.is_some() && found < quarry_storage::SCHEMA_VERSION {
        return Err(ServeError::Open(format!(
            "{name} was written by an older quarry (layout {found}, current {}): run `quarry migrate --datadir {arg}` once to bring it up to date",
            quarry_storage::SCHEMA_VERSION
        )));
    }
    Ok(())
}

/// The networks a config serves, each with its `[[networks]]` entry; or else `default_db` on
/// any host, with none.
pub(crate) fn open_networks(
    config: &Config,
    default_db: Option<Database>,
) -> std::result::Result<Vec<(Network, Option<&NetworkConfig>)>, ServeError> {
    if config.networks.is_empty() {
        let db = default_db.ok_or_else(|| {
            ServeError::Open("no database given and no [[networks]] in the config".into())
        })?;
        check_layout(&db, None)?;
        let network = Network {
            name: "default".into(),
            hosts: Vec::new(),
            partner_url: None,
            transactions_url: config.transactions_url.clone(),
            peers: config.peers.clone(),
            cors: CorsOrigins::parse(&config.cors_origins)
                .map_err(|e| ServeError::Open(format!("cors_origins: {e}")))?,
            db,
        };
        return Ok(vec![(network, None)]);
    }
    config
        .networks
        .iter()
        .map(|network| {
            let db = Database::open(&network.datadir).map_err(|e| {
                ServeError::Open(format!(
                    "network {}: cannot open {}: {e}",
                    network.name,
                    network.datadir.display()
                ))
            })?;
            check_layout(&db, Some(&network.datadir))?;
            let opened = Network {
                name: network.name.clone(),
                hosts: network
                    .hosts
                    .iter()
                    .map(|h| h.to_ascii_lowercase())
                    .collect(),
                partner_url: network.partner_url.clone(),
                transactions_url: network.transactions_url.clone(),
                peers: network.peers.clone(),
                cors: CorsOrigins::parse(&network.cors_origins).map_err(|e| {
                    ServeError::Open(format!("network {}: cors_origins: {e}", network.name))
                })?,
                db,
            };
            Ok((opened, Some(network)))
        })
        .collect()
}

/// What the nodes' answers take from the config.
pub(crate) fn node_config(config: &Config) -> NodeConfig {
    NodeConfig {
        marks: BlockMarks {
            safe: config.safe_block,
            finalized: config.finalized_block,
        },
        call_timeout: std::time::Duration::from_millis(config.call_timeout_ms),
        logs: LogsConfig {
            max_results: config.max_logs,
            timeout: std::time::Duration::from_millis(config.logs_timeout_ms),
            max_params: config.max_log_params,
            use_index: config.log_index,
        },
        proof_window: config.proof_window,
        max_trace_bytes: config.max_trace_bytes,
    }
}

/// One node per opened network; a network declared a rollup of another gets that one's
/// database as its L1, and a declared chain id must be the stored one.
pub(crate) fn open_nodes(
    config: &Config,
    opened: &[(Network, Option<&NetworkConfig>)],
) -> Result<Vec<Arc<Node>>, ServeError> {
    let node_config = node_config(config);
    let mut nodes = Vec::with_capacity(opened.len());
    for (network, declared) in opened {
        let l1 = declared
            .and_then(|n| n.rollup_of.as_ref())
            .and_then(|l1| opened.iter().find(|(n, _)| &n.name == l1))
            .map(|(n, _)| n.db.clone());
        let node = Node::new(network.db.clone(), node_config, l1)
            .map_err(|e| ServeError::Open(format!("network {}: {e}", network.name)))?;
        if let Some((expected, declared)) = declared.and_then(|n| Some((n.chain_id?, n))) {
            let stored = node
                .chain_id()
                .map_err(|e| ServeError::Open(format!("network {}: {e}", network.name)))?;
            if stored.to::<u64>() != expected {
                return Err(ServeError::Open(format!(
                    "network {}: the config says chain id {expected}, {} holds chain {stored}",
                    network.name,
                    declared.datadir.display()
                )));
            }
        }
        nodes.push(Arc::new(node));
    }
    Ok(nodes)
}
