//! [`HostDriver`]: the host-CPU [`Driver`] — CPU agents over system memory, executing AQL
//! packets on host threads.
//!
//! The same application code that runs on the simulator's GPUs runs here: a host kernel
//! registered in a [`KernelRegistry`] (the one the simulator uses, possibly the very same
//! registry) runs once per work-group of a kernel-dispatch packet submitted to a CPU agent's
//! AQL queue, with the same [`KernelCtx`].
//!
//! # How it works
//! - **Agents**: one CPU agent per NUMA node with CPUs (`/sys/devices/system/node/node*/cpulist`),
//!   else one agent with every core; the CPU's maximum clock from cpufreq. Each agent has a
//!   fine-grained system-memory region and a kernarg region, both host-accessible and
//!   allocatable (page granule), sized by the node's (or the machine's) `MemTotal`.
//! - **Memory**: page-aligned, zeroed host memory (shared anonymous mappings, so an address
//!   stays valid until the last view of it goes, even when freed while a kernel still runs),
//!   recorded in a memory table — the same [`GpuVm`] implementation the
//!   simulator's unit tests use — through which kernels, barriers and signal completions
//!   resolve addresses; an address outside every allocation faults, as on a GPU. Registered
//!   application memory joins the table (device address = host address). Mapping is a no-op.
//! - **Queues**: the ring and its `amd_queue_t` live in host memory; submission is core's
//!   multi-producer AQL protocol, whose doorbell wakes the queue's worker thread — the
//!   simulator's command processor ([`CpMode::Threaded`]), which
//!   executes kernel dispatches, barrier-AND/OR and completes signals exactly as on a simulated
//!   GPU. PM4 indirect buffers and agent-dispatch packets stop the queue (a CPU agent has no
//!   PM4 engine, and there is no agent-function table). A fault stops the queue and runs its
//!   error callback with [`ErrorKind::DeviceFault`]. 0 % pauses a queue, more resumes it.
//! - **Copies**: a DMA thread per agent copies between host buffers (`memmove` semantics), then
//!   stores 0 into the completion signal.
//! - **Signals**: `amd_signal_t`s in a host-memory pool carved by core's [`SubAllocator`]
//!   (the handle is the address); waits spin for [`HOST_SPIN_NS`], then sleep on the processors'
//!   progress notifier, which every packet completion, copy and [`Driver::signal_store`] wakes.
//! - **Events**: CPU events (auto/manual reset, waits for any or all) on a mutex and condvar.
//! - **Clocks**: as amdkfd answers for a node without a GPU: `gpu` 0, `cpu` and `system` the
//!   monotonic clock in ns, frequency 1 GHz.
//!
//! [`SubAllocator`]: hsakmt_core::driver::SubAllocator

mod events;
mod memory;
mod queue;
mod system;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use hsakmt_core::code_object::{AgentTarget, CodeObject};
use hsakmt_core::device::SignalCondition;
use hsakmt_core::driver::agent::{MAX_QUEUE_PACKETS, MIN_QUEUE_PACKETS};
use hsakmt_core::driver::{
    AgentFeatures, AgentId, AgentInfo, AgentKind, Buffer, Capabilities, ClockCounters, CodeImage,
    Driver, DriverError, DriverId, DriverKind, EventId, QueueId, QueueParams, RegionId, RegionInfo,
    RegionKind, Regions, SignalId, SystemInfo, Waited,
};
use hsakmt_core::error::ErrorKind;
use hsakmt_core::memory::svm_attributes::SvmAttribute;
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::aql::PacketWords;
use hsakmt_core::queue::ring::RingError;
use hsakmt_core::queue::signal::{Signal, SignalKind};
use hsakmt_core::slot_table::SlotTable;
use hsakmt_hostmem::HostMapping;

pub use events::MAX_HOST_EVENTS;
pub use memory::{HOST_PAGE, MAX_HOST_SIGNALS};

