//! Ways in for the fuzz targets (`fuzz/`, feature `fuzzing`): the parsers that face untrusted
//! JSON, and every registered method called in-process with the parameters a target makes.

use crate::{
    Config, Networks,
    access::caller::{Caller, Network},
    access::keys::KeyGrant,
    call::table::{Context, Table},
    service::Service,
};
use jsonrpsee::types::{Id, Request};
use quarry_eth::{Node, params::FromArg};
use quarry_storage::Database;
use serde_json::Value;
use std::sync::Arc;

/// eth_getLogs' filter object, and the weight it would cost.
pub fn logs_filter(value: &Value) {
    if quarry_eth::log_filter::Filter::from_arg(value).is_ok() {
        let params = serde_json::value::to_raw_value(&[value]).ok();
        let weights = crate::limits::weights::Weights::new(&Default::default());
        let _ = weights.of_call("eth_getLogs", None, params.as_deref(), u64::MAX / 2);
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
    if let crate::call::envelope::BodyPlan::Rewrite(rewrite) =
        crate::call::envelope::inspect(body, 100)
    {
        let _ = rewrite.finish(answer);
    }
}

/// Every method quarry serves, in the method table `quarry serve` answers from, over one
/// database (an empty one will do: every method parses its parameters before it reads
/// anything), and called in-process as a custom-plan key.
pub struct Harness {
    table: Table,
    names: Vec<&'static str>,
    caller: Caller,
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
            cors: crate::access::cors::CorsOrigins::Any,
            db,
        };
        let service = Arc::new(Service::new(&config, vec![network]).map_err(|e| e.to_string())?);
        let pools = crate::limits::pool::Pools::new(&config).map_err(|e| e.to_string())?;
        let context = Context {
            service,
            networks: Networks(vec![Arc::new(node)]),
            pools,
        };
        let table = Table::new(crate::rows(), context, config.max_response_bytes)
            .map_err(|e| e.to_string())?;
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
        let caller = Caller {
            grant,
            network: 0,
            client: Default::default(),
            bypass_allowlists: false,
            token: None,
        };
        let mut names: Vec<&'static str> = table.names().collect();
        names.sort_unstable();
        Ok(Self {
            table,
            names,
            caller,
            runtime,
        })
    }

    /// The served methods, sorted.
    pub fn names(&self) -> &[&'static str] {
        &self.names
    }

    /// Calls method `index` (modulo their count) with `params`: its answer.
    pub fn call(&self, index: usize, params: &Value) -> String {
        let method = self.names[index % self.names.len()];
        let params = serde_json::value::to_raw_value(params).ok();
        let mut request = Request::owned(method.to_string(), params, Id::Number(1));
        request.extensions.insert(self.caller.clone());
        let row = self.table.row(method);
        let reply = self.runtime.block_on(self.table.answer(row, request));
        reply.json().to_string()
    }
}
