//! `AMDKFD_IOC_RUNTIME_ENABLE` (`kfd_ioctl_runtime_enable`, `runtime_enable`,
//! `runtime_disable` of `kfd_chardev.c`):
//!
//! - enable: `EBUSY` unless the runtime state is disabled; `EEXIST` when the process already has
//!   an active queue; otherwise the state becomes enabled with the caller's `r_debug` and trap
//!   temporary setting. With a debugger attached the kernel raises `EC_PROCESS_RUNTIME` and
//!   blocks until the debugger answers with `SEND_RUNTIME_EVENT(EC_PROCESS_RUNTIME)`.
//! - disable (mode 0): always succeeds; with a debugger attached it raises
//!   `EC_PROCESS_RUNTIME` and blocks the same way.
//! - `capabilities_mask` is not written by the kernel: the caller gets back what it passed.

use hsakmt_core::error::Errno;
use hsakmt_core::uapi::{
    DEBUG_RUNTIME_STATE_DISABLED, DEBUG_RUNTIME_STATE_ENABLED, EC_PROCESS_RUNTIME, KFD_EC_MASK,
    KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK,
    kfd_ioctl_runtime_enable_args,
};

use super::state::{Source, raise_locked};
use crate::kfd::KfdModel;

impl KfdModel {
    /// `AMDKFD_IOC_RUNTIME_ENABLE`.
    pub(crate) fn runtime_enable(&self, a: &kfd_ioctl_runtime_enable_args) -> Result<(), Errno> {
        if a.mode_mask & KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK != 0 {
            let ttmp = a.mode_mask & KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK != 0;
            self.runtime_on(a.r_debug, ttmp)
        } else {
            self.runtime_off();
            Ok(())
        }
    }

    fn runtime_on(&self, r_debug: u64, ttmp: bool) -> Result<(), Errno> {
        // `qpd.queue_count`: active queues.
        let active =
            self.gpu.queue_ids().iter().any(|q| self.gpu.queue(*q).is_some_and(|q| q.is_active()));
        let mut s = self.debug.lock();
        if s.runtime.runtime_state != DEBUG_RUNTIME_STATE_DISABLED {
            return Err(Errno::EBUSY);
        }
        if active {
            return Err(Errno::EEXIST);
        }
        s.runtime.runtime_state = DEBUG_RUNTIME_STATE_ENABLED;
        s.runtime.r_debug = r_debug;
        s.runtime.ttmp_setup = u32::from(ttmp);
        if s.enabled {
            raise_locked(&mut s, &self.files, KFD_EC_MASK(EC_PROCESS_RUNTIME), Source::Process);
            let mut s = self.debug.wait_until(s, |s| s.runtime_sema > 0);
            s.runtime_sema -= 1;
        }
        Ok(())
    }

    fn runtime_off(&self) {
        let mut s = self.debug.lock();
        let was_enabled = s.runtime.runtime_state == DEBUG_RUNTIME_STATE_ENABLED;
        s.runtime.runtime_state = DEBUG_RUNTIME_STATE_DISABLED;
        s.runtime.r_debug = 0;
        if s.enabled {
            if was_enabled {
                drop(s);
                self.deactivate_debug();
                s = self.debug.lock();
            }
            raise_locked(&mut s, &self.files, KFD_EC_MASK(EC_PROCESS_RUNTIME), Source::Process);
            s = self.debug.wait_until(s, |s| s.runtime_sema > 0);
            s.runtime_sema -= 1;
        }
        s.runtime.ttmp_setup = 0;
    }
}
