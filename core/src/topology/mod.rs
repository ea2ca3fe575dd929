//! The KFD sysfs topology snapshot.
//!
//! [`Topology::refresh`] walks the tree a [`Sysfs`](crate::platform::Sysfs) platform exposes —
//! `generation_id`, `system_properties`, and per node `gpu_id`, `name`, `properties`,
//! `mem_banks/*`, `caches/*`, `io_links/*`, `p2p_links/*` — into fixed-capacity tables, reading
//! every file once into one caller buffer and parsing it in a single pass.
//!
//! What it keeps:
//! - every key the kernel prints (KERNEL-CONTRACT §1.3–1.8), as a typed field with a presence
//!   bit: [`NodeProperties`], [`MemBankProperties`], [`CacheProperties`] (+ [`SiblingMap`]),
//!   [`LinkProperties`], [`SystemProperties`]. The key enums ([`NodeKey`], [`MemBankKey`],
//!   [`CacheKey`], [`LinkKey`], [`SystemKey`]) list them in kernel order with their sysfs names,
//!   so a report can print every key under its own name;
//! - keys it does not know ([`UnknownKey`], bounded, with a dropped count);
//! - every inconsistency as a typed [`Warning`] (bounded, with a dropped count): missing files,
//!   counts that disagree with the directories, numbering gaps, malformed lines, values out of
//!   range, repeated keys. Nothing absent is invented.
//!
//! What it derives, as libhsakmt does (`topology.c`): node kind ([`NodeKind`]), gfx version
//! ([`GfxVersion`], from `gfx_target_version` or the device-id table), the
//! `HSA_OVERRIDE_GFX_VERSION` override (kept apart from the real version), shader banks,
//! register file sizes, XCC and CU counts, VRAM size from the frame-buffer banks, CPU-mediated
//! GPU links when the kernel reports no p2p links, and NUMA weights.
//!
//! Cost: one `read_file` per file into the caller's buffer (plus a second read of
//! `generation_id`), one `list_dir` per directory ([`EntryEnumeration::TrustCounts`] skips the
//! per-node entry listings on a live kernel), and one pass over each file's bytes: keys are
//! checked first against the key the kernel's print order puts next, else found with a
//! compile-time perfect hash; numbers are accumulated while scanning; newlines, key ends and
//! `sibling_map` bits are processed eight or more bytes at a time, and a predicted
//! `sibling_map` line in the kernel's form is read with its bits in one pass.
//!
//! Where this differs from libhsakmt on purpose:
//! - hidden nodes stay in the snapshot, marked inaccessible with the reason ([`Hidden`]):
//!   files failing with `EPERM` (a device cgroup), or — with
//!   [`Topology::refresh_visible`] — a GPU whose render node cannot be opened (a container
//!   given only some `/dev/dri` nodes); libhsakmt drops them. [`Node::user_id`] gives
//!   libhsakmt's dense node ids over the visible nodes, [`Node::sysfs_id`] the tree's. Links to
//!   hidden nodes are kept but not used for derivations, and [`NodeView::visible_links`]
//!   leaves them out, as libhsakmt does.
//! - a generation change is retried a bounded number of times ([`GENERATION_RETRIES`]);
//!   libhsakmt loops forever.
//! - the gfx override also applies to a GPU whose real version is unknown (libhsakmt ignores
//!   it there and then asserts); override text is parsed strictly (no blanks or signs, which
//!   `sscanf("%u")` would take).
//! - derived links are computed from kernel-reported links only (libhsakmt's lookups can see
//!   links it derived earlier in the same loop); their order per node is by target node, which
//!   is libhsakmt's order too.
//! - files libhsakmt reads outside KFD (`/proc/cpuinfo`, CPU cache sysfs, libdrm marketing
//!   names) are not read: core does no I/O beyond the [`Sysfs`](crate::platform::Sysfs) tree.
//!
//! ```
//! use hsakmt_core::error::Errno;
//! use hsakmt_core::platform::{Host, Sysfs, SysfsDir, SysfsFile};
//! use hsakmt_core::topology::{NodeKind, NodeKey, Topology};
//!
//! /// A one-node tree: a CPU with 8 cores.
//! struct OneCpu;
//! impl Sysfs for OneCpu {
//!     fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
//!         let text: &[u8] = match file {
//!             SysfsFile::GpuId(0) => b"0\n",
//!             SysfsFile::NodeProperties(0) => b"cpu_cores_count 8\nsimd_count 0\n",
//!             _ => return Err(Errno::ENOENT),
//!         };
//!         buf[..text.len()].copy_from_slice(text);
//!         Ok(text.len())
//!     }
//!     fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
//!         if dir == SysfsDir::Nodes { out[0] = 0; Ok(1) } else { Ok(0) }
//!     }
//! }
//! struct NoEnv;
//! impl Host for NoEnv {
//!     fn now_ns(&self) -> u64 { 0 }
//!     fn process_id(&self) -> u32 { 1 }
//!     fn env_var(&self, _: &str, _: &mut [u8]) -> Option<usize> { None }
//! }
//!
//! // Small capacities for the example; the defaults hold an 8-GPU MI300X.
//! let mut topo: Topology<4, 4, 8, 8> = Topology::new();
//! let mut buf = [0u8; 4096];
//! topo.refresh(&OneCpu, &NoEnv, &mut buf)?;
//! let node = topo.node(0).unwrap();
//! assert_eq!(node.kind(), NodeKind::Cpu);
//! assert_eq!(node.get(NodeKey::CpuCoresCount), Some(8));
//! assert_eq!(node.get(NodeKey::GfxTargetVersion), None); // absent, not 0
//! assert!(!topo.warnings().is_empty()); // generation_id, name, ... are missing
//! # Ok::<(), hsakmt_core::topology::Error>(())
//! ```

