//! Threads at once against the threaded simulator: allocating, mapping, unmapping and freeing
//! memory, creating, setting, waiting on and destroying events, creating and destroying queues,
//! submitting kernel dispatches (to a queue of their own, and all to one shared multi-producer
//! queue) and SDMA copies, and waiting for their completion signals — for a bounded time. Then
//! every table of the library is checked and the simulated kernel's accounting must be back at
//! its baseline.
//!
//! `HSAKMT_STRESS_SECS` (default 3) sets the duration and `HSAKMT_STRESS_THREADS` (default 4)
//! the thread count, for longer runs: `HSAKMT_STRESS_SECS=60 cargo test --release --test stress
//! -- --nocapture`. `cargo xtask tsan` runs this test under ThreadSanitizer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use firmware_tests::queue_support::{Signals, cpu_node, gpu_nodes};
use firmware_tests::{SimKfd, device, driver};
use hsakmt_core::device::queue_manager::{AqlQueue, QueueDesc, QueueType, SdmaCompletion};
use hsakmt_core::device::{Allocation, EventDescriptor, MapNodes, SignalCondition};
use hsakmt_core::event::{EventHandle, Timeout, WaitResult};
use hsakmt_core::memory::MemFlags;
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::aql::{AqlPacket, KernelDispatch};
use hsakmt_core::queue::signal::{Mailbox, Signal};
use hsakmt_sim::{CpMode, SimAccounting, SimMapping, SimPlatform};

type K = SimKfd;

const COARSE_VRAM: MemFlags = MemFlags::NON_PAGED.union(MemFlags::COARSE_GRAIN);
const VISIBLE_VRAM: MemFlags = COARSE_VRAM.union(MemFlags::HOST_ACCESS);
const HOST: MemFlags = MemFlags::NON_PAGED.union(MemFlags::HOST_ACCESS);
/// How long any completion may take before the test calls it lost.
const PATIENCE: Timeout = Timeout::Millis(20_000);

/// This file's tests one at a time: the last one looks at the address space after a release,
/// where the kernel may at once place a mapping another test makes.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A small deterministic generator per thread.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Operations performed, by kind.
#[derive(Default)]
struct Counts {
    allocs: AtomicU64,
    maps: AtomicU64,
    unmaps: AtomicU64,
    frees: AtomicU64,
    events: AtomicU64,
    waits: AtomicU64,
    queues: AtomicU64,
    dispatches: AtomicU64,
    shared_dispatches: AtomicU64,
    copies: AtomicU64,
}

impl Counts {
    fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// What the threads share: the device, a multi-producer queue, a kernel, the GPU nodes.
struct Shared<'a> {
    kfd: &'a K,
    shared_queue: &'a AqlQueue<SimMapping>,
    kernel: u64,
    shared_event: EventHandle,
    gpus: Vec<u32>,
    cpu: u32,
    deadline: Instant,
    counts: &'a Counts,
}

/// A signal with an event mailbox: the processor decrements it and raises the event.
struct Completion {
    signals: Signals,
    event: EventHandle,
}

impl Completion {
    fn new(kfd: &K, n: usize) -> Self {
        let event = kfd.create_event(&EventDescriptor::signal()).unwrap();
        let info = kfd.event_info(event).unwrap();
        let signals = Signals::new(kfd, n, 0);
        for i in 0..n {
            signals
                .get(i)
                .set_mailbox(Some(Mailbox { address: info.mailbox.unwrap(), event_id: info.id }));
        }
        Completion { signals, event }
    }

    fn signal(&self, i: usize) -> Signal<'_, SimMapping> {
        self.signals.get(i)
    }

    /// Waits until signal `i` drops below 1.
    fn wait(&self, kfd: &K, i: usize) {
        let w = kfd
            .wait_signal(self.event, &self.signal(i), SignalCondition::Lt(1), PATIENCE, 20_000)
            .unwrap();
        assert_eq!(w.result, WaitResult::Complete, "a completion signal never fired");
    }

    fn release(self, kfd: &K) {
        let Completion { signals, event } = self;
        kfd.destroy_event(event).unwrap();
        kfd.free(signals.mem.alloc).unwrap();
    }
}

