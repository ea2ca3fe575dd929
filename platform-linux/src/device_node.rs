//! Opening `/dev/kfd` with errors a person can act on.

use hsakmt_core::platform::{FileKind, OpenError};
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};

use crate::errno::from_rustix;

/// The KFD character device.
pub const KFD_DEVICE: &str = "/dev/kfd";

/// Opens `path` read-write (close-on-exec), retrying on `EINTR`, and only when it is a
/// character device: the path is checked with `stat` before the open (opening a block
/// device, FIFO or regular file has effects of its own, or blocks) and the descriptor with
/// `fstat` after it.
///
/// # Errors
/// [`OpenError::NotPresent`] when nothing is at `path`, [`OpenError::NotCharDevice`] when
/// something other than a character device is, [`OpenError::NoDriver`] when the node exists
/// but the open fails with `ENXIO` or `ENODEV` (no driver bound to its device number),
/// [`OpenError::PermissionDenied`] (with the owning group, resolved through `/etc/group`, and
/// the node's mode) on `EACCES`/`EPERM`, else [`OpenError::Os`].
pub fn open_device(path: &str) -> Result<OwnedFd, OpenError> {
    match rustix::fs::stat(path) {
        Ok(st) => char_device(st.st_mode)?,
        Err(rustix::io::Errno::NOENT) => return Err(OpenError::NotPresent),
        // Not even `stat` may look (a directory on the way denies search): the open below
        // says why.
        Err(_) => {}
    }
    loop {
        match rustix::fs::open(path, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()) {
            Ok(fd) => {
                let st = rustix::fs::fstat(&fd).map_err(|e| OpenError::Os(from_rustix(e)))?;
                char_device(st.st_mode)?;
                return Ok(fd);
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::NOENT) => return Err(OpenError::NotPresent),
            Err(e @ (rustix::io::Errno::NODEV | rustix::io::Errno::NXIO)) => {
                return Err(OpenError::NoDriver(from_rustix(e)));
            }
            Err(rustix::io::Errno::ACCESS | rustix::io::Errno::PERM) => {
                let st = rustix::fs::stat(path).ok();
                let gid = st.as_ref().map(|st| st.st_gid);
                let mode = st.map(|st| st.st_mode & 0o7777);
                let group = gid.and_then(group_name);
                return Err(OpenError::PermissionDenied { gid, group, mode });
            }
            Err(e) => return Err(OpenError::Os(from_rustix(e))),
        }
    }
}

/// `Ok` for a character device's mode, else the kind of file it is.
fn char_device(mode: u32) -> Result<(), OpenError> {
    match file_kind(mode) {
        FileKind::CharDevice => Ok(()),
        kind => Err(OpenError::NotCharDevice(kind)),
    }
}

/// The [`FileKind`] of an `st_mode`.
#[must_use]
pub fn file_kind(mode: u32) -> FileKind {
    match rustix::fs::FileType::from_raw_mode(mode) {
        rustix::fs::FileType::RegularFile => FileKind::Regular,
        rustix::fs::FileType::Directory => FileKind::Directory,
        rustix::fs::FileType::BlockDevice => FileKind::BlockDevice,
        rustix::fs::FileType::CharacterDevice => FileKind::CharDevice,
        rustix::fs::FileType::Fifo => FileKind::Fifo,
        rustix::fs::FileType::Socket => FileKind::Socket,
        rustix::fs::FileType::Symlink => FileKind::Symlink,
        _ => FileKind::Other,
    }
}

