//! Values stored in the tables and their byte encodings.

use crate::{Error, Result};
use alloy_primitives::{Address, B256, Log, U256};

/// An account as stored in `PlainAccounts` and `AccountHistory`: 72 fixed bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoredAccount {
    pub nonce: u64,
    pub balance: U256,
    pub code_hash: B256,
}

impl StoredAccount {
    pub const ENCODED_LEN: usize = 72;

    pub fn encode(&self) -> [u8; Self::ENCODED_LEN] {
        let mut out = [0u8; Self::ENCODED_LEN];
        out[..8].copy_from_slice(&self.nonce.to_be_bytes());
        out[8..40].copy_from_slice(&self.balance.to_be_bytes::<32>());
        out[40..].copy_from_slice(self.code_hash.as_slice());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Self> {
        if bytes.len() != Self::ENCODED_LEN {
            return Err(Error::Corrupt(format!(
                "account value has {} bytes, expected {}",
                bytes.len(),
                Self::ENCODED_LEN
            )));
        }
        let mut nonce = [0u8; 8];
        nonce.copy_from_slice(&bytes[..8]);
        Ok(Self {
            nonce: u64::from_be_bytes(nonce),
            balance: U256::from_be_slice(&bytes[8..40]),
            code_hash: B256::from_slice(&bytes[40..]),
        })
    }
}

/// What a receipt says about its transaction's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiptOutcome {
    /// Byzantium and later: success (true) or failure.
    Status(bool),
    /// Before Byzantium: the state root after the transaction.
    PostState(B256),
}

/// A receipt with everything the RPC shapes need that the block does not already hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredReceipt {
    pub tx_type: u8,
    pub outcome: ReceiptOutcome,
    pub cumulative_gas_used: u64,
    pub gas_used: u64,
    pub effective_gas_price: u128,
    pub contract_address: Option<Address>,
    /// Blob gas used and blob gas price, for blob transactions only.
    pub blob_gas: Option<(u64, u128)>,
    pub logs: Vec<Log>,
}

/// Where a transaction sits in the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxLocation {
    pub block_number: u64,
    pub index: u32,
}

impl TxLocation {
    pub fn encode(&self) -> [u8; 12] {
        let mut out = [0u8; 12];
        out[..8].copy_from_slice(&self.block_number.to_be_bytes());
        out[8..].copy_from_slice(&self.index.to_be_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Self> {
        if bytes.len() != 12 {
            return Err(Error::Corrupt(format!(
                "tx location has {} bytes",
                bytes.len()
            )));
        }
        Ok(Self {
            block_number: be_u64(&bytes[..8])?,
            index: u32::from_be_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]),
        })
    }
}

pub(crate) fn be_u64(bytes: &[u8]) -> Result<u64> {
    let arr: [u8; 8] = bytes
        .try_into()
        .map_err(|_| Error::Corrupt(format!("expected 8-byte number, found {}", bytes.len())))?;
    Ok(u64::from_be_bytes(arr))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::b256;

    #[test]
    fn account_round_trip() {
        let account = StoredAccount {
            nonce: 7,
            balance: U256::from(123456789u64),
            code_hash: b256!("0x1111111111111111111111111111111111111111111111111111111111111111"),
        };
        assert_eq!(StoredAccount::decode(&account.encode()).unwrap(), account);
        assert!(StoredAccount::decode(&[0u8; 10]).is_err());
    }
}
