//! A kernel dispatch on the interpreter: work-groups launched in order (x fastest), a bounded
//! number resident at once and scheduled round-robin, each wave running a slice of
//! instructions at a time; `s_barrier` across a work-group's waves; the initial wave state
//! from the launch parameters; resumable ([`Dispatch::run`] stops after a budget and continues
//! where it stopped).
//!
//! Initial wave state (AMDGPUUsage, "Initial Kernel Execution State"): the user SGPRs
//! (`COMPUTE_PGM_RSRC2.USER_SGPR` of them) from `s0`, then the system SGPRs the RSRC2 enables
//! ask for, in order: work-group id x, y, z, work-group info, and the private segment wave
//! byte offset (with `SCRATCH_EN`, except with gfx942's architected flat scratch, where
//! FLAT_SCRATCH already points at the wave's scratch). Work-item ids: `v0`, `v1`, `v2` on
//! gfx900; packed into `v0` (10 bits each, x low) on gfx90a/gfx942. EXEC holds the wave's
//! work-items; MODE takes `COMPUTE_PGM_RSRC1`'s float mode, DX10 clamp and IEEE bits.

use super::Target;
use super::descriptor::{register_counts, rsrc2};
use super::exec::{Cx, Device, execute};
use super::fault::{FaultKind, WaveFault};
use super::icache::CodeCache;
use super::inst::{EXEC_LO, FLAT_SCRATCH_LO};
use super::limits::{LANES, MAX_RESIDENT_GROUPS, MAX_WORKGROUP_ITEMS, WAVE_SLICE};
use super::memory::WaveMemory;
use super::wave::{Apertures, Wave, WaveState};

/// Where a dispatch's private (scratch) memory lives: `waves` slots of `wave_bytes` from
/// `base`, one per resident wave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScratchBacking {
    /// GPU virtual address of the first slot.
    pub base: u64,
    /// Bytes per wave.
    pub wave_bytes: u64,
    /// Slots: at most this many waves hold scratch at once.
    pub waves: u32,
}

/// Everything a dispatch starts from (what the command processor assembles from an AQL
/// packet and its kernel descriptor, or from PM4 shader registers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The ISA.
    pub target: Target,
    /// Address of the first instruction.
    pub entry: u64,
    /// `COMPUTE_PGM_RSRC1`.
    pub rsrc1: u32,
    /// `COMPUTE_PGM_RSRC2`.
    pub rsrc2: u32,
    /// `COMPUTE_PGM_RSRC3`.
    pub rsrc3: u32,
    /// User SGPR values (`COMPUTE_USER_DATA_*`, or what the packet processor fills in);
    /// `RSRC2.USER_SGPR` of them are loaded.
    pub user_sgprs: [u32; 32],
    /// Work-items in the grid.
    pub grid: [u32; 3],
    /// Work-items per work-group.
    pub workgroup: [u32; 3],
    /// LDS bytes per work-group.
    pub lds_bytes: u32,
    /// Scratch backing, if the kernel has private memory.
    pub scratch: Option<ScratchBacking>,
    /// Aperture bases.
    pub apertures: Apertures,
}

/// How far a dispatch got in one call of [`Dispatch::run`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// Every wave ended.
    Done,
    /// The budget ran out with work left; memory writes or other observable effects happened.
    Running,
    /// No observable progress: the waves are spinning (polling memory), waiting on a GWS
    /// semaphore or halted.
    Stalled,
}

/// Counters of a dispatch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Wave instructions executed.
    pub instructions: u64,
    /// Lane instructions: the active lanes (EXEC bits) of every executed instruction.
    pub lane_instructions: u64,
    /// Waves that ended.
    pub waves: u64,
    /// Work-groups that ended.
    pub groups: u64,
}

#[derive(Default)]
struct Group {
    waves: Vec<Wave>,
    lds: Vec<u8>,
    slots: Vec<u32>,
}

