//! Per-node and per-entry records of the snapshot, and the typed views of their raw values
//! (capability bits, heap, cache and link types).

use crate::platform::EntryKind;

use super::gfx::{GfxSource, GfxVersion};
use super::keys::{CacheProperties, LinkProperties, MemBankProperties, NodeProperties};
use super::parse::SIBLING_MAP_CAPACITY;

/// CPU, GPU, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum NodeKind {
    /// No SIMDs (`simd_count` 0 or absent).
    Cpu,
    /// SIMDs and no CPU cores.
    Gpu,
    /// SIMDs and CPU cores (an APU reported as one node).
    Apu,
}

impl NodeKind {
    /// The lower-case name used in reports: `cpu`, `gpu`, `apu`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Cpu => "cpu",
            Self::Gpu => "gpu",
            Self::Apu => "apu",
        }
    }

    /// Whether the node has a GPU (GPU or APU).
    #[must_use]
    pub const fn has_gpu(self) -> bool {
        !matches!(self, Self::Cpu)
    }
}

pub use crate::config::{NAME_CAPACITY, UNKNOWN_KEY_NAME_CAPACITY};

/// A node of the topology: its sysfs files `gpu_id`, `name`, `properties`, plus what the
/// snapshot derived for it. Entry tables (banks, caches, links) are reached through
/// [`NodeView`](super::NodeView).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Node {
    pub(crate) sysfs_id: u32,
    pub(crate) user_id: Option<u32>,
    pub(crate) accessible: bool,
    /// Set when the node was hidden because its render node could not be opened: the minor
    /// and the errno.
    pub(crate) render_hidden: Option<(u32, crate::error::Errno)>,
    pub(crate) gpu_id: Option<u32>,
    pub(crate) name: [u8; NAME_CAPACITY],
    pub(crate) name_len: u8,
    pub(crate) name_present: bool,
    pub(crate) properties_present: bool,
    pub(crate) props: NodeProperties,
    pub(crate) gfx: Option<(GfxVersion, GfxSource)>,
    pub(crate) gfx_override: Option<GfxVersion>,
    pub(crate) spans: [Span; 5],
}

/// A run of records in one of the snapshot's pools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(crate) struct Span {
    pub(crate) start: u32,
    pub(crate) len: u32,
}

impl Span {
    pub(crate) fn range(self) -> core::ops::Range<usize> {
        let start = self.start as usize;
        start..start.saturating_add(self.len as usize)
    }
}

/// Index into [`Node::spans`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpanKind {
    Banks = 0,
    Caches = 1,
    IoLinks = 2,
    P2pLinks = 3,
    Derived = 4,
}

impl SpanKind {
    pub(crate) const fn of(kind: EntryKind) -> Self {
        match kind {
            EntryKind::MemBank => Self::Banks,
            EntryKind::Cache => Self::Caches,
            EntryKind::IoLink => Self::IoLinks,
            EntryKind::P2pLink => Self::P2pLinks,
        }
    }
}

impl Node {
    pub(crate) const fn new(sysfs_id: u32) -> Self {
        Self {
            sysfs_id,
            user_id: None,
            accessible: true,
            render_hidden: None,
            gpu_id: None,
            name: [0; NAME_CAPACITY],
            name_len: 0,
            name_present: false,
            properties_present: false,
            props: NodeProperties::EMPTY,
            gfx: None,
            gfx_override: None,
            spans: [Span { start: 0, len: 0 }; 5],
        }
    }

    pub(crate) fn span(&self, kind: SpanKind) -> Span {
        self.spans.get(kind as usize).copied().unwrap_or_default()
    }

    pub(crate) fn set_span(&mut self, kind: SpanKind, span: Span) {
        if let Some(s) = self.spans.get_mut(kind as usize) {
            *s = span;
        }
    }

    /// The node's directory number under `nodes/` (what io_links' `node_from`/`node_to` use).
    #[must_use]
    pub const fn sysfs_id(&self) -> u32 {
        self.sysfs_id
    }

