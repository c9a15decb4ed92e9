//! eth_call and eth_estimateGas: one message executed against the state after a stored block,
//! in that block's environment, with geth's call semantics (no nonce or EOA checks, a zero
//! base fee when the call names no fee, no EIP-7825 cap for eth_call).

use crate::{
    chain_spec::ChainSpec,
    overrides::StateOverrides,
    state_db::{StateAt, StateCache, StateError, StateSnapshot},
};
use alloy_consensus::Header;
use alloy_eips::{
    eip2930::{AccessList, AccessListItem},
    eip7702::SignedAuthorization,
};
use alloy_evm::{EthEvm, EthEvmFactory, Evm, EvmEnv, EvmFactory};
use alloy_primitives::{Address, B256, Bytes, TxKind, U256};
use quarry_storage::ReadTx;
pub use revm::context::result::HaltReason;
use revm::{
    Inspector,
    bytecode::Bytecode,
    context::{
        TxEnv,
        result::{EVMError, ExecutionResult, InvalidTransaction},
    },
    database::CacheDB,
    interpreter::{
        Interpreter,
        interpreter::EthInterpreter,
        interpreter_types::{InputsTr, Jumps},
    },
    precompile::{PrecompileSpecId, Precompiles},
};
use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    time::Instant,
};

/// The gas of a plain value transfer.
const PLAIN_TRANSFER_GAS: u64 = 21_000;

/// The EIP-7825 per-transaction gas cap (Osaka), which eth_estimateGas respects as geth does.
pub const TX_GAS_LIMIT_CAP: u64 = 1 << 24;

/// A call as eth_call's first parameter describes it; absent fields take geth's defaults.
#[derive(Debug, Clone, Default)]
pub struct CallRequest {
    pub from: Option<Address>,
    /// `None` creates a contract with `input` as init code.
    pub to: Option<Address>,
    pub gas: Option<u64>,
    pub gas_price: Option<u128>,
    pub max_fee_per_gas: Option<u128>,
    pub max_priority_fee_per_gas: Option<u128>,
    pub max_fee_per_blob_gas: Option<u128>,
    pub value: Option<U256>,
    pub input: Bytes,
    pub nonce: Option<u64>,
    pub access_list: Option<AccessList>,
    pub blob_versioned_hashes: Option<Vec<B256>>,
    pub authorization_list: Option<Vec<SignedAuthorization>>,
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOutcome {
    Success {
        output: Bytes,
        gas_used: u64,
    },
    Revert {
        output: Bytes,
        gas_used: u64,
    },
    /// An exceptional halt; `halt_message` gives geth's wording.
    Halt {
        reason: HaltReason,
        gas_used: u64,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The call cannot run at all (funds, fees, ...): geth's wording.
    #[error("{0}")]
    Invalid(String),
    /// The gas limit is below the call's intrinsic cost (geth's wording): eth_estimateGas
    /// raises the limit instead of failing.
    #[error("{0}")]
    IntrinsicGas(String),
    #[error("execution aborted (timeout = {0:?})")]
    Timeout(std::time::Duration),
    #[error(transparent)]
    State(#[from] quarry_storage::Error),
    #[error("block {0} is not stored")]
    MissingBlock(u64),
    #[error("both state and stateDiff overrides given for account {0}")]
    BothStateAndDiff(Address),
}

/// Where and how a call runs: the state after block `number` (whose header is `header`), in
/// that block's environment.
pub struct CallContext<'a> {
    pub spec: &'a ChainSpec,
    pub tx: &'a ReadTx,
    pub header: &'a Header,
    /// Whether `header`'s block is the head: latest state is then read from the plain tables.
    pub is_head: bool,
    pub overrides: &'a StateOverrides,
    /// What earlier calls read, shared with later ones.
    pub cache: &'a StateCache,
    pub deadline: Instant,
    /// The wall-clock limit `deadline` came from, for the error message.
    pub timeout: std::time::Duration,
}

/// Watches a call that creates a contract (EIP-7610) or, for eth_createAccessList, records
/// what it touches. A call that needs neither runs uninspected; its deadline is kept by
/// `call_clock` either way.
struct CallInspector<'t> {
    access: Option<&'t mut AccessListTracer>,
    /// A database error met by the EIP-7610 check.
    storage_error: Option<quarry_storage::Error>,
}

impl<'a, CTX> Inspector<CTX, EthInterpreter> for CallInspector<'_>
where
    CTX: revm::context::ContextTr<Db = CallDb<'a>>,
{
    /// EIP-7610, as block execution applies it.
    fn create(
        &mut self,
        context: &mut CTX,
        inputs: &mut revm::interpreter::CreateInputs,
    ) -> Option<revm::interpreter::CreateOutcome> {
        let error = &mut self.storage_error;
        crate::collision::storage_collision(context, inputs, |db, address| {
            crate::collision::call_has_storage(db, address, error)
        })
    }

    fn step(&mut self, interp: &mut Interpreter<EthInterpreter>, _context: &mut CTX) {
        if let Some(access) = self.access.as_mut() {
            access.step(interp);
        }
    }
}

/// geth's access-list tracer: the storage slots each contract reads or writes, and the
/// accounts whose balance or code is read or that are called, except the excluded ones
/// (sender, recipient, precompiles, authorities). The list only grows.
#[derive(Debug, Clone, PartialEq, Eq)]
struct AccessListTracer {
    excluded: HashSet<Address>,
    list: BTreeMap<Address, BTreeSet<B256>>,
}

impl AccessListTracer {
    fn new(excluded: HashSet<Address>, start: &AccessList) -> Self {
        let mut tracer = Self {
            excluded,
            list: BTreeMap::new(),
        };
        for item in start.iter() {
            tracer.add_address(item.address);
            for slot in &item.storage_keys {
                tracer.add_slot(item.address, *slot);
            }
        }
        tracer
    }

