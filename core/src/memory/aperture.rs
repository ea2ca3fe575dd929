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

use super::objects::MemoryKind;
use super::va::{VaAllocator, VaBlock, VaSlot};

mod process;
use super::{Error, GPU_HUGE_PAGE_SIZE, MemFlags, PAGE_SIZE, Violation, align_up};
pub use process::{
    GpuApertures, SvmGpu, SvmPlan, accept_reservation, reported_gpus, reservation_attempts,
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
        self.guard_pages as u64 * PAGE_SIZE
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
                (align - (size & (align - 1))) & (align - 1)
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
        let size = (c.limit - c.base).checked_add(1).ok_or(Error::SizeOverflow)?;
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
        let plan = plan_allocation(&self.config, size, requested_align)?;
        let block = match fixed {
            Some(addr) => {
                if !self.contains(addr) {
                    return Err(Error::OutsideRange { addr });
                }
                self.va.alloc_at(addr, plan.reserved)?
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
            if !self.contains(base) || !self.contains(base + (size - 1)) {
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
        if self.is_valid() { self.limit - self.base + 1 } else { 0 }
    }

    /// Whether `addr` lies in the aperture.
    #[must_use]
    pub const fn contains(&self, addr: u64) -> bool {
        self.is_valid() && self.base <= addr && addr <= self.limit
    }
}

// ---- layout helpers ----------------------------------------------------------------------

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
        let limit = base.checked_add(size - 1).ok_or(Error::SizeOverflow)?;
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
            default: part(ApertureKind::SvmDefault, alt_limit + 1, limit),
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
        let limit = base + (MEM_HANDLE_APERTURE_SIZE - 1);
        // Every later candidate starting at or before the end of a clashing aperture clashes
        // with it too (the aperture starts before this window ends).
        let clash_end = occupied
            .iter()
            .filter(|&&(b, l)| b != 0 && b <= limit && base <= l)
            .map(|&(_, l)| l)
            .max();
        let Some(end) = clash_end else { return Some((base, limit)) };
        let skip = ((end - base) / MEM_HANDLE_APERTURE_SIZE).checked_add(1)?;
        base = base.checked_add(skip.checked_mul(MEM_HANDLE_APERTURE_SIZE)?)?;
    }
    None
}

// ---- aperture choice -----------------------------------------------------------------------

/// Which aperture a request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ApertureRole {
    /// The default (non-coherent) SVM aperture.
    SvmDefault,
    /// The coherent SVM aperture (the default one in slab mode).
    SvmCoherent,
    /// The GPU's private GPUVM aperture (old APUs).
    GpuVm,
    /// The `NoAddress` handle window.
    MemHandle,
    /// APU system memory: a plain anonymous `mmap`, tracked but not allocated from an aperture.
    CpuVm,
    /// The GPU's scratch backing range, carved from the default SVM aperture with
    /// [`SCRATCH_ALIGN`] alignment (one per GPU).
    ScratchBacking,
}

/// The node a request prefers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PreferredNode {
    /// A CPU node (no KFD GPU id): system memory.
    Cpu,
    /// A GPU node.
    Gpu {
        /// Result of [`svm_needed`] for the GPU.
        svm_needed: bool,
    },
}

/// Process-wide settings that steer the choice (libhsakmt globals and environment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PlacementPolicy {
    /// Some node is a dGPU (`hsakmt_is_dgpu`).
    pub is_dgpu: bool,
    /// Host memory serves device allocations (`HSA_ZFB`).
    pub zfb: bool,
    /// Paged system memory is allocated as userptr (`HSA_USERPTR_FOR_PAGED_MEM`, default on).
    pub userptr_for_paged_mem: bool,
}

impl PlacementPolicy {
    /// libhsakmt's defaults on a dGPU system.
    pub const DGPU: Self = Self { is_dgpu: true, zfb: false, userptr_for_paged_mem: true };
}

/// One allocation request (`hsaKmtAllocMemoryAlign`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AllocRequest {
    /// Size in bytes (a multiple of the flags' page size).
    pub size: u64,
    /// Requested alignment (0: default; else a power of two ≥ the flags' page size).
    pub align: u64,
    /// The flags.
    pub flags: MemFlags,
    /// The address for `FixedAddress` requests.
    pub fixed_address: Option<u64>,
    /// The preferred node.
    pub node: PreferredNode,
}

/// Where and as what a request is allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Placement {
    /// The aperture.
    pub aperture: ApertureRole,
    /// The kind of memory object that results.
    pub kind: MemoryKind,
    /// Virtual size to allocate: twice the size for AQL queue memory on SVM (ring double map),
    /// [`SCRATCH_ALIGN`]-rounded for scratch.
    pub va_size: u64,
    /// Alignment to pass to [`Aperture::allocate`] (`None`: default).
    pub align: Option<u64>,
    /// Fixed address to pass to [`Aperture::allocate`].
    pub fixed_address: Option<u64>,
    /// The flags as libhsakmt records them (`HSA_ZFB` forces `CoarseGrain` on device requests
    /// served by host memory).
    pub flags: MemFlags,
}

