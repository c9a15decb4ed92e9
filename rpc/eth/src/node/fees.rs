//! Fees: eth_feeHistory, eth_blobBaseFee, and geth's fee oracle behind
//! eth_maxPriorityFeePerGas and eth_gasPrice.

use super::{Node, Reads, Snapshot};
use crate::{
    cache::CachedBlock,
    params::BlockTag,
    rpc_error::{Result, RpcError},
};
use alloy_primitives::{B256, U64, U128};
use serde::Serialize;

/// geth's fee oracle remembers its last answer: it is returned again while the head has not
/// moved, and stands in for blocks that give no sample.
#[derive(Debug, Clone, Copy)]
pub(super) struct TipSuggestion {
    pub(super) head: Option<B256>,
    pub(super) tip: u128,
}

impl Node {
    /// eth_feeHistory with geth's rules: up to `MAX_FEE_HISTORY` blocks ending at `newest`,
    /// base fees (and blob base fees) including the block after it, and per block the
    /// effective tips at the given percentiles of gas used.
    pub fn fee_history(
        &self,
        tx: &Snapshot,
        count: u64,
        newest: BlockTag,
        percentiles: &[f64],
    ) -> Result<FeeHistory> {
        let spec = self.spec.as_ref().ok_or(RpcError::NoChain)?;
        let newest = self.tag_number(tx, newest)?;
        if newest > Self::head(tx)? {
            return Err(RpcError::HeaderNotFound);
        }
        let count = count.min(MAX_FEE_HISTORY).min(newest + 1);
        let oldest = newest + 1 - count;
        let mut history = FeeHistory {
            oldest_block: U64::from(oldest),
            reward: (!percentiles.is_empty()).then(Vec::new),
            base_fee_per_gas: Vec::new(),
            gas_used_ratio: Vec::new(),
            base_fee_per_blob_gas: Vec::new(),
            blob_gas_used_ratio: Vec::new(),
        };
        if count == 0 {
            return Ok(history);
        }
        let mut last = None;
        for number in oldest..=newest {
            let block = self
                .stored_block(tx, number)?
                .ok_or(RpcError::HeaderNotFound)?;
            let header = &block.header;
            history
                .base_fee_per_gas
                .push(U128::from(header.base_fee_per_gas.unwrap_or_default()));
            history
                .gas_used_ratio
                .push(GoFloat(header.gas_used as f64 / header.gas_limit as f64));
            let blob_params = spec.blob_params_at(header.timestamp);
            history.base_fee_per_blob_gas.push(U128::from(
                match (header.excess_blob_gas, blob_params) {
                    (Some(excess), Some(params)) => params.calc_blob_fee(excess),
                    _ => 0,
                },
            ));
            history
                .blob_gas_used_ratio
                .push(GoFloat(match (header.blob_gas_used, blob_params) {
                    (Some(used), Some(params)) if params.max_blob_gas_per_block() > 0 => {
                        used as f64 / params.max_blob_gas_per_block() as f64
                    }
                    _ => 0.0,
                }));
            if let Some(rewards) = history.reward.as_mut() {
                let receipts = self
                    .receipts_of(&Reads::Snapshot(tx), &block)?
                    .ok_or(RpcError::HeaderNotFound)?;
                rewards.push(block_rewards(&block, &receipts.list, percentiles));
            }
            last = Some(block);
        }
        if let Some(block) = last {
            let header = &block.header;
            history.base_fee_per_gas.push(U128::from(
                quarry_executor::verify::expected_base_fee(spec, header).unwrap_or_default(),
            ));
            let next_blob_fee =
                quarry_executor::verify::expected_excess_blob_gas(spec, header.timestamp, header)
                    .zip(spec.blob_params_at(header.timestamp))
                    .map_or(0, |(excess, params)| params.calc_blob_fee(excess));
            history
                .base_fee_per_blob_gas
                .push(U128::from(next_blob_fee));
        }
        Ok(history)
    }

    /// eth_blobBaseFee: the blob base fee of the head block, as geth answers (`null` before
    /// Cancun).
    pub fn blob_base_fee(&self, tx: &Snapshot) -> Result<Option<alloy_primitives::U128>> {
        let spec = self.spec.as_ref().ok_or(RpcError::NoChain)?;
        let head = Self::head(tx)?;
        let header = tx.header(head)?.ok_or(RpcError::HeaderNotFound)?;
        let (Some(excess), Some(params)) = (
            header.excess_blob_gas,
            spec.blob_params_at(header.timestamp),
        ) else {
            return Ok(None);
        };
        Ok(Some(alloy_primitives::U128::from(
            params.calc_blob_fee(excess),
        )))
    }

    /// eth_maxPriorityFeePerGas: geth's fee oracle over the last `TIP_BLOCKS` blocks (more
    /// when blocks give fewer than two samples): the three lowest effective tips of each
    /// block, ignoring tips under 2 wei and the miner's own transactions, at the 60th
    /// percentile, at most 500 gwei.
    pub fn suggest_tip(&self, tx: &Snapshot) -> Result<U128> {
        let (head, head_hash) = tx.head()?.ok_or(RpcError::HeaderNotFound)?;
        self.tip_at(tx, head, head_hash).map(U128::from)
    }

