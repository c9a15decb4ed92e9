//! EIP-1186 proofs of the latest state or of an older block's (the stored trie with its
//! history, and the changesets' reverts over it), and an account's trie leaf after an older
//! block.

use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use alloy_trie::{EMPTY_ROOT_HASH, Nibbles, TrieAccount};
use quarry_storage::{Access, Leaf, RestoredAccount, StorageTx, TrieId};
use std::collections::BTreeMap;

use super::walk::{Walk, stored_after};
use super::{NodeOverlay, changed_keys, encode_account, slot_leaves};

/// The state a proof is of.
#[derive(Debug, Clone, Copy)]
pub enum ProofState<'a> {
    /// The latest state.
    Latest,
    /// The state after a block the trie history covers that ends a node history window
    /// (`StorageTx::trie_history_checkpoint`): read from the stored trie and its history, at
    /// the cost of a proof of the latest state.
    Recorded(u64),
    /// The state after `checkpoint` (as `Recorded`) with `reverts` over it: every account and
    /// slot changed between it and a block of a window next to it, as it was after that block.
    RecordedReverted {
        checkpoint: u64,
        reverts: &'a BTreeMap<Address, RestoredAccount>,
    },
    /// The latest state with these reverts over it (the changesets back to an older block),
    /// at a cost that follows them.
    Reverted(&'a BTreeMap<Address, RestoredAccount>),
}

/// How the proof of an older block's state is made, with the changes it undoes or redoes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OlderState {
    /// The block ends a node history window: the history alone.
    Recorded(u64),
    /// The history at the end of the block's window with the window's later blocks undone, or
    /// at the end of the window before with the block's window's blocks up to it redone
    /// (whichever is fewer blocks): every key those blocks changed, as it was after the block.
    RecordedReverted {
        checkpoint: u64,
        reverts: BTreeMap<Address, RestoredAccount>,
    },
    /// The latest trie with every block since undone: the history does not cover the block,
    /// or its window is the head's, which has no end yet.
    Reverted(BTreeMap<Address, RestoredAccount>),
}

/// Where the state after an older block is walked from: the route `OlderState::of` takes for
/// a proof and `trie_account_after` for one account's storage.
enum OlderRoute {
    /// The block ends a node history window: the history alone.
    Recorded,
    /// The trie after this window's end, past the block, with the blocks since it undone.
    Back(u64),
    /// The trie after the end of the window before, with its later blocks up to the block redone.
    Forward(u64),
    /// The latest trie (after this head) with every block since undone: the history does not
    /// cover the block, or its window is the head's, which has no end yet.
    Latest(u64),
}

impl OlderRoute {
    /// The route over the fewer blocks to the state after `block`.
    fn to<K: Access>(tx: &StorageTx<K>, block: u64) -> quarry_storage::Result<Self> {
        let head = tx.head()?.map_or(0, |(number, _)| number);
        if !tx.trie_history_covers(block)? {
            return Ok(Self::Latest(head));
        }
        let checkpoint = tx.trie_history_checkpoint(block)?;
        if checkpoint == block {
            return Ok(Self::Recorded);
        }
        // Back from the window's end, or from the head in the head's window, which has none.
        let blocks_back = checkpoint.min(head).saturating_sub(block);
        // Forward from the window before only when its changesets are kept (a state history
        // window may have pruned them).
        let oldest = tx.oldest_state()?;
        Ok(match tx.trie_history_checkpoint_before(block)? {
            Some(previous) if previous >= oldest && block - previous < blocks_back => {
                Self::Forward(previous)
            }
            _ if checkpoint < head => Self::Back(checkpoint),
            _ => Self::Latest(head),
        })
    }
}

impl OlderState {
    /// The cheapest way to the state after `block`, an older block than the head.
    pub fn of<K: Access>(tx: &StorageTx<K>, block: u64) -> quarry_storage::Result<Self> {
        Ok(match OlderRoute::to(tx, block)? {
            OlderRoute::Recorded => Self::Recorded(block),
            OlderRoute::Forward(previous) => Self::RecordedReverted {
                checkpoint: previous,
                reverts: tx.changes_between(previous, block)?,
            },
            OlderRoute::Back(checkpoint) => Self::RecordedReverted {
                checkpoint,
                reverts: tx.reverts_between(block, checkpoint)?,
            },
            OlderRoute::Latest(_) => Self::Reverted(tx.reverts_to(block)?),
        })
    }

    pub fn state(&self) -> ProofState<'_> {
        match self {
            Self::Recorded(block) => ProofState::Recorded(*block),
            Self::RecordedReverted {
                checkpoint,
                reverts,
            } => ProofState::RecordedReverted {
                checkpoint: *checkpoint,
                reverts,
            },
            Self::Reverted(reverts) => ProofState::Reverted(reverts),
        }
    }
}

