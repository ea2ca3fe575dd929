//! The SDWA form of VOP1, VOP2 and VOPC (sub-dword addressing): each source is first cut to
//! the byte or word its select names (zero- or sign-extended), the operation runs as in its
//! 32-bit form (with the float `neg`/`abs`, `clamp` and `omod` modifiers SDWA carries), and
//! the result goes to the destination's selected byte or word, the other bits padded with
//! zeros, sign-extended or preserved.
//!
//! The selected sources are handed to the operation as the wave's [`SDWA_TEMP`] registers,
//! so every executor runs unchanged.

use super::super::fault::WaveFault;
use super::super::inst::{Enc, Inst, VGPR};
use super::super::limits::LANES;
use super::super::wave::{SDWA_TEMP, Wave};
use super::{vcmp, vector};

/// `DWORD`: the whole register (`BYTE_0`-`BYTE_3` are 0-3, `WORD_0`/`WORD_1` 4-5).
const DWORD: u32 = 6;
/// `dst_unused`: `UNUSED_PAD`, `UNUSED_SEXT`, `UNUSED_PRESERVE`.
const PAD: u32 = 0;
const SEXT: u32 = 1;
const PRESERVE: u32 = 2;

/// `(shift, width)` of select `sel`, `None` for the reserved value 7.
fn field(sel: u32) -> Option<(u32, u32)> {
    match sel {
        0..=3 => Some((8 * sel, 8)),
        4 | 5 => Some((16 * (sel - 4), 16)),
        DWORD => Some((0, 32)),
        _ => None,
    }
}

/// The value source select `sel` reads from `v`.
#[inline]
fn select(v: u32, (shift, width): (u32, u32), sext: bool) -> u32 {
    if width == 32 {
        return v;
    }
    let x = (v >> shift) & ((1 << width) - 1);
    if sext && x >> (width - 1) & 1 != 0 { x | !((1 << width) - 1) } else { x }
}

/// Places result `r` in the field of the destination select over the old value `old`.
#[inline]
fn place(old: u32, r: u32, (shift, width): (u32, u32), unused: u32) -> u32 {
    if width == 32 {
        return r;
    }
    let m = ((1u32 << width) - 1) << shift;
    let x = (r << shift) & m;
    match unused {
        PAD => x,
        SEXT if r >> (width - 1) & 1 != 0 => x | !(((1u64 << (shift + width)) - 1) as u32),
        SEXT => x,
        _ => x | (old & !m),
    }
}

/// Executes `i`, an instruction in the SDWA form.
///
/// # Errors
/// As the operation's own; an illegal-instruction fault for a reserved select.
pub(super) fn sdwa(w: &mut Wave, i: &Inst) -> Result<(), WaveFault> {
    let s = i.imm2;
    let reserved = || WaveFault::illegal(i, "a reserved SDWA select");
    let mut run = *i;
    let sources = if i.enc == Enc::Vop1 { 1 } else { 2 };
    for k in 0..sources {
        let (sel, sext) = (s >> (16 + 8 * k) & 7, s >> (19 + 8 * k) & 1 != 0);
        let f = field(sel).ok_or_else(reserved)?;
        if sel == DWORD {
            continue;
        }
        let src = w.src(i, i.src[k])?;
        let t: [u32; LANES] = std::array::from_fn(|l| select(src.at(l), f, sext));
        w.sdwa[k] = t;
        run.src[k] = VGPR + (SDWA_TEMP + k) as u16;
    }
    if i.enc == Enc::Vopc {
        return vcmp::vopc(w, &run);
    }
    let (sel, unused) = (s >> 8 & 7, s >> 11 & 3);
    let f = field(sel).ok_or_else(reserved)?;
    if unused > PRESERVE {
        return Err(reserved());
    }
    if sel == DWORD {
        return vector(w, &run);
    }
    let dst = usize::from(i.dst);
    let old = *w.vgpr(i, dst)?;
    vector(w, &run)?;
    let exec = w.exec();
    let d = w.vgpr_mut(i, dst)?;
    for l in 0..LANES {
        if exec >> l & 1 != 0 {
            d[l] = place(old[l], d[l], f, unused);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_and_places() {
        assert_eq!(select(0x8180_7F01, field(1).unwrap(), false), 0x7F);
        assert_eq!(select(0x8180_7F01, field(2).unwrap(), true), 0xFFFF_FF80);
        assert_eq!(select(0x8180_7F01, field(5).unwrap(), true), 0xFFFF_8180);
        assert_eq!(place(0xAABB_CCDD, 0x1234_5680, field(1).unwrap(), PAD), 0x8000);
        assert_eq!(place(0xAABB_CCDD, 0x1234_5680, field(1).unwrap(), SEXT), 0xFFFF_8000);
        assert_eq!(place(0xAABB_CCDD, 0x1234_5680, field(1).unwrap(), PRESERVE), 0xAABB_80DD);
        assert_eq!(place(0xAABB_CCDD, 0x1234_5678, field(5).unwrap(), PRESERVE), 0x5678_CCDD);
        assert!(field(7).is_none());
    }
}
