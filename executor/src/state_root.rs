//! State roots and proofs from the trie stored in MDBX.
//!
//! Storage keeps the latest state trie as reth does: the hashed state (its leaves) and its
//! branch nodes. A [`StateTrie`] holds the changes of one block (or of an unwind, or of
//! simulated blocks) in memory, over that stored trie; its root is computed by walking only the
//! paths under the keys changed since the last root, taking every untouched subtree's hash from
//! its stored parent node, so the cost follows the changes, not the size of the state. Before
//! Byzantium that root is taken after every transaction; the node changes each walk yields stay
//! in memory until [`StateTrie::write`] stores the whole block's changes.
//!
//! A walk over the stored trie with an overlay of older values (the reverts from the
//! changesets) gives the root and proofs of an older state the same way.
//!
//! This file holds [`StateTrie`] and its changes; the walk over one trie is in
//! state_root/walk.rs, and the proofs of the latest and of older states in
//! state_root/proof.rs.

use alloy_primitives::{Address, B256, U256, keccak256, map::HashMap};
use alloy_rlp::Encodable;
use alloy_trie::{BranchNodeCompact, EMPTY_ROOT_HASH, Nibbles, TrieAccount};
use quarry_storage::keccak;
use quarry_storage::{
    Access, Leaf, LeafWriter, RestoredAccount, StorageTx, StoredAccount, TrieId, WriteTx,
};
use std::collections::{BTreeMap, BTreeSet};

mod proof;
mod walk;

pub use proof::{
    AccountProof, OlderState, ProofState, SlotProof, account_proof, trie_account_after,
};
use walk::{Walk, storage_root, stored};

type NodeOverlay = BTreeMap<Nibbles, Option<BranchNodeCompact>>;

/// One account's pending changes.
#[derive(Debug, Clone, Default)]
struct PendingAccount {
    /// The account's fields; `None`: it does not exist.
    fields: Option<StoredAccount>,
    /// Its stored storage (leaves and nodes) no longer counts: self-destructed or deleted.
    wiped: bool,
    /// Changed slots by hashed slot; zero: cleared.
    slots: BTreeMap<B256, U256>,
    /// Storage trie nodes changed by the walks so far; `None`: deleted.
    nodes: NodeOverlay,
    /// Slots changed since the last root.
    dirty_slots: BTreeSet<B256>,
    /// The storage root as of the last root (`None` before the first).
    storage_root: Option<B256>,
    /// The account's leaf as of the last root; `None`: no leaf.
    leaf: Option<TrieAccount>,
}

/// Changes to the latest state over the stored trie, and the trie nodes they change.
#[derive(Debug, Clone, Default)]
pub struct StateTrie {
    /// By hashed address.
    accounts: BTreeMap<B256, PendingAccount>,
    account_nodes: NodeOverlay,
    /// Accounts changed since the last root.
    dirty: BTreeSet<B256>,
    /// The storage root in each changed account's stored leaf, as the walks passed it or
    /// [`Self::stored_storage_root`] read it: the root before these changes (`None`: no leaf,
    /// or empty storage).
    stored_storage_roots: HashMap<B256, Option<B256>>,
}

fn encode_value(value: U256) -> Vec<u8> {
    let mut out = Vec::with_capacity(33);
    value.encode(&mut out);
    out
}

/// A stored leaf's value as the trie's leaf node holds it.
fn leaf_value(leaf: &Leaf) -> Vec<u8> {
    match leaf {
        Leaf::Account(account) => encode_account(account),
        Leaf::Slot(value) => encode_value(*value),
    }
}

fn encode_account(account: &TrieAccount) -> Vec<u8> {
    let mut out = Vec::with_capacity(account.length());
    account.encode(&mut out);
    out
}

/// A walk's leaf overlay of storage slots by hashed slot: zero deletes.
fn slot_leaves(slots: &BTreeMap<B256, U256>) -> BTreeMap<B256, Option<Vec<u8>>> {
    slots
        .iter()
        .map(|(slot, value)| (*slot, (!value.is_zero()).then(|| encode_value(*value))))
        .collect()
}

/// The sorted, distinct keys a walk descends to: those of `leaves` and the proof's `targets`.
fn changed_keys(leaves: &BTreeMap<B256, Option<Vec<u8>>>, targets: &[Nibbles]) -> Vec<Nibbles> {
    let mut changed: Vec<Nibbles> = leaves.keys().map(Nibbles::unpack).collect();
    changed.extend_from_slice(targets);
    changed.sort_unstable();
    changed.dedup();
    changed
}

