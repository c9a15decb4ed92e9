//! Positional parameters, parsed as geth parses them, with errors that name the parameter.

use crate::rpc_error::RpcError;
use alloy_primitives::{Address, B256, hex};
use jsonrpsee_types::Params;
use serde_json::Value;
use std::collections::BTreeMap;

/// The positional parameters of one call, checked against the method's parameter names.
pub struct Args {
    values: Vec<Value>,
    names: &'static [&'static str],
}

impl Args {
    /// Splits `params` into at most `names.len()` values, of which the first `required` must be
    /// present (explicit trailing `null`s count as absent, as in geth).
    pub fn parse(
        params: &Params<'_>,
        names: &'static [&'static str],
        required: usize,
    ) -> Result<Self, RpcError> {
        let mut values: Vec<Value> = match params.as_str() {
            None => Vec::new(),
            Some(raw) => match serde_json::from_str::<Value>(raw) {
                Ok(Value::Array(values)) => values,
                Ok(Value::Null) => Vec::new(),
                Ok(_) => {
                    return Err(RpcError::InvalidParams(
                        "non-array params: parameters must be given as a JSON array".into(),
                    ));
                }
                Err(e) => return Err(RpcError::InvalidParams(format!("invalid params: {e}"))),
            },
        };
        if values.len() > names.len() {
            return Err(RpcError::InvalidParams(format!(
                "too many arguments, want at most {}",
                names.len()
            )));
        }
        while values.last().is_some_and(Value::is_null) {
            values.pop();
        }
        if values.len() < required {
            let missing = values.len();
            return Err(RpcError::InvalidParams(format!(
                "missing value for required argument {missing} ({})",
                names.get(missing).copied().unwrap_or("argument")
            )));
        }
        Ok(Self { values, names })
    }

    /// The argument at `index`, or `None` when it was omitted or `null`.
    pub fn optional<T: FromArg>(&self, index: usize) -> Result<Option<T>, RpcError> {
        match self.values.get(index) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => T::from_arg(value).map(Some).map_err(|reason| {
                RpcError::InvalidParams(format!(
                    "invalid argument {index} ({}): {reason}",
                    self.names[index]
                ))
            }),
        }
    }

    /// A required argument; `parse` has already checked that it is present.
    pub fn required<T: FromArg>(&self, index: usize) -> Result<T, RpcError> {
        self.optional(index)?.ok_or_else(|| {
            RpcError::InvalidParams(format!(
                "missing value for required argument {index} ({})",
                self.names[index]
            ))
        })
    }
}

/// A value that can be read from one JSON argument; the error says what was wrong with it.
pub trait FromArg: Sized {
    fn from_arg(value: &Value) -> Result<Self, String>;
}

fn as_str<'a>(value: &'a Value, want: &str) -> Result<&'a str, String> {
    value
        .as_str()
        .ok_or_else(|| format!("expected {want}, found {}", json_kind(value)))
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn strip_0x(s: &str) -> Result<&str, String> {
    s.strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .ok_or_else(|| format!("hex string without 0x prefix: {s:?}"))
}

