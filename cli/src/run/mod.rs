//! `hsakmt run`: the end-to-end job — an appliance-style control loop through the driver layer.
//!
//! Each iteration writes an input block into host memory, DMA-copies it to device memory,
//! publishes a barrier (waiting for the copy) and a compute step on the agent's AQL queue,
//! DMA-copies the result back once the step's completion signal is 0, waits for that copy's
//! signal, and checks every word of the result. The compute step (`out[i] = in[i] * 3 +
//! seed`) is the `control_step` code object `hsakmt` carries for the agent's processor, loaded
//! through the driver: on a GPU through `/dev/kfd` the GPU runs it, on the simulator its ISA
//! interpreter does. On the host-CPU driver it is a registered kernel; on a processor `hsakmt`
//! has no code object for, the step is the barrier alone and the block must come back
//! unchanged — the copy/barrier/signal path. Agents without DMA engines copy with the blit
//! kernel (`copy_bytes`) the same way.
//!
//! `--step` runs the simulator's engines on the loop thread (its on-wait mode, the driver's
//! signal wait blocking at once) and reports each iteration's time less the engines' work
//! ([`hsakmt_sim::thread_engine_ns`]): the library's own time, which `hsakmt bench run` holds
//! to p99.9 ≤ 4 × p50. Iterations during which the scheduler ran another task on the loop's
//! CPU (its run-queue delay grew: [`preemption`]) are left out of that figure and counted.

mod kernels;
mod pipeline;
mod plan;
mod preemption;

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use hsakmt_core::config::DEFAULT_MEMORY_OBJECTS;
use hsakmt_core::device;
use hsakmt_core::driver::policy::DRIVER_ENV;
use hsakmt_core::driver::{
    AgentId, AgentKind, Driver, DriverError, DriverId, DriverKind, Policy, Registry,
};
use hsakmt_core::topology;
use hsakmt_linux::{LinuxPlatform, boxed_driver, latency};
use hsakmt_sim::{CpMode, HostDriver, KernelRegistry, Profile, SimPlatform};
use serde::Serialize;

use crate::histogram::Histogram;
use crate::inject;
use crate::output::Failure;
use crate::platform::AnyPlatform;
use kernels::{Compute, Registered};
use pipeline::{Pipeline, control_kernel, copy_kernel};
use plan::{Plan, agents_to_use};

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
    /// With --sim: present the simulator as a plain KFD device (driver `kfd`, no host
    /// kernels), so the loop takes the branch real hardware takes (the code objects through
    /// /dev/kfd's driver, interpreted).
    #[arg(long, requires = "sim")]
    as_kfd: bool,
    /// Run on the simulator (the default profile unless --sim names one) with its command
    /// processors and DMA engines stepped on the loop thread, which blocks in the kernel at
    /// once instead of spinning; reports the library's own time per iteration, the simulated
    /// engines' work left out.
    #[arg(long)]
    step: bool,
}

impl RunArgs {
    /// The kind of driver the simulator is presented as.
    fn sim_kind(&self) -> DriverKind {
        if self.as_kfd { DriverKind::Kfd } else { DriverKind::Sim }
    }

    /// Whether the run is on the simulator by request (`--sim` or `--step`).
    fn simulated(&self) -> bool {
        self.sim.is_some() || self.step
    }
}

#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct LatencyNs {
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    #[serde(rename = "p99.9")]
    pub(crate) p99_9: f64,
    pub(crate) max: f64,
    /// The percentiles' bound on relative error (the maximum is exact).
    relative_error: f64,
}

