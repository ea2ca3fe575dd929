//! From the kernel's `GET_PROCESS_APERTURES_NEW` reply to the SVM plan: the decisions of
//! libhsakmt's `hsakmt_fmm_init_process_apertures` and `init_svm_apertures` that depend only on
//! what the kernel reported, separated from the device so that any reply — including ones no
//! kernel sends — can be checked (and fuzzed) without one.
//!
//! The device ([`crate::device::Kfd`]) opens the memory manager with these steps:
//! 1. [`reported_gpus`]: the usable entries of the reply, as [`GpuApertures`];
//! 2. [`SvmPlan::new`]: the SVM bounds, window, alignment and alignment order;
//! 3. slab mode over [`SvmPlan::slab_window`] ([`SvmLayout::slabs`]) when it applies and the
//!    platform can reserve a slab there, else reserved mode over
//!    [`SvmPlan::reserved_window`]: [`reservation_attempts`] gives the sizes to try,
//!    [`accept_reservation`] judges what the platform returned, and [`SvmLayout::reserved`]
//!    splits the accepted range;
//! 4. [`mem_handle_window`] over every GPU's [`GpuApertures::occupied`] ranges.
//!
//! ```
//! use hsakmt_core::memory::aperture::*;
//! use hsakmt_core::uapi::kfd_process_device_apertures;
//!
//! let reply = [kfd_process_device_apertures {
//!     lds_base: 1 << 48,
//!     lds_limit: (1 << 48) + 0xFFFF_FFFF,
//!     scratch_base: 2 << 48,
//!     scratch_limit: (2 << 48) + 0xFFFF_FFFF,
//!     gpuvm_base: 0x1_0000,
//!     gpuvm_limit: (1 << 47) - 1,
//!     gpu_id: 0x1234,
//!     pad: 0,
//! }];
//! let gpus: Vec<GpuApertures> = reported_gpus(&reply, 1).collect();
//! assert_eq!(gpus.len(), 1);
//! let plan = SvmPlan::new(gpus.iter().map(|g| g.svm_gpu(0x740f, false)), false, None)?.unwrap();
//! // A 47-bit GPU: slab mode from 2 MiB up.
//! assert_eq!(plan.slab_window(), Some((2 << 20, (1 << 47) - 1)));
//! // The fallback when no slab can be reserved: the first 1 TiB.
//! assert_eq!(plan.reserved_window()?, (2 << 20, SVM_RESERVATION_LIMIT));
//! # Ok::<(), hsakmt_core::memory::Error>(())
//! ```

use crate::memory::{Error, PAGE_SIZE};
use crate::uapi::kfd_process_device_apertures;

use super::{
    ApertureKind, ReportedAperture, SVM_MIN_VM_SIZE, SVM_RESERVATION_LIMIT, SvmBounds, SvmWindow,
    is_canonical, svm_alignment_order, svm_bounds, svm_window,
};

/// One GPU's apertures from a `GET_PROCESS_APERTURES_NEW` reply
/// (`kfd_process_device_apertures`), as `(base, limit)` pairs with inclusive limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GpuApertures {
    /// The GPU (KFD gpu_id, never 0).
    pub gpu_id: u32,
    /// The LDS aperture.
    pub lds: (u64, u64),
    /// The scratch (private) aperture.
    pub scratch: (u64, u64),
    /// The GPUVM aperture: the virtual addresses the GPU can reach.
    pub gpuvm: (u64, u64),
}

impl GpuApertures {
    /// The apertures of one entry of the reply, as the kernel wrote them.
    #[must_use]
    pub const fn from_kernel(a: &kfd_process_device_apertures) -> Self {
        Self {
            gpu_id: a.gpu_id,
            lds: (a.lds_base, a.lds_limit),
            scratch: (a.scratch_base, a.scratch_limit),
            gpuvm: (a.gpuvm_base, a.gpuvm_limit),
        }
    }

    /// Whether the GPU's GPUVM aperture is canonical, so that it shares the SVM apertures
    /// (see [`is_canonical`]); old APUs report a non-canonical one.
    #[must_use]
    pub const fn svm_capable(&self) -> bool {
        is_canonical(self.gpuvm.1)
    }

    /// The LDS, scratch and GPUVM apertures of node `node`, as reported heaps.
    #[must_use]
    pub const fn reported(&self, node: u32) -> [ReportedAperture; 3] {
        [
            ReportedAperture {
                kind: ApertureKind::Lds { node },
                base: self.lds.0,
                limit: self.lds.1,
            },
            ReportedAperture {
                kind: ApertureKind::Scratch { node },
                base: self.scratch.0,
                limit: self.scratch.1,
            },
            ReportedAperture {
                kind: ApertureKind::GpuVm { node },
                base: self.gpuvm.0,
                limit: self.gpuvm.1,
            },
        ]
    }

