//! Method weights: what one call costs against its key's rate and daily quota, as hosted
//! providers price methods in compute units. Cheap reads weigh 1; calls, estimates and access
//! lists more; eth_getLogs its weight plus one unit per `logs_blocks_per_unit` blocks of its
//! range beyond the first; tracers most. The config's `[weights]` table changes any of them.

use quarry_eth::params::BlockTag;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::{
    borrow::Cow,
    collections::{BTreeMap, HashMap},
};

/// Every method whose row declares no weight.
pub const DEFAULT_WEIGHT: u32 = 1;
/// A tracer (`debug_trace*`, `trace_*`) whose row declares no weight.
pub const DEFAULT_TRACE_WEIGHT: u32 = 20;
/// eth_getLogs: one more unit per this many blocks of the range beyond the first.
pub const DEFAULT_LOGS_BLOCKS_PER_UNIT: u64 = 1000;

/// The config's `[weights]`: the defaults, changed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightsConfig {
    /// The weight of every method that `methods` does not name and whose row declares none.
    #[serde(default = "default_weight")]
    pub default: u32,
    /// The weight of a tracer (`debug_trace*`, `trace_*`) that neither `methods` nor its row
    /// weighs.
    #[serde(default = "default_trace_weight")]
    pub traces: u32,
    /// eth_getLogs weighs its weight plus one unit per this many blocks of its range beyond the
    /// first; 0: the range does not count.
    #[serde(default = "default_logs_blocks_per_unit")]
    pub logs_blocks_per_unit: u64,
    /// Weights by method name, over the rows' own.
    #[serde(default)]
    pub methods: BTreeMap<String, u32>,
}

impl Default for WeightsConfig {
    fn default() -> Self {
        Self {
            default: DEFAULT_WEIGHT,
            traces: DEFAULT_TRACE_WEIGHT,
            logs_blocks_per_unit: DEFAULT_LOGS_BLOCKS_PER_UNIT,
            methods: BTreeMap::new(),
        }
    }
}

const fn default_weight() -> u32 {
    DEFAULT_WEIGHT
}
const fn default_trace_weight() -> u32 {
    DEFAULT_TRACE_WEIGHT
}
const fn default_logs_blocks_per_unit() -> u64 {
    DEFAULT_LOGS_BLOCKS_PER_UNIT
}

/// The weights a server charges.
#[derive(Debug, Clone)]
pub struct Weights {
    methods: HashMap<String, u32>,
    default: u32,
    traces: u32,
    logs_blocks_per_unit: u64,
}

impl Weights {
    pub fn new(config: &WeightsConfig) -> Self {
        Self {
            methods: config.methods.clone().into_iter().collect(),
            default: config.default,
            traces: config.traces,
            logs_blocks_per_unit: config.logs_blocks_per_unit,
        }
    }

    /// The weight of `method` alone, without its parameters, whose row declares `declared`.
    pub fn of_method(&self, method: &str, declared: Option<u32>) -> u32 {
        match self.methods.get(method).copied().or(declared) {
            Some(weight) => weight,
            None if method.starts_with("debug_trace") || method.starts_with("trace_") => {
                self.traces
            }
            None => self.default,
        }
    }

    /// The weight of one call of `method` (whose row declares `declared`) with `params`, on a
    /// network whose head is `head`: eth_getLogs weighs more for a longer range. Parameters
    /// that cannot be read weigh nothing extra (the method refuses them).
    pub fn of_call(
        &self,
        method: &str,
        declared: Option<u32>,
        params: Option<&RawValue>,
        head: u64,
    ) -> u32 {
        let weight = self.of_method(method, declared);
        if method != "eth_getLogs" || self.logs_blocks_per_unit == 0 {
            return weight;
        }
        let blocks = params.and_then(|p| logs_range(p, head)).unwrap_or(1);
        let extra = (blocks - 1) / self.logs_blocks_per_unit;
        weight.saturating_add(u32::try_from(extra).unwrap_or(u32::MAX))
    }
}

