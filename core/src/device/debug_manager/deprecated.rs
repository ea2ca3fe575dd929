//! The four deprecated debugger calls of libhsakmt (`hsaKmtDbgRegister`,
//! `hsaKmtDbgUnregister`, `hsaKmtDbgWavefrontControl`, `hsaKmtDbgAddressWatch`), answered as
//! upstream answers them: after upstream's own checks (an open device, a valid node, at most
//! [`MAX_WATCH_POINTS`] watch points) they issue the `AMDKFD_IOC_DBG_*_DEPRECATED` ioctls, which
//! every kernel since the debugger API of 1.13 refuses with `EPERM`; upstream then returns
//! `HSAKMT_STATUS_ERROR` (its C wrapper maps [`Error::Ioctl`] of these calls so). The
//! variable-size descriptions the old calls sent are never read by current kernels and are not
//! sent.

use super::{Error, Kfd};
use crate::device::MemoryStorage;
use crate::platform::{Ioctl, Platform};
use crate::uapi::*;

/// Most watch points `hsaKmtDbgAddressWatch` accepts (`MAX_ALLOWED_NUM_POINTS` of libhsakmt's
/// `kfd_ioctl.h` copy).
pub const MAX_WATCH_POINTS: u32 = 100;

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// `hsaKmtDbgRegister`.
    ///
    /// # Errors
    /// [`Error::InvalidNode`]; [`Error::Ioctl`] (`EPERM` on current kernels).
    pub fn dbg_register(&self, node: u32) -> Result<(), Error> {
        let mut a = kfd_ioctl_dbg_register_args { gpu_id: self.gpu_id_of(node)?, pad: 0 };
        self.ioctl(&mut Ioctl::DbgRegisterDeprecated(&mut a))
    }

    /// `hsaKmtDbgUnregister`.
    ///
    /// # Errors
    /// [`Error::InvalidNode`]; [`Error::Ioctl`] (`EPERM` on current kernels).
    pub fn dbg_unregister(&self, node: u32) -> Result<(), Error> {
        let mut a = kfd_ioctl_dbg_unregister_args { gpu_id: self.gpu_id_of(node)?, pad: 0 };
        self.ioctl(&mut Ioctl::DbgUnregisterDeprecated(&mut a))
    }

    /// `hsaKmtDbgWavefrontControl`.
    ///
    /// # Errors
    /// [`Error::InvalidNode`]; [`Error::Ioctl`] (`EPERM` on current kernels).
    pub fn dbg_wavefront_control(&self, node: u32) -> Result<(), Error> {
        let size = u32::try_from(size_of::<kfd_ioctl_dbg_wave_control_args>()).unwrap_or(0);
        let mut a = kfd_ioctl_dbg_wave_control_args {
            content_ptr: 0,
            gpu_id: self.gpu_id_of(node)?,
            buf_size_in_bytes: size,
        };
        self.ioctl(&mut Ioctl::DbgWaveControlDeprecated(&mut a))
    }

    /// `hsaKmtDbgAddressWatch` with `watch_points` points.
    ///
    /// # Errors
    /// [`Error::InvalidNode`]; [`Error::TooManyWatchPoints`] past [`MAX_WATCH_POINTS`];
    /// [`Error::Ioctl`] (`EPERM` on current kernels).
    pub fn dbg_address_watch(&self, node: u32, watch_points: u32) -> Result<(), Error> {
        let gpu_id = self.gpu_id_of(node)?;
        if watch_points > MAX_WATCH_POINTS {
            return Err(Error::TooManyWatchPoints { given: watch_points });
        }
        let size = u32::try_from(size_of::<kfd_ioctl_dbg_address_watch_args>()).unwrap_or(0);
        let mut a =
            kfd_ioctl_dbg_address_watch_args { content_ptr: 0, gpu_id, buf_size_in_bytes: size };
        self.ioctl(&mut Ioctl::DbgAddressWatchDeprecated(&mut a))
    }
}
