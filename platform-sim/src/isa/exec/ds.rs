//! The local data share (DS): LDS reads, writes, atomics and lane permutes over the
//! work-group's LDS, the GWS semaphores (`ds_gws_init`, `ds_gws_sema_v`, `ds_gws_sema_p`,
//! `ds_gws_sema_br`) and GWS barriers (`ds_gws_barrier`).
//!
//! An LDS address is the lane's 32-bit VGPR address plus the instruction offset (`offset1:
//! offset0` as 16 bits for one-address forms; each offset times the data size, or times 64
//! data sizes for `*st64*`, for the two-address forms). Accesses past the work-group's LDS
//! read zeros and write nothing. GWS resource ids are `M0[21:16] + offset0`; a
//! `ds_gws_sema_p` on a zero semaphore parks the wave until another wave's `sema_v` (of this
//! queue's dispatches) makes it positive. A `ds_gws_barrier` whose data0 (first active lane)
//! is `n` holds its wave until `n + 1` waves arrived at the resource's barrier (the meaning
//! LLVM's `llvm.amdgcn.ds.gws.barrier` gives the operand); the last one completes the round.

use super::super::Op;
use super::super::fault::WaveFault;
use super::super::inst::{Inst, M0, flag};
use super::super::limits::{GWS_RESOURCES, LANES};
use super::super::memory::{AtomicOp, WaveMemory};
use super::super::wave::{Wave, WaveState, active_lanes, merge};
use super::Cx;

#[derive(Clone, Copy)]
enum Lds {
    /// Read `bytes` at one address (sub-dword: sign-extend when `signed`).
    Read { bytes: u8, signed: bool },
    /// Read two `bytes`-sized values at `offset0` and `offset1` (scaled by `scale`).
    Read2 { bytes: u8, scale: u64 },
    /// Write `bytes` at one address.
    Write { bytes: u8 },
    /// Write two values.
    Write2 { bytes: u8, scale: u64 },
    /// Atomic; `ret` writes the old value to vdst.
    Atomic { op: AtomicOp, wide: bool, ret: bool },
    /// `ds_mskor_b32`: `(mem & ~data0) | data1`.
    Mskor { ret: bool },
    /// Lane swizzle within groups of lanes.
    Swizzle,
    /// Forward (`ds_permute_b32`) or backward (`ds_bpermute_b32`) lane permute.
    Permute { backward: bool },
}

