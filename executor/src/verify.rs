//! Header rules checked against the parent before a block is executed (geth's
//! `VerifyHeader`, less the proof-of-work seal).

use crate::chain_spec::ChainSpec;
use alloy_consensus::{
    Header,
    constants::{EMPTY_OMMER_ROOT_HASH, MAXIMUM_EXTRA_DATA_SIZE},
};
use alloy_eips::{
    eip1559::{BaseFeeParams, INITIAL_BASE_FEE},
    eip4844::DATA_GAS_PER_BLOB,
};
use alloy_hardforks::{EthereumHardfork, EthereumHardforks};
use alloy_primitives::{B64, U256};

const MIN_GAS_LIMIT: u64 = 5000;
const MAX_GAS_LIMIT: u64 = 0x7fff_ffff_ffff_ffff;
const MIN_DIFFICULTY: u64 = 131_072;
const DAO_EXTRA_DATA: &[u8] = b"dao-hard-fork";
/// Blocks from the DAO fork block on that must carry `DAO_EXTRA_DATA`.
const DAO_EXTRA_RANGE: u64 = 10;

/// Checks `header` against its `parent`. `merged`: the block is past the merge.
pub fn check_header(
    spec: &ChainSpec,
    header: &Header,
    parent: &Header,
    merged: bool,
) -> Result<(), String> {
    if header.number != parent.number + 1 {
        return Err(format!(
            "number {} does not follow parent number {}",
            header.number, parent.number
        ));
    }
    if header.timestamp <= parent.timestamp {
        return Err(format!(
            "timestamp {} is not after parent timestamp {}",
            header.timestamp, parent.timestamp
        ));
    }
    if header.extra_data.len() > MAXIMUM_EXTRA_DATA_SIZE {
        return Err(format!(
            "extra data has {} bytes, at most 32 allowed",
            header.extra_data.len()
        ));
    }
    if header.gas_limit > MAX_GAS_LIMIT {
        return Err(format!("gas limit {} above 2^63-1", header.gas_limit));
    }
    if header.gas_used > header.gas_limit {
        return Err(format!(
            "gas used {} above gas limit {}",
            header.gas_used, header.gas_limit
        ));
    }
    check_gas_limit(spec, header, parent)?;
    check_base_fee(spec, header, parent)?;
    if let Some(dao) = spec.dao_fork_block()
        && (dao..dao + DAO_EXTRA_RANGE).contains(&header.number)
        && header.extra_data.as_ref() != DAO_EXTRA_DATA
    {
        return Err(format!(
            "DAO fork block {} must have extra data \"dao-hard-fork\"",
            header.number
        ));
    }
    if merged {
        if !header.difficulty.is_zero() {
            return Err(format!(
                "difficulty {} after the merge, must be 0",
                header.difficulty
            ));
        }
        if header.nonce != B64::ZERO {
            return Err(format!("nonce {} after the merge, must be 0", header.nonce));
        }
        if header.ommers_hash != EMPTY_OMMER_ROOT_HASH {
            return Err("uncles after the merge".into());
        }
    } else {
        let expected = pow_difficulty(spec, header.timestamp, parent);
        if header.difficulty != expected {
            return Err(format!(
                "difficulty {} but expected {}",
                header.difficulty, expected
            ));
        }
    }
    check_fork_fields(spec, header, parent)
}

fn check_gas_limit(spec: &ChainSpec, header: &Header, parent: &Header) -> Result<(), String> {
    let mut parent_limit = parent.gas_limit;
    if spec.is_london_active_at_block(header.number)
        && !spec.is_london_active_at_block(parent.number)
    {
        parent_limit *= BaseFeeParams::ethereum().elasticity_multiplier as u64;
    }
    let bound = parent_limit / 1024;
    if header.gas_limit.abs_diff(parent_limit) >= bound {
        return Err(format!(
            "gas limit {} differs from parent {} by {} or more",
            header.gas_limit, parent_limit, bound
        ));
    }
    if header.gas_limit < MIN_GAS_LIMIT {
        return Err(format!(
            "gas limit {} below minimum {MIN_GAS_LIMIT}",
            header.gas_limit
        ));
    }
    Ok(())
}

fn check_base_fee(spec: &ChainSpec, header: &Header, parent: &Header) -> Result<(), String> {
    match (header.base_fee_per_gas, expected_base_fee(spec, parent)) {
        (Some(_), None) => Err("base fee before London".into()),
        (None, Some(_)) => Err("missing base fee".into()),
        (Some(fee), Some(expected)) if fee != expected => {
            Err(format!("base fee {fee} but expected {expected}"))
        }
        _ => Ok(()),
    }
}

/// The base fee a child of `parent` must have, `None` before London.
pub fn expected_base_fee(spec: &ChainSpec, parent: &Header) -> Option<u64> {
    if !spec.is_london_active_at_block(parent.number + 1) {
        return None;
    }
    Some(if spec.is_london_active_at_block(parent.number) {
        parent
            .next_block_base_fee(BaseFeeParams::ethereum())
            .unwrap_or(INITIAL_BASE_FEE)
    } else {
        INITIAL_BASE_FEE
    })
}