/// EIP-1186: an account's proof and its slots' proofs, as geth returns them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountProof {
    /// The state root the proofs lead to.
    pub state_root: B256,
    pub address: Address,
    /// `None`: the account does not exist (the proof then shows its absence).
    pub account: Option<TrieAccount>,
    pub account_proof: Vec<Bytes>,
    pub storage: Vec<SlotProof>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotProof {
    pub slot: B256,
    pub value: U256,
    pub proof: Vec<Bytes>,
}

impl AccountProof {
    /// The code hash as geth reports it: zero for an absent account.
    pub fn code_hash(&self) -> B256 {
        self.account.map_or(B256::ZERO, |a| a.code_hash)
    }

    /// The storage root as geth reports it: zero for an absent account.
    pub fn storage_hash(&self) -> B256 {
        self.account.map_or(B256::ZERO, |a| a.storage_root)
    }
}

/// The proof of `address` and `slots` in `state`.
pub fn account_proof<K: Access>(
    tx: &StorageTx<K>,
    state: ProofState<'_>,
    address: Address,
    slots: &[B256],
) -> quarry_storage::Result<AccountProof> {
    let no_reverts = BTreeMap::new();
    let (block, reverts) = match state {
        ProofState::Latest => (None, &no_reverts),
        ProofState::Recorded(block) => (Some(block), &no_reverts),
        ProofState::RecordedReverted {
            checkpoint,
            reverts,
        } => (Some(checkpoint), reverts),
        ProofState::Reverted(reverts) => (None, reverts),
    };
    let hashed = keccak256(address);
    // Every reverted account as the older state has it, with its storage root then.
    let mut accounts: BTreeMap<B256, Option<TrieAccount>> = BTreeMap::new();
    let mut target_storage: Option<Vec<SlotProof>> = None;
    // Account leaves of the state the reverts go over, for those whose storage they keep.
    let mut account_leaves = tx.trie_leaves_after(TrieId::Accounts, block)?;
    for (reverted, restored) in reverts {
        let key = keccak256(reverted);
        let is_target = key == hashed;
        let Some(fields) = restored.account else {
            accounts.insert(key, None);
            continue;
        };
        let storage_root = if restored.storage.is_empty() && !is_target {
            match account_leaves.get(&key)? {
                Some(Leaf::Account(account)) => account.storage_root,
                _ => EMPTY_ROOT_HASH,
            }
        } else {
            let (root, proofs) =
                storage_proof(tx, block, key, &restored.storage, is_target, slots)?;
            if is_target {
                target_storage = Some(proofs);
            }
            root
        };
        let account = TrieAccount {
            nonce: fields.nonce,
            balance: fields.balance,
            storage_root,
            code_hash: fields.code_hash,
        };
        accounts.insert(key, Some(account));
    }
    let leaves: BTreeMap<B256, Option<Vec<u8>>> = accounts
        .iter()
        .map(|(key, account)| (*key, account.as_ref().map(encode_account)))
        .collect();
    let target = Nibbles::unpack(hashed);
    let changed = changed_keys(&leaves, &[target]);
    let nodes = NodeOverlay::new();
    let walk = Walk::new(
        Some(stored_after(tx, TrieId::Accounts, block)?),
        &nodes,
        &leaves,
        &changed,
        Some(vec![target]),
    )
    .answer_only();
    let outcome = walk.run()?;
    let account_proof = path_proof(&outcome.proof, &target);

    let account = match accounts.get(&hashed) {
        Some(account) => *account,
        None => match account_leaves.get(&hashed)? {
            Some(Leaf::Account(account)) => Some(account),
            _ => None,
        },
    };
    let storage = match (&account, target_storage) {
        (None, _) => slots
            .iter()
            .map(|slot| SlotProof {
                slot: *slot,
                value: U256::ZERO,
                proof: Vec::new(),
            })
            .collect(),
        (Some(_), Some(proofs)) => proofs,
        (Some(_), None) => storage_proof(tx, block, hashed, &BTreeMap::new(), true, slots)?.1,
    };
    Ok(AccountProof {
        state_root: outcome.root,
        address,
        account,
        account_proof,
        storage,
    })
}

