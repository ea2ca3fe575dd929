//! The driver abstraction layer over the simulator: agents and regions on every profile,
//! allocation by region, detection and the selection policy, queues, copies with
//! dependencies, signals, events, the queue cache and NUMA placement.

use std::sync::atomic::Ordering;

use firmware_tests::{SimDriver, driver, sim};
use hsakmt_core::config::DEFAULT_MEMORY_OBJECTS;
use hsakmt_core::device::{Error as DeviceError, SignalCondition};
use hsakmt_core::driver::{
    AgentFeatures, AgentKind, Buffer, Capabilities, Driver, DriverError, DriverId, DriverKind,
    Policy, PolicyError, QueueParams, Reason, RegionKind, Registry, Waited,
};
use hsakmt_core::error::{Error as _, ErrorKind};
use hsakmt_core::platform::OpenError;
use hsakmt_core::queue::aql::{AqlPacket, Barrier, KernelDispatch};
use hsakmt_core::uapi::{_IOC_NR, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU};
use hsakmt_linux::{LinuxPlatform, boxed_driver};
use hsakmt_sim::{DeviceState, SimPlatform, profile_names};

const SECOND: u64 = 1_000_000_000;

fn sim_driver(sim: SimPlatform) -> Box<SimDriver> {
    driver(DriverKind::Sim, sim)
}

fn gpu_agents(d: &dyn Driver) -> Vec<hsakmt_core::driver::AgentInfo> {
    (0..d.agent_count()).filter_map(|i| d.agent(i)).filter(|a| a.kind == AgentKind::Gpu).collect()
}

fn region(
    d: &dyn Driver,
    agent: hsakmt_core::driver::AgentId,
    kind: RegionKind,
) -> Option<hsakmt_core::driver::RegionInfo> {
    d.regions(agent).unwrap().iter().copied().find(|r| r.kind == kind)
}

#[test]
fn agents_and_regions_on_every_profile() {
    for name in profile_names() {
        let d = sim_driver(sim(name));
        match d.init() {
            Ok(()) => {}
            Err(e) => {
                // A profile whose capture lacks what the device needs fails clearly.
                assert!(!e.to_string().is_empty(), "{name}");
                continue;
            }
        }
        let agents: Vec<_> = (0..d.agent_count()).filter_map(|i| d.agent(i)).collect();
        // The listing-only capture has no file contents: no node shows cores or SIMDs.
        assert_eq!(agents.is_empty(), name == "cpu-only-virtual-crat-2021", "{name}");
        for a in &agents {
            let regions = d.regions(a.id).unwrap();
            match a.kind {
                AgentKind::Cpu => {
                    assert!(a.compute_units > 0, "{name}: CPU agent with cores");
                    let kinds: Vec<_> = regions.iter().map(|r| r.kind).collect();
                    assert_eq!(kinds, [RegionKind::GlobalFineGrained, RegionKind::Kernarg]);
                    assert!(regions.iter().all(|r| r.host_accessible && r.allocatable));
                }
                AgentKind::Gpu => {
                    assert!(a.name.starts_with("gfx"), "{name}: {}", a.name);
                    assert!(a.compute_units > 0 && a.wavefront_size > 0);
                    assert!(a.queue_min_packets <= a.queue_max_packets);
                    let coarse =
                        regions.iter().find(|r| r.kind == RegionKind::GlobalCoarseGrained).unwrap();
                    assert!(coarse.allocatable, "{name}: VRAM region");
                    // Sized from the memory banks (the MI210 capture has none).
                    assert_eq!(coarse.size, a.local_memory_bytes, "{name}");
                    for k in [RegionKind::Group, RegionKind::Private] {
                        let r = regions.iter().find(|r| r.kind == k).unwrap();
                        assert!(!r.allocatable, "{name}: {k:?} is not allocatable");
                    }
                }
            }
        }
        d.shutdown().unwrap();
    }
}

