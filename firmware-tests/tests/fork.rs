//! A real `fork(2)` of a process that opened the device (kfdtest's
//! `KFDOpenCloseKFDTest.InvalidKFDHandleTest`, libhsakmt's `openclose.c`):
//!
//! - in the child every call fails with "not opened in this process" ([`Error::ForkedChild`],
//!   kind `NotOpened`) until the child opens the device itself;
//! - the parent's buffers are not in the child (`MADV_DONTFORK`: their ranges are not mapped
//!   there, so reading a parent view would fault), and the simulated kernel refuses the
//!   child's use of the parent's descriptor with `EBADF`;
//! - the child's own open discards the parent's state without touching it and works;
//! - the parent is unaffected;
//! - with a process-id cache that survives the fork, the kernel's `EBADF` is what reveals it.
//!
//! The child reports through its exit status and a file (the test harness's output capture
//! does not survive a fork), and ends with `_exit`, running no destructor of the parent's
//! objects.

use std::sync::Mutex;

use firmware_tests::queue_support::{cpu_node, gpu_nodes};
use firmware_tests::{SimKfd, device};
use hsakmt_core::device::queue_manager::{QueueDesc, QueueError, QueueType};
use hsakmt_core::device::{Allocation, Error, EventDescriptor, MapNodes, Opened};
use hsakmt_core::error::{Errno, Error as _, ErrorKind};
use hsakmt_core::event::{Timeout, WaitResult};
use hsakmt_core::memory::MemFlags;
use hsakmt_core::platform::{Ioctl, KfdDevice, SharedMemory};
use hsakmt_core::queue::aql::{AqlPacket, Barrier, HeaderFlags};
use hsakmt_core::uapi::kfd_ioctl_get_version_args;
use hsakmt_sim::{CpMode, SimAccounting, SimMapping, SimPlatform};

type K = SimKfd;

const HOST: MemFlags = MemFlags::NON_PAGED.union(MemFlags::HOST_ACCESS);
const VISIBLE_VRAM: MemFlags =
    MemFlags::NON_PAGED.union(MemFlags::COARSE_GRAIN).union(MemFlags::HOST_ACCESS);

/// Forks run one at a time (a fork copies only the calling thread; keeping the other test
/// threads of this binary idle keeps every lock free in the child).
static FORK: Mutex<()> = Mutex::new(());

/// Runs `child` in a forked child process; returns `Ok` when it succeeded, else its report.
fn in_child(child: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    let _one = FORK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let report = std::env::temp_dir().join(format!("hsakmt-fork-{}", std::process::id()));
    let _ = std::fs::remove_file(&report);
    // SAFETY: the child runs only `child` on this thread (the other threads of the test
    // binary are not copied and hold no lock the child takes: forks are serialised and the
    // simulator runs its queues in step mode, without threads), then leaves with `_exit`
    // without unwinding into the parent's frames or running destructors of shared state.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child))
            .unwrap_or_else(|_| Err("the child panicked".into()));
        let code = match outcome {
            Ok(()) => 0,
            Err(message) => {
                let _ = std::fs::write(&report, message);
                1
            }
        };
        // SAFETY: ends the child at once, as a forked child of a threaded process must.
        unsafe { libc::_exit(code) }
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked; `status` is a valid out-pointer.
    let waited = unsafe { libc::waitpid(pid, &raw mut status, 0) };
    assert_eq!(waited, pid, "waitpid");
    let message = std::fs::read_to_string(&report).unwrap_or_default();
    let _ = std::fs::remove_file(&report);
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else {
        Err(format!("child failed (status {status:#x}): {message}"))
    }
}

/// Whether `addr` lies in a mapping of this process (`/proc/self/maps`).
fn mapped(addr: u64) -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    maps.lines().any(|l| {
        let range = l.split_whitespace().next().unwrap_or("");
        let Some((a, b)) = range.split_once('-') else { return false };
        let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            return false;
        };
        (a..b).contains(&addr)
    })
}

macro_rules! ensure {
    ($cond:expr, $($msg:tt)*) => {
        if !$cond {
            return Err(format!($($msg)*));
        }
    };
}

fn sim(stale_pid: bool) -> SimPlatform {
    SimPlatform::builder().cp_mode(CpMode::Step).stale_process_id(stale_pid).build()
}

