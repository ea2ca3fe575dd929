//! One agent's pipeline of `hsakmt run`: the registered kernels (the compute step and the blit
//! copy, for the host-CPU driver), the buffers, kernels ([`super::kernels`]), queue and
//! signals an agent needs, and one iteration — input written, copied to the device, computed,
//! copied back, waited for and checked — without allocating.

use std::sync::atomic::Ordering;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use hsakmt_core::device::SignalCondition;
use hsakmt_core::driver::{
    AgentFeatures, AgentId, Buffer, Driver, DriverError, QueueId, QueueParams, RegionId,
    RegionKind, SignalId, Waited,
};
use hsakmt_core::error::ErrorKind;
use hsakmt_core::platform::SharedMemory as _;
use hsakmt_core::queue::aql::{AqlPacket, Barrier, KernelDispatch, PacketWords};
use hsakmt_sim::{KernelCtx, KernelFault};

use super::kernels::{AgentKernels, Compute};

/// How long one iteration may take before the run fails.
const ITERATION_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one wait for an iteration sleeps before the queues are checked for an error.
const WAIT_SLICE: Duration = Duration::from_millis(50);

/// The first queue error the driver reported (a faulting kernel, a bad packet).
static QUEUE_ERROR: Mutex<Option<(QueueId, ErrorKind)>> = Mutex::new(None);

/// The queues' error callback: keeps the first error for the waiting loop.
fn on_queue_error(queue: QueueId, kind: ErrorKind) {
    let mut first = QUEUE_ERROR.lock().unwrap_or_else(PoisonError::into_inner);
    first.get_or_insert((queue, kind));
}

