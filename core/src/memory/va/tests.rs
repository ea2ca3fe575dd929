use std::boxed::Box;
use std::collections::BTreeMap;
use std::vec::Vec;

use proptest::prelude::*;

use super::*;

const G: u64 = GRANULE;
const BASE: u64 = 0x7f00_0000_0000;

fn boxed(cap: usize) -> VaAllocator<Box<[VaSlot]>> {
    VaAllocator::with_storage(std::vec![VaSlot::EMPTY; cap].into_boxed_slice())
}

#[test]
fn alloc_free_coalesces_to_one_block() {
    let mut va = InlineVaAllocator::<32>::new();
    va.add_range(BASE, 1 << 20).unwrap();
    let a = va.alloc(G, 0).unwrap().addr;
    let b = va.alloc(3 * G, 0).unwrap().addr;
    let c = va.alloc(5000, 0).unwrap().addr; // rounded to 2 granules
    va.check_invariants().unwrap();
    assert_eq!(va.live_count(), 3);
    assert_eq!(va.used_bytes(), 6 * G);
    assert_eq!(va.free_bytes() + va.used_bytes(), 1 << 20);
    assert_eq!(va.allocation_size(c), Some(2 * G));
    assert_eq!(va.allocation_containing(b + G + 5), Some((b, 3 * G)));
    assert_eq!(va.allocation_containing(BASE + (1 << 19)), None);
    // Free in an order that exercises both coalescing directions.
    assert_eq!(va.free(b), Ok(3 * G));
    va.check_invariants().unwrap();
    assert_eq!(va.free(a), Ok(G));
    va.check_invariants().unwrap();
    assert_eq!(va.free(c), Ok(2 * G));
    va.check_invariants().unwrap();
    assert_eq!(va.live_count(), 0);
    assert_eq!(va.descriptors_in_use(), 1);
    assert_eq!(va.largest_free_block(), 1 << 20);
}

#[test]
fn alignment_and_phase() {
    let mut va = InlineVaAllocator::<64>::new();
    va.add_range(BASE + G, 1 << 30).unwrap(); // base deliberately not 2 MiB aligned
    for shift in 12..=24 {
        let align = 1u64 << shift;
        let a = va.alloc(G * 3, align).unwrap().addr;
        assert_eq!(a % align, 0, "align {align:#x}");
    }
    // End alignment: a 3-page buffer whose end is 64 KiB aligned.
    let size = 3 * G;
    let align = 64 << 10;
    let a = va.alloc_with_phase(size, align, align - size % align).unwrap().addr;
    assert_eq!((a + size) % align, 0);
    assert_ne!(a % align, 0);
    va.check_invariants().unwrap();
    assert_eq!(va.alloc(G, 3 * G), Err(Error::BadAlignment { align: 3 * G }));
    assert_eq!(va.alloc_with_phase(G, 2 * G, 1), Err(Error::Misaligned { value: 1 }));
    assert_eq!(va.alloc(0, 0), Err(Error::ZeroSize));
    assert_eq!(va.alloc(u64::MAX, 0), Err(Error::SizeOverflow));
    // Alignments below the granule are the granule.
    assert_eq!(va.alloc(G, 16).unwrap().addr % G, 0);
}

#[test]
fn fixed_address_requests() {
    let mut va = InlineVaAllocator::<64>::new();
    va.add_range(BASE, 64 * G).unwrap();
    va.add_range(BASE + 128 * G, 64 * G).unwrap();
    assert_eq!(va.alloc_at(BASE + 4 * G, 4 * G).map(|b| b.addr), Ok(BASE + 4 * G));
    assert_eq!(va.alloc_at(BASE + 7 * G, G), Err(Error::AddressInUse { addr: BASE + 7 * G }));
    assert_eq!(va.alloc_at(BASE + 2 * G, 3 * G), Err(Error::AddressInUse { addr: BASE + 2 * G }));
    assert_eq!(va.alloc_at(BASE + 8 * G, G).map(|b| b.addr), Ok(BASE + 8 * G)); // right after, adjacent
    assert_eq!(va.alloc_at(BASE, G).map(|b| b.addr), Ok(BASE)); // range start
    assert_eq!(va.alloc_at(BASE + 63 * G, G).map(|b| b.addr), Ok(BASE + 63 * G)); // range end
    assert_eq!(va.alloc_at(BASE + 62 * G, 2 * G), Err(Error::AddressInUse { addr: BASE + 62 * G }));
    // Spanning beyond a range, between ranges, misaligned.
    assert_eq!(va.alloc_at(BASE + 60 * G, 8 * G), Err(Error::OutsideRange { addr: BASE + 64 * G }));
    assert_eq!(
        va.alloc_at(BASE + 50 * G, 20 * G),
        Err(Error::OutsideRange { addr: BASE + 64 * G })
    );
    assert_eq!(va.alloc_at(BASE + 100 * G, G), Err(Error::OutsideRange { addr: BASE + 100 * G }));
    assert_eq!(va.alloc_at(BASE + 1, G), Err(Error::Misaligned { value: BASE + 1 }));
    assert_eq!(va.alloc_at(BASE + 130 * G, G).map(|b| b.addr), Ok(BASE + 130 * G)); // second range
    va.check_invariants().unwrap();
    for a in [BASE, BASE + 4 * G, BASE + 8 * G, BASE + 63 * G, BASE + 130 * G] {
        va.free(a).unwrap();
        va.check_invariants().unwrap();
    }
    assert_eq!(va.descriptors_in_use(), 2);
}

