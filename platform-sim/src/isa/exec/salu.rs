//! The scalar ALU: SOP2, SOP1, SOPC and SOPK (Vega ISA manual, "Scalar ALU Operations").
//! Operations on 32-bit values use `s` codes; 64-bit ones read register pairs. SCC is written
//! where the manual says so.

use super::super::Op;
use super::super::fault::WaveFault;
use super::super::inst::Inst;
use super::super::memory::WaveMemory;
use super::super::wave::{Kind64, Wave};
use super::{Cx, hwreg};

fn bfe32(v: u32, ctl: u32, signed: bool) -> u32 {
    let off = ctl & 31;
    let width = (ctl >> 16) & 0x7F;
    if width == 0 {
        return 0;
    }
    let shifted = v >> off;
    if width >= 32 {
        return shifted;
    }
    let field = shifted & ((1u32 << width) - 1);
    if signed && field >> (width - 1) & 1 != 0 { field | !((1u32 << width) - 1) } else { field }
}

fn bfe64(v: u64, ctl: u32, signed: bool) -> u64 {
    let off = ctl & 63;
    let width = (ctl >> 16) & 0x7F;
    if width == 0 {
        return 0;
    }
    let shifted = v >> off;
    if width >= 64 {
        return shifted;
    }
    let field = shifted & ((1u64 << width) - 1);
    if signed && field >> (width - 1) & 1 != 0 { field | !((1u64 << width) - 1) } else { field }
}

/// SOP2.
pub(super) fn sop2(w: &mut Wave, i: &Inst) -> Result<(), WaveFault> {
    let s32 = |w: &Wave, n: usize| w.scalar(i, i.src[n]);
    let s64 = |w: &Wave, n: usize, k| w.scalar64(i, i.src[n], k);
    let (a, b) = (s32(w, 0)?, s32(w, 1)?);
    let scc = w.scc;
    let (d, new_scc): (u32, Option<bool>) = match i.op {
        Op::SAddU32 => {
            let (d, c) = a.overflowing_add(b);
            (d, Some(c))
        }
        Op::SSubU32 => (a.wrapping_sub(b), Some(b > a)),
        Op::SAddI32 => {
            let (d, o) = (a as i32).overflowing_add(b as i32);
            (d as u32, Some(o))
        }
        Op::SSubI32 => {
            let (d, o) = (a as i32).overflowing_sub(b as i32);
            (d as u32, Some(o))
        }
        Op::SAddcU32 => {
            let t = u64::from(a) + u64::from(b) + u64::from(scc);
            (t as u32, Some(t >> 32 != 0))
        }
        Op::SSubbU32 => {
            let t = u64::from(a).wrapping_sub(u64::from(b)).wrapping_sub(u64::from(scc));
            (t as u32, Some(u64::from(b) + u64::from(scc) > u64::from(a)))
        }
        Op::SMinI32 => ((a as i32).min(b as i32) as u32, Some((a as i32) < (b as i32))),
        Op::SMinU32 => (a.min(b), Some(a < b)),
        Op::SMaxI32 => ((a as i32).max(b as i32) as u32, Some((a as i32) > (b as i32))),
        Op::SMaxU32 => (a.max(b), Some(a > b)),
        Op::SCselectB32 => (if scc { a } else { b }, None),
        Op::SAndB32 => logic(a & b),
        Op::SOrB32 => logic(a | b),
        Op::SXorB32 => logic(a ^ b),
        Op::SAndn2B32 => logic(a & !b),
        Op::SOrn2B32 => logic(a | !b),
        Op::SNandB32 => logic(!(a & b)),
        Op::SNorB32 => logic(!(a | b)),
        Op::SXnorB32 => logic(!(a ^ b)),
        Op::SLshlB32 => logic(a << (b & 31)),
        Op::SLshrB32 => logic(a >> (b & 31)),
        Op::SAshrI32 => logic(((a as i32) >> (b & 31)) as u32),
        Op::SBfmB32 => ((((1u64 << (a & 31)) - 1) as u32) << (b & 31), None),
        Op::SMulI32 => (a.wrapping_mul(b), None),
        Op::SBfeU32 => logic(bfe32(a, b, false)),
        Op::SBfeI32 => logic(bfe32(a, b, true)),
        Op::SAbsdiffI32 => logic((a as i32).wrapping_sub(b as i32).unsigned_abs()),
        Op::SMulHiU32 => (((u64::from(a) * u64::from(b)) >> 32) as u32, None),
        Op::SMulHiI32 => (((i64::from(a as i32) * i64::from(b as i32)) >> 32) as u32, None),
        Op::SLshl1AddU32 | Op::SLshl2AddU32 | Op::SLshl3AddU32 | Op::SLshl4AddU32 => {
            let sh = match i.op {
                Op::SLshl1AddU32 => 1,
                Op::SLshl2AddU32 => 2,
                Op::SLshl3AddU32 => 3,
                _ => 4,
            };
            let t = (u64::from(a) << sh) + u64::from(b);
            (t as u32, Some(t >> 32 != 0))
        }
        Op::SPackLlB32B16 => ((a & 0xFFFF) | b << 16, None),
        Op::SPackLhB32B16 => ((a & 0xFFFF) | (b & 0xFFFF_0000), None),
        Op::SPackHhB32B16 => (a >> 16 | (b & 0xFFFF_0000), None),
        _ => return sop2_64(w, i, s64),
    };
    w.set_s32(i.dst, d);
    if let Some(c) = new_scc {
        w.scc = c;
    }
    Ok(())
}

