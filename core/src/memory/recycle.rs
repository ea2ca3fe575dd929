//! [`RecycleCache`]: a bounded cache ("magazine") of recently freed allocations, grouped by
//! shape, so that the next allocation of the same shape reuses one in `O(1)`.
//!
//! The cache only stores small `Copy` tokens (`V`) in per-shape stacks; what a token stands for —
//! an address range still reserved, an object slot still indexed but invisible — is the owner's
//! business (the memory manager keeps a freed allocation's range and slot, see
//! [`crate::device::memory_manager`]). Each shape (`K`) has a bin holding up to `DEPTH` tokens and
//! the owner's precomputed information about the shape (`I`, e.g. the allocation plan it implies),
//! and the whole cache holds at most `CAP` tokens. A cached token is always the owner's to take
//! back: [`RecycleCache::pop_any`] and [`RecycleCache::take`] hand tokens out, nothing is ever
//! dropped silently.
//!
//! # Bins and tags
//! A bin is claimed for a shape by [`RecycleCache::tag`], which returns a [`BinTag`] the owner
//! stores with the allocation; the allocation's token can later be [`put`](RecycleCache::put)
//! into that bin only while the bin still serves the same shape (the tag carries a stamp that
//! changes whenever the bin is claimed again). Only empty bins are claimed, bins no shape has
//! used first. When every bin holds tokens of other shapes, `tag` takes one token out of a
//! victim bin (round robin) and hands it back to the owner to release — so stale shapes drain
//! one token per miss and the cache turns over, while each call stays `O(BINS)`.
//!
//! # Costs
//! [`take`](RecycleCache::take): a check of the most recently used bin, else a scan of at most
//! `BINS` keys; [`put`](RecycleCache::put): `O(1)`; [`tag`](RecycleCache::tag) and
//! [`pop_any`](RecycleCache::pop_any): `O(BINS)`; [`check`](RecycleCache::check):
//! `O(BINS · DEPTH)`. No operation allocates or depends on anything but the compile-time sizes.
//!
//! # Example
//! ```
//! use hsakmt_core::memory::recycle::RecycleCache;
//!
//! // Shapes are sizes, the per-shape information a name, the tokens slot numbers.
//! let mut cache = RecycleCache::<u64, &str, u32, 4, 2, 6>::new();
//! let (tag, evicted) = cache.tag(&4096, || "4 KiB");
//! assert_eq!(evicted, None);
//! let tag = tag.unwrap();
//! assert_eq!(cache.put(tag, 7), Ok(()));
//! assert_eq!(cache.take(&4096), Some((&"4 KiB", tag, 7)));
//! assert_eq!(cache.take(&4096), None); // empty again
//! ```

use super::Violation;

/// The bin an allocation's token goes back to, as issued by [`RecycleCache::tag`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BinTag {
    bin: u32,
    stamp: u32,
}

/// A bounded cache of tokens by shape: `BINS` bins of up to `DEPTH` tokens each, at most `CAP`
/// tokens in all (see the [module docs](self)).
///
/// # Invariants
/// - Bin `b` holds `lens[b] ≤ DEPTH` tokens in `items[b][..lens[b]]` (and `None` after them);
///   the total is `len ≤ CAP`.
/// - A bin holding tokens has a shape; shapes of bins are pairwise distinct.
pub struct RecycleCache<K, I, V, const BINS: usize, const DEPTH: usize, const CAP: usize> {
    keys: [Option<K>; BINS],
    lens: [u32; BINS],
    stamps: [u32; BINS],
    infos: [Option<I>; BINS],
    items: [[Option<V>; DEPTH]; BINS],
    len: u32,
    /// The bin of the last `take` or `put`: checked first.
    recent: u32,
    /// The next victim bin when every bin is in use.
    hand: u32,
    /// Source of bin stamps.
    next_stamp: u32,
}

