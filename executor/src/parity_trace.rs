//! trace_*: OpenEthereum's (Parity's) trace format as reth writes it, from revm-inspectors'
//! `ParityTraceBuilder`. A stored block's transactions are re-executed by trace.rs's
//! `BlockReplay` (the debug tracers' replay) with each frame recorded: their localized traces
//! and, before the merge, the block's reward traces; or their `trace`, `vmTrace` and
//! `stateDiff`. Calls and signed transactions run on a stored block's state the same way,
//! each call of a sequence on the state the ones before it left.

use crate::{
    call::{BlockOverrides, CallContext, CallDb, CallRequest, call_nonce, tx_env},
    chain_spec::ChainSpec,
    collision::CallCollision,
    trace::{BlockReplay, Guard, ReplayState, TraceError, Tracer, TxTracer, transact_error},
};
use alloy_consensus::{BlockHeader, Header, TxEnvelope, transaction::TransactionInfo};
use alloy_evm::{EthEvmFactory, Evm, EvmEnv, EvmFactory, FromRecoveredTx};
use alloy_primitives::{Address, U256, map::HashSet};
use alloy_rpc_types_trace::parity::{Action, RewardAction, RewardType};
pub use alloy_rpc_types_trace::{
    filter::TraceFilter,
    parity::{
        LocalizedTransactionTrace, TraceResults, TraceResultsWithTransactionHash, TraceType,
        TransactionTrace,
    },
};
use revm::{
    DatabaseCommit,
    context::{BlockEnv, TxEnv, result::ResultAndState},
};
use revm_inspectors::tracing::{TracingInspector, TracingInspectorConfig, TransactionContext};

/// The trace types a trace_replay* or trace_call* request asks for.
pub type TraceTypes = HashSet<TraceType>;

/// Estimated JSON bytes of a frame besides its input and output, of a state diff's account,
/// and of one of its slots (a vmTrace step is counted by the guard as it is recorded).
const FRAME_BYTES: usize = 400;
const ACCOUNT_DIFF_BYTES: usize = 300;
const SLOT_DIFF_BYTES: usize = 250;

/// A tracer recording the frames (and, with vmTrace, the steps) `types` need.
fn parity_tracer(types: &TraceTypes) -> Tracer {
    Tracer::Parity {
        inspector: Box::new(TracingInspector::new(
            TracingInspectorConfig::from_parity_config(types),
        )),
        vm_trace: types.contains(&TraceType::VmTrace),
    }
}

fn take_parity(guard: &mut Guard) -> Result<Box<TracingInspector>, TraceError> {
    match guard.take_tracer()? {
        Some(Tracer::Parity { inspector, .. }) => Ok(inspector),
        _ => Err(TraceError::Execution("no Parity tracer was set".into())),
    }
}

fn frames_bytes<'a>(frames: impl IntoIterator<Item = &'a TransactionTrace>) -> usize {
    frames
        .into_iter()
        .map(|frame| {
            let (input, output) = match (&frame.action, &frame.result) {
                (Action::Call(call), result) => (
                    call.input.len(),
                    result.as_ref().map_or(0, |r| r.output().len()),
                ),
                (Action::Create(create), result) => (
                    create.init.len(),
                    result.as_ref().map_or(0, |r| r.output().len()),
                ),
                _ => (0, 0),
            };
            FRAME_BYTES + 2 * (input + output)
        })
        .sum()
}

fn results_bytes(results: &TraceResults) -> usize {
    let diff: usize = results.state_diff.as_ref().map_or(0, |diff| {
        diff.values()
            .map(|account| ACCOUNT_DIFF_BYTES + account.storage.len() * SLOT_DIFF_BYTES)
            .sum()
    });
    frames_bytes(&results.trace) + diff + 2 * results.output.len()
}

/// trace_transaction's and trace_block's frames, placed in their block.
struct Localized {
    block_number: u64,
    base_fee: Option<u64>,
}

impl TxTracer for Localized {
    type Output = Vec<LocalizedTransactionTrace>;

    fn tracer(&self) -> Result<Tracer, TraceError> {
        Ok(parity_tracer(&[TraceType::Trace].into_iter().collect()))
    }

