//! What the command processor assembles before waves run: a [`Launch`] from an AQL
//! kernel-dispatch packet and the kernel descriptor it points at ([`aql_launch`]), or from the
//! compute shader registers a PM4 stream set with `SET_SH_REG` ([`ShRegs::launch`]).
//!
//! AQL: the descriptor is read from GPU memory (either layout, see [`super::descriptor`]); the
//! user SGPRs are filled as the packet processor does, in order, for the enables of
//! `kernel_code_properties`: private segment buffer (the scratch resource), dispatch packet
//! pointer, queue pointer (ROCr's `amd_queue_t`), kernarg pointer, dispatch id, flat scratch
//! init, private segment size, and — gfx942 kernels with preloaded kernel arguments — the
//! first kernel-argument dwords, the program then starting 256 bytes past the entry (which
//! holds `s_trap 2` for firmware without preloading). The scratch backing comes from the
//! queue's `amd_queue_t` as ROCr fills it (`compute_tmpring_size`, the scratch resource
//! descriptor, `scratch_backing_memory_location`/`_byte_size`,
//! `scratch_wave64_lane_byte_size`); a queue without one gives waves no scratch, so private
//! accesses fault.
//!
//! PM4 (register offsets of Linux's `gc_9_0_offset.h`/kfdtest, relative to
//! `PACKET3_SET_SH_REG_START` 0x2C00): `COMPUTE_START_X` 0x2E04, `COMPUTE_NUM_THREAD_X/Y/Z`
//! 0x2E07-09, `COMPUTE_PGM_LO/HI` 0x2E0C/0D (address >> 8), `COMPUTE_DISPATCH_SCRATCH_BASE_LO/HI`
//! 0x2E10/11 (address >> 8), `COMPUTE_PGM_RSRC1/2` 0x2E12/13, `COMPUTE_TMPRING_SIZE` 0x2E18
//! (`WAVES` bits 0-11, `WAVESIZE` bits 12-24 in KiB), `COMPUTE_PGM_RSRC3` 0x2E2D, `COMPUTE_USER_DATA_0..15`
//! 0x2E40-4F. `DISPATCH_DIRECT` gives the grid in work-groups, or in work-items when its
//! initiator's `USE_THREAD_DIMENSIONS` (bit 5) is set.

use super::Target;
use super::descriptor::{
    DESCRIPTOR_BYTES, KernelDescriptor, PROP_DISPATCH_ID, PROP_DISPATCH_PTR,
    PROP_FLAT_SCRATCH_INIT, PROP_KERNARG_SEGMENT_PTR, PROP_PRIVATE_SEGMENT_BUFFER,
    PROP_PRIVATE_SEGMENT_SIZE, PROP_QUEUE_PTR, PROP_WAVEFRONT_SIZE32, rsrc2,
};
use super::dispatch::{Launch, ScratchBacking};
use super::limits::{KERNARG_PRELOAD_SKIP, MAX_KERNARG_PRELOAD, MAX_LDS_BYTES};
use super::memory::WaveMemory;
use super::wave::Apertures;

/// Why a dispatch cannot start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchError {
    /// The kernel object does not point at a readable, valid kernel descriptor.
    Code(&'static str),
    /// The register setup is invalid (user SGPRs, scratch, LDS).
    Registers(&'static str),
}

impl std::fmt::Display for LaunchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Code(why) => write!(f, "invalid kernel code: {why}"),
            Self::Registers(why) => write!(f, "invalid dispatch registers: {why}"),
        }
    }
}

/// The fields of an AQL kernel-dispatch packet the launch needs, and where it sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AqlDispatch {
    /// `kernel_object`: the kernel descriptor's address.
    pub kernel_object: u64,
    /// `kernarg_address`.
    pub kernarg_address: u64,
    /// Work-items in the grid.
    pub grid: [u32; 3],
    /// Work-items per work-group.
    pub workgroup: [u32; 3],
    /// LDS bytes per work-group.
    pub group_segment_size: u32,
    /// Private bytes per work-item.
    pub private_segment_size: u32,
    /// Address of the packet in the ring.
    pub packet_address: u64,
    /// The packet's index (the dispatch id).
    pub dispatch_id: u64,
    /// Address of the queue's `amd_queue_t` (0 when unknown).
    pub queue_address: u64,
}

