//! debug_trace*: a stored block's transactions re-executed on its parent's state (system calls
//! and the DAO drain included, so each trace agrees with the stored receipts), or one call on
//! the state after a block, watched by geth's tracers.
//!
//! The tracers are revm-inspectors': its `TracingInspector` records the struct logger's steps,
//! which are written here in geth's JSON encoding (its own builder differs from geth in the
//! refund counter, step errors, empty return data and opcode names), and its `DebugInspector`
//! runs every named tracer. A `Guard` in front of them stops a trace at its deadline and bounds
//! what the struct logger records.

use crate::{
    block::apply_dao_drain,
    call::{BlockOverrides, CallContext, CallError, call_nonce, invalid_message, tx_env},
    chain_spec::ChainSpec,
    collision::{CallCollision, StorageCollision},
    state_db::{StateAt, StateCache, StateError, StateSnapshot},
};
use alloy_consensus::{Header, TxEnvelope, transaction::Recovered};
use alloy_eips::eip4895::Withdrawal;
use alloy_evm::{
    EthEvmFactory, Evm, EvmEnv, EvmFactory, FromRecoveredTx,
    block::{BlockExecutionError, BlockExecutor},
    eth::{EthBlockExecutionCtx, EthBlockExecutor, receipt_builder::AlloyReceiptBuilder},
};
use alloy_hardforks::EthereumHardforks;
use alloy_primitives::{Address, B256, U256, map::HashMap};
use alloy_rpc_types_trace::geth::{GethDebugTracingOptions, GethDefaultTracingOptions};
use quarry_storage::{ReadOnly, ReadTx};
use revm::{
    DatabaseRef, Inspector,
    context::{
        BlockEnv, ContextTr, JournalTr, TxEnv,
        result::{EVMError, ExecutionResult, ResultAndState},
    },
    database::{State, WrapDatabaseRef},
    handler::FrameResult,
    inspector::JournalExt,
    interpreter::{
        CallInputs, CallOutcome, CreateInputs, CreateOutcome, FrameInput, InstructionResult,
        Interpreter,
        interpreter_types::{InputsTr, Jumps, MemoryTr, ReturnData},
    },
    primitives::Log,
};
use revm_inspectors::tracing::{
    DebugInspector, TracingInspector, TracingInspectorConfig, TransactionContext,
    types::{CallTraceNode, CallTraceStep, TraceMemberOrder},
};
use serde::{
    Serialize, Serializer,
    ser::{SerializeMap, SerializeSeq},
};
use serde_json::value::RawValue;
use std::{
    borrow::Cow,
    collections::{BTreeMap, HashSet},
    time::{Duration, Instant},
};

/// geth's limit for tracing one transaction when the request sets no `timeout`.
pub const DEFAULT_TRACE_TIMEOUT: Duration = Duration::from_secs(5);

/// One trace's JSON, as geth writes it.
pub type TraceJson = Box<RawValue>;

/// How to trace: the tracer and its options, and the limits.
#[derive(Debug, Clone)]
pub struct TraceRequest<'a> {
    pub options: &'a GethDebugTracingOptions,
    /// Each traced transaction's limit: geth's `timeout` option (5 s unless given).
    pub timeout: Duration,
    /// The server's limit for the whole request.
    pub deadline: Instant,
    /// Most bytes of struct logs one request may produce (estimated as they are recorded).
    pub max_bytes: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// geth's words for a trace stopped by its timeout (or by the server's deadline).
    #[error("execution timeout")]
    Timeout,
    /// The struct logs grew past the server's limit; recording stopped there.
    #[error(
        "trace exceeds the server's limit of {max_bytes} bytes of struct logs (reached after {steps} steps): trace fewer steps with the \"limit\" option, disable the stack, memory or storage, or use a tracer such as callTracer"
    )]
    TooLarge { max_bytes: usize, steps: u64 },
    /// A trace_* answer grew past the server's limit.
    #[error(
        "trace exceeds the server's limit of {max_bytes} bytes: ask for fewer trace types (vmTrace is the largest) or fewer transactions (trace_replayTransaction instead of trace_replayBlockTransactions, a narrower trace_filter)"
    )]
    ParityTooLarge { max_bytes: usize },
    /// An unknown tracer or a tracer config that does not parse.
    #[error("{0}")]
    Tracer(String),
    /// The traced call cannot run at all (geth: "tracing failed: ...").
    #[error("tracing failed: {0}")]
    Invalid(String),
    #[error(transparent)]
    State(#[from] quarry_storage::Error),
    /// Re-executing a stored block failed: the stored chain and this node's rules disagree.
    #[error("re-executing the block failed: {0}")]
    Execution(String),
}

impl From<CallError> for TraceError {
    fn from(error: CallError) -> Self {
        match error {
            CallError::State(e) => Self::State(e),
            CallError::Timeout(_) => Self::Timeout,
            other => Self::Invalid(other.to_string()),
        }
    }
}

impl From<StateError> for TraceError {
    fn from(StateError(e): StateError) -> Self {
        Self::State(e)
    }
}

