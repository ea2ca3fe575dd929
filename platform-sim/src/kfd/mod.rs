//! The emulated `/dev/kfd`: ioctls validated and answered the way amdkfd's `kfd_chardev.c`
//! does, with the same errnos. Memory ioctls live in [`memory`].

pub(crate) mod memory;

mod cp_hooks;
mod event;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use hsakmt_core::error::Errno;
use hsakmt_core::event::KFD_MMAP_TYPE_EVENTS;
use hsakmt_core::platform::{Access, Ioctl, KfdDevice, OpenError};
use hsakmt_core::topology::{HeapType, NodeKind, Topology};
use hsakmt_core::uapi::{
    KFD_IOC_CACHE_POLICY_NONCOHERENT, ioctl_by_nr, kfd_ioctl_acquire_vm_args,
    kfd_ioctl_get_clock_counters_args, kfd_ioctl_get_tile_config_args, kfd_ioctl_get_version_args,
    kfd_ioctl_set_memory_policy_args, kfd_process_device_apertures,
};
use hsakmt_hostmem::PidCache;

use crate::SimPlatform;
use crate::fault::Faults;
use crate::gpu::pqm::{MMAP_GPU_ID_SHIFT, MMAP_TYPE_DOORBELL};
use crate::gpu::vm::BoVm;
use crate::gpu::{CpConfig, GpuFacts, GpuModel, RecordedEvents};
use crate::mapping::SimMapping;

/// Descriptors the simulator hands out for render nodes are `RENDER_FD_BASE + minor`; they are
/// not real file descriptors.
pub const RENDER_FD_BASE: u32 = 10_000;

/// Whether `/dev/kfd` exists and may be opened, for simulating broken machines.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DeviceState {
    /// Present and accessible.
    #[default]
    Present,
    /// No device node (amdgpu not loaded).
    Absent,
    /// The node belongs to `group` and the user is not a member.
    PermissionDenied {
        /// Owning group name.
        group: String,
    },
}

/// VRAM the simulator gives a GPU whose profile has no frame-buffer bank (16 GiB, large BAR).
pub const FALLBACK_VRAM: u64 = 16 << 30;

/// A GPU of the simulated machine, from its topology profile.
#[derive(Debug, Clone)]
pub(crate) struct Gpu {
    pub(crate) gpu_id: u32,
    pub(crate) render_minor: u32,
    /// VRAM bytes (the frame-buffer banks of the profile).
    pub(crate) vram_size: u64,
    /// All VRAM is CPU-visible (a `FB_PUBLIC` bank: large BAR).
    pub(crate) large_bar: bool,
    /// gfx9.0.10 / 9.4 / 9.5: XNACK can be turned on.
    pub(crate) xnack_capable: bool,
}

/// Virtual-address layout the simulated kernel reports per GPU (gfx9+ rules of
/// `kfd_flat_memory.c`: LDS at 1 << 48, scratch at 2 << 48, GPUVM from `SVM_USER_BASE` up to
/// the start of the GMC hole: a 48-bit VM gives user space 47 bits, `gpuvm_size` =
/// `AMDGPU_GMC_HOLE_START` = 2^47).
pub(crate) const LDS_BASE: u64 = 1 << 48;
pub(crate) const SCRATCH_BASE: u64 = 2 << 48;
pub(crate) const GPUVM_BASE: u64 = 4 * 4096;
pub(crate) const GPUVM_LIMIT: u64 = (1 << 47) - 1;

/// Entries of amdgpu's `tile_mode_array` (`amdgpu_gfx_config`), the count amdkfd reports.
const TILE_MODES: usize = 32;
/// Entries of amdgpu's `macrotile_mode_array`.
const MACRO_TILE_MODES: usize = 16;
/// `GB_ADDR_CONFIG` of the simulated GPUs: the golden value amdgpu programs on Vega 10 and
/// Aldebaran (`VEGA10_GB_ADDR_CONFIG_GOLDEN`, `ALDEBARAN_GB_ADDR_CONFIG_GOLDEN`); the simulator
/// has no tiled surfaces, so every profile reports it.
const GB_ADDR_CONFIG: u32 = 0x2a11_4042;

