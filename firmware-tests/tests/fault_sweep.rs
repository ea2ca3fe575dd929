//! The fault sweep: every public operation of the device facade that issues ioctls, under every
//! errno the kernel can return for each ioctl it issues, injected on each call of that ioctl.
//!
//! For each operation the sweep first runs it fault-free twice on a fresh device: once to warm
//! up what the process keeps for good (the event page, a node's doorbell page, SVM ranges), and
//! once counting the ioctls it issues. Then for every ioctl `nr` the operation issued `c` times,
//! for the calls `{1, 2, c}` of it, and for every errno of `nr`'s row in [`kernel_errnos`], it
//! prepares the operation's fixture fault-free, arms `IoctlFault { nr, errno, Nth(k) }`, runs the
//! operation, and asserts:
//!
//! - no panic;
//! - `EINTR` / `EAGAIN`: the ioctl was issued again and the operation succeeded;
//! - any other errno: a typed error naming that errno (an [`Error::Ioctl`] for that ioctl, or a
//!   queue error wrapping it), whose [`ErrorKind`] is the errno's (`Errno::kind`; queue buffer
//!   failures report `OutOfResources` for an invalid-argument errno) — or, for the few ioctls
//!   the library issues best-effort (listed in [`ABSORBED`], with the reason), success;
//! - every table of the library is consistent ([`Kfd::check_invariants`]);
//! - after cleaning up, nothing leaked: the library's counters (with the recycle cache, which
//!   keeps only the bookkeeping of freed allocations, trimmed) and the simulated kernel's
//!   accounting ([`SimAccounting`]: buffers, mappings, VRAM and system bytes, pinned buffers,
//!   dma-bufs, SVM ranges, scratch, queues, events, waiters, XNACK) equal their baseline;
//! - the same operation succeeds once the fault is gone, and cleans up to the baseline again.
//!
//! Opening and closing the device are swept the same way on their own (a failed open leaves
//! the device closed and the kernel with nothing; a close under faults still ends everything).
//! The counts are printed at the end (`cargo test --test fault_sweep -- --nocapture`).
//!
//! # The errno table
//!
//! Derived from amdkfd (`drivers/gpu/drm/amd/amdkfd`: `kfd_chardev.c` — the dispatcher
//! `kfd_ioctl` and each `kfd_ioctl_*` handler — `kfd_process_queue_manager.c`,
//! `kfd_device_queue_manager.c`, `kfd_events.c`, `kfd_svm.c`, and `amdgpu_amdkfd_gpuvm.c`
//! for the buffer paths), Linux 6.x–7.x:
//!
//! - every ioctl, from the dispatcher: `EINVAL` (bad argument, unknown handle or gpu_id),
//!   `ENOTTY` (no such ioctl in this kernel), `EBADF` (the descriptor belongs to another process),
//!   `ENOMEM` (the argument buffer or the handler's allocations), `EFAULT` (copying arguments in
//!   or out); `EINTR` / `EAGAIN` (a signal during an interruptible wait — buffer reservation,
//!   fence sync, `WAIT_EVENTS` — or a user-pointer invalidation race; the library retries both on
//!   every ioctl, so the sweep injects them everywhere);
//! - `ESRCH`: binding the process to the device failed (`CREATE_QUEUE`, `SET_MEMORY_POLICY`,
//!   `SET_SCRATCH_BACKING_VA`, `SET_TRAP_HANDLER`); `ENODEV`: the device has no VM for the process
//!   (`kfd_bind_process_to_device` on `ALLOC_MEMORY_OF_GPU`, `MAP`, `IMPORT_DMABUF`; a peer
//!   without one on `UNMAP`) or no GWS / no HWS (`ALLOC_QUEUE_GWS`);
//! - `EBUSY`: `ACQUIRE_VM` with another render node, `FREE`/`UNMAP` of a buffer a queue uses,
//!   `SET_XNACK_MODE` while queues exist, `ALLOC_QUEUE_GWS` held by another queue, SVM migration;
//! - `EPERM`: freeing the event page, XNACK not supported, SVM disabled;
//! - `ENOSPC`: the per-process queue limit (`CREATE_QUEUE`), 4096 signal events
//!   (`CREATE_EVENT`), TTM placement (`ALLOC_MEMORY_OF_GPU`); `EADDRINUSE`: an allocation over
//!   an SVM range;
//! - `EIO`: the hardware scheduler hung (`CREATE`/`DESTROY`/`UPDATE_QUEUE`, `SET_CU_MASK`,
//!   `GET_QUEUE_WAVE_STATE`); `ETIME`: a preemption timed out (`UPDATE_QUEUE`). `ETIME` from
//!   `DESTROY_QUEUE` is not an injectable "nothing happened" error: amdkfd destroys the queue
//!   anyway — that path is the hung-queue test below, with the simulator's queue hang;
//! - `EMFILE`: no descriptor for the exported dma-buf (`EXPORT_DMABUF`);
//! - the newer ioctls (`RUNTIME_ENABLE`, `DBG_TRAP`, `SMI_EVENTS`, `GET_TILE_CONFIG`): see
//!   `kernel_ops`, whose operations join the sweep. `DBG_TRAP` is the one ioctl whose `EAGAIN`
//!   the library does not retry (it means "no event").

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::AtomicI64;

use firmware_tests::queue_support::cpu_node;
use firmware_tests::{SimKfd, device, first_gpu};
use hsakmt_core::device::queue_manager::{
    QueueDesc, QueueError, QueueHandle, QueueType, RingUpdate,
};
use hsakmt_core::device::{
    Allocation, Error, EventDescriptor, MapNodes, MemoryUsage, SignalCondition, SignalValue,
};
use hsakmt_core::error::{Errno, Error as _, ErrorKind};
use hsakmt_core::event::{
    CallbackId, EventHandle, EventType, Filter, Notification, Timeout, WaitMode, WaitResult,
    WaitSet,
};
use hsakmt_core::memory::MemFlags;
use hsakmt_core::memory::svm_attributes::SvmAttribute;
use hsakmt_core::platform::OpenError;
use hsakmt_core::queue::params::QueuePriority;
use hsakmt_core::uapi::*;
use hsakmt_hostmem::{HostMapping, map_anonymous, reserve};
use hsakmt_sim::{CpMode, IoctlFault, SimAccounting, SimMapping, SimPlatform, Trigger};

