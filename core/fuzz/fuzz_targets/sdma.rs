//! Fuzzes the SDMA packet decoder the simulated engine uses ([`SdmaPacket::decode`]) and the
//! engine side of the ring ([`SdmaConsumer`]). The input is a stream of dwords decoded at every
//! offset, then the contents of a ring with arbitrary read and write pointers. The decoder
//! must be total; a decoded packet is valid and re-encodes to the dwords it came from (a NOP:
//! its header, a WRITE: its four header dwords; payload and data are not inspected); the consumer never panics, advances the read
//! pointer by exactly the packets it returns, and leaves it alone on an error.
#![no_main]

use std::sync::atomic::Ordering;

use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::sdma::{
    MAX_PACKET_DWORDS, SdmaConsumer, SdmaError, SdmaLimits, SdmaPacket, SdmaRingMemory,
};
use hsakmt_core_fuzz::{Input, Mem};
use libfuzzer_sys::fuzz_target;

fn check_decode(limits: SdmaLimits, dw: &[u32]) -> Option<(SdmaPacket, usize)> {
    let (p, n) = match SdmaPacket::decode(limits, dw) {
        Ok(x) => x,
        Err(e) => {
            let _ = e.to_string();
            return None;
        }
    };
    assert_eq!(n, p.dwords() as usize);
    assert_eq!(p.validate(limits), Ok(()));
    let mut out = vec![0u32; n];
    assert_eq!(p.encode(limits, &mut out), Ok(n));
    match p {
        SdmaPacket::Nop { .. } => assert_eq!(out[0], dw[0]),
        SdmaPacket::Write { .. } => assert_eq!(&out[..4], &dw[..4], "{p:?}"),
        _ => assert_eq!(&out[..], &dw[..n], "{p:?}"),
    }
    assert_eq!(SdmaPacket::decode(limits, &out), Ok((p, n)));
    Some((p, n))
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let control = input.u8();
    let limits = if control & 1 == 0 { SdmaLimits::COUNT22 } else { SdmaLimits::COUNT30 };
    let stream = usize::from(input.u8() % 32);
    let dwords: Vec<u32> = (0..stream).map(|_| input.u32()).collect();
    for i in 0..dwords.len() {
        let _ = check_decode(limits, &dwords[i..]);
    }

    // A ring of 64..8192 bytes (below 256 is refused) with arbitrary contents and pointers.
    let size = 64usize << (control >> 1 & 7);
    let ring = Mem::new(0x4000_0000, size);
    let pointers = Mem::new(0x5000_0000, 64);
    let mem = SdmaRingMemory {
        ring: ring.clone(),
        pointers: pointers.clone(),
        rptr_offset: 8,
        wptr_offset: 16,
        doorbell: Mem::new(0x6000_0000, 64),
        doorbell_offset: 24,
    };
    for w in ring.u32s() {
        w.store(input.u32(), Ordering::Relaxed);
    }
    let rptr = input.u64();
    let wptr = match control >> 4 & 3 {
        // A little ahead of the read pointer, as a producer keeps it.
        0 | 1 => rptr.wrapping_add(u64::from(input.u8()) * 4),
        2 => rptr.wrapping_add(u64::from(input.u8())),
        _ => input.u64(),
    };
    pointers.u64s()[1].store(rptr, Ordering::Relaxed);
    pointers.u64s()[2].store(wptr, Ordering::Relaxed);
    let consumer = match SdmaConsumer::new(mem, limits) {
        Ok(c) => c,
        Err(e) => {
            assert_eq!(e, SdmaError::InvalidRing);
            assert!(size < 256);
            return;
        }
    };
    for _ in 0..64 {
        let before = consumer.rptr();
        match consumer.pop() {
            None => {
                assert_eq!(before, wptr);
                break;
            }
            Some(Ok(p)) => {
                let after = consumer.rptr();
                assert_eq!(after.wrapping_sub(before), 4 * u64::from(p.dwords()), "{p:?}");
                // Only a NOP's payload and a WRITE's data follow the fixed part of a packet.
                assert!(
                    p.dwords() as usize <= MAX_PACKET_DWORDS
                        || matches!(p, SdmaPacket::Nop { .. } | SdmaPacket::Write { .. })
                );
            }
            Some(Err(_)) => {
                assert_eq!(consumer.rptr(), before);
                break;
            }
        }
    }
});