/// `amd_queue_t` field offsets (ROCr's `amd_hsa_queue.h`).
mod amd_queue {
    pub(super) const COMPUTE_TMPRING_SIZE: u64 = 140;
    pub(super) const SCRATCH_RESOURCE_DESCRIPTOR: u64 = 144;
    pub(super) const SCRATCH_BACKING_MEMORY_LOCATION: u64 = 160;
    pub(super) const SCRATCH_BACKING_MEMORY_BYTE_SIZE: u64 = 168;
    pub(super) const SCRATCH_WAVE64_LANE_BYTE_SIZE: u64 = 176;
}

fn u32_at(b: &[u8], at: u64) -> u32 {
    let at = at as usize;
    b.get(at..at + 4).map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], at: u64) -> u64 {
    u64::from(u32_at(b, at)) | u64::from(u32_at(b, at + 4)) << 32
}

/// The scratch resource descriptor (V#) for private memory at `base`: swizzled per lane in
/// dwords (`SWIZZLE_ENABLE`, `INDEX_STRIDE` 64, `ADD_TID_ENABLE`), unbounded.
#[must_use]
pub fn scratch_resource(base: u64) -> [u32; 4] {
    [base as u32, (base >> 32) as u32 & 0xFFFF | 1 << 31, u32::MAX, 3 << 21 | 1 << 23]
}

/// The scratch setup ROCr left in the queue's `amd_queue_t`: the backing and the resource.
fn queue_scratch<M: WaveMemory>(mem: &mut M, queue: u64) -> Option<(ScratchBacking, [u32; 4])> {
    if queue == 0 {
        return None;
    }
    let mut b = [0u8; 184];
    mem.read(queue, &mut b).ok()?;
    let base = u64_at(&b, amd_queue::SCRATCH_BACKING_MEMORY_LOCATION);
    let bytes = u64_at(&b, amd_queue::SCRATCH_BACKING_MEMORY_BYTE_SIZE);
    let lane = u64::from(u32_at(&b, amd_queue::SCRATCH_WAVE64_LANE_BYTE_SIZE));
    let tmpring = u32_at(&b, amd_queue::COMPUTE_TMPRING_SIZE);
    if base == 0 || lane == 0 {
        return None;
    }
    let wave_bytes = lane * 64;
    let waves = match tmpring & 0xFFF {
        0 => bytes / wave_bytes,
        w => u64::from(w).min(bytes / wave_bytes),
    };
    let mut srd = [0u32; 4];
    for (k, d) in srd.iter_mut().enumerate() {
        *d = u32_at(&b, amd_queue::SCRATCH_RESOURCE_DESCRIPTOR + 4 * k as u64);
    }
    if srd == [0; 4] {
        srd = scratch_resource(base);
    }
    Some((ScratchBacking { base, wave_bytes, waves: waves.min(u64::from(u32::MAX)) as u32 }, srd))
}

