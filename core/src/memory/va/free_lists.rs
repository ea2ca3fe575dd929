//! The segregated free lists of a [`VaAllocator`]: size classes, the lists' links and
//! bitmaps, and the good-fit search (see the parent module's docs).

use super::{
    FL_COUNT, GRANULE_SHIFT, NIL, SCAN_LIMIT, SL_COUNT, SL_LOG2, State, VaAllocator, VaSlot, phased,
};

/// The size class `(first level, second level)` of a block of `g` granules.
pub(super) fn mapping_insert(g: u64) -> (usize, usize) {
    if g < SL_COUNT as u64 {
        (0, g as usize)
    } else {
        // `g >= SL_COUNT`: its top bit `t` is at least SL_LOG2, and the SL_LOG2 bits below
        // it hold at least SL_COUNT.
        let t = 63u32.saturating_sub(g.leading_zeros());
        let sl = ((g >> t.saturating_sub(SL_LOG2)) as usize).saturating_sub(SL_COUNT);
        (t.saturating_sub(SL_LOG2).saturating_add(1) as usize, sl)
    }
}

/// The smallest class all of whose blocks hold `g` granules.
pub(super) fn mapping_search(g: u64) -> Option<(usize, usize)> {
    let g = if g < SL_COUNT as u64 {
        g
    } else {
        let t = 63u32.saturating_sub(g.leading_zeros());
        g.checked_add((1u64 << t.saturating_sub(SL_LOG2)).wrapping_sub(1))?
    };
    let (fl, sl) = mapping_insert(g);
    (fl < FL_COUNT).then_some((fl, sl))
}

/// The smallest size (in granules) of class `(fl, sl)`.
pub(super) fn class_min(fl: usize, sl: usize) -> u64 {
    if fl == 0 { sl as u64 } else { (SL_COUNT.saturating_add(sl) as u64) << fl.saturating_sub(1) }
}

impl<S: AsRef<[VaSlot]> + AsMut<[VaSlot]>> VaAllocator<S> {
    pub(super) fn list_push(&mut self, i: u32) {
        let (fl, sl) = mapping_insert(self.size(i) >> GRANULE_SHIFT);
        let head = self.head(fl, sl);
        if let Some(s) = self.slot_mut(i) {
            s.state = State::Free;
            s.prev_free = NIL;
            s.next_free = head;
        }
        if let Some(h) = self.slot_mut(head) {
            h.prev_free = i;
        }
        self.set_head(fl, sl, i);
        self.fl_bitmap |= 1 << fl;
        if let Some(m) = self.sl_bitmap.get_mut(fl) {
            *m |= 1 << sl;
        }
    }

    pub(super) fn list_unlink(&mut self, i: u32) {
        let Some(&s) = self.slot(i) else { return };
        self.list_unlink_known(&s);
    }

    /// [`Self::list_unlink`] of the free block whose descriptor the caller has read (`s`).
    pub(super) fn list_unlink_known(&mut self, s: &VaSlot) {
        let (fl, sl) = mapping_insert(s.size >> GRANULE_SHIFT);
        if let Some(p) = self.slot_mut(s.prev_free) {
            p.next_free = s.next_free;
        } else {
            self.set_head(fl, sl, s.next_free);
            if s.next_free == NIL {
                let mut empty = false;
                if let Some(m) = self.sl_bitmap.get_mut(fl) {
                    *m &= !(1 << sl);
                    empty = *m == 0;
                }
                if empty {
                    self.fl_bitmap &= !(1 << fl);
                }
            }
        }
        if let Some(n) = self.slot_mut(s.next_free) {
            n.prev_free = s.prev_free;
        }
    }

    /// The first non-empty class at or above `(fl, sl)`.
    pub(super) fn find_class(&self, fl: usize, sl: usize) -> Option<(usize, usize)> {
        let m = self.sl_map(fl) & (u32::MAX << sl);
        if m != 0 {
            return Some((fl, m.trailing_zeros() as usize));
        }
        let above =
            self.fl_bitmap & u64::MAX.checked_shl((fl as u32).saturating_add(1)).unwrap_or(0);
        if above == 0 {
            return None;
        }
        let f = above.trailing_zeros() as usize;
        Some((f, self.sl_map(f).trailing_zeros() as usize))
    }

    /// Where `size` bytes fit in free block `b` at an address `≡ phase (mod align)`.
    pub(super) fn fit_in(&self, b: u32, size: u64, align: u64, phase: u64) -> Option<u64> {
        let a = phased(self.start(b), align, phase)?;
        (a.checked_add(size)? <= self.end(b)).then_some(a)
    }

    /// A free block and the address in it for the request (see the module docs).
    pub(super) fn find_block(
        &self,
        need: u64,
        size: u64,
        align: u64,
        phase: u64,
    ) -> Option<(u32, u64)> {
        if let Some((fl, sl)) = mapping_search(need >> GRANULE_SHIFT)
            && let Some((f, s)) = self.find_class(fl, sl)
        {
            let b = self.head(f, s);
            if let Some(a) = self.fit_in(b, size, align, phase) {
                return Some((b, a));
            }
        }
        // Bounded fallback: blocks of the classes between the unpadded size's and the good-fit
        // class (all classes from the good-fit one up are empty or unfit at this point) may
        // still hold an aligned fit. Examine at most SCAN_LIMIT of them, lowest class first.
        let (mut fl, mut sl) = mapping_insert(size >> GRANULE_SHIFT);
        let mut budget = SCAN_LIMIT;
        while budget > 0 {
            let Some((f, s)) = self.find_class(fl, sl) else { break };
            let mut b = self.head(f, s);
            while b != NIL && budget > 0 {
                budget = budget.saturating_sub(1);
                if let Some(a) = self.fit_in(b, size, align, phase) {
                    return Some((b, a));
                }
                b = self.slot(b).map_or(NIL, |slot| slot.next_free);
            }
            (fl, sl) = if s.saturating_add(1) < SL_COUNT {
                (f, s.saturating_add(1))
            } else {
                (f.saturating_add(1), 0)
            };
            if fl >= FL_COUNT {
                break;
            }
        }
        None
    }
}
