//! Vector memory: FLAT, GLOBAL, SCRATCH and MUBUF loads, stores and atomics, one lane at a
//! time over the lanes EXEC enables, and the cache-maintenance operations (no-ops: the model
//! has no caches, memory is coherent).
//!
//! Addresses (Vega/CDNA ISA manuals, "Flat Memory Instructions", "Buffer Instructions"):
//! - FLAT: the VGPR pair plus the unsigned 12-bit offset; a generic address inside the LDS
//!   aperture reaches the work-group's LDS, inside the private aperture the wave's scratch,
//!   elsewhere global memory.
//! - GLOBAL: the VGPR pair plus the signed 13-bit offset, or the SGPR pair plus the 32-bit
//!   VGPR offset plus the offset when `saddr` is given.
//! - SCRATCH: a private offset from the VGPR (or the SGPR, when given; gfx942 adds both when
//!   `sve` is set) plus the offset.
//! - MUBUF: the buffer resource in four SGPRs: base, stride, `num_records`, swizzling
//!   (`index_stride`, `add_tid_enable`); index and offset from the VGPRs as `idxen`/`offen`
//!   say, plus the instruction offset and `soffset`. An access outside the resource's range
//!   reads zeros and writes nothing, as the hardware's range check does.
//!
//! Private memory is swizzled per lane in dwords, the layout of the scratch buffer
//! resources and of flat scratch: byte `p` of lane `l` lives at
//! `base + (p / 4) * 256 + l * 4 + p % 4`. Atomics return the old value when GLC (SC0) is set.

use super::super::Op;
use super::super::Target;
use super::super::fault::WaveFault;
use super::super::inst::{Enc, FLAT_SCRATCH_LO, Inst, SADDR_OFF, flag};
use super::super::limits::LANES;
use super::super::memory::{AtomicOp, WaveMemory};
use super::super::wave::{Kind64, Wave, active_lanes};
use super::Cx;

/// What an instruction does to memory.
#[derive(Clone, Copy)]
enum Access {
    /// Load `bytes` (1, 2, 4, 8, 12, 16), sign-extending sub-dword values when `signed`.
    Load { bytes: u8, signed: bool },
    /// Store `bytes`.
    Store { bytes: u8 },
    /// Atomic on a 32-bit (or 64-bit when `wide`) location.
    Atomic { op: AtomicOp, wide: bool },
    /// Cache maintenance.
    Cache,
}