    fn add_address(&mut self, address: Address) {
        if !self.excluded.contains(&address) {
            self.list.entry(address).or_default();
        }
    }

    /// Slots are kept even for excluded accounts, as geth does.
    fn add_slot(&mut self, address: Address, slot: B256) {
        self.list.entry(address).or_default().insert(slot);
    }

    fn step(&mut self, interp: &Interpreter<EthInterpreter>) {
        use revm::bytecode::opcode::*;
        let stack_address = |depth: usize| {
            interp
                .stack
                .peek(depth)
                .ok()
                .map(|word| Address::from_word(B256::from(word)))
        };
        match interp.bytecode.opcode() {
            SLOAD | SSTORE => {
                if let Ok(slot) = interp.stack.peek(0) {
                    self.add_slot(interp.input.target_address(), B256::from(slot));
                }
            }
            EXTCODECOPY | EXTCODEHASH | EXTCODESIZE | BALANCE | SELFDESTRUCT => {
                if let Some(address) = stack_address(0) {
                    self.add_address(address);
                }
            }
            CALL | CALLCODE | DELEGATECALL | STATICCALL if interp.stack.len() >= 5 => {
                if let Some(address) = stack_address(1) {
                    self.add_address(address);
                }
            }
            _ => {}
        }
    }

    fn access_list(&self) -> AccessList {
        AccessList(
            self.list
                .iter()
                .map(|(address, slots)| AccessListItem {
                    address: *address,
                    storage_keys: slots.iter().copied().collect(),
                })
                .collect(),
        )
    }
}

/// What eth_createAccessList found: the list, and how the call ended when run with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessListOutcome {
    pub access_list: AccessList,
    pub outcome: CallOutcome,
}

pub(crate) type CallDb<'a> = CacheDB<StateSnapshot<'a, quarry_storage::ReadOnly>>;

/// What a call changes in its block's environment (geth's block overrides).
#[derive(Debug, Clone, Default)]
pub struct BlockOverrides {
    pub number: Option<u64>,
    pub time: Option<u64>,
    pub gas_limit: Option<u64>,
    pub fee_recipient: Option<Address>,
    pub prev_randao: Option<B256>,
    pub difficulty: Option<U256>,
    pub base_fee: Option<u64>,
    pub blob_base_fee: Option<u128>,
}

impl BlockOverrides {
    fn apply(&self, env: &mut EvmEnv) {
        let block = &mut env.block_env;
        if let Some(number) = self.number {
            block.number = U256::from(number);
        }
        if let Some(time) = self.time {
            block.timestamp = U256::from(time);
        }
        if let Some(gas_limit) = self.gas_limit {
            block.gas_limit = gas_limit;
        }
        if let Some(recipient) = self.fee_recipient {
            block.beneficiary = recipient;
        }
        if let Some(randao) = self.prev_randao {
            block.prevrandao = Some(randao);
        }
        if let Some(difficulty) = self.difficulty {
            block.difficulty = difficulty;
        }
        if let Some(base_fee) = self.base_fee {
            block.basefee = base_fee;
        }
        if let Some(price) = self.blob_base_fee
            && let Some(blob) = block.blob_excess_gas_and_price.as_mut()
        {
            blob.blob_gasprice = price;
        }
    }
}

