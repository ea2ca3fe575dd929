//! The project's kernels (`hsakmt-kernels`: OpenCL C compiled by clang-19, loaded and
//! relocated by `hsakmt_core::code_object`) run on the simulated GPU's ISA interpreter, on
//! the gfx900, gfx90a and gfx942 profiles, from AQL packets: every kernel of the test set
//! (code object v5, and v4 on gfx900), byte-granular copy and fill at many alignments, and
//! the control step from every gfx9 object (v4, v5, the v6 generic and sramecc objects).
//! Each result is checked against the kernel's documented semantics computed on the host.

use std::sync::atomic::Ordering;
use std::time::Duration;

use firmware_tests::SimKfd;
use firmware_tests::isa_support::{IsaQueue, Loaded, TARGETS, open};
use firmware_tests::queue_support::{Buf, gpu_nodes, host_buffer};
use hsakmt_core::code_object::kernarg::{ArgValue, Dispatch};
use hsakmt_core::platform::SharedMemory;
use hsakmt_kernels::{KernelSet, all, blit, control, test};
use hsakmt_sim::CpMode;

const T: Duration = Duration::from_secs(60);

/// The committed object `objects/<set>/<stem>.co`.
fn object(set: KernelSet, stem: &str) -> &'static [u8] {
    let path = format!("{}/{stem}.co", set.name());
    all().iter().find(|o| o.path == path).map(|o| o.bytes).expect("a committed object")
}

/// A deterministic pseudo-random sequence (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn u32(&mut self) -> u32 {
        self.next() as u32
    }
}

/// A host buffer holding `words`.
fn words(kfd: &SimKfd, words: &[u32]) -> Buf {
    let b = host_buffer(kfd, (4 * words.len() as u64).max(4));
    for (w, v) in b.u32s().iter().zip(words) {
        w.store(*v, Ordering::Relaxed);
    }
    b
}

fn read(b: &Buf, n: usize) -> Vec<u32> {
    b.u32s()[..n].iter().map(|w| w.load(Ordering::Relaxed)).collect()
}

fn read64(b: &Buf, n: usize) -> Vec<u64> {
    b.u64s()[..n].iter().map(|w| w.load(Ordering::Relaxed)).collect()
}

fn ptr(b: &Buf) -> ArgValue<'static> {
    ArgValue::Pointer(b.addr())
}

/// Everything a kernel set runs with: the device, a queue, the loaded object, the target.
struct Gpu<'a> {
    kfd: &'a SimKfd,
    q: IsaQueue,
    code: Loaded<'a>,
    what: String,
}

impl Gpu<'_> {
    fn run(&self, kernel: &str, args: &[ArgValue<'_>], d: &Dispatch) {
        let r = self.q.run(self.kfd, self.code.kernel(kernel), args, d, T);
        if let Err(f) = r {
            panic!("{kernel} on {}: {f:?}", self.what);
        }
    }
}

fn vector_add(g: &Gpu<'_>, rng: &mut Rng) {
    let n = 1000usize;
    let a: Vec<u32> = (0..n).map(|_| rng.u32()).collect();
    let b: Vec<u32> = (0..n).map(|_| rng.u32()).collect();
    let (ba, bb, bc) = (words(g.kfd, &a), words(g.kfd, &b), words(g.kfd, &vec![7; n + 1]));
    let args = [ptr(&ba), ptr(&bb), ptr(&bc), ArgValue::U32(n as u32)];
    // Work-groups of 100: two waves each, the second partial.
    g.run(test::VECTOR_ADD, &args, &Dispatch::linear(n as u32, 100));
    let c = read(&bc, n + 1);
    for i in 0..n {
        assert_eq!(c[i], a[i].wrapping_add(b[i]), "vector_add [{i}] on {}", g.what);
    }
    assert_eq!(c[n], 7, "vector_add wrote past n");
}

