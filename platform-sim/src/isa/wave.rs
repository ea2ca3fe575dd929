//! One wave's architectural state: the scalar register file (SGPRs and the special registers
//! at their operand codes: FLAT_SCRATCH, XNACK_MASK, VCC, TTMP0-15, M0, EXEC), the vector
//! registers (VGPRs and, on gfx90a/gfx942, AGPRs) as 64-lane arrays, SCC, the program counter
//! and the hardware registers `s_getreg`/`s_setreg` reach; and the reading of source operands
//! (registers, inline constants, the literal, the aperture constants).

use super::fault::WaveFault;
use super::inst::{EXEC_LO, Inst, LITERAL, VCC_LO, VGPR};
use super::limits::{LANES, MAX_AGPRS, MAX_VGPRS, SGPR_FILE};

/// A 32-bit vector source: a VGPR's lanes, or one value for every lane.
#[derive(Debug, Clone, Copy)]
pub enum Lanes<'a> {
    /// A VGPR.
    V(&'a [u32; LANES]),
    /// A scalar, constant or literal.
    S(u32),
}

impl Lanes<'_> {
    /// Lane `l`'s value.
    #[inline(always)]
    #[must_use]
    pub fn at(&self, l: usize) -> u32 {
        match self {
            Self::V(r) => r[l],
            Self::S(v) => *v,
        }
    }
}

/// A 64-bit vector source: a VGPR pair's lanes, or one value for every lane.
#[derive(Debug, Clone, Copy)]
pub enum Lanes64<'a> {
    /// A VGPR pair (low, high).
    V(&'a [u32; LANES], &'a [u32; LANES]),
    /// A scalar, constant or literal.
    S(u64),
}

impl Lanes64<'_> {
    /// Lane `l`'s value.
    #[inline(always)]
    #[must_use]
    pub fn at(&self, l: usize) -> u64 {
        match self {
            Self::V(lo, hi) => u64::from(lo[l]) | u64::from(hi[l]) << 32,
            Self::S(v) => *v,
        }
    }
}

/// What a wave is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaveState {
    /// Ready to execute.
    Running,
    /// Waiting at `s_barrier` for the rest of its work-group.
    Barrier,
    /// Waiting on a GWS semaphore (`ds_gws_sema_p`) of this resource.
    Gws(u32),
    /// Waiting at the GWS barrier (`ds_gws_barrier`) of resource `id` until its round
    /// `round` completes.
    GwsBarrier {
        /// The resource.
        id: u32,
        /// The round the wave arrived in.
        round: u32,
    },
    /// Stopped by `s_sethalt` (resumed by nothing in the model).
    Halted,
    /// Finished (`s_endpgm`).
    Done,
}

/// How a 64-bit source takes a 32-bit literal or float inline constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind64 {
    /// Unsigned integer or bits: the literal is zero-extended.
    U,
    /// Signed integer: the literal is sign-extended.
    I,
    /// Double: the literal is the high dword; inline constants are doubles.
    F,
}

/// The aperture bases the `src_shared_base`/`src_private_base` operands read, and that
/// FLAT instructions decode generic addresses with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Apertures {
    /// Base of the LDS aperture (4 GiB).
    pub shared: u64,
    /// Base of the private (scratch) aperture (4 GiB).
    pub private: u64,
}

/// Hardware registers of `s_getreg_b32`/`s_setreg_b32` that have state in the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HwRegs {
    /// `HW_REG_MODE`: rounding and denormal modes, DX10 clamp, IEEE, exception enables.
    pub mode: u32,
    /// `HW_REG_TRAPSTS`.
    pub trapsts: u32,
    /// `HW_REG_IB_STS`.
    pub ib_sts: u32,
    /// `HW_REG_HW_ID` (read-only).
    pub hw_id: u32,
    /// `HW_REG_GPR_ALLOC` (read-only).
    pub gpr_alloc: u32,
    /// `HW_REG_LDS_ALLOC` (read-only).
    pub lds_alloc: u32,
    /// `STATUS.PRIV`: executing the trap handler.
    pub privileged: bool,
    /// `STATUS.TRAP_EN`: a trap handler is present.
    pub trap_en: bool,
}

