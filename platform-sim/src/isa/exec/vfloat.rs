//! The vector ALU's floating-point operations: f32 and f64 arithmetic, conversions,
//! rounding, transcendentals (`v_exp_f32` is 2^x, `v_log_f32` log2, `v_sin_f32` sin(2πx)),
//! and the division helpers `v_div_scale`, `v_div_fmas`, `v_div_fixup`.
//!
//! VOP3 source modifiers (`abs`, then `neg`) apply to the inputs of float operations, the
//! output modifier (`omod`) and `clamp` to their results. Arithmetic is IEEE with round to
//! nearest even; f32 denormals are flushed when the wave's MODE says so (`FP_DENORM` bits
//! [5:4] zero), kept otherwise; `min`/`max` order -0 below +0 and return the other operand
//! of a NaN.

use super::super::Op;
use super::super::fault::WaveFault;
use super::super::inst::{Enc, Inst, VCC_LO, flag};
use super::super::limits::LANES;
use super::super::wave::{Kind64, Wave};
use super::vint::{out32, out64};

type R = Result<(), WaveFault>;

const SIGN32: u32 = 0x8000_0000;
const SIGN64: u64 = 0x8000_0000_0000_0000;

/// Source `k` of `i` as f32 bit patterns, with the VOP3 modifiers applied.
fn src32(w: &Wave, i: &Inst, k: usize, ftz: bool) -> Result<[u32; LANES], WaveFault> {
    let mut a = w.lanes(i, i.src[k])?;
    let (abs, neg) = (i.abs >> k & 1 != 0, i.neg >> k & 1 != 0);
    if abs || neg || ftz {
        for v in &mut a {
            if ftz && *v & 0x7F80_0000 == 0 {
                *v &= SIGN32;
            }
            if abs {
                *v &= !SIGN32;
            }
            if neg {
                *v ^= SIGN32;
            }
        }
    }
    Ok(a)
}

/// As [`src32`] for f64 sources.
fn src64(w: &Wave, i: &Inst, k: usize) -> Result<[u64; LANES], WaveFault> {
    let mut a = w.lanes64(i, i.src[k], Kind64::F)?;
    let (abs, neg) = (i.abs >> k & 1 != 0, i.neg >> k & 1 != 0);
    if abs || neg {
        for v in &mut a {
            if abs {
                *v &= !SIGN64;
            }
            if neg {
                *v ^= SIGN64;
            }
        }
    }
    Ok(a)
}

/// Applies `omod`, `clamp` and denormal flushing to an f32 result.
#[inline]
fn post32(r: f32, omod: u8, clamp: bool, ftz: bool) -> u32 {
    let mut r = match omod {
        1 => r * 2.0,
        2 => r * 4.0,
        3 => r * 0.5,
        _ => r,
    };
    if clamp {
        r = if r.is_nan() { 0.0 } else { r.clamp(0.0, 1.0) };
    }
    let b = r.to_bits();
    if ftz && b & 0x7F80_0000 == 0 { b & SIGN32 } else { b }
}

#[inline]
fn post64(r: f64, omod: u8, clamp: bool) -> u64 {
    let mut r = match omod {
        1 => r * 2.0,
        2 => r * 4.0,
        3 => r * 0.5,
        _ => r,
    };
    if clamp {
        r = if r.is_nan() { 0.0 } else { r.clamp(0.0, 1.0) };
    }
    r.to_bits()
}

/// Whether f32 denormals are flushed (MODE.FP_DENORM[5:4] == 0).
fn ftz(w: &Wave) -> bool {
    w.hw.mode >> 4 & 3 == 0
}

fn omod(i: &Inst) -> u8 {
    if i.enc == Enc::Vop3 || i.has(flag::SDWA) { i.omod } else { 0 }
}

fn f1(w: &mut Wave, i: &Inst, f: impl Fn(f32) -> f32) -> R {
    let z = ftz(w);
    let a = src32(w, i, 0, z)?;
    let (o, c) = (omod(i), i.has(flag::CLAMP));
    let mut d = [0u32; LANES];
    for l in 0..LANES {
        d[l] = post32(f(f32::from_bits(a[l])), o, c, z);
    }
    out32(w, i, &d)
}