impl StateTrie {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets one account's new state: `None` deletes it (with its storage); `wiped` clears its
    /// storage before `slots` are applied.
    pub fn apply_account(
        &mut self,
        address: Address,
        fields: Option<StoredAccount>,
        wiped: bool,
        slots: impl IntoIterator<Item = (U256, U256)>,
    ) {
        let slots = slots
            .into_iter()
            .map(|(slot, value)| (keccak256(B256::from(slot)), value));
        self.apply_hashed_account(keccak256(address), fields, wiped, slots);
    }

    /// As [`StateTrie::apply_account`], with the address and slots already hashed: `key` is
    /// keccak256 of the address, `slots` pairs keccak256 of each slot with its value.
    pub fn apply_hashed_account(
        &mut self,
        key: B256,
        fields: Option<StoredAccount>,
        wiped: bool,
        slots: impl IntoIterator<Item = (B256, U256)>,
    ) {
        let entry = self.accounts.entry(key).or_default();
        if wiped || fields.is_none() {
            entry.wiped = true;
            entry.slots.clear();
            entry.nodes.clear();
            entry.storage_root = None;
        }
        for (slot_key, value) in slots {
            entry.slots.insert(slot_key, value);
            entry.dirty_slots.insert(slot_key);
        }
        entry.fields = fields;
        self.dirty.insert(key);
    }

    /// Sets every account and slot an unwind restored back to its value at the ancestor.
    pub fn restore(&mut self, restored: &BTreeMap<Address, RestoredAccount>) {
        for (address, entry) in restored {
            self.apply_account(
                *address,
                entry.account,
                false,
                entry
                    .storage
                    .iter()
                    .map(|(slot, value)| (U256::from_be_bytes(slot.0), *value)),
            );
        }
    }

    /// The storage root each account the roots so far changed had in its stored leaf, before
    /// the changes (`None`: no leaf, or empty storage); accounts changed since the last root
    /// are missing. [`StorageTx::apply_block_state_changes`] records it in their changesets.
    pub fn stored_storage_roots(&self) -> &HashMap<B256, Option<B256>> {
        &self.stored_storage_roots
    }

    /// The storage root in the stored leaf of the account hashed to `key`, as
    /// [`StorageTx::stored_storage_root`] reads it, kept with [`Self::stored_storage_roots`]:
    /// a range's trie writes the leaves only at its end, so each account's is read once.
    pub fn stored_storage_root<K: Access>(
        &mut self,
        tx: &StorageTx<K>,
        key: &B256,
    ) -> quarry_storage::Result<Option<B256>> {
        if let Some(root) = self.stored_storage_roots.get(key) {
            return Ok(*root);
        }
        let root = tx.stored_storage_root(key)?;
        self.stored_storage_roots.insert(*key, root);
        Ok(root)
    }

    /// Whether these changes changed the storage of the account hashed to `key` (set, cleared
    /// or wiped a slot, or deleted the account).
    pub fn storage_changed(&self, key: &B256) -> bool {
        self.accounts
            .get(key)
            .is_some_and(|entry| entry.wiped || !entry.slots.is_empty())
    }

    /// Takes [`Self::stored_storage_roots`].
    pub(crate) fn take_stored_storage_roots(&mut self) -> HashMap<B256, Option<B256>> {
        std::mem::take(&mut self.stored_storage_roots)
    }

    /// The state root of the stored state in `tx` with every change applied so far.
    pub fn root<K: Access>(&mut self, tx: &StorageTx<K>) -> quarry_storage::Result<B256> {
        self.compute_root(Some(tx))
    }

    /// The root of the stored trie as it is: one read of its root node when the trie has one
    /// (every trie but the smallest), else a walk of its few leaves.
    pub fn stored_root<K: Access>(tx: &StorageTx<K>) -> quarry_storage::Result<B256> {
        let root = tx
            .trie_nodes(TrieId::Accounts)?
            .seek(&Nibbles::default())?
            .filter(|(path, _)| path.is_empty())
            .and_then(|(_, node)| node.root_hash);
        match root {
            Some(root) => Ok(root),
            None => Self::new().root(tx),
        }
    }

    /// The state root of the changes alone, as if nothing were stored (genesis).
    pub fn root_of_changes(&mut self) -> quarry_storage::Result<B256> {
        self.compute_root::<quarry_storage::ReadOnly>(None)
    }

