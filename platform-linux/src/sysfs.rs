//! The KFD topology tree read with plain syscalls: one open + read + close per file into the
//! caller's buffer, and directory listing through a stack buffer. No allocation.
//!
//! Only regular files are read, without asking the kernel for the file's type on the common
//! path: every file is opened with `O_NONBLOCK` (so a FIFO put where an attribute should be
//! cannot block the open) and read with `pread` at offset 0, which a FIFO, socket or any other
//! stream (a terminal, most character devices) refuses with `ESPIPE` — reported as `EINVAL`,
//! as `read(2)` names an object unsuitable for reading — and a directory with `EISDIR`. A read
//! that fills the whole window, which a sysfs attribute never does, is checked with `fstat`, so
//! a seekable device node that gives data (`/dev/zero`, a block device) is `EINVAL` too. An
//! empty read is an empty file, without a check: it brings nothing in, whatever gave it (a
//! `/dev/null` in the tree reads as empty). What this lets through is a seekable character
//! device whose first read returns between one byte and a window less one: read once, never
//! blocking, never beyond the window. Directory entries are node and entry numbers only in the
//! kernel's own spelling (`%d`: no sign, no leading zero), so `nodes/01` is not taken for node 1.
//!
//! Files are opened relative to a descriptor of the tree's root (`openat`), so the kernel walks
//! only the components below the root for each of the thousands of files of a large tree. The
//! entry files of one directory (`nodes/N/io_links/*/properties`, …) are opened relative to a
//! descriptor of that directory, held while consecutive reads stay in it: two components per
//! file instead of five. The same descriptor lists the directory when the walk lists it, and a
//! directory found missing is remembered as missing, so the walk's listing after a missing
//! entry costs no second failing open. That descriptor (or the memory of a missing directory)
//! is dropped whenever `generation_id` is read, which brackets every snapshot, and when the
//! walk ends ([`Sysfs::walk_done`](hsakmt_core::platform::Sysfs::walk_done)), so none outlives
//! a snapshot (or sees a directory the kernel has since replaced). The descriptor that listed
//! `nodes/` is held the same way and is the base of each node's own files and entry
//! directories (`N/properties`: two components instead of three). `generation_id` itself, read
//! at both ends of a walk, is opened once per walk: its descriptor is held from the first read
//! to the end of the walk, and the second read is a `pread` at offset 0, which makes sysfs
//! print the attribute anew (and reads a regular file's current bytes).

use core::ffi::CStr;
use core::mem::MaybeUninit;

use hsakmt_core::error::Errno;
use hsakmt_core::platform::{EntryKind, SysfsDir, SysfsFile};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Mode, OFlags, RawDir};

use crate::errno::from_rustix;
use crate::path::{FixedPath, decimal};

/// The real topology root the kernel creates (`kfd_topology.c`); libhsakmt reads this one.
pub const KFD_TOPOLOGY_ROOT: &str = "/sys/devices/virtual/kfd/kfd/topology";

/// A sysfs topology tree rooted at a directory (the real one, or a capture).
pub struct SysfsTree {
    root: FixedPath,
    /// `O_PATH` descriptor of the root, when it existed at construction.
    dir: Option<OwnedFd>,
    /// The entry directory files were last read from (see the module docs). Taken out while
    /// in use, so the lock is never held across a system call; a reader that finds it empty
    /// or locked opens its own.
    entries: spin::Mutex<Option<EntryDir>>,
    /// `generation_id`, open from its first read in a walk to the walk's end (see the module
    /// docs). Taken out while in use, like `entries`.
    generation: spin::Mutex<Option<OwnedFd>>,
    /// `nodes/`, open from its listing to the next read of `generation_id` (see the module
    /// docs): the base of the nodes' own files and entry directories. Taken out while in use,
    /// like `entries`.
    nodes: spin::Mutex<Option<OwnedFd>>,
}

/// A `nodes/N/<kind>/` directory met in the current snapshot.
struct EntryDir {
    node: u32,
    kind: EntryKind,
    /// Its descriptor; `None` when the directory does not exist.
    fd: Option<OwnedFd>,
    /// Whether `fd` is open for reading (it can be listed). A directory first met through an
    /// entry's file is opened with `O_PATH`, which is cheaper (about a fifth of an open and
    /// close on ext4) and enough to open files in it; a listing reopens it for reading.
    readable: bool,
    /// Whether `fd` has been listed (its position is no longer the start).
    listed: bool,
}

impl core::fmt::Debug for SysfsTree {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SysfsTree").field("root", &self.root.as_bytes()).finish_non_exhaustive()
    }
}

impl SysfsTree {
    /// The kernel's tree at [`KFD_TOPOLOGY_ROOT`].
    #[must_use]
    pub fn system() -> Self {
        let root = FixedPath::new(KFD_TOPOLOGY_ROOT.as_bytes()).unwrap_or_default();
        Self::with_root(root)
    }