#[test]
fn double_free_and_interior_free_leave_state_unchanged() {
    let mut va = InlineVaAllocator::<16>::new();
    va.add_range(BASE, 1 << 20).unwrap();
    let a = va.alloc(4 * G, 0).unwrap().addr;
    assert_eq!(va.free(a + G), Err(Error::UnknownAddress { addr: a + G }));
    assert_eq!(va.free(a), Ok(4 * G));
    let (free, used, d) = (va.free_bytes(), va.used_bytes(), va.descriptors_in_use());
    assert_eq!(va.free(a), Err(Error::UnknownAddress { addr: a }));
    assert_eq!((va.free_bytes(), va.used_bytes(), va.descriptors_in_use()), (free, used, d));
    va.check_invariants().unwrap();
}

#[test]
fn ranges_are_validated() {
    let mut va = InlineVaAllocator::<128>::new();
    assert_eq!(va.add_range(BASE, 0), Err(Error::ZeroSize));
    assert_eq!(va.add_range(BASE + 1, G), Err(Error::Misaligned { value: BASE + 1 }));
    assert_eq!(va.add_range(BASE, G + 1), Err(Error::Misaligned { value: G + 1 }));
    assert_eq!(va.add_range(u64::MAX - G + 1, 2 * G), Err(Error::SizeOverflow));
    va.add_range(BASE, 16 * G).unwrap();
    assert_eq!(
        va.add_range(BASE + 15 * G, 2 * G),
        Err(Error::RangeOverlap { base: BASE + 15 * G })
    );
    assert_eq!(va.add_range(BASE - G, 2 * G), Err(Error::RangeOverlap { base: BASE - G }));
    va.add_range(BASE + 16 * G, 16 * G).unwrap(); // adjacent: a separate range
    for i in 2..MAX_VA_RANGES as u64 {
        va.add_range(BASE + i * 16 * G, 16 * G).unwrap();
    }
    assert_eq!(
        va.add_range(BASE + 1000 * 16 * G, G),
        Err(Error::TooManyRanges { max: MAX_VA_RANGES as u32 })
    );
    // An allocation never spans two adjacent ranges.
    assert!(matches!(va.alloc(17 * G, 0), Err(Error::OutOfSpace { .. })));
    assert_eq!(va.ranges().count(), MAX_VA_RANGES);
    assert_eq!(va.ranges().next(), Some((BASE, 16 * G)));
    va.check_invariants().unwrap();
    va.reset();
    assert_eq!(va.range_count(), 0);
    assert_eq!(va.total_bytes(), 0);
    va.check_invariants().unwrap();
}