use crate::gpu::kernel::{KernelCtx, KernelFault, KernelRegistry};
use crate::gpu::vm::{GpuVm, HostVm};
use crate::gpu::{CpConfig, CpMode, GpuFacts, GpuModel, QueueFault, QueueState};
use crate::mapping::SimMapping;
use events::{Events, deadline};
use memory::{Buffers, SignalPool, new_mapping};
use queue::{DOORBELL_BYTES, DmaEngine, HostHooks, HostQueue, processor_priority};

/// Most AQL queues a host driver runs at once.
pub const MAX_HOST_QUEUES: usize = 64;
/// How long a signal wait spins before it sleeps, in ns.
pub const HOST_SPIN_NS: u64 = 20_000;
/// The longest sleep of an idle host queue processor between two looks at its doorbell.
const HOST_DOORBELL_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// `CLOCK_MONOTONIC` in ns: the CPU and system counters of a node without a GPU.
fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let (s, ns) = (u64::try_from(t.tv_sec).unwrap_or(0), u64::try_from(t.tv_nsec).unwrap_or(0));
    s.saturating_mul(1_000_000_000).saturating_add(ns)
}

/// The processors' device id for every CPU agent (`KernelCtx::gpu_id` is 0, as a CPU node's
/// gpu_id is).
const CPU_DEVICE: u32 = 0;

struct Agent {
    info: AgentInfo,
    regions: Regions,
}

struct State {
    initialized: bool,
    agents: Vec<Agent>,
    buffers: Buffers,
    queues: SlotTable<Arc<HostQueue>, MAX_HOST_QUEUES>,
    next_qid: u32,
    doorbells: Option<SimMapping>,
    dma: HashMap<u32, DmaEngine>,
}

/// The host-CPU driver.
///
/// Build it with [`HostDriver::new`] (or [`HostDriver::with_kernels`] to share a registry with
/// a [`SimPlatform`](crate::SimPlatform)), register host kernels with
/// [`HostDriver::register_kernel`], then use it through the [`Driver`] trait.
///
/// ```
/// use hsakmt_core::device::SignalCondition;
/// use hsakmt_core::driver::{Driver, DriverId, QueueParams, Waited};
/// use hsakmt_core::queue::aql::{AqlPacket, KernelDispatch};
/// use hsakmt_sim::HostDriver;
///
/// let host = HostDriver::new(DriverId(0));
/// // out[i] = i * i, one work-item per element; the kernarg segment holds `out`.
/// let square = host.register_kernel("square", |ctx| {
///     let out = ctx.kernarg_u64(0)?;
///     for [x, _, _] in ctx.work_items() {
///         ctx.store_u32(out + 4 * u64::from(x), x * x)?;
///     }
///     Ok(())
/// });
/// let d: &dyn Driver = &host;
/// d.init()?;
/// let cpu = d.agent(0).unwrap().id;
/// let [memory, kernarg] = [0, 1].map(|i| d.regions(cpu).unwrap()[i].id);
/// let out = d.allocate(memory, 4 * 100)?.addr;
/// let args = d.allocate(kernarg, 8)?.addr;
/// d.write(args, &out.to_ne_bytes())?;
/// let done = d.create_signal(1)?;
/// let queue = d.create_queue(cpu, &QueueParams::default())?;
/// let mut k = KernelDispatch::linear(square, 100, 32);
/// (k.kernarg_address, k.completion_signal) = (args, done.0);
/// d.submit(queue, &[AqlPacket::KernelDispatch(k).to_words().unwrap()])?;
/// assert_eq!(d.signal_wait(done, SignalCondition::Eq(0), u64::MAX)?, Waited::Done(0));
/// let mut last = [0u8; 4];
/// d.read(out + 4 * 99, &mut last)?;
/// assert_eq!(u32::from_ne_bytes(last), 99 * 99);
/// d.shutdown()?;
/// # Ok::<(), hsakmt_core::driver::DriverError>(())
/// ```
pub struct HostDriver {
    id: DriverId,
    root: PathBuf,
    kernels: KernelRegistry,
    vm: Arc<HostVm>,
    hooks: Arc<HostHooks>,
    model: GpuModel,
    state: RwLock<State>,
    signals: Mutex<SignalPool>,
    events: Events,
    /// Threads inside [`Driver::signal_wait`] past the handle check (see
    /// [`HostDriver::signal_waiters`]).
    signal_waiters: AtomicUsize,
}