fn dispatch(kernel: u64, signal: u64) -> hsakmt_core::queue::aql::PacketWords {
    let mut d = KernelDispatch::linear(kernel, 64, 64);
    d.completion_signal = signal;
    AqlPacket::KernelDispatch(d).to_words().unwrap()
}

/// One thread's life: random operations until the deadline, then it frees what it holds.
fn worker(s: &Shared<'_>, t: u64) {
    let kfd = s.kfd;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
    let node = s.gpus[t as usize % s.gpus.len()];
    let done = Completion::new(kfd, 2);
    let mut allocs: Vec<(Allocation<SimMapping>, bool)> = Vec::new();
    let mut events: Vec<EventHandle> = Vec::new();
    while Instant::now() < s.deadline {
        match rng.below(11) {
            0 | 1 => {
                let (n, flags) = match rng.below(3) {
                    0 => (node, COARSE_VRAM),
                    1 => (node, VISIBLE_VRAM),
                    _ => (s.cpu, HOST),
                };
                let size = 4096 * (1 + rng.below(16));
                let a = kfd.alloc_memory(n, size, flags).unwrap();
                if let Some(m) = &a.mapping {
                    m.write(0, &t.to_ne_bytes()).unwrap();
                }
                allocs.push((a, false));
                Counts::bump(&s.counts.allocs);
                if allocs.len() > 24 {
                    let (a, _) = allocs.swap_remove(rng.below(allocs.len() as u64) as usize);
                    kfd.free(a).unwrap();
                    Counts::bump(&s.counts.frees);
                }
            }
            2 => {
                if let Some((a, mapped)) = allocs.iter_mut().find(|(_, m)| !m) {
                    let nodes = [node];
                    let on = if rng.below(4) == 0 { MapNodes::All } else { MapNodes::Only(&nodes) };
                    kfd.map_memory_to_gpu(a.addr, on).unwrap();
                    *mapped = true;
                    Counts::bump(&s.counts.maps);
                }
            }
            3 => {
                if let Some((a, mapped)) = allocs.iter_mut().find(|(_, m)| *m) {
                    kfd.unmap_memory_from_gpu(a.addr).unwrap();
                    *mapped = false;
                    Counts::bump(&s.counts.unmaps);
                }
            }
            4 => {
                if !allocs.is_empty() {
                    let (a, _) = allocs.swap_remove(rng.below(allocs.len() as u64) as usize);
                    if let Some(m) = &a.mapping {
                        let mut b = [0u8; 8];
                        m.read(0, &mut b).unwrap();
                        assert_eq!(u64::from_ne_bytes(b), t, "another thread's data");
                    }
                    // Freeing a mapped buffer unmaps it first.
                    kfd.free(a).unwrap();
                    Counts::bump(&s.counts.frees);
                }
            }
            5 => {
                if events.len() < 8 && rng.below(2) == 0 {
                    events.push(kfd.create_event(&EventDescriptor::signal()).unwrap());
                } else if let Some(e) = events.pop() {
                    kfd.destroy_event(e).unwrap();
                }
                Counts::bump(&s.counts.events);
            }
            6 => {
                if let Some(&e) = events.last() {
                    kfd.set_event(e).unwrap();
                    assert_eq!(
                        kfd.wait_event(e, Timeout::Immediate).unwrap(),
                        WaitResult::Complete
                    );
                    assert_eq!(
                        kfd.wait_event(e, Timeout::Immediate).unwrap(),
                        WaitResult::TimedOut
                    );
                    Counts::bump(&s.counts.waits);
                }
            }
            7 => {
                // A queue of its own: create, dispatch a few kernels, wait, destroy.
                let q =
                    kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).unwrap();
                let p = kfd.aql_queue(q.handle).unwrap();
                let n = 1 + rng.below(4);
                done.signal(0).store_release(n as i64);
                for _ in 0..n {
                    p.submit(&dispatch(s.kernel, done.signals.handle(0)), std::thread::yield_now);
                    Counts::bump(&s.counts.dispatches);
                }
                done.wait(kfd, 0);
                drop(p);
                kfd.destroy_queue(q.handle).unwrap();
                Counts::bump(&s.counts.queues);
            }
            8 => {
                // The shared queue: every thread's producer at once.
                done.signal(1).store_release(1);
                s.shared_queue
                    .submit(&dispatch(s.kernel, done.signals.handle(1)), std::thread::yield_now);
                done.wait(kfd, 1);
                Counts::bump(&s.counts.shared_dispatches);
            }
            9 => {
                // One event all threads share: some set it, others wait a little for it.
                if rng.below(2) == 0 {
                    kfd.set_event(s.shared_event).unwrap();
                } else {
                    let r = kfd.wait_event(s.shared_event, Timeout::Millis(1)).unwrap();
                    assert!(matches!(r, WaitResult::Complete | WaitResult::TimedOut));
                }
                Counts::bump(&s.counts.waits);
            }
            _ => {
                // An SDMA copy between two host buffers.
                let q = kfd.create_queue(&QueueDesc::new(node, QueueType::Sdma, 4096)).unwrap();
                let mut p = kfd.sdma_queue(q.handle).unwrap();
                let src = kfd.alloc_memory(s.cpu, 8192, HOST).unwrap();
                let dst = kfd.alloc_memory(s.cpu, 8192, HOST).unwrap();
                for a in [&src, &dst] {
                    kfd.map_memory_to_gpu(a.addr, MapNodes::Only(&[node])).unwrap();
                }
                let pattern = [t as u8 ^ 0x5A; 8192];
                src.mapping.as_ref().unwrap().write(0, &pattern).unwrap();
                done.signal(0).store_release(1);
                let completion = SdmaCompletion::Signal {
                    signal: done.signals.handle(0),
                    value: 0,
                    mailbox: done.signal(0).mailbox(),
                };
                p.copy(dst.addr, src.addr, 8192, completion, std::thread::yield_now).unwrap();
                done.wait(kfd, 0);
                let mut back = [0u8; 8192];
                dst.mapping.as_ref().unwrap().read(0, &mut back).unwrap();
                assert_eq!(back, pattern);
                drop(p);
                kfd.destroy_queue(q.handle).unwrap();
                kfd.free(src).unwrap();
                kfd.free(dst).unwrap();
                Counts::bump(&s.counts.copies);
            }
        }
    }
    for (a, _) in allocs {
        kfd.free(a).unwrap();
    }
    for e in events {
        kfd.destroy_event(e).unwrap();
    }
    done.release(kfd);
}

