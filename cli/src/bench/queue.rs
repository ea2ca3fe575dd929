//! `queue.*`: the submit path, the simulated command processor's latency, and SDMA copies.
//!
//! - `queue.aql_submit.1p`: ns per packet for reserve + write + publish + doorbell through a
//!   real queue's `SingleAqlQueue` on the simulator, next to the bare stores of the same 64
//!   bytes + header release store + doorbell store (no bookkeeping) on a second queue of the same
//!   size, rounds interleaved. Goal ratio ≤ 1.25. `.1p.mp` is the multi-producer path
//!   ([`AqlQueue::submit`]: one atomic add to reserve) from one thread. The command processor runs in step mode and drains the
//!   ring between rounds, outside the timed region, so only the producer is measured.
//! - `queue.aql_submit.2p`: two threads submitting to one queue through the multi-producer path,
//!   ns per packet (wall time of a round / packets), next to two threads doing the bare stores
//!   into disjoint halves of the reference ring.
//! - `queue.dispatch_complete.sim`: threaded command processor, from the doorbell of a one
//!   work-group dispatch of an empty host kernel to the completion signal observed at 0;
//!   reference: a round trip between two threads through two atomics.
//! - `queue.sdma_copy.sim`: bytes/s of a 64 MiB copy through a simulated SDMA engine (16 × 4 MiB
//!   `COPY_LINEAR` packets and a fence), next to one `memcpy` of the same source buffer into a
//!   pre-faulted buffer of the same size.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use hsakmt_core::config::DEFAULT_MEMORY_OBJECTS;
use hsakmt_core::device::queue_manager::{AqlQueue, QueueDesc, QueueType, SdmaCompletion};
use hsakmt_core::device::{Kfd, MapNodes};
use hsakmt_core::memory::MemFlags;
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::aql::{AqlPacket, Barrier as AqlBarrier, KernelDispatch, PacketWords};
use hsakmt_core::queue::signal::{Signal, SignalInit};
use hsakmt_core::topology::NodeKind;
use hsakmt_linux::{BoxedMemory, boxed_kfd};
use hsakmt_sim::{CpMode, SimMapping, SimPlatform};

use super::{Row, Samples};

/// Packets per timed round.
const ROUND: u64 = 1024;

pub(crate) fn run(scale: f64) -> Result<Vec<Row>, String> {
    measure(scale)
}

fn open(mode: CpMode) -> Result<(Box<Kfd<SimPlatform, BoxedMemory>>, u32), String> {
    let kfd = boxed_kfd(SimPlatform::builder().cp_mode(mode).build(), DEFAULT_MEMORY_OBJECTS);
    kfd.open().map_err(|e| e.to_string())?;
    let node = kfd
        .with_topology(|t| {
            t.nodes().filter(|n| n.node().kind() != NodeKind::Cpu).find_map(|n| n.node().user_id())
        })
        .map_err(|e| e.to_string())?
        .ok_or("the simulated machine has no GPU")?;
    Ok((kfd, node))
}

/// Non-paged system memory on a CPU node, mapped on every GPU, with its CPU view.
fn buffer(kfd: &Kfd<SimPlatform, BoxedMemory>, size: u64) -> Result<SimMapping, String> {
    let cpu = kfd
        .with_topology(|t| {
            t.nodes().find(|n| n.node().kind() == NodeKind::Cpu).and_then(|n| n.node().user_id())
        })
        .map_err(|e| e.to_string())?
        .ok_or("the simulated machine has no CPU node")?;
    let a = kfd
        .alloc_memory(cpu, size, MemFlags::NON_PAGED | MemFlags::HOST_ACCESS)
        .map_err(|e| e.to_string())?;
    kfd.map_memory_to_gpu(a.addr, MapNodes::All).map_err(|e| e.to_string())?;
    a.mapping.ok_or_else(|| "host memory without a CPU view".to_string())
}

fn aql(
    kfd: &Kfd<SimPlatform, BoxedMemory>,
    node: u32,
    slots: u64,
) -> Result<AqlQueue<SimMapping>, String> {
    let info = kfd
        .create_queue(&QueueDesc::new(node, QueueType::ComputeAql, slots * 64))
        .map_err(|e| e.to_string())?;
    kfd.aql_queue(info.handle).map_err(|e| e.to_string())
}

/// The reference: the same stores a producer makes, without any bookkeeping.
struct Bare {
    ring: SimMapping,
    doorbell: SimMapping,
    doorbell_offset: usize,
    mask: u64,
}

impl Bare {
    fn of(q: &AqlQueue<SimMapping>) -> Self {
        let m = q.producer().cells().memory();
        Bare {
            ring: m.ring.clone(),
            doorbell: m.doorbell.clone(),
            doorbell_offset: m.doorbell_offset,
            mask: q.slots() - 1,
        }
    }

