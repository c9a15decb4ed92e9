//! The one RPC error type, and the one place it becomes a JSON-RPC error object.

use jsonrpsee::types::{ErrorObject, ErrorObjectOwned, error::INVALID_PARAMS_CODE};

/// geth's code for server-side failures of a valid request (`header not found`, ...).
const SERVER_ERROR_CODE: i32 = -32000;
const INTERNAL_ERROR_CODE: i32 = -32603;

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
    /// EIP-1898 `requireCanonical` with a hash that is not on the canonical chain.
    #[error("hash {0} is not currently canonical")]
    NotCanonical(alloy_primitives::B256),
    #[error(transparent)]
    Storage(#[from] quarry_storage::Error),
    /// A blocking task panicked or was cancelled.
    #[error("internal error: {0}")]
    Internal(String),
}

pub type Result<T> = std::result::Result<T, RpcError>;

impl From<RpcError> for ErrorObjectOwned {
    fn from(error: RpcError) -> Self {
        let code = match &error {
            RpcError::InvalidParams(_) => INVALID_PARAMS_CODE,
            RpcError::HeaderNotFound
            | RpcError::HeaderForHashNotFound
            | RpcError::NotCanonical(_) => SERVER_ERROR_CODE,
            RpcError::Storage(e) => {
                tracing::error!("storage error while answering a request: {e}");
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
