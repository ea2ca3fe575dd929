//! Unit tests of the command processor's pieces over host memory.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use hsakmt_core::error::Errno;
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::aql::{AqlPacket, Barrier, HeaderFlags, Pm4IndirectBuffer};
use hsakmt_core::queue::signal::{Signal, SignalInit};
use hsakmt_core::uapi::EC_QUEUE_PACKET_UNSUPPORTED;

use super::kernel::KernelCtx;
use super::pm4::{PM4_INDIRECT_BUFFER, PM4_NOP, PM4_RELEASE_MEM, PM4_WAIT_REG_MEM};
use super::vm::{GpuVm, HostVm};
use super::*;

fn host(vm: &HostVm, size: u64) -> hsakmt_hostmem::HostMapping {
    let addr = hsakmt_hostmem::reserve(None, size, 4096).unwrap();
    let m = hsakmt_hostmem::map_anonymous(addr, size).unwrap();
    vm.add(m.clone());
    m
}

#[test]
fn queue_buffer_rules_follow_kfd_queue_buffer_get() {
    let vm = HostVm::default();
    let a = host(&vm, 3 * 4096);
    let base = a.addr();
    // Inside the first page of the mapping, no size: fine (a small ring or a pointer).
    let p = vm.queue_buffer_get(1, base + 128, 1024).unwrap();
    // The exact size in pages.
    let q = vm.queue_buffer_get(1, base, 3 * 4096).unwrap();
    assert_eq!(vm.queue_buffer_get(1, base, 2 * 4096), Err(Errno::EINVAL), "smaller than the BO");
    assert_eq!(vm.queue_buffer_get(1, base, 4 * 4096), Err(Errno::EINVAL), "larger than the BO");
    assert_eq!(vm.queue_buffer_get(1, base + 4096, 4096), Err(Errno::EINVAL), "not its start");
    assert_eq!(vm.queue_buffer_get(1, 0x1000, 4096), Err(Errno::EINVAL), "no BO");
    assert_eq!(vm.remove_range(base, 3 * 4096), Err(Errno::EBUSY), "pinned");
    vm.queue_buffer_put(p);
    assert_eq!(vm.remove_range(base, 3 * 4096), Err(Errno::EBUSY), "still pinned once");
    vm.queue_buffer_put(q);
    assert!(vm.resolve(1, base + 8, 16).is_some());
    assert!(vm.resolve(1, base + 3 * 4096 - 8, 16).is_none(), "crosses the end");
    vm.remove_range(base, 3 * 4096).unwrap();
    assert!(vm.resolve(1, base + 8, 16).is_none());
    assert_eq!(vm.len(), 0);
}

#[test]
fn work_items_cover_the_grid_once() {
    let vm = HostVm::default();
    let mut seen = std::collections::BTreeSet::new();
    let (grid, wg) = ([10u32, 3, 2], [4u32, 2, 1]);
    for z in 0..2 {
        for y in 0..2 {
            for x in 0..3 {
                let ctx = KernelCtx {
                    workgroup_id: [x, y, z],
                    workgroup_size: wg,
                    grid_size: grid,
                    kernarg_address: 0,
                    dispatch_index: 0,
                    gpu_id: 1,
                    queue_id: 0,
                    vm: &vm,
                };
                for id in ctx.work_items() {
                    assert!(seen.insert(id), "{id:?} twice");
                }
                assert!(ctx.load_u32(0x1000).is_err());
            }
        }
    }
    assert_eq!(seen.len(), 60);
}

fn model() -> (GpuModel, Arc<HostVm>, Arc<RecordedEvents>) {
    let vm = Arc::new(HostVm::default());
    let events = Arc::new(RecordedEvents::default());
    let facts = GpuFacts {
        gpu_id: 1,
        gfx_target: 90402,
        num_xcc: 1,
        sdma_engines: 2,
        xgmi_engines: 0,
        sdma_queues_per_engine: 8,
        gws: 64,
        eop_size: 4096,
        ctl_stack_size: 0,
        cwsr_size: 0,
        debug_memory_size: 0,
        max_queues: 255,
        doorbell_size: 8,
    };
    let config = CpConfig::new(CpMode::Step, Duration::ZERO);
    let m = GpuModel::new(vec![facts], vm.clone(), events.clone(), config);
    (m, vm, events)
}

