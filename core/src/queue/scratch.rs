//! Private (scratch) memory of an AQL queue, as ROCr sets it up (`AqlQueue::InitScratchSRD`,
//! `GpuAgent::AcquireQueueMainScratch`, `AqlQueue::HandleInsufficientScratch`): how much memory
//! a queue needs for a private segment size, and what the packet processor reads from the
//! queue's `amd_queue_t` to hand it to waves — `COMPUTE_TMPRING_SIZE` and the scratch buffer
//! resource descriptor (V#), per gfx family.
//!
//! # Sizing
//! - Per work-item: the private segment size rounded up to `alignment / 64` bytes, where the
//!   alignment of a wave's slot is 1 KiB before gfx11 and 256 bytes from gfx11 on. Sizes are
//!   for 64-lane waves (a wave32 kernel on gfx10+ uses half a slot).
//! - Slots (waves holding scratch at once): the CU count rounded up to a multiple of the shader
//!   engines (asymmetric harvesting), times `max_slots_scratch_cu` (the topology's scratch
//!   slots per CU; when a tree lacks it, `max_waves_per_simd × simd_per_cu`, every wave a CU
//!   can hold).
//! - Memory: per work-item bytes × 64 × slots.
//!
//! # Limits (what "beyond the agent's limit" means)
//! - a private segment above 262,128 bytes per work-item (ROCr's limit);
//! - a wave's slot that `COMPUTE_TMPRING_SIZE.WAVESIZE` cannot express (13 bits of 1 KiB before
//!   gfx11, so 131,056 bytes per work-item; 15 bits of 256 bytes on gfx11, 18 on gfx12);
//! - more than 4 GiB − 1 per XCC (the scratch aperture, and the descriptor's 32-bit
//!   `NUM_RECORDS`).
//!
//! ROCr goes further when memory runs short (fewer waves, "use once" scratch, an alternate
//! scratch for small dispatches); this crate sizes for every slot or refuses.
//!
//! # Encodings (ROCr's `registers.h`)
//! - `COMPUTE_TMPRING_SIZE`: `WAVES` bits 0–11, `WAVESIZE` from bit 12 (13 bits before gfx11,
//!   15 on gfx11, 18 on gfx12) in slot-alignment units. Before gfx11 `WAVES` counts the waves of
//!   one XCC (memory per XCC / slot size, at most every CU's slots); from gfx11 it counts per
//!   shader engine.
//! - V# word 0: base address bits 0–31. Word 1: base bits 32–47, `STRIDE` 0, `SWIZZLE_ENABLE`
//!   (bit 31 before gfx11, the 2-bit field at bit 30 = 1 from gfx11). Word 2: `NUM_RECORDS` =
//!   bytes per XCC. Word 3: `DST_SEL_XYZW` = X, Y, Z, W, `ADD_TID_ENABLE`, and per family:
//!   gfx9 `NUM_FORMAT` UINT, `DATA_FORMAT` 32, `ELEMENT_SIZE` 4 bytes, `INDEX_STRIDE` 64;
//!   gfx10 `FORMAT` 32_UINT, `RESOURCE_LEVEL` 1, `OOB_SELECT` 2 (no bounds check when
//!   swizzled); gfx11/gfx12 `FORMAT` 32_UINT, `OOB_SELECT` 2 (the packet processor fills
//!   `INDEX_STRIDE` from gfx10 on). `ATC` stays 0 (discrete GPUs).
#![deny(clippy::arithmetic_side_effects)]

use core::fmt;

use crate::error::{Error, ErrorKind};
use crate::topology::{GfxVersion, Node};

/// ROCr's largest private segment per work-item, in bytes.
pub const MAX_PRIVATE_SEGMENT_SIZE: u32 = 262_128;
/// Lanes a scratch slot is sized for.
pub const SCRATCH_LANES: u32 = 64;
/// The most bytes of scratch one XCC addresses (its 32-bit `NUM_RECORDS`).
pub const MAX_SCRATCH_PER_XCC: u64 = (1 << 32) - 1;

