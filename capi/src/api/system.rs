//! Per-GPU system facilities: the MMIO-remap (HDP flush) pages, `hsaKmtGetClockCounters`,
//! `hsaKmtGetTileConfig`, `hsaKmtGetAMDGPUDeviceHandle`, and the simulator accounting export of
//! `hsakmt_rs.h`.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hsakmt_core::config::NODE_SET_CAPACITY;
use hsakmt_core::device::{Error as DeviceError, Kfd, MemoryStorage};
use hsakmt_core::platform::{Ioctl, Platform};
use hsakmt_core::uapi::{kfd_ioctl_get_clock_counters_args, kfd_ioctl_get_tile_config_args};

use super::status::device_status;
use super::{opened, require, tri};
use crate::device::{Device, with_kfd};
use crate::types::*;

/// The MMIO-remap page of each GPU node (0: none), mapped at the first
/// `hsaKmtAcquireSystemProperties` of an open, as upstream's aperture setup maps it.
static MMIO: [AtomicU64; NODE_SET_CAPACITY] = [const { AtomicU64::new(0) }; NODE_SET_CAPACITY];

/// Whether this open mapped the pages already.
static MMIO_MAPPED: AtomicBool = AtomicBool::new(false);

/// The MMIO-remap page of node `node`, if mapped.
pub(super) fn mmio_page(node: u32) -> Option<u64> {
    MMIO.get(node as usize).map(|a| a.load(Ordering::Acquire)).filter(|a| *a != 0)
}

/// Maps every GPU's MMIO-remap page once per open; a GPU whose page cannot be mapped simply
/// reports no MMIO heap, as upstream.
pub(super) fn map_mmio<P: Platform, S: MemoryStorage<P::Mapping>>(k: &Kfd<P, S>) {
    if MMIO_MAPPED.swap(true, Ordering::AcqRel) {
        return;
    }
    let Ok(gpus) = k.gpu_nodes() else { return };
    for node in gpus.iter() {
        if let (Ok(a), Some(slot)) = (k.alloc_mmio_remap(node), MMIO.get(node as usize)) {
            slot.store(a.addr, Ordering::Release);
            // The library keeps its own view.
            drop(a.mapping);
        }
    }
}

/// Frees the MMIO-remap pages (before the last close).
pub(super) fn release_mmio<P: Platform, S: MemoryStorage<P::Mapping>>(k: &Kfd<P, S>) {
    for slot in &MMIO {
        let addr = slot.swap(0, Ordering::AcqRel);
        if addr != 0 {
            let _ = k.free_memory(addr);
        }
    }
    MMIO_MAPPED.store(false, Ordering::Release);
}

/// Forgets the pages without freeing them (the facade forgot every object).
pub(super) fn forget_mmio() {
    for slot in &MMIO {
        slot.store(0, Ordering::Release);
    }
    MMIO_MAPPED.store(false, Ordering::Release);
}

/// The gpu_id of user node `node` (0 for a CPU node), or `HSAKMT_STATUS_INVALID_NODE_UNIT`.
fn gpu_id_of<P: Platform, S: MemoryStorage<P::Mapping>>(
    k: &Kfd<P, S>,
    what: &str,
    node: u32,
) -> Result<u32, HSAKMT_STATUS> {
    k.check_open().map_err(|e| device_status(what, &e))?;
    k.with_topology(|t| t.node_by_user_id(node).map(|n| n.node().gpu_id().unwrap_or(0)))
        .map_err(|e| device_status(what, &e))?
        .ok_or(HSAKMT_STATUS_INVALID_NODE_UNIT)
}

