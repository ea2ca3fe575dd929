//! The libdrm side ROCr reaches through the library: the `amdgpu_device_handle`s
//! `hsaKmtGetAMDGPUDeviceHandle` hands out, and `struct amdgpu_gpu_info` as libdrm's
//! `amdgpu.h` lays it out (filled from the topology by `amdgpu_query_gpu_info` in
//! `libdtif.so`).
//!
//! A handle is the address of this library's per-node record, never a libdrm object: it is
//! valid for the `amdgpu_*` entry points of `libdtif.so`, not for libdrm itself.

use core::ffi::c_void;

use hsakmt_core::config::NODE_SET_CAPACITY;
use hsakmt_core::device::{Kfd, MemoryStorage};
use hsakmt_core::platform::Platform;
use hsakmt_core::topology::{MemBankKey, NodeKind, Owner};

use crate::device::{device, with_kfd};
use crate::layout::{Description, layout};

/// Marks a record of [`DEVICES`].
const MAGIC: u32 = 0x4844_524D; // "HDRM"

/// What an `amdgpu_device_handle` of this library points to.
#[repr(C)]
pub(crate) struct DrmDevice {
    magic: u32,
    node: u32,
}

const fn devices() -> [DrmDevice; NODE_SET_CAPACITY] {
    let mut t = [const { DrmDevice { magic: MAGIC, node: 0 } }; NODE_SET_CAPACITY];
    let mut i = 0;
    while i < NODE_SET_CAPACITY {
        t[i].node = i as u32;
        i += 1;
    }
    t
}

/// One record per node id.
static DEVICES: [DrmDevice; NODE_SET_CAPACITY] = devices();

/// The handle of GPU node `node`.
pub fn handle_of(node: u32) -> Option<*mut c_void> {
    DEVICES.get(node as usize).map(|d| (d as *const DrmDevice).cast_mut().cast())
}

/// The node a handle of this library names, or `None` for any other pointer.
pub fn node_of(handle: *const c_void) -> Option<u32> {
    let base = DEVICES.as_ptr() as usize;
    let offset = (handle as usize).checked_sub(base)?;
    let size = core::mem::size_of::<DrmDevice>();
    if !offset.is_multiple_of(size) {
        return None;
    }
    let d = DEVICES.get(offset / size)?;
    (d.magic == MAGIC).then_some(d.node)
}

/// The DRM driver version `amdgpu_device_initialize` reports (amdgpu's 3.x interface).
pub const DRM_VERSION: (u32, u32) = (3, 57);

/// `AMDGPU_IDS_FLAGS_FUSION` (an APU).
pub const AMDGPU_IDS_FLAGS_FUSION: u64 = 0x1;

/// The GPU timestamp counter frequency in kHz: 100 MHz, what amdgpu reports for gfx9 and later
/// parts (and the rate of the simulator's counter).
pub const GPU_COUNTER_KHZ: u32 = 100_000;

/// The symbols ROCr's DTIF loader looks up in `libdtif.so` besides the `hsaKmt*` functions
/// (exported by the `dtif` feature).
pub const DTIF_SYMBOLS: [&str; 11] = [
    "DtifCreate",
    "DtifDestroy",
    "amdgpu_device_initialize",
    "amdgpu_device_deinitialize",
    "amdgpu_query_gpu_info",
    "amdgpu_bo_cpu_map",
    "amdgpu_bo_free",
    "amdgpu_bo_export",
    "amdgpu_bo_import",
    "amdgpu_bo_va_op",
    "drmCommandWriteRead",
];

/// libdrm's answer for a bad argument (`-EINVAL`).
pub const EINVAL: i32 = -22;
/// libdrm's answer for a device it cannot find (`-ENODEV`).
pub const ENODEV: i32 = -19;

