//! The host-CPU driver through the `Driver` trait: CPU agents and regions, host memory,
//! AQL queues whose packets run registered host kernels on worker threads, barriers across
//! queues, signals, events, copies, pausing, faults and shutdown with work in flight.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use firmware_tests::queue_support::register_vadd;
use hsakmt_core::device::SignalCondition;
use hsakmt_core::driver::{
    AgentFeatures, AgentId, AgentKind, Capabilities, Driver, DriverError, DriverId, DriverKind,
    Policy, QueueId, QueueParams, RegionId, RegionKind, Registry, SignalId, Waited,
};
use hsakmt_core::error::{Error, ErrorKind};
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::aql::{AqlPacket, Barrier, HeaderFlags, KernelDispatch, PacketWords};
use hsakmt_core::uapi::{EC_QUEUE_WAVE_MEMORY_VIOLATION, EC_QUEUE_WAVE_TRAP};
use hsakmt_sim::{HostDriver, KernelFault, KernelRegistry, MAX_HOST_QUEUES, SimPlatform};

/// Generous: the machine running the tests is shared.
const LONG: u64 = 20_000_000_000;

fn driver() -> HostDriver {
    let d = HostDriver::new(DriverId(0));
    d.init().unwrap();
    d
}

fn cpu(d: &dyn Driver) -> AgentId {
    d.agent(0).unwrap().id
}

fn region(d: &dyn Driver, kind: RegionKind) -> RegionId {
    d.regions(cpu(d)).unwrap().iter().find(|r| r.kind == kind).unwrap().id
}

fn alloc(d: &dyn Driver, bytes: u64) -> u64 {
    d.allocate(region(d, RegionKind::GlobalFineGrained), bytes).unwrap().addr
}

fn write_u64s(d: &dyn Driver, addr: u64, values: &[u64]) {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
    d.write(addr, &bytes).unwrap();
}

fn read_u32s(d: &dyn Driver, addr: u64, n: usize) -> Vec<u32> {
    let mut bytes = vec![0u8; 4 * n];
    d.read(addr, &mut bytes).unwrap();
    bytes.chunks(4).map(|c| u32::from_ne_bytes(c.try_into().unwrap())).collect()
}

/// Kernel arguments `args` in the kernarg region.
fn kernargs(d: &dyn Driver, args: &[u64]) -> u64 {
    let k = d.allocate(region(d, RegionKind::Kernarg), 8 * args.len() as u64).unwrap().addr;
    write_u64s(d, k, args);
    k
}

fn dispatch(
    kernel: u64,
    grid: u32,
    wg: u16,
    kernarg: u64,
    signal: Option<SignalId>,
) -> PacketWords {
    let mut k = KernelDispatch::linear(kernel, grid, wg);
    k.kernarg_address = kernarg;
    k.completion_signal = signal.map_or(0, |s| s.0);
    AqlPacket::KernelDispatch(k).to_words().unwrap()
}

fn barrier(and: bool, deps: &[SignalId], signal: Option<SignalId>) -> PacketWords {
    let mut dep_signals = [0; 5];
    for (d, s) in dep_signals.iter_mut().zip(deps) {
        *d = s.0;
    }
    let b = Barrier {
        flags: HeaderFlags::SYSTEM,
        dep_signals,
        completion_signal: signal.map_or(0, |s| s.0),
    };
    if and { AqlPacket::BarrierAnd(b) } else { AqlPacket::BarrierOr(b) }.to_words().unwrap()
}

fn queue(d: &dyn Driver, packets: u32) -> QueueId {
    d.create_queue(cpu(d), &QueueParams { packets, ..QueueParams::default() }).unwrap()
}

fn done(d: &dyn Driver, s: SignalId) {
    assert_eq!(d.signal_wait(s, SignalCondition::Eq(0), LONG).unwrap(), Waited::Done(0));
}

