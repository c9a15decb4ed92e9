//! The walk a state root and a proof take over one trie: the stored trie (its nodes and
//! leaves, latest or as of an older block) under an overlay of changed nodes and leaves,
//! descending only into subtrees that hold a changed key, with the hash builder fed in key
//! order.

use alloy_primitives::{B256, Bytes, map::HashMap};
use alloy_trie::{
    BranchNodeCompact, EMPTY_ROOT_HASH, HashBuilder, Nibbles, TrieAccount, proof::ProofRetainer,
};
use quarry_storage::{Access, Leaf, LeafCursor, StorageTx, TrieId, TrieNodeCursor};
use std::collections::BTreeMap;

use super::{NodeOverlay, PendingAccount, encode_account, leaf_value, slot_leaves};

/// The stored trie's cursors, for a walk.
pub(super) struct Stored<'tx, K: Access> {
    nodes: TrieNodeCursor<'tx, K>,
    leaves: LeafCursor<'tx, K>,
}

pub(super) fn stored<K: Access>(
    tx: &StorageTx<K>,
    trie: TrieId,
) -> quarry_storage::Result<Stored<'_, K>> {
    stored_after(tx, trie, None)
}

/// The cursors of the trie as it was after `block` (from the trie history), or the latest.
pub(super) fn stored_after<K: Access>(
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
pub(super) fn storage_root<K: Access>(
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
pub(super) fn starts_any(sorted: &[Nibbles], prefix: &Nibbles) -> bool {
    let at = sorted.partition_point(|key| key < prefix);
    sorted.get(at).is_some_and(|key| key.starts_with(prefix))
}

/// A leaf scan's state while a lone leaf may still be given as its hash.
pub(super) enum Lone {
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
pub(super) struct WalkOutcome {
    pub(super) root: B256,
    pub(super) touched: Vec<(Nibbles, BranchNodeCompact)>,
    pub(super) updates: HashMap<Nibbles, BranchNodeCompact>,
    pub(super) proof: Vec<(Nibbles, Bytes)>,
    /// The storage roots the walk gave the accounts of [`Walk::with_kept_storage`].
    pub(super) kept_storage_roots: Vec<(B256, B256)>,
    /// In a walk of the accounts' trie, the storage root of each overlay account's stored
    /// leaf (`None`: no leaf, or empty storage).
    pub(super) stored_storage_roots: Vec<(B256, Option<B256>)>,
}

impl WalkOutcome {
    /// Records in `overlay` how the walked paths' nodes changed.
    pub(super) fn apply_to(&self, overlay: &mut NodeOverlay) {
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
pub(super) struct Walk<'a, 'tx, K: Access> {
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
pub(super) struct LeafScan {
    pub(super) from: B256,
    pub(super) last_fed: Option<B256>,
    pub(super) next: Option<(B256, Leaf)>,
}

impl LeafScan {
    /// `next`, when it is also the first stored leaf at or after `start`.
    pub(super) fn resume_at(self, start: &B256) -> Option<Option<(B256, Leaf)>> {
        let after_fed = match self.last_fed {
            Some(last) => last < *start,
            None => self.from <= *start,
        };
        let before_next = self.next.as_ref().is_none_or(|(key, _)| start <= key);
        (after_fed && before_next).then_some(self.next)
    }
}

impl<'a, 'tx, K: Access> Walk<'a, 'tx, K> {
    pub(super) fn new(
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
    pub(super) fn answer_only(mut self) -> Self {
        self.record = false;
        self.hb.updated_branch_nodes = None;
        self
    }

    /// Gives the accounts of `kept` (keys of the leaf overlay) their stored storage root.
    pub(super) fn with_kept_storage(mut self, kept: &'a BTreeMap<B256, TrieAccount>) -> Self {
        self.kept_storage = Some(kept);
        self
    }

    pub(super) fn run(mut self) -> quarry_storage::Result<WalkOutcome> {
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
    pub(super) fn changed_children(&self, path: &Nibbles) -> u16 {
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
    pub(super) fn feed(
        &mut self,
        prefix: Nibbles,
        may_have_nodes: bool,
    ) -> quarry_storage::Result<()> {
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
    pub(super) fn add_leaf(&mut self, lone: &mut Lone, key: Nibbles, value: Vec<u8>) {
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
    pub(super) fn first_node_under(
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
    pub(super) fn feed_leaves(
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

    pub(super) fn next_stored_leaf(&mut self) -> quarry_storage::Result<Option<(B256, Leaf)>> {
        match &mut self.stored {
            Some(stored) => stored.leaves.advance(),
            None => Ok(None),
        }
    }
}
