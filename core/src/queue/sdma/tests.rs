extern crate std;

use super::*;
use crate::queue::test_mem::TestMem;
use proptest::prelude::*;
use std::vec::Vec;

fn ring(size: usize) -> (SdmaRing<TestMem>, SdmaConsumer<TestMem>, TestMem) {
    let mem = SdmaRingMemory {
        ring: TestMem::at(0x4000_0000, size),
        pointers: TestMem::new(64),
        rptr_offset: 8,
        wptr_offset: 16,
        doorbell: TestMem::new(4096),
        doorbell_offset: 24,
    };
    let db = mem.doorbell.clone();
    (
        SdmaRing::new(mem.clone(), SdmaLimits::COUNT22).unwrap(),
        SdmaConsumer::new(mem, SdmaLimits::COUNT22).unwrap(),
        db,
    )
}

#[test]
fn encodings_match_kernel_headers() {
    let l = SdmaLimits::COUNT22;
    let mut b = [0u32; 8];
    let copy = SdmaPacket::CopyLinear { src: 0x1_2345_6789, dst: 0xA_BCDE_F012, bytes: 0x100 };
    assert_eq!(copy.encode(l, &mut b), Ok(7));
    assert_eq!(&b[..7], &[0x0000_0001, 0xFF, 0, 0x2345_6789, 1, 0xBCDE_F012, 0xA]);
    let fill = SdmaPacket::ConstantFill { dst: 0x1000, data: 0xDEAD_BEEF, bytes: 8 };
    assert_eq!(fill.encode(l, &mut b), Ok(5));
    assert_eq!(&b[..5], &[0x8000_000B, 0x1000, 0, 0xDEAD_BEEF, 7]);
    let fence = SdmaPacket::Fence { addr: 0x2000, data: 5, mtype: 3 };
    assert_eq!(fence.encode(l, &mut b), Ok(4));
    assert_eq!(&b[..4], &[0x0003_0005, 0x2000, 0, 5]);
    assert_eq!(SdmaPacket::Trap { int_ctx: 42 }.encode(l, &mut b), Ok(2));
    assert_eq!(&b[..2], &[6, 42]);
    let poll = SdmaPacket::PollRegMem {
        addr: 0x3000,
        reference: 1,
        mask: !0,
        func: PollFunc::Equal,
        interval: 4,
        retry_count: 0xFFF,
    };
    assert_eq!(poll.encode(l, &mut b), Ok(6));
    assert_eq!(&b[..6], &[0xB000_0008, 0x3000, 0, 1, !0, 0x0FFF_0004]);
    assert_eq!(SdmaPacket::Nop { dwords: 3 }.encode(l, &mut b), Ok(3));
    assert_eq!(&b[..3], &[0x0002_0000, 0, 0]);
    assert_eq!(
        SdmaPacket::Fence { addr: 2, data: 0, mtype: 0 }.validate(l),
        Err(SdmaError::Misaligned)
    );
    assert_eq!(
        SdmaPacket::CopyLinear { src: 0, dst: 0, bytes: (1 << 22) + 1 }.validate(l),
        Err(SdmaError::InvalidSize)
    );
    assert!(
        SdmaPacket::CopyLinear { src: 0, dst: 0, bytes: (1 << 22) + 1 }
            .validate(SdmaLimits::COUNT30)
            .is_ok()
    );
}

#[test]
fn family_limits() {
    assert_eq!(SdmaLimits::for_gfx(9, 0, 0), Ok(SdmaLimits::COUNT22));
    assert_eq!(SdmaLimits::for_gfx(9, 0, 10), Ok(SdmaLimits::COUNT30));
    assert_eq!(SdmaLimits::for_gfx(9, 4, 2), Ok(SdmaLimits::COUNT22));
    assert_eq!(SdmaLimits::for_gfx(10, 1, 0), Ok(SdmaLimits::COUNT22));
    assert_eq!(SdmaLimits::for_gfx(10, 3, 0), Ok(SdmaLimits::COUNT30));
    assert_eq!(SdmaLimits::for_gfx(11, 0, 0), Ok(SdmaLimits::COUNT30));
    assert_eq!(SdmaLimits::for_gfx(12, 0, 1), Ok(SdmaLimits::COUNT30));
    assert_eq!(SdmaLimits::for_gfx(8, 0, 3), Err(SdmaError::UnsupportedGfx));
    assert_eq!(SdmaLimits::COUNT22.max_copy_bytes(), 0x40_0000);
    assert_eq!(SdmaLimits::COUNT30.max_copy_bytes(), 0x4000_0000);
}

