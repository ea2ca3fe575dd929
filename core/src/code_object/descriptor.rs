//! The 64-byte AMDHSA kernel descriptor (code object v3 and later), decoded.
//!
//! Layout (AMDGPUUsage, "Kernel Descriptor"), little endian:
//!
//! | bytes | field |
//! |---|---|
//! | 0–3 | `GROUP_SEGMENT_FIXED_SIZE` |
//! | 4–7 | `PRIVATE_SEGMENT_FIXED_SIZE` |
//! | 8–11 | `KERNARG_SIZE` |
//! | 12–15 | reserved |
//! | 16–23 | `KERNEL_CODE_ENTRY_BYTE_OFFSET` (signed, from the descriptor's address) |
//! | 24–43 | reserved |
//! | 44–47 | `COMPUTE_PGM_RSRC3` (GFX90A+, GFX10+) |
//! | 48–51 | `COMPUTE_PGM_RSRC1` |
//! | 52–55 | `COMPUTE_PGM_RSRC2` |
//! | 56–57 | kernel code properties |
//! | 58–59 | `KERNARG_PRELOAD` (length in dwords: bits 0–6, offset in dwords: bits 7–15) |
//! | 60–63 | reserved |

use super::target::IsaFamily;

/// The size of a kernel descriptor.
pub const KERNEL_DESCRIPTOR_SIZE: usize = 64;

/// `width` bits of `raw` from bit `shift`.
const fn bits(raw: u32, shift: u32, width: u32) -> u32 {
    raw.wrapping_shr(shift) & (1u32.wrapping_shl(width).wrapping_sub(1))
}

const fn bit(raw: u32, shift: u32) -> bool {
    bits(raw, shift, 1) != 0
}

/// `COMPUTE_PGM_RSRC1`, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PgmRsrc1 {
    /// The raw register value.
    pub raw: u32,
    /// `GRANULATED_WORKITEM_VGPR_COUNT` (bits 0–5): VGPR blocks − 1 (the block size depends
    /// on the target and wave size).
    pub granulated_workitem_vgpr_count: u8,
    /// `GRANULATED_WAVEFRONT_SGPR_COUNT` (bits 6–9): SGPR blocks − 1 (GFX6–GFX9; 0 on GFX10+).
    pub granulated_wavefront_sgpr_count: u8,
    /// `PRIORITY` (bits 10–11).
    pub priority: u8,
    /// `FLOAT_ROUND_MODE_32` (bits 12–13).
    pub float_round_mode_32: u8,
    /// `FLOAT_ROUND_MODE_16_64` (bits 14–15).
    pub float_round_mode_16_64: u8,
    /// `FLOAT_DENORM_MODE_32` (bits 16–17).
    pub float_denorm_mode_32: u8,
    /// `FLOAT_DENORM_MODE_16_64` (bits 18–19).
    pub float_denorm_mode_16_64: u8,
    /// `PRIV` (bit 20).
    pub priv_: bool,
    /// Bit 21: `ENABLE_DX10_CLAMP` on GFX6–GFX11, `ENABLE_WG_RR_EN` on GFX12.
    pub enable_dx10_clamp: bool,
    /// `DEBUG_MODE` (bit 22).
    pub debug_mode: bool,
    /// Bit 23: `ENABLE_IEEE_MODE` on GFX6–GFX11, `DISABLE_PERF` on GFX12.
    pub enable_ieee_mode: bool,
    /// `BULKY` (bit 24).
    pub bulky: bool,
    /// `CDBG_USER` (bit 25).
    pub cdbg_user: bool,
    /// `FP16_OVFL` (bit 26, GFX9+).
    pub fp16_ovfl: bool,
    /// `WGP_MODE` (bit 29, GFX10+).
    pub wgp_mode: bool,
    /// `MEM_ORDERED` (bit 30, GFX10+).
    pub mem_ordered: bool,
    /// `FWD_PROGRESS` (bit 31, GFX10+).
    pub fwd_progress: bool,
}

