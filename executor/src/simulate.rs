//! eth_simulateV1 with geth's semantics: blocks of calls built on top of a stored block, each
//! with its block and state overrides (precompiles moved or replaced included), executed with
//! the system calls, withdrawals and requests of its fork, and assembled into a block with
//! geth's header rules, so that hashes, roots and sizes are the ones geth computes (the state
//! root from the stored state trie). Later blocks read the generated hashes with
//! BLOCKHASH.

use crate::{
    block::{apply_bundle, requests_hash},
    call::{BlockOverrides, CallRequest, invalid_message},
    chain_spec::ChainSpec,
    collision::StorageCollision,
    overrides::{StateOverrides, move_precompiles},
    state_db::{StateAt, StateCache, StateError, StateSnapshot},
    state_root::StateTrie,
};
use alloy_consensus::{
    EMPTY_OMMER_ROOT_HASH, Header, ReceiptEnvelope, Signed, TxEip1559, TxEip4844, TxEip7702,
    TxEnvelope, TxLegacy, TxReceipt,
    proofs::{calculate_receipt_root, calculate_withdrawals_root},
};
use alloy_eips::eip4895::Withdrawal;
use alloy_evm::{
    EthEvmFactory, Evm, EvmEnv, EvmFactory, FromRecoveredTx,
    block::BlockExecutor,
    eth::{
        EthBlockExecutionCtx, EthBlockExecutor, EthTxResult, receipt_builder::AlloyReceiptBuilder,
    },
};
use alloy_hardforks::EthereumHardforks;
use alloy_primitives::{Address, B256, Bloom, Bytes, Log, Signature, TxKind, U256, keccak256};
use alloy_rlp::Encodable;
use quarry_storage::ReadTx;
use revm::{
    Database as _, DatabaseCommit as _, Inspector,
    bytecode::Bytecode,
    context::{
        ContextTr, JournalTr, TxEnv,
        result::{EVMError, ExecutionResult, InvalidTransaction},
    },
    database::{State, states::bundle_state::BundleRetention},
    interpreter::{
        CallInputs, CallOutcome, CallScheme, CreateInputs, CreateOutcome, InstructionResult,
        Interpreter, interpreter::EthInterpreter,
    },
    primitives::KECCAK_EMPTY,
    state::{Account, EvmState, EvmStorageSlot, TransactionId},
};
use std::{borrow::Cow, time::Instant};

/// geth's default RPC gas cap: the gas all of a request's calls may use together.
pub const SIMULATE_GAS_CAP: u64 = 50_000_000;
/// geth's limits on one request.
pub const MAX_SIMULATE_BLOCKS: u64 = 256;
pub const MAX_CALLS_PER_BLOCK: usize = 5000;
pub const MAX_CALLS: usize = 10_000;
/// The seconds geth adds to a block's timestamp when the request names none.
const TIMESTAMP_INCREMENT: u64 = 12;

/// geth's error codes for eth_simulateV1.
pub mod codes {
    pub const NONCE_TOO_LOW: i32 = -38010;
    pub const NONCE_TOO_HIGH: i32 = -38011;
    pub const BASE_FEE_TOO_LOW: i32 = -38012;
    pub const INTRINSIC_GAS: i32 = -38013;
    pub const INSUFFICIENT_FUNDS: i32 = -38014;
    pub const BLOCK_GAS_LIMIT_REACHED: i32 = -38015;
    pub const BLOCK_NUMBER_INVALID: i32 = -38020;
    pub const BLOCK_TIMESTAMP_INVALID: i32 = -38021;
    pub const SENDER_NOT_EOA: i32 = -38024;
    pub const MAX_INIT_CODE_SIZE: i32 = -38025;
    pub const CLIENT_LIMIT_EXCEEDED: i32 = -38026;
    pub const INVALID_PARAMS: i32 = -32602;
    pub const INTERNAL: i32 = -32603;
    pub const SERVER: i32 = -32000;
    /// A call that failed in the EVM (other than by REVERT).
    pub const VM_ERROR: i32 = -32015;
    /// A call that reverted.
    pub const REVERTED: i32 = 3;
}

/// One block of calls as the request describes it.
#[derive(Debug, Clone, Default)]
pub struct SimBlock {
    pub overrides: BlockOverrides,
    pub beacon_root: Option<B256>,
    pub withdrawals: Option<Vec<Withdrawal>>,
    pub state: StateOverrides,
    pub calls: Vec<SimCall>,
}

/// A call and the chain id it named, if any.
#[derive(Debug, Clone, Default)]
pub struct SimCall {
    pub request: CallRequest,
    pub chain_id: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct SimOptions {
    pub validation: bool,
    pub trace_transfers: bool,
}

/// The stored block the simulation starts from.
pub struct SimBase<'a> {
    pub spec: &'a ChainSpec,
    pub tx: &'a ReadTx,
    pub cache: &'a StateCache,
    pub header: &'a Header,
    pub hash: B256,
    /// Whether it is the head (its state is then the latest).
    pub is_head: bool,
    pub deadline: Instant,
}

