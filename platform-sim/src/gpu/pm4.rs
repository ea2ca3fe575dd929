//! A PM4 packet processor for compute (PM4) queues and for the PM4 indirect buffers AQL
//! vendor packets carry: the type-3 packets user-mode code issues to move data, raise events
//! and run shaders — `NOP`, `WRITE_DATA` (to memory), `RELEASE_MEM` (data write and/or
//! interrupt), `WAIT_REG_MEM` (memory poll), `INDIRECT_BUFFER`, `SET_SH_REG` (compute shader
//! registers), `DISPATCH_DIRECT` (a kernel on the ISA interpreter, see
//! [`super::isa_queue`]), `ACQUIRE_MEM` and `EVENT_WRITE` (cache and pipeline
//! synchronisation: no-ops, the model has no caches and a dispatch completes before the next
//! packet runs) — plus type-2 filler.
//!
//! Formats from Linux `drivers/gpu/drm/amd/amdgpu/soc15d.h` (`PACKET3`, `PACKET3_NOP` 0x10,
//! `PACKET3_WRITE_DATA` 0x37 with `WRITE_DATA_DST_SEL` bits 8..12 and `WR_ONE_ADDR` bit 16,
//! `PACKET3_RELEASE_MEM` 0x49 with `DATA_SEL` bits 29..32, `INT_SEL` bits 24..27 in dword 2,
//! `PACKET3_WAIT_REG_MEM` 0x3C with `FUNCTION` bits 0..3 and `MEM_SPACE` bit 4,
//! `PACKET3_INDIRECT_BUFFER` 0x3F, `PACKET3_SET_SH_REG` 0x76 with offsets from 0x2C00,
//! `PACKET3_DISPATCH_DIRECT` 0x15, `PACKET3_ACQUIRE_MEM` 0x58, `PACKET3_EVENT_WRITE` 0x46). A
//! type-3 `NOP` whose count is 0x3FFF is one dword long (the header alone: amdgpu's ring padding
//! `PACKET3(PACKET3_NOP, 0x3FFF)`, and kfdtest's one-dword `PM4NopPacket`). `RELEASE_MEM`
//! interrupts only for `INT_SEL` 1 (interrupt only) and 2 (interrupt after the write is
//! confirmed); 3 confirms the write without one. `DATA_SEL` 3 writes the GPU clock counter
//! ([`GpuClock`](super::clock::GpuClock)).
//!
//! A PM4 queue's write pointer counts dwords (64-bit and monotonic on gfx9+; 32-bit, wrapping at
//! the ring size before); its read pointer, as the CP reports it, is the dword offset in the ring
//! (`CP_HQD_PQ_RPTR`: it wraps at the ring's end). The queue holds work while the read pointer
//! differs from the write pointer modulo the ring size; packets may wrap around the ring's end.
//! An indirect buffer that stops on an unmet poll or a running dispatch resumes at that packet.
//! Any other opcode stops the queue with `EC_QUEUE_PACKET_UNSUPPORTED`.

use std::sync::atomic::Ordering;

use hsakmt_core::platform::SharedMemory;
use hsakmt_core::uapi::{
    EC_QUEUE_PACKET_RESERVED, EC_QUEUE_PACKET_UNSUPPORTED, EC_QUEUE_WAVE_MEMORY_VIOLATION,
};

use super::isa_queue::IsaStep;
use super::{Cp, Exec, Regs, SimQueue, Step};

/// `PACKET3_NOP`.
pub const PM4_NOP: u32 = 0x10;
/// `PACKET3_WAIT_REG_MEM`.
pub const PM4_WAIT_REG_MEM: u32 = 0x3C;
/// `PACKET3_INDIRECT_BUFFER`.
pub const PM4_INDIRECT_BUFFER: u32 = 0x3F;
/// `PACKET3_WRITE_DATA`.
pub const PM4_WRITE_DATA: u32 = 0x37;
/// `PACKET3_RELEASE_MEM`.
pub const PM4_RELEASE_MEM: u32 = 0x49;
/// `PACKET3_SET_SH_REG`.
pub const PM4_SET_SH_REG: u32 = 0x76;
/// `PACKET3_DISPATCH_DIRECT`.
pub const PM4_DISPATCH_DIRECT: u32 = 0x15;
/// `PACKET3_ACQUIRE_MEM`.
pub const PM4_ACQUIRE_MEM: u32 = 0x58;
/// `PACKET3_EVENT_WRITE`.
pub const PM4_EVENT_WRITE: u32 = 0x46;

