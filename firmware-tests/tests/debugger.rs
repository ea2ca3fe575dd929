//! A debugger-style session over the simulator (the process debugs itself, as libhsakmt's
//! `hsaKmtDbgEnable` does): attach, the runtime rendezvous, queues new to the debugger,
//! suspend (the queue stops executing), snapshots, resume, exceptions raising the debug
//! event, address watches, flags, launch modes, detach — and every error path of the kernel
//! and of libhsakmt's checks.

use std::time::Duration;

use firmware_tests::SimKfd;
use firmware_tests::queue_support::{Signals, gpu_nodes, wait_until};
use hsakmt_core::debug::{
    DebugFlags, EventSource, ExceptionCode as Ec, ExceptionMask, QueueOutcome, RuntimeState,
    TrapMask, TrapOverride, WatchMode, WaveLaunchMode,
};
use hsakmt_core::device::queue_manager::{QueueDesc, QueueInfo, QueueType};
use hsakmt_core::device::{AddressWatch, Error};
use hsakmt_core::error::{Errno, Error as _, ErrorKind};
use hsakmt_core::platform::{Host, KfdDevice};
use hsakmt_core::queue::aql::{AqlPacket, Barrier, HeaderFlags};
use hsakmt_core::uapi::{
    EC_QUEUE_WAVE_ABORT, EC_QUEUE_WAVE_MEMORY_VIOLATION, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
    kfd_dbg_device_info_entry, kfd_hsa_memory_exception_data, kfd_queue_snapshot_entry,
};
use hsakmt_sim::{CpMode, Profile, SimPlatform, WatchAccess};

const T: Duration = Duration::from_secs(20);

fn open(profile: &str) -> Box<SimKfd> {
    let sim = SimPlatform::builder()
        .profile(Profile::embedded(profile).unwrap())
        .cp_mode(CpMode::Step)
        .build();
    let kfd = firmware_tests::device(sim);
    kfd.open().unwrap();
    kfd
}

fn errno(e: &Error) -> Errno {
    match e {
        Error::Ioctl { name: "DBG_TRAP" | "RUNTIME_ENABLE", errno } => *errno,
        other => panic!("expected a debugger ioctl error, got {other:?}"),
    }
}

/// Waits for the kernel's notification byte on the pipe and drains it.
fn notified(kfd: &SimKfd, read_fd: u32) -> bool {
    let sim = kfd.platform();
    if !sim.poll_fd(read_fd, 2000).unwrap() {
        return false;
    }
    let mut buf = [0u8; 64];
    while sim.read_fd(read_fd, &mut buf).is_ok() {}
    true
}

fn barrier(kfd: &SimKfd, q: &QueueInfo, signals: &Signals, i: usize) {
    let p = kfd.aql_queue(q.handle).unwrap();
    let b = Barrier {
        flags: HeaderFlags::SYSTEM,
        dep_signals: [0; 5],
        completion_signal: signals.handle(i),
    };
    p.submit(&AqlPacket::BarrierAnd(b).to_words().unwrap(), || {});
}