impl fmt::Debug for HostDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostDriver")
            .field("id", &self.id)
            .field("agents", &self.agent_count())
            .field("memory_table", &self.vm.len())
            .finish_non_exhaustive()
    }
}

fn backoff(round: &mut u32) {
    *round = round.saturating_add(1);
    match *round {
        0..64 => core::hint::spin_loop(),
        64..128 => std::thread::yield_now(),
        _ => std::thread::sleep(Duration::from_micros(20)),
    }
}

impl HostDriver {
    /// A driver with a kernel registry of its own; `id` is the id its agents report (its
    /// position in a [`Registry`](hsakmt_core::driver::Registry)).
    #[must_use]
    pub fn new(id: DriverId) -> Self {
        Self::with_kernels(id, KernelRegistry::new())
    }

    /// A driver running the host kernels of `kernels` (share it with
    /// [`SimBuilder::kernels`](crate::SimBuilder::kernels) and one registration serves both).
    #[must_use]
    pub fn with_kernels(id: DriverId, kernels: KernelRegistry) -> Self {
        let vm = Arc::new(HostVm::default());
        let hooks = Arc::new(HostHooks::default());
        let config = CpConfig {
            mode: CpMode::Threaded,
            idle_spin: crate::DEFAULT_CP_IDLE_SPIN,
            // Host queues are rung through the doorbell mapping (core's producers), which wakes
            // the processor: the poll is only a fallback.
            doorbell_poll: HOST_DOORBELL_POLL,
            kernels: kernels.clone(),
            vendor_packets: false,
        };
        let model = GpuModel::new(
            vec![GpuFacts::doorbells_only(CPU_DEVICE, DOORBELL_BYTES)],
            vm.clone(),
            hooks.clone(),
            config,
        );
        HostDriver {
            id,
            root: PathBuf::from("/"),
            kernels,
            vm,
            hooks,
            model,
            state: RwLock::new(State {
                initialized: false,
                agents: Vec::new(),
                buffers: Buffers::default(),
                queues: SlotTable::new(),
                next_qid: 1,
                doorbells: None,
                dma: HashMap::new(),
            }),
            signals: Mutex::new(SignalPool::default()),
            events: Events::default(),
            signal_waiters: AtomicUsize::new(0),
        }
    }

