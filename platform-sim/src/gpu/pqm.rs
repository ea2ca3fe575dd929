//! The queue ioctls, as amdkfd's `kfd_chardev.c` + process queue manager
//! (`kfd_process_queue_manager.c`) + `kfd_queue.c` handle them (Linux 7.2/7.3, KFD 1.23), with
//! the same checks in the same order and the same errnos:
//!
//! - `CREATE_QUEUE`: percentage (bits 0..8) > 100, priority > 15 → `EINVAL`; ring/pointer
//!   addresses outside user space → `EFAULT`; ring size not a power of two (0 allowed) →
//!   `EINVAL`, below 1024 → raised to 1024; unknown queue type → `ENOTSUPP` (524); unknown
//!   gpu_id → `EINVAL`; a GPU whose VM was not acquired → `ESRCH`; SDMA engine id past the node's engines → `EINVAL`; then the buffers
//!   (`kfd_queue_acquire_buffers`): write and read pointers each in the first page of a one-page
//!   mapping, the ring at the start of a mapping of exactly its size, for compute queues the
//!   EOP buffer (if given) of exactly the node's EOP size, a control stack of exactly the node's
//!   `ctl_stack_size`, a save area of at least `cwsr_size` in a mapping of exactly
//!   `(ctx + debug) × num_xcc` (page-rounded) — any mismatch `EINVAL`; then the queue count
//!   (127 per GPU, 255 on gfx9.4.3/9.5.0) → `ENOSPC`; 1024 queues per process → `ENOMEM`; an SDMA
//!   engine without a free queue → `ENOMEM`. The buffers are pinned while the queue lives.
//! - `DESTROY_QUEUE`: unknown id → `EINVAL`.
//! - `UPDATE_QUEUE`: as create for percentage, priority, ring address and size; unknown id →
//!   `EFAULT`; a new ring that is not exactly a mapping → `EFAULT`.
//! - `SET_CU_MASK`: count not a non-zero multiple of 32 → `EINVAL`, more than 1024 bits are
//!   dropped, a short mask array → `EFAULT`, unknown id → `EFAULT`.
//! - `ALLOC_QUEUE_GWS`: unknown id → `EINVAL`; no GWS on the GPU → `ENODEV`; GWS already held by
//!   a queue of the process on that GPU → `EBUSY`; releasing GWS not held → `EINVAL`;
//!   `first_gws` is 0.
//! - `GET_QUEUE_WAVE_STATE`: unknown id → `EFAULT`; not a compute queue, still active, or no
//!   CWSR → `EINVAL`; nothing is saved in the simulator, so both sizes are 0.
//! - `SET_TRAP_HANDLER`: unknown gpu_id → `EINVAL`; VM not acquired → `ESRCH`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use hsakmt_core::error::Errno;
use hsakmt_core::topology::{NodeKind, Topology};
use hsakmt_core::uapi::{
    KFD_IOC_QUEUE_TYPE_COMPUTE, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, KFD_IOC_QUEUE_TYPE_SDMA,
    KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID, KFD_IOC_QUEUE_TYPE_SDMA_XGMI, KFD_MAX_QUEUE_PERCENTAGE,
    KFD_MAX_QUEUE_PRIORITY, KFD_MIN_QUEUE_RING_SIZE, kfd_ioctl_alloc_queue_gws_args,
    kfd_ioctl_create_queue_args, kfd_ioctl_destroy_queue_args, kfd_ioctl_get_queue_wave_state_args,
    kfd_ioctl_set_cu_mask_args, kfd_ioctl_set_trap_handler_args, kfd_ioctl_update_queue_args,
};

use super::vm::{GPU_PAGE, Pin};
use super::{GpuModel, Live, QueueKind, Regs, SimQueue, lock};

/// The kernel's `-ENOTSUPP` (not a userspace errno, but what the ioctl returns).
pub(crate) const ENOTSUPP: Errno = Errno(524);

/// `KFD_MAX_NUM_OF_QUEUES_PER_PROCESS`.
pub(crate) const MAX_QUEUES_PER_PROCESS: usize = 1024;