    /// The suggested tip with block `head` (hash `head_hash`) as the head.
    fn tip_at(&self, tx: &Snapshot, head: u64, head_hash: B256) -> Result<u128> {
        let last = *self.last_tip.lock().map_err(|_| poisoned())?;
        if last.head == Some(head_hash) {
            return Ok(last.tip);
        }
        let tip = suggest_tip(head, last.tip, |number| {
            let block = self
                .stored_block(tx, number)?
                .ok_or(RpcError::HeaderNotFound)?;
            lowest_tips(&block)
        })?;
        *self.last_tip.lock().map_err(|_| poisoned())? = TipSuggestion {
            head: Some(head_hash),
            tip,
        };
        Ok(tip)
    }

    /// eth_gasPrice: the suggested tip plus the head's base fee, as geth answers.
    pub fn gas_price(&self, tx: &Snapshot) -> Result<U128> {
        let (head, head_hash) = tx.head()?.ok_or(RpcError::HeaderNotFound)?;
        let tip = self.tip_at(tx, head, head_hash)?;
        let header = tx.header(head)?.ok_or(RpcError::HeaderNotFound)?;
        Ok(U128::from(tip.saturating_add(u128::from(
            header.base_fee_per_gas.unwrap_or_default(),
        ))))
    }
}

/// eth_feeHistory answers at most this many blocks, as geth's default.
const MAX_FEE_HISTORY: u64 = 1024;

/// eth_feeHistory's answer, in geth's field order.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FeeHistory {
    oldest_block: U64,
    #[serde(skip_serializing_if = "Option::is_none")]
    reward: Option<Vec<Vec<U128>>>,
    base_fee_per_gas: Vec<U128>,
    gas_used_ratio: Vec<GoFloat>,
    base_fee_per_blob_gas: Vec<U128>,
    blob_gas_used_ratio: Vec<GoFloat>,
}

/// A float written as Go's encoding/json writes it (geth's ratios): integral values without a
/// fraction (`0`, `1`), exponents below 1e-6 with two digits (`1e-07`).
#[derive(Debug, Clone, Copy)]
pub struct GoFloat(pub f64);

impl Serialize for GoFloat {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        let x = self.0;
        if x.fract() == 0.0 && x.abs() < 1e21 {
            return serializer.serialize_i64(x as i64);
        }
        if x.abs() >= 1e-6 && x.abs() < 1e21 {
            return serializer.serialize_f64(x);
        }
        let text = format!("{x:e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let (sign, digits) = match exponent.strip_prefix('-') {
            Some(digits) => ("-", digits),
            None => ("+", exponent),
        };
        let go = format!("{mantissa}e{sign}{digits:0>2}");
        let raw =
            serde_json::value::RawValue::from_string(go).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

/// The effective tips at `percentiles` of a block's gas used, as geth's fee oracle computes
/// them: transactions sorted by tip, each weighing its gas used.
fn block_rewards(
    block: &CachedBlock,
    receipts: &[quarry_storage::StoredReceipt],
    percentiles: &[f64],
) -> Vec<U128> {
    let base_fee = block.header.base_fee_per_gas;
    let mut tips: Vec<(u128, u64)> = block
        .body
        .transactions
        .iter()
        .zip(receipts)
        .map(|(transaction, receipt)| {
            (
                effective_tip(transaction, base_fee).unwrap_or_default(),
                receipt.gas_used,
            )
        })
        .collect();
    if tips.is_empty() {
        return vec![U128::ZERO; percentiles.len()];
    }
    tips.sort_by_key(|&(tip, _)| tip);
    let mut index = 0;
    let mut gas_so_far = tips[0].1;
    percentiles
        .iter()
        .map(|p| {
            let threshold = (block.header.gas_used as f64 * p / 100.0) as u64;
            while gas_so_far < threshold && index < tips.len() - 1 {
                index += 1;
                gas_so_far += tips[index].1;
            }
            U128::from(tips[index].0)
        })
        .collect()
}

/// What a transaction pays its block's miner per gas: `None` when its fee cap is under the
/// base fee.
fn effective_tip(
    transaction: &impl alloy_consensus::Transaction,
    base_fee: Option<u64>,
) -> Option<u128> {
    match base_fee {
        Some(base_fee) => transaction.effective_tip_per_gas(base_fee),
        None => Some(
            transaction
                .max_priority_fee_per_gas()
                .unwrap_or_else(|| transaction.max_fee_per_gas()),
        ),
    }
}

/// geth's fee-oracle suggestion from the blocks below `head` (the genesis block is never
/// sampled): `lowest_tips` gives a block's samples, `last` is the previous suggestion, which
/// stands in for a block without samples.
fn suggest_tip(
    head: u64,
    last: u128,
    mut lowest_tips: impl FnMut(u64) -> Result<Vec<u128>>,
) -> Result<u128> {
    // geth asks for the blocks in parallel; they are read here newest first, the order geth's
    // answers arrive in when every block takes as long.
    let oldest = head.saturating_sub(TIP_BLOCKS as u64 - 1).max(1);
    let mut pending: std::collections::VecDeque<u64> = (oldest..=head).rev().collect();
    let mut next = oldest - 1;
    let mut samples = Vec::new();
    while let Some(number) = pending.pop_front() {
        let mut tips = lowest_tips(number)?;
        if tips.is_empty() {
            tips.push(last);
        }
        // A block with a single sample widens the window, up to twice the blocks.
        if tips.len() == 1 && samples.len() + 1 + pending.len() < TIP_BLOCKS * 2 && next > 0 {
            pending.push_back(next);
            next -= 1;
        }
        samples.extend(tips);
    }
    samples.sort_unstable();
    Ok(samples
        .get(samples.len().saturating_sub(1) * TIP_PERCENTILE / 100)
        .copied()
        .unwrap_or(last)
        .min(MAX_TIP))
}

/// The fee oracle's samples from one block: its lowest effective tips (at most
/// `TIP_SAMPLES`), from transactions not sent by the block's miner.
fn lowest_tips(block: &CachedBlock) -> Result<Vec<u128>> {
    let base_fee = block.header.base_fee_per_gas;
    let mut tips = Vec::with_capacity(block.body.transactions.len());
    for (index, transaction) in block.body.transactions.iter().enumerate() {
        let Some(tip) = effective_tip(transaction, base_fee) else {
            continue;
        };
        if tip >= TIP_IGNORE_UNDER && block.sender(index)? != block.header.beneficiary {
            tips.push(tip);
        }
    }
    tips.sort_unstable();
    tips.truncate(TIP_SAMPLES);
    Ok(tips)
}

fn poisoned() -> RpcError {
    RpcError::Internal("the fee oracle's lock was poisoned".into())
}

/// geth's fee oracle defaults (`--gpo.*`).
const TIP_BLOCKS: usize = 20;
const TIP_PERCENTILE: usize = 60;
const TIP_SAMPLES: usize = 3;
const TIP_IGNORE_UNDER: u128 = 2;
const MAX_TIP: u128 = 500_000_000_000;
/// geth's starting suggestion: its default miner tip, 0.001 gwei.
pub(super) const DEFAULT_TIP: u128 = 1_000_000;

#[cfg(test)]
mod tests {
    use super::{GoFloat, MAX_TIP, suggest_tip};
    use std::cell::RefCell;

