//! AQL queues addressed by generation-checked ids, with the cache of destroyed queues' rings
//! (allocated and mapped, kept for the next queue of the same size), queue errors, and SDMA
//! copies on one SDMA queue per GPU agent, created on first use.

use crate::device::queue_manager::{
    AqlQueue, QueueDesc, QueueHandle, QueueType, RingSpec, SdmaCompletion,
};
use crate::device::{Allocation, Kfd, MapNodes, MemoryStorage};
use crate::driver::{AgentId, Driver, DriverError, KfdDriver, QueueId, QueueParams, SignalId};
use crate::memory::{MemFlags, PAGE_SIZE};
use crate::platform::{Platform, SharedMemory};
use crate::queue::aql::PacketWords;
use crate::queue::params::QueuePriority;
use crate::queue::sdma::{PollFunc, SdmaPacket};
use crate::queue::signal::{Mailbox, VALUE_OFFSET};

use crate::queue::ring::RingError;

use super::MAX_DRIVER_QUEUES;
use super::queue_scratch::{Admission, QueueScratch};

/// What one attempt to publish a packet came to.
enum Step {
    /// Published at this index.
    Published(u64),
    /// The ring is full, or the queue's scratch is growing: try again.
    Retry,
    /// Grow the queue's scratch to this many bytes per work-item first.
    Grow(u32),
}