/// `TASK_SIZE` on x86-64: `access_ok` fails at or above it.
const TASK_SIZE: u64 = 0x0000_7FFF_FFFF_F000;

/// `KFD_MMAP_TYPE_DOORBELL`.
pub(crate) const MMAP_TYPE_DOORBELL: u64 = 3 << 62;
/// `KFD_MMAP_GPU_ID_SHIFT`.
pub(crate) const MMAP_GPU_ID_SHIFT: u32 = 46;

/// What the simulated kernel knows about one GPU (its `kfd_node` and topology properties).
#[derive(Debug, Clone)]
pub(crate) struct GpuFacts {
    pub(crate) gpu_id: u32,
    pub(crate) gfx_target: u32,
    pub(crate) num_xcc: u32,
    pub(crate) sdma_engines: u32,
    pub(crate) xgmi_engines: u32,
    pub(crate) sdma_queues_per_engine: u32,
    pub(crate) gws: u32,
    pub(crate) eop_size: u32,
    pub(crate) ctl_stack_size: u32,
    pub(crate) cwsr_size: u32,
    pub(crate) debug_memory_size: u32,
    pub(crate) max_queues: u32,
    pub(crate) doorbell_size: u64,
}

/// The SDMA engines (PCIe, XGMI) and queues per engine of a GPU whose topology predates the
/// `num_sdma_*` keys (amdkfd before Linux 5.x did not print them; the hardware had them): the
/// values of amdkfd's `kfd_device_info` for the ASIC — Vega 10 (gfx900): 2 engines of 2 queues
/// (`vega10_device_info`). Other ASICs: none known here.
const fn legacy_sdma(gfx_target: u32) -> (u32, u32, u32) {
    match gfx_target {
        90000 => (2, 0, 2),
        _ => (0, 0, 0),
    }
}

const fn align(v: u64, a: u64) -> u64 {
    v.div_ceil(a) * a
}

impl GpuFacts {
    /// A device with nothing but doorbells (`doorbell_size` bytes each): the host driver's
    /// CPU agents, whose queues need the command processor and no GPU resources.
    pub(crate) fn doorbells_only(gpu_id: u32, doorbell_size: u64) -> Self {
        GpuFacts {
            gpu_id,
            gfx_target: 0,
            num_xcc: 1,
            sdma_engines: 0,
            xgmi_engines: 0,
            sdma_queues_per_engine: 0,
            gws: 0,
            eop_size: 0,
            ctl_stack_size: 0,
            cwsr_size: 0,
            debug_memory_size: 0,
            max_queues: 0,
            doorbell_size,
        }
    }

    /// The facts of every accessible GPU node of `topology`, with the context-save sizes
    /// computed as `kfd_queue_ctx_save_restore_size` does (or taken from the node's sysfs
    /// `cwsr_size` / `ctl_stack_size` when it prints them).
    pub(crate) fn from_topology(topology: &Topology) -> Vec<GpuFacts> {
        topology
            .nodes()
            .filter(|v| v.node().kind() != NodeKind::Cpu && v.node().is_accessible())
            .filter_map(|v| {
                let n = v.node();
                let gpu_id = n.gpu_id().filter(|g| *g != 0)?;
                let p = n.properties();
                let gfxv = n.gfx().map_or(0, |g| g.target_version());
                let num_xcc = p.num_xcc().unwrap_or(1).max(1);
                let legacy = legacy_sdma(gfxv);
                let mut f = GpuFacts {
                    gpu_id,
                    gfx_target: gfxv,
                    num_xcc,
                    sdma_engines: p.num_sdma_engines().unwrap_or(legacy.0),
                    xgmi_engines: p.num_sdma_xgmi_engines().unwrap_or(legacy.1),
                    sdma_queues_per_engine: p.num_sdma_queues_per_engine().unwrap_or(legacy.2),
                    gws: p.num_gws().unwrap_or(0),
                    eop_size: 0,
                    ctl_stack_size: 0,
                    cwsr_size: 0,
                    debug_memory_size: 0,
                    max_queues: if gfxv == 90402 || gfxv == 90500 { 255 } else { 127 },
                    doorbell_size: if gfxv >= 90000 { 8 } else { 4 },
                };
                f.ctx_save_restore_size(
                    p.simd_count().unwrap_or(0),
                    p.simd_per_cu().unwrap_or(0),
                    p.array_count().unwrap_or(0),
                    p.simd_arrays_per_engine().unwrap_or(0),
                    p.lds_size_in_kb().unwrap_or(0),
                );
                if let Some(c) = p.cwsr_size().filter(|c| *c > 0) {
                    f.cwsr_size = c;
                }
                if let Some(c) = p.ctl_stack_size().filter(|c| *c > 0) {
                    f.ctl_stack_size = c;
                }
                Some(f)
            })
            .collect()
    }

