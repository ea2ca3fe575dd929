//! Queues meeting events: completion signals whose event mailbox raises a KFD signal event, SDMA
//! traps, queue errors raising their error event and the memory-fault event, and XNACK mode
//! refused while queues exist.

use std::time::Duration;

use firmware_tests::queue_support::{Signals, gpu_nodes, host_buffer, wait_until};
use firmware_tests::{SimKfd, device};
use hsakmt_core::device::queue_manager::{QueueDesc, QueueType, SdmaCompletion};
use hsakmt_core::device::{Error as DeviceError, EventDescriptor};
use hsakmt_core::error::Errno;
use hsakmt_core::event::{EventData, EventType, Timeout, WaitMode, WaitResult, WaitSet};
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::aql::{AqlPacket, KernelDispatch};
use hsakmt_core::queue::sdma::SdmaPacket;
use hsakmt_core::queue::signal::Mailbox;
use hsakmt_sim::{CpMode, SimPlatform};

const T: Duration = Duration::from_secs(20);

fn open(mode: CpMode) -> Box<SimKfd> {
    let kfd = device(SimPlatform::builder().cp_mode(mode).build());
    kfd.open().unwrap();
    kfd
}

/// A dispatch whose completion signal carries a KFD event's mailbox wakes a thread blocked in
/// `WAIT_EVENTS` (threaded processor), and the mailbox is acknowledged.
#[test]
fn completion_signal_raises_its_event() {
    let kfd = open(CpMode::Threaded);
    let sim = kfd.platform();
    let node = gpu_nodes(&kfd)[0];
    let event = kfd.create_event(&EventDescriptor::signal()).unwrap();
    let info = kfd.event_info(event).unwrap();
    let signals = Signals::new(&kfd, 1, 1);
    signals.get(0).set_mailbox(Some(Mailbox { address: info.mailbox.unwrap(), event_id: info.id }));
    let k = sim.register_kernel("slow", |_| {
        std::thread::sleep(Duration::from_millis(20));
        Ok(())
    });
    let q = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).unwrap();
    let p = kfd.aql_queue(q.handle).unwrap();
    let mut d = KernelDispatch::linear(k, 1, 1);
    d.completion_signal = signals.handle(0);
    p.submit(&AqlPacket::KernelDispatch(d).to_words().unwrap(), || {});
    assert_eq!(kfd.wait_event(event, Timeout::Millis(10_000)).unwrap(), WaitResult::Complete);
    assert_eq!(signals.get(0).load_acquire(), 0);
    // Auto-reset: the wait consumed it.
    assert_eq!(kfd.wait_event(event, Timeout::Immediate).unwrap(), WaitResult::TimedOut);
    drop(p);
    kfd.destroy_queue(q.handle).unwrap();
    kfd.destroy_event(event).unwrap();
}

