//! quarry-devchain owns quarry's own test chains: the fixed dev accounts, the compiled contracts
//! of `testdata/contracts`, the seeded plan of every block's transactions, uncles and
//! withdrawals, and the output files (`genesis.json`, `chain.rlp`) that `quarry ingest` reads.
//! Blocks are built by quarry-executor's `build_block`, the code ingest verifies them with.
//! `GenerateOptions::fork` writes a competing branch of a chain instead (the same blocks up to a fork
//! point after the merge, different ones after it), for testing `quarry ingest --reorg`.
//!
//! Three fork schedules: `Forks::Staged` (the bundled devnet; see the `*_BLOCK` constants), proof
//! of work with uncles up to block 11, the merge at block 12, Shanghai at 16, Cancun at 20, Prague
//! at 24 and Osaka at 28; `Forks::Genesis`, every fork through Osaka active from block 0, as
//! `geth --dev`, `reth --dev` and anvil start their chains; and `Forks::Pow`, every fork through
//! Gray Glacier from block 0 and no merge ever, so that every block is proof of work: the chain
//! to export as era1 files, which hold pre-merge blocks only.

pub mod accounts;
pub mod contracts;
mod plan;

pub use accounts::{DevAccounts, dev_key};
pub use plan::Contracts;

use alloy_consensus::{Block, Header, constants::EMPTY_OMMER_ROOT_HASH};
use alloy_eips::{eip2935, eip4788, eip4895::Withdrawal, eip7002, eip7251};
use alloy_genesis::Genesis;
use alloy_hardforks::EthereumHardforks;
use alloy_primitives::{Address, B64, B256, Bytes, address, keccak256};
use alloy_rlp::Encodable;
use alloy_trie::EMPTY_ROOT_HASH;
use plan::{Fees, Planner};
use quarry_executor::{BlockTemplate, ChainSpec, verify};
use quarry_ingest::Importer;
use quarry_storage::Database;
use std::{
    io::Write,
    path::Path,
    time::{Duration, Instant},
};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot write {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("signing failed: {0}")]
    Signing(String),
    #[error("building block {number}: {source}")]
    Build {
        number: u64,
        source: Box<quarry_ingest::Error>,
    },
    #[error(transparent)]
    Ingest(#[from] quarry_ingest::Error),
    #[error(transparent)]
    Storage(#[from] quarry_storage::Error),
    #[error("the generated genesis does not parse: {0}")]
    Genesis(#[from] serde_json::Error),
    #[error("{0}")]
    GenerateOptions(String),
}

pub type Result<T> = std::result::Result<T, Error>;

/// The dev chain's chain id.
pub const CHAIN_ID: u64 = 1337;
/// Block `n` has timestamp `GENESIS_TIMESTAMP + 12 n`.
pub const GENESIS_TIMESTAMP: u64 = 1_700_000_000;
pub const BLOCK_TIME: u64 = 12;
pub const GAS_LIMIT: u64 = 30_000_000;
/// The first proof-of-stake block: the terminal total difficulty is reached by its parent.
pub const MERGE_BLOCK: u64 = 12;
pub const SHANGHAI_BLOCK: u64 = 16;
pub const CANCUN_BLOCK: u64 = 20;
pub const PRAGUE_BLOCK: u64 = 24;
pub const OSAKA_BLOCK: u64 = 28;
/// Fee recipient of every block; uncles pay `UNCLE_MINERS`.
pub const MINER: Address = address!("0x00000000000000000000000000000000000c0ffe");
pub const UNCLE_MINERS: [Address; 2] = [
    address!("0x000000000000000000000000000000000000a1a1"),
    address!("0x000000000000000000000000000000000000b2b2"),
];
/// Each dev account starts with a million ether.
const DEV_BALANCE: u128 = 1_000_000 * 1_000_000_000_000_000_000;
const GENESIS_DIFFICULTY: u64 = 0x20000;
const WITHDRAWALS_PER_BLOCK: u64 = 2;
/// Blocks per write transaction while building.
const COMMIT_EVERY: u64 = 256;

/// When the chain's forks start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Forks {
    /// Proof of work with uncles, then the merge and each later fork at its own block.
    #[default]
    Staged,
    /// Every fork through Osaka active at genesis: no proof of work, no uncles.
    Genesis,
    /// Every fork through Gray Glacier active at genesis and no terminal total difficulty:
    /// proof of work with uncles for ever, no withdrawals, no blob or EIP-7702 transactions.
    Pow,
}

impl std::str::FromStr for Forks {
    type Err = String;
    fn from_str(name: &str) -> std::result::Result<Self, String> {
        match name {
            "staged" => Ok(Self::Staged),
            "genesis" => Ok(Self::Genesis),
            "pow" => Ok(Self::Pow),
            other => Err(format!(
                "unknown fork schedule {other:?}: expected \"staged\", \"genesis\" or \"pow\""
            )),
        }
    }
}

/// What `quarry devchain` is asked for.
#[derive(Debug, Clone, Copy)]
pub struct GenerateOptions {
    pub blocks: u64,
    pub txs_per_block: usize,
    pub seed: u64,
    pub forks: Forks,
    /// Write a competing branch instead of the ordinary chain (`None`: the ordinary chain).
    pub fork: Option<ForkBranch>,
}

impl Default for GenerateOptions {
    /// The bundled chain, `testdata/devnet`.
    fn default() -> Self {
        Self {
            blocks: 64,
            txs_per_block: 12,
            seed: 1,
            forks: Forks::Staged,
            fork: None,
        }
    }
}

/// A competing branch of the chain the other options describe: blocks `1..=at` are that
/// chain's, byte for byte; from block `at + 1` on, the mix (and the withdrawals) come from a
/// second random stream seeded by `seed`, and the extra data is `FORK_EXTRA_DATA`, so that
/// every block above `at` differs from the ordinary chain's, even an empty one. Nonces continue
/// from block `at`, so every transaction of the branch is valid on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForkBranch {
    /// The last block the branch shares with the ordinary chain.
    pub at: u64,
    pub seed: u64,
}

