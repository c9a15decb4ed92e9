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

use alloy_primitives::{Address, B256, Bytes, U256, keccak256, map::HashMap};
use alloy_rlp::Encodable;
use alloy_trie::{
    BranchNodeCompact, EMPTY_ROOT_HASH, HashBuilder, Nibbles, TrieAccount, proof::ProofRetainer,
};
use quarry_storage::keccak;
use quarry_storage::{
    Access, Leaf, LeafCursor, LeafWriter, RestoredAccount, StorageTx, StoredAccount, TrieId,
    TrieNodeCursor, WriteTx,
};
use std::collections::{BTreeMap, BTreeSet};

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

/// The stored trie's cursors, for a walk.
struct Stored<'tx, K: Access> {
    nodes: TrieNodeCursor<'tx, K>,
    leaves: LeafCursor<'tx, K>,
}

fn stored<K: Access>(tx: &StorageTx<K>, trie: TrieId) -> quarry_storage::Result<Stored<'_, K>> {
    stored_after(tx, trie, None)
}

/// The cursors of the trie as it was after `block` (from the trie history), or the latest.
fn stored_after<K: Access>(
    tx: &StorageTx<K>,
    trie: TrieId,
    block: Option<u64>,
) -> quarry_storage::Result<Stored<'_, K>> {
    Ok(Stored {
        nodes: tx.trie_nodes_after(trie, block)?,
        leaves: tx.trie_leaves_after(trie, block)?,
    })
}

/// The storage root of a pending account, walking its storage trie if slots changed; `None`
/// when its storage is as stored, so that its root is its stored leaf's.
fn storage_root<K: Access>(
    tx: Option<&StorageTx<K>>,
    key: &B256,
    entry: &mut PendingAccount,
) -> quarry_storage::Result<Option<B256>> {
    if entry.dirty_slots.is_empty()
        && let Some(root) = entry.storage_root
    {
        return Ok(Some(root));
    }
    let tx = tx.filter(|_| !entry.wiped);
    if entry.dirty_slots.is_empty() {
        if tx.is_some() {
            return Ok(None);
        }
        entry.storage_root = Some(EMPTY_ROOT_HASH);
        return Ok(Some(EMPTY_ROOT_HASH));
    }
    let leaves = slot_leaves(&entry.slots);
    let changed: Vec<Nibbles> = std::mem::take(&mut entry.dirty_slots)
        .iter()
        .map(Nibbles::unpack)
        .collect();
    let walk = Walk::new(
        tx.map(|tx| stored(tx, TrieId::Storage(*key))).transpose()?,
        &entry.nodes,
        &leaves,
        &changed,
        None,
    );
    let outcome = walk.run()?;
    outcome.apply_to(&mut entry.nodes);
    entry.storage_root = Some(outcome.root);
    Ok(Some(outcome.root))
}

/// Whether some key of `sorted` starts with `prefix`.
fn starts_any(sorted: &[Nibbles], prefix: &Nibbles) -> bool {
    let at = sorted.partition_point(|key| key < prefix);
    sorted.get(at).is_some_and(|key| key.starts_with(prefix))
}

/// A leaf scan's state while a lone leaf may still be given as its hash.
enum Lone {
    /// Every leaf is fed whole.
    Off,
    /// No leaf yet.
    Empty,
    /// One leaf, held back.
    One(Nibbles, Vec<u8>),
    /// More than one: fed whole.
    Many,
}

/// What a walk yields: the root, the stored nodes it replaced, the nodes the trie now has on
/// the walked paths, and the proof nodes of its targets.
struct WalkOutcome {
    root: B256,
    touched: Vec<(Nibbles, BranchNodeCompact)>,
    updates: HashMap<Nibbles, BranchNodeCompact>,
    proof: Vec<(Nibbles, Bytes)>,
    /// The storage roots the walk gave the accounts of [`Walk::with_kept_storage`].
    kept_storage_roots: Vec<(B256, B256)>,
    /// In a walk of the accounts' trie, the storage root of each overlay account's stored
    /// leaf (`None`: no leaf, or empty storage).
    stored_storage_roots: Vec<(B256, Option<B256>)>,
}

impl WalkOutcome {
    /// Records in `overlay` how the walked paths' nodes changed.
    fn apply_to(&self, overlay: &mut NodeOverlay) {
        for (path, old) in &self.touched {
            match self.updates.get(path) {
                Some(new) if new == old => {}
                Some(new) => {
                    overlay.insert(*path, Some(new.clone()));
                }
                None => {
                    overlay.insert(*path, None);
                }
            }
        }
        let touched: std::collections::HashSet<&Nibbles> =
            self.touched.iter().map(|(path, _)| path).collect();
        for (path, node) in &self.updates {
            if !touched.contains(path) {
                overlay.insert(*path, Some(node.clone()));
            }
        }
    }
}

