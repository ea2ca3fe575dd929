//! libhsakmt's translation of [`MemFlags`] (`HsaMemFlags`) into the `KFD_IOC_ALLOC_MEM_FLAGS_*`
//! word of `AMDKFD_IOC_ALLOC_MEMORY_OF_GPU`, and back.
//!
//! Every path of `fmm.c` that creates a KFD buffer builds its flags its own way; [`BufferKind`]
//! names those paths and [`alloc_flags`] reproduces each one bit for bit:
//!
//! | Path (`fmm.c`) | Domain | Attributes |
//! |---|---|---|
//! | device memory (`hsakmt_fmm_allocate_device`) | `VRAM` | `PUBLIC` if `HostAccess`; common; `COHERENT` unless `CoarseGrain`; `UNCACHED` if `Uncached`; `EXT_COHERENT` if `ExtendedCoherent`; `CONTIGUOUS` if `Contiguous` |
//! | non-paged host memory (`fmm_allocate_host_gpu`) | `GTT` | `COHERENT` unless `CoarseGrain`; `UNCACHED` if `Uncached`; `EXT_COHERENT` if `ExtendedCoherent`; common |
//! | paged host memory (same, `HSA_USERPTR_FOR_PAGED_MEM`) | `USERPTR` | as `GTT` |
//! | registered user memory (`fmm_register_user_memory`) | `USERPTR` | `WRITABLE`, `EXECUTABLE`; `COHERENT` unless `CoarseGrain`; `EXT_COHERENT` if `ExtendedCoherent` |
//! | doorbell page (`hsakmt_fmm_allocate_doorbell`) | `DOORBELL` | `WRITABLE`, `COHERENT` |
//! | MMIO remap page (`map_mmio`) | `MMIO_REMAP` | `WRITABLE`, `COHERENT` |
//! | scratch backing (`_fmm_map_to_gpu_scratch`) | `VRAM` | `WRITABLE` |
//!
//! "Common" is `fmm_translate_hsa_to_ioc_flags`: `AQL_QUEUE_MEM | UNCACHED` for
//! `AQLQueueMemory`, `WRITABLE` unless `ReadOnly`, `EXECUTABLE` for `ExecuteAccess`.
//! `HSA_DISABLE_CACHE` adds `COHERENT | UNCACHED` to the device and host paths. Every buffer
//! is created with `NO_SUBSTITUTE` (`fmm_allocate_memory_object`), whatever the `NoSubstitute`
//! flag says (that flag steers NUMA binding of paged memory only).
//!
//! ```
//! use hsakmt_core::memory::MemFlags;
//! use hsakmt_core::memory::kfd_flags::{BufferKind, alloc_flags};
//! use hsakmt_core::uapi::*;
//!
//! // Coarse-grained, CPU-invisible VRAM: the most common GPU buffer.
//! let f = alloc_flags(BufferKind::Vram, MemFlags::NON_PAGED | MemFlags::COARSE_GRAIN, false);
//! assert_eq!(
//!     f,
//!     KFD_IOC_ALLOC_MEM_FLAGS_VRAM
//!         | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
//!         | KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE
//! );
//! ```

use super::MemFlags;
use crate::uapi::*;

/// Which `fmm.c` path creates the buffer (selects the domain and the attribute rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum BufferKind {
    /// Device memory.
    Vram,
    /// Non-paged system memory (a GTT buffer).
    Gtt,
    /// Paged system memory the library allocated, made a user-pointer buffer.
    Userptr,
    /// User memory registered by the application.
    RegisteredUser,
    /// A queue doorbell page.
    Doorbell,
    /// The MMIO remap (HDP flush) page.
    MmioRemap,
    /// VRAM backing a GPU's scratch range.
    ScratchVram,
}

/// `fmm_translate_hsa_to_ioc_flags`: the attribute bits every allocation path shares.
#[must_use]
pub const fn common_flags(flags: MemFlags) -> u32 {
    let mut ioc = 0;
    if flags.contains(MemFlags::AQL_QUEUE_MEMORY) {
        ioc |= KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM | KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED;
    }
    if !flags.contains(MemFlags::READ_ONLY) {
        ioc |= KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    }
    if flags.contains(MemFlags::EXECUTE_ACCESS) {
        ioc |= KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
    }
    ioc
}

