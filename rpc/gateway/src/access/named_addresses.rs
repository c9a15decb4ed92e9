//! Which addresses a call names, for a key's contract allowlist: every method's row says
//! where its parameters name addresses (`AddressParams`; a row cannot be declared without),
//! and the addresses are read from there with quarry-eth's own parameter parsers, the ones the
//! methods use.

use alloy_primitives::Address;
use quarry_eth::{AddressParams, call_params::Call, log_filter::Filter, params::FromArg};
use serde_json::{Value, value::RawValue};

/// The addresses a call names, as far as the allowlist is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// The method names no address.
    Nothing,
    Addresses(Vec<Address>),
    /// The call could name any contract: what it lacks (a log filter without an address, a
    /// call without `to`), or why its parameters could not be read.
    Unbounded(String),
}

/// The addresses a call names with `params`, its method's parameters naming them as `kind`
/// says (a method not served names none: its call is answered "method not found").
pub fn named_addresses(kind: AddressParams, params: Option<&RawValue>) -> Named {
    if kind == AddressParams::NoAddress {
        return Named::Nothing;
    }
    // The common case, one plain address, read without building JSON values.
    if let AddressParams::Address(i) = kind
        && let Some(address) = params.and_then(|p| plain_address(p, i))
    {
        return Named::Addresses(vec![address]);
    }
    let values: Vec<Value> = match params.map(|p| serde_json::from_str::<Value>(p.get())) {
        None | Some(Ok(Value::Null)) => Vec::new(),
        Some(Ok(Value::Array(values))) => values,
        Some(_) => return Named::Unbounded("parameters that are not a JSON array".into()),
    };
    let at = |i: usize| values.get(i).filter(|v| !v.is_null());
    let read = |result: Result<Vec<Address>, String>| match result {
        Ok(addresses) => Named::Addresses(addresses),
        Err(why) => Named::Unbounded(why),
    };
    match kind {
        AddressParams::NoAddress => Named::Nothing,
        AddressParams::Address(i) => match at(i) {
            Some(value) => read(Address::from_arg(value).map(|a| vec![a])),
            None => Named::Unbounded("no address".into()),
        },
        AddressParams::CallTo(i) => match at(i) {
            Some(value) => call_to(value),
            None => Named::Unbounded("no call object".into()),
        },
        AddressParams::LogFilter(i) => log_filter(at(i)),
        AddressParams::StorageRequests => match at(0) {
            // Keyed by address, as `SlotRequests` reads them; the slots are the method's.
            Some(Value::Object(requests)) => read(
                requests
                    .keys()
                    .map(|address| Address::from_arg(&Value::String(address.clone())))
                    .collect(),
            ),
            _ => Named::Unbounded("no object of storage requests".into()),
        },
        AddressParams::SimulatedCalls => simulated_calls(at(0)),
        AddressParams::Subscription => match at(0).and_then(Value::as_str) {
            Some("logs") => log_filter(at(1)),
            _ => Named::Nothing,
        },
        AddressParams::RawTransactionTo(i) => raw_transaction_to(at(i)),
        AddressParams::CallsTo => calls_to(at(0)),
        AddressParams::TraceFilter => trace_filter(at(0)),
    }
}

/// The address at position `i` of `params` when it is written plainly (`"0x"` and 40 hex
/// digits, no escapes), as `Address::from_arg` reads it; `None` otherwise (then read the slow
/// way).
fn plain_address(params: &RawValue, i: usize) -> Option<Address> {
    let values: Vec<&RawValue> = serde_json::from_str(params.get()).ok()?;
    let text = values.get(i)?.get().strip_prefix('"')?.strip_suffix('"')?;
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))?;
    let mut bytes = [0u8; 20];
    (digits.len() == 40)
        .then(|| alloy_primitives::hex::decode_to_slice(digits, &mut bytes).ok())??;
    Some(Address::from(bytes))
}

fn call_to(value: &Value) -> Named {
    match Call::from_arg(value) {
        Ok(call) => match call.request.to {
            Some(to) => Named::Addresses(vec![to]),
            None => Named::Unbounded("a call without \"to\" (a contract creation)".into()),
        },
        Err(why) => Named::Unbounded(format!("a call object that cannot be read ({why})")),
    }
}

