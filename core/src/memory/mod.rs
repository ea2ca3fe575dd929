//! Memory bookkeeping: virtual-address allocation inside apertures and the table of memory
//! objects — the pure, allocation-free state machines under libhsakmt's `fmm.c`.
//!
//! Nothing here issues an ioctl, an mmap or reads a clock. The operations that talk to the kernel
//! (allocate a BO, map it to GPUs, reserve address space) are built on top: they ask these tables
//! *where* and *what*, perform the effect through a platform, and record the outcome here. Every
//! operation either succeeds or leaves the state exactly as it was.
//!
//! - [`va`]: [`va::VaAllocator`], a two-level segregated fit (TLSF) allocator of address ranges:
//!   `alloc`/`alloc_at`/`free` in a time bounded independently of the number of live
//!   allocations (a constant number of bitmap steps plus one walk of an address index whose
//!   height is bounded by the compile-time capacity).
//! - [`aperture`]: libhsakmt's observable placement rules on top of the allocator (alignment
//!   growth, end alignment, guard pages, fixed addresses), the kinds of apertures the memory
//!   manager needs, the reserved-SVM layout computation and the choice of aperture for a request.
//! - [`objects`]: [`objects::ObjectTable`], the generation-checked table of memory objects with
//!   lookups by start address, by interior pointer and by registered user-pointer range, and
//!   retired objects (freed, invisible, ready to be revived in place).
//! - [`recycle`]: [`recycle::RecycleCache`], a bounded cache of tokens by shape: the memory
//!   manager's store of freed allocations for reuse.
//! - [`MemFlags`] (libhsakmt's `HsaMemFlags`, bit for bit) and [`NodeSet`] (a fixed set of node
//!   ids).
//! - [`kfd_flags`]: libhsakmt's translation of `HsaMemFlags` into `KFD_IOC_ALLOC_MEM_FLAGS_*`.
//! - [`scratch_slices`]: [`scratch_slices::ScratchSlices`], the mapped slices of scratch
//!   backing ranges, each with a KFD buffer of its own.
//! - [`svm_attributes`]: typed shared-virtual-memory attributes.
//! - [`dmabuf_info`]: the kernel's description of a dma-buf to import, decoded.
//!
//! The operations that combine these with ioctls — allocate, free, map, register, export,
//! query — are methods of [`Kfd`](crate::device::Kfd) (see [`crate::device`]).
//!
//! # Storage
//! The large tables are generic over their storage, in the manner of `heapless`'
//! storage-generic containers:
//! - inline arrays — a capacity fixed at compile time, usable in a `static` through the
//!   `const fn new()` of [`va::InlineVaAllocator`], [`aperture::InlineAperture`] and
//!   [`objects::InlineObjectTable`];
//! - boxed slices (from a `std`/`alloc` crate) — built directly on the heap, e.g.
//!   `vec![VaSlot::EMPTY; 262_144].into_boxed_slice()`, so a table of hundreds of thousands of
//!   entries never passes through the stack (a `Box::new([..; N])` would, in debug builds).
//!
//! Either way the capacity never changes after construction and running out of it is a typed
//! error. `reset`/`init`/`clear` re-initialise a table in place.
//!
//! # Cost
//! Measured figures live in the workspace's `BENCHMARKS.md` (`cargo xtask bench`; rows
//! `memory.bookkeeping.*`: `Kfd::alloc_memory` + `Kfd::free` over a platform answering
//! instantly, with 1 to 100,000 live allocations, repeated shapes served by the memory manager's
//! recycle cache and mixed random shapes that are not) and the ignored `cost` tests
//! (`cargo test -p hsakmt-core --release -- --ignored --nocapture --test-threads=1 cost`: the
//! `VaAllocator` and `ObjectTable` alone, at 100,000 live allocations). What the code
//! guarantees:
//! - A repeated allocation of one shape is served by the memory manager's recycle cache: the
//!   table part is a revive, a lookup and a retire, and the memory lock is taken three times,
//!   never across an ioctl.
//! - **Worst cases**, independent of the number of live allocations: a cache hit is `O(1)`
//!   plus settling the frees published since the last lock (at most 16 pending ones, each
//!   `O(1)` into the cache, or one removal when the cache cannot take it); a miss is bounded by
//!   the TLSF and AVL bounds of [`va`] and [`objects`] (`O(H)`, `H` ≤ 26 levels; the
//!   apertures keep no index of their own, so a fixed address also walks the blocks from the
//!   object nearest below it: those of allocations in flight, and free blocks); a flush releases at most
//!   [`RECYCLE_CAPACITY`](crate::device::memory_manager::RECYCLE_CAPACITY) (64) allocations, `O(H)`
//!   each — only when an aperture, its descriptors or the object slots run out, on
//!   `trim_memory` and on close (a new shape evicts one cached allocation at most).