/// One walk over a trie: the stored trie (if it counts) under an overlay of nodes and leaves,
/// descending only into subtrees that hold a changed key.
struct Walk<'a, 'tx, K: Access> {
    stored: Option<Stored<'tx, K>>,
    node_overlay: &'a NodeOverlay,
    /// Leaves by hashed key: the encoded value, or `None` when deleted.
    leaf_overlay: &'a BTreeMap<B256, Option<Vec<u8>>>,
    /// Changed keys, sorted.
    changed: &'a [Nibbles],
    /// The keys the leaf overlay deletes, sorted: a branch above one may lose children and
    /// collapse, so its leaf children must be fed as leaves (a leaf moves up; a hash cannot).
    deleted: Vec<Nibbles>,
    /// Whether a lone leaf under a branch's child may be given to the hash builder as its hash
    /// (not in proofs, which need the leaf nodes on their paths).
    leaf_hashes: bool,
    /// Whether the outcome keeps what a write needs (`touched`, `fed`, the hash builder's
    /// updates); not in a walk whose root and proofs are all it answers.
    record: bool,
    /// The leaves fed whole, in key order, to complete the nodes built with their hashes.
    fed: Vec<(Nibbles, Vec<u8>)>,
    hb: HashBuilder,
    touched: Vec<(Nibbles, BranchNodeCompact)>,
    /// Where the last leaf scan left the stored leaf cursor, so that the next scan, which
    /// starts after it (the walk goes in key order), need not seek again.
    leaf_scan: Option<LeafScan>,
    /// Accounts of the leaf overlay whose storage root is their stored leaf's (the empty
    /// root without one); the walk fills it in as it passes them.
    kept_storage: Option<&'a BTreeMap<B256, TrieAccount>>,
    kept_storage_roots: Vec<(B256, B256)>,
    stored_storage_roots: Vec<(B256, Option<B256>)>,
}

/// The stored leaf cursor after a scan: `next` is the first stored leaf after `last_fed` (or
/// from `from`, when the scan fed nothing stored), and the cursor stands on it.
struct LeafScan {
    from: B256,
    last_fed: Option<B256>,
    next: Option<(B256, Leaf)>,
}

impl LeafScan {
    /// `next`, when it is also the first stored leaf at or after `start`.
    fn resume_at(self, start: &B256) -> Option<Option<(B256, Leaf)>> {
        let after_fed = match self.last_fed {
            Some(last) => last < *start,
            None => self.from <= *start,
        };
        let before_next = self.next.as_ref().is_none_or(|(key, _)| start <= key);
        (after_fed && before_next).then_some(self.next)
    }
}

impl<'a, 'tx, K: Access> Walk<'a, 'tx, K> {
    fn new(
        stored: Option<Stored<'tx, K>>,
        node_overlay: &'a NodeOverlay,
        leaf_overlay: &'a BTreeMap<B256, Option<Vec<u8>>>,
        changed: &'a [Nibbles],
        proof_targets: Option<Vec<Nibbles>>,
    ) -> Self {
        let hb = HashBuilder::default().with_updates(true);
        let leaf_hashes = proof_targets.is_none();
        let deleted = leaf_overlay
            .iter()
            .filter(|(_, value)| value.is_none())
            .map(|(key, _)| Nibbles::unpack(key))
            .collect();
        let hb = match proof_targets {
            Some(targets) => hb.with_proof_retainer(ProofRetainer::new(targets)),
            None => hb,
        };
        Self {
            stored,
            node_overlay,
            leaf_overlay,
            changed,
            deleted,
            leaf_hashes,
            record: true,
            fed: Vec::new(),
            hb,
            touched: Vec::new(),
            leaf_scan: None,
            kept_storage: None,
            kept_storage_roots: Vec::new(),
            stored_storage_roots: Vec::new(),
        }
    }

    /// A walk for an answer (a proof, an older storage root): the nodes it builds and passes
    /// are dropped as it goes instead of kept for a write, so an older state's proof, which
    /// walks every reverted account's storage, holds only the paths it is on.
    fn answer_only(mut self) -> Self {
        self.record = false;
        self.hb.updated_branch_nodes = None;
        self
    }

    /// Gives the accounts of `kept` (keys of the leaf overlay) their stored storage root.
    fn with_kept_storage(mut self, kept: &'a BTreeMap<B256, TrieAccount>) -> Self {
        self.kept_storage = Some(kept);
        self
    }

