//! The simulated GPUs' command processors: user queues created by `AMDKFD_IOC_CREATE_QUEUE`
//! ([`pqm`]), woken by doorbell writes, executing AQL packets ([`aql`]), PM4 packets ([`pm4`])
//! and SDMA packets ([`sdma`]) on the process's memory ([`vm`]), running registered host
//! kernels ([`kernel`]).
//!
//! # Execution modes ([`CpMode`])
//! - **Threaded** (default): each queue has a processor thread. A doorbell write wakes it; it
//!   consumes packets from the read index up to the doorbell, and sleeps when the queue is
//!   empty. A barrier whose dependencies are not met parks the thread on the device's progress
//!   notifier (woken by every completion) with a short timeout, since the host may change a
//!   signal without telling anyone.
//! - **Step**: no threads. Doorbells only record; [`GpuModel::run_until_idle`] runs every queue
//!   in queue-id order until none can make progress. Deterministic, for tests.
//! - **OnWait**: as Step, and `AMDKFD_IOC_WAIT_EVENTS` also runs every queue until idle
//!   before it looks at its events: the GPU makes progress exactly when the process sleeps in
//!   the kernel. A program that waits for each piece of work issues the same ioctls in the same
//!   order on every run, whatever the host's speed (injected faults meet the same calls).
//!
//! # Doorbells
//! A doorbell rung through the mapping ([`SharedMemory::ring_doorbell64`]) or
//! `hsaKmtQueueRingDoorbell` wakes the processor at once. Programs also ring with a plain store
//! to the doorbell page (kfdtest's queues, ROCr's SDMA blit queues) — on hardware the doorbell
//! aperture itself notices. The simulator notices such stores by polling: an idle processor
//! looks at its queue again after a sleep that doubles from [`DOORBELL_POLL_MIN`] up to
//! [`CpConfig::doorbell_poll`], reading its doorbell slot in the page (AQL: the announced packet
//! index) and, for PM4 and SDMA queues, the write pointer in memory. Busy queues never poll;
//! step mode polls every queue once per round of [`GpuModel::run_until_idle`], so it stays
//! deterministic.
//!
//! Either way a queue processes packets only while it is *active* — a ring, a non-zero
//! percentage, no error — exactly amdkfd's `QUEUE_IS_ACTIVE`; disabling it by
//! `UPDATE_QUEUE` stops consumption and re-enabling resumes at the read index.
//!
//! # Injected hangs
//! [`GpuModel::hang_queue`] makes the processor stop consuming one queue (doorbells still
//! record) until [`GpuModel::release_queue`]: a hung wave. As on real hardware with the HWS, the
//! kernel then cannot preempt the queue: `DESTROY_QUEUE` removes it anyway and fails with
//! `ETIME` (amdkfd's `pqm_destroy_queue` keeps going on `-ETIME`), `UPDATE_QUEUE` fails with
//! `ETIME` and changes nothing, and the GPU is reset (its HW-exception events are raised).

pub(crate) mod aql;
pub(crate) mod clock;
mod doorbells;
pub(crate) mod isa_queue;
pub(crate) mod kernel;
pub(crate) mod pm4;
pub(crate) mod pqm;
mod processor;
mod queue_report;
mod recorded;
pub(crate) mod sdma;
pub(crate) mod vm;
pub(crate) mod watch;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::signal::Signal;
use hsakmt_core::uapi::{EC_QUEUE_WAVE_MEMORY_VIOLATION, KFD_EC_MASK};

use crate::isa::{MemFault, limits::IDLE_RUN_INSTRUCTIONS};
use clock::GpuClock;
use kernel::KernelRegistry;
use vm::{GpuVm, MemRange, Pin};

pub(crate) use doorbells::Doorbells;
pub use isa_queue::IsaCount;
pub(crate) use pqm::GpuFacts;
use processor::worker;
pub use queue_report::{QueueFault, QueueState};
pub(crate) use recorded::RecordedEvents;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

std::thread_local! {
    /// Nanoseconds the simulated engines ran on this thread (in `run_until_idle`).
    static ENGINE_NS: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
    /// Heap allocations the simulated engines made on this thread (in `run_until_idle`).
    static ENGINE_ALLOCATIONS: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
}

/// Heap allocations the simulated engines have made on the calling thread (see
/// [`thread_engine_ns`]; counted by a [`hsakmt_hostmem::CountingAllocator`] installed as the
/// global allocator, 0 without one).
#[must_use]
pub fn thread_engine_allocations() -> u64 {
    ENGINE_ALLOCATIONS.try_with(core::cell::Cell::get).unwrap_or(0)
}

