//! The one revm database adapter: the state after a given block, read from storage.

use alloy_primitives::{Address, B256, U256};
use quarry_storage::Access;
use quarry_storage::StorageTx;
use revm::{
    bytecode::Bytecode,
    database_interface::{DBErrorMarker, DatabaseRef},
    primitives::KECCAK_EMPTY,
    state::AccountInfo,
};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

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
#[derive(Clone)]
pub struct StateSnapshot<'tx, K: Access> {
    tx: &'tx StorageTx<K>,
    at: StateAt,
    /// Shared across snapshots, with the number of the block whose state `at` is.
    cache: Option<(&'tx StateCache, u64)>,
}

/// Caches what calls read, shared between them: analysed bytecode by code hash, and accounts and
/// slots by block number. Bytecode is a fact about its hash on every branch. An entry keyed by
/// block number is a fact only until an unwind removes that block (another block may then take
/// the number): whoever shares one cache must stop using it once it sees an unwind, and start
/// over with [`StateCache::after_unwind`]. Each map is emptied when it fills up.
#[derive(Debug, Default)]
pub struct StateCache {
    /// Shared with the caches that follow this one after unwinds.
    code: Arc<Mutex<HashMap<B256, Bytecode>>>,
    accounts: Mutex<HashMap<(u64, Address), Option<AccountInfo>>>,
    slots: Mutex<HashMap<(u64, Address, U256), U256>>,
}

/// Entries per map before it is emptied.
const STATE_CACHE_ENTRIES: usize = 1 << 16;

fn lookup<K: std::hash::Hash + Eq, V: Clone>(map: &Mutex<HashMap<K, V>>, key: &K) -> Option<V> {
    map.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(key)
        .cloned()
}

fn remember<K: std::hash::Hash + Eq, V>(map: &Mutex<HashMap<K, V>>, key: K, value: V) {
    let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
    if map.len() >= STATE_CACHE_ENTRIES {
        map.clear();
    }
    map.insert(key, value);
}

fn cached<K: std::hash::Hash + Eq, V: Clone>(
    map: &Mutex<HashMap<K, V>>,
    key: K,
    read: impl FnOnce() -> Result<V, StateError>,
) -> Result<V, StateError> {
    if let Some(value) = lookup(map, &key) {
        return Ok(value);
    }
    let value = read()?;
    remember(map, key, value.clone());
    Ok(value)
}

impl StateCache {
    /// A cache for the chain after an unwind: the same bytecode (shared, since a code hash
    /// names the same code on any branch), and no account or slot by block number. This one is
    /// left to the readers that still hold it, which read the chain from before the unwind.
    pub fn after_unwind(&self) -> Self {
        Self {
            code: self.code.clone(),
            accounts: Mutex::default(),
            slots: Mutex::default(),
        }
    }

    /// The value of `address`'s slot `index` after block `number`, if it has been read.
    pub fn slot(&self, number: u64, address: Address, index: U256) -> Option<U256> {
        lookup(&self.slots, &(number, address, index))
    }

    /// Records a slot's value after stored block `number`, read from the database.
    pub fn remember_slot(&self, number: u64, address: Address, index: U256, value: U256) {
        remember(&self.slots, (number, address, index), value);
    }
}

impl<K: Access> std::fmt::Debug for StateSnapshot<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSnapshot")
            .field("at", &self.at)
            .finish_non_exhaustive()
    }
}

impl<'tx, K: Access> StateSnapshot<'tx, K> {
    pub fn new(tx: &'tx StorageTx<K>, at: StateAt) -> Self {
        Self {
            tx,
            at,
            cache: None,
        }
    }

    /// A snapshot of the state after block `number` (`at` says where that state is read from)
    /// that shares what it reads through `cache`.
    pub fn cached(tx: &'tx StorageTx<K>, at: StateAt, number: u64, cache: &'tx StateCache) -> Self {
        Self {
            tx,
            at,
            cache: Some((cache, number)),
        }
    }

    /// Whether the account has any non-zero storage slot in this state (EIP-7610).
    pub fn has_storage(&self, address: &Address) -> quarry_storage::Result<bool> {
        match self.at {
            StateAt::Latest => self.tx.has_storage(address),
            StateAt::Block(n) => self.tx.has_storage_at(address, n),
        }
    }

