//! Agents (HSA's name for a device a driver exposes: a CPU socket or a GPU) and their memory
//! regions, derived from a topology snapshot the way ROCr builds them from libhsakmt's node
//! properties.

use bitflags::bitflags;

use crate::topology::{GfxVersion, HeapType, NodeKind, NodeView};

/// Which registered driver an agent belongs to (its index in the registry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DriverId(pub u8);

/// An agent's identity: the driver and the driver-local node. Two drivers may both have a
/// node 0 (ROCr's per-driver node ids collide; these do not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AgentId {
    /// The driver.
    pub driver: DriverId,
    /// The node within that driver (libhsakmt's user node id: dense over accessible nodes).
    pub node: u32,
}

/// What an agent is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AgentKind {
    /// A CPU (host) agent.
    Cpu,
    /// A GPU agent (a dGPU, an APU's GPU, or a partition of one).
    Gpu,
}

bitflags! {
    /// What an agent can do.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct AgentFeatures: u32 {
        /// Executes AQL kernel dispatch packets.
        const KERNEL_DISPATCH = 1 << 0;
        /// Executes agent dispatch packets.
        const AGENT_DISPATCH = 1 << 1;
        /// Has DMA (SDMA) copy engines.
        const DMA_COPY = 1 << 2;
        /// Supports the SVM API (`HSA_CAP_SVMAPI_SUPPORTED`).
        const SVM = 1 << 3;
        /// CPU caches are coherent with the device's memory (`COHERENTHOSTACCESS`).
        const COHERENT_HOST_ACCESS = 1 << 4;
        /// Error-correcting memory (`MEM_EDCSUPPORTED`).
        const ECC = 1 << 5;
        /// Debugger support in firmware.
        const DEBUG_TRAP = 1 << 6;
        /// Per-queue reset.
        const QUEUE_RESET = 1 << 7;
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for AgentFeatures {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "AgentFeatures({=u32:#x})", self.bits());
    }
}

/// Smallest AQL queue ROCr creates, in packets.
pub const MIN_QUEUE_PACKETS: u32 = 64;
/// Largest AQL queue, in packets (ROCr's limit for 64-byte packets in a 32-bit byte size).
pub const MAX_QUEUE_PACKETS: u32 = 1 << 17;

pub use crate::config::{AGENT_NAME_CAPACITY, MAX_REGIONS};

/// Everything a runtime asks about an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AgentInfo {
    /// Identity.
    pub id: AgentId,
    /// CPU or GPU.
    pub kind: AgentKind,
    /// Name: the gfx target for GPUs (`gfx942`), `cpu` for CPU agents.
    pub name: heapless::String<AGENT_NAME_CAPACITY>,
    /// gfx version (effective: with `HSA_OVERRIDE_GFX_VERSION` applied), GPUs only.
    pub gfx: Option<GfxVersion>,
    /// KFD gpu_id (0 for CPU agents).
    pub gpu_id: u32,
    /// Compute units (GPUs) or cores (CPUs).
    pub compute_units: u32,
    /// SIMDs (GPUs).
    pub simd_count: u32,
    /// Wavefront size (GPUs; 0 for CPUs).
    pub wavefront_size: u32,
    /// Maximum engine clock in MHz.
    pub max_clock_mhz: u32,
    /// Local memory (VRAM) in bytes, 0 when unknown or for CPUs.
    pub local_memory_bytes: u64,
    /// Smallest queue in packets.
    pub queue_min_packets: u32,
    /// Largest queue in packets.
    pub queue_max_packets: u32,
    /// Compute queues the hardware offers (GPUs).
    pub compute_queues: u32,
    /// SDMA engines (GPUs).
    pub sdma_engines: u32,
    /// Capabilities.
    pub features: AgentFeatures,
}