    fn finish(
        &mut self,
        guard: &mut Guard,
        _result: &ResultAndState,
        _tx_env: &TxEnv,
        _block_env: &BlockEnv,
        _db: &mut ReplayState<'_>,
        context: TransactionContext,
    ) -> Result<Self::Output, TraceError> {
        let inspector = take_parity(guard)?;
        let info = TransactionInfo {
            hash: context.tx_hash,
            index: context.tx_index.map(|index| index as u64),
            block_hash: context.block_hash,
            block_number: Some(self.block_number),
            base_fee: self.base_fee,
            block_timestamp: None,
        };
        let traces = inspector
            .into_parity_builder()
            .into_localized_transaction_traces(info);
        guard.charge(frames_bytes(traces.iter().map(|t| &t.trace)))?;
        Ok(traces)
    }
}

/// trace_replayTransaction's and trace_replayBlockTransactions' results.
struct Replayed<'a> {
    types: &'a TraceTypes,
}

impl TxTracer for Replayed<'_> {
    type Output = TraceResults;

    fn tracer(&self) -> Result<Tracer, TraceError> {
        Ok(parity_tracer(self.types))
    }

    fn finish(
        &mut self,
        guard: &mut Guard,
        result: &ResultAndState,
        _tx_env: &TxEnv,
        _block_env: &BlockEnv,
        db: &mut ReplayState<'_>,
        _context: TransactionContext,
    ) -> Result<Self::Output, TraceError> {
        let inspector = take_parity(guard)?;
        // `db` holds the state before the transaction: the state diff's "from" side.
        let results = inspector
            .into_parity_builder()
            .into_trace_results_with_state(result, self.types, &*db)?;
        guard.charge(results_bytes(&results))?;
        Ok(results)
    }
}

impl BlockReplay<'_> {
    /// The frames of the block's transactions (or of the one at `only`), in order; for a whole
    /// block before the merge, the block's and its ommers' rewards after them, as reth lists
    /// them.
    pub fn localized_traces(&self) -> Result<Vec<LocalizedTransactionTrace>, TraceError> {
        let header = self.block.header;
        let mut tracer = Localized {
            block_number: header.number,
            base_fee: header.base_fee_per_gas,
        };
        let mut traces: Vec<_> = self
            .run(&mut tracer)?
            .into_iter()
            .flat_map(|(_, traces)| traces)
            .collect();
        if self.only.is_none() {
            let parent_td = self
                .tx
                .total_difficulty(header.number.saturating_sub(1))?
                .unwrap_or_default();
            let merged = self.spec.is_merged(parent_td, header.timestamp);
            traces.extend(reward_traces(
                self.spec,
                merged,
                self.block.hash,
                header,
                self.block.ommers,
            ));
        }
        Ok(traces)
    }

    /// Each traced transaction's hash and its `types` of trace.
    pub fn replayed(
        &self,
        types: &TraceTypes,
    ) -> Result<Vec<TraceResultsWithTransactionHash>, TraceError> {
        Ok(self
            .run(&mut Replayed { types })?
            .into_iter()
            .map(
                |(transaction_hash, full_trace)| TraceResultsWithTransactionHash {
                    full_trace,
                    transaction_hash,
                },
            )
            .collect())
    }
}

/// The reward traces reth appends to a pre-merge block's: the block's reward to its
/// beneficiary (with the ommer inclusion bonus), then each ommer's to the ommer's beneficiary.
/// None after the merge.
pub fn reward_traces(
    spec: &ChainSpec,
    merged: bool,
    block_hash: alloy_primitives::B256,
    header: &Header,
    ommers: &[Header],
) -> Vec<LocalizedTransactionTrace> {
    use alloy_evm::block::calc::{base_block_reward, block_reward, ommer_reward};
    let Some(base) = base_block_reward(spec.at_block(merged), header.number) else {
        return Vec::new();
    };
    let reward =
        |author: Address, reward_type: RewardType, value: u128| LocalizedTransactionTrace {
            trace: TransactionTrace {
                action: Action::Reward(RewardAction {
                    author,
                    reward_type,
                    value: U256::from(value),
                }),
                error: None,
                result: None,
                subtraces: 0,
                trace_address: Vec::new(),
            },
            block_hash: Some(block_hash),
            block_number: Some(header.number),
            transaction_hash: None,
            transaction_position: None,
        };
    let mut traces = vec![reward(
        header.beneficiary,
        RewardType::Block,
        block_reward(base, ommers.len()),
    )];
    traces.extend(ommers.iter().map(|ommer| {
        reward(
            ommer.beneficiary(),
            RewardType::Uncle,
            ommer_reward(base, header.number, ommer.number()),
        )
    }));
    traces
}

