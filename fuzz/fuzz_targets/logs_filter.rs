//! eth_getLogs' filter object (and the weight its range costs): built from the fuzzer's bytes,
//! or the bytes read as JSON.
#![no_main]
use libfuzzer_sys::{arbitrary::Unstructured, fuzz_target};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let value = if mode & 1 == 0 {
        match quarry_fuzz::object(&mut Unstructured::new(rest), 3) {
            Ok(value) => value,
            Err(_) => return,
        }
    } else {
        match serde_json::from_slice(rest) {
            Ok(value) => value,
            Err(_) => return,
        }
    };
    quarry_gateway::fuzz::logs_filter(&value);
});
