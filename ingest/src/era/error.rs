//! Why an era file was refused: one error type for reading, checking and writing history files,
//! each message naming the file, and the block where there is one.

use alloy_primitives::B256;
use std::path::Path;

/// Why an era file was refused. Every message names the file, and the block where there is one.
#[derive(Debug, thiserror::Error)]
pub enum EraError {
    #[error("{path}: cannot open: {source}")]
    Open {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: cannot write: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "{0}: not an era1 or ere file (it does not open with the e2store version record 65 32)"
    )]
    NotEra(String),
    #[error("{path}: block {block}: {reason}")]
    Block {
        path: String,
        block: u64,
        reason: String,
    },
    #[error("{path}: {reason}")]
    File { path: String, reason: String },
    #[error(
        "{path}: sha256 {found}, but {list} lists {expected} for {name}: the file is damaged or not the published one"
    )]
    Checksum {
        path: String,
        name: String,
        list: String,
        expected: String,
        found: String,
    },
    #[error(
        "{path}: starts at block {found}, but the datadir's head is block {head}: expected block {expected} next (a gap, or era files out of order)"
    )]
    Gap {
        path: String,
        head: u64,
        expected: u64,
        found: u64,
    },
    #[error(
        "{path}: block {block} ({found}) is not this datadir's block {block} ({stored}): the file is of another network{network}"
    )]
    OtherNetwork {
        path: String,
        block: u64,
        found: B256,
        stored: B256,
        network: String,
    },
    #[error(
        "{path}: block {block}'s total difficulty in the file is {found}, the stored chain gives {computed}"
    )]
    TotalDifficulty {
        path: String,
        block: u64,
        found: alloy_primitives::U256,
        computed: alloy_primitives::U256,
    },
}

impl EraError {
    pub fn invalid(path: &Path, block: Option<u64>, reason: impl Into<String>) -> Self {
        let path = path.display().to_string();
        let reason = reason.into();
        match block {
            Some(block) => EraError::Block {
                path,
                block,
                reason,
            },
            None => EraError::File { path, reason },
        }
    }
}