pub(super) struct LiveQueue<M: SharedMemory> {
    pub(super) handle: QueueHandle,
    pub(super) agent: AgentId,
    /// The agent's GPU node.
    pub(super) node: u32,
    /// Scratch memory and LDS limit (`queue_scratch`).
    pub(super) scratch: QueueScratch<M>,
    pub(super) producer: AqlQueue<M>,
    pub(super) ring: Allocation<M>,
    pub(super) params: QueueParams,
    /// The signal whose value the kernel sets to the exception mask on a queue error.
    pub(super) error_signal: SignalId,
    pub(super) error_reported: bool,
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> KfdDriver<P, S>
where
    Kfd<P, S>: Send + Sync,
{
    /// Creates an AQL queue on `agent`, reusing a cached ring of its size
    /// ([`Driver::create_queue`]).
    pub(super) fn create_aql_queue(
        &self,
        agent: AgentId,
        params: &QueueParams,
    ) -> Result<QueueId, DriverError> {
        let node = self.gpu_node_of(agent)?;
        let (min, max) = {
            let st = self.state.read();
            let a =
                st.agents.iter().find(|a| a.id == agent).ok_or(DriverError::InvalidAgent(agent))?;
            (a.queue_min_packets, a.queue_max_packets)
        };
        if !params.packets.is_power_of_two() || params.packets < min || params.packets > max {
            return Err(DriverError::InvalidArgument("queue size (packets)"));
        }
        if params.percentage == 0 || params.percentage > 100 {
            return Err(DriverError::InvalidArgument("queue percentage"));
        }
        let priority = QueuePriority::from_raw(i32::from(params.priority))
            .map_err(|_| DriverError::InvalidArgument("queue priority (-3..=3)"))?;
        let bytes = u64::from(params.packets) * 64;
        // A cached ring of this size (already allocated and mapped), else a new one.
        let cached = {
            let mut st = self.state.write();
            st.ring_cache.iter().position(|r| r.size == bytes).map(|i| st.ring_cache.swap_remove(i))
        };
        let ring = match cached {
            Some(r) => r,
            None => {
                let cpu = self.nearest_cpu(agent).map_or(0, |a| a.node);
                let flags = MemFlags::HOST_ACCESS | MemFlags::NON_PAGED;
                let r = self.kfd.alloc_memory(cpu, bytes.max(PAGE_SIZE), flags)?;
                if let Err(e) = self.kfd.map_memory_to_gpu(r.addr, MapNodes::All) {
                    let _ = self.kfd.free(r);
                    return Err(e.into());
                }
                r
            }
        };
        self.ensure_signal_pool()?;
        let error_signal = self.create_signal(0)?;
        let mapping = ring.mapping.clone().ok_or(DriverError::InvalidArgument("ring mapping"))?;
        let desc = QueueDesc::new(node, QueueType::ComputeAql, bytes)
            .with_ring(RingSpec::Mapped { mapping: &mapping, size: bytes })
            .with_priority(priority)
            .with_percentage(u32::from(params.percentage));
        let desc = QueueDesc {
            error: crate::device::queue_manager::ErrorReporting {
                payload_address: error_signal.0.saturating_add(VALUE_OFFSET as u64),
                event_id: 0,
            },
            ..desc
        };
        let undo = |ring: Allocation<P::Mapping>| {
            let _ = self.destroy_signal(error_signal);
            let mut st = self.state.write();
            if let Err(r) = st.ring_cache.push(ring) {
                drop(st);
                let _ = self.kfd.free(r);
            }
        };
        let created = self.kfd.create_queue(&desc);
        let mapping_addr = mapping.addr();
        drop(mapping);
        let info = match created {
            Ok(i) => i,
            Err(e) => {
                undo(ring);
                return Err(e.into());
            }
        };
        let producer = match self.kfd.aql_queue(info.handle) {
            Ok(p) => p,
            Err(e) => {
                let _ = self.kfd.destroy_queue(info.handle);
                undo(ring);
                return Err(e.into());
            }
        };
        let indices = producer.producer().cells().memory().indices.clone();
        let single = params.producers == crate::driver::Producers::Single;
        let ring_packets = (mapping_addr, params.packets);
        let scratch = self
            .init_queue_descriptor(
                node,
                &indices,
                ring_packets,
                info.queue_id,
                single,
                params.group_segment_size,
            )
            .and_then(|mut s| {
                self.initial_scratch(node, &indices, &mut s, params.private_segment_size)
                    .map(|()| s)
            });
        let scratch = match scratch {
            Ok(s) => s,
            Err(e) => {
                drop(producer);
                let _ = self.kfd.destroy_queue(info.handle);
                undo(ring);
                return Err(e);
            }
        };
        let live = LiveQueue {
            handle: info.handle,
            agent,
            node,
            scratch,
            producer,
            ring,
            params: *params,
            error_signal,
            error_reported: false,
        };
        let mut st = self.state.write();
        match st.queues.insert(live) {
            Ok(key) => Ok(key.into()),
            Err(mut live) => {
                drop(st);
                self.release_scratch(&mut live);
                let LiveQueue { producer, ring, .. } = live;
                drop(producer);
                let _ = self.kfd.destroy_queue(info.handle);
                undo(ring);
                Err(DriverError::CapacityExhausted("queue"))
            }
        }
    }

    /// Submits `packets`, spinning (without the lock) while the ring is full ([`Driver::submit`]).
    /// A kernel dispatch that needs more scratch than the queue holds grows it first
    /// (`queue_scratch`); one asking for more LDS than the queue allows is refused before
    /// anything of it is published.
    pub(super) fn submit_packets(
        &self,
        queue: QueueId,
        packets: &[PacketWords],
    ) -> Result<u64, DriverError> {
        let mut first = None;
        for p in packets {
            // A full ring (or a queue whose scratch another thread grows) releases the lock
            // between attempts: the lock is never held across a wait.
            loop {
                let step = self.queue(queue, |q| -> Result<Step, DriverError> {
                    Ok(match q.scratch.admit(p)? {
                        Admission::Ready => match q.producer.try_submit(p) {
                            Ok(i) => Step::Published(i),
                            Err(RingError::Full) => Step::Retry,
                            Err(_) => return Err(DriverError::InvalidArgument("packet")),
                        },
                        Admission::Wait => Step::Retry,
                        Admission::Grow(private) => Step::Grow(private),
                    })
                })??;
                match step {
                    Step::Published(i) => {
                        first.get_or_insert(i);
                        break;
                    }
                    Step::Retry => core::hint::spin_loop(),
                    Step::Grow(private) => self.grow_scratch(queue, private)?,
                }
            }
        }
        first.ok_or(DriverError::InvalidArgument("no packets"))
    }

    /// Destroys `queue`, keeping its ring in the cache ([`Driver::destroy_queue`]); a failure
    /// to release its error signal or ring once the queue is gone is returned too.
    pub(super) fn destroy_aql_queue(&self, queue: QueueId) -> Result<(), DriverError> {
        // Taken out, the queue's slot stays reserved (not reused) while the kernel is asked.
        let key = queue.into();
        let live = self.state.write().queues.take(key).ok_or(DriverError::InvalidHandle)?;
        let LiveQueue {
            handle, producer, ring, error_signal, agent, params, node, scratch, ..
        } = live;
        drop(producer);
        if let Err(e) = self.kfd.destroy_queue(handle) {
            // Put it back: the queue still exists (unless no producer can be had for it any
            // more, in which case the id goes).
            let back = self.kfd.aql_queue(handle).ok().map(|producer| LiveQueue {
                handle,
                agent,
                node,
                scratch,
                producer,
                ring,
                params,
                error_signal,
                error_reported: false,
            });
            let mut st = self.state.write();
            match back {
                Some(live) => {
                    let _ = st.queues.fill(key, live);
                }
                None => {
                    let _ = st.queues.release(key);
                }
            }
            return Err(e.into());
        }
        // The queue is gone; its scratch, error signal and ring go too, and a failure of any
        // is the caller's to know (the first one is returned).
        let scratch =
            scratch.memory.map_or(Ok(()), |m| self.kfd.free(m).map_err(DriverError::from));
        let signal = self.destroy_signal(error_signal);
        let mut st = self.state.write();
        let _ = st.queues.release(key);
        let ring = match st.ring_cache.push(ring) {
            Ok(()) => Ok(()),
            Err(r) => {
                drop(st);
                self.kfd.free(r).map_err(DriverError::from)
            }
        };
        scratch.and(signal).and(ring)
    }

    pub(super) fn queue<R>(
        &self,
        id: QueueId,
        f: impl FnOnce(&LiveQueue<P::Mapping>) -> R,
    ) -> Result<R, DriverError> {
        self.state.read().queues.get(id.into()).map(f).ok_or(DriverError::InvalidHandle)
    }

    /// The CPU view of `queue`'s `amd_queue_t` (the page holding its indices and the fields
    /// the packet processor reads; layout in [`crate::queue::amd_queue`]), for inspection.
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`].
    pub fn queue_descriptor(&self, queue: QueueId) -> Result<P::Mapping, DriverError> {
        self.queue(queue, |q| q.producer.producer().cells().memory().indices.clone())
    }

    /// `queue`'s read and write indices.
    ///
    /// # Errors
    /// [`DriverError::InvalidHandle`].
    pub fn queue_indices(&self, queue: QueueId) -> Result<(u64, u64), DriverError> {
        self.queue(queue, |q| (q.producer.read_index(), q.producer.write_index()))
    }

    /// Runs the error callbacks of queues that went into error since the last call (a queue
    /// error writes the exception mask into the queue's error word); returns how many ran.
    pub fn poll_queue_errors(&self) -> usize {
        let mut fired: heapless::Vec<
            (QueueId, crate::driver::QueueErrorCallback),
            MAX_DRIVER_QUEUES,
        > = heapless::Vec::new();
        {
            let mut st = self.state.write();
            for (key, q) in st.queues.iter_mut() {
                if !q.error_reported && self.signal_load(q.error_signal).unwrap_or(0) != 0 {
                    q.error_reported = true;
                    if let Some(cb) = q.params.error_callback {
                        let _ = fired.push((key.into(), cb));
                    }
                }
            }
        }
        for (id, cb) in &fired {
            cb(*id, crate::error::ErrorKind::DeviceFault);
        }
        fired.len()
    }

    /// Copies `bytes` from `src` to `dst` on the agent's SDMA queue after `deps`
    /// ([`Driver::copy`]).
    pub(super) fn sdma_copy(
        &self,
        agent: AgentId,
        dst: u64,
        src: u64,
        bytes: u64,
        deps: &[SignalId],
        completion: SignalId,
    ) -> Result<(), DriverError> {
        let node = self.gpu_node_of(agent)?;
        for d in deps {
            self.signal_parts(*d)?;
        }
        let (_, _, event) = self.signal_parts(completion)?;
        let info = self.kfd.event_info(event)?;
        let mailbox = match (info.mailbox, info.id) {
            (Some(address), event_id) => Some(Mailbox { address, event_id }),
            _ => None,
        };
        self.sdma_for(node)?;
        let mut sdma = self.sdma.lock();
        let (_, producer) = sdma
            .iter_mut()
            .find(|(n, _)| *n == node)
            .ok_or(DriverError::NotSupported("DMA copy on this agent"))?;
        // Each dependency: poll the low word of its value until 0 (completions store 0, high
        // word first, so the low word changes last).
        let polls = deps.iter().map(|d| SdmaPacket::PollRegMem {
            addr: d.0.saturating_add(VALUE_OFFSET as u64),
            reference: 0,
            mask: u32::MAX,
            func: PollFunc::Equal,
            interval: 10,
            retry_count: 0xFFF,
        });
        producer.copy_after(
            polls,
            dst,
            src,
            bytes,
            SdmaCompletion::Signal { signal: completion.0, value: 0, mailbox },
            core::hint::spin_loop,
        )?;
        Ok(())
    }

    fn sdma_for(&self, node: u32) -> Result<(), DriverError> {
        if self.sdma.lock().iter().any(|(n, _)| *n == node) {
            return Ok(());
        }
        let desc = QueueDesc::new(node, QueueType::Sdma, 64 * 1024);
        let info = self.kfd.create_queue(&desc)?;
        let producer = match self.kfd.sdma_queue(info.handle) {
            Ok(p) => p,
            Err(e) => {
                let _ = self.kfd.destroy_queue(info.handle);
                return Err(e.into());
            }
        };
        let mut sdma = self.sdma.lock();
        let raced = sdma.iter().any(|(n, _)| *n == node);
        let rejected =
            if raced { Some(producer) } else { sdma.push((node, producer)).err().map(|(_, p)| p) };
        drop(sdma);
        if let Some(ours) = rejected {
            // Another thread made this node's queue meanwhile (or the table is full): drop ours.
            drop(ours);
            let _ = self.kfd.destroy_queue(info.handle);
        }
        Ok(())
    }
}
