//! Accounts and storage after a block: eth_getBalance, eth_getTransactionCount, eth_getCode,
//! eth_getStorageAt, eth_getAccount and eth_getAccountInfo.

use super::{Node, Reads, Snapshot};
use crate::{
    params::{BlockId, BlockTag},
    rpc_error::{Result, RpcError},
};
use alloy_consensus::constants::KECCAK_EMPTY;
use alloy_primitives::{Address, B256, Bytes, U64, U256, keccak256};
use alloy_trie::TrieAccount;
use quarry_executor::ProofState;
use quarry_storage::{Leaf, StoredAccount, TrieId};
use serde::Serialize;

/// eth_getAccount's answer, in reth's shape: the account's fields as the state trie holds them.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountJson {
    balance: U256,
    nonce: U64,
    code_hash: B256,
    storage_root: B256,
}

/// eth_getAccountInfo's answer, in reth's shape: zeros and empty code for an account that
/// does not exist.
#[derive(Debug, Serialize)]
pub struct AccountInfoJson {
    balance: U256,
    nonce: U64,
    code: Bytes,
}

impl Node {
    /// The account `address` after block `at` (`None`: it does not exist).
    fn account_at(
        &self,
        tx: &Snapshot,
        address: Address,
        at: BlockId,
    ) -> Result<Option<StoredAccount>> {
        let (number, is_head) = self.state_block(tx, at)?;
        Ok(if is_head {
            tx.account(&address)?
        } else {
            tx.account_at(&address, number)?
        })
    }

    /// eth_getBalance: zero for an account that does not exist.
    pub fn balance(&self, tx: &Snapshot, address: Address, at: BlockId) -> Result<U256> {
        Ok(self
            .account_at(tx, address, at)?
            .map_or(U256::ZERO, |account| account.balance))
    }

    /// eth_getTransactionCount: the account's nonce.
    pub fn transaction_count(&self, tx: &Snapshot, address: Address, at: BlockId) -> Result<U64> {
        Ok(U64::from(
            self.account_at(tx, address, at)?
                .map_or(0, |account| account.nonce),
        ))
    }

    /// eth_getCode: `0x` for an account without code (an EIP-7702 account shows its
    /// delegation designator).
    pub fn code(&self, tx: &Snapshot, address: Address, at: BlockId) -> Result<Bytes> {
        let account = self.account_at(tx, address, at)?;
        self.code_of(tx, account.as_ref())
    }

    /// The code of `account` (`0x` for none, or one without code).
    fn code_of(&self, tx: &Snapshot, account: Option<&StoredAccount>) -> Result<Bytes> {
        let Some(account) = account else {
            return Ok(Bytes::new());
        };
        if account.code_hash == KECCAK_EMPTY || account.code_hash.is_zero() {
            return Ok(Bytes::new());
        }
        tx.bytecode(&account.code_hash)?.ok_or_else(|| {
            RpcError::Storage(quarry_storage::Error::Corrupt(format!(
                "no bytecode stored for code hash {}",
                account.code_hash
            )))
        })
    }

    /// The 32-byte value of `slot` of `address` after block `at`. Values read are kept in the
    /// state cache that calls share; from memory, `latest` and block numbers are answered.
    pub fn storage_at(
        &self,
        reads: &Reads,
        address: Address,
        slot: B256,
        at: BlockId,
    ) -> Result<Option<B256>> {
        let index = U256::from_be_bytes(slot.0);
        let tx = match reads {
            Reads::Cache => {
                let value = self.in_memory(|memory| {
                    let number = match at {
                        BlockId::Tag(BlockTag::Latest | BlockTag::Pending) => memory.head?,
                        // Only a stored block's slots are cached; a pruned one's are refused.
                        BlockId::Tag(BlockTag::Number(number)) if number >= memory.oldest_state => {
                            number
                        }
                        _ => return None,
                    };
                    memory.state.slot(number, address, index)
                })?;
                return Ok(value.map(B256::from));
            }
            Reads::Snapshot(tx) => tx,
        };
        let (number, is_head) = self.state_block(tx, at)?;
        let value = if is_head {
            tx.storage(&address, &slot)?
        } else {
            tx.storage_at(&address, &slot, number)?
        };
        tx.state.remember_slot(number, address, index, value);
        Ok(Some(B256::from(value)))
    }

    /// eth_getAccount: the account's trie leaf after block `at` (`null`: it does not exist),
    /// with the storage root eth_getProof's `storageHash` proves.
    pub fn account(
        &self,
        tx: &Snapshot,
        address: Address,
        at: BlockId,
    ) -> Result<Option<AccountJson>> {
        let (number, is_head) = self.state_block(tx, at)?;
        let leaf = self.trie_account_at(tx, address, number, is_head)?;
        Ok(leaf.map(|leaf| AccountJson {
            balance: leaf.balance,
            nonce: U64::from(leaf.nonce),
            code_hash: leaf.code_hash,
            storage_root: leaf.storage_root,
        }))
    }

    /// The account's leaf in the state trie after block `number`: read from the leaf history
    /// where it covers the block (two seeks), unless the changeset there leaves out the storage
    /// root (an import's coarse window taken whole), which is then walked from the account's
    /// storage trie; before the leaf history (a datadir from a layout without one), proved as
    /// eth_getProof proves it, within `proof_window`.
    fn trie_account_at(
        &self,
        tx: &Snapshot,
        address: Address,
        number: u64,
        is_head: bool,
    ) -> Result<Option<TrieAccount>> {
        let hashed = keccak256(address);
        let from = tx.state_history_from()?;
        if is_head || from.is_some_and(|from| number.saturating_add(1) >= from) {
            let mut leaves =
                tx.trie_leaves_after(TrieId::Accounts, (!is_head).then_some(number))?;
            return match leaves.get(&hashed) {
                Ok(Some(Leaf::Account(account))) => Ok(Some(account)),
                Ok(Some(Leaf::Slot(_))) => Err(RpcError::Internal(format!(
                    "the accounts trie holds a storage slot at {hashed}"
                ))),
                Ok(None) => Ok(None),
                Err(quarry_storage::Error::StorageRootNotRecorded { .. }) => {
                    // From the latest trie the walk's cost follows the blocks since: bounded as
                    // a proof's is.
                    if !tx.trie_history_covers(number)? {
                        self.check_proof_window(tx, number)?;
                    }
                    Ok(quarry_executor::trie_account_after(tx, address, number)?)
                }
                Err(err) => Err(err.into()),
            };
        }
        let older = self.older_state(tx, number)?;
        let state: ProofState = older.state();
        Ok(quarry_executor::account_proof(tx, state, address, &[])?.account)
    }

    /// eth_getAccountInfo: balance, nonce and code after block `at`, in one call (what a fork
    /// asks for each account it touches).
    pub fn account_info(
        &self,
        tx: &Snapshot,
        address: Address,
        at: BlockId,
    ) -> Result<AccountInfoJson> {
        let account = self.account_at(tx, address, at)?;
        let code = self.code_of(tx, account.as_ref())?;
        Ok(AccountInfoJson {
            balance: account.as_ref().map_or(U256::ZERO, |a| a.balance),
            nonce: U64::from(account.map_or(0, |a| a.nonce)),
            code,
        })
    }
}
