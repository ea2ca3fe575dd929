//! `queue.aql_submit.*`: the AQL submit path a real GPU takes, on plain memory, against its
//! floor; and the driver layer's submit on the simulator.
//!
//! - `queue.aql_submit.1p`: ns per packet through [`SingleProducer`] (the code of
//!   `SingleAqlQueue`) over [`LinuxMapping`]s of plain shared memory — ring, `amd_queue_t`
//!   indices and doorbell page — so the doorbell store is the one a real GPU gets (release
//!   fence, `sfence`, one plain store) and nothing simulated dilutes the ratio. The floor, in the
//!   same run and rounds interleaved: the fastest plain way to do the same work — the 64-byte
//!   body stores and the header's release store into a second ring of the same size, then the
//!   doorbell store a real GPU needs (release fence, `sfence`, one plain store; made by
//!   `hsakmt-linux`'s doorbell, which is nothing more). A consumer drains both rings between
//!   rounds, outside the timed region, so neither ever fills. Goal ratio ≤ 1.25.
//! - `queue.aql_submit.1p.mp`: the multi-producer path ([`AqlProducer::submit`]) from one
//!   thread, against the fastest plain way to do its work: a packet made visible in a ring that
//!   other producers may be writing to at once. That needs the slot reserved with one atomic
//!   add on the write index (on x86 a `lock xadd`, which also drains the store buffer) before
//!   the floor's stores, so the multi-producer floor is that add, then the `1p` floor's stores
//!   and doorbell. The add alone makes it about twice the `1p` floor (both are in the table);
//!   no multi-producer-safe code can come under it. Goal ratio ≤ 1.5.
//! - `queue.aql_submit.2p`: two threads submitting to one ring through the multi-producer
//!   path, ns per packet (a round's wall time / packets), next to two threads doing the floor's
//!   stores into disjoint halves of the floor's ring.
//! - `queue.aql_submit.driver`: ns per packet through the driver layer's submit path — the
//!   `QueueSubmitter` `KfdDriver::submitter` hands out once per queue (no lock, no allocation,
//!   no system call per packet) — over the simulator (step mode, drained between rounds), next
//!   to the facade's multi-producer submit on a queue of a second simulated device: the driver
//!   layer's own cost over the facade, both paying the simulator's doorbell. Goal ratio ≤ 1.5.
//!
//! Every row counts, over all its library rounds, the heap allocations made (the binary's
//! counting global allocator) and — for the driver — the calls it made to the simulated
//! device (`SimPlatform::device_calls`), the only way core reaches the kernel: goals
//! `allocations <= 0` and `device_calls <= 0` (no allocation, no system call on the submit
//! path). Counts are exact on every run, so `--check --quick` enforces them. Instructions per
//! packet of `1p`, `1p.mp` and the floor come from cachegrind: `cargo xtask bench` runs
//! [`submit_only`] under it with two packet counts and divides the difference.

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use hsakmt_core::config::DEFAULT_MEMORY_OBJECTS;
use hsakmt_core::driver::{AgentKind, Driver, DriverId, DriverKind, QueueParams};
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::aql::{AqlPacket, Barrier as AqlBarrier, PacketWords};
use hsakmt_core::queue::ring::{
    AMD_QUEUE_READ_DISPATCH_ID_OFFSET, AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET, AqlConsumer,
    AqlProducer, AqlRingMemory, SharedAqlCells, SingleProducer,
};
use hsakmt_hostmem::{map_shared_anywhere, thread_allocations};
use hsakmt_linux::{LinuxMapping, boxed_driver};
use hsakmt_sim::{CpMode, SimPlatform};

use super::{Row, Samples};
use crate::platform::AnyPlatform;

/// Packets per timed round.
const ROUND: u64 = 1024;
/// Ring slots: room for two rounds, drained after each.
const SLOTS: u64 = 2 * ROUND;
/// Rounds run before the measured ones.
const WARM_ROUNDS: usize = 5;

