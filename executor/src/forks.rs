//! EIP-7910 (eth_config): the chain's current, next and last time-based fork as genesis.json
//! schedules them, each with its blob schedule, EIP-2124 fork id, precompiles and system
//! contracts, in geth's terms (fork order, names, and which forks each lookup sees).

use crate::chain_spec::ChainSpec;
use alloy_eip2124::ForkHash;
use alloy_eips::{eip2935, eip4788, eip7002, eip7251};
use alloy_primitives::{Address, B256};
use revm::{
    precompile::{PrecompileSpecId, Precompiles},
    primitives::hardfork::SpecId,
};
use std::collections::BTreeMap;

/// The time-based forks in geth's order (after Paris, the last block-based one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fork {
    Paris,
    Shanghai,
    Cancun,
    Prague,
    Osaka,
    Bpo1,
    Bpo2,
    Bpo3,
    Bpo4,
    Bpo5,
    Amsterdam,
}

const TIME_FORKS: [Fork; 10] = [
    Fork::Shanghai,
    Fork::Cancun,
    Fork::Prague,
    Fork::Osaka,
    Fork::Bpo1,
    Fork::Bpo2,
    Fork::Bpo3,
    Fork::Bpo4,
    Fork::Bpo5,
    Fork::Amsterdam,
];

/// A fork's blob parameters, as eth_config names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobSchedule {
    pub target: u64,
    pub max: u64,
    pub base_fee_update_fraction: u64,
}

/// One fork's configuration (EIP-7910).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkConfig {
    /// 0 when the fork is active at genesis.
    pub activation_time: u64,
    pub blob_schedule: Option<BlobSchedule>,
    pub chain_id: u64,
    pub fork_id: [u8; 4],
    /// geth's precompile names.
    pub precompiles: BTreeMap<&'static str, Address>,
    pub system_contracts: BTreeMap<&'static str, Address>,
}

/// eth_config's answer: `next` and `last` are `None` when no later fork is scheduled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EthConfig {
    pub current: Option<ForkConfig>,
    pub next: Option<ForkConfig>,
    pub last: Option<ForkConfig>,
}

impl ChainSpec {
    fn fork_time(&self, fork: Fork) -> Option<u64> {
        let c = &self.config;
        match fork {
            Fork::Paris => None,
            Fork::Shanghai => c.shanghai_time,
            Fork::Cancun => c.cancun_time,
            Fork::Prague => c.prague_time,
            Fork::Osaka => c.osaka_time,
            Fork::Bpo1 => c.bpo1_time,
            Fork::Bpo2 => c.bpo2_time,
            Fork::Bpo3 => c.bpo3_time,
            Fork::Bpo4 => c.bpo4_time,
            Fork::Bpo5 => c.bpo5_time,
            Fork::Amsterdam => c.amsterdam_time,
        }
    }

    /// geth's `LatestFork`: the last time-based fork active at `time`, else Paris.
    fn latest_fork(&self, time: u64) -> Fork {
        TIME_FORKS
            .iter()
            .rev()
            .copied()
            .find(|&fork| self.fork_time(fork).is_some_and(|t| t <= time))
            .unwrap_or(Fork::Paris)
    }

    fn blob_schedule(&self, fork: Fork) -> Option<BlobSchedule> {
        let schedule = &self.config.blob_schedule;
        // geth: named forks after Prague carry no schedule of their own; the BPO chain does.
        let chain = [
            (Fork::Bpo5, "bpo5"),
            (Fork::Bpo4, "bpo4"),
            (Fork::Bpo3, "bpo3"),
            (Fork::Bpo2, "bpo2"),
            (Fork::Bpo1, "bpo1"),
            (Fork::Prague, "prague"),
            (Fork::Cancun, "cancun"),
        ];
        chain
            .iter()
            .filter(|(at, _)| *at <= fork)
            .find_map(|(_, name)| schedule.get(*name))
            .map(|params| BlobSchedule {
                target: params.target_blob_count,
                max: params.max_blob_count,
                base_fee_update_fraction: params.update_fraction as u64,
            })
    }

