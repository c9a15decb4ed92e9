//! The trace_* methods' parameters as reth reads them: the trace types (`trace`, `vmTrace`,
//! `stateDiff`), trace_callMany's list of calls, trace_get's indices and trace_filter's filter.

use crate::{
    call_params::Call,
    params::{FromArg, Index},
};
use quarry_executor::parity_trace::{TraceFilter, TraceType, TraceTypes};
use serde_json::Value;

/// A list of trace types; an unknown one is refused with the names that are known.
#[derive(Debug, Clone)]
pub struct TraceTypesArg(pub TraceTypes);

impl FromArg for TraceTypesArg {
    fn from_arg(value: &Value) -> Result<Self, String> {
        let Value::Array(items) = value else {
            return Err(
                "expected an array of trace types (\"trace\", \"vmTrace\", \"stateDiff\")".into(),
            );
        };
        items
            .iter()
            .map(|item| {
                serde_json::from_value::<TraceType>(item.clone()).map_err(|_| {
                    format!(
                        "unknown trace type {item}: expected \"trace\", \"vmTrace\" or \"stateDiff\""
                    )
                })
            })
            .collect::<Result<_, _>>()
            .map(TraceTypesArg)
    }
}

/// trace_callMany's calls: `[[call, [types]], ...]`.
#[derive(Debug)]
pub struct CallsArg(pub Vec<(Call, TraceTypes)>);

impl FromArg for CallsArg {
    fn from_arg(value: &Value) -> Result<Self, String> {
        let Value::Array(items) = value else {
            return Err("expected an array of [call, traceTypes] pairs".into());
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item.as_array().map(Vec::as_slice) {
                Some([call, types]) => Ok((
                    Call::from_arg(call).map_err(|e| format!("call {i}: {e}"))?,
                    TraceTypesArg::from_arg(types)
                        .map_err(|e| format!("call {i}: {e}"))?
                        .0,
                )),
                _ => Err(format!("call {i}: expected a [call, traceTypes] pair")),
            })
            .collect::<Result<_, _>>()
            .map(CallsArg)
    }
}

/// trace_get's trace indices (quantities).
#[derive(Debug)]
pub struct IndicesArg(pub Vec<u64>);

impl FromArg for IndicesArg {
    fn from_arg(value: &Value) -> Result<Self, String> {
        let Value::Array(items) = value else {
            return Err("expected an array of trace indices".into());
        };
        items
            .iter()
            .map(|item| Index::from_arg(item).map(|Index(index)| index))
            .collect::<Result<_, _>>()
            .map(IndicesArg)
    }
}

/// trace_filter's filter, with reth's fields and defaults.
#[derive(Debug)]
pub struct FilterArg(pub TraceFilter);

impl FromArg for FilterArg {
    fn from_arg(value: &Value) -> Result<Self, String> {
        serde_json::from_value(value.clone())
            .map(FilterArg)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn trace_types_are_read_and_unknown_ones_refused() {
        let TraceTypesArg(types) =
            TraceTypesArg::from_arg(&json!(["trace", "stateDiff"])).expect("known types");
        assert!(types.contains(&TraceType::Trace) && types.contains(&TraceType::StateDiff));
        assert!(!types.contains(&TraceType::VmTrace));
        let error =
            TraceTypesArg::from_arg(&json!(["trace", "callTracer"])).expect_err("unknown type");
        assert!(error.contains("\"callTracer\""), "{error}");
        assert!(TraceTypesArg::from_arg(&json!("trace")).is_err());
    }

    #[test]
    fn call_many_pairs_and_indices_parse() {
        let CallsArg(calls) = CallsArg::from_arg(&json!([
            [{"to": "0x0000000000000000000000000000000000000001"}, ["trace"]],
            [{"input": "0x"}, []]
        ]))
        .expect("pairs");
        assert_eq!(calls.len(), 2);
        assert!(calls[1].1.is_empty());
        let error = CallsArg::from_arg(&json!([[{}]])).expect_err("not a pair");
        assert!(error.starts_with("call 0"), "{error}");
        let IndicesArg(indices) = IndicesArg::from_arg(&json!(["0x0", "0x2"])).expect("indices");
        assert_eq!(indices, vec![0, 2]);
    }

    #[test]
    fn filters_take_reth_fields_only() {
        let FilterArg(filter) = FilterArg::from_arg(&json!({
            "fromBlock": "0x1", "toBlock": "0x5",
            "toAddress": ["0x0000000000000000000000000000000000000001"],
            "after": 2, "count": 3
        }))
        .expect("filter");
        assert_eq!((filter.from_block, filter.to_block), (Some(1), Some(5)));
        assert_eq!((filter.after, filter.count), (Some(2), Some(3)));
        assert!(FilterArg::from_arg(&json!({"address": []})).is_err());
    }
}