/// Nanoseconds the simulated command processors and DMA engines have run on the calling
/// thread: in [`CpMode::Step`] and [`CpMode::OnWait`] they run on the thread that calls
/// [`SimPlatform::run_until_idle`](crate::SimPlatform::run_until_idle) or waits in
/// `AMDKFD_IOC_WAIT_EVENTS`. What a program subtracts from its own time to see the library's
/// apart from the simulated device's work.
#[must_use]
pub fn thread_engine_ns() -> u64 {
    ENGINE_NS.try_with(core::cell::Cell::get).unwrap_or(0)
}

/// How the simulated command processors run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpMode {
    /// A processor thread per queue, woken by doorbells (realistic concurrency).
    #[default]
    Threaded,
    /// No threads: work happens in [`SimPlatform::run_until_idle`](crate::SimPlatform::run_until_idle).
    Step,
    /// No threads: work happens when the process waits in `AMDKFD_IOC_WAIT_EVENTS` (and in
    /// [`SimPlatform::run_until_idle`](crate::SimPlatform::run_until_idle)). A waiter that
    /// spins first never sees work done before it sleeps, so each wait of the library issues
    /// exactly one `WAIT_EVENTS`: deterministic ioctl sequences for fault injection.
    OnWait,
}

/// How the command processors of a [`GpuModel`] run and what they execute.
#[derive(Debug, Clone)]
pub(crate) struct CpConfig {
    /// Threads or steps.
    pub(crate) mode: CpMode,
    /// How long an idle processor polls before it sleeps (threaded mode).
    pub(crate) idle_spin: Duration,
    /// The longest sleep of an idle processor between two looks at its doorbell (threaded
    /// mode): the latency of a plain doorbell store to a queue idle for long.
    pub(crate) doorbell_poll: Duration,
    /// The host kernels dispatches run.
    pub(crate) kernels: KernelRegistry,
    /// Whether AQL vendor-specific packets (PM4 indirect buffers) execute; without them they
    /// stop the queue with `EC_QUEUE_PACKET_VENDOR_UNSUPPORTED` (host CPU agents).
    pub(crate) vendor_packets: bool,
}

impl CpConfig {
    /// A GPU's processors: `mode`, `idle_spin`, a fresh registry, vendor packets on.
    pub(crate) fn new(mode: CpMode, idle_spin: Duration) -> Self {
        CpConfig {
            mode,
            idle_spin,
            doorbell_poll: DEFAULT_DOORBELL_POLL,
            kernels: KernelRegistry::new(),
            vendor_packets: true,
        }
    }
}

/// The first sleep of an idle processor before it looks at its doorbell again.
pub(crate) const DOORBELL_POLL_MIN: Duration = Duration::from_micros(50);

/// The longest an idle queue processor sleeps before it looks at its doorbell again, unless
/// [`SimBuilder::cp_doorbell_poll`](crate::SimBuilder::cp_doorbell_poll) says otherwise.
pub const DEFAULT_DOORBELL_POLL: Duration = Duration::from_millis(2);

/// Where the command processor raises interrupts: the events model.
pub(crate) trait EventHooks: Send + Sync + fmt::Debug {
    /// A signal interrupt with context id `event_id` (an SDMA trap, a `RELEASE_MEM` with an
    /// interrupt).
    fn signal_event(&self, event_id: u32);
    /// A completion signal's event: `event_id` written to the mailbox at `address` (a slot of
    /// the event page), then the interrupt. The default writes through the GPU's page tables.
    fn mailbox(&self, vm: &dyn GpuVm, gpu_id: u32, address: u64, event_id: u32) {
        if let Some(r) = vm.resolve(gpu_id, address, 4)
            && let Some(w) = r.u32s().first()
        {
            w.store(event_id, Ordering::Release);
        }
        self.signal_event(event_id);
    }
    /// The kernel sets event `event_id` itself (a queue's error event, as
    /// `kfd_send_exception_to_runtime` does). The default treats it as an interrupt.
    fn set_event(&self, event_id: u32) {
        self.signal_event(event_id);
    }
    /// A GPU page fault: where and why (KFD raises the process's memory events).
    fn memory_fault(&self, gpu_id: u32, fault: MemFault);
    /// A queue went into error.
    fn queue_error(&self, fault: &QueueFault);
    /// A queue fault is offered to an attached debugger first; `true` when it took it, and
    /// the runtime (error payload, error event, memory events) is not told. The default takes
    /// nothing.
    fn debug_exception(&self, fault: &QueueFault) -> bool {
        let _ = fault;
        false
    }
    /// The address watches armed on a GPU, checked on each wave access ([`watch`]); none.
    fn address_watches(&self, _gpu_id: u32) -> Vec<watch::WatchPoint> {
        Vec::new()
    }
    /// A wave of queue `queue_id` on `gpu_id` touched memory watch `id` covers; nothing.
    fn address_watch_hit(&self, _gpu_id: u32, _queue_id: u32, _id: u32) {}
    /// The kernel could not preempt a hung queue on `gpu_id` and resets the GPU
    /// (`kfd_hws_hang` → `kfd_signal_reset_event`). The default does nothing.
    fn gpu_hang(&self, gpu_id: u32) {
        let _ = gpu_id;
    }
}

