//! eth_call's state overrides and call object: built from the fuzzer's bytes, or the bytes
//! read as JSON.
#![no_main]
use libfuzzer_sys::{arbitrary::Unstructured, fuzz_target};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let value = if mode & 1 == 0 {
        let mut u = Unstructured::new(rest);
        // An override set: addresses to account objects.
        let Ok(count) = u.int_in_range(0..=3) else {
            return;
        };
        let mut set = serde_json::Map::new();
        for _ in 0..count {
            let (Ok(address), Ok(account)) = (
                quarry_fuzz::value(&mut u, 0),
                quarry_fuzz::object(&mut u, 2),
            ) else {
                return;
            };
            let key = match address {
                Value::String(s) => s,
                other => other.to_string(),
            };
            set.insert(key, account);
        }
        Value::Object(set)
    } else {
        match serde_json::from_slice(rest) {
            Ok(value) => value,
            Err(_) => return,
        }
    };
    quarry_gateway::fuzz::state_overrides(&value);
    if let Value::Object(set) = &value {
        for account in set.values() {
            quarry_gateway::fuzz::call_object(account);
        }
    }
    quarry_gateway::fuzz::call_object(&value);
});
