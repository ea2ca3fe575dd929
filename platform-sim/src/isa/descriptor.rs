//! Kernel descriptors as the command processor reads them from GPU memory: the 64-byte
//! kernel descriptor of code objects v3+ (AMDGPUUsage, "Kernel Descriptor") and the older
//! 256-byte `amd_kernel_code_t` header (code object v2; ROCr's blit kernels), whose fields
//! the packet processor needs sit at the same offsets in both: the entry offset at 16,
//! `COMPUTE_PGM_RSRC1`/`RSRC2` at 48/52, the user-SGPR enables in the low bits of the code
//! properties at 56. The v3 layout adds `COMPUTE_PGM_RSRC3` at 44 and the kernarg-preload
//! fields at 58; `amd_kernel_code_t` (recognised by its version 1, machine kind 1 header) adds
//! the grid work-group count SGPRs (properties bits 7-9).

use super::Target;

/// Bytes of a kernel descriptor the packet processor reads.
pub const DESCRIPTOR_BYTES: usize = 64;

/// `kernel_code_properties` bit: the private segment buffer (4 SGPRs).
pub const PROP_PRIVATE_SEGMENT_BUFFER: u32 = 1 << 0;
/// `kernel_code_properties` bit: the dispatch packet pointer (2 SGPRs).
pub const PROP_DISPATCH_PTR: u32 = 1 << 1;
/// `kernel_code_properties` bit: the queue pointer (2 SGPRs).
pub const PROP_QUEUE_PTR: u32 = 1 << 2;
/// `kernel_code_properties` bit: the kernarg segment pointer (2 SGPRs).
pub const PROP_KERNARG_SEGMENT_PTR: u32 = 1 << 3;
/// `kernel_code_properties` bit: the dispatch id (2 SGPRs).
pub const PROP_DISPATCH_ID: u32 = 1 << 4;
/// `kernel_code_properties` bit: flat scratch init (2 SGPRs).
pub const PROP_FLAT_SCRATCH_INIT: u32 = 1 << 5;
/// `kernel_code_properties` bit: the private segment size (1 SGPR).
pub const PROP_PRIVATE_SEGMENT_SIZE: u32 = 1 << 6;
/// `kernel_code_properties` bit of the v3 descriptor: wave32 (not a gfx9 mode).
pub const PROP_WAVEFRONT_SIZE32: u32 = 1 << 10;

/// `COMPUTE_PGM_RSRC2` fields.
pub mod rsrc2 {
    /// `SCRATCH_EN` / `ENABLE_PRIVATE_SEGMENT`.
    pub const SCRATCH_EN: u32 = 1 << 0;
    /// `USER_SGPR` count, bits 1-5.
    pub const USER_SGPR_SHIFT: u32 = 1;
    /// `TRAP_PRESENT`.
    pub const TRAP_PRESENT: u32 = 1 << 6;
    /// `TGID_X_EN`.
    pub const TGID_X_EN: u32 = 1 << 7;
    /// `TGID_Y_EN`.
    pub const TGID_Y_EN: u32 = 1 << 8;
    /// `TGID_Z_EN`.
    pub const TGID_Z_EN: u32 = 1 << 9;
    /// `TG_SIZE_EN` (work-group info SGPR).
    pub const TG_SIZE_EN: u32 = 1 << 10;
    /// `TIDIG_COMP_CNT`, bits 11-12: work-item ids in VGPRs (0 x, 1 x y, 2 x y z).
    pub const TIDIG_SHIFT: u32 = 11;
    /// `LDS_SIZE`, bits 15-23, in 128-dword granules.
    pub const LDS_SIZE_SHIFT: u32 = 15;
}

