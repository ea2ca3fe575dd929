//! Instruction decoding: one to three dwords of machine code into an [`Inst`], or an
//! [`Undecodable`] naming what the dwords are (encoding, opcode, mnemonic when the number is
//! known on another target) and why they cannot run.
//!
//! Field layouts are those of the "Microcode Formats" chapter of AMD's Vega, CDNA2 and CDNA3
//! ISA manuals (cross-checked with LLVM's assembler): e.g. VOP2 `[31]=0, op[30:25],
//! vdst[24:17], vsrc1[16:9], src0[8:0]`; VOP3 `[31:26]=110100, op[25:16]`; FLAT
//! `[31:26]=110111, op[24:18], seg[15:14]`.

use std::fmt;

use super::inst::{Enc, Inst, LITERAL, SADDR_OFF, VCC_LO, VGPR, flag};
use super::{Op, Target, opcodes};

/// Why machine code cannot be decoded: what the interpreter reports as an illegal
/// instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Undecodable {
    /// The first dword.
    pub word: u32,
    /// The encoding, when the dword has a gfx9 encoding's prefix.
    pub enc: Option<Enc>,
    /// The opcode field.
    pub opcode: u32,
    /// The operation, when the opcode names one (on this or another gfx9 target).
    pub op: Option<Op>,
    /// What is wrong.
    pub reason: &'static str,
}

