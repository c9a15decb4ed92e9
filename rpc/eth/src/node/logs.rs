//! eth_getLogs: the block range resolved as geth resolves it, the query run within the limits.

use super::{Node, Snapshot};
use crate::{
    log_filter::Filter,
    params::BlockTag,
    rpc_error::{Result, RpcError},
    types::LogJson,
};
use quarry_storage::{LogFilter, LogLimits, LogsOutcome};

impl Node {
    /// eth_getLogs: resolves the range as geth does, then runs the query within the limits.
    pub fn logs(&self, tx: &Snapshot, filter: &Filter) -> Result<Vec<LogJson>> {
        filter.check(self.logs.max_params)?;
        let (from, to) = match filter.block_hash {
            Some(hash) => {
                let number = tx.block_number(&hash)?.ok_or(RpcError::UnknownBlock)?;
                (number, number)
            }
            None => {
                let from = self.tag_number(tx, filter.from.unwrap_or(BlockTag::Latest))?;
                let to = self.tag_number(tx, filter.to.unwrap_or(BlockTag::Latest))?;
                if from > to {
                    return Err(RpcError::InvalidParams("invalid block range params".into()));
                }
                let head = Self::head(tx)?;
                if to > head {
                    return Err(RpcError::InvalidParams(format!(
                        "block range extends beyond current head block: requested {to}, head {head}"
                    )));
                }
                (from, to)
            }
        };
        let query = LogFilter {
            from,
            to,
            addresses: filter.addresses.clone(),
            topics: filter.topics.clone(),
        };
        let limits = LogLimits {
            max_results: self.logs.max_results,
            deadline: tx.deadline(self.logs.timeout),
            use_index: self.logs.use_index,
        };
        match tx.logs(&query, limits)? {
            LogsOutcome::Found(logs) => Ok(logs.iter().map(LogJson::located).collect()),
            LogsOutcome::TooMany { fits_through } => Err(RpcError::TooManyLogs {
                from,
                to: fits_through.unwrap_or(from),
                limit: self.logs.max_results,
            }),
            LogsOutcome::TimedOut => Err(RpcError::LogsTimeout),
        }
    }
}
