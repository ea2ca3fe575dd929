//! The runtime's side of an AQL queue's `amd_queue_t` (ROCr's `AqlQueue`): the descriptor
//! fields the packet processor reads, written when the queue is created, and the queue's
//! scratch memory — sized from the agent's topology ([`ScratchFacts`]), allocated for the
//! queue's `private_segment_size` when it is created, and grown when a dispatch asks for more
//! private memory per work-item than the queue holds.
//!
//! # Growth
//! The packet processor reads the scratch fields when it launches a dispatch, so they change
//! only with the queue idle, as ROCr changes them while the processor waits on the queue's
//! inactive signal. The thread whose dispatch needs more scratch marks the queue growing
//! (other threads' submissions to the queue wait), publishes a barrier-AND packet with the
//! barrier bit and waits for its completion signal — every earlier packet has then completed
//! — allocates the new memory, rewrites the fields, frees the old memory and lets submissions
//! go on. A queue that goes into error meanwhile ends the wait with the queue's error.
//!
//! Scratch lives in device memory (coarse-grained VRAM) of the queue's GPU, mapped on it only.
//! ROCr carves it from a per-agent pool allocated with libhsakmt's scratch flag; from gfx9 on
//! the packet processor takes the memory's absolute address (`scratch_backing_memory_location`)
//! and any GPU mapping of the process serves.

use crate::device::{Allocation, Kfd, MapNodes, MemoryStorage, SignalCondition};
use crate::driver::{Driver, DriverError, KfdDriver, QueueId, Waited};
use crate::memory::MemFlags;
use crate::platform::Platform;
use crate::queue::amd_queue::{
    HSA_QUEUE_TYPE_MULTI, HSA_QUEUE_TYPE_SINGLE, QueueDescriptor, write_scratch,
};
use crate::queue::aql::{AqlPacket, Barrier, PacketType, PacketWords};
use crate::queue::scratch::{ScratchError, ScratchFacts, ScratchLayout};

use super::submission::LiveQueue;

/// How long one wait for the queue to drain sleeps before checking the queue for errors.
const DRAIN_POLL_NS: u64 = 100_000_000;

/// A queue's scratch and LDS limits.
pub(super) struct QueueScratch<M> {
    /// Private bytes per work-item the queue's scratch holds (0: none). The agent's scratch
    /// facts are read from the topology when it grows, not kept per queue (the driver's queue
    /// table stays small).
    pub(super) lane_bytes: u32,
    /// Its memory.
    pub(super) memory: Option<Allocation<M>>,
    /// A thread is replacing the scratch; submissions wait.
    pub(super) growing: bool,
    /// The most LDS a dispatch on the queue may ask for.
    pub(super) group_limit: u32,
}

/// The private and group segment sizes of a kernel-dispatch packet (`None` for other packets).
pub(super) fn dispatch_segments(p: &PacketWords) -> Option<(u32, u32)> {
    // Bytes 24..28 and 28..32: the low and high halves of qw[2] (bytes 24..32).
    let kind = p.header() & 0xFF;
    (kind == PacketType::KernelDispatch as u16).then(|| {
        let word = p.qw.get(2).copied().unwrap_or(0);
        ((word & 0xFFFF_FFFF) as u32, (word >> 32) as u32)
    })
}

/// What a packet needs before it can be published on a queue.
pub(super) enum Admission {
    /// Publish it.
    Ready,
    /// Another thread is growing the queue's scratch: wait.
    Wait,
    /// The queue needs scratch for this many private bytes per work-item first.
    Grow(u32),
}

