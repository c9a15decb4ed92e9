//! eth_simulateV1's parameters as geth reads them, and
//! the state trie the simulated blocks' state roots come from, kept between requests.

use crate::{
    call_params::{BlockOverridesArg, Call, Overrides},
    params::FromArg,
    rpc_error::RpcError,
};
use quarry_executor::simulate::{
    MAX_CALLS, MAX_CALLS_PER_BLOCK, MAX_SIMULATE_BLOCKS, SimBlock, SimCall, SimOptions,
};
use serde::Deserialize;
use serde_json::Value;

/// eth_simulateV1's first parameter.
pub struct SimulateRequest {
    pub blocks: Vec<SimBlock>,
    pub options: SimOptions,
    pub full_transactions: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestObject {
    #[serde(default)]
    block_state_calls: Vec<BlockObject>,
    #[serde(default)]
    trace_transfers: bool,
    #[serde(default)]
    validation: bool,
    #[serde(default)]
    return_full_transactions: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockObject {
    block_overrides: Option<Value>,
    state_overrides: Option<Value>,
    #[serde(default)]
    calls: Vec<Value>,
}

impl FromArg for SimulateRequest {
    fn from_arg(value: &Value) -> Result<Self, String> {
        let object: RequestObject =
            serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
        let mut blocks = Vec::with_capacity(object.block_state_calls.len());
        for (i, block) in object.block_state_calls.into_iter().enumerate() {
            let mut sim = SimBlock::default();
            if let Some(overrides) = block.block_overrides.filter(|v| !v.is_null()) {
                let BlockOverridesArg {
                    overrides,
                    beacon_root,
                    withdrawals,
                    ..
                } = BlockOverridesArg::from_arg(&overrides)
                    .map_err(|e| format!("block {i}: blockOverrides: {e}"))?;
                sim.overrides = overrides;
                sim.beacon_root = beacon_root;
                sim.withdrawals = withdrawals;
            }
            if let Some(overrides) = block.state_overrides.filter(|v| !v.is_null()) {
                sim.state = Overrides::from_arg(&overrides)
                    .map_err(|e| format!("block {i}: stateOverrides: {e}"))?
                    .0;
            }
            for (j, call) in block.calls.iter().enumerate() {
                let Call { request, chain_id } =
                    Call::from_arg(call).map_err(|e| format!("block {i}, call {j}: {e}"))?;
                sim.calls.push(SimCall { request, chain_id });
            }
            blocks.push(sim);
        }
        Ok(Self {
            blocks,
            options: SimOptions {
                validation: object.validation,
                trace_transfers: object.trace_transfers,
            },
            full_transactions: object.return_full_transactions,
        })
    }
}

impl SimulateRequest {
    /// geth's limits on the request: blocks, calls per block, calls in all.
    pub fn check(&self) -> crate::Result<()> {
        if self.blocks.is_empty() {
            return Err(RpcError::InvalidParams("empty input".into()));
        }
        let too_many = |message: String| Err(RpcError::ClientLimitExceeded(message));
        if self.blocks.len() as u64 > MAX_SIMULATE_BLOCKS {
            return too_many("too many blocks".into());
        }
        let mut total = 0;
        for block in &self.blocks {
            if block.calls.len() > MAX_CALLS_PER_BLOCK {
                return too_many(format!(
                    "too many calls in block: {} > {MAX_CALLS_PER_BLOCK}",
                    block.calls.len()
                ));
            }
            total += block.calls.len();
            if total > MAX_CALLS {
                return too_many(format!("too many calls: {total} > {MAX_CALLS}"));
            }
        }
        Ok(())
    }
}
