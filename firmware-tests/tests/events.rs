//! Events over the simulated amdkfd: the kernel's own expectations (kfdtest's KFDEventTest and
//! `kfd_events.c`), threads, the signal-wait helper, callbacks, and faults on every event ioctl.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use firmware_tests::{SimKfd, device};
use hsakmt_core::device::{Error, EventDescriptor, Mailbox, SignalCondition, SignalValue};
use hsakmt_core::error::{Errno, Error as _, ErrorKind};
use hsakmt_core::event::{
    self, EventData, EventHandle, EventType, FaultFlags, Filter, Fired, INITIAL_AGE, MemoryError,
    Notification, ResetCause, ResetType, Timeout, Unregistered, WaitMode, WaitResult, WaitSet,
};
use hsakmt_core::platform::Ioctl;
use hsakmt_core::uapi::{
    _IOC_NR, AMDKFD_IOC_CREATE_EVENT, AMDKFD_IOC_DESTROY_EVENT, AMDKFD_IOC_RESET_EVENT,
    AMDKFD_IOC_SET_EVENT, AMDKFD_IOC_WAIT_EVENTS, kfd_event_data, kfd_ioctl_create_event_args,
    kfd_ioctl_wait_events_args,
};
use hsakmt_sim::{IoctlFault, SimPlatform, Trigger};

const CREATE: u32 = _IOC_NR(AMDKFD_IOC_CREATE_EVENT);
const DESTROY: u32 = _IOC_NR(AMDKFD_IOC_DESTROY_EVENT);
const SET: u32 = _IOC_NR(AMDKFD_IOC_SET_EVENT);
const RESET: u32 = _IOC_NR(AMDKFD_IOC_RESET_EVENT);
const WAIT: u32 = _IOC_NR(AMDKFD_IOC_WAIT_EVENTS);
const ALLOC: u32 = _IOC_NR(hsakmt_core::uapi::AMDKFD_IOC_ALLOC_MEMORY_OF_GPU);
const MAP: u32 = _IOC_NR(hsakmt_core::uapi::AMDKFD_IOC_MAP_MEMORY_TO_GPU);

type Dev = Box<SimKfd>;

fn open(sim: SimPlatform) -> Dev {
    let kfd = device(sim);
    kfd.open().expect("open");
    kfd
}

fn signal(kfd: &Dev) -> EventHandle {
    kfd.create_event(&EventDescriptor::signal()).expect("create signal event")
}

fn id(kfd: &Dev, h: EventHandle) -> u32 {
    kfd.event_info(h).unwrap().id
}

fn poll(kfd: &Dev, h: EventHandle) -> WaitResult {
    kfd.wait_event(h, Timeout::Immediate).unwrap()
}

fn stale(e: Result<impl std::fmt::Debug, Error>) {
    assert_eq!(e.unwrap_err(), Error::Event(event::Error::InvalidHandle));
}

/// Waits until `n` threads block in the simulated kernel.
fn until_waiting(kfd: &Dev, n: usize) {
    let start = Instant::now();
    while kfd.platform().event_waiters() < n {
        assert!(start.elapsed() < Duration::from_secs(10), "waiters never blocked");
        std::thread::yield_now();
    }
}

// ------------------------------------------------------------- kfdtest / kernel expectations

#[test]
fn created_events_have_a_slot_mailbox_and_trigger_data() {
    let kfd = open(SimPlatform::new());
    assert_eq!(kfd.event_page(), None, "the page is made lazily");
    let h = signal(&kfd);
    let info = kfd.event_info(h).unwrap();
    let (base, slots) = kfd.event_page().expect("the first signal event made the page");
    assert_eq!(slots, 4096, "the whole 32 KiB page");
    assert_eq!(kfd.platform().event_page(), Some((base, true)), "supplied by the library");
    assert_eq!(info.slot, Some(info.id), "signal events use their id as slot");
    assert_ne!(info.id, 0, "id 0 is reserved");
    assert_eq!(info.mailbox, Some(base + u64::from(info.id) * 8), "HWData2 != 0");
    assert_eq!(info.trigger_data, info.id);
    let mem = kfd.create_event(&EventDescriptor::new(EventType::Memory)).unwrap();
    let info = kfd.event_info(mem).unwrap();
    assert_eq!((info.slot, info.mailbox), (None, None));
    assert!(info.id >= event::FIRST_NONSIGNAL_EVENT_ID);
    kfd.destroy_event(h).unwrap();
    kfd.destroy_event(mem).unwrap();
    assert_eq!(kfd.event_count(), 0);
    assert_eq!(kfd.platform().kernel_events(), 0);
}

#[test]
fn on_dgpus_the_library_supplies_the_event_page() {
    let kfd = open(SimPlatform::new());
    let before = kfd.memory_usage().objects;
    let h = signal(&kfd);
    let (base, _) = kfd.event_page().unwrap();
    // The page is a memory object: uncached host memory with a CPU view, on every GPU.
    let info = kfd.pointer_info(base).unwrap();
    assert_eq!(info.size, event::EVENT_PAGE_SIZE);
    assert_eq!(info.cpu_address, Some(base));
    assert_eq!(info.mapped_nodes.len() as usize, kfd.platform().gpu_ids().len());
    assert_eq!(kfd.memory_usage().objects, before + 1);
    // It cannot be freed: the library holds a view of it (and the kernel refuses, `EPERM`).
    let err = kfd.free_memory(base).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Busy, "{err}");
    // GPU writes land where the library reads.
    let id = id(&kfd, h);
    assert!(kfd.platform().write_event_mailbox(id, 7));
    assert_eq!(kfd.query_event(h).unwrap().mailbox, Mailbox::Pending(7));
    // Closing works although the library held a view of the page.
    kfd.close().unwrap();
    assert_eq!(kfd.open_count(), 0);
}