use core::fmt;

use crate::error::{self, ErrorKind};

pub(crate) mod avl;

pub mod aperture;
pub mod dmabuf_info;
mod flags;
pub mod kfd_flags;
mod nodeset;
pub mod objects;
pub mod recycle;
pub mod scratch_slices;
pub mod svm_attributes;
pub mod va;

pub use flags::{CachePolicy, MemFlags, PageSize};
pub use nodeset::{NodeSet, NodeSetIter};

/// The CPU and GPU page size libhsakmt assumes (`PAGE_SIZE`), and the granule of every address
/// range in this module.
pub const PAGE_SIZE: u64 = 4096;

/// The GPU huge-page / fragment size (`GPU_HUGE_PAGE_SIZE`, 2 MiB): the alignment that big
/// buffers grow to.
pub const GPU_HUGE_PAGE_SIZE: u64 = 2 << 20;

/// What went wrong in a memory bookkeeping operation.
///
/// Every fallible operation of this module leaves its table unchanged when it returns an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Error {
    /// A size of zero was requested.
    ZeroSize,
    /// A size (after rounding up to pages, adding guard pages or alignment padding) or an
    /// address range does not fit in 64 bits.
    SizeOverflow,
    /// An alignment is not a power of two (or is smaller than the page size where libhsakmt
    /// requires that).
    BadAlignment {
        /// The alignment given.
        align: u64,
    },
    /// An address or size that must be page aligned is not.
    Misaligned {
        /// The offending value.
        value: u64,
    },
    /// No free range is large enough for the request.
    OutOfSpace {
        /// The number of bytes that had to be found (including guard pages and padding).
        needed: u64,
    },
    /// The fixed capacity of a table (block descriptors, object slots) is exhausted.
    CapacityExhausted {
        /// The capacity of the table.
        capacity: u32,
    },
    /// The allocator already manages its maximum number of disjoint ranges.
    TooManyRanges {
        /// The maximum ([`va::MAX_VA_RANGES`]).
        max: u32,
    },
    /// A range to add overlaps one the allocator already manages.
    RangeOverlap {
        /// Base of the rejected range.
        base: u64,
    },
    /// A fixed-address request overlaps an existing allocation.
    AddressInUse {
        /// The requested address.
        addr: u64,
    },
    /// An address is outside every range the allocator or aperture manages.
    OutsideRange {
        /// The address.
        addr: u64,
    },
    /// No allocation / object starts at this address (never allocated, or already freed).
    UnknownAddress {
        /// The address.
        addr: u64,
    },
    /// A handle's index is out of range or its slot is empty.
    InvalidHandle,
    /// A handle's slot was reused since the handle was issued.
    StaleHandle,
    /// An object's address range overlaps an object already in the table.
    ObjectOverlap {
        /// Start address of the rejected object.
        start: u64,
    },
    /// The same user-pointer range is already registered.
    DuplicateUserptr {
        /// The user pointer.
        addr: u64,
    },
    /// A node id is outside the range a [`NodeSet`] can hold.
    InvalidNode {
        /// The node id.
        node: u32,
    },
    /// A reference count would drop below zero.
    RefcountUnderflow,
    /// A reference count would overflow.
    RefcountOverflow,
    /// Incompatible allocation flags (libhsakmt: `CoarseGrain` with `ExtendedCoherent` or
    /// `Uncached`, `ExtendedCoherent` with `Uncached`, `OnlyAddress` with `NoAddress`,
    /// `FixedAddress` without an address).
    InvalidFlags,
    /// libhsakmt does not support this combination (e.g. an alignment for scratch memory or for
    /// APU system memory, a fixed address for APU system memory).
    NotSupported,
    /// The aperture is only reported to the runtime (LDS, scratch, MMIO), never allocated from.
    ReportedOnly,
    /// A node id does not name a node of the topology.
    UnknownNode {
        /// The node id.
        node: u32,
    },
    /// No GPU of this process has this gpu_id.
    UnknownGpu {
        /// The gpu_id.
        gpu_id: u32,
    },
    /// The node has no GPU (or its GPU is not usable by this process), but the operation needs
    /// one.
    NotAGpu {
        /// The node id.
        node: u32,
    },
    /// A caller still holds a CPU view of the memory: drop it before freeing.
    MappingInUse {
        /// Start of the object.
        addr: u64,
    },
    /// Another operation on the same object is in progress on another thread.
    Busy {
        /// Start of the object.
        addr: u64,
    },
    /// The memory has no CPU mapping (device memory without `HostAccess`, address-only or
    /// handle-only objects).
    NoCpuAccess {
        /// Start of the object.
        addr: u64,
    },
    /// The object has no KFD buffer (an address-only or scratch reservation).
    NoKfdBuffer {
        /// Start of the object.
        addr: u64,
    },
    /// The object cannot be mapped to GPUs: an address range without memory (`OnlyAddress`) or
    /// memory without an address (`NoAddress`).
    NotMappable {
        /// Start of the object.
        addr: u64,
    },
    /// The range `[addr, addr + size)` does not lie inside one object.
    OutsideObject {
        /// Start of the range.
        addr: u64,
        /// Size of the range.
        size: u64,
    },
    /// The user memory is already registered to another set of nodes.
    RegisteredToOtherNodes {
        /// The user pointer.
        addr: u64,
    },
    /// The address belongs to memory the library allocated, not to user memory.
    NotUserMemory {
        /// The address.
        addr: u64,
    },
    /// An empty node list was given where nodes are required.
    NoNodes,
    /// The memory at this address is not registered.
    NotRegistered {
        /// The address.
        addr: u64,
    },
    /// Some requested node is not among the nodes the memory is registered to.
    NodesNotRegistered,
    /// The GPU already has its scratch backing memory.
    ScratchInUse {
        /// The GPU's node id.
        node: u32,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::ZeroSize => f.write_str("zero-sized memory request"),
            Self::SizeOverflow => f.write_str("size or address range overflows 64 bits"),
            Self::BadAlignment { align } => {
                write!(f, "alignment {align:#x} is not a valid power of two")
            }
            Self::Misaligned { value } => write!(f, "{value:#x} is not page aligned"),
            Self::OutOfSpace { needed } => {
                write!(f, "no free virtual address range of {needed:#x} bytes")
            }
            Self::CapacityExhausted { capacity } => {
                write!(f, "table capacity of {capacity} entries exhausted")
            }
            Self::TooManyRanges { max } => write!(f, "more than {max} address ranges"),
            Self::RangeOverlap { base } => {
                write!(f, "range at {base:#x} overlaps a managed range")
            }
            Self::AddressInUse { addr } => write!(f, "address {addr:#x} is not free"),
            Self::OutsideRange { addr } => {
                write!(f, "address {addr:#x} is outside the managed ranges")
            }
            Self::UnknownAddress { addr } => write!(f, "no allocation starts at {addr:#x}"),
            Self::InvalidHandle => f.write_str("invalid memory handle"),
            Self::StaleHandle => f.write_str("stale memory handle (slot reused)"),
            Self::ObjectOverlap { start } => {
                write!(f, "object at {start:#x} overlaps an existing object")
            }
            Self::DuplicateUserptr { addr } => {
                write!(f, "user pointer range at {addr:#x} is already registered")
            }
            Self::InvalidNode { node } => write!(f, "node id {node} out of range"),
            Self::RefcountUnderflow => f.write_str("reference count underflow"),
            Self::RefcountOverflow => f.write_str("reference count overflow"),
            Self::InvalidFlags => f.write_str("incompatible memory flags"),
            Self::NotSupported => f.write_str("unsupported memory request"),
            Self::ReportedOnly => f.write_str("aperture is reported only, not allocatable"),
            Self::UnknownNode { node } => write!(f, "node {node} is not in the topology"),
            Self::NotAGpu { node } => write!(f, "node {node} has no usable GPU"),
            Self::UnknownGpu { gpu_id } => write!(f, "no GPU of this process has gpu_id {gpu_id}"),
            Self::MappingInUse { addr } => {
                write!(f, "a CPU view of the memory at {addr:#x} is still held; drop it first")
            }
            Self::Busy { addr } => {
                write!(f, "another operation on the memory at {addr:#x} is in progress")
            }
            Self::NoCpuAccess { addr } => write!(f, "the memory at {addr:#x} has no CPU mapping"),
            Self::NotMappable { addr } => write!(
                f,
                "the object at {addr:#x} has no memory or no address and cannot be GPU-mapped"
            ),
            Self::NoKfdBuffer { addr } => write!(f, "the object at {addr:#x} has no KFD buffer"),
            Self::OutsideObject { addr, size } => write!(
                f,
                "the range of {size:#x} bytes at {addr:#x} is not inside one memory object"
            ),
            Self::RegisteredToOtherNodes { addr } => {
                write!(f, "user memory at {addr:#x} is already registered to other nodes")
            }
            Self::NotUserMemory { addr } => {
                write!(f, "{addr:#x} belongs to allocated memory, not to user memory")
            }
            Self::NoNodes => f.write_str("empty node list"),
            Self::NotRegistered { addr } => write!(f, "the memory at {addr:#x} is not registered"),
            Self::NodesNotRegistered => {
                f.write_str("some node is not among the nodes the memory is registered to")
            }
            Self::ScratchInUse { node } => {
                write!(f, "node {node} already has its scratch backing memory")
            }
        }
    }
}

