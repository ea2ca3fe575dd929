//! The SMI line parser: one line of an SMI stream into an [`SmiEvent`].

use core::fmt;

use crate::error::ErrorKind;
use crate::uapi::*;

/// One SMI event, borrowing its text fields from the line.
///
/// Addresses and sizes of SVM events are in pages, gpu ids are KFD gpu_ids (0: system memory),
/// timestamps are the kernel's boot-time clock in ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SmiEvent<'a> {
    /// `KFD_SMI_EVENT_VMFAULT`: a process faulted on GPU memory.
    VmFault {
        /// The faulting process.
        pid: u32,
        /// Its name.
        task: &'a str,
    },
    /// `KFD_SMI_EVENT_THERMAL_THROTTLE`.
    ThermalThrottle {
        /// The throttle reasons.
        bitmask: u64,
        /// The throttling counter.
        counter: u64,
    },
    /// `KFD_SMI_EVENT_GPU_PRE_RESET`: the GPU is about to reset.
    GpuPreReset {
        /// The device's reset sequence number (advanced by each reset).
        sequence: u32,
        /// Why (amdgpu's reset description); `None` from kernels that do not print it.
        cause: Option<&'a str>,
    },
    /// `KFD_SMI_EVENT_GPU_POST_RESET`: the GPU finished a reset.
    GpuPostReset {
        /// The reset's sequence number.
        sequence: u32,
        /// Why; `None` from kernels that do not print it.
        cause: Option<&'a str>,
    },
    /// `KFD_SMI_EVENT_MIGRATE_START`: SVM pages start moving.
    MigrateStart {
        /// Timestamp (ns).
        timestamp_ns: u64,
        /// The process.
        pid: u32,
        /// First page.
        start_page: u64,
        /// Pages.
        pages: u64,
        /// Where from (gpu_id, 0: system memory).
        from: u32,
        /// Where to.
        to: u32,
        /// The range's prefetch location.
        prefetch_loc: u32,
        /// The range's preferred location.
        preferred_loc: u32,
        /// Why (`KFD_MIGRATE_TRIGGER_*`).
        trigger: u32,
    },
    /// `KFD_SMI_EVENT_MIGRATE_END`.
    MigrateEnd {
        /// Timestamp (ns).
        timestamp_ns: u64,
        /// The process.
        pid: u32,
        /// First page.
        start_page: u64,
        /// Pages.
        pages: u64,
        /// Where from.
        from: u32,
        /// Where to.
        to: u32,
        /// Why (`KFD_MIGRATE_TRIGGER_*`).
        trigger: u32,
        /// The migration's error code (0: none); `None` from kernels that do not print it.
        error: Option<i32>,
    },
    /// `KFD_SMI_EVENT_PAGE_FAULT_START`: a recoverable GPU page fault.
    PageFaultStart {
        /// Timestamp (ns).
        timestamp_ns: u64,
        /// The process.
        pid: u32,
        /// The faulting page.
        page: u64,
        /// The GPU.
        gpu_id: u32,
        /// A write fault (else a read).
        write: bool,
    },
    /// `KFD_SMI_EVENT_PAGE_FAULT_END`.
    PageFaultEnd {
        /// Timestamp (ns).
        timestamp_ns: u64,
        /// The process.
        pid: u32,
        /// The faulting page.
        page: u64,
        /// The GPU.
        gpu_id: u32,
        /// Recovered by migrating the page (else by updating the mapping).
        migrated: bool,
    },
    /// `KFD_SMI_EVENT_QUEUE_EVICTION`: the process's queues on a GPU were evicted.
    QueueEviction {
        /// Timestamp (ns).
        timestamp_ns: u64,
        /// The process.
        pid: u32,
        /// The GPU.
        gpu_id: u32,
        /// Why (`KFD_QUEUE_EVICTION_*`).
        trigger: u32,
    },
    /// `KFD_SMI_EVENT_QUEUE_RESTORE`: the queues were restored.
    QueueRestore {
        /// Timestamp (ns).
        timestamp_ns: u64,
        /// The process.
        pid: u32,
        /// The GPU.
        gpu_id: u32,
        /// Whether the restore failed and was rescheduled (`'R'`); `None` from kernels that
        /// do not print the flag.
        rescheduled: Option<bool>,
    },
    /// `KFD_SMI_EVENT_UNMAP_FROM_GPU`: SVM pages were unmapped from a GPU.
    UnmapFromGpu {
        /// Timestamp (ns).
        timestamp_ns: u64,
        /// The process.
        pid: u32,
        /// First page.
        start_page: u64,
        /// Pages.
        pages: u64,
        /// The GPU.
        gpu_id: u32,
        /// Why (`KFD_SVM_UNMAP_TRIGGER_*`).
        trigger: u32,
    },
    /// `KFD_SMI_EVENT_PROCESS_START`.
    ProcessStart {
        /// The process.
        pid: u32,
        /// Its name.
        task: &'a str,
    },
    /// `KFD_SMI_EVENT_PROCESS_END`.
    ProcessEnd {
        /// The process.
        pid: u32,
        /// Its name.
        task: &'a str,
    },
    /// An event number this library does not know, with its body.
    Unknown {
        /// The event number.
        event: u32,
        /// The rest of the line.
        body: &'a [u8],
    },
}

