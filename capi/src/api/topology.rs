//! Topology: `hsaKmtAcquireSystemProperties`, `hsaKmtReleaseSystemProperties`,
//! `hsaKmtGetNodeProperties`, `hsaKmtGetNodeMemoryProperties`, `hsaKmtGetNodeCacheProperties`,
//! `hsaKmtGetNodeIoLinkProperties`.
//!
//! Node ids are libhsakmt's: dense indices over the nodes this process may use. Every value
//! comes from the snapshot the facade took at open, filled in as upstream's `topology.c` fills
//! it (GPU nodes gain the LDS, scratch and SVM heaps, plus the MMIO-remap page when mapped).
//! Upstream reads two things outside the KFD tree that this library does not: the GPU marketing
//! name (libdrm's table, which also matches the PCI revision; here the table by device id alone,
//! else the node's `name`, else its `AMDName`) and, for CPU nodes the
//! kernel reports no caches for, the CPU caches under `/sys/devices/system/node`.

use core::fmt::Write as _;

use hsakmt_core::device::{Kfd, MemoryStorage};
use hsakmt_core::platform::Platform;
use hsakmt_core::topology::{CacheKey, LinkKey, MemBankKey, NodeKind, NodeView, Owner, Topology};

use super::status::device_status;
use super::system::mmio_page;
use super::{opened, require, tri};
use crate::device::with_kfd;
use crate::types::*;

/// Heaps upstream adds to every GPU node's banks (LDS, scratch, SVM).
const GPU_HEAPS: u32 = 3;

/// `hsaKmtAcquireSystemProperties`: the system's node count and platform ids. The snapshot is
/// taken at open, and taken again by the first acquire after `hsaKmtReleaseSystemProperties`
/// (`Kfd::acquire_system_properties`: `HSAKMT_STATUS_ERROR` when the tree's `generation_id`
/// moved while the process holds memory, queues or events — the library's MMIO-remap pages
/// among them); the first call of each open also maps each GPU's MMIO-remap page, as upstream's
/// aperture setup does.
///
/// # Safety
/// `SystemProperties` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAcquireSystemProperties(
    SystemProperties: *mut HsaSystemProperties,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    let props = tri!(with_kfd!(dev, k => {
        tri!(k.check_open().map_err(|e| device_status("hsaKmtAcquireSystemProperties", &e)));
        require!(SystemProperties, HSAKMT_STATUS_INVALID_PARAMETER);
        tri!(k.acquire_system_properties()
            .map_err(|e| device_status("hsaKmtAcquireSystemProperties", &e)));
        super::system::map_mmio(k);
        k.with_topology(system_properties)
            .map_err(|e| device_status("hsaKmtAcquireSystemProperties", &e))
    }));
    // SAFETY: non-NULL and valid for writes, as the caller guarantees.
    unsafe { SystemProperties.write_unaligned(props) };
    HSAKMT_STATUS_SUCCESS
}

fn system_properties(t: &Topology) -> HsaSystemProperties {
    let sys = t.system_properties();
    HsaSystemProperties {
        NumNodes: t.nodes().filter(|n| n.node().user_id().is_some()).count() as u32,
        PlatformOem: sys.platform_oem().unwrap_or(0) as u32,
        PlatformId: sys.platform_id().unwrap_or(0) as u32,
        PlatformRev: sys.platform_rev().unwrap_or(0) as u32,
    }
}

/// `hsaKmtReleaseSystemProperties`: the next `hsaKmtAcquireSystemProperties` re-reads the
/// topology, as upstream's drops its snapshot here; until then the node queries keep answering
/// from the held snapshot (upstream's fail), and memory, queues and events stay valid.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtReleaseSystemProperties() -> HSAKMT_STATUS {
    let dev = tri!(opened());
    match with_kfd!(dev, k => k.release_system_properties()) {
        Ok(()) => HSAKMT_STATUS_SUCCESS,
        Err(e) => device_status("hsaKmtReleaseSystemProperties", &e),
    }
}

/// `hsaKmtGetNodeProperties`.
///
/// # Safety
/// `NodeProperties` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetNodeProperties(
    NodeId: HSAuint32,
    NodeProperties: *mut HsaNodeProperties,
) -> HSAKMT_STATUS {
    require!(NodeProperties, HSAKMT_STATUS_INVALID_PARAMETER);
    let dev = tri!(opened());
    let props = tri!(with_kfd!(dev, k => node_properties(k, NodeId)));
    // SAFETY: non-NULL and valid for writes, as the caller guarantees.
    unsafe { NodeProperties.write_unaligned(props) };
    HSAKMT_STATUS_SUCCESS
}