/// How many blocks an eth_getLogs filter covers (at least 1), tags read against `head`. Only
/// the range's fields are read (every call is weighed before it runs, so this stays cheap);
/// a filter the method refuses for another field may weigh its range.
fn logs_range(params: &RawValue, head: u64) -> Option<u64> {
    #[derive(Deserialize)]
    struct Range<'a> {
        #[serde(rename = "fromBlock", borrow, default)]
        from: Option<Cow<'a, str>>,
        #[serde(rename = "toBlock", borrow, default)]
        to: Option<Cow<'a, str>>,
        #[serde(rename = "blockHash", borrow, default)]
        block_hash: Option<&'a RawValue>,
    }
    let params: Vec<&RawValue> = serde_json::from_str(params.get()).ok()?;
    let filter: Range<'_> = serde_json::from_str(params.first()?.get()).ok()?;
    if filter.block_hash.is_some() {
        return Some(1);
    }
    let number = |tag: Option<Cow<'_, str>>| -> Option<u64> {
        Some(
            match tag
                .map(|t| BlockTag::parse(&t))
                .transpose()
                .ok()?
                .unwrap_or(BlockTag::Latest)
            {
                BlockTag::Number(n) => n,
                BlockTag::Earliest => 0,
                BlockTag::Latest | BlockTag::Pending | BlockTag::Safe | BlockTag::Finalized => head,
            },
        )
    };
    let (from, to) = (number(filter.from)?, number(filter.to)?.min(head));
    Some(to.saturating_sub(from).saturating_add(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(json: serde_json::Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(&json).unwrap()
    }

    /// The weight the method table's row of `method` declares.
    fn declared(method: &str) -> Option<u32> {
        crate::row(method).and_then(|row| row.weight)
    }

    #[test]
    fn defaults_and_overrides() {
        let weights = Weights::new(&WeightsConfig::default());
        assert_eq!(
            weights.of_method("eth_blockNumber", declared("eth_blockNumber")),
            1
        );
        assert_eq!(weights.of_method("eth_call", declared("eth_call")), 5);
        assert_eq!(
            weights.of_method("eth_estimateGas", declared("eth_estimateGas")),
            10
        );
        assert_eq!(
            weights.of_method(
                "debug_traceBlockByNumber",
                declared("debug_traceBlockByNumber")
            ),
            50
        );
        assert_eq!(
            weights.of_method(
                "debug_traceSomethingNew",
                declared("debug_traceSomethingNew")
            ),
            20
        );
        let config: WeightsConfig = toml::from_str(
            "default = 2\ntraces = 30\n[methods]\neth_call = 7\ndebug_traceCall = 100\n",
        )
        .unwrap();
        let weights = Weights::new(&config);
        assert_eq!(
            weights.of_method("eth_blockNumber", declared("eth_blockNumber")),
            2
        );
        assert_eq!(weights.of_method("eth_call", declared("eth_call")), 7);
        assert_eq!(
            weights.of_method("eth_estimateGas", declared("eth_estimateGas")),
            10
        );
        assert_eq!(
            weights.of_method("debug_traceCall", declared("debug_traceCall")),
            100
        );
        assert_eq!(weights.of_method("trace_new", declared("trace_new")), 30);
        assert!(toml::from_str::<WeightsConfig>("defualt = 1").is_err());
    }

    #[test]
    fn logs_weigh_by_range() {
        let weights = Weights::new(&WeightsConfig::default());
        let logs = |filter: serde_json::Value, head: u64| {
            weights.of_call(
                "eth_getLogs",
                declared("eth_getLogs"),
                Some(&params(serde_json::json!([filter]))),
                head,
            )
        };
        assert_eq!(logs(serde_json::json!({}), 5_000_000), 5);
        assert_eq!(
            logs(
                serde_json::json!({"fromBlock": "0x0", "toBlock": "0x3e7"}),
                10_000
            ),
            5
        );
        assert_eq!(
            logs(
                serde_json::json!({"fromBlock": "0x0", "toBlock": "0x3e8"}),
                10_000
            ),
            6
        );
        // Tags are read against the head; a range past the head counts up to it.
        assert_eq!(
            logs(serde_json::json!({"fromBlock": "earliest"}), 10_000),
            15
        );
        assert_eq!(
            logs(
                serde_json::json!({"fromBlock": "0x0", "toBlock": "0xffffff"}),
                2_500
            ),
            7
        );
        assert_eq!(
            logs(
                serde_json::json!({"blockHash": format!("0x{}", "11".repeat(32))}),
                10_000
            ),
            5
        );
        // What the method refuses weighs its base weight.
        assert_eq!(logs(serde_json::json!({"fromBlock": "nope"}), 10_000), 5);
        assert_eq!(
            logs(
                serde_json::json!({"fromBlock": "0x10", "toBlock": "0x1"}),
                10_000
            ),
            5
        );
        assert_eq!(
            weights.of_call("eth_getLogs", declared("eth_getLogs"), None, 10),
            5
        );
        assert_eq!(
            weights.of_call("eth_call", declared("eth_call"), None, 10),
            5
        );
    }
}
