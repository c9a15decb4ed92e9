//! Executing and verifying one block on top of the state in a storage transaction.

use crate::{
    chain_spec::ChainSpec,
    collision::StorageCollision,
    error::{BlockError, Error, Invalid, Result},
    receipt_builder::{ReceiptsWithoutBloom, fill_blooms},
    state_db::{StateAt, StateSnapshot},
    state_root::StateTrie,
    verify,
};
use alloy_consensus::{
    Eip658Value, Header, ReceiptEnvelope, Transaction, TxEnvelope, TxReceipt,
    proofs::{calculate_ommers_root, calculate_receipt_root, calculate_transaction_root},
    transaction::Recovered,
};
use alloy_eips::{
    eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS,
    eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS, eip7685::EMPTY_REQUESTS_HASH,
};
use alloy_evm::{
    EthEvmFactory, Evm, EvmEnv, EvmFactory,
    block::{BlockExecutionError, BlockExecutor},
    eth::{EthBlockExecutionCtx, EthBlockExecutor, dao_fork},
};
use alloy_hardforks::EthereumHardforks;
use alloy_primitives::{Address, B256, Bloom, Bytes, TxKind, U256, map::HashMap};
use quarry_storage::Access;
use quarry_storage::keccak::{self, keccak256_each};
use quarry_storage::{
    AccountChange, ReceiptOutcome, StorageRootBefore, StorageTx, StoredAccount, StoredBody,
    StoredReceipt,
};
use revm::{
    Database as _, DatabaseCommit as _,
    context::Block as _,
    database::{AccountStatus, CacheState, State, states::bundle_state::BundleRetention},
    state::Account,
};
use std::{
    borrow::Cow,
    collections::HashSet,
    time::{Duration, Instant},
};

/// A decoded block whose hash is known and whose senders are recovered.
#[derive(Debug, Clone)]
pub struct SealedBlock {
    pub hash: B256,
    pub header: Header,
    pub body: StoredBody,
    pub senders: Vec<Address>,
}

/// What executing a verified block produced, ready to be stored.
#[derive(Debug, Clone)]
pub struct ExecutedBlock {
    pub receipts: Vec<StoredReceipt>,
    pub accounts: Vec<AccountChange>,
    pub bytecodes: Vec<(B256, Bytes)>,
    pub total_difficulty: U256,
    /// Time spent updating the state trie and computing roots, part of the execution time.
    pub state_root_time: std::time::Duration,
    /// The block's changes to the stored state trie (hashed state and nodes), to write with it;
    /// empty for a block of a range, whose changes are in the range's trie.
    pub trie: StateTrie,
    /// What the block's changesets record of the storage root before it, for each account it
    /// changed whose root is not its stored leaf's (by hashed address).
    pub storage_roots_before: HashMap<B256, StorageRootBefore>,
    /// Every address the block's call frames name, and its rewarded miners: the trace index's
    /// entries for the block (unsorted, repeated).
    pub trace_addresses: Vec<Address>,
}

/// Accounts and storage slots are kept in an [`ExecutionCache`] up to this many, together; past
/// it the cache is emptied, so its memory stays bounded whatever the size of the state.
const EXECUTION_CACHE_ENTRIES: usize = 1 << 18;
/// How many blocks go between two counts of a cache's entries (a count visits every account).
const EXECUTION_CACHE_COUNT_EVERY: u32 = 32;

/// The accounts, storage slots and code that revm read or wrote while executing the blocks
/// before, as they are after the last of them: a child of that block starts from them instead
/// of reading them from the database again, as reth's executor keeps its state across a range.
/// The state after a block depends only on the block's hash, so the cache is used only by a
/// block whose parent hash is the block it follows; any other block (a reorganisation, a retry
/// after a failure) starts empty.
#[derive(Debug, Default)]
pub struct ExecutionCache {
    /// The block the cached state is the state after.
    after: Option<B256>,
    state: CacheState,
    /// Blocks executed since the entries were last counted.
    uncounted: u32,
}

impl ExecutionCache {
    /// The cached state if it is the state after `parent`, else an empty one.
    fn take_for(&mut self, parent: B256) -> CacheState {
        let state = std::mem::take(&mut self.state);
        match self.after.take() {
            Some(after) if after == parent => state,
            _ => CacheState::default(),
        }
    }

    /// Keeps `state`, the state after block `hash`, unless it has grown past the bound.
    fn keep(&mut self, hash: B256, state: CacheState) {
        self.uncounted += 1;
        if self.uncounted >= EXECUTION_CACHE_COUNT_EVERY {
            self.uncounted = 0;
            if cache_entries(&state) > EXECUTION_CACHE_ENTRIES {
                *self = Self::default();
                return;
            }
        }
        self.after = Some(hash);
        self.state = state;
    }
}

/// Accounts and storage slots a cache holds.
fn cache_entries(state: &CacheState) -> usize {
    state
        .accounts
        .values()
        .map(|account| 1 + account.account.as_ref().map_or(0, |a| a.storage.len()))
        .sum()
}

/// Executes `block` on the state in `tx` (which must be the state after `parent`, with its
/// state trie stored) and checks it completely. On any failure nothing is returned to store.
/// `cache` holds what executing the blocks before left in memory; it is used if it is the
/// state after the block's parent, and then holds the state after this block if it is valid.
pub fn execute_block<K: Access>(
    spec: &ChainSpec,
    tx: &StorageTx<K>,
    block: &SealedBlock,
    cache: &mut ExecutionCache,
) -> Result<ExecutedBlock> {
    execute(spec, tx, block, cache, Roots::PerBlock)
}

