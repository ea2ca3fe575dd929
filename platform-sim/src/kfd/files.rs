//! The simulated process's descriptors other than `/dev/kfd`, render nodes and dma-bufs: the
//! pipes a debugger creates for `DBG_TRAP_ENABLE` and the SMI event streams
//! `AMDKFD_IOC_SMI_EVENTS` opens. They are not real descriptors (numbers from
//! [`FILE_FD_BASE`]); reading, writing and polling them behaves as the kernel's files do:
//!
//! - a pipe holds up to [`PIPE_CAPACITY`] bytes; reading an empty pipe is `EAGAIN` (the pipe is
//!   non-blocking, as a debugger creates it) — or end of file (0) once its write end is closed,
//!   which also makes it readable to `poll` — writing a full one `EAGAIN`, writing one whose
//!   read end is closed `EPIPE`; the read end reads, the write end writes (`EBADF` otherwise);
//!   descriptors are the lowest free numbers, as the kernel's;
//! - an SMI stream (`kfd_smi_events.c`) is a FIFO of at most [`SMI_FIFO_SIZE`] bytes of event
//!   lines; an event that does not fit is dropped; reading an empty stream is `EAGAIN`, a read
//!   takes at most [`SMI_FIFO_SIZE`] bytes; writing sets the 8-byte event mask (`EFAULT` for
//!   fewer bytes) and returns 8.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use hsakmt_core::error::Errno;

use super::lock;

/// Descriptors of pipes and SMI streams start here; they are not real descriptors.
pub const FILE_FD_BASE: u32 = 30_000;
/// Bytes a simulated pipe holds (Linux's default pipe size).
pub(crate) const PIPE_CAPACITY: usize = 65_536;
/// An SMI client's FIFO (`MAX_KFIFO_SIZE`).
pub(crate) const SMI_FIFO_SIZE: usize = 1024;

/// A byte queue with a bound, shared by the two ends of a pipe or owned by an SMI client.
#[derive(Debug)]
pub(crate) struct ByteQueue {
    bytes: Mutex<VecDeque<u8>>,
    readable: Condvar,
    capacity: usize,
    /// A pipe's read end is open.
    reader: AtomicBool,
    /// A pipe's write end is open (always for an SMI FIFO, which the kernel writes).
    writer: AtomicBool,
}

impl ByteQueue {
    fn new(capacity: usize) -> Self {
        ByteQueue {
            bytes: Mutex::new(VecDeque::new()),
            readable: Condvar::new(),
            capacity,
            reader: AtomicBool::new(true),
            writer: AtomicBool::new(true),
        }
    }

    /// An end closed: a closed writer wakes the pollers (end of file is readable).
    fn close_end(&self, reader: bool) {
        let _q = lock(&self.bytes);
        if reader {
            self.reader.store(false, Ordering::Release);
        } else {
            self.writer.store(false, Ordering::Release);
            self.readable.notify_all();
        }
    }

    fn at_eof(&self) -> bool {
        !self.writer.load(Ordering::Acquire)
    }

    /// Appends `data` if all of it fits; returns whether it did.
    pub(crate) fn push_all(&self, data: &[u8]) -> bool {
        let mut q = lock(&self.bytes);
        if self.capacity - q.len() < data.len() {
            return false;
        }
        q.extend(data);
        self.readable.notify_all();
        true
    }

    /// Appends as much of `data` as fits; returns how much.
    fn push_some(&self, data: &[u8]) -> usize {
        let mut q = lock(&self.bytes);
        let n = data.len().min(self.capacity - q.len());
        q.extend(data.get(..n).unwrap_or_default());
        if n > 0 {
            self.readable.notify_all();
        }
        n
    }

    fn pop(&self, buf: &mut [u8], most: usize) -> usize {
        let mut q = lock(&self.bytes);
        let n = buf.len().min(q.len()).min(most);
        for (slot, b) in buf.iter_mut().zip(q.drain(..n)) {
            *slot = b;
        }
        n
    }

