//! Vector compares (VOPC, and their VOP3 form writing any SGPR pair): one result bit per
//! active lane (inactive lanes read 0) into VCC or `sdst`; the `v_cmpx_*` forms also write
//! EXEC. `v_cmp_class_*` tests the first source against a mask of IEEE classes (bit 0
//! signalling NaN, 1 quiet NaN, 2 -inf, 3 -normal, 4 -denormal, 5 -0, 6 +0, 7 +denormal,
//! 8 +normal, 9 +inf).

use super::super::Op;
use super::super::fault::WaveFault;
use super::super::inst::Inst;
use super::super::limits::LANES;
use super::super::wave::{Kind64, Wave};

/// Operand type of a compare.
#[derive(Clone, Copy)]
enum Ty {
    F32,
    F64,
    I32,
    U32,
    I64,
    U64,
    Class32,
    Class64,
}

/// Condition (float conditions are the IEEE ones; the `N*` forms are true when unordered).
#[derive(Clone, Copy)]
enum Cond {
    F,
    Lt,
    Eq,
    Le,
    Gt,
    Lg,
    Ge,
    O,
    U,
    Nge,
    Nlg,
    Ngt,
    Nle,
    Neq,
    Nlt,
    T,
}

fn kind(op: Op) -> Option<(Ty, Cond, bool)> {
    use Cond::*;
    use Ty::*;
    Some(match op {
        Op::VCmpClassF32 => (Class32, T, false),
        Op::VCmpxClassF32 => (Class32, T, true),
        Op::VCmpClassF64 => (Class64, T, false),
        Op::VCmpFF32 => (F32, F, false),
        Op::VCmpLtF32 => (F32, Lt, false),
        Op::VCmpEqF32 => (F32, Eq, false),
        Op::VCmpLeF32 => (F32, Le, false),
        Op::VCmpGtF32 => (F32, Gt, false),
        Op::VCmpLgF32 => (F32, Lg, false),
        Op::VCmpGeF32 => (F32, Ge, false),
        Op::VCmpOF32 => (F32, O, false),
        Op::VCmpUF32 => (F32, U, false),
        Op::VCmpNgeF32 => (F32, Nge, false),
        Op::VCmpNlgF32 => (F32, Nlg, false),
        Op::VCmpNgtF32 => (F32, Ngt, false),
        Op::VCmpNleF32 => (F32, Nle, false),
        Op::VCmpNeqF32 => (F32, Neq, false),
        Op::VCmpNltF32 => (F32, Nlt, false),
        Op::VCmpTruF32 => (F32, T, false),
        Op::VCmpxLtF32 => (F32, Lt, true),
        Op::VCmpxEqF32 => (F32, Eq, true),
        Op::VCmpxGtF32 => (F32, Gt, true),
        Op::VCmpLtF64 => (F64, Lt, false),
        Op::VCmpEqF64 => (F64, Eq, false),
        Op::VCmpLeF64 => (F64, Le, false),
        Op::VCmpGtF64 => (F64, Gt, false),
        Op::VCmpLgF64 => (F64, Lg, false),
        Op::VCmpGeF64 => (F64, Ge, false),
        Op::VCmpOF64 => (F64, O, false),
        Op::VCmpUF64 => (F64, U, false),
        Op::VCmpNeqF64 => (F64, Neq, false),
        Op::VCmpNltF64 => (F64, Nlt, false),
        Op::VCmpNgeF64 => (F64, Nge, false),
        Op::VCmpNgtF64 => (F64, Ngt, false),
        Op::VCmpNleF64 => (F64, Nle, false),
        Op::VCmpFI32 => (I32, F, false),
        Op::VCmpLtI32 => (I32, Lt, false),
        Op::VCmpEqI32 => (I32, Eq, false),
        Op::VCmpLeI32 => (I32, Le, false),
        Op::VCmpGtI32 => (I32, Gt, false),
        Op::VCmpNeI32 => (I32, Lg, false),
        Op::VCmpGeI32 => (I32, Ge, false),
        Op::VCmpTI32 => (I32, T, false),
        Op::VCmpFU32 => (U32, F, false),
        Op::VCmpLtU32 => (U32, Lt, false),
        Op::VCmpEqU32 => (U32, Eq, false),
        Op::VCmpLeU32 => (U32, Le, false),
        Op::VCmpGtU32 => (U32, Gt, false),
        Op::VCmpNeU32 => (U32, Lg, false),
        Op::VCmpGeU32 => (U32, Ge, false),
        Op::VCmpTU32 => (U32, T, false),
        Op::VCmpLtI64 => (I64, Lt, false),
        Op::VCmpEqI64 => (I64, Eq, false),
        Op::VCmpLeI64 => (I64, Le, false),
        Op::VCmpGtI64 => (I64, Gt, false),
        Op::VCmpNeI64 => (I64, Lg, false),
        Op::VCmpGeI64 => (I64, Ge, false),
        Op::VCmpLtU64 => (U64, Lt, false),
        Op::VCmpEqU64 => (U64, Eq, false),
        Op::VCmpLeU64 => (U64, Le, false),
        Op::VCmpGtU64 => (U64, Gt, false),
        Op::VCmpNeU64 => (U64, Lg, false),
        Op::VCmpGeU64 => (U64, Ge, false),
        Op::VCmpxLtI32 => (I32, Lt, true),
        Op::VCmpxEqI32 => (I32, Eq, true),
        Op::VCmpxLeI32 => (I32, Le, true),
        Op::VCmpxGtI32 => (I32, Gt, true),
        Op::VCmpxNeI32 => (I32, Lg, true),
        Op::VCmpxGeI32 => (I32, Ge, true),
        Op::VCmpxLtU32 => (U32, Lt, true),
        Op::VCmpxEqU32 => (U32, Eq, true),
        Op::VCmpxLeU32 => (U32, Le, true),
        Op::VCmpxGtU32 => (U32, Gt, true),
        Op::VCmpxNeU32 => (U32, Lg, true),
        Op::VCmpxGeU32 => (U32, Ge, true),
        Op::VCmpxEqU64 => (U64, Eq, true),
        Op::VCmpxNeU64 => (U64, Lg, true),
        _ => return None,
    })
}

