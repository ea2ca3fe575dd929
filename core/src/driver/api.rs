//! The [`Driver`] trait and the values that cross it.
//!
//! ROCr's `core::Driver` grew from 8 to 47 virtual methods and still leaves events and signals
//! out (its runtime calls libhsakmt around it). This one covers everything a runtime needs from
//! a device driver from the start: identity and capabilities, agents and regions, memory,
//! queues with AQL submission, completion signals, events and waits, and clocks. It is object
//! safe, so a [registry](super::registry) can hold drivers of different types side by side.

use core::fmt;

use bitflags::bitflags;

use crate::code_object::{AgentTarget, CodeObject};
use crate::device::code_object_manager::LoadError;
use crate::device::queue_manager::QueueError;
use crate::device::{self, SignalCondition};
use crate::error::{Error as _, ErrorKind};
use crate::memory::svm_attributes::SvmAttribute;
use crate::queue::aql::PacketWords;
use crate::queue::scratch::ScratchError;
use crate::slot_table::SlotKey;

use super::agent::{AgentId, AgentInfo, MAX_REGIONS, RegionId, RegionInfo, RegionKind};
use super::policy::DriverKind;

bitflags! {
    /// What a driver supports beyond the basics every driver has.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct Capabilities: u32 {
        /// AQL kernel dispatch on GPU agents.
        const KERNEL_DISPATCH = 1 << 0;
        /// DMA copy engines ([`Driver::copy`]).
        const DMA_COPY = 1 << 1;
        /// The SVM attribute API ([`Driver::svm_set`]).
        const SVM = 1 << 2;
        /// dma-buf export and import.
        const DMABUF = 1 << 3;
        /// Event ages (waits that return at once for an event fired since a known age).
        const EVENT_AGE = 1 << 4;
        /// Queue CU masks.
        const CU_MASK = 1 << 5;
        /// User memory registration.
        const REGISTER = 1 << 6;
        /// Host kernels registered by the application run as the kernel object of a dispatch
        /// (the simulator and the host driver; real GPUs need a code object loader).
        const HOST_KERNELS = 1 << 7;
        /// GPU clock counters.
        const CLOCKS = 1 << 8;
        /// AMDGPU code objects load into executable memory ([`Driver::load_code_object`])
        /// and GPU agents run their machine code.
        const CODE_OBJECTS = 1 << 9;
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Capabilities {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "Capabilities({=u32:#x})", self.bits());
    }
}

/// A memory allocation made through a driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Buffer {
    /// Address (GPU virtual address; CPU address of host-accessible memory).
    pub addr: u64,
    /// Size in bytes (rounded to the region's granule).
    pub size: u64,
    /// The region it came from.
    pub region: RegionId,
}

/// A code object's image in executable GPU memory ([`Driver::load_code_object`]). Free it
/// with [`Driver::free`] at `base` once every dispatch of its kernels has completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CodeImage {
    /// The load address.
    pub base: u64,
    /// Bytes of memory holding it.
    pub size: u64,
}

/// A driver-local queue name; stale names are rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QueueId {
    /// Slot.
    pub index: u32,
    /// Generation of the slot when the queue was created.
    pub generation: u32,
}

/// A driver's queue table is a [`SlotTable`](crate::slot_table::SlotTable): its keys are the
/// queue ids.
impl From<SlotKey> for QueueId {
    fn from(key: SlotKey) -> Self {
        QueueId { index: key.index(), generation: key.generation() }
    }
}

impl From<QueueId> for SlotKey {
    fn from(id: QueueId) -> Self {
        SlotKey::new(id.index, id.generation)
    }
}

/// A completion signal: its handle is the address of its `amd_signal_t`, which is what AQL
/// packets carry in `completion_signal` and `dep_signal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SignalId(pub u64);

/// A driver-local event name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EventId(pub u64);

/// How many threads submit to a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Producers {
    /// One thread (no atomic read-modify-write on submission).
    Single,
    /// Any number of threads.
    Multi,
}

/// Called when a queue goes into error (a bad packet, a faulting kernel).
pub type QueueErrorCallback = fn(queue: QueueId, error: ErrorKind);