impl<M> QueueScratch<M> {
    /// What `p` needs on this queue.
    ///
    /// # Errors
    /// [`DriverError::InvalidArgument`] for a group segment above the queue's limit.
    pub(super) fn admit(&self, p: &PacketWords) -> Result<Admission, DriverError> {
        if self.growing {
            return Ok(Admission::Wait);
        }
        let Some((private, group)) = dispatch_segments(p) else { return Ok(Admission::Ready) };
        if group > self.group_limit {
            return Err(DriverError::InvalidArgument(
                "group segment size above the queue's limit (QueueParams::group_segment_size)",
            ));
        }
        Ok(if private > self.lane_bytes { Admission::Grow(private) } else { Admission::Ready })
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> KfdDriver<P, S>
where
    Kfd<P, S>: Send + Sync,
{
    /// The LDS limit and descriptor of a new queue on GPU node `node`; writes
    /// the descriptor into the queue's `amd_queue_t` (`indices`) with no scratch.
    ///
    /// # Errors
    /// [`DriverError::InvalidArgument`] for a group segment size above the agent's LDS; the
    /// device's failure.
    pub(super) fn init_queue_descriptor(
        &self,
        node: u32,
        indices: &P::Mapping,
        ring: (u64, u32),
        queue_id: u32,
        single_producer: bool,
        group_segment_size: u32,
    ) -> Result<QueueScratch<P::Mapping>, DriverError> {
        let (facts, lds, cus, waves_per_cu) = self.kfd.with_topology(|t| {
            let n = t.node_by_user_id(node).map(|v| *v.node());
            let facts = n.as_ref().and_then(ScratchFacts::from_node);
            let p = n.as_ref().map(|n| *n.properties());
            let lds = p.and_then(|p| p.lds_size_in_kb()).map_or(0, |kb| kb.saturating_mul(1024));
            let cus = n.as_ref().and_then(|n| n.cu_count()).unwrap_or(0);
            let waves =
                p.and_then(|p| p.max_waves_per_simd()?.checked_mul(p.simd_per_cu()?)).unwrap_or(0);
            (facts, lds, cus, waves)
        })?;
        if lds > 0 && group_segment_size > lds {
            return Err(DriverError::InvalidArgument(
                "group segment size above the agent's LDS (QueueParams::group_segment_size)",
            ));
        }
        let group_limit = match (group_segment_size, lds) {
            (0, 0) => u32::MAX,
            (0, lds) => lds,
            (g, _) => g,
        };
        let apertures = self.kfd.node_apertures(node)?;
        let hi = |a: Option<(u64, u64)>| a.map_or(0, |(base, _)| (base >> 32) as u32);
        let descriptor = QueueDescriptor {
            queue_type: if single_producer { HSA_QUEUE_TYPE_SINGLE } else { HSA_QUEUE_TYPE_MULTI },
            ring_address: ring.0,
            packets: ring.1,
            id: u64::from(queue_id),
            cu_count: cus,
            waves_per_cu,
            group_aperture_hi: hi(apertures.lds),
            private_aperture_hi: hi(apertures.scratch),
        };
        let broken = |e| DriverError::Device(crate::device::Error::Platform(e));
        descriptor.write(indices).map_err(broken)?;
        if let Some(f) = &facts {
            write_scratch(indices, f, None).map_err(broken)?;
        }
        Ok(QueueScratch { lane_bytes: 0, memory: None, growing: false, group_limit })
    }

    /// Allocates scratch for `layout` on GPU node `node` and points the queue's descriptor at
    /// it. The queue must be idle (new, or drained).
    fn install_scratch(
        &self,
        node: u32,
        indices: &P::Mapping,
        facts: &ScratchFacts,
        layout: &ScratchLayout,
    ) -> Result<Allocation<P::Mapping>, DriverError> {
        let flags = MemFlags::NON_PAGED | MemFlags::COARSE_GRAIN;
        let memory = self.kfd.alloc_memory(node, layout.size, flags)?;
        let done = self
            .kfd
            .map_memory_to_gpu(memory.addr, MapNodes::Only(&[node]))
            .map_err(DriverError::from)
            .and_then(|_| {
                write_scratch(indices, facts, Some((layout, memory.addr)))
                    .map_err(|e| DriverError::Device(crate::device::Error::Platform(e)))
            });
        match done {
            Ok(()) => Ok(memory),
            Err(e) => {
                let _ = self.kfd.free(memory);
                Err(e)
            }
        }
    }

    /// GPU node `node`'s scratch resources, from the topology.
    fn scratch_facts(&self, node: u32) -> Result<ScratchFacts, DriverError> {
        let facts = self.kfd.with_topology(|t| {
            t.node_by_user_id(node).and_then(|v| ScratchFacts::from_node(v.node()))
        })?;
        Ok(facts.ok_or(ScratchError::UnknownSlots)?)
    }

    /// Gives a new queue scratch for `private_segment_size` bytes per work-item (none for 0).
    pub(super) fn initial_scratch(
        &self,
        node: u32,
        indices: &P::Mapping,
        scratch: &mut QueueScratch<P::Mapping>,
        private_segment_size: u32,
    ) -> Result<(), DriverError> {
        if private_segment_size == 0 {
            return Ok(());
        }
        let facts = self.scratch_facts(node)?;
        let Some(layout) = ScratchLayout::for_private_segment(&facts, private_segment_size)? else {
            return Ok(());
        };
        scratch.memory = Some(self.install_scratch(node, indices, &facts, &layout)?);
        scratch.lane_bytes = layout.lane_bytes;
        Ok(())
    }

    /// Grows `queue`'s scratch to `private` bytes per work-item (see the module docs). Returns
    /// at once when another thread is growing it (the caller waits for that) or it has grown
    /// enough meanwhile.
    pub(super) fn grow_scratch(&self, queue: QueueId, private: u32) -> Result<(), DriverError> {
        let node = {
            let st = self.state.read();
            let q = st.queues.get(queue.into()).ok_or(DriverError::InvalidHandle)?;
            if q.scratch.growing || q.scratch.lane_bytes >= private {
                return Ok(());
            }
            q.node
        };
        let facts = self.scratch_facts(node)?;
        let Some(layout) = ScratchLayout::for_private_segment(&facts, private)? else {
            return Ok(());
        };
        let indices = {
            let mut st = self.state.write();
            let q = st.queues.get_mut(queue.into()).ok_or(DriverError::InvalidHandle)?;
            let s = &mut q.scratch;
            // Another thread may have started (or finished) growing it meanwhile.
            if s.growing || s.lane_bytes >= private {
                return Ok(());
            }
            s.growing = true;
            q.producer.producer().cells().memory().indices.clone()
        };
        let grown =
            self.drain(queue).and_then(|()| self.install_scratch(node, &indices, &facts, &layout));
        let old = {
            let mut st = self.state.write();
            match st.queues.get_mut(queue.into()) {
                Some(q) => {
                    q.scratch.growing = false;
                    match grown {
                        Ok(memory) => {
                            q.scratch.lane_bytes = layout.lane_bytes;
                            q.scratch.memory.replace(memory)
                        }
                        Err(e) => return Err(e),
                    }
                }
                // Destroyed meanwhile by another thread: nothing holds the new memory.
                None => grown.ok(),
            }
        };
        if let Some(memory) = old {
            let _ = self.kfd.free(memory);
        }
        Ok(())
    }

    /// Publishes a barrier packet behind every earlier packet of `queue` and waits for its
    /// completion: the queue is idle after.
    fn drain(&self, queue: QueueId) -> Result<(), DriverError> {
        let done = self.create_signal(1)?;
        let mut barrier = Barrier::NOP;
        barrier.flags.barrier = true;
        barrier.completion_signal = done.0;
        let words = AqlPacket::BarrierAnd(barrier)
            .to_words()
            .map_err(|_| DriverError::InvalidArgument("barrier packet"))?;
        let waited = self.publish(queue, &words).and_then(|_| {
            loop {
                match self.signal_wait(done, SignalCondition::Eq(0), DRAIN_POLL_NS)? {
                    Waited::Done(_) => break Ok(()),
                    Waited::TimedOut => {
                        let error = self.queue(queue, |q| q.error_signal)?;
                        if self.signal_load(error)? != 0 {
                            break Err(DriverError::Failed {
                                kind: crate::error::ErrorKind::DeviceFault,
                                what: "the queue went into error while its scratch grew",
                            });
                        }
                    }
                }
            }
        });
        let _ = self.destroy_signal(done);
        waited
    }

    /// Frees a destroyed queue's scratch.
    pub(super) fn release_scratch(&self, live: &mut LiveQueue<P::Mapping>) {
        if let Some(memory) = live.scratch.memory.take() {
            let _ = self.kfd.free(memory);
        }
        live.scratch.lane_bytes = 0;
    }
}