/// How long a sleep until `deadline` (`None`: never) may last: `None` once it passed, at most
/// a second (sleepers re-check their condition at least that often).
pub(crate) fn time_left(deadline: Option<Instant>) -> Option<Duration> {
    let most = Duration::from_secs(1);
    match deadline {
        None => Some(most),
        Some(d) => {
            d.checked_duration_since(Instant::now()).filter(|l| !l.is_zero()).map(|l| l.min(most))
        }
    }
}

/// Counts completions; blocked queues (and the host driver's signal waiters) wait on it.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    generation: Mutex<u64>,
    cv: Condvar,
    waiters: std::sync::atomic::AtomicUsize,
}

impl Progress {
    /// Announces a change (a completion, a signal store) to whoever waits.
    pub(crate) fn bump(&self) {
        // Orders the change being announced before the check for waiters, against
        // `wait_until`, which registers before it checks its condition: one of the two sees
        // the other, so no wake-up is lost.
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            *lock(&self.generation) += 1;
            self.cv.notify_all();
        }
    }

    fn wait(&self, timeout: Duration) {
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let g = lock(&self.generation);
        let seen = *g;
        let _ = self.cv.wait_timeout_while(g, timeout, |g| *g == seen);
        self.waiters.fetch_sub(1, Ordering::SeqCst);
    }

    /// Sleeps until `done` holds (checked at every [`Progress::bump`]) or `deadline` passes
    /// (`None`: never); returns whether `done` held. Changes that make `done` true must be
    /// announced with [`Progress::bump`] after they are made.
    pub(crate) fn wait_until(
        &self,
        mut done: impl FnMut() -> bool,
        deadline: Option<Instant>,
    ) -> bool {
        self.waiters.fetch_add(1, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
        let mut g = lock(&self.generation);
        let met = loop {
            if done() {
                break true;
            }
            let Some(left) = time_left(deadline) else { break false };
            g = self.cv.wait_timeout(g, left).unwrap_or_else(PoisonError::into_inner).0;
        };
        drop(g);
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        met
    }
}

/// What every queue processor shares.
#[derive(Debug)]
pub(crate) struct Cp {
    pub(crate) vm: Arc<dyn GpuVm>,
    /// Trap handlers `(tba, tma)` per GPU (`AMDKFD_IOC_SET_TRAP_HANDLER`).
    traps: Mutex<BTreeMap<u32, (u64, u64)>>,
    /// What the ISA interpreter ran on every GPU.
    pub(crate) isa_counters: isa_queue::IsaCounters,
    pub(crate) events: Arc<dyn EventHooks>,
    pub(crate) kernels: KernelRegistry,
    pub(crate) progress: Progress,
    /// The GPU clock timestamps come from.
    pub(crate) clock: GpuClock,
    mode: CpMode,
    idle_spin: Duration,
    doorbell_poll: Duration,
    pub(crate) vendor_packets: bool,
}

impl Cp {
    /// The trap handler set on `gpu_id`.
    pub(crate) fn trap_handler(&self, gpu_id: u32) -> Option<(u64, u64)> {
        lock(&self.traps).get(&gpu_id).copied()
    }

    /// Sets `gpu_id`'s trap handler.
    pub(crate) fn set_trap_handler(&self, gpu_id: u32, tba: u64, tma: u64) {
        lock(&self.traps).insert(gpu_id, (tba, tma));
    }

    /// Completes an AQL/PM4 completion signal: decrement, then the mailbox write and the event.
    /// Returns `Err(address)` when the signal is not mapped.
    pub(crate) fn complete_signal(&self, gpu_id: u32, handle: u64) -> Result<(), u64> {
        let range = self.vm.resolve(gpu_id, handle, 64).ok_or(handle)?;
        let signal = Signal::new(&range, 0).map_err(|_| handle)?;
        let done = signal.cp_complete();
        if let Some(m) = done.interrupt {
            self.mailbox(gpu_id, m.address, m.event_id);
        }
        self.progress.bump();
        Ok(())
    }

    /// Writes `event_id` into an event mailbox slot and raises the event.
    pub(crate) fn mailbox(&self, gpu_id: u32, address: u64, event_id: u32) {
        self.events.mailbox(self.vm.as_ref(), gpu_id, address, event_id);
    }
}

/// The kind of a simulated queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QueueKind {
    /// AQL compute.
    Aql,
    /// PM4 compute.
    Pm4,
    /// SDMA on `engine` (PCIe engines first, then XGMI).
    Sdma {
        /// Engine index.
        engine: u32,
    },
}