fn ord<T: PartialOrd>(c: Cond, a: T, b: T) -> bool {
    use std::cmp::Ordering::*;
    let o = a.partial_cmp(&b);
    match c {
        Cond::F => false,
        Cond::Lt => o == Some(Less),
        Cond::Eq => o == Some(Equal),
        Cond::Le => matches!(o, Some(Less | Equal)),
        Cond::Gt => o == Some(Greater),
        Cond::Lg => matches!(o, Some(Less | Greater)),
        Cond::Ge => matches!(o, Some(Greater | Equal)),
        Cond::O => o.is_some(),
        Cond::U => o.is_none(),
        Cond::Nge => !matches!(o, Some(Greater | Equal)),
        Cond::Nlg => !matches!(o, Some(Less | Greater)),
        Cond::Ngt => o != Some(Greater),
        Cond::Nle => !matches!(o, Some(Less | Equal)),
        Cond::Neq => o != Some(Equal),
        Cond::Nlt => o != Some(Less),
        Cond::T => true,
    }
}

fn class32(x: f32, mask: u32) -> bool {
    let bit = if x.is_nan() {
        // Quiet NaNs have the top mantissa bit set.
        if x.to_bits() & 0x40_0000 != 0 { 1 } else { 0 }
    } else {
        let neg = x.is_sign_negative();
        if x.is_infinite() {
            if neg { 2 } else { 9 }
        } else if x == 0.0 {
            if neg { 5 } else { 6 }
        } else if x.is_subnormal() {
            if neg { 4 } else { 7 }
        } else if neg {
            3
        } else {
            8
        }
    };
    mask >> bit & 1 != 0
}

