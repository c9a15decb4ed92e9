//! EIP-7610: creating a contract at an address that already has storage is a collision, like
//! one with a nonce or code. revm checks nonce and code only, so block execution runs with this
//! inspector, which answers such a creation as revm answers a collision: the creator's nonce
//! still goes up, the address becomes warm, and the creation fails consuming all its gas.

use crate::state_db::StateSnapshot;
use quarry_storage::StorageTx;
use revm::{
    Inspector,
    context::{ContextTr, JournalTr},
    context_interface::journaled_state::account::JournaledAccountTr,
    database::{State, WrapDatabaseRef},
    interpreter::{
        CreateInputs, CreateOutcome, Gas, InstructionResult, InterpreterResult,
        interpreter::EthInterpreter,
    },
    primitives::{Address, Bytes, KECCAK_EMPTY},
};
use signet_libmdbx::TransactionKind;

/// revm's call depth limit.
const CALL_STACK_LIMIT: usize = 1024;

pub struct StorageCollision<'t, K: TransactionKind> {
    /// The state before the block: storage-only accounts come from there (genesis, or a
    /// creation before EIP-161 whose init code stored values and returned no code).
    tx: &'t StorageTx<K>,
    /// A database error met while checking, reported after the transaction.
    pub error: Option<quarry_storage::Error>,
}

impl<'t, K: TransactionKind> StorageCollision<'t, K> {
    pub fn new(tx: &'t StorageTx<K>) -> Self {
        Self { tx, error: None }
    }
}

impl<K: TransactionKind> StorageCollision<'_, K> {
    /// Whether `address` has storage as the block's earlier transactions left it: the block's
    /// own record when it knows the whole storage (the account was created or destroyed in the
    /// block), else the state before the block plus what the block wrote.
    fn has_storage(
        &mut self,
        state: &State<WrapDatabaseRef<StateSnapshot<'_, K>>>,
        address: Address,
    ) -> bool {
        let cached = state.cache.accounts.get(&address);
        let written = cached
            .and_then(|account| account.account.as_ref())
            .is_some_and(|account| account.storage.values().any(|value| !value.is_zero()));
        if written || cached.is_some_and(|account| account.status.is_storage_known()) {
            return written;
        }
        self.tx.has_storage(&address).unwrap_or_else(|e| {
            self.error = Some(e);
            false
        })
    }
}

impl<'s, 't: 's, CTX, K> Inspector<CTX, EthInterpreter> for StorageCollision<'t, K>
where
    K: TransactionKind,
    CTX: ContextTr<Db = &'s mut State<WrapDatabaseRef<StateSnapshot<'t, K>>>>,
{
    fn create(&mut self, context: &mut CTX, inputs: &mut CreateInputs) -> Option<CreateOutcome> {
        // Creations that fail before the address is taken are revm's to answer.
        let journal = context.journal_mut();
        if journal.depth() > CALL_STACK_LIMIT {
            return None;
        }
        let caller = journal.load_account(inputs.caller()).ok()?.data;
        if caller.info.balance < inputs.value() || caller.info.nonce == u64::MAX {
            return None;
        }
        let nonce = caller.info.nonce;
        let address = inputs.created_address(nonce);
        if !self.has_storage(context.db(), address) {
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
}
