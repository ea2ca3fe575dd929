//! Opening `/dev/kfd` with errors a person can act on.

use hsakmt_core::platform::OpenError;
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};

use crate::errno::from_rustix;

/// The KFD character device.
pub const KFD_DEVICE: &str = "/dev/kfd";

/// Opens `path` read-write (close-on-exec), retrying on `EINTR`.
///
/// # Errors
/// [`OpenError::NotPresent`] when the node does not exist, [`OpenError::PermissionDenied`]
/// (with the owning group, resolved through `/etc/group`) on `EACCES`/`EPERM`, else
/// [`OpenError::Os`].
pub fn open_device(path: &str) -> Result<OwnedFd, OpenError> {
    loop {
        match rustix::fs::open(path, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()) {
            Ok(fd) => return Ok(fd),
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NODEV | rustix::io::Errno::NXIO) => {
                return Err(OpenError::NotPresent);
            }
            Err(rustix::io::Errno::ACCESS | rustix::io::Errno::PERM) => {
                let gid = rustix::fs::stat(path).ok().map(|st| st.st_gid);
                let group = gid.and_then(group_name);
                return Err(OpenError::PermissionDenied { gid, group });
            }
            Err(e) => return Err(OpenError::Os(from_rustix(e))),
        }
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

    #[test]
    fn root_group_resolves() {
        // Every Linux system has group 0.
        assert_eq!(group_name(0).as_deref(), Some("root"));
    }
}
