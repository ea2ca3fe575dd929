//! Apertures: libhsakmt's observable placement rules (`fmm.c`) on top of [`VaAllocator`].
//!
//! An aperture is a window of the GPU virtual address space with its own allocator and its own
//! rules. This module holds:
//! - [`Aperture`]: the allocatable apertures (SVM default / coherent, per-GPU GPUVM of old APUs,
//!   the `NoAddress` handle window, a GPU's scratch backing range), applying libhsakmt's
//!   alignment growth, end alignment, guard pages and fixed-address rules
//!   ([`plan_allocation`]);
//! - [`ReportedAperture`]: LDS, scratch and MMIO apertures, which are only reported (as heaps),
//!   never allocated from;
//! - pure helpers that compute the SVM layout ([`SvmLayout`], [`svm_bounds`], [`svm_window`]),
//!   the handle window ([`mem_handle_window`]) and the per-device constants;
//! - [`choose_placement`]: which aperture and memory kind an `hsaKmtAllocMemoryAlign` request
//!   goes to;
//! - the steps from the kernel's `GET_PROCESS_APERTURES_NEW` reply to the SVM apertures
//!   ([`reported_gpus`], [`SvmPlan`], [`reservation_attempts`], [`accept_reservation`]).
//!
//! The aperture itself lives here; `svm_layout` holds the layout helpers, `placement` the
//! choice of aperture, `process` the steps from the kernel's reply to the SVM plan.
//!
//! # The two SVM modes
//! libhsakmt (`init_svm_apertures`) distinguishes:
//! - **"mmap aperture"** mode — every GPU has ≥ 47-bit GPUVM and `HSA_RESERVE_SVM` is unset: one
//!   aperture serves coarse- and fine-grained memory (`dgpu_aperture == dgpu_alt_aperture`);
//!   libhsakmt asks the kernel for each allocation's VA with `mmap(PROT_NONE)` (three syscalls
//!   per allocation, two per free). Here the aperture is instead grown by **kernel-chosen reserved
//!   slabs** ([`VaSource::Slabs`], [`Aperture::add_slab`]): a platform reserves a large range
//!   once, the allocator hands out addresses from it, and an allocation or free costs no syscall.
//!   When a slab runs out, [`Error::OutOfSpace`] says how much is needed; the caller reserves
//!   another slab and retries.
//! - **reserved** mode — otherwise: up to 1 TiB is reserved once; its first quarter (64 KiB
//!   aligned) becomes the coherent ("alt") aperture and the rest the default aperture, both
//!   managed in user space ([`SvmLayout::reserved`]).
//!
//! # Rules and their origin
//! | Rule | libhsakmt origin |
//! |---|---|
//! | default alignment: the requested one, else the aperture's | `aperture_allocate_area_aligned` |
//! | reserved apertures: alignment at least the aperture's, doubled while `size ≥ 2·align`, up to 2 MiB | `reserved_aperture_allocate_aligned` |
//! | no alignment requested (≤ 1 page): the buffer's *end* is aligned: `offset = align − size % align` | `reserved_aperture_allocate_aligned` |
//! | guard pages after each allocation (default 1, `HSA_SVM_GUARD_PAGES`) | `vm_align_area_size` |
//! | fixed address: exactly there or failure | `reserved_aperture_allocate_aligned`, `mmap_aperture_allocate_aligned` (`MAP_FIXED_NOREPLACE`) |
//! | slab (mmap) apertures: alignment doubled while `size ≥ 2·align`, up to `PAGE_SIZE << order` (order 9 = 2 MiB; 18 = 1 GiB when all GPUs are GFX950; `HSA_MAX_VA_ALIGN`); no end alignment | `mmap_aperture_allocate_aligned`, `hsakmt_fmm_init_process_apertures` |
//! | SVM window: GPUVM base/limit of all canonical GPUs, trimmed to 2 MiB, reserved part ≤ 1 TiB | `init_svm_apertures` |
//! | coherent aperture = first quarter of the reservation, 64 KiB aligned | `init_svm_apertures` |
//! | old-APU GPUVM aperture: first `align` bytes burned so no VA equals its base | `hsakmt_fmm_init_process_apertures` |
//! | 32 KiB VM alignment on Tonga / Carrizo | `get_vm_alignment` |
//! | `NoAddress` handle window: 2^47 bytes above the canonical range, avoiding LDS/scratch/GPUVM | `init_mem_handle_aperture` |
//! | scratch backing: one 64 KiB-aligned range per GPU carved from the SVM aperture | `hsakmt_fmm_allocate_scratch` |
//!
//! Deliberate differences: libhsakmt's first-fit places an end-aligned buffer whose size is a
//! multiple of the alignment one full alignment unit after the previous area (its
//! `offset == align`); only the address residue is kept here, not that gap. In slab mode a
//! trailing guard range is kept reserved (libhsakmt's mmap path pads both sides for alignment
//! and then unmaps the padding, so its guards are not protected). Fixed-address requests also
//! carry the trailing guard.

