//! The CU mask of each queue, kept where `hsaKmtGetQueueInfo` can point `CUMaskInfo` (upstream
//! points it into its own queue structure): one slot per slot of the facade's queue table.

use core::sync::atomic::{AtomicU32, Ordering};

use hsakmt_core::config::MAX_DEVICE_QUEUES;
use hsakmt_core::queue::params::KFD_MAX_CU_MASK_BITS;

/// Words of a CU mask.
const WORDS: usize = (KFD_MAX_CU_MASK_BITS / 32) as usize;

/// One queue's CU mask. `AtomicU32` has the layout of `u32`, so C reads the words in place.
struct Slot {
    words: [AtomicU32; WORDS],
    bits: AtomicU32,
}

static SLOTS: [Slot; MAX_DEVICE_QUEUES] =
    [const { Slot { words: [const { AtomicU32::new(0) }; WORDS], bits: AtomicU32::new(0) } };
        MAX_DEVICE_QUEUES];

/// Records the CU mask of the queue in table slot `index`: the first `bits` bits of `mask`.
pub(super) fn set(index: usize, bits: u32, mask: &[u32]) {
    let Some(s) = SLOTS.get(index) else { return };
    let n = (bits as usize / 32).min(WORDS);
    for (i, w) in s.words.iter().enumerate() {
        let v = if i < n { mask.get(i).copied().unwrap_or(0) } else { 0 };
        w.store(v, Ordering::Relaxed);
    }
    s.bits.store((n * 32) as u32, Ordering::Release);
}

/// Records the mask of a new queue: every one of its `cus` CUs (upstream's default), counted
/// in whole words.
pub(super) fn set_all(index: usize, cus: u32) {
    let mut mask = [0u32; WORDS];
    for cu in 0..cus.min(KFD_MAX_CU_MASK_BITS) {
        if let Some(w) = mask.get_mut((cu / 32) as usize) {
            *w |= 1 << (cu % 32);
        }
    }
    set(index, cus.next_multiple_of(32).min(KFD_MAX_CU_MASK_BITS), &mask);
}

/// The mask of table slot `index`: its bit count and where its words are.
pub(super) fn get(index: usize) -> (u32, *mut u32) {
    match SLOTS.get(index) {
        Some(s) => (s.bits.load(Ordering::Acquire), s.words.as_ptr().cast::<u32>().cast_mut()),
        None => (0, core::ptr::null_mut()),
    }
}

/// Forgets every mask.
pub(super) fn clear() {
    for s in &SLOTS {
        s.bits.store(0, Ordering::Release);
    }
}