#[test]
fn a_failed_page_allocation_leaves_nothing_behind() {
    let kfd = open(SimPlatform::new());
    let objects = kfd.memory_usage().objects;
    for (nr, errno) in [(ALLOC, Errno::ENOMEM), (MAP, Errno::EIO), (CREATE, Errno::ENOMEM)] {
        fail_once(&kfd, nr, errno);
        let err = kfd.create_event(&EventDescriptor::signal()).unwrap_err();
        assert_eq!(err.kind(), errno.kind(), "{err}");
        assert_eq!(kfd.event_page(), None);
        assert_eq!(kfd.event_count(), 0);
        assert_eq!(kfd.memory_usage().objects, objects, "the page allocation was undone");
    }
    signal(&kfd);
    assert!(kfd.event_page().is_some());
}

#[test]
fn on_systems_without_dgpus_the_kernel_allocates_the_page() {
    let kfd = open(firmware_tests::sim("cpu-only-virtual-crat-2021"));
    let objects = kfd.memory_usage().objects;
    let h = signal(&kfd);
    let (base, slots) = kfd.event_page().unwrap();
    assert_eq!(kfd.platform().event_page(), Some((base, false)), "kernel-allocated");
    assert_eq!(slots, 4096, "mapped whole, so every slot is usable");
    assert_eq!(kfd.memory_usage().objects, objects, "no memory object");
    let info = kfd.event_info(h).unwrap();
    assert_eq!(info.mailbox, Some(base + u64::from(info.id) * 8));
    assert!(kfd.platform().gpu_signal_event(info.id));
    assert_eq!(poll(&kfd, h), WaitResult::Complete);
}

#[test]
fn an_event_created_signaled_satisfies_a_wait() {
    let kfd = open(SimPlatform::new());
    let h = kfd.create_event(&EventDescriptor::signal().signaled()).unwrap();
    assert_eq!(poll(&kfd, h), WaitResult::Complete);
    assert_eq!(poll(&kfd, h), WaitResult::TimedOut, "auto-reset: consumed by the wait");
    let m = kfd.create_event(&EventDescriptor::signal().manual().signaled()).unwrap();
    assert_eq!(kfd.wait_event(m, Timeout::Infinite), Ok(WaitResult::Complete));
    // Only signal events can start signaled, and nothing reached the kernel.
    let calls = kfd.platform().ioctl_calls(CREATE);
    let err = kfd.create_event(&EventDescriptor::new(EventType::Memory).signaled());
    assert_eq!(err, Err(Error::Event(event::Error::NotCpuSettable(EventType::Memory))));
    assert_eq!(kfd.platform().ioctl_calls(CREATE), calls);
}

#[test]
fn an_auto_reset_event_satisfies_exactly_one_wait_per_set() {
    let kfd = open(SimPlatform::new());
    let h = signal(&kfd);
    assert_eq!(poll(&kfd, h), WaitResult::TimedOut);
    for _ in 0..3 {
        kfd.set_event(h).unwrap();
        assert_eq!(poll(&kfd, h), WaitResult::Complete);
        assert_eq!(poll(&kfd, h), WaitResult::TimedOut);
    }
    // Two sets with nobody waiting leave one signaled state, not two.
    kfd.set_event(h).unwrap();
    kfd.set_event(h).unwrap();
    assert_eq!(poll(&kfd, h), WaitResult::Complete);
    assert_eq!(poll(&kfd, h), WaitResult::TimedOut);
    // A reset undoes a set.
    kfd.set_event(h).unwrap();
    kfd.reset_event(h).unwrap();
    assert_eq!(poll(&kfd, h), WaitResult::TimedOut);
}

#[test]
fn a_manual_reset_event_stays_set_until_reset() {
    let kfd = open(SimPlatform::new());
    let h = kfd.create_event(&EventDescriptor::signal().manual()).unwrap();
    kfd.set_event(h).unwrap();
    for _ in 0..5 {
        assert_eq!(poll(&kfd, h), WaitResult::Complete);
    }
    kfd.reset_event(h).unwrap();
    assert_eq!(poll(&kfd, h), WaitResult::TimedOut);
}

#[test]
fn age_starts_at_one_and_advances_by_one_per_signal() {
    let kfd = open(SimPlatform::new());
    let h = signal(&kfd);
    let id = id(&kfd, h);
    assert_eq!(kfd.query_event(h).unwrap().age, INITIAL_AGE);
    let mut age = INITIAL_AGE;
    assert_eq!(kfd.wait_event_with_age(h, &mut age, Timeout::Immediate), Ok(WaitResult::TimedOut));
    assert_eq!(age, 1, "a timed-out wait leaves the age");
    // GPU signals (mailbox + interrupt), as kfdtest's RELEASE_MEM does.
    for expect in 2..=4 {
        assert!(kfd.platform().gpu_signal_event(id));
        assert_eq!(
            kfd.wait_event_with_age(h, &mut age, Timeout::Infinite),
            Ok(WaitResult::Complete)
        );
        assert_eq!(age, expect);
    }
    // A CPU set advances it too.
    kfd.set_event(h).unwrap();
    assert_eq!(kfd.wait_event_with_age(h, &mut age, Timeout::Infinite), Ok(WaitResult::Complete));
    assert_eq!(age, 5);
    assert_eq!(kfd.query_event(h).unwrap().age, 5, "the table learned it");
    // Age 0 means no tracking: an unsignaled auto-reset event times out and age stays 0.
    let mut zero = 0;
    assert_eq!(kfd.wait_event_with_age(h, &mut zero, Timeout::Immediate), Ok(WaitResult::TimedOut));
    assert_eq!(zero, 0);
}

#[test]
fn a_wait_with_an_old_age_returns_at_once() {
    let kfd = open(SimPlatform::new());
    let h = signal(&kfd);
    kfd.set_event(h).unwrap();
    kfd.set_event(h).unwrap();
    // The signaled flag is consumed elsewhere: only the age can tell.
    assert_eq!(poll(&kfd, h), WaitResult::Complete);
    let mut age = INITIAL_AGE;
    let t = Instant::now();
    assert_eq!(kfd.wait_event_with_age(h, &mut age, Timeout::Infinite), Ok(WaitResult::Complete));
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(age, 3);
    assert!(kfd.query_event(h).unwrap().fired_since(1));
    assert!(!kfd.query_event(h).unwrap().fired_since(3));
    // Ages belong to signal events, on kernels that have them.
    let mem = kfd.create_event(&EventDescriptor::new(EventType::Memory)).unwrap();
    let mut a = 1;
    assert_eq!(
        kfd.wait_event_with_age(mem, &mut a, Timeout::Immediate),
        Err(Error::Event(event::Error::NoEventAge))
    );
}