impl From<revm::database_interface::bal::EvmDatabaseError<StateError>> for TraceError {
    fn from(error: revm::database_interface::bal::EvmDatabaseError<StateError>) -> Self {
        match error {
            revm::database_interface::bal::EvmDatabaseError::Database(StateError(e)) => {
                Self::State(e)
            }
            other => Self::Execution(other.to_string()),
        }
    }
}

/// A block to re-execute: stored, or (debug_traceBlock) decoded from the request.
#[derive(Debug, Clone, Copy)]
pub struct BlockRef<'a> {
    pub hash: B256,
    pub header: &'a Header,
    pub transactions: &'a [TxEnvelope],
    pub senders: &'a [Address],
    pub ommers: &'a [Header],
    pub withdrawals: Option<&'a [Withdrawal]>,
}

/// Re-executes `block` on its parent's state, tracing every transaction or only the one at
/// `only` (the execution stops after it). Returns each traced transaction's hash and trace.
/// The parent must be stored; `parent_is_head` says whether its state is the latest one.
pub fn trace_block(
    spec: &ChainSpec,
    tx: &ReadTx,
    cache: &StateCache,
    block: BlockRef<'_>,
    parent_is_head: bool,
    only: Option<usize>,
    request: &TraceRequest<'_>,
) -> Result<Vec<(B256, TraceJson)>, TraceError> {
    let replay = BlockReplay {
        spec,
        tx,
        cache,
        block,
        parent_is_head,
        only,
        timeout: request.timeout,
        deadline: request.deadline,
        max_bytes: request.max_bytes,
    };
    replay.run(&mut GethTracer(request.options))
}

/// The state a block replay executes on: the parent's, through the shared cache.
pub(crate) type ReplayState<'a> = State<WrapDatabaseRef<StateSnapshot<'a, ReadOnly>>>;

/// What a block replay does with each traced transaction: which tracer watches it, and what is
/// made of the tracer once it ran.
pub(crate) trait TxTracer {
    type Output;
    fn tracer(&self) -> Result<Tracer, TraceError>;
    /// `result` is the transaction's, not yet committed to `db` (which holds the state before
    /// it).
    fn finish(
        &mut self,
        guard: &mut Guard,
        result: &ResultAndState,
        tx_env: &TxEnv,
        block_env: &BlockEnv,
        db: &mut ReplayState<'_>,
        context: TransactionContext,
    ) -> Result<Self::Output, TraceError>;
}

/// geth's tracers, each transaction's trace as JSON.
struct GethTracer<'a>(&'a GethDebugTracingOptions);

impl TxTracer for GethTracer<'_> {
    type Output = TraceJson;

    fn tracer(&self) -> Result<Tracer, TraceError> {
        Tracer::new(self.0)
    }

    fn finish(
        &mut self,
        guard: &mut Guard,
        result: &ResultAndState,
        tx_env: &TxEnv,
        block_env: &BlockEnv,
        db: &mut ReplayState<'_>,
        context: TransactionContext,
    ) -> Result<TraceJson, TraceError> {
        guard.finish(result, tx_env, block_env, db, Some(context))
    }
}

/// A stored block's re-execution on its parent's state, with some of its transactions traced.
pub struct BlockReplay<'a> {
    pub spec: &'a ChainSpec,
    pub tx: &'a ReadTx,
    pub cache: &'a StateCache,
    pub block: BlockRef<'a>,
    /// Whether the parent's state is the latest one.
    pub parent_is_head: bool,
    /// Trace only this transaction (the execution stops after it); `None` traces them all.
    pub only: Option<usize>,
    /// Each traced transaction's own limit.
    pub timeout: Duration,
    /// The whole request's limit.
    pub deadline: Instant,
    pub max_bytes: usize,
}

