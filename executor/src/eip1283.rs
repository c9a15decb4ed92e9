//! Constantinople's SSTORE gas as first specified (EIP-1283 net metering), for chains that
//! activate Constantinople without Petersburg, which removed it again at the same block on
//! mainnet. Test chains do (the BlockchainTests' `Constantinople` network, as geth runs it);
//! revm knows only Petersburg's rules, so block execution swaps in this accounting.

use crate::chain_spec::ChainSpec;
use alloy_evm::EthEvm;
use alloy_hardforks::EthereumHardforks;
use revm::{
    bytecode::opcode,
    context::journaled_state::StateLoad,
    context_interface::cfg::{GasId, GasParams},
    interpreter::{
        Host, Instruction, InstructionContext, InstructionExecResult, InstructionResult,
        InstructionTable, SStoreResult, instructions::host::sstore_with_gas_accounting,
        interpreter::EthInterpreter,
    },
    primitives::Address,
};

/// EIP-1283's constants: a no-op or dirty write costs an SLOAD (200).
const SLOAD_GAS: u64 = 200;
const SSTORE_SET_GAS: u64 = 20_000;
const SSTORE_RESET_GAS: u64 = 5_000;
const SSTORE_CLEARS_REFUND: i64 = 15_000;

/// The gas and refund of one SSTORE under EIP-1283.
fn net_metering(v: &SStoreResult) -> (u64, i64) {
    if v.is_new_eq_present() {
        return (SLOAD_GAS, 0);
    }
    if v.is_original_eq_present() {
        if v.is_original_zero() {
            return (SSTORE_SET_GAS, 0);
        }
        let refund = if v.is_new_zero() {
            SSTORE_CLEARS_REFUND
        } else {
            0
        };
        return (SSTORE_RESET_GAS, refund);
    }
    let mut refund = 0;
    if !v.is_original_zero() {
        if v.is_present_zero() {
            refund -= SSTORE_CLEARS_REFUND;
        } else if v.is_new_zero() {
            refund += SSTORE_CLEARS_REFUND;
        }
    }
    if v.is_original_eq_new() {
        let cost = if v.is_original_zero() {
            SSTORE_SET_GAS
        } else {
            SSTORE_RESET_GAS
        };
        refund += (cost - SLOAD_GAS) as i64;
    }
    (SLOAD_GAS, refund)
}

fn sstore<H: Host + ?Sized>(
    context: InstructionContext<'_, H, EthInterpreter>,
) -> InstructionExecResult {
    sstore_with_gas_accounting(
        context,
        |context, _target: Address, load: &StateLoad<SStoreResult>| {
            let (gas, refund) = net_metering(&load.data);
            if !context.interpreter.gas.record_regular_cost(gas) {
                return Err(InstructionResult::OutOfGas);
            }
            context.interpreter.gas.record_refund(refund);
            Ok(())
        },
    )
}

/// Whether block `number` meters SSTORE by EIP-1283: Constantinople without Petersburg.
fn applies(spec: &ChainSpec, number: u64) -> bool {
    spec.is_constantinople_active_at_block(number) && !spec.is_petersburg_active_at_block(number)
}

/// `evm` (made with an inspector) for block `number`: with EIP-1283's SSTORE when it applies.
pub(crate) fn for_block<DB: alloy_evm::Database, I, P>(
    spec: &ChainSpec,
    number: u64,
    evm: EthEvm<DB, I, P>,
) -> EthEvm<DB, I, P> {
    if !applies(spec, number) {
        return evm;
    }
    let mut inner = evm.into_inner();
    install(
        inner.instruction.instruction_table_mut(),
        &mut inner.ctx.cfg.gas_params,
    );
    EthEvm::new(inner, true)
}

/// Makes `table`'s SSTORE EIP-1283's. `gas_params` must be the EVM's: revm charges their
/// static SSTORE cost (Petersburg's 5,000) before the accounting, which charges it all here.
fn install<H: Host>(table: &mut InstructionTable<EthInterpreter, H>, gas_params: &mut GasParams) {
    gas_params.override_gas([(GasId::sstore_static(), 0)]);
    table[opcode::SSTORE as usize] = Instruction::new(sstore::<H>);
}

#[cfg(test)]
mod tests {
    use super::*;
    use revm::primitives::U256;

    fn store(original: u64, present: u64, new: u64) -> (u64, i64) {
        net_metering(&SStoreResult {
            original_value: U256::from(original),
            present_value: U256::from(present),
            new_value: U256::from(new),
        })
    }

    /// The cases of EIP-1283's test table (original, current, new → gas, refund).
    #[test]
    fn eip_1283_table() {
        assert_eq!(store(0, 0, 0), (200, 0));
        assert_eq!(store(0, 0, 1), (20_000, 0));
        assert_eq!(store(0, 1, 0), (200, 19_800));
        assert_eq!(store(0, 1, 2), (200, 0));
        assert_eq!(store(0, 1, 1), (200, 0));
        assert_eq!(store(1, 0, 0), (200, 0));
        assert_eq!(store(1, 0, 1), (200, -15_000 + 4_800));
        assert_eq!(store(1, 0, 2), (200, -15_000));
        assert_eq!(store(1, 1, 0), (5_000, 15_000));
        assert_eq!(store(1, 1, 2), (5_000, 0));
        assert_eq!(store(1, 2, 0), (200, 15_000));
        assert_eq!(store(1, 2, 1), (200, 4_800));
        assert_eq!(store(1, 2, 3), (200, 0));
    }
}
