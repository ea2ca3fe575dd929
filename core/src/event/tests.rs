//! Tests of the event bookkeeping: the table against a model (proptest state machine), the
//! wait set's reading of the kernel's answers, decoding, and the callback protocol.

use std::collections::BTreeMap;
use std::vec::Vec;

use proptest::prelude::*;

use super::*;
use crate::uapi::{kfd_event_data, kfd_hsa_signal_event_data};

fn record(id: u32, event_type: EventType) -> EventRecord {
    EventRecord {
        id,
        event_type,
        reset: ResetMode::Auto,
        node: 0,
        slot: event_type.has_slot().then_some(id as u16),
        trigger_data: id,
        age: if event_type.has_age() { INITIAL_AGE } else { 0 },
        dispatch_age: 0,
        observed: 0,
    }
}

// ---------------------------------------------------------------- table vs model

const CAP: usize = 8;

#[derive(Debug, Clone)]
enum Op {
    Reserve,
    Fill(usize, u32, u8),
    Cancel(usize),
    Get(usize),
    BeginDestroy(usize),
    AbortDestroy(usize),
    FinishDestroy(usize),
    LearnAge(usize, u64),
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    // Handles are picked by position in the history of every handle ever issued, so stale
    // handles are exercised as much as live ones.
    let k = 0usize..64;
    prop_oneof![
        4 => Just(Op::Reserve),
        4 => (k.clone(), any::<u32>(), 0u8..9).prop_map(|(k, id, t)| Op::Fill(k, id, t)),
        1 => k.clone().prop_map(Op::Cancel),
        2 => k.clone().prop_map(Op::Get),
        2 => k.clone().prop_map(Op::BeginDestroy),
        1 => k.clone().prop_map(Op::AbortDestroy),
        2 => k.clone().prop_map(Op::FinishDestroy),
        2 => (k, 0u64..10).prop_map(|(k, a)| Op::LearnAge(k, a)),
        1 => Just(Op::Clear),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum M {
    Reserved,
    Live(EventRecord),
    Destroying(EventRecord),
}

fn pick(history: &[EventHandle], k: usize) -> EventHandle {
    if history.is_empty() { EventHandle::new(0, 1) } else { history[k % history.len()] }
}

fn check(table: &EventTable<CAP>, model: &BTreeMap<EventHandle, M>) {
    let live: Vec<_> = model
        .iter()
        .filter_map(|(h, m)| match m {
            M::Live(r) => Some((*h, *r)),
            _ => None,
        })
        .collect();
    let existing = model.values().filter(|m| !matches!(m, M::Reserved)).count();
    assert_eq!(table.len(), existing);
    let mut seen: Vec<_> = table.iter().map(|(h, r)| (h, *r)).collect();
    seen.sort_by_key(|(h, _)| *h);
    assert_eq!(seen, live);
    for (h, m) in model {
        assert_eq!(table.get(*h).ok().copied(), if let M::Live(r) = m { Some(*r) } else { None });
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
    ))]

