//! Serving a database until it stops or Ctrl-C, as `quarry serve` and `quarry dev` do.

use eyre::Result;
use quarry_storage::Database;

/// Serves `db` until it stops or Ctrl-C. `welcome` gives a message to print once the server
/// listens on the address it is given.
pub fn run_server(
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
