//! The injected I/O boundary. Core never performs I/O itself; a platform does it on core's
//! behalf, at the level of the kernel interface:
//!
//! - [`Sysfs`]: read one file of the KFD topology tree into a caller buffer, list a directory's
//!   numeric entries. The tree's root is the platform's business (real:
//!   `/sys/devices/virtual/kfd/kfd/topology`).
//! - [`Host`]: monotonic clock, process id (fork detection), environment lookup.
//! - Opening `/dev/kfd` fails with an [`OpenError`] that says what to do.
//! - [`SharedMemory`]: safe views of CPU mappings of GPU-shared memory (rings, signals,
//!   doorbells, buffers); all `unsafe` that creates them lives in the platform crates.
//!
//! - [`KfdDevice`]: `/dev/kfd` with typed [`Ioctl`] requests, render nodes, address-space
//!   reservations and CPU mappings.
//! - [`Platform`]: all of the above, which is what the device facade needs.
//!
//! Paths are typed ([`SysfsFile`], [`SysfsDir`]): core never builds strings, the platform renders
//! them into its own buffer.

use core::fmt;

mod kfd;
mod shared_memory;

pub use kfd::{DbgTrapData, Ioctl, KfdDevice};
pub use shared_memory::{Access, SharedMemory};

use crate::error::{Errno, Error, ErrorKind};

/// A kind of per-node sub-directory whose entries are numbered `0..n`, each holding one
/// `properties` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EntryKind {
    /// `mem_banks/`
    MemBank,
    /// `caches/`
    Cache,
    /// `io_links/`
    IoLink,
    /// `p2p_links/`
    P2pLink,
}

impl EntryKind {
    /// Every entry kind, in the order the kernel creates the directories.
    pub const ALL: [EntryKind; 4] = [Self::MemBank, Self::Cache, Self::IoLink, Self::P2pLink];

    /// The directory name under `nodes/N/`.
    #[must_use]
    pub const fn dir_name(self) -> &'static str {
        match self {
            Self::MemBank => "mem_banks",
            Self::Cache => "caches",
            Self::IoLink => "io_links",
            Self::P2pLink => "p2p_links",
        }
    }
}

/// A file of the topology tree, relative to the topology root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SysfsFile {
    /// `generation_id`
    GenerationId,
    /// `system_properties`
    SystemProperties,
    /// `nodes/N/gpu_id`
    GpuId(u32),
    /// `nodes/N/name`
    Name(u32),
    /// `nodes/N/properties`
    NodeProperties(u32),
    /// `nodes/N/<kind>/I/properties`
    EntryProperties {
        /// Node directory number.
        node: u32,
        /// Which sub-directory.
        kind: EntryKind,
        /// Entry directory number.
        index: u32,
    },
}

/// A directory of the topology tree whose numeric entries can be listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SysfsDir {
    /// `nodes/`
    Nodes,
    /// `nodes/N/<kind>/`
    Entries {
        /// Node directory number.
        node: u32,
        /// Which sub-directory.
        kind: EntryKind,
    },
}

/// Read access to a KFD sysfs topology tree.
pub trait Sysfs {
    /// Reads the whole file into `buf` (one open, read-to-EOF, close) and returns the number
    /// of bytes stored. A file longer than `buf` is truncated to `buf.len()`; callers pass a
    /// buffer of at least a page (sysfs attributes never exceed one).
    ///
    /// # Errors
    /// The errno of the failing open or read: `ENOENT` for a missing file, `EPERM` for a node
    /// hidden by the caller's device cgroup.
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno>;

    /// Lists the entries of `dir` whose names are decimal numbers, storing up to `out.len()` of
    /// them (in no particular order) and returning how many such entries exist in total (which
    /// may exceed `out.len()`). Non-numeric names are skipped. A missing directory yields 0.
    ///
    /// # Errors
    /// The errno of a failing open or read of the directory, other than `ENOENT`.
    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno>;
}

/// Process-level services: time, identity, configuration.
pub trait Host {
    /// Monotonic time in nanoseconds since an arbitrary origin.
    fn now_ns(&self) -> u64;

    /// The id of the calling process (changes in a forked child).
    fn process_id(&self) -> u32;

    /// Looks up an environment variable, copying its value into `buf`. Returns the value's
    /// full length (which may exceed `buf.len()`, in which case the copy is truncated), or
    /// `None` when the variable is unset.
    fn env_var(&self, name: &str, buf: &mut [u8]) -> Option<usize>;
}

impl<T: Sysfs + ?Sized> Sysfs for &T {
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
        (**self).read_file(file, buf)
    }
    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
        (**self).list_dir(dir, out)
    }
}

impl<T: Host + ?Sized> Host for &T {
    fn now_ns(&self) -> u64 {
        (**self).now_ns()
    }
    fn process_id(&self) -> u32 {
        (**self).process_id()
    }
    fn env_var(&self, name: &str, buf: &mut [u8]) -> Option<usize> {
        (**self).env_var(name, buf)
    }
}

/// Why `/dev/kfd` could not be opened, in terms a person can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum OpenError {
    /// The device node does not exist: the amdgpu driver is not loaded, or was built without
    /// KFD (HSA) support, or the container does not expose `/dev/kfd`.
    NotPresent,
    /// The caller may not open the device node.
    PermissionDenied {
        /// Group id owning the device node, when it could be read.
        gid: Option<u32>,
        /// That group's name (`render` on most distributions), when it could be resolved.
        group: Option<heapless::String<32>>,
    },
    /// The node opened, but it is not an amdkfd device (`AMDKFD_IOC_GET_VERSION` failed with
    /// `ENOTTY`).
    NotKfd,
    /// Any other failure of the open.
    Os(Errno),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotPresent => f.write_str(
                "/dev/kfd does not exist: load the amdgpu kernel driver (with HSA/KFD support), \
                 or expose /dev/kfd and /dev/dri to this container",
            ),
            Self::PermissionDenied { group: Some(g), .. } => write!(
                f,
                "permission denied opening /dev/kfd: it belongs to group '{g}'; \
                 add your user to it (sudo usermod -aG {g} $USER) and log in again"
            ),
            Self::PermissionDenied { gid: Some(gid), group: None } => write!(
                f,
                "permission denied opening /dev/kfd: it belongs to group id {gid}; \
                 add your user to that group and log in again"
            ),
            Self::PermissionDenied { gid: None, group: None } => f.write_str(
                "permission denied opening /dev/kfd: add your user to the group that owns it \
                 (usually 'render' or 'video') and log in again",
            ),
            Self::NotKfd => {
                f.write_str("/dev/kfd is not an amdkfd device (GET_VERSION failed with ENOTTY)")
            }
            Self::Os(e) => write!(f, "cannot open /dev/kfd: {e}"),
        }
    }
}

impl Error for OpenError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::NotPresent | Self::NotKfd => ErrorKind::NoDevice,
            Self::PermissionDenied { .. } => ErrorKind::PermissionDenied,
            Self::Os(e) => e.kind(),
        }
    }
}

impl core::error::Error for OpenError {}

/// Everything core needs from a platform, in one bound.
pub trait Platform: Sysfs + Host + KfdDevice + Send + Sync {}

impl<T: Sysfs + Host + KfdDevice + Send + Sync> Platform for T {}
