//! The SDMA engine: decodes packets between the queue's read and write pointers (64-bit byte
//! counts) with core's [`SdmaPacket::decode`] and executes them on the backing memory —
//! linear copies (`memmove` semantics, split at nothing: the packet's own size), constant fills,
//! fences (a 32-bit write), traps (a signal interrupt with the packet's context as the event
//! id) and memory polls (the engine waits; a poll that exhausts its retries moves on).
//!
//! A packet that does not decode stops the queue (an illegal-command error); an access to
//! unmapped memory stops it with a memory violation and raises the process's memory-fault
//! events, as a VM fault from the engine does.

use std::sync::atomic::Ordering;

use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::sdma::{MAX_PACKET_DWORDS, SdmaLimits, SdmaPacket};
use hsakmt_core::uapi::{EC_QUEUE_PACKET_RESERVED, EC_QUEUE_WAVE_MEMORY_VIOLATION};

use super::vm::MemRange;
use super::{Cp, Exec, Regs, SimQueue, Step};

/// Retry count meaning "poll forever".
const POLL_FOREVER: u16 = 0xFFF;

enum Outcome {
    Done,
    Blocked,
    Fault(u32, Option<u64>),
}

fn resolve(q: &SimQueue, cp: &Cp, addr: u64, len: u64) -> Result<MemRange, Outcome> {
    cp.vm
        .resolve(q.gpu_id, addr, len)
        .ok_or(Outcome::Fault(EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(addr)))
}

fn execute(q: &SimQueue, cp: &Cp, exec: &mut Exec, p: &SdmaPacket) -> Outcome {
    match *p {
        SdmaPacket::Nop { .. } => Outcome::Done,
        SdmaPacket::CopyLinear { src, dst, bytes } => {
            let len = u64::from(bytes);
            let s = match resolve(q, cp, src, len) {
                Ok(r) => r,
                Err(o) => return o,
            };
            let d = match resolve(q, cp, dst, len) {
                Ok(r) => r,
                Err(o) => return o,
            };
            // The engine is a separate agent: like DMA, it may race with CPU accesses to the
            // same bytes, which the queue's users must not make while the copy is in flight.
            match d.copy_from(&s) {
                Ok(()) => Outcome::Done,
                Err(_) => Outcome::Fault(EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(dst)),
            }
        }
        SdmaPacket::ConstantFill { dst, data, bytes } => {
            let d = match resolve(q, cp, dst, u64::from(bytes)) {
                Ok(r) => r,
                Err(o) => return o,
            };
            for w in d.u32s() {
                w.store(data, Ordering::Relaxed);
            }
            Outcome::Done
        }
        SdmaPacket::Fence { addr, data, .. } => {
            let d = match resolve(q, cp, addr, 4) {
                Ok(r) => r,
                Err(o) => return o,
            };
            if let Some(w) = d.u32s().first() {
                w.store(data, Ordering::Release);
            }
            cp.progress.bump();
            Outcome::Done
        }
        SdmaPacket::Trap { int_ctx } => {
            cp.events.signal_event(int_ctx);
            Outcome::Done
        }
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
        match execute(q, cp, exec, &packet) {
            Outcome::Done => {}
            Outcome::Blocked => return (quiet(n, Step::Blocked), n),
            Outcome::Fault(ec, a) => {
                q.raise_fault(cp, ec, r, a);
                return (Step::Progress, n);
            }
        }
        rptr.store(r.wrapping_add(4 * len as u64), Ordering::Release);
        n += 1;
    }
    (Step::Progress, n)
}
