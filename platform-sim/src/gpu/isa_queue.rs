//! The command processor's side of the ISA interpreter: each queue's interpreter state (its
//! decoded-code cache, GWS resources, the PM4 shader registers and the dispatch in flight),
//! kernel dispatches started from AQL packets and from PM4 `DISPATCH_DIRECT`, and the mapping
//! of wave faults onto the queue errors amdkfd raises.
//!
//! A dispatch runs for a bounded number of instructions per command-processor step
//! ([`STEP_INSTRUCTIONS`]) and continues at the next step, so a kernel polling memory the host
//! writes later never holds the processor. Interrupts waves raise (`s_sendmsg
//! MSG_INTERRUPT`) are delivered as the event interrupts amdkfd makes of them.

use hsakmt_core::uapi::{
    EC_QUEUE_PACKET_DISPATCH_CODE_INVALID, EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID,
    EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION, EC_QUEUE_WAVE_MEMORY_VIOLATION, EC_QUEUE_WAVE_TRAP,
};

use std::sync::atomic::{AtomicU64, Ordering};

use super::watch::WatchedMemory;
use super::{Cp, SimQueue};
use crate::isa::launch::{AqlDispatch, LaunchError, ShRegs, aql_launch};
use crate::isa::limits::{STALLED_STEP_INSTRUCTIONS, STEP_INSTRUCTIONS};
use crate::isa::vm_memory::VmMemory;
use crate::isa::{
    Apertures, CodeCache, Device, Dispatch, FaultKind, Launch, RunState, Stats, Target, WaveFault,
};
use crate::kfd::{LDS_BASE, SCRATCH_BASE};

/// What the ISA interpreter ran, summed over queues and dispatches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IsaCount {
    /// Wave instructions executed.
    pub instructions: u64,
    /// Lane instructions: the active lanes (EXEC bits) of every executed instruction.
    pub lane_instructions: u64,
    /// Waves that ended.
    pub waves: u64,
}

/// Counters the command processors add to.
#[derive(Debug, Default)]
pub(crate) struct IsaCounters {
    instructions: AtomicU64,
    lane_instructions: AtomicU64,
    waves: AtomicU64,
}

impl IsaCounters {
    fn add(&self, d: Stats) {
        self.instructions.fetch_add(d.instructions, Ordering::Relaxed);
        self.lane_instructions.fetch_add(d.lane_instructions, Ordering::Relaxed);
        self.waves.fetch_add(d.waves, Ordering::Relaxed);
    }

    /// The sums so far.
    pub(crate) fn get(&self) -> IsaCount {
        IsaCount {
            instructions: self.instructions.load(Ordering::Relaxed),
            lane_instructions: self.lane_instructions.load(Ordering::Relaxed),
            waves: self.waves.load(Ordering::Relaxed),
        }
    }
}

/// How a dispatch step ended.
#[derive(Debug)]
pub(crate) enum IsaStep {
    /// Every wave ended.
    Done,
    /// Work left; call again (progress was made).
    Running,
    /// Work left but nothing observable happened (waves polling, waiting on GWS).
    Stalled,
    /// The queue goes into error with this exception (and address).
    Fault(u32, Option<u64>),
}

/// Apertures of the simulated kernel's process address space.
const APERTURES: Apertures = Apertures { shared: LDS_BASE, private: SCRATCH_BASE };

/// One queue's interpreter state.
#[derive(Debug, Default)]
pub(crate) struct QueueIsa {
    code: Option<CodeCache>,
    dev: Device,
    /// The key (packet address) of the dispatch in flight, if any.
    running: Option<u64>,
    /// The dispatch storage, reused by every dispatch of the queue (work-groups, waves and
    /// their register files, LDS): the steady state allocates nothing.
    dispatch: Option<Dispatch>,
    /// The PM4 compute shader registers.
    pub(crate) sh: ShRegs,
    stalled: bool,
}

/// The exception (and address) of a wave fault.
fn exception(f: &WaveFault) -> (u32, Option<u64>) {
    match f.kind {
        FaultKind::Memory(m) => (EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(m.address)),
        FaultKind::Trap { .. } => (EC_QUEUE_WAVE_TRAP, None),
        FaultKind::Launch(_) => (EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID, None),
        _ => (EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION, None),
    }
}

impl QueueIsa {
    /// The ISA of queue `q`'s GPU, if the interpreter runs it.
    pub(crate) fn target(q: &SimQueue) -> Option<Target> {
        Target::from_gfx_target_version(q.gfx_target)
    }

    /// Drops the dispatch in flight (the queue stopped).
    pub(crate) fn abandon(&mut self) {
        self.running = None;
        self.stalled = false;
    }

