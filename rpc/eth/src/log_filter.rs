//! eth_getLogs' filter object, parsed as geth parses it, and the criteria that logs of new
//! blocks are matched against (`logs` subscriptions and filters).

use crate::{
    params::{BlockTag, FromArg},
    rpc_error::RpcError,
};
use alloy_primitives::{Address, B256, Log};
use quarry_storage::{LogFilter, MAX_TOPICS};
use serde_json::Value;

/// The filter as given: a block hash, or a range of numbers or tags (each defaulting to
/// `latest`), plus addresses and positional topics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub block_hash: Option<B256>,
    pub from: Option<BlockTag>,
    pub to: Option<BlockTag>,
    pub addresses: Vec<Address>,
    /// Per position: the topics any of which matches; empty matches anything.
    pub topics: Vec<Vec<B256>>,
}

impl Filter {
    /// Addresses plus topic entries: what the parameter limit counts.
    pub fn parameter_count(&self) -> usize {
        self.addresses.len() + self.topics.iter().map(Vec::len).sum::<usize>()
    }
}

/// What a `logs` subscription or a log filter wants of each new block's logs: geth's rules,
/// where a numeric `fromBlock` / `toBlock` bounds the blocks and a tag bounds nothing.
#[derive(Debug, Clone)]
pub struct LogCriteria {
    filter: LogFilter,
    from: Option<u64>,
    to: Option<u64>,
}

impl LogCriteria {
    /// Checks `filter` as eth_getLogs does (`max_params` addresses plus topics at most).
    pub fn new(filter: &Filter, max_params: usize) -> crate::Result<Self> {
        filter.check(max_params)?;
        let number = |tag: Option<BlockTag>| match tag {
            Some(BlockTag::Number(number)) => Ok(Some(number)),
            Some(BlockTag::Earliest) => Ok(Some(0)),
            Some(BlockTag::Pending) => Err(RpcError::InvalidParams(
                "pending logs are not supported".into(),
            )),
            _ => Ok(None),
        };
        let (from, to) = (number(filter.from)?, number(filter.to)?);
        if let (Some(from), Some(to)) = (from, to)
            && from > to
        {
            return Err(RpcError::InvalidParams("invalid block range params".into()));
        }
        Ok(Self {
            filter: LogFilter {
                from: 0,
                to: u64::MAX,
                addresses: filter.addresses.clone(),
                topics: filter.topics.clone(),
            },
            from,
            to,
        })
    }

    /// Whether `log` of block `number` is wanted.
    pub fn matches(&self, log: &Log, number: u64) -> bool {
        self.from.is_none_or(|from| number >= from)
            && self.to.is_none_or(|to| number <= to)
            && self.filter.matches(log)
    }
}

impl Filter {
    /// The limits eth_getLogs enforces on a filter, with geth's messages.
    pub fn check(&self, max_params: usize) -> crate::Result<()> {
        let count = self.parameter_count();
        if count > max_params {
            return Err(RpcError::InvalidParams(format!(
                "too many filter parameters: {count} addresses and topics, at most {max_params}"
            )));
        }
        // A filter naming more positions than a log can have is refused, as geth does.
        if self.topics.len() > MAX_TOPICS {
            return Err(RpcError::InvalidParams(format!(
                "exceed max topics: {} positions, at most {MAX_TOPICS}",
                self.topics.len()
            )));
        }
        Ok(())
    }
}

impl FromArg for Filter {
    fn from_arg(value: &Value) -> Result<Self, String> {
        let Value::Object(fields) = value else {
            return Err("expected a filter object".into());
        };
        let field = |name: &str| fields.get(name).filter(|v| !v.is_null());
        let block_hash = field("blockHash")
            .map(|v| B256::from_arg(v).map_err(|e| format!("blockHash: {e}")))
            .transpose()?;
        let tag = |name: &str| {
            field(name)
                .map(|v| BlockTag::from_arg(v).map_err(|e| format!("{name}: {e}")))
                .transpose()
        };
        let (from, to) = (tag("fromBlock")?, tag("toBlock")?);
        if block_hash.is_some() && (from.is_some() || to.is_some()) {
            return Err(
                "cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other"
                    .into(),
            );
        }
        let addresses = match field("address") {
            None => Vec::new(),
            Some(Value::Array(list)) => list
                .iter()
                .map(|v| Address::from_arg(v).map_err(|e| format!("address: {e}")))
                .collect::<Result<_, _>>()?,
            Some(v) => vec![Address::from_arg(v).map_err(|e| format!("address: {e}"))?],
        };
        let topics = match field("topics") {
            None => Vec::new(),
            Some(Value::Array(positions)) => positions
                .iter()
                .enumerate()
                .map(|(position, entry)| {
                    topic_position(entry).map_err(|e| format!("topics[{position}]: {e}"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("topics: expected an array".into()),
        };
        Ok(Self {
            block_hash,
            from,
            to,
            addresses,
            topics,
        })
    }
}

/// One topic position: `null` or `[]` (any), a topic, or a list of topics (any of them; a
/// `null` in the list makes the position match anything, as in geth).
fn topic_position(entry: &Value) -> Result<Vec<B256>, String> {
    match entry {
        Value::Null => Ok(Vec::new()),
        Value::Array(list) => {
            let mut topics = Vec::with_capacity(list.len());
            for topic in list {
                if topic.is_null() {
                    return Ok(Vec::new());
                }
                topics.push(B256::from_arg(topic)?);
            }
            Ok(topics)
        }
        single => Ok(vec![B256::from_arg(single)?]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn filters_parse_as_geth_reads_them() {
        let t = B256::repeat_byte(1);
        let a = Address::repeat_byte(2);
        let filter = Filter::from_arg(&json!({
            "address": a, "fromBlock": "0x1", "toBlock": "latest",
            "topics": [null, t, [t, B256::ZERO], [], [t, null]],
        }))
        .unwrap();
        assert_eq!(filter.addresses, vec![a]);
        assert_eq!(filter.from, Some(BlockTag::Number(1)));
        assert_eq!(filter.to, Some(BlockTag::Latest));
        assert_eq!(
            filter.topics,
            vec![vec![], vec![t], vec![t, B256::ZERO], vec![], vec![]]
        );
        assert_eq!(filter.parameter_count(), 4);
        let list = Filter::from_arg(&json!({"address": [a, a]})).unwrap();
        assert_eq!(list.addresses.len(), 2);
        assert!(list.from.is_none() && list.to.is_none() && list.topics.is_empty());
        assert!(
            Filter::from_arg(&json!({"blockHash": t, "fromBlock": "0x1"}))
                .unwrap_err()
                .starts_with("cannot specify both BlockHash")
        );
        assert!(Filter::from_arg(&json!({"topics": ["0x12"]})).is_err());
        assert!(Filter::from_arg(&json!({"address": "0x12"})).is_err());
        assert!(Filter::from_arg(&json!("latest")).is_err());
    }
}
