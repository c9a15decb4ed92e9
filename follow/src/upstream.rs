//! The upstream node: any Ethereum JSON-RPC endpoint over HTTP(S) or WebSocket. Blocks come as
//! consensus bytes from `debug_getRawBlock` when the upstream offers it, else as JSON rebuilt
//! into a consensus block with alloy's types; either way the block must hash to the hash the
//! upstream names for that height.

use crate::{Error, Result};
use alloy_consensus::{Block, BlockBody, Header, TxEnvelope};
use alloy_primitives::{B256, Bytes, keccak256};
use alloy_rlp::Encodable;
use jsonrpsee::{
    core::{
        client::{ClientT, Subscription, SubscriptionClientT},
        params::ArrayParams,
    },
    http_client::{HttpClient, HttpClientBuilder},
    rpc_params,
    ws_client::{WsClient, WsClientBuilder},
};
use serde_json::Value;
use std::{
    sync::atomic::{AtomicU8, Ordering},
    time::Duration,
};

/// Each call to the upstream gives up after this long.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Upstream responses up to this size (a block of large logs or calldata is big).
const MAX_RESPONSE_BYTES: u32 = 256 << 20;

/// How blocks are fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetch {
    /// `debug_getRawBlock` when the upstream answers it, else JSON.
    Auto,
    Raw,
    Json,
}

impl std::str::FromStr for Fetch {
    type Err = String;
    fn from_str(name: &str) -> std::result::Result<Self, String> {
        match name {
            "auto" => Ok(Self::Auto),
            "raw" => Ok(Self::Raw),
            "json" => Ok(Self::Json),
            other => Err(format!(
                "unknown fetch mode {other:?}: expected auto, raw or json"
            )),
        }
    }
}

enum Client {
    Http(HttpClient),
    Ws(WsClient),
}

/// A connection to the upstream.
pub struct Upstream {
    url: String,
    client: Client,
    fetch: Fetch,
    /// With `Fetch::Auto`: 0 not tried yet, 1 raw works, 2 JSON only.
    raw_works: AtomicU8,
}

/// One block as fetched: its consensus RLP and its hash.
pub struct FetchedBlock {
    pub number: u64,
    pub hash: B256,
    pub rlp: Vec<u8>,
}