    #[inline]
    fn put(&self, index: u64, p: &PacketWords) {
        let slot = (index & self.mask) as usize;
        let (d, q) = (self.ring.u32s(), self.ring.u64s());
        if let Some(w) = d.get(slot * 16 + 1) {
            w.store(p.dw[1], Ordering::Relaxed);
        }
        if let Some(ws) = q.get(slot * 8 + 1..slot * 8 + 8) {
            for (w, v) in ws.iter().zip(p.qw.iter()) {
                w.store(*v, Ordering::Relaxed);
            }
        }
        if let Some(h) = d.get(slot * 16) {
            h.store(p.dw[0], Ordering::Release);
        }
        self.doorbell.ring_doorbell64(self.doorbell_offset, index);
    }
}

fn per_packet(t: Instant, n: u64) -> f64 {
    t.elapsed().as_nanos() as f64 / n as f64
}

fn measure(scale: f64) -> Result<Vec<Row>, String> {
    let rounds = ((400.0 * scale) as usize).clamp(20, 20_000);
    let mut rows = Vec::new();
    let (kfd, node) = open(CpMode::Step)?;
    let sim = kfd.platform();
    let nop = AqlPacket::BarrierAnd(AqlBarrier::NOP).to_words().map_err(|e| e.to_string())?;

    // 1 producer: single-producer path, multi-producer path, bare stores; rounds interleaved.
    let mut single = aql(&kfd, node, 4 * ROUND)?.into_single().map_err(|e| e.to_string())?;
    let multi = aql(&kfd, node, 4 * ROUND)?;
    let reference = aql(&kfd, node, 4 * ROUND)?;
    let bare = Bare::of(&reference);
    let (mut s1, mut smp, mut sref) = (
        Samples::with_capacity(rounds),
        Samples::with_capacity(rounds),
        Samples::with_capacity(rounds),
    );
    let mut next_ref = 0u64;
    for r in 0..rounds + 5 {
        let t = Instant::now();
        for _ in 0..ROUND {
            single.try_submit(&nop).map_err(|e| e.to_string())?;
        }
        let a = per_packet(t, ROUND);
        let t = Instant::now();
        for _ in 0..ROUND {
            multi.submit(&nop, std::hint::spin_loop);
        }
        let b = per_packet(t, ROUND);
        let t = Instant::now();
        for i in 0..ROUND {
            bare.put(next_ref + i, &nop);
        }
        let c = per_packet(t, ROUND);
        next_ref += ROUND;
        sim.run_until_idle();
        if r >= 5 {
            s1.push(a);
            smp.push(b);
            sref.push(c);
        }
    }
    rows.push(
        Row::latency("queue.aql_submit.1p", &s1)
            .against("bare 64-byte stores + header release + doorbell", &sref)
            .goal("ratio <= 1.25"),
    );
    rows.push(
        Row::latency("queue.aql_submit.1p.mp", &smp)
            .against("bare 64-byte stores + header release + doorbell", &sref),
    );
    drop((single, multi));

    // 2 producers on one queue, multi-producer path; reference: 2 threads of bare stores.
    let shared = aql(&kfd, node, 4 * ROUND)?;
    let (s2, sref2) = two_producers(&shared, &bare, &nop, rounds / 2, sim)?;
    rows.push(
        Row::latency("queue.aql_submit.2p", &s2)
            .against("2 threads of bare stores", &sref2)
            .goal("ratio <= 1.25"),
    );
    drop((shared, reference));
    drop(kfd);

    rows.push(dispatch_complete(scale)?);
    rows.push(sdma_copy(scale)?);
    Ok(rows)
}

fn two_producers(
    q: &AqlQueue<SimMapping>,
    bare: &Bare,
    p: &PacketWords,
    rounds: usize,
    sim: &SimPlatform,
) -> Result<(Samples, Samples), String> {
    let half = ROUND / 2;
    let start = Barrier::new(3);
    let end = Barrier::new(3);
    let stop = AtomicBool::new(false);
    let mode = AtomicU64::new(0); // 0 = library, 1 = bare
    let base = AtomicU64::new(0);
    let (mut lib, mut refs) = (Samples::with_capacity(rounds), Samples::with_capacity(rounds));
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let (start, end, stop, mode, base) = (&start, &end, &stop, &mode, &base);
            s.spawn(move || {
                loop {
                    start.wait();
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    if mode.load(Ordering::Acquire) == 0 {
                        for _ in 0..half {
                            q.submit(p, std::hint::spin_loop);
                        }
                    } else {
                        let b = base.load(Ordering::Acquire) + t * half;
                        for i in 0..half {
                            bare.put(b + i, p);
                        }
                    }
                    end.wait();
                }
            });
        }
        let mut next = 0;
        for r in 0..rounds + 5 {
            for m in [0, 1] {
                mode.store(m, Ordering::Release);
                base.store(next, Ordering::Release);
                let t = Instant::now();
                start.wait();
                end.wait();
                let v = per_packet(t, ROUND);
                if r >= 5 {
                    if m == 0 { lib.push(v) } else { refs.push(v) }
                }
            }
            next += ROUND;
            sim.run_until_idle();
        }
        stop.store(true, Ordering::Release);
        start.wait();
    });
    Ok((lib, refs))
}

