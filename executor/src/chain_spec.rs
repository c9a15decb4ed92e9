//! The fork schedule of a chain, read from genesis.json's `config`.

use alloy_eips::{eip7840::BlobParams, eip7892::BlobScheduleBlobParams};
use alloy_evm::eth::spec::EthExecutorSpec;
use alloy_genesis::ChainConfig;
use alloy_hardforks::{EthereumChainHardforks, EthereumHardfork, EthereumHardforks, ForkCondition};
use alloy_primitives::{Address, U256};

/// A chain's rules: its id, fork activations, merge threshold and blob parameters.
#[derive(Debug, Clone)]
pub struct ChainSpec {
    pub chain_id: u64,
    pub config: ChainConfig,
    hardforks: EthereumChainHardforks,
    blob_params: BlobScheduleBlobParams,
}

impl ChainSpec {
    /// The spec of the chain stored in `tx` (ingest records genesis.json's `config`), or `None`
    /// for an empty database.
    pub fn stored<K: quarry_storage::Access>(
        tx: &quarry_storage::StorageTx<K>,
    ) -> crate::Result<Option<Self>> {
        let Some(bytes) = tx.meta(quarry_storage::MetaKey::ChainConfig)? else {
            return Ok(None);
        };
        let config: ChainConfig = serde_json::from_slice(&bytes)
            .map_err(|e| quarry_storage::Error::Corrupt(format!("stored chain config: {e}")))?;
        Ok(Some(Self::from_config(config)))
    }

    pub fn from_config(config: ChainConfig) -> Self {
        let block = |b: Option<u64>| b.map_or(ForkCondition::Never, ForkCondition::Block);
        let time = |t: Option<u64>| t.map_or(ForkCondition::Never, ForkCondition::Timestamp);
        // geth: a chain without a Petersburg block gets Petersburg with Constantinople.
        let petersburg = config.petersburg_block.or(config.constantinople_block);
        let forks = [
            (EthereumHardfork::Frontier, ForkCondition::Block(0)),
            (EthereumHardfork::Homestead, block(config.homestead_block)),
            (EthereumHardfork::Tangerine, block(config.eip150_block)),
            (
                EthereumHardfork::SpuriousDragon,
                block(config.eip158_block.or(config.eip155_block)),
            ),
            (EthereumHardfork::Byzantium, block(config.byzantium_block)),
            (
                EthereumHardfork::Constantinople,
                block(config.constantinople_block),
            ),
            (EthereumHardfork::Petersburg, block(petersburg)),
            (EthereumHardfork::Istanbul, block(config.istanbul_block)),
            (
                EthereumHardfork::MuirGlacier,
                block(config.muir_glacier_block),
            ),
            (EthereumHardfork::Berlin, block(config.berlin_block)),
            (EthereumHardfork::London, block(config.london_block)),
            (
                EthereumHardfork::ArrowGlacier,
                block(config.arrow_glacier_block),
            ),
            (
                EthereumHardfork::GrayGlacier,
                block(config.gray_glacier_block),
            ),
            (EthereumHardfork::Shanghai, time(config.shanghai_time)),
            (EthereumHardfork::Cancun, time(config.cancun_time)),
            (EthereumHardfork::Prague, time(config.prague_time)),
            (EthereumHardfork::Osaka, time(config.osaka_time)),
            (EthereumHardfork::Bpo1, time(config.bpo1_time)),
            (EthereumHardfork::Bpo2, time(config.bpo2_time)),
            (EthereumHardfork::Bpo3, time(config.bpo3_time)),
            (EthereumHardfork::Bpo4, time(config.bpo4_time)),
            (EthereumHardfork::Bpo5, time(config.bpo5_time)),
        ];
        let mut blob_params = config.blob_schedule_blob_params();
        if config.blob_schedule.is_empty() {
            blob_params = BlobScheduleBlobParams::mainnet();
        }
        Self {
            chain_id: config.chain_id,
            hardforks: EthereumChainHardforks::new(forks),
            blob_params,
            config,
        }
    }