#[test]
fn kernels_before_1_14_have_no_ages() {
    let kfd = open(SimPlatform::builder().kfd_version(1, 13).build());
    let h = signal(&kfd);
    assert_eq!(kfd.query_event(h).unwrap().age, 0);
    let mut age = 1;
    let err = kfd.wait_event_with_age(h, &mut age, Timeout::Immediate).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotSupported);
    kfd.set_event(h).unwrap();
    assert_eq!(poll(&kfd, h), WaitResult::Complete);
}

#[test]
fn wait_all_on_64_signaled_events_returns() {
    let kfd = open(SimPlatform::new());
    let events: Vec<_> = (0..64).map(|_| signal(&kfd)).collect();
    let mut set: WaitSet = WaitSet::new();
    for h in &events {
        set.push(*h).unwrap();
    }
    assert_eq!(set.push(events[0]), Err(event::Error::WaitSetFull));
    assert_eq!(
        kfd.wait_events(&mut set, WaitMode::All, Timeout::Immediate),
        Ok(WaitResult::TimedOut)
    );
    for (i, h) in events.iter().enumerate() {
        if i % 2 == 0 {
            assert!(kfd.platform().gpu_signal_event(id(&kfd, *h)));
        } else {
            kfd.set_event(*h).unwrap();
        }
    }
    assert_eq!(
        kfd.wait_events(&mut set, WaitMode::All, Timeout::Infinite),
        Ok(WaitResult::Complete)
    );
    assert_eq!(set.fired_positions().count(), 64);
    for h in events {
        kfd.destroy_event(h).unwrap();
    }
}

#[test]
fn a_timed_out_wait_all_consumes_what_it_found_as_the_kernel_does() {
    let kfd = open(SimPlatform::new());
    let (a, b) = (signal(&kfd), signal(&kfd));
    kfd.set_event(a).unwrap();
    let mut set: WaitSet<2> = WaitSet::new();
    set.push(a).unwrap();
    set.push(b).unwrap();
    assert_eq!(
        kfd.wait_events(&mut set, WaitMode::All, Timeout::Immediate),
        Ok(WaitResult::TimedOut)
    );
    assert_eq!(set.fired(0), Fired::Unknown);
    assert_eq!(poll(&kfd, a), WaitResult::TimedOut, "a's set was consumed");
}

#[test]
fn wait_any_names_the_event_that_fired() {
    let kfd = open(SimPlatform::new());
    let events: Vec<_> = (0..64).map(|_| signal(&kfd)).collect();
    let mut set: WaitSet = WaitSet::new();
    for h in &events {
        set.push_with_age(*h, INITIAL_AGE).unwrap();
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            until_waiting(&kfd, 1);
            kfd.set_event(events[41]).unwrap();
        });
        assert_eq!(
            kfd.wait_events(&mut set, WaitMode::Any, Timeout::Infinite),
            Ok(WaitResult::Complete)
        );
    });
    assert_eq!(set.fired_positions().collect::<Vec<_>>(), [41]);
    assert_eq!(set.age(41), 2);
    assert_eq!(set.age(40), 1);
    assert_eq!(kfd.query_event(events[41]).unwrap().observed, 1);
}

#[test]
fn timeouts_return_the_timeout_status() {
    let kfd = open(SimPlatform::new());
    let h = signal(&kfd);
    let t = Instant::now();
    let r = kfd.wait_event(h, Timeout::Millis(30)).unwrap();
    assert_eq!(r, WaitResult::TimedOut);
    assert!(t.elapsed() >= Duration::from_millis(30), "{:?}", t.elapsed());
    assert_eq!(poll(&kfd, h), WaitResult::TimedOut);
    let mut set: WaitSet<2> = WaitSet::new();
    set.push(h).unwrap();
    set.push(signal(&kfd)).unwrap();
    assert_eq!(
        kfd.wait_events(&mut set, WaitMode::Any, Timeout::Millis(5)),
        Ok(WaitResult::TimedOut)
    );
    assert_eq!((set.fired(0), set.fired(1)), (Fired::No, Fired::No));
    assert_eq!(
        kfd.wait_events(&mut WaitSet::<1>::new(), WaitMode::Any, Timeout::Immediate),
        Err(Error::Event(event::Error::EmptyWaitSet))
    );
}

#[test]
fn destroyed_handles_are_rejected_even_when_the_kernel_reuses_the_id() {
    let kfd = open(SimPlatform::new());
    let h = signal(&kfd);
    let old_id = id(&kfd, h);
    kfd.destroy_event(h).unwrap();
    stale(kfd.set_event(h));
    stale(kfd.reset_event(h));
    stale(kfd.wait_event(h, Timeout::Immediate));
    stale(kfd.query_event(h));
    stale(kfd.event_info(h));
    stale(kfd.destroy_event(h));
    stale(kfd.store_signal(h, &AtomicU64::new(0), 1));
    let again = signal(&kfd);
    assert_eq!(id(&kfd, again), old_id, "the kernel reuses ids at once");
    assert_ne!(again, h);
    stale(kfd.set_event(h));
    assert!(kfd.set_event(again).is_ok());
    // The kernel itself rejects unknown ids with EINVAL.
    let mut args = hsakmt_core::uapi::kfd_ioctl_set_event_args { event_id: 4000, pad: 0 };
    assert_eq!(
        kfd.ioctl(&mut Ioctl::SetEvent(&mut args)),
        Err(Error::Ioctl { name: "SET_EVENT", errno: Errno::EINVAL })
    );
}