#[test]
fn capacity_exhaustion_and_recovery() {
    let mut va = InlineVaAllocator::<4>::new();
    va.add_range(BASE, 64 * G).unwrap(); // 1 descriptor
    let a = va.alloc(G, 0).unwrap().addr; // 2
    let b = va.alloc(G, 0).unwrap().addr; // 3
    let c = va.alloc(G, 0).unwrap().addr; // 4: all used
    assert_eq!(va.descriptors_in_use(), 4);
    let before = (va.free_bytes(), va.live_count());
    assert_eq!(va.alloc(G, 0), Err(Error::CapacityExhausted { capacity: 4 }));
    assert_eq!(va.alloc_at(BASE + 32 * G, G), Err(Error::CapacityExhausted { capacity: 4 }));
    assert_eq!((va.free_bytes(), va.live_count()), before);
    va.check_invariants().unwrap();
    // A request that consumes the whole tail needs no new descriptor.
    let rest = va.free_bytes();
    let d = va.alloc(rest, 0).unwrap().addr;
    assert_eq!(va.free_bytes(), 0);
    assert!(matches!(va.alloc(G, 0), Err(Error::OutOfSpace { .. })));
    for x in [b, d, a, c] {
        va.free(x).unwrap();
        va.check_invariants().unwrap();
    }
    assert_eq!(va.alloc(64 * G, 0).map(|b| b.addr), Ok(BASE));
    assert_eq!(va.add_range(BASE + (1 << 30), G), Ok(()));
    // Exhausted by ranges.
    let mut tiny = InlineVaAllocator::<1>::new();
    tiny.add_range(BASE, G).unwrap();
    assert_eq!(tiny.add_range(BASE + G, G), Err(Error::CapacityExhausted { capacity: 1 }));
}

#[test]
fn good_fit_guarantee() {
    let mut va = InlineVaAllocator::<16>::new();
    assert_eq!(VaAllocator::<[VaSlot; 1]>::guaranteed_fit(G, 0), Some(G));
    assert_eq!(VaAllocator::<[VaSlot; 1]>::guaranteed_fit(33 * G, 0), Some(33 * G));
    assert_eq!(VaAllocator::<[VaSlot; 1]>::guaranteed_fit(65 * G, 0), Some(66 * G));
    let fit = VaAllocator::<[VaSlot; 1]>::guaranteed_fit(100 * G, 1 << 20).unwrap();
    assert!(fit >= 100 * G + (1 << 20) - G);
    va.add_range(BASE, fit).unwrap();
    assert!(va.alloc(100 * G, 1 << 20).is_ok());
}

#[test]
fn large_boxed_allocator_100k_live() {
    let mut va = boxed(VA_ALLOCATOR_CAPACITY);
    assert_eq!(va.capacity(), VA_ALLOCATOR_CAPACITY as u32);
    va.add_range(BASE, 1 << 40).unwrap();
    let mut live = Vec::new();
    for i in 0..100_000u64 {
        let size = G * (1 + i % 7);
        live.push((va.alloc(size, if i % 5 == 0 { 64 << 10 } else { 0 }).unwrap().addr, size));
    }
    // Free every third, then reallocate into the holes.
    for (k, &(a, size)) in live.iter().enumerate() {
        if k % 3 == 0 {
            assert_eq!(va.free(a), Ok(size));
        }
    }
    va.check_invariants().unwrap();
    for (k, (a, size)) in live.iter_mut().enumerate() {
        if k % 3 == 0 {
            *a = va.alloc(*size, 0).unwrap().addr;
        }
    }
    assert_eq!(va.live_count(), 100_000);
    va.check_invariants().unwrap();
    for &(a, size) in live.iter().rev() {
        assert_eq!(va.free(a), Ok(size));
    }
    va.check_invariants().unwrap();
    assert_eq!(va.descriptors_in_use(), 1);
    assert_eq!(va.largest_free_block(), 1 << 40);
}

fn report(what: &str, samples: &mut [u64]) {
    samples.sort_unstable();
    let n = samples.len();
    std::println!(
        "VaAllocator alloc+free at 100k live ({what}): p50 {} ns, p99 {} ns, p99.9 {} ns, max {} ns",
        samples[n / 2],
        samples[n * 99 / 100],
        samples[n * 999 / 1000],
        samples[n - 1]
    );
}

