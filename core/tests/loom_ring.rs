//! Model check of the AQL ring protocol with loom: the very producer / consumer code of
//! `hsakmt_core::queue::ring`, run over loom atomics through the `AqlRingCells` trait.
//!
//! Two producers and one consumer share a 2-slot ring and submit more packets than it holds
//! (so slots are reused). Every interleaving loom explores must deliver every packet exactly
//! once, in per-producer order, with the body the producer wrote (a consumer that read an
//! unpublished or half-written slot would see another packet's or zero words).
//!
//! Waiting: the protocol's waits are spins (`relax` hooks, consumer polling). Loom explores a
//! spin that yields as an unbounded number of branches, so here every wait blocks on a
//! park-like [`Event`] (a token behind a mutex and condition variable; loom's own
//! `park`/`unpark` trips loom issue #249 together with `join`): the ring's doorbell wakes the
//! consumer (as a real doorbell wakes the CP) and the consumer wakes the producers after each
//! packet it releases. A set token makes the next wait return at once and the mutex orders
//! memory, and every wait re-checks its condition, so no wake-up is lost.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p hsakmt-core --test loom_ring --release`
//! (`LOOM_MAX_PREEMPTIONS` overrides the default preemption bound of 3).
#![cfg(loom)]

use std::sync::atomic::Ordering;

use hsakmt_core::queue::aql::{INVALID_HEADER_WORD, PacketWords, header_word};
use hsakmt_core::queue::ring::{AqlConsumer, AqlProducer, AqlRingCells, RingError};
use loom::sync::atomic::{AtomicU32, AtomicU64};
use loom::sync::{Arc, Condvar, Mutex};

/// A wake-up token, like a thread's park token.
struct Event {
    token: Mutex<bool>,
    cv: Condvar,
}

impl Event {
    fn new() -> Arc<Self> {
        Arc::new(Event { token: Mutex::new(false), cv: Condvar::new() })
    }

    fn notify(&self) {
        *self.token.lock().unwrap() = true;
        self.cv.notify_all();
    }

    fn wait(&self) {
        let mut t = self.token.lock().unwrap();
        while !*t {
            t = self.cv.wait(t).unwrap();
        }
        *t = false;
    }
}

/// A ring slot: the header word, `dw[1]` and the seven `qw` words, each its own atomic as in
/// ring memory.
struct Slot {
    dw0: AtomicU32,
    dw1: AtomicU32,
    qw: [AtomicU64; 7],
}

struct Inner {
    slots: Vec<Slot>,
    write: AtomicU64,
    read: AtomicU64,
    /// The producers' cached copy of the read index.
    read_cache: AtomicU64,
    doorbell: AtomicU64,
    /// Wakes the consumer; set by the doorbell.
    consumer: Arc<Event>,
}

#[derive(Clone)]
struct Cells(Arc<Inner>);

impl Cells {
    fn new(slots: usize) -> Self {
        Cells(Arc::new(Inner {
            slots: (0..slots)
                .map(|_| Slot {
                    dw0: AtomicU32::new(INVALID_HEADER_WORD),
                    dw1: AtomicU32::new(0),
                    qw: std::array::from_fn(|_| AtomicU64::new(0)),
                })
                .collect(),
            write: AtomicU64::new(0),
            read: AtomicU64::new(0),
            read_cache: AtomicU64::new(0),
            doorbell: AtomicU64::new(u64::MAX),
            consumer: Event::new(),
        }))
    }
}

impl AqlRingCells for Cells {
    fn slots(&self) -> u64 {
        self.0.slots.len() as u64
    }
    fn load_write_index(&self, order: Ordering) -> u64 {
        self.0.write.load(order)
    }
    fn store_write_index(&self, value: u64, order: Ordering) {
        self.0.write.store(value, order);
    }
    fn fetch_add_write_index(&self, n: u64, order: Ordering) -> u64 {
        self.0.write.fetch_add(n, order)
    }
    fn compare_exchange_write_index(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        self.0.write.compare_exchange_weak(current, new, success, failure)
    }
    fn load_read_index(&self, order: Ordering) -> u64 {
        self.0.read.load(order)
    }
    fn store_read_index(&self, value: u64, order: Ordering) {
        self.0.read.store(value, order);
    }
    fn load_read_cache(&self) -> u64 {
        self.0.read_cache.load(Ordering::Acquire)
    }
    fn update_read_cache(&self, seen: u64) {
        self.0.read_cache.fetch_max(seen, Ordering::Release);
    }
    fn store_body(&self, slot: usize, p: &PacketWords) {
        let s = &self.0.slots[slot];
        s.dw1.store(p.dw[1], Ordering::Relaxed);
        for (c, v) in s.qw.iter().zip(p.qw) {
            c.store(v, Ordering::Relaxed);
        }
    }
    fn load_body(&self, slot: usize) -> PacketWords {
        let s = &self.0.slots[slot];
        PacketWords {
            dw: [0, s.dw1.load(Ordering::Relaxed)],
            qw: std::array::from_fn(|i| s.qw[i].load(Ordering::Relaxed)),
        }
    }
    fn store_header(&self, slot: usize, word: u32, order: Ordering) {
        self.0.slots[slot].dw0.store(word, order);
    }
    fn load_header(&self, slot: usize, order: Ordering) -> u32 {
        self.0.slots[slot].dw0.load(order)
    }
    fn ring_doorbell(&self, value: u64) {
        self.0.doorbell.store(value, Ordering::SeqCst);
        self.0.consumer.notify();
    }
}

