//! The host driver's AQL queues and DMA engines.
//!
//! A queue is the simulator's command processor running over host memory: the ring and its
//! `amd_queue_t` (read and write indices) are host allocations in the memory table, the
//! application submits with core's [`AqlRing`] protocol, and the doorbell write wakes the
//! queue's worker thread (a [`SimQueue`] of the driver's [`GpuModel`]), which executes the
//! packets — kernel dispatches of registered host kernels once per work-group, barrier-AND/OR
//! on dependency signals — and completes their signals. A fault stops the queue and runs its
//! error callback.
//!
//! A DMA engine is a thread per CPU agent that copies between host buffers and then stores 0
//! into the copy's completion signal.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use hsakmt_core::driver::{AgentId, DriverError, QueueErrorCallback, QueueId, QueueParams};
use hsakmt_core::error::ErrorKind;
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::params::QueuePriority;
use hsakmt_core::queue::ring::{
    AMD_QUEUE_READ_DISPATCH_ID_OFFSET, AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET, AqlRing, AqlRingMemory,
    SharedAqlCells,
};
use hsakmt_core::queue::signal::Signal;
use hsakmt_hostmem::HostMapping;

use super::memory::{HOST_PAGE, new_mapping};
use crate::gpu::vm::{GpuVm, HostVm, MemRange};
use crate::gpu::{Cp, EventHooks, GpuModel, QueueFault, QueueKind, Regs, SimQueue};
use crate::mapping::SimMapping;

/// Bytes of a doorbell (the 64-bit doorbells of gfx9+); queue `i` rings slot `i`.
pub(crate) const DOORBELL_BYTES: u64 = 8;

fn failed(what: &'static str) -> DriverError {
    DriverError::Failed { kind: ErrorKind::OutOfResources, what }
}

/// A live AQL queue.
pub(crate) struct HostQueue {
    /// The command processor's queue id.
    pub(crate) qid: u32,
    /// The agent it runs on.
    pub(crate) agent: AgentId,
    /// The submission side of the ring.
    pub(crate) producer: AqlRing<SimMapping>,
    /// The processor's view.
    pub(crate) sim: Arc<SimQueue>,
    ring: u64,
    descriptor: u64,
}

impl std::fmt::Debug for HostQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostQueue")
            .field("qid", &self.qid)
            .field("agent", &self.agent)
            .field("ring", &format_args!("{:#x}", self.ring))
            .finish_non_exhaustive()
    }
}

/// The priority the processor records for a libhsakmt priority.
pub(crate) fn processor_priority(priority: i8) -> Result<u32, DriverError> {
    QueuePriority::from_raw(i32::from(priority))
        .map(QueuePriority::kfd_priority)
        .map_err(|_| DriverError::InvalidArgument("queue priority (-3..=3)"))
}

impl HostQueue {
    /// Makes the queue's memory, records it in `vm`, and starts its processor on `model`.
    /// `doorbells` is the driver's doorbell page; the queue rings slot `slot`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        model: &GpuModel,
        vm: &HostVm,
        doorbells: &SimMapping,
        slot: u32,
        qid: u32,
        agent: AgentId,
        params: &QueueParams,
    ) -> Result<Self, DriverError> {
        let priority = processor_priority(params.priority)?;
        let bytes = u64::from(params.packets) * 64;
        let ring = new_mapping(bytes)?;
        let descriptor = new_mapping(HOST_PAGE)?;
        let (ring_addr, desc_addr) = (ring.addr(), descriptor.addr());
        let cells = SharedAqlCells::new(AqlRingMemory {
            ring: SimMapping::new(ring.clone()),
            indices: SimMapping::new(descriptor.clone()),
            write_index_offset: AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET,
            read_index_offset: AMD_QUEUE_READ_DISPATCH_ID_OFFSET,
            doorbell: doorbells.clone(),
            doorbell_offset: usize::try_from(u64::from(slot) * DOORBELL_BYTES).unwrap_or(0),
        })
        .map_err(|_| DriverError::InvalidArgument("queue size (packets)"))?;
        let producer = AqlRing::new(cells)
            .map_err(|_| DriverError::InvalidArgument("queue size (packets)"))?;
        producer.init_slots();
        vm.insert(ring, false).map_err(|_| failed("queue ring"))?;
        if vm.insert(descriptor, false).is_err() {
            let _ = vm.remove(ring_addr);
            return Err(failed("queue descriptor"));
        }
        let sim = Arc::new(SimQueue::new(
            qid,
            0,
            QueueKind::Aql,
            slot,
            (
                desc_addr + AMD_QUEUE_READ_DISPATCH_ID_OFFSET as u64,
                desc_addr + AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET as u64,
            ),
            0,
            0,
            Regs {
                ring_address: ring_addr,
                ring_size: bytes,
                percentage: u32::from(params.percentage),
                priority,
            },
            Vec::new(),
        ));
        model.start(sim.clone());
        Ok(HostQueue { qid, agent, producer, sim, ring: ring_addr, descriptor: desc_addr })
    }

    /// Stops the processor (joining its thread) and forgets the queue's memory.
    pub(crate) fn stop(&self, model: &GpuModel, vm: &HostVm) {
        model.stop(self.qid);
        let _ = vm.remove(self.ring);
        let _ = vm.remove(self.descriptor);
    }

    /// Why the queue stopped, if it did.
    pub(crate) fn fault(&self) -> Option<QueueFault> {
        self.sim.fault()
    }
}