/// What the command processor takes from a kernel descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelDescriptor {
    /// Static LDS bytes (v3 layout: `group_segment_fixed_size`).
    pub group_segment_fixed_size: u32,
    /// Private bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// Byte offset of the entry from the descriptor.
    pub entry_offset: i64,
    /// `COMPUTE_PGM_RSRC1`.
    pub rsrc1: u32,
    /// `COMPUTE_PGM_RSRC2`.
    pub rsrc2: u32,
    /// `COMPUTE_PGM_RSRC3` (0 in the v2 layout).
    pub rsrc3: u32,
    /// `kernel_code_properties` (user-SGPR enables).
    pub properties: u32,
    /// Kernel-argument dwords preloaded into SGPRs (gfx942; 0 otherwise).
    pub kernarg_preload_length: u32,
    /// First preloaded kernel-argument dword.
    pub kernarg_preload_offset: u32,
    /// Whether this is the 256-byte `amd_kernel_code_t` layout.
    pub legacy: bool,
}

fn u32_at(b: &[u8; DESCRIPTOR_BYTES], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl KernelDescriptor {
    /// Parses the first 64 bytes of a descriptor.
    #[must_use]
    pub fn parse(b: &[u8; DESCRIPTOR_BYTES]) -> Self {
        // amd_kernel_code_t: version 1.x, machine kind 1 (AMDGPU), machine version major.
        let legacy = u32_at(b, 0) == 1
            && u32_at(b, 4) <= 2
            && u16::from_le_bytes([b[8], b[9]]) == 1
            && (7..=12).contains(&u16::from_le_bytes([b[10], b[11]]));
        let entry_offset =
            i64::from_le_bytes([b[16], b[17], b[18], b[19], b[20], b[21], b[22], b[23]]);
        let props = u32_at(b, 56);
        let preload = u32::from(u16::from_le_bytes([b[58], b[59]]));
        KernelDescriptor {
            group_segment_fixed_size: if legacy { 0 } else { u32_at(b, 0) },
            private_segment_fixed_size: if legacy { 0 } else { u32_at(b, 4) },
            entry_offset,
            rsrc1: u32_at(b, 48),
            rsrc2: u32_at(b, 52),
            rsrc3: if legacy { 0 } else { u32_at(b, 44) },
            properties: if legacy { props } else { props & 0xFFFF },
            kernarg_preload_length: if legacy { 0 } else { preload & 0x7F },
            kernarg_preload_offset: if legacy { 0 } else { preload >> 7 },
            legacy,
        }
    }

    /// The user SGPRs the enables ask for, before preloaded kernel arguments.
    #[must_use]
    pub fn user_sgprs(&self) -> u32 {
        let p = self.properties;
        let mut n = 0;
        for (bit, count) in [
            (PROP_PRIVATE_SEGMENT_BUFFER, 4),
            (PROP_DISPATCH_PTR, 2),
            (PROP_QUEUE_PTR, 2),
            (PROP_KERNARG_SEGMENT_PTR, 2),
            (PROP_DISPATCH_ID, 2),
            (PROP_FLAT_SCRATCH_INIT, 2),
            (PROP_PRIVATE_SEGMENT_SIZE, 1),
        ] {
            if p & bit != 0 {
                n += count;
            }
        }
        if self.legacy {
            n += (p >> 7 & 7).count_ones();
        }
        n
    }
}

/// VGPRs and AGPRs a wave of this kernel has: the granulated count of `COMPUTE_PGM_RSRC1`
/// (4-register granules on gfx900, 8 on gfx90a/gfx942, where the count covers both files
/// and `COMPUTE_PGM_RSRC3.ACCUM_OFFSET` says where the AGPRs start).
#[must_use]
pub fn register_counts(t: Target, rsrc1: u32, rsrc3: u32) -> (usize, usize) {
    let g = (rsrc1 & 0x3F) as usize + 1;
    match t {
        Target::Gfx900 => ((g * 4).min(256), 0),
        Target::Gfx90a | Target::Gfx942 => {
            let total = g * 8;
            let arch = ((rsrc3 & 0x3F) as usize + 1) * 4;
            let arch = if rsrc3 == 0 { total } else { arch.min(total) };
            (arch.min(256), (total - arch).min(256))
        }
    }
}