    fn run(mut self) -> quarry_storage::Result<WalkOutcome> {
        self.feed(Nibbles::default(), true)?;
        let root = self.hb.root();
        let proof = self
            .hb
            .take_proof_nodes()
            .into_nodes_sorted()
            .into_iter()
            .collect();
        let (_, mut updates) = self.hb.split();
        quarry_storage::complete_leaf_hashes(&mut updates, &self.fed);
        Ok(WalkOutcome {
            root,
            touched: self.touched,
            updates,
            proof,
            kept_storage_roots: self.kept_storage_roots,
            stored_storage_roots: self.stored_storage_roots,
        })
    }

    /// The children of the node at `path` (a nibble each) that hold a changed key: one pass
    /// over the changed keys under it instead of a search per child.
    fn changed_children(&self, path: &Nibbles) -> u16 {
        let from = self.changed.partition_point(|key| key < path);
        let depth = path.len();
        self.changed[from..]
            .iter()
            .take_while(|key| key.starts_with(path))
            .filter(|key| key.len() > depth)
            .fold(0u16, |mask, key| mask | 1 << key.get_unchecked(depth))
    }

    /// Feeds the hash builder everything under `prefix`, which holds a changed key (or whose
    /// hash is not stored). `may_have_nodes`: the stored trie may hold nodes under it.
    fn feed(&mut self, prefix: Nibbles, may_have_nodes: bool) -> quarry_storage::Result<()> {
        let node = if may_have_nodes {
            self.first_node_under(&prefix)?
        } else {
            None
        };
        let Some((path, node)) = node else {
            return self.feed_leaves(&prefix, &prefix, None, None);
        };
        // Keys under `prefix` before the node's subtree (new keys only, in a trie walked at its
        // own state); none when the node is at `prefix` itself, the common case.
        if path != prefix {
            self.feed_leaves(&prefix, &prefix, Some(&path), None)?;
        }
        // Without deletions below, the branch keeps every child, so a lone leaf stays where it
        // is and its hash stands for it.
        let may_collapse = starts_any(&self.deleted, &path);
        let changed_children = self.changed_children(&path);
        let leaf_hashes = self.leaf_hashes && !may_collapse;
        for nibble in 0u8..16 {
            let mut child = path;
            child.push(nibble);
            let exists = node.state_mask.is_bit_set(nibble);
            let changed = changed_children & (1 << nibble) != 0;
            if !exists && !changed {
                continue;
            }
            let in_tree = node.tree_mask.is_bit_set(nibble);
            // A hashed child outside the stored tree may be a leaf, which a collapsing branch
            // must move up, so then it is fed whole.
            if exists && !changed && node.hash_mask.is_bit_set(nibble) && (in_tree || !may_collapse)
            {
                self.hb
                    .add_branch(child, node.hash_for_nibble(nibble), in_tree);
            } else if in_tree {
                self.feed(child, true)?;
            } else {
                let lone_leaf_at = leaf_hashes.then_some(&child);
                self.feed_leaves(&child, &child, None, lone_leaf_at)?;
            }
        }
        if self.record {
            self.touched.push((path, node));
        }
        // Keys under `prefix` after the node's subtree.
        if let Some(after) = path.increment().filter(|after| after.starts_with(&prefix)) {
            self.feed_leaves(&prefix, &after, None, None)?;
        }
        Ok(())
    }

    /// Gives the hash builder one leaf: whole, or, when it is alone under `lone_leaf_at` so
    /// far, held back in `lone` until the scan shows whether another follows.
    fn add_leaf(&mut self, lone: &mut Lone, key: Nibbles, value: Vec<u8>) {
        match std::mem::replace(lone, Lone::Many) {
            Lone::Off | Lone::Many => {}
            Lone::Empty => {
                *lone = Lone::One(key, value);
                return;
            }
            Lone::One(first, first_value) => {
                self.hb.add_leaf(first, &first_value);
                if self.record {
                    self.fed.push((first, first_value));
                }
            }
        }
        self.hb.add_leaf(key, &value);
        if self.record {
            self.fed.push((key, value));
        }
    }