fn aperture_limit(base: u64) -> u64 {
    (base & 0xFFFF_FFFF_0000_0000) | 0xFFFF_FFFF
}

#[derive(Debug, Default)]
struct Session {
    open: bool,
    owner: u32,
    vms: HashMap<u32, u32>,
}

/// State of the emulated device.
#[derive(Debug)]
pub(crate) struct KfdModel {
    pub(crate) gpus: Vec<Gpu>,
    pub(crate) version: (u32, u32),
    pub(crate) faults: Faults,
    state: DeviceState,
    session: Mutex<Session>,
    opens: AtomicU32,
    pub(crate) memory: Arc<Mutex<memory::Memory>>,
    pid: PidCache,
    pub(crate) events: Arc<event::SimEvents>,
    pub(crate) cp_events: Arc<RecordedEvents>,
    pub(crate) gpu: GpuModel,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl KfdModel {
    pub(crate) fn new(
        topology: &Topology,
        version: (u32, u32),
        state: DeviceState,
        cp: CpConfig,
    ) -> Self {
        let gpus: Vec<Gpu> = topology
            .nodes()
            .filter(|v| v.node().kind() != NodeKind::Cpu && v.node().is_accessible())
            .filter_map(|v| {
                let n = v.node();
                let heaps = || v.mem_banks().iter().filter_map(|b| b.heap_type());
                let gfx = n.gfx();
                Some(Gpu {
                    gpu_id: n.gpu_id().filter(|g| *g != 0)?,
                    render_minor: n.drm_render_minor().unwrap_or(0),
                    vram_size: v.vram_bytes().unwrap_or(FALLBACK_VRAM),
                    large_bar: heaps().all(|h| h != HeapType::FrameBufferPrivate),
                    xnack_capable: gfx.is_some_and(|g| {
                        g.major == 9 && (g.minor >= 4 || (g.minor == 0 && g.stepping == 10))
                    }),
                })
            })
            .collect();
        let memory = memory::Memory::new(
            gpus.iter()
                .map(|g| memory::GpuMemory {
                    gpu_id: g.gpu_id,
                    vram_size: g.vram_size,
                    large_bar: g.large_bar,
                    xnack_capable: g.xnack_capable,
                })
                .collect(),
        );
        let memory = Arc::new(Mutex::new(memory));
        let events = Arc::new(event::SimEvents::new());
        let cp_events = Arc::new(RecordedEvents::default());
        let gpu = GpuModel::new(
            GpuFacts::from_topology(topology),
            Arc::new(BoVm::new(memory.clone())),
            Arc::new(cp_hooks::CpEvents::new(cp_events.clone(), events.clone())),
            cp,
        );
        Self {
            gpus,
            version,
            faults: Faults::new(),
            state,
            session: Mutex::new(Session::default()),
            opens: AtomicU32::new(0),
            memory,
            pid: PidCache::new(),
            events,
            cp_events,
            gpu,
        }
    }

    pub(crate) fn gpu(&self, gpu_id: u32) -> Result<&Gpu, Errno> {
        self.gpus.iter().find(|g| g.gpu_id == gpu_id).ok_or(Errno::EINVAL)
    }

    /// The calling process's id (cached; a fork clears the cache).
    pub(crate) fn process_id(&self) -> u32 {
        self.pid.get()
    }

    /// How many times the device was opened.
    pub(crate) fn opens(&self) -> u32 {
        self.opens.load(Ordering::Relaxed)
    }

    fn open(&self) -> Result<(), OpenError> {
        match &self.state {
            DeviceState::Present => {}
            DeviceState::Absent => return Err(OpenError::NotPresent),
            DeviceState::PermissionDenied { group } => {
                let mut g = heapless::String::new();
                let _ = g.push_str(group);
                return Err(OpenError::PermissionDenied {
                    gid: Some(993),
                    group: Some(g),
                    mode: Some(0o660),
                });
            }
        }
        let mut s = lock(&self.session);
        let pid = self.pid.get();
        if !s.open || s.owner != pid {
            let inherited = s.owner != 0 && s.owner != pid;
            *s = Session { open: true, owner: pid, vms: HashMap::new() };
            self.opens.fetch_add(1, Ordering::Relaxed);
            drop(s);
            if inherited {
                // A forked child: what this model holds is its parent's.
                self.forget_inherited();
            } else {
                self.events.end_all();
                self.gpu.destroy_all();
            }
        }
        Ok(())
    }

    /// A forked child's copy of its parent's kernel state: forgotten without touching any of it
    /// (the parent's threads and `MADV_DONTFORK` memory do not exist in the child).
    fn forget_inherited(&self) {
        self.events.forget_inherited();
        self.gpu.forget_inherited();
        lock(&self.memory).forget_inherited();
    }

    /// Closing the device ends the process's KFD state: buffers, SVM ranges, settings, events
    /// and the event page.
    fn close(&self) {
        let mut s = lock(&self.session);
        if s.owner != self.pid.get() {
            // A forked child closing its copy of the parent's descriptor.
            *s = Session::default();
            drop(s);
            self.forget_inherited();
            return;
        }
        s.open = false;
        s.vms.clear();
        self.events.end_all();
        drop(s);
        // The process's queues go with it (before its buffers).
        self.gpu.destroy_all();
        lock(&self.memory).reset();
    }

    /// Dispatches one ioctl like `kfd_ioctl`: fault injection first, then the owner check
    /// (`EBADF` for another process), then the handler.
    fn ioctl(&self, request: &mut Ioctl<'_>) -> Result<(), Errno> {
        if let Some(errno) = self.faults.on_ioctl(request.nr()) {
            return Err(errno);
        }
        // A kernel older than the ioctl has no table entry for it.
        if ioctl_by_nr(request.nr()).is_some_and(|i| i.since_minor > self.version.1) {
            return Err(Errno::ENOTTY);
        }
        if !self.is_open_by_caller() {
            return Err(Errno::EBADF);
        }
        // Looked up when a handler asks (no copy of the session per call). The session's lock
        // may be taken under the memory lock, never the other way round.
        let vm = |gpu_id: u32| self.vm_acquired(gpu_id);
        match request {
            Ioctl::GetVersion(a) => {
                self.get_version(a);
                Ok(())
            }
            Ioctl::GetProcessAperturesNew { args, apertures } => {
                // The slice is the user array (the platform fills `num_of_nodes` from it).
                let requested = u32::try_from(apertures.len()).unwrap_or(u32::MAX);
                args.num_of_nodes = self.apertures(requested, apertures);
                Ok(())
            }
            Ioctl::AcquireVm(a) => self.acquire_vm(a),
            Ioctl::SetMemoryPolicy(a) => self.set_memory_policy(a),
            Ioctl::GetClockCounters(a) => self.clock_counters(a),
            Ioctl::GetTileConfig { args, tile_config, macro_tile_config } => {
                self.tile_config(args, tile_config, macro_tile_config)
            }
            // A buffer handle in `event_page_offset` must name a GTT buffer (kfd_kmap_event_page).
            Ioctl::CreateEvent(a) => {
                self.events.create(a, |handle| lock(&self.memory).kmap_event_page(handle))
            }
            Ioctl::DestroyEvent(a) => self.events.destroy(a.event_id),
            Ioctl::SetEvent(a) => self.events.set(a.event_id),
            Ioctl::ResetEvent(a) => self.events.reset(a.event_id),
            Ioctl::WaitEvents { args, events } => {
                if self.gpu.runs_on_wait() {
                    self.gpu.run_until_idle();
                }
                self.events.wait(args, events)
            }
            Ioctl::AllocMemoryOfGpu(a) => lock(&self.memory).alloc(a, vm(a.gpu_id)),
            Ioctl::FreeMemoryOfGpu(a) => lock(&self.memory).free(a),
            Ioctl::MapMemoryToGpu { args, devices } => lock(&self.memory).map(args, devices, vm),
            Ioctl::UnmapMemoryFromGpu { args, devices } => lock(&self.memory).unmap(args, devices),
            Ioctl::AvailableMemory(a) => lock(&self.memory).available(a),
            Ioctl::ExportDmabuf(a) => lock(&self.memory).export(a),
            Ioctl::GetDmabufInfo { args, .. } => lock(&self.memory).dmabuf_info(args),
            Ioctl::ImportDmabuf(a) => lock(&self.memory).import(a, vm(a.gpu_id)),
            Ioctl::Svm { args, attrs } => lock(&self.memory).svm(args, attrs),
            Ioctl::SetXnackMode(a) => lock(&self.memory).set_xnack(a),
            Ioctl::SetScratchBackingVa(a) => lock(&self.memory).set_scratch(a, vm(a.gpu_id)),
            Ioctl::CreateQueue(a) => self.gpu.create_queue(a, self.version.1, vm(a.gpu_id)),
            Ioctl::DestroyQueue(a) => self.gpu.destroy_queue(a),
            Ioctl::UpdateQueue(a) => self.gpu.update_queue(a),
            Ioctl::SetCuMask { args, mask } => {
                // As the Linux platform does: pointer and count come from the slice.
                args.cu_mask_ptr = mask.as_ptr() as u64;
                args.num_cu_mask = u32::try_from(mask.len() * 32).map_err(|_| Errno::E2BIG)?;
                self.gpu.set_cu_mask(args, mask)
            }
            Ioctl::AllocQueueGws(a) => self.gpu.alloc_queue_gws(a),
            Ioctl::GetQueueWaveState(a) => self.gpu.queue_wave_state(a),
            Ioctl::SetTrapHandler(a) => self.gpu.set_trap_handler(a, vm(a.gpu_id)),
            // Not (yet) modelled: what a kernel without the ioctl answers.
            _ => Err(Errno::ENOTTY),
        }
    }

    /// `kfd_ioctl_get_clock_counters`: the GPU counter of the engines' clock
    /// ([`GpuClock`](crate::gpu::clock::GpuClock), 100 MHz: the rate amdgpu reports for gfx9+
    /// `GPU_TIMESTAMP` reference clocks); CPU and system stamps are the same clock in ns, as
    /// current kernels give.
    fn clock_counters(&self, args: &mut kfd_ioctl_get_clock_counters_args) -> Result<(), Errno> {
        self.gpu(args.gpu_id)?;
        let clock = self.gpu.cp.clock;
        let ns = clock.nanos();
        args.gpu_clock_counter = clock.counter();
        args.cpu_clock_counter = ns;
        args.system_clock_counter = ns;
        args.system_clock_freq = 1_000_000_000;
        Ok(())
    }

    /// `kfd_ioctl_get_tile_config` as amdkfd answers for gfx9 and later: the tables are
    /// amdgpu's `tile_mode_array` (32 words) and `macrotile_mode_array` (16), which GFX9+ never
    /// fills (all zero), copied up to the room the caller gives and the counts cut to what was
    /// copied; `num_banks`/`num_ranks` are 0 ("not set from GFX9 onwards");
    /// `gb_addr_config` is [`GB_ADDR_CONFIG`].
    fn tile_config(
        &self,
        args: &mut kfd_ioctl_get_tile_config_args,
        tile_config: &mut [u32],
        macro_tile_config: &mut [u32],
    ) -> Result<(), Errno> {
        self.gpu(args.gpu_id)?;
        args.gb_addr_config = GB_ADDR_CONFIG;
        args.num_banks = 0;
        args.num_ranks = 0;
        let tiles = tile_config.len().min(TILE_MODES);
        let macro_tiles = macro_tile_config.len().min(MACRO_TILE_MODES);
        for word in tile_config.iter_mut().take(tiles) {
            *word = 0;
        }
        for word in macro_tile_config.iter_mut().take(macro_tiles) {
            *word = 0;
        }
        // Both at most 32: the casts cannot truncate.
        args.num_tile_configs = u32::try_from(tiles).map_err(|_| Errno::EINVAL)?;
        args.num_macro_tile_configs = u32::try_from(macro_tiles).map_err(|_| Errno::EINVAL)?;
        Ok(())
    }

    fn get_version(&self, args: &mut kfd_ioctl_get_version_args) {
        args.major_version = self.version.0;
        args.minor_version = self.version.1;
    }

    /// `kfd_ioctl_get_process_apertures_new`: with `num_of_nodes == 0` it only reports how
    /// many GPUs there are; else it fills at most that many entries and reports how many.
    fn apertures(&self, requested: u32, out: &mut [kfd_process_device_apertures]) -> u32 {
        let total = u32::try_from(self.gpus.len()).unwrap_or(u32::MAX);
        if requested == 0 {
            return total;
        }
        let mut n = 0;
        for (slot, gpu) in out.iter_mut().zip(&self.gpus).take(requested as usize) {
            *slot = kfd_process_device_apertures {
                lds_base: LDS_BASE,
                lds_limit: aperture_limit(LDS_BASE),
                scratch_base: SCRATCH_BASE,
                scratch_limit: aperture_limit(SCRATCH_BASE),
                gpuvm_base: GPUVM_BASE,
                gpuvm_limit: GPUVM_LIMIT,
                gpu_id: gpu.gpu_id,
                pad: 0,
            };
            n += 1;
        }
        n
    }

    /// `kfd_ioctl_acquire_vm`: binds the GPU's VM to a render-node file; acquiring again with
    /// the same file is fine, with another one `EBUSY`.
    fn acquire_vm(&self, args: &kfd_ioctl_acquire_vm_args) -> Result<(), Errno> {
        let gpu = self.gpu(args.gpu_id)?;
        if args.drm_fd != RENDER_FD_BASE + gpu.render_minor {
            return Err(Errno::EINVAL);
        }
        let mut s = lock(&self.session);
        match s.vms.get(&args.gpu_id) {
            Some(fd) if *fd == args.drm_fd => Ok(()),
            Some(_) => Err(Errno::EBUSY),
            None => {
                s.vms.insert(args.gpu_id, args.drm_fd);
                Ok(())
            }
        }
    }

    fn set_memory_policy(&self, args: &kfd_ioctl_set_memory_policy_args) -> Result<(), Errno> {
        self.gpu(args.gpu_id)?;
        if args.default_policy > KFD_IOC_CACHE_POLICY_NONCOHERENT
            || args.alternate_policy > KFD_IOC_CACHE_POLICY_NONCOHERENT
        {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }

    /// Whether the device is open by the calling process.
    pub(crate) fn is_open_by_caller(&self) -> bool {
        let s = lock(&self.session);
        s.open && s.owner == self.pid.get()
    }

    /// Whether `gpu_id`'s VM was acquired in this session.
    pub(crate) fn vm_acquired(&self, gpu_id: u32) -> bool {
        lock(&self.session).vms.contains_key(&gpu_id)
    }
}

std::thread_local! {
    /// Heap allocations the simulated kernel made inside ioctls on this thread.
    static IOCTL_ALLOCATIONS: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
}

/// Heap allocations the simulated kernel has made inside the calling thread's ioctls (the
/// simulated engines' work that runs inside a wait in the on-wait mode left out), as
/// counted by a [`hsakmt_hostmem::CountingAllocator`] installed as the global allocator (0
/// without one): what a program subtracts from its own thread's count to see the library's
/// allocations apart from the simulated device's.
#[must_use]
pub fn thread_ioctl_allocations() -> u64 {
    IOCTL_ALLOCATIONS.try_with(core::cell::Cell::get).unwrap_or(0)
}

impl KfdDevice for SimPlatform {
    type Mapping = SimMapping;

    fn open(&self) -> Result<(), OpenError> {
        self.count_device_call();
        self.kfd.open()
    }

    fn close(&self) {
        self.count_device_call();
        self.kfd.close();
    }

    fn ioctl(&self, request: &mut Ioctl<'_>) -> Result<(), Errno> {
        self.count_device_call();
        // The kernel's own: the engines' work run inside the call (on-wait mode) is not.
        let engines = crate::gpu::thread_engine_allocations();
        let before = hsakmt_hostmem::thread_allocations();
        let r = self.kfd.ioctl(request);
        let made = hsakmt_hostmem::thread_allocations()
            .wrapping_sub(before)
            .wrapping_sub(crate::gpu::thread_engine_allocations().wrapping_sub(engines));
        let _ = IOCTL_ALLOCATIONS.try_with(|c| c.set(c.get().wrapping_add(made)));
        if r == Err(Errno::EBADF)
            && let Some(cache) = &self.stale_pid
        {
            // The kernel says the descriptor is another process's: re-read the process id.
            cache.store(self.kfd.process_id(), Ordering::Relaxed);
        }
        r
    }

    fn open_render_node(&self, minor: u32) -> Result<u32, Errno> {
        self.count_device_call();
        if self.kfd.gpus.iter().any(|g| g.render_minor == minor) {
            Ok(RENDER_FD_BASE + minor)
        } else {
            Err(Errno::ENOENT)
        }
    }

    fn close_fd(&self, fd: u32) {
        self.count_device_call();
        lock(&self.kfd.memory).close_fd(fd);
    }

    fn reserve_va(&self, hint: Option<u64>, size: u64, align: u64) -> Result<u64, Errno> {
        self.count_device_call();
        hsakmt_hostmem::reserve(hint, size, align)
    }

    fn release_va(&self, addr: u64, size: u64) -> Result<(), Errno> {
        self.count_device_call();
        hsakmt_hostmem::release(addr, size)
    }

    fn map_kfd(
        &self,
        offset: u64,
        size: u64,
        addr: Option<u64>,
        _access: Access,
    ) -> Result<SimMapping, Errno> {
        self.count_device_call();
        match offset {
            // The simulator hands out the page where it lives (a kernel would map the same
            // pages again), so it cannot honour a fixed address.
            KFD_MMAP_TYPE_EVENTS if addr.is_none() => {
                if !self.kfd.is_open_by_caller() {
                    return Err(Errno::EBADF);
                }
                self.kfd.events.map(size)
            }
            KFD_MMAP_TYPE_EVENTS => Err(Errno::EINVAL),
            _ if offset & (3 << 62) == MMAP_TYPE_DOORBELL => self.map_doorbells(offset, size, addr),
            _ => lock(&self.kfd.memory).map_kfd(offset, addr),
        }
    }

    fn map_buffer(
        &self,
        render_fd: u32,
        offset: u64,
        size: u64,
        addr: u64,
        _access: Access,
    ) -> Result<SimMapping, Errno> {
        self.count_device_call();
        let gpu = render_fd
            .checked_sub(RENDER_FD_BASE)
            .and_then(|minor| self.kfd.gpus.iter().find(|g| g.render_minor == minor))
            .map(|g| g.gpu_id);
        lock(&self.kfd.memory).map_buffer(gpu, offset, size, addr)
    }

    fn map_anonymous(&self, addr: u64, size: u64) -> Result<SimMapping, Errno> {
        self.count_device_call();
        hsakmt_hostmem::map_anonymous(addr, size).map(SimMapping::new)
    }
}

impl SimPlatform {
    /// Counts one call of a [`KfdDevice`] method ([`SimPlatform::device_calls`]).
    fn count_device_call(&self) {
        self.device_calls.fetch_add(1, Ordering::Relaxed);
    }

    /// `kfd_doorbell_mmap`: the process's doorbell slice of the GPU the offset names — the
    /// doorbell buffer's pages when one was allocated, else pages of its own — whose writes
    /// wake the command processor.
    fn map_doorbells(
        &self,
        offset: u64,
        size: u64,
        addr: Option<u64>,
    ) -> Result<SimMapping, Errno> {
        let gpu_id = ((offset >> MMAP_GPU_ID_SHIFT) & 0xFFFF) as u32;
        let facts = self.kfd.gpu.facts(gpu_id).ok_or(Errno::EINVAL)?;
        let doorbells = self.kfd.gpu.doorbells(gpu_id).ok_or(Errno::EINVAL)?;
        let mapped = lock(&self.kfd.memory).map_kfd(offset, addr);
        let memory = match mapped {
            Ok(m) => m.memory().clone(),
            Err(_) => {
                if size != (1024 * facts.doorbell_size).max(4096) {
                    return Err(Errno::EINVAL);
                }
                let at = match addr {
                    Some(a) => a,
                    None => hsakmt_hostmem::reserve(None, size, 4096)?,
                };
                hsakmt_hostmem::map_anonymous(at, size)?
            }
        };
        // Plain stores to the page are found there by the processors' doorbell polls.
        doorbells.set_page(memory.clone());
        Ok(SimMapping::doorbell(memory, doorbells))
    }
}