    /// `kfd_queue_ctx_save_restore_size` (Linux 7.3 `kfd_queue.c`).
    fn ctx_save_restore_size(
        &mut self,
        simd: u32,
        simd_per_cu: u32,
        arrays: u32,
        sape: u32,
        lds_kb: u32,
    ) {
        let gfxv = self.gfx_target;
        if gfxv < 80001 || simd_per_cu == 0 {
            return;
        }
        let cu = u64::from(simd / simd_per_cu / self.num_xcc);
        // sysfs prints array_count × NUM_XCC; the kernel's own value is per XCC.
        let per_xcc_arrays = u64::from(arrays / self.num_xcc);
        let wave_num = if gfxv < 100100 {
            (cu * 40).min(per_xcc_arrays.checked_div(u64::from(sape)).unwrap_or(0) * 512)
        } else {
            cu * 32
        };
        let vgpr = match gfxv {
            90402 | 90010 | 90008 | 90500 => 0x80000,
            110000 | 110001 | 120000 | 120001 => 0x60000,
            _ => 0x40000,
        };
        let lds = if gfxv == 90500 { u64::from(lds_kb) << 10 } else { 0x10000 };
        let wg_data = align(cu * (vgpr + 0x4000 + lds + 0x1000), GPU_PAGE);
        let per_wave = if gfxv >= 100100 { 12 } else { 8 };
        let mut ctl = align(40 + wave_num * per_wave + 8, GPU_PAGE);
        if gfxv / 10000 * 10000 == 100000 {
            ctl = ctl.min(0x7000);
        }
        self.ctl_stack_size = ctl as u32;
        self.debug_memory_size = align(wave_num * 32, 64) as u32;
        self.cwsr_size = (ctl + wg_data) as u32;
        self.eop_size = if gfxv == 80002 { 0x8000 } else { 4096 };
    }

    fn soc15(&self) -> bool {
        self.gfx_target >= 90000
    }
}

/// Per-process queue bookkeeping (`process_queue_manager` + the per-device counts).
#[derive(Debug, Default)]
pub(crate) struct Pqm {
    /// qid → gpu_id.
    qids: BTreeMap<u32, u32>,
    /// Doorbell indices in use, per GPU.
    doorbells: BTreeMap<u32, BTreeSet<u32>>,
    /// SDMA queues per (gpu, engine).
    sdma: BTreeMap<(u32, u32), u32>,
    /// The queue holding each GPU's GWS.
    gws: BTreeMap<u32, u32>,
    /// CU masks by qid.
    cu_masks: BTreeMap<u32, Vec<u32>>,
    /// Trap handlers (tba, tma) per GPU.
    trap: BTreeMap<u32, (u64, u64)>,
}

/// The checks amdkfd makes of the queue parameters create and update share: percentage and
/// priority in range, a readable ring, a power-of-two ring size. Returns the ring size raised
/// to the kernel's minimum.
fn checked_ring(
    percentage: u32,
    priority: u32,
    ring_base_address: u64,
    ring_size: u32,
) -> Result<u32, Errno> {
    if percentage & 0xFF > KFD_MAX_QUEUE_PERCENTAGE || priority > KFD_MAX_QUEUE_PRIORITY {
        return Err(Errno::EINVAL);
    }
    if ring_base_address != 0 && !access_ok(ring_base_address, 8) {
        return Err(Errno::EFAULT);
    }
    if !ring_size.is_power_of_two() && ring_size != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(ring_size.max(KFD_MIN_QUEUE_RING_SIZE))
}