//!
//! # Example
//! ```
//! use hsakmt_core::memory::aperture::*;
//! use hsakmt_core::memory::{Error, MemFlags, va::VaSlot};
//!
//! // Reserved mode: a 1 TiB reservation split into the coherent and default apertures.
//! let layout = SvmLayout::reserved(0x7f00_0000_0000, 1 << 40, 4096, DEFAULT_GUARD_PAGES)?;
//! let mut coarse = InlineAperture::<256>::new(*layout.default_aperture(), [VaSlot::EMPTY; 256])?;
//!
//! // Where does a coarse-grained VRAM request of 3 MiB go?
//! let req = AllocRequest {
//!     size: 3 << 20,
//!     align: 0,
//!     flags: MemFlags::NON_PAGED | MemFlags::COARSE_GRAIN,
//!     fixed_address: None,
//!     node: PreferredNode::Gpu { svm_needed: true },
//! };
//! let p = choose_placement(&req, &PlacementPolicy::DGPU)?;
//! assert_eq!(p.aperture, ApertureRole::SvmDefault);
//!
//! // 3 MiB grows to 2 MiB alignment; with no explicit alignment, the *end* is 2 MiB aligned.
//! let a = coarse.allocate(p.va_size, p.align, p.fixed_address)?;
//! assert_eq!((a.addr + a.size) % (2 << 20), 0);
//! assert_eq!(coarse.release_allocation(a)?, 3 << 20);
//! # Ok::<(), Error>(())
//! ```

use super::va::{VaAllocator, VaBlock, VaSlot};
use super::{Error, GPU_HUGE_PAGE_SIZE, PAGE_SIZE, Violation, align_up};

mod placement;
mod process;
mod svm_layout;

pub use placement::{
    AllocRequest, ApertureRole, Placement, PlacementPolicy, PreferredNode, choose_placement,
};
pub use process::{
    GpuApertures, SvmGpu, SvmPlan, accept_reservation, reported_gpus, reservation_attempts,
};
pub use svm_layout::{
    SvmBounds, SvmLayout, SvmWindow, guard_pages_from_env, is_canonical, kfd_buffer_count,
    mem_handle_window, scratch_backing_size, svm_alignment_order, svm_bounds, svm_needed,
    svm_window, vm_alignment,
};

