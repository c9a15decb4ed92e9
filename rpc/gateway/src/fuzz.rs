//! Ways in for the fuzz targets (`fuzz/`, feature `fuzzing`): the parsers that face untrusted
//! JSON, and every registered method called in-process with the parameters a target makes.

use crate::{
    Config, Networks,
    caller::{Caller, Network},
    keys::KeyGrant,
    service::Service,
};
use jsonrpsee::RpcModule;
use quarry_eth::{Node, params::FromArg};
use quarry_storage::Database;
use serde_json::Value;
use std::sync::Arc;

/// eth_getLogs' filter object, and the weight it would cost.
pub fn logs_filter(value: &Value) {
    if quarry_eth::log_filter::Filter::from_arg(value).is_ok() {
        let params = serde_json::value::to_raw_value(&[value]).ok();
        let weights = crate::weights::Weights::new(&Default::default());
        let _ = weights.of_call("eth_getLogs", params.as_deref(), u64::MAX / 2);
    }
}

/// eth_call's state overrides.
pub fn state_overrides(value: &Value) {
    let _ = quarry_eth::call_params::Overrides::from_arg(value);
}

/// eth_call's call object.
pub fn call_object(value: &Value) {
    let _ = quarry_eth::call_params::Call::from_arg(value);
}

/// The JSON-RPC envelope of an HTTP body or WebSocket message, and the rewriting of an answer.
pub fn envelope(body: &[u8], answer: &str) {
    if let crate::envelope::BodyPlan::Rewrite(rewrite) = crate::envelope::inspect(body, 100) {
        let _ = rewrite.finish(answer);
    }
}

/// Every method quarry serves, registered as `quarry serve` registers them, over one database
/// (an empty one will do: every method parses its parameters before it reads anything), and
/// called in-process as a custom-plan key.
pub struct Harness {
    module: RpcModule<Networks>,
    names: Vec<&'static str>,
    runtime: tokio::runtime::Runtime,
}

impl Harness {
    pub fn new(db: Database) -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let config = Config::parse("").map_err(|e| e.to_string())?;
        let node = Node::new(db.clone(), crate::networks::node_config(&config), None)
            .map_err(|e| e.to_string())?;
        let network = Network {
            name: "fuzz".into(),
            hosts: Vec::new(),
            partner_url: None,
            transactions_url: None,
            peers: Vec::new(),
            cors: crate::cors::CorsOrigins::Any,
            db,
        };
        let service = Arc::new(Service::new(&config, vec![network]).map_err(|e| e.to_string())?);
        let pools = crate::pool::Pools::new(&config).map_err(|e| e.to_string())?;
        let registry = runtime
            .block_on(async { crate::register_methods(vec![Arc::new(node)], &service, &pools) })
            .map_err(|e| e.to_string())?;
        // Every method is also registered in jsonrpsee's module, which this harness calls.
        let mut module = registry.module;
        let grant = KeyGrant {
            id: "fuzz".into(),
            hash: Default::default(),
            plan: crate::Plan::Custom,
            networks: None,
            allow: None,
            secret_hash: None,
            require_secret: false,
            jwt: None,
            require_jwt: false,
        };
        module.extensions_mut().insert(Caller {
            grant,
            network: 0,
            client: Default::default(),
            bypass_allowlists: false,
            token: None,
        });
        let mut names: Vec<&'static str> = module.method_names().collect();
        names.sort_unstable();
        Ok(Self {
            module,
            names,
            runtime,
        })
    }

    /// The registered methods, sorted.
    pub fn names(&self) -> &[&'static str] {
        &self.names
    }

    /// Calls method `index` (modulo their count) with `params`: its answer.
    pub fn call(&self, index: usize, params: &Value) -> String {
        let method = self.names[index % self.names.len()];
        let request =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let answer = self
            .runtime
            .block_on(self.module.raw_json_request(&request.to_string(), 1));
        match answer {
            Ok((answer, _)) => answer.get().to_string(),
            Err(e) => e.to_string(),
        }
    }
}