/// As [`execute_block`], for a block of a range whose state root is checked once, at its end
/// (an import of a long chain, as reth's pipeline checks it): every other check is made, the
/// block's state changes go into `range` (the trie of every block of the range so far), and
/// the caller takes `range`'s root after the range's last block and compares it with that
/// block's header. No storage root is taken inside the range either: the block's changesets
/// record an account's storage root before it only where the range has not yet changed that
/// account's storage (its stored leaf's), which is all a proof reads (proofs read the trie at
/// the range's ends). Not before Byzantium, whose receipts hold the state root after each
/// transaction.
pub fn execute_block_in_range<K: Access>(
    spec: &ChainSpec,
    tx: &StorageTx<K>,
    block: &SealedBlock,
    cache: &mut ExecutionCache,
    range: &mut StateTrie,
) -> Result<ExecutedBlock> {
    execute(spec, tx, block, cache, Roots::InRange(range))
}

/// Which state roots executing a block takes.
enum Roots<'a> {
    /// The block's own, checked against its header.
    PerBlock,
    /// None: the block's changes go into a range's trie.
    InRange(&'a mut StateTrie),
}

fn execute<K: Access>(
    spec: &ChainSpec,
    tx: &StorageTx<K>,
    block: &SealedBlock,
    cache: &mut ExecutionCache,
    roots: Roots<'_>,
) -> Result<ExecutedBlock> {
    let header = &block.header;
    let reject = |invalid: Invalid| -> Error {
        BlockError {
            number: header.number,
            hash: block.hash,
            invalid,
        }
        .into()
    };

    if header.number == 0 {
        return Err(reject(Invalid::Rule("block 0 is the genesis block".into())));
    }
    let parent_number = header.number - 1;
    let parent_hash = tx.canonical_hash(parent_number)?;
    if parent_hash != Some(header.parent_hash) {
        return Err(reject(Invalid::mismatch(
            "parent hash",
            header.parent_hash,
            parent_hash.map_or("no stored parent".into(), |h| h.to_string()),
        )));
    }
    let (parent, parent_td) = stored_parent(tx, parent_number)?;
    let merged = spec.is_merged(parent_td, header.timestamp);

    verify::check_header(spec, header, &parent, merged)
        .map_err(|rule| reject(Invalid::Rule(rule)))?;
    // The transactions root needs only the body, so a thread of rayon's pool hashes it while
    // this one executes; a mismatch still rejects the block before anything else does.
    let mut transactions_root = Ok(());
    let outcome = rayon::in_place_scope(|scope| {
        scope.spawn(|_| transactions_root = check_transactions_root(block));
        check_body_rest(spec, tx, block, merged)
            .and_then(|()| {
                if block.senders.len() != block.body.transactions.len() {
                    return Err(Invalid::Rule(
                        "sender count differs from transaction count".into(),
                    ));
                }
                Ok(())
            })
            .map_err(RunError::Invalid)
            .and_then(|()| {
                let prestate = cache.take_for(header.parent_hash);
                run(spec, tx, block, merged, prestate, roots)
            })
            .and_then(|(executed, outputs, state)| {
                check_outputs(header, &outputs).map(|()| (executed, state))
            })
    });
    let outcome = transactions_root.map_err(RunError::Invalid).and(outcome);
    let outcome = outcome.map(|(executed, state)| {
        cache.keep(block.hash, state);
        executed
    });
    finish(outcome, parent_td + header.difficulty, reject)
}

/// What the builder of a new block chooses. Everything else in its header follows from the
/// parent (difficulty, base fee, excess blob gas), from the body (roots) or from execution
/// (gas used, receipts root, bloom, requests hash, state root). Fork fields a fork does not
/// have yet are left out whatever the template says.
#[derive(Debug, Clone, Default)]
pub struct BlockTemplate {
    pub timestamp: u64,
    pub beneficiary: Address,
    pub gas_limit: u64,
    pub extra_data: Bytes,
    /// The proof-of-work mix hash before the merge, prevrandao after it.
    pub mix_hash: B256,
    /// The proof-of-work nonce; zero after the merge.
    pub nonce: alloy_primitives::B64,
    pub parent_beacon_block_root: B256,
    pub ommers: Vec<Header>,
    pub transactions: Vec<TxEnvelope>,
    pub senders: Vec<Address>,
    pub withdrawals: Vec<alloy_eips::eip4895::Withdrawal>,
}