fn lds_reduce(g: &Gpu<'_>, rng: &mut Rng) {
    let n = 1000usize;
    let input: Vec<u32> = (0..n).map(|k| if k % 5 == 0 { 0 } else { rng.u32() >> 4 }).collect();
    let (bi, bs) = (words(g.kfd, &input), words(g.kfd, &[u32::MAX; 8]));
    let args = [ptr(&bi), ptr(&bs), ArgValue::U32(n as u32)];
    g.run(test::LDS_REDUCE, &args, &Dispatch::linear(1024, 256));
    let sums = read(&bs, 8);
    for grp in 0..4 {
        let part = &input[256 * grp..(256 * grp + 256).min(n)];
        let sum = part.iter().fold(0u32, |s, v| s.wrapping_add(*v));
        let nonzero = part.iter().filter(|v| **v != 0).count() as u32;
        assert_eq!((sums[2 * grp], sums[2 * grp + 1]), (sum, nonzero), "group {grp} on {}", g.what);
    }
}

fn atomics(g: &Gpu<'_>, rng: &mut Rng) {
    let n = 777usize;
    let input: Vec<u32> = (0..n).map(|_| rng.u32()).collect();
    let c0 = 5u32;
    let bi = words(g.kfd, &input);
    let counters = words(g.kfd, &[c0, 0, 0, u32::MAX, 0, 0, u32::MAX, 0]);
    let tickets = words(g.kfd, &vec![0; n]);
    let wide = host_buffer(g.kfd, 8);
    wide.u64s()[0].store(0xFFFF_FF00, Ordering::Relaxed);
    let args = [ptr(&bi), ptr(&counters), ptr(&tickets), ptr(&wide), ArgValue::U32(n as u32)];
    g.run(test::ATOMICS, &args, &Dispatch::linear(n as u32, 64));
    let mut t = read(&tickets, n);
    t.sort_unstable();
    assert!(t.iter().enumerate().all(|(k, v)| *v == c0 + k as u32), "tickets on {}", g.what);
    let bits = input.iter().fold(0u32, |m, v| m | 1 << (v & 31));
    let want = [
        c0 + n as u32,
        input.iter().fold(0u32, |s, v| s.wrapping_add(*v)),
        *input.iter().max().expect("n > 0"),
        *input.iter().min().expect("n > 0"),
        bits,
        input.iter().fold(0, |x, v| x ^ v),
        !bits,
    ];
    let got = read(&counters, 8);
    assert_eq!(got[..7], want, "counters on {}", g.what);
    assert!((1..=n as u32).contains(&got[7]), "compare-exchange: {}", got[7]);
    let sum = input.iter().map(|v| u64::from(*v)).sum::<u64>();
    assert_eq!(read64(&wide, 1)[0], 0xFFFF_FF00 + sum, "64-bit add on {}", g.what);
}

/// A 2-D dispatch of `grid` in work-groups of `wg`.
fn dispatch_2d(grid: [u32; 2], wg: [u16; 2]) -> Dispatch {
    Dispatch::new(2, [wg[0], wg[1], 1], [grid[0], grid[1], 1])
}

fn transpose_2d(g: &Gpu<'_>, rng: &mut Rng) {
    let (w, h) = (37usize, 23usize);
    let input: Vec<u32> = (0..w * h).map(|_| rng.u32()).collect();
    let (bi, bo) = (words(g.kfd, &input), words(g.kfd, &vec![u32::MAX; w * h]));
    let args = [ptr(&bi), ptr(&bo), ArgValue::U32(w as u32), ArgValue::U32(h as u32)];
    // A grid larger than the matrix, with partial work-groups in both dimensions.
    g.run(test::TRANSPOSE_2D, &args, &dispatch_2d([40, 30], [16, 8]));
    let out = read(&bo, w * h);
    for y in 0..h {
        for x in 0..w {
            assert_eq!(out[x * h + y], input[y * w + x], "({x}, {y}) on {}", g.what);
        }
    }
}

fn local_size_2d(g: &Gpu<'_>) {
    let (w, h) = (40usize, 30usize);
    let bo = words(g.kfd, &vec![0; w * h]);
    let args = [ptr(&bo), ArgValue::U32(w as u32), ArgValue::U32(h as u32)];
    g.run(test::LOCAL_SIZE_2D, &args, &dispatch_2d([40, 30], [16, 8]));
    // What the compiled kernel computes: `__builtin_amdgcn_workgroup_size_*` reads the
    // enqueued work-group size (the hidden group-size arguments in v5, the packet in v4), so
    // the partial last groups (40 = 16 + 16 + 8, 30 = 3 * 8 + 6) report 16 x 8 as well.
    let out = read(&bo, w * h);
    for y in 0..h {
        for x in 0..w {
            assert_eq!(out[y * w + x], 16 | 8 << 16, "({x}, {y}) on {}", g.what);
        }
    }
}

