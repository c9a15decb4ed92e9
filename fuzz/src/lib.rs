//! Arbitrary JSON for the fuzz targets: values built from the fuzzer's bytes, biased towards
//! what quarry's parsers look for (hex of the lengths that matter, block tags, the field names
//! of call objects, filters, overrides and tracer configs), so that mutations reach deep.

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use serde_json::{Map, Number, Value};

const KEYS: &[&str] = &[
    "from",
    "to",
    "gas",
    "gasPrice",
    "maxFeePerGas",
    "maxPriorityFeePerGas",
    "maxFeePerBlobGas",
    "value",
    "nonce",
    "data",
    "input",
    "accessList",
    "blobVersionedHashes",
    "authorizationList",
    "chainId",
    "type",
    "blobs",
    "commitments",
    "proofs",
    "balance",
    "code",
    "state",
    "stateDiff",
    "movePrecompileToAddress",
    "blockHash",
    "blockNumber",
    "requireCanonical",
    "fromBlock",
    "toBlock",
    "address",
    "topics",
    "tracer",
    "tracerConfig",
    "timeout",
    "disableStorage",
    "disableStack",
    "enableMemory",
    "enableReturnData",
    "onlyTopCall",
    "withLog",
    "stateOverrides",
    "blockOverrides",
    "number",
    "time",
    "baseFeePerGas",
    "feeRecipient",
    "prevRandao",
    "blobBaseFee",
    "storageKeys",
    "yParity",
    "r",
    "s",
    "v",
    "jsonrpc",
    "id",
    "method",
    "params",
    "blockStateCalls",
    "calls",
    "validation",
    "traceTransfers",
    "returnFullTransactions",
    "includeLogs",
    "limit",
];

const TAGS: &[&str] = &["latest", "earliest", "pending", "safe", "finalized"];

/// Hex string lengths (in bytes) that parsers check for.
const LENGTHS: &[usize] = &[0, 1, 2, 4, 8, 19, 20, 21, 31, 32, 33, 64, 65];

fn hex(u: &mut Unstructured<'_>) -> Result<String> {
    let len = match u.int_in_range(0..=3)? {
        0 => u.int_in_range(0..=70)?,
        _ => *u.choose(LENGTHS)?,
    };
    let mut text = String::with_capacity(2 + 2 * len);
    text.push_str(match u.int_in_range(0..=7)? {
        0 => "",
        1 => "0X",
        _ => "0x",
    });
    for _ in 0..len {
        let byte: u8 = u.arbitrary()?;
        text.push_str(&format!("{byte:02x}"));
    }
    // Quantities: leading zeros trimmed, or not; an odd digit count now and then.
    match u.int_in_range(0..=5)? {
        0 => Ok(text.replacen("0x0", "0x", 1)),
        1 => Ok(format!("{text}0")),
        _ => Ok(text),
    }
}

fn string(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=9)? {
        0..=4 => hex(u)?,
        5 | 6 => u.choose(TAGS)?.to_string(),
        7 => format!("{:#x}", u.arbitrary::<u64>()?),
        8 => u.choose(KEYS)?.to_string(),
        _ => u.arbitrary::<String>()?,
    })
}

fn number(u: &mut Unstructured<'_>) -> Result<Number> {
    Ok(match u.int_in_range(0..=3)? {
        0 => Number::from(u.int_in_range(0u64..=300)?),
        1 => Number::from(u.arbitrary::<u64>()?),
        2 => Number::from(u.arbitrary::<i64>()?),
        _ => Number::from_f64(u.arbitrary::<f64>()?).unwrap_or_else(|| Number::from(0)),
    })
}

/// One JSON value, at most `depth` levels deep.
pub fn value(u: &mut Unstructured<'_>, depth: usize) -> Result<Value> {
    let kinds = if depth == 0 { 4 } else { 7 };
    Ok(match u.int_in_range(0..=kinds)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => Value::Number(number(u)?),
        3 | 4 => Value::String(string(u)?),
        5 => array(u, depth - 1)?,
        _ => object(u, depth - 1)?,
    })
}

pub fn array(u: &mut Unstructured<'_>, depth: usize) -> Result<Value> {
    let len = u.int_in_range(0..=4)?;
    let mut items = Vec::with_capacity(len);
    for _ in 0..len {
        items.push(value(u, depth)?);
    }
    Ok(Value::Array(items))
}

pub fn object(u: &mut Unstructured<'_>, depth: usize) -> Result<Value> {
    let len = u.int_in_range(0..=5)?;
    let mut fields = Map::new();
    for _ in 0..len {
        let key = match u.int_in_range(0..=7)? {
            0 => hex(u)?,
            1 => u.arbitrary::<String>()?,
            _ => u.choose(KEYS)?.to_string(),
        };
        fields.insert(key, value(u, depth)?);
    }
    Ok(Value::Object(fields))
}

/// A method's positional parameters: an array of a few values, now and then something else.
pub fn params(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=15)? {
        0 => value(u, 3)?,
        _ => array(u, 3)?,
    })
}