    /// libhsakmt's user node id: the node's position among the accessible nodes (what
    /// `HSA_OVERRIDE_GFX_VERSION_<id>` and the hsaKmt API use). `None` for an inaccessible node.
    #[must_use]
    pub const fn user_id(&self) -> Option<u32> {
        self.user_id
    }

    /// `false` when reading the node's files failed with `EPERM` (a GPU hidden from this
    /// process by its device cgroup). Such a node keeps whatever was read before the denial.
    #[must_use]
    pub const fn is_accessible(&self) -> bool {
        self.accessible
    }

    /// CPU, GPU or APU, from `simd_count` and `cpu_cores_count`. An inaccessible node is a GPU:
    /// the kernel denies access to GPU nodes only.
    #[must_use]
    pub const fn kind(&self) -> NodeKind {
        let simds = matches!(self.props.simd_count(), Some(n) if n > 0);
        let cores = matches!(self.props.cpu_cores_count(), Some(n) if n > 0);
        match (simds || !self.accessible, cores) {
            (false, _) => NodeKind::Cpu,
            (true, false) => NodeKind::Gpu,
            (true, true) => NodeKind::Apu,
        }
    }

    /// Whether the node has a GPU (kind GPU or APU).
    #[must_use]
    pub const fn has_gpu(&self) -> bool {
        self.kind().has_gpu()
    }

    /// The `gpu_id` file's value (0 on CPU nodes), `None` when the file is absent or unreadable.
    #[must_use]
    pub const fn gpu_id(&self) -> Option<u32> {
        self.gpu_id
    }

    /// The `name` file's first line as bytes (empty on CPU nodes), `None` when absent.
    #[must_use]
    pub fn name_bytes(&self) -> Option<&[u8]> {
        if self.name_present { self.name.get(..usize::from(self.name_len)) } else { None }
    }