/// A dispatch in progress.
pub struct Dispatch {
    launch: Launch,
    groups: [u32; 3],
    total: u64,
    next: u64,
    resident: Vec<Group>,
    free_slots: Vec<u32>,
    /// Retired work-groups, reused (waves, LDS and all) by the next ones.
    spare: Vec<Group>,
    vgprs: usize,
    agprs: usize,
    /// Counters so far.
    pub stats: Stats,
}

impl std::fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatch")
            .field("entry", &format_args!("{:#x}", self.launch.entry))
            .field("groups", &self.groups)
            .field("next", &self.next)
            .field("resident", &self.resident.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

fn launch_error(reason: &'static str) -> WaveFault {
    WaveFault { pc: 0, kind: FaultKind::Launch(reason) }
}

impl Dispatch {
    /// A dispatch of `launch`.
    ///
    /// # Errors
    /// A launch fault when the geometry is empty or too large, or the scratch backing holds
    /// fewer waves than one work-group has.
    pub fn new(launch: Launch) -> Result<Self, WaveFault> {
        let mut d = Dispatch {
            launch,
            groups: [0; 3],
            total: 0,
            next: 0,
            resident: Vec::new(),
            free_slots: Vec::new(),
            spare: Vec::new(),
            vgprs: 0,
            agprs: 0,
            stats: Stats::default(),
        };
        d.setup()?;
        Ok(d)
    }

    /// Starts `launch` over in this dispatch's storage: the work-groups, waves, register files
    /// and LDS of the dispatches before are reused, so a queue that keeps one `Dispatch`
    /// allocates nothing per dispatch once its storage has grown to the largest launch. A
    /// dispatch still in flight is dropped.
    ///
    /// # Errors
    /// As [`Dispatch::new`]; the dispatch is then empty ([`Dispatch::is_done`]).
    pub fn restart(&mut self, launch: Launch) -> Result<(), WaveFault> {
        self.launch = launch;
        self.spare.append(&mut self.resident);
        self.stats = Stats::default();
        self.setup()
    }

    /// Lays out the geometry and scratch slots of `self.launch`.
    fn setup(&mut self) -> Result<(), WaveFault> {
        let launch = &self.launch;
        self.free_slots.clear();
        self.next = 0;
        self.total = 0;
        let wg = launch.workgroup;
        let items: u64 = wg.iter().map(|v| u64::from(*v)).product();
        if items == 0 || items > u64::from(MAX_WORKGROUP_ITEMS) {
            return Err(launch_error("work-group size out of range"));
        }
        if launch.grid.contains(&0) {
            return Err(launch_error("empty grid"));
        }
        let groups = [0, 1, 2].map(|d| launch.grid[d].div_ceil(wg[d]));
        let waves_per_group = items.div_ceil(LANES as u64) as u32;
        if let Some(s) = launch.scratch
            && launch.rsrc2 & rsrc2::SCRATCH_EN != 0
        {
            if s.waves < waves_per_group {
                return Err(launch_error("scratch backing holds fewer waves than a work-group"));
            }
            self.free_slots.extend((0..s.waves).rev());
        }
        (self.vgprs, self.agprs) = register_counts(launch.target, launch.rsrc1, launch.rsrc3);
        self.groups = groups;
        self.total = groups.iter().map(|g| u64::from(*g)).product();
        Ok(())
    }

    /// The launch parameters.
    #[must_use]
    pub fn launch(&self) -> &Launch {
        &self.launch
    }

    /// Whether every work-group has ended.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.next == self.total && self.resident.is_empty()
    }

    fn uses_scratch(&self) -> bool {
        self.launch.rsrc2 & rsrc2::SCRATCH_EN != 0 && self.launch.scratch.is_some()
    }

    /// Starts work-group `n` if resources allow.
    fn start_group(&mut self, n: u64, dev: &Device) -> bool {
        let l = &self.launch;
        let gx = u64::from(self.groups[0]);
        let gy = u64::from(self.groups[1]);
        let id = [(n % gx) as u32, (n / gx % gy) as u32, (n / (gx * gy)) as u32];
        let size = [0, 1, 2].map(|d| l.workgroup[d].min(l.grid[d] - id[d] * l.workgroup[d]));
        let items = size[0] * size[1] * size[2];
        let waves = items.div_ceil(LANES as u32);
        let mut group = self.spare.pop().unwrap_or_default();
        group.slots.clear();
        if self.uses_scratch() {
            if (self.free_slots.len() as u32) < waves {
                self.spare.push(group);
                return false;
            }
            for _ in 0..waves {
                group.slots.extend(self.free_slots.pop());
            }
        }
        let r2 = l.rsrc2;
        let user = ((r2 >> rsrc2::USER_SGPR_SHIFT) & 0x1F) as usize;
        let tidig = (r2 >> rsrc2::TIDIG_SHIFT) & 3;
        let architected = l.target == Target::Gfx942;
        let mode = (l.rsrc1 >> 12 & 0xFF) | (l.rsrc1 >> 21 & 1) << 8 | (l.rsrc1 >> 23 & 1) << 9;
        group.lds.clear();
        group.lds.resize(l.lds_bytes as usize, 0);
        group.waves.truncate(waves as usize);
        while group.waves.len() < waves as usize {
            group.waves.push(Wave::new(0, 0, l.apertures));
        }
        let slots = std::mem::take(&mut group.slots);
        for (wv, w) in (0..waves).zip(group.waves.iter_mut()) {
            w.reset(self.vgprs, self.agprs, l.apertures);
            w.s[..user].copy_from_slice(&l.user_sgprs[..user]);
            let mut k = user;
            let mut push = |w: &mut Wave, v: u32| {
                if k < 102 {
                    w.s[k] = v;
                }
                k += 1;
            };
            for (d, bit) in
                [rsrc2::TGID_X_EN, rsrc2::TGID_Y_EN, rsrc2::TGID_Z_EN].into_iter().enumerate()
            {
                if r2 & bit != 0 {
                    push(w, id[d]);
                }
            }
            if r2 & rsrc2::TG_SIZE_EN != 0 {
                push(w, waves & 0x3F | u32::from(wv == 0) << 31);
            }
            let scratch = self.launch.scratch.filter(|_| self.uses_scratch());
            let slot_offset = |s: ScratchBacking| {
                u64::from(slots.get(wv as usize).copied().unwrap_or(0)) * s.wave_bytes
            };
            if r2 & rsrc2::SCRATCH_EN != 0 && !architected {
                push(w, scratch.map_or(0, |s| slot_offset(s) as u32));
            }
            if architected && let Some(s) = scratch {
                w.set_s64(FLAT_SCRATCH_LO, s.base.wrapping_add(slot_offset(s)));
            }
            // Work-items of this wave: linear ids wv*64.. in x-fastest order.
            let first = wv * LANES as u32;
            let lanes = (items - first).min(LANES as u32);
            let exec = if lanes == 64 { u64::MAX } else { (1u64 << lanes) - 1 };
            w.set_s64(EXEC_LO, exec);
            let (mut x, mut y, mut z) =
                (first % size[0], first / size[0] % size[1], first / (size[0] * size[1]));
            for lane in 0..lanes as usize {
                if lane > 0 {
                    x += 1;
                    if x == size[0] {
                        x = 0;
                        y += 1;
                        if y == size[1] {
                            y = 0;
                            z += 1;
                        }
                    }
                }
                let (y, z) = (if tidig >= 1 { y } else { 0 }, if tidig >= 2 { z } else { 0 });
                if l.target == Target::Gfx900 {
                    for (r, v) in [x, y, z].into_iter().enumerate().take(tidig as usize + 1) {
                        if let Some(reg) = w.v.get_mut(r) {
                            reg[lane] = v;
                        }
                    }
                } else if let Some(reg) = w.v.get_mut(0) {
                    reg[lane] = x | y << 10 | z << 20;
                }
            }
            w.pc = l.entry;
            w.hw.mode = mode;
            w.hw.trap_en = dev.trap_handler.is_some_and(|(tba, _)| tba != 0);
            w.hw.hw_id = wv & 0xF | ((self.resident.len() as u32) & 0xF) << 8;
            w.hw.gpr_alloc = (self.vgprs as u32 / 4).saturating_sub(1) & 0x3F;
            w.hw.lds_alloc = l.lds_bytes.div_ceil(512) << 12;
        }
        group.slots = slots;
        self.resident.push(group);
        true
    }

    fn retire(&mut self, k: usize) {
        let mut g = self.resident.swap_remove(k);
        self.free_slots.append(&mut g.slots);
        self.stats.groups += 1;
        self.stats.waves += g.waves.len() as u64;
        self.spare.push(g);
    }

    /// Runs waves for about `budget` instructions (whole slices; at least one).
    ///
    /// # Errors
    /// The first wave fault; the dispatch is then over (a queue error).
    pub fn run<M: WaveMemory>(
        &mut self,
        mem: &mut M,
        dev: &mut Device,
        code: &mut CodeCache,
        budget: u64,
    ) -> Result<RunState, WaveFault> {
        let target = self.launch.target;
        let start_effects = dev.effects;
        let start = self.stats.instructions;
        loop {
            while self.resident.len() < MAX_RESIDENT_GROUPS && self.next < self.total {
                if !self.start_group(self.next, dev) {
                    break;
                }
                self.next += 1;
            }
            if self.resident.is_empty() {
                return Ok(RunState::Done);
            }
            let mut ran = false;
            let mut k = 0;
            while k < self.resident.len() {
                let g = &mut self.resident[k];
                for w in &mut g.waves {
                    match w.state {
                        WaveState::Gws(id) if dev.gws.get(id as usize).is_some_and(|v| *v > 0) => {
                            w.state = WaveState::Running;
                        }
                        WaveState::GwsBarrier { id, round }
                            if dev.gws_rounds.get(id as usize).is_some_and(|r| *r != round) =>
                        {
                            w.state = WaveState::Running;
                        }
                        _ => {}
                    }
                    if w.state != WaveState::Running {
                        continue;
                    }
                    ran = true;
                    let mut cx = Cx { target, mem: &mut *mem, lds: &mut g.lds, dev: &mut *dev };
                    let mut n = 0;
                    while n < WAVE_SLICE {
                        let pc = w.pc;
                        let i = code.fetch(pc, cx.mem)?;
                        self.stats.lane_instructions += u64::from(w.exec().count_ones());
                        w.pc = pc.wrapping_add(u64::from(i.len));
                        execute(w, i, &mut cx).map_err(|f| f.at(pc))?;
                        n += 1;
                        if w.state != WaveState::Running {
                            break;
                        }
                    }
                    w.executed += n;
                    self.stats.instructions += n;
                }
                // A barrier opens when every wave that has not ended reached it.
                let live = g.waves.iter().filter(|w| w.state != WaveState::Done);
                let (mut waiting, mut all) = (false, true);
                for w in live {
                    waiting |= w.state == WaveState::Barrier;
                    all &= w.state == WaveState::Barrier;
                }
                if waiting && all {
                    for w in &mut g.waves {
                        if w.state == WaveState::Barrier {
                            w.state = WaveState::Running;
                        }
                    }
                    dev.effects += 1;
                }
                if g.waves.iter().all(|w| w.state == WaveState::Done) {
                    self.retire(k);
                    dev.effects += 1;
                } else {
                    k += 1;
                }
            }
            if self.resident.is_empty() && self.next == self.total {
                return Ok(RunState::Done);
            }
            let progressed = dev.effects != start_effects;
            if !ran {
                return Ok(if progressed { RunState::Running } else { RunState::Stalled });
            }
            if self.stats.instructions - start >= budget {
                return Ok(if progressed { RunState::Running } else { RunState::Stalled });
            }
        }
    }
}