#[test]
fn a_debugger_session_from_attach_to_detach() {
    let kfd = open("mi308x-8gpu-cpx");
    let sim = kfd.platform();
    let pid = sim.process_id();
    let node = gpu_nodes(&kfd)[0];
    let gpu_id = kfd.with_topology(|t| t.node_by_user_id(node).unwrap().gpu_id().unwrap()).unwrap();
    let d = kfd.debugger(pid);

    // No session yet: every operation but ENABLE is refused.
    assert_eq!(errno(&d.disable().unwrap_err()), Errno::EINVAL);
    assert_eq!(errno(&d.query_debug_event(ExceptionMask::NONE).unwrap_err()), Errno::EINVAL);
    // Another pid has no KFD process here.
    let (r, w) = sim.create_pipe().unwrap();
    assert_eq!(
        errno(&kfd.debugger(pid + 1).enable(ExceptionMask::ALL, w).unwrap_err()),
        Errno::ESRCH
    );
    // The notification descriptor must be open.
    let closed = i32::MAX.cast_unsigned();
    assert_eq!(errno(&d.enable(ExceptionMask::ALL, closed).unwrap_err()), Errno::EBADF);

    // Attach, subscribed to everything.
    let info = d.enable(ExceptionMask::ALL, w).unwrap();
    assert_eq!(info.state, RuntimeState::Disabled);
    assert!(sim.debug_state().enabled);
    assert_eq!(errno(&d.enable(ExceptionMask::ALL, w).unwrap_err()), Errno::EALREADY);
    // Hardware operations wait for the runtime.
    assert_eq!(
        errno(&d.suspend_queues(&mut [0], 0, ExceptionMask::NONE).unwrap_err()),
        Errno::EPERM
    );
    assert_eq!(errno(&d.set_flags(DebugFlags::NONE).unwrap_err()), Errno::EPERM);

    // The runtime enables itself: the kernel tells the debugger and waits for its answer.
    std::thread::scope(|s| {
        let runtime = s.spawn(|| kfd.runtime_enable(0x1234_5000, true));
        assert!(notified(&kfd, r), "EC_PROCESS_RUNTIME notified");
        let ev = d.query_debug_event(ExceptionMask::NONE).unwrap().unwrap();
        assert_eq!(ev.source, EventSource::Process);
        assert!(ev.exceptions.contains(Ec::ProcessRuntime));
        let mut buf = [0u8; 16];
        let size = d.query_exception_info(Ec::ProcessRuntime, 0, true, &mut buf).unwrap();
        assert_eq!(size, 16);
        assert_eq!(u64::from_le_bytes(buf[..8].try_into().unwrap()), 0x1234_5000);
        assert_eq!(u32::from_le_bytes(buf[8..12].try_into().unwrap()), 1, "enabled");
        assert!(!runtime.is_finished(), "the runtime waits for the debugger");
        d.acknowledge_runtime().unwrap();
        runtime.join().unwrap().unwrap();
    });
    assert_eq!(sim.debug_state().runtime.runtime_state, 1);
    assert_eq!(sim.debug_state().runtime.ttmp_setup, 1);
    // Nothing pending any more (the kernel's EAGAIN).
    assert_eq!(d.query_debug_event(ExceptionMask::NONE).unwrap(), None);

    // A new queue raises EC_QUEUE_NEW.
    let q = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).unwrap();
    assert!(notified(&kfd, r));
    let ev = d.query_debug_event(ExceptionMask::NONE).unwrap().unwrap();
    assert_eq!(ev.source, EventSource::Queue { queue_id: q.queue_id, gpu_id });
    assert_eq!(ev.exceptions, Ec::QueueNew.mask());
    // A queue new to the debugger cannot be suspended.
    let mut ids = [q.queue_id];
    assert_eq!(d.suspend_queues(&mut ids, 0, ExceptionMask::NONE).unwrap(), 0);
    assert_eq!(QueueOutcome::of(ids[0]), QueueOutcome::Invalid);
    assert_eq!(QueueOutcome::queue_id(ids[0]), q.queue_id);

    // The snapshot describes the queue and marks it seen.
    let mut snap = [kfd_queue_snapshot_entry::default(); 4];
    assert_eq!(d.queue_snapshot(Ec::QueueNew.mask(), &mut snap).unwrap(), 1);
    let e = snap[0];
    assert_eq!(
        (e.queue_id, e.gpu_id, e.queue_type),
        (q.queue_id, gpu_id, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL)
    );
    assert_eq!(e.ring_base_address, q.ring_address);
    assert_eq!(u64::from(e.ring_size), q.ring_size);
    assert_eq!(
        (e.read_pointer_address, e.write_pointer_address),
        (q.read_pointer, q.write_pointer)
    );
    assert_eq!(e.ctx_save_restore_address, q.ctx_save_address);
    assert_eq!(e.exception_status, Ec::QueueNew.mask().0);
    // A snapshot into no room only counts.
    assert_eq!(d.queue_snapshot(ExceptionMask::NONE, &mut []).unwrap(), 1);

    // Suspend: the queue stops executing.
    let mut ids = [q.queue_id, 999];
    assert_eq!(d.suspend_queues(&mut ids, 100, ExceptionMask::NONE).unwrap(), 1);
    assert_eq!(QueueOutcome::of(ids[0]), QueueOutcome::Done);
    assert_eq!(QueueOutcome::of(ids[1]), QueueOutcome::Invalid);
    assert!(sim.queue_state(q.queue_id).unwrap().suspended);
    let signals = Signals::new(&kfd, 2, 1);
    barrier(&kfd, &q, &signals, 0);
    sim.run_until_idle();
    assert_eq!(signals.get(0).load_acquire(), 1, "a suspended queue executes nothing");
    assert_eq!(sim.queue_state(q.queue_id).unwrap().packets, 0);
    // Suspending again counts it (already suspended).
    assert_eq!(d.suspend_queues(&mut [q.queue_id], 0, ExceptionMask::NONE).unwrap(), 1);

    // Resume: it continues where it stopped.
    let mut ids = [q.queue_id, 998];
    assert_eq!(d.resume_queues(Some(&mut ids)).unwrap(), 1);
    assert_eq!(QueueOutcome::of(ids[1]), QueueOutcome::Invalid);
    wait_until(sim, T, "the barrier after resume", || signals.get(0).load_acquire() == 0);

    // A wave exception the debugger subscribed to goes to the debugger, not the runtime.
    assert!(sim.fault_queue(q.queue_id, EC_QUEUE_WAVE_ABORT));
    assert!(notified(&kfd, r));
    let ev = d.query_debug_event(Ec::QueueWaveAbort.mask()).unwrap().unwrap();
    assert!(ev.exceptions.contains(Ec::QueueWaveAbort));
    assert_eq!(ev.source, EventSource::Queue { queue_id: q.queue_id, gpu_id });
    assert_eq!(d.query_debug_event(ExceptionMask::NONE).unwrap(), None, "cleared by the query");
    // ... which it may pass on to the runtime (an unknown queue is ignored).
    d.send_runtime_event(node, q.queue_id, Ec::QueueWaveAbort.mask()).unwrap();
    d.send_runtime_event(node, 4321, Ec::QueueWaveAbort.mask()).unwrap();

    // A memory violation is also a device exception with the fault's data.
    let q2 = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).unwrap();
    let _ = d.queue_snapshot(Ec::QueueNew.mask(), &mut snap).unwrap();
    while notified(&kfd, r) && d.query_debug_event(ExceptionMask::ALL).unwrap().is_some() {}
    assert!(sim.fault_queue_memory(q2.queue_id, 0xdead_0000));
    assert!(notified(&kfd, r));
    let mut found = Vec::new();
    while let Some(ev) =
        d.query_debug_event(ExceptionMask::NONE.with(Ec::QueueWaveMemoryViolation)).unwrap()
    {
        found.push(ev);
        if found.len() > 4 {
            break;
        }
    }
    assert!(
        found.iter().any(|e| e.source == EventSource::Device { gpu_id }
            && e.exceptions.contains(Ec::DeviceMemoryViolation)),
        "{found:?}"
    );
    let mut data = [0u8; 64];
    let size = d.query_exception_info(Ec::DeviceMemoryViolation, gpu_id, false, &mut data).unwrap();
    assert_eq!(size as usize, size_of::<kfd_hsa_memory_exception_data>());
    assert_eq!(
        u64::from_le_bytes(data[16..24].try_into().unwrap()),
        0xdead_0000,
        "the faulting address"
    );
    assert_eq!(u32::from_le_bytes(data[24..28].try_into().unwrap()), gpu_id);
    // Not raised there: ENODATA; no such source: EINVAL.
    assert_eq!(
        errno(&d.query_exception_info(Ec::DeviceRasError, gpu_id, false, &mut data).unwrap_err()),
        Errno::ENODATA
    );
    assert_eq!(
        errno(&d.query_exception_info(Ec::QueueWaveTrap, 777, false, &mut data).unwrap_err()),
        Errno::EINVAL
    );
    let _ = EC_QUEUE_WAVE_MEMORY_VIOLATION;

    // The device snapshot describes every GPU of the process.
    let gpus = gpu_nodes(&kfd).len() as u32;
    let mut devs = vec![kfd_dbg_device_info_entry::default(); gpus as usize];
    assert_eq!(d.device_snapshot(ExceptionMask::DEVICE, &mut devs).unwrap(), gpus);
    let first = devs.iter().find(|e| e.gpu_id == gpu_id).unwrap();
    kfd.with_topology(|t| {
        let n = t.node_by_user_id(node).unwrap();
        let p = n.node().properties();
        assert_eq!(first.gfx_target_version, p.gfx_target_version().unwrap());
        assert_eq!(first.location_id, p.location_id().unwrap());
        assert_eq!(first.device_id, p.device_id().unwrap());
        assert_eq!(first.simd_count, p.simd_count().unwrap());
        assert_eq!(first.capability, p.capability().unwrap());
        assert_eq!(u64::from(first.debug_prop), p.debug_prop().unwrap());
    })
    .unwrap();
    assert_ne!(first.exception_status, 0, "the memory violation is reported");
    // The snapshot cleared the device exceptions.
    assert_eq!(
        errno(
            &d.query_exception_info(Ec::DeviceMemoryViolation, gpu_id, false, &mut data)
                .unwrap_err()
        ),
        Errno::ENODATA
    );

    // Address watches: four per GPU.
    // One 64-byte line each (the mask selects the compared address bits).
    let watch = |a| AddressWatch { address: a, mask: 0xFFFF_FFC0, mode: WatchMode::All };
    let ids: Vec<u32> =
        (0..4).map(|i| d.set_address_watch(node, watch(0x10_0000 * (i + 1))).unwrap()).collect();
    assert_eq!(ids, [0, 1, 2, 3]);
    assert_eq!(errno(&d.set_address_watch(node, watch(0x50_0000)).unwrap_err()), Errno::ENOMEM);
    assert_eq!(sim.address_watches().len(), 4);
    // A wave access (what the ISA interpreter reports) traps only once the trap mask enables
    // address watches; then it raises a wave trap on the queue.
    let access = (0x20_0010, 4, WatchAccess::Write);
    assert_eq!(sim.watch_access(gpu_id, q.queue_id, access), None, "not armed");
    let aw = TrapMask::ADDRESS_WATCH;
    d.set_wave_launch_override(TrapOverride::Or, aw, aw).unwrap();
    assert_eq!(sim.watch_access(gpu_id, q.queue_id, (0x20_0040, 4, WatchAccess::Read)), None);
    assert_eq!(sim.watch_access(gpu_id, q.queue_id, access), Some(1));
    assert!(notified(&kfd, r));
    assert!(
        d.query_debug_event(ExceptionMask::ALL)
            .unwrap()
            .unwrap()
            .exceptions
            .contains(Ec::QueueWaveTrap)
    );
    d.set_wave_launch_override(TrapOverride::Replace, TrapMask(0), aw).unwrap();
    d.clear_address_watch(node, 1).unwrap();
    assert_eq!(errno(&d.clear_address_watch(node, 1).unwrap_err()), Errno::EINVAL);
    assert_eq!(errno(&d.clear_address_watch(node, 9).unwrap_err()), Errno::EINVAL);
    assert!(matches!(d.set_address_watch(999, watch(0)), Err(Error::InvalidNode { node: 999 })));

    // Flags: MI308X has precise memory operations, not precise ALU operations.
    assert_eq!(d.set_flags(DebugFlags::SINGLE_MEMORY_OP).unwrap(), DebugFlags::NONE);
    assert_eq!(errno(&d.set_flags(DebugFlags::SINGLE_ALU_OP).unwrap_err()), Errno::EACCES);
    assert_eq!(sim.debug_state().flags, DebugFlags::SINGLE_MEMORY_OP.0, "unchanged by the refusal");
    assert_eq!(d.set_flags(DebugFlags::NONE).unwrap(), DebugFlags::SINGLE_MEMORY_OP);

    // Launch mode and trap override (gfx 9.4.2: FP, address watch, memory violation; OR or
    // REPLACE).
    d.set_wave_launch_mode(WaveLaunchMode::Halt).unwrap();
    assert_eq!(sim.debug_state().launch_mode, 1);
    let o = d
        .set_wave_launch_override(
            TrapOverride::Or,
            TrapMask::ADDRESS_WATCH,
            TrapMask::ADDRESS_WATCH,
        )
        .unwrap();
    assert_eq!(o.previous, TrapMask(0));
    assert!(o.supported.0 & TrapMask::FP_ALL.0 == TrapMask::FP_ALL.0);
    let o = d
        .set_wave_launch_override(TrapOverride::Replace, TrapMask(0), TrapMask::ADDRESS_WATCH)
        .unwrap();
    assert_eq!(o.previous, TrapMask::ADDRESS_WATCH);
    let start = TrapMask(hsakmt_core::uapi::KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_START);
    assert_eq!(
        errno(&d.set_wave_launch_override(TrapOverride::Or, start, start).unwrap_err()),
        Errno::EACCES
    );

    // Destroying a suspended queue waits until it is resumed.
    let q3 = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).unwrap();
    let _ = d.queue_snapshot(Ec::QueueNew.mask(), &mut snap).unwrap();
    assert_eq!(d.suspend_queues(&mut [q3.queue_id], 0, ExceptionMask::NONE).unwrap(), 1);
    std::thread::scope(|s| {
        let destroy = s.spawn(|| kfd.destroy_queue(q3.handle));
        std::thread::sleep(Duration::from_millis(200));
        assert!(!destroy.is_finished(), "destruction waits for the resume");
        assert!(sim.queue_ids().contains(&q3.queue_id));
        // While it waits, the queue cannot be suspended (being destroyed).
        assert_eq!(d.resume_queues(Some(&mut [q3.queue_id])).unwrap(), 1);
        destroy.join().unwrap().unwrap();
    });
    assert!(!sim.queue_ids().contains(&q3.queue_id));

    // Detach: queues resumed, watches and flags gone, operations refused again.
    assert_eq!(d.suspend_queues(&mut [q.queue_id], 0, ExceptionMask::NONE).unwrap(), 1);
    d.disable().unwrap();
    let st = sim.debug_state();
    assert!(!st.enabled);
    assert_eq!((st.flags, st.launch_mode, st.raised), (0, 0, 0));
    assert!(sim.address_watches().is_empty());
    assert!(!sim.queue_state(q.queue_id).unwrap().suspended);
    assert_eq!(errno(&d.set_exceptions_enabled(ExceptionMask::ALL).unwrap_err()), Errno::EINVAL);
    sim.close_fd(r);
    sim.close_fd(w);
    for qi in [q, q2] {
        kfd.destroy_queue(qi.handle).unwrap();
    }
    // The runtime disables itself with no debugger: no wait.
    kfd.runtime_disable().unwrap();
    assert_eq!(sim.debug_state().runtime.runtime_state, 0);
}