/// What `UPDATE_QUEUE` changes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Regs {
    pub(crate) ring_address: u64,
    pub(crate) ring_size: u64,
    pub(crate) percentage: u32,
    pub(crate) priority: u32,
}

impl Regs {
    fn active(&self) -> bool {
        self.ring_address != 0 && self.ring_size > 0 && self.percentage > 0
    }
}

/// Outcome of running a queue for a while.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Packets were consumed.
    Progress,
    /// Nothing to do (empty, inactive or in error).
    Idle,
    /// The next packet waits for something (a barrier's signals, a memory poll).
    Blocked,
    /// A kernel is running on the ISA interpreter and made progress; step again.
    Running,
}

/// Engine-private execution state.
#[derive(Debug, Default)]
pub(crate) struct Exec {
    /// Failed polls of the current SDMA `POLL_REGMEM`.
    pub(crate) poll_retries: u32,
    /// Where each level of PM4 indirect buffer stopped (address, dwords, dword reached), so
    /// a buffer blocked on a poll or a dispatch in flight resumes there.
    pub(crate) ib_pos: [Option<(u64, u32, u64)>; 3],
    /// The ISA interpreter's state for this queue.
    pub(crate) isa: isa_queue::QueueIsa,
}

/// A user queue as the simulated hardware sees it (its MQD).
#[derive(Debug)]
pub(crate) struct SimQueue {
    pub(crate) qid: u32,
    pub(crate) gpu_id: u32,
    pub(crate) kind: QueueKind,
    pub(crate) doorbell_index: u32,
    pub(crate) read_pointer: u64,
    pub(crate) write_pointer: u64,
    pub(crate) ctx_save: u64,
    /// Size of the context-save area (for the debugger's queue snapshot).
    pub(crate) ctx_save_size: u32,
    /// The queue type as user space names it (`KFD_IOC_QUEUE_TYPE_*`; SDMA queues created by
    /// engine id report the kind of engine they got).
    pub(crate) user_type: u32,
    pub(crate) gfx_target: u32,
    regs: Mutex<Regs>,
    /// Suspended by a debugger (`DBG_TRAP_SUSPEND_QUEUES`): the processor does not consume the
    /// queue until it is resumed.
    suspended: AtomicBool,
    /// Evicted by the kernel (memory moved under it) until restored.
    evicted: AtomicBool,
    /// AQL: one past the highest packet index a doorbell announced. PM4/SDMA: last value.
    doorbell: AtomicU64,
    /// The doorbell slot's value at the last poll (`u64::MAX` before the first).
    polled: AtomicU64,
    pending: AtomicBool,
    sleeping: AtomicBool,
    stop: AtomicBool,
    /// Injected hang: the processor does not consume the queue.
    hung: AtomicBool,
    wake: Mutex<()>,
    cv: Condvar,
    fault: Mutex<Option<QueueFault>>,
    pub(crate) pins: Mutex<Vec<Pin>>,
    exec: Mutex<Exec>,
    packets: AtomicU64,
    /// The wave fault behind the next error this queue raises.
    wave_fault: Mutex<Option<crate::isa::WaveFault>>,
}

