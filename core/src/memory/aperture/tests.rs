use std::collections::BTreeMap;
use std::vec::Vec;

use proptest::prelude::*;

use crate::memory::MemFlags;
use crate::memory::objects::MemoryKind;
use crate::memory::va::GRANULE;

use super::*;

const P: u64 = PAGE_SIZE;
const M: u64 = 1 << 20;
const BASE: u64 = 0x7f00_0000_0000;

fn reserved(limit_off: u64) -> ApertureConfig {
    ApertureConfig::reserved(ApertureKind::SvmDefault, BASE, BASE + limit_off - 1)
}

fn plan(c: &ApertureConfig, size: u64, align: Option<u64>) -> (u64, u64, u64) {
    let p = plan_allocation(c, size, align).unwrap();
    (p.align, p.phase, p.reserved)
}

#[test]
fn reserved_alignment_rules() {
    let c = reserved(1 << 30);
    // One page: page aligned, end alignment is trivial, one guard page.
    assert_eq!(plan(&c, P, None), (P, 0, 2 * P));
    // Sizes are rounded up to pages.
    assert_eq!(plan_allocation(&c, 100, None).unwrap().size, P);
    // Three pages: alignment doubles once (12K >= 8K), end aligned to 8K.
    assert_eq!(plan(&c, 3 * P, None), (2 * P, P, 4 * P));
    // 5 MiB: grows to the 2 MiB cap; the end is 2 MiB aligned.
    assert_eq!(plan(&c, 5 * M, None), (2 * M, M, 5 * M + P));
    // Exactly 4 MiB: 2 MiB alignment, phase 0 (libhsakmt's offset == align, residue 0).
    assert_eq!(plan(&c, 4 * M, None), (2 * M, 0, 4 * M + P));
    // An explicit page alignment still end-aligns (orig_align <= PAGE_SIZE).
    assert_eq!(plan(&c, 3 * P, Some(P)), (2 * P, P, 4 * P));
    // An explicit larger alignment: start aligned, grows with the size, no end alignment.
    assert_eq!(plan(&c, M, Some(64 << 10)), (M, 0, M + P));
    assert_eq!(plan(&c, 3 * P, Some(64 << 10)), (64 << 10, 0, 4 * P));
    // Alignments above 2 MiB are kept as requested.
    assert_eq!(plan(&c, 8 * M, Some(1 << 30)), (1 << 30, 0, 8 * M + P));
    // The aperture's own alignment is the default (Tonga: 32 KiB); being above a page, it
    // disables end alignment (`orig_align` is the aperture's alignment).
    let tonga = c.with_align(TONGA_PAGE_SIZE);
    assert_eq!(plan(&tonga, P, None), (TONGA_PAGE_SIZE, 0, 2 * P));
    assert_eq!(plan(&tonga, 3 * P, Some(P)), (TONGA_PAGE_SIZE, TONGA_PAGE_SIZE - 3 * P, 4 * P));
    // Guard pages are configurable.
    assert_eq!(plan(&c.with_guard_pages(0), P, None).2, P);
    assert_eq!(plan(&c.with_guard_pages(3), P, None).2, 4 * P);
    // Errors.
    assert_eq!(plan_allocation(&c, 0, None), Err(Error::ZeroSize));
    assert_eq!(plan_allocation(&c, P, Some(3 * P)), Err(Error::BadAlignment { align: 3 * P }));
    assert_eq!(plan_allocation(&c, u64::MAX, None), Err(Error::SizeOverflow));
    assert_eq!(plan_allocation(&c, u64::MAX - P + 1, None), Err(Error::SizeOverflow));
}

#[test]
fn slab_alignment_rules() {
    let c = ApertureConfig::slabs(ApertureKind::SvmDefault, 0x20_0000, (1 << 47) - 1);
    assert_eq!(plan(&c, P, None), (P, 0, 2 * P));
    assert_eq!(plan(&c, 3 * P, None), (2 * P, 0, 4 * P)); // no end alignment
    assert_eq!(plan(&c, 5 * M, None), (2 * M, 0, 5 * M + P));
    let gfx950 =
        ApertureConfig { source: VaSource::Slabs { alignment_order: GFX950_ALIGNMENT_ORDER }, ..c };
    assert_eq!(plan(&gfx950, 3 << 30, None).0, 1 << 30);
    assert_eq!(plan(&gfx950, 5 * M, None).0, 4 * M);
    assert_eq!(plan(&c, 3 * P, Some(64 << 10)), (64 << 10, 0, 4 * P));
}

