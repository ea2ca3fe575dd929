//! `hsakmt run`: the end-to-end job — an appliance-style control loop through the driver layer.
//!
//! Each iteration writes an input block into host memory, DMA-copies it to device memory,
//! publishes a barrier (waiting for the copy) and a compute step on the agent's AQL queue,
//! DMA-copies the result back once the step's completion signal is 0, waits for that copy's
//! signal, and checks every word of the result. On the simulator (and the host driver) the
//! compute step is a registered kernel (`out[i] = in[i] * 3 + seed`); on real hardware, which
//! would need a code-object loader, the step is the barrier alone and the block must come back
//! unchanged — the copy/barrier/signal path.

use std::io::{IsTerminal, Write as _};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use hsakmt_core::config::DEFAULT_MEMORY_OBJECTS;
use hsakmt_core::device::SignalCondition;
use hsakmt_core::driver::policy::DRIVER_ENV;
use hsakmt_core::driver::{
    AgentFeatures, AgentId, AgentKind, Buffer, Capabilities, Driver, DriverError, DriverId,
    DriverKind, Policy, QueueId, QueueParams, RegionId, RegionKind, Registry, SignalId, Waited,
};
use hsakmt_core::error::Errno;
use hsakmt_core::platform::SharedMemory as _;
use hsakmt_core::queue::aql::{AqlPacket, Barrier, KernelDispatch};
use hsakmt_core::uapi::IOCTLS;
use hsakmt_linux::{LinuxPlatform, boxed_driver, latency};
use hsakmt_sim::{
    HostDriver, IoctlFault, KernelCtx, KernelFault, KernelRegistry, Profile, SimPlatform, Trigger,
};
use serde::Serialize;

use crate::bench::Samples;

/// How long one iteration may take before the run fails.
const ITERATION_TIMEOUT: Duration = Duration::from_secs(10);

/// Arguments of `hsakmt run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Use the simulator with this embedded profile instead of detecting a driver.
    #[arg(long, value_name = "PROFILE")]
    sim: Option<String>,
    /// Control-loop iterations.
    #[arg(long, default_value_t = 10_000)]
    iterations: u64,
    /// GPU agents to spread the loop over: a number, or `all`.
    #[arg(long, default_value = "1")]
    gpus: String,
    /// Bytes per input block (a multiple of 4).
    #[arg(long, default_value_t = 4096)]
    block: u32,
    /// Print one JSON object instead of the report.
    #[arg(long)]
    json: bool,
    /// Simulator only: fail an ioctl, as `NAME=ERRNO@N` (e.g. `WAIT_EVENTS=EIO@3`: the third
    /// `AMDKFD_IOC_WAIT_EVENTS` fails with `EIO`). Repeatable. For testing failure handling.
    #[arg(long, value_name = "NAME=ERRNO@N")]
    inject: Vec<String>,
}

/// Parses `NAME=ERRNO@N` into an ioctl fault.
fn parse_fault(spec: &str) -> Result<IoctlFault, String> {
    let bad = || format!("--inject {spec}: expected NAME=ERRNO@N, e.g. WAIT_EVENTS=EIO@3");
    let (name, rest) = spec.split_once('=').ok_or_else(bad)?;
    let (errno, nth) = rest.split_once('@').ok_or_else(bad)?;
    let info = IOCTLS
        .iter()
        .find(|i| i.name.trim_start_matches("AMDKFD_IOC_").eq_ignore_ascii_case(name))
        .ok_or_else(|| format!("--inject {spec}: no ioctl named {name}"))?;
    let errno = Errno::ALL
        .iter()
        .copied()
        .find(|e| e.name().is_some_and(|n| n.eq_ignore_ascii_case(errno)))
        .ok_or_else(|| format!("--inject {spec}: no errno named {errno}"))?;
    let nth = nth.parse::<u64>().ok().filter(|n| *n >= 1).ok_or_else(bad)?;
    Ok(IoctlFault { nr: Some(info.nr), errno, trigger: Trigger::Nth(nth) })
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
    max: f64,
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
        let mut packets = Vec::with_capacity(4);
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
                d.submit(self.queue, &packets).map_err(e("submit"))?;
            }
            _ => {
                d.submit(self.queue, &packets).map_err(e("submit"))?;
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

    fn release(self) {
        let d = self.driver;
        let _ = d.destroy_queue(self.queue);
        for s in [self.copied_in, self.computed, self.copied_out] {
            let _ = d.destroy_signal(s);
        }
        for b in [self.host_in, self.host_out, self.dev_in, self.dev_out, self.kernarg] {
            let _ = d.free(b.addr);
        }
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
        Ok(n) if n > cpus => {
            out.push(format!("{cpus} loop thread(s) pinned to CPUs {:?}", &allowed[n - cpus..n]))
        }
        Ok(_) => out.push("loop threads not pinned (no spare CPU)".to_string()),
        Err(e) => out.push(format!("loop threads not pinned: {e}")),
    }
    out
}