/// The library's counters and the kernel's accounting.
fn books(kfd: &K) -> (u32, usize, usize, SimAccounting) {
    // The recycle cache keeps only bookkeeping of freed allocations: give it back first.
    let _ = kfd.trim_memory();
    (kfd.memory_usage().objects, kfd.queue_count(), kfd.event_count(), kfd.platform().accounting())
}

#[test]
fn threads_at_once_keep_every_table_and_leak_nothing() {
    let _serial = serial();
    let secs = env_or("HSAKMT_STRESS_SECS", 3);
    let threads = env_or("HSAKMT_STRESS_THREADS", 4).max(1);
    let sim = SimPlatform::builder().cp_mode(CpMode::Threaded).build();
    let kfd: Box<K> = device(sim);
    kfd.open().unwrap();
    let gpus: Vec<u32> = gpu_nodes(&kfd).into_iter().take(threads as usize).collect();
    let cpu = cpu_node(&kfd);
    let kernel = kfd.platform().register_kernel("touch", |_| Ok(()));
    // Warm up what the process keeps for good: the event page and each node's doorbells.
    let e = kfd.create_event(&EventDescriptor::signal()).unwrap();
    kfd.destroy_event(e).unwrap();
    for &n in &gpus {
        for t in [QueueType::ComputeAql, QueueType::Sdma] {
            let q = kfd.create_queue(&QueueDesc::new(n, t, 4096)).unwrap();
            kfd.destroy_queue(q.handle).unwrap();
        }
    }
    let baseline = books(&kfd);
    let shared =
        kfd.create_queue(&QueueDesc::new(gpus[0], QueueType::ComputeAql, 1 << 16)).unwrap();
    let producer = kfd.aql_queue(shared.handle).unwrap();
    let shared_event = kfd.create_event(&EventDescriptor::signal()).unwrap();
    let counts = Counts::default();
    let start = Instant::now();
    let s = Shared {
        kfd: &kfd,
        shared_queue: &producer,
        kernel,
        shared_event,
        gpus,
        cpu,
        deadline: start + Duration::from_secs(secs),
        counts: &counts,
    };
    std::thread::scope(|scope| {
        for t in 0..threads {
            let s = &s;
            std::thread::Builder::new().spawn_scoped(scope, move || worker(s, t)).unwrap();
        }
    });
    let elapsed = start.elapsed();
    drop(producer);
    kfd.destroy_queue(shared.handle).unwrap();
    kfd.destroy_event(shared_event).unwrap();
    kfd.check_invariants().unwrap();
    assert_eq!(books(&kfd), baseline, "the library and the kernel are back at the baseline");
    let c = |a: &AtomicU64| a.load(Ordering::Relaxed);
    println!(
        "stress: {threads} threads for {elapsed:.1?}: {} allocs, {} maps, {} unmaps, {} frees, \
         {} event creates/destroys, {} event sets and waits, {} queues with {} dispatches, {} shared-queue \
         dispatches, {} SDMA copies",
        c(&counts.allocs),
        c(&counts.maps),
        c(&counts.unmaps),
        c(&counts.frees),
        c(&counts.events),
        c(&counts.waits),
        c(&counts.queues),
        c(&counts.dispatches),
        c(&counts.shared_dispatches),
        c(&counts.copies),
    );
    kfd.close().unwrap();
    assert_eq!(kfd.platform().accounting(), SimAccounting::default());
}