impl SmiEvent<'_> {
    /// The event's `KFD_SMI_EVENT_*` number.
    #[must_use]
    pub const fn number(&self) -> u32 {
        match self {
            Self::VmFault { .. } => KFD_SMI_EVENT_VMFAULT,
            Self::ThermalThrottle { .. } => KFD_SMI_EVENT_THERMAL_THROTTLE,
            Self::GpuPreReset { .. } => KFD_SMI_EVENT_GPU_PRE_RESET,
            Self::GpuPostReset { .. } => KFD_SMI_EVENT_GPU_POST_RESET,
            Self::MigrateStart { .. } => KFD_SMI_EVENT_MIGRATE_START,
            Self::MigrateEnd { .. } => KFD_SMI_EVENT_MIGRATE_END,
            Self::PageFaultStart { .. } => KFD_SMI_EVENT_PAGE_FAULT_START,
            Self::PageFaultEnd { .. } => KFD_SMI_EVENT_PAGE_FAULT_END,
            Self::QueueEviction { .. } => KFD_SMI_EVENT_QUEUE_EVICTION,
            Self::QueueRestore { .. } => KFD_SMI_EVENT_QUEUE_RESTORE,
            Self::UnmapFromGpu { .. } => KFD_SMI_EVENT_UNMAP_FROM_GPU,
            Self::ProcessStart { .. } => KFD_SMI_EVENT_PROCESS_START,
            Self::ProcessEnd { .. } => KFD_SMI_EVENT_PROCESS_END,
            Self::Unknown { event, .. } => *event,
        }
    }
}

/// Why a line is not an SMI event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Error {
    /// The line is empty.
    Empty,
    /// The line does not start with a hex event number and a space.
    BadEventNumber,
    /// A field of a known event is missing or malformed.
    BadField {
        /// The event number.
        event: u32,
        /// The field, as the format macro names it.
        field: &'static str,
    },
    /// A text field (a task name, a reset cause) is not UTF-8.
    NotUtf8 {
        /// The event number.
        event: u32,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("empty SMI event line"),
            Self::BadEventNumber => f.write_str("SMI event line without a hex event number"),
            Self::BadField { event, field } => {
                write!(f, "SMI event {event}: field `{field}` is missing or malformed")
            }
            Self::NotUtf8 { event } => write!(f, "SMI event {event}: text is not UTF-8"),
        }
    }
}

impl crate::error::Error for Error {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Malformed
    }
}

impl core::error::Error for Error {}

/// A cursor over one line.
struct Cursor<'a> {
    bytes: &'a [u8],
    event: u32,
}

impl<'a> Cursor<'a> {
    fn err(&self, field: &'static str) -> Error {
        Error::BadField { event: self.event, field }
    }

    /// Digits of `radix` (at least one) as a u64, checked.
    fn number(&mut self, radix: u32, field: &'static str) -> Result<u64, Error> {
        let n = self.bytes.iter().take_while(|b| (**b as char).is_digit(radix)).count();
        let (digits, rest) = self.bytes.split_at(n);
        if digits.is_empty() {
            return Err(self.err(field));
        }
        let mut v: u64 = 0;
        for d in digits {
            let digit = u64::from((*d as char).to_digit(radix).unwrap_or(0));
            v = v
                .checked_mul(u64::from(radix))
                .and_then(|v| v.checked_add(digit))
                .ok_or_else(|| self.err(field))?;
        }
        self.bytes = rest;
        Ok(v)
    }

    fn hex(&mut self, field: &'static str) -> Result<u64, Error> {
        self.number(16, field)
    }

    fn dec(&mut self, field: &'static str) -> Result<u64, Error> {
        self.number(10, field)
    }

    fn hex32(&mut self, field: &'static str) -> Result<u32, Error> {
        u32::try_from(self.hex(field)?).map_err(|_| self.err(field))
    }