fn queue(
    kind: QueueKind,
    ring: &hsakmt_hostmem::HostMapping,
    ptrs: &hsakmt_hostmem::HostMapping,
) -> Arc<SimQueue> {
    Arc::new(SimQueue::new(
        0,
        1,
        kind,
        0,
        (ptrs.addr() + 128, ptrs.addr() + 56),
        0,
        90402,
        Regs {
            ring_address: ring.addr(),
            ring_size: ring.len() as u64,
            percentage: 100,
            priority: 7,
        },
        Vec::new(),
    ))
}

/// PM4: WRITE_DATA is covered by the scenarios; here RELEASE_MEM raises its interrupt after
/// writing, WAIT_REG_MEM holds the queue, an indirect buffer runs, and an unknown opcode stops
/// the queue.
#[test]
fn pm4_release_mem_wait_and_ib() {
    let (m, vm, events) = model();
    let ring = host(&vm, 4096);
    let ptrs = host(&vm, 4096);
    let data = host(&vm, 4096);
    let q = queue(QueueKind::Pm4, &ring, &ptrs);
    m.start(q.clone());
    let d = data.addr();
    let ib = [(3 << 30) | (PM4_NOP << 8), 0xDEAD_BEEF];
    for (i, v) in ib.iter().enumerate() {
        data.u32s()[512 + i].store(*v, Ordering::Relaxed);
    }
    let packets: Vec<u32> = vec![
        // WAIT_REG_MEM: memory, equal, data[0] == 1.
        (3 << 30) | (5 << 16) | (PM4_WAIT_REG_MEM << 8),
        (1 << 4) | 3,
        d as u32,
        (d >> 32) as u32,
        1,
        u32::MAX,
        4,
        // INDIRECT_BUFFER of the 2-dword NOP at data + 2048.
        (3 << 30) | (2 << 16) | (PM4_INDIRECT_BUFFER << 8),
        (d + 2048) as u32,
        ((d + 2048) >> 32) as u32,
        2 | (1 << 23),
        // RELEASE_MEM: 64-bit data 0x1_0000_0002 to data[2..4], interrupt with ctx 21.
        (3 << 30) | (6 << 16) | (PM4_RELEASE_MEM << 8),
        0,
        (2 << 29) | (2 << 24),
        (d + 8) as u32,
        ((d + 8) >> 32) as u32,
        2,
        1,
        21,
    ];
    for (i, v) in packets.iter().enumerate() {
        ring.u32s()[i].store(*v, Ordering::Relaxed);
    }
    ptrs.u64s()[7].store(packets.len() as u64, Ordering::Release);
    assert_eq!(m.run_until_idle(), 0, "the wait holds");
    data.u32s()[0].store(1, Ordering::Release);
    assert_eq!(m.run_until_idle(), 3);
    assert_eq!(data.u64s()[1].load(Ordering::Acquire), 0x1_0000_0002);
    assert_eq!(*events.signaled.lock().unwrap(), [21]);
    assert_eq!(ptrs.u64s()[16].load(Ordering::Acquire), packets.len() as u64);
    // An unknown opcode.
    ring.u32s()[packets.len()].store((3 << 30) | (0x77 << 8), Ordering::Relaxed);
    ptrs.u64s()[7].store(packets.len() as u64 + 2, Ordering::Release);
    m.run_until_idle();
    assert_eq!(q.fault().unwrap().exception, EC_QUEUE_PACKET_UNSUPPORTED);
    m.stop(0);
}