type K = SimKfd;

const COARSE_VRAM: MemFlags = MemFlags::NON_PAGED.union(MemFlags::COARSE_GRAIN);
const VISIBLE_VRAM: MemFlags = COARSE_VRAM.union(MemFlags::HOST_ACCESS);
const HOST: MemFlags = MemFlags::NON_PAGED.union(MemFlags::HOST_ACCESS);

/// The errnos the kernel can return for ioctl `nr` (see the module docs for the sources).
fn kernel_errnos(nr: u32) -> Vec<Errno> {
    use Errno as E;
    let mut v = vec![E::EINVAL, E::ENOTTY, E::EBADF, E::ENOMEM, E::EFAULT, E::EINTR, E::EAGAIN];
    let extra: &[Errno] = match nr {
        n if n == _IOC_NR(AMDKFD_IOC_ACQUIRE_VM) => &[E::EBUSY],
        n if n == _IOC_NR(AMDKFD_IOC_SET_MEMORY_POLICY)
            || n == _IOC_NR(AMDKFD_IOC_SET_SCRATCH_BACKING_VA)
            || n == _IOC_NR(AMDKFD_IOC_SET_TRAP_HANDLER) =>
        {
            &[E::ESRCH]
        }
        n if n == _IOC_NR(AMDKFD_IOC_CREATE_QUEUE) => &[E::ESRCH, E::ENOSPC, E::EIO],
        n if n == _IOC_NR(AMDKFD_IOC_DESTROY_QUEUE) => &[E::EIO],
        n if n == _IOC_NR(AMDKFD_IOC_UPDATE_QUEUE) => &[E::EIO, E::ETIME],
        n if n == _IOC_NR(AMDKFD_IOC_SET_CU_MASK)
            || n == _IOC_NR(AMDKFD_IOC_GET_QUEUE_WAVE_STATE) =>
        {
            &[E::EIO]
        }
        n if n == _IOC_NR(AMDKFD_IOC_ALLOC_QUEUE_GWS) => &[E::ENODEV, E::EBUSY],
        n if n == _IOC_NR(AMDKFD_IOC_CREATE_EVENT) => &[E::ENOSPC],
        n if n == _IOC_NR(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU) => &[E::ENODEV, E::ENOSPC, E::EADDRINUSE],
        n if n == _IOC_NR(AMDKFD_IOC_FREE_MEMORY_OF_GPU) => &[E::EBUSY, E::EPERM],
        n if n == _IOC_NR(AMDKFD_IOC_MAP_MEMORY_TO_GPU) => &[E::ENODEV],
        n if n == _IOC_NR(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU) => &[E::ENODEV, E::EBUSY],
        n if n == _IOC_NR(AMDKFD_IOC_IMPORT_DMABUF) => &[E::ENODEV],
        n if n == _IOC_NR(AMDKFD_IOC_EXPORT_DMABUF) => &[E::EMFILE],
        n if n == _IOC_NR(AMDKFD_IOC_SVM) => &[E::EBUSY, E::EPERM],
        n if n == _IOC_NR(AMDKFD_IOC_SET_XNACK_MODE) => &[E::EBUSY, E::EPERM],
        _ => kernel_ops::errnos(nr),
    };
    v.extend_from_slice(extra);
    v
}

/// The name the library gives ioctl `nr` in [`Error::Ioctl`].
fn ioctl_name(nr: u32) -> &'static str {
    ioctl_by_nr(nr).map_or("?", |i| i.name.trim_start_matches("AMDKFD_IOC_"))
}

/// Ioctls an operation issues best-effort, where a failure is not the operation's failure —
/// `(operation, ioctl, why)`.
const ABSORBED: &[(&str, u32, &str)] = &[
    (
        "destroy queue",
        _IOC_NR(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU),
        "the kernel destroyed the queue; a buffer of it that cannot be unmapped and freed now is \
         kept and freed at the next queue creation or destruction",
    ),
    (
        "destroy queue",
        _IOC_NR(AMDKFD_IOC_FREE_MEMORY_OF_GPU),
        "the kernel destroyed the queue; a buffer of it the kernel refuses to free now is kept \
         and freed at the next queue creation or destruction",
    ),
];

/// Errors the library deliberately translates: `(ioctl, errno, what it reports)`.
fn translated(nr: u32, errno: Errno, e: &Failure) -> bool {
    use hsakmt_core::memory::Error as M;
    match (e, errno) {
        // amdkfd's "not opened by a KFD": `/dev/kfd` is something else.
        (Failure::Device(Error::Open(OpenError::NotKfd)), Errno::ENOTTY) => {
            nr == _IOC_NR(AMDKFD_IOC_GET_VERSION)
        }
        // `SET_XNACK_MODE`'s EPERM: some GPU of the process cannot change XNACK mode.
        (Failure::Device(Error::Memory(M::NotSupported)), Errno::EPERM) => {
            nr == _IOC_NR(AMDKFD_IOC_SET_XNACK_MODE)
        }
        _ => false,
    }
}

/// Whether a fault on `nr` in `op` may leave the operation successful.
fn absorbed(op: &str, nr: u32) -> bool {
    ABSORBED.iter().any(|(o, n, _)| *o == op && *n == nr)
}

/// What an operation returned when it failed.
#[derive(Debug)]
enum Failure {
    Device(Error),
    Queue(QueueError),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Device(e)
    }
}

impl From<QueueError> for Failure {
    fn from(e: QueueError) -> Self {
        Failure::Queue(e)
    }
}

impl Failure {
    fn kind(&self) -> ErrorKind {
        match self {
            Failure::Device(e) => e.kind(),
            Failure::Queue(e) => e.kind(),
        }
    }

    /// The ioctl failure inside, as `(name, errno)`.
    fn ioctl(&self) -> Option<(&'static str, Errno)> {
        let device = match self {
            Failure::Device(e) => e,
            Failure::Queue(QueueError::Device(e) | QueueError::Memory { error: e, .. }) => e,
            Failure::Queue(_) => return None,
        };
        match device {
            Error::Ioctl { name, errno } => Some((name, *errno)),
            _ => None,
        }
    }

    /// The kind a failure with `errno` should have.
    fn expected_kind(&self, errno: Errno) -> ErrorKind {
        match (self, errno.kind()) {
            (Failure::Queue(QueueError::Memory { .. }), ErrorKind::InvalidArgument) => {
                ErrorKind::OutOfResources
            }
            (_, k) => k,
        }
    }
}