/// The coherence bits of the device and host paths (`HSA_DISABLE_CACHE` forces both).
const fn coherence_flags(flags: MemFlags, disable_cache: bool) -> u32 {
    let mut ioc = 0;
    if !flags.contains(MemFlags::COARSE_GRAIN) || disable_cache {
        ioc |= KFD_IOC_ALLOC_MEM_FLAGS_COHERENT;
    }
    if flags.contains(MemFlags::UNCACHED) || disable_cache {
        ioc |= KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED;
    }
    if flags.contains(MemFlags::EXTENDED_COHERENT) {
        ioc |= KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT;
    }
    ioc
}

/// The `flags` word of `AMDKFD_IOC_ALLOC_MEMORY_OF_GPU` for a buffer of `kind` requested with
/// `flags`, as libhsakmt builds it (see the [module docs](self) for the table), including the
/// `NO_SUBSTITUTE` bit libhsakmt always adds. `disable_cache` is `HSA_DISABLE_CACHE`.
#[must_use]
pub const fn alloc_flags(kind: BufferKind, flags: MemFlags, disable_cache: bool) -> u32 {
    let ioc = match kind {
        BufferKind::Vram => {
            let mut ioc = KFD_IOC_ALLOC_MEM_FLAGS_VRAM
                | common_flags(flags)
                | coherence_flags(flags, disable_cache);
            if flags.contains(MemFlags::HOST_ACCESS) {
                ioc |= KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC;
            }
            if flags.contains(MemFlags::CONTIGUOUS) {
                ioc |= KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS;
            }
            ioc
        }
        BufferKind::Gtt => {
            KFD_IOC_ALLOC_MEM_FLAGS_GTT
                | coherence_flags(flags, disable_cache)
                | common_flags(flags)
        }
        BufferKind::Userptr => {
            KFD_IOC_ALLOC_MEM_FLAGS_USERPTR
                | coherence_flags(flags, disable_cache)
                | common_flags(flags)
        }
        BufferKind::RegisteredUser => {
            let mut ioc = KFD_IOC_ALLOC_MEM_FLAGS_USERPTR
                | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
                | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
            if !flags.contains(MemFlags::COARSE_GRAIN) {
                ioc |= KFD_IOC_ALLOC_MEM_FLAGS_COHERENT;
            }
            if flags.contains(MemFlags::EXTENDED_COHERENT) {
                ioc |= KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT;
            }
            ioc
        }
        BufferKind::Doorbell => {
            KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL
                | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
                | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT
        }
        BufferKind::MmioRemap => {
            KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP
                | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
                | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT
        }
        BufferKind::ScratchVram => KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
    };
    ioc | KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE
}

