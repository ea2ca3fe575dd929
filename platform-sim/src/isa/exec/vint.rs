//! The vector ALU's integer and bit operations (VOP1, VOP2 and VOP3 forms): each computes all
//! 64 lanes in a tight loop and writes the lanes EXEC enables. Carry-outs and compare-like
//! masks hold zeros in inactive lanes.

use super::super::Op;
use super::super::fault::WaveFault;
use super::super::inst::{Enc, Inst, VCC_LO, flag};
use super::super::limits::LANES;
use super::super::wave::{Kind64, Wave};

type R = Result<(), WaveFault>;

/// Writes the 32-bit result `d` to the instruction's VGPR destination in the lanes of EXEC.
#[inline(never)]
pub(super) fn out32(w: &mut Wave, i: &Inst, d: &[u32; LANES]) -> R {
    let m = w.exec();
    w.write_lanes(i, usize::from(i.dst), d, m)
}

/// Writes the 64-bit result `d` to the destination VGPR pair in the lanes of EXEC.
#[inline(never)]
pub(super) fn out64(w: &mut Wave, i: &Inst, d: &[u64; LANES]) -> R {
    let m = w.exec();
    w.write_lanes64(i, usize::from(i.dst), d, m)
}

fn map1(w: &mut Wave, i: &Inst, f: impl Fn(u32) -> u32) -> R {
    let mut ta = [0; LANES];
    let a = w.src_lanes(i, i.src[0], &mut ta)?;
    let d: [u32; LANES] = std::array::from_fn(|l| f(a[l]));
    out32(w, i, &d)
}

/// Refuses the `clamp` bit on an integer operation: saturating integer arithmetic is not
/// modelled, and wrapping instead would compute a wrong result silently.
#[inline]
fn no_clamp(i: &Inst) -> R {
    if i.has(flag::CLAMP) {
        return Err(WaveFault::illegal(i, "integer clamping (saturation) is not modelled"));
    }
    Ok(())
}

fn map2(w: &mut Wave, i: &Inst, f: impl Fn(u32, u32) -> u32) -> R {
    no_clamp(i)?;
    let (mut ta, mut tb) = ([0; LANES], [0; LANES]);
    let a = w.src_lanes(i, i.src[0], &mut ta)?;
    let b = w.src_lanes(i, i.src[1], &mut tb)?;
    let d: [u32; LANES] = std::array::from_fn(|l| f(a[l], b[l]));
    out32(w, i, &d)
}

fn map3(w: &mut Wave, i: &Inst, f: impl Fn(u32, u32, u32) -> u32) -> R {
    no_clamp(i)?;
    let (mut ta, mut tb, mut tc) = ([0; LANES], [0; LANES], [0; LANES]);
    let a = w.src_lanes(i, i.src[0], &mut ta)?;
    let b = w.src_lanes(i, i.src[1], &mut tb)?;
    let c = w.src_lanes(i, i.src[2], &mut tc)?;
    let d: [u32; LANES] = std::array::from_fn(|l| f(a[l], b[l], c[l]));
    out32(w, i, &d)
}

/// The 16-bit operations, on the low halves of two sources. On gfx9 the result's high half
/// is zeroed (these operations do not preserve it, and the VOP3 form has no `op_sel` for
/// them). One function for all of them: they are rare, so they share one loop.
fn map16(w: &mut Wave, i: &Inst) -> R {
    if i.op_sel != 0 {
        return Err(WaveFault::illegal(i, "op_sel on a 16-bit VOP2 operation"));
    }
    let op = i.op;
    map2(w, i, |a, b| {
        let (a, b) = (a as u16, b as u16);
        u32::from(match op {
            Op::VAddU16 => a.wrapping_add(b),
            Op::VSubU16 => a.wrapping_sub(b),
            Op::VSubrevU16 => b.wrapping_sub(a),
            Op::VMulLoU16 => a.wrapping_mul(b),
            Op::VLshlrevB16 => b << (a & 15),
            Op::VLshrrevB16 => b >> (a & 15),
            Op::VAshrrevI16 => ((b as i16) >> (a & 15)) as u16,
            Op::VMaxU16 => a.max(b),
            Op::VMaxI16 => (a as i16).max(b as i16) as u16,
            Op::VMinU16 => a.min(b),
            _ => (a as i16).min(b as i16) as u16,
        })
    })
}

