//! ROCr's `amd_queue_t` (`amd_hsa_queue.h`): the queue descriptor beside an AQL ring that the
//! packet processor reads — the indices, and for kernel dispatches the apertures and the
//! scratch setup — and what a runtime writes into it (`AqlQueue::AqlQueue`,
//! `AqlQueue::InitScratchSRD`).
//!
//! The packet processor knows only the queue's read-pointer address; it finds the descriptor
//! `read_dispatch_id_field_base_byte_offset` bytes before it.
//!
//! | offset | field | size |
//! |---|---|---|
//! | 0 | `hsa_queue.type` | 4 |
//! | 4 | `hsa_queue.features` | 4 |
//! | 8 | `hsa_queue.base_address` | 8 |
//! | 16 | `hsa_queue.doorbell_signal` | 8 |
//! | 24 | `hsa_queue.size` (packets) | 4 |
//! | 32 | `hsa_queue.id` | 8 |
//! | 40 | `caps` | 4 |
//! | 56 | `write_dispatch_id` | 8 |
//! | 64 | `group_segment_aperture_base_hi` | 4 |
//! | 68 | `private_segment_aperture_base_hi` | 4 |
//! | 72 | `max_cu_id` | 4 |
//! | 76 | `max_wave_id` | 4 |
//! | 128 | `read_dispatch_id` | 8 |
//! | 136 | `read_dispatch_id_field_base_byte_offset` | 4 |
//! | 140 | `compute_tmpring_size` | 4 |
//! | 144 | `scratch_resource_descriptor[4]` | 16 |
//! | 160 | `scratch_backing_memory_location` | 8 |
//! | 168 | `scratch_backing_memory_byte_size` | 8 |
//! | 176 | `scratch_wave64_lane_byte_size` | 4 |
//! | 180 | `queue_properties` | 4 |
//!
//! (256 bytes, 64-byte aligned; the `amd_queue_v2_t` fields after 184 — alternate scratch,
//! scratch reclaim — are read only by firmware told so through `caps`, which stays 0 here.)
#![deny(clippy::arithmetic_side_effects)]

use crate::error::Errno;
use crate::platform::SharedMemory;

use super::scratch::{ScratchFacts, ScratchLayout};

pub use super::ring::{
    AMD_QUEUE_BASE_ADDRESS_OFFSET, AMD_QUEUE_DOORBELL_SIGNAL_OFFSET, AMD_QUEUE_FEATURES_OFFSET,
    AMD_QUEUE_ID_OFFSET, AMD_QUEUE_READ_DISPATCH_ID_OFFSET, AMD_QUEUE_SIZE, AMD_QUEUE_SIZE_OFFSET,
    AMD_QUEUE_TYPE_OFFSET, AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET,
};

/// `caps` (u32).
pub const CAPS_OFFSET: usize = 40;
/// `group_segment_aperture_base_hi` (u32).
pub const GROUP_SEGMENT_APERTURE_BASE_HI_OFFSET: usize = 64;
/// `private_segment_aperture_base_hi` (u32).
pub const PRIVATE_SEGMENT_APERTURE_BASE_HI_OFFSET: usize = 68;
/// `max_cu_id` (u32).
pub const MAX_CU_ID_OFFSET: usize = 72;
/// `max_wave_id` (u32).
pub const MAX_WAVE_ID_OFFSET: usize = 76;
/// `read_dispatch_id_field_base_byte_offset` (u32).
pub const READ_DISPATCH_ID_FIELD_BASE_BYTE_OFFSET_OFFSET: usize = 136;
/// `compute_tmpring_size` (u32).
pub const COMPUTE_TMPRING_SIZE_OFFSET: usize = 140;
/// `scratch_resource_descriptor[4]` (4 × u32).
pub const SCRATCH_RESOURCE_DESCRIPTOR_OFFSET: usize = 144;
/// `scratch_backing_memory_location` (u64).
pub const SCRATCH_BACKING_MEMORY_LOCATION_OFFSET: usize = 160;
/// `scratch_backing_memory_byte_size` (u64).
pub const SCRATCH_BACKING_MEMORY_BYTE_SIZE_OFFSET: usize = 168;
/// `scratch_wave64_lane_byte_size` (u32).
pub const SCRATCH_WAVE64_LANE_BYTE_SIZE_OFFSET: usize = 176;
/// `queue_properties` (u32).
pub const QUEUE_PROPERTIES_OFFSET: usize = 180;