    /// Reads the machine's facts below `root` instead of `/` (`<root>/sys/devices/system/…`,
    /// `<root>/proc/meminfo`): for tests and captured machines. Takes effect at
    /// [`Driver::init`].
    #[must_use]
    pub fn with_system_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.root = root.into();
        self
    }

    /// Registers a host kernel; returns the kernel-object address to put in kernel-dispatch
    /// packets. The queue's worker calls `kernel` once per work-group of each dispatch.
    pub fn register_kernel(
        &self,
        name: &str,
        kernel: impl Fn(&KernelCtx<'_>) -> Result<(), KernelFault> + Send + Sync + 'static,
    ) -> u64 {
        self.kernels.register(name, kernel)
    }

    /// The registry dispatches run kernels from.
    #[must_use]
    pub fn kernels(&self) -> KernelRegistry {
        self.kernels.clone()
    }

    /// Why `queue` stopped with an error, if it did.
    #[must_use]
    pub fn queue_fault(&self, queue: QueueId) -> Option<QueueFault> {
        self.live_queue(queue).ok()?.fault()
    }

    /// The processor's view of `queue`: activity, packets consumed, fault.
    #[must_use]
    pub fn queue_state(&self, queue: QueueId) -> Option<QueueState> {
        Some(self.live_queue(queue).ok()?.sim.state())
    }

    /// How many ranges the memory table holds (allocations, registrations, rings, the signal
    /// pool): 0 after [`Driver::shutdown`].
    #[must_use]
    pub fn memory_table_len(&self) -> usize {
        self.vm.len()
    }

    /// How many threads are waiting in [`Driver::signal_wait`] on a signal they resolved (a
    /// shutdown or the signal's destruction ends their wait with
    /// [`DriverError::InvalidHandle`]); for tests that must know a waiter is in place.
    #[must_use]
    pub fn signal_waiters(&self) -> usize {
        self.signal_waiters.load(Ordering::SeqCst)
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_state(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn signals(&self) -> MutexGuard<'_, SignalPool> {
        self.signals.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state, when initialised.
    fn ready(&self) -> Result<RwLockReadGuard<'_, State>, DriverError> {
        let st = self.read();
        if st.initialized { Ok(st) } else { Err(DriverError::NotInitialized) }
    }

    fn ready_mut(&self) -> Result<RwLockWriteGuard<'_, State>, DriverError> {
        let st = self.write_state();
        if st.initialized { Ok(st) } else { Err(DriverError::NotInitialized) }
    }

    fn agent_in<'s>(&self, st: &'s State, agent: AgentId) -> Result<&'s Agent, DriverError> {
        if agent.driver != self.id {
            return Err(DriverError::InvalidAgent(agent));
        }
        st.agents.get(agent.node as usize).ok_or(DriverError::InvalidAgent(agent))
    }

    fn live_queue(&self, queue: QueueId) -> Result<Arc<HostQueue>, DriverError> {
        let st = self.ready()?;
        st.queues.get(queue.into()).cloned().ok_or(DriverError::InvalidHandle)
    }

    fn signal_view(&self, signal: SignalId) -> Result<(HostMapping, usize), DriverError> {
        drop(self.ready()?);
        self.signals().view(signal)
    }

    /// [`Driver::signal_wait`] once the signal resolved and `seen` does not meet `condition`:
    /// spins a while, then sleeps until the condition holds, the signal ends or the timeout.
    fn wait_resolved(
        &self,
        s: &Signal<'_, HostMapping>,
        condition: SignalCondition,
        mut seen: i64,
        timeout_ns: u64,
    ) -> Result<Waited, DriverError> {
        // Destroying the signal (or shutting down) invalidates it and ends the wait.
        let live = || s.kind() == Ok(SignalKind::User);
        let deadline = deadline(timeout_ns);
        let spin_end = Instant::now() + Duration::from_nanos(HOST_SPIN_NS.min(timeout_ns));
        while Instant::now() < spin_end {
            core::hint::spin_loop();
            seen = s.load_acquire();
            if condition.holds(seen) {
                return Ok(Waited::Done(seen));
            }
        }
        let mut met = false;
        self.model.cp.progress.wait_until(
            || {
                seen = s.load_acquire();
                met = condition.holds(seen);
                met || !live()
            },
            deadline,
        );
        match (met, live()) {
            (true, _) => Ok(Waited::Done(seen)),
            (false, true) => Ok(Waited::TimedOut),
            (false, false) => Err(DriverError::InvalidHandle),
        }
    }

    fn build_agents(&self) -> Vec<Agent> {
        let facts = system::read_facts(&self.root);
        facts
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let id = AgentId { driver: self.id, node: u32::try_from(i).unwrap_or(u32::MAX) };
                let mut name = heapless::String::new();
                let _ = name.push_str("cpu");
                let info = AgentInfo {
                    id,
                    kind: AgentKind::Cpu,
                    name,
                    gfx: None,
                    gpu_id: 0,
                    compute_units: n.cores,
                    simd_count: 0,
                    wavefront_size: 0,
                    max_clock_mhz: facts.max_clock_mhz,
                    local_memory_bytes: 0,
                    queue_min_packets: MIN_QUEUE_PACKETS,
                    queue_max_packets: MAX_QUEUE_PACKETS,
                    compute_queues: 0,
                    sdma_engines: 0,
                    features: AgentFeatures::KERNEL_DISPATCH | AgentFeatures::AGENT_DISPATCH,
                };
                let mut regions = Regions::new();
                for (index, kind) in
                    [RegionKind::GlobalFineGrained, RegionKind::Kernarg].into_iter().enumerate()
                {
                    let _ = regions.push(RegionInfo {
                        id: RegionId { agent: id, index: u8::try_from(index).unwrap_or(u8::MAX) },
                        kind,
                        size: n.memory,
                        granule: HOST_PAGE,
                        alignment: HOST_PAGE,
                        host_accessible: true,
                        allocatable: true,
                    });
                }
                Agent { info, regions }
            })
            .collect()
    }
}