impl fmt::Display for Undecodable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#010x}: ", self.word)?;
        match self.enc {
            Some(e) => write!(f, "{} opcode {}", e.name(), self.opcode)?,
            None => f.write_str("no gfx9 encoding")?,
        }
        if let Some(op) = self.op {
            write!(f, " ({})", op.mnemonic())?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// The encoding of an instruction whose first dword is `w`, and its opcode field.
#[must_use]
pub fn encoding(w: u32) -> (Option<Enc>, u32) {
    match w >> 23 {
        0x17D => return (Some(Enc::Sop1), (w >> 8) & 0xFF),
        0x17E => return (Some(Enc::Sopc), (w >> 16) & 0x7F),
        0x17F => return (Some(Enc::Sopp), (w >> 16) & 0x7F),
        0x1A7 => return (Some(Enc::Vop3p), (w >> 16) & 0x7F),
        _ => {}
    }
    if w >> 28 == 0xB {
        return (Some(Enc::Sopk), (w >> 23) & 0x1F);
    }
    if w >> 30 == 2 {
        return (Some(Enc::Sop2), (w >> 23) & 0x7F);
    }
    if w >> 31 == 0 {
        return match w >> 25 {
            0x3F => (Some(Enc::Vop1), (w >> 9) & 0xFF),
            0x3E => (Some(Enc::Vopc), (w >> 17) & 0xFF),
            _ => (Some(Enc::Vop2), (w >> 25) & 0x3F),
        };
    }
    match w >> 26 {
        0x30 => (Some(Enc::Smem), (w >> 18) & 0xFF),
        0x31 => (Some(Enc::Exp), 0),
        0x34 => (Some(Enc::Vop3), (w >> 16) & 0x3FF),
        0x35 => (Some(Enc::Vintrp), (w >> 16) & 0x3),
        0x36 => (Some(Enc::Ds), (w >> 17) & 0xFF),
        0x37 => {
            let seg = match (w >> 14) & 3 {
                0 => Some(Enc::Flat),
                1 => Some(Enc::Scratch),
                2 => Some(Enc::Global),
                _ => None,
            };
            (seg, (w >> 18) & 0x7F)
        }
        0x38 => (Some(Enc::Mubuf), (w >> 18) & 0x7F),
        0x3A => (Some(Enc::Mtbuf), (w >> 15) & 0xF),
        0x3C => (Some(Enc::Mimg), (w >> 18) & 0x7F),
        _ => (None, 0),
    }
}

/// The operation `opcode` names in encoding `enc` on `t`.
#[must_use]
pub fn lookup(t: Target, enc: Enc, opcode: u32) -> Option<Op> {
    match enc {
        Enc::Sop2 => opcodes::sop2(t, opcode),
        Enc::Sopk => opcodes::sopk(t, opcode),
        Enc::Sop1 => opcodes::sop1(t, opcode),
        Enc::Sopc => opcodes::sopc(t, opcode),
        Enc::Sopp => opcodes::sopp(t, opcode),
        Enc::Smem => opcodes::smem(t, opcode),
        Enc::Vop2 => opcodes::vop2(t, opcode),
        Enc::Vop1 => opcodes::vop1(t, opcode),
        Enc::Vopc => opcodes::vopc(t, opcode),
        Enc::Vop3 => opcodes::vop3(t, opcode),
        Enc::Vop3p => opcodes::vop3p(t, opcode),
        Enc::Ds => opcodes::ds(t, opcode),
        Enc::Mubuf => opcodes::mubuf(t, opcode),
        Enc::Flat => opcodes::flat(t, opcode),
        Enc::Global => opcodes::global(t, opcode),
        Enc::Scratch => opcodes::scratch(t, opcode),
        Enc::Mtbuf | Enc::Mimg | Enc::Exp | Enc::Vintrp => None,
    }
}

/// Whether `op` writes a scalar carry or condition besides its vector result (VOP3B).
fn is_vop3b(op: Op) -> bool {
    matches!(
        op,
        Op::VAddCoU32
            | Op::VSubCoU32
            | Op::VSubrevCoU32
            | Op::VAddcCoU32
            | Op::VSubbCoU32
            | Op::VSubbrevCoU32
            | Op::VDivScaleF32
            | Op::VDivScaleF64
            | Op::VMadU64U32
            | Op::VMadI64I32
    )
}

/// Whether `op` has an SDWA form on gfx9 (those of the operations the interpreter knows
/// that LLVM's disassembler accepts with `src0 = 0xF9`).
fn has_sdwa(op: Op) -> bool {
    use Op::*;
    matches!(
        op,
        VAddCoU32
            | VAddF16
            | VAddF32
            | VAddU32
            | VAddcCoU32
            | VAndB32
            | VAshrrevI32
            | VBfrevB32
            | VCeilF32
            | VCmpClassF32
            | VCmpEqF32
            | VCmpEqI32
            | VCmpEqU32
            | VCmpFF32
            | VCmpFI32
            | VCmpFU32
            | VCmpGeF32
            | VCmpGeI32
            | VCmpGeU32
            | VCmpGtF32
            | VCmpGtI32
            | VCmpGtU32
            | VCmpLeF32
            | VCmpLeI32
            | VCmpLeU32
            | VCmpLgF32
            | VCmpLtF32
            | VCmpLtI32
            | VCmpLtU32
            | VCmpNeI32
            | VCmpNeU32
            | VCmpNeqF32
            | VCmpNgeF32
            | VCmpNgtF32
            | VCmpNleF32
            | VCmpNlgF32
            | VCmpNltF32
            | VCmpOF32
            | VCmpTI32
            | VCmpTU32
            | VCmpTruF32
            | VCmpUF32
            | VCmpxClassF32
            | VCmpxEqF32
            | VCmpxEqI32
            | VCmpxEqU32
            | VCmpxGeI32
            | VCmpxGeU32
            | VCmpxGtF32
            | VCmpxGtI32
            | VCmpxGtU32
            | VCmpxLeI32
            | VCmpxLeU32
            | VCmpxLtF32
            | VCmpxLtI32
            | VCmpxLtU32
            | VCmpxNeI32
            | VCmpxNeU32
            | VCndmaskB32
            | VCosF32
            | VCvtF16F32
            | VCvtF32F16
            | VCvtF32I32
            | VCvtF32U32
            | VCvtF32Ubyte0
            | VCvtF32Ubyte1
            | VCvtF32Ubyte2
            | VCvtF32Ubyte3
            | VCvtFlrI32F32
            | VCvtI32F32
            | VCvtRpiI32F32
            | VCvtU32F32
            | VExpF32
            | VFfbhI32
            | VFfbhU32
            | VFfblB32
            | VFloorF32
            | VFractF32
            | VFrexpExpI32F32
            | VFrexpMantF32
            | VLogF32
            | VLshlrevB32
            | VLshrrevB32
            | VMaxF32
            | VMaxI32
            | VMaxU32
            | VMinF32
            | VMinI32
            | VMinU32
            | VMovB32
            | VMulF16
            | VMulF32
            | VMulHiI32I24
            | VMulHiU32U24
            | VMulI32I24
            | VMulLegacyF32
            | VMulU32U24
            | VNotB32
            | VOrB32
            | VRcpF32
            | VRcpIflagF32
            | VRndneF32
            | VRsqF32
            | VSinF32
            | VSqrtF32
            | VSubCoU32
            | VSubF32
            | VSubU32
            | VSubbCoU32
            | VSubbrevCoU32
            | VSubrevCoU32
            | VSubrevF32
            | VSubrevU32
            | VTruncF32
            | VXnorB32
            | VXorB32
            | VAddU16
            | VSubU16
            | VSubrevU16
            | VMulLoU16
            | VLshlrevB16
            | VLshrrevB16
            | VAshrrevI16
            | VMaxU16
            | VMaxI16
            | VMinU16
            | VMinI16
    )
}

/// Completes `i`, a VOP1/VOP2/VOPC instruction in the SDWA form, from its second dword `s`:
/// `src0[7:0], dst_sel[10:8], dst_unused[12:11], clamp[13], omod[15:14]` (VOPC:
/// `sdst[14:8], sd[15]`), `src0_sel[18:16], src0_sext[19], src0_neg[20], src0_abs[21],
/// s0[23], src1_sel[26:24], src1_sext[27], src1_neg[28], src1_abs[29], s1[31]`. `None` for a
/// literal source (SDWA has no room for one).
fn sdwa(mut i: Inst, enc: Enc, s: u32) -> Option<Inst> {
    let w = i.word;
    let code = |field: u32, scalar: bool| if scalar { field as u16 } else { VGPR + field as u16 };
    i.flags |= flag::SDWA;
    i.imm2 = s;
    i.src[0] = code(s & 0xFF, s >> 23 & 1 != 0);
    if enc != Enc::Vop1 {
        i.src[1] = code((w >> 9) & 0xFF, s >> 31 & 1 != 0);
    }
    if enc == Enc::Vopc {
        i.sdst = if s >> 15 & 1 != 0 { ((s >> 8) & 0x7F) as u16 } else { VCC_LO };
    } else {
        i.dst = ((w >> 17) & 0xFF) as u16;
        i.omod = ((s >> 14) & 3) as u8;
        if s >> 13 & 1 != 0 {
            i.flags |= flag::CLAMP;
        }
    }
    i.neg = ((s >> 20) & 1 | (s >> 27) & 2) as u8;
    i.abs = ((s >> 21) & 1 | (s >> 28) & 2) as u8;
    (!i.src[..2].contains(&LITERAL)).then_some(i)
}

fn sext(v: u32, bits: u32) -> i32 {
    let s = 32 - bits;
    ((v << s) as i32) >> s
}

/// Decodes the instruction starting at `words[0]` for target `t`. Missing trailing dwords
/// (a literal past the end of `words`) make it undecodable.
///
/// # Errors
/// [`Undecodable`] for a dword that has no gfx9 encoding, an opcode no target knows, an
/// operation this target lacks, or a form the interpreter does not run (DPP, MTBUF, MIMG,
/// EXP, VINTRP).
pub fn decode(t: Target, words: &[u32]) -> Result<Inst, Undecodable> {
    let w = words.first().copied().unwrap_or(0);
    let (enc, opcode) = encoding(w);
    let bad = |op: Option<Op>, reason| Undecodable { word: w, enc, opcode, op, reason };
    let Some(enc) = enc else {
        return Err(bad(None, "not an instruction of any gfx9 encoding"));
    };
    let Some(op) = lookup(t, enc, opcode) else {
        let other = [Target::Gfx900, Target::Gfx90a, Target::Gfx942]
            .into_iter()
            .find_map(|o| lookup(o, enc, opcode));
        let reason = match enc {
            Enc::Mtbuf | Enc::Mimg | Enc::Exp | Enc::Vintrp => {
                "this encoding is not executed by the interpreter (compute kernels do not use it)"
            }
            _ if other.is_some() => "the operation does not exist on this target",
            _ => "unknown opcode",
        };
        return Err(bad(other, reason));
    };
    let mut i = Inst {
        op,
        enc,
        len: 4,
        dst: 0,
        sdst: 0,
        src: [0; 3],
        abs: 0,
        neg: 0,
        omod: 0,
        op_sel: 0,
        flags: 0,
        lit: 0,
        imm: 0,
        imm2: 0,
        word: w,
    };
    let w1 = words.get(1).copied();
    let second = |i: &mut Inst| -> Result<u32, Undecodable> {
        i.len = 8;
        w1.ok_or(bad(Some(op), "the instruction's second dword is missing"))
    };
    match enc {
        Enc::Sop2 | Enc::Sopc | Enc::Sop1 | Enc::Sopk => {
            match enc {
                Enc::Sop2 => {
                    i.dst = ((w >> 16) & 0x7F) as u16;
                    i.src = [(w & 0xFF) as u16, ((w >> 8) & 0xFF) as u16, 0];
                }
                Enc::Sopc => i.src = [(w & 0xFF) as u16, ((w >> 8) & 0xFF) as u16, 0],
                Enc::Sop1 => {
                    i.dst = ((w >> 16) & 0x7F) as u16;
                    i.src[0] = (w & 0xFF) as u16;
                }
                _ => {
                    i.dst = ((w >> 16) & 0x7F) as u16;
                    i.imm = sext(w & 0xFFFF, 16);
                }
            }
            let literal =
                enc != Enc::Sopk && i.src[..2].contains(&LITERAL) || op == Op::SSetregImm32B32;
            if literal {
                i.lit = second(&mut i)?;
            }
        }
        Enc::Sopp => i.imm = sext(w & 0xFFFF, 16),
        Enc::Smem => {
            let w1 = second(&mut i)?;
            i.dst = ((w >> 6) & 0x7F) as u16;
            i.src[0] = ((w & 0x3F) * 2) as u16;
            if w & (1 << 17) != 0 {
                i.flags |= flag::IMM;
                i.imm = sext(w1 & 0x1F_FFFF, 21);
            } else {
                i.imm2 = w1 & 0xFF;
            }
            if w & (1 << 14) != 0 {
                i.flags |= flag::SOE;
                i.imm2 = (w1 >> 25) & 0x7F;
            }
            if w & (1 << 16) != 0 {
                i.flags |= flag::GLC;
            }
        }
        Enc::Vop2 | Enc::Vop1 | Enc::Vopc => {
            let src0 = (w & 0x1FF) as u16;
            if src0 == 250 {
                return Err(bad(Some(op), "the DPP form is not executed by the interpreter"));
            }
            if src0 == 249 {
                if !has_sdwa(op) {
                    return Err(bad(Some(op), "the operation has no SDWA form"));
                }
                let s = second(&mut i)?;
                return sdwa(i, enc, s)
                    .ok_or(bad(Some(op), "a literal constant is not allowed in SDWA"));
            }
            i.src[0] = src0;
            match enc {
                Enc::Vop2 => {
                    i.dst = ((w >> 17) & 0xFF) as u16;
                    i.src[1] = VGPR + ((w >> 9) & 0xFF) as u16;
                }
                Enc::Vop1 => i.dst = ((w >> 17) & 0xFF) as u16,
                _ => {
                    i.src[1] = VGPR + ((w >> 9) & 0xFF) as u16;
                    i.sdst = VCC_LO;
                }
            }
            let k = matches!(op, Op::VMadmkF32 | Op::VMadakF32 | Op::VFmamkF32 | Op::VFmaakF32);
            if src0 == LITERAL || k {
                i.lit = second(&mut i)?;
            }
        }
        Enc::Vop3 => {
            let w1 = second(&mut i)?;
            i.src = [(w1 & 0x1FF) as u16, ((w1 >> 9) & 0x1FF) as u16, ((w1 >> 18) & 0x1FF) as u16];
            if i.src.contains(&LITERAL) {
                return Err(bad(Some(op), "a literal constant is not allowed in VOP3 on gfx9"));
            }
            i.neg = ((w1 >> 29) & 7) as u8;
            i.omod = ((w1 >> 27) & 3) as u8;
            if w & (1 << 15) != 0 {
                i.flags |= flag::CLAMP;
            }
            if opcode < 256 {
                // A compare: its "vdst" is the scalar destination.
                i.sdst = (w & 0xFF) as u16;
                i.abs = ((w >> 8) & 7) as u8;
            } else if is_vop3b(op) {
                i.dst = (w & 0xFF) as u16;
                i.sdst = ((w >> 8) & 0x7F) as u16;
                i.flags |= flag::SDST;
            } else {
                i.dst = (w & 0xFF) as u16;
                i.abs = ((w >> 8) & 7) as u8;
                i.op_sel = ((w >> 11) & 0xF) as u8;
            }
        }
        Enc::Vop3p => {
            let w1 = second(&mut i)?;
            i.src = [(w1 & 0x1FF) as u16, ((w1 >> 9) & 0x1FF) as u16, ((w1 >> 18) & 0x1FF) as u16];
            if i.src.contains(&LITERAL) {
                return Err(bad(Some(op), "a literal constant is not allowed in VOP3P on gfx9"));
            }
            i.dst = (w & 0xFF) as u16;
            i.abs = ((w >> 8) & 7) as u8; // neg_hi
            i.op_sel = (((w >> 11) & 7) | ((w >> 14) & 1) << 3) as u8;
            i.omod = ((w1 >> 27) & 3) as u8; // op_sel_hi of sources 0 and 1
            i.neg = ((w1 >> 29) & 7) as u8;
            if w & (1 << 15) != 0 {
                i.flags |= flag::CLAMP;
            }
        }
        Enc::Ds => {
            let w1 = second(&mut i)?;
            i.imm = (w & 0xFF) as i32;
            i.imm2 = (w >> 8) & 0xFF;
            if w & (1 << 16) != 0 {
                i.flags |= flag::GDS;
            }
            if w & (1 << 25) != 0 && t != Target::Gfx900 {
                i.flags |= flag::ACC;
            }
            i.src = [(w1 & 0xFF) as u16, ((w1 >> 8) & 0xFF) as u16, ((w1 >> 16) & 0xFF) as u16];
            i.dst = ((w1 >> 24) & 0xFF) as u16;
        }
        Enc::Mubuf => {
            let w1 = second(&mut i)?;
            i.imm = (w & 0xFFF) as i32;
            for (bit, f) in [(12, flag::OFFEN), (13, flag::IDXEN), (14, flag::GLC), (16, flag::LDS)]
            {
                if w & (1 << bit) != 0 {
                    i.flags |= f;
                }
            }
            if w & (1 << 17) != 0 {
                i.flags |= flag::SLC;
            }
            if w & (1 << 15) != 0 && t != Target::Gfx900 {
                i.flags |= flag::SC1;
            }
            if w1 & (1 << 23) != 0 && t != Target::Gfx900 {
                i.flags |= flag::ACC;
            }
            i.src =
                [(w1 & 0xFF) as u16, (((w1 >> 16) & 0x1F) * 4) as u16, ((w1 >> 24) & 0xFF) as u16];
            i.dst = ((w1 >> 8) & 0xFF) as u16;
        }
        Enc::Flat | Enc::Global | Enc::Scratch => {
            let w1 = second(&mut i)?;
            i.imm = if enc == Enc::Flat { (w & 0xFFF) as i32 } else { sext(w & 0x1FFF, 13) };
            if w & (1 << 13) != 0 {
                if enc == Enc::Scratch && t == Target::Gfx942 {
                    i.flags |= flag::SVE;
                } else {
                    i.flags |= flag::LDS;
                }
            }
            if w & (1 << 16) != 0 {
                i.flags |= flag::GLC;
            }
            if w & (1 << 17) != 0 {
                i.flags |= flag::SLC;
            }
            if w & (1 << 25) != 0 && t != Target::Gfx900 {
                i.flags |= flag::SC1;
            }
            if w1 & (1 << 23) != 0 && t != Target::Gfx900 {
                i.flags |= flag::ACC;
            }
            i.src = [(w1 & 0xFF) as u16, ((w1 >> 8) & 0xFF) as u16, ((w1 >> 16) & 0x7F) as u16];
            i.dst = ((w1 >> 24) & 0xFF) as u16;
            if enc == Enc::Flat {
                // FLAT has no scalar address (the field is unused).
                i.src[2] = SADDR_OFF;
            }
        }
        Enc::Mtbuf | Enc::Mimg | Enc::Exp | Enc::Vintrp => {
            return Err(bad(Some(op), "this encoding is not executed by the interpreter"));
        }
    }
    Ok(i)
}