fn access(op: Op) -> Option<Access> {
    use Access::*;
    use AtomicOp as A;
    let at = |op, wide| Atomic { op, wide };
    Some(match op {
        Op::FlatLoadUbyte | Op::BufferLoadUbyte => Load { bytes: 1, signed: false },
        Op::FlatLoadSbyte | Op::BufferLoadSbyte => Load { bytes: 1, signed: true },
        Op::FlatLoadUshort | Op::BufferLoadUshort => Load { bytes: 2, signed: false },
        Op::FlatLoadSshort | Op::BufferLoadSshort => Load { bytes: 2, signed: true },
        Op::FlatLoadDword | Op::BufferLoadDword => Load { bytes: 4, signed: false },
        Op::FlatLoadDwordx2 | Op::BufferLoadDwordx2 => Load { bytes: 8, signed: false },
        Op::FlatLoadDwordx3 | Op::BufferLoadDwordx3 => Load { bytes: 12, signed: false },
        Op::FlatLoadDwordx4 | Op::BufferLoadDwordx4 => Load { bytes: 16, signed: false },
        Op::FlatStoreByte | Op::BufferStoreByte => Store { bytes: 1 },
        Op::FlatStoreShort | Op::BufferStoreShort => Store { bytes: 2 },
        Op::FlatStoreDword | Op::BufferStoreDword => Store { bytes: 4 },
        Op::FlatStoreDwordx2 | Op::BufferStoreDwordx2 => Store { bytes: 8 },
        Op::FlatStoreDwordx3 | Op::BufferStoreDwordx3 => Store { bytes: 12 },
        Op::FlatStoreDwordx4 | Op::BufferStoreDwordx4 => Store { bytes: 16 },
        Op::FlatAtomicSwap | Op::BufferAtomicSwap => at(A::Swap, false),
        Op::FlatAtomicCmpswap | Op::BufferAtomicCmpswap => at(A::CmpSwap, false),
        Op::FlatAtomicAdd | Op::BufferAtomicAdd => at(A::Add, false),
        Op::FlatAtomicSub | Op::BufferAtomicSub => at(A::Sub, false),
        Op::FlatAtomicSmin | Op::BufferAtomicSmin => at(A::SMin, false),
        Op::FlatAtomicUmin | Op::BufferAtomicUmin => at(A::UMin, false),
        Op::FlatAtomicSmax | Op::BufferAtomicSmax => at(A::SMax, false),
        Op::FlatAtomicUmax | Op::BufferAtomicUmax => at(A::UMax, false),
        Op::FlatAtomicAnd | Op::BufferAtomicAnd => at(A::And, false),
        Op::FlatAtomicOr | Op::BufferAtomicOr => at(A::Or, false),
        Op::FlatAtomicXor | Op::BufferAtomicXor => at(A::Xor, false),
        Op::FlatAtomicInc | Op::BufferAtomicInc => at(A::Inc, false),
        Op::FlatAtomicDec | Op::BufferAtomicDec => at(A::Dec, false),
        Op::FlatAtomicAddF32 => at(A::AddF32, false),
        Op::FlatAtomicSwapX2 => at(A::Swap, true),
        Op::FlatAtomicCmpswapX2 => at(A::CmpSwap, true),
        Op::FlatAtomicAddX2 => at(A::Add, true),
        Op::FlatAtomicSubX2 => at(A::Sub, true),
        Op::FlatAtomicSminX2 => at(A::SMin, true),
        Op::FlatAtomicUminX2 => at(A::UMin, true),
        Op::FlatAtomicSmaxX2 => at(A::SMax, true),
        Op::FlatAtomicUmaxX2 => at(A::UMax, true),
        Op::FlatAtomicAndX2 => at(A::And, true),
        Op::FlatAtomicOrX2 => at(A::Or, true),
        Op::FlatAtomicXorX2 => at(A::Xor, true),
        Op::FlatAtomicIncX2 => at(A::Inc, true),
        Op::FlatAtomicDecX2 => at(A::Dec, true),
        Op::FlatAtomicAddF64 => at(A::AddF64, true),
        Op::BufferWbinvl1
        | Op::BufferWbinvl1Vol
        | Op::BufferWbl2
        | Op::BufferInvl2
        | Op::BufferInv => Cache,
        _ => return None,
    })
}

/// Where one lane's access goes.
#[derive(Clone, Copy)]
enum Place {
    /// Global memory at this address.
    Global(u64),
    /// The wave's private memory at this private offset (swizzled from `base`).
    Private { base: u64, offset: u64 },
    /// The work-group's LDS at this offset.
    Lds(u64),
    /// Outside a buffer resource's range: reads zero, writes nothing.
    Dropped,
}

/// The swizzled address of byte `p` of lane `l`'s private memory at `base`.
fn private_addr(base: u64, p: u64, l: usize) -> u64 {
    base.wrapping_add((p / 4) * 256 + l as u64 * 4 + p % 4)
}

/// A buffer resource descriptor (V#).
struct Resource {
    base: u64,
    stride: u64,
    records: u64,
    swizzle: bool,
    index_stride: u64,
    add_tid: bool,
}

fn resource(w: &Wave, i: &Inst) -> Result<Resource, WaveFault> {
    let s = usize::from(i.src[1]);
    let d = w.s.get(s..s + 4).ok_or(WaveFault::operand(i, i.src[1]))?;
    Ok(Resource {
        base: u64::from(d[0]) | u64::from(d[1] & 0xFFFF) << 32,
        stride: u64::from((d[1] >> 16) & 0x3FFF),
        records: u64::from(d[2]),
        swizzle: d[1] >> 31 != 0,
        index_stride: 8 << ((d[3] >> 21) & 3),
        add_tid: d[3] >> 23 & 1 != 0,
    })
}

/// Per-lane address sources, read once per instruction.
struct Addr<'w> {
    lo: Option<&'w [u32; LANES]>,
    hi: Option<&'w [u32; LANES]>,
    base: u64,
    res: Option<Resource>,
    soffset: u64,
    flat_scratch: u64,
}