fn pattern_buffer(kfd: &K, node: u32, flags: MemFlags, byte: u8) -> Allocation<SimMapping> {
    let a = kfd.alloc_memory(node, 8192, flags).unwrap();
    a.mapping.as_ref().unwrap().write(0, &[byte; 8192]).unwrap();
    kfd.map_memory_to_gpu(a.addr, MapNodes::All).unwrap();
    a
}

/// Everything a process does with a working device: memory, an event, a queue running a
/// barrier; everything released again.
fn use_the_device(kfd: &K) -> Result<(), String> {
    let node = gpu_nodes(kfd)[0];
    let buf = pattern_buffer(kfd, cpu_node(kfd), HOST, 0x3C);
    let event = kfd.create_event(&EventDescriptor::signal()).map_err(|e| e.to_string())?;
    kfd.set_event(event).map_err(|e| e.to_string())?;
    let r = kfd.wait_event(event, Timeout::Immediate).map_err(|e| e.to_string())?;
    ensure!(r == WaitResult::Complete, "event wait: {r:?}");
    let q = kfd
        .create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096))
        .map_err(|e| e.to_string())?;
    let p = kfd.aql_queue(q.handle).map_err(|e| e.to_string())?;
    let signal = hsakmt_core::queue::signal::Signal::new(buf.mapping.as_ref().unwrap(), 0)
        .map_err(|e| format!("{e:?}"))?;
    signal.init(&hsakmt_core::queue::signal::SignalInit::User { value: 1, mailbox: None });
    let barrier = Barrier {
        flags: HeaderFlags::SYSTEM,
        dep_signals: [0; 5],
        completion_signal: signal.handle(),
    };
    p.submit(&AqlPacket::BarrierAnd(barrier).to_words().unwrap(), || {});
    kfd.platform().run_until_idle();
    ensure!(signal.load_acquire() == 0, "the barrier did not complete");
    drop(p);
    kfd.destroy_queue(q.handle).map_err(|e| e.to_string())?;
    kfd.destroy_event(event).map_err(|e| e.to_string())?;
    kfd.free(buf).map_err(|e| e.to_string())?;
    Ok(())
}