/// Dwords an indirect buffer may nest (an IB inside an IB); deeper chains are refused.
const MAX_IB_DEPTH: u32 = 2;

/// The count of a type-3 `NOP` that makes it a one-dword packet.
const NOP_ONE_DWORD: u32 = 0x3FFF;

/// `RELEASE_MEM` `INT_SEL` values that raise an interrupt: 1 (interrupt only), 2 (after the
/// write is confirmed).
const fn release_interrupts(int_sel: u32) -> bool {
    matches!(int_sel, 1 | 2)
}

/// An interrupt a queue's own `RELEASE_MEM` raises once the read pointer is past the packet:
/// the CP fetched the packet (its read pointer moved) before the end-of-pipe event, so a host
/// woken by the interrupt finds the read pointer past it. Inside an indirect buffer the
/// interrupt is raised at once.
type Deferred = Option<u32>;

type Fault = (u32, Option<u64>);

enum Run {
    /// Consumed this many dwords.
    Done(u64),
    Blocked,
    /// A dispatch is in flight: come back to this packet.
    Running,
}

/// Outcome of an indirect buffer.
pub(crate) enum IbOutcome {
    Done,
    Blocked,
    Running,
}

fn mem_u32(q: &SimQueue, cp: &Cp, addr: u64) -> Result<super::vm::MemRange, Fault> {
    let r = cp.vm.resolve(q.gpu_id, addr, 4).ok_or((EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(addr)))?;
    if r.u32s().is_empty() {
        return Err((EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(addr)));
    }
    Ok(r)
}