fn float_math(g: &Gpu<'_>, rng: &mut Rng) {
    let mut input = vec![0.0f32, -0.0, 1.0, -1.0, 2.5, -3.75, 1e-3, 123_456.7, -1e6, 0.1, 1e19];
    while input.len() < 300 {
        let m = (rng.u32() >> 9) as f32 / (1 << 23) as f32;
        let e = (rng.u32() % 40) as i32 - 20;
        let s = if rng.u32() & 1 == 0 { 1.0 } else { -1.0 };
        input.push(s * (1.0 + m) * 2f32.powi(e));
    }
    let n = input.len();
    let bits: Vec<u32> = input.iter().map(|x| x.to_bits()).collect();
    let (bi, bo) = (words(g.kfd, &bits), words(g.kfd, &vec![0; 4 * n]));
    g.run(
        test::FLOAT_MATH,
        &[ptr(&bi), ptr(&bo), ArgValue::U32(n as u32)],
        &Dispatch::linear(n as u32, 64),
    );
    let out = read(&bo, 4 * n);
    for (i, &x) in input.iter().enumerate() {
        let ax = x.abs();
        let want = [
            ax.sqrt() + x.mul_add(0.5, 1.0),
            // clang contracts `x * x + 1` into one fma.
            x / x.mul_add(x, 1.0),
            (x * 8.0).floor() - x.min(2.0) + x.max(-2.0),
            (ax as u32 as f32).mul_add(0.25, x as i32 as f32),
        ];
        for k in 0..4 {
            assert_eq!(
                out[4 * i + k],
                want[k].to_bits(),
                "float_math x = {x:e}, result {k}: {} vs {} on {}",
                f32::from_bits(out[4 * i + k]),
                want[k],
                g.what
            );
        }
    }
}

fn int_division(g: &Gpu<'_>, rng: &mut Rng) {
    let mut pairs: Vec<(i32, i32)> =
        vec![(7, 0), (i32::MIN, -1), (i32::MIN, 1), (-7, 2), (7, -2), (-7, -2), (0, 5), (5, 7)];
    while pairs.len() < 500 {
        let a = rng.u32() as i32;
        let b = match rng.u32() % 4 {
            0 => (rng.u32() % 17) as i32 - 8,
            1 => (rng.u32() >> 16) as i32,
            _ => rng.u32() as i32,
        };
        pairs.push((a, b));
    }
    let n = pairs.len();
    let a: Vec<u32> = pairs.iter().map(|p| p.0 as u32).collect();
    let b: Vec<u32> = pairs.iter().map(|p| p.1 as u32).collect();
    let (ba, bb) = (words(g.kfd, &a), words(g.kfd, &b));
    let (q, r, u) =
        (words(g.kfd, &vec![1; n]), words(g.kfd, &vec![1; n]), words(g.kfd, &vec![1; n]));
    let args = [ptr(&ba), ptr(&bb), ptr(&q), ptr(&r), ptr(&u), ArgValue::U32(n as u32)];
    g.run(test::INT_DIVISION, &args, &Dispatch::linear(n as u32, 128));
    let (q, r, u) = (read(&q, n), read(&r, n), read(&u, n));
    for (i, &(x, y)) in pairs.iter().enumerate() {
        let want = match y {
            0 => (0, 0, 0),
            _ => (x.wrapping_div(y) as u32, x.wrapping_rem(y) as u32, (x as u32) / (y as u32)),
        };
        assert_eq!((q[i], r[i], u[i]), want, "{x} / {y} on {}", g.what);
    }
}

