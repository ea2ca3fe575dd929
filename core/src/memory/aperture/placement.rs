//! The choice of aperture and memory kind for an `hsaKmtAllocMemoryAlign` request
//! ([`choose_placement`]).

use crate::memory::objects::MemoryKind;
use crate::memory::{Error, MemFlags};

use super::SCRATCH_ALIGN;
use super::svm_layout::scratch_backing_size;

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
        /// Result of [`svm_needed`](super::svm_needed) for the GPU.
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
    /// Alignment to pass to [`Aperture::allocate`](super::Aperture::allocate) (`None`: default).
    pub align: Option<u64>,
    /// Fixed address to pass to [`Aperture::allocate`](super::Aperture::allocate).
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