/// Builds the block that follows the stored head from `template`: executes it with the same
/// code `execute_block` verifies with, fills in the header, checks it against every header and
/// body rule.
pub fn build_block<K: Access>(
    spec: &ChainSpec,
    tx: &StorageTx<K>,
    template: BlockTemplate,
) -> Result<(SealedBlock, ExecutedBlock)> {
    let missing = |what: &str| Error::Storage(quarry_storage::Error::Corrupt(format!("no {what}")));
    let (parent_number, parent_hash) = tx.head()?.ok_or_else(|| missing("head"))?;
    let (parent, parent_td) = stored_parent(tx, parent_number)?;
    let timestamp = template.timestamp;
    let merged = spec.is_merged(parent_td, timestamp);
    let withdrawals = spec
        .is_shanghai_active_at_timestamp(timestamp)
        .then(|| alloy_eips::eip4895::Withdrawals::new(template.withdrawals));
    let cancun = spec.is_cancun_active_at_timestamp(timestamp);
    let header = Header {
        parent_hash,
        ommers_hash: calculate_ommers_root(&template.ommers),
        beneficiary: template.beneficiary,
        transactions_root: calculate_transaction_root(&template.transactions),
        withdrawals_root: withdrawals
            .as_ref()
            .map(|w| alloy_consensus::proofs::calculate_withdrawals_root(w)),
        difficulty: if merged {
            U256::ZERO
        } else {
            verify::pow_difficulty(spec, timestamp, &parent)
        },
        number: parent_number + 1,
        gas_limit: template.gas_limit,
        timestamp,
        extra_data: template.extra_data,
        mix_hash: template.mix_hash,
        nonce: if merged {
            Default::default()
        } else {
            template.nonce
        },
        base_fee_per_gas: verify::expected_base_fee(spec, &parent),
        blob_gas_used: cancun.then_some(0),
        excess_blob_gas: verify::expected_excess_blob_gas(spec, timestamp, &parent),
        parent_beacon_block_root: cancun.then_some(template.parent_beacon_block_root),
        requests_hash: spec
            .is_prague_active_at_timestamp(timestamp)
            .then_some(EMPTY_REQUESTS_HASH),
        ..Default::default()
    };
    let mut block = SealedBlock {
        hash: B256::ZERO,
        header,
        body: StoredBody {
            transactions: template.transactions,
            ommers: template.ommers,
            withdrawals,
        },
        senders: template.senders,
    };
    let number = block.header.number;
    let reject = |invalid: Invalid| -> Error {
        BlockError {
            number,
            hash: B256::ZERO,
            invalid,
        }
        .into()
    };
    check_body(spec, tx, &block, merged).map_err(reject)?;
    let outcome = run(
        spec,
        tx,
        &block,
        merged,
        CacheState::default(),
        Roots::PerBlock,
    )
    .and_then(|(executed, outputs, _)| {
        let header = &mut block.header;
        header.gas_used = outputs.gas_used;
        header.receipts_root = outputs.receipts_root;
        header.logs_bloom = outputs.logs_bloom;
        header.state_root = outputs.state_root.unwrap_or_default();
        if header.blob_gas_used.is_some() {
            header.blob_gas_used = Some(outputs.blob_gas_used);
        }
        if header.requests_hash.is_some() {
            header.requests_hash = Some(outputs.requests_hash);
        }
        verify::check_header(spec, header, &parent, merged).map_err(Invalid::Rule)?;
        Ok(executed)
    });
    let executed = finish(outcome, parent_td + block.header.difficulty, reject)?;
    block.hash = block.header.hash_slow();
    Ok((block, executed))
}

/// The executed block with its total difficulty, or the error that rejected it.
fn finish(
    outcome: std::result::Result<ExecutedBlock, RunError>,
    total_difficulty: U256,
    reject: impl Fn(Invalid) -> Error,
) -> Result<ExecutedBlock> {
    match outcome {
        Ok(executed) => Ok(ExecutedBlock {
            total_difficulty,
            ..executed
        }),
        Err(invalid) => Err(match invalid {
            RunError::Invalid(invalid) => reject(invalid),
            RunError::Internal(err) => err,
        }),
    }
}

/// The stored header of block `number` and the total difficulty through it.
fn stored_parent<K: Access>(tx: &StorageTx<K>, number: u64) -> Result<(Header, U256)> {
    let header = stored(tx.header(number)?, "header", number)?;
    let td = stored(tx.total_difficulty(number)?, "total difficulty", number)?;
    Ok((header, td))
}

fn stored<T>(value: Option<T>, what: &str, number: u64) -> Result<T> {
    value.ok_or_else(|| {
        Error::Storage(quarry_storage::Error::Corrupt(format!(
            "no {what} stored for block {number}"
        )))
    })
}

enum RunError {
    Invalid(Invalid),
    Internal(Error),
}

impl From<Error> for RunError {
    fn from(err: Error) -> Self {
        RunError::Internal(err)
    }
}

impl From<quarry_storage::Error> for RunError {
    fn from(err: quarry_storage::Error) -> Self {
        RunError::Internal(Error::Storage(err))
    }
}

impl From<Invalid> for RunError {
    fn from(invalid: Invalid) -> Self {
        RunError::Invalid(invalid)
    }
}

/// Checks of the body against the header and of the uncles (geth's `VerifyUncles`).
fn check_body<K: Access>(
    spec: &ChainSpec,
    tx: &StorageTx<K>,
    block: &SealedBlock,
    merged: bool,
) -> std::result::Result<(), Invalid> {
    check_transactions_root(block)?;
    check_body_rest(spec, tx, block, merged)
}

fn check_transactions_root(block: &SealedBlock) -> std::result::Result<(), Invalid> {
    let expected = block.header.transactions_root;
    let root = batched_root(|| calculate_transaction_root(&block.body.transactions));
    if root != expected {
        return Err(Invalid::mismatch("transactionsRoot", expected, root));
    }
    Ok(())
}

/// The body's checks after its transactions root: ommers, withdrawals and uncles.
fn check_body_rest<K: Access>(
    spec: &ChainSpec,
    tx: &StorageTx<K>,
    block: &SealedBlock,
    merged: bool,
) -> std::result::Result<(), Invalid> {
    let header = &block.header;
    let body = &block.body;
    let ommers_root = calculate_ommers_root(&body.ommers);
    if ommers_root != header.ommers_hash {
        return Err(Invalid::mismatch(
            "ommersHash",
            header.ommers_hash,
            ommers_root,
        ));
    }
    match (&body.withdrawals, header.withdrawals_root) {
        (Some(withdrawals), Some(expected)) => {
            let root = alloy_consensus::proofs::calculate_withdrawals_root(withdrawals);
            if root != expected {
                return Err(Invalid::mismatch("withdrawalsRoot", expected, root));
            }
        }
        (None, None) => {}
        (Some(_), None) => return Err(Invalid::Rule("withdrawals without withdrawalsRoot".into())),
        (None, Some(_)) => return Err(Invalid::Rule("withdrawalsRoot without withdrawals".into())),
    }
    if merged || body.ommers.is_empty() {
        return Ok(());
    }
    check_uncles(spec, tx, block).map_err(Invalid::Rule)
}

