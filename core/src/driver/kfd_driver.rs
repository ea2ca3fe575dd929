//! [`KfdDriver`]: the [`Driver`] over a [`Kfd`] facade on any [`Platform`] — amdkfd through
//! `hsakmt-linux`, or the simulated amdkfd of `hsakmt-sim`.
//!
//! What it adds to the facade:
//! - agents and regions from the topology, allocation by region;
//! - AQL queues addressed by generation-checked ids, with a cache that keeps a destroyed
//!   queue's ring (memory already allocated and mapped) for the next queue of the same size;
//! - one SDMA queue per GPU agent, created on first use, for [`Driver::copy`];
//! - completion signals carved by a bounded-time [`SubAllocator`] out of one GPU-visible page
//!   pool, each with a KFD signal event so waiters sleep in the kernel and the device raises it;
//! - batch allocation and NUMA-aware placement helpers.
//!
//! Locks are held for bookkeeping only: never across an ioctl, a wait, or a full ring.

use core::fmt;

use super::agent::{
    AgentId, AgentInfo, AgentKind, DriverId, RegionId, RegionInfo, RegionKind, regions_of,
};
use super::api::{
    Buffer, Capabilities, ClockCounters, Driver, DriverError, EventId, QueueId, QueueParams,
    Regions, SignalId, SystemInfo, Waited,
};
use super::policy::DriverKind;
use super::pool::SubAllocator;
use crate::device::queue_manager::{
    AqlQueue, QueueDesc, QueueError, QueueHandle, QueueType, RingSpec, RingUpdate, SdmaCompletion,
    SdmaQueue,
};
use crate::device::{
    Allocation, DEFAULT_MEMORY_OBJECTS, DEFAULT_SPIN_NS, EventDescriptor, Inline, Kfd, MapNodes,
    MemoryStorage, SignalCondition,
};
use crate::event::{EventHandle, Timeout, WaitResult};
use crate::memory::svm_attributes::SvmAttribute;
use crate::memory::va::VaSlot;
use crate::memory::{MemFlags, PAGE_SIZE};
use crate::platform::{Platform, SharedMemory};
use crate::queue::aql::PacketWords;
use crate::queue::params::QueuePriority;
use crate::queue::sdma::{PollFunc, SdmaPacket};
use crate::queue::signal::{Mailbox, Signal, SignalInit, VALUE_OFFSET};
use crate::topology::{IoLinkType, NodeKind, SystemKey};

/// Most agents a driver exposes (the topology's node capacity).
pub const MAX_AGENTS: usize = crate::topology::DEFAULT_NODES;
/// Most AQL queues a driver keeps.
pub const MAX_QUEUES: usize = 64;
/// Completion signals in the pool (64 bytes each, one 64 KiB allocation).
pub const MAX_SIGNALS: usize = 1024;
/// Destroyed queues' rings kept for reuse.
pub const RING_CACHE: usize = 8;
/// Driver-created events.
pub const MAX_EVENTS: usize = 256;

const SIGNAL_BYTES: u64 = 64;
const POOL_BYTES: u64 = MAX_SIGNALS as u64 * SIGNAL_BYTES;
const NO_QUEUE: u32 = u32::MAX;

struct QueueSlot<M: SharedMemory> {
    generation: u32,
    live: Option<LiveQueue<M>>,
}

struct LiveQueue<M: SharedMemory> {
    handle: QueueHandle,
    agent: AgentId,
    producer: AqlQueue<M>,
    ring: Allocation<M>,
    params: QueueParams,
    /// The signal whose value the kernel sets to the exception mask on a queue error.
    error_signal: SignalId,
    error_reported: bool,
}

struct SignalPool<M: SharedMemory> {
    memory: Option<Allocation<M>>,
    slots: Option<SubAllocator<[VaSlot; 2 * MAX_SIGNALS + 1]>>,
    events: [Option<EventHandle>; MAX_SIGNALS],
}