fn addressing<'w>(w: &'w Wave, i: &Inst, t: Target) -> Result<Addr<'w>, WaveFault> {
    let a = usize::from(i.src[0]);
    let flat_scratch = w.s64(FLAT_SCRATCH_LO);
    let mut ad = Addr { lo: None, hi: None, base: 0, res: None, soffset: 0, flat_scratch };
    match i.enc {
        Enc::Flat => {
            ad.lo = Some(w.vgpr(i, a)?);
            ad.hi = Some(w.vgpr(i, a + 1)?);
        }
        Enc::Global => {
            if i.src[2] == SADDR_OFF {
                ad.lo = Some(w.vgpr(i, a)?);
                ad.hi = Some(w.vgpr(i, a + 1)?);
            } else {
                ad.base = w.scalar64(i, i.src[2], Kind64::U)?;
                ad.lo = Some(w.vgpr(i, a)?);
            }
        }
        Enc::Scratch => {
            let use_v = if t == Target::Gfx942 { i.has(flag::SVE) } else { i.src[2] == SADDR_OFF };
            if use_v {
                ad.lo = Some(w.vgpr(i, a)?);
            }
            if i.src[2] != SADDR_OFF {
                ad.base = u64::from(w.scalar(i, i.src[2])?);
            }
        }
        _ => {
            let r = resource(w, i)?;
            ad.soffset = u64::from(w.scalar(i, i.src[2])?);
            if i.has(flag::IDXEN) || i.has(flag::OFFEN) {
                ad.lo = Some(w.vgpr(i, a)?);
            }
            if i.has(flag::IDXEN) && i.has(flag::OFFEN) {
                ad.hi = Some(w.vgpr(i, a + 1)?);
            }
            ad.res = Some(r);
        }
    }
    Ok(ad)
}

fn place(w: &Wave, i: &Inst, ad: &Addr<'_>, l: usize, bytes: u64) -> Place {
    let off = i.imm as i64;
    match i.enc {
        Enc::Flat | Enc::Global => {
            let v = ad.lo.map_or(0, |r| u64::from(r[l]));
            let addr = match ad.hi {
                Some(h) => v | u64::from(h[l]) << 32,
                None => ad.base.wrapping_add(v),
            }
            .wrapping_add_signed(off);
            if i.enc == Enc::Flat {
                let ap = w.apertures;
                if addr.wrapping_sub(ap.shared) < 1 << 32 {
                    return Place::Lds(addr - ap.shared);
                }
                if addr.wrapping_sub(ap.private) < 1 << 32 {
                    return Place::Private { base: ad.flat_scratch, offset: addr - ap.private };
                }
            }
            Place::Global(addr)
        }
        Enc::Scratch => {
            let v = ad.lo.map_or(0, |r| r[l]);
            let p = (v.wrapping_add(ad.base as u32) as i32 as i64).wrapping_add(off) as u32;
            Place::Private { base: ad.flat_scratch, offset: u64::from(p) }
        }
        _ => {
            let Some(r) = &ad.res else { return Place::Dropped };
            let (idx_reg, off_reg) = match (i.has(flag::IDXEN), i.has(flag::OFFEN)) {
                (true, true) => (ad.lo.map_or(0, |x| x[l]), ad.hi.map_or(0, |x| x[l])),
                (true, false) => (ad.lo.map_or(0, |x| x[l]), 0),
                (false, true) => (0, ad.lo.map_or(0, |x| x[l])),
                (false, false) => (0, 0),
            };
            let index = u64::from(idx_reg) + if r.add_tid { l as u64 } else { 0 };
            let offset = u64::from(off_reg) + i.imm as u64;
            let rel = if r.swizzle {
                let (im, il) = (index / r.index_stride, index % r.index_stride);
                (im * r.stride + (offset / 4) * 4) * r.index_stride + il * 4 + offset % 4
            } else {
                index * r.stride + offset
            };
            let out = if r.stride == 0 && !r.swizzle {
                offset + bytes > r.records
            } else if r.stride != 0 {
                index >= r.records || (offset >= r.stride && !r.swizzle)
            } else {
                false
            };
            if out {
                return Place::Dropped;
            }
            Place::Global(r.base.wrapping_add(ad.soffset).wrapping_add(rel))
        }
    }
}

fn read_place<M: WaveMemory>(
    cx: &mut Cx<'_, M>,
    p: Place,
    l: usize,
    buf: &mut [u8],
) -> Result<(), WaveFault> {
    match p {
        Place::Global(a) => {
            if buf.len() == 4 {
                let v = cx.mem.load_u32(a)?;
                buf.copy_from_slice(&v.to_le_bytes());
            } else {
                cx.mem.read(a, buf)?;
            }
        }
        Place::Private { base, offset } => {
            for (j, b) in buf.iter_mut().enumerate() {
                let mut one = [0u8];
                cx.mem.read(private_addr(base, offset + j as u64, l), &mut one)?;
                *b = one[0];
            }
        }
        Place::Lds(o) => {
            for (j, b) in buf.iter_mut().enumerate() {
                *b = usize::try_from(o + j as u64)
                    .ok()
                    .and_then(|k| cx.lds.get(k))
                    .copied()
                    .unwrap_or(0);
            }
        }
        Place::Dropped => buf.fill(0),
    }
    Ok(())
}

