//! Ethereum BlockchainTests run through the same import, execution and verification path as
//! `quarry ingest`, each in a fresh temporary database.

use crate::{Importer, Progress, Reorgs, reader::RawBlock};
use alloy_eips::eip7840::BlobParams;
use alloy_genesis::{ChainConfig, GenesisAccount};
use alloy_primitives::{Address, B256, Bytes, U256, address, keccak256};
use alloy_rlp::Decodable;
use quarry_executor::ChainSpec;
use quarry_storage::Database;
use serde::Deserialize;
use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
};

/// Mainnet's deposit contract, which the Prague fixtures assume.
const DEPOSIT_CONTRACT: Address = address!("0x00000000219ab540356cbb839cbe05303d7705fa");

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TestCase {
    network: String,
    #[serde(rename = "genesisRLP")]
    genesis_rlp: Option<Bytes>,
    /// The genesis header when the file has no `genesisRLP` (older files).
    genesis_block_header: Option<GenesisHeader>,
    pre: BTreeMap<Address, GenesisAccount>,
    blocks: Vec<TestBlock>,
    lastblockhash: B256,
    post_state: Option<BTreeMap<Address, PostAccount>>,
    post_state_hash: Option<B256>,
    config: Option<TestConfig>,
}

/// A header in the BlockchainTests' JSON names.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GenesisHeader {
    parent_hash: B256,
    uncle_hash: B256,
    coinbase: Address,
    state_root: B256,
    transactions_trie: B256,
    receipt_trie: B256,
    bloom: alloy_primitives::Bloom,
    difficulty: U256,
    number: alloy_primitives::U64,
    gas_limit: alloy_primitives::U64,
    gas_used: alloy_primitives::U64,
    timestamp: alloy_primitives::U64,
    extra_data: Bytes,
    mix_hash: B256,
    nonce: alloy_primitives::B64,
    hash: B256,
    base_fee_per_gas: Option<alloy_primitives::U64>,
    withdrawals_root: Option<B256>,
    blob_gas_used: Option<alloy_primitives::U64>,
    excess_blob_gas: Option<alloy_primitives::U64>,
    parent_beacon_block_root: Option<B256>,
    requests_hash: Option<B256>,
}