/// Executes the packet whose dwords `dw(i)` yields (`dw(0)` its header, at address `at`),
/// `avail` dwords long at most; a ring's own `RELEASE_MEM` leaves its interrupt in `irq`.
#[allow(clippy::too_many_arguments)]
fn packet(
    q: &SimQueue,
    cp: &Cp,
    dw: &dyn Fn(u64) -> Option<u32>,
    avail: u64,
    depth: u32,
    exec: &mut Exec,
    at: u64,
    irq: &mut Deferred,
) -> Result<Run, Fault> {
    let h = dw(0).ok_or((EC_QUEUE_PACKET_RESERVED, None))?;
    match h >> 30 {
        2 => return Ok(Run::Done(1)),
        3 => {}
        _ => return Err((EC_QUEUE_PACKET_RESERVED, None)),
    }
    let op = (h >> 8) & 0xFF;
    let count = (h >> 16) & 0x3FFF;
    if op == PM4_NOP && count == NOP_ONE_DWORD {
        return Ok(Run::Done(1));
    }
    let len = u64::from(count) + 2;
    if len > avail {
        return Err((EC_QUEUE_PACKET_RESERVED, None));
    }
    let get = |i: u64| dw(i).ok_or((EC_QUEUE_PACKET_RESERVED, None));
    let addr = |lo: u64, hi: u64| -> Result<u64, Fault> {
        Ok(u64::from(get(lo)? & !3) | (u64::from(get(hi)?) << 32))
    };
    match op {
        PM4_NOP => {}
        PM4_WRITE_DATA => {
            // Header, control and the address come before the data.
            if len < 4 {
                return Err((EC_QUEUE_PACKET_RESERVED, None));
            }
            let control = get(1)?;
            let dst_sel = (control >> 8) & 0xF;
            let one_addr = control & (1 << 16) != 0;
            if !matches!(dst_sel, 1 | 2 | 5) {
                return Err((EC_QUEUE_PACKET_UNSUPPORTED, None));
            }
            let dst = addr(2, 3)?;
            for i in 0..len - 4 {
                let at = if one_addr { dst } else { dst.wrapping_add(4 * i) };
                let r = mem_u32(q, cp, at)?;
                if let Some(w) = r.u32s().first() {
                    w.store(get(4 + i)?, Ordering::Release);
                }
            }
        }
        PM4_RELEASE_MEM => {
            if len < 8 {
                return Err((EC_QUEUE_PACKET_RESERVED, None));
            }
            let sel = get(2)?;
            let (data_sel, int_sel) = (sel >> 29, (sel >> 24) & 7);
            let dst = addr(3, 4)?;
            let (lo, hi) = (get(5)?, get(6)?);
            match data_sel {
                0 => {}
                1 => {
                    let r = mem_u32(q, cp, dst)?;
                    if let Some(w) = r.u32s().first() {
                        w.store(lo, Ordering::Release);
                    }
                }
                2 | 3 => {
                    let v = if data_sel == 2 {
                        u64::from(lo) | u64::from(hi) << 32
                    } else {
                        cp.clock.counter()
                    };
                    let r = cp
                        .vm
                        .resolve(q.gpu_id, dst, 8)
                        .ok_or((EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(dst)))?;
                    let w = r.u64s().first().ok_or((EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(dst)))?;
                    w.store(v, Ordering::Release);
                }
                _ => return Err((EC_QUEUE_PACKET_UNSUPPORTED, None)),
            }
            cp.progress.bump();
            if release_interrupts(int_sel) {
                let ctx = get(7)? & 0x0FFF_FFFF;
                if depth == 0 {
                    *irq = Some(ctx);
                } else {
                    cp.events.signal_event(ctx);
                }
            }
        }
        PM4_WAIT_REG_MEM => {
            if len < 7 {
                return Err((EC_QUEUE_PACKET_RESERVED, None));
            }
            let ctl = get(1)?;
            if ctl & (1 << 4) == 0 {
                return Err((EC_QUEUE_PACKET_UNSUPPORTED, None));
            }
            let at = addr(2, 3)?;
            let (reference, mask) = (get(4)?, get(5)?);
            let v =
                mem_u32(q, cp, at)?.u32s().first().map_or(0, |w| w.load(Ordering::Acquire)) & mask;
            let met = match ctl & 7 {
                0 => true,
                1 => v < reference,
                2 => v <= reference,
                3 => v == reference,
                4 => v != reference,
                5 => v >= reference,
                6 => v > reference,
                _ => return Err((EC_QUEUE_PACKET_RESERVED, None)),
            };
            if !met {
                return Ok(Run::Blocked);
            }
        }
        PM4_INDIRECT_BUFFER => {
            if depth >= MAX_IB_DEPTH || len < 4 {
                return Err((EC_QUEUE_PACKET_UNSUPPORTED, None));
            }
            let ib = u64::from(get(1)? & !3) | (u64::from(get(2)? & 0xFFFF) << 32);
            let size = get(3)? & 0xF_FFFF;
            match run_ib_at(q, cp, ib, size, depth + 1, exec)? {
                IbOutcome::Done => {}
                IbOutcome::Blocked => return Ok(Run::Blocked),
                IbOutcome::Running => return Ok(Run::Running),
            }
        }
        PM4_SET_SH_REG => {
            if len < 3 {
                return Err((EC_QUEUE_PACKET_RESERVED, None));
            }
            let offset = get(1)? & 0xFFFF;
            let values = (2..len).map(|i| dw(i).unwrap_or(0));
            exec.isa.sh.set(offset, values);
        }
        PM4_DISPATCH_DIRECT => {
            if len < 5 {
                return Err((EC_QUEUE_PACKET_RESERVED, None));
            }
            let dims = [get(1)?, get(2)?, get(3)?];
            let initiator = get(4)?;
            match exec.isa.dispatch_direct(q, cp, at, dims, initiator) {
                IsaStep::Done => {}
                IsaStep::Running => return Ok(Run::Running),
                IsaStep::Stalled => return Ok(Run::Blocked),
                IsaStep::Fault(ec, a) => return Err((ec, a)),
            }
        }
        PM4_ACQUIRE_MEM | PM4_EVENT_WRITE => {}
        _ => return Err((EC_QUEUE_PACKET_UNSUPPORTED, None)),
    }
    Ok(Run::Done(len))
}

