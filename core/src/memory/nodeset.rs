//! [`NodeSet`]: a fixed-size set of topology node ids.

use crate::config::NODE_SET_CAPACITY;

use super::Error;

const WORDS: usize = NODE_SET_CAPACITY / 64;

/// A set of topology node ids `0..NodeSet::CAPACITY` (128), stored as a bitmap.
///
/// Replaces libhsakmt's per-object `registered_*_id_array` / `mapped_*_id_array` heap arrays.
/// All operations are `O(1)` (two words), iteration is in ascending order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NodeSet {
    words: [u64; WORDS],
}

impl NodeSet {
    /// The number of node ids a set can hold (ids `0..CAPACITY`).
    pub const CAPACITY: u32 = NODE_SET_CAPACITY as u32;

    /// The empty set.
    pub const EMPTY: Self = Self { words: [0; WORDS] };

    /// The empty set.
    #[must_use]
    pub const fn new() -> Self {
        Self::EMPTY
    }

    /// The set holding exactly `node`.
    ///
    /// # Errors
    /// [`Error::InvalidNode`] when `node >= CAPACITY`.
    pub fn single(node: u32) -> Result<Self, Error> {
        let mut s = Self::EMPTY;
        s.insert(node)?;
        Ok(s)
    }

    /// The set of the given ids.
    ///
    /// # Errors
    /// [`Error::InvalidNode`] for the first id `>= CAPACITY`.
    pub fn from_slice(nodes: &[u32]) -> Result<Self, Error> {
        let mut s = Self::EMPTY;
        for &n in nodes {
            s.insert(n)?;
        }
        Ok(s)
    }

    fn locate(node: u32) -> Result<(usize, u64), Error> {
        if node >= Self::CAPACITY {
            return Err(Error::InvalidNode { node });
        }
        Ok(((node / 64) as usize, 1u64 << (node % 64)))
    }

    /// Adds `node`; returns whether it was newly added.
    ///
    /// # Errors
    /// [`Error::InvalidNode`] when `node >= CAPACITY` (the set is unchanged).
    pub fn insert(&mut self, node: u32) -> Result<bool, Error> {
        let (w, bit) = Self::locate(node)?;
        let word = self.words.get_mut(w).ok_or(Error::InvalidNode { node })?;
        let added = *word & bit == 0;
        *word |= bit;
        Ok(added)
    }

    /// Removes `node`; returns whether it was present. Ids out of range are simply absent.
    pub fn remove(&mut self, node: u32) -> bool {
        let Ok((w, bit)) = Self::locate(node) else { return false };
        match self.words.get_mut(w) {
            Some(word) => {
                let present = *word & bit != 0;
                *word &= !bit;
                present
            }
            None => false,
        }
    }

    /// Whether `node` is in the set.
    #[must_use]
    pub fn contains(&self, node: u32) -> bool {
        match Self::locate(node) {
            Ok((w, bit)) => self.words.get(w).is_some_and(|word| word & bit != 0),
            Err(_) => false,
        }
    }

    /// The number of ids in the set.
    #[must_use]
    pub const fn len(&self) -> u32 {
        // At most 128.
        self.words[0].count_ones().saturating_add(self.words[1].count_ones())
    }

    /// Whether the set is empty.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.words[0] | self.words[1] == 0
    }

    /// Removes every id.
    pub fn clear(&mut self) {
        self.words = [0; WORDS];
    }

    fn zip(self, other: Self, f: impl Fn(u64, u64) -> u64) -> Self {
        let mut words = [0; WORDS];
        for ((o, a), b) in words.iter_mut().zip(self.words).zip(other.words) {
            *o = f(a, b);
        }
        Self { words }
    }

    /// The ids in either set.
    #[must_use]
    pub fn union(self, other: Self) -> Self {
        self.zip(other, |a, b| a | b)
    }

    /// The ids in both sets.
    #[must_use]
    pub fn intersection(self, other: Self) -> Self {
        self.zip(other, |a, b| a & b)
    }

    /// The ids in `self` but not in `other`.
    #[must_use]
    pub fn difference(self, other: Self) -> Self {
        self.zip(other, |a, b| a & !b)
    }

    /// Whether every id of `self` is in `other`.
    #[must_use]
    pub fn is_subset(&self, other: &Self) -> bool {
        self.difference(*other).is_empty()
    }

    /// The lowest id in the set.
    #[must_use]
    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    /// The ids in ascending order.
    #[must_use]
    pub fn iter(&self) -> NodeSetIter {
        NodeSetIter { words: self.words, word: 0 }
    }
}

impl IntoIterator for NodeSet {
    type Item = u32;
    type IntoIter = NodeSetIter;
    fn into_iter(self) -> NodeSetIter {
        self.iter()
    }
}

impl IntoIterator for &NodeSet {
    type Item = u32;
    type IntoIter = NodeSetIter;
    fn into_iter(self) -> NodeSetIter {
        self.iter()
    }
}

/// Ascending iterator over a [`NodeSet`] (a copy of the set; it does not borrow it).
#[derive(Debug, Clone)]
pub struct NodeSetIter {
    words: [u64; WORDS],
    word: usize,
}

impl Iterator for NodeSetIter {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        while let Some(w) = self.words.get_mut(self.word) {
            if *w != 0 {
                let bit = w.trailing_zeros();
                *w &= w.wrapping_sub(1);
                // At most 127.
                return Some((self.word as u32).saturating_mul(64).saturating_add(bit));
            }
            self.word = self.word.saturating_add(1);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn basic_set_algebra() {
        let mut a = NodeSet::new();
        assert!(a.is_empty());
        assert_eq!(a.insert(1), Ok(true));
        assert_eq!(a.insert(1), Ok(false));
        assert_eq!(a.insert(127), Ok(true));
        assert_eq!(a.insert(128), Err(Error::InvalidNode { node: 128 }));
        assert_eq!(a.len(), 2);
        assert!(a.contains(127) && !a.contains(128) && !a.contains(2));
        let b = NodeSet::from_slice(&[1, 2, 64]).unwrap();
        assert_eq!(a.union(b).iter().collect::<Vec<_>>(), [1, 2, 64, 127]);
        assert_eq!(a.intersection(b).iter().collect::<Vec<_>>(), [1]);
        assert_eq!(a.difference(b).iter().collect::<Vec<_>>(), [127]);
        assert!(NodeSet::single(2).unwrap().is_subset(&b));
        assert!(!a.is_subset(&b));
        assert_eq!(b.first(), Some(1));
        assert!(a.remove(127) && !a.remove(127) && !a.remove(1000));
        a.clear();
        assert_eq!(a, NodeSet::EMPTY);
    }
}