/// Waits until `q`'s processor has counted `n` packets consumed (it counts after a batch, so
/// a completion signal may come first).
fn consumed(host: &HostDriver, q: QueueId, n: u64) {
    let t = Instant::now();
    while host.queue_state(q).unwrap().packets < n {
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", host.queue_state(q));
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(host.queue_state(q).unwrap().packets, n);
}

#[test]
fn agents_and_regions_of_the_machine() {
    let host = driver();
    let d: &dyn Driver = &host;
    assert_eq!(d.kind(), DriverKind::Host);
    assert_eq!(d.version(), (1, 0));
    assert_eq!(
        d.capabilities(),
        Capabilities::KERNEL_DISPATCH
            | Capabilities::HOST_KERNELS
            | Capabilities::DMA_COPY
            | Capabilities::REGISTER
    );
    assert!(d.agent_count() >= 1);
    let cores: u32 = (0..d.agent_count()).map(|i| d.agent(i).unwrap().compute_units).sum();
    assert!(cores >= 1);
    for i in 0..d.agent_count() {
        let a = d.agent(i).unwrap();
        assert_eq!(a.id, AgentId { driver: DriverId(0), node: i as u32 });
        assert_eq!((a.kind, a.name.as_str(), a.gpu_id, a.gfx), (AgentKind::Cpu, "cpu", 0, None));
        assert_eq!(a.features, AgentFeatures::KERNEL_DISPATCH | AgentFeatures::AGENT_DISPATCH);
        assert_eq!(d.nearest_cpu(a.id), Some(a.id));
        let regions = d.regions(a.id).unwrap();
        let kinds: Vec<_> = regions.iter().map(|r| r.kind).collect();
        assert_eq!(kinds, [RegionKind::GlobalFineGrained, RegionKind::Kernarg]);
        for r in &regions {
            assert!(r.host_accessible && r.allocatable && r.size > 0);
            assert_eq!((r.granule, r.alignment), (4096, 4096));
        }
        assert!(d.available_memory(a.id).unwrap() <= regions[0].size);
        let c = d.clock_counters(a.id).unwrap();
        assert_eq!((c.gpu, c.system_frequency), (0, 1_000_000_000));
        assert!(c.cpu > 0 && c.system >= c.cpu);
    }
    let stranger = AgentId { driver: DriverId(1), node: 0 };
    assert_eq!(d.regions(stranger), Err(DriverError::InvalidAgent(stranger)));
    let beyond = AgentId { driver: DriverId(0), node: 99 };
    assert_eq!(d.clock_counters(beyond), Err(DriverError::InvalidAgent(beyond)));
    assert_eq!(d.peer_links(), 0);
}

#[test]
fn numa_nodes_of_a_captured_machine() {
    let root = std::env::temp_dir().join(format!("hsakmt-host-driver-{}", std::process::id()));
    let files = [
        ("proc/meminfo", "MemTotal: 8388608 kB\nMemAvailable: 2097152 kB\n"),
        ("sys/devices/system/node/node0/cpulist", "0-7\n"),
        ("sys/devices/system/node/node0/meminfo", "Node 0 MemTotal: 4194304 kB\n"),
        ("sys/devices/system/node/node1/cpulist", "8-15\n"),
        ("sys/devices/system/node/node1/meminfo", "Node 1 MemTotal: 1048576 kB\n"),
        ("sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "2450000\n"),
    ];
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let d = HostDriver::new(DriverId(2)).with_system_root(&root);
    assert_eq!(d.agent_count(), 0, "no agents before init");
    d.init().unwrap();
    assert_eq!(d.agent_count(), 2);
    for (i, (gib, avail)) in [(4u64, 2u64), (1, 1)].into_iter().enumerate() {
        let a = d.agent(i).unwrap();
        assert_eq!(
            (a.id.driver, a.id.node, a.compute_units, a.max_clock_mhz),
            (DriverId(2), i as u32, 8, 2450)
        );
        assert!(d.regions(a.id).unwrap().iter().all(|r| r.size == gib << 30));
        assert_eq!(d.available_memory(a.id).unwrap(), avail << 30, "MemAvailable, capped");
    }
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn nothing_works_before_init_or_after_shutdown() {
    let d = HostDriver::new(DriverId(0));
    let agent = AgentId { driver: DriverId(0), node: 0 };
    assert_eq!(d.create_signal(1), Err(DriverError::NotInitialized));
    assert_eq!(d.create_event(false, false), Err(DriverError::NotInitialized));
    assert_eq!(d.regions(agent), Err(DriverError::NotInitialized));
    d.init().unwrap();
    d.init().unwrap();
    let s = d.create_signal(1).unwrap();
    let b = alloc(&d, 100);
    d.shutdown().unwrap();
    d.shutdown().unwrap();
    assert_eq!(d.agent_count(), 0);
    assert_eq!(d.memory_table_len(), 0);
    assert_eq!(d.signal_load(s), Err(DriverError::NotInitialized));
    assert_eq!(d.free(b), Err(DriverError::NotInitialized));
    assert_eq!(d.create_queue(agent, &QueueParams::default()), Err(DriverError::NotInitialized));
    // Initialisable again, with nothing left over.
    d.init().unwrap();
    assert_eq!(d.signal_load(s), Err(DriverError::InvalidHandle));
    assert_eq!(d.free(b), Err(DriverError::InvalidHandle));
}

#[test]
fn allocate_write_read_free_and_their_errors() {
    let host = driver();
    let d: &dyn Driver = &host;
    let agent = cpu(d);
    let r = region(d, RegionKind::GlobalFineGrained);
    let b = d.allocate(r, 5000).unwrap();
    assert_eq!((b.size, b.region, b.addr % 4096), (8192, r, 0));
    let mut zero = [1u8; 64];
    d.read(b.addr + 8000, &mut zero).unwrap();
    assert_eq!(zero, [0; 64], "fresh memory is zeroed");
    d.write(b.addr + 4093, b"across a page").unwrap();
    let mut back = [0u8; 13];
    d.read(b.addr + 4093, &mut back).unwrap();
    assert_eq!(&back, b"across a page");
    assert_eq!(d.write(b.addr + 8190, &[0; 4]), Err(DriverError::InvalidHandle), "past the end");
    assert_eq!(d.read(0x1000, &mut back), Err(DriverError::InvalidHandle), "no allocation");
    assert_eq!(d.map(b.addr, &[agent]), Ok(b.addr));
    assert_eq!(d.map(b.addr, &[]), Ok(b.addr));
    let stranger = AgentId { driver: DriverId(3), node: 0 };
    assert_eq!(d.map(b.addr, &[stranger]), Err(DriverError::InvalidAgent(stranger)));
    assert_eq!(d.map(b.addr + 64, &[]), Err(DriverError::InvalidHandle));
    assert_eq!(d.unmap(b.addr), Ok(()));
    let k = d.allocate(region(d, RegionKind::Kernarg), 1).unwrap();
    assert_eq!(k.size, 4096);
    d.free(b.addr).unwrap();
    assert_eq!(d.free(b.addr), Err(DriverError::InvalidHandle), "double free");
    assert_eq!(d.free(0xdead_0000), Err(DriverError::InvalidHandle), "unknown address");
    assert_eq!(d.free(k.addr + 8), Err(DriverError::InvalidHandle), "inside, not the start");
    let mut gone = [0u8; 1];
    assert_eq!(d.read(b.addr, &mut gone), Err(DriverError::InvalidHandle), "freed");
    d.free(k.addr).unwrap();
    // A CPU agent has no group or private segment: only its two regions exist.
    let group = RegionId { agent, index: 2 };
    assert_eq!(d.allocate(group, 64), Err(DriverError::InvalidRegion(group)));
    assert_eq!(d.allocate(r, 0), Err(DriverError::InvalidArgument("allocation size")));
    let huge = d.allocate(r, u64::MAX).unwrap_err();
    assert_eq!(huge.kind(), ErrorKind::OutOfResources);
    assert_eq!(d.export_dmabuf(0, 0).unwrap_err().kind(), ErrorKind::NotSupported);
    assert_eq!(d.import_dmabuf(3, &[]).unwrap_err().kind(), ErrorKind::NotSupported);
    assert_eq!(d.svm_set(0, 4096, &[]).unwrap_err().kind(), ErrorKind::NotSupported);
    assert_eq!(d.svm_get(0, 4096, &mut []).unwrap_err().kind(), ErrorKind::NotSupported);
    assert!(d.available_memory(agent).unwrap() > 0);
}

#[test]
fn registered_memory_is_reachable_by_kernels() {
    let host = driver();
    let d: &dyn Driver = &host;
    let mine = hsakmt_hostmem::map_shared_anywhere(8192).unwrap();
    let at = mine.addr() + 100;
    assert_eq!(d.register(at, 40), Ok(at));
    assert_eq!(d.register(at, 40).unwrap_err().kind(), ErrorKind::AlreadyRegistered);
    assert_eq!(d.map(at, &[]), Ok(at));
    let fill = host.register_kernel("fill", |ctx| {
        let p = ctx.kernarg_u64(0)?;
        for [x, _, _] in ctx.work_items() {
            ctx.store_u32(p + 4 * u64::from(x), 7 + x)?;
        }
        Ok(())
    });
    let q = queue(d, 64);
    let s = d.create_signal(1).unwrap();
    // Kernels see the registration's pages (device address = host address).
    d.submit(q, &[dispatch(fill, 10, 4, kernargs(d, &[mine.addr() + 96]), Some(s))]).unwrap();
    done(d, s);
    let mut out = [0u8; 8];
    mine.read(96, &mut out).unwrap();
    assert_eq!(out, [7, 0, 0, 0, 8, 0, 0, 0]);
    assert_eq!(d.free(at).unwrap_err(), DriverError::InvalidHandle, "not an allocation");
    d.deregister(at).unwrap();
    assert_eq!(d.deregister(at).unwrap_err().kind(), ErrorKind::NotRegistered);
    let b = alloc(d, 64);
    assert_eq!(d.deregister(b).unwrap_err().kind(), ErrorKind::NotRegistered);
    // Unmapped memory cannot be registered (below `vm.mmap_min_addr`, nothing is mapped).
    assert_eq!(d.register(0x2000, 64).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(d.register(0, 64).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn vector_add_through_the_driver_trait() {
    let host = driver();
    let vadd = register_vadd(&host.kernels());
    let d: &dyn Driver = &host;
    let n = 10_000u32;
    let (a, b, c) =
        (alloc(d, 4 * u64::from(n)), alloc(d, 4 * u64::from(n)), alloc(d, 4 * u64::from(n)));
    let av: Vec<u8> = (0..n).flat_map(|i| i.to_ne_bytes()).collect();
    let bv: Vec<u8> = (0..n).flat_map(|i| (3 * i + 1000).to_ne_bytes()).collect();
    d.write(a, &av).unwrap();
    d.write(b, &bv).unwrap();
    let s = d.create_signal(1).unwrap();
    let q = queue(d, 256);
    assert_eq!(d.submit(q, &[dispatch(vadd, n, 256, kernargs(d, &[a, b, c]), Some(s))]), Ok(0));
    done(d, s);
    let out = read_u32s(d, c, n as usize);
    assert!(out.iter().enumerate().all(|(i, v)| *v == 4 * i as u32 + 1000));
    let st = host.queue_state(q).unwrap();
    assert!(st.active && st.fault.is_none());
    consumed(&host, q, 1);
    d.destroy_queue(q).unwrap();
    assert_eq!(d.destroy_queue(q), Err(DriverError::InvalidHandle), "stale id");
    assert_eq!(d.submit(q, &[barrier(true, &[], None)]), Err(DriverError::InvalidHandle));
}

#[test]
fn one_registry_serves_the_simulator_and_the_host() {
    let kernels = KernelRegistry::new();
    let vadd = register_vadd(&kernels);
    let sim = SimPlatform::builder().kernels(kernels.clone()).build();
    let host = HostDriver::with_kernels(DriverId(1), kernels.clone());
    assert_eq!(sim.kernel_name(vadd).as_deref(), Some("vadd"));
    assert_eq!(host.kernels().name(vadd).as_deref(), Some("vadd"));
    let later = sim.register_kernel("later", |_| Ok(()));
    assert_eq!(host.kernels().name(later).as_deref(), Some("later"));
    assert_eq!(kernels.len(), 2);
}

#[test]
fn barrier_and_across_two_queues() {
    let host = driver();
    let d: &dyn Driver = &host;
    let buf = alloc(d, 4096);
    // Queue B: wait for the gate, then buf[0] = 41.
    let store = host.register_kernel("store", |ctx| ctx.store_u32(ctx.kernarg_u64(0)?, 41));
    // Queue A: wait for B's dispatch, then buf[1] = buf[0] + 1.
    let next = host.register_kernel("next", |ctx| {
        let p = ctx.kernarg_u64(0)?;
        ctx.store_u32(p + 4, ctx.load_u32(p)? + 1)
    });
    let (gate, sb, sa) =
        (d.create_signal(1).unwrap(), d.create_signal(1).unwrap(), d.create_signal(1).unwrap());
    let (qa, qb) = (queue(d, 64), queue(d, 64));
    let args = kernargs(d, &[buf]);
    d.submit(qa, &[barrier(true, &[sb], None), dispatch(next, 1, 1, args, Some(sa))]).unwrap();
    d.submit(qb, &[barrier(true, &[gate], None), dispatch(store, 1, 1, args, Some(sb))]).unwrap();
    assert_eq!(d.signal_wait(sa, SignalCondition::Eq(0), 30_000_000).unwrap(), Waited::TimedOut);
    assert_eq!(read_u32s(d, buf, 2), [0, 0]);
    d.signal_store(gate, 0).unwrap();
    done(d, sa);
    assert_eq!(read_u32s(d, buf, 2), [41, 42]);
    assert_eq!(d.signal_load(sb), Ok(0));
    // A barrier-OR needs only one of its signals.
    let (never, now, or_done) =
        (d.create_signal(1).unwrap(), d.create_signal(0).unwrap(), d.create_signal(1).unwrap());
    d.submit(qa, &[barrier(false, &[never, now], Some(or_done))]).unwrap();
    done(d, or_done);
    assert_eq!(d.signal_load(never), Ok(1));
}

#[test]
fn a_thousand_chained_dispatches() {
    let host = driver();
    let d: &dyn Driver = &host;
    let counter = alloc(d, 4096);
    // Each dispatch reads the counter and writes it back plus one: only in-order execution,
    // one dispatch after the other, counts to 1000.
    let bump = host.register_kernel("bump", |ctx| {
        let p = ctx.kernarg_u64(0)?;
        ctx.store_u64(p, ctx.load_u64(p)? + 1)
    });
    let q = queue(d, 64);
    let s = d.create_signal(1000).unwrap();
    let args = kernargs(d, &[counter]);
    let packets: Vec<_> = (0..1000).map(|_| dispatch(bump, 1, 1, args, Some(s))).collect();
    // 1000 packets through a 64-slot ring: submission waits for the worker to make room.
    assert_eq!(d.submit(q, &packets[..500]), Ok(0));
    for (i, p) in packets[500..].iter().enumerate() {
        assert_eq!(d.submit(q, std::slice::from_ref(p)), Ok(500 + i as u64));
    }
    done(d, s);
    let mut v = [0u8; 8];
    d.read(counter, &mut v).unwrap();
    assert_eq!(u64::from_ne_bytes(v), 1000);
    consumed(&host, q, 1000);
}

static ERRORS: AtomicU32 = AtomicU32::new(0);
static ERROR_QUEUE: AtomicU32 = AtomicU32::new(u32::MAX);

fn on_error(queue: QueueId, kind: ErrorKind) {
    assert_eq!(kind, ErrorKind::DeviceFault);
    ERROR_QUEUE.store(queue.index, Ordering::SeqCst);
    ERRORS.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn a_faulting_kernel_stops_the_queue_and_calls_back() {
    let host = driver();
    let d: &dyn Driver = &host;
    let wild = host.register_kernel("wild", |ctx| ctx.store_u32(0x10, 1));
    let trap = host.register_kernel("trap", |_| Err(KernelFault::Trap(3)));
    let ok = host.register_kernel("ok", |_| Ok(()));
    let params =
        QueueParams { packets: 64, error_callback: Some(on_error), ..QueueParams::default() };
    let q = d.create_queue(cpu(d), &params).unwrap();
    let (s1, s2) = (d.create_signal(1).unwrap(), d.create_signal(1).unwrap());
    d.submit(q, &[dispatch(wild, 1, 1, 0, Some(s1)), dispatch(ok, 1, 1, 0, Some(s2))]).unwrap();
    let t = Instant::now();
    while ERRORS.load(Ordering::SeqCst) == 0 {
        assert!(t.elapsed() < Duration::from_secs(20), "no error callback");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(ERROR_QUEUE.load(Ordering::SeqCst), q.index);
    let f = host.queue_fault(q).unwrap();
    assert_eq!((f.exception, f.packet, f.address), (EC_QUEUE_WAVE_MEMORY_VIOLATION, 0, Some(0x10)));
    // Neither the faulting packet nor the one behind it completed, and the queue takes no
    // more work.
    assert_eq!(d.signal_wait(s2, SignalCondition::Eq(0), 20_000_000), Ok(Waited::TimedOut));
    assert_eq!((d.signal_load(s1), d.signal_load(s2)), (Ok(1), Ok(1)));
    assert!(!host.queue_state(q).unwrap().active);
    assert_eq!(
        d.submit(q, &[dispatch(ok, 1, 1, 0, None)]).unwrap_err().kind(),
        ErrorKind::DeviceFault
    );
    // Other queues are unaffected; a trap is a fault too; destroying a faulted queue works.
    let q2 = d.create_queue(cpu(d), &params).unwrap();
    d.submit(q2, &[dispatch(trap, 1, 1, 0, None)]).unwrap();
    let t = Instant::now();
    while host.queue_fault(q2).is_none() {
        assert!(t.elapsed() < Duration::from_secs(20), "no trap fault");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(host.queue_fault(q2).unwrap().exception, EC_QUEUE_WAVE_TRAP);
    d.destroy_queue(q).unwrap();
    d.destroy_queue(q2).unwrap();
    let q3 = queue(d, 64);
    let s3 = d.create_signal(1).unwrap();
    d.submit(q3, &[dispatch(ok, 1, 1, 0, Some(s3))]).unwrap();
    done(d, s3);
}

#[test]
fn signal_waits_and_timeouts() {
    let host = driver();
    let d: &dyn Driver = &host;
    let s = d.create_signal(5).unwrap();
    assert_eq!(s.0 % 64, 0, "handles are amd_signal_t addresses");
    let mut raw = [0u8; 16];
    d.read(s.0, &mut raw).unwrap();
    assert_eq!(raw[..8], 1i64.to_ne_bytes(), "kind: user");
    assert_eq!(raw[8..], 5i64.to_ne_bytes(), "value");
    assert_eq!(d.signal_wait(s, SignalCondition::Eq(5), 0), Ok(Waited::Done(5)));
    assert_eq!(d.signal_wait(s, SignalCondition::Ne(5), 0), Ok(Waited::TimedOut));
    assert_eq!(d.signal_wait(s, SignalCondition::Lt(6), 0), Ok(Waited::Done(5)));
    assert_eq!(d.signal_wait(s, SignalCondition::Gte(6), 0), Ok(Waited::TimedOut));
    let t = Instant::now();
    assert_eq!(d.signal_wait(s, SignalCondition::Eq(0), 5_000_000), Ok(Waited::TimedOut));
    assert!(t.elapsed() >= Duration::from_millis(5));
    // A store on another thread wakes a sleeping waiter.
    std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            d.signal_store(s, -3).unwrap();
        });
        assert_eq!(d.signal_wait(s, SignalCondition::Lt(0), u64::MAX), Ok(Waited::Done(-3)));
    });
    // Many wake-ups in a row, none lost.
    let (ping, pong) = (d.create_signal(0).unwrap(), d.create_signal(0).unwrap());
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for i in 1..=300 {
                assert_eq!(d.signal_wait(ping, SignalCondition::Eq(i), LONG), Ok(Waited::Done(i)));
                d.signal_store(pong, i).unwrap();
            }
        });
        for i in 1..=300 {
            d.signal_store(ping, i).unwrap();
            assert_eq!(d.signal_wait(pong, SignalCondition::Eq(i), LONG), Ok(Waited::Done(i)));
        }
    });
    // Destroying a signal ends its waits.
    std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            d.destroy_signal(s).unwrap();
        });
        assert_eq!(
            d.signal_wait(s, SignalCondition::Eq(99), LONG),
            Err(DriverError::InvalidHandle)
        );
    });
    assert_eq!(d.signal_load(s), Err(DriverError::InvalidHandle));
    assert_eq!(d.destroy_signal(s), Err(DriverError::InvalidHandle));
    assert_eq!(d.signal_store(SignalId(s.0 + 8), 0), Err(DriverError::InvalidHandle));
    assert_eq!(
        d.signal_wait(SignalId(0), SignalCondition::Eq(0), 0),
        Err(DriverError::InvalidHandle)
    );
}