/// The extra data of the blocks of the ordinary chain and of a fork's own blocks.
pub const EXTRA_DATA: &[u8] = b"quarry devchain";
pub const FORK_EXTRA_DATA: &[u8] = b"quarry devchain fork";

impl GenerateOptions {
    /// Refuses options that describe no chain: no blocks, or a fork point that is not a
    /// proof-of-stake block below the last one.
    fn check(&self) -> Result<()> {
        if self.blocks == 0 {
            return Err(Error::GenerateOptions("--blocks must be at least 1".into()));
        }
        let Some(fork) = self.fork else {
            return Ok(());
        };
        match self.forks {
            // A branch that forks before the merge would have to be heavier than the chain it
            // replaces; after the merge, the chain to follow is whatever the input says.
            Forks::Staged if fork.at < MERGE_BLOCK => {
                return Err(Error::GenerateOptions(format!(
                    "--fork-at {} is before the merge: with --forks staged a fork point must be at least {MERGE_BLOCK} (the merge block), since a proof-of-work branch would have to be heavier than the chain it replaces",
                    fork.at
                )));
            }
            Forks::Pow => {
                return Err(Error::GenerateOptions(format!(
                    "--fork-at {} cannot be used with --forks pow: every block of that chain is proof of work, and a proof-of-work branch would have to be heavier than the chain it replaces",
                    fork.at
                )));
            }
            Forks::Genesis if fork.at == 0 => {
                return Err(Error::GenerateOptions(
                    "--fork-at must be at least 1: block 0 is the genesis both branches share"
                        .into(),
                ));
            }
            _ => {}
        }
        if fork.at >= self.blocks {
            return Err(Error::GenerateOptions(format!(
                "--fork-at {} must be below --blocks {}: the fork's own blocks start at block {}",
                fork.at,
                self.blocks,
                fork.at + 1
            )));
        }
        Ok(())
    }
}

/// What a generation produced and where its time went.
#[derive(Debug, Clone, Copy, Default)]
pub struct Summary {
    pub blocks: u64,
    pub transactions: u64,
    pub gas: u64,
    pub bytes: u64,
    pub elapsed: Duration,
    /// Choosing and signing transactions.
    pub planning: Duration,
    /// Executing, computing roots and staging blocks in the scratch database.
    pub building: Duration,
}