/// `hsaKmtGetClockCounters`: GPU, CPU and system clock counters (`AMDKFD_IOC_GET_CLOCK_COUNTERS`
/// with the node's gpu_id, 0 for a CPU node, as upstream).
///
/// # Safety
/// `Counters` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetClockCounters(
    NodeId: HSAuint32,
    Counters: *mut HsaClockCounters,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    let r = with_kfd!(dev, k => {
        let gpu_id = tri!(gpu_id_of(k, "hsaKmtGetClockCounters", NodeId));
        require!(Counters, HSAKMT_STATUS_INVALID_PARAMETER);
        let mut args = kfd_ioctl_get_clock_counters_args { gpu_id, ..Default::default() };
        k.ioctl(&mut Ioctl::GetClockCounters(&mut args)).map(|()| args)
    });
    match r {
        Ok(a) => {
            let c = HsaClockCounters {
                GPUClockCounter: a.gpu_clock_counter,
                CPUClockCounter: a.cpu_clock_counter,
                SystemClockCounter: a.system_clock_counter,
                SystemClockFrequencyHz: a.system_clock_freq,
            };
            // SAFETY: non-NULL (checked) and valid for writes, as the caller guarantees.
            unsafe { Counters.write_unaligned(c) };
            HSAKMT_STATUS_SUCCESS
        }
        Err(e) => {
            device_status("hsaKmtGetClockCounters", &e);
            HSAKMT_STATUS_ERROR
        }
    }
}

/// `hsaKmtGetTileConfig`: the GPU's tiling registers (`AMDKFD_IOC_GET_TILE_CONFIG`, as upstream
/// issues it; the simulator answers from its profile); `HSAKMT_STATUS_ERROR` when the kernel
/// refuses (a CPU node's gpu_id 0).
///
/// # Safety
/// `config` is NULL or valid for reads and writes, and its arrays are NULL or valid for writes
/// of the counts it gives.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetTileConfig(
    NodeId: HSAuint32,
    config: *mut HsaGpuTileConfig,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    with_kfd!(dev, k => {
        let gpu_id = tri!(gpu_id_of(k, "hsaKmtGetTileConfig", NodeId));
        require!(config, HSAKMT_STATUS_INVALID_PARAMETER);
        // SAFETY: non-NULL and valid for reads, as the caller guarantees.
        let mut c = unsafe { config.read_unaligned() };
        let tile: &mut [u32] = if c.TileConfig.is_null() {
            &mut []
        } else {
            // SAFETY: the caller guarantees room for `NumTileConfigs` words.
            unsafe { core::slice::from_raw_parts_mut(c.TileConfig, c.NumTileConfigs as usize) }
        };
        let macro_tile: &mut [u32] = if c.MacroTileConfig.is_null() {
            &mut []
        } else {
            // SAFETY: the caller guarantees room for `NumMacroTileConfigs` words.
            unsafe {
                core::slice::from_raw_parts_mut(c.MacroTileConfig, c.NumMacroTileConfigs as usize)
            }
        };
        tile.fill(0);
        macro_tile.fill(0);
        let room = (tile.len() as u64, macro_tile.len() as u64);
        let mut args = kfd_ioctl_get_tile_config_args { gpu_id, ..Default::default() };
        let mut request = Ioctl::GetTileConfig { args: &mut args, tile_config: tile, macro_tile_config: macro_tile };
        if let Err(e) = k.ioctl(&mut request) {
            device_status("hsaKmtGetTileConfig", &e);
            return HSAKMT_STATUS_ERROR;
        }
        // amdkfd fills at most the entries asked for and says how many; a larger count would
        // send the caller past the end of its arrays.
        if u64::from(args.num_tile_configs) > room.0
            || u64::from(args.num_macro_tile_configs) > room.1
        {
            return HSAKMT_STATUS_ERROR;
        }
        c.NumTileConfigs = args.num_tile_configs;
        c.NumMacroTileConfigs = args.num_macro_tile_configs;
        c.GbAddrConfig = args.gb_addr_config;
        c.NumBanks = args.num_banks;
        c.NumRanks = args.num_ranks;
        // SAFETY: non-NULL and valid for writes, as the caller guarantees.
        unsafe { config.write_unaligned(c) };
        HSAKMT_STATUS_SUCCESS
    })
}

