//! The device side of `hsakmt dispatch`: the drivers (`/dev/kfd`, the simulator), the agent a
//! code object runs on, and one dispatch with its buffers, kernel arguments, queue and signal
//! — everything released afterwards, whatever happened.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hsakmt_core::code_object::CodeObject;
use hsakmt_core::code_object::kernarg::Dispatch;
use hsakmt_core::config::DEFAULT_MEMORY_OBJECTS;
use hsakmt_core::device::SignalCondition;
use hsakmt_core::driver::policy::DRIVER_ENV;
use hsakmt_core::driver::{
    AgentFeatures, AgentId, AgentInfo, AgentKind, Capabilities, Driver, DriverError, DriverId,
    DriverKind, Executable, Policy, QueueId, QueueParams, RegionId, RegionKind, Registry, SignalId,
    Waited,
};
use hsakmt_core::error::ErrorKind;
use hsakmt_core::queue::aql::AqlPacket;
use hsakmt_linux::{BoxedMemory, LinuxPlatform, boxed_driver};
use hsakmt_sim::{Profile, SimPlatform};

use super::spec::ArgSpec;
use crate::platform::AnyPlatform;

/// How long one wait for the kernel sleeps before the queue is checked for an error.
const WAIT_SLICE: Duration = Duration::from_millis(50);

/// Set by the queue's error callback.
static QUEUE_FAILED: AtomicBool = AtomicBool::new(false);

fn on_queue_error(_queue: QueueId, _kind: ErrorKind) {
    QUEUE_FAILED.store(true, Ordering::SeqCst);
}

/// The drivers `hsakmt dispatch` may use.
pub(super) struct Devices {
    kfd: Option<Box<hsakmt_core::driver::KfdDriver<AnyPlatform, BoxedMemory>>>,
    sim: Box<hsakmt_core::driver::KfdDriver<AnyPlatform, BoxedMemory>>,
    profile: String,
}

impl Devices {
    /// `/dev/kfd` and the simulator (the default profile, or only the simulator with `--sim`).
    pub(super) fn detect(sim: Option<&str>) -> Result<Self, String> {
        let profile = sim.unwrap_or(hsakmt_sim::DEFAULT_PROFILE).to_string();
        let p = Profile::embedded(&profile).map_err(|e| e.to_string())?;
        let platform =
            AnyPlatform::Sim(SimPlatform::builder().profile(p).inherit_env(true).build());
        let simulated =
            boxed_driver(DriverKind::Sim, DriverId(1), platform, DEFAULT_MEMORY_OBJECTS);
        let kfd = sim.is_none().then(|| {
            let linux = AnyPlatform::from(LinuxPlatform::new());
            boxed_driver(DriverKind::Kfd, DriverId(0), linux, DEFAULT_MEMORY_OBJECTS)
        });
        Ok(Self { kfd, sim: simulated, profile })
    }

    /// The driver the policy picks and its first GPU agent that runs `object`.
    pub(super) fn choose(&self, object: &CodeObject<'_>) -> Result<(&dyn Driver, AgentId), String> {
        let mut registry: Registry<'_> = Registry::new();
        if let Some(k) = &self.kfd {
            let _ = registry.detect(&**k);
        }
        let _ = registry.detect(&*self.sim);
        let (policy, env) = match &self.kfd {
            None => (Policy::Explicit(DriverKind::Sim), None),
            Some(_) => (Policy::GpuFirst, std::env::var(DRIVER_ENV).ok()),
        };
        let (choice, driver) =
            registry.choose(policy, env.as_deref().map(str::as_bytes)).map_err(|e| {
                let mut msg = format!("no driver to run on: {e}");
                for d in registry.report() {
                    if let Err(why) = &d.outcome {
                        msg.push_str(&format!("\n  {}: {why}", d.kind));
                    }
                }
                msg
            })?;
        if !driver.capabilities().contains(Capabilities::CODE_OBJECTS) {
            return Err(format!("the `{}` driver runs no code objects", choice.kind));
        }
        let gpus: Vec<AgentInfo> = (0..driver.agent_count())
            .filter_map(|i| driver.agent(i))
            .filter(|a| a.kind == AgentKind::Gpu)
            .collect();
        if gpus.is_empty() {
            return Err(format!(
                "the `{}` driver has no GPU agent (none, or none with a gpu_id)",
                choice.kind
            ));
        }
        // The distinct targets seen, with how many agents have each.
        let mut seen: Vec<(String, usize)> = Vec::new();
        for a in &gpus {
            let t = match driver.agent_target(a.id) {
                Ok(t) if object.target().runs_on(&t) => return Ok((driver, a.id)),
                Ok(t) => t.to_string(),
                Err(e) => format!("unknown ({e})"),
            };
            match seen.iter_mut().find(|(s, _)| *s == t) {
                Some((_, n)) => *n += 1,
                None => seen.push((t, 1)),
            }
        }
        let seen: Vec<String> = seen.iter().map(|(t, n)| format!("{t} ({n} agents)")).collect();
        Err(format!(
            "the code object is for {}, which no GPU agent of the `{}` driver is; its GPU agents: {}",
            object.target(),
            choice.kind,
            seen.join(", ")
        ))
    }