    /// The ranges the `NoAddress` handle window must avoid (see [`mem_handle_window`]).
    ///
    /// [`mem_handle_window`]: super::mem_handle_window
    #[must_use]
    pub const fn occupied(&self) -> [(u64, u64); 3] {
        [self.lds, self.scratch, self.gpuvm]
    }

    /// The facts [`SvmPlan::new`] needs about this GPU, given its PCI device id and whether it
    /// is a gfx 9.5.0 part (both from the topology).
    #[must_use]
    pub const fn svm_gpu(&self, device_id: u32, gfx950: bool) -> SvmGpu {
        SvmGpu { gpuvm_base: self.gpuvm.0, gpuvm_limit: self.gpuvm.1, device_id, gfx950 }
    }
}

/// The usable entries of a `GET_PROCESS_APERTURES_NEW` reply: the first `num_of_nodes` entries
/// (clamped to the array), without entries whose `gpu_id` is 0, each `gpu_id` once (its first
/// entry; the kernel never repeats a GPU, a repeated one is ignored rather than acquired
/// twice). Matching them to topology nodes is the caller's business.
pub fn reported_gpus(
    apertures: &[kfd_process_device_apertures],
    num_of_nodes: u32,
) -> impl Iterator<Item = GpuApertures> + Clone + '_ {
    let n = usize::try_from(num_of_nodes).unwrap_or(usize::MAX).min(apertures.len());
    let reported = apertures.get(..n).unwrap_or_default();
    reported.iter().enumerate().filter_map(move |(i, a)| {
        let earlier = reported.get(..i).unwrap_or_default();
        let first = a.gpu_id != 0 && !earlier.iter().any(|e| e.gpu_id == a.gpu_id);
        first.then(|| GpuApertures::from_kernel(a))
    })
}

/// What [`SvmPlan::new`] needs to know about one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SvmGpu {
    /// First address of its GPUVM aperture.
    pub gpuvm_base: u64,
    /// Last address of its GPUVM aperture.
    pub gpuvm_limit: u64,
    /// PCI device id (selects the VM alignment, see [`vm_alignment`](super::vm_alignment)).
    pub device_id: u32,
    /// gfx 9.5.0 (raises the default alignment order when every GPU is one).
    pub gfx950: bool,
}

/// How the SVM apertures are set up (`init_svm_apertures`), before any address space is
/// reserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SvmPlan {
    /// The window shared by every canonical GPU.
    pub bounds: SvmBounds,
    /// The window and mode libhsakmt chooses for it.
    pub window: SvmWindow,
    /// Minimum alignment of SVM allocations: the largest VM alignment, at least a page.
    pub align: u64,
    /// Maximum VA alignment order of slab mode (see [`svm_alignment_order`]).
    pub alignment_order: u32,
}

impl SvmPlan {
    /// Plans the SVM apertures of the GPUs `gpus` (every GPU of the reply): `reserve_svm` is
    /// `HSA_RESERVE_SVM`, `max_va_align` `HSA_MAX_VA_ALIGN`. `Ok(None)` when no GPU has a
    /// canonical GPUVM aperture (no SVM).
    ///
    /// # Errors
    /// The errors of [`svm_window`]: [`Error::OutOfSpace`] when the GPUs share no window,
    /// [`Error::SizeOverflow`].
    pub fn new(
        gpus: impl IntoIterator<Item = SvmGpu> + Clone,
        reserve_svm: bool,
        max_va_align: Option<u32>,
    ) -> Result<Option<Self>, Error> {
        let Some(bounds) = svm_bounds(
            gpus.clone().into_iter().map(|g| (g.gpuvm_base, g.gpuvm_limit, g.device_id)),
        ) else {
            return Ok(None);
        };
        let mut any = false;
        let mut all_gfx950 = true;
        for g in gpus {
            any = true;
            all_gfx950 &= g.gfx950;
        }
        let window = svm_window(bounds, reserve_svm)?;
        Ok(Some(Self {
            bounds,
            window,
            align: bounds.align.max(PAGE_SIZE),
            alignment_order: svm_alignment_order(any && all_gfx950, max_va_align),
        }))
    }