/// The excess blob gas a child of `parent` at `timestamp` must have, `None` before Cancun.
pub fn expected_excess_blob_gas(spec: &ChainSpec, timestamp: u64, parent: &Header) -> Option<u64> {
    let params = spec.blob_params_at(timestamp)?;
    Some(if spec.is_cancun_active_at_timestamp(parent.timestamp) {
        params.next_block_excess_blob_gas_osaka(
            parent.excess_blob_gas.unwrap_or_default(),
            parent.blob_gas_used.unwrap_or_default(),
            parent.base_fee_per_gas.unwrap_or_default(),
        )
    } else {
        0
    })
}

fn presence<T>(name: &str, value: &Option<T>, required: bool) -> Result<(), String> {
    match (value.is_some(), required) {
        (true, false) => Err(format!("{name} present before its fork")),
        (false, true) => Err(format!("{name} missing")),
        _ => Ok(()),
    }
}

fn check_fork_fields(spec: &ChainSpec, header: &Header, parent: &Header) -> Result<(), String> {
    let t = header.timestamp;
    presence(
        "withdrawalsRoot",
        &header.withdrawals_root,
        spec.is_shanghai_active_at_timestamp(t),
    )?;
    let cancun = spec.is_cancun_active_at_timestamp(t);
    presence("blobGasUsed", &header.blob_gas_used, cancun)?;
    presence("excessBlobGas", &header.excess_blob_gas, cancun)?;
    presence(
        "parentBeaconBlockRoot",
        &header.parent_beacon_block_root,
        cancun,
    )?;
    presence(
        "requestsHash",
        &header.requests_hash,
        spec.is_prague_active_at_timestamp(t),
    )?;
    if let Some(params) = spec.blob_params_at(t) {
        let used = header.blob_gas_used.unwrap_or_default();
        if !used.is_multiple_of(DATA_GAS_PER_BLOB) {
            return Err(format!(
                "blob gas used {used} is not a multiple of {DATA_GAS_PER_BLOB}"
            ));
        }
        if used > params.max_blob_gas_per_block() {
            return Err(format!(
                "blob gas used {used} above the block maximum {}",
                params.max_blob_gas_per_block()
            ));
        }
        let expected = expected_excess_blob_gas(spec, t, parent).unwrap_or_default();
        let excess = header.excess_blob_gas.unwrap_or_default();
        if excess != expected {
            return Err(format!("excess blob gas {excess} but expected {expected}"));
        }
    }
    Ok(())
}

/// The proof-of-work difficulty a child of `parent` at `timestamp` must have (geth's
/// `CalcDifficulty` for Frontier, Homestead and Byzantium-style rules with bomb delays).
pub fn pow_difficulty(spec: &ChainSpec, timestamp: u64, parent: &Header) -> U256 {
    let number = parent.number + 1;
    let parent_diff = parent.difficulty;
    let step = parent_diff / U256::from(2048);
    let elapsed = timestamp.saturating_sub(parent.timestamp);
    let (adjust_up, adjust): (bool, u64) = if spec.is_byzantium_active_at_block(number) {
        let uncles = if parent.ommers_hash == EMPTY_OMMER_ROOT_HASH {
            1
        } else {
            2
        };
        signed_factor(uncles, elapsed / 9)
    } else if spec.is_homestead_active_at_block(number) {
        signed_factor(1, elapsed / 10)
    } else if elapsed < 13 {
        (true, 1)
    } else {
        (false, 1)
    };
    let delta = step * U256::from(adjust);
    let mut diff = if adjust_up {
        parent_diff + delta
    } else {
        parent_diff.saturating_sub(delta)
    };
    diff = diff.max(U256::from(MIN_DIFFICULTY));

    let bomb_delay = [
        (
            spec.is_ethereum_fork_active_at_block(EthereumHardfork::GrayGlacier, number),
            11_400_000u64,
        ),
        (
            spec.is_ethereum_fork_active_at_block(EthereumHardfork::ArrowGlacier, number),
            10_700_000,
        ),
        (spec.is_london_active_at_block(number), 9_700_000),
        (
            spec.is_ethereum_fork_active_at_block(EthereumHardfork::MuirGlacier, number),
            9_000_000,
        ),
        (spec.is_constantinople_active_at_block(number), 5_000_000),
        (spec.is_byzantium_active_at_block(number), 3_000_000),
    ]
    .into_iter()
    .find_map(|(active, delay)| active.then_some(delay));
    let fake_number = match bomb_delay {
        Some(delay) => parent.number.saturating_sub(delay - 1),
        None => number,
    };
    let period = fake_number / 100_000;
    if period > 1 {
        diff += U256::from(1) << (period - 2) as usize;
    }
    diff
}

/// max(base - quotient, -99) as (is positive, magnitude).
fn signed_factor(base: u64, quotient: u64) -> (bool, u64) {
    if quotient <= base {
        (true, base - quotient)
    } else {
        (false, (quotient - base).min(99))
    }
}