/// HSA-style queue creation parameters.
#[derive(Debug, Clone, Copy)]
pub struct QueueParams {
    /// Ring size in packets (a power of two within the agent's limits).
    pub packets: u32,
    /// Single or multiple producers.
    pub producers: Producers,
    /// libhsakmt priority, −3 (lowest) to 3 (highest).
    pub priority: i8,
    /// Share of the device, 1–100 percent.
    pub percentage: u8,
    /// Private (scratch) bytes per work-item the queue is created ready for: its scratch
    /// memory is allocated with the queue (0: none until a dispatch needs it). A dispatch
    /// asking for more grows it (with the queue drained). Beyond the agent's limit the queue
    /// is refused ([`DriverError::Scratch`]).
    pub private_segment_size: u32,
    /// The most group (LDS) bytes per work-group a dispatch on the queue may ask for (0: the
    /// agent's LDS size); a dispatch asking for more is refused at submission, a value above
    /// the agent's LDS at creation ([`DriverError::InvalidArgument`]).
    pub group_segment_size: u32,
    /// Called when the queue goes into error.
    pub error_callback: Option<QueueErrorCallback>,
}

impl Default for QueueParams {
    fn default() -> Self {
        Self {
            packets: 1024,
            producers: Producers::Multi,
            priority: 0,
            percentage: 100,
            private_segment_size: 0,
            group_segment_size: 0,
            error_callback: None,
        }
    }
}

/// The outcome of a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Waited {
    /// The condition holds (signals: with this value).
    Done(i64),
    /// The timeout expired first.
    TimedOut,
}

/// GPU, CPU and system clock counters read at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ClockCounters {
    /// The GPU's counter.
    pub gpu: u64,
    /// The CPU's counter.
    pub cpu: u64,
    /// The system (monotonic) clock, ns.
    pub system: u64,
    /// Frequency of the system clock, Hz.
    pub system_frequency: u64,
}

/// Why a driver operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum DriverError {
    /// The driver does not offer this operation.
    NotSupported(&'static str),
    /// The agent is not one of this driver's.
    InvalidAgent(AgentId),
    /// The region is not one of the agent's.
    InvalidRegion(RegionId),
    /// The region cannot be allocated from (group and private segments).
    NotAllocatable(RegionKind),
    /// A queue, signal, event or buffer name is unknown or stale.
    InvalidHandle,
    /// A fixed capacity of the driver is exhausted.
    CapacityExhausted(&'static str),
    /// An argument is out of range.
    InvalidArgument(&'static str),
    /// The driver is not initialised (or was shut down).
    NotInitialized,
    /// The KFD device facade failed.
    Device(device::Error),
    /// A queue operation of the KFD device facade failed.
    Queue(QueueError),
    /// A code object cannot be loaded, or its kernel not dispatched as asked.
    CodeObject(LoadError),
    /// A queue cannot have the scratch memory a dispatch asks for.
    Scratch(ScratchError),
    /// A failure of a driver implemented outside core, by kind.
    Failed {
        /// Its kind.
        kind: ErrorKind,
        /// What failed.
        what: &'static str,
    },
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotSupported(what) => write!(f, "{what} is not supported by this driver"),
            Self::InvalidAgent(a) => write!(f, "agent {}:{} does not exist", a.driver.0, a.node),
            Self::InvalidRegion(r) => {
                write!(f, "region {} of agent node {} does not exist", r.index, r.agent.node)
            }
            Self::NotAllocatable(k) => write!(f, "the {k:?} region cannot be allocated from"),
            Self::InvalidHandle => f.write_str("unknown or stale handle"),
            Self::CapacityExhausted(what) => write!(f, "no room for another {what}"),
            Self::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Self::NotInitialized => f.write_str("the driver is not initialised"),
            Self::Device(e) => e.fmt(f),
            Self::Queue(e) => e.fmt(f),
            Self::CodeObject(e) => e.fmt(f),
            Self::Scratch(e) => e.fmt(f),
            Self::Failed { kind, what } => write!(f, "{what} failed ({kind:?})"),
        }
    }
}

impl crate::error::Error for DriverError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::NotSupported(_) => ErrorKind::NotSupported,
            Self::InvalidAgent(_) => ErrorKind::InvalidNode,
            Self::InvalidRegion(_) | Self::NotAllocatable(_) | Self::InvalidArgument(_) => {
                ErrorKind::InvalidArgument
            }
            Self::InvalidHandle => ErrorKind::InvalidHandle,
            Self::CapacityExhausted(_) => ErrorKind::CapacityExhausted,
            Self::NotInitialized => ErrorKind::NotOpened,
            Self::Device(e) => e.kind(),
            Self::Queue(e) => e.kind(),
            Self::CodeObject(e) => e.kind(),
            Self::Scratch(e) => e.kind(),
            Self::Failed { kind, .. } => *kind,
        }
    }
}

