//! Pure helpers that lay the address space out: per-device constants, the SVM bounds, window
//! and layout of the two SVM modes, and the `NoAddress` handle window.

use crate::memory::{Error, GPU_HUGE_PAGE_SIZE, PAGE_SIZE, align_up};

use super::{
    ApertureConfig, ApertureKind, BIGGEST_SINGLE_BUF_SIZE, DEFAULT_ALIGNMENT_ORDER,
    DEFAULT_GUARD_PAGES, GFX950_ALIGNMENT_ORDER, MEM_HANDLE_APERTURE_SIZE, NON_CANONICAL_END,
    NON_CANONICAL_START, SCRATCH_ALIGN, SVM_ALT_ALIGN, SVM_MIN_VM_SIZE, SVM_RESERVATION_LIMIT,
    TONGA_PAGE_SIZE, VaSource,
};

/// The VM alignment a GPU needs (`get_vm_alignment`): 32 KiB for Tonga (device ids
/// `0x6920..=0x6939`) and Carrizo (`0x9870..=0x9877`), one page otherwise.
#[must_use]
pub const fn vm_alignment(device_id: u32) -> u64 {
    match device_id {
        0x6920..=0x6939 | 0x9870..=0x9877 => TONGA_PAGE_SIZE,
        _ => PAGE_SIZE,
    }
}

/// Whether a GPU's GPUVM aperture lies in the canonical (CPU-addressable) range
/// (`IS_CANONICAL_ADDR(gpuvm_limit)`): such GPUs share the SVM apertures; the others (old APUs)
/// get a private [`ApertureKind::GpuVm`] aperture.
#[must_use]
pub const fn is_canonical(gpuvm_limit: u64) -> bool {
    gpuvm_limit < NON_CANONICAL_START
}

/// Whether a GPU uses the SVM apertures for its device memory (`hsakmt_topology_is_svm_needed`):
/// always on a dGPU system, and on APUs from GFX9 on.
#[must_use]
pub const fn svm_needed(is_dgpu: bool, gfx_major: u32) -> bool {
    is_dgpu || gfx_major >= 9
}

/// The maximum VA alignment order of slab apertures (`HSA_MAX_VA_ALIGN`, default 18 when every
/// GPU is GFX950, 9 otherwise).
#[must_use]
pub const fn svm_alignment_order(all_gfx950: bool, override_order: Option<u32>) -> u32 {
    match override_order {
        Some(o) => o,
        None if all_gfx950 => GFX950_ALIGNMENT_ORDER,
        None => DEFAULT_ALIGNMENT_ORDER,
    }
}

/// Parses `HSA_SVM_GUARD_PAGES` as libhsakmt does (`sscanf("%u")`, default
/// [`DEFAULT_GUARD_PAGES`] when unset or unparsable): leading blanks, then decimal digits.
#[must_use]
pub fn guard_pages_from_env(value: Option<&str>) -> u32 {
    let Some(v) = value else { return DEFAULT_GUARD_PAGES };
    let digits = v.trim_start().split(|c: char| !c.is_ascii_digit()).next().unwrap_or("");
    digits.parse().unwrap_or(DEFAULT_GUARD_PAGES)
}

/// The size of a scratch backing range for `size` bytes (rounded up to [`SCRATCH_ALIGN`]).
#[must_use]
pub const fn scratch_backing_size(size: u64) -> Option<u64> {
    align_up(size, SCRATCH_ALIGN)
}

/// The number of KFD buffers libhsakmt creates for a userptr range of `size` bytes (it splits
/// at [`BIGGEST_SINGLE_BUF_SIZE`]).
#[must_use]
pub const fn kfd_buffer_count(size: u64) -> u64 {
    size.div_ceil(BIGGEST_SINGLE_BUF_SIZE)
}

/// The GPU-addressable window shared by all canonical GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SvmBounds {
    /// Highest `gpuvm_base`.
    pub base: u64,
    /// Lowest `gpuvm_limit`.
    pub limit: u64,
    /// Largest VM alignment.
    pub align: u64,
}

/// Combines the GPUVM apertures `(gpuvm_base, gpuvm_limit, device_id)` that the kernel reports
/// per GPU (`GET_PROCESS_APERTURES_NEW`) into the SVM bounds, considering only canonical GPUs
/// (`hsakmt_fmm_init_process_apertures`). `None` when no GPU is canonical (no SVM).
pub fn svm_bounds(gpus: impl IntoIterator<Item = (u64, u64, u32)>) -> Option<SvmBounds> {
    let mut out: Option<SvmBounds> = None;
    for (base, limit, device_id) in gpus {
        if !is_canonical(limit) {
            continue;
        }
        let align = vm_alignment(device_id);
        out = Some(match out {
            None => SvmBounds { base, limit, align },
            Some(b) => SvmBounds {
                base: b.base.max(base),
                limit: b.limit.min(limit),
                align: b.align.max(align),
            },
        });
    }
    out
}