/// The type amdkfd reports for a queue (`set_queue_type_for_user`): compute queues by format,
/// SDMA queues by the kind of engine they run on.
fn user_queue_type(requested: u32, kind: QueueKind, f: &GpuFacts) -> u32 {
    match kind {
        QueueKind::Sdma { engine } if engine >= f.sdma_engines => KFD_IOC_QUEUE_TYPE_SDMA_XGMI,
        QueueKind::Sdma { .. } => KFD_IOC_QUEUE_TYPE_SDMA,
        QueueKind::Aql | QueueKind::Pm4 => requested,
    }
}

fn access_ok(addr: u64, size: u64) -> bool {
    addr.checked_add(size).is_some_and(|e| e <= TASK_SIZE)
}

impl GpuModel {
    fn put_pins(&self, pins: &[Pin]) {
        for p in pins {
            self.cp.vm.queue_buffer_put(*p);
        }
    }

    /// `kfd_queue_acquire_buffers`.
    fn acquire_buffers(
        &self,
        f: &GpuFacts,
        a: &kfd_ioctl_create_queue_args,
        compute: bool,
        aql: bool,
    ) -> Result<Vec<Pin>, Errno> {
        let mut pins = Vec::new();
        let vm = &self.cp.vm;
        let gpu = f.gpu_id;
        let ring_size = if compute && aql && (70000..90000).contains(&f.gfx_target) {
            u64::from(a.ring_size) / 2
        } else {
            u64::from(a.ring_size)
        };
        let mut take = |va: u64, size: u64| -> Result<(), Errno> {
            pins.push(vm.queue_buffer_get(gpu, va, size)?);
            Ok(())
        };
        let r = (|| {
            take(a.write_pointer_address, GPU_PAGE)?;
            take(a.read_pointer_address, GPU_PAGE)?;
            take(a.ring_base_address, ring_size)?;
            if !compute {
                return Ok(());
            }
            if a.eop_buffer_address != 0 {
                if a.eop_buffer_size != u64::from(f.eop_size) {
                    return Err(Errno::EINVAL);
                }
                take(a.eop_buffer_address, a.eop_buffer_size)?;
            }
            if a.ctl_stack_size != f.ctl_stack_size || a.ctx_save_restore_size < f.cwsr_size {
                return Err(Errno::EINVAL);
            }
            if f.cwsr_size == 0 && a.ctx_save_restore_address == 0 {
                return Ok(());
            }
            let total = align(
                (u64::from(a.ctx_save_restore_size) + u64::from(f.debug_memory_size))
                    * u64::from(f.num_xcc),
                GPU_PAGE,
            );
            take(a.ctx_save_restore_address, total)
        })();
        match r {
            Ok(()) => Ok(pins),
            Err(e) => {
                self.put_pins(&pins);
                Err(e)
            }
        }
    }