impl BlockReplay<'_> {
    /// Runs the block, tracing as `tracer` says; each traced transaction's hash and output.
    pub(crate) fn run<T: TxTracer>(
        &self,
        tracer: &mut T,
    ) -> Result<Vec<(B256, T::Output)>, TraceError> {
        let (spec, tx, block) = (self.spec, self.tx, self.block);
        let header = block.header;
        let parent = header
            .number
            .checked_sub(1)
            .ok_or_else(|| TraceError::Execution("the genesis block has no parent".into()))?;
        let parent_td = tx.total_difficulty(parent)?.unwrap_or_default();
        let merged = spec.is_merged(parent_td, header.timestamp);
        let rules = spec.at_block(merged);
        let env = EvmEnv::for_eth_block(
            header,
            rules,
            spec.chain_id,
            spec.blob_params_at(header.timestamp),
        );
        let block_env = env.block_env.clone();
        let at = if self.parent_is_head {
            StateAt::Latest
        } else {
            StateAt::Block(parent)
        };
        let mut state = State::builder()
            .with_database_ref(StateSnapshot::cached(tx, at, parent, self.cache))
            .build();
        let inspector = (
            Guard::new(None, self.deadline, self.max_bytes),
            StorageCollision::default(),
        );
        let evm = EthEvmFactory::default().create_evm_with_inspector(&mut state, env, inspector);
        // Replays meter SSTORE as block execution did.
        let evm = crate::eip1283::for_block(spec, header.number, evm);
        let ctx = EthBlockExecutionCtx {
            parent_hash: header.parent_hash,
            parent_beacon_block_root: header.parent_beacon_block_root,
            ommers: block.ommers,
            withdrawals: block.withdrawals.map(Cow::Borrowed),
            extra_data: header.extra_data.clone(),
            tx_count_hint: Some(block.transactions.len()),
            slot_number: None,
        };
        let mut executor = EthBlockExecutor::new(evm, ctx, rules, AlloyReceiptBuilder::default());
        executor
            .apply_pre_execution_changes()
            .map_err(replay_error)?;
        if spec.dao_fork_block() == Some(header.number) {
            let pre_eip161 = !spec.is_spurious_dragon_active_at_block(header.number);
            apply_dao_drain(executor.evm_mut().db_mut(), pre_eip161)
                .map_err(|e| TraceError::Execution(e.to_string()))?;
        }
        let mut traces = Vec::new();
        for (index, (transaction, sender)) in
            block.transactions.iter().zip(block.senders).enumerate()
        {
            let recovered = Recovered::new_unchecked(transaction, *sender);
            if self.only.is_some_and(|only| only != index) {
                executor
                    .execute_transaction(recovered)
                    .map_err(replay_error)?;
                check_replayed(executor.evm_mut().inspector_mut())?;
                continue;
            }
            let deadline = self.deadline.min(Instant::now() + self.timeout);
            executor
                .evm_mut()
                .inspector_mut()
                .0
                .begin(tracer.tracer()?, deadline);
            let output = executor
                .execute_transaction_without_commit(recovered)
                .map_err(replay_error)?;
            let (db, inspector, _) = executor.evm_mut().components_mut();
            if let Some(e) = inspector.1.error.take() {
                return Err(TraceError::State(e));
            }
            let context = TransactionContext {
                block_hash: Some(block.hash),
                tx_index: Some(index),
                tx_hash: Some(*transaction.tx_hash()),
            };
            let tx_env = TxEnv::from_recovered_tx(transaction, *sender);
            let trace = tracer.finish(
                &mut inspector.0,
                &output.result,
                &tx_env,
                &block_env,
                db,
                context,
            )?;
            traces.push((*transaction.tx_hash(), trace));
            if self.only.is_some() {
                // Nothing runs after it: its changes need not be kept.
                break;
            }
            executor.commit_transaction(output);
        }
        Ok(traces)
    }
}

/// After an untraced transaction: the server's deadline, and a storage error met by EIP-7610's
/// check.
fn check_replayed(inspector: &mut (Guard, StorageCollision)) -> Result<(), TraceError> {
    if let Some(e) = inspector.1.error.take() {
        return Err(TraceError::State(e));
    }
    match inspector.0.stop {
        Some(_) => Err(TraceError::Timeout),
        None => Ok(()),
    }
}

fn replay_error(error: BlockExecutionError) -> TraceError {
    TraceError::Execution(error.to_string())
}

impl CallContext<'_> {
    /// debug_traceCall: runs `request` with `gas` gas as eth_call does, in the block's
    /// environment changed by `block`, and traces it.
    pub fn trace(
        &self,
        request: &crate::CallRequest,
        gas: u64,
        block: &BlockOverrides,
        trace: &TraceRequest<'_>,
    ) -> Result<TraceJson, TraceError> {
        let env = self.env_with(request, block)?;
        let block_env = env.block_env.clone();
        let chain_id = env.cfg_env.chain_id;
        let base_fee = env.block_env.basefee;
        let spec = env.cfg_env.spec;
        let db = self.database()?;
        let caller = request.from.unwrap_or_default();
        let tx = tx_env(request, caller, call_nonce(&db, request)?, gas, chain_id);
        let deadline = trace.deadline.min(Instant::now() + trace.timeout);
        let guard = Guard::new(Some(Tracer::new(trace.options)?), deadline, trace.max_bytes);
        let inspector = (guard, CallCollision::default());
        let mut evm = EthEvmFactory::default().create_evm_with_inspector(db, env, inspector);
        crate::overrides::move_precompiles(evm.components_mut().2, self.overrides, spec)
            .map_err(|e| TraceError::Invalid(e.to_string()))?;
        let result = evm.transact(tx.clone());
        let (db, inspector, _) = evm.components_mut();
        if let Some(e) = inspector.1.error.take() {
            return Err(TraceError::State(e));
        }
        let fee_cap = request.max_fee_per_gas.or(request.gas_price);
        let result = result.map_err(|e| transact_error(e, caller, fee_cap, base_fee))?;
        inspector.0.finish(&result, &tx, &block_env, db, None)
    }
}

/// Why a traced call or transaction could not run, in geth's words.
pub(crate) fn transact_error(
    error: EVMError<StateError>,
    caller: Address,
    fee_cap: Option<u128>,
    base_fee: u64,
) -> TraceError {
    match error {
        EVMError::Database(StateError(e)) => TraceError::State(e),
        EVMError::Transaction(
            revm::context::result::InvalidTransaction::GasPriceLessThanBasefee,
        ) => TraceError::Invalid(format!(
            "max fee per gas less than block base fee: address {caller}, maxFeePerGas: {}, baseFee: {base_fee}",
            fee_cap.unwrap_or_default()
        )),
        EVMError::Transaction(invalid) => TraceError::Invalid(invalid_message(&invalid, caller)),
        other => TraceError::Invalid(other.to_string()),
    }
}

