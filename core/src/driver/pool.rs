//! A bounded-time sub-allocating pool for small allocations (signals, kernel arguments,
//! descriptors) carved out of one large buffer, so a runtime does not pay a KFD allocation —
//! and its page of granularity — for every 64-byte object.
//!
//! The pool reuses the TLSF [`VaAllocator`] by scaling: one pool granule of `G` bytes is one
//! 4 KiB page of the allocator's address space, so every TLSF guarantee (alloc and free in a
//! time independent of the number of live allocations, coalescing, typed exhaustion) carries
//! over to byte-sized objects.

use crate::memory::va::{GRANULE as PAGE, VaAllocator, VaSlot};
use crate::memory::{self, va};

/// Base of the allocator's (virtual) address space: non-zero, and aligned far beyond any
/// alignment a pool serves, so aligned virtual addresses are aligned offsets.
const VBASE: u64 = 1 << 44;

/// A pool over `[base, base + size)` with allocation granule `1 << granule_shift` bytes.
///
/// # Invariants
/// Every address returned lies in `[base, base + size)`, is a multiple of the granule and of the
/// requested alignment, and no two live allocations overlap.
pub struct SubAllocator<S> {
    va: VaAllocator<S>,
    base: u64,
    size: u64,
    shift: u32,
}

/// The smallest granule (16 bytes: an AQL packet field, a pointer pair).
pub const MIN_GRANULE_SHIFT: u32 = 4;

impl<S: AsRef<[VaSlot]> + AsMut<[VaSlot]>> SubAllocator<S> {
    /// A pool over `size` bytes at `base` with granule `1 << granule_shift`, keeping its block
    /// descriptors in `slots` (two per live allocation suffice).
    ///
    /// # Errors
    /// [`memory::Error::BadAlignment`] for a granule below 16 bytes or above 4 KiB, or a `base`
    /// not aligned to it; [`memory::Error::ZeroSize`] / [`memory::Error::SizeOverflow`] for a
    /// size that is zero, not a granule multiple, or too large to scale.
    pub fn new(slots: S, base: u64, size: u64, granule_shift: u32) -> Result<Self, memory::Error> {
        let granule = 1u64 << granule_shift.min(63);
        if !(MIN_GRANULE_SHIFT..=12).contains(&granule_shift) || !base.is_multiple_of(granule) {
            return Err(memory::Error::BadAlignment { align: granule });
        }
        if size == 0 {
            return Err(memory::Error::ZeroSize);
        }
        if !size.is_multiple_of(granule) {
            return Err(memory::Error::Misaligned { value: size });
        }
        let units = size >> granule_shift;
        let vsize = units.checked_mul(PAGE).ok_or(memory::Error::SizeOverflow)?;
        let mut va = VaAllocator::with_storage(slots);
        va.add_range(VBASE, vsize)?;
        Ok(Self { va, base, size, shift: granule_shift })
    }

    /// The granule in bytes.
    pub const fn granule(&self) -> u64 {
        1 << self.shift
    }

    /// The pool's first byte.
    pub const fn base(&self) -> u64 {
        self.base
    }

    /// The pool's size in bytes.
    pub const fn size(&self) -> u64 {
        self.size
    }

    /// Bytes not allocated.
    pub const fn free_bytes(&self) -> u64 {
        (self.va.free_bytes() / PAGE) << self.shift
    }

    /// Live allocations.
    pub const fn live(&self) -> u32 {
        self.va.live_count()
    }

    /// Allocates `size` bytes aligned to `align` (a power of two, at most the alignment of the
    /// pool's base; alignments below the granule are the granule). Returns the address.
    ///
    /// # Errors
    /// [`memory::Error::ZeroSize`], [`memory::Error::BadAlignment`],
    /// [`memory::Error::OutOfSpace`] (sizes in pool bytes), or
    /// [`memory::Error::CapacityExhausted`] of the descriptors.
    pub fn alloc(&mut self, size: u64, align: u64) -> Result<u64, memory::Error> {
        if size == 0 {
            return Err(memory::Error::ZeroSize);
        }
        if !align.is_power_of_two() || !self.base.is_multiple_of(align) || align > 1 << 32 {
            return Err(memory::Error::BadAlignment { align });
        }
        let units = size.div_ceil(self.granule());
        let vsize = units.checked_mul(PAGE).ok_or(memory::Error::SizeOverflow)?;
        let valign =
            (align >> self.shift).max(1).checked_mul(PAGE).ok_or(memory::Error::SizeOverflow)?;
        let block = self.va.alloc(vsize, valign).map_err(|e| self.unscale(e))?;
        // The block lies in the pool's range: its offset from `base` is below `size`.
        Ok(self.base.saturating_add((block.addr.saturating_sub(VBASE) / PAGE) << self.shift))
    }