type Outcome = Result<(), Failure>;

/// What an operation works on, and what it made (cleaned up after each case).
#[derive(Default)]
struct Fx {
    node: u32,
    cpu: u32,
    allocs: Vec<Allocation<SimMapping>>,
    /// Objects to free by address (imports, allocations whose free failed).
    addrs: Vec<u64>,
    registered: Vec<u64>,
    user: Option<(u64, HostMapping)>,
    queues: Vec<QueueHandle>,
    events: Vec<EventHandle>,
    callbacks: Vec<CallbackId>,
    fds: Vec<u32>,
    xnack: Option<bool>,
    xnack_was: Option<bool>,
    value: Option<Box<AfterWait>>,
    kernel: kernel_ops::KernelFx,
}

impl Fx {
    fn new(kfd: &K) -> Self {
        Fx { node: first_gpu(kfd).0, cpu: cpu_node(kfd), ..Fx::default() }
    }

    fn user(&mut self) -> u64 {
        if self.user.is_none() {
            let addr = reserve(None, 2 * 4096, 4096).unwrap();
            self.user = Some((addr, map_anonymous(addr, 2 * 4096).unwrap()));
        }
        self.user.as_ref().map(|u| u.0).unwrap_or_default()
    }

    fn alloc(&mut self, kfd: &K, node: u32, flags: MemFlags) -> u64 {
        let a = kfd.alloc_memory(node, 8192, flags).unwrap();
        let addr = a.addr;
        self.allocs.push(a);
        addr
    }

    fn last_alloc(&self) -> u64 {
        self.allocs.last().map(|a| a.addr).unwrap()
    }

    fn queue(&mut self, kfd: &K, t: QueueType) -> QueueHandle {
        let h = kfd.create_queue(&QueueDesc::new(self.node, t, 4096)).unwrap().handle;
        self.queues.push(h);
        h
    }

    fn event(&mut self, kfd: &K, desc: EventDescriptor) -> EventHandle {
        let h = kfd.create_event(&desc).unwrap();
        self.events.push(h);
        h
    }

    /// Releases everything, fault-free; anything but "already gone" is a failure.
    fn cleanup(mut self, kfd: &K) -> Result<(), String> {
        let gone =
            |f: &Failure| matches!(f.kind(), ErrorKind::InvalidHandle | ErrorKind::NotRegistered);
        let check = |what: &str, r: Outcome| match r {
            Err(e) if !gone(&e) => Err(format!("cleanup: {what}: {e:?}")),
            _ => Ok(()),
        };
        for id in self.callbacks.drain(..) {
            check("callback", kfd.unregister_callback(id).map(|_| ()).map_err(Into::into))?;
        }
        kernel_ops::cleanup(kfd, &mut self.kernel)?;
        for h in self.queues.drain(..).rev() {
            check("queue", kfd.destroy_queue(h).map_err(Into::into))?;
        }
        for h in self.events.drain(..).rev() {
            check("event", kfd.destroy_event(h).map_err(Into::into))?;
        }
        for fd in self.fds.drain(..) {
            kfd.close_dmabuf(fd);
        }
        for a in self.addrs.drain(..).rev() {
            check("free by address", kfd.free_memory(a).map_err(Into::into))?;
        }
        for a in self.allocs.drain(..).rev() {
            check("free", kfd.free(a).map_err(Into::into))?;
        }
        for a in self.registered.drain(..).rev() {
            check("deregister", kfd.deregister_memory(a).map_err(Into::into))?;
        }
        if let Some(x) = self.xnack.take() {
            check("xnack", kfd.set_xnack_mode(x).map_err(Into::into))?;
        }
        Ok(())
    }
}

/// A signal value that holds (reads 1) once a `WAIT_EVENTS` was issued: makes
/// [`Kfd::wait_signal`] issue exactly one kernel wait, deterministically.
struct AfterWait {
    sim: SimPlatform,
    before: u64,
}

impl SignalValue for AfterWait {
    fn load_acquire(&self) -> i64 {
        i64::from(self.sim.ioctl_calls(_IOC_NR(AMDKFD_IOC_WAIT_EVENTS)) > self.before)
    }
    fn store_release(&self, _: i64) {}
}

fn noop(_: &Notification) {}

/// The user memory the SVM operations name: always the same range, since the simulated kernel
/// keeps a range's attributes until the process ends (the real one drops them when the memory
/// is unmapped, which the simulator does not see).
fn svm_range() -> u64 {
    static RANGE: std::sync::OnceLock<(u64, HostMapping)> = std::sync::OnceLock::new();
    RANGE
        .get_or_init(|| {
            let addr = reserve(None, 2 * 4096, 4096).unwrap();
            (addr, map_anonymous(addr, 2 * 4096).unwrap())
        })
        .0
}

/// One operation: how to prepare its fixture, and the operation itself.
struct Op {
    name: &'static str,
    /// Needs a device where nothing ran before (a first-time path: the event page, a node's
    /// doorbell page); each case opens its own device.
    fresh: bool,
    prepare: fn(&K, &mut Fx),
    run: fn(&K, &mut Fx) -> Outcome,
}

fn nothing(_: &K, _: &mut Fx) {}

macro_rules! op {
    ($name:expr, $prepare:expr, $run:expr) => {
        Op { name: $name, fresh: false, prepare: $prepare, run: $run }
    };
    (fresh $name:expr, $prepare:expr, $run:expr) => {
        Op { name: $name, fresh: true, prepare: $prepare, run: $run }
    };
}

#[path = "fault_sweep/kernel_ops.rs"]
mod kernel_ops;

fn alloc_op(kfd: &K, fx: &mut Fx, node: u32, size: u64, flags: MemFlags) -> Outcome {
    let a = kfd.alloc_memory(node, size, flags)?;
    fx.allocs.push(a);
    Ok(())
}

fn free_last(kfd: &K, fx: &mut Fx) -> Outcome {
    let a = fx.allocs.pop().unwrap();
    let addr = a.addr;
    kfd.free(a).map_err(|e| {
        // The object stays (consistent with the kernel); free it by address later.
        fx.addrs.push(addr);
        e.into()
    })
}