struct State<M: SharedMemory> {
    initialized: bool,
    agents: heapless::Vec<AgentInfo, MAX_AGENTS>,
    peer_links: u32,
    queues: [QueueSlot<M>; MAX_QUEUES],
    ring_cache: heapless::Vec<Allocation<M>, RING_CACHE>,
    events: heapless::Vec<EventHandle, MAX_EVENTS>,
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
            state: spin::RwLock::new(State {
                initialized: false,
                agents: heapless::Vec::new(),
                peer_links: 0,
                queues: core::array::from_fn(|_| QueueSlot { generation: 1, live: None }),
                ring_cache: heapless::Vec::new(),
                events: heapless::Vec::new(),
            }),
            sdma: spin::Mutex::new(heapless::Vec::new()),
            signals: spin::Mutex::new(SignalPool {
                memory: None,
                slots: None,
                events: [None; MAX_SIGNALS],
            }),
        }
    }

    /// The facade, for everything the trait does not cover.
    pub const fn kfd(&self) -> &Kfd<P, S> {
        &self.kfd
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> KfdDriver<P, S>
where
    Kfd<P, S>: Send + Sync,
{
    fn node_of(&self, agent: AgentId) -> Result<u32, DriverError> {
        let st = self.state.read();
        if !st.initialized {
            return Err(DriverError::NotInitialized);
        }
        if agent.driver != self.id || !st.agents.iter().any(|a| a.id == agent) {
            return Err(DriverError::InvalidAgent(agent));
        }
        Ok(agent.node)
    }

    fn gpu_node_of(&self, agent: AgentId) -> Result<u32, DriverError> {
        let node = self.node_of(agent)?;
        let st = self.state.read();
        match st.agents.iter().find(|a| a.id == agent) {
            Some(a) if a.kind == AgentKind::Gpu => Ok(node),
            _ => Err(DriverError::InvalidAgent(agent)),
        }
    }

    /// The region description `region`, checked.
    fn region_info(&self, region: RegionId) -> Result<RegionInfo, DriverError> {
        let regions = self.regions(region.agent)?;
        regions.iter().copied().find(|r| r.id == region).ok_or(DriverError::InvalidRegion(region))
    }

    /// The memory flags libhsakmt's callers use for each region kind.
    fn flags_for(kind: RegionKind, agent_kind: AgentKind, host: bool) -> MemFlags {
        match (kind, agent_kind) {
            (RegionKind::GlobalCoarseGrained, _) if host => {
                MemFlags::COARSE_GRAIN | MemFlags::HOST_ACCESS
            }
            (RegionKind::GlobalCoarseGrained, _) => MemFlags::COARSE_GRAIN | MemFlags::NON_PAGED,
            (RegionKind::GlobalFineGrained, AgentKind::Gpu) => MemFlags::HOST_ACCESS,
            (RegionKind::Kernarg, _) => MemFlags::HOST_ACCESS | MemFlags::EXECUTE_ACCESS,
            _ => MemFlags::HOST_ACCESS,
        }
    }

    /// Allocates `sizes.len()` buffers from `region` in one call, filling `out`; on failure
    /// frees what it allocated.
    ///
    /// # Errors
    /// As [`Driver::allocate`]; [`DriverError::InvalidArgument`] when `out` is shorter than
    /// `sizes`.
    pub fn allocate_batch(
        &self,
        region: RegionId,
        sizes: &[u64],
        out: &mut [Buffer],
    ) -> Result<(), DriverError> {
        let outs =
            out.get_mut(..sizes.len()).ok_or(DriverError::InvalidArgument("batch output"))?;
        for (i, size) in sizes.iter().enumerate() {
            match self.allocate(region, *size) {
                Ok(b) => {
                    if let Some(o) = outs.get_mut(i) {
                        *o = b;
                    }
                }
                Err(e) => {
                    for done in outs.iter().take(i) {
                        let _ = self.free(done.addr);
                    }
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Frees every buffer of `buffers`, continuing past failures; returns the first error.
    ///
    /// # Errors
    /// The first failure.
    pub fn free_batch(&self, buffers: &[Buffer]) -> Result<(), DriverError> {
        let mut first = Ok(());
        for b in buffers {
            if let Err(e) = self.free(b.addr)
                && first.is_ok()
            {
                first = Err(e);
            }
        }
        first
    }

    /// The system-memory region nearest to `agent` (by NUMA link weight): where to place a
    /// GPU's host buffers.
    ///
    /// # Errors
    /// [`DriverError::InvalidAgent`] when the agent has no CPU near it.
    pub fn nearest_system_region(&self, agent: AgentId) -> Result<RegionId, DriverError> {
        let cpu = self.nearest_cpu(agent).ok_or(DriverError::InvalidAgent(agent))?;
        let regions = self.regions(cpu)?;
        regions
            .iter()
            .find(|r| r.kind == RegionKind::GlobalFineGrained)
            .map(|r| r.id)
            .ok_or(DriverError::InvalidAgent(cpu))
    }

    fn queue<R>(
        &self,
        id: QueueId,
        f: impl FnOnce(&LiveQueue<P::Mapping>) -> R,
    ) -> Result<R, DriverError> {
        let st = self.state.read();
        let slot = st.queues.get(id.index as usize).ok_or(DriverError::InvalidHandle)?;
        match &slot.live {
            Some(q) if slot.generation == id.generation => Ok(f(q)),
            _ => Err(DriverError::InvalidHandle),
        }
    }

    fn signal_parts(&self, s: SignalId) -> Result<(P::Mapping, usize, EventHandle), DriverError> {
        let pool = self.signals.lock();
        let mem = pool.memory.as_ref().ok_or(DriverError::InvalidHandle)?;
        let offset = s.0.checked_sub(mem.addr).ok_or(DriverError::InvalidHandle)?;
        let index =
            usize::try_from(offset / SIGNAL_BYTES).map_err(|_| DriverError::InvalidHandle)?;
        if offset % SIGNAL_BYTES != 0 {
            return Err(DriverError::InvalidHandle);
        }
        let event = pool.events.get(index).copied().flatten().ok_or(DriverError::InvalidHandle)?;
        let mapping = mem.mapping.clone().ok_or(DriverError::InvalidHandle)?;
        Ok((mapping, usize::try_from(offset).map_err(|_| DriverError::InvalidHandle)?, event))
    }

    fn ensure_signal_pool(&self) -> Result<(), DriverError> {
        if self.signals.lock().memory.is_some() {
            return Ok(());
        }
        let node = self
            .state
            .read()
            .agents
            .iter()
            .find(|a| a.kind == AgentKind::Cpu)
            .map_or(0, |a| a.id.node);
        let flags = MemFlags::HOST_ACCESS | MemFlags::NON_PAGED | MemFlags::UNCACHED;
        let alloc = self.kfd.alloc_memory(node, POOL_BYTES, flags)?;
        if let Err(e) = self.kfd.map_memory_to_gpu(alloc.addr, MapNodes::All) {
            let _ = self.kfd.free(alloc);
            return Err(e.into());
        }
        let slots =
            SubAllocator::new([VaSlot::EMPTY; 2 * MAX_SIGNALS + 1], alloc.addr, POOL_BYTES, 6);
        let mut pool = self.signals.lock();
        match (pool.memory.is_some(), slots) {
            (false, Ok(slots)) => {
                pool.memory = Some(alloc);
                pool.slots = Some(slots);
                Ok(())
            }
            (true, _) => {
                // Another thread made the pool meanwhile.
                drop(pool);
                let _ = self.kfd.free(alloc);
                Ok(())
            }
            (false, Err(_)) => {
                drop(pool);
                let _ = self.kfd.free(alloc);
                Err(DriverError::InvalidArgument("signal pool address"))
            }
        }
    }

    fn sdma_for(&self, node: u32) -> Result<(), DriverError> {
        if self.sdma.lock().iter().any(|(n, _)| *n == node) {
            return Ok(());
        }
        let desc = QueueDesc::new(node, QueueType::Sdma, 64 * 1024);
        let info = self.kfd.create_queue(&desc)?;
        let producer = match self.kfd.sdma_queue(info.handle) {
            Ok(p) => p,
            Err(e) => {
                let _ = self.kfd.destroy_queue(info.handle);
                return Err(e.into());
            }
        };
        let mut sdma = self.sdma.lock();
        let raced = sdma.iter().any(|(n, _)| *n == node);
        let rejected =
            if raced { Some(producer) } else { sdma.push((node, producer)).err().map(|(_, p)| p) };
        drop(sdma);
        if let Some(ours) = rejected {
            // Another thread made this node's queue meanwhile (or the table is full): drop ours.
            drop(ours);
            let _ = self.kfd.destroy_queue(info.handle);
        }
        Ok(())
    }

    /// Runs the error callbacks of queues that went into error since the last call (a queue
    /// error writes the exception mask into the queue's error word); returns how many ran.
    pub fn poll_queue_errors(&self) -> usize {
        let mut fired: heapless::Vec<(QueueId, super::api::QueueErrorCallback), MAX_QUEUES> =
            heapless::Vec::new();
        {
            let mut st = self.state.write();
            for (i, slot) in st.queues.iter_mut().enumerate() {
                let generation = slot.generation;
                if let Some(q) = slot.live.as_mut()
                    && !q.error_reported
                    && self.signal_load(q.error_signal).unwrap_or(0) != 0
                {
                    q.error_reported = true;
                    if let Some(cb) = q.params.error_callback {
                        let id =
                            QueueId { index: u32::try_from(i).unwrap_or(NO_QUEUE), generation };
                        let _ = fired.push((id, cb));
                    }
                }
            }
        }
        for (id, cb) in &fired {
            cb(*id, crate::error::ErrorKind::DeviceFault);
        }
        fired.len()
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
        if self.state.read().initialized {
            return Ok(());
        }
        self.kfd.open()?;
        let built = self.kfd.with_topology(|t| {
            let mut agents = heapless::Vec::new();
            for n in t.nodes() {
                if let Some(a) = AgentInfo::from_node(self.id, &n) {
                    let _ = agents.push(a);
                }
            }
            let peer_links = t
                .nodes()
                .filter(|n| n.kind() != NodeKind::Cpu)
                .flat_map(|n| n.io_links().iter().chain(n.p2p_links()))
                .filter(|l| {
                    l.node_to()
                        .and_then(|to| t.node_by_sysfs_id(to))
                        .is_some_and(|to| to.kind() != NodeKind::Cpu)
                        || l.link_type() == Some(IoLinkType::Xgmi)
                })
                .count();
            (agents, u32::try_from(peer_links).unwrap_or(u32::MAX))
        });
        let (agents, peer_links) = match built {
            Ok(v) => v,
            Err(e) => {
                let _ = self.kfd.close();
                return Err(e.into());
            }
        };
        let mut st = self.state.write();
        st.agents = agents;
        st.peer_links = peer_links;
        st.initialized = true;
        Ok(())
    }

    fn shutdown(&self) -> Result<(), DriverError> {
        if !self.state.read().initialized {
            return Ok(());
        }
        // Queues first (their producers hold mappings), then signals, events, memory.
        let live: heapless::Vec<QueueId, MAX_QUEUES> = {
            let st = self.state.read();
            st.queues
                .iter()
                .enumerate()
                .filter(|(_, s)| s.live.is_some())
                .map(|(i, s)| QueueId {
                    index: u32::try_from(i).unwrap_or(NO_QUEUE),
                    generation: s.generation,
                })
                .collect()
        };
        for q in live {
            let _ = self.destroy_queue(q);
        }
        let cached: heapless::Vec<Allocation<P::Mapping>, RING_CACHE> =
            core::mem::take(&mut self.state.write().ring_cache);
        for ring in cached {
            let _ = self.kfd.free(ring);
        }
        let sdma = core::mem::take(&mut *self.sdma.lock());
        for (_, producer) in sdma {
            let handle = producer.handle();
            drop(producer);
            let _ = self.kfd.destroy_queue(handle);
        }
        let (memory, events) = {
            let mut pool = self.signals.lock();
            pool.slots = None;
            let events: heapless::Vec<EventHandle, MAX_SIGNALS> =
                pool.events.iter_mut().filter_map(Option::take).collect();
            (pool.memory.take(), events)
        };
        for e in events {
            let _ = self.kfd.destroy_event(e);
        }
        if let Some(m) = memory {
            let _ = self.kfd.free(m);
        }
        let events = core::mem::take(&mut self.state.write().events);
        for e in events {
            let _ = self.kfd.destroy_event(e);
        }
        let mut st = self.state.write();
        st.initialized = false;
        st.agents.clear();
        drop(st);
        self.kfd.close()?;
        Ok(())
    }

    fn version(&self) -> (u32, u32) {
        self.kfd.version().map_or((0, 0), |v| (v.major, v.minor))
    }

    fn capabilities(&self) -> Capabilities {
        let mut c = Capabilities::KERNEL_DISPATCH
            | Capabilities::DMA_COPY
            | Capabilities::REGISTER
            | Capabilities::CU_MASK
            | Capabilities::CLOCKS;
        let v = self.kfd.version().unwrap_or(crate::uapi::KfdVersion::new(0, 0));
        if v.supports(crate::uapi::since::SVM) {
            c |= Capabilities::SVM;
        }
        if v.supports(crate::uapi::since::EXPORT_DMABUF) {
            c |= Capabilities::DMABUF;
        }
        if v.supports(crate::uapi::since::EVENT_AGE) {
            c |= Capabilities::EVENT_AGE;
        }
        if self.kind == DriverKind::Sim {
            c |= Capabilities::HOST_KERNELS;
        }
        c
    }

    fn agent_count(&self) -> usize {
        self.state.read().agents.len()
    }

    fn agent(&self, index: usize) -> Option<AgentInfo> {
        self.state.read().agents.get(index).cloned()
    }

    fn regions(&self, agent: AgentId) -> Result<Regions, DriverError> {
        let node = self.node_of(agent)?;
        let info = self
            .state
            .read()
            .agents
            .iter()
            .find(|a| a.id == agent)
            .cloned()
            .ok_or(DriverError::InvalidAgent(agent))?;
        self.kfd
            .with_topology(|t| t.node_by_user_id(node).map(|n| regions_of(&info, &n)))?
            .ok_or(DriverError::InvalidAgent(agent))
    }

    fn system(&self) -> SystemInfo {
        let agents = u32::try_from(self.agent_count()).unwrap_or(u32::MAX);
        self.kfd
            .with_topology(|t| {
                let p = t.system_properties();
                SystemInfo {
                    agents,
                    platform_oem: p.get(SystemKey::PlatformOem),
                    platform_id: p.get(SystemKey::PlatformId),
                    platform_rev: p.get(SystemKey::PlatformRev),
                    generation: t.generation_id(),
                }
            })
            .unwrap_or(SystemInfo { agents, ..SystemInfo::default() })
    }

    fn peer_links(&self) -> u32 {
        self.state.read().peer_links
    }

    fn nearest_cpu(&self, agent: AgentId) -> Option<AgentId> {
        let node = self.node_of(agent).ok()?;
        let cpu = self
            .kfd
            .with_topology(|t| {
                let n = t.node_by_user_id(node)?;
                if n.kind() == NodeKind::Cpu {
                    return Some(node);
                }
                t.nearest_cpu(n.index()).and_then(|(i, _)| t.node(i)?.user_id())
            })
            .ok()??;
        Some(AgentId { driver: self.id, node: cpu })
    }

    fn allocate(&self, region: RegionId, size: u64) -> Result<Buffer, DriverError> {
        let info = self.region_info(region)?;
        if !info.allocatable {
            return Err(DriverError::NotAllocatable(info.kind));
        }
        let kind = self
            .state
            .read()
            .agents
            .iter()
            .find(|a| a.id == region.agent)
            .map_or(AgentKind::Cpu, |a| a.kind);
        let flags = Self::flags_for(info.kind, kind, info.host_accessible);
        // HSA allocates any size; the kernel takes whole granules.
        let size = size
            .checked_next_multiple_of(info.granule.max(PAGE_SIZE))
            .ok_or(DriverError::InvalidArgument("size"))?;
        let alloc = self.kfd.alloc_memory(region.agent.node, size, flags)?;
        let (addr, bytes) = (alloc.addr, alloc.size);
        drop(alloc);
        if let Err(e) = self.kfd.map_memory_to_gpu(addr, MapNodes::Default) {
            let _ = self.kfd.free_memory(addr);
            return Err(e.into());
        }
        Ok(Buffer { addr, size: bytes, region })
    }

    fn free(&self, addr: u64) -> Result<(), DriverError> {
        Ok(self.kfd.free_memory(addr)?)
    }

    fn write(&self, addr: u64, src: &[u8]) -> Result<(), DriverError> {
        let m = self.kfd.cpu_mapping(addr)?;
        let off = usize::try_from(addr - m.addr()).map_err(|_| DriverError::InvalidHandle)?;
        m.write(off, src).map_err(|_| DriverError::InvalidArgument("range outside the buffer"))
    }

    fn read(&self, addr: u64, dst: &mut [u8]) -> Result<(), DriverError> {
        let m = self.kfd.cpu_mapping(addr)?;
        let off = usize::try_from(addr - m.addr()).map_err(|_| DriverError::InvalidHandle)?;
        m.read(off, dst).map_err(|_| DriverError::InvalidArgument("range outside the buffer"))
    }

    fn register(&self, addr: u64, size: u64) -> Result<u64, DriverError> {
        Ok(self.kfd.register_memory(addr, size)?)
    }

    fn deregister(&self, addr: u64) -> Result<(), DriverError> {
        Ok(self.kfd.deregister_memory(addr)?)
    }

    fn map(&self, addr: u64, agents: &[AgentId]) -> Result<u64, DriverError> {
        if agents.is_empty() {
            return Ok(self.kfd.map_memory_to_gpu(addr, MapNodes::All)?);
        }
        let mut nodes: heapless::Vec<u32, MAX_AGENTS> = heapless::Vec::new();
        for a in agents {
            let n = self.gpu_node_of(*a)?;
            nodes.push(n).map_err(|_| DriverError::InvalidArgument("too many agents"))?;
        }
        Ok(self.kfd.map_memory_to_gpu(addr, MapNodes::Only(&nodes))?)
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
        let mut nodes: heapless::Vec<u32, MAX_AGENTS> = heapless::Vec::new();
        for a in agents {
            nodes
                .push(self.gpu_node_of(*a)?)
                .map_err(|_| DriverError::InvalidArgument("agents"))?;
        }
        let first = agents.first().copied().ok_or(DriverError::InvalidArgument("no agent"))?;
        let imported = self.kfd.import_dmabuf(fd, Some(&nodes))?;
        Ok(Buffer {
            addr: imported.addr,
            size: imported.size,
            region: RegionId { agent: first, index: 0 },
        })
    }

    fn svm_set(&self, addr: u64, size: u64, attrs: &[SvmAttribute]) -> Result<(), DriverError> {
        Ok(self.kfd.svm_set_attributes(addr, size, attrs)?)
    }

    fn svm_get(&self, addr: u64, size: u64, attrs: &mut [SvmAttribute]) -> Result<(), DriverError> {
        Ok(self.kfd.svm_get_attributes(addr, size, attrs)?)
    }

    fn create_queue(&self, agent: AgentId, params: &QueueParams) -> Result<QueueId, DriverError> {
        let node = self.gpu_node_of(agent)?;
        let (min, max) = {
            let st = self.state.read();
            let a =
                st.agents.iter().find(|a| a.id == agent).ok_or(DriverError::InvalidAgent(agent))?;
            (a.queue_min_packets, a.queue_max_packets)
        };
        if !params.packets.is_power_of_two() || params.packets < min || params.packets > max {
            return Err(DriverError::InvalidArgument("queue size (packets)"));
        }
        if params.percentage == 0 || params.percentage > 100 {
            return Err(DriverError::InvalidArgument("queue percentage"));
        }
        let priority = QueuePriority::from_raw(i32::from(params.priority))
            .map_err(|_| DriverError::InvalidArgument("queue priority (-3..=3)"))?;
        let bytes = u64::from(params.packets) * 64;
        // A cached ring of this size (already allocated and mapped), else a new one.
        let cached = {
            let mut st = self.state.write();
            st.ring_cache.iter().position(|r| r.size == bytes).map(|i| st.ring_cache.swap_remove(i))
        };
        let ring = match cached {
            Some(r) => r,
            None => {
                let cpu = self.nearest_cpu(agent).map_or(0, |a| a.node);
                let flags = MemFlags::HOST_ACCESS | MemFlags::NON_PAGED;
                let r = self.kfd.alloc_memory(cpu, bytes.max(PAGE_SIZE), flags)?;
                if let Err(e) = self.kfd.map_memory_to_gpu(r.addr, MapNodes::All) {
                    let _ = self.kfd.free(r);
                    return Err(e.into());
                }
                r
            }
        };
        self.ensure_signal_pool()?;
        let error_signal = self.create_signal(0)?;
        let mapping = ring.mapping.clone().ok_or(DriverError::InvalidArgument("ring mapping"))?;
        let desc = QueueDesc::new(node, QueueType::ComputeAql, bytes)
            .with_ring(RingSpec::Mapped { mapping: &mapping, size: bytes })
            .with_priority(priority)
            .with_percentage(u32::from(params.percentage));
        let desc = QueueDesc {
            error: crate::device::queue_manager::ErrorReporting {
                payload_address: error_signal.0 + VALUE_OFFSET as u64,
                event_id: 0,
            },
            ..desc
        };
        let undo = |ring: Allocation<P::Mapping>| {
            let _ = self.destroy_signal(error_signal);
            let mut st = self.state.write();
            if let Err(r) = st.ring_cache.push(ring) {
                drop(st);
                let _ = self.kfd.free(r);
            }
        };
        let created = self.kfd.create_queue(&desc);
        drop(mapping);
        let info = match created {
            Ok(i) => i,
            Err(e) => {
                undo(ring);
                return Err(e.into());
            }
        };
        let producer = match self.kfd.aql_queue(info.handle) {
            Ok(p) => p,
            Err(e) => {
                let _ = self.kfd.destroy_queue(info.handle);
                undo(ring);
                return Err(e.into());
            }
        };
        let mut st = self.state.write();
        let Some((index, slot)) = st.queues.iter_mut().enumerate().find(|(_, s)| s.live.is_none())
        else {
            drop(st);
            drop(producer);
            let _ = self.kfd.destroy_queue(info.handle);
            undo(ring);
            return Err(DriverError::CapacityExhausted("queue"));
        };
        slot.generation = slot.generation.wrapping_add(1).max(1);
        slot.live = Some(LiveQueue {
            handle: info.handle,
            agent,
            producer,
            ring,
            params: *params,
            error_signal,
            error_reported: false,
        });
        Ok(QueueId { index: u32::try_from(index).unwrap_or(NO_QUEUE), generation: slot.generation })
    }

    fn submit(&self, queue: QueueId, packets: &[PacketWords]) -> Result<u64, DriverError> {
        let mut first = None;
        for p in packets {
            // A full ring releases the lock between attempts: the lock is never held across
            // a wait.
            loop {
                match self.queue(queue, |q| q.producer.try_submit(p))? {
                    Ok(i) => {
                        first.get_or_insert(i);
                        break;
                    }
                    Err(crate::queue::ring::RingError::Full) => core::hint::spin_loop(),
                    Err(_) => return Err(DriverError::InvalidArgument("packet")),
                }
            }
        }
        first.ok_or(DriverError::InvalidArgument("no packets"))
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
        let bits = u32::try_from(mask.len() * 32)
            .map_err(|_| DriverError::InvalidArgument("CU mask too long"))?;
        self.kfd.set_queue_cu_mask(handle, bits, mask)?;
        Ok(())
    }

    fn destroy_queue(&self, queue: QueueId) -> Result<(), DriverError> {
        let live = {
            let mut st = self.state.write();
            let slot = st.queues.get_mut(queue.index as usize).ok_or(DriverError::InvalidHandle)?;
            if slot.generation != queue.generation {
                return Err(DriverError::InvalidHandle);
            }
            slot.live.take().ok_or(DriverError::InvalidHandle)?
        };
        let LiveQueue { handle, producer, ring, error_signal, agent, params, .. } = live;
        drop(producer);
        if let Err(e) = self.kfd.destroy_queue(handle) {
            // Put it back: the queue still exists.
            if let Ok(producer) = self.kfd.aql_queue(handle) {
                let mut st = self.state.write();
                if let Some(slot) = st.queues.get_mut(queue.index as usize) {
                    slot.live = Some(LiveQueue {
                        handle,
                        agent,
                        producer,
                        ring,
                        params,
                        error_signal,
                        error_reported: false,
                    });
                }
            }
            return Err(e.into());
        }
        let _ = self.destroy_signal(error_signal);
        let mut st = self.state.write();
        if let Err(r) = st.ring_cache.push(ring) {
            drop(st);
            let _ = self.kfd.free(r);
        }
        Ok(())
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
        let node = self.gpu_node_of(agent)?;
        for d in deps {
            self.signal_parts(*d)?;
        }
        let (_, _, event) = self.signal_parts(completion)?;
        let info = self.kfd.event_info(event)?;
        let mailbox = match (info.mailbox, info.id) {
            (Some(address), event_id) => Some(Mailbox { address, event_id }),
            _ => None,
        };
        self.sdma_for(node)?;
        let mut sdma = self.sdma.lock();
        let (_, producer) = sdma
            .iter_mut()
            .find(|(n, _)| *n == node)
            .ok_or(DriverError::NotSupported("DMA copy on this agent"))?;
        // Each dependency: poll the low word of its value until 0 (completions store 0, high
        // word first, so the low word changes last).
        let polls = deps.iter().map(|d| SdmaPacket::PollRegMem {
            addr: d.0 + VALUE_OFFSET as u64,
            reference: 0,
            mask: u32::MAX,
            func: PollFunc::Equal,
            interval: 10,
            retry_count: 0xFFF,
        });
        if !deps.is_empty() {
            producer.ring().submit(polls, core::hint::spin_loop).map_err(QueueError::from)?;
        }
        producer.copy(
            dst,
            src,
            bytes,
            SdmaCompletion::Signal { signal: completion.0, value: 0, mailbox },
            core::hint::spin_loop,
        )?;
        Ok(())
    }

    fn create_signal(&self, initial: i64) -> Result<SignalId, DriverError> {
        self.ensure_signal_pool()?;
        let event = self.kfd.create_event(&EventDescriptor::signal())?;
        let info = match self.kfd.event_info(event) {
            Ok(i) => i,
            Err(e) => {
                let _ = self.kfd.destroy_event(event);
                return Err(e.into());
            }
        };
        let mut pool = self.signals.lock();
        let addr = match pool.slots.as_mut().map(|s| s.alloc(SIGNAL_BYTES, SIGNAL_BYTES)) {
            Some(Ok(a)) => a,
            _ => {
                drop(pool);
                let _ = self.kfd.destroy_event(event);
                return Err(DriverError::CapacityExhausted("signal"));
            }
        };
        let base = pool.memory.as_ref().map_or(0, |m| m.addr);
        let offset = addr - base;
        let index = (offset / SIGNAL_BYTES) as usize;
        if let Some(e) = pool.events.get_mut(index) {
            *e = Some(event);
        }
        let mailbox = info.mailbox.map(|address| Mailbox { address, event_id: info.id });
        if let Some(mem) = pool.memory.as_ref().and_then(|m| m.mapping.as_ref())
            && let Ok(s) = Signal::new(mem, offset as usize)
        {
            s.init(&SignalInit::User { value: initial, mailbox });
        }
        Ok(SignalId(addr))
    }

    fn destroy_signal(&self, signal: SignalId) -> Result<(), DriverError> {
        let (_, offset, event) = self.signal_parts(signal)?;
        {
            let mut pool = self.signals.lock();
            if let Some(e) = pool.events.get_mut(offset / SIGNAL_BYTES as usize) {
                *e = None;
            }
            if let Some(slots) = pool.slots.as_mut() {
                let _ = slots.free(signal.0);
            }
        }
        self.kfd.destroy_event(event)?;
        Ok(())
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
        let (mem, offset, event) = self.signal_parts(signal)?;
        let s = Signal::new(&mem, offset).map_err(|_| DriverError::InvalidHandle)?;
        let w = self.kfd.wait_signal(event, &s, condition, timeout(timeout_ns), DEFAULT_SPIN_NS)?;
        Ok(match w.result {
            WaitResult::Complete => Waited::Done(w.value),
            WaitResult::TimedOut => {
                self.poll_queue_errors();
                Waited::TimedOut
            }
        })
    }

    fn create_event(&self, manual_reset: bool, signaled: bool) -> Result<EventId, DriverError> {
        let mut desc = EventDescriptor::signal();
        if manual_reset {
            desc = desc.manual();
        }
        desc.signaled = signaled;
        let h = self.kfd.create_event(&desc)?;
        let mut st = self.state.write();
        if st.events.push(h).is_err() {
            drop(st);
            let _ = self.kfd.destroy_event(h);
            return Err(DriverError::CapacityExhausted("event"));
        }
        Ok(EventId(h.to_raw()))
    }

    fn destroy_event(&self, event: EventId) -> Result<(), DriverError> {
        let h = EventHandle::from_raw(event.0).ok_or(DriverError::InvalidHandle)?;
        {
            let mut st = self.state.write();
            let i = st.events.iter().position(|e| *e == h).ok_or(DriverError::InvalidHandle)?;
            st.events.swap_remove(i);
        }
        Ok(self.kfd.destroy_event(h)?)
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
        let mut set = crate::event::WaitSet::<{ crate::event::MAX_WAIT_EVENTS }>::new();
        for e in events {
            let h = EventHandle::from_raw(e.0).ok_or(DriverError::InvalidHandle)?;
            set.push(h).map_err(|_| DriverError::InvalidArgument("too many events"))?;
        }
        let mode = if all { crate::event::WaitMode::All } else { crate::event::WaitMode::Any };
        match self.kfd.wait_events(&mut set, mode, timeout(timeout_ns))? {
            WaitResult::Complete => {
                let first = (0..events.len())
                    .find(|i| set.fired(*i) == crate::event::Fired::Yes)
                    .unwrap_or(0);
                Ok(Waited::Done(i64::try_from(first).unwrap_or(0)))
            }
            WaitResult::TimedOut => Ok(Waited::TimedOut),
        }
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