/// The `to` of every call of trace_callMany's list of `[call, traceTypes]` pairs.
fn calls_to(list: Option<&Value>) -> Named {
    let Some(pairs) = list
        .and_then(Value::as_array)
        .filter(|pairs| !pairs.is_empty())
    else {
        return Named::Unbounded("no list of calls".into());
    };
    let mut addresses = Vec::new();
    for pair in pairs {
        let Some(call) = pair.get(0) else {
            return Named::Unbounded("a call list entry without a call".into());
        };
        match call_to(call) {
            Named::Addresses(to) => addresses.extend(to),
            other => return other,
        }
    }
    Named::Addresses(addresses)
}

/// trace_filter's `fromAddress` and `toAddress`: a filter naming neither could match any
/// contract.
fn trace_filter(filter: Option<&Value>) -> Named {
    let mut addresses = Vec::new();
    for field in ["fromAddress", "toAddress"] {
        let listed = filter.and_then(|f| f.get(field)).filter(|v| !v.is_null());
        for value in listed.and_then(Value::as_array).into_iter().flatten() {
            match Address::from_arg(value) {
                Ok(address) => addresses.push(address),
                Err(why) => {
                    return Named::Unbounded(format!("a {field} that cannot be read ({why})"));
                }
            }
        }
    }
    if addresses.is_empty() {
        return Named::Unbounded("a trace filter without fromAddress or toAddress".into());
    }
    Named::Addresses(addresses)
}

fn raw_transaction_to(value: Option<&Value>) -> Named {
    let bytes = match value.map(alloy_primitives::Bytes::from_arg) {
        Some(Ok(bytes)) => bytes,
        Some(Err(why)) => {
            return Named::Unbounded(format!("transaction bytes that cannot be read ({why})"));
        }
        None => return Named::Unbounded("no transaction".into()),
    };
    match quarry_eth::raw_transaction::transaction_to(&bytes) {
        Ok(Some(to)) => Named::Addresses(vec![to]),
        Ok(None) => Named::Unbounded("a transaction without \"to\" (a contract creation)".into()),
        Err(why) => Named::Unbounded(why.to_string()),
    }
}

fn log_filter(value: Option<&Value>) -> Named {
    let filter = match value.map(Filter::from_arg) {
        None => return Named::Unbounded("a log filter without an address".into()),
        Some(Ok(filter)) => filter,
        Some(Err(why)) => {
            return Named::Unbounded(format!("a log filter that cannot be read ({why})"));
        }
    };
    if filter.addresses.is_empty() {
        Named::Unbounded("a log filter without an address".into())
    } else {
        Named::Addresses(filter.addresses)
    }
}