/// The scalar destination of a carry-out: VCC in the 32-bit forms, `sdst` in VOP3B.
fn carry_dst(i: &Inst) -> u16 {
    if i.has(flag::SDST) { i.sdst } else { VCC_LO }
}

/// The carry-in mask: VCC in the 32-bit forms, the third source (an SGPR pair) in VOP3B.
fn carry_in(w: &Wave, i: &Inst) -> Result<u64, WaveFault> {
    if i.enc == Enc::Vop3 { w.scalar64(i, i.src[2], Kind64::U) } else { Ok(w.vcc()) }
}

/// Add/subtract with carry: `f(a, b, carry_in) -> (result, carry_out)` per lane.
fn carry_op(w: &mut Wave, i: &Inst, cin: bool, f: impl Fn(u32, u32, u32) -> (u32, bool)) -> R {
    no_clamp(i)?;
    let c = if cin { carry_in(w, i)? } else { 0 };
    let (mut ta, mut tb) = ([0; LANES], [0; LANES]);
    let a = w.src_lanes(i, i.src[0], &mut ta)?;
    let b = w.src_lanes(i, i.src[1], &mut tb)?;
    let exec = w.exec();
    let mut mask = 0u64;
    let d: [u32; LANES] = std::array::from_fn(|l| {
        let (r, co) = f(a[l], b[l], (c >> l & 1) as u32);
        mask |= u64::from(co) << l;
        r
    });
    out32(w, i, &d)?;
    w.set_s64(carry_dst(i), mask & exec);
    Ok(())
}

fn sext24(v: u32) -> i64 {
    i64::from(((v << 8) as i32) >> 8)
}

fn bfe(v: u32, off: u32, width: u32, signed: bool) -> u32 {
    let (off, width) = (off & 31, width & 31);
    if width == 0 {
        return 0;
    }
    let field = (v >> off) & ((1u32 << width) - 1);
    if signed && field >> (width - 1) & 1 != 0 { field | !((1u32 << width) - 1) } else { field }
}

fn med3<T: Ord + Copy>(a: T, b: T, c: T) -> T {
    a.max(b).min(a.min(b).max(c))
}

/// `v_perm_b32`: byte `k` of the result is selected by byte `k` of `sel` from `{a, b}` (`b`
/// the low dword).
fn perm(a: u32, b: u32, sel: u32) -> u32 {
    let data = u64::from(b) | u64::from(a) << 32;
    let mut d = 0u32;
    for k in 0..4 {
        let s = (sel >> (8 * k)) & 0xFF;
        let byte = match s {
            0..=7 => (data >> (8 * s)) & 0xFF,
            8..=11 => {
                // The sign of byte 1, 3, 5 or 7, replicated.
                let src = 2 * (s - 8) + 1;
                if data >> (8 * src + 7) & 1 != 0 { 0xFF } else { 0 }
            }
            12 => 0,
            _ => 0xFF,
        };
        d |= (byte as u32) << (8 * k);
    }
    d
}

fn ffbh_i32(v: u32) -> u32 {
    let x = if (v as i32) < 0 { !v } else { v };
    if x == 0 { u32::MAX } else { x.leading_zeros() }
}

