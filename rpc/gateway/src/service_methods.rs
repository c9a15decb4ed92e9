//! The methods the service answers itself rather than quarry-eth's table, since what they keep
//! belongs to a key and a connection: eth_subscribe and eth_unsubscribe (a WebSocket's
//! subscriptions), and geth's polling filters (eth_newFilter and the rest).

use crate::{
    caller::Networks, connections::Connection, filters::FilterKind, service::Service,
    sub_kind::SubKind,
};
use jsonrpsee::{RpcModule, types::ErrorObjectOwned};
use quarry_eth::{
    Result, RpcError,
    log_filter::{Filter, LogCriteria},
    params::Args,
};
use serde_json::value::RawValue;
use std::sync::Arc;

/// Registers eth_subscribe and eth_unsubscribe.
pub fn register_subscriptions(
    module: &mut RpcModule<Networks>,
    service: &Arc<Service>,
) -> std::result::Result<(), crate::ServeError> {
    let subscribe_service = service.clone();
    module
        .register_async_method("eth_subscribe", move |params, networks, extensions| {
            let service = subscribe_service.clone();
            async move {
                let Some(conn) = extensions.get::<Arc<Connection>>().cloned() else {
                    return Err(ErrorObjectOwned::from(RpcError::NotificationsUnsupported));
                };
                let node = networks.of(&extensions)?;
                let args = Args::parse(&params, &["subscriptionName", "options"], 1)?;
                let name: String = args.required(0)?;
                let kind = match name.as_str() {
                    "newHeads" | "syncing" if args.optional::<serde_json::Value>(1)?.is_some() => {
                        return Err(RpcError::InvalidParams(
                            "too many arguments, want at most 1".into(),
                        )
                        .into());
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
                let id = service.subscribe(&conn, kind)?;
                Ok::<_, ErrorObjectOwned>(id.to_string())
            }
        })
        .map_err(|_| crate::ServeError::Register("eth_subscribe".into()))?;
    let unsubscribe_service = service.clone();
    module
        .register_method("eth_unsubscribe", move |params, _, extensions| {
            let Some(conn) = extensions.get::<Arc<Connection>>() else {
                return Err(ErrorObjectOwned::from(RpcError::NotificationsUnsupported));
            };
            let args = Args::parse(&params, &["subscriptionId"], 1)?;
            let id: String = args.required(0)?;
            Ok::<_, ErrorObjectOwned>(unsubscribe_service.unsubscribe(conn, &id)?)
        })
        .map_err(|_| crate::ServeError::Register("eth_unsubscribe".into()))?;
    Ok(())
}

/// The caller of a method, which the gate attached.
fn caller(extensions: &jsonrpsee::Extensions) -> Result<crate::caller::Caller> {
    extensions
        .get::<crate::caller::Caller>()
        .cloned()
        .ok_or_else(|| RpcError::Internal("a call reached a method without a caller".into()))
}

/// Registers the filter methods.
pub fn register_filters(
    module: &mut jsonrpsee::RpcModule<crate::caller::Networks>,
    pool: &crate::pool::ReadPool,
    service: &Arc<crate::service::Service>,
) -> std::result::Result<(), crate::ServeError> {
    use crate::service::Service;
    use jsonrpsee::types::ErrorObjectOwned;
    use quarry_eth::params::Args;
    type Answered<T> = std::result::Result<T, ErrorObjectOwned>;
    let failed = |method: &str| crate::ServeError::Register(method.to_string());

    let with = |service: &Arc<Service>| service.clone();
    let s = with(service);
    module
        .register_method(
            "eth_newFilter",
            move |params, networks, extensions| -> Answered<String> {
                let caller = caller(extensions)?;
                let node = networks.of(extensions)?;
                let args = Args::parse(&params, &["filter"], 1)?;
                let filter: Filter = args.required(0)?;
                let criteria = LogCriteria::new(&filter, node.max_log_params())?;
                let kind = FilterKind::Logs {
                    filter: Box::new(filter),
                    criteria: Box::new(criteria),
                    changes: Vec::new(),
                };
                let id = s
                    .filters
                    .install(caller.network, &caller.grant, kind, &s.metrics)?;
                Ok(id.to_string())
            },
        )
        .map_err(|_| failed("eth_newFilter"))?;
    let s = with(service);
    module
        .register_method(
            "eth_newBlockFilter",
            move |params, _, extensions| -> Answered<String> {
                let caller = caller(extensions)?;
                Args::parse(&params, &[], 0)?;
                let kind = FilterKind::Blocks(Vec::new());
                let id = s
                    .filters
                    .install(caller.network, &caller.grant, kind, &s.metrics)?;
                Ok(id.to_string())
            },
        )
        .map_err(|_| failed("eth_newBlockFilter"))?;
    module
        .register_method(
            "eth_newPendingTransactionFilter",
            |_, _, _| -> Answered<()> {
                Err(RpcError::NoTransactionPool("eth_newPendingTransactionFilter").into())
            },
        )
        .map_err(|_| failed("eth_newPendingTransactionFilter"))?;
    let s = with(service);
    module
        .register_method(
            "eth_getFilterChanges",
            move |params, _, extensions| -> Answered<Box<RawValue>> {
                let caller = caller(extensions)?;
                let args = Args::parse(&params, &["filterId"], 1)?;
                let id: String = args.required(0)?;
                Ok(s.filters
                    .changes(caller.network, &caller.grant.id, &id, &s.metrics)?)
            },
        )
        .map_err(|_| failed("eth_getFilterChanges"))?;
    let s = with(service);
    module
        .register_method(
            "eth_uninstallFilter",
            move |params, _, extensions| -> Answered<bool> {
                let caller = caller(extensions)?;
                let args = Args::parse(&params, &["filterId"], 1)?;
                let id: String = args.required(0)?;
                Ok(s.filters
                    .uninstall(caller.network, &caller.grant.id, &id, &s.metrics)?)
            },
        )
        .map_err(|_| failed("eth_uninstallFilter"))?;
    let s = with(service);
    let pool = pool.clone();
    module
        .register_async_method("eth_getFilterLogs", move |params, networks, extensions| {
            let (s, pool) = (s.clone(), pool.clone());
            async move {
                let caller = caller(&extensions)?;
                let node = networks.of(&extensions)?;
                let args = Args::parse(&params, &["filterId"], 1)?;
                let id: String = args.required(0)?;
                let filter =
                    s.filters
                        .logs_filter(caller.network, &caller.grant.id, &id, &s.metrics)?;
                // A heavy job of the key, as eth_getLogs is (see `pool`).
                let (key, limit) = (caller.grant.id.clone(), quarry_eth::Limit::Logs);
                let method = "eth_getFilterLogs";
                let answer = crate::heavy::run(&pool, key, limit, node, method, move |node, tx| {
                    quarry_eth::to_raw(method, &node.logs(tx, &filter)?)
                })
                .await?;
                Answered::Ok(answer)
            }
        })
        .map_err(|_| failed("eth_getFilterLogs"))?;
    Ok(())
}