    /// A tree rooted at `root` (for example a copy of a real machine's tree).
    ///
    /// # Errors
    /// [`Errno::ENAMETOOLONG`] when the path does not fit the fixed path buffer
    /// ([`PATH_CAPACITY`](crate::path::PATH_CAPACITY) bytes with the NUL), `EINVAL` when it
    /// contains a NUL byte.
    pub fn at(root: &[u8]) -> Result<Self, Errno> {
        Ok(Self::with_root(FixedPath::new(root)?))
    }

    fn with_root(root: FixedPath) -> Self {
        Self {
            dir: open_root(&root),
            root,
            entries: spin::Mutex::new(None),
            generation: spin::Mutex::new(None),
            nodes: spin::Mutex::new(None),
        }
    }

    /// The root directory as bytes.
    #[must_use]
    pub fn root(&self) -> &[u8] {
        self.root.as_bytes()
    }

    /// The path of `file` relative to the root (absolute when the root had no descriptor).
    fn file_path(&self, file: SysfsFile) -> Result<FixedPath, Errno> {
        let mut p = self.base();
        match file {
            SysfsFile::GenerationId => p.push_str("generation_id")?,
            SysfsFile::SystemProperties => p.push_str("system_properties")?,
            SysfsFile::GpuId(n) => node(&mut p, n, "gpu_id")?,
            SysfsFile::Name(n) => node(&mut p, n, "name")?,
            SysfsFile::NodeProperties(n) => node(&mut p, n, "properties")?,
            SysfsFile::EntryProperties { node: n, kind, index } => {
                node(&mut p, n, kind.dir_name())?;
                p.push_num(index)?;
                p.push_str("properties")?;
            }
        }
        Ok(p)
    }

    fn dir_path(&self, dir: SysfsDir) -> Result<FixedPath, Errno> {
        let mut p = self.base();
        match dir {
            SysfsDir::Nodes => p.push_str("nodes")?,
            SysfsDir::Entries { node: n, kind } => node(&mut p, n, kind.dir_name())?,
        }
        Ok(p)
    }
}

impl SysfsTree {
    fn base(&self) -> FixedPath {
        if self.dir.is_some() { FixedPath::default() } else { self.root.clone() }
    }

    /// Opens `path` (relative to the root's descriptor when there is one).
    fn open(&self, path: &FixedPath, flags: OFlags) -> Result<OwnedFd, Errno> {
        loop {
            let r = match &self.dir {
                Some(dir) => rustix::fs::openat(
                    dir.as_fd(),
                    path.as_c_str(),
                    flags | OFlags::CLOEXEC,
                    Mode::empty(),
                ),
                None => rustix::fs::open(path.as_c_str(), flags | OFlags::CLOEXEC, Mode::empty()),
            };
            match r {
                Err(rustix::io::Errno::INTR) => {}
                r => return r.map_err(from_rustix),
            }
        }
    }
}