    /// Runs the dispatch at `key` (a packet's address), launching it with `launch` first.
    fn step(
        &mut self,
        q: &SimQueue,
        cp: &Cp,
        key: u64,
        launch: impl FnOnce(&mut VmMemory<'_>, Target) -> Result<Launch, LaunchError>,
    ) -> IsaStep {
        let Some(target) = Self::target(q) else {
            return IsaStep::Fault(EC_QUEUE_PACKET_DISPATCH_CODE_INVALID, None);
        };
        let mut mem = VmMemory::new(cp.vm.as_ref(), q.gpu_id);
        if self.running != Some(key) {
            self.running = None;
            let l = match launch(&mut mem, target) {
                Ok(l) => l,
                Err(e) => {
                    let ec = match e {
                        LaunchError::Code(_) => EC_QUEUE_PACKET_DISPATCH_CODE_INVALID,
                        LaunchError::Registers(_) => EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID,
                    };
                    return IsaStep::Fault(ec, None);
                }
            };
            let started = match &mut self.dispatch {
                Some(d) => d.restart(l),
                None => Dispatch::new(l).map(|d| {
                    self.dispatch = Some(d);
                }),
            };
            match started {
                Ok(()) => self.running = Some(key),
                Err(f) => {
                    q.note_wave_fault(f);
                    let (ec, a) = exception(&f);
                    return IsaStep::Fault(ec, a);
                }
            }
            if self.code.as_ref().is_none_or(|c| c.target() != target) {
                self.code = Some(CodeCache::new(target));
            }
            if let Some(c) = &mut self.code {
                c.begin();
            }
            self.stalled = false;
        }
        self.dev.trap_handler = cp.trap_handler(q.gpu_id);
        self.dev.doorbell = q.doorbell_index;
        let budget = if self.stalled { STALLED_STEP_INSTRUCTIONS } else { STEP_INSTRUCTIONS };
        let (Some(_), Some(d), Some(code)) = (self.running, &mut self.dispatch, &mut self.code)
        else {
            return IsaStep::Done;
        };
        let before = d.stats;
        // Address watches a debugger armed: every access of this step is compared. (Always
        // through `WatchedMemory`, empty or not: one instance of the interpreter's loop, not
        // two, in the binaries that embed the simulator.)
        let watches = cp.events.address_watches(q.gpu_id);
        let mut watched = WatchedMemory::new(&mut mem, &watches);
        let r = d.run(&mut watched, &mut self.dev, code, budget);
        if let Some(id) = watched.hit() {
            cp.events.address_watch_hit(q.gpu_id, q.qid, id);
        }
        cp.isa_counters.add(Stats {
            instructions: d.stats.instructions - before.instructions,
            lane_instructions: d.stats.lane_instructions - before.lane_instructions,
            waves: d.stats.waves - before.waves,
            groups: d.stats.groups - before.groups,
        });
        for p in self.dev.interrupts.drain(..) {
            cp.events.signal_event(p);
        }
        match r {
            Ok(RunState::Done) => {
                self.running = None;
                cp.progress.bump();
                IsaStep::Done
            }
            Ok(RunState::Running) => {
                self.stalled = false;
                cp.progress.bump();
                IsaStep::Running
            }
            Ok(RunState::Stalled) => {
                self.stalled = true;
                IsaStep::Stalled
            }
            Err(f) => {
                self.running = None;
                q.note_wave_fault(f);
                let (ec, a) = exception(&f);
                IsaStep::Fault(ec, a)
            }
        }
    }

    /// Runs (or starts) the AQL dispatch `d`.
    pub(crate) fn aql(&mut self, q: &SimQueue, cp: &Cp, d: &AqlDispatch) -> IsaStep {
        self.step(q, cp, d.packet_address, |mem, t| aql_launch(mem, t, d, APERTURES))
    }

    /// Runs (or starts) the PM4 `DISPATCH_DIRECT` at `key` from the shader registers.
    pub(crate) fn dispatch_direct(
        &mut self,
        q: &SimQueue,
        cp: &Cp,
        key: u64,
        dims: [u32; 3],
        initiator: u32,
    ) -> IsaStep {
        // The registers are read when the dispatch starts (a later SET_SH_REG does not change
        // a dispatch in flight).
        let started = self.running == Some(key);
        let launch = match Self::target(q) {
            Some(t) if !started => Some(self.sh.launch(t, dims, initiator, APERTURES)),
            _ => None,
        };
        self.step(q, cp, key, |_, _| launch.unwrap_or(Err(LaunchError::Registers("no launch"))))
    }
}