impl PgmRsrc1 {
    /// Decodes the register.
    #[must_use]
    pub const fn new(raw: u32) -> Self {
        Self {
            raw,
            granulated_workitem_vgpr_count: bits(raw, 0, 6) as u8,
            granulated_wavefront_sgpr_count: bits(raw, 6, 4) as u8,
            priority: bits(raw, 10, 2) as u8,
            float_round_mode_32: bits(raw, 12, 2) as u8,
            float_round_mode_16_64: bits(raw, 14, 2) as u8,
            float_denorm_mode_32: bits(raw, 16, 2) as u8,
            float_denorm_mode_16_64: bits(raw, 18, 2) as u8,
            priv_: bit(raw, 20),
            enable_dx10_clamp: bit(raw, 21),
            debug_mode: bit(raw, 22),
            enable_ieee_mode: bit(raw, 23),
            bulky: bit(raw, 24),
            cdbg_user: bit(raw, 25),
            fp16_ovfl: bit(raw, 26),
            wgp_mode: bit(raw, 29),
            mem_ordered: bit(raw, 30),
            fwd_progress: bit(raw, 31),
        }
    }
}

/// Which work-item ids the hardware writes into VGPRs (`ENABLE_VGPR_WORKITEM_ID`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WorkitemIds {
    /// X only (0).
    X,
    /// X and Y (1).
    Xy,
    /// X, Y and Z (2).
    Xyz,
    /// The reserved value 3.
    Undefined,
}

/// `COMPUTE_PGM_RSRC2`, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PgmRsrc2 {
    /// The raw register value.
    pub raw: u32,
    /// `ENABLE_PRIVATE_SEGMENT` (bit 0; the private segment wave byte offset SGPR on
    /// GFX6–GFX10, scratch on later ones).
    pub enable_private_segment: bool,
    /// `USER_SGPR_COUNT` (bits 1–5): user SGPRs the CP initialises.
    pub user_sgpr_count: u8,
    /// `ENABLE_TRAP_HANDLER` (bit 6, GFX6–GFX11).
    pub enable_trap_handler: bool,
    /// `ENABLE_SGPR_WORKGROUP_ID_X` (bit 7).
    pub enable_sgpr_workgroup_id_x: bool,
    /// `ENABLE_SGPR_WORKGROUP_ID_Y` (bit 8).
    pub enable_sgpr_workgroup_id_y: bool,
    /// `ENABLE_SGPR_WORKGROUP_ID_Z` (bit 9).
    pub enable_sgpr_workgroup_id_z: bool,
    /// `ENABLE_SGPR_WORKGROUP_INFO` (bit 10).
    pub enable_sgpr_workgroup_info: bool,
    /// `ENABLE_VGPR_WORKITEM_ID` (bits 11–12).
    pub enable_vgpr_workitem_id: WorkitemIds,
    /// `ENABLE_EXCEPTION_ADDRESS_WATCH` (bit 13).
    pub enable_exception_address_watch: bool,
    /// `ENABLE_EXCEPTION_MEMORY` (bit 14).
    pub enable_exception_memory: bool,
    /// `GRANULATED_LDS_SIZE` (bits 15–23; the CP sets it, must be 0 in the descriptor).
    pub granulated_lds_size: u16,
    /// `ENABLE_EXCEPTION_*` bits 24–30 (IEEE invalid, denormal source, division by zero,
    /// overflow, underflow, inexact, integer division by zero), bit 0 = bit 24.
    pub enable_exceptions: u8,
}

impl PgmRsrc2 {
    /// Decodes the register.
    #[must_use]
    pub const fn new(raw: u32) -> Self {
        Self {
            raw,
            enable_private_segment: bit(raw, 0),
            user_sgpr_count: bits(raw, 1, 5) as u8,
            enable_trap_handler: bit(raw, 6),
            enable_sgpr_workgroup_id_x: bit(raw, 7),
            enable_sgpr_workgroup_id_y: bit(raw, 8),
            enable_sgpr_workgroup_id_z: bit(raw, 9),
            enable_sgpr_workgroup_info: bit(raw, 10),
            enable_vgpr_workitem_id: match bits(raw, 11, 2) {
                0 => WorkitemIds::X,
                1 => WorkitemIds::Xy,
                2 => WorkitemIds::Xyz,
                _ => WorkitemIds::Undefined,
            },
            enable_exception_address_watch: bit(raw, 13),
            enable_exception_memory: bit(raw, 14),
            granulated_lds_size: bits(raw, 15, 9) as u16,
            enable_exceptions: bits(raw, 24, 7) as u8,
        }
    }
}