fn pin_and_prioritise(index: usize, cpus: usize) -> Option<String> {
    let mut allowed = [0usize; 256];
    let n = latency::allowed_cpus(&mut allowed).ok()?;
    if n > cpus {
        let _ = latency::pin_current_thread(allowed[n - cpus + index]);
    }
    latency::set_realtime(10)
        .err()
        .map(|e| format!("not realtime: {e} (needs CAP_SYS_NICE or RLIMIT_RTPRIO)"))
}

pub(crate) fn run(args: &RunArgs) -> Result<(), String> {
    if args.block == 0 || !args.block.is_multiple_of(4) {
        return Err(format!("--block {}: must be a non-zero multiple of 4", args.block));
    }
    if args.iterations == 0 {
        return Err("--iterations must be at least 1".into());
    }
    detect_and_run(args)
}

fn detect_and_run(args: &RunArgs) -> Result<(), String> {
    let profile_name = args.sim.clone().unwrap_or_else(|| hsakmt_sim::DEFAULT_PROFILE.to_string());
    let profile = Profile::embedded(&profile_name).map_err(|e| e.to_string())?;
    // One kernel registry for the simulator and the host driver: the same kernel objects run
    // on either.
    let registry_of_kernels = KernelRegistry::new();
    let sim_kernels = Kernels {
        step: registry_of_kernels.register("control_step", control_kernel),
        copy: registry_of_kernels.register("blit_copy", copy_kernel),
    };
    let sim = SimPlatform::builder()
        .profile(profile)
        .inherit_env(true)
        .kernels(registry_of_kernels.clone())
        .build();
    for spec in &args.inject {
        sim.inject(parse_fault(spec)?);
    }
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
    let env = std::env::var(DRIVER_ENV).ok();
    let policy =
        if args.sim.is_some() { Policy::Explicit(DriverKind::Sim) } else { Policy::GpuFirst };
    let (choice, driver) = match registry.choose(policy, env.as_deref().map(str::as_bytes)) {
        Ok(c) => c,
        Err(e) => {
            let mut msg = format!("no driver to run on: {e}");
            for d in registry.report() {
                if let Err(why) = &d.outcome {
                    msg.push_str(&format!("\n  {}: {why}", d.kind));
                }
            }
            return Err(msg);
        }
    };
    let platform = match choice.kind {
        DriverKind::Kfd => "linux /dev/kfd".to_string(),
        DriverKind::Sim => format!("simulator profile {profile_name}"),
        DriverKind::Host => "host CPU".to_string(),
    };
    if !args.json {
        for d in registry.report() {
            if let Err(why) = &d.outcome {
                eprintln!("hsakmt: driver `{}` not usable: {why}", d.kind);
            }
        }
        eprintln!("hsakmt: using {choice}");
    }
    // Registered kernels run where the driver executes host kernels (simulator, host CPU).
    let kernels = driver.capabilities().contains(Capabilities::HOST_KERNELS).then_some(sim_kernels);

    // Agents that execute kernel dispatch packets.
    let agents: Vec<_> = (0..driver.agent_count())
        .filter_map(|i| driver.agent(i))
        .filter(|a| match choice.kind {
            DriverKind::Host => a.kind == AgentKind::Cpu,
            _ => a.kind == AgentKind::Gpu,
        })
        .collect();
    if agents.is_empty() {
        return Err(format!(
            "the `{}` driver has no agent to run the loop on (the topology has no usable GPU: \
             none, or none with a gpu_id)",
            choice.kind
        ));
    }
    let wanted = match args.gpus.as_str() {
        "all" => agents.len(),
        n => n
            .parse::<usize>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| format!("--gpus {n}: a number of at least 1, or `all`"))?,
    };
    if wanted > agents.len() {
        return Err(format!(
            "--gpus {wanted}: the `{}` driver has only {} agent(s)",
            choice.kind,
            agents.len()
        ));
    }
    let used = &agents[..wanted];
    if !args.json {
        let all: Vec<_> = (0..driver.agent_count()).filter_map(|i| driver.agent(i)).collect();
        let cpus = all.iter().filter(|a| a.kind == AgentKind::Cpu).count();
        eprintln!(
            "hsakmt: {} agents ({} CPU, {} GPU); running on {}:",
            all.len(),
            cpus,
            all.len() - cpus,
            used.len()
        );
        for a in used {
            eprintln!(
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
    let controls = latency_controls(used.len(), tune);
    let result = run_loop(driver, used.iter().map(|a| a.id).collect(), args, kernels, tune);
    let shutdown = driver.shutdown();
    for (_, other) in registry.drivers() {
        let _ = other.shutdown();
    }
    let (latencies, verified, elapsed, rt) = result?;
    shutdown.map_err(|e| format!("shutting the driver down: {e}"))?;
    let mut controls = controls;
    controls.extend(rt);

    let report = Report {
        driver: choice.kind.name().to_string(),
        platform,
        reason: choice.to_string(),
        iterations: args.iterations,
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
            max: latencies.max(),
        },
        throughput_per_s: args.iterations as f64 / elapsed.as_secs_f64(),
        latency_controls: controls,
    };
    if args.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        crate::output::emit(&format!("{text}\n"));
    } else {
        print_report(&report);
    }
    if verified { Ok(()) } else { Err("some iterations returned a wrong result".into()) }
}