/// Fuzzing finding (target `cp_pm4`): a `WRITE_DATA` whose count leaves no room for its
/// control and address dwords (count 0 or 1) underflowed `len − 4` — a panic of the
/// simulator (debug builds), reachable by any PM4 queue user. It is a malformed packet now.
/// Pointers near 2^64 wrap instead of overflowing.
#[test]
fn pm4_short_write_data_is_malformed() {
    use hsakmt_core::uapi::EC_QUEUE_PACKET_RESERVED;
    for count in [0u32, 1] {
        let (m, vm, _events) = model();
        let ring = host(&vm, 4096);
        let ptrs = host(&vm, 4096);
        let q = queue(QueueKind::Pm4, &ring, &ptrs);
        m.start(q.clone());
        // WRITE_DATA (dst_sel 5) with `count`, followed by what would be its address.
        let packet = [(3 << 30) | (count << 16) | (super::pm4::PM4_WRITE_DATA << 8), 5 << 8, 0, 0];
        for (i, v) in packet.iter().enumerate() {
            ring.u32s()[i].store(*v, Ordering::Relaxed);
        }
        ptrs.u64s()[7].store(u64::from(count) + 2, Ordering::Release);
        m.run_until_idle();
        assert_eq!(q.fault().unwrap().exception, EC_QUEUE_PACKET_RESERVED, "count {count}");
        m.stop(0);
    }
    // A read pointer at the end of the u64 range: the NOP there is consumed, the pointer wraps.
    let (m, vm, _events) = model();
    let ring = host(&vm, 4096);
    let ptrs = host(&vm, 4096);
    let q = queue(QueueKind::Pm4, &ring, &ptrs);
    ptrs.u64s()[16].store(u64::MAX - 1, Ordering::Relaxed);
    ring.u32s()[1022].store((3 << 30) | (PM4_NOP << 8), Ordering::Relaxed);
    ring.u32s()[1023].store(0, Ordering::Relaxed);
    ptrs.u64s()[7].store(0, Ordering::Release);
    m.start(q.clone());
    m.run_until_idle();
    assert!(q.fault().is_none());
    assert_eq!(ptrs.u64s()[16].load(Ordering::Acquire), 0);
    m.stop(0);
}

/// AQL: barrier-OR completes when any dependency reaches 0; a PM4-IB vendor packet runs its
/// buffer; an agent dispatch is unsupported on a GPU queue; doorbells bound the fetch.
#[test]
fn aql_barrier_or_ib_and_unsupported() {
    let (m, vm, events) = model();
    let ring = host(&vm, 4096);
    let ptrs = host(&vm, 4096);
    let mem = host(&vm, 4096);
    let q = queue(QueueKind::Aql, &ring, &ptrs);
    m.start(q.clone());
    for slot in 0..64 {
        ring.u32s()[slot * 16].store(1, Ordering::Relaxed);
    }
    let s = |i: usize| Signal::new(&mem, i * 64).unwrap();
    s(0).init(&SignalInit::User { value: 1, mailbox: None });
    s(1).init(&SignalInit::User { value: 1, mailbox: None });
    s(2).init(&SignalInit::User { value: 1, mailbox: None });
    let put = |i: usize, p: AqlPacket| {
        let w = p.to_words().unwrap();
        ring.u32s()[i * 16 + 1].store(w.dw[1], Ordering::Relaxed);
        for (k, v) in w.qw.iter().enumerate() {
            ring.u64s()[i * 8 + 1 + k].store(*v, Ordering::Relaxed);
        }
        ring.u32s()[i * 16].store(w.dw[0], Ordering::Release);
    };
    let mut b = Barrier {
        flags: HeaderFlags::SYSTEM,
        dep_signals: [0; 5],
        completion_signal: s(2).handle(),
    };
    b.dep_signals[3] = s(0).handle();
    b.dep_signals[4] = s(1).handle();
    put(0, AqlPacket::BarrierOr(b));
    // The IB: one PM4 RELEASE_MEM raising event 5.
    let ib = mem.addr() + 1024;
    let rel = [(3u32 << 30) | (6 << 16) | (PM4_RELEASE_MEM << 8), 0, 1 << 24, 0, 0, 0, 0, 5];
    for (i, v) in rel.iter().enumerate() {
        mem.u32s()[256 + i].store(*v, Ordering::Relaxed);
    }
    put(
        1,
        AqlPacket::Pm4IndirectBuffer(Pm4IndirectBuffer {
            flags: HeaderFlags::SYSTEM,
            ib_address: ib,
            ib_size_dwords: 8,
            completion_signal: 0,
        }),
    );
    put(
        2,
        AqlPacket::AgentDispatch(hsakmt_core::queue::aql::AgentDispatch {
            flags: HeaderFlags::SYSTEM,
            function: 1,
            return_address: 0,
            args: [0; 4],
            completion_signal: 0,
        }),
    );
    assert_eq!(m.run_until_idle(), 0, "no doorbell yet");
    let doorbells = m.doorbells(1).unwrap();
    crate::mapping::DoorbellSink::rung(&*doorbells, 0, 0);
    assert_eq!(m.run_until_idle(), 0, "the barrier waits");
    s(1).store_release(0);
    assert_eq!(m.run_until_idle(), 1);
    assert_eq!(s(2).load_acquire(), 0);
    crate::mapping::DoorbellSink::rung(&*doorbells, 0, 2);
    assert_eq!(m.run_until_idle(), 1, "the IB ran; the agent dispatch stops the queue");
    assert_eq!(*events.signaled.lock().unwrap(), [5]);
    assert_eq!(q.fault().unwrap().exception, EC_QUEUE_PACKET_UNSUPPORTED);
    assert_eq!(q.fault().unwrap().packet, 2);
    m.stop(0);
}

