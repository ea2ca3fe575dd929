//! `hsakmt run`: the end-to-end job — an appliance-style control loop through the driver layer.
//!
//! Each iteration writes an input block into host memory, DMA-copies it to device memory,
//! publishes a barrier (waiting for the copy) and a compute step on the agent's AQL queue,
//! DMA-copies the result back once the step's completion signal is 0, waits for that copy's
//! signal, and checks every word of the result. On the simulator (and the host driver) the
//! compute step is a registered kernel (`out[i] = in[i] * 3 + seed`); on real hardware, which
//! would need a code-object loader, the step is the barrier alone and the block must come back
//! unchanged — the copy/barrier/signal path.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use hsakmt_core::config::DEFAULT_MEMORY_OBJECTS;
use hsakmt_core::device::{self, SignalCondition};
use hsakmt_core::driver::policy::DRIVER_ENV;
use hsakmt_core::driver::{
    AgentFeatures, AgentId, AgentInfo, AgentKind, Buffer, Capabilities, Driver, DriverError,
    DriverId, DriverKind, Policy, QueueId, QueueParams, RegionId, RegionKind, Registry, SignalId,
    Waited,
};
use hsakmt_core::platform::SharedMemory as _;
use hsakmt_core::queue::aql::{AqlPacket, Barrier, KernelDispatch, PacketWords};
use hsakmt_core::topology;
use hsakmt_linux::{LinuxPlatform, boxed_driver, latency};
use hsakmt_sim::{
    CpMode, HostDriver, KernelCtx, KernelFault, KernelRegistry, Profile, SimPlatform,
};
use serde::Serialize;

use crate::histogram::Histogram;
use crate::inject::{self, FaultSpec};
use crate::output::Failure;

/// The largest `--block`: 256 MiB.
const MAX_BLOCK: u32 = 256 << 20;

/// How long one iteration may take before the run fails.
const ITERATION_TIMEOUT: Duration = Duration::from_secs(10);

/// The most iterations one run may ask for: hours at the fastest loops. Latencies go into a
/// fixed-size histogram, so memory does not depend on the count; the limit keeps a typo from
/// starting a run that would not end.
pub(crate) const MAX_ITERATIONS: u64 = 1_000_000_000;

/// Arguments of `hsakmt run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Use the simulator with this embedded profile instead of detecting a driver.
    #[arg(long, value_name = "PROFILE")]
    sim: Option<String>,
    /// Control-loop iterations (1 to 1,000,000,000).
    #[arg(long, default_value_t = 10_000)]
    iterations: u64,
    /// GPU agents to spread the loop over: a number, or `all`; each must get at least one
    /// iteration.
    #[arg(long, default_value = "1")]
    gpus: String,
    /// Bytes per input block (a multiple of 4, at most 256 MiB).
    #[arg(long, default_value_t = 4096)]
    block: u32,
    /// Print one JSON object instead of the report.
    #[arg(long)]
    json: bool,
    /// Simulator only: fail an ioctl, as `NAME=ERRNO@N` (e.g. `WAIT_EVENTS=EIO@3`: the third
    /// `AMDKFD_IOC_WAIT_EVENTS` fails with `EIO`). Repeatable. For testing failure handling:
    /// the simulated GPU then runs only while the loop waits, so the same calls fail on every
    /// run; a fault that never fires, or that makes the policy leave the simulator, fails the
    /// run.
    #[arg(long, value_name = "NAME=ERRNO@N")]
    inject: Vec<String>,
}

/// The step the compute kernel performs on every word.
fn step(input: u32, seed: u32) -> u32 {
    input.wrapping_mul(3).wrapping_add(seed)
}

/// The input word `i` of iteration `n`.
fn input_word(n: u64, i: u32) -> u32 {
    let x =
        n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(i).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    (x >> 29) as u32
}

/// The registered blit kernel agents without DMA engines copy with (ROCr's blit-kernel
/// path): kernargs `[src, dst, words]`.
fn copy_kernel(ctx: &KernelCtx<'_>) -> Result<(), KernelFault> {
    let (src, dst, words) = (ctx.kernarg_u64(0)?, ctx.kernarg_u64(1)?, ctx.kernarg_u64(2)?);
    let first = u64::from(ctx.workgroup_id[0]) * u64::from(ctx.workgroup_size[0]);
    let count = u64::from(ctx.workgroup_size[0]).min(words.saturating_sub(first));
    if count == 0 {
        return Ok(());
    }
    let from = ctx.memory(src + 4 * first, 4 * count, false)?;
    let to = ctx.memory(dst + 4 * first, 4 * count, true)?;
    for (f, t) in from.u32s().iter().zip(to.u32s()) {
        t.store(f.load(Ordering::Relaxed), Ordering::Relaxed);
    }
    Ok(())
}