/// Quick measurement of the alloc+free bookkeeping cost at 100,000 live allocations.
/// Run with `cargo test -p hsakmt-core --release -- --ignored --nocapture va_alloc_free_cost`.
#[test]
#[ignore = "timing measurement, run manually in release mode"]
fn va_alloc_free_cost() {
    use std::time::Instant;
    let mut va = boxed(VA_ALLOCATOR_CAPACITY);
    va.add_range(BASE, 1 << 44).unwrap();
    let mut live = Vec::new();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..100_000 {
        let size = G << (rnd() % 9);
        live.push(va.alloc(size, 0).unwrap());
    }
    const N: usize = 200_000;
    let mut samples = Vec::with_capacity(N);
    for by_block in [false, true] {
        samples.clear();
        for _ in 0..N {
            let size = G << (rnd() % 9);
            let victim = (rnd() % live.len() as u64) as usize;
            let t = Instant::now();
            let a = va.alloc(size, if size >= 2 << 20 { 2 << 20 } else { 0 }).unwrap();
            let old = core::mem::replace(&mut live[victim], a);
            if by_block {
                va.free_block(old).unwrap();
            } else {
                va.free(old.addr).unwrap();
            }
            samples.push(t.elapsed().as_nanos() as u64);
        }
        report(
            if by_block { "random victim, free_block" } else { "random victim, free(addr)" },
            &mut samples,
        );
    }
    for fixed in [false, true] {
        samples.clear();
        for _ in 0..N {
            let size = if fixed { 64 << 10 } else { G << (rnd() % 9) };
            let t = Instant::now();
            let a = va.alloc(size, 0).unwrap();
            va.free(a.addr).unwrap();
            samples.push(t.elapsed().as_nanos() as u64);
        }
        report(
            if fixed {
                "alloc then free(addr), 64 KiB"
            } else {
                "alloc then free(addr), random size"
            },
            &mut samples,
        );
    }
    samples.clear();
    for _ in 0..N {
        let t = Instant::now();
        samples.push(t.elapsed().as_nanos() as u64);
    }
    report("timer overhead only", &mut samples);
    va.check_invariants().unwrap();
}

// ---- model-based property tests ------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    Alloc { pages: u64, align_shift: u32, end_aligned: bool },
    AllocAt { range: usize, page: u64, pages: u64 },
    Free { pick: usize },
    FreeRandom { page: u64 },
    Lookup { page: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u64..40, 12u32..20, any::<bool>())
            .prop_map(|(pages, align_shift, end_aligned)| Op::Alloc { pages, align_shift, end_aligned }),
        1 => (1u64..400, 12u32..14, any::<bool>())
            .prop_map(|(pages, align_shift, end_aligned)| Op::Alloc { pages, align_shift, end_aligned }),
        2 => (0usize..3, 0u64..300, 1u64..20)
            .prop_map(|(range, page, pages)| Op::AllocAt { range, page, pages }),
        4 => any::<usize>().prop_map(|pick| Op::Free { pick }),
        1 => (0u64..1200).prop_map(|page| Op::FreeRandom { page }),
        1 => (0u64..1200).prop_map(|page| Op::Lookup { page }),
    ]
}

/// Ranges: up to three disjoint ranges (page offsets from BASE, page counts).
fn ranges() -> impl Strategy<Value = Vec<(u64, u64)>> {
    proptest::collection::vec(1u64..300, 1..=3).prop_map(|sizes| {
        let mut at = 0;
        sizes
            .into_iter()
            .map(|s| {
                let r = (at, s);
                at += s + 3; // a gap between ranges
                r
            })
            .collect()
    })
}

struct Model {
    live: BTreeMap<u64, u64>,
    /// The block of each live allocation (hints for `alloc_at_near`).
    blocks: BTreeMap<u64, VaBlock>,
    ranges: Vec<(u64, u64)>,
    /// Live allocations with an owner recorded (the owner is the address in pages).
    owned: std::collections::BTreeSet<u64>,
}

impl Model {
    fn range_of(&self, addr: u64, size: u64) -> bool {
        self.ranges.iter().any(|&(b, s)| b <= addr && addr + size <= b + s)
    }
    fn overlaps(&self, addr: u64, size: u64) -> bool {
        self.live.range(..addr + size).next_back().is_some_and(|(&a, &s)| a + s > addr)
    }
    /// The starts of the live allocations right before and after `a` in the range of `a`.
    fn neighbours(&self, a: u64) -> [Option<u64>; 2] {
        let &(b, s) = self.ranges.iter().find(|&&(b, s)| b <= a && a < b + s).unwrap();
        [
            self.live.range(b..a).next_back().map(|(&x, _)| x),
            self.live.range(a + 1..b + s).next().map(|(&x, _)| x),
        ]
    }
    /// The owners of the live allocations right before and after `a`, where recorded.
    fn neighbour_owners(&self, a: u64) -> [Option<u32>; 2] {
        self.neighbours(a).map(|n| n.filter(|x| self.owned.contains(x)).map(owner_of))
    }
    fn remove(&mut self, a: u64) -> Option<u64> {
        self.owned.remove(&a);
        self.blocks.remove(&a);
        self.live.remove(&a)
    }
    fn largest_gap(&self) -> u64 {
        let mut best = 0;
        for &(b, s) in &self.ranges {
            let mut at = b;
            for (&a, &len) in self.live.range(b..b + s) {
                best = best.max(a - at);
                at = a + len;
            }
            best = best.max(b + s - at);
        }
        best
    }
}

