//! The one RPC error type, and the one place it becomes a JSON-RPC error object.

use jsonrpsee_types::{ErrorObject, ErrorObjectOwned, error::INVALID_PARAMS_CODE};

/// geth's code for server-side failures of a valid request (`header not found`, ...).
const SERVER_ERROR_CODE: i32 = -32000;
const INTERNAL_ERROR_CODE: i32 = -32603;
/// The service's code for an eth_getLogs query over its limits.
const LIMIT_EXCEEDED_CODE: i32 = -32005;
/// geth's code for a call that reverted.
const REVERT_CODE: i32 = 3;
/// geth's code for a request over one of its size limits (eth_getStorageValues' slots).
const CLIENT_LIMIT_CODE: i32 = -38026;
/// reth's code for state older than a full node keeps (EIP-4444's number).
const PRUNED_CODE: i32 = 4444;
/// reth's message for it, which clients match.
const PRUNED_MESSAGE: &str = "pruned history unavailable";
/// geth's code for a subscription this transport or node does not offer.
const NOT_OFFERED_CODE: i32 = -32601;

#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// A parameter was missing, malformed or out of range; the message names it.
    #[error("{0}")]
    InvalidParams(String),
    /// A state method was asked for a block that is not stored (geth's wording).
    #[error("header not found")]
    HeaderNotFound,
    #[error("header for hash not found")]
    HeaderForHashNotFound,
    /// eth_getLogs' `blockHash` names no stored block (geth's wording).
    #[error("unknown block")]
    UnknownBlock,
    /// eth_getLogs matched more than `limit` logs; `from..=to` is a range that fits.
    #[error("query returned more than {limit} results")]
    TooManyLogs { from: u64, to: u64, limit: usize },
    /// trace_filter matched more than `limit` traces with no `count`; `from..=through` is a
    /// range that fits (`None`: block `from` alone holds more).
    #[error("query returned more than {limit} traces: {}", too_many_hint(*.from, *.through))]
    TooManyTraces {
        from: u64,
        through: Option<u64>,
        limit: usize,
    },
    /// trace_filter ran past its time limit after searching `from..=through`.
    #[error(
        "query timeout exceeded: blocks {from}..={through} were searched in time; ask for a narrower range or fewer addresses"
    )]
    TraceFilterTimeout { from: u64, through: u64 },
    /// eth_getLogs ran past its time limit and stopped.
    #[error("query timeout exceeded")]
    LogsTimeout,
    /// EIP-1898 `requireCanonical` with a hash that is not on the canonical chain.
    #[error("hash {0} is not currently canonical")]
    NotCanonical(alloy_primitives::B256),
    /// A call or estimate ran into REVERT: code 3, `data` the payload.
    #[error("execution reverted{}", .reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default())]
    Reverted {
        reason: Option<String>,
        payload: alloy_primitives::Bytes,
    },
    /// A call that halted or could not start, in geth's words (-32000).
    #[error("{0}")]
    Execution(String),
    /// The database holds no chain config, so no call can run.
    #[error("no chain in this database")]
    NoChain,
    #[error(transparent)]
    Storage(#[from] quarry_storage::Error),
    /// Too many reads are waiting already.
    #[error("server overloaded: too many requests waiting, try again")]
    Overloaded,
    /// eth_subscribe over HTTP (geth's words and code).
    #[error("notifications not supported")]
    NotificationsUnsupported,
    /// eth_subscribe of a kind geth does not know (geth's words and code).
    #[error("no {0:?} subscription in eth namespace")]
    UnknownSubscription(String),
    /// newPendingTransactions and its filter: quarry serves imported blocks only.
    #[error(
        "{0} is not supported: quarry has no transaction pool, it serves only blocks already imported (use newHeads or logs)"
    )]
    NoTransactionPool(&'static str),
    /// eth_sendRawTransaction of bytes refused before anything was sent: what was wrong.
    #[error("{0}")]
    InvalidTransaction(String),
    /// eth_sendRawTransaction on a network without `transactions_url`.
    #[error(
        "this network takes no transactions: quarry serves stored blocks, and network {0:?} names no transactions_url to send them to"
    )]
    NoTransactionsUpstream(String),
    /// The transactions upstream gave no answer (unreachable, timed out, not JSON-RPC); the
    /// message names what happened but not the upstream's URL, which may hold a key.
    #[error("the transaction was not sent: {0}")]
    UpstreamUnavailable(String),
    /// eth_unsubscribe of an id this connection does not hold (geth's words).
    #[error("subscription not found")]
    SubscriptionNotFound,
    /// An unknown, expired or uninstalled filter id (geth's words).
    #[error("filter not found")]
    FilterNotFound,
    #[error("too many subscriptions on this connection: at most {0}; unsubscribe some first")]
    TooManySubscriptions(usize),
    #[error(
        "too many filters for this API key: at most {0}; uninstall some (eth_uninstallFilter) or let them expire"
    )]
    TooManyFilters(usize),
    /// A filter gathered more changes between two polls than it may keep; it was removed.
    #[error(
        "filter dropped: more than {0} changes waited since the last poll; install a new filter and read the missed range with eth_getLogs"
    )]
    FilterOverflow(usize),
    /// eth_simulateV1 refused the request or a call in it: geth's code and words.
    #[error("{message}")]
    Simulate { code: i32, message: String },
    /// A request over one of geth's limits on its size (-38026).
    #[error("{0}")]
    ClientLimitExceeded(String),
    /// A struct-log trace outgrew `max_trace_bytes`.
    #[error("{0}")]
    TraceTooLarge(String),
    /// eth_getProof at a block further behind the head than `proof_window` allows.
    #[error(
        "block {block} is {behind} blocks behind the head; eth_getProof reaches at most {window} blocks back (proof_window)"
    )]
    ProofWindow {
        block: u64,
        behind: u64,
        window: u64,
    },
    /// A blocking task panicked or was cancelled.
    #[error("internal error: {0}")]
    Internal(String),
}