/// The addresses trace_filter matches in `traces`: a call's sender and recipient, a
/// creation's creator and contract, a self-destruct's contract and beneficiary, a reward's
/// author.
pub fn filter_addresses(traces: &[LocalizedTransactionTrace]) -> Vec<Address> {
    let mut addresses = Vec::new();
    for trace in traces {
        match &trace.trace.action {
            Action::Call(call) => addresses.extend([call.from, call.to]),
            Action::Create(create) => {
                addresses.push(create.from);
                let created = trace
                    .trace
                    .result
                    .as_ref()
                    .and_then(|r| r.created_contract());
                addresses.extend(created);
            }
            Action::Selfdestruct(destruct) => {
                addresses.extend([destruct.address, destruct.refund_address]);
            }
            Action::Reward(reward) => addresses.push(reward.author),
        }
    }
    addresses
}

/// The trace index's entries of stored blocks `from..=to` (`quarry index-traces`, for blocks
/// stored before the index): each block re-executed, its frames' and rewards' addresses.
pub fn index_entries(
    spec: &ChainSpec,
    tx: &quarry_storage::ReadTx,
    from: u64,
    to: u64,
) -> Result<Vec<(u64, Vec<Address>)>, TraceError> {
    let cache = crate::StateCache::default();
    let mut entries = Vec::new();
    for number in from.max(1)..=to {
        let missing = || TraceError::Execution(format!("block {number} is not stored"));
        let hash = tx.canonical_hash(number)?.ok_or_else(missing)?;
        let header = tx.header(number)?.ok_or_else(missing)?;
        let body = tx.body(number)?.ok_or_else(missing)?;
        let senders = tx.senders(number)?.unwrap_or_default();
        let replay = BlockReplay {
            spec,
            tx,
            cache: &cache,
            block: crate::trace::BlockRef {
                hash,
                header: &header,
                transactions: &body.transactions,
                senders: &senders,
                ommers: &body.ommers,
                withdrawals: body.withdrawals.as_ref().map(|w| w.as_slice()),
            },
            parent_is_head: false,
            only: None,
            timeout: std::time::Duration::from_secs(3600),
            deadline: std::time::Instant::now() + std::time::Duration::from_secs(3600),
            max_bytes: usize::MAX,
        };
        entries.push((number, filter_addresses(&replay.localized_traces()?)));
    }
    Ok(entries)
}

/// One call of trace_call or trace_callMany: the call as eth_call takes it, its gas, and the
/// traces it asks for.
#[derive(Debug, Clone)]
pub struct ParityCall {
    pub request: CallRequest,
    pub gas: u64,
    pub types: TraceTypes,
}

