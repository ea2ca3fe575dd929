//! Performance counters as libhsakmt offers them (`hsaKmtPmc*`), and what is behind them on
//! today's kernels.
//!
//! What upstream has (rocm-systems `libhsakmt/src/perfctr.c`, `pmc_table.c`):
//! - a static table per GPU family of counter blocks — how many counters each block has and
//!   how many it can count at once (`hsaKmtPmcGetCounterProperties`). Tables exist for gfx7,
//!   gfx8, gfx9 (every 9.x, MI300 included) and gfx10; gfx11 and later have none (upstream
//!   answers `INVALID_PARAMETER`, this library [`Error::NoCounters`], `NOT_SUPPORTED`);
//! - trace objects (`RegisterTrace`, `Acquire/ReleaseTraceAccess`, `Start/Query/StopTrace`)
//!   meant to drive Linux `perf_event` descriptors. No code opens those descriptors any more
//!   (the IOMMUv2 perf path that gave them is gone from amdkfd, see
//!   `shared/KERNEL-CONTRACT.md` §1.1), so upstream's start fails on real machines.
//!
//! What the kernel offers instead is `AMDKFD_IOC_PROFILER` (1.23): a privileged process can
//! lock a GPU for profiling and force performance counting on for its queues
//! ([`crate::device::Kfd::profiler_lock`]); the counters themselves are then programmed and read
//! by the profiler through packets on its own queues (rocprofiler's business, not a thunk's).
//!
//! So this library keeps the tables ([`counter_blocks`]) and the trace bookkeeping upstream
//! does before it touches a descriptor ([`TraceRequest`]), and answers the start, query and
//! stop of a trace with [`Error::NoKernelInterface`] (`NOT_SUPPORTED`) instead of failing on a
//! descriptor that was never opened.

mod tables;

use core::fmt;

use crate::error::ErrorKind;
use crate::topology::GfxVersion;

pub use tables::{GFX9_BLOCKS, GFX10_BLOCKS};

/// A counter block of libhsakmt's `enum perf_block_id` (the `BlockIndex` of a counter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u32)]
pub enum PmcBlock {
    /// Color buffer.
    Cb = 0,
    /// Command processor compute.
    Cpc = 1,
    /// Command processor fetcher.
    Cpf = 2,
    /// Command processor graphics.
    Cpg = 3,
    /// Depth buffer.
    Db = 4,
    /// Global data share.
    Gds = 5,
    /// Graphics register bus manager.
    Grbm = 6,
    /// GRBM per shader engine.
    GrbmSe = 7,
    /// Input assembler.
    Ia = 8,
    /// Memory controller.
    Mc = 9,
    /// Primitive assembly, scan converter.
    PaSc = 10,
    /// Primitive assembly, setup unit.
    PaSu = 11,
    /// Shader processor input.
    Spi = 12,
    /// System register bus manager.
    Srbm = 13,
    /// Sequencer.
    Sq = 14,
    /// Shader export.
    Sx = 15,
    /// Texture addresser.
    Ta = 16,
    /// Texture cache arbiter.
    Tca = 17,
    /// Texture cache channel (L2).
    Tcc = 18,
    /// Texture cache per pipe (L1).
    Tcp = 19,
    /// Texture cache, shader.
    Tcs = 20,
    /// Texture data.
    Td = 21,
    /// Vertex grouper tessellator.
    Vgt = 22,
    /// Work distributor.
    Wd = 23,
}

/// Number of [`PmcBlock`]s (`PERFCOUNTER_BLOCKID__MAX`).
pub const PMC_BLOCKS: u32 = 24;