#[test]
fn runtime_enable_follows_the_kernels_rules() {
    let kfd = open("mi308x-8gpu-cpx");
    let node = gpu_nodes(&kfd)[0];
    assert_eq!(kfd.runtime_capabilities(), 0);
    kfd.check_runtime_debug_support().unwrap();
    kfd.runtime_enable(0, false).unwrap();
    // Twice: EBUSY (libhsakmt's UNAVAILABLE).
    let e = kfd.runtime_enable(0, false).unwrap_err();
    assert_eq!(errno(&e), Errno::EBUSY);
    assert_eq!(e.kind().status(), hsakmt_core::error::HsakmtStatus::Unavailable);
    kfd.runtime_disable().unwrap();
    kfd.runtime_disable().unwrap();
    // With an active queue: EEXIST.
    let q = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).unwrap();
    assert_eq!(errno(&kfd.runtime_enable(0, false).unwrap_err()), Errno::EEXIST);
    kfd.destroy_queue(q.handle).unwrap();
    kfd.runtime_enable(0, false).unwrap();
    // The kernel sets no capability.
    assert_eq!(kfd.runtime_capabilities(), 0);
    kfd.close().unwrap();
    assert!(matches!(kfd.runtime_enable(0, false), Err(Error::NotOpened)));
}