/// The trie leaf of `address` after `block` (`None`: no account then), for a block whose leaf
/// history leaves out the account's storage root (`quarry_storage::Error::StorageRootNotRecorded`):
/// its fields from the state history, and its storage root walked over its storage trie as the
/// node history has it at the nearer end of the block's window, as `OlderState::of` chooses:
/// the window's end with the slots the account's later changes up to there changed undone, or
/// the end of the window before with the slots its changes since then changed redone (the
/// latest trie when the history does not reach the block or the window has not ended). Its cost
/// follows that one account's changes, not every account's as a proof's does.
pub fn trie_account_after<K: Access>(
    tx: &StorageTx<K>,
    address: Address,
    block: u64,
) -> quarry_storage::Result<Option<TrieAccount>> {
    let Some(fields) = tx.account_at(&address, block)? else {
        return Ok(None);
    };
    let (checkpoint, overlay) = account_storage_overlay(tx, &address, block)?;
    let (storage_root, _) =
        storage_proof(tx, checkpoint, keccak256(address), &overlay, false, &[])?;
    Ok(Some(TrieAccount {
        nonce: fields.nonce,
        balance: fields.balance,
        storage_root,
        code_hash: fields.code_hash,
    }))
}

/// The stored trie (after a window's end, or `None`: the latest) that `OlderRoute::to` walks from
/// and the slots of `address` that differ between it and the state after `block`, with their
/// values then.
fn account_storage_overlay<K: Access>(
    tx: &StorageTx<K>,
    address: &Address,
    block: u64,
) -> quarry_storage::Result<(Option<u64>, BTreeMap<B256, U256>)> {
    Ok(match OlderRoute::to(tx, block)? {
        OlderRoute::Recorded => (Some(block), BTreeMap::new()),
        OlderRoute::Back(checkpoint) => (
            Some(checkpoint),
            tx.account_slot_reverts(address, block, checkpoint)?,
        ),
        OlderRoute::Forward(previous) => {
            let mut redo = tx.account_slot_reverts(address, previous, block)?;
            for (slot, value) in &mut redo {
                *value = tx.storage_at(address, slot, block)?;
            }
            (Some(previous), redo)
        }
        OlderRoute::Latest(head) => (None, tx.account_slot_reverts(address, block, head)?),
    })
}

/// An account's storage root with `reverts` (plain slot → older value) over the stored
/// storage (as it was after `block`, or the latest), and, when `prove`, the proofs of `slots`
/// with their values.
fn storage_proof<K: Access>(
    tx: &StorageTx<K>,
    block: Option<u64>,
    account: B256,
    reverts: &BTreeMap<B256, U256>,
    prove: bool,
    slots: &[B256],
) -> quarry_storage::Result<(B256, Vec<SlotProof>)> {
    let reverted: BTreeMap<B256, U256> = reverts
        .iter()
        .map(|(slot, value)| (keccak256(slot), *value))
        .collect();
    let leaves = slot_leaves(&reverted);
    let targets: Vec<Nibbles> = if prove {
        slots
            .iter()
            .map(|slot| Nibbles::unpack(keccak256(slot)))
            .collect()
    } else {
        Vec::new()
    };
    let changed = changed_keys(&leaves, &targets);
    let nodes = NodeOverlay::new();
    let trie = TrieId::Storage(account);
    let walk = Walk::new(
        Some(stored_after(tx, trie, block)?),
        &nodes,
        &leaves,
        &changed,
        prove.then(|| targets.clone()),
    )
    .answer_only();
    let outcome = walk.run()?;
    let mut proofs = Vec::new();
    // An empty storage trie proves nothing: geth returns no nodes for it.
    let proved = |target: &Nibbles| {
        if outcome.root == EMPTY_ROOT_HASH {
            Vec::new()
        } else {
            path_proof(&outcome.proof, target)
        }
    };
    if prove {
        let mut values = tx.trie_leaves_after(trie, block)?;
        for slot in slots {
            let hashed = keccak256(slot);
            let value = match reverted.get(&hashed) {
                Some(value) => *value,
                None => match values.get(&hashed)? {
                    Some(Leaf::Slot(value)) => value,
                    _ => U256::ZERO,
                },
            };
            let target = Nibbles::unpack(hashed);
            proofs.push(SlotProof {
                slot: *slot,
                value,
                proof: proved(&target),
            });
        }
    }
    Ok((outcome.root, proofs))
}

/// The proof nodes on the path to `target`, root first. As in geth, a node embedded in its
/// parent (shorter than 32 bytes) is part of the parent's element, not one of its own.
fn path_proof(nodes: &[(Nibbles, Bytes)], target: &Nibbles) -> Vec<Bytes> {
    nodes
        .iter()
        .filter(|(path, node)| target.starts_with(path) && (path.is_empty() || node.len() >= 32))
        .map(|(_, node)| node.clone())
        .collect()
}