/// What a GPU node tells about its scratch resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ScratchFacts {
    /// The gfx version (effective: ROCr sizes for the ISA it runs).
    pub gfx: GfxVersion,
    /// Compute units (`simd_count / simd_per_cu`).
    pub cu_count: u32,
    /// Shader engines (`array_count / simd_arrays_per_engine`; 1 when unknown).
    pub shader_engines: u32,
    /// Scratch slots (waves) per CU.
    pub slots_per_cu: u32,
    /// XCCs (partitions of the compute engine, 1 on most GPUs).
    pub xcc_count: u32,
}

impl ScratchFacts {
    /// The facts of a GPU node, or `None` when the node lacks the gfx version, the CU count or
    /// any way to tell its scratch slots.
    #[must_use]
    pub fn from_node(node: &Node) -> Option<Self> {
        let p = node.properties();
        let cu_count = node.cu_count().filter(|c| *c > 0)?;
        let slots_per_cu = match p.max_slots_scratch_cu() {
            Some(s) if s > 0 => s,
            _ => p.max_waves_per_simd()?.checked_mul(p.simd_per_cu()?).filter(|s| *s > 0)?,
        };
        Some(Self {
            gfx: node.effective_gfx()?,
            cu_count,
            shader_engines: node.shader_banks().filter(|b| *b > 0).unwrap_or(1),
            slots_per_cu,
            xcc_count: node.xcc_count().filter(|x| *x > 0).unwrap_or(1),
        })
    }

    /// Bytes of one scratch slot's alignment unit (`WAVESIZE` counts these).
    #[must_use]
    pub const fn slot_unit(&self) -> u32 {
        if self.gfx.major >= 11 { 256 } else { 1024 }
    }

    /// The largest `COMPUTE_TMPRING_SIZE.WAVESIZE` (13 bits before gfx11, 15 on gfx11, 18
    /// from gfx12).
    const fn wavesize_mask(&self) -> u64 {
        match self.gfx.major {
            0..=10 => 0x1FFF,
            11 => 0x7FFF,
            _ => 0x3_FFFF,
        }
    }

    /// Waves holding scratch at once on the whole device.
    #[must_use]
    pub fn device_slots(&self) -> Option<u32> {
        self.cu_count
            .checked_next_multiple_of(self.shader_engines.max(1))?
            .checked_mul(self.slots_per_cu)
    }
}

/// The scratch a queue holds for kernels of up to `lane_bytes` private bytes per work-item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ScratchLayout {
    /// Private bytes per work-item (the private segment size, aligned): `amd_queue_t`'s
    /// `scratch_wave64_lane_byte_size`.
    pub lane_bytes: u32,
    /// Bytes of one wave's slot (`lane_bytes × 64`, a whole number of slot units).
    pub wave_bytes: u64,
    /// Slots on the device.
    pub slots: u32,
    /// Bytes of memory: `wave_bytes × slots`.
    pub size: u64,
}

/// Why a queue cannot have the scratch a kernel asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ScratchError {
    /// The private segment exceeds [`MAX_PRIVATE_SEGMENT_SIZE`].
    PrivateSegmentTooLarge {
        /// Bytes per work-item asked for.
        requested: u32,
        /// The limit.
        max: u32,
    },
    /// A wave's slot is larger than `COMPUTE_TMPRING_SIZE` can express on this gfx version.
    WaveTooLarge {
        /// Bytes per work-item asked for.
        requested: u32,
        /// The most this agent takes.
        max: u32,
    },
    /// The memory for every slot exceeds what the agent's scratch addresses.
    BeyondDevice {
        /// Bytes needed.
        bytes: u64,
        /// The agent's limit.
        max: u64,
    },
    /// The topology does not say how many scratch slots the agent has.
    UnknownSlots,
}

