//! [`KfdDriver`]: the [`Driver`] over a [`Kfd`] facade on any [`Platform`] — amdkfd through
//! `hsakmt-linux`, or the simulated amdkfd of `hsakmt-sim`.
//!
//! What it adds to the facade:
//! - agents and regions from the topology, allocation by region;
//! - AQL queues addressed by generation-checked ids, with a cache that keeps a destroyed
//!   queue's ring (memory already allocated and mapped) for the next queue of the same size;
//! - one SDMA queue per GPU agent, created on first use, for [`Driver::copy`];
//! - completion signals carved by a bounded-time [`SubAllocator`](super::SubAllocator) out of
//!   one GPU-visible page pool, each with a KFD signal event so waiters sleep in the kernel and
//!   the device raises it;
//! - batch allocation and NUMA-aware placement helpers.
//!
//! Locks are held for bookkeeping only: never across an ioctl, a wait, or a full ring.
//!
//! # Files
//! The [`Driver`] implementation here delegates each group of calls to one file:
//! - `discovery`: agents and regions from the topology, and the answers about them;
//! - `buffers`: memory by region, batches, mapping on agents, dma-buf import;
//! - `code_objects`: the agents' targets and code objects loaded for them;
//! - `submission`: AQL queues and the ring cache, queue errors, SDMA copies;
//! - `queue_scratch`: each queue's `amd_queue_t` fields and scratch memory, grown on demand;
//! - `signal_pool`: completion signals out of one page pool, each with its event;
//! - `user_events`: the events the driver's user creates.

mod buffers;
mod code_objects;
mod discovery;
mod queue_scratch;
mod signal_pool;
mod submission;
mod user_events;

use core::fmt;

use crate::code_object::{AgentTarget, CodeObject};

use crate::device::queue_manager::{RingUpdate, SdmaQueue};
use crate::device::{
    Allocation, DEFAULT_MEMORY_OBJECTS, DEFAULT_SPIN_NS, Inline, Kfd, MemoryStorage,
    SignalCondition,
};
use crate::event::{EventHandle, Timeout};
use crate::memory::svm_attributes::SvmAttribute;
use crate::platform::{Platform, SharedMemory};
use crate::queue::aql::PacketWords;
use crate::queue::params::QueuePriority;
use crate::queue::signal::Signal;
use crate::slot_table::SlotTable;

use super::agent::{AgentId, AgentInfo, DriverId, RegionId};
use super::api::{
    Buffer, Capabilities, ClockCounters, CodeImage, Driver, DriverError, EventId, QueueId,
    QueueParams, Regions, SignalId, SystemInfo, Waited,
};
use super::policy::DriverKind;
use signal_pool::SignalPool;
use submission::LiveQueue;

pub use crate::config::{
    DRIVER_RING_CACHE, MAX_AGENTS, MAX_DRIVER_EVENTS, MAX_DRIVER_QUEUES, MAX_DRIVER_SIGNALS,
};

struct State<M: SharedMemory> {
    initialized: bool,
    agents: heapless::Vec<AgentInfo, MAX_AGENTS>,
    peer_links: u32,
    queues: SlotTable<LiveQueue<M>, MAX_DRIVER_QUEUES>,
    ring_cache: heapless::Vec<Allocation<M>, DRIVER_RING_CACHE>,
    events: heapless::Vec<EventHandle, MAX_DRIVER_EVENTS>,
}

impl<M: SharedMemory> State<M> {
    const fn new() -> Self {
        State {
            initialized: false,
            agents: heapless::Vec::new(),
            peer_links: 0,
            queues: SlotTable::new(),
            ring_cache: heapless::Vec::new(),
            events: heapless::Vec::new(),
        }
    }
}

/// The [`Driver`] over the KFD facade.
///
/// Dropping it without [`Driver::shutdown`] is safe and loses nothing: its producers, cached
/// rings and signal memory go first (fields drop in declaration order), then the facade, which
/// closes the device ([`Kfd`]'s `Drop`).
pub struct KfdDriver<P: Platform, S: MemoryStorage<P::Mapping> = Inline<DEFAULT_MEMORY_OBJECTS>> {
    kind: DriverKind,
    id: DriverId,
    state: spin::RwLock<State<P::Mapping>>,
    sdma: spin::Mutex<heapless::Vec<(u32, SdmaQueue<P::Mapping>), MAX_AGENTS>>,
    signals: spin::Mutex<SignalPool<P::Mapping>>,
    /// How long a signal wait spins before it blocks in the kernel, in nanoseconds.
    wait_spin_ns: u64,
    /// Last: every view above is dropped before the facade closes the device.
    kfd: Kfd<P, S>,
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> fmt::Debug for KfdDriver<P, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KfdDriver").field("kind", &self.kind).finish_non_exhaustive()
    }
}