/// The launch of an AQL kernel dispatch on `target`.
///
/// # Errors
/// [`LaunchError::Code`] when the descriptor cannot be read or asks for something gfx9 does
/// not run (wave32); [`LaunchError::Registers`] for more user SGPRs than the hardware loads,
/// LDS beyond the work-group limit, or a private segment larger than the queue's scratch slots.
pub fn aql_launch<M: WaveMemory>(
    mem: &mut M,
    target: Target,
    d: &AqlDispatch,
    apertures: Apertures,
) -> Result<Launch, LaunchError> {
    let mut raw = [0u8; DESCRIPTOR_BYTES];
    mem.read(d.kernel_object, &mut raw)
        .map_err(|_| LaunchError::Code("kernel descriptor not readable"))?;
    let kd = KernelDescriptor::parse(&raw);
    if kd.properties & PROP_WAVEFRONT_SIZE32 != 0 && !kd.legacy {
        return Err(LaunchError::Code("wave32 kernel on a wave64 target"));
    }
    let scratch_en = kd.rsrc2 & rsrc2::SCRATCH_EN != 0;
    let scratch = if scratch_en { queue_scratch(mem, d.queue_address) } else { None };
    if let Some((s, _)) = scratch
        && u64::from(d.private_segment_size) * 64 > s.wave_bytes
    {
        return Err(LaunchError::Registers(
            "private segment larger than the queue's scratch slots",
        ));
    }
    let mut user = [0u32; 32];
    let mut n = 0usize;
    let mut push = |v: u32| {
        if let Some(s) = user.get_mut(n) {
            *s = v;
        }
        n += 1;
    };
    let p = kd.properties;
    let split = |v: u64| [v as u32, (v >> 32) as u32];
    if p & PROP_PRIVATE_SEGMENT_BUFFER != 0 {
        scratch.map_or([0; 4], |(_, srd)| srd).into_iter().for_each(&mut push);
    }
    if p & PROP_DISPATCH_PTR != 0 {
        split(d.packet_address).into_iter().for_each(&mut push);
    }
    if p & PROP_QUEUE_PTR != 0 {
        split(d.queue_address).into_iter().for_each(&mut push);
    }
    if p & PROP_KERNARG_SEGMENT_PTR != 0 {
        split(d.kernarg_address).into_iter().for_each(&mut push);
    }
    if p & PROP_DISPATCH_ID != 0 {
        split(d.dispatch_id).into_iter().for_each(&mut push);
    }
    if p & PROP_FLAT_SCRATCH_INIT != 0 {
        split(scratch.map_or(0, |(s, _)| s.base)).into_iter().for_each(&mut push);
    }
    if p & PROP_PRIVATE_SEGMENT_SIZE != 0 {
        push(d.private_segment_size);
    }
    if kd.legacy {
        // amd_kernel_code_t: grid work-group counts x, y, z.
        for dim in 0..3 {
            if p >> (7 + dim) & 1 != 0 {
                push(d.grid[dim].div_ceil(d.workgroup[dim].max(1)));
            }
        }
    }
    let mut entry = d.kernel_object.wrapping_add_signed(kd.entry_offset);
    if kd.kernarg_preload_length > 0 {
        if target != Target::Gfx942 || kd.kernarg_preload_length > MAX_KERNARG_PRELOAD {
            return Err(LaunchError::Registers("kernel-argument preloading not supported here"));
        }
        let at = d.kernarg_address + 4 * u64::from(kd.kernarg_preload_offset);
        for k in 0..u64::from(kd.kernarg_preload_length) {
            let mut b = [0u8; 4];
            mem.read(at + 4 * k, &mut b)
                .map_err(|_| LaunchError::Registers("preloaded kernel arguments not readable"))?;
            push(u32::from_le_bytes(b));
        }
        entry = entry.wrapping_add(KERNARG_PRELOAD_SKIP);
    }
    if n > user.len() {
        return Err(LaunchError::Registers("more user SGPRs than the hardware loads"));
    }
    let lds = d.group_segment_size.max(kd.group_segment_fixed_size);
    if lds > MAX_LDS_BYTES {
        return Err(LaunchError::Registers("LDS beyond the work-group limit"));
    }
    Ok(Launch {
        target,
        entry,
        rsrc1: kd.rsrc1,
        rsrc2: kd.rsrc2,
        rsrc3: if target == Target::Gfx900 { 0 } else { kd.rsrc3 },
        user_sgprs: user,
        grid: d.grid,
        workgroup: d.workgroup,
        lds_bytes: lds,
        scratch: scratch.map(|(s, _)| s),
        apertures,
    })
}

/// `PACKET3_SET_SH_REG_START`: register offsets of `SET_SH_REG` count from here.
pub const SH_REG_START: u32 = 0x2C00;
/// Registers of the SH space (`0x2C00..0x3000`).
pub const SH_REGS: usize = 0x400;

/// Register offsets (dword addresses) the launch reads.
pub mod reg {
    /// `COMPUTE_START_X`.
    pub const COMPUTE_START_X: u32 = 0x2E04;
    /// `COMPUTE_NUM_THREAD_X`.
    pub const COMPUTE_NUM_THREAD_X: u32 = 0x2E07;
    /// `COMPUTE_PGM_LO`.
    pub const COMPUTE_PGM_LO: u32 = 0x2E0C;
    /// `COMPUTE_PGM_HI`.
    pub const COMPUTE_PGM_HI: u32 = 0x2E0D;
    /// `COMPUTE_DISPATCH_SCRATCH_BASE_LO`.
    pub const COMPUTE_DISPATCH_SCRATCH_BASE_LO: u32 = 0x2E10;
    /// `COMPUTE_DISPATCH_SCRATCH_BASE_HI`.
    pub const COMPUTE_DISPATCH_SCRATCH_BASE_HI: u32 = 0x2E11;
    /// `COMPUTE_PGM_RSRC1`.
    pub const COMPUTE_PGM_RSRC1: u32 = 0x2E12;
    /// `COMPUTE_PGM_RSRC2`.
    pub const COMPUTE_PGM_RSRC2: u32 = 0x2E13;
    /// `COMPUTE_TMPRING_SIZE`.
    pub const COMPUTE_TMPRING_SIZE: u32 = 0x2E18;
    /// `COMPUTE_PGM_RSRC3` (gfx90a, gfx942).
    pub const COMPUTE_PGM_RSRC3: u32 = 0x2E2D;
    /// `COMPUTE_USER_DATA_0`.
    pub const COMPUTE_USER_DATA_0: u32 = 0x2E40;
}

