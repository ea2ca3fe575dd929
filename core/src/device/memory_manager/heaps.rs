//! The heaps libhsakmt adds to a GPU node's memory banks, which its users read as ordinary
//! banks (upstream `topology.c` `hsaKmtGetNodeMemoryProperties`, with the apertures of `fmm.c`
//! `hsakmt_fmm_get_aperture_base_and_limit`):
//! - LDS: the LDS aperture's base, size `lds_size_in_kb * 1024`;
//! - scratch: the scratch aperture, size `limit - base + 1`;
//! - SVM (`hsakmt_topology_is_svm_needed`: a dGPU system, or gfx ≥ 9.0.0): one range from the
//!   base of the fine-grained (coherent) aperture to the limit of the coarse-grained (default)
//!   one — with kernel-chosen slabs both are the default aperture;
//! - MMIO remap: the GPU's HDP-flush page, one page, once it is mapped. Upstream maps it when
//!   the process opens; this facade maps it when asked ([`Kfd::alloc_mmio_remap`]), so the heap
//!   appears from then on.
//!
//! Each heap is present only while its aperture is valid (`aperture_is_valid`: non-zero base
//! and limit, base below limit). `hsaKmtGetNodeProperties` counts three extra banks on every
//! GPU node whether or not those apertures are valid, plus one when the MMIO page is mapped
//! ([`NodeHeaps::extra_bank_count`]).

use crate::memory::PAGE_SIZE;
use crate::memory::objects::MemoryKind;
use crate::platform::Platform;
use crate::topology::GfxVersion;

use super::state::MemoryStorage;
use super::{Error, Kfd};

/// Banks `hsaKmtGetNodeProperties` adds to every GPU node (`NUM_OF_DGPU_HEAPS`,
/// `NUM_OF_IGPU_HEAPS`: LDS, scratch, SVM), valid or not.
pub const STATIC_HEAPS: u32 = 3;

/// Which heap (`HSA_HEAPTYPE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HeapKind {
    /// `HSA_HEAPTYPE_GPU_LDS` (4).
    Lds,
    /// `HSA_HEAPTYPE_GPU_SCRATCH` (5).
    Scratch,
    /// `HSA_HEAPTYPE_DEVICE_SVM` (6).
    Svm,
    /// `HSA_HEAPTYPE_MMIO_REMAP` (7).
    MmioRemap,
}

impl HeapKind {
    /// The `HSA_HEAPTYPE` value.
    #[must_use]
    pub const fn raw(self) -> u32 {
        match self {
            Self::Lds => 4,
            Self::Scratch => 5,
            Self::Svm => 6,
            Self::MmioRemap => 7,
        }
    }

    /// A lower-case name (`lds`, `scratch`, `svm`, `mmio_remap`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Lds => "lds",
            Self::Scratch => "scratch",
            Self::Svm => "svm",
            Self::MmioRemap => "mmio_remap",
        }
    }
}

/// One heap: where it starts (`VirtualBaseAddress`) and its size (`SizeInBytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Heap {
    /// First address.
    pub base: u64,
    /// Size in bytes.
    pub size: u64,
}

/// The heaps of one GPU node, in the order libhsakmt appends them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NodeHeaps {
    /// LDS.
    pub lds: Option<Heap>,
    /// Scratch.
    pub scratch: Option<Heap>,
    /// SVM.
    pub svm: Option<Heap>,
    /// The MMIO-remap page, once mapped.
    pub mmio_remap: Option<Heap>,
}

impl NodeHeaps {
    /// The present heaps, in libhsakmt's order (LDS, scratch, SVM, MMIO remap).
    pub fn iter(&self) -> impl Iterator<Item = (HeapKind, Heap)> + '_ {
        [
            (HeapKind::Lds, self.lds),
            (HeapKind::Scratch, self.scratch),
            (HeapKind::Svm, self.svm),
            (HeapKind::MmioRemap, self.mmio_remap),
        ]
        .into_iter()
        .filter_map(|(k, h)| Some((k, h?)))
    }

    /// How many banks `hsaKmtGetNodeProperties` adds to the node's `NumMemoryBanks`:
    /// [`STATIC_HEAPS`], plus one when the MMIO page is mapped.
    #[must_use]
    pub const fn extra_bank_count(&self) -> u32 {
        STATIC_HEAPS.saturating_add(if self.mmio_remap.is_some() { 1 } else { 0 })
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// The heaps libhsakmt adds to GPU `node`'s memory banks (see the module documentation),
    /// from its [`node_apertures`](Kfd::node_apertures).
    ///
    /// # Errors
    /// As [`Kfd::node_apertures`].
    pub fn node_heaps(&self, node: u32) -> Result<NodeHeaps, Error> {
        let a = self.node_apertures(node)?;
        let (lds_kb, svm_needed) = self.read_topology(|t| {
            let dgpu = t.is_dgpu_system();
            let v = t.node_by_user_id(node);
            let lds = v.and_then(|v| v.properties().lds_size_in_kb()).unwrap_or(0);
            let gfx = v.and_then(|v| v.gfx());
            (lds, dgpu || gfx.is_some_and(|g| g >= GfxVersion::new(9, 0, 0)))
        });
        // The kernel's apertures: an inverted or full-width one reports no size.
        let span = |(base, limit): (u64, u64)| Heap {
            base,
            size: limit.checked_sub(base).and_then(|d| d.checked_add(1)).unwrap_or(0),
        };
        let mmio_remap = self
            .memory
            .lock()
            .objects
            .iter()
            .find(|(_, o)| o.kind == MemoryKind::Mmio && o.node == node)
            .map(|(_, o)| Heap { base: o.start(), size: PAGE_SIZE });
        Ok(NodeHeaps {
            lds: a.lds.map(|(base, _)| Heap { base, size: u64::from(lds_kb) * 1024 }),
            scratch: a.scratch.map(span),
            svm: a.svm.filter(|_| svm_needed).map(span),
            mmio_remap,
        })
    }
}
