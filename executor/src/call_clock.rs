//! eth_call's wall-clock limit without an inspector. revm runs an inspected call through its
//! inspector instruction by instruction, which takes about 40% of a loop's time, so a call's
//! deadline is kept instead by the instructions that can repeat or nest work: JUMP and JUMPI
//! (every loop takes one), the four calls and the two creations. Each checks a clock armed for
//! the calling thread; once the deadline has passed, every frame halts at its next such
//! instruction, so the whole call unwinds at once. The creations also note that the call
//! created a contract, which EIP-7610's check (an inspector hook) then has to see.

use revm::{
    bytecode::opcode,
    interpreter::{
        Host, Instruction, InstructionContext, InstructionExecResult, InstructionResult,
        InstructionTable,
        instructions::{contract, control},
        interpreter::EthInterpreter,
    },
};
use std::{cell::Cell, time::Instant};

/// How many checked instructions run between two readings of the time.
const READ_TIME_EVERY: u32 = 1024;

thread_local! {
    /// Checked instructions left before the next reading of the time: the only state the
    /// common case touches.
    static UNTIL_READING: Cell<u32> = const { Cell::new(u32::MAX) };
    /// The deadline of the calls running on this thread; `None`: disarmed.
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    static EXPIRED: Cell<bool> = const { Cell::new(false) };
    static CREATED: Cell<bool> = const { Cell::new(false) };
}

/// The clock of the calls run on this thread until it is dropped.
#[derive(Debug)]
pub(crate) struct Armed(());

/// Arms this thread's clock with `deadline`.
pub(crate) fn arm(deadline: Instant) -> Armed {
    DEADLINE.set(Some(deadline));
    EXPIRED.set(false);
    CREATED.set(false);
    UNTIL_READING.set(READ_TIME_EVERY);
    Armed(())
}

impl Armed {
    /// Whether the deadline passed while a call ran.
    pub(crate) fn expired(&self) -> bool {
        EXPIRED.get()
    }

    /// Whether a call ran CREATE or CREATE2 since the clock was armed or last `reset`.
    pub(crate) fn created(&self) -> bool {
        CREATED.get()
    }

    /// Forgets the creations seen so far (the deadline stays).
    pub(crate) fn reset(&self) {
        CREATED.set(false);
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        DEADLINE.set(None);
        EXPIRED.set(false);
        CREATED.set(false);
        UNTIL_READING.set(u32::MAX);
    }
}

/// Counts a checked instruction: an error halts the frame once the deadline has passed.
#[inline(always)]
fn tick() -> InstructionExecResult {
    let left = UNTIL_READING.get() - 1;
    UNTIL_READING.set(left);
    if left == 0 {
        return read_time();
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn read_time() -> InstructionExecResult {
    let Some(deadline) = DEADLINE.get() else {
        UNTIL_READING.set(u32::MAX);
        return Ok(());
    };
    if EXPIRED.get() || Instant::now() >= deadline {
        EXPIRED.set(true);
        // Every later checked instruction comes back here, and halts its frame too.
        UNTIL_READING.set(1);
        return Err(InstructionResult::OutOfGas);
    }
    UNTIL_READING.set(READ_TIME_EVERY);
    Ok(())
}

macro_rules! checked {
    ($($name:ident: $opcode:path => $inner:expr, creates $creates:expr;)*) => {
        $(
            fn $name<H: Host + ?Sized>(
                context: InstructionContext<'_, H, EthInterpreter>,
            ) -> InstructionExecResult {
                if $creates {
                    CREATED.set(true);
                }
                tick()?;
                $inner(context)
            }
        )*

        /// Puts the checked instructions into `table`.
        pub(crate) fn install<H: Host>(table: &mut InstructionTable<EthInterpreter, H>) {
            $(table[$opcode as usize] = Instruction::new($name::<H>);)*
        }
    };
}

checked! {
    jump: opcode::JUMP => control::jump, creates false;
    jumpi: opcode::JUMPI => control::jumpi, creates false;
    call: opcode::CALL => contract::call::<{ opcode::CALL }, _, _>, creates false;
    call_code: opcode::CALLCODE => contract::call::<{ opcode::CALLCODE }, _, _>, creates false;
    delegate_call: opcode::DELEGATECALL
        => contract::call::<{ opcode::DELEGATECALL }, _, _>, creates false;
    static_call: opcode::STATICCALL
        => contract::call::<{ opcode::STATICCALL }, _, _>, creates false;
    create: opcode::CREATE => contract::create::<false, _, _>, creates true;
    create2: opcode::CREATE2 => contract::create::<true, _, _>, creates true;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_clock_expires_after_its_deadline_and_notes_creations() {
        let checked = |creates: bool| {
            if creates {
                CREATED.set(true);
            }
            tick()
        };
        let armed = arm(Instant::now() + Duration::from_secs(60));
        for _ in 0..READ_TIME_EVERY * 2 {
            assert_eq!(checked(false), Ok(()));
        }
        assert!(!armed.expired() && !armed.created());
        assert_eq!(checked(true), Ok(()));
        assert!(armed.created());
        armed.reset();
        assert!(!armed.created());
        drop(armed);

        let armed = arm(Instant::now());
        let mut halted = Ok(());
        for _ in 0..READ_TIME_EVERY {
            halted = checked(false);
        }
        assert_eq!(halted, Err(InstructionResult::OutOfGas));
        assert!(armed.expired());
        // Every later checked instruction halts too.
        assert_eq!(checked(false), Err(InstructionResult::OutOfGas));
        drop(armed);
        // Disarmed: nothing halts, however long.
        for _ in 0..READ_TIME_EVERY * 2 {
            assert_eq!(checked(false), Ok(()));
        }
    }
}