/// Integer vector operations; `None` when `i` is not one.
pub(super) fn vint(w: &mut Wave, i: &Inst) -> Option<R> {
    Some(match i.op {
        Op::VMovB32 => map1(w, i, |a| a),
        Op::VNotB32 => map1(w, i, |a| !a),
        Op::VBfrevB32 => map1(w, i, u32::reverse_bits),
        Op::VFfbhU32 => map1(w, i, |a| if a == 0 { u32::MAX } else { a.leading_zeros() }),
        Op::VFfblB32 => map1(w, i, |a| if a == 0 { u32::MAX } else { a.trailing_zeros() }),
        Op::VFfbhI32 => map1(w, i, ffbh_i32),
        Op::VAddU32 => map2(w, i, u32::wrapping_add),
        Op::VSubU32 => map2(w, i, u32::wrapping_sub),
        Op::VSubrevU32 => map2(w, i, |a, b| b.wrapping_sub(a)),
        Op::VAndB32 => map2(w, i, |a, b| a & b),
        Op::VOrB32 => map2(w, i, |a, b| a | b),
        Op::VXorB32 => map2(w, i, |a, b| a ^ b),
        Op::VXnorB32 => map2(w, i, |a, b| !(a ^ b)),
        Op::VLshlrevB32 => map2(w, i, |a, b| b << (a & 31)),
        Op::VLshrrevB32 => map2(w, i, |a, b| b >> (a & 31)),
        Op::VAshrrevI32 => map2(w, i, |a, b| ((b as i32) >> (a & 31)) as u32),
        Op::VMinI32 => map2(w, i, |a, b| (a as i32).min(b as i32) as u32),
        Op::VMaxI32 => map2(w, i, |a, b| (a as i32).max(b as i32) as u32),
        Op::VMinU32 => map2(w, i, u32::min),
        Op::VMaxU32 => map2(w, i, u32::max),
        Op::VMulI32I24 => map2(w, i, |a, b| (sext24(a) * sext24(b)) as u32),
        Op::VMulHiI32I24 => map2(w, i, |a, b| ((sext24(a) * sext24(b)) >> 32) as u32),
        Op::VMulU32U24 => {
            map2(w, i, |a, b| (u64::from(a & 0xFF_FFFF) * u64::from(b & 0xFF_FFFF)) as u32)
        }
        Op::VMulHiU32U24 => {
            map2(w, i, |a, b| ((u64::from(a & 0xFF_FFFF) * u64::from(b & 0xFF_FFFF)) >> 32) as u32)
        }
        Op::VMulLoU32 => map2(w, i, u32::wrapping_mul),
        Op::VMulHiU32 => map2(w, i, |a, b| ((u64::from(a) * u64::from(b)) >> 32) as u32),
        Op::VMulHiI32 => {
            map2(w, i, |a, b| ((i64::from(a as i32) * i64::from(b as i32)) >> 32) as u32)
        }
        Op::VBcntU32B32 => map2(w, i, |a, b| a.count_ones().wrapping_add(b)),
        Op::VBfmB32 => map2(w, i, |a, b| (((1u64 << (a & 31)) - 1) as u32) << (b & 31)),
        Op::VMbcntLoU32B32 => mbcnt(w, i, false),
        Op::VMbcntHiU32B32 => mbcnt(w, i, true),
        Op::VMadI32I24 => map3(w, i, |a, b, c| ((sext24(a) * sext24(b)) as u32).wrapping_add(c)),
        Op::VMadU32U24 => map3(w, i, |a, b, c| {
            ((u64::from(a & 0xFF_FFFF) * u64::from(b & 0xFF_FFFF)) as u32).wrapping_add(c)
        }),
        Op::VBfeU32 => map3(w, i, |a, b, c| bfe(a, b, c, false)),
        Op::VBfeI32 => map3(w, i, |a, b, c| bfe(a, b, c, true)),
        Op::VBfiB32 => map3(w, i, |a, b, c| (a & b) | (!a & c)),
        Op::VAlignbitB32 => {
            map3(w, i, |a, b, c| ((u64::from(a) << 32 | u64::from(b)) >> (c & 31)) as u32)
        }
        Op::VAlignbyteB32 => {
            map3(w, i, |a, b, c| ((u64::from(a) << 32 | u64::from(b)) >> (8 * (c & 3))) as u32)
        }
        Op::VMin3I32 => map3(w, i, |a, b, c| (a as i32).min(b as i32).min(c as i32) as u32),
        Op::VMin3U32 => map3(w, i, |a, b, c| a.min(b).min(c)),
        Op::VMax3I32 => map3(w, i, |a, b, c| (a as i32).max(b as i32).max(c as i32) as u32),
        Op::VMax3U32 => map3(w, i, |a, b, c| a.max(b).max(c)),
        Op::VMed3I32 => map3(w, i, |a, b, c| med3(a as i32, b as i32, c as i32) as u32),
        Op::VMed3U32 => map3(w, i, med3),
        Op::VPermB32 => map3(w, i, perm),
        Op::VLshlAddU32 => map3(w, i, |a, b, c| (a << (b & 31)).wrapping_add(c)),
        Op::VAddLshlU32 => map3(w, i, |a, b, c| a.wrapping_add(b) << (c & 31)),
        Op::VAdd3U32 => map3(w, i, |a, b, c| a.wrapping_add(b).wrapping_add(c)),
        Op::VLshlOrB32 => map3(w, i, |a, b, c| (a << (b & 31)) | c),
        Op::VAndOrB32 => map3(w, i, |a, b, c| (a & b) | c),
        Op::VOr3B32 => map3(w, i, |a, b, c| a | b | c),
        Op::VXadU32 => map3(w, i, |a, b, c| (a ^ b).wrapping_add(c)),
        Op::VAddCoU32 => carry_op(w, i, false, |a, b, _| a.overflowing_add(b)),
        Op::VSubCoU32 => carry_op(w, i, false, |a, b, _| (a.wrapping_sub(b), b > a)),
        Op::VSubrevCoU32 => carry_op(w, i, false, |a, b, _| (b.wrapping_sub(a), a > b)),
        Op::VAddcCoU32 => carry_op(w, i, true, |a, b, c| {
            let t = u64::from(a) + u64::from(b) + u64::from(c);
            (t as u32, t >> 32 != 0)
        }),
        Op::VSubbCoU32 => carry_op(w, i, true, |a, b, c| {
            (a.wrapping_sub(b).wrapping_sub(c), u64::from(b) + u64::from(c) > u64::from(a))
        }),
        Op::VSubbrevCoU32 => carry_op(w, i, true, |a, b, c| {
            (b.wrapping_sub(a).wrapping_sub(c), u64::from(a) + u64::from(c) > u64::from(b))
        }),
        Op::VAddI32 => map2(w, i, u32::wrapping_add),
        Op::VAddU16
        | Op::VSubU16
        | Op::VSubrevU16
        | Op::VMulLoU16
        | Op::VLshlrevB16
        | Op::VLshrrevB16
        | Op::VAshrrevI16
        | Op::VMaxU16
        | Op::VMaxI16
        | Op::VMinU16
        | Op::VMinI16 => map16(w, i),
        Op::VSubI32 => map2(w, i, u32::wrapping_sub),
        Op::VCndmaskB32 => cndmask(w, i),
        Op::VLshlrevB64 => shift64(w, i, |s, v| v << (s & 63)),
        Op::VLshrrevB64 => shift64(w, i, |s, v| v >> (s & 63)),
        Op::VAshrrevI64 => shift64(w, i, |s, v| ((v as i64) >> (s & 63)) as u64),
        Op::VMadU64U32 | Op::VMadI64I32 => mad64(w, i),
        Op::VLshlAddU64 => lshl_add64(w, i),
        Op::VMovB64 => w.lanes64(i, i.src[0], Kind64::U).and_then(|a| out64(w, i, &a)),
        _ => return None,
    })
}

