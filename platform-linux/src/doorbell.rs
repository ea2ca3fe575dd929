//! Ringing a GPU doorbell: the store that tells the command processor (or an SDMA engine) to
//! look at its ring.
//!
//! The doorbell page amdkfd maps (`KFD_MMAP_TYPE_DOORBELL`, `kfd_doorbell_mmap`) is uncached
//! MMIO of the GPU's doorbell BAR: it must only be *written*, once per ring, with a plain
//! store. ROCr rings it with a release fence, `_mm_sfence()` and a plain 64-bit store
//! (`AqlQueue::StoreRelaxed`); a sequentially consistent atomic store would be an `xchg` on
//! x86_64 — a bus-locked read-modify-write of a device register.
//!
//! The store here is ROCr's:
//! 1. `fence(Release)`: earlier stores of this thread (packet body, header, write index) may
//!    not move after the doorbell store — a compiler barrier on x86_64, `dmb ish` on aarch64.
//! 2. `sfence` on x86_64: x86's store order (TSO) does not cover write-combined stores, and a
//!    ring or packet may live in write-combined memory (VRAM through the BAR, or uncached host
//!    memory the CPU maps write-combining); `sfence` drains the write-combining buffers so the
//!    GPU cannot see the doorbell before the packet. A store to uncached memory also evicts the
//!    buffers, but the architecture manuals do not order the eviction before that store, and
//!    ROCr pays the fence too, so this does. It is not a locked instruction and costs a few
//!    cycles; without write-combined stores pending it has nothing to wait for.
//! 3. One volatile store of the whole doorbell through [`volatile::VolatilePtr`] (write-only):
//!    64 bits on gfx9+ (doorbell type 2, `HSA_CAP_DOORBELL_TYPE_2_0`: AQL, PM4 and SDMA
//!    queues), 32 bits for the doorbells of earlier parts. Volatile: the compiler neither
//!    elides, merges, splits nor reorders it against other volatile accesses. On aarch64 hosts
//!    the fence is `dmb ish` where Linux's `writeq` uses `dmb oshst`; only x86_64 is verified.
//!
//! `cargo test -p hsakmt-linux doorbell` disassembles the compiled
//! `<LinuxMapping as SharedMemory>::ring_doorbell64` and checks the store is one plain `mov`,
//! preceded by `sfence`, with no `lock`ed or `xchg` instruction.
//!
//! # Invariants
//! A doorbell offset lies inside the doorbell mapping and is aligned to the doorbell's size:
//! every producer of core checks it when it is built (`AqlProducer`, `SdmaRing`, `Pm4Queue`),
//! so the check here only guards the store (a miss stores nothing; debug builds assert).

use core::ptr::NonNull;
use core::sync::atomic::{Ordering, fence};

use hsakmt_core::platform::SharedMemory;
use hsakmt_hostmem::HostMapping;
use volatile::VolatilePtr;
use volatile::access::WriteOnly;

/// The doorbell word of `size_of::<T>()` bytes at byte `offset` of `page`, if it lies inside
/// and is aligned to its size.
#[inline]
fn cell<T>(page: &HostMapping, offset: usize) -> Option<NonNull<T>> {
    let size = size_of::<T>();
    let end = offset.checked_add(size)?;
    if !offset.is_multiple_of(size) || end > page.len() {
        return None;
    }
    // `page.addr() + offset` cannot overflow: `[addr, addr + len)` is a live mapping.
    NonNull::new((page.addr() as usize + offset) as *mut T)
}

/// Orders every earlier store of this thread before the doorbell store, write-combined ones
/// included (see the module docs).
#[inline(always)]
fn publish_earlier_stores() {
    fence(Ordering::Release);
    // SAFETY: `_mm_sfence` needs SSE, which every x86_64 CPU has (the target's baseline);
    // the instruction only orders stores and accesses no memory.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        core::arch::x86_64::_mm_sfence();
    }
}

/// Rings the 64-bit doorbell at byte `offset` of `page` with `value`.
#[inline]
pub(crate) fn ring64(page: &HostMapping, offset: usize, value: u64) {
    let cell = cell::<u64>(page, offset);
    // PANIC: debug builds only; producers check the offset when they are built (module docs,
    // `# Invariants`), so a miss is a bug of the caller. Release builds store nothing.
    debug_assert!(cell.is_some(), "doorbell offset {offset} outside its {}-byte page", page.len());
    let Some(cell) = cell else { return };
    publish_earlier_stores();
    // SAFETY: `cell` is an aligned 8-byte word inside `page`, which the borrow keeps mapped
    // for the call, and the pointer lives for this one write. The doorbell page is device
    // memory outside any Rust allocation: nothing reads it, and a concurrent doorbell store of
    // another producer is an I/O access to the same register (the device keeps the last
    // value), not a data race on Rust memory.
    unsafe { VolatilePtr::new_restricted(WriteOnly, cell) }.write(value);
}

/// Rings the 32-bit doorbell at byte `offset` of `page` with `value`.
#[inline]
pub(crate) fn ring32(page: &HostMapping, offset: usize, value: u32) {
    let cell = cell::<u32>(page, offset);
    // PANIC: as in `ring64`.
    debug_assert!(cell.is_some(), "doorbell offset {offset} outside its {}-byte page", page.len());
    let Some(cell) = cell else { return };
    publish_earlier_stores();
    // SAFETY: as in `ring64`, for an aligned 4-byte word.
    unsafe { VolatilePtr::new_restricted(WriteOnly, cell) }.write(value);
}

#[cfg(test)]
mod tests;