    fn read_account(&self, address: Address) -> Result<Option<AccountInfo>, StateError> {
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

    fn read_code(&self, code_hash: B256) -> Result<Bytecode, StateError> {
        match self.tx.bytecode(&code_hash)? {
            Some(code) => Ok(Bytecode::new_raw(code)),
            None => Err(StateError(quarry_storage::Error::Corrupt(format!(
                "bytecode {code_hash} is referenced by an account but not stored"
            )))),
        }
    }

    fn read_slot(&self, address: Address, index: U256) -> Result<U256, StateError> {
        let slot = B256::from(index);
        Ok(match self.at {
            StateAt::Latest => self.tx.storage(&address, &slot)?,
            StateAt::Block(n) => self.tx.storage_at(&address, &slot, n)?,
        })
    }
}

impl<K: Access> DatabaseRef for StateSnapshot<'_, K> {
    type Error = StateError;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, StateError> {
        match self.cache {
            Some((cache, block)) => cached(&cache.accounts, (block, address), || {
                self.read_account(address)
            }),
            None => self.read_account(address),
        }
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, StateError> {
        if code_hash == KECCAK_EMPTY {
            return Ok(Bytecode::default());
        }
        match self.cache {
            Some((cache, _)) => cached(&cache.code, code_hash, || self.read_code(code_hash)),
            None => self.read_code(code_hash),
        }
    }

    fn storage_ref(&self, address: Address, index: U256) -> Result<U256, StateError> {
        match self.cache {
            Some((cache, block)) => cached(&cache.slots, (block, address, index), || {
                self.read_slot(address, index)
            }),
            None => self.read_slot(address, index),
        }
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, StateError> {
        Ok(self.tx.canonical_hash(number)?.unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::keccak256;
    use quarry_storage::{AccountChange, Database, StoredAccount, WriteTx};

    fn change(block_balance: u64, slot_value: u64) -> AccountChange {
        AccountChange {
            address: Address::repeat_byte(1),
            account: Some(StoredAccount {
                nonce: 0,
                balance: U256::from(block_balance),
                code_hash: KECCAK_EMPTY,
            }),
            wiped: false,
            storage: vec![(B256::ZERO, U256::from(slot_value))],
        }
    }

    /// Writes `change` as block `block`'s, as an import does: the plain state, and the state
    /// trie's leaves with their history (the state history).
    fn import(tx: &WriteTx, block: u64, change: AccountChange) {
        tx.apply_state_changes(block, std::slice::from_ref(&change), &[])
            .unwrap();
        let hashed = keccak256(change.address);
        for (slot, value) in &change.storage {
            tx.put_hashed_slot(&hashed, &keccak256(slot), *value)
                .unwrap();
        }
        let leaf = change.account.map(|account| alloy_trie::TrieAccount {
            nonce: account.nonce,
            balance: account.balance,
            // Not what the slots hash to: these reads never look at it.
            storage_root: B256::ZERO,
            code_hash: account.code_hash,
        });
        tx.put_hashed_account(&hashed, leaf.as_ref()).unwrap();
    }

    /// A shared cache answers each block with that block's state, whichever was read first.
    #[test]
    fn the_cache_keeps_blocks_apart() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        tx.start_trie_history(1, 1).unwrap();
        import(&tx, 1, change(10, 100));
        import(&tx, 2, change(20, 200));
        tx.commit().unwrap();
        let tx = db.reader().unwrap();
        let cache = StateCache::default();
        let address = Address::repeat_byte(1);
        for _ in 0..2 {
            for (block, at, balance, slot) in [
                (2, StateAt::Latest, 20, 200),
                (1, StateAt::Block(1), 10, 100),
            ] {
                let snapshot = StateSnapshot::cached(&tx, at, block, &cache);
                let account = snapshot.basic_ref(address).unwrap().unwrap();
                assert_eq!(account.balance, U256::from(balance));
                assert_eq!(
                    snapshot.storage_ref(address, U256::ZERO).unwrap(),
                    U256::from(slot)
                );
            }
        }
        assert_eq!(cache.accounts.lock().unwrap().len(), 2);
    }

    /// The cache that follows an unwind knows no account or slot by block number, and shares the
    /// bytecode; the one it follows keeps its entries for the readers still holding it.
    #[test]
    fn after_an_unwind_only_the_bytecode_is_kept() {
        let address = Address::repeat_byte(1);
        let code_hash = B256::repeat_byte(2);
        let cache = StateCache::default();
        cache.remember_slot(1, address, U256::ZERO, U256::from(5));
        cache.accounts.lock().unwrap().insert((1, address), None);
        remember(
            &cache.code,
            code_hash,
            Bytecode::new_raw([0x60, 0x00].into()),
        );

        let next = cache.after_unwind();
        assert_eq!(next.slot(1, address, U256::ZERO), None);
        assert!(next.accounts.lock().unwrap().is_empty());
        assert!(lookup(&next.code, &code_hash).is_some());
        assert_eq!(cache.slot(1, address, U256::ZERO), Some(U256::from(5)));
        // Bytecode either learns is shared with the other.
        remember(&next.code, B256::repeat_byte(3), Bytecode::default());
        assert!(lookup(&cache.code, &B256::repeat_byte(3)).is_some());
    }
}