impl LatencyNs {
    fn of(h: &Histogram) -> Self {
        LatencyNs {
            p50: h.percentile(50.0),
            p99: h.percentile(99.0),
            p99_9: h.percentile(99.9),
            max: h.max() as f64,
            relative_error: crate::histogram::RELATIVE_ERROR,
        }
    }
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
    compute: String,
    latency_ns: LatencyNs,
    /// With `--step`: each iteration's time less the simulated engines' work on the loop
    /// thread — the library's (and the tool's) own time.
    #[serde(skip_serializing_if = "Option::is_none")]
    library_time_ns: Option<LatencyNs>,
    /// With `--step`: iterations left out of `library_time_ns` because another task held the
    /// loop thread's CPU meanwhile (none are left out where the kernel does not report it).
    #[serde(skip_serializing_if = "Option::is_none")]
    preempted_iterations: Option<u64>,
    throughput_per_s: f64,
    heap_allocations_per_iteration: Allocations,
    /// Calls the library made to the simulated device per iteration (the system calls it
    /// would make on a real machine); only on the simulator.
    #[serde(skip_serializing_if = "Option::is_none")]
    device_calls_per_iteration: Option<f64>,
    latency_controls: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    injected_faults: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    teardown_failures: Vec<String>,
}

/// Heap allocations per iteration (the binary's counting allocator).
#[derive(Debug, Serialize, Clone, Copy, Default)]
struct Allocations {
    /// Made by the library and this tool on the loop threads, after each thread's warm-up
    /// (the loop threads' allocations less the simulated kernel's in their ioctls and the
    /// simulated engines' run on them).
    library_steady_state: f64,
    /// Made by the simulated kernel inside the loop threads' ioctls, after the warm-up.
    simulated_kernel_steady_state: f64,
    /// With `--step`: made by the simulated engines (command processors with the ISA
    /// interpreter, DMA engines) run on the loop threads, after the warm-up.
    #[serde(skip_serializing_if = "Option::is_none")]
    simulated_engines_steady_state: Option<f64>,
    /// The whole process while the loop ran (the simulated device's threads too).
    process: f64,
}

/// Iterations of each loop thread before its steady state (at most a tenth of its share).
const WARM_ITERATIONS: u64 = 100;