fn create_queue_op(kfd: &K, fx: &mut Fx, t: QueueType) -> Outcome {
    let info = kfd.create_queue(&QueueDesc::new(fx.node, t, 4096))?;
    fx.queues.push(info.handle);
    Ok(())
}

fn create_event_op(kfd: &K, fx: &mut Fx, desc: EventDescriptor) -> Outcome {
    let h = kfd.create_event(&desc)?;
    fx.events.push(h);
    Ok(())
}

fn signaled_event(kfd: &K, fx: &mut Fx) {
    let h = fx.event(kfd, EventDescriptor::signal());
    kfd.set_event(h).unwrap();
}

fn operations() -> Vec<Op> {
    vec![
        // Memory.
        op!("alloc vram", nothing, |k, fx| alloc_op(k, fx, fx.node, 8192, COARSE_VRAM)),
        op!("alloc visible vram", nothing, |k, fx| alloc_op(k, fx, fx.node, 8192, VISIBLE_VRAM)),
        op!("alloc host", nothing, |k, fx| alloc_op(k, fx, fx.cpu, 8192, HOST)),
        op!("alloc paged host", nothing, |k, fx| {
            alloc_op(k, fx, fx.cpu, 8192, MemFlags::HOST_ACCESS)
        }),
        op!("alloc scratch", nothing, |k, fx| alloc_op(k, fx, fx.node, 65536, MemFlags::SCRATCH)),
        op!("alloc mmio remap", nothing, |k, fx| {
            let a = k.alloc_mmio_remap(fx.node)?;
            fx.allocs.push(a);
            Ok(())
        }),
        op!(
            "free vram",
            |k, fx| {
                let _ = fx.alloc(k, fx.node, COARSE_VRAM);
            },
            free_last
        ),
        op!(
            "free host",
            |k, fx| {
                let _ = fx.alloc(k, fx.cpu, HOST);
            },
            free_last
        ),
        op!(
            "free paged host",
            |k, fx| {
                let _ = fx.alloc(k, fx.cpu, MemFlags::HOST_ACCESS);
            },
            free_last
        ),
        op!(
            "free mapped vram",
            |k, fx| {
                let a = fx.alloc(k, fx.node, VISIBLE_VRAM);
                k.map_memory_to_gpu(a, MapNodes::All).unwrap();
            },
            free_last
        ),
        op!(
            "map default",
            |k, fx| {
                let _ = fx.alloc(k, fx.node, VISIBLE_VRAM);
            },
            |k, fx| k
                .map_memory_to_gpu(fx.last_alloc(), MapNodes::Default)
                .map(drop)
                .map_err(Into::into)
        ),
        op!(
            "map all",
            |k, fx| {
                let _ = fx.alloc(k, fx.cpu, HOST);
            },
            |k, fx| k
                .map_memory_to_gpu(fx.last_alloc(), MapNodes::All)
                .map(drop)
                .map_err(Into::into)
        ),
        op!(
            "map only",
            |k, fx| {
                let _ = fx.alloc(k, fx.node, COARSE_VRAM);
            },
            |k, fx| {
                let nodes = [fx.node];
                k.map_memory_to_gpu(fx.last_alloc(), MapNodes::Only(&nodes))
                    .map(drop)
                    .map_err(Into::into)
            }
        ),
        op!(
            "unmap",
            |k, fx| {
                let a = fx.alloc(k, fx.cpu, HOST);
                k.map_memory_to_gpu(a, MapNodes::All).unwrap();
            },
            |k, fx| k.unmap_memory_from_gpu(fx.last_alloc()).map_err(Into::into)
        ),
        op!("register", nothing, |k, fx| {
            let u = fx.user();
            k.register_memory(u, 8192)?;
            fx.registered.push(u);
            Ok(())
        }),
        op!("register to nodes", nothing, |k, fx| {
            let u = fx.user();
            let nodes = [fx.node];
            k.register_memory_to_nodes(u, 8192, &nodes)?;
            fx.registered.push(u);
            Ok(())
        }),
        op!(
            "deregister",
            |k, fx| {
                let u = fx.user();
                k.register_memory(u, 8192).unwrap();
                fx.registered.push(u);
            },
            |k, fx| {
                let u = fx.registered.pop().unwrap();
                k.deregister_memory(u).map_err(|e| {
                    fx.registered.push(u);
                    e.into()
                })
            }
        ),
        op!(
            "register and map",
            |k, fx| {
                let u = fx.user();
                k.register_memory_to_nodes(u, 8192, &[fx.node]).unwrap();
                fx.registered.push(u);
            },
            |k, fx| k.map_memory_to_gpu(fx.user(), MapNodes::Default).map(drop).map_err(Into::into)
        ),
        op!(
            "export dma-buf",
            |k, fx| {
                let _ = fx.alloc(k, fx.node, VISIBLE_VRAM);
            },
            |k, fx| {
                let e = k.export_dmabuf(fx.last_alloc(), 4096)?;
                fx.fds.push(e.fd);
                Ok(())
            }
        ),
        op!(
            "import dma-buf",
            |k, fx| {
                let a = fx.alloc(k, fx.node, VISIBLE_VRAM);
                fx.fds.push(k.export_dmabuf(a, 8192).unwrap().fd);
            },
            |k, fx| {
                let nodes = [fx.node];
                let i = k.import_dmabuf(*fx.fds.last().unwrap(), Some(&nodes))?;
                fx.addrs.push(i.addr);
                Ok(())
            }
        ),
        op!("available memory", nothing, |k, fx| {
            k.available_memory(fx.node).map(drop).map_err(Into::into)
        }),
        op!("svm set attributes", nothing, |k, fx| {
            let u = svm_range();
            k.svm_set_attributes(u, 8192, &[SvmAttribute::Access(fx.node)]).map_err(Into::into)
        }),
        op!("svm get attributes", nothing, |k, fx| {
            let u = svm_range();
            let mut attrs = [SvmAttribute::Access(fx.node)];
            k.svm_get_attributes(u, 8192, &mut attrs).map_err(Into::into)
        }),
        op!("xnack query", nothing, |k, _| k.xnack_mode().map(drop).map_err(Into::into)),
        op!("xnack set", |k, fx| fx.xnack_was = Some(k.xnack_mode().unwrap()), |k, fx| {
            let was = fx.xnack_was.unwrap();
            k.set_xnack_mode(!was)?;
            fx.xnack = Some(was);
            Ok(())
        }),
        op!("clock counters", nothing, |k, fx| {
            k.clock_counters(fx.node).map(drop).map_err(Into::into)
        }),
        // Queues.
        op!(fresh "create first queue on a node", nothing, |k, fx| {
            create_queue_op(k, fx, QueueType::ComputeAql)
        }),
        op!("create pm4 queue", nothing, |k, fx| create_queue_op(k, fx, QueueType::Compute)),
        op!("create aql queue", nothing, |k, fx| create_queue_op(k, fx, QueueType::ComputeAql)),
        op!("create sdma queue", nothing, |k, fx| create_queue_op(k, fx, QueueType::Sdma)),
        op!("create sdma queue on engine", nothing, |k, fx| {
            create_queue_op(k, fx, QueueType::SdmaEngine(1))
        }),
        op!(
            "destroy queue",
            |k, fx| {
                let _ = fx.queue(k, QueueType::ComputeAql);
            },
            |k, fx| {
                let h = fx.queues.pop().unwrap();
                k.destroy_queue(h).map_err(|e| {
                    fx.queues.push(h);
                    e.into()
                })
            }
        ),
        op!(
            "disable queue",
            |k, fx| {
                let _ = fx.queue(k, QueueType::ComputeAql);
            },
            |k, fx| {
                let h = *fx.queues.last().unwrap();
                k.update_queue(h, 100, QueuePriority::Normal, RingUpdate::Disable)
                    .map_err(Into::into)
            }
        ),
        op!(
            "re-enable queue",
            |k, fx| {
                let h = fx.queue(k, QueueType::Compute);
                k.update_queue(h, 0, QueuePriority::Low, RingUpdate::Disable).unwrap();
            },
            |k, fx| {
                let h = *fx.queues.last().unwrap();
                k.update_queue(h, 100, QueuePriority::High, RingUpdate::Restore).map_err(Into::into)
            }
        ),
        op!(
            "queue cu mask",
            |k, fx| {
                let _ = fx.queue(k, QueueType::ComputeAql);
            },
            |k, fx| k.set_queue_cu_mask(*fx.queues.last().unwrap(), 32, &[0xF]).map_err(Into::into)
        ),
        op!(
            "queue gws",
            |k, fx| {
                let _ = fx.queue(k, QueueType::ComputeAql);
            },
            |k, fx| k.alloc_queue_gws(*fx.queues.last().unwrap(), 1).map(drop).map_err(Into::into)
        ),
        op!(
            "queue wave state",
            |k, fx| {
                let h = fx.queue(k, QueueType::ComputeAql);
                k.update_queue(h, 0, QueuePriority::Normal, RingUpdate::Disable).unwrap();
            },
            |k, fx| k.queue_wave_state(*fx.queues.last().unwrap()).map(drop).map_err(Into::into)
        ),
        op!("trap handler", nothing, |k, fx| {
            k.set_trap_handler(fx.node, 0x1000, 0x2000).map_err(Into::into)
        }),
        // Events.
        op!(fresh "create first signal event", nothing, |k, fx| {
            create_event_op(k, fx, EventDescriptor::signal())
        }),
        op!("create signal event", nothing, |k, fx| {
            create_event_op(k, fx, EventDescriptor::signal())
        }),
        op!("create signaled event", nothing, |k, fx| {
            create_event_op(k, fx, EventDescriptor::signal().manual().signaled())
        }),
        op!("create memory event", nothing, |k, fx| {
            create_event_op(k, fx, EventDescriptor::new(EventType::Memory))
        }),
        op!("create hw exception event", nothing, |k, fx| {
            create_event_op(k, fx, EventDescriptor::new(EventType::HwException))
        }),
        op!(
            "destroy event",
            |k, fx| {
                let _ = fx.event(k, EventDescriptor::signal());
            },
            |k, fx| {
                let h = fx.events.pop().unwrap();
                k.destroy_event(h).map_err(|e| {
                    fx.events.push(h);
                    e.into()
                })
            }
        ),
        op!(
            "set event",
            |k, fx| {
                let _ = fx.event(k, EventDescriptor::signal());
            },
            |k, fx| k.set_event(*fx.events.last().unwrap()).map_err(Into::into)
        ),
        op!("reset event", signaled_event, |k, fx| {
            k.reset_event(*fx.events.last().unwrap()).map_err(Into::into)
        }),
        op!("wait event", signaled_event, |k, fx| {
            let r = k.wait_event(*fx.events.last().unwrap(), Timeout::Immediate)?;
            assert_eq!(r, WaitResult::Complete);
            Ok(())
        }),
        op!("wait event with age", signaled_event, |k, fx| {
            let h = *fx.events.last().unwrap();
            let mut age = k.query_event(h).unwrap().age;
            let r = k.wait_event_with_age(h, &mut age, Timeout::Millis(1000))?;
            assert_eq!(r, WaitResult::Complete);
            Ok(())
        }),
        op!(
            "wait all",
            |k, fx| {
                signaled_event(k, fx);
                signaled_event(k, fx);
            },
            |k, fx| {
                let mut set: WaitSet<2> = WaitSet::new();
                for h in &fx.events {
                    set.push(*h).unwrap();
                }
                let r = k.wait_events(&mut set, WaitMode::All, Timeout::Immediate)?;
                assert_eq!(r, WaitResult::Complete);
                Ok(())
            }
        ),
        op!(
            "wait signal",
            |k, fx| {
                signaled_event(k, fx);
                let before = k.platform().ioctl_calls(_IOC_NR(AMDKFD_IOC_WAIT_EVENTS));
                fx.value = Some(Box::new(AfterWait { sim: k.platform().clone(), before }));
            },
            |k, fx| {
                let h = *fx.events.last().unwrap();
                let v = fx.value.as_deref().unwrap();
                let w = k.wait_signal(h, v, SignalCondition::Eq(1), Timeout::Millis(1000), 0)?;
                assert_eq!((w.result, w.kernel_waits), (WaitResult::Complete, 1));
                Ok(())
            }
        ),
        op!(
            "store signal with a sleeper",
            |k, fx| {
                let _ = fx.event(k, EventDescriptor::signal());
            },
            |k, fx| {
                // A waiter in another thread sleeps in the kernel until the store wakes it.
                let h = *fx.events.last().unwrap();
                let value = AtomicI64::new(0);
                std::thread::scope(|s| {
                    let waiter = s.spawn(|| {
                        k.wait_signal(h, &value, SignalCondition::Eq(1), Timeout::Millis(10_000), 0)
                    });
                    while !waiter.is_finished()
                        && (k.signal_sleepers(h) == 0 || k.platform().event_waiters() == 0)
                    {
                        std::thread::yield_now();
                    }
                    let stored =
                        if waiter.is_finished() { Ok(false) } else { k.store_signal(h, &value, 1) };
                    if stored.is_err() {
                        // The kernel refused the set: wake the waiter fault-free.
                        k.set_event(h).unwrap();
                    }
                    let w = waiter.join().unwrap()?;
                    assert_eq!(w.value, 1);
                    stored.map(drop).map_err(Into::into)
                })
            }
        ),
        op!(
            "poll callbacks",
            |k, fx| {
                signaled_event(k, fx);
                let h = *fx.events.last().unwrap();
                fx.callbacks.push(k.register_callback(Filter::Event(h), &noop).unwrap());
            },
            |k, _| k.poll(Timeout::Immediate).map(drop).map_err(Into::into)
        ),
    ]
    .into_iter()
    .chain(kernel_ops::operations())
    .collect()
}

