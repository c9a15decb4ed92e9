//! eth_call's parameters (the call object, state overrides) and geth's revert messages.

use crate::params::FromArg;
use alloy_eips::{eip2930::AccessList, eip7702::SignedAuthorization};
use alloy_primitives::{Address, B256, Bytes, U64, U128, U256};
use quarry_executor::{AccountOverride, BlockOverrides, CallRequest, StateOverrides};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;

/// The call object as clients send it (geth's TransactionArgs).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CallObject {
    from: Option<Address>,
    to: Option<Address>,
    gas: Option<U64>,
    gas_price: Option<U128>,
    max_fee_per_gas: Option<U128>,
    max_priority_fee_per_gas: Option<U128>,
    max_fee_per_blob_gas: Option<U128>,
    value: Option<U256>,
    nonce: Option<U64>,
    data: Option<Bytes>,
    input: Option<Bytes>,
    access_list: Option<AccessList>,
    blob_versioned_hashes: Option<Vec<B256>>,
    authorization_list: Option<Vec<SignedAuthorization>>,
    chain_id: Option<U64>,
    #[serde(rename = "type")]
    tx_type: Option<U64>,
    // Accepted and ignored, as geth does for calls.
    blobs: Option<Value>,
    commitments: Option<Value>,
    proofs: Option<Value>,
}

/// A parsed call object and the chain id it named, if any.
#[derive(Debug)]
pub struct Call {
    pub request: CallRequest,
    pub chain_id: Option<u64>,
}