/// Injected hang: a hung queue consumes nothing however its doorbell rings, and resumes at its
/// read index once released; an injected memory fault stops it with the address reported.
#[test]
fn hung_queue_waits_for_release_and_memory_faults_stop_it() {
    use hsakmt_core::uapi::EC_QUEUE_WAVE_MEMORY_VIOLATION;
    let (m, vm, events) = model();
    let ring = host(&vm, 4096);
    let ptrs = host(&vm, 4096);
    let mem = host(&vm, 4096);
    let q = queue(QueueKind::Aql, &ring, &ptrs);
    m.start(q.clone());
    for slot in 0..64 {
        ring.u32s()[slot * 16].store(1, Ordering::Relaxed);
    }
    let done = Signal::new(&mem, 0).unwrap();
    done.init(&SignalInit::User { value: 2, mailbox: None });
    for i in 0..2 {
        let b = Barrier {
            flags: HeaderFlags::SYSTEM,
            dep_signals: [0; 5],
            completion_signal: done.handle(),
        };
        let w = AqlPacket::BarrierAnd(b).to_words().unwrap();
        ring.u32s()[i * 16 + 1].store(w.dw[1], Ordering::Relaxed);
        for (k, v) in w.qw.iter().enumerate() {
            ring.u64s()[i * 8 + 1 + k].store(*v, Ordering::Relaxed);
        }
        ring.u32s()[i * 16].store(w.dw[0], Ordering::Release);
    }
    assert!(m.hang_queue(0));
    assert!(!m.hang_queue(9), "no such queue");
    assert!(q.state().hung);
    let doorbells = m.doorbells(1).unwrap();
    crate::mapping::DoorbellSink::rung(&*doorbells, 0, 0);
    assert_eq!(m.run_until_idle(), 0, "hung: nothing consumed");
    assert_eq!(done.load_acquire(), 2);
    assert!(m.release_queue(0));
    assert!(!q.state().hung);
    assert_eq!(m.run_until_idle(), 1, "resumes at the read index, up to the doorbell");
    assert_eq!(done.load_acquire(), 1);
    // A wave faults on a memory access: the queue stops, the fault names the address.
    assert!(m.fault_queue(0, EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(0xDEAD_0000)));
    assert!(!m.fault_queue(0, EC_QUEUE_WAVE_MEMORY_VIOLATION, None), "already in error");
    let f = q.fault().unwrap();
    assert_eq!((f.exception, f.address), (EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(0xDEAD_0000)));
    assert_eq!(*events.memory_faults.lock().unwrap(), vec![(1, 0xDEAD_0000, false)]);
    assert_eq!(events.queue_errors.lock().unwrap().len(), 1);
    crate::mapping::DoorbellSink::rung(&*doorbells, 0, 1);
    assert_eq!(m.run_until_idle(), 0, "a queue in error consumes nothing");
    m.stop(0);
}

/// Records, at each interrupt, the queue's read pointer (the u64 at `ptrs` + 128).
#[derive(Debug)]
struct ReadPointerAtInterrupt {
    ptrs: hsakmt_hostmem::HostMapping,
    seen: std::sync::Mutex<Vec<(u32, u64)>>,
}