impl GenesisHeader {
    /// The header, if it hashes to the `hash` the file gives.
    fn to_header(&self) -> Result<alloy_consensus::Header, String> {
        let header = alloy_consensus::Header {
            parent_hash: self.parent_hash,
            ommers_hash: self.uncle_hash,
            beneficiary: self.coinbase,
            state_root: self.state_root,
            transactions_root: self.transactions_trie,
            receipts_root: self.receipt_trie,
            logs_bloom: self.bloom,
            difficulty: self.difficulty,
            number: self.number.to(),
            gas_limit: self.gas_limit.to(),
            gas_used: self.gas_used.to(),
            timestamp: self.timestamp.to(),
            extra_data: self.extra_data.clone(),
            mix_hash: self.mix_hash,
            nonce: self.nonce,
            base_fee_per_gas: self.base_fee_per_gas.map(|fee| fee.to()),
            withdrawals_root: self.withdrawals_root,
            blob_gas_used: self.blob_gas_used.map(|gas| gas.to()),
            excess_blob_gas: self.excess_blob_gas.map(|gas| gas.to()),
            parent_beacon_block_root: self.parent_beacon_block_root,
            requests_hash: self.requests_hash,
            ..Default::default()
        };
        let hash = header.hash_slow();
        if hash != self.hash {
            return Err(format!(
                "genesisBlockHeader hashes to {hash}, but its hash is {}",
                self.hash
            ));
        }
        Ok(header)
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TestConfig {
    chainid: Option<alloy_primitives::U64>,
    #[serde(default)]
    blob_schedule: BTreeMap<String, TestBlobParams>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TestBlobParams {
    target: alloy_primitives::U64,
    max: alloy_primitives::U64,
    base_fee_update_fraction: alloy_primitives::U128,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TestBlock {
    rlp: Bytes,
    /// Present for the blocks the test expects to be valid (geth's rule; older files name
    /// the exception per network, `expectExceptionALL` or `expectExceptionByzantium`).
    block_header: Option<serde::de::IgnoredAny>,
    #[serde(flatten)]
    other: BTreeMap<String, serde_json::Value>,
}

impl TestBlock {
    /// The exception an invalid block is expected to raise, or `None` for a valid block.
    fn expected_exception(&self) -> Option<String> {
        let named = self
            .other
            .iter()
            .find(|(key, _)| key.starts_with("expectException"))
            .map(|(_, value)| value.as_str().map_or(value.to_string(), str::to_string));
        match (named, &self.block_header) {
            (Some(exception), _) => Some(exception),
            (None, None) => Some("an invalid block (it has no blockHeader)".to_string()),
            (None, Some(_)) => None,
        }
    }
}

#[derive(Debug, Deserialize)]
struct PostAccount {
    balance: U256,
    nonce: alloy_primitives::U64,
    code: Bytes,
    #[serde(default)]
    storage: BTreeMap<U256, U256>,
}

/// The outcome of one test.
#[derive(Debug)]
pub struct TestOutcome {
    pub name: String,
    pub failure: Option<String>,
}

/// Every `.json` file under `path` (or `path` itself), sorted.
pub fn test_files(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    if path.is_file() {
        files.push(path.to_path_buf());
        return Ok(files);
    }
    for entry in std::fs::read_dir(path)? {
        let entry = entry?.path();
        if entry.is_dir() {
            files.extend(test_files(&entry)?);
        } else if entry.extension().is_some_and(|e| e == "json")
            && entry.file_name().is_some_and(|n| n != "MANIFEST.json")
        {
            files.push(entry);
        }
    }
    files.sort();
    Ok(files)
}

/// Runs every test in one file.
pub fn run_file(path: &Path) -> Vec<TestOutcome> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            return vec![TestOutcome {
                name: path.display().to_string(),
                failure: Some(format!("cannot read: {e}")),
            }];
        }
    };
    let cases: BTreeMap<String, serde_json::Value> = match serde_json::from_str(&text) {
        Ok(cases) => cases,
        Err(e) => {
            return vec![TestOutcome {
                name: path.display().to_string(),
                failure: Some(if text.starts_with("version https://git-lfs") {
                    "a Git LFS pointer, not the file's content (`git lfs pull` fetches it)"
                        .to_string()
                } else {
                    format!("not a BlockchainTests file: {e}")
                }),
            }];
        }
    };
    cases
        .into_iter()
        .map(|(name, value)| {
            let failure = serde_json::from_value::<TestCase>(value)
                .map_err(|e| format!("malformed test: {e}"))
                .and_then(|case| run_case(&case))
                .err();
            TestOutcome {
                name: format!("{}::{name}", path.display()),
                failure,
            }
        })
        .collect()
}

fn run_case(case: &TestCase) -> Result<(), String> {
    let mut config = chain_config(&case.network)
        .ok_or_else(|| format!("unsupported network {}", case.network))?;
    if let Some(test_config) = &case.config {
        if let Some(id) = test_config.chainid {
            config.chain_id = id.to();
        }
        for (fork, params) in &test_config.blob_schedule {
            config.blob_schedule.insert(
                fork.to_lowercase(),
                BlobParams {
                    target_blob_count: params.target.to(),
                    max_blob_count: params.max.to(),
                    update_fraction: params.base_fee_update_fraction.to(),
                    max_blobs_per_tx: params.max.to(),
                    ..BlobParams::cancun()
                },
            );
        }
    }
    let spec = ChainSpec::from_config(config);
    let genesis = match (&case.genesis_rlp, &case.genesis_block_header) {
        (Some(rlp), _) => {
            alloy_consensus::Block::<alloy_consensus::TxEnvelope>::decode(&mut rlp.as_ref())
                .map_err(|e| format!("genesis RLP: {e}"))?
                .header
        }
        (None, Some(header)) => header.to_header()?,
        (None, None) => return Err("neither genesisRLP nor genesisBlockHeader".to_string()),
    };
    let genesis_hash = genesis.hash_slow();
    let mut chain = Chain::new(&spec, &genesis, &case.pre)?;
    // Every block accepted on any branch, by hash: its parent and its RLP.
    let mut accepted: HashMap<B256, (B256, &[u8])> = HashMap::new();
    for (index, block) in case.blocks.iter().enumerate() {
        let label = format!("block #{index}");
        let parent = block_parent(&block.rlp);
        let result = match parent {
            // A block on another branch: the branch from where it leaves the chain is imported
            // with the same unwind a reorganising ingest uses, and kept if it is heavier.
            Some((hash, parent))
                if parent != chain.importer.head().1
                    && (parent == genesis_hash || accepted.contains_key(&parent)) =>
            {
                let mut path = vec![block.rlp.as_ref()];
                let mut at = parent;
                while let Some((grandparent, rlp)) = accepted.get(&at) {
                    path.push(rlp);
                    at = *grandparent;
                }
                path.reverse();
                let result = chain.import(&label, &path);
                if result.is_ok() {
                    accepted.insert(hash, (parent, block.rlp.as_ref()));
                }
                result
            }
            _ => {
                let result = chain.import(&label, &[block.rlp.as_ref()]);
                if let (Ok(()), Some((hash, parent))) = (&result, parent) {
                    accepted.insert(hash, (parent, block.rlp.as_ref()));
                }
                result
            }
        };
        match (result, block.expected_exception()) {
            (Ok(()), Some(exception)) => {
                return Err(format!(
                    "block #{index} was accepted but expects {exception}"
                ));
            }
            (Err(e), None) => return Err(format!("block #{index} was rejected: {e}")),
            _ => {}
        }
    }
    let importer = &chain.importer;
    let (_, head_hash) = importer.head();
    if head_hash != case.lastblockhash {
        return Err(format!(
            "head is {head_hash}, expected {}",
            case.lastblockhash
        ));
    }
    if let Some(expected) = case.post_state_hash {
        let reader = importer.database().reader().map_err(|e| e.to_string())?;
        let (number, _) = importer.head();
        let root = reader
            .header(number)
            .map_err(|e| e.to_string())?
            .map(|h| h.state_root);
        if root != Some(expected) {
            return Err(format!("post state root {root:?}, expected {expected}"));
        }
    }
    if let Some(post) = &case.post_state {
        compare_post_state(importer.database(), post)?;
    }
    Ok(())
}

/// The test's chain, in a temporary database of its own.
struct Chain {
    importer: Importer,
    _dir: tempfile::TempDir,
}

impl Chain {
    fn new(
        spec: &ChainSpec,
        genesis: &alloy_consensus::Header,
        pre: &BTreeMap<Address, alloy_genesis::GenesisAccount>,
    ) -> Result<Self, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
        let db = Database::open(dir.path()).map_err(|e| e.to_string())?;
        let mut importer = Importer::open_with_header(db, spec.clone(), genesis.clone(), pre)
            .map_err(|e| e.to_string())?;
        importer.set_reorgs(Reorgs::Heavier {
            max_depth: u64::MAX,
        });
        Ok(Self {
            importer,
            _dir: dir,
        })
    }