type LoopResult = (Samples, bool, Duration, Vec<String>);
/// One agent's latencies, whether its results checked out, and a latency-control note.
type AgentOutcome = (Samples, bool, Option<String>);

fn run_loop(
    driver: &dyn Driver,
    agents: Vec<AgentId>,
    args: &RunArgs,
    kernels: Option<Kernels>,
    tune: bool,
) -> Result<LoopResult, String> {
    let pipelines: Vec<Pipeline<'_>> = agents
        .iter()
        .map(|a| Pipeline::new(driver, *a, args.block, kernels))
        .collect::<Result<_, _>>()?;
    let per = args.iterations / pipelines.len() as u64;
    let extra = args.iterations % pipelines.len() as u64;
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
                let n_threads = pipelines.len();
                s.spawn(move || {
                    let rt = if tune { pin_and_prioritise(i, n_threads) } else { None };
                    let mut lat = Samples::with_capacity(count as usize);
                    let mut ok = true;
                    let mut input = vec![0u8; args.block as usize];
                    let mut output = vec![0u8; args.block as usize];
                    for k in 0..count {
                        if failed.load(Ordering::Relaxed) {
                            break;
                        }
                        let n = k * n_threads as u64 + i as u64;
                        let t = Instant::now();
                        match p.iterate(n, &mut input, &mut output) {
                            Ok(good) => ok &= good,
                            Err(e) => {
                                failed.store(true, Ordering::Relaxed);
                                return Err(format!("agent node {}: {e}", p.agent.node));
                            }
                        }
                        lat.push(t.elapsed().as_nanos() as f64);
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok((lat, ok, rt))
                })
            })
            .collect();
        if progress {
            while handles.iter().any(|h| !h.is_finished()) {
                let d = done.load(Ordering::Relaxed);
                let pct = d * 100 / args.iterations.max(1);
                let bar = "#".repeat((pct / 4) as usize);
                eprint!("\r[{bar:<25}] {pct:>3}% {d}/{}", args.iterations);
                let _ = std::io::stderr().flush();
                std::thread::sleep(Duration::from_millis(100));
            }
            eprintln!(
                "\r[{:<25}] 100% {}/{}",
                "#".repeat(25),
                done.load(Ordering::Relaxed),
                args.iterations
            );
        }
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a loop thread panicked".into())))
            .collect()
    });
    let elapsed = start.elapsed();
    for p in pipelines {
        p.release();
    }
    let mut all = Samples::with_capacity(args.iterations as usize);
    let mut verified = true;
    let mut rt = Vec::new();
    for o in outcomes {
        let (lat, ok, note) = o?;
        all.extend(&lat);
        verified &= ok;
        rt.extend(note);
    }
    rt.dedup();
    Ok((all, verified, elapsed, rt))
}

fn print_report(r: &Report) {
    use std::fmt::Write as _;
    let mut s = String::new();
    let us = |ns: f64| format!("{:.1} us", ns / 1000.0);
    let _ = writeln!(s, "hsakmt run: {} iterations on {} ({})", r.iterations, r.platform, r.driver);
    let _ = writeln!(s, "  agents      {}", r.agents.join(", "));
    let _ = writeln!(s, "  compute     {}", r.compute);
    let _ = writeln!(
        s,
        "  latency     p50 {}  p99 {}  max {}",
        us(r.latency_ns.p50),
        us(r.latency_ns.p99),
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
    crate::output::emit(&s);
}
