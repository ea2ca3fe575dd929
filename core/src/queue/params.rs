//! Per-queue parameters as pure functions: what libhsakmt computes before
//! `AMDKFD_IOC_CREATE_QUEUE` (priority mapping, ring checks, CU masks, doorbell placement, EOP
//! buffer and context-save-area sizes, the context-save-area headers). No I/O happens here; the
//! queue-creation code feeds the results to the ioctl.
//!
//! # Sources
//! - libhsakmt `src/queues.c` (ROCm `rocm-systems` `projects/rocr-runtime/libhsakmt`, read at
//!   commit `09311a0886a5`; also the 2024 `ROCR-Runtime` copy): `priority_map`,
//!   `DOORBELL_SIZE`, `DOORBELLS_PAGE_SIZE`, the SOC15 doorbell-offset split in
//!   `hsaKmtCreateQueueV2Ctx`, EOP sizes, `update_ctx_save_restore_size`,
//!   `hsakmt_get_vgpr_size_per_cu` / `hsakmt_get_sgpr_size_per_cu` / `get_hwreg_size_per_cu` /
//!   `hsakmt_get_num_waves`, `fill_cwsr_header`, the CU-mask checks of
//!   `hsaKmtSetQueueCUMask`; packed gfx versions from `src/libhsakmt.h`
//!   (`GFX_VERSION_*` = `major << 16 | minor << 8 | stepping`).
//! - Linux `include/uapi/linux/kfd_ioctl.h`: `KFD_MIN_QUEUE_RING_SIZE`,
//!   `struct kfd_context_save_area_header` (40 bytes); `drivers/gpu/drm/amd/amdkfd/kfd_queue.c`:
//!   the kernel's own `cwsr_size` / `ctl_stack_size` (exported in the node's sysfs properties
//!   and checked at queue creation: `ctl_stack_size` must match exactly,
//!   `ctx_save_restore_size` must be at least `cwsr_size`, the EOP size must match).
//! - Ring-base alignment: the MQD managers program `CP_HQD_PQ_BASE` and SDMA `RB_BASE` with
//!   `address >> 8` (Linux `kfd_mqd_manager_v9.c`), so rings are 256-byte aligned. ROCr's
//!   AQL limits (`amd_aql_queue.cpp`): at most `0x1_0000_0000` bytes.

use core::fmt;

use crate::error::{Errno, Error, ErrorKind};
use crate::platform::SharedMemory;

/// `KFD_MIN_QUEUE_RING_SIZE`: smallest ring in bytes.
pub const KFD_MIN_QUEUE_RING_SIZE: u64 = 1024;
/// Largest compute (PM4/AQL) ring in bytes (`CP_HQD_PQ_CONTROL.QUEUE_SIZE`, per ROCr).
pub const MAX_COMPUTE_RING_SIZE: u64 = 0x1_0000_0000;
/// Alignment of a ring's base address (`CP_HQD_PQ_BASE` / SDMA `RB_BASE` hold `addr >> 8`).
pub const RING_BASE_ALIGN: u64 = 256;
/// CU-mask bits amdkfd looks at (`AMDKFD_IOC_SET_CU_MASK` ignores bits past 1024).
pub const KFD_MAX_CU_MASK_BITS: u32 = 1024;
/// Doorbells per doorbell page.
pub const DOORBELLS_PER_PAGE: u64 = 1024;
/// Host page size used for the page-aligned sizes below (libhsakmt's `PAGE_SIZE`).
pub const PAGE_SIZE: u64 = 4096;
/// Size of `struct kfd_context_save_area_header` / `HsaUserContextSaveAreaHeader`.
pub const CONTEXT_SAVE_AREA_HEADER_SIZE: usize = 40;

pub use crate::topology::GfxVersion;
use crate::topology::NodeProperties;

const GFX_CARRIZO: u32 = 0x08_0001;
const GFX_TONGA: u32 = 0x08_0002;
const GFX_VEGA10: u32 = 0x09_0000;
const GFX_ARCTURUS: u32 = 0x09_0008;
const GFX_ALDEBARAN: u32 = 0x09_000A;
const GFX_RENOIR: u32 = 0x09_000C;
const GFX_AQUA_VANJARAM: u32 = 0x09_0400;
const GFX_950: u32 = 0x09_0500;
const GFX_NAVI10: u32 = 0x0A_0100;
const GFX_PLUM_BONITO: u32 = 0x0B_0000;
const GFX_1201: u32 = 0x0C_0001;
const GFX_1250: u32 = 0x0C_0500;

/// The kind of queue (libhsakmt `HSA_QUEUE_TYPE` / `KFD_IOC_QUEUE_TYPE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum QueueKind {
    /// PM4 compute queue (`KFD_IOC_QUEUE_TYPE_COMPUTE`).
    Compute,
    /// AQL compute queue (`KFD_IOC_QUEUE_TYPE_COMPUTE_AQL`).
    ComputeAql,
    /// SDMA queue (`KFD_IOC_QUEUE_TYPE_SDMA`).
    Sdma,
    /// SDMA queue on an XGMI engine (`KFD_IOC_QUEUE_TYPE_SDMA_XGMI`).
    SdmaXgmi,
    /// SDMA queue on a chosen engine (`KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID`).
    SdmaByEngineId,
}

impl QueueKind {
    /// Whether the queue runs on the CP (and so may need EOP and context-save memory).
    #[must_use]
    pub const fn is_compute(self) -> bool {
        matches!(self, Self::Compute | Self::ComputeAql)
    }
}

