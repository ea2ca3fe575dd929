//! The threaded mode's queue processors: one thread per queue, spinning, then sleeping until a
//! doorbell wakes it or its poll comes round.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::{Cp, DOORBELL_POLL_MIN, Doorbells, SimQueue, Step};

/// A processor thread's loop. An idle processor spins for the configured time, then sleeps
/// (woken by a doorbell rung through the mapping) and looks at its doorbell again after each
/// sleep, the sleeps doubling from [`DOORBELL_POLL_MIN`] up to the configured longest.
pub(super) fn worker(q: Weak<SimQueue>, cp: Arc<Cp>, doorbells: Option<Arc<Doorbells>>) {
    let mut idle_since: Option<Instant> = None;
    let mut blocked_wait = Duration::from_micros(20);
    let mut poll_wait = DOORBELL_POLL_MIN;
    loop {
        let Some(q) = q.upgrade() else { return };
        if q.stop.load(Ordering::Acquire) {
            return;
        }
        q.pending.store(false, Ordering::SeqCst);
        if idle_since.is_some()
            && let Some(d) = &doorbells
        {
            q.poll_doorbell(d);
        }
        match q.step(&cp, 256) {
            Step::Progress | Step::Running => {
                idle_since = None;
                blocked_wait = Duration::from_micros(20);
                poll_wait = DOORBELL_POLL_MIN;
            }
            Step::Blocked => {
                idle_since = None;
                poll_wait = DOORBELL_POLL_MIN;
                drop(q);
                cp.progress.wait(blocked_wait);
                blocked_wait = (blocked_wait * 2).min(Duration::from_millis(1));
            }
            Step::Idle => {
                let since = *idle_since.get_or_insert_with(Instant::now);
                if since.elapsed() < cp.idle_spin {
                    drop(q);
                    std::thread::yield_now();
                } else {
                    q.sleep(poll_wait);
                    poll_wait = (poll_wait * 2).min(cp.doorbell_poll.max(DOORBELL_POLL_MIN));
                }
            }
        }
    }
}