fn uint_division64(g: &Gpu<'_>, rng: &mut Rng) {
    let mut pairs: Vec<(u64, u64)> =
        vec![(7, 0), (u64::MAX, 1), (u64::MAX, 3), (5, 7), (1 << 40, 1 << 20)];
    while pairs.len() < 300 {
        let a = rng.next();
        let b = match rng.u32() % 4 {
            0 => u64::from(rng.u32() % 100),
            1 => u64::from(rng.u32()),
            2 => rng.next() >> (rng.u32() % 64),
            _ => rng.next(),
        };
        pairs.push((a, b));
    }
    let n = pairs.len();
    let (ba, bb) = (host_buffer(g.kfd, 8 * n as u64), host_buffer(g.kfd, 8 * n as u64));
    for (k, (a, b)) in pairs.iter().enumerate() {
        ba.u64s()[k].store(*a, Ordering::Relaxed);
        bb.u64s()[k].store(*b, Ordering::Relaxed);
    }
    let (q, r) = (host_buffer(g.kfd, 8 * n as u64), host_buffer(g.kfd, 8 * n as u64));
    let args = [ptr(&ba), ptr(&bb), ptr(&q), ptr(&r), ArgValue::U32(n as u32)];
    g.run(test::UINT_DIVISION64, &args, &Dispatch::linear(n as u32, 64));
    let (q, r) = (read64(&q, n), read64(&r, n));
    for (i, &(x, y)) in pairs.iter().enumerate() {
        let want = x.checked_div(y).zip(x.checked_rem(y)).unwrap_or((0, 0));
        assert_eq!((q[i], r[i]), want, "{x} / {y} on {}", g.what);
    }
}

fn private_array(g: &Gpu<'_>, rng: &mut Rng) {
    let n = 300usize;
    let input: Vec<u32> = (0..n).map(|_| rng.u32()).collect();
    let (bi, bo) = (words(g.kfd, &input), words(g.kfd, &vec![0; n]));
    g.run(
        test::PRIVATE_ARRAY,
        &[ptr(&bi), ptr(&bo), ArgValue::U32(n as u32)],
        &Dispatch::linear(n as u32, 64),
    );
    let out = read(&bo, n);
    for (i, &v) in input.iter().enumerate() {
        let a = |j: u32| v.wrapping_add(7 * j);
        assert_eq!(out[i], a(v & 63).wrapping_add(a((v >> 6) & 63)), "[{i}] on {}", g.what);
    }
}

fn lookup_table(g: &Gpu<'_>, rng: &mut Rng) {
    let n = 200usize;
    let input: Vec<u32> = (0..n).map(|_| rng.u32()).collect();
    let (bi, bo) = (words(g.kfd, &input), words(g.kfd, &vec![0; n]));
    g.run(
        test::LOOKUP_TABLE,
        &[ptr(&bi), ptr(&bo), ArgValue::U32(n as u32)],
        &Dispatch::linear(n as u32, 64),
    );
    let out = read(&bo, n);
    for (i, &v) in input.iter().enumerate() {
        assert_eq!(out[i], ((v % 4) + 1) * 1000 + (i as u32 % 8), "[{i}] on {}", g.what);
    }
}

/// Runs every kernel of the test set from `object` on `profile`.
fn test_set(profile: &str, stem: &str) {
    let kfd = open(profile, CpMode::Step);
    let bytes = object(KernelSet::Test, stem);
    let g = Gpu {
        kfd: &kfd,
        q: IsaQueue::new(&kfd, gpu_nodes(&kfd)[0]),
        code: Loaded::new(&kfd, bytes),
        what: format!("{stem} on {profile}"),
    };
    let mut rng = Rng(0x5EED);
    vector_add(&g, &mut rng);
    lds_reduce(&g, &mut rng);
    atomics(&g, &mut rng);
    transpose_2d(&g, &mut rng);
    local_size_2d(&g);
    float_math(&g, &mut rng);
    int_division(&g, &mut rng);
    uint_division64(&g, &mut rng);
    private_array(&g, &mut rng);
    lookup_table(&g, &mut rng);
}

#[test]
fn test_kernels_on_gfx900() {
    test_set(TARGETS[0].0, "gfx900");
}

#[test]
fn test_kernels_code_object_v4_on_gfx900() {
    test_set(TARGETS[0].0, "gfx900-v4");
}

#[test]
fn test_kernels_on_gfx90a() {
    test_set(TARGETS[1].0, "gfx90a");
}

#[test]
fn test_kernels_on_gfx942() {
    test_set(TARGETS[2].0, "gfx942");
}

