//! Ethereum's public networks by name (`--chain mainnet|sepolia|holesky|hoodi`): each one's
//! published genesis (embedded, res/genesis/), its fork schedule from alloy-hardforks and
//! alloy-eips, and the genesis hash its block 0 must have.

use alloy_eips::eip7840::BlobParams;
use alloy_genesis::{ChainConfig, Genesis};
use alloy_hardforks::{EthereumHardfork, ForkCondition};
use alloy_primitives::{Address, B256, address};
use std::{collections::BTreeMap, fmt, str::FromStr};

/// A public network quarry knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Network {
    Mainnet,
    Sepolia,
    Holesky,
    Hoodi,
}

/// Sepolia's and Holesky's deposit contracts: no crate of the field publishes them (alloy-eips
/// has mainnet's only; Hoodi's genesis names its own). The values are those reth v2.5.1's
/// chainspec and geth's configs use.
const SEPOLIA_DEPOSIT_CONTRACT: Address = address!("0x7f02c3e3c98b133055b8b348b2ac625669ed295d");
const HOLESKY_DEPOSIT_CONTRACT: Address = address!("0x4242424242424242424242424242424242424242");
const HOODI_DEPOSIT_CONTRACT: Address = address!("0x00000000219ab540356cbb839cbe05303d7705fa");

impl Network {
    pub const ALL: [Network; 4] = [
        Network::Mainnet,
        Network::Sepolia,
        Network::Holesky,
        Network::Hoodi,
    ];

    /// The name `--chain` takes, era1 file names start with and the datadir records.
    pub fn name(self) -> &'static str {
        match self {
            Network::Mainnet => "mainnet",
            Network::Sepolia => "sepolia",
            Network::Holesky => "holesky",
            Network::Hoodi => "hoodi",
        }
    }

    pub fn chain_id(self) -> u64 {
        let named = match self {
            Network::Mainnet => alloy_chains::NamedChain::Mainnet,
            Network::Sepolia => alloy_chains::NamedChain::Sepolia,
            Network::Holesky => alloy_chains::NamedChain::Holesky,
            Network::Hoodi => alloy_chains::NamedChain::Hoodi,
        };
        named as u64
    }

    /// The published hash of block 0, which the genesis quarry builds must have.
    pub fn genesis_hash(self) -> B256 {
        use alloy_consensus::constants as c;
        match self {
            Network::Mainnet => c::MAINNET_GENESIS_HASH,
            Network::Sepolia => c::SEPOLIA_GENESIS_HASH,
            Network::Holesky => c::HOLESKY_GENESIS_HASH,
            Network::Hoodi => c::HOODI_GENESIS_HASH,
        }
    }

    fn genesis_json(self) -> &'static str {
        match self {
            Network::Mainnet => include_str!("../res/genesis/mainnet.json"),
            Network::Sepolia => include_str!("../res/genesis/sepolia.json"),
            Network::Holesky => include_str!("../res/genesis/holesky.json"),
            Network::Hoodi => include_str!("../res/genesis/hoodi.json"),
        }
    }

    /// The network's genesis: the published block-0 fields and allocation, with the fork
    /// schedule of [`Network::chain_config`] in place of the file's partial `config`.
    pub fn genesis(self) -> crate::Result<Genesis> {
        let mut genesis: Genesis = serde_json::from_str(self.genesis_json()).map_err(|e| {
            crate::Error::Genesis(format!("the bundled {} genesis: {e}", self.name()))
        })?;
        genesis.config = self.chain_config();
        Ok(genesis)
    }

    fn hardforks(self) -> &'static [(EthereumHardfork, ForkCondition)] {
        const MAINNET: &[(EthereumHardfork, ForkCondition)] = &EthereumHardfork::mainnet();
        const SEPOLIA: &[(EthereumHardfork, ForkCondition)] = &EthereumHardfork::sepolia();
        const HOLESKY: &[(EthereumHardfork, ForkCondition)] = &EthereumHardfork::holesky();
        const HOODI: &[(EthereumHardfork, ForkCondition)] = &EthereumHardfork::hoodi();
        match self {
            Network::Mainnet => MAINNET,
            Network::Sepolia => SEPOLIA,
            Network::Holesky => HOLESKY,
            Network::Hoodi => HOODI,
        }
    }

    /// The fork schedule as genesis.json's `config` states it (the form quarry stores and
    /// executes from), filled from alloy-hardforks' activation list for the network.
    pub fn chain_config(self) -> ChainConfig {
        let mut config = ChainConfig {
            chain_id: self.chain_id(),
            terminal_total_difficulty_passed: true,
            deposit_contract_address: Some(match self {
                Network::Mainnet => alloy_eips::eip6110::MAINNET_DEPOSIT_CONTRACT_ADDRESS,
                Network::Sepolia => SEPOLIA_DEPOSIT_CONTRACT,
                Network::Holesky => HOLESKY_DEPOSIT_CONTRACT,
                Network::Hoodi => HOODI_DEPOSIT_CONTRACT,
            }),
            ..Default::default()
        };
        for &(fork, condition) in self.hardforks() {
            apply_fork(&mut config, fork, condition);
        }
        config.blob_schedule = blob_schedule(&config);
        config
    }
}

