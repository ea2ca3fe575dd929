//! # hsakmt-sim
//!
//! The hsakmt-rs platform as an in-process model of amdkfd and a GPU, so every code path of
//! `hsakmt-core` runs without hardware. The topology comes from real machines' sysfs trees
//! ([`Profile`]s embedded from `platform-sim/profiles/`, or any directory).
//!
//! User queues run on a simulated command processor: `CREATE_QUEUE` and the other queue ioctls
//! are checked as amdkfd checks them, a doorbell write wakes the queue's processor (a plain store
//! to the doorbell page is found by polling), which executes AQL packets (kernel dispatches of
//! host kernels registered with [`SimPlatform::register_kernel`] and of gfx9 machine code — a
//! kernel object that is a kernel descriptor in GPU memory runs on the ISA interpreter, [`isa`]
//! —, barrier-AND/OR, PM4 indirect buffers), PM4 packets (including kfdtest's `SET_SH_REG` +
//! `DISPATCH_DIRECT` shaders) and SDMA packets (linear, broadcast and rectangular copies, fills,
//! writes, fences, traps, memory polls, atomics, timestamps, cache controls) on the process's
//! memory, completes signals and raises events; faults put the queue into error with the
//! kernel's exception code ([`QueueFault`]). [`CpMode::Threaded`] gives each queue a thread;
//! [`CpMode::Step`] runs queues only in [`SimPlatform::run_until_idle`], deterministically;
//! [`CpMode::OnWait`] also runs them when the process waits in `AMDKFD_IOC_WAIT_EVENTS`, so a
//! program that waits for its work issues the same ioctls on every run (what makes injected
//! faults reproducible: [`SimPlatform::inject`] arms one, [`SimPlatform::fault_record`] says
//! whether it fired).
//!
//! The same command processor also runs the host-CPU driver, [`HostDriver`]: a
//! [`Driver`](hsakmt_core::driver::Driver) whose CPU agents execute AQL queues on host threads
//! over host memory, so code written against the simulator's GPUs — host kernels in a
//! [`KernelRegistry`], which both can share — runs on the CPU unchanged.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod archive;
mod fault;

/// Unit tests count heap allocations (paths that must allocate nothing in steady state).
#[cfg(test)]
#[global_allocator]
static TEST_ALLOCATOR: hsakmt_hostmem::CountingAllocator = hsakmt_hostmem::CountingAllocator::new();

mod gpu;
mod hooks;
mod host;
pub mod isa;
mod kfd;
mod mapping;
mod process_maps;
mod profile;
mod sysfs;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hsakmt_core::error::Errno;
use hsakmt_core::event::{FaultFlags, MemoryError, MemoryFault, ResetCause, ResetType};
use hsakmt_core::topology::{READ_BUFFER, Topology};

pub use fault::{FaultId, FaultRecord, IoctlFault, Trigger};
pub use gpu::kernel::{KERNEL_OBJECT_BASE, KernelCtx, KernelFault, KernelRegistry};
pub use gpu::pm4::{
    PM4_ACQUIRE_MEM, PM4_DISPATCH_DIRECT, PM4_EVENT_WRITE, PM4_INDIRECT_BUFFER, PM4_NOP,
    PM4_RELEASE_MEM, PM4_SET_SH_REG, PM4_WAIT_REG_MEM, PM4_WRITE_DATA,
};
pub use gpu::vm::MemRange;
pub use gpu::watch::WatchAccess;
pub use gpu::{
    CpMode, DEFAULT_DOORBELL_POLL, IsaCount, QueueFault, QueueState, thread_engine_allocations,
    thread_engine_ns,
};
pub use hooks::{AddressWatch, DebugSnapshot};
pub use host::{
    HOST_PAGE, HOST_SPIN_NS, HostDriver, MAX_HOST_EVENTS, MAX_HOST_QUEUES, MAX_HOST_SIGNALS,
};
pub use kfd::files::FILE_FD_BASE;
pub use kfd::memory::{DOORBELL_SLICE, GpuMemoryUsage};
pub use kfd::{DeviceState, FALLBACK_VRAM, Privileges, RENDER_FD_BASE, thread_ioctl_allocations};
pub use mapping::SimMapping;
pub use profile::{
    DEFAULT_PROFILE, Profile, UnknownProfile, parse_file_path, profile_description, profile_names,
    relative_path,
};