fn mbcnt(w: &mut Wave, i: &Inst, hi: bool) -> R {
    let a = w.lanes(i, i.src[0])?;
    let b = w.lanes(i, i.src[1])?;
    let mut d = [0u32; LANES];
    for l in 0..LANES {
        // The lanes below this one, in this half of the wave.
        let below = if hi {
            if l < 32 { 0 } else { (1u64 << (l - 32)) - 1 }
        } else if l < 32 {
            (1u64 << l) - 1
        } else {
            u64::from(u32::MAX)
        };
        d[l] = (u64::from(a[l]) & below).count_ones().wrapping_add(b[l]);
    }
    out32(w, i, &d)
}

/// `v_cndmask_b32`: the VOP3 (and SDWA) form takes the float source modifiers, applied to
/// the sign bit as for any f32 operand (`abs` clears it, then `neg` flips it).
fn cndmask(w: &mut Wave, i: &Inst) -> R {
    let m = if i.enc == Enc::Vop3 { w.scalar64(i, i.src[2], Kind64::U)? } else { w.vcc() };
    let mods = |k: usize| {
        let clear = if i.abs >> k & 1 != 0 { 0x7FFF_FFFF } else { u32::MAX };
        let flip = if i.neg >> k & 1 != 0 { 0x8000_0000 } else { 0 };
        (clear, flip)
    };
    let ((ca, fa), (cb, fb)) = (mods(0), mods(1));
    let (mut ta, mut tb) = ([0; LANES], [0; LANES]);
    let a = w.src_lanes(i, i.src[0], &mut ta)?;
    let b = w.src_lanes(i, i.src[1], &mut tb)?;
    let d: [u32; LANES] =
        std::array::from_fn(|l| if m >> l & 1 != 0 { (b[l] & cb) ^ fb } else { (a[l] & ca) ^ fa });
    out32(w, i, &d)
}