impl SimQueue {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        qid: u32,
        gpu_id: u32,
        kind: QueueKind,
        doorbell_index: u32,
        pointers: (u64, u64),
        ctx_save: u64,
        gfx_target: u32,
        regs: Regs,
        pins: Vec<Pin>,
    ) -> Self {
        SimQueue {
            qid,
            gpu_id,
            kind,
            doorbell_index,
            read_pointer: pointers.0,
            write_pointer: pointers.1,
            ctx_save,
            ctx_save_size: 0,
            user_type: match kind {
                QueueKind::Aql => hsakmt_core::uapi::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
                QueueKind::Pm4 => hsakmt_core::uapi::KFD_IOC_QUEUE_TYPE_COMPUTE,
                QueueKind::Sdma { .. } => hsakmt_core::uapi::KFD_IOC_QUEUE_TYPE_SDMA,
            },
            gfx_target,
            regs: Mutex::new(regs),
            suspended: AtomicBool::new(false),
            evicted: AtomicBool::new(false),
            doorbell: AtomicU64::new(0),
            polled: AtomicU64::new(u64::MAX),
            pending: AtomicBool::new(false),
            sleeping: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            hung: AtomicBool::new(false),
            wake: Mutex::new(()),
            cv: Condvar::new(),
            fault: Mutex::new(None),
            pins: Mutex::new(pins),
            exec: Mutex::new(Exec::default()),
            packets: AtomicU64::new(0),
            wave_fault: Mutex::new(None),
        }
    }

    /// The context-save area's size and the user-visible queue type, which only the debugger's
    /// snapshot reports.
    #[must_use]
    pub(crate) fn with_snapshot_facts(mut self, ctx_save_size: u32, user_type: u32) -> Self {
        self.ctx_save_size = ctx_save_size;
        self.user_type = user_type;
        self
    }

    pub(crate) fn regs(&self) -> Regs {
        *lock(&self.regs)
    }

    /// Evicts (`true`) or restores (`false`) the queue: an evicted queue is off the hardware
    /// like a suspended one.
    pub(crate) fn set_evicted(&self, evicted: bool) {
        if evicted {
            let _exec = lock(&self.exec);
            self.evicted.store(true, Ordering::Release);
        } else {
            self.evicted.store(false, Ordering::Release);
            self.kick();
        }
    }

    /// Whether the queue is off the hardware: suspended by a debugger or evicted.
    fn is_off(&self) -> bool {
        self.is_suspended() || self.evicted.load(Ordering::Acquire)
    }

    /// Whether a debugger suspended the queue.
    pub(crate) fn is_suspended(&self) -> bool {
        self.suspended.load(Ordering::Acquire)
    }

    /// Suspends (`true`) or resumes (`false`) the queue. Suspending waits for the packet at
    /// hand to finish, as preemption does; a resumed queue continues at its read index.
    pub(crate) fn set_suspended(&self, suspended: bool) {
        if suspended {
            let _exec = lock(&self.exec);
            self.suspended.store(true, Ordering::Release);
        } else {
            self.suspended.store(false, Ordering::Release);
            self.kick();
        }
    }

    /// Changes the queue's registers (`UPDATE_QUEUE`), running `also` with them (a ring
    /// buffer's pin moves). As amdkfd unmaps the queue from the hardware before it changes the
    /// MQD, the change lands between packets: no processor is inside a run that read the old
    /// registers when this returns.
    pub(crate) fn update(&self, regs: Regs, also: impl FnOnce()) {
        let exec = lock(&self.exec);
        also();
        *lock(&self.regs) = regs;
        drop(exec);
        self.kick();
    }

    /// Whether the queue is active (amdkfd's `QUEUE_IS_ACTIVE`, plus "not in error" and "not
    /// suspended": a suspended queue is taken off the hardware).
    pub(crate) fn is_active(&self) -> bool {
        self.regs().active() && lock(&self.fault).is_none() && !self.is_off()
    }

    pub(crate) fn fault(&self) -> Option<QueueFault> {
        *lock(&self.fault)
    }

    /// A snapshot for tests and tools.
    pub(crate) fn state(&self) -> QueueState {
        let regs = self.regs();
        let fault = self.fault();
        QueueState {
            gpu_id: self.gpu_id,
            ring_address: regs.ring_address,
            ring_size: regs.ring_size,
            percentage: regs.percentage,
            priority: regs.priority,
            active: regs.active() && fault.is_none() && !self.is_off(),
            packets: self.packets(),
            doorbell_index: self.doorbell_index,
            fault,
            hung: self.is_hung(),
            suspended: self.is_suspended(),
        }
    }

    /// Whether the queue is hung by injection.
    pub(crate) fn is_hung(&self) -> bool {
        self.hung.load(Ordering::Acquire)
    }

    /// Hangs (`true`) or releases (`false`) the queue; a released queue resumes at its read
    /// index.
    pub(crate) fn set_hung(&self, hung: bool) {
        self.hung.store(hung, Ordering::Release);
        if !hung {
            self.kick();
        }
    }

    /// Packets consumed so far.
    pub(crate) fn packets(&self) -> u64 {
        self.packets.load(Ordering::Relaxed)
    }

    /// A doorbell write with `value`.
    fn ring(&self, value: u64) {
        match self.kind {
            QueueKind::Aql => {
                self.doorbell.fetch_max(value.wrapping_add(1), Ordering::AcqRel);
            }
            QueueKind::Pm4 | QueueKind::Sdma { .. } => {
                self.doorbell.store(value, Ordering::Release)
            }
        }
        self.kick();
    }

    /// Looks at the queue's doorbell slot in the doorbell page: a value other than at the last
    /// look is a doorbell written with a plain store, rung here. Returns whether it was.
    fn poll_doorbell(&self, doorbells: &Doorbells) -> bool {
        let Some(v) = doorbells.stored(self.doorbell_index) else { return false };
        if self.polled.swap(v, Ordering::AcqRel) == v {
            return false;
        }
        self.ring(v);
        true
    }

    /// Tells the processor to look (doorbell, re-activation, stop).
    fn kick(&self) {
        self.pending.store(true, Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) {
            let _g = lock(&self.wake);
            self.cv.notify_one();
        }
    }

    /// Whether the queue is being stopped (its processor ends after the packet at hand).
    pub(crate) fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// The AQL doorbell limit (one past the last announced index).
    pub(crate) fn aql_limit(&self) -> u64 {
        self.doorbell.load(Ordering::Acquire)
    }

    /// Sleeps until kicked or `timeout`, unless a kick already arrived.
    fn sleep(&self, timeout: Duration) {
        let g = lock(&self.wake);
        self.sleeping.store(true, Ordering::SeqCst);
        if !self.pending.load(Ordering::SeqCst) && !self.stop.load(Ordering::SeqCst) {
            let _ = self.cv.wait_timeout(g, timeout);
        }
        self.sleeping.store(false, Ordering::SeqCst);
    }

    /// Runs the queue for at most `budget` packets.
    pub(crate) fn step(&self, cp: &Cp, budget: usize) -> Step {
        let mut exec = lock(&self.exec);
        if self.stop.load(Ordering::Acquire)
            || self.is_hung()
            || self.is_off()
            || lock(&self.fault).is_some()
        {
            return Step::Idle;
        }
        let regs = self.regs();
        if !regs.active() {
            return Step::Idle;
        }
        let (step, n) = match self.kind {
            QueueKind::Aql => aql::run(self, cp, &regs, &mut exec, budget),
            QueueKind::Pm4 => pm4::run(self, cp, &regs, &mut exec, budget),
            QueueKind::Sdma { .. } => sdma::run(self, cp, &regs, &mut exec, budget),
        };
        self.packets.fetch_add(n, Ordering::Relaxed);
        step
    }

    /// The queue's ring and its read and write pointers in the GPU's address space. When one
    /// of them is not mapped, puts the queue into error (a memory violation at the ring) and
    /// returns `None`.
    pub(crate) fn ring_memory(
        &self,
        cp: &Cp,
        regs: &Regs,
    ) -> Option<(MemRange, MemRange, MemRange)> {
        let vm = &cp.vm;
        if let (Some(ring), Some(read), Some(write)) = (
            vm.resolve(self.gpu_id, regs.ring_address, regs.ring_size),
            vm.resolve(self.gpu_id, self.read_pointer, 8),
            vm.resolve(self.gpu_id, self.write_pointer, 8),
        ) {
            return Some((ring, read, write));
        }
        self.raise_fault(cp, EC_QUEUE_WAVE_MEMORY_VIOLATION, 0, Some(regs.ring_address));
        None
    }

    /// Records the wave fault behind the error the queue is about to raise.
    pub(crate) fn note_wave_fault(&self, f: crate::isa::WaveFault) {
        *lock(&self.wave_fault) = Some(f);
    }

    /// Puts the queue into error: records the fault, writes the exception mask to the error
    /// payload named in its context-save-area header and raises its error event, and for
    /// memory violations the process's memory-fault events.
    pub(crate) fn raise_fault(&self, cp: &Cp, exception: u32, packet: u64, address: Option<u64>) {
        let wave = lock(&self.wave_fault).take();
        let fault = QueueFault {
            queue_id: self.qid,
            gpu_id: self.gpu_id,
            exception,
            packet,
            address,
            wave,
        };
        *lock(&self.fault) = Some(fault);
        if cp.events.debug_exception(&fault) {
            cp.events.queue_error(&fault);
            cp.progress.bump();
            return;
        }
        self.send_to_runtime(cp, KFD_EC_MASK(exception));
        if let (Some(a), true) = (address, exception == EC_QUEUE_WAVE_MEMORY_VIOLATION) {
            let m = wave.and_then(|w| w.memory_fault()).unwrap_or(MemFault::not_present(a, false));
            cp.events.memory_fault(self.gpu_id, MemFault { address: a, ..m });
        }
        cp.events.queue_error(&fault);
        cp.progress.bump();
    }

    /// `kfd_send_exception_to_runtime`: ORs `mask` into the error payload named in the queue's
    /// context-save-area header and sets its error event.
    pub(crate) fn send_to_runtime(&self, cp: &Cp, mask: u64) {
        if self.ctx_save != 0
            && let Some(hdr) = cp.vm.resolve(self.gpu_id, self.ctx_save, 40)
        {
            let payload = hdr.u64s().get(3).map_or(0, |w| w.load(Ordering::Acquire));
            let event = hdr.u32s().get(8).map_or(0, |w| w.load(Ordering::Acquire));
            if payload != 0
                && let Some(p) = cp.vm.resolve(self.gpu_id, payload, 8)
                && let Some(w) = p.u64s().first()
            {
                w.fetch_or(mask, Ordering::AcqRel);
            }
            if event != 0 {
                cp.events.set_event(event);
            }
        }
    }
}