impl PmcBlock {
    /// The block of libhsakmt index `index`.
    #[must_use]
    pub fn from_index(index: u32) -> Option<Self> {
        const ALL: [PmcBlock; PMC_BLOCKS as usize] = [
            PmcBlock::Cb,
            PmcBlock::Cpc,
            PmcBlock::Cpf,
            PmcBlock::Cpg,
            PmcBlock::Db,
            PmcBlock::Gds,
            PmcBlock::Grbm,
            PmcBlock::GrbmSe,
            PmcBlock::Ia,
            PmcBlock::Mc,
            PmcBlock::PaSc,
            PmcBlock::PaSu,
            PmcBlock::Spi,
            PmcBlock::Srbm,
            PmcBlock::Sq,
            PmcBlock::Sx,
            PmcBlock::Ta,
            PmcBlock::Tca,
            PmcBlock::Tcc,
            PmcBlock::Tcp,
            PmcBlock::Tcs,
            PmcBlock::Td,
            PmcBlock::Vgt,
            PmcBlock::Wd,
        ];
        ALL.get(index as usize).copied()
    }

    /// libhsakmt's index.
    #[must_use]
    pub const fn index(self) -> u32 {
        self as u32
    }
}

/// One counter block of a GPU family: how many counters it can count at once and which
/// counter ids it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CounterBlock {
    /// The block.
    pub block: PmcBlock,
    /// Counters it counts at once (`NumConcurrent`).
    pub concurrent: u32,
    /// Its counter ids, as inclusive ranges.
    pub ids: &'static [(u32, u32)],
}

/// Width of every counter of the tables (`CounterSizeInBits`; the mask is all ones).
pub const COUNTER_BITS: u32 = 64;

impl CounterBlock {
    /// How many counters the block has.
    #[must_use]
    pub fn counter_count(&self) -> u32 {
        self.ids.iter().map(|(a, b)| b.saturating_sub(*a).saturating_add(1)).sum()
    }

    /// Its counter ids, in increasing order.
    pub fn counter_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.ids.iter().flat_map(|&(a, b)| a..=b)
    }

    /// Whether `id` is one of its counters.
    #[must_use]
    pub fn has(&self, id: u32) -> bool {
        self.ids.iter().any(|&(a, b)| (a..=b).contains(&id))
    }
}

/// The counter blocks of a GPU of version `gfx` (upstream `hsakmt_get_block_properties`):
/// gfx9 and gfx10 have tables; others do not ([`Error::NoCounters`]).
///
/// # Errors
/// [`Error::NoCounters`] for a family without a table.
pub fn counter_blocks(gfx: GfxVersion) -> Result<&'static [CounterBlock], Error> {
    match gfx.major {
        9 => Ok(GFX9_BLOCKS),
        10 => Ok(GFX10_BLOCKS),
        _ => Err(Error::NoCounters { gfx }),
    }
}

/// How a counter is read (`HSA_PROFILE_TYPE`); the tables' counters are all
/// [`CounterKind::NonPrivilegedImmediate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CounterKind {
    /// `HSA_PROFILE_TYPE_PRIVILEGED_IMMEDIATE`.
    PrivilegedImmediate,
    /// `HSA_PROFILE_TYPE_PRIVILEGED_STREAMING`.
    PrivilegedStreaming,
    /// `HSA_PROFILE_TYPE_NONPRIV_IMMEDIATE`.
    NonPrivilegedImmediate,
    /// `HSA_PROFILE_TYPE_NONPRIV_STREAMING`.
    NonPrivilegedStreaming,
}

impl CounterKind {
    /// Whether upstream registers counters of this kind (only privileged ones need a trace).
    #[must_use]
    pub const fn needs_trace(self) -> bool {
        matches!(self, Self::PrivilegedImmediate | Self::PrivilegedStreaming)
    }
}

/// One counter a trace asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TraceCounter {
    /// libhsakmt block index (`BlockIndex`).
    pub block: u32,
    /// The counter id in the block.
    pub counter: u32,
    /// How it is read.
    pub kind: CounterKind,
}

