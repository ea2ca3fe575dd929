//! Decoding: forms the interpreter does not run are refused by name, never mis-decoded.
//! Words from LLVM's assembler (gfx90a unless said otherwise).

use super::super::decode::{Undecodable, decode};
use super::super::inst::Enc;
use super::super::{FaultKind, Op, Target};
use super::harness::World;

fn refused(t: Target, words: &[u32]) -> Undecodable {
    decode(t, words).expect_err("refused")
}

#[test]
fn dpp_and_impossible_sdwa_forms_are_refused_naming_the_operation() {
    // v_mov_b32_dpp v1, v2 quad_perm:[1,0,3,2]
    let u = refused(Target::Gfx90a, &[0x7E02_02FA, 0xFF00_B102]);
    assert_eq!((u.enc, u.op), (Some(Enc::Vop1), Some(Op::VMovB32)));
    assert!(u.to_string().contains("DPP"), "{u}");
    // v_cvt_f64_i32 v[2:3], v2 (VOP1 opcode 4) with the SDWA marker: it has no SDWA form.
    let u = refused(Target::Gfx90a, &[0x7E04_08F9, 0x0006_0602]);
    assert_eq!((u.enc, u.op), (Some(Enc::Vop1), Some(Op::VCvtF64I32)));
    assert!(u.to_string().contains("no SDWA form"), "{u}");
    // v_or_b32_sdwa v0, <literal>, v0: SDWA has no literal.
    let u = refused(Target::Gfx90a, &[0x2800_00F9, 0x0680_06FF]);
    assert!(u.to_string().contains("literal"), "{u}");
}

#[test]
fn a_reserved_sdwa_select_is_an_illegal_instruction() {
    // v_or_b32_sdwa v0, v1, v2 with dst_unused 3 (reserved), then src0_sel 7 (reserved).
    for second in [0x0606_1E01, 0x0607_0601] {
        let mut world = World::new(&[0x2800_04F9, second, 0]);
        let f = world.run(Target::Gfx90a, 4).expect_err("reserved");
        assert!(matches!(f.kind, FaultKind::Illegal { op: Op::VOrB32, .. }), "{f}");
    }
}

#[test]
fn graphics_encodings_are_refused() {
    // tbuffer_load_format_x v1, off, s[4:7], 0
    let u = refused(Target::Gfx90a, &[0xE808_0000, 0x8001_0100]);
    assert_eq!(u.enc, Some(Enc::Mtbuf));
    // image_load v1, v2, s[4:11] dmask:0x1
    let u = refused(Target::Gfx90a, &[0xF000_0100, 0x0001_0102]);
    assert_eq!(u.enc, Some(Enc::Mimg));
    assert!(u.to_string().contains("MIMG"), "{u}");
}

#[test]
fn an_operation_of_another_target_is_named() {
    // v_fmac_f32 v1, v2, v3 exists on gfx90a and gfx942, not on gfx900.
    let w = [0x7602_0702];
    assert_eq!(decode(Target::Gfx90a, &w).map(|i| i.op), Ok(Op::VFmacF32));
    let u = refused(Target::Gfx900, &w);
    assert_eq!((u.opcode, u.op), (59, Some(Op::VFmacF32)));
    assert!(u.to_string().contains("does not exist on this target"), "{u}");
}

#[test]
fn unknown_words_and_missing_dwords() {
    let u = refused(Target::Gfx942, &[0xFFFF_FFFF]);
    assert_eq!(u.enc, None);
    // VOP1 opcode 0x7f names nothing.
    let u = refused(Target::Gfx942, &[0x7E00_FE00]);
    assert_eq!((u.enc, u.opcode, u.op), (Some(Enc::Vop1), 0x7F, None));
    assert!(u.to_string().contains("VOP1 opcode 127"), "{u}");
    // s_mov_b32 s1, 0x1234 without its literal.
    let u = refused(Target::Gfx900, &[0xBE81_00FF]);
    assert!(u.to_string().contains("second dword"), "{u}");
    // A VOP3 instruction with a literal source (not allowed before gfx10).
    let u = refused(Target::Gfx900, &[0xD101_0001, 0x0002_00FF, 0x1234]);
    assert!(u.to_string().contains("literal"), "{u}");
}

#[test]
fn a_wave_stops_at_an_illegal_instruction_with_its_pc() {
    for t in [Target::Gfx900, Target::Gfx90a, Target::Gfx942] {
        // s_mov_b32 s1, 5; (unknown VOP1 opcode); s_mov_b32 s2, 6
        let mut w = World::new(&[0xBE81_0085, 0x7E00_FE00, 0xBE82_0086]);
        let f = w.run(t, 10).expect_err("illegal");
        assert_eq!(f.pc, super::harness::CODE + 4);
        assert!(matches!(f.kind, FaultKind::Undecodable(_)));
        assert_eq!((w.wave.s[1], w.wave.s[2]), (5, 0), "stopped before the next instruction");
        assert!(f.to_string().contains("illegal instruction"), "{f}");
    }
}

#[test]
fn every_dword_decodes_or_is_refused_without_panicking() {
    // A sweep of first dwords across all encodings (second and third dwords fixed).
    for t in [Target::Gfx900, Target::Gfx90a, Target::Gfx942] {
        for hi in 0..=0xFFFFu32 {
            let w = hi << 16 | (hi.wrapping_mul(0x9E37) & 0xFFFF);
            let _ = decode(t, &[w, 0xDEAD_BEEF, 0x1234_5678]);
            let _ = decode(t, &[w]);
        }
    }
}
