//! Why a wave stopped: [`WaveFault`], what the command processor turns into a queue error
//! (illegal instruction, memory violation, trap), naming the instruction.

use std::fmt;

use super::Op;
use super::decode::Undecodable;
use super::inst::{Enc, Inst};
use super::memory::MemFault;

/// What went wrong (see [`WaveFault`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The machine code does not decode (an unknown opcode or a form the interpreter does not
    /// run).
    Undecodable(Undecodable),
    /// The instruction decodes but the interpreter does not execute it.
    Unsupported {
        /// Its encoding.
        enc: Enc,
        /// Its operation.
        op: Op,
    },
    /// An operand code that names nothing for this instruction.
    Operand {
        /// The operation.
        op: Op,
        /// The operand code.
        code: u16,
    },
    /// A vector register beyond the wave's allocation.
    Register {
        /// The operation.
        op: Op,
        /// `'v'` or `'a'`.
        file: char,
        /// The register number.
        index: usize,
        /// How many the wave has.
        have: usize,
    },
    /// Another illegal use of an instruction.
    Illegal {
        /// The operation.
        op: Op,
        /// What is wrong.
        reason: &'static str,
    },
    /// A memory access to an address no buffer backs.
    Memory(MemFault),
    /// The dispatch cannot launch (geometry, scratch or register setup).
    Launch(&'static str),
    /// `s_trap` with no trap handler installed.
    Trap {
        /// The trap id (`simm16[7:0]`).
        id: u8,
    },
}

/// Why a wave stopped, and where: the queue error's cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaveFault {
    /// Address of the instruction.
    pub pc: u64,
    /// What went wrong.
    pub kind: FaultKind,
}

impl WaveFault {
    fn new(kind: FaultKind) -> Self {
        WaveFault { pc: 0, kind }
    }

    /// The same fault at `pc`.
    #[must_use]
    pub fn at(mut self, pc: u64) -> Self {
        self.pc = pc;
        self
    }

    /// `i`'s operation is not executed by the interpreter.
    #[must_use]
    #[cold]
    #[inline(never)]
    pub fn unsupported(i: &Inst) -> Self {
        Self::new(FaultKind::Unsupported { enc: i.enc, op: i.op })
    }

    /// Operand code `code` of `i` names nothing.
    #[must_use]
    #[cold]
    #[inline(never)]
    pub fn operand(i: &Inst, code: u16) -> Self {
        Self::new(FaultKind::Operand { op: i.op, code })
    }

    /// `i` names register `index` of `file`, which has `have`.
    #[must_use]
    #[cold]
    #[inline(never)]
    pub fn register(i: &Inst, file: char, index: usize, have: usize) -> Self {
        Self::new(FaultKind::Register { op: i.op, file, index, have })
    }

    /// `i` is used illegally.
    #[must_use]
    #[cold]
    #[inline(never)]
    pub fn illegal(i: &Inst, reason: &'static str) -> Self {
        Self::new(FaultKind::Illegal { op: i.op, reason })
    }

    /// A memory violation.
    #[must_use]
    pub fn memory(m: MemFault) -> Self {
        Self::new(FaultKind::Memory(m))
    }

    /// Undecodable machine code.
    #[must_use]
    pub fn undecodable(u: Undecodable) -> Self {
        Self::new(FaultKind::Undecodable(u))
    }

    /// `s_trap id` without a handler.
    #[must_use]
    pub fn trap(id: u8) -> Self {
        Self::new(FaultKind::Trap { id })
    }

    /// Whether this is a memory violation (and its address).
    #[must_use]
    pub fn memory_fault(&self) -> Option<MemFault> {
        match self.kind {
            FaultKind::Memory(m) => Some(m),
            _ => None,
        }
    }
}

impl From<MemFault> for WaveFault {
    fn from(m: MemFault) -> Self {
        Self::memory(m)
    }
}

impl fmt::Display for WaveFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "wave at pc {:#x}: ", self.pc)?;
        match self.kind {
            FaultKind::Undecodable(u) => write!(f, "illegal instruction {u}"),
            FaultKind::Unsupported { enc, op } => write!(
                f,
                "illegal instruction: {} {} is not executed by the interpreter",
                enc.name(),
                op.mnemonic()
            ),
            FaultKind::Operand { op, code } => {
                write!(f, "illegal instruction: {} with operand code {code}", op.mnemonic())
            }
            FaultKind::Register { op, file, index, have } => write!(
                f,
                "illegal instruction: {} names {file}{index}, but the wave has {have}",
                op.mnemonic()
            ),
            FaultKind::Illegal { op, reason } => {
                write!(f, "illegal instruction: {}: {reason}", op.mnemonic())
            }
            FaultKind::Memory(m) => write!(f, "{m}"),
            FaultKind::Launch(why) => write!(f, "dispatch cannot launch: {why}"),
            FaultKind::Trap { id } => write!(f, "s_trap {id} with no trap handler"),
        }
    }
}

impl std::error::Error for WaveFault {}