fn open_root(root: &FixedPath) -> Option<OwnedFd> {
    rustix::fs::open(
        root.as_c_str(),
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()
}

fn node(p: &mut FixedPath, n: u32, leaf: &str) -> Result<(), Errno> {
    p.push_str("nodes")?;
    p.push_num(n)?;
    p.push_str(leaf)
}

impl SysfsTree {
    /// Opens `nodes/N/<kind>/I/properties` relative to the held directory of `nodes/N/<kind>/`
    /// (opening it when another one is held); `ENOENT` without a system call when that
    /// directory is known to be missing. `None` when the directory cannot be opened for another
    /// reason: the caller then opens the file from the root, which reports the file's own errno.
    fn open_entry(&self, node: u32, kind: EntryKind, index: u32) -> Option<Result<OwnedFd, Errno>> {
        let dir = self.entry_dir(node, kind, PATH_DIR_FLAGS)?;
        let opened = match &dir.fd {
            Some(fd) => openat_retrying(fd, EntryName::new(index).as_c_str(), FILE_FLAGS),
            None => Err(Errno::ENOENT),
        };
        self.hold(dir);
        Some(opened)
    }

    /// Lists `nodes/N/<kind>/` through the held directory (opening it, or learning that it is
    /// missing, when another one is held), which then stays held for the entries' files. `None`
    /// when the directory cannot be opened for another reason than its absence.
    fn list_entries(
        &self,
        node: u32,
        kind: EntryKind,
        out: &mut [u32],
    ) -> Option<Result<usize, Errno>> {
        let mut dir = self.entry_dir(node, kind, DIR_FLAGS)?;
        if !dir.readable
            && let Some(path_fd) = &dir.fd
        {
            match openat_retrying(path_fd, c".", DIR_FLAGS | OFlags::CLOEXEC) {
                Ok(fd) => dir = EntryDir { fd: Some(fd), readable: true, listed: false, ..dir },
                Err(e) => {
                    self.hold(dir);
                    return Some(Err(e));
                }
            }
        }
        let listed = match &dir.fd {
            Some(fd) => {
                let rewound = if dir.listed {
                    rustix::fs::seek(fd, rustix::fs::SeekFrom::Start(0))
                        .map(drop)
                        .map_err(from_rustix)
                } else {
                    Ok(())
                };
                dir.listed = true;
                rewound.and_then(|()| list_numbers(fd, out))
            }
            None => Ok(0),
        };
        self.hold(dir);
        Some(listed)
    }

    /// The held `nodes/N/<kind>/` when it is that one, else that directory opened now with
    /// `flags` (or recorded as missing). `None` when it cannot be opened for another reason
    /// than `ENOENT`.
    fn entry_dir(&self, node: u32, kind: EntryKind, flags: OFlags) -> Option<EntryDir> {
        let held = self.entries.try_lock().and_then(|mut slot| slot.take());
        if let Some(d) = held.filter(|d| d.node == node && d.kind == kind) {
            return Some(d);
        }
        let fd = match self.open_in_node(node, kind.dir_name(), flags) {
            Ok(fd) => Some(fd),
            Err(Errno::ENOENT) => None,
            Err(_) => return None,
        };
        Some(EntryDir { node, kind, fd, readable: !flags.contains(OFlags::PATH), listed: false })
    }

    /// Keeps `dir` as the held entry directory (unless another reader holds the slot).
    fn hold(&self, dir: EntryDir) {
        if let Some(mut slot) = self.entries.try_lock() {
            *slot = Some(dir);
        }
    }

    /// Closes the held entry directory and `nodes/`.
    fn release_entries(&self) {
        if let Some(mut slot) = self.entries.try_lock() {
            *slot = None;
        }
        if let Some(mut slot) = self.nodes.try_lock() {
            *slot = None;
        }
    }

    /// Opens `nodes/N/<leaf>` relative to the held `nodes/` (two components instead of three),
    /// or from the root when none is held.
    fn open_in_node(&self, node: u32, leaf: &str, flags: OFlags) -> Result<OwnedFd, Errno> {
        let held = self.nodes.try_lock().and_then(|mut slot| slot.take());
        let Some(nodes) = held else {
            let mut path = self.base();
            self::node(&mut path, node, leaf)?;
            return self.open(&path, flags);
        };
        let mut path = FixedPath::default();
        let opened = path
            .push_num(node)
            .and_then(|()| path.push_str(leaf))
            .and_then(|()| openat_retrying(&nodes, path.as_c_str(), flags | OFlags::CLOEXEC));
        if let Some(mut slot) = self.nodes.try_lock() {
            *slot = Some(nodes);
        }
        opened
    }

    /// Reads `generation_id` through the descriptor held since its last read in this walk, or
    /// opens it (and holds it when the read succeeds). A sysfs attribute read at offset 0 is
    /// printed anew (`seq_file` restarts at position 0), so the second read of a walk sees
    /// the current value without a second open and close. A held descriptor whose read fails
    /// is dropped and the file opened again, so the errno is the file's own now.
    fn read_generation(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        let held = self.generation.try_lock().and_then(|mut slot| slot.take());
        if let Some(fd) = held
            && let Ok(n) = read_regular(&fd, buf)
        {
            self.hold_generation(fd);
            return Ok(n);
        }
        let fd = self.open(&self.file_path(SysfsFile::GenerationId)?, FILE_FLAGS)?;
        let n = read_regular(&fd, buf)?;
        self.hold_generation(fd);
        Ok(n)
    }

    fn hold_generation(&self, fd: OwnedFd) {
        if let Some(mut slot) = self.generation.try_lock() {
            *slot = Some(fd);
        }
    }
}

/// `I/properties` as a C string, in a stack buffer.
struct EntryName {
    buf: [u8; 24],
    len: usize,
}

impl EntryName {
    fn new(index: u32) -> Self {
        const LEAF: &[u8; 12] = b"/properties\0";
        let mut digits = [0u8; 10];
        let digits = decimal(index, &mut digits);
        let mut buf = [0u8; 24];
        // At most 10 digits + 12 bytes of leaf: both copies fit.
        if let Some(head) = buf.get_mut(..digits.len()) {
            head.copy_from_slice(digits);
        }
        if let Some(tail) = buf.get_mut(digits.len()..).and_then(|t| t.first_chunk_mut::<12>()) {
            *tail = *LEAF;
        }
        Self { buf, len: digits.len().saturating_add(LEAF.len()) }
    }

    fn as_c_str(&self) -> &CStr {
        // Only the last byte of the name is NUL.
        self.buf.get(..self.len).and_then(|b| CStr::from_bytes_with_nul(b).ok()).unwrap_or_default()
    }
}

/// How files of the tree are opened: read-only, without blocking (a FIFO's open returns at
/// once), close-on-exec.
const FILE_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::NONBLOCK).union(OFlags::CLOEXEC);

/// How directories of the tree are opened for listing (and then as the base of their
/// entries' files); [`SysfsTree::open`] adds close-on-exec.
const DIR_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NONBLOCK);

/// How an entry directory is opened only as the base of its entries' files.
const PATH_DIR_FLAGS: OFlags = OFlags::PATH.union(OFlags::DIRECTORY);

