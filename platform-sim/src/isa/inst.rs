//! A decoded instruction: its operation, encoding and operand fields, unpacked once by
//! [`super::decode()`] so that execution never looks at instruction bits again.

use super::Op;

/// The instruction encodings of gfx9 (the families of the ISA manual's "Microcode Formats").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Enc {
    /// Scalar ALU, two sources.
    Sop2,
    /// Scalar ALU with a 16-bit immediate.
    Sopk,
    /// Scalar ALU, one source.
    Sop1,
    /// Scalar compare.
    Sopc,
    /// Scalar program control.
    Sopp,
    /// Scalar memory.
    Smem,
    /// Vector ALU, two sources (32-bit form).
    Vop2,
    /// Vector ALU, one source (32-bit form).
    Vop1,
    /// Vector compare (32-bit form, result in VCC).
    Vopc,
    /// Vector ALU, three sources and modifiers (64-bit form, VOP3A and VOP3B).
    Vop3,
    /// Packed vector ALU.
    Vop3p,
    /// Local data share.
    Ds,
    /// Untyped buffer memory.
    Mubuf,
    /// Typed buffer memory.
    Mtbuf,
    /// Image memory.
    Mimg,
    /// Flat memory (address space from the address).
    Flat,
    /// Global memory.
    Global,
    /// Private (scratch) memory.
    Scratch,
    /// Export.
    Exp,
    /// Vertex parameter interpolation.
    Vintrp,
}

impl Enc {
    /// The encoding's name as the ISA manual spells it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Sop2 => "SOP2",
            Self::Sopk => "SOPK",
            Self::Sop1 => "SOP1",
            Self::Sopc => "SOPC",
            Self::Sopp => "SOPP",
            Self::Smem => "SMEM",
            Self::Vop2 => "VOP2",
            Self::Vop1 => "VOP1",
            Self::Vopc => "VOPC",
            Self::Vop3 => "VOP3",
            Self::Vop3p => "VOP3P",
            Self::Ds => "DS",
            Self::Mubuf => "MUBUF",
            Self::Mtbuf => "MTBUF",
            Self::Mimg => "MIMG",
            Self::Flat => "FLAT",
            Self::Global => "GLOBAL",
            Self::Scratch => "SCRATCH",
            Self::Exp => "EXP",
            Self::Vintrp => "VINTRP",
        }
    }
}

/// Operand code of the literal constant that follows the instruction.
pub const LITERAL: u16 = 255;
/// Operand code of the first VGPR (`v0`); VGPR `n` is `VGPR + n`.
pub const VGPR: u16 = 256;
/// Operand code of `vcc_lo`.
pub const VCC_LO: u16 = 106;
/// Operand code of `exec_lo`.
pub const EXEC_LO: u16 = 126;
/// Operand code of `m0`.
pub const M0: u16 = 124;
/// Operand code of `flat_scratch_lo`.
pub const FLAT_SCRATCH_LO: u16 = 102;
/// Operand code of `ttmp0`.
pub const TTMP0: u16 = 108;
/// An SGPR address field of "none" (`off` in the FLAT `saddr` field).
pub const SADDR_OFF: u16 = 0x7F;

/// Flag bits of [`Inst::flags`].
pub mod flag {
    /// VOP3/VOP3P: clamp the result.
    pub const CLAMP: u16 = 1 << 0;
    /// Memory: GLC (gfx942 SC0).
    pub const GLC: u16 = 1 << 1;
    /// Memory: SLC (gfx942 NT).
    pub const SLC: u16 = 1 << 2;
    /// MUBUF: the VGPR address holds an offset.
    pub const OFFEN: u16 = 1 << 3;
    /// MUBUF: the VGPR address holds an index.
    pub const IDXEN: u16 = 1 << 4;
    /// MUBUF/FLAT: LDS direct load.
    pub const LDS: u16 = 1 << 5;
    /// Memory: data and destination registers are AGPRs (gfx90a, gfx942).
    pub const ACC: u16 = 1 << 6;
    /// DS: global data share (GWS) access.
    pub const GDS: u16 = 1 << 7;
    /// SMEM: the offset is an immediate.
    pub const IMM: u16 = 1 << 8;
    /// SMEM: an SGPR offset is also given (gfx9 `soe`).
    pub const SOE: u16 = 1 << 9;
    /// Scratch (gfx942): the VGPR address is used (`sve`).
    pub const SVE: u16 = 1 << 10;
    /// VOP3B: the instruction writes a scalar carry/condition (`sdst` is valid).
    pub const SDST: u16 = 1 << 11;
    /// Memory: SC1 (gfx90a SCC).
    pub const SC1: u16 = 1 << 12;
    /// VOP1/VOP2/VOPC: the SDWA form (sub-dword selects in [`super::Inst::imm2`]).
    pub const SDWA: u16 = 1 << 13;
}

/// A decoded instruction. Operand fields hold the hardware's operand codes: a 9-bit source
/// code (SGPRs and special registers 0..=127, inline constants 128..=254, [`LITERAL`], VGPRs
/// from [`VGPR`]), or a plain register number where the field names one register file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inst {
    /// The operation.
    pub op: Op,
    /// The encoding it came in.
    pub enc: Enc,
    /// Length in bytes (4, 8 or 12).
    pub len: u8,
    /// Destination: SGPR code (scalar), VGPR or AGPR number (vector, memory data).
    pub dst: u16,
    /// Scalar destination of VOP3B / VOPC-in-VOP3 (an SGPR code).
    pub sdst: u16,
    /// Sources. Scalar: codes. Vector: codes. Memory: address register, data register,
    /// scalar base/offset (see each executor).
    pub src: [u16; 3],
    /// VOP3/SDWA `abs` bits (one per source); VOP3P `neg_hi`.
    pub abs: u8,
    /// VOP3/VOP3P/SDWA `neg` bits (one per source).
    pub neg: u8,
    /// VOP3/SDWA output modifier (0 none, 1 ×2, 2 ×4, 3 ÷2); VOP3P `op_sel_hi`.
    pub omod: u8,
    /// VOP3/VOP3P `op_sel`.
    pub op_sel: u8,
    /// [`flag`] bits.
    pub flags: u16,
    /// The literal constant (when a source is [`LITERAL`], or the `K` of `v_madmk_f32`).
    pub lit: u32,
    /// SOPP/SOPK `simm16` (sign-extended), memory instruction offset (sign-extended), DS
    /// `offset0`.
    pub imm: i32,
    /// DS `offset1`; SMEM SGPR offset code; the SDWA dword (its selects are read from it).
    pub imm2: u32,
    /// The first instruction dword (for messages).
    pub word: u32,
}

impl Inst {
    /// Whether flag `f` is set.
    #[must_use]
    pub fn has(&self, f: u16) -> bool {
        self.flags & f != 0
    }

    /// The mnemonic as the assembler would print it for this encoding (`global_*`/`scratch_*`
    /// for the flat operations they share).
    #[must_use]
    pub fn mnemonic(&self) -> String {
        let m = self.op.mnemonic();
        match (self.enc, m.strip_prefix("flat_")) {
            (Enc::Global, Some(rest)) => format!("global_{rest}"),
            (Enc::Scratch, Some(rest)) => format!("scratch_{rest}"),
            _ => m.to_string(),
        }
    }
}