impl core::error::Error for DriverError {}

impl From<device::Error> for DriverError {
    /// Stale or unknown handles of any table are [`DriverError::InvalidHandle`]; everything
    /// else keeps the device's error.
    fn from(e: device::Error) -> Self {
        if e.kind() == ErrorKind::InvalidHandle { Self::InvalidHandle } else { Self::Device(e) }
    }
}

impl From<QueueError> for DriverError {
    fn from(e: QueueError) -> Self {
        Self::Queue(e)
    }
}

impl From<LoadError> for DriverError {
    /// The device's own failures keep their [`DriverError::Device`] form.
    fn from(e: LoadError) -> Self {
        match e {
            LoadError::Device(d) => d.into(),
            e => Self::CodeObject(e),
        }
    }
}

impl From<ScratchError> for DriverError {
    fn from(e: ScratchError) -> Self {
        Self::Scratch(e)
    }
}

/// The regions of one agent.
pub type Regions = heapless::Vec<RegionInfo, MAX_REGIONS>;

/// System-wide properties (libhsakmt's `HsaSystemProperties`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SystemInfo {
    /// Agents the driver exposes.
    pub agents: u32,
    /// The platform's ACPI OEM table id (`platform_oem`), when known.
    pub platform_oem: Option<u64>,
    /// The platform's OEM id (`platform_id`), when known.
    pub platform_id: Option<u64>,
    /// The OEM revision (`platform_rev`), when known.
    pub platform_rev: Option<u64>,
    /// The topology generation the agents were built from, when known.
    pub generation: Option<u32>,
}

/// Iterator over a driver's agents (see [`agents`]).
#[derive(Clone)]
pub struct Agents<'a> {
    driver: &'a dyn Driver,
    next: usize,
}

impl core::fmt::Debug for Agents<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agents").field("next", &self.next).finish_non_exhaustive()
    }
}

impl Iterator for Agents<'_> {
    type Item = AgentInfo;

    fn next(&mut self) -> Option<AgentInfo> {
        while self.next < self.driver.agent_count() {
            let i = self.next;
            self.next = self.next.saturating_add(1);
            if let Some(a) = self.driver.agent(i) {
                return Some(a);
            }
        }
        None
    }
}

/// The agents of `driver`, by iterator.
#[must_use]
pub fn agents(driver: &dyn Driver) -> Agents<'_> {
    Agents { driver, next: 0 }
}

/// Calls `f` for every agent of `driver` until it returns `false` (HSA's
/// `hsa_iterate_agents`); returns whether every agent was visited.
pub fn for_each_agent(driver: &dyn Driver, mut f: impl FnMut(&AgentInfo) -> bool) -> bool {
    agents(driver).all(|a| f(&a))
}

/// A device driver as a runtime sees it.
///
/// Every method takes `&self`: drivers are shared between threads and synchronise internally.
pub trait Driver: Send + Sync {
    /// Which driver this is.
    fn kind(&self) -> DriverKind;

    /// Opens the device and builds the agent list. Calling it again is harmless.
    ///
    /// # Errors
    /// Why the driver cannot be used on this machine.
    fn init(&self) -> Result<(), DriverError>;

    /// Releases every resource (queues, memory, events) and closes the device.
    ///
    /// # Errors
    /// The first failure while tearing down (every step is still attempted).
    fn shutdown(&self) -> Result<(), DriverError>;

    /// The interface version (KFD major, minor for the KFD driver).
    fn version(&self) -> (u32, u32);

    /// What the driver supports.
    fn capabilities(&self) -> Capabilities;

    /// The number of agents.
    fn agent_count(&self) -> usize;

    /// The `index`th agent (0-based, in node order).
    fn agent(&self, index: usize) -> Option<AgentInfo>;

    /// The memory regions of `agent`.
    ///
    /// # Errors
    /// [`DriverError::InvalidAgent`].
    fn regions(&self, agent: AgentId) -> Result<Regions, DriverError>;

    /// System-wide properties.
    fn system(&self) -> SystemInfo;

    /// GPU-to-GPU links in the topology (for the performance policy).
    fn peer_links(&self) -> u32;

    /// The CPU agent closest to `agent` by NUMA link weight (itself for a CPU).
    fn nearest_cpu(&self, agent: AgentId) -> Option<AgentId>;