/// The `to` of every call of an eth_simulateV1 payload.
fn simulated_calls(payload: Option<&Value>) -> Named {
    let blocks = payload
        .and_then(|p| p.get("blockStateCalls"))
        .and_then(Value::as_array);
    let mut addresses = Vec::new();
    for block in blocks.into_iter().flatten() {
        let calls = block.get("calls").and_then(Value::as_array);
        for call in calls.into_iter().flatten() {
            match call_to(call) {
                Named::Addresses(to) => addresses.extend(to),
                other => return other,
            }
        }
    }
    if addresses.is_empty() {
        return Named::Unbounded("a simulation without calls".into());
    }
    Named::Addresses(addresses)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Where the method table's row of `method` says its parameters name addresses.
    fn kind(method: &str) -> AddressParams {
        crate::row(method).map(|row| row.addresses).unwrap()
    }

    fn named(method: &str, params: Value) -> Named {
        let raw = serde_json::value::to_raw_value(&params).unwrap();
        named_addresses(kind(method), Some(&raw))
    }

    #[test]
    fn trace_calls_and_filters_name_their_addresses() {
        let (a, b) = (Address::repeat_byte(0xa), Address::repeat_byte(0xb));
        let calls = json!([[[{"to": a}, ["trace"]], [{"to": b}, ["stateDiff"]]], "latest"]);
        assert_eq!(named("trace_callMany", calls), Named::Addresses(vec![a, b]));
        let creation = json!([[[{"data": "0x00"}, ["trace"]]]]);
        assert!(matches!(
            named("trace_callMany", creation),
            Named::Unbounded(_)
        ));
        let filter = json!([{"fromBlock": "0x1", "fromAddress": [a], "toAddress": [b]}]);
        assert_eq!(named("trace_filter", filter), Named::Addresses(vec![a, b]));
        let open = json!([{"fromBlock": "0x1", "toBlock": "0x2"}]);
        assert!(matches!(named("trace_filter", open), Named::Unbounded(_)));
        assert_eq!(
            named("trace_call", json!([{"to": a}, ["trace"]])),
            Named::Addresses(vec![a])
        );
        assert_eq!(named("trace_block", json!(["0x1"])), Named::Nothing);
    }

    #[test]
    fn a_sent_transaction_names_its_recipient() {
        // The dev chain's block 2, transaction 5: an approve on its Token contract.
        let raw = "0x02f8b282053909843b9aca00849809ef168301388094aff35580d3ba5711dc4154c80d66e035ba2a473e80b844095ea7b3000000000000000000000000becee83b6fad403f5ef53f064653857c7b6ac3fb00000000000000000000000000000000000000000000000000000000000001f4c001a0d2bfaf29bd2e8f16155435bf1a7be85858965aaa56cc41fbfdbd42ef54ba6945a04e1780402677726965c0ea778daaf9f0023db32dbba8ec5344a4cdd925cb8487";
        let token: Address = "0xaff35580d3ba5711dc4154c80d66e035ba2a473e"
            .parse()
            .unwrap();
        for method in ["eth_sendRawTransaction", "eth_sendRawTransactionSync"] {
            assert_eq!(named(method, json!([raw])), Named::Addresses(vec![token]));
            assert!(matches!(
                named(method, json!(["0x02"])),
                Named::Unbounded(_)
            ));
            assert!(matches!(named(method, json!([])), Named::Unbounded(_)));
        }
    }

    #[test]
    fn addresses_are_found_where_each_method_names_them() {
        let a = Address::repeat_byte(0xaa);
        let b = Address::repeat_byte(0xbb);
        let just = |addresses: Vec<Address>| Named::Addresses(addresses);
        assert_eq!(named("eth_getBalance", json!([a, "latest"])), just(vec![a]));
        let upper = json!([format!("0X{}", alloy_primitives::hex::encode_upper(a))]);
        assert_eq!(named("eth_getBalance", upper), just(vec![a]));
        let escaped = serde_json::value::RawValue::from_string(
            r#"["\u0030xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]"#.into(),
        )
        .unwrap();
        assert_eq!(
            named_addresses(kind("eth_getCode"), Some(&escaped)),
            just(vec![a])
        );
        assert!(matches!(
            named("eth_getBalance", json!(["0xaa"])),
            Named::Unbounded(_)
        ));
        assert_eq!(named("eth_getStorageAt", json!([a, "0x0"])), just(vec![a]));
        assert_eq!(
            named("eth_getProof", json!([b, [], "latest"])),
            just(vec![b])
        );
        assert_eq!(
            named("eth_call", json!([{"to": a}, "latest"])),
            just(vec![a])
        );
        assert_eq!(named("debug_traceCall", json!([{"to": b}])), just(vec![b]));
        assert!(matches!(
            named("eth_estimateGas", json!([{"data": "0x00"}])),
            Named::Unbounded(_)
        ));
        assert_eq!(
            named("eth_getLogs", json!([{"address": [a, b]}])),
            just(vec![a, b])
        );
        assert!(matches!(
            named("eth_getLogs", json!([{}])),
            Named::Unbounded(_)
        ));
        assert!(matches!(
            named("eth_newFilter", json!([{"topics": []}])),
            Named::Unbounded(_)
        ));
        assert_eq!(
            named("eth_subscribe", json!(["logs", {"address": b}])),
            just(vec![b])
        );
        assert!(matches!(
            named("eth_subscribe", json!(["logs"])),
            Named::Unbounded(_)
        ));
        assert_eq!(named("eth_subscribe", json!(["newHeads"])), Named::Nothing);
        let requests = json!([{ a.to_string(): ["0x0"], b.to_string(): [] }, "latest"]);
        assert_eq!(named("eth_getStorageValues", requests), just(vec![a, b]));
        let payload = json!([{"blockStateCalls": [{"calls": [{"to": a}, {"to": b}]}]}]);
        assert_eq!(named("eth_simulateV1", payload), just(vec![a, b]));
        let creation = json!([{"blockStateCalls": [{"calls": [{"to": a}, {"data": "0x00"}]}]}]);
        assert!(matches!(
            named("eth_simulateV1", creation),
            Named::Unbounded(_)
        ));
        assert_eq!(
            named("eth_getBlockByNumber", json!(["latest", false])),
            Named::Nothing
        );
        // An address that cannot be read is no allowed address.
        assert!(matches!(
            named("eth_getCode", json!(["0xnot-an-address"])),
            Named::Unbounded(_)
        ));
        assert!(matches!(
            named("eth_getBalance", json!({"address": a})),
            Named::Unbounded(_)
        ));
    }
}