    /// The `name` file's first line (`"ip discovery"`, `"vega10"`, `""`), `None` when the file
    /// is absent or not UTF-8.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        core::str::from_utf8(self.name_bytes()?).ok()
    }

    /// Whether the `properties` file was read.
    #[must_use]
    pub const fn has_properties(&self) -> bool {
        self.properties_present
    }

    /// The values of the `properties` file.
    #[must_use]
    pub const fn properties(&self) -> &NodeProperties {
        &self.props
    }

    /// The value of a `properties` key, `None` when absent.
    #[must_use]
    pub const fn get(&self, key: super::NodeKey) -> Option<u64> {
        self.props.get(key)
    }

    /// The real gfx version (from `gfx_target_version`, or libhsakmt's device-id table for
    /// drivers predating that key). `None` on CPU nodes and on GPUs that neither identify.
    #[must_use]
    pub const fn gfx(&self) -> Option<GfxVersion> {
        match self.gfx {
            Some((g, _)) => Some(g),
            None => None,
        }
    }

    /// Where [`gfx`](Self::gfx) came from.
    #[must_use]
    pub const fn gfx_source(&self) -> Option<GfxSource> {
        match self.gfx {
            Some((_, s)) => Some(s),
            None => None,
        }
    }

    /// The version set by `HSA_OVERRIDE_GFX_VERSION[_<user id>]` (libhsakmt's
    /// `OverrideEngineId`), kept apart from the real one.
    #[must_use]
    pub const fn gfx_override(&self) -> Option<GfxVersion> {
        self.gfx_override
    }

    /// The override if set, else the real version.
    #[must_use]
    pub const fn effective_gfx(&self) -> Option<GfxVersion> {
        match self.gfx_override {
            Some(g) => Some(g),
            None => self.gfx(),
        }
    }

    // ---- libhsakmt-style accessors (raw values; `None` when the key is absent) ----

    /// `drm_render_minor`.
    #[must_use]
    pub const fn drm_render_minor(&self) -> Option<u32> {
        self.props.drm_render_minor()
    }
    /// `simd_count` (libhsakmt's `NumFComputeCores`).
    #[must_use]
    pub const fn simd_count(&self) -> Option<u32> {
        self.props.simd_count()
    }
    /// `cpu_cores_count` (libhsakmt's `NumCPUCores`).
    #[must_use]
    pub const fn cpu_cores_count(&self) -> Option<u32> {
        self.props.cpu_cores_count()
    }
    /// `wave_front_size`.
    #[must_use]
    pub const fn wave_front_size(&self) -> Option<u32> {
        self.props.wave_front_size()
    }
    /// `num_xcc` as printed (see [`xcc_count`](Self::xcc_count) for libhsakmt's value).
    #[must_use]
    pub const fn num_xcc(&self) -> Option<u32> {
        self.props.num_xcc()
    }
    /// `num_sdma_engines`.
    #[must_use]
    pub const fn num_sdma_engines(&self) -> Option<u32> {
        self.props.num_sdma_engines()
    }
    /// `num_sdma_xgmi_engines`.
    #[must_use]
    pub const fn num_sdma_xgmi_engines(&self) -> Option<u32> {
        self.props.num_sdma_xgmi_engines()
    }
    /// `num_sdma_queues_per_engine`.
    #[must_use]
    pub const fn num_sdma_queues_per_engine(&self) -> Option<u32> {
        self.props.num_sdma_queues_per_engine()
    }
    /// `num_cp_queues`.
    #[must_use]
    pub const fn num_cp_queues(&self) -> Option<u32> {
        self.props.num_cp_queues()
    }
    /// `cwsr_size`.
    #[must_use]
    pub const fn cwsr_size(&self) -> Option<u32> {
        self.props.cwsr_size()
    }
    /// `ctl_stack_size`.
    #[must_use]
    pub const fn ctl_stack_size(&self) -> Option<u32> {
        self.props.ctl_stack_size()
    }
    /// `lds_size_in_kb`.
    #[must_use]
    pub const fn lds_size_in_kb(&self) -> Option<u32> {
        self.props.lds_size_in_kb()
    }
    /// `max_engine_clk_fcompute` (MHz).
    #[must_use]
    pub const fn max_engine_clk_fcompute(&self) -> Option<u32> {
        self.props.max_engine_clk_fcompute()
    }
    /// `hive_id` (0 when the GPU is in no XGMI hive).
    #[must_use]
    pub const fn hive_id(&self) -> Option<u64> {
        self.props.hive_id()
    }
    /// `device_id`.
    #[must_use]
    pub const fn device_id(&self) -> Option<u32> {
        self.props.device_id()
    }
    /// `capability` as [`Capability`] bits.
    #[must_use]
    pub const fn capability(&self) -> Option<Capability> {
        match self.props.capability() {
            Some(v) => Some(Capability::from_bits_retain(v)),
            None => None,
        }
    }
    /// `capability2` as [`Capability2`] bits.
    #[must_use]
    pub const fn capability2(&self) -> Option<Capability2> {
        match self.props.capability2() {
            Some(v) => Some(Capability2::from_bits_retain(v)),
            None => None,
        }
    }
    /// `debug_prop` as [`DebugProperties`] bits.
    #[must_use]
    pub const fn debug_properties(&self) -> Option<DebugProperties> {
        match self.props.debug_prop() {
            Some(v) => Some(DebugProperties::from_bits_retain(v)),
            None => None,
        }
    }
    /// libhsakmt's `EngineId.uCode`: `fw_version & 0x3ff`.
    #[must_use]
    pub const fn ucode_version(&self) -> Option<u32> {
        match self.props.fw_version() {
            Some(v) => Some(v & 0x3ff),
            None => None,
        }
    }
    /// libhsakmt's `uCodeEngineVersions.uCodeSDMA`: `sdma_fw_version & 0x3ff`.
    #[must_use]
    pub const fn sdma_ucode_version(&self) -> Option<u32> {
        match self.props.sdma_fw_version() {
            Some(v) => Some(v & 0x3ff),
            None => None,
        }
    }
}

