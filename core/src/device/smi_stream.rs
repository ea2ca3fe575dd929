//! SMI event streams (`hsaKmtOpenSMI`, `AMDKFD_IOC_SMI_EVENTS`, KFD 1.3): a descriptor per GPU
//! that delivers the kernel's event lines; [`Kfd::read_smi_events`] parses them
//! ([`crate::smi`]).

use super::{Error, Kfd};
use crate::device::MemoryStorage;
use crate::platform::{Ioctl, Platform};
use crate::smi::{SMI_FIFO_SIZE, SmiLines, SmiMask};
use crate::uapi::{kfd_ioctl_smi_events_args, since};

/// An open SMI event stream of one GPU. Close it with [`Kfd::close_smi`] (dropping it leaks the
/// descriptor until the process ends).
#[derive(Debug, PartialEq, Eq)]
#[must_use]
pub struct SmiStream {
    fd: u32,
    node: u32,
}

impl SmiStream {
    /// The descriptor (what `hsaKmtOpenSMI` returns), for the caller's own poll loop.
    #[must_use]
    pub const fn fd(&self) -> u32 {
        self.fd
    }

    /// The GPU's user node id.
    #[must_use]
    pub const fn node(&self) -> u32 {
        self.node
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// `hsaKmtOpenSMI`: opens an SMI event stream of GPU `node`, with no event enabled.
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`]; [`Error::NotSupported`] before KFD 1.3;
    /// [`Error::InvalidNode`]; [`Error::Ioctl`].
    pub fn open_smi(&self, node: u32) -> Result<SmiStream, Error> {
        self.check_open()?;
        self.require_minor("SMI events", since::SMI_EVENTS)?;
        let gpuid = self.gpu_id_of(node)?;
        let mut args = kfd_ioctl_smi_events_args { gpuid, anon_fd: 0 };
        self.ioctl(&mut Ioctl::SmiEvents(&mut args))?;
        Ok(SmiStream { fd: args.anon_fd, node })
    }

    /// Chooses the events the stream receives (the kernel takes the 8-byte mask written to
    /// the descriptor; a new mask replaces the old).
    ///
    /// # Errors
    /// [`Error::Platform`] with the errno of the write.
    pub fn set_smi_events(&self, stream: &SmiStream, events: SmiMask) -> Result<(), Error> {
        self.platform.write_fd(stream.fd, &events.0.to_le_bytes()).map_err(Error::Platform)?;
        Ok(())
    }

    /// Waits up to `timeout_ms` (0: not at all, negative: forever) for events and reads what
    /// the stream holds into `buf` (the FIFO's size, so a read ends at a line boundary);
    /// returns the lines read, none when the wait timed out.
    ///
    /// # Errors
    /// [`Error::Platform`] with the errno of the poll or read.
    pub fn read_smi_events<'b>(
        &self,
        stream: &SmiStream,
        timeout_ms: i32,
        buf: &'b mut [u8; SMI_FIFO_SIZE],
    ) -> Result<SmiLines<'b>, Error> {
        if !self.platform.poll_fd(stream.fd, timeout_ms).map_err(Error::Platform)? {
            return Ok(SmiLines::new(&[]));
        }
        let n = match self.platform.read_fd(stream.fd, buf) {
            Ok(n) => n,
            // Emptied by another reader between the poll and the read.
            Err(crate::error::Errno::EAGAIN) => 0,
            Err(e) => return Err(Error::Platform(e)),
        };
        Ok(SmiLines::new(buf.get(..n).unwrap_or_default()))
    }

    /// Closes the stream.
    pub fn close_smi(&self, stream: SmiStream) {
        self.platform.close_fd(stream.fd);
    }
}
