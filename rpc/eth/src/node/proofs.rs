//! eth_getProof (EIP-1186): an account's and its slots' Merkle proofs after a block, in geth's
//! shape.

use super::{Node, Snapshot};
use crate::{
    params::{BlockId, ProofKey},
    rpc_error::{Result, RpcError},
};
use alloy_primitives::{Address, B256, Bytes, U64, U256};
use quarry_executor::{OlderState, ProofState};
use serde::Serialize;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProofJson {
    address: Address,
    account_proof: Vec<Bytes>,
    balance: U256,
    code_hash: B256,
    nonce: U64,
    storage_hash: B256,
    storage_proof: Vec<SlotProofJson>,
}

#[derive(Serialize)]
pub struct SlotProofJson {
    /// As given when it was 32 bytes, else as a quantity (geth's rule).
    key: String,
    value: U256,
    proof: Vec<Bytes>,
}

impl Node {
    /// The state trie as of block `number`, for a proof there: at most `proof_window` blocks
    /// behind the head.
    pub(super) fn older_state(&self, tx: &Snapshot, number: u64) -> Result<OlderState> {
        self.check_proof_window(tx, number)?;
        Ok(OlderState::of(tx, number)?)
    }

    /// Refuses a block more than `proof_window` blocks behind the head.
    pub(super) fn check_proof_window(&self, tx: &Snapshot, number: u64) -> Result<()> {
        let (head, _) = tx.head()?.ok_or(RpcError::HeaderNotFound)?;
        let behind = head.saturating_sub(number);
        if behind > self.proof_window {
            return Err(RpcError::ProofWindow {
                block: number,
                behind,
                window: self.proof_window,
            });
        }
        Ok(())
    }

    /// eth_getProof: at the head from the stored trie; at an older block (at most
    /// `proof_window` back) from the stored trie as its history has it at the end of the
    /// block's window or the one before, with the blocks between undone or redone in memory (at
    /// most 16 blocks' changes within `proof_history` blocks of the head, at most 512 in the
    /// thinned 1,024-block windows further back); in the head's window, or before the history
    /// starts (a datadir migrated from an older layout), from the stored trie with the changes
    /// since that block undone in memory, at a cost that follows them.
    pub fn proof(
        &self,
        tx: &Snapshot,
        address: Address,
        keys: &[ProofKey],
        at: BlockId,
    ) -> Result<ProofJson> {
        let (number, is_head) = self.state_block(tx, at)?;
        let older;
        let state = if is_head {
            ProofState::Latest
        } else {
            older = self.older_state(tx, number)?;
            older.state()
        };
        let slots: Vec<B256> = keys.iter().map(|key| key.slot).collect();
        let proof = quarry_executor::account_proof(tx, state, address, &slots)?;
        // A proof that does not lead to the block's state root would mislead whoever checks
        // it: refuse it instead.
        let header = tx.header(number)?.ok_or(RpcError::HeaderNotFound)?;
        if proof.state_root != header.state_root {
            return Err(RpcError::Storage(quarry_storage::Error::Corrupt(format!(
                "the stored state trie at block {number} has root {}, its header {}",
                proof.state_root, header.state_root
            ))));
        }
        let (code_hash, storage_hash) = (proof.code_hash(), proof.storage_hash());
        Ok(ProofJson {
            address,
            balance: proof.account.map_or(U256::ZERO, |a| a.balance),
            code_hash,
            nonce: U64::from(proof.account.map_or(0, |a| a.nonce)),
            storage_hash,
            account_proof: proof.account_proof,
            storage_proof: proof
                .storage
                .into_iter()
                .zip(keys)
                .map(|(slot, key)| SlotProofJson {
                    key: if key.full_length {
                        key.slot.to_string()
                    } else {
                        format!("{:#x}", U256::from_be_bytes(key.slot.0))
                    },
                    value: slot.value,
                    proof: slot.proof,
                })
                .collect(),
        })
    }
}