/// Guard pages after each allocation unless `HSA_SVM_GUARD_PAGES` says otherwise.
pub const DEFAULT_GUARD_PAGES: u32 = 1;
/// The largest SVM range libhsakmt reserves in reserved mode (`SVM_RESERVATION_LIMIT`, the
/// 40-bit GFX8 limit): the last usable address.
pub const SVM_RESERVATION_LIMIT: u64 = (1 << 40) - 1;
/// The smallest SVM reservation libhsakmt accepts (`SVM_MIN_VM_SIZE`, 4 GiB).
pub const SVM_MIN_VM_SIZE: u64 = 4 << 30;
/// Alignment of the coherent aperture's base and size in reserved mode.
pub const SVM_ALT_ALIGN: u64 = 64 << 10;
/// Alignment and size granule of a GPU's scratch backing range (`SCRATCH_ALIGN`).
pub const SCRATCH_ALIGN: u64 = 64 << 10;
/// First non-canonical address (`START_NON_CANONICAL_ADDR`, 2^47).
pub const NON_CANONICAL_START: u64 = 1 << 47;
/// End of the non-canonical hole (`END_NON_CANONICAL_ADDR`).
pub const NON_CANONICAL_END: u64 = !0 - (1 << 47);
/// Size of the `NoAddress` handle window (2^47 bytes).
pub const MEM_HANDLE_APERTURE_SIZE: u64 = 1 << 47;
/// Largest single KFD buffer libhsakmt creates; bigger userptr ranges are split into several
/// BOs (`BIGGEST_SINGLE_BUF_SIZE`, 512 GiB − 2 MiB).
pub const BIGGEST_SINGLE_BUF_SIZE: u64 = (1 << 39) - GPU_HUGE_PAGE_SIZE;
/// VM alignment of Tonga and Carrizo GPUs (`TONGA_PAGE_SIZE`, 32 KiB).
pub const TONGA_PAGE_SIZE: u64 = 0x8000;
/// Default maximum VA alignment order of slab apertures (`PAGE_SIZE << 9` = 2 MiB).
pub const DEFAULT_ALIGNMENT_ORDER: u32 = 9;
/// Maximum VA alignment order when every GPU is GFX950 (`PAGE_SIZE << 18` = 1 GiB).
pub const GFX950_ALIGNMENT_ORDER: u32 = 18;
/// Last address of the CPU VM aperture of APUs (2^47 − 1).
pub const CPUVM_LIMIT: u64 = (1 << 47) - 1;

/// What an aperture is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ApertureKind {
    /// The default, non-coherent SVM aperture (`svm.dgpu_aperture`): VRAM and coarse-grained
    /// host memory. In slab (mmap) mode it also serves fine-grained memory.
    SvmDefault,
    /// The coherent ("alternate") SVM aperture of reserved mode (`svm.dgpu_alt_aperture`):
    /// fine-grained host memory, doorbells, the MMIO remap page.
    SvmCoherent,
    /// The per-GPU GPUVM aperture of old APUs with non-canonical GPUVM (`gpuvm_aperture`).
    GpuVm {
        /// Topology node id of the GPU.
        node: u32,
    },
    /// The 2^47-byte non-canonical window whose addresses serve only as handles of `NoAddress`
    /// (VRAM without a virtual address) allocations (`mem_handle_aperture`).
    MemHandle,
    /// A GPU's scratch backing range, carved from the SVM aperture (`scratch_physical`).
    ScratchBacking {
        /// Topology node id of the GPU.
        node: u32,
    },
    /// A GPU's LDS aperture: reported only.
    Lds {
        /// Topology node id of the GPU.
        node: u32,
    },
    /// A GPU's scratch (private) aperture: reported only.
    Scratch {
        /// Topology node id of the GPU.
        node: u32,
    },
    /// A GPU's MMIO remap (HDP flush) page: reported only (`HSA_HEAPTYPE_MMIO_REMAP`).
    Mmio {
        /// Topology node id of the GPU.
        node: u32,
    },
}

impl ApertureKind {
    /// Whether the aperture is only reported, never allocated from.
    #[must_use]
    pub const fn is_reported_only(self) -> bool {
        matches!(self, Self::Lds { .. } | Self::Scratch { .. } | Self::Mmio { .. })
    }
}

/// Where an aperture's address space comes from, which selects its placement rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum VaSource {
    /// The whole window `[base, limit]` is reserved up front and managed in user space
    /// (libhsakmt `reserved_aperture_ops`).
    Reserved,
    /// The window is filled by kernel-chosen reserved slabs added at run time
    /// ([`Aperture::add_slab`]); placement follows libhsakmt's `mmap_aperture_ops` rules.
    Slabs {
        /// Maximum VA alignment order: alignments grow up to `PAGE_SIZE << alignment_order`
        /// ([`DEFAULT_ALIGNMENT_ORDER`], [`GFX950_ALIGNMENT_ORDER`], `HSA_MAX_VA_ALIGN`).
        alignment_order: u32,
    },
}

/// The parameters of an allocatable aperture (libhsakmt's `manageable_aperture_t`, minus the
/// allocator state).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ApertureConfig {
    /// What the aperture is for.
    pub kind: ApertureKind,
    /// First address.
    pub base: u64,
    /// Last address (inclusive, as in libhsakmt).
    pub limit: u64,
    /// Minimum alignment of every allocation (`align`; 0 means one page).
    pub align: u64,
    /// Guard pages reserved after every allocation (`guard_pages`).
    pub guard_pages: u32,
    /// Where the address space comes from.
    pub source: VaSource,
}