fn f2(w: &mut Wave, i: &Inst, f: impl Fn(f32, f32) -> f32) -> R {
    let z = ftz(w);
    let a = src32(w, i, 0, z)?;
    let b = src32(w, i, 1, z)?;
    let (o, c) = (omod(i), i.has(flag::CLAMP));
    let mut d = [0u32; LANES];
    if o == 0 && !c && !z {
        for l in 0..LANES {
            d[l] = f(f32::from_bits(a[l]), f32::from_bits(b[l])).to_bits();
        }
    } else {
        for l in 0..LANES {
            d[l] = post32(f(f32::from_bits(a[l]), f32::from_bits(b[l])), o, c, z);
        }
    }
    out32(w, i, &d)
}

fn f3(w: &mut Wave, i: &Inst, c3: [u32; LANES], f: impl Fn(f32, f32, f32) -> f32) -> R {
    let z = ftz(w);
    let a = src32(w, i, 0, z)?;
    let b = src32(w, i, 1, z)?;
    let (o, c) = (omod(i), i.has(flag::CLAMP));
    let mut d = [0u32; LANES];
    for l in 0..LANES {
        let r = f(f32::from_bits(a[l]), f32::from_bits(b[l]), f32::from_bits(c3[l]));
        d[l] = post32(r, o, c, z);
    }
    out32(w, i, &d)
}

/// Third f32 source: `src[2]` with modifiers.
fn third(w: &Wave, i: &Inst) -> Result<[u32; LANES], WaveFault> {
    src32(w, i, 2, ftz(w))
}

/// The destination's current value (the accumulator of `v_mac_f32`/`v_fmac_f32`).
fn acc32(w: &Wave, i: &Inst) -> Result<[u32; LANES], WaveFault> {
    Ok(*w.vgpr(i, usize::from(i.dst))?)
}

fn d1(w: &mut Wave, i: &Inst, f: impl Fn(f64) -> f64) -> R {
    let a = src64(w, i, 0)?;
    let (o, c) = (omod(i), i.has(flag::CLAMP));
    let mut d = [0u64; LANES];
    for l in 0..LANES {
        d[l] = post64(f(f64::from_bits(a[l])), o, c);
    }
    out64(w, i, &d)
}

fn d2(w: &mut Wave, i: &Inst, f: impl Fn(f64, f64) -> f64) -> R {
    let a = src64(w, i, 0)?;
    let b = src64(w, i, 1)?;
    let (o, c) = (omod(i), i.has(flag::CLAMP));
    let mut d = [0u64; LANES];
    for l in 0..LANES {
        d[l] = post64(f(f64::from_bits(a[l]), f64::from_bits(b[l])), o, c);
    }
    out64(w, i, &d)
}

fn d3(w: &mut Wave, i: &Inst, c3: [u64; LANES], f: impl Fn(f64, f64, f64) -> f64) -> R {
    let a = src64(w, i, 0)?;
    let b = src64(w, i, 1)?;
    let (o, c) = (omod(i), i.has(flag::CLAMP));
    let mut d = [0u64; LANES];
    for l in 0..LANES {
        d[l] = post64(f(f64::from_bits(a[l]), f64::from_bits(b[l]), f64::from_bits(c3[l])), o, c);
    }
    out64(w, i, &d)
}

/// f32 source to a 32-bit integer result.
fn to_int(w: &mut Wave, i: &Inst, f: impl Fn(f32) -> u32) -> R {
    let a = src32(w, i, 0, ftz(w))?;
    let mut d = [0u32; LANES];
    for l in 0..LANES {
        d[l] = f(f32::from_bits(a[l]));
    }
    out32(w, i, &d)
}

/// f64 source to a 32-bit result.
fn d_to_32(w: &mut Wave, i: &Inst, f: impl Fn(f64) -> u32) -> R {
    let a = src64(w, i, 0)?;
    let mut d = [0u32; LANES];
    for l in 0..LANES {
        d[l] = f(f64::from_bits(a[l]));
    }
    out32(w, i, &d)
}

/// 32-bit source (integer, or f32 with its modifiers when `float`) to an f64 result.
fn to_f64(w: &mut Wave, i: &Inst, float: bool, f: impl Fn(u32) -> f64) -> R {
    let a = if float { src32(w, i, 0, ftz(w))? } else { w.lanes(i, i.src[0])? };
    let (o, c) = (omod(i), i.has(flag::CLAMP));
    let mut d = [0u64; LANES];
    for l in 0..LANES {
        d[l] = post64(f(a[l]), o, c);
    }
    out64(w, i, &d)
}

