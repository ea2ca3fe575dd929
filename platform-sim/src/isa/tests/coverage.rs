//! Every operation the decoder knows is either exercised by a case (and so executed and
//! checked) or refused by name: this test lists both and fails on any operation that is
//! neither, or on a refused one that runs.

use std::collections::BTreeSet;

use super::super::decode::{decode, lookup};
use super::super::inst::Enc;
use super::super::{FaultKind, Op, Target};
use super::harness::{Case, World, targets};
use super::{ds, salu, sdwa, smem, sopp, valu, vcmp, vmem};

/// Operations the interpreter refuses (an illegal-instruction fault naming them): f16
/// arithmetic, GDS/LDS-direct and debugger-only forms clang does not emit for compute.
pub(crate) const REFUSED: &[Op] = &[Op::VAddF16, Op::VMulF16];

fn all_cases() -> Vec<&'static Case> {
    [
        salu::CASES,
        sopp::CASES,
        smem::CASES,
        valu::CASES,
        sdwa::CASES,
        vcmp::CASES,
        vmem::CASES,
        ds::CASES,
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The operations the cases execute.
fn covered() -> BTreeSet<&'static str> {
    let mut ops = BTreeSet::new();
    for c in all_cases() {
        for t in targets(c.targets) {
            let mut at = 0;
            while at < c.words.len() {
                match decode(t, &c.words[at..]) {
                    Ok(i) => {
                        ops.insert(i.op.mnemonic());
                        at += usize::from(i.len / 4);
                    }
                    Err(_) => break,
                }
            }
        }
    }
    ops
}

/// A first dword of encoding `enc` with opcode `op` and all other fields zero (VGPR 0
/// sources where a source is needed).
fn word(enc: Enc, op: u32) -> Option<u32> {
    Some(match enc {
        Enc::Sop2 => 0x8000_0000 | op << 23,
        Enc::Sopk => 0xB000_0000 | op << 23,
        Enc::Sop1 => 0xBE80_0000 | op << 8,
        Enc::Sopc => 0xBF00_0000 | op << 16,
        Enc::Sopp => 0xBF80_0000 | op << 16,
        Enc::Smem => 0xC000_0000 | op << 18,
        Enc::Vop2 => op << 25 | 0x100,
        Enc::Vop1 => 0x7E00_0000 | op << 9 | 0x100,
        Enc::Vopc => 0x7C00_0000 | op << 17 | 0x100,
        Enc::Vop3 => 0xD000_0000 | op << 16,
        Enc::Vop3p => 0xD380_0000 | op << 16,
        Enc::Ds => 0xD800_0000 | op << 17,
        Enc::Mubuf => 0xE000_0000 | op << 18,
        Enc::Flat => 0xDC00_0000 | op << 18,
        _ => return None,
    })
}

#[test]
fn every_operation_is_covered_or_refused_by_name() {
    let covered = covered();
    let refused: BTreeSet<&str> = REFUSED.iter().map(|o| o.mnemonic()).collect();
    let neither: Vec<&str> = Op::ALL
        .iter()
        .map(|o| o.mnemonic())
        .filter(|m| !covered.contains(m) && !refused.contains(m))
        .collect();
    assert!(
        neither.is_empty(),
        "{} operations neither covered nor refused: {neither:?}",
        neither.len()
    );
    let both: Vec<&&str> = covered.intersection(&refused).collect();
    assert!(both.is_empty(), "refused operations that run: {both:?}");
}

#[test]
fn refused_operations_fault_with_their_name() {
    let encs = [
        Enc::Sop2,
        Enc::Sopk,
        Enc::Sop1,
        Enc::Sopc,
        Enc::Sopp,
        Enc::Smem,
        Enc::Vop2,
        Enc::Vop1,
        Enc::Vopc,
        Enc::Vop3,
        Enc::Vop3p,
        Enc::Ds,
        Enc::Mubuf,
        Enc::Flat,
    ];
    for op in REFUSED {
        let mut seen = false;
        for t in [Target::Gfx900, Target::Gfx90a, Target::Gfx942] {
            for enc in encs {
                for n in 0..1024 {
                    if lookup(t, enc, n) != Some(*op) {
                        continue;
                    }
                    let Some(w) = word(enc, n) else { continue };
                    seen = true;
                    let mut world = World::new(&[w, 0]);
                    let f = world.run(t, 4).expect_err("a refused operation faults");
                    match f.kind {
                        FaultKind::Unsupported { op: got, .. } => assert_eq!(got, *op),
                        other => panic!("{} on {}: {other:?}", op.mnemonic(), t.name()),
                    }
                    assert!(f.to_string().contains(op.mnemonic()), "{f}");
                }
            }
        }
        assert!(seen, "{} has no encoding", op.mnemonic());
    }
}
