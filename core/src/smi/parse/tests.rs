//! Lines as amdkfd formats them (the `KFD_EVENT_FMT_*` macros of `kfd_ioctl.h` 1.23, with the
//! `"%x "` event-number prefix of `kfd_smi_event_add`), and broken ones.

use super::*;
use std::string::String;

#[test]
fn every_event_of_the_header_parses() {
    let cases: &[(&[u8], SmiEvent<'_>)] = &[
        (b"1 4d2:rocminfo\n", SmiEvent::VmFault { pid: 0x4d2, task: "rocminfo" }),
        (b"2 ff:10", SmiEvent::ThermalThrottle { bitmask: 0xff, counter: 0x10 }),
        (b"3 a HWS hang", SmiEvent::GpuPreReset { sequence: 10, cause: Some("HWS hang") }),
        (b"4 a", SmiEvent::GpuPostReset { sequence: 10, cause: None }),
        (
            b"5 123456 -42 @7f00(200) 0->b00c b00c:0 0",
            SmiEvent::MigrateStart {
                timestamp_ns: 123_456,
                pid: 42,
                start_page: 0x7f00,
                pages: 0x200,
                from: 0,
                to: 0xb00c,
                prefetch_loc: 0xb00c,
                preferred_loc: 0,
                trigger: 0,
            },
        ),
        (
            b"6 123999 -42 @7f00(200) 0->b00c 0 -12",
            SmiEvent::MigrateEnd {
                timestamp_ns: 123_999,
                pid: 42,
                start_page: 0x7f00,
                pages: 0x200,
                from: 0,
                to: 0xb00c,
                trigger: 0,
                error: Some(-12),
            },
        ),
        (
            b"7 5 -1 @abc(b00c) W",
            SmiEvent::PageFaultStart {
                timestamp_ns: 5,
                pid: 1,
                page: 0xabc,
                gpu_id: 0xb00c,
                write: true,
            },
        ),
        (
            b"8 6 -1 @abc(b00c) U",
            SmiEvent::PageFaultEnd {
                timestamp_ns: 6,
                pid: 1,
                page: 0xabc,
                gpu_id: 0xb00c,
                migrated: false,
            },
        ),
        (
            b"9 7 -1 b00c 3",
            SmiEvent::QueueEviction { timestamp_ns: 7, pid: 1, gpu_id: 0xb00c, trigger: 3 },
        ),
        (
            b"a 8 -1 b00c R",
            SmiEvent::QueueRestore {
                timestamp_ns: 8,
                pid: 1,
                gpu_id: 0xb00c,
                rescheduled: Some(true),
            },
        ),
        (
            b"a 8 -1 b00c \0",
            SmiEvent::QueueRestore {
                timestamp_ns: 8,
                pid: 1,
                gpu_id: 0xb00c,
                rescheduled: Some(false),
            },
        ),
        (
            b"a 8 -1 b00c",
            SmiEvent::QueueRestore { timestamp_ns: 8, pid: 1, gpu_id: 0xb00c, rescheduled: None },
        ),
        (
            b"b 9 -1 @1000(10) b00c 2",
            SmiEvent::UnmapFromGpu {
                timestamp_ns: 9,
                pid: 1,
                start_page: 0x1000,
                pages: 0x10,
                gpu_id: 0xb00c,
                trigger: 2,
            },
        ),
        (b"c 4d2 python3", SmiEvent::ProcessStart { pid: 0x4d2, task: "python3" }),
        (b"d 4d2 python3", SmiEvent::ProcessEnd { pid: 0x4d2, task: "python3" }),
        (b"1f anything at all", SmiEvent::Unknown { event: 0x1f, body: b"anything at all" }),
    ];
    for (line, want) in cases {
        assert_eq!(parse_line(line), Ok(*want), "{}", String::from_utf8_lossy(line));
        assert_eq!(
            want.number(),
            u32::from_str_radix(core::str::from_utf8(line).unwrap().split(' ').next().unwrap(), 16)
                .unwrap()
        );
    }
}

#[test]
fn broken_lines_are_typed_errors() {
    assert_eq!(parse_line(b""), Err(Error::Empty));
    assert_eq!(parse_line(b"\n"), Err(Error::Empty));
    assert_eq!(parse_line(b"x 1"), Err(Error::BadEventNumber));
    assert_eq!(parse_line(b"3"), Err(Error::BadEventNumber));
    assert_eq!(parse_line(b"fffffffff 1"), Err(Error::BadEventNumber));
    assert_eq!(parse_line(b"3 zz"), Err(Error::BadField { event: 3, field: "reset_seq_num" }));
    assert_eq!(
        parse_line(b"9 7 -1 b00c"),
        Err(Error::BadField { event: 9, field: "evict_trigger" })
    );
    assert_eq!(parse_line(b"9 7 1 b00c 3"), Err(Error::BadField { event: 9, field: "pid" }));
    assert_eq!(parse_line(b"7 5 -1 @abc(b00c) X"), Err(Error::BadField { event: 7, field: "rw" }));
    assert_eq!(
        parse_line(b"9 7 -1 b00c 3 extra"),
        Err(Error::BadField { event: 9, field: "end of line" })
    );
    assert_eq!(parse_line(b"1 12:\xff"), Err(Error::NotUtf8 { event: 1 }));
    assert_eq!(
        parse_line(b"9 99999999999999999999 -1 b00c 3"),
        Err(Error::BadField { event: 9, field: "ns" })
    );
    assert_eq!(
        parse_line(b"6 1 -1 @1(1) 0->1 0 -99999999999"),
        Err(Error::BadField { event: 6, field: "error_code" })
    );
}

#[test]
fn lines_split_a_read() {
    let read = b"3 1 HWS hang\n4 1 HWS hang\nbad\n9 1 -2 3 4";
    let got: heapless::Vec<_, 8> = SmiLines::new(read).collect();
    assert_eq!(got.len(), 4);
    assert_eq!(got[0], Ok(SmiEvent::GpuPreReset { sequence: 1, cause: Some("HWS hang") }));
    assert_eq!(got[1], Ok(SmiEvent::GpuPostReset { sequence: 1, cause: Some("HWS hang") }));
    assert_eq!(got[2], Err(Error::BadEventNumber));
    assert_eq!(
        got[3],
        Ok(SmiEvent::QueueEviction { timestamp_ns: 1, pid: 2, gpu_id: 3, trigger: 4 })
    );
    assert_eq!(SmiLines::new(b"").count(), 0);
}

#[test]
fn masks_name_events_by_number() {
    use crate::smi::SmiMask;
    let m = SmiMask::NONE.with(KFD_SMI_EVENT_VMFAULT).with(KFD_SMI_EVENT_QUEUE_RESTORE);
    assert_eq!(m.0, 1 | 1 << 9);
    assert_eq!(SmiMask::NONE.with(0), SmiMask::NONE);
    assert_eq!(SmiMask::NONE.with(65), SmiMask::NONE);
    assert_eq!(SmiMask::NONE.all_processes().0, 1 << 63);
    assert_eq!(SmiMask::ALL_EVENTS.0.count_ones(), 13);
}