    fn dec32(&mut self, field: &'static str) -> Result<u32, Error> {
        u32::try_from(self.dec(field)?).map_err(|_| self.err(field))
    }

    /// A signed decimal `%d`.
    fn int(&mut self, field: &'static str) -> Result<i32, Error> {
        let negative = self.eat(b'-');
        let v = i64::try_from(self.dec(field)?).map_err(|_| self.err(field))?;
        let v = if negative { v.checked_neg().ok_or_else(|| self.err(field))? } else { v };
        i32::try_from(v).map_err(|_| self.err(field))
    }

    fn eat(&mut self, b: u8) -> bool {
        match self.bytes.split_first() {
            Some((&first, rest)) if first == b => {
                self.bytes = rest;
                true
            }
            _ => false,
        }
    }

    fn expect(&mut self, b: u8, field: &'static str) -> Result<(), Error> {
        if self.eat(b) { Ok(()) } else { Err(self.err(field)) }
    }

    fn text(&mut self) -> Result<&'a str, Error> {
        let t = core::str::from_utf8(self.bytes).map_err(|_| Error::NotUtf8 { event: self.event });
        self.bytes = &[];
        t
    }

    fn done(&self) -> bool {
        self.bytes.is_empty()
    }

    /// `%lld -%d `: the timestamp and pid every SVM and queue event starts with.
    fn stamp(&mut self) -> Result<(u64, u32), Error> {
        let ns = self.dec("ns")?;
        self.expect(b' ', "ns")?;
        self.expect(b'-', "pid")?;
        let pid = self.dec32("pid")?;
        Ok((ns, pid))
    }

    /// ` @%lx(%lx)`: an address or start page and a size (or, for page faults, a node).
    fn at(&mut self, what: &'static str) -> Result<(u64, u64), Error> {
        self.expect(b' ', "addr")?;
        self.expect(b'@', "addr")?;
        let a = self.hex("addr")?;
        self.expect(b'(', what)?;
        let b = self.hex(what)?;
        self.expect(b')', what)?;
        Ok((a, b))
    }
}