impl ApertureConfig {
    /// A reserved aperture `[base, limit]` with page alignment and the default guard page.
    #[must_use]
    pub const fn reserved(kind: ApertureKind, base: u64, limit: u64) -> Self {
        Self {
            kind,
            base,
            limit,
            align: PAGE_SIZE,
            guard_pages: DEFAULT_GUARD_PAGES,
            source: VaSource::Reserved,
        }
    }

    /// A slab aperture over the window `[base, limit]` with the default alignment order and
    /// guard page.
    #[must_use]
    pub const fn slabs(kind: ApertureKind, base: u64, limit: u64) -> Self {
        Self {
            kind,
            base,
            limit,
            align: PAGE_SIZE,
            guard_pages: DEFAULT_GUARD_PAGES,
            source: VaSource::Slabs { alignment_order: DEFAULT_ALIGNMENT_ORDER },
        }
    }

    /// This configuration with another minimum alignment.
    #[must_use]
    pub const fn with_align(self, align: u64) -> Self {
        Self { align, ..self }
    }

    /// This configuration with another number of guard pages.
    #[must_use]
    pub const fn with_guard_pages(self, guard_pages: u32) -> Self {
        Self { guard_pages, ..self }
    }

    /// Whether `addr` lies in the window.
    #[must_use]
    pub const fn contains(&self, addr: u64) -> bool {
        self.base <= addr && addr <= self.limit
    }

    /// Bytes of guard after each allocation.
    #[must_use]
    pub const fn guard_bytes(&self) -> u64 {
        // A 32-bit page count times 4 KiB fits 64 bits.
        (self.guard_pages as u64).saturating_mul(PAGE_SIZE)
    }

    /// The aperture's minimum alignment (at least a page).
    #[must_use]
    pub const fn min_align(&self) -> u64 {
        if self.align < PAGE_SIZE { PAGE_SIZE } else { self.align }
    }
}

/// How one request is placed in an aperture: the outcome of libhsakmt's alignment rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AllocationPlan {
    /// The buffer size (rounded up to pages).
    pub size: u64,
    /// The effective alignment.
    pub align: u64,
    /// Required start residue: `start % align == phase` (non-zero for end alignment).
    pub phase: u64,
    /// Bytes reserved: `size` plus guard pages.
    pub reserved: u64,
}

/// Computes the placement of a `size`-byte request in an aperture configured by `config`.
///
/// `requested_align` is the caller's explicit alignment (`None` or `Some(0)`: none); it must be a
/// power of two.
///
/// Reserved apertures (`reserved_aperture_allocate_aligned`): the alignment starts at the
/// requested one, else the aperture's; it is raised to the aperture's minimum and doubled while
/// `size ≥ 2·align` up to 2 MiB ([`GPU_HUGE_PAGE_SIZE`]); if the starting alignment was at most
/// a page, the *end* of the buffer is aligned (`phase = align − size % align`, reduced modulo
/// `align`). Slab apertures (`mmap_aperture_allocate_aligned`): the starting alignment doubles
/// while `size ≥ 2·align` up to `PAGE_SIZE << alignment_order`; no end alignment. Both reserve
/// the guard pages after the buffer.
///
/// # Errors
/// [`Error::ZeroSize`], [`Error::SizeOverflow`], [`Error::BadAlignment`] for an alignment that is
/// not a power of two.
pub fn plan_allocation(
    config: &ApertureConfig,
    size: u64,
    requested_align: Option<u64>,
) -> Result<AllocationPlan, Error> {
    if size == 0 {
        return Err(Error::ZeroSize);
    }
    let size = align_up(size, PAGE_SIZE).ok_or(Error::SizeOverflow)?;
    let requested = requested_align.unwrap_or(0);
    if requested != 0 && !requested.is_power_of_two() {
        return Err(Error::BadAlignment { align: requested });
    }
    let aperture_align = config.min_align();
    if !aperture_align.is_power_of_two() {
        return Err(Error::BadAlignment { align: aperture_align });
    }
    // aperture_allocate_area_aligned: `align ? align : app->align`.
    let orig_align = if requested != 0 { requested } else { aperture_align };
    let (align, phase) = match config.source {
        VaSource::Reserved => {
            let mut align = orig_align.max(aperture_align);
            while align < GPU_HUGE_PAGE_SIZE && size >= align << 1 {
                align <<= 1;
            }
            let phase = if orig_align <= PAGE_SIZE {
                // `align` is a power of two: the distance to the next multiple, modulo `align`.
                align.wrapping_sub(size & align.wrapping_sub(1)) & align.wrapping_sub(1)
            } else {
                0
            };
            (align, phase)
        }
        VaSource::Slabs { alignment_order } => {
            let max = PAGE_SIZE.checked_shl(alignment_order).unwrap_or(1 << 63);
            let mut align = orig_align.max(PAGE_SIZE);
            while align < max && size >= align << 1 {
                align <<= 1;
            }
            (align, 0)
        }
    };
    let reserved = size.checked_add(config.guard_bytes()).ok_or(Error::SizeOverflow)?;
    Ok(AllocationPlan { size, align, phase, reserved })
}

