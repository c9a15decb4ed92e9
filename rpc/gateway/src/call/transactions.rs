//! Transactions sent through quarry, which keeps no pool: eth_sendRawTransaction and
//! eth_sendRawTransactionSync are checked by quarry-eth (decoding, signature, chain id) and
//! then forwarded to the network's `transactions_url`, whose answer goes back verbatim, its
//! errors included; txpool_status and txpool_content are asked of the same upstream, and so
//! (from the call layer) are pending nonces and transactions quarry has not stored. Each
//! forward goes through the upstream's kept client (remotes.rs), HTTP(S) or WebSocket, within
//! `transactions_timeout_ms`; transactions are counted by outcome.

use crate::{
    access::caller::Caller,
    call::reply::Reply,
    call::table::{Call, Context, Row, serialized},
    service::Service,
};
use alloy_primitives::Bytes;
use jsonrpsee::{Extensions, types::ErrorObjectOwned};
use quarry_eth::{
    AddressParams, RpcError, Unclassed,
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

/// Whether `params` ask at the `pending` block (their second), which only a transaction pool knows.
pub fn asks_pending(params: Option<&RawValue>) -> bool {
    params
        .and_then(|p| serde_json::from_str::<Vec<serde_json::Value>>(p.get()).ok())
        .is_some_and(|args| args.get(1).and_then(|b| b.as_str()) == Some("pending"))
}

/// The upstream's answer to one call, as the reply to `id`; quarry's error when it gave none.
pub async fn txpool_reply(
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

/// The methods that send transactions or read the upstream's transaction pool.
pub fn transactions() -> Vec<Row> {
    let send_row = |method: &'static str, params: &'static [&'static str]| {
        let send = serialized(move |context: Arc<Context>, call: Call| async move {
            send(&context, call, method).await
        });
        Unclassed::new(method, params, 1, send)
            .names(AddressParams::RawTransactionTo(0))
            .weighs(10)
    };
    let txpool_row = |method: &'static str| {
        let ask = serialized(move |context: Arc<Context>, call: Call| async move {
            let service = &context.service;
            let network = network_of(&call.extensions)?;
            let Some(url) = service.networks[network].transactions_url.clone() else {
                return Err(RpcError::NoTransactionPool(method).into());
            };
            let timeout = service.transactions_timeout;
            forward(service, url, method, None, timeout).await?
        });
        Unclassed::new(method, &[], 0, ask).names(AddressParams::NoAddress)
    };
    vec![
        send_row("eth_sendRawTransaction", &["transaction"]),
        send_row("eth_sendRawTransactionSync", &["transaction", "timeout"]),
        txpool_row("txpool_status"),
        txpool_row("txpool_content"),
    ]
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
async fn send(context: &Context, call: Call, method: &'static str) -> Answer {
    let service = &context.service;
    let network = network_of(&call.extensions)?;
    let node = context.networks.of(&call.extensions)?;
    let args = call.args;
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
    let raw = call.params.as_str().map(str::to_owned);
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