impl Drop for HostDriver {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

impl Driver for HostDriver {
    fn kind(&self) -> DriverKind {
        DriverKind::Host
    }

    fn init(&self) -> Result<(), DriverError> {
        if self.read().initialized {
            return Ok(());
        }
        let agents = self.build_agents();
        let sink = self
            .model
            .doorbells(CPU_DEVICE)
            .ok_or(DriverError::Failed { kind: ErrorKind::Inconsistent, what: "doorbells" })?;
        let page = new_mapping(HOST_PAGE)?;
        let mut st = self.write_state();
        if st.initialized {
            return Ok(());
        }
        st.agents = agents;
        sink.set_page(page.clone());
        st.doorbells = Some(SimMapping::doorbell(page, sink));
        st.initialized = true;
        Ok(())
    }

    fn shutdown(&self) -> Result<(), DriverError> {
        let (queues, dma) = {
            let mut st = self.write_state();
            if !st.initialized {
                return Ok(());
            }
            st.initialized = false;
            let mut queues: Vec<Arc<HostQueue>> = Vec::new();
            st.queues.drain(|q| queues.push(q));
            (queues, std::mem::take(&mut st.dma))
        };
        // Without the lock: an error callback running on a worker may call the driver.
        for q in queues {
            q.stop(&self.model, &self.vm);
            self.hooks.forget(q.qid);
        }
        for (_, mut engine) in dma {
            engine.stop();
        }
        {
            let mut st = self.write_state();
            let State { buffers, agents, doorbells, .. } = &mut *st;
            buffers.clear(&self.vm);
            agents.clear();
            *doorbells = None;
        }
        self.signals().clear(&self.vm);
        self.model.cp.progress.bump();
        self.events.clear();
        self.vm.clear();
        Ok(())
    }

    fn version(&self) -> (u32, u32) {
        (1, 0)
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::KERNEL_DISPATCH
            | Capabilities::HOST_KERNELS
            | Capabilities::DMA_COPY
            | Capabilities::REGISTER
    }

    fn agent_count(&self) -> usize {
        self.read().agents.len()
    }

    fn agent(&self, index: usize) -> Option<AgentInfo> {
        self.read().agents.get(index).map(|a| a.info.clone())
    }

    fn regions(&self, agent: AgentId) -> Result<Regions, DriverError> {
        let st = self.ready()?;
        Ok(self.agent_in(&st, agent)?.regions.clone())
    }

    fn system(&self) -> SystemInfo {
        // The host has no KFD topology: no OEM ids, no generation.
        SystemInfo {
            agents: u32::try_from(self.agent_count()).unwrap_or(u32::MAX),
            ..SystemInfo::default()
        }
    }

    fn peer_links(&self) -> u32 {
        0
    }

    fn nearest_cpu(&self, agent: AgentId) -> Option<AgentId> {
        let st = self.ready().ok()?;
        self.agent_in(&st, agent).ok().map(|a| a.info.id)
    }