impl<K, I, V, const BINS: usize, const DEPTH: usize, const CAP: usize>
    RecycleCache<K, I, V, BINS, DEPTH, CAP>
{
    /// The most tokens the cache holds.
    pub const CAPACITY: u32 = if CAP < BINS * DEPTH { CAP as u32 } else { (BINS * DEPTH) as u32 };

    /// An empty cache.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            keys: [const { None }; BINS],
            lens: [0; BINS],
            stamps: [0; BINS],
            infos: [const { None }; BINS],
            items: [const { [const { None }; DEPTH] }; BINS],
            len: 0,
            recent: 0,
            hand: 0,
            next_stamp: 1,
        }
    }

    /// The number of cached tokens.
    #[must_use]
    pub const fn len(&self) -> u32 {
        self.len
    }

    /// Whether no token is cached.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<K, I, V, const BINS: usize, const DEPTH: usize, const CAP: usize> Default
    for RecycleCache<K, I, V, BINS, DEPTH, CAP>
{
    fn default() -> Self {
        Self::new()
    }
}

impl<K: PartialEq, I: Clone, V: Copy, const BINS: usize, const DEPTH: usize, const CAP: usize>
    RecycleCache<K, I, V, BINS, DEPTH, CAP>
{
    /// The bin serving `key`, if any.
    #[inline]
    fn find(&self, key: &K) -> Option<usize> {
        let recent = self.recent as usize;
        if self.keys.get(recent).is_some_and(|k| k.as_ref() == Some(key)) {
            return Some(recent);
        }
        self.keys.iter().position(|k| k.as_ref() == Some(key))
    }

    fn pop_from(&mut self, b: usize) -> Option<V> {
        let len = self.lens.get_mut(b)?;
        let top = len.checked_sub(1)?;
        let v = self.items.get_mut(b)?.get_mut(top as usize)?.take()?;
        *len = top;
        self.len = self.len.saturating_sub(1);
        Some(v)
    }

    /// Takes a token cached for shape `key`: the shape's information, the bin's tag (to put
    /// the token back later) and the token. The most recently cached token comes first.
    #[inline]
    pub fn take(&mut self, key: &K) -> Option<(&I, BinTag, V)> {
        let b = self.find(key)?;
        let v = self.pop_from(b)?;
        self.recent = b as u32;
        let tag = BinTag { bin: b as u32, stamp: self.stamps.get(b).copied()? };
        Some((self.infos.get(b)?.as_ref()?, tag, v))
    }

    /// Whether [`RecycleCache::put`] would accept a token for `tag` now.
    #[must_use]
    pub fn can_put(&self, tag: BinTag) -> bool {
        let b = tag.bin as usize;
        self.len < Self::CAPACITY
            && self.stamps.get(b) == Some(&tag.stamp)
            && self.lens.get(b).is_some_and(|&l| (l as usize) < DEPTH)
    }

    /// Caches `v` in the bin `tag` names.
    ///
    /// # Errors
    /// The token comes back when the cache or the bin is full, or the bin has been claimed for
    /// another shape since the tag was issued.
    pub fn put(&mut self, tag: BinTag, v: V) -> Result<(), V> {
        if !self.can_put(tag) {
            return Err(v);
        }
        let b = tag.bin as usize;
        let (Some(len), Some(items)) = (self.lens.get_mut(b), self.items.get_mut(b)) else {
            return Err(v);
        };
        let Some(slot) = items.get_mut(*len as usize) else { return Err(v) };
        *slot = Some(v);
        *len = (*len).saturating_add(1);
        self.len = self.len.saturating_add(1);
        self.recent = tag.bin;
        Ok(())
    }

    /// The tag of the bin for shape `key`: its bin if it has one, else an empty bin claimed for
    /// it (storing `info()` as the shape's information). When every bin serves another shape
    /// and holds tokens, one token of a victim bin is taken out and returned for the caller to
    /// release; the victim is claimed once empty. `None` as the tag: no bin this time.
    pub fn tag(&mut self, key: &K, info: impl FnOnce() -> I) -> (Option<BinTag>, Option<V>)
    where
        K: Clone,
    {
        if let Some(b) = self.find(key) {
            return (self.stamps.get(b).map(|&stamp| BinTag { bin: b as u32, stamp }), None);
        }
        // A bin no shape has used yet, else one whose shape has no token cached.
        let unused = self.keys.iter().position(Option::is_none);
        if let Some(b) = unused.or_else(|| self.lens.iter().position(|&l| l == 0)) {
            return (self.claim(b, key, info()), None);
        }
        let victim = (self.hand as usize).checked_rem(BINS).unwrap_or(0);
        let evicted = self.pop_from(victim);
        if self.lens.get(victim) == Some(&0) {
            self.hand = victim.saturating_add(1).checked_rem(BINS).unwrap_or(0) as u32;
            return (self.claim(victim, key, info()), evicted);
        }
        (None, evicted)
    }

    fn claim(&mut self, b: usize, key: &K, info: I) -> Option<BinTag>
    where
        K: Clone,
    {
        let stamp = self.next_stamp;
        self.next_stamp = self.next_stamp.wrapping_add(1).max(1);
        *self.keys.get_mut(b)? = Some(key.clone());
        *self.infos.get_mut(b)? = Some(info);
        *self.stamps.get_mut(b)? = stamp;
        Some(BinTag { bin: b as u32, stamp })
    }

    /// Takes any one cached token (for a flush), or `None` when the cache is empty.
    pub fn pop_any(&mut self) -> Option<V> {
        if self.len == 0 {
            return None;
        }
        let b = self.lens.iter().position(|&l| l > 0)?;
        self.pop_from(b)
    }

    /// Forgets every token and shape (the owner has released or forgotten what they stand
    /// for). Tags issued before are no longer accepted.
    pub fn clear(&mut self) {
        for b in 0..BINS {
            if let Some(k) = self.keys.get_mut(b) {
                *k = None;
            }
            if let Some(i) = self.infos.get_mut(b) {
                *i = None;
            }
            if let Some(l) = self.lens.get_mut(b) {
                *l = 0;
            }
            if let Some(s) = self.stamps.get_mut(b) {
                *s = 0;
            }
            if let Some(items) = self.items.get_mut(b) {
                for v in items.iter_mut() {
                    *v = None;
                }
            }
        }
        self.len = 0;
        self.recent = 0;
        self.hand = 0;
    }

    /// Every cached token.
    pub fn iter(&self) -> impl Iterator<Item = V> + '_ {
        self.items
            .iter()
            .zip(self.lens.iter())
            .flat_map(|(items, &len)| items.iter().take(len as usize).filter_map(|v| *v))
    }

    /// Verifies the invariants (`O(BINS · DEPTH)`).
    ///
    /// # Errors
    /// [`Violation::Counter`] for a wrong count, [`Violation::SlotList`] for a bin whose
    /// stack or shape is inconsistent.
    pub fn check(&self) -> Result<(), Violation> {
        let mut total = 0u32;
        for b in 0..BINS {
            let len = self.lens.get(b).copied().unwrap_or(0);
            let bad = Violation::SlotList { slot: b as u32 };
            if len as usize > DEPTH {
                return Err(bad);
            }
            let items = self.items.get(b).ok_or(bad)?;
            for (k, v) in items.iter().enumerate() {
                if v.is_some() != (k < len as usize) {
                    return Err(bad);
                }
            }
            let key = self.keys.get(b).and_then(Option::as_ref);
            if len > 0 && key.is_none() {
                return Err(bad);
            }
            if key.is_some_and(|k| {
                self.keys.iter().skip(b.saturating_add(1)).any(|o| o.as_ref() == Some(k))
            }) {
                return Err(bad);
            }
            total = total.saturating_add(len);
        }
        if total != self.len || total > Self::CAPACITY {
            return Err(Violation::Counter);
        }
        Ok(())
    }
}

impl<K, I, V, const BINS: usize, const DEPTH: usize, const CAP: usize> core::fmt::Debug
    for RecycleCache<K, I, V, BINS, DEPTH, CAP>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RecycleCache").field("len", &self.len).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