/// Integer source (or an f16 in the low half, with its modifiers applied to bit 15, when
/// `half`) to an f32 result.
fn int_to_f32(w: &mut Wave, i: &Inst, half: bool, f: impl Fn(u32) -> f32) -> R {
    let mut a = w.lanes(i, i.src[0])?;
    if half && i.abs | i.neg != 0 {
        let (clear, flip) =
            (if i.abs & 1 != 0 { !0x8000 } else { u32::MAX }, u32::from(i.neg & 1) << 15);
        for v in &mut a {
            *v = (*v & clear) ^ flip;
        }
    }
    let (o, c, z) = (omod(i), i.has(flag::CLAMP), ftz(w));
    let mut d = [0u32; LANES];
    for l in 0..LANES {
        d[l] = post32(f(a[l]), o, c, z);
    }
    out32(w, i, &d)
}

/// IEEE minNum/maxNum as the hardware does them: a NaN operand yields the other, -0 < +0.
fn fmin(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a < b || (a == b && a.is_sign_negative()) {
        a
    } else {
        b
    }
}

fn fmax(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a > b || (a == b && a.is_sign_positive()) {
        a
    } else {
        b
    }
}

fn dmin(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a < b || (a == b && a.is_sign_negative()) {
        a
    } else {
        b
    }
}

fn dmax(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a > b || (a == b && a.is_sign_positive()) {
        a
    } else {
        b
    }
}

fn med3f(a: f32, b: f32, c: f32) -> f32 {
    if a.is_nan() || b.is_nan() || c.is_nan() {
        return fmin(fmin(a, b), c);
    }
    fmax(fmin(a, b), fmin(fmax(a, b), c))
}

/// `x * 2^n`, rounded once.
pub(super) fn ldexp64(x: f64, n: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let mut n = n.clamp(-2300, 2300);
    let mut y = x;
    while n > 1023 {
        y *= f64::from_bits(0x7FE0_0000_0000_0000); // 2^1023
        n -= 1023;
    }
    while n < -1022 {
        // Keep the intermediate normal: scale by 2^-969 (= -1022 + 53) steps.
        y *= f64::from_bits(0x0360_0000_0000_0000); // 2^-969
        n += 969;
    }
    y * f64::from_bits(((i64::from(n) + 1023) as u64) << 52)
}

fn ldexp32(x: f32, n: i32) -> f32 {
    // Exact in f64 for every f32 and the exponents that matter, then one rounding to f32.
    ldexp64(f64::from(x), n.clamp(-400, 400)) as f32
}

fn frexp_exp32(x: f32) -> i32 {
    if x == 0.0 || !x.is_finite() {
        return 0;
    }
    let b = x.to_bits();
    let e = ((b >> 23) & 0xFF) as i32;
    if e == 0 {
        // Denormal: normalise.
        // x = m * 2^-149 = (m / 2^len) * 2^(len - 149).
        -117 - (b & 0x7F_FFFF).leading_zeros() as i32
    } else {
        e - 126
    }
}

fn frexp_mant32(x: f32) -> f32 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    ldexp32(x, -frexp_exp32(x))
}

fn frexp_exp64(x: f64) -> i32 {
    if x == 0.0 || !x.is_finite() {
        return 0;
    }
    let b = x.to_bits();
    let e = ((b >> 52) & 0x7FF) as i32;
    if e == 0 {
        // x = m * 2^-1074 = (m / 2^len) * 2^(len - 1074).
        -1010 - (b & 0xF_FFFF_FFFF_FFFF).leading_zeros() as i32
    } else {
        e - 1022
    }
}

fn frexp_mant64(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    ldexp64(x, -frexp_exp64(x))
}

fn fract32(x: f32) -> f32 {
    if x.is_infinite() {
        return f32::NAN;
    }
    (x - x.floor()).min(f32::from_bits(0x3F7F_FFFF))
}

fn fract64(x: f64) -> f64 {
    if x.is_infinite() {
        return f64::NAN;
    }
    (x - x.floor()).min(f64::from_bits(0x3FEF_FFFF_FFFF_FFFF))
}

