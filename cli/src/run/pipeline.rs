//! One agent's pipeline of `hsakmt run`: the registered kernels (the compute step and the blit
//! copy), the buffers, queue and signals an agent needs, and one iteration — input written,
//! copied to the device, computed, copied back, waited for and checked — without allocating.

use std::sync::atomic::Ordering;
use std::time::Duration;

use hsakmt_core::device::SignalCondition;
use hsakmt_core::driver::{
    AgentFeatures, AgentId, Buffer, Driver, DriverError, QueueId, QueueParams, RegionId,
    RegionKind, SignalId, Waited,
};
use hsakmt_core::platform::SharedMemory as _;
use hsakmt_core::queue::aql::{AqlPacket, Barrier, KernelDispatch, PacketWords};
use hsakmt_sim::{KernelCtx, KernelFault};

/// How long one iteration may take before the run fails.
const ITERATION_TIMEOUT: Duration = Duration::from_secs(10);

/// The step the compute kernel performs on every word.
pub(super) fn step(input: u32, seed: u32) -> u32 {
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

/// Kernel objects registered with the chosen driver.
#[derive(Debug, Clone, Copy)]
pub(super) struct Kernels {
    /// The compute step.
    pub(super) step: u64,
    /// The blit copy.
    pub(super) copy: u64,
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
    pub(super) fn new(
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
