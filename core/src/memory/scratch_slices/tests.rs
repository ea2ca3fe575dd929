use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::vec::Vec;

const SLICE: u64 = 0x1_0000;
const BASE: u64 = 0x7f00_0000_0000;

#[test]
fn slices_map_and_unmap_in_any_order() {
    let mut t = ScratchSlices::new();
    // kfdtest's FlatScratchAccess: slices 2, 0, 1 mapped, then 1, 2, 0 unmapped.
    for k in [2, 0, 1] {
        let id = t.begin_map(1, BASE + k * SLICE, SLICE).unwrap();
        assert_eq!(t.begin_unmap(BASE + k * SLICE), Err(Error::Busy { addr: BASE + k * SLICE }));
        t.finish_map(id, Some(100 + k));
    }
    assert_eq!(t.count(1), 3);
    assert_eq!(t.count(2), 0);
    assert_eq!(
        t.find(BASE + SLICE).map(|s| (s.handle, s.size, s.is_mapped())),
        Some((101, SLICE, true))
    );
    for k in [1, 2, 0] {
        let (id, s) = t.begin_unmap(BASE + k * SLICE).unwrap();
        assert_eq!((s.start, s.handle, s.node), (BASE + k * SLICE, 100 + k, 1));
        t.finish_unmap(id, true);
        assert!(t.find(BASE + k * SLICE).is_none());
    }
    assert_eq!(t.iter().count(), 0);
    // The whole range afterwards.
    let id = t.begin_map(1, BASE, 3 * SLICE).unwrap();
    t.finish_map(id, Some(7));
    assert_eq!(t.find(BASE).map(ScratchSlice::end), Some(BASE + 3 * SLICE));
}

#[test]
fn overlaps_and_bad_ranges_are_refused_and_change_nothing() {
    let mut t = ScratchSlices::new();
    let id = t.begin_map(1, BASE + SLICE, SLICE).unwrap();
    // A slice being created already claims its range.
    assert_eq!(t.begin_map(1, BASE, 2 * SLICE), Err(Error::AddressInUse { addr: BASE }));
    t.finish_map(id, Some(5));
    assert_eq!(
        t.begin_map(1, BASE + SLICE + 0x1000, 0x1000),
        Err(Error::AddressInUse { addr: BASE + SLICE + 0x1000 })
    );
    assert_eq!(t.begin_map(1, BASE, 0), Err(Error::ZeroSize));
    assert_eq!(t.begin_map(1, u64::MAX - 0xfff, 0x2000), Err(Error::SizeOverflow));
    // Neighbours touch without overlapping.
    let a = t.begin_map(1, BASE, SLICE).unwrap();
    let b = t.begin_map(1, BASE + 2 * SLICE, SLICE).unwrap();
    t.finish_map(a, None);
    t.finish_map(b, Some(6));
    assert!(t.find(BASE).is_none(), "a refused creation is forgotten");
    assert_eq!(t.begin_unmap(BASE + 0x1000), Err(Error::UnknownAddress { addr: BASE + 0x1000 }));
    assert_eq!(t.count(1), 2);
}

#[test]
fn a_failed_unmap_keeps_the_slice_and_any_slice_of_a_node_can_be_taken() {
    let mut t = ScratchSlices::new();
    for (node, k) in [(1, 0), (2, 4), (1, 1)] {
        let id = t.begin_map(node, BASE + k * SLICE, SLICE).unwrap();
        t.finish_map(id, Some(k + 1));
    }
    let (id, s) = t.begin_unmap(BASE).unwrap();
    t.finish_unmap(id, false);
    assert_eq!(t.find(BASE).map(ScratchSlice::is_mapped), Some(true), "the kernel kept it");
    assert_eq!(s.handle, 1);
    let mut taken = Vec::new();
    while let Some((id, s)) = t.begin_unmap_any(1) {
        taken.push(s.start);
        t.finish_unmap(id, true);
    }
    taken.sort_unstable();
    assert_eq!(taken, [BASE, BASE + SLICE]);
    assert_eq!((t.count(1), t.count(2)), (0, 1));
    t.clear();
    assert_eq!(t.iter().count(), 0);
}