/// One allocation made by [`Aperture::allocate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ApertureAllocation {
    /// First address of the buffer.
    pub addr: u64,
    /// Size of the buffer (rounded up to pages), without guard pages.
    pub size: u64,
    /// The underlying allocator block (buffer plus guard pages), for
    /// [`Aperture::release_allocation`].
    pub block: VaBlock,
}

/// An allocatable aperture: an [`ApertureConfig`] and the [`VaAllocator`] of its address space,
/// over descriptor storage `S` (see [`VaAllocator`]).
///
/// # Invariants
/// Every allocation lies in `[base, limit]`, inside a range the aperture manages (the whole
/// window for reserved apertures, the added slabs for slab apertures), and is followed by its
/// guard pages, which belong to the same allocator block.
#[derive(Debug)]
pub struct Aperture<S> {
    config: ApertureConfig,
    va: VaAllocator<S>,
}

/// An [`Aperture`] with `N` inline descriptors.
pub type InlineAperture<const N: usize> = Aperture<[VaSlot; N]>;

impl<S> Aperture<S> {
    /// An aperture that is not yet initialised (no address space): call [`Aperture::init`]
    /// before use. `const`, so it can build a `static`.
    pub const fn with_storage(config: ApertureConfig, slots: S) -> Self {
        Self { config, va: VaAllocator::with_storage(slots) }
    }

    /// As [`Aperture::with_storage`], over an allocator without an address index
    /// ([`VaAllocator::unindexed`]): for an owner that releases by allocation
    /// ([`Aperture::release_allocation`]) and gives fixed-address requests an allocation below
    /// the address ([`Aperture::allocate_near`]); [`Aperture::release`] and
    /// [`Aperture::allocation_containing`] then walk the range's blocks.
    pub const fn unindexed(config: ApertureConfig, slots: S) -> Self {
        Self { config, va: VaAllocator::unindexed(slots) }
    }

    /// The configuration.
    #[must_use]
    pub const fn config(&self) -> &ApertureConfig {
        &self.config
    }

    /// The kind.
    #[must_use]
    pub const fn kind(&self) -> ApertureKind {
        self.config.kind
    }

    /// First address of the window.
    #[must_use]
    pub const fn base(&self) -> u64 {
        self.config.base
    }

    /// Last address of the window (inclusive).
    #[must_use]
    pub const fn limit(&self) -> u64 {
        self.config.limit
    }

    /// Whether `addr` lies in the window.
    #[must_use]
    pub const fn contains(&self, addr: u64) -> bool {
        self.config.contains(addr)
    }

    /// The underlying allocator (for queries: free/used bytes, live count, ranges).
    #[must_use]
    pub const fn va(&self) -> &VaAllocator<S> {
        &self.va
    }
}

impl<S: AsRef<[VaSlot]> + AsMut<[VaSlot]>> Aperture<S> {
    /// An initialised aperture (see [`Aperture::init`]).
    ///
    /// # Errors
    /// As [`Aperture::init`].
    pub fn new(config: ApertureConfig, slots: S) -> Result<Self, Error> {
        let mut a = Self::with_storage(config, slots);
        a.init()?;
        Ok(a)
    }