/// Why a queue parameter is invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum QueueParamError {
    /// Priority outside −3..=3.
    InvalidPriority(i32),
    /// Ring size not a power of two.
    RingSizeNotPowerOfTwo,
    /// Ring smaller than [`KFD_MIN_QUEUE_RING_SIZE`].
    RingTooSmall,
    /// Ring larger than the queue kind allows.
    RingTooLarge,
    /// Ring base address zero or not [`RING_BASE_ALIGN`]-aligned.
    RingMisaligned,
    /// CU-mask bit count zero, not a multiple of 32, above [`KFD_MAX_CU_MASK_BITS`], or longer
    /// than the mask array.
    InvalidCuMaskCount(u32),
    /// A CU-mask bit is set at or above the node's CU count.
    CuMaskOutOfRange {
        /// First offending bit.
        bit: u32,
    },
    /// The CU mask enables no CU.
    CuMaskEmpty,
    /// An output buffer is too small.
    BufferTooSmall,
    /// The node facts lack a value the computation divides by (SIMD arrays per engine).
    MissingNodeFact,
    /// The gfx version is newer than the formulas this crate knows.
    UnsupportedGfx,
    /// A computed size does not fit 32 bits.
    Overflow,
    /// The node's facts contradict each other: its control stack (`ctl_stack_size`) does not
    /// fit its save area (`cwsr_size`, or the size computed for it).
    InconsistentNodeFacts,
}

impl fmt::Display for QueueParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidPriority(p) => write!(f, "queue priority {p} not in -3..=3"),
            Self::RingSizeNotPowerOfTwo => f.write_str("ring size is not a power of two"),
            Self::RingTooSmall => f.write_str("ring smaller than 1024 bytes"),
            Self::RingTooLarge => f.write_str("ring too large"),
            Self::RingMisaligned => f.write_str("ring base address zero or not 256-byte aligned"),
            Self::InvalidCuMaskCount(n) => write!(f, "invalid CU mask bit count {n}"),
            Self::CuMaskOutOfRange { bit } => write!(f, "CU mask bit {bit} beyond the node's CUs"),
            Self::CuMaskEmpty => f.write_str("CU mask enables no CU"),
            Self::BufferTooSmall => f.write_str("output buffer too small"),
            Self::MissingNodeFact => {
                f.write_str("node facts incomplete (simd_arrays_per_engine is 0)")
            }
            Self::UnsupportedGfx => f.write_str("gfx version unknown to the context-save formulas"),
            Self::Overflow => f.write_str("computed size overflows 32 bits"),
            Self::InconsistentNodeFacts => {
                f.write_str("node facts inconsistent (ctl_stack_size exceeds the save area)")
            }
        }
    }
}

impl Error for QueueParamError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::RingMisaligned => ErrorKind::Misaligned,
            Self::UnsupportedGfx => ErrorKind::NotSupported,
            Self::MissingNodeFact | Self::InconsistentNodeFacts => ErrorKind::Malformed,
            Self::BufferTooSmall => ErrorKind::CapacityExhausted,
            _ => ErrorKind::InvalidArgument,
        }
    }
}

impl core::error::Error for QueueParamError {}

/// libhsakmt's `HSA_QUEUE_PRIORITY` (−3..=3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(i8)]
pub enum QueuePriority {
    /// `HSA_QUEUE_PRIORITY_MINIMUM` (−3).
    Minimum = -3,
    /// `HSA_QUEUE_PRIORITY_LOW` (−2).
    Low = -2,
    /// `HSA_QUEUE_PRIORITY_BELOW_NORMAL` (−1).
    BelowNormal = -1,
    /// `HSA_QUEUE_PRIORITY_NORMAL` (0).
    #[default]
    Normal = 0,
    /// `HSA_QUEUE_PRIORITY_ABOVE_NORMAL` (1).
    AboveNormal = 1,
    /// `HSA_QUEUE_PRIORITY_HIGH` (2).
    High = 2,
    /// `HSA_QUEUE_PRIORITY_MAXIMUM` (3).
    Maximum = 3,
}

impl QueuePriority {
    /// The priority for a raw libhsakmt value.
    ///
    /// # Errors
    /// [`QueueParamError::InvalidPriority`] outside −3..=3.
    pub const fn from_raw(raw: i32) -> Result<Self, QueueParamError> {
        Ok(match raw {
            -3 => Self::Minimum,
            -2 => Self::Low,
            -1 => Self::BelowNormal,
            0 => Self::Normal,
            1 => Self::AboveNormal,
            2 => Self::High,
            3 => Self::Maximum,
            other => return Err(QueueParamError::InvalidPriority(other)),
        })
    }

    /// The `queue_priority` KFD gets (0..=15): libhsakmt's `priority_map` {0, 3, 5, 7, 9, 11, 15}.
    #[must_use]
    pub const fn kfd_priority(self) -> u32 {
        match self {
            Self::Minimum => 0,
            Self::Low => 3,
            Self::BelowNormal => 5,
            Self::Normal => 7,
            Self::AboveNormal => 9,
            Self::High => 11,
            Self::Maximum => 15,
        }
    }
}

/// Checks a ring before queue creation: size a power of two, at least
/// [`KFD_MIN_QUEUE_RING_SIZE`] (amdkfd silently raises smaller sizes, which would let the
/// engine run past a smaller buffer, so this rejects them), at most
/// [`MAX_COMPUTE_RING_SIZE`] for compute queues; base non-zero and [`RING_BASE_ALIGN`]-aligned.
/// A power of two ≥ 1024 is also a whole number of 64-byte AQL packets.
///
/// # Errors
/// The `Ring*` variants of [`QueueParamError`].
pub const fn validate_ring(kind: QueueKind, base: u64, size: u64) -> Result<(), QueueParamError> {
    if !size.is_power_of_two() {
        return Err(QueueParamError::RingSizeNotPowerOfTwo);
    }
    if size < KFD_MIN_QUEUE_RING_SIZE {
        return Err(QueueParamError::RingTooSmall);
    }
    if kind.is_compute() && size > MAX_COMPUTE_RING_SIZE {
        return Err(QueueParamError::RingTooLarge);
    }
    if base == 0 || !base.is_multiple_of(RING_BASE_ALIGN) {
        return Err(QueueParamError::RingMisaligned);
    }
    Ok(())
}