fn class64(x: f64, mask: u32) -> bool {
    let bit = if x.is_nan() {
        u32::from(x.to_bits() & 0x8_0000_0000_0000 != 0)
    } else {
        let neg = x.is_sign_negative();
        if x.is_infinite() {
            if neg { 2 } else { 9 }
        } else if x == 0.0 {
            if neg { 5 } else { 6 }
        } else if x.is_subnormal() {
            if neg { 4 } else { 7 }
        } else if neg {
            3
        } else {
            8
        }
    };
    mask >> bit & 1 != 0
}

fn mods32(i: &Inst, k: usize, v: u32) -> u32 {
    let mut v = v;
    if i.abs >> k & 1 != 0 {
        v &= 0x7FFF_FFFF;
    }
    if i.neg >> k & 1 != 0 {
        v ^= 0x8000_0000;
    }
    v
}

fn mods64(i: &Inst, k: usize, v: u64) -> u64 {
    let mut v = v;
    if i.abs >> k & 1 != 0 {
        v &= !(1 << 63);
    }
    if i.neg >> k & 1 != 0 {
        v ^= 1 << 63;
    }
    v
}

/// The lanes for which `f` holds.
#[inline]
fn lanes_mask(f: impl Fn(usize) -> bool) -> u64 {
    let mut bits = 0u64;
    for l in 0..LANES {
        bits |= u64::from(f(l)) << l;
    }
    bits
}

/// VOPC (and VOPC in VOP3).
pub(super) fn vopc(w: &mut Wave, i: &Inst) -> Result<(), WaveFault> {
    let Some((ty, cond, x)) = kind(i.op) else {
        return Err(WaveFault::unsupported(i));
    };
    let bits;
    match ty {
        Ty::F32 | Ty::Class32 => {
            let (a, b) = (w.src(i, i.src[0])?, w.src(i, i.src[1])?);
            if matches!(ty, Ty::F32) {
                bits = lanes_mask(|l| {
                    ord(
                        cond,
                        f32::from_bits(mods32(i, 0, a.at(l))),
                        f32::from_bits(mods32(i, 1, b.at(l))),
                    )
                });
            } else {
                bits = lanes_mask(|l| class32(f32::from_bits(mods32(i, 0, a.at(l))), b.at(l)));
            }
        }
        Ty::I32 => {
            let (a, b) = (w.src(i, i.src[0])?, w.src(i, i.src[1])?);
            bits = lanes_mask(|l| ord(cond, a.at(l) as i32, b.at(l) as i32));
        }
        Ty::U32 => {
            let (a, b) = (w.src(i, i.src[0])?, w.src(i, i.src[1])?);
            bits = lanes_mask(|l| ord(cond, a.at(l), b.at(l)));
        }
        Ty::F64 => {
            let (a, b) = (w.src64(i, i.src[0], Kind64::F)?, w.src64(i, i.src[1], Kind64::F)?);
            bits = lanes_mask(|l| {
                ord(
                    cond,
                    f64::from_bits(mods64(i, 0, a.at(l))),
                    f64::from_bits(mods64(i, 1, b.at(l))),
                )
            });
        }
        Ty::I64 => {
            let (a, b) = (w.src64(i, i.src[0], Kind64::I)?, w.src64(i, i.src[1], Kind64::I)?);
            bits = lanes_mask(|l| ord(cond, a.at(l) as i64, b.at(l) as i64));
        }
        Ty::U64 => {
            let (a, b) = (w.src64(i, i.src[0], Kind64::U)?, w.src64(i, i.src[1], Kind64::U)?);
            bits = lanes_mask(|l| ord(cond, a.at(l), b.at(l)));
        }
        Ty::Class64 => {
            let (a, b) = (w.src64(i, i.src[0], Kind64::F)?, w.src(i, i.src[1])?);
            bits = lanes_mask(|l| class64(f64::from_bits(mods64(i, 0, a.at(l))), b.at(l)));
        }
    }
    let result = bits & w.exec();
    w.set_s64(i.sdst, result);
    if x {
        w.set_exec(result);
    }
    Ok(())
}