#[test]
fn allocate_by_region_rules() {
    let d = sim_driver(SimPlatform::new());
    d.init().unwrap();
    let gpu = gpu_agents(&*d)[0].id;
    let cpu = d.nearest_cpu(gpu).unwrap();
    // Kernarg memory is host accessible: what is written reads back.
    let kernarg = region(&*d, cpu, RegionKind::Kernarg).unwrap();
    let b = d.allocate(kernarg.id, 256).unwrap();
    assert_eq!(b.region, kernarg.id);
    assert!(b.size >= 256);
    d.write(b.addr + 8, &[1, 2, 3, 4]).unwrap();
    let mut back = [0u8; 4];
    d.read(b.addr + 8, &mut back).unwrap();
    assert_eq!(back, [1, 2, 3, 4]);
    // Group and private segments are reported, not allocatable.
    for k in [RegionKind::Group, RegionKind::Private] {
        let r = region(&*d, gpu, k).unwrap();
        assert_eq!(d.allocate(r.id, 4096), Err(DriverError::NotAllocatable(k)));
    }
    // A region the agent does not have.
    let mut bogus = kernarg.id;
    bogus.index = 9;
    assert_eq!(d.allocate(bogus, 4096), Err(DriverError::InvalidRegion(bogus)));
    // VRAM is written by the CPU only when the frame buffer is host visible (large BAR).
    let vram = region(&*d, gpu, RegionKind::GlobalCoarseGrained).unwrap();
    let v = d.allocate(vram.id, 1 << 20).unwrap();
    assert_eq!(d.write(v.addr, &[0]).is_ok(), vram.host_accessible);
    d.free(v.addr).unwrap();
    d.free(b.addr).unwrap();
    assert_eq!(d.free(b.addr).unwrap_err().kind(), ErrorKind::NotRegistered, "double free");
    d.shutdown().unwrap();
}

#[test]
fn registry_detects_reports_and_chooses() {
    // A real /dev/kfd (absent here) and the simulator.
    let real =
        boxed_driver(DriverKind::Kfd, DriverId(0), LinuxPlatform::new(), DEFAULT_MEMORY_OBJECTS);
    let simulated = sim_driver(SimPlatform::new());
    let absent = sim_driver(SimPlatform::builder().device(DeviceState::Absent).build());
    let mut reg: Registry<'_> = Registry::new();
    let real_outcome = reg.detect(&*real);
    if !std::path::Path::new("/dev/kfd").exists() {
        assert_eq!(
            real_outcome,
            Err(DriverError::Device(DeviceError::Open(OpenError::NotPresent)))
        );
    }
    assert!(reg.detect(&*absent).is_err(), "failures are reported, not registered");
    let id = reg.detect(&*simulated).unwrap();
    assert_eq!(reg.report().len(), 3);
    assert!(reg.report().iter().filter(|d| d.outcome.is_err()).count() >= 1);
    assert_eq!(reg.by_kind(DriverKind::Sim).map(|(i, _)| i), Some(id));

    // GPU first: the simulator, saying why.
    if real_outcome.is_err() {
        let (choice, d) = reg.choose(Policy::GpuFirst, None).unwrap();
        assert_eq!((choice.kind, d.kind()), (DriverKind::Sim, DriverKind::Sim));
        assert_eq!(choice.reason, Reason::GpuFirst { skipped: 1 });
        assert!(choice.to_string().contains("simulated"), "{choice}");
    }
    // Explicit by environment, and its errors.
    let (c, _) = reg.choose(Policy::PerformanceFirst, Some(b"sim")).unwrap();
    assert_eq!((c.kind, c.reason), (DriverKind::Sim, Reason::Environment));
    assert_eq!(
        reg.choose(Policy::GpuFirst, Some(b"host")).map(|(c, _)| c),
        Err(PolicyError::NotAvailable(DriverKind::Host))
    );
    assert_eq!(
        reg.choose(Policy::GpuFirst, Some(b"cuda")).map(|(c, _)| c),
        Err(PolicyError::UnknownDriver)
    );
    // Feature first: the MI308X offers SVM; nothing offers everything.
    let (c, _) = reg.choose(Policy::FeatureFirst(AgentFeatures::SVM), None).unwrap();
    assert_eq!(c.kind, DriverKind::Sim);
    assert_eq!(
        reg.choose(Policy::FeatureFirst(AgentFeatures::all()), None).map(|(c, _)| c),
        Err(PolicyError::MissingFeatures)
    );
    // Performance first with one usable driver.
    let (c, _) = reg.choose(Policy::PerformanceFirst, None).unwrap();
    assert!(matches!(c.reason, Reason::Performance { .. }));
    // System properties of the MI308X box ("ALASKA", generation 33).
    let sys = simulated.system();
    assert_eq!((sys.agents, sys.generation, sys.platform_rev), (34, Some(33), Some(2)));
    assert_eq!(sys.platform_id, Some(71_791_775_140_929));
    // Agents by iterator and by callback.
    assert_eq!(hsakmt_core::driver::agents(&*simulated).count(), 34);
    let mut seen = 0;
    let all = hsakmt_core::driver::for_each_agent(&*simulated, |_| {
        seen += 1;
        seen < 3
    });
    assert_eq!((all, seen), (false, 3), "the callback stops the iteration");
    // Agents by callback through the registry carry the driver's registry id.
    let mut gpus = 0;
    reg.for_each_agent(|d, a| {
        assert_eq!(d, id);
        gpus += usize::from(a.kind == AgentKind::Gpu);
        true
    });
    assert_eq!(gpus, 32);
    simulated.shutdown().unwrap();

    // No usable driver at all.
    let empty: Registry<'_> = Registry::new();
    assert_eq!(empty.choose(Policy::GpuFirst, None).map(|(c, _)| c), Err(PolicyError::NoDriver));
}