#[test]
fn copy_planner_splits() {
    let l = SdmaLimits::COUNT22;
    let plan: Vec<_> = l.plan_copy(0x1000, 0x10_0000_0000, 9 << 20).unwrap().collect();
    assert_eq!(plan.len(), 3);
    assert_eq!(l.copy_packets(9 << 20), 3);
    assert_eq!(
        plan[0],
        SdmaPacket::CopyLinear { src: 0x1000, dst: 0x10_0000_0000, bytes: 4 << 20 }
    );
    assert_eq!(
        plan[2],
        SdmaPacket::CopyLinear {
            src: 0x1000 + (8 << 20),
            dst: 0x10_0000_0000 + (8 << 20),
            bytes: 1 << 20
        }
    );
    assert_eq!(l.plan_copy(0, 0, 0).unwrap_err(), SdmaError::InvalidSize);
    assert_eq!(l.plan_copy(u64::MAX, 0, 2).unwrap_err(), SdmaError::AddressOverflow);
    let fills: Vec<_> = l.plan_fill(0x100, 7, (4 << 20) + 8).unwrap().collect();
    assert_eq!(fills.len(), 2);
    assert_eq!(l.plan_fill(0x101, 7, 8).unwrap_err(), SdmaError::Misaligned);
}

#[test]
fn ring_pads_at_end_and_round_trips() {
    let (mut r, c, db) = ring(256); // 64 dwords
    // 8 copies = 224 bytes; a copy (28) + trap (8) then leaves 4 bytes before the end, so
    // the trap wraps after a 1-dword NOP.
    let copies: Vec<_> = (0..9u64)
        .map(|i| SdmaPacket::CopyLinear { src: i * 16, dst: 0x9000 + i * 16, bytes: 16 })
        .collect();
    let trap = SdmaPacket::Trap { int_ctx: 3 };
    assert_eq!(r.try_submit(copies[..8].iter().copied()), Ok(224));
    assert_eq!(db.last_doorbell(), 224);
    assert_eq!(r.try_submit([copies[8], trap]), Err(SdmaError::Full));
    for p in &copies[..8] {
        assert_eq!(c.pop(), Some(Ok(*p)));
    }
    assert_eq!(c.pop(), None);
    assert_eq!(r.try_submit([copies[8], trap]), Ok(264));
    assert_eq!(c.pop(), Some(Ok(copies[8])));
    assert_eq!(c.pop(), Some(Ok(SdmaPacket::Nop { dwords: 1 })));
    assert_eq!(c.pop(), Some(Ok(trap)));
    assert_eq!(c.pop(), None);
    assert_eq!(c.rptr(), r.wptr());
    let too_big = (0..10).map(|_| copies[0]);
    assert_eq!(r.try_submit(too_big), Err(SdmaError::TooLarge));
    let w = r.wptr();
    assert_eq!(
        r.submit([SdmaPacket::Fence { addr: 0x10, data: 1, mtype: 0 }], || unreachable!()),
        Ok(w + 16)
    );
}

/// Fuzzing finding (target `sdma`): a read pointer near 2^64 (the pointers live in
/// process-writable memory) overflowed `rptr + 4 · i` while the consumer fetched the
/// packet, a debug-build panic. Positions now wrap.
#[test]
fn consumer_survives_a_read_pointer_at_the_end_of_the_u64_range() {
    let (mut r, c, _db) = ring(256);
    assert_eq!(r.try_submit([SdmaPacket::Trap { int_ctx: 1 }]), Ok(8));
    let rptr = u64::MAX - 3; // the ring's last dword, then wrapping to byte 0
    let ring_mem = &r.geo.mem;
    ring_mem.pointers.u64s()[1].store(rptr, Ordering::Relaxed);
    ring_mem.pointers.u64s()[2].store(rptr.wrapping_add(12), Ordering::Relaxed);
    ring_mem.ring.u32s()[63].store(0, Ordering::Relaxed); // a 1-dword NOP
    assert_eq!(c.pop(), Some(Ok(SdmaPacket::Nop { dwords: 1 })));
    assert_eq!(c.rptr(), 0);
    assert_eq!(c.pop(), Some(Ok(SdmaPacket::Trap { int_ctx: 1 })));
    assert_eq!(c.rptr(), 8);
    assert_eq!(c.pop(), None);
}

#[test]
fn decoder_rejects() {
    let l = SdmaLimits::COUNT22;
    assert_eq!(SdmaPacket::decode(l, &[]), Err(SdmaError::Truncated));
    assert_eq!(SdmaPacket::decode(l, &[1, 0, 0]), Err(SdmaError::Truncated));
    assert_eq!(
        SdmaPacket::decode(l, &[0x0102]),
        Err(SdmaError::UnknownOpcode { op: 2, sub_op: 1 })
    );
    assert_eq!(
        SdmaPacket::decode(l, &[1 | 1 << 18, 0, 0, 0, 0, 0, 0]),
        Err(SdmaError::ReservedNonZero { dword: 0 })
    );
    assert_eq!(
        SdmaPacket::decode(l, &[1, 1 << 22, 0, 0, 0, 0, 0]),
        Err(SdmaError::ReservedNonZero { dword: 1 })
    );
    assert!(SdmaPacket::decode(SdmaLimits::COUNT30, &[1, 1 << 22, 0, 0, 0, 0, 0]).is_ok());
    // A register poll with reserved header bit 27 set.
    assert_eq!(
        SdmaPacket::decode(l, &[8 | 1 << 27, 0, 0, 0, 0, 0]),
        Err(SdmaError::ReservedNonZero { dword: 0 })
    );
}

