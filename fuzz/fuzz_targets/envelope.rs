//! The JSON-RPC envelope of a request body (notifications, odd ids, batches), and the
//! rewriting of an answer to it.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|b| *b == 0).unwrap_or(data.len());
    let (body, answer) = data.split_at(split);
    let answer = String::from_utf8_lossy(answer.get(1..).unwrap_or_default());
    quarry_gateway::fuzz::envelope(body, &answer);
});