#[test]
fn reserved_aperture_allocations() {
    let mut a = InlineAperture::<64>::new(reserved(64 * M), [VaSlot::EMPTY; 64]).unwrap();
    let x = a.allocate(3 * P, None, None).unwrap();
    assert_eq!((x.addr + x.size) % (2 * P), 0, "end aligned");
    assert_eq!(x.size, 3 * P);
    let y = a.allocate(5 * M, None, None).unwrap();
    assert_eq!((y.addr + y.size) % (2 * M), 0);
    let z = a.allocate(P, Some(1 << 20), None).unwrap();
    assert_eq!(z.addr % M, 0);
    // The guard page after x is reserved: a fixed request there fails.
    assert_eq!(
        a.allocate(P, None, Some(x.addr + x.size)),
        Err(Error::AddressInUse { addr: x.addr + x.size })
    );
    assert_eq!(a.allocation_containing(x.addr + x.size), Some((x.addr, x.size)));
    a.check_invariants().unwrap();
    assert_eq!(a.release(x.addr), Ok(3 * P));
    assert_eq!(a.release(x.addr), Err(Error::UnknownAddress { addr: x.addr }));
    assert_eq!(a.release_allocation(y), Ok(5 * M));
    assert_eq!(a.release_allocation(y), Err(Error::UnknownAddress { addr: y.addr }));
    assert_eq!(a.release(z.addr), Ok(P));
    assert_eq!(a.va().live_count(), 0);
    assert_eq!(a.va().largest_free_block(), 64 * M);
    a.check_invariants().unwrap();
}

#[test]
fn fixed_address_exact_or_fail() {
    let mut a = InlineAperture::<16>::new(reserved(M), [VaSlot::EMPTY; 16]).unwrap();
    let at = BASE + 16 * P;
    let x = a.allocate(2 * P, None, Some(at)).unwrap();
    assert_eq!(x.addr, at);
    assert_eq!(a.allocate(P, None, Some(at + P)), Err(Error::AddressInUse { addr: at + P }));
    // at - P + guard overlaps x.
    assert_eq!(a.allocate(P, None, Some(at - P)), Err(Error::AddressInUse { addr: at - P }));
    assert_eq!(a.allocate(P, None, Some(at - 2 * P)).map(|b| b.addr), Ok(at - 2 * P));
    assert_eq!(a.allocate(P, None, Some(BASE - P)), Err(Error::OutsideRange { addr: BASE - P }));
    assert_eq!(a.allocate(P, None, Some(at + 7)), Err(Error::Misaligned { value: at + 7 }));
    assert_eq!(a.allocate(P, None, Some(BASE + M)), Err(Error::OutsideRange { addr: BASE + M }));
    a.check_invariants().unwrap();
}

#[test]
fn gpuvm_aperture_burns_its_base() {
    let cfg = ApertureConfig::reserved(ApertureKind::GpuVm { node: 1 }, 1 << 50, (1 << 50) + M - 1)
        .with_align(TONGA_PAGE_SIZE);
    let mut a = InlineAperture::<16>::new(cfg, [VaSlot::EMPTY; 16]).unwrap();
    assert_eq!(a.allocate(P, None, Some(1 << 50)), Err(Error::AddressInUse { addr: 1 << 50 }));
    for _ in 0..4 {
        let x = a.allocate(P, None, None).unwrap();
        assert_ne!(x.addr, 1 << 50);
        assert!(x.addr >= (1 << 50) + TONGA_PAGE_SIZE);
    }
    a.check_invariants().unwrap();
    // Re-initialising forgets the allocations but burns the base again.
    a.init().unwrap();
    assert_eq!(a.va().live_count(), 1);
}