/// Exactly `N` bytes of 0x-prefixed hex.
fn fixed_hex<const N: usize>(value: &Value, what: &str) -> Result<[u8; N], String> {
    let s = as_str(value, &format!("a {N}-byte hex string"))?;
    let digits = strip_0x(s)?;
    if digits.len() != 2 * N {
        return Err(format!(
            "hex string has length {}, want {} for {what}",
            digits.len(),
            2 * N
        ));
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(digits, &mut out).map_err(|_| format!("invalid hex string {s:?}"))?;
    Ok(out)
}

impl FromArg for B256 {
    fn from_arg(value: &Value) -> Result<Self, String> {
        fixed_hex::<32>(value, "a hash").map(B256::from)
    }
}

impl FromArg for Address {
    fn from_arg(value: &Value) -> Result<Self, String> {
        fixed_hex::<20>(value, "an address").map(Address::from)
    }
}

/// Any number of bytes as 0x-prefixed hex (web3_sha3's data).
impl FromArg for alloy_primitives::Bytes {
    fn from_arg(value: &Value) -> Result<Self, String> {
        let s = as_str(value, "a hex string")?;
        hex::decode(strip_0x(s)?)
            .map(Into::into)
            .map_err(|e| format!("invalid hex string {s:?}: {e}"))
    }
}

impl FromArg for String {
    fn from_arg(value: &Value) -> Result<Self, String> {
        as_str(value, "a string").map(str::to_owned)
    }
}

/// Any JSON value, checked by the method itself.
impl FromArg for Value {
    fn from_arg(value: &Value) -> Result<Self, String> {
        Ok(value.clone())
    }
}

impl FromArg for bool {
    fn from_arg(value: &Value) -> Result<Self, String> {
        value
            .as_bool()
            .ok_or_else(|| format!("expected a boolean, found {}", json_kind(value)))
    }
}

/// A hex quantity: 0x-prefixed, no leading zero digits, at most 64 bits.
pub fn parse_quantity(s: &str) -> Result<u64, String> {
    let digits = strip_0x(s)?;
    if digits.is_empty() {
        return Err(format!("hex string {s:?} has no digits"));
    }
    if digits.len() > 1 && digits.starts_with('0') {
        return Err(format!("hex number {s:?} has leading zero digits"));
    }
    if digits.len() > 16 {
        return Err(format!("hex number {s:?} is larger than 64 bits"));
    }
    u64::from_str_radix(digits, 16).map_err(|_| format!("invalid hex number {s:?}"))
}

/// A position (transaction or uncle index) given as a hex quantity.
pub struct Index(pub u64);

impl FromArg for Index {
    fn from_arg(value: &Value) -> Result<Self, String> {
        parse_quantity(as_str(value, "a hex quantity")?).map(Index)
    }
}

/// eth_feeHistory's block count: a hex quantity or a plain number, as geth accepts.
pub struct BlockCount(pub u64);

impl FromArg for BlockCount {
    fn from_arg(value: &Value) -> Result<Self, String> {
        match value {
            Value::Number(n) => n
                .as_u64()
                .map(BlockCount)
                .ok_or_else(|| format!("invalid block count {n}")),
            other => parse_quantity(as_str(other, "a block count")?).map(BlockCount),
        }
    }
}

/// eth_feeHistory's reward percentiles: numbers from 0 to 100, non-decreasing.
pub struct Percentiles(pub Vec<f64>);

impl FromArg for Percentiles {
    fn from_arg(value: &Value) -> Result<Self, String> {
        let Value::Array(items) = value else {
            return Err(format!(
                "expected an array of numbers, found {}",
                json_kind(value)
            ));
        };
        let mut out: Vec<f64> = Vec::with_capacity(items.len());
        for item in items {
            let p = item
                .as_f64()
                .ok_or_else(|| format!("expected a number, found {}", json_kind(item)))?;
            if !(0.0..=100.0).contains(&p) || out.last().is_some_and(|&last| p < last) {
                return Err(format!("invalid reward percentile: {p}"));
            }
            out.push(p);
        }
        Ok(Percentiles(out))
    }
}

/// A storage slot, read as leniently as geth: up to 32 bytes of hex, odd lengths allowed,
/// left-padded with zeros. Longer keys are an error, never truncated.
pub struct StorageKey(pub B256);

impl FromArg for StorageKey {
    fn from_arg(value: &Value) -> Result<Self, String> {
        parse_storage_key(value).map(|(slot, _)| Self(slot))
    }
}

/// A storage key and how many hex digits it was given with.
fn parse_storage_key(value: &Value) -> Result<(B256, usize), String> {
    let s = as_str(value, "a hex storage key")?;
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if digits.len() > 64 {
        return Err(format!(
            "storage key too long (want at most 32 bytes): {s:?}"
        ));
    }
    let mut padded = [b'0'; 64];
    padded[64 - digits.len()..].copy_from_slice(digits.as_bytes());
    let mut out = [0u8; 32];
    hex::decode_to_slice(padded, &mut out)
        .map_err(|_| format!("invalid hex in storage key: {s:?}"))?;
    Ok((B256::from(out), digits.len()))
}

/// A storage key of eth_getProof: read as [`StorageKey`], remembering whether it was given as
/// 32 bytes, since geth echoes such a key as 32 bytes and any other as a quantity.
pub struct ProofKey {
    pub slot: B256,
    pub full_length: bool,
}

impl FromArg for ProofKey {
    fn from_arg(value: &Value) -> Result<Self, String> {
        let (slot, digits) = parse_storage_key(value)?;
        Ok(Self {
            slot,
            // An odd number of digits gets a leading zero: 63 digits are 32 bytes too.
            full_length: digits.div_ceil(2) == 32,
        })
    }
}

/// eth_getProof's list of storage keys.
pub struct ProofKeys(pub Vec<ProofKey>);

impl FromArg for ProofKeys {
    fn from_arg(value: &Value) -> Result<Self, String> {
        let Value::Array(items) = value else {
            return Err(format!(
                "expected an array of storage keys, found {}",
                json_kind(value)
            ));
        };
        items
            .iter()
            .map(ProofKey::from_arg)
            .collect::<Result<_, _>>()
            .map(Self)
    }
}

/// A block number or tag, as `eth_getBlockByNumber` and the other by-number methods take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockTag {
    Number(u64),
    Earliest,
    Latest,
    Pending,
    Safe,
    Finalized,
}

impl BlockTag {
    pub fn parse(s: &str) -> Result<Self, String> {
        Ok(match s {
            "earliest" => Self::Earliest,
            "latest" => Self::Latest,
            "pending" => Self::Pending,
            "safe" => Self::Safe,
            "finalized" => Self::Finalized,
            _ => {
                let number = parse_quantity(s).map_err(|e| {
                    format!("{e} (want a hex block number or latest, earliest, pending, safe, finalized)")
                })?;
                if number > i64::MAX as u64 {
                    return Err(format!("block number {s:?} is larger than 2^63-1"));
                }
                Self::Number(number)
            }
        })
    }
}

impl FromArg for BlockTag {
    fn from_arg(value: &Value) -> Result<Self, String> {
        Self::parse(as_str(value, "a block number or tag")?)
    }
}

