//! `AMDKFD_IOC_DBG_TRAP` (`kfd_ioctl_set_debug_trap` and `kfd_debug.c`), in the kernel's order:
//!
//! 1. a secondary KFD process cannot debug (`EOPNOTSUPP`);
//! 2. the target pid must be a process with KFD state — here only the caller (`ESRCH`);
//! 3. every operation but `ENABLE` needs an enabled session (`EINVAL`);
//! 4. the hardware operations (launch override and mode, suspend, resume, address watches,
//!    flags) need the runtime enabled (`EPERM`);
//! 5. address-watch operations need a GPU of the process (`ENODEV`);
//! 6. the operation itself, with its own errnos (see each function).

use hsakmt_core::error::Errno;
use hsakmt_core::platform::DbgTrapData;
use hsakmt_core::uapi::*;

use super::state::{MAX_WATCH_ADDRESSES, Source, Watch, notify};
use crate::kfd::files::File;
use crate::kfd::{Gpu, KfdModel};

/// The trap-mask bits a GPU can override, and whether it accepts `REPLACE` as well as `OR`
/// (`validate_trap_override_request` of amdgpu's kfd2kgd: gfx9 before 9.4.2 allows only OR of
/// the address-watch bit and answers `EINVAL`; 9.4.2+, gfx10 and gfx11/12 allow the FP, integer
/// division, address-watch and memory-violation bits in either mode and answer `EPERM`, gfx
/// 11.0.4+ also trap on wave start and end).
fn override_support(gfx_target: u32) -> (u32, bool, Errno) {
    const FULL: u32 = KFD_DBG_TRAP_MASK_FP_INVALID
        | KFD_DBG_TRAP_MASK_FP_INPUT_DENORMAL
        | KFD_DBG_TRAP_MASK_FP_DIVIDE_BY_ZERO
        | KFD_DBG_TRAP_MASK_FP_OVERFLOW
        | KFD_DBG_TRAP_MASK_FP_UNDERFLOW
        | KFD_DBG_TRAP_MASK_FP_INEXACT
        | KFD_DBG_TRAP_MASK_INT_DIVIDE_BY_ZERO
        | KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH
        | KFD_DBG_TRAP_MASK_DBG_MEMORY_VIOLATION;
    const WAVE_START_END: u32 =
        KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_START | KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_END;
    match gfx_target {
        0..90402 => (KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH, false, Errno::EINVAL),
        110004..=129999 => (FULL | WAVE_START_END, true, Errno::EPERM),
        _ => (FULL, true, Errno::EPERM),
    }
}

/// Whether a GPU supports the debugger at all (`KFD_IS_SOC15`: gfx9 and later).
fn soc15(g: &Gpu) -> bool {
    g.facts.gfx_target_version >= 90000
}

