//! What runs `hsakmt run`'s compute step — and, on agents without DMA engines, its copies:
//! the code objects `hsakmt` carries (`control_step`, `copy_bytes`), loaded for each agent's
//! processor on drivers that run code objects (a GPU through `/dev/kfd`, the simulator through
//! its ISA interpreter); kernels registered with the driver (the host-CPU driver); or nothing,
//! when the agent's processor has no code object here (the step is then a barrier).

use hsakmt_core::code_object::Processor;
use hsakmt_core::code_object::kernarg::{ArgValue, Dispatch};
use hsakmt_core::device::code_object_manager::LoadedKernel;
use hsakmt_core::driver::{AgentId, Capabilities, Driver, Executable};
use hsakmt_core::queue::aql::KernelDispatch;
use hsakmt_kernels::{KernelSet, blit, control};

use crate::embedded_kernels;

/// Work-items per work-group of every dispatch of the loop.
pub(super) const WORKGROUP: u16 = 64;
/// Bytes one work-item of the blit copy moves (`blit.cl`: 16-byte chunks).
const BLIT_CHUNK: u32 = 16;
/// The explicit argument of `control_step` that holds the seed (`in, out, words, seed`).
const SEED_ARG: usize = 3;
/// Kernel-argument bytes of a registered kernel (`[src, dst, words, seed]`, 8 bytes each).
const REGISTERED_KERNARG: u32 = 32;

/// Kernel objects registered with the chosen driver.
#[derive(Debug, Clone, Copy)]
pub(super) struct Registered {
    /// The compute step.
    pub(super) step: u64,
    /// The blit copy (kernel arguments `[src, dst, words]`).
    pub(super) copy: u64,
}

/// How the driver runs kernels.
#[derive(Debug, Clone, Copy)]
pub(super) enum Compute {
    /// It loads code objects: each agent gets `hsakmt`'s objects for its processor.
    CodeObjects,
    /// It runs kernels registered by name.
    Registered(Registered),
    /// Neither: the step is a barrier and blocks come back unchanged.
    Barrier,
}

impl Compute {
    /// What `driver` can run, code objects first.
    pub(super) fn of(driver: &dyn Driver, registered: Registered) -> Self {
        let caps = driver.capabilities();
        if caps.contains(Capabilities::CODE_OBJECTS) {
            Self::CodeObjects
        } else if caps.contains(Capabilities::HOST_KERNELS) {
            Self::Registered(registered)
        } else {
            Self::Barrier
        }
    }
}

/// A kernel of the loop.
pub(super) enum Launch {
    /// Registered with the driver, at this kernel object.
    Registered(u64),
    /// Loaded from a code object.
    Loaded(Box<LoadedKernel<'static>>),
}

impl Launch {
    /// Kernel-argument bytes it needs.
    pub(super) fn kernarg_size(&self) -> u32 {
        match self {
            Self::Registered(_) => REGISTERED_KERNARG,
            Self::Loaded(k) => k.kernarg_size(),
        }
    }

    /// Writes the arguments of a copy of `bytes` from `src` to `dst` (or of the compute step
    /// over `bytes` with `seed`) into `buf`, and gives the dispatch packet reading them at
    /// `kernarg`; the packet's completion signal is `signal`.
    pub(super) fn prepare(
        &self,
        buf: &mut [u8],
        (src, dst, bytes): (u64, u64, u32),
        seed: Option<u64>,
        kernarg: u64,
        signal: u64,
    ) -> Result<KernelDispatch, String> {
        let words = bytes / 4;
        match self {
            Self::Registered(object) => {
                let mut args = [0u8; REGISTERED_KERNARG as usize];
                for (at, v) in [src, dst, u64::from(words), seed.unwrap_or(0)].iter().enumerate() {
                    args[at * 8..at * 8 + 8].copy_from_slice(&v.to_le_bytes());
                }
                let into = buf.get_mut(..args.len()).ok_or("kernel arguments: no room")?;
                into.copy_from_slice(&args);
                let mut k = KernelDispatch::linear(*object, words, WORKGROUP);
                k.kernarg_address = kernarg;
                k.completion_signal = signal;
                Ok(k)
            }
            Self::Loaded(k) => {
                let name = k.kernel.metadata.name;
                // The step: one work-item per word; the blit copy: one per 16-byte chunk.
                let (items, last) = match seed {
                    Some(seed) => (words, ArgValue::U64(seed)),
                    None => (bytes.div_ceil(BLIT_CHUNK), ArgValue::U64(0)),
                };
                let dispatch = Dispatch::new(1, [WORKGROUP, 1, 1], [items, 1, 1]);
                let count = if seed.is_some() { u64::from(words) } else { u64::from(bytes) };
                let values =
                    [ArgValue::Pointer(src), ArgValue::Pointer(dst), ArgValue::U64(count), last];
                let values = if seed.is_some() { &values[..] } else { &values[..3] };
                k.write_kernargs(buf, values, &dispatch).map_err(|e| format!("{name}: {e}"))?;
                k.packet(&dispatch, kernarg, signal).map_err(|e| format!("{name}: {e}"))
            }
        }
    }

