//! [`WaitSet`]: the events of one wait and, afterwards, what the kernel said about each — built
//! on the caller's stack, so a wait allocates nothing.

use crate::event::{Error, EventData, EventHandle, EventType, WaitMode, WaitResult, decode};
use crate::uapi::{kfd_event_data, kfd_hsa_signal_event_data};

pub use crate::config::MAX_WAIT_EVENTS;

/// Whether one event of a finished wait fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Fired {
    /// It fired: the wait completed because of it (wait-all: all did), or — for an entry with
    /// an age — the kernel reported a newer age.
    Yes,
    /// It did not (for an entry with an age: not after that age).
    No,
    /// The kernel does not say: a wait-any without ages or data for this event, or a wait-all
    /// that timed out (and may have consumed some auto-reset events, as the kernel does).
    Unknown,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    handle: EventHandle,
    event_type: EventType,
    age_in: u64,
    tracked: bool,
    fired: Fired,
    data: Option<EventData>,
}

const EMPTY: Entry = Entry {
    handle: EventHandle::new(0, 0),
    event_type: EventType::Signal,
    age_in: 0,
    tracked: false,
    fired: Fired::Unknown,
    data: None,
};

/// Up to `N` events to wait for, with the kernel's `kfd_event_data` array beside them.
///
/// ```
/// use hsakmt_core::event::WaitSet;
///
/// let set: WaitSet = WaitSet::new();
/// assert_eq!(set.capacity(), 64);
/// assert!(set.is_empty());
/// ```
#[derive(Debug, Clone)]
pub struct WaitSet<const N: usize = MAX_WAIT_EVENTS> {
    kernel: [kfd_event_data; N],
    entries: [Entry; N],
    len: usize,
    result: Option<WaitResult>,
}

impl<const N: usize> Default for WaitSet<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> WaitSet<N> {
    /// An empty set.
    #[must_use]
    pub fn new() -> Self {
        Self {
            kernel: core::array::from_fn(|_| kfd_event_data::default()),
            entries: [EMPTY; N],
            len: 0,
            result: None,
        }
    }

    /// How many events the set can hold.
    #[must_use]
    pub const fn capacity(&self) -> usize {
        N
    }

    /// How many events it holds.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Empties the set.
    pub fn clear(&mut self) {
        self.len = 0;
        self.result = None;
    }

    /// Adds `event` without age tracking; returns its position.
    ///
    /// # Errors
    /// [`Error::WaitSetFull`].
    pub fn push(&mut self, event: EventHandle) -> Result<usize, Error> {
        self.push_with_age(event, 0)
    }

    /// Adds `event` with the age the caller last saw (0: no age tracking). The wait returns at
    /// once if the signal event fired after `age` (KFD ≥ 1.14), and [`WaitSet::age`] gives the
    /// new age. Returns the event's position.
    ///
    /// # Errors
    /// [`Error::WaitSetFull`].
    pub fn push_with_age(&mut self, event: EventHandle, age: u64) -> Result<usize, Error> {
        let i = self.len;
        let slot = self.entries.get_mut(i).ok_or(Error::WaitSetFull)?;
        *slot = Entry { handle: event, age_in: age, ..EMPTY };
        self.len = self.len.saturating_add(1);
        self.result = None;
        Ok(i)
    }

    /// The event at position `i`.
    #[must_use]
    pub fn handle(&self, i: usize) -> Option<EventHandle> {
        self.entry(i).map(|e| e.handle)
    }