    /// Allocates `size` bytes from `region`.
    ///
    /// # Errors
    /// [`DriverError::NotAllocatable`], [`DriverError::InvalidRegion`], or the device's
    /// failure (out of memory, …).
    fn allocate(&self, region: RegionId, size: u64) -> Result<Buffer, DriverError>;

    /// Frees memory allocated (or imported) through this driver.
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`] for an unknown address, or the device's failure.
    fn free(&self, addr: u64) -> Result<(), DriverError>;

    /// What a code object must match to run on GPU agent `agent` (its effective gfx version,
    /// XNACK and SRAM ECC settings).
    ///
    /// # Errors
    /// [`DriverError::InvalidAgent`] (or a CPU agent), [`DriverError::NotSupported`] for a
    /// driver that runs no code objects, [`DriverError::CodeObject`] for a GPU of unknown
    /// version.
    fn agent_target(&self, agent: AgentId) -> Result<AgentTarget, DriverError>;

    /// Loads `object` into executable memory for the GPU agents `agents`: allocated, written
    /// with the image relocated for its address, mapped on those agents. Kernel objects are
    /// the returned base plus each kernel's descriptor offset
    /// ([`crate::code_object::Kernel::descriptor_address`]; [`super::Executable`] does it).
    /// Free the image with [`Driver::free`] at its base.
    ///
    /// # Errors
    /// [`DriverError::NotSupported`] for a driver that runs no code objects,
    /// [`DriverError::InvalidAgent`], [`DriverError::CodeObject`] (no agents, a target that
    /// does not run on an agent), or the device's failure. Nothing stays allocated on error.
    fn load_code_object(
        &self,
        object: &CodeObject<'_>,
        agents: &[AgentId],
    ) -> Result<CodeImage, DriverError>;

    /// Copies `src` into host-accessible memory at `addr` (anywhere inside an allocation).
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`] when the range is not inside host-accessible memory.
    fn write(&self, addr: u64, src: &[u8]) -> Result<(), DriverError>;

    /// Copies host-accessible memory at `addr` into `dst`.
    ///
    /// # Errors
    /// As [`Driver::write`].
    fn read(&self, addr: u64, dst: &mut [u8]) -> Result<(), DriverError>;

    /// Registers `size` bytes of the caller's memory at `addr` for device access; returns the
    /// device address.
    ///
    /// # Errors
    /// [`DriverError::NotSupported`] or the device's failure.
    fn register(&self, addr: u64, size: u64) -> Result<u64, DriverError>;

    /// Undoes one registration.
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`] or the device's failure.
    fn deregister(&self, addr: u64) -> Result<(), DriverError>;

    /// Makes the allocation at `addr` accessible to `agents` (all GPU agents when empty);
    /// returns the device address.
    ///
    /// # Errors
    /// [`DriverError::InvalidAgent`], [`DriverError::InvalidHandle`], or the device's failure.
    fn map(&self, addr: u64, agents: &[AgentId]) -> Result<u64, DriverError>;

    /// Removes the allocation at `addr` from every agent's view.
    ///
    /// # Errors
    /// As [`Driver::map`].
    fn unmap(&self, addr: u64) -> Result<(), DriverError>;

    /// Bytes the agent could still allocate.
    ///
    /// # Errors
    /// [`DriverError::InvalidAgent`] or [`DriverError::NotSupported`].
    fn available_memory(&self, agent: AgentId) -> Result<u64, DriverError>;

    /// Exports `size` bytes at `addr` as a dma-buf: `(fd, offset inside the buffer)`.
    ///
    /// # Errors
    /// [`DriverError::NotSupported`] or the device's failure.
    fn export_dmabuf(&self, addr: u64, size: u64) -> Result<(u32, u64), DriverError>;

    /// Imports a dma-buf, mapped to `agents`.
    ///
    /// # Errors
    /// [`DriverError::NotSupported`] or the device's failure.
    fn import_dmabuf(&self, fd: u32, agents: &[AgentId]) -> Result<Buffer, DriverError>;

    /// Sets SVM attributes on a range.
    ///
    /// # Errors
    /// [`DriverError::NotSupported`] or the device's failure.
    fn svm_set(&self, addr: u64, size: u64, attrs: &[SvmAttribute]) -> Result<(), DriverError>;

    /// Reads SVM attributes of a range (the kinds asked for in `attrs` are filled in).
    ///
    /// # Errors
    /// [`DriverError::NotSupported`] or the device's failure.
    fn svm_get(&self, addr: u64, size: u64, attrs: &mut [SvmAttribute]) -> Result<(), DriverError>;

    /// Creates an AQL queue on `agent`.
    ///
    /// # Errors
    /// [`DriverError::InvalidAgent`], [`DriverError::InvalidArgument`] (size), or the device's
    /// failure.
    fn create_queue(&self, agent: AgentId, params: &QueueParams) -> Result<QueueId, DriverError>;

    /// Submits packets to a queue (body first, header published last, one doorbell); returns
    /// the index of the first. Blocks while the ring is full.
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`].
    fn submit(&self, queue: QueueId, packets: &[PacketWords]) -> Result<u64, DriverError>;

    /// Changes a queue's share and priority; 0 % disables it until re-enabled.
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`] or the device's failure.
    fn update_queue(&self, queue: QueueId, percentage: u8, priority: i8)
    -> Result<(), DriverError>;

    /// Sets the compute units a queue may use (32 per word).
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`], [`DriverError::NotSupported`] or the device's failure.
    fn set_cu_mask(&self, queue: QueueId, mask: &[u32]) -> Result<(), DriverError>;

    /// Destroys a queue (its resources may be reused by the next queue of the same shape).
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`] or the device's failure; a failure to release what the
    /// queue held (its signal, its ring) after the queue itself was destroyed is returned too,
    /// and the queue is gone all the same.
    fn destroy_queue(&self, queue: QueueId) -> Result<(), DriverError>;

    /// Copies `bytes` from `src` to `dst` on `agent`'s DMA engine once every signal of `deps`
    /// is 0, then stores 0 into `completion` (which the caller set to non-zero). Returns at
    /// once; the copy runs asynchronously (HSA's `hsa_amd_memory_async_copy`).
    ///
    /// # Errors
    /// [`DriverError::NotSupported`] without DMA engines, [`DriverError::InvalidHandle`] for
    /// an unknown signal, or the device's failure.
    fn copy(
        &self,
        agent: AgentId,
        dst: u64,
        src: u64,
        bytes: u64,
        deps: &[SignalId],
        completion: SignalId,
    ) -> Result<(), DriverError>;

    /// Creates a completion signal with `initial` value, visible to every agent.
    ///
    /// # Errors
    /// [`DriverError::CapacityExhausted`] or the device's failure.
    fn create_signal(&self, initial: i64) -> Result<SignalId, DriverError>;

    /// Destroys a signal.
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`].
    fn destroy_signal(&self, signal: SignalId) -> Result<(), DriverError>;

    /// A signal's current value.
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`].
    fn signal_load(&self, signal: SignalId) -> Result<i64, DriverError>;

    /// Stores a value (waking waiters).
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`].
    fn signal_store(&self, signal: SignalId, value: i64) -> Result<(), DriverError>;

    /// Waits until `signal`'s value satisfies `condition`, or `timeout_ns` (`u64::MAX`:
    /// forever) passes: spins briefly, then sleeps until the device raises the signal's
    /// interrupt.
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`] or the device's failure.
    fn signal_wait(
        &self,
        signal: SignalId,
        condition: SignalCondition,
        timeout_ns: u64,
    ) -> Result<Waited, DriverError>;

    /// Creates a CPU-settable event (auto- or manual-reset, possibly already signaled).
    ///
    /// # Errors
    /// [`DriverError::CapacityExhausted`] or the device's failure.
    fn create_event(&self, manual_reset: bool, signaled: bool) -> Result<EventId, DriverError>;

    /// Destroys an event.
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`] or the device's failure.
    fn destroy_event(&self, event: EventId) -> Result<(), DriverError>;

    /// Signals an event.
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`] or the device's failure.
    fn set_event(&self, event: EventId) -> Result<(), DriverError>;

    /// Resets a manual-reset event.
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`] or the device's failure.
    fn reset_event(&self, event: EventId) -> Result<(), DriverError>;

    /// Waits for any (or all) of `events`; [`Waited::Done`] carries the index of the first
    /// fired event when known (else 0).
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`], [`DriverError::InvalidArgument`] (too many), or the
    /// device's failure.
    fn wait_events(
        &self,
        events: &[EventId],
        all: bool,
        timeout_ns: u64,
    ) -> Result<Waited, DriverError>;

    /// Reads the agent's clock counters.
    ///
    /// # Errors
    /// [`DriverError::InvalidAgent`] or the device's failure.
    fn clock_counters(&self, agent: AgentId) -> Result<ClockCounters, DriverError>;
}
