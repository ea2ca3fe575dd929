//! Model check of the signal-wait protocol of `hsakmt_core::device::Kfd::wait_signal` /
//! `store_signal` with loom: the waiter announces itself (`sleepers += 1`, SeqCst fence) before
//! its last look at the value and blocks in a kernel wait that returns once the event's age
//! differs from the one it read beforehand; the setter stores the value, fences, and sets the
//! event only if it sees a sleeper. In every interleaving loom explores the waiter must finish
//! (a lost wake-up shows as a deadlock).
//!
//! The kernel is modelled as an age behind a mutex and a condition variable, with
//! `WAIT_EVENTS`'s age rule. (Without the two fences — relaxed accesses instead — loom finds
//! the lost wake-up as a deadlock at once.)
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p hsakmt-core --test loom_signal_wait --release`.

#![cfg(loom)]

use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};
use loom::sync::{Arc, Condvar, Mutex};

struct Kernel {
    age: Mutex<u64>,
    cv: Condvar,
}

impl Kernel {
    /// `SET_EVENT`: the age advances and waiters wake.
    fn set(&self) {
        let mut age = self.age.lock().unwrap();
        *age += 1;
        self.cv.notify_all();
    }

    /// `WAIT_EVENTS` with `last_event_age`: returns the current age once it differs.
    fn wait(&self, last: u64) -> u64 {
        let mut age = self.age.lock().unwrap();
        while *age == last {
            age = self.cv.wait(age).unwrap();
        }
        *age
    }

    fn current(&self) -> u64 {
        *self.age.lock().unwrap()
    }
}

struct Shared {
    value: AtomicU64,
    sleepers: AtomicU32,
    kernel: Kernel,
    /// The age the process learned (a lower bound of the kernel's).
    known_age: AtomicU64,
}

fn waiter(s: &Shared, want: u64) {
    let mut age = s.known_age.load(Ordering::Acquire);
    s.sleepers.fetch_add(1, Ordering::SeqCst);
    fence(Ordering::SeqCst);
    loop {
        if s.value.load(Ordering::Acquire) >= want {
            break;
        }
        age = s.kernel.wait(age);
    }
    s.sleepers.fetch_sub(1, Ordering::SeqCst);
}

fn setter(s: &Shared, value: u64) {
    s.value.store(value, Ordering::Release);
    fence(Ordering::SeqCst);
    if s.sleepers.load(Ordering::SeqCst) > 0 {
        s.kernel.set();
    }
}

fn shared(age: u64) -> Arc<Shared> {
    Arc::new(Shared {
        value: AtomicU64::new(0),
        sleepers: AtomicU32::new(0),
        kernel: Kernel { age: Mutex::new(age), cv: Condvar::new() },
        known_age: AtomicU64::new(age),
    })
}

#[test]
fn a_store_always_wakes_a_sleeping_waiter() {
    loom::model(|| {
        let s = shared(1);
        let w = {
            let s = s.clone();
            loom::thread::spawn(move || waiter(&s, 1))
        };
        setter(&s, 1);
        w.join().unwrap();
        assert_eq!(s.sleepers.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn a_stale_known_age_costs_a_spurious_wakeup_not_a_lost_one() {
    loom::model(|| {
        // The kernel's age moved on without the process noticing (a GPU set nobody waited
        // for): the waiter's first kernel wait returns at once, and the protocol still holds.
        let s = shared(1);
        s.kernel.set();
        let w = {
            let s = s.clone();
            loom::thread::spawn(move || waiter(&s, 2))
        };
        setter(&s, 1);
        setter(&s, 2);
        w.join().unwrap();
        assert!(s.kernel.current() >= 2);
    });
}
