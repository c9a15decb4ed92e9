//! Block 0: the allocated state and the genesis header, built from genesis.json.

use crate::{chain_spec::ChainSpec, state_root::StateTrie};
use alloy_consensus::{EMPTY_OMMER_ROOT_HASH, EMPTY_ROOT_HASH, Header};
use alloy_eips::{eip1559::INITIAL_BASE_FEE, eip7685::EMPTY_REQUESTS_HASH};
use alloy_genesis::{Genesis, GenesisAccount};
use alloy_hardforks::EthereumHardforks;
use alloy_primitives::{Address, B64, B256, Bytes, U256, keccak256};
use quarry_storage::{AccountChange, StoredAccount, StoredBody};
use std::collections::BTreeMap;

/// The genesis state as storage changes, its bytecodes, and the trie over it.
pub struct GenesisState {
    pub accounts: Vec<AccountChange>,
    pub bytecodes: Vec<(B256, Bytes)>,
    pub trie: StateTrie,
}

/// Turns an allocation into block-0 state changes and builds its trie.
pub fn genesis_state(alloc: &BTreeMap<Address, GenesisAccount>) -> GenesisState {
    let mut trie = StateTrie::new();
    let mut accounts = Vec::with_capacity(alloc.len());
    let mut bytecodes = Vec::new();
    for (address, account) in alloc {
        let code_hash = match &account.code {
            Some(code) if !code.is_empty() => {
                let hash = keccak256(code);
                bytecodes.push((hash, code.clone()));
                hash
            }
            _ => alloy_primitives::KECCAK256_EMPTY,
        };
        let storage: Vec<(B256, U256)> = account
            .storage
            .iter()
            .flatten()
            .filter(|(_, value)| !value.is_zero())
            .map(|(slot, value)| (*slot, U256::from_be_bytes(value.0)))
            .collect();
        let stored = StoredAccount {
            nonce: account.nonce.unwrap_or_default(),
            balance: account.balance,
            code_hash,
        };
        trie.apply_account(
            *address,
            Some(stored),
            false,
            storage
                .iter()
                .map(|(slot, value)| (U256::from_be_bytes(slot.0), *value)),
        );
        accounts.push(AccountChange {
            address: *address,
            account: Some(stored),
            wiped: false,
            storage,
        });
    }
    GenesisState {
        accounts,
        bytecodes,
        trie,
    }
}

/// geth's default gas limit for a genesis that names none (`params.GenesisGasLimit`).
const DEFAULT_GAS_LIMIT: u64 = 4_712_388;

/// The genesis header as geth builds it: fork-dependent fields are present exactly when their
/// fork is active at genesis.
pub fn genesis_header(genesis: &Genesis, spec: &ChainSpec, state_root: B256) -> Header {
    let london = spec.is_london_active_at_block(0);
    let cancun = spec.is_cancun_active_at_timestamp(genesis.timestamp);
    Header {
        parent_hash: genesis.parent_hash.unwrap_or_default(),
        ommers_hash: EMPTY_OMMER_ROOT_HASH,
        beneficiary: genesis.coinbase,
        state_root,
        transactions_root: EMPTY_ROOT_HASH,
        receipts_root: EMPTY_ROOT_HASH,
        logs_bloom: Default::default(),
        difficulty: genesis.difficulty,
        number: genesis.number.unwrap_or_default(),
        gas_limit: match genesis.gas_limit {
            0 => DEFAULT_GAS_LIMIT,
            limit => limit,
        },
        gas_used: 0,
        timestamp: genesis.timestamp,
        extra_data: genesis.extra_data.clone(),
        mix_hash: genesis.mix_hash,
        nonce: B64::from(genesis.nonce),
        base_fee_per_gas: london.then(|| {
            genesis
                .base_fee_per_gas
                .map_or(INITIAL_BASE_FEE, |fee| fee as u64)
        }),
        withdrawals_root: spec
            .is_shanghai_active_at_timestamp(genesis.timestamp)
            .then_some(EMPTY_ROOT_HASH),
        blob_gas_used: cancun.then(|| genesis.blob_gas_used.unwrap_or_default()),
        excess_blob_gas: cancun.then(|| genesis.excess_blob_gas.unwrap_or_default()),
        parent_beacon_block_root: cancun.then_some(B256::ZERO),
        requests_hash: spec
            .is_prague_active_at_timestamp(genesis.timestamp)
            .then_some(EMPTY_REQUESTS_HASH),
        ..Default::default()
    }
}

/// The genesis body: no transactions or uncles, and, like every block's body, an (empty)
/// withdrawals list exactly when Shanghai is active at its timestamp (geth's `Genesis.ToBlock`).
pub fn genesis_body(spec: &ChainSpec, header: &Header) -> StoredBody {
    StoredBody {
        transactions: Vec::new(),
        ommers: Vec::new(),
        withdrawals: spec
            .is_shanghai_active_at_timestamp(header.timestamp)
            .then(Default::default),
    }
}