#[test]
fn machines_without_debugger_support_say_so() {
    // MI25 on a ROCm 1.8 driver: no debugger firmware bit.
    let kfd = open("mi25-vega10-rocm18");
    let e = kfd.runtime_enable(0, false).unwrap_err();
    assert!(matches!(e, Error::NotSupported { .. }), "{e:?}");
    assert_eq!(e.kind(), ErrorKind::NotSupported);
    // A 1.12 kernel has no debugger at all.
    let sim = SimPlatform::builder().kfd_version(1, 12).cp_mode(CpMode::Step).build();
    let kfd = firmware_tests::device(sim);
    kfd.open().unwrap();
    assert!(matches!(
        kfd.check_runtime_debug_support(),
        Err(Error::NotSupported { needs_minor: 13, .. })
    ));
    assert!(matches!(kfd.dbg_enable(), Err(Error::NotSupported { needs_minor: 13, .. })));
    let pid = kfd.platform().process_id();
    assert!(matches!(kfd.debugger(pid).disable(), Err(Error::NotSupported { .. })));
}

#[test]
fn libhsakmt_debugger_calls() {
    let kfd = open("mi308x-8gpu-cpx");
    let sim = kfd.platform();
    let nodes = gpu_nodes(&kfd);
    let info = kfd.dbg_enable().unwrap();
    assert_eq!(info.state, RuntimeState::Disabled);
    assert!(kfd.debug_event_fd().is_some());
    assert_eq!(errno(&kfd.dbg_enable().unwrap_err()), Errno::EALREADY);
    let mut devs = vec![kfd_dbg_device_info_entry::default(); 16];
    assert_eq!(kfd.dbg_device_data(&mut devs).unwrap() as usize, nodes.len());
    let mut snap = [kfd_queue_snapshot_entry::default(); 8];
    assert_eq!(kfd.dbg_queue_data(&mut snap, false).unwrap(), 0);
    kfd.dbg_disable().unwrap();
    assert_eq!(kfd.debug_event_fd(), None);
    assert_eq!(sim.open_files(), 0, "the pipe is closed");
    assert_eq!(errno(&kfd.dbg_disable().unwrap_err()), Errno::EINVAL);
}