pub type Result<T> = std::result::Result<T, RpcError>;

fn too_many_hint(from: u64, through: Option<u64>) -> String {
    match through {
        Some(through) => format!("ask for blocks {from}..={through}, or page with after and count"),
        None => format!("block {from} alone holds more; page with after and count"),
    }
}

impl From<quarry_executor::CallError> for RpcError {
    fn from(error: quarry_executor::CallError) -> Self {
        use quarry_executor::CallError;
        match error {
            CallError::State(e) => Self::Storage(e),
            CallError::MissingBlock(_) => Self::HeaderNotFound,
            CallError::BothStateAndDiff(_) => Self::InvalidParams(error.to_string()),
            CallError::Invalid(_) | CallError::IntrinsicGas(_) | CallError::Timeout(_) => {
                Self::Execution(error.to_string())
            }
        }
    }
}

impl From<RpcError> for ErrorObjectOwned {
    fn from(error: RpcError) -> Self {
        let code = match &error {
            RpcError::InvalidParams(_) => INVALID_PARAMS_CODE,
            RpcError::Reverted { reason, payload } => {
                let message = match reason {
                    Some(reason) => format!("execution reverted: {reason}"),
                    None => "execution reverted".to_string(),
                };
                return ErrorObject::owned(REVERT_CODE, message, Some(payload.to_string()));
            }
            RpcError::TooManyLogs { from, to, limit } => {
                let data = serde_json::json!({
                    "from": format!("{from:#x}"),
                    "to": format!("{to:#x}"),
                    "limit": limit,
                });
                return ErrorObject::owned(LIMIT_EXCEEDED_CODE, error.to_string(), Some(data));
            }
            RpcError::TooManyTraces {
                from,
                through,
                limit,
            } => {
                let data = serde_json::json!({
                    "from": format!("{from:#x}"),
                    "to": through.map(|through| format!("{through:#x}")),
                    "limit": limit,
                });
                return ErrorObject::owned(LIMIT_EXCEEDED_CODE, error.to_string(), Some(data));
            }
            RpcError::TraceFilterTimeout { from, through } => {
                let data = serde_json::json!({
                    "from": format!("{from:#x}"),
                    "to": format!("{through:#x}"),
                });
                return ErrorObject::owned(LIMIT_EXCEEDED_CODE, error.to_string(), Some(data));
            }
            RpcError::ClientLimitExceeded(_) => CLIENT_LIMIT_CODE,
            RpcError::Simulate { code, .. } => *code,
            RpcError::LogsTimeout
            | RpcError::TraceTooLarge(_)
            | RpcError::TooManySubscriptions(_)
            | RpcError::TooManyFilters(_) => LIMIT_EXCEEDED_CODE,
            RpcError::NotificationsUnsupported
            | RpcError::UnknownSubscription(_)
            | RpcError::NoTransactionPool(_)
            | RpcError::NoTransactionsUpstream(_) => NOT_OFFERED_CODE,
            RpcError::InvalidTransaction(_) | RpcError::UpstreamUnavailable(_) => SERVER_ERROR_CODE,
            RpcError::SubscriptionNotFound
            | RpcError::FilterNotFound
            | RpcError::FilterOverflow(_) => SERVER_ERROR_CODE,
            RpcError::HeaderNotFound
            | RpcError::UnknownBlock
            | RpcError::HeaderForHashNotFound
            | RpcError::NotCanonical(_)
            | RpcError::ProofWindow { .. }
            | RpcError::Execution(_)
            | RpcError::NoChain => SERVER_ERROR_CODE,
            RpcError::Storage(quarry_storage::Error::PrunedHistory { oldest, .. }) => {
                // `data`: the oldest block whose state is kept, where a client can go instead.
                let data = format!("{oldest:#x}");
                return ErrorObject::owned(PRUNED_CODE, PRUNED_MESSAGE, Some(data));
            }
            RpcError::Storage(e) => {
                tracing::error!("storage error while answering a request: {e}");
                INTERNAL_ERROR_CODE
            }
            RpcError::Overloaded => {
                tracing::warn!("refused a read: the read pool is full");
                INTERNAL_ERROR_CODE
            }
            RpcError::Internal(e) => {
                tracing::error!("{e}");
                INTERNAL_ERROR_CODE
            }
        };
        ErrorObject::owned(code, error.to_string(), None::<()>)
    }
}
