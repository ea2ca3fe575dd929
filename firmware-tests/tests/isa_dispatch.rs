//! Kernels run on the simulated GPU's ISA interpreter end to end, through the device facade:
//! AQL dispatches of compiled kernels on gfx900, gfx90a and gfx942 profiles, the queue errors
//! waves raise (naming the instruction), and kfdtest's PM4 way of running shaders
//! (`SET_SH_REG`, `DISPATCH_DIRECT` inside an indirect buffer with its fence), including a
//! shader polling memory the host writes later, the trap handler and GWS semaphores.
//! Shaders are kfdtest's gfx9 shaders re-written for these tests and assembled by
//! `llvm-mc-19`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use firmware_tests::SimKfd;
use firmware_tests::isa_support::{
    IsaQueue, Loaded, TARGETS, kfdtest_dispatch, open, pm4_header, write_data,
};
use firmware_tests::queue_support::{Signals, gpu_nodes, host_buffer, wait_until};
use hsakmt_core::code_object::kernarg::{ArgValue, Dispatch as CoDispatch, write_kernargs};
use hsakmt_core::device::queue_manager::{QueueDesc, QueueType};
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::aql::{AqlPacket, KernelDispatch};
use hsakmt_core::uapi::{
    EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION, EC_QUEUE_WAVE_MEMORY_VIOLATION, EC_QUEUE_WAVE_TRAP,
};
use hsakmt_kernels::{KernelSet, control, find};
use hsakmt_sim::{CpMode, PM4_INDIRECT_BUFFER, PM4_NOP, PM4_RELEASE_MEM, PM4_WAIT_REG_MEM};

const T: Duration = Duration::from_secs(30);

/// copy dword (gfx900).
const COPY_DWORD_GFX900: &[u32] = &[
    0x7E000200, 0x7E020201, 0x7E040202, 0x7E060203, 0xDC530000, 0x04000000, 0xBF8C0000, 0xDC730000,
    0x00000402, 0xBF810000,
];
/// copy dword (gfx90a).
const COPY_DWORD_GFX90A: &[u32] = &[
    0x7E000200, 0x7E020201, 0x7E040202, 0x7E060203, 0xDC530000, 0x04000000, 0xBF8C0000, 0xDC730000,
    0x00000402, 0xBF810000,
];
/// copy dword (gfx942).
const COPY_DWORD_GFX942: &[u32] = &[
    0x7E000200, 0x7E020201, 0x7E040202, 0x7E060203, 0xDE530000, 0x04000000, 0xBF8C0000, 0xDE730000,
    0x00000402, 0xBF810000,
];
/// poll memory (the same words on every target).
const POLL_MEMORY: &[u32] = &[
    0xB0125678, 0xC0030400, 0x00000000, 0xBF8CC07F, 0xBF001210, 0xBF84FFFB, 0xC0430481, 0x00000000,
    0xBF8CC07F, 0xBF810000,
];
/// jump to trap (the same words on every target).
const JUMP_TO_TRAP: &[u32] = &[
    0x7E080280, 0x7E000200, 0x7E020201, 0xBF920001, 0x7D940880, 0xBF87FFFE, 0xDC700000, 0x00000400,
    0xBF8C0070, 0xBF810000,
];
/// trap handler (the same words on every target).
const TRAP_HANDLER: &[u32] = &[
    0xBEEE007C, 0xBEFC00FF, 0x00000801, 0xBF900001, 0xBEFC006E, 0x7E08026D, 0x806C846C, 0x826D806D,
    0x866DFF6D, 0x0000FFFF, 0xBE801F6C,
];
/// gws init (the same words on every target).
const GWS_INIT: &[u32] = &[
    0xBEFC0080, 0xBF800000, 0xC0030400, 0x00000000, 0xBF8C0000, 0x7E000210, 0xBF8C0000, 0xD9330000,
    0x00000000, 0xBF8C0000, 0xBF810000,
];
/// gws increase (the same words on every target).
const GWS_INCREASE: &[u32] = &[
    0xBEFC0080, 0xBF800000, 0xD9390000, 0x00000000, 0xBF8C0000, 0xC0030400, 0x00000000, 0xBF8C0000,
    0x80108110, 0xC0430400, 0x00000000, 0xBF8CC07F, 0xD9350000, 0x00000000, 0xBF8C0000, 0xBF810000,
];

