//! The JSON shapes of blocks, uncles, transactions, receipts and logs, field for field as geth
//! writes them (fields in geth's order, quantities minimal, optional fields only where the block
//! or transaction type has them), plus `totalDifficulty` on blocks, which the spec lists.

use alloy_consensus::{Header, Transaction, TxEnvelope, transaction::to_eip155_value};
use alloy_eips::{Typed2718, eip2930::AccessList, eip7702::SignedAuthorization};
use alloy_primitives::{Address, B64, B256, Bloom, Bytes, Log, U64, U128, U256};
use alloy_rlp::Encodable;
use quarry_storage::{ReceiptOutcome, StoredBody, StoredReceipt};
use serde::Serialize;

/// A block or uncle object. Uncles have no `transactions` and a `null` total difficulty.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    base_fee_per_gas: Option<U64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blob_gas_used: Option<U64>,
    difficulty: U256,
    #[serde(skip_serializing_if = "Option::is_none")]
    excess_blob_gas: Option<U64>,
    extra_data: Bytes,
    gas_limit: U64,
    gas_used: U64,
    hash: B256,
    logs_bloom: Bloom,
    miner: Address,
    mix_hash: B256,
    nonce: B64,
    number: U64,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_beacon_block_root: Option<B256>,
    parent_hash: B256,
    receipts_root: B256,
    #[serde(skip_serializing_if = "Option::is_none")]
    requests_hash: Option<B256>,
    sha3_uncles: B256,
    size: U64,
    state_root: B256,
    timestamp: U64,
    total_difficulty: Option<U256>,
    #[serde(skip_serializing_if = "Option::is_none")]
    transactions: Option<BlockTransactions>,
    transactions_root: B256,
    uncles: Vec<B256>,
    #[serde(skip_serializing_if = "Option::is_none")]
    withdrawals: Option<Vec<WithdrawalJson>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    withdrawals_root: Option<B256>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum BlockTransactions {
    Hashes(Vec<B256>),
    Full(Vec<TransactionJson>),
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WithdrawalJson {
    index: U64,
    validator_index: U64,
    address: Address,
    amount: U64,
}

/// The RLP size of a block made of `header` and `body`, as geth's `size` reports it.
pub(crate) fn block_size(header: &Header, body: &StoredBody) -> usize {
    let payload = header.length()
        + alloy_rlp::list_length(&body.transactions)
        + alloy_rlp::list_length(&body.ommers)
        + body
            .withdrawals
            .as_ref()
            .map_or(0, |w| alloy_rlp::list_length(w));
    payload + alloy_rlp::length_of_length(payload)
}

impl BlockJson {
    fn from_header(
        header: &Header,
        hash: B256,
        size: usize,
        total_difficulty: Option<U256>,
    ) -> Self {
        Self {
            base_fee_per_gas: header.base_fee_per_gas.map(U64::from),
            blob_gas_used: header.blob_gas_used.map(U64::from),
            difficulty: header.difficulty,
            excess_blob_gas: header.excess_blob_gas.map(U64::from),
            extra_data: header.extra_data.clone(),
            gas_limit: U64::from(header.gas_limit),
            gas_used: U64::from(header.gas_used),
            hash,
            logs_bloom: header.logs_bloom,
            miner: header.beneficiary,
            mix_hash: header.mix_hash,
            nonce: header.nonce,
            number: U64::from(header.number),
            parent_beacon_block_root: header.parent_beacon_block_root,
            parent_hash: header.parent_hash,
            receipts_root: header.receipts_root,
            requests_hash: header.requests_hash,
            sha3_uncles: header.ommers_hash,
            size: U64::from(size as u64),
            state_root: header.state_root,
            timestamp: U64::from(header.timestamp),
            total_difficulty,
            transactions: None,
            transactions_root: header.transactions_root,
            uncles: Vec::new(),
            withdrawals: None,
            withdrawals_root: header.withdrawals_root,
        }
    }

    /// A canonical block of RLP size `size`; `senders` are needed only for full transaction
    /// objects.
    pub fn block(
        header: &Header,
        hash: B256,
        size: usize,
        total_difficulty: U256,
        body: &StoredBody,
        uncle_hashes: &[B256],
        full_transactions: Option<&[Address]>,
    ) -> Self {
        let mut json = Self::from_header(header, hash, size, Some(total_difficulty));
        json.transactions = Some(match full_transactions {
            Some(senders) => BlockTransactions::Full(
                body.transactions
                    .iter()
                    .zip(senders)
                    .enumerate()
                    .map(|(index, (tx, from))| {
                        TransactionJson::new(tx, *from, &TxContext::new(header, hash, index))
                    })
                    .collect(),
            ),
            None => BlockTransactions::Hashes(
                body.transactions.iter().map(|tx| *tx.tx_hash()).collect(),
            ),
        });
        json.uncles = uncle_hashes.to_vec();
        json.withdrawals = body.withdrawals.as_ref().map(|withdrawals| {
            withdrawals
                .iter()
                .map(|w| WithdrawalJson {
                    index: U64::from(w.index),
                    validator_index: U64::from(w.validator_index),
                    address: w.address,
                    amount: U64::from(w.amount),
                })
                .collect()
        });
        json
    }

    /// A header as geth's eth_getHeaderBy* answer it (its `RPCMarshalHeader`): a block's
    /// fields without size, total difficulty, transactions, uncles or withdrawals.
    pub fn header_only(header: &Header, hash: B256) -> serde_json::Result<serde_json::Value> {
        let mut json = serde_json::to_value(Self::from_header(header, hash, 0, None))?;
        if let Some(fields) = json.as_object_mut() {
            for key in ["size", "totalDifficulty", "uncles"] {
                fields.remove(key);
            }
        }
        Ok(json)
    }

    /// An uncle (whose hash is `hash`): geth serves it as a block made of the header alone.
    pub fn uncle(header: &Header, hash: B256) -> Self {
        let empty = StoredBody::default();
        Self::from_header(header, hash, block_size(header, &empty), None)
    }
}

/// Where a transaction sits: what its JSON and its receipt's JSON repeat about the block.
pub struct TxContext {
    pub block_hash: B256,
    pub block_number: u64,
    pub block_timestamp: u64,
    pub base_fee: Option<u64>,
    pub index: usize,
}

impl TxContext {
    pub fn new(header: &Header, block_hash: B256, index: usize) -> Self {
        Self {
            block_hash,
            block_number: header.number,
            block_timestamp: header.timestamp,
            base_fee: header.base_fee_per_gas,
            index,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TransactionJson {
    block_hash: B256,
    block_number: U64,
    block_timestamp: U64,
    from: Address,
    gas: U64,
    gas_price: U128,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_fee_per_gas: Option<U128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_priority_fee_per_gas: Option<U128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_fee_per_blob_gas: Option<U128>,
    hash: B256,
    input: Bytes,
    nonce: U64,
    to: Option<Address>,
    transaction_index: U64,
    value: U256,
    #[serde(rename = "type")]
    tx_type: U64,
    #[serde(skip_serializing_if = "Option::is_none")]
    access_list: Option<AccessList>,
    #[serde(skip_serializing_if = "Option::is_none")]
    chain_id: Option<U64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blob_versioned_hashes: Option<Vec<B256>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    authorization_list: Option<Vec<AuthorizationJson>>,
    v: U128,
    r: U256,
    s: U256,
    #[serde(skip_serializing_if = "Option::is_none")]
    y_parity: Option<U64>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationJson {
    chain_id: U256,
    address: Address,
    nonce: U64,
    y_parity: U64,
    r: U256,
    s: U256,
}

impl From<&SignedAuthorization> for AuthorizationJson {
    fn from(auth: &SignedAuthorization) -> Self {
        Self {
            chain_id: *auth.chain_id(),
            address: *auth.address(),
            nonce: U64::from(auth.nonce()),
            y_parity: U64::from(auth.y_parity()),
            r: auth.r(),
            s: auth.s(),
        }
    }
}

impl TransactionJson {
    pub fn new(tx: &TxEnvelope, from: Address, at: &TxContext) -> Self {
        let signature = tx.signature();
        let parity = signature.v();
        let is_legacy = tx.is_legacy();
        // Typed transactions carry a y-parity; legacy ones an EIP-155 or pre-155 `v`.
        let (v, y_parity) = if is_legacy {
            (to_eip155_value(parity, tx.chain_id()), None)
        } else {
            (u128::from(parity), Some(U64::from(u8::from(parity))))
        };
        let dynamic_fee = tx.is_dynamic_fee();
        Self {
            block_hash: at.block_hash,
            block_number: U64::from(at.block_number),
            block_timestamp: U64::from(at.block_timestamp),
            from,
            gas: U64::from(tx.gas_limit()),
            gas_price: U128::from(tx.effective_gas_price(at.base_fee)),
            max_fee_per_gas: dynamic_fee.then(|| U128::from(tx.max_fee_per_gas())),
            max_priority_fee_per_gas: dynamic_fee
                .then(|| tx.max_priority_fee_per_gas().map(U128::from))
                .flatten(),
            max_fee_per_blob_gas: tx.max_fee_per_blob_gas().map(U128::from),
            hash: *tx.tx_hash(),
            input: tx.input().clone(),
            nonce: U64::from(tx.nonce()),
            to: tx.to(),
            transaction_index: U64::from(at.index),
            value: tx.value(),
            tx_type: U64::from(tx.ty()),
            access_list: (!is_legacy).then(|| tx.access_list().cloned()).flatten(),
            chain_id: tx.chain_id().map(U64::from),
            blob_versioned_hashes: tx.blob_versioned_hashes().map(<[B256]>::to_vec),
            authorization_list: tx
                .authorization_list()
                .map(|list| list.iter().map(AuthorizationJson::from).collect()),
            v: U128::from(v),
            r: signature.r(),
            s: signature.s(),
            y_parity,
        }
    }
}

/// A header as geth's `newHeads` notifications send it: Go's encoding of `types.Header`, every
/// field present in geth's order, `null` where the block has none, the hash last.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeaderJson {
    parent_hash: B256,
    sha3_uncles: B256,
    miner: Address,
    state_root: B256,
    transactions_root: B256,
    receipts_root: B256,
    logs_bloom: Bloom,
    difficulty: U256,
    number: U64,
    gas_limit: U64,
    gas_used: U64,
    timestamp: U64,
    extra_data: Bytes,
    mix_hash: B256,
    nonce: B64,
    base_fee_per_gas: Option<U64>,
    withdrawals_root: Option<B256>,
    blob_gas_used: Option<U64>,
    excess_blob_gas: Option<U64>,
    parent_beacon_block_root: Option<B256>,
    requests_hash: Option<B256>,
    block_access_list_hash: Option<B256>,
    slot_number: Option<U64>,
    hash: B256,
}

impl HeaderJson {
    pub fn new(header: &Header, hash: B256) -> Self {
        Self {
            parent_hash: header.parent_hash,
            sha3_uncles: header.ommers_hash,
            miner: header.beneficiary,
            state_root: header.state_root,
            transactions_root: header.transactions_root,
            receipts_root: header.receipts_root,
            logs_bloom: header.logs_bloom,
            difficulty: header.difficulty,
            number: U64::from(header.number),
            gas_limit: U64::from(header.gas_limit),
            gas_used: U64::from(header.gas_used),
            timestamp: U64::from(header.timestamp),
            extra_data: header.extra_data.clone(),
            mix_hash: header.mix_hash,
            nonce: header.nonce,
            base_fee_per_gas: header.base_fee_per_gas.map(U64::from),
            withdrawals_root: header.withdrawals_root,
            blob_gas_used: header.blob_gas_used.map(U64::from),
            excess_blob_gas: header.excess_blob_gas.map(U64::from),
            parent_beacon_block_root: header.parent_beacon_block_root,
            requests_hash: header.requests_hash,
            block_access_list_hash: header.block_access_list_hash,
            slot_number: header.slot_number.map(U64::from),
            hash,
        }
    }
}

/// A `syncing` subscription's notification: geth sends its downloader's progress under Go's
/// field names (no JSON tags), or `false` once done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum SyncingJson {
    Done(bool),
    Syncing {
        syncing: bool,
        status: SyncProgressJson,
    },
}

/// geth's `ethereum.SyncProgress`; quarry knows the three block numbers, the rest is zero.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct SyncProgressJson {
    pub starting_block: u64,
    pub current_block: u64,
    pub highest_block: u64,
    pulled_states: u64,
    known_states: u64,
    synced_accounts: u64,
    synced_account_bytes: u64,
    synced_bytecodes: u64,
    synced_bytecode_bytes: u64,
    synced_storage: u64,
    synced_storage_bytes: u64,
    healed_trienodes: u64,
    healed_trienode_bytes: u64,
    healed_bytecodes: u64,
    healed_bytecode_bytes: u64,
    healing_trienodes: u64,
    healing_bytecode: u64,
    synced_access_lists: u64,
    total_access_lists: u64,
    trie_gen_progress: u64,
    tx_index_finished_blocks: u64,
    tx_index_remaining_blocks: u64,
    state_index_remaining: u64,
    trienode_index_remaining: u64,
}

impl SyncProgressJson {
    /// Progress from `starting` through `current` towards `highest`.
    pub fn blocks(starting: u64, current: u64, highest: u64) -> Self {
        Self {
            starting_block: starting,
            current_block: current,
            highest_block: highest,
            ..Self::default()
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogJson {
    address: Address,
    topics: Vec<B256>,
    data: Bytes,
    block_number: U64,
    transaction_hash: B256,
    transaction_index: U64,
    block_hash: B256,
    block_timestamp: U64,
    log_index: U64,
    removed: bool,
}

impl LogJson {
    pub fn located(log: &quarry_storage::LocatedLog) -> Self {
        Self {
            address: log.log.address,
            topics: log.log.topics().to_vec(),
            data: log.log.data.data.clone(),
            block_number: U64::from(log.block_number),
            transaction_hash: log.transaction_hash,
            transaction_index: U64::from(log.transaction_index),
            block_hash: log.block_hash,
            block_timestamp: U64::from(log.block_timestamp),
            log_index: U64::from(log.log_index),
            removed: false,
        }
    }

    pub fn new(log: &Log, tx_hash: B256, at: &TxContext, log_index: usize) -> Self {
        Self {
            address: log.address,
            topics: log.topics().to_vec(),
            data: log.data.data.clone(),
            block_number: U64::from(at.block_number),
            transaction_hash: tx_hash,
            transaction_index: U64::from(at.index),
            block_hash: at.block_hash,
            block_timestamp: U64::from(at.block_timestamp),
            log_index: U64::from(log_index),
            removed: false,
        }
    }

    /// The same log, marked as removed from the canonical chain by a reorganisation.
    pub fn removed(mut self) -> Self {
        self.removed = true;
        self
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceiptJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    blob_gas_price: Option<U128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blob_gas_used: Option<U64>,
    block_hash: B256,
    block_number: U64,
    contract_address: Option<Address>,
    cumulative_gas_used: U64,
    effective_gas_price: U128,
    from: Address,
    gas_used: U64,
    logs: Vec<LogJson>,
    logs_bloom: Bloom,
    #[serde(skip_serializing_if = "Option::is_none")]
    root: Option<B256>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<U64>,
    to: Option<Address>,
    transaction_hash: B256,
    transaction_index: U64,
    #[serde(rename = "type")]
    tx_type: U64,
}

impl ReceiptJson {
    /// `first_log_index` is the number of logs of the block's earlier transactions.
    pub fn new(
        receipt: &StoredReceipt,
        logs_bloom: Bloom,
        tx: &TxEnvelope,
        from: Address,
        at: &TxContext,
        first_log_index: usize,
    ) -> Self {
        let tx_hash = *tx.tx_hash();
        let (root, status) = match receipt.outcome {
            ReceiptOutcome::PostState(root) => (Some(root), None),
            ReceiptOutcome::Status(ok) => (None, Some(U64::from(u8::from(ok)))),
        };
        Self {
            blob_gas_price: receipt.blob_gas.map(|(_, price)| U128::from(price)),
            blob_gas_used: receipt.blob_gas.map(|(used, _)| U64::from(used)),
            block_hash: at.block_hash,
            block_number: U64::from(at.block_number),
            contract_address: receipt.contract_address,
            cumulative_gas_used: U64::from(receipt.cumulative_gas_used),
            effective_gas_price: U128::from(receipt.effective_gas_price),
            from,
            gas_used: U64::from(receipt.gas_used),
            logs: receipt
                .logs
                .iter()
                .enumerate()
                .map(|(i, log)| LogJson::new(log, tx_hash, at, first_log_index + i))
                .collect(),
            logs_bloom,
            root,
            status,
            to: tx.to(),
            transaction_hash: tx_hash,
            transaction_index: U64::from(at.index),
            tx_type: U64::from(tx.ty()),
        }
    }
}
