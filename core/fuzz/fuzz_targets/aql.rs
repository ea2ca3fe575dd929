//! Fuzzes the AQL packet decoder the simulator's packet processor uses
//! ([`AqlPacket::from_words`]) and the consumer side of the ring ([`AqlConsumer`]): every
//! 64-byte chunk of the input is a slot. The decoder must be total, and a decoded packet must
//! re-encode to exactly the words it came from; the byte form round-trips; the consumer pops
//! each published slot once, in order, and leaves it `INVALID`.
#![no_main]

use std::sync::atomic::Ordering;

use hsakmt_core::queue::aql::{
    AqlError, AqlPacket, HeaderFlags, INVALID_HEADER_WORD, PACKET_SIZE, PacketType, PacketWords,
};
use hsakmt_core::queue::ring::{
    AMD_QUEUE_READ_DISPATCH_ID_OFFSET, AMD_QUEUE_SIZE, AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET,
    AqlConsumer, AqlRingCells, AqlRingMemory, SharedAqlCells,
};
use hsakmt_core_fuzz::{Input, Mem};
use libfuzzer_sys::fuzz_target;

fn check_packet(bytes: &[u8; PACKET_SIZE]) -> Result<AqlPacket, ()> {
    let words = PacketWords::from_bytes(bytes);
    assert_eq!(&words.to_bytes(), bytes);
    match AqlPacket::from_words(&words) {
        Ok(p) => {
            assert_eq!(p.to_words(), Ok(words), "{p:?}");
            assert_eq!(p.packet_type() as u8, words.header() as u8);
            assert_eq!(p.flags().header(p.packet_type()), words.header());
            assert_eq!(p.completion_signal(), words.qw[6]);
            Ok(p)
        }
        Err(e) => {
            let _ = e.to_string();
            if let Ok((PacketType::Invalid, _)) = HeaderFlags::decode(words.header()) {
                assert_eq!(e, AqlError::InvalidPacket);
            }
            Err(())
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let control = input.u8();
    let slots = 1usize << (control & 3);
    let start = input.u64();

    let ring = Mem::new(0x10_0000, slots * PACKET_SIZE);
    let indices = Mem::new(0x20_0000, AMD_QUEUE_SIZE);
    let doorbell = Mem::new(0x30_0000, 4096);
    let cells = SharedAqlCells::new(AqlRingMemory {
        ring,
        indices,
        write_index_offset: AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET,
        read_index_offset: AMD_QUEUE_READ_DISPATCH_ID_OFFSET,
        doorbell,
        doorbell_offset: 0,
    })
    .expect("ring cells");
    cells.store_read_index(start, Ordering::Relaxed);
    let consumer = AqlConsumer::new(cells).expect("consumer");

    // Fill the slots from the input (the producer's side, done raw).
    let mut published = Vec::new();
    for i in 0..slots as u64 {
        let mut bytes = [0u8; PACKET_SIZE];
        let chunk = input.bytes(PACKET_SIZE);
        bytes[..chunk.len()].copy_from_slice(chunk);
        let _ = check_packet(&bytes);
        let words = PacketWords::from_bytes(&bytes);
        let slot = (start.wrapping_add(i) % slots as u64) as usize;
        let c = consumer.cells();
        c.store_body(slot, &words);
        c.store_header(slot, words.dw[0], Ordering::Release);
        published.push(words);
    }
    // Pop in order until the first INVALID slot.
    for (i, words) in published.iter().enumerate() {
        let index = start.wrapping_add(i as u64);
        assert_eq!(consumer.read_index(), index);
        if words.header() as u8 == PacketType::Invalid as u8 {
            assert_eq!(consumer.peek(), None);
            assert_eq!(consumer.pop(), None);
            break;
        }
        assert_eq!(consumer.peek(), Some(*words));
        assert_eq!(consumer.pop(), Some((index, *words)));
        let slot = (index % slots as u64) as usize;
        assert_eq!(consumer.cells().load_header(slot, Ordering::Relaxed), INVALID_HEADER_WORD);
    }
    // Whatever remains of the input: more slots for the decoder alone.
    while !input.is_empty() {
        let mut bytes = [0u8; PACKET_SIZE];
        let chunk = input.bytes(PACKET_SIZE);
        bytes[..chunk.len()].copy_from_slice(chunk);
        let _ = check_packet(&bytes);
    }
});