/// Kernel objects registered with the chosen driver.
#[derive(Debug, Clone, Copy)]
struct Kernels {
    step: u64,
    copy: u64,
}

/// The registered control-step kernel: kernargs `[in, out, words, seed]`. Each work-group
/// resolves its slice of both blocks once, as a GPU's TLB would.
fn control_kernel(ctx: &KernelCtx<'_>) -> Result<(), KernelFault> {
    let (src, dst) = (ctx.kernarg_u64(0)?, ctx.kernarg_u64(1)?);
    let words = ctx.kernarg_u64(2)?;
    let seed = ctx.kernarg_u64(3)? as u32;
    let first = u64::from(ctx.workgroup_id[0]) * u64::from(ctx.workgroup_size[0]);
    let count = u64::from(ctx.workgroup_size[0]).min(words.saturating_sub(first));
    if count == 0 {
        return Ok(());
    }
    let input = ctx.memory(src + 4 * first, 4 * count, false)?;
    let output = ctx.memory(dst + 4 * first, 4 * count, true)?;
    for (i, o) in input.u32s().iter().zip(output.u32s()) {
        o.store(step(i.load(Ordering::Relaxed), seed), Ordering::Relaxed);
    }
    Ok(())
}

#[derive(Debug, Serialize)]
struct LatencyNs {
    p50: f64,
    p99: f64,
    #[serde(rename = "p99.9")]
    p99_9: f64,
    max: f64,
    /// The percentiles' bound on relative error (the maximum is exact).
    relative_error: f64,
}

#[derive(Debug, Serialize)]
struct Report {
    driver: String,
    platform: String,
    reason: String,
    iterations: u64,
    verified: bool,
    gpus: usize,
    agents: Vec<String>,
    compute: &'static str,
    latency_ns: LatencyNs,
    throughput_per_s: f64,
    latency_controls: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    injected_faults: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    teardown_failures: Vec<String>,
}

/// One agent's pipeline: buffers, queue, signals.
struct Pipeline<'d> {
    driver: &'d dyn Driver,
    agent: AgentId,
    host_in: Buffer,
    host_out: Buffer,
    dev_in: Buffer,
    dev_out: Buffer,
    kernarg: Buffer,
    queue: QueueId,
    copied_in: SignalId,
    computed: SignalId,
    copied_out: SignalId,
    kernels: Option<Kernels>,
    /// Whether the agent has DMA engines; without them copies are blit kernels.
    dma: bool,
    words: u32,
}

/// Kernarg block offsets: compute step, copy in, copy out (32 bytes each).
const ARGS_STEP: u64 = 0;
const ARGS_IN: u64 = 32;
const ARGS_OUT: u64 = 64;

fn region_of(d: &dyn Driver, agent: AgentId, kinds: &[RegionKind]) -> Result<RegionId, String> {
    let regions = d.regions(agent).map_err(|e| e.to_string())?;
    kinds
        .iter()
        .find_map(|k| regions.iter().find(|r| r.kind == *k && r.allocatable).map(|r| r.id))
        .ok_or_else(|| format!("agent node {} has no {kinds:?} region", agent.node))
}

