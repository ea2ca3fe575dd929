//! Fault injection: make ioctls fail with any errno, on the Nth matching call, always, or with
//! a seeded probability — and count every ioctl the library issues.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use hsakmt_core::error::Errno;

/// When an injected fault fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// On the `n`th matching call from now (1-based), once.
    Nth(u64),
    /// On every matching call until cleared.
    Always,
    /// With probability `per_million / 1_000_000` per matching call, from a seeded generator
    /// (the same seed gives the same sequence of failures).
    Probability {
        /// Chance per call, in millionths.
        per_million: u32,
        /// Generator seed.
        seed: u64,
    },
}

/// A planned ioctl failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoctlFault {
    /// The ioctl number (`_IOC_NR`) to fail, or `None` for every ioctl.
    pub nr: Option<u32>,
    /// The errno to fail with.
    pub errno: Errno,
    /// When.
    pub trigger: Trigger,
}

/// Which armed fault: the order of [`SimPlatform::inject`](crate::SimPlatform::inject) calls,
/// from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FaultId(pub usize);

/// What became of one injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultRecord {
    /// The fault as armed.
    pub fault: IoctlFault,
    /// Matching calls it saw while armed (an `Nth` fault stops counting once it fired).
    pub calls: u64,
    /// How many times it fired.
    pub fired: u64,
}

#[derive(Debug)]
struct Armed {
    fault: IoctlFault,
    seen: u64,
    rng: u64,
    id: FaultId,
}

/// Armed faults and the record of every fault ever armed.
#[derive(Debug, Default)]
struct State {
    armed: Vec<Armed>,
    log: Vec<FaultRecord>,
}

/// The injector and the per-ioctl call counters.
#[derive(Debug)]
pub(crate) struct Faults {
    armed: Mutex<State>,
    any_armed: std::sync::atomic::AtomicBool,
    calls: [AtomicU64; 64],
    injected: AtomicU64,
}

impl Faults {
    pub(crate) fn new() -> Self {
        Self {
            armed: Mutex::new(State::default()),
            any_armed: std::sync::atomic::AtomicBool::new(false),
            calls: [const { AtomicU64::new(0) }; 64],
            injected: AtomicU64::new(0),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.armed.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn arm(&self, fault: IoctlFault) -> FaultId {
        let rng = match fault.trigger {
            Trigger::Probability { seed, .. } => seed | 1,
            _ => 1,
        };
        let mut s = self.state();
        let id = FaultId(s.log.len());
        s.log.push(FaultRecord { fault, calls: 0, fired: 0 });
        s.armed.push(Armed { fault, seen: 0, rng, id });
        self.any_armed.store(true, Ordering::Release);
        id
    }

    pub(crate) fn clear(&self) {
        self.state().armed.clear();
        self.any_armed.store(false, Ordering::Release);
    }

    /// What became of fault `id`.
    pub(crate) fn record(&self, id: FaultId) -> Option<FaultRecord> {
        self.state().log.get(id.0).copied()
    }

    /// Counts a call of ioctl `nr` and says whether it must fail.
    pub(crate) fn on_ioctl(&self, nr: u32) -> Option<Errno> {
        if let Some(c) = self.calls.get(nr as usize) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        if !self.any_armed.load(Ordering::Acquire) {
            return None;
        }
        let mut s = self.state();
        let State { armed, log } = &mut *s;
        let mut fired = None;
        armed.retain_mut(|a| {
            if fired.is_some() || a.fault.nr.is_some_and(|n| n != nr) {
                return true;
            }
            a.seen += 1;
            let (fire, keep) = match a.fault.trigger {
                Trigger::Nth(n) => (a.seen == n, a.seen < n),
                Trigger::Always => (true, true),
                Trigger::Probability { per_million, .. } => {
                    // xorshift64*
                    a.rng ^= a.rng >> 12;
                    a.rng ^= a.rng << 25;
                    a.rng ^= a.rng >> 27;
                    let r = a.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32;
                    ((r % 1_000_000) < u64::from(per_million), true)
                }
            };
            if fire {
                fired = Some(a.fault.errno);
            }
            if let Some(r) = log.get_mut(a.id.0) {
                r.calls = a.seen;
                r.fired += u64::from(fire);
            }
            keep
        });
        if armed.is_empty() {
            self.any_armed.store(false, Ordering::Release);
        }
        if fired.is_some() {
            self.injected.fetch_add(1, Ordering::Relaxed);
        }
        fired
    }

    pub(crate) fn calls(&self, nr: u32) -> u64 {
        self.calls.get(nr as usize).map_or(0, |c| c.load(Ordering::Relaxed))
    }

    pub(crate) fn total_calls(&self) -> u64 {
        self.calls.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    pub(crate) fn injected(&self) -> u64 {
        self.injected.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers() {
        let f = Faults::new();
        let second =
            f.arm(IoctlFault { nr: Some(0x16), errno: Errno::ENOMEM, trigger: Trigger::Nth(2) });
        let never =
            f.arm(IoctlFault { nr: Some(0x20), errno: Errno::EIO, trigger: Trigger::Nth(1) });
        assert_eq!(f.on_ioctl(0x16), None);
        assert_eq!(f.record(second).map(|r| (r.calls, r.fired)), Some((1, 0)));
        assert_eq!(f.on_ioctl(0x17), None);
        assert_eq!(f.on_ioctl(0x16), Some(Errno::ENOMEM));
        assert_eq!(f.on_ioctl(0x16), None);
        assert_eq!(f.calls(0x16), 3);
        assert_eq!(f.record(second).map(|r| (r.calls, r.fired)), Some((2, 1)));
        assert_eq!(f.record(never).map(|r| (r.calls, r.fired)), Some((0, 0)));
        assert_eq!(f.record(FaultId(9)), None);
        f.arm(IoctlFault { nr: None, errno: Errno::EINTR, trigger: Trigger::Always });
        assert_eq!(f.on_ioctl(1), Some(Errno::EINTR));
        f.clear();
        assert_eq!(f.on_ioctl(1), None);
        let p = IoctlFault {
            nr: None,
            errno: Errno::EIO,
            trigger: Trigger::Probability { per_million: 250_000, seed: 7 },
        };
        let run = |f: &Faults| (0..1000).filter(|_| f.on_ioctl(3).is_some()).count();
        let (a, b) = (Faults::new(), Faults::new());
        a.arm(p);
        b.arm(p);
        let (ra, rb) = (run(&a), run(&b));
        assert_eq!(ra, rb, "same seed, same failures");
        assert!((150..350).contains(&ra), "about a quarter fail: {ra}");
        assert_eq!(a.injected(), ra as u64);
    }
}