fn logic(d: u32) -> (u32, Option<bool>) {
    (d, Some(d != 0))
}

fn sop2_64(
    w: &mut Wave,
    i: &Inst,
    s64: impl Fn(&Wave, usize, Kind64) -> Result<u64, WaveFault>,
) -> Result<(), WaveFault> {
    let u = Kind64::U;
    let shift = || w.scalar(i, i.src[1]);
    let (d, scc): (u64, Option<bool>) = match i.op {
        Op::SCselectB64 => (if w.scc { s64(w, 0, u)? } else { s64(w, 1, u)? }, None),
        Op::SAndB64 => logic64(s64(w, 0, u)? & s64(w, 1, u)?),
        Op::SOrB64 => logic64(s64(w, 0, u)? | s64(w, 1, u)?),
        Op::SXorB64 => logic64(s64(w, 0, u)? ^ s64(w, 1, u)?),
        Op::SAndn2B64 => logic64(s64(w, 0, u)? & !s64(w, 1, u)?),
        Op::SOrn2B64 => logic64(s64(w, 0, u)? | !s64(w, 1, u)?),
        Op::SNandB64 => logic64(!(s64(w, 0, u)? & s64(w, 1, u)?)),
        Op::SNorB64 => logic64(!(s64(w, 0, u)? | s64(w, 1, u)?)),
        Op::SXnorB64 => logic64(!(s64(w, 0, u)? ^ s64(w, 1, u)?)),
        Op::SLshlB64 => logic64(s64(w, 0, u)? << (shift()? & 63)),
        Op::SLshrB64 => logic64(s64(w, 0, u)? >> (shift()? & 63)),
        Op::SAshrI64 => logic64(((s64(w, 0, Kind64::I)? as i64) >> (shift()? & 63)) as u64),
        Op::SBfmB64 => {
            let (a, b) = (w.scalar(i, i.src[0])? & 63, shift()? & 63);
            ((((1u128 << a) - 1) as u64) << b, None)
        }
        Op::SBfeU64 => logic64(bfe64(s64(w, 0, u)?, shift()?, false)),
        Op::SBfeI64 => logic64(bfe64(s64(w, 0, Kind64::I)?, shift()?, true)),
        _ => return Err(WaveFault::unsupported(i)),
    };
    w.set_s64(i.dst, d);
    if let Some(c) = scc {
        w.scc = c;
    }
    Ok(())
}

fn logic64(d: u64) -> (u64, Option<bool>) {
    (d, Some(d != 0))
}