/// `COMPUTE_PGM_RSRC3`, decoded by ISA family (its fields differ per family).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PgmRsrc3 {
    /// GFX6–GFX9 before gfx90a: no such register (the descriptor field is reserved).
    None {
        /// The raw descriptor field (0 in well-formed objects).
        raw: u32,
    },
    /// gfx90a, gfx94x, gfx950.
    Gfx90a {
        /// The raw value.
        raw: u32,
        /// `ACCUM_OFFSET` (bits 0–5): the first accumulation register, in units of 4 VGPRs,
        /// minus 1.
        accum_offset: u8,
        /// `TG_SPLIT` (bit 16): the work-group's waves may run on different CUs.
        tg_split: bool,
    },
    /// GFX10, GFX11, GFX12.
    Gfx10Plus {
        /// The raw value.
        raw: u32,
        /// `SHARED_VGPR_COUNT` (bits 0–3, GFX10–GFX11).
        shared_vgpr_count: u8,
        /// `INST_PREF_SIZE` (GFX11: bits 4–9; GFX12: bits 4–11; 0 on GFX10).
        inst_pref_size: u8,
        /// `TRAP_ON_START` (bit 10, GFX11).
        trap_on_start: bool,
        /// `TRAP_ON_END` (bit 11, GFX11).
        trap_on_end: bool,
        /// `GLG_EN` (bit 13, GFX12).
        glg_en: bool,
        /// `IMAGE_OP` (bit 31, GFX11+).
        image_op: bool,
    },
}

impl PgmRsrc3 {
    /// Decodes the register for `family`.
    #[must_use]
    pub const fn new(raw: u32, family: IsaFamily) -> Self {
        match family {
            IsaFamily::Gfx6To8 | IsaFamily::Gfx9 => Self::None { raw },
            IsaFamily::Gfx90a => {
                Self::Gfx90a { raw, accum_offset: bits(raw, 0, 6) as u8, tg_split: bit(raw, 16) }
            }
            IsaFamily::Gfx10 | IsaFamily::Gfx11 | IsaFamily::Gfx12 => {
                let gfx11 = matches!(family, IsaFamily::Gfx11);
                let gfx12 = matches!(family, IsaFamily::Gfx12);
                Self::Gfx10Plus {
                    raw,
                    shared_vgpr_count: if gfx12 { 0 } else { bits(raw, 0, 4) as u8 },
                    inst_pref_size: match family {
                        IsaFamily::Gfx11 => bits(raw, 4, 6) as u8,
                        IsaFamily::Gfx12 => bits(raw, 4, 8) as u8,
                        _ => 0,
                    },
                    trap_on_start: gfx11 && bit(raw, 10),
                    trap_on_end: gfx11 && bit(raw, 11),
                    glg_en: gfx12 && bit(raw, 13),
                    image_op: (gfx11 || gfx12) && bit(raw, 31),
                }
            }
        }
    }
}

