//! The AQL packet processor: core's [`AqlConsumer`] over the queue's ring and read index,
//! executing kernel dispatches (the kernel's machine code on the ISA interpreter; on the
//! host-CPU driver, and for kernel objects the registry handed out, registered host kernels
//! once per work-group), barrier-AND /
//! barrier-OR packets (waiting on their dependency signals) and PM4 indirect buffers, then
//! completing each packet's signal.
//!
//! The processor fetches packets only up to the doorbell (one past the last index a producer
//! announced), as the CP does; a slot still `INVALID` there is a packet not yet published.
//! A packet is consumed (header reset to `INVALID`, read index advanced) once it has executed,
//! so a blocked barrier keeps its slot.

use std::sync::atomic::{AtomicU64, Ordering};

use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::aql::{AqlError, AqlPacket, Barrier, KernelDispatch, PacketWords};
use hsakmt_core::queue::ring::{AMD_QUEUE_READ_DISPATCH_ID_OFFSET, AqlConsumer, AqlRingCells};
use hsakmt_core::queue::signal::Signal;
use hsakmt_core::uapi::{
    EC_QUEUE_PACKET_DISPATCH_CODE_INVALID, EC_QUEUE_PACKET_DISPATCH_DIM_INVALID,
    EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID,
    EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID, EC_QUEUE_PACKET_RESERVED,
    EC_QUEUE_PACKET_UNSUPPORTED, EC_QUEUE_PACKET_VENDOR_UNSUPPORTED,
    EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION, EC_QUEUE_WAVE_MEMORY_VIOLATION, EC_QUEUE_WAVE_TRAP,
};

use super::isa_queue::{IsaStep, QueueIsa};
use super::kernel::{KernelCtx, KernelFault};
use super::vm::MemRange;
use super::{Cp, Exec, Regs, SimQueue, Step};
use crate::isa::launch::AqlDispatch;

/// Largest work-group (work-items), as on every AMD GPU.
const MAX_WORKGROUP_ITEMS: u64 = 1024;
/// Group-segment (LDS) bytes a work-group may ask for.
const MAX_GROUP_SEGMENT: u32 = 64 * 1024;

/// [`AqlRingCells`] over resolved queue memory.
struct Cells {
    ring: MemRange,
    read: MemRange,
    write: MemRange,
    slots: u64,
}

impl Cells {
    fn word(r: &MemRange) -> Option<&AtomicU64> {
        r.u64s().first()
    }
}

impl AqlRingCells for Cells {
    fn slots(&self) -> u64 {
        self.slots
    }
    fn load_write_index(&self, order: Ordering) -> u64 {
        Self::word(&self.write).map_or(0, |w| w.load(order))
    }
    fn store_write_index(&self, value: u64, order: Ordering) {
        if let Some(w) = Self::word(&self.write) {
            w.store(value, order);
        }
    }
    fn fetch_add_write_index(&self, n: u64, order: Ordering) -> u64 {
        Self::word(&self.write).map_or(0, |w| w.fetch_add(n, order))
    }
    fn compare_exchange_write_index(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        Self::word(&self.write)
            .map_or(Err(current), |w| w.compare_exchange_weak(current, new, success, failure))
    }
    fn load_read_index(&self, order: Ordering) -> u64 {
        Self::word(&self.read).map_or(0, |w| w.load(order))
    }
    fn store_read_index(&self, value: u64, order: Ordering) {
        if let Some(w) = Self::word(&self.read) {
            w.store(value, order);
        }
    }
    fn store_body(&self, slot: usize, packet: &PacketWords) {
        if let Some(d) = self.ring.u32s().get(slot * 16 + 1) {
            d.store(packet.dw[1], Ordering::Relaxed);
        }
        if let Some(q) = self.ring.u64s().get(slot * 8 + 1..slot * 8 + 8) {
            for (c, v) in q.iter().zip(packet.qw.iter()) {
                c.store(*v, Ordering::Relaxed);
            }
        }
    }
    fn load_body(&self, slot: usize) -> PacketWords {
        let mut p = PacketWords::default();
        if let Some(d) = self.ring.u32s().get(slot * 16 + 1) {
            p.dw[1] = d.load(Ordering::Relaxed);
        }
        if let Some(q) = self.ring.u64s().get(slot * 8 + 1..slot * 8 + 8) {
            for (v, c) in p.qw.iter_mut().zip(q.iter()) {
                *v = c.load(Ordering::Relaxed);
            }
        }
        p
    }
    fn store_header(&self, slot: usize, word: u32, order: Ordering) {
        if let Some(h) = self.ring.u32s().get(slot * 16) {
            h.store(word, order);
        }
    }
    fn load_header(&self, slot: usize, order: Ordering) -> u32 {
        self.ring.u32s().get(slot * 16).map_or(1, |h| h.load(order))
    }
    fn ring_doorbell(&self, _value: u64) {}
}