/// The latency controls the loop asks for, with what came of each.
fn latency_controls(cpus: usize, tune: bool, step: bool) -> Vec<String> {
    let mut out = Vec::new();
    if step {
        out.push(
            "simulated engines stepped on the loop thread (--step): the signal wait blocks at \
             once"
                .into(),
        );
    }
    match latency::lock_memory() {
        Ok(()) => out.push("memory locked (mlockall)".to_string()),
        Err(e) => out.push(format!("memory not locked: {e} (raise the memlock limit)")),
    }
    if !tune {
        out.push(if step {
            "threads not pinned, not realtime (a simulated device)".into()
        } else {
            "threads not pinned, not realtime: the device's engines are threads on these CPUs"
                .into()
        });
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

pub(crate) fn run(args: &RunArgs) -> Result<(), Failure> {
    if args.sim.as_deref() == Some(crate::profiles::HELP) {
        return crate::profiles::print();
    }
    let plan = Plan::new(args)?;
    let (report, failures) = detect_and_run(args, &plan)?;
    if args.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        crate::output::emit(&format!("{text}\n"))?;
    } else {
        print_report(&report)?;
    }
    if failures.is_empty() { Ok(()) } else { Err(failures.join("\n").into()) }
}

/// What `hsakmt run --step` measures, for the benchmark table: the library's own time per
/// iteration, the whole iteration's, the steady state's heap allocations per iteration (the
/// library's and the simulated kernel's) and the preempted iterations left out of the first,
/// over `iterations` on the default profile.
///
/// # Errors
/// Whatever fails the run, as its message.
pub(crate) fn step_library_time(
    iterations: u64,
) -> Result<(LatencyNs, LatencyNs, f64, u64), Failure> {
    let args = RunArgs {
        sim: None,
        iterations,
        gpus: "1".into(),
        block: 4096,
        json: true,
        inject: Vec::new(),
        as_kfd: false,
        step: true,
    };
    let plan = Plan::new(&args)?;
    let (report, failures) = detect_and_run(&args, &plan)?;
    if !failures.is_empty() {
        return Err(failures.join("; ").into());
    }
    let library = report.library_time_ns.ok_or("the run measured no library time")?;
    let heap = report.heap_allocations_per_iteration;
    let allocations = heap.library_steady_state + heap.simulated_kernel_steady_state;
    Ok((library, report.latency_ns, allocations, report.preempted_iterations.unwrap_or(0)))
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

/// Runs the loop as `args` and `plan` ask: the report and what failed (wrong results,
/// teardown, faults that never fired).
fn detect_and_run(args: &RunArgs, plan: &Plan) -> Result<(Report, Vec<String>), Failure> {
    let profile_name = args.sim.clone().unwrap_or_else(|| hsakmt_sim::DEFAULT_PROFILE.to_string());
    let profile = Profile::embedded(&profile_name)
        .map_err(|e| crate::text::escape(&e.to_string()).into_owned())?;
    // The host driver runs registered kernels; GPUs and the simulator run code objects.
    let registry_of_kernels = KernelRegistry::new();
    let registered = Registered {
        step: registry_of_kernels.register("control_step", control_kernel),
        copy: registry_of_kernels.register("blit_copy", copy_kernel),
    };
    let mut builder = SimPlatform::builder().profile(profile).inherit_env(true);
    if !plan.faults.is_empty() || args.step {
        // Deterministic ioctl sequences (see `crate::inject`); with --step, the engines run on
        // the thread that waits.
        builder = builder.cp_mode(CpMode::OnWait);
    }
    let sim = builder.build();
    let armed = inject::Armed::arm(&sim, &plan.faults);
    let probe = sim.clone();
    let linux = AnyPlatform::from(LinuxPlatform::new());
    let kfd = boxed_driver(DriverKind::Kfd, DriverId(0), linux, DEFAULT_MEMORY_OBJECTS);
    let simulated = AnyPlatform::Sim(sim);
    let mut simulated =
        boxed_driver(args.sim_kind(), DriverId(1), simulated, DEFAULT_MEMORY_OBJECTS);
    if args.step {
        // Only the waiting thread runs the engines: a spin would only wait for itself.
        simulated.set_wait_spin_ns(0);
    }
    let host = Box::new(HostDriver::with_kernels(DriverId(2), registry_of_kernels));

    let mut registry: Registry<'_> = Registry::new();
    if !args.simulated() {
        let _ = registry.detect(&*kfd);
    }
    let _ = registry.detect(&*simulated);
    if !args.simulated() {
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
        if args.simulated() { Policy::Explicit(args.sim_kind()) } else { Policy::GpuFirst };
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
    if !armed.is_empty() && choice.kind != args.sim_kind() {
        let fired = armed.fired(&probe);
        let why = registry
            .report()
            .iter()
            .find(|d| d.kind == args.sim_kind())
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
        DriverKind::Kfd if args.as_kfd => {
            format!("simulator profile {profile_name} as a plain KFD device")
        }
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
    let compute = Compute::of(driver, registered);
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
    let tune = choice.kind == DriverKind::Kfd && !args.simulated();
    let mut controls = latency_controls(used.len(), tune, args.step);
    let device_calls = probe.device_calls();
    let (result, mut problems) =
        run_loop(driver, used.iter().map(|a| a.id).collect(), args, compute, tune, &|| {
            (choice.kind == DriverKind::Sim)
                .then(|| crate::platform::queue_fault_text(&probe))
                .flatten()
        });
    let device_calls = probe.device_calls().wrapping_sub(device_calls);
    if let Err(e) = driver.shutdown() {
        problems.push(format!("shutting the `{}` driver down: {e}", choice.kind));
    }
    problems.extend(shutdown_all(&registry));
    let never = armed.never_fired(&probe);
    let (latencies, library, verified, elapsed, rt, allocations, computed_by) = match result {
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
        compute: computed_by,
        latency_ns: LatencyNs::of(&latencies),
        library_time_ns: args.step.then(|| LatencyNs::of(&library.0)),
        preempted_iterations: args.step.then_some(library.1),
        throughput_per_s: args.iterations as f64 / elapsed.as_secs_f64(),
        heap_allocations_per_iteration: allocations,
        device_calls_per_iteration: (choice.kind == args.sim_kind() && args.simulated())
            .then(|| device_calls as f64 / args.iterations.max(1) as f64),
        latency_controls: controls,
        injected_faults: armed.fired(&probe).into_iter().map(str::to_string).collect(),
        teardown_failures: problems.clone(),
    };
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
    Ok((report, failures))
}

/// Latencies, the library's own times and the iterations left out of them (preempted),
/// whether every result checked out, the elapsed time, latency-control notes, the steady
/// state's allocations, and what computed (each agent's, distinct ones joined).
type LoopResult = (Histogram, (Histogram, u64), bool, Duration, Vec<String>, Allocations, String);
/// One agent's latencies, the library's own times (each less the simulated engines' work on
/// the thread) and the iterations left out of them (preempted), whether its results checked
/// out, a latency-control note, and its steady state's allocations (the thread's, those
/// inside ioctls, the simulated engines' on the thread) and iterations.
type AgentOutcome = (Histogram, Histogram, u64, bool, Option<String>, (u64, u64, u64, u64));

/// The calling thread's heap allocations less the simulated engines' work run on it (with
/// `--step` or `--inject` they run inside the loop thread's waits).
fn own_allocations() -> u64 {
    hsakmt_hostmem::thread_allocations().wrapping_sub(hsakmt_sim::thread_engine_allocations())
}

/// Runs the loop on `agents`; returns its outcome and, apart, what failed while the pipelines
/// were released (reported whether the loop succeeded or not). `fault` says why a queue
/// stopped, when the platform knows (asked before the queues are destroyed).
fn run_loop(
    driver: &dyn Driver,
    agents: Vec<AgentId>,
    args: &RunArgs,
    compute: Compute,
    tune: bool,
    fault: &dyn Fn() -> Option<String>,
) -> (Result<LoopResult, String>, Vec<String>) {
    let mut pipelines = Vec::with_capacity(agents.len());
    for a in &agents {
        match Pipeline::new(driver, *a, args.block, compute) {
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
    let process_allocations = crate::allocations();
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
                    let mut own = Histogram::new();
                    let mut ok = true;
                    let mut input = vec![0u8; args.block as usize];
                    let mut output = vec![0u8; args.block as usize];
                    let warm = (count / 10).min(WARM_ITERATIONS);
                    let mut steady = (0, 0, 0, 0);
                    let delay = if args.step { preemption::RunQueueDelay::open() } else { None };
                    let mut preempted = 0u64;
                    for k in 0..count {
                        if failed.load(Ordering::Relaxed) {
                            break;
                        }
                        if k == warm {
                            steady.0 = own_allocations();
                            steady.1 = hsakmt_sim::thread_ioctl_allocations();
                            steady.3 = hsakmt_sim::thread_engine_allocations();
                        }
                        let n = k * threads + i as u64;
                        let waited = delay.as_ref().and_then(preemption::RunQueueDelay::ns);
                        let engines = hsakmt_sim::thread_engine_ns();
                        let t = Instant::now();
                        match p.iterate(n, &mut input, &mut output) {
                            Ok(good) => ok &= good,
                            Err(e) => {
                                failed.store(true, Ordering::Relaxed);
                                return Err(format!("agent node {}: {e}", p.agent.node));
                            }
                        }
                        let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
                        lat.record(ns);
                        let engines = hsakmt_sim::thread_engine_ns().wrapping_sub(engines);
                        if waited.is_some()
                            && delay.as_ref().and_then(preemption::RunQueueDelay::ns) != waited
                        {
                            preempted += 1;
                        } else {
                            own.record(ns.saturating_sub(engines));
                        }
                        done.fetch_add(1, Ordering::Relaxed);
                        if k >= warm {
                            steady.2 += 1;
                        }
                    }
                    steady.0 = own_allocations().wrapping_sub(steady.0);
                    steady.1 = hsakmt_sim::thread_ioctl_allocations().wrapping_sub(steady.1);
                    steady.3 = hsakmt_sim::thread_engine_allocations().wrapping_sub(steady.3);
                    Ok((lat, own, preempted, ok, rt, steady))
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
    let why = outcomes.iter().any(Result::is_err).then(fault).flatten();
    let mut computed_by: Vec<&str> = pipelines.iter().map(Pipeline::compute).collect();
    computed_by.dedup();
    let computed_by = computed_by.join("; ");
    let process_allocations = crate::allocations().wrapping_sub(process_allocations);
    let released: Vec<String> = pipelines.into_iter().flat_map(Pipeline::release).collect();
    let mut all = Histogram::new();
    let mut library_time = Histogram::new();
    let mut verified = true;
    let mut rt = Vec::new();
    let (mut library, mut kernel, mut engines, mut steady_iterations) = (0u64, 0u64, 0u64, 0u64);
    let mut preempted = 0u64;
    for o in outcomes {
        let (lat, own, left_out, ok, note, (thread, in_ioctls, iterations, in_engines)) = match o {
            Ok(o) => o,
            Err(mut e) => {
                if let Some(why) = &why {
                    e.push_str(&format!(" (the simulator: {why})"));
                }
                return (Err(e), released);
            }
        };
        all.merge(&lat);
        library_time.merge(&own);
        preempted = preempted.saturating_add(left_out);
        verified &= ok;
        rt.extend(note);
        library = library.saturating_add(thread.saturating_sub(in_ioctls));
        kernel = kernel.saturating_add(in_ioctls);
        steady_iterations = steady_iterations.saturating_add(iterations);
        engines = engines.saturating_add(in_engines);
    }
    rt.dedup();
    let allocations = Allocations {
        library_steady_state: library as f64 / steady_iterations.max(1) as f64,
        simulated_kernel_steady_state: kernel as f64 / steady_iterations.max(1) as f64,
        simulated_engines_steady_state: args
            .step
            .then(|| engines as f64 / steady_iterations.max(1) as f64),
        process: process_allocations as f64 / args.iterations.max(1) as f64,
    };
    let library_time = (library_time, preempted);
    (Ok((all, library_time, verified, elapsed, rt, allocations, computed_by)), released)
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
    if let Some(l) = &r.library_time_ns {
        let _ = writeln!(
            s,
            "  library     p50 {}  p99 {}  p99.9 {}  max {}  (each iteration less the \
             simulated engines' work; {} preempted iterations left out)",
            us(l.p50),
            us(l.p99),
            us(l.p99_9),
            us(l.max),
            r.preempted_iterations.unwrap_or(0)
        );
    }
    let _ = writeln!(s, "  throughput  {:.0} iterations/s", r.throughput_per_s);
    let h = &r.heap_allocations_per_iteration;
    let _ = writeln!(
        s,
        "  heap        {:.2} allocations/iteration by the library, {:.2} by the simulated \
         kernel in its ioctls (steady state); {:.2} in the whole process",
        h.library_steady_state, h.simulated_kernel_steady_state, h.process
    );
    if let Some(e) = h.simulated_engines_steady_state {
        let _ = writeln!(
            s,
            "  heap        {e:.2} allocations/iteration by the simulated engines on the loop \
             thread (steady state)"
        );
    }
    if let Some(c) = r.device_calls_per_iteration {
        let _ = writeln!(s, "  device      {c:.2} calls/iteration to the simulated device");
    }
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