/// What `hsaKmtPmcRegisterTrace` computes before it would open descriptors: the counters'
/// buffer size and number of passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TraceRequest {
    /// Bytes the trace buffer needs (8 per counter, page aligned: `TraceBufferMinSizeBytes`).
    pub min_buffer_bytes: u64,
    /// Passes needed (always 1: a block's counters never exceed its slots here).
    pub passes: u32,
    /// Counters registered (the privileged ones).
    pub counters: u32,
}

impl TraceRequest {
    /// Validates `counters` against `blocks` as upstream's `hsaKmtPmcRegisterTrace` does: an
    /// empty list or a block index past the last block is [`Error::InvalidCounters`]; only
    /// privileged counters are registered (upstream skips the others), and a block this GPU
    /// lacks, more counters of one block than it counts at once, or no privileged counter at
    /// all is [`Error::InvalidCounters`] too.
    ///
    /// # Errors
    /// As described.
    pub fn new(blocks: &[CounterBlock], counters: &[TraceCounter]) -> Result<Self, Error> {
        if counters.is_empty() {
            return Err(Error::InvalidCounters);
        }
        let mut per_block = [0u32; PMC_BLOCKS as usize];
        let mut registered = 0u32;
        for c in counters {
            let slot = per_block.get_mut(c.block as usize).ok_or(Error::InvalidCounters)?;
            if c.kind.needs_trace() {
                *slot = slot.saturating_add(1);
                registered = registered.saturating_add(1);
            }
        }
        if registered == 0 {
            return Err(Error::InvalidCounters);
        }
        for (index, &n) in per_block.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let b = blocks
                .iter()
                .find(|b| b.block.index() as usize == index)
                .ok_or(Error::InvalidCounters)?;
            if n > b.concurrent {
                return Err(Error::InvalidCounters);
            }
        }
        // At most one counter per entry of a slice: far from overflowing.
        let bytes = u64::from(registered).saturating_mul(u64::from(COUNTER_BITS / 8));
        let page = crate::memory::PAGE_SIZE;
        let min_buffer_bytes = bytes.div_ceil(page).saturating_mul(page);
        Ok(Self { min_buffer_bytes, passes: 1, counters: registered })
    }
}

/// Why a counter request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Error {
    /// The GPU family has no counter table (gfx11 and later, or no GPU).
    NoCounters {
        /// The GPU's version.
        gfx: GfxVersion,
    },
    /// The node is not a GPU with a known version.
    NotAGpu,
    /// A counter list is empty, names a block the GPU lacks, or exceeds a block's slots.
    InvalidCounters,
    /// No kernel interface delivers counter values to a thunk (see the module docs).
    NoKernelInterface,
    /// The trace handle is unknown (or stale).
    UnknownTrace,
    /// The trace table is full.
    TooManyTraces,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoCounters { gfx } => write!(
                f,
                "no performance counter table for gfx{}.{}.{} (tables exist for gfx9 and gfx10)",
                gfx.major, gfx.minor, gfx.stepping
            ),
            Self::NotAGpu => f.write_str("the node is not a GPU with a known gfx version"),
            Self::InvalidCounters => f.write_str(
                "invalid counter list (empty, unknown block, or more counters than slots)",
            ),
            Self::NoKernelInterface => f.write_str(
                "no kernel interface gives counter values to this library; profile with a \
                 profiler over AMDKFD_IOC_PROFILER",
            ),
            Self::UnknownTrace => f.write_str("unknown performance counter trace"),
            Self::TooManyTraces => f.write_str("too many performance counter traces"),
        }
    }
}

impl crate::error::Error for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::NoCounters { .. } | Self::NoKernelInterface => ErrorKind::NotSupported,
            Self::NotAGpu => ErrorKind::InvalidNode,
            Self::InvalidCounters => ErrorKind::InvalidArgument,
            Self::UnknownTrace => ErrorKind::InvalidHandle,
            Self::TooManyTraces => ErrorKind::CapacityExhausted,
        }
    }
}

impl core::error::Error for Error {}

#[cfg(test)]
mod tests;