#[test]
fn libhsakmt_queue_data_suspends_what_it_reports() {
    let kfd = open("mi308x-8gpu-cpx");
    let sim = kfd.platform();
    let node = gpu_nodes(&kfd)[0];
    kfd.dbg_enable().unwrap();
    // Notifications for new queues.
    let pid = sim.process_id();
    kfd.debugger(pid)
        .set_exceptions_enabled(Ec::QueueNew.mask() | Ec::ProcessRuntime.mask())
        .unwrap();
    // The rendezvous with the (own) debugger happens on another thread.
    std::thread::scope(|s| {
        let rt = s.spawn(|| kfd.runtime_enable(0, false));
        assert!(kfd.wait_debug_event(2000).unwrap());
        kfd.debugger(pid).acknowledge_runtime().unwrap();
        rt.join().unwrap().unwrap();
    });
    let a = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).unwrap();
    let b = kfd.create_queue(&QueueDesc::new(node, QueueType::Sdma, 4096)).unwrap();
    assert!(kfd.wait_debug_event(0).unwrap());
    assert!(!kfd.wait_debug_event(0).unwrap(), "drained");
    let mut snap = [kfd_queue_snapshot_entry::default(); 8];
    assert_eq!(kfd.dbg_queue_data(&mut snap, true).unwrap(), 2);
    for q in [&a, &b] {
        assert!(sim.queue_state(q.queue_id).unwrap().suspended);
    }
    // The second snapshot shows them seen.
    assert!(snap[..2].iter().all(|e| e.exception_status == 0));
    kfd.dbg_disable().unwrap();
    for q in [&a, &b] {
        assert!(!sim.queue_state(q.queue_id).unwrap().suspended, "resumed by the detach");
        kfd.destroy_queue(q.handle).unwrap();
    }
}

