//! [`HandleTables`]: the facade's queue and event tables, which its storage places (inline in
//! the facade, or on the heap) like the memory manager's arrays and the topology snapshot.

use super::event_manager::Events;
use super::queue_manager::QueueState;

/// The queue table and the event table (with the event page state and the callback registry)
/// of a [`Kfd`](super::Kfd): about 380 KB with the default capacities. Opaque; the facade's
/// [`MemoryStorage`](super::MemoryStorage) says where it lives.
pub struct HandleTables<M> {
    pub(crate) queues: spin::Mutex<QueueState<M>>,
    pub(crate) events: Events<M>,
}

impl<M: Clone> HandleTables<M> {
    /// Empty tables (`const`: usable in a `static`).
    #[must_use]
    pub const fn new() -> Self {
        Self { queues: spin::Mutex::new(QueueState::new()), events: Events::new() }
    }
}

impl<M: Clone> Default for HandleTables<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M> core::fmt::Debug for HandleTables<M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HandleTables").finish_non_exhaustive()
    }
}