impl CallContext<'_> {
    /// trace_call and trace_callMany: each call run as eth_call runs it, in the block's
    /// environment changed by `block`, on the state the calls before it left.
    pub fn trace_calls(
        &self,
        calls: &[ParityCall],
        block: &BlockOverrides,
        max_bytes: usize,
    ) -> Result<Vec<TraceResults>, TraceError> {
        let mut db = Some(self.database()?);
        let mut budget = max_bytes;
        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            let env = self.env_with(&call.request, block)?;
            let caller = call.request.from.unwrap_or_default();
            let state = db
                .take()
                .ok_or_else(|| TraceError::Execution("a call's state was lost".into()))?;
            let nonce = call_nonce(&state, &call.request)?;
            let tx = tx_env(&call.request, caller, nonce, call.gas, env.cfg_env.chain_id);
            let fee_cap = call.request.max_fee_per_gas.or(call.request.gas_price);
            let (result, bytes, state) =
                self.trace_on(state, env, tx, &call.types, budget, (caller, fee_cap))?;
            db = Some(state);
            budget = budget.saturating_sub(bytes);
            results.push(result);
        }
        Ok(results)
    }

    /// trace_rawTransaction: a signed transaction run on the state after the block, with every
    /// check block execution makes (nonce, balance, fees).
    pub fn trace_signed(
        &self,
        transaction: &TxEnvelope,
        sender: Address,
        types: &TraceTypes,
        max_bytes: usize,
    ) -> Result<TraceResults, TraceError> {
        let env = self.block_env()?;
        let db = self.database()?;
        let tx = TxEnv::from_recovered_tx(transaction, sender);
        let fee_cap = Some(tx.gas_price);
        self.trace_on(db, env, tx, types, max_bytes, (sender, fee_cap))
            .map(|(results, ..)| results)
    }

    /// Runs `tx` on `db`, traced, and commits its changes there; the results and their
    /// estimated size.
    fn trace_on<'d>(
        &self,
        db: CallDb<'d>,
        env: EvmEnv,
        tx: TxEnv,
        types: &TraceTypes,
        max_bytes: usize,
        (caller, fee_cap): (Address, Option<u128>),
    ) -> Result<(TraceResults, usize, CallDb<'d>), TraceError> {
        let base_fee = env.block_env.basefee;
        let spec = env.cfg_env.spec;
        let guard = Guard::new(Some(parity_tracer(types)), self.deadline, max_bytes);
        let inspector = (guard, CallCollision::default());
        let mut evm = EthEvmFactory::default().create_evm_with_inspector(db, env, inspector);
        crate::overrides::move_precompiles(evm.components_mut().2, self.overrides, spec)
            .map_err(|e| TraceError::Invalid(e.to_string()))?;
        let result = evm.transact(tx);
        let (db, inspector, _) = evm.components_mut();
        if let Some(e) = inspector.1.error.take() {
            return Err(TraceError::State(e));
        }
        let result = result.map_err(|e| transact_error(e, caller, fee_cap, base_fee))?;
        let tracer = take_parity(&mut inspector.0)?;
        // The database has not taken the call's changes yet: the state diff's "from" side.
        let results = tracer
            .into_parity_builder()
            .into_trace_results_with_state(&result, types, &*db)
            .map_err(|crate::state_db::StateError(e)| TraceError::State(e))?;
        let bytes = results_bytes(&results);
        inspector.0.charge(bytes)?;
        let mut db = evm.into_db();
        db.commit(result.state);
        Ok((results, bytes, db))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::B256;

    #[test]
    fn rewards_are_the_block_and_ommer_rewards_before_the_merge_only() {
        let config = alloy_genesis::ChainConfig {
            byzantium_block: Some(0),
            constantinople_block: Some(10),
            ..Default::default()
        };
        let spec = ChainSpec::from_config(config);
        let header = Header {
            number: 5,
            beneficiary: Address::repeat_byte(1),
            ..Default::default()
        };
        let ommer = Header {
            number: 3,
            beneficiary: Address::repeat_byte(2),
            ..Default::default()
        };
        let eth = |hundred_thousandths: u128| U256::from(hundred_thousandths * 10_000_000_000_000);
        let traces = reward_traces(
            &spec,
            false,
            B256::ZERO,
            &header,
            std::slice::from_ref(&ommer),
        );
        let rewards: Vec<_> = traces
            .iter()
            .map(|trace| match &trace.trace.action {
                Action::Reward(reward) => (reward.author, reward.reward_type, reward.value),
                other => panic!("not a reward: {other:?}"),
            })
            .collect();
        // Byzantium's 3 ETH plus 1/32 of it for the ommer; the ommer, two blocks back, 6/8.
        assert_eq!(
            rewards,
            vec![
                (Address::repeat_byte(1), RewardType::Block, eth(309_375)),
                (Address::repeat_byte(2), RewardType::Uncle, eth(225_000)),
            ]
        );
        assert!(traces.iter().all(|t| t.block_number == Some(5)
            && t.transaction_hash.is_none()
            && t.trace.trace_address.is_empty()));
        let later = Header {
            number: 12,
            ..header.clone()
        };
        let traces = reward_traces(&spec, false, B256::ZERO, &later, &[]);
        assert!(matches!(&traces[0].trace.action,
            Action::Reward(reward) if reward.value == eth(200_000)));
        assert!(reward_traces(&spec, true, B256::ZERO, &header, &[ommer]).is_empty());
    }
}