impl<'d> Pipeline<'d> {
    fn new(
        d: &'d dyn Driver,
        agent: AgentId,
        block: u32,
        kernels: Option<Kernels>,
    ) -> Result<Self, String> {
        let e = |what: &'static str| move |err: DriverError| format!("{what}: {err}");
        let cpu = d.nearest_cpu(agent).ok_or("no CPU agent near the device")?;
        let host = region_of(d, cpu, &[RegionKind::GlobalFineGrained])?;
        let args = region_of(d, cpu, &[RegionKind::Kernarg, RegionKind::GlobalFineGrained])?;
        let dev =
            region_of(d, agent, &[RegionKind::GlobalCoarseGrained, RegionKind::GlobalFineGrained])?;
        let bytes = u64::from(block);
        let p = Self {
            driver: d,
            agent,
            host_in: d.allocate(host, bytes).map_err(e("host input block"))?,
            host_out: d.allocate(host, bytes).map_err(e("host output block"))?,
            dev_in: d.allocate(dev, bytes).map_err(e("device input block"))?,
            dev_out: d.allocate(dev, bytes).map_err(e("device output block"))?,
            kernarg: d.allocate(args, 128).map_err(e("kernel arguments"))?,
            queue: d
                .create_queue(agent, &QueueParams { packets: 256, ..QueueParams::default() })
                .map_err(e("queue"))?,
            copied_in: d.create_signal(0).map_err(e("signal"))?,
            computed: d.create_signal(0).map_err(e("signal"))?,
            copied_out: d.create_signal(0).map_err(e("signal"))?,
            kernels,
            dma: (0..d.agent_count())
                .filter_map(|i| d.agent(i))
                .find(|a| a.id == agent)
                .is_some_and(|a| a.features.contains(AgentFeatures::DMA_COPY)),
            words: block / 4,
        };
        if !p.dma && p.kernels.is_none() {
            return Err(format!(
                "agent node {} has no DMA engine and the driver runs no registered kernels, \
                 so blocks cannot be moved to the device",
                agent.node
            ));
        }
        let words = u64::from(p.words);
        let blocks = [
            (ARGS_STEP, p.dev_in.addr, p.dev_out.addr),
            (ARGS_IN, p.host_in.addr, p.dev_in.addr),
            (ARGS_OUT, p.dev_out.addr, p.host_out.addr),
        ];
        for (at, src, dst) in blocks {
            let mut args = Vec::with_capacity(24);
            args.extend(src.to_le_bytes());
            args.extend(dst.to_le_bytes());
            args.extend(words.to_le_bytes());
            d.write(p.kernarg.addr + at, &args).map_err(e("kernel arguments"))?;
        }
        // Prefault the host blocks before the loop.
        d.write(p.host_in.addr, &vec![0; block as usize]).map_err(e("prefault"))?;
        d.write(p.host_out.addr, &vec![0; block as usize]).map_err(e("prefault"))?;
        Ok(p)
    }

    /// A dispatch of `kernel` over the block with the kernargs at `args`.
    fn dispatch(&self, kernel: u64, args: u64, completion: SignalId) -> KernelDispatch {
        let mut k = KernelDispatch::linear(kernel, self.words, 64);
        k.kernarg_address = self.kernarg.addr + args;
        k.completion_signal = completion.0;
        k
    }

    /// One iteration; returns whether the result checked out.
    fn iterate(&self, n: u64, input: &mut [u8], output: &mut [u8]) -> Result<bool, String> {
        let d = self.driver;
        let e =
            |what: &'static str| move |err: DriverError| format!("iteration {n}: {what}: {err}");
        let words = |p: AqlPacket| p.to_words().map_err(|err| format!("iteration {n}: {err}"));
        let seed = (n as u32).wrapping_mul(7);
        for (i, w) in input.chunks_exact_mut(4).enumerate() {
            w.copy_from_slice(&input_word(n, i as u32).to_le_bytes());
        }
        d.write(self.host_in.addr, input).map_err(e("input"))?;
        for s in [self.copied_in, self.computed, self.copied_out] {
            d.signal_store(s, 1).map_err(e("signal reset"))?;
        }
        let bytes = u64::from(self.words) * 4;
        let mut packets = Packets::default();
        match self.kernels {
            Some(k) if !self.dma => {
                packets.push(words(AqlPacket::KernelDispatch(self.dispatch(
                    k.copy,
                    ARGS_IN,
                    self.copied_in,
                )))?);
            }
            _ => d
                .copy(self.agent, self.dev_in.addr, self.host_in.addr, bytes, &[], self.copied_in)
                .map_err(e("copy to device"))?,
        }
        let mut wait = Barrier::NOP;
        wait.dep_signals[0] = self.copied_in.0;
        match self.kernels {
            Some(k) => {
                d.write(self.kernarg.addr + ARGS_STEP + 24, &u64::from(seed).to_le_bytes())
                    .map_err(e("seed"))?;
                packets.push(words(AqlPacket::BarrierAnd(wait))?);
                packets.push(words(AqlPacket::KernelDispatch(self.dispatch(
                    k.step,
                    ARGS_STEP,
                    self.computed,
                )))?);
            }
            None => {
                wait.completion_signal = self.computed.0;
                packets.push(words(AqlPacket::BarrierAnd(wait))?);
            }
        }
        match self.kernels {
            Some(k) if !self.dma => {
                let mut after = Barrier::NOP;
                after.dep_signals[0] = self.computed.0;
                packets.push(words(AqlPacket::BarrierAnd(after))?);
                packets.push(words(AqlPacket::KernelDispatch(self.dispatch(
                    k.copy,
                    ARGS_OUT,
                    self.copied_out,
                )))?);
                d.submit(self.queue, packets.as_slice()).map_err(e("submit"))?;
            }
            _ => {
                d.submit(self.queue, packets.as_slice()).map_err(e("submit"))?;
                let src = if self.kernels.is_some() { self.dev_out.addr } else { self.dev_in.addr };
                d.copy(
                    self.agent,
                    self.host_out.addr,
                    src,
                    bytes,
                    &[self.computed],
                    self.copied_out,
                )
                .map_err(e("copy back"))?;
            }
        }
        let timeout = u64::try_from(ITERATION_TIMEOUT.as_nanos()).unwrap_or(u64::MAX);
        match d.signal_wait(self.copied_out, SignalCondition::Eq(0), timeout).map_err(e("wait"))? {
            Waited::Done(_) => {}
            Waited::TimedOut => {
                return Err(format!(
                    "iteration {n}: the result did not arrive within {ITERATION_TIMEOUT:?} \
                     (queue error or hung device)"
                ));
            }
        }
        d.read(self.host_out.addr, output).map_err(e("result"))?;
        let ok = input.chunks_exact(4).zip(output.chunks_exact(4)).all(|(i, o)| {
            let i = u32::from_le_bytes([i[0], i[1], i[2], i[3]]);
            let o = u32::from_le_bytes([o[0], o[1], o[2], o[3]]);
            o == if self.kernels.is_some() { step(i, seed) } else { i }
        });
        Ok(ok)
    }