/// KFD ioctl interface version the simulator reports unless configured otherwise (Linux 7.2/7.3).
pub const DEFAULT_KFD_VERSION: (u32, u32) = (1, 23);

/// Builder for a [`SimPlatform`].
#[derive(Debug, Clone)]
pub struct SimBuilder {
    profile: Option<Profile>,
    kfd_version: (u32, u32),
    env: HashMap<String, String>,
    inherit_env: bool,
    hidden_nodes: HashSet<u32>,
    closed_render_nodes: HashMap<u32, Errno>,
    device: DeviceState,
    cp: gpu::CpConfig,
    stale_pid: bool,
    privileges: kfd::Privileges,
}

/// How long an idle queue processor keeps polling before it sleeps (threaded mode).
pub const DEFAULT_CP_IDLE_SPIN: Duration = Duration::from_micros(50);

/// How many of the last raised event ids [`SimPlatform::raised_events`] keeps (a ring
/// allocated with the device, so raising events allocates nothing).
pub const RAISED_EVENTS_KEPT: usize = 4096;

impl Default for SimBuilder {
    fn default() -> Self {
        Self {
            profile: None,
            kfd_version: DEFAULT_KFD_VERSION,
            env: HashMap::new(),
            inherit_env: false,
            hidden_nodes: HashSet::new(),
            closed_render_nodes: HashMap::new(),
            device: DeviceState::Present,
            cp: gpu::CpConfig::new(CpMode::Threaded, DEFAULT_CP_IDLE_SPIN),
            stale_pid: false,
            privileges: kfd::Privileges::default(),
        }
    }
}