fn node_properties<P: Platform, S: MemoryStorage<P::Mapping>>(
    k: &Kfd<P, S>,
    node: u32,
) -> Result<HsaNodeProperties, HSAKMT_STATUS> {
    k.check_open().map_err(|e| device_status("hsaKmtGetNodeProperties", &e))?;
    let mmio = mmio_page(node).is_some();
    let svm_off = std::env::var("HSA_USE_SVM").is_ok_and(|v| v == "0");
    k.with_topology(|t| {
        let v = t.node_by_user_id(node).ok_or(HSAKMT_STATUS_INVALID_NODE_UNIT)?;
        let mut p = fill_node(t, &v);
        if svm_off {
            p.Capability.set(HSA_CAPABILITY::SVMAPISupported, 0);
        }
        if p.KFDGpuID != 0 {
            p.NumMemoryBanks += GPU_HEAPS + u32::from(mmio);
        }
        Ok(p)
    })
    .map_err(|e| device_status("hsaKmtGetNodeProperties", &e))?
}

/// A writer into a fixed byte buffer (the node name arrays), truncating.
struct Bytes<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl core::fmt::Write for Bytes<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for b in s.bytes() {
            // Keep a terminating NUL.
            if self.len + 1 >= self.buf.len() {
                break;
            }
            if let Some(slot) = self.buf.get_mut(self.len) {
                *slot = b;
                self.len += 1;
            }
        }
        Ok(())
    }
}