type Cells = SharedAqlCells<LinuxMapping>;

/// A ring, its indices and its doorbell in plain shared memory, every slot unpublished.
fn plain_ring() -> Result<Cells, String> {
    let map = |size: u64| {
        map_shared_anywhere(size).map(LinuxMapping::from).map_err(|e| format!("mmap: {e}"))
    };
    let cells = SharedAqlCells::new(AqlRingMemory {
        ring: map(SLOTS * 64)?,
        indices: map(4096)?,
        write_index_offset: AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET,
        read_index_offset: AMD_QUEUE_READ_DISPATCH_ID_OFFSET,
        doorbell: map(4096)?,
        doorbell_offset: 0,
    })
    .map_err(|e| e.to_string())?;
    AqlConsumer::new(cells.clone()).map_err(|e| e.to_string())?;
    SingleProducer::new(cells.clone()).map_err(|e| e.to_string())?.init_slots();
    Ok(cells)
}

/// Consumes every published packet of `cells` (outside the timed region).
fn drain(cells: &Cells) {
    if let Ok(c) = AqlConsumer::new(cells.clone()) {
        while c.pop().is_some() {}
    }
}

/// The floor: the stores a producer must make, without any bookkeeping.
struct Floor {
    cells: Cells,
    mask: u64,
}

impl Floor {
    #[inline]
    fn put(&self, index: u64, p: &PacketWords) {
        let m = self.cells.memory();
        let slot = (index & self.mask) as usize;
        let (d, q) = (m.ring.u32s().as_chunks::<16>().0, m.ring.u64s().as_chunks::<8>().0);
        if let (Some([header, dw1, ..]), Some([_, body @ ..])) = (d.get(slot), q.get(slot)) {
            dw1.store(p.dw[1], Ordering::Relaxed);
            for (w, v) in body.iter().zip(p.qw.iter()) {
                w.store(*v, Ordering::Relaxed);
            }
            header.store(p.dw[0], Ordering::Release);
        }
        // The doorbell store itself is the minimum a real GPU needs (ROCr's too): a release
        // fence, `sfence`, one plain store; `hsakmt-linux` makes exactly that.
        m.doorbell.ring_doorbell64(0, index);
    }
}

/// The multi-producer floor: one atomic add on the write index reserves the slot, then the
/// floor's stores and doorbell.
struct MpFloor(Floor);

impl MpFloor {
    #[inline]
    fn put(&self, p: &PacketWords) {
        let words = self.0.cells.memory().indices.u64s();
        let write = AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET / 8;
        if let Some(w) = words.get(write) {
            self.0.put(w.fetch_add(1, Ordering::AcqRel), p);
        }
    }
}

/// Runs `f`, adding the heap allocations it made (on this thread: another thread of the
/// process allocating meanwhile does not count) to `count`.
fn counted<R>(count: &mut u64, f: impl FnOnce() -> R) -> R {
    let before = thread_allocations();
    let r = f();
    *count += thread_allocations().wrapping_sub(before);
    r
}

fn per_packet(t: Instant, n: u64) -> f64 {
    t.elapsed().as_nanos() as f64 / n as f64
}

