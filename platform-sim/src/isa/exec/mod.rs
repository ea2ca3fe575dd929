//! Executing one decoded instruction on one wave: the per-encoding executors (scalar ALU,
//! program control, scalar memory, vector ALU, vector memory, LDS) and the context they run
//! in ([`Cx`]: memory, the work-group's LDS, the device state waves share).

mod ds;
mod hwreg;
mod salu;
mod sdwa;
mod smem;
mod sopp;
mod vcmp;
mod vfloat;
mod vint;
mod vmem;
mod vmisc;

use super::Target;
use super::fault::WaveFault;
use super::inst::{Enc, Inst, flag};
use super::limits::{GWS_RESOURCES, MAX_PENDING_INTERRUPTS};
use super::memory::WaveMemory;
use super::wave::Wave;

/// Device state the waves of a queue share across dispatches: the trap handler, the queue's
/// doorbell, GWS resources, and the interrupts waves raised for the command processor.
#[derive(Debug, Clone)]
pub struct Device {
    /// The trap handler `(tba, tma)` (`AMDKFD_IOC_SET_TRAP_HANDLER`), if any.
    pub trap_handler: Option<(u64, u64)>,
    /// The queue's doorbell index (what `s_sendmsg MSG_GET_DOORBELL` returns).
    pub doorbell: u32,
    /// GWS resource values (`ds_gws_init` sets, `ds_gws_sema_v`/`_p` count up and down).
    pub gws: [u32; GWS_RESOURCES],
    /// Waves waiting at each GWS barrier (`ds_gws_barrier`) of the current round.
    pub gws_arrived: [u32; GWS_RESOURCES],
    /// Rounds each GWS barrier has completed: a waiting wave goes on once it changes.
    pub gws_rounds: [u32; GWS_RESOURCES],
    /// Interrupt payloads raised by `s_sendmsg MSG_INTERRUPT` (the low 24 bits of M0), for
    /// the command processor to deliver.
    pub interrupts: Vec<u32>,
    /// Memory writes, atomics and messages so far: progress the host can observe.
    pub effects: u64,
}

impl Default for Device {
    fn default() -> Self {
        Device {
            trap_handler: None,
            doorbell: 0,
            gws: [0; GWS_RESOURCES],
            gws_arrived: [0; GWS_RESOURCES],
            gws_rounds: [0; GWS_RESOURCES],
            interrupts: Vec::new(),
            effects: 0,
        }
    }
}

impl Device {
    /// Queues an interrupt (dropped when [`MAX_PENDING_INTERRUPTS`] are pending).
    pub(crate) fn interrupt(&mut self, payload: u32) {
        if self.interrupts.len() < MAX_PENDING_INTERRUPTS {
            self.interrupts.push(payload);
        }
        self.effects += 1;
    }
}

/// What one instruction runs with.
pub struct Cx<'a, M: WaveMemory> {
    /// The target.
    pub target: Target,
    /// GPU memory.
    pub mem: &'a mut M,
    /// The work-group's LDS.
    pub lds: &'a mut [u8],
    /// Shared device state.
    pub dev: &'a mut Device,
}

/// Executes `i` on `w` (whose `pc` already points past `i`).
///
/// # Errors
/// A [`WaveFault`] (without its pc) when the instruction cannot complete.
pub fn execute<M: WaveMemory>(w: &mut Wave, i: &Inst, cx: &mut Cx<'_, M>) -> Result<(), WaveFault> {
    match i.enc {
        Enc::Sop2 => salu::sop2(w, i),
        Enc::Sop1 => salu::sop1(w, i, cx),
        Enc::Sopc => salu::sopc(w, i),
        Enc::Sopk => salu::sopk(w, i, cx),
        Enc::Sopp => sopp::sopp(w, i, cx),
        Enc::Smem => smem::smem(w, i, cx),
        Enc::Vop1 | Enc::Vop2 | Enc::Vopc if i.has(flag::SDWA) => sdwa::sdwa(w, i),
        Enc::Vop1 | Enc::Vop2 | Enc::Vop3 | Enc::Vop3p => vector(w, i),
        Enc::Vopc => vcmp::vopc(w, i),
        Enc::Ds => ds::ds(w, i, cx),
        Enc::Mubuf | Enc::Flat | Enc::Global | Enc::Scratch => vmem::vmem(w, i, cx),
        Enc::Mtbuf | Enc::Mimg | Enc::Exp | Enc::Vintrp => Err(WaveFault::unsupported(i)),
    }
}

/// The vector ALU: integer, float, then the rest (moves, lane access, packed, conversions);
/// VOP3 compares go to the compare unit.
fn vector(w: &mut Wave, i: &Inst) -> Result<(), WaveFault> {
    if i.enc == Enc::Vop3 && (i.word >> 16) & 0x3FF < 256 {
        return vcmp::vopc(w, i);
    }
    if let Some(r) = vint::vint(w, i) {
        return r;
    }
    if let Some(r) = vfloat::vfloat(w, i) {
        return r;
    }
    vmisc::vmisc(w, i)
}
