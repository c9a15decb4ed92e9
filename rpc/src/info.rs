//! eth_config, eth_capabilities, eth_baseFee and eth_getStorageValues: their parameters and
//! registration on the read pool.

use crate::{ReadPool, ServeError, block_or_latest, params::FromArg, register_snapshot};
use alloy_primitives::{Address, B256};
use serde_json::Value;
use std::collections::BTreeMap;

/// eth_getStorageValues' request: address to slots.
struct SlotRequests(BTreeMap<Address, Vec<B256>>);

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

pub fn register(module: &mut crate::Registry, pool: &ReadPool) -> Result<(), ServeError> {
    register_snapshot(module, pool, "eth_config", &[], 0, |node, tx, _| {
        node.eth_config(tx)
    })?;
    register_snapshot(module, pool, "eth_capabilities", &[], 0, |node, tx, _| {
        node.capabilities(tx)
    })?;
    register_snapshot(module, pool, "eth_baseFee", &[], 0, |node, tx, _| {
        node.next_base_fee(tx)
    })?;
    register_snapshot(
        module,
        pool,
        "eth_getStorageValues",
        &["requests", "block"],
        1,
        |node, tx, args| {
            let SlotRequests(requests) = args.required(0)?;
            node.storage_values(tx, &requests, block_or_latest(args, 1)?)
        },
    )
}