/// kfdtest's persistent-iterate shape: store a growing counter forever.
const PERSISTENT: &[u32] =
    &[0x7E000200, 0x7E020201, 0x7E040280, 0x68040481, 0xDC700000, 0x00000200, 0xBF82FFFC];
/// kfdtest's infinite loop: `LOOP: s_nop 0x10; s_branch LOOP`.
const INFINITE_LOOP: &[u32] = &[0xBF800010, 0xBF82FFFE, 0xBF810000];

fn by_target<'a>(gfx: &str, g900: &'a [u32], g90a: &'a [u32], g942: &'a [u32]) -> &'a [u32] {
    match gfx {
        "gfx900" => g900,
        "gfx90a" => g90a,
        _ => g942,
    }
}

fn compute(profile: &str, gfx: &str, mode: CpMode) {
    let kfd = open(profile, mode);
    let node = gpu_nodes(&kfd)[0];
    let code = Loaded::new(&kfd, find(KernelSet::Control, gfx).expect("object").bytes);
    let n = 5000u32;
    let (input, output) =
        (host_buffer(&kfd, 4 * u64::from(n)), host_buffer(&kfd, 4 * u64::from(n)));
    for i in 0..n as usize {
        input.u32s()[i].store((i as u32).wrapping_mul(2_654_435_761), Ordering::Relaxed);
    }
    let q = IsaQueue::new(&kfd, node);
    let args = [
        ArgValue::Pointer(input.addr()),
        ArgValue::Pointer(output.addr()),
        ArgValue::U64(u64::from(n)),
        ArgValue::U64(9),
    ];
    q.run(&kfd, code.kernel(control::STEP), &args, &CoDispatch::linear(n, 256), T)
        .expect("no fault");
    for i in 0..n as usize {
        let want = (i as u32).wrapping_mul(2_654_435_761).wrapping_mul(3).wrapping_add(9);
        assert_eq!(output.u32s()[i].load(Ordering::Relaxed), want, "{gfx} [{i}]");
    }
    let info = q.info;
    drop(q);
    kfd.destroy_queue(info.handle).expect("destroy");
}

#[test]
fn aql_dispatches_run_compiled_kernels_on_every_target() {
    for (profile, gfx) in TARGETS {
        compute(profile, gfx, CpMode::Step);
    }
    compute(TARGETS[2].0, TARGETS[2].1, CpMode::Threaded);
}

/// A 64-byte kernel descriptor: entry `0x100` bytes on, the given RSRC1/2 and properties.
fn descriptor(rsrc1: u32, rsrc2: u32, props: u16) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[16..24].copy_from_slice(&0x100i64.to_le_bytes());
    b[48..52].copy_from_slice(&rsrc1.to_le_bytes());
    b[52..56].copy_from_slice(&rsrc2.to_le_bytes());
    b[56..58].copy_from_slice(&props.to_le_bytes());
    b
}

/// Runs `code` (one wave) from an AQL packet; returns the queue's fault.
fn aql_fault(kfd: &SimKfd, code: &[u32]) -> hsakmt_sim::QueueFault {
    let sim = kfd.platform();
    let node = gpu_nodes(kfd)[0];
    let mem = host_buffer(kfd, 4096);
    mem.write(0, &descriptor(0, 0, 0)).expect("fits");
    for (k, w) in code.iter().enumerate() {
        mem.u32s()[0x40 + k].store(*w, Ordering::Relaxed);
    }
    let info = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).expect("queue");
    let q = kfd.aql_queue(info.handle).expect("AQL queue");
    q.submit(
        &AqlPacket::KernelDispatch(KernelDispatch::linear(mem.addr(), 64, 64))
            .to_words()
            .expect("packet"),
        || {},
    );
    wait_until(sim, T, "the fault", || sim.queue_fault(info.queue_id).is_some());
    let f = sim.queue_fault(info.queue_id).expect("fault");
    drop(q);
    let _ = kfd.destroy_queue(info.handle);
    f
}

