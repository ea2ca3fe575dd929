//! `HsaMemFlags`: the allocation flags of libhsakmt's `hsaKmtAllocMemory`, bit for bit.

bitflags::bitflags! {
    /// libhsakmt's `HsaMemFlags` (`hsakmttypes.h`): [`MemFlags::bits`] equals the C union's
    /// `Value` / `ui32` word, so values pass unchanged across a C boundary.
    ///
    /// Two fields are wider than one bit: `CachePolicy` (bits 1–2, see [`CachePolicy`]) and
    /// `PageSize` (bits 4–5, see [`PageSize`]); they appear here as the masks
    /// [`MemFlags::CACHE_POLICY`] and [`MemFlags::PAGE_SIZE`] and are read and written with
    /// [`MemFlags::cache_policy`] / [`MemFlags::with_cache_policy`] and
    /// [`MemFlags::page_size`] / [`MemFlags::with_page_size`]. Bits 25–31 are reserved.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct MemFlags: u32 {
        /// `NonPaged`: page-locked memory (GTT or VRAM BO rather than pageable user memory).
        const NON_PAGED = 1 << 0;
        /// `CachePolicy` (2 bits): an [`HSA_CACHING_TYPE`](CachePolicy) value.
        const CACHE_POLICY = 0b11 << 1;
        /// `ReadOnly`: not modified while mapped.
        const READ_ONLY = 1 << 3;
        /// `PageSize` (2 bits): an [`HSA_PAGE_SIZE`](PageSize) value; requested sizes and
        /// alignments must be multiples of it.
        const PAGE_SIZE = 0b11 << 4;
        /// `HostAccess`: the CPU maps the memory (default: GPU access only).
        const HOST_ACCESS = 1 << 6;
        /// `NoSubstitute`: fail rather than use memory of another node / kind.
        const NO_SUBSTITUTE = 1 << 7;
        /// `GDSMemory`: allocate in the global data share.
        const GDS_MEMORY = 1 << 8;
        /// `Scratch`: the per-GPU scratch backing memory.
        const SCRATCH = 1 << 9;
        /// `AtomicAccessFull`: all atomics supported (APU ATC path).
        const ATOMIC_ACCESS_FULL = 1 << 10;
        /// `AtomicAccessPartial`: PCIe atomics (swap, CAS, fetch-add).
        const ATOMIC_ACCESS_PARTIAL = 1 << 11;
        /// `ExecuteAccess`: holds executable code (e.g. queue memory).
        const EXECUTE_ACCESS = 1 << 12;
        /// `CoarseGrain`: coherence enforced only at synchronization points.
        const COARSE_GRAIN = 1 << 13;
        /// `AQLQueueMemory`: an AQL ring; libhsakmt doubles its virtual size (ring double map).
        const AQL_QUEUE_MEMORY = 1 << 14;
        /// `FixedAddress`: allocate exactly at the given address or fail.
        const FIXED_ADDRESS = 1 << 15;
        /// `NoNUMABind`: do not bind system memory to a NUMA node.
        const NO_NUMA_BIND = 1 << 16;
        /// `Uncached`: uncached fine-grained memory.
        const UNCACHED = 1 << 17;
        /// `NoAddress`: VRAM without a virtual address (a handle in the handle aperture).
        const NO_ADDRESS = 1 << 18;
        /// `OnlyAddress`: a virtual address range without memory behind it.
        const ONLY_ADDRESS = 1 << 19;
        /// `ExtendedCoherent`: system-scope coherence on atomic instructions.
        const EXTENDED_COHERENT = 1 << 20;
        /// `GTTAccess`: GTT memory to be mapped to GART (for MES), on the preferred GPU.
        const GTT_ACCESS = 1 << 21;
        /// `Contiguous`: physically contiguous VRAM (best effort; KFD minor ≥ 16).
        const CONTIGUOUS = 1 << 22;
        /// `ExecuteBlit`: memory of a blit kernel object (Aug-2025 header).
        const EXECUTE_BLIT = 1 << 23;
        /// `QueueObject`: an AQL queue object read by the CPU (newest header; Windows use).
        const QUEUE_OBJECT = 1 << 24;
    }
}

/// `HSA_CACHING_TYPE`: the 2-bit `CachePolicy` field of [`MemFlags`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u32)]
pub enum CachePolicy {
    /// `HSA_CACHING_CACHED`
    Cached = 0,
    /// `HSA_CACHING_NONCACHED`
    NonCached = 1,
    /// `HSA_CACHING_WRITECOMBINED`
    WriteCombined = 2,
    /// `HSA_CACHING_RESERVED`
    Reserved = 3,
}