/// Checks a CU mask for `AMDKFD_IOC_SET_CU_MASK`: `count_bits` (the ioctl's `num_cu_mask`) is a
/// non-zero multiple of 32, at most [`KFD_MAX_CU_MASK_BITS`] and covered by `mask`; no bit at or
/// above `cu_count` (the node's CUs: `simd_count / simd_per_cu`) is set; at least one CU is
/// enabled. libhsakmt checks only the count; the rest would otherwise be silently dropped or
/// leave the queue without CUs.
///
/// # Errors
/// [`QueueParamError::InvalidCuMaskCount`], [`QueueParamError::CuMaskOutOfRange`],
/// [`QueueParamError::CuMaskEmpty`].
pub fn validate_cu_mask(
    count_bits: u32,
    mask: &[u32],
    cu_count: u32,
) -> Result<(), QueueParamError> {
    let words = (count_bits / 32) as usize;
    if count_bits == 0
        || !count_bits.is_multiple_of(32)
        || count_bits > KFD_MAX_CU_MASK_BITS
        || words > mask.len()
    {
        return Err(QueueParamError::InvalidCuMaskCount(count_bits));
    }
    let mut any = false;
    for (i, &w) in mask.iter().take(words).enumerate() {
        // `i` < 32 (at most 1024 bits): the products and sums stay far below 2^32.
        let base = (i as u32).saturating_mul(32);
        let allowed = if cu_count <= base {
            0
        } else if cu_count.saturating_sub(base) >= 32 {
            u32::MAX
        } else {
            (1u32 << cu_count.saturating_sub(base)).wrapping_sub(1)
        };
        let extra = w & !allowed;
        if extra != 0 {
            let bit = base.saturating_add(extra.trailing_zeros());
            return Err(QueueParamError::CuMaskOutOfRange { bit });
        }
        any |= w != 0;
    }
    if !any {
        return Err(QueueParamError::CuMaskEmpty);
    }
    Ok(())
}

/// Writes the all-CUs-enabled mask libhsakmt starts every queue with into `out` and returns its
/// bit count (`cu_count` rounded up to a multiple of 32).
///
/// # Errors
/// [`QueueParamError::BufferTooSmall`] when `out` has fewer than `ceil(cu_count / 32)` words;
/// [`QueueParamError::Overflow`] when the bit count does not fit 32 bits.
pub fn default_cu_mask(cu_count: u32, out: &mut [u32]) -> Result<u32, QueueParamError> {
    let words = cu_count.div_ceil(32) as usize;
    let out = out.get_mut(..words).ok_or(QueueParamError::BufferTooSmall)?;
    for (i, w) in out.iter_mut().enumerate() {
        // `i` < `words`, so `i × 32` < `cu_count`.
        let left = cu_count.saturating_sub((i as u32).saturating_mul(32));
        *w = if left >= 32 { u32::MAX } else { (1u32 << left).wrapping_sub(1) };
    }
    (words as u32).checked_mul(32).ok_or(QueueParamError::Overflow)
}

/// Bytes per doorbell: 8 on gfx9+ (SOC15), else 4.
#[must_use]
pub const fn doorbell_size(gfx: GfxVersion) -> u32 {
    if gfx.full() >= GFX_VEGA10 { 8 } else { 4 }
}

/// Bytes of the doorbell page to map: 1024 doorbells, at least one host page.
#[must_use]
pub const fn doorbell_page_size(gfx: GfxVersion) -> u64 {
    let s = DOORBELLS_PER_PAGE.saturating_mul(doorbell_size(gfx) as u64);
    if s < PAGE_SIZE { PAGE_SIZE } else { s }
}

/// Where a queue's doorbell lives: the `/dev/kfd` mmap offset of its doorbell page and the
/// byte offset inside that page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DoorbellLocation {
    /// Offset to mmap the doorbell page at.
    pub mmap_offset: u64,
    /// Byte offset of the queue's doorbell within the page.
    pub offset_in_page: u64,
}

/// Splits `CREATE_QUEUE`'s `doorbell_offset`: on SOC15 (gfx9+) it carries the page's mmap offset
/// in the bits above the page size and the doorbell's byte offset in the page below; before
/// SOC15 it is the mmap offset alone and the doorbell sits at `queue_id × 4`.
#[must_use]
pub const fn doorbell_location(
    gfx: GfxVersion,
    kfd_doorbell_offset: u64,
    queue_id: u32,
) -> DoorbellLocation {
    if gfx.full() >= GFX_VEGA10 {
        // The page of doorbells is a power of two: 8 KiB.
        let mask = DOORBELLS_PER_PAGE.saturating_mul(doorbell_size(gfx) as u64).wrapping_sub(1);
        DoorbellLocation {
            mmap_offset: kfd_doorbell_offset & !mask,
            offset_in_page: kfd_doorbell_offset & mask,
        }
    } else {
        DoorbellLocation {
            mmap_offset: kfd_doorbell_offset,
            // A 32-bit id times 4 fits 64 bits.
            offset_in_page: (queue_id as u64).saturating_mul(doorbell_size(gfx) as u64),
        }
    }
}