    /// The block where the DAO fork's irregular state change applies, if this chain has one.
    pub fn dao_fork_block(&self) -> Option<u64> {
        self.config
            .dao_fork_support
            .then_some(self.config.dao_fork_block)
            .flatten()
    }

    /// Whether a block whose parent has total difficulty `parent_td` and that has `timestamp`
    /// is past the merge. geth's rule: the parent reached the terminal total difficulty.
    pub fn is_merged(&self, parent_td: U256, timestamp: u64) -> bool {
        self.config
            .terminal_total_difficulty
            .is_some_and(|ttd| parent_td >= ttd)
            || self.hardforks.is_shanghai_active_at_timestamp(timestamp)
    }

    /// Whether a chain with total difficulty `td` has reached the terminal total difficulty:
    /// from then on its head is the consensus layer's choice, not the heaviest chain's.
    pub fn reached_terminal_difficulty(&self, td: U256) -> bool {
        self.config
            .terminal_total_difficulty
            .is_some_and(|ttd| td >= ttd)
    }

    /// The rules in force for one block.
    pub fn at_block(&self, merged: bool) -> BlockRules<'_> {
        BlockRules { spec: self, merged }
    }

    /// Blob parameters in force at `timestamp` (None before Cancun).
    pub fn blob_params_at(&self, timestamp: u64) -> Option<BlobParams> {
        let forks = &self.hardforks;
        if forks.is_osaka_active_at_timestamp(timestamp) {
            Some(
                self.blob_params
                    .active_scheduled_params_at_timestamp(timestamp)
                    .copied()
                    .unwrap_or(self.blob_params.osaka),
            )
        } else if forks.is_prague_active_at_timestamp(timestamp) {
            Some(self.blob_params.prague)
        } else if forks.is_cancun_active_at_timestamp(timestamp) {
            Some(self.blob_params.cancun)
        } else {
            None
        }
    }

    pub fn deposit_contract(&self) -> Option<Address> {
        self.config.deposit_contract_address
    }
}

/// The fork view alloy-evm executes a block under. The merge is decided per block from total
/// difficulty, and the DAO fork is reported as never active because quarry applies its drain
/// itself, before the block's transactions as geth does (alloy-evm would drain after them).
#[derive(Debug, Clone, Copy)]
pub struct BlockRules<'a> {
    pub spec: &'a ChainSpec,
    pub merged: bool,
}

impl EthereumHardforks for BlockRules<'_> {
    fn ethereum_fork_activation(&self, fork: EthereumHardfork) -> ForkCondition {
        match fork {
            EthereumHardfork::Paris if self.merged => ForkCondition::Block(0),
            EthereumHardfork::Paris | EthereumHardfork::Dao => ForkCondition::Never,
            // revm has no Constantinople of its own: its opcodes come with Petersburg's rules,
            // and where Petersburg has not come block execution swaps in EIP-1283's SSTORE.
            EthereumHardfork::Petersburg => {
                let hardforks = &self.spec.hardforks;
                let petersburg = hardforks.ethereum_fork_activation(EthereumHardfork::Petersburg);
                match (
                    hardforks.ethereum_fork_activation(EthereumHardfork::Constantinople),
                    petersburg,
                ) {
                    (ForkCondition::Block(c), ForkCondition::Block(p)) if c < p => {
                        ForkCondition::Block(c)
                    }
                    (ForkCondition::Block(c), ForkCondition::Never) => ForkCondition::Block(c),
                    _ => petersburg,
                }
            }
            fork => self.spec.hardforks.ethereum_fork_activation(fork),
        }
    }
}

impl EthExecutorSpec for BlockRules<'_> {
    fn deposit_contract_address(&self) -> Option<Address> {
        self.spec.deposit_contract()
    }
}

impl EthereumHardforks for ChainSpec {
    fn ethereum_fork_activation(&self, fork: EthereumHardfork) -> ForkCondition {
        self.hardforks.ethereum_fork_activation(fork)
    }
}