fn write_place<M: WaveMemory>(
    cx: &mut Cx<'_, M>,
    p: Place,
    l: usize,
    buf: &[u8],
) -> Result<(), WaveFault> {
    match p {
        Place::Global(a) => {
            if let Ok(b) = <[u8; 4]>::try_from(buf) {
                cx.mem.store_u32(a, u32::from_le_bytes(b))?;
            } else {
                cx.mem.write(a, buf)?;
            }
        }
        Place::Private { base, offset } => {
            for (j, b) in buf.iter().enumerate() {
                cx.mem.write(private_addr(base, offset + j as u64, l), &[*b])?;
            }
        }
        Place::Lds(o) => {
            for (j, b) in buf.iter().enumerate() {
                if let Some(d) = usize::try_from(o + j as u64).ok().and_then(|k| cx.lds.get_mut(k))
                {
                    *d = *b;
                }
            }
        }
        Place::Dropped => {}
    }
    Ok(())
}

fn atomic_place<M: WaveMemory>(
    cx: &mut Cx<'_, M>,
    p: Place,
    l: usize,
    op: AtomicOp,
    wide: bool,
    data: u64,
    cmp: u64,
) -> Result<u64, WaveFault> {
    let addr = match p {
        Place::Global(a) => a,
        Place::Private { base, offset } => private_addr(base, offset, l),
        Place::Lds(o) => {
            let n = if wide { 8 } else { 4 };
            let Some(cell) = usize::try_from(o).ok().and_then(|k| cx.lds.get_mut(k..k + n)) else {
                return Ok(0);
            };
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(cell);
            let old = u64::from_le_bytes(b);
            let new = if wide {
                op.apply64(old, data, cmp)
            } else {
                u64::from(op.apply32(old as u32, data as u32, cmp as u32))
            };
            cell.copy_from_slice(&new.to_le_bytes()[..n]);
            return Ok(old);
        }
        Place::Dropped => return Ok(0),
    };
    Ok(if wide {
        cx.mem.atomic64(addr, op, data, cmp)?
    } else {
        u64::from(cx.mem.atomic32(addr, op, data as u32, cmp as u32)?)
    })
}

/// The global addresses of the lanes of `mask` when every one of them goes to global memory
/// (FLAT outside the LDS and private apertures, GLOBAL); `None` otherwise.
fn global_lanes(w: &Wave, i: &Inst, ad: &Addr<'_>, mask: u64, _bytes: u64) -> Option<[u64; LANES]> {
    if !matches!(i.enc, Enc::Flat | Enc::Global) {
        return None;
    }
    let off = i.imm as i64;
    let lo = ad.lo?;
    let mut addrs = [0u64; LANES];
    match ad.hi {
        Some(hi) => {
            for l in 0..LANES {
                addrs[l] = (u64::from(lo[l]) | u64::from(hi[l]) << 32).wrapping_add_signed(off);
            }
        }
        None => {
            for l in 0..LANES {
                addrs[l] = ad.base.wrapping_add(u64::from(lo[l])).wrapping_add_signed(off);
            }
        }
    }
    if i.enc == Enc::Flat {
        let ap = w.apertures;
        for l in active_lanes(mask) {
            let a = addrs[l];
            if a.wrapping_sub(ap.shared) < 1 << 32 || a.wrapping_sub(ap.private) < 1 << 32 {
                return None;
            }
        }
    }
    Some(addrs)
}

/// `addrs` plus `by` in every lane.
#[inline]
fn offset_lanes(addrs: &[u64; LANES], by: u64) -> [u64; LANES] {
    if by == 0 {
        return *addrs;
    }
    let mut out = [0u64; LANES];
    for l in 0..LANES {
        out[l] = addrs[l].wrapping_add(by);
    }
    out
}

