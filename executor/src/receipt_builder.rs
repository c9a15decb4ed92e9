//! Receipts of executed transactions, and their blooms.
//!
//! alloy-evm's receipt builder computes each receipt's bloom as the receipt is built, on the
//! executing thread, four or so keccak hashes a log one after another. Ingest builds receipts
//! without it and fills the blooms in afterwards with [`fill_blooms`], on the thread that also
//! makes the receipts root while the executing thread walks the state trie, hashing the
//! block's logs' addresses and topics eight at a time.

use alloy_consensus::{
    Eip658Value, Receipt, ReceiptEnvelope, ReceiptWithBloom, TxEnvelope, TxType,
};
use alloy_evm::{
    Evm,
    eth::receipt_builder::{ReceiptBuilder, ReceiptBuilderCtx},
};
use alloy_primitives::{Bloom, BloomInput};
use quarry_storage::keccak::keccak256_each;

/// Builds receipts as alloy-evm's `AlloyReceiptBuilder` does, with an empty bloom that
/// [`fill_blooms`] must fill before anything reads it.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ReceiptsWithoutBloom;

impl ReceiptBuilder for ReceiptsWithoutBloom {
    type Transaction = TxEnvelope;
    type Receipt = ReceiptEnvelope;

    fn build_receipt<E: Evm>(&self, ctx: ReceiptBuilderCtx<'_, TxType, E>) -> ReceiptEnvelope {
        let receipt = ReceiptWithBloom {
            receipt: Receipt {
                status: Eip658Value::Eip658(ctx.result.is_success()),
                cumulative_gas_used: ctx.cumulative_gas_used,
                logs: ctx.result.into_logs(),
            },
            logs_bloom: Bloom::ZERO,
        };
        match ctx.tx_type {
            TxType::Legacy => ReceiptEnvelope::Legacy(receipt),
            TxType::Eip2930 => ReceiptEnvelope::Eip2930(receipt),
            TxType::Eip1559 => ReceiptEnvelope::Eip1559(receipt),
            TxType::Eip4844 => ReceiptEnvelope::Eip4844(receipt),
            TxType::Eip7702 => ReceiptEnvelope::Eip7702(receipt),
        }
    }
}

/// Sets each receipt's bloom from its logs: every log's address and topics, hashed eight at a
/// time.
pub(crate) fn fill_blooms(receipts: &mut [ReceiptEnvelope]) {
    // Each bloom input with the receipt it belongs to.
    let mut inputs: Vec<(usize, &[u8])> = Vec::new();
    for (index, receipt) in receipts.iter().enumerate() {
        for log in receipt.logs() {
            inputs.push((index, log.address.as_slice()));
            inputs.extend(log.topics().iter().map(|topic| (index, topic.as_slice())));
        }
    }
    let bytes: Vec<&[u8]> = inputs.iter().map(|(_, input)| *input).collect();
    let mut blooms = vec![Bloom::ZERO; receipts.len()];
    for ((index, _), hash) in inputs.iter().zip(keccak256_each(&bytes)) {
        blooms[*index].accrue(BloomInput::Hash(hash));
    }
    for (receipt, bloom) in receipts.iter_mut().zip(blooms) {
        if let Some(with_bloom) = receipt.as_receipt_with_bloom_mut() {
            with_bloom.logs_bloom = bloom;
        }
    }
}

/// A stored receipt as the chain encodes it (what the receipts root commits to).
pub fn consensus_receipt(
    receipt: &quarry_storage::StoredReceipt,
    bloom: Bloom,
) -> Result<ReceiptEnvelope, quarry_storage::Error> {
    let tx_type = TxType::try_from(receipt.tx_type).map_err(|_| {
        quarry_storage::Error::Corrupt(format!(
            "receipt of unknown transaction type {}",
            receipt.tx_type
        ))
    })?;
    let status = match receipt.outcome {
        quarry_storage::ReceiptOutcome::PostState(root) => Eip658Value::PostState(root),
        quarry_storage::ReceiptOutcome::Status(ok) => Eip658Value::Eip658(ok),
    };
    let inner = Receipt {
        status,
        cumulative_gas_used: receipt.cumulative_gas_used,
        logs: receipt.logs.clone(),
    };
    Ok(ReceiptEnvelope::from_typed(
        tx_type,
        ReceiptWithBloom::new(inner, bloom),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_consensus::TxReceipt;
    use alloy_primitives::{Address, B256, Bytes, Log, LogData};

    /// Blooms filled in afterwards equal the ones alloy computes log by log, for receipts
    /// with no log, one, and more logs than hashes go together.
    #[test]
    fn filled_blooms_equal_alloys() {
        let log = |seed: u8, topics: usize| Log {
            address: Address::repeat_byte(seed),
            data: LogData::new_unchecked(
                (0..topics)
                    .map(|t| B256::repeat_byte(seed.wrapping_mul(7).wrapping_add(t as u8)))
                    .collect(),
                Bytes::from(vec![seed]),
            ),
        };
        let logs_of = [
            vec![],
            vec![log(1, 3)],
            (2..13).map(|s| log(s, s as usize % 5)).collect(),
        ];
        let mut receipts: Vec<ReceiptEnvelope> = logs_of
            .iter()
            .map(|logs| {
                ReceiptEnvelope::Eip1559(ReceiptWithBloom {
                    receipt: Receipt {
                        status: Eip658Value::Eip658(true),
                        cumulative_gas_used: 21_000,
                        logs: logs.clone(),
                    },
                    logs_bloom: Bloom::ZERO,
                })
            })
            .collect();
        fill_blooms(&mut receipts);
        for (receipt, logs) in receipts.iter().zip(&logs_of) {
            let expected = alloy_primitives::logs_bloom(logs.iter());
            assert_eq!(receipt.bloom(), expected);
        }
        assert_ne!(receipts[2].bloom(), Bloom::ZERO);
    }
}