/// `fmm_translate_ioc_to_hsa_flags`: the [`MemFlags`] libhsakmt records for a buffer it did not
/// allocate itself (an imported dma-buf): `ReadOnly` without `WRITABLE`, `CoarseGrain` without
/// `COHERENT`, `ExtendedCoherent` for `EXT_COHERENT`, `HostAccess` for `PUBLIC`.
#[must_use]
pub const fn mem_flags_from_alloc(ioc: u32) -> MemFlags {
    let mut f = MemFlags::empty();
    if ioc & KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE == 0 {
        f = f.union(MemFlags::READ_ONLY);
    }
    if ioc & KFD_IOC_ALLOC_MEM_FLAGS_COHERENT == 0 {
        f = f.union(MemFlags::COARSE_GRAIN);
    }
    if ioc & KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT != 0 {
        f = f.union(MemFlags::EXTENDED_COHERENT);
    }
    if ioc & KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC != 0 {
        f = f.union(MemFlags::HOST_ACCESS);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: u32 = KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE;
    const W: u32 = KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    const X: u32 = KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
    const C: u32 = KFD_IOC_ALLOC_MEM_FLAGS_COHERENT;
    const U: u32 = KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED;
    const E: u32 = KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT;
    const P: u32 = KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC;
    const AQL: u32 = KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM;
    const VRAM: u32 = KFD_IOC_ALLOC_MEM_FLAGS_VRAM;
    const GTT: u32 = KFD_IOC_ALLOC_MEM_FLAGS_GTT;
    const UPTR: u32 = KFD_IOC_ALLOC_MEM_FLAGS_USERPTR;

    #[test]
    fn device_memory_path() {
        let np = MemFlags::NON_PAGED;
        let cases = [
            (np, VRAM | W | C),
            (np | MemFlags::COARSE_GRAIN, VRAM | W),
            (np | MemFlags::HOST_ACCESS, VRAM | P | W | C),
            (np | MemFlags::READ_ONLY | MemFlags::COARSE_GRAIN, VRAM),
            (np | MemFlags::EXECUTE_ACCESS, VRAM | W | X | C),
            (np | MemFlags::UNCACHED, VRAM | W | C | U),
            (np | MemFlags::EXTENDED_COHERENT, VRAM | W | C | E),
            (np | MemFlags::AQL_QUEUE_MEMORY, VRAM | W | C | U | AQL),
            (np | MemFlags::CONTIGUOUS, VRAM | W | C | KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS),
            // NoSubstitute changes nothing: the bit is always set.
            (np | MemFlags::NO_SUBSTITUTE | MemFlags::COARSE_GRAIN, VRAM | W),
        ];
        for (flags, want) in cases {
            assert_eq!(alloc_flags(BufferKind::Vram, flags, false), want | NS, "{flags:?}");
        }
        // HSA_DISABLE_CACHE makes coarse-grained memory coherent and uncached.
        let coarse = np | MemFlags::COARSE_GRAIN;
        assert_eq!(alloc_flags(BufferKind::Vram, coarse, true), VRAM | W | C | U | NS);
    }

    #[test]
    fn host_paths() {
        let fine = MemFlags::NON_PAGED | MemFlags::HOST_ACCESS;
        assert_eq!(alloc_flags(BufferKind::Gtt, fine, false), GTT | C | W | NS);
        let coarse = fine | MemFlags::COARSE_GRAIN;
        assert_eq!(alloc_flags(BufferKind::Gtt, coarse, false), GTT | W | NS);
        // HostAccess never adds PUBLIC outside VRAM.
        assert_eq!(
            alloc_flags(BufferKind::Gtt, fine | MemFlags::UNCACHED, false),
            GTT | C | U | W | NS
        );
        let paged = MemFlags::HOST_ACCESS;
        assert_eq!(alloc_flags(BufferKind::Userptr, paged, false), UPTR | C | W | NS);
        assert_eq!(
            alloc_flags(BufferKind::Userptr, paged | MemFlags::AQL_QUEUE_MEMORY, false),
            UPTR | C | U | AQL | W | NS
        );
    }

    #[test]
    fn fixed_paths() {
        assert_eq!(
            alloc_flags(BufferKind::RegisteredUser, MemFlags::COARSE_GRAIN, false),
            UPTR | W | X | NS
        );
        assert_eq!(
            alloc_flags(BufferKind::RegisteredUser, MemFlags::EXTENDED_COHERENT, true),
            UPTR | W | X | C | E | NS
        );
        // Registration ignores ReadOnly (libhsakmt always registers writable).
        assert_eq!(
            alloc_flags(BufferKind::RegisteredUser, MemFlags::READ_ONLY, false),
            UPTR | W | X | C | NS
        );
        assert_eq!(
            alloc_flags(BufferKind::Doorbell, MemFlags::empty(), true),
            KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | W | C | NS
        );
        assert_eq!(
            alloc_flags(BufferKind::MmioRemap, MemFlags::READ_ONLY, false),
            KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP | W | C | NS
        );
        assert_eq!(alloc_flags(BufferKind::ScratchVram, MemFlags::empty(), true), VRAM | W | NS);
    }

    #[test]
    fn reverse_translation() {
        assert_eq!(
            mem_flags_from_alloc(VRAM | W | C),
            MemFlags::empty(),
            "writable, coherent, CPU-invisible"
        );
        assert_eq!(
            mem_flags_from_alloc(VRAM | P | E),
            MemFlags::READ_ONLY
                | MemFlags::COARSE_GRAIN
                | MemFlags::EXTENDED_COHERENT
                | MemFlags::HOST_ACCESS
        );
    }
}