/// Parses one line (without its newline; a trailing `\n` is also accepted).
///
/// # Errors
/// [`Error`] naming what is wrong; bytes after a complete body are ignored only for events of
/// unknown number.
pub fn parse_line(line: &[u8]) -> Result<SmiEvent<'_>, Error> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    if line.is_empty() {
        return Err(Error::Empty);
    }
    let mut c = Cursor { bytes: line, event: 0 };
    let event = c.hex32("event").map_err(|_| Error::BadEventNumber)?;
    if !c.eat(b' ') {
        return Err(Error::BadEventNumber);
    }
    c.event = event;
    let e = match event {
        KFD_SMI_EVENT_VMFAULT | KFD_SMI_EVENT_PROCESS_START | KFD_SMI_EVENT_PROCESS_END => {
            let pid = c.hex32("pid")?;
            let sep = if event == KFD_SMI_EVENT_VMFAULT { b':' } else { b' ' };
            c.expect(sep, "task_name")?;
            let task = c.text()?;
            match event {
                KFD_SMI_EVENT_VMFAULT => SmiEvent::VmFault { pid, task },
                KFD_SMI_EVENT_PROCESS_START => SmiEvent::ProcessStart { pid, task },
                _ => SmiEvent::ProcessEnd { pid, task },
            }
        }
        KFD_SMI_EVENT_THERMAL_THROTTLE => {
            let bitmask = c.hex("bitmask")?;
            c.expect(b':', "counter")?;
            SmiEvent::ThermalThrottle { bitmask, counter: c.hex("counter")? }
        }
        KFD_SMI_EVENT_GPU_PRE_RESET | KFD_SMI_EVENT_GPU_POST_RESET => {
            let sequence = c.hex32("reset_seq_num")?;
            let cause = if c.eat(b' ') { Some(c.text()?) } else { None };
            if event == KFD_SMI_EVENT_GPU_PRE_RESET {
                SmiEvent::GpuPreReset { sequence, cause }
            } else {
                SmiEvent::GpuPostReset { sequence, cause }
            }
        }
        KFD_SMI_EVENT_MIGRATE_START | KFD_SMI_EVENT_MIGRATE_END => {
            let (timestamp_ns, pid) = c.stamp()?;
            let (start_page, pages) = c.at("size")?;
            c.expect(b' ', "from")?;
            let from = c.hex32("from")?;
            c.expect(b'-', "to")?;
            c.expect(b'>', "to")?;
            let to = c.hex32("to")?;
            c.expect(b' ', "to")?;
            if event == KFD_SMI_EVENT_MIGRATE_START {
                let prefetch_loc = c.hex32("prefetch_loc")?;
                c.expect(b':', "preferred_loc")?;
                let preferred_loc = c.hex32("preferred_loc")?;
                c.expect(b' ', "migrate_trigger")?;
                let trigger = c.dec32("migrate_trigger")?;
                SmiEvent::MigrateStart {
                    timestamp_ns,
                    pid,
                    start_page,
                    pages,
                    from,
                    to,
                    prefetch_loc,
                    preferred_loc,
                    trigger,
                }
            } else {
                let trigger = c.dec32("migrate_trigger")?;
                let error = if c.eat(b' ') { Some(c.int("error_code")?) } else { None };
                SmiEvent::MigrateEnd {
                    timestamp_ns,
                    pid,
                    start_page,
                    pages,
                    from,
                    to,
                    trigger,
                    error,
                }
            }
        }
        KFD_SMI_EVENT_PAGE_FAULT_START | KFD_SMI_EVENT_PAGE_FAULT_END => {
            let (timestamp_ns, pid) = c.stamp()?;
            let (page, node) = c.at("node")?;
            let gpu_id = u32::try_from(node).map_err(|_| c.err("node"))?;
            c.expect(b' ', "rw")?;
            let flag = *c.bytes.first().ok_or_else(|| c.err("rw"))?;
            c.bytes = c.bytes.get(1..).unwrap_or_default();
            if event == KFD_SMI_EVENT_PAGE_FAULT_START {
                let write = match flag {
                    b'W' => true,
                    b'R' => false,
                    _ => return Err(c.err("rw")),
                };
                SmiEvent::PageFaultStart { timestamp_ns, pid, page, gpu_id, write }
            } else {
                let migrated = match flag {
                    b'M' => true,
                    b'U' => false,
                    _ => return Err(c.err("migrate_update")),
                };
                SmiEvent::PageFaultEnd { timestamp_ns, pid, page, gpu_id, migrated }
            }
        }
        KFD_SMI_EVENT_QUEUE_EVICTION | KFD_SMI_EVENT_QUEUE_RESTORE => {
            let (timestamp_ns, pid) = c.stamp()?;
            c.expect(b' ', "node")?;
            let gpu_id = c.hex32("node")?;
            if event == KFD_SMI_EVENT_QUEUE_EVICTION {
                c.expect(b' ', "evict_trigger")?;
                let trigger = c.dec32("evict_trigger")?;
                SmiEvent::QueueEviction { timestamp_ns, pid, gpu_id, trigger }
            } else {
                // `%c` of the flag: 'R' when rescheduled, a NUL byte otherwise.
                let rescheduled = if c.eat(b' ') {
                    let flag = c.bytes.first().copied().unwrap_or(0);
                    c.bytes = c.bytes.get(1..).unwrap_or_default();
                    Some(flag == b'R')
                } else {
                    None
                };
                SmiEvent::QueueRestore { timestamp_ns, pid, gpu_id, rescheduled }
            }
        }
        KFD_SMI_EVENT_UNMAP_FROM_GPU => {
            let (timestamp_ns, pid) = c.stamp()?;
            let (start_page, pages) = c.at("size")?;
            c.expect(b' ', "node")?;
            let gpu_id = c.hex32("node")?;
            c.expect(b' ', "unmap_trigger")?;
            let trigger = c.dec32("unmap_trigger")?;
            SmiEvent::UnmapFromGpu { timestamp_ns, pid, start_page, pages, gpu_id, trigger }
        }
        _ => return Ok(SmiEvent::Unknown { event, body: c.bytes }),
    };
    if c.done() { Ok(e) } else { Err(c.err("end of line")) }
}

/// The events of a buffer of whole SMI lines (what one read of a stream returns).
#[derive(Debug, Clone)]
pub struct SmiLines<'a> {
    rest: &'a [u8],
}

impl<'a> SmiLines<'a> {
    /// The lines of `bytes`; a last line without a newline counts too.
    #[must_use]
    pub const fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes }
    }
}

impl<'a> Iterator for SmiLines<'a> {
    type Item = Result<SmiEvent<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let end = self
            .rest
            .iter()
            .position(|b| *b == b'\n')
            .map_or(self.rest.len(), |i| i.saturating_add(1));
        let (line, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(parse_line(line))
    }
}

#[cfg(test)]
mod tests;
