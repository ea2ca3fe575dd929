//! The ioctl dispatcher of the emulated `/dev/kfd` (`kfd_ioctl`), and the small ioctls that
//! answer from the process's session: version, apertures, VM acquisition, memory policy,
//! clock counters.

use hsakmt_core::error::Errno;
use hsakmt_core::platform::Ioctl;
use hsakmt_core::uapi::{
    KFD_IOC_CACHE_POLICY_NONCOHERENT, NUM_OF_SUPPORTED_GPUS, ioctl_by_nr,
    kfd_ioctl_acquire_vm_args, kfd_ioctl_get_clock_counters_args,
    kfd_ioctl_get_process_apertures_args, kfd_ioctl_get_version_args,
    kfd_ioctl_set_memory_policy_args, kfd_process_device_apertures,
};

use super::{
    GPUVM_BASE, GPUVM_LIMIT, KfdModel, LDS_BASE, RENDER_FD_BASE, SCRATCH_BASE, aperture_limit, lock,
};

impl KfdModel {
    /// Dispatches one ioctl like `kfd_ioctl`: fault injection first, then the table (an ioctl
    /// newer than the reported version has no entry: `ENOTTY`), the owner check (`EBADF` for
    /// another process), the privilege of `CRIU_OP` (`EACCES`), then the handler.
    pub(crate) fn ioctl(&self, request: &mut Ioctl<'_>) -> Result<(), Errno> {
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
        if let Ioctl::CriuOp(_) = request {
            // Neither CAP_CHECKPOINT_RESTORE nor CAP_SYS_ADMIN: the simulated process is an
            // ordinary one.
            return Err(Errno::EACCES);
        }
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
            Ioctl::GetProcessApertures(a) => {
                self.apertures_old(a);
                Ok(())
            }
            Ioctl::AcquireVm(a) => self.acquire_vm(a),
            Ioctl::SetMemoryPolicy(a) => self.set_memory_policy(a),
            Ioctl::GetClockCounters(a) => self.clock_counters(a),
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
            Ioctl::FreeMemoryOfGpu(a) => {
                let freed_doorbell = lock(&self.memory).free(a)?;
                if let Some((gpu_id, va)) = freed_doorbell
                    && let Some(doorbells) = self.gpu.doorbells(gpu_id)
                {
                    doorbells.forget_page_at(va);
                }
                Ok(())
            }
            Ioctl::MapMemoryToGpu { args, devices } => lock(&self.memory).map(args, devices, vm),
            Ioctl::UnmapMemoryFromGpu { args, devices } => lock(&self.memory).unmap(args, devices),
            Ioctl::AvailableMemory(a) => lock(&self.memory).available(a),
            Ioctl::ExportDmabuf(a) => lock(&self.memory).export(a),
            Ioctl::GetDmabufInfo { args, .. } => lock(&self.memory).dmabuf_info(args),
            Ioctl::ImportDmabuf(a) => lock(&self.memory).import(a, vm(a.gpu_id)),
            Ioctl::Svm { args, attrs } => self.svm(args, attrs),
            Ioctl::SetXnackMode(a) => lock(&self.memory).set_xnack(a),
            Ioctl::SetScratchBackingVa(a) => lock(&self.memory).set_scratch(a, vm(a.gpu_id)),
            Ioctl::CreateQueue(a) => {
                self.gpu.create_queue(a, self.version.1, vm(a.gpu_id))?;
                self.debug_queue_created(a.queue_id);
                Ok(())
            }
            Ioctl::DestroyQueue(a) => {
                self.debug_queue_destroying(a.queue_id);
                self.gpu.destroy_queue(a)
            }
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
            Ioctl::GetTileConfig { args, tile_config, macro_tile_config } => {
                self.tile_config(args, tile_config, macro_tile_config)
            }
            // kfd_ioctl_dbg_register & co: the old debugger API is gone.
            Ioctl::DbgRegisterDeprecated(_)
            | Ioctl::DbgUnregisterDeprecated(_)
            | Ioctl::DbgAddressWatchDeprecated(_)
            | Ioctl::DbgWaveControlDeprecated(_) => Err(Errno::EPERM),
            Ioctl::SmiEvents(a) => self.smi_events(a),
            Ioctl::RuntimeEnable(a) => self.runtime_enable(a),
            Ioctl::DbgTrap { args, data, returned } => self.dbg_trap(args, data, returned),
            Ioctl::CreateProcess => self.create_process(),
            Ioctl::Profiler(a) => self.profiler(a),
            // Handled before the match (EACCES).
            Ioctl::CriuOp(_) => Err(Errno::EACCES),
            // A request of a later interface than this header describes.
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

    fn get_version(&self, args: &mut kfd_ioctl_get_version_args) {
        args.major_version = self.version.0;
        args.minor_version = self.version.1;
    }

    /// `kfd_ioctl_get_process_apertures` (deprecated): the first `NUM_OF_SUPPORTED_GPUS` GPUs'
    /// apertures, inline.
    fn apertures_old(&self, args: &mut kfd_ioctl_get_process_apertures_args) {
        let n = self.apertures(
            u32::try_from(NUM_OF_SUPPORTED_GPUS).unwrap_or(u32::MAX),
            &mut args.process_apertures,
        );
        args.num_of_nodes = n;
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
}