    /// Why the simulated queue stopped, when it did.
    fn sim_fault(&self) -> Option<String> {
        crate::platform::queue_fault_text(self.sim.kfd().platform().sim()?)
    }

    /// A name for the platform of `driver`.
    fn platform(&self, kind: DriverKind) -> String {
        match kind {
            DriverKind::Sim => format!("simulator profile {}", self.profile),
            _ => "/dev/kfd".to_string(),
        }
    }

    /// Shuts every driver down.
    pub(super) fn shutdown(&self) {
        let _ = self.sim.shutdown();
        if let Some(k) = &self.kfd {
            let _ = k.shutdown();
        }
    }
}

/// What a dispatch left.
pub(super) struct Outcome {
    /// The agent it ran on.
    pub(super) agent: String,
    /// From the submission to the completion signal observed at 0.
    pub(super) time_ns: u64,
    /// Each buffer argument's index and bytes.
    pub(super) buffers: Vec<(usize, Vec<u8>)>,
}

/// A buffer argument in device memory.
struct DeviceBuffer {
    arg: usize,
    addr: u64,
    len: usize,
    /// Host memory the buffer is staged through (device memory the CPU cannot see).
    staging: Option<u64>,
}

/// Everything one dispatch holds, released in reverse order.
#[derive(Default)]
struct Held {
    memory: Vec<u64>,
    queue: Option<QueueId>,
    signals: Vec<SignalId>,
}

impl Held {
    fn release(self, d: &dyn Driver) {
        if let Some(q) = self.queue {
            let _ = d.destroy_queue(q);
        }
        for s in self.signals {
            let _ = d.destroy_signal(s);
        }
        for m in self.memory.into_iter().rev() {
            let _ = d.free(m);
        }
    }
}

fn region(d: &dyn Driver, agent: AgentId, kind: RegionKind) -> Option<(RegionId, bool)> {
    let regions = d.regions(agent).ok()?;
    regions.iter().find(|r| r.kind == kind && r.allocatable).map(|r| (r.id, r.host_accessible))
}

/// Runs `kernel` of `bytes` on `agent` of `driver` (see the module docs).
#[expect(clippy::too_many_arguments, reason = "one dispatch's inputs, checked by the caller")]
pub(super) fn run(
    devices: &Devices,
    driver: &dyn Driver,
    agent: AgentId,
    bytes: &[u8],
    kernel: &str,
    specs: &[ArgSpec],
    dispatch: &Dispatch,
    timeout: Duration,
) -> Result<Outcome, String> {
    let exe = Executable::load(driver, bytes, &[agent]).map_err(|e| format!("loading: {e}"))?;
    let mut held = Held::default();
    let result =
        dispatch_loaded(devices, driver, agent, &exe, kernel, specs, dispatch, timeout, &mut held);
    held.release(driver);
    let _ = exe.unload(driver);
    result
}