/// The exception code the kernel reports for an undecodable packet.
pub(crate) fn packet_exception(e: AqlError) -> u32 {
    match e {
        AqlError::InvalidDimensions(_) => EC_QUEUE_PACKET_DISPATCH_DIM_INVALID,
        AqlError::InvalidGeometry => EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID,
        AqlError::UnsupportedVendorFormat(_) | AqlError::MalformedPm4 => {
            EC_QUEUE_PACKET_VENDOR_UNSUPPORTED
        }
        _ => EC_QUEUE_PACKET_RESERVED,
    }
}

/// The exception code for a kernel that stopped.
pub(crate) fn kernel_exception(f: KernelFault) -> (u32, Option<u64>) {
    match f {
        KernelFault::Memory { address, .. } => (EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(address)),
        KernelFault::Trap(_) => (EC_QUEUE_WAVE_TRAP, None),
        KernelFault::IllegalInstruction => (EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION, None),
    }
}

enum Outcome {
    Done,
    Blocked,
    /// A kernel is running on the interpreter: the packet stays, the processor comes back.
    Running,
    Fault(u32, Option<u64>),
}

/// Where the packet at `index` sits and which `amd_queue_t` holds the read index.
pub(crate) struct Site {
    pub(crate) packet_address: u64,
    pub(crate) queue_address: u64,
}

/// Runs the dispatch `k`: a registered host kernel once per work-group, or the kernel's
/// machine code on the interpreter (GPU queues).
fn dispatch(
    q: &SimQueue,
    cp: &Cp,
    k: &KernelDispatch,
    index: u64,
    exec: &mut Exec,
    site: &Site,
) -> Outcome {
    let wg = k.workgroup_size.map(u32::from);
    if wg.iter().map(|v| u64::from(*v)).product::<u64>() > MAX_WORKGROUP_ITEMS {
        return Outcome::Fault(EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID, None);
    }
    if k.group_segment_size > MAX_GROUP_SEGMENT {
        return Outcome::Fault(EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID, None);
    }
    if cp.kernels.get(k.kernel_object).is_none()
        && cp.vendor_packets
        && QueueIsa::target(q).is_some()
    {
        let d = AqlDispatch {
            kernel_object: k.kernel_object,
            kernarg_address: k.kernarg_address,
            grid: k.grid_size,
            workgroup: wg,
            group_segment_size: k.group_segment_size,
            private_segment_size: k.private_segment_size,
            packet_address: site.packet_address,
            dispatch_id: index,
            queue_address: site.queue_address,
        };
        return match exec.isa.aql(q, cp, &d) {
            IsaStep::Done => Outcome::Done,
            IsaStep::Running => Outcome::Running,
            IsaStep::Stalled => Outcome::Blocked,
            IsaStep::Fault(ec, a) => Outcome::Fault(ec, a),
        };
    }
    match host_dispatch(q, cp, k, index) {
        Ok(()) => Outcome::Done,
        Err((ec, a)) => Outcome::Fault(ec, a),
    }
}

/// Runs the registered host kernel of `k` once per work-group.
fn host_dispatch(
    q: &SimQueue,
    cp: &Cp,
    k: &KernelDispatch,
    index: u64,
) -> Result<(), (u32, Option<u64>)> {
    let wg = k.workgroup_size.map(u32::from);
    let kernel =
        cp.kernels.get(k.kernel_object).ok_or((EC_QUEUE_PACKET_DISPATCH_CODE_INVALID, None))?;
    let groups = [0, 1, 2].map(|d| k.grid_size[d].div_ceil(wg[d].max(1)));
    let mut ctx = KernelCtx {
        workgroup_id: [0; 3],
        workgroup_size: wg,
        grid_size: k.grid_size,
        kernarg_address: k.kernarg_address,
        dispatch_index: index,
        gpu_id: q.gpu_id,
        queue_id: q.qid,
        vm: cp.vm.as_ref(),
    };
    for z in 0..groups[2] {
        for y in 0..groups[1] {
            for x in 0..groups[0] {
                ctx.workgroup_id = [x, y, z];
                // A host kernel that panics is a wave that hit an illegal instruction: the
                // queue goes into error instead of losing its processor.
                let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| kernel(&ctx)));
                run.unwrap_or(Err(KernelFault::IllegalInstruction)).map_err(kernel_exception)?;
            }
        }
    }
    Ok(())
}

