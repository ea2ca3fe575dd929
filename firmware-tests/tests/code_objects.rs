//! Code objects through the driver layer over the simulator: loaded into executable memory for
//! an agent (`Executable`, `Driver::load_code_object`), their kernels dispatched from AQL
//! packets and run by the ISA interpreter, queues' `amd_queue_t` and scratch set up and grown
//! as ROCr does, and every refusal a typed error before anything runs.

use firmware_tests::isa_support::{TARGETS, profile};
use firmware_tests::{SimDriver, driver};
use hsakmt_core::code_object::kernarg::{ArgValue, Dispatch};
use hsakmt_core::code_object::{AgentFeature, CodeObjectError, FeatureMode};
use hsakmt_core::device::SignalCondition;
use hsakmt_core::device::code_object_manager::LoadError;
use hsakmt_core::driver::{
    AgentId, AgentKind, Buffer, Capabilities, Driver, DriverError, DriverKind, Executable, QueueId,
    QueueParams, RegionKind, Waited,
};
use hsakmt_core::error::{Error as _, ErrorKind};
use hsakmt_core::queue::amd_queue::{
    COMPUTE_TMPRING_SIZE_OFFSET, READ_DISPATCH_ID_FIELD_BASE_BYTE_OFFSET_OFFSET,
    SCRATCH_BACKING_MEMORY_LOCATION_OFFSET, SCRATCH_WAVE64_LANE_BYTE_SIZE_OFFSET,
};
use hsakmt_core::queue::aql::AqlPacket;
use hsakmt_core::queue::scratch::ScratchError;
use hsakmt_kernels::{KernelSet, control, find, test};
use hsakmt_sim::SimPlatform;

const SECOND: u64 = 1_000_000_000;

/// A simulated driver over `profile`, initialised, and its first GPU agent.
fn gpu(name: &str) -> (Box<SimDriver>, AgentId) {
    gpu_with(SimPlatform::builder().profile(profile(name)).build())
}

fn gpu_with(sim: SimPlatform) -> (Box<SimDriver>, AgentId) {
    let d = driver(DriverKind::Sim, sim);
    d.init().expect("init");
    let a = (0..d.agent_count())
        .filter_map(|i| d.agent(i))
        .find(|a| a.kind == AgentKind::Gpu)
        .expect("a GPU agent");
    (d, a.id)
}

fn region(d: &dyn Driver, agent: AgentId, kinds: &[RegionKind]) -> hsakmt_core::driver::RegionId {
    let regions = d.regions(agent).unwrap();
    kinds
        .iter()
        .find_map(|k| regions.iter().find(|r| r.kind == *k && r.allocatable))
        .expect("region")
        .id
}

/// Host memory near `agent`, holding `words`.
fn words(d: &dyn Driver, agent: AgentId, words: &[u32]) -> Buffer {
    let cpu = d.nearest_cpu(agent).unwrap();
    let r = region(d, cpu, &[RegionKind::GlobalFineGrained]);
    let b = d.allocate(r, (4 * words.len() as u64).max(4)).unwrap();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    d.write(b.addr, &bytes).unwrap();
    b
}