/// The number of dev accounts a chain with `txs_per_block` uses: enough that a block's
/// senders rarely repeat.
pub fn account_count(txs_per_block: usize) -> usize {
    (2 * txs_per_block).max(16)
}

/// The genesis.json of a dev chain with `accounts` funded dev accounts and the fork schedule
/// `forks`.
pub fn genesis_json(accounts: &DevAccounts, forks: Forks) -> serde_json::Value {
    let difficulty = match forks {
        Forks::Staged | Forks::Pow => GENESIS_DIFFICULTY,
        Forks::Genesis => 0,
    };
    let mut alloc = serde_json::Map::new();
    for address in accounts.addresses() {
        alloc.insert(
            address.to_string(),
            serde_json::json!({ "balance": format!("{:#x}", DEV_BALANCE) }),
        );
    }
    // The system contracts of EIP-4788, 2935, 7002 and 7251, as mainnet has them; a chain that
    // never reaches Cancun has no use for them (and their code needs PUSH0).
    let system_contracts = [
        (eip4788::BEACON_ROOTS_ADDRESS, &eip4788::BEACON_ROOTS_CODE),
        (
            eip2935::HISTORY_STORAGE_ADDRESS,
            &eip2935::HISTORY_STORAGE_CODE,
        ),
        (
            eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS,
            &eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_CODE,
        ),
        (
            eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS,
            &eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_CODE,
        ),
    ];
    if forks != Forks::Pow {
        for (address, code) in system_contracts {
            alloc.insert(
                address.to_string(),
                serde_json::json!({ "balance": "0x0", "nonce": "0x1", "code": code.to_string() }),
            );
        }
    }
    let mut genesis = serde_json::json!({
        "config": {
            "chainId": CHAIN_ID,
            "homesteadBlock": 0,
            "eip150Block": 0,
            "eip155Block": 0,
            "eip158Block": 0,
            "byzantiumBlock": 0,
            "constantinopleBlock": 0,
            "petersburgBlock": 0,
            "istanbulBlock": 0,
            "muirGlacierBlock": 0,
            "berlinBlock": 0,
            "londonBlock": 0,
            "arrowGlacierBlock": 0,
            "grayGlacierBlock": 0,
        },
        "nonce": "0x0",
        "timestamp": format!("{GENESIS_TIMESTAMP:#x}"),
        "extraData": Bytes::from_static(b"quarry devnet").to_string(),
        "gasLimit": format!("{GAS_LIMIT:#x}"),
        "difficulty": format!("{difficulty:#x}"),
        "mixHash": B256::ZERO.to_string(),
        "coinbase": Address::ZERO.to_string(),
        "alloc": alloc,
    });
    for (key, value) in merge_and_later_forks(forks) {
        genesis["config"][key] = value;
    }
    if forks != Forks::Genesis {
        // Proof of work before the merge, named as geth and reth expect it.
        genesis["config"]["ethash"] = serde_json::json!({});
    }
    genesis
}

/// The config entries of `forks` after Gray Glacier: the merge and the forks by timestamp.
/// Nothing for `Forks::Pow`: without a terminal total difficulty the chain never merges.
fn merge_and_later_forks(forks: Forks) -> Vec<(&'static str, serde_json::Value)> {
    let (time, terminal_total_difficulty, merge_block): (fn(u64) -> u64, u64, u64) = match forks {
        Forks::Staged => (
            |block| GENESIS_TIMESTAMP + BLOCK_TIME * block,
            MERGE_BLOCK * GENESIS_DIFFICULTY,
            MERGE_BLOCK,
        ),
        Forks::Genesis => (|_| GENESIS_TIMESTAMP, 0, 0),
        Forks::Pow => return Vec::new(),
    };
    let blob = |target: u64, max: u64, fraction: u64| serde_json::json!({ "target": target, "max": max, "baseFeeUpdateFraction": fraction });
    vec![
        // geth and reth name the merge by block as well as by total difficulty (without
        // mergeNetsplitBlock reth takes every block for proof of work).
        ("mergeNetsplitBlock", merge_block.into()),
        ("terminalTotalDifficulty", terminal_total_difficulty.into()),
        ("shanghaiTime", time(SHANGHAI_BLOCK).into()),
        ("cancunTime", time(CANCUN_BLOCK).into()),
        ("pragueTime", time(PRAGUE_BLOCK).into()),
        ("osakaTime", time(OSAKA_BLOCK).into()),
        (
            "blobSchedule",
            serde_json::json!({
                "cancun": blob(3, 6, 3_338_477),
                "prague": blob(6, 9, 5_007_716),
                "osaka": blob(6, 9, 5_007_716),
            }),
        ),
    ]
}