/// The owner the tests record for the allocation at `a`.
fn owner_of(a: u64) -> u32 {
    (a / G) as u32
}

fn run_ops(
    va: &mut VaAllocator<Box<[VaSlot]>>,
    ranges: &[(u64, u64)],
    ops: &[Op],
    strict_capacity: bool,
) -> Result<(), TestCaseError> {
    let ranges: Vec<(u64, u64)> = ranges.iter().map(|&(o, s)| (BASE + o * G, s * G)).collect();
    for &(b, s) in &ranges {
        va.add_range(b, s).unwrap();
    }
    let mut m = Model {
        live: BTreeMap::new(),
        blocks: BTreeMap::new(),
        ranges: ranges.clone(),
        owned: Default::default(),
    };
    for op in ops {
        match *op {
            Op::Alloc { pages, align_shift, end_aligned } => {
                let (size, align) = (pages * G, 1u64 << align_shift);
                let phase = if end_aligned { (align - size % align) % align } else { 0 };
                match va.alloc_with_phase(size, align, phase) {
                    Ok(block) => {
                        let a = block.addr;
                        prop_assert_eq!(a % align, phase);
                        prop_assert!(m.range_of(a, size), "outside ranges");
                        prop_assert!(!m.overlaps(a, size), "overlap");
                        m.live.insert(a, size);
                        m.blocks.insert(a, block);
                        prop_assert_eq!(va.neighbour_allocations(block), m.neighbours(a));
                        // Allocations by size get an owner; those at a fixed address none.
                        prop_assert_eq!(va.neighbour_owners(block), m.neighbour_owners(a));
                        prop_assert!(va.set_owner(block, owner_of(a)));
                        m.owned.insert(a);
                    }
                    Err(Error::OutOfSpace { .. }) => {
                        let fit = VaAllocator::<[VaSlot; 1]>::guaranteed_fit(size, align).unwrap();
                        prop_assert!(m.largest_gap() < fit, "good-fit guarantee broken");
                    }
                    Err(Error::CapacityExhausted { .. }) if !strict_capacity => {}
                    Err(e) => prop_assert!(false, "unexpected {:?}", e),
                }
            }
            Op::AllocAt { range, page, pages } => {
                let (b, s) = m.ranges[range % m.ranges.len()];
                let addr = b + (page % (s / G)) * G;
                let size = pages * G;
                let expect_ok = m.range_of(addr, size) && !m.overlaps(addr, size);
                // No hint, the nearest allocation at or below (the useful one), or one that
                // must be ignored: the first above, or one in another range.
                let hint = match page % 4 {
                    0 => None,
                    1 => m.blocks.range(..=addr).next_back().map(|(_, &b)| b),
                    2 => m.blocks.range(addr + 1..).next().map(|(_, &b)| b),
                    _ => m.blocks.values().next().copied(),
                };
                match va.alloc_at_near(addr, size, hint) {
                    Ok(block) => {
                        prop_assert!(expect_ok);
                        prop_assert_eq!(block.addr, addr);
                        m.live.insert(addr, size);
                        m.blocks.insert(addr, block);
                        prop_assert_eq!(va.neighbour_allocations(block), m.neighbours(addr));
                        prop_assert_eq!(va.neighbour_owners(block), m.neighbour_owners(addr));
                        // Once freed, a block has no neighbours and takes no owner.
                        if size == G {
                            prop_assert_eq!(va.free_block(block), Ok(size));
                            prop_assert_eq!(va.neighbour_allocations(block), [None, None]);
                            prop_assert_eq!(va.neighbour_owners(block), [None, None]);
                            prop_assert!(!va.set_owner(block, 1));
                            m.remove(addr);
                        }
                    }
                    Err(Error::CapacityExhausted { .. }) if !strict_capacity => {}
                    Err(Error::AddressInUse { .. }) => {
                        prop_assert!(m.range_of(addr, size) && !expect_ok)
                    }
                    Err(Error::OutsideRange { .. }) => prop_assert!(!m.range_of(addr, size)),
                    Err(e) => prop_assert!(false, "unexpected {:?}", e),
                }
            }
            Op::Free { pick } => {
                if let Some((&a, &s)) = m.live.iter().nth(pick % m.live.len().max(1)) {
                    prop_assert_eq!(va.free(a), Ok(s));
                    m.remove(a);
                }
            }
            Op::FreeRandom { page } => {
                let addr = BASE + page * G;
                match m.remove(addr) {
                    Some(s) => prop_assert_eq!(va.free(addr), Ok(s)),
                    None => prop_assert_eq!(va.free(addr), Err(Error::UnknownAddress { addr })),
                }
            }
            Op::Lookup { page } => {
                let addr = BASE + page * G + 17;
                let want = m
                    .live
                    .range(..=addr)
                    .next_back()
                    .filter(|&(&a, &s)| a + s > addr)
                    .map(|(&a, &s)| (a, s));
                prop_assert_eq!(va.allocation_containing(addr), want);
            }
        }
        prop_assert_eq!(va.check_invariants(), Ok(()));
        prop_assert_eq!(va.live_count() as usize, m.live.len());
        prop_assert_eq!(va.used_bytes(), m.live.values().sum::<u64>());
    }
    // Free everything: every range coalesces back into one free block.
    let addrs: Vec<u64> = m.live.keys().copied().collect();
    for a in addrs {
        prop_assert!(va.free(a).is_ok());
    }
    prop_assert_eq!(va.check_invariants(), Ok(()));
    prop_assert_eq!(va.descriptors_in_use() as usize, ranges.len());
    prop_assert_eq!(va.largest_free_block(), ranges.iter().map(|r| r.1).max().unwrap());
    // And the space is fully usable again.
    for &(b, s) in &ranges {
        prop_assert_eq!(va.alloc_at(b, s).map(|b| b.addr), Ok(b));
    }
    Ok(())
}

