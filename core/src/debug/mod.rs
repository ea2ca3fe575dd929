//! The debugger interface of KFD 1.13+ (`AMDKFD_IOC_RUNTIME_ENABLE`, `AMDKFD_IOC_DBG_TRAP`) as
//! typed values: exception codes and masks ([`exception`]), runtime state, launch modes,
//! overrides, watch modes and flags ([`settings`]), and what the kernel reports back
//! ([`snapshot`]). The operations themselves are the device facade's
//! ([`crate::device::Debugger`]).

pub mod exception;
pub mod settings;
pub mod snapshot;

pub use exception::{ExceptionCode, ExceptionMask, ExceptionScope};
pub use settings::{
    DebugFlags, OverrideResult, RuntimeInfo, RuntimeState, TrapMask, TrapOverride, WatchMode,
    WaveLaunchMode,
};
pub use snapshot::{DebugEvent, EventSource, QueueOutcome, QueueSnapshot};