/// Why a simulation gave no blocks: geth's code and message.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    #[error("{message}")]
    Rejected { code: i32, message: String },
    #[error("execution aborted (timeout = {0:?})")]
    Timeout(std::time::Duration),
    #[error(transparent)]
    State(#[from] quarry_storage::Error),
}

fn rejected(code: i32, message: impl Into<String>) -> SimulateError {
    SimulateError::Rejected {
        code,
        message: message.into(),
    }
}

impl From<StateError> for SimulateError {
    fn from(StateError(e): StateError) -> Self {
        Self::State(e)
    }
}

impl From<revm::database_interface::bal::EvmDatabaseError<StateError>> for SimulateError {
    fn from(error: revm::database_interface::bal::EvmDatabaseError<StateError>) -> Self {
        match error {
            revm::database_interface::bal::EvmDatabaseError::Database(StateError(e)) => {
                Self::State(e)
            }
            other => rejected(codes::INTERNAL, other.to_string()),
        }
    }
}

/// A simulated block, assembled.
#[derive(Debug, Clone)]
pub struct SimulatedBlock {
    pub header: Header,
    pub hash: B256,
    pub size: u64,
    pub transactions: Vec<TxEnvelope>,
    pub senders: Vec<Address>,
    pub withdrawals: Option<Vec<Withdrawal>>,
    pub calls: Vec<SimCallResult>,
}

/// One call's outcome, as geth reports it.
#[derive(Debug, Clone)]
pub struct SimCallResult {
    pub return_data: Bytes,
    /// The logs (and, with traceTransfers, the ETH transfers as ERC-20 Transfer logs), each
    /// with its index in the block.
    pub logs: Vec<(Log, u64)>,
    pub gas_used: u64,
    pub max_used_gas: u64,
    pub success: bool,
    pub error: Option<SimCallError>,
}

#[derive(Debug, Clone)]
pub struct SimCallError {
    pub message: String,
    pub code: i32,
    pub data: Option<Bytes>,
}

/// The header fields a block's overrides and defaults settle before it runs.
#[derive(Debug, Clone)]
struct Planned {
    number: u64,
    time: u64,
    overrides: BlockOverrides,
    beacon_root: Option<B256>,
    withdrawals: Vec<Withdrawal>,
    state: StateOverrides,
    calls: Vec<SimCall>,
}

/// geth's `sanitizeChain`: numbers and timestamps default to the previous block's plus one and
/// plus 12 s and must increase; a gap in numbers is filled with empty blocks.
fn plan(base: &Header, blocks: Vec<SimBlock>) -> Result<Vec<Planned>, SimulateError> {
    let mut planned = Vec::with_capacity(blocks.len());
    let (mut number, mut time) = (base.number, base.timestamp);
    for block in blocks {
        let target = block.overrides.number.unwrap_or(number + 1);
        if target <= number {
            return Err(rejected(
                codes::BLOCK_NUMBER_INVALID,
                format!("block numbers must be in order: {target} <= {number}"),
            ));
        }
        if target - base.number > MAX_SIMULATE_BLOCKS {
            return Err(rejected(codes::CLIENT_LIMIT_EXCEEDED, "too many blocks"));
        }
        for gap in number + 1..target {
            time += TIMESTAMP_INCREMENT;
            planned.push(Planned {
                number: gap,
                time,
                overrides: BlockOverrides::default(),
                beacon_root: None,
                withdrawals: Vec::new(),
                state: StateOverrides::default(),
                calls: Vec::new(),
            });
        }
        number = target;
        let block_time = match block.overrides.time {
            None => time + TIMESTAMP_INCREMENT,
            Some(t) if t <= time => {
                return Err(rejected(
                    codes::BLOCK_TIMESTAMP_INVALID,
                    format!("block timestamps must be in order: {t} <= {time}"),
                ));
            }
            Some(t) => t,
        };
        time = block_time;
        planned.push(Planned {
            number,
            time,
            overrides: block.overrides,
            beacon_root: block.beacon_root,
            withdrawals: block.withdrawals.unwrap_or_default(),
            state: block.state,
            calls: block.calls,
        });
    }
    Ok(planned)
}

/// geth's `IsPostMerge`.
fn post_merge(spec: &ChainSpec, base_td: U256, number: u64, time: u64) -> bool {
    let config = &spec.config;
    config
        .terminal_total_difficulty
        .is_some_and(|ttd| ttd.is_zero() || base_td >= ttd)
        || config
            .merge_netsplit_block
            .is_some_and(|block| number >= block)
        || config.shanghai_time.is_some_and(|t| time >= t)
}