/// `amdgpu_device_initialize`: the handle of the GPU whose render node `fd` is (matched by the
/// character device's minor number against the nodes' `DrmRenderMinor`), with the DRM driver
/// version; `-ENODEV` for any other descriptor (the simulator's GPUs have no render nodes).
///
/// # Errors
/// `-EINVAL` for a negative or unusable descriptor, `-ENODEV` when no GPU has its minor.
pub fn device_initialize(fd: i32) -> Result<(u32, u32, *mut c_void), i32> {
    if fd < 0 {
        return Err(EINVAL);
    }
    // SAFETY: the caller passed `fd` as an open descriptor it owns; it is only borrowed for the
    // `fstat` below.
    let borrowed = unsafe { rustix::fd::BorrowedFd::borrow_raw(fd) };
    let st = rustix::fs::fstat(borrowed).map_err(|_| EINVAL)?;
    let minor = rustix::fs::minor(st.st_rdev);
    let dev = device().ok_or(ENODEV)?;
    let node = with_kfd!(dev, k => k.with_topology(|t| {
        t.nodes()
            .find(|n| n.node().has_gpu() && n.node().drm_render_minor() == Some(minor))
            .and_then(|n| n.node().user_id())
    }))
    .ok()
    .flatten()
    .ok_or(ENODEV)?;
    let handle = handle_of(node).ok_or(ENODEV)?;
    Ok((DRM_VERSION.0, DRM_VERSION.1, handle))
}

/// `amdgpu_query_gpu_info`: what the topology says about the handle's GPU (libdrm asks the
/// render node; the fields the topology cannot tell stay 0). `-EINVAL` for a handle this
/// library did not hand out, `-ENODEV` when the device is not open.
///
/// # Errors
/// As described.
pub fn query_gpu_info(handle: *const c_void) -> Result<amdgpu_gpu_info, i32> {
    let node = node_of(handle).ok_or(EINVAL)?;
    let dev = device().ok_or(ENODEV)?;
    with_kfd!(dev, k => gpu_info(k, node))
}

fn gpu_info<P: Platform, S: MemoryStorage<P::Mapping>>(
    k: &Kfd<P, S>,
    node: u32,
) -> Result<amdgpu_gpu_info, i32> {
    k.with_topology(|t| {
        let v = t.node_by_user_id(node).filter(|v| v.node().has_gpu()).ok_or(EINVAL)?;
        let n = v.node();
        let p = n.properties();
        let vram = v.mem_banks().iter().find(|b| b.heap_type().is_some_and(|h| h.is_vram()));
        Ok(amdgpu_gpu_info {
            asic_id: p.device_id().unwrap_or(0),
            family_id: t
                .unknown_keys_of(Owner::Node { node: n.sysfs_id() })
                .find(|k| k.name() == "family_id")
                .map_or(0, |k| k.value() as u32),
            ids_flags: if n.kind() == NodeKind::Apu { AMDGPU_IDS_FLAGS_FUSION } else { 0 },
            max_engine_clk: u64::from(p.max_engine_clk_fcompute().unwrap_or(0)) * 1000,
            max_memory_clk: vram.and_then(|b| b.get(MemBankKey::MemClkMax)).unwrap_or(0) * 1000,
            num_shader_engines: n.shader_banks().unwrap_or(0),
            num_shader_arrays_per_engine: p.simd_arrays_per_engine().unwrap_or(0),
            gpu_counter_freq: GPU_COUNTER_KHZ,
            cu_active_number: n.cu_count().unwrap_or(0),
            vram_bit_width: vram.and_then(|b| b.get(MemBankKey::Width)).unwrap_or(0) as u32,
            ..amdgpu_gpu_info::default()
        })
    })
    .map_err(|_| ENODEV)?
}