#[test]
fn only_signal_events_are_set_or_reset_from_the_cpu() {
    let kfd = open(SimPlatform::new());
    for t in [EventType::Memory, EventType::HwException, EventType::Debug, EventType::Queue] {
        let h = kfd.create_event(&EventDescriptor::new(t)).unwrap();
        assert_eq!(kfd.set_event(h), Err(Error::Event(event::Error::NotCpuSettable(t))));
        assert_eq!(kfd.reset_event(h), Err(Error::Event(event::Error::NotCpuSettable(t))));
        // The kernel agrees.
        let mut args =
            hsakmt_core::uapi::kfd_ioctl_set_event_args { event_id: id(&kfd, h), pad: 0 };
        assert_eq!(
            kfd.ioctl(&mut Ioctl::SetEvent(&mut args)).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }
}

#[test]
fn thousands_of_events_can_be_created_and_destroyed() {
    let kfd = open(SimPlatform::new());
    // kfdtest CreateMaxEvents: 256; the kernel allows 4095 signal events at once.
    for round in 0..2 {
        let mut events = Vec::new();
        for _ in 0..4095 {
            events.push(signal(&kfd));
        }
        let err = kfd.create_event(&EventDescriptor::signal()).unwrap_err();
        assert_eq!(
            err,
            Error::Ioctl { name: "CREATE_EVENT", errno: Errno::ENOSPC },
            "round {round}"
        );
        assert_eq!(kfd.event_count(), 4095, "a failed creation leaves nothing behind");
        // Other types do not use slots; the table still has room for one.
        let extra = kfd.create_event(&EventDescriptor::new(EventType::Memory)).unwrap();
        let full = kfd.create_event(&EventDescriptor::new(EventType::Memory)).unwrap_err();
        assert_eq!(full, Error::Event(event::Error::TableFull));
        assert_eq!(kfd.platform().kernel_events(), 4096, "the table refused before the kernel");
        events.push(extra);
        for h in events {
            kfd.destroy_event(h).unwrap();
        }
        assert_eq!(kfd.platform().kernel_events(), 0);
    }
}

#[test]
fn memory_faults_decode_to_what_was_injected() {
    let kfd = open(SimPlatform::new());
    let gpu = kfd.platform().gpu_ids()[3];
    let node = kfd.with_topology(|t| t.node_by_gpu_id(gpu).unwrap().node().user_id()).unwrap();
    let mem = kfd.create_event(&EventDescriptor::new(EventType::Memory)).unwrap();
    let flags = FaultFlags::NOT_PRESENT | FaultFlags::NO_EXECUTE;
    assert_eq!(kfd.platform().inject_memory_fault(gpu, 0x7f00_dead_0000, flags), 1);
    let mut set: WaitSet<1> = WaitSet::new();
    set.push(mem).unwrap();
    assert_eq!(
        kfd.wait_events(&mut set, WaitMode::Any, Timeout::Infinite),
        Ok(WaitResult::Complete)
    );
    let Some(EventData::MemoryFault(f)) = set.data(0) else { panic!("{:?}", set.data(0)) };
    assert_eq!(f.gpu_id, gpu);
    assert_eq!(f.node, node);
    assert_eq!(f.address, 0x7f00_dead_0000);
    assert_eq!(f.flags, flags);
    assert_eq!(f.error, MemoryError::None);
    assert!(f.fatal && !f.is_ecc());
    // A RAS error.
    kfd.platform().inject_ras_fault(gpu, 0, FaultFlags::IMPRECISE, MemoryError::PoisonConsumed);
    assert_eq!(
        kfd.wait_events(&mut set, WaitMode::Any, Timeout::Infinite),
        Ok(WaitResult::Complete)
    );
    let Some(EventData::MemoryFault(f)) = set.data(0) else { panic!() };
    assert_eq!(
        (f.error, f.is_ecc(), f.flags),
        (MemoryError::PoisonConsumed, true, FaultFlags::IMPRECISE)
    );
}

#[test]
fn hw_exceptions_decode_to_what_was_injected() {
    let kfd = open(SimPlatform::new());
    let gpu = kfd.platform().gpu_ids()[0];
    let hw = kfd.create_event(&EventDescriptor::new(EventType::HwException)).unwrap();
    let mem = kfd.create_event(&EventDescriptor::new(EventType::Memory)).unwrap();
    let sig = signal(&kfd);
    assert_eq!(
        kfd.platform().inject_gpu_reset(gpu, ResetType::PerEngine, ResetCause::GpuHang, false),
        1
    );
    let mut set: WaitSet<3> = WaitSet::new();
    for h in [hw, mem, sig] {
        set.push(h).unwrap();
    }
    assert_eq!(
        kfd.wait_events(&mut set, WaitMode::Any, Timeout::Infinite),
        Ok(WaitResult::Complete)
    );
    assert_eq!(set.fired(0), Fired::Yes);
    assert_eq!(set.fired(1), Fired::No, "memory events carry data whenever they fire");
    let Some(EventData::HwException(x)) = set.data(0) else { panic!("{:?}", set.data(0)) };
    assert_eq!(
        (x.gpu_id, x.reset, x.cause, x.memory_lost),
        (gpu, ResetType::PerEngine, ResetCause::GpuHang, false)
    );
    assert!(x.node.is_some());
    // An ECC reset also reports an imprecise SRAM-ECC fault on memory events.
    assert_eq!(kfd.platform().inject_gpu_reset(gpu, ResetType::WholeGpu, ResetCause::Ecc, true), 2);
    let mut all: WaitSet<2> = WaitSet::new();
    all.push(hw).unwrap();
    all.push(mem).unwrap();
    assert_eq!(
        kfd.wait_events(&mut all, WaitMode::All, Timeout::Infinite),
        Ok(WaitResult::Complete)
    );
    let Some(EventData::HwException(x)) = all.data(0) else { panic!() };
    assert_eq!((x.reset, x.cause, x.memory_lost), (ResetType::WholeGpu, ResetCause::Ecc, true));
    let Some(EventData::MemoryFault(f)) = all.data(1) else { panic!() };
    assert_eq!((f.error, f.gpu_id, f.flags), (MemoryError::SramEcc, gpu, FaultFlags::IMPRECISE));
}

#[test]
fn query_reads_the_mailbox_without_a_system_call() {
    let kfd = open(SimPlatform::new());
    let h = signal(&kfd);
    let id = id(&kfd, h);
    let before = kfd.platform().total_ioctl_calls();
    let q = kfd.query_event(h).unwrap();
    assert_eq!((q.mailbox, q.age, q.observed), (Mailbox::Idle, 1, 0));
    // The GPU wrote the mailbox; the interrupt is still in flight.
    assert!(kfd.platform().write_event_mailbox(id, 0x1234));
    assert_eq!(kfd.query_event(h).unwrap().mailbox, Mailbox::Pending(0x1234));
    assert_eq!(kfd.platform().total_ioctl_calls(), before, "queries issue no ioctl");
    assert_eq!(kfd.platform().deliver_event_interrupt(None), 1, "found by scanning");
    assert_eq!(kfd.query_event(h).unwrap().mailbox, Mailbox::Idle, "acknowledged");
    assert_eq!(kfd.platform().kernel_event_state(id), Some((true, 2)));
    // The process learns the new age from its next wait.
    assert_eq!(kfd.query_event(h).unwrap().age, 1);
    let mut age = 1;
    kfd.wait_event_with_age(h, &mut age, Timeout::Immediate).unwrap();
    let q = kfd.query_event(h).unwrap();
    assert!(q.fired_since(1));
    assert_eq!((q.age, q.observed), (2, 1));
    // Events without a slot have no mailbox.
    let mem = kfd.create_event(&EventDescriptor::new(EventType::Memory)).unwrap();
    assert_eq!(kfd.query_event(mem).unwrap().mailbox, Mailbox::None);
}

#[test]
fn close_destroys_the_events_and_a_reopen_starts_afresh() {
    let kfd = open(SimPlatform::new());
    let h = signal(&kfd);
    kfd.create_event(&EventDescriptor::new(EventType::Memory)).unwrap();
    for _ in 0..150 {
        signal(&kfd);
    }
    assert_eq!(kfd.platform().kernel_events(), 152);
    kfd.open().unwrap();
    kfd.close().unwrap();
    assert_eq!(kfd.platform().kernel_events(), 152, "still open once");
    kfd.close().unwrap();
    assert_eq!(kfd.platform().kernel_events(), 0);
    assert_eq!(kfd.event_page(), None, "the mapping is gone");
    kfd.open().unwrap();
    stale(kfd.set_event(h));
    let h2 = signal(&kfd);
    assert!(kfd.event_page().is_some(), "mapped again");
    kfd.set_event(h2).unwrap();
    assert_eq!(poll(&kfd, h2), WaitResult::Complete);
    assert_eq!(kfd.create_event(&EventDescriptor::signal()).map(|_| ()), Ok(()));
    kfd.close().unwrap();
    assert_eq!(kfd.create_event(&EventDescriptor::signal()), Err(Error::NotOpened));
}

// ------------------------------------------------------------- threads

#[test]
fn one_set_wakes_every_thread_waiting_on_an_auto_reset_event() {
    let kfd = open(SimPlatform::new());
    let h = signal(&kfd);
    std::thread::scope(|s| {
        let waiters: Vec<_> =
            (0..4).map(|_| s.spawn(|| kfd.wait_event(h, Timeout::Infinite))).collect();
        until_waiting(&kfd, 4);
        kfd.set_event(h).unwrap();
        for w in waiters {
            assert_eq!(w.join().unwrap(), Ok(WaitResult::Complete));
        }
    });
    // The set woke the queued waiters and did not leave the event signaled.
    assert_eq!(poll(&kfd, h), WaitResult::TimedOut);
}

#[test]
fn destroying_an_event_fails_its_waiters() {
    let kfd = open(SimPlatform::new());
    let h = signal(&kfd);
    let other = signal(&kfd);
    std::thread::scope(|s| {
        let w = s.spawn(|| {
            let mut set: WaitSet<2> = WaitSet::new();
            set.push(h).unwrap();
            set.push(other).unwrap();
            kfd.wait_events(&mut set, WaitMode::All, Timeout::Infinite)
        });
        until_waiting(&kfd, 1);
        kfd.destroy_event(h).unwrap();
        assert_eq!(w.join().unwrap(), Err(Error::Event(event::Error::Destroyed)));
    });
    assert!(kfd.set_event(other).is_ok(), "the other event is untouched");
}

#[test]
fn many_threads_wait_and_set_concurrently() {
    let kfd = open(SimPlatform::new());
    let events: Vec<_> = (0..8).map(|_| signal(&kfd)).collect();
    let rounds = 200;
    std::thread::scope(|s| {
        for h in &events {
            let kfd = &kfd;
            let h = *h;
            s.spawn(move || {
                let mut age = INITIAL_AGE;
                let mut seen = 0;
                while seen < rounds {
                    assert_eq!(
                        kfd.wait_event_with_age(h, &mut age, Timeout::Millis(10_000)),
                        Ok(WaitResult::Complete)
                    );
                    seen = age - 1;
                }
            });
        }
        for _ in 0..rounds {
            for h in &events {
                kfd.set_event(*h).unwrap();
            }
        }
    });
    for h in events {
        assert_eq!(kfd.query_event(h).unwrap().age, rounds + 1);
    }
}

// ------------------------------------------------------------- signal waits

#[test]
fn signal_waits_spin_then_sleep_and_stores_wake_only_sleepers() {
    let kfd = open(SimPlatform::new());
    let h = signal(&kfd);
    let value = AtomicU64::new(1);
    // Nobody sleeps: a store is a store, no system call.
    let sets = kfd.platform().ioctl_calls(SET);
    assert_eq!(kfd.store_signal(h, &value, 1), Ok(false));
    assert_eq!(kfd.platform().ioctl_calls(SET), sets);
    // Already satisfied: no kernel wait.
    let r = kfd.wait_signal(h, &value, SignalCondition::Eq(1), Timeout::Infinite, 0).unwrap();
    assert_eq!((r.value, r.result, r.kernel_waits), (1, WaitResult::Complete, 0));
    // A sleeper is woken by the store.
    std::thread::scope(|s| {
        let w =
            s.spawn(|| kfd.wait_signal(h, &value, SignalCondition::Lt(1), Timeout::Infinite, 0));
        until_waiting(&kfd, 1);
        assert_eq!(kfd.signal_sleepers(h), 1);
        assert_eq!(kfd.store_signal(h, &value, 0), Ok(true));
        let r = w.join().unwrap().unwrap();
        assert_eq!((r.value, r.result), (0, WaitResult::Complete));
        assert!(r.kernel_waits >= 1);
    });
    assert_eq!(kfd.signal_sleepers(h), 0);
    // The timeout covers spinning and sleeping.
    let t = Instant::now();
    let r =
        kfd.wait_signal(h, &value, SignalCondition::Eq(7), Timeout::Millis(20), 5_000_000).unwrap();
    assert_eq!(r.result, WaitResult::TimedOut);
    assert!(t.elapsed() >= Duration::from_millis(20));
    let mem = kfd.create_event(&EventDescriptor::new(EventType::Memory)).unwrap();
    assert_eq!(
        kfd.wait_signal(mem, &value, SignalCondition::Eq(7), Timeout::Immediate, 0),
        Err(Error::Event(event::Error::NotCpuSettable(EventType::Memory)))
    );
}

/// A signal value that never changes and counts how often it is read.
struct CountedValue(AtomicUsize);

impl SignalValue for CountedValue {
    fn load_acquire(&self) -> i64 {
        self.0.fetch_add(1, Ordering::Relaxed);
        1
    }
    fn store_release(&self, _: i64) {}
}

#[test]
fn a_signal_wait_that_must_not_spin_goes_to_the_kernel_at_once() {
    let kfd = open(SimPlatform::new());
    let h = signal(&kfd);
    let value = CountedValue(AtomicUsize::new(0));
    let r = kfd.wait_signal(h, &value, SignalCondition::Eq(0), Timeout::Millis(1), 0).unwrap();
    assert_eq!(r.result, WaitResult::TimedOut);
    assert!(r.kernel_waits >= 1);
    // One read on entry, one before deciding not to spin, one before each kernel wait and
    // one after the last: no spinning (a spin of 64 pauses before the first clock read cost
    // microseconds per wait).
    let reads = value.0.load(Ordering::Relaxed);
    assert!(reads <= 3 + r.kernel_waits as usize, "{reads} reads, {} kernel waits", r.kernel_waits);
}

/// Races a store against a waiter going to sleep, many times: a lost wake-up hangs the waiter
/// until its (long) timeout and fails the test.
fn no_lost_wakeups(kfd: &Dev) {
    let h = signal(kfd);
    let value = AtomicU64::new(0);
    std::thread::scope(|s| {
        let (kfd, value) = (&kfd, &value);
        let waiter = s.spawn(move || {
            for i in 1..=300i64 {
                let r = kfd
                    .wait_signal(
                        h,
                        value,
                        SignalCondition::Gte(i),
                        Timeout::Millis(20_000),
                        (i % 3) as u64 * 1000,
                    )
                    .unwrap();
                assert_eq!(r.result, WaitResult::Complete, "lost wake-up at {i}");
            }
        });
        for i in 1..=300i64 {
            if i % 7 == 0 {
                std::thread::sleep(Duration::from_micros(50));
            }
            kfd.store_signal(h, value, i).unwrap();
            while value.load(Ordering::SeqCst) == i as u64
                && kfd.signal_sleepers(h) == 0
                && i % 2 == 0
            {
                std::thread::yield_now();
                if waiter.is_finished() {
                    break;
                }
            }
        }
        waiter.join().unwrap();
    });
}

#[test]
fn signal_waits_lose_no_wakeups_with_ages() {
    no_lost_wakeups(&open(SimPlatform::new()));
}

#[test]
fn signal_waits_lose_no_wakeups_without_ages() {
    no_lost_wakeups(&open(SimPlatform::builder().kfd_version(1, 13).build()));
}

// ------------------------------------------------------------- callbacks

fn leak<F: Fn(&Notification) + Send + Sync + 'static>(
    f: F,
) -> &'static (dyn Fn(&Notification) + Send + Sync) {
    Box::leak(Box::new(f))
}

