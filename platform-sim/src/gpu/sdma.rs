//! The SDMA engine: decodes packets between the queue's read and write pointers (64-bit byte
//! counts) with core's [`SdmaPacket::decode`] and executes them on the backing memory —
//! linear copies (`memmove` semantics, split at nothing: the packet's own size; a broadcast
//! copy writes both destinations), rectangular copies (row by row), constant fills, linear
//! writes of the packet's data, fences (a 32-bit write), traps (a signal interrupt with the
//! packet's context as the event id), memory polls (the engine waits; a poll that exhausts its
//! retries moves on), 64-bit atomic adds (ROCr's completion-signal decrement), global
//! timestamps (the [`GpuClock`](super::clock::GpuClock) counter), and cache controls (GCR, HDP
//! flushes: nothing to do over coherent host memory).
//!
//! A register poll other than an HDP flush, or one whose function is not "always", stops the
//! queue with `EC_QUEUE_PACKET_UNSUPPORTED`: the simulator has no registers to read.
//!
//! A packet that does not decode stops the queue (an illegal-command error); an access to
//! unmapped memory stops it with a memory violation and raises the process's memory-fault
//! events, as a VM fault from the engine does.

use std::sync::atomic::Ordering;

use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::sdma::{
    LinearRect, MAX_PACKET_DWORDS, PollFunc, RegisterPoll, SdmaLimits, SdmaPacket,
};
use hsakmt_core::uapi::{
    EC_QUEUE_PACKET_RESERVED, EC_QUEUE_PACKET_UNSUPPORTED, EC_QUEUE_WAVE_MEMORY_VIOLATION,
};

use super::vm::MemRange;
use super::{Cp, Exec, Regs, SimQueue, Step};

/// Retry count meaning "poll forever".
const POLL_FOREVER: u16 = 0xFFF;

enum Outcome {
    Done,
    /// Done; raise this interrupt once the read pointer is past the packet (a host woken by
    /// a `TRAP` finds it consumed, as on hardware, where the engine fetched it first).
    Interrupt(u32),
    Blocked,
    Fault(u32, Option<u64>),
}

fn resolve(q: &SimQueue, cp: &Cp, addr: u64, len: u64) -> Result<MemRange, Outcome> {
    cp.vm
        .resolve(q.gpu_id, addr, len)
        .ok_or(Outcome::Fault(EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(addr)))
}

/// As [`resolve`], for a range the engine writes: a mapping that does not permit writing (a
/// buffer allocated without `WRITABLE`, a read-only SVM range or CPU mapping) faults.
fn resolve_write(q: &SimQueue, cp: &Cp, addr: u64, len: u64) -> Result<MemRange, Outcome> {
    let r = resolve(q, cp, addr, len)?;
    if !r.access().writable {
        return Err(Outcome::Fault(EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(addr)));
    }
    Ok(r)
}

/// Copies `len` bytes from `src` to `dst` (`memmove` semantics).
fn copy(q: &SimQueue, cp: &Cp, src: u64, dst: u64, len: u64) -> Result<(), Outcome> {
    let s = resolve(q, cp, src, len)?;
    let d = resolve_write(q, cp, dst, len)?;
    // The engine is a separate agent: like DMA, it may race with CPU accesses to the same
    // bytes, which the queue's users must not make while the copy is in flight.
    d.copy_from(&s).map_err(|_| Outcome::Fault(EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(dst)))
}

/// A `COPY_LINEAR_RECT`: the box row by row (validated by the decoder: every row address
/// exists).
fn copy_rect(q: &SimQueue, cp: &Cp, r: &LinearRect) -> Result<(), Outcome> {
    let e = r.element_log2;
    for z in 0..r.extent[2] {
        for y in 0..r.extent[1] {
            let (Some(src), Some(dst)) = (r.src.row_address(e, y, z), r.dst.row_address(e, y, z))
            else {
                return Err(Outcome::Fault(EC_QUEUE_PACKET_RESERVED, None));
            };
            copy(q, cp, src, dst, r.row_bytes())?;
        }
    }
    Ok(())
}

/// A register poll: an HDP flush completes at once (host memory is coherent), as does a poll
/// whose function is "always"; the simulator has no other registers.
fn poll_register(p: &RegisterPoll) -> Outcome {
    if p.hdp_flush || p.func == PollFunc::Always {
        Outcome::Done
    } else {
        Outcome::Fault(EC_QUEUE_PACKET_UNSUPPORTED, None)
    }
}

fn done(r: Result<(), Outcome>) -> Outcome {
    r.map_or_else(|o| o, |()| Outcome::Done)
}