    /// Imports a run of blocks, executed and verified as ingest does: stored ones are skipped,
    /// and one that differs from a stored block unwinds the chain to its parent, the run then
    /// kept only if it ends heavier than the chain it replaced.
    fn import(&mut self, label: &str, blocks: &[&[u8]]) -> Result<(), String> {
        let mut raw = blocks.iter().map(|rlp| {
            Ok(RawBlock {
                offset: 0,
                bytes: rlp.to_vec(),
            })
        });
        self.importer
            .import_blocks(label, &mut raw, &mut Progress::hidden())
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// A block's hash and its parent's, if its header decodes.
fn block_parent(rlp: &[u8]) -> Option<(B256, B256)> {
    let block =
        alloy_consensus::Block::<alloy_consensus::TxEnvelope>::decode(&mut &rlp[..]).ok()?;
    Some((block.header.hash_slow(), block.header.parent_hash))
}

fn compare_post_state(db: &Database, post: &BTreeMap<Address, PostAccount>) -> Result<(), String> {
    let reader = db.reader().map_err(|e| e.to_string())?;
    let mut stored = HashMap::new();
    reader
        .for_each_account(|address, account| {
            stored.insert(address, account);
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    for address in stored.keys() {
        if !post.contains_key(address) {
            return Err(format!("account {address} exists but is not in postState"));
        }
    }
    for (address, expected) in post {
        let Some(account) = stored.get(address) else {
            return Err(format!("account {address} is missing"));
        };
        if account.balance != expected.balance {
            return Err(format!(
                "{address} balance {} expected {}",
                account.balance, expected.balance
            ));
        }
        if account.nonce != expected.nonce.to::<u64>() {
            return Err(format!(
                "{address} nonce {} expected {}",
                account.nonce, expected.nonce
            ));
        }
        let code_hash = keccak256(&expected.code);
        let expected_hash = if expected.code.is_empty() {
            alloy_primitives::KECCAK256_EMPTY
        } else {
            code_hash
        };
        if account.code_hash != expected_hash {
            return Err(format!("{address} code differs"));
        }
        let storage: BTreeMap<U256, U256> = reader
            .account_storage(address)
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|(slot, value)| (U256::from_be_bytes(slot.0), value))
            .collect();
        let expected_storage: BTreeMap<U256, U256> = expected
            .storage
            .iter()
            .filter(|(_, v)| !v.is_zero())
            .map(|(k, v)| (*k, *v))
            .collect();
        if storage != expected_storage {
            return Err(format!(
                "{address} storage {storage:?} expected {expected_storage:?}"
            ));
        }
    }
    Ok(())
}

/// The forks in activation order, as the test suites name them.
const FORKS: &[&str] = &[
    "Frontier",
    "Homestead",
    "EIP150",
    "EIP158",
    "Byzantium",
    "Constantinople",
    "ConstantinopleFix",
    "Istanbul",
    "MuirGlacier",
    "Berlin",
    "London",
    "ArrowGlacier",
    "GrayGlacier",
    "Paris",
    "Shanghai",
    "Cancun",
    "Prague",
    "Osaka",
    "BPO1",
    "BPO2",
    "BPO3",
    "BPO4",
    "BPO5",
];

enum Activation {
    Block(u64),
    Time(u64),
    Difficulty(U256),
}

/// The chain config of a BlockchainTests network name: `Cancun`, or a transition such as
/// `ShanghaiToCancunAtTime15k`, `BerlinToLondonAt5`, `ArrowGlacierToParisAtDiffC0000`,
/// `HomesteadToDaoAt5`.
pub fn chain_config(network: &str) -> Option<ChainConfig> {
    let network = if network == "Merge" { "Paris" } else { network };
    let mut config = ChainConfig {
        chain_id: 1,
        deposit_contract_address: Some(DEPOSIT_CONTRACT),
        ..Default::default()
    };
    let (from, to, at) = match network.split_once("To") {
        Some((from, rest)) => {
            let (to, at) = rest.split_once("At")?;
            let activation = if let Some(time) = at.strip_prefix("Time") {
                let time = match time.strip_suffix('k') {
                    Some(thousands) => thousands.parse::<u64>().ok()? * 1000,
                    None => time.parse().ok()?,
                };
                Activation::Time(time)
            } else if let Some(diff) = at.strip_prefix("Diff") {
                Activation::Difficulty(U256::from_str_radix(diff, 16).ok()?)
            } else {
                Activation::Block(at.parse().ok()?)
            };
            (from, Some(to), Some(activation))
        }
        None => (network, None, None),
    };
    let from_index = FORKS.iter().position(|f| *f == from)?;
    for fork in &FORKS[..=from_index] {
        activate(&mut config, fork, &Activation::Block(0));
    }
    if let (Some(to), Some(at)) = (to, at) {
        if to == "Dao" {
            let Activation::Block(block) = at else {
                return None;
            };
            config.dao_fork_block = Some(block);
            config.dao_fork_support = true;
        } else {
            let to_index = FORKS.iter().position(|f| *f == to)?;
            for fork in &FORKS[from_index + 1..=to_index] {
                activate(&mut config, fork, &at);
            }
        }
    }
    Some(config)
}

fn activate(config: &mut ChainConfig, fork: &str, at: &Activation) {
    let block = match at {
        Activation::Block(b) => Some(*b),
        _ => None,
    };
    let time = match at {
        Activation::Time(t) => Some(*t),
        _ => Some(0),
    };
    match fork {
        "Homestead" => config.homestead_block = block,
        "EIP150" => config.eip150_block = block,
        "EIP158" => {
            config.eip155_block = block;
            config.eip158_block = block;
        }
        "Byzantium" => config.byzantium_block = block,
        "Constantinople" => {
            config.constantinople_block = block;
            // Constantinople alone (without the Petersburg fix) must not imply Petersburg.
            config.petersburg_block = Some(u64::MAX);
        }
        "ConstantinopleFix" => config.petersburg_block = block,
        "Istanbul" => config.istanbul_block = block,
        "MuirGlacier" => config.muir_glacier_block = block,
        "Berlin" => config.berlin_block = block,
        "London" => config.london_block = block,
        "ArrowGlacier" => config.arrow_glacier_block = block,
        "GrayGlacier" => config.gray_glacier_block = block,
        "Paris" => {
            config.terminal_total_difficulty = Some(match at {
                Activation::Difficulty(d) => *d,
                _ => U256::ZERO,
            });
            config.terminal_total_difficulty_passed = true;
        }
        "Shanghai" => config.shanghai_time = time,
        "Cancun" => config.cancun_time = time,
        "Prague" => config.prague_time = time,
        "Osaka" => config.osaka_time = time,
        "BPO1" => config.bpo1_time = time,
        "BPO2" => config.bpo2_time = time,
        "BPO3" => config.bpo3_time = time,
        "BPO4" => config.bpo4_time = time,
        "BPO5" => config.bpo5_time = time,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_lfs_pointer_is_named_as_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pointer.json");
        std::fs::write(
            &path,
            "version https://git-lfs.github.com/spec/v1\nsize 1\n",
        )
        .unwrap();
        let outcomes = run_file(&path);
        assert_eq!(outcomes.len(), 1);
        let failure = outcomes[0].failure.as_deref().unwrap();
        assert!(failure.starts_with("a Git LFS pointer"), "{failure}");
    }

    #[test]
    fn a_block_is_expected_invalid_without_a_header_or_with_a_named_exception() {
        let block =
            |json: serde_json::Value| -> TestBlock { serde_json::from_value(json).unwrap() };
        let valid = block(serde_json::json!({"rlp": "0xc0", "blockHeader": {"number": "0x01"}}));
        assert_eq!(valid.expected_exception(), None);
        let current = block(serde_json::json!({"rlp": "0xc0", "expectException": "X"}));
        assert_eq!(current.expected_exception().as_deref(), Some("X"));
        let per_network = block(serde_json::json!({"rlp": "0xc0", "expectExceptionALL": "Y"}));
        assert_eq!(per_network.expected_exception().as_deref(), Some("Y"));
        let bare = block(serde_json::json!({"rlp": "0xc0"}));
        assert!(bare.expected_exception().is_some());
    }

    #[test]
    fn a_genesis_header_in_json_names_must_match_its_hash() {
        let header = alloy_consensus::Header {
            beneficiary: Address::repeat_byte(0x88),
            difficulty: U256::from(0x20000),
            gas_limit: 3_141_592,
            timestamp: 1_422_494_849,
            extra_data: Bytes::from_static(&[0x42]),
            nonce: alloy_primitives::B64::repeat_byte(7),
            ..Default::default()
        };
        let json = |hash: B256| {
            serde_json::json!({
                "parentHash": header.parent_hash, "uncleHash": header.ommers_hash,
                "coinbase": header.beneficiary, "stateRoot": header.state_root,
                "transactionsTrie": header.transactions_root, "receiptTrie": header.receipts_root,
                "bloom": header.logs_bloom, "difficulty": "0x020000", "number": "0x00",
                "gasLimit": "0x2fefd8", "gasUsed": "0x00", "timestamp": "0x54c98c81",
                "extraData": "0x42", "mixHash": header.mix_hash, "nonce": header.nonce,
                "hash": hash,
            })
        };
        let parsed: GenesisHeader = serde_json::from_value(json(header.hash_slow())).unwrap();
        assert_eq!(parsed.to_header(), Ok(header.clone()));
        let wrong: GenesisHeader = serde_json::from_value(json(B256::ZERO)).unwrap();
        assert!(
            wrong
                .to_header()
                .unwrap_err()
                .contains("genesisBlockHeader hashes to")
        );
    }

    #[test]
    fn transition_networks() {
        let c = chain_config("ShanghaiToCancunAtTime15k").unwrap();
        assert_eq!(c.shanghai_time, Some(0));
        assert_eq!(c.cancun_time, Some(15_000));
        assert_eq!(c.prague_time, None);
        let c = chain_config("BerlinToLondonAt5").unwrap();
        assert_eq!(c.berlin_block, Some(0));
        assert_eq!(c.london_block, Some(5));
        let c = chain_config("HomesteadToDaoAt5").unwrap();
        assert_eq!(c.dao_fork_block, Some(5));
        assert_eq!(c.byzantium_block, None);
        let c = chain_config("ArrowGlacierToParisAtDiffC0000").unwrap();
        assert_eq!(c.terminal_total_difficulty, Some(U256::from(0xC0000)));
        let c = chain_config("Constantinople").unwrap();
        assert_eq!(c.petersburg_block, Some(u64::MAX));
        assert!(chain_config("Nonsense").is_none());
    }
}