fn check_uncles<K: Access>(
    spec: &ChainSpec,
    tx: &StorageTx<K>,
    block: &SealedBlock,
) -> std::result::Result<(), String> {
    const MAX_UNCLES: usize = 2;
    const GENERATIONS: u64 = 7;
    let header = &block.header;
    if block.body.ommers.len() > MAX_UNCLES {
        return Err(format!(
            "{} uncles, at most {MAX_UNCLES} allowed",
            block.body.ommers.len()
        ));
    }
    let storage_err = |e: quarry_storage::Error| e.to_string();
    let mut ancestors = std::collections::HashMap::new();
    let mut seen_uncles = HashSet::new();
    let first = header.number.saturating_sub(GENERATIONS);
    for number in (first..header.number).rev() {
        let Some(ancestor) = tx.header(number).map_err(storage_err)? else {
            break;
        };
        let hash = ancestor.hash_slow();
        if let Some(body) = tx.body(number).map_err(storage_err)? {
            seen_uncles.extend(body.ommers.iter().map(Header::hash_slow));
        }
        ancestors.insert(hash, ancestor);
    }
    seen_uncles.insert(block.hash);
    for uncle in &block.body.ommers {
        let hash = uncle.hash_slow();
        if !seen_uncles.insert(hash) {
            return Err(format!("uncle {hash} is duplicated or already included"));
        }
        if ancestors.contains_key(&hash) {
            return Err(format!("uncle {hash} is an ancestor"));
        }
        let Some(uncle_parent) = ancestors.get(&uncle.parent_hash) else {
            return Err(format!(
                "uncle {hash} has a parent that is not a recent ancestor"
            ));
        };
        if uncle.parent_hash == header.parent_hash {
            return Err(format!("uncle {hash} is a sibling of the block"));
        }
        let uncle_parent_td = tx
            .total_difficulty(uncle_parent.number)
            .map_err(storage_err)?
            .unwrap_or_default();
        let uncle_merged = spec.is_merged(uncle_parent_td, uncle.timestamp);
        verify::check_header(spec, uncle, uncle_parent, uncle_merged)
            .map_err(|rule| format!("uncle {hash}: {rule}"))?;
    }
    Ok(())
}