/// Runs `blocks` on top of `base`. Their state roots come from the stored state trie, with the
/// changes since `base` (for an older block) and the simulated blocks' own over it in memory.
pub fn simulate(
    base: &SimBase<'_>,
    blocks: Vec<SimBlock>,
    options: SimOptions,
) -> Result<Vec<SimulatedBlock>, SimulateError> {
    let spec = base.spec;
    let planned = plan(base.header, blocks)?;
    let at = if base.is_head {
        StateAt::Latest
    } else {
        StateAt::Block(base.header.number)
    };
    let mut state = State::builder()
        .with_database_ref(StateSnapshot::cached(
            base.tx,
            at,
            base.header.number,
            base.cache,
        ))
        .with_bundle_update()
        .build();
    let base_td = base
        .tx
        .total_difficulty(base.header.number)?
        .unwrap_or_default();
    let mut trie = StateTrie::new();
    if !base.is_head {
        trie.restore(&base.tx.reverts_to(base.header.number)?);
    }
    let mut budget = SIMULATE_GAS_CAP;
    // The header makeHeaders carries forward (coinbase, difficulty, gas limit) and the last
    // finished block (the parent).
    let mut carried = base.header.clone();
    let mut parent = base.header.clone();
    let mut parent_hash = base.hash;
    let mut results = Vec::with_capacity(planned.len());
    for block in planned {
        let merged = post_merge(spec, base_td, block.number, block.time);
        let shanghai = spec.is_shanghai_active_at_timestamp(block.time);
        let cancun = spec.is_cancun_active_at_timestamp(block.time);
        let prague = spec.is_prague_active_at_timestamp(block.time);
        let london = spec.is_london_active_at_block(block.number);
        let overrides = &block.overrides;
        let mut header = Header {
            parent_hash,
            ommers_hash: EMPTY_OMMER_ROOT_HASH,
            beneficiary: overrides.fee_recipient.unwrap_or(carried.beneficiary),
            difficulty: overrides.difficulty.unwrap_or(if merged {
                U256::ZERO
            } else {
                carried.difficulty
            }),
            number: block.number,
            gas_limit: overrides.gas_limit.unwrap_or(carried.gas_limit),
            timestamp: block.time,
            mix_hash: overrides.prev_randao.unwrap_or_default(),
            parent_beacon_block_root: cancun.then(|| block.beacon_root.unwrap_or_default()),
            ..Default::default()
        };
        carried = header.clone();
        header.base_fee_per_gas = match overrides.base_fee {
            Some(fee) => Some(fee),
            None if london && options.validation => {
                crate::verify::expected_base_fee(spec, &parent).or(Some(0))
            }
            None if london => Some(0),
            None => None,
        };
        if cancun {
            header.excess_blob_gas =
                crate::verify::expected_excess_blob_gas(spec, block.time, &parent).or(Some(0));
        }
        let simulated = run_block(
            base,
            &mut state,
            &mut header,
            &block,
            merged,
            options,
            &mut budget,
        )?;
        let (transactions, senders, calls, receipts, requests_hash) = simulated;
        // The state after the block: its changes reach the trie.
        state.merge_transitions(BundleRetention::PlainState);
        let bundle = state.take_bundle();
        apply_bundle(&mut trie, &bundle, None);
        header.state_root = trie.root(base.tx)?;
        let encodings: Vec<Vec<u8>> = transactions.iter().map(consensus_encoding).collect();
        header.transactions_root =
            alloy_trie::root::ordered_trie_root_with_encoder(&encodings, |encoding, out| {
                out.extend_from_slice(encoding)
            });
        header.receipts_root = calculate_receipt_root(&receipts);
        header.logs_bloom = receipts.iter().fold(Bloom::ZERO, |acc, r| acc | r.bloom());
        let withdrawals = shanghai.then_some(block.withdrawals);
        header.withdrawals_root = withdrawals.as_deref().map(calculate_withdrawals_root);
        if prague {
            header.requests_hash = Some(requests_hash);
        }
        let hash = header.hash_slow();
        let size = block_size(&header, &encodings, withdrawals.as_deref());
        // Later blocks read this one's hash with BLOCKHASH.
        state.block_hashes.insert(header.number, hash);
        parent_hash = hash;
        parent = header.clone();
        results.push(SimulatedBlock {
            header,
            hash,
            size,
            transactions,
            senders,
            withdrawals,
            calls,
        });
    }
    Ok(results)
}

type BlockOutput = (
    Vec<TxEnvelope>,
    Vec<Address>,
    Vec<SimCallResult>,
    Vec<ReceiptEnvelope>,
    B256,
);

/// The simulation's state: the base block's, with every simulated block's changes on top.
type SimState<'t> =
    State<revm::database::WrapDatabaseRef<StateSnapshot<'t, quarry_storage::ReadOnly>>>;