/// `struct amdgpu_gpu_info` (libdrm `amdgpu.h`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct amdgpu_gpu_info {
    /// ASIC id (PCI device id).
    pub asic_id: u32,
    /// Chip revision.
    pub chip_rev: u32,
    /// Chip external revision.
    pub chip_external_rev: u32,
    /// Family id.
    pub family_id: u32,
    /// `AMDGPU_IDS_FLAGS_*`.
    pub ids_flags: u64,
    /// Maximum engine clock (kHz).
    pub max_engine_clk: u64,
    /// Maximum memory clock (kHz).
    pub max_memory_clk: u64,
    /// Shader engines.
    pub num_shader_engines: u32,
    /// Shader arrays per engine.
    pub num_shader_arrays_per_engine: u32,
    /// Available quad shader pipes.
    pub avail_quad_shader_pipes: u32,
    /// Quad shader pipes.
    pub max_quad_shader_pipes: u32,
    /// Parameter cache entries per quad pipe.
    pub cache_entries_per_quad_pipe: u32,
    /// Graphics contexts.
    pub num_hw_gfx_contexts: u32,
    /// Render backends.
    pub rb_pipes: u32,
    /// Enabled render backends.
    pub enabled_rb_pipes_mask: u32,
    /// GPU counter frequency (kHz).
    pub gpu_counter_freq: u32,
    /// Backend disable per SE.
    pub backend_disable: [u32; 4],
    /// `MC_ARB_RAMCFG`.
    pub mc_arb_ramcfg: u32,
    /// `GB_ADDR_CONFIG`.
    pub gb_addr_cfg: u32,
    /// `GB_TILE_MODE0..31`.
    pub gb_tile_mode: [u32; 32],
    /// `GB_MACROTILE_MODE0..15`.
    pub gb_macro_tile_mode: [u32; 16],
    /// `PA_SC_RASTER_CONFIG` per SE.
    pub pa_sc_raster_cfg: [u32; 4],
    /// `PA_SC_RASTER_CONFIG_1` per SE.
    pub pa_sc_raster_cfg1: [u32; 4],
    /// Active CUs.
    pub cu_active_number: u32,
    /// Always-on CU mask.
    pub cu_ao_mask: u32,
    /// CU bitmap per SE and SH.
    pub cu_bitmap: [[u32; 4]; 4],
    /// VRAM type.
    pub vram_type: u32,
    /// VRAM bus width.
    pub vram_bit_width: u32,
    /// Constant engine RAM size.
    pub ce_ram_size: u32,
    /// VCE harvest configuration.
    pub vce_harvest_config: u32,
    /// PCI revision id.
    pub pci_rev_id: u32,
}

/// `struct amdgpu_bo_import_result` (libdrm `amdgpu.h`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct amdgpu_bo_import_result {
    /// The buffer.
    pub buf_handle: *mut c_void,
    /// Its size.
    pub alloc_size: u64,
}

/// The libdrm types' rows, checked against `<amdgpu.h>` when libdrm's headers are installed.
#[must_use]
pub fn describe_libdrm() -> Description {
    let mut d = Description::default();
    layout!(
        d,
        amdgpu_gpu_info {
            asic_id,
            chip_rev,
            chip_external_rev,
            family_id,
            ids_flags,
            max_engine_clk,
            max_memory_clk,
            num_shader_engines,
            num_shader_arrays_per_engine,
            avail_quad_shader_pipes,
            max_quad_shader_pipes,
            cache_entries_per_quad_pipe,
            num_hw_gfx_contexts,
            rb_pipes,
            enabled_rb_pipes_mask,
            gpu_counter_freq,
            backend_disable,
            mc_arb_ramcfg,
            gb_addr_cfg,
            gb_tile_mode,
            gb_macro_tile_mode,
            pa_sc_raster_cfg,
            pa_sc_raster_cfg1,
            cu_active_number,
            cu_ao_mask,
            cu_bitmap,
            vram_type,
            vram_bit_width,
            ce_ram_size,
            vce_harvest_config,
            pci_rev_id,
        }
    );
    layout!(d, amdgpu_bo_import_result { buf_handle, alloc_size });
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_name_their_node_and_nothing_else() {
        let h = handle_of(5).expect("node 5 has a record");
        assert_eq!(node_of(h), Some(5));
        assert_eq!(node_of(h.cast::<u8>().wrapping_add(1).cast()), None);
        let local = 0u64;
        assert_eq!(node_of((&raw const local).cast()), None);
        assert_eq!(handle_of(NODE_SET_CAPACITY as u32), None);
    }
}