#[test]
fn deprecated_debugger_calls_answer_as_upstream() {
    let kfd = open("mi308x-8gpu-cpx");
    let node = gpu_nodes(&kfd)[0];
    for r in [
        kfd.dbg_register(node),
        kfd.dbg_unregister(node),
        kfd.dbg_wavefront_control(node),
        kfd.dbg_address_watch(node, 2),
    ] {
        let e = r.unwrap_err();
        assert!(matches!(e, Error::Ioctl { errno: Errno::EPERM, .. }), "{e:?}");
    }
    assert!(matches!(kfd.dbg_register(9999), Err(Error::InvalidNode { node: 9999 })));
    assert!(matches!(
        kfd.dbg_address_watch(node, 101),
        Err(Error::TooManyWatchPoints { given: 101 })
    ));
    for r in [kfd.process_vm_read(1), kfd.process_vm_write(1), kfd.map_graphic_handle(node, 1)] {
        let e = r.unwrap_err();
        assert_eq!(e.kind().status(), hsakmt_core::error::HsakmtStatus::NotImplemented);
    }
}

/// The notification descriptor may be the process's own (kfdtest's `BaseDebug::Attach` passes
/// a FIFO it opened): the simulator writes its `'.'` there, where the debugger polls.
#[test]
fn notifications_reach_a_descriptor_of_the_process() {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let kfd = open("mi308x-8gpu-cpx");
    let d = kfd.debugger(kfd.platform().process_id());
    let (mut reader, writer) = std::io::pipe().unwrap();
    d.enable(ExceptionMask::ALL, writer.as_raw_fd().cast_unsigned()).unwrap();
    // The pipe is read on a thread of its own, so a missing notification fails the test.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut byte = [0u8; 1];
        let _ = tx.send(reader.read_exact(&mut byte).map(|()| byte));
    });
    std::thread::scope(|s| {
        let runtime = s.spawn(|| kfd.runtime_enable(0x1000, true));
        let byte = rx.recv_timeout(Duration::from_secs(5)).expect("EC_PROCESS_RUNTIME written");
        assert_eq!(&byte.unwrap(), b".", "to the process's pipe");
        d.acknowledge_runtime().unwrap();
        runtime.join().unwrap().unwrap();
    });
    d.disable().unwrap();
    kfd.runtime_disable().unwrap();
    drop(writer);
}

