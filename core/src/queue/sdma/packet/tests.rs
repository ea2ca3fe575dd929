extern crate std;

use super::super::{MAX_NOP_DWORDS, SdmaError, SdmaLimits};
use super::*;
use proptest::prelude::*;
use std::vec;
use std::vec::Vec;

const L: SdmaLimits = SdmaLimits::COUNT22;

fn decode(dw: &[u32]) -> Result<(SdmaPacket, usize), SdmaError> {
    SdmaPacket::decode(L, dw)
}

fn encode(p: SdmaPacket) -> Vec<u32> {
    let mut out = vec![0u32; p.dwords() as usize];
    assert_eq!(p.encode(L, &mut out), Ok(out.len()));
    out
}

/// The packets ROCr's `BlitSdma` writes, dword for dword as its builders lay them out
/// (`BuildAtomicDecrementCommand`, `hdp_flush_cmd`, `BuildGetGlobalTimestampCommand`,
/// `BuildGCRCommand(invalidate)`), decode to what they mean and re-encode to the same dwords.
#[test]
fn rocr_blit_packets_decode() {
    let signal = 0x7F12_3456_7840u64;
    let (lo, hi) = (signal as u32, (signal >> 32) as u32);
    let atomic = [10 | (47 << 25), lo, hi, u32::MAX, u32::MAX, 0, 0, 0];
    let p = SdmaPacket::AtomicAdd64 { addr: signal, value: u64::MAX };
    assert_eq!(decode(&atomic), Ok((p, 8)));
    assert_eq!(encode(p), atomic);

    let hdp = [0x8, 0x0, 0x8000_0000, 0x0, 0x0, 0x0];
    let p = SdmaPacket::PollRegister(RegisterPoll {
        hdp_flush: false,
        func: PollFunc::Always,
        registers: [0, 0x8000_0000],
        reference: 0,
        mask: 0,
        interval: 0,
        retry_count: 0,
    });
    assert_eq!(decode(&hdp), Ok((p, 6)));
    assert_eq!(encode(p), hdp);

    let ts = [13 | (2 << 8), lo + 32, hi];
    let p = SdmaPacket::Timestamp { addr: signal + 32 };
    assert_eq!(decode(&ts), Ok((p, 3)));
    assert_eq!(encode(p), ts);

    // GL2 and GLK write-back, GL2/GL1/GLV/GLK invalidate, all lines.
    let gcr = [17 | (1 << 8), 0, 0xC3C0_0000, 0, 0];
    let p = SdmaPacket::Gcr(GcrRequest {
        base_va: 0,
        limit_va: 0,
        control: 0xC3C0,
        range_is_pa: false,
        seq: 0,
        vmid: 0,
    });
    assert_eq!(decode(&gcr), Ok((p, 5)));
    assert_eq!(encode(p), gcr);
}

/// Linux's HDP flush (`sdma_v4_0_wait_reg_mem` with `hdp` = 1: register byte offsets, func
/// equal, retry forever) is a register poll with `hdp_flush`.
#[test]
fn kernel_hdp_flush_decodes() {
    let dw = [8 | (1 << 26) | (3 << 28), 0x5480 << 2, 0x5484 << 2, 1 << 2, 1 << 2, 0x0FFF_000A];
    let (p, n) = decode(&dw).unwrap();
    assert_eq!(n, 6);
    let SdmaPacket::PollRegister(r) = p else { panic!("{p:?}") };
    assert!(r.hdp_flush);
    assert_eq!(
        (r.func, r.registers, r.interval, r.retry_count),
        (PollFunc::Equal, [0x15200, 0x15210], 10, 0xFFF)
    );
    assert_eq!(encode(p), dw);
}

/// kfdtest's packets (`SDMAPacket.cpp`): a one-dword `WRITE` (its data not part of the
/// decoded packet), a broadcast `COPY_LINEAR` to two destinations, a global timestamp.
#[test]
fn kfdtest_packets_decode() {
    let dst = 0x7000_1000u64;
    let write = [2, dst as u32, 0, 0, 0xDEAD_BEEF];
    assert_eq!(decode(&write), Ok((SdmaPacket::Write { dst, dwords: 1 }, 5)));
    assert_eq!(decode(&write[..4]), Ok((SdmaPacket::Write { dst, dwords: 1 }, 5)), "data unread");
    assert_eq!(encode(SdmaPacket::Write { dst, dwords: 1 }), [2, dst as u32, 0, 0, 0]);
    let three = [2, dst as u32, 0, 2, 1, 2, 3];
    assert_eq!(decode(&three), Ok((SdmaPacket::Write { dst, dwords: 3 }, 7)));

    let copy = [1 | (1 << 27), (2 << 20) - 1, 0, 0x1000, 0, 0x2000, 0, 0x3000, 1];
    let p = SdmaPacket::CopyLinearBroadcast {
        src: 0x1000,
        dst: [0x2000, 0x1_0000_3000],
        bytes: 2 << 20,
    };
    assert_eq!(decode(&copy), Ok((p, 9)));
    assert_eq!(encode(p), copy);
    assert_eq!(decode(&copy[..7]), Err(SdmaError::Truncated), "a broadcast copy is 9 dwords");
}