fn kind(op: Op) -> Option<Lds> {
    use AtomicOp as A;
    use Lds::*;
    let at = |op, wide, ret| Atomic { op, wide, ret };
    Some(match op {
        Op::DsReadB32 => Read { bytes: 4, signed: false },
        Op::DsReadU8 => Read { bytes: 1, signed: false },
        Op::DsReadI8 => Read { bytes: 1, signed: true },
        Op::DsReadU16 => Read { bytes: 2, signed: false },
        Op::DsReadI16 => Read { bytes: 2, signed: true },
        Op::DsReadB64 => Read { bytes: 8, signed: false },
        Op::DsReadB96 => Read { bytes: 12, signed: false },
        Op::DsReadB128 => Read { bytes: 16, signed: false },
        Op::DsRead2B32 => Read2 { bytes: 4, scale: 4 },
        Op::DsRead2st64B32 => Read2 { bytes: 4, scale: 256 },
        Op::DsRead2B64 => Read2 { bytes: 8, scale: 8 },
        Op::DsRead2st64B64 => Read2 { bytes: 8, scale: 512 },
        Op::DsWriteB32 => Write { bytes: 4 },
        Op::DsWriteB8 => Write { bytes: 1 },
        Op::DsWriteB16 => Write { bytes: 2 },
        Op::DsWriteB64 => Write { bytes: 8 },
        Op::DsWriteB96 => Write { bytes: 12 },
        Op::DsWriteB128 => Write { bytes: 16 },
        Op::DsWrite2B32 => Write2 { bytes: 4, scale: 4 },
        Op::DsWrite2st64B32 => Write2 { bytes: 4, scale: 256 },
        Op::DsWrite2B64 => Write2 { bytes: 8, scale: 8 },
        Op::DsWrite2st64B64 => Write2 { bytes: 8, scale: 512 },
        Op::DsAddU32 => at(A::Add, false, false),
        Op::DsSubU32 => at(A::Sub, false, false),
        Op::DsRsubU32 => at(A::RSub, false, false),
        Op::DsIncU32 => at(A::Inc, false, false),
        Op::DsDecU32 => at(A::Dec, false, false),
        Op::DsMinI32 => at(A::SMin, false, false),
        Op::DsMaxI32 => at(A::SMax, false, false),
        Op::DsMinU32 => at(A::UMin, false, false),
        Op::DsMaxU32 => at(A::UMax, false, false),
        Op::DsAndB32 => at(A::And, false, false),
        Op::DsOrB32 => at(A::Or, false, false),
        Op::DsXorB32 => at(A::Xor, false, false),
        Op::DsCmpstB32 => at(A::CmpSwap, false, false),
        Op::DsAddF32 => at(A::AddF32, false, false),
        Op::DsAddRtnU32 => at(A::Add, false, true),
        Op::DsSubRtnU32 => at(A::Sub, false, true),
        Op::DsRsubRtnU32 => at(A::RSub, false, true),
        Op::DsIncRtnU32 => at(A::Inc, false, true),
        Op::DsDecRtnU32 => at(A::Dec, false, true),
        Op::DsMinRtnI32 => at(A::SMin, false, true),
        Op::DsMaxRtnI32 => at(A::SMax, false, true),
        Op::DsMinRtnU32 => at(A::UMin, false, true),
        Op::DsMaxRtnU32 => at(A::UMax, false, true),
        Op::DsAndRtnB32 => at(A::And, false, true),
        Op::DsOrRtnB32 => at(A::Or, false, true),
        Op::DsXorRtnB32 => at(A::Xor, false, true),
        Op::DsWrxchgRtnB32 => at(A::Swap, false, true),
        Op::DsCmpstRtnB32 => at(A::CmpSwap, false, true),
        Op::DsAddU64 => at(A::Add, true, false),
        Op::DsAddRtnU64 => at(A::Add, true, true),
        Op::DsMskorB32 => Mskor { ret: false },
        Op::DsSwizzleB32 => Swizzle,
        Op::DsPermuteB32 => Permute { backward: false },
        Op::DsBpermuteB32 => Permute { backward: true },
        _ => return None,
    })
}

fn lds_read(lds: &[u8], addr: u64, out: &mut [u8]) {
    let a = usize::try_from(addr).unwrap_or(usize::MAX);
    match a.checked_add(out.len()).and_then(|e| lds.get(a..e)) {
        Some(s) => out.copy_from_slice(s),
        None => out.fill(0),
    }
}

fn lds_write(lds: &mut [u8], addr: u64, data: &[u8]) {
    let a = usize::try_from(addr).unwrap_or(usize::MAX);
    if let Some(s) = a.checked_add(data.len()).and_then(|e| lds.get_mut(a..e)) {
        s.copy_from_slice(data);
    }
}

fn gws<M: WaveMemory>(w: &mut Wave, i: &Inst, cx: &mut Cx<'_, M>) -> Result<(), WaveFault> {
    let id =
        ((w.s[usize::from(M0)] >> 16 & 0x3F) as usize + (i.imm as usize & 0x3F)) % GWS_RESOURCES;
    let exec = w.exec();
    let first = if exec == 0 { 0 } else { exec.trailing_zeros() as usize };
    let data = || -> Result<u32, WaveFault> { Ok(w.vgpr(i, usize::from(i.src[1]))?[first]) };
    match i.op {
        Op::DsGwsInit => cx.dev.gws[id] = data()?,
        Op::DsGwsSemaV => cx.dev.gws[id] = cx.dev.gws[id].wrapping_add(1),
        Op::DsGwsSemaBr => cx.dev.gws[id] = cx.dev.gws[id].wrapping_add(data()?),
        Op::DsGwsSemaP => {
            if cx.dev.gws[id] == 0 {
                // Not yet: run this instruction again once the semaphore is positive.
                w.pc = w.pc.wrapping_sub(u64::from(i.len));
                w.state = WaveState::Gws(id as u32);
                return Ok(());
            }
            cx.dev.gws[id] -= 1;
        }
        Op::DsGwsBarrier => {
            // data0 is the barrier's value: the waves that meet at it, minus one (LLVM's
            // `llvm.amdgcn.ds.gws.barrier`). The last to arrive completes the round and goes
            // on; the others wait for the round to complete.
            let waves = data()?.saturating_add(1);
            let arrived = cx.dev.gws_arrived[id] + 1;
            if arrived >= waves {
                cx.dev.gws_arrived[id] = 0;
                cx.dev.gws_rounds[id] = cx.dev.gws_rounds[id].wrapping_add(1);
            } else {
                cx.dev.gws_arrived[id] = arrived;
                w.state = WaveState::GwsBarrier { id: id as u32, round: cx.dev.gws_rounds[id] };
            }
        }
        _ => return Err(WaveFault::unsupported(i)),
    }
    cx.dev.effects += 1;
    Ok(())
}