#[test]
fn slab_apertures_grow() {
    let cfg = ApertureConfig::slabs(ApertureKind::SvmDefault, 0x20_0000, (1 << 47) - 1);
    let mut a = InlineAperture::<16>::new(cfg, [VaSlot::EMPTY; 16]).unwrap();
    assert_eq!(a.allocate(P, None, None), Err(Error::OutOfSpace { needed: 2 * P }));
    assert_eq!(a.add_slab(0x1000, M), Err(Error::OutsideRange { addr: 0x1000 }));
    assert_eq!(
        a.add_slab((1 << 47) - M, 2 * M),
        Err(Error::OutsideRange { addr: (1 << 47) + M - 1 })
    );
    a.add_slab(BASE, 4 * M).unwrap();
    let x = a.allocate(3 * M, None, None).unwrap();
    assert_eq!(x.addr % (M), 0);
    let need = match a.allocate(3 * M, None, None) {
        Err(Error::OutOfSpace { needed }) => needed,
        other => panic!("{other:?}"),
    };
    a.add_slab(BASE + (1 << 30), need.next_multiple_of(2 * M)).unwrap();
    assert!(a.allocate(3 * M, None, None).is_ok());
    a.check_invariants().unwrap();
    // Reported-only apertures and slabs on reserved apertures are refused.
    let lds = ApertureConfig::reserved(ApertureKind::Lds { node: 1 }, 1 << 48, (1 << 48) + M);
    assert_eq!(InlineAperture::<4>::new(lds, [VaSlot::EMPTY; 4]).err(), Some(Error::ReportedOnly));
    let mut r = InlineAperture::<4>::new(reserved(M), [VaSlot::EMPTY; 4]).unwrap();
    assert_eq!(r.add_slab(BASE, P), Err(Error::NotSupported));
    let bad = ApertureConfig::reserved(ApertureKind::SvmDefault, BASE, BASE - 1);
    assert!(InlineAperture::<4>::new(bad, [VaSlot::EMPTY; 4]).is_err());
}

#[test]
fn svm_layouts() {
    // Reserved mode over 1 TiB at a page-aligned (not 64 KiB-aligned) base.
    let base = 0x7f00_0000_1000;
    let size = 1 << 40;
    let l = SvmLayout::reserved(base, size, P, 1).unwrap();
    let (c, d) = (*l.coherent_aperture(), *l.default_aperture());
    assert_eq!(c.kind, ApertureKind::SvmCoherent);
    assert_eq!(c.base, 0x7f00_0001_0000);
    assert_eq!(c.limit - c.base + 1, size / 4);
    assert_eq!(d.base, c.limit + 1);
    assert_eq!(d.limit, base + size - 1);
    assert_eq!(l.reported_range(), (c.base, d.limit));
    assert_eq!(l.alternate_aperture(), (c.base, size / 4));
    assert_eq!(SvmLayout::reserved(base, 0, P, 1), Err(Error::ZeroSize));
    assert!(SvmLayout::reserved(base, 64 << 10, P, 1).is_err());
    // Slab mode: one aperture for both.
    let s = SvmLayout::slabs(0x20_0000, (1 << 47) - 1, P, 1, DEFAULT_ALIGNMENT_ORDER);
    assert_eq!(s.default_aperture(), s.coherent_aperture());
    assert_eq!(s.alternate_aperture(), (0x20_0000, (1 << 47) - 0x20_0000));
    // Both layouts build working apertures.
    let mut a = InlineAperture::<8>::new(c, [VaSlot::EMPTY; 8]).unwrap();
    assert!(a.allocate(P, None, None).is_ok());
}

#[test]
fn svm_window_and_bounds() {
    let gpus = [
        (0x1_0000, (1 << 47) - 1, 0x74a1), // MI300: canonical, 47-bit
        (0x20_0000, (1 << 47) - 1, 0x73bf),
        (0u64.wrapping_sub(1 << 40), u64::MAX, 0x1234), // non-canonical
    ];
    let b = svm_bounds(gpus).unwrap();
    assert_eq!(b, SvmBounds { base: 0x20_0000, limit: (1 << 47) - 1, align: P });
    assert_eq!(
        svm_window(b, false),
        Ok(SvmWindow::Slabs { base: 0x20_0000, limit: (1 << 47) - 1 })
    );
    assert_eq!(
        svm_window(b, true),
        Ok(SvmWindow::Reserve { base: 0x20_0000, limit: SVM_RESERVATION_LIMIT })
    );
    // A GFX8 dGPU (40-bit) with Tonga alignment: reserved mode.
    let b = svm_bounds([(0x1_0000, (1 << 40) - 1, 0x6930)]).unwrap();
    assert_eq!(b.align, TONGA_PAGE_SIZE);
    assert_eq!(
        svm_window(b, false),
        Ok(SvmWindow::Reserve { base: 0x20_0000, limit: (1 << 40) - 1 })
    );
    // Nothing left.
    let b = SvmBounds { base: 1 << 41, limit: (1 << 42) - 1, align: P };
    assert!(svm_window(b, false).is_err());
    assert_eq!(svm_bounds([(0, u64::MAX, 0)]), None);
    // The whole 64-bit space stays whole.
    let b = SvmBounds { base: 0, limit: u64::MAX, align: P };
    assert_eq!(svm_window(b, false), Ok(SvmWindow::Slabs { base: 0, limit: u64::MAX }));
}