#[test]
fn a_forked_child_must_open_again_and_the_parent_is_unaffected() {
    let kfd: Box<K> = device(sim(false));
    kfd.open().unwrap();
    let node = gpu_nodes(&kfd)[0];
    let cpu = cpu_node(&kfd);
    let host = pattern_buffer(&kfd, cpu, HOST, 0xA5);
    let vram = pattern_buffer(&kfd, node, VISIBLE_VRAM, 0x5A);
    let queue = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).unwrap();
    let event = kfd.create_event(&EventDescriptor::signal()).unwrap();
    let parent_books = kfd.platform().accounting();
    assert!(mapped(host.addr) && mapped(vram.addr));

    in_child(|| {
        // Every call: "not opened in this process".
        let forked = |what: &str, r: Result<(), Error>| match r {
            Err(Error::ForkedChild) => Ok(()),
            other => Err(format!("{what}: {other:?}")),
        };
        let q_forked = |what: &str, r: Result<(), QueueError>| match r {
            Err(QueueError::Device(Error::ForkedChild)) => Ok(()),
            other => Err(format!("{what}: {other:?}")),
        };
        ensure!(kfd.open_count() == 0, "open count {}", kfd.open_count());
        forked("version", kfd.version().map(drop))?;
        forked("topology", kfd.with_topology(|_| ()))?;
        forked("alloc", kfd.alloc_memory(cpu, 4096, HOST).map(drop))?;
        forked("map", kfd.map_memory_to_gpu(host.addr, MapNodes::All).map(drop))?;
        forked("free", kfd.free_memory(host.addr))?;
        forked("cpu view", kfd.cpu_mapping(vram.addr).map(drop))?;
        forked("available", kfd.available_memory(node).map(drop))?;
        forked("clock", kfd.clock_counters(node).map(drop))?;
        forked("create event", kfd.create_event(&EventDescriptor::signal()).map(drop))?;
        forked("set event", kfd.set_event(event))?;
        forked("wait", kfd.wait_event(event, Timeout::Immediate).map(drop))?;
        q_forked(
            "create queue",
            kfd.create_queue(&QueueDesc::new(node, QueueType::Sdma, 4096)).map(drop),
        )?;
        q_forked("destroy queue", kfd.destroy_queue(queue.handle))?;
        forked("close", kfd.close())?;
        let e = kfd.version().unwrap_err();
        ensure!(e.kind() == ErrorKind::NotOpened, "kind {:?}", e.kind());
        ensure!(e.to_string().contains("forked"), "message: {e}");
        // The parent's buffers are not in the child: reading a parent view would fault.
        ensure!(!mapped(host.addr), "the parent's host buffer is mapped in the child");
        ensure!(!mapped(vram.addr), "the parent's VRAM view is mapped in the child");
        // The kernel refuses the parent's descriptor in the child.
        let mut v = kfd_ioctl_get_version_args::default();
        let raw = kfd.platform().ioctl(&mut Ioctl::GetVersion(&mut v));
        ensure!(raw == Err(Errno::EBADF), "the kernel answered the child with {raw:?}");
        // Opening in the child discards the parent's state and works.
        ensure!(kfd.open() == Ok(Opened::First), "open in the child");
        ensure!(kfd.open_count() == 1, "open count after open");
        ensure!(kfd.queue_count() == 0 && kfd.event_count() == 0, "parent's objects kept");
        ensure!(kfd.memory_usage().objects == 0, "parent's memory objects kept");
        kfd.check_invariants().map_err(|v| v.to_string())?;
        use_the_device(&kfd)?;
        kfd.check_invariants().map_err(|v| v.to_string())?;
        kfd.close().map_err(|e| e.to_string())?;
        let books = kfd.platform().accounting();
        ensure!(books == SimAccounting::default(), "child's kernel state left: {books:?}");
        Ok(())
    })
    .unwrap();

    // The parent: unaffected by all of it.
    assert_eq!(kfd.open_count(), 1);
    assert_eq!(kfd.platform().accounting(), parent_books);
    let mut back = [0u8; 8192];
    host.mapping.as_ref().unwrap().read(0, &mut back).unwrap();
    assert_eq!(back, [0xA5; 8192]);
    vram.mapping.as_ref().unwrap().read(0, &mut back).unwrap();
    assert_eq!(back, [0x5A; 8192]);
    assert!(kfd.queue_info(queue.handle).is_ok());
    kfd.set_event(event).unwrap();
    assert_eq!(kfd.wait_event(event, Timeout::Immediate), Ok(WaitResult::Complete));
    use_the_device(&kfd).unwrap();
    kfd.destroy_queue(queue.handle).unwrap();
    kfd.destroy_event(event).unwrap();
    kfd.free(host).unwrap();
    kfd.free(vram).unwrap();
    kfd.check_invariants().unwrap();
    kfd.close().unwrap();
    assert_eq!(kfd.platform().accounting(), SimAccounting::default());
}

/// A process-id cache that survived the fork (libhsakmt's `clone` case): the library believes
/// it is still the parent until the kernel answers `EBADF`, which it reports as
/// [`Error::ForkedChild`] — from then on every call says so without asking the kernel.
#[test]
fn the_kernels_ebadf_reveals_a_fork_the_pid_cache_missed() {
    let kfd: Box<K> = device(sim(true));
    kfd.open().unwrap();
    let node = gpu_nodes(&kfd)[0];
    in_child(|| {
        ensure!(kfd.open_count() == 1, "the stale cache should still see the parent");
        let calls = kfd.platform().total_ioctl_calls();
        let r = kfd.available_memory(node);
        ensure!(r == Err(Error::ForkedChild), "available memory in the child: {r:?}");
        ensure!(kfd.platform().total_ioctl_calls() == calls + 1, "one ioctl (refused)");
        // Now known: no further kernel call.
        ensure!(kfd.version() == Err(Error::ForkedChild), "version after EBADF");
        let r = kfd.clock_counters(node).map(drop);
        ensure!(r == Err(Error::ForkedChild), "clock after EBADF: {r:?}");
        ensure!(kfd.platform().total_ioctl_calls() == calls + 1, "no further ioctl");
        ensure!(kfd.open() == Ok(Opened::First), "open in the child");
        use_the_device(&kfd)?;
        kfd.close().map_err(|e| e.to_string())
    })
    .unwrap();
    assert_eq!(kfd.available_memory(node).map(|a| a > 0), Ok(true), "the parent still works");
    kfd.close().unwrap();
}
