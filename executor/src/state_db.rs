//! The one revm database adapter: the state after a given block, read from storage.

use alloy_primitives::{Address, B256, U256};
use quarry_storage::StorageTx;
use revm::{
    bytecode::Bytecode,
    database_interface::{DBErrorMarker, DatabaseRef},
    primitives::KECCAK_EMPTY,
    state::AccountInfo,
};
use signet_libmdbx::TransactionKind;

/// A storage error as revm sees it.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct StateError(#[from] pub quarry_storage::Error);

impl DBErrorMarker for StateError {}

/// Which state a snapshot reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateAt {
    /// The latest state in the transaction (including a writer's own uncommitted blocks).
    Latest,
    /// The state after this block, from the history tables.
    Block(u64),
}

/// The state of the chain at one point, as a revm `DatabaseRef`.
pub struct StateSnapshot<'tx, K: TransactionKind> {
    tx: &'tx StorageTx<K>,
    at: StateAt,
}

impl<K: TransactionKind> std::fmt::Debug for StateSnapshot<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSnapshot")
            .field("at", &self.at)
            .finish_non_exhaustive()
    }
}

impl<'tx, K: TransactionKind> StateSnapshot<'tx, K> {
    pub fn new(tx: &'tx StorageTx<K>, at: StateAt) -> Self {
        Self { tx, at }
    }
}

impl<K: TransactionKind> DatabaseRef for StateSnapshot<'_, K> {
    type Error = StateError;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, StateError> {
        let account = match self.at {
            StateAt::Latest => self.tx.account(&address)?,
            StateAt::Block(n) => self.tx.account_at(&address, n)?,
        };
        Ok(account.map(|a| AccountInfo {
            balance: a.balance,
            nonce: a.nonce,
            code_hash: a.code_hash,
            account_id: None,
            code: None,
        }))
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, StateError> {
        if code_hash == KECCAK_EMPTY {
            return Ok(Bytecode::default());
        }
        match self.tx.bytecode(&code_hash)? {
            Some(code) => Ok(Bytecode::new_raw(code)),
            None => Err(StateError(quarry_storage::Error::Corrupt(format!(
                "bytecode {code_hash} is referenced by an account but not stored"
            )))),
        }
    }

    fn storage_ref(&self, address: Address, index: U256) -> Result<U256, StateError> {
        let slot = B256::from(index);
        Ok(match self.at {
            StateAt::Latest => self.tx.storage(&address, &slot)?,
            StateAt::Block(n) => self.tx.storage_at(&address, &slot, n)?,
        })
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, StateError> {
        Ok(self.tx.canonical_hash(number)?.unwrap_or_default())
    }
}