impl EventHooks for ReadPointerAtInterrupt {
    fn signal_event(&self, event_id: u32) {
        let r = self.ptrs.u64s()[16].load(Ordering::Acquire);
        self.seen.lock().unwrap().push((event_id, r));
    }
    fn memory_fault(&self, _gpu_id: u32, _fault: crate::isa::MemFault) {}
    fn queue_error(&self, _fault: &QueueFault) {}
}

fn model_with(events: Arc<dyn EventHooks>, vm: Arc<HostVm>) -> GpuModel {
    let (m, _, _) = model();
    let facts = m.gpus[0].clone();
    GpuModel::new(vec![facts], vm, events, CpConfig::new(CpMode::Step, Duration::ZERO))
}

/// The CP fetched a packet (its read pointer moved) before the packet's end-of-pipe interrupt:
/// a host woken by a PM4 `RELEASE_MEM` or an SDMA `TRAP` finds the read pointer past it (kfdtest
/// places its next packet right after the wait, from the read pointer it reads then). PM4's
/// read pointer is a dword offset in the ring; a one-dword `NOP` (count 0x3FFF) precedes.
#[test]
fn interrupts_follow_the_read_pointer() {
    let vm = Arc::new(HostVm::default());
    let ptrs = host(&vm, 4096);
    let hooks = Arc::new(ReadPointerAtInterrupt { ptrs: ptrs.clone(), seen: Default::default() });
    let m = model_with(hooks.clone(), vm.clone());
    let ring = host(&vm, 4096);
    let q = queue(QueueKind::Pm4, &ring, &ptrs);
    m.start(q.clone());
    let release =
        |ctx: u32| [(3 << 30) | (6 << 16) | (PM4_RELEASE_MEM << 8), 0, 2 << 24, 0, 0, 0, 0, ctx];
    let mut dw = vec![(3 << 30) | (0x3FFF << 16) | (PM4_NOP << 8)];
    dw.extend(release(7));
    // INT_SEL 3: the write is confirmed, no interrupt.
    dw.extend([(3 << 30) | (6 << 16) | (PM4_RELEASE_MEM << 8), 0, 3 << 24, 0, 0, 0, 0, 8]);
    dw.extend(release(9));
    // Placed at the ring's last 4 dwords, wrapping: the read pointer ends at dword 21.
    for (i, v) in dw.iter().enumerate() {
        ring.u32s()[(1020 + i) % 1024].store(*v, Ordering::Relaxed);
    }
    ptrs.u64s()[16].store(1020, Ordering::Relaxed);
    ptrs.u64s()[7].store(1020 + dw.len() as u64, Ordering::Release);
    assert_eq!(m.run_until_idle(), 4);
    assert_eq!(*hooks.seen.lock().unwrap(), vec![(7, 1029 % 1024), (9, (1020 + 25) % 1024)]);
    assert_eq!(ptrs.u64s()[16].load(Ordering::Acquire), 21);
    assert!(q.fault().is_none());
    m.stop(0);

    // SDMA: FENCE then TRAP; the read pointer counts bytes and does not wrap.
    hooks.seen.lock().unwrap().clear();
    for w in ptrs.u64s() {
        w.store(0, Ordering::Relaxed);
    }
    let s = queue(QueueKind::Sdma { engine: 0 }, &ring, &ptrs);
    m.start(s.clone());
    let fence = ptrs.addr() + 512;
    let packets = [5, fence as u32, (fence >> 32) as u32, 1, 6, 33];
    for (i, v) in packets.iter().enumerate() {
        ring.u32s()[i].store(*v, Ordering::Relaxed);
    }
    ptrs.u64s()[7].store(24, Ordering::Release);
    assert_eq!(m.run_until_idle(), 2);
    assert_eq!(*hooks.seen.lock().unwrap(), vec![(33, 24)]);
    m.stop(0);
}

/// `UPDATE_QUEUE` changes the registers between packets: while the processor runs a queue
/// (holds its execution state) the update waits, so no packet is consumed under registers the
/// update already replaced (kfdtest's DisableCpQueueByUpdateWithZeroPercentage).
#[test]
fn updates_wait_for_the_packet_at_hand() {
    let (m, vm, _events) = model();
    let ring = host(&vm, 4096);
    let ptrs = host(&vm, 4096);
    let q = queue(QueueKind::Pm4, &ring, &ptrs);
    m.start(q.clone());
    let busy = q.exec.lock().unwrap();
    let mut regs = q.regs();
    regs.percentage = 0;
    let updater = {
        let q = q.clone();
        std::thread::spawn(move || q.update(regs, || {}))
    };
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(q.regs().percentage, 100, "changed while the processor was inside a run");
    drop(busy);
    updater.join().unwrap();
    assert_eq!(q.regs().percentage, 0);
    assert!(!q.is_active());
    m.stop(0);
}