    const GWEI: u128 = 1_000_000_000;

    /// The suggestion over a chain whose blocks give `tips(number)`, and the blocks it read.
    fn suggestion(head: u64, last: u128, tips: impl Fn(u64) -> Vec<u128>) -> (u128, Vec<u64>) {
        let read = RefCell::new(Vec::new());
        let tip = suggest_tip(head, last, |number| {
            read.borrow_mut().push(number);
            Ok(tips(number))
        })
        .unwrap();
        (tip, read.into_inner())
    }

    #[test]
    fn the_tip_is_the_60th_percentile_of_the_last_20_blocks() {
        // 60 samples of 1, 2 and 3 gwei: index 59 * 60 / 100 = 35 is a 2 gwei sample.
        let (tip, read) = suggestion(100, GWEI, |_| vec![GWEI, 2 * GWEI, 3 * GWEI]);
        assert_eq!(tip, 2 * GWEI);
        assert_eq!(read, (81..=100).rev().collect::<Vec<_>>());
        // Newer blocks with higher tips move it.
        // Samples 81, 81, 81, 82, ...: index 35 is block 81 + 35 / 3.
        let (tip, _) = suggestion(100, GWEI, |n| vec![n as u128 * GWEI; 3]);
        assert_eq!(tip, 92 * GWEI);
    }

    #[test]
    fn empty_blocks_stand_in_the_last_suggestion_and_widen_the_window() {
        let (tip, read) = suggestion(100, 7, |_| Vec::new());
        assert_eq!(tip, 7);
        // Each single-sample block asks for one more, up to twice the 20 blocks.
        assert_eq!(read.len(), 40);
        assert_eq!(read.last(), Some(&61));
        // The genesis block is never sampled, and a chain of only genesis keeps the last tip.
        let (_, read) = suggestion(5, 7, |_| Vec::new());
        assert_eq!(read, vec![5, 4, 3, 2, 1]);
        assert_eq!(suggestion(0, 7, |_| vec![GWEI]).0, 7);
    }

    #[test]
    fn the_tip_is_capped_at_500_gwei() {
        assert_eq!(suggestion(30, GWEI, |_| vec![10_000 * GWEI]).0, MAX_TIP);
    }

    #[test]
    fn floats_are_written_as_go_writes_them() {
        let json = |x: f64| serde_json::to_string(&GoFloat(x)).unwrap();
        assert_eq!(json(0.0), "0");
        assert_eq!(json(1.0), "1");
        assert_eq!(json(0.00072868), "0.00072868");
        assert_eq!(json(0.5), "0.5");
        assert_eq!(json(1.5e-7), "1.5e-07");
    }
}