/// Writes `out/genesis.json` and `out/chain.rlp` for `options`. `on_block` sees the running
/// summary after every block. The chain file appears under its name only when it is complete.
pub fn generate(
    out: &Path,
    options: &GenerateOptions,
    on_block: &mut dyn FnMut(&Summary),
) -> Result<Summary> {
    options.check()?;
    let started = Instant::now();
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| Error::Io { path, source }
    };
    std::fs::create_dir_all(out).map_err(io(out))?;
    let accounts = DevAccounts::new(account_count(options.txs_per_block))?;
    let genesis_text =
        serde_json::to_string_pretty(&genesis_json(&accounts, options.forks))? + "\n";
    let genesis: Genesis = serde_json::from_str(&genesis_text)?;
    let genesis_path = out.join("genesis.json");
    std::fs::write(&genesis_path, &genesis_text).map_err(io(&genesis_path))?;

    let scratch = tempfile::tempdir().map_err(io(&std::env::temp_dir()))?;
    let mut importer = Importer::open(Database::open(scratch.path())?, &genesis)?;
    // The scratch datadir only builds blocks: nobody asks it for proofs at older blocks.
    importer.stop_trie_history()?;
    let spec = importer.spec().clone();
    let mut planner = Planner::new(&accounts, options.txs_per_block, options.seed);

    let chain_path = out.join("chain.rlp");
    let partial_path = out.join("chain.rlp.partial");
    let file = std::fs::File::create(&partial_path).map_err(io(&partial_path))?;
    let mut writer = std::io::BufWriter::new(file);
    let mut summary = Summary::default();
    let mut withdrawal_index = 0u64;
    let mut encoded = Vec::new();
    let mut number = 1;
    while number <= options.blocks {
        let tx = importer.database().writer()?;
        let last = (number + COMMIT_EVERY - 1).min(options.blocks);
        for number in number..=last {
            let planning = Instant::now();
            let forked = options.fork.is_some_and(|fork| number > fork.at);
            if let Some(fork) = options.fork
                && number == fork.at + 1
            {
                planner.fork(options.seed, fork.seed);
            }
            let parent = importer.head_header().clone();
            let timestamp = GENESIS_TIMESTAMP + BLOCK_TIME * number;
            let parent_td = tx.total_difficulty(parent.number)?.unwrap_or_default();
            let merged = spec.is_merged(parent_td, timestamp);
            let fees = Fees {
                base_fee: verify::expected_base_fee(&spec, &parent).unwrap_or_default(),
                cancun: spec.is_cancun_active_at_timestamp(timestamp),
                prague: spec.is_prague_active_at_timestamp(timestamp),
            };
            let (transactions, senders) = planner.block(number, fees)?;
            let ommers = if merged {
                Vec::new()
            } else {
                uncles(&spec, &tx, number)?
            };
            let withdrawals = match options.forks {
                // Drawn even before Shanghai, where build_block leaves them out, so that the
                // staged chain's later blocks stay what they have always been.
                Forks::Staged | Forks::Genesis => {
                    withdrawals(&mut planner, &accounts, number, &mut withdrawal_index)
                }
                // Never Shanghai: nothing to draw.
                Forks::Pow => Vec::new(),
            };
            let template = BlockTemplate {
                timestamp,
                beneficiary: MINER,
                gas_limit: GAS_LIMIT,
                extra_data: Bytes::from_static(if forked { FORK_EXTRA_DATA } else { EXTRA_DATA }),
                mix_hash: if merged {
                    keccak256([b"prevrandao".as_slice(), &number.to_be_bytes()].concat())
                } else {
                    B256::ZERO
                },
                nonce: B64::from(number),
                parent_beacon_block_root: keccak256(
                    [b"beacon".as_slice(), &number.to_be_bytes()].concat(),
                ),
                ommers,
                transactions,
                senders,
                withdrawals,
            };
            summary.planning += planning.elapsed();
            let building = Instant::now();
            let block = importer
                .build_block(&tx, template)
                .map_err(|source| Error::Build {
                    number,
                    source: Box::new(source),
                })?;
            summary.building += building.elapsed();
            summary.blocks += 1;
            summary.transactions += block.body.transactions.len() as u64;
            summary.gas += block.header.gas_used;
            encoded.clear();
            Block::new(block.header, block.body).encode(&mut encoded);
            summary.bytes += encoded.len() as u64;
            writer.write_all(&encoded).map_err(io(&partial_path))?;
            summary.elapsed = started.elapsed();
            on_block(&summary);
        }
        let building = Instant::now();
        tx.commit()?;
        summary.building += building.elapsed();
        number = last + 1;
    }
    writer.flush().map_err(io(&partial_path))?;
    drop(writer);
    std::fs::rename(&partial_path, &chain_path).map_err(io(&chain_path))?;
    summary.elapsed = started.elapsed();
    Ok(summary)
}

