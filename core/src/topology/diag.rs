//! Warnings: every inconsistency the snapshot found in the tree, as a typed value, kept in a
//! bounded list with a count of those that did not fit.

use core::fmt;

use super::Table;
use super::keys::{KeyId, NodeKey};
use super::node::{Owner, UNKNOWN_KEY_NAME_CAPACITY, UnknownKey};
use crate::error::Errno;
use crate::platform::{EntryKind, SysfsDir, SysfsFile};

/// Where a warning applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Location {
    /// A file of the tree.
    File(SysfsFile),
    /// A directory of the tree.
    Dir(SysfsDir),
}

/// Why a value is not a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ValueProblem {
    /// Nothing follows the key (or the file is blank).
    Missing,
    /// Something other than decimal digits.
    NotDecimal,
    /// A decimal number beyond 64 bits.
    Overflow,
}

impl ValueProblem {
    /// The words for it, after the thing it is about.
    const fn words(self) -> &'static str {
        match self {
            Self::Missing => "has no value",
            Self::NotDecimal => "is not a decimal number",
            Self::Overflow => "does not fit 64 bits",
        }
    }
}

/// What is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WarningKind {
    /// The file does not exist (`ENOENT`); its values are reported absent.
    MissingFile,
    /// Reading the file failed with this errno; its values are reported absent. A platform
    /// reports a path that is not a regular file as `EISDIR` (a directory) or `EINVAL` (a FIFO,
    /// socket or device node: unsuitable for reading), see [`Sysfs`](crate::platform::Sysfs).
    ReadFailed(Errno),
    /// Listing the directory failed with this errno; it is treated as empty.
    ListFailed(Errno),
    /// The file is empty.
    EmptyFile,
    /// The file filled the whole read buffer and may have been cut short.
    MaybeTruncated,
    /// A line is not `key value` (empty key, or bytes other than printable ASCII in the key).
    MalformedLine {
        /// 1-based line number.
        line: u32,
    },
    /// A value is missing, not decimal, or beyond 64 bits; the key is reported absent.
    MalformedValue {
        /// 1-based line number.
        line: u32,
        /// The key, when it is a known one.
        key: Option<KeyId>,
        /// What is wrong with the value.
        problem: ValueProblem,
    },
    /// A one-number file (`generation_id`, `gpu_id`) does not hold a `%u` number; its value
    /// is reported absent.
    MalformedNumber {
        /// What is wrong (a number beyond 32 bits is [`ValueProblem::Overflow`]).
        problem: ValueProblem,
    },
    /// A `%u` key's value exceeds 32 bits; the key is reported absent.
    ValueOutOfRange {
        /// 1-based line number.
        line: u32,
        /// The key.
        key: KeyId,
        /// The value found.
        value: u64,
    },
    /// A key appears twice in one file; the last value is kept.
    DuplicateKey {
        /// 1-based line number of the repeat.
        line: u32,
        /// The key.
        key: KeyId,
    },
    /// A `*_count` key disagrees with the number of entry directories found.
    CountMismatch {
        /// The count key.
        key: NodeKey,
        /// Its value.
        reported: u32,
        /// Directories listed.
        found: u32,
    },
    /// Directory numbers are not dense from 0: `expected` was missing, `found` came next.
    NumberingGap {
        /// The number expected next.
        expected: u32,
        /// The number found instead.
        found: u32,
    },
    /// A listing named the same number twice (reported once).
    DuplicateEntry {
        /// The repeated number.
        number: u32,
    },
    /// The node name is longer than [`NAME_CAPACITY`](super::NAME_CAPACITY) bytes; it was cut.
    NameTooLong {
        /// The name's length in the file.
        len: u32,
    },
    /// A `sibling_map` entry is not `0` or `1` (or the list ends in a comma); the entries
    /// before it are kept.
    MalformedSiblingMap {
        /// 1-based line number.
        line: u32,
        /// Entries kept.
        entries: u32,
    },
    /// A `sibling_map` lists more entries than
    /// [`SIBLING_MAP_CAPACITY`](super::SIBLING_MAP_CAPACITY); the rest are counted, not kept.
    SiblingMapTruncated {
        /// Entries listed.
        entries: u32,
    },
    /// A GPU node without `gfx_target_version` whose `device_id` is not in libhsakmt's table:
    /// its gfx version is unknown (libhsakmt asks for `HSA_OVERRIDE_GFX_VERSION`).
    UnknownGfx {
        /// The node's `device_id`, if present.
        device_id: Option<u32>,
    },
    /// A link's `node_from` is not the node whose directory holds it.
    LinkFromMismatch {
        /// The value found.
        node_from: u32,
    },
    /// A link's `node_to` names no node of the snapshot.
    LinkTargetMissing {
        /// The value found.
        node_to: u32,
    },
    /// A link's `node_to` is the node whose directory holds it: a link from a node to itself.
    SelfLink,
    /// A link's `type` is none of the kernel's `CRAT_IOLINK_TYPE_*` values.
    UnknownLinkType {
        /// The value found.
        value: u32,
    },
    /// Two nodes report the same `gpu_id`; the library reaches a GPU by its `gpu_id`, so the
    /// later node cannot be told apart.
    DuplicateGpuId {
        /// The `gpu_id`.
        gpu_id: u32,
        /// The sysfs id of the first node with it.
        first_node: u32,
    },
    /// A GPU node's `gpu_id` is 0, the value of CPU nodes: the GPU cannot be reached.
    GpuIdZero,
    /// `gfx_target_version` does not decode to a gfx version (`MMmmss` with a major version
    /// of at most 63); the gfx version comes from the device-id table, if at all.
    ImpossibleGfxVersion {
        /// The value found.
        value: u64,
    },
    /// The node name is not UTF-8; reports show the bad bytes replaced.
    NameNotUtf8,
    /// A table of the snapshot was full: the tree was read as far as the capacity allows and
    /// what did not fit was left out (the lowest-numbered entries are kept).
    Truncated {
        /// Which table.
        table: Table,
        /// Its capacity.
        capacity: u32,
        /// How many entries (nodes, banks, caches, links, or listed directories) were left out.
        left_out: u32,
    },
}