fn timeout(ns: u64) -> Timeout {
    match ns {
        0 => Timeout::Immediate,
        u64::MAX => Timeout::Infinite,
        n => Timeout::Millis(u32::try_from(n.div_ceil(1_000_000)).unwrap_or(u32::MAX - 1)),
    }
}

impl<P: Platform> KfdDriver<P> {
    /// A driver of `kind` ([`DriverKind::Kfd`] or [`DriverKind::Sim`]) over `platform`, with
    /// the facade's default capacity; `id` is the id agents report (the registry position).
    pub fn new(kind: DriverKind, id: DriverId, platform: P) -> Self {
        Self::with_kfd(kind, id, Kfd::new(platform))
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> KfdDriver<P, S> {
    /// A driver over an existing (closed) facade.
    pub fn with_kfd(kind: DriverKind, id: DriverId, kfd: Kfd<P, S>) -> Self {
        Self {
            kind,
            id,
            kfd,
            state: Self::empty_state(),
            sdma: spin::Mutex::new(heapless::Vec::new()),
            signals: Self::empty_signal_pool(),
            wait_spin_ns: DEFAULT_SPIN_NS,
        }
    }

    /// How long [`Driver::signal_wait`] spins on the signal before it blocks in the kernel
    /// (default [`DEFAULT_SPIN_NS`]). 0 blocks at once: what a device that only makes
    /// progress while the process sleeps in the kernel needs (the simulator's on-wait mode),
    /// and what a caller that would rather give the CPU away than poll asks for.
    pub fn set_wait_spin_ns(&mut self, ns: u64) {
        self.wait_spin_ns = ns;
    }

    /// The spin of [`Driver::signal_wait`] before it blocks, in nanoseconds.
    #[must_use]
    pub fn wait_spin_ns(&self) -> u64 {
        self.wait_spin_ns
    }

    // Debug builds build a large value in several stack temporaries (over 1 MiB for these
    // tables); copying a compile-time constant costs one. Release builds do not, and a constant
    // would only add its size to the binary.

    #[inline(never)]
    fn empty_state() -> spin::RwLock<State<P::Mapping>> {
        #[cfg(debug_assertions)]
        let state = const { spin::RwLock::new(State::new()) };
        #[cfg(not(debug_assertions))]
        let state = spin::RwLock::new(State::new());
        state
    }

    #[inline(never)]
    fn empty_signal_pool() -> spin::Mutex<SignalPool<P::Mapping>> {
        #[cfg(debug_assertions)]
        let pool = const { spin::Mutex::new(SignalPool::new()) };
        #[cfg(not(debug_assertions))]
        let pool = spin::Mutex::new(SignalPool::new());
        pool
    }

    /// The facade, for everything the trait does not cover.
    pub const fn kfd(&self) -> &Kfd<P, S> {
        &self.kfd
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Driver for KfdDriver<P, S>
where
    Kfd<P, S>: Send + Sync,
{
    fn kind(&self) -> DriverKind {
        self.kind
    }

    fn init(&self) -> Result<(), DriverError> {
        self.discover()
    }

    fn shutdown(&self) -> Result<(), DriverError> {
        if !self.state.read().initialized {
            return Ok(());
        }
        // Queues first (their producers hold mappings), then signals, events, memory. Every
        // step runs even when one before it failed; the first failure is returned.
        let mut first: Result<(), DriverError> = Ok(());
        let mut keep = |r: Result<(), DriverError>| {
            if first.is_ok() {
                first = r;
            }
        };
        let live: heapless::Vec<QueueId, MAX_DRIVER_QUEUES> =
            self.state.read().queues.iter().map(|(key, _)| key.into()).collect();
        for q in live {
            keep(self.destroy_queue(q));
        }
        let cached: heapless::Vec<Allocation<P::Mapping>, DRIVER_RING_CACHE> =
            core::mem::take(&mut self.state.write().ring_cache);
        for ring in cached {
            keep(self.kfd.free(ring).map_err(DriverError::from));
        }
        let sdma = core::mem::take(&mut *self.sdma.lock());
        for (_, producer) in sdma {
            let handle = producer.handle();
            drop(producer);
            keep(self.kfd.destroy_queue(handle).map_err(DriverError::from));
        }
        let (memory, events) = {
            let mut pool = self.signals.lock();
            pool.slots = None;
            let events: heapless::Vec<EventHandle, MAX_DRIVER_SIGNALS> =
                pool.events.iter_mut().filter_map(Option::take).collect();
            (pool.memory.take(), events)
        };
        for e in events {
            keep(self.kfd.destroy_event(e).map_err(DriverError::from));
        }
        if let Some(m) = memory {
            keep(self.kfd.free(m).map_err(DriverError::from));
        }
        let events = core::mem::take(&mut self.state.write().events);
        for e in events {
            keep(self.kfd.destroy_event(e).map_err(DriverError::from));
        }
        let mut st = self.state.write();
        st.initialized = false;
        st.agents.clear();
        drop(st);
        keep(self.kfd.close().map_err(DriverError::from));
        first
    }

    fn version(&self) -> (u32, u32) {
        self.kfd.version().map_or((0, 0), |v| (v.major, v.minor))
    }

    fn capabilities(&self) -> Capabilities {
        self.kernel_capabilities()
    }

    fn agent_count(&self) -> usize {
        self.state.read().agents.len()
    }

    fn agent(&self, index: usize) -> Option<AgentInfo> {
        self.state.read().agents.get(index).cloned()
    }

    fn regions(&self, agent: AgentId) -> Result<Regions, DriverError> {
        self.agent_regions(agent)
    }

    fn system(&self) -> SystemInfo {
        self.system_info()
    }

    fn peer_links(&self) -> u32 {
        self.state.read().peer_links
    }

    fn nearest_cpu(&self, agent: AgentId) -> Option<AgentId> {
        self.nearest_cpu_agent(agent)
    }

    fn allocate(&self, region: RegionId, size: u64) -> Result<Buffer, DriverError> {
        self.allocate_in_region(region, size)
    }

    fn free(&self, addr: u64) -> Result<(), DriverError> {
        Ok(self.kfd.free_memory(addr)?)
    }

    fn agent_target(&self, agent: AgentId) -> Result<AgentTarget, DriverError> {
        self.target_of(agent)
    }

    fn load_code_object(
        &self,
        object: &CodeObject<'_>,
        agents: &[AgentId],
    ) -> Result<CodeImage, DriverError> {
        self.load_for_agents(object, agents)
    }

    fn write(&self, addr: u64, src: &[u8]) -> Result<(), DriverError> {
        let m = self.kfd.cpu_mapping(addr)?;
        let off = usize::try_from(addr.saturating_sub(m.addr()))
            .map_err(|_| DriverError::InvalidHandle)?;
        m.write(off, src).map_err(|_| DriverError::InvalidArgument("range outside the buffer"))
    }

    fn read(&self, addr: u64, dst: &mut [u8]) -> Result<(), DriverError> {
        let m = self.kfd.cpu_mapping(addr)?;
        let off = usize::try_from(addr.saturating_sub(m.addr()))
            .map_err(|_| DriverError::InvalidHandle)?;
        m.read(off, dst).map_err(|_| DriverError::InvalidArgument("range outside the buffer"))
    }

    fn register(&self, addr: u64, size: u64) -> Result<u64, DriverError> {
        Ok(self.kfd.register_memory(addr, size)?)
    }

    fn deregister(&self, addr: u64) -> Result<(), DriverError> {
        Ok(self.kfd.deregister_memory(addr)?)
    }

    fn map(&self, addr: u64, agents: &[AgentId]) -> Result<u64, DriverError> {
        self.map_on_agents(addr, agents)
    }

    fn unmap(&self, addr: u64) -> Result<(), DriverError> {
        Ok(self.kfd.unmap_memory_from_gpu(addr)?)
    }

    fn available_memory(&self, agent: AgentId) -> Result<u64, DriverError> {
        let node = self.gpu_node_of(agent)?;
        Ok(self.kfd.available_memory(node)?)
    }

    fn export_dmabuf(&self, addr: u64, size: u64) -> Result<(u32, u64), DriverError> {
        let e = self.kfd.export_dmabuf(addr, size)?;
        Ok((e.fd, e.offset))
    }

    fn import_dmabuf(&self, fd: u32, agents: &[AgentId]) -> Result<Buffer, DriverError> {
        self.import_dmabuf_to_agents(fd, agents)
    }

    fn svm_set(&self, addr: u64, size: u64, attrs: &[SvmAttribute]) -> Result<(), DriverError> {
        Ok(self.kfd.svm_set_attributes(addr, size, attrs)?)
    }

    fn svm_get(&self, addr: u64, size: u64, attrs: &mut [SvmAttribute]) -> Result<(), DriverError> {
        Ok(self.kfd.svm_get_attributes(addr, size, attrs)?)
    }

    fn create_queue(&self, agent: AgentId, params: &QueueParams) -> Result<QueueId, DriverError> {
        self.create_aql_queue(agent, params)
    }

    fn submit(&self, queue: QueueId, packets: &[PacketWords]) -> Result<u64, DriverError> {
        self.submit_packets(queue, packets)
    }

    fn update_queue(
        &self,
        queue: QueueId,
        percentage: u8,
        priority: i8,
    ) -> Result<(), DriverError> {
        let handle = self.queue(queue, |q| q.handle)?;
        let priority = QueuePriority::from_raw(i32::from(priority))
            .map_err(|_| DriverError::InvalidArgument("queue priority (-3..=3)"))?;
        let ring = if percentage == 0 { RingUpdate::Keep } else { RingUpdate::Restore };
        self.kfd.update_queue(handle, u32::from(percentage), priority, ring)?;
        Ok(())
    }

    fn set_cu_mask(&self, queue: QueueId, mask: &[u32]) -> Result<(), DriverError> {
        let handle = self.queue(queue, |q| q.handle)?;
        let bits = mask
            .len()
            .checked_mul(32)
            .and_then(|b| u32::try_from(b).ok())
            .ok_or(DriverError::InvalidArgument("CU mask too long"))?;
        self.kfd.set_queue_cu_mask(handle, bits, mask)?;
        Ok(())
    }

    fn destroy_queue(&self, queue: QueueId) -> Result<(), DriverError> {
        self.destroy_aql_queue(queue)
    }

    fn copy(
        &self,
        agent: AgentId,
        dst: u64,
        src: u64,
        bytes: u64,
        deps: &[SignalId],
        completion: SignalId,
    ) -> Result<(), DriverError> {
        self.sdma_copy(agent, dst, src, bytes, deps, completion)
    }

    fn create_signal(&self, initial: i64) -> Result<SignalId, DriverError> {
        self.create_pool_signal(initial)
    }

    fn destroy_signal(&self, signal: SignalId) -> Result<(), DriverError> {
        self.destroy_pool_signal(signal)
    }

    fn signal_load(&self, signal: SignalId) -> Result<i64, DriverError> {
        let (mem, offset, _) = self.signal_parts(signal)?;
        let s = Signal::new(&mem, offset).map_err(|_| DriverError::InvalidHandle)?;
        Ok(s.load_acquire())
    }

    fn signal_store(&self, signal: SignalId, value: i64) -> Result<(), DriverError> {
        let (mem, offset, event) = self.signal_parts(signal)?;
        let s = Signal::new(&mem, offset).map_err(|_| DriverError::InvalidHandle)?;
        self.kfd.store_signal(event, &s, value)?;
        Ok(())
    }

    fn signal_wait(
        &self,
        signal: SignalId,
        condition: SignalCondition,
        timeout_ns: u64,
    ) -> Result<Waited, DriverError> {
        self.wait_pool_signal(signal, condition, timeout_ns)
    }

    fn create_event(&self, manual_reset: bool, signaled: bool) -> Result<EventId, DriverError> {
        self.create_user_event(manual_reset, signaled)
    }

    fn destroy_event(&self, event: EventId) -> Result<(), DriverError> {
        self.destroy_user_event(event)
    }

    fn set_event(&self, event: EventId) -> Result<(), DriverError> {
        let h = EventHandle::from_raw(event.0).ok_or(DriverError::InvalidHandle)?;
        Ok(self.kfd.set_event(h)?)
    }

    fn reset_event(&self, event: EventId) -> Result<(), DriverError> {
        let h = EventHandle::from_raw(event.0).ok_or(DriverError::InvalidHandle)?;
        Ok(self.kfd.reset_event(h)?)
    }

    fn wait_events(
        &self,
        events: &[EventId],
        all: bool,
        timeout_ns: u64,
    ) -> Result<Waited, DriverError> {
        self.wait_user_events(events, all, timeout_ns)
    }

    fn clock_counters(&self, agent: AgentId) -> Result<ClockCounters, DriverError> {
        let node = self.gpu_node_of(agent)?;
        let c = self.kfd.clock_counters(node)?;
        Ok(ClockCounters {
            gpu: c.gpu,
            cpu: c.cpu,
            system: c.system,
            system_frequency: c.system_frequency,
        })
    }
}