    /// `AMDKFD_IOC_CREATE_QUEUE`.
    pub(crate) fn create_queue(
        &self,
        a: &mut kfd_ioctl_create_queue_args,
        kfd_minor: u32,
        vm_acquired: bool,
    ) -> Result<(), Errno> {
        a.ring_size =
            checked_ring(a.queue_percentage, a.queue_priority, a.ring_base_address, a.ring_size)?;
        if !access_ok(a.read_pointer_address, 4)
            || !access_ok(a.write_pointer_address, 4)
            || (a.eop_buffer_address != 0 && !access_ok(a.eop_buffer_address, 4))
            || (a.ctx_save_restore_address != 0 && !access_ok(a.ctx_save_restore_address, 4))
        {
            return Err(Errno::EFAULT);
        }
        let (compute, aql) = match a.queue_type {
            KFD_IOC_QUEUE_TYPE_COMPUTE => (true, false),
            KFD_IOC_QUEUE_TYPE_COMPUTE_AQL => (true, true),
            KFD_IOC_QUEUE_TYPE_SDMA | KFD_IOC_QUEUE_TYPE_SDMA_XGMI => (false, false),
            KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID if kfd_minor >= 17 => (false, false),
            _ => return Err(ENOTSUPP),
        };
        let f = self.facts(a.gpu_id).ok_or(Errno::EINVAL)?.clone();
        // kfd_bind_process_to_device: a GPU whose VM the process has not acquired.
        if !vm_acquired {
            return Err(Errno::ESRCH);
        }
        let engines = f.sdma_engines + f.xgmi_engines;
        if a.queue_type == KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID && a.sdma_engine_id >= engines {
            return Err(Errno::EINVAL);
        }
        let pins = self.acquire_buffers(&f, a, compute, aql)?;
        match self.install(&f, a, compute, aql, pins.clone()) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.put_pins(&pins);
                Err(e)
            }
        }
    }

    /// `pqm_create_queue`: counts, slots, doorbell, then the queue itself.
    fn install(
        &self,
        f: &GpuFacts,
        a: &mut kfd_ioctl_create_queue_args,
        compute: bool,
        aql: bool,
        pins: Vec<Pin>,
    ) -> Result<(), Errno> {
        let mut pqm = lock(&self.pqm);
        let on_gpu = pqm.qids.values().filter(|g| **g == f.gpu_id).count();
        if on_gpu >= f.max_queues as usize {
            return Err(Errno::ENOSPC);
        }
        let qid = (0..MAX_QUEUES_PER_PROCESS as u32)
            .find(|q| !pqm.qids.contains_key(q))
            .ok_or(Errno::ENOMEM)?;
        let kind = if compute {
            if aql { QueueKind::Aql } else { QueueKind::Pm4 }
        } else {
            let per = f.sdma_queues_per_engine.max(1);
            let used = |e: u32| pqm.sdma.get(&(f.gpu_id, e)).copied().unwrap_or(0);
            let range = match a.queue_type {
                KFD_IOC_QUEUE_TYPE_SDMA => 0..f.sdma_engines,
                KFD_IOC_QUEUE_TYPE_SDMA_XGMI => f.sdma_engines..f.sdma_engines + f.xgmi_engines,
                _ => a.sdma_engine_id..a.sdma_engine_id + 1,
            };
            let engine = range.clone().min_by_key(|e| used(*e)).filter(|e| used(*e) < per);
            QueueKind::Sdma { engine: engine.ok_or(Errno::ENOMEM)? }
        };
        let index = if f.soc15() {
            let used = pqm.doorbells.entry(f.gpu_id).or_default();
            (0..1024u32).find(|i| !used.contains(i)).ok_or(Errno::ENOMEM)?
        } else {
            qid
        };
        pqm.qids.insert(qid, f.gpu_id);
        self.cp.vm.set_live_queues(u32::try_from(pqm.qids.len()).unwrap_or(u32::MAX));
        pqm.doorbells.entry(f.gpu_id).or_default().insert(index);
        if let QueueKind::Sdma { engine } = kind {
            *pqm.sdma.entry((f.gpu_id, engine)).or_default() += 1;
        }
        // The queue goes live before the lock is dropped: a destroy of its id (the id and the
        // doorbell index are taken now) must find it.
        let regs = Regs {
            ring_address: a.ring_base_address,
            ring_size: u64::from(a.ring_size),
            percentage: a.queue_percentage & 0xFF,
            priority: a.queue_priority,
        };
        let q = SimQueue::new(
            qid,
            f.gpu_id,
            kind,
            index,
            (a.read_pointer_address, a.write_pointer_address),
            if compute { a.ctx_save_restore_address } else { 0 },
            f.gfx_target,
            regs,
            pins,
        )
        .with_snapshot_facts(
            if compute { a.ctx_save_restore_size } else { 0 },
            user_queue_type(a.queue_type, kind, f),
        );
        self.start(Arc::new(q));
        drop(pqm);
        a.queue_id = qid;
        a.doorbell_offset = MMAP_TYPE_DOORBELL | (u64::from(f.gpu_id) << MMAP_GPU_ID_SHIFT);
        if f.soc15() {
            a.doorbell_offset |= u64::from(index) * f.doorbell_size;
        }
        Ok(())
    }

    /// Stops and forgets queue `qid`, releasing its pins and slots. The id, the doorbell index
    /// and the engine slot are released together with taking the queue out of the live set
    /// (under the process lock), so a concurrent creation reusing them never meets the old
    /// queue; the processor is stopped after.
    fn remove(&self, qid: u32) -> Result<(), Errno> {
        let mut pqm = lock(&self.pqm);
        let gpu = pqm.qids.remove(&qid).ok_or(Errno::EINVAL)?;
        self.cp.vm.set_live_queues(u32::try_from(pqm.qids.len()).unwrap_or(u32::MAX));
        pqm.cu_masks.remove(&qid);
        if pqm.gws.get(&gpu) == Some(&qid) {
            pqm.gws.remove(&gpu);
        }
        let live = self.detach(qid);
        if let Some(q) = live.as_ref().map(Live::queue) {
            if let Some(s) = pqm.doorbells.get_mut(&gpu) {
                s.remove(&q.doorbell_index);
            }
            if let QueueKind::Sdma { engine } = q.kind
                && let Some(n) = pqm.sdma.get_mut(&(gpu, engine))
            {
                *n = n.saturating_sub(1);
            }
        }
        drop(pqm);
        if let Some(live) = live {
            let q = self.halt(live);
            let pins = std::mem::take(&mut *lock(&q.pins));
            self.put_pins(&pins);
        }
        Ok(())
    }

    /// `AMDKFD_IOC_DESTROY_QUEUE`. A hung queue cannot be preempted: amdkfd removes it anyway,
    /// resets the GPU and fails with `ETIME` (`pqm_destroy_queue` carries on after `-ETIME`).
    pub(crate) fn destroy_queue(&self, a: &kfd_ioctl_destroy_queue_args) -> Result<(), Errno> {
        let hung = self.queue(a.queue_id).filter(|q| q.is_hung()).map(|q| q.gpu_id);
        self.remove(a.queue_id)?;
        match hung {
            Some(gpu_id) => {
                self.cp.events.gpu_hang(gpu_id);
                Err(Errno::ETIME)
            }
            None => Ok(()),
        }
    }

    /// Destroys every queue and forgets the doorbell pages (the process released `/dev/kfd`).
    pub(crate) fn destroy_all(&self) {
        for qid in self.queue_ids() {
            let _ = self.remove(qid);
        }
        let mut pqm = lock(&self.pqm);
        *pqm = Pqm::default();
        drop(pqm);
        for d in self.doorbells.values() {
            d.clear_page();
        }
    }

    /// `AMDKFD_IOC_UPDATE_QUEUE`.
    pub(crate) fn update_queue(&self, a: &mut kfd_ioctl_update_queue_args) -> Result<(), Errno> {
        a.ring_size =
            checked_ring(a.queue_percentage, a.queue_priority, a.ring_base_address, a.ring_size)?;
        let q = self.queue(a.queue_id).ok_or(Errno::EFAULT)?;
        if q.is_hung() {
            // The HWS cannot unmap the queue to change it: the preemption times out.
            self.cp.events.gpu_hang(q.gpu_id);
            return Err(Errno::ETIME);
        }
        let size = u64::from(a.ring_size);
        let pin = if a.ring_base_address != 0 {
            Some(
                self.cp
                    .vm
                    .queue_buffer_get(q.gpu_id, a.ring_base_address, size)
                    .map_err(|_| Errno::EFAULT)?,
            )
        } else {
            None
        };
        let regs = Regs {
            ring_address: a.ring_base_address,
            ring_size: size,
            percentage: a.queue_percentage & 0xFF,
            priority: a.queue_priority,
        };
        q.update(regs, || {
            let Some(pin) = pin else { return };
            let mut pins = lock(&q.pins);
            // The ring's pin is the third (after the write and read pointers).
            if let Some(old) = pins.get_mut(2) {
                let old = std::mem::replace(old, pin);
                self.cp.vm.queue_buffer_put(old);
            } else {
                pins.push(pin);
            }
        });
        Ok(())
    }

    /// `AMDKFD_IOC_SET_CU_MASK` (`mask` is what the user pointer holds).
    pub(crate) fn set_cu_mask(
        &self,
        a: &kfd_ioctl_set_cu_mask_args,
        mask: &[u32],
    ) -> Result<(), Errno> {
        if !a.num_cu_mask.is_multiple_of(32) || a.num_cu_mask == 0 {
            return Err(Errno::EINVAL);
        }
        let words = (a.num_cu_mask.min(1024) / 32) as usize;
        let copied = mask.get(..words).ok_or(Errno::EFAULT)?.to_vec();
        let mut pqm = lock(&self.pqm);
        if !pqm.qids.contains_key(&a.queue_id) {
            return Err(Errno::EFAULT);
        }
        pqm.cu_masks.insert(a.queue_id, copied);
        Ok(())
    }

    /// The CU mask last set on `qid`.
    pub(crate) fn cu_mask(&self, qid: u32) -> Option<Vec<u32>> {
        lock(&self.pqm).cu_masks.get(&qid).cloned()
    }

    /// `AMDKFD_IOC_ALLOC_QUEUE_GWS`.
    pub(crate) fn alloc_queue_gws(
        &self,
        a: &mut kfd_ioctl_alloc_queue_gws_args,
    ) -> Result<(), Errno> {
        let mut pqm = lock(&self.pqm);
        let gpu = *pqm.qids.get(&a.queue_id).ok_or(Errno::EINVAL)?;
        let f = self.facts(gpu).ok_or(Errno::EINVAL)?;
        if f.gws == 0 {
            return Err(Errno::ENODEV);
        }
        match (a.num_gws != 0, pqm.gws.get(&gpu).copied()) {
            (true, Some(_)) => return Err(Errno::EBUSY),
            (false, None) => return Err(Errno::EINVAL),
            (true, None) => {
                pqm.gws.insert(gpu, a.queue_id);
            }
            (false, Some(_)) => {
                pqm.gws.remove(&gpu);
            }
        }
        a.first_gws = 0;
        Ok(())
    }

    /// `AMDKFD_IOC_GET_QUEUE_WAVE_STATE`.
    pub(crate) fn queue_wave_state(
        &self,
        a: &mut kfd_ioctl_get_queue_wave_state_args,
    ) -> Result<(), Errno> {
        let q = self.queue(a.queue_id).ok_or(Errno::EFAULT)?;
        let cwsr = self.facts(q.gpu_id).is_some_and(|f| f.cwsr_size > 0);
        if matches!(q.kind, QueueKind::Sdma { .. }) || q.is_active() || !cwsr {
            return Err(Errno::EINVAL);
        }
        a.ctl_stack_used_size = 0;
        a.save_area_used_size = 0;
        Ok(())
    }

    /// `AMDKFD_IOC_SET_TRAP_HANDLER`.
    pub(crate) fn set_trap_handler(
        &self,
        a: &kfd_ioctl_set_trap_handler_args,
        vm_acquired: bool,
    ) -> Result<(), Errno> {
        self.facts(a.gpu_id).ok_or(Errno::EINVAL)?;
        if !vm_acquired {
            return Err(Errno::ESRCH);
        }
        lock(&self.pqm).trap.insert(a.gpu_id, (a.tba_addr, a.tma_addr));
        self.cp.set_trap_handler(a.gpu_id, a.tba_addr, a.tma_addr);
        Ok(())
    }

    /// The trap handler set on `gpu_id`.
    pub(crate) fn trap_handler(&self, gpu_id: u32) -> Option<(u64, u64)> {
        lock(&self.pqm).trap.get(&gpu_id).copied()
    }

    /// The queue holding `gpu_id`'s GWS.
    pub(crate) fn gws_owner(&self, gpu_id: u32) -> Option<u32> {
        lock(&self.pqm).gws.get(&gpu_id).copied()
    }
}