impl FromArg for Call {
    fn from_arg(value: &Value) -> Result<Self, String> {
        let object: CallObject =
            serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
        let input = match (object.input, object.data) {
            (Some(input), Some(data)) if input != data => {
                return Err(
                    "both \"data\" and \"input\" are set and not equal. Please use \"input\" to pass transaction call data".into(),
                );
            }
            (Some(input), _) => input,
            (None, Some(data)) => data,
            (None, None) => Bytes::new(),
        };
        if object.gas_price.is_some()
            && (object.max_fee_per_gas.is_some() || object.max_priority_fee_per_gas.is_some())
        {
            return Err(
                "both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified".into(),
            );
        }
        if let (Some(cap), Some(tip)) = (object.max_fee_per_gas, object.max_priority_fee_per_gas)
            && tip > cap
        {
            return Err(format!(
                "maxFeePerGas ({cap}) < maxPriorityFeePerGas ({tip})"
            ));
        }
        let _ = (
            object.tx_type,
            object.blobs,
            object.commitments,
            object.proofs,
        );
        Ok(Self {
            request: CallRequest {
                from: object.from,
                to: object.to,
                gas: object.gas.map(|g| g.to()),
                gas_price: object.gas_price.map(|p| p.to()),
                max_fee_per_gas: object.max_fee_per_gas.map(|p| p.to()),
                max_priority_fee_per_gas: object.max_priority_fee_per_gas.map(|p| p.to()),
                max_fee_per_blob_gas: object.max_fee_per_blob_gas.map(|p| p.to()),
                value: object.value,
                input,
                nonce: object.nonce.map(|n| n.to()),
                access_list: object.access_list,
                blob_versioned_hashes: object.blob_versioned_hashes,
                authorization_list: object.authorization_list,
            },
            chain_id: object.chain_id.map(|c| c.to()),
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OverrideObject {
    balance: Option<U256>,
    nonce: Option<U64>,
    code: Option<Bytes>,
    state: Option<HashMap<B256, B256>>,
    state_diff: Option<HashMap<B256, B256>>,
    move_precompile_to_address: Option<Address>,
}

/// geth's state override set: address to account override.
pub struct Overrides(pub StateOverrides);

impl FromArg for Overrides {
    fn from_arg(value: &Value) -> Result<Self, String> {
        let map: HashMap<Address, OverrideObject> =
            serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
        let mut overrides = StateOverrides::new();
        for (address, o) in map {
            if o.state.is_some() && o.state_diff.is_some() {
                return Err(format!(
                    "account {address} has both 'state' and 'stateDiff'"
                ));
            }
            overrides.insert(
                address,
                AccountOverride {
                    balance: o.balance,
                    nonce: o.nonce.map(|n| n.to()),
                    code: o.code,
                    state: o.state,
                    state_diff: o.state_diff,
                    move_precompile_to: o.move_precompile_to_address,
                },
            );
        }
        Ok(Self(overrides))
    }
}

/// geth's block overrides (debug_traceCall's `blockOverrides`, eth_simulateV1's
/// `blockOverrides`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BlockOverridesObject {
    number: Option<U256>,
    difficulty: Option<U256>,
    time: Option<U64>,
    gas_limit: Option<U64>,
    fee_recipient: Option<Address>,
    prev_randao: Option<B256>,
    base_fee_per_gas: Option<U256>,
    blob_base_fee: Option<U256>,
    beacon_root: Option<B256>,
    withdrawals: Option<Vec<alloy_eips::eip4895::Withdrawal>>,
}

/// Block overrides, with the name of a field given that only eth_simulateV1 takes
/// (`beaconRoot`, `withdrawals`).
pub struct BlockOverridesArg {
    pub overrides: BlockOverrides,
    pub extra: Option<&'static str>,
    pub beacon_root: Option<B256>,
    pub withdrawals: Option<Vec<alloy_eips::eip4895::Withdrawal>>,
}

impl FromArg for BlockOverridesArg {
    fn from_arg(value: &Value) -> Result<Self, String> {
        let o: BlockOverridesObject =
            serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
        let small = |v: Option<U256>, what: &str| -> Result<Option<u64>, String> {
            v.map(|v| u64::try_from(v).map_err(|_| format!("{what} does not fit in 64 bits")))
                .transpose()
        };
        let extra = if o.beacon_root.is_some() {
            Some("beaconRoot")
        } else if o.withdrawals.is_some() {
            Some("withdrawals")
        } else {
            None
        };
        Ok(Self {
            overrides: BlockOverrides {
                number: small(o.number, "number")?,
                time: o.time.map(|t| t.to()),
                gas_limit: o.gas_limit.map(|g| g.to()),
                fee_recipient: o.fee_recipient,
                prev_randao: o.prev_randao,
                difficulty: o.difficulty,
                base_fee: small(o.base_fee_per_gas, "baseFeePerGas")?,
                blob_base_fee: o
                    .blob_base_fee
                    .map(|v| u128::try_from(v).map_err(|_| "blobBaseFee is too large".to_string()))
                    .transpose()?,
            },
            extra,
            beacon_root: o.beacon_root,
            withdrawals: o.withdrawals,
        })
    }
}

/// `Error(string)`'s selector.
const ERROR_SELECTOR: [u8; 4] = [0x08, 0xc3, 0x79, 0xa0];
/// `Panic(uint256)`'s selector.
const PANIC_SELECTOR: [u8; 4] = [0x4e, 0x48, 0x7b, 0x71];

/// The reason geth puts after `execution reverted: `, if the payload is an `Error(string)` or
/// a `Panic(uint256)`. The string is decoded as leniently as geth does: an offset and a length
/// that stay inside the payload, with no padding required after the bytes.
pub fn revert_reason(payload: &[u8]) -> Option<String> {
    let (selector, body) = payload.split_first_chunk::<4>()?;
    let word = |at: usize| -> Option<U256> {
        let bytes = body.get(at..at.checked_add(32)?)?;
        Some(U256::from_be_slice(bytes))
    };
    match *selector {
        ERROR_SELECTOR => {
            let offset: usize = word(0)?.try_into().ok()?;
            let length: usize = word(offset)?.try_into().ok()?;
            let start = offset.checked_add(32)?;
            let bytes = body.get(start..start.checked_add(length)?)?;
            Some(String::from_utf8_lossy(bytes).into_owned())
        }
        PANIC_SELECTOR => {
            let code = word(0)?;
            Some(match u64::try_from(code).ok().and_then(panic_name) {
                Some(name) => name.to_string(),
                None => format!("unknown panic code: {code:#x}"),
            })
        }
        _ => None,
    }
}

/// Solidity's panic codes, in geth's words.
fn panic_name(code: u64) -> Option<&'static str> {
    Some(match code {
        0x00 => "generic panic",
        0x01 => "assert(false)",
        0x11 => "arithmetic underflow or overflow",
        0x12 => "division or modulo by zero",
        0x21 => "enum overflow",
        0x22 => "invalid encoded storage byte array accessed",
        0x31 => "out-of-bounds array access; popping on an empty array",
        0x32 => "out-of-bounds access of an array or bytesN",
        0x41 => "out of memory",
        0x51 => "uninitialized function",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::hex;

    #[test]
    fn error_strings_decode_leniently() {
        // The rpc-compat payload: "user error", 10 bytes, not padded to 32.
        let payload = hex!(
            "08c379a0"
            "0000000000000000000000000000000000000000000000000000000000000020"
            "000000000000000000000000000000000000000000000000000000000000000a"
            "75736572206572726f72"
        );
        assert_eq!(revert_reason(&payload).as_deref(), Some("user error"));
        // A length running past the payload is not a reason.
        let mut short = payload.to_vec();
        short.truncate(payload.len() - 1);
        assert_eq!(revert_reason(&short), None);
        assert_eq!(revert_reason(&ERROR_SELECTOR), None);
        assert_eq!(revert_reason(&[]), None);
        assert_eq!(revert_reason(&hex!("deadbeef")), None);
    }

    #[test]
    fn panics_are_named() {
        let panic = |code: u8| {
            let mut payload = PANIC_SELECTOR.to_vec();
            payload.extend_from_slice(&[0u8; 31]);
            payload.push(code);
            revert_reason(&payload)
        };
        assert_eq!(
            panic(0x11).as_deref(),
            Some("arithmetic underflow or overflow")
        );
        assert_eq!(panic(0x12).as_deref(), Some("division or modulo by zero"));
        assert_eq!(
            panic(0x32).as_deref(),
            Some("out-of-bounds access of an array or bytesN")
        );
        assert_eq!(panic(0x01).as_deref(), Some("assert(false)"));
        assert_eq!(panic(0x99).as_deref(), Some("unknown panic code: 0x99"));
    }

    #[test]
    fn call_objects() {
        let call = Call::from_arg(&serde_json::json!({
            "from": "0x0000000000000000000000000000000000000001",
            "data": "0x01", "gas": "0x5208"
        }))
        .unwrap();
        assert_eq!(call.request.input, Bytes::from(vec![1u8]));
        assert_eq!(call.request.gas, Some(21000));
        let conflict = Call::from_arg(&serde_json::json!({"data": "0x01", "input": "0x02"}));
        assert!(
            conflict
                .unwrap_err()
                .contains("both \"data\" and \"input\"")
        );
        let same = Call::from_arg(&serde_json::json!({"data": "0x01", "input": "0x01"}));
        assert!(same.is_ok());
        assert!(
            Call::from_arg(&serde_json::json!({"gasPrice": "0x1", "maxFeePerGas": "0x1"})).is_err()
        );
        assert!(Call::from_arg(&serde_json::json!({"frm": "0x00"})).is_err());
    }
}