/// Everything the library and the simulated kernel account, compared before and after.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Books {
    memory: MemoryUsage,
    queues: usize,
    events: usize,
    kernel: SimAccounting,
    session: kernel_ops::Session,
}

fn books(kfd: &K) -> Books {
    // The recycle cache keeps only bookkeeping of freed allocations (no kernel buffer, no
    // view), by history: give it back so the counters compare.
    let _ = kfd.trim_memory();
    Books {
        memory: kfd.memory_usage(),
        queues: kfd.queue_count(),
        events: kfd.event_count(),
        kernel: kfd.platform().accounting(),
        session: kernel_ops::session(kfd),
    }
}

fn sim() -> SimPlatform {
    SimPlatform::builder().cp_mode(CpMode::Step).build()
}

fn open() -> Box<K> {
    let kfd = device(sim());
    kfd.open().expect("open");
    kfd
}

fn counts(sim: &SimPlatform) -> [u64; 64] {
    std::array::from_fn(|nr| sim.ioctl_calls(nr as u32))
}

/// The calls of an ioctl issued `c` times that the sweep faults: the first, the second, the
/// last.
fn positions(c: u64) -> Vec<u64> {
    let mut p = vec![1, 2.min(c), c];
    p.dedup();
    p
}

#[derive(Debug, Default)]
struct Tally {
    operations: usize,
    sites: usize,
    cases: usize,
    errnos: std::collections::BTreeSet<i32>,
    rejected: usize,
    retried: usize,
    absorbed: usize,
    absorbed_by: BTreeMap<&'static str, usize>,
    failures: Vec<String>,
}

