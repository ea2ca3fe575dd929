//! [`Kfd`]: the hsaKmt-style facade over one [`Platform`] — open/close and version, the
//! topology, memory ([`memory_manager`]: allocation, mapping, registration, dma-buf, SVM),
//! queues ([`queue_manager`]: creation, update, producers, SDMA copies) and events (the event
//! manager: create, wait, set, callbacks).
//!
//! `Kfd` is `Send + Sync`: its bookkeeping tables each sit behind their own `spin` lock, held
//! only for bookkeeping — never across an ioctl or a wait — and queue submission takes no lock.
//!
//! # Storage
//! The facade's large tables — the memory manager's arrays, the topology snapshot (about
//! 450 KB), the queue and event tables ([`HandleTables`], about 380 KB) — live where its
//! storage type parameter ([`MemoryStorage`]) says:
//! - [`Kfd::new`] keeps them all inline ([`Inline`], [`DEFAULT_MEMORY_OBJECTS`] memory
//!   objects): a `const fn`, for a facade in a `static`, which costs no stack at all;
//! - [`Kfd::with_memory`] takes them from [`MemoryTables`]: on `std`, boxes built on the heap
//!   (`hsakmt_linux::boxed_kfd`, `boxed_tables`), which leave the facade about 40 KB, fine on
//!   any thread's stack; or a snapshot in a static
//!   [`TopologyCell`](crate::topology::TopologyCell) (`&'static mut Topology`).

mod clock;
pub mod code_object_manager;
pub mod debug_manager;
mod event_manager;
mod handle_tables;
pub mod memory_manager;
mod pmc_manager;
mod profiler;
pub mod queue_manager;
mod render_device;
mod retired_calls;
mod runtime;
mod session;
mod smi_stream;
mod system_properties;
mod tile_config;

use core::borrow::{Borrow, BorrowMut};
use core::fmt;

use crate::error::{Errno, ErrorKind};
use crate::memory as mem;
use crate::platform::{Ioctl, OpenError, Platform};
use crate::topology::{self, READ_BUFFER, Topology};
use crate::uapi::{KFD_IOCTL_MAJOR_VERSION, KfdVersion, kfd_ioctl_get_version_args};

use memory_manager::pending::MemoryLock;
use memory_manager::state::MemoryState;
use session::{Session, Usability};

pub use memory_manager::{
    Allocation, DEFAULT_MEMORY_OBJECTS, Heap, HeapKind, Inline, MapNodes, MemoryStorage,
    MemoryTables, MemoryUsage, NodeApertures, NodeHeaps, PointerInfo, PointerKind,
};

pub use clock::ClockSample;
pub use debug_manager::{AddressWatch, Debugger};
pub use handle_tables::HandleTables;
pub use pmc_manager::{TraceHandle, TraceRoot};
pub use render_device::RenderDevice;
pub use smi_stream::SmiStream;
pub use system_properties::Acquired;
pub use tile_config::TileConfig;

pub use event_manager::{
    DEFAULT_SPIN_NS, Dispatched, EventDescriptor, EventInfo, EventState, Mailbox, NO_AGE_SLICE_MS,
    SignalCondition, SignalValue, SignalWaited,
};

pub use crate::config::IOCTL_RETRIES;

/// What [`Kfd::open`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Opened {
    /// The device was opened, checked and its topology read.
    First,
    /// It was already open in this process; the open count is now `count`
    /// (libhsakmt's `HSAKMT_STATUS_KERNEL_ALREADY_OPENED`).
    Again {
        /// The open count after this call.
        count: u32,
    },
}

