//! SDMA copies and fills through the simulated engines, and the AQL ring's full and wrap-around
//! behaviour through the owned producers.

use std::sync::atomic::Ordering;
use std::time::Duration;

use firmware_tests::queue_support::{Signals, gpu_nodes, host_buffer, vram, wait_until};
use firmware_tests::{SimKfd, device};
use hsakmt_core::device::queue_manager::{QueueDesc, QueueType, SdmaCompletion};
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::aql::{AqlPacket, Barrier, KernelDispatch};
use hsakmt_core::queue::ring::RingError;
use hsakmt_core::queue::sdma::SdmaPacket;
use hsakmt_core::queue::signal::{Mailbox, SignalInit};
use hsakmt_sim::{CpMode, SimPlatform};

const T: Duration = Duration::from_secs(30);

fn open(mode: CpMode) -> Box<SimKfd> {
    let kfd = device(SimPlatform::builder().cp_mode(mode).build());
    kfd.open().unwrap();
    kfd
}

fn pattern(buf: &hsakmt_sim::SimMapping, seed: u64) {
    let mut x = seed | 1;
    for w in buf.u64s() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        w.store(x, Ordering::Relaxed);
    }
}

fn same(
    a: &hsakmt_sim::SimMapping,
    a_off: usize,
    b: &hsakmt_sim::SimMapping,
    b_off: usize,
    len: usize,
) -> bool {
    let (mut x, mut y) = (vec![0u8; len], vec![0u8; len]);
    a.read(a_off, &mut x).unwrap();
    b.read(b_off, &mut y).unwrap();
    x == y
}

/// A 64 MiB + 12 byte copy at odd offsets: split into 4 MiB packets (gfx942's 22-bit count),
/// verified byte for byte, completed through a signal with an event mailbox.
fn large_copy(mode: CpMode) {
    let kfd = open(mode);
    let sim = kfd.platform();
    let node = gpu_nodes(&kfd)[0];
    let len = (64 << 20) + 12;
    let src = host_buffer(&kfd, 65 << 20);
    let dst = host_buffer(&kfd, 65 << 20);
    pattern(&src, 7);
    let signals = Signals::new(&kfd, 1, 1);
    let mailbox = host_buffer(&kfd, 4096);
    signals.get(0).set_mailbox(Some(Mailbox { address: mailbox.addr() + 64, event_id: 33 }));
    let info = kfd.create_queue(&QueueDesc::new(node, QueueType::Sdma, 64 * 1024)).unwrap();
    let mut q = kfd.sdma_queue(info.handle).unwrap();
    assert_eq!(q.limits().max_copy_bytes(), 1 << 22);
    let completion = SdmaCompletion::Signal {
        signal: signals.handle(0),
        value: 0,
        mailbox: signals.get(0).mailbox(),
    };
    let relax = || {
        if mode == CpMode::Step {
            sim.run_until_idle();
        }
        std::thread::yield_now();
    };
    let t = q.copy(dst.addr() + 3, src.addr() + 5, len as u64, completion, relax).unwrap();
    wait_until(sim, T, "the copy", || q.is_complete(t));
    assert_eq!(signals.get(0).load_acquire(), 0);
    assert!(same(&src, 5, &dst, 3, len));
    assert_eq!(mailbox.u32s()[16].load(Ordering::Acquire), 33);
    assert!(sim.raised_events().contains(&33));
    // Bytes around the copy are untouched.
    let mut edge = [0u8; 3];
    dst.read(0, &mut edge).unwrap();
    assert_eq!(edge, [0; 3]);
    dst.read(3 + len, &mut edge).unwrap();
    assert_eq!(edge, [0; 3]);
    // 17 COPY_LINEAR packets (16 × 4 MiB + 12 bytes) plus the completion's packets.
    assert!(sim.queue_state(info.queue_id).unwrap().packets >= 17 + 5);
    // A fill, then a fence-only marker.
    let t2 = q.fill(dst.addr(), 0x5A5A_5A5A, 1 << 20, SdmaCompletion::Fence, relax).unwrap();
    let t3 = q.marker(SdmaCompletion::Fence, relax).unwrap();
    wait_until(sim, T, "the fill", || q.is_complete(t3));
    assert!(q.is_complete(t2));
    assert!(dst.u32s()[..(1 << 18)].iter().all(|w| w.load(Ordering::Relaxed) == 0x5A5A_5A5A));
}