/// EOP (end-of-pipe) buffer size for a queue, 0 for none: 0x8000 on Tonga; on gfx9.4.x 4096
/// for PM4 compute queues and none for AQL; 4096 for other gfx ≥ 8; none before gfx8 and for
/// SDMA queues. (libhsakmt also allocates one for `SDMA_BY_ENG_ID` queues, which amdkfd
/// ignores; this returns 0.)
#[must_use]
pub const fn eop_buffer_size(gfx: GfxVersion, kind: QueueKind) -> u32 {
    let v = gfx.full();
    if !kind.is_compute() {
        0
    } else if v == GFX_TONGA {
        0x8000
    } else if v & !0xFF == GFX_AQUA_VANJARAM {
        if matches!(kind, QueueKind::Compute) { 4096 } else { 0 }
    } else if v >= 0x08_0000 {
        4096
    } else {
        0
    }
}

/// The node facts the context-save sizing needs (from the node's sysfs `properties`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QueueNodeFacts {
    /// gfx version.
    pub gfx: GfxVersion,
    /// `simd_count` (libhsakmt `NumFComputeCores`).
    pub simd_count: u32,
    /// `simd_per_cu`.
    pub simd_per_cu: u32,
    /// `num_xcc` (0 is read as 1: kernels before multi-XCC support omit it).
    pub num_xcc: u32,
    /// `array_count` (SIMD arrays on the whole device).
    pub array_count: u32,
    /// `simd_arrays_per_engine`.
    pub simd_arrays_per_engine: u32,
    /// `lds_size_in_kb`.
    pub lds_size_in_kb: u32,
    /// `max_waves_per_simd`.
    pub max_waves_per_simd: u32,
    /// `cwsr_size` as amdkfd computed it (0 when the kernel does not export it).
    pub cwsr_size: u32,
    /// `ctl_stack_size` as amdkfd computed it (0 when not exported).
    pub ctl_stack_size: u32,
}

impl Default for GfxVersion {
    fn default() -> Self {
        GfxVersion::new(0, 0, 0)
    }
}

impl QueueNodeFacts {
    /// The facts of a GPU node at gfx version `gfx`, from its `properties` file as read by the
    /// topology; an absent key reads as 0 (as libhsakmt's zeroed `HsaNodeProperties`). The
    /// values are taken as the tree gives them: [`context_save_sizes`] checks every step.
    #[must_use]
    pub const fn from_properties(gfx: GfxVersion, p: &NodeProperties) -> Self {
        /// The value, or 0 when the key is absent.
        const fn or_zero(v: Option<u32>) -> u32 {
            match v {
                Some(v) => v,
                None => 0,
            }
        }
        QueueNodeFacts {
            gfx,
            simd_count: or_zero(p.simd_count()),
            simd_per_cu: or_zero(p.simd_per_cu()),
            num_xcc: or_zero(p.num_xcc()),
            array_count: or_zero(p.array_count()),
            simd_arrays_per_engine: or_zero(p.simd_arrays_per_engine()),
            lds_size_in_kb: or_zero(p.lds_size_in_kb()),
            max_waves_per_simd: or_zero(p.max_waves_per_simd()),
            cwsr_size: or_zero(p.cwsr_size()),
            ctl_stack_size: or_zero(p.ctl_stack_size()),
        }
    }

    /// CUs on the node: `simd_count / simd_per_cu` (0 when `simd_per_cu` is 0).
    #[must_use]
    pub const fn cu_count(&self) -> u32 {
        match self.simd_count.checked_div(self.simd_per_cu) {
            Some(n) => n,
            None => 0,
        }
    }

    const fn xcc(&self) -> u32 {
        if self.num_xcc == 0 { 1 } else { self.num_xcc }
    }
}

/// Context-save (CWSR) area sizes of one compute queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ContextSaveSizes {
    /// Control-stack bytes per XCC (header included): `CREATE_QUEUE.ctl_stack_size`.
    pub ctl_stack_size: u32,
    /// Save-area bytes per XCC (control stack + wave data): `CREATE_QUEUE.ctx_save_restore_size`.
    pub ctx_save_restore_size: u32,
    /// Debugger bytes per XCC.
    pub debug_memory_size: u32,
    /// XCCs (≥ 1).
    pub num_xcc: u32,
    /// Bytes to allocate: `(ctx_save_restore_size + debug_memory_size) × num_xcc`.
    pub total_size: u32,
}

impl ContextSaveSizes {
    /// `total_size` rounded up to a page: the allocation size.
    #[must_use]
    pub const fn alloc_size(&self) -> u64 {
        // A 32-bit size rounded up to a page fits 64 bits.
        (self.total_size as u64).next_multiple_of(PAGE_SIZE)
    }
}

const fn page_align(v: u64) -> Option<u64> {
    v.checked_next_multiple_of(PAGE_SIZE)
}

const fn vgpr_size_per_cu(v: u32) -> Option<u64> {
    Some(if v < GFX_ARCTURUS {
        0x40000
    } else if v <= GFX_ALDEBARAN {
        0x80000
    } else if v <= GFX_RENOIR {
        0x40000
    } else if v <= GFX_950 {
        0x80000
    } else if v < GFX_PLUM_BONITO {
        0x40000
    } else if v <= GFX_1201 {
        0x60000
    } else if v <= GFX_1250 {
        0x80000
    } else {
        return None;
    })
}

const fn sgpr_size_per_cu(v: u32) -> Option<u64> {
    if v < GFX_1250 {
        Some(0x4000)
    } else if v == GFX_1250 {
        Some(0x8000)
    } else {
        None
    }
}