/// `HSA_QUEUE_TYPE_MULTI`: any number of producers.
pub const HSA_QUEUE_TYPE_MULTI: u32 = 0;
/// `HSA_QUEUE_TYPE_SINGLE`: one producer.
pub const HSA_QUEUE_TYPE_SINGLE: u32 = 1;
/// `HSA_QUEUE_FEATURE_KERNEL_DISPATCH`.
pub const HSA_QUEUE_FEATURE_KERNEL_DISPATCH: u32 = 1;
/// `AMD_QUEUE_PROPERTIES_IS_PTR64`: a 64-bit process (large model).
pub const AMD_QUEUE_PROPERTIES_IS_PTR64: u32 = 1 << 1;

/// What a runtime writes into a new queue's descriptor (ROCr's `AqlQueue` constructor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QueueDescriptor {
    /// `hsa_queue.type`: [`HSA_QUEUE_TYPE_MULTI`] or [`HSA_QUEUE_TYPE_SINGLE`].
    pub queue_type: u32,
    /// Ring address.
    pub ring_address: u64,
    /// Ring size in packets.
    pub packets: u32,
    /// `hsa_queue.id`: unique among the process's queues.
    pub id: u64,
    /// Compute units of the agent (`max_cu_id` is one less).
    pub cu_count: u32,
    /// Waves a CU holds (`max_waves_per_simd × simd_per_cu`; `max_wave_id` is one less).
    pub waves_per_cu: u32,
    /// High 32 bits of the LDS (group) aperture base.
    pub group_aperture_hi: u32,
    /// High 32 bits of the scratch (private) aperture base.
    pub private_aperture_hi: u32,
}

/// A little-endian `u32` at `offset`.
fn put32<M: SharedMemory>(m: &M, offset: usize, value: u32) -> Result<(), Errno> {
    m.write(offset, &value.to_le_bytes())
}

/// A little-endian `u64` at `offset`.
fn put64<M: SharedMemory>(m: &M, offset: usize, value: u64) -> Result<(), Errno> {
    m.write(offset, &value.to_le_bytes())
}

impl QueueDescriptor {
    /// Writes the descriptor's fields into `m` (the `amd_queue_t` at offset 0; `caps` 0: no
    /// scratch reclaim; the indices and the scratch fields are left as they are). `doorbell_signal` is 0: this crate
    /// rings doorbells directly, not through a doorbell signal.
    ///
    /// # Errors
    /// The mapping's error when it is shorter than [`AMD_QUEUE_SIZE`].
    pub fn write<M: SharedMemory>(&self, m: &M) -> Result<(), Errno> {
        put32(m, AMD_QUEUE_TYPE_OFFSET, self.queue_type)?;
        put32(m, CAPS_OFFSET, 0)?;
        put32(m, AMD_QUEUE_FEATURES_OFFSET, HSA_QUEUE_FEATURE_KERNEL_DISPATCH)?;
        put64(m, AMD_QUEUE_BASE_ADDRESS_OFFSET, self.ring_address)?;
        put64(m, AMD_QUEUE_DOORBELL_SIGNAL_OFFSET, 0)?;
        put32(m, AMD_QUEUE_SIZE_OFFSET, self.packets)?;
        put64(m, AMD_QUEUE_ID_OFFSET, self.id)?;
        put32(m, GROUP_SEGMENT_APERTURE_BASE_HI_OFFSET, self.group_aperture_hi)?;
        put32(m, PRIVATE_SEGMENT_APERTURE_BASE_HI_OFFSET, self.private_aperture_hi)?;
        put32(m, MAX_CU_ID_OFFSET, self.cu_count.saturating_sub(1))?;
        put32(m, MAX_WAVE_ID_OFFSET, self.waves_per_cu.saturating_sub(1))?;
        let read = u32::try_from(AMD_QUEUE_READ_DISPATCH_ID_OFFSET).unwrap_or(0);
        put32(m, READ_DISPATCH_ID_FIELD_BASE_BYTE_OFFSET_OFFSET, read)?;
        put32(m, QUEUE_PROPERTIES_OFFSET, AMD_QUEUE_PROPERTIES_IS_PTR64)
    }
}