    fn allocate(&self, region: RegionId, size: u64) -> Result<Buffer, DriverError> {
        let mut st = self.ready_mut()?;
        let info = self
            .agent_in(&st, region.agent)
            .map_err(|_| DriverError::InvalidRegion(region))?
            .regions
            .iter()
            .find(|r| r.id == region)
            .copied()
            .ok_or(DriverError::InvalidRegion(region))?;
        if !info.allocatable {
            return Err(DriverError::NotAllocatable(info.kind));
        }
        if info.size > 0 && size > info.size {
            return Err(DriverError::Failed {
                kind: ErrorKind::OutOfResources,
                what: "allocation larger than the region",
            });
        }
        let (addr, size) = st.buffers.allocate(&self.vm, region, size)?;
        Ok(Buffer { addr, size, region })
    }

    fn free(&self, addr: u64) -> Result<(), DriverError> {
        self.ready_mut()?.buffers.free(&self.vm, addr)
    }

    fn agent_target(&self, _agent: AgentId) -> Result<AgentTarget, DriverError> {
        Err(DriverError::NotSupported("code objects (CPU agents run registered host kernels)"))
    }

    fn load_code_object(
        &self,
        _object: &CodeObject<'_>,
        _agents: &[AgentId],
    ) -> Result<CodeImage, DriverError> {
        Err(DriverError::NotSupported("code objects (CPU agents run registered host kernels)"))
    }

    fn write(&self, addr: u64, src: &[u8]) -> Result<(), DriverError> {
        drop(self.ready()?);
        let r = self
            .vm
            .resolve(CPU_DEVICE, addr, src.len() as u64)
            .ok_or(DriverError::InvalidHandle)?;
        r.write(0, src).map_err(|_| DriverError::InvalidHandle)
    }

    fn read(&self, addr: u64, dst: &mut [u8]) -> Result<(), DriverError> {
        drop(self.ready()?);
        let r = self
            .vm
            .resolve(CPU_DEVICE, addr, dst.len() as u64)
            .ok_or(DriverError::InvalidHandle)?;
        r.read(0, dst).map_err(|_| DriverError::InvalidHandle)
    }

    fn register(&self, addr: u64, size: u64) -> Result<u64, DriverError> {
        self.ready_mut()?.buffers.register(&self.vm, addr, size)
    }

    fn deregister(&self, addr: u64) -> Result<(), DriverError> {
        self.ready_mut()?.buffers.deregister(&self.vm, addr)
    }

    fn map(&self, addr: u64, agents: &[AgentId]) -> Result<u64, DriverError> {
        let st = self.ready()?;
        for a in agents {
            self.agent_in(&st, *a)?;
        }
        st.buffers.get(addr).map(|_| addr).ok_or(DriverError::InvalidHandle)
    }

    fn unmap(&self, addr: u64) -> Result<(), DriverError> {
        self.ready()?.buffers.get(addr).map(|_| ()).ok_or(DriverError::InvalidHandle)
    }

    fn available_memory(&self, agent: AgentId) -> Result<u64, DriverError> {
        let size = {
            let st = self.ready()?;
            self.agent_in(&st, agent)?.regions.first().map_or(0, |r| r.size)
        };
        let available = system::mem_available(&self.root).ok_or(DriverError::NotSupported(
            "available memory (no MemAvailable in /proc/meminfo)",
        ))?;
        Ok(if size > 0 { available.min(size) } else { available })
    }

    fn export_dmabuf(&self, _addr: u64, _size: u64) -> Result<(u32, u64), DriverError> {
        Err(DriverError::NotSupported("dma-buf export"))
    }

    fn import_dmabuf(&self, _fd: u32, _agents: &[AgentId]) -> Result<Buffer, DriverError> {
        Err(DriverError::NotSupported("dma-buf import"))
    }