fn read_words(d: &dyn Driver, b: &Buffer, n: usize) -> Vec<u32> {
    let mut bytes = vec![0u8; 4 * n];
    d.read(b.addr, &mut bytes).unwrap();
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Dispatches `kernel` of `exe` with `args` over `dispatch` on `queue` and waits.
fn run(
    d: &dyn Driver,
    agent: AgentId,
    queue: QueueId,
    exe: &Executable<'_>,
    kernel: &str,
    args: &[ArgValue<'_>],
    dispatch: &Dispatch,
) -> Result<(), DriverError> {
    let k = exe.kernel(kernel)?;
    let cpu = d.nearest_cpu(agent).unwrap();
    let kernarg = d.allocate(region(d, cpu, &[RegionKind::Kernarg]), 4096)?;
    let mut buf = vec![0u8; k.kernarg_size() as usize];
    k.write_kernargs(&mut buf, args, dispatch)?;
    d.write(kernarg.addr, &buf)?;
    let done = d.create_signal(1)?;
    let packet = k.packet(dispatch, kernarg.addr, done.0)?;
    let words = AqlPacket::KernelDispatch(packet).to_words().unwrap();
    let submitted = d.submit(queue, &[words]);
    let waited = submitted.and_then(|_| d.signal_wait(done, SignalCondition::Eq(0), 60 * SECOND));
    d.destroy_signal(done)?;
    d.free(kernarg.addr)?;
    match waited? {
        Waited::Done(_) => Ok(()),
        Waited::TimedOut => panic!("{kernel} did not complete"),
    }
}

/// Reads the `u32` at `offset` of the queue's `amd_queue_t`.
fn amd_queue_u32(d: &SimDriver, queue: QueueId, offset: usize) -> u32 {
    let m = d.queue_descriptor(queue).unwrap();
    let mut b = [0u8; 4];
    hsakmt_core::platform::SharedMemory::read(&m, offset, &mut b).unwrap();
    u32::from_le_bytes(b)
}

#[test]
fn the_control_step_runs_from_its_code_object_on_every_gfx9_profile() {
    for (profile, gfx) in TARGETS {
        let (d, agent) = gpu(profile);
        assert!(d.capabilities().contains(Capabilities::CODE_OBJECTS));
        assert_eq!(d.agent_target(agent).unwrap().gfx.to_string(), gfx);
        let object = find(KernelSet::Control, gfx).unwrap();
        let exe = Executable::load(&*d, object.bytes, &[agent]).unwrap();
        let q = d.create_queue(agent, &QueueParams { packets: 64, ..QueueParams::default() });
        let q = q.unwrap();
        let input: Vec<u32> = (0..1000u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let (src, dst) = (words(&*d, agent, &input), words(&*d, agent, &[0; 1000]));
        let args = [
            ArgValue::Pointer(src.addr),
            ArgValue::Pointer(dst.addr),
            ArgValue::U64(1000),
            ArgValue::U64(0x1_0000_0007),
        ];
        run(&*d, agent, q, &exe, control::STEP, &args, &Dispatch::linear(1000, 64)).unwrap();
        let out = read_words(&*d, &dst, 1000);
        for (i, (x, y)) in input.iter().zip(&out).enumerate() {
            assert_eq!(*y, x.wrapping_mul(3).wrapping_add(7), "{profile}: word {i}");
        }
        // The descriptor ROCr's packet processor reads: the read index's offset, no scratch.
        assert_eq!(amd_queue_u32(&d, q, READ_DISPATCH_ID_FIELD_BASE_BYTE_OFFSET_OFFSET), 128);
        assert_eq!(amd_queue_u32(&d, q, SCRATCH_WAVE64_LANE_BYTE_SIZE_OFFSET), 0);
        d.destroy_queue(q).unwrap();
        exe.unload(&*d).unwrap();
        d.shutdown().unwrap();
    }
}

#[test]
fn scratch_is_grown_for_a_kernel_with_a_private_segment() {
    for (profile, gfx) in TARGETS {
        let (d, agent) = gpu(profile);
        let exe = Executable::load(&*d, find(KernelSet::Test, gfx).unwrap().bytes, &[agent]);
        let exe = exe.unwrap();
        let q = d.create_queue(agent, &QueueParams { packets: 64, ..QueueParams::default() });
        let q = q.unwrap();
        // No private segment asked for at creation: no scratch yet.
        assert_eq!(amd_queue_u32(&d, q, COMPUTE_TMPRING_SIZE_OFFSET), 0);
        let n = 300u32;
        let input: Vec<u32> = (0..n).map(|i| i * 977 + 13).collect();
        let (src, dst) = (words(&*d, agent, &input), words(&*d, agent, &vec![0; n as usize]));
        let args = [ArgValue::Pointer(src.addr), ArgValue::Pointer(dst.addr), ArgValue::U32(n)];
        run(&*d, agent, q, &exe, test::PRIVATE_ARRAY, &args, &Dispatch::linear(n, 64)).unwrap();
        let a = |v: u32, j: u32| v.wrapping_add(7 * j);
        let out = read_words(&*d, &dst, n as usize);
        for (i, (v, o)) in input.iter().zip(&out).enumerate() {
            assert_eq!(*o, a(*v, v % 64).wrapping_add(a(*v, (v / 64) % 64)), "{profile}: {i}");
        }
        // 260 bytes per work-item, in 16-byte steps: the queue now holds 272.
        assert_eq!(amd_queue_u32(&d, q, SCRATCH_WAVE64_LANE_BYTE_SIZE_OFFSET), 272);
        let tmpring = amd_queue_u32(&d, q, COMPUTE_TMPRING_SIZE_OFFSET);
        assert_eq!(tmpring >> 12, 17, "{profile}: WAVESIZE in KiB");
        assert!(tmpring & 0xFFF > 0, "{profile}: WAVES");
        let base = amd_queue_u32(&d, q, SCRATCH_BACKING_MEMORY_LOCATION_OFFSET);
        // A second dispatch reuses the scratch.
        run(&*d, agent, q, &exe, test::PRIVATE_ARRAY, &args, &Dispatch::linear(n, 64)).unwrap();
        assert_eq!(amd_queue_u32(&d, q, SCRATCH_BACKING_MEMORY_LOCATION_OFFSET), base);
        d.destroy_queue(q).unwrap();
        exe.unload(&*d).unwrap();
        d.shutdown().unwrap();
    }
}

#[test]
fn a_queue_created_with_a_private_segment_has_its_scratch_at_once() {
    let (d, agent) = gpu("mi308x-8gpu-cpx");
    let params = QueueParams { packets: 64, private_segment_size: 1000, ..QueueParams::default() };
    let q = d.create_queue(agent, &params).unwrap();
    assert_eq!(amd_queue_u32(&d, q, SCRATCH_WAVE64_LANE_BYTE_SIZE_OFFSET), 1008);
    assert_ne!(amd_queue_u32(&d, q, SCRATCH_BACKING_MEMORY_LOCATION_OFFSET), 0);
    d.destroy_queue(q).unwrap();
    // Beyond the agent's limit: refused at creation.
    let params = QueueParams { private_segment_size: 200_000, ..params };
    let e = d.create_queue(agent, &params).unwrap_err();
    assert_eq!(
        e,
        DriverError::Scratch(ScratchError::WaveTooLarge { requested: 200_000, max: 131_056 })
    );
    d.shutdown().unwrap();
}

#[test]
fn dispatches_beyond_the_queues_limits_are_refused_before_publishing() {
    let (d, agent) = gpu("mi308x-8gpu-cpx");
    let exe = Executable::load(&*d, find(KernelSet::Control, "gfx942").unwrap().bytes, &[agent]);
    let exe = exe.unwrap();
    let k = exe.kernel(control::STEP).unwrap();
    let params = QueueParams { packets: 64, group_segment_size: 1024, ..QueueParams::default() };
    let q = d.create_queue(agent, &params).unwrap();
    let mut packet = k.packet(&Dispatch::linear(64, 64), 0, 0).unwrap();
    packet.private_segment_size = 300_000;
    let words = AqlPacket::KernelDispatch(packet).to_words().unwrap();
    let e = d.submit(q, &[words]).unwrap_err();
    assert!(matches!(e, DriverError::Scratch(ScratchError::PrivateSegmentTooLarge { .. })));
    assert_eq!(e.kind(), ErrorKind::OutOfResources);
    packet.private_segment_size = 0;
    packet.group_segment_size = 2048;
    let words = AqlPacket::KernelDispatch(packet).to_words().unwrap();
    assert!(matches!(d.submit(q, &[words]), Err(DriverError::InvalidArgument(_))));
    // Nothing was published: the queue's indices did not move.
    assert_eq!(d.queue_indices(q).unwrap(), (0, 0));
    // An LDS limit above the agent's is refused at creation.
    let params = QueueParams { group_segment_size: 1 << 20, ..params };
    assert!(matches!(d.create_queue(agent, &params), Err(DriverError::InvalidArgument(_))));
    d.destroy_queue(q).unwrap();
    d.shutdown().unwrap();
}

#[test]
fn loading_refuses_what_cannot_run_with_typed_errors() {
    let (d, agent) = gpu("mi308x-8gpu-cpx");
    let load = |bytes: &'static [u8]| Executable::load(&*d, bytes, &[agent]).map(|_| ());
    // Not an ELF file; an ELF file for another machine.
    assert!(matches!(
        load(b"not a code object"),
        Err(DriverError::CodeObject(LoadError::Object(CodeObjectError::NotElf)))
    ));
    let mut x86 = find(KernelSet::Control, "gfx942").unwrap().bytes.to_vec();
    x86[18..20].copy_from_slice(&62u16.to_le_bytes());
    let x86: &'static [u8] = Vec::leak(x86);
    assert!(matches!(
        load(x86),
        Err(DriverError::CodeObject(LoadError::Object(CodeObjectError::NotAmdgpu { machine: 62 })))
    ));
    // Another target.
    match load(find(KernelSet::Control, "gfx900").unwrap().bytes) {
        Err(DriverError::CodeObject(LoadError::WrongTarget { object, agent, .. })) => {
            assert_eq!(object.to_string(), "gfx900");
            assert_eq!(agent.gfx.to_string(), "gfx942");
        }
        other => panic!("{other:?}"),
    }
    // A missing kernel.
    let exe = Executable::load(&*d, find(KernelSet::Control, "gfx942").unwrap().bytes, &[agent]);
    let exe = exe.unwrap();
    assert!(matches!(
        exe.kernel("no_such_kernel"),
        Err(DriverError::CodeObject(LoadError::Object(CodeObjectError::MissingKernel { .. })))
    ));
    // Kernel arguments that do not fit.
    let k = exe.kernel(control::STEP).unwrap();
    let mut small = [0u8; 16];
    assert_eq!(
        k.write_kernargs(&mut small, &[], &Dispatch::linear(1, 1)),
        Err(LoadError::KernargTooSmall { needed: k.kernarg_size(), got: 16 })
    );
    // CPU agents run no code objects.
    let cpu = d.nearest_cpu(agent).unwrap();
    assert!(matches!(
        Executable::load(&*d, find(KernelSet::Control, "gfx942").unwrap().bytes, &[cpu]),
        Err(DriverError::InvalidAgent(_))
    ));
    exe.unload(&*d).unwrap();
    d.shutdown().unwrap();
}

#[test]
fn the_target_check_uses_the_effective_gfx_version() {
    // HSA_OVERRIDE_GFX_VERSION makes the gfx942 agent a gfx900 one for code objects.
    let sim = SimPlatform::builder()
        .profile(profile("mi308x-8gpu-cpx"))
        .env("HSA_OVERRIDE_GFX_VERSION", "9.0.0")
        .build();
    let (d, agent) = gpu_with(sim);
    assert_eq!(d.agent_target(agent).unwrap().gfx.to_string(), "gfx900");
    let gfx942 = find(KernelSet::Control, "gfx942").unwrap().bytes;
    assert!(matches!(
        Executable::load(&*d, gfx942, &[agent]),
        Err(DriverError::CodeObject(LoadError::WrongTarget { .. }))
    ));
    let gfx900 = Executable::load(&*d, find(KernelSet::Control, "gfx900").unwrap().bytes, &[agent]);
    gfx900.unwrap().unload(&*d).unwrap();
    d.shutdown().unwrap();
}

#[test]
fn feature_settings_are_checked_against_the_agent() {
    let (d, agent) = gpu("mi308x-8gpu-cpx");
    let object =
        hsakmt_kernels::all().iter().find(|o| o.target_id == "gfx942:sramecc+:xnack-").unwrap();
    let parsed = hsakmt_core::code_object::CodeObject::parse(object.bytes).unwrap();
    assert_eq!(
        (parsed.target().sramecc, parsed.target().xnack),
        (FeatureMode::On, FeatureMode::Off)
    );
    // The MI308X reports SRAM ECC; the process runs without XNACK.
    let target = d.agent_target(agent).unwrap();
    assert_eq!((target.sramecc, target.xnack), (AgentFeature::On, AgentFeature::Off));
    Executable::load(&*d, object.bytes, &[agent]).unwrap().unload(&*d).unwrap();
    // With XNACK on, the xnack- object no longer runs there; the xnack-any one still does.
    d.kfd().set_xnack_mode(true).unwrap();
    assert_eq!(d.agent_target(agent).unwrap().xnack, AgentFeature::On);
    assert!(matches!(
        Executable::load(&*d, object.bytes, &[agent]),
        Err(DriverError::CodeObject(LoadError::WrongTarget { .. }))
    ));
    let any = find(KernelSet::Control, "gfx942").unwrap().bytes;
    Executable::load(&*d, any, &[agent]).unwrap().unload(&*d).unwrap();
    d.shutdown().unwrap();
}