/// Executes one simulated block's calls (after its state overrides and system calls) and
/// finishes it (withdrawals, requests, the reward before the merge); fills in the header's gas
/// and blob gas used.
#[allow(clippy::too_many_arguments)]
fn run_block(
    base: &SimBase<'_>,
    state: &mut SimState<'_>,
    header: &mut Header,
    block: &Planned,
    merged: bool,
    options: SimOptions,
    budget: &mut u64,
) -> Result<BlockOutput, SimulateError> {
    let spec = base.spec;
    let rules = spec.at_block(merged);
    let env = sim_env(spec, header, block, merged, options);
    apply_state_overrides(state, &block.state)?;
    let spec_id = env.cfg_env.spec;
    let tracer = SimTracer {
        trace_transfers: options.trace_transfers,
        deadline: Some(base.deadline),
        ..Default::default()
    };
    let evm = EthEvmFactory::default().create_evm_with_inspector(
        &mut *state,
        env,
        (tracer, StorageCollision::default()),
    );
    let ctx = EthBlockExecutionCtx {
        parent_hash: header.parent_hash,
        parent_beacon_block_root: header.parent_beacon_block_root,
        ommers: &[],
        withdrawals: spec
            .is_shanghai_active_at_timestamp(header.timestamp)
            .then_some(Cow::Borrowed(block.withdrawals.as_slice())),
        extra_data: Bytes::new(),
        tx_count_hint: Some(block.calls.len()),
        slot_number: None,
    };
    let mut executor = EthBlockExecutor::new(evm, ctx, rules, AlloyReceiptBuilder::default());
    let replaced = move_precompiles(executor.evm_mut().components_mut().2, &block.state, spec_id)
        .map_err(|e| rejected(codes::SERVER, e.0))?;
    // geth warms the fork's precompile addresses whatever the overrides made of them.
    executor.evm_mut().inspector_mut().0.warm = replaced;
    executor
        .apply_pre_execution_changes()
        .map_err(|e| rejected(codes::INTERNAL, e.to_string()))?;
    let mut transactions = Vec::with_capacity(block.calls.len());
    let mut senders = Vec::with_capacity(block.calls.len());
    let mut results = Vec::with_capacity(block.calls.len());
    let mut gas_used = 0u64;
    for (index, call) in block.calls.iter().enumerate() {
        let from = call.request.from.unwrap_or_default();
        let (db, inspector, _) = executor.evm_mut().components_mut();
        let state_nonce = db.basic(from)?.map_or(0, |info| info.nonce);
        let remaining = header.gas_limit.saturating_sub(gas_used);
        let (nonce, gas, capped) = call_nonce_and_gas(
            call,
            spec.chain_id,
            remaining,
            *budget,
            state_nonce,
            options,
        )?;
        let transaction = unsigned_transaction(&call.request, nonce, gas, spec.chain_id)?;
        let hash = *transaction.tx_hash();
        inspector.0.begin(hash, index as u64);
        let (tx_env, wraps) = call_tx_env(call, &transaction, from, spec.chain_id, options);
        let outcome = executor.evm_mut().transact(tx_env);
        let (_, inspector, _) = executor.evm_mut().components_mut();
        if inspector.0.expired {
            return Err(SimulateError::Timeout(
                base.deadline.saturating_duration_since(Instant::now()),
            ));
        }
        if let Some(e) = inspector.1.error.take() {
            return Err(SimulateError::State(e));
        }
        let result = outcome.map_err(|e| match e {
            EVMError::Database(e) => SimulateError::from(e),
            EVMError::Transaction(invalid) => {
                let (code, message) = validation_error(&invalid, from, &call.request, header);
                rejected(code, format!("err: {message} (supplied gas {gas})"))
            }
            other => rejected(codes::INTERNAL, other.to_string()),
        })?;
        let mut result = result;
        if wraps
            && let Some(account) = result.state.get_mut(&from)
            && account.info.nonce == u64::MAX
        {
            account.info.nonce = 0;
        }
        let logs = inspector.0.take_logs();
        let execution = &result.result;
        let used = execution.gas().tx_gas_used();
        if used > *budget {
            return Err(rejected(
                codes::SERVER,
                format!("RPC gas cap exhausted: need {used}, remaining {budget}"),
            ));
        }
        *budget -= used;
        gas_used += used;
        let max_used_gas = execution
            .gas()
            .total_gas_spent()
            .max(execution.gas().floor_gas());
        results.push(call_result(execution, logs, used, max_used_gas, capped));
        let blob_gas_used =
            alloy_consensus::Transaction::blob_gas_used(&transaction).unwrap_or_default();
        executor.commit_transaction(EthTxResult {
            result,
            blob_gas_used,
            tx_type: transaction.tx_type(),
        });
        transactions.push(transaction);
        senders.push(from);
    }
    let (_, outcome) = executor
        .finish()
        .map_err(|e| rejected(codes::INTERNAL, e.to_string()))?;
    header.gas_used = outcome.gas_used;
    if spec.is_cancun_active_at_timestamp(header.timestamp) {
        header.blob_gas_used = Some(outcome.blob_gas_used);
    }
    Ok((
        transactions,
        senders,
        results,
        outcome.receipts,
        requests_hash(&outcome.requests),
    ))
}