    /// Destroys the queue and signals and frees the buffers, each even when an earlier step
    /// failed; returns what failed.
    fn release(self) -> Vec<String> {
        let d = self.driver;
        let node = self.agent.node;
        let mut failed = Vec::new();
        if let Err(e) = d.destroy_queue(self.queue) {
            failed.push(format!("agent node {node}: destroying the queue: {e}"));
        }
        for s in [self.copied_in, self.computed, self.copied_out] {
            if let Err(e) = d.destroy_signal(s) {
                failed.push(format!("agent node {node}: destroying a signal: {e}"));
            }
        }
        let blocks = [
            (self.host_in, "host input block"),
            (self.host_out, "host output block"),
            (self.dev_in, "device input block"),
            (self.dev_out, "device output block"),
            (self.kernarg, "kernel arguments"),
        ];
        for (b, what) in blocks {
            if let Err(e) = d.free(b.addr) {
                failed.push(format!("agent node {node}: freeing the {what}: {e}"));
            }
        }
        failed
    }
}

/// One iteration's AQL packets, without allocating: at most five (copy in, barrier, step,
/// barrier, copy out when the agent copies with blit kernels).
#[derive(Default)]
struct Packets {
    words: [PacketWords; 5],
    len: usize,
}

impl Packets {
    fn push(&mut self, p: PacketWords) {
        if let Some(slot) = self.words.get_mut(self.len) {
            *slot = p;
            self.len += 1;
        }
    }

    fn as_slice(&self) -> &[PacketWords] {
        self.words.get(..self.len).unwrap_or_default()
    }
}

/// The latency controls the loop asks for, with what came of each.
fn latency_controls(cpus: usize, tune: bool) -> Vec<String> {
    let mut out = Vec::new();
    match latency::lock_memory() {
        Ok(()) => out.push("memory locked (mlockall)".to_string()),
        Err(e) => out.push(format!("memory not locked: {e} (raise the memlock limit)")),
    }
    if !tune {
        out.push(
            "threads not pinned, not realtime: the device's engines are threads on these CPUs"
                .into(),
        );
        return out;
    }
    let mut allowed = [0usize; 256];
    match latency::allowed_cpus(&mut allowed) {
        Ok(n) if n > cpus => out.push(format!(
            "{cpus} loop thread(s) pinned to CPUs {:?}",
            allowed.get(n - cpus..n).unwrap_or_default()
        )),
        Ok(_) => out.push("loop threads not pinned (no spare CPU)".to_string()),
        Err(e) => out.push(format!("loop threads not pinned: {e}")),
    }
    out
}

fn pin_and_prioritise(index: usize, cpus: usize) -> Option<String> {
    let mut allowed = [0usize; 256];
    let n = latency::allowed_cpus(&mut allowed).ok()?;
    if n > cpus
        && let Some(cpu) = allowed.get(n - cpus + index)
    {
        let _ = latency::pin_current_thread(*cpu);
    }
    latency::set_realtime(10)
        .err()
        .map(|e| format!("not realtime: {e} (needs CAP_SYS_NICE or RLIMIT_RTPRIO)"))
}