/// The SVM window and the mode libhsakmt chooses for it (`init_svm_apertures`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SvmWindow {
    /// ≥ 47-bit GPUVM on every GPU and no `HSA_RESERVE_SVM`: one slab aperture over
    /// `[base, limit]`. (If the platform cannot reserve address space there, fall back to
    /// [`SvmWindow::Reserve`] with the limit clamped to [`SVM_RESERVATION_LIMIT`].)
    Slabs {
        /// First usable address (2 MiB aligned).
        base: u64,
        /// Last usable address.
        limit: u64,
    },
    /// Reserve a range of at least [`SVM_MIN_VM_SIZE`] inside `[base, limit]` (libhsakmt tries
    /// sizes from the whole window down, halving, at 2 MiB-stepped addresses, and accepts a
    /// reservation when at least half of it is GPU addressable), then split it with
    /// [`SvmLayout::reserved`].
    Reserve {
        /// First usable address (2 MiB aligned).
        base: u64,
        /// Last usable address (≤ [`SVM_RESERVATION_LIMIT`]).
        limit: u64,
    },
}

/// Chooses the SVM window from the combined bounds (`init_svm_apertures`): base rounded up and
/// `limit + 1` down to 2 MiB; slab mode when `limit ≥ 2^47 − 1` and `reserve_svm` is false;
/// otherwise the limit is clamped to [`SVM_RESERVATION_LIMIT`].
///
/// A limit below 2 MiB − 1 leaves no window (libhsakmt's unsigned arithmetic wraps it to
/// 2^64 − 1, the whole address space).
///
/// # Errors
/// [`Error::OutOfSpace`] when no window remains ("No SVM range compatible with all GPU and
/// software constraints").
pub fn svm_window(bounds: SvmBounds, reserve_svm: bool) -> Result<SvmWindow, Error> {
    let base = align_up(bounds.base, GPU_HUGE_PAGE_SIZE).ok_or(Error::SizeOverflow)?;
    // `limit + 1` rounded down to 2 MiB, in 65 bits so that a limit of 2^64 − 1 stays whole.
    let end = (u128::from(bounds.limit) + 1) & !u128::from(GPU_HUGE_PAGE_SIZE - 1);
    let Some(limit) = end.checked_sub(1) else {
        return Err(Error::OutOfSpace { needed: SVM_MIN_VM_SIZE });
    };
    let limit = u64::try_from(limit).unwrap_or(u64::MAX);
    if limit >= NON_CANONICAL_START - 1 && !reserve_svm && base < limit {
        return Ok(SvmWindow::Slabs { base, limit });
    }
    let limit = limit.min(SVM_RESERVATION_LIMIT);
    if base >= limit {
        return Err(Error::OutOfSpace { needed: SVM_MIN_VM_SIZE });
    }
    Ok(SvmWindow::Reserve { base, limit })
}

/// The SVM apertures, as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SvmLayout {
    /// Slab ("mmap aperture") mode: one aperture serves coarse- and fine-grained memory.
    Unified(ApertureConfig),
    /// Reserved mode: the coherent aperture (first quarter) and the default aperture (rest).
    Split {
        /// [`ApertureKind::SvmCoherent`].
        coherent: ApertureConfig,
        /// [`ApertureKind::SvmDefault`].
        default: ApertureConfig,
    },
}

impl SvmLayout {
    /// Slab mode over the window `[base, limit]` (`init_mmap_apertures`).
    #[must_use]
    pub const fn slabs(
        base: u64,
        limit: u64,
        align: u64,
        guard_pages: u32,
        alignment_order: u32,
    ) -> Self {
        Self::Unified(ApertureConfig {
            kind: ApertureKind::SvmDefault,
            base,
            limit,
            align,
            guard_pages,
            source: VaSource::Slabs { alignment_order },
        })
    }

