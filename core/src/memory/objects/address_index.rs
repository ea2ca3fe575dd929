//! The address indexes of the [`ObjectTable`] (see "Indexes and worst cases" in the
//! [module docs](super)): the start index (an AVL tree in the compact [`IndexNode`] array), the
//! address cache embedded in those nodes, and the user-pointer interval tree in the slots —
//! and the lookups through them.

use crate::memory::avl::{self, Links, NIL, Tree, TreeMut};

use super::memory_object::MemoryObject;
use super::{MemoryHandle, ObjectSlot, ObjectStorage, ObjectTable};

/// A node of an [`ObjectTable`]'s start index (and two entries of its address cache): storage
/// unit, contents private. 32 bytes, aligned to 32 so that no node straddles two cache lines.
#[derive(Debug, Clone, Copy)]
#[repr(align(32))]
pub struct IndexNode {
    pub(super) links: Links,
    pub(super) cache: [u32; 2],
}

impl IndexNode {
    /// An unused node.
    pub const EMPTY: Self = Self { links: Links::EMPTY, cache: [NIL; 2] };
}

impl Default for IndexNode {
    fn default() -> Self {
        Self::EMPTY
    }
}

/// The start index, viewed over the node array (keys, links) and the slots (range ends).
pub(super) struct StartView<'a, T> {
    nodes: &'a [IndexNode],
    slots: &'a [ObjectSlot<T>],
    root: u32,
}

pub(super) struct StartViewMut<'a, T> {
    nodes: &'a mut [IndexNode],
    slots: &'a [ObjectSlot<T>],
    root: &'a mut u32,
}

/// The user-pointer index, viewed over the slots.
pub(super) struct UserView<'a, T> {
    slots: &'a [ObjectSlot<T>],
    root: u32,
}

pub(super) struct UserViewMut<'a, T> {
    slots: &'a mut [ObjectSlot<T>],
    root: &'a mut u32,
}

#[inline]
fn object<T>(slots: &[ObjectSlot<T>], i: u32) -> Option<&MemoryObject<T>> {
    slots.get(i as usize).and_then(|s| s.object.as_ref())
}

#[inline]
fn start_links(nodes: &[IndexNode], i: u32) -> Links {
    nodes.get(i as usize).map_or(Links::EMPTY, |n| n.links)
}

#[inline]
fn start_end<T>(slots: &[ObjectSlot<T>], i: u32) -> u64 {
    object(slots, i).map_or(0, MemoryObject::end)
}

#[inline]
fn user_links<T>(slots: &[ObjectSlot<T>], i: u32) -> Links {
    slots.get(i as usize).map_or(Links::EMPTY, |s| s.by_user)
}

#[inline]
fn user_end<T>(slots: &[ObjectSlot<T>], i: u32) -> u64 {
    object(slots, i).and_then(|o| o.userptr).map_or(0, |u| u.end())
}

#[inline]
fn user_max_end<T>(slots: &[ObjectSlot<T>], i: u32) -> u64 {
    slots.get(i as usize).map_or(0, |s| s.user_max_end)
}

impl<T> Tree for StartView<'_, T> {
    const INTERVAL: bool = false;
    #[inline]
    fn links(&self, i: u32) -> Links {
        start_links(self.nodes, i)
    }
    #[inline]
    fn end(&self, i: u32) -> u64 {
        start_end(self.slots, i)
    }
    #[inline]
    fn max_end(&self, _i: u32) -> u64 {
        0
    }
    #[inline]
    fn root(&self) -> u32 {
        self.root
    }
}

impl<T> Tree for StartViewMut<'_, T> {
    const INTERVAL: bool = false;
    #[inline]
    fn links(&self, i: u32) -> Links {
        start_links(self.nodes, i)
    }
    #[inline]
    fn end(&self, i: u32) -> u64 {
        start_end(self.slots, i)
    }
    #[inline]
    fn max_end(&self, _i: u32) -> u64 {
        0
    }
    #[inline]
    fn root(&self) -> u32 {
        *self.root
    }
}

impl<T> TreeMut for StartViewMut<'_, T> {
    #[inline]
    fn links_mut(&mut self, i: u32) -> Option<&mut Links> {
        self.nodes.get_mut(i as usize).map(|n| &mut n.links)
    }
    #[inline]
    fn set_max_end(&mut self, _i: u32, _value: u64) {}
    #[inline]
    fn set_root(&mut self, root: u32) {
        *self.root = root;
    }
}

impl<T> Tree for UserView<'_, T> {
    const INTERVAL: bool = true;
    #[inline]
    fn links(&self, i: u32) -> Links {
        user_links(self.slots, i)
    }
    #[inline]
    fn end(&self, i: u32) -> u64 {
        user_end(self.slots, i)
    }
    #[inline]
    fn max_end(&self, i: u32) -> u64 {
        user_max_end(self.slots, i)
    }
    #[inline]
    fn root(&self) -> u32 {
        self.root
    }
}