/// One wave of 64 lanes.
#[derive(Debug, Clone)]
pub struct Wave {
    /// Scalar registers by operand code: `s0`-`s101`, then `flat_scratch` (102-103),
    /// `xnack_mask` (104-105), `vcc` (106-107), `ttmp0`-`ttmp15` (108-123), `m0` (124), 125
    /// unused, `exec` (126-127).
    pub s: [u32; SGPR_FILE],
    /// Vector registers: `v[n][lane]`.
    pub v: Vec<[u32; LANES]>,
    /// Accumulation registers (gfx90a, gfx942): `a[n][lane]`.
    pub a: Vec<[u32; LANES]>,
    /// Address of the next instruction.
    pub pc: u64,
    /// The scalar condition code.
    pub scc: bool,
    /// Hardware registers.
    pub hw: HwRegs,
    /// What the wave is doing.
    pub state: WaveState,
    /// Aperture bases.
    pub apertures: Apertures,
    /// Instructions executed so far.
    pub executed: u64,
    /// Sources of an SDWA instruction after their sub-dword selection, read as the VGPRs
    /// past the file ([`SDWA_TEMP`]).
    pub sdwa: [[u32; LANES]; 2],
}

/// The register number the first [`Wave::sdwa`] source reads as (the second is one up).
pub const SDWA_TEMP: usize = MAX_VGPRS;

impl Wave {
    /// A wave with `vgprs` VGPRs and `agprs` AGPRs, all registers zero.
    #[must_use]
    pub fn new(vgprs: usize, agprs: usize, apertures: Apertures) -> Self {
        Wave {
            s: [0; SGPR_FILE],
            v: vec![[0; LANES]; vgprs],
            a: vec![[0; LANES]; agprs],
            pc: 0,
            scc: false,
            hw: HwRegs::default(),
            state: WaveState::Running,
            apertures,
            executed: 0,
            sdwa: [[0; LANES]; 2],
        }
    }

    /// Resets the registers for a new wave with the given register counts, reusing storage.
    pub fn reset(&mut self, vgprs: usize, agprs: usize, apertures: Apertures) {
        self.s = [0; SGPR_FILE];
        self.v.clear();
        self.v.resize(vgprs, [0; LANES]);
        self.a.clear();
        self.a.resize(agprs, [0; LANES]);
        self.pc = 0;
        self.scc = false;
        self.hw = HwRegs::default();
        self.state = WaveState::Running;
        self.apertures = apertures;
        self.executed = 0;
    }

    /// EXEC.
    #[inline]
    #[must_use]
    pub fn exec(&self) -> u64 {
        self.s64(EXEC_LO)
    }

    /// Sets EXEC.
    #[inline]
    pub fn set_exec(&mut self, v: u64) {
        self.set_s64(EXEC_LO, v);
    }

    /// VCC.
    #[inline]
    #[must_use]
    pub fn vcc(&self) -> u64 {
        self.s64(VCC_LO)
    }

    /// The 64-bit scalar register pair at code `c` (`c` below 127).
    #[inline]
    #[must_use]
    pub fn s64(&self, c: u16) -> u64 {
        let c = usize::from(c) & (SGPR_FILE - 2);
        u64::from(self.s[c]) | u64::from(self.s[c + 1]) << 32
    }

    /// Writes the 64-bit scalar register pair at code `c`.
    #[inline]
    pub fn set_s64(&mut self, c: u16, v: u64) {
        let c = usize::from(c) & (SGPR_FILE - 2);
        self.s[c] = v as u32;
        self.s[c + 1] = (v >> 32) as u32;
    }

    /// Writes the scalar register at code `c` (a write to a code that names no register is
    /// dropped, as the hardware drops it).
    #[inline]
    pub fn set_s32(&mut self, c: u16, v: u32) {
        if let Some(r) = self.s.get_mut(usize::from(c)) {
            *r = v;
        }
    }

    /// The value a 32-bit scalar source reads (also the uniform value of a vector source that
    /// is not a VGPR).
    ///
    /// # Errors
    /// An operand fault ([`super::FaultKind::Operand`]) for a code that names nothing (reserved codes, VGPRs where only
    /// scalars are allowed).
    #[inline(never)]
    pub fn scalar(&self, i: &Inst, c: u16) -> Result<u32, WaveFault> {
        Ok(match c {
            0..=127 => self.s[usize::from(c)],
            128..=192 => u32::from(c - 128),
            193..=208 => (-(i32::from(c) - 192)) as u32,
            235 => (self.apertures.shared >> 32) as u32,
            236 => ((self.apertures.shared + 0xFFFF_FFFF) >> 32) as u32,
            237 => (self.apertures.private >> 32) as u32,
            238 => ((self.apertures.private + 0xFFFF_FFFF) >> 32) as u32,
            240 => 0.5f32.to_bits(),
            241 => (-0.5f32).to_bits(),
            242 => 1.0f32.to_bits(),
            243 => (-1.0f32).to_bits(),
            244 => 2.0f32.to_bits(),
            245 => (-2.0f32).to_bits(),
            246 => 4.0f32.to_bits(),
            247 => (-4.0f32).to_bits(),
            248 => 0x3E22_F983, // 1 / (2 * pi)
            251 => u32::from(self.vcc() == 0),
            252 => u32::from(self.exec() == 0),
            253 => u32::from(self.scc),
            LITERAL => i.lit,
            _ => return Err(WaveFault::operand(i, c)),
        })
    }