impl error::Error for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::ZeroSize
            | Self::SizeOverflow
            | Self::BadAlignment { .. }
            | Self::RangeOverlap { .. }
            | Self::OutsideRange { .. }
            | Self::ObjectOverlap { .. }
            | Self::InvalidFlags => ErrorKind::InvalidArgument,
            Self::Misaligned { .. } => ErrorKind::Misaligned,
            Self::OutOfSpace { .. } => ErrorKind::OutOfResources,
            Self::CapacityExhausted { .. }
            | Self::TooManyRanges { .. }
            | Self::RefcountOverflow => ErrorKind::CapacityExhausted,
            Self::AddressInUse { .. } => ErrorKind::Busy,
            Self::UnknownAddress { .. } | Self::RefcountUnderflow => ErrorKind::NotRegistered,
            Self::InvalidHandle | Self::StaleHandle => ErrorKind::InvalidHandle,
            Self::DuplicateUserptr { .. } => ErrorKind::AlreadyRegistered,
            Self::InvalidNode { .. } => ErrorKind::InvalidNode,
            Self::NotSupported | Self::ReportedOnly => ErrorKind::NotSupported,
            Self::UnknownNode { .. } | Self::NotAGpu { .. } | Self::UnknownGpu { .. } => {
                ErrorKind::InvalidNode
            }
            Self::MappingInUse { .. } | Self::Busy { .. } | Self::ScratchInUse { .. } => {
                ErrorKind::Busy
            }
            Self::NoCpuAccess { .. }
            | Self::NoKfdBuffer { .. }
            | Self::NotMappable { .. }
            | Self::OutsideObject { .. }
            | Self::NoNodes
            | Self::NodesNotRegistered => ErrorKind::InvalidArgument,
            Self::NotRegistered { .. } => ErrorKind::NotRegistered,
            Self::RegisteredToOtherNodes { .. } => ErrorKind::AlreadyRegistered,
            Self::NotUserMemory { .. } => ErrorKind::InvalidHandle,
        }
    }
}