/// `hsaKmtGetAMDGPUDeviceHandle`: the node's device handle, accepted by the `amdgpu_*` entry
/// points of `libdtif.so` (not by libdrm itself). The GPU's render node is opened once for the
/// process (`Kfd::render_device`), as upstream opens it; a node without a GPU answers
/// `HSAKMT_STATUS_INVALID_NODE_UNIT` and a render node that cannot be opened
/// `HSAKMT_STATUS_INVALID_HANDLE`, as upstream.
///
/// # Safety
/// `DeviceHandle` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetAMDGPUDeviceHandle(
    NodeId: HSAuint32,
    DeviceHandle: *mut HsaAMDGPUDeviceHandle,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    const WHAT: &str = "hsaKmtGetAMDGPUDeviceHandle";
    let gpu = tri!(with_kfd!(dev, k => gpu_id_of(k, WHAT, NodeId)));
    if gpu == 0 {
        return HSAKMT_STATUS_INVALID_NODE_UNIT;
    }
    require!(DeviceHandle, HSAKMT_STATUS_INVALID_PARAMETER);
    match with_kfd!(dev, k => k.render_device(NodeId)) {
        Ok(_) => {}
        Err(e @ DeviceError::InvalidNode { .. }) => {
            device_status(WHAT, &e);
            return HSAKMT_STATUS_INVALID_NODE_UNIT;
        }
        Err(e @ DeviceError::Platform(_)) => {
            device_status(WHAT, &e);
            return HSAKMT_STATUS_INVALID_HANDLE;
        }
        Err(e) => return device_status(WHAT, &e),
    }
    let Some(h) = crate::drm::handle_of(NodeId) else { return HSAKMT_STATUS_INVALID_NODE_UNIT };
    // SAFETY: non-NULL and valid for writes, as the caller guarantees.
    unsafe { DeviceHandle.write(h) };
    HSAKMT_STATUS_SUCCESS
}

/// `HsakmtRsSimAccounting` (`hsakmt_rs.h`): what the simulated kernel holds for the process, to
/// check that nothing leaked.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct HsakmtRsSimAccounting {
    /// 1 when `/dev/kfd` is open by the calling process.
    pub open: HSAuint64,
    /// Live buffer objects, on every GPU.
    pub buffers: HSAuint64,
    /// Buffer mappings (a buffer mapped on `n` GPUs counts `n`).
    pub mappings: HSAuint64,
    /// VRAM bytes allocated.
    pub vram_bytes: HSAuint64,
    /// System-memory bytes (GTT and user-pointer buffers).
    pub system_bytes: HSAuint64,
    /// Buffers a queue uses.
    pub pinned_buffers: HSAuint64,
    /// Live dma-bufs.
    pub dmabufs: HSAuint64,
    /// SVM ranges with attributes.
    pub svm_ranges: HSAuint64,
    /// GPUs with a scratch backing programmed.
    pub scratch_backings: HSAuint64,
    /// User queues.
    pub queues: HSAuint64,
    /// Events.
    pub events: HSAuint64,
    /// Threads blocked in `WAIT_EVENTS`.
    pub event_waiters: HSAuint64,
}

/// `hsakmt_rs_sim_accounting` (`hsakmt_rs.h`, not upstream): the simulated kernel's accounting
/// of the process; `HSAKMT_STATUS_NOT_SUPPORTED` on a real device,
/// `HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED` before the first open. Works after the last
/// close (to check that everything was released).
///
/// # Safety
/// `out` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsakmt_rs_sim_accounting(
    out: *mut HsakmtRsSimAccounting,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    require!(out, HSAKMT_STATUS_INVALID_PARAMETER);
    let Device::Sim(k) = dev else { return HSAKMT_STATUS_NOT_SUPPORTED };
    let a = k.platform().accounting();
    let n = |v: usize| v as u64;
    let acc = HsakmtRsSimAccounting {
        open: u64::from(a.open),
        buffers: n(a.buffers),
        mappings: n(a.mappings),
        vram_bytes: a.vram_bytes,
        system_bytes: a.system_bytes,
        pinned_buffers: n(a.pinned_buffers),
        dmabufs: n(a.dmabufs),
        svm_ranges: n(a.svm_ranges),
        scratch_backings: n(a.scratch_backings),
        queues: n(a.queues),
        events: n(a.events),
        event_waiters: n(a.event_waiters),
    };
    // SAFETY: non-NULL and valid for writes, as the caller guarantees.
    unsafe { out.write(acc) };
    HSAKMT_STATUS_SUCCESS
}