/// Fuzzing finding (target `apertures`): a GPU reporting a GPUVM limit below 2 MiB − 1 (e.g.
/// 0, an unset aperture) made `limit + 1` round down to 0 and `0 − 1` wrap to 2^64 − 1: a slab
/// window over the whole address space. There is no window.
#[test]
fn tiny_gpuvm_limit_leaves_no_window() {
    for limit in [0, 0x1000, GPU_HUGE_PAGE_SIZE - 2] {
        let b = svm_bounds([(0, limit, 0x740f)]).unwrap();
        for reserve in [false, true] {
            assert_eq!(svm_window(b, reserve), Err(Error::OutOfSpace { needed: SVM_MIN_VM_SIZE }));
        }
    }
    let b = svm_bounds([(0, GPU_HUGE_PAGE_SIZE - 1, 0x740f)]).unwrap();
    assert_eq!(svm_window(b, false), Ok(SvmWindow::Reserve { base: 0, limit: b.limit }));
}

#[test]
fn handle_window_avoids_gpu_apertures() {
    assert_eq!(mem_handle_window(&[]), Some((1 << 47, (1 << 48) - 1)));
    // Typical gfx9 LDS/scratch apertures sit at 0x1000000000000 and 0x2000000000000.
    let occupied = [(1 << 48, (1 << 48) + 0xFFFF_FFFF), (2 << 48, (2 << 48) + 0xFFFF_FFFF)];
    assert_eq!(mem_handle_window(&occupied), Some((1 << 47, (1 << 48) - 1)));
    let occupied = [((1 << 47) + P, (1 << 47) + 2 * P), (0, 0)];
    assert_eq!(mem_handle_window(&occupied), Some((1 << 48, (1 << 48) + (1 << 47) - 1)));
    assert_eq!(mem_handle_window(&[(1 << 47, u64::MAX)]), None);
    // Ranges chained across several candidates.
    let h = MEM_HANDLE_APERTURE_SIZE;
    let occupied = [(3 * h, 3 * h), (1 << 47, 2 * h + 5), (5 * h - 1, 5 * h)];
    assert_eq!(mem_handle_window(&occupied), Some((6 * h, 7 * h - 1)));
    assert_eq!(handle_window_one_by_one(&occupied), Some((6 * h, 7 * h - 1)));
}

/// libhsakmt's `init_mem_handle_aperture` loop: every candidate in turn.
fn handle_window_one_by_one(occupied: &[(u64, u64)]) -> Option<(u64, u64)> {
    let mut base = NON_CANONICAL_START;
    while base < NON_CANONICAL_END - 1 {
        let limit = base + (MEM_HANDLE_APERTURE_SIZE - 1);
        if !occupied.iter().any(|&(b, l)| b != 0 && b <= limit && base <= l) {
            return Some((base, limit));
        }
        base = base.checked_add(MEM_HANDLE_APERTURE_SIZE)?;
    }
    None
}