    #[test]
    fn table_matches_model(ops in proptest::collection::vec(op(), 1..200)) {
        let mut table: EventTable<CAP> = EventTable::new();
        let mut model: BTreeMap<EventHandle, M> = BTreeMap::new();
        let mut history: Vec<EventHandle> = Vec::new();
        for op in ops {
            match op {
                Op::Reserve => {
                    let r = table.reserve();
                    if model.len() < CAP {
                        let h = r.unwrap();
                        prop_assert!(!model.contains_key(&h), "a handle in use was reissued");
                        prop_assert!(!history.contains(&h), "a stale handle was reissued");
                        prop_assert_ne!(h.generation(), 0);
                        model.insert(h, M::Reserved);
                        history.push(h);
                    } else {
                        prop_assert_eq!(r, Err(Error::TableFull));
                    }
                }
                Op::Fill(k, id, t) => {
                    let h = pick(&history, k);
                    let rec = record(id, EventType::ALL[usize::from(t)]);
                    let r = table.fill(h, rec);
                    if model.get(&h) == Some(&M::Reserved) {
                        prop_assert_eq!(r, Ok(()));
                        model.insert(h, M::Live(rec));
                    } else {
                        prop_assert_eq!(r, Err(Error::InvalidHandle));
                    }
                }
                Op::Cancel(k) => {
                    let h = pick(&history, k);
                    let r = table.cancel(h);
                    if model.get(&h) == Some(&M::Reserved) {
                        prop_assert_eq!(r, Ok(()));
                        model.remove(&h);
                    } else {
                        prop_assert_eq!(r, Err(Error::InvalidHandle));
                    }
                }
                Op::Get(k) => {
                    let h = pick(&history, k);
                    let expect = match model.get(&h) { Some(M::Live(r)) => Ok(*r), _ => Err(Error::InvalidHandle) };
                    prop_assert_eq!(table.get(h).copied(), expect);
                }
                Op::BeginDestroy(k) => {
                    let h = pick(&history, k);
                    let r = table.begin_destroy(h);
                    match model.get(&h).copied() {
                        Some(M::Live(rec)) => {
                            prop_assert_eq!(r, Ok(rec));
                            model.insert(h, M::Destroying(rec));
                        }
                        _ => prop_assert_eq!(r, Err(Error::InvalidHandle)),
                    }
                }
                Op::AbortDestroy(k) => {
                    let h = pick(&history, k);
                    let r = table.abort_destroy(h);
                    match model.get(&h).copied() {
                        Some(M::Destroying(rec)) => {
                            prop_assert_eq!(r, Ok(()));
                            model.insert(h, M::Live(rec));
                        }
                        _ => prop_assert_eq!(r, Err(Error::InvalidHandle)),
                    }
                }
                Op::FinishDestroy(k) => {
                    let h = pick(&history, k);
                    let r = table.finish_destroy(h);
                    match model.get(&h).copied() {
                        Some(M::Destroying(rec)) => {
                            prop_assert_eq!(r, Ok(rec));
                            model.remove(&h);
                        }
                        _ => prop_assert_eq!(r, Err(Error::InvalidHandle)),
                    }
                }
                Op::LearnAge(k, age) => {
                    let h = pick(&history, k);
                    match (table.get_mut(h), model.get_mut(&h)) {
                        (Ok(r), Some(M::Live(m))) => {
                            r.learn_age(age);
                            m.age = m.age.max(age);
                        }
                        (Err(e), m) => {
                            prop_assert_eq!(e, Error::InvalidHandle);
                            prop_assert!(!matches!(m, Some(M::Live(_))));
                        }
                        (Ok(_), m) => prop_assert!(false, "table has a live event the model has as {:?}", m),
                    }
                }
                Op::Clear => {
                    table.clear();
                    model.clear();
                }
            }
            check(&table, &model);
        }
        // Whatever happened, the table can be filled to capacity once cleared.
        table.clear();
        for _ in 0..CAP {
            prop_assert!(table.reserve().is_ok());
        }
        prop_assert_eq!(table.reserve(), Err(Error::TableFull));
    }

    #[test]
    fn memory_fault_round_trips(
        gpu_id in 1u32..,
        address in any::<u64>(),
        flags in 0u8..16,
        error in 0u32..6,
    ) {
        let fault = MemoryFault {
            gpu_id,
            node: Some(gpu_id % 7),
            address,
            flags: FaultFlags::from_bits_truncate(flags),
            error: MemoryError::from_code(error),
            fatal: true,
        };
        let data = kfd_event_data { data: fault.to_kernel().into(), ..Default::default() };
        let back = decode(EventType::Memory, &data, |g| Some(g % 7));
        prop_assert_eq!(back, Some(EventData::MemoryFault(fault)));
        prop_assert_eq!(fault.is_ecc(), error == 1 || error == 2);
        // Other types carry no data.
        prop_assert_eq!(decode(EventType::Signal, &data, |_| None), None);
    }

    #[test]
    fn hw_exception_round_trips(gpu_id in 1u32.., reset in 0u32..3, cause in 0u32..3, lost: bool) {
        let hw = HwException {
            gpu_id,
            node: None,
            reset: ResetType::from_code(reset),
            cause: ResetCause::from_code(cause),
            memory_lost: lost,
        };
        let data = kfd_event_data { data: hw.to_kernel().into(), ..Default::default() };
        prop_assert_eq!(decode(EventType::HwException, &data, |_| None), Some(EventData::HwException(hw)));
        prop_assert_eq!(ResetType::from_code(reset).code(), reset);
        prop_assert_eq!(ResetCause::from_code(cause).code(), cause);
    }

    #[test]
    fn handles_round_trip_through_raw(index: u16, generation in 1u32..) {
        let h = EventHandle::new(index, generation);
        prop_assert_eq!(EventHandle::from_raw(h.to_raw()), Some(h));
    }
}

