//! Kernels compiled by clang-19 for gfx900, gfx90a and gfx942 (`kernels/kernels.c`, objects
//! committed beside it) run end to end: loaded from the code object, launched from an AQL
//! packet and its kernel descriptor as the command processor does, results checked against the
//! same computation on the host.

use std::collections::HashMap;

use super::super::launch::{AqlDispatch, aql_launch};
use super::super::memory::{TestMemory, WaveMemory};
use super::super::{CodeCache, Device, Dispatch, RunState, Target};
use super::harness::APERTURES;

const IMAGE: u64 = 0x4000_0000;
const KERNARG: u64 = 0x5000_0000;
const PACKET: u64 = 0x5100_0000;
const QUEUE: u64 = 0x5200_0000;
const BUFFERS: u64 = 0x6000_0000;
const BUFFER_STRIDE: u64 = 1 << 20;
const SCRATCH: u64 = 0x7000_0000;
const SCRATCH_LANE_BYTES: u32 = 1024;
const SCRATCH_WAVES: u32 = 32;

fn object(t: Target) -> &'static [u8] {
    match t {
        Target::Gfx900 => include_bytes!("kernels/kernels-gfx900.co"),
        Target::Gfx90a => include_bytes!("kernels/kernels-gfx90a.co"),
        Target::Gfx942 => include_bytes!("kernels/kernels-gfx942.co"),
    }
}

fn le(b: &[u8], at: usize, n: usize) -> u64 {
    let mut x = [0u8; 8];
    x[..n].copy_from_slice(&b[at..at + n]);
    u64::from_le_bytes(x)
}

/// The loadable image of an ELF64 code object and its kernel descriptors (`name.kd`
/// symbols of `.dynsym`), enough for these tests.
fn load(elf: &[u8]) -> (Vec<u8>, HashMap<String, u64>) {
    let (phoff, phnum) = (le(elf, 0x20, 8) as usize, le(elf, 0x38, 2) as usize);
    let mut image = Vec::new();
    for k in 0..phnum {
        let p = phoff + 56 * k;
        if le(elf, p, 4) != 1 {
            continue;
        }
        let (off, vaddr, filesz, memsz) = (
            le(elf, p + 8, 8) as usize,
            le(elf, p + 16, 8) as usize,
            le(elf, p + 32, 8) as usize,
            le(elf, p + 40, 8) as usize,
        );
        if image.len() < vaddr + memsz {
            image.resize(vaddr + memsz, 0);
        }
        image[vaddr..vaddr + filesz].copy_from_slice(&elf[off..off + filesz]);
    }
    let (shoff, shnum) = (le(elf, 0x28, 8) as usize, le(elf, 0x3C, 2) as usize);
    let sh = |k: usize| shoff + 64 * k;
    let mut kds = HashMap::new();
    for k in 0..shnum {
        if le(elf, sh(k) + 4, 4) != 11 {
            continue; // SHT_DYNSYM
        }
        let (off, size) = (le(elf, sh(k) + 0x18, 8) as usize, le(elf, sh(k) + 0x20, 8) as usize);
        let strtab = sh(le(elf, sh(k) + 0x28, 4) as usize);
        let stroff = le(elf, strtab + 0x18, 8) as usize;
        for s in (off..off + size).step_by(24) {
            let name_at = stroff + le(elf, s, 4) as usize;
            let end = elf[name_at..].iter().position(|b| *b == 0).unwrap_or(0);
            let name = String::from_utf8_lossy(&elf[name_at..name_at + end]).to_string();
            if let Some(kernel) = name.strip_suffix(".kd") {
                kds.insert(kernel.to_string(), le(elf, s + 8, 8));
            }
        }
    }
    (image, kds)
}

/// One kernel run: memory, explicit kernel arguments, geometry.
struct Run {
    target: Target,
    mem: TestMemory,
    args: Vec<u8>,
    kernel: &'static str,
    grid: [u32; 3],
    wg: [u32; 3],
    lds: u32,
    private: u32,
    buffers: usize,
}

