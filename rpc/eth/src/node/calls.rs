//! eth_call, eth_estimateGas and eth_createAccessList: a call run against the state after a
//! block.

use super::{Node, Snapshot};
use crate::{
    call_params::{Call, revert_reason},
    params::BlockId,
    rpc_error::{Result, RpcError},
};
use alloy_consensus::Header;
use alloy_hardforks::EthereumHardforks;
use alloy_primitives::{Bytes, U64};
use quarry_executor::{
    CallContext, CallOutcome, StateOverrides,
    call::{HaltReason, TX_GAS_LIMIT_CAP, halt_message},
};
use serde::Serialize;

/// eth_call and eth_estimateGas may use at most this many times the block's gas limit.
pub(super) const GAS_CAP_MULTIPLIER: u64 = 10;

impl Node {
    /// Runs `call` against the state after block `at` and returns what it returned.
    pub fn call(
        &self,
        tx: &Snapshot,
        call: &Call,
        at: BlockId,
        overrides: &StateOverrides,
    ) -> Result<Bytes> {
        self.with_call_context(tx, call, at, overrides, |context, header| {
            // The spec's cap: 10x the block's gas limit, the default too; more is lowered to it.
            let cap = header.gas_limit.saturating_mul(GAS_CAP_MULTIPLIER);
            let gas = call.request.gas.map_or(cap, |gas| gas.min(cap));
            match context.run(&call.request, gas)? {
                CallOutcome::Success { output, .. } => Ok(output),
                failed => Err(call_failure(failed, None)),
            }
        })
    }

    /// geth's gas estimate for `call` at block `at`.
    pub fn estimate_gas(
        &self,
        tx: &Snapshot,
        call: &Call,
        at: BlockId,
        overrides: &StateOverrides,
    ) -> Result<U64> {
        self.with_call_context(tx, call, at, overrides, |context, header| {
            let mut cap = header.gas_limit.saturating_mul(GAS_CAP_MULTIPLIER);
            // geth keeps estimates under the EIP-7825 per-transaction cap once Osaka is active.
            if context.spec.is_osaka_active_at_timestamp(header.timestamp) {
                cap = cap.min(TX_GAS_LIMIT_CAP);
            }
            let hi = call.request.gas.unwrap_or(header.gas_limit).min(cap);
            match context.estimate_gas(&call.request, hi)? {
                Ok(gas) => Ok(U64::from(gas)),
                Err(failed) => Err(call_failure(failed, Some(hi))),
            }
        })
    }

    /// eth_createAccessList: geth's access list for `call` at block `at` (with state overrides,
    /// as eth_call takes them), and the gas the call uses with it. A call that reverts or halts
    /// still answers, with geth's `error`.
    pub fn create_access_list(
        &self,
        tx: &Snapshot,
        call: &Call,
        at: BlockId,
        overrides: &StateOverrides,
    ) -> Result<AccessListJson> {
        self.with_call_context(tx, call, at, overrides, |context, header| {
            let cap = header.gas_limit.saturating_mul(GAS_CAP_MULTIPLIER);
            let gas = call.request.gas.map_or(cap, |gas| gas.min(cap));
            let found = context.create_access_list(&call.request, gas)?;
            let (gas_used, error) = match &found.outcome {
                CallOutcome::Success { gas_used, .. } => (*gas_used, None),
                // geth reports the bare error here, without the revert reason.
                CallOutcome::Revert { gas_used, .. } => {
                    (*gas_used, Some("execution reverted".to_string()))
                }
                CallOutcome::Halt { reason, gas_used } => (*gas_used, Some(halt_message(reason))),
            };
            Ok(AccessListJson {
                access_list: found.access_list,
                error,
                gas_used: U64::from(gas_used),
            })
        })
    }

    pub(super) fn with_call_context<T>(
        &self,
        tx: &Snapshot,
        call: &Call,
        at: BlockId,
        overrides: &StateOverrides,
        run: impl FnOnce(&CallContext<'_>, &Header) -> Result<T>,
    ) -> Result<T> {
        let spec = self.spec.as_deref().ok_or(RpcError::NoChain)?;
        if let Some(chain_id) = call.chain_id.filter(|&id| id != spec.chain_id) {
            return Err(RpcError::InvalidParams(format!(
                "invalid argument 0 (transaction): chainId does not match node's (have={chain_id}, want={})",
                spec.chain_id
            )));
        }
        self.with_state_context(tx, at, overrides, run)
    }

    /// Where calls run: the state after block `at`, changed by `overrides`.
    pub(super) fn with_state_context<T>(
        &self,
        tx: &Snapshot,
        at: BlockId,
        overrides: &StateOverrides,
        run: impl FnOnce(&CallContext<'_>, &Header) -> Result<T>,
    ) -> Result<T> {
        let spec = self.spec.as_deref().ok_or(RpcError::NoChain)?;
        let (number, is_head) = self.state_block(tx, at)?;
        let header = tx.header(number)?.ok_or(RpcError::HeaderNotFound)?;
        let context = CallContext {
            spec,
            tx,
            header: &header,
            is_head,
            overrides,
            cache: &tx.state,
            deadline: tx.deadline(self.call_timeout),
            timeout: self.call_timeout,
        };
        run(&context, &header)
    }
}

/// The error for a call that did not succeed: a revert (code 3, with geth's reason) or a halt.
/// An estimate that runs out of gas at its highest bound `estimate_cap` says so as geth does.
fn call_failure(outcome: CallOutcome, estimate_cap: Option<u64>) -> RpcError {
    match outcome {
        CallOutcome::Revert { output, .. } => RpcError::Reverted {
            reason: revert_reason(&output),
            payload: output,
        },
        CallOutcome::Halt { reason, .. } => match (estimate_cap, &reason) {
            (Some(cap), HaltReason::OutOfGas(_)) => {
                RpcError::Execution(format!("gas required exceeds allowance ({cap})"))
            }
            _ => RpcError::Execution(halt_message(&reason)),
        },
        CallOutcome::Success { .. } => {
            RpcError::Internal("a successful call reported as failed".into())
        }
    }
}

/// eth_createAccessList's answer, in geth's field order.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessListJson {
    access_list: alloy_eips::eip2930::AccessList,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    gas_used: U64,
}