/// The kernel code properties (descriptor bytes 56–57): which user SGPRs the CP sets up, in
/// this order, and wave-level properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CodeProperties {
    /// The raw field.
    pub raw: u16,
    /// `ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER` (bit 0; 4 SGPRs, GFX6–GFX10).
    pub enable_sgpr_private_segment_buffer: bool,
    /// `ENABLE_SGPR_DISPATCH_PTR` (bit 1; 2 SGPRs: the AQL packet's address).
    pub enable_sgpr_dispatch_ptr: bool,
    /// `ENABLE_SGPR_QUEUE_PTR` (bit 2; 2 SGPRs: the `amd_queue_t` address).
    pub enable_sgpr_queue_ptr: bool,
    /// `ENABLE_SGPR_KERNARG_SEGMENT_PTR` (bit 3; 2 SGPRs).
    pub enable_sgpr_kernarg_segment_ptr: bool,
    /// `ENABLE_SGPR_DISPATCH_ID` (bit 4; 2 SGPRs).
    pub enable_sgpr_dispatch_id: bool,
    /// `ENABLE_SGPR_FLAT_SCRATCH_INIT` (bit 5; 2 SGPRs, GFX6–GFX10).
    pub enable_sgpr_flat_scratch_init: bool,
    /// `ENABLE_SGPR_PRIVATE_SEGMENT_SIZE` (bit 6; 1 SGPR).
    pub enable_sgpr_private_segment_size: bool,
    /// `ENABLE_WAVEFRONT_SIZE32` (bit 10, GFX10+): waves of 32 lanes.
    pub enable_wavefront_size32: bool,
    /// `USES_DYNAMIC_STACK` (bit 11): the private segment size is a minimum.
    pub uses_dynamic_stack: bool,
}

impl CodeProperties {
    /// Decodes the field.
    #[must_use]
    pub const fn new(raw: u16) -> Self {
        let r = raw as u32;
        Self {
            raw,
            enable_sgpr_private_segment_buffer: bit(r, 0),
            enable_sgpr_dispatch_ptr: bit(r, 1),
            enable_sgpr_queue_ptr: bit(r, 2),
            enable_sgpr_kernarg_segment_ptr: bit(r, 3),
            enable_sgpr_dispatch_id: bit(r, 4),
            enable_sgpr_flat_scratch_init: bit(r, 5),
            enable_sgpr_private_segment_size: bit(r, 6),
            enable_wavefront_size32: bit(r, 10),
            uses_dynamic_stack: bit(r, 11),
        }
    }
}

/// Kernel arguments preloaded into SGPRs (gfx90a/gfx94x): `KERNARG_PRELOAD_SPEC_LENGTH` and
/// `_OFFSET`. A kernel with a preload length starts with 256 bytes of code for firmware that
/// does not preload (it loads the arguments itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct KernargPreload {
    /// Dwords to preload (bits 0–6; 0: none).
    pub length_dwords: u8,
    /// The first dword preloaded, from the kernarg segment's start (bits 7–15).
    pub offset_dwords: u16,
}

/// A decoded kernel descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct KernelDescriptor {
    /// Fixed LDS bytes per work-group (without dynamic LDS).
    pub group_segment_fixed_size: u32,
    /// Fixed scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// Kernel argument segment size in bytes.
    pub kernarg_size: u32,
    /// The machine code's offset from the descriptor's address.
    pub kernel_code_entry_byte_offset: i64,
    /// `COMPUTE_PGM_RSRC1`.
    pub pgm_rsrc1: PgmRsrc1,
    /// `COMPUTE_PGM_RSRC2`.
    pub pgm_rsrc2: PgmRsrc2,
    /// `COMPUTE_PGM_RSRC3` (decoded for the code object's ISA family).
    pub pgm_rsrc3: PgmRsrc3,
    /// Kernel code properties.
    pub code_properties: CodeProperties,
    /// Kernel argument preloading.
    pub kernarg_preload: KernargPreload,
}