impl SimBuilder {
    /// Uses `profile` as the topology (default: [`DEFAULT_PROFILE`]).
    #[must_use]
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = Some(profile);
        self
    }

    /// The KFD ioctl version `AMDKFD_IOC_GET_VERSION` answers (default 1.23).
    #[must_use]
    pub fn kfd_version(mut self, major: u32, minor: u32) -> Self {
        self.kfd_version = (major, minor);
        self
    }

    /// Sets an environment variable as the library sees it (the process environment is not
    /// consulted unless [`SimBuilder::inherit_env`] is set).
    #[must_use]
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }

    /// Also look variables up in the real process environment (after the ones set here).
    #[must_use]
    pub fn inherit_env(mut self, inherit: bool) -> Self {
        self.inherit_env = inherit;
        self
    }

    /// Makes every file of node `node` fail with `EPERM`, as the kernel does for a GPU the
    /// caller's device cgroup hides (a container).
    #[must_use]
    pub fn hide_node(mut self, node: u32) -> Self {
        self.hidden_nodes.insert(node);
        self
    }

    /// Makes opening `/dev/dri/renderD<minor>` fail with `errno` (`ENOENT`: a container that
    /// does not expose it, `EACCES`: a user outside the render group), while the kernel still
    /// lists the GPU.
    #[must_use]
    pub fn render_node_unavailable(mut self, minor: u32, errno: Errno) -> Self {
        self.closed_render_nodes.insert(minor, errno);
        self
    }

    /// Simulates a machine where `/dev/kfd` is missing or not permitted.
    #[must_use]
    pub fn device(mut self, state: DeviceState) -> Self {
        self.device = state;
        self
    }

    /// How the simulated command processors run (default [`CpMode::Threaded`]).
    #[must_use]
    pub fn cp_mode(mut self, mode: CpMode) -> Self {
        self.cp.mode = mode;
        self
    }

    /// How long an idle queue processor polls before sleeping (threaded mode; default
    /// [`DEFAULT_CP_IDLE_SPIN`]). Longer lowers doorbell-to-start latency at the cost of CPU.
    #[must_use]
    pub fn cp_idle_spin(mut self, spin: Duration) -> Self {
        self.cp.idle_spin = spin;
        self
    }

    /// The longest an idle queue processor sleeps before it looks at its doorbell again
    /// (threaded mode; default [`DEFAULT_DOORBELL_POLL`]): how late a doorbell written with a
    /// plain store — not through the mapping's doorbell call — is noticed when the queue was
    /// idle for long. Shorter costs more wake-ups of idle processors.
    #[must_use]
    pub fn cp_doorbell_poll(mut self, longest: Duration) -> Self {
        self.cp.doorbell_poll = longest;
        self
    }

    /// Gives the platform a process-id cache that a fork does not wipe (a plain cache, or a
    /// child made by `clone` that skips fork handlers — the case libhsakmt guards against): the
    /// library then learns of a fork only when the kernel answers `EBADF`, which refreshes the
    /// cache (as libhsakmt re-reads `getpid` on `EBADF`). The simulated kernel always knows the
    /// real caller. Default: off (the cache is wiped on fork).
    #[must_use]
    pub fn stale_process_id(mut self, stale: bool) -> Self {
        self.stale_pid = stale;
        self
    }

    /// Runs dispatches with the host kernels of `kernels` (default: a registry of its own).
    /// Share one registry with a [`HostDriver`] and a kernel registered once has the same
    /// kernel-object address on both.
    #[must_use]
    pub fn kernels(mut self, kernels: KernelRegistry) -> Self {
        self.cp.kernels = kernels;
        self
    }

    /// The simulated process's privileges (default: none — an ordinary user process).
    #[must_use]
    pub fn privileges(mut self, privileges: Privileges) -> Self {
        self.privileges = privileges;
        self
    }

    /// Builds the platform. The simulated GPUs are the accessible GPU nodes of the profile.
    #[must_use]
    pub fn build(self) -> SimPlatform {
        let mut topology = empty_topology();
        let mut sim = SimPlatform {
            profile: Arc::new(self.profile.unwrap_or_else(Profile::default_profile)),
            kfd_version: self.kfd_version,
            env: Arc::new(self.env),
            inherit_env: self.inherit_env,
            sysfs_state: Arc::new(std::sync::RwLock::new(sysfs::SysfsState {
                hidden: self.hidden_nodes,
                generation_bump: 0,
                closed_render_nodes: self.closed_render_nodes,
            })),
            epoch: Instant::now(),
            stale_pid: self.stale_pid.then(|| Arc::new(std::sync::atomic::AtomicU32::new(0))),
            device_calls: Arc::new(std::sync::atomic::AtomicU64::new(0)),
            kfd: Arc::new(kfd::KfdModel::new(
                &topology,
                self.kfd_version,
                DeviceState::Absent,
                self.cp.clone(),
                self.privileges,
            )),
        };
        // The sim reads its own profile with the library's parser; a profile it cannot parse
        // (none of the embedded ones) simply has no GPUs. The kernel reads no environment:
        // the process's overrides (`HSA_OVERRIDE_GFX_VERSION`, ...) do not change its GPUs.
        let mut buf = vec![0u8; READ_BUFFER];
        if topology.refresh(&sim, &KernelHost(&sim), &mut buf).is_err() {
            topology.clear();
        }
        sim.kfd = Arc::new(kfd::KfdModel::new(
            &topology,
            self.kfd_version,
            self.device,
            self.cp,
            self.privileges,
        ));
        sim
    }
}

/// An empty snapshot in a box (its own function, so that its stack is released at once).
#[inline(never)]
fn empty_topology() -> Box<Topology> {
    // Debug builds build the snapshot in several stack temporaries before boxing it; copying a
    // compile-time constant costs one. Release builds allocate first and build it there, where
    // a constant would only add its size to the binary.
    #[cfg(debug_assertions)]
    let topo = Box::new(const { Topology::new() });
    #[cfg(not(debug_assertions))]
    let topo = Box::write(Box::new_uninit(), Topology::new());
    topo
}

/// The simulated platform: sysfs topology, host services and (in later layers) the emulated
/// `/dev/kfd`.
#[derive(Debug, Clone)]
pub struct SimPlatform {
    profile: Arc<Profile>,
    kfd_version: (u32, u32),
    env: Arc<HashMap<String, String>>,
    inherit_env: bool,
    sysfs_state: Arc<std::sync::RwLock<sysfs::SysfsState>>,
    epoch: Instant,
    /// The fork-surviving process-id cache of [`SimBuilder::stale_process_id`].
    stale_pid: Option<Arc<std::sync::atomic::AtomicU32>>,
    /// Calls of the [`KfdDevice`](hsakmt_core::platform::KfdDevice) methods (see
    /// [`SimPlatform::device_calls`]).
    device_calls: Arc<std::sync::atomic::AtomicU64>,
    kfd: Arc<kfd::KfdModel>,
}