#[test]
fn small_helpers() {
    assert_eq!(vm_alignment(0x6920), TONGA_PAGE_SIZE);
    assert_eq!(vm_alignment(0x9877), TONGA_PAGE_SIZE);
    assert_eq!(vm_alignment(0x74a1), P);
    assert!(is_canonical((1 << 47) - 1) && !is_canonical(1 << 47));
    assert!(svm_needed(true, 8) && svm_needed(false, 9) && !svm_needed(false, 8));
    assert_eq!(svm_alignment_order(true, None), 18);
    assert_eq!(svm_alignment_order(false, None), 9);
    assert_eq!(svm_alignment_order(true, Some(12)), 12);
    assert_eq!(guard_pages_from_env(None), 1);
    assert_eq!(guard_pages_from_env(Some("3")), 3);
    assert_eq!(guard_pages_from_env(Some("  0")), 0);
    assert_eq!(guard_pages_from_env(Some("2x")), 2);
    assert_eq!(guard_pages_from_env(Some("abc")), 1);
    assert_eq!(guard_pages_from_env(Some("")), 1);
    assert_eq!(scratch_backing_size(1), Some(SCRATCH_ALIGN));
    assert_eq!(kfd_buffer_count(1), 1);
    assert_eq!(kfd_buffer_count(BIGGEST_SINGLE_BUF_SIZE + 1), 2);
    let r = ReportedAperture {
        kind: ApertureKind::Lds { node: 1 },
        base: 1 << 48,
        limit: (1 << 48) + 0xFFFF,
    };
    assert!(r.is_valid() && r.contains((1 << 48) + 5) && r.size() == 0x1_0000);
    assert!(!ReportedAperture { base: 0, ..r }.is_valid());
    assert!(ApertureKind::Mmio { node: 0 }.is_reported_only());
    assert!(!ApertureKind::SvmDefault.is_reported_only());
}

fn req(flags: MemFlags, node: PreferredNode) -> AllocRequest {
    AllocRequest { size: 64 << 10, align: 0, flags, fixed_address: None, node }
}

#[test]
fn placement_choice_follows_libhsakmt() {
    let dgpu = PlacementPolicy::DGPU;
    let gpu = PreferredNode::Gpu { svm_needed: true };
    let choose = |flags, node| choose_placement(&req(flags, node), &dgpu).unwrap();
    let vram = MemFlags::NON_PAGED | MemFlags::COARSE_GRAIN | MemFlags::NO_SUBSTITUTE;
    let p = choose(vram, gpu);
    assert_eq!(
        (p.aperture, p.kind, p.va_size),
        (ApertureRole::SvmDefault, MemoryKind::Vram, 64 << 10)
    );
    // AQL queue memory doubles the VA size.
    let p = choose(vram | MemFlags::AQL_QUEUE_MEMORY, gpu);
    assert_eq!(p.va_size, 128 << 10);
    // NoAddress goes to the handle window; OnlyAddress is address-only; both together invalid.
    assert_eq!(choose(vram | MemFlags::NO_ADDRESS, gpu).aperture, ApertureRole::MemHandle);
    assert_eq!(choose(vram | MemFlags::ONLY_ADDRESS, gpu).kind, MemoryKind::ReservedAddress);
    assert_eq!(
        choose_placement(&req(vram | MemFlags::ONLY_ADDRESS | MemFlags::NO_ADDRESS, gpu), &dgpu),
        Err(Error::InvalidFlags)
    );
    // Old APU VRAM: the GPUVM aperture, no doubling.
    let old = PreferredNode::Gpu { svm_needed: false };
    let p = choose(vram | MemFlags::AQL_QUEUE_MEMORY, old);
    assert_eq!((p.aperture, p.va_size), (ApertureRole::GpuVm, 64 << 10));
    // Host memory on dGPU systems: fine grain -> coherent aperture; paged -> userptr.
    let host = MemFlags::HOST_ACCESS;
    let p = choose(host, PreferredNode::Cpu);
    assert_eq!((p.aperture, p.kind), (ApertureRole::SvmCoherent, MemoryKind::HostUserptr));
    let p = choose(host | MemFlags::NON_PAGED, PreferredNode::Cpu);
    assert_eq!(p.kind, MemoryKind::HostGtt);
    let p = choose(host | MemFlags::COARSE_GRAIN, PreferredNode::Cpu);
    assert_eq!(p.aperture, ApertureRole::SvmDefault);
    // Paged memory requested from a GPU node is system memory (backwards compatibility).
    assert_eq!(choose(host, gpu).kind, MemoryKind::HostUserptr);
    // GTTAccess on a GPU node: GTT memory.
    let p = choose(MemFlags::NON_PAGED | MemFlags::GTT_ACCESS, gpu);
    assert_eq!(p.kind, MemoryKind::HostGtt);
    // Without userptr-for-paged-mem, paged memory is a GTT BO.
    let no_userptr = PlacementPolicy { userptr_for_paged_mem: false, ..dgpu };
    assert_eq!(
        choose_placement(&req(host, PreferredNode::Cpu), &no_userptr).unwrap().kind,
        MemoryKind::HostGtt
    );
    // HSA_ZFB: device requests become coarse-grained host memory.
    let zfb = PlacementPolicy { zfb: true, ..dgpu };
    let p = choose_placement(&req(MemFlags::NON_PAGED, gpu), &zfb).unwrap();
    assert_eq!((p.aperture, p.kind), (ApertureRole::SvmDefault, MemoryKind::HostGtt));
    assert!(p.flags.contains(MemFlags::COARSE_GRAIN));
    // APU systems: plain mmap, no alignment, no fixed address.
    let apu = PlacementPolicy { is_dgpu: false, ..dgpu };
    let p = choose_placement(&req(host, PreferredNode::Cpu), &apu).unwrap();
    assert_eq!((p.aperture, p.kind), (ApertureRole::CpuVm, MemoryKind::HostCpu));
    let aligned = AllocRequest { align: 2 << 20, ..req(host, PreferredNode::Cpu) };
    assert_eq!(choose_placement(&aligned, &apu), Err(Error::NotSupported));
    // Scratch.
    let p = choose(MemFlags::SCRATCH, gpu);
    assert_eq!(
        (p.aperture, p.kind, p.align),
        (ApertureRole::ScratchBacking, MemoryKind::Scratch, Some(SCRATCH_ALIGN))
    );
    let odd = AllocRequest { size: 3 * P, ..req(MemFlags::SCRATCH, gpu) };
    assert_eq!(choose_placement(&odd, &dgpu).unwrap().va_size, SCRATCH_ALIGN);
    let aligned = AllocRequest { align: 2 << 20, ..req(MemFlags::SCRATCH, gpu) };
    assert_eq!(choose_placement(&aligned, &dgpu), Err(Error::NotSupported));
}