/// `COPY_LINEAR_RECT` as ROCr's `BuildCopyRectCommand` fills it (pre-gfx12): element size,
/// offsets in elements, pitches and extents minus one; the rows it covers.
#[test]
fn linear_rect_layout_and_rows() {
    let r = LinearRect {
        element_log2: 2,
        src: RectSurface { addr: 0x10_0000, offset: [1, 2, 0], pitch: 64, slice_pitch: 64 * 16 },
        dst: RectSurface { addr: 0x20_0000, offset: [0, 0, 3], pitch: 32, slice_pitch: 32 * 8 },
        extent: [8, 4, 2],
    };
    let p = SdmaPacket::CopyLinearRect(r);
    let dw = encode(p);
    assert_eq!(
        dw,
        [
            1 | (4 << 8) | (2 << 29),
            0x10_0000,
            0,
            1 | (2 << 16),
            63 << 13,
            64 * 16 - 1,
            0x20_0000,
            0,
            0,
            3 | (31 << 13),
            32 * 8 - 1,
            7 | (3 << 16),
            1,
        ]
    );
    assert_eq!(decode(&dw), Ok((p, 13)));
    assert_eq!(r.row_bytes(), 32);
    // Row 1 of slice 1 of the source: x 1, y 3, z 1 elements of 4 bytes.
    assert_eq!(r.src.row_address(2, 1, 1), Some(0x10_0000 + (1 + 3 * 64 + 64 * 16) * 4));
    assert_eq!(r.dst.row_address(2, 0, 0), Some(0x20_0000 + 3 * 32 * 8 * 4));
}

#[test]
fn decoder_rejects_what_it_does_not_model() {
    let atomic = |h: u32, cmp: u32| [10 | h, 0x1000, 0, 1, 0, cmp, 0, 0];
    assert_eq!(decode(&atomic(15 << 25, 0)), Err(SdmaError::UnsupportedAtomic { operation: 15 }));
    assert_eq!(
        decode(&atomic(47 << 25 | 1 << 16, 0)),
        Err(SdmaError::ReservedNonZero { dword: 0 }),
        "loop"
    );
    assert_eq!(
        decode(&atomic(47 << 25, 1)),
        Err(SdmaError::ReservedNonZero { dword: 5 }),
        "compare"
    );
    assert_eq!(decode(&[10 | 47 << 25, 0x1004, 0, 1, 0, 0, 0, 0]), Err(SdmaError::Misaligned));
    assert_eq!(decode(&[2, 0x1000, 0, 1 << 20]), Err(SdmaError::ReservedNonZero { dword: 3 }));
    assert_eq!(
        decode(&[2 | 1 << 18, 0x1000, 0, 0]),
        Err(SdmaError::ReservedNonZero { dword: 0 }),
        "TMZ"
    );
    assert_eq!(decode(&[2, 0x1002, 0, 0]), Err(SdmaError::Misaligned));
    assert_eq!(decode(&[13 | (2 << 8), 0x1004, 0]), Err(SdmaError::Misaligned));
    for sub_op in [0u32, 1] {
        assert_eq!(
            decode(&[13 | sub_op << 8, 0x1000, 0]),
            Err(SdmaError::UnknownOpcode { op: 13, sub_op: sub_op as u8 })
        );
    }
    let mut rect = encode(SdmaPacket::CopyLinearRect(LinearRect {
        element_log2: 0,
        src: RectSurface { addr: 0, offset: [0; 3], pitch: 1, slice_pitch: 1 },
        dst: RectSurface { addr: 0x100, offset: [0; 3], pitch: 1, slice_pitch: 1 },
        extent: [1, 1, 1],
    }));
    assert!(decode(&rect).is_ok());
    rect[0] |= 5 << 29;
    assert_eq!(decode(&rect), Err(SdmaError::FieldOverflow), "element of 32 bytes");
    rect[0] &= !(7 << 29);
    rect[12] |= 1 << 16;
    assert_eq!(decode(&rect), Err(SdmaError::ReservedNonZero { dword: 12 }), "dst swap");
    rect[12] = 0;
    rect[1] = 2;
    assert_eq!(decode(&rect), Err(SdmaError::Misaligned));
    assert_eq!(decode(&[17 | 1 << 8, 1, 0, 0, 0]), Err(SdmaError::ReservedNonZero { dword: 1 }));
    assert_eq!(
        decode(&[17 | 1 << 8, 0, 0, 0, 1 << 28]),
        Err(SdmaError::ReservedNonZero { dword: 4 })
    );
    assert_eq!(decode(&[17, 0, 0, 0, 0]), Err(SdmaError::UnknownOpcode { op: 17, sub_op: 0 }));
    // Memory polls keep hdp_flush clear.
    assert_eq!(
        decode(&[8 | 1 << 31 | 1 << 26, 0, 0, 0, 0, 0]),
        Err(SdmaError::ReservedNonZero { dword: 0 })
    );
    // A rect whose last row would pass the end of the address space.
    let far = LinearRect {
        element_log2: 4,
        src: RectSurface { addr: u64::MAX - 3, offset: [0; 3], pitch: 1, slice_pitch: 1 },
        dst: RectSurface { addr: 0, offset: [0; 3], pitch: 1, slice_pitch: 1 },
        extent: [1, 1, 1],
    };
    assert_eq!(SdmaPacket::CopyLinearRect(far).validate(L), Err(SdmaError::AddressOverflow));
    assert_eq!(
        SdmaPacket::Write { dst: 0, dwords: MAX_WRITE_DWORDS + 1 }.validate(L),
        Err(SdmaError::InvalidSize)
    );
    assert_eq!(
        SdmaPacket::Nop { dwords: MAX_NOP_DWORDS + 1 }.validate(L),
        Err(SdmaError::InvalidSize)
    );
}

