//! The device facade's large tables on the heap: with [`BoxedMemory`] a [`Kfd`] keeps its memory
//! manager's arrays (object capacity chosen at run time), its topology snapshot and its queue
//! and event tables in boxes, so the facade itself is about 45 KB and a default thread's stack
//! (2 MiB) is plenty: building and opening one takes about 0.5 MiB of stack in a debug build and
//! 0.95 MiB in a release build, a [`KfdDriver`] 0.75 and 1.2 MiB (measured on the simulator).
//!
//! The arrays are built directly on the heap, their memory advised for transparent huge pages
//! before it is written (the memory manager walks them at random). Debug builds, which build a
//! large value in several stack temporaries, box the snapshot and the queue and event tables by
//! copying a compile-time constant once each; release builds allocate first and build them
//! there (the snapshot in place; the nested queue and event tables through about 0.9 MiB of
//! stack), as a constant would add its size to the binary.
//!
//! ```no_run
//! use hsakmt_linux::{LinuxPlatform, boxed_kfd};
//!
//! // Room for 200,000 live allocations.
//! let kfd = boxed_kfd(LinuxPlatform::new(), 200_000);
//! # let _ = kfd;
//! ```

use hsakmt_core::device::memory_manager::{MemoryPayload, MemoryStorage, MemoryTables};
use hsakmt_core::device::{HandleTables, Kfd};
use hsakmt_core::driver::{DriverId, DriverKind, KfdDriver};
use hsakmt_core::memory::objects::{IndexNode, ObjectSlot};
use hsakmt_core::memory::va::VaSlot;
use hsakmt_core::platform::Platform;
use hsakmt_core::topology::Topology;

/// Heap storage for the facade's tables: boxed slices for the memory manager, a boxed topology
/// snapshot, boxed queue and event tables.
#[derive(Debug, Clone, Copy)]
pub struct BoxedMemory;

impl<M: Send + Sync> MemoryStorage<M> for BoxedMemory {
    type IndexNodes = Box<[IndexNode]>;
    type Slots = Box<[ObjectSlot<MemoryPayload<M>>]>;
    type VaSlots = Box<[VaSlot]>;
    type Topology = Box<Topology>;
    type HandleTables = Box<HandleTables<M>>;
}

/// Empty tables for `objects` live objects, each aperture with `2 · objects + 128` block
/// descriptors (every allocation may leave a free fragment beside it; slabs add ranges), an
/// empty topology snapshot and empty queue and event tables.
#[must_use]
pub fn boxed_tables<M: Clone + Send + Sync>(objects: usize) -> MemoryTables<M, BoxedMemory> {
    let va = || table(objects.saturating_mul(2).saturating_add(128), || VaSlot::EMPTY);
    MemoryTables {
        index: table(objects, || IndexNode::EMPTY),
        slots: table(objects, ObjectSlot::new),
        default_va: va(),
        coherent_va: va(),
        handle_va: va(),
        topology: boxed_topology(),
        handle_tables: boxed_handle_tables(),
    }
}

/// A boxed slice of `n` values made by `value`, its memory advised for transparent huge pages
/// before it is written: the memory manager's tables are walked at random (address indexes, free
/// lists), and with 2 MiB pages their translations stay in the TLB — at 100,000 live allocations
/// the tables span about 100 MB. Every element is written here, so no page is first touched
/// later, on an allocation's path. Where transparent huge pages are off, the advice is ignored.
fn table<T>(n: usize, value: impl FnMut() -> T) -> Box<[T]> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    advise_huge_pages(v.as_mut_ptr().cast(), n.saturating_mul(size_of::<T>()));
    v.extend(core::iter::repeat_with(value).take(n));
    v.into_boxed_slice()
}

/// `madvise(MADV_HUGEPAGE)` on the whole pages of `[ptr, ptr + len)` (best effort).
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    const PAGE: usize = 4096;
    let start = (ptr as usize).next_multiple_of(PAGE);
    let end = (ptr as usize).saturating_add(len) / PAGE * PAGE;
    if end <= start {
        return;
    }
    // SAFETY: `[start, end)` is the whole pages inside the allocation `ptr` points to, which the
    // caller owns and has not initialised; MADV_HUGEPAGE only chooses how the kernel backs those
    // pages (it never changes their contents or whether they are mapped).
    let _ = unsafe {
        rustix::mm::madvise(
            start as *mut core::ffi::c_void,
            end - start,
            rustix::mm::Advice::LinuxHugepage,
        )
    };
}

/// An empty snapshot in a box (a function of its own, so that its stack is released before the
/// next table is built).
#[inline(never)]
fn boxed_topology() -> Box<Topology> {
    // See the module docs: a constant in debug builds, allocated first in release builds.
    #[cfg(debug_assertions)]
    let topology = Box::new(const { Topology::new() });
    #[cfg(not(debug_assertions))]
    let topology = Box::write(Box::new_uninit(), Topology::new());
    topology
}

/// Empty queue and event tables in a box (as [`boxed_topology`]).
#[inline(never)]
fn boxed_handle_tables<M: Clone + Send + Sync>() -> Box<HandleTables<M>> {
    // See the module docs: a constant in debug builds, allocated first in release builds.
    #[cfg(debug_assertions)]
    let tables = Box::new(const { HandleTables::new() });
    #[cfg(not(debug_assertions))]
    let tables = Box::write(Box::new_uninit(), HandleTables::new());
    tables
}

/// A closed device facade over `platform` with room for `objects` live memory objects, its
/// tables on the heap ([`boxed_tables`]).
#[must_use]
pub fn boxed_kfd<P: Platform>(platform: P, objects: usize) -> Box<Kfd<P, BoxedMemory>> {
    Box::new(Kfd::with_memory(platform, boxed_tables(objects)))
}

/// A [`KfdDriver`] of `kind` over `platform` (see [`KfdDriver::new`]) whose facade keeps its
/// tables on the heap, with room for `objects` live memory objects.
#[must_use]
pub fn boxed_driver<P: Platform>(
    kind: DriverKind,
    id: DriverId,
    platform: P,
    objects: usize,
) -> Box<KfdDriver<P, BoxedMemory>> {
    Box::new(KfdDriver::with_kfd(kind, id, Kfd::with_memory(platform, boxed_tables(objects))))
}