    /// Where the seed sits in the step's kernel arguments.
    pub(super) fn seed_offset(&self) -> Result<u64, String> {
        match self {
            Self::Registered(_) => Ok(24),
            Self::Loaded(k) => k
                .kernel
                .metadata
                .args
                .explicit()
                .nth(SEED_ARG)
                .filter(|a| a.size == 8)
                .map(|a| u64::from(a.offset))
                .ok_or_else(|| format!("{}: no 8-byte seed argument", control::STEP)),
        }
    }

    /// The private bytes per work-item it needs.
    pub(super) fn private_segment_size(&self) -> u32 {
        match self {
            Self::Registered(_) => 0,
            Self::Loaded(k) => k.private_segment_size(),
        }
    }
}

/// The kernels one agent runs, and the code objects loaded for it.
pub(super) struct AgentKernels {
    /// The compute step (`None`: a barrier).
    pub(super) step: Option<Launch>,
    /// The blit copy, for an agent without DMA engines.
    pub(super) copy: Option<Launch>,
    /// Loaded code objects, freed with [`AgentKernels::unload`].
    images: Vec<Executable<'static>>,
    /// What runs the step, for the report: `code object gfx942`, `registered kernel`, or the
    /// barrier and why.
    pub(super) describe: String,
}

impl AgentKernels {
    /// The kernels of `agent` (`dma`: whether it has DMA engines, so needs no blit copy).
    ///
    /// # Errors
    /// A code object that does not load, or lacks its kernel.
    pub(super) fn new(
        d: &dyn Driver,
        agent: AgentId,
        compute: Compute,
        dma: bool,
    ) -> Result<Self, String> {
        let mut k = Self { step: None, copy: None, images: Vec::new(), describe: String::new() };
        match compute {
            Compute::Barrier => k.describe = "barrier (the driver runs no kernels)".to_string(),
            Compute::Registered(r) => {
                k.step = Some(Launch::Registered(r.step));
                k.copy = (!dma).then_some(Launch::Registered(r.copy));
                k.describe = "registered kernel".to_string();
            }
            Compute::CodeObjects => {
                let target = d.agent_target(agent).map_err(|e| format!("agent target: {e}"))?;
                let processor = Processor::from_gfx(target.gfx).and_then(Processor::name);
                let object = |set| processor.and_then(|p| embedded_kernels::find(set, p));
                let Some(step) = object(KernelSet::Control) else {
                    k.describe = format!("barrier (no code object for {})", target.gfx);
                    return Ok(k);
                };
                k.step = Some(Launch::Loaded(Box::new(k.load(d, agent, step, control::STEP)?)));
                if !dma {
                    let blit_object = object(KernelSet::Blit).ok_or("no blit code object")?;
                    k.copy = Some(Launch::Loaded(Box::new(k.load(
                        d,
                        agent,
                        blit_object,
                        blit::COPY_BYTES,
                    )?)));
                }
                k.describe = format!("code object {}", processor.unwrap_or("?"));
            }
        }
        Ok(k)
    }

    /// Loads `bytes` for `agent`, keeps the image, and resolves `kernel`.
    fn load(
        &mut self,
        d: &dyn Driver,
        agent: AgentId,
        bytes: &'static [u8],
        kernel: &str,
    ) -> Result<LoadedKernel<'static>, String> {
        let exe = Executable::load(d, bytes, &[agent])
            .map_err(|e| format!("loading the {kernel} code object: {e}"))?;
        let k = exe.kernel(kernel).map_err(|e| format!("{kernel}: {e}"));
        self.images.push(exe);
        k
    }

    /// Frees the loaded code objects; what failed.
    pub(super) fn unload(self, d: &dyn Driver) -> Vec<String> {
        self.images
            .into_iter()
            .filter_map(|exe| exe.unload(d).err().map(|e| format!("unloading a code object: {e}")))
            .collect()
    }
}
