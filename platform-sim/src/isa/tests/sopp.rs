//! sopp cases: each case's words are LLVM's encoding (`llvm-mc-19 -show-encoding`) of its
//! `asm` for its targets; the expected state is worked out by hand from the ISA manuals.

use super::harness::{Case, run_cases};

#[rustfmt::skip]
pub(crate) const CASES: &[Case] = &[
    Case { asm: "s_nop 0; s_mov_b32 s1, 3", targets: 7, words: &[0xBF800000, 0xBE810083], init: "", expect: "s1=3 done=1" },
    Case { asm: "s_endpgm; s_mov_b32 s1, 1", targets: 7, words: &[0xBF810000, 0xBE810081], init: "", expect: "s1=0 done=1" },
    Case { asm: "s_branch 1; s_mov_b32 s1, 1; s_mov_b32 s2, 2", targets: 7, words: &[0xBF820001, 0xBE810081, 0xBE820082], init: "", expect: "s1=0 s2=2" },
    Case { asm: "s_cbranch_scc0 1; s_mov_b32 s1, 1; s_mov_b32 s2, 2", targets: 7, words: &[0xBF840001, 0xBE810081, 0xBE820082], init: "scc=0", expect: "s1=0 s2=2" },
    Case { asm: "s_cbranch_scc0 1; s_mov_b32 s1, 1; s_mov_b32 s2, 2", targets: 7, words: &[0xBF840001, 0xBE810081, 0xBE820082], init: "scc=1", expect: "s1=1 s2=2" },
    Case { asm: "s_cbranch_scc1 1; s_mov_b32 s1, 1; s_mov_b32 s2, 2", targets: 7, words: &[0xBF850001, 0xBE810081, 0xBE820082], init: "scc=1", expect: "s1=0 s2=2" },
    Case { asm: "s_cbranch_vccz 1; s_mov_b32 s1, 1; s_mov_b32 s2, 2", targets: 7, words: &[0xBF860001, 0xBE810081, 0xBE820082], init: "vcc=0", expect: "s1=0 s2=2" },
    Case { asm: "s_cbranch_vccz 1; s_mov_b32 s1, 1; s_mov_b32 s2, 2", targets: 7, words: &[0xBF860001, 0xBE810081, 0xBE820082], init: "vcc=0x100000000", expect: "s1=1 s2=2" },
    Case { asm: "s_cbranch_vccnz 1; s_mov_b32 s1, 1; s_mov_b32 s2, 2", targets: 7, words: &[0xBF870001, 0xBE810081, 0xBE820082], init: "vcc=0x100000000", expect: "s1=0 s2=2" },
    Case { asm: "s_cbranch_execz 1; s_mov_b32 s1, 1; s_mov_b32 s2, 2", targets: 7, words: &[0xBF880001, 0xBE810081, 0xBE820082], init: "exec=0", expect: "s1=0 s2=2" },
    Case { asm: "s_cbranch_execnz 1; s_mov_b32 s1, 1; s_mov_b32 s2, 2", targets: 7, words: &[0xBF890001, 0xBE810081, 0xBE820082], init: "exec=1", expect: "s1=0 s2=2" },
    Case { asm: "s_cbranch_execnz 1; s_mov_b32 s1, 1; s_mov_b32 s2, 2", targets: 7, words: &[0xBF890001, 0xBE810081, 0xBE820082], init: "exec=0", expect: "s1=1 s2=2" },
    Case { asm: "s_mov_b32 s1, 3; s_sub_u32 s1, s1, 1; s_cmp_eq_u32 s1, 0; s_cbranch_scc0 0xfffd; s_mov_b32 s2, 9", targets: 7, words: &[0xBE810083, 0x80818101, 0xBF068001, 0xBF84FFFD, 0xBE820089], init: "", expect: "s1=0 s2=9" },
    Case { asm: "s_waitcnt vmcnt(0) lgkmcnt(0); s_mov_b32 s1, 3", targets: 7, words: &[0xBF8C0070, 0xBE810083], init: "", expect: "s1=3 done=1" },
    Case { asm: "s_wakeup; s_mov_b32 s1, 3", targets: 7, words: &[0xBF830000, 0xBE810083], init: "", expect: "s1=3 done=1" },
    Case { asm: "s_setkill 0; s_mov_b32 s1, 3", targets: 7, words: &[0xBF8B0000, 0xBE810083], init: "", expect: "s1=3 done=1" },
    Case { asm: "s_sleep 1; s_mov_b32 s1, 3", targets: 7, words: &[0xBF8E0001, 0xBE810083], init: "", expect: "s1=3 done=1" },
    Case { asm: "s_setprio 1; s_mov_b32 s1, 3", targets: 7, words: &[0xBF8F0001, 0xBE810083], init: "", expect: "s1=3 done=1" },
    Case { asm: "s_icache_inv; s_mov_b32 s1, 3", targets: 7, words: &[0xBF930000, 0xBE810083], init: "", expect: "s1=3 done=1" },
    Case { asm: "s_incperflevel 1; s_mov_b32 s1, 3", targets: 7, words: &[0xBF940001, 0xBE810083], init: "", expect: "s1=3 done=1" },
    Case { asm: "s_decperflevel 1; s_mov_b32 s1, 3", targets: 7, words: &[0xBF950001, 0xBE810083], init: "", expect: "s1=3 done=1" },
    Case { asm: "s_ttracedata; s_mov_b32 s1, 3", targets: 7, words: &[0xBF960000, 0xBE810083], init: "", expect: "s1=3 done=1" },
    Case { asm: "s_endpgm_saved; s_mov_b32 s1, 3", targets: 7, words: &[0xBF9B0000, 0xBE810083], init: "", expect: "s1=0 done=1" },
    Case { asm: "s_sethalt 1; s_mov_b32 s1, 3", targets: 7, words: &[0xBF8D0001, 0xBE810083], init: "", expect: "s1=0 done=0" },
    Case { asm: "s_barrier; s_mov_b32 s1, 3", targets: 7, words: &[0xBF8A0000, 0xBE810083], init: "", expect: "s1=0 done=0" },
    Case { asm: "s_mov_b32 m0, 0x1000802; s_sendmsg sendmsg(MSG_INTERRUPT); s_mov_b32 s1, 3", targets: 7, words: &[0xBEFC00FF, 0x01000802, 0xBF900001, 0xBE810083], init: "", expect: "irq=0x802 s1=3" },
    Case { asm: "s_mov_b32 exec_lo, 0x80000000; s_sendmsg sendmsg(MSG_GET_DOORBELL); s_mov_b32 s1, exec_lo", targets: 7, words: &[0xBEFE00FF, 0x80000000, 0xBF90000A, 0xBE81007E], init: "doorbell=0x1234", expect: "s1=0x234" },
    Case { asm: "s_mov_b32 m0, 7; s_sendmsghalt sendmsg(MSG_INTERRUPT); s_mov_b32 s1, 3", targets: 7, words: &[0xBEFC0087, 0xBF910001, 0xBE810083], init: "", expect: "irq=7 s1=0 done=0" },
    Case { asm: "s_trap 2; s_mov_b32 s1, 3", targets: 7, words: &[0xBF920002, 0xBE810083], init: "", expect: "fault=trap s1=0" },
    Case { asm: "s_trap 5; s_mov_b32 s1, 7; s_endpgm; s_nop 0; s_lshr_b32 s2, ttmp1, 16; s_add_u32 ttmp0, ttmp0, 4; s_addc_u32 ttmp1, ttmp1, 0; s_and_b32 ttmp1, ttmp1, 0xffff; s_rfe_b64 ttmp[0:1]", targets: 7, words: &[0xBF920005, 0xBE810087, 0xBF810000, 0xBF800000, 0x8F02906D, 0x806C846C, 0x826D806D, 0x866DFF6D, 0x0000FFFF, 0xBE801F6C], init: "tba=0x1000010", expect: "s1=7 s2=5 done=1" },
    Case { asm: "s_trap 1; s_endpgm; s_nop 0; s_nop 0; s_getreg_b32 s3, hwreg(HW_REG_TBA_LO); s_getreg_b32 s4, hwreg(HW_REG_TMA_LO); s_getreg_b32 s5, hwreg(HW_REG_STATUS, 5, 1); s_mov_b32 s6, ttmp12", targets: 7, words: &[0xBF920001, 0xBF810000, 0xBF800000, 0xBF800000, 0xB883F810, 0xB884F812, 0xB8850142, 0xBE860078], init: "tba=0x1000010", expect: "s3=0x1000010 s4=0x7e57 s5=1 s6=0x440" },
];

#[test]
fn cases() {
    run_cases(CASES);
}