fn wqm(v: u64) -> u64 {
    let mut d = 0;
    for q in 0..16 {
        if v >> (q * 4) & 0xF != 0 {
            d |= 0xF << (q * 4);
        }
    }
    d
}

fn quadmask(v: u64) -> u64 {
    let mut d = 0;
    for q in 0..16 {
        if v >> (q * 4) & 0xF != 0 {
            d |= 1 << q;
        }
    }
    d
}

fn flbit_signed(v: i64, bits: u32) -> u32 {
    let x = if v < 0 { !v } else { v };
    if x == 0 { u32::MAX } else { x.leading_zeros() - (64 - bits) }
}

/// SOP1.
pub(super) fn sop1<M: WaveMemory>(
    w: &mut Wave,
    i: &Inst,
    _cx: &mut Cx<'_, M>,
) -> Result<(), WaveFault> {
    let u = Kind64::U;
    let a32 = |w: &Wave| w.scalar(i, i.src[0]);
    let a64 = |w: &Wave| w.scalar64(i, i.src[0], u);
    let exec = w.exec();
    // 32-bit results.
    let r32: Option<(u32, Option<bool>)> = match i.op {
        Op::SMovB32 => Some((a32(w)?, None)),
        Op::SCmovB32 => {
            if !w.scc {
                return Ok(());
            }
            Some((a32(w)?, None))
        }
        Op::SNotB32 => Some(logic(!a32(w)?)),
        Op::SWqmB32 => Some(logic(wqm(u64::from(a32(w)?)) as u32)),
        Op::SBrevB32 => Some((a32(w)?.reverse_bits(), None)),
        Op::SBcnt0I32B32 => Some(logic(a32(w)?.count_zeros())),
        Op::SBcnt0I32B64 => Some(logic(a64(w)?.count_zeros())),
        Op::SBcnt1I32B32 => Some(logic(a32(w)?.count_ones())),
        Op::SBcnt1I32B64 => Some(logic(a64(w)?.count_ones())),
        Op::SFf0I32B32 => Some((first(!u64::from(a32(w)?) & 0xFFFF_FFFF), None)),
        Op::SFf0I32B64 => Some((first(!a64(w)?), None)),
        Op::SFf1I32B32 => Some((first(u64::from(a32(w)?)), None)),
        Op::SFf1I32B64 => Some((first(a64(w)?), None)),
        Op::SFlbitI32B32 => {
            let v = a32(w)?;
            Some((if v == 0 { u32::MAX } else { v.leading_zeros() }, None))
        }
        Op::SFlbitI32B64 => {
            let v = a64(w)?;
            Some((if v == 0 { u32::MAX } else { v.leading_zeros() }, None))
        }
        Op::SFlbitI32 => Some((flbit_signed(i64::from(a32(w)? as i32), 32), None)),
        Op::SFlbitI32I64 => {
            Some((flbit_signed(w.scalar64(i, i.src[0], Kind64::I)? as i64, 64), None))
        }
        Op::SSextI32I8 => Some((a32(w)? as u8 as i8 as i32 as u32, None)),
        Op::SSextI32I16 => Some((a32(w)? as u16 as i16 as i32 as u32, None)),
        Op::SBitset0B32 => {
            Some((w.s.get(usize::from(i.dst)).copied().unwrap_or(0) & !(1 << (a32(w)? & 31)), None))
        }
        Op::SBitset1B32 => {
            Some((w.s.get(usize::from(i.dst)).copied().unwrap_or(0) | 1 << (a32(w)? & 31), None))
        }
        Op::SAbsI32 => Some(logic((a32(w)? as i32).unsigned_abs())),
        _ => None,
    };
    if let Some((d, scc)) = r32 {
        w.set_s32(i.dst, d);
        if let Some(c) = scc {
            w.scc = c;
        }
        return Ok(());
    }
    let saveexec = |f: fn(u64, u64) -> u64, w: &mut Wave| -> Result<(), WaveFault> {
        let s = a64(w)?;
        let new = f(s, exec);
        w.set_s64(i.dst, exec);
        w.set_exec(new);
        w.scc = new != 0;
        Ok(())
    };
    match i.op {
        Op::SMovB64 => {
            let v = a64(w)?;
            w.set_s64(i.dst, v);
        }
        Op::SCmovB64 => {
            if w.scc {
                let v = a64(w)?;
                w.set_s64(i.dst, v);
            }
        }
        Op::SNotB64 => set64(w, i.dst, !a64(w)?, true),
        Op::SWqmB64 => set64(w, i.dst, wqm(a64(w)?), true),
        Op::SBrevB64 => set64(w, i.dst, a64(w)?.reverse_bits(), false),
        Op::SQuadmaskB32 => {
            let d = quadmask(u64::from(a32(w)?)) as u32;
            w.set_s32(i.dst, d);
            w.scc = d != 0;
        }
        Op::SQuadmaskB64 => set64(w, i.dst, quadmask(a64(w)?), true),
        Op::SBitreplicateB64B32 => {
            let v = a32(w)?;
            let mut d = 0u64;
            for b in 0..32 {
                if v >> b & 1 != 0 {
                    d |= 3 << (2 * b);
                }
            }
            w.set_s64(i.dst, d);
        }
        Op::SBitset0B64 => {
            let b = a32(w)? & 63;
            let d = w.s64(i.dst) & !(1 << b);
            w.set_s64(i.dst, d);
        }
        Op::SBitset1B64 => {
            let b = a32(w)? & 63;
            let d = w.s64(i.dst) | 1 << b;
            w.set_s64(i.dst, d);
        }
        Op::SGetpcB64 => {
            let pc = w.pc;
            w.set_s64(i.dst, pc);
        }
        Op::SSetpcB64 => w.pc = a64(w)? & !3,
        Op::SSwappcB64 => {
            let target = a64(w)? & !3;
            let pc = w.pc;
            w.set_s64(i.dst, pc);
            w.pc = target;
        }
        Op::SRfeB64 => {
            // Return from the trap handler: the saved PC (48 bits), privilege dropped.
            w.pc = a64(w)? & 0xFFFF_FFFF_FFFC;
            w.hw.privileged = false;
        }
        Op::SAndSaveexecB64 => saveexec(|s, e| s & e, w)?,
        Op::SOrSaveexecB64 => saveexec(|s, e| s | e, w)?,
        Op::SXorSaveexecB64 => saveexec(|s, e| s ^ e, w)?,
        Op::SAndn2SaveexecB64 => saveexec(|s, e| s & !e, w)?,
        Op::SOrn2SaveexecB64 => saveexec(|s, e| s | !e, w)?,
        Op::SNandSaveexecB64 => saveexec(|s, e| !(s & e), w)?,
        Op::SNorSaveexecB64 => saveexec(|s, e| !(s | e), w)?,
        Op::SXnorSaveexecB64 => saveexec(|s, e| !(s ^ e), w)?,
        Op::SAndn1SaveexecB64 => saveexec(|s, e| !s & e, w)?,
        Op::SOrn1SaveexecB64 => saveexec(|s, e| !s | e, w)?,
        Op::SAndn1WrexecB64 | Op::SAndn2WrexecB64 => {
            let s = a64(w)?;
            let new = if i.op == Op::SAndn1WrexecB64 { !s & exec } else { s & !exec };
            w.set_exec(new);
            w.set_s64(i.dst, new);
            w.scc = new != 0;
        }
        _ => return Err(WaveFault::unsupported(i)),
    }
    Ok(())
}