#[test]
fn poll_runs_callbacks_for_fired_events() {
    let kfd = open(SimPlatform::new());
    let sig = signal(&kfd);
    let quiet = signal(&kfd);
    let mem = kfd.create_event(&EventDescriptor::new(EventType::Memory)).unwrap();
    let seen: Arc<std::sync::Mutex<Vec<Notification>>> = Arc::default();
    let s1 = seen.clone();
    kfd.register_callback(Filter::Event(sig), leak(move |n| s1.lock().unwrap().push(*n))).unwrap();
    let s2 = seen.clone();
    kfd.register_callback(
        Filter::Type(EventType::Memory),
        leak(move |n| s2.lock().unwrap().push(*n)),
    )
    .unwrap();
    let d = kfd.poll(Timeout::Immediate).unwrap();
    assert_eq!((d.watched, d.fired, d.calls), (2, 0, 0), "quiet has no callback");
    kfd.set_event(sig).unwrap();
    kfd.set_event(quiet).unwrap();
    let d = kfd.poll(Timeout::Infinite).unwrap();
    assert_eq!((d.fired, d.calls), (1, 1));
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0].event, sig);
        assert_eq!((seen[0].age, seen[0].certain), (2, true));
    }
    // Reported once: the dispatcher keeps its own ages.
    assert_eq!(kfd.poll(Timeout::Immediate).unwrap().calls, 0);
    let gpu = kfd.platform().gpu_ids()[1];
    kfd.platform().inject_memory_fault(gpu, 0x1000, FaultFlags::READ_ONLY);
    let d = kfd.poll(Timeout::Infinite).unwrap();
    assert_eq!(d.calls, 1);
    let n = seen.lock().unwrap()[1];
    assert_eq!(n.event, mem);
    assert!(
        matches!(n.data, Some(EventData::MemoryFault(f)) if f.address == 0x1000 && f.flags == FaultFlags::READ_ONLY)
    );
    // A wait elsewhere on the same event does not hide a firing from the dispatcher.
    kfd.set_event(sig).unwrap();
    let mut age = 2;
    kfd.wait_event_with_age(sig, &mut age, Timeout::Infinite).unwrap();
    assert_eq!(kfd.poll(Timeout::Immediate).unwrap().calls, 1);
}