#[expect(clippy::too_many_arguments, reason = "one dispatch's inputs, checked by the caller")]
fn dispatch_loaded(
    devices: &Devices,
    d: &dyn Driver,
    agent: AgentId,
    exe: &Executable<'_>,
    kernel: &str,
    specs: &[ArgSpec],
    dispatch: &Dispatch,
    timeout: Duration,
    held: &mut Held,
) -> Result<Outcome, String> {
    let e = |what: &'static str| move |err: DriverError| format!("{what}: {err}");
    let k = exe.kernel(kernel).map_err(|err| err.to_string())?;
    let info = (0..d.agent_count())
        .filter_map(|i| d.agent(i))
        .find(|a| a.id == agent)
        .ok_or("the agent went away")?;
    let cpu = d.nearest_cpu(agent).ok_or("no CPU agent near the GPU")?;
    let host = region(d, cpu, RegionKind::GlobalFineGrained).ok_or("no system memory region")?;
    let dma = info.features.contains(AgentFeatures::DMA_COPY);
    // Device memory: VRAM the CPU sees, else VRAM staged through host memory by DMA, else
    // host memory the GPU sees.
    let (vram, visible) = region(d, agent, RegionKind::GlobalCoarseGrained).unwrap_or(host);
    let mut buffers = Vec::new();
    for (arg, spec) in specs.iter().enumerate() {
        let len = spec.buffer_bytes();
        if !matches!(spec, ArgSpec::Buffer { .. }) {
            continue;
        }
        let (place, staged) = if visible || dma { (vram, !visible) } else { (host.0, false) };
        let b = d.allocate(place, len).map_err(e("allocating a buffer"))?;
        held.memory.push(b.addr);
        let staging = if staged {
            let s = d.allocate(host.0, len).map_err(e("allocating a staging buffer"))?;
            held.memory.push(s.addr);
            Some(s.addr)
        } else {
            None
        };
        let init = spec.initial_bytes();
        let buf = DeviceBuffer { arg, addr: b.addr, len: init.len(), staging };
        match buf.staging {
            None => d.write(buf.addr, &init).map_err(e("initialising a buffer"))?,
            Some(s) => {
                d.write(s, &init).map_err(e("initialising a buffer"))?;
                copy(d, agent, buf.addr, s, len, held)?;
            }
        }
        buffers.push(buf);
    }
    let addr_of = |arg: usize| buffers.iter().find(|b| b.arg == arg).map_or(0, |b| b.addr);
    let values: Vec<_> = specs.iter().enumerate().map(|(i, s)| s.value(addr_of(i))).collect();
    let mut kernargs = vec![0u8; k.kernarg_size() as usize];
    k.write_kernargs(&mut kernargs, &values, dispatch).map_err(|err| err.to_string())?;
    let args_region = region(d, cpu, RegionKind::Kernarg).map_or(host.0, |r| r.0);
    let kernarg = d.allocate(args_region, kernargs.len().max(64) as u64).map_err(e("kernarg"))?;
    held.memory.push(kernarg.addr);
    d.write(kernarg.addr, &kernargs).map_err(e("kernel arguments"))?;
    let params = QueueParams {
        packets: 64,
        private_segment_size: k.private_segment_size(),
        error_callback: Some(on_queue_error),
        ..QueueParams::default()
    };
    let queue = d.create_queue(agent, &params).map_err(e("creating the queue"))?;
    held.queue = Some(queue);
    let done = d.create_signal(1).map_err(e("signal"))?;
    held.signals.push(done);
    let packet = k.packet(dispatch, kernarg.addr, done.0).map_err(|err| err.to_string())?;
    let words = AqlPacket::KernelDispatch(packet).to_words().map_err(|err| err.to_string())?;
    QUEUE_FAILED.store(false, Ordering::SeqCst);
    let start = Instant::now();
    d.submit(queue, &[words]).map_err(e("submitting"))?;
    let time_ns = wait(devices, d, done, start, timeout)?;
    let mut out = Vec::new();
    for b in &buffers {
        let mut bytes = vec![0u8; b.len];
        match b.staging {
            None => d.read(b.addr, &mut bytes).map_err(e("reading a buffer"))?,
            Some(s) => {
                copy(d, agent, s, b.addr, b.len as u64, held)?;
                d.read(s, &mut bytes).map_err(e("reading a buffer"))?;
            }
        }
        out.push((b.arg, bytes));
    }
    Ok(Outcome {
        agent: format!("node {} {} ({})", agent.node, info.name, devices.platform(d.kind())),
        time_ns,
        buffers: out,
    })
}

/// Waits for `done` to reach 0; the elapsed time since `start`.
fn wait(
    devices: &Devices,
    d: &dyn Driver,
    done: SignalId,
    start: Instant,
    timeout: Duration,
) -> Result<u64, String> {
    let slice = u64::try_from(WAIT_SLICE.as_nanos()).unwrap_or(u64::MAX);
    loop {
        let waited = d.signal_wait(done, SignalCondition::Eq(0), slice);
        let elapsed = start.elapsed();
        match waited.map_err(|err| format!("waiting for the kernel: {err}"))? {
            Waited::Done(_) => return Ok(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)),
            Waited::TimedOut if QUEUE_FAILED.load(Ordering::SeqCst) => {
                let why = devices.sim_fault().unwrap_or_else(|| "a queue error".to_string());
                return Err(format!("the kernel stopped the queue: {why}"));
            }
            Waited::TimedOut if elapsed >= timeout => {
                return Err(format!(
                    "the kernel did not complete within {timeout:?} (use --timeout to wait longer)"
                ));
            }
            Waited::TimedOut => {}
        }
    }
}

/// Copies `len` bytes on `agent`'s DMA engine and waits.
fn copy(
    d: &dyn Driver,
    agent: AgentId,
    dst: u64,
    src: u64,
    len: u64,
    held: &mut Held,
) -> Result<(), String> {
    let e = |err: DriverError| format!("staging a buffer: {err}");
    let s = d.create_signal(1).map_err(e)?;
    held.signals.push(s);
    d.copy(agent, dst, src, len, &[], s).map_err(e)?;
    match d.signal_wait(s, SignalCondition::Eq(0), 10_000_000_000).map_err(e)? {
        Waited::Done(_) => Ok(()),
        Waited::TimedOut => Err("staging a buffer: the copy did not complete".to_string()),
    }
}
