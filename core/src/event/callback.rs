//! [`CallbackRegistry`]: handlers for an event or an event type, in fixed-capacity,
//! generation-checked slots that a dispatch can use without holding a lock while it calls.
//!
//! # Dispatch protocol
//!
//! A dispatcher, under the registry's lock, [`collects`](CallbackRegistry::collect) the ids of
//! the callbacks matching a fired event; each collected slot is *pinned* (not reusable). Then,
//! per id: under the lock, [`begin_call`](CallbackRegistry::begin_call) returns the callback
//! unless it was unregistered meanwhile, and marks it *calling*; the dispatcher calls it with
//! the lock released, and [`end_call`](CallbackRegistry::end_call) unpins.
//!
//! So [`unregister`](CallbackRegistry::unregister) is safe at any time, from any thread,
//! including from inside the callback: once it returns, the callback is never *started* again;
//! it reports [`Unregistered::Running`] when a call had already started and may still be
//! running (callbacks are `'static`, so that call is memory-safe).

use crate::event::{Error, EventData, EventHandle, EventType};

pub use crate::config::DEFAULT_CALLBACK_CAPACITY;

/// A callback: any `'static` function or closure (a leaked box, a `static`, a function item).
pub type Callback = &'static (dyn Fn(&Notification) + Send + Sync);

/// Which events a callback is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Filter {
    /// One event.
    Event(EventHandle),
    /// Every event of a type (signal completion, memory fault, HW exception, device state
    /// change, …) in the table when the dispatcher waits.
    Type(EventType),
}

impl Filter {
    /// Whether an event `event` of type `event_type` is for this filter.
    #[must_use]
    pub fn matches(&self, event: EventHandle, event_type: EventType) -> bool {
        match *self {
            Self::Event(h) => h == event,
            Self::Type(t) => t == event_type,
        }
    }
}

/// What a callback is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Notification {
    /// The event.
    pub event: EventHandle,
    /// Its type.
    pub event_type: EventType,
    /// Its kernel id.
    pub event_id: u32,
    /// Its age after the firing (0 without ages).
    pub age: u64,
    /// Its exception data, if it carries any.
    pub data: Option<EventData>,
    /// `false` when the kernel could not say which event of a wait fired (no age and no data),
    /// so this call may be spurious: check the condition the event stands for.
    pub certain: bool,
}

/// A registered callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CallbackId {
    index: u16,
    generation: u32,
}

impl CallbackId {
    /// An id no registry hands out (generation 0), for filling arrays.
    pub const NONE: Self = Self { index: 0, generation: 0 };
}

/// What [`CallbackRegistry::unregister`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Unregistered {
    /// The callback is gone and not running.
    Done,
    /// The callback is gone, but a call that started before is still running.
    Running,
}

#[derive(Clone, Copy)]
struct Registered {
    filter: Filter,
    callback: Callback,
    removed: bool,
}

#[derive(Clone, Copy)]
struct Slot {
    generation: u32,
    entry: Option<Registered>,
    pinned: u32,
    calling: u32,
}

/// Up to `N` callbacks.
///
/// # Invariants
/// `calling <= pinned`; a slot is free (reusable) exactly when it has no entry and no pin; its
/// generation changes whenever it becomes free, and is never 0.
pub struct CallbackRegistry<const N: usize = DEFAULT_CALLBACK_CAPACITY> {
    slots: [Slot; N],
}

impl<const N: usize> core::fmt::Debug for CallbackRegistry<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CallbackRegistry")
            .field("registered", &self.len())
            .field("capacity", &N)
            .finish()
    }
}

impl<const N: usize> Default for CallbackRegistry<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> CallbackRegistry<N> {
    const CAPACITY_FITS: () = assert!(N <= u16::MAX as usize, "a registry holds <= 65535 slots");

    /// An empty registry.
    #[must_use]
    pub const fn new() -> Self {
        let () = Self::CAPACITY_FITS;
        Self { slots: [Slot { generation: 1, entry: None, pinned: 0, calling: 0 }; N] }
    }

    /// Registered callbacks (not counting unregistered ones still running).
    #[must_use]
    pub fn len(&self) -> usize {
        self.slots.iter().filter(|s| matches!(s.entry, Some(r) if !r.removed)).count()
    }