/// How many GPU agents `--gpus` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gpus {
    /// `all`: every usable agent.
    All,
    /// This many.
    Count(usize),
}

/// Parses `--gpus`: a number of at least 1, or `all`.
fn parse_gpus(text: &str) -> Result<Gpus, String> {
    if text == "all" {
        return Ok(Gpus::All);
    }
    let shown = crate::text::escape(text);
    match text.parse::<usize>() {
        Ok(0) => Err("--gpus 0: at least one GPU runs the loop".into()),
        Ok(n) => Ok(Gpus::Count(n)),
        Err(_) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => {
            Err(format!("--gpus {shown}: more GPUs than any machine has"))
        }
        Err(_) => Err(format!("--gpus {shown}: a number of GPUs (1, 2, …) or `all`")),
    }
}

/// What the arguments ask for, checked before anything starts.
struct Plan {
    gpus: Gpus,
    faults: Vec<FaultSpec>,
    /// The driver `HSAKMT_DRIVER` names.
    env: Option<DriverKind>,
}

impl Plan {
    fn new(args: &RunArgs) -> Result<Self, String> {
        if args.block == 0 || !args.block.is_multiple_of(4) {
            return Err(format!("--block {}: must be a non-zero multiple of 4", args.block));
        }
        if args.block > MAX_BLOCK {
            return Err(format!(
                "--block {}: at most {MAX_BLOCK} bytes (256 MiB; four blocks live in memory \
                 per GPU)",
                args.block
            ));
        }
        if args.iterations == 0 {
            return Err("--iterations must be at least 1".into());
        }
        if args.iterations > MAX_ITERATIONS {
            return Err(format!(
                "--iterations {}: at most {MAX_ITERATIONS} per run",
                args.iterations
            ));
        }
        let gpus = parse_gpus(&args.gpus)?;
        let faults = args.inject.iter().map(|s| inject::parse(s)).collect::<Result<_, _>>()?;
        let env = crate::env::driver()?;
        if let (Some(profile), Some(kind)) = (&args.sim, env)
            && kind != DriverKind::Sim
        {
            return Err(format!(
                "--sim {} runs the simulator, but {DRIVER_ENV} asks for the `{kind}` driver: \
                 drop --sim or unset {DRIVER_ENV}",
                crate::text::escape(profile)
            ));
        }
        Ok(Self { gpus, faults, env })
    }
}

pub(crate) fn run(args: &RunArgs) -> Result<(), Failure> {
    if args.sim.as_deref() == Some(crate::profiles::HELP) {
        return crate::profiles::print();
    }
    let plan = Plan::new(args)?;
    detect_and_run(args, &plan)
}

/// A detection failure that the configuration caused (a malformed `HSA_OVERRIDE_GFX_VERSION`):
/// an error of the run, never a reason to fall back to another driver.
fn configuration_error(registry: &Registry<'_>) -> Option<String> {
    registry.report().iter().find_map(|d| match &d.outcome {
        Err(DriverError::Device(device::Error::Topology(
            e @ topology::Error::GfxOverride { .. },
        ))) => Some(e.to_string()),
        _ => None,
    })
}

/// The usable agents of the chosen driver, and how many of them `plan` asks for.
fn agents_to_use(
    driver: &dyn Driver,
    kind: DriverKind,
    plan: &Plan,
    iterations: u64,
) -> Result<Vec<AgentInfo>, String> {
    // Agents that execute kernel dispatch packets.
    let mut agents: Vec<_> = (0..driver.agent_count())
        .filter_map(|i| driver.agent(i))
        .filter(|a| match kind {
            DriverKind::Host => a.kind == AgentKind::Cpu,
            _ => a.kind == AgentKind::Gpu,
        })
        .collect();
    if agents.is_empty() {
        return Err(format!(
            "the `{kind}` driver has no agent to run the loop on (the topology has no usable GPU: \
             none, or none with a gpu_id; `--sim help` lists the profiles that have one)"
        ));
    }
    let wanted = match plan.gpus {
        Gpus::All => agents.len(),
        Gpus::Count(n) if n > agents.len() => {
            return Err(format!(
                "--gpus {n}: the `{kind}` driver has only {} agent(s)",
                agents.len()
            ));
        }
        Gpus::Count(n) => n,
    };
    if u64::try_from(wanted).unwrap_or(u64::MAX) > iterations {
        return Err(format!(
            "--gpus {wanted} with --iterations {iterations}: every GPU needs at least one \
             iteration; use at most {iterations} GPU(s) or at least {wanted} iterations"
        ));
    }
    agents.truncate(wanted);
    Ok(agents)
}