impl Upstream {
    pub async fn connect(url: &str, fetch: Fetch) -> Result<Self> {
        let failed = |e: jsonrpsee::core::ClientError| Error::Connect {
            url: url.to_string(),
            reason: e.to_string(),
        };
        let client = if url.starts_with("ws://") || url.starts_with("wss://") {
            Client::Ws(
                WsClientBuilder::default()
                    .request_timeout(REQUEST_TIMEOUT)
                    .max_response_size(MAX_RESPONSE_BYTES)
                    .build(url)
                    .await
                    .map_err(failed)?,
            )
        } else if url.starts_with("http://") || url.starts_with("https://") {
            Client::Http(
                HttpClientBuilder::default()
                    .request_timeout(REQUEST_TIMEOUT)
                    .max_response_size(MAX_RESPONSE_BYTES)
                    .build(url)
                    .map_err(failed)?,
            )
        } else {
            return Err(Error::Connect {
                url: url.to_string(),
                reason: "the URL must start with http://, https://, ws:// or wss://".into(),
            });
        };
        Ok(Self {
            url: url.to_string(),
            client,
            fetch,
            raw_works: AtomicU8::new(0),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    async fn request<R: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: ArrayParams,
    ) -> Result<R> {
        let result = match &self.client {
            Client::Http(client) => client.request(method, params).await,
            Client::Ws(client) => client.request(method, params).await,
        };
        result.map_err(|e| Error::Upstream {
            method,
            reason: e.to_string(),
        })
    }

    /// The upstream's head block number.
    pub async fn head_number(&self) -> Result<u64> {
        let number: alloy_primitives::U64 = self.request("eth_blockNumber", rpc_params![]).await?;
        Ok(number.to())
    }

    /// The upstream's `net_peerCount`.
    pub async fn peer_count(&self) -> Result<u64> {
        let peers: alloy_primitives::U64 = self.request("net_peerCount", rpc_params![]).await?;
        Ok(peers.to())
    }

    /// The hash of the upstream's block at `number`, `None` when it has none there.
    pub async fn block_hash(&self, number: u64) -> Result<Option<B256>> {
        Ok(self.header(number).await?.map(|(hash, _)| hash))
    }

    /// The upstream's header at `number` and the hash it names for it.
    async fn header(&self, number: u64) -> Result<Option<(B256, Value)>> {
        let block: Option<Value> = self
            .request(
                "eth_getBlockByNumber",
                rpc_params![format!("{number:#x}"), false],
            )
            .await?;
        let Some(block) = block else {
            return Ok(None);
        };
        let hash = block_field_hash(&block, number)?;
        Ok(Some((hash, block)))
    }

    /// The number of the block a tag (`safe`, `finalized`) names, if the upstream knows one.
    pub async fn tag_number(&self, tag: &'static str) -> Result<Option<u64>> {
        let block: Option<Value> = self
            .request("eth_getBlockByNumber", rpc_params![tag, false])
            .await?;
        block
            .map(|block| {
                block
                    .get("number")
                    .and_then(Value::as_str)
                    .and_then(|n| u64::from_str_radix(n.trim_start_matches("0x"), 16).ok())
                    .ok_or_else(|| Error::Malformed {
                        what: format!("the {tag} block"),
                        reason: "no number".into(),
                    })
            })
            .transpose()
    }

    /// New heads pushed by a WebSocket upstream; `None` over HTTP or when the upstream does
    /// not offer `eth_subscribe`.
    pub async fn new_heads(&self) -> Option<Subscription<Value>> {
        let Client::Ws(client) = &self.client else {
            return None;
        };
        match client
            .subscribe("eth_subscribe", rpc_params!["newHeads"], "eth_unsubscribe")
            .await
        {
            Ok(subscription) => Some(subscription),
            Err(e) => {
                tracing::info!("upstream offers no newHeads subscription ({e}); polling");
                None
            }
        }
    }

    /// Block `number` as consensus bytes, checked against the hash the upstream names; `None`
    /// when the upstream has no such block.
    pub async fn block(&self, number: u64) -> Result<Option<FetchedBlock>> {
        let raw = match self.fetch {
            Fetch::Raw => true,
            Fetch::Json => false,
            Fetch::Auto => self.raw_works.load(Ordering::Relaxed) != 2,
        };
        if raw {
            match self.raw_block(number).await {
                Ok(block) => {
                    self.raw_works.store(1, Ordering::Relaxed);
                    return Ok(block);
                }
                Err(Error::Upstream { reason, .. })
                    if self.fetch == Fetch::Auto && self.raw_works.load(Ordering::Relaxed) == 0 =>
                {
                    tracing::info!(
                        "upstream does not answer debug_getRawBlock ({reason}); fetching blocks as JSON"
                    );
                    self.raw_works.store(2, Ordering::Relaxed);
                }
                Err(e) => return Err(e),
            }
        }
        self.json_block(number).await
    }

    async fn raw_block(&self, number: u64) -> Result<Option<FetchedBlock>> {
        let raw =
            self.request::<Option<Bytes>>("debug_getRawBlock", rpc_params![format!("{number:#x}")]);
        let (raw, header) = tokio::join!(raw, self.header(number));
        let (Some(raw), Some((named, _))) = (raw?, header?) else {
            return Ok(None);
        };
        let hash = raw_block_hash(&raw).map_err(|reason| Error::Malformed {
            what: format!("debug_getRawBlock of block {number}"),
            reason,
        })?;
        if hash != named {
            return Err(Error::HashMismatch {
                number,
                named,
                computed: hash,
            });
        }
        Ok(Some(FetchedBlock {
            number,
            hash,
            rlp: raw.to_vec(),
        }))
    }

    async fn json_block(&self, number: u64) -> Result<Option<FetchedBlock>> {
        let block: Option<alloy_rpc_types_eth::Block> = self
            .request(
                "eth_getBlockByNumber",
                rpc_params![format!("{number:#x}"), true],
            )
            .await?;
        let Some(block) = block else {
            return Ok(None);
        };
        let named = block.header.hash;
        let mut ommers = Vec::with_capacity(block.uncles.len());
        for index in 0..block.uncles.len() {
            let uncle: Option<alloy_rpc_types_eth::Header> = self
                .request(
                    "eth_getUncleByBlockHashAndIndex",
                    rpc_params![named, format!("{index:#x}")],
                )
                .await?;
            let uncle = uncle.ok_or_else(|| Error::Malformed {
                what: format!("block {number}"),
                reason: format!("the upstream has no uncle {index} of it"),
            })?;
            ommers.push(uncle.inner);
        }
        let transactions: Vec<TxEnvelope> = block
            .transactions
            .into_transactions()
            .map(|tx| tx.inner.into_inner())
            .collect();
        let header: Header = block.header.inner;
        let rebuilt = Block {
            header,
            body: BlockBody {
                transactions,
                ommers,
                withdrawals: block.withdrawals,
            },
        };
        let hash = rebuilt.header.hash_slow();
        if hash != named {
            return Err(Error::HashMismatch {
                number,
                named,
                computed: hash,
            });
        }
        let mut rlp = Vec::with_capacity(rebuilt.length());
        rebuilt.encode(&mut rlp);
        Ok(Some(FetchedBlock { number, hash, rlp }))
    }
}

/// The hash a block object names, checked to be the block at `number`.
fn block_field_hash(block: &Value, number: u64) -> Result<B256> {
    let malformed = |reason: String| Error::Malformed {
        what: format!("eth_getBlockByNumber({number:#x})"),
        reason,
    };
    let named_number = block
        .get("number")
        .and_then(Value::as_str)
        .and_then(|n| u64::from_str_radix(n.trim_start_matches("0x"), 16).ok());
    if named_number != Some(number) {
        return Err(malformed(format!(
            "it names block {named_number:?}, not {number}"
        )));
    }
    block
        .get("hash")
        .and_then(Value::as_str)
        .and_then(|h| h.parse::<B256>().ok())
        .ok_or_else(|| malformed("no hash".into()))
}

/// The hash of a raw block: the keccak of its header's RLP, the first item of the block list.
fn raw_block_hash(raw: &[u8]) -> std::result::Result<B256, String> {
    let mut rest = raw;
    let list = alloy_rlp::Header::decode(&mut rest).map_err(|e| e.to_string())?;
    if !list.list {
        return Err("not an RLP list".into());
    }
    let start = rest;
    let header = alloy_rlp::Header::decode(&mut rest).map_err(|e| e.to_string())?;
    let header_len = start.len() - rest.len() + header.payload_length;
    let encoded = start
        .get(..header_len)
        .ok_or_else(|| "truncated header".to_string())?;
    Ok(keccak256(encoded))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_blocks_hash_is_its_headers() {
        let header = Header {
            number: 7,
            extra_data: Bytes::from_static(b"quarry"),
            ..Default::default()
        };
        let block = Block::<TxEnvelope> {
            header: header.clone(),
            body: BlockBody::default(),
        };
        let mut rlp = Vec::new();
        block.encode(&mut rlp);
        assert_eq!(raw_block_hash(&rlp), Ok(header.hash_slow()));
        assert!(raw_block_hash(&rlp[..10]).is_err());
    }
}
