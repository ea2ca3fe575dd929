//! Fuzzes the decoding of the `kfd_event_data` array `WAIT_EVENTS` copies back: each entry is
//! built from arbitrary bytes through its byte image and decoded
//! ([`hsakmt_core::event::decode`]) for every event type, and the array as a whole goes through
//! [`WaitSet::finish`] — what [`Kfd::wait_events`](hsakmt_core::device::Kfd::wait_events) does
//! with the kernel's reply. Nothing may panic; decoded faults and exceptions re-encode to the
//! kernel's values (flags normalised to 0/1) and decode again to themselves; the wait outcome
//! obeys its rules.
#![no_main]

use hsakmt_core::event::{
    EventData, EventHandle, EventType, Fired, WaitMode, WaitResult, WaitSet, decode,
};
use hsakmt_core::uapi::{UapiType, kfd_event_data};
use hsakmt_core_fuzz::Input;
use libfuzzer_sys::fuzz_target;

fn node_of(gpu_id: u32) -> Option<u32> {
    (!gpu_id.is_multiple_of(3)).then_some(gpu_id % 7)
}

/// Decodes `data` as each type and checks the round trips.
fn check_decode(data: &kfd_event_data) {
    for t in EventType::ALL {
        let Some(d) = decode(t, data, node_of) else {
            let gpu = match t {
                EventType::Memory => data.data.memory_exception_data().gpu_id,
                EventType::HwException => data.data.hw_exception_data().gpu_id,
                _ => continue,
            };
            assert_eq!(gpu, 0, "{t:?} data with a gpu_id must decode");
            continue;
        };
        let mut again = kfd_event_data::default();
        match d {
            EventData::MemoryFault(m) => {
                assert_eq!(t, EventType::Memory);
                let raw = data.data.memory_exception_data();
                let k = m.to_kernel();
                assert_eq!((k.va, k.gpu_id, k.ErrorType), (raw.va, raw.gpu_id, raw.ErrorType));
                let bit = |v: u32| u32::from(v != 0);
                assert_eq!(k.failure.NotPresent, bit(raw.failure.NotPresent));
                assert_eq!(k.failure.ReadOnly, bit(raw.failure.ReadOnly));
                assert_eq!(k.failure.NoExecute, bit(raw.failure.NoExecute));
                assert_eq!(k.failure.imprecise, bit(raw.failure.imprecise));
                assert_eq!(m.node, node_of(m.gpu_id));
                assert!(m.fatal);
                assert_eq!(m.is_ecc(), m.error.is_ecc());
                again.data = k.into();
            }
            EventData::HwException(h) => {
                assert_eq!(t, EventType::HwException);
                let raw = data.data.hw_exception_data();
                let k = h.to_kernel();
                assert_eq!(
                    (k.reset_type, k.reset_cause, k.gpu_id),
                    (raw.reset_type, raw.reset_cause, raw.gpu_id)
                );
                assert_eq!(k.memory_lost, u32::from(raw.memory_lost != 0));
                again.data = k.into();
            }
        }
        assert_eq!(decode(t, &again, node_of), Some(d));
        // The byte image of the re-encoded entry decodes alike.
        let image: [u8; kfd_event_data::SIZE] = again.to_bytes();
        assert_eq!(decode(t, &kfd_event_data::read_from(&image), node_of), Some(d));
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let control = input.u8();
    let mode = if control & 1 == 0 { WaitMode::Any } else { WaitMode::All };
    let result = if control & 2 == 0 { WaitResult::Complete } else { WaitResult::TimedOut };
    let ages = control & 4 != 0;
    let n = usize::from(control >> 3 & 7) + 1;

    let mut set: WaitSet<8> = WaitSet::new();
    let mut types = [EventType::Signal; 8];
    let mut bound = 0;
    for (i, ty) in types.iter_mut().enumerate().take(n) {
        let spec = input.u8();
        *ty = EventType::ALL[usize::from(spec % 9)];
        let age = if spec & 0x80 != 0 { input.u64() } else { 0 };
        let handle = EventHandle::from_raw(1 << 32 | i as u64).expect("handle");
        assert_eq!(set.push_with_age(handle, age), Ok(i));
        if set.bind(i, i as u32 + 1, *ty, ages).is_err() {
            // An age on a type without ages: the wait is refused before the kernel sees it.
            assert!(age != 0 && !(ages && ty.has_age()));
            return;
        }
        bound += 1;
    }
    assert!(set.bind(bound, 0, EventType::Signal, ages).is_err());

    // The kernel's reply, byte image by byte image.
    let kernel = set.kernel_mut();
    assert_eq!(kernel.len(), n);
    for (i, k) in kernel.iter_mut().enumerate() {
        assert_eq!(k.event_id, i as u32 + 1);
        *k = input.uapi();
        check_decode(k);
    }
    let reply: Vec<kfd_event_data> = set.kernel_mut().to_vec();
    set.finish(mode, result, node_of);

    assert_eq!(set.result(), Some(result));
    for (i, k) in reply.iter().enumerate() {
        let fired = set.fired(i);
        match (result, mode) {
            (WaitResult::Complete, WaitMode::All) => assert_eq!(fired, Fired::Yes),
            (WaitResult::TimedOut, WaitMode::Any) => assert_eq!(fired, Fired::No),
            (WaitResult::TimedOut, WaitMode::All) => assert_eq!(fired, Fired::Unknown),
            (WaitResult::Complete, WaitMode::Any) => {}
        }
        match set.data(i) {
            Some(d) => {
                assert_eq!(fired, Fired::Yes);
                assert_eq!(decode(types[i], k, node_of), Some(d));
            }
            None if fired == Fired::Yes => assert_eq!(decode(types[i], k, node_of), None),
            None => {}
        }
        let _ = set.age(i);
    }
    assert_eq!(set.fired(n), Fired::Unknown);
    assert_eq!(set.data(n), None);
});