/// Sizes the context-save area of a compute queue, or `None` when the node needs none
/// (gfx < 8.0.1 (Carrizo), or no SIMDs).
///
/// Uses the node's `cwsr_size` / `ctl_stack_size` when non-zero (amdkfd requires
/// `ctl_stack_size` to match its own value exactly), each independently, and otherwise
/// libhsakmt's `update_ctx_save_restore_size` formulas:
/// `cu = simd_count / simd_per_cu / num_xcc`;
/// `waves = gfx < 10.1 ? min(cu × 40, (array_count / simd_arrays_per_engine) /
/// simd_arrays_per_engine × 512) : gfx < 12.5 ? cu × 32 : cu × simd_per_cu × max_waves_per_simd`;
/// `ctl = page_align(40 + waves × (gfx ≥ 10.1 ? 12 : 8) + 8)`, at most 0x7000 on gfx10;
/// `wg = cu × (vgpr + sgpr + lds_size_in_kb × 1024 + hwreg)` per gfx;
/// `ctx = ctl + page_align(wg)`; `debug = align64(waves × 32)` (always the local formula).
///
/// Every value comes from the node's sysfs `properties`, so every step is checked: a garbled
/// tree (a huge `lds_size_in_kb` or `max_waves_per_simd`) is an error, never a wrapped size.
///
/// # Errors
/// [`QueueParamError::MissingNodeFact`] when `simd_arrays_per_engine` is 0 on a pre-gfx10
/// node, [`QueueParamError::UnsupportedGfx`] past gfx12.5, [`QueueParamError::Overflow`] when
/// a size does not fit (the total must fit 32 bits),
/// [`QueueParamError::InconsistentNodeFacts`] when the control stack exceeds the save area.
pub const fn context_save_sizes(
    node: &QueueNodeFacts,
) -> Result<Option<ContextSaveSizes>, QueueParamError> {
    /// The value of a checked step, or the overflow error.
    macro_rules! checked {
        ($e:expr) => {
            match $e {
                Some(v) => v,
                None => return Err(QueueParamError::Overflow),
            }
        };
    }
    let v = node.gfx.full();
    if v < GFX_CARRIZO || node.simd_count == 0 || node.simd_per_cu == 0 {
        return Ok(None);
    }
    let xcc = node.xcc();
    // Divisors checked non-zero above (`xcc` is at least 1).
    let cu =
        checked!(checked!(node.simd_count.checked_div(node.simd_per_cu)).checked_div(xcc)) as u64;
    let waves = if v < GFX_NAVI10 {
        if node.simd_arrays_per_engine == 0 {
            return Err(QueueParamError::MissingNodeFact);
        }
        let per_engine = node.simd_arrays_per_engine as u64;
        let banks = checked!((node.array_count as u64).checked_div(per_engine));
        let cap = checked!(checked!(banks.checked_div(per_engine)).checked_mul(512));
        let w = checked!(cu.checked_mul(40));
        if w < cap { w } else { cap }
    } else if v < GFX_1250 {
        checked!(cu.checked_mul(32))
    } else {
        let per_cu =
            checked!((node.simd_per_cu as u64).checked_mul(node.max_waves_per_simd as u64));
        checked!(cu.checked_mul(per_cu))
    };
    let per_wave = if v >= GFX_NAVI10 { 12 } else { 8 };
    let wave_bytes = checked!(waves.checked_mul(per_wave));
    const HEADER_AND_TAIL: u64 = CONTEXT_SAVE_AREA_HEADER_SIZE as u64 + 8;
    let header_and_waves = checked!(wave_bytes.checked_add(HEADER_AND_TAIL));
    let mut ctl = checked!(page_align(header_and_waves));
    if node.gfx.major == 10 && ctl > 0x7000 {
        ctl = 0x7000;
    }
    let (vgpr, sgpr) = match (vgpr_size_per_cu(v), sgpr_size_per_cu(v)) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err(QueueParamError::UnsupportedGfx),
    };
    let hwreg = if v < GFX_1250 {
        0x1000
    } else {
        let per_wave = if v == GFX_1250 { 512 } else { 128 };
        let waves_per_cu =
            checked!((node.max_waves_per_simd as u64).checked_mul(node.simd_per_cu as u64));
        checked!(waves_per_cu.checked_mul(per_wave))
    };
    // `lds_size_in_kb` is a u32: shifted by 10 it fits 64 bits.
    let lds = (node.lds_size_in_kb as u64) << 10;
    let per_cu =
        checked!(checked!(checked!(vgpr.checked_add(sgpr)).checked_add(lds)).checked_add(hwreg));
    let wg = checked!(cu.checked_mul(per_cu));
    let debug = checked!(checked!(waves.checked_mul(32)).checked_next_multiple_of(64));
    let ctx = if node.cwsr_size > 0 {
        node.cwsr_size as u64
    } else {
        checked!(ctl.checked_add(checked!(page_align(wg))))
    };
    let ctl = if node.ctl_stack_size > 0 { node.ctl_stack_size as u64 } else { ctl };
    if ctl > ctx {
        return Err(QueueParamError::InconsistentNodeFacts);
    }
    let total = checked!(checked!(ctx.checked_add(debug)).checked_mul(xcc as u64));
    if total > u32::MAX as u64 {
        return Err(QueueParamError::Overflow);
    }
    Ok(Some(ContextSaveSizes {
        ctl_stack_size: ctl as u32,
        ctx_save_restore_size: ctx as u32,
        debug_memory_size: debug as u32,
        num_xcc: xcc,
        total_size: total as u32,
    }))
}