fn detect_and_run(args: &RunArgs, plan: &Plan) -> Result<(), Failure> {
    let profile_name = args.sim.clone().unwrap_or_else(|| hsakmt_sim::DEFAULT_PROFILE.to_string());
    let profile = Profile::embedded(&profile_name)
        .map_err(|e| crate::text::escape(&e.to_string()).into_owned())?;
    // One kernel registry for the simulator and the host driver: the same kernel objects run
    // on either.
    let registry_of_kernels = KernelRegistry::new();
    let sim_kernels = Kernels {
        step: registry_of_kernels.register("control_step", control_kernel),
        copy: registry_of_kernels.register("blit_copy", copy_kernel),
    };
    let mut builder = SimPlatform::builder()
        .profile(profile)
        .inherit_env(true)
        .kernels(registry_of_kernels.clone());
    if !plan.faults.is_empty() {
        // Deterministic ioctl sequences: see `crate::inject`.
        builder = builder.cp_mode(CpMode::OnWait);
    }
    let sim = builder.build();
    let armed = inject::Armed::arm(&sim, &plan.faults);
    let probe = sim.clone();
    let kfd =
        boxed_driver(DriverKind::Kfd, DriverId(0), LinuxPlatform::new(), DEFAULT_MEMORY_OBJECTS);
    let simulated = boxed_driver(DriverKind::Sim, DriverId(1), sim, DEFAULT_MEMORY_OBJECTS);
    let host = Box::new(HostDriver::with_kernels(DriverId(2), registry_of_kernels));

    let mut registry: Registry<'_> = Registry::new();
    if args.sim.is_none() {
        let _ = registry.detect(&*kfd);
    }
    let _ = registry.detect(&*simulated);
    if args.sim.is_none() {
        let _ = registry.detect(&*host);
    }
    let shutdown_all = |registry: &Registry<'_>| {
        registry
            .drivers()
            .filter_map(|(_, d)| {
                d.shutdown().err().map(|e| format!("shutting `{}` down: {e}", d.kind()))
            })
            .collect::<Vec<_>>()
    };
    if let Some(e) = configuration_error(&registry) {
        shutdown_all(&registry);
        return Err(e.into());
    }
    let policy =
        if args.sim.is_some() { Policy::Explicit(DriverKind::Sim) } else { Policy::GpuFirst };
    let (choice, driver) = match registry.choose(policy, plan.env.map(|k| k.name().as_bytes())) {
        Ok(c) => c,
        Err(e) => {
            let mut msg = format!("no driver to run on: {e}");
            for d in registry.report() {
                if let Err(why) = &d.outcome {
                    msg.push_str(&format!("\n  {}: {why}", d.kind));
                }
            }
            shutdown_all(&registry);
            return Err(msg.into());
        }
    };
    if !armed.is_empty() && choice.kind != DriverKind::Sim {
        let fired = armed.fired(&probe);
        let why = registry
            .report()
            .iter()
            .find(|d| d.kind == DriverKind::Sim)
            .and_then(|d| d.outcome.as_ref().err())
            .map(ToString::to_string);
        shutdown_all(&registry);
        return Err(match (fired.is_empty(), why) {
            (false, Some(why)) => format!(
                "--inject {}: the fault fired while the simulator was being set up, so the `sim` \
                 driver was not usable ({why}) and the policy fell back to `{}`: the loop did \
                 not run under the fault",
                fired.join(", --inject "),
                choice.kind
            ),
            _ => format!(
                "--inject makes the simulator fail, but the policy chose the `{}` driver: add \
                 --sim PROFILE or set {DRIVER_ENV}=sim",
                choice.kind
            ),
        }
        .into());
    }
    let platform = match choice.kind {
        DriverKind::Kfd => "linux /dev/kfd".to_string(),
        DriverKind::Sim => format!("simulator profile {profile_name}"),
        DriverKind::Host => "host CPU".to_string(),
    };
    if !args.json {
        for d in registry.report() {
            if let Err(why) = &d.outcome {
                crate::note!("hsakmt: driver `{}` not usable: {why}", d.kind);
            }
        }
        crate::note!("hsakmt: using {choice}");
    }
    // Registered kernels run where the driver executes host kernels (simulator, host CPU).
    let kernels = driver.capabilities().contains(Capabilities::HOST_KERNELS).then_some(sim_kernels);
    let used = match agents_to_use(driver, choice.kind, plan, args.iterations) {
        Ok(used) => used,
        Err(e) => {
            shutdown_all(&registry);
            return Err(e.into());
        }
    };
    if !args.json {
        let all: Vec<_> = (0..driver.agent_count()).filter_map(|i| driver.agent(i)).collect();
        let cpus = all.iter().filter(|a| a.kind == AgentKind::Cpu).count();
        crate::note!(
            "hsakmt: {} agents ({} CPU, {} GPU); running on {}:",
            all.len(),
            cpus,
            all.len() - cpus,
            used.len()
        );
        for a in &used {
            crate::note!(
                "  node {:>2}  {:<8} {:>4} CUs  {:>6} MiB  gpu_id {}",
                a.id.node,
                a.name,
                a.compute_units,
                a.local_memory_bytes >> 20,
                a.gpu_id
            );
        }
    }

    // Locking memory helps every driver; pinning and realtime priority only help when the
    // device is real: the simulator's and the host driver's engines are threads on the same
    // CPUs, which a spinning realtime loop thread would starve.
    let tune = choice.kind == DriverKind::Kfd;
    let mut controls = latency_controls(used.len(), tune);
    let (result, mut problems) =
        run_loop(driver, used.iter().map(|a| a.id).collect(), args, kernels, tune);
    if let Err(e) = driver.shutdown() {
        problems.push(format!("shutting the `{}` driver down: {e}", choice.kind));
    }
    problems.extend(shutdown_all(&registry));
    let never = armed.never_fired(&probe);
    let (latencies, verified, elapsed, rt) = match result {
        Ok(r) => r,
        Err(e) => {
            let mut msg = e;
            for p in &problems {
                msg.push_str(&format!("\n  teardown: {p}"));
            }
            msg.push_str(&never);
            return Err(msg.into());
        }
    };
    controls.extend(rt);

    let report = Report {
        driver: choice.kind.name().to_string(),
        platform,
        reason: choice.to_string(),
        iterations: latencies.len(),
        verified,
        gpus: used.len(),
        agents: used.iter().map(|a| format!("node {} {}", a.id.node, a.name)).collect(),
        compute: if kernels.is_some() {
            "registered kernel"
        } else {
            "barrier (no code object loader)"
        },
        latency_ns: LatencyNs {
            p50: latencies.percentile(50.0),
            p99: latencies.percentile(99.0),
            p99_9: latencies.percentile(99.9),
            max: latencies.max() as f64,
            relative_error: crate::histogram::RELATIVE_ERROR,
        },
        throughput_per_s: args.iterations as f64 / elapsed.as_secs_f64(),
        latency_controls: controls,
        injected_faults: armed.fired(&probe).into_iter().map(str::to_string).collect(),
        teardown_failures: problems.clone(),
    };
    if args.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        crate::output::emit(&format!("{text}\n"))?;
    } else {
        print_report(&report)?;
    }
    let mut failures = Vec::new();
    if !verified {
        failures.push("some iterations returned a wrong result".to_string());
    }
    if !problems.is_empty() {
        failures.push(format!("teardown failed:\n  {}", problems.join("\n  ")));
    }
    if !never.is_empty() {
        failures.push(format!("an injected fault never fired:{never}"));
    }
    if failures.is_empty() { Ok(()) } else { Err(failures.join("\n").into()) }
}