/// `(source offset, destination offset, bytes, work-items)`: aligned and unaligned ends,
/// empty and sub-chunk lengths, and grids smaller than the chunk count (grid-stride loop).
const BLITS: &[(usize, usize, usize, u32)] = &[
    (0, 0, 4096, 256),
    (16, 32, 1024, 64),
    (4, 8, 256, 16),
    (4, 8, 260, 3),
    (1, 0, 1000, 63),
    (0, 3, 777, 49),
    (5, 5, 333, 21),
    (3, 1, 15, 1),
    (7, 2, 0, 1),
    (2, 6, 3000, 17),
];

fn blits(profile: &str, gfx: &str) {
    let kfd = open(profile, CpMode::Step);
    let bytes = object(KernelSet::Blit, gfx);
    let g = Gpu {
        kfd: &kfd,
        q: IsaQueue::new(&kfd, gpu_nodes(&kfd)[0]),
        code: Loaded::new(&kfd, bytes),
        what: format!("blit on {gfx}"),
    };
    let mut rng = Rng(0xB117);
    let src: Vec<u8> = (0..8192).map(|_| rng.u32() as u8).collect();
    let bs = host_buffer(&kfd, src.len() as u64);
    bs.write(0, &src).expect("fits");
    let bd = host_buffer(&kfd, 8192);
    let pattern = 0xA1B2_C3D4u32;
    for &(so, doff, len, items) in BLITS {
        let what = format!("{len} bytes from +{so} to +{doff}, {items} work-items");
        let d = Dispatch::linear(items, 64.min(items as u16));
        bd.write(0, &[0xEE; 8192]).expect("fits");
        let args = [
            ArgValue::Pointer(bs.addr() + so as u64),
            ArgValue::Pointer(bd.addr() + doff as u64),
            ArgValue::U64(len as u64),
        ];
        g.run(blit::COPY_BYTES, &args, &d);
        let mut got = vec![0u8; 8192];
        bd.read(0, &mut got).expect("fits");
        let mut want = vec![0xEEu8; 8192];
        want[doff..doff + len].copy_from_slice(&src[so..so + len]);
        assert!(got == want, "copy_bytes {what} on {gfx}");
        bd.write(0, &[0xEE; 8192]).expect("fits");
        let args = [
            ArgValue::Pointer(bd.addr() + doff as u64),
            ArgValue::U32(pattern),
            ArgValue::U64(len as u64),
        ];
        g.run(blit::FILL_BYTES, &args, &d);
        bd.read(0, &mut got).expect("fits");
        let mut want = vec![0xEEu8; 8192];
        for k in 0..len {
            want[doff + k] = pattern.to_le_bytes()[k % 4];
        }
        assert!(got == want, "fill_bytes {what} on {gfx}");
    }
}

#[test]
fn copy_and_fill_at_any_alignment_on_every_target() {
    for (profile, gfx) in TARGETS {
        blits(profile, gfx);
    }
}

#[test]
fn the_control_step_of_every_gfx9_object() {
    let objects: [(usize, &[&str]); 3] = [
        (0, &["gfx900", "gfx900-v4", "gfx9-generic-v6"]),
        (1, &["gfx90a", "gfx9-generic-v6"]),
        (2, &["gfx942", "gfx942-sramecc-on-xnack-off-v6", "gfx9-generic-v6"]),
    ];
    for (t, names) in objects {
        let profile = TARGETS[t].0;
        for name in names {
            let kfd = open(profile, CpMode::Step);
            let bytes = object(KernelSet::Control, name);
            let g = Gpu {
                kfd: &kfd,
                q: IsaQueue::new(&kfd, gpu_nodes(&kfd)[0]),
                code: Loaded::new(&kfd, bytes),
                what: format!("{name} on {profile}"),
            };
            let n = 3000u32;
            let input: Vec<u32> = (0..n).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
            let (bi, bo) = (words(&kfd, &input), words(&kfd, &vec![0; n as usize]));
            let args =
                [ptr(&bi), ptr(&bo), ArgValue::U64(u64::from(n)), ArgValue::U64(0x1_0000_0011)];
            g.run(control::STEP, &args, &Dispatch::linear(n, 256));
            let out = read(&bo, n as usize);
            for (i, v) in input.iter().enumerate() {
                assert_eq!(out[i], v.wrapping_mul(3).wrapping_add(0x11), "[{i}] {}", g.what);
            }
        }
    }
}