/// IEEE half to single.
#[must_use]
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let e = u32::from((h >> 10) & 0x1F);
    let m = u32::from(h & 0x3FF);
    let bits = match (e, m) {
        (0, 0) => sign,
        (0, _) => {
            // Denormal half: m * 2^-24, exact in f32.
            let v = m as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -v } else { v };
        }
        (31, 0) => sign | 0x7F80_0000,
        (31, _) => sign | 0x7FC0_0000 | m << 13,
        _ => sign | (e + 112) << 23 | m << 13,
    };
    f32::from_bits(bits)
}

/// IEEE single to half, rounding to nearest even.
#[must_use]
pub(crate) fn f32_to_f16(f: f32) -> u16 {
    let b = f.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    if f.is_nan() {
        return sign | 0x7E00;
    }
    let a = f.abs();
    if a >= 65520.0 {
        return sign | 0x7C00;
    }
    if a < f32::from_bits(0x3880_0000) {
        // Below 2^-14: a half denormal (or zero), m * 2^-24.
        let m = (a * 16_777_216.0).round_ties_even() as u16;
        return sign | m;
    }
    let e = ((b >> 23) & 0xFF) as i32 - 127 + 15;
    let m = b & 0x7F_FFFF;
    let mut h = ((e as u32) << 10) | (m >> 13);
    let rest = m & 0x1FFF;
    if rest > 0x1000 || (rest == 0x1000 && h & 1 != 0) {
        h += 1;
    }
    sign | h as u16
}

fn exp32(x: f32) -> i32 {
    ((x.to_bits() >> 23) & 0xFF) as i32
}

fn exp64(x: f64) -> i32 {
    ((x.to_bits() >> 52) & 0x7FF) as i32
}

fn is_denorm32(x: f32) -> bool {
    x != 0.0 && x.is_subnormal()
}

/// `v_div_scale_f32`: `(d, vcc)` for value `s0`, denominator `s1`, numerator `s2`.
fn div_scale32(s0: f32, s1: f32, s2: f32) -> (f32, bool) {
    if s2 == 0.0 || s1 == 0.0 {
        return (f32::NAN, false);
    }
    if exp32(s2) - exp32(s1) >= 96 {
        return (if s0 == s1 { ldexp32(s0, 64) } else { s0 }, true);
    }
    if is_denorm32(s1) {
        return (ldexp32(s0, 64), false);
    }
    let (inv, quo) = (1.0 / s1, s2 / s1);
    if is_denorm32(inv) && is_denorm32(quo) {
        return (if s0 == s1 { ldexp32(s0, 64) } else { s0 }, true);
    }
    if is_denorm32(inv) {
        return (ldexp32(s0, -64), false);
    }
    if is_denorm32(quo) {
        return (if s0 == s2 { ldexp32(s0, 64) } else { s0 }, true);
    }
    if exp32(s2) <= 23 {
        return (ldexp32(s0, 64), false);
    }
    (s0, false)
}

fn div_scale64(s0: f64, s1: f64, s2: f64) -> (f64, bool) {
    let den = |x: f64| x != 0.0 && x.is_subnormal();
    if s2 == 0.0 || s1 == 0.0 {
        return (f64::NAN, false);
    }
    if exp64(s2) - exp64(s1) >= 768 {
        return (if s0 == s1 { ldexp64(s0, 128) } else { s0 }, true);
    }
    if den(s1) {
        return (ldexp64(s0, 128), false);
    }
    let (inv, quo) = (1.0 / s1, s2 / s1);
    if den(inv) && den(quo) {
        return (if s0 == s1 { ldexp64(s0, 128) } else { s0 }, true);
    }
    if den(inv) {
        return (ldexp64(s0, -128), false);
    }
    if den(quo) {
        return (if s0 == s2 { ldexp64(s0, 128) } else { s0 }, true);
    }
    if exp64(s2) <= 53 {
        return (ldexp64(s0, 128), false);
    }
    (s0, false)
}