#[test]
fn a_callback_can_unregister_itself_during_dispatch() {
    let kfd: &'static Dev = Box::leak(Box::new(open(SimPlatform::new())));
    let h = signal(kfd);
    let calls = Arc::new(AtomicUsize::new(0));
    let me: Arc<std::sync::Mutex<Option<hsakmt_core::event::CallbackId>>> = Arc::default();
    let (c, m) = (calls.clone(), me.clone());
    let id = kfd
        .register_callback(
            Filter::Event(h),
            leak(move |_| {
                c.fetch_add(1, Ordering::SeqCst);
                let id = m.lock().unwrap().expect("registered");
                assert!(kfd.callback_running(id));
                assert_eq!(kfd.unregister_callback(id), Ok(Unregistered::Running));
            }),
        )
        .unwrap();
    *me.lock().unwrap() = Some(id);
    kfd.set_event(h).unwrap();
    assert_eq!(kfd.poll(Timeout::Infinite).unwrap().calls, 1);
    assert!(!kfd.callback_running(id));
    kfd.set_event(h).unwrap();
    let d = kfd.poll(Timeout::Immediate).unwrap();
    assert_eq!((d.watched, d.calls), (0, 0), "gone");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(kfd.unregister_callback(id), Err(Error::Event(event::Error::InvalidCallback)));
}