/// Executes the block from `prestate` (revm's cache of the state before it, or empty) and the
/// state in `tx`; returns what it produced, its header fields and revm's cache after it.
fn run<K: Access>(
    spec: &ChainSpec,
    tx: &StorageTx<K>,
    block: &SealedBlock,
    merged: bool,
    prestate: CacheState,
    mut roots: Roots<'_>,
) -> std::result::Result<(ExecutedBlock, Outputs, CacheState), RunError> {
    let header = &block.header;
    let rules = spec.at_block(merged);
    let byzantium = spec.is_byzantium_active_at_block(header.number);
    if !byzantium && matches!(roots, Roots::InRange(_)) {
        return Err(RunError::Internal(Error::Execution(format!(
            "block {} is before Byzantium: its state roots cannot wait for a range's end",
            header.number
        ))));
    }
    let blob_params = spec.blob_params_at(header.timestamp);
    let env = EvmEnv::for_eth_block(header, rules, spec.chain_id, blob_params);
    let blob_gas_price = env.block_env.blob_gasprice().unwrap_or_default();
    let base_fee = header.base_fee_per_gas;

    let mut state = State::builder()
        .with_database_ref(StateSnapshot::new(tx, StateAt::Latest))
        .with_cached_prestate(prestate)
        .with_bundle_update()
        .build();
    let evm = EthEvmFactory::default().create_evm_with_inspector(
        &mut state,
        env,
        StorageCollision {
            error: None,
            frames: Some(Vec::new()),
        },
    );
    let evm = crate::eip1283::for_block(spec, header.number, evm);
    let mut executor =
        EthBlockExecutor::new(evm, execution_ctx(block), rules, ReceiptsWithoutBloom);
    executor
        .apply_pre_execution_changes()
        .map_err(execution_error)?;
    if spec.dao_fork_block() == Some(header.number) {
        let pre_eip161 = !spec.is_spurious_dragon_active_at_block(header.number);
        apply_dao_drain(executor.evm_mut().db_mut(), pre_eip161)
            .map_err(|e| RunError::Internal(Error::Execution(e.to_string())))?;
    }

    let mut trie = StateTrie::new();
    let mut post_states = Vec::new();
    let mut state_root_time = Duration::ZERO;
    let mut meta = Vec::with_capacity(block.body.transactions.len());
    for (index, (transaction, sender)) in block
        .body
        .transactions
        .iter()
        .zip(&block.senders)
        .enumerate()
    {
        check_replay_protection(spec, header.number, index, transaction)?;
        executor
            .execute_transaction(Recovered::new_unchecked(transaction, *sender))
            .map_err(|err| match err {
                BlockExecutionError::Validation(err) => {
                    invalid_transaction(index, transaction, err.to_string())
                }
                err => execution_error(err),
            })?;
        if let Some(e) = executor.evm_mut().inspector_mut().error.take() {
            return Err(RunError::Internal(Error::Storage(e)));
        }
        meta.push(tx_meta(transaction, *sender, base_fee, blob_gas_price));
        if !byzantium {
            // Before Byzantium each receipt commits to the state root after its transaction.
            let db = executor.evm_mut().db_mut();
            db.merge_transitions(BundleRetention::PlainState);
            let started = Instant::now();
            apply_bundle(&mut trie, &db.bundle_state, None);
            post_states.push(trie.root(tx)?);
            state_root_time += started.elapsed();
        }
    }

    if spec.is_prague_active_at_timestamp(header.timestamp) {
        check_request_contracts(executor.evm_mut().db_mut())?;
    }
    let mut trace_addresses = executor
        .evm_mut()
        .inspector_mut()
        .frames
        .take()
        .unwrap_or_default();
    trace_addresses.push(header.beneficiary);
    trace_addresses.extend(block.body.ommers.iter().map(|ommer| ommer.beneficiary));
    let (_, result) = executor.finish().map_err(execution_error)?;
    state.merge_transitions(BundleRetention::PlainState);
    let bundle = state.take_bundle();
    let mut receipts = result.receipts;
    for (receipt, root) in receipts.iter_mut().zip(&post_states) {
        receipt_mut(receipt).status = Eip658Value::PostState(*root);
    }
    let started = Instant::now();
    let mut storage_roots_before = HashMap::default();
    match &mut roots {
        Roots::PerBlock => {
            apply_bundle(&mut trie, &bundle, None);
        }
        Roots::InRange(range) => {
            apply_bundle_in_range(tx, range, &bundle, &mut storage_roots_before)?;
        }
    }
    // The receipts' blooms (left out while executing, see receipts.rs), root and stored form
    // need only the receipts, and the changes to store only the bundle: a thread of rayon's
    // pool makes them while this one walks the state trie, which reads the storage transaction.
    let mut side = None;
    let state_root = rayon::in_place_scope(|scope| {
        let (receipts, bundle, side) = (&mut receipts, &bundle, &mut side);
        scope.spawn(move |_| {
            fill_blooms(receipts);
            *side = Some((
                batched_root(|| calculate_receipt_root(receipts)),
                receipts.iter().fold(Bloom::ZERO, |acc, r| acc | r.bloom()),
                stored_receipts(receipts, meta),
                bundle_changes(bundle),
            ));
        });
        match roots {
            Roots::PerBlock => trie.root(tx).map(Some),
            Roots::InRange(_) => Ok(None),
        }
    });
    let Some((receipts_root, logs_bloom, stored_receipts, accounts)) = side else {
        unreachable!("the scope ends after its job")
    };
    let state_root = state_root?;
    state_root_time += started.elapsed();
    if state_root.is_some() {
        storage_roots_before = trie
            .take_stored_storage_roots()
            .into_iter()
            .map(|(key, root)| (key, StorageRootBefore::Known(root)))
            .collect();
    }

    let outputs = Outputs {
        gas_used: result.gas_used,
        receipts_root,
        logs_bloom,
        requests_hash: requests_hash(&result.requests),
        blob_gas_used: result.blob_gas_used,
        state_root,
    };

    let executed = ExecutedBlock {
        receipts: stored_receipts,
        accounts,
        bytecodes: bundle
            .contracts
            .iter()
            .map(|(hash, code)| (*hash, code.original_bytes()))
            .collect(),
        total_difficulty: U256::ZERO,
        state_root_time,
        trie,
        storage_roots_before,
        trace_addresses,
    };
    Ok((executed, outputs, settled(state.cache, &bundle)))
}

/// alloy-evm's context for executing `block`.
fn execution_ctx(block: &SealedBlock) -> EthBlockExecutionCtx<'_> {
    EthBlockExecutionCtx {
        parent_hash: block.header.parent_hash,
        parent_beacon_block_root: block.header.parent_beacon_block_root,
        ommers: &block.body.ommers,
        withdrawals: block
            .body
            .withdrawals
            .as_ref()
            .map(|w| Cow::Borrowed(w.as_slice())),
        extra_data: block.header.extra_data.clone(),
        tx_count_hint: Some(block.body.transactions.len()),
        slot_number: None,
    }
}

/// A replay-protected (EIP-155) transaction is invalid before Spurious Dragon.
fn check_replay_protection(
    spec: &ChainSpec,
    number: u64,
    index: usize,
    transaction: &TxEnvelope,
) -> std::result::Result<(), RunError> {
    if transaction.is_legacy()
        && transaction.chain_id().is_some()
        && !spec.is_spurious_dragon_active_at_block(number)
    {
        return Err(invalid_transaction(
            index,
            transaction,
            "replay-protected (EIP-155) transaction before Spurious Dragon".into(),
        ));
    }
    Ok(())
}

fn invalid_transaction(index: usize, transaction: &TxEnvelope, reason: String) -> RunError {
    RunError::Invalid(Invalid::Transaction {
        index,
        hash: *transaction.tx_hash(),
        reason,
    })
}

/// EIP-7685's hash of a block's requests (the empty one's when there are none).
pub(crate) fn requests_hash(requests: &alloy_eips::eip7685::Requests) -> B256 {
    if requests.is_empty() {
        EMPTY_REQUESTS_HASH
    } else {
        requests.requests_hash()
    }
}

/// revm's cache after a block, as the next block must find it: each account the block changed
/// with the status a load from the database would give it. A status says what happened in the
/// block (an account destroyed, one created whose whole storage is in memory); carried into
/// the next block, the next block's changes would claim it again, and a destruction would wipe
/// storage written since.
fn settled(mut cache: CacheState, bundle: &revm::database::BundleState) -> CacheState {
    for address in bundle.state.keys() {
        if let Some(account) = cache.accounts.get_mut(address) {
            account.status = match &account.account {
                None => AccountStatus::LoadedNotExisting,
                Some(plain) if plain.info.is_empty() => AccountStatus::LoadedEmptyEIP161,
                Some(_) => AccountStatus::Loaded,
            };
        }
    }
    cache
}

