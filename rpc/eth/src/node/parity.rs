//! The answers of the trace_* methods (OpenEthereum's trace API, in reth's shapes): stored
//! transactions and blocks re-executed by quarry-executor's block replay with the Parity trace
//! builder, calls and signed transactions traced on a stored block's state, and trace_filter
//! over a range of blocks within the eth_getLogs limits.

use super::{BlockAt, Node, Reads, Snapshot, calls::GAS_CAP_MULTIPLIER};
use crate::{
    cache::CachedBlock,
    call_params::Call,
    params::{BlockId, BlockTag},
    rpc_error::{Result, RpcError},
};
use alloy_consensus::{TxEnvelope, transaction::SignerRecoverable};
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::{B256, Bytes};
use quarry_executor::{
    BlockOverrides, StateOverrides,
    parity_trace::{
        LocalizedTransactionTrace, ParityCall, TraceFilter, TraceResults,
        TraceResultsWithTransactionHash, TraceTypes,
    },
    trace::BlockReplay,
};
use std::time::Instant;

impl Node {
    /// A stored block's replay, tracing the transaction at `only` or all of them, within
    /// `deadline`.
    fn replay<'a>(
        &'a self,
        tx: &'a Snapshot,
        block: &'a CachedBlock,
        only: Option<usize>,
        deadline: Instant,
    ) -> Result<BlockReplay<'a>> {
        let spec = self.spec.as_deref().ok_or(RpcError::NoChain)?;
        tx.check_state_kept(block.header.number.saturating_sub(1))?;
        Ok(BlockReplay {
            spec,
            tx,
            cache: &tx.state,
            block: block.as_block_ref(),
            parent_is_head: false,
            only,
            timeout: deadline.saturating_duration_since(Instant::now()),
            deadline,
            max_bytes: self.max_trace_bytes,
        })
    }

    /// trace_transaction: the transaction's frames, or `None` when it is not stored (reth
    /// answers null).
    pub fn parity_transaction(
        &self,
        tx: &Snapshot,
        hash: B256,
    ) -> Result<Option<Vec<LocalizedTransactionTrace>>> {
        let Some((block, index)) = self
            .locate_transaction(&Reads::Snapshot(tx), hash)?
            .flatten()
        else {
            return Ok(None);
        };
        let deadline = tx.deadline(self.call_timeout);
        let replay = self.replay(tx, &block, Some(index), deadline)?;
        Ok(Some(replay.localized_traces()?))
    }

    /// trace_get: the frame at `indices` (reth, as OpenEthereum, takes exactly one index and
    /// answers null otherwise, and for a transaction or frame that does not exist).
    pub fn parity_get(
        &self,
        tx: &Snapshot,
        hash: B256,
        indices: &[u64],
    ) -> Result<Option<LocalizedTransactionTrace>> {
        let [index] = indices else {
            return Ok(None);
        };
        let Some(traces) = self.parity_transaction(tx, hash)? else {
            return Ok(None);
        };
        Ok(usize::try_from(*index)
            .ok()
            .and_then(|index| traces.into_iter().nth(index)))
    }

    fn block_for_trace(
        &self,
        tx: &Snapshot,
        at: BlockAt,
    ) -> Result<Option<std::sync::Arc<CachedBlock>>> {
        Ok(self.find_block(&Reads::Snapshot(tx), at)?.flatten())
    }

    /// trace_block: every transaction's frames, then the block's rewards before the merge;
    /// `None` for a block that is not stored.
    pub fn parity_block(
        &self,
        tx: &Snapshot,
        at: BlockAt,
    ) -> Result<Option<Vec<LocalizedTransactionTrace>>> {
        self.replayed_block(tx, at, |replay| Ok(replay.localized_traces()?))
    }

    /// trace_replayTransaction: the stored transaction's `types` of trace.
    pub fn replay_transaction(
        &self,
        tx: &Snapshot,
        hash: B256,
        types: &TraceTypes,
    ) -> Result<TraceResults> {
        let Some((block, index)) = self
            .locate_transaction(&Reads::Snapshot(tx), hash)?
            .flatten()
        else {
            return Err(RpcError::Execution(format!("transaction {hash} not found")));
        };
        let deadline = tx.deadline(self.call_timeout);
        let replay = self.replay(tx, &block, Some(index), deadline)?;
        replay
            .replayed(types)?
            .into_iter()
            .next()
            .map(|traced| traced.full_trace)
            .ok_or_else(|| RpcError::Internal(format!("transaction {hash} was not traced")))
    }

    /// trace_replayBlockTransactions: each transaction's `types` of trace and hash; `None` for
    /// a block that is not stored.
    pub fn replay_block(
        &self,
        tx: &Snapshot,
        at: BlockAt,
        types: &TraceTypes,
    ) -> Result<Option<Vec<TraceResultsWithTransactionHash>>> {
        self.replayed_block(tx, at, |replay| Ok(replay.replayed(types)?))
    }

    /// What `answer` makes of block `at`'s every transaction replayed: `None` for a block that
    /// is not stored, and nothing (the genesis has no transactions or rewards) for block 0.
    fn replayed_block<R: Default>(
        &self,
        tx: &Snapshot,
        at: BlockAt,
        answer: impl FnOnce(BlockReplay<'_>) -> Result<R>,
    ) -> Result<Option<R>> {
        let Some(block) = self.block_for_trace(tx, at)? else {
            return Ok(None);
        };
        if block.header.number == 0 {
            return Ok(Some(R::default()));
        }
        let deadline = tx.deadline(self.call_timeout);
        answer(self.replay(tx, &block, None, deadline)?).map(Some)
    }

    /// trace_call: `call` as eth_call runs it at block `at`, traced.
    pub fn parity_call(
        &self,
        tx: &Snapshot,
        (call, types): (&Call, TraceTypes),
        at: BlockId,
        overrides: &StateOverrides,
        block: &BlockOverrides,
    ) -> Result<TraceResults> {
        self.parity_call_many(tx, vec![(call, types)], at, overrides, block)?
            .pop()
            .ok_or_else(|| RpcError::Internal("trace_call traced nothing".into()))
    }

    /// trace_callMany: the calls in order at block `at`, each on the state the ones before it
    /// left.
    pub fn parity_call_many(
        &self,
        tx: &Snapshot,
        calls: Vec<(&Call, TraceTypes)>,
        at: BlockId,
        overrides: &StateOverrides,
        block: &BlockOverrides,
    ) -> Result<Vec<TraceResults>> {
        let spec = self.spec.as_deref().ok_or(RpcError::NoChain)?;
        if let Some((i, id)) = calls.iter().enumerate().find_map(|(i, (call, _))| {
            call.chain_id
                .filter(|&id| id != spec.chain_id)
                .map(|id| (i, id))
        }) {
            return Err(RpcError::InvalidParams(format!(
                "call {i}: chainId does not match node's (have={id}, want={})",
                spec.chain_id
            )));
        }
        let at = pending_is_latest(at);
        self.with_state_context(tx, at, overrides, |context, header| {
            let limit = block.gas_limit.unwrap_or(header.gas_limit);
            let cap = limit.saturating_mul(GAS_CAP_MULTIPLIER);
            let calls: Vec<ParityCall> = calls
                .into_iter()
                .map(|(call, types)| ParityCall {
                    request: call.request.clone(),
                    gas: call.request.gas.map_or(cap, |gas| gas.min(cap)),
                    types,
                })
                .collect();
            Ok(context.trace_calls(&calls, block, self.max_trace_bytes)?)
        })
    }

    /// trace_rawTransaction: a signed transaction run on the state after block `at` (the head
    /// unless named), with the checks a block makes.
    pub fn parity_raw_transaction(
        &self,
        tx: &Snapshot,
        raw: &Bytes,
        types: &TraceTypes,
        at: BlockId,
    ) -> Result<TraceResults> {
        let transaction = TxEnvelope::decode_2718(&mut raw.as_ref()).map_err(|e| {
            RpcError::InvalidParams(format!(
                "invalid argument 0: transaction does not decode: {e}"
            ))
        })?;
        let sender = transaction.recover_signer().map_err(|e| {
            RpcError::InvalidParams(format!("invalid argument 0: invalid signature: {e}"))
        })?;
        let spec = self.spec.as_deref().ok_or(RpcError::NoChain)?;
        if let Some(id) = alloy_consensus::Transaction::chain_id(&transaction)
            && id != spec.chain_id
        {
            return Err(RpcError::InvalidParams(format!(
                "invalid argument 0: chainId does not match node's (have={id}, want={})",
                spec.chain_id
            )));
        }
        let none = StateOverrides::default();
        self.with_state_context(tx, pending_is_latest(at), &none, |context, _| {
            Ok(context.trace_signed(&transaction, sender, types, self.max_trace_bytes)?)
        })
    }

    /// trace_filter: the frames (and pre-merge rewards) of the blocks in the range that match
    /// the addresses, as trace_block lists them, after `after` and at most `count` of them.
    /// Stops at the logs' result cap and time limit.
    pub fn parity_filter(
        &self,
        tx: &Snapshot,
        filter: &TraceFilter,
    ) -> Result<Vec<LocalizedTransactionTrace>> {
        let head = Self::head(tx)?;
        let from = filter.from_block.unwrap_or(0);
        let to = filter.to_block.unwrap_or(head);
        if from > to {
            return Err(RpcError::InvalidParams(format!(
                "invalid block range: fromBlock {from} is after toBlock {to}"
            )));
        }
        if to > head {
            return Err(RpcError::InvalidParams(format!(
                "block range extends beyond current head block: requested {to}, head {head}"
            )));
        }
        let cap = self.logs.max_results;
        if let Some(count) = filter.count.filter(|&count| count > cap as u64) {
            return Err(RpcError::InvalidParams(format!(
                "count {count} is over this server's limit of {cap} traces per trace_filter: page with after and count"
            )));
        }
        let after = usize::try_from(filter.after.unwrap_or(0)).unwrap_or(usize::MAX);
        // The traces to gather: those skipped, then the ones answered (one more than the cap
        // when no count is given, to tell an answer over the cap).
        let wanted = after.saturating_add(filter.count.map_or(cap + 1, |count| count as usize));
        let deadline = tx.deadline(self.logs.timeout);
        let matcher = filter.matcher();
        let mut found = Vec::new();
        for number in self.filter_blocks(tx, filter, from, to)? {
            if Instant::now() >= deadline {
                return Err(RpcError::TraceFilterTimeout {
                    from,
                    through: number - 1,
                });
            }
            let Some(block) = self.stored_block(tx, number)? else {
                return Err(RpcError::HeaderNotFound);
            };
            let traces = self.replay(tx, &block, None, deadline)?.localized_traces();
            let traces = match traces {
                Err(quarry_executor::trace::TraceError::Timeout) => {
                    return Err(RpcError::TraceFilterTimeout {
                        from,
                        through: number - 1,
                    });
                }
                other => other?,
            };
            found.extend(traces.into_iter().filter(|t| matcher.matches(&t.trace)));
            if found.len() >= wanted {
                if filter.count.is_none() {
                    return Err(RpcError::TooManyTraces {
                        from,
                        through: (number > from.max(1)).then(|| number - 1),
                        limit: cap,
                    });
                }
                break;
            }
        }
        found.truncate(wanted);
        Ok(found.split_off(after.min(found.len())))
    }
}