impl fmt::Display for ScratchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::PrivateSegmentTooLarge { requested, max } => write!(
                f,
                "private segment of {requested} bytes per work-item exceeds the limit of {max}"
            ),
            Self::WaveTooLarge { requested, max } => write!(
                f,
                "private segment of {requested} bytes per work-item exceeds this agent's limit \
                 of {max} (COMPUTE_TMPRING_SIZE.WAVESIZE)"
            ),
            Self::BeyondDevice { bytes, max } => write!(
                f,
                "scratch for every wave slot needs {bytes} bytes, beyond the agent's {max}"
            ),
            Self::UnknownSlots => {
                f.write_str("the topology does not give the agent's scratch slots per CU")
            }
        }
    }
}

impl Error for ScratchError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::UnknownSlots => ErrorKind::NotSupported,
            _ => ErrorKind::OutOfResources,
        }
    }
}

impl core::error::Error for ScratchError {}

impl ScratchLayout {
    /// The scratch for kernels of up to `private_segment_size` bytes per work-item on an agent
    /// with `facts` (`None` for a size of 0: no scratch).
    ///
    /// # Errors
    /// [`ScratchError::PrivateSegmentTooLarge`], [`ScratchError::WaveTooLarge`],
    /// [`ScratchError::BeyondDevice`], [`ScratchError::UnknownSlots`].
    pub fn for_private_segment(
        facts: &ScratchFacts,
        private_segment_size: u32,
    ) -> Result<Option<Self>, ScratchError> {
        if private_segment_size == 0 {
            return Ok(None);
        }
        let requested = private_segment_size;
        if requested > MAX_PRIVATE_SEGMENT_SIZE {
            return Err(ScratchError::PrivateSegmentTooLarge {
                requested,
                max: MAX_PRIVATE_SEGMENT_SIZE,
            });
        }
        let unit = facts.slot_unit();
        // The unit is a multiple of the lanes: lanes share a slot unit evenly.
        let lane_align = unit.checked_div(SCRATCH_LANES).unwrap_or(1).max(1);
        let max_units = facts.wavesize_mask();
        let max_lane = max_units
            .saturating_mul(u64::from(unit))
            .checked_div(u64::from(SCRATCH_LANES))
            .map_or(0, |m| m.saturating_sub(m.checked_rem(u64::from(lane_align)).unwrap_or(0)));
        let too_large = ScratchError::WaveTooLarge {
            requested,
            max: u32::try_from(max_lane).unwrap_or(u32::MAX),
        };
        let lane_bytes = requested.checked_next_multiple_of(lane_align).ok_or(too_large)?;
        if u64::from(lane_bytes) > max_lane {
            return Err(too_large);
        }
        let wave_bytes = u64::from(lane_bytes).saturating_mul(u64::from(SCRATCH_LANES));
        let slots = facts.device_slots().filter(|s| *s > 0).ok_or(ScratchError::UnknownSlots)?;
        let size = wave_bytes.saturating_mul(u64::from(slots));
        let max = MAX_SCRATCH_PER_XCC.saturating_mul(u64::from(facts.xcc_count.max(1)));
        if size > max {
            return Err(ScratchError::BeyondDevice { bytes: size, max });
        }
        Ok(Some(Self { lane_bytes, wave_bytes, slots, size }))
    }

    /// `COMPUTE_TMPRING_SIZE` for this scratch on `facts`'s agent.
    #[must_use]
    pub fn tmpring_size(&self, facts: &ScratchFacts) -> u32 {
        let unit = u64::from(facts.slot_unit());
        let wavesize = self.wave_bytes.checked_div(unit).unwrap_or(0);
        let per_xcc = self.size.checked_div(u64::from(facts.xcc_count.max(1))).unwrap_or(0);
        let mut waves = per_xcc.checked_div(self.wave_bytes).unwrap_or(0);
        let cus = if facts.gfx.major >= 11 {
            waves = waves.checked_div(u64::from(facts.shader_engines.max(1))).unwrap_or(0);
            facts.cu_count.checked_div(facts.xcc_count.max(1)).unwrap_or(0)
        } else {
            facts.cu_count
        };
        let device_waves = u64::from(cus).saturating_mul(u64::from(facts.slots_per_cu));
        let waves = waves.min(device_waves).min(0xFFF);
        let wavesize = u32::try_from(wavesize.min(facts.wavesize_mask())).unwrap_or(0);
        let waves = u32::try_from(waves).unwrap_or(0);
        waves | wavesize.checked_shl(12).unwrap_or(0)
    }