/// A live queue and its processor thread.
pub(crate) struct Live {
    q: Arc<SimQueue>,
    worker: Option<JoinHandle<()>>,
}

impl Live {
    /// The queue.
    pub(crate) fn queue(&self) -> &Arc<SimQueue> {
        &self.q
    }
}

/// The simulated GPUs: facts, doorbell routing, live queues, the shared processor state.
pub(crate) struct GpuModel {
    pub(crate) cp: Arc<Cp>,
    pub(crate) gpus: Vec<GpuFacts>,
    doorbells: BTreeMap<u32, Arc<Doorbells>>,
    pub(crate) pqm: Mutex<pqm::Pqm>,
    queues: Mutex<BTreeMap<u32, Live>>,
}

impl fmt::Debug for GpuModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuModel")
            .field("gpus", &self.gpus.len())
            .field("queues", &lock(&self.queues).len())
            .field("mode", &self.cp.mode)
            .finish_non_exhaustive()
    }
}

impl GpuModel {
    /// Whether `AMDKFD_IOC_WAIT_EVENTS` runs the queues ([`CpMode::OnWait`]).
    pub(crate) fn runs_on_wait(&self) -> bool {
        self.cp.mode == CpMode::OnWait
    }

    pub(crate) fn new(
        gpus: Vec<GpuFacts>,
        vm: Arc<dyn GpuVm>,
        events: Arc<dyn EventHooks>,
        config: CpConfig,
    ) -> Self {
        let doorbells =
            gpus.iter().map(|g| (g.gpu_id, Arc::new(Doorbells::new(g.doorbell_size)))).collect();
        GpuModel {
            cp: Arc::new(Cp {
                vm,
                traps: Mutex::new(BTreeMap::new()),
                isa_counters: isa_queue::IsaCounters::default(),
                events,
                kernels: config.kernels,
                progress: Progress::default(),
                clock: GpuClock::new(),
                mode: config.mode,
                idle_spin: config.idle_spin,
                doorbell_poll: config.doorbell_poll,
                vendor_packets: config.vendor_packets,
            }),
            gpus,
            doorbells,
            pqm: Mutex::new(pqm::Pqm::default()),
            queues: Mutex::new(BTreeMap::new()),
        }
    }

