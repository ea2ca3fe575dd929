use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::vec::Vec;

const BINS: usize = 4;
const DEPTH: usize = 3;
const CAP: usize = 8;
type Cache = RecycleCache<u8, u32, u32, BINS, DEPTH, CAP>;

#[test]
fn bins_tags_and_capacity() {
    let mut c = Cache::new();
    assert_eq!(Cache::CAPACITY, 8);
    let (t1, _) = c.tag(&1, || 100);
    let t1 = t1.unwrap();
    // The same shape gets the same bin (no new information).
    assert_eq!(c.tag(&1, || unreachable!()), (Some(t1), None));
    for v in 0..DEPTH as u32 {
        assert_eq!(c.put(t1, v), Ok(()));
    }
    assert!(!c.can_put(t1));
    assert_eq!(c.put(t1, 9), Err(9), "bin full");
    assert_eq!(c.take(&1), Some((&100, t1, 2)), "last in, first out");
    assert_eq!(c.take(&2), None);
    // Fill the other bins; a new shape then evicts from a victim, one token per call.
    for k in 2..=4u8 {
        let t = c.tag(&k, || u32::from(k) * 100).0.unwrap();
        c.put(t, u32::from(k) * 10).unwrap();
    }
    assert_eq!(c.len(), 5);
    let (t5, evicted) = c.tag(&5, || 500);
    assert_eq!(evicted, Some(1), "the victim bin's top token comes back");
    assert_eq!(t5, None, "the victim still holds a token");
    let (t5, evicted) = c.tag(&5, || 500);
    assert_eq!(evicted, Some(0));
    let t5 = t5.unwrap();
    assert_eq!(t5.bin, t1.bin, "the emptied victim now serves the new shape");
    assert_eq!(c.put(t1, 3), Err(3), "a tag of the bin's previous shape is stale");
    assert_eq!(c.put(t5, 50), Ok(()));
    assert_eq!(c.take(&5), Some((&500, t5, 50)));
    c.check().unwrap();
    // pop_any drains; clear forgets shapes and tags.
    let mut drained: Vec<u32> = core::iter::from_fn(|| c.pop_any()).collect();
    drained.sort_unstable();
    assert_eq!(drained, [20, 30, 40]);
    let t2 = c.tag(&2, || 200).0.unwrap();
    c.put(t2, 1).unwrap();
    c.clear();
    assert!(c.is_empty());
    assert_eq!(c.put(t2, 1), Err(1));
    assert_eq!(c.take(&2), None);
    c.check().unwrap();
}

#[test]
fn the_total_is_bounded() {
    let mut c = Cache::new();
    let tags: Vec<BinTag> = (0..BINS as u8).map(|k| c.tag(&k, || 0).0.unwrap()).collect();
    let mut accepted = 0;
    for v in 0..(BINS * DEPTH) as u32 {
        if c.put(tags[v as usize % BINS], v).is_ok() {
            accepted += 1;
        }
    }
    assert_eq!(accepted, CAP);
    assert_eq!(c.len(), CAP as u32);
    c.check().unwrap();
}

#[test]
fn a_missed_take_leads_tag_to_the_same_bin_and_no_further() {
    let mut c = Cache::new();
    let t1 = c.tag(&1, || 100).0.unwrap();
    c.put(t1, 10).unwrap();
    // A miss for a shape without a bin: the tag that follows claims one.
    assert_eq!(c.take(&2), None);
    let t2 = c.tag(&2, || 200).0.unwrap();
    assert_ne!(t2.bin, t1.bin);
    // A miss for a shape whose bin is empty: the tag that follows names that bin.
    assert_eq!(c.take(&2), None);
    assert_eq!(c.tag(&2, || unreachable!()), (Some(t2), None));
    // A miss remembered for shape 3 is forgotten when another shape claims a bin (which may be
    // the one shape 3 would have got): shape 3 then gets a bin of its own.
    assert_eq!(c.take(&3), None);
    let t4 = c.tag(&4, || 400).0.unwrap();
    let t3 = c.tag(&3, || 300).0.unwrap();
    assert!(t3.bin != t4.bin && t3.bin != t1.bin && t3.bin != t2.bin);
    assert_eq!(c.take(&1), Some((&100, t1, 10)));
    // ... and by a clear.
    assert_eq!(c.take(&1), None);
    c.clear();
    let t1b = c.tag(&1, || 101).0.unwrap();
    c.put(t1b, 11).unwrap();
    assert_eq!(c.take(&1), Some((&101, t1b, 11)));
    c.check().unwrap();
}