pub(super) fn rows(scale: f64) -> Result<Vec<Row>, String> {
    let rounds = ((400.0 * scale) as usize).clamp(20, 20_000);
    let nop = AqlPacket::BarrierAnd(AqlBarrier::NOP).to_words().map_err(|e| e.to_string())?;
    let floor_ring = plain_ring()?;
    let floor = Floor { cells: floor_ring.clone(), mask: SLOTS - 1 };
    let single_ring = plain_ring()?;
    let mut single = SingleProducer::new(single_ring.clone()).map_err(|e| e.to_string())?;
    let multi_ring = plain_ring()?;
    let multi = AqlProducer::new(multi_ring.clone()).map_err(|e| e.to_string())?;
    let mp_floor_ring = plain_ring()?;
    let mp_floor = MpFloor(Floor { cells: mp_floor_ring.clone(), mask: SLOTS - 1 });

    let (mut s1, mut smp, mut sfloor, mut smpfloor) = (
        Samples::with_capacity(rounds),
        Samples::with_capacity(rounds),
        Samples::with_capacity(rounds),
        Samples::with_capacity(rounds),
    );
    let mut next_floor = 0u64;
    let (mut alloc1, mut allocmp) = (0, 0);
    for r in 0..rounds + WARM_ROUNDS {
        let t = Instant::now();
        counted(&mut alloc1, || (0..ROUND).try_for_each(|_| single.try_submit(&nop).map(drop)))
            .map_err(|e| e.to_string())?;
        let a = per_packet(t, ROUND);
        let t = Instant::now();
        counted(&mut allocmp, || {
            for _ in 0..ROUND {
                multi.submit(&nop, std::hint::spin_loop);
            }
        });
        let b = per_packet(t, ROUND);
        let t = Instant::now();
        for i in 0..ROUND {
            floor.put(next_floor + i, &nop);
        }
        let c = per_packet(t, ROUND);
        next_floor += ROUND;
        let t = Instant::now();
        for _ in 0..ROUND {
            mp_floor.put(&nop);
        }
        let d = per_packet(t, ROUND);
        for ring in [&single_ring, &multi_ring, &floor_ring, &mp_floor_ring] {
            drain(ring);
        }
        if r >= WARM_ROUNDS {
            s1.push(a);
            smp.push(b);
            sfloor.push(c);
            smpfloor.push(d);
        }
    }
    const FLOOR: &str = "64-byte stores + header release + fence, sfence, plain doorbell store";
    const MP_FLOOR: &str = "atomic add reserving the slot + the 1p floor's stores and doorbell";
    let packets = (rounds + WARM_ROUNDS) as u64 * ROUND;
    let mut rows = vec![
        Row::latency("queue.aql_submit.1p", &s1)
            .against(FLOOR, &sfloor)
            .goal("ratio <= 1.25, allocations <= 0")
            .counts(packets, alloc1, None),
        Row::latency("queue.aql_submit.1p.mp", &smp)
            .against(MP_FLOOR, &smpfloor)
            .goal("ratio <= 1.5, allocations <= 0")
            .counts(packets, allocmp, None),
    ];
    drop(single);

    let shared = plain_ring()?;
    let producer = AqlProducer::new(shared.clone()).map_err(|e| e.to_string())?;
    let (s2, sfloor2, alloc2) =
        two_producers(&producer, &floor, &nop, rounds / 2, &[&shared, &floor_ring]);
    rows.push(
        Row::latency("queue.aql_submit.2p", &s2)
            .against("2 threads of the floor's stores", &sfloor2)
            .goal("ratio <= 1.25, allocations <= 0")
            .counts((rounds / 2 + WARM_ROUNDS) as u64 * ROUND, alloc2, None),
    );
    rows.push(driver_submit(rounds, &nop)?);
    Ok(rows)
}

/// Submits `packets` NOP packets through `path` (`1p`: the single producer, `1p.mp`: the
/// multi-producer path, `floor`: the floor's stores) into a fresh plain ring, untimed and
/// without draining — nothing else the process does depends on `packets`, so the difference
/// of two runs' instruction counts is the path's own.
///
/// # Errors
/// An unknown path, more packets than the ring's slots, or a ring that cannot be made.
pub(crate) fn submit_only(path: &str, packets: u64) -> Result<(), String> {
    if packets > SLOTS {
        return Err(format!("--packets {packets}: at most {SLOTS} (the ring is not drained)"));
    }
    let nop = AqlPacket::BarrierAnd(AqlBarrier::NOP).to_words().map_err(|e| e.to_string())?;
    let ring = plain_ring()?;
    match path {
        "1p" => {
            let mut p = SingleProducer::new(ring).map_err(|e| e.to_string())?;
            (0..packets).try_for_each(|_| p.try_submit(&nop).map(drop)).map_err(|e| e.to_string())
        }
        "1p.mp" => {
            let p = AqlProducer::new(ring).map_err(|e| e.to_string())?;
            for _ in 0..packets {
                p.submit(&nop, std::hint::spin_loop);
            }
            Ok(())
        }
        "floor" => {
            let floor = Floor { cells: ring, mask: SLOTS - 1 };
            (0..packets).for_each(|i| floor.put(i, &nop));
            Ok(())
        }
        "floor.mp" => {
            let floor = MpFloor(Floor { cells: ring, mask: SLOTS - 1 });
            (0..packets).for_each(|_| floor.put(&nop));
            Ok(())
        }
        other => Err(format!(
            "--submit-only {}: 1p, 1p.mp, floor or floor.mp",
            crate::text::escape(other)
        )),
    }
}

