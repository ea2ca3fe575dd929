//! Runtime enable (`AMDKFD_IOC_RUNTIME_ENABLE`, KFD 1.13) with libhsakmt's semantics
//! (`debug.c`: `hsaKmtRuntimeEnable`, `hsaKmtRuntimeDisable`, `hsaKmtGetRuntimeCapabilities`,
//! `hsaKmtCheckRuntimeDebugSupport`).
//!
//! Kernel rules (`kfd_chardev.c`): enabling twice is `EBUSY`; enabling while the process has an
//! active queue is `EEXIST`; with a debugger attached, enable and disable raise
//! `EC_PROCESS_RUNTIME` and **block until the debugger answers** with
//! `SEND_RUNTIME_EVENT(EC_PROCESS_RUNTIME)`. Disabling always succeeds. The kernel does not
//! write `capabilities_mask`.

use core::sync::atomic::{AtomicU32, Ordering};

use super::{Error, Kfd};
use crate::device::MemoryStorage;
use crate::platform::{Ioctl, Platform};
use crate::topology::Capability;
use crate::uapi::{
    KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK,
    kfd_ioctl_runtime_enable_args, since,
};

/// The capabilities mask the last successful runtime enable returned (libhsakmt's
/// `runtime_capabilities_mask`).
#[derive(Debug, Default)]
pub(crate) struct RuntimeCaps(AtomicU32);

impl RuntimeCaps {
    pub(crate) const fn new() -> Self {
        Self(AtomicU32::new(0))
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// `hsaKmtCheckRuntimeDebugSupport`: every GPU node's firmware supports the debugger
    /// (`HSA_CAP_TRAP_DEBUG_FIRMWARE_SUPPORTED`) and the kernel is 1.13 or newer. CPU-only
    /// nodes are skipped.
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`]; [`Error::NotSupported`] naming the
    /// first node without firmware support, or the kernel's version.
    pub fn check_runtime_debug_support(&self) -> Result<(), Error> {
        self.check_open()?;
        let kernel = self.session.version();
        let lacking = self.with_topology(|t| {
            t.nodes().any(|v| {
                let n = v.node();
                let cpu_only = n.cpu_cores_count().is_some_and(|c| c > 0)
                    && n.simd_count().is_none_or(|s| s == 0);
                let supported = n
                    .capability()
                    .is_some_and(|c| c.contains(Capability::TRAP_DEBUG_FIRMWARE_SUPPORTED));
                n.user_id().is_some() && !cpu_only && !supported
            })
        })?;
        if lacking {
            return Err(Error::NotSupported {
                feature: "debugger firmware on every GPU",
                needs_minor: since::DEBUGGER,
                kernel,
            });
        }
        self.require_minor("runtime enable", since::DEBUGGER)
    }

    /// `hsaKmtRuntimeEnable`: checks debugger support, then enables the runtime for debugging
    /// with the runtime's `r_debug` rendezvous address and, when `setup_ttmp`, trap temporary
    /// registers. Remembers the capabilities the kernel returns
    /// ([`Kfd::runtime_capabilities`]).
    ///
    /// With a debugger attached this blocks until the debugger acknowledges (the kernel's
    /// rule); a self-debugging process must answer from another thread.
    ///
    /// # Errors
    /// As [`Kfd::check_runtime_debug_support`]; [`Error::Ioctl`] with `EBUSY` (already
    /// enabled; libhsakmt's `UNAVAILABLE`) or `EEXIST` (queues exist).
    pub fn runtime_enable(&self, r_debug: u64, setup_ttmp: bool) -> Result<(), Error> {
        self.check_runtime_debug_support()?;
        let mut args = kfd_ioctl_runtime_enable_args {
            r_debug,
            mode_mask: KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK
                | if setup_ttmp { KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK } else { 0 },
            capabilities_mask: 0,
        };
        self.ioctl(&mut Ioctl::RuntimeEnable(&mut args))?;
        self.runtime_caps.0.store(args.capabilities_mask, Ordering::Release);
        Ok(())
    }

    /// `hsaKmtRuntimeDisable`: checks debugger support, then disables the runtime (blocking,
    /// like enable, while a debugger is attached).
    ///
    /// # Errors
    /// As [`Kfd::check_runtime_debug_support`]; [`Error::Ioctl`].
    pub fn runtime_disable(&self) -> Result<(), Error> {
        self.check_runtime_debug_support()?;
        let mut args = kfd_ioctl_runtime_enable_args::default();
        self.ioctl(&mut Ioctl::RuntimeEnable(&mut args))
    }

    pub(crate) fn runtime_caps_reset(&self) {
        self.runtime_caps.0.store(0, Ordering::Release);
    }

    /// `hsaKmtGetRuntimeCapabilities`: the capabilities mask of the last successful runtime
    /// enable (0 before one; current kernels never set a bit).
    pub fn runtime_capabilities(&self) -> u32 {
        self.runtime_caps.0.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uapi::KfdVersion;
    use std::string::ToString;

    #[test]
    fn a_missing_feature_on_a_new_enough_kernel_is_not_blamed_on_the_version() {
        let lacking = |minor| Error::NotSupported {
            feature: "debugger firmware on every GPU",
            needs_minor: since::DEBUGGER,
            kernel: KfdVersion { major: 1, minor },
        };
        assert_eq!(
            lacking(23).to_string(),
            "not supported: this machine lacks debugger firmware on every GPU"
        );
        assert_eq!(
            lacking(12).to_string(),
            "debugger firmware on every GPU needs KFD interface 1.13, the kernel has 1.12"
        );
    }
}
