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
//! Each bin carries an 8-bit fingerprint of its shape's hash, and two bitmasks say which bins
//! have a shape and which hold tokens. Finding a shape's bin compares the fingerprints of all
//! bins at once (one byte comparison per bin, no early exit, which compilers turn into a few
//! vector instructions) and the full key only where a fingerprint matches; a cache without
//! tokens answers [`take`](RecycleCache::take) before hashing anything, and a `take` that
//! missed leaves what it found for the [`tag`](RecycleCache::tag) of the same shape that
//! follows it (an allocation that misses, then plans), so that one search serves both. So
//! [`take`](RecycleCache::take) and [`tag`](RecycleCache::tag) cost at most a hash, `O(BINS)`
//! byte comparisons and (about one time in 16 for a shape with no bin) a key comparison;
//! [`put`](RecycleCache::put) and [`pop_any`](RecycleCache::pop_any) are `O(1)`;
//! [`check`](RecycleCache::check) is `O(BINS · DEPTH)`. No operation allocates or depends on
//! anything but the compile-time sizes. `BINS` is at most 32.
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

use core::hash::{Hash, Hasher};

use super::Violation;

/// The hash of a shape whose top byte is its bin's fingerprint: a multiply-rotate mix of the
/// words the shape's [`Hash`] writes (no state but one word, no allocation).
struct ShapeHasher(u64);

impl ShapeHasher {
    const MIX: u64 = 0x9E37_79B9_7F4A_7C15;

    fn mix(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(23) ^ v).wrapping_mul(Self::MIX);
    }
}

impl Hasher for ShapeHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.mix(u64::from(b));
        }
    }
    fn write_u8(&mut self, v: u8) {
        self.mix(u64::from(v));
    }
    fn write_u16(&mut self, v: u16) {
        self.mix(u64::from(v));
    }
    fn write_u32(&mut self, v: u32) {
        self.mix(u64::from(v));
    }
    fn write_u64(&mut self, v: u64) {
        self.mix(v);
    }
    fn write_usize(&mut self, v: usize) {
        self.mix(v as u64);
    }
}

/// The fingerprint of shape `key`.
fn fingerprint<K: Hash>(key: &K) -> u8 {
    let mut h = ShapeHasher(0);
    key.hash(&mut h);
    (h.finish() >> 56) as u8
}

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
/// - Bit `b` of `keyed` is set iff bin `b` has a shape (then `fps[b]` is its fingerprint), bit
///   `b` of `stocked` iff it holds tokens.
pub struct RecycleCache<K, I, V, const BINS: usize, const DEPTH: usize, const CAP: usize> {
    keys: [Option<K>; BINS],
    /// Fingerprints of the bins' shapes (meaningless for bins without one).
    fps: [u8; BINS],
    /// Bins with a shape.
    keyed: u32,
    /// Bins holding tokens.
    stocked: u32,
    lens: [u32; BINS],
    stamps: [u32; BINS],
    infos: [Option<I>; BINS],
    items: [[Option<V>; DEPTH]; BINS],
    len: u32,
    /// The bin of the last `take` or `put`: checked first.
    recent: u32,
    /// The shape of the last `take` that missed and the bin serving it then ([`u32::MAX`]:
    /// none), so that the `tag` that follows a miss does not search again. Cleared whenever a
    /// bin changes shape.
    missed: Option<(K, u32)>,
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

    /// The bins' bitmasks are 32-bit words.
    const BINS_FIT: () = assert!(BINS <= 32, "a RecycleCache has at most 32 bins");

    /// Every bin's bit.
    const ALL: u32 = if BINS >= 32 { u32::MAX } else { (1u32 << BINS).wrapping_sub(1) };

