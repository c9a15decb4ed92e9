//! State overrides (geth's state override set): what a call, a trace or a simulated block
//! changes in accounts before it runs, and the precompile side of them.

use alloy_evm::precompiles::{DynPrecompile, PrecompileInput, PrecompilesMap};
use alloy_primitives::{Address, B256, Bytes, U256};
use revm::{
    precompile::{PrecompileSpecId, Precompiles},
    primitives::hardfork::SpecId,
};
use std::collections::{BTreeMap, HashMap, HashSet};

/// What a call overrides in one account before it runs (geth's state override set).
#[derive(Debug, Clone, Default)]
pub struct AccountOverride {
    pub balance: Option<U256>,
    pub nonce: Option<u64>,
    pub code: Option<Bytes>,
    /// Replaces the whole storage.
    pub state: Option<HashMap<B256, B256>>,
    /// Changes these slots only.
    pub state_diff: Option<HashMap<B256, B256>>,
    /// Moves the precompile at this address there (geth's `movePrecompileToAddress`).
    pub move_precompile_to: Option<Address>,
}

pub type StateOverrides = HashMap<Address, AccountOverride>;

/// An override set that cannot apply: geth's message (served with its "server error" code).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct OverrideError(pub String);

/// geth's precompile side of the overrides: an overridden precompile address is a precompile
/// no more (its override, code included, applies), and `movePrecompileToAddress` moves one.
/// Returns the precompile addresses that are precompiles no more.
pub fn move_precompiles(
    precompiles: &mut PrecompilesMap,
    overrides: &StateOverrides,
    spec: SpecId,
) -> Result<Vec<Address>, OverrideError> {
    let mut addresses: Vec<&Address> = overrides.keys().collect();
    addresses.sort();
    let mut moved_to = HashSet::new();
    let mut moves = BTreeMap::new();
    let mut replaced = Vec::new();
    for address in addresses {
        if moved_to.contains(address) {
            return Err(OverrideError(format!(
                "account {address} has already been overridden by a precompile"
            )));
        }
        let is_precompile = precompiles.get(address).is_some();
        if let Some(target) = overrides[address].move_precompile_to {
            if !is_precompile {
                return Err(OverrideError(format!(
                    "account {address} is not a precompile"
                )));
            }
            if overrides.contains_key(&target) {
                return Err(OverrideError(format!(
                    "account {target} is already overridden"
                )));
            }
            moved_to.insert(target);
            moves.insert(*address, target);
        }
        if is_precompile {
            replaced.push(*address);
            precompiles.apply_precompile(address, |_| None);
        }
    }
    let builtins = Precompiles::new(PrecompileSpecId::from_spec_id(spec));
    for (from, to) in moves {
        let Some(builtin) = builtins.get(&from).cloned() else {
            continue;
        };
        // Served by the dynamic lookup, not the static map: geth warms only the fork's own
        // precompile addresses, so the moved one is cold at its new address until accessed.
        precompiles.map_precompile_lookup(move |address, previous| {
            if *address != to {
                return previous.and_then(|lookup| lookup.lookup(address));
            }
            let builtin = builtin.clone();
            let id = builtin.id().clone();
            Some(DynPrecompile::from((
                id,
                move |input: PrecompileInput<'_>| {
                    builtin.execute(input.data, input.gas, input.reservoir)
                },
            )))
        });
    }
    Ok(replaced)
}