impl KernelDescriptor {
    /// Decodes the 64 descriptor bytes for a code object of `family`.
    #[must_use]
    pub fn decode(bytes: &[u8; KERNEL_DESCRIPTOR_SIZE], family: IsaFamily) -> Self {
        let word = |at: usize| {
            let mut w = [0u8; 4];
            if let Some(src) = bytes.get(at..at.saturating_add(4)) {
                w.copy_from_slice(src);
            }
            u32::from_le_bytes(w)
        };
        let mut entry = [0u8; 8];
        if let Some(src) = bytes.get(16..24) {
            entry.copy_from_slice(src);
        }
        let properties = word(56);
        Self {
            group_segment_fixed_size: word(0),
            private_segment_fixed_size: word(4),
            kernarg_size: word(8),
            kernel_code_entry_byte_offset: i64::from_le_bytes(entry),
            pgm_rsrc3: PgmRsrc3::new(word(44), family),
            pgm_rsrc1: PgmRsrc1::new(word(48)),
            pgm_rsrc2: PgmRsrc2::new(word(52)),
            code_properties: CodeProperties::new(properties as u16),
            kernarg_preload: KernargPreload {
                length_dwords: bits(properties, 16, 7) as u8,
                offset_dwords: bits(properties, 23, 9) as u16,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_every_field() {
        let mut d = [0u8; KERNEL_DESCRIPTOR_SIZE];
        d[0..4].copy_from_slice(&1028u32.to_le_bytes());
        d[4..8].copy_from_slice(&260u32.to_le_bytes());
        d[8..12].copy_from_slice(&280u32.to_le_bytes());
        d[16..24].copy_from_slice(&(-0x880i64).to_le_bytes());
        d[44..48].copy_from_slice(&0x0001_0005u32.to_le_bytes());
        d[48..52].copy_from_slice(&0x00af_0041u32.to_le_bytes());
        d[52..56].copy_from_slice(&0x0000_128bu32.to_le_bytes());
        // Properties: dispatch ptr, kernarg ptr, wave32, dynamic stack; preload 2 dwords at 1.
        let props: u32 = 0b1100_0000_1010 | (2 << 16) | (1 << 23);
        d[56..60].copy_from_slice(&props.to_le_bytes());
        let k = KernelDescriptor::decode(&d, IsaFamily::Gfx90a);
        assert_eq!(k.group_segment_fixed_size, 1028);
        assert_eq!(k.private_segment_fixed_size, 260);
        assert_eq!(k.kernarg_size, 280);
        assert_eq!(k.kernel_code_entry_byte_offset, -0x880);
        assert_eq!(
            k.pgm_rsrc3,
            PgmRsrc3::Gfx90a { raw: 0x0001_0005, accum_offset: 5, tg_split: true }
        );
        let r1 = k.pgm_rsrc1;
        assert_eq!(r1.granulated_workitem_vgpr_count, 1);
        assert_eq!(r1.granulated_wavefront_sgpr_count, 1);
        assert_eq!(r1.float_denorm_mode_16_64, 3);
        assert_eq!(r1.float_denorm_mode_32, 3);
        assert!(r1.enable_dx10_clamp && r1.enable_ieee_mode && !r1.priv_ && !r1.wgp_mode);
        let r2 = k.pgm_rsrc2;
        assert!(r2.enable_private_segment);
        assert_eq!(r2.user_sgpr_count, 5);
        assert!(r2.enable_sgpr_workgroup_id_x && !r2.enable_sgpr_workgroup_id_y);
        assert!(r2.enable_sgpr_workgroup_id_z);
        assert_eq!(r2.enable_vgpr_workitem_id, WorkitemIds::Xyz);
        let p = k.code_properties;
        assert!(p.enable_sgpr_dispatch_ptr && p.enable_sgpr_kernarg_segment_ptr);
        assert!(!p.enable_sgpr_queue_ptr && !p.enable_sgpr_private_segment_buffer);
        assert!(p.enable_wavefront_size32 && p.uses_dynamic_stack);
        assert_eq!(k.kernarg_preload, KernargPreload { length_dwords: 2, offset_dwords: 1 });
        let g11 = PgmRsrc3::new(0x8000_0c35, IsaFamily::Gfx11);
        assert_eq!(
            g11,
            PgmRsrc3::Gfx10Plus {
                raw: 0x8000_0c35,
                shared_vgpr_count: 5,
                inst_pref_size: 3,
                trap_on_start: true,
                trap_on_end: true,
                glg_en: false,
                image_op: true,
            }
        );
        assert_eq!(PgmRsrc3::new(7, IsaFamily::Gfx9), PgmRsrc3::None { raw: 7 });
    }
}
