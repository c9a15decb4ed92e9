//! The call layer, run for every JSON-RPC call (each call of a batch on its own): a key
//! revoked while its WebSocket is open is refused, the key's allowlists as the key store says
//! now are applied (methods, contract addresses, and the origin and user agent again for an
//! open WebSocket), then the request's JWT's (expired since an open WebSocket's upgrade, its
//! method and contract address lists), the key's plan limits are applied, the
//! three forwardable methods go to the network's partner when this node cannot answer them,
//! what only a transaction pool knows goes to the network's transactions upstream (pending
//! nonces, transactions not stored), and every call is counted and logged (key id, never the
//! key).

use crate::{
    access::allowlists::{Holder, KeyAllowlists, NotAllowed, Rule},
    access::caller::Caller,
    access::key_jwts::TokenGrant,
    call::reply::Reply,
    call::table::{Row, Table},
    call::transactions,
    limits::verdict::Refusal,
    metrics::Outcome,
    service::Service,
};
use jsonrpsee::{
    BatchResponseBuilder, MethodResponse,
    core::middleware::{Batch, BatchEntry, Notification, RpcServiceT},
    types::{ErrorObject, ErrorObjectOwned, Request},
};
use quarry_eth::{AddressParams, TxpoolRead};
use std::{
    sync::{Arc, atomic::Ordering},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

/// The code quarry answers with when it cannot answer (storage, internal, overload).
const OUTAGE_CODE: i32 = -32603;
const LIMIT_CODE: i32 = -32005;

/// Marks a response that carries a rate or quota refusal: the gate makes it an HTTP 429.
#[derive(Debug, Clone)]
pub struct RateLimited {
    pub retry_after: Duration,
}

/// Marks the answer to a call refused by the key's allowlists: as a single call over HTTP,
/// the gate makes it an HTTP 403 (a batch stays 200, each call with its own answer).
#[derive(Debug, Clone, Copy)]
pub struct RefusedByAllowlist;

/// The call layer over the method table, for HTTP and WebSocket calls alike.
#[derive(Clone)]
pub struct Calls {
    service: Arc<Service>,
    table: Arc<Table>,
}

impl Calls {
    pub fn new(service: Arc<Service>, table: Table) -> Self {
        Self {
            service,
            table: Arc::new(table),
        }
    }
}

/// The -32005 answer to a call of `method`, weighing `weight` units, refused for `refusal`:
/// limits are in weight units, and the answer says so.
fn refusal_error(refusal: &Refusal, method: &str, weight: u32) -> ErrorObjectOwned {
    let retry = refusal.retry_after().as_secs_f64();
    match refusal {
        Refusal::Rate {
            allowed_per_second, ..
        } => ErrorObject::owned(
            LIMIT_CODE,
            format!(
                "request rate exceeded: this key may use {allowed_per_second} weight units per second, and {method} weighs {weight}"
            ),
            Some(serde_json::json!({
                "allowed_units_per_second": allowed_per_second,
                "method": method,
                "weight": weight,
                "backoff_seconds": retry,
            })),
        ),
        Refusal::Daily {
            allowed_per_day,
            used,
            ..
        } => ErrorObject::owned(
            LIMIT_CODE,
            format!(
                "daily quota exceeded: this key may use {allowed_per_day} weight units a day and has used {used}, and {method} weighs {weight}"
            ),
            Some(serde_json::json!({
                "allowed_units_per_day": allowed_per_day,
                "used_today": used,
                "method": method,
                "weight": weight,
                "backoff_seconds": retry,
            })),
        ),
        Refusal::Unavailable => ErrorObject::owned(
            -32603,
            "rate limiter unavailable: the shared limits store cannot be reached; try again shortly",
            Some(serde_json::json!({ "backoff_seconds": retry })),
        ),
    }
}

/// How a call that quarry answered itself ended.
fn own_outcome(response: &Reply) -> Outcome {
    if response.is_error() {
        Outcome::Error
    } else {
        Outcome::Ok
    }
}

/// Why quarry could not answer a call itself: an error of the outage kind, or `null` for a
/// block or transaction while the network is still syncing towards it.
fn needs_partner(response: &Reply, syncing: bool) -> bool {
    match response.error_code() {
        Some(code) => code == OUTAGE_CODE,
        None => syncing && response.json().ends_with(r#""result":null}"#),
    }
}

/// A call against the JWT its request (or WebSocket upgrade) came with: not expired since and
/// its public key still the key's (`live`; a WebSocket outlives both), and within the token's
/// method and contract address lists.
fn admit_token(
    token: &TokenGrant,
    live: bool,
    request: &Request<'_>,
    addresses: AddressParams,
) -> Result<(), NotAllowed> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let refused = |message: &str| {
        Err(NotAllowed {
            rule: Rule::Jwt,
            message: message.into(),
        })
    };
    if token.expired(now) {
        return refused("the JWT this connection was opened with has expired (exp)");
    }
    if !live {
        return refused(
            "the public key that verified this connection's JWT was removed or replaced",
        );
    }
    match &token.allow {
        Some(allow) => allow.admit_call_of(
            Holder::Token,
            request.method_name(),
            addresses,
            request.params.as_deref(),
        ),
        None => Ok(()),
    }
}

impl Calls {
    /// A call against the key's allowlists as the store says now: its method and contract
    /// addresses, and the request's origin and user agent unless the gate checked them
    /// against these very lists (always, but for a WebSocket opened before they changed).
    fn admit(
        &self,
        caller: &Caller,
        allow: &Arc<KeyAllowlists>,
        request: &Request<'_>,
        addresses: AddressParams,
    ) -> Result<(), NotAllowed> {
        let checked_at_gate = caller
            .grant
            .allow
            .as_ref()
            .is_some_and(|at_gate| Arc::ptr_eq(at_gate, allow));
        if !checked_at_gate {
            allow.admit_client(
                caller.client.origin.as_deref(),
                caller.client.user_agent.as_deref(),
            )?;
        }
        allow.admit_call(request.method_name(), addresses, request.params.as_deref())
    }

    /// One call: its row looked up once, then admitted by the key's and its JWT's allowlists,
    /// weighed against the key's limits, answered (by the table, the transactions upstream or
    /// the partner), and counted.
    async fn answer(&self, request: Request<'_>) -> Reply {
        let row = self.table.row(request.method_name());
        let Some(caller) = request.extensions().get::<Caller>().cloned() else {
            return self.table.answer(row, request).await;
        };
        let started = Instant::now();
        let (reply, outcome) = match self.admit_call(&caller, row, &request) {
            Err(refused) => refused,
            Ok(()) => match self.limit(&caller, row, &request).await {
                Err(refused) => refused,
                Ok(()) => self.route(&caller, row, request).await,
            },
        };
        self.count(&caller, row, outcome, started);
        reply
    }

    /// The call against the key as the store says now (a WebSocket outlives the checks at its
    /// upgrade, and a key's allowlists change) and against its JWT: a refusal's answer.
    fn admit_call(
        &self,
        caller: &Caller,
        row: Option<&Row>,
        request: &Request<'_>,
    ) -> Result<(), (Reply, Outcome)> {
        let service = &self.service;
        let id = || request.id().into_owned();
        let Some(allow) = service.keys.now(&caller.grant) else {
            let error = ErrorObject::owned(-32600, "invalid API key: revoked", None::<()>);
            return Err((Reply::error(id(), error), Outcome::Revoked));
        };
        let addresses = row.map_or(AddressParams::NoAddress, |row| row.addresses);
        let refused = match allow.filter(|_| !caller.bypass_allowlists) {
            Some(allow) => self.admit(caller, &allow, request, addresses),
            None => Ok(()),
        }
        .and_then(|()| {
            caller.token.as_deref().map_or(Ok(()), |token| {
                let live = service.keys.verifies_still(&caller.grant, token);
                admit_token(token, live, request, addresses)
            })
        });
        let Err(refusal) = refused else {
            return Ok(());
        };
        service.metrics.not_allowed(caller.network, refusal.rule);
        let method = row.map_or("unknown", |row| row.name);
        tracing::info!(key = %caller.grant.id, method, rule = refusal.rule.label(), "call refused by the key's or its JWT's allowlists");
        let mut response = Reply::error(id(), refusal.error());
        response.extensions_mut().insert(RefusedByAllowlist);
        Err((response, Outcome::NotAllowed))
    }

    /// The call's weight against its key's plan limits: a refusal's answer.
    async fn limit(
        &self,
        caller: &Caller,
        row: Option<&Row>,
        request: &Request<'_>,
    ) -> Result<(), (Reply, Outcome)> {
        let service = &self.service;
        let network = caller.network;
        let limits = service.plans.limits(caller.grant.plan);
        let head = service.metrics.status[network].head.load(Ordering::Relaxed);
        let method = request.method_name();
        let declared = row.and_then(|row| row.weight);
        let weight = (service.weights).of_call(method, declared, request.params.as_deref(), head);
        let Err(refusal) = service
            .limiter
            .admit(&caller.grant.id, limits, weight)
            .await
        else {
            return Ok(());
        };
        let error = refusal_error(&refusal, method, weight);
        let id = request.id().into_owned();
        if refusal == Refusal::Unavailable {
            return Err((Reply::error(id, error), Outcome::Error));
        }
        service
            .metrics
            .refusal(network, matches!(refusal, Refusal::Daily { .. }));
        tracing::info!(key = %caller.grant.id, reason = refusal.reason(), "call refused by the key's plan limits");
        let mut response = Reply::error(id, error);
        response.extensions_mut().insert(RateLimited {
            retry_after: refusal.retry_after(),
        });
        Err((response, Outcome::RateLimited))
    }

    /// The answer of an admitted call: from the network's transactions upstream for what only
    /// a transaction pool knows, else the table's, else (for a method the spec lets a partner answer, when
    /// this node could not) the partner's.
    async fn route(
        &self,
        caller: &Caller,
        row: Option<&Row>,
        request: Request<'_>,
    ) -> (Reply, Outcome) {
        let service = &self.service;
        let network = caller.network;
        let method = row.map_or("unknown", |row| row.name);
        let id = request.id().into_owned();
        let forwardable = row.is_some_and(|row| row.forwardable);
        let partner = service.networks[network]
            .partner_url
            .clone()
            .filter(|_| caller.grant.plan.may_forward() && forwardable);
        let txpool_read = row.and_then(|row| row.txpool_reads);
        let txpool = service.networks[network]
            .transactions_url
            .clone()
            .filter(|_| txpool_read.is_some());
        let params = partner
            .as_ref()
            .or(txpool.as_ref())
            .and_then(|_| request.params.as_ref().map(|p| p.clone().into_owned()));
        if let Some(url) = &txpool
            && txpool_read == Some(TxpoolRead::PendingNonce)
            && transactions::asks_pending(params.as_deref())
        {
            // Boxed, as the partner's ask below: these futures are kilobytes, and every call's
            // future (moved as each layer takes it) would otherwise be as large.
            let reply =
                Box::pin(transactions::txpool_reply(service, id, url, method, params)).await;
            return (reply, Outcome::Forwarded);
        }
        let response = self.table.answer(row, request).await;
        if let Some(url) = &txpool
            && txpool_read == Some(TxpoolRead::Unstored)
            && response.json().ends_with(r#""result":null}"#)
        {
            let reply =
                Box::pin(transactions::txpool_reply(service, id, url, method, params)).await;
            return (reply, Outcome::Forwarded);
        }
        let syncing = service.metrics.status[network]
            .syncing
            .load(Ordering::Relaxed);
        let Some(url) = partner.filter(|_| needs_partner(&response, syncing)) else {
            let outcome = own_outcome(&response);
            return (response, outcome);
        };
        let timeout = service.forward_timeout;
        let asked = Box::pin(service.remotes.ask(&url, timeout, method, params)).await;
        service.metrics.forward(network, method, asked.is_ok());
        let max = service.max_response_bytes as usize;
        let name = &service.networks[network].name;
        match asked {
            Ok(answer) => {
                tracing::info!(network = %name, method, key = %caller.grant.id, "answered by the partner");
                let forwarded = match answer {
                    Ok(result) => Reply::result(id, &result, max),
                    Err(error) => Reply::error(id, error),
                };
                (forwarded, Outcome::Forwarded)
            }
            Err(why) => {
                tracing::warn!(network = %name, method, "the partner did not answer: {why}");
                let outcome = own_outcome(&response);
                (response, outcome)
            }
        }
    }

    /// Counts and logs a call that ended with `outcome` (key id, never the key); methods not
    /// served count as "unknown".
    fn count(&self, caller: &Caller, row: Option<&Row>, outcome: Outcome, started: Instant) {
        let service = &self.service;
        let (network, method) = (caller.network, row.map_or("unknown", |row| row.name));
        let took = started.elapsed();
        service.metrics.call(network, method, outcome, took);
        tracing::debug!(
            network = %service.networks[network].name,
            method,
            key = %caller.grant.id,
            outcome = ?outcome,
            micros = took.as_micros() as u64,
            "call"
        );
    }
}

impl RpcServiceT for Calls {
    type MethodResponse = Reply;
    type NotificationResponse = MethodResponse;
    type BatchResponse = MethodResponse;

    fn call<'a>(&self, request: Request<'a>) -> impl Future<Output = Reply> + Send + 'a {
        let this = self.clone();
        async move { this.answer(request).await }
    }

    /// Each call of a batch goes through `answer`, as a single call would.
    fn batch<'a>(&self, batch: Batch<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        let this = self.clone();
        async move {
            let mut responses =
                BatchResponseBuilder::new_with_limit(this.service.max_response_bytes as usize);
            let mut limited = None;
            let mut got_notification = false;
            for entry in batch {
                let mut response = match entry {
                    Ok(BatchEntry::Call(request)) => this.answer(request).await.into_jsonrpsee(),
                    Ok(BatchEntry::Notification(_)) => {
                        got_notification = true;
                        continue;
                    }
                    Err(error) => {
                        let (error, id) = error.into_parts();
                        MethodResponse::error(id, error)
                    }
                };
                // A batch stays 200: each refused call says so in its own answer.
                response.extensions_mut().remove::<RefusedByAllowlist>();
                if let Some(refusal) = response.extensions().get::<RateLimited>() {
                    limited = Some(refusal.clone());
                }
                if let Err(too_big) = responses.append(response) {
                    return too_big;
                }
            }
            if responses.is_empty() && got_notification {
                return MethodResponse::notification();
            }
            let mut response = MethodResponse::from_batch(responses.finish());
            if let Some(limited) = limited {
                response.extensions_mut().insert(limited);
            }
            response
        }
    }

    /// A notification is not answered, and quarry's methods have no effect worth running one
    /// for.
    fn notification<'a>(
        &self,
        _notification: Notification<'a>,
    ) -> impl Future<Output = MethodResponse> + Send + 'a {
        std::future::ready(MethodResponse::notification())
    }
}
