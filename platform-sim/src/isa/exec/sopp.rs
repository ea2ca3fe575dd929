//! Program control (SOPP): branches, `s_endpgm`, `s_barrier`, `s_waitcnt`, `s_sendmsg`,
//! `s_trap` and the trap-handler entry.
//!
//! Memory is synchronous in the model, so `s_waitcnt` has nothing to wait for. A branch's
//! target is the next instruction's address plus `simm16 * 4`.
//!
//! `s_trap n` with a trap handler installed enters it as the hardware does: `ttmp1:ttmp0` =
//! `{trap id [23:16] of ttmp1, PC of the s_trap [47:0]}`, the wave becomes privileged and
//! jumps to the handler (TBA); `ttmp12` holds the STATUS to restore and `ttmp15:ttmp14` the
//! TMA. `s_rfe_b64` returns. Without a handler the wave stops with a trap fault (amdkfd's
//! handler turns a user trap into the queue error `EC_QUEUE_WAVE_TRAP`).

use super::super::Op;
use super::super::fault::WaveFault;
use super::super::inst::{EXEC_LO, Inst, M0, TTMP0};
use super::super::memory::WaveMemory;
use super::super::wave::{Wave, WaveState};
use super::{Cx, hwreg};

/// `s_sendmsg` message ids of gfx9.
const MSG_INTERRUPT: u32 = 1;
const MSG_SAVEWAVE: u32 = 4;
const MSG_STALL_WAVE_GEN: u32 = 5;
const MSG_HALT_WAVES: u32 = 6;
const MSG_GET_DOORBELL: u32 = 10;
const MSG_SYSMSG: u32 = 15;

fn branch(w: &mut Wave, i: &Inst, taken: bool) {
    if taken {
        w.pc = w.pc.wrapping_add_signed(i64::from(i.imm) * 4);
    }
}

fn sendmsg<M: WaveMemory>(w: &mut Wave, i: &Inst, cx: &mut Cx<'_, M>) -> Result<(), WaveFault> {
    match i.imm as u32 & 0xF {
        MSG_INTERRUPT => cx.dev.interrupt(w.s[usize::from(M0)] & 0x00FF_FFFF),
        MSG_GET_DOORBELL => {
            // The doorbell id arrives in EXEC_LO, bit 31 clear.
            w.s[usize::from(EXEC_LO)] = cx.dev.doorbell & 0x3FF;
            cx.dev.effects += 1;
        }
        MSG_SAVEWAVE | MSG_STALL_WAVE_GEN | MSG_HALT_WAVES | MSG_SYSMSG => {}
        _ => return Err(WaveFault::illegal(i, "message is not for compute waves")),
    }
    Ok(())
}

fn trap<M: WaveMemory>(w: &mut Wave, i: &Inst, cx: &mut Cx<'_, M>) -> Result<(), WaveFault> {
    let id = (i.imm as u32 & 0xFF) as u8;
    let Some((tba, tma)) = cx.dev.trap_handler.filter(|(tba, _)| *tba != 0) else {
        return Err(WaveFault::trap(id));
    };
    let at = w.pc.wrapping_sub(4) & 0xFFFF_FFFF_FFFF;
    let t = usize::from(TTMP0);
    w.s[t] = at as u32;
    w.s[t + 1] = (at >> 32) as u32 | u32::from(id) << 16;
    w.s[t + 12] = hwreg::status(w);
    w.s[t + 14] = tma as u32;
    w.s[t + 15] = (tma >> 32) as u32;
    w.hw.privileged = true;
    w.pc = tba;
    Ok(())
}

/// SOPP.
pub(super) fn sopp<M: WaveMemory>(
    w: &mut Wave,
    i: &Inst,
    cx: &mut Cx<'_, M>,
) -> Result<(), WaveFault> {
    match i.op {
        Op::SNop
        | Op::SWakeup
        | Op::SSetkill
        | Op::SWaitcnt
        | Op::SSleep
        | Op::SSetprio
        | Op::SIcacheInv
        | Op::SIncperflevel
        | Op::SDecperflevel
        | Op::STtracedata => {}
        Op::SEndpgm | Op::SEndpgmSaved => w.state = WaveState::Done,
        Op::SBranch => branch(w, i, true),
        Op::SCbranchScc0 => branch(w, i, !w.scc),
        Op::SCbranchScc1 => branch(w, i, w.scc),
        Op::SCbranchVccz => branch(w, i, w.vcc() == 0),
        Op::SCbranchVccnz => branch(w, i, w.vcc() != 0),
        Op::SCbranchExecz => branch(w, i, w.exec() == 0),
        Op::SCbranchExecnz => branch(w, i, w.exec() != 0),
        Op::SBarrier => w.state = WaveState::Barrier,
        Op::SSethalt => {
            if i.imm & 1 != 0 {
                w.state = WaveState::Halted;
            }
        }
        Op::SSendmsg => sendmsg(w, i, cx)?,
        Op::SSendmsghalt => {
            sendmsg(w, i, cx)?;
            w.state = WaveState::Halted;
        }
        Op::STrap => trap(w, i, cx)?,
        _ => return Err(WaveFault::unsupported(i)),
    }
    Ok(())
}
