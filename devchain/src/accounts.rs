//! The dev accounts (fixed, documented keys) and the seeded random source of a chain's mix.

use alloy_consensus::{SignableTransaction, TxEnvelope, TypedTransaction};
use alloy_eips::eip7702::{Authorization, SignedAuthorization};
use alloy_primitives::{Address, B256, keccak256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;

/// The private key of dev account `index`: keccak256 of the text `quarry devchain account
/// <index>`. Account 0 deploys the contracts; all of them are funded in the dev genesis.
pub fn dev_key(index: usize) -> B256 {
    keccak256(format!("quarry devchain account {index}"))
}

/// The dev accounts of one chain, with their signers.
pub struct DevAccounts {
    signers: Vec<PrivateKeySigner>,
}

impl DevAccounts {
    pub fn new(count: usize) -> crate::Result<Self> {
        let signers = (0..count)
            .map(|index| {
                PrivateKeySigner::from_bytes(&dev_key(index))
                    .map_err(|err| crate::Error::Signing(err.to_string()))
            })
            .collect::<crate::Result<_>>()?;
        Ok(Self { signers })
    }

    pub fn len(&self) -> usize {
        self.signers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.signers.is_empty()
    }

    pub fn address(&self, index: usize) -> Address {
        self.signers[index].address()
    }

    pub fn addresses(&self) -> impl Iterator<Item = Address> + '_ {
        self.signers.iter().map(PrivateKeySigner::address)
    }

    /// Signs `tx` as account `index`.
    pub fn sign(&self, index: usize, tx: TypedTransaction) -> crate::Result<TxEnvelope> {
        let signature = self.signers[index]
            .sign_hash_sync(&tx.signature_hash())
            .map_err(|err| crate::Error::Signing(err.to_string()))?;
        Ok(tx.into_envelope(signature))
    }

    /// Signs an EIP-7702 authorization as account `index`.
    pub fn authorize(
        &self,
        index: usize,
        authorization: Authorization,
    ) -> crate::Result<SignedAuthorization> {
        let signature = self.signers[index]
            .sign_hash_sync(&authorization.signature_hash())
            .map_err(|err| crate::Error::Signing(err.to_string()))?;
        Ok(authorization.into_signed(signature))
    }
}

/// SplitMix64: a small, fast generator whose output is fixed by its seed on every platform,
/// which is all a reproducible chain needs.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    pub fn b256(&mut self) -> B256 {
        let mut bytes = [0u8; 32];
        for chunk in bytes.chunks_mut(8) {
            chunk.copy_from_slice(&self.next_u64().to_be_bytes());
        }
        B256::from(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_account_zero_is_fixed() {
        let accounts = DevAccounts::new(1).unwrap();
        // Documented in the README; changing the key derivation changes every dev chain.
        assert_eq!(
            accounts.address(0),
            "0x592a5d0993532047da177e358ad7b0d32e74362c"
                .parse::<Address>()
                .unwrap()
        );
    }

    #[test]
    fn rng_is_reproducible() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let first: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        assert_eq!(first, (0..4).map(|_| b.next_u64()).collect::<Vec<_>>());
        assert_ne!(Rng::new(8).next_u64(), first[0]);
    }
}