#[test]
fn events_auto_manual_any_all() {
    let host = driver();
    let d: &dyn Driver = &host;
    let auto = d.create_event(false, false).unwrap();
    let manual = d.create_event(true, true).unwrap();
    // Manual reset: stays signaled through waits until reset.
    for _ in 0..2 {
        assert_eq!(d.wait_events(&[manual], false, 0), Ok(Waited::Done(0)));
    }
    d.reset_event(manual).unwrap();
    assert_eq!(d.wait_events(&[manual], false, 1_000_000), Ok(Waited::TimedOut));
    // Auto reset: one wait consumes it.
    d.set_event(auto).unwrap();
    assert_eq!(d.wait_events(&[manual, auto], false, 0), Ok(Waited::Done(1)));
    assert_eq!(d.wait_events(&[auto], false, 0), Ok(Waited::TimedOut));
    // All: only when every event is signaled, and then the auto-reset ones are consumed.
    d.set_event(manual).unwrap();
    assert_eq!(d.wait_events(&[auto, manual], true, 2_000_000), Ok(Waited::TimedOut));
    std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            d.set_event(auto).unwrap();
        });
        assert_eq!(d.wait_events(&[auto, manual], true, LONG), Ok(Waited::Done(0)));
    });
    assert_eq!(d.wait_events(&[auto], false, 0), Ok(Waited::TimedOut));
    assert_eq!(d.wait_events(&[manual], false, 0), Ok(Waited::Done(0)));
    // Errors: no events, unknown and destroyed events (also while waited on).
    assert_eq!(d.wait_events(&[], false, 0), Err(DriverError::InvalidArgument("event count")));
    let gone = d.create_event(false, false).unwrap();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            d.destroy_event(gone).unwrap();
        });
        assert_eq!(d.wait_events(&[gone], false, LONG), Err(DriverError::InvalidHandle));
    });
    assert_eq!(d.set_event(gone), Err(DriverError::InvalidHandle));
    assert_eq!(d.destroy_event(gone), Err(DriverError::InvalidHandle));
}