bitflags::bitflags! {
    /// `HSA_CAP_*` bits of a node's `capability` (kfd_sysfs.h, KERNEL-CONTRACT §2.2).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct Capability: u32 {
        /// `HSA_CAP_HOT_PLUGGABLE`
        const HOT_PLUGGABLE = 0x1;
        /// `HSA_CAP_ATS_PRESENT`
        const ATS_PRESENT = 0x2;
        /// `HSA_CAP_SHARED_WITH_GRAPHICS`
        const SHARED_WITH_GRAPHICS = 0x4;
        /// `HSA_CAP_QUEUE_SIZE_POW2`
        const QUEUE_SIZE_POW2 = 0x8;
        /// `HSA_CAP_QUEUE_SIZE_32BIT`
        const QUEUE_SIZE_32BIT = 0x10;
        /// `HSA_CAP_QUEUE_IDLE_EVENT`
        const QUEUE_IDLE_EVENT = 0x20;
        /// `HSA_CAP_VA_LIMIT`
        const VA_LIMIT = 0x40;
        /// `HSA_CAP_WATCH_POINTS_SUPPORTED`
        const WATCH_POINTS_SUPPORTED = 0x80;
        /// `HSA_CAP_WATCH_POINTS_TOTALBITS_MASK` (a 4-bit field)
        const WATCH_POINTS_TOTALBITS_MASK = 0xf00;
        /// `HSA_CAP_DOORBELL_TYPE_TOTALBITS_MASK` (a 2-bit field)
        const DOORBELL_TYPE_MASK = 0x3000;
        /// `HSA_CAP_AQL_QUEUE_DOUBLE_MAP`
        const AQL_QUEUE_DOUBLE_MAP = 0x4000;
        /// `HSA_CAP_TRAP_DEBUG_SUPPORT`
        const TRAP_DEBUG_SUPPORT = 0x8000;
        /// `HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_TRAP_OVERRIDE_SUPPORTED`
        const TRAP_DEBUG_WAVE_LAUNCH_TRAP_OVERRIDE_SUPPORTED = 0x1_0000;
        /// `HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_MODE_SUPPORTED`
        const TRAP_DEBUG_WAVE_LAUNCH_MODE_SUPPORTED = 0x2_0000;
        /// `HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED`
        const TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED = 0x4_0000;
        /// `HSA_CAP_RESERVED_WAS_SRAM_EDCSUPPORTED`
        const RESERVED_WAS_SRAM_EDC_SUPPORTED = 0x8_0000;
        /// `HSA_CAP_MEM_EDCSUPPORTED`
        const MEM_EDC_SUPPORTED = 0x10_0000;
        /// `HSA_CAP_RASEVENTNOTIFY`
        const RAS_EVENT_NOTIFY = 0x20_0000;
        /// `HSA_CAP_ASIC_REVISION_MASK` (a 4-bit field)
        const ASIC_REVISION_MASK = 0x3c0_0000;
        /// `HSA_CAP_SRAM_EDCSUPPORTED`
        const SRAM_EDC_SUPPORTED = 0x400_0000;
        /// `HSA_CAP_SVMAPI_SUPPORTED`
        const SVM_API_SUPPORTED = 0x800_0000;
        /// `HSA_CAP_FLAGS_COHERENTHOSTACCESS`
        const COHERENT_HOST_ACCESS = 0x1000_0000;
        /// `HSA_CAP_TRAP_DEBUG_FIRMWARE_SUPPORTED`
        const TRAP_DEBUG_FIRMWARE_SUPPORTED = 0x2000_0000;
        /// `HSA_CAP_TRAP_DEBUG_PRECISE_ALU_OPERATIONS_SUPPORTED`
        const TRAP_DEBUG_PRECISE_ALU_OPERATIONS_SUPPORTED = 0x4000_0000;
        /// `HSA_CAP_PER_QUEUE_RESET_SUPPORTED`
        const PER_QUEUE_RESET_SUPPORTED = 0x8000_0000;
    }
}

impl Capability {
    /// `HSA_CAP_WATCH_POINTS_TOTALBITS` field.
    #[must_use]
    pub const fn watch_points_total_bits(self) -> u32 {
        (self.bits() & Self::WATCH_POINTS_TOTALBITS_MASK.bits()) >> 8
    }
    /// Doorbell type field: 0 pre-1.0, 1 = 1.0, 2 = 2.0.
    #[must_use]
    pub const fn doorbell_type(self) -> u32 {
        (self.bits() & Self::DOORBELL_TYPE_MASK.bits()) >> 12
    }
    /// ASIC revision field.
    #[must_use]
    pub const fn asic_revision(self) -> u32 {
        (self.bits() & Self::ASIC_REVISION_MASK.bits()) >> 22
    }
}

