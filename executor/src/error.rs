//! The executor's errors: why a block was rejected (`Invalid`, with the rule and both values)
//! and what failed while executing or verifying it (`Error`).

use alloy_primitives::B256;
use std::fmt;

/// Why a block was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// A computed value differs from the one the block states.
    Mismatch {
        check: &'static str,
        expected: String,
        actual: String,
    },
    /// A header or body rule is broken.
    Rule(String),
    /// A transaction cannot be applied.
    Transaction {
        index: usize,
        hash: B256,
        reason: String,
    },
}

impl Invalid {
    pub fn mismatch(check: &'static str, expected: impl ToString, actual: impl ToString) -> Self {
        Invalid::Mismatch {
            check,
            expected: expected.to_string(),
            actual: actual.to_string(),
        }
    }
}

/// A block that failed verification: nothing of it was stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct BlockError {
    pub number: u64,
    pub hash: B256,
    pub invalid: Invalid,
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "block {} ({}) rejected: ", self.number, self.hash)?;
        match &self.invalid {
            Invalid::Mismatch {
                check,
                expected,
                actual,
            } => {
                write!(
                    f,
                    "{check} mismatch: block says {expected}, computed {actual}"
                )
            }
            Invalid::Rule(rule) => write!(f, "{rule}"),
            Invalid::Transaction {
                index,
                hash,
                reason,
            } => {
                write!(f, "transaction {index} ({hash}) is invalid: {reason}")
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Storage(#[from] quarry_storage::Error),
    #[error(transparent)]
    InvalidBlock(#[from] BlockError),
    #[error("execution failed: {0}")]
    Execution(String),
    #[error("genesis: {0}")]
    Genesis(String),
}

pub type Result<T> = std::result::Result<T, Error>;