fn dispatch_complete(scale: f64) -> Result<Row, String> {
    let n = ((4000.0 * scale) as usize).clamp(100, 200_000);
    let (kfd, node) = open(CpMode::Threaded)?;
    let sim = kfd.platform();
    let k = sim.register_kernel("empty", |_| Ok(()));
    let sig = buffer(&kfd, 4096)?;
    let s = Signal::new(&sig, 0).map_err(|e| e.to_string())?;
    s.init(&SignalInit::User { value: 1, mailbox: None });
    let q = aql(&kfd, node, 1024)?;
    let mut d = KernelDispatch::linear(k, 64, 64);
    d.completion_signal = s.handle();
    let w = AqlPacket::KernelDispatch(d).to_words().map_err(|e| e.to_string())?;
    let mut lat = Samples::with_capacity(n);
    for i in 0..n + 50 {
        s.store_relaxed(1);
        let t = Instant::now();
        q.submit(&w, std::hint::spin_loop);
        while s.load_acquire() != 0 {
            std::hint::spin_loop();
        }
        if i >= 50 {
            lat.push(t.elapsed().as_nanos() as f64);
        }
    }
    drop(q);
    // Reference: one round trip between two threads through two atomics.
    let (ping, pong) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut rt = Samples::with_capacity(n);
    std::thread::scope(|sc| {
        let (ping2, pong2) = (ping.clone(), pong.clone());
        let total = (n + 50) as u64;
        sc.spawn(move || {
            for i in 1..=total {
                while ping2.load(Ordering::Acquire) != i {
                    std::hint::spin_loop();
                }
                pong2.store(i, Ordering::Release);
            }
        });
        for i in 1..=total {
            let t = Instant::now();
            ping.store(i, Ordering::Release);
            while pong.load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
            if i > 50 {
                rt.push(t.elapsed().as_nanos() as f64);
            }
        }
    });
    Ok(Row::latency("queue.dispatch_complete.sim", &lat)
        .against("thread round trip through two atomics", &rt))
}

fn sdma_copy(scale: f64) -> Result<Row, String> {
    const BYTES: u64 = 64 << 20;
    let reps = ((20.0 * scale) as usize).clamp(3, 1000);
    let (kfd, node) = open(CpMode::Threaded)?;
    let (src, dst) = (buffer(&kfd, BYTES)?, buffer(&kfd, BYTES)?);
    for (i, w) in src.u64s().iter().enumerate() {
        w.store(i as u64 ^ 0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    }
    for w in dst.u64s() {
        w.store(0, Ordering::Relaxed);
    }
    let info = kfd
        .create_queue(&QueueDesc::new(node, QueueType::Sdma, 64 * 1024))
        .map_err(|e| e.to_string())?;
    let mut q = kfd.sdma_queue(info.handle).map_err(|e| e.to_string())?;
    let mut host = vec![0u8; BYTES as usize];
    let (mut engine, mut memcpy) = (Samples::with_capacity(reps), Samples::with_capacity(reps));
    for r in 0..reps + 1 {
        let t = Instant::now();
        let ticket = q
            .copy(dst.addr(), src.addr(), BYTES, SdmaCompletion::Fence, std::hint::spin_loop)
            .map_err(|e| e.to_string())?;
        q.wait(ticket, std::hint::spin_loop);
        let e = BYTES as f64 / t.elapsed().as_secs_f64();
        let t = Instant::now();
        src.read(0, &mut host).map_err(|e| e.to_string())?;
        let m = BYTES as f64 / t.elapsed().as_secs_f64();
        if r > 0 {
            engine.push(e);
            memcpy.push(m);
        }
    }
    let ok = src
        .u64s()
        .iter()
        .zip(dst.u64s())
        .all(|(a, b)| a.load(Ordering::Relaxed) == b.load(Ordering::Relaxed));
    if !ok {
        return Err("the simulated SDMA copy did not reproduce its source".into());
    }
    let mut row =
        Row::latency("queue.sdma_copy.sim", &engine).against("memcpy of the source", &memcpy);
    row.unit = "B/s";
    row.extra.insert("bytes".into(), BYTES.into());
    Ok(row)
}