    fn wait_readable(&self, timeout_ms: i32) -> bool {
        let deadline =
            u64::try_from(timeout_ms).ok().map(|ms| Instant::now() + Duration::from_millis(ms));
        let mut q = lock(&self.bytes);
        loop {
            if !q.is_empty() || self.at_eof() {
                return true;
            }
            let left = match deadline {
                None => Duration::from_secs(1),
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(l) if !l.is_zero() => l,
                    _ => return false,
                },
            };
            q = self
                .readable
                .wait_timeout(q, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }
}

/// One SMI client (`struct kfd_smi_client`): its device, its FIFO and its event mask.
#[derive(Debug)]
pub(crate) struct SmiClient {
    pub(crate) gpu_id: u32,
    pub(crate) pid: u32,
    pub(crate) events: AtomicU64,
    pub(crate) fifo: ByteQueue,
}

impl SmiClient {
    pub(crate) fn new(gpu_id: u32, pid: u32) -> Self {
        SmiClient { gpu_id, pid, events: AtomicU64::new(0), fifo: ByteQueue::new(SMI_FIFO_SIZE) }
    }
}

/// What a descriptor is.
#[derive(Debug, Clone)]
pub(crate) enum File {
    /// The read end of a pipe.
    PipeRead(Arc<ByteQueue>),
    /// The write end of a pipe.
    PipeWrite(Arc<ByteQueue>),
    /// An SMI event stream.
    Smi(Arc<SmiClient>),
}

/// The process's descriptor table for these files.
#[derive(Debug, Default)]
pub(crate) struct Files {
    table: Mutex<BTreeMap<u32, File>>,
}

impl Files {
    fn install(&self, file: File) -> u32 {
        let mut t = lock(&self.table);
        let fd = (FILE_FD_BASE..).find(|fd| !t.contains_key(fd)).unwrap_or(u32::MAX);
        t.insert(fd, file);
        fd
    }

    /// A non-blocking pipe: `(read, write)`.
    pub(crate) fn pipe(&self) -> (u32, u32) {
        let q = Arc::new(ByteQueue::new(PIPE_CAPACITY));
        (self.install(File::PipeRead(q.clone())), self.install(File::PipeWrite(q)))
    }

    /// Installs an SMI stream.
    pub(crate) fn smi(&self, client: Arc<SmiClient>) -> u32 {
        self.install(File::Smi(client))
    }

    /// The file behind `fd`.
    pub(crate) fn get(&self, fd: u32) -> Option<File> {
        lock(&self.table).get(&fd).cloned()
    }

    /// Closes `fd`; returns whether it was one of these files.
    pub(crate) fn close(&self, fd: u32) -> bool {
        let removed = lock(&self.table).remove(&fd);
        match &removed {
            Some(File::PipeRead(q)) => q.close_end(true),
            Some(File::PipeWrite(q)) => q.close_end(false),
            Some(File::Smi(_)) | None => {}
        }
        removed.is_some()
    }

    /// How many are open.
    pub(crate) fn count(&self) -> usize {
        lock(&self.table).len()
    }

    /// Closes every file (a forked child's copies, or the end of the process's state).
    pub(crate) fn clear(&self) {
        let fds: Vec<u32> = lock(&self.table).keys().copied().collect();
        for fd in fds {
            self.close(fd);
        }
    }

    pub(crate) fn poll(&self, fd: u32, timeout_ms: i32) -> Result<bool, Errno> {
        match self.get(fd).ok_or(Errno::EBADF)? {
            File::PipeRead(q) => Ok(q.wait_readable(timeout_ms)),
            File::Smi(c) => Ok(c.fifo.wait_readable(timeout_ms)),
            // A pipe's write end never has data to read.
            File::PipeWrite(_) => Ok(false),
        }
    }

    pub(crate) fn read(&self, fd: u32, buf: &mut [u8]) -> Result<usize, Errno> {
        let (q, most) = match self.get(fd).ok_or(Errno::EBADF)? {
            File::PipeRead(q) => (q, PIPE_CAPACITY),
            File::Smi(c) => return read_queue(&c.fifo, buf, SMI_FIFO_SIZE),
            File::PipeWrite(_) => return Err(Errno::EBADF),
        };
        read_queue(&q, buf, most)
    }

    pub(crate) fn write(&self, fd: u32, data: &[u8]) -> Result<usize, Errno> {
        match self.get(fd).ok_or(Errno::EBADF)? {
            File::PipeWrite(q) if !q.reader.load(Ordering::Acquire) => Err(Errno::EPIPE),
            File::PipeWrite(q) => match q.push_some(data) {
                0 if !data.is_empty() => Err(Errno::EAGAIN),
                n => Ok(n),
            },
            File::Smi(c) => {
                // kfd_smi_ev_write: at least 8 bytes, the first 8 are the mask.
                let mask: [u8; 8] =
                    data.get(..8).and_then(|b| b.try_into().ok()).ok_or(Errno::EFAULT)?;
                c.events.store(u64::from_le_bytes(mask), Ordering::Release);
                Ok(8)
            }
            File::PipeRead(_) => Err(Errno::EBADF),
        }
    }
}

fn read_queue(q: &ByteQueue, buf: &mut [u8], most: usize) -> Result<usize, Errno> {
    match q.pop(buf, most) {
        0 if !buf.is_empty() && !q.at_eof() => Err(Errno::EAGAIN),
        n => Ok(n),
    }
}

#[cfg(test)]
mod tests;