impl core::error::Error for Error {}

/// A broken internal invariant, found by a `check_invariants()` method.
///
/// Seeing one means a bug in this module (or memory corruption); the checks exist for tests and
/// for debug sweeps, they are `O(capacity)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Violation {
    /// The blocks of a range do not tile it exactly (gap, overlap, wrong end, bad back link).
    RangeTiling {
        /// Slot index of the offending block.
        slot: u32,
    },
    /// Two physically adjacent blocks are both free (coalescing was missed).
    UncoalescedFree {
        /// Slot index of the first of the two blocks.
        slot: u32,
    },
    /// A segregated free list is inconsistent with its blocks or the bitmaps.
    FreeList {
        /// Slot index of the offending block (`u32::MAX` for a bitmap-only mismatch).
        slot: u32,
    },
    /// An address index is not a valid balanced search tree (order, links, heights, augmented
    /// maxima).
    Index {
        /// Slot index of the offending node.
        slot: u32,
    },
    /// An index holds a different set of entries than the table (missing or extra entries).
    IndexMembership {
        /// Slot index of the offending entry.
        slot: u32,
    },
    /// Two objects' address ranges overlap.
    Overlap {
        /// Slot index of the second object.
        slot: u32,
    },
    /// A recycled-slot list is broken (cycle, occupied slot on it, lost slot).
    SlotList {
        /// Slot index of the offending slot.
        slot: u32,
    },
    /// A cached counter (bytes, live count) disagrees with the table's contents.
    Counter,
    /// Two entries claim what only one may hold (a kernel id, an event-page slot).
    Duplicate {
        /// Slot index of one of the entries.
        slot: u32,
    },
    /// An entry refers to something that does not exist (a queue's buffer missing from the
    /// memory table, a handle mirror naming no event).
    Dangling {
        /// Slot index of the offending entry.
        slot: u32,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::RangeTiling { slot } => write!(f, "range tiling broken at slot {slot}"),
            Self::UncoalescedFree { slot } => write!(f, "adjacent free blocks at slot {slot}"),
            Self::FreeList { slot } => write!(f, "free list inconsistent at slot {slot}"),
            Self::Index { slot } => write!(f, "address index broken at slot {slot}"),
            Self::IndexMembership { slot } => write!(f, "index membership wrong for slot {slot}"),
            Self::Overlap { slot } => write!(f, "object at slot {slot} overlaps another"),
            Self::SlotList { slot } => write!(f, "slot free list broken at slot {slot}"),
            Self::Counter => f.write_str("cached counter disagrees with contents"),
            Self::Duplicate { slot } => write!(f, "entry at slot {slot} duplicates another"),
            Self::Dangling { slot } => write!(f, "entry at slot {slot} refers to nothing"),
        }
    }
}