mod derive;
mod diag;
mod gfx;
mod keys;
mod marketing;
mod node;
mod parse;
mod records;
mod refresh;
mod snapshot;
mod storage;
mod validate;
mod visibility;

#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;

use core::fmt;

pub use derive::AmdName;
pub use diag::{Location, ValueProblem, Warning, WarningKind};
pub use gfx::{
    DeviceGfx, GfxSource, GfxVersion, MAX_MAJOR, OVERRIDE_MAX_LEN, OverrideError, SGPR_SIZE_PER_CU,
    lookup_device, parse_override, resolve as resolve_gfx, vgpr_size_per_cu,
};
pub use keys::{
    CacheKey, CacheProperties, KeyId, LinkKey, LinkProperties, MemBankKey, MemBankProperties,
    NodeKey, NodeProperties, SystemKey, SystemProperties, Width,
};
pub use marketing::marketing_name;
pub use node::{
    Cache, Capability, Capability2, DebugProperties, HeapType, IoLinkType, Link, LinkOrigin,
    MemBank, NAME_CAPACITY, Node, NodeKind, Owner, SiblingMap, UNKNOWN_KEY_NAME_CAPACITY,
    UnknownKey,
};
pub use parse::SIBLING_MAP_CAPACITY;
pub use refresh::{EntryEnumeration, GENERATION_RETRIES, MIN_READ_BUFFER, Options, READ_BUFFER};
pub use snapshot::{
    DEFAULT_CACHES, DEFAULT_LINKS, DEFAULT_MEM_BANKS, DEFAULT_NODES, DEFAULT_UNKNOWN_KEYS,
    DEFAULT_WARNINGS, LISTING_CAPACITY, NodeView, Topology,
};
pub use storage::{TopologyCell, TopologyStorage};
pub use visibility::Hidden;

use crate::error::{Errno, ErrorKind};
use crate::platform::SysfsDir;

/// A fixed-capacity table of the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Table {
    /// Nodes (`NODES`).
    Nodes,
    /// Memory banks of all nodes (`BANKS`).
    MemBanks,
    /// Caches of all nodes (`CACHES`).
    Caches,
    /// io, p2p and derived links of all nodes (`LINKS`).
    Links,
    /// One directory listing ([`LISTING_CAPACITY`]).
    Listing,
}

impl Table {
    /// Every table, in declaration order.
    pub const ALL: [Table; 5] =
        [Self::Nodes, Self::MemBanks, Self::Caches, Self::Links, Self::Listing];

    /// A short name: `nodes`, `mem_banks`, `caches`, `links`, `listing`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Nodes => "nodes",
            Self::MemBanks => "mem_banks",
            Self::Caches => "caches",
            Self::Links => "links",
            Self::Listing => "listing",
        }
    }
}

/// Why a snapshot could not be taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Error {
    /// The read buffer is shorter than [`MIN_READ_BUFFER`].
    BufferTooSmall {
        /// Bytes given.
        len: u32,
        /// Bytes needed.
        min: u32,
    },
    /// `nodes/` is missing or has no node: no KFD topology.
    NoNodes,
    /// Listing `nodes/` failed.
    ListFailed {
        /// The directory.
        dir: SysfsDir,
        /// The errno.
        errno: Errno,
    },
    /// `generation_id` changed during every attempt.
    Inconsistent {
        /// Walks made.
        attempts: u32,
    },
    /// Opening a GPU's render node failed with an errno other than `ENOENT`/`EPERM` (which
    /// hide the GPU): libhsakmt fails the snapshot then.
    RenderNode {
        /// The node's sysfs id.
        node: u32,
        /// `N` of `/dev/dri/renderD<N>`.
        minor: u32,
        /// The errno of the open (`EACCES`: not in the render group).
        errno: Errno,
    },
    /// An `HSA_OVERRIDE_GFX_VERSION` variable is malformed.
    GfxOverride {
        /// The user node id of `HSA_OVERRIDE_GFX_VERSION_<id>`; `None` for the global variable.
        node: Option<u32>,
        /// What is wrong.
        reason: OverrideError,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::BufferTooSmall { len, min } => {
                write!(f, "read buffer of {len} bytes is below the minimum of {min}")
            }
            Self::NoNodes => f.write_str("the topology has no nodes (no KFD, or nodes/ missing)"),
            Self::ListFailed { errno, .. } => write!(f, "listing nodes/ failed: {errno}"),
            Self::Inconsistent { attempts } => {
                write!(f, "topology generation changed during each of {attempts} snapshots")
            }
            Self::RenderNode { node, minor, errno } => write!(
                f,
                "cannot open /dev/dri/renderD{minor} of node {node}: {errno} (add the user to the \
                 group owning it, usually 'render')"
            ),
            Self::GfxOverride { node: Some(n), reason } => {
                write!(f, "HSA_OVERRIDE_GFX_VERSION_{n} is invalid: {reason}")
            }
            Self::GfxOverride { node: None, reason } => {
                write!(f, "HSA_OVERRIDE_GFX_VERSION is invalid: {reason}")
            }
        }
    }
}

impl crate::error::Error for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::BufferTooSmall { .. } | Self::GfxOverride { .. } => ErrorKind::InvalidArgument,
            Self::NoNodes => ErrorKind::NoDevice,
            Self::ListFailed { errno, .. } | Self::RenderNode { errno, .. } => errno.kind(),
            Self::Inconsistent { .. } => ErrorKind::Inconsistent,
        }
    }
}

impl core::error::Error for Error {}
