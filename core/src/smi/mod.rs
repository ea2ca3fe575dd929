//! SMI events (`AMDKFD_IOC_SMI_EVENTS`, KFD 1.3+): the text lines amdkfd writes into an SMI
//! event stream, parsed into typed [`SmiEvent`]s.
//!
//! Each event is one line: the event number in hex, a space, then the event's body in the
//! format of its `KFD_EVENT_FMT_*` macro (`kfd_ioctl.h` 1.23). The parser is total: every line
//! yields an event or a typed [`Error`], never a panic; lines of event numbers it does not know
//! become [`SmiEvent::Unknown`]. Older kernels print a few bodies shorter (no reset cause, no
//! migration error code, no restore flag); those fields are then `None`.
//!
//! A stream's FIFO holds [`SMI_FIFO_SIZE`] bytes of whole lines, and a read returns at most
//! that many, so a read into a buffer of that size always ends at a line boundary
//! ([`SmiLines`]).
//!
//! ```
//! use hsakmt_core::smi::{SmiEvent, SmiLines};
//!
//! let bytes = b"3 1 HWS hang\n9 12345 -77 b00c 2\n";
//! let events: Vec<_> = SmiLines::new(bytes).collect();
//! assert_eq!(events[0], Ok(SmiEvent::GpuPreReset { sequence: 1, cause: Some("HWS hang") }));
//! assert!(matches!(events[1], Ok(SmiEvent::QueueEviction { pid: 77, gpu_id: 0xb00c, trigger: 2, .. })));
//! ```

mod parse;

pub use parse::{Error, SmiEvent, SmiLines, parse_line};

use crate::uapi::{KFD_SMI_EVENT_ALL_PROCESS, KFD_SMI_EVENT_MASK_FROM_INDEX};

/// Bytes an SMI stream's FIFO holds (`MAX_KFIFO_SIZE` of `kfd_smi_events.c`), and the most one
/// read returns.
pub const SMI_FIFO_SIZE: usize = 1024;

/// A set of SMI events to receive: the mask written to the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SmiMask(pub u64);

impl SmiMask {
    /// No event.
    pub const NONE: Self = Self(0);
    /// Every event of `kfd_ioctl.h` 1.23 (`VMFAULT` .. `PROCESS_END`), of the opening process.
    pub const ALL_EVENTS: Self = Self((1 << 13) - 1);

    /// The set with event number `event` (`KFD_SMI_EVENT_*`, 1..=64) added; other numbers
    /// change nothing.
    #[must_use]
    pub const fn with(self, event: u32) -> Self {
        if event >= 1 && event <= KFD_SMI_EVENT_ALL_PROCESS {
            Self(self.0 | KFD_SMI_EVENT_MASK_FROM_INDEX(event))
        } else {
            self
        }
    }

    /// With `KFD_SMI_EVENT_ALL_PROCESS`: events of every process (honoured only for a
    /// privileged opener).
    #[must_use]
    pub const fn all_processes(self) -> Self {
        self.with(KFD_SMI_EVENT_ALL_PROCESS)
    }
}