/// The tracer a request names: geth's struct logger (the default) or a built-in one, or the
/// Parity trace builder's recorder for trace_* (`vm_trace` when it records every step).
#[derive(Debug)]
pub(crate) enum Tracer {
    StructLogs(Box<TracingInspector>, GethDefaultTracingOptions),
    BuiltIn(Box<DebugInspector>),
    Parity {
        inspector: Box<TracingInspector>,
        vm_trace: bool,
    },
}

impl Tracer {
    fn new(options: &GethDebugTracingOptions) -> Result<Self, TraceError> {
        let named = options
            .tracer
            .as_ref()
            .is_some_and(|tracer| !tracer.as_str().is_empty());
        if !named {
            let config = TracingInspectorConfig::from_geth_config(&options.config);
            return Ok(Self::StructLogs(
                Box::new(TracingInspector::new(config)),
                options.config,
            ));
        }
        let inspector = DebugInspector::new(options.clone()).map_err(|e| {
            let name = options.tracer.as_ref().map_or("", |t| t.as_str());
            TraceError::Tracer(match e {
                revm_inspectors::tracing::DebugInspectorError::JsTracerNotEnabled
                | revm_inspectors::tracing::DebugInspectorError::UnsupportedTracer => {
                    format!("tracer not found: {name} (JavaScript tracers are not supported)")
                }
                other => format!("{name}: {other}"),
            })
        })?;
        Ok(Self::BuiltIn(Box::new(inspector)))
    }
}

macro_rules! delegate {
    ($self:expr => $inspector:ident.$method:ident($($arg:expr),*)) => {
        match $self {
            Tracer::StructLogs($inspector, _) => Inspector::<CTX>::$method(&mut **$inspector, $($arg),*),
            Tracer::BuiltIn($inspector) => Inspector::<CTX>::$method(&mut **$inspector, $($arg),*),
            Tracer::Parity { inspector: $inspector, .. } => Inspector::<CTX>::$method(&mut **$inspector, $($arg),*),
        }
    };
}

impl<CTX: ContextTr<Journal: JournalExt>> Inspector<CTX> for Tracer {
    fn initialize_interp(&mut self, interp: &mut Interpreter, context: &mut CTX) {
        delegate!(self => inspector.initialize_interp(interp, context))
    }
    fn step(&mut self, interp: &mut Interpreter, context: &mut CTX) {
        delegate!(self => inspector.step(interp, context))
    }
    fn step_end(&mut self, interp: &mut Interpreter, context: &mut CTX) {
        delegate!(self => inspector.step_end(interp, context))
    }
    fn log(&mut self, context: &mut CTX, log: Log) {
        delegate!(self => inspector.log(context, log))
    }
    fn log_full(&mut self, interp: &mut Interpreter, context: &mut CTX, log: Log) {
        delegate!(self => inspector.log_full(interp, context, log))
    }
    fn call(&mut self, context: &mut CTX, inputs: &mut CallInputs) -> Option<CallOutcome> {
        delegate!(self => inspector.call(context, inputs))
    }
    fn call_end(&mut self, context: &mut CTX, inputs: &CallInputs, outcome: &mut CallOutcome) {
        delegate!(self => inspector.call_end(context, inputs, outcome))
    }
    fn create(&mut self, context: &mut CTX, inputs: &mut CreateInputs) -> Option<CreateOutcome> {
        delegate!(self => inspector.create(context, inputs))
    }
    fn create_end(
        &mut self,
        context: &mut CTX,
        inputs: &CreateInputs,
        outcome: &mut CreateOutcome,
    ) {
        delegate!(self => inspector.create_end(context, inputs, outcome))
    }
    fn selfdestruct(&mut self, contract: Address, target: Address, value: U256) {
        match self {
            Tracer::StructLogs(inspector, _) => {
                Inspector::<CTX>::selfdestruct(&mut **inspector, contract, target, value)
            }
            Tracer::BuiltIn(inspector) => {
                Inspector::<CTX>::selfdestruct(&mut **inspector, contract, target, value)
            }
            Tracer::Parity { inspector, .. } => {
                Inspector::<CTX>::selfdestruct(&mut **inspector, contract, target, value)
            }
        }
    }
    fn frame_start(
        &mut self,
        context: &mut CTX,
        frame_input: &mut FrameInput,
    ) -> Option<FrameResult> {
        delegate!(self => inspector.frame_start(context, frame_input))
    }
    fn frame_end(
        &mut self,
        context: &mut CTX,
        frame_input: &FrameInput,
        frame_result: &mut FrameResult,
    ) {
        delegate!(self => inspector.frame_end(context, frame_input, frame_result))
    }
}

/// Why a trace stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Timeout,
    TooLarge,
}