type LoopResult = (Histogram, bool, Duration, Vec<String>);
/// One agent's latencies, whether its results checked out, and a latency-control note.
type AgentOutcome = (Histogram, bool, Option<String>);

/// Runs the loop on `agents`; returns its outcome and, apart, what failed while the pipelines
/// were released (reported whether the loop succeeded or not).
fn run_loop(
    driver: &dyn Driver,
    agents: Vec<AgentId>,
    args: &RunArgs,
    kernels: Option<Kernels>,
    tune: bool,
) -> (Result<LoopResult, String>, Vec<String>) {
    let mut pipelines = Vec::with_capacity(agents.len());
    for a in &agents {
        match Pipeline::new(driver, *a, args.block, kernels) {
            Ok(p) => pipelines.push(p),
            Err(e) => {
                let released = pipelines.into_iter().flat_map(Pipeline::release).collect();
                return (Err(e), released);
            }
        }
    }
    let threads = pipelines.len() as u64;
    let per = args.iterations / threads;
    let extra = args.iterations % threads;
    let done = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let progress = !args.json && std::io::stderr().is_terminal();
    let start = Instant::now();
    let outcomes: Vec<Result<AgentOutcome, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = pipelines
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let count = per + u64::from((i as u64) < extra);
                let (done, failed) = (&done, &failed);
                s.spawn(move || {
                    let rt = if tune { pin_and_prioritise(i, threads as usize) } else { None };
                    let mut lat = Histogram::new();
                    let mut ok = true;
                    let mut input = vec![0u8; args.block as usize];
                    let mut output = vec![0u8; args.block as usize];
                    for k in 0..count {
                        if failed.load(Ordering::Relaxed) {
                            break;
                        }
                        let n = k * threads + i as u64;
                        let t = Instant::now();
                        match p.iterate(n, &mut input, &mut output) {
                            Ok(good) => ok &= good,
                            Err(e) => {
                                failed.store(true, Ordering::Relaxed);
                                return Err(format!("agent node {}: {e}", p.agent.node));
                            }
                        }
                        lat.record(u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX));
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok((lat, ok, rt))
                })
            })
            .collect();
        if progress {
            let bar = |d: u64| {
                let pct = d.saturating_mul(100) / args.iterations.max(1);
                let filled = "#".repeat(usize::try_from(pct / 4).unwrap_or(25).min(25));
                crate::output::progress(format_args!(
                    "[{filled:<25}] {pct:>3}% {d}/{}",
                    args.iterations
                ));
            };
            while handles.iter().any(|h| !h.is_finished()) {
                bar(done.load(Ordering::Relaxed));
                std::thread::sleep(Duration::from_millis(100));
            }
            bar(done.load(Ordering::Relaxed));
            crate::note!("");
        }
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a loop thread panicked".into())))
            .collect()
    });
    let elapsed = start.elapsed();
    let released: Vec<String> = pipelines.into_iter().flat_map(Pipeline::release).collect();
    let mut all = Histogram::new();
    let mut verified = true;
    let mut rt = Vec::new();
    for o in outcomes {
        let (lat, ok, note) = match o {
            Ok(o) => o,
            Err(e) => return (Err(e), released),
        };
        all.merge(&lat);
        verified &= ok;
        rt.extend(note);
    }
    rt.dedup();
    (Ok((all, verified, elapsed, rt)), released)
}