/// Runs one operation fault-free: prepare, run, clean up. Returns how many times the operation
/// itself (not its preparation or cleanup) issued each ioctl.
fn clean_run(kfd: &K, op: &Op) -> Result<BTreeMap<u32, u64>, String> {
    let mut fx = Fx::new(kfd);
    (op.prepare)(kfd, &mut fx);
    let before = counts(kfd.platform());
    let r = (op.run)(kfd, &mut fx);
    let after = counts(kfd.platform());
    fx.cleanup(kfd)?;
    r.map_err(|e| format!("fault-free run failed: {e:?}"))?;
    Ok((0..64u32)
        .filter_map(|nr| {
            let d = after[nr as usize] - before[nr as usize];
            (d > 0).then_some((nr, d))
        })
        .collect())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ResultKind {
    Absorbed,
    Checked,
}

fn failed_or_retried(k: &ResultKind) -> bool {
    *k == ResultKind::Checked
}

/// One case: the fault `(nr, nth, errno)` on `op`. `Ok(true)` when the operation failed as it
/// should, `Ok(false)` when it succeeded (retried or absorbed).
fn case(
    kfd: &K,
    op: &Op,
    nr: u32,
    nth: u64,
    errno: Errno,
    after: &[Books],
) -> Result<bool, String> {
    let baseline = books(kfd);
    let mut fx = Fx::new(kfd);
    (op.prepare)(kfd, &mut fx);
    let sim = kfd.platform();
    let (calls, injected) = (sim.ioctl_calls(nr), sim.injected_faults());
    sim.inject(IoctlFault { nr: Some(nr), errno, trigger: Trigger::Nth(nth) });
    let result = (op.run)(kfd, &mut fx);
    sim.clear_faults();
    if sim.injected_faults() != injected + 1 {
        return Err(format!("the fault did not fire ({} calls)", sim.ioctl_calls(nr) - calls));
    }
    let retryable = kernel_ops::retried(nr, errno);
    let result_kind = match &result {
        Ok(()) if !retryable => ResultKind::Absorbed,
        _ => ResultKind::Checked,
    };
    let failed = match result {
        Ok(()) if retryable => {
            if sim.ioctl_calls(nr) - calls < nth + 1 {
                return Err("succeeded without issuing the ioctl again".into());
            }
            false
        }
        Ok(()) if absorbed(op.name, nr) => false,
        Ok(()) => return Err("succeeded although the kernel failed".into()),
        Err(e) if retryable => return Err(format!("not retried: {e:?}")),
        Err(e) => {
            let name = ioctl_name(nr);
            let translated = translated(nr, errno, &e);
            if e.ioctl() != Some((name, errno)) && !translated {
                return Err(format!("error does not name {name}/{errno:?}: {e:?}"));
            }
            if e.kind() != e.expected_kind(errno) && !translated {
                return Err(format!(
                    "kind {:?}, expected {:?}: {e:?}",
                    e.kind(),
                    e.expected_kind(errno)
                ));
            }
            true
        }
    };
    kfd.check_invariants().map_err(|v| format!("tables inconsistent after the fault: {v}"))?;
    fx.cleanup(kfd)?;
    kfd.check_invariants().map_err(|v| format!("tables inconsistent after cleanup: {v}"))?;
    let now = books(kfd);
    // An absorbed fault may leave a release for the next operation of its kind (checked below,
    // after the fault-free run).
    if failed_or_retried(&result_kind) && now != baseline && !after.contains(&now) {
        return Err(format!("leaked:\n  before {baseline:?}\n  after  {now:?}"));
    }
    // The same operation once the fault is gone.
    clean_run(kfd, op).map_err(|e| format!("after the fault: {e}"))?;
    let now = books(kfd);
    if now != baseline && !after.contains(&now) {
        return Err(format!(
            "leaked by the fault-free run:\n  before {baseline:?}\n  after  {now:?}"
        ));
    }
    Ok(failed)
}

fn sweep_op(op: &Op, tally: &mut Tally) {
    let (start, cases, failures) = (std::time::Instant::now(), tally.cases, tally.failures.len());
    sweep_op_cases(op, tally);
    eprintln!(
        "sweep: {:<32} {:>4} cases {:>3} failures {:>8.2?}",
        op.name,
        tally.cases - cases,
        tally.failures.len() - failures,
        start.elapsed()
    );
}

fn sweep_op_cases(op: &Op, tally: &mut Tally) {
    // Discover the ioctls: a warm-up run, then a counted one.
    let kfd = open();
    let mut warm = Vec::new();
    if !op.fresh {
        if let Err(e) = clean_run(&kfd, op) {
            tally.failures.push(format!("{}: warm-up: {e}", op.name));
            return;
        }
    } else {
        // A first-time path leaves what the process keeps for good: that state is allowed after.
        let fresh = open();
        if let Err(e) = clean_run(&fresh, op) {
            tally.failures.push(format!("{}: warm-up: {e}", op.name));
            return;
        }
        warm.push(books(&fresh));
    }
    let base = books(&kfd);
    let issued = match clean_run(&kfd, op) {
        Ok(issued) => issued,
        Err(e) => {
            tally.failures.push(format!("{}: counted run: {e}", op.name));
            return;
        }
    };
    if books(&kfd) != base && !warm.contains(&books(&kfd)) {
        tally.failures.push(format!(
            "{}: a fault-free run leaks: {:?} -> {:?}",
            op.name,
            base,
            books(&kfd)
        ));
        return;
    }
    tally.operations += 1;
    let mut kfd = if op.fresh { open() } else { kfd };
    for (&nr, &c) in &issued {
        for nth in positions(c) {
            tally.sites += 1;
            for errno in kernel_errnos(nr) {
                tally.cases += 1;
                tally.errnos.insert(errno.0);
                if op.fresh {
                    kfd = open();
                }
                let label = format!("{}: {}#{nth} {errno:?}", op.name, ioctl_name(nr));
                let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    case(&kfd, op, nr, nth, errno, &warm)
                }));
                match r {
                    Ok(Ok(true)) => tally.rejected += 1,
                    Ok(Ok(false)) if kernel_ops::retried(nr, errno) => tally.retried += 1,
                    Ok(Ok(false)) => {
                        tally.absorbed += 1;
                        *tally.absorbed_by.entry(op.name).or_default() += 1;
                    }
                    Ok(Err(e)) => {
                        tally.failures.push(format!("{label}: {e}"));
                        kfd = open();
                    }
                    Err(_) => {
                        tally.failures.push(format!("{label}: panicked"));
                        kfd = open();
                    }
                }
            }
        }
    }
}