    /// (Re)initialises the aperture: forgets every allocation; a reserved aperture then manages
    /// its whole window, a slab aperture has no address space until [`Aperture::add_slab`]; a
    /// GPUVM aperture burns its first `align` bytes so that no VA equals its base
    /// (libhsakmt: "after subtracting the base, we don't want valid pointers to become NULL").
    ///
    /// # Errors
    /// [`Error::ReportedOnly`] for LDS / scratch / MMIO kinds; [`Error::OutsideRange`] when
    /// `limit < base`; [`Error::SizeOverflow`] for a window of 2^64 bytes;
    /// [`Error::Misaligned`] when the window is not page aligned; [`Error::BadAlignment`];
    /// [`Error::CapacityExhausted`] when the storage is too small for the initial blocks.
    pub fn init(&mut self) -> Result<(), Error> {
        let c = self.config;
        if c.kind.is_reported_only() {
            return Err(Error::ReportedOnly);
        }
        if c.limit < c.base {
            return Err(Error::OutsideRange { addr: c.limit });
        }
        if !c.min_align().is_power_of_two() {
            return Err(Error::BadAlignment { align: c.align });
        }
        let size = c.limit.saturating_sub(c.base).checked_add(1).ok_or(Error::SizeOverflow)?;
        self.va.reset();
        if c.source == VaSource::Reserved {
            self.va.add_range(c.base, size)?;
            if let ApertureKind::GpuVm { .. } = c.kind {
                self.va.alloc_at(c.base, c.min_align())?;
            }
        }
        Ok(())
    }

    /// Replaces the configuration and re-initialises the aperture over the same storage (see
    /// [`Aperture::init`]); every allocation is forgotten.
    ///
    /// # Errors
    /// As [`Aperture::init`]; the new configuration is kept even then, with no address space.
    pub fn reconfigure(&mut self, config: ApertureConfig) -> Result<(), Error> {
        self.config = config;
        self.init()
    }

    /// Adds a reserved slab `[base, base + size)` to a slab aperture.
    ///
    /// # Errors
    /// [`Error::NotSupported`] for a reserved aperture; [`Error::OutsideRange`] when the slab is
    /// not inside the window; the errors of [`VaAllocator::add_range`].
    pub fn add_slab(&mut self, base: u64, size: u64) -> Result<(), Error> {
        if self.config.source == VaSource::Reserved {
            return Err(Error::NotSupported);
        }
        let last = base.checked_add(size.saturating_sub(1)).ok_or(Error::SizeOverflow)?;
        if !self.contains(base) || !self.contains(last) {
            return Err(Error::OutsideRange {
                addr: if self.contains(base) { last } else { base },
            });
        }
        self.va.add_range(base, size)
    }

    /// Allocates a buffer of `size` bytes following [`plan_allocation`]; with `fixed`, exactly at
    /// that address (libhsakmt `FixedAddress`: exact or failure).
    ///
    /// # Errors
    /// The errors of [`plan_allocation`]; for `fixed`: [`Error::Misaligned`] when not page
    /// aligned, [`Error::OutsideRange`] when outside the aperture's ranges,
    /// [`Error::AddressInUse`]; otherwise [`Error::OutOfSpace`] (carrying the bytes needed, for a
    /// slab aperture to reserve another slab) and [`Error::CapacityExhausted`].
    pub fn allocate(
        &mut self,
        size: u64,
        requested_align: Option<u64>,
        fixed: Option<u64>,
    ) -> Result<ApertureAllocation, Error> {
        self.allocate_near(size, requested_align, fixed, None)
    }

    /// As [`Aperture::allocate`], with, for a `fixed` address, an allocation of this aperture
    /// starting at or below it (`near`; see [`VaAllocator::alloc_at_near`]): an aperture
    /// without an address index finds the free block at `fixed` by walking up from there. Only
    /// a guess — the result never depends on it.
    ///
    /// # Errors
    /// As [`Aperture::allocate`].
    pub fn allocate_near(
        &mut self,
        size: u64,
        requested_align: Option<u64>,
        fixed: Option<u64>,
        near: Option<&ApertureAllocation>,
    ) -> Result<ApertureAllocation, Error> {
        let plan = plan_allocation(&self.config, size, requested_align)?;
        let block = match fixed {
            Some(addr) => {
                if !self.contains(addr) {
                    return Err(Error::OutsideRange { addr });
                }
                self.va.alloc_at_near(addr, plan.reserved, near.map(|a| a.block))?
            }
            None => self.va.alloc_with_phase(plan.reserved, plan.align, plan.phase)?,
        };
        Ok(ApertureAllocation { addr: block.addr, size: plan.size, block })
    }

