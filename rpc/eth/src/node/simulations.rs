//! eth_simulateV1's answer: the simulated blocks, rendered as geth renders them.

use super::{Node, Snapshot};
use crate::{
    call_params::revert_reason,
    params::BlockId,
    rpc_error::{Result, RpcError},
    simulate_params::SimulateRequest,
    types::{BlockJson, LogJson, TxContext},
};
use alloy_primitives::{Bytes, U64, U256};
use quarry_executor::simulate::{SimBase, SimCallResult, SimulateError, SimulatedBlock, simulate};
use quarry_storage::StoredBody;
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct CallJson {
    return_data: Bytes,
    logs: Vec<LogJson>,
    gas_used: U64,
    max_used_gas: U64,
    status: U64,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<CallErrorJson>,
}

#[derive(Debug, Serialize)]
struct CallErrorJson {
    message: String,
    code: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<Bytes>,
}

impl From<SimulateError> for RpcError {
    fn from(error: SimulateError) -> Self {
        match error {
            SimulateError::Rejected { code, message } => RpcError::Simulate { code, message },
            SimulateError::Timeout(_) => RpcError::Execution(error.to_string()),
            SimulateError::State(e) => RpcError::Storage(e),
        }
    }
}

impl Node {
    /// eth_simulateV1: `request`'s blocks on top of block `at`.
    pub fn simulate(
        &self,
        tx: &Snapshot,
        request: SimulateRequest,
        at: BlockId,
    ) -> Result<Vec<Value>> {
        let spec = self.spec.as_deref().ok_or(RpcError::NoChain)?;
        let (number, is_head) = self.state_block(tx, at)?;
        let header = tx.header(number)?.ok_or(RpcError::HeaderNotFound)?;
        let hash = tx.canonical_hash(number)?.ok_or(RpcError::HeaderNotFound)?;
        let base = SimBase {
            spec,
            tx,
            cache: &tx.state,
            header: &header,
            hash,
            is_head,
            deadline: tx.deadline(self.call_timeout),
        };
        let blocks = simulate(&base, request.blocks, request.options)?;
        blocks
            .iter()
            .map(|block| render(block, request.full_transactions))
            .collect()
    }
}

/// A simulated block as geth's eth_simulateV1 writes it: the block (no total difficulty), the
/// unsigned transactions' zero signatures, and its calls' results.
fn render(block: &SimulatedBlock, full: bool) -> Result<Value> {
    let body = StoredBody {
        transactions: block.transactions.clone(),
        ommers: Vec::new(),
        withdrawals: block
            .withdrawals
            .clone()
            .map(alloy_eips::eip4895::Withdrawals::new),
    };
    let json = BlockJson::block(
        &block.header,
        block.hash,
        block.size as usize,
        U256::ZERO,
        &body,
        &[],
        full.then_some(block.senders.as_slice()),
    );
    let mut value = serde_json::to_value(json)
        .map_err(|e| RpcError::Internal(format!("eth_simulateV1: {e}")))?;
    let Value::Object(fields) = &mut value else {
        return Err(RpcError::Internal(
            "eth_simulateV1: a block is not an object".into(),
        ));
    };
    fields.remove("totalDifficulty");
    if full && let Some(Value::Array(transactions)) = fields.get_mut("transactions") {
        for (json, tx) in transactions.iter_mut().zip(&block.transactions) {
            // An unsigned legacy transaction's V is zero, not an EIP-155 value.
            if tx.is_legacy()
                && let Value::Object(json) = json
            {
                json.insert("v".into(), Value::String("0x0".into()));
                json.remove("chainId");
            }
        }
    }
    let calls: Vec<CallJson> = block
        .calls
        .iter()
        .enumerate()
        .map(|(index, call)| call_json(block, index, call))
        .collect();
    fields.insert(
        "calls".into(),
        serde_json::to_value(calls)
            .map_err(|e| RpcError::Internal(format!("eth_simulateV1: {e}")))?,
    );
    Ok(value)
}

fn call_json(block: &SimulatedBlock, index: usize, call: &SimCallResult) -> CallJson {
    let tx_hash = block
        .transactions
        .get(index)
        .map(|tx| *tx.tx_hash())
        .unwrap_or_default();
    let at = TxContext::new(&block.header, block.hash, index);
    CallJson {
        return_data: call.return_data.clone(),
        logs: call
            .logs
            .iter()
            .map(|(log, log_index)| LogJson::new(log, tx_hash, &at, *log_index as usize))
            .collect(),
        gas_used: U64::from(call.gas_used),
        max_used_gas: U64::from(call.max_used_gas),
        status: U64::from(u8::from(call.success)),
        error: call.error.as_ref().map(|error| CallErrorJson {
            message: match (&error.data, error.code) {
                (Some(data), 3) => match revert_reason(data) {
                    Some(reason) => format!("execution reverted: {reason}"),
                    None => error.message.clone(),
                },
                _ => error.message.clone(),
            },
            code: error.code,
            data: error.data.clone(),
        }),
    }
}