/// The EVM environment of a simulated block, with geth's call rules: no EIP-3607 and no EIP-7825
/// gas cap, no nonce or base-fee checks without validation, and the block's blob base fee
/// override.
fn sim_env(
    spec: &ChainSpec,
    header: &Header,
    block: &Planned,
    merged: bool,
    options: SimOptions,
) -> EvmEnv {
    let mut env = EvmEnv::for_eth_block(
        header,
        spec.at_block(merged),
        spec.chain_id,
        spec.blob_params_at(header.timestamp),
    );
    let cfg = &mut env.cfg_env;
    cfg.disable_eip3607 = true;
    cfg.tx_gas_limit_cap = Some(u64::MAX);
    if !options.validation {
        cfg.disable_nonce_check = true;
        cfg.disable_base_fee = true;
    }
    if let Some(price) = block.overrides.blob_base_fee
        && let Some(blob) = env.block_env.blob_excess_gas_and_price.as_mut()
    {
        blob.blob_gasprice = price;
    }
    env
}

/// A call's nonce (its own, or its sender's `state_nonce`), its gas and whether the request's
/// gas cap cut it, with geth's refusals before it runs: more gas than the block has left
/// (`remaining`), another chain's id, and with validation a nonce that is wrong or cannot grow
/// (geth checks it before the fees, revm after).
fn call_nonce_and_gas(
    call: &SimCall,
    chain_id: u64,
    remaining: u64,
    budget: u64,
    state_nonce: u64,
    options: SimOptions,
) -> Result<(u64, u64, bool), SimulateError> {
    let from = call.request.from.unwrap_or_default();
    let nonce = call.request.nonce.unwrap_or(state_nonce);
    let wanted = call.request.gas.unwrap_or(remaining);
    if remaining < wanted {
        return Err(rejected(
            codes::BLOCK_GAS_LIMIT_REACHED,
            format!("block gas limit reached: remaining: {remaining}, required: {wanted}"),
        ));
    }
    let gas = wanted.min(budget);
    if let Some(other) = call.chain_id.filter(|&id| id != chain_id) {
        return Err(rejected(
            codes::SERVER,
            format!("chainId does not match node's (have={other}, want={chain_id})"),
        ));
    }
    if options.validation
        && let Some((code, message)) = nonce_error(from, nonce, state_nonce)
    {
        return Err(rejected(
            code,
            format!("err: {message} (supplied gas {gas})"),
        ));
    }
    Ok((nonce, gas, gas < wanted))
}

/// The transaction environment a call runs with, and whether its nonce wraps: geth's message
/// keeps the access list even when a gas price makes the transaction legacy (which has none),
/// and without nonce checks lets a nonce of 2^64-1 wrap to zero, which revm refuses.
fn call_tx_env(
    call: &SimCall,
    transaction: &TxEnvelope,
    from: Address,
    chain_id: u64,
    options: SimOptions,
) -> (TxEnv, bool) {
    let mut tx_env = TxEnv::from_recovered_tx(transaction, from);
    if let Some(list) = &call.request.access_list
        && transaction.is_legacy()
    {
        // revm reads access lists from typed transactions only: this one runs as EIP-2930.
        tx_env.tx_type = 1;
        tx_env.chain_id = Some(chain_id);
        tx_env.access_list = list.clone();
    }
    let wraps = !options.validation
        && tx_env.nonce == u64::MAX
        && alloy_consensus::Transaction::kind(transaction).is_call();
    if wraps {
        tx_env.nonce = 0;
    }
    (tx_env, wraps)
}

/// geth's result of one call: a revert carries code 3, the reason and the payload; another
/// failure -32015 and geth's words.
fn call_result(
    execution: &ExecutionResult,
    logs: Vec<(Log, u64)>,
    gas_used: u64,
    max_used_gas: u64,
    capped: bool,
) -> SimCallResult {
    let (return_data, error) = match execution {
        ExecutionResult::Success { output, .. } => (output.data().clone(), None),
        // The RPC layer adds the decoded reason to the message, as for eth_call.
        ExecutionResult::Revert { output, .. } => (
            output.clone(),
            Some(SimCallError {
                message: "execution reverted".to_string(),
                code: codes::REVERTED,
                data: Some(output.clone()),
            }),
        ),
        ExecutionResult::Halt { reason, .. } => {
            let mut message = crate::call::halt_message(reason);
            if capped {
                message.push_str(" (gas limit was capped by the RPC server's global gas cap)");
            }
            (
                Bytes::new(),
                Some(SimCallError {
                    message,
                    code: codes::VM_ERROR,
                    data: None,
                }),
            )
        }
    };
    let success = error.is_none();
    SimCallResult {
        // geth reports a failed call's output in its error only.
        return_data: if success { return_data } else { Bytes::new() },
        // A failed call's logs were reverted with it.
        logs: if success { logs } else { Vec::new() },
        gas_used,
        max_used_gas,
        success,
        error,
    }
}

/// geth's nonce checks of a message (`preCheck`), in its order: too high, too low, or the
/// sender's nonce at its maximum (no code of its own in geth's mapping: internal error).
fn nonce_error(from: Address, nonce: u64, state: u64) -> Option<(i32, String)> {
    if nonce > state {
        Some((
            codes::NONCE_TOO_HIGH,
            format!("nonce too high: address {from}, tx: {nonce} state: {state}"),
        ))
    } else if nonce < state {
        Some((
            codes::NONCE_TOO_LOW,
            format!("nonce too low: address {from}, tx: {nonce} state: {state}"),
        ))
    } else if state == u64::MAX {
        Some((
            codes::INTERNAL,
            format!("nonce has max value: address {from}, nonce: {state}"),
        ))
    } else {
        None
    }
}