/// One inconsistency in the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Warning {
    /// Where.
    pub location: Location,
    /// What.
    pub kind: WarningKind,
}

fn write_file(f: &mut fmt::Formatter<'_>, file: SysfsFile) -> fmt::Result {
    match file {
        SysfsFile::GenerationId => f.write_str("generation_id"),
        SysfsFile::SystemProperties => f.write_str("system_properties"),
        SysfsFile::GpuId(n) => write!(f, "nodes/{n}/gpu_id"),
        SysfsFile::Name(n) => write!(f, "nodes/{n}/name"),
        SysfsFile::NodeProperties(n) => write!(f, "nodes/{n}/properties"),
        SysfsFile::EntryProperties { node, kind, index } => {
            write!(f, "nodes/{node}/{}/{index}/properties", kind.dir_name())
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::File(file) => write_file(f, file),
            Self::Dir(SysfsDir::Nodes) => f.write_str("nodes/"),
            Self::Dir(SysfsDir::Entries { node, kind }) => {
                write!(f, "nodes/{node}/{}/", kind.dir_name())
            }
        }
    }
}

impl fmt::Display for WarningKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::MissingFile => f.write_str("missing"),
            Self::ReadFailed(e @ Errno::EINVAL) => write!(
                f,
                "read failed: not a regular file (a FIFO, socket or device node?): {}",
                e.name().unwrap_or("EINVAL")
            ),
            Self::ReadFailed(e) => write!(f, "read failed: {e}"),
            Self::ListFailed(e) => write!(f, "listing failed: {e}"),
            Self::EmptyFile => f.write_str("empty file"),
            Self::MaybeTruncated => f.write_str("filled the read buffer; may be truncated"),
            Self::MalformedLine { line } => write!(f, "line {line}: not `key value`"),
            Self::MalformedValue { line, key: Some(k), problem } => {
                write!(f, "line {line}: `{k}` {}", problem.words())
            }
            Self::MalformedValue { line, key: None, problem } => {
                write!(
                    f,
                    "line {line}: the value of a key this library does not know {}",
                    problem.words()
                )
            }
            Self::MalformedNumber { problem: ValueProblem::Missing } => {
                f.write_str("holds no number")
            }
            Self::MalformedNumber { problem: ValueProblem::NotDecimal } => {
                f.write_str("is not a decimal number")
            }
            Self::MalformedNumber { problem: ValueProblem::Overflow } => {
                f.write_str("does not fit 32 bits")
            }
            Self::ValueOutOfRange { line, key, value } => {
                write!(f, "line {line}: `{key}` = {value} exceeds 32 bits")
            }
            Self::DuplicateKey { line, key } => write!(f, "line {line}: `{key}` repeated"),
            Self::CountMismatch { key, reported, found } => {
                write!(f, "`{key}` is {reported} but {found} directories exist")
            }
            Self::NumberingGap { expected, found } => {
                write!(f, "numbering gap: {expected} missing, next is {found}")
            }
            Self::DuplicateEntry { number } => write!(f, "entry {number} listed twice"),
            Self::NameTooLong { len } => write!(f, "name of {len} bytes cut"),
            Self::MalformedSiblingMap { line, entries } => {
                write!(f, "line {line}: sibling_map malformed after {entries} entries")
            }
            Self::SiblingMapTruncated { entries } => {
                write!(f, "sibling_map of {entries} entries cut to its capacity")
            }
            Self::UnknownGfx { device_id: Some(d) } => {
                write!(f, "gfx version unknown for device id {d:#06x}")
            }
            Self::UnknownGfx { device_id: None } => f.write_str("gfx version unknown"),
            Self::LinkFromMismatch { node_from } => {
                write!(f, "node_from {node_from} is not this node")
            }
            Self::LinkTargetMissing { node_to } => write!(f, "node_to {node_to} is no node"),
            Self::SelfLink => f.write_str("links the node to itself"),
            Self::UnknownLinkType { value } => write!(f, "link type {value} is not a known type"),
            Self::DuplicateGpuId { gpu_id, first_node } => {
                write!(f, "gpu_id {gpu_id} is also node {first_node}'s")
            }
            Self::GpuIdZero => f.write_str("a GPU with gpu_id 0 cannot be reached"),
            Self::ImpossibleGfxVersion { value } => {
                write!(f, "gfx_target_version {value} is no gfx version")
            }
            Self::NameNotUtf8 => f.write_str("name is not UTF-8"),
            Self::Truncated { table, capacity, left_out } => write!(
                f,
                "the `{}` table is full (capacity {capacity}): {left_out} left out",
                table.name()
            ),
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.kind)
    }
}