    /// The root after the changes so far. The walks' hashes are deferred and computed together
    /// at the end, eight at a time (see `quarry_storage::keccak`); then every hash the walks
    /// left in this trie is given its value.
    fn compute_root<K: Access>(
        &mut self,
        tx: Option<&StorageTx<K>>,
    ) -> quarry_storage::Result<B256> {
        let (root, resolved) = keccak::deferred(|| self.walk_changes(tx))
            .map_err(|e| quarry_storage::Error::Corrupt(e.to_string()))?;
        // Even after a failed walk, nothing in the trie is left a placeholder.
        resolve_nodes(&mut self.account_nodes, &resolved);
        for entry in self.accounts.values_mut() {
            resolve_account(entry, &resolved);
        }
        let mut root = root?;
        resolved.resolve(&mut root);
        Ok(root)
    }

    /// [`Self::compute_root`]'s walks, in a deferred keccak scope: the hashes they make are
    /// placeholders.
    fn walk_changes<K: Access>(
        &mut self,
        tx: Option<&StorageTx<K>>,
    ) -> quarry_storage::Result<B256> {
        let dirty = std::mem::take(&mut self.dirty);
        // Changed accounts whose storage is as stored: the walk, which reads their stored
        // leaves anyway, gives them their stored storage root.
        let mut kept_storage: BTreeMap<B256, TrieAccount> = BTreeMap::new();
        for key in &dirty {
            let Some(entry) = self.accounts.get_mut(key) else {
                continue;
            };
            entry.leaf = match entry.fields {
                Some(fields) => {
                    let storage_root = storage_root(tx, key, entry)?;
                    let account = TrieAccount {
                        nonce: fields.nonce,
                        balance: fields.balance,
                        storage_root: storage_root.unwrap_or(EMPTY_ROOT_HASH),
                        code_hash: fields.code_hash,
                    };
                    if storage_root.is_none() {
                        kept_storage.insert(*key, account);
                    }
                    Some(account)
                }
                None => None,
            };
        }
        let leaves: BTreeMap<B256, Option<Vec<u8>>> = self
            .accounts
            .iter()
            .map(|(key, entry)| (*key, entry.leaf.as_ref().map(encode_account)))
            .collect();
        let changed: Vec<Nibbles> = dirty.iter().map(Nibbles::unpack).collect();
        let walk = Walk::new(
            tx.map(|tx| stored(tx, TrieId::Accounts)).transpose()?,
            &self.account_nodes,
            &leaves,
            &changed,
            None,
        )
        .with_kept_storage(&kept_storage);
        let outcome = walk.run()?;
        if outcome.kept_storage_roots.len() != kept_storage.len() {
            return Err(quarry_storage::Error::Corrupt(format!(
                "the state trie walk reached {} of the {} changed accounts whose storage root \
                 is the stored one",
                outcome.kept_storage_roots.len(),
                kept_storage.len()
            )));
        }
        outcome.apply_to(&mut self.account_nodes);
        for (key, storage_root) in &outcome.stored_storage_roots {
            // The first walk saw the leaves before every change; later ones see the same.
            self.stored_storage_roots
                .entry(*key)
                .or_insert(*storage_root);
        }
        for (key, storage_root) in &outcome.kept_storage_roots {
            if let Some(entry) = self.accounts.get_mut(key) {
                entry.storage_root = Some(*storage_root);
                if let Some(leaf) = &mut entry.leaf {
                    leaf.storage_root = *storage_root;
                }
            }
        }
        Ok(outcome.root)
    }

    /// Stores every change: the hashed state, and the trie nodes as of the last root (take
    /// the root first). `block`: the block these are the changes of, whose leaf history (the
    /// state history) then records what they replace, and its node history too when
    /// `record_nodes` (`None` for genesis and unwinds).
    pub fn write(
        &self,
        tx: &WriteTx,
        block: Option<u64>,
        record_nodes: bool,
    ) -> quarry_storage::Result<()> {
        let node_history = block.filter(|_| record_nodes);
        // Accounts by hash and each one's slots by hash: the leaves go in key order.
        let mut leaves = tx.leaf_writer();
        for (key, entry) in &self.accounts {
            write_account_storage(tx, &mut leaves, key, entry, block, record_nodes)?;
            leaves.put_account(key, entry.leaf.as_ref())?;
        }
        for (path, node) in &self.account_nodes {
            tx.put_trie_node(&TrieId::Accounts, path, node.as_ref(), node_history)?;
        }
        Ok(())
    }
}

