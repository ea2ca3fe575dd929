//! `event.*`: events through the device facade over the simulated amdkfd.
//!
//! - `event.set_wake.sim`: a CPU `set_event` on one thread to the return of `wait_event` on
//!   another thread blocked in the (simulated) kernel, next to a bare mutex + condition variable
//!   handoff measured the same way in the same run (goal: ratio ≤ 2).
//! - `event.wait_any_64.sim`: the same with the waiter blocked on 64 events with ages (one is
//!   set; the waiter also learns which one from the ages).
//! - `event.query`: [`Kfd::query_event`], which issues no system call, next to a zero-timeout
//!   kernel wait (what a query through the kernel would cost, and it would consume an
//!   auto-reset event).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use hsakmt_core::config::DEFAULT_MEMORY_OBJECTS;
use hsakmt_core::device::{EventDescriptor, Kfd};
use hsakmt_core::event::{EventHandle, INITIAL_AGE, Timeout, WaitMode, WaitResult, WaitSet};
use hsakmt_linux::{BoxedMemory, boxed_kfd};
use hsakmt_sim::SimPlatform;

use super::{Row, Samples};
use crate::platform::AnyPlatform;

type Dev = Arc<Kfd<AnyPlatform, BoxedMemory>>;

/// How long the setter lets a waiter that announced itself settle into its sleep before
/// setting: both harnesses announce just before blocking, and a set that lands before the
/// waiter sleeps measures no wake-up at all.
const SETTLE: std::time::Duration = std::time::Duration::from_micros(50);

fn settle() {
    let t = Instant::now();
    while t.elapsed() < SETTLE {
        std::hint::spin_loop();
    }
}

fn iterations(base: usize, scale: f64) -> usize {
    ((base as f64) * scale).clamp(20.0, 1e6) as usize
}

pub(crate) fn run(scale: f64) -> Result<Vec<Row>, String> {
    let kfd = boxed_kfd(AnyPlatform::Sim(SimPlatform::new()), DEFAULT_MEMORY_OBJECTS);
    kfd.open().map_err(|e| e.to_string())?;
    let kfd: Dev = Arc::from(kfd);
    let n = iterations(2000, scale);
    // Rounds alternate the harnesses so they share the machine's noise; the first round warms
    // up (threads, lazily built state) and is dropped.
    let rounds = 5;
    let per = (n / (rounds - 1)).max(5);
    let (mut condvar, mut set_wake, mut any64) =
        (Samples::default(), Samples::default(), Samples::default());
    for round in 0..rounds {
        let (mut c, mut s, mut a) = (Samples::default(), Samples::default(), Samples::default());
        condvar_handoff(per, &mut c);
        set_wake_round(&kfd, per, &mut s)?;
        wait_any_round(&kfd, per, &mut a)?;
        if round > 0 {
            condvar.extend(&c);
            set_wake.extend(&s);
            any64.extend(&a);
        }
    }
    let mut rows = Vec::new();
    let mut row = Row::latency("event.set_wake.sim", &set_wake)
        .against("condvar-handoff", &condvar)
        .goal("ratio <= 2");
    row.extra.insert("iterations".into(), n.into());
    rows.push(row);
    let mut row =
        Row::latency("event.wait_any_64.sim", &any64).against("condvar-handoff", &condvar);
    row.extra.insert("iterations".into(), n.into());
    row.extra.insert("events".into(), 64.into());
    rows.push(row);
    rows.push(query(&kfd, scale)?);
    kfd.close().map_err(|e| e.to_string())?;
    Ok(rows)
}

/// The reference: a waiter blocked on a condition variable, woken by a flag set under the
/// mutex; latency from before the lock to the waiter's return.
fn condvar_handoff(n: usize, samples: &mut Samples) {
    struct Shared {
        flag: Mutex<bool>,
        cv: Condvar,
        ready: AtomicBool,
        woke: AtomicU64,
    }
    let shared = Arc::new(Shared {
        flag: Mutex::new(false),
        cv: Condvar::new(),
        ready: AtomicBool::new(false),
        woke: AtomicU64::new(0),
    });
    let base = Instant::now();
    let s = shared.clone();
    let waiter = std::thread::spawn(move || {
        for _ in 0..n {
            let mut g = s.flag.lock().unwrap_or_else(|p| p.into_inner());
            s.ready.store(true, Ordering::SeqCst);
            while !*g {
                g = s.cv.wait(g).unwrap_or_else(|p| p.into_inner());
            }
            *g = false;
            drop(g);
            s.woke.store(base.elapsed().as_nanos() as u64 + 1, Ordering::SeqCst);
        }
    });
    for _ in 0..n {
        while !shared.ready.swap(false, Ordering::SeqCst) {
            std::hint::spin_loop();
        }
        settle();
        let t0 = base.elapsed().as_nanos() as u64;
        {
            let mut g = shared.flag.lock().unwrap_or_else(|p| p.into_inner());
            *g = true;
            shared.cv.notify_one();
        }
        let t1 = spin_for(&shared.woke);
        samples.push(t1.saturating_sub(t0) as f64);
    }
    let _ = waiter.join();
}