fn run_ib_at(
    q: &SimQueue,
    cp: &Cp,
    ib: u64,
    dwords: u32,
    depth: u32,
    exec: &mut Exec,
) -> Result<IbOutcome, Fault> {
    let r = cp
        .vm
        .resolve(q.gpu_id, ib, u64::from(dwords) * 4)
        .ok_or((EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(ib)))?;
    let words = r.u32s();
    let level = depth as usize;
    // Resume where this buffer stopped, if it is the one that stopped.
    let mut at = match exec.ib_pos.get(level).copied().flatten() {
        Some((a, n, off)) if a == ib && n == dwords => off,
        _ => 0,
    };
    let total = u64::from(dwords);
    while at < total {
        let dw = |i: u64| words.get((at + i) as usize).map(|w| w.load(Ordering::Relaxed));
        let stopped = match packet(q, cp, &dw, total - at, depth, exec, ib + 4 * at, &mut None)? {
            Run::Done(n) => {
                at += n;
                continue;
            }
            Run::Blocked => IbOutcome::Blocked,
            Run::Running => IbOutcome::Running,
        };
        if let Some(p) = exec.ib_pos.get_mut(level) {
            *p = Some((ib, dwords, at));
        }
        return Ok(stopped);
    }
    if let Some(p) = exec.ib_pos.get_mut(level) {
        *p = None;
    }
    Ok(IbOutcome::Done)
}

/// Runs an indirect buffer of `dwords` at `ib` (an AQL PM4-IB vendor packet). A blocked
/// `WAIT_REG_MEM` or a dispatch still running makes the buffer resume at that packet.
pub(crate) fn run_ib(
    q: &SimQueue,
    cp: &Cp,
    ib: u64,
    dwords: u32,
    exec: &mut Exec,
) -> Result<IbOutcome, Fault> {
    run_ib_at(q, cp, ib, dwords, 1, exec)
}

/// Runs a PM4 queue for at most `budget` packets: from the read pointer (a dword offset in the
/// ring) up to the write pointer modulo the ring size.
pub(crate) fn run(
    q: &SimQueue,
    cp: &Cp,
    regs: &Regs,
    exec: &mut Exec,
    budget: usize,
) -> (Step, u64) {
    let Some((ring, rptr, wptr)) = q.ring_memory(cp, regs) else {
        return (Step::Idle, 0);
    };
    let (Some(rptr), Some(wptr)) = (rptr.u64s().first(), wptr.u64s().first()) else {
        return (Step::Idle, 0);
    };
    let words = ring.u32s();
    let size = regs.ring_size / 4;
    if size == 0 {
        return (Step::Idle, 0);
    }
    let mut n = 0u64;
    let quiet = |n: u64, s: Step| if n > 0 { Step::Progress } else { s };
    while (n as usize) < budget {
        // The read pointer is shared memory: whatever it holds is taken modulo the ring.
        let r = rptr.load(Ordering::Relaxed) % size;
        let w = wptr.load(Ordering::Acquire) % size;
        if r == w {
            return (quiet(n, Step::Idle), n);
        }
        let pending = (w + size - r) % size;
        let dw = |i: u64| words.get(((r + i) % size) as usize).map(|d| d.load(Ordering::Relaxed));
        let at = regs.ring_address.wrapping_add(r * 4);
        let mut irq = None;
        match packet(q, cp, &dw, pending, 0, exec, at, &mut irq) {
            Ok(Run::Done(len)) => {
                rptr.store((r + len) % size, Ordering::Release);
                if let Some(ctx) = irq {
                    cp.events.signal_event(ctx);
                }
                n += 1;
            }
            Ok(Run::Blocked) => return (quiet(n, Step::Blocked), n),
            Ok(Run::Running) => return (Step::Running, n),
            Err((ec, a)) => {
                exec.isa.abandon();
                exec.ib_pos = [None; 3];
                q.raise_fault(cp, ec, r, a);
                return (Step::Progress, n);
            }
        }
    }
    (Step::Progress, n)
}
