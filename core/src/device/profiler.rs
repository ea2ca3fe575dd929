//! The kernel's profiler interface (`AMDKFD_IOC_PROFILER`, KFD 1.23): what a profiler, not the
//! thunk, uses to hold a GPU while it programs the performance counters through packets on its
//! own queues (see [`crate::pmc`]). libhsakmt has no call for it.

use super::{Error, Kfd};
use crate::device::MemoryStorage;
use crate::platform::{Ioctl, Platform};
use crate::uapi::*;

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    fn profiler(&self, op: u32, op_args: kfd_ioctl_profiler_args_union) -> Result<u32, Error> {
        self.check_open()?;
        self.require_minor("profiler", since::PROFILER)?;
        let mut args = kfd_ioctl_profiler_args { op, op_args };
        self.ioctl(&mut Ioctl::Profiler(&mut args))?;
        Ok(args.op_args.version())
    }

    /// `KFD_IOC_PROFILER_VERSION`: the profiler interface's version
    /// (`KFD_IOC_PROFILER_VERSION_NUM`).
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`]; [`Error::NotSupported`] before KFD
    /// 1.23; [`Error::Ioctl`].
    pub fn profiler_version(&self) -> Result<u32, Error> {
        self.profiler(KFD_IOC_PROFILER_VERSION, kfd_ioctl_profiler_args_union::default())
    }

    /// `KFD_IOC_PROFILER_PMC` with `lock`: holds GPU `node` for this process's profiling and,
    /// with `perfcount`, forces performance counting on for its queues.
    ///
    /// # Errors
    /// As [`Kfd::profiler_version`]; [`Error::InvalidNode`]; [`Error::Ioctl`]: `EPERM`
    /// (neither `CAP_PERFMON` nor `CAP_SYS_ADMIN`), `EALREADY` (already held), `EINVAL`.
    pub fn profiler_lock(&self, node: u32, perfcount: bool) -> Result<(), Error> {
        let gpu_id = self.gpu_id_of(node)?;
        let pmc = kfd_ioctl_pmc_settings { gpu_id, lock: 1, perfcount_enable: perfcount.into() };
        self.profiler(KFD_IOC_PROFILER_PMC, pmc.into()).map(drop)
    }

    /// `KFD_IOC_PROFILER_PMC` without `lock`: lets GPU `node` go.
    ///
    /// # Errors
    /// As [`Kfd::profiler_lock`] (`EINVAL` when the process does not hold it).
    pub fn profiler_unlock(&self, node: u32) -> Result<(), Error> {
        let gpu_id = self.gpu_id_of(node)?;
        let pmc = kfd_ioctl_pmc_settings { gpu_id, lock: 0, perfcount_enable: 0 };
        self.profiler(KFD_IOC_PROFILER_PMC, pmc.into()).map(drop)
    }

    /// `KFD_IOC_PROFILER_PTL_CONTROL`: turns GPU `node`'s peak-TOPS limiter on or off.
    ///
    /// # Errors
    /// As [`Kfd::profiler_version`]; [`Error::InvalidNode`]; [`Error::Ioctl`]: `EOPNOTSUPP`
    /// (a GPU without the limiter), `ENODEV`.
    pub fn profiler_ptl(&self, node: u32, enable: bool) -> Result<(), Error> {
        let gpu_id = self.gpu_id_of(node)?;
        let ptl = kfd_ioctl_ptl_control { gpu_id, enable: enable.into() };
        self.profiler(KFD_IOC_PROFILER_PTL_CONTROL, ptl.into()).map(drop)
    }
}