/// A packet whose every word is derived from `tag` (producer << 8 | sequence): an agent
/// dispatch header (type 4) with the tag as function code.
fn packet(tag: u64) -> PacketWords {
    PacketWords {
        dw: [header_word(4 | (2 << 9) | (2 << 11), tag as u16), tag as u32 ^ 0xA5A5],
        qw: std::array::from_fn(|i| tag.wrapping_mul(0x9E37_79B9).wrapping_add(i as u64)),
    }
}

fn check(got: &[(u64, PacketWords)], expected_tags: &[u64]) {
    let mut tags: Vec<u64> = got
        .iter()
        .map(|(_, w)| {
            let tag = u64::from(w.setup());
            assert_eq!(*w, packet(tag), "consumer read a body that was not published with it");
            tag
        })
        .collect();
    // Indices are consecutive and each producer's packets come in its own order.
    for (i, (idx, _)) in got.iter().enumerate() {
        assert_eq!(*idx, i as u64);
    }
    for producer in [1u64, 2] {
        let mine: Vec<u64> = tags.iter().copied().filter(|t| t >> 8 == producer).collect();
        let mut sorted = mine.clone();
        sorted.sort_unstable();
        assert_eq!(mine, sorted, "producer {producer}'s packets out of order");
    }
    tags.sort_unstable();
    assert_eq!(tags, expected_tags, "a packet was lost or duplicated");
}

/// The consumer (runs on the model's main thread): takes `n` packets, waiting on its event while the ring
/// is empty and waking the producers after each release.
fn consume(
    cons: &AqlConsumer<Cells>,
    n: usize,
    producers: &[&Arc<Event>],
) -> Vec<(u64, PacketWords)> {
    let mut got = Vec::new();
    while got.len() < n {
        match cons.pop() {
            Some(x) => {
                got.push(x);
                for p in producers {
                    p.notify();
                }
            }
            None => cons.cells().0.consumer.wait(),
        }
    }
    assert_eq!(cons.pop(), None);
    got
}

/// Runs `f` under loom (preemption bound 3 unless `LOOM_MAX_PREEMPTIONS` says otherwise) and
/// prints how many executions were explored.
fn model(name: &str, f: impl Fn() + Sync + Send + 'static) {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    let start = RUNS.load(Ordering::SeqCst);
    b.check(move || {
        RUNS.fetch_add(1, Ordering::SeqCst);
        f();
    });
    eprintln!("loom {name}: {} executions", RUNS.load(Ordering::SeqCst) - start);
}

/// Spawns a producer thread running `f` with its wake-up event.
fn producer(
    p: &Arc<AqlProducer<Cells>>,
    f: impl FnOnce(&AqlProducer<Cells>, &Event) + Send + 'static,
) -> (loom::thread::JoinHandle<()>, Arc<Event>) {
    let (p, ev) = (p.clone(), Event::new());
    let ev2 = ev.clone();
    (loom::thread::spawn(move || f(&p, &ev2)), ev)
}

/// Retries `try_submit` until it succeeds, waiting for a wake-up after each `Full`.
fn try_submit_until_done(p: &AqlProducer<Cells>, ev: &Event, w: &PacketWords) {
    loop {
        match p.try_submit(w) {
            Ok(_) => return,
            Err(RingError::Full) => ev.wait(),
            Err(e) => panic!("{e}"),
        }
    }
}

/// Blocking `submit` (one `fetch_add`, then wait for space): two producers, one packet each,
/// into a single slot, so the second waits for the consumer to release the slot and reuses it.
#[test]
fn two_blocking_producers_one_consumer() {
    model("two_blocking_producers_one_consumer", || {
        let cells = Cells::new(1);
        let p = Arc::new(AqlProducer::new(cells.clone()).unwrap());
        let cons = AqlConsumer::new(cells).unwrap();
        let (h1, e1) = producer(&p, |p, ev| {
            p.submit(&packet(0x100), || ev.wait());
        });
        let (h2, e2) = producer(&p, |p, ev| {
            p.submit(&packet(0x200), || ev.wait());
        });
        let got = consume(&cons, 2, &[&e1, &e2]);
        h1.join().unwrap();
        h2.join().unwrap();
        check(&got, &[0x100, 0x200]);
    });
}

