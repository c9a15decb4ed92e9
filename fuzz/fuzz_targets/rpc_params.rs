//! Every method quarry serves, called with arbitrary JSON values in each position (over an
//! empty database: every method parses its parameters before it reads anything).
#![no_main]
use libfuzzer_sys::{arbitrary::Unstructured, fuzz_target};
use quarry_gateway::fuzz::Harness;
use std::sync::OnceLock;

fn methods() -> &'static Harness {
    static METHODS: OnceLock<Harness> = OnceLock::new();
    METHODS.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let db = quarry_storage::Database::open(dir.path()).expect("an empty database");
        // The directory lives as long as the process.
        std::mem::forget(dir);
        Harness::new(db).expect("the methods")
    })
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(index) = u.arbitrary::<u8>() else {
        return;
    };
    let Ok(params) = quarry_fuzz::params(&mut u) else {
        return;
    };
    let answer = methods().call(index.into(), &params);
    // An answer is always a JSON-RPC response.
    let parsed: serde_json::Value = serde_json::from_str(&answer).expect("a JSON answer");
    assert!(
        parsed.get("result").is_some() || parsed.get("error").is_some(),
        "{answer}"
    );
});