#[test]
fn table_reuses_slots_with_new_generations() {
    let mut t: EventTable<2> = EventTable::new();
    let a = t.reserve().unwrap();
    t.fill(a, record(1, EventType::Signal)).unwrap();
    let b = t.reserve().unwrap();
    assert_eq!(t.reserve(), Err(Error::TableFull));
    t.cancel(b).unwrap();
    let b2 = t.reserve().unwrap();
    assert_eq!(b2.index(), b.index());
    assert_ne!(b2, b, "a reused slot gets a new generation");
    assert_eq!(t.get(b), Err(Error::InvalidHandle));
    t.begin_destroy(a).unwrap();
    assert_eq!(t.get(a), Err(Error::InvalidHandle), "an event being destroyed is unusable");
    assert_eq!(t.begin_destroy(a), Err(Error::InvalidHandle), "no double destroy");
    t.finish_destroy(a).unwrap();
    assert_eq!(t.find_id(1), None);
    assert!(t.is_empty());
}

#[test]
fn raw_handles_reject_impossible_values() {
    assert_eq!(EventHandle::from_raw(0), None, "generation 0 is never handed out");
    assert_eq!(EventHandle::from_raw((1 << 32) | 0x1_0000), None);
}

#[test]
fn kernel_constants() {
    assert_eq!(EVENT_PAGE_SIZE, 32 * 1024);
    assert_eq!(mailbox_address(0x1000, 3), Some(0x1018));
    assert_eq!(mailbox_address(0x1000, EVENT_SLOTS), None);
    assert_eq!(mailbox_address(u64::MAX, 1), None);
    assert_eq!(Timeout::Immediate.to_kernel(), 0);
    assert_eq!(Timeout::Infinite.to_kernel(), 0xFFFF_FFFF);
    assert_eq!(Timeout::Millis(u32::MAX).to_kernel(), 0xFFFF_FFFE, "never infinite by accident");
    assert_eq!(Timeout::Millis(5).as_nanos(), Some(5_000_000));
    for t in EventType::ALL {
        assert_eq!(EventType::from_code(t.code()), Some(t));
    }
    assert_eq!(EventType::from_code(9), None);
    assert!(EventType::Signal.is_cpu_settable() && !EventType::Debug.is_cpu_settable());
    assert!(EventType::Debug.has_slot() && !EventType::Memory.has_slot());
}

// ---------------------------------------------------------------- wait sets

/// A set bound as the device layer binds it, with the kernel's answer applied by `kernel`.
fn waited(
    entries: &[(EventType, u64)],
    ages: bool,
    mode: WaitMode,
    result: WaitResult,
    kernel: impl Fn(usize, &mut kfd_event_data),
) -> WaitSet<8> {
    let mut set: WaitSet<8> = WaitSet::new();
    for (i, (t, age)) in entries.iter().enumerate() {
        set.push_with_age(EventHandle::new(i as u16, 1), *age).unwrap();
        set.bind(i, i as u32 + 1, *t, ages).unwrap();
    }
    for (i, k) in set.kernel_mut().iter_mut().enumerate() {
        assert_eq!(k.event_id, i as u32 + 1);
        kernel(i, k);
    }
    set.finish(mode, result, |g| Some(g + 100));
    set
}

#[test]
fn ages_tell_which_events_of_a_wait_any_fired() {
    let set = waited(
        &[(EventType::Signal, 3), (EventType::Signal, 5)],
        true,
        WaitMode::Any,
        WaitResult::Complete,
        |i, k| {
            assert_eq!(
                k.data.signal_event_data().last_event_age,
                [3, 5][i],
                "ages reach the kernel"
            );
            if i == 1 {
                k.data = kfd_hsa_signal_event_data { last_event_age: 6 }.into();
            }
        },
    );
    assert_eq!((set.fired(0), set.fired(1)), (Fired::No, Fired::Yes));
    assert_eq!((set.age(0), set.age(1)), (3, 6));
    assert_eq!(set.fired_positions().collect::<Vec<_>>(), [1]);
}

#[test]
fn ages_need_signal_events_and_a_kernel_with_ages() {
    let mut set: WaitSet<2> = WaitSet::new();
    set.push_with_age(EventHandle::new(0, 1), 2).unwrap();
    assert_eq!(set.bind(0, 1, EventType::Memory, true), Err(Error::NoEventAge));
    assert_eq!(set.bind(0, 1, EventType::Signal, false), Err(Error::NoEventAge));
    assert_eq!(set.bind(0, 1, EventType::Signal, true), Ok(()));
    set.push(EventHandle::new(1, 1)).unwrap();
    assert_eq!(set.push(EventHandle::new(2, 1)), Err(Error::WaitSetFull));
}

