//! The values of the debugger interface other than exceptions: runtime state, wave launch
//! modes and trap overrides, address-watch modes, wave flags.

use crate::uapi::*;

/// The runtime's state as the kernel records it (`enum kfd_dbg_runtime_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RuntimeState {
    /// The runtime has not enabled itself (or disabled itself again).
    Disabled,
    /// The runtime is enabled.
    Enabled,
    /// Enabled, but debug activation found the hardware busy (a debug VMID taken).
    EnabledBusy,
    /// Enabled, but debug activation failed.
    EnabledError,
    /// A value this library does not know.
    Other(u32),
}

impl RuntimeState {
    /// From `runtime_state`.
    #[must_use]
    pub const fn from_raw(v: u32) -> Self {
        match v {
            DEBUG_RUNTIME_STATE_DISABLED => Self::Disabled,
            DEBUG_RUNTIME_STATE_ENABLED => Self::Enabled,
            DEBUG_RUNTIME_STATE_ENABLED_BUSY => Self::EnabledBusy,
            DEBUG_RUNTIME_STATE_ENABLED_ERROR => Self::EnabledError,
            v => Self::Other(v),
        }
    }

    /// The `runtime_state` value.
    #[must_use]
    pub const fn raw(self) -> u32 {
        match self {
            Self::Disabled => DEBUG_RUNTIME_STATE_DISABLED,
            Self::Enabled => DEBUG_RUNTIME_STATE_ENABLED,
            Self::EnabledBusy => DEBUG_RUNTIME_STATE_ENABLED_BUSY,
            Self::EnabledError => DEBUG_RUNTIME_STATE_ENABLED_ERROR,
            Self::Other(v) => v,
        }
    }
}

/// What the kernel saved of the runtime (`struct kfd_runtime_info`): what a debugger learns at
/// `DBG_TRAP_ENABLE` and from `EC_PROCESS_RUNTIME`'s exception info.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RuntimeInfo {
    /// The runtime's `r_debug` address (ROCr's debugger rendezvous structure).
    pub r_debug: u64,
    /// The runtime's state.
    pub state: RuntimeState,
    /// Whether trap temporaries (TTMPs) are set up for the debugger.
    pub ttmp_setup: bool,
}

impl RuntimeInfo {
    /// From the kernel's struct.
    #[must_use]
    pub const fn from_kernel(r: &kfd_runtime_info) -> Self {
        Self {
            r_debug: r.r_debug,
            state: RuntimeState::from_raw(r.runtime_state),
            ttmp_setup: r.ttmp_setup != 0,
        }
    }
}

/// How waves launch while debugged (`enum kfd_dbg_trap_wave_launch_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WaveLaunchMode {
    /// Waves run normally.
    Normal,
    /// Waves launch halted.
    Halt,
    /// Waves launch in single-step debug mode.
    Debug,
}

impl WaveLaunchMode {
    /// The `KFD_DBG_TRAP_WAVE_LAUNCH_MODE_*` value.
    #[must_use]
    pub const fn raw(self) -> u32 {
        match self {
            Self::Normal => KFD_DBG_TRAP_WAVE_LAUNCH_MODE_NORMAL,
            Self::Halt => KFD_DBG_TRAP_WAVE_LAUNCH_MODE_HALT,
            Self::Debug => KFD_DBG_TRAP_WAVE_LAUNCH_MODE_DEBUG,
        }
    }
}

/// How a trap-mask override combines with the device's mask (`enum
/// kfd_dbg_trap_override_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TrapOverride {
    /// OR the requested bits in.
    Or,
    /// Replace the requested bits.
    Replace,
}

impl TrapOverride {
    /// The `KFD_DBG_TRAP_OVERRIDE_*` value.
    #[must_use]
    pub const fn raw(self) -> u32 {
        match self {
            Self::Or => KFD_DBG_TRAP_OVERRIDE_OR,
            Self::Replace => KFD_DBG_TRAP_OVERRIDE_REPLACE,
        }
    }
}

/// Trap-mask bits (`enum kfd_dbg_trap_mask`): the wave exceptions that trap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TrapMask(pub u32);

impl TrapMask {
    /// Address watches trap (`KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH`), the one bit every gfx9+
    /// device can override.
    pub const ADDRESS_WATCH: Self = Self(KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH);
    /// Memory violations trap.
    pub const MEMORY_VIOLATION: Self = Self(KFD_DBG_TRAP_MASK_DBG_MEMORY_VIOLATION);
    /// Every floating-point exception traps.
    pub const FP_ALL: Self = Self(
        KFD_DBG_TRAP_MASK_FP_INVALID
            | KFD_DBG_TRAP_MASK_FP_INPUT_DENORMAL
            | KFD_DBG_TRAP_MASK_FP_DIVIDE_BY_ZERO
            | KFD_DBG_TRAP_MASK_FP_OVERFLOW
            | KFD_DBG_TRAP_MASK_FP_UNDERFLOW
            | KFD_DBG_TRAP_MASK_FP_INEXACT,
    );
}

/// What `SET_WAVE_LAUNCH_OVERRIDE` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct OverrideResult {
    /// The trap mask before the call.
    pub previous: TrapMask,
    /// The bits every device of the process can override.
    pub supported: TrapMask,
}

/// What an address watch triggers on (`enum kfd_dbg_trap_address_watch_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WatchMode {
    /// Reads.
    Read,
    /// Writes and atomics (anything but a read).
    NonRead,
    /// Atomics.
    Atomic,
    /// Every access.
    All,
}

impl WatchMode {
    /// The `KFD_DBG_TRAP_ADDRESS_WATCH_MODE_*` value.
    #[must_use]
    pub const fn raw(self) -> u32 {
        match self {
            Self::Read => KFD_DBG_TRAP_ADDRESS_WATCH_MODE_READ,
            Self::NonRead => KFD_DBG_TRAP_ADDRESS_WATCH_MODE_NONREAD,
            Self::Atomic => KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ATOMIC,
            Self::All => KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ALL,
        }
    }
}

/// Wave behaviour flags (`enum kfd_dbg_trap_flags`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DebugFlags(pub u32);

impl DebugFlags {
    /// No flag.
    pub const NONE: Self = Self(0);
    /// Precise memory operations (one in flight per wave); needs
    /// `HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED`.
    pub const SINGLE_MEMORY_OP: Self = Self(KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP);
    /// Precise ALU operations; needs `HSA_CAP_TRAP_DEBUG_PRECISE_ALU_OPERATIONS_SUPPORTED`.
    pub const SINGLE_ALU_OP: Self = Self(KFD_DBG_TRAP_FLAG_SINGLE_ALU_OP);
    /// LDS out-of-address-range exceptions (1.21); needs
    /// `HSA_CAP2_TRAP_DEBUG_LDS_OUT_OF_ADDR_RANGE_SUPPORTED`.
    pub const LDS_OUT_OF_ADDR_RANGE: Self = Self(KFD_DBG_TRAP_FLAG_LDS_OUT_OF_ADDR_RANGE);
}

impl core::ops::BitOr for DebugFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}