/// `struct kfd_context_save_area_header` (uapi) / `HsaUserContextSaveAreaHeader`: 40 bytes at
/// the start of each XCC's save area. Byte offsets: control_stack_offset 0,
/// control_stack_size 4, wave_state_offset 8, wave_state_size 12, debug_offset 16,
/// debug_size 20, err_payload_addr 24 (u64), err_event_id 32, reserved1 36.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ContextSaveAreaHeader {
    /// Offset of the saved control stack's top (written by the kernel on save).
    pub control_stack_offset: u32,
    /// Size of the saved control stack (kernel).
    pub control_stack_size: u32,
    /// Offset of the saved wave state (kernel).
    pub wave_state_offset: u32,
    /// Size of the saved wave state (kernel).
    pub wave_state_size: u32,
    /// Offset from this header to the debugger area.
    pub debug_offset: u32,
    /// Size of the debugger area (all XCCs).
    pub debug_size: u32,
    /// Address of the 64-bit error-reason payload (an exception signal's value), or 0.
    pub err_payload_addr: u64,
    /// KFD event id raised on queue errors, or 0.
    pub err_event_id: u32,
    /// Reserved.
    pub reserved1: u32,
}

impl ContextSaveAreaHeader {
    /// The header libhsakmt's `fill_cwsr_header` writes for XCC `xcc` (0-based) of a queue:
    /// wave-state fields zero, `debug_offset = (num_xcc − xcc) × ctx_save_restore_size` (every
    /// XCC's header points at the shared debugger area after the last save area),
    /// `debug_size = debug_memory_size × num_xcc`, and the error event / payload.
    #[must_use]
    pub const fn for_xcc(
        sizes: &ContextSaveSizes,
        xcc: u32,
        err_event_id: u32,
        err_payload_addr: u64,
    ) -> Self {
        ContextSaveAreaHeader {
            control_stack_offset: 0,
            control_stack_size: 0,
            wave_state_offset: 0,
            wave_state_size: 0,
            debug_offset: sizes
                .num_xcc
                .saturating_sub(xcc)
                .saturating_mul(sizes.ctx_save_restore_size),
            debug_size: sizes.debug_memory_size.saturating_mul(sizes.num_xcc),
            err_payload_addr,
            err_event_id,
            reserved1: 0,
        }
    }

    /// The 40 little-endian bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; CONTEXT_SAVE_AREA_HEADER_SIZE] {
        let mut b = [0u8; CONTEXT_SAVE_AREA_HEADER_SIZE];
        let words = [
            self.control_stack_offset,
            self.control_stack_size,
            self.wave_state_offset,
            self.wave_state_size,
            self.debug_offset,
            self.debug_size,
        ];
        for (chunk, w) in b.chunks_exact_mut(4).zip(words.iter()) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        if let Some(c) = b.get_mut(24..32) {
            c.copy_from_slice(&self.err_payload_addr.to_le_bytes());
        }
        if let Some(c) = b.get_mut(32..36) {
            c.copy_from_slice(&self.err_event_id.to_le_bytes());
        }
        if let Some(c) = b.get_mut(36..40) {
            c.copy_from_slice(&self.reserved1.to_le_bytes());
        }
        b
    }
}

