//! Scalar memory (SMEM): `s_load_dword*`, `s_buffer_load_dword*`, `s_store_dword*`, the
//! scalar-cache maintenance operations (no-ops: the model has no caches) and the clocks.
//!
//! Address: `{sbase pair}` (loads, stores) or a buffer resource's base (buffer loads), plus
//! the 21-bit signed immediate or the SGPR offset, plus the SGPR `soffset` when `soe` is set;
//! the low two bits are ignored (dword access). A buffer load past the resource's
//! `num_records` reads zeros, as the hardware's range check does.

use std::sync::OnceLock;
use std::time::Instant;

use super::super::Op;
use super::super::fault::WaveFault;
use super::super::inst::{Inst, flag};
use super::super::memory::WaveMemory;
use super::super::wave::{Kind64, Wave};
use super::Cx;

/// The model's `s_memtime` counter: nanoseconds since the first use, plus one (a running
/// clock never reads zero).
fn now_ns() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64 + 1
}

fn dwords(op: Op) -> Option<(usize, bool, bool)> {
    // (dwords, buffer, store)
    Some(match op {
        Op::SLoadDword => (1, false, false),
        Op::SLoadDwordx2 => (2, false, false),
        Op::SLoadDwordx4 => (4, false, false),
        Op::SLoadDwordx8 => (8, false, false),
        Op::SLoadDwordx16 => (16, false, false),
        Op::SBufferLoadDword => (1, true, false),
        Op::SBufferLoadDwordx2 => (2, true, false),
        Op::SBufferLoadDwordx4 => (4, true, false),
        Op::SBufferLoadDwordx8 => (8, true, false),
        Op::SBufferLoadDwordx16 => (16, true, false),
        Op::SStoreDword => (1, false, true),
        Op::SStoreDwordx2 => (2, false, true),
        Op::SStoreDwordx4 => (4, false, true),
        _ => return None,
    })
}

/// SMEM.
pub(super) fn smem<M: WaveMemory>(
    w: &mut Wave,
    i: &Inst,
    cx: &mut Cx<'_, M>,
) -> Result<(), WaveFault> {
    let Some((n, buffer, store)) = dwords(i.op) else {
        match i.op {
            Op::SDcacheInv | Op::SDcacheWb | Op::SDcacheInvVol | Op::SDcacheWbVol => {}
            Op::SMemtime => w.set_s64(i.dst, now_ns()),
            // The real-time clock runs at 100 MHz.
            Op::SMemrealtime => w.set_s64(i.dst, now_ns() / 10 + 1),
            _ => return Err(WaveFault::unsupported(i)),
        }
        return Ok(());
    };
    let mut offset: i64 =
        if i.has(flag::IMM) { i64::from(i.imm) } else { i64::from(w.scalar(i, i.imm2 as u16)?) };
    if i.has(flag::SOE) && i.has(flag::IMM) {
        offset += i64::from(w.scalar(i, i.imm2 as u16)?);
    }
    let (base, limit) = if buffer {
        let d0 = w.scalar64(i, i.src[0], Kind64::U)?;
        let records = w.s.get(usize::from(i.src[0]) + 2).copied().unwrap_or(0);
        (d0 & 0xFFFF_FFFF_FFFF, Some(u64::from(records)))
    } else {
        (w.scalar64(i, i.src[0], Kind64::U)?, None)
    };
    let addr = base.wrapping_add_signed(offset) & !3;
    let dst = usize::from(i.dst);
    if dst + n > 128 {
        return Err(WaveFault::operand(i, i.dst));
    }
    if store {
        let mut bytes = [0u8; 16];
        for k in 0..n {
            bytes[k * 4..k * 4 + 4].copy_from_slice(&w.s[dst + k].to_le_bytes());
        }
        cx.mem.write(addr, &bytes[..n * 4])?;
        cx.dev.effects += 1;
        return Ok(());
    }
    let mut bytes = [0u8; 64];
    match limit {
        // Out-of-range dwords of a buffer read zero.
        Some(records) => {
            let start = (offset as u64) & !3;
            for k in 0..n {
                let at = start.wrapping_add(4 * k as u64);
                if at < records {
                    cx.mem.read(addr.wrapping_add(4 * k as u64), &mut bytes[k * 4..k * 4 + 4])?;
                }
            }
        }
        None => cx.mem.read(addr, &mut bytes[..n * 4])?,
    }
    for k in 0..n {
        let b = &bytes[k * 4..k * 4 + 4];
        w.s[dst + k] = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    Ok(())
}