    /// Whether none is registered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Registers `callback` for `filter`.
    ///
    /// # Errors
    /// [`Error::RegistryFull`].
    pub fn register(&mut self, filter: Filter, callback: Callback) -> Result<CallbackId, Error> {
        let (index, slot) = self
            .slots
            .iter_mut()
            .enumerate()
            .find(|(_, s)| s.entry.is_none() && s.pinned == 0)
            .ok_or(Error::RegistryFull)?;
        slot.entry = Some(Registered { filter, callback, removed: false });
        // `index < N <= u16::MAX` (checked at compile time).
        Ok(CallbackId { index: index as u16, generation: slot.generation })
    }

    /// Unregisters a callback: no call of it starts after this returns.
    ///
    /// # Errors
    /// [`Error::InvalidCallback`] for an id that is not registered (any more).
    pub fn unregister(&mut self, id: CallbackId) -> Result<Unregistered, Error> {
        let slot = self.live_slot(id)?;
        let running = slot.calling > 0;
        if slot.pinned == 0 {
            Self::free(slot);
        } else if let Some(r) = slot.entry.as_mut() {
            r.removed = true;
        }
        Ok(if running { Unregistered::Running } else { Unregistered::Done })
    }

    /// Whether a call of `id` (registered or not) is running now.
    #[must_use]
    pub fn is_running(&self, id: CallbackId) -> bool {
        self.slots
            .get(usize::from(id.index))
            .is_some_and(|s| s.generation == id.generation && s.calling > 0)
    }

    /// The filters of the registered callbacks.
    pub fn filters(&self) -> impl Iterator<Item = Filter> + '_ {
        self.slots.iter().filter_map(|s| match s.entry {
            Some(r) if !r.removed => Some(r.filter),
            _ => None,
        })
    }

    /// Pins and stores in `out` the ids of the callbacks for an event `event` of type
    /// `event_type`; returns how many (at most `out.len()`). Each must be settled with
    /// [`CallbackRegistry::end_call`].
    pub fn collect(
        &mut self,
        event: EventHandle,
        event_type: EventType,
        out: &mut [CallbackId],
    ) -> usize {
        let mut n = 0;
        for (index, slot) in self.slots.iter_mut().enumerate() {
            let Some(r) = slot.entry else { continue };
            if r.removed || !r.filter.matches(event, event_type) {
                continue;
            }
            let Some(dst) = out.get_mut(n) else { break };
            *dst = CallbackId { index: index as u16, generation: slot.generation };
            slot.pinned = slot.pinned.saturating_add(1);
            n = n.saturating_add(1);
        }
        n
    }

    /// The callback of a collected id, marked calling — or `None` when it was unregistered
    /// since (then do not call; still settle it with [`CallbackRegistry::end_call`]).
    pub fn begin_call(&mut self, id: CallbackId) -> Option<Callback> {
        let slot = self.pinned_slot(id)?;
        match slot.entry {
            Some(r) if !r.removed => {
                slot.calling = slot.calling.saturating_add(1);
                Some(r.callback)
            }
            _ => None,
        }
    }

    /// Settles a collected id; `called` says whether [`CallbackRegistry::begin_call`] returned
    /// the callback.
    pub fn end_call(&mut self, id: CallbackId, called: bool) {
        let Some(slot) = self.pinned_slot(id) else { return };
        if called {
            slot.calling = slot.calling.saturating_sub(1);
        }
        slot.pinned = slot.pinned.saturating_sub(1);
        if slot.pinned == 0 && matches!(slot.entry, Some(r) if r.removed) {
            Self::free(slot);
        }
    }

    /// Unregisters everything (callbacks still running finish; their slots free afterwards).
    pub fn clear(&mut self) {
        for slot in &mut self.slots {
            if slot.pinned == 0 {
                if slot.entry.is_some() {
                    Self::free(slot);
                }
            } else if let Some(r) = slot.entry.as_mut() {
                r.removed = true;
            }
        }
    }

    fn live_slot(&mut self, id: CallbackId) -> Result<&mut Slot, Error> {
        match self.slots.get_mut(usize::from(id.index)) {
            Some(s)
                if s.generation == id.generation && matches!(s.entry, Some(r) if !r.removed) =>
            {
                Ok(s)
            }
            _ => Err(Error::InvalidCallback),
        }
    }

    fn pinned_slot(&mut self, id: CallbackId) -> Option<&mut Slot> {
        self.slots
            .get_mut(usize::from(id.index))
            .filter(|s| s.generation == id.generation && s.pinned > 0)
    }

    fn free(slot: &mut Slot) {
        slot.entry = None;
        slot.calling = 0;
        slot.generation = match slot.generation.wrapping_add(1) {
            0 => 1,
            g => g,
        };
    }
}
