//! The rest of the vector ALU: lane access (`v_readfirstlane_b32`, `v_readlane_b32`,
//! `v_writelane_b32`), the accumulation registers of gfx90a/gfx942 (`v_accvgpr_read_b32`,
//! `v_accvgpr_write_b32`, `v_accvgpr_mov_b32`) and the packed 32-bit operations of VOP3P
//! (`v_pk_mov_b32`, `v_pk_add_f32`, `v_pk_mul_f32`, `v_pk_fma_f32`), whose `op_sel` and
//! `op_sel_hi` pick the low or high dword of each 64-bit source for the low and high result.

use super::super::Op;
use super::super::fault::WaveFault;
use super::super::inst::{Inst, VGPR, flag};
use super::super::limits::LANES;
use super::super::wave::{Kind64, Wave, merge};
use super::vint::out64;

type R = Result<(), WaveFault>;

/// `i.src[k]` must be a VGPR; its register number.
fn vreg(i: &Inst, k: usize) -> Result<usize, WaveFault> {
    let c = i.src[k];
    if c < VGPR {
        return Err(WaveFault::operand(i, c));
    }
    Ok(usize::from(c - VGPR))
}

/// Whether source `k` takes its high dword for the low (`hi == false`) or high result.
fn sel(i: &Inst, k: usize, hi: bool) -> bool {
    if hi {
        if k < 2 { i.omod >> k & 1 != 0 } else { i.op_sel >> 3 & 1 != 0 }
    } else {
        i.op_sel >> k & 1 != 0
    }
}

fn packed(w: &mut Wave, i: &Inst) -> R {
    let n = match i.op {
        Op::VPkFmaF32 => 3,
        _ => 2,
    };
    let mut s = [[0u64; LANES]; 3];
    for (k, slot) in s.iter_mut().enumerate().take(n) {
        *slot = w.lanes64(i, i.src[k], Kind64::U)?;
    }
    let clamp = i.has(flag::CLAMP);
    let mut d = [0u64; LANES];
    for l in 0..LANES {
        let mut half = [0u32; 2];
        for (h, out) in half.iter_mut().enumerate() {
            let hi = h == 1;
            let mut x = [0f32; 3];
            for k in 0..n {
                let v = s[k][l];
                let mut b = if sel(i, k, hi) { (v >> 32) as u32 } else { v as u32 };
                let negs = if hi { i.abs } else { i.neg };
                if negs >> k & 1 != 0 {
                    b ^= 0x8000_0000;
                }
                x[k] = f32::from_bits(b);
            }
            let mut r = match i.op {
                Op::VPkAddF32 => x[0] + x[1],
                Op::VPkMulF32 => x[0] * x[1],
                _ => x[0].mul_add(x[1], x[2]),
            };
            if clamp {
                r = if r.is_nan() { 0.0 } else { r.clamp(0.0, 1.0) };
            }
            *out = r.to_bits();
        }
        d[l] = u64::from(half[0]) | u64::from(half[1]) << 32;
    }
    out64(w, i, &d)
}

fn pk_mov(w: &mut Wave, i: &Inst) -> R {
    let a = w.lanes64(i, i.src[0], Kind64::U)?;
    let b = w.lanes64(i, i.src[1], Kind64::U)?;
    let mut d = [0u64; LANES];
    for l in 0..LANES {
        let lo = if i.op_sel & 1 != 0 { a[l] >> 32 } else { a[l] & 0xFFFF_FFFF };
        let hi = if i.op_sel & 2 != 0 { b[l] >> 32 } else { b[l] & 0xFFFF_FFFF };
        d[l] = lo | hi << 32;
    }
    out64(w, i, &d)
}

/// Lane access, accumulation registers and packed operations.
pub(super) fn vmisc(w: &mut Wave, i: &Inst) -> R {
    let exec = w.exec();
    match i.op {
        Op::VNop | Op::VClrexcp => {}
        Op::VReadfirstlaneB32 => {
            let lane = if exec == 0 { 0 } else { exec.trailing_zeros() as usize };
            let v = w.lanes(i, i.src[0])?[lane];
            w.set_s32(i.dst, v);
        }
        Op::VReadlaneB32 => {
            let lane = (w.scalar(i, i.src[1])? & 63) as usize;
            let v = w.vgpr(i, vreg(i, 0)?)?[lane];
            w.set_s32(i.dst, v);
        }
        Op::VWritelaneB32 => {
            let v = w.scalar(i, i.src[0])?;
            let lane = (w.scalar(i, i.src[1])? & 63) as usize;
            w.vgpr_mut(i, usize::from(i.dst))?[lane] = v;
        }
        Op::VAccvgprReadB32 => {
            let a = *w.reg(i, vreg(i, 0)?, true)?;
            w.write_lanes(i, usize::from(i.dst), &a, exec)?;
        }
        Op::VAccvgprWriteB32 => {
            let v = w.lanes(i, i.src[0])?;
            merge(w.reg_mut(i, usize::from(i.dst), true)?, &v, exec);
        }
        Op::VAccvgprMovB32 => {
            let a = *w.reg(i, vreg(i, 0)?, true)?;
            merge(w.reg_mut(i, usize::from(i.dst), true)?, &a, exec);
        }
        Op::VPkMovB32 => pk_mov(w, i)?,
        Op::VPkAddF32 | Op::VPkMulF32 | Op::VPkFmaF32 => packed(w, i)?,
        _ => return Err(WaveFault::unsupported(i)),
    }
    Ok(())
}