/// In front of the tracer: stops execution at the deadline or when the struct logs outgrow
/// their budget (every frame halts at its next step, so the whole transaction unwinds at
/// once), stops recording steps past geth's `limit`, and keeps geth's refund counter, which
/// counts the whole transaction's refunds where revm counts each frame's.
#[derive(Debug)]
pub(crate) struct Guard {
    /// `None` while block replay runs a transaction that is not traced.
    tracer: Option<Tracer>,
    deadline: Instant,
    steps: u32,
    stop: Option<Stop>,
    /// Whether the current step went to the tracer (its `step_end` must too).
    forwarded: bool,
    logs: LogBudget,
}

/// What the struct logger has recorded, in estimated bytes of geth's JSON, against the limit.
#[derive(Debug, Default)]
struct LogBudget {
    max_bytes: usize,
    /// Across every transaction of the request.
    bytes: usize,
    /// Steps recorded for the current transaction.
    recorded: u64,
    /// geth's `limit`: most steps recorded per transaction.
    limit: u64,
    stack: bool,
    memory: bool,
    return_data: bool,
    storage: bool,
    /// The transaction's refund counter at each recorded step.
    refunds: Vec<u64>,
    /// Each active frame's refund counter, outermost first.
    frame_refunds: Vec<i64>,
    /// The slots each address's SLOAD and SSTORE steps have shown so far.
    slots: HashMap<Address, HashSet<U256>>,
}

/// Estimated JSON bytes of a step's fixed fields, of a stack item, of a memory word, and of a
/// storage entry.
const STEP_BYTES: usize = 120;
const STACK_ITEM_BYTES: usize = 70;
const MEMORY_WORD_BYTES: usize = 70;
const STORAGE_ENTRY_BYTES: usize = 140;

impl Guard {
    pub(crate) fn new(tracer: Option<Tracer>, deadline: Instant, max_bytes: usize) -> Self {
        let mut guard = Self {
            tracer: None,
            deadline,
            steps: 0,
            stop: None,
            forwarded: false,
            logs: LogBudget {
                max_bytes,
                ..Default::default()
            },
        };
        if let Some(tracer) = tracer {
            guard.begin(tracer, deadline);
        }
        guard
    }

    /// Starts tracing a transaction with a fresh tracer.
    fn begin(&mut self, tracer: Tracer, deadline: Instant) {
        let logs = &mut self.logs;
        logs.recorded = 0;
        logs.refunds.clear();
        logs.frame_refunds.clear();
        logs.slots.clear();
        if let Tracer::StructLogs(_, options) = &tracer {
            logs.limit = options.limit.filter(|&l| l > 0).unwrap_or(u64::MAX);
            logs.stack = options.is_stack_enabled();
            logs.memory = options.is_memory_enabled();
            logs.return_data = options.is_return_data_enabled();
            logs.storage = options.is_storage_enabled();
        }
        if let Tracer::Parity { .. } = &tracer {
            // A vmTrace step costs about a struct log's fixed fields; nothing else is counted.
            logs.limit = u64::MAX;
            logs.stack = false;
            logs.memory = false;
            logs.return_data = false;
            logs.storage = false;
        }
        self.deadline = deadline;
        self.tracer = Some(tracer);
    }

    /// Whether this step goes to the struct logger, and its refund counter recorded if so.
    fn record_step<CTX: ContextTr>(&mut self, interp: &Interpreter, context: &mut CTX) -> bool {
        let logs = &mut self.logs;
        if logs.recorded >= logs.limit {
            return false;
        }
        let depth = context.journal().depth().max(1);
        logs.frame_refunds.truncate(depth);
        logs.frame_refunds.resize(depth, 0);
        logs.frame_refunds[depth - 1] = interp.gas.refunded();
        let refund: i64 = logs.frame_refunds.iter().sum();
        let mut bytes = STEP_BYTES;
        if logs.stack {
            bytes += interp.stack.len() * STACK_ITEM_BYTES;
        }
        if logs.memory {
            bytes += interp.memory.size().div_ceil(32) * MEMORY_WORD_BYTES;
        }
        if logs.return_data {
            bytes += 2 * interp.return_data.buffer().len();
        }
        let opcode = interp.bytecode.opcode();
        if logs.storage
            && matches!(
                opcode,
                revm::bytecode::opcode::SLOAD | revm::bytecode::opcode::SSTORE
            )
            && let Ok(slot) = interp.stack.peek(0)
        {
            let slots = logs.slots.entry(interp.input.target_address()).or_default();
            slots.insert(slot);
            bytes += slots.len() * STORAGE_ENTRY_BYTES;
        }
        if logs.bytes.saturating_add(bytes) > logs.max_bytes {
            self.stop = Some(Stop::TooLarge);
            return false;
        }
        logs.bytes += bytes;
        logs.recorded += 1;
        logs.refunds.push(u64::try_from(refund).unwrap_or_default());
        true
    }