#[test]
fn copies_run_on_the_dma_engine() {
    let host = driver();
    let d: &dyn Driver = &host;
    let n = 3 << 20; // three DMA chunks
    let (src, dst) = (alloc(d, n), alloc(d, n));
    let data: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
    d.write(src, &data).unwrap();
    let s = d.create_signal(1).unwrap();
    d.copy(cpu(d), dst, src, n, &[], s).unwrap();
    done(d, s);
    let mut back = vec![0u8; n as usize];
    d.read(dst, &mut back).unwrap();
    assert!(back == data);
    // Overlapping copies move like memmove, in both directions.
    d.signal_store(s, 1).unwrap();
    d.copy(cpu(d), src + 1000, src, (2 << 20) + 5, &[], s).unwrap();
    done(d, s);
    d.read(src + 1000, &mut back[..(2 << 20) + 5]).unwrap();
    assert!(back[..(2 << 20) + 5] == data[..(2 << 20) + 5]);
    d.signal_store(s, 1).unwrap();
    d.copy(cpu(d), src, src + 1000, (2 << 20) + 5, &[], s).unwrap();
    done(d, s);
    d.read(src, &mut back[..(2 << 20) + 5]).unwrap();
    assert!(back[..(2 << 20) + 5] == data[..(2 << 20) + 5]);
    // Ranges outside host memory are refused before anything happens.
    assert_eq!(
        d.copy(cpu(d), dst, src, n + 1, &[], s).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        d.copy(cpu(d), 0x1000, src, 8, &[], s).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(d.copy(cpu(d), dst, src, 0, &[], s).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(d.copy(cpu(d), dst, src, 8, &[], SignalId(8)), Err(DriverError::InvalidHandle));
}

#[test]
fn pausing_and_resuming_a_queue() {
    let host = driver();
    let d: &dyn Driver = &host;
    let ok = host.register_kernel("ok", |_| Ok(()));
    let q = queue(d, 64);
    d.update_queue(q, 0, 0).unwrap();
    assert!(!host.queue_state(q).unwrap().active);
    let s = d.create_signal(3).unwrap();
    let p = dispatch(ok, 4, 2, 0, Some(s));
    d.submit(q, &[p, p, p]).unwrap();
    assert_eq!(d.signal_wait(s, SignalCondition::Eq(0), 30_000_000), Ok(Waited::TimedOut));
    assert_eq!(d.signal_load(s), Ok(3));
    d.update_queue(q, 50, 2).unwrap();
    done(d, s);
    let st = host.queue_state(q).unwrap();
    assert_eq!((st.active, st.percentage, st.priority), (true, 50, 11));
    consumed(&host, q, 3);
    assert_eq!(d.update_queue(q, 101, 0), Err(DriverError::InvalidArgument("queue percentage")));
    assert_eq!(d.update_queue(q, 100, 4).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(d.set_cu_mask(q, &[1]).unwrap_err().kind(), ErrorKind::NotSupported);
}

#[test]
fn queue_parameters_and_capacity() {
    let host = driver();
    let d: &dyn Driver = &host;
    let agent = cpu(d);
    for (packets, percentage, priority) in
        [(100, 100, 0), (32, 100, 0), (1 << 18, 100, 0), (64, 0, 0), (64, 101, 0), (64, 100, -4)]
    {
        let p = QueueParams { packets, percentage, priority, ..QueueParams::default() };
        assert_eq!(
            d.create_queue(agent, &p).unwrap_err().kind(),
            ErrorKind::InvalidArgument,
            "{p:?}"
        );
    }
    let stranger = AgentId { driver: DriverId(0), node: 77 };
    assert_eq!(
        d.create_queue(stranger, &QueueParams::default()),
        Err(DriverError::InvalidAgent(stranger))
    );
    let queues: Vec<_> = (0..MAX_HOST_QUEUES).map(|_| queue(d, 64)).collect();
    assert_eq!(
        d.create_queue(agent, &QueueParams::default()),
        Err(DriverError::CapacityExhausted("queue"))
    );
    d.destroy_queue(queues[5]).unwrap();
    let again = queue(d, 64);
    assert_eq!(again.index, queues[5].index);
    assert_ne!(again.generation, queues[5].generation);
    assert_eq!(d.submit(again, &[]), Err(DriverError::InvalidArgument("no packets")));
}

#[test]
fn shutdown_with_work_in_flight() {
    let host = driver();
    let d: &dyn Driver = &host;
    let slow = host.register_kernel("slow", |_| {
        std::thread::sleep(Duration::from_millis(2));
        Ok(())
    });
    let s = d.create_signal(1).unwrap();
    let gate = d.create_signal(1).unwrap();
    let (q1, q2, q3) = (queue(d, 1024), queue(d, 64), queue(d, 64));
    let p = dispatch(slow, 8, 1, 0, Some(s));
    d.submit(q1, &vec![p; 500]).unwrap();
    d.submit(q2, &[barrier(true, &[gate], None), p]).unwrap(); // blocked forever
    d.update_queue(q3, 0, 0).unwrap();
    d.submit(q3, &[p; 10]).unwrap(); // paused
    let big = alloc(d, 64 << 20);
    let c = d.create_signal(1).unwrap();
    d.copy(cpu(d), big + (32 << 20), big, 32 << 20, &[], c).unwrap();
    std::thread::sleep(Duration::from_millis(10));
    let t = Instant::now();
    std::thread::scope(|scope| {
        // A waiter of a signal that will never complete ends with the driver.
        // Shut down only once it waits: a wait begun after the shutdown fails with
        // `NotInitialized` instead (a sleep cannot promise the waiter ran on a loaded machine).
        let waiter = scope.spawn(|| d.signal_wait(gate, SignalCondition::Eq(0), u64::MAX));
        while host.signal_waiters() == 0 {
            assert!(!waiter.is_finished(), "the waiter ended early: {:?}", waiter.join());
            std::thread::yield_now();
        }
        host.shutdown().unwrap();
        // Waiting, it ends with the signal (`InvalidHandle`); on a loaded machine the waiter
        // may only get to its wait after the shutdown (`NotInitialized`). Either way it ends.
        let ended = waiter.join().unwrap();
        assert!(
            matches!(ended, Err(DriverError::InvalidHandle | DriverError::NotInitialized)),
            "{ended:?}"
        );
    });
    assert!(t.elapsed() < Duration::from_secs(5), "shutdown took {:?}", t.elapsed());
    assert_eq!(host.memory_table_len(), 0);
    assert_eq!(d.agent_count(), 0);
    assert_eq!(d.submit(q1, &[p]), Err(DriverError::NotInitialized));
    // The driver starts over cleanly.
    d.init().unwrap();
    let q = queue(d, 64);
    let s = d.create_signal(1).unwrap();
    let ok = host.register_kernel("ok", |_| Ok(()));
    d.submit(q, &[dispatch(ok, 1, 1, 0, Some(s))]).unwrap();
    done(d, s);
}

#[test]
fn detected_and_chosen_by_the_registry() {
    let host = HostDriver::new(DriverId(0));
    let mut registry: Registry<'_> = Registry::new();
    assert_eq!(registry.detect(&host), Ok(DriverId(0)));
    let (choice, chosen) = registry.choose(Policy::GpuFirst, Some(b"host")).unwrap();
    assert_eq!((choice.kind, chosen.kind()), (DriverKind::Host, DriverKind::Host));
    let (choice, _) = registry.choose(Policy::PerformanceFirst, None).unwrap();
    assert_eq!(choice.kind, DriverKind::Host, "the only driver");
    let mut agents = 0;
    registry.for_each_agent(|_, a| {
        agents += usize::from(a.kind == AgentKind::Cpu);
        true
    });
    assert_eq!(agents, host.agent_count());
}

#[test]
fn copies_wait_for_their_dependencies() {
    let host = driver();
    let d: &dyn Driver = &host;
    let (src, dst) = (alloc(d, 4096), alloc(d, 4096));
    d.write(src, &[9; 64]).unwrap();
    let (gate, s) = (d.create_signal(1).unwrap(), d.create_signal(1).unwrap());
    d.copy(cpu(d), dst, src, 64, &[gate], s).unwrap();
    // The copy waits for the gate: nothing moves, the completion stays 1.
    assert_eq!(d.signal_wait(s, SignalCondition::Eq(0), 50_000_000).unwrap(), Waited::TimedOut);
    let mut back = [0u8; 64];
    d.read(dst, &mut back).unwrap();
    assert_eq!(back, [0; 64]);
    d.signal_store(gate, 0).unwrap();
    done(d, s);
    d.read(dst, &mut back).unwrap();
    assert_eq!(back, [9; 64]);
    // An unknown dependency is refused up front.
    assert_eq!(d.copy(cpu(d), dst, src, 64, &[SignalId(8)], s), Err(DriverError::InvalidHandle));
}