impl<T> Tree for UserViewMut<'_, T> {
    const INTERVAL: bool = true;
    #[inline]
    fn links(&self, i: u32) -> Links {
        user_links(self.slots, i)
    }
    #[inline]
    fn end(&self, i: u32) -> u64 {
        user_end(self.slots, i)
    }
    #[inline]
    fn max_end(&self, i: u32) -> u64 {
        user_max_end(self.slots, i)
    }
    #[inline]
    fn root(&self) -> u32 {
        *self.root
    }
}

impl<T> TreeMut for UserViewMut<'_, T> {
    #[inline]
    fn links_mut(&mut self, i: u32) -> Option<&mut Links> {
        self.slots.get_mut(i as usize).map(|s| &mut s.by_user)
    }
    #[inline]
    fn set_max_end(&mut self, i: u32, value: u64) {
        if let Some(s) = self.slots.get_mut(i as usize) {
            s.user_max_end = value;
        }
    }
    #[inline]
    fn set_root(&mut self, root: u32) {
        *self.root = root;
    }
}

impl<T, S: ObjectStorage<T>> ObjectTable<T, S> {
    pub(super) fn starts(&self) -> StartView<'_, T> {
        StartView { nodes: self.slots.nodes(), slots: self.slots.slots(), root: self.root_start }
    }

    pub(super) fn users(&self) -> UserView<'_, T> {
        UserView { slots: self.slots.slots(), root: self.root_user }
    }

    pub(super) fn starts_mut(&mut self) -> StartViewMut<'_, T> {
        let (nodes, slots) = self.slots.split_mut();
        StartViewMut { nodes, slots, root: &mut self.root_start }
    }

    pub(super) fn users_mut(&mut self) -> UserViewMut<'_, T> {
        UserViewMut { slots: self.slots.split_mut().1, root: &mut self.root_user }
    }

    // ---- address cache -------------------------------------------------------------------
    //
    // A 2-choice, 4-way set-associative map from start address to slot, embedded in the index
    // nodes (bucket b = the cache entries of nodes 2b and 2b+1). An object that finds both of
    // its buckets full is simply not cached (`uncached` counts them); lookups then fall back to
    // the tree, so the cache never changes a result, only the cost.
    //
    // An entry is the slot index in its low `b` bits (`b` the bit length of the capacity, so
    // that no entry equals NIL) and a fingerprint of the address above them: a lookup compares
    // fingerprints inside the bucket and reads the index node of a matching entry only (one
    // node in all but one case in 2^(32 − b), instead of every occupied entry of both
    // buckets).

    /// The mask of the slot-index bits of an entry: as many as the capacity's bit length.
    fn slot_mask(&self) -> u32 {
        u32::MAX.checked_shr(self.capacity().leading_zeros()).unwrap_or(0)
    }

    /// The fingerprint bits of `addr`'s entries (in place above the slot bits).
    fn fingerprint(addr: u64, mask: u32) -> u32 {
        let h = addr.rotate_right(12).wrapping_mul(0xD6E8_FEB8_6659_FD93) >> 32;
        (h as u32) & !mask
    }

    /// The cache entry naming slot `i` at address `addr`.
    pub(super) fn cache_entry_for(&self, addr: u64, i: u32) -> u32 {
        let mask = self.slot_mask();
        (i & mask) | Self::fingerprint(addr, mask)
    }

    pub(super) fn buckets_of(&self, addr: u64) -> [usize; 2] {
        let n = (self.capacity() / 2) as u64;
        let page = addr.rotate_right(12);
        let h1 = page.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        let h2 = page.wrapping_mul(0xC2B2_AE3D_27D4_EB4F) >> 32;
        // Both factors are below 2^32: the product (a bucket in `0..n`, scaled by 2^32) fits.
        [(h1.wrapping_mul(n) >> 32) as usize, (h2.wrapping_mul(n) >> 32) as usize]
    }

    /// The raw entry `k` (0..4) of `bucket`.
    pub(super) fn cache_entry(nodes: &[IndexNode], bucket: usize, k: usize) -> u32 {
        nodes
            .get(bucket.saturating_mul(2).saturating_add(k / 2))
            .and_then(|n| n.cache.get(k % 2))
            .copied()
            .unwrap_or(NIL)
    }

    /// The slot an entry names ([`NIL`] for an empty entry).
    pub(super) fn entry_slot(&self, e: u32) -> u32 {
        if e == NIL { NIL } else { e & self.slot_mask() }
    }

    pub(super) fn cache_set(&mut self, bucket: usize, k: usize, v: u32) {
        let nodes = self.slots.split_mut().0;
        if let Some(e) = nodes
            .get_mut(bucket.saturating_mul(2).saturating_add(k / 2))
            .and_then(|n| n.cache.get_mut(k % 2))
        {
            *e = v;
        }
    }

    /// Reads the first entry of both of `addr`'s buckets (for [`core::hint::black_box`]): a way
    /// to start loading the buckets an insertion will fill while the tree is being searched.
    pub(super) fn touch_buckets(&self, addr: u64) -> u32 {
        let nodes = self.slots.nodes();
        let [b1, b2] = self.buckets_of(addr);
        Self::cache_entry(nodes, b1, 0) ^ Self::cache_entry(nodes, b2, 0)
    }

    /// Where slot `i` sits in the cache (bucket, entry), if it does.
    pub(super) fn cache_find_slot(&self, addr: u64, i: u32) -> Option<(usize, usize)> {
        let nodes = self.slots.nodes();
        let want = self.cache_entry_for(addr, i);
        self.buckets_of(addr)
            .into_iter()
            .flat_map(|b| (0..4).map(move |k| (b, k)))
            .find(|&(b, k)| Self::cache_entry(nodes, b, k) == want)
    }

    pub(super) fn cache_insert(&mut self, addr: u64, i: u32) {
        let nodes = self.slots.nodes();
        let enabled = self.capacity() >= 2;
        let free = self
            .buckets_of(addr)
            .into_iter()
            .flat_map(|b| (0..4).map(move |k| (b, k)))
            .find(|&(b, k)| enabled && Self::cache_entry(nodes, b, k) == NIL);
        match free {
            Some((b, k)) => {
                let e = self.cache_entry_for(addr, i);
                self.cache_set(b, k, e);
            }
            None => self.uncached = self.uncached.saturating_add(1),
        }
    }

    pub(super) fn cache_remove(&mut self, addr: u64, i: u32) {
        match self.cache_find_slot(addr, i) {
            Some((b, k)) => self.cache_set(b, k, NIL),
            None => self.uncached = self.uncached.saturating_sub(1),
        }
    }

    /// The slot of the object starting at `addr` if the address cache has it.
    pub(super) fn cached_start(&self, addr: u64) -> Option<u32> {
        let nodes = self.slots.nodes();
        let mask = self.slot_mask();
        let tag = Self::fingerprint(addr, mask);
        for b in self.buckets_of(addr) {
            for k in 0..4 {
                let e = Self::cache_entry(nodes, b, k);
                if e != NIL && e & !mask == tag {
                    let i = e & mask;
                    if nodes.get(i as usize).is_some_and(|n| n.links.key == addr) {
                        return Some(i);
                    }
                }
            }
        }
        None
    }

    /// The slot of the object starting at `addr`: the cache, then (only if some object is
    /// uncached) the tree.
    pub(super) fn lookup_start(&self, addr: u64) -> Option<u32> {
        if let Some(i) = self.cached_start(addr) {
            return Some(i);
        }
        if self.uncached == 0 {
            return None;
        }
        avl::find_key(&self.starts(), addr)
    }

    /// The object starting exactly at `addr`.
    #[must_use]
    pub fn find_exact(&self, addr: u64) -> Option<MemoryHandle> {
        self.lookup_start(addr).and_then(|i| self.visible(i))
    }

    /// The object whose GPU range contains `addr` (an interior pointer).
    #[must_use]
    pub fn find_containing(&self, addr: u64) -> Option<MemoryHandle> {
        let t = self.starts();
        // A retired object here means no object contains addr: any other object containing
        // it would start before the retired one and overlap it.
        let p = avl::predecessor(&t, addr)?;
        if t.end(p) > addr { self.visible(p) } else { None }
    }

    /// The object starting last at or below `addr`, retired objects included (their ranges
    /// are still reserved): for an owner that keeps objects and address ranges in step, the
    /// nearest allocation below `addr`. One descent of the start index.
    #[must_use]
    pub fn last_at_or_below(&self, addr: u64) -> Option<&MemoryObject<T>> {
        let p = avl::predecessor(&self.starts(), addr)?;
        object(self.slots.slots(), p)
    }

    /// The object registered with exactly the user range `[addr, addr + size)`.
    #[must_use]
    pub fn find_userptr(&self, addr: u64, size: u64) -> Option<MemoryHandle> {
        avl::find_key_end(&self.users(), addr, addr.wrapping_add(size))
            .and_then(|i| self.visible(i))
    }

    /// Among the objects whose user range contains `addr`, the one with the highest start
    /// (then the longest range) — the one libhsakmt's right-to-left walk would meet first.
    #[must_use]
    pub fn find_userptr_containing(&self, addr: u64) -> Option<MemoryHandle> {
        avl::stab_last(&self.users(), addr).and_then(|i| self.visible(i))
    }
}