/// A root that `root` computes with its keccak calls deferred and then hashed eight at a time
/// (see `quarry_storage::keccak`): alloy-trie's hash builder only copies a node's hash into its
/// parent's encoding. Inside a deferred scope, computed as any hash there is: a placeholder
/// until that scope resolves it.
fn batched_root(root: impl Fn() -> B256) -> B256 {
    match keccak::deferred(&root) {
        Ok((mut hash, resolved)) => {
            resolved.resolve(&mut hash);
            hash
        }
        Err(keccak::Nested) => root(),
    }
}

/// The receipts as stored: each with its own gas and what its transaction implies.
fn stored_receipts(receipts: &[ReceiptEnvelope], meta: Vec<TxMeta>) -> Vec<StoredReceipt> {
    let mut previous_cumulative = 0;
    receipts
        .iter()
        .zip(meta)
        .map(|(receipt, meta)| {
            let cumulative = receipt.cumulative_gas_used();
            let gas_used = cumulative - previous_cumulative;
            previous_cumulative = cumulative;
            StoredReceipt {
                tx_type: receipt.tx_type() as u8,
                outcome: match receipt.as_receipt().map(|r| r.status) {
                    Some(Eip658Value::PostState(root)) => ReceiptOutcome::PostState(root),
                    Some(Eip658Value::Eip658(ok)) => ReceiptOutcome::Status(ok),
                    None => ReceiptOutcome::Status(receipt.status()),
                },
                cumulative_gas_used: cumulative,
                gas_used,
                effective_gas_price: meta.effective_gas_price,
                contract_address: meta.contract_address,
                blob_gas: meta.blob_gas,
                logs: receipt.logs().to_vec(),
            }
        })
        .collect()
}

/// The header fields that only execution yields.
struct Outputs {
    gas_used: u64,
    receipts_root: B256,
    logs_bloom: Bloom,
    requests_hash: B256,
    blob_gas_used: u64,
    /// `None` for a block of a range, whose root is checked at the range's end.
    state_root: Option<B256>,
}

/// Compares what execution yielded with what the header states, in geth's order.
fn check_outputs(header: &Header, outputs: &Outputs) -> std::result::Result<(), RunError> {
    if outputs.gas_used != header.gas_used {
        return Err(Invalid::mismatch("gasUsed", header.gas_used, outputs.gas_used).into());
    }
    if outputs.receipts_root != header.receipts_root {
        return Err(
            Invalid::mismatch("receiptsRoot", header.receipts_root, outputs.receipts_root).into(),
        );
    }
    if outputs.logs_bloom != header.logs_bloom {
        return Err(Invalid::mismatch("logsBloom", header.logs_bloom, outputs.logs_bloom).into());
    }
    if let Some(expected) = header.requests_hash
        && expected != outputs.requests_hash
    {
        return Err(Invalid::mismatch("requestsHash", expected, outputs.requests_hash).into());
    }
    if let Some(expected) = header.blob_gas_used
        && expected != outputs.blob_gas_used
    {
        return Err(Invalid::mismatch("blobGasUsed", expected, outputs.blob_gas_used).into());
    }
    if let Some(state_root) = outputs.state_root
        && state_root != header.state_root
    {
        return Err(Invalid::mismatch("stateRoot", header.state_root, state_root).into());
    }
    Ok(())
}

/// From Prague on, a block is invalid when the withdrawal (EIP-7002) or consolidation
/// (EIP-7251) request contract has no code when the block's requests are collected, as geth
/// rules; alloy-evm would call the empty account and find no requests.
fn check_request_contracts<DB: revm::Database>(
    db: &mut State<DB>,
) -> std::result::Result<(), RunError> {
    for (eip, address) in [
        ("EIP-7002 withdrawal", WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS),
        (
            "EIP-7251 consolidation",
            CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS,
        ),
    ] {
        let info = db
            .basic(address)
            .map_err(|e| RunError::Internal(Error::Execution(e.to_string())))?;
        if info.is_none_or(|info| info.is_empty_code_hash()) {
            return Err(RunError::Invalid(Invalid::Rule(format!(
                "the {eip} request contract {address} has no code"
            ))));
        }
    }
    Ok(())
}

/// The DAO fork's irregular state change, applied before the block's transactions as geth
/// does: every listed account's balance moves to the refund contract. Accounts it touches keep
/// pre-EIP-161 semantics (an emptied account is kept, not deleted), which revm's
/// `drain_balances` would not do.
pub(crate) fn apply_dao_drain<DB: revm::Database>(
    db: &mut State<DB>,
    pre_eip161: bool,
) -> std::result::Result<(), <State<DB> as revm::Database>::Error> {
    let mut changes = Vec::with_capacity(dao_fork::DAO_HARDFORK_ACCOUNTS.len() + 1);
    let mut drained = U256::ZERO;
    let load = |db: &mut State<DB>,
                address: Address|
     -> std::result::Result<Account, <State<DB> as revm::Database>::Error> {
        Ok(match db.basic(address)? {
            Some(info) => Account::from(info),
            None => Account::new_not_existing(Default::default()),
        })
    };
    for address in dao_fork::DAO_HARDFORK_ACCOUNTS {
        let mut account = load(db, address)?;
        drained += std::mem::take(&mut account.info.balance);
        account.mark_touch();
        changes.push((address, account));
    }
    let mut beneficiary = load(db, dao_fork::DAO_HARDFORK_BENEFICIARY)?;
    beneficiary.info.balance += drained;
    beneficiary.mark_touch();
    changes.push((dao_fork::DAO_HARDFORK_BENEFICIARY, beneficiary));
    if pre_eip161 {
        // revm's State always deletes touched empty accounts (EIP-161); before Spurious Dragon
        // an emptied account stays. An account that is empty has no code, so marking it
        // created (which also means "no storage") keeps it without losing anything.
        for (_, account) in &mut changes {
            if account.is_empty() {
                account.mark_created();
            }
        }
    }
    db.commit_iter(&mut changes.into_iter());
    Ok(())
}

