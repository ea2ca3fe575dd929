//! The emulated `/dev/kfd`: ioctls validated and answered the way amdkfd's `kfd_chardev.c`
//! does, with the same errnos.

mod event;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use hsakmt_core::error::Errno;
use hsakmt_core::event::KFD_MMAP_TYPE_EVENTS;
use hsakmt_core::platform::{Access, Ioctl, KfdDevice, OpenError};
use hsakmt_core::topology::{NodeKind, Topology};
use hsakmt_core::uapi::{
    KFD_IOC_CACHE_POLICY_NONCOHERENT, kfd_ioctl_acquire_vm_args, kfd_ioctl_get_version_args,
    kfd_ioctl_set_memory_policy_args, kfd_process_device_apertures,
};

use crate::SimPlatform;
use crate::fault::Faults;
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

/// A GPU of the simulated machine, from its topology profile.
#[derive(Debug, Clone)]
pub(crate) struct Gpu {
    pub(crate) gpu_id: u32,
    pub(crate) render_minor: u32,
}

/// Virtual-address layout the simulated kernel reports per GPU (gfx9+ rules of
/// `kfd_flat_memory.c`: LDS at 1 << 48, scratch at 2 << 48, GPUVM from `SVM_USER_BASE` to the
/// 48-bit VM size).
pub(crate) const LDS_BASE: u64 = 1 << 48;
pub(crate) const SCRATCH_BASE: u64 = 2 << 48;
pub(crate) const GPUVM_BASE: u64 = 4 * 4096;
pub(crate) const GPUVM_LIMIT: u64 = (1 << 48) - 1;

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
    pub(crate) events: event::SimEvents,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl KfdModel {
    pub(crate) fn new(topology: &Topology, version: (u32, u32), state: DeviceState) -> Self {
        let gpus = topology
            .nodes()
            .filter(|n| n.kind() != NodeKind::Cpu && n.is_accessible())
            .filter_map(|n| {
                Some(Gpu {
                    gpu_id: n.gpu_id().filter(|g| *g != 0)?,
                    render_minor: n.drm_render_minor().unwrap_or(0),
                })
            })
            .collect();
        Self {
            gpus,
            version,
            faults: Faults::new(),
            state,
            session: Mutex::new(Session::default()),
            opens: AtomicU32::new(0),
            events: event::SimEvents::new(),
        }
    }

    pub(crate) fn gpu(&self, gpu_id: u32) -> Result<&Gpu, Errno> {
        self.gpus.iter().find(|g| g.gpu_id == gpu_id).ok_or(Errno::EINVAL)
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
                return Err(OpenError::PermissionDenied { gid: Some(993), group: Some(g) });
            }
        }
        let mut s = lock(&self.session);
        let pid = std::process::id();
        if !s.open || s.owner != pid {
            *s = Session { open: true, owner: pid, vms: HashMap::new() };
            self.opens.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    fn close(&self) {
        let mut s = lock(&self.session);
        s.open = false;
        s.vms.clear();
    }

    /// Dispatches one ioctl like `kfd_ioctl`: fault injection first, then the owner check
    /// (`EBADF` for another process), then the handler.
    fn ioctl(&self, request: &mut Ioctl<'_>) -> Result<(), Errno> {
        if let Some(errno) = self.faults.on_ioctl(request.nr()) {
            return Err(errno);
        }
        {
            let s = lock(&self.session);
            if !s.open || s.owner != std::process::id() {
                return Err(Errno::EBADF);
            }
        }
        match request {
            Ioctl::GetVersion(a) => {
                self.get_version(a);
                Ok(())
            }
            Ioctl::GetProcessAperturesNew { args, apertures } => {
                args.num_of_nodes = self.apertures(args.num_of_nodes, apertures);
                Ok(())
            }
            Ioctl::AcquireVm(a) => self.acquire_vm(a),
            Ioctl::SetMemoryPolicy(a) => self.set_memory_policy(a),
            // Buffer handles passed as `event_page_offset` name no buffer until the simulator
            // models memory objects: EINVAL, as the kernel answers for an unknown handle.
            Ioctl::CreateEvent(a) => self.events.create(a, |_handle| None),
            Ioctl::DestroyEvent(a) => self.events.destroy(a.event_id),
            Ioctl::SetEvent(a) => self.events.set(a.event_id),
            Ioctl::ResetEvent(a) => self.events.reset(a.event_id),
            Ioctl::WaitEvents { args, events } => self.events.wait(args, events),
            // Not (yet) modelled: what a kernel without the ioctl answers.
            _ => Err(Errno::ENOTTY),
        }
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
        s.open && s.owner == std::process::id()
    }

    /// Whether `gpu_id`'s VM was acquired in this session.
    pub(crate) fn vm_acquired(&self, gpu_id: u32) -> bool {
        lock(&self.session).vms.contains_key(&gpu_id)
    }
}

impl KfdDevice for SimPlatform {
    type Mapping = SimMapping;

    fn open(&self) -> Result<(), OpenError> {
        self.kfd.open()
    }

    fn close(&self) {
        self.kfd.close();
    }

    fn ioctl(&self, request: &mut Ioctl<'_>) -> Result<(), Errno> {
        self.kfd.ioctl(request)
    }

    fn open_render_node(&self, minor: u32) -> Result<u32, Errno> {
        if self.kfd.gpus.iter().any(|g| g.render_minor == minor) {
            Ok(RENDER_FD_BASE + minor)
        } else {
            Err(Errno::ENOENT)
        }
    }

    fn close_fd(&self, _fd: u32) {}

    fn reserve_va(&self, hint: Option<u64>, size: u64, align: u64) -> Result<u64, Errno> {
        hsakmt_linux::mapping::reserve(hint, size, align)
    }

    fn release_va(&self, addr: u64, size: u64) -> Result<(), Errno> {
        hsakmt_linux::mapping::release(addr, size)
    }

    fn map_kfd(
        &self,
        offset: u64,
        size: u64,
        addr: Option<u64>,
        _access: Access,
    ) -> Result<SimMapping, Errno> {
        if !self.kfd.is_open_by_caller() {
            return Err(Errno::EBADF);
        }
        match offset {
            // The simulator hands out the page where it lives (a kernel would map the same
            // pages again), so it cannot honour a fixed address.
            KFD_MMAP_TYPE_EVENTS if addr.is_none() => self.kfd.events.map(size),
            _ => Err(Errno::EINVAL),
        }
    }

    fn map_buffer(
        &self,
        _render_fd: u32,
        _offset: u64,
        _size: u64,
        _addr: u64,
        _access: Access,
    ) -> Result<SimMapping, Errno> {
        Err(Errno::EINVAL)
    }

    fn map_anonymous(&self, addr: u64, size: u64) -> Result<SimMapping, Errno> {
        hsakmt_linux::mapping::map_anonymous(addr, size).map(SimMapping::new)
    }
}