impl SimPlatform {
    /// A builder with the defaults (MI308X profile, KFD 1.23, empty environment).
    #[must_use]
    pub fn builder() -> SimBuilder {
        SimBuilder::default()
    }

    /// The simulator over the default profile with every other setting at its default.
    #[must_use]
    pub fn new() -> Self {
        SimBuilder::default().build()
    }

    /// The topology profile.
    #[must_use]
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The KFD version reported by `GET_VERSION`.
    #[must_use]
    pub fn kfd_version(&self) -> (u32, u32) {
        self.kfd_version
    }

    /// The gpu_ids of the simulated GPUs, in node order.
    #[must_use]
    pub fn gpu_ids(&self) -> Vec<u32> {
        self.kfd.gpus.iter().map(|g| g.gpu_id).collect()
    }

    /// Arms an ioctl fault; [`SimPlatform::fault_record`] later says what became of it.
    pub fn inject(&self, fault: IoctlFault) -> FaultId {
        self.kfd.faults.arm(fault)
    }

    /// The calls fault `id` saw and how often it fired (kept after it fired or was cleared).
    #[must_use]
    pub fn fault_record(&self, id: FaultId) -> Option<FaultRecord> {
        self.kfd.faults.record(id)
    }

    /// Disarms every ioctl fault.
    pub fn clear_faults(&self) {
        self.kfd.faults.clear();
    }

    /// How many times ioctl number `nr` was issued (including failed and injected ones).
    #[must_use]
    pub fn ioctl_calls(&self, nr: u32) -> u64 {
        self.kfd.faults.calls(nr)
    }

    /// How many ioctls were issued in all.
    #[must_use]
    pub fn total_ioctl_calls(&self) -> u64 {
        self.kfd.faults.total_calls()
    }

    /// How many injected faults fired.
    #[must_use]
    pub fn injected_faults(&self) -> u64 {
        self.kfd.faults.injected()
    }

    /// How many times `/dev/kfd` was opened (a reopen after close counts again).
    #[must_use]
    pub fn device_opens(&self) -> u32 {
        self.kfd.opens()
    }

    /// Whether `AMDKFD_IOC_ACQUIRE_VM` bound `gpu_id`'s VM in the current session.
    #[must_use]
    pub fn vm_acquired(&self, gpu_id: u32) -> bool {
        self.kfd.vm_acquired(gpu_id)
    }

