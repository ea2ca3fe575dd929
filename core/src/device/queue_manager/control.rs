//! Changing and ending queues: update (percentage, priority, ring), CU masks, GWS, wave state,
//! trap handlers, destruction, and the teardown at the last close (libhsakmt's
//! `hsaKmtUpdateQueue`, `hsaKmtSetQueueCUMask`, `hsaKmtAllocQueueGWS`, `hsaKmtGetQueueInfo`,
//! `hsaKmtSetTrapHandler`, `hsaKmtDestroyQueue`).

use crate::device::memory_manager::MemoryStorage;
use crate::device::{Error as DeviceError, Kfd};
use crate::error::Errno;
use crate::platform::{Ioctl, Platform};
use crate::queue::params::{KFD_MAX_CU_MASK_BITS, QueuePriority, validate_cu_mask, validate_ring};
use crate::uapi::{
    kfd_ioctl_alloc_queue_gws_args, kfd_ioctl_destroy_queue_args,
    kfd_ioctl_get_queue_wave_state_args, kfd_ioctl_set_cu_mask_args,
    kfd_ioctl_set_trap_handler_args, kfd_ioctl_update_queue_args,
};

use super::doorbell::DoorbellMapping;
use super::reclaim::MAX_ORPHANED_BUFFERS;
use super::{MAX_DEVICE_QUEUES, QueueError, QueueHandle, QueueWaveState, RingUpdate};

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// Destroys a queue (`hsaKmtDestroyQueue`): `AMDKFD_IOC_DESTROY_QUEUE`, then frees the
    /// queue's buffers — a buffer the kernel refuses to free now is kept and freed at the next
    /// queue creation or destruction (or the last close), so the queue is destroyed all the
    /// same. The handle is invalid afterwards.
    ///
    /// # Errors
    /// [`QueueError::InvalidHandle`]; [`QueueError::Busy`] while a producer object of the
    /// queue is alive; [`QueueError::Device`] when the kernel refuses (the queue then stays) —
    /// except `ETIME`: the scheduler could not preempt the queue (a hang), and amdkfd destroys
    /// it anyway and resets the GPU (`pqm_destroy_queue` carries on after `-ETIME`), so the
    /// queue is gone (its buffers freed, the handle invalid) and the error says the GPU hung.
    pub fn destroy_queue(&self, handle: QueueHandle) -> Result<(), QueueError> {
        self.check_open()?;
        self.reclaim_queue_buffers();
        let record = {
            let mut q = self.queues().lock();
            if q.table.get(handle)?.parts.has_producers() {
                return Err(QueueError::Busy);
            }
            q.table.take(handle)?
        };
        let mut args = kfd_ioctl_destroy_queue_args { queue_id: record.info.queue_id, pad: 0 };
        if let Err(e) = self.ioctl(&mut Ioctl::DestroyQueue(&mut args)) {
            if matches!(e, DeviceError::Ioctl { errno: Errno::ETIME, .. }) {
                self.free_parts(record.parts);
                self.queues().lock().table.release(handle);
                return Err(e.into());
            }
            let mut q = self.queues().lock();
            if let Err(record) = q.table.fill(handle, record) {
                drop(q);
                self.free_parts(record.parts);
            }
            return Err(e.into());
        }
        self.free_parts(record.parts);
        self.queues().lock().table.release(handle);
        Ok(())
    }

    /// Changes a queue's percentage, priority and ring (`hsaKmtUpdateQueue`). A null ring
    /// ([`RingUpdate::Disable`]) or 0 % stops the queue fetching packets; restoring its ring
    /// and a non-zero percentage resumes it where it stopped.
    ///
    /// # Errors
    /// [`QueueError::InvalidHandle`], [`QueueError::InvalidPercentage`],
    /// [`QueueError::Param`] for a replacement ring, [`QueueError::Device`] (`EFAULT` when the
    /// new ring is not a GPU mapping). The queue is unchanged on error.
    pub fn update_queue(
        &self,
        handle: QueueHandle,
        percentage: u32,
        priority: QueuePriority,
        ring: RingUpdate,
    ) -> Result<(), QueueError> {
        self.check_open()?;
        if percentage > 100 {
            return Err(QueueError::InvalidPercentage(percentage));
        }
        let (queue_id, kind, own, current) = {
            let q = self.queues().lock();
            let r = q.table.get(handle)?;
            let own = (r.info.ring_address, r.info.ring_size);
            (r.info.queue_id, r.info.queue_type.kind(), own, r.kernel_ring)
        };
        let (address, size) = match ring {
            RingUpdate::Keep => current,
            RingUpdate::Restore => own,
            RingUpdate::Disable => (0, 0),
            RingUpdate::Replace { address, size } => {
                validate_ring(kind, address, size)?;
                (address, size)
            }
        };
        let mut args = kfd_ioctl_update_queue_args {
            ring_base_address: address,
            queue_id,
            ring_size: u32::try_from(size).unwrap_or(u32::MAX),
            queue_percentage: percentage,
            queue_priority: priority.kfd_priority(),
        };
        self.ioctl(&mut Ioctl::UpdateQueue(&mut args))?;
        let mut q = self.queues().lock();
        if let Ok(r) = q.table.get_mut(handle) {
            r.kernel_ring = (address, size);
            r.info.percentage = percentage;
            r.info.priority = priority;
            r.info.active = percentage > 0 && address != 0;
        }
        Ok(())
    }

    /// Restricts a queue to the CUs set in the first `count_bits` bits of `mask`
    /// (`hsaKmtSetQueueCUMask`).
    ///
    /// # Errors
    /// [`QueueError::Param`] when `count_bits` is not a non-zero multiple of 32 within
    /// [`KFD_MAX_CU_MASK_BITS`] and `mask`, when a bit names a CU the node lacks, or when no CU
    /// is left; [`QueueError::InvalidHandle`]; [`QueueError::Device`].
    pub fn set_queue_cu_mask(
        &self,
        handle: QueueHandle,
        count_bits: u32,
        mask: &[u32],
    ) -> Result<(), QueueError> {
        self.check_open()?;
        let (queue_id, node) = {
            let q = self.queues().lock();
            let r = q.table.get(handle)?;
            (r.info.queue_id, r.info.node)
        };
        let f = self.node_facts(node)?;
        validate_cu_mask(count_bits, mask, f.queue.cu_count())?;
        let words = mask.get(..(count_bits / 32) as usize).unwrap_or_default();
        let mut args =
            kfd_ioctl_set_cu_mask_args { queue_id, num_cu_mask: count_bits, ..Default::default() };
        self.ioctl(&mut Ioctl::SetCuMask { args: &mut args, mask: words })?;
        if let Ok(r) = self.queues().lock().table.get_mut(handle) {
            r.info.cu_mask_bits = count_bits.min(KFD_MAX_CU_MASK_BITS);
        }
        Ok(())
    }

    /// Gives a compute queue the node's global wave sync resources (`hsaKmtAllocQueueGWS`);
    /// returns the first GWS entry (always 0 on current kernels). One queue per process and
    /// device may hold them.
    ///
    /// # Errors
    /// [`QueueError::NoGws`] on a node without GWS, [`QueueError::WrongQueueKind`] for an SDMA
    /// queue, [`QueueError::InvalidHandle`], [`QueueError::Device`] (`EBUSY` when another
    /// queue holds them).
    pub fn alloc_queue_gws(&self, handle: QueueHandle, num_gws: u32) -> Result<u32, QueueError> {
        self.check_open()?;
        let (queue_id, node, sdma) = {
            let q = self.queues().lock();
            let r = q.table.get(handle)?;
            (r.info.queue_id, r.info.node, r.info.queue_type.is_sdma())
        };
        if sdma {
            return Err(QueueError::WrongQueueKind);
        }
        if self.node_facts(node)?.gws == 0 {
            return Err(QueueError::NoGws { node });
        }
        let mut args = kfd_ioctl_alloc_queue_gws_args { queue_id, num_gws, ..Default::default() };
        self.ioctl(&mut Ioctl::AllocQueueGws(&mut args))?;
        if let Ok(r) = self.queues().lock().table.get_mut(handle) {
            r.info.gws = (num_gws > 0).then_some(args.first_gws);
        }
        Ok(args.first_gws)
    }

    /// Reads a disabled compute queue's saved wave state (`hsaKmtGetQueueInfo`): the kernel
    /// copies the control stack into the context-save area and reports how much is in use.
    ///
    /// # Errors
    /// [`QueueError::NoContextSaveArea`], [`QueueError::InvalidHandle`],
    /// [`QueueError::Device`] (`EINVAL` while the queue is active).
    pub fn queue_wave_state(&self, handle: QueueHandle) -> Result<QueueWaveState, QueueError> {
        self.check_open()?;
        let info = self.queue_info(handle)?;
        let sizes = info.ctx_save_sizes.ok_or(QueueError::NoContextSaveArea)?;
        if info.ctx_save_address == 0 {
            return Err(QueueError::NoContextSaveArea);
        }
        let mut args = kfd_ioctl_get_queue_wave_state_args {
            ctl_stack_address: info.ctx_save_address,
            queue_id: info.queue_id,
            ..Default::default()
        };
        self.ioctl(&mut Ioctl::GetQueueWaveState(&mut args))?;
        let ctl = u64::from(sizes.ctl_stack_size);
        Ok(QueueWaveState {
            // The save area was allocated at `ctx_save_address` with at least `ctl` bytes.
            control_stack_top: info
                .ctx_save_address
                .saturating_add(ctl)
                .saturating_sub(u64::from(args.ctl_stack_used_size).min(ctl)),
            control_stack_used: args.ctl_stack_used_size,
            user_context_save_area: info.ctx_save_address.saturating_add(ctl),
            save_area_used: args.save_area_used_size,
            save_area_header: info.ctx_save_address,
            cu_mask_bits: info.cu_mask_bits,
        })
    }

    /// Installs a trap handler for the process on a GPU node (`hsaKmtSetTrapHandler`): `tba`
    /// is the handler's code address, `tma` its buffer (the kernel takes no sizes).
    ///
    /// # Errors
    /// [`QueueError::InvalidNode`], [`QueueError::NotAGpu`], [`QueueError::Device`].
    pub fn set_trap_handler(&self, node: u32, tba: u64, tma: u64) -> Result<(), QueueError> {
        self.check_open()?;
        let f = self.node_facts(node)?;
        let mut args = kfd_ioctl_set_trap_handler_args {
            tba_addr: tba,
            tma_addr: tma,
            gpu_id: f.gpu_id,
            pad: 0,
        };
        self.ioctl(&mut Ioctl::SetTrapHandler(&mut args))?;
        Ok(())
    }

    /// Destroys every queue and forgets the doorbell pages (the last close of the device).
    /// Buffers a caller still has views of stay mapped until those views go.
    pub(crate) fn teardown_queues(&self) {
        let mut handles = [QueueHandle::from_raw(0); MAX_DEVICE_QUEUES];
        let n = self.queues().lock().table.live_handles(&mut handles);
        for h in handles.iter().take(n) {
            let record = match self.queues().lock().table.take(*h) {
                Ok(r) => r,
                Err(_) => continue,
            };
            let mut args = kfd_ioctl_destroy_queue_args { queue_id: record.info.queue_id, pad: 0 };
            let _ = self.raw_ioctl(&mut Ioctl::DestroyQueue(&mut args));
            self.free_parts(record.parts);
            self.queues().lock().table.release(*h);
        }
        self.reclaim_queue_buffers();
        self.queues().lock().orphans = [None; MAX_ORPHANED_BUFFERS];
        let pages = self.queues().lock().doorbells.take_all();
        for p in pages.into_iter().flatten() {
            if let DoorbellMapping::Buffer(a) = p.mapping {
                let _ = self.free(a);
            }
        }
    }

    /// Forgets every queue without telling the kernel or touching their memory (a forked
    /// child's view of its parent's queues, which are not its own; their memory was not
    /// inherited, so every view of it is leaked rather than dropped — see
    /// `forget_parent_memory`).
    pub(crate) fn forget_queues(&self) {
        let mut q = self.queues().lock();
        q.table.drain(core::mem::forget);
        for page in q.doorbells.take_all() {
            core::mem::forget(page);
        }
        q.orphans = [None; MAX_ORPHANED_BUFFERS];
    }
}