#[test]
fn dispatch_copy_and_signals_through_the_driver() {
    let sim = SimPlatform::new();
    let triple = sim.register_kernel("triple", |ctx| {
        let (src, dst) = (ctx.kernarg_u64(0)?, ctx.kernarg_u64(1)?);
        for [x, _, _] in ctx.work_items() {
            let off = 4 * u64::from(x);
            ctx.store_u32(dst + off, ctx.load_u32(src + off)?.wrapping_mul(3))?;
        }
        Ok(())
    });
    let d = sim_driver(sim);
    d.init().unwrap();
    assert!(d.capabilities().contains(Capabilities::HOST_KERNELS | Capabilities::DMA_COPY));
    let gpu = gpu_agents(&*d)[0].id;
    let sys = d.kfd().with_topology(|_| ()).map(|()| d.nearest_cpu(gpu).unwrap()).unwrap();
    let host = region(&*d, sys, RegionKind::GlobalFineGrained).unwrap();
    let vram = region(&*d, gpu, RegionKind::GlobalCoarseGrained).unwrap();
    let n = 1024u32;
    let bytes = u64::from(n) * 4;
    let input = d.allocate(host.id, bytes).unwrap();
    let output = d.allocate(host.id, bytes).unwrap();
    let args = d.allocate(region(&*d, sys, RegionKind::Kernarg).unwrap().id, 64).unwrap();
    let (vin, vout) = (d.allocate(vram.id, bytes).unwrap(), d.allocate(vram.id, bytes).unwrap());
    let data: Vec<u8> = (0..n).flat_map(|i| (i + 7).to_le_bytes()).collect();
    d.write(input.addr, &data).unwrap();
    let mut kernargs = vin.addr.to_le_bytes().to_vec();
    kernargs.extend(vout.addr.to_le_bytes());
    d.write(args.addr, &kernargs).unwrap();

    let q = d.create_queue(gpu, &QueueParams { packets: 256, ..QueueParams::default() }).unwrap();
    let (copied, computed, back) =
        (d.create_signal(1).unwrap(), d.create_signal(1).unwrap(), d.create_signal(1).unwrap());
    d.copy(gpu, vin.addr, input.addr, bytes, &[], copied).unwrap();
    let mut wait = Barrier::NOP;
    wait.dep_signals[0] = copied.0;
    let mut k = KernelDispatch::linear(triple, n, 64);
    k.kernarg_address = args.addr;
    k.completion_signal = computed.0;
    let packets = [
        AqlPacket::BarrierAnd(wait).to_words().unwrap(),
        AqlPacket::KernelDispatch(k).to_words().unwrap(),
    ];
    assert_eq!(d.submit(q, &packets).unwrap(), 0);
    // The copy back waits for the kernel on the DMA engine itself.
    d.copy(gpu, output.addr, vout.addr, bytes, &[computed], back).unwrap();
    assert_eq!(d.signal_wait(back, SignalCondition::Eq(0), 20 * SECOND).unwrap(), Waited::Done(0));
    assert_eq!(d.signal_load(computed).unwrap(), 0);
    let mut out = vec![0u8; bytes as usize];
    d.read(output.addr, &mut out).unwrap();
    for (i, w) in out.chunks(4).enumerate() {
        let v = u32::from_le_bytes(w.try_into().unwrap());
        assert_eq!(v, (i as u32 + 7) * 3, "element {i}");
    }
    // A signal store wakes a waiter; a wait that cannot complete times out.
    d.signal_store(copied, 5).unwrap();
    assert_eq!(d.signal_wait(copied, SignalCondition::Gte(5), 0).unwrap(), Waited::Done(5));
    assert_eq!(d.signal_wait(copied, SignalCondition::Eq(0), 1_000_000).unwrap(), Waited::TimedOut);
    for s in [copied, computed, back] {
        d.destroy_signal(s).unwrap();
    }
    assert_eq!(d.signal_load(copied), Err(DriverError::InvalidHandle));
    d.destroy_queue(q).unwrap();
    assert_eq!(d.submit(q, &packets), Err(DriverError::InvalidHandle), "stale queue id");
    for b in [input, output, args, vin, vout] {
        d.free(b.addr).unwrap();
    }
    d.shutdown().unwrap();
}