/// `v_div_fixup_f32`: quotient `s0`, denominator `s1`, numerator `s2`.
fn div_fixup32(s0: f32, s1: f32, s2: f32) -> f32 {
    let neg = s1.is_sign_negative() != s2.is_sign_negative();
    let signed = |v: f32| if neg { -v } else { v };
    if s2.is_nan() {
        f32::from_bits(s2.to_bits() | 0x40_0000)
    } else if s1.is_nan() {
        f32::from_bits(s1.to_bits() | 0x40_0000)
    } else if (s1 == 0.0 && s2 == 0.0) || (s1.is_infinite() && s2.is_infinite()) {
        f32::from_bits(0xFFC0_0000)
    } else if s1 == 0.0 || s2.is_infinite() {
        signed(f32::INFINITY)
    } else if s1.is_infinite() || s2 == 0.0 || exp32(s2) - exp32(s1) < -150 {
        signed(0.0)
    } else if exp32(s1) == 255 {
        signed(f32::INFINITY)
    } else {
        signed(s0.abs())
    }
}

fn div_fixup64(s0: f64, s1: f64, s2: f64) -> f64 {
    let neg = s1.is_sign_negative() != s2.is_sign_negative();
    let signed = |v: f64| if neg { -v } else { v };
    if s2.is_nan() {
        f64::from_bits(s2.to_bits() | 0x8_0000_0000_0000)
    } else if s1.is_nan() {
        f64::from_bits(s1.to_bits() | 0x8_0000_0000_0000)
    } else if (s1 == 0.0 && s2 == 0.0) || (s1.is_infinite() && s2.is_infinite()) {
        f64::from_bits(0xFFF8_0000_0000_0000)
    } else if s1 == 0.0 || s2.is_infinite() {
        signed(f64::INFINITY)
    } else if s1.is_infinite() || s2 == 0.0 || exp64(s2) - exp64(s1) < -1075 {
        signed(0.0)
    } else if exp64(s1) == 2047 {
        signed(f64::INFINITY)
    } else {
        signed(s0.abs())
    }
}

fn div_scale(w: &mut Wave, i: &Inst) -> R {
    let exec = w.exec();
    let mut vcc = 0u64;
    if i.op == Op::VDivScaleF32 {
        let (a, b, c) = (src32(w, i, 0, false)?, src32(w, i, 1, false)?, src32(w, i, 2, false)?);
        let mut d = [0u32; LANES];
        for l in 0..LANES {
            let (r, v) =
                div_scale32(f32::from_bits(a[l]), f32::from_bits(b[l]), f32::from_bits(c[l]));
            d[l] = r.to_bits();
            vcc |= u64::from(v) << l;
        }
        out32(w, i, &d)?;
    } else {
        let (a, b, c) = (src64(w, i, 0)?, src64(w, i, 1)?, src64(w, i, 2)?);
        let mut d = [0u64; LANES];
        for l in 0..LANES {
            let (r, v) =
                div_scale64(f64::from_bits(a[l]), f64::from_bits(b[l]), f64::from_bits(c[l]));
            d[l] = r.to_bits();
            vcc |= u64::from(v) << l;
        }
        out64(w, i, &d)?;
    }
    let dst = if i.has(flag::SDST) { i.sdst } else { VCC_LO };
    w.set_s64(dst, vcc & exec);
    Ok(())
}

fn div_fmas(w: &mut Wave, i: &Inst) -> R {
    // Lanes with VCC set were scaled by `v_div_scale`: undo by 2^±64 (f32) or 2^±128 (f64),
    // up when the quotient estimate (the third source) is at least 1.
    let vcc = w.vcc();
    if i.op == Op::VDivFmasF32 {
        let z = ftz(w);
        let (a, b, c) = (src32(w, i, 0, z)?, src32(w, i, 1, z)?, src32(w, i, 2, z)?);
        let (o, cl) = (omod(i), i.has(flag::CLAMP));
        let mut d = [0u32; LANES];
        for l in 0..LANES {
            let s2 = f32::from_bits(c[l]);
            let mut r = f32::from_bits(a[l]).mul_add(f32::from_bits(b[l]), s2);
            if vcc >> l & 1 != 0 {
                r = ldexp32(r, if exp32(s2) >= 127 { 64 } else { -64 });
            }
            d[l] = post32(r, o, cl, z);
        }
        out32(w, i, &d)
    } else {
        let (a, b, c) = (src64(w, i, 0)?, src64(w, i, 1)?, src64(w, i, 2)?);
        let (o, cl) = (omod(i), i.has(flag::CLAMP));
        let mut d = [0u64; LANES];
        for l in 0..LANES {
            let s2 = f64::from_bits(c[l]);
            let mut r = f64::from_bits(a[l]).mul_add(f64::from_bits(b[l]), s2);
            if vcc >> l & 1 != 0 {
                r = ldexp64(r, if exp64(s2) >= 1023 { 128 } else { -128 });
            }
            d[l] = post64(r, o, cl);
        }
        out64(w, i, &d)
    }
}