/// geth's `txValidationError`: the code of a call that cannot run.
fn validation_error(
    invalid: &InvalidTransaction,
    from: Address,
    request: &CallRequest,
    header: &Header,
) -> (i32, String) {
    let code = match invalid {
        InvalidTransaction::NonceTooHigh { .. } => codes::NONCE_TOO_HIGH,
        InvalidTransaction::NonceTooLow { .. } => codes::NONCE_TOO_LOW,
        InvalidTransaction::RejectCallerWithCode => codes::SENDER_NOT_EOA,
        InvalidTransaction::PriorityFeeGreaterThanMaxFee => codes::INVALID_PARAMS,
        InvalidTransaction::GasPriceLessThanBasefee => codes::BASE_FEE_TOO_LOW,
        InvalidTransaction::LackOfFundForMaxFee { .. } => codes::INSUFFICIENT_FUNDS,
        InvalidTransaction::CallGasCostMoreThanGasLimit { .. }
        | InvalidTransaction::GasFloorMoreThanGasLimit { .. } => codes::INTRINSIC_GAS,
        InvalidTransaction::CreateInitCodeSizeLimit => codes::MAX_INIT_CODE_SIZE,
        _ => codes::INTERNAL,
    };
    let message = match invalid {
        InvalidTransaction::GasPriceLessThanBasefee => format!(
            "max fee per gas less than block base fee: address {from}, maxFeePerGas: {}, baseFee: {}",
            request
                .max_fee_per_gas
                .or(request.gas_price)
                .unwrap_or_default(),
            header.base_fee_per_gas.unwrap_or_default()
        ),
        InvalidTransaction::NonceTooHigh { tx, state }
        | InvalidTransaction::NonceTooLow { tx, state } => nonce_error(from, *tx, *state)
            .map(|(_, message)| message)
            .unwrap_or_default(),
        other => invalid_message(other, from),
    };
    (code, message)
}

/// geth's `ToTransaction(DynamicFeeTxType)` with `CallDefaults`: the unsigned transaction a
/// call becomes (zero signature), whose hash is the one geth reports.
fn unsigned_transaction(
    request: &CallRequest,
    nonce: u64,
    gas: u64,
    chain_id: u64,
) -> Result<TxEnvelope, SimulateError> {
    let signature = Signature::new(U256::ZERO, U256::ZERO, false);
    let value = request.value.unwrap_or_default();
    let input = request.input.clone();
    let access_list = request.access_list.clone().unwrap_or_default();
    // geth: with a base fee, absent 1559 fees are zero; without one, an absent gas price is.
    let max_fee = request.max_fee_per_gas.unwrap_or(0);
    let tip = request.max_priority_fee_per_gas.unwrap_or(0);
    if let Some(price) = request.gas_price {
        let tx = TxLegacy {
            chain_id: None,
            nonce,
            gas_price: price,
            gas_limit: gas,
            to: request.to.map_or(TxKind::Create, TxKind::Call),
            value,
            input,
        };
        let hash = keccak256(legacy_unsigned(&tx));
        return Ok(TxEnvelope::Legacy(Signed::new_unchecked(
            tx, signature, hash,
        )));
    }
    let need_to = |what: &str| {
        request.to.ok_or_else(|| {
            rejected(
                codes::INVALID_PARAMS,
                format!("{what} transactions need a recipient (to)"),
            )
        })
    };
    if let Some(authorizations) = &request.authorization_list {
        let tx = TxEip7702 {
            chain_id,
            nonce,
            gas_limit: gas,
            max_fee_per_gas: max_fee,
            max_priority_fee_per_gas: tip,
            to: need_to("EIP-7702")?,
            value,
            access_list,
            authorization_list: authorizations.clone(),
            input,
        };
        return Ok(TxEnvelope::Eip7702(
            alloy_consensus::SignableTransaction::into_signed(tx, signature),
        ));
    }
    if let Some(hashes) = &request.blob_versioned_hashes {
        let tx = TxEip4844 {
            chain_id,
            nonce,
            gas_limit: gas,
            max_fee_per_gas: max_fee,
            max_priority_fee_per_gas: tip,
            to: need_to("blob")?,
            value,
            access_list,
            blob_versioned_hashes: hashes.clone(),
            max_fee_per_blob_gas: request.max_fee_per_blob_gas.unwrap_or(0),
            input,
        };
        return Ok(TxEnvelope::Eip4844(
            alloy_consensus::SignableTransaction::into_signed(
                alloy_consensus::TxEip4844Variant::TxEip4844(tx),
                signature,
            ),
        ));
    }
    let tx = TxEip1559 {
        chain_id,
        nonce,
        gas_limit: gas,
        max_fee_per_gas: max_fee,
        max_priority_fee_per_gas: tip,
        to: request.to.map_or(TxKind::Create, TxKind::Call),
        value,
        access_list,
        input,
    };
    Ok(TxEnvelope::Eip1559(
        alloy_consensus::SignableTransaction::into_signed(tx, signature),
    ))
}