#[test]
fn registration_wakes_a_blocked_dispatcher() {
    let kfd = open(SimPlatform::new());
    let wake = signal(&kfd);
    kfd.set_dispatch_wake(Some(wake));
    let h = signal(&kfd);
    std::thread::scope(|s| {
        let d = s.spawn(|| kfd.poll(Timeout::Infinite));
        until_waiting(&kfd, 1);
        kfd.register_callback(Filter::Event(h), leak(|_| {})).unwrap();
        let d = d.join().unwrap().unwrap();
        assert_eq!((d.watched, d.calls), (1, 0), "the wake event is never reported");
    });
    assert_eq!(kfd.poll(Timeout::Immediate).unwrap().watched, 2);
}

// ------------------------------------------------------------- faults on every ioctl

fn fail_once(kfd: &Dev, nr: u32, errno: Errno) {
    kfd.platform().inject(IoctlFault { nr: Some(nr), errno, trigger: Trigger::Nth(1) });
}

#[test]
fn every_event_ioctl_fails_cleanly_and_recovers() {
    let kfd = open(SimPlatform::new());
    // CREATE: nothing is left behind, and the first signal event still sets the page up.
    fail_once(&kfd, CREATE, Errno::ENOMEM);
    assert_eq!(
        kfd.create_event(&EventDescriptor::signal()),
        Err(Error::Ioctl { name: "CREATE_EVENT", errno: Errno::ENOMEM })
    );
    assert_eq!((kfd.event_count(), kfd.event_page()), (0, None));
    let h = signal(&kfd);
    assert!(kfd.event_page().is_some());
    // A signaled creation whose SET fails destroys the event again.
    fail_once(&kfd, SET, Errno::EIO);
    assert!(kfd.create_event(&EventDescriptor::signal().signaled()).is_err());
    assert_eq!((kfd.event_count(), kfd.platform().kernel_events()), (1, 1));

    // SET and RESET: the event is unchanged and usable.
    fail_once(&kfd, SET, Errno::EIO);
    assert_eq!(kfd.set_event(h), Err(Error::Ioctl { name: "SET_EVENT", errno: Errno::EIO }));
    assert_eq!(poll(&kfd, h), WaitResult::TimedOut);
    kfd.set_event(h).unwrap();
    fail_once(&kfd, RESET, Errno::EIO);
    assert_eq!(kfd.reset_event(h).unwrap_err().kind(), ErrorKind::Io);
    kfd.reset_event(h).unwrap();
    assert_eq!(poll(&kfd, h), WaitResult::TimedOut);

    // WAIT: a failure changes no age; an interrupted wait is issued again.
    kfd.set_event(h).unwrap();
    fail_once(&kfd, WAIT, Errno::EFAULT);
    let mut age = INITIAL_AGE;
    assert_eq!(
        kfd.wait_event_with_age(h, &mut age, Timeout::Infinite),
        Err(Error::Ioctl { name: "WAIT_EVENTS", errno: Errno::EFAULT })
    );
    assert_eq!((age, kfd.query_event(h).unwrap().age), (1, 1));
    let waits = kfd.platform().ioctl_calls(WAIT);
    fail_once(&kfd, WAIT, Errno::EINTR);
    assert_eq!(
        kfd.wait_event_with_age(h, &mut age, Timeout::Millis(1000)),
        Ok(WaitResult::Complete)
    );
    assert_eq!(kfd.platform().ioctl_calls(WAIT), waits + 2, "retried once");
    assert_eq!(age, 3, "two CPU sets since creation");

    // DESTROY: the event stays alive and can be destroyed afterwards.
    fail_once(&kfd, DESTROY, Errno::EIO);
    assert!(kfd.destroy_event(h).is_err());
    assert!(kfd.set_event(h).is_ok(), "still usable");
    kfd.destroy_event(h).unwrap();
    assert_eq!((kfd.event_count(), kfd.platform().kernel_events()), (0, 0));
    assert_eq!(kfd.platform().injected_faults(), 7);
}

#[test]
fn interrupted_waits_keep_their_deadline() {
    let kfd = open(SimPlatform::new());
    let h = signal(&kfd);
    // The wait is interrupted twice before it may block: it is issued again with the time
    // left, so it neither fails nor outlasts its timeout by much.
    kfd.platform().inject(IoctlFault {
        nr: Some(WAIT),
        errno: Errno::EINTR,
        trigger: Trigger::Nth(1),
    });
    kfd.platform().inject(IoctlFault {
        nr: Some(WAIT),
        errno: Errno::EINTR,
        trigger: Trigger::Nth(2),
    });
    let t = Instant::now();
    assert_eq!(kfd.wait_event(h, Timeout::Millis(50)), Ok(WaitResult::TimedOut));
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(45) && took < Duration::from_secs(2), "{took:?}");
}