fn execution_error(err: BlockExecutionError) -> RunError {
    match err {
        BlockExecutionError::Validation(err) => RunError::Invalid(Invalid::Rule(err.to_string())),
        BlockExecutionError::Internal(err) => RunError::Internal(Error::Execution(err.to_string())),
    }
}

fn receipt_mut(envelope: &mut ReceiptEnvelope) -> &mut alloy_consensus::Receipt {
    match envelope {
        ReceiptEnvelope::Legacy(r)
        | ReceiptEnvelope::Eip2930(r)
        | ReceiptEnvelope::Eip1559(r)
        | ReceiptEnvelope::Eip4844(r)
        | ReceiptEnvelope::Eip7702(r) => &mut r.receipt,
    }
}

/// Receipt fields that come from the transaction rather than from execution.
struct TxMeta {
    effective_gas_price: u128,
    contract_address: Option<Address>,
    blob_gas: Option<(u64, u128)>,
}

fn tx_meta(
    tx: &TxEnvelope,
    sender: Address,
    base_fee: Option<u64>,
    blob_gas_price: u128,
) -> TxMeta {
    TxMeta {
        effective_gas_price: tx.effective_gas_price(base_fee),
        contract_address: match tx.kind() {
            TxKind::Create => Some(sender.create(tx.nonce())),
            TxKind::Call(_) => None,
        },
        blob_gas: tx.blob_gas_used().map(|used| (used, blob_gas_price)),
    }
}

fn stored_account(info: &revm::state::AccountInfo) -> StoredAccount {
    StoredAccount {
        nonce: info.nonce,
        balance: info.balance,
        code_hash: info.code_hash,
    }
}

/// Brings the trie up to date with every account in `bundle`, and returns their hashed
/// addresses. With `roots_before`, first records there as not recorded the storage root of
/// each of them whose storage the trie's changes so far changed
/// ([`StateTrie::storage_changed`]): it is not known until the trie's next root.
pub(crate) fn apply_bundle(
    trie: &mut StateTrie,
    bundle: &revm::database::BundleState,
    mut roots_before: Option<&mut HashMap<B256, StorageRootBefore>>,
) -> Vec<B256> {
    // The trie's keys: every address and slot hashed, eight at a time, before any is applied.
    let slots: Vec<[u8; 32]> = bundle
        .state
        .values()
        .flat_map(|account| account.storage.keys().map(U256::to_be_bytes::<32>))
        .collect();
    let inputs: Vec<&[u8]> = bundle
        .state
        .keys()
        .map(|address| address.as_slice())
        .chain(slots.iter().map(|slot| slot.as_slice()))
        .collect();
    let hashes = keccak256_each(&inputs);
    let (account_keys, mut slot_keys) = hashes.split_at(bundle.state.len());
    for ((_, account), key) in bundle.state.iter().zip(account_keys) {
        let (keys, rest) = slot_keys.split_at(account.storage.len());
        slot_keys = rest;
        if let Some(roots_before) = roots_before.as_deref_mut()
            && trie.storage_changed(key)
        {
            roots_before.insert(*key, StorageRootBefore::NotRecorded);
        }
        trie.apply_hashed_account(
            *key,
            account.info.as_ref().map(stored_account),
            account.was_destroyed(),
            keys.iter()
                .zip(account.storage.values())
                .map(|(key, value)| (*key, value.present_value)),
        );
    }
    account_keys.to_vec()
}

/// [`apply_bundle`] for a range's trie, recording in `roots_before` what the block's
/// changesets record of the storage root every account of `bundle` had before it: nothing for
/// those whose storage the range changed before, the others' stored leaves' (the range has
/// not changed their storage), each read once per range.
fn apply_bundle_in_range<K: Access>(
    tx: &StorageTx<K>,
    range: &mut StateTrie,
    bundle: &revm::database::BundleState,
    roots_before: &mut HashMap<B256, StorageRootBefore>,
) -> quarry_storage::Result<()> {
    let keys = apply_bundle(range, bundle, Some(roots_before));
    for key in &keys {
        if !roots_before.contains_key(key) {
            let root = range.stored_storage_root(tx, key)?;
            roots_before.insert(*key, StorageRootBefore::Known(root));
        }
    }
    Ok(())
}