/// `HSA_PAGE_SIZE`: the 2-bit `PageSize` field of [`MemFlags`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u32)]
pub enum PageSize {
    /// `HSA_PAGE_SIZE_4KB`
    Size4K = 0,
    /// `HSA_PAGE_SIZE_64KB`
    Size64K = 1,
    /// `HSA_PAGE_SIZE_2MB`
    Size2M = 2,
    /// `HSA_PAGE_SIZE_1GB`
    Size1G = 3,
}

impl PageSize {
    /// The size in bytes (libhsakmt `hsakmt_PageSizeFromFlags`).
    #[must_use]
    pub const fn bytes(self) -> u64 {
        match self {
            Self::Size4K => 4 << 10,
            Self::Size64K => 64 << 10,
            Self::Size2M => 2 << 20,
            Self::Size1G => 1 << 30,
        }
    }
}

impl MemFlags {
    /// The `CachePolicy` field.
    #[must_use]
    pub const fn cache_policy(self) -> CachePolicy {
        match (self.bits() >> 1) & 0b11 {
            0 => CachePolicy::Cached,
            1 => CachePolicy::NonCached,
            2 => CachePolicy::WriteCombined,
            _ => CachePolicy::Reserved,
        }
    }

    /// These flags with the `CachePolicy` field replaced.
    #[must_use]
    pub const fn with_cache_policy(self, p: CachePolicy) -> Self {
        Self::from_bits_retain((self.bits() & !Self::CACHE_POLICY.bits()) | ((p as u32) << 1))
    }

    /// The `PageSize` field.
    #[must_use]
    pub const fn page_size(self) -> PageSize {
        match (self.bits() >> 4) & 0b11 {
            0 => PageSize::Size4K,
            1 => PageSize::Size64K,
            2 => PageSize::Size2M,
            _ => PageSize::Size1G,
        }
    }

    /// These flags with the `PageSize` field replaced.
    #[must_use]
    pub const fn with_page_size(self, p: PageSize) -> Self {
        Self::from_bits_retain((self.bits() & !Self::PAGE_SIZE.bits()) | ((p as u32) << 4))
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for MemFlags {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "MemFlags({=u32:#x})", self.bits());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit positions as laid out by the C bitfield (LSB first) in `hsakmttypes.h`.
    #[test]
    fn bits_match_hsakmttypes() {
        let fields: [(MemFlags, u32); 23] = [
            (MemFlags::NON_PAGED, 0),
            (MemFlags::READ_ONLY, 3),
            (MemFlags::HOST_ACCESS, 6),
            (MemFlags::NO_SUBSTITUTE, 7),
            (MemFlags::GDS_MEMORY, 8),
            (MemFlags::SCRATCH, 9),
            (MemFlags::ATOMIC_ACCESS_FULL, 10),
            (MemFlags::ATOMIC_ACCESS_PARTIAL, 11),
            (MemFlags::EXECUTE_ACCESS, 12),
            (MemFlags::COARSE_GRAIN, 13),
            (MemFlags::AQL_QUEUE_MEMORY, 14),
            (MemFlags::FIXED_ADDRESS, 15),
            (MemFlags::NO_NUMA_BIND, 16),
            (MemFlags::UNCACHED, 17),
            (MemFlags::NO_ADDRESS, 18),
            (MemFlags::ONLY_ADDRESS, 19),
            (MemFlags::EXTENDED_COHERENT, 20),
            (MemFlags::GTT_ACCESS, 21),
            (MemFlags::CONTIGUOUS, 22),
            (MemFlags::EXECUTE_BLIT, 23),
            (MemFlags::QUEUE_OBJECT, 24),
            (MemFlags::CACHE_POLICY, 1),
            (MemFlags::PAGE_SIZE, 4),
        ];
        for (f, bit) in fields {
            assert_eq!(f.bits().trailing_zeros(), bit, "{f:?}");
        }
        // A typical ROCr system-memory request: NonPaged | HostAccess | NoNUMABind | Uncached.
        let f = MemFlags::NON_PAGED
            | MemFlags::HOST_ACCESS
            | MemFlags::NO_NUMA_BIND
            | MemFlags::UNCACHED;
        assert_eq!(f.bits(), 0x0003_0041);
    }

    #[test]
    fn multi_bit_fields() {
        let f = MemFlags::HOST_ACCESS.with_page_size(PageSize::Size2M);
        assert_eq!(f.page_size(), PageSize::Size2M);
        assert_eq!(f.page_size().bytes(), 2 << 20);
        assert_eq!(f.bits(), 0x40 | (2 << 4));
        let f = f.with_cache_policy(CachePolicy::WriteCombined);
        assert_eq!(f.cache_policy(), CachePolicy::WriteCombined);
        assert_eq!(f.with_page_size(PageSize::Size4K).page_size(), PageSize::Size4K);
        assert!(f.contains(MemFlags::HOST_ACCESS));
        // Reserved bits survive a round trip.
        assert_eq!(MemFlags::from_bits_retain(0x8000_0001).bits(), 0x8000_0001);
    }
}