/// `openat(dir, name, flags)`, retried on `EINTR`.
fn openat_retrying(dir: &OwnedFd, name: &CStr, flags: OFlags) -> Result<OwnedFd, Errno> {
    loop {
        match rustix::fs::openat(dir.as_fd(), name, flags, Mode::empty()) {
            Err(rustix::io::Errno::INTR) => {}
            r => return r.map_err(from_rustix),
        }
    }
}

/// Reads a regular file from its start into `buf` with one `pread` (see the module docs):
/// `EINVAL` for a FIFO, socket or other stream (`ESPIPE`), `EISDIR` for a directory. A read
/// that fills `buf` — what a device node such as `/dev/zero` gives — is accepted only after
/// `fstat` says the file is regular. An empty read is taken as an empty file without asking:
/// it brings no byte in, whatever gave it (`/dev/null` too).
fn read_regular(fd: &OwnedFd, buf: &mut [u8]) -> Result<usize, Errno> {
    let want = buf.len();
    let n = loop {
        match rustix::io::pread(fd, &mut *buf, 0) {
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::SPIPE) => return Err(Errno::EINVAL),
            r => break r.map_err(from_rustix)?,
        }
    };
    // A short read of a regular or sysfs file means end of file (sysfs returns a whole
    // attribute in one read), which saves the second, empty read.
    if n >= want {
        let st = rustix::fs::fstat(fd).map_err(from_rustix)?;
        match rustix::fs::FileType::from_raw_mode(st.st_mode) {
            rustix::fs::FileType::RegularFile => {}
            rustix::fs::FileType::Directory => return Err(Errno::EISDIR),
            _ => return Err(Errno::EINVAL),
        }
    }
    Ok(n)
}

/// Lists the decimal-numbered entries of the directory open at `fd` (from its current
/// position) into `out` as [`Sysfs::list_dir`](hsakmt_core::platform::Sysfs::list_dir) says.
///
/// A listing usually ends with a `getdents64` that returns nothing. That call is skipped when
/// the last record of a batch already carries the directory's end position as the offset of
/// the entry after it: `getdents64` stores the directory's position on return there
/// (`fs/readdir.c`: the last record's `d_off` is `ctx.pos`). A filesystem sets its end
/// position only once it has emitted every entry, and an entry's own position is never the
/// end position: sysfs (`kernfs_fop_readdir` ends with `ctx->pos = INT_MAX`, and
/// `kernfs_name_hash` keeps names' positions below `INT_MAX`), ext4 (`EXT4_HTREE_EOF_32BIT`
/// or `_64BIT`, `INT_MAX` or `LLONG_MAX`, which `ext4fs_dirhash` keeps names' hashes off),
/// btrfs (`INT_MAX` or `LLONG_MAX` after its last index) and the tmpfs of current kernels
/// (libfs `DIR_OFFSET_EOD`, `INT_MAX`). Elsewhere (xfs, procfs, FUSE, NFS) a listing ends on
/// an ordinary position and keeps its last call. A batch cut short — `filldir64` stops early
/// on a pending signal — ends on an entry's own position, so the next call is made as
/// before. The room left in the buffer says nothing here: a signal can end a batch with room
/// to spare.
fn list_numbers(fd: &OwnedFd, out: &mut [u32]) -> Result<usize, Errno> {
    /// `INT_MAX` and `LLONG_MAX`, the end positions named above.
    const END_OF_DIRECTORY: [u64; 2] = [i32::MAX as u64, i64::MAX as u64];
    let mut space = [MaybeUninit::<u8>::uninit(); 4096];
    let mut entries = RawDir::new(fd, &mut space);
    let mut total = 0;
    while let Some(entry) = entries.next() {
        let entry = entry.map_err(from_rustix)?;
        let next = entry.next_entry_cookie();
        if let Some(n) = parse_decimal(entry.file_name().to_bytes()) {
            keep_smallest(out, total, n);
            total += 1;
        }
        if entries.is_buffer_empty() && END_OF_DIRECTORY.contains(&next) {
            break;
        }
    }
    Ok(total)
}

impl hsakmt_core::platform::Sysfs for SysfsTree {
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
        let fd = match file {
            SysfsFile::EntryProperties { node, kind, index } if self.dir.is_some() => {
                match self.open_entry(node, kind, index) {
                    Some(opened) => opened?,
                    None => self.open(&self.file_path(file)?, FILE_FLAGS)?,
                }
            }
            SysfsFile::GenerationId => {
                self.release_entries();
                return self.read_generation(buf);
            }
            SysfsFile::GpuId(n) => self.open_in_node(n, "gpu_id", FILE_FLAGS)?,
            SysfsFile::Name(n) => self.open_in_node(n, "name", FILE_FLAGS)?,
            SysfsFile::NodeProperties(n) => self.open_in_node(n, "properties", FILE_FLAGS)?,
            _ => self.open(&self.file_path(file)?, FILE_FLAGS)?,
        };
        read_regular(&fd, buf)
    }

    /// Closes the held entry directory and `generation_id`.
    fn walk_done(&self) {
        self.release_entries();
        if let Some(mut slot) = self.generation.try_lock() {
            *slot = None;
        }
    }

    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
        if let SysfsDir::Entries { node, kind } = dir
            && let Some(listed) = self.list_entries(node, kind, out)
        {
            return listed;
        }
        let path = self.dir_path(dir)?;
        let fd = match self.open(&path, DIR_FLAGS) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(0),
            Err(e) => return Err(e),
        };
        let listed = list_numbers(&fd, out);
        if dir == SysfsDir::Nodes
            && let Some(mut slot) = self.nodes.try_lock()
        {
            *slot = Some(fd);
        }
        listed
    }
}