/// The node's `HsaNodeProperties` as upstream's `topology_sysfs_get_node_props` fills them.
fn fill_node(t: &Topology, v: &NodeView<'_>) -> HsaNodeProperties {
    let n = v.node();
    let p = n.properties();
    let u8_of = |x: Option<u32>| x.unwrap_or(0).min(255) as u8;
    let mut out = HsaNodeProperties {
        NumCPUCores: p.cpu_cores_count().unwrap_or(0),
        NumFComputeCores: p.simd_count().unwrap_or(0),
        NumMemoryBanks: v.mem_banks().len() as u32,
        NumCaches: v.caches().len() as u32,
        NumIOLinks: v.links().filter(|l| link_target(t, l).is_some()).count() as u32,
        CComputeIdLo: p.cpu_core_id_base().unwrap_or(0),
        FComputeIdLo: p.simd_id_base().unwrap_or(0),
        Capability: HSA_CAPABILITY { Value: p.capability().unwrap_or(0) },
        Capability2: HSA_CAPABILITY2 { Value: p.capability2().unwrap_or(0) },
        MaxWavesPerSIMD: p.max_waves_per_simd().unwrap_or(0),
        LDSSizeInKB: p.lds_size_in_kb().unwrap_or(0),
        GDSSizeInKB: p.gds_size_in_kb().unwrap_or(0),
        WaveFrontSize: p.wave_front_size().unwrap_or(0),
        NumArrays: p.simd_arrays_per_engine().unwrap_or(0),
        NumCUPerArray: p.cu_per_simd_array().unwrap_or(0),
        NumSIMDPerCU: p.simd_per_cu().unwrap_or(0),
        MaxSlotsScratchCU: p.max_slots_scratch_cu().unwrap_or(0),
        EngineId: HSA_ENGINE_ID { Value: p.fw_version().unwrap_or(0) & 0x3ff },
        VendorId: p.vendor_id().unwrap_or(0) as u16,
        DeviceId: p.device_id().unwrap_or(0) as u16,
        LocationId: p.location_id().unwrap_or(0),
        LocalMemSize: p.local_mem_size().unwrap_or(0),
        MaxEngineClockMhzFCompute: p.max_engine_clk_fcompute().unwrap_or(0),
        MaxEngineClockMhzCCompute: p.max_engine_clk_ccompute().unwrap_or(0),
        DrmRenderMinor: p.drm_render_minor().unwrap_or(0) as i32,
        uCodeEngineVersions: HSA_ENGINE_VERSION { Value: p.sdma_fw_version().unwrap_or(0) & 0x3ff },
        DebugProperties: HSA_DEBUG_PROPERTIES { Value: p.debug_prop().unwrap_or(0) },
        HiveID: p.hive_id().unwrap_or(0),
        NumSdmaEngines: p.num_sdma_engines().unwrap_or(0),
        NumSdmaXgmiEngines: p.num_sdma_xgmi_engines().unwrap_or(0),
        NumSdmaQueuesPerEngine: u8_of(p.num_sdma_queues_per_engine()),
        NumCpQueues: u8_of(p.num_cp_queues()),
        NumGws: u8_of(p.num_gws()),
        Integrated: u8::from(n.kind() == NodeKind::Apu),
        Domain: p.domain().unwrap_or(0),
        UniqueID: p.unique_id().unwrap_or(0),
        NumXcc: p.num_xcc().unwrap_or(0),
        KFDGpuID: n.gpu_id().unwrap_or(0),
        FamilyID: t
            .unknown_keys_of(Owner::Node { node: n.sysfs_id() })
            .find(|k| k.name() == "family_id")
            .map_or(0, |k| k.value() as u32),
        ..HsaNodeProperties::default()
    };
    if !n.has_gpu() {
        let name = n.name_bytes().unwrap_or_default();
        fill_names(&mut out, name, name);
        return out;
    }
    // GPU nodes: what upstream derives once the node has SIMDs.
    out.NumShaderBanks = n.shader_banks().unwrap_or(0);
    if let Some(g) = n.gfx() {
        out.EngineId.set(HSA_ENGINE_ID::Major, u32::from(g.major) & 0x3f);
        out.EngineId.set(HSA_ENGINE_ID::Minor, u32::from(g.minor));
        out.EngineId.set(HSA_ENGINE_ID::Stepping, u32::from(g.stepping));
    }
    if let Some(g) = n.gfx_override() {
        out.OverrideEngineId.set(HSA_ENGINE_ID::Major, u32::from(g.major) & 0x3f);
        out.OverrideEngineId.set(HSA_ENGINE_ID::Minor, u32::from(g.minor));
        out.OverrideEngineId.set(HSA_ENGINE_ID::Stepping, u32::from(g.stepping));
    }
    out.SGPRSizePerCU = n.sgpr_size_per_cu().unwrap_or(0);
    out.VGPRSizePerCU = n.vgpr_size_per_cu().unwrap_or(0);
    out.NumXcc = n.xcc_count().unwrap_or(1);
    let mut amd = [0u8; HSA_PUBLIC_NAME_SIZE];
    let mut w = Bytes { buf: &mut amd, len: 0 };
    if let Some(name) = n.amd_name() {
        let _ = write!(w, "{name}");
    }
    let amd_len = w.len;
    let amd = amd.get(..amd_len).unwrap_or_default();
    // libdrm's name for the device id where the id alone decides it; else the sysfs name.
    let marketing = n
        .marketing_name()
        .map(str::as_bytes)
        .or_else(|| n.name_bytes().filter(|b| !b.is_empty()))
        .unwrap_or(amd);
    fill_names(&mut out, amd, marketing);
    out
}

/// Sets `AMDName` (ASCII) and `MarketingName` (UTF-16 code units), NUL-terminated.
fn fill_names(out: &mut HsaNodeProperties, amd: &[u8], marketing: &[u8]) {
    let limit = HSA_PUBLIC_NAME_SIZE - 1;
    let mut names = ([0u8; HSA_PUBLIC_NAME_SIZE], [0u16; HSA_PUBLIC_NAME_SIZE]);
    for (slot, b) in names.0.iter_mut().zip(amd.iter().take(limit)) {
        *slot = *b;
    }
    for (slot, b) in names.1.iter_mut().zip(marketing.iter().take(limit)) {
        *slot = u16::from(*b);
    }
    out.AMDName = names.0;
    out.MarketingName = names.1;
}

/// The user node id a link leads to, or `None` when its target is not a node this process may
/// use (upstream skips such links).
fn link_target(t: &Topology, l: &hsakmt_core::topology::Link) -> Option<u32> {
    t.node_by_sysfs_id(l.node_to()?)?.node().user_id()
}