    /// The value a 64-bit scalar source reads.
    ///
    /// # Errors
    /// As [`Wave::scalar`].
    #[inline(never)]
    pub fn scalar64(&self, i: &Inst, c: u16, kind: Kind64) -> Result<u64, WaveFault> {
        Ok(match c {
            0..=126 => self.s64(c),
            128..=208 => i64::from(self.scalar(i, c)? as i32) as u64,
            235 => self.apertures.shared,
            236 => self.apertures.shared + 0xFFFF_FFFF,
            237 => self.apertures.private,
            238 => self.apertures.private + 0xFFFF_FFFF,
            240..=248 if kind == Kind64::F => {
                let f = match c {
                    240 => 0.5,
                    241 => -0.5,
                    242 => 1.0,
                    243 => -1.0,
                    244 => 2.0,
                    245 => -2.0,
                    246 => 4.0,
                    247 => -4.0,
                    _ => 0.159_154_943_091_895_34f64,
                };
                f64::to_bits(f)
            }
            LITERAL => match kind {
                Kind64::U => u64::from(i.lit),
                Kind64::I => i64::from(i.lit as i32) as u64,
                Kind64::F => u64::from(i.lit) << 32,
            },
            _ => u64::from(self.scalar(i, c)?),
        })
    }

    /// VGPR `n` (a register number, not an operand code). A register past the wave's
    /// allocation (the hardware does not check) reads zero until written; the numbers from
    /// [`SDWA_TEMP`] read the selected SDWA sources.
    ///
    /// # Errors
    /// A register fault when `n` is past the largest register file.
    #[inline]
    pub fn vgpr(&self, i: &Inst, n: usize) -> Result<&[u32; LANES], WaveFault> {
        match self.v.get(n) {
            Some(r) => Ok(r),
            None if n < MAX_VGPRS => Ok(&ZERO_LANES),
            None => self
                .sdwa
                .get(n - SDWA_TEMP)
                .ok_or_else(|| WaveFault::register(i, 'v', n, MAX_VGPRS)),
        }
    }

    /// VGPR `n`, to write (growing the file up to the largest).
    ///
    /// # Errors
    /// As [`Wave::vgpr`].
    #[inline(never)]
    pub fn vgpr_mut(&mut self, i: &Inst, n: usize) -> Result<&mut [u32; LANES], WaveFault> {
        grow(&mut self.v, n, MAX_VGPRS).ok_or_else(|| WaveFault::register(i, 'v', n, MAX_VGPRS))
    }

    /// Vector register `n` of the VGPR file, or of the AGPR file when `acc`.
    ///
    /// # Errors
    /// As [`Wave::vgpr`].
    #[inline]
    pub fn reg(&self, i: &Inst, n: usize, acc: bool) -> Result<&[u32; LANES], WaveFault> {
        if acc {
            match self.a.get(n) {
                Some(r) => Ok(r),
                None if n < MAX_AGPRS => Ok(&ZERO_LANES),
                None => Err(WaveFault::register(i, 'a', n, MAX_AGPRS)),
            }
        } else {
            self.vgpr(i, n)
        }
    }

    /// As [`Wave::reg`], to write.
    ///
    /// # Errors
    /// As [`Wave::vgpr`].
    #[inline(never)]
    pub fn reg_mut(
        &mut self,
        i: &Inst,
        n: usize,
        acc: bool,
    ) -> Result<&mut [u32; LANES], WaveFault> {
        if acc {
            grow(&mut self.a, n, MAX_AGPRS).ok_or_else(|| WaveFault::register(i, 'a', n, MAX_AGPRS))
        } else {
            self.vgpr_mut(i, n)
        }
    }

