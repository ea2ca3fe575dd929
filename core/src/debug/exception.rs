//! Debugger exception codes and masks (`enum kfd_dbg_trap_exception_code`, `KFD_EC_MASK`).

use core::fmt;

use crate::uapi::*;

/// Where an exception is raised: on a queue, a device, or the whole process
/// (`KFD_DBG_EC_TYPE_IS_QUEUE` / `_DEVICE` / `_PROCESS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ExceptionScope {
    /// A queue's exception (`source_id` is a queue id).
    Queue,
    /// A device's exception (`source_id` is a gpu_id).
    Device,
    /// The process's exception.
    Process,
}

macro_rules! exception_codes {
    ($($(#[$m:meta])* $name:ident = $c:ident,)*) => {
        /// A debugger exception code (`EC_*` of `kfd_ioctl.h` 1.23).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        pub enum ExceptionCode {
            $($(#[$m])* $name,)*
        }

        impl ExceptionCode {
            /// Every code, in numeric order.
            pub const ALL: &'static [ExceptionCode] = &[$(Self::$name),*];

            /// The `EC_*` value.
            #[must_use]
            pub const fn code(self) -> u32 {
                match self {
                    $(Self::$name => $c,)*
                }
            }

            /// The code for an `EC_*` value (`None` for `EC_NONE`, `EC_MAX` and gaps).
            #[must_use]
            pub const fn from_code(code: u32) -> Option<Self> {
                match code {
                    $($c => Some(Self::$name),)*
                    _ => None,
                }
            }

            /// The C name (`"EC_QUEUE_NEW"`).
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$name => stringify!($c),)*
                }
            }
        }
    };
}

exception_codes! {
    /// A wave aborted (`s_trap` abort, host trap).
    QueueWaveAbort = EC_QUEUE_WAVE_ABORT,
    /// A wave trapped (`s_trap`, an address watch).
    QueueWaveTrap = EC_QUEUE_WAVE_TRAP,
    /// A floating-point or integer exception the trap mask enabled.
    QueueWaveMathError = EC_QUEUE_WAVE_MATH_ERROR,
    /// An illegal instruction.
    QueueWaveIllegalInstruction = EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION,
    /// A memory violation.
    QueueWaveMemoryViolation = EC_QUEUE_WAVE_MEMORY_VIOLATION,
    /// An aperture violation.
    QueueWaveApertureViolation = EC_QUEUE_WAVE_APERTURE_VIOLATION,
    /// A dispatch packet with invalid dimensions.
    QueuePacketDispatchDimInvalid = EC_QUEUE_PACKET_DISPATCH_DIM_INVALID,
    /// A dispatch packet with an invalid group segment size.
    QueuePacketDispatchGroupSegmentSizeInvalid = EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID,
    /// A dispatch packet with invalid code.
    QueuePacketDispatchCodeInvalid = EC_QUEUE_PACKET_DISPATCH_CODE_INVALID,
    /// A reserved packet type.
    QueuePacketReserved = EC_QUEUE_PACKET_RESERVED,
    /// An unsupported packet.
    QueuePacketUnsupported = EC_QUEUE_PACKET_UNSUPPORTED,
    /// A dispatch packet with an invalid work-group size.
    QueuePacketDispatchWorkGroupSizeInvalid = EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID,
    /// A dispatch packet needing more registers than exist.
    QueuePacketDispatchRegisterInvalid = EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID,
    /// An unsupported vendor-specific packet.
    QueuePacketVendorUnsupported = EC_QUEUE_PACKET_VENDOR_UNSUPPORTED,
    /// The queue could not be preempted.
    QueuePreemptionError = EC_QUEUE_PREEMPTION_ERROR,
    /// A queue the debugger has not seen yet.
    QueueNew = EC_QUEUE_NEW,
    /// A queue of the device was deleted.
    DeviceQueueDelete = EC_DEVICE_QUEUE_DELETE,
    /// A memory violation on the device (with fault data).
    DeviceMemoryViolation = EC_DEVICE_MEMORY_VIOLATION,
    /// A RAS error.
    DeviceRasError = EC_DEVICE_RAS_ERROR,
    /// The device halted fatally.
    DeviceFatalHalt = EC_DEVICE_FATAL_HALT,
    /// A device the debugger has not seen yet.
    DeviceNew = EC_DEVICE_NEW,
    /// The runtime was enabled or disabled (the debugger must answer).
    ProcessRuntime = EC_PROCESS_RUNTIME,
    /// A device was removed from the process.
    ProcessDeviceRemove = EC_PROCESS_DEVICE_REMOVE,
}

