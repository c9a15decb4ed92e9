//! The debug_trace* methods' parameters as geth reads them (the tracer options, geth's duration
//! strings, debug_traceCall's overrides, debug_traceBlock's RLP), and how a trace's failure
//! becomes an `RpcError`.

use crate::{
    call_params::{BlockOverridesArg, Overrides},
    params::{Args, FromArg},
    rpc_error::RpcError,
};
use alloy_primitives::Bytes;
use alloy_rpc_types_trace::geth::GethDebugTracingOptions;
use quarry_executor::{
    BlockOverrides, StateOverrides,
    trace::{DEFAULT_TRACE_TIMEOUT, TraceError},
};
use serde_json::Value;
use std::time::Duration;

/// A trace's options: geth's tracer config, with its `timeout` read.
#[derive(Debug, Clone)]
pub struct TraceOptions {
    pub geth: GethDebugTracingOptions,
    pub timeout: Duration,
}

impl Default for TraceOptions {
    fn default() -> Self {
        Self {
            geth: GethDebugTracingOptions::default(),
            timeout: DEFAULT_TRACE_TIMEOUT,
        }
    }
}

impl TraceOptions {
    fn from_value(mut value: Value) -> Result<Self, String> {
        if value.get("tracer").and_then(Value::as_str) == Some("muxTracer")
            && let Some(Value::Object(tracers)) = value.get_mut("tracerConfig")
        {
            // geth takes `{}` or null for any tracer's config; revm-inspectors wants none for
            // the tracers without one and an object for the others.
            for (name, config) in tracers.iter_mut() {
                let configless = matches!(name.as_str(), "4byteTracer" | "noopTracer");
                let empty = config.is_null() || config.as_object().is_some_and(|o| o.is_empty());
                if configless && empty {
                    *config = Value::Null;
                } else if config.is_null() {
                    *config = Value::Object(Default::default());
                }
            }
        }
        let geth: GethDebugTracingOptions =
            serde_json::from_value(value).map_err(|e| e.to_string())?;
        Ok(Self {
            geth,
            timeout: DEFAULT_TRACE_TIMEOUT,
        })
    }

    /// The `timeout` option, read as Go's time.ParseDuration reads it; geth answers a bad one
    /// with its parser's error (-32000).
    pub(crate) fn with_timeout(mut self) -> crate::Result<Self> {
        if let Some(text) = &self.geth.timeout {
            self.timeout = go_duration(text).map_err(RpcError::Execution)?;
        }
        Ok(self)
    }
}

impl FromArg for TraceOptions {
    fn from_arg(value: &Value) -> Result<Self, String> {
        Self::from_value(value.clone())
    }
}

/// debug_traceCall's config: the trace options, and the state and block overrides.
pub struct TraceCallConfig {
    pub options: TraceOptions,
    pub state: StateOverrides,
    pub block: BlockOverrides,
}

impl FromArg for TraceCallConfig {
    fn from_arg(value: &Value) -> Result<Self, String> {
        let mut value = value.clone();
        let fields = value
            .as_object_mut()
            .ok_or_else(|| "expected an object".to_string())?;
        let state = match fields.remove("stateOverrides") {
            None | Some(Value::Null) => StateOverrides::default(),
            Some(overrides) => {
                Overrides::from_arg(&overrides)
                    .map_err(|e| format!("stateOverrides: {e}"))?
                    .0
            }
        };
        let block = match fields.remove("blockOverrides") {
            None | Some(Value::Null) => BlockOverrides::default(),
            Some(overrides) => {
                let BlockOverridesArg {
                    overrides, extra, ..
                } = BlockOverridesArg::from_arg(&overrides)
                    .map_err(|e| format!("blockOverrides: {e}"))?;
                if let Some(field) = extra {
                    return Err(format!(
                        "block override \"{field}\" is not supported for this RPC method"
                    ));
                }
                overrides
            }
        };
        if fields
            .remove("txIndex")
            .is_some_and(|index| !index.is_null())
        {
            return Err(
                "txIndex is not supported: trace on the block before, with its state".into(),
            );
        }
        Ok(Self {
            options: TraceOptions::from_value(value)?,
            state,
            block,
        })
    }
}

/// geth's `time.ParseDuration`: a sequence of decimal numbers, each with a unit (ns, us, µs,
/// ms, s, m, h), optionally signed; a negative duration has already expired.
pub fn go_duration(text: &str) -> Result<Duration, String> {
    let invalid = || format!("time: invalid duration {text:?}");
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_len];
        if number.is_empty() || number == "." {
            return Err(invalid());
        }
        let value: f64 = number.parse().map_err(|_| invalid())?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let nanos_per_unit = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "" => return Err(format!("time: missing unit in duration {text:?}")),
            unit => return Err(format!("time: unknown unit {unit:?} in duration {text:?}")),
        };
        total += value * nanos_per_unit;
        rest = &rest[unit_len..];
    }
    if negative {
        return Ok(Duration::ZERO);
    }
    if total > 9.223_372_036_854_775e18 {
        return Err(invalid());
    }
    Ok(Duration::from_nanos(total as u64))
}

impl From<TraceError> for RpcError {
    fn from(error: TraceError) -> Self {
        match error {
            TraceError::State(e) => RpcError::Storage(e),
            TraceError::TooLarge { .. } | TraceError::ParityTooLarge { .. } => {
                RpcError::TraceTooLarge(error.to_string())
            }
            TraceError::Execution(e) => RpcError::Internal(e),
            TraceError::Timeout | TraceError::Tracer(_) | TraceError::Invalid(_) => {
                RpcError::Execution(error.to_string())
            }
        }
    }
}

/// A trace method's tracer options at `position` (geth's defaults when omitted).
pub(crate) fn trace_options(args: &Args, position: usize) -> crate::Result<TraceOptions> {
    args.optional::<TraceOptions>(position)?
        .unwrap_or_default()
        .with_timeout()
}

/// debug_traceBlock's block: its RLP as 0x-prefixed hex.
pub(crate) struct BlockRlp(pub Bytes);

impl FromArg for BlockRlp {
    fn from_arg(value: &Value) -> Result<Self, String> {
        serde_json::from_value::<Bytes>(value.clone())
            .map(BlockRlp)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_go_reads_them() {
        let ms = Duration::from_millis;
        assert_eq!(go_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(go_duration("300ms"), Ok(ms(300)));
        assert_eq!(go_duration("1.5s"), Ok(ms(1500)));
        assert_eq!(go_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(go_duration("2h45m"), Ok(Duration::from_secs(9900)));
        assert_eq!(go_duration("10us"), Ok(Duration::from_micros(10)));
        assert_eq!(go_duration("0"), Ok(Duration::ZERO));
        assert_eq!(go_duration("-1s"), Ok(Duration::ZERO));
        assert_eq!(
            go_duration("5"),
            Err("time: missing unit in duration \"5\"".into())
        );
        assert_eq!(
            go_duration("5x"),
            Err("time: unknown unit \"x\" in duration \"5x\"".into())
        );
        assert_eq!(go_duration(""), Err("time: invalid duration \"\"".into()));
        assert_eq!(go_duration("s"), Err("time: invalid duration \"s\"".into()));
    }
}
