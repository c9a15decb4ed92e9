//! EIP-7610: creating a contract at an address that already has storage is a collision, like
//! one with a nonce or code. revm checks nonce and code only, so execution runs with an
//! inspector that answers such a creation as revm answers a collision: the creator's nonce
//! still goes up, the address becomes warm, and the creation fails consuming all its gas.

use crate::state_db::StateSnapshot;
use quarry_storage::Access;
use revm::{
    Inspector,
    context::{ContextTr, JournalTr},
    context_interface::journaled_state::account::JournaledAccountTr,
    database::{CacheDB, State, WrapDatabaseRef, in_memory_db::AccountState},
    interpreter::{
        CallInputs, CallOutcome, CreateInputs, CreateOutcome, Gas, InstructionResult,
        InterpreterResult, interpreter::EthInterpreter,
    },
    primitives::{Address, Bytes, KECCAK_EMPTY, U256},
};

/// revm's call depth limit.
const CALL_STACK_LIMIT: usize = 1024;

/// revm's answer to `inputs` if it creates at an address with storage, which `has_storage`
/// tells from the database as execution has left it so far; `None` leaves the creation to
/// revm (including every creation that fails before its address is taken).
pub(crate) fn storage_collision<CTX: ContextTr>(
    context: &mut CTX,
    inputs: &CreateInputs,
    has_storage: impl FnOnce(&CTX::Db, Address) -> bool,
) -> Option<CreateOutcome> {
    let journal = context.journal_mut();
    if journal.depth() > CALL_STACK_LIMIT {
        return None;
    }
    let caller = journal.load_account(inputs.caller()).ok()?.data;
    if caller.info.balance < inputs.value() || caller.info.nonce == u64::MAX {
        return None;
    }
    let address = inputs.created_address(caller.info.nonce);
    if !has_storage(context.db(), address) {
        return None;
    }
    let journal = context.journal_mut();
    // A nonce or code is revm's own collision.
    let target = journal.load_account(address).ok()?.data;
    if target.is_loaded_as_not_existing()
        || target.info.nonce != 0
        || target.info.code_hash != KECCAK_EMPTY
    {
        return None;
    }
    journal
        .load_account_mut(inputs.caller())
        .ok()?
        .data
        .bump_nonce();
    Some(CreateOutcome::new(
        InterpreterResult::new(
            InstructionResult::CreateCollision,
            Bytes::new(),
            Gas::new_with_regular_gas_and_reservoir(inputs.gas_limit(), inputs.reservoir()),
        ),
        None,
    ))
}

/// Block execution's inspector: storage as the block's earlier transactions left it; and,
/// when `frames` is set, every address a call frame names (the trace index's entries).
#[derive(Debug, Default)]
pub struct StorageCollision {
    /// A database error met while checking, reported after the transaction.
    pub error: Option<quarry_storage::Error>,
    /// The caller, target and code address of every call, the creator and created address
    /// of every creation, the contract and beneficiary of every self-destruct.
    pub frames: Option<Vec<Address>>,
}

type BlockDb<'s, 't, K> = &'s mut State<WrapDatabaseRef<StateSnapshot<'t, K>>>;

impl<'s, 't: 's, CTX, K> Inspector<CTX, EthInterpreter> for StorageCollision
where
    K: Access + 't,
    CTX: ContextTr<Db = BlockDb<'s, 't, K>>,
{
    fn create(&mut self, context: &mut CTX, inputs: &mut CreateInputs) -> Option<CreateOutcome> {
        storage_collision(context, inputs, |state, address| {
            // The block's own record, when it knows the whole storage (the account was created
            // or destroyed in the block); else the state before the block plus its writes.
            let cached = state.cache.accounts.get(&address);
            let written = cached
                .and_then(|account| account.account.as_ref())
                .is_some_and(|account| account.storage.values().any(|v| !v.is_zero()));
            if written || cached.is_some_and(|account| account.status.is_storage_known()) {
                return written;
            }
            state.database.0.has_storage(&address).unwrap_or_else(|e| {
                self.error = Some(e);
                false
            })
        })
    }

    fn call(&mut self, _context: &mut CTX, inputs: &mut CallInputs) -> Option<CallOutcome> {
        if let Some(frames) = &mut self.frames {
            frames.extend([
                inputs.caller,
                inputs.target_address,
                inputs.bytecode_address,
            ]);
        }
        None
    }

    fn create_end(
        &mut self,
        _context: &mut CTX,
        inputs: &CreateInputs,
        outcome: &mut CreateOutcome,
    ) {
        if let Some(frames) = &mut self.frames {
            frames.push(inputs.caller());
            frames.extend(outcome.address);
        }
    }

    fn selfdestruct(&mut self, contract: Address, target: Address, _value: U256) {
        if let Some(frames) = &mut self.frames {
            frames.extend([contract, target]);
        }
    }
}

/// eth_call's check: storage as the call's overrides and its own execution left it, else as
/// the state it runs on holds it.
pub(crate) fn call_has_storage<K: Access>(
    db: &CacheDB<StateSnapshot<'_, K>>,
    address: Address,
    error: &mut Option<quarry_storage::Error>,
) -> bool {
    if let Some(account) = db.cache.accounts.get(&address) {
        let written = account.storage.values().any(|v| !v.is_zero());
        if written
            || matches!(
                account.account_state,
                AccountState::StorageCleared | AccountState::NotExisting
            )
        {
            return written;
        }
    }
    db.db.has_storage(&address).unwrap_or_else(|e| {
        *error = Some(e);
        false
    })
}

/// EIP-7610 for a traced call: `call_has_storage` as an inspector of its own.
#[derive(Debug, Default)]
pub struct CallCollision {
    /// A database error met while checking, reported after the call.
    pub error: Option<quarry_storage::Error>,
}

impl<'a, CTX, K> Inspector<CTX, EthInterpreter> for CallCollision
where
    K: Access + 'a,
    CTX: ContextTr<Db = CacheDB<StateSnapshot<'a, K>>>,
{
    fn create(&mut self, context: &mut CTX, inputs: &mut CreateInputs) -> Option<CreateOutcome> {
        let error = &mut self.error;
        storage_collision(context, inputs, |db, address| {
            call_has_storage(db, address, error)
        })
    }
}