#[test]
fn queue_cache_batch_pool_and_numa() {
    let d = sim_driver(SimPlatform::new());
    d.init().unwrap();
    let gpu = gpu_agents(&*d)[0].id;
    let alloc = _IOC_NR(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU);
    let params = QueueParams { packets: 1024, ..QueueParams::default() };
    // Warm the signal pool, then measure a first queue and a reused one.
    let s = d.create_signal(0).unwrap();
    let before = d.kfd().platform().ioctl_calls(alloc);
    let q = d.create_queue(gpu, &params).unwrap();
    let first = d.kfd().platform().ioctl_calls(alloc) - before;
    d.destroy_queue(q).unwrap();
    let before = d.kfd().platform().ioctl_calls(alloc);
    let q2 = d.create_queue(gpu, &params).unwrap();
    let second = d.kfd().platform().ioctl_calls(alloc) - before;
    assert!(second < first, "the cached ring is reused: {second} < {first} allocations");
    assert_ne!(q, q2);
    d.destroy_queue(q2).unwrap();
    // Sizes outside the agent's limits are refused.
    let bad = QueueParams { packets: 100, ..params };
    assert_eq!(d.create_queue(gpu, &bad).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let cpu_agent = d.nearest_cpu(gpu).unwrap();
    assert_eq!(
        d.create_queue(cpu_agent, &params),
        Err(DriverError::InvalidAgent(cpu_agent)),
        "the KFD driver's CPU agents take no queues"
    );

    // NUMA: the MI308X partitions on node 2 hang off CPU node 0 (io_link weight 20).
    let near = d.nearest_system_region(gpu).unwrap();
    assert_eq!(near.agent, cpu_agent);
    assert_eq!(cpu_agent.node, 0);

    // Batch allocation in one call, freed in one call.
    let sizes = [4096u64; 16];
    let mut out = [Buffer { addr: 0, size: 0, region: near }; 16];
    d.allocate_batch(near, &sizes, &mut out).unwrap();
    let mut addrs: Vec<u64> = out.iter().map(|b| b.addr).collect();
    addrs.dedup();
    assert_eq!(addrs.len(), 16);
    d.free_batch(&out).unwrap();
    assert!(d.free_batch(&out).is_err(), "double free reported");

    // Events through the driver.
    let e = d.create_event(false, true).unwrap();
    assert_eq!(d.wait_events(&[e], false, 0).unwrap(), Waited::Done(0));
    assert_eq!(d.wait_events(&[e], false, 1_000_000).unwrap(), Waited::TimedOut, "auto reset");
    d.set_event(e).unwrap();
    assert_eq!(d.wait_events(&[e], true, SECOND).unwrap(), Waited::Done(0));
    d.destroy_event(e).unwrap();
    assert_eq!(d.set_event(e), Err(DriverError::InvalidHandle));
    d.destroy_signal(s).unwrap();
    let clocks = d.clock_counters(gpu).unwrap();
    assert!(clocks.system_frequency > 0);
    d.shutdown().unwrap();
    assert_eq!(d.create_queue(gpu, &params), Err(DriverError::NotInitialized));
}

#[test]
fn queue_errors_reach_the_callback() {
    use std::sync::atomic::AtomicUsize;
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    fn on_error(_: hsakmt_core::driver::QueueId, kind: ErrorKind) {
        assert_eq!(kind, ErrorKind::DeviceFault);
        CALLS.fetch_add(1, Ordering::SeqCst);
    }
    let sim = SimPlatform::new();
    let bad = sim.register_kernel("bad", |ctx| ctx.store_u32(0x10, 1));
    let d = sim_driver(sim);
    d.init().unwrap();
    let gpu = gpu_agents(&*d)[0].id;
    let params =
        QueueParams { packets: 256, error_callback: Some(on_error), ..QueueParams::default() };
    let q = d.create_queue(gpu, &params).unwrap();
    let done = d.create_signal(1).unwrap();
    let mut k = KernelDispatch::linear(bad, 64, 64);
    k.completion_signal = done.0;
    d.submit(q, &[AqlPacket::KernelDispatch(k).to_words().unwrap()]).unwrap();
    // The faulting dispatch never completes; the timeout polls the queues' error words.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while CALLS.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
        assert_eq!(
            d.signal_wait(done, SignalCondition::Eq(0), 10_000_000).unwrap(),
            Waited::TimedOut
        );
    }
    assert_eq!(CALLS.load(Ordering::SeqCst), 1);
    assert_eq!(d.poll_queue_errors(), 0, "reported once");
    d.shutdown().unwrap();
}
