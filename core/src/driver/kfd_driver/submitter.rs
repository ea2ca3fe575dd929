//! [`QueueSubmitter`]: a queue's producer handed out once by the driver, so a thread submits
//! with no lock, no allocation and no system call — the facade's multi-producer protocol
//! ([`AqlQueue::submit`]) on the queue's own mappings.
//!
//! [`Driver::submit`](crate::driver::Driver::submit) finds the queue by id under the driver's
//! read lock for every packet; a submitter resolves the id once, when it is made. The queue cannot be destroyed while a
//! submitter of it lives: the facade counts its producer objects and refuses
//! ([`Driver::destroy_queue`](crate::driver::Driver::destroy_queue) then fails and the queue
//! stays usable).
//!
//! Scratch: a kernel dispatch whose private or group segment does not fit what the queue held
//! when the submitter was made (or last looked) takes the driver's path — admission under the
//! lock, the queue's scratch grown first if it must be — and the submitter then notes the
//! queue's new scratch size. A queue's scratch only grows while it lives, so a dispatch that
//! fits the noted size fits the queue's. A packet published while another thread grows the
//! scratch is safe: the grower's barriers hold the packet processor until the queue's
//! descriptor is rewritten (`queue_scratch`).

use core::fmt;

use crate::device::queue_manager::AqlQueue;
use crate::device::{Kfd, MemoryStorage};
use crate::driver::{DriverError, KfdDriver, QueueId};
use crate::platform::Platform;
use crate::queue::aql::PacketWords;

use super::queue_scratch::dispatch_segments;

/// A producer of one AQL queue of a [`KfdDriver`], made by [`KfdDriver::submitter`].
///
/// One per submitting thread (`submit` takes `&mut self`; make one for each thread). While it
/// lives its queue cannot be destroyed ([`Driver::destroy_queue`] and [`Driver::shutdown`]
/// fail for that queue); dropping it lets the queue be destroyed again.
///
/// [`Driver::destroy_queue`]: crate::driver::Driver::destroy_queue
/// [`Driver::shutdown`]: crate::driver::Driver::shutdown
pub struct QueueSubmitter<'d, P: Platform, S: MemoryStorage<P::Mapping>> {
    driver: &'d KfdDriver<P, S>,
    id: QueueId,
    queue: AqlQueue<P::Mapping>,
    /// Private bytes per work-item the queue's scratch held when last looked at.
    lane_bytes: u32,
    /// The most LDS a dispatch on the queue may ask for.
    group_limit: u32,
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> fmt::Debug for QueueSubmitter<'_, P, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueSubmitter").field("queue", &self.id).finish_non_exhaustive()
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> KfdDriver<P, S>
where
    Kfd<P, S>: Send + Sync,
{
    /// A producer of `queue` for submitting without the driver's lock ([`QueueSubmitter`]).
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`] for an unknown or destroyed queue; the facade's failure
    /// to make a producer.
    pub fn submitter(&self, queue: QueueId) -> Result<QueueSubmitter<'_, P, S>, DriverError> {
        let (handle, lane_bytes, group_limit) =
            self.queue(queue, |q| (q.handle, q.scratch.lane_bytes, q.scratch.group_limit))?;
        // Made after the lock is let go; a queue destroyed meanwhile has no producer to give
        // (its handle is gone from the facade, or refers to nothing that accepts packets).
        let producer = self.kfd.aql_queue(handle)?;
        // Looked up again: the id must still name the queue the producer belongs to.
        if self.queue(queue, |q| q.handle)? != handle {
            return Err(DriverError::InvalidHandle);
        }
        Ok(QueueSubmitter { driver: self, id: queue, queue: producer, lane_bytes, group_limit })
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> QueueSubmitter<'_, P, S>
where
    Kfd<P, S>: Send + Sync,
{
    /// The queue this submitter publishes to.
    #[must_use]
    pub fn queue(&self) -> QueueId {
        self.id
    }

    /// Publishes `packet` (body first, header last, then the doorbell) and returns its index,
    /// spinning while the ring is full — [`Driver::submit`](crate::driver::Driver::submit) of
    /// one packet, without the lock.
    ///
    /// # Errors
    /// Only for a kernel dispatch the queue must first be made ready for (see the module
    /// docs): [`DriverError::InvalidArgument`] for a group segment above the queue's limit,
    /// and the failures of growing the queue's scratch.
    #[inline]
    pub fn submit(&mut self, packet: &PacketWords) -> Result<u64, DriverError> {
        if let Some((private, group)) = dispatch_segments(packet)
            && (private > self.lane_bytes || group > self.group_limit)
        {
            return self.submit_through_driver(packet);
        }
        Ok(self.queue.submit(packet, core::hint::spin_loop))
    }

    /// The driver's submit of one packet (admission, scratch growth), then the queue's scratch
    /// size noted again.
    #[cold]
    fn submit_through_driver(&mut self, packet: &PacketWords) -> Result<u64, DriverError> {
        let published = self.driver.submit_packets(self.id, core::slice::from_ref(packet));
        if let Ok(lane_bytes) = self.driver.queue(self.id, |q| q.scratch.lane_bytes) {
            self.lane_bytes = lane_bytes;
        }
        published
    }
}