impl Run {
    fn new(target: Target, kernel: &'static str) -> Self {
        let (image, _) = load(object(target));
        let mut mem = TestMemory::new();
        mem.map_bytes(IMAGE, &image);
        mem.map(KERNARG, 4096);
        mem.map(PACKET, 64);
        mem.map(QUEUE, 256);
        mem.map(SCRATCH, (SCRATCH_LANE_BYTES * 64 * SCRATCH_WAVES) as usize);
        Run {
            target,
            mem,
            args: Vec::new(),
            kernel,
            grid: [1; 3],
            wg: [1; 3],
            lds: 0,
            private: 0,
            buffers: 0,
        }
    }

    /// A new zeroed buffer of `bytes`; returns its address and adds it as a pointer argument.
    fn buffer(&mut self, bytes: &[u8]) -> u64 {
        let at = BUFFERS + BUFFER_STRIDE * self.buffers as u64;
        self.buffers += 1;
        let mut b = bytes.to_vec();
        b.resize(BUFFER_STRIDE as usize, 0);
        self.mem.map_bytes(at, &b);
        self.arg(&at.to_le_bytes());
        at
    }

    /// Appends an explicit argument at its natural alignment.
    fn arg(&mut self, v: &[u8]) {
        while !self.args.len().is_multiple_of(v.len()) {
            self.args.push(0);
        }
        self.args.extend_from_slice(v);
    }

    fn go(&mut self) -> Result<(), super::super::WaveFault> {
        self.go_with_budget(u64::MAX).map(|_| ())
    }

    fn go_with_budget(
        &mut self,
        budget: u64,
    ) -> Result<(Dispatch, CodeCache), super::super::WaveFault> {
        let (_, kds) = load(object(self.target));
        let kd = IMAGE + kds[self.kernel];
        // Kernel arguments: the explicit ones, then the hidden ones of code object v5.
        let mut ka = self.args.clone();
        ka.resize(ka.len().next_multiple_of(8), 0);
        let hidden = ka.len();
        ka.resize(hidden + 256, 0);
        for d in 0..3 {
            let blocks = self.grid[d].div_ceil(self.wg[d]);
            ka[hidden + 4 * d..hidden + 4 * d + 4].copy_from_slice(&blocks.to_le_bytes());
            ka[hidden + 12 + 2 * d..hidden + 14 + 2 * d]
                .copy_from_slice(&(self.wg[d] as u16).to_le_bytes());
            ka[hidden + 18 + 2 * d..hidden + 20 + 2 * d]
                .copy_from_slice(&((self.grid[d] % self.wg[d]) as u16).to_le_bytes());
        }
        let dims = if self.grid[2] > 1 {
            3u16
        } else if self.grid[1] > 1 {
            2
        } else {
            1
        };
        ka[hidden + 64..hidden + 66].copy_from_slice(&dims.to_le_bytes());
        self.mem.write(KERNARG, &ka).expect("kernarg");
        // The dispatch packet (grid and work-group sizes where kernels may read them).
        let mut p = [0u8; 64];
        p[2..4].copy_from_slice(&dims.to_le_bytes());
        for d in 0..3 {
            p[4 + 2 * d..6 + 2 * d].copy_from_slice(&(self.wg[d] as u16).to_le_bytes());
            p[12 + 4 * d..16 + 4 * d].copy_from_slice(&self.grid[d].to_le_bytes());
        }
        self.mem.write(PACKET, &p).expect("packet");
        // ROCr's amd_queue_t scratch fields.
        let mut q = [0u8; 256];
        q[140..144].copy_from_slice(&SCRATCH_WAVES.to_le_bytes());
        q[160..168].copy_from_slice(&SCRATCH.to_le_bytes());
        q[168..176]
            .copy_from_slice(&u64::from(SCRATCH_LANE_BYTES * 64 * SCRATCH_WAVES).to_le_bytes());
        q[176..180].copy_from_slice(&SCRATCH_LANE_BYTES.to_le_bytes());
        self.mem.write(QUEUE, &q).expect("queue");
        let d = AqlDispatch {
            kernel_object: kd,
            kernarg_address: KERNARG,
            grid: self.grid,
            workgroup: self.wg,
            group_segment_size: self.lds,
            private_segment_size: self.private,
            packet_address: PACKET,
            dispatch_id: 7,
            queue_address: QUEUE,
        };
        let launch = aql_launch(&mut self.mem, self.target, &d, APERTURES).expect("launch");
        let mut dispatch = Dispatch::new(launch)?;
        let mut code = CodeCache::new(self.target);
        code.begin();
        let mut dev = Device::default();
        let mut left = budget;
        while left > 0 {
            let step = left.min(1 << 20);
            if dispatch.run(&mut self.mem, &mut dev, &mut code, step)? == RunState::Done {
                break;
            }
            left -= step;
        }
        Ok((dispatch, code))
    }

