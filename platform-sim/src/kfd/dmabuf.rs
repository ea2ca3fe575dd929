//! The simulated kernel's dma-bufs: an exported buffer's pages, behind a real descriptor of
//! the process.
//!
//! `EXPORT_DMABUF` hands out a descriptor the application owns, as amdkfd does: it may pass it
//! to `IMPORT_DMABUF`/`GET_DMABUF_INFO`, duplicate it, and `close(2)` it. The simulator cannot
//! create a dma-buf file, so each export is an empty `memfd` (`memfd_create`, close-on-exec as
//! the export asks) standing for it, and the dma-buf's pages are a second mapping of the
//! buffer's pages kept beside it. A descriptor names a dma-buf when it refers to that memfd —
//! the same file (device and inode, through `/proc/self/fd`), whatever its number, so a `dup`
//! works too. The simulator keeps the descriptor it created and closes it when the library
//! closes the dma-buf (`close_fd`, hsakmt-rs's `hsakmt_rs_close_dmabuf`); when the application
//! closed it itself (kfdtest's `ExportDMABufTest`), the simulator notices that no descriptor of
//! the process refers to the file any more and lets the dma-buf go, without closing anything
//! (the number may belong to another file by then).

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};

use hsakmt_core::error::Errno;
use hsakmt_hostmem::HostMapping;
use rustix::fs::{MemfdFlags, memfd_create, stat};

/// A file's identity: device and inode.
type FileId = (u64, u64);

/// A simulated dma-buf.
#[derive(Debug)]
pub(crate) struct DmaBuf {
    /// The exported pages (a second mapping: they outlive the buffer).
    pub(crate) memory: HostMapping,
    pub(crate) size: u64,
    pub(crate) gpu_id: u32,
    pub(crate) flags: u32,
    /// The descriptor handed out, while the simulator still owns its number (`None` once the
    /// application closed that number itself).
    fd: Option<OwnedFd>,
}

/// The dma-bufs of the process, by the identity of their memfds.
#[derive(Debug, Default)]
pub(crate) struct DmaBufs {
    by_file: HashMap<FileId, DmaBuf>,
}

/// The file descriptor `fd` of this process refers to (`None`: not open).
fn file_of(fd: u32) -> Option<FileId> {
    let st = stat(format!("/proc/self/fd/{fd}")).ok()?;
    Some((st.st_dev, st.st_ino))
}

/// The files every open descriptor of this process refers to.
fn open_files() -> Vec<FileId> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).filter_map(file_of).collect()
}

impl DmaBufs {
    /// A new dma-buf of `memory`: returns its descriptor (close-on-exec).
    ///
    /// # Errors
    /// The errno of `memfd_create` or `stat` (`EMFILE` when the process has no descriptor left).
    pub(crate) fn export(
        &mut self,
        memory: HostMapping,
        size: u64,
        gpu_id: u32,
        flags: u32,
    ) -> Result<u32, Errno> {
        self.prune();
        let errno = |e: rustix::io::Errno| Errno(e.raw_os_error());
        let fd = memfd_create("hsakmt-sim-dmabuf", MemfdFlags::CLOEXEC).map_err(errno)?;
        let number = u32::try_from(fd.as_raw_fd()).map_err(|_| Errno::EBADF)?;
        let id = file_of(number).ok_or(Errno::EBADF)?;
        self.by_file.insert(id, DmaBuf { memory, size, gpu_id, flags, fd: Some(fd) });
        Ok(number)
    }

    /// The dma-buf descriptor `fd` refers to.
    ///
    /// # Errors
    /// `EBADF` when `fd` is not open or is not a dma-buf.
    pub(crate) fn get(&self, fd: u32) -> Result<&DmaBuf, Errno> {
        self.by_file.get(&file_of(fd).ok_or(Errno::EBADF)?).ok_or(Errno::EBADF)
    }

    /// Closes `fd` when it is the descriptor a dma-buf was handed out as (the dma-buf goes);
    /// returns whether it was.
    pub(crate) fn close(&mut self, fd: u32) -> bool {
        let Some(id) = file_of(fd) else { return false };
        let ours = self
            .by_file
            .get(&id)
            .is_some_and(|d| d.fd.as_ref().is_some_and(|f| f.as_raw_fd().cast_unsigned() == fd));
        if ours {
            // Dropping the entry closes the descriptor.
            self.by_file.remove(&id);
        }
        ours
    }

    /// Forgets the dma-bufs no descriptor of the process refers to any more, and gives up the
    /// numbers the application closed itself (they are not ours to close).
    fn prune(&mut self) {
        let open = open_files();
        self.by_file.retain(|id, d| {
            if d.fd.as_ref().is_some_and(|f| file_of(f.as_raw_fd().cast_unsigned()) != Some(*id))
                && let Some(f) = d.fd.take()
            {
                // Closed behind our back: the number is someone else's now.
                std::mem::forget(f);
            }
            open.contains(id)
        });
    }

    /// Live dma-bufs: those a descriptor of the process still refers to.
    pub(crate) fn count(&self) -> usize {
        let open = open_files();
        self.by_file.keys().filter(|id| open.contains(id)).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsakmt_hostmem::map_shared_anywhere;

    #[test]
    fn descriptors_are_the_process_own_and_closing_them_ends_the_dma_buf() {
        let mut t = DmaBufs::default();
        let pages = map_shared_anywhere(8192).unwrap();
        let fd = t.export(pages.duplicate(None).unwrap(), 8192, 7, 1).unwrap();
        assert!(file_of(fd).is_some(), "a real descriptor");
        assert_eq!(t.get(fd).map(|d| (d.size, d.gpu_id, d.flags)), Ok((8192, 7, 1)));
        assert_eq!(t.count(), 1);
        assert_eq!(t.get(0).err(), Some(Errno::EBADF), "not a dma-buf");
        assert_eq!(t.get(u32::MAX).err(), Some(Errno::EBADF), "not open");
        assert!(!t.close(0), "not ours to close");
        assert!(t.close(fd));
        assert!(file_of(fd).is_none_or(|id| !t.by_file.contains_key(&id)), "closed");
        assert_eq!((t.count(), t.get(fd).is_err()), (0, true));
    }

    #[test]
    fn a_dup_names_the_same_dma_buf_and_one_the_application_closed_goes() {
        let mut t = DmaBufs::default();
        let pages = map_shared_anywhere(4096).unwrap();
        let fd = t.export(pages.duplicate(None).unwrap(), 4096, 1, 0).unwrap();
        let id = file_of(fd).unwrap();
        let dup = rustix::io::dup(t.by_file[&id].fd.as_ref().unwrap()).unwrap();
        let dup_number = dup.as_raw_fd().cast_unsigned();
        assert_eq!(t.get(dup_number).map(|d| d.size), Ok(4096), "any descriptor of the file");
        assert!(!t.close(dup_number), "only the number handed out is closed by the library");
        // The application closes the number it was given: the dup keeps the dma-buf.
        drop(t.by_file.get_mut(&id).unwrap().fd.take());
        assert_eq!(t.count(), 1);
        drop(dup);
        assert_eq!(t.count(), 0, "no descriptor refers to it");
        let again = t.export(pages.duplicate(None).unwrap(), 4096, 1, 0).unwrap();
        assert_eq!(t.by_file.len(), 1, "an export forgets the dma-bufs whose files are closed");
        assert!(t.close(again));
    }
}