#[test]
fn every_operation_under_every_kernel_errno() {
    let mut tally = Tally::default();
    for op in operations() {
        sweep_op(&op, &mut tally);
    }
    sweep_lifecycle(&mut tally);
    println!(
        "fault sweep: {} operations, {} ioctl call sites, {} distinct errnos -> {} cases: \
         {} typed errors, {} retried (EINTR/EAGAIN) and succeeded, {} absorbed \
         (best-effort ioctls); {} failures",
        tally.operations,
        tally.sites,
        tally.errnos.len(),
        tally.cases,
        tally.rejected,
        tally.retried,
        tally.absorbed,
        tally.failures.len()
    );
    println!("absorbed by operation: {:?}", tally.absorbed_by);
    for f in &tally.failures {
        println!("FAIL {f}");
    }
    assert!(tally.failures.is_empty(), "{} failures (see above)", tally.failures.len());
}

/// Open and close under every fault of their ioctls.
fn sweep_lifecycle(tally: &mut Tally) {
    let closed = |kfd: &K| -> Result<(), String> {
        let a = kfd.platform().accounting();
        let empty = SimAccounting { dmabufs: a.dmabufs, ..SimAccounting::default() };
        if kfd.open_count() != 0 || a != empty {
            return Err(format!("not closed cleanly: open count {}, {a:?}", kfd.open_count()));
        }
        Ok(())
    };
    // Open: what it issues on a closed device.
    let kfd = device(sim());
    let before = counts(kfd.platform());
    kfd.open().unwrap();
    let after = counts(kfd.platform());
    kfd.close().unwrap();
    tally.operations += 1;
    for nr in 0..64u32 {
        let c = after[nr as usize] - before[nr as usize];
        if c == 0 {
            continue;
        }
        for nth in positions(c) {
            tally.sites += 1;
            for errno in kernel_errnos(nr) {
                tally.cases += 1;
                tally.errnos.insert(errno.0);
                let label = format!("open: {}#{nth} {errno:?}", ioctl_name(nr));
                let r = std::panic::catch_unwind(AssertUnwindSafe(|| -> Result<bool, String> {
                    let sim = kfd.platform();
                    let injected = sim.injected_faults();
                    sim.inject(IoctlFault { nr: Some(nr), errno, trigger: Trigger::Nth(nth) });
                    let r = kfd.open();
                    sim.clear_faults();
                    if sim.injected_faults() != injected + 1 {
                        return Err("the fault did not fire".into());
                    }
                    let failed = match r {
                        Ok(_) if errno.is_retryable() => false,
                        Ok(_) => return Err("opened although the kernel failed".into()),
                        Err(e) => {
                            let f = Failure::Device(e);
                            let named = f.ioctl() == Some((ioctl_name(nr), errno))
                                || matches!(f, Failure::Device(Error::Open(OpenError::NotKfd)));
                            if errno.is_retryable() || !named {
                                return Err(format!("{f:?}"));
                            }
                            if f.kind() != f.expected_kind(errno)
                                && !matches!(f, Failure::Device(Error::Open(_)))
                            {
                                return Err(format!("kind {:?}: {f:?}", f.kind()));
                            }
                            kfd.check_invariants().map_err(|v| v.to_string())?;
                            closed(&kfd)?;
                            true
                        }
                    };
                    if failed {
                        kfd.open().map_err(|e| format!("open after the fault: {e}"))?;
                    }
                    kfd.check_invariants().map_err(|v| v.to_string())?;
                    kfd.close().map_err(|e| format!("close: {e}"))?;
                    closed(&kfd)?;
                    Ok(failed)
                }));
                match r {
                    Ok(Ok(true)) => tally.rejected += 1,
                    Ok(Ok(false)) => tally.retried += 1,
                    Ok(Err(e)) => tally.failures.push(format!("{label}: {e}")),
                    Err(_) => tally.failures.push(format!("{label}: panicked")),
                }
            }
        }
    }
    // Close: with a queue, an event, a mapped buffer and a registration alive, every ioctl the
    // last close issues fails in turn; the close still ends everything (closing `/dev/kfd`
    // releases what the kernel holds).
    let populate = |kfd: &K| {
        let mut fx = Fx::new(kfd);
        fx.queue(kfd, QueueType::ComputeAql);
        fx.event(kfd, EventDescriptor::signal());
        let a = fx.alloc(kfd, fx.cpu, HOST);
        kfd.map_memory_to_gpu(a, MapNodes::All).unwrap();
        // The library forgets these at close; the test's handles simply go stale.
        drop(std::mem::take(&mut fx.allocs));
        fx
    };
    let kfd = open();
    let fx = populate(&kfd);
    let before = counts(kfd.platform());
    kfd.close().unwrap();
    let after = counts(kfd.platform());
    drop(fx);
    tally.operations += 1;
    for nr in 0..64u32 {
        let c = after[nr as usize] - before[nr as usize];
        if c == 0 {
            continue;
        }
        for nth in positions(c) {
            tally.sites += 1;
            for errno in kernel_errnos(nr) {
                tally.cases += 1;
                tally.errnos.insert(errno.0);
                let label = format!("close: {}#{nth} {errno:?}", ioctl_name(nr));
                let r = std::panic::catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
                    kfd.open().map_err(|e| e.to_string())?;
                    let fx = populate(&kfd);
                    let sim = kfd.platform();
                    sim.inject(IoctlFault { nr: Some(nr), errno, trigger: Trigger::Nth(nth) });
                    let r = kfd.close();
                    sim.clear_faults();
                    drop(fx);
                    r.map_err(|e| format!("close failed: {e}"))?;
                    kfd.check_invariants().map_err(|v| v.to_string())?;
                    closed(&kfd)
                }));
                match r {
                    Ok(Ok(())) if errno.is_retryable() => tally.retried += 1,
                    Ok(Ok(())) => {
                        tally.absorbed += 1;
                        *tally.absorbed_by.entry("close").or_default() += 1;
                    }
                    Ok(Err(e)) => tally.failures.push(format!("{label}: {e}")),
                    Err(_) => tally.failures.push(format!("{label}: panicked")),
                }
            }
        }
    }
}