#[test]
fn wave_faults_are_the_queue_errors_amdkfd_raises() {
    let kfd = open(TARGETS[1].0, CpMode::Step);
    // An opcode nothing defines.
    let f = aql_fault(&kfd, &[0x7E00_FE00, 0xBF81_0000]);
    assert_eq!(f.exception, EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION);
    let why = f.wave.expect("the wave's fault").to_string();
    assert!(why.contains("VOP1 opcode 127"), "{why}");
    // An operation the interpreter refuses by name (v_add_f16).
    let f = aql_fault(&kfd, &[0x3E02_0702, 0xBF81_0000]);
    assert_eq!(f.exception, EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION);
    assert!(f.wave.expect("detail").to_string().contains("v_add_f16"));
    // flat_store_dword v[2:3], v0 with v[2:3] zero: a write to page 0.
    let faults_before = kfd.platform().memory_faults().len();
    let f = aql_fault(&kfd, &[0x7E04_0280, 0x7E06_0280, 0xDC70_0000, 0x0000_0002, 0xBF81_0000]);
    assert_eq!((f.exception, f.address), (EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(0)));
    let faults = kfd.platform().memory_faults();
    assert_eq!(faults.len(), faults_before + 1);
    assert_eq!((faults[faults_before].1, faults[faults_before].2), (0, true), "a write at 0");
    // s_trap 2 (llvm.trap) without a trap handler.
    let f = aql_fault(&kfd, &[0xBF92_0002, 0xBF81_0000]);
    assert_eq!(f.exception, EC_QUEUE_WAVE_TRAP);
}

/// A PM4 queue and the buffers a kfdtest-style dispatch needs.
struct Pm4 {
    kfd: Box<SimKfd>,
    node: u32,
    gfx: &'static str,
}

impl Pm4 {
    fn new(profile: &str, gfx: &'static str, mode: CpMode) -> Self {
        let kfd = open(profile, mode);
        let node = gpu_nodes(&kfd)[0];
        Pm4 { kfd, node, gfx }
    }

    fn rsrc3(&self) -> Option<u32> {
        (self.gfx != "gfx900").then_some(9)
    }

    /// Copies `code` into a fresh (256-byte aligned) buffer; returns it.
    fn shader(&self, code: &[u32]) -> firmware_tests::queue_support::Buf {
        let b = host_buffer(&self.kfd, 4096);
        for (k, w) in code.iter().enumerate() {
            b.u32s()[k].store(*w, Ordering::Relaxed);
        }
        b
    }

    /// An indirect buffer holding kfdtest's dispatch packets, its end-of-pipe fence and a
    /// final `WRITE_DATA` of 1 to `done`; returns the buffer and the ring packet that runs it.
    fn ib(
        &self,
        code: u64,
        args: &[u32],
        dims: [u32; 3],
        done: u64,
    ) -> (firmware_tests::queue_support::Buf, Vec<u32>) {
        let ib = host_buffer(&self.kfd, 4096);
        let mut p = kfdtest_dispatch(code, args, dims, self.rsrc3());
        // kfdtest's fence: a NOP's payload dword, RELEASE_MEM 0xdeadbeef into it, a poll on it.
        let fence = ib.addr() + 4 * (p.len() as u64 + 1);
        p.extend([pm4_header(PM4_NOP, 1), 0]);
        p.extend([
            pm4_header(PM4_RELEASE_MEM, 7),
            0x14 | 5 << 8,
            1 << 29 | 3 << 24,
            fence as u32,
            (fence >> 32) as u32,
            0xDEAD_BEEF,
            0,
            0,
        ]);
        p.extend([
            pm4_header(PM4_WAIT_REG_MEM, 6),
            3 | 1 << 4,
            fence as u32,
            (fence >> 32) as u32,
            0xDEAD_BEEF,
            u32::MAX,
            4,
        ]);
        p.extend(write_data(done, 1));
        for (k, w) in p.iter().enumerate() {
            ib.u32s()[k].store(*w, Ordering::Relaxed);
        }
        let ring = vec![
            pm4_header(PM4_INDIRECT_BUFFER, 3),
            ib.addr() as u32,
            (ib.addr() >> 32) as u32,
            p.len() as u32 | 1 << 23,
        ];
        (ib, ring)
    }
}