/// FLAT, GLOBAL, SCRATCH and MUBUF.
pub(super) fn vmem<M: WaveMemory>(
    w: &mut Wave,
    i: &Inst,
    cx: &mut Cx<'_, M>,
) -> Result<(), WaveFault> {
    let Some(acc) = access(i.op) else {
        return Err(WaveFault::unsupported(i));
    };
    if i.has(flag::LDS) {
        return Err(WaveFault::illegal(
            i,
            "loads into LDS (the lds modifier) are not executed by the interpreter",
        ));
    }
    let exec = w.exec();
    let acc_regs = i.has(flag::ACC);
    // MUBUF's data/destination register is the vdata field (i.dst), FLAT's data the data
    // field and the destination vdst.
    let data_reg = if i.enc == Enc::Mubuf { usize::from(i.dst) } else { usize::from(i.src[1]) };
    match acc {
        Access::Cache => Ok(()),
        Access::Load { bytes, signed } => {
            let n = usize::from(bytes.div_ceil(4));
            let mut out = [[0u32; LANES]; 4];
            {
                let ad = addressing(w, i, cx.target)?;
                match global_lanes(w, i, &ad, exec, u64::from(bytes)) {
                    // Whole dwords in global memory: every lane's dword k at once.
                    Some(addrs) if bytes >= 4 => {
                        for (k, o) in out.iter_mut().enumerate().take(n) {
                            cx.mem.load_lanes(&offset_lanes(&addrs, 4 * k as u64), exec, o)?;
                        }
                    }
                    _ => {
                        for l in active_lanes(exec) {
                            let p = place(w, i, &ad, l, u64::from(bytes));
                            let mut buf = [0u8; 16];
                            read_place(cx, p, l, &mut buf[..usize::from(bytes)])?;
                            match (bytes, signed) {
                                (1, true) => out[0][l] = buf[0] as i8 as i32 as u32,
                                (2, true) => {
                                    out[0][l] = i16::from_le_bytes([buf[0], buf[1]]) as i32 as u32
                                }
                                _ => {
                                    for k in 0..n {
                                        let b = &buf[4 * k..4 * k + 4];
                                        out[k][l] = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            let dst = usize::from(i.dst);
            for (k, vals) in out.iter().enumerate().take(n) {
                let d = w.reg_mut(i, dst + k, acc_regs)?;
                super::super::wave::merge(d, vals, exec);
            }
            Ok(())
        }
        Access::Store { bytes } => {
            let n = usize::from(bytes.div_ceil(4));
            let mut data = [[0u32; LANES]; 4];
            for (k, d) in data.iter_mut().enumerate().take(n) {
                *d = *w.reg(i, data_reg + k, acc_regs)?;
            }
            let ad = addressing(w, i, cx.target)?;
            match global_lanes(w, i, &ad, exec, u64::from(bytes)) {
                Some(addrs) if bytes >= 4 => {
                    for (k, d) in data.iter().enumerate().take(n) {
                        cx.mem.store_lanes(&offset_lanes(&addrs, 4 * k as u64), exec, d)?;
                    }
                }
                _ => {
                    for l in active_lanes(exec) {
                        let p = place(w, i, &ad, l, u64::from(bytes));
                        let mut buf = [0u8; 16];
                        for k in 0..n {
                            buf[4 * k..4 * k + 4].copy_from_slice(&data[k][l].to_le_bytes());
                        }
                        write_place(cx, p, l, &buf[..usize::from(bytes)])?;
                    }
                }
            }
            cx.dev.effects += 1;
            Ok(())
        }
        Access::Atomic { op, wide } => {
            let words = if wide { 2 } else { 1 };
            let cmp_words = if op == AtomicOp::CmpSwap { words } else { 0 };
            let mut data = [[0u32; LANES]; 4];
            for (k, d) in data.iter_mut().enumerate().take(words + cmp_words) {
                *d = *w.reg(i, data_reg + k, acc_regs)?;
            }
            let mut ret = [[0u32; LANES]; 2];
            {
                let ad = addressing(w, i, cx.target)?;
                for l in active_lanes(exec) {
                    let p = place(w, i, &ad, l, 4 * words as u64);
                    let word = |k: usize| u64::from(data[k][l]);
                    let (val, cmp) = if wide {
                        (word(0) | word(1) << 32, word(2) | word(3) << 32)
                    } else {
                        (word(0), word(1))
                    };
                    let old = atomic_place(cx, p, l, op, wide, val, cmp)?;
                    ret[0][l] = old as u32;
                    ret[1][l] = (old >> 32) as u32;
                }
            }
            cx.dev.effects += 1;
            if i.has(flag::GLC) {
                let dst = if i.enc == Enc::Mubuf { data_reg } else { usize::from(i.dst) };
                for (k, vals) in ret.iter().enumerate().take(words) {
                    let d = w.reg_mut(i, dst + k, acc_regs)?;
                    super::super::wave::merge(d, vals, exec);
                }
            }
            Ok(())
        }
    }
}