/// Writes one pending account's storage: the wipe of what was stored, its slots and its
/// storage trie's nodes, recording what they replace as [`StateTrie::write`] says.
fn write_account_storage(
    tx: &WriteTx,
    leaves: &mut LeafWriter<'_>,
    key: &B256,
    entry: &PendingAccount,
    block: Option<u64>,
    record_nodes: bool,
) -> quarry_storage::Result<()> {
    if entry.wiped {
        tx.wipe_hashed_storage(key, block, record_nodes)?;
    }
    for (slot, value) in &entry.slots {
        leaves.put_slot(key, slot, *value)?;
    }
    let trie = TrieId::Storage(*key);
    let node_history = block.filter(|_| record_nodes);
    for (path, node) in &entry.nodes {
        tx.put_trie_node(&trie, path, node.as_ref(), node_history)?;
    }
    Ok(())
}

/// Gives the hashes in a pending account's storage nodes, storage root and leaf their values.
fn resolve_account(entry: &mut PendingAccount, resolved: &keccak::Resolved) {
    resolve_nodes(&mut entry.nodes, resolved);
    if let Some(storage_root) = &mut entry.storage_root {
        resolved.resolve(storage_root);
    }
    if let Some(leaf) = &mut entry.leaf {
        resolved.resolve(&mut leaf.storage_root);
    }
}