#[test]
fn capacity_is_a_typed_error() {
    let mut t = ScratchSlices::new();
    for k in 0..SCRATCH_SLICE_CAPACITY as u64 {
        let id = t.begin_map(0, BASE + k * SLICE, SLICE).unwrap();
        t.finish_map(id, Some(k + 1));
    }
    let full = Error::CapacityExhausted { capacity: SCRATCH_SLICE_CAPACITY as u32 };
    assert_eq!(t.begin_map(0, BASE - SLICE, SLICE), Err(full));
    let (id, _) = t.begin_unmap(BASE).unwrap();
    t.finish_unmap(id, true);
    assert!(t.begin_map(0, BASE - SLICE, SLICE).is_ok(), "a freed slot is reused");
}

#[derive(Debug, Clone)]
enum Op {
    Map { node: u32, page: u64, pages: u64, ok: bool },
    Unmap { page: u64, ok: bool },
    UnmapAny { node: u32 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u32..3, 0u64..64, 1u64..8, any::<bool>()).prop_map(|(node, page, pages, ok)| Op::Map {
            node,
            page,
            pages,
            ok
        }),
        (0u64..64, any::<bool>()).prop_map(|(page, ok)| Op::Unmap { page, ok }),
        (0u32..3).prop_map(|node| Op::UnmapAny { node }),
    ]
}

proptest! {
    /// Against a model (start → (end, node, handle)): every operation either does what the
    /// model does or is refused with the model unchanged; slices never overlap.
    #[test]
    fn matches_a_model(ops in proptest::collection::vec(op(), 1..200)) {
        let mut t = ScratchSlices::new();
        let mut model: BTreeMap<u64, (u64, u32, u64)> = BTreeMap::new();
        let mut next = 1u64;
        for op in ops {
            match op {
                Op::Map { node, page, pages, ok } => {
                    let (start, size) = (BASE + page * 0x1000, pages * 0x1000);
                    let overlap = model.iter().any(|(&s, &(e, _, _))| s < start + size && start < e);
                    let full = model.len() == SCRATCH_SLICE_CAPACITY;
                    match t.begin_map(node, start, size) {
                        Ok(id) => {
                            prop_assert!(!overlap && !full);
                            if ok {
                                t.finish_map(id, Some(next));
                                model.insert(start, (start + size, node, next));
                                next += 1;
                            } else {
                                t.finish_map(id, None);
                            }
                        }
                        Err(Error::AddressInUse { .. }) => prop_assert!(overlap),
                        Err(e) => prop_assert!(full, "{e:?}"),
                    }
                }
                Op::Unmap { page, ok } => {
                    let start = BASE + page * 0x1000;
                    match t.begin_unmap(start) {
                        Ok((id, s)) => {
                            let &(end, node, handle) = model.get(&start).unwrap();
                            prop_assert_eq!((s.end(), s.node, s.handle), (end, node, handle));
                            t.finish_unmap(id, ok);
                            if ok {
                                model.remove(&start);
                            }
                        }
                        Err(e) => {
                            prop_assert_eq!(e, Error::UnknownAddress { addr: start });
                            prop_assert!(!model.contains_key(&start));
                        }
                    }
                }
                Op::UnmapAny { node } => match t.begin_unmap_any(node) {
                    Some((id, s)) => {
                        prop_assert_eq!(model.remove(&s.start).map(|m| m.1), Some(node));
                        t.finish_unmap(id, true);
                    }
                    None => prop_assert!(model.values().all(|m| m.1 != node)),
                },
            }
            let mut seen: Vec<(u64, u64, u32, u64)> =
                t.iter().map(|s| (s.start, s.end(), s.node, s.handle)).collect();
            seen.sort_unstable();
            let want: Vec<(u64, u64, u32, u64)> =
                model.iter().map(|(&s, &(e, n, h))| (s, e, n, h)).collect();
            prop_assert_eq!(seen, want);
            prop_assert!(t.iter().all(ScratchSlice::is_mapped));
        }
    }
}
