//! Facts about the chain and the node: eth_chainId, eth_blockNumber, eth_syncing and
//! rollup_getInfo; eth_config, eth_capabilities, eth_baseFee and eth_getStorageValues, as the
//! execution-apis specification (and geth) define them.

use super::{Node, Reads, Snapshot, process_alive};
use crate::{
    params::{BlockId, BlockTag},
    rpc_error::{Result, RpcError},
};
use alloy_primitives::{Address, B256, U64, U256};
use quarry_executor::forks::{EthConfig, ForkConfig};
use serde::Serialize;
use std::collections::BTreeMap;

/// geth's limit on the slots one eth_getStorageValues may read.
pub const MAX_STORAGE_SLOTS: usize = 1024;

/// eth_config's answer (EIP-7910).
#[derive(Debug, Serialize)]
pub struct ConfigJson {
    current: Option<ForkJson>,
    next: Option<ForkJson>,
    last: Option<ForkJson>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ForkJson {
    activation_time: u64,
    blob_schedule: Option<BlobJson>,
    chain_id: U64,
    fork_id: alloy_primitives::Bytes,
    precompiles: BTreeMap<&'static str, Address>,
    system_contracts: BTreeMap<&'static str, Address>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct BlobJson {
    target: u64,
    max: u64,
    base_fee_update_fraction: u64,
}

impl From<ForkConfig> for ForkJson {
    fn from(fork: ForkConfig) -> Self {
        Self {
            activation_time: fork.activation_time,
            blob_schedule: fork.blob_schedule.map(|blob| BlobJson {
                target: blob.target,
                max: blob.max,
                base_fee_update_fraction: blob.base_fee_update_fraction,
            }),
            chain_id: U64::from(fork.chain_id),
            fork_id: fork.fork_id.to_vec().into(),
            precompiles: fork.precompiles,
            system_contracts: fork.system_contracts,
        }
    }
}

/// eth_capabilities' answer: which history this node serves.
#[derive(Debug, Serialize)]
pub struct CapabilitiesJson {
    head: HeadJson,
    state: Resource,
    tx: Resource,
    logs: Resource,
    receipts: Resource,
    blocks: Resource,
    stateproofs: Resource,
}

#[derive(Debug, Serialize)]
struct HeadJson {
    number: U64,
    hash: B256,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Resource {
    disabled: bool,
    oldest_block: U64,
    #[serde(skip_serializing_if = "Option::is_none")]
    delete_strategy: Option<DeleteStrategy>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct DeleteStrategy {
    #[serde(rename = "type")]
    kind: &'static str,
    retention_blocks: U64,
}

impl Resource {
    /// Kept from genesis on, never deleted.
    fn all() -> Self {
        Self {
            disabled: false,
            oldest_block: U64::ZERO,
            delete_strategy: None,
        }
    }
}

/// eth_syncing's answer: `false`, or geth's progress object.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Syncing {
    Done(bool),
    #[serde(rename_all = "camelCase")]
    Progress {
        starting_block: U64,
        current_block: U64,
        highest_block: U64,
    },
}

/// `rollup_getInfo`'s object, numbers as JSON numbers as l2geth writes them.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RollupInfo {
    mode: &'static str,
    syncing: bool,
    eth_context: EthContext,
    rollup_context: RollupContext,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct EthContext {
    block_number: u64,
    timestamp: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct RollupContext {
    index: Option<u64>,
    queue_index: Option<u64>,
    verified_index: Option<u64>,
}

impl Node {
    pub fn chain_id(&self) -> Result<U64> {
        Ok(U64::from(
            self.spec.as_ref().ok_or(RpcError::NoChain)?.chain_id,
        ))
    }

    /// eth_blockNumber: from memory when a snapshot of the newest commit has read the head
    /// (`None` otherwise), else from `tx`, whose head memory then keeps.
    pub fn block_number(&self, reads: &Reads<'_>) -> Result<Option<U64>> {
        let head = match reads {
            Reads::Cache => self.in_memory(|memory| memory.head)?,
            Reads::Snapshot(tx) => Some(self.snapshot_head(tx)?.unwrap_or(0)),
        };
        Ok(head.map(U64::from))
    }

    /// net_peerCount: the upstream's, as `quarry follow` last recorded it; 0 for a datadir
    /// nothing follows.
    pub fn peer_count(&self, tx: &Snapshot) -> Result<U64> {
        Ok(U64::from(
            tx.upstream_head()?.and_then(|head| head.peers).unwrap_or(0),
        ))
    }

    /// eth_syncing: `false`, or geth's progress object while a live ingest is importing
    /// towards a block above the head.
    pub fn syncing(&self, tx: &Snapshot) -> Result<Syncing> {
        let head = Self::head(tx)?;
        Ok(match tx.sync_target()? {
            Some(target) if target.block > head && process_alive(target.pid) => Syncing::Progress {
                starting_block: U64::from(head),
                current_block: U64::from(head),
                highest_block: U64::from(target.block),
            },
            _ => Syncing::Done(false),
        })
    }

    pub fn rollup_info(&self, tx: &Snapshot) -> Result<RollupInfo> {
        let head = Self::head(tx)?;
        let eth_context = match &self.l1 {
            Some(l1) => {
                let l1 = l1.reader()?;
                let l1_head = Self::head(&l1)?;
                EthContext {
                    block_number: l1_head,
                    timestamp: l1.header(l1_head)?.map_or(0, |h| h.timestamp),
                }
            }
            None => EthContext {
                block_number: head,
                timestamp: tx.header(head)?.map_or(0, |h| h.timestamp),
            },
        };
        let syncing = tx
            .sync_target()?
            .is_some_and(|target| target.block > head && process_alive(target.pid));
        let finalized = self.tag_number(tx, BlockTag::Finalized)?.min(head);
        let last_index = |number: u64| -> Result<Option<u64>> {
            Ok(tx
                .transactions_through(number)?
                .and_then(|count| count.checked_sub(1)))
        };
        Ok(RollupInfo {
            mode: "verifier",
            syncing,
            eth_context,
            rollup_context: RollupContext {
                index: last_index(head)?,
                // Deposit (L1-to-L2) transactions cannot be ingested: none is ever queued.
                queue_index: None,
                verified_index: last_index(finalized)?,
            },
        })
    }

    /// eth_config: the forks around the head's timestamp, from genesis.json's schedule.
    pub fn eth_config(&self, tx: &Snapshot) -> Result<ConfigJson> {
        let spec = self.spec.as_deref().ok_or(RpcError::NoChain)?;
        let genesis = tx.header(0)?.ok_or(RpcError::HeaderNotFound)?;
        let genesis_hash = tx.canonical_hash(0)?.ok_or(RpcError::HeaderNotFound)?;
        let head = tx
            .header(Self::head(tx)?)?
            .ok_or(RpcError::HeaderNotFound)?;
        let EthConfig {
            current,
            next,
            last,
        } = spec.eth_config(genesis_hash, genesis.timestamp, head.timestamp);
        Ok(ConfigJson {
            current: current.map(Into::into),
            next: next.map(Into::into),
            last: last.map(Into::into),
        })
    }

    /// eth_capabilities: quarry keeps every block, transaction, receipt, log and state from
    /// genesis on; it serves no state proofs (eth_getProof needs a state trie it does not keep).
    pub fn capabilities(&self, tx: &Snapshot) -> Result<CapabilitiesJson> {
        let (number, hash) = tx.head()?.ok_or(RpcError::HeaderNotFound)?;
        Ok(CapabilitiesJson {
            head: HeadJson {
                number: U64::from(number),
                hash,
            },
            // A full node's datadir keeps the state of its window's blocks only.
            state: match tx.state_history_window()? {
                Some(window) => Resource {
                    disabled: false,
                    oldest_block: U64::from(tx.oldest_state()?),
                    delete_strategy: Some(DeleteStrategy {
                        kind: "window",
                        retention_blocks: U64::from(window),
                    }),
                },
                None => Resource::all(),
            },
            tx: Resource::all(),
            // The spec's schema has logs name their deletion strategy: a window, here one that
            // never closes.
            logs: Resource {
                delete_strategy: Some(DeleteStrategy {
                    kind: "window",
                    retention_blocks: U64::MAX,
                }),
                ..Resource::all()
            },
            receipts: Resource::all(),
            blocks: Resource::all(),
            // Disabled; the oldest block is still named, as the schema has it.
            stateproofs: Resource {
                disabled: true,
                ..Resource::all()
            },
        })
    }

    /// eth_baseFee: the base fee of the block after the head (`null` before London).
    pub fn next_base_fee(&self, tx: &Snapshot) -> Result<Option<U256>> {
        let spec = self.spec.as_deref().ok_or(RpcError::NoChain)?;
        let head = tx
            .header(Self::head(tx)?)?
            .ok_or(RpcError::HeaderNotFound)?;
        Ok(quarry_executor::verify::expected_base_fee(spec, &head).map(U256::from))
    }

    /// eth_getStorageValues: several slots of several accounts after block `at`.
    pub fn storage_values(
        &self,
        tx: &Snapshot,
        requests: &BTreeMap<Address, Vec<B256>>,
        at: BlockId,
    ) -> Result<BTreeMap<Address, Vec<B256>>> {
        let total: usize = requests.values().map(Vec::len).sum();
        if total > MAX_STORAGE_SLOTS {
            return Err(RpcError::ClientLimitExceeded(format!(
                "too many slots (max {MAX_STORAGE_SLOTS})"
            )));
        }
        if total == 0 {
            return Err(RpcError::InvalidParams("empty request".into()));
        }
        let (number, is_head) = self.state_block(tx, at)?;
        let mut values = BTreeMap::new();
        for (address, slots) in requests {
            let mut read = Vec::with_capacity(slots.len());
            for slot in slots {
                let value = if is_head {
                    tx.storage(address, slot)?
                } else {
                    tx.storage_at(address, slot, number)?
                };
                read.push(B256::from(value));
            }
            values.insert(*address, read);
        }
        Ok(values)
    }
}