fn surface() -> impl Strategy<Value = RectSurface> {
    (any::<u64>(), 0..1u32 << 14, 0..1u32 << 14, 0..1u32 << 11, 1..=1u32 << 19, 1..=1u32 << 28)
        .prop_map(|(a, x, y, z, pitch, slice_pitch)| RectSurface {
            addr: (a >> 8) & !3,
            offset: [x, y, z],
            pitch,
            slice_pitch,
        })
}

fn new_packet() -> impl Strategy<Value = SdmaPacket> {
    prop_oneof![
        (any::<u64>(), any::<u64>(), any::<u64>(), 1..=1u32 << 22).prop_map(|(s, a, b, bytes)| {
            SdmaPacket::CopyLinearBroadcast { src: s >> 2, dst: [a >> 2, b >> 2], bytes }
        }),
        (0..=4u8, surface(), surface(), 1..=1u32 << 14, 1..=1u32 << 14, 1..=1u32 << 11).prop_map(
            |(element_log2, src, dst, x, y, z)| {
                SdmaPacket::CopyLinearRect(LinearRect { element_log2, src, dst, extent: [x, y, z] })
            }
        ),
        (any::<u64>(), 1..=MAX_WRITE_DWORDS)
            .prop_map(|(d, dwords)| SdmaPacket::Write { dst: (d >> 2) & !3, dwords }),
        (any::<bool>(), 0..7u32, any::<[u32; 4]>(), any::<u16>(), 0..0x1000u16).prop_map(
            |(hdp_flush, f, [r0, r1, reference, mask], interval, retry_count)| {
                SdmaPacket::PollRegister(RegisterPoll {
                    hdp_flush,
                    func: PollFunc::from_raw(f).unwrap(),
                    registers: [r0, r1],
                    reference,
                    mask,
                    interval,
                    retry_count,
                })
            }
        ),
        (any::<u64>(), any::<u64>())
            .prop_map(|(a, value)| SdmaPacket::AtomicAdd64 { addr: a & !7, value }),
        any::<u64>().prop_map(|a| SdmaPacket::Timestamp { addr: a & !7 }),
        (any::<u64>(), any::<u64>(), any::<u16>(), any::<bool>(), 0..4u8, 0..16u8).prop_map(
            |(b, l, control, range_is_pa, seq, vmid)| SdmaPacket::Gcr(GcrRequest {
                base_va: b & 0xFFFF_FFFF_FF80,
                limit_va: l & 0xFFFF_FFFF_FF80,
                control,
                range_is_pa,
                seq,
                vmid,
            })
        ),
    ]
}

proptest! {
    /// Every packet of the new kinds that validates encodes to dwords that decode back to it
    /// (a `WRITE`: from its header dwords alone).
    #[test]
    fn new_packets_round_trip(p in new_packet()) {
        prop_assume!(p.validate(L).is_ok());
        let dw = encode(p);
        prop_assert_eq!(decode(&dw), Ok((p, dw.len())));
        if let SdmaPacket::Write { .. } = p {
            prop_assert_eq!(decode(&dw[..4]), Ok((p, dw.len())));
        }
    }
}