/// DS.
pub(super) fn ds<M: WaveMemory>(
    w: &mut Wave,
    i: &Inst,
    cx: &mut Cx<'_, M>,
) -> Result<(), WaveFault> {
    if matches!(
        i.op,
        Op::DsGwsInit | Op::DsGwsSemaV | Op::DsGwsSemaBr | Op::DsGwsSemaP | Op::DsGwsBarrier
    ) {
        return gws(w, i, cx);
    }
    let Some(k) = kind(i.op) else {
        return Err(WaveFault::unsupported(i));
    };
    if i.has(flag::GDS) {
        return Err(WaveFault::illegal(i, "GDS memory is not modelled (only GWS)"));
    }
    let acc = i.has(flag::ACC);
    let exec = w.exec();
    let addr = *w.vgpr(i, usize::from(i.src[0]))?;
    let offset16 = u64::from(i.imm as u32 | i.imm2 << 8);
    let (off0, off1) = (u64::from(i.imm as u32), u64::from(i.imm2));
    let reg = |w: &Wave, n: usize| -> Result<[u32; LANES], WaveFault> { Ok(*w.reg(i, n, acc)?) };
    let (d0, d1) = (usize::from(i.src[1]), usize::from(i.src[2]));
    let dst = usize::from(i.dst);
    let mut out = [[0u32; LANES]; 4];
    let mut outs = 0usize;
    match k {
        Lds::Read { bytes, signed } => {
            outs = usize::from(bytes.div_ceil(4));
            for l in active_lanes(exec) {
                let mut b = [0u8; 16];
                lds_read(cx.lds, u64::from(addr[l]) + offset16, &mut b[..usize::from(bytes)]);
                match (bytes, signed) {
                    (1, true) => out[0][l] = b[0] as i8 as i32 as u32,
                    (2, true) => out[0][l] = i16::from_le_bytes([b[0], b[1]]) as i32 as u32,
                    _ => {
                        for (j, o) in out.iter_mut().enumerate().take(outs) {
                            o[l] = u32::from_le_bytes([
                                b[4 * j],
                                b[4 * j + 1],
                                b[4 * j + 2],
                                b[4 * j + 3],
                            ]);
                        }
                    }
                }
            }
        }
        Lds::Read2 { bytes, scale } => {
            let per = usize::from(bytes / 4);
            outs = 2 * per;
            for l in active_lanes(exec) {
                for (h, off) in [off0, off1].into_iter().enumerate() {
                    let mut b = [0u8; 8];
                    lds_read(
                        cx.lds,
                        u64::from(addr[l]) + off * scale,
                        &mut b[..usize::from(bytes)],
                    );
                    for j in 0..per {
                        out[h * per + j][l] = u32::from_le_bytes([
                            b[4 * j],
                            b[4 * j + 1],
                            b[4 * j + 2],
                            b[4 * j + 3],
                        ]);
                    }
                }
            }
        }
        Lds::Write { bytes } => {
            let n = usize::from(bytes.div_ceil(4));
            let mut data = [[0u32; LANES]; 4];
            for (j, d) in data.iter_mut().enumerate().take(n) {
                *d = reg(w, d0 + j)?;
            }
            for l in active_lanes(exec) {
                let mut b = [0u8; 16];
                for j in 0..n {
                    b[4 * j..4 * j + 4].copy_from_slice(&data[j][l].to_le_bytes());
                }
                lds_write(cx.lds, u64::from(addr[l]) + offset16, &b[..usize::from(bytes)]);
            }
        }
        Lds::Write2 { bytes, scale } => {
            let per = usize::from(bytes / 4);
            let mut data = [[0u32; LANES]; 4];
            for j in 0..per {
                data[j] = reg(w, d0 + j)?;
                data[per + j] = reg(w, d1 + j)?;
            }
            for l in active_lanes(exec) {
                for (h, off) in [off0, off1].into_iter().enumerate() {
                    let mut b = [0u8; 8];
                    for j in 0..per {
                        b[4 * j..4 * j + 4].copy_from_slice(&data[h * per + j][l].to_le_bytes());
                    }
                    lds_write(cx.lds, u64::from(addr[l]) + off * scale, &b[..usize::from(bytes)]);
                }
            }
        }
        Lds::Atomic { op, wide, ret } => {
            let words = if wide { 2 } else { 1 };
            let mut data = [[0u32; LANES]; 4];
            for (j, d) in data.iter_mut().enumerate().take(words) {
                *d = reg(w, d0 + j)?;
            }
            if op == AtomicOp::CmpSwap {
                for (j, d) in data.iter_mut().skip(2).enumerate().take(words) {
                    *d = reg(w, d1 + j)?;
                }
            }
            for l in active_lanes(exec) {
                let a = u64::from(addr[l]) + offset16;
                let mut b = [0u8; 8];
                let n = 4 * words;
                lds_read(cx.lds, a, &mut b[..n]);
                let old = u64::from_le_bytes(b);
                let word = |j: usize| u64::from(data[j][l]);
                let new = if op == AtomicOp::CmpSwap {
                    // DS compare-store: data0 is the compare value, data1 the new one.
                    let (cmp, val) = if wide {
                        (word(0) | word(1) << 32, word(2) | word(3) << 32)
                    } else {
                        (word(0), word(2))
                    };
                    if old == cmp { val } else { old }
                } else if wide {
                    op.apply64(old, word(0) | word(1) << 32, 0)
                } else {
                    u64::from(op.apply32(old as u32, data[0][l], 0))
                };
                lds_write(cx.lds, a, &new.to_le_bytes()[..n]);
                out[0][l] = old as u32;
                out[1][l] = (old >> 32) as u32;
            }
            if ret {
                outs = words;
            }
        }
        Lds::Mskor { ret } => {
            let (m, o) = (reg(w, d0)?, reg(w, d1)?);
            for l in active_lanes(exec) {
                let a = u64::from(addr[l]) + offset16;
                let mut b = [0u8; 4];
                lds_read(cx.lds, a, &mut b);
                let old = u32::from_le_bytes(b);
                lds_write(cx.lds, a, &((old & !m[l]) | o[l]).to_le_bytes());
                out[0][l] = old;
            }
            if ret {
                outs = 1;
            }
        }
        Lds::Swizzle => {
            // The data comes from the address operand.
            let data = addr;
            let pat = offset16 as u32;
            for l in active_lanes(exec) {
                let src = if pat & 0x8000 != 0 {
                    (l & !3) | ((pat >> (2 * (l & 3))) & 3) as usize
                } else {
                    let (and, or, xor) = (pat & 0x1F, (pat >> 5) & 0x1F, (pat >> 10) & 0x1F);
                    (l & !31) | ((((l as u32 & 31) & and) | or) ^ xor) as usize
                };
                out[0][l] = if exec >> src & 1 != 0 { data[src] } else { 0 };
            }
            outs = 1;
        }
        Lds::Permute { backward } => {
            let data = reg(w, d0)?;
            for l in active_lanes(exec) {
                let sel = ((addr[l].wrapping_add(offset16 as u32) / 4) & 63) as usize;
                if backward {
                    out[0][l] = if exec >> sel & 1 != 0 { data[sel] } else { 0 };
                } else if exec >> sel & 1 != 0 {
                    out[0][sel] = data[l];
                }
            }
            outs = 1;
        }
    }
    for (j, vals) in out.iter().enumerate().take(outs) {
        merge(w.reg_mut(i, dst + j, acc)?, vals, exec);
    }
    if matches!(k, Lds::Write { .. } | Lds::Write2 { .. } | Lds::Atomic { .. } | Lds::Mskor { .. })
    {
        cx.dev.effects += 1;
    }
    Ok(())
}