#[test]
fn data_tells_which_exception_fired_and_one_unknown_is_deduced() {
    let set = waited(
        &[(EventType::Memory, 0), (EventType::HwException, 0), (EventType::Signal, 0)],
        true,
        WaitMode::Any,
        WaitResult::Complete,
        |i, k| {
            if i == 0 {
                let fault = MemoryFault {
                    gpu_id: 7,
                    node: None,
                    address: 0x1000,
                    flags: FaultFlags::NOT_PRESENT,
                    error: MemoryError::None,
                    fatal: true,
                };
                k.data = fault.to_kernel().into();
            }
        },
    );
    assert_eq!(set.fired(0), Fired::Yes);
    assert!(matches!(set.data(0), Some(EventData::MemoryFault(f)) if f.node == Some(107)));
    assert_eq!((set.fired(1), set.fired(2)), (Fired::Unknown, Fired::Unknown));

    // Nothing else could have completed it: the only unknown one did.
    let set = waited(
        &[(EventType::Memory, 0), (EventType::Queue, 0)],
        true,
        WaitMode::Any,
        WaitResult::Complete,
        |_, _| {},
    );
    assert_eq!((set.fired(0), set.fired(1)), (Fired::No, Fired::Yes));
}

#[test]
fn timeouts_and_wait_all() {
    let any =
        waited(&[(EventType::Signal, 0); 2], true, WaitMode::Any, WaitResult::TimedOut, |_, _| {});
    assert_eq!((any.fired(0), any.fired(1)), (Fired::No, Fired::No));
    let all =
        waited(&[(EventType::Signal, 0); 2], true, WaitMode::All, WaitResult::TimedOut, |_, _| {});
    assert_eq!(all.fired(0), Fired::Unknown, "a timed-out wait-all may have consumed some");
    let done =
        waited(&[(EventType::Signal, 0); 2], true, WaitMode::All, WaitResult::Complete, |_, _| {});
    assert_eq!((done.fired(0), done.fired(1)), (Fired::Yes, Fired::Yes));
    assert_eq!(done.result(), Some(WaitResult::Complete));
    let mut fresh: WaitSet<2> = WaitSet::new();
    fresh.push(EventHandle::new(0, 1)).unwrap();
    assert_eq!(fresh.fired(0), Fired::Unknown, "nothing is known before a wait");
}

// ---------------------------------------------------------------- callbacks

static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn count(_: &Notification) {
    CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

#[test]
fn callbacks_match_by_event_and_type() {
    let mut reg: CallbackRegistry<4> = CallbackRegistry::new();
    let sig = EventHandle::new(0, 1);
    let other = EventHandle::new(1, 1);
    let by_event = reg.register(Filter::Event(sig), &count).unwrap();
    let by_type = reg.register(Filter::Type(EventType::Memory), &count).unwrap();
    assert_eq!(reg.len(), 2);
    let mut ids = [CallbackId::NONE; 4];
    assert_eq!(reg.collect(sig, EventType::Signal, &mut ids), 1);
    assert_eq!(ids[0], by_event);
    reg.end_call(ids[0], false);
    assert_eq!(reg.collect(other, EventType::Memory, &mut ids), 1);
    assert_eq!(ids[0], by_type);
    reg.end_call(ids[0], false);
    assert_eq!(reg.collect(other, EventType::Signal, &mut ids), 0);
    assert_eq!(reg.filters().count(), 2);
}

#[test]
fn unregister_during_a_dispatch_is_safe() {
    let mut reg: CallbackRegistry<2> = CallbackRegistry::new();
    let h = EventHandle::new(0, 1);
    let a = reg.register(Filter::Event(h), &count).unwrap();
    let b = reg.register(Filter::Type(EventType::Signal), &count).unwrap();
    let mut ids = [CallbackId::NONE; 2];
    assert_eq!(reg.collect(h, EventType::Signal, &mut ids), 2);

    // `a` is running when it is unregistered; `b` was collected but had not started.
    assert!(reg.begin_call(a).is_some());
    assert!(reg.is_running(a));
    assert_eq!(reg.unregister(a), Ok(Unregistered::Running));
    assert_eq!(reg.unregister(b), Ok(Unregistered::Done));
    assert!(reg.begin_call(b).is_none(), "no call starts after unregister returns");
    assert_eq!(reg.unregister(a), Err(Error::InvalidCallback));
    // Pinned slots are not reused while the dispatch holds them.
    assert_eq!(reg.register(Filter::Event(h), &count), Err(Error::RegistryFull));
    reg.end_call(b, false);
    reg.end_call(a, true);
    assert!(!reg.is_running(a));
    // Now both slots are free, with new generations.
    let c = reg.register(Filter::Event(h), &count).unwrap();
    assert_ne!(c, a);
    assert_ne!(c, b);
    assert_eq!(reg.len(), 1);
    reg.clear();
    assert!(reg.is_empty());
}