/// Writes the per-XCC headers into a context-save area mapped at byte `offset` of `mem`:
/// header `i` at `offset + i × ctx_save_restore_size`.
///
/// # Errors
/// [`Errno::EFAULT`] when the area does not fit the mapping.
pub fn write_context_save_headers<M: SharedMemory>(
    mem: &M,
    offset: usize,
    sizes: &ContextSaveSizes,
    err_event_id: u32,
    err_payload_addr: u64,
) -> Result<(), Errno> {
    if offset.checked_add(sizes.total_size as usize).is_none_or(|end| end > mem.len()) {
        return Err(Errno::EFAULT);
    }
    for xcc in 0..sizes.num_xcc {
        let h = ContextSaveAreaHeader::for_xcc(sizes, xcc, err_event_id, err_payload_addr);
        let at = (xcc as usize)
            .checked_mul(sizes.ctx_save_restore_size as usize)
            .and_then(|o| offset.checked_add(o))
            .ok_or(Errno::EFAULT)?;
        mem.write(at, &h.to_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::test_mem::TestMem;

    #[test]
    fn priorities() {
        let map: [u32; 7] = [0, 3, 5, 7, 9, 11, 15];
        for (raw, want) in (-3..=3).zip(map) {
            assert_eq!(QueuePriority::from_raw(raw).unwrap().kfd_priority(), want);
        }
        assert_eq!(QueuePriority::from_raw(4), Err(QueueParamError::InvalidPriority(4)));
        assert_eq!(QueuePriority::default().kfd_priority(), 7);
    }

    #[test]
    fn rings() {
        use QueueKind::*;
        assert_eq!(validate_ring(ComputeAql, 0x1000, 4096), Ok(()));
        assert_eq!(
            validate_ring(ComputeAql, 0x1000, 3000),
            Err(QueueParamError::RingSizeNotPowerOfTwo)
        );
        assert_eq!(validate_ring(Sdma, 0x1000, 512), Err(QueueParamError::RingTooSmall));
        assert_eq!(validate_ring(Compute, 0x1000, 1 << 33), Err(QueueParamError::RingTooLarge));
        assert_eq!(validate_ring(Sdma, 0x1000, 1 << 33), Ok(()));
        assert_eq!(validate_ring(Sdma, 0x1080, 1024), Err(QueueParamError::RingMisaligned));
        assert_eq!(validate_ring(Sdma, 0, 1024), Err(QueueParamError::RingMisaligned));
    }

    #[test]
    fn cu_masks() {
        let mut m = [0u32; 4];
        assert_eq!(default_cu_mask(104, &mut m), Ok(128));
        assert_eq!(m, [!0, !0, !0, 0xFF]);
        assert_eq!(validate_cu_mask(128, &m, 104), Ok(()));
        assert_eq!(validate_cu_mask(96, &m, 104), Ok(()));
        assert_eq!(validate_cu_mask(0, &m, 104), Err(QueueParamError::InvalidCuMaskCount(0)));
        assert_eq!(validate_cu_mask(33, &m, 104), Err(QueueParamError::InvalidCuMaskCount(33)));
        assert_eq!(validate_cu_mask(160, &m, 104), Err(QueueParamError::InvalidCuMaskCount(160)));
        m[3] = 0x100;
        assert_eq!(
            validate_cu_mask(128, &m, 104),
            Err(QueueParamError::CuMaskOutOfRange { bit: 104 })
        );
        assert_eq!(validate_cu_mask(32, &[0], 104), Err(QueueParamError::CuMaskEmpty));
        assert_eq!(default_cu_mask(104, &mut [0; 3]), Err(QueueParamError::BufferTooSmall));
    }

    #[test]
    fn doorbells_and_eop() {
        let g942 = GfxVersion::from_target_version(90402).unwrap();
        assert_eq!(g942, GfxVersion::new(9, 4, 2));
        assert_eq!(g942.full(), 0x09_0402);
        assert_eq!(doorbell_size(g942), 8);
        assert_eq!(doorbell_page_size(g942), 8192);
        let g803 = GfxVersion::new(8, 0, 3);
        assert_eq!(doorbell_size(g803), 4);
        assert_eq!(doorbell_page_size(g803), 4096);
        assert_eq!(
            doorbell_location(g942, 0x1_2345_6000 | 0x1808, 3),
            DoorbellLocation { mmap_offset: 0x1_2345_6000, offset_in_page: 0x1808 }
        );
        assert_eq!(
            doorbell_location(g803, 0x5000, 3),
            DoorbellLocation { mmap_offset: 0x5000, offset_in_page: 12 }
        );
        assert_eq!(eop_buffer_size(GfxVersion::new(8, 0, 2), QueueKind::ComputeAql), 0x8000);
        assert_eq!(eop_buffer_size(g942, QueueKind::ComputeAql), 0);
        assert_eq!(eop_buffer_size(g942, QueueKind::Compute), 4096);
        assert_eq!(eop_buffer_size(GfxVersion::new(9, 5, 0), QueueKind::ComputeAql), 4096);
        assert_eq!(eop_buffer_size(GfxVersion::new(11, 0, 0), QueueKind::ComputeAql), 4096);
        assert_eq!(eop_buffer_size(GfxVersion::new(11, 0, 0), QueueKind::Sdma), 0);
        assert_eq!(eop_buffer_size(GfxVersion::new(7, 0, 1), QueueKind::ComputeAql), 0);
    }

    /// MI300X-like node (gfx942: 304 CUs over 8 XCCs, 4 SIMDs per CU).
    fn mi300x() -> QueueNodeFacts {
        QueueNodeFacts {
            gfx: GfxVersion::new(9, 4, 2),
            simd_count: 1216,
            simd_per_cu: 4,
            num_xcc: 8,
            array_count: 32,
            simd_arrays_per_engine: 1,
            lds_size_in_kb: 64,
            max_waves_per_simd: 8,
            cwsr_size: 0,
            ctl_stack_size: 0,
        }
    }

    #[test]
    fn context_save_fallback_formula() {
        let s = context_save_sizes(&mi300x()).unwrap().unwrap();
        // cu = 38 per XCC; waves = min(38*40, 32/1/1*512) = 1520.
        let waves = 1520u64;
        let ctl = (40 + waves * 8 + 8).next_multiple_of(4096);
        let wg = 38 * (0x80000 + 0x4000 + 0x10000 + 0x1000);
        assert_eq!(u64::from(s.ctl_stack_size), ctl);
        assert_eq!(u64::from(s.ctx_save_restore_size), ctl + (wg as u64).next_multiple_of(4096));
        assert_eq!(u64::from(s.debug_memory_size), (waves * 32).next_multiple_of(64));
        assert_eq!(s.num_xcc, 8);
        assert_eq!(s.total_size, (s.ctx_save_restore_size + s.debug_memory_size) * 8);
        assert_eq!(s.alloc_size() % 4096, 0);

        // Kernel-provided sizes win, each independently.
        let k = QueueNodeFacts { cwsr_size: 0x12_3000, ctl_stack_size: 0x5000, ..mi300x() };
        let s2 = context_save_sizes(&k).unwrap().unwrap();
        assert_eq!((s2.ctx_save_restore_size, s2.ctl_stack_size), (0x12_3000, 0x5000));
        assert_eq!(s2.debug_memory_size, s.debug_memory_size);

        // gfx10 caps the control stack; gfx11 uses 32 waves/CU and 12 bytes per wave.
        let navi = QueueNodeFacts {
            gfx: GfxVersion::new(10, 3, 0),
            simd_count: 160,
            simd_per_cu: 2,
            num_xcc: 1,
            array_count: 8,
            simd_arrays_per_engine: 2,
            lds_size_in_kb: 64,
            ..Default::default()
        };
        let s3 = context_save_sizes(&navi).unwrap().unwrap();
        assert_eq!(
            s3.ctl_stack_size,
            (40 + 80 * 32 * 12 + 8u32).next_multiple_of(4096).min(0x7000)
        );
        let rdna3 = QueueNodeFacts { gfx: GfxVersion::new(11, 0, 0), ..navi };
        let s4 = context_save_sizes(&rdna3).unwrap().unwrap();
        assert_eq!(s4.ctl_stack_size, (40 + 80 * 32 * 12 + 8u32).next_multiple_of(4096));
        assert_eq!(
            s4.ctx_save_restore_size - s4.ctl_stack_size,
            (80 * (0x60000 + 0x4000 + 0x10000 + 0x1000u32)).next_multiple_of(4096)
        );

        // No CWSR before Carrizo or without SIMDs; incomplete facts are errors.
        assert_eq!(
            context_save_sizes(&QueueNodeFacts { gfx: GfxVersion::new(8, 0, 0), ..mi300x() }),
            Ok(None)
        );
        assert_eq!(context_save_sizes(&QueueNodeFacts { simd_count: 0, ..mi300x() }), Ok(None));
        assert_eq!(
            context_save_sizes(&QueueNodeFacts { simd_arrays_per_engine: 0, ..mi300x() }),
            Err(QueueParamError::MissingNodeFact)
        );
        assert_eq!(
            context_save_sizes(&QueueNodeFacts { gfx: GfxVersion::new(13, 0, 0), ..navi }),
            Err(QueueParamError::UnsupportedGfx)
        );
    }

    /// Values a garbled tree can give: each is an error, never a wrapped size.
    #[test]
    fn context_save_sizes_of_a_garbled_tree() {
        // A huge LDS: each CU's save area times the CUs exceeds 32 bits.
        let lds = QueueNodeFacts { lds_size_in_kb: u32::MAX, ..mi300x() };
        assert_eq!(context_save_sizes(&lds), Err(QueueParamError::Overflow));
        // gfx12.5 sizes its waves (and hardware registers) by `max_waves_per_simd`.
        let gfx1250 =
            QueueNodeFacts { gfx: GfxVersion::new(12, 5, 0), max_waves_per_simd: 16, ..mi300x() };
        assert!(matches!(context_save_sizes(&gfx1250), Ok(Some(_))));
        for waves in [u32::MAX, 1 << 24] {
            let w = QueueNodeFacts { max_waves_per_simd: waves, ..gfx1250 };
            assert_eq!(context_save_sizes(&w), Err(QueueParamError::Overflow), "{waves}");
        }
        // Every factor at its maximum overflows 64 bits on the way, not only 32.
        let all = QueueNodeFacts {
            gfx: GfxVersion::new(12, 5, 0),
            simd_count: u32::MAX,
            simd_per_cu: 1,
            num_xcc: 1,
            array_count: u32::MAX,
            simd_arrays_per_engine: 1,
            lds_size_in_kb: u32::MAX,
            max_waves_per_simd: u32::MAX,
            cwsr_size: 0,
            ctl_stack_size: 0,
        };
        assert_eq!(context_save_sizes(&all), Err(QueueParamError::Overflow));
        assert_eq!(
            context_save_sizes(&QueueNodeFacts { gfx: GfxVersion::new(9, 0, 0), ..all }),
            Err(QueueParamError::Overflow)
        );
        // XCCs multiply the total.
        let xcc = QueueNodeFacts { num_xcc: u32::MAX, simd_count: u32::MAX, ..mi300x() };
        assert_eq!(context_save_sizes(&xcc), Err(QueueParamError::Overflow));
        // A control stack larger than the save area the kernel gives.
        let k = QueueNodeFacts { cwsr_size: 0x1000, ctl_stack_size: 0x5000, ..mi300x() };
        assert_eq!(context_save_sizes(&k), Err(QueueParamError::InconsistentNodeFacts));
        assert_eq!(
            QueueParamError::InconsistentNodeFacts.kind(),
            crate::error::ErrorKind::Malformed
        );
    }

    #[test]
    fn facts_from_properties() {
        use crate::topology::NodeKey;
        let mut p = NodeProperties::EMPTY;
        for (k, v) in [
            (NodeKey::SimdCount, 1216),
            (NodeKey::SimdPerCu, 4),
            (NodeKey::NumXcc, 8),
            (NodeKey::ArrayCount, 32),
            (NodeKey::SimdArraysPerEngine, 1),
            (NodeKey::LdsSizeInKb, 64),
            (NodeKey::MaxWavesPerSimd, 8),
        ] {
            p.set(k, v).unwrap();
        }
        assert_eq!(QueueNodeFacts::from_properties(GfxVersion::new(9, 4, 2), &p), mi300x());
        let none =
            QueueNodeFacts::from_properties(GfxVersion::new(9, 4, 2), &NodeProperties::EMPTY);
        assert_eq!(none, QueueNodeFacts { gfx: GfxVersion::new(9, 4, 2), ..Default::default() });
    }

    #[test]
    fn context_save_headers() {
        let s = ContextSaveSizes {
            ctl_stack_size: 0x3000,
            ctx_save_restore_size: 0x10000,
            debug_memory_size: 0x800,
            num_xcc: 2,
            total_size: 2 * 0x10800,
        };
        let h = ContextSaveAreaHeader::for_xcc(&s, 1, 77, 0xABCD_0000);
        assert_eq!(h.debug_offset, 0x10000);
        assert_eq!(h.debug_size, 0x1000);
        let b = h.to_bytes();
        assert_eq!(&b[16..20], &0x10000u32.to_le_bytes());
        assert_eq!(&b[20..24], &0x1000u32.to_le_bytes());
        assert_eq!(&b[24..32], &0xABCD_0000u64.to_le_bytes());
        assert_eq!(&b[32..36], &77u32.to_le_bytes());
        let mem = TestMem::new(s.alloc_size() as usize + 4096);
        write_context_save_headers(&mem, 4096, &s, 77, 0xABCD_0000).unwrap();
        let mut got = [0u8; 40];
        mem.read(4096 + 0x10000, &mut got).unwrap();
        assert_eq!(got, b);
        mem.read(4096, &mut got).unwrap();
        assert_eq!(&got[16..20], &0x20000u32.to_le_bytes());
        assert_eq!(write_context_save_headers(&mem, 0x10000, &s, 0, 0), Err(Errno::EFAULT));
    }
}