impl CallContext<'_> {
    fn env(&self, request: &CallRequest) -> Result<EvmEnv, CallError> {
        self.env_with(request, &BlockOverrides::default())
    }

    /// The block's environment for `request`, changed by `overrides` before geth's zero fees
    /// apply.
    pub(crate) fn env_with(
        &self,
        request: &CallRequest,
        overrides: &BlockOverrides,
    ) -> Result<EvmEnv, CallError> {
        let mut env = self.block_env()?;
        overrides.apply(&mut env);
        let cfg = &mut env.cfg_env;
        cfg.disable_nonce_check = true;
        cfg.disable_eip3607 = true;
        cfg.disable_block_gas_limit = true;
        cfg.tx_gas_limit_cap = Some(u64::MAX);
        // geth: a call that names no fee runs with a zero base fee (BASEFEE reads 0 too).
        let (fee_cap, tip) = fees(request);
        if fee_cap == 0 && tip.unwrap_or(0) == 0 {
            env.block_env.basefee = 0;
        }
        if request.max_fee_per_blob_gas.unwrap_or(0) == 0
            && let Some(blob) = env.block_env.blob_excess_gas_and_price.as_mut()
        {
            blob.blob_gasprice = 0;
        }
        Ok(env)
    }

    /// The block's own environment, with every transaction check a block applies.
    pub(crate) fn block_env(&self) -> Result<EvmEnv, CallError> {
        let parent_td = match self.header.number.checked_sub(1) {
            Some(parent) => self.tx.total_difficulty(parent)?.unwrap_or_default(),
            None => U256::ZERO,
        };
        let merged = self.spec.is_merged(parent_td, self.header.timestamp);
        let rules = self.spec.at_block(merged);
        let blob_params = self.spec.blob_params_at(self.header.timestamp);
        Ok(EvmEnv::for_eth_block(
            self.header,
            rules,
            self.spec.chain_id,
            blob_params,
        ))
    }

    pub(crate) fn database(&self) -> Result<CallDb<'_>, CallError> {
        let at = if self.is_head {
            StateAt::Latest
        } else {
            StateAt::Block(self.header.number)
        };
        let mut db = CacheDB::new(StateSnapshot::cached(
            self.tx,
            at,
            self.header.number,
            self.cache,
        ));
        for (address, change) in self.overrides {
            let mut info = match revm::DatabaseRef::basic_ref(&db.db, *address) {
                Ok(info) => info.unwrap_or_default(),
                Err(StateError(e)) => return Err(CallError::State(e)),
            };
            if let Some(balance) = change.balance {
                info.balance = balance;
            }
            if let Some(nonce) = change.nonce {
                info.nonce = nonce;
            }
            if let Some(code) = &change.code {
                let code = Bytecode::new_raw(code.clone());
                info.code_hash = code.hash_slow();
                info.code = Some(code);
            } else if info.code.is_none() && info.code_hash != revm::primitives::KECCAK_EMPTY {
                info.code = revm::DatabaseRef::code_by_hash_ref(&db.db, info.code_hash)
                    .map(Some)
                    .map_err(|StateError(e)| CallError::State(e))?;
            }
            db.insert_account_info(*address, info);
            match (&change.state, &change.state_diff) {
                (Some(_), Some(_)) => return Err(CallError::BothStateAndDiff(*address)),
                (Some(state), None) => db
                    .replace_account_storage(*address, words(state).collect())
                    .map_err(|StateError(e)| CallError::State(e))?,
                (None, Some(diff)) => {
                    for (slot, value) in words(diff) {
                        db.insert_account_storage(*address, slot, value)
                            .map_err(|StateError(e)| CallError::State(e))?;
                    }
                }
                (None, None) => {}
            }
        }
        Ok(db)
    }

    /// Runs `request` with exactly `gas` gas.
    pub fn run(&self, request: &CallRequest, gas: u64) -> Result<CallOutcome, CallError> {
        self.execute(&self.env(request)?, &self.database()?, request, gas, None)
    }

    /// Runs `request` with `gas` gas in `env` over a copy of `db` (execution loads accounts
    /// into it), recording accesses with `access` when given.
    ///
    /// EIP-7610 needs the inspector's creation hook, so a call runs uninspected (faster) only
    /// while it creates nothing: one whose own creation targets an address with storage runs
    /// inspected from the start, and one that runs CREATE or CREATE2 is run again inspected.
    fn execute(
        &self,
        env: &EvmEnv,
        db: &CallDb<'_>,
        request: &CallRequest,
        gas: u64,
        mut access: Option<&mut AccessListTracer>,
    ) -> Result<CallOutcome, CallError> {
        let chain_id = env.cfg_env.chain_id;
        let caller = request.from.unwrap_or_default();
        let nonce = call_nonce(db, request)?;
        let tx = tx_env(request, caller, nonce, gas, chain_id);
        let base_fee = env.block_env.basefee;
        let mut storage_error = None;
        let mut inspected = access.is_some()
            || (request.to.is_none()
                && crate::collision::call_has_storage(
                    db,
                    caller.create(nonce),
                    &mut storage_error,
                ));
        if let Some(e) = storage_error {
            return Err(CallError::State(e));
        }
        let clock = crate::call_clock::arm(self.deadline);
        let (result, storage_error) = loop {
            let inspector = CallInspector {
                access: access.as_deref_mut(),
                storage_error: None,
            };
            let mut inner = EthEvmFactory::default()
                .create_evm_with_inspector(db.clone(), env.clone(), inspector)
                .into_inner();
            crate::call_clock::install(inner.instruction.instruction_table_mut());
            let mut evm = EthEvm::new(inner, inspected);
            crate::overrides::move_precompiles(
                evm.components_mut().2,
                self.overrides,
                env.cfg_env.spec,
            )
            .map_err(|e| CallError::Invalid(e.to_string()))?;
            let result = evm.transact(tx.clone());
            if !inspected && clock.created() && !clock.expired() {
                inspected = true;
                clock.reset();
                continue;
            }
            break (result, evm.inspector_mut().storage_error.take());
        };
        if clock.expired() {
            return Err(CallError::Timeout(self.timeout));
        }
        if let Some(e) = storage_error {
            return Err(CallError::State(e));
        }
        let result = result.map_err(|e| match e {
            EVMError::Transaction(InvalidTransaction::GasPriceLessThanBasefee) => {
                CallError::Invalid(format!(
                    "max fee per gas less than block base fee: address {caller}, maxFeePerGas: {}, baseFee: {base_fee}",
                    fees(request).0
                ))
            }
            EVMError::Transaction(
                invalid @ InvalidTransaction::CallGasCostMoreThanGasLimit { .. },
            ) => CallError::IntrinsicGas(invalid_message(&invalid, caller)),
            EVMError::Transaction(invalid) => CallError::Invalid(invalid_message(&invalid, caller)),
            EVMError::Database(StateError(e)) => CallError::State(e),
            other => CallError::Invalid(other.to_string()),
        })?;
        let gas_used = result.result.tx_gas_used();
        Ok(match result.result {
            ExecutionResult::Success { output, .. } => CallOutcome::Success {
                output: output.into_data(),
                gas_used,
            },
            ExecutionResult::Revert { output, .. } => CallOutcome::Revert { output, gas_used },
            ExecutionResult::Halt { reason, .. } => CallOutcome::Halt { reason, gas_used },
        })
    }

    /// geth's eth_createAccessList: runs `request` with `gas` gas and the access list found so
    /// far until a run touches nothing new; the outcome is that last run's.
    pub fn create_access_list(
        &self,
        request: &CallRequest,
        gas: u64,
    ) -> Result<AccessListOutcome, CallError> {
        let env = self.env(request)?;
        let db = self.database()?;
        let caller = request.from.unwrap_or_default();
        let recipient = match request.to {
            Some(to) => to,
            None => caller.create(call_nonce(&db, request)?),
        };
        let mut excluded: HashSet<Address> = [caller, recipient].into();
        let precompiles = Precompiles::new(PrecompileSpecId::from_spec_id(env.cfg_env.spec));
        excluded.extend(precompiles.addresses().copied());
        for authorization in request.authorization_list.iter().flatten() {
            if let Ok(authority) = authorization.recover_authority() {
                excluded.insert(authority);
            }
        }
        let mut previous =
            AccessListTracer::new(excluded, &request.access_list.clone().unwrap_or_default());
        let mut request = request.clone();
        loop {
            let access_list = previous.access_list();
            request.access_list = Some(access_list.clone());
            let mut tracer = AccessListTracer::new(previous.excluded.clone(), &access_list);
            let outcome = self.execute(&env, &db, &request, gas, Some(&mut tracer))?;
            if tracer == previous {
                return Ok(AccessListOutcome {
                    access_list,
                    outcome,
                });
            }
            previous = tracer;
        }
    }

    /// geth's eth_estimateGas: the least gas (within 1.5%) with which the call succeeds,
    /// searched between the gas the call used and `cap`. Returns the failure at `cap`, if any.
    pub fn estimate_gas(
        &self,
        request: &CallRequest,
        cap: u64,
    ) -> Result<Result<u64, CallOutcome>, CallError> {
        let mut hi = cap;
        // The environment and the database with its overrides are the same for every run.
        let env = self.env(request)?;
        let db = self.database()?;
        let run = |gas: u64| self.execute(&env, &db, request, gas, None);
        // geth: a limit below the intrinsic cost (an authorization list's included) is a
        // failure to raise the limit from, not an error.
        let attempt = |gas: u64| match run(gas) {
            Err(CallError::IntrinsicGas(_)) => Ok(None),
            outcome => outcome.map(Some),
        };
        let account = |address: Address| {
            revm::DatabaseRef::basic_ref(&db, address).map_err(|StateError(e)| CallError::State(e))
        };
        // A plain transfer to an account without code: geth tries exactly 21000 first, and
        // goes on with the search if that fails for any reason.
        if request.input.is_empty()
            && let Some(to) = request.to
            && account(to)?.is_none_or(|info| info.code_hash == revm::primitives::KECCAK_EMPTY)
            && matches!(run(PLAIN_TRANSFER_GAS), Ok(CallOutcome::Success { .. }))
        {
            return Ok(Ok(PLAIN_TRANSFER_GAS));
        }
        // With a fee, the sender's balance bounds the gas it can buy.
        let (fee_cap, _) = fees(request);
        if fee_cap > 0 {
            let balance =
                account(request.from.unwrap_or_default())?.map_or(U256::ZERO, |info| info.balance);
            let available = balance.saturating_sub(request.value.unwrap_or_default());
            let allowance = available / U256::from(fee_cap);
            if allowance < U256::from(hi) {
                hi = allowance.to::<u64>();
            }
        }
        let Some(first) = attempt(hi)? else {
            // Even the highest limit is below the intrinsic cost: geth's "exceeds allowance".
            return Ok(Err(CallOutcome::Halt {
                reason: HaltReason::OutOfGas(revm::context::result::OutOfGasError::Basic),
                gas_used: hi,
            }));
        };
        let used = match &first {
            CallOutcome::Success { gas_used, .. } => *gas_used,
            _ => return Ok(Err(first)),
        };
        let mut lo = used.saturating_sub(1);
        // Most calls succeed with what they used plus the 63/64 reserve: try that first.
        let optimistic = (used + 2300) * 64 / 63;
        if optimistic < hi {
            match attempt(optimistic)? {
                Some(CallOutcome::Success { .. }) => hi = optimistic,
                _ => lo = optimistic,
            }
        }
        while lo + 1 < hi {
            if ((hi - lo) as f64) / (hi as f64) < 0.015 {
                break;
            }
            let mid = lo + (hi - lo) / 2;
            match attempt(mid)? {
                Some(CallOutcome::Success { .. }) => hi = mid,
                _ => lo = mid,
            }
        }
        Ok(Ok(hi))
    }
}