    pub(crate) fn facts(&self, gpu_id: u32) -> Option<&GpuFacts> {
        self.gpus.iter().find(|g| g.gpu_id == gpu_id)
    }

    pub(crate) fn doorbells(&self, gpu_id: u32) -> Option<Arc<Doorbells>> {
        self.doorbells.get(&gpu_id).cloned()
    }

    /// How many GPUs' doorbell pages of the process are watched.
    pub(crate) fn doorbell_pages(&self) -> usize {
        self.doorbells.values().filter(|d| d.has_page()).count()
    }

    /// Starts a queue: routes its doorbell and, in threaded mode, starts its processor.
    pub(crate) fn start(&self, q: Arc<SimQueue>) {
        if let Some(d) = self.doorbells.get(&q.gpu_id) {
            d.set(q.doorbell_index, Some(q.clone()));
        }
        let worker = match self.cp.mode {
            CpMode::Step | CpMode::OnWait => None,
            CpMode::Threaded => {
                let (weak, cp) = (Arc::downgrade(&q), self.cp.clone());
                let doorbells = self.doorbells.get(&q.gpu_id).cloned();
                std::thread::Builder::new()
                    .name(format!("sim-cp-q{}", q.qid))
                    .spawn(move || worker(weak, cp, doorbells))
                    .ok()
            }
        };
        lock(&self.queues).insert(q.qid, Live { q, worker });
    }

    /// Stops a queue: its processor finishes the packet at hand and exits; the doorbell goes
    /// nowhere.
    pub(crate) fn stop(&self, qid: u32) -> Option<Arc<SimQueue>> {
        self.detach(qid).map(|live| self.halt(live))
    }

    /// Takes queue `qid` out of the live set and unroutes its doorbell, so its id and doorbell
    /// index may be reused at once; [`GpuModel::halt`] then stops its processor.
    pub(crate) fn detach(&self, qid: u32) -> Option<Live> {
        let live = lock(&self.queues).remove(&qid)?;
        if let Some(d) = self.doorbells.get(&live.q.gpu_id) {
            d.set(live.q.doorbell_index, None);
        }
        Some(live)
    }

    /// Forgets every queue of a process this one was forked from: their processor threads do
    /// not exist here (a fork copies only the calling thread), so nothing is stopped or joined;
    /// their doorbells go nowhere.
    pub(crate) fn forget_inherited(&self) {
        let lives = std::mem::take(&mut *lock(&self.queues));
        for (_, live) in lives {
            if let Some(d) = self.doorbells.get(&live.q.gpu_id) {
                d.set(live.q.doorbell_index, None);
            }
            // The pins name buffers of the forgotten process; the handle names a thread that
            // is not in this process.
            std::mem::forget(std::mem::take(&mut *lock(&live.q.pins)));
            std::mem::forget(live.worker);
        }
        *lock(&self.pqm) = pqm::Pqm::default();
        self.cp.vm.set_live_queues(0);
    }