impl error::Error for Violation {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Inconsistent
    }
}

impl core::error::Error for Violation {}

/// Rounds `value` up to a multiple of `align` (a power of two), or `None` on overflow.
pub(crate) const fn align_up(value: u64, align: u64) -> Option<u64> {
    let mask = align.wrapping_sub(1);
    match value.checked_add(mask) {
        Some(v) => Some(v & !mask),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error as _;

    #[test]
    fn error_kinds_and_display() {
        assert_eq!(Error::OutOfSpace { needed: 1 }.kind(), ErrorKind::OutOfResources);
        assert_eq!(Error::CapacityExhausted { capacity: 4 }.kind(), ErrorKind::CapacityExhausted);
        assert_eq!(Error::StaleHandle.kind(), ErrorKind::InvalidHandle);
        assert_eq!(Error::UnknownAddress { addr: 0 }.kind(), ErrorKind::NotRegistered);
        assert_eq!(Error::Misaligned { value: 3 }.kind(), ErrorKind::Misaligned);
        assert_eq!(Violation::Counter.kind(), ErrorKind::Inconsistent);
        let s = std::format!("{}", Error::AddressInUse { addr: 0x1000 });
        assert!(s.contains("0x1000"));
        assert_eq!(align_up(1, 4096), Some(4096));
        assert_eq!(align_up(u64::MAX, 4096), None);
    }
}