    /// A 32-bit vector source, borrowed.
    ///
    /// # Errors
    /// As [`Wave::scalar`] and [`Wave::vgpr`].
    #[inline]
    pub fn src(&self, i: &Inst, c: u16) -> Result<Lanes<'_>, WaveFault> {
        if c >= VGPR {
            Ok(Lanes::V(self.vgpr(i, usize::from(c - VGPR))?))
        } else {
            Ok(Lanes::S(self.scalar(i, c)?))
        }
    }

    /// A 32-bit vector source as 64 lanes: the VGPR's, borrowed, or `buf` filled with the
    /// scalar value. (One loop shape for both kinds of source keeps each operation's code
    /// small.)
    ///
    /// # Errors
    /// As [`Wave::src`].
    #[inline(never)]
    pub fn src_lanes<'a>(
        &'a self,
        i: &Inst,
        c: u16,
        buf: &'a mut [u32; LANES],
    ) -> Result<&'a [u32; LANES], WaveFault> {
        if c >= VGPR {
            self.vgpr(i, usize::from(c - VGPR))
        } else {
            *buf = [self.scalar(i, c)?; LANES];
            Ok(buf)
        }
    }

    /// A 64-bit vector source, borrowed.
    ///
    /// # Errors
    /// As [`Wave::src`].
    #[inline]
    pub fn src64(&self, i: &Inst, c: u16, kind: Kind64) -> Result<Lanes64<'_>, WaveFault> {
        if c >= VGPR {
            let n = usize::from(c - VGPR);
            Ok(Lanes64::V(self.vgpr(i, n)?, self.vgpr(i, n + 1)?))
        } else {
            Ok(Lanes64::S(self.scalar64(i, c, kind)?))
        }
    }

    /// The 64 lanes of a 32-bit vector source: the VGPR's lanes, or the scalar value in
    /// every lane.
    ///
    /// # Errors
    /// As [`Wave::scalar`] and [`Wave::vgpr`].
    #[inline(never)]
    pub fn lanes(&self, i: &Inst, c: u16) -> Result<[u32; LANES], WaveFault> {
        if c >= VGPR {
            Ok(*self.vgpr(i, usize::from(c - VGPR))?)
        } else {
            Ok([self.scalar(i, c)?; LANES])
        }
    }

    /// The 64 lanes of a 64-bit vector source (a VGPR pair or a 64-bit scalar value).
    ///
    /// # Errors
    /// As [`Wave::lanes`].
    #[inline(never)]
    pub fn lanes64(&self, i: &Inst, c: u16, kind: Kind64) -> Result<[u64; LANES], WaveFault> {
        if c >= VGPR {
            let n = usize::from(c - VGPR);
            let (lo, hi) = (self.vgpr(i, n)?, self.vgpr(i, n + 1)?);
            let mut out = [0u64; LANES];
            for l in 0..LANES {
                out[l] = u64::from(lo[l]) | u64::from(hi[l]) << 32;
            }
            Ok(out)
        } else {
            Ok([self.scalar64(i, c, kind)?; LANES])
        }
    }

    /// Writes `vals` to VGPR `n` in the lanes of `mask`.
    ///
    /// # Errors
    /// As [`Wave::vgpr`].
    #[inline(never)]
    pub fn write_lanes(
        &mut self,
        i: &Inst,
        n: usize,
        vals: &[u32; LANES],
        mask: u64,
    ) -> Result<(), WaveFault> {
        let d = self.vgpr_mut(i, n)?;
        merge(d, vals, mask);
        Ok(())
    }

    /// Writes the 64-bit `vals` to the VGPR pair at `n` in the lanes of `mask`.
    ///
    /// # Errors
    /// As [`Wave::vgpr`].
    #[inline(never)]
    pub fn write_lanes64(
        &mut self,
        i: &Inst,
        n: usize,
        vals: &[u64; LANES],
        mask: u64,
    ) -> Result<(), WaveFault> {
        let lo: [u32; LANES] = std::array::from_fn(|l| vals[l] as u32);
        let hi: [u32; LANES] = std::array::from_fn(|l| (vals[l] >> 32) as u32);
        self.vgpr(i, n + 1)?;
        self.write_lanes(i, n, &lo, mask)?;
        self.write_lanes(i, n + 1, &hi, mask)
    }
}

static ZERO_LANES: [u32; LANES] = [0; LANES];

/// Register `n` of `file`, growing the file (zeroed) when `n` is past its end but below
/// `max`.
fn grow(file: &mut Vec<[u32; LANES]>, n: usize, max: usize) -> Option<&mut [u32; LANES]> {
    if n >= max {
        return None;
    }
    if n >= file.len() {
        file.resize(n + 1, [0; LANES]);
    }
    file.get_mut(n)
}

/// `dst[l] = src[l]` for the lanes of `mask`.
#[inline]
pub fn merge(dst: &mut [u32; LANES], src: &[u32; LANES], mask: u64) {
    if mask == u64::MAX {
        *dst = *src;
    } else {
        for l in 0..LANES {
            if mask >> l & 1 != 0 {
                dst[l] = src[l];
            }
        }
    }
}

/// The lanes whose bit is set in `mask` (an EXEC mask), lowest first.
#[inline]
pub fn active_lanes(mask: u64) -> impl Iterator<Item = usize> {
    let mut m = mask;
    core::iter::from_fn(move || {
        (m != 0).then(|| {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            l
        })
    })
}