bitflags::bitflags! {
    /// `HSA_CAP2_*` bits of a node's `capability2`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct Capability2: u32 {
        /// `HSA_CAP2_PER_SDMA_QUEUE_RESET_SUPPORTED`
        const PER_SDMA_QUEUE_RESET_SUPPORTED = 0x1;
        /// `HSA_CAP2_TRAP_DEBUG_LDS_OUT_OF_ADDR_RANGE_SUPPORTED`
        const TRAP_DEBUG_LDS_OUT_OF_ADDR_RANGE_SUPPORTED = 0x2;
    }
}

bitflags::bitflags! {
    /// `HSA_DBG_*` bits of a node's `debug_prop`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct DebugProperties: u64 {
        /// `HSA_DBG_WATCH_ADDR_MASK_LO_BIT_MASK` (a 4-bit field)
        const WATCH_ADDR_MASK_LO_BIT_MASK = 0xf;
        /// `HSA_DBG_WATCH_ADDR_MASK_HI_BIT_MASK` (a 6-bit field)
        const WATCH_ADDR_MASK_HI_BIT_MASK = 0x3f0;
        /// `HSA_DBG_DISPATCH_INFO_ALWAYS_VALID`
        const DISPATCH_INFO_ALWAYS_VALID = 0x400;
        /// `HSA_DBG_WATCHPOINTS_EXCLUSIVE`
        const WATCHPOINTS_EXCLUSIVE = 0x800;
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Capability {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "Capability({=u32:#x})", self.bits());
    }
}
#[cfg(feature = "defmt")]
impl defmt::Format for Capability2 {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "Capability2({=u32:#x})", self.bits());
    }
}
#[cfg(feature = "defmt")]
impl defmt::Format for DebugProperties {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "DebugProperties({=u64:#x})", self.bits());
    }
}

/// `HSA_MEM_HEAP_TYPE_*` of a memory bank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HeapType {
    /// 0: system memory.
    System,
    /// 1: frame buffer, CPU-visible.
    FrameBufferPublic,
    /// 2: frame buffer, not all CPU-visible.
    FrameBufferPrivate,
    /// 3: GDS.
    GpuGds,
    /// 4: LDS.
    GpuLds,
    /// 5: scratch.
    GpuScratch,
    /// Any other value.
    Other(u32),
}

impl HeapType {
    /// The type for a `heap_type` value.
    #[must_use]
    pub const fn from_raw(v: u32) -> Self {
        match v {
            0 => Self::System,
            1 => Self::FrameBufferPublic,
            2 => Self::FrameBufferPrivate,
            3 => Self::GpuGds,
            4 => Self::GpuLds,
            5 => Self::GpuScratch,
            other => Self::Other(other),
        }
    }

    /// Whether the bank is VRAM (frame buffer, public or private).
    #[must_use]
    pub const fn is_vram(self) -> bool {
        matches!(self, Self::FrameBufferPublic | Self::FrameBufferPrivate)
    }
}

/// `HSA_IOLINK_TYPE_*` of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum IoLinkType {
    /// 0
    Undefined,
    /// 1 (AMD CPU↔CPU)
    HyperTransport,
    /// 2
    PciExpress,
    /// 3
    Amba,
    /// 4
    Mipi,
    /// 5 (Intel CPU↔CPU)
    Qpi11,
    /// 8
    RapidIo,
    /// 9
    Infiniband,
    /// 11
    Xgmi,
    /// 12
    Xgop,
    /// 13
    Gz,
    /// 14
    EthernetRdma,
    /// 15
    RdmaOther,
    /// 16
    Other,
    /// A value the kernel does not define.
    Unknown(u32),
}