/// The simulator's queue hang: the kernel cannot preempt the queue, so `UPDATE_QUEUE` fails with
/// `ETIME` and changes nothing, and `DESTROY_QUEUE` destroys it anyway but reports `ETIME`
/// (amdkfd's `pqm_destroy_queue`): the library forgets the queue and frees its buffers, and the
/// GPU reset reaches the process's HW-exception events. Nothing is lost.
#[test]
fn a_hung_queue_is_destroyed_with_etime_and_nothing_leaks() {
    let kfd = open();
    let sim = kfd.platform();
    let mut fx = Fx::new(&kfd);
    let reset = fx.event(&kfd, EventDescriptor::new(EventType::HwException));
    let warm = fx.queue(&kfd, QueueType::ComputeAql);
    kfd.destroy_queue(warm).unwrap();
    fx.queues.clear();
    let baseline = books(&kfd);
    let info = kfd.create_queue(&QueueDesc::new(fx.node, QueueType::ComputeAql, 4096)).unwrap();
    assert!(sim.hang_queue(info.queue_id));
    assert_eq!(sim.accounting().hung_queues, 1);
    let e = kfd.update_queue(info.handle, 50, QueuePriority::Normal, RingUpdate::Keep).unwrap_err();
    assert_eq!(e.errno(), Some(Errno::ETIME));
    assert_eq!(e.kind(), ErrorKind::Timeout);
    assert_eq!(kfd.queue_info(info.handle).unwrap().percentage, 100, "unchanged");
    let e = kfd.destroy_queue(info.handle).unwrap_err();
    assert_eq!(e.errno(), Some(Errno::ETIME));
    assert_eq!(kfd.queue_info(info.handle), Err(QueueError::InvalidHandle), "gone");
    assert_eq!(kfd.destroy_queue(info.handle), Err(QueueError::InvalidHandle));
    kfd.check_invariants().unwrap();
    assert_eq!(books(&kfd), baseline, "buffers freed, nothing left in the kernel");
    assert_eq!(sim.gpu_resets(), vec![info.gpu_id, info.gpu_id]);
    assert_eq!(kfd.wait_event(reset, Timeout::Immediate), Ok(WaitResult::Complete));
    fx.cleanup(&kfd).unwrap();
}

/// A released queue resumes; a wave's memory fault stops a queue, which can still be destroyed.
#[test]
fn released_and_faulted_queues_are_destroyed_cleanly() {
    let kfd = open();
    let sim = kfd.platform();
    let mut fx = Fx::new(&kfd);
    let memory = fx.event(&kfd, EventDescriptor::new(EventType::Memory));
    let h = fx.queue(&kfd, QueueType::ComputeAql);
    let info = kfd.queue_info(h).unwrap();
    assert!(sim.hang_queue(info.queue_id));
    assert!(sim.release_queue(info.queue_id));
    kfd.update_queue(h, 50, QueuePriority::Normal, RingUpdate::Keep).unwrap();
    assert!(sim.fault_queue_memory(info.queue_id, 0xBAD_0000));
    assert_eq!(sim.queue_fault(info.queue_id).unwrap().address, Some(0xBAD_0000));
    assert_eq!(kfd.wait_event(memory, Timeout::Immediate), Ok(WaitResult::Complete));
    assert!(sim.gpu_resets().is_empty());
    fx.cleanup(&kfd).unwrap();
    kfd.check_invariants().unwrap();
    assert_eq!(sim.accounting().queues, 0);
}