    /// Registers a host kernel and returns the kernel-object address to put in AQL dispatch
    /// packets. The command processor calls `kernel` once per work-group of each dispatch.
    pub fn register_kernel(
        &self,
        name: &str,
        kernel: impl Fn(&KernelCtx<'_>) -> Result<(), KernelFault> + Send + Sync + 'static,
    ) -> u64 {
        self.kfd.gpu.cp.kernels.register(name, kernel)
    }

    /// The name a kernel-object address was registered under.
    #[must_use]
    pub fn kernel_name(&self, kernel_object: u64) -> Option<String> {
        self.kfd.gpu.cp.kernels.name(kernel_object)
    }

    /// The registry dispatches run kernels from (a handle: registering through it is
    /// [`SimPlatform::register_kernel`]).
    #[must_use]
    pub fn kernels(&self) -> KernelRegistry {
        self.kfd.gpu.cp.kernels.clone()
    }

    /// Runs every queue until none can make progress (blocked barriers and polls, empty or
    /// disabled queues); returns the packets consumed. The way to drive [`CpMode::Step`]; in
    /// threaded mode it runs alongside the processor threads.
    pub fn run_until_idle(&self) -> u64 {
        self.kfd.gpu.run_until_idle()
    }

    /// Ids of the queues the simulated kernel holds.
    #[must_use]
    pub fn queue_ids(&self) -> Vec<u32> {
        self.kfd.gpu.queue_ids()
    }

    /// What the GPUs' ISA interpreter ran so far (every queue, every dispatch).
    #[must_use]
    pub fn isa_count(&self) -> IsaCount {
        self.kfd.gpu.isa_counters()
    }

    /// Why queue `queue_id` stopped with an error, if it did.
    #[must_use]
    pub fn queue_fault(&self, queue_id: u32) -> Option<QueueFault> {
        self.kfd.gpu.queue(queue_id).and_then(|q| q.fault())
    }

    /// What the simulated hardware holds for queue `queue_id`.
    #[must_use]
    pub fn queue_state(&self, queue_id: u32) -> Option<QueueState> {
        self.kfd.gpu.queue(queue_id).map(|q| q.state())
    }

    /// The CU mask last set on queue `queue_id`.
    #[must_use]
    pub fn queue_cu_mask(&self, queue_id: u32) -> Option<Vec<u32>> {
        self.kfd.gpu.cu_mask(queue_id)
    }

    /// The queue holding `gpu_id`'s GWS.
    #[must_use]
    pub fn gws_owner(&self, gpu_id: u32) -> Option<u32> {
        self.kfd.gpu.gws_owner(gpu_id)
    }

    /// The trap handler `(tba, tma)` set on `gpu_id`.
    #[must_use]
    pub fn trap_handler(&self, gpu_id: u32) -> Option<(u64, u64)> {
        self.kfd.gpu.trap_handler(gpu_id)
    }

    /// Event ids the command processors raised (mailbox writes, traps, queue-error events),
    /// in order: the last [`RAISED_EVENTS_KEPT`].
    #[must_use]
    pub fn raised_events(&self) -> Vec<u32> {
        self.kfd
            .cp_events
            .signaled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .copied()
            .collect()
    }

    /// GPU page faults `(gpu_id, address, write)` the command processors raised.
    #[must_use]
    pub fn memory_faults(&self) -> Vec<(u32, u64, bool)> {
        self.kfd
            .cp_events
            .memory_faults
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Memory accounting of GPU `gpu_id` (`None` for an unknown gpu_id).
    #[must_use]
    pub fn memory_usage(&self, gpu_id: u32) -> Option<GpuMemoryUsage> {
        kfd::lock(&self.kfd.memory).usage(gpu_id)
    }

    /// Live buffer objects, on every GPU.
    #[must_use]
    pub fn buffer_count(&self) -> usize {
        kfd::lock(&self.kfd.memory).bos.len()
    }

    /// The gpu_ids buffer `handle` is mapped on, in mapping order (`None` for no such buffer).
    #[must_use]
    pub fn buffer_mappings(&self, handle: u64) -> Option<Vec<u32>> {
        kfd::lock(&self.kfd.memory).bos.get(&handle).map(|b| b.mapped.clone())
    }

    /// The `KFD_IOC_ALLOC_MEM_FLAGS_*` buffer `handle` was created with.
    #[must_use]
    pub fn buffer_flags(&self, handle: u64) -> Option<u32> {
        kfd::lock(&self.kfd.memory).bos.get(&handle).map(|b| b.flags)
    }

    /// How many calls the library made to the simulated device, in all (every
    /// [`KfdDevice`](hsakmt_core::platform::KfdDevice) method: ioctls, opens and closes,
    /// mappings, VA reservations — what are system calls on a real machine). Clones share it.
    #[must_use]
    pub fn device_calls(&self) -> u64 {
        self.device_calls.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many times a buffer was mapped on a device, in all (a resumed `MAP_MEMORY_TO_GPU`
    /// must not map a device twice).
    #[must_use]
    pub fn device_map_count(&self) -> u64 {
        kfd::lock(&self.kfd.memory).device_maps
    }

    /// How many GPUs' doorbell pages of the process the command processors watch for plain
    /// stores (views of the process's address space, all forgotten when `/dev/kfd` closes).
    #[must_use]
    pub fn doorbell_pages(&self) -> usize {
        self.kfd.gpu.doorbell_pages()
    }

    /// Live simulated dma-bufs.
    #[must_use]
    pub fn dmabuf_count(&self) -> usize {
        kfd::lock(&self.kfd.memory).dmabuf_count()
    }

    /// Makes the next `MAP_MEMORY_TO_GPU` map `devices` devices and then fail with `errno`,
    /// reporting the progress in `n_success` — `EINTR` is a signal arriving mid-call (the caller
    /// must resume from `n_success`), anything else a failure on the next device.
    pub fn fail_next_map_after(&self, devices: u32, errno: Errno) {
        kfd::lock(&self.kfd.memory).map_failure = Some((devices, errno));
    }

    /// Marks the buffer containing `va` as used by a queue (as `CREATE_QUEUE` does for its ring
    /// and other buffers): unmapping and freeing it then fail with `EBUSY`. Returns its handle.
    pub fn pin_buffer(&self, va: u64) -> Option<u64> {
        let mut m = kfd::lock(&self.kfd.memory);
        let h = m.buffer_at(va)?;
        if let Some(b) = m.bos.get_mut(&h) {
            b.queue_pins += 1;
        }
        Some(h)
    }

    /// Releases one queue's use of buffer `handle`.
    pub fn unpin_buffer(&self, handle: u64) {
        if let Some(b) = kfd::lock(&self.kfd.memory).bos.get_mut(&handle) {
            b.queue_pins = b.queue_pins.saturating_sub(1);
        }
    }

    /// Sets how many user queues the process has (`SET_XNACK_MODE` fails with `EBUSY` while
    /// there are any).
    pub fn set_live_queues(&self, queues: u32) {
        kfd::lock(&self.kfd.memory).live_queues = queues;
    }

    /// Whether XNACK is on for the simulated process.
    #[must_use]
    pub fn xnack_enabled(&self) -> bool {
        kfd::lock(&self.kfd.memory).xnack
    }

    /// The scratch backing address `SET_SCRATCH_BACKING_VA` programmed for `gpu_id` (in the
    /// kernel's units: the value of `va_addr`).
    #[must_use]
    pub fn scratch_backing(&self, gpu_id: u32) -> Option<u64> {
        kfd::lock(&self.kfd.memory).scratch.get(&gpu_id).copied()
    }

    /// Host memory behind `[va, va + len)` as GPU `gpu_id` sees it, and the offset of `va` in
    /// it: what the simulated GPU reads and writes.
    ///
    /// # Errors
    /// `EFAULT` when the range is not inside one buffer mapped on that GPU (a GPU memory fault).
    pub fn resolve(&self, gpu_id: u32, va: u64, len: u64) -> Result<(SimMapping, u64), Errno> {
        let (memory, offset, _) = kfd::lock(&self.kfd.memory).resolve(gpu_id, va, len)?;
        Ok((SimMapping::new(memory), offset))
    }
}

/// Everything the simulated kernel holds for the process, in one comparable value: what a
/// fault sweep or a stress test checks returns to its baseline ([`SimPlatform::accounting`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimAccounting {
    /// Whether `/dev/kfd` is open by the calling process.
    pub open: bool,
    /// Live buffer objects, on every GPU.
    pub buffers: usize,
    /// Buffer mappings (a buffer mapped on `n` GPUs counts `n`).
    pub mappings: usize,
    /// VRAM bytes allocated, on every GPU.
    pub vram_bytes: u64,
    /// System-memory bytes (GTT and user-pointer buffers), on every GPU.
    pub system_bytes: u64,
    /// Buffers a queue uses (ring, pointers, EOP, context-save area).
    pub pinned_buffers: usize,
    /// Live dma-bufs.
    pub dmabufs: usize,
    /// SVM ranges with attributes.
    pub svm_ranges: usize,
    /// GPUs with a scratch backing programmed.
    pub scratch_backings: usize,
    /// User queues.
    pub queues: usize,
    /// Hung queues ([`SimPlatform::hang_queue`]).
    pub hung_queues: usize,
    /// Events.
    pub events: usize,
    /// Threads blocked in `WAIT_EVENTS`.
    pub event_waiters: usize,
    /// Whether XNACK is on.
    pub xnack: bool,
}

impl SimPlatform {
    /// The simulated kernel's accounting of the process (see [`SimAccounting`]).
    #[must_use]
    pub fn accounting(&self) -> SimAccounting {
        let (t, xnack, dmabufs) = {
            let m = kfd::lock(&self.kfd.memory);
            (m.totals(), m.xnack, m.dmabuf_count())
        };
        let queues = self.kfd.gpu.queue_ids();
        let hung_queues =
            queues.iter().filter(|q| self.kfd.gpu.queue(**q).is_some_and(|q| q.is_hung())).count();
        SimAccounting {
            open: self.kfd.is_open_by_caller(),
            buffers: t.buffers,
            mappings: t.mappings,
            vram_bytes: t.vram_bytes,
            system_bytes: t.system_bytes,
            pinned_buffers: t.pinned,
            dmabufs,
            svm_ranges: t.svm_ranges,
            scratch_backings: t.scratch_backings,
            queues: queues.len(),
            hung_queues,
            events: self.kfd.events.count(),
            event_waiters: self.kfd.events.sleeping(),
            xnack,
        }
    }

    /// Hangs queue `queue_id`: the command processor stops consuming it (doorbells still
    /// record) until [`SimPlatform::release_queue`]. While it is hung the kernel cannot preempt
    /// it: `DESTROY_QUEUE` removes it anyway but fails with `ETIME` and `UPDATE_QUEUE` fails
    /// with `ETIME`, each resetting the GPU (its HW-exception events are raised, cause GPU
    /// hang), as amdkfd does when the HWS does not answer. Returns whether the queue exists.
    pub fn hang_queue(&self, queue_id: u32) -> bool {
        self.kfd.gpu.hang_queue(queue_id)
    }

    /// Releases a hung queue: it resumes at its read index. Returns whether the queue exists.
    pub fn release_queue(&self, queue_id: u32) -> bool {
        self.kfd.gpu.release_queue(queue_id)
    }

    /// A wave of queue `queue_id` faults on a memory access at `address`: the queue stops with
    /// `EC_QUEUE_WAVE_MEMORY_VIOLATION` (its error payload and error event are written, as for a
    /// kernel touching unmapped memory), and the process's memory events receive the address.
    /// Returns whether the queue existed and was not already in error.
    pub fn fault_queue_memory(&self, queue_id: u32, address: u64) -> bool {
        let ec = hsakmt_core::uapi::EC_QUEUE_WAVE_MEMORY_VIOLATION;
        self.kfd.gpu.fault_queue(queue_id, ec, Some(address))
    }

    /// Queue `queue_id` stops with exception `exception` (an `EC_QUEUE_*` code), as if a wave
    /// raised it: the error payload and error event are written. Returns whether the queue
    /// existed and was not already in error.
    pub fn fault_queue(&self, queue_id: u32, exception: u32) -> bool {
        self.kfd.gpu.fault_queue(queue_id, exception, None)
    }

    /// GPUs reset because a hung queue could not be preempted, in order.
    #[must_use]
    pub fn gpu_resets(&self) -> Vec<u32> {
        self.kfd.cp_events.resets.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

/// The events side of the simulated kernel and GPU: what the simulated command processor and
/// the fault injector use, and what tests inspect.
impl SimPlatform {
    /// The simulated GPU raises signal event `id` the way a `RELEASE_MEM` with an interrupt
    /// does: it writes the id into the event's mailbox and interrupts; the kernel acknowledges
    /// the mailbox and sets the event. Returns whether an event was set.
    pub fn gpu_signal_event(&self, id: u32) -> bool {
        self.kfd.events.write_mailbox(id, u64::from(id)) && self.kfd.events.interrupt(Some(id)) > 0
    }

    /// The completion side of an HSA signal with an event mailbox
    /// ([`hsakmt_core::queue::signal::Completion::interrupt`]): the simulated command processor
    /// writes `event_id` to `mailbox_address` (a slot of the event page) and interrupts with
    /// context id `event_id`. Returns whether an event was set (`false` for an address outside
    /// the page).
    pub fn raise_completion_interrupt(&self, mailbox_address: u64, event_id: u32) -> bool {
        let Some((base, _)) = self.kfd.events.page() else { return false };
        let Some(slot) = mailbox_address.checked_sub(base).filter(|o| o % 8 == 0).map(|o| o / 8)
        else {
            return false;
        };
        let Ok(slot) = u32::try_from(slot) else { return false };
        self.kfd.events.write_mailbox(slot, u64::from(event_id))
            && self.kfd.events.interrupt(Some(event_id)) > 0
    }

    /// The simulated GPU writes `value` into the mailbox of slot `id` without interrupting (an
    /// interrupt still in flight). Returns whether the slot exists.
    pub fn write_event_mailbox(&self, id: u32, value: u64) -> bool {
        self.kfd.events.write_mailbox(id, value)
    }

    /// Delivers an event interrupt with context id `id` (`None`: no usable id, so the kernel
    /// scans every mailbox). Returns how many events were set.
    pub fn deliver_event_interrupt(&self, id: Option<u32>) -> usize {
        self.kfd.events.interrupt(id)
    }

    /// Injects a GPU memory fault on `gpu_id` at `address`: every memory event of the process
    /// receives the data (no RAS error) and is set. Returns how many events were set.
    pub fn inject_memory_fault(&self, gpu_id: u32, address: u64, flags: FaultFlags) -> usize {
        self.inject_ras_fault(gpu_id, address, flags, MemoryError::None)
    }

    /// As [`SimPlatform::inject_memory_fault`], with a RAS error type.
    pub fn inject_ras_fault(
        &self,
        gpu_id: u32,
        address: u64,
        flags: FaultFlags,
        error: MemoryError,
    ) -> usize {
        let fault = MemoryFault { gpu_id, node: None, address, flags, error, fatal: true };
        self.kfd.smi.vm_fault(gpu_id, self.kfd.process_id(), &kfd::smi::task_name());
        self.kfd.events.memory_fault(fault.to_kernel())
    }

    /// Injects a reset of GPU `gpu_id`: every HW-exception event receives the data and is set
    /// (and, for an ECC reset, every memory event an imprecise SRAM-ECC fault), as the kernel
    /// does after a GPU reset. Returns how many events were set.
    pub fn inject_gpu_reset(
        &self,
        gpu_id: u32,
        reset: ResetType,
        cause: ResetCause,
        memory_lost: bool,
    ) -> usize {
        let hw = hsakmt_core::event::HwException { gpu_id, node: None, reset, cause, memory_lost };
        let why = match cause {
            ResetCause::Ecc => "RAS",
            _ => "HWS hang",
        };
        self.kfd.smi.gpu_reset(gpu_id, false, why);
        let set = self.kfd.events.gpu_reset(hw.to_kernel());
        self.kfd.smi.gpu_reset(gpu_id, true, why);
        set
    }

    /// Threads blocked in `WAIT_EVENTS` now.
    #[must_use]
    pub fn event_waiters(&self) -> usize {
        self.kfd.events.sleeping()
    }

    /// Events the simulated kernel holds for this process.
    #[must_use]
    pub fn kernel_events(&self) -> usize {
        self.kfd.events.count()
    }

    /// The event page's address and whether user space supplied it (`false`: the simulated
    /// kernel allocated it).
    #[must_use]
    pub fn event_page(&self) -> Option<(u64, bool)> {
        self.kfd.events.page()
    }

    /// The simulated kernel's view of event `id`: whether it is signaled, and its age.
    #[must_use]
    pub fn kernel_event_state(&self, id: u32) -> Option<(bool, u64)> {
        self.kfd.events.peek(id)
    }
}

impl Default for SimPlatform {
    fn default() -> Self {
        Self::new()
    }
}

/// The simulated kernel's view of the host: the platform's clock and process, no environment.
struct KernelHost<'a>(&'a SimPlatform);

impl hsakmt_core::platform::Host for KernelHost<'_> {
    fn now_ns(&self) -> u64 {
        self.0.now_ns()
    }

    fn process_id(&self) -> u32 {
        self.0.process_id()
    }

    fn env_var(&self, _name: &str, _buf: &mut [u8]) -> Option<usize> {
        None
    }
}

impl hsakmt_core::platform::Host for SimPlatform {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn process_id(&self) -> u32 {
        if let Some(cache) = &self.stale_pid {
            return match cache.load(std::sync::atomic::Ordering::Relaxed) {
                0 => {
                    let pid = self.kfd.process_id();
                    cache.store(pid, std::sync::atomic::Ordering::Relaxed);
                    pid
                }
                pid => pid,
            };
        }
        self.kfd.process_id()
    }

    fn env_var(&self, name: &str, buf: &mut [u8]) -> Option<usize> {
        let owned;
        let value = match self.env.get(name) {
            Some(v) => v.as_str(),
            None if self.inherit_env => {
                owned = std::env::var(name).ok()?;
                owned.as_str()
            }
            None => return None,
        };
        let n = value.len().min(buf.len());
        buf[..n].copy_from_slice(&value.as_bytes()[..n]);
        Some(value.len())
    }
}