/// One producer thread submits three packets through a 2-slot ring (wrap-around and slot
/// reuse) while the consumer drains it.
#[test]
fn wrap_around_one_producer_thread() {
    model("wrap_around_one_producer_thread", || {
        let cells = Cells::new(2);
        let p = Arc::new(AqlProducer::new(cells.clone()).unwrap());
        let cons = AqlConsumer::new(cells).unwrap();
        let (h1, e1) = producer(&p, |p, ev| {
            for t in 0x100..0x103 {
                p.submit(&packet(t), || ev.wait());
            }
        });
        let got = consume(&cons, 3, &[&e1]);
        h1.join().unwrap();
        check(&got, &[0x100, 0x101, 0x102]);
    });
}

/// Non-blocking reservation (CAS loop) racing a blocking batch of two on a 2-slot ring:
/// producer 1 `try_submit`s, retrying on `Full`; producer 2 uses `submit_batch`.
#[test]
fn try_reserve_races_batch() {
    model("try_reserve_races_batch", || {
        let cells = Cells::new(2);
        let p = Arc::new(AqlProducer::new(cells.clone()).unwrap());
        let cons = AqlConsumer::new(cells.clone()).unwrap();
        let (h1, e1) = producer(&p, |p, ev| try_submit_until_done(p, ev, &packet(0x100)));
        let (h2, e2) = producer(&p, |p, ev| {
            p.submit_batch(&[packet(0x200), packet(0x201)], || ev.wait()).unwrap();
        });
        let got = consume(&cons, 3, &[&e1, &e2]);
        h1.join().unwrap();
        h2.join().unwrap();
        check(&got, &[0x100, 0x200, 0x201]);
        assert_eq!(cells.load_write_index(Ordering::SeqCst), 3);
    });
}

/// Two non-blocking producers on a 1-slot ring: each `try_reserve` either gets the slot or
/// reports `Full` without reserving, so while a reservation is held the write index is at most
/// one past the read index, and in the end it equals the packets delivered.
#[test]
fn try_reserve_never_over_reserves() {
    model("try_reserve_never_over_reserves", || {
        let cells = Cells::new(1);
        let p = Arc::new(AqlProducer::new(cells.clone()).unwrap());
        let cons = AqlConsumer::new(cells.clone()).unwrap();
        let run = |tag: u64| {
            let cells = cells.clone();
            move |p: &AqlProducer<Cells>, ev: &Event| loop {
                match p.try_reserve(1) {
                    Ok(mut r) => {
                        let w = cells.load_write_index(Ordering::SeqCst);
                        let rd = cells.load_read_index(Ordering::SeqCst);
                        assert!(w - rd <= 1, "over-reserved: write {w}, read {rd}");
                        r.push(&packet(tag)).unwrap();
                        r.commit();
                        return;
                    }
                    Err(RingError::Full) => ev.wait(),
                    Err(e) => panic!("{e}"),
                }
            }
        };
        let (ha, ea) = producer(&p, run(0x100));
        let (hb, eb) = producer(&p, run(0x200));
        let got = consume(&cons, 2, &[&ea, &eb]);
        ha.join().unwrap();
        hb.join().unwrap();
        check(&got, &[0x100, 0x200]);
        assert_eq!(cells.load_write_index(Ordering::SeqCst), 2);
    });
}

/// Two producers, two packets each, through a 2-slot ring: slots are reused while the other
/// producer may rely on a read-index copy one producer refreshed (the copy must carry the
/// consumer's release to it).
#[test]
fn shared_read_cache_reuse() {
    model("shared_read_cache_reuse", || {
        let cells = Cells::new(2);
        let p = Arc::new(AqlProducer::new(cells.clone()).unwrap());
        let cons = AqlConsumer::new(cells).unwrap();
        let (h1, e1) = producer(&p, |p, ev| {
            p.submit(&packet(0x100), || ev.wait());
            p.submit(&packet(0x101), || ev.wait());
        });
        let (h2, e2) = producer(&p, |p, ev| {
            p.submit(&packet(0x200), || ev.wait());
            p.submit(&packet(0x201), || ev.wait());
        });
        let got = consume(&cons, 4, &[&e1, &e2]);
        h1.join().unwrap();
        h2.join().unwrap();
        check(&got, &[0x100, 0x101, 0x200, 0x201]);
    });
}