fn set64(w: &mut Wave, dst: u16, d: u64, scc: bool) {
    w.set_s64(dst, d);
    if scc {
        w.scc = d != 0;
    }
}

fn first(v: u64) -> u32 {
    if v == 0 { u32::MAX } else { v.trailing_zeros() }
}

/// SOPC.
pub(super) fn sopc(w: &mut Wave, i: &Inst) -> Result<(), WaveFault> {
    let (a, b) = (w.scalar(i, i.src[0])?, w.scalar(i, i.src[1])?);
    let (sa, sb) = (a as i32, b as i32);
    w.scc = match i.op {
        Op::SCmpEqI32 | Op::SCmpEqU32 => a == b,
        Op::SCmpLgI32 | Op::SCmpLgU32 => a != b,
        Op::SCmpGtI32 => sa > sb,
        Op::SCmpGeI32 => sa >= sb,
        Op::SCmpLtI32 => sa < sb,
        Op::SCmpLeI32 => sa <= sb,
        Op::SCmpGtU32 => a > b,
        Op::SCmpGeU32 => a >= b,
        Op::SCmpLtU32 => a < b,
        Op::SCmpLeU32 => a <= b,
        Op::SBitcmp0B32 => a >> (b & 31) & 1 == 0,
        Op::SBitcmp1B32 => a >> (b & 31) & 1 == 1,
        Op::SBitcmp0B64 => w.scalar64(i, i.src[0], Kind64::U)? >> (b & 63) & 1 == 0,
        Op::SBitcmp1B64 => w.scalar64(i, i.src[0], Kind64::U)? >> (b & 63) & 1 == 1,
        Op::SCmpEqU64 => {
            w.scalar64(i, i.src[0], Kind64::U)? == w.scalar64(i, i.src[1], Kind64::U)?
        }
        Op::SCmpLgU64 => {
            w.scalar64(i, i.src[0], Kind64::U)? != w.scalar64(i, i.src[1], Kind64::U)?
        }
        _ => return Err(WaveFault::unsupported(i)),
    };
    Ok(())
}

