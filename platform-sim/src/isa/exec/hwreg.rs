//! `s_getreg_b32` / `s_setreg_b32`: the hardware registers a wave can read and write, by the
//! gfx9 register ids (`HW_REG_MODE` 1, `STATUS` 2, `TRAPSTS` 3, `HW_ID` 4, `GPR_ALLOC` 5,
//! `LDS_ALLOC` 6, `IB_STS` 7, `SH_MEM_BASES` 15, `TBA_LO`/`HI` 16/17, `TMA_LO`/`HI` 18/19)
//! and the `simm16` field layout `{size - 1 [15:11], offset [10:6], id [5:0]}`.

use super::super::fault::WaveFault;
use super::super::inst::Inst;
use super::super::memory::WaveMemory;
use super::super::wave::Wave;
use super::Cx;

/// `HW_REG_MODE`.
pub(crate) const HW_REG_MODE: u32 = 1;
/// `HW_REG_STATUS`.
pub(crate) const HW_REG_STATUS: u32 = 2;
/// `HW_REG_TRAPSTS`.
pub(crate) const HW_REG_TRAPSTS: u32 = 3;
/// `HW_REG_HW_ID`.
pub(crate) const HW_REG_HW_ID: u32 = 4;
/// `HW_REG_GPR_ALLOC`.
pub(crate) const HW_REG_GPR_ALLOC: u32 = 5;
/// `HW_REG_LDS_ALLOC`.
pub(crate) const HW_REG_LDS_ALLOC: u32 = 6;
/// `HW_REG_IB_STS`.
pub(crate) const HW_REG_IB_STS: u32 = 7;
/// `HW_REG_SH_MEM_BASES`.
pub(crate) const HW_REG_SH_MEM_BASES: u32 = 15;
/// `HW_REG_TBA_LO`.
pub(crate) const HW_REG_TBA_LO: u32 = 16;
/// `HW_REG_TMA_HI`.
pub(crate) const HW_REG_TMA_HI: u32 = 19;

/// `STATUS` bits the model keeps: SCC (0), PRIV (5), TRAP_EN (6), EXECZ (9), VCCZ (10).
pub(crate) fn status(w: &Wave) -> u32 {
    u32::from(w.scc)
        | u32::from(w.hw.privileged) << 5
        | u32::from(w.hw.trap_en) << 6
        | u32::from(w.exec() == 0) << 9
        | u32::from(w.vcc() == 0) << 10
}

fn field(simm: u32) -> (u32, u32, u32) {
    let id = simm & 0x3F;
    let offset = (simm >> 6) & 0x1F;
    let size = ((simm >> 11) & 0x1F) + 1;
    let mask = if size >= 32 { u32::MAX } else { (1u32 << size) - 1 };
    (id, offset, mask)
}

fn read<M: WaveMemory>(w: &Wave, id: u32, cx: &Cx<'_, M>) -> u32 {
    let (tba, tma) = cx.dev.trap_handler.unwrap_or((0, 0));
    match id {
        HW_REG_MODE => w.hw.mode,
        HW_REG_STATUS => status(w),
        HW_REG_TRAPSTS => w.hw.trapsts,
        HW_REG_HW_ID => w.hw.hw_id,
        HW_REG_GPR_ALLOC => w.hw.gpr_alloc,
        HW_REG_LDS_ALLOC => w.hw.lds_alloc,
        HW_REG_IB_STS => w.hw.ib_sts,
        // SH_MEM_BASES: {shared_base[63:48] [31:16], private_base[63:48] [15:0]}.
        HW_REG_SH_MEM_BASES => {
            ((w.apertures.shared >> 48) as u32) << 16 | (w.apertures.private >> 48) as u32 & 0xFFFF
        }
        // The trap handler's addresses are visible to privileged code only.
        HW_REG_TBA_LO..=HW_REG_TMA_HI if w.hw.privileged => {
            let v = if id < 18 { tba } else { tma };
            if id.is_multiple_of(2) { v as u32 } else { (v >> 32) as u32 }
        }
        _ => 0,
    }
}

/// `s_getreg_b32` with field `simm`.
///
/// # Errors
/// None today; fallible for symmetry with [`set`].
pub(crate) fn get<M: WaveMemory>(
    w: &Wave,
    _i: &Inst,
    simm: u32,
    cx: &Cx<'_, M>,
) -> Result<u32, WaveFault> {
    let (id, offset, mask) = field(simm);
    Ok((read(w, id, cx) >> offset) & mask)
}

/// `s_setreg_b32` of `value` into field `simm`. Read-only registers ignore the write, as on
/// the hardware; of `STATUS` only SCC is writable here.
///
/// # Errors
/// None today (kept fallible so that a write the model cannot honour can be refused).
pub(crate) fn set<M: WaveMemory>(
    w: &mut Wave,
    _i: &Inst,
    simm: u32,
    value: u32,
    cx: &Cx<'_, M>,
) -> Result<(), WaveFault> {
    let (id, offset, mask) = field(simm);
    let merged = |old: u32| (old & !(mask << offset)) | ((value & mask) << offset);
    match id {
        HW_REG_MODE => w.hw.mode = merged(w.hw.mode),
        HW_REG_STATUS => {
            let s = merged(read(w, id, cx));
            w.scc = s & 1 != 0;
        }
        HW_REG_TRAPSTS => w.hw.trapsts = merged(w.hw.trapsts),
        HW_REG_IB_STS => w.hw.ib_sts = merged(w.hw.ib_sts),
        _ => {}
    }
    Ok(())
}
