//! Runs a test program on one wave and checks registers and memory, from a small state
//! notation: `s5=7`, `s[4:5]=0x1_0000_0000`, `v3=f:1.5` (all lanes), `v3=lane*4+0x100`
//! (per lane), `v3.7=9` (lane 7), `a2=…` (AGPR), `scc=1`, `vcc=…`, `exec=…`, `m0=…`,
//! `m:0x10000=…` (a dword of memory), `mb:…` (a byte), `mq:…` (a qword), `lds:0x10=…`
//! (an LDS dword). Values are decimal, hex (`0x`), `f:` (f32 bits) or `d:` (f64 bits).

use super::super::exec::{Cx, Device, execute};
use super::super::inst::{EXEC_LO, M0, VCC_LO};
use super::super::limits::LANES;
use super::super::memory::{TestMemory, WaveMemory};
use super::super::wave::{Apertures, Wave, WaveState};
use super::super::{CodeCache, Target, WaveFault};

/// Where test programs live.
pub(crate) const CODE: u64 = 0x100_0000;
/// A 64 KiB data region tests may use.
pub(crate) const DATA: u64 = 0x1_0000;
/// Scratch (flat scratch base) region.
pub(crate) const SCRATCH: u64 = 0x20_0000;
/// `s_endpgm`.
pub(crate) const ENDPGM: u32 = 0xBF81_0000;
/// Aperture bases of the tests (those of the simulated kernel).
pub(crate) const APERTURES: Apertures = Apertures { shared: 1 << 48, private: 2 << 48 };

/// One test case: `asm` assembled by LLVM for the targets in `targets` (1 gfx900, 2 gfx90a,
/// 4 gfx942) into `words`, run from state `init`, must end in state `expect`.
pub(crate) struct Case {
    pub(crate) asm: &'static str,
    pub(crate) targets: u8,
    pub(crate) words: &'static [u32],
    pub(crate) init: &'static str,
    pub(crate) expect: &'static str,
}

fn value(s: &str) -> u64 {
    let s = s.trim();
    if let Some(f) = s.strip_prefix("f:") {
        return u64::from(f.parse::<f32>().expect("f32").to_bits());
    }
    if let Some(f) = s.strip_prefix("d:") {
        return f.parse::<f64>().expect("f64").to_bits();
    }
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let s = s.replace('_', "");
    let v = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).expect("hex"),
        None => s.parse::<u64>().expect("decimal"),
    };
    if neg { v.wrapping_neg() } else { v }
}

/// The value of `expr` in lane `l`: a value, or `lane*K+B` / `lane*K` / `lane`.
fn lane_value(expr: &str, l: usize) -> u64 {
    if let Some(rest) = expr.strip_prefix("lane") {
        let (k, b) = match rest.split_once('+') {
            Some((m, b)) => (m, value(b)),
            None => (rest, 0),
        };
        let k = k.strip_prefix('*').map_or(1, value);
        return (l as u64).wrapping_mul(k).wrapping_add(b);
    }
    value(expr)
}

/// The register part of `v3`, `v3.7`, `a2` (not of `vcc`).
fn reg_name(k: &str) -> Option<&str> {
    let r = k.strip_prefix('v').or_else(|| k.strip_prefix('a'))?;
    r.starts_with(|c: char| c.is_ascii_digit()).then_some(r)
}