    fn svm_set(&self, _addr: u64, _size: u64, _attrs: &[SvmAttribute]) -> Result<(), DriverError> {
        Err(DriverError::NotSupported("SVM"))
    }

    fn svm_get(
        &self,
        _addr: u64,
        _size: u64,
        _attrs: &mut [SvmAttribute],
    ) -> Result<(), DriverError> {
        Err(DriverError::NotSupported("SVM"))
    }

    fn create_queue(&self, agent: AgentId, params: &QueueParams) -> Result<QueueId, DriverError> {
        let mut st = self.ready_mut()?;
        let info = &self.agent_in(&st, agent)?.info;
        if !params.packets.is_power_of_two()
            || params.packets < info.queue_min_packets
            || params.packets > info.queue_max_packets
        {
            return Err(DriverError::InvalidArgument("queue size (packets)"));
        }
        if params.percentage == 0 || params.percentage > 100 {
            return Err(DriverError::InvalidArgument("queue percentage"));
        }
        processor_priority(params.priority)?;
        let doorbells = st.doorbells.clone().ok_or(DriverError::NotInitialized)?;
        let key = st.queues.reserve().map_err(|_| DriverError::CapacityExhausted("queue"))?;
        let qid = st.next_qid;
        st.next_qid = st.next_qid.wrapping_add(1).max(1);
        let q = match HostQueue::start(
            &self.model,
            &self.vm,
            &doorbells,
            key.index(),
            qid,
            agent,
            params,
        ) {
            Ok(q) => q,
            Err(e) => {
                let _ = st.queues.release(key);
                return Err(e);
            }
        };
        let id = QueueId::from(key);
        self.hooks.watch(qid, id, params.error_callback);
        let _ = st.queues.fill(key, Arc::new(q));
        Ok(id)
    }

    fn submit(&self, queue: QueueId, packets: &[PacketWords]) -> Result<u64, DriverError> {
        if packets.is_empty() {
            return Err(DriverError::InvalidArgument("no packets"));
        }
        let q = self.live_queue(queue)?;
        let in_error =
            || DriverError::Failed { kind: ErrorKind::DeviceFault, what: "the queue is in error" };
        if q.fault().is_some() {
            return Err(in_error());
        }
        let slots = usize::try_from(q.producer.slots()).unwrap_or(usize::MAX);
        let mut first = None;
        for chunk in packets.chunks(slots) {
            let mut round = 0;
            let last = loop {
                match q.producer.try_submit_batch(chunk) {
                    Ok(last) => break last,
                    Err(RingError::Full) => {
                        // The ring drains only while the queue runs: give up when it stopped
                        // for good (an error, or destroyed meanwhile).
                        if q.fault().is_some() {
                            return Err(in_error());
                        }
                        drop(self.live_queue(queue)?);
                        backoff(&mut round);
                    }
                    Err(_) => return Err(DriverError::InvalidArgument("packets")),
                }
            };
            first.get_or_insert(last.wrapping_sub(chunk.len() as u64 - 1));
        }
        first.ok_or(DriverError::InvalidArgument("no packets"))
    }

    fn update_queue(
        &self,
        queue: QueueId,
        percentage: u8,
        priority: i8,
    ) -> Result<(), DriverError> {
        let q = self.live_queue(queue)?;
        if percentage > 100 {
            return Err(DriverError::InvalidArgument("queue percentage"));
        }
        let mut regs = q.sim.regs();
        regs.percentage = u32::from(percentage);
        regs.priority = processor_priority(priority)?;
        q.sim.update(regs, || {});
        Ok(())
    }

    fn set_cu_mask(&self, queue: QueueId, _mask: &[u32]) -> Result<(), DriverError> {
        drop(self.live_queue(queue)?);
        Err(DriverError::NotSupported("CU masks on CPU agents"))
    }