impl ExceptionCode {
    /// Its bit (`KFD_EC_MASK`).
    #[must_use]
    pub const fn mask(self) -> ExceptionMask {
        ExceptionMask(KFD_EC_MASK(self.code()))
    }

    /// Where it is raised.
    #[must_use]
    pub const fn scope(self) -> ExceptionScope {
        let c = self.code();
        if KFD_DBG_EC_TYPE_IS_QUEUE(c) {
            ExceptionScope::Queue
        } else if KFD_DBG_EC_TYPE_IS_DEVICE(c) {
            ExceptionScope::Device
        } else {
            ExceptionScope::Process
        }
    }
}

impl fmt::Display for ExceptionCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of exceptions: `KFD_EC_MASK(code)` bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ExceptionMask(pub u64);

impl ExceptionMask {
    /// No exception.
    pub const NONE: Self = Self(0);
    /// Every queue exception (`KFD_EC_MASK_QUEUE`).
    pub const QUEUE: Self = Self(KFD_EC_MASK_QUEUE);
    /// Every device exception (`KFD_EC_MASK_DEVICE`).
    pub const DEVICE: Self = Self(KFD_EC_MASK_DEVICE);
    /// Every process exception (`KFD_EC_MASK_PROCESS`).
    pub const PROCESS: Self = Self(KFD_EC_MASK_PROCESS);
    /// Every exception code of the header.
    pub const ALL: Self = Self(KFD_EC_MASK_QUEUE | KFD_EC_MASK_DEVICE | KFD_EC_MASK_PROCESS);

    /// Whether `code` is in the set.
    #[must_use]
    pub const fn contains(self, code: ExceptionCode) -> bool {
        self.0 & code.mask().0 != 0
    }

    /// Whether the set is empty.
    #[must_use]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The set with `code` added.
    #[must_use]
    pub const fn with(self, code: ExceptionCode) -> Self {
        Self(self.0 | code.mask().0)
    }

    /// The known codes in the set, in numeric order (bits of no code are skipped).
    pub fn codes(self) -> impl Iterator<Item = ExceptionCode> {
        ExceptionCode::ALL.iter().copied().filter(move |c| self.contains(*c))
    }
}

impl core::ops::BitOr for ExceptionMask {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl From<ExceptionCode> for ExceptionMask {
    fn from(c: ExceptionCode) -> Self {
        c.mask()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_have_their_scope() {
        for &c in ExceptionCode::ALL {
            assert_eq!(ExceptionCode::from_code(c.code()), Some(c));
            assert_eq!(c.mask().0, 1u64 << (c.code() - 1));
        }
        assert_eq!(ExceptionCode::ALL.len(), 23);
        assert_eq!(ExceptionCode::from_code(EC_NONE), None);
        assert_eq!(ExceptionCode::from_code(EC_MAX), None);
        assert_eq!(ExceptionCode::from_code(7), None);
        assert_eq!(ExceptionCode::QueueNew.scope(), ExceptionScope::Queue);
        assert_eq!(ExceptionCode::DeviceMemoryViolation.scope(), ExceptionScope::Device);
        assert_eq!(ExceptionCode::ProcessRuntime.scope(), ExceptionScope::Process);
        assert_eq!(ExceptionCode::QueueNew.name(), "EC_QUEUE_NEW");
    }

    #[test]
    fn masks_list_their_codes() {
        let m = ExceptionCode::QueueNew.mask() | ExceptionCode::ProcessRuntime.into();
        let codes: heapless::Vec<ExceptionCode, 4> = m.codes().collect();
        assert_eq!(codes.as_slice(), &[ExceptionCode::QueueNew, ExceptionCode::ProcessRuntime]);
        assert_eq!(ExceptionMask::ALL.codes().count(), ExceptionCode::ALL.len());
        assert!(ExceptionMask::NONE.is_empty());
    }
}