    /// The tracer of the transaction that just ran, or why its trace cannot be read.
    pub(crate) fn take_tracer(&mut self) -> Result<Option<Tracer>, TraceError> {
        let tracer = self.tracer.take();
        // geth's timer stops a tracer whenever it fires before the result is read.
        if self.stop.is_none() && Instant::now() >= self.deadline {
            self.stop = Some(Stop::Timeout);
        }
        match self.stop {
            Some(Stop::Timeout) => Err(TraceError::Timeout),
            Some(Stop::TooLarge) => Err(match tracer {
                Some(Tracer::Parity { .. }) => TraceError::ParityTooLarge {
                    max_bytes: self.logs.max_bytes,
                },
                _ => TraceError::TooLarge {
                    max_bytes: self.logs.max_bytes,
                    steps: self.logs.recorded,
                },
            }),
            None => Ok(tracer),
        }
    }

    /// Counts `bytes` of a Parity trace against the request's budget.
    pub(crate) fn charge(&mut self, bytes: usize) -> Result<(), TraceError> {
        let logs = &mut self.logs;
        logs.bytes = logs.bytes.saturating_add(bytes);
        if logs.bytes > logs.max_bytes {
            return Err(TraceError::ParityTooLarge {
                max_bytes: logs.max_bytes,
            });
        }
        Ok(())
    }

    /// The trace of the transaction that just ran, or why there is none.
    fn finish<DB>(
        &mut self,
        result: &ResultAndState,
        tx_env: &TxEnv,
        block_env: &BlockEnv,
        db: &mut DB,
        context: Option<TransactionContext>,
    ) -> Result<TraceJson, TraceError>
    where
        DB: DatabaseRef,
        DB::Error: Into<TraceError>,
    {
        let tracer = self.take_tracer()?;
        let json = match tracer {
            Some(Tracer::StructLogs(inspector, options)) => {
                serde_json::value::to_raw_value(&StructLogs {
                    inspector: &inspector,
                    options: &options,
                    refunds: &self.logs.refunds,
                    result: &result.result,
                })
            }
            Some(Tracer::BuiltIn(mut inspector)) => {
                let trace = inspector
                    .get_result(context, tx_env, block_env, result, db)
                    .map_err(|e| match e {
                        revm_inspectors::tracing::DebugInspectorError::Database(e) => e.into(),
                        other => TraceError::Tracer(other.to_string()),
                    })?;
                serde_json::value::to_raw_value(&trace)
            }
            Some(Tracer::Parity { .. }) | None => {
                return Err(TraceError::Execution("no geth tracer was set".into()));
            }
        };
        json.map_err(|e| TraceError::Execution(format!("cannot write the trace: {e}")))
    }
}

impl<CTX: ContextTr<Journal: JournalExt>> Inspector<CTX> for Guard {
    fn initialize_interp(&mut self, interp: &mut Interpreter, context: &mut CTX) {
        if let Some(tracer) = &mut self.tracer {
            tracer.initialize_interp(interp, context);
        }
    }

    fn step(&mut self, interp: &mut Interpreter, context: &mut CTX) {
        self.forwarded = false;
        self.steps = self.steps.wrapping_add(1);
        // The clock is read at the first step and every 1024th after it.
        if self.stop.is_none() && self.steps % 1024 == 1 && Instant::now() >= self.deadline {
            self.stop = Some(Stop::Timeout);
        }
        if self.stop.is_none()
            && matches!(
                self.tracer,
                Some(Tracer::StructLogs(..) | Tracer::Parity { vm_trace: true, .. })
            )
            && !self.record_step(interp, context)
        {
            // Past geth's limit the step is not recorded; past the budget, execution stops.
            if self.stop.is_none() {
                return;
            }
        }
        if self.stop.is_some() {
            // Halted before the tracer sees the step: revm then skips its step_end.
            interp.halt(InstructionResult::OutOfGas);
            return;
        }
        if let Some(tracer) = &mut self.tracer {
            self.forwarded = true;
            tracer.step(interp, context);
        }
    }

    fn step_end(&mut self, interp: &mut Interpreter, context: &mut CTX) {
        if self.forwarded
            && let Some(tracer) = &mut self.tracer
        {
            tracer.step_end(interp, context);
        }
    }

    fn log(&mut self, context: &mut CTX, log: Log) {
        if let Some(tracer) = &mut self.tracer {
            tracer.log(context, log);
        }
    }

    fn log_full(&mut self, interp: &mut Interpreter, context: &mut CTX, log: Log) {
        if let Some(tracer) = &mut self.tracer {
            tracer.log_full(interp, context, log);
        }
    }

    fn call(&mut self, context: &mut CTX, inputs: &mut CallInputs) -> Option<CallOutcome> {
        self.tracer.as_mut()?.call(context, inputs)
    }

    fn call_end(&mut self, context: &mut CTX, inputs: &CallInputs, outcome: &mut CallOutcome) {
        if let Some(tracer) = &mut self.tracer {
            tracer.call_end(context, inputs, outcome);
        }
    }

    fn create(&mut self, context: &mut CTX, inputs: &mut CreateInputs) -> Option<CreateOutcome> {
        self.tracer.as_mut()?.create(context, inputs)
    }

    fn create_end(
        &mut self,
        context: &mut CTX,
        inputs: &CreateInputs,
        outcome: &mut CreateOutcome,
    ) {
        if let Some(tracer) = &mut self.tracer {
            tracer.create_end(context, inputs, outcome);
        }
    }