/// Decides where an `hsaKmtAllocMemoryAlign` request goes, following `memory.c` and `fmm.c`:
///
/// 1. Validation: the flags' page size divides `size` (non-zero); an explicit alignment is a
///    power of two ≥ that page size; `FixedAddress` needs an address; `CoarseGrain` excludes
///    `ExtendedCoherent` and `Uncached`, which exclude each other.
/// 2. `Scratch` → the GPU's scratch backing ([`ApertureRole::ScratchBacking`] on dGPU systems,
///    [`ApertureRole::CpuVm`] on APUs); no explicit alignment (`HSAKMT_STATUS_NOT_IMPLEMENTED`).
/// 3. A CPU node, paged memory (`NonPaged` clear), `HSA_ZFB` or `GTTAccess` → host memory
///    (`hsakmt_fmm_allocate_host`). dGPU systems: `CoarseGrain` → default SVM aperture, else the
///    coherent one; AQL doubles the VA; `OnlyAddress` → address only; paged with
///    `HSA_USERPTR_FOR_PAGED_MEM` → userptr memory; else a GTT BO. APU systems: a plain `mmap`
///    ([`ApertureRole::CpuVm`]), no alignment and no fixed address.
/// 4. Otherwise VRAM (`hsakmt_fmm_allocate_device`): `OnlyAddress` with `NoAddress` is invalid;
///    SVM GPUs use the default SVM aperture (AQL doubles the VA), others their GPUVM aperture;
///    `OnlyAddress` → address only; `NoAddress` → the handle window.
///
/// # Errors
/// [`Error::ZeroSize`], [`Error::Misaligned`] (size not a multiple of the page size),
/// [`Error::BadAlignment`], [`Error::InvalidFlags`], [`Error::NotSupported`],
/// [`Error::SizeOverflow`].
pub fn choose_placement(req: &AllocRequest, policy: &PlacementPolicy) -> Result<Placement, Error> {
    let f = req.flags;
    let page = f.page_size().bytes();
    if req.align != 0 && (req.align < page || !req.align.is_power_of_two()) {
        return Err(Error::BadAlignment { align: req.align });
    }
    if req.size == 0 {
        return Err(Error::ZeroSize);
    }
    if !req.size.is_multiple_of(page) {
        return Err(Error::Misaligned { value: req.size });
    }
    let fixed = if f.contains(MemFlags::FIXED_ADDRESS) {
        Some(req.fixed_address.ok_or(Error::InvalidFlags)?)
    } else {
        None
    };
    let exclusive = [
        MemFlags::COARSE_GRAIN | MemFlags::EXTENDED_COHERENT,
        MemFlags::COARSE_GRAIN | MemFlags::UNCACHED,
        MemFlags::EXTENDED_COHERENT | MemFlags::UNCACHED,
    ];
    if exclusive.iter().any(|&pair| f.contains(pair)) {
        return Err(Error::InvalidFlags);
    }
    let align = (req.align != 0).then_some(req.align);
    let doubled = || {
        if f.contains(MemFlags::AQL_QUEUE_MEMORY) {
            req.size.checked_mul(2).ok_or(Error::SizeOverflow)
        } else {
            Ok(req.size)
        }
    };
    let placement = |aperture, kind, va_size, align, flags| Placement {
        aperture,
        kind,
        va_size,
        align,
        fixed_address: fixed,
        flags,
    };

    if f.contains(MemFlags::SCRATCH) {
        if align.is_some() {
            return Err(Error::NotSupported);
        }
        let size = scratch_backing_size(req.size).ok_or(Error::SizeOverflow)?;
        if policy.is_dgpu {
            return Ok(placement(
                ApertureRole::ScratchBacking,
                MemoryKind::Scratch,
                size,
                Some(SCRATCH_ALIGN),
                f,
            ));
        }
        if fixed.is_some() {
            return Err(Error::NotSupported);
        }
        return Ok(placement(
            ApertureRole::CpuVm,
            MemoryKind::Scratch,
            size,
            Some(SCRATCH_ALIGN),
            f,
        ));
    }

    let gpu = match req.node {
        PreferredNode::Cpu => None,
        PreferredNode::Gpu { svm_needed } => Some(svm_needed),
    };
    let non_paged = f.contains(MemFlags::NON_PAGED);
    if gpu.is_none() || !non_paged || policy.zfb || f.contains(MemFlags::GTT_ACCESS) {
        let mut flags = f;
        if policy.zfb && gpu.is_some() && non_paged {
            flags |= MemFlags::COARSE_GRAIN;
        }
        if !policy.is_dgpu {
            if align.is_some() || fixed.is_some() {
                return Err(Error::NotSupported);
            }
            return Ok(placement(ApertureRole::CpuVm, MemoryKind::HostCpu, req.size, None, flags));
        }
        let aperture = if flags.contains(MemFlags::COARSE_GRAIN) {
            ApertureRole::SvmDefault
        } else {
            ApertureRole::SvmCoherent
        };
        let kind = if flags.contains(MemFlags::ONLY_ADDRESS) {
            MemoryKind::ReservedAddress
        } else if !flags.contains(MemFlags::NON_PAGED) && policy.userptr_for_paged_mem {
            MemoryKind::HostUserptr
        } else {
            MemoryKind::HostGtt
        };
        return Ok(placement(aperture, kind, doubled()?, align, flags));
    }

    if f.contains(MemFlags::ONLY_ADDRESS | MemFlags::NO_ADDRESS) {
        return Err(Error::InvalidFlags);
    }
    let (aperture, va_size) = if gpu == Some(true) {
        (ApertureRole::SvmDefault, doubled()?)
    } else {
        (ApertureRole::GpuVm, req.size)
    };
    if f.contains(MemFlags::ONLY_ADDRESS) {
        return Ok(placement(aperture, MemoryKind::ReservedAddress, va_size, align, f));
    }
    if f.contains(MemFlags::NO_ADDRESS) {
        return Ok(placement(ApertureRole::MemHandle, MemoryKind::Vram, va_size, align, f));
    }
    Ok(placement(aperture, MemoryKind::Vram, va_size, align, f))
}

#[cfg(test)]
mod tests;