/// The nonce a call runs with: the one it names, else its sender's in `db`.
pub(crate) fn call_nonce(db: &CallDb<'_>, request: &CallRequest) -> Result<u64, CallError> {
    match request.nonce {
        Some(nonce) => Ok(nonce),
        None => Ok(
            revm::DatabaseRef::basic_ref(db, request.from.unwrap_or_default())
                .map_err(|StateError(e)| CallError::State(e))?
                .map_or(0, |info| info.nonce),
        ),
    }
}

/// Storage override entries as revm's words.
fn words(map: &HashMap<B256, B256>) -> impl Iterator<Item = (U256, U256)> + '_ {
    map.iter()
        .map(|(k, v)| (U256::from_be_bytes(k.0), U256::from_be_bytes(v.0)))
}

/// The fee cap and tip a request names (a legacy gas price is both).
fn fees(request: &CallRequest) -> (u128, Option<u128>) {
    match (request.gas_price, request.max_fee_per_gas) {
        (Some(price), _) => (price, Some(price)),
        (None, Some(cap)) => (cap, request.max_priority_fee_per_gas),
        (None, None) => (0, request.max_priority_fee_per_gas),
    }
}

pub(crate) fn tx_env(
    request: &CallRequest,
    caller: Address,
    nonce: u64,
    gas: u64,
    chain_id: u64,
) -> TxEnv {
    let (fee_cap, tip) = fees(request);
    let tx_type = if request.authorization_list.is_some() {
        4
    } else if request.blob_versioned_hashes.is_some() {
        3
    } else if request.max_fee_per_gas.is_some() || request.max_priority_fee_per_gas.is_some() {
        2
    } else if request.access_list.is_some() {
        1
    } else {
        0
    };
    let mut tx = TxEnv {
        tx_type,
        caller,
        gas_limit: gas,
        gas_price: fee_cap,
        kind: request.to.map_or(TxKind::Create, TxKind::Call),
        value: request.value.unwrap_or_default(),
        data: request.input.clone(),
        nonce,
        chain_id: Some(chain_id),
        access_list: request.access_list.clone().unwrap_or_default(),
        gas_priority_fee: if tx_type >= 2 {
            Some(tip.unwrap_or(0).min(fee_cap))
        } else {
            None
        },
        blob_hashes: request.blob_versioned_hashes.clone().unwrap_or_default(),
        max_fee_per_blob_gas: request.max_fee_per_blob_gas.unwrap_or(0),
        ..Default::default()
    };
    if let Some(list) = &request.authorization_list {
        tx.set_signed_authorization(list.clone());
    }
    tx
}