/// An error of the device facade.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// The device is not open (never opened, or closed).
    NotOpened,
    /// This process is a fork of the one that opened the device: it must open it itself.
    ForkedChild,
    /// `/dev/kfd` could not be opened.
    Open(OpenError),
    /// The kernel's interface major version is not 1.
    VersionMismatch {
        /// What the kernel reported.
        kernel: KfdVersion,
    },
    /// The running kernel is too old for the operation.
    NotSupported {
        /// What was asked for.
        feature: &'static str,
        /// The KFD minor version that introduced it.
        needs_minor: u32,
        /// The kernel's version.
        kernel: KfdVersion,
    },
    /// An ioctl failed.
    Ioctl {
        /// Its name without the `AMDKFD_IOC_` prefix.
        name: &'static str,
        /// The kernel's errno.
        errno: Errno,
    },
    /// The topology could not be read.
    Topology(topology::Error),
    /// A memory operation was refused by the library's bookkeeping (bad argument, unknown
    /// address, capacity, object in use).
    Memory(mem::Error),
    /// A platform call other than an ioctl failed: a CPU mapping, an address-space
    /// reservation, opening a render node.
    Platform(Errno),
    /// An event operation failed in the library's bookkeeping (stale handle, full table, …).
    Event(crate::event::Error),
    /// No such user node, or not a GPU where a GPU is needed.
    InvalidNode {
        /// The user node id.
        node: u32,
    },
    /// More watch points than `hsaKmtDbgAddressWatch` accepts.
    TooManyWatchPoints {
        /// How many were given.
        given: u32,
    },
    /// A call of libhsakmt's header that upstream no longer implements.
    NotImplemented {
        /// The C function.
        call: &'static str,
    },
    /// A performance-counter request failed.
    Pmc(crate::pmc::Error),
    /// The topology changed (its `generation_id` moved) while the process holds queues,
    /// events or memory on the old GPUs: close the device and open it again.
    TopologyChanged {
        /// The generation of the snapshot held.
        held: Option<u32>,
        /// The tree's generation now.
        now: Option<u32>,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotOpened => f.write_str("the KFD device is not open"),
            Self::ForkedChild => f.write_str(
                "the KFD device was opened by the parent process, not in this (forked) process; \
                 open it again here",
            ),
            Self::Open(e) => e.fmt(f),
            Self::VersionMismatch { kernel } => write!(
                f,
                "the kernel's KFD interface is version {}.{}; this library speaks major {}",
                kernel.major, kernel.minor, KFD_IOCTL_MAJOR_VERSION
            ),
            // The kernel is new enough: what is missing is on the machine (firmware).
            Self::NotSupported { feature, needs_minor, kernel }
                if kernel.major == 1 && kernel.minor >= *needs_minor =>
            {
                write!(f, "not supported: this machine lacks {feature}")
            }
            Self::NotSupported { feature, needs_minor, kernel } => write!(
                f,
                "{feature} needs KFD interface 1.{needs_minor}, the kernel has {}.{}",
                kernel.major, kernel.minor
            ),
            Self::Ioctl { name, errno } => write!(f, "AMDKFD_IOC_{name} failed: {errno}"),
            Self::Topology(e) => e.fmt(f),
            Self::Memory(e) => e.fmt(f),
            Self::Platform(e) => write!(f, "platform call failed: {e}"),
            Self::Event(e) => e.fmt(f),
            Self::InvalidNode { node } => write!(f, "node {node} is not a GPU of this process"),
            Self::TooManyWatchPoints { given } => write!(
                f,
                "{given} watch points requested; at most {} are accepted",
                debug_manager::deprecated::MAX_WATCH_POINTS
            ),
            Self::NotImplemented { call } => write!(f, "{call} is not implemented (deprecated)"),
            Self::Pmc(e) => e.fmt(f),
            Self::TopologyChanged { held, now } => write!(
                f,
                "the topology changed (generation {held:?} -> {now:?}) while queues, events or \
                 memory are held; close the device and open it again"
            ),
        }
    }
}

impl crate::error::Error for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::NotOpened | Self::ForkedChild => ErrorKind::NotOpened,
            Self::Open(e) => e.kind(),
            Self::VersionMismatch { .. } => ErrorKind::DriverMismatch,
            Self::NotSupported { .. } => ErrorKind::NotSupported,
            Self::Ioctl { errno, .. } => errno.kind(),
            Self::Topology(e) => e.kind(),
            Self::Memory(e) => crate::error::Error::kind(e),
            Self::Platform(e) => e.kind(),
            Self::Event(e) => e.kind(),
            Self::InvalidNode { .. } => ErrorKind::InvalidNode,
            Self::TooManyWatchPoints { .. } => ErrorKind::InvalidArgument,
            Self::NotImplemented { .. } => ErrorKind::NotImplemented,
            Self::Pmc(e) => crate::error::Error::kind(e),
            Self::TopologyChanged { .. } => ErrorKind::Inconsistent,
        }
    }
}

impl core::error::Error for Error {}

impl From<topology::Error> for Error {
    fn from(e: topology::Error) -> Self {
        Self::Topology(e)
    }
}