/// Gives the hashes in `overlay`'s nodes their values (see [`StateTrie::compute_root`]).
fn resolve_nodes(overlay: &mut NodeOverlay, resolved: &keccak::Resolved) {
    for node in overlay.values_mut().flatten() {
        if node.hashes.iter().any(|hash| resolved.is_placeholder(hash)) {
            for hash in std::sync::Arc::make_mut(&mut node.hashes) {
                resolved.resolve(hash);
            }
        }
        if let Some(root) = &mut node.root_hash {
            resolved.resolve(root);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_trie::HashBuilder;
    use alloy_trie::proof::verify_proof;
    use quarry_storage::{Database, Table};
    use walk::LeafScan;

    #[test]
    fn a_leaf_scan_resumes_only_where_nothing_stored_lies_between() {
        let key = B256::with_last_byte;
        let scan = |from: u8, last_fed: Option<u8>, next: Option<u8>| LeafScan {
            from: key(from),
            last_fed: last_fed.map(key),
            next: next.map(|n| (key(n), Leaf::Slot(U256::from(n)))),
        };
        let resumed = |scan: LeafScan, start: u8| {
            scan.resume_at(&key(start))
                .map(|next| next.map(|(k, _)| k[31]))
        };
        // Fed 3 and 4, stopped on 9: any start in 5..=9 finds 9 next.
        assert_eq!(resumed(scan(2, Some(4), Some(9)), 5), Some(Some(9)));
        assert_eq!(resumed(scan(2, Some(4), Some(9)), 9), Some(Some(9)));
        // Before or on a fed key, or past the next one: seek again.
        assert_eq!(resumed(scan(2, Some(4), Some(9)), 4), None);
        assert_eq!(resumed(scan(2, Some(4), Some(9)), 10), None);
        // Fed nothing stored: from `from` on.
        assert_eq!(resumed(scan(2, None, Some(9)), 2), Some(Some(9)));
        assert_eq!(resumed(scan(2, None, Some(9)), 1), None);
        // The stored leaves ended: nothing after the last one fed.
        assert_eq!(resumed(scan(2, Some(4), None), 200), Some(None));
    }

    /// Deterministic xorshift64 PRNG.
    struct TestRng(u64);

    impl TestRng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    type Model = BTreeMap<Address, (StoredAccount, BTreeMap<U256, U256>)>;

    fn model_storage_root(slots: &BTreeMap<U256, U256>) -> B256 {
        let hashed: BTreeMap<B256, U256> = slots
            .iter()
            .map(|(slot, value)| (keccak256(B256::from(*slot)), *value))
            .collect();
        let mut hb = HashBuilder::default();
        for (key, value) in hashed {
            hb.add_leaf(Nibbles::unpack(key), &encode_value(value));
        }
        hb.root()
    }

    fn model_account(fields: &StoredAccount, slots: &BTreeMap<U256, U256>) -> TrieAccount {
        TrieAccount {
            nonce: fields.nonce,
            balance: fields.balance,
            storage_root: model_storage_root(slots),
            code_hash: fields.code_hash,
        }
    }

    /// The root of the whole model, built from scratch by alloy-trie's `HashBuilder`.
    fn model_root(model: &Model) -> B256 {
        let hashed: BTreeMap<B256, TrieAccount> = model
            .iter()
            .map(|(address, (fields, slots))| (keccak256(address), model_account(fields, slots)))
            .collect();
        let mut hb = HashBuilder::default();
        for (key, account) in hashed {
            hb.add_leaf(Nibbles::unpack(key), &encode_account(&account));
        }
        hb.root()
    }

    fn digests(db: &Database) -> Vec<(u64, B256)> {
        let tx = db.reader().unwrap();
        [
            Table::HashedAccounts,
            Table::HashedStorages,
            Table::AccountsTrie,
            Table::StoragesTrie,
        ]
        .iter()
        .map(|table| tx.table_digest(*table).unwrap())
        .collect()
    }

    /// The model written into an empty database in one go.
    fn rebuilt(model: &Model) -> (tempfile::TempDir, Database) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let mut trie = StateTrie::new();
        for (address, (fields, slots)) in model {
            trie.apply_account(
                *address,
                Some(*fields),
                false,
                slots.iter().map(|(s, v)| (*s, *v)),
            );
        }
        let tx = db.writer().unwrap();
        assert_eq!(trie.root(&tx).unwrap(), model_root(model));
        trie.write(&tx, None, false).unwrap();
        tx.commit().unwrap();
        (dir, db)
    }

    /// Checks the proofs of some present and absent accounts and slots in `state` against
    /// `model`, the state they should prove, with alloy-trie's verifier.
    fn check_proofs<K: Access>(
        tx: &StorageTx<K>,
        state: ProofState<'_>,
        model: &Model,
        addresses: &[Address],
    ) {
        let root = model_root(model);
        for address in addresses {
            let slots: Vec<B256> = (0..4u64).map(|s| B256::from(U256::from(s * 7))).collect();
            let proof = account_proof(tx, state, *address, &slots).unwrap();
            assert_eq!(proof.state_root, root);
            let expected = model.get(address);
            assert_eq!(
                proof.account,
                expected.map(|(fields, slots)| model_account(fields, slots))
            );
            verify_proof(
                root,
                Nibbles::unpack(keccak256(address)),
                proof.account.as_ref().map(encode_account),
                &proof.account_proof,
            )
            .unwrap();
            for slot in &proof.storage {
                let value = expected
                    .and_then(|(_, slots)| slots.get(&U256::from_be_bytes(slot.slot.0)))
                    .copied()
                    .unwrap_or_default();
                assert_eq!(slot.value, value);
                if let Some(account) = &proof.account {
                    verify_proof(
                        account.storage_root,
                        Nibbles::unpack(keccak256(slot.slot)),
                        (!value.is_zero()).then(|| encode_value(value)),
                        &slot.proof,
                    )
                    .unwrap();
                }
            }
        }
    }

    /// One random change to `address`, in `model` and in `trie`: deleted (8%), or its nonce
    /// and balance changed, its storage wiped (6%), and up to 11 of its first 50 slots set (a
    /// quarter of them to zero, which clears them).
    fn apply_random_change(
        rng: &mut TestRng,
        model: &mut Model,
        trie: &mut StateTrie,
        address: Address,
    ) -> Touched {
        let roll = rng.below(100);
        if roll < 8 {
            model.remove(&address);
            trie.apply_account(address, None, false, []);
            return Touched {
                wiped: true,
                slots: Vec::new(),
            };
        }
        let entry = model.entry(address).or_default();
        let wiped = roll < 14;
        if wiped {
            entry.1.clear();
        }
        entry.0.nonce += 1;
        entry.0.balance = U256::from(rng.below(1 << 40));
        entry.0.code_hash = KECCAK_EMPTY_CODE;
        let mut slots = Vec::new();
        for _ in 0..rng.below(12) {
            let slot = U256::from(rng.below(50));
            // Small values make leaves short enough to be embedded in branches.
            let value = if rng.below(4) == 0 {
                U256::ZERO
            } else {
                U256::from(rng.below(300))
            };
            if value.is_zero() {
                entry.1.remove(&slot);
            } else {
                entry.1.insert(slot, value);
            }
            slots.push((slot, value));
        }
        let touched = Touched {
            wiped,
            slots: slots.iter().map(|(slot, _)| *slot).collect(),
        };
        trie.apply_account(address, Some(entry.0), wiped, slots);
        touched
    }

    /// What one random change did to an account: cleared its storage (a wipe or a deletion),
    /// and which slots it set.
    #[derive(Default)]
    struct Touched {
        wiped: bool,
        slots: Vec<U256>,
    }

    /// The state changes of a block that made `touched` (merged per account) and left `model`,
    /// as ingest hands them to `apply_state_changes`.
    fn block_changes(
        model: &Model,
        touched: &BTreeMap<Address, Touched>,
    ) -> Vec<quarry_storage::AccountChange> {
        touched
            .iter()
            .map(|(address, touched)| {
                let after = model.get(address);
                let slots: BTreeSet<U256> = touched.slots.iter().copied().collect();
                quarry_storage::AccountChange {
                    address: *address,
                    account: after.map(|(fields, _)| *fields),
                    wiped: touched.wiped,
                    storage: slots
                        .into_iter()
                        .map(|slot| {
                            let value = after
                                .and_then(|(_, slots)| slots.get(&slot))
                                .copied()
                                .unwrap_or_default();
                            (B256::from(slot), value)
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// Random blocks of account and slot changes (creations, updates, deletions, storage
    /// wipes; several roots per block as before Byzantium), written as ingest writes a block
    /// (state changes, then the trie) over a genesis state, with the history in windows of 4
    /// blocks: every root equals alloy-trie's from scratch, and the stored tables equal those of
    /// the final state written at once. Proofs of the latest state and of every older one verify
    /// against the model's root of that state, by whichever route `OlderState::of` takes and by
    /// each route where the history allows it. Then the chain is unwound to a block inside a
    /// window and a different branch written over it: the same holds on the new chain.
    #[test]
    fn incremental_roots_and_stored_nodes_match_a_rebuild() {
        const HEAD: u64 = 59;
        const FORK: u64 = 45;
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let mut rng = TestRng(0x5eed_1234_abcd_0001);
        let addresses: Vec<Address> = (0..400u64)
            .map(|i| Address::from_word(keccak256(i.to_be_bytes())))
            .collect();
        let mut model = Model::new();
        let mut states = Vec::new();
        for block in 0..=HEAD {
            write_random_block(&db, &mut rng, &mut model, block, &addresses);
            states.push(model.clone());
            if block % 20 == 19 {
                let (_dir, fresh) = rebuilt(&model);
                assert_eq!(digests(&db), digests(&fresh), "block {block}");
            }
        }

        // Stored branches name their lone leaf children's hashes.
        let tx = db.reader().unwrap();
        let mut named = assert_leaf_children_named(&tx, TrieId::Accounts);
        for address in &addresses {
            named += assert_leaf_children_named(&tx, TrieId::Storage(keccak256(address)));
        }
        assert!(named > 100, "{named} leaf children");
        check_every_proof(&tx, &states, &addresses);
        drop(tx);

        // An unwind to the middle of a window, as a reorganisation makes one, then another
        // branch: the state, the trie and every older block's proofs follow the new chain.
        let tx = db.writer().unwrap();
        let unwound = tx.unwind_to(FORK).unwrap();
        let mut trie = StateTrie::new();
        trie.restore(&unwound.restored);
        assert_eq!(trie.root(&tx).unwrap(), model_root(&states[FORK as usize]));
        trie.write(&tx, None, false).unwrap();
        tx.commit().unwrap();
        states.truncate(FORK as usize + 1);
        model = states[FORK as usize].clone();
        let mut rng = TestRng(0x5eed_1234_abcd_0003);
        for block in FORK + 1..=HEAD {
            write_random_block(&db, &mut rng, &mut model, block, &addresses);
            states.push(model.clone());
        }
        let (_dir, fresh) = rebuilt(&model);
        assert_eq!(digests(&db), digests(&fresh), "after the unwind");
        check_every_proof(&db.reader().unwrap(), &states, &addresses);
    }

    /// Writes block `block` of random changes to `model` (block 0: a genesis state), as ingest
    /// writes a block, checking each of its roots against the model's.
    fn write_random_block(
        db: &Database,
        rng: &mut TestRng,
        model: &mut Model,
        block: u64,
        addresses: &[Address],
    ) {
        let mut trie = StateTrie::new();
        let tx = db.writer().unwrap();
        let mut touched: BTreeMap<Address, Touched> = BTreeMap::new();
        for _ in 0..1 + rng.below(4) {
            let changes = if block == 0 { 300 } else { 1 + rng.below(40) };
            for _ in 0..changes {
                let address = addresses[rng.below(addresses.len() as u64) as usize];
                let change = apply_random_change(rng, model, &mut trie, address);
                let merged = touched.entry(address).or_default();
                if change.wiped {
                    // What the block set before the wipe is gone with it.
                    *merged = Touched::default();
                }
                merged.wiped |= change.wiped;
                merged.slots.extend(change.slots);
            }
            assert_eq!(trie.root(&tx).unwrap(), model_root(model), "block {block}");
        }
        insert_empty_block(&tx, block);
        tx.apply_state_changes(block, &block_changes(model, &touched), &[])
            .unwrap();
        if block == 0 {
            trie.write(&tx, None, false).unwrap();
            tx.start_trie_history(1, 4).unwrap();
        } else {
            trie.write(&tx, Some(block), true).unwrap();
        }
        tx.commit().unwrap();
    }

    /// Proofs of present and absent accounts and slots in the latest state and after every
    /// older block (`states[block]`, the head last) verify against the model's root: at every
    /// block by the route `OlderState::of` takes, at some by each other route the history
    /// allows (from a window's end with the window's later blocks undone, over the window
    /// before with the block's window redone, and undone from the latest trie).
    fn check_every_proof<K: Access>(tx: &StorageTx<K>, states: &[Model], addresses: &[Address]) {
        let head = states.len() as u64 - 1;
        assert_eq!(
            StateTrie::new().root(tx).unwrap(),
            model_root(&states[head as usize])
        );
        check_proofs(
            tx,
            ProofState::Latest,
            &states[head as usize],
            &addresses[..60],
        );
        let proved = &addresses[..30];
        let mut routes = BTreeSet::new();
        for block in 0..head {
            let state = &states[block as usize];
            let older = OlderState::of(tx, block).unwrap();
            routes.insert(match &older {
                OlderState::Recorded(_) => "recorded",
                OlderState::RecordedReverted { .. } => "recorded and reverted",
                OlderState::Reverted(_) => "reverted",
            });
            if ![0, 1, 7, 33, 46, 58].contains(&block) {
                check_proofs(tx, older.state(), state, &proved[..12]);
                continue;
            }
            check_proofs(tx, older.state(), state, proved);
            let reverts = tx.reverts_between(block, head).unwrap();
            check_proofs(tx, ProofState::Reverted(&reverts), state, proved);
            if block == 0 {
                continue;
            }
            let window_end = tx.trie_history_checkpoint(block).unwrap();
            if window_end < head {
                let reverts = tx.reverts_between(block, window_end).unwrap();
                let undone = ProofState::RecordedReverted {
                    checkpoint: window_end,
                    reverts: &reverts,
                };
                check_proofs(tx, undone, state, proved);
            }
            if let Some(previous) = tx.trie_history_checkpoint_before(block).unwrap() {
                let changes = tx.changes_between(previous, block).unwrap();
                let redone = ProofState::RecordedReverted {
                    checkpoint: previous,
                    reverts: &changes,
                };
                check_proofs(tx, redone, state, proved);
            }
        }
        assert_eq!(routes.len(), 3, "OlderState::of took {routes:?}");
    }

    /// Stores an empty block `number`, so that the chain's head is the last block written.
    fn insert_empty_block(tx: &WriteTx, number: u64) {
        let header = alloy_consensus::Header {
            number,
            ..Default::default()
        };
        tx.insert_block(&quarry_storage::BlockRecord {
            hash: header.hash_slow(),
            header: &header,
            body: &Default::default(),
            senders: &[],
            receipts: &[],
            total_difficulty: U256::ZERO,
        })
        .unwrap();
    }

    /// Random blocks of changes over the stored trie, several roots per block: after them, the
    /// storage root the walks report for each changed account's stored leaf is the one the
    /// account had before the block (`None` for no account or empty storage), which ingest
    /// records in the account's changeset instead of reading the leaf again.
    #[test]
    fn walks_report_each_changed_accounts_storage_root_before_the_block() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let mut rng = TestRng(0x5eed_1234_abcd_0002);
        let addresses: Vec<Address> = (0..300u64)
            .map(|i| Address::from_word(keccak256(i.to_be_bytes())))
            .collect();
        let mut model = Model::new();
        let mut reported = 0;
        for block in 0..40 {
            let before = model.clone();
            let mut changed = BTreeSet::new();
            let mut trie = StateTrie::new();
            let tx = db.writer().unwrap();
            for _ in 0..1 + rng.below(3) {
                for _ in 0..if block == 0 { 200 } else { 1 + rng.below(30) } {
                    let address = addresses[rng.below(addresses.len() as u64) as usize];
                    changed.insert(address);
                    apply_random_change(&mut rng, &mut model, &mut trie, address);
                }
                assert_eq!(trie.root(&tx).unwrap(), model_root(&model), "block {block}");
            }
            for address in &changed {
                let expected = before
                    .get(address)
                    .filter(|(_, slots)| !slots.is_empty())
                    .map(|(_, slots)| model_storage_root(slots));
                let got = trie.stored_storage_roots().get(&keccak256(address));
                assert_eq!(got, Some(&expected), "block {block}, {address}");
                reported += usize::from(expected.is_some());
            }
            trie.write(&tx, Some(block), true).unwrap();
            tx.commit().unwrap();
        }
        assert!(
            reported > 100,
            "{reported} accounts had storage before their block"
        );
    }

    /// Checks that every stored branch of `trie` names the hash of each child that is a single
    /// leaf (with a node of 32 bytes or more); returns how many such children it found.
    fn assert_leaf_children_named<K: Access>(tx: &StorageTx<K>, trie: TrieId) -> usize {
        let mut nodes = tx.trie_nodes(trie).unwrap();
        let mut leaves = tx.trie_leaves(trie).unwrap();
        let mut named = 0;
        let mut entry = nodes.seek(&Nibbles::default()).unwrap();
        while let Some((path, node)) = entry {
            for nibble in 0..16u8 {
                if !node.state_mask.is_bit_set(nibble) || node.tree_mask.is_bit_set(nibble) {
                    continue;
                }
                let mut child = path;
                child.push(nibble);
                let mut under = Vec::new();
                let mut leaf = leaves.seek(&child).unwrap();
                while let Some((key, value)) =
                    leaf.filter(|(key, _)| Nibbles::unpack(key).starts_with(&child))
                {
                    under.push((key, value));
                    leaf = leaves.advance().unwrap();
                }
                let [(key, value)] = under.as_slice() else {
                    continue;
                };
                let Some(hash) = quarry_storage::leaf_child_hash(
                    &Nibbles::unpack(key),
                    &child,
                    &leaf_value(value),
                ) else {
                    continue;
                };
                assert!(
                    node.hash_mask.is_bit_set(nibble),
                    "{trie:?} {path:?} {nibble}"
                );
                assert_eq!(
                    node.hash_for_nibble(nibble),
                    hash,
                    "{trie:?} {path:?} {nibble}"
                );
                named += 1;
            }
            entry = nodes.advance().unwrap();
        }
        named
    }

    const KECCAK_EMPTY_CODE: B256 = alloy_primitives::KECCAK256_EMPTY;

    /// A datadir from before the stored trie (plain state only) gets the same trie tables
    /// from `migrate_step`, run in small resumable steps, as the state written at once.
    #[test]
    fn migration_builds_the_trie_of_the_plain_state() {
        let mut rng = TestRng(99);
        let mut model = Model::new();
        for i in 0..150u64 {
            let address = Address::from_word(keccak256(i.to_be_bytes()));
            let slots: BTreeMap<U256, U256> = (0..rng.below(20))
                .map(|s| (U256::from(s * 3), U256::from(1 + rng.below(1000))))
                .collect();
            let fields = StoredAccount {
                nonce: i,
                balance: U256::from(rng.below(1 << 50)),
                code_hash: KECCAK_EMPTY_CODE,
            };
            model.insert(address, (fields, slots));
        }
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let tx = db.writer().unwrap();
        let changes: Vec<quarry_storage::AccountChange> = model
            .iter()
            .map(|(address, (fields, slots))| quarry_storage::AccountChange {
                address: *address,
                account: Some(*fields),
                wiped: false,
                storage: slots
                    .iter()
                    .map(|(slot, value)| (B256::from(*slot), *value))
                    .collect(),
            })
            .collect();
        tx.apply_state_changes(0, &changes, &[]).unwrap();
        tx.commit().unwrap();
        let mut steps = 0;
        loop {
            let tx = db.writer().unwrap();
            let done = tx.migrate_step(40).unwrap();
            tx.commit().unwrap();
            steps += 1;
            if done {
                break;
            }
        }
        assert!(steps > 10, "{steps} steps");
        let (_dir, fresh) = rebuilt(&model);
        assert_eq!(digests(&db), digests(&fresh));
        let root = StateTrie::new().root(&db.reader().unwrap()).unwrap();
        assert_eq!(root, model_root(&model));
    }
}
