//! eth_sendRawTransaction's checks before anything is sent upstream: the bytes decode as one
//! signed transaction in its network encoding (EIP-2718, blob transactions with their
//! sidecar), the signature recovers a sender, and the transaction is for this network's chain.
//! What a node decides with its state and pool (nonce, balance, fees, duplicates) is left to the
//! upstream, whose answer the caller gets verbatim.

use crate::rpc_error::{Result, RpcError};
use alloy_consensus::{
    EthereumTxEnvelope, Transaction, TxEip4844WithSidecar, transaction::SignerRecoverable,
};
use alloy_eips::{eip2718::Decodable2718, eip7594::BlobTransactionSidecarVariant};
use alloy_primitives::{Address, B256};

/// A transaction as a node's RPC accepts it: blob transactions carry their sidecar, of either
/// fork's kind.
type NetworkTransaction = EthereumTxEnvelope<TxEip4844WithSidecar<BlobTransactionSidecarVariant>>;

/// What the checks found: enough to log and count the transaction without its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedTransaction {
    pub hash: B256,
    pub sender: Address,
    pub nonce: u64,
}

/// Checks `bytes` as eth_sendRawTransaction's argument for the chain `chain_id`. A legacy
/// transaction without a chain id (before EIP-155) passes: whether to take it is the upstream's
/// choice.
pub fn check_raw_transaction(bytes: &[u8], chain_id: u64) -> Result<CheckedTransaction> {
    let invalid = |reason: String| RpcError::InvalidTransaction(reason);
    if bytes.is_empty() {
        return Err(invalid(
            "the transaction is empty: no bytes to decode".into(),
        ));
    }
    let mut rest = bytes;
    let transaction = NetworkTransaction::decode_2718(&mut rest).map_err(|e| {
        invalid(format!(
            "the transaction does not decode ({} bytes, first byte {:#04x}): {e}",
            bytes.len(),
            bytes[0]
        ))
    })?;
    if !rest.is_empty() {
        return Err(invalid(format!(
            "{} bytes follow the transaction's {} bytes",
            rest.len(),
            bytes.len() - rest.len()
        )));
    }
    if let Some(id) = transaction.chain_id()
        && id != chain_id
    {
        return Err(invalid(format!(
            "invalid chain id: the transaction is for chain {id}, this network is {chain_id}"
        )));
    }
    let sender = transaction
        .recover_signer()
        .map_err(|e| invalid(format!("invalid signature: it recovers no sender ({e})")))?;
    Ok(CheckedTransaction {
        hash: *transaction.tx_hash(),
        sender,
        nonce: transaction.nonce(),
    })
}

/// The recipient of the signed transaction `bytes` (`None`: a contract creation), for a key's
/// contract allowlist; an error when they do not decode.
pub fn transaction_to(bytes: &[u8]) -> Result<Option<Address>> {
    let mut rest = bytes;
    NetworkTransaction::decode_2718(&mut rest)
        .map(|transaction| transaction.to())
        .map_err(|e| RpcError::InvalidTransaction(format!("the transaction does not decode: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope, TxLegacy};
    use alloy_eips::eip2718::Encodable2718;
    use alloy_primitives::{Signature, TxKind, U256, keccak256};
    use alloy_signer::SignerSync;
    use alloy_signer_local::PrivateKeySigner;

    /// A transfer signed with a fixed key, as a wallet would send it.
    fn signed(chain_id: u64) -> (Vec<u8>, Address) {
        let key = PrivateKeySigner::from_bytes(&B256::repeat_byte(7)).unwrap();
        let tx = TxEip1559 {
            chain_id,
            nonce: 3,
            gas_limit: 21_000,
            max_fee_per_gas: 2_000_000_000,
            max_priority_fee_per_gas: 1_000_000_000,
            to: TxKind::Call(Address::repeat_byte(0x11)),
            value: U256::from(5),
            ..Default::default()
        };
        let signature = key.sign_hash_sync(&tx.signature_hash()).unwrap();
        let envelope = TxEnvelope::from(tx.into_signed(signature));
        (envelope.encoded_2718(), key.address())
    }

    #[test]
    fn a_signed_transfer_for_this_chain_passes() {
        let (bytes, sender) = signed(1337);
        let checked = check_raw_transaction(&bytes, 1337).unwrap();
        assert_eq!(checked.sender, sender);
        assert_eq!(checked.nonce, 3);
        assert_eq!(checked.hash, keccak256(&bytes));
    }

    #[test]
    fn another_chain_is_refused_naming_both_ids() {
        let (bytes, _) = signed(1);
        let error = check_raw_transaction(&bytes, 1337).unwrap_err().to_string();
        assert_eq!(
            error,
            "invalid chain id: the transaction is for chain 1, this network is 1337"
        );
    }

    #[test]
    fn malformed_bytes_say_what_is_wrong() {
        let (bytes, _) = signed(1337);
        let cases: [(&[u8], &str); 4] = [
            (&[], "empty"),
            (&bytes[..bytes.len() - 5], "does not decode"),
            (&[bytes.as_slice(), &[0x80]].concat(), "1 bytes follow"),
            (&[0x7f, 0xc0], "does not decode"),
        ];
        for (input, expected) in cases {
            let error = check_raw_transaction(input, 1337).unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
        }
    }

    #[test]
    fn a_signature_that_recovers_no_sender_is_refused() {
        let tx = TxLegacy {
            chain_id: Some(1337),
            gas_limit: 21_000,
            to: TxKind::Call(Address::ZERO),
            ..Default::default()
        };
        // r = 0 is no point on the curve.
        let signature = Signature::new(U256::ZERO, U256::from(1), false);
        let bytes = TxEnvelope::from(tx.into_signed(signature)).encoded_2718();
        let error = check_raw_transaction(&bytes, 1337).unwrap_err().to_string();
        assert!(error.contains("invalid signature"), "{error}");
    }
}