fn barrier(q: &SimQueue, cp: &Cp, b: &Barrier, all: bool) -> Outcome {
    let mut any_dep = false;
    for &handle in b.dep_signals.iter().filter(|h| **h != 0) {
        any_dep = true;
        let Some(r) = cp.vm.resolve(q.gpu_id, handle, 64) else {
            return Outcome::Fault(EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(handle));
        };
        let Ok(s) = Signal::new(&r, 0) else {
            return Outcome::Fault(EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(handle));
        };
        let met = s.load_acquire() == 0;
        match (all, met) {
            (true, false) => return Outcome::Blocked,
            (false, true) => return Outcome::Done,
            _ => {}
        }
    }
    if all || !any_dep { Outcome::Done } else { Outcome::Blocked }
}

fn execute(
    q: &SimQueue,
    cp: &Cp,
    p: &AqlPacket,
    index: u64,
    exec: &mut Exec,
    site: &Site,
) -> Outcome {
    match p {
        AqlPacket::KernelDispatch(k) => dispatch(q, cp, k, index, exec, site),
        AqlPacket::BarrierAnd(b) => barrier(q, cp, b, true),
        AqlPacket::BarrierOr(b) => barrier(q, cp, b, false),
        AqlPacket::AgentDispatch(_) => Outcome::Fault(EC_QUEUE_PACKET_UNSUPPORTED, None),
        AqlPacket::Pm4IndirectBuffer(_) if !cp.vendor_packets => {
            Outcome::Fault(EC_QUEUE_PACKET_VENDOR_UNSUPPORTED, None)
        }
        AqlPacket::Pm4IndirectBuffer(ib) => {
            match super::pm4::run_ib(q, cp, ib.ib_address, ib.ib_size_dwords, exec) {
                Ok(super::pm4::IbOutcome::Done) => Outcome::Done,
                Ok(super::pm4::IbOutcome::Blocked) => Outcome::Blocked,
                Ok(super::pm4::IbOutcome::Running) => Outcome::Running,
                Err((ec, a)) => Outcome::Fault(ec, a),
            }
        }
    }
}

/// Runs an AQL queue for at most `budget` packets; returns the outcome and packets consumed.
pub(crate) fn run(
    q: &SimQueue,
    cp: &Cp,
    regs: &Regs,
    exec: &mut Exec,
    budget: usize,
) -> (Step, u64) {
    let Some((ring, read, write)) = q.ring_memory(cp, regs) else {
        return (Step::Idle, 0);
    };
    let slots = regs.ring_size / 64;
    let Ok(cons) = AqlConsumer::new(Cells { ring, read, write, slots }) else {
        q.raise_fault(cp, EC_QUEUE_PACKET_RESERVED, 0, None);
        return (Step::Idle, 0);
    };
    let mut n = 0u64;
    let quiet = |n: u64, s: Step| if n > 0 { Step::Progress } else { s };
    while (n as usize) < budget && !q.stopping() {
        let index = cons.read_index();
        if q.aql_limit().wrapping_sub(index) as i64 <= 0 {
            return (quiet(n, Step::Idle), n);
        }
        let Some(words) = cons.peek() else {
            return (quiet(n, Step::Idle), n);
        };
        let packet = match AqlPacket::from_words(&words) {
            Ok(p) => p,
            Err(e) => {
                q.raise_fault(cp, packet_exception(e), index, None);
                return (Step::Progress, n);
            }
        };
        let site = Site {
            packet_address: regs.ring_address.wrapping_add((index % slots) * 64),
            queue_address: q.read_pointer.saturating_sub(AMD_QUEUE_READ_DISPATCH_ID_OFFSET as u64),
        };
        match execute(q, cp, &packet, index, exec, &site) {
            Outcome::Done => {}
            Outcome::Blocked => return (quiet(n, Step::Blocked), n),
            Outcome::Running => return (Step::Running, n),
            Outcome::Fault(ec, address) => {
                exec.isa.abandon();
                exec.ib_pos = [None; 3];
                q.raise_fault(cp, ec, index, address);
                return (Step::Progress, n);
            }
        }
        let _ = cons.pop();
        n += 1;
        let signal = packet.completion_signal();
        if signal != 0
            && let Err(a) = cp.complete_signal(q.gpu_id, signal)
        {
            q.raise_fault(cp, EC_QUEUE_WAVE_MEMORY_VIOLATION, index, Some(a));
            return (Step::Progress, n);
        }
    }
    (Step::Progress, n)
}
