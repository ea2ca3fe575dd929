//! The emulated `/dev/kfd`: ioctls validated and answered the way amdkfd's `kfd_chardev.c`
//! does, with the same errnos. Every ioctl of `kfd_ioctl.h` 1.23 is answered ([`dispatch`]):
//! memory in [`memory`], events in `event`, queues in `crate::gpu::pqm`, the debugger in
//! [`debug`], SMI streams in [`smi`], the rest (tile config, the deprecated and privileged
//! ioctls, the profiler, secondary processes) in [`misc`]. Descriptors other than `/dev/kfd`
//! (pipes, SMI streams) live in [`files`].

pub(crate) mod debug;
pub(crate) mod files;
pub(crate) mod memory;
pub(crate) mod smi;

mod cp_hooks;
mod device;
mod dispatch;
mod dmabuf;
mod event;
mod misc;
mod svm;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use hsakmt_core::error::Errno;
use hsakmt_core::platform::OpenError;
use hsakmt_core::topology::{HeapType, NodeKind, NodeView, Topology};
use hsakmt_hostmem::PidCache;

use crate::fault::Faults;
use crate::gpu::vm::BoVm;
use crate::gpu::{CpConfig, GpuFacts, GpuModel, RecordedEvents};

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

/// What the kernel's topology says about a GPU that the debugger's device snapshot and flag
/// checks use (`kfd_topology_device.node_props`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct DeviceFacts {
    pub(crate) capability: u32,
    pub(crate) capability2: u32,
    pub(crate) debug_prop: u32,
    pub(crate) location_id: u32,
    pub(crate) vendor_id: u32,
    pub(crate) device_id: u32,
    pub(crate) fw_version: u32,
    pub(crate) gfx_target_version: u32,
    pub(crate) simd_count: u32,
    pub(crate) max_waves_per_simd: u32,
    /// Shader arrays of one XCC (sysfs prints them times the XCC count).
    pub(crate) array_count: u32,
    pub(crate) simd_arrays_per_engine: u32,
    pub(crate) num_xcc: u32,
}

impl DeviceFacts {
    fn of(v: &NodeView<'_>) -> Self {
        let p = v.node().properties();
        let num_xcc = p.num_xcc().unwrap_or(1).max(1);
        let narrow = |x: Option<u64>| x.and_then(|x| u32::try_from(x).ok()).unwrap_or(0);
        DeviceFacts {
            capability: p.capability().unwrap_or(0),
            capability2: p.capability2().unwrap_or(0),
            debug_prop: narrow(p.debug_prop()),
            location_id: p.location_id().unwrap_or(0),
            vendor_id: p.vendor_id().unwrap_or(0),
            device_id: p.device_id().unwrap_or(0),
            fw_version: p.fw_version().unwrap_or(0),
            gfx_target_version: v.node().gfx().map_or(0, |g| g.target_version()),
            simd_count: p.simd_count().unwrap_or(0),
            max_waves_per_simd: p.max_waves_per_simd().unwrap_or(0),
            array_count: p.array_count().unwrap_or(0) / num_xcc,
            simd_arrays_per_engine: p.simd_arrays_per_engine().unwrap_or(0),
            num_xcc,
        }
    }
}

/// A GPU of the simulated machine, from its topology profile.
#[derive(Debug, Clone)]
pub(crate) struct Gpu {
    pub(crate) gpu_id: u32,
    pub(crate) render_minor: u32,
    pub(crate) facts: DeviceFacts,
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

const fn aperture_limit(base: u64) -> u64 {
    (base & 0xFFFF_FFFF_0000_0000) | 0xFFFF_FFFF
}

/// The LDS, scratch and GPUVM apertures `(base, limit)` the simulated kernel gives every GPU.
pub(crate) const fn apertures_of() -> ((u64, u64), (u64, u64), (u64, u64)) {
    (
        (LDS_BASE, aperture_limit(LDS_BASE)),
        (SCRATCH_BASE, aperture_limit(SCRATCH_BASE)),
        (GPUVM_BASE, GPUVM_LIMIT),
    )
}

/// The simulated process's privileges that change what the kernel answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Privileges {
    /// `CAP_PERFMON` (or `CAP_SYS_ADMIN`): `PROFILER`'s `PMC` operation is allowed.
    pub perfmon: bool,
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
    pub(crate) debug: Arc<debug::Debugger>,
    pub(crate) files: Arc<files::Files>,
    pub(crate) smi: Arc<smi::Smi>,
    /// `AMDKFD_IOC_CREATE_PROCESS` replaced the primary process on the descriptor.
    secondary: AtomicBool,
    pub(crate) privileges: Privileges,
    pub(crate) profiler: Mutex<misc::Profiler>,
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
        privileges: Privileges,
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
                    facts: DeviceFacts::of(&v),
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
        let debug = Arc::new(debug::Debugger::new());
        let files = Arc::new(files::Files::default());
        let smi = Arc::new(smi::Smi::new());
        let hooks = cp_hooks::CpEvents::new(
            cp_events.clone(),
            events.clone(),
            debug.clone(),
            files.clone(),
            smi.clone(),
        );
        let gpu = GpuModel::new(
            GpuFacts::from_topology(topology),
            Arc::new(BoVm::new(memory.clone())),
            Arc::new(hooks),
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
            debug,
            files,
            smi,
            secondary: AtomicBool::new(false),
            privileges,
            profiler: Mutex::new(misc::Profiler::default()),
        }
    }

    /// Whether `AMDKFD_IOC_CREATE_PROCESS` made the descriptor's process a secondary one.
    pub(crate) fn is_secondary(&self) -> bool {
        self.secondary.load(Ordering::Acquire)
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

    pub(crate) fn open(&self) -> Result<(), OpenError> {
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
            self.secondary.store(false, Ordering::Release);
            if inherited {
                // A forked child: what this model holds is its parent's.
                self.forget_inherited();
            } else {
                self.events.end_all();
                self.gpu.destroy_all();
                self.debug.reset();
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
        self.debug.reset();
        self.files.clear();
    }

    /// Closing the device ends the process's KFD state: buffers, SVM ranges, settings, events
    /// and the event page.
    pub(crate) fn close(&self) {
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
        self.end_process_state();
    }

    /// The process's KFD state ends (its device closed, or the descriptor moved to a
    /// secondary process): the debug session and runtime state, then the queues (before their
    /// buffers), then the buffers and settings.
    pub(crate) fn end_process_state(&self) {
        self.debug.reset();
        self.gpu.destroy_all();
        lock(&self.memory).reset();
        *lock(&self.profiler) = misc::Profiler::default();
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