    /// The window of slab ("mmap aperture") mode, when it is tried: a [`SvmWindow::Slabs`]
    /// window and page-sized VM alignment (slabs come from the kernel at page alignment).
    #[must_use]
    pub const fn slab_window(&self) -> Option<(u64, u64)> {
        match self.window {
            SvmWindow::Slabs { base, limit } if self.align <= PAGE_SIZE => Some((base, limit)),
            _ => None,
        }
    }

    /// The window of reserved mode `(base, limit)`: the [`SvmWindow::Reserve`] window, or —
    /// for a [`SvmWindow::Slabs`] window, when slab mode is not tried or fails ("Falling back
    /// to reserved SVM apertures") — the slab window with its limit clamped to
    /// [`SVM_RESERVATION_LIMIT`].
    ///
    /// # Errors
    /// [`Error::OutOfSpace`] when the clamp leaves no window (a slab window starting above
    /// [`SVM_RESERVATION_LIMIT`]: "No SVM range compatible with all GPU and software
    /// constraints").
    pub fn reserved_window(&self) -> Result<(u64, u64), Error> {
        let (base, limit) = match self.window {
            SvmWindow::Reserve { base, limit } => (base, limit),
            SvmWindow::Slabs { base, limit } => (base, limit.min(SVM_RESERVATION_LIMIT)),
        };
        if base >= limit {
            return Err(Error::OutOfSpace { needed: SVM_MIN_VM_SIZE });
        }
        Ok((base, limit))
    }
}

/// The reservations reserved mode tries over the window `[base, limit]`, in order, as
/// `(len, size)`: `len` starts at the window's length and halves (rounding up) while it is at
/// least [`SVM_MIN_VM_SIZE`]; `size` is `len` rounded down to pages, the bytes to reserve
/// (hinted at `base`). None for an empty window (`limit < base`).
pub fn reservation_attempts(base: u64, limit: u64) -> impl Iterator<Item = (u64, u64)> + Clone {
    let first = limit.checked_sub(base).map(|d| d.saturating_add(1));
    core::iter::successors(first, |&len| Some(len.div_ceil(2)).filter(|&l| l < len))
        .take_while(|&len| len >= SVM_MIN_VM_SIZE)
        .map(|len| (len, len & !(PAGE_SIZE - 1)))
}