    /// EIP-2124's fork id at `time` (every block-based fork counted): the CRC32 of the
    /// genesis hash and of each fork activation after genesis, as geth gathers them.
    fn fork_id(&self, genesis_hash: B256, genesis_time: u64, time: u64) -> [u8; 4] {
        let c = &self.config;
        let mut blocks: Vec<u64> = [
            c.homestead_block,
            c.dao_fork_block,
            c.eip150_block,
            c.eip155_block,
            c.eip158_block,
            c.byzantium_block,
            c.constantinople_block,
            c.petersburg_block,
            c.istanbul_block,
            c.muir_glacier_block,
            c.berlin_block,
            c.london_block,
            c.arrow_glacier_block,
            c.gray_glacier_block,
            c.merge_netsplit_block,
        ]
        .into_iter()
        .flatten()
        .filter(|&block| block > 0)
        .collect();
        blocks.sort_unstable();
        blocks.dedup();
        let mut times: Vec<u64> = TIME_FORKS
            .iter()
            .filter_map(|&fork| self.fork_time(fork))
            .filter(|&t| t > genesis_time && t <= time)
            .collect();
        times.sort_unstable();
        times.dedup();
        let mut hash = ForkHash::from(genesis_hash);
        for activation in blocks.into_iter().chain(times) {
            hash += activation;
        }
        hash.0
    }

    fn fork_config(&self, fork: Fork, genesis_hash: B256, genesis_time: u64) -> Option<ForkConfig> {
        let time = self.fork_time(fork)?;
        let spec = match fork {
            Fork::Paris => SpecId::MERGE,
            Fork::Shanghai => SpecId::SHANGHAI,
            Fork::Cancun => SpecId::CANCUN,
            Fork::Prague => SpecId::PRAGUE,
            Fork::Osaka | Fork::Bpo1 | Fork::Bpo2 | Fork::Bpo3 | Fork::Bpo4 | Fork::Bpo5 => {
                SpecId::OSAKA
            }
            Fork::Amsterdam => SpecId::AMSTERDAM,
        };
        let precompiles = Precompiles::new(PrecompileSpecId::from_spec_id(spec))
            .addresses()
            .filter_map(|address| Some((precompile_name(address)?, *address)))
            .collect();
        let mut system_contracts = BTreeMap::new();
        if fork >= Fork::Cancun {
            system_contracts.insert("BEACON_ROOTS_ADDRESS", eip4788::BEACON_ROOTS_ADDRESS);
        }
        if fork >= Fork::Prague {
            system_contracts.insert(
                "CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS",
                eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS,
            );
            system_contracts.insert(
                "DEPOSIT_CONTRACT_ADDRESS",
                self.config.deposit_contract_address.unwrap_or_default(),
            );
            system_contracts.insert("HISTORY_STORAGE_ADDRESS", eip2935::HISTORY_STORAGE_ADDRESS);
            system_contracts.insert(
                "WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS",
                eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS,
            );
        }
        Some(ForkConfig {
            activation_time: if genesis_time >= time { 0 } else { time },
            blob_schedule: self.blob_schedule(fork),
            chain_id: self.chain_id,
            fork_id: self.fork_id(genesis_hash, genesis_time, time),
            precompiles,
            system_contracts,
        })
    }

    /// eth_config for a chain whose genesis block is `genesis_hash` at `genesis_time` and
    /// whose head has timestamp `head_time`.
    pub fn eth_config(&self, genesis_hash: B256, genesis_time: u64, head_time: u64) -> EthConfig {
        let current = self.latest_fork(head_time);
        // geth: the fork after the current one in its order, if it is scheduled at all.
        let next = TIME_FORKS.iter().copied().find(|&fork| fork > current);
        let next = next.and_then(|fork| self.fork_config(fork, genesis_hash, genesis_time));
        let last = next
            .as_ref()
            .and_then(|_| self.fork_config(self.latest_fork(u64::MAX), genesis_hash, genesis_time));
        EthConfig {
            current: self.fork_config(current, genesis_hash, genesis_time),
            next,
            last,
        }
    }
}

/// geth's name of a precompile.
fn precompile_name(address: &Address) -> Option<&'static str> {
    let bytes = address.as_slice();
    if bytes[..18].iter().any(|&b| b != 0) {
        return None;
    }
    Some(match u16::from_be_bytes([bytes[18], bytes[19]]) {
        0x01 => "ECREC",
        0x02 => "SHA256",
        0x03 => "RIPEMD160",
        0x04 => "ID",
        0x05 => "MODEXP",
        0x06 => "BN254_ADD",
        0x07 => "BN254_MUL",
        0x08 => "BN254_PAIRING",
        0x09 => "BLAKE2F",
        0x0a => "KZG_POINT_EVALUATION",
        0x0b => "BLS12_G1ADD",
        0x0c => "BLS12_G1MSM",
        0x0d => "BLS12_G2ADD",
        0x0e => "BLS12_G2MSM",
        0x0f => "BLS12_PAIRING_CHECK",
        0x10 => "BLS12_MAP_FP_TO_G1",
        0x11 => "BLS12_MAP_FP2_TO_G2",
        0x100 => "P256VERIFY",
        _ => return None,
    })
}