fn print_report(r: &Report) -> Result<(), Failure> {
    use std::fmt::Write as _;
    let mut s = String::new();
    let us = |ns: f64| format!("{:.1} us", ns / 1000.0);
    let _ = writeln!(s, "hsakmt run: {} iterations on {} ({})", r.iterations, r.platform, r.driver);
    let _ = writeln!(s, "  agents      {}", r.agents.join(", "));
    let _ = writeln!(s, "  compute     {}", r.compute);
    let _ = writeln!(
        s,
        "  latency     p50 {}  p99 {}  p99.9 {}  max {}",
        us(r.latency_ns.p50),
        us(r.latency_ns.p99),
        us(r.latency_ns.p99_9),
        us(r.latency_ns.max)
    );
    let _ = writeln!(s, "  throughput  {:.0} iterations/s", r.throughput_per_s);
    let _ = writeln!(
        s,
        "  verified    {}",
        if r.verified { "every result checked out" } else { "FAILED" }
    );
    for c in &r.latency_controls {
        let _ = writeln!(s, "  latency     {c}");
    }
    for f in &r.injected_faults {
        let _ = writeln!(s, "  injected    {f} fired; the library worked around it");
    }
    for t in &r.teardown_failures {
        let _ = writeln!(s, "  teardown    FAILED: {t}");
    }
    crate::output::emit(&s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn gpus_parse_with_their_own_words() {
        assert_eq!(parse_gpus("all"), Ok(Gpus::All));
        assert_eq!(parse_gpus("3"), Ok(Gpus::Count(3)));
        assert!(parse_gpus("0").unwrap_err().contains("at least one"));
        assert!(parse_gpus("99999999999999999999999").unwrap_err().contains("more GPUs than"));
        for bad in ["", "-1", "ALL", "2x", " 2", "\u{1b}[2J"] {
            let e = parse_gpus(bad).unwrap_err();
            assert!(e.contains("a number of GPUs") && !e.contains('\u{1b}'), "{bad:?}: {e}");
        }
    }

    proptest! {
        #[test]
        fn any_gpus_text_parses_or_says_why(text in "\\PC*|[0-9]{0,30}|[\u{0}-\u{20}a-z0-9]{0,8}") {
            match parse_gpus(&text) {
                Ok(Gpus::Count(n)) => prop_assert!(
                    n >= 1 && text.trim_start_matches('+').bytes().all(|b| b.is_ascii_digit())
                ),
                Ok(Gpus::All) => prop_assert_eq!(text.as_str(), "all"),
                Err(e) => prop_assert!(!e.chars().any(char::is_control)),
            }
        }
    }
}
