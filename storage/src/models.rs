//! Values stored in the tables and their byte encodings.

use crate::{Error, Result};
use alloy_primitives::{Address, B256, Bytes, Log, U256};
use alloy_rlp::{Decodable, Encodable, RlpDecodable, RlpEncodable};

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

/// The RLP shape of `StoredReceipt`: options become empty byte strings.
#[derive(RlpEncodable, RlpDecodable)]
struct ReceiptRlp {
    tx_type: u8,
    outcome: Bytes,
    cumulative_gas_used: u64,
    gas_used: u64,
    effective_gas_price: u128,
    contract_address: Bytes,
    blob_gas_used: Bytes,
    blob_gas_price: Bytes,
    logs: Vec<Log>,
}

impl StoredReceipt {
    fn to_rlp(&self) -> ReceiptRlp {
        let outcome = match self.outcome {
            ReceiptOutcome::Status(ok) => Bytes::from(vec![u8::from(ok)]),
            ReceiptOutcome::PostState(root) => Bytes::copy_from_slice(root.as_slice()),
        };
        let (blob_gas_used, blob_gas_price) = match self.blob_gas {
            Some((used, price)) => (
                Bytes::copy_from_slice(&used.to_be_bytes()),
                Bytes::copy_from_slice(&price.to_be_bytes()),
            ),
            None => (Bytes::new(), Bytes::new()),
        };
        ReceiptRlp {
            tx_type: self.tx_type,
            outcome,
            cumulative_gas_used: self.cumulative_gas_used,
            gas_used: self.gas_used,
            effective_gas_price: self.effective_gas_price,
            contract_address: self
                .contract_address
                .map(|a| Bytes::copy_from_slice(a.as_slice()))
                .unwrap_or_default(),
            blob_gas_used,
            blob_gas_price,
            logs: self.logs.clone(),
        }
    }

    fn from_rlp(r: ReceiptRlp) -> Result<Self> {
        let outcome = match r.outcome.len() {
            1 => ReceiptOutcome::Status(r.outcome[0] == 1),
            32 => ReceiptOutcome::PostState(B256::from_slice(&r.outcome)),
            n => return Err(Error::Corrupt(format!("receipt outcome has {n} bytes"))),
        };
        let contract_address = match r.contract_address.len() {
            0 => None,
            20 => Some(Address::from_slice(&r.contract_address)),
            n => return Err(Error::Corrupt(format!("contract address has {n} bytes"))),
        };
        let blob_gas = match (r.blob_gas_used.len(), r.blob_gas_price.len()) {
            (0, 0) => None,
            (8, 16) => {
                let mut used = [0u8; 8];
                used.copy_from_slice(&r.blob_gas_used);
                let mut price = [0u8; 16];
                price.copy_from_slice(&r.blob_gas_price);
                Some((u64::from_be_bytes(used), u128::from_be_bytes(price)))
            }
            _ => return Err(Error::Corrupt("malformed receipt blob gas".into())),
        };
        Ok(Self {
            tx_type: r.tx_type,
            outcome,
            cumulative_gas_used: r.cumulative_gas_used,
            gas_used: r.gas_used,
            effective_gas_price: r.effective_gas_price,
            contract_address,
            blob_gas,
            logs: r.logs,
        })
    }

    /// Encodes a block's receipts as one RLP list.
    pub fn encode_list(receipts: &[StoredReceipt]) -> Vec<u8> {
        let rlp: Vec<ReceiptRlp> = receipts.iter().map(StoredReceipt::to_rlp).collect();
        let mut out = Vec::with_capacity(rlp.length());
        rlp.encode(&mut out);
        out
    }

    pub fn decode_list(mut bytes: &[u8]) -> Result<Vec<StoredReceipt>> {
        let rlp = Vec::<ReceiptRlp>::decode(&mut bytes)
            .map_err(|e| Error::Corrupt(format!("receipts: {e}")))?;
        rlp.into_iter().map(StoredReceipt::from_rlp).collect()
    }
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
    use alloy_primitives::{LogData, address, b256};

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

    #[test]
    fn receipts_round_trip() {
        let receipts = vec![
            StoredReceipt {
                tx_type: 0,
                outcome: ReceiptOutcome::PostState(B256::repeat_byte(9)),
                cumulative_gas_used: 21000,
                gas_used: 21000,
                effective_gas_price: 1,
                contract_address: None,
                blob_gas: None,
                logs: vec![],
            },
            StoredReceipt {
                tx_type: 3,
                outcome: ReceiptOutcome::Status(false),
                cumulative_gas_used: 50000,
                gas_used: 29000,
                effective_gas_price: 7,
                contract_address: Some(address!("0x00000000000000000000000000000000000000aa")),
                blob_gas: Some((131072, 1)),
                logs: vec![Log {
                    address: Address::repeat_byte(1),
                    data: LogData::new_unchecked(vec![B256::repeat_byte(2)], Bytes::from(vec![3])),
                }],
            },
        ];
        let encoded = StoredReceipt::encode_list(&receipts);
        assert_eq!(StoredReceipt::decode_list(&encoded).unwrap(), receipts);
    }
}