    /// Reserved mode over a reservation `[base, base + size)` (`init_svm_apertures`): the
    /// coherent aperture starts at `base` rounded up to 64 KiB and spans a quarter of `size`
    /// rounded up to 64 KiB; the default aperture takes the rest up to the reservation's end.
    ///
    /// # Errors
    /// [`Error::ZeroSize`]; [`Error::SizeOverflow`] when the reservation wraps;
    /// [`Error::OutOfSpace`] when it is too small to hold both apertures.
    pub fn reserved(base: u64, size: u64, align: u64, guard_pages: u32) -> Result<Self, Error> {
        if size == 0 {
            return Err(Error::ZeroSize);
        }
        let limit = base.checked_add(size.saturating_sub(1)).ok_or(Error::SizeOverflow)?;
        let alt_base = align_up(base, SVM_ALT_ALIGN).ok_or(Error::SizeOverflow)?;
        let alt_size = align_up(size >> 2, SVM_ALT_ALIGN).ok_or(Error::SizeOverflow)?;
        let alt_limit = alt_base
            .checked_add(alt_size)
            .and_then(|e| e.checked_sub(1))
            .ok_or(Error::SizeOverflow)?;
        if alt_size == 0 || alt_limit >= limit {
            return Err(Error::OutOfSpace { needed: 2 * SVM_ALT_ALIGN });
        }
        let part = |kind, base, limit| ApertureConfig {
            kind,
            base,
            limit,
            align,
            guard_pages,
            source: VaSource::Reserved,
        };
        Ok(Self::Split {
            coherent: part(ApertureKind::SvmCoherent, alt_base, alt_limit),
            // `alt_limit < limit`.
            default: part(ApertureKind::SvmDefault, alt_limit.saturating_add(1), limit),
        })
    }

    /// The aperture for non-coherent (coarse-grained) memory.
    #[must_use]
    pub const fn default_aperture(&self) -> &ApertureConfig {
        match self {
            Self::Unified(c) => c,
            Self::Split { default, .. } => default,
        }
    }

    /// The aperture for coherent (fine-grained) memory; the same as the default one in slab
    /// mode.
    #[must_use]
    pub const fn coherent_aperture(&self) -> &ApertureConfig {
        match self {
            Self::Unified(c) => c,
            Self::Split { coherent, .. } => coherent,
        }
    }

    /// The single SVM range libhsakmt reports (`FMM_SVM`): from the coherent aperture's base to
    /// the default aperture's limit, as `(base, limit)`.
    #[must_use]
    pub const fn reported_range(&self) -> (u64, u64) {
        (self.coherent_aperture().base, self.default_aperture().limit)
    }

    /// The alternate aperture `(base, size)` every canonical GPU gets in
    /// `AMDKFD_IOC_SET_MEMORY_POLICY` (alternate policy coherent; default policy non-coherent
    /// unless `HSA_DISABLE_CACHE`).
    #[must_use]
    pub const fn alternate_aperture(&self) -> (u64, u64) {
        let c = self.coherent_aperture();
        (c.base, c.limit.wrapping_sub(c.base).wrapping_add(1))
    }
}

/// Places the `NoAddress` handle window (`init_mem_handle_aperture`): the first 2^47-byte window
/// at `2^47 + k·2^47` that overlaps none of the `occupied` apertures (each GPU's LDS, scratch and
/// GPUVM apertures as `(base, limit)`; entries with base 0 are ignored). Returns
/// `(base, limit)`.
///
/// libhsakmt stores `limit = base + 2^47` (one byte more); here the window is exactly
/// [`MEM_HANDLE_APERTURE_SIZE`] bytes.
///
/// libhsakmt tries the candidates one by one (up to 2^17 of them, each against every
/// aperture); here a clash skips every candidate that starts inside the clashing aperture,
/// which gives the same window in at most one step per aperture.
#[must_use]
pub fn mem_handle_window(occupied: &[(u64, u64)]) -> Option<(u64, u64)> {
    let mut base = NON_CANONICAL_START;
    while base < NON_CANONICAL_END - 1 {
        // `base` is below the non-canonical hole's end, far from 2^64.
        let limit = base.saturating_add(MEM_HANDLE_APERTURE_SIZE - 1);
        // Every later candidate starting at or before the end of a clashing aperture clashes
        // with it too (the aperture starts before this window ends).
        let clash_end = occupied
            .iter()
            .filter(|&&(b, l)| b != 0 && b <= limit && base <= l)
            .map(|&(_, l)| l)
            .max();
        let Some(end) = clash_end else { return Some((base, limit)) };
        let skip = (end.saturating_sub(base) / MEM_HANDLE_APERTURE_SIZE).checked_add(1)?;
        base = base.checked_add(skip.checked_mul(MEM_HANDLE_APERTURE_SIZE)?)?;
    }
    None
}