#[test]
fn the_simulated_kernel_checks_raw_requests() {
    let kfd = open(SimPlatform::new());
    // A buffer handle that names no buffer.
    let mut args =
        kfd_ioctl_create_event_args { event_page_offset: 0x1_0000_0001, ..Default::default() };
    assert_eq!(
        kfd.ioctl(&mut Ioctl::CreateEvent(&mut args)).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    // Waiting on an unknown id.
    let mut data = [kfd_event_data { event_id: 77, ..Default::default() }];
    let mut wait = kfd_ioctl_wait_events_args::default();
    assert_eq!(
        kfd.ioctl(&mut Ioctl::WaitEvents { args: &mut wait, events: &mut data }),
        Err(Error::Ioctl { name: "WAIT_EVENTS", errno: Errno::EINVAL })
    );
    // Before the page is mapped only 255 signal events fit, as in the kernel.
    let mut created = 0;
    loop {
        let mut a = kfd_ioctl_create_event_args::default();
        match kfd.ioctl(&mut Ioctl::CreateEvent(&mut a)) {
            Ok(()) => created += 1,
            Err(e) => {
                assert_eq!(e, Error::Ioctl { name: "CREATE_EVENT", errno: Errno::ENOSPC });
                break;
            }
        }
    }
    assert_eq!(created, 255);
}

// ------------------------------------------------------------- monitor thread

#[test]
fn a_monitor_thread_runs_callbacks_asynchronously() {
    use hsakmt_linux::EventMonitor;
    let kfd: Arc<SimKfd> = Arc::from(open(SimPlatform::new()));
    let h = kfd.create_event(&EventDescriptor::signal()).unwrap();
    let mem = kfd.create_event(&EventDescriptor::new(EventType::Memory)).unwrap();
    let monitor = EventMonitor::start(kfd.clone()).unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Notification>();
    let tx = std::sync::Mutex::new(tx);
    // Registered after the monitor blocked: registration wakes it to watch the event.
    let id = kfd
        .register_callback(Filter::Event(h), leak(move |n| tx.lock().unwrap().send(*n).unwrap()))
        .unwrap();
    let faults = Arc::new(AtomicUsize::new(0));
    let f = faults.clone();
    kfd.register_callback(
        Filter::Type(EventType::Memory),
        leak(move |n| {
            assert!(matches!(n.data, Some(EventData::MemoryFault(_))));
            f.fetch_add(1, Ordering::SeqCst);
        }),
    )
    .unwrap();
    for round in 2..=4 {
        kfd.set_event(h).unwrap();
        let n = rx.recv_timeout(Duration::from_secs(10)).expect("callback ran");
        assert_eq!((n.event, n.age), (h, round));
    }
    let gpu = kfd.platform().gpu_ids()[0];
    kfd.platform().inject_memory_fault(gpu, 0x2000, FaultFlags::NOT_PRESENT);
    let start = Instant::now();
    while faults.load(Ordering::SeqCst) == 0 {
        assert!(start.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(1));
    }
    // Unregistering while the monitor waits: the event is no longer reported.
    assert!(kfd.unregister_callback(id).is_ok());
    kfd.set_event(h).unwrap();
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
    assert!(monitor.stats().calls.load(Ordering::Relaxed) >= 4);
    let wake = monitor.wake_event();
    monitor.stop().unwrap();
    stale(kfd.event_info(wake));
    kfd.destroy_event(mem).unwrap();
    kfd.destroy_event(h).unwrap();
    assert_eq!(kfd.event_count(), 0);
}

#[test]
fn a_monitor_ends_when_the_device_closes() {
    use hsakmt_linux::EventMonitor;
    let kfd: &'static SimKfd = Box::leak(open(SimPlatform::new()));
    let monitor = EventMonitor::start(kfd).unwrap();
    until_waiting_on(kfd, 1);
    // Closing destroys the wake event the monitor waits on: its wait fails and, the device
    // being closed, the thread ends.
    kfd.close().unwrap();
    let start = Instant::now();
    while monitor.is_running() {
        assert!(start.elapsed() < Duration::from_secs(10), "the monitor did not notice");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(monitor.stop(), Err(Error::NotOpened));
}

fn until_waiting_on(kfd: &SimKfd, n: usize) {
    let start = Instant::now();
    while kfd.platform().event_waiters() < n {
        assert!(start.elapsed() < Duration::from_secs(10), "waiters never blocked");
        std::thread::yield_now();
    }
}

// ------------------------------------------------------------- HSA completion signals

#[test]
fn an_hsa_completion_signal_wakes_its_waiter_through_the_event_page() {
    use hsakmt_core::platform::KfdDevice as _;
    use hsakmt_core::queue::signal::{Mailbox as SignalMailbox, Signal, SignalInit};
    let kfd = open(SimPlatform::new());
    let h = signal(&kfd);
    let info = kfd.event_info(h).unwrap();
    let base = kfd.platform().reserve_va(None, 4096, 4096).unwrap();
    let mem = kfd.platform().map_anonymous(base, 4096).unwrap();
    let sig = Signal::new(&mem, 0).unwrap();
    sig.init(&SignalInit::User {
        value: 1,
        mailbox: Some(SignalMailbox { address: info.mailbox.unwrap(), event_id: info.id }),
    });
    std::thread::scope(|s| {
        let w = s.spawn(|| kfd.wait_signal(h, &sig, SignalCondition::Eq(0), Timeout::Infinite, 0));
        until_waiting(&kfd, 1);
        // The simulated command processor completes a packet carrying the signal.
        let done = sig.cp_complete();
        assert_eq!(done.value, 0);
        let mb = done.interrupt.unwrap();
        assert!(kfd.platform().raise_completion_interrupt(mb.address, mb.event_id));
        let r = w.join().unwrap().unwrap();
        assert_eq!((r.value, r.result), (0, WaitResult::Complete));
    });
    // A host store through the same signal wakes nobody when nobody sleeps.
    assert_eq!(kfd.store_signal(h, &sig, 5), Ok(false));
    assert_eq!(sig.load_acquire(), 5);
}