fn pair(name: &str) -> Option<(usize, usize)> {
    let inner = name.strip_prefix("s[")?.strip_suffix(']')?;
    let (a, b) = inner.split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// `v[a:b]` or `v[a:b].lane`: the pair's first register and the lane, if one.
fn vpair(name: &str) -> Option<(usize, Option<usize>)> {
    let (regs, lane) = match name.split_once("].") {
        Some((r, l)) => (r, Some(l.parse().ok()?)),
        None => (name.strip_suffix(']')?, None),
    };
    let (a, _) = regs.strip_prefix("v[")?.split_once(':')?;
    Some((a.parse().ok()?, lane))
}

/// The state a program runs in and ends in.
pub(crate) struct World {
    pub(crate) wave: Wave,
    pub(crate) mem: TestMemory,
    pub(crate) lds: Vec<u8>,
    pub(crate) dev: Device,
}

impl World {
    pub(crate) fn new(program: &[u32]) -> Self {
        let mut mem = TestMemory::new();
        let mut code = program.to_vec();
        code.push(ENDPGM);
        code.resize(1024, ENDPGM);
        mem.map_words(CODE, &code);
        mem.map(DATA, 64 << 10);
        mem.map(SCRATCH, 1 << 20);
        let mut wave = Wave::new(32, 8, APERTURES);
        wave.pc = CODE;
        wave.set_s64(EXEC_LO, u64::MAX);
        // Denormals kept (FLOAT_MODE 0xF0), IEEE on.
        wave.hw.mode = 0xF0 | 1 << 9;
        World { wave, mem, lds: vec![0; 64 << 10], dev: Device::default() }
    }

    pub(crate) fn set(&mut self, spec: &str) {
        for item in spec.split_whitespace() {
            let (k, v) = item.split_once('=').unwrap_or_else(|| panic!("bad item {item}"));
            let w = &mut self.wave;
            if let Some((a, b)) = pair(k) {
                assert_eq!(b, a + 1, "{k}");
                w.set_s64(a as u16, value(v));
            } else if let Some((a, lane)) = vpair(k) {
                assert!(lane.is_none(), "{k}: set pairs in every lane");
                if w.v.len() <= a + 1 {
                    w.v.resize(a + 2, [0; LANES]);
                }
                for l in 0..LANES {
                    let x = lane_value(v, l);
                    w.v[a][l] = x as u32;
                    w.v[a + 1][l] = (x >> 32) as u32;
                }
            } else if let Some(n) = k.strip_prefix('s').and_then(|n| n.parse::<u16>().ok()) {
                w.s[usize::from(n)] = value(v) as u32;
            } else if let Some(r) = reg_name(k) {
                let acc = k.starts_with('a');
                let (n, lane) = match r.split_once('.') {
                    Some((n, l)) => {
                        (n.parse::<usize>().expect("reg"), Some(l.parse::<usize>().expect("lane")))
                    }
                    None => (r.parse::<usize>().expect("reg"), None),
                };
                let file = if acc { &mut w.a } else { &mut w.v };
                if file.len() <= n {
                    file.resize(n + 1, [0; LANES]);
                }
                for (l, x) in file[n].iter_mut().enumerate() {
                    if lane.is_none_or(|k| k == l) {
                        *x = lane_value(v, l) as u32;
                    }
                }
            } else {
                match k {
                    "scc" => w.scc = value(v) != 0,
                    "vcc" => w.set_s64(VCC_LO, value(v)),
                    "exec" => w.set_s64(EXEC_LO, value(v)),
                    "m0" => w.s[usize::from(M0)] = value(v) as u32,
                    "mode" => w.hw.mode = value(v) as u32,
                    "doorbell" => self.dev.doorbell = value(v) as u32,
                    g if g.starts_with("arrived") => {
                        self.dev.gws_arrived[g[7..].parse::<usize>().expect("gws id")] =
                            value(v) as u32;
                    }
                    g if g.starts_with("gws") => {
                        self.dev.gws[g[3..].parse::<usize>().expect("gws id")] = value(v) as u32;
                    }
                    "tba" => {
                        self.dev.trap_handler = Some((value(v), 0x7E57));
                        w.hw.trap_en = true;
                    }
                    _ => self.set_memory(k, value(v)),
                }
            }
        }
    }

    fn set_memory(&mut self, k: &str, v: u64) {
        let (kind, at) = k.split_once(':').unwrap_or_else(|| panic!("bad item {k}"));
        let at = value(at);
        match kind {
            "m" => self.mem.write(at, &(v as u32).to_le_bytes()).expect("mapped"),
            "mb" => self.mem.write(at, &[v as u8]).expect("mapped"),
            "mq" => self.mem.write(at, &v.to_le_bytes()).expect("mapped"),
            "lds" => {
                self.lds[at as usize..at as usize + 4].copy_from_slice(&(v as u32).to_le_bytes())
            }
            _ => panic!("bad item {k}"),
        }
    }

    /// Runs until `s_endpgm` (or another stop), at most `limit` instructions.
    pub(crate) fn run(&mut self, target: Target, limit: u64) -> Result<(), WaveFault> {
        let mut code = CodeCache::new(target);
        code.begin();
        let mut cx = Cx { target, mem: &mut self.mem, lds: &mut self.lds, dev: &mut self.dev };
        for _ in 0..limit {
            let pc = self.wave.pc;
            let i = code.fetch(pc, cx.mem)?;
            self.wave.pc = pc + u64::from(i.len);
            execute(&mut self.wave, i, &mut cx).map_err(|f| f.at(pc))?;
            if self.wave.state != WaveState::Running {
                break;
            }
        }
        Ok(())
    }

    /// Checks `spec`; returns the mismatches.
    pub(crate) fn check(&self, spec: &str) -> Vec<String> {
        let mut bad = Vec::new();
        let w = &self.wave;
        for item in spec.split_whitespace() {
            let (k, v) = item.split_once('=').unwrap_or_else(|| panic!("bad item {item}"));
            let mut reported = false;
            let mut expect = |got: u64, want: u64, what: &str| {
                if got != want && !reported {
                    bad.push(format!("{what}: got {got:#x}, want {want:#x}"));
                    reported = true;
                }
            };
            if let Some((a, _)) = pair(k) {
                expect(w.s64(a as u16), value(v), k);
            } else if let Some((a, lane)) = vpair(k) {
                for l in (0..LANES).filter(|l| lane.is_none_or(|x| x == *l)) {
                    let get = |n: usize| u64::from(w.v.get(n).map_or(0, |x| x[l]));
                    expect(get(a) | get(a + 1) << 32, lane_value(v, l), &format!("{k} lane {l}"));
                }
            } else if let Some(n) = k.strip_prefix('s').and_then(|n| n.parse::<usize>().ok()) {
                expect(u64::from(w.s[n]), value(v) & 0xFFFF_FFFF, k);
            } else if let Some(r) = reg_name(k) {
                let file = if k.starts_with('a') { &w.a } else { &w.v };
                let (n, lane) = match r.split_once('.') {
                    Some((n, l)) => {
                        (n.parse::<usize>().expect("reg"), Some(l.parse::<usize>().expect("lane")))
                    }
                    None => (r.parse::<usize>().expect("reg"), None),
                };
                for l in 0..LANES {
                    if lane.is_none_or(|x| x == l) {
                        let got = file.get(n).map_or(0, |x| x[l]);
                        expect(
                            u64::from(got),
                            lane_value(v, l) & 0xFFFF_FFFF,
                            &format!("{k} lane {l}"),
                        );
                    }
                }
            } else {
                let got = match k {
                    "scc" => u64::from(w.scc),
                    "vcc" => w.s64(VCC_LO),
                    "exec" => w.s64(EXEC_LO),
                    "m0" => u64::from(w.s[usize::from(M0)]),
                    "pc" => w.pc,
                    "mode" => u64::from(w.hw.mode),
                    "done" => u64::from(w.state == WaveState::Done),
                    "irq" => self.dev.interrupts.last().map_or(u64::MAX, |v| u64::from(*v)),
                    "fault" => continue,
                    g if g.starts_with("arrived") => {
                        u64::from(self.dev.gws_arrived[g[7..].parse::<usize>().expect("gws id")])
                    }
                    g if g.starts_with("round") => {
                        u64::from(self.dev.gws_rounds[g[5..].parse::<usize>().expect("gws id")])
                    }
                    g if g.starts_with("gws") => {
                        u64::from(self.dev.gws[g[3..].parse::<usize>().expect("gws id")])
                    }
                    _ => {
                        let (kind, at) =
                            k.split_once(':').unwrap_or_else(|| panic!("bad item {k}"));
                        let at = value(at);
                        let bytes = |n: usize| {
                            self.mem.bytes(at, n).map_or(u64::MAX, |b| {
                                let mut x = [0u8; 8];
                                x[..n].copy_from_slice(b);
                                u64::from_le_bytes(x)
                            })
                        };
                        let want = value(v);
                        let got = match kind {
                            "m" => bytes(4),
                            "mb" => bytes(1),
                            "mq" => bytes(8),
                            "lds" => {
                                let b = &self.lds[at as usize..at as usize + 4];
                                u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                            }
                            _ => panic!("bad item {k}"),
                        };
                        let width = if kind == "mq" {
                            u64::MAX
                        } else if kind == "mb" {
                            0xFF
                        } else {
                            0xFFFF_FFFF
                        };
                        expect(got, want & width, k);
                        continue;
                    }
                };
                expect(got, value(v), k);
            }
        }
        bad
    }
}

/// The name a case's `fault=` uses for `f`.
pub(crate) fn fault_kind(f: &WaveFault) -> &'static str {
    use super::super::FaultKind as K;
    match f.kind {
        K::Undecodable(_) => "undecodable",
        K::Unsupported { .. } => "unsupported",
        K::Operand { .. } => "operand",
        K::Register { .. } => "register",
        K::Illegal { .. } => "illegal",
        K::Memory(_) => "memory",
        K::Launch(_) => "launch",
        K::Trap { .. } => "trap",
    }
}

/// Every target of the bit set `m`.
pub(crate) fn targets(m: u8) -> impl Iterator<Item = Target> {
    [Target::Gfx900, Target::Gfx90a, Target::Gfx942].into_iter().filter(move |t| t.in_set(m))
}

/// Runs every case on each of its targets; panics listing the failures.
pub(crate) fn run_cases(cases: &[Case]) {
    let mut failures = Vec::new();
    for c in cases {
        for t in targets(c.targets) {
            let mut world = World::new(c.words);
            world.set(c.init);
            let want = c.expect.split_whitespace().find_map(|i| i.strip_prefix("fault="));
            match (world.run(t, 10_000), want) {
                (Ok(()), None) => {}
                (Err(f), Some(kind)) if fault_kind(&f) == kind => {}
                (Err(f), _) => {
                    failures.push(format!("{} on {}: {f}", c.asm, t.name()));
                    continue;
                }
                (Ok(()), Some(kind)) => {
                    failures.push(format!("{} on {}: no {kind} fault", c.asm, t.name()));
                    continue;
                }
            }
            for b in world.check(c.expect) {
                failures.push(format!("{} on {}: {b}", c.asm, t.name()));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