/// The driver layer shared by threads: allocation by region, signals, queues created and
/// destroyed (through the ring cache), dispatches and DMA copies completing signals, waits —
/// while other threads do the same; then the tables are consistent and shutting the driver
/// down leaves the kernel with nothing.
#[test]
fn threads_share_the_driver_layer() {
    let _serial = serial();
    use hsakmt_core::driver::{AgentKind, Driver, DriverKind, QueueParams, RegionKind, Waited};
    let secs = env_or("HSAKMT_STRESS_SECS", 3);
    let threads = env_or("HSAKMT_STRESS_THREADS", 4).max(1);
    let sim = SimPlatform::builder().cp_mode(CpMode::Threaded).build();
    let kernel = sim.register_kernel("touch", |_| Ok(()));
    let d = driver(DriverKind::Sim, sim.clone());
    d.init().unwrap();
    let gpus: Vec<_> = (0..d.agent_count())
        .filter_map(|i| d.agent(i))
        .filter(|a| a.kind == AgentKind::Gpu)
        .take(threads as usize)
        .map(|a| a.id)
        .collect();
    let region = |agent, kind| {
        d.regions(agent).unwrap().iter().copied().find(|r| r.kind == kind).unwrap().id
    };
    let shared = d.create_queue(gpus[0], &QueueParams::default()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(secs);
    let ops = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for t in 0..threads as usize {
            let (d, ops, gpus) = (&d, &ops, &gpus);
            std::thread::Builder::new()
                .spawn_scoped(scope, move || {
                    let gpu = gpus[t % gpus.len()];
                    let cpu = d.nearest_cpu(gpu).unwrap();
                    let (host, vram) = (
                        region(cpu, RegionKind::GlobalFineGrained),
                        region(gpu, RegionKind::GlobalCoarseGrained),
                    );
                    let mut i = 0u64;
                    while Instant::now() < deadline {
                        i += 1;
                        let src = d.allocate(host, 8192).unwrap();
                        let dst = d.allocate(vram, 8192).unwrap();
                        let back = d.allocate(host, 8192).unwrap();
                        d.write(src.addr, &[t as u8; 8192]).unwrap();
                        let done = d.create_signal(1).unwrap();
                        // A dispatch on a fresh queue (or the shared one), then a copy
                        // there and back.
                        let own = i
                            .is_multiple_of(2)
                            .then(|| d.create_queue(gpu, &QueueParams::default()).unwrap());
                        let mut k = KernelDispatch::linear(kernel, 64, 64);
                        k.completion_signal = done.0;
                        let packet = AqlPacket::KernelDispatch(k).to_words().unwrap();
                        d.submit(own.unwrap_or(shared), &[packet]).unwrap();
                        let w = d.signal_wait(done, SignalCondition::Eq(0), 20_000_000_000);
                        assert_eq!(w.unwrap(), Waited::Done(0));
                        d.signal_store(done, 1).unwrap();
                        d.copy(gpu, dst.addr, src.addr, 8192, &[], done).unwrap();
                        let w = d.signal_wait(done, SignalCondition::Eq(0), 20_000_000_000);
                        assert_eq!(w.unwrap(), Waited::Done(0));
                        d.signal_store(done, 1).unwrap();
                        d.copy(gpu, back.addr, dst.addr, 8192, &[], done).unwrap();
                        let w = d.signal_wait(done, SignalCondition::Eq(0), 20_000_000_000);
                        assert_eq!(w.unwrap(), Waited::Done(0));
                        let mut got = [0u8; 8192];
                        d.read(back.addr, &mut got).unwrap();
                        assert_eq!(got, [t as u8; 8192]);
                        if let Some(q) = own {
                            d.destroy_queue(q).unwrap();
                        }
                        d.destroy_signal(done).unwrap();
                        for b in [src, dst, back] {
                            d.free(b.addr).unwrap();
                        }
                        ops.fetch_add(1, Ordering::Relaxed);
                    }
                })
                .unwrap();
        }
    });
    d.destroy_queue(shared).unwrap();
    d.kfd().check_invariants().unwrap();
    println!(
        "stress (driver layer): {threads} threads for {secs} s: {} rounds of allocate, \
         dispatch, two DMA copies, wait, free",
        ops.load(Ordering::Relaxed)
    );
    d.shutdown().unwrap();
    assert_eq!(sim.accounting(), SimAccounting::default(), "the kernel holds nothing");
}