impl AgentInfo {
    /// Builds an agent from a topology node, or `None` for a node that is hidden (device
    /// cgroup), has neither CPU cores nor SIMDs, or is a GPU without a `gpu_id`.
    #[must_use]
    pub fn from_node(driver: DriverId, node: &NodeView<'_>) -> Option<Self> {
        if !node.is_accessible() {
            return None;
        }
        let id = AgentId { driver, node: node.user_id()? };
        let mut name = heapless::String::new();
        let info = match node.kind() {
            NodeKind::Cpu => {
                let cores = node.cpu_cores_count().unwrap_or(0);
                if cores == 0 && node.simd_count().unwrap_or(0) == 0 {
                    return None;
                }
                let _ = name.push_str("cpu");
                Self {
                    id,
                    kind: AgentKind::Cpu,
                    name,
                    gfx: None,
                    gpu_id: 0,
                    compute_units: cores,
                    simd_count: 0,
                    wavefront_size: 0,
                    max_clock_mhz: node
                        .get(crate::topology::NodeKey::MaxEngineClkCcompute)
                        .and_then(|v| u32::try_from(v).ok())
                        .unwrap_or(0),
                    local_memory_bytes: 0,
                    queue_min_packets: MIN_QUEUE_PACKETS,
                    queue_max_packets: MAX_QUEUE_PACKETS,
                    compute_queues: 0,
                    sdma_engines: 0,
                    features: AgentFeatures::AGENT_DISPATCH,
                }
            }
            NodeKind::Gpu | NodeKind::Apu => {
                // Without a gpu_id the kernel offers no handle to reach the GPU by.
                let gpu_id = node.gpu_id().filter(|g| *g != 0)?;
                let gfx = node.effective_gfx();
                if let Some(g) = gfx {
                    let _ = core::fmt::write(&mut name, format_args!("{g}"));
                } else {
                    let _ = name.push_str("gpu");
                }
                let caps = node.capability();
                let mut features = AgentFeatures::KERNEL_DISPATCH | AgentFeatures::AGENT_DISPATCH;
                if node.num_sdma_engines().unwrap_or(0) > 0 {
                    features |= AgentFeatures::DMA_COPY;
                }
                if let Some(c) = caps {
                    use crate::topology::Capability;
                    let map = [
                        (Capability::SVM_API_SUPPORTED, AgentFeatures::SVM),
                        (Capability::COHERENT_HOST_ACCESS, AgentFeatures::COHERENT_HOST_ACCESS),
                        (Capability::MEM_EDC_SUPPORTED, AgentFeatures::ECC),
                        (Capability::TRAP_DEBUG_FIRMWARE_SUPPORTED, AgentFeatures::DEBUG_TRAP),
                        (Capability::PER_QUEUE_RESET_SUPPORTED, AgentFeatures::QUEUE_RESET),
                    ];
                    for (cap, feature) in map {
                        if c.contains(cap) {
                            features |= feature;
                        }
                    }
                }
                Self {
                    id,
                    kind: AgentKind::Gpu,
                    name,
                    gfx,
                    gpu_id,
                    compute_units: node.cu_count().unwrap_or(0),
                    simd_count: node.simd_count().unwrap_or(0),
                    wavefront_size: node.wave_front_size().unwrap_or(64),
                    max_clock_mhz: node.max_engine_clk_fcompute().unwrap_or(0),
                    local_memory_bytes: node.vram_bytes().unwrap_or(0),
                    queue_min_packets: MIN_QUEUE_PACKETS,
                    queue_max_packets: MAX_QUEUE_PACKETS,
                    compute_queues: node.num_cp_queues().unwrap_or(0),
                    sdma_engines: node
                        .num_sdma_engines()
                        .unwrap_or(0)
                        .saturating_add(node.num_sdma_xgmi_engines().unwrap_or(0)),
                    features,
                }
            }
        };
        Some(info)
    }
}

/// The kind of a memory region, as HSA names segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RegionKind {
    /// Global memory every agent sees coherently (system memory; fine-grained VRAM).
    GlobalFineGrained,
    /// Global memory coherent only at dispatch boundaries (VRAM).
    GlobalCoarseGrained,
    /// System memory for kernel arguments (host-accessible, fine-grained).
    Kernarg,
    /// The per-workgroup LDS segment (reported, not allocatable).
    Group,
    /// The per-work-item scratch segment (reported, not allocatable).
    Private,
}

/// A region's identity: its agent and its position in that agent's region list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RegionId {
    /// The agent.
    pub agent: AgentId,
    /// Index among the agent's regions.
    pub index: u8,
}

/// A memory region of an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RegionInfo {
    /// Identity.
    pub id: RegionId,
    /// Kind.
    pub kind: RegionKind,
    /// Bytes in the region (0 when the topology does not say).
    pub size: u64,
    /// Allocation granule (sizes round up to it).
    pub granule: u64,
    /// Alignment of every allocation.
    pub alignment: u64,
    /// Whether the CPU can access allocations directly.
    pub host_accessible: bool,
    /// Whether memory can be allocated from it (group and private segments cannot).
    pub allocatable: bool,
}

/// The regions of an agent, in ROCr's order: for a CPU, fine-grained system memory and the
/// kernarg region; for a GPU, coarse-grained VRAM, fine-grained VRAM (host-visible frame
/// buffer only), then the group (LDS) and private (scratch) segments.
#[must_use]
pub fn regions_of(info: &AgentInfo, node: &NodeView<'_>) -> heapless::Vec<RegionInfo, MAX_REGIONS> {
    let mut out = heapless::Vec::new();
    let mut push = |kind, size, granule, host, allocatable| {
        let index = u8::try_from(out.len()).unwrap_or(u8::MAX);
        let _ = out.push(RegionInfo {
            id: RegionId { agent: info.id, index },
            kind,
            size,
            granule,
            alignment: granule,
            host_accessible: host,
            allocatable,
        });
    };
    const PAGE: u64 = 4096;
    match info.kind {
        AgentKind::Cpu => {
            let system: u64 = node
                .mem_banks()
                .iter()
                .filter(|b| b.heap_type() == Some(HeapType::System))
                .filter_map(|b| b.size_in_bytes())
                .sum();
            push(RegionKind::GlobalFineGrained, system, PAGE, true, true);
            push(RegionKind::Kernarg, system, PAGE, true, true);
        }
        AgentKind::Gpu => {
            let vram = info.local_memory_bytes;
            let public =
                node.mem_banks().iter().any(|b| b.heap_type() == Some(HeapType::FrameBufferPublic));
            push(RegionKind::GlobalCoarseGrained, vram, PAGE, public, true);
            if public {
                push(RegionKind::GlobalFineGrained, vram, PAGE, true, true);
            }
            let lds = u64::from(node.lds_size_in_kb().unwrap_or(0)) * 1024;
            push(RegionKind::Group, lds, 0, false, false);
            push(RegionKind::Private, 0, 0, false, false);
        }
    }
    out
}
