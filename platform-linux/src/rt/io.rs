//! stdout and stderr as [`core::fmt::Write`] over `write(2)`, with a small stack buffer.

use core::fmt;

use rustix::fd::BorrowedFd;

/// Bytes a [`Writer`] gathers before it writes.
const BUFFER: usize = 256;

/// A buffered writer on file descriptor 1 or 2. It writes when its buffer is full, after each
/// newline, on [`flush`](Writer::flush) and when dropped, so lines reach the descriptor
/// whole and in order (when shorter than the buffer).
pub struct Writer {
    fd: Stdio,
    buf: [u8; BUFFER],
    len: usize,
}

/// The two descriptors a [`Writer`] may write to.
#[derive(Clone, Copy)]
enum Stdio {
    Out = linux_raw_sys::general::STDOUT_FILENO as isize,
    Err = linux_raw_sys::general::STDERR_FILENO as isize,
}

/// A writer on stdout (descriptor 1).
#[must_use]
pub const fn stdout() -> Writer {
    Writer { fd: Stdio::Out, buf: [0; BUFFER], len: 0 }
}

/// A writer on stderr (descriptor 2).
#[must_use]
pub const fn stderr() -> Writer {
    Writer { fd: Stdio::Err, buf: [0; BUFFER], len: 0 }
}

impl fmt::Debug for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("fd", &(self.fd as i32))
            .field("buffered", &self.len)
            .finish()
    }
}

impl Writer {
    /// Writes what is buffered.
    ///
    /// # Errors
    /// The errno of a failing `write` (the buffer is emptied anyway); `EIO` when the descriptor
    /// accepts no bytes.
    pub fn flush(&mut self) -> Result<(), rustix::io::Errno> {
        let len = core::mem::take(&mut self.len);
        write_all(self.fd, self.buf.get(..len).unwrap_or_default())
    }

    fn push(&mut self, bytes: &[u8]) -> Result<(), rustix::io::Errno> {
        if self.len + bytes.len() > BUFFER {
            self.flush()?;
        }
        if bytes.len() >= BUFFER {
            return write_all(self.fd, bytes);
        }
        let end = self.len + bytes.len();
        if let Some(dst) = self.buf.get_mut(self.len..end) {
            dst.copy_from_slice(bytes);
            self.len = end;
        }
        Ok(())
    }
}

impl fmt::Write for Writer {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let bytes = s.as_bytes();
        let r = match bytes.iter().rposition(|&b| b == b'\n') {
            // Everything up to the last newline goes out now, the rest is kept.
            Some(i) => {
                let (line, rest) = bytes.split_at(i + 1);
                self.push(line).and_then(|()| self.flush()).and_then(|()| self.push(rest))
            }
            None => self.push(bytes),
        };
        r.map_err(|_| fmt::Error)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Writes all of `bytes` to `fd`, retrying partial writes and `EINTR`.
fn write_all(fd: Stdio, mut bytes: &[u8]) -> Result<(), rustix::io::Errno> {
    // SAFETY: descriptors 1 and 2 are the standard streams the parent process set up; the
    // runtime never closes them, and the borrow lasts only for the `write` calls below. (If the
    // parent left one closed, `write` fails with EBADF, or writes to whatever file the image
    // opened under that number, which is what stdout means in POSIX; no memory is touched.)
    let fd = unsafe { BorrowedFd::borrow_raw(fd as i32) };
    while !bytes.is_empty() {
        match rustix::io::write(fd, bytes) {
            Ok(0) => return Err(rustix::io::Errno::IO),
            Ok(n) => bytes = bytes.get(n..).unwrap_or_default(),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