/// Judges a reservation the platform made for attempt `(len, size)` of
/// [`reservation_attempts`] over the window `[base, limit]`, placed at `got`: accepted when it
/// starts inside the window and at least half of `len` and at least [`SVM_MIN_VM_SIZE`] bytes
/// are GPU addressable (libhsakmt: "At least half the returned address space is GPU
/// addressable, we'll take it"). Returns the bytes to keep from `got` on — the tail beyond
/// `limit` is to be released — or `None` to release all of it and try the next attempt.
///
/// libhsakmt checks only the end: a reservation the kernel placed below the hint (below the
/// GPUs' GPUVM base) would be taken although the GPUs cannot address its start.
#[must_use]
pub const fn accept_reservation(
    base: u64,
    limit: u64,
    len: u64,
    got: u64,
    size: u64,
) -> Option<u64> {
    if got < base {
        return None;
    }
    let half = got.saturating_add(len.div_ceil(2)).saturating_sub(1);
    let min_end = got.saturating_add(SVM_MIN_VM_SIZE - 1);
    if half > limit || min_end > limit {
        return None;
    }
    let end = got.saturating_add(size.saturating_sub(1));
    // `got <= half <= limit` here.
    Some(if end > limit { limit.saturating_sub(got).saturating_add(1) } else { size })
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::memory::aperture::NON_CANONICAL_START;
    use std::vec::Vec;

    fn gpu(gpuvm_base: u64, gpuvm_limit: u64) -> SvmGpu {
        SvmGpu { gpuvm_base, gpuvm_limit, device_id: 0x740f, gfx950: false }
    }

    fn reply(gpu_id: u32, gpuvm_limit: u64) -> kfd_process_device_apertures {
        kfd_process_device_apertures {
            gpuvm_base: 0x1_0000,
            gpuvm_limit,
            gpu_id,
            ..Default::default()
        }
    }

    #[test]
    fn usable_entries() {
        let r = [reply(7, 1), reply(0, 2), reply(7, 3), reply(9, 4), reply(11, 5)];
        let ids: Vec<_> = reported_gpus(&r, 4).map(|g| (g.gpu_id, g.gpuvm.1)).collect();
        assert_eq!(ids, [(7, 1), (9, 4)]);
        assert_eq!(reported_gpus(&r, u32::MAX).count(), 3);
        assert_eq!(reported_gpus(&r, 0).count(), 0);
        assert_eq!(reported_gpus(&[], 5).count(), 0);
    }

    #[test]
    fn no_canonical_gpu_means_no_svm() {
        let old_apu = gpu(1 << 60, u64::MAX);
        assert_eq!(SvmPlan::new([old_apu], false, None), Ok(None));
        assert_eq!(SvmPlan::new(core::iter::empty(), false, None), Ok(None));
    }

    #[test]
    fn slab_mode_and_its_fallback() {
        let plan =
            SvmPlan::new([gpu(0x1_0000, NON_CANONICAL_START - 1)], false, None).unwrap().unwrap();
        assert_eq!(plan.slab_window(), Some((2 << 20, NON_CANONICAL_START - 1)));
        assert_eq!(plan.reserved_window(), Ok((2 << 20, SVM_RESERVATION_LIMIT)));
        let reserved =
            SvmPlan::new([gpu(0x1_0000, NON_CANONICAL_START - 1)], true, None).unwrap().unwrap();
        assert_eq!(reserved.slab_window(), None);
        assert_eq!(reserved.reserved_window(), Ok((2 << 20, SVM_RESERVATION_LIMIT)));
    }

    /// Fuzzing finding (target `apertures`): a 47-bit GPU whose GPUVM aperture starts above
    /// 1 TiB gets a slab window; when slab mode fails, the fallback clamped the window's limit
    /// to 1 TiB below its base, and the reservation loop computed `limit - base + 1` (overflow
    /// panic in debug builds, absurd sizes in release ones). libhsakmt refuses such a window.
    #[test]
    fn fallback_window_above_the_reservation_limit_is_refused() {
        let plan =
            SvmPlan::new([gpu(2 << 40, NON_CANONICAL_START - 1)], false, None).unwrap().unwrap();
        assert_eq!(plan.slab_window(), Some((2 << 40, NON_CANONICAL_START - 1)));
        assert_eq!(plan.reserved_window(), Err(Error::OutOfSpace { needed: SVM_MIN_VM_SIZE }));
        assert_eq!(reservation_attempts(2 << 40, SVM_RESERVATION_LIMIT).count(), 0);
        // A VM alignment above a page skips slab mode: the same refusal.
        let tonga = SvmGpu { device_id: 0x6920, ..gpu(2 << 40, NON_CANONICAL_START - 1) };
        let plan = SvmPlan::new([tonga], false, None).unwrap().unwrap();
        assert_eq!(plan.slab_window(), None);
        assert!(plan.reserved_window().is_err());
    }

    #[test]
    fn attempts_halve_down_to_the_minimum() {
        let a: Vec<_> = reservation_attempts(2 << 20, SVM_RESERVATION_LIMIT).collect();
        let first = SVM_RESERVATION_LIMIT - (2 << 20) + 1;
        assert_eq!(a[0], (first, first & !(PAGE_SIZE - 1)));
        assert!(a.windows(2).all(|w| w[1].0 == w[0].0.div_ceil(2)));
        assert!(a.iter().all(|&(len, _)| len >= SVM_MIN_VM_SIZE));
        assert!(a.last().unwrap().0 < 2 * SVM_MIN_VM_SIZE);
        assert_eq!(reservation_attempts(0, SVM_MIN_VM_SIZE - 2).count(), 0);
    }

    #[test]
    fn accepted_reservations() {
        let (base, limit) = (2 << 20, SVM_RESERVATION_LIMIT);
        let len = limit - base + 1;
        let size = len & !(PAGE_SIZE - 1);
        assert_eq!(accept_reservation(base, limit, len, base, size), Some(size));
        // Half addressable: kept up to the limit.
        let got = base + (len >> 2);
        assert_eq!(accept_reservation(base, limit, len, got, size), Some(limit + 1 - got));
        // Less than half: refused.
        assert_eq!(accept_reservation(base, limit, len, limit - 100, size), None);
    }

    /// Fuzzing finding (target `apertures`): a reservation the platform placed below the
    /// hint — below the GPUs' GPUVM base, at 0 in the finding — was accepted, since only its
    /// end was checked: SVM memory whose start no GPU can address.
    #[test]
    fn reservation_below_the_window_is_refused() {
        let (base, limit) = (2 << 20, SVM_RESERVATION_LIMIT);
        let len = limit - base + 1;
        let size = len & !(PAGE_SIZE - 1);
        assert_eq!(accept_reservation(base, limit, len, 0, size), None);
        assert_eq!(accept_reservation(base, limit, len, base - PAGE_SIZE, size), None);
        assert_eq!(accept_reservation(base, limit, len, base, size), Some(size));
    }
}