#[test]
fn sdma_large_copy_threaded() {
    large_copy(CpMode::Threaded);
}

#[test]
fn sdma_large_copy_step_mode() {
    large_copy(CpMode::Step);
}

/// host → VRAM of GPU 0 (CPU-invisible) → VRAM of GPU 1 (a peer buffer mapped on GPU 0) →
/// host, every copy by GPU 0's engine, then the same back through GPU 1's engine; verified
/// byte for byte. A copy from VRAM the engine's GPU has not mapped faults.
#[test]
fn sdma_copies_host_vram_and_peer() {
    let kfd = open(CpMode::Threaded);
    let sim = kfd.platform();
    let nodes = gpu_nodes(&kfd);
    let (n0, n1) = (nodes[0], nodes[1]);
    let len = 8u64 << 20;
    let (src, out) = (host_buffer(&kfd, len), host_buffer(&kfd, len));
    pattern(&src, 99);
    let v0 = vram(&kfd, n0, len, false, &[n0]);
    let v1 = vram(&kfd, n1, len, false, &[n0, n1]);
    let q0 = kfd.create_queue(&QueueDesc::new(n0, QueueType::Sdma, 4096)).unwrap();
    let q1 = kfd.create_queue(&QueueDesc::new(n1, QueueType::Sdma, 4096)).unwrap();
    let (mut p0, mut p1) = (kfd.sdma_queue(q0.handle).unwrap(), kfd.sdma_queue(q1.handle).unwrap());
    let y = std::thread::yield_now;
    for (dst, from) in [(v0.addr, src.addr()), (v1.addr, v0.addr), (out.addr(), v1.addr)] {
        let t = p0.copy(dst, from, len, SdmaCompletion::Fence, y).unwrap();
        p0.wait(t, y);
    }
    assert!(same(&src, 0, &out, 0, len as usize));
    out.u64s().iter().for_each(|w| w.store(0, Ordering::Relaxed));
    // GPU 1 reaches its own VRAM and host memory, but not GPU 0's VRAM.
    let t = p1.copy(out.addr(), v1.addr, len, SdmaCompletion::Fence, y).unwrap();
    p1.wait(t, y);
    assert!(same(&src, 0, &out, 0, len as usize));
    let _ = p1.copy(out.addr(), v0.addr, 4096, SdmaCompletion::Fence, y).unwrap();
    wait_until(sim, T, "the fault", || sim.queue_fault(q1.queue_id).is_some());
    let f = sim.queue_fault(q1.queue_id).unwrap();
    assert_eq!(
        (f.exception, f.address),
        (hsakmt_core::uapi::EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(v0.addr))
    );
}

/// Raw SDMA packets: a trap raises its event, a poll waits for memory, a copy from unmapped
/// memory stops the queue with a memory violation.
#[test]
fn sdma_trap_poll_and_fault() {
    let kfd = open(CpMode::Step);
    let sim = kfd.platform();
    let node = gpu_nodes(&kfd)[0];
    let info = kfd.create_queue(&QueueDesc::new(node, QueueType::Sdma, 4096)).unwrap();
    let mut q = kfd.sdma_queue(info.handle).unwrap();
    let flag = host_buffer(&kfd, 4096);
    let poll = SdmaPacket::PollRegMem {
        addr: flag.addr(),
        reference: 5,
        mask: u32::MAX,
        func: hsakmt_core::queue::sdma::PollFunc::Equal,
        interval: 10,
        retry_count: 0xFFF,
    };
    q.ring().submit([poll, SdmaPacket::Trap { int_ctx: 12 }], || {}).unwrap();
    sim.run_until_idle();
    assert!(!sim.raised_events().contains(&12), "the poll holds the trap back");
    flag.u32s()[0].store(5, Ordering::Release);
    sim.run_until_idle();
    assert!(sim.raised_events().contains(&12));
    let bad = SdmaPacket::CopyLinear { src: 0x1000, dst: flag.addr(), bytes: 64 };
    q.ring().submit([bad], || {}).unwrap();
    sim.run_until_idle();
    let f = sim.queue_fault(info.queue_id).unwrap();
    assert_eq!(f.exception, hsakmt_core::uapi::EC_QUEUE_WAVE_MEMORY_VIOLATION);
    assert_eq!(f.address, Some(0x1000));
}