/// The first queue error of the run, if there was one.
fn queue_error() -> Option<(QueueId, ErrorKind)> {
    *QUEUE_ERROR.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The step the compute kernel performs on every word.
pub(super) fn step(input: u32, seed: u32) -> u32 {
    input.wrapping_mul(3).wrapping_add(seed)
}

/// Mixes the iteration number into every input word.
const ITERATION_MIX: u64 = 0x9E37_79B9_7F4A_7C15;
/// Mixes the word's index into it (odd: distinct indices give distinct words).
const INDEX_MIX: u32 = 0x85EB_CA6B;

/// Fills `block` with iteration `n`'s input: word `i` is `(n·M >> 32) ^ i·K` (little-endian,
/// 32-bit), so every word of a block differs and every iteration's block is new. `i·K` is kept
/// as a running sum: the loop has no multiply and vectorizes.
fn fill_input(n: u64, block: &mut [u8]) {
    let iteration = (n.wrapping_mul(ITERATION_MIX) >> 32) as u32;
    let mut index = 0u32;
    for w in block.chunks_exact_mut(4) {
        w.copy_from_slice(&(iteration ^ index).to_le_bytes());
        index = index.wrapping_add(INDEX_MIX);
    }
}

/// Whether every word of `output` is `expect` of the same word of `input`. Reads every word
/// (no early exit), so the check vectorizes and costs the same on every iteration.
fn all_words_match(input: &[u8], output: &[u8], expect: impl Fn(u32) -> u32) -> bool {
    let word = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let differ = input
        .chunks_exact(4)
        .zip(output.chunks_exact(4))
        .fold(0u32, |acc, (i, o)| acc | (word(o) ^ expect(word(i))));
    differ == 0 && input.len() == output.len()
}

/// The registered blit kernel agents without DMA engines copy with (ROCr's blit-kernel
/// path): kernargs `[src, dst, words]`.
pub(super) fn copy_kernel(ctx: &KernelCtx<'_>) -> Result<(), KernelFault> {
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

/// The registered control-step kernel: kernargs `[in, out, words, seed]`. Each work-group
/// resolves its slice of both blocks once, as a GPU's TLB would.
pub(super) fn control_kernel(ctx: &KernelCtx<'_>) -> Result<(), KernelFault> {
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

/// One agent's pipeline: buffers, queue, signals.
pub(super) struct Pipeline<'d> {
    driver: &'d dyn Driver,
    /// The agent it runs on.
    pub(super) agent: AgentId,
    host_in: Buffer,
    host_out: Buffer,
    dev_in: Buffer,
    dev_out: Buffer,
    kernarg: Buffer,
    queue: QueueId,
    copied_in: SignalId,
    computed: SignalId,
    copied_out: SignalId,
    kernels: AgentKernels,
    /// The compute step's packet, when a kernel computes.
    step: Option<KernelDispatch>,
    /// The blit copies' packets (in, out), on an agent without DMA engines.
    blits: Option<(KernelDispatch, KernelDispatch)>,
    /// Where the step's seed argument lives.
    seed_at: u64,
    words: u32,
}

/// Kernel-argument blocks of a pipeline: compute step, copy in, copy out.
const ARG_BLOCKS: u64 = 3;
/// Each block's alignment (beyond what any kernel asks for).
const ARG_BLOCK_ALIGN: u64 = 64;

fn region_of(d: &dyn Driver, agent: AgentId, kinds: &[RegionKind]) -> Result<RegionId, String> {
    let regions = d.regions(agent).map_err(|e| e.to_string())?;
    kinds
        .iter()
        .find_map(|k| regions.iter().find(|r| r.kind == *k && r.allocatable).map(|r| r.id))
        .ok_or_else(|| format!("agent node {} has no {kinds:?} region", agent.node))
}

impl<'d> Pipeline<'d> {
    /// Sets up `agent`'s pipeline for blocks of `block` bytes; a failed step releases what
    /// the earlier ones made.
    pub(super) fn new(
        d: &'d dyn Driver,
        agent: AgentId,
        block: u32,
        compute: Compute,
    ) -> Result<Self, String> {
        let dma = (0..d.agent_count())
            .filter_map(|i| d.agent(i))
            .find(|a| a.id == agent)
            .is_some_and(|a| a.features.contains(AgentFeatures::DMA_COPY));
        let kernels = AgentKernels::new(d, agent, compute, dma)?;
        if !dma && kernels.copy.is_none() {
            let failed = kernels.unload(d);
            return Err(format!(
                "agent node {} has no DMA engine and no kernel to copy with, so blocks cannot \
                 be moved to the device{}",
                agent.node,
                failed.iter().map(|f| format!("; {f}")).collect::<String>()
            ));
        }
        let mut held = Held::new(d);
        match Self::build(d, agent, block, kernels, &mut held) {
            Ok(p) => Ok(p),
            Err(failed) => {
                let (e, kernels) = *failed;
                held.release();
                let _ = kernels.unload(d);
                Err(e)
            }
        }
    }

    fn build(
        d: &'d dyn Driver,
        agent: AgentId,
        block: u32,
        kernels: AgentKernels,
        held: &mut Held<'d>,
    ) -> Result<Self, Box<(String, AgentKernels)>> {
        macro_rules! attempt {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(e) => return Err(Box::new((e, kernels))),
                }
            };
        }
        let e = |what: &'static str| move |err: DriverError| format!("{what}: {err}");
        let cpu = attempt!(d.nearest_cpu(agent).ok_or("no CPU agent near the device".to_string()));
        let host = attempt!(region_of(d, cpu, &[RegionKind::GlobalFineGrained]));
        let args =
            attempt!(region_of(d, cpu, &[RegionKind::Kernarg, RegionKind::GlobalFineGrained]));
        let dev = attempt!(region_of(
            d,
            agent,
            &[RegionKind::GlobalCoarseGrained, RegionKind::GlobalFineGrained]
        ));
        let bytes = u64::from(block);
        let launches = [kernels.step.as_ref(), kernels.copy.as_ref()];
        let slot = launches
            .iter()
            .flatten()
            .map(|k| u64::from(k.kernarg_size()))
            .max()
            .unwrap_or(0)
            .next_multiple_of(ARG_BLOCK_ALIGN)
            .max(ARG_BLOCK_ALIGN);
        let private = launches.iter().flatten().map(|k| k.private_segment_size()).max();
        let host_in = attempt!(held.allocate(host, bytes, "host input block"));
        let host_out = attempt!(held.allocate(host, bytes, "host output block"));
        let dev_in = attempt!(held.allocate(dev, bytes, "device input block"));
        let dev_out = attempt!(held.allocate(dev, bytes, "device output block"));
        let kernarg = attempt!(held.allocate(args, slot * ARG_BLOCKS, "kernel arguments"));
        let params = QueueParams {
            packets: 256,
            private_segment_size: private.unwrap_or(0),
            error_callback: Some(on_queue_error),
            ..QueueParams::default()
        };
        let queue = attempt!(d.create_queue(agent, &params).map_err(e("queue")));
        held.queue = Some(queue);
        let copied_in = attempt!(held.signal());
        let computed = attempt!(held.signal());
        let copied_out = attempt!(held.signal());
        let mut buf = vec![0u8; usize::try_from(slot).unwrap_or(usize::MAX)];
        let write =
            |at: u64, buf: &[u8]| d.write(kernarg.addr + at, buf).map_err(e("kernel arguments"));
        let mut step = None;
        let mut seed_at = 0;
        if let Some(k) = &kernels.step {
            buf.fill(0);
            let where_ = (dev_in.addr, dev_out.addr, block);
            step = Some(attempt!(k.prepare(&mut buf, where_, Some(0), kernarg.addr, computed.0)));
            attempt!(write(0, &buf));
            seed_at = kernarg.addr + attempt!(k.seed_offset());
        }
        let mut blits = None;
        if let Some(k) = &kernels.copy {
            let mut packet = |n: u64, from: u64, to: u64, signal: SignalId| {
                buf.fill(0);
                let p = k.prepare(
                    &mut buf,
                    (from, to, block),
                    None,
                    kernarg.addr + n * slot,
                    signal.0,
                )?;
                write(n * slot, &buf)?;
                Ok::<_, String>(p)
            };
            let copy_in = attempt!(packet(1, host_in.addr, dev_in.addr, copied_in));
            let out_from = if kernels.step.is_some() { dev_out.addr } else { dev_in.addr };
            let copy_out = attempt!(packet(2, out_from, host_out.addr, copied_out));
            blits = Some((copy_in, copy_out));
        }
        // Prefault the host blocks before the loop.
        attempt!(d.write(host_in.addr, &vec![0; block as usize]).map_err(e("prefault")));
        attempt!(d.write(host_out.addr, &vec![0; block as usize]).map_err(e("prefault")));
        *held = Held::new(d);
        Ok(Self {
            driver: d,
            agent,
            host_in,
            host_out,
            dev_in,
            dev_out,
            kernarg,
            queue,
            copied_in,
            computed,
            copied_out,
            kernels,
            step,
            blits,
            seed_at,
            words: block / 4,
        })
    }

    /// What computes on this agent, for the report.
    pub(super) fn compute(&self) -> &str {
        &self.kernels.describe
    }

    /// One iteration; returns whether the result checked out.
    pub(super) fn iterate(
        &self,
        n: u64,
        input: &mut [u8],
        output: &mut [u8],
    ) -> Result<bool, String> {
        let d = self.driver;
        let e =
            |what: &'static str| move |err: DriverError| format!("iteration {n}: {what}: {err}");
        let words = |p: AqlPacket| p.to_words().map_err(|err| format!("iteration {n}: {err}"));
        let seed = (n as u32).wrapping_mul(7);
        fill_input(n, input);
        d.write(self.host_in.addr, input).map_err(e("input"))?;
        for s in [self.copied_in, self.computed, self.copied_out] {
            d.signal_store(s, 1).map_err(e("signal reset"))?;
        }
        let bytes = u64::from(self.words) * 4;
        let mut packets = Packets::default();
        match self.blits {
            Some((copy_in, _)) => packets.push(words(AqlPacket::KernelDispatch(copy_in))?),
            None => d
                .copy(self.agent, self.dev_in.addr, self.host_in.addr, bytes, &[], self.copied_in)
                .map_err(e("copy to device"))?,
        }
        let mut wait = Barrier::NOP;
        wait.dep_signals[0] = self.copied_in.0;
        match self.step {
            Some(step) => {
                d.write(self.seed_at, &u64::from(seed).to_le_bytes()).map_err(e("seed"))?;
                packets.push(words(AqlPacket::BarrierAnd(wait))?);
                packets.push(words(AqlPacket::KernelDispatch(step))?);
            }
            None => {
                wait.completion_signal = self.computed.0;
                packets.push(words(AqlPacket::BarrierAnd(wait))?);
            }
        }
        match self.blits {
            Some((_, copy_out)) => {
                let mut after = Barrier::NOP;
                after.dep_signals[0] = self.computed.0;
                packets.push(words(AqlPacket::BarrierAnd(after))?);
                packets.push(words(AqlPacket::KernelDispatch(copy_out))?);
                d.submit(self.queue, packets.as_slice()).map_err(e("submit"))?;
            }
            None => {
                d.submit(self.queue, packets.as_slice()).map_err(e("submit"))?;
                let src = if self.step.is_some() { self.dev_out.addr } else { self.dev_in.addr };
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
        let slice = u64::try_from(WAIT_SLICE.as_nanos()).unwrap_or(u64::MAX);
        let start = std::time::Instant::now();
        loop {
            let waited = d.signal_wait(self.copied_out, SignalCondition::Eq(0), slice);
            match waited.map_err(e("wait"))? {
                Waited::Done(_) => break,
                Waited::TimedOut => {}
            }
            if let Some((q, kind)) = queue_error() {
                return Err(format!(
                    "iteration {n}: queue {} went into error ({kind:?}): the kernel faulted or a \
                     packet was refused",
                    q.index
                ));
            }
            if start.elapsed() >= ITERATION_TIMEOUT {
                return Err(format!(
                    "iteration {n}: the result did not arrive within {ITERATION_TIMEOUT:?} \
                     (hung device)"
                ));
            }
        }
        d.read(self.host_out.addr, output).map_err(e("result"))?;
        Ok(match self.step {
            Some(_) => all_words_match(input, output, |i| step(i, seed)),
            None => all_words_match(input, output, |i| i),
        })
    }

    /// Destroys the queue and signals and frees the buffers, each even when an earlier step
    /// failed; returns what failed.
    pub(super) fn release(self) -> Vec<String> {
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
            .extend(self.kernels.unload(d).into_iter().map(|f| format!("agent node {node}: {f}")));
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

/// What a pipeline under construction holds, released when a later step fails.
struct Held<'d> {
    driver: &'d dyn Driver,
    memory: Vec<u64>,
    queue: Option<QueueId>,
    signals: Vec<SignalId>,
}

impl<'d> Held<'d> {
    fn new(driver: &'d dyn Driver) -> Self {
        Self { driver, memory: Vec::new(), queue: None, signals: Vec::new() }
    }

    fn allocate(&mut self, region: RegionId, bytes: u64, what: &str) -> Result<Buffer, String> {
        let b = self.driver.allocate(region, bytes).map_err(|e| format!("{what}: {e}"))?;
        self.memory.push(b.addr);
        Ok(b)
    }

    fn signal(&mut self) -> Result<SignalId, String> {
        let s = self.driver.create_signal(0).map_err(|e| format!("signal: {e}"))?;
        self.signals.push(s);
        Ok(s)
    }

    /// Releases everything, newest first (failures are moot: the setup already failed).
    fn release(&mut self) {
        let d = self.driver;
        if let Some(q) = self.queue.take() {
            let _ = d.destroy_queue(q);
        }
        for s in self.signals.drain(..) {
            let _ = d.destroy_signal(s);
        }
        for m in self.memory.drain(..).rev() {
            let _ = d.free(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsakmt_core::config::DEFAULT_MEMORY_OBJECTS;
    use hsakmt_core::driver::{AgentKind, DriverId, DriverKind};
    use hsakmt_linux::boxed_driver;
    use hsakmt_sim::{Profile, SimPlatform, parse_file_path};

    use crate::run::kernels::Registered;

    /// A driver over `profile`, with node `no_sdma`'s DMA engines removed.
    fn driver(profile: &str, no_sdma: Option<u32>) -> Box<dyn Driver> {
        let mut p = Profile::embedded(profile).unwrap();
        if let Some(node) = no_sdma {
            let file = parse_file_path(&format!("nodes/{node}/properties")).unwrap();
            let text = String::from_utf8(p.file(file).unwrap().to_vec()).unwrap();
            let text: String = text
                .lines()
                .filter(|l| !l.starts_with("num_sdma"))
                .map(|l| format!("{l}\n"))
                .collect();
            p.set_file(file, text.as_bytes());
        }
        let sim = SimPlatform::builder().profile(p).build();
        let sim = crate::platform::AnyPlatform::Sim(sim);
        let d = boxed_driver(DriverKind::Sim, DriverId(1), sim, DEFAULT_MEMORY_OBJECTS);
        d.init().unwrap();
        d
    }

    fn gpu(d: &dyn Driver) -> AgentId {
        let mut agents = (0..d.agent_count()).filter_map(|i| d.agent(i));
        agents.find(|a| a.kind == AgentKind::Gpu).unwrap().id
    }

    #[test]
    fn input_words_follow_their_formula_and_a_wrong_word_anywhere_is_seen() {
        let n = 12_345u64;
        let mut block = vec![0u8; 4 * 1000];
        fill_input(n, &mut block);
        for (i, w) in block.chunks_exact(4).enumerate() {
            let x =
                (n.wrapping_mul(ITERATION_MIX) >> 32) as u32 ^ (i as u32).wrapping_mul(INDEX_MIX);
            assert_eq!(u32::from_le_bytes(w.try_into().unwrap()), x, "word {i}");
        }
        let seed = 7;
        let out: Vec<u8> = block
            .chunks_exact(4)
            .flat_map(|w| step(u32::from_le_bytes(w.try_into().unwrap()), seed).to_le_bytes())
            .collect();
        assert!(all_words_match(&block, &out, |i| step(i, seed)));
        assert!(!all_words_match(&block, &out, |i| i));
        for at in [0, 1, 2001, out.len() - 1] {
            let mut bad = out.clone();
            bad[at] ^= 0x10;
            assert!(!all_words_match(&block, &bad, |i| step(i, seed)), "byte {at}");
        }
        assert!(!all_words_match(&block, &out[..8], |i| step(i, seed)), "short output");
    }

    #[test]
    fn the_code_objects_compute_and_copy_with_or_without_dma_engines() {
        // The Vega 10 capture predates num_sdma_engines: its GPU copies with the blit kernel.
        for (profile, no_sdma, gfx, blits) in [
            ("mi308x-8gpu-cpx", None, "gfx942", false),
            ("mi308x-8gpu-cpx", Some(2), "gfx942", true),
            ("mi25-vega10-rocm18", None, "gfx900", true),
        ] {
            let d = driver(profile, no_sdma);
            let agent = gpu(&*d);
            let unused = Registered { step: 0, copy: 0 };
            // A block that is not a multiple of 16 bytes: the blit kernel's byte tail.
            let block = 4096 + 12;
            let p = Pipeline::new(&*d, agent, block, Compute::of(&*d, unused)).unwrap();
            assert_eq!(p.compute(), format!("code object {gfx}"));
            assert_eq!(p.blits.is_some(), blits, "{profile}");
            let (mut input, mut output) = (vec![0u8; block as usize], vec![0u8; block as usize]);
            for n in 0..3 {
                assert_eq!(p.iterate(n, &mut input, &mut output), Ok(true), "{profile}");
            }
            assert!(p.release().is_empty());
            d.shutdown().unwrap();
        }
    }
}