impl From<crate::event::Error> for Error {
    fn from(e: crate::event::Error) -> Self {
        Self::Event(e)
    }
}

impl From<mem::Error> for Error {
    fn from(e: mem::Error) -> Self {
        Self::Memory(e)
    }
}

/// Compile-time proof that the facade and the KFD driver are `Send + Sync` over every
/// platform (platforms are `Send + Sync`, and so are their shared-memory views): a change that
/// breaks it fails to build here rather than in a user's crate.
const _: () = {
    const fn shareable<T: Send + Sync>() {}
    #[expect(dead_code, reason = "type-checked by the compiler, never called")]
    fn facade_and_driver<P: Platform>() {
        shareable::<Kfd<P>>();
        shareable::<crate::driver::KfdDriver<P>>();
    }
};

/// The KFD device facade over platform `P`, with memory tables in storage `S`.
pub struct Kfd<P: Platform, S: MemoryStorage<P::Mapping> = Inline<DEFAULT_MEMORY_OBJECTS>> {
    platform: P,
    session: Session,
    /// Serialises open and close against each other (never held by other calls).
    lifecycle: spin::Mutex<()>,
    topology: spin::RwLock<S::Topology>,
    memory: MemoryLock<P::Mapping, S>,
    /// The queue and event tables (see [`Kfd::queues`] and [`Kfd::events`]).
    tables: S::HandleTables,
    runtime_caps: runtime::RuntimeCaps,
    debug_pipe: debug_manager::DebugPipe,
    pmc_traces: spin::Mutex<pmc_manager::Traces>,
    system_released: system_properties::Released,
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> fmt::Debug for Kfd<P, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kfd")
            .field("open_count", &self.session.count())
            .field("version", &self.session.version())
            .finish_non_exhaustive()
    }
}

/// Dropping the facade ends what it holds in this process: an open device is closed as by its
/// last [`Kfd::close`] (queues and events destroyed, memory forgotten, `/dev/kfd` closed, the
/// kernel releasing the buffers), and the address ranges it reserved are given back — unless a
/// caller still holds a CPU view of its memory, in which case the memory and ranges stay (a view
/// never outlives its memory). In a forked child nothing of the parent's is touched.
impl<P: Platform, S: MemoryStorage<P::Mapping>> Drop for Kfd<P, S> {
    fn drop(&mut self) {
        match self.session.usability(self.platform.process_id()) {
            Usability::Forked => {
                self.platform.close();
                self.forget_parent_state();
                return;
            }
            Usability::Open => {
                self.teardown_queues();
                self.teardown_events();
                self.close_debug_pipe();
                let held = self.close_memory().is_err();
                self.session.reset();
                self.platform.close();
                if held {
                    return;
                }
            }
            Usability::Closed => {}
        }
        let mut st = self.memory.lock();
        if st.shared_mappings() > 0 {
            return;
        }
        st.reset();
        let count = core::mem::take(&mut st.reservation_count);
        for &(base, size) in st.reservations.iter().take(count) {
            let _ = self.platform.release_va(base, size);
        }
    }
}

