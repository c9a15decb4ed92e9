//! Transactions sent through quarry, which keeps no pool: eth_sendRawTransaction and
//! eth_sendRawTransactionSync are checked by quarry-eth (decoding, signature, chain id) and
//! then forwarded to the network's `transactions_url`, whose answer goes back verbatim, its
//! errors included; txpool_status and txpool_content are asked of the same upstream, and so
//! (from the call layer) are pending nonces and transactions quarry has not stored. Each
//! forward goes through the upstream's kept client (remotes.rs), HTTP(S) or WebSocket, within
//! `transactions_timeout_ms`; transactions are counted by outcome.

use crate::{
    caller::{Caller, Networks},
    reply::Reply,
    service::Service,
};
use alloy_primitives::Bytes;
use jsonrpsee::{
    Extensions, RpcModule,
    types::{ErrorObjectOwned, Params},
};
use quarry_eth::{
    RpcError,
    params::{Args, FromArg, Index},
    raw_transaction::check_raw_transaction,
};
use serde_json::value::RawValue;
use std::{sync::Arc, time::Duration};

/// eth_sendRawTransactionSync's wait when the call names none (EIP-7966 leaves the default to
/// the node; geth's is 2 s).
const SYNC_DEFAULT_WAIT: Duration = Duration::from_secs(2);
/// The longest wait eth_sendRawTransactionSync may ask for.
const SYNC_MAX_WAIT: Duration = Duration::from_secs(60);

type Answer = Result<Box<RawValue>, ErrorObjectOwned>;

/// The methods of quarry's own table that a network with a transactions upstream asks it:
/// eth_getTransactionCount at `pending`, and eth_getTransactionByHash of a hash not stored.
pub const POOL_READS: [&str; 2] = ["eth_getTransactionCount", "eth_getTransactionByHash"];

/// Whether `params` of `method` ask for a pending nonce, which only a pool knows.
pub fn asks_pending_nonce(method: &str, params: Option<&RawValue>) -> bool {
    method == "eth_getTransactionCount"
        && params
            .and_then(|p| serde_json::from_str::<Vec<serde_json::Value>>(p.get()).ok())
            .is_some_and(|args| args.get(1).and_then(|b| b.as_str()) == Some("pending"))
}

/// The upstream's answer to one call, as the reply to `id`; quarry's error when it gave none.
pub async fn pool_reply(
    service: &Service,
    id: jsonrpsee::types::Id<'_>,
    url: &str,
    method: &'static str,
    params: Option<Box<RawValue>>,
) -> Reply {
    let params = params.map(|p| p.get().to_owned());
    let timeout = service.transactions_timeout;
    match forward(service, url.to_owned(), method, params, timeout).await {
        Ok(Ok(result)) => Reply::result(id, &result, service.max_response_bytes as usize),
        Ok(Err(error)) | Err(error) => Reply::error(id, error),
    }
}

/// Registers the methods that send transactions or read the upstream's pool.
pub fn register_transactions(
    module: &mut RpcModule<Networks>,
    service: &Arc<Service>,
) -> Result<(), crate::ServeError> {
    for method in ["eth_sendRawTransaction", "eth_sendRawTransactionSync"] {
        let service = service.clone();
        module
            .register_async_method(method, move |params, networks, extensions| {
                let service = service.clone();
                async move { send(&service, &networks, &extensions, method, params).await }
            })
            .map_err(|_| crate::ServeError::Register(method.into()))?;
    }
    for method in ["txpool_status", "txpool_content"] {
        let service = service.clone();
        module
            .register_async_method(method, move |params, _, extensions| {
                let service = service.clone();
                async move {
                    Args::parse(&params, &[], 0)?;
                    let network = network_of(&extensions)?;
                    let Some(url) = service.networks[network].transactions_url.clone() else {
                        return Err(RpcError::NoTransactionPool(method).into());
                    };
                    let timeout = service.transactions_timeout;
                    forward(&service, url, method, None, timeout).await?
                }
            })
            .map_err(|_| crate::ServeError::Register(method.into()))?;
    }
    Ok(())
}