#[test]
fn kfdtest_copy_dword_through_pm4() {
    for (profile, gfx) in TARGETS {
        let t = Pm4::new(profile, gfx, CpMode::Step);
        let sim = t.kfd.platform();
        let code =
            t.shader(by_target(gfx, COPY_DWORD_GFX900, COPY_DWORD_GFX90A, COPY_DWORD_GFX942));
        let (src, dst, done) =
            (host_buffer(&t.kfd, 4096), host_buffer(&t.kfd, 4096), host_buffer(&t.kfd, 4096));
        src.u32s()[0].store(0x0101_0101, Ordering::Relaxed);
        let a = |b: &firmware_tests::queue_support::Buf| [b.addr() as u32, (b.addr() >> 32) as u32];
        let args = [a(&src), a(&dst)].concat();
        let (_ib, ring) = t.ib(code.addr(), &args, [1, 1, 1], done.addr());
        let info =
            t.kfd.create_queue(&QueueDesc::new(t.node, QueueType::Compute, 4096)).expect("queue");
        let mut q = t.kfd.pm4_queue(info.handle).expect("PM4 queue");
        q.submit(&ring, || {}).expect("room");
        wait_until(sim, T, "the dispatch", || done.u32s()[0].load(Ordering::Acquire) == 1);
        assert_eq!(sim.queue_fault(info.queue_id), None);
        assert_eq!(dst.u32s()[0].load(Ordering::Relaxed), 0x0101_0101, "{gfx}");
        assert_eq!(q.pending(), 0, "drained");
    }
}

#[test]
fn a_polling_shader_yields_the_command_processor() {
    let t = Pm4::new(TARGETS[0].0, TARGETS[0].1, CpMode::Step);
    let sim = t.kfd.platform();
    let code = t.shader(POLL_MEMORY);
    let (src, dst, done) =
        (host_buffer(&t.kfd, 4096), host_buffer(&t.kfd, 4096), host_buffer(&t.kfd, 4096));
    let a = |b: &firmware_tests::queue_support::Buf| [b.addr() as u32, (b.addr() >> 32) as u32];
    let (_ib, ring) = t.ib(code.addr(), &[a(&src), a(&dst)].concat(), [1, 1, 1], done.addr());
    let info =
        t.kfd.create_queue(&QueueDesc::new(t.node, QueueType::Compute, 4096)).expect("queue");
    let mut q = t.kfd.pm4_queue(info.handle).expect("PM4 queue");
    q.submit(&ring, || {}).expect("room");
    // The shader spins; the processor returns, and another queue's work runs meanwhile.
    sim.run_until_idle();
    let other = host_buffer(&t.kfd, 4096);
    let info2 =
        t.kfd.create_queue(&QueueDesc::new(t.node, QueueType::Compute, 4096)).expect("queue");
    let mut q2 = t.kfd.pm4_queue(info2.handle).expect("PM4 queue");
    q2.submit(&write_data(other.addr(), 7), || {}).expect("room");
    sim.run_until_idle();
    assert_eq!(other.u32s()[0].load(Ordering::Acquire), 7, "the other queue ran");
    assert_eq!(done.u32s()[0].load(Ordering::Acquire), 0, "still polling");
    assert_eq!(sim.queue_fault(info.queue_id), None);
    assert!(sim.queue_state(info.queue_id).expect("queue").active);
    // The host writes the value the shader waits for.
    src.u32s()[0].store(0x5678, Ordering::Release);
    wait_until(sim, T, "the poll", || done.u32s()[0].load(Ordering::Acquire) == 1);
    assert_eq!(dst.u32s()[0].load(Ordering::Relaxed), 0x5678);
}

#[test]
fn a_polling_shader_in_threaded_mode() {
    let t = Pm4::new(TARGETS[2].0, TARGETS[2].1, CpMode::Threaded);
    let sim = t.kfd.platform();
    let code = t.shader(POLL_MEMORY);
    let (src, dst, done) =
        (host_buffer(&t.kfd, 4096), host_buffer(&t.kfd, 4096), host_buffer(&t.kfd, 4096));
    let a = |b: &firmware_tests::queue_support::Buf| [b.addr() as u32, (b.addr() >> 32) as u32];
    let (_ib, ring) = t.ib(code.addr(), &[a(&src), a(&dst)].concat(), [1, 1, 1], done.addr());
    let info =
        t.kfd.create_queue(&QueueDesc::new(t.node, QueueType::Compute, 4096)).expect("queue");
    let mut q = t.kfd.pm4_queue(info.handle).expect("PM4 queue");
    q.submit(&ring, || {}).expect("room");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(done.u32s()[0].load(Ordering::Acquire), 0, "still polling");
    src.u32s()[0].store(0x5678, Ordering::Release);
    wait_until(sim, T, "the poll", || done.u32s()[0].load(Ordering::Acquire) == 1);
    assert_eq!(dst.u32s()[0].load(Ordering::Relaxed), 0x5678);
    drop(q);
    t.kfd.destroy_queue(info.handle).expect("destroy");
}