/// `hsaKmtGetNodeMemoryProperties`: the node's memory banks, then (GPU nodes) LDS, scratch,
/// SVM and MMIO-remap heaps, up to `NumBanks` entries.
///
/// # Safety
/// `MemoryProperties` is NULL or valid for writes of `NumBanks` entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetNodeMemoryProperties(
    NodeId: HSAuint32,
    NumBanks: HSAuint32,
    MemoryProperties: *mut HsaMemoryProperties,
) -> HSAKMT_STATUS {
    require!(MemoryProperties, HSAKMT_STATUS_INVALID_PARAMETER);
    let dev = tri!(opened());
    let (banks, n) = tri!(with_kfd!(dev, k => memory_banks(k, NodeId)));
    let wanted = NumBanks as usize;
    for i in 0..wanted {
        let bank = banks.get(i).filter(|_| i < n).copied().unwrap_or_default();
        // SAFETY: `i < NumBanks`, and the caller guarantees room for `NumBanks` entries
        // (upstream clears all of them too).
        unsafe { MemoryProperties.add(i).write_unaligned(bank) };
    }
    HSAKMT_STATUS_SUCCESS
}

/// Upstream's bank list: the sysfs banks and the heaps it synthesises.
type Banks = [HsaMemoryProperties; BANK_CAPACITY];

/// The most banks one node reports here (sysfs banks beyond this are not listed).
const BANK_CAPACITY: usize = 64;

fn memory_banks<P: Platform, S: MemoryStorage<P::Mapping>>(
    k: &Kfd<P, S>,
    node: u32,
) -> Result<(Banks, usize), HSAKMT_STATUS> {
    const WHAT: &str = "hsaKmtGetNodeMemoryProperties";
    k.check_open().map_err(|e| device_status(WHAT, &e))?;
    let mut out: Banks = [HsaMemoryProperties::default(); BANK_CAPACITY];
    let mut n = 0;
    let (is_gpu, lds_kb) = k
        .with_topology(|t| {
            let v = t.node_by_user_id(node).ok_or(HSAKMT_STATUS_INVALID_NODE_UNIT)?;
            for (slot, b) in out.iter_mut().zip(v.mem_banks()) {
                *slot = HsaMemoryProperties {
                    HeapType: b.get(MemBankKey::HeapType).unwrap_or(0) as u32,
                    Size: HsaMemorySize {
                        SizeInBytes: b.get(MemBankKey::SizeInBytes).unwrap_or(0),
                    },
                    Flags: HSA_MEMORYPROPERTY {
                        MemoryProperty: b.get(MemBankKey::Flags).unwrap_or(0) as u32,
                    },
                    Width: b.get(MemBankKey::Width).unwrap_or(0) as u32,
                    MemoryClockMax: b.get(MemBankKey::MemClkMax).unwrap_or(0) as u32,
                    VirtualBaseAddress: 0,
                };
                n += 1;
            }
            let props = v.node().properties();
            Ok::<_, HSAKMT_STATUS>((v.node().has_gpu(), props.lds_size_in_kb().unwrap_or(0)))
        })
        .map_err(|e| device_status(WHAT, &e))??;
    if !is_gpu {
        return Ok((out, n));
    }
    let mut push = |heap: HSA_HEAPTYPE, base: u64, size: u64| {
        if let Some(slot) = out.get_mut(n) {
            *slot = HsaMemoryProperties {
                HeapType: heap,
                Size: HsaMemorySize { SizeInBytes: size },
                VirtualBaseAddress: base,
                ..HsaMemoryProperties::default()
            };
            n += 1;
        }
    };
    if let Ok(a) = k.node_apertures(node) {
        if let Some((base, _)) = a.lds {
            push(HSA_HEAPTYPE_GPU_LDS, base, u64::from(lds_kb) * 1024);
        }
        if let Some((base, limit)) = a.scratch {
            push(HSA_HEAPTYPE_GPU_SCRATCH, base, limit - base + 1);
        }
        if let Some((base, limit)) = a.svm {
            push(HSA_HEAPTYPE_DEVICE_SVM, base, limit - base + 1);
        }
    }
    if let Some(base) = mmio_page(node) {
        push(HSA_HEAPTYPE_MMIO_REMAP, base, 4096);
    }
    Ok((out, n))
}