/// The withdrawals of block `number`, drawn from the plan's random stream; `index` is the last
/// withdrawal index used so far.
fn withdrawals(
    planner: &mut Planner<'_>,
    accounts: &DevAccounts,
    number: u64,
    index: &mut u64,
) -> Vec<Withdrawal> {
    (0..WITHDRAWALS_PER_BLOCK)
        .map(|k| {
            *index += 1;
            Withdrawal {
                index: *index,
                validator_index: (number * WITHDRAWALS_PER_BLOCK + k) % 64,
                address: accounts.address(planner.rng().below(accounts.len() as u64) as usize),
                amount: 1 + planner.rng().below(32_000_000_000),
            }
        })
        .collect()
}

/// The uncles of proof-of-work block `number`: one in blocks 3, 7, 11…, two in blocks 5, 9…
/// Each is a sibling of an ancestor: a child of block `number - 2` (and `number - 3`) that lost
/// the race, paying `UNCLE_MINERS`.
fn uncles(spec: &ChainSpec, tx: &quarry_storage::WriteTx, number: u64) -> Result<Vec<Header>> {
    let count = match number % 4 {
        3 => 1,
        1 if number >= 5 => 2,
        _ => 0,
    };
    let mut uncles = Vec::with_capacity(count);
    for k in 0..count as u64 {
        let parent_number = number - 2 - k;
        let missing = || {
            quarry_storage::Error::Corrupt(format!(
                "no block {parent_number} while building uncles"
            ))
        };
        let parent = tx.header(parent_number)?.ok_or_else(missing)?;
        let parent_hash = tx.canonical_hash(parent_number)?.ok_or_else(missing)?;
        // One second later than the canonical sibling, so that the two differ.
        let timestamp = parent.timestamp + BLOCK_TIME + 1;
        uncles.push(Header {
            parent_hash,
            ommers_hash: EMPTY_OMMER_ROOT_HASH,
            beneficiary: UNCLE_MINERS[k as usize],
            state_root: parent.state_root,
            transactions_root: EMPTY_ROOT_HASH,
            receipts_root: EMPTY_ROOT_HASH,
            difficulty: verify::pow_difficulty(spec, timestamp, &parent),
            number: parent_number + 1,
            gas_limit: parent.gas_limit,
            timestamp,
            extra_data: Bytes::from_static(b"quarry uncle"),
            nonce: B64::from(number),
            base_fee_per_gas: verify::expected_base_fee(spec, &parent),
            ..Default::default()
        });
    }
    Ok(uncles)
}