#[test]
fn kernels_that_never_end_do_not_hold_the_simulator() {
    let t = Pm4::new(TARGETS[0].0, TARGETS[0].1, CpMode::Step);
    let sim = t.kfd.platform();
    for (code, writes) in [(PERSISTENT, true), (INFINITE_LOOP, false)] {
        let code = t.shader(code);
        let (out, done) = (host_buffer(&t.kfd, 4096), host_buffer(&t.kfd, 4096));
        let (_ib, ring) = t.ib(
            code.addr(),
            &[out.addr() as u32, (out.addr() >> 32) as u32],
            [1, 1, 1],
            done.addr(),
        );
        let info =
            t.kfd.create_queue(&QueueDesc::new(t.node, QueueType::Compute, 4096)).expect("queue");
        let mut q = t.kfd.pm4_queue(info.handle).expect("PM4 queue");
        q.submit(&ring, || {}).expect("room");
        // Each call returns although the kernel runs on.
        sim.run_until_idle();
        let first = out.u32s()[0].load(Ordering::Acquire);
        sim.run_until_idle();
        let second = out.u32s()[0].load(Ordering::Acquire);
        assert_eq!(writes, second > first, "counter {first} then {second}");
        assert_eq!(done.u32s()[0].load(Ordering::Acquire), 0);
        assert_eq!(sim.queue_fault(info.queue_id), None);
        drop(q);
        t.kfd.destroy_queue(info.handle).expect("destroy a queue running a kernel");
    }
}

#[test]
fn trap_handler_entry_and_return() {
    for (profile, gfx) in TARGETS {
        let t = Pm4::new(profile, gfx, CpMode::Step);
        let sim = t.kfd.platform();
        let code = t.shader(JUMP_TO_TRAP);
        let handler = t.shader(TRAP_HANDLER);
        let tma = host_buffer(&t.kfd, 4096);
        t.kfd.set_trap_handler(t.node, handler.addr(), tma.addr()).expect("trap handler");
        let (out, done) = (host_buffer(&t.kfd, 4096), host_buffer(&t.kfd, 4096));
        let args = [out.addr() as u32, (out.addr() >> 32) as u32];
        let (_ib, ring) = t.ib(code.addr(), &args, [1, 1, 1], done.addr());
        let info =
            t.kfd.create_queue(&QueueDesc::new(t.node, QueueType::Compute, 4096)).expect("queue");
        let mut q = t.kfd.pm4_queue(info.handle).expect("PM4 queue");
        q.submit(&ring, || {}).expect("room");
        wait_until(sim, T, "the dispatch", || done.u32s()[0].load(Ordering::Acquire) == 1);
        assert_eq!(sim.queue_fault(info.queue_id), None, "{gfx}");
        // The handler copied ttmp1 to v4: the trap id (1) at bits 16..24 over PC[47:32].
        let v4 = out.u32s()[0].load(Ordering::Relaxed);
        assert_eq!(v4, 1 << 16 | (code.addr() >> 32) as u32, "{gfx}");
        assert!(sim.raised_events().contains(&0x801), "the handler's interrupt");
    }
}

