//! The slot table against a model: a map from every live or reserved key to its value, and the
//! history of every key ever handed out (so stale keys are exercised as much as live ones).

use std::collections::BTreeMap;
use std::vec::Vec;

use proptest::prelude::*;

use super::*;

const CAP: usize = 6;

#[derive(Debug, Clone)]
enum Op {
    Insert(u16),
    Reserve,
    Fill(usize, u16),
    Release(usize),
    Get(usize),
    Set(usize, u16),
    Take(usize),
    Remove(usize),
    KeyAt(u32),
    Drain,
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0usize..64;
    prop_oneof![
        4 => any::<u16>().prop_map(Op::Insert),
        3 => Just(Op::Reserve),
        3 => (k.clone(), any::<u16>()).prop_map(|(k, v)| Op::Fill(k, v)),
        2 => k.clone().prop_map(Op::Release),
        3 => k.clone().prop_map(Op::Get),
        2 => (k.clone(), any::<u16>()).prop_map(|(k, v)| Op::Set(k, v)),
        2 => k.clone().prop_map(Op::Take),
        3 => k.prop_map(Op::Remove),
        1 => (0u32..CAP as u32 + 2).prop_map(Op::KeyAt),
        1 => Just(Op::Drain),
    ]
}

/// What the model knows of a key in use.
#[derive(Debug, Clone, Copy, PartialEq)]
enum M {
    Reserved,
    Live(u16),
}

fn pick(history: &[SlotKey], k: usize) -> SlotKey {
    if history.is_empty() { SlotKey::new(0, 1) } else { history[k % history.len()] }
}

/// A fresh key: its slot is not in use, and the key was never handed out before.
fn fresh(
    key: SlotKey,
    model: &BTreeMap<SlotKey, M>,
    history: &[SlotKey],
) -> Result<(), TestCaseError> {
    prop_assert!((key.index() as usize) < CAP);
    prop_assert_ne!(key.generation(), 0);
    prop_assert!(!model.keys().any(|k| k.index() == key.index()), "a slot in use was reissued");
    prop_assert!(!history.contains(&key), "a stale key was reissued");
    Ok(())
}