    /// Frees the allocation at `addr`; returns its size in bytes (rounded to the granule).
    ///
    /// # Errors
    /// [`memory::Error::UnknownAddress`] for an address no live allocation starts at (double
    /// free), [`memory::Error::OutsideRange`] for one outside the pool.
    pub fn free(&mut self, addr: u64) -> Result<u64, memory::Error> {
        let offset = addr
            .checked_sub(self.base)
            .filter(|o| *o < self.size)
            .ok_or(memory::Error::OutsideRange { addr })?;
        if !offset.is_multiple_of(self.granule()) {
            return Err(memory::Error::UnknownAddress { addr });
        }
        // `offset` < `size`, whose pages were added at construction.
        let vaddr = VBASE.saturating_add((offset >> self.shift).saturating_mul(PAGE));
        let vsize = self.va.free(vaddr).map_err(|e| match e {
            memory::Error::UnknownAddress { .. } => memory::Error::UnknownAddress { addr },
            other => other,
        })?;
        Ok((vsize / PAGE) << self.shift)
    }

    /// Frees everything.
    pub fn reset(&mut self) {
        self.va.reset();
        // The range was valid at construction, so adding it again cannot fail.
        let _ = self.va.add_range(VBASE, (self.size >> self.shift).saturating_mul(PAGE));
    }

    /// Translates an allocator error's sizes back into pool bytes.
    fn unscale(&self, e: memory::Error) -> memory::Error {
        match e {
            memory::Error::OutOfSpace { needed } => {
                memory::Error::OutOfSpace { needed: (needed / PAGE) << self.shift }
            }
            other => other,
        }
    }

    /// Checks the allocator's invariants.
    ///
    /// # Errors
    /// The first violation found.
    pub fn check_invariants(&self) -> Result<(), memory::Violation> {
        self.va.check_invariants()
    }
}

/// A pool with inline descriptor storage for `N` descriptors.
pub type InlineSubAllocator<const N: usize> = SubAllocator<[VaSlot; N]>;

const _: () = assert!(va::GRANULE == 4096);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::vec::Vec;

    fn pool(size: u64) -> InlineSubAllocator<256> {
        SubAllocator::new([VaSlot::EMPTY; 256], 0x10_0000, size, 6).unwrap()
    }

    #[test]
    fn allocates_small_aligned_objects() {
        let mut p = pool(64 * 1024);
        let a = p.alloc(1, 1).unwrap();
        let b = p.alloc(64, 64).unwrap();
        let c = p.alloc(100, 256).unwrap();
        assert_eq!(a % 64, 0);
        assert_eq!(c % 256, 0);
        assert!(a != b && b != c);
        assert_eq!(p.live(), 3);
        assert_eq!(p.free(c), Ok(128));
        assert_eq!(p.free(c), Err(memory::Error::UnknownAddress { addr: c }));
        assert_eq!(p.free(0x10), Err(memory::Error::OutsideRange { addr: 0x10 }));
        // Alignment beyond the base's own cannot be honoured.
        assert_eq!(p.alloc(64, 1 << 21), Err(memory::Error::BadAlignment { align: 1 << 21 }));
        p.free(a).unwrap();
        p.free(b).unwrap();
        assert_eq!(p.free_bytes(), 64 * 1024);
    }

    #[test]
    fn exhaustion_is_typed_and_recoverable() {
        let mut p = pool(1024);
        let all: Vec<u64> = (0..16).map(|_| p.alloc(64, 64).unwrap()).collect();
        assert_eq!(p.alloc(64, 64), Err(memory::Error::OutOfSpace { needed: 64 }));
        p.free(all[3]).unwrap();
        assert_eq!(p.alloc(64, 64), Ok(all[3]));
        assert!(matches!(
            SubAllocator::new([VaSlot::EMPTY; 4], 3, 64, 6),
            Err(memory::Error::BadAlignment { .. })
        ));
    }

    proptest! {
        #[test]
        fn never_overlaps(ops in proptest::collection::vec((0u8..3, 1u64..2000, 0u32..8), 1..200)) {
            let mut p = pool(256 * 1024);
            let mut live: BTreeMap<u64, u64> = BTreeMap::new();
            for (op, size, align_log) in ops {
                if op < 2 || live.is_empty() {
                    let align = 1u64 << (align_log + 2);
                    if let Ok(a) = p.alloc(size, align) {
                        prop_assert_eq!(a % align.max(64), 0);
                        prop_assert!(a >= p.base() && a + size <= p.base() + p.size());
                        let end = a + size.div_ceil(64) * 64;
                        for (&s, &e) in &live {
                            prop_assert!(end <= s || a >= e, "overlap");
                        }
                        live.insert(a, end);
                    }
                } else {
                    let (&a, &e) = live.iter().nth(size as usize % live.len()).unwrap();
                    prop_assert_eq!(p.free(a), Ok(e - a));
                    live.remove(&a);
                }
                prop_assert!(p.check_invariants().is_ok());
            }
            for a in live.keys().copied().collect::<Vec<_>>() {
                p.free(a).unwrap();
            }
            prop_assert_eq!(p.free_bytes(), 256 * 1024);
        }
    }
}