#[test]
fn placement_validation() {
    let dgpu = PlacementPolicy::DGPU;
    let gpu = PreferredNode::Gpu { svm_needed: true };
    let base = req(MemFlags::NON_PAGED, gpu);
    assert_eq!(choose_placement(&AllocRequest { size: 0, ..base }, &dgpu), Err(Error::ZeroSize));
    assert_eq!(
        choose_placement(&AllocRequest { size: P + 1, ..base }, &dgpu),
        Err(Error::Misaligned { value: P + 1 })
    );
    // The page size of the flags governs sizes and alignments.
    let big = req(MemFlags::NON_PAGED.with_page_size(crate::memory::PageSize::Size2M), gpu);
    assert_eq!(choose_placement(&big, &dgpu), Err(Error::Misaligned { value: 64 << 10 }));
    assert_eq!(
        choose_placement(&AllocRequest { align: P, size: 2 << 20, ..big }, &dgpu),
        Err(Error::BadAlignment { align: P })
    );
    assert_eq!(
        choose_placement(&AllocRequest { align: 3 * P, ..base }, &dgpu),
        Err(Error::BadAlignment { align: 3 * P })
    );
    for bad in [
        MemFlags::COARSE_GRAIN | MemFlags::EXTENDED_COHERENT,
        MemFlags::COARSE_GRAIN | MemFlags::UNCACHED,
        MemFlags::EXTENDED_COHERENT | MemFlags::UNCACHED,
    ] {
        assert_eq!(
            choose_placement(&req(MemFlags::NON_PAGED | bad, gpu), &dgpu),
            Err(Error::InvalidFlags)
        );
    }
    let fixed = req(MemFlags::NON_PAGED | MemFlags::FIXED_ADDRESS, gpu);
    assert_eq!(choose_placement(&fixed, &dgpu), Err(Error::InvalidFlags));
    let p = choose_placement(&AllocRequest { fixed_address: Some(BASE), ..fixed }, &dgpu).unwrap();
    assert_eq!(p.fixed_address, Some(BASE));
    // Without the flag an address is ignored.
    let p = choose_placement(&AllocRequest { fixed_address: Some(BASE), ..base }, &dgpu).unwrap();
    assert_eq!(p.fixed_address, None);
}

// ---- model-based property test ---------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    Alloc { pages: u64, align_shift: Option<u32> },
    Fixed { page: u64, pages: u64 },
    Release { pick: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u64..600, proptest::option::of(12u32..22))
            .prop_map(|(pages, align_shift)| Op::Alloc { pages, align_shift }),
        1 => (0u64..4096, 1u64..8).prop_map(|(page, pages)| Op::Fixed { page, pages }),
        3 => any::<usize>().prop_map(|pick| Op::Release { pick }),
    ]
}