/// Floating-point vector operations; `None` when `i` is not one.
pub(super) fn vfloat(w: &mut Wave, i: &Inst) -> Option<R> {
    Some(match i.op {
        Op::VAddF32 => f2(w, i, |a, b| a + b),
        Op::VSubF32 => f2(w, i, |a, b| a - b),
        Op::VSubrevF32 => f2(w, i, |a, b| b - a),
        Op::VMulF32 => f2(w, i, |a, b| a * b),
        Op::VMulLegacyF32 => f2(w, i, |a, b| if a == 0.0 || b == 0.0 { 0.0 } else { a * b }),
        Op::VMinF32 => f2(w, i, fmin),
        Op::VMaxF32 => f2(w, i, fmax),
        Op::VLdexpF32 => {
            let z = ftz(w);
            let (a, b) = match (src32(w, i, 0, z), w.lanes(i, i.src[1])) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(e), _) | (_, Err(e)) => return Some(Err(e)),
            };
            let (o, c) = (omod(i), i.has(flag::CLAMP));
            let mut d = [0u32; LANES];
            for l in 0..LANES {
                d[l] = post32(ldexp32(f32::from_bits(a[l]), b[l] as i32), o, c, z);
            }
            out32(w, i, &d)
        }
        Op::VMacF32 => acc32(w, i).and_then(|c| f3(w, i, c, |a, b, c| a * b + c)),
        Op::VFmacF32 => acc32(w, i).and_then(|c| f3(w, i, c, f32::mul_add)),
        Op::VMadmkF32 | Op::VFmamkF32 => {
            // D = S0 * K + S1: the second source is the addend.
            let k = f32::from_bits(i.lit);
            let fused = i.op == Op::VFmamkF32;
            f3(w, i, [0; LANES], move |a, b, _| if fused { a.mul_add(k, b) } else { a * k + b })
        }
        Op::VMadakF32 | Op::VFmaakF32 => {
            let k = f32::from_bits(i.lit);
            let fused = i.op == Op::VFmaakF32;
            f3(w, i, [i.lit; LANES], move |a, b, _| if fused { a.mul_add(b, k) } else { a * b + k })
        }
        Op::VMadF32 => third(w, i).and_then(|c| f3(w, i, c, |a, b, c| a * b + c)),
        Op::VFmaF32 => third(w, i).and_then(|c| f3(w, i, c, f32::mul_add)),
        Op::VMin3F32 => third(w, i).and_then(|c| f3(w, i, c, |a, b, c| fmin(fmin(a, b), c))),
        Op::VMax3F32 => third(w, i).and_then(|c| f3(w, i, c, |a, b, c| fmax(fmax(a, b), c))),
        Op::VMed3F32 => third(w, i).and_then(|c| f3(w, i, c, med3f)),
        Op::VDivFixupF32 => third(w, i).and_then(|c| f3(w, i, c, div_fixup32)),
        Op::VDivScaleF32 | Op::VDivScaleF64 => div_scale(w, i),
        Op::VDivFmasF32 | Op::VDivFmasF64 => div_fmas(w, i),
        Op::VFractF32 => f1(w, i, fract32),
        Op::VTruncF32 => f1(w, i, f32::trunc),
        Op::VCeilF32 => f1(w, i, f32::ceil),
        Op::VRndneF32 => f1(w, i, f32::round_ties_even),
        Op::VFloorF32 => f1(w, i, f32::floor),
        Op::VExpF32 => f1(w, i, f32::exp2),
        Op::VLogF32 => f1(w, i, f32::log2),
        Op::VRcpF32 | Op::VRcpIflagF32 => f1(w, i, |a| 1.0 / a),
        Op::VRsqF32 => f1(w, i, |a| 1.0 / a.sqrt()),
        Op::VSqrtF32 => f1(w, i, f32::sqrt),
        Op::VSinF32 => f1(w, i, |a| (f64::from(a) * std::f64::consts::TAU).sin() as f32),
        Op::VCosF32 => f1(w, i, |a| (f64::from(a) * std::f64::consts::TAU).cos() as f32),
        Op::VFrexpMantF32 => f1(w, i, frexp_mant32),
        Op::VFrexpExpI32F32 => to_int(w, i, |a| frexp_exp32(a) as u32),
        Op::VCvtI32F32 => to_int(w, i, |a| a as i32 as u32),
        Op::VCvtU32F32 => to_int(w, i, |a| a as u32),
        Op::VCvtRpiI32F32 => to_int(w, i, |a| (a + 0.5).floor() as i32 as u32),
        Op::VCvtFlrI32F32 => to_int(w, i, |a| a.floor() as i32 as u32),
        Op::VCvtF16F32 => to_int(w, i, |a| u32::from(f32_to_f16(a))),
        Op::VCvtF32I32 => int_to_f32(w, i, false, |a| a as i32 as f32),
        Op::VCvtF32U32 => int_to_f32(w, i, false, |a| a as f32),
        Op::VCvtF32F16 => int_to_f32(w, i, true, |a| f16_to_f32(a as u16)),
        Op::VCvtF32Ubyte0 => int_to_f32(w, i, false, |a| (a & 0xFF) as f32),
        Op::VCvtF32Ubyte1 => int_to_f32(w, i, false, |a| (a >> 8 & 0xFF) as f32),
        Op::VCvtF32Ubyte2 => int_to_f32(w, i, false, |a| (a >> 16 & 0xFF) as f32),
        Op::VCvtF32Ubyte3 => int_to_f32(w, i, false, |a| (a >> 24) as f32),
        Op::VCvtF64I32 => to_f64(w, i, false, |a| f64::from(a as i32)),
        Op::VCvtF64U32 => to_f64(w, i, false, f64::from),
        Op::VCvtF64F32 => to_f64(w, i, true, |a| f64::from(f32::from_bits(a))),
        Op::VCvtI32F64 => d_to_32(w, i, |a| a as i32 as u32),
        Op::VCvtU32F64 => d_to_32(w, i, |a| a as u32),
        Op::VCvtF32F64 => d_to_32(w, i, |a| (a as f32).to_bits()),
        Op::VFrexpExpI32F64 => d_to_32(w, i, |a| frexp_exp64(a) as u32),
        Op::VAddF64 => d2(w, i, |a, b| a + b),
        Op::VMulF64 => d2(w, i, |a, b| a * b),
        Op::VMinF64 => d2(w, i, dmin),
        Op::VMaxF64 => d2(w, i, dmax),
        Op::VLdexpF64 => {
            let (a, b) = match (src64(w, i, 0), w.lanes(i, i.src[1])) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(e), _) | (_, Err(e)) => return Some(Err(e)),
            };
            let mut d = [0u64; LANES];
            for l in 0..LANES {
                d[l] = ldexp64(f64::from_bits(a[l]), b[l] as i32).to_bits();
            }
            out64(w, i, &d)
        }
        Op::VFmaF64 => src64(w, i, 2).and_then(|c| d3(w, i, c, f64::mul_add)),
        Op::VFmacF64 => w
            .lanes64(i, super::super::inst::VGPR + i.dst, Kind64::F)
            .and_then(|c| d3(w, i, c, f64::mul_add)),
        Op::VDivFixupF64 => src64(w, i, 2).and_then(|c| d3(w, i, c, div_fixup64)),
        Op::VTruncF64 => d1(w, i, f64::trunc),
        Op::VCeilF64 => d1(w, i, f64::ceil),
        Op::VRndneF64 => d1(w, i, f64::round_ties_even),
        Op::VFloorF64 => d1(w, i, f64::floor),
        Op::VFractF64 => d1(w, i, fract64),
        Op::VRcpF64 => d1(w, i, |a| 1.0 / a),
        Op::VRsqF64 => d1(w, i, |a| 1.0 / a.sqrt()),
        Op::VSqrtF64 => d1(w, i, f64::sqrt),
        Op::VFrexpMantF64 => d1(w, i, frexp_mant64),
        _ => return None,
    })
}