/// Where the processors' interrupts go on the host: queue errors run the queue's error
/// callback; host signals have no event mailbox, so there are no signal interrupts.
#[derive(Debug, Default)]
pub(crate) struct HostHooks {
    callbacks: Mutex<HashMap<u32, (QueueId, Option<QueueErrorCallback>)>>,
}

impl HostHooks {
    /// Routes processor queue `qid`'s errors to `queue`'s callback.
    pub(crate) fn watch(&self, qid: u32, queue: QueueId, callback: Option<QueueErrorCallback>) {
        let mut c = self.callbacks.lock().unwrap_or_else(PoisonError::into_inner);
        c.insert(qid, (queue, callback));
    }

    /// Forgets processor queue `qid`.
    pub(crate) fn forget(&self, qid: u32) {
        self.callbacks.lock().unwrap_or_else(PoisonError::into_inner).remove(&qid);
    }
}

impl EventHooks for HostHooks {
    fn signal_event(&self, _event_id: u32) {}

    fn memory_fault(&self, _gpu_id: u32, _fault: crate::isa::MemFault) {}

    fn queue_error(&self, fault: &QueueFault) {
        let entry = self
            .callbacks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&fault.queue_id)
            .copied();
        // Called without the lock: the callback may destroy the queue.
        if let Some((queue, Some(callback))) = entry {
            callback(queue, ErrorKind::DeviceFault);
        }
    }
}

/// One copy for a DMA engine: resolved ranges (holding their memory alive), the signals it
/// waits for and the signal it completes.
struct CopyJob {
    dst: MemRange,
    src: MemRange,
    deps: Vec<(HostMapping, usize)>,
    signal: (HostMapping, usize),
}

/// Bytes a DMA engine moves per step of a copy.
const DMA_CHUNK: usize = 1 << 20;

/// A CPU agent's DMA engine: a thread that performs copies in order.
#[derive(Debug)]
pub(crate) struct DmaEngine {
    jobs: Option<Sender<CopyJob>>,
    thread: Option<JoinHandle<()>>,
    stopping: Arc<AtomicBool>,
}

impl DmaEngine {
    /// Starts an engine; completions are announced on `cp`'s progress notifier.
    pub(crate) fn start(cp: Arc<Cp>, node: u32) -> Result<Self, DriverError> {
        let (tx, rx) = channel();
        let stopping = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&stopping);
        let thread = std::thread::Builder::new()
            .name(format!("host-dma{node}"))
            .spawn(move || dma_worker(&rx, &cp, &stop))
            .map_err(|_| failed("DMA engine thread"))?;
        Ok(DmaEngine { jobs: Some(tx), thread: Some(thread), stopping })
    }

    /// Queues a copy of `bytes` from `src` to `dst` (both inside memory `vm` knows) that
    /// starts once every signal of `deps` is 0 and stores 0 into `signal` when done.
    pub(crate) fn copy(
        &self,
        vm: &HostVm,
        dst: u64,
        src: u64,
        bytes: u64,
        deps: Vec<(HostMapping, usize)>,
        signal: (HostMapping, usize),
    ) -> Result<(), DriverError> {
        if bytes == 0 {
            return Err(DriverError::InvalidArgument("zero-byte copy"));
        }
        let dst =
            vm.resolve(0, dst, bytes).ok_or(DriverError::InvalidArgument("copy destination"))?;
        let src = vm.resolve(0, src, bytes).ok_or(DriverError::InvalidArgument("copy source"))?;
        let jobs = self.jobs.as_ref().ok_or(DriverError::NotInitialized)?;
        jobs.send(CopyJob { dst, src, deps, signal }).map_err(|_| DriverError::NotInitialized)
    }

    /// Finishes the queued copies and ends the thread.
    pub(crate) fn stop(&mut self) {
        // Copies still waiting for a dependency are abandoned.
        self.stopping.store(true, Ordering::Release);
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for DmaEngine {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether every dependency signal is 0.
fn deps_done(deps: &[(HostMapping, usize)]) -> bool {
    deps.iter().all(|(m, o)| Signal::new(m, *o).is_ok_and(|s| s.load_acquire() == 0))
}

fn dma_worker(jobs: &Receiver<CopyJob>, cp: &Cp, stopping: &AtomicBool) {
    let mut buf = vec![0u8; DMA_CHUNK];
    while let Ok(job) = jobs.recv() {
        // Wait for the dependencies (an SDMA engine's POLL_REGMEM), waking to notice a stop.
        while !deps_done(&job.deps) {
            if stopping.load(Ordering::Acquire) {
                break;
            }
            let deadline = std::time::Instant::now() + std::time::Duration::from_millis(50);
            cp.progress.wait_until(|| deps_done(&job.deps), Some(deadline));
        }
        if !deps_done(&job.deps) {
            continue;
        }
        let len = job.src.len();
        // memmove: when the destination overlaps the source from above, copy from the end.
        let backwards =
            job.dst.addr() > job.src.addr() && job.dst.addr() < job.src.addr() + len as u64;
        let chunks = len.div_ceil(DMA_CHUNK);
        for i in 0..chunks {
            let i = if backwards { chunks - 1 - i } else { i };
            let at = i * DMA_CHUNK;
            let n = (len - at).min(DMA_CHUNK);
            let Some(b) = buf.get_mut(..n) else { continue };
            // Both ranges were resolved `len` bytes long, so these cannot fail.
            let _ = job.src.read(at, b);
            let _ = job.dst.write(at, b);
        }
        let (memory, offset) = &job.signal;
        if let Ok(s) = Signal::new(memory, *offset) {
            s.store_release(0);
        }
        cp.progress.bump();
    }
}