#[test]
fn gws_semaphores_across_work_groups() {
    let t = Pm4::new(TARGETS[1].0, TARGETS[1].1, CpMode::Step);
    let sim = t.kfd.platform();
    let (init, inc) = (t.shader(GWS_INIT), t.shader(GWS_INCREASE));
    let (value, counter, done) =
        (host_buffer(&t.kfd, 4096), host_buffer(&t.kfd, 4096), host_buffer(&t.kfd, 4096));
    value.u32s()[0].store(1, Ordering::Relaxed);
    let a = |b: &firmware_tests::queue_support::Buf| vec![b.addr() as u32, (b.addr() >> 32) as u32];
    let info =
        t.kfd.create_queue(&QueueDesc::new(t.node, QueueType::Compute, 4096)).expect("queue");
    let mut q = t.kfd.pm4_queue(info.handle).expect("PM4 queue");
    let (_ib1, r1) = t.ib(init.addr(), &a(&value), [1, 1, 1], done.addr());
    q.submit(&r1, || {}).expect("room");
    wait_until(sim, T, "init", || done.u32s()[0].load(Ordering::Acquire) == 1);
    done.u32s()[0].store(0, Ordering::Relaxed);
    let (_ib2, r2) = t.ib(inc.addr(), &a(&counter), [16, 1, 1], done.addr());
    q.submit(&r2, || {}).expect("room");
    wait_until(sim, T, "the increments", || done.u32s()[0].load(Ordering::Acquire) == 1);
    assert_eq!(counter.u32s()[0].load(Ordering::Relaxed), 16);
    assert_eq!(sim.queue_fault(info.queue_id), None);
}

/// Nanoseconds this thread ran on a CPU (`/proc/thread-self/schedstat`).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// Lane-instructions per second of the compute kernel through the whole simulator (AQL
/// packet, command processor, GPU page tables), step mode on this thread. A measurement, not
/// a check: `cargo test --release -p firmware-tests --test isa_dispatch -- --ignored
/// --nocapture`.
#[test]
#[ignore = "a measurement"]
fn throughput_of_the_compute_kernel() {
    for (profile, gfx) in TARGETS {
        let kfd = open(profile, CpMode::Step);
        let sim = kfd.platform();
        let node = gpu_nodes(&kfd)[0];
        let code = Loaded::new(&kfd, find(KernelSet::Control, gfx).expect("object").bytes);
        let (kernel, object) = code.kernel(control::STEP);
        let n = 1u32 << 22;
        let (input, output) =
            (host_buffer(&kfd, 4 * u64::from(n)), host_buffer(&kfd, 4 * u64::from(n)));
        for (i, w) in input.u32s().iter().enumerate() {
            w.store(i as u32, Ordering::Relaxed);
        }
        for w in output.u32s() {
            w.store(1, Ordering::Relaxed);
        }
        let args_values = [
            ArgValue::Pointer(input.addr()),
            ArgValue::Pointer(output.addr()),
            ArgValue::U64(u64::from(n)),
            ArgValue::U64(9),
        ];
        let mut kernargs = [0u8; 4096];
        write_kernargs(&kernel.metadata, &mut kernargs, &args_values, &CoDispatch::linear(n, 256))
            .expect("kernel arguments");
        let args = host_buffer(&kfd, 4096);
        args.write(0, &kernargs).expect("fits");
        let signals = Signals::new(&kfd, 1, 1);
        let info =
            kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).expect("queue");
        let q = kfd.aql_queue(info.handle).expect("AQL queue");
        let mut k = KernelDispatch::linear(object, n, 256);
        k.kernarg_address = args.addr();
        k.completion_signal = signals.handle(0);
        let (start, cpu, before) = (Instant::now(), thread_cpu_ns(), sim.isa_count());
        q.submit(&AqlPacket::KernelDispatch(k).to_words().expect("packet"), || {});
        wait_until(sim, T, "the dispatch", || signals.get(0).load_acquire() == 0);
        let (wall, cpu) = (start.elapsed().as_secs_f64(), (thread_cpu_ns() - cpu) as f64 / 1e9);
        let ran = sim.isa_count();
        let lanes = (ran.lane_instructions - before.lane_instructions) as f64;
        let waves = ran.waves - before.waves;
        assert_eq!(waves, u64::from(n / 64));
        assert_eq!(output.u32s()[12345].load(Ordering::Relaxed), 12345 * 3 + 9);
        println!(
            "{gfx}: {n} work-items, {waves} waves, {lanes} lane instructions in {wall:.3} s ({:.0} M/s), {cpu:.3} s on the CPU ({:.0} M/s)",
            lanes / wall / 1e6,
            lanes / cpu / 1e6
        );
        drop(q);
        kfd.destroy_queue(info.handle).expect("destroy");
    }
}