/// `hsaKmtGetNodeCacheProperties`: the node's caches (`ProcessorId` is ignored, as upstream);
/// asking for more than the node has answers `HSAKMT_STATUS_INVALID_PARAMETER`.
///
/// # Safety
/// `CacheProperties` is NULL or valid for writes of `NumCaches` entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetNodeCacheProperties(
    NodeId: HSAuint32,
    _ProcessorId: HSAuint32,
    NumCaches: HSAuint32,
    CacheProperties: *mut HsaCacheProperties,
) -> HSAKMT_STATUS {
    require!(CacheProperties, HSAKMT_STATUS_INVALID_PARAMETER);
    let dev = tri!(opened());
    with_kfd!(dev, k => {
        if let Err(e) = k.check_open() {
            return device_status("hsaKmtGetNodeCacheProperties", &e);
        }
        let r = k.with_topology(|t| {
            let Some(v) = t.node_by_user_id(NodeId) else {
                return HSAKMT_STATUS_INVALID_NODE_UNIT;
            };
            if NumCaches as usize > v.caches().len() {
                return HSAKMT_STATUS_INVALID_PARAMETER;
            }
            for (i, c) in v.caches().iter().take(NumCaches as usize).enumerate() {
                let get = |key| c.get(key).unwrap_or(0) as u32;
                let mut props = HsaCacheProperties {
                    ProcessorIdLow: get(CacheKey::ProcessorIdLow),
                    CacheLevel: get(CacheKey::Level),
                    CacheSize: get(CacheKey::Size),
                    CacheLineSize: get(CacheKey::CacheLineSize),
                    CacheLinesPerTag: get(CacheKey::CacheLinesPerTag),
                    CacheAssociativity: get(CacheKey::Association),
                    CacheLatency: get(CacheKey::Latency),
                    CacheType: HsaCacheType { Value: get(CacheKey::Type) },
                    ..HsaCacheProperties::default()
                };
                if let Some(map) = c.sibling_map() {
                    for (slot, bit) in props.SiblingMap.iter_mut().zip(map.iter()) {
                        *slot = u32::from(bit);
                    }
                }
                // SAFETY: `i < NumCaches`, and the caller guarantees room for `NumCaches`.
                unsafe { CacheProperties.add(i).write_unaligned(props) };
            }
            HSAKMT_STATUS_SUCCESS
        });
        r.unwrap_or_else(|e| device_status("hsaKmtGetNodeCacheProperties", &e))
    })
}

/// `hsaKmtGetNodeIoLinkProperties`: the node's IO links, P2P links and (without P2P links) the
/// links upstream derives through the CPUs, with node ids as this process numbers them; asking
/// for more than the node has answers `HSAKMT_STATUS_INVALID_PARAMETER`.
///
/// # Safety
/// `IoLinkProperties` is NULL or valid for writes of `NumIoLinks` entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetNodeIoLinkProperties(
    NodeId: HSAuint32,
    NumIoLinks: HSAuint32,
    IoLinkProperties: *mut HsaIoLinkProperties,
) -> HSAKMT_STATUS {
    require!(IoLinkProperties, HSAKMT_STATUS_INVALID_PARAMETER);
    let dev = tri!(opened());
    with_kfd!(dev, k => {
        if let Err(e) = k.check_open() {
            return device_status("hsaKmtGetNodeIoLinkProperties", &e);
        }
        let r = k.with_topology(|t| {
            let Some(v) = t.node_by_user_id(NodeId) else {
                return HSAKMT_STATUS_INVALID_NODE_UNIT;
            };
            let links = || v.links().filter_map(|l| link_target(t, l).map(|to| (l, to)));
            if NumIoLinks as usize > links().count() {
                return HSAKMT_STATUS_INVALID_PARAMETER;
            }
            for (i, (l, to)) in links().take(NumIoLinks as usize).enumerate() {
                let get = |key| l.get(key).unwrap_or(0) as u32;
                let props = HsaIoLinkProperties {
                    IoLinkType: get(LinkKey::Type),
                    VersionMajor: get(LinkKey::VersionMajor),
                    VersionMinor: get(LinkKey::VersionMinor),
                    NodeFrom: NodeId,
                    NodeTo: to,
                    Weight: get(LinkKey::Weight),
                    MinimumLatency: get(LinkKey::MinLatency),
                    MaximumLatency: get(LinkKey::MaxLatency),
                    MinimumBandwidth: get(LinkKey::MinBandwidth),
                    MaximumBandwidth: get(LinkKey::MaxBandwidth),
                    RecTransferSize: get(LinkKey::RecommendedTransferSize),
                    RecSdmaEngIdMask: get(LinkKey::RecommendedSdmaEngineIdMask),
                    Flags: HSA_LINKPROPERTY { LinkProperty: get(LinkKey::Flags) },
                };
                // SAFETY: `i < NumIoLinks`, and the caller guarantees room for `NumIoLinks`.
                unsafe { IoLinkProperties.add(i).write_unaligned(props) };
            }
            HSAKMT_STATUS_SUCCESS
        });
        r.unwrap_or_else(|e| device_status("hsaKmtGetNodeIoLinkProperties", &e))
    })
}