impl Node {
    /// The blocks of `from..=to` trace_filter re-executes: those where the trace index has an
    /// entry for one of the filter's addresses, as far as the index reaches, and every block
    /// past it (every block of the range when the filter names no address, or the node scans
    /// without its indexes).
    fn filter_blocks(
        &self,
        tx: &Snapshot,
        filter: &TraceFilter,
        from: u64,
        to: u64,
    ) -> Result<Vec<u64>> {
        let from = from.max(1);
        let mut addresses = filter.from_address.clone();
        addresses.extend(&filter.to_address);
        if addresses.is_empty() || !self.logs.use_index {
            return Ok((from..=to).collect());
        }
        let Some(indexed) = tx.trace_index_head()? else {
            return Ok((from..=to).collect());
        };
        let through = to.min(indexed);
        let mut blocks = match through >= from {
            true => tx
                .trace_candidates(&addresses, from, through)?
                .unwrap_or_else(|| (from..=through).collect()),
            false => Vec::new(),
        };
        blocks.extend(from.max(through.saturating_add(1))..=to);
        Ok(blocks)
    }
}

/// quarry has no pending block: its head stands in, as elsewhere.
fn pending_is_latest(at: BlockId) -> BlockId {
    match at {
        BlockId::Tag(BlockTag::Pending) => BlockId::Tag(BlockTag::Latest),
        other => other,
    }
}