fn bundle_changes(bundle: &revm::database::BundleState) -> Vec<AccountChange> {
    let mut changes: Vec<AccountChange> = bundle
        .state
        .iter()
        .filter(|(_, account)| {
            account.info != account.original_info
                || !account.storage.is_empty()
                || account.was_destroyed()
        })
        .map(|(address, account)| {
            let mut storage: Vec<(B256, U256)> = account
                .storage
                .iter()
                .filter(|(_, slot)| slot.is_changed() || account.was_destroyed())
                .map(|(slot, value)| (B256::from(*slot), value.present_value))
                .collect();
            storage.sort_unstable();
            AccountChange {
                address: *address,
                account: account.info.as_ref().map(stored_account),
                wiped: account.was_destroyed(),
                storage,
            }
        })
        .collect();
    changes.sort_unstable_by_key(|c| c.address);
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use revm::state::AccountInfo;

    fn state_with(accounts: usize, slots_each: usize) -> CacheState {
        let mut state = CacheState::default();
        for i in 0..accounts {
            let storage = (0..slots_each)
                .map(|slot| (U256::from(slot), U256::from(1)))
                .collect();
            let address = Address::left_padding_from(&(i as u64).to_be_bytes());
            state.insert_account_with_storage(address, AccountInfo::default(), storage);
        }
        state
    }

    /// The cache serves only a child of the block it follows, and only once.
    #[test]
    fn the_execution_cache_serves_only_the_child_of_its_block() {
        let (parent, other) = (B256::repeat_byte(1), B256::repeat_byte(2));
        let mut cache = ExecutionCache::default();
        assert!(cache.take_for(parent).accounts.is_empty());

        cache.keep(parent, state_with(3, 2));
        assert!(cache.take_for(other).accounts.is_empty());
        // A miss empties it: the state it held is no longer the one after any block to come.
        assert!(cache.take_for(parent).accounts.is_empty());

        cache.keep(parent, state_with(3, 2));
        assert_eq!(cache.take_for(parent).accounts.len(), 3);
        assert!(cache.take_for(parent).accounts.is_empty());
    }

    /// Past its bound, counted every few blocks, the cache is emptied.
    #[test]
    fn the_execution_cache_is_emptied_past_its_bound() {
        assert_eq!(cache_entries(&state_with(3, 2)), 9);
        let mut cache = ExecutionCache::default();
        for n in 1..EXECUTION_CACHE_COUNT_EVERY {
            let hash = B256::with_last_byte(n as u8);
            cache.keep(hash, state_with(1, 0));
            assert_eq!(cache.after, Some(hash));
        }
        let parent = B256::with_last_byte(0);
        cache.keep(parent, state_with(EXECUTION_CACHE_ENTRIES / 4 + 1, 3));
        assert_eq!(cache.after, None);
        assert!(cache.take_for(parent).accounts.is_empty());
    }

    /// A block that destroys an account and creates it again with storage leaves it, settled,
    /// as a plain loaded account: the next block's change to it is no destruction (which
    /// would wipe the storage the first block wrote), and that storage reads back.
    #[test]
    fn a_settled_cache_does_not_carry_a_destruction_into_the_next_block() {
        use revm::{
            database::{EmptyDB, states::bundle_state::BundleRetention},
            primitives::AddressMap,
            state::{Account, EvmStorageSlot, TransactionId},
        };
        let address = Address::repeat_byte(0xaa);
        let info = |balance: u64| AccountInfo {
            balance: U256::from(balance),
            nonce: 1,
            ..Default::default()
        };
        let slot = |value: u64| {
            EvmStorageSlot::new_changed(U256::ZERO, U256::from(value), TransactionId::ZERO)
        };
        let commit = |state: &mut State<EmptyDB>, account: Account| {
            state.basic(address).unwrap();
            state.commit(AddressMap::from_iter([(address, account)]));
        };

        let mut state = State::builder().with_bundle_update().build();
        let created = |balance, key: u64, value| {
            Account::default()
                .with_info(info(balance))
                .with_storage([(U256::from(key), slot(value))].into_iter())
                .with_created_mark()
                .with_touched_mark()
        };
        commit(&mut state, created(1, 1, 5));
        commit(
            &mut state,
            Account::default()
                .with_selfdestruct_mark()
                .with_touched_mark(),
        );
        commit(&mut state, created(2, 2, 7));
        state.merge_transitions(BundleRetention::PlainState);
        let first = state.take_bundle();
        assert!(first.state[&address].was_destroyed());

        let mut state = State::builder()
            .with_cached_prestate(settled(state.cache, &first))
            .with_bundle_update()
            .build();
        commit(
            &mut state,
            Account::default().with_info(info(3)).with_touched_mark(),
        );
        state.merge_transitions(BundleRetention::PlainState);
        let second = state.take_bundle();
        assert!(!second.state[&address].was_destroyed());
        assert_eq!(second.state[&address].original_info, Some(info(2)));
        assert_eq!(
            state.storage(address, U256::from(2)).unwrap(),
            U256::from(7)
        );
        assert_eq!(state.storage(address, U256::from(1)).unwrap(), U256::ZERO);
    }

    /// Receipts roots with the hashing batched equal alloy's, for lists from empty to more
    /// receipts than hash together, whose encodings span several keccak blocks.
    #[test]
    fn batched_receipts_roots_equal_direct_ones() {
        use alloy_consensus::{Receipt, ReceiptWithBloom};
        use alloy_primitives::{Log, LogData};
        let receipt = |i: usize| {
            let logs = (0..i % 4)
                .map(|l| Log {
                    address: Address::with_last_byte(l as u8),
                    data: LogData::new_unchecked(
                        vec![B256::with_last_byte(i as u8)],
                        Bytes::from(vec![i as u8; 40 * l]),
                    ),
                })
                .collect();
            ReceiptEnvelope::Eip1559(ReceiptWithBloom {
                receipt: Receipt {
                    status: Eip658Value::Eip658(!i.is_multiple_of(3)),
                    cumulative_gas_used: 21_000 * i as u64,
                    logs,
                },
                logs_bloom: Bloom::with_last_byte(i as u8),
            })
        };
        for count in [0, 1, 2, 9, 130] {
            let receipts: Vec<ReceiptEnvelope> = (0..count).map(receipt).collect();
            let direct = calculate_receipt_root(&receipts);
            assert_eq!(batched_root(|| calculate_receipt_root(&receipts)), direct);
        }
    }
}
