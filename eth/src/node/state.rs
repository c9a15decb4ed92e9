//! Accounts and storage after a block: eth_getBalance, eth_getTransactionCount, eth_getCode
//! and eth_getStorageAt.

use super::{Node, Reads, Snapshot};
use crate::{
    params::{BlockId, BlockTag},
    rpc_error::{Result, RpcError},
};
use alloy_consensus::constants::KECCAK_EMPTY;
use alloy_primitives::{Address, B256, Bytes, U64, U256};
use quarry_storage::StoredAccount;

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
        let Some(account) = self.account_at(tx, address, at)? else {
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
                        // Only a stored block's slots are cached.
                        BlockId::Tag(BlockTag::Number(number)) => number,
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
}
