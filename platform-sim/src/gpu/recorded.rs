//! The events model until the simulator's event table takes over ([`RecordedEvents`]).

use std::collections::VecDeque;
use std::sync::Mutex;

use super::{EventHooks, QueueFault, lock};

/// The events model until the simulator's event table takes over: records what was raised
/// (the last [`RAISED_EVENTS_KEPT`](crate::RAISED_EVENTS_KEPT) signals, in a ring allocated
/// once: raising an event allocates nothing).
#[derive(Debug)]
pub(crate) struct RecordedEvents {
    pub(crate) signaled: Mutex<VecDeque<u32>>,
    pub(crate) memory_faults: Mutex<Vec<(u32, u64, bool)>>,
    pub(crate) queue_errors: Mutex<Vec<QueueFault>>,
    /// GPUs reset because a hung queue could not be preempted.
    pub(crate) resets: Mutex<Vec<u32>>,
}

impl Default for RecordedEvents {
    fn default() -> Self {
        RecordedEvents {
            signaled: Mutex::new(VecDeque::with_capacity(crate::RAISED_EVENTS_KEPT)),
            memory_faults: Mutex::default(),
            queue_errors: Mutex::default(),
            resets: Mutex::default(),
        }
    }
}

impl EventHooks for RecordedEvents {
    fn signal_event(&self, event_id: u32) {
        let mut signaled = lock(&self.signaled);
        if signaled.len() >= crate::RAISED_EVENTS_KEPT {
            signaled.pop_front();
        }
        signaled.push_back(event_id);
    }
    fn memory_fault(&self, gpu_id: u32, fault: crate::isa::MemFault) {
        lock(&self.memory_faults).push((gpu_id, fault.address, fault.write));
    }
    fn queue_error(&self, fault: &QueueFault) {
        lock(&self.queue_errors).push(*fault);
    }
    fn gpu_hang(&self, gpu_id: u32) {
        lock(&self.resets).push(gpu_id);
    }
}
