//! Memory-manager storage on the heap: [`BoxedMemory`] makes a
//! [`Kfd`](hsakmt_core::device::Kfd) whose object capacity is chosen at run time, with tables
//! built directly on the heap (never passing through the stack).
//!
//! ```no_run
//! use hsakmt_core::device::Kfd;
//! use hsakmt_linux::{BoxedMemory, LinuxPlatform, boxed_tables};
//!
//! // Room for 200,000 live allocations.
//! let kfd: Box<Kfd<LinuxPlatform, BoxedMemory>> =
//!     Box::new(Kfd::with_memory(LinuxPlatform::new(), boxed_tables(200_000)));
//! ```

use hsakmt_core::device::memory_manager::{MemoryPayload, MemoryStorage, MemoryTables};
use hsakmt_core::memory::objects::{IndexNode, ObjectSlot};
use hsakmt_core::memory::va::VaSlot;

/// Heap storage for the memory manager's tables.
#[derive(Debug, Clone, Copy)]
pub struct BoxedMemory;

impl<M> MemoryStorage<M> for BoxedMemory {
    type IndexNodes = Box<[IndexNode]>;
    type Slots = Box<[ObjectSlot<MemoryPayload<M>>]>;
    type VaSlots = Box<[VaSlot]>;
}

/// Empty tables for `objects` live objects, each aperture with `2 · objects + 128` block
/// descriptors (every allocation may leave a free fragment beside it; slabs add ranges).
#[must_use]
pub fn boxed_tables<M>(objects: usize) -> MemoryTables<M, BoxedMemory> {
    let va =
        || vec![VaSlot::EMPTY; objects.saturating_mul(2).saturating_add(128)].into_boxed_slice();
    MemoryTables {
        index: vec![IndexNode::EMPTY; objects].into_boxed_slice(),
        slots: (0..objects).map(|_| ObjectSlot::new()).collect(),
        default_va: va(),
        coherent_va: va(),
        handle_va: va(),
    }
}