impl IoLinkType {
    /// The type for a `type` value.
    #[must_use]
    pub const fn from_raw(v: u32) -> Self {
        match v {
            0 => Self::Undefined,
            1 => Self::HyperTransport,
            2 => Self::PciExpress,
            3 => Self::Amba,
            4 => Self::Mipi,
            5 => Self::Qpi11,
            8 => Self::RapidIo,
            9 => Self::Infiniband,
            11 => Self::Xgmi,
            12 => Self::Xgop,
            13 => Self::Gz,
            14 => Self::EthernetRdma,
            15 => Self::RdmaOther,
            16 => Self::Other,
            other => Self::Unknown(other),
        }
    }
}

/// A memory bank (`nodes/N/mem_banks/M/properties`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MemBank {
    pub(crate) index: u32,
    pub(crate) props: MemBankProperties,
}

impl MemBank {
    /// The entry's directory number `M`.
    #[must_use]
    pub const fn index(&self) -> u32 {
        self.index
    }
    /// The values of its `properties`.
    #[must_use]
    pub const fn properties(&self) -> &MemBankProperties {
        &self.props
    }
    /// The value of a key, `None` when absent.
    #[must_use]
    pub const fn get(&self, key: super::MemBankKey) -> Option<u64> {
        self.props.get(key)
    }
    /// `heap_type`, typed.
    #[must_use]
    pub const fn heap_type(&self) -> Option<HeapType> {
        match self.props.heap_type() {
            Some(v) => Some(HeapType::from_raw(v)),
            None => None,
        }
    }
    /// `size_in_bytes`.
    #[must_use]
    pub const fn size_in_bytes(&self) -> Option<u64> {
        self.props.size_in_bytes()
    }
}

/// A cache's `sibling_map`: up to [`SIBLING_MAP_CAPACITY`] bits, and the number of entries
/// the file listed (which may be larger; bits beyond the capacity are not kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SiblingMap {
    pub(crate) bits: [u32; SIBLING_MAP_CAPACITY / 32],
    pub(crate) entries: u32,
}

impl SiblingMap {
    /// Entries listed in the file.
    #[must_use]
    pub const fn len(&self) -> u32 {
        self.entries
    }
    /// Whether the map listed no entry.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.entries == 0
    }
    /// Entries kept (at most [`SIBLING_MAP_CAPACITY`]).
    #[must_use]
    pub const fn stored_len(&self) -> u32 {
        if self.entries as usize > SIBLING_MAP_CAPACITY {
            SIBLING_MAP_CAPACITY as u32
        } else {
            self.entries
        }
    }
    /// Whether entries beyond [`SIBLING_MAP_CAPACITY`] were dropped.
    #[must_use]
    pub const fn is_truncated(&self) -> bool {
        self.entries as usize > SIBLING_MAP_CAPACITY
    }
    /// Entry `i` (`None` beyond the stored entries).
    #[must_use]
    pub fn get(&self, i: u32) -> Option<bool> {
        if i >= self.stored_len() {
            return None;
        }
        let w = self.bits.get((i / 32) as usize)?;
        Some(w >> (i % 32) & 1 == 1)
    }
    /// The stored entries in order.
    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        (0..self.stored_len()).map(|i| self.get(i).unwrap_or(false))
    }
    /// How many stored entries are 1.
    #[must_use]
    pub const fn count_ones(&self) -> u32 {
        let mut n = 0u32;
        let mut rest: &[u32] = &self.bits;
        while let [w, tail @ ..] = rest {
            n = n.saturating_add(w.count_ones());
            rest = tail;
        }
        n
    }
    /// The raw bit words, entry `i` at bit `i % 32` of word `i / 32`.
    #[must_use]
    pub const fn words(&self) -> &[u32; SIBLING_MAP_CAPACITY / 32] {
        &self.bits
    }
}

/// A cache (`nodes/N/caches/C/properties`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Cache {
    pub(crate) index: u32,
    pub(crate) props: CacheProperties,
    pub(crate) siblings: SiblingMap,
}