/// Resolves a group id to its name by scanning `/etc/group` (no libc, no allocation).
#[must_use]
pub fn group_name(gid: u32) -> Option<heapless::String<32>> {
    let fd =
        rustix::fs::open("/etc/group", OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let mut scanner = LineScanner::default();
    let mut chunk = [0u8; 4096];
    loop {
        let n = match rustix::io::read(&fd, &mut chunk) {
            Ok(0) => return scanner.finish(gid),
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return None,
        };
        if let Some(name) = scanner.feed(chunk.get(..n).unwrap_or_default(), gid) {
            return Some(name);
        }
    }
}

/// Splits a byte stream into lines (each up to 512 bytes; longer lines are skipped) and looks
/// for a `name:password:gid:members` entry with the wanted gid.
struct LineScanner {
    line: [u8; 512],
    len: usize,
    overlong: bool,
}

impl Default for LineScanner {
    fn default() -> Self {
        Self { line: [0; 512], len: 0, overlong: false }
    }
}

impl LineScanner {
    fn feed(&mut self, bytes: &[u8], gid: u32) -> Option<heapless::String<32>> {
        for &b in bytes {
            if b == b'\n' {
                let found = self.finish(gid);
                self.len = 0;
                self.overlong = false;
                if found.is_some() {
                    return found;
                }
            } else if let Some(slot) = self.line.get_mut(self.len) {
                *slot = b;
                self.len += 1;
            } else {
                self.overlong = true;
            }
        }
        None
    }

    fn finish(&self, gid: u32) -> Option<heapless::String<32>> {
        if self.overlong {
            return None;
        }
        parse_group_line(self.line.get(..self.len)?, gid)
    }
}

fn parse_group_line(line: &[u8], gid: u32) -> Option<heapless::String<32>> {
    let mut fields = line.split(|&b| b == b':');
    let name = fields.next()?;
    let _password = fields.next()?;
    let id = core::str::from_utf8(fields.next()?).ok()?.parse::<u32>().ok()?;
    if id != gid {
        return None;
    }
    let mut out = heapless::String::new();
    out.push_str(core::str::from_utf8(name).ok()?).ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_groups_across_chunk_boundaries() {
        let text = b"root:x:0:\nvideo:x:44:alice\nrender:x:110:bob,alice\n";
        for split in 0..text.len() {
            let mut s = LineScanner::default();
            let (a, b) = text.split_at(split);
            let found = s.feed(a, 110).or_else(|| s.feed(b, 110)).or_else(|| s.finish(110));
            assert_eq!(found.as_deref(), Some("render"), "split at {split}");
        }
        let mut s = LineScanner::default();
        assert_eq!(s.feed(b"video:x:44:\nbroken line\n::x\n", 7), None);
        assert_eq!(s.feed(b"last:x:7:", 7), None);
        assert_eq!(s.finish(7).as_deref(), Some("last"));
    }

    #[test]
    fn missing_device_is_reported_as_not_present() {
        assert_eq!(
            open_device("/dev/hsakmt-test-no-such-node").unwrap_err(),
            OpenError::NotPresent
        );
    }

    /// What is at the device path decides the error, before anything is opened: a FIFO (whose
    /// open would block), a regular file, a directory, a block device, a character device
    /// without a driver.
    #[test]
    fn only_a_character_device_with_a_driver_opens() {
        use rustix::fs::{CWD, FileType, makedev, mknodat};
        let dir = std::env::temp_dir().join(format!("hsakmt-linux-dev-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let at = |name: &str| dir.join(name).to_str().unwrap().to_string();
        let mode = Mode::from_raw_mode(0o666);
        mknodat(CWD, at("fifo").as_str(), FileType::Fifo, mode, 0).unwrap();
        std::fs::write(at("file"), "").unwrap();
        assert_eq!(open_device(&at("fifo")).unwrap_err(), OpenError::NotCharDevice(FileKind::Fifo));
        assert_eq!(
            open_device(&at("file")).unwrap_err(),
            OpenError::NotCharDevice(FileKind::Regular)
        );
        assert_eq!(
            open_device(dir.to_str().unwrap()).unwrap_err(),
            OpenError::NotCharDevice(FileKind::Directory)
        );
        // Device nodes need CAP_MKNOD: checked when the test may create them. Major 7 is the
        // loop driver's block major; character major 511 is unassigned, so nothing is bound.
        if mknodat(CWD, at("blk").as_str(), FileType::BlockDevice, mode, makedev(7, 250)).is_ok() {
            assert_eq!(
                open_device(&at("blk")).unwrap_err(),
                OpenError::NotCharDevice(FileKind::BlockDevice)
            );
        }
        if mknodat(CWD, at("chr").as_str(), FileType::CharacterDevice, mode, makedev(511, 0))
            .is_ok()
        {
            assert!(
                matches!(open_device(&at("chr")).unwrap_err(), OpenError::NoDriver(_)),
                "a node without a driver"
            );
            assert!(open_device("/dev/null").is_ok());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn root_group_resolves() {
        // Every Linux system has group 0.
        assert_eq!(group_name(0).as_deref(), Some("root"));
    }
}