/// Stores `n`, the `seen`th number listed, so that `out` holds the smallest numbers listed so
/// far: appended while there is room, else in place of the largest kept when smaller (a tree
/// beyond the listing's capacity is read from its lowest numbers, whatever the directory's
/// order).
fn keep_smallest(out: &mut [u32], seen: usize, n: u32) {
    if let Some(slot) = out.get_mut(seen) {
        *slot = n;
        return;
    }
    let largest = out.iter_mut().max_by_key(|v| **v);
    if let Some(largest) = largest.filter(|v| **v > n) {
        *largest = n;
    }
}

/// A directory name made only of decimal digits that fits a `u32`, spelled as sysfs prints
/// `"%d"`: no leading zero (`01` is not entry 1).
fn parse_decimal(name: &[u8]) -> Option<u32> {
    if name.is_empty() || name.len() > 10 || (name.len() > 1 && name.first() == Some(&b'0')) {
        return None;
    }
    let mut v: u32 = 0;
    for &b in name {
        let d = b.checked_sub(b'0').filter(|d| *d < 10)?;
        v = v.checked_mul(10)?.checked_add(u32::from(d))?;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsakmt_core::platform::{EntryKind, Sysfs};

    /// An entry's file name is `I/properties` for every index, up to ten digits.
    #[test]
    fn entry_names() {
        let mut x = 0x2545_F491_u32;
        let mut indices = std::vec![0, 1, 9, 10, 95, 99, 100, 999_999_999, 1_000_000_000, u32::MAX];
        for _ in 0..1_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            indices.push(x >> (x % 32));
        }
        for i in indices {
            let name = EntryName::new(i);
            assert_eq!(name.as_c_str().to_bytes(), std::format!("{i}/properties").as_bytes());
        }
    }

    #[test]
    fn decimal_names_only() {
        assert_eq!(parse_decimal(b"0"), Some(0));
        assert_eq!(parse_decimal(b"33"), Some(33));
        assert_eq!(parse_decimal(b"4294967295"), Some(u32::MAX));
        assert_eq!(parse_decimal(b"4294967296"), None);
        assert_eq!(parse_decimal(b"."), None);
        assert_eq!(parse_decimal(b"1a"), None);
        assert_eq!(parse_decimal(b""), None);
        assert_eq!(parse_decimal(b"01"), None, "a phantom of node 1");
        assert_eq!(parse_decimal(b"00"), None);
        assert_eq!(parse_decimal(b"+1"), None);
    }

    #[test]
    fn reads_a_tree_on_disk() {
        let dir = std::env::temp_dir().join(format!("hsakmt-linux-sysfs-{}", std::process::id()));
        let bank = dir.join("nodes/1/mem_banks/0");
        std::fs::create_dir_all(&bank).unwrap();
        std::fs::create_dir_all(dir.join("nodes/0")).unwrap();
        std::fs::create_dir_all(dir.join("nodes/10")).unwrap();
        std::fs::create_dir_all(dir.join("nodes/perf")).unwrap();
        std::fs::write(dir.join("generation_id"), "7\n").unwrap();
        std::fs::write(bank.join("properties"), "heap_type 1\nsize_in_bytes 4096\n").unwrap();
        let tree = SysfsTree::at(dir.as_os_str().as_encoded_bytes()).unwrap();

        let mut buf = [0u8; 64];
        let n = tree.read_file(SysfsFile::GenerationId, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"7\n");
        let file = SysfsFile::EntryProperties { node: 1, kind: EntryKind::MemBank, index: 0 };
        let n = tree.read_file(file, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"heap_type 1\nsize_in_bytes 4096\n");
        // A short buffer truncates instead of failing.
        let mut small = [0u8; 4];
        assert_eq!(tree.read_file(file, &mut small).unwrap(), 4);
        assert_eq!(tree.read_file(SysfsFile::Name(3), &mut buf), Err(Errno::ENOENT));

        let mut ids = [0u32; 8];
        let total = tree.list_dir(SysfsDir::Nodes, &mut ids).unwrap();
        assert_eq!(total, 3);
        let mut got = ids[..total].to_vec();
        got.sort_unstable();
        assert_eq!(got, [0, 1, 10]);
        let mut one = [0u32; 1];
        assert_eq!(tree.list_dir(SysfsDir::Nodes, &mut one).unwrap(), 3);
        assert_eq!(one, [0], "the smallest number is kept when the listing overflows");
        let missing = SysfsDir::Entries { node: 0, kind: EntryKind::Cache };
        assert_eq!(tree.list_dir(missing, &mut ids).unwrap(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Writes `text` to `path` under `dir`, creating the directories on the way.
    fn write_under(dir: &std::path::Path, path: &str, text: &str) {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn entry_directories_are_held_between_generation_reads() {
        let dir = std::env::temp_dir().join(format!("hsakmt-linux-entries-{}", std::process::id()));
        let write = |path: &str, text: &str| write_under(&dir, path, text);
        write("generation_id", "1\n");
        write("nodes/1/io_links/0/properties", "type 2\n");
        write("nodes/1/io_links/11/properties", "type 11\n");
        write("nodes/1/caches/0/properties", "level 1\n");
        let tree = SysfsTree::at(dir.as_os_str().as_encoded_bytes()).unwrap();
        let entry = |kind, index| SysfsFile::EntryProperties { node: 1, kind, index };
        let read = |file| {
            let mut buf = [0u8; 64];
            tree.read_file(file, &mut buf).map(|n| String::from_utf8_lossy(&buf[..n]).into_owned())
        };

        // Alternating directories and indexes of one and two digits read the right files.
        assert_eq!(read(entry(EntryKind::IoLink, 0)).unwrap(), "type 2\n");
        assert_eq!(read(entry(EntryKind::IoLink, 11)).unwrap(), "type 11\n");
        assert_eq!(read(entry(EntryKind::Cache, 0)).unwrap(), "level 1\n");
        assert_eq!(read(entry(EntryKind::IoLink, 0)).unwrap(), "type 2\n");
        assert!(tree.entries.lock().is_some(), "the directory is held");
        // Missing entries and directories report the file's errno.
        assert_eq!(read(entry(EntryKind::IoLink, 5)), Err(Errno::ENOENT));
        assert_eq!(read(entry(EntryKind::MemBank, 0)), Err(Errno::ENOENT));

        // Reading generation_id lets go of the directory, so a directory the kernel replaced
        // (hot-unplug and re-plug) is found anew instead of through a stale descriptor.
        assert_eq!(read(entry(EntryKind::IoLink, 0)).unwrap(), "type 2\n");
        assert_eq!(read(SysfsFile::GenerationId).unwrap(), "1\n");
        assert!(tree.entries.lock().is_none());
        std::fs::remove_dir_all(dir.join("nodes/1/io_links")).unwrap();
        write("nodes/1/io_links/0/properties", "type 3\n");
        assert_eq!(read(entry(EntryKind::IoLink, 0)).unwrap(), "type 3\n");

        // A directory met through a file is held with O_PATH; listing it reopens it for reading.
        assert!(tree.entries.lock().as_ref().is_some_and(|d| d.fd.is_some() && !d.readable));
        let links = SysfsDir::Entries { node: 1, kind: EntryKind::IoLink };
        let mut ids = [0u32; 4];
        assert_eq!(tree.list_dir(links, &mut ids), Ok(1));
        assert!(tree.entries.lock().as_ref().is_some_and(|d| d.readable && d.listed));
        assert_eq!(read(entry(EntryKind::IoLink, 0)).unwrap(), "type 3\n");

        // A listing holds the directory it listed; listing it again starts from its start.
        let links = SysfsDir::Entries { node: 1, kind: EntryKind::IoLink };
        let mut ids = [0u32; 4];
        assert_eq!(read(SysfsFile::GenerationId).unwrap(), "1\n");
        assert_eq!(tree.list_dir(links, &mut ids), Ok(1));
        assert!(tree.entries.lock().as_ref().is_some_and(|d| d.fd.is_some() && d.listed));
        assert_eq!(read(entry(EntryKind::IoLink, 0)).unwrap(), "type 3\n");
        write("nodes/1/io_links/1/properties", "type 4\n");
        assert_eq!(tree.list_dir(links, &mut ids), Ok(2));
        assert_eq!(read(entry(EntryKind::IoLink, 1)).unwrap(), "type 4\n");

        // A missing directory is remembered as missing until generation_id is read again.
        let banks = SysfsDir::Entries { node: 1, kind: EntryKind::MemBank };
        assert_eq!(read(entry(EntryKind::MemBank, 0)), Err(Errno::ENOENT));
        assert!(tree.entries.lock().as_ref().is_some_and(|d| d.fd.is_none()));
        assert_eq!(tree.list_dir(banks, &mut ids), Ok(0));
        write("nodes/1/mem_banks/0/properties", "heap_type 0\n");
        assert_eq!(read(SysfsFile::GenerationId).unwrap(), "1\n");
        assert_eq!(tree.list_dir(banks, &mut ids), Ok(1));
        assert_eq!(read(entry(EntryKind::MemBank, 0)).unwrap(), "heap_type 0\n");

        // A directory that cannot be opened for listing (a file in its place) reports the
        // file's own errno.
        write("nodes/2/caches", "");
        assert_eq!(
            read(SysfsFile::EntryProperties { node: 2, kind: EntryKind::Cache, index: 0 }),
            Err(Errno::ENOTDIR)
        );
        let caches = SysfsDir::Entries { node: 2, kind: EntryKind::Cache };
        assert_eq!(tree.list_dir(caches, &mut ids), Err(Errno::ENOTDIR));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A FIFO, a directory, a device node or a symlink loop where a file should be: a typed
    /// errno at once, never a blocked open or read.
    #[test]
    fn only_regular_files_are_read() {
        use rustix::fs::{CWD, FileType, mknodat};
        let dir = std::env::temp_dir().join(format!("hsakmt-linux-kinds-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("nodes/0/caches/0")).unwrap();
        std::fs::create_dir_all(dir.join("nodes/1/properties")).unwrap();
        let fifo = |path: std::path::PathBuf| {
            mknodat(CWD, &path, FileType::Fifo, Mode::from_raw_mode(0o644), 0).unwrap();
        };
        fifo(dir.join("generation_id"));
        fifo(dir.join("nodes/0/properties"));
        fifo(dir.join("nodes/0/caches/0/properties"));
        std::os::unix::fs::symlink("gpu_id", dir.join("nodes/0/gpu_id")).unwrap();
        std::fs::write(dir.join("system_properties"), "platform_oem 0\n").unwrap();
        let tree = SysfsTree::at(dir.as_os_str().as_encoded_bytes()).unwrap();
        let mut buf = [0u8; 64];
        let cache = SysfsFile::EntryProperties { node: 0, kind: EntryKind::Cache, index: 0 };
        for file in [SysfsFile::GenerationId, SysfsFile::NodeProperties(0), cache, cache] {
            assert_eq!(tree.read_file(file, &mut buf), Err(Errno::EINVAL), "{file:?}");
        }
        assert_eq!(tree.read_file(SysfsFile::NodeProperties(1), &mut buf), Err(Errno::EISDIR));
        assert_eq!(tree.read_file(SysfsFile::GpuId(0), &mut buf), Err(Errno::ELOOP));
        assert_eq!(tree.read_file(SysfsFile::SystemProperties, &mut buf), Ok(15));
        // A FIFO with a writer and data waiting in it is refused too (`pread` on a stream),
        // and its data is left unread.
        let writer = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(dir.join("nodes/0/properties"))
            .unwrap();
        rustix::io::write(&writer, b"simd_count 4\n").unwrap();
        assert_eq!(tree.read_file(SysfsFile::NodeProperties(0), &mut buf), Err(Errno::EINVAL));
        let mut left = [0u8; 16];
        assert_eq!(rustix::io::read(&writer, &mut left[..]), Ok(13), "nothing was consumed");
        // A device node that reads as empty (`/dev/null`) is an empty file: nothing is read
        // from it (creating one needs CAP_MKNOD: checked when the test may).
        let null = dir.join("nodes/0/name");
        if mknodat(
            CWD,
            &null,
            FileType::CharacterDevice,
            Mode::from_raw_mode(0o666),
            rustix::fs::makedev(1, 3),
        )
        .is_ok()
        {
            assert_eq!(tree.read_file(SysfsFile::Name(0), &mut buf), Ok(0));
        }
        // A seekable device that fills the window (`/dev/zero`).
        let zero = dir.join("nodes/0/gpu_id");
        std::fs::remove_file(&zero).unwrap();
        if mknodat(
            CWD,
            &zero,
            FileType::CharacterDevice,
            Mode::from_raw_mode(0o666),
            rustix::fs::makedev(1, 5),
        )
        .is_ok()
        {
            assert_eq!(tree.read_file(SysfsFile::GpuId(0), &mut buf), Err(Errno::EINVAL));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `generation_id` is opened once per walk: held from its first read to `walk_done`, each
    /// read seeing the file's bytes at that moment.
    #[test]
    fn generation_is_held_for_one_walk() {
        let dir = std::env::temp_dir().join(format!("hsakmt-linux-gen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let gen_path = dir.join("generation_id");
        std::fs::write(&gen_path, "3\n").unwrap();
        let tree = SysfsTree::at(dir.as_os_str().as_encoded_bytes()).unwrap();
        let read = || {
            let mut buf = [0u8; 16];
            tree.read_file(SysfsFile::GenerationId, &mut buf)
                .map(|n| String::from_utf8_lossy(&buf[..n]).into_owned())
        };
        assert_eq!(read().unwrap(), "3\n");
        assert!(tree.generation.lock().is_some(), "held after the first read");
        // Rewritten in place (as sysfs prints it anew): the held descriptor reads the new value.
        std::fs::write(&gen_path, "4\n").unwrap();
        assert_eq!(read().unwrap(), "4\n");
        tree.walk_done();
        assert!(tree.generation.lock().is_none(), "closed when the walk ends");
        // Replaced by another file: the next walk opens the new one.
        std::fs::write(dir.join("next"), "5\n").unwrap();
        std::fs::rename(dir.join("next"), &gen_path).unwrap();
        assert_eq!(read().unwrap(), "5\n");
        // Removed while held: the held descriptor still reads the old file within the walk;
        // the next walk reports the file missing.
        std::fs::remove_file(&gen_path).unwrap();
        assert_eq!(read().unwrap(), "5\n");
        tree.walk_done();
        assert_eq!(read(), Err(Errno::ENOENT));
        assert!(tree.generation.lock().is_none(), "nothing held after a failed open");
        // A directory in its place.
        std::fs::create_dir(&gen_path).unwrap();
        assert_eq!(read(), Err(Errno::EISDIR));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The descriptor that listed `nodes/` opens the nodes' files and entry directories until
    /// `generation_id` is read, so a `nodes/` the kernel replaced is found anew by the next walk.
    #[test]
    fn nodes_directory_is_held_between_generation_reads() {
        let dir = std::env::temp_dir().join(format!("hsakmt-linux-nodes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let write = |path: &str, text: &str| write_under(&dir, path, text);
        write("generation_id", "1\n");
        write("nodes/0/properties", "simd_count 0\n");
        write("nodes/12/gpu_id", "4660\n");
        write("nodes/12/io_links/0/properties", "type 2\n");
        let tree = SysfsTree::at(dir.as_os_str().as_encoded_bytes()).unwrap();
        let read = |file| {
            let mut buf = [0u8; 64];
            tree.read_file(file, &mut buf).map(|n| String::from_utf8_lossy(&buf[..n]).into_owned())
        };
        let mut ids = [0u32; 4];
        assert_eq!(read(SysfsFile::GenerationId).unwrap(), "1\n");
        assert_eq!(tree.list_dir(SysfsDir::Nodes, &mut ids), Ok(2));
        assert!(tree.nodes.lock().is_some(), "held after the listing");
        assert_eq!(read(SysfsFile::NodeProperties(0)).unwrap(), "simd_count 0\n");
        assert_eq!(read(SysfsFile::GpuId(12)).unwrap(), "4660\n");
        assert_eq!(read(SysfsFile::Name(12)), Err(Errno::ENOENT));
        let link = SysfsFile::EntryProperties { node: 12, kind: EntryKind::IoLink, index: 0 };
        assert_eq!(read(link).unwrap(), "type 2\n");
        assert!(tree.nodes.lock().is_some(), "still held");
        // Replaced: the held descriptor still sees the old tree until generation_id is read.
        std::fs::rename(dir.join("nodes"), dir.join("old")).unwrap();
        write("nodes/0/properties", "simd_count 4\n");
        assert_eq!(read(SysfsFile::NodeProperties(0)).unwrap(), "simd_count 0\n");
        assert_eq!(read(SysfsFile::GenerationId).unwrap(), "1\n");
        assert!(tree.nodes.lock().is_none(), "let go at the generation read");
        assert_eq!(read(SysfsFile::NodeProperties(0)).unwrap(), "simd_count 4\n");
        assert_eq!(read(SysfsFile::GpuId(12)), Err(Errno::ENOENT));
        assert_eq!(tree.list_dir(SysfsDir::Nodes, &mut ids), Ok(1));
        tree.walk_done();
        assert!(tree.nodes.lock().is_none(), "closed when the walk ends");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A listing longer than one `getdents64` batch is read to its end: only the directory's
    /// end position stops it early, not a batch that leaves room in the buffer.
    #[test]
    fn long_listings_are_read_to_the_end() {
        let dir = std::env::temp_dir().join(format!("hsakmt-linux-long-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for n in 0..700u32 {
            std::fs::create_dir_all(dir.join(format!("nodes/{n}"))).unwrap();
        }
        let tree = SysfsTree::at(dir.as_os_str().as_encoded_bytes()).unwrap();
        let mut ids = [0u32; 1024];
        assert_eq!(tree.list_dir(SysfsDir::Nodes, &mut ids), Ok(700));
        let mut got = ids[..700].to_vec();
        got.sort_unstable();
        assert!(got.iter().copied().eq(0..700));
        // An empty directory, and one listed again through the held descriptor.
        let banks = SysfsDir::Entries { node: 3, kind: EntryKind::MemBank };
        std::fs::create_dir_all(dir.join("nodes/3/mem_banks")).unwrap();
        assert_eq!(tree.list_dir(banks, &mut ids), Ok(0));
        std::fs::create_dir_all(dir.join("nodes/3/mem_banks/0")).unwrap();
        assert_eq!(tree.list_dir(banks, &mut ids), Ok(1));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_root_beyond_the_path_capacity_is_named_too_long() {
        let long = [b'a'; crate::path::PATH_CAPACITY];
        assert_eq!(SysfsTree::at(&long).err(), Some(Errno::ENAMETOOLONG));
    }

    #[test]
    fn an_overflowing_listing_keeps_the_smallest_numbers() {
        let mut out = [0u32; 3];
        for (seen, n) in [9, 4, 7, 1, 8, 2].into_iter().enumerate() {
            keep_smallest(&mut out, seen, n);
        }
        out.sort_unstable();
        assert_eq!(out, [1, 2, 4]);
        keep_smallest(&mut [], 0, 5);
    }
}