/// Spins until `slot` holds a timestamp, takes it.
fn spin_for(slot: &AtomicU64) -> u64 {
    loop {
        let v = slot.swap(0, Ordering::SeqCst);
        if v != 0 {
            return v - 1;
        }
        std::hint::spin_loop();
    }
}

/// Waits until the waiter thread is blocked in the simulated kernel.
fn until_blocked(kfd: &Dev) {
    while kfd.platform().sim().is_some_and(|sim| sim.event_waiters() == 0) {
        std::thread::yield_now();
    }
}

fn set_wake_round(kfd: &Dev, n: usize, samples: &mut Samples) -> Result<(), String> {
    let h = kfd.create_event(&EventDescriptor::signal()).map_err(|e| e.to_string())?;
    let woke = Arc::new(AtomicU64::new(0));
    let base = Instant::now();
    let (k, w) = (kfd.clone(), woke.clone());
    let waiter = std::thread::spawn(move || -> Result<(), String> {
        for _ in 0..n {
            match k.wait_event(h, Timeout::Infinite) {
                Ok(WaitResult::Complete) => {}
                other => return Err(format!("wait: {other:?}")),
            }
            w.store(base.elapsed().as_nanos() as u64 + 1, Ordering::SeqCst);
        }
        Ok(())
    });
    for _ in 0..n {
        until_blocked(kfd);
        settle();
        let t0 = base.elapsed().as_nanos() as u64;
        kfd.set_event(h).map_err(|e| e.to_string())?;
        let t1 = spin_for(&woke);
        samples.push(t1.saturating_sub(t0) as f64);
    }
    waiter.join().map_err(|_| "waiter panicked".to_string())??;
    kfd.destroy_event(h).map_err(|e| e.to_string())?;
    Ok(())
}

fn wait_any_round(kfd: &Dev, n: usize, samples: &mut Samples) -> Result<(), String> {
    let events: Vec<EventHandle> = (0..64)
        .map(|_| kfd.create_event(&EventDescriptor::signal()))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let woke = Arc::new(AtomicU64::new(0));
    let base = Instant::now();
    let (k, w, evs) = (kfd.clone(), woke.clone(), events.clone());
    let waiter = std::thread::spawn(move || -> Result<(), String> {
        let mut ages = [INITIAL_AGE; 64];
        for i in 0..n {
            let mut set: WaitSet = WaitSet::new();
            for (h, age) in evs.iter().zip(ages) {
                set.push_with_age(*h, age).map_err(|e| e.to_string())?;
            }
            match k.wait_events(&mut set, WaitMode::Any, Timeout::Infinite) {
                Ok(WaitResult::Complete) => {}
                other => return Err(format!("wait: {other:?}")),
            }
            let fired: Vec<usize> = set.fired_positions().collect();
            if fired != [i % 64] {
                return Err(format!("expected event {} to fire, the set says {fired:?}", i % 64));
            }
            for (j, age) in ages.iter_mut().enumerate() {
                *age = set.age(j);
            }
            w.store(base.elapsed().as_nanos() as u64 + 1, Ordering::SeqCst);
        }
        Ok(())
    });
    for i in 0..n {
        until_blocked(kfd);
        settle();
        let t0 = base.elapsed().as_nanos() as u64;
        kfd.set_event(events[i % 64]).map_err(|e| e.to_string())?;
        let t1 = spin_for(&woke);
        samples.push(t1.saturating_sub(t0) as f64);
    }
    waiter.join().map_err(|_| "waiter panicked".to_string())??;
    for h in events {
        kfd.destroy_event(h).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn query(kfd: &Dev, scale: f64) -> Result<Row, String> {
    const BATCH: usize = 1000;
    let h = kfd.create_event(&EventDescriptor::signal()).map_err(|e| e.to_string())?;
    let n = iterations(1000, scale);
    let ioctls = kfd.platform().sim().map_or(0, SimPlatform::total_ioctl_calls);
    let mut q = Samples::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        for _ in 0..BATCH {
            std::hint::black_box(
                kfd.query_event(std::hint::black_box(h)).map_err(|e| e.to_string())?,
            );
        }
        q.push(t.elapsed().as_nanos() as f64 / BATCH as f64);
    }
    let query_ioctls = kfd.platform().sim().map_or(0, SimPlatform::total_ioctl_calls) - ioctls;
    let mut poll = Samples::with_capacity(n / 10 + 1);
    for _ in 0..(n / 10).max(20) {
        let t = Instant::now();
        for _ in 0..BATCH / 10 {
            std::hint::black_box(kfd.wait_event(h, Timeout::Immediate).map_err(|e| e.to_string())?);
        }
        poll.push(t.elapsed().as_nanos() as f64 / (BATCH / 10) as f64);
    }
    kfd.destroy_event(h).map_err(|e| e.to_string())?;
    let mut row = Row::latency("event.query", &q).against("zero-timeout-wait.sim", &poll);
    row.extra.insert("ioctls".into(), query_ioctls.into());
    row.extra.insert("batch".into(), BATCH.into());
    Ok(row)
}