/// A doorbell written with a plain store to the doorbell page (not through the mapping's
/// doorbell call) is found by polling: in step mode every round of `run_until_idle` looks at
/// each queue's slot, so an AQL queue runs up to the index stored there.
#[test]
fn plain_doorbell_stores_are_polled() {
    let (m, vm, _events) = model();
    let ring = host(&vm, 4096);
    let ptrs = host(&vm, 4096);
    let mem = host(&vm, 4096);
    let page = host(&vm, 8192);
    let doorbells = m.doorbells(1).unwrap();
    doorbells.set_page(page.clone());
    for slot in 0..64 {
        ring.u32s()[slot * 16].store(1, Ordering::Relaxed);
    }
    let q = Arc::new(SimQueue::new(
        0,
        1,
        QueueKind::Aql,
        3,
        (ptrs.addr() + 128, ptrs.addr() + 56),
        0,
        90402,
        Regs { ring_address: ring.addr(), ring_size: 4096, percentage: 100, priority: 7 },
        Vec::new(),
    ));
    m.start(q.clone());
    let done = Signal::new(&mem, 0).unwrap();
    done.init(&SignalInit::User { value: 3, mailbox: None });
    let barrier = |i: usize| {
        let b = Barrier {
            flags: HeaderFlags::SYSTEM,
            dep_signals: [0; 5],
            completion_signal: done.handle(),
        };
        let w = AqlPacket::BarrierAnd(b).to_words().unwrap();
        ring.u32s()[i * 16 + 1].store(w.dw[1], Ordering::Relaxed);
        for (k, v) in w.qw.iter().enumerate() {
            ring.u64s()[i * 8 + 1 + k].store(*v, Ordering::Relaxed);
        }
        ring.u32s()[i * 16].store(w.dw[0], Ordering::Release);
    };
    barrier(0);
    barrier(1);
    // Slot 3 of the page holds 0: packet 0 is the last one announced.
    assert_eq!(m.run_until_idle(), 1);
    page.u64s()[3].store(1, Ordering::Release);
    assert_eq!(m.run_until_idle(), 1, "packet 1 announced by a plain store");
    barrier(2);
    assert_eq!(m.run_until_idle(), 0, "published, not announced");
    page.u64s()[3].store(2, Ordering::Release);
    assert_eq!(m.run_until_idle(), 1);
    assert_eq!(done.load_acquire(), 0);
    m.stop(0);
}

/// Register polls: an HDP flush and a poll whose function is "always" complete at once; any
/// other register poll stops the queue (the simulator has no registers to read).
#[test]
fn sdma_register_polls() {
    let (m, vm, _events) = model();
    let ring = host(&vm, 4096);
    let ptrs = host(&vm, 4096);
    let q = queue(QueueKind::Sdma { engine: 0 }, &ring, &ptrs);
    m.start(q.clone());
    let packets = [
        // ROCr's hdp_flush_cmd.
        0x8,
        0,
        0x8000_0000,
        0,
        0,
        0,
        // Linux's HDP flush (hdp_flush, func equal).
        0x8 | (1 << 26) | (3 << 28),
        0x5480 << 2,
        0x5484 << 2,
        4,
        4,
        0x0FFF_000A,
        // A register poll for equality.
        0x8 | (3 << 28),
        0x100,
        0,
        1,
        1,
        0x0FFF_000A,
    ];
    for (i, v) in packets.iter().enumerate() {
        ring.u32s()[i].store(*v, Ordering::Relaxed);
    }
    ptrs.u64s()[7].store(packets.len() as u64 * 4, Ordering::Release);
    assert_eq!(m.run_until_idle(), 2);
    let f = q.fault().unwrap();
    assert_eq!((f.exception, f.packet), (EC_QUEUE_PACKET_UNSUPPORTED, 48));
    m.stop(0);
}