/// The AQL ring refuses packets when full (nothing reserved), accepts them again as the packet
/// processor drains it, and wraps around many times with the single producer.
#[test]
fn aql_ring_full_and_wrap_around() {
    let kfd = open(CpMode::Step);
    let sim = kfd.platform();
    let node = gpu_nodes(&kfd)[0];
    let count = host_buffer(&kfd, 4096);
    let k =
        sim.register_kernel("count", |ctx| ctx.atomic_add_u64(ctx.kernarg_u64(0)?, 1).map(|_| ()));
    count.u64s()[1].store(count.addr(), Ordering::Relaxed);
    // 1024-byte ring (16 slots): the kernel's minimum, in a page the library allocates.
    let info = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 1024)).unwrap();
    let q = kfd.aql_queue(info.handle).unwrap();
    let slots = q.slots();
    assert_eq!(slots, 64, "rings the library allocates are rounded up to a page");
    let mut d = KernelDispatch::linear(k, 1, 1);
    d.kernarg_address = count.addr() + 8;
    let w = AqlPacket::KernelDispatch(d).to_words().unwrap();
    for i in 0..slots {
        assert_eq!(q.try_submit(&w), Ok(i));
    }
    assert_eq!(q.try_submit(&w), Err(RingError::Full));
    assert_eq!(q.write_index(), slots, "a refused packet reserved nothing");
    assert_eq!(sim.run_until_idle(), slots);
    assert_eq!(count.u64s()[0].load(Ordering::Relaxed), slots);
    assert_eq!(q.try_submit(&w), Ok(slots));
    let mut single = q.into_single().unwrap();
    let rounds = 10 * slots;
    let mut submitted = slots + 1;
    while submitted < rounds {
        match single.try_submit(&w) {
            Ok(i) => {
                assert_eq!(i, submitted);
                submitted += 1;
            }
            Err(RingError::Full) => {
                sim.run_until_idle();
            }
            Err(e) => panic!("{e}"),
        }
    }
    // A batch with one doorbell, then a no-op barrier.
    let batch = vec![w; 8];
    single
        .submit_batch(&batch, || {
            sim.run_until_idle();
        })
        .unwrap();
    single.submit(&AqlPacket::BarrierAnd(Barrier::NOP).to_words().unwrap(), || {});
    sim.run_until_idle();
    assert_eq!(count.u64s()[0].load(Ordering::Relaxed), rounds + 8);
    assert_eq!(sim.queue_state(info.queue_id).unwrap().packets, rounds + 9);
    let _ = SignalInit::User { value: 0, mailbox: None };
}

/// Two threads submit to one AQL queue through the multi-producer path while the threaded
/// processor consumes: every packet runs exactly once.
#[test]
fn two_producers_one_queue() {
    let kfd = open(CpMode::Threaded);
    let sim = kfd.platform();
    let node = gpu_nodes(&kfd)[0];
    let hits = host_buffer(&kfd, 4096 * 4);
    let k = sim.register_kernel("hit", |ctx| {
        let (base, i) = (ctx.kernarg_u64(0)?, ctx.kernarg_u64(1)?);
        ctx.atomic_add_u64(base + 8 * (i % 2048), 1).map(|_| ())
    });
    let args = host_buffer(&kfd, 2 * 2048 * 16);
    for i in 0..4096usize {
        args.u64s()[2 * i].store(hits.addr(), Ordering::Relaxed);
        args.u64s()[2 * i + 1].store(i as u64, Ordering::Relaxed);
    }
    let info = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 64 * 128)).unwrap();
    let q = kfd.aql_queue(info.handle).unwrap();
    let done = Signals::new(&kfd, 1, 4096);
    std::thread::scope(|s| {
        for t in 0..2usize {
            let (q, args, done) = (&q, &args, &done);
            s.spawn(move || {
                for i in (t..4096).step_by(2) {
                    let mut d = KernelDispatch::linear(k, 1, 1);
                    d.kernarg_address = args.addr() + 16 * i as u64;
                    d.completion_signal = done.handle(0);
                    q.submit(
                        &AqlPacket::KernelDispatch(d).to_words().unwrap(),
                        std::thread::yield_now,
                    );
                }
            });
        }
    });
    wait_until(sim, T, "all dispatches", || done.get(0).load_acquire() == 0);
    assert!(hits.u64s()[..2048].iter().all(|h| h.load(Ordering::Relaxed) == 2));
    assert_eq!(q.read_index(), 4096);
}