    /// Releases the allocation starting at `addr`; returns the buffer size (guard pages
    /// excluded). The guard pages are released with it.
    ///
    /// # Errors
    /// [`Error::UnknownAddress`] when no allocation starts at `addr`.
    pub fn release(&mut self, addr: u64) -> Result<u64, Error> {
        let reserved = self.va.free(addr)?;
        Ok(reserved.saturating_sub(self.config.guard_bytes()))
    }

    /// Releases `alloc` without an address lookup; returns the buffer size.
    ///
    /// # Errors
    /// [`Error::UnknownAddress`] when it was already released.
    pub fn release_allocation(&mut self, alloc: ApertureAllocation) -> Result<u64, Error> {
        let reserved = self.va.free_block(alloc.block)?;
        Ok(reserved.saturating_sub(self.config.guard_bytes()))
    }

    /// The start addresses of the allocations nearest to `alloc` on either side in its range
    /// (see [`VaAllocator::neighbour_allocations`]; `O(1)`).
    #[must_use]
    pub fn neighbour_allocations(&self, alloc: &ApertureAllocation) -> [Option<u64>; 2] {
        self.va.neighbour_allocations(alloc.block)
    }

    /// Records the owner of `alloc` (see [`VaAllocator::set_owner`]); `false` when it is not
    /// live.
    pub fn set_owner(&mut self, alloc: &ApertureAllocation, owner: u32) -> bool {
        self.va.set_owner(alloc.block, owner)
    }

    /// The owners of the allocations nearest to `alloc` on either side in its range (see
    /// [`VaAllocator::neighbour_owners`]; `O(1)`).
    #[must_use]
    pub fn neighbour_owners(&self, alloc: &ApertureAllocation) -> [Option<u32>; 2] {
        self.va.neighbour_owners(alloc.block)
    }

    /// The allocation `(start, size without guard)` containing `addr` (guard pages count as
    /// part of their allocation).
    #[must_use]
    pub fn allocation_containing(&self, addr: u64) -> Option<(u64, u64)> {
        self.va
            .allocation_containing(addr)
            .map(|(start, len)| (start, len.saturating_sub(self.config.guard_bytes())))
    }

    /// Verifies the allocator's invariants and that every range lies in the window.
    ///
    /// # Errors
    /// The first [`Violation`] found.
    pub fn check_invariants(&self) -> Result<(), Violation> {
        self.va.check_invariants()?;
        for (base, size) in self.va.ranges() {
            if !self.contains(base) || !self.contains(base.saturating_add(size.saturating_sub(1))) {
                return Err(Violation::RangeTiling { slot: u32::MAX });
            }
        }
        Ok(())
    }
}

/// An aperture that is only reported (LDS, scratch, MMIO page), never allocated from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ReportedAperture {
    /// What it is.
    pub kind: ApertureKind,
    /// First address.
    pub base: u64,
    /// Last address (inclusive).
    pub limit: u64,
}

impl ReportedAperture {
    /// Whether the aperture is set (libhsakmt `aperture_is_valid`: non-zero base and limit,
    /// `base < limit`).
    #[must_use]
    pub const fn is_valid(&self) -> bool {
        self.base != 0 && self.limit != 0 && self.base < self.limit
    }

    /// Size in bytes (0 if invalid).
    #[must_use]
    pub const fn size(&self) -> u64 {
        // Valid: `base < limit`, so the size is at least 2 and at most 2^64 − 1.
        if self.is_valid() { self.limit.saturating_sub(self.base).saturating_add(1) } else { 0 }
    }

    /// Whether `addr` lies in the aperture.
    #[must_use]
    pub const fn contains(&self, addr: u64) -> bool {
        self.is_valid() && self.base <= addr && addr <= self.limit
    }
}

#[cfg(test)]
mod tests;