/// A refused launch override still tells the caller what is supported: the kernel writes the
/// supported mask before answering `EACCES` and copies the argument back whatever the result
/// (kfdtest's `HitTrapOnWaveStartEndEvent` skips on what it reads there).
#[test]
fn a_refused_launch_override_reports_the_supported_mask() {
    use hsakmt_core::platform::DbgTrapData;
    use hsakmt_core::uapi::{
        KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_START, KFD_DBG_TRAP_OVERRIDE_OR,
        KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE, kfd_ioctl_dbg_trap_args,
        kfd_ioctl_dbg_trap_set_wave_launch_override_args,
    };
    let kfd = open("mi308x-8gpu-cpx");
    let pid = kfd.platform().process_id();
    let (r, w) = kfd.platform().create_pipe().unwrap();
    let d = kfd.debugger(pid);
    d.enable(ExceptionMask::ALL, w).unwrap();
    std::thread::scope(|s| {
        let runtime = s.spawn(|| kfd.runtime_enable(0x1000, true));
        assert!(notified(&kfd, r));
        d.acknowledge_runtime().unwrap();
        runtime.join().unwrap().unwrap();
    });
    let start = KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_START;
    let o = kfd_ioctl_dbg_trap_set_wave_launch_override_args {
        override_mode: KFD_DBG_TRAP_OVERRIDE_OR,
        enable_mask: start,
        support_request_mask: start,
        pad: 0,
    };
    let mut args = kfd_ioctl_dbg_trap_args {
        pid,
        op: KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE,
        op_args: o.into(),
    };
    assert_eq!(
        errno(&kfd.debug_trap_raw(&mut args, DbgTrapData::None).unwrap_err()),
        Errno::EACCES
    );
    let back = args.op_args.launch_override();
    assert_eq!(back.support_request_mask & start, 0, "gfx942 has no trap on wave start");
    assert_ne!(back.support_request_mask, 0, "but the address watch and the rest");
    d.disable().unwrap();
    kfd.runtime_disable().unwrap();
}