/// An SDMA copy completing through a signal with a mailbox, and a mailbox write followed by a
/// `TRAP` with the event id as its context: both events fire (a bare trap does not).
#[test]
fn sdma_completion_and_trap_raise_events() {
    let kfd = open(CpMode::Step);
    let sim = kfd.platform();
    let node = gpu_nodes(&kfd)[0];
    let (e1, e2) = (
        kfd.create_event(&EventDescriptor::signal()).unwrap(),
        kfd.create_event(&EventDescriptor::signal()).unwrap(),
    );
    let (i1, i2) = (kfd.event_info(e1).unwrap(), kfd.event_info(e2).unwrap());
    let (src, dst) = (host_buffer(&kfd, 1 << 20), host_buffer(&kfd, 1 << 20));
    src.write(0, &[7u8; 4096]).unwrap();
    let signals = Signals::new(&kfd, 1, 1);
    let q = kfd.create_queue(&QueueDesc::new(node, QueueType::Sdma, 4096)).unwrap();
    let mut p = kfd.sdma_queue(q.handle).unwrap();
    let done = SdmaCompletion::Signal {
        signal: signals.handle(0),
        value: 0,
        mailbox: Some(Mailbox { address: i1.mailbox.unwrap(), event_id: i1.id }),
    };
    let t = p.copy(dst.addr(), src.addr(), 1 << 20, done, || {}).unwrap();
    assert_eq!(kfd.wait_event(e1, Timeout::Immediate).unwrap(), WaitResult::TimedOut);
    // A bare trap sets nothing: the interrupt handler wants a written mailbox.
    p.ring().submit([SdmaPacket::Trap { int_ctx: i2.id }], || {}).unwrap();
    sim.run_until_idle();
    assert_eq!(kfd.wait_event(e2, Timeout::Immediate).unwrap(), WaitResult::TimedOut);
    // The mailbox write, then the trap: tinygrad's SDMA event protocol.
    let write = SdmaPacket::Fence { addr: i2.mailbox.unwrap(), data: i2.id, mtype: 0 };
    p.ring().submit([write, SdmaPacket::Trap { int_ctx: i2.id }], || {}).unwrap();
    sim.run_until_idle();
    assert!(p.is_complete(t));
    let mut set: WaitSet<2> = WaitSet::new();
    set.push(e1).unwrap();
    set.push(e2).unwrap();
    assert_eq!(
        kfd.wait_events(&mut set, WaitMode::All, Timeout::Immediate).unwrap(),
        WaitResult::Complete
    );
    let mut back = [0u8; 4096];
    dst.read(0, &mut back).unwrap();
    assert_eq!(back, [7u8; 4096]);
}

/// A kernel touching unmapped memory: the queue's error event fires (its payload holding the
/// exception), and the process's memory event carries the faulting address.
#[test]
fn queue_error_and_memory_fault_events() {
    let kfd = open(CpMode::Threaded);
    let sim = kfd.platform();
    let node = gpu_nodes(&kfd)[0];
    let error = kfd.create_event(&EventDescriptor::signal().manual()).unwrap();
    let memory = kfd.create_event(&EventDescriptor::new(EventType::Memory)).unwrap();
    let payload = Signals::new(&kfd, 1, 0);
    let mut desc = QueueDesc::new(node, QueueType::ComputeAql, 4096);
    desc.error.event_id = kfd.event_info(error).unwrap().id;
    desc.error.payload_address = payload.handle(0) + 8;
    let q = kfd.create_queue(&desc).unwrap();
    let bad = sim.register_kernel("bad", |ctx| ctx.store_u64(0x1234_5000, 1));
    let p = kfd.aql_queue(q.handle).unwrap();
    p.submit(
        &AqlPacket::KernelDispatch(KernelDispatch::linear(bad, 1, 1)).to_words().unwrap(),
        || {},
    );
    let mut set: WaitSet<2> = WaitSet::new();
    set.push(error).unwrap();
    set.push(memory).unwrap();
    let r = kfd.wait_events(&mut set, WaitMode::All, Timeout::Millis(10_000)).unwrap();
    assert_eq!(r, WaitResult::Complete);
    match set.data(1) {
        Some(EventData::MemoryFault(f)) => {
            assert_eq!(f.address & !0xFFF, 0x1234_5000);
            assert_eq!(f.gpu_id, q.gpu_id);
        }
        other => panic!("memory fault data: {other:?}"),
    }
    let ec = hsakmt_core::uapi::EC_QUEUE_WAVE_MEMORY_VIOLATION;
    assert_eq!(payload.get(0).load_acquire() as u64, 1 << (ec - 1));
    wait_until(sim, T, "the fault", || sim.queue_fault(q.queue_id).is_some());
}

/// amdkfd refuses to change XNACK mode while the process has queues.
#[test]
fn xnack_mode_is_frozen_while_queues_exist() {
    let kfd = open(CpMode::Step);
    let node = gpu_nodes(&kfd)[0];
    let q = kfd.create_queue(&QueueDesc::new(node, QueueType::Sdma, 4096)).unwrap();
    let e = kfd.set_xnack_mode(true).unwrap_err();
    assert!(matches!(e, DeviceError::Ioctl { errno: Errno::EBUSY, .. }), "{e:?}");
    kfd.destroy_queue(q.handle).unwrap();
    kfd.set_xnack_mode(true).unwrap();
}
