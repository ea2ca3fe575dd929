//! scalar memory cases: each case's words are LLVM's encoding (`llvm-mc-19 -show-encoding`) of its
//! `asm` for its targets; the expected state is worked out by hand from the ISA manuals.

use super::harness::{Case, run_cases};

#[rustfmt::skip]
pub(crate) const CASES: &[Case] = &[
    Case { asm: "s_load_dword s1, s[2:3], 0x4", targets: 7, words: &[0xC0020041, 0x00000004], init: "s[2:3]=0x10000 m:0x10004=0xdeadbeef", expect: "s1=0xdeadbeef" },
    Case { asm: "s_load_dword s1, s[2:3], -4", targets: 7, words: &[0xC0020041, 0x001FFFFC], init: "s[2:3]=0x10008 m:0x10004=0xdeadbeef", expect: "s1=0xdeadbeef" },
    Case { asm: "s_load_dword s1, s[2:3], s4", targets: 7, words: &[0xC0000041, 0x00000004], init: "s[2:3]=0x10000 s4=0x10 m:0x10010=5", expect: "s1=5" },
    Case { asm: "s_load_dword s1, s[2:3], s4 offset:0x8", targets: 7, words: &[0xC0024041, 0x08000008], init: "s[2:3]=0x10000 s4=0x10 m:0x10018=6", expect: "s1=6" },
    Case { asm: "s_load_dwordx2 s[4:5], s[2:3], 0x8", targets: 7, words: &[0xC0060101, 0x00000008], init: "s[2:3]=0x10000 m:0x10008=1 m:0x1000c=2", expect: "s[4:5]=0x200000001" },
    Case { asm: "s_load_dwordx4 s[4:7], s[2:3], 0x0", targets: 7, words: &[0xC00A0101, 0x00000000], init: "s[2:3]=0x10000 m:0x10000=1 m:0x1000c=4", expect: "s4=1 s7=4" },
    Case { asm: "s_load_dwordx8 s[4:11], s[2:3], 0x0", targets: 7, words: &[0xC00E0101, 0x00000000], init: "s[2:3]=0x10000 m:0x10000=1 m:0x1001c=8", expect: "s4=1 s11=8" },
    Case { asm: "s_load_dwordx16 s[4:19], s[2:3], 0x0", targets: 7, words: &[0xC0120101, 0x00000000], init: "s[2:3]=0x10000 m:0x10000=1 m:0x1003c=16", expect: "s4=1 s19=16" },
    Case { asm: "s_load_dword s1, s[2:3], 0x0", targets: 7, words: &[0xC0020041, 0x00000000], init: "s[2:3]=0x900000", expect: "fault=memory" },
    Case { asm: "s_buffer_load_dword s1, s[4:7], 0x10", targets: 7, words: &[0xC0220042, 0x00000010], init: "s[4:5]=0x10000 s6=0x100 m:0x10010=9", expect: "s1=9" },
    Case { asm: "s_buffer_load_dword s1, s[4:7], 0x100", targets: 7, words: &[0xC0220042, 0x00000100], init: "s[4:5]=0x10000 s6=0x100 s1=5 m:0x10100=9", expect: "s1=0" },
    Case { asm: "s_buffer_load_dwordx2 s[8:9], s[4:7], 0xfc", targets: 7, words: &[0xC0260202, 0x000000FC], init: "s[4:5]=0x10000 s6=0x100 m:0x100fc=3 m:0x10100=9", expect: "s8=3 s9=0" },
    Case { asm: "s_buffer_load_dwordx4 s[8:11], s[4:7], 0x0", targets: 7, words: &[0xC02A0202, 0x00000000], init: "s[4:5]=0x10000 s6=0x100 m:0x1000c=7", expect: "s11=7" },
    Case { asm: "s_buffer_load_dwordx8 s[8:15], s[4:7], 0x0", targets: 7, words: &[0xC02E0202, 0x00000000], init: "s[4:5]=0x10000 s6=0x100 m:0x1001c=7", expect: "s15=7" },
    Case { asm: "s_buffer_load_dwordx16 s[8:23], s[4:7], 0x0", targets: 7, words: &[0xC0320202, 0x00000000], init: "s[4:5]=0x10000 s6=0x100 m:0x1003c=7", expect: "s23=7" },
    Case { asm: "s_store_dword s1, s[2:3], 0x20", targets: 7, words: &[0xC0420041, 0x00000020], init: "s1=0x1234 s[2:3]=0x10000", expect: "m:0x10020=0x1234" },
    Case { asm: "s_store_dwordx2 s[4:5], s[2:3], 0x20", targets: 7, words: &[0xC0460101, 0x00000020], init: "s[4:5]=0x200000001 s[2:3]=0x10000", expect: "m:0x10020=1 m:0x10024=2" },
    Case { asm: "s_store_dwordx4 s[4:7], s[2:3], 0x20", targets: 7, words: &[0xC04A0101, 0x00000020], init: "s4=1 s7=4 s[2:3]=0x10000", expect: "m:0x10020=1 m:0x1002c=4" },
    Case { asm: "s_dcache_inv; s_mov_b32 s1, 3", targets: 7, words: &[0xC0800000, 0x00000000, 0xBE810083], init: "", expect: "s1=3" },
    Case { asm: "s_dcache_wb; s_mov_b32 s1, 3", targets: 7, words: &[0xC0840000, 0x00000000, 0xBE810083], init: "", expect: "s1=3" },
    Case { asm: "s_dcache_inv_vol; s_mov_b32 s1, 3", targets: 7, words: &[0xC0880000, 0x00000000, 0xBE810083], init: "", expect: "s1=3" },
    Case { asm: "s_dcache_wb_vol; s_mov_b32 s1, 3", targets: 7, words: &[0xC08C0000, 0x00000000, 0xBE810083], init: "", expect: "s1=3" },
    Case { asm: "s_memtime s[2:3]; s_memtime s[4:5]; s_sub_u32 s6, s4, s2; s_subb_u32 s7, s5, s3; s_cmp_lg_u64 s[2:3], 0", targets: 7, words: &[0xC0900080, 0x00000000, 0xC0900100, 0x00000000, 0x80860204, 0x82870305, 0xBF138002], init: "", expect: "s7=0 scc=1" },
    Case { asm: "s_memrealtime s[2:3]; s_memrealtime s[4:5]; s_sub_u32 s6, s4, s2; s_subb_u32 s7, s5, s3; s_cmp_lg_u64 s[2:3], 0", targets: 7, words: &[0xC0940080, 0x00000000, 0xC0940100, 0x00000000, 0x80860204, 0x82870305, 0xBF138002], init: "", expect: "s7=0 scc=1" },
];

#[test]
fn cases() {
    run_cases(CASES);
}