    fn selfdestruct(&mut self, contract: Address, target: Address, value: U256) {
        if let Some(tracer) = &mut self.tracer {
            Inspector::<CTX>::selfdestruct(tracer, contract, target, value);
        }
    }

    fn frame_start(
        &mut self,
        context: &mut CTX,
        frame_input: &mut FrameInput,
    ) -> Option<FrameResult> {
        self.tracer.as_mut()?.frame_start(context, frame_input)
    }

    fn frame_end(
        &mut self,
        context: &mut CTX,
        frame_input: &FrameInput,
        frame_result: &mut FrameResult,
    ) {
        if let Some(tracer) = &mut self.tracer {
            tracer.frame_end(context, frame_input, frame_result);
        }
    }
}

/// geth's struct logger result: `{gas, failed, returnValue, structLogs}`, each log in geth's
/// encoding (stack items as minimal hex, memory as 32-byte words, storage as 32-byte keys and
/// values, `returnData`, `error` and `refund` only when not empty). Serialized straight from
/// the recorded steps: no intermediate copy of the logs.
struct StructLogs<'a> {
    inspector: &'a TracingInspector,
    options: &'a GethDefaultTracingOptions,
    /// The transaction-wide refund counters, in step order.
    refunds: &'a [u64],
    result: &'a ExecutionResult,
}

impl Serialize for StructLogs<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (failed, return_value) = match self.result {
            ExecutionResult::Success { output, .. } => (false, output.data().clone()),
            ExecutionResult::Revert { output, .. } => (true, output.clone()),
            ExecutionResult::Halt { .. } => (true, Default::default()),
        };
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("gas", &self.result.tx_gas_used())?;
        map.serialize_entry("failed", &failed)?;
        map.serialize_entry("returnValue", &return_value)?;
        map.serialize_entry("structLogs", &Steps(self))?;
        map.end()
    }
}

struct Steps<'a, 'b>(&'b StructLogs<'a>);

impl Serialize for Steps<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let logs = self.0;
        let nodes = logs.inspector.traces().nodes();
        let total: usize = nodes.iter().map(|node| node.trace.steps.len()).sum();
        // The refund counters are the guard's, one per recorded step.
        let refunds = (logs.refunds.len() == total).then_some(logs.refunds);
        let mut seq = serializer.serialize_seq(Some(total))?;
        let mut storage: HashMap<Address, BTreeMap<B256, B256>> = HashMap::default();
        let mut index = 0;
        // Each frame's steps and, at each call, the called frame's, in execution order;
        // iterative, so that 1024 nested frames cannot overflow the thread's stack.
        let mut frames: Vec<(&CallTraceNode, usize)> =
            nodes.first().map(|root| (root, 0)).into_iter().collect();
        while let Some((node, position)) = frames.last_mut() {
            let node: &CallTraceNode = node;
            let Some(member) = node.ordering.get(*position) else {
                frames.pop();
                continue;
            };
            *position += 1;
            match *member {
                TraceMemberOrder::Step(i) => {
                    let Some(step) = node.trace.steps.get(i) else {
                        continue;
                    };
                    let opcode = step.op.get();
                    let slots = (logs.options.is_storage_enabled()
                        && matches!(
                            opcode,
                            revm::bytecode::opcode::SLOAD | revm::bytecode::opcode::SSTORE
                        ))
                    .then(|| {
                        let slots = storage.entry(node.execution_address()).or_default();
                        if let Some(change) = &step.storage_change {
                            slots.insert(change.key.into(), change.value.into());
                        }
                        &*slots
                    });
                    let refund = match refunds {
                        Some(refunds) => refunds.get(index).copied().unwrap_or_default(),
                        None => step.gas_refund_counter,
                    };
                    seq.serialize_element(&Step {
                        node,
                        step,
                        options: logs.options,
                        storage: slots,
                        refund,
                    })?;
                    index += 1;
                }
                TraceMemberOrder::Call(i) => {
                    if let Some(child) = node.children.get(i).and_then(|&c| nodes.get(c)) {
                        frames.push((child, 0));
                    }
                }
                TraceMemberOrder::Log(_) => {}
            }
        }
        seq.end()
    }
}

/// One struct log, in geth's field order.
struct Step<'a> {
    node: &'a CallTraceNode,
    step: &'a CallTraceStep,
    options: &'a GethDefaultTracingOptions,
    storage: Option<&'a BTreeMap<B256, B256>>,
    refund: u64,
}

impl Serialize for Step<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let step = self.step;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("pc", &step.pc)?;
        map.serialize_entry("op", &opcode_name(step.op.get()))?;
        map.serialize_entry("gas", &step.gas_remaining)?;
        map.serialize_entry("gasCost", &step.gas_cost)?;
        map.serialize_entry("depth", &(self.node.trace.depth + 1))?;
        if let Some(error) = step_error(step) {
            map.serialize_entry("error", &error)?;
        }
        if self.options.is_stack_enabled()
            && let Some(stack) = &step.stack
        {
            map.serialize_entry("stack", &StackJson(stack))?;
        }
        if self.options.is_return_data_enabled() && !step.returndata.is_empty() {
            map.serialize_entry("returnData", &step.returndata)?;
        }
        if self.options.is_memory_enabled()
            && let Some(memory) = &step.memory
            && !memory.as_bytes().is_empty()
        {
            map.serialize_entry("memory", &MemoryJson(memory.as_bytes()))?;
        }
        if let Some(storage) = self.storage.filter(|storage| !storage.is_empty()) {
            map.serialize_entry("storage", storage)?;
        }
        if self.refund > 0 {
            map.serialize_entry("refund", &self.refund)?;
        }
        map.end()
    }
}