    /// Stops a detached queue's processor (it finishes the packet at hand and exits).
    pub(crate) fn halt(&self, live: Live) -> Arc<SimQueue> {
        live.q.stop.store(true, Ordering::SeqCst);
        live.q.kick();
        if let Some(w) = live.worker
            && w.thread().id() != std::thread::current().id()
        {
            let _ = w.join();
        }
        live.q
    }

    /// The live queue `qid`.
    pub(crate) fn queue(&self, qid: u32) -> Option<Arc<SimQueue>> {
        lock(&self.queues).get(&qid).map(|l| l.q.clone())
    }

    /// Ids of the live queues.
    pub(crate) fn queue_ids(&self) -> Vec<u32> {
        lock(&self.queues).keys().copied().collect()
    }

    /// Hangs queue `qid` (see the module docs); `false` when there is no such queue.
    pub(crate) fn hang_queue(&self, qid: u32) -> bool {
        self.queue(qid).map(|q| q.set_hung(true)).is_some()
    }

    /// Releases a hung queue `qid`; `false` when there is no such queue.
    pub(crate) fn release_queue(&self, qid: u32) -> bool {
        self.queue(qid).map(|q| q.set_hung(false)).is_some()
    }

    /// Puts queue `qid` into error with `exception` (as a wave hitting it would), at the
    /// packet under its read pointer; `false` when there is no such queue or it already
    /// stopped with an error.
    pub(crate) fn fault_queue(&self, qid: u32, exception: u32, address: Option<u64>) -> bool {
        let Some(q) = self.queue(qid) else { return false };
        // Serialise with the processor: the fault lands between packets.
        let _exec = lock(&q.exec);
        if q.fault().is_some() {
            return false;
        }
        let packet = self
            .cp
            .vm
            .resolve(q.gpu_id, q.read_pointer, 8)
            .map_or(0, |r| r.u64s().first().map_or(0, |w| w.load(Ordering::Acquire)));
        q.raise_fault(&self.cp, exception, packet, address);
        true
    }

    /// `kfd_send_exception_to_runtime` for queue `qid` (nothing when there is no such queue).
    pub(crate) fn send_exception_to_runtime(&self, qid: u32, mask: u64) {
        if let Some(q) = self.queue(qid) {
            q.send_to_runtime(&self.cp, mask);
        }
    }

    /// Wave instructions, lane instructions and waves the ISA interpreter ran so far.
    pub(crate) fn isa_counters(&self) -> IsaCount {
        self.cp.isa_counters.get()
    }

    /// Runs every queue until none makes progress; returns the packets consumed. Each round
    /// first looks at every queue's doorbell slot (plain doorbell stores). A kernel on the
    /// interpreter runs until it ends or blocks, or until the dispatches of this call ran
    /// [`IDLE_RUN_INSTRUCTIONS`] instructions (a kernel that never ends).
    pub(crate) fn run_until_idle(&self) -> u64 {
        let (began, allocations) = (Instant::now(), hsakmt_hostmem::thread_allocations());
        let total = self.run_queues_until_idle();
        let ns = u64::try_from(began.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let made = hsakmt_hostmem::thread_allocations().wrapping_sub(allocations);
        let _ = ENGINE_NS.try_with(|c| c.set(c.get().saturating_add(ns)));
        let _ = ENGINE_ALLOCATIONS.try_with(|c| c.set(c.get().wrapping_add(made)));
        total
    }

    fn run_queues_until_idle(&self) -> u64 {
        let mut total = 0;
        let start = self.cp.isa_counters.get().instructions;
        let within = || self.cp.isa_counters.get().instructions - start < IDLE_RUN_INSTRUCTIONS;
        loop {
            let mut moved = false;
            // One queue at a time in id order, without a list of them (nothing allocated).
            let mut after = 0;
            loop {
                // (The lock is released before the queue runs.)
                let next = lock(&self.queues).range(after..).next().map(|(i, l)| (*i, l.q.clone()));
                let Some((qid, q)) = next else { break };
                after = qid.saturating_add(1);
                if let Some(d) = self.doorbells.get(&q.gpu_id) {
                    q.poll_doorbell(d);
                }
                let before = q.packets();
                loop {
                    match q.step(&self.cp, 4096) {
                        Step::Progress => {}
                        Step::Running if within() => {}
                        _ => break,
                    }
                }
                let n = q.packets() - before;
                total += n;
                moved |= n > 0;
                if qid == u32::MAX {
                    break;
                }
            }
            if !moved {
                return total;
            }
        }
    }
}

#[cfg(test)]
mod tests;