fn two_producers(
    q: &AqlProducer<Cells>,
    floor: &Floor,
    p: &PacketWords,
    rounds: usize,
    rings: &[&Cells],
) -> (Samples, Samples, u64) {
    let half = ROUND / 2;
    let allocations = AtomicU64::new(0);
    let start = Barrier::new(3);
    let end = Barrier::new(3);
    let stop = AtomicBool::new(false);
    let library = AtomicBool::new(true);
    let base = AtomicU64::new(0);
    let (mut lib, mut refs) = (Samples::with_capacity(rounds), Samples::with_capacity(rounds));
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let (start, end, stop, library, base) = (&start, &end, &stop, &library, &base);
            let allocations = &allocations;
            s.spawn(move || {
                loop {
                    start.wait();
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    if library.load(Ordering::Acquire) {
                        let mut n = 0;
                        counted(&mut n, || {
                            for _ in 0..half {
                                q.submit(p, std::hint::spin_loop);
                            }
                        });
                        allocations.fetch_add(n, Ordering::Relaxed);
                    } else {
                        let b = base.load(Ordering::Acquire) + t * half;
                        for i in 0..half {
                            floor.put(b + i, p);
                        }
                    }
                    end.wait();
                }
            });
        }
        let mut next = 0;
        for r in 0..rounds + WARM_ROUNDS {
            for lib_round in [true, false] {
                library.store(lib_round, Ordering::Release);
                base.store(next, Ordering::Release);
                let t = Instant::now();
                start.wait();
                end.wait();
                let v = per_packet(t, ROUND);
                if r >= WARM_ROUNDS {
                    if lib_round { lib.push(v) } else { refs.push(v) }
                }
            }
            next += ROUND;
            for ring in rings {
                drain(ring);
            }
        }
        stop.store(true, Ordering::Release);
        start.wait();
    });
    (lib, refs, allocations.into_inner())
}