impl KfdModel {
    /// `AMDKFD_IOC_DBG_TRAP`; `returned` receives the ioctl's non-negative result.
    pub(crate) fn dbg_trap(
        &self,
        a: &mut kfd_ioctl_dbg_trap_args,
        data: &mut DbgTrapData<'_>,
        returned: &mut u32,
    ) -> Result<(), Errno> {
        if !data.fits(a.op) {
            // The platform's rule: the caller's memory must be what the operation takes.
            return Err(Errno::EINVAL);
        }
        if self.is_secondary() {
            return Err(Errno::EOPNOTSUPP);
        }
        if a.pid != self.process_id() {
            return Err(Errno::ESRCH);
        }
        let (enabled, runtime) = {
            let s = self.debug.lock();
            (s.enabled, s.runtime.runtime_state)
        };
        if a.op != KFD_IOC_DBG_TRAP_ENABLE && !enabled {
            return Err(Errno::EINVAL);
        }
        let hw_op = matches!(
            a.op,
            KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE
                | KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE
                | KFD_IOC_DBG_TRAP_SUSPEND_QUEUES
                | KFD_IOC_DBG_TRAP_RESUME_QUEUES
                | KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH
                | KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH
                | KFD_IOC_DBG_TRAP_SET_FLAGS
        );
        if hw_op && runtime != DEBUG_RUNTIME_STATE_ENABLED {
            return Err(Errno::EPERM);
        }
        *returned = 0;
        match a.op {
            KFD_IOC_DBG_TRAP_ENABLE => self.dbg_enable(a, data),
            KFD_IOC_DBG_TRAP_DISABLE => {
                self.dbg_disable();
                Ok(())
            }
            KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT => {
                let e = a.op_args.send_runtime_event();
                self.send_runtime_event(e.gpu_id, e.queue_id, e.exception_mask)
            }
            KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED => {
                let mask = a.op_args.set_exceptions_enabled().exception_mask;
                let mut s = self.debug.lock();
                if mask & s.all_raised() != 0 {
                    notify(&s, &self.files);
                }
                s.exception_enable_mask = mask;
                Ok(())
            }
            KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE => {
                let mut o = a.op_args.launch_override();
                let r = self.set_launch_override(&mut o);
                // The supported mask reaches the caller even with EACCES (kfd_ioctl copies the
                // argument back whatever the result): how a debugger learns what to ask.
                a.op_args = o.into();
                r
            }
            KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE => {
                let mode = a.op_args.launch_mode().launch_mode;
                if !matches!(
                    mode,
                    KFD_DBG_TRAP_WAVE_LAUNCH_MODE_NORMAL
                        | KFD_DBG_TRAP_WAVE_LAUNCH_MODE_HALT
                        | KFD_DBG_TRAP_WAVE_LAUNCH_MODE_DEBUG
                ) {
                    return Err(Errno::EINVAL);
                }
                self.debug.lock().launch_mode = mode;
                Ok(())
            }
            KFD_IOC_DBG_TRAP_SUSPEND_QUEUES => {
                let mask = a.op_args.suspend_queues().exception_mask;
                let ids = match data {
                    DbgTrapData::QueueIds(ids) => &mut **ids,
                    _ => &mut [],
                };
                *returned = self.suspend_queues(ids, mask);
                Ok(())
            }
            KFD_IOC_DBG_TRAP_RESUME_QUEUES => {
                *returned = match data {
                    DbgTrapData::QueueIds(ids) => self.resume_queues(Some(ids)),
                    _ => self.resume_queues(None),
                };
                Ok(())
            }
            KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH => {
                let mut w = a.op_args.set_node_address_watch();
                self.gpu(w.gpu_id).map_err(|_| Errno::ENODEV)?;
                w.id = self.set_watch(
                    w.gpu_id,
                    Watch { address: w.address, mask: w.mask, mode: w.mode },
                )?;
                a.op_args = w.into();
                Ok(())
            }
            KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH => {
                let w = a.op_args.clear_node_address_watch();
                self.gpu(w.gpu_id).map_err(|_| Errno::ENODEV)?;
                let mut s = self.debug.lock();
                s.watches.remove(&(w.gpu_id, w.id)).map(|_| ()).ok_or(Errno::EINVAL)
            }
            KFD_IOC_DBG_TRAP_SET_FLAGS => {
                let mut f = a.op_args.set_flags();
                let r = self.set_flags(&mut f.flags);
                a.op_args = f.into();
                r
            }
            KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT => {
                let mut q = a.op_args.query_debug_event();
                self.query_debug_event(&mut q)?;
                a.op_args = q.into();
                Ok(())
            }
            KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO => {
                let mut q = a.op_args.query_exception_info();
                let info = match data {
                    DbgTrapData::ExceptionInfo(b) => Some(&mut **b),
                    _ => None,
                };
                self.query_exception_info(&mut q, info)?;
                a.op_args = q.into();
                Ok(())
            }
            KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT => {
                let mut q = a.op_args.queue_snapshot();
                let out = match data {
                    DbgTrapData::QueueSnapshot(s) => &mut **s,
                    _ => &mut [],
                };
                self.queue_snapshot(&mut q, out);
                a.op_args = q.into();
                Ok(())
            }
            KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT => {
                let mut d = a.op_args.device_snapshot();
                let out = match data {
                    DbgTrapData::DeviceSnapshot(s) => Some(&mut **s),
                    _ => None,
                };
                self.device_snapshot(&mut d, out)?;
                a.op_args = d.into();
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// `kfd_dbg_trap_enable`: `EALREADY` for a second session; `ENODEV` when a GPU predates
    /// SOC15; `EBUSY` when a queue holds GWS on a GPU without debugger GWS support (gfx11);
    /// `EBADF` for a notification descriptor the process does not have.
    fn dbg_enable(
        &self,
        a: &mut kfd_ioctl_dbg_trap_args,
        data: &mut DbgTrapData<'_>,
    ) -> Result<(), Errno> {
        let mut e = a.op_args.enable();
        if self.debug.lock().enabled {
            return Err(Errno::EALREADY);
        }
        for g in &self.gpus {
            if !soc15(g) {
                return Err(Errno::ENODEV);
            }
            let gfx11 = (110000..120000).contains(&g.facts.gfx_target_version);
            if gfx11 && self.gpu.gws_owner(g.gpu_id).is_some() {
                return Err(Errno::EBUSY);
            }
        }
        let ours = matches!(
            self.files.get(e.dbg_fd),
            Some(File::PipeWrite(_) | File::PipeRead(_) | File::Smi(_))
        );
        let notify_file = if ours { None } else { Some(open_process_fd(e.dbg_fd)?) };
        let mut s = self.debug.lock();
        s.enabled = true;
        s.notify_fd = Some(e.dbg_fd);
        s.notify_file = notify_file;
        s.exception_enable_mask = e.exception_mask;
        if let DbgTrapData::RuntimeInfo(r) = data {
            **r = s.runtime;
        }
        e.rinfo_size = u32::try_from(size_of::<kfd_runtime_info>()).unwrap_or(u32::MAX);
        a.op_args = e.into();
        Ok(())
    }

    /// `kfd_dbg_trap_disable`: with the runtime enabled the debug hardware state is undone
    /// (queues resumed, watches cleared, launch mode and flags reset); a busy or failed runtime
    /// state goes back to enabled; the raised exceptions are forgotten.
    pub(crate) fn dbg_disable(&self) {
        let runtime = self.debug.lock().runtime.runtime_state;
        if runtime == DEBUG_RUNTIME_STATE_ENABLED {
            self.deactivate_debug();
        }
        let mut s = self.debug.lock();
        if runtime != DEBUG_RUNTIME_STATE_DISABLED {
            s.runtime.runtime_state = DEBUG_RUNTIME_STATE_ENABLED;
        }
        s.enabled = false;
        s.notify_fd = None;
        s.notify_file = None;
        s.process_status = 0;
        s.device_status.clear();
        s.queue_status.clear();
        s.vm_fault_data.clear();
        drop(s);
        self.debug.notify();
    }

    /// `kfd_dbg_trap_deactivate` (not an unwind): resume every queue, clear the watches, the
    /// launch mode and the flags.
    pub(crate) fn deactivate_debug(&self) {
        self.resume_queues(None);
        let mut s = self.debug.lock();
        s.watches.clear();
        s.launch_mode = KFD_DBG_TRAP_WAVE_LAUNCH_MODE_NORMAL;
        s.flags = 0;
    }

    /// `kfd_dbg_send_exception_to_runtime`.
    fn send_runtime_event(&self, gpu_id: u32, queue_id: u32, mut mask: u64) -> Result<(), Errno> {
        if mask & KFD_EC_MASK(EC_DEVICE_MEMORY_VIOLATION) != 0 {
            self.gpu(gpu_id).map_err(|_| Errno::ENODEV)?;
            let data = self.debug.lock().vm_fault_data.get(&gpu_id).cloned();
            // The runtime gets the saved fault (kfd_signal_vm_fault_event).
            let fault = data.map_or_else(kfd_hsa_memory_exception_data::default, |d| {
                <kfd_hsa_memory_exception_data as UapiType>::read_from(&d)
            });
            self.events.memory_fault(fault);
            mask &= !KFD_EC_MASK(EC_DEVICE_MEMORY_VIOLATION);
        }
        if mask & KFD_EC_MASK(EC_PROCESS_RUNTIME) != 0 {
            self.debug.lock().runtime_sema += 1;
            self.debug.notify();
            mask &= !KFD_EC_MASK(EC_PROCESS_RUNTIME);
        }
        if mask != 0 {
            // kfd_send_exception_to_runtime: an unknown queue is ignored.
            self.gpu.send_exception_to_runtime(queue_id, mask);
        }
        Ok(())
    }

    fn set_launch_override(
        &self,
        o: &mut kfd_ioctl_dbg_trap_set_wave_launch_override_args,
    ) -> Result<(), Errno> {
        let mut supported = u32::MAX;
        for g in &self.gpus {
            let (bits, replace, refusal) = override_support(g.facts.gfx_target_version);
            supported &= bits;
            let mode_ok = o.override_mode == KFD_DBG_TRAP_OVERRIDE_OR
                || (replace && o.override_mode == KFD_DBG_TRAP_OVERRIDE_REPLACE);
            if !mode_ok {
                return Err(refusal);
            }
        }
        let request = o.support_request_mask;
        o.support_request_mask = supported;
        if request & !supported != 0 {
            return Err(Errno::EACCES);
        }
        let mut s = self.debug.lock();
        let prev = s.trap_override.1;
        let next = (o.enable_mask & request) | (prev & !request);
        s.trap_override = (o.override_mode, next);
        o.enable_mask = prev;
        Ok(())
    }

    /// `kfd_dbg_get_dev_watch_id` + set: the lowest free of the device's 4 watch ids
    /// (`ENOMEM` when all are taken).
    fn set_watch(&self, gpu_id: u32, w: Watch) -> Result<u32, Errno> {
        let mut s = self.debug.lock();
        let id = (0..MAX_WATCH_ADDRESSES)
            .find(|id| !s.watches.contains_key(&(gpu_id, *id)))
            .ok_or(Errno::ENOMEM)?;
        s.watches.insert((gpu_id, id), w);
        Ok(id)
    }

    /// `kfd_dbg_trap_set_flags`: `EACCES` (flags unchanged, the previous ones returned) when a
    /// GPU lacks the capability a flag needs; else the flags are set and the previous ones
    /// returned.
    fn set_flags(&self, flags: &mut u32) -> Result<(), Errno> {
        let mut s = self.debug.lock();
        let prev = s.flags;
        for g in &self.gpus {
            let caps = g.facts.capability;
            let refused = (*flags & KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP != 0
                && caps & HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED == 0)
                || (*flags & KFD_DBG_TRAP_FLAG_SINGLE_ALU_OP != 0
                    && caps & HSA_CAP_TRAP_DEBUG_PRECISE_ALU_OPERATIONS_SUPPORTED == 0)
                || (*flags & KFD_DBG_TRAP_FLAG_LDS_OUT_OF_ADDR_RANGE != 0
                    && g.facts.capability2 & HSA_CAP2_TRAP_DEBUG_LDS_OUT_OF_ADDR_RANGE_SUPPORTED
                        == 0);
            if refused {
                *flags = prev;
                return Err(Errno::EACCES);
            }
        }
        s.flags = *flags;
        *flags = prev;
        Ok(())
    }

    /// `kfd_dbg_ev_query_debug_event`: the first queue (newest first), else device, else the
    /// process with a raised exception the debugger subscribed to; its raised exceptions are
    /// returned and those in the input mask cleared. `EAGAIN` when there is none.
    fn query_debug_event(
        &self,
        q: &mut kfd_ioctl_dbg_trap_query_debug_event_args,
    ) -> Result<(), Errno> {
        let clear = q.exception_mask;
        let queues = self.gpu.queue_ids();
        let mut s = self.debug.lock();
        let enable = s.exception_enable_mask;
        q.exception_mask = 0;
        q.queue_id = 0;
        q.gpu_id = 0;
        for qid in queues.iter().rev() {
            let Some(status) = s.queue_status.get_mut(qid) else { continue };
            if *status & enable != 0 {
                q.exception_mask = *status;
                q.queue_id = *qid;
                q.gpu_id = self.gpu.queue(*qid).map_or(0, |q| q.gpu_id);
                *status &= !clear;
                return Ok(());
            }
        }
        for g in &self.gpus {
            let Some(status) = s.device_status.get_mut(&g.gpu_id) else { continue };
            if *status & enable != 0 {
                q.exception_mask = *status;
                q.gpu_id = g.gpu_id;
                *status &= !clear;
                return Ok(());
            }
        }
        if s.process_status & enable != 0 {
            q.exception_mask = s.process_status;
            s.process_status &= !clear;
            return Ok(());
        }
        Err(Errno::EAGAIN)
    }

    /// `kfd_dbg_trap_query_exception_info`: `EINVAL` without a buffer, for an unknown source or
    /// a code that is no exception; `ENODATA` when the exception is not raised there. Copies
    /// the saved memory-violation data or the runtime info, and reports their full size.
    fn query_exception_info(
        &self,
        q: &mut kfd_ioctl_dbg_trap_query_exception_info_args,
        info: Option<&mut [u8]>,
    ) -> Result<(), Errno> {
        let info = info.ok_or(Errno::EINVAL)?;
        let code = q.exception_code;
        let bit = KFD_EC_MASK(code);
        let mut s = self.debug.lock();
        let mut copied: Option<Vec<u8>> = None;
        let status: &mut u64 = if KFD_DBG_EC_TYPE_IS_QUEUE(code) {
            self.gpu.queue(q.source_id).ok_or(Errno::EINVAL)?;
            s.queue_status.entry(q.source_id).or_default()
        } else if KFD_DBG_EC_TYPE_IS_DEVICE(code) {
            self.gpu(q.source_id)?;
            if s.device_status.get(&q.source_id).is_none_or(|st| st & bit == 0) {
                return Err(Errno::ENODATA);
            }
            if code == EC_DEVICE_MEMORY_VIOLATION {
                let data = if q.clear_exception != 0 {
                    s.vm_fault_data.remove(&q.source_id)
                } else {
                    s.vm_fault_data.get(&q.source_id).cloned()
                };
                copied = Some(data.unwrap_or_default());
            }
            s.device_status.entry(q.source_id).or_default()
        } else if KFD_DBG_EC_TYPE_IS_PROCESS(code) {
            if code == EC_PROCESS_RUNTIME {
                let mut b = vec![0u8; size_of::<kfd_runtime_info>()];
                s.runtime.write_to(&mut b);
                copied = Some(b);
            }
            &mut s.process_status
        } else {
            return Err(Errno::EINVAL);
        };
        if *status & bit == 0 {
            return Err(Errno::ENODATA);
        }
        let actual = copied.as_ref().map_or(0, |c| {
            let n = c.len().min(info.len());
            info[..n].copy_from_slice(&c[..n]);
            c.len()
        });
        q.info_size = u32::try_from(actual).unwrap_or(u32::MAX);
        if q.clear_exception != 0 {
            *status &= !bit;
        }
        Ok(())
    }

    /// `pqm_get_queue_snapshot`: as many entries as fit (newest queue first), the exceptions
    /// in the mask cleared on each queue reported; the number of queues and the entry size
    /// returned.
    fn queue_snapshot(
        &self,
        q: &mut kfd_ioctl_dbg_trap_queue_snapshot_args,
        out: &mut [kfd_queue_snapshot_entry],
    ) {
        let ids = self.gpu.queue_ids();
        let mut s = self.debug.lock();
        let mut n = 0u32;
        for qid in ids.iter().rev() {
            let Some(queue) = self.gpu.queue(*qid) else { continue };
            if let Some(slot) = out.get_mut(n as usize) {
                let status = s.queue_status.entry(*qid).or_default();
                let regs = queue.regs();
                *slot = kfd_queue_snapshot_entry {
                    exception_status: *status,
                    ring_base_address: regs.ring_address,
                    write_pointer_address: queue.write_pointer,
                    read_pointer_address: queue.read_pointer,
                    ctx_save_restore_address: queue.ctx_save,
                    queue_id: *qid,
                    gpu_id: queue.gpu_id,
                    ring_size: u32::try_from(regs.ring_size).unwrap_or(u32::MAX),
                    queue_type: queue.user_type,
                    ctx_save_restore_area_size: queue.ctx_save_size,
                    reserved: 0,
                };
                *status &= !q.exception_mask;
            }
            n += 1;
        }
        q.num_queues = n;
        q.entry_size = q.entry_size.min(size_of_u32::<kfd_queue_snapshot_entry>());
    }

    /// `kfd_dbg_trap_device_snapshot`: `EINVAL` without a buffer; one entry per GPU of the
    /// process as far as they fit, the exceptions in the mask cleared on each device reported.
    fn device_snapshot(
        &self,
        d: &mut kfd_ioctl_dbg_trap_device_snapshot_args,
        out: Option<&mut [kfd_dbg_device_info_entry]>,
    ) -> Result<(), Errno> {
        let out = out.ok_or(Errno::EINVAL)?;
        let mut s = self.debug.lock();
        for (slot, g) in out.iter_mut().zip(&self.gpus) {
            let status = s.device_status.entry(g.gpu_id).or_default();
            let f = &g.facts;
            let (lds, scratch, gpuvm) = crate::kfd::apertures_of();
            *slot = kfd_dbg_device_info_entry {
                exception_status: *status,
                lds_base: lds.0,
                lds_limit: lds.1,
                scratch_base: scratch.0,
                scratch_limit: scratch.1,
                gpuvm_base: gpuvm.0,
                gpuvm_limit: gpuvm.1,
                gpu_id: g.gpu_id,
                location_id: f.location_id,
                vendor_id: f.vendor_id,
                device_id: f.device_id,
                revision_id: 0,
                subsystem_vendor_id: 0,
                subsystem_device_id: 0,
                fw_version: f.fw_version,
                gfx_target_version: f.gfx_target_version,
                simd_count: f.simd_count,
                max_waves_per_simd: f.max_waves_per_simd,
                array_count: f.array_count,
                simd_arrays_per_engine: f.simd_arrays_per_engine,
                num_xcc: f.num_xcc,
                capability: f.capability,
                debug_prop: f.debug_prop,
                capability2: f.capability2,
                pad: 0,
            };
            *status &= !d.exception_mask;
        }
        d.num_devices = u32::try_from(self.gpus.len()).unwrap_or(u32::MAX);
        d.entry_size = d.entry_size.min(size_of_u32::<kfd_dbg_device_info_entry>());
        Ok(())
    }

    /// `suspend_queues`: every id starts marked invalid; a listed queue that exists, is not new
    /// to the debugger (`EC_QUEUE_NEW` raised) and is not being destroyed is suspended (or
    /// already was), unmarked and counted, and loses the exceptions in `clear`.
    fn suspend_queues(&self, ids: &mut [u32], clear: u64) -> u32 {
        for id in ids.iter_mut() {
            *id |= KFD_DBG_QUEUE_INVALID_MASK;
        }
        let mut count = 0;
        for qid in self.gpu.queue_ids() {
            let Some(i) = ids.iter().position(|id| id & !KFD_DBG_QUEUE_INVALID_MASK == qid) else {
                continue;
            };
            let Some(queue) = self.gpu.queue(qid) else { continue };
            let busy = {
                let s = self.debug.lock();
                let new =
                    s.queue_status.get(&qid).is_some_and(|st| st & KFD_EC_MASK(EC_QUEUE_NEW) != 0);
                new || s.being_destroyed.contains(&qid)
            };
            if busy && !queue.is_suspended() {
                continue;
            }
            queue.set_suspended(true);
            ids[i] &= !KFD_DBG_QUEUE_INVALID_MASK;
            if let Some(st) = self.debug.lock().queue_status.get_mut(&qid) {
                *st &= !clear;
            }
            count += 1;
        }
        count
    }

    /// `resume_queues`: all queues (`None`), or the listed ones (ids marked invalid unless the
    /// queue exists); returns how many were resumed. Wakes destructions waiting for a resume.
    pub(crate) fn resume_queues(&self, ids: Option<&mut [u32]>) -> u32 {
        let mut ids = ids;
        if let Some(ids) = ids.as_deref_mut() {
            for id in ids.iter_mut() {
                *id |= KFD_DBG_QUEUE_INVALID_MASK;
            }
        }
        let mut count = 0;
        for qid in self.gpu.queue_ids() {
            let index = match ids.as_deref() {
                None => None,
                Some(list) => {
                    match list.iter().position(|id| id & !KFD_DBG_QUEUE_INVALID_MASK == qid) {
                        Some(i) => Some(i),
                        None => continue,
                    }
                }
            };
            let Some(queue) = self.gpu.queue(qid) else { continue };
            queue.set_suspended(false);
            if let (Some(list), Some(i)) = (ids.as_deref_mut(), index) {
                list[i] &= !KFD_DBG_QUEUE_INVALID_MASK;
            }
            count += 1;
        }
        self.debug.notify();
        count
    }

    /// A queue was created: with a debug session on, it raises `EC_QUEUE_NEW`.
    pub(crate) fn debug_queue_created(&self, qid: u32) {
        self.debug.raise(&self.files, KFD_EC_MASK(EC_QUEUE_NEW), Source::Queue(qid));
    }

    /// Before a queue is destroyed: with a debug session on, the destruction of a suspended
    /// queue waits until it is resumed (`destroy_queue_cpsch`); then the queue's raised
    /// exceptions go.
    pub(crate) fn debug_queue_destroying(&self, qid: u32) {
        let Some(queue) = self.gpu.queue(qid) else { return };
        let mut s = self.debug.lock();
        if s.enabled && queue.is_suspended() {
            s.being_destroyed.insert(qid);
            s = self.debug.wait_until(s, |_| !queue.is_suspended());
            s.being_destroyed.remove(&qid);
        }
        s.queue_status.remove(&qid);
    }
}

fn size_of_u32<T>() -> u32 {
    u32::try_from(size_of::<T>()).unwrap_or(u32::MAX)
}

/// The process's own descriptor `fd` (kfdtest passes a FIFO it opened), opened a second time
/// through `/proc/self/fd` for non-blocking writes — the simulator cannot borrow a number it
/// does not own. `EBADF` when it is not open or cannot be written.
fn open_process_fd(fd: u32) -> Result<std::fs::File, Errno> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed())
        .open(format!("/proc/self/fd/{fd}"))
        .map_err(|_| Errno::EBADF)
}