impl<P: Platform> Kfd<P> {
    /// A closed device over `platform`, with room for [`DEFAULT_MEMORY_OBJECTS`] memory objects
    /// stored inline.
    pub const fn new(platform: P) -> Self {
        Self {
            platform,
            session: Session::new(),
            lifecycle: spin::Mutex::new(()),
            topology: spin::RwLock::new(Topology::new()),
            memory: MemoryLock::new(MemoryState::inline()),
            tables: HandleTables::new(),
            runtime_caps: runtime::RuntimeCaps::new(),
            debug_pipe: debug_manager::DebugPipe::new(),
            pmc_traces: spin::Mutex::new(pmc_manager::Traces::new()),
            system_released: system_properties::Released::new(),
        }
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// A closed device over `platform` whose large tables come from `tables`: the memory
    /// manager's arrays (their length fixes the capacity; boxed slices let it reach hundreds of
    /// thousands of objects), the topology snapshot's storage and the queue and event tables.
    pub fn with_memory(platform: P, tables: MemoryTables<P::Mapping, S>) -> Self {
        let MemoryTables {
            index,
            slots,
            default_va,
            coherent_va,
            handle_va,
            topology,
            handle_tables,
        } = tables;
        let memory = MemoryState::from_parts(index, slots, default_va, coherent_va, handle_va);
        Self {
            platform,
            session: Session::new(),
            lifecycle: spin::Mutex::new(()),
            topology: spin::RwLock::new(topology),
            memory: MemoryLock::new(memory),
            tables: handle_tables,
            runtime_caps: runtime::RuntimeCaps::new(),
            debug_pipe: debug_manager::DebugPipe::new(),
            pmc_traces: spin::Mutex::new(pmc_manager::Traces::new()),
            system_released: system_properties::Released::new(),
        }
    }

    /// The platform.
    pub const fn platform(&self) -> &P {
        &self.platform
    }

    /// Runs `f` over the topology snapshot (read-locked), whether the device is open or not.
    fn read_topology<R>(&self, f: impl FnOnce(&Topology) -> R) -> R {
        f((*self.topology.read()).borrow())
    }

    /// The queue table, its doorbell pages and the buffers of destroyed queues.
    fn queues(&self) -> &spin::Mutex<queue_manager::QueueState<P::Mapping>> {
        &self.tables.borrow().queues
    }

    /// The event table, the event page and the callbacks.
    fn events(&self) -> &event_manager::Events<P::Mapping> {
        &self.tables.borrow().events
    }

    /// Opens the device (`hsaKmtOpenKFD` + `hsaKmtAcquireSystemProperties`): opens `/dev/kfd`,
    /// checks the interface version and takes the topology snapshot. Opening again in the same
    /// process only counts ([`Opened::Again`]); a forked child's open discards the parent's
    /// state and opens afresh.
    ///
    /// # Errors
    /// [`Error::Open`] with what to do, [`Error::VersionMismatch`], [`Error::Ioctl`] for
    /// `GET_VERSION`, [`Error::Topology`]. On error the device stays closed.
    pub fn open(&self) -> Result<Opened, Error> {
        let _guard = self.lifecycle.lock();
        let pid = self.platform.process_id();
        match self.session.usability(pid) {
            Usability::Open => return Ok(Opened::Again { count: self.session.reopen() }),
            Usability::Forked => {
                // The parent's descriptor and mappings are not ours; forget them.
                self.platform.close();
                self.session.reset();
                self.forget_parent_state();
            }
            Usability::Closed => {}
        }
        self.platform.open().map_err(Error::Open)?;
        match self.start(pid) {
            Ok(()) => Ok(Opened::First),
            Err(e) => {
                self.platform.close();
                Err(e)
            }
        }
    }

    /// A forked child forgets its parent's queues, memory and events without touching any of
    /// them (no ioctl, no unmapping: see `forget_parent_memory`); the topology snapshot stays
    /// valid.
    fn forget_parent_state(&self) {
        self.forget_queues();
        self.forget_parent_memory();
        self.events().forget();
        // The parent's pipe descriptors are the child's copies: forget, do not close.
        let _ = self.debug_pipe.take();
        self.pmc_traces.lock().clear();
        self.runtime_caps_reset();
    }

    /// What the last close ends besides queues, events and memory: the debugger's pipe, the
    /// counter traces, the runtime capabilities and a pending release of the snapshot.
    fn end_session_extras(&self) {
        self.close_debug_pipe();
        self.pmc_traces.lock().clear();
        self.runtime_caps_reset();
        self.system_released_reset();
    }

    fn start(&self, pid: u32) -> Result<(), Error> {
        let mut args = kfd_ioctl_get_version_args::default();
        match self.raw_ioctl(&mut Ioctl::GetVersion(&mut args)) {
            Err(Error::Ioctl { errno: Errno::ENOTTY, .. }) => {
                return Err(Error::Open(OpenError::NotKfd));
            }
            r => r?,
        }
        let version = KfdVersion::from_args(&args);
        if !version.is_compatible() {
            return Err(Error::VersionMismatch { kernel: version });
        }
        let mut buf = [0u8; READ_BUFFER];
        let mut topology = self.topology.write();
        (*topology).borrow_mut().refresh_visible(
            &self.platform,
            &self.platform,
            &self.platform,
            &mut buf,
        )?;
        drop(topology);
        // The memory manager's ioctls are issued before the session counts as open, so no
        // other call can see a half-initialised memory state.
        self.session.set_version(version);
        if let Err(e) = self.open_memory() {
            self.forget_memory();
            return Err(e);
        }
        self.session.start(pid, version);
        Ok(())
    }

    /// Closes one open (`hsaKmtCloseKFD`); the last close destroys the remaining queues,
    /// forgets every memory object and closes `/dev/kfd` (the kernel releases the buffers).
    ///
    /// # Errors
    /// [`Error::NotOpened`] when not open, [`Error::ForkedChild`] in a forked child;
    /// [`mem::Error::MappingInUse`] when the last close finds a CPU view still held by a
    /// caller (drop it first — queue producers included: a view must not outlive its memory) —
    /// the device stays open (its queues are destroyed).
    pub fn close(&self) -> Result<(), Error> {
        let _guard = self.lifecycle.lock();
        self.check_open()?;
        if self.session.count() == 1 {
            self.teardown_queues();
            // Events first: the event page's view must go before the memory check.
            self.teardown_events();
            self.close_memory()?;
            self.end_session_extras();
        }
        if self.session.close() == 0 {
            self.platform.close();
        }
        Ok(())
    }

    /// The open count in this process (0 when closed or in a forked child).
    pub fn open_count(&self) -> u32 {
        match self.session.usability(self.platform.process_id()) {
            Usability::Open => self.session.count(),
            Usability::Closed | Usability::Forked => 0,
        }
    }

    /// The kernel's KFD interface version (`hsaKmtGetVersion`).
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn version(&self) -> Result<KfdVersion, Error> {
        self.check_open()?;
        Ok(self.session.version())
    }

    /// Runs `f` over the topology snapshot taken at open.
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn with_topology<R>(&self, f: impl FnOnce(&Topology) -> R) -> Result<R, Error> {
        self.check_open()?;
        Ok(self.read_topology(f))
    }

    /// Fails unless the device is open in this process.
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`].
    #[inline]
    pub fn check_open(&self) -> Result<(), Error> {
        match self.session.usability(self.platform.process_id()) {
            Usability::Open => Ok(()),
            Usability::Closed => Err(Error::NotOpened),
            Usability::Forked => Err(Error::ForkedChild),
        }
    }

    /// Fails with [`Error::NotSupported`] unless the kernel's minor version is at least
    /// `minor`.
    ///
    /// # Errors
    /// As described.
    pub fn require_minor(&self, feature: &'static str, minor: u32) -> Result<(), Error> {
        let kernel = self.session.version();
        if kernel.supports(minor) {
            Ok(())
        } else {
            Err(Error::NotSupported { feature, needs_minor: minor, kernel })
        }
    }

    /// Verifies every table of the facade — memory objects and apertures
    /// ([`Kfd::check_memory_invariants`]), queues ([`Kfd::check_queue_invariants`]) and events
    /// ([`Kfd::check_event_invariants`]). `O(capacity)`; meant for tests and debug sweeps, at a
    /// moment no other thread is changing the tables.
    ///
    /// # Errors
    /// The first [`mem::Violation`] found.
    pub fn check_invariants(&self) -> Result<(), mem::Violation> {
        self.check_memory_invariants()?;
        self.check_queue_invariants()?;
        self.check_event_invariants()
    }

    /// Issues an ioctl on an open device, retrying when a signal interrupted it.
    ///
    /// # Errors
    /// [`Error::Ioctl`]; [`Error::ForkedChild`] when the kernel says the descriptor belongs to
    /// another process (`EBADF` after a fork).
    pub fn ioctl(&self, request: &mut Ioctl<'_>) -> Result<(), Error> {
        self.check_open()?;
        self.raw_ioctl(request)
    }

    fn raw_ioctl(&self, request: &mut Ioctl<'_>) -> Result<(), Error> {
        let mut tries = 0;
        loop {
            match self.platform.ioctl(request) {
                Ok(()) => return Ok(()),
                Err(e) if e.is_retryable() && tries < IOCTL_RETRIES => {
                    log_debug!("ioctl {} interrupted ({:?}), retrying", request.name(), e);
                    tries = tries.saturating_add(1)
                }
                Err(errno) => return Err(self.ioctl_failure(request.name(), errno)),
            }
        }
    }

    /// The error for ioctl `name` failing with `errno`: `EBADF` in a forked child is
    /// [`Error::ForkedChild`].
    fn ioctl_failure(&self, name: &'static str, errno: Errno) -> Error {
        if errno == Errno::EBADF
            && self.session.count() > 0
            && self.session.usability(self.platform.process_id()) != Usability::Open
        {
            Error::ForkedChild
        } else {
            Error::Ioctl { name, errno }
        }
    }
}