/// geth's RLP of an unsigned legacy transaction: its fields, then V, R and S all zero (alloy
/// would write an EIP-155 V).
fn legacy_unsigned(tx: &TxLegacy) -> Vec<u8> {
    let payload = tx.nonce.length()
        + tx.gas_price.length()
        + tx.gas_limit.length()
        + tx.to.length()
        + tx.value.length()
        + tx.input.length()
        + 3;
    let mut out = Vec::with_capacity(payload + 9);
    alloy_rlp::Header {
        list: true,
        payload_length: payload,
    }
    .encode(&mut out);
    tx.nonce.encode(&mut out);
    tx.gas_price.encode(&mut out);
    tx.gas_limit.encode(&mut out);
    tx.to.encode(&mut out);
    tx.value.encode(&mut out);
    tx.input.encode(&mut out);
    out.extend_from_slice(&[alloy_rlp::EMPTY_STRING_CODE; 3]);
    out
}

/// A transaction as the transactions root commits to it (EIP-2718).
fn consensus_encoding(tx: &TxEnvelope) -> Vec<u8> {
    match tx {
        TxEnvelope::Legacy(signed) => legacy_unsigned(signed.tx()),
        other => alloy_eips::eip2718::Encodable2718::encoded_2718(other),
    }
}

/// The block's RLP length, as geth's `size` reports it: header, transactions (a typed one as a
/// string), no uncles, and the withdrawals after Shanghai.
fn block_size(header: &Header, encodings: &[Vec<u8>], withdrawals: Option<&[Withdrawal]>) -> u64 {
    let tx_payload: usize = encodings
        .iter()
        .map(|encoding| {
            if encoding.first().is_some_and(|&b| b >= 0xc0) {
                encoding.len()
            } else {
                alloy_rlp::Header {
                    list: false,
                    payload_length: encoding.len(),
                }
                .length()
                    + encoding.len()
            }
        })
        .sum();
    let list = |payload: usize| alloy_rlp::length_of_length(payload) + payload;
    let mut payload = header.length() + list(tx_payload) + list(0);
    if let Some(withdrawals) = withdrawals {
        payload += alloy_rlp::list_length(withdrawals);
    }
    list(payload) as u64
}

/// geth's `StateOverride.Apply` on the simulation's state: balance, nonce, code, and storage
/// replaced (`state`) or changed (`stateDiff`), committed as if by a transaction just before
/// the block, so that the block's state root includes them.
fn apply_state_overrides(
    state: &mut SimState<'_>,
    overrides: &StateOverrides,
) -> Result<(), SimulateError> {
    let mut addresses: Vec<&Address> = overrides.keys().collect();
    addresses.sort();
    let mut changes = EvmState::default();
    let mut destroyed = EvmState::default();
    for address in addresses {
        let change = &overrides[address];
        let info = state.basic(*address)?;
        let existed = info.is_some();
        let mut account = match info {
            Some(info) => Account::from(info),
            None => Account::new_not_existing(TransactionId::ZERO),
        };
        if let Some(balance) = change.balance {
            account.info.balance = balance;
        }
        if let Some(nonce) = change.nonce {
            account.info.nonce = nonce;
        }
        if let Some(code) = &change.code {
            let code = Bytecode::new_raw(code.clone());
            account.info.code_hash = if code.is_empty() {
                KECCAK_EMPTY
            } else {
                code.hash_slow()
            };
            account.info.code = Some(code);
        }
        match (&change.state, &change.state_diff) {
            (Some(_), Some(_)) => {
                return Err(rejected(
                    codes::SERVER,
                    format!("account {address} has both 'state' and 'stateDiff'"),
                ));
            }
            (Some(all), None) => {
                // geth's SetStorage drops every old slot: the account is destroyed first (so
                // its storage leaves the state and its trie), then made anew with the slots.
                if existed {
                    let mut gone = account.clone();
                    gone.mark_selfdestruct();
                    gone.mark_touch();
                    destroyed.insert(*address, gone);
                }
                account.mark_created();
                for (slot, value) in all {
                    let slot = U256::from_be_bytes(slot.0);
                    account.storage.insert(
                        slot,
                        EvmStorageSlot::new_changed(
                            U256::ZERO,
                            U256::from_be_bytes(value.0),
                            TransactionId::ZERO,
                        ),
                    );
                }
            }
            (None, Some(diff)) => {
                for (slot, value) in diff {
                    let slot = U256::from_be_bytes(slot.0);
                    let original = if existed {
                        state.storage(*address, slot)?
                    } else {
                        U256::ZERO
                    };
                    account.storage.insert(
                        slot,
                        EvmStorageSlot::new_changed(
                            original,
                            U256::from_be_bytes(value.0),
                            TransactionId::ZERO,
                        ),
                    );
                }
            }
            (None, None) => {}
        }
        account.mark_touch();
        changes.insert(*address, account);
    }
    state.commit(destroyed);
    state.commit(changes);
    Ok(())
}

