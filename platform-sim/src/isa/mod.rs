//! A gfx9 ISA interpreter: the simulated GPU runs kernels by executing their machine code.
//!
//! It covers the compute subset of the Vega (gfx900), CDNA2 (gfx90a) and CDNA3 (gfx942)
//! instruction sets, from AMD's ISA manuals and LLVM's AMDGPU target description (opcode
//! numbers in [`opcodes`], taken from LLVM's assembler):
//! - [`mod@decode`]: machine code to [`Inst`], once per code page ([`icache`]);
//! - [`wave`]: a wave's registers — SGPRs with VCC, EXEC, M0, FLAT_SCRATCH and TTMP0-15 at
//!   their operand codes, 64-lane VGPRs and (gfx90a, gfx942) AGPRs, SCC, the hardware registers;
//! - [`exec`]: scalar and vector ALU (with the SDWA sub-dword form of VOP1/VOP2/VOPC), scalar
//!   and vector memory, LDS and GWS, program control, traps; each vector operation runs over
//!   the 64 lanes in a tight loop under EXEC;
//! - [`dispatch`]: work-groups of waves, `s_barrier`, the initial wave state, resumable
//!   scheduling under an instruction budget;
//! - [`memory`]: the memory interface ([`WaveMemory`]: reads, writes, atomics and
//!   instruction fetches, each failing with a [`MemFault`] naming its [`FaultCause`]) with a
//!   plain [`TestMemory`]; [`vm_memory`] puts it over the simulator's GPU page tables and the
//!   permissions of their mappings (read-only, no-execute);
//! - [`descriptor`]: kernel descriptors (64-byte v3+ and 256-byte `amd_kernel_code_t`);
//! - [`launch`]: the command processor's side — launches from AQL packets and PM4 shader
//!   registers, per-queue state.
//!
//! What it does not know it refuses by name: an undecodable word, an operation of another
//! target, the DPP form (and SDWA forms LLVM does not define), MTBUF/MIMG/EXP/VINTRP
//! encodings, or an operation the executors do not implement all end the dispatch with an
//! illegal-instruction [`WaveFault`] naming the encoding, opcode and mnemonic. Nothing an
//! instruction stream does panics the simulator.

pub mod decode;
pub mod descriptor;
pub mod dispatch;
pub mod exec;
pub mod fault;
pub mod icache;
pub mod inst;
pub mod launch;
pub mod limits;
pub mod memory;
pub mod opcodes;
mod ops;
pub mod vm_memory;
pub mod wave;

pub use decode::{Undecodable, decode};
pub use dispatch::{Dispatch, Launch, RunState, ScratchBacking, Stats};
pub use exec::Device;
pub use fault::{FaultKind, WaveFault};
pub use icache::CodeCache;
pub use inst::{Enc, Inst};
pub use memory::{AtomicOp, FaultCause, MemFault, TestMemory, WaveMemory};
pub use ops::Op;
pub use wave::{Apertures, Wave, WaveState};

/// The gfx9 targets the interpreter runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// Vega (gfx900, and its gfx902/904/906/909 relatives).
    Gfx900,
    /// CDNA2 (MI200: gfx90a).
    Gfx90a,
    /// CDNA3 (MI300: gfx940/941/942).
    Gfx942,
}

impl Target {
    /// The target of a `gfx_target_version` (`MMmmss` decimal, as KFD's topology reports it).
    #[must_use]
    pub fn from_gfx_target_version(v: u32) -> Option<Self> {
        match v {
            90000..=90006 | 90009 => Some(Self::Gfx900),
            90010 => Some(Self::Gfx90a),
            90400..=90402 => Some(Self::Gfx942),
            _ => None,
        }
    }

    /// The target's name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Gfx900 => "gfx900",
            Self::Gfx90a => "gfx90a",
            Self::Gfx942 => "gfx942",
        }
    }

    /// Whether the target is in the bit set `m` (1 gfx900, 2 gfx90a, 4 gfx942) of
    /// [`opcodes`].
    #[must_use]
    pub fn in_set(self, m: u8) -> bool {
        let bit = match self {
            Self::Gfx900 => 1,
            Self::Gfx90a => 2,
            Self::Gfx942 => 4,
        };
        m & bit != 0
    }
}

#[cfg(test)]
mod tests;
