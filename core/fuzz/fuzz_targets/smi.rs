//! Fuzzes the SMI event parser ([`hsakmt_core::smi::parse_line`], [`SmiLines`]): arbitrary
//! bytes, as one read of an SMI stream, never panic, split into one result per line, and every
//! line that parses prints back (in the kernel's formats of `kfd_smi_events.c`) to a line that
//! parses to the same event; events built from the input, printed as the kernel prints them,
//! parse to themselves.
#![no_main]

use std::io::Write as _;

use hsakmt_core::smi::{SmiEvent, SmiLines, parse_line};
use hsakmt_core_fuzz::Input;
use libfuzzer_sys::fuzz_target;

/// Prints `e` the way amdkfd does: `"%x "` of the event number, then the event's format.
fn print(e: &SmiEvent<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = write!(out, "{:x} ", e.number());
    let _ = match *e {
        SmiEvent::VmFault { pid, task } => write!(out, "{pid:x}:{task}"),
        SmiEvent::ThermalThrottle { bitmask, counter } => write!(out, "{bitmask:x}:{counter:x}"),
        SmiEvent::GpuPreReset { sequence, cause } | SmiEvent::GpuPostReset { sequence, cause } => {
            match cause {
                Some(c) => write!(out, "{sequence:x} {c}"),
                None => write!(out, "{sequence:x}"),
            }
        }
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
        } => write!(
            out,
            "{timestamp_ns} -{pid} @{start_page:x}({pages:x}) {from:x}->{to:x} \
             {prefetch_loc:x}:{preferred_loc:x} {trigger}"
        ),
        SmiEvent::MigrateEnd { timestamp_ns, pid, start_page, pages, from, to, trigger, error } => {
            let _ = write!(
                out,
                "{timestamp_ns} -{pid} @{start_page:x}({pages:x}) {from:x}->{to:x} {trigger}"
            );
            match error {
                Some(e) => write!(out, " {e}"),
                None => Ok(()),
            }
        }
        SmiEvent::PageFaultStart { timestamp_ns, pid, page, gpu_id, write } => {
            let rw = if write { 'W' } else { 'R' };
            write!(out, "{timestamp_ns} -{pid} @{page:x}({gpu_id:x}) {rw}")
        }
        SmiEvent::PageFaultEnd { timestamp_ns, pid, page, gpu_id, migrated } => {
            let mu = if migrated { 'M' } else { 'U' };
            write!(out, "{timestamp_ns} -{pid} @{page:x}({gpu_id:x}) {mu}")
        }
        SmiEvent::QueueEviction { timestamp_ns, pid, gpu_id, trigger } => {
            write!(out, "{timestamp_ns} -{pid} {gpu_id:x} {trigger}")
        }
        SmiEvent::QueueRestore { timestamp_ns, pid, gpu_id, rescheduled } => {
            let _ = write!(out, "{timestamp_ns} -{pid} {gpu_id:x}");
            match rescheduled {
                Some(true) => out.write_all(b" R"),
                // `%c` of 0: a NUL byte.
                Some(false) => out.write_all(b" \0"),
                None => Ok(()),
            }
        }
        SmiEvent::UnmapFromGpu { timestamp_ns, pid, start_page, pages, gpu_id, trigger } => {
            write!(out, "{timestamp_ns} -{pid} @{start_page:x}({pages:x}) {gpu_id:x} {trigger}")
        }
        SmiEvent::ProcessStart { pid, task } | SmiEvent::ProcessEnd { pid, task } => {
            write!(out, "{pid:x} {task}")
        }
        SmiEvent::Unknown { body, .. } => out.write_all(body),
    };
    out.push(b'\n');
    out
}

/// Text for a task name or reset cause: UTF-8 without a newline.
fn text(input: &mut Input<'_>) -> String {
    let n = usize::from(input.u8() % 24);
    String::from_utf8_lossy(input.bytes(n)).replace('\n', " ")
}

/// An event of every kind, its fields from the input.
fn event<'a>(input: &mut Input<'_>, text: &'a str) -> SmiEvent<'a> {
    let kind = input.u8();
    let (a, b, c, d) = (input.u64(), input.u64(), input.u32(), input.u32());
    let (pid, small) = (input.u32(), input.u32());
    let flag = kind & 0x80 != 0;
    let cause = (kind & 0x40 != 0).then_some(text);
    match kind % 14 {
        0 => SmiEvent::VmFault { pid, task: text },
        1 => SmiEvent::ThermalThrottle { bitmask: a, counter: b },
        2 => SmiEvent::GpuPreReset { sequence: c, cause },
        3 => SmiEvent::GpuPostReset { sequence: c, cause },
        4 => SmiEvent::MigrateStart {
            timestamp_ns: a,
            pid,
            start_page: b,
            pages: u64::from(small),
            from: c,
            to: d,
            prefetch_loc: small.rotate_left(7),
            preferred_loc: c ^ d,
            trigger: small % 7,
        },
        5 => SmiEvent::MigrateEnd {
            timestamp_ns: a,
            pid,
            start_page: b,
            pages: u64::from(small),
            from: c,
            to: d,
            trigger: small,
            error: (kind & 0x40 != 0).then_some(d as i32),
        },
        6 => SmiEvent::PageFaultStart { timestamp_ns: a, pid, page: b, gpu_id: c, write: flag },
        7 => SmiEvent::PageFaultEnd { timestamp_ns: a, pid, page: b, gpu_id: c, migrated: flag },
        8 => SmiEvent::QueueEviction { timestamp_ns: a, pid, gpu_id: c, trigger: d },
        9 => SmiEvent::QueueRestore {
            timestamp_ns: a,
            pid,
            gpu_id: c,
            rescheduled: (kind & 0x40 != 0).then_some(flag),
        },
        10 => SmiEvent::UnmapFromGpu {
            timestamp_ns: a,
            pid,
            start_page: b,
            pages: u64::from(small),
            gpu_id: c,
            trigger: d,
        },
        11 => SmiEvent::ProcessStart { pid, task: text },
        12 => SmiEvent::ProcessEnd { pid, task: text },
        // Past the last event number this library knows (13).
        _ => SmiEvent::Unknown { event: 14 + (c >> 8), body: &[] },
    }
}

fuzz_target!(|data: &[u8]| {
    // A read of a stream: one result per line, whatever the bytes.
    let lines = data.split_inclusive(|b| *b == b'\n').count();
    assert_eq!(SmiLines::new(data).count(), lines);
    for parsed in SmiLines::new(data).flatten() {
        let printed = print(&parsed);
        assert_eq!(parse_line(&printed), Ok(parsed), "{:?}", String::from_utf8_lossy(&printed));
    }
    // Events the kernel could send parse to themselves.
    let mut input = Input(data);
    while !input.is_empty() {
        let t = text(&mut input);
        let e = event(&mut input, &t);
        let printed = print(&e);
        assert_eq!(parse_line(&printed), Ok(e), "{:?}", String::from_utf8_lossy(&printed));
        let mut two = printed.clone();
        two.extend_from_slice(&printed);
        assert_eq!(SmiLines::new(&two).collect::<Vec<_>>(), vec![Ok(e), Ok(e)]);
    }
});