    /// An empty cache.
    #[must_use]
    pub const fn new() -> Self {
        let () = Self::BINS_FIT;
        Self {
            keys: [const { None }; BINS],
            fps: [0; BINS],
            keyed: 0,
            stocked: 0,
            lens: [0; BINS],
            stamps: [0; BINS],
            infos: [const { None }; BINS],
            items: [const { [const { None }; DEPTH] }; BINS],
            len: 0,
            recent: 0,
            missed: None,
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

/// Bit `b` (`b < 32`).
const fn bit(b: usize) -> u32 {
    1u32.wrapping_shl(b as u32)
}

impl<
    K: Eq + Hash + Clone,
    I: Clone,
    V: Copy,
    const BINS: usize,
    const DEPTH: usize,
    const CAP: usize,
> RecycleCache<K, I, V, BINS, DEPTH, CAP>
{
    /// The bins whose fingerprint is `fp` (whether or not they have a shape).
    #[inline]
    fn matching(&self, fp: u8) -> u32 {
        let mut m = 0u32;
        for (b, &f) in self.fps.iter().enumerate() {
            m |= u32::from(f == fp).wrapping_shl(b as u32);
        }
        m
    }

    /// The bin among `among` serving `key`, if any.
    #[inline]
    fn find(&self, key: &K, among: u32) -> Option<usize> {
        let mut m = self.matching(fingerprint(key)) & among;
        while m != 0 {
            let b = m.trailing_zeros() as usize;
            m &= m.wrapping_sub(1);
            if self.keys.get(b).is_some_and(|k| k.as_ref() == Some(key)) {
                return Some(b);
            }
        }
        None
    }

    fn pop_from(&mut self, b: usize) -> Option<V> {
        let len = self.lens.get_mut(b)?;
        let top = len.checked_sub(1)?;
        let v = self.items.get_mut(b)?.get_mut(top as usize)?.take()?;
        *len = top;
        if top == 0 {
            self.stocked &= !bit(b);
        }
        self.len = self.len.saturating_sub(1);
        Some(v)
    }

    /// Takes a token cached for shape `key`: the shape's information, the bin's tag (to put
    /// the token back later) and the token. The most recently cached token comes first.
    #[inline]
    pub fn take(&mut self, key: &K) -> Option<(&I, BinTag, V)> {
        if self.stocked == 0 {
            return None;
        }
        let recent = self.recent as usize;
        let b = if self.stocked & bit(recent) != 0
            && self.keys.get(recent).is_some_and(|k| k.as_ref() == Some(key))
        {
            recent
        } else {
            let found = self.find(key, self.keyed);
            match found {
                Some(b) if self.stocked & bit(b) != 0 => b,
                _ => {
                    self.missed = Some((key.clone(), found.map_or(u32::MAX, |b| b as u32)));
                    return None;
                }
            }
        };
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
        self.stocked |= bit(b);
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
        let known = match self.missed.take() {
            Some((k, b)) if k == *key => (b != u32::MAX).then_some(b as usize),
            _ => self.find(key, self.keyed),
        };
        if let Some(b) = known {
            return (self.stamps.get(b).map(|&stamp| BinTag { bin: b as u32, stamp }), None);
        }
        // A bin no shape has used yet, else one whose shape has no token cached.
        let all = Self::ALL;
        let idle = if self.keyed != all { !self.keyed & all } else { !self.stocked & all };
        if idle != 0 {
            return (self.claim(idle.trailing_zeros() as usize, key, info()), None);
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
        self.missed = None;
        *self.keys.get_mut(b)? = Some(key.clone());
        *self.fps.get_mut(b)? = fingerprint(key);
        self.keyed |= bit(b);
        *self.infos.get_mut(b)? = Some(info);
        *self.stamps.get_mut(b)? = stamp;
        Some(BinTag { bin: b as u32, stamp })
    }

    /// Takes any one cached token (for a flush), or `None` when the cache is empty.
    pub fn pop_any(&mut self) -> Option<V> {
        if self.stocked == 0 {
            return None;
        }
        self.pop_from(self.stocked.trailing_zeros() as usize)
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
        self.keyed = 0;
        self.stocked = 0;
        self.missed = None;
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
            if (self.keyed & bit(b) != 0) != key.is_some()
                || (self.stocked & bit(b) != 0) != (len > 0)
                || key.is_some_and(|k| self.fps.get(b) != Some(&fingerprint(k)))
            {
                return Err(bad);
            }
            if key.is_some_and(|k| {
                self.keys.iter().skip(b.saturating_add(1)).any(|o| o.as_ref() == Some(k))
            }) {
                return Err(bad);
            }
            total = total.saturating_add(len);
        }
        if total != self.len
            || total > Self::CAPACITY
            || (self.keyed | self.stocked) & !Self::ALL != 0
        {
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