    /// The first node (stored, or in the overlay) whose path starts with `prefix`.
    fn first_node_under(
        &mut self,
        prefix: &Nibbles,
    ) -> quarry_storage::Result<Option<(Nibbles, BranchNodeCompact)>> {
        let mut from_store = match &mut self.stored {
            Some(stored) => stored.nodes.seek(prefix)?,
            None => None,
        };
        // Stored nodes the overlay replaced or deleted are skipped.
        while let Some((path, _)) = &from_store {
            if !self.node_overlay.contains_key(path) {
                break;
            }
            from_store = match &mut self.stored {
                Some(stored) => stored.nodes.advance()?,
                None => None,
            };
        }
        let from_overlay = self
            .node_overlay
            .range(*prefix..)
            .find_map(|(path, node)| node.as_ref().map(|node| (*path, node.clone())));
        let first = match (from_store, from_overlay) {
            (Some(a), Some(b)) => Some(if a.0 < b.0 { a } else { b }),
            (a, b) => a.or(b),
        };
        Ok(first.filter(|(path, _)| path.starts_with(prefix)))
    }

    /// Feeds every leaf whose key starts with `prefix`, from the smallest key under `from`
    /// on, stopping before `until`'s subtree. `lone_leaf_at`: the child of a branch that
    /// `prefix` is, whose leaf, if it is the only one, is given as its hash at that place.
    fn feed_leaves(
        &mut self,
        prefix: &Nibbles,
        from: &Nibbles,
        until: Option<&Nibbles>,
        lone_leaf_at: Option<&Nibbles>,
    ) -> quarry_storage::Result<()> {
        let mut lone = if lone_leaf_at.is_some() {
            Lone::Empty
        } else {
            Lone::Off
        };
        let start = quarry_storage::first_key_under(from);
        let mut overlay = self.leaf_overlay.range(start..).peekable();
        let resumed = self
            .leaf_scan
            .take()
            .and_then(|scan| scan.resume_at(&start));
        let mut stored = match (resumed, &mut self.stored) {
            (Some(next), _) => next,
            (None, Some(stored)) => stored.leaves.seek(from)?,
            (None, None) => None,
        };
        let mut last_fed = None;
        loop {
            let stored_key = stored.as_ref().map(|(key, _)| *key);
            let overlay_key = overlay.peek().map(|(key, _)| **key);
            let (key, from_overlay) = match (stored_key, overlay_key) {
                (Some(s), Some(o)) => (s.min(o), o <= s),
                (Some(s), None) => (s, false),
                (None, Some(o)) => (o, true),
                (None, None) => break,
            };
            let nibbles = Nibbles::unpack(key);
            if !nibbles.starts_with(prefix) || until.is_some_and(|until| nibbles >= *until) {
                break;
            }
            if from_overlay {
                // In the accounts' walk: the storage root in this account's stored leaf (the
                // empty root without one), its root before the changes.
                let stored_root = self.kept_storage.map(|_| match &stored {
                    Some((stored_key, Leaf::Account(before))) if *stored_key == key => {
                        before.storage_root
                    }
                    _ => EMPTY_ROOT_HASH,
                });
                if let Some(root) = stored_root {
                    let root = Some(root).filter(|root| *root != EMPTY_ROOT_HASH);
                    self.stored_storage_roots.push((key, root));
                }
                if let Some((_, Some(value))) = overlay.next() {
                    let kept = self.kept_storage.and_then(|kept| kept.get(&key));
                    let value = match kept.zip(stored_root) {
                        Some((account, storage_root)) => {
                            self.kept_storage_roots.push((key, storage_root));
                            encode_account(&TrieAccount {
                                storage_root,
                                ..*account
                            })
                        }
                        None => value.clone(),
                    };
                    self.add_leaf(&mut lone, nibbles, value);
                }
                if stored_key == Some(key) {
                    last_fed = Some(key);
                    stored = self.next_stored_leaf()?;
                }
            } else {
                if let Some((_, leaf)) = &stored {
                    self.add_leaf(&mut lone, nibbles, leaf_value(leaf));
                }
                last_fed = Some(key);
                stored = self.next_stored_leaf()?;
            }
        }
        if let (Lone::One(key, value), Some(at)) = (lone, lone_leaf_at) {
            match quarry_storage::leaf_child_hash(&key, at, &value) {
                Some(hash) => self.hb.add_branch(*at, hash, false),
                None => self.add_leaf(&mut Lone::Off, key, value),
            }
        }
        if self.stored.is_some() {
            self.leaf_scan = Some(LeafScan {
                from: start,
                last_fed,
                next: stored,
            });
        }
        Ok(())
    }

    fn next_stored_leaf(&mut self) -> quarry_storage::Result<Option<(B256, Leaf)>> {
        match &mut self.stored {
            Some(stored) => stored.leaves.advance(),
            None => Ok(None),
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_trie::proof::verify_proof;
    use quarry_storage::{Database, Table};

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
