//! [`VaAllocator::check_invariants`]: the `O(capacity)` check of every invariant of the
//! allocator (for tests and debug sweeps).

use super::{
    FL_COUNT, GRANULE, GRANULE_SHIFT, NIL, SL_COUNT, State, VaAllocator, VaSlot, avl,
    mapping_insert,
};
use crate::memory::Violation;

impl<S: AsRef<[VaSlot]> + AsMut<[VaSlot]>> VaAllocator<S> {
    /// Verifies every invariant (`O(capacity)`; for tests and debug sweeps).
    ///
    /// # Errors
    /// The first [`Violation`] found.
    pub fn check_invariants(&self) -> Result<(), Violation> {
        let cap = self.capacity();
        // Recycled descriptors.
        let mut recycled = 0u32;
        let mut r = self.recycled;
        while r != NIL {
            if self.state(r) != State::Unused || r >= self.hwm || recycled > cap {
                return Err(Violation::SlotList { slot: r });
            }
            recycled = recycled.saturating_add(1);
            r = self.slot(r).map_or(NIL, |s| s.next_free);
        }
        if self.in_use.saturating_add(recycled) != self.hwm || self.hwm > cap {
            return Err(Violation::SlotList { slot: self.hwm });
        }
        // Ranges: exact tiling, coalescing, index membership.
        let (mut free_blocks, mut used_blocks, mut fb, mut ub) = (0u32, 0u32, 0u64, 0u64);
        for range in self.ranges.iter().take(self.range_count as usize) {
            let (mut b, mut prev, mut expect, mut steps) = (range.first, NIL, range.base, 0u32);
            while b != NIL {
                steps = steps.saturating_add(1);
                let Some(s) = self.slot(b) else { return Err(Violation::RangeTiling { slot: b }) };
                if steps > cap
                    || s.prev_phys != prev
                    || s.links.key != expect
                    || s.size == 0
                    || !s.size.is_multiple_of(GRANULE)
                {
                    return Err(Violation::RangeTiling { slot: b });
                }
                match s.state {
                    State::Unused => return Err(Violation::RangeTiling { slot: b }),
                    State::Free => {
                        if self.state(prev) == State::Free {
                            return Err(Violation::UncoalescedFree { slot: prev });
                        }
                        if s.links.height != 0 || s.owner != NIL {
                            return Err(Violation::IndexMembership { slot: b });
                        }
                        free_blocks = free_blocks.saturating_add(1);
                        fb = fb.saturating_add(s.size);
                    }
                    State::Used => {
                        let indexed = if self.indexed {
                            avl::find_key(self, s.links.key) == Some(b)
                        } else {
                            s.links.height == 0
                        };
                        if !indexed {
                            return Err(Violation::IndexMembership { slot: b });
                        }
                        used_blocks = used_blocks.saturating_add(1);
                        ub = ub.saturating_add(s.size);
                    }
                }
                expect = expect.checked_add(s.size).ok_or(Violation::RangeTiling { slot: b })?;
                prev = b;
                b = s.next_phys;
            }
            if expect != range.end {
                return Err(Violation::RangeTiling { slot: prev });
            }
        }
        if free_blocks.saturating_add(used_blocks) != self.in_use
            || used_blocks != self.live
            || fb != self.free_bytes
            || ub != self.used_bytes
        {
            return Err(Violation::Counter);
        }
        // Segregated lists and bitmaps.
        let mut listed = 0u32;
        for fl in 0..FL_COUNT {
            let map = self.sl_map(fl);
            if ((self.fl_bitmap >> fl) & 1 == 1) != (map != 0) {
                return Err(Violation::FreeList { slot: NIL });
            }
            for sl in 0..SL_COUNT {
                let head = self.head(fl, sl);
                if ((map >> sl) & 1 == 1) != (head != NIL) {
                    return Err(Violation::FreeList { slot: head });
                }
                let (mut b, mut prev) = (head, NIL);
                while let Some(s) = self.slot(b) {
                    listed = listed.saturating_add(1);
                    if listed > free_blocks
                        || s.state != State::Free
                        || s.prev_free != prev
                        || mapping_insert(s.size >> GRANULE_SHIFT) != (fl, sl)
                    {
                        return Err(Violation::FreeList { slot: b });
                    }
                    prev = b;
                    b = s.next_free;
                }
            }
        }
        if listed != free_blocks {
            return Err(Violation::FreeList { slot: NIL });
        }
        let in_index = if self.indexed { used_blocks } else { 0 };
        if avl::check(self, cap)? != in_index {
            return Err(Violation::IndexMembership { slot: NIL });
        }
        Ok(())
    }
}