    fn words(&self, buffer: usize, n: usize) -> Vec<u32> {
        let b = self.mem.bytes(BUFFERS + BUFFER_STRIDE * buffer as u64, 4 * n).expect("mapped");
        b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    }

    fn bytes(&self, buffer: usize, n: usize) -> Vec<u8> {
        self.mem.bytes(BUFFERS + BUFFER_STRIDE * buffer as u64, n).expect("mapped").to_vec()
    }
}

fn all() -> [Target; 3] {
    [Target::Gfx900, Target::Gfx90a, Target::Gfx942]
}

fn words_bytes(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32_bytes(w: &[f32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn compute_triples_and_adds_seed() {
    for t in all() {
        let n = 1000u32;
        let input: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let mut r = Run::new(t, "compute");
        r.buffer(&words_bytes(&input));
        r.buffer(&[]);
        r.arg(&77u32.to_le_bytes());
        r.arg(&n.to_le_bytes());
        r.grid = [n, 1, 1];
        r.wg = [256, 1, 1];
        r.go().unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        let out = r.words(1, n as usize + 8);
        for i in 0..n as usize {
            assert_eq!(out[i], input[i].wrapping_mul(3).wrapping_add(77), "{} [{i}]", t.name());
        }
        assert_eq!(&out[n as usize..], &[0; 8], "{}: past the end untouched", t.name());
    }
}

#[test]
fn vector_add() {
    for t in all() {
        let n = 300u32;
        let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..n).map(|i| 1.0 / (i as f32 + 1.0)).collect();
        let mut r = Run::new(t, "vadd");
        r.buffer(&f32_bytes(&a));
        r.buffer(&f32_bytes(&b));
        r.buffer(&[]);
        r.arg(&n.to_le_bytes());
        r.grid = [n, 1, 1];
        r.wg = [64, 1, 1];
        r.go().unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        let c = r.words(2, n as usize);
        for i in 0..n as usize {
            assert_eq!(f32::from_bits(c[i]), a[i] + b[i], "{} [{i}]", t.name());
        }
    }
}

#[test]
fn byte_copies_and_fills_at_any_alignment() {
    for t in all() {
        let src: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
        for (kernel, so, d_o, n) in [
            ("copy_bytes", 1usize, 3usize, 777u64),
            ("copy_words", 3, 1, 1029),
            ("copy_words", 0, 2, 64),
        ] {
            let mut r = Run::new(t, kernel);
            let dst = r.buffer(&[]);
            let s = r.buffer(&src);
            // Point the arguments at the unaligned addresses.
            r.args.clear();
            r.arg(&(dst + d_o as u64).to_le_bytes());
            r.arg(&(s + so as u64).to_le_bytes());
            r.arg(&n.to_le_bytes());
            r.grid = [if kernel == "copy_bytes" { 256 } else { (n as u32).div_ceil(4) }, 1, 1];
            r.wg = [64, 1, 1];
            r.go().unwrap_or_else(|f| panic!("{} {kernel}: {f}", t.name()));
            let out = r.bytes(0, d_o + n as usize + 4);
            assert_eq!(
                &out[d_o..d_o + n as usize],
                &src[so..so + n as usize],
                "{} {kernel}",
                t.name()
            );
            assert!(
                out[..d_o].iter().all(|b| *b == 0)
                    && out[d_o + n as usize..].iter().all(|b| *b == 0),
                "{} {kernel}: bytes outside the copy",
                t.name()
            );
        }
        let mut r = Run::new(t, "fill_bytes");
        let dst = r.buffer(&[]);
        r.args.clear();
        r.arg(&(dst + 5).to_le_bytes());
        r.arg(&[0xA5]);
        r.arg(&333u64.to_le_bytes());
        r.grid = [333, 1, 1];
        r.wg = [128, 1, 1];
        r.go().unwrap_or_else(|f| panic!("{} fill: {f}", t.name()));
        let out = r.bytes(0, 400);
        assert!(
            out[5..338].iter().all(|b| *b == 0xA5)
                && out[..5].iter().chain(&out[338..]).all(|b| *b == 0),
            "{}",
            t.name()
        );
    }
}

#[test]
fn sixteen_byte_copies() {
    for t in all() {
        let src: Vec<u32> = (0..400).map(|i| i * 31 + 1).collect();
        let mut r = Run::new(t, "copy128");
        r.buffer(&[]);
        r.buffer(&words_bytes(&src));
        r.arg(&100u64.to_le_bytes());
        r.grid = [100, 1, 1];
        r.wg = [64, 1, 1];
        r.go().unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        assert_eq!(r.words(0, 400), src, "{}", t.name());
    }
}

#[test]
fn lds_reduction_with_barriers() {
    for t in all() {
        let n = 1000u32;
        let input: Vec<u32> = (0..n).map(|i| i * i % 1013).collect();
        let mut r = Run::new(t, "reduce");
        r.buffer(&words_bytes(&input));
        r.buffer(&[]);
        r.arg(&n.to_le_bytes());
        r.grid = [1024, 1, 1];
        r.wg = [256, 1, 1];
        r.lds = 1024;
        r.go().unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        let out = r.words(1, 4);
        for (g, got) in out.iter().enumerate() {
            let want: u32 = input.iter().skip(g * 256).take(256).sum();
            assert_eq!(*got, want, "{} group {g}", t.name());
        }
        let mut r = Run::new(t, "lds_atomics");
        r.buffer(&[]);
        r.grid = [192, 1, 1];
        r.wg = [64, 1, 1];
        r.lds = 16;
        r.go().unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        assert_eq!(r.words(0, 3), vec![2016; 3], "{}", t.name());
    }
}

#[test]
fn global_atomics() {
    for t in all() {
        let n = 200u32;
        let mut r = Run::new(t, "atomics");
        let mut ctr = vec![0u32; 8];
        ctr[3] = 1000;
        ctr[4] = u32::MAX;
        r.buffer(&words_bytes(&ctr));
        r.buffer(&5u64.to_le_bytes());
        r.buffer(&words_bytes(&[0x8000_0000, u32::MAX]));
        r.arg(&n.to_le_bytes());
        r.grid = [n, 1, 1];
        r.wg = [128, 1, 1];
        r.go().unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        let c = r.words(0, 8);
        assert_eq!(c[0], n, "{} add", t.name());
        // The first wave to reach the compare-and-swap wins (any of them may).
        assert!((1..=n).contains(&c[1]), "{} cmpxchg: {}", t.name(), c[1]);
        assert_eq!(c[3], 1000 - 2 * n, "{} sub", t.name());
        assert_eq!(c[4], 0, "{} and", t.name());
        assert_eq!(c[5], u32::MAX, "{} or", t.name());
        assert_eq!(c[6], (0..n).fold(0, |a, i| a ^ i), "{} xor", t.name());
        let c64 = r.words(1, 2);
        assert_eq!(
            u64::from(c64[0]) | u64::from(c64[1]) << 32,
            5 + u64::from(n * (n - 1) / 2),
            "{} add_x2",
            t.name()
        );
        assert_eq!(r.words(2, 2), vec![n - 1, 0], "{} max/min", t.name());
        let mut r = Run::new(t, "atomics_ret");
        r.buffer(&words_bytes(&[10]));
        r.buffer(&[]);
        r.arg(&n.to_le_bytes());
        r.grid = [n, 1, 1];
        r.wg = [64, 1, 1];
        r.go().unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        let mut got = r.words(1, n as usize);
        got.sort_unstable();
        assert_eq!(got, (10..10 + n).collect::<Vec<_>>(), "{} returned values", t.name());
        assert_eq!(r.words(0, 1), vec![10 + n], "{}", t.name());
    }
}

#[test]
fn two_dimensional_indexing() {
    for t in all() {
        let (w, h, pitch) = (37u32, 19u32, 40u32);
        let m: Vec<f32> = (0..pitch * h).map(|i| i as f32 * 0.25).collect();
        let mut r = Run::new(t, "index2d");
        r.buffer(&f32_bytes(&m));
        for v in [w, h, pitch] {
            r.arg(&v.to_le_bytes());
        }
        r.grid = [w, h, 1];
        r.wg = [16, 4, 1];
        r.go().unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        let out = r.words(0, (pitch * h) as usize);
        for y in 0..h {
            for x in 0..pitch {
                let k = (y * pitch + x) as usize;
                let want = if x < w { m[k] * 2.0 + x as f32 - y as f32 } else { m[k] };
                assert_eq!(f32::from_bits(out[k]), want, "{} ({x},{y})", t.name());
            }
        }
    }
}

#[test]
fn float_math_and_division() {
    for t in all() {
        let a: Vec<f32> = (0..70).map(|i| 0.37 + i as f32 * 1.61).collect();
        let mut r = Run::new(t, "fmath");
        r.buffer(&f32_bytes(&a));
        r.buffer(&[]);
        r.arg(&70u32.to_le_bytes());
        r.grid = [70, 1, 1];
        r.wg = [64, 1, 1];
        r.go().unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        let o = r.words(1, 280);
        for (i, x) in a.iter().copied().enumerate() {
            let want = [
                x.sqrt() + x / 3.0,
                x.mul_add(x, 1.0) + x.min(1.0) + x.max(2.0),
                (x as i32) as f32 + x.floor() + x.trunc() + x.ceil() + x.round_ties_even(),
                x.exp2() + x.log2() + 1.0 / x.sqrt() + 1.0 / x,
            ];
            for (k, w) in want.iter().enumerate() {
                assert_eq!(f32::from_bits(o[4 * i + k]), *w, "{} [{i}].{k} x={x}", t.name());
            }
        }
        let num: Vec<f32> = (0..100).map(|i| (i as f32 - 50.0) * 3.3).collect();
        let den: Vec<f32> = (0..100).map(|i| 0.7 + i as f32 * 0.13).collect();
        let mut r = Run::new(t, "fdiv");
        r.buffer(&f32_bytes(&num));
        r.buffer(&f32_bytes(&den));
        r.buffer(&[]);
        r.arg(&100u32.to_le_bytes());
        r.grid = [100, 1, 1];
        r.wg = [64, 1, 1];
        r.go().unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        let q = r.words(2, 100);
        for i in 0..100 {
            assert_eq!(f32::from_bits(q[i]), num[i] / den[i], "{} [{i}]", t.name());
        }
        let a: Vec<f64> = (0..65).map(|i| i as f64 * 1.7 - 20.0).collect();
        let mut r = Run::new(t, "dmath");
        r.buffer(&a.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>());
        r.buffer(&[]);
        r.arg(&65u32.to_le_bytes());
        r.grid = [65, 1, 1];
        r.wg = [64, 1, 1];
        r.go().unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        let o = r.words(1, 130);
        for i in 0..65 {
            let got = f64::from_bits(u64::from(o[2 * i]) | u64::from(o[2 * i + 1]) << 32);
            // clang contracts `a * 2.5 + i` into one fused multiply-add.
            assert_eq!(got, a[i].mul_add(2.5, i as f64) + a[i] / 3.0, "{} [{i}]", t.name());
        }
    }
}

#[test]
fn integer_division() {
    for t in all() {
        let a: Vec<u32> = (0..128u32).map(|i| i.wrapping_mul(0x9E37_79B9) ^ (i << 3)).collect();
        let b: Vec<u32> =
            (0..128u32).map(|i| if i % 5 == 0 { 0xFFFF_FFF0 - i } else { i * 13 + 1 }).collect();
        let mut r = Run::new(t, "idiv");
        r.buffer(&words_bytes(&a));
        r.buffer(&words_bytes(&b));
        r.buffer(&[]);
        r.buffer(&[]);
        r.arg(&128u32.to_le_bytes());
        r.grid = [128, 1, 1];
        r.wg = [64, 1, 1];
        r.go().unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        let (q, rem) = (r.words(2, 128), r.words(3, 128));
        for i in 0..128 {
            assert_eq!(q[i], a[i] / b[i], "{} [{i}] quotient", t.name());
            assert_eq!(
                rem[i] as i32,
                (a[i] as i32).wrapping_rem(b[i] as i32),
                "{} [{i}] remainder",
                t.name()
            );
        }
        let a: Vec<u64> = (0..64u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
        let b: Vec<u64> =
            (0..64u64).map(|i| if i % 2 == 0 { i + 3 } else { (i << 35) | 7 }).collect();
        let mut r = Run::new(t, "idiv64");
        r.buffer(&a.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>());
        r.buffer(&b.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>());
        r.buffer(&[]);
        r.arg(&64u32.to_le_bytes());
        r.grid = [64, 1, 1];
        r.wg = [64, 1, 1];
        r.go().unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        let q = r.words(2, 128);
        for i in 0..64 {
            assert_eq!(
                u64::from(q[2 * i]) | u64::from(q[2 * i + 1]) << 32,
                a[i] / b[i],
                "{} [{i}]",
                t.name()
            );
        }
    }
}

#[test]
fn private_arrays_in_scratch() {
    for t in all() {
        let n = 100u32;
        let input: Vec<u32> = (0..n).map(|i| (i * 37) ^ (i << 9)).collect();
        let mut r = Run::new(t, "priv");
        r.buffer(&words_bytes(&input));
        r.buffer(&[]);
        r.arg(&n.to_le_bytes());
        r.grid = [n, 1, 1];
        r.wg = [64, 1, 1];
        r.private = 260;
        r.go().unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        let out = r.words(1, n as usize);
        for i in 0..n as usize {
            let arr = |k: u32| input[(i + k as usize) % n as usize];
            assert_eq!(
                out[i],
                arr(input[i] & 63).wrapping_add(arr((input[i] >> 8) & 63)),
                "{} [{i}]",
                t.name()
            );
        }
    }
}

#[test]
fn a_polling_kernel_yields_and_resumes() {
    for t in all() {
        let mut r = Run::new(t, "poll");
        let flag = r.buffer(&[]);
        r.buffer(&[]);
        r.grid = [64, 1, 1];
        r.wg = [64, 1, 1];
        let (mut d, mut code) = r.go_with_budget(1).unwrap_or_else(|f| panic!("{}: {f}", t.name()));
        let mut dev = Device::default();
        // Nothing to see while the flag is clear: the dispatch stalls, budget after budget.
        for _ in 0..3 {
            assert_eq!(
                d.run(&mut r.mem, &mut dev, &mut code, 10_000).expect("runs"),
                RunState::Stalled,
                "{}",
                t.name()
            );
        }
        r.mem.write(flag, &41u32.to_le_bytes()).expect("mapped");
        assert_eq!(
            d.run(&mut r.mem, &mut dev, &mut code, 10_000).expect("runs"),
            RunState::Done,
            "{}",
            t.name()
        );
        assert_eq!(r.words(1, 64), vec![42; 64], "{}", t.name());
    }
}

/// Nanoseconds this thread ran on a CPU (`/proc/thread-self/schedstat`), so that other load on
/// the machine does not count.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// Throughput of the interpreter on the compute kernel over plain memory (not a timing goal:
/// run with `cargo test --release -p hsakmt-sim --lib isa::tests::e2e::throughput -- --ignored
/// --nocapture` to see the figure).
#[test]
#[ignore = "a measurement, not a check"]
fn throughput() {
    for t in all() {
        let n = 1u32 << 22;
        let input: Vec<u32> = (0..n).collect();
        let mut r = Run::new(t, "compute");
        r.buffer(&[]);
        r.buffer(&[]);
        // Buffers of 4 MiB each.
        let (a, b) = (0x1_0000_0000u64, 0x2_0000_0000u64);
        r.mem.map_bytes(a, &words_bytes(&input));
        r.mem.map_bytes(b, &vec![1; 4 * n as usize]);
        r.args.clear();
        r.arg(&a.to_le_bytes());
        r.arg(&b.to_le_bytes());
        r.arg(&5u32.to_le_bytes());
        r.arg(&n.to_le_bytes());
        r.grid = [n, 1, 1];
        r.wg = [256, 1, 1];
        let (start, cpu) = (std::time::Instant::now(), thread_cpu_ns());
        let (d, _) = r.go_with_budget(u64::MAX).expect("runs");
        let s = start.elapsed().as_secs_f64();
        let c = (thread_cpu_ns() - cpu) as f64 / 1e9;
        println!(
            "{}: {} wave instructions, {} lane instructions in {:.3} s ({:.3} s on the CPU): {:.0} M lane-instructions/s, {:.1} M wave-instructions/s per CPU second",
            t.name(),
            d.stats.instructions,
            d.stats.lane_instructions,
            s,
            c,
            d.stats.lane_instructions as f64 / c / 1e6,
            d.stats.instructions as f64 / c / 1e6
        );
        assert_eq!(r.mem.word(b + 4 * 12345), 12345 * 3 + 5);
    }
}
