//! Where a snapshot lives when something keeps one for a long time — the device facade keeps
//! the one it takes at open in the storage its [`MemoryStorage`] names.
//!
//! A [`Topology`] with the default capacities is about 450 KB, so it never travels by value:
//! - inline, inside its owner: with its `const` constructor, an owner in a `static` (a `Kfd`
//!   in a `static`, say) costs no stack at all;
//! - in a [`TopologyCell`], a `static` that hands out its snapshot once, as `&'static mut
//!   Topology`: storage of its own for an owner that is not itself a `static`;
//! - on `std`, in a `Box<Topology>`.
//!
//! Each is a [`TopologyStorage`]: anything that lends a `Topology` mutably and may be shared
//! between threads.
//!
//! [`MemoryStorage`]: crate::device::memory_manager::MemoryStorage

use core::borrow::BorrowMut;

use super::Topology;

/// Storage of a [`Topology`]: the `Topology` itself (inline), `&'static mut Topology` (from a
/// [`TopologyCell`]), or a `Box<Topology>` on `std`.
pub trait TopologyStorage: BorrowMut<Topology> + Send + Sync {}

impl<T: BorrowMut<Topology> + Send + Sync> TopologyStorage for T {}
/// A `static` snapshot that gives itself out once, for the life of the program.
///
/// ```
/// use hsakmt_core::topology::{Topology, TopologyCell};
///
/// static SNAPSHOT: TopologyCell = TopologyCell::new();
///
/// let topology: &'static mut Topology = SNAPSHOT.take().expect("first take");
/// assert!(topology.is_empty());
/// assert!(SNAPSHOT.take().is_none(), "given out once");
/// ```
#[derive(Debug)]
pub struct TopologyCell(spin::Mutex<Topology>);

impl TopologyCell {
    /// An empty snapshot not yet given out.
    #[must_use]
    pub const fn new() -> Self {
        Self(spin::Mutex::new(Topology::new()))
    }

    /// The snapshot, the first time; `None` afterwards (it is never given out twice).
    pub fn take(&'static self) -> Option<&'static mut Topology> {
        self.0.try_lock().map(spin::MutexGuard::leak)
    }
}

impl Default for TopologyCell {
    fn default() -> Self {
        Self::new()
    }
}
