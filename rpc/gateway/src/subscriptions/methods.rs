//! The methods the service answers itself rather than quarry-eth's table, since what they keep
//! belongs to a key and a connection: eth_subscribe and eth_unsubscribe (a WebSocket's
//! subscriptions), and geth's polling filters (eth_newFilter and the rest).

use crate::{
    access::caller::Caller,
    call::table::{Call, Context, Row, answer, serialized},
    service::Service,
    subscriptions::connections::Connection,
    subscriptions::filters::FilterKind,
    subscriptions::kind::SubKind,
};
use jsonrpsee::types::ErrorObjectOwned;
use quarry_eth::{
    AddressParams, Result, RpcError, Unclassed,
    log_filter::{Filter, LogCriteria},
};
use serde_json::value::RawValue;
use std::sync::Arc;

type Answered<T> = std::result::Result<T, ErrorObjectOwned>;

/// eth_subscribe and eth_unsubscribe.
pub fn subscriptions() -> Vec<Row> {
    vec![
        Unclassed::new(
            "eth_subscribe",
            &["subscriptionName", "options"],
            1,
            answer(subscribe),
        )
        .names(AddressParams::Subscription),
        Unclassed::new(
            "eth_unsubscribe",
            &["subscriptionId"],
            1,
            answer(|context, call| async move {
                let Some(conn) = call.extensions.get::<Arc<Connection>>() else {
                    return Err(ErrorObjectOwned::from(RpcError::NotificationsUnsupported));
                };
                let id: String = call.args.required(0)?;
                Answered::Ok(context.service.unsubscribe(conn, &id)?)
            }),
        )
        .names(AddressParams::NoAddress),
    ]
}

async fn subscribe(context: Arc<Context>, call: Call) -> Answered<String> {
    let Some(conn) = call.extensions.get::<Arc<Connection>>().cloned() else {
        return Err(ErrorObjectOwned::from(RpcError::NotificationsUnsupported));
    };
    let node = context.networks.of(&call.extensions)?;
    let args = call.args;
    let name: String = args.required(0)?;
    let kind = match name.as_str() {
        "newHeads" | "syncing" if args.optional::<serde_json::Value>(1)?.is_some() => {
            return Err(
                RpcError::InvalidParams("too many arguments, want at most 1".into()).into(),
            );
        }
        "newHeads" => SubKind::NewHeads,
        "syncing" => SubKind::Syncing,
        "logs" => {
            let filter = args.optional::<Filter>(1)?.unwrap_or_default();
            SubKind::Logs(Arc::new(LogCriteria::new(&filter, node.max_log_params())?))
        }
        "newPendingTransactions" => {
            return Err(RpcError::NoTransactionPool("newPendingTransactions").into());
        }
        other => return Err(RpcError::UnknownSubscription(other.to_string()).into()),
    };
    let id = context.service.subscribe(&conn, kind)?;
    Ok(id.to_string())
}

/// The caller of a method, which the gate attached.
fn caller(call: &Call) -> Result<Caller> {
    call.extensions
        .get::<Caller>()
        .cloned()
        .ok_or_else(|| RpcError::Internal("a call reached a method without a caller".into()))
}

/// geth's polling filters.
pub fn filters() -> Vec<Row> {
    vec![
        Unclassed::new("eth_newFilter", &["filter"], 1, answer(new_filter))
            .names(AddressParams::LogFilter(0)),
        Unclassed::new(
            "eth_newBlockFilter",
            &[],
            0,
            answer(|context, call| async move {
                let caller = caller(&call)?;
                let (service, kind) = (&context.service, FilterKind::Blocks(Vec::new()));
                let id = (service.filters).install(
                    caller.network,
                    &caller.grant,
                    kind,
                    &service.metrics,
                )?;
                Answered::Ok(id.to_string())
            }),
        )
        .names(AddressParams::NoAddress),
        Unclassed::new(
            "eth_newPendingTransactionFilter",
            &[],
            0,
            answer(|_, _| async {
                Answered::<()>::Err(
                    RpcError::NoTransactionPool("eth_newPendingTransactionFilter").into(),
                )
            }),
        )
        .names(AddressParams::NoAddress),
        by_id("eth_getFilterChanges", |service, caller, id| {
            let key = &caller.grant.id;
            (service.filters).changes(caller.network, key, id, &service.metrics)
        }),
        by_id("eth_uninstallFilter", |service, caller, id| {
            let key = &caller.grant.id;
            let removed = (service.filters).uninstall(caller.network, key, id, &service.metrics)?;
            quarry_eth::to_raw("eth_uninstallFilter", &removed)
        }),
        Unclassed::new(
            "eth_getFilterLogs",
            &["filterId"],
            1,
            serialized(filter_logs),
        )
        .names(AddressParams::NoAddress)
        .weighs(5),
    ]
}

/// A method on one of the caller's filters, named by its id, answering serialized (a filter's
/// changes are kept as JSON).
fn by_id<F>(name: &'static str, on: F) -> Row
where
    F: Fn(&Service, &Caller, &str) -> Result<Box<RawValue>> + Copy + Send + Sync + 'static,
{
    let answer = serialized(move |context, call| async move {
        let caller = caller(&call)?;
        let id: String = call.args.required(0)?;
        Answered::Ok(on(&context.service, &caller, &id)?)
    });
    Unclassed::new(name, &["filterId"], 1, answer).names(AddressParams::NoAddress)
}

async fn new_filter(context: Arc<Context>, call: Call) -> Answered<String> {
    let caller = caller(&call)?;
    let node = context.networks.of(&call.extensions)?;
    let filter: Filter = call.args.required(0)?;
    let criteria = LogCriteria::new(&filter, node.max_log_params())?;
    let kind = FilterKind::Logs {
        filter: Box::new(filter),
        criteria: Box::new(criteria),
        changes: Vec::new(),
    };
    let service = &context.service;
    let id = service
        .filters
        .install(caller.network, &caller.grant, kind, &service.metrics)?;
    Ok(id.to_string())
}

async fn filter_logs(
    context: Arc<Context>,
    call: Call,
) -> Answered<Box<serde_json::value::RawValue>> {
    let caller = caller(&call)?;
    let node = context.networks.of(&call.extensions)?;
    let id: String = call.args.required(0)?;
    let service = &context.service;
    let filter =
        service
            .filters
            .logs_filter(caller.network, &caller.grant.id, &id, &service.metrics)?;
    // A heavy job of the key, as eth_getLogs is (see `pool`).
    let (key, limit) = (caller.grant.id.clone(), quarry_eth::Limit::Logs);
    let method = "eth_getFilterLogs";
    let pool = &context.pools.read;
    let answer = crate::limits::heavy::run(pool, key, limit, node, method, move |node, tx| {
        quarry_eth::to_raw(method, &node.logs(tx, &filter)?)
    })
    .await?;
    Ok(answer)
}