/// A block as state methods take it: a number or tag, or (EIP-1898) a block hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockId {
    Tag(BlockTag),
    Hash { hash: B256, require_canonical: bool },
}

impl FromArg for BlockId {
    fn from_arg(value: &Value) -> Result<Self, String> {
        match value {
            // geth reads a bare 32-byte hash string as a block hash.
            Value::String(s) if s.len() == 66 => Ok(Self::Hash {
                hash: B256::from_arg(value)?,
                require_canonical: false,
            }),
            Value::String(s) => BlockTag::parse(s).map(Self::Tag),
            Value::Object(fields) => {
                if let Some(unknown) = fields.keys().find(|k| {
                    !matches!(k.as_str(), "blockHash" | "blockNumber" | "requireCanonical")
                }) {
                    return Err(format!("unknown field {unknown:?} in block object"));
                }
                let require_canonical = match fields.get("requireCanonical") {
                    None | Some(Value::Null) => None,
                    Some(v) => {
                        Some(bool::from_arg(v).map_err(|e| format!("requireCanonical: {e}"))?)
                    }
                };
                match (fields.get("blockHash"), fields.get("blockNumber")) {
                    (Some(_), Some(_)) => Err(
                        "cannot specify both blockHash and blockNumber, choose one or the other"
                            .into(),
                    ),
                    (Some(hash), None) => Ok(Self::Hash {
                        hash: B256::from_arg(hash).map_err(|e| format!("blockHash: {e}"))?,
                        require_canonical: require_canonical.unwrap_or(false),
                    }),
                    (None, Some(number)) if require_canonical.is_none() => {
                        BlockTag::from_arg(number)
                            .map(Self::Tag)
                            .map_err(|e| format!("blockNumber: {e}"))
                    }
                    (None, Some(_)) => {
                        Err("requireCanonical is only allowed with blockHash".into())
                    }
                    (None, None) => Err("block object needs blockHash or blockNumber".into()),
                }
            }
            other => Err(format!(
                "expected a block number, tag, hash or object, found {}",
                json_kind(other)
            )),
        }
    }
}

/// eth_getStorageValues' request: address to slots.
pub struct SlotRequests(pub BTreeMap<Address, Vec<B256>>);

impl FromArg for SlotRequests {
    fn from_arg(value: &Value) -> Result<Self, String> {
        let Value::Object(entries) = value else {
            return Err("expected an object of addresses and their slots".into());
        };
        let mut requests = BTreeMap::new();
        for (address, slots) in entries {
            let address = Address::from_arg(&Value::String(address.clone()))?;
            let Value::Array(slots) = slots else {
                return Err(format!("slots of {address}: expected an array"));
            };
            let slots = slots
                .iter()
                .map(B256::from_arg)
                .collect::<Result<Vec<_>, _>>()?;
            requests.insert(address, slots);
        }
        Ok(Self(requests))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn storage_keys_are_lenient_but_never_truncated() {
        let key = |s: &str| StorageKey::from_arg(&json!(s)).map(|k| k.0);
        assert_eq!(key("0x1").unwrap(), B256::with_last_byte(1));
        assert_eq!(key("0x").unwrap(), B256::ZERO);
        assert_eq!(key(&format!("0x{}", "0".repeat(64))).unwrap(), B256::ZERO);
        let long = format!("0x{}", "0".repeat(65));
        assert_eq!(
            key(&long).unwrap_err(),
            format!("storage key too long (want at most 32 bytes): \"{long}\"")
        );
        assert_eq!(
            key("0xasdf").unwrap_err(),
            "invalid hex in storage key: \"0xasdf\""
        );
    }

    #[test]
    fn quantities_are_strict() {
        assert_eq!(parse_quantity("0x0"), Ok(0));
        assert_eq!(parse_quantity("0x1b"), Ok(27));
        assert!(parse_quantity("0x").is_err());
        assert!(parse_quantity("0x01").is_err());
        assert!(parse_quantity("1b").is_err());
        assert!(parse_quantity("0x10000000000000000").is_err());
    }

    #[test]
    fn block_ids() {
        let id = |v: Value| BlockId::from_arg(&v);
        assert_eq!(id(json!("safe")), Ok(BlockId::Tag(BlockTag::Safe)));
        assert_eq!(id(json!("0x2a")), Ok(BlockId::Tag(BlockTag::Number(42))));
        let hash = B256::repeat_byte(7);
        assert_eq!(
            id(json!(hash)),
            Ok(BlockId::Hash {
                hash,
                require_canonical: false
            })
        );
        assert_eq!(
            id(json!({"blockHash": hash, "requireCanonical": true})),
            Ok(BlockId::Hash {
                hash,
                require_canonical: true
            })
        );
        assert_eq!(
            id(json!({"blockNumber": "latest"})),
            Ok(BlockId::Tag(BlockTag::Latest))
        );
        assert!(id(json!({"blockNumber": "0x1", "blockHash": hash})).is_err());
        assert!(id(json!({})).is_err());
        assert!(id(json!(5)).is_err());
        assert!(id(json!("lastest")).is_err());
    }
}