/// The driver layer's submit per packet — a [`QueueSubmitter`](hsakmt_core::driver::QueueSubmitter)
/// the driver handed out once for the queue — on the simulator, against the facade's
/// multi-producer submit on a second simulated device.
fn driver_submit(rounds: usize, nop: &PacketWords) -> Result<Row, String> {
    let sim = SimPlatform::builder().cp_mode(CpMode::Step).build();
    let platform = AnyPlatform::Sim(sim.clone());
    let driver = boxed_driver(DriverKind::Sim, DriverId(0), platform, DEFAULT_MEMORY_OBJECTS);
    driver.init().map_err(|e| e.to_string())?;
    let gpu = (0..driver.agent_count())
        .filter_map(|i| driver.agent(i))
        .find(|a| a.kind == AgentKind::Gpu)
        .ok_or("the simulated machine has no GPU agent")?;
    let params = QueueParams { packets: SLOTS as u32, ..QueueParams::default() };
    let queue = driver.create_queue(gpu.id, &params).map_err(|e| e.to_string())?;
    let (kfd, node) = super::queue::open(CpMode::Step)?;
    let facade = super::queue::aql(&kfd, node, SLOTS)?;
    let (mut lib, mut refs) = (Samples::with_capacity(rounds), Samples::with_capacity(rounds));
    let mut submitter = driver.submitter(queue).map_err(|e| e.to_string())?;
    let (mut allocations, mut device_calls) = (0, 0);
    for r in 0..rounds + WARM_ROUNDS {
        let before = sim.device_calls();
        let t = Instant::now();
        counted(&mut allocations, || (0..ROUND).try_for_each(|_| submitter.submit(nop).map(drop)))
            .map_err(|e| e.to_string())?;
        let a = per_packet(t, ROUND);
        device_calls += sim.device_calls().wrapping_sub(before);
        let t = Instant::now();
        for _ in 0..ROUND {
            facade.submit(nop, std::hint::spin_loop);
        }
        let b = per_packet(t, ROUND);
        sim.run_until_idle();
        if let Some(sim) = kfd.platform().sim() {
            sim.run_until_idle();
        }
        if r >= WARM_ROUNDS {
            lib.push(a);
            refs.push(b);
        }
    }
    drop((facade, submitter));
    driver.destroy_queue(queue).map_err(|e| e.to_string())?;
    driver.shutdown().map_err(|e| e.to_string())?;
    Ok(Row::latency("queue.aql_submit.driver", &lib)
        .against("the facade's multi-producer submit on the simulator", &refs)
        .goal("ratio <= 1.5, allocations <= 0, device_calls <= 0")
        .counts((rounds + WARM_ROUNDS) as u64 * ROUND, allocations, Some(device_calls)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allocation_count_sees_an_allocation() {
        let mut n = 0;
        let v = counted(&mut n, || std::hint::black_box(vec![1u8; 100]));
        assert_eq!(v.len(), 100);
        assert!(n >= 1, "a Vec was allocated");
    }

    #[test]
    fn the_device_call_count_sees_the_drivers_ioctls() {
        let sim = SimPlatform::builder().cp_mode(CpMode::Step).build();
        let driver = boxed_driver(DriverKind::Sim, DriverId(0), AnyPlatform::Sim(sim.clone()), 64);
        let before = sim.device_calls();
        driver.init().unwrap();
        assert!(sim.device_calls() > before, "opening the device makes calls");
        driver.shutdown().unwrap();
    }

    #[test]
    fn the_plain_ring_and_the_floor_publish_and_ring_the_doorbell() {
        let nop = AqlPacket::BarrierAnd(AqlBarrier::NOP).to_words().unwrap();
        let cells = plain_ring().unwrap();
        let mut p = SingleProducer::new(cells.clone()).unwrap();
        let first = p.try_submit(&nop).unwrap();
        let consumer = AqlConsumer::new(cells.clone()).unwrap();
        assert_eq!(consumer.pop().map(|(i, w)| (i, w.dw[0])), Some((first, nop.dw[0])));
        assert_eq!(cells.memory().doorbell.u64s()[0].load(Ordering::Relaxed), first);
        let floor = Floor { cells: plain_ring().unwrap(), mask: SLOTS - 1 };
        floor.put(7, &nop);
        let consumer = AqlConsumer::new(floor.cells.clone()).unwrap();
        assert!(consumer.pop().is_none(), "slot 0 unpublished: the floor wrote slot 7");
        assert_eq!(floor.cells.memory().doorbell.u64s()[0].load(Ordering::Relaxed), 7);
        let mp = MpFloor(Floor { cells: plain_ring().unwrap(), mask: SLOTS - 1 });
        mp.put(&nop);
        mp.put(&nop);
        let consumer = AqlConsumer::new(mp.0.cells.clone()).unwrap();
        let popped: Vec<u64> = std::iter::from_fn(|| consumer.pop().map(|(i, _)| i)).collect();
        assert_eq!(popped, [0, 1], "the multi-producer floor reserves slots in order");
        assert_eq!(mp.0.cells.memory().doorbell.u64s()[0].load(Ordering::Relaxed), 1);
    }
}