/// Bounded warning list.
pub(crate) struct Diagnostics<const W: usize> {
    pub(crate) list: heapless::Vec<Warning, W>,
    pub(crate) dropped: u32,
}

impl<const W: usize> Diagnostics<W> {
    pub(crate) const fn new() -> Self {
        Self { list: heapless::Vec::new(), dropped: 0 }
    }

    pub(crate) fn clear(&mut self) {
        self.list.clear();
        self.dropped = 0;
    }

    #[inline]
    pub(crate) fn warn(&mut self, location: Location, kind: WarningKind) {
        if self.list.push(Warning { location, kind }).is_err() {
            self.dropped = self.dropped.saturating_add(1);
        }
    }

    #[inline]
    pub(crate) fn file(&mut self, file: SysfsFile, kind: WarningKind) {
        self.warn(Location::File(file), kind);
    }
}

/// Bounded store of unknown keys.
pub(crate) struct UnknownKeys<const U: usize> {
    pub(crate) list: heapless::Vec<UnknownKey, U>,
    pub(crate) dropped: u32,
}

impl<const U: usize> UnknownKeys<U> {
    pub(crate) const fn new() -> Self {
        Self { list: heapless::Vec::new(), dropped: 0 }
    }

    pub(crate) fn clear(&mut self) {
        self.list.clear();
        self.dropped = 0;
    }

    /// Keeps `name = value` for `owner`; counts it as dropped when the store is full or the
    /// name is too long.
    pub(crate) fn keep(&mut self, owner: Owner, name: &[u8], value: u64) {
        let mut buf = [0u8; UNKNOWN_KEY_NAME_CAPACITY];
        let (Some(dst), Ok(name_len)) = (buf.get_mut(..name.len()), u8::try_from(name.len()))
        else {
            self.dropped = self.dropped.saturating_add(1);
            return;
        };
        dst.copy_from_slice(name);
        if self.list.push(UnknownKey { owner, name: buf, name_len, value }).is_err() {
            self.dropped = self.dropped.saturating_add(1);
        }
    }
}

/// A `SysfsFile` for an entry.
pub(crate) const fn entry_file(node: u32, kind: EntryKind, index: u32) -> SysfsFile {
    SysfsFile::EntryProperties { node, kind, index }
}