fn network_of(extensions: &Extensions) -> Result<usize, ErrorObjectOwned> {
    extensions
        .get::<Caller>()
        .map(|caller| caller.network)
        .ok_or_else(|| {
            RpcError::Internal("a call reached a method without a network".into()).into()
        })
}

/// eth_sendRawTransaction(Sync): the checks, then the forward, counted by outcome.
async fn send(
    service: &Service,
    networks: &Networks,
    extensions: &Extensions,
    method: &'static str,
    params: Params<'static>,
) -> Answer {
    let network = network_of(extensions)?;
    let node = networks.of(extensions)?;
    let names: &[&str] = match method {
        "eth_sendRawTransactionSync" => &["transaction", "timeout"],
        _ => &["transaction"],
    };
    let args = Args::parse(&params, names, 1)?;
    let bytes: Bytes = args.required(0)?;
    let refused = |error: RpcError| {
        service.metrics.transaction(network, "refused");
        ErrorObjectOwned::from(error)
    };
    let chain_id = node.chain_id().map_err(refused)?.to::<u64>();
    let checked = check_raw_transaction(&bytes, chain_id).map_err(refused)?;
    let name = &service.networks[network].name;
    let Some(url) = service.networks[network].transactions_url.clone() else {
        service.metrics.transaction(network, "no_upstream");
        return Err(RpcError::NoTransactionsUpstream(name.clone()).into());
    };
    let mut timeout = service.transactions_timeout;
    if method == "eth_sendRawTransactionSync" {
        let wait = sync_wait(&args)?;
        timeout += wait.min(SYNC_MAX_WAIT);
    }
    let raw = params.as_str().map(str::to_owned);
    let (answer, outcome) = match forward(service, url, method, raw, timeout).await {
        Ok(Ok(result)) => (Ok(result), "sent"),
        Ok(Err(error)) => (Err(error), "rejected"),
        Err(none) => (Err(none), "unavailable"),
    };
    service.metrics.transaction(network, outcome);
    tracing::info!(network = %name, method, hash = %checked.hash, sender = %checked.sender, nonce = checked.nonce, outcome, "transaction forwarded");
    answer
}

/// eth_sendRawTransactionSync's wait, in milliseconds, as a number or a hex quantity (clients
/// send either; the upstream takes what it takes).
fn sync_wait(args: &Args) -> Result<Duration, ErrorObjectOwned> {
    let wait = match args.optional::<serde_json::Value>(1)? {
        None => return Ok(SYNC_DEFAULT_WAIT),
        Some(serde_json::Value::Number(ms)) => ms.as_u64(),
        Some(quantity) => Index::from_arg(&quantity).ok().map(|Index(ms)| ms),
    };
    wait.map(Duration::from_millis).ok_or_else(|| {
        RpcError::InvalidParams(
            "invalid argument 1 (timeout): expected milliseconds as a number or a hex quantity"
                .into(),
        )
        .into()
    })
}

/// One call to the upstream at `url`: its answer verbatim
/// (`Ok`), or quarry's error saying it gave none (`Err`, without the URL, which may hold a key).
async fn forward(
    service: &Service,
    url: String,
    method: &'static str,
    params: Option<String>,
    timeout: Duration,
) -> Result<Answer, ErrorObjectOwned> {
    let params = params
        .map(|p| RawValue::from_string(p).map_err(|e| e.to_string()))
        .transpose();
    let asked = match params {
        Err(why) => Err(why),
        Ok(params) => service.remotes.ask(&url, timeout, method, params).await,
    };
    asked.map_err(|why| {
        let why = why.replace(&url, "the upstream");
        tracing::warn!(method, "the transactions upstream gave no answer: {why}");
        RpcError::UpstreamUnavailable(format!(
            "the network's transactions upstream gave no answer within {} ms ({why})",
            timeout.as_millis()
        ))
        .into()
    })
}