/// Records one activation in `config`'s field for it.
fn apply_fork(config: &mut ChainConfig, fork: EthereumHardfork, condition: ForkCondition) {
    let block = match condition {
        ForkCondition::Block(number) => Some(number),
        _ => None,
    };
    let time = match condition {
        ForkCondition::Timestamp(time) => Some(time),
        _ => None,
    };
    match fork {
        EthereumHardfork::Frontier => {}
        EthereumHardfork::Homestead => config.homestead_block = block,
        // A DAO fork at block 0 drains nothing and marks no blocks: geth's configs of the
        // networks born later name none.
        EthereumHardfork::Dao => {
            config.dao_fork_block = block.filter(|&number| number > 0);
            config.dao_fork_support = config.dao_fork_block.is_some();
        }
        EthereumHardfork::Tangerine => config.eip150_block = block,
        // Spurious Dragon is EIP-155 and EIP-158 together.
        EthereumHardfork::SpuriousDragon => {
            config.eip155_block = block;
            config.eip158_block = block;
        }
        EthereumHardfork::Byzantium => config.byzantium_block = block,
        EthereumHardfork::Constantinople => config.constantinople_block = block,
        EthereumHardfork::Petersburg => config.petersburg_block = block,
        EthereumHardfork::Istanbul => config.istanbul_block = block,
        EthereumHardfork::MuirGlacier => config.muir_glacier_block = block,
        EthereumHardfork::Berlin => config.berlin_block = block,
        EthereumHardfork::London => config.london_block = block,
        EthereumHardfork::ArrowGlacier => config.arrow_glacier_block = block,
        EthereumHardfork::GrayGlacier => config.gray_glacier_block = block,
        EthereumHardfork::Paris => {
            config.terminal_total_difficulty = condition.ttd();
            if let ForkCondition::TTD { fork_block, .. } = condition {
                config.merge_netsplit_block = fork_block;
            }
        }
        EthereumHardfork::Shanghai => config.shanghai_time = time,
        EthereumHardfork::Cancun => config.cancun_time = time,
        EthereumHardfork::Prague => config.prague_time = time,
        EthereumHardfork::Osaka => config.osaka_time = time,
        EthereumHardfork::Bpo1 => config.bpo1_time = time,
        EthereumHardfork::Bpo2 => config.bpo2_time = time,
        EthereumHardfork::Bpo3 => config.bpo3_time = time,
        EthereumHardfork::Bpo4 => config.bpo4_time = time,
        EthereumHardfork::Bpo5 => config.bpo5_time = time,
        EthereumHardfork::Amsterdam => config.amsterdam_time = time,
        // Forks of other chains' lists (none of these four networks' lists name them).
        _ => {}
    }
}

/// EIP-7840's blob parameters (alloy-eips' values) for each scheduled fork that has them.
fn blob_schedule(config: &ChainConfig) -> BTreeMap<String, BlobParams> {
    [
        ("cancun", config.cancun_time, BlobParams::cancun()),
        ("prague", config.prague_time, BlobParams::prague()),
        ("osaka", config.osaka_time, BlobParams::osaka()),
        ("bpo1", config.bpo1_time, BlobParams::bpo1()),
        ("bpo2", config.bpo2_time, BlobParams::bpo2()),
    ]
    .into_iter()
    .filter(|(_, time, _)| time.is_some())
    .map(|(name, _, params)| (name.to_string(), params))
    .collect()
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Network {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        Network::ALL
            .into_iter()
            .find(|network| network.name() == name)
            .ok_or_else(|| {
                format!(
                    "{name:?} is not a network quarry knows: mainnet, sepolia, holesky or hoodi"
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChainSpec, genesis};

    #[test]
    fn every_network_builds_its_published_genesis_block() {
        for network in Network::ALL {
            let genesis = network.genesis().expect("bundled genesis");
            let spec = ChainSpec::from_config(genesis.config.clone());
            let mut state = genesis::genesis_state(&genesis.alloc);
            let root = state.trie.root_of_changes().expect("root");
            let header = genesis::genesis_header(&genesis, &spec, root);
            assert_eq!(header.hash_slow(), network.genesis_hash(), "{network}");
            assert_eq!(spec.chain_id, network.chain_id(), "{network}");
        }
    }

    #[test]
    fn mainnet_schedule_is_the_crates() {
        let config = Network::Mainnet.chain_config();
        assert_eq!(config.chain_id, 1);
        assert_eq!(config.homestead_block, Some(1_150_000));
        assert_eq!(config.dao_fork_block, Some(1_920_000));
        assert!(config.dao_fork_support);
        assert_eq!(config.eip155_block, Some(2_675_000));
        assert_eq!(config.london_block, Some(12_965_000));
        assert_eq!(
            config.terminal_total_difficulty,
            Some(alloy_primitives::uint!(58_750_000_000_000_000_000_000_U256))
        );
        assert_eq!(config.shanghai_time, Some(1_681_338_455));
        assert!(config.blob_schedule.contains_key("cancun"));
        let sepolia = Network::Sepolia.chain_config();
        assert_eq!(sepolia.dao_fork_block, None);
        assert_eq!(sepolia.merge_netsplit_block, Some(1_735_371));
    }

    #[test]
    fn names_parse_and_others_are_refused() {
        for network in Network::ALL {
            assert_eq!(network.name().parse::<Network>(), Ok(network));
        }
        let err = "goerli".parse::<Network>().unwrap_err();
        assert!(err.contains("goerli") && err.contains("mainnet"), "{err}");
    }
}