    /// The scratch buffer resource descriptor for this scratch at `base` on `facts`'s agent.
    #[must_use]
    pub fn resource_descriptor(&self, facts: &ScratchFacts, base: u64) -> [u32; 4] {
        const DST_SEL_XYZW: u32 = 4 | 5 << 3 | 6 << 6 | 7 << 9;
        const ADD_TID_ENABLE: u32 = 1 << 23;
        const FORMAT_32_UINT: u32 = 0x14 << 12;
        const OOB_SELECT_NONE: u32 = 2 << 28;
        let word0 = (base & 0xFFFF_FFFF) as u32;
        let base_hi = ((base >> 32) & 0xFFFF) as u32;
        let word1 = match facts.gfx.major {
            0..=10 => base_hi | 1 << 31,
            _ => base_hi | 1 << 30,
        };
        let per_xcc = self.size.checked_div(u64::from(facts.xcc_count.max(1))).unwrap_or(0);
        let word2 = u32::try_from(per_xcc).unwrap_or(u32::MAX);
        let word3 = match facts.gfx.major {
            // NUM_FORMAT UINT, DATA_FORMAT 32, ELEMENT_SIZE 4 bytes, INDEX_STRIDE 64.
            0..=9 => DST_SEL_XYZW | 4 << 12 | 4 << 15 | 1 << 19 | 3 << 21 | ADD_TID_ENABLE,
            // RESOURCE_LEVEL 1.
            10 => DST_SEL_XYZW | FORMAT_32_UINT | ADD_TID_ENABLE | 1 << 24 | OOB_SELECT_NONE,
            _ => DST_SEL_XYZW | FORMAT_32_UINT | ADD_TID_ENABLE | OOB_SELECT_NONE,
        };
        [word0, word1, word2, word3]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An MI308X CPX partition (gfx942): 20 CUs, 4 shader engines, 32 slots per CU.
    const GFX942: ScratchFacts = ScratchFacts {
        gfx: GfxVersion::new(9, 4, 2),
        cu_count: 20,
        shader_engines: 4,
        slots_per_cu: 32,
        xcc_count: 1,
    };

    fn layout(f: &ScratchFacts, bytes: u32) -> ScratchLayout {
        ScratchLayout::for_private_segment(f, bytes).unwrap().unwrap()
    }

    #[test]
    fn no_private_segment_needs_no_scratch() {
        assert_eq!(ScratchLayout::for_private_segment(&GFX942, 0), Ok(None));
    }

    #[test]
    fn gfx9_sizes_in_kib_slots() {
        // 260 bytes per work-item round to 272 (16-byte steps: a 1 KiB slot unit / 64 lanes).
        let l = layout(&GFX942, 260);
        assert_eq!((l.lane_bytes, l.wave_bytes, l.slots), (272, 17_408, 640));
        assert_eq!(l.size, 17_408 * 640);
        // WAVES 640 (20 CUs x 32), WAVESIZE 17 KiB.
        assert_eq!(l.tmpring_size(&GFX942), 640 | 17 << 12);
        let base = 0x7F12_3456_7000;
        assert_eq!(
            l.resource_descriptor(&GFX942, base),
            [0x3456_7000, 0x7F12 | 1 << 31, 17_408 * 640, 0x00EA_4FAC]
        );
    }

    #[test]
    fn cu_counts_round_up_to_whole_shader_engines() {
        // 30 CUs on 4 engines: slots for 32 CUs.
        let f = ScratchFacts { cu_count: 30, ..GFX942 };
        assert_eq!(layout(&f, 16).slots, 32 * 32);
        // WAVES is limited to the CUs that exist.
        assert_eq!(layout(&f, 16).tmpring_size(&f) & 0xFFF, 30 * 32);
    }

    #[test]
    fn multi_xcc_agents_split_the_memory() {
        // MI300X SPX: 304 CUs over 8 XCCs, 32 engines.
        let f = ScratchFacts { cu_count: 304, shader_engines: 32, xcc_count: 8, ..GFX942 };
        let l = layout(&f, 1024);
        assert_eq!(l.slots, 320 * 32);
        // NUM_RECORDS and WAVES are per XCC.
        assert_eq!(l.resource_descriptor(&f, 0)[2] as u64, l.size / 8);
        assert_eq!(l.tmpring_size(&f) & 0xFFF, 320 * 32 / 8);
    }

    #[test]
    fn gfx10_and_later_descriptors() {
        let gfx1030 = ScratchFacts { gfx: GfxVersion::new(10, 3, 0), ..GFX942 };
        assert_eq!(layout(&gfx1030, 64).resource_descriptor(&gfx1030, 0)[3], 0x2181_4FAC);
        let gfx1100 = ScratchFacts { gfx: GfxVersion::new(11, 0, 0), ..GFX942 };
        let l = layout(&gfx1100, 6);
        // gfx11 slots are 256-byte units: 4 bytes per lane.
        assert_eq!((l.lane_bytes, l.wave_bytes), (8, 512));
        assert_eq!(l.resource_descriptor(&gfx1100, 1 << 40)[1], 0x100 | 1 << 30);
        assert_eq!(l.resource_descriptor(&gfx1100, 0)[3], 0x2081_4FAC);
        // WAVES counts per shader engine from gfx11 on: 640 slots / 4 engines.
        assert_eq!(l.tmpring_size(&gfx1100), 160 | 2 << 12);
        let gfx1201 = ScratchFacts { gfx: GfxVersion::new(12, 0, 1), ..GFX942 };
        assert_eq!(layout(&gfx1201, 6).resource_descriptor(&gfx1201, 0)[3], 0x2081_4FAC);
    }

    #[test]
    fn limits_are_typed_errors() {
        let r = ScratchLayout::for_private_segment(&GFX942, MAX_PRIVATE_SEGMENT_SIZE + 1);
        assert_eq!(
            r,
            Err(ScratchError::PrivateSegmentTooLarge {
                requested: MAX_PRIVATE_SEGMENT_SIZE + 1,
                max: MAX_PRIVATE_SEGMENT_SIZE
            })
        );
        // 13 bits of 1 KiB per 64-lane wave: 131,056 bytes per work-item on gfx9.
        let small = ScratchFacts { cu_count: 4, ..GFX942 };
        assert!(ScratchLayout::for_private_segment(&small, 131_056).is_ok());
        assert_eq!(
            ScratchLayout::for_private_segment(&small, 131_057),
            Err(ScratchError::WaveTooLarge { requested: 131_057, max: 131_056 })
        );
        // gfx11's 15-bit field of 256-byte units takes more.
        let gfx1100 = ScratchFacts { gfx: GfxVersion::new(11, 0, 0), ..small };
        assert!(ScratchLayout::for_private_segment(&gfx1100, 131_057).is_ok());
        // Every slot of a large GPU at a large size exceeds 4 GiB per XCC.
        let big = ScratchFacts { cu_count: 304, shader_engines: 32, xcc_count: 1, ..GFX942 };
        assert!(matches!(
            ScratchLayout::for_private_segment(&big, 131_056),
            Err(ScratchError::BeyondDevice { max: MAX_SCRATCH_PER_XCC, .. })
        ));
        let none = ScratchFacts { slots_per_cu: 0, ..GFX942 };
        assert_eq!(ScratchLayout::for_private_segment(&none, 4), Err(ScratchError::UnknownSlots));
    }
}