/// geth's simulation tracer: each call's logs, frame by frame so that a failed frame's logs
/// are dropped, and with traceTransfers every ETH transfer as an ERC-20 Transfer log from
/// ERC-7528's address; indexes count through the block. It also stops execution at the
/// deadline.
#[derive(Debug, Default)]
struct SimTracer {
    trace_transfers: bool,
    deadline: Option<Instant>,
    steps: u32,
    expired: bool,
    frames: Vec<Vec<(Log, u64)>>,
    /// Logs of the block so far (the next log's index).
    count: u64,
    tx_hash: B256,
    tx_index: u64,
    /// Addresses to warm at each transaction's start, and whether this one's are.
    warm: Vec<Address>,
    warmed: bool,
}

/// ERC-7528's address for ETH, and `Transfer(address,address,uint256)`.
const ETH_ADDRESS: Address =
    alloy_primitives::address!("0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE");
const TRANSFER_TOPIC: B256 =
    alloy_primitives::b256!("0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");

impl SimTracer {
    fn begin(&mut self, tx_hash: B256, tx_index: u64) {
        self.frames.clear();
        self.warmed = false;
        self.tx_hash = tx_hash;
        self.tx_index = tx_index;
    }

    fn take_logs(&mut self) -> Vec<(Log, u64)> {
        self.frames.drain(..).next().unwrap_or_default()
    }

    fn capture(&mut self, log: Log) {
        let index = self.count;
        self.count += 1;
        if let Some(frame) = self.frames.last_mut() {
            frame.push((log, index));
        }
    }

    fn transfer(&mut self, from: Address, to: Address, value: U256) {
        if !self.trace_transfers || value.is_zero() {
            return;
        }
        let log = Log::new_unchecked(
            ETH_ADDRESS,
            vec![TRANSFER_TOPIC, from.into_word(), to.into_word()],
            Bytes::from(value.to_be_bytes::<32>().to_vec()),
        );
        self.capture(log);
    }

    fn warm_up<CTX: ContextTr>(&mut self, context: &mut CTX) {
        if self.warmed {
            return;
        }
        self.warmed = true;
        for address in &self.warm {
            let _ = context.journal_mut().load_account(*address);
        }
    }

    fn exit(&mut self, failed: bool) {
        if self.frames.len() <= 1 {
            if failed && let Some(top) = self.frames.first_mut() {
                top.clear();
            }
            return;
        }
        let Some(frame) = self.frames.pop() else {
            return;
        };
        if !failed && let Some(parent) = self.frames.last_mut() {
            parent.extend(frame);
        }
    }
}

impl<CTX: ContextTr> Inspector<CTX, EthInterpreter> for SimTracer {
    fn step(&mut self, interp: &mut Interpreter<EthInterpreter>, _context: &mut CTX) {
        self.steps = self.steps.wrapping_add(1);
        if !self.expired
            && self.steps.is_multiple_of(4096)
            && self
                .deadline
                .is_some_and(|deadline| Instant::now() >= deadline)
        {
            self.expired = true;
        }
        if self.expired {
            interp.halt(InstructionResult::OutOfGas);
        }
    }

    fn log(&mut self, _context: &mut CTX, log: Log) {
        self.capture(log);
    }

    fn call(&mut self, context: &mut CTX, inputs: &mut CallInputs) -> Option<CallOutcome> {
        self.warm_up(context);
        self.frames.push(Vec::new());
        if !matches!(
            inputs.scheme,
            CallScheme::DelegateCall | CallScheme::CallCode
        ) && let Some(value) = inputs.value.transfer()
        {
            self.transfer(inputs.caller, inputs.target_address, value);
        }
        None
    }

    fn call_end(&mut self, _context: &mut CTX, _inputs: &CallInputs, outcome: &mut CallOutcome) {
        self.exit(!outcome.result.result.is_ok());
    }

    fn create(&mut self, context: &mut CTX, inputs: &mut CreateInputs) -> Option<CreateOutcome> {
        self.warm_up(context);
        self.frames.push(Vec::new());
        if self.trace_transfers && !inputs.value().is_zero() {
            let caller = inputs.caller();
            let nonce = context
                .journal_mut()
                .load_account(caller)
                .map(|account| account.data.info.nonce)
                .unwrap_or_default();
            self.transfer(caller, inputs.created_address(nonce), inputs.value());
        }
        None
    }

    fn create_end(
        &mut self,
        _context: &mut CTX,
        _inputs: &CreateInputs,
        outcome: &mut CreateOutcome,
    ) {
        self.exit(!outcome.result.result.is_ok());
    }

    fn selfdestruct(&mut self, contract: Address, target: Address, value: U256) {
        self.transfer(contract, target, value);
    }
}