/// geth's message for a call that cannot start.
pub(crate) fn invalid_message(invalid: &InvalidTransaction, from: Address) -> String {
    match invalid {
        InvalidTransaction::LackOfFundForMaxFee { fee, balance } => format!(
            "insufficient funds for gas * price + value: address {from} have {balance} want {fee}"
        ),
        InvalidTransaction::PriorityFeeGreaterThanMaxFee => {
            "max priority fee per gas higher than max fee per gas".to_string()
        }
        InvalidTransaction::CallGasCostMoreThanGasLimit {
            initial_gas,
            gas_limit,
        } => format!("intrinsic gas too low: have {gas_limit}, want {initial_gas}"),
        InvalidTransaction::GasFloorMoreThanGasLimit {
            gas_floor,
            gas_limit,
        } => {
            format!("insufficient gas for floor data gas cost: have {gas_limit}, want {gas_floor}")
        }
        InvalidTransaction::BlobGasPriceGreaterThanMax { .. } => {
            "max fee per blob gas less than block blob gas fee".to_string()
        }
        other => other.to_string(),
    }
}

/// geth's wording for an exceptional halt.
pub fn halt_message(reason: &HaltReason) -> String {
    match reason {
        HaltReason::OutOfGas(_) => "out of gas",
        HaltReason::OpcodeNotFound | HaltReason::NotActivated => "invalid opcode",
        HaltReason::InvalidFEOpcode => "invalid opcode: INVALID",
        HaltReason::InvalidJump => "invalid jump destination",
        HaltReason::StackUnderflow => "stack underflow",
        HaltReason::StackOverflow => "stack limit reached 1024 (1023)",
        HaltReason::OutOfOffset => "return data out of bounds",
        HaltReason::CreateCollision => "contract address collision",
        HaltReason::NonceOverflow => "nonce uint64 overflow",
        HaltReason::CreateContractSizeLimit => "max code size exceeded",
        HaltReason::CreateContractStartingWithEF => "invalid code: must not begin with 0xef",
        HaltReason::CreateInitCodeSizeLimit => "max initcode size exceeded",
        HaltReason::StateChangeDuringStaticCall | HaltReason::CallNotAllowedInsideStatic => {
            "write protection"
        }
        HaltReason::OutOfFunds => "insufficient balance for transfer",
        HaltReason::CallTooDeep => "max call depth exceeded",
        HaltReason::PrecompileError | HaltReason::PrecompileErrorWithContext(_) => {
            "precompiled contract failed"
        }
        _ => return format!("{reason:?}"),
    }
    .to_string()
}
