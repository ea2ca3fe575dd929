//! SDWA (sub-dword addressing) cases: each case's words are LLVM's encoding (`llvm-mc-19 -show-encoding`) of its
//! `asm` for its targets; the expected state is worked out by hand from the ISA manuals.

use super::harness::{Case, run_cases};

#[rustfmt::skip]
pub(crate) const CASES: &[Case] = &[
    Case { asm: "v_or_b32_sdwa v0, s26, v0 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:DWORD", targets: 7, words: &[0x280000F9, 0x0680061A], init: "s26=0x12345678 v0=0xab00", expect: "v0=0xab78" },
    Case { asm: "v_or_b32_sdwa v16, s28, v16 dst_sel:WORD_1 dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:DWORD", targets: 7, words: &[0x282020F9, 0x0680051C], init: "s28=0x1ff v16=0x3400", expect: "v16=0x34ff0000" },
    Case { asm: "v_or_b32_sdwa v0, v0, v16 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_0 src1_sel:DWORD", targets: 7, words: &[0x280020F9, 0x06040600], init: "v0=0xdead0078 v16=0x34ff0000", expect: "v0=0x34ff0078" },
    Case { asm: "v_or_b32_sdwa v0, v1, s2 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_2 src1_sel:WORD_1", targets: 7, words: &[0x280004F9, 0x85021501], init: "v0=0x11112222 v1=0x00ab0000 s2=0xcd000000", expect: "v0=0xcdab2222" },
    Case { asm: "v_or_b32_sdwa v0, 3, v2 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_2 src1_sel:WORD_1", targets: 7, words: &[0x280004F9, 0x05821583], init: "v0=0x1234 v2=0x50000", expect: "v0=0x51234" },
    Case { asm: "v_or_b32_sdwa v0, v1, v2 dst_sel:BYTE_2 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_0 src1_sel:BYTE_0", targets: 7, words: &[0x280004F9, 0x00001201], init: "v0=0x11223344 v1=0x0f v2=0xf0 exec=0x5", expect: "v0.0=0x11ff3344 v0.1=0x11223344 v0.2=0x11ff3344" },
    Case { asm: "v_add_f32_sdwa v0, -v1, |v2| clamp mul:2 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:DWORD", targets: 7, words: &[0x020004F9, 0x26166601], init: "v1=f:-1 v2=f:-0.5", expect: "v0=f:1" },
    Case { asm: "v_add_f32_sdwa v0, -v1, |v2| mul:2 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:DWORD", targets: 7, words: &[0x020004F9, 0x26164601], init: "v1=f:0.25 v2=f:-0.5", expect: "v0=f:0.5" },
    Case { asm: "v_mov_b32_sdwa v5, sext(v1) dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_1", targets: 7, words: &[0x7E0A02F9, 0x00090601], init: "v1=0x8000", expect: "v5=0xffffff80" },
    Case { asm: "v_mov_b32_sdwa v5, v1 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_1", targets: 7, words: &[0x7E0A02F9, 0x00010601], init: "v1=0x8000", expect: "v5=0x80" },
    Case { asm: "v_mov_b32_sdwa v5, sext(v1) dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_1", targets: 7, words: &[0x7E0A02F9, 0x000D0601], init: "v1=0x80010000", expect: "v5=0xffff8001" },
    Case { asm: "v_mov_b32_sdwa v5, v1 dst_sel:BYTE_1 dst_unused:UNUSED_SEXT src0_sel:BYTE_0", targets: 7, words: &[0x7E0A02F9, 0x00000901], init: "v1=0x85 v5=0x12345678", expect: "v5=0xffff8500" },
    Case { asm: "v_mov_b32_sdwa v5, v1 dst_sel:WORD_0 dst_unused:UNUSED_SEXT src0_sel:DWORD", targets: 7, words: &[0x7E0A02F9, 0x00060C01], init: "v1=0x7fff v5=0x12345678", expect: "v5=0x7fff" },
    Case { asm: "v_mov_b32_sdwa v5, v1 dst_sel:BYTE_3 dst_unused:UNUSED_PAD src0_sel:DWORD", targets: 7, words: &[0x7E0A02F9, 0x00060301], init: "v1=0x1ab v5=0x12345678", expect: "v5=0xab000000" },
    Case { asm: "v_cmp_eq_u32_sdwa s[4:5], v1, v2 src0_sel:BYTE_1 src1_sel:WORD_0", targets: 7, words: &[0x7D9404F9, 0x04018401], init: "v1=lane*256 v2=0x10003", expect: "s[4:5]=0x8" },
    Case { asm: "v_cmp_eq_u32_sdwa vcc, v1, v2 src0_sel:BYTE_1 src1_sel:WORD_0", targets: 7, words: &[0x7D9404F9, 0x04010001], init: "v1=lane*256 v2=0x10003", expect: "vcc=0x8" },
    Case { asm: "v_cmp_gt_i32_sdwa vcc, sext(v1), v2 src0_sel:BYTE_0 src1_sel:DWORD", targets: 7, words: &[0x7D8804F9, 0x06080001], init: "v1=0x80 v2=0 v1.1=0x7f", expect: "vcc=0x2" },
    Case { asm: "v_cmpx_eq_u32_sdwa vcc, v1, v2 src0_sel:BYTE_0 src1_sel:BYTE_0", targets: 7, words: &[0x7DB404F9, 0x00000001], init: "v1=lane v2=0x102", expect: "exec=0x4 vcc=0x4" },
    Case { asm: "v_cndmask_b32_sdwa v1, v2, v3, vcc dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:BYTE_1", targets: 7, words: &[0x000206F9, 0x01000602], init: "v2=0x1234 v3=0x5678 vcc=0x1", expect: "v1.0=0x56 v1.1=0x34" },
    Case { asm: "v_add_co_u32_sdwa v1, vcc, v2, v3 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_1 src1_sel:WORD_1", targets: 7, words: &[0x320206F9, 0x05050602], init: "v2=0xffff0000 v3=0x20000", expect: "v1=0x10001 vcc=0" },
    Case { asm: "v_cvt_f32_u32_sdwa v1, v2 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_3", targets: 7, words: &[0x7E020CF9, 0x00030602], init: "v2=0x05000000", expect: "v1=f:5" },
    Case { asm: "v_mul_u32_u24_sdwa v1, v2, v3 dst_sel:WORD_1 dst_unused:UNUSED_SEXT src0_sel:BYTE_0 src1_sel:BYTE_0", targets: 7, words: &[0x100206F9, 0x00000D02], init: "v1=0x1234 v2=0x1ff v3=0x281", expect: "v1=0x807f0000" },
    Case { asm: "v_add_u16_sdwa v1, v2, v3 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:WORD_1 src1_sel:BYTE_0", targets: 7, words: &[0x4C0206F9, 0x00051502], init: "v1=0x1234 v2=0xfffe0000 v3=0x103", expect: "v1=0x11234" },
];

#[test]
fn cases() {
    run_cases(CASES);
}