    fn destroy_queue(&self, queue: QueueId) -> Result<(), DriverError> {
        let q = self.ready_mut()?.queues.remove(queue.into()).ok_or(DriverError::InvalidHandle)?;
        // Without the lock: the worker may be running an error callback that calls the driver.
        q.stop(&self.model, &self.vm);
        self.hooks.forget(q.qid);
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
        let signal = self.signal_view(completion)?;
        let deps = deps.iter().map(|d| self.signal_view(*d)).collect::<Result<Vec<_>, _>>()?;
        let node = {
            let st = self.ready()?;
            let node = self.agent_in(&st, agent)?.info.id.node;
            if let Some(engine) = st.dma.get(&node) {
                return engine.copy(&self.vm, dst, src, bytes, deps, signal);
            }
            node
        };
        let mut st = self.ready_mut()?;
        let engine = match st.dma.entry(node) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(DmaEngine::start(self.model.cp.clone(), node)?),
        };
        engine.copy(&self.vm, dst, src, bytes, deps, signal)
    }

    fn create_signal(&self, initial: i64) -> Result<SignalId, DriverError> {
        drop(self.ready()?);
        self.signals().create(&self.vm, initial)
    }

    fn destroy_signal(&self, signal: SignalId) -> Result<(), DriverError> {
        drop(self.ready()?);
        self.signals().destroy(signal)?;
        // Waiters of the signal end.
        self.model.cp.progress.bump();
        Ok(())
    }

    fn signal_load(&self, signal: SignalId) -> Result<i64, DriverError> {
        let (memory, offset) = self.signal_view(signal)?;
        let s = Signal::new(&memory, offset).map_err(|_| DriverError::InvalidHandle)?;
        Ok(s.load_acquire())
    }

    fn signal_store(&self, signal: SignalId, value: i64) -> Result<(), DriverError> {
        let (memory, offset) = self.signal_view(signal)?;
        let s = Signal::new(&memory, offset).map_err(|_| DriverError::InvalidHandle)?;
        s.store_release(value);
        // Wakes signal waiters and queues blocked on a barrier.
        self.model.cp.progress.bump();
        Ok(())
    }

    fn signal_wait(
        &self,
        signal: SignalId,
        condition: SignalCondition,
        timeout_ns: u64,
    ) -> Result<Waited, DriverError> {
        let (memory, offset) = self.signal_view(signal)?;
        let s = Signal::new(&memory, offset).map_err(|_| DriverError::InvalidHandle)?;
        let seen = s.load_acquire();
        if condition.holds(seen) {
            return Ok(Waited::Done(seen));
        }
        self.signal_waiters.fetch_add(1, Ordering::SeqCst);
        let result = self.wait_resolved(&s, condition, seen, timeout_ns);
        self.signal_waiters.fetch_sub(1, Ordering::SeqCst);
        result
    }

    fn create_event(&self, manual_reset: bool, signaled: bool) -> Result<EventId, DriverError> {
        drop(self.ready()?);
        self.events.create(manual_reset, signaled)
    }

    fn destroy_event(&self, event: EventId) -> Result<(), DriverError> {
        drop(self.ready()?);
        self.events.destroy(event)
    }

    fn set_event(&self, event: EventId) -> Result<(), DriverError> {
        drop(self.ready()?);
        self.events.set(event)
    }

    fn reset_event(&self, event: EventId) -> Result<(), DriverError> {
        drop(self.ready()?);
        self.events.reset(event)
    }

    fn wait_events(
        &self,
        events: &[EventId],
        all: bool,
        timeout_ns: u64,
    ) -> Result<Waited, DriverError> {
        drop(self.ready()?);
        self.events.wait(events, all, timeout_ns)
    }

    fn clock_counters(&self, agent: AgentId) -> Result<ClockCounters, DriverError> {
        {
            let st = self.ready()?;
            self.agent_in(&st, agent)?;
        }
        let ns = monotonic_ns();
        Ok(ClockCounters { gpu: 0, cpu: ns, system: ns, system_frequency: 1_000_000_000 })
    }
}