fn shift64(w: &mut Wave, i: &Inst, f: impl Fn(u32, u64) -> u64) -> R {
    let s = w.src(i, i.src[0])?;
    let kind = if i.op == Op::VAshrrevI64 { Kind64::I } else { Kind64::U };
    let v = w.src64(i, i.src[1], kind)?;
    let d: [u64; LANES] = std::array::from_fn(|l| f(s.at(l), v.at(l)));
    out64(w, i, &d)
}

fn mad64(w: &mut Wave, i: &Inst) -> R {
    no_clamp(i)?;
    let signed = i.op == Op::VMadI64I32;
    let a = w.lanes(i, i.src[0])?;
    let b = w.lanes(i, i.src[1])?;
    let c = w.lanes64(i, i.src[2], if signed { Kind64::I } else { Kind64::U })?;
    let exec = w.exec();
    let mut d = [0u64; LANES];
    let mut carry = 0u64;
    for l in 0..LANES {
        let (r, o) = if signed {
            let p = i128::from(a[l] as i32) * i128::from(b[l] as i32) + i128::from(c[l] as i64);
            (p as u64, p > i128::from(i64::MAX) || p < i128::from(i64::MIN))
        } else {
            let p = u128::from(a[l]) * u128::from(b[l]) + u128::from(c[l]);
            (p as u64, p >> 64 != 0)
        };
        d[l] = r;
        carry |= u64::from(o) << l;
    }
    out64(w, i, &d)?;
    w.set_s64(i.sdst, carry & exec);
    Ok(())
}

fn lshl_add64(w: &mut Wave, i: &Inst) -> R {
    let a = w.src64(i, i.src[0], Kind64::U)?;
    let s = w.src(i, i.src[1])?;
    let c = w.src64(i, i.src[2], Kind64::U)?;
    let d: [u64; LANES] =
        std::array::from_fn(|l| (a.at(l) << (s.at(l) & 63)).wrapping_add(c.at(l)));
    out64(w, i, &d)
}
