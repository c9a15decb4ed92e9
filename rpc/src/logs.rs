//! eth_getLogs' filter object, parsed as geth parses it.

use crate::params::{BlockTag, FromArg};
use alloy_primitives::{Address, B256};
use serde_json::Value;

/// The filter as given: a block hash, or a range of numbers or tags (each defaulting to
/// `latest`), plus addresses and positional topics.
#[derive(Debug, Clone, PartialEq, Eq)]
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