/// Stack items as geth writes them: minimal hex (`0x0`, `0x2a`).
struct StackJson<'a>(&'a [U256]);

impl Serialize for StackJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        let mut buf = [0u8; 66];
        for item in self.0 {
            seq.serialize_element(minimal_hex(item, &mut buf))?;
        }
        seq.end()
    }
}

fn minimal_hex<'b>(value: &U256, buf: &'b mut [u8; 66]) -> &'b str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let limbs = value.as_limbs();
    let digits = usize::max(1, value.bit_len().div_ceil(4));
    buf[0] = b'0';
    buf[1] = b'x';
    // Nibble i (from the least significant) is in limb i / 16; written most significant first.
    for i in 0..digits {
        let nibble = (limbs[i / 16] >> ((i % 16) * 4)) & 0xf;
        buf[1 + digits - i] = DIGITS[nibble as usize];
    }
    // Only ASCII hex digits were written.
    std::str::from_utf8(&buf[..2 + digits]).unwrap_or("0x0")
}

/// Memory as geth writes it: 0x-prefixed 32-byte words.
struct MemoryJson<'a>(&'a [u8]);

impl Serialize for MemoryJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len().div_ceil(32)))?;
        let mut buf = [0u8; 66];
        buf[0] = b'0';
        buf[1] = b'x';
        for word in self.0.chunks(32) {
            let len = 2 + 2 * word.len();
            let _ = alloy_primitives::hex::encode_to_slice(word, &mut buf[2..len]);
            seq.serialize_element(std::str::from_utf8(&buf[..len]).unwrap_or("0x"))?;
        }
        seq.end()
    }
}

/// geth's opcode names; an opcode it does not know is "opcode 0x.. not defined".
fn opcode_name(opcode: u8) -> Cow<'static, str> {
    let extra = match opcode {
        0x1e => "CLZ",
        0x4b => "SLOTNUM",
        0xd0 => "DATALOAD",
        0xd1 => "DATALOADN",
        0xd2 => "DATASIZE",
        0xd3 => "DATACOPY",
        0xe0 => "RJUMP",
        0xe1 => "RJUMPI",
        0xe2 => "RJUMPV",
        0xe3 => "CALLF",
        0xe4 => "RETF",
        0xe5 => "JUMPF",
        0xe6 => "DUPN",
        0xe7 => "SWAPN",
        0xe8 => "EXCHANGE",
        0xec => "EOFCREATE",
        0xee => "RETURNCONTRACT",
        0xf7 => "RETURNDATALOAD",
        0xf8 => "EXTCALL",
        0xf9 => "EXTDELEGATECALL",
        0xfb => "EXTSTATICCALL",
        _ => match revm::bytecode::opcode::OpCode::new(opcode) {
            Some(op) => return Cow::Borrowed(op.as_str()),
            None => return Cow::Owned(format!("opcode {opcode:#x} not defined")),
        },
    };
    Cow::Borrowed(extra)
}

/// The error geth attaches to a step: only the failures its interpreter meets before it logs
/// the step (out of gas, the stack's bounds); the others (REVERT, a bad jump, ...) end the frame
/// without marking the step.
fn step_error(step: &CallTraceStep) -> Option<String> {
    use InstructionResult::*;
    let info = revm::bytecode::opcode::OpCode::new(step.op.get());
    let stack_len = step.stack.as_ref().map_or(0, |stack| stack.len());
    Some(match step.status? {
        OutOfGas | MemoryOOG | MemoryLimitOOG | PrecompileOOG | InvalidOperandOOG => {
            "out of gas".to_string()
        }
        StackUnderflow => format!(
            "stack underflow ({stack_len} <=> {})",
            info.map_or(0, |op| op.inputs())
        ),
        StackOverflow => {
            let limit = info.map_or(1024, |op| {
                1024 + usize::from(op.inputs()) - usize::from(op.outputs())
            });
            format!("stack limit reached {stack_len} ({limit})")
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_items_are_minimal_hex() {
        let mut buf = [0u8; 66];
        for (value, text) in [
            (U256::ZERO, "0x0"),
            (U256::from(0xd), "0xd"),
            (U256::from(0x2a), "0x2a"),
            (
                U256::from(0x1_0000_0000_0000_0000u128),
                "0x10000000000000000",
            ),
            (U256::MAX, &*format!("0x{}", "f".repeat(64))),
        ] {
            assert_eq!(minimal_hex(&value, &mut buf), text);
            assert_eq!(format!("{value:#x}"), text);
        }
    }
}
