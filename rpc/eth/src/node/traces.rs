//! The answers of the debug_trace* methods: the block or transaction found as the other
//! methods find it, re-executed by quarry-executor's tracer.

use super::{BlockAt, Node, Reads, Snapshot, calls::GAS_CAP_MULTIPLIER};
use crate::{
    call_params::Call,
    params::{BlockId, BlockTag},
    rpc_error::{Result, RpcError},
    trace_params::TraceOptions,
};
use alloy_consensus::{Block, TxEnvelope, transaction::SignerRecoverable};
use alloy_primitives::{B256, Bytes};
use quarry_executor::{
    BlockOverrides, StateOverrides,
    trace::{BlockRef, TraceJson, TraceRequest, trace_block},
};
use serde::Serialize;

/// One transaction's entry in a block trace, as geth writes it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TxTrace {
    tx_hash: B256,
    result: TraceJson,
}

impl Node {
    fn trace_request<'a>(&self, tx: &Snapshot, options: &'a TraceOptions) -> TraceRequest<'a> {
        TraceRequest {
            options: &options.geth,
            timeout: options.timeout,
            deadline: tx.deadline(self.call_timeout),
            max_bytes: self.max_trace_bytes,
        }
    }

    /// debug_traceTransaction: its block re-executed up to it, and it traced.
    pub fn trace_transaction(
        &self,
        tx: &Snapshot,
        hash: B256,
        options: &TraceOptions,
    ) -> Result<TraceJson> {
        let spec = self.spec.as_deref().ok_or(RpcError::NoChain)?;
        let Some((block, index)) = self
            .locate_transaction(&Reads::Snapshot(tx), hash)?
            .flatten()
        else {
            return Err(RpcError::Execution("transaction not found".into()));
        };
        if block.header.number == 0 {
            return Err(RpcError::Execution("genesis is not traceable".into()));
        }
        tx.check_state_kept(block.header.number - 1)?;
        let block_ref = block.as_block_ref();
        let request = self.trace_request(tx, options);
        let traces = trace_block(spec, tx, &tx.state, block_ref, false, Some(index), &request)?;
        traces
            .into_iter()
            .next()
            .map(|(_, trace)| trace)
            .ok_or_else(|| RpcError::Internal(format!("transaction {hash} was not traced")))
    }

    /// debug_traceBlockByNumber and debug_traceBlockByHash: every transaction of a stored
    /// block.
    pub fn trace_block(
        &self,
        tx: &Snapshot,
        at: BlockAt,
        options: &TraceOptions,
    ) -> Result<Vec<TxTrace>> {
        let not_found = || match at {
            BlockAt::Tag(BlockTag::Number(number)) => format!("block #{number} not found"),
            BlockAt::Tag(_) => "block not found".to_string(),
            BlockAt::Hash(hash) => format!("block {hash} not found"),
        };
        let block = self
            .find_block(&Reads::Snapshot(tx), at)?
            .flatten()
            .ok_or_else(|| RpcError::Execution(not_found()))?;
        let block_ref = block.as_block_ref();
        self.trace_whole_block(tx, block_ref, false, options)
    }

    /// debug_traceBlock: a block given as RLP, whose parent is stored, re-executed on it.
    pub fn trace_raw_block(
        &self,
        tx: &Snapshot,
        rlp: &Bytes,
        options: &TraceOptions,
    ) -> Result<Vec<TxTrace>> {
        let block: Block<TxEnvelope> = alloy_rlp::Decodable::decode(&mut rlp.as_ref())
            .map_err(|e| RpcError::Execution(format!("could not decode block: {e}")))?;
        let header = &block.header;
        if header.number == 0 {
            return Err(RpcError::Execution("genesis is not traceable".into()));
        }
        let parent = header.number - 1;
        if tx.canonical_hash(parent)? != Some(header.parent_hash) {
            return Err(RpcError::Execution(format!(
                "block {} not found",
                header.parent_hash
            )));
        }
        let senders = block
            .body
            .transactions
            .iter()
            .map(|transaction| {
                transaction.recover_signer().map_err(|e| {
                    RpcError::Execution(format!(
                        "invalid transaction {}: {e}",
                        transaction.tx_hash()
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let block_ref = BlockRef {
            hash: header.hash_slow(),
            header,
            transactions: &block.body.transactions,
            senders: &senders,
            ommers: &block.body.ommers,
            withdrawals: block.body.withdrawals.as_ref().map(|w| w.as_slice()),
        };
        let parent_is_head = Self::head(tx)? == parent;
        self.trace_whole_block(tx, block_ref, parent_is_head, options)
    }

    fn trace_whole_block(
        &self,
        tx: &Snapshot,
        block: BlockRef<'_>,
        parent_is_head: bool,
        options: &TraceOptions,
    ) -> Result<Vec<TxTrace>> {
        let spec = self.spec.as_deref().ok_or(RpcError::NoChain)?;
        if block.header.number == 0 {
            return Err(RpcError::Execution("genesis is not traceable".into()));
        }
        tx.check_state_kept(block.header.number - 1)?;
        let request = self.trace_request(tx, options);
        let traces = trace_block(spec, tx, &tx.state, block, parent_is_head, None, &request)?;
        Ok(traces
            .into_iter()
            .map(|(tx_hash, result)| TxTrace { tx_hash, result })
            .collect())
    }

    /// debug_traceCall: `call` as eth_call runs it at block `at`, traced.
    #[allow(clippy::too_many_arguments)]
    pub fn trace_call(
        &self,
        tx: &Snapshot,
        call: &Call,
        at: BlockId,
        overrides: &StateOverrides,
        block: &BlockOverrides,
        options: &TraceOptions,
    ) -> Result<TraceJson> {
        if at == BlockId::Tag(BlockTag::Pending) {
            return Err(RpcError::Execution(
                "tracing on top of pending is not supported".into(),
            ));
        }
        let request = self.trace_request(tx, options);
        self.with_call_context(tx, call, at, overrides, |context, header| {
            let limit = block.gas_limit.unwrap_or(header.gas_limit);
            let cap = limit.saturating_mul(GAS_CAP_MULTIPLIER);
            let gas = call.request.gas.map_or(cap, |gas| gas.min(cap));
            Ok(context.trace(&call.request, gas, block, &request)?)
        })
    }
}