/// `DISPATCH_INITIATOR.USE_THREAD_DIMENSIONS`.
pub const USE_THREAD_DIMENSIONS: u32 = 1 << 5;

/// The compute shader registers of a PM4 queue (`SET_SH_REG` writes them).
#[derive(Clone)]
pub struct ShRegs(Box<[u32; SH_REGS]>);

impl Default for ShRegs {
    fn default() -> Self {
        ShRegs(Box::new([0; SH_REGS]))
    }
}

impl std::fmt::Debug for ShRegs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShRegs").finish_non_exhaustive()
    }
}

impl ShRegs {
    /// `SET_SH_REG`: `values` from register offset `offset` (relative to
    /// [`SH_REG_START`]); registers past the SH space are ignored.
    pub fn set(&mut self, offset: u32, values: impl IntoIterator<Item = u32>) {
        for (k, v) in values.into_iter().enumerate() {
            if let Some(r) = self.0.get_mut(offset as usize + k) {
                *r = v;
            }
        }
    }

    /// Register `r` (a dword address such as [`reg::COMPUTE_PGM_LO`]).
    #[must_use]
    pub fn get(&self, r: u32) -> u32 {
        r.checked_sub(SH_REG_START).and_then(|o| self.0.get(o as usize)).copied().unwrap_or(0)
    }

    /// The launch `DISPATCH_DIRECT` with `dims` and `initiator` makes from the registers.
    ///
    /// # Errors
    /// [`LaunchError::Registers`] for an empty work-group or LDS beyond the limit.
    pub fn launch(
        &self,
        target: Target,
        dims: [u32; 3],
        initiator: u32,
        apertures: Apertures,
    ) -> Result<Launch, LaunchError> {
        let wg = [0, 1, 2].map(|d| self.get(reg::COMPUTE_NUM_THREAD_X + d) & 0xFFFF);
        if wg.contains(&0) {
            return Err(LaunchError::Registers("a work-group dimension is zero"));
        }
        let grid = if initiator & USE_THREAD_DIMENSIONS != 0 {
            dims
        } else {
            [0, 1, 2].map(|d| dims[d].saturating_mul(wg[d]))
        };
        let r2 = self.get(reg::COMPUTE_PGM_RSRC2);
        let lds = ((r2 >> rsrc2::LDS_SIZE_SHIFT) & 0x1FF) * 512;
        if lds > MAX_LDS_BYTES {
            return Err(LaunchError::Registers("LDS beyond the work-group limit"));
        }
        let entry = (u64::from(self.get(reg::COMPUTE_PGM_HI) & 0xFF) << 32
            | u64::from(self.get(reg::COMPUTE_PGM_LO)))
            << 8;
        let base = (u64::from(self.get(reg::COMPUTE_DISPATCH_SCRATCH_BASE_HI) & 0xFF) << 32
            | u64::from(self.get(reg::COMPUTE_DISPATCH_SCRATCH_BASE_LO)))
            << 8;
        let tmpring = self.get(reg::COMPUTE_TMPRING_SIZE);
        let scratch = (r2 & rsrc2::SCRATCH_EN != 0 && base != 0).then(|| ScratchBacking {
            base,
            wave_bytes: u64::from((tmpring >> 12) & 0x1FFF) * 1024,
            waves: tmpring & 0xFFF,
        });
        let mut user = [0u32; 32];
        for (k, u) in user.iter_mut().enumerate().take(16) {
            *u = self.get(reg::COMPUTE_USER_DATA_0 + k as u32);
        }
        Ok(Launch {
            target,
            entry,
            rsrc1: self.get(reg::COMPUTE_PGM_RSRC1),
            rsrc2: r2,
            rsrc3: if target == Target::Gfx900 { 0 } else { self.get(reg::COMPUTE_PGM_RSRC3) },
            user_sgprs: user,
            grid,
            workgroup: wg,
            lds_bytes: lds,
            scratch,
            apertures,
        })
    }
}