/// Apertures near the candidate windows' edges, and anywhere.
fn occupied_range() -> impl Strategy<Value = (u64, u64)> {
    let h = MEM_HANDLE_APERTURE_SIZE;
    let edge = (0u64..1 << 17, -2i64..=2).prop_map(move |(k, d)| (k * h).wrapping_add_signed(d));
    let addr = prop_oneof![edge, any::<u64>()];
    (addr.clone(), addr)
}

proptest! {
    /// The skipping search finds libhsakmt's window.
    #[test]
    fn handle_window_matches_the_one_by_one_search(
        occupied in proptest::collection::vec(occupied_range(), 0..6)
    ) {
        prop_assert_eq!(mem_handle_window(&occupied), handle_window_one_by_one(&occupied));
    }
}

proptest! {
    /// Allocations honour the plan (alignment, end alignment), stay in the aperture, never
    /// overlap each other's buffer or guard pages, and release restores everything.
    #[test]
    fn aperture_matches_model(
        guard in 0u32..3,
        slabs in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        let size = 4096 * P;
        let cfg = if slabs {
            ApertureConfig::slabs(ApertureKind::SvmDefault, BASE, BASE + 2 * size - 1)
        } else {
            reserved(size)
        }
        .with_guard_pages(guard);
        let slots = std::vec![VaSlot::EMPTY; 512].into_boxed_slice();
        let mut a = Aperture::new(cfg, slots).unwrap();
        if slabs {
            a.add_slab(BASE, size / 2).unwrap();
            a.add_slab(BASE + size, size / 2).unwrap();
        }
        // start -> (size, reserved)
        let mut live: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        let overlaps = |live: &BTreeMap<u64, (u64, u64)>, at: u64, len: u64| {
            live.range(..at + len).next_back().is_some_and(|(&s, &(_, r))| s + r > at)
        };
        for op in ops {
            match op {
                Op::Alloc { pages, align_shift } => {
                    let align = align_shift.map(|s| 1u64 << s);
                    let plan = plan_allocation(&cfg, pages * P, align).unwrap();
                    match a.allocate(pages * P, align, None) {
                        Ok(x) => {
                            prop_assert_eq!(x.addr % plan.align, plan.phase);
                            if align.is_none() && !slabs {
                                prop_assert_eq!((x.addr + x.size) % plan.align, 0);
                            }
                            prop_assert!(x.addr >= BASE && x.addr + plan.reserved <= BASE + 2 * size);
                            prop_assert!(!overlaps(&live, x.addr, plan.reserved));
                            live.insert(x.addr, (x.size, plan.reserved));
                        }
                        Err(Error::OutOfSpace { .. }) => {}
                        Err(e) => prop_assert!(false, "unexpected {:?}", e),
                    }
                }
                Op::Fixed { page, pages } => {
                    let at = BASE + page * P;
                    let reserved = pages * P + u64::from(guard) * P;
                    match a.allocate(pages * P, None, Some(at)) {
                        Ok(x) => {
                            prop_assert_eq!(x.addr, at);
                            prop_assert!(!overlaps(&live, at, reserved));
                            live.insert(at, (pages * P, reserved));
                        }
                        Err(Error::AddressInUse { .. }) => prop_assert!(overlaps(&live, at, reserved)),
                        Err(Error::OutsideRange { .. }) => {}
                        Err(e) => prop_assert!(false, "unexpected {:?}", e),
                    }
                }
                Op::Release { pick } => {
                    if let Some((&s, &(len, _))) = live.iter().nth(pick % live.len().max(1)) {
                        prop_assert_eq!(a.release(s), Ok(len));
                        live.remove(&s);
                    }
                }
            }
            prop_assert_eq!(a.check_invariants(), Ok(()));
            prop_assert_eq!(a.va().live_count() as usize, live.len());
        }
        let starts: Vec<u64> = live.keys().copied().collect();
        for s in starts {
            prop_assert!(a.release(s).is_ok());
        }
        prop_assert_eq!(a.va().used_bytes(), 0);
        prop_assert_eq!(a.va().descriptors_in_use(), a.va().range_count());
        let _ = GRANULE;
    }
}