/// Fuzzing finding (target `sdma`): a `CONSTANT_FILL` whose count (`bytes − 1`) was not
/// one less than a multiple of 4 decoded as a fill of the next whole dword count, so the
/// packet did not re-encode to its dwords (count 0, "1 byte", decoded as 4 bytes). Such a
/// count is refused, as the encoder never writes one.
#[test]
fn fill_count_must_cover_whole_dwords() {
    let l = SdmaLimits::COUNT22;
    let fill = |count: u32| [0x8000_000B, 0x1000, 0, 0x124, count];
    for count in [0, 1, 2, 4, 0x3F_FFFC] {
        assert_eq!(SdmaPacket::decode(l, &fill(count)), Err(SdmaError::InvalidSize));
    }
    for (count, bytes) in [(3, 4), (7, 8), (0x3F_FFFF, 1 << 22)] {
        let p = SdmaPacket::ConstantFill { dst: 0x1000, data: 0x124, bytes };
        assert_eq!(SdmaPacket::decode(l, &fill(count)), Ok((p, 5)));
        let mut out = [0u32; 5];
        assert_eq!(p.encode(l, &mut out), Ok(5));
        assert_eq!(out, fill(count));
    }
}

fn packet() -> impl Strategy<Value = SdmaPacket> {
    prop_oneof![
        (1..=64u32).prop_map(|dwords| SdmaPacket::Nop { dwords }),
        (any::<u32>(), any::<u32>(), 1..=(1u32 << 22)).prop_map(|(s, d, bytes)| {
            SdmaPacket::CopyLinear { src: u64::from(s), dst: u64::from(d), bytes }
        }),
        (any::<u32>(), any::<u32>(), 1..=(1u32 << 20)).prop_map(|(d, data, n)| {
            SdmaPacket::ConstantFill { dst: u64::from(d & !3), data, bytes: n * 4 }
        }),
        (any::<u64>(), any::<u32>(), 0..8u8).prop_map(|(a, data, mtype)| SdmaPacket::Fence {
            addr: a & !3,
            data,
            mtype
        }),
        (0..(1u32 << 28)).prop_map(|int_ctx| SdmaPacket::Trap { int_ctx }),
        (any::<u64>(), any::<u32>(), any::<u32>(), 0..7u32, any::<u16>(), 0..0x1000u16).prop_map(
            |(a, reference, mask, f, interval, retry_count)| {
                SdmaPacket::PollRegMem {
                    addr: a & !3,
                    reference,
                    mask,
                    func: PollFunc::from_raw(f).unwrap(),
                    interval,
                    retry_count,
                }
            }
        ),
    ]
}

proptest! {
    #[test]
    fn encode_decode_round_trip(p in packet()) {
        let mut b = [0u32; 64];
        let n = p.encode(SdmaLimits::COUNT22, &mut b).unwrap();
        prop_assert_eq!(SdmaPacket::decode(SdmaLimits::COUNT22, &b[..n]), Ok((p, n)));
    }

    #[test]
    fn decode_is_total(words in proptest::collection::vec(any::<u32>(), 0..8)) {
        let _ = SdmaPacket::decode(SdmaLimits::COUNT30, &words);
    }

    /// Random submissions and consumption: every packet comes back in order, wptr/rptr stay
    /// consistent, and nothing straddles the ring end.
    #[test]
    fn ring_round_trip(batches in proptest::collection::vec(proptest::collection::vec(packet(), 1..6), 1..30), consume in proptest::collection::vec(0..4usize, 30)) {
        let (mut r, c, _db) = ring(512);
        let mut expected = std::collections::VecDeque::new();
        for (batch, k) in batches.iter().zip(consume.iter().cycle()) {
            match r.try_submit(batch.iter().copied()) {
                Ok(_) => expected.extend(batch.iter().copied()),
                Err(e) => prop_assert!(e == SdmaError::Full || e == SdmaError::TooLarge),
            }
            for _ in 0..*k {
                loop {
                    match c.pop() {
                        None => break,
                        Some(Ok(SdmaPacket::Nop { dwords })) if expected.front() != Some(&SdmaPacket::Nop { dwords }) => continue,
                        Some(got) => { prop_assert_eq!(got, Ok(expected.pop_front().unwrap())); break; }
                    }
                }
            }
        }
        while let Some(got) = c.pop() {
            match got {
                Ok(SdmaPacket::Nop { dwords }) if expected.front() != Some(&SdmaPacket::Nop { dwords }) => {}
                got => prop_assert_eq!(got, Ok(expected.pop_front().unwrap())),
            }
        }
        prop_assert!(expected.is_empty());
        prop_assert_eq!(c.rptr(), r.wptr());
    }
}