impl Cache {
    /// The entry's directory number `C`.
    #[must_use]
    pub const fn index(&self) -> u32 {
        self.index
    }
    /// The numeric values of its `properties`.
    #[must_use]
    pub const fn properties(&self) -> &CacheProperties {
        &self.props
    }
    /// The value of a numeric key, `None` when absent (and always for `sibling_map`).
    #[must_use]
    pub const fn get(&self, key: super::CacheKey) -> Option<u64> {
        self.props.get(key)
    }
    /// The `sibling_map`, `None` when the file had no such line.
    #[must_use]
    pub const fn sibling_map(&self) -> Option<&SiblingMap> {
        if self.props.contains(super::CacheKey::SiblingMap) { Some(&self.siblings) } else { None }
    }
}

/// Where a link record came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LinkOrigin {
    /// `nodes/N/io_links/L/properties`.
    IoLink,
    /// `nodes/N/p2p_links/L/properties`.
    P2pLink,
    /// Synthesised CPU-mediated link (libhsakmt's `topology_create_indirect_gpu_links`); only
    /// `type`, `node_from`, `node_to` and `weight` are present.
    Derived,
}

/// An IO link, P2P link or derived link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Link {
    pub(crate) index: u32,
    pub(crate) origin: LinkOrigin,
    pub(crate) props: LinkProperties,
}

impl Link {
    /// The entry's directory number `L` (for a derived link: its position among the node's
    /// derived links).
    #[must_use]
    pub const fn index(&self) -> u32 {
        self.index
    }
    /// Where the record came from.
    #[must_use]
    pub const fn origin(&self) -> LinkOrigin {
        self.origin
    }
    /// Whether the kernel reported this link (io_links or p2p_links).
    #[must_use]
    pub const fn is_kernel_reported(&self) -> bool {
        !matches!(self.origin, LinkOrigin::Derived)
    }
    /// The values of its `properties`.
    #[must_use]
    pub const fn properties(&self) -> &LinkProperties {
        &self.props
    }
    /// The value of a key, `None` when absent.
    #[must_use]
    pub const fn get(&self, key: super::LinkKey) -> Option<u64> {
        self.props.get(key)
    }
    /// `type`, typed.
    #[must_use]
    pub const fn link_type(&self) -> Option<IoLinkType> {
        match self.props.link_type() {
            Some(v) => Some(IoLinkType::from_raw(v)),
            None => None,
        }
    }
    /// `node_to` (a sysfs node id).
    #[must_use]
    pub const fn node_to(&self) -> Option<u32> {
        self.props.node_to()
    }
    /// `node_from` (a sysfs node id).
    #[must_use]
    pub const fn node_from(&self) -> Option<u32> {
        self.props.node_from()
    }
    /// `weight`.
    #[must_use]
    pub const fn weight(&self) -> Option<u32> {
        self.props.weight()
    }
}

/// Which record an unknown key belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Owner {
    /// `system_properties`.
    System,
    /// `nodes/<node>/properties` (sysfs id).
    Node {
        /// Node sysfs id.
        node: u32,
    },
    /// `nodes/<node>/<kind>/<index>/properties`.
    Entry {
        /// Node sysfs id.
        node: u32,
        /// Which sub-directory.
        kind: EntryKind,
        /// Entry directory number.
        index: u32,
    },
}

/// A `key value` line whose key the kernel contract does not list (e.g. a DKMS or future
/// kernel's addition), kept with its decimal value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct UnknownKey {
    pub(crate) owner: Owner,
    pub(crate) name: [u8; UNKNOWN_KEY_NAME_CAPACITY],
    pub(crate) name_len: u8,
    pub(crate) value: u64,
}

impl UnknownKey {
    /// The record the key was found in.
    #[must_use]
    pub const fn owner(&self) -> Owner {
        self.owner
    }
    /// The key's name (printable ASCII).
    #[must_use]
    pub fn name(&self) -> &str {
        let bytes = self.name.get(..usize::from(self.name_len)).unwrap_or_default();
        core::str::from_utf8(bytes).unwrap_or_default()
    }
    /// Its value.
    #[must_use]
    pub const fn value(&self) -> u64 {
        self.value
    }
}