/// Executes packet `p`; `data` yields the dwords following its fixed part (a `WRITE`'s data).
fn execute(
    q: &SimQueue,
    cp: &Cp,
    exec: &mut Exec,
    p: &SdmaPacket,
    data: &dyn Fn(usize) -> u32,
) -> Outcome {
    match *p {
        SdmaPacket::Nop { .. } | SdmaPacket::Gcr(_) => Outcome::Done,
        SdmaPacket::CopyLinear { src, dst, bytes } => done(copy(q, cp, src, dst, bytes.into())),
        SdmaPacket::CopyLinearBroadcast { src, dst, bytes } => {
            done(dst.iter().try_for_each(|d| copy(q, cp, src, *d, bytes.into())))
        }
        SdmaPacket::CopyLinearRect(r) => done(copy_rect(q, cp, &r)),
        SdmaPacket::Write { dst, dwords } => {
            let d = match resolve_write(q, cp, dst, u64::from(dwords) * 4) {
                Ok(r) => r,
                Err(o) => return o,
            };
            for (i, w) in d.u32s().iter().enumerate() {
                w.store(data(i), Ordering::Relaxed);
            }
            cp.progress.bump();
            Outcome::Done
        }
        SdmaPacket::AtomicAdd64 { addr, value } => {
            let d = match resolve_write(q, cp, addr, 8) {
                Ok(r) => r,
                Err(o) => return o,
            };
            if let Some(w) = d.u64s().first() {
                w.fetch_add(value, Ordering::AcqRel);
            }
            cp.progress.bump();
            Outcome::Done
        }
        SdmaPacket::Timestamp { addr } => {
            let d = match resolve_write(q, cp, addr, 8) {
                Ok(r) => r,
                Err(o) => return o,
            };
            if let Some(w) = d.u64s().first() {
                w.store(cp.clock.counter(), Ordering::Release);
            }
            Outcome::Done
        }
        SdmaPacket::PollRegister(p) => poll_register(&p),
        SdmaPacket::ConstantFill { dst, data, bytes } => {
            let d = match resolve_write(q, cp, dst, u64::from(bytes)) {
                Ok(r) => r,
                Err(o) => return o,
            };
            for w in d.u32s() {
                w.store(data, Ordering::Relaxed);
            }
            Outcome::Done
        }
        SdmaPacket::Fence { addr, data, .. } => {
            let d = match resolve_write(q, cp, addr, 4) {
                Ok(r) => r,
                Err(o) => return o,
            };
            if let Some(w) = d.u32s().first() {
                w.store(data, Ordering::Release);
            }
            cp.progress.bump();
            Outcome::Done
        }
        SdmaPacket::Trap { int_ctx } => Outcome::Interrupt(int_ctx),
        SdmaPacket::PollRegMem { addr, reference, mask, func, retry_count, .. } => {
            let d = match resolve(q, cp, addr, 4) {
                Ok(r) => r,
                Err(o) => return o,
            };
            let v = d.u32s().first().map_or(0, |w| w.load(Ordering::Acquire));
            if func.holds(v, mask, reference) {
                exec.poll_retries = 0;
                return Outcome::Done;
            }
            exec.poll_retries += 1;
            if retry_count != POLL_FOREVER && exec.poll_retries > u32::from(retry_count) {
                exec.poll_retries = 0;
                return Outcome::Done;
            }
            Outcome::Blocked
        }
    }
}

/// Runs an SDMA queue for at most `budget` packets.
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
    let limits = hsakmt_core::queue::params::GfxVersion::from_target_version(q.gfx_target)
        .and_then(|g| SdmaLimits::for_gfx(g.major, g.minor, g.stepping).ok())
        .unwrap_or(SdmaLimits::COUNT22);
    let size = regs.ring_size;
    let words = ring.u32s();
    let mut n = 0u64;
    let quiet = |n: u64, s: Step| if n > 0 { Step::Progress } else { s };
    while (n as usize) < budget {
        let r = rptr.load(Ordering::Relaxed);
        let w = wptr.load(Ordering::Acquire);
        if r == w {
            return (quiet(n, Step::Idle), n);
        }
        let at = (r % size) / 4;
        let avail = (w.wrapping_sub(r)).min(size - r % size) / 4;
        let mut buf = [0u32; MAX_PACKET_DWORDS];
        let take = (avail as usize).min(MAX_PACKET_DWORDS);
        for (i, b) in buf.iter_mut().take(take).enumerate() {
            *b = words.get(at as usize + i).map_or(0, |d| d.load(Ordering::Relaxed));
        }
        let decoded = SdmaPacket::decode(limits, buf.get(..take).unwrap_or_default());
        let (packet, len) = match decoded {
            Ok((p, len)) if len as u64 <= avail => (p, len),
            _ => {
                q.raise_fault(cp, EC_QUEUE_PACKET_RESERVED, r, None);
                return (Step::Progress, n);
            }
        };
        // A WRITE's data follows its four header dwords (inside `avail`, checked above).
        let data =
            |i: usize| words.get(at as usize + 4 + i).map_or(0, |d| d.load(Ordering::Relaxed));
        let irq = match execute(q, cp, exec, &packet, &data) {
            Outcome::Done => None,
            Outcome::Interrupt(ctx) => Some(ctx),
            Outcome::Blocked => return (quiet(n, Step::Blocked), n),
            Outcome::Fault(ec, a) => {
                q.raise_fault(cp, ec, r, a);
                return (Step::Progress, n);
            }
        };
        rptr.store(r.wrapping_add(4 * len as u64), Ordering::Release);
        if let Some(ctx) = irq {
            cp.events.signal_event(ctx);
        }
        n += 1;
    }
    (Step::Progress, n)
}