proptest! {
    /// Random alloc / alloc_at / free / lookup sequences agree with a BTreeMap model.
    #[test]
    fn matches_model(ranges in ranges(), ops in proptest::collection::vec(op(), 1..150)) {
        let mut va = boxed(1024);
        run_ops(&mut va, &ranges, &ops, true)?;
    }

    /// The same without an address index: lookups walk the blocks, fixed addresses are found
    /// from hints (right, wrong or none), and every result is the indexed allocator's.
    #[test]
    fn unindexed_matches_model(ranges in ranges(), ops in proptest::collection::vec(op(), 1..150)) {
        let mut va = VaAllocator::unindexed(std::vec![VaSlot::EMPTY; 1024].into_boxed_slice());
        prop_assert!(!va.is_indexed());
        run_ops(&mut va, &ranges, &ops, true)?;
    }

    /// With a tiny descriptor capacity, exhaustion is a clean typed error and everything
    /// recovers once allocations are freed.
    #[test]
    fn capacity_exhaustion_recovers(ranges in ranges(), ops in proptest::collection::vec(op(), 1..150)) {
        let mut va = boxed(12);
        run_ops(&mut va, &ranges, &ops, false)?;
        let mut va = VaAllocator::unindexed(std::vec![VaSlot::EMPTY; 12].into_boxed_slice());
        run_ops(&mut va, &ranges, &ops, false)?;
    }
}

#[test]
fn unindexed_fixed_addresses_from_hints() {
    let mut va = VaAllocator::unindexed([VaSlot::EMPTY; 32]);
    va.add_range(BASE, 64 * G).unwrap();
    let a = va.alloc_at(BASE + 4 * G, G).unwrap();
    let b = va.alloc_at_near(BASE + 10 * G, 2 * G, Some(a)).unwrap();
    assert_eq!(b.addr, BASE + 10 * G);
    // In use, whatever the hint says.
    for hint in [None, Some(a), Some(b)] {
        assert_eq!(
            va.alloc_at_near(BASE + 11 * G, G, hint),
            Err(Error::AddressInUse { addr: BASE + 11 * G })
        );
    }
    // A stale hint is ignored.
    assert_eq!(va.free_block(a), Ok(G));
    assert_eq!(va.alloc_at_near(BASE + 5 * G, G, Some(a)).map(|c| c.addr), Ok(BASE + 5 * G));
    // Lookups by address walk the blocks.
    assert_eq!(va.allocation_containing(BASE + 11 * G + 5), Some((b.addr, 2 * G)));
    assert_eq!(va.allocation_size(b.addr), Some(2 * G));
    assert_eq!(va.free(BASE + 11 * G), Err(Error::UnknownAddress { addr: BASE + 11 * G }));
    assert_eq!(va.free(b.addr), Ok(2 * G));
    va.check_invariants().unwrap();
}
