//! The exported functions: every function of `hsakmt.h`, plus `hsaKmtQueueRingDoorbell` and the
//! simulator accounting export of `hsakmt_rs.h`.
//!
//! Each checks what upstream checks, in the same order, and answers with the status upstream
//! answers in the same case (see `capi/README.md` for the few deliberate differences, and for
//! the calls without a kernel interface). Where upstream dereferences a NULL pointer, these
//! return `HSAKMT_STATUS_INVALID_PARAMETER` instead.
//!
//! Functions are `unsafe extern "C"`: their pointer arguments must be NULL or valid for what
//! `hsakmt.h` says they point to.

mod debug;
mod event;
mod event_slots;
mod memory;
mod open;
mod pmc;
mod profile;
mod queue;
mod queue_slots;
mod register;
mod status;
mod svm;
mod system;
mod topology;

pub use debug::*;
pub use event::*;
pub use memory::*;
pub use open::*;
pub use pmc::*;
pub use profile::*;
pub use queue::*;
pub use register::*;
pub use svm::*;
pub use system::*;
pub use topology::*;

use crate::device::{Device, device};
use crate::types::{HSAKMT_STATUS, HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED};

/// The device if it was opened in this process, else upstream's "not opened" status (the
/// facade checks open-ness and forks itself on every call).
#[inline]
fn opened() -> Result<&'static Device, HSAKMT_STATUS> {
    device().ok_or(HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED)
}

/// Returns `$status` from the enclosing function when `$ptr` is NULL.
macro_rules! require {
    ($ptr:expr, $status:expr) => {
        if $ptr.is_null() {
            return $status;
        }
    };
}
use require;

/// Unwraps a `Result<T, HSAKMT_STATUS>`, returning the status from the enclosing function.
macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(status) => return status,
        }
    };
}
use tri;

/// Runs a memory operation the way upstream's libhsakmt runs it, under its aperture lock:
/// while another thread's operation on the same memory is in flight — the facade answers
/// `Busy` rather than wait, its locks being held for bookkeeping only — this one waits for that
/// one to finish (yielding) and tries again. Two threads mapping or unmapping the same
/// registered memory at once both succeed, as with upstream (kfdtest
/// `KFDMemoryTest.MultiThreadRegisterUserptrTest`).
fn serialized<T>(
    mut op: impl FnMut() -> Result<T, hsakmt_core::device::Error>,
) -> Result<T, hsakmt_core::device::Error> {
    use hsakmt_core::device::Error as DeviceError;
    use hsakmt_core::memory::Error as MemError;
    loop {
        match op() {
            Err(DeviceError::Memory(MemError::Busy { .. })) => std::thread::yield_now(),
            r => return r,
        }
    }
}