    /// The events, in order.
    pub fn handles(&self) -> impl Iterator<Item = EventHandle> + '_ {
        self.entries.iter().take(self.len).map(|e| e.handle)
    }

    /// How the last wait on this set ended (`None` before a wait, or after a change).
    #[must_use]
    pub const fn result(&self) -> Option<WaitResult> {
        self.result
    }

    /// Whether the event at position `i` fired in the last wait.
    #[must_use]
    pub fn fired(&self, i: usize) -> Fired {
        match (self.result, self.entry(i)) {
            (Some(_), Some(e)) => e.fired,
            _ => Fired::Unknown,
        }
    }

    /// The positions of the events that fired for certain in the last wait.
    pub fn fired_positions(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.len).filter(|i| self.fired(*i) == Fired::Yes)
    }

    /// The age of the event at position `i`: the kernel's current age when the last wait
    /// reported one, else the age given to [`WaitSet::push_with_age`] (0 without tracking).
    #[must_use]
    pub fn age(&self, i: usize) -> u64 {
        match (self.entry(i), self.kernel.get(i)) {
            (Some(e), Some(k)) if e.tracked && self.result.is_some() => {
                k.data.signal_event_data().last_event_age
            }
            (Some(e), _) => e.age_in,
            _ => 0,
        }
    }

    /// The exception data of the event at position `i`, when it fired with data.
    #[must_use]
    pub fn data(&self, i: usize) -> Option<EventData> {
        self.entry(i).and_then(|e| e.data)
    }

    fn entry(&self, i: usize) -> Option<&Entry> {
        if i < self.len { self.entries.get(i) } else { None }
    }

    /// Fills the kernel entry of position `i` for event `id` of type `event_type`; ages are
    /// passed only when `ages` (the kernel has them).
    ///
    /// This and [`WaitSet::kernel_mut`] and [`WaitSet::finish`] are the steps of one wait
    /// ([`Kfd::wait_events`](crate::device::Kfd::wait_events) takes them around
    /// `AMDKFD_IOC_WAIT_EVENTS`); they are public for callers that run the ioctl themselves and
    /// for tests of the decoding.
    ///
    /// # Errors
    /// [`Error::WaitSetFull`] when `i` is not a position of the set; [`Error::NoEventAge`] when
    /// an age was given but cannot be tracked.
    pub fn bind(
        &mut self,
        i: usize,
        id: u32,
        event_type: EventType,
        ages: bool,
    ) -> Result<(), Error> {
        if i >= self.len {
            return Err(Error::WaitSetFull);
        }
        let (Some(e), Some(k)) = (self.entries.get_mut(i), self.kernel.get_mut(i)) else {
            return Err(Error::WaitSetFull);
        };
        if e.age_in != 0 && !(ages && event_type.has_age()) {
            return Err(Error::NoEventAge);
        }
        e.event_type = event_type;
        e.tracked = e.age_in != 0;
        e.fired = Fired::Unknown;
        e.data = None;
        *k = kfd_event_data { event_id: id, ..kfd_event_data::default() };
        if e.tracked {
            k.data = kfd_hsa_signal_event_data { last_event_age: e.age_in }.into();
        }
        Ok(())
    }

    /// The kernel's `kfd_event_data` array for the bound events: what `WAIT_EVENTS` reads and
    /// copies back.
    pub fn kernel_mut(&mut self) -> &mut [kfd_event_data] {
        let len = self.len.min(N);
        self.kernel.get_mut(..len).unwrap_or_default()
    }

    /// Records how the wait ended and works out, from what the kernel copied back into
    /// [`WaitSet::kernel_mut`] (any bytes: the kernel's reply is not trusted), which events
    /// fired and their data, mapping GPUs to nodes with `node_of`.
    pub fn finish(
        &mut self,
        mode: WaitMode,
        result: WaitResult,
        node_of: impl Fn(u32) -> Option<u32>,
    ) {
        let len = self.len.min(N);
        let single = len == 1;
        let mut any_tracked = false;
        for (e, k) in self.entries.iter_mut().zip(self.kernel.iter()).take(len) {
            any_tracked |= e.tracked;
            e.data = None;
            e.fired = match (result, mode) {
                (WaitResult::TimedOut, WaitMode::Any) => Fired::No,
                (WaitResult::TimedOut, WaitMode::All) => Fired::Unknown,
                (WaitResult::Complete, WaitMode::All) => Fired::Yes,
                (WaitResult::Complete, WaitMode::Any) => {
                    if e.tracked {
                        if k.data.signal_event_data().last_event_age != e.age_in {
                            Fired::Yes
                        } else {
                            Fired::No
                        }
                    } else if single {
                        Fired::Yes
                    } else {
                        match (e.event_type, decode(e.event_type, k, &node_of)) {
                            (_, Some(_)) => Fired::Yes,
                            // The kernel copies memory-fault data for every activated memory
                            // event, always with a gpu_id.
                            (EventType::Memory, None) => Fired::No,
                            _ => Fired::Unknown,
                        }
                    }
                }
            };
            if e.fired == Fired::Yes {
                e.data = decode(e.event_type, k, &node_of);
                if let Some(data) = &e.data {
                    log_warn!("GPU exception: {:?}", data);
                }
            }
        }
        // A completed wait-any activated at least one event: if only one could have been, it
        // was. (Entries with ages answer "fired after that age", which does not exclude being
        // activated by a flag set earlier, so the deduction needs none of them.)
        if result == WaitResult::Complete && mode == WaitMode::Any && !any_tracked {
            let active = self.entries.get_mut(..len).unwrap_or_default();
            let yes = active.iter().filter(|e| e.fired == Fired::Yes).count();
            let unknown = active.iter().filter(|e| e.fired == Fired::Unknown).count();
            if yes == 0
                && unknown == 1
                && let Some(e) = active.iter_mut().find(|e| e.fired == Fired::Unknown)
            {
                e.fired = Fired::Yes;
            }
        }
        self.result = Some(result);
    }
}
