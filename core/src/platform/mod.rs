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
    /// hidden by the caller's device cgroup. A path that is not a regular file (sysfs
    /// attributes are) is refused: `EISDIR` for a directory, `EINVAL` for anything else (a
    /// FIFO, socket or device node), at once — never a blocking open or read, never more than
    /// `buf` read. (The Linux platform tells them apart by the read itself; what it reads as
    /// a file is a seekable character device whose first read is not a full buffer — one that
    /// reads as empty, such as `/dev/null`, is an empty file: see its `sysfs` module.)
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno>;

    /// Lists the entries of `dir` whose names are decimal numbers as sysfs spells them (no
    /// sign, no leading zero: `01` is not entry 1), storing up to `out.len()` of them (in no
    /// particular order; when there are more, the smallest ones) and returning how many such
    /// entries exist in total (which may exceed `out.len()`). Other names are skipped. A
    /// missing directory yields 0.
    ///
    /// # Errors
    /// The errno of a failing open or read of the directory, other than `ENOENT`.
    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno>;

    /// Called when a walk of the tree is over (after its last read, whether it succeeded or
    /// not), and after a lone read of `generation_id`: a tree that keeps descriptors open
    /// between the reads of one walk closes them here. Does nothing by default.
    fn walk_done(&self) {}
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
    fn walk_done(&self) {
        (**self).walk_done();
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

/// What kind of file system object a path names, when it is not the one expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FileKind {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A block device node.
    BlockDevice,
    /// A character device node.
    CharDevice,
    /// A FIFO (named pipe).
    Fifo,
    /// A Unix socket.
    Socket,
    /// A symbolic link.
    Symlink,
    /// Anything else.
    Other,
}

impl FileKind {
    /// `"a block device"`, `"a directory"`, …
    #[must_use]
    pub const fn describe(self) -> &'static str {
        match self {
            Self::Regular => "a regular file",
            Self::Directory => "a directory",
            Self::BlockDevice => "a block device",
            Self::CharDevice => "a character device",
            Self::Fifo => "a FIFO",
            Self::Socket => "a socket",
            Self::Symlink => "a symbolic link",
            Self::Other => "not a device node",
        }
    }
}

/// What a person denied access to a device node can do about it, from the node's owning group
/// and mode. Joining a group helps only when the group is not `root` and the mode grants the
/// group read and write; otherwise the node itself must change (a udev rule).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AccessAdvice<'a> {
    /// Group id owning the node, when it could be read.
    pub gid: Option<u32>,
    /// That group's name, when it could be resolved.
    pub group: Option<&'a str>,
    /// The node's permission bits (`st_mode & 0o7777`), when they could be read.
    pub mode: Option<u32>,
}

/// The group bits read and write.
const GROUP_RW: u32 = 0o060;

impl fmt::Display for AccessAdvice<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let udev = "give the node to the `render` group with mode 0660 (a udev rule with \
                    GROUP=\"render\", MODE=\"0660\"), then join that group";
        let root = self.gid == Some(0) || self.group == Some("root");
        match (self.mode, self.group, self.gid) {
            (Some(mode), ..) if mode & GROUP_RW != GROUP_RW => write!(
                f,
                "its mode {mode:04o} gives its group no read-write access, so joining a group \
                 would not help: {udev}"
            ),
            _ if root => write!(f, "it belongs to group root, which no user should join: {udev}"),
            (_, Some(g), _) => write!(
                f,
                "it belongs to group '{g}'; add your user to it (sudo usermod -aG {g} $USER) \
                 and log in again"
            ),
            (_, None, Some(gid)) => write!(
                f,
                "it belongs to group id {gid}; add your user to that group and log in again"
            ),
            (_, None, None) => f.write_str(
                "add your user to the group that owns it (usually 'render' or 'video') and log \
                 in again",
            ),
        }
    }
}

/// Why `/dev/kfd` could not be opened, in terms a person can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum OpenError {
    /// The device node does not exist: the amdgpu driver is not loaded, or was built without
    /// KFD (HSA) support, or the container does not expose `/dev/kfd`.
    NotPresent,
    /// The device node exists but no driver is bound to it (`ENXIO` or `ENODEV` from `open`):
    /// a stale node, or amdgpu not loaded or failed to initialise.
    NoDriver(Errno),
    /// The path exists but is not a character device.
    NotCharDevice(FileKind),
    /// The caller may not open the device node.
    PermissionDenied {
        /// Group id owning the device node, when it could be read.
        gid: Option<u32>,
        /// That group's name (`render` on most distributions), when it could be resolved.
        group: Option<heapless::String<32>>,
        /// The node's permission bits, when they could be read.
        mode: Option<u32>,
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
            Self::NoDriver(e) => write!(
                f,
                "/dev/kfd exists but no driver is bound to it ({}): load the amdgpu kernel \
                 driver (sudo modprobe amdgpu) and check `dmesg` for why it did not start",
                e.name().unwrap_or("no device")
            ),
            Self::NotCharDevice(kind) => write!(
                f,
                "/dev/kfd is {}, not the amdkfd character device: remove it and reload amdgpu \
                 so udev creates the real node",
                kind.describe()
            ),
            Self::PermissionDenied { gid, group, mode } => {
                let advice = AccessAdvice { gid: *gid, group: group.as_deref(), mode: *mode };
                write!(f, "permission denied opening /dev/kfd: {advice}")
            }
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
            Self::NotPresent | Self::NoDriver(_) | Self::NotCharDevice(_) | Self::NotKfd => {
                ErrorKind::NoDevice
            }
            Self::PermissionDenied { .. } => ErrorKind::PermissionDenied,
            Self::Os(e) => e.kind(),
        }
    }
}

impl core::error::Error for OpenError {}

/// Everything core needs from a platform, in one bound.
pub trait Platform: Sysfs + Host + KfdDevice + Send + Sync {}

impl<T: Sysfs + Host + KfdDevice + Send + Sync> Platform for T {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    fn denied(gid: u32, group: &str, mode: u32) -> std::string::String {
        let mut g = heapless::String::new();
        let _ = g.push_str(group);
        OpenError::PermissionDenied { gid: Some(gid), group: Some(g), mode: Some(mode) }.to_string()
    }

    #[test]
    fn access_advice_never_says_join_root_or_a_powerless_group() {
        let render = denied(110, "render", 0o660);
        assert!(render.contains("sudo usermod -aG render $USER"), "{render}");
        // Mode 000 owned by root:root: neither joining root nor any group helps.
        let locked = denied(0, "root", 0o000);
        assert!(!locked.contains("usermod"), "{locked}");
        assert!(locked.contains("mode 0000") && locked.contains("udev rule"), "{locked}");
        let root = denied(0, "root", 0o660);
        assert!(!root.contains("usermod") && root.contains("group root"), "{root}");
        let video = denied(44, "video", 0o600);
        assert!(!video.contains("usermod") && video.contains("mode 0600"), "{video}");
        let unknown = AccessAdvice { gid: None, group: None, mode: None }.to_string();
        assert!(unknown.contains("render"), "{unknown}");
    }

    #[test]
    fn a_node_without_driver_is_not_called_missing() {
        let text = OpenError::NoDriver(Errno::ENXIO).to_string();
        assert!(text.contains("exists but no driver is bound") && text.contains("ENXIO"), "{text}");
        assert!(!text.contains("does not exist"), "{text}");
        let text = OpenError::NotCharDevice(FileKind::BlockDevice).to_string();
        assert!(text.contains("is a block device"), "{text}");
        assert_eq!(OpenError::NoDriver(Errno::ENODEV).kind(), ErrorKind::NoDevice);
    }
}