fn check(table: &SlotTable<u16, CAP>, model: &BTreeMap<SlotKey, M>) -> Result<(), TestCaseError> {
    prop_assert_eq!(table.check_invariants(), Ok(()));
    let live: Vec<(SlotKey, u16)> = model
        .iter()
        .filter_map(|(k, m)| match m {
            M::Live(v) => Some((*k, *v)),
            M::Reserved => None,
        })
        .collect();
    prop_assert_eq!(table.len(), live.len());
    prop_assert_eq!(table.used(), model.len());
    prop_assert_eq!(table.is_empty(), live.is_empty());
    let mut seen: Vec<(SlotKey, u16)> = table.iter().map(|(k, v)| (k, *v)).collect();
    let by_index = seen.windows(2).all(|w| w[0].0.index() < w[1].0.index());
    prop_assert!(by_index, "iteration in slot order");
    seen.sort();
    prop_assert_eq!(seen, live);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512)
    ))]

    #[test]
    fn table_matches_model(ops in proptest::collection::vec(op(), 1..300)) {
        let mut table: SlotTable<u16, CAP> = SlotTable::new();
        let mut model: BTreeMap<SlotKey, M> = BTreeMap::new();
        let mut history: Vec<SlotKey> = Vec::new();
        for op in ops {
            match op {
                Op::Insert(v) => {
                    let r = table.insert(v);
                    if model.len() < CAP {
                        let k = r.unwrap();
                        fresh(k, &model, &history)?;
                        model.insert(k, M::Live(v));
                        history.push(k);
                    } else {
                        prop_assert_eq!(r, Err(v), "a full table gives the value back");
                    }
                }
                Op::Reserve => {
                    let r = table.reserve();
                    if model.len() < CAP {
                        let k = r.unwrap();
                        fresh(k, &model, &history)?;
                        model.insert(k, M::Reserved);
                        history.push(k);
                    } else {
                        prop_assert_eq!(r, Err(SlotError::Full));
                    }
                }
                Op::Fill(i, v) => {
                    let k = pick(&history, i);
                    let r = table.fill(k, v);
                    if model.get(&k) == Some(&M::Reserved) {
                        prop_assert_eq!(r, Ok(()));
                        model.insert(k, M::Live(v));
                    } else {
                        prop_assert_eq!(r, Err(v));
                    }
                }
                Op::Release(i) => {
                    let k = pick(&history, i);
                    let r = table.release(k);
                    if model.get(&k) == Some(&M::Reserved) {
                        prop_assert_eq!(r, Ok(()));
                        model.remove(&k);
                    } else {
                        prop_assert_eq!(r, Err(SlotError::Stale));
                    }
                }
                Op::Get(i) => {
                    let k = pick(&history, i);
                    let want = match model.get(&k) {
                        Some(M::Live(v)) => Some(*v),
                        _ => None,
                    };
                    prop_assert_eq!(table.get(k).copied(), want);
                    prop_assert_eq!(table.contains(k), want.is_some());
                }
                Op::Set(i, v) => {
                    let k = pick(&history, i);
                    match (table.get_mut(k), model.get_mut(&k)) {
                        (Some(slot), Some(m @ M::Live(_))) => {
                            *slot = v;
                            *m = M::Live(v);
                        }
                        (None, None | Some(M::Reserved)) => {}
                        (got, want) => prop_assert!(false, "get_mut {:?}, model {:?}", got, want),
                    }
                }
                Op::Take(i) => {
                    let k = pick(&history, i);
                    let r = table.take(k);
                    match model.get(&k) {
                        Some(M::Live(v)) => {
                            prop_assert_eq!(r, Some(*v));
                            model.insert(k, M::Reserved);
                        }
                        _ => prop_assert_eq!(r, None),
                    }
                }
                Op::Remove(i) => {
                    let k = pick(&history, i);
                    let r = table.remove(k);
                    match model.get(&k) {
                        Some(M::Live(v)) => {
                            prop_assert_eq!(r, Some(*v));
                            model.remove(&k);
                        }
                        _ => prop_assert_eq!(r, None),
                    }
                }
                Op::KeyAt(index) => {
                    let want =
                        model.iter().find(|(k, m)| k.index() == index && matches!(m, M::Live(_)));
                    prop_assert_eq!(table.key_at(index), want.map(|(k, _)| *k));
                }
                Op::Drain => {
                    let mut drained = Vec::new();
                    table.drain(|v| drained.push(v));
                    let mut want: Vec<u16> = model
                        .values()
                        .filter_map(|m| if let M::Live(v) = m { Some(*v) } else { None })
                        .collect();
                    drained.sort_unstable();
                    want.sort_unstable();
                    prop_assert_eq!(drained, want);
                    model.clear();
                }
            }
            check(&table, &model)?;
        }
        // Every key ever handed out is refused once its occupancy ended.
        for k in &history {
            if !model.contains_key(k) {
                prop_assert_eq!(table.get(*k), None);
            }
        }
    }
}

#[test]
fn generations_skip_zero_and_stale_keys_stay_stale() {
    let mut t: SlotTable<u8, 1> = SlotTable::new();
    assert_eq!(t.get(SlotKey::default()), None, "generation 0 never names a value");
    let a = t.insert(1).unwrap();
    assert_eq!((a.index(), a.generation()), (0, 1));
    assert_eq!(t.insert(2), Err(2), "full");
    assert_eq!(t.remove(a), Some(1));
    let b = t.insert(3).unwrap();
    assert_eq!((b.index(), b.generation()), (0, 2), "the slot's next occupancy");
    assert_eq!(t.get(a), None);
    assert_eq!(t.get(b), Some(&3));
    assert_eq!(next_generation(u32::MAX), 1);
    assert_eq!(next_generation(1), 2);
}

#[test]
fn a_take_keeps_the_slot_reserved_for_a_refill() {
    let mut t: SlotTable<u8, 2> = SlotTable::new();
    let a = t.insert(7).unwrap();
    assert_eq!(t.take(a), Some(7));
    assert_eq!((t.len(), t.used()), (0, 1));
    assert_eq!(t.get(a), None, "a reserved slot has no value");
    let b = t.reserve().unwrap();
    assert_ne!(b.index(), a.index(), "the taken slot is not handed out");
    assert_eq!(t.reserve(), Err(SlotError::Full));
    t.fill(a, 8).unwrap();
    assert_eq!(t.get(a), Some(&8), "the same key again after a refused destruction");
    t.release(b).unwrap();
    assert_eq!(t.release(b), Err(SlotError::Stale));
    assert_eq!(t.check_invariants(), Ok(()));
}