#[derive(Debug, Clone)]
enum Op {
    Tag(u8),
    Put(usize),
    Take(u8),
    PopAny,
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..7).prop_map(Op::Tag),
        5 => any::<usize>().prop_map(Op::Put),
        4 => (0u8..7).prop_map(Op::Take),
        1 => Just(Op::PopAny),
        1 => Just(Op::Clear),
    ]
}

proptest! {
    /// Against a model of per-shape stacks: no token is ever lost, duplicated or handed out for
    /// another shape; each shape is last in, first out; the bounds hold; and a put succeeds
    /// exactly when its bin still serves the shape and neither the bin nor the cache is full.
    #[test]
    fn matches_model(ops in proptest::collection::vec(op(), 1..200)) {
        let mut c = Cache::new();
        let mut stacks: BTreeMap<u8, Vec<u32>> = BTreeMap::new();
        let mut tags: Vec<(BinTag, u8)> = Vec::new();
        let mut next = 0u32;
        let total = |s: &BTreeMap<u8, Vec<u32>>| s.values().map(Vec::len).sum::<usize>();
        for op in ops {
            match op {
                Op::Tag(k) => {
                    let had = stacks.get(&k).is_some_and(|s| !s.is_empty());
                    let (tag, evicted) = c.tag(&k, || u32::from(k) * 100);
                    if had {
                        prop_assert!(tag.is_some() && evicted.is_none());
                    }
                    if let Some(v) = evicted {
                        let owner = stacks.iter().find(|(_, s)| s.last() == Some(&v)).map(|(&o, _)| o);
                        prop_assert!(owner.is_some_and(|o| o != k), "evicted {} is no shape's top", v);
                        stacks.get_mut(&owner.unwrap()).unwrap().pop();
                    }
                    if let Some(t) = tag {
                        tags.push((t, k));
                    }
                }
                Op::Put(pick) => {
                    if let Some(&(t, k)) = tags.get(pick % tags.len().max(1)) {
                        let v = next;
                        next += 1;
                        let current = c.stamps[t.bin as usize] == t.stamp;
                        let room = total(&stacks) < CAP
                            && stacks.get(&k).map_or(0, Vec::len) < DEPTH;
                        match c.put(t, v) {
                            Ok(()) => {
                                prop_assert!(current && room);
                                stacks.entry(k).or_default().push(v);
                            }
                            Err(back) => {
                                prop_assert_eq!(back, v);
                                prop_assert!(!current || !room);
                            }
                        }
                    }
                }
                Op::Take(k) => {
                    let want = stacks.get_mut(&k).and_then(Vec::pop);
                    let got = c.take(&k).map(|(info, _, v)| (*info, v));
                    prop_assert_eq!(got, want.map(|v| (u32::from(k) * 100, v)));
                }
                Op::PopAny => {
                    match c.pop_any() {
                        Some(v) => {
                            let owner = stacks.iter().find(|(_, s)| s.last() == Some(&v)).map(|(&o, _)| o);
                            prop_assert!(owner.is_some());
                            stacks.get_mut(&owner.unwrap()).unwrap().pop();
                        }
                        None => prop_assert_eq!(total(&stacks), 0),
                    }
                }
                Op::Clear => {
                    c.clear();
                    stacks.clear();
                }
            }
            prop_assert_eq!(c.check(), Ok(()));
            prop_assert_eq!(c.len() as usize, total(&stacks));
            let mut held: Vec<u32> = c.iter().collect();
            held.sort_unstable();
            let mut want: Vec<u32> = stacks.values().flatten().copied().collect();
            want.sort_unstable();
            prop_assert_eq!(held, want);
        }
    }
}