/// A driver dropped without `shutdown`, with queues, signals and memory alive: its views go
/// before the facade, which then closes the device — the kernel holds nothing and the address
/// space the facade reserved is given back.
#[test]
fn dropping_a_busy_driver_loses_nothing() {
    let _serial = serial();
    use hsakmt_core::driver::{AgentKind, Driver, DriverKind, QueueParams};
    let sim = SimPlatform::builder().cp_mode(CpMode::Threaded).build();
    let d = driver(DriverKind::Sim, sim.clone());
    d.init().unwrap();
    let gpu = (0..d.agent_count())
        .filter_map(|i| d.agent(i))
        .find(|a| a.kind == AgentKind::Gpu)
        .unwrap()
        .id;
    let q = d.create_queue(gpu, &QueueParams::default()).unwrap();
    let s = d.create_signal(1).unwrap();
    let region = d.regions(gpu).unwrap()[0].id;
    let b = d.allocate(region, 1 << 16).unwrap();
    d.copy(gpu, b.addr, b.addr + 4096, 4096, &[], s).unwrap();
    let _ = q;
    assert!(sim.accounting().queues > 0);
    let mapped = |addr: u64| {
        std::fs::read_to_string("/proc/self/maps").unwrap().lines().any(|l| {
            let (a, b) = l.split_whitespace().next().unwrap().split_once('-').unwrap();
            let (a, b) = (u64::from_str_radix(a, 16).unwrap(), u64::from_str_radix(b, 16).unwrap());
            (a..b).contains(&addr)
        })
    };
    assert!(mapped(b.addr));
    drop(d);
    assert_eq!(sim.accounting(), SimAccounting::default());
    // An engine thread may still hold a view of the buffer for a moment (a copy it was making
    // when the device closed): the release left its pages mapped, and its drop unmaps them.
    let deadline = Instant::now() + Duration::from_secs(5);
    while hsakmt_hostmem::placed::live_in(b.addr, 1 << 16) != (0, 0) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(hsakmt_hostmem::placed::live_in(b.addr, 1 << 16), (0, 0), "no view outlives");
    assert!(!mapped(b.addr), "the facade gave its address reservations back");
}