/// SOPK.
pub(super) fn sopk<M: WaveMemory>(
    w: &mut Wave,
    i: &Inst,
    cx: &mut Cx<'_, M>,
) -> Result<(), WaveFault> {
    let k = i.imm;
    let ku = (i.imm as u32) & 0xFFFF;
    let d = w.s.get(usize::from(i.dst)).copied().ok_or(WaveFault::operand(i, i.dst))?;
    let sd = d as i32;
    match i.op {
        Op::SMovkI32 => w.set_s32(i.dst, k as u32),
        Op::SCmovkI32 => {
            if w.scc {
                w.set_s32(i.dst, k as u32);
            }
        }
        Op::SCmpkEqI32 => w.scc = sd == k,
        Op::SCmpkLgI32 => w.scc = sd != k,
        Op::SCmpkGtI32 => w.scc = sd > k,
        Op::SCmpkGeI32 => w.scc = sd >= k,
        Op::SCmpkLtI32 => w.scc = sd < k,
        Op::SCmpkLeI32 => w.scc = sd <= k,
        Op::SCmpkEqU32 => w.scc = d == ku,
        Op::SCmpkLgU32 => w.scc = d != ku,
        Op::SCmpkGtU32 => w.scc = d > ku,
        Op::SCmpkGeU32 => w.scc = d >= ku,
        Op::SCmpkLtU32 => w.scc = d < ku,
        Op::SCmpkLeU32 => w.scc = d <= ku,
        Op::SAddkI32 => {
            let (r, o) = sd.overflowing_add(k);
            w.set_s32(i.dst, r as u32);
            w.scc = o;
        }
        Op::SMulkI32 => w.set_s32(i.dst, sd.wrapping_mul(k) as u32),
        Op::SCallB64 => {
            let ret = w.pc;
            w.set_s64(i.dst, ret);
            w.pc = ret.wrapping_add_signed(i64::from(k) * 4);
        }
        Op::SGetregB32 => {
            let v = hwreg::get(w, i, ku, cx)?;
            w.set_s32(i.dst, v);
        }
        Op::SSetregB32 => {
            let v = d;
            hwreg::set(w, i, ku, v, cx)?;
        }
        Op::SSetregImm32B32 => hwreg::set(w, i, ku, i.lit, cx)?,
        _ => return Err(WaveFault::unsupported(i)),
    }
    Ok(())
}