/// Writes the scratch fields of the descriptor in `m`: `layout` at `base` (or no scratch).
///
/// The packet processor reads these fields when it launches a dispatch, so they change only
/// while the queue is idle (before it runs, or with every earlier packet completed, as ROCr
/// does while the processor waits on the queue's inactive signal).
///
/// # Errors
/// The mapping's error when it is shorter than [`AMD_QUEUE_SIZE`].
pub fn write_scratch<M: SharedMemory>(
    m: &M,
    facts: &ScratchFacts,
    scratch: Option<(&ScratchLayout, u64)>,
) -> Result<(), Errno> {
    let Some((layout, base)) = scratch else {
        put32(m, COMPUTE_TMPRING_SIZE_OFFSET, 0)?;
        put32(m, SCRATCH_WAVE64_LANE_BYTE_SIZE_OFFSET, 0)?;
        put64(m, SCRATCH_BACKING_MEMORY_BYTE_SIZE_OFFSET, 0)?;
        put64(m, SCRATCH_BACKING_MEMORY_LOCATION_OFFSET, 0)?;
        for k in 0..4usize {
            put32(m, SCRATCH_RESOURCE_DESCRIPTOR_OFFSET.saturating_add(k.saturating_mul(4)), 0)?;
        }
        return Ok(());
    };
    let srd = layout.resource_descriptor(facts, base);
    put64(m, SCRATCH_BACKING_MEMORY_LOCATION_OFFSET, base)?;
    for (k, word) in srd.iter().enumerate() {
        put32(m, SCRATCH_RESOURCE_DESCRIPTOR_OFFSET.saturating_add(k.saturating_mul(4)), *word)?;
    }
    put64(m, SCRATCH_BACKING_MEMORY_BYTE_SIZE_OFFSET, layout.size)?;
    put32(m, SCRATCH_WAVE64_LANE_BYTE_SIZE_OFFSET, layout.lane_bytes)?;
    put32(m, COMPUTE_TMPRING_SIZE_OFFSET, layout.tmpring_size(facts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::scratch::ScratchFacts;
    use crate::queue::test_mem::TestMem;
    use crate::topology::GfxVersion;

    /// The offsets follow from `amd_queue_v2_t`'s declaration order and field sizes (every
    /// field naturally aligned, so no padding): (field, size, this module's offset).
    #[test]
    fn offsets_follow_the_declaration() {
        let fields: &[(&str, usize, Option<usize>)] = &[
            ("hsa_queue.type", 4, Some(AMD_QUEUE_TYPE_OFFSET)),
            ("hsa_queue.features", 4, Some(AMD_QUEUE_FEATURES_OFFSET)),
            ("hsa_queue.base_address", 8, Some(AMD_QUEUE_BASE_ADDRESS_OFFSET)),
            ("hsa_queue.doorbell_signal", 8, Some(AMD_QUEUE_DOORBELL_SIGNAL_OFFSET)),
            ("hsa_queue.size", 4, Some(AMD_QUEUE_SIZE_OFFSET)),
            ("hsa_queue.reserved1", 4, None),
            ("hsa_queue.id", 8, Some(AMD_QUEUE_ID_OFFSET)),
            ("caps", 4, Some(CAPS_OFFSET)),
            ("reserved1[3]", 12, None),
            ("write_dispatch_id", 8, Some(AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET)),
            ("group_segment_aperture_base_hi", 4, Some(GROUP_SEGMENT_APERTURE_BASE_HI_OFFSET)),
            ("private_segment_aperture_base_hi", 4, Some(PRIVATE_SEGMENT_APERTURE_BASE_HI_OFFSET)),
            ("max_cu_id", 4, Some(MAX_CU_ID_OFFSET)),
            ("max_wave_id", 4, Some(MAX_WAVE_ID_OFFSET)),
            ("max_legacy_doorbell_dispatch_id_plus_1", 8, None),
            ("legacy_doorbell_lock", 4, None),
            ("reserved2[9]", 36, None),
            ("read_dispatch_id", 8, Some(AMD_QUEUE_READ_DISPATCH_ID_OFFSET)),
            (
                "read_dispatch_id_field_base_byte_offset",
                4,
                Some(READ_DISPATCH_ID_FIELD_BASE_BYTE_OFFSET_OFFSET),
            ),
            ("compute_tmpring_size", 4, Some(COMPUTE_TMPRING_SIZE_OFFSET)),
            ("scratch_resource_descriptor[4]", 16, Some(SCRATCH_RESOURCE_DESCRIPTOR_OFFSET)),
            ("scratch_backing_memory_location", 8, Some(SCRATCH_BACKING_MEMORY_LOCATION_OFFSET)),
            ("scratch_backing_memory_byte_size", 8, Some(SCRATCH_BACKING_MEMORY_BYTE_SIZE_OFFSET)),
            ("scratch_wave64_lane_byte_size", 4, Some(SCRATCH_WAVE64_LANE_BYTE_SIZE_OFFSET)),
            ("queue_properties", 4, Some(QUEUE_PROPERTIES_OFFSET)),
        ];
        let mut at = 0;
        for (name, size, offset) in fields {
            // Arrays are of u32s.
            let align = if name.contains('[') { 4 } else { *size };
            assert_eq!(at % align, 0, "{name} is naturally aligned");
            if let Some(o) = offset {
                assert_eq!(*o, at, "{name}");
            }
            at += size;
        }
        assert_eq!(at, 184);
    }

    #[test]
    fn descriptor_and_scratch_fields() {
        let m = TestMem::new(AMD_QUEUE_SIZE);
        let d = QueueDescriptor {
            queue_type: HSA_QUEUE_TYPE_MULTI,
            ring_address: 0x7000_0000,
            packets: 256,
            id: 9,
            cu_count: 20,
            waves_per_cu: 32,
            group_aperture_hi: 0x1000,
            private_aperture_hi: 0x2000,
        };
        d.write(&m).unwrap();
        let u32_at = |o: usize| {
            let mut b = [0; 4];
            m.read(o, &mut b).unwrap();
            u32::from_le_bytes(b)
        };
        let u64_at = |o: usize| {
            let mut b = [0; 8];
            m.read(o, &mut b).unwrap();
            u64::from_le_bytes(b)
        };
        assert_eq!(u32_at(AMD_QUEUE_FEATURES_OFFSET), HSA_QUEUE_FEATURE_KERNEL_DISPATCH);
        assert_eq!(u64_at(AMD_QUEUE_BASE_ADDRESS_OFFSET), 0x7000_0000);
        assert_eq!(u32_at(AMD_QUEUE_SIZE_OFFSET), 256);
        assert_eq!((u32_at(MAX_CU_ID_OFFSET), u32_at(MAX_WAVE_ID_OFFSET)), (19, 31));
        assert_eq!(u32_at(READ_DISPATCH_ID_FIELD_BASE_BYTE_OFFSET_OFFSET), 128);
        assert_eq!(u32_at(QUEUE_PROPERTIES_OFFSET), AMD_QUEUE_PROPERTIES_IS_PTR64);
        assert_eq!(u32_at(PRIVATE_SEGMENT_APERTURE_BASE_HI_OFFSET), 0x2000);

        let facts = ScratchFacts {
            gfx: GfxVersion::new(9, 0, 0),
            cu_count: 4,
            shader_engines: 4,
            slots_per_cu: 32,
            xcc_count: 1,
        };
        let layout = ScratchLayout::for_private_segment(&facts, 100).unwrap().unwrap();
        write_scratch(&m, &facts, Some((&layout, 0x5_0000_0000))).unwrap();
        assert_eq!(u64_at(SCRATCH_BACKING_MEMORY_LOCATION_OFFSET), 0x5_0000_0000);
        assert_eq!(u64_at(SCRATCH_BACKING_MEMORY_BYTE_SIZE_OFFSET), 112 * 64 * 128);
        assert_eq!(u32_at(SCRATCH_WAVE64_LANE_BYTE_SIZE_OFFSET), 112);
        assert_eq!(u32_at(COMPUTE_TMPRING_SIZE_OFFSET), 128 | 7 << 12);
        assert_eq!(u32_at(SCRATCH_RESOURCE_DESCRIPTOR_OFFSET + 4), 5 | 1 << 31);
        write_scratch(&m, &facts, None).unwrap();
        assert_eq!(u64_at(SCRATCH_BACKING_MEMORY_LOCATION_OFFSET), 0);
        assert_eq!(u32_at(COMPUTE_TMPRING_SIZE_OFFSET), 0);
        assert_eq!(u32_at(SCRATCH_RESOURCE_DESCRIPTOR_OFFSET + 12), 0);
    }
}
