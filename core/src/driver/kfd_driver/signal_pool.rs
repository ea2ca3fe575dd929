//! Completion signals carved by a bounded-time [`SubAllocator`] out of one GPU-visible page pool,
//! each with a KFD signal event so waiters sleep in the kernel and the device raises it.

use crate::device::{Allocation, EventDescriptor, Kfd, MapNodes, MemoryStorage, SignalCondition};
use crate::driver::{AgentKind, DriverError, KfdDriver, SignalId, SubAllocator, Waited};
use crate::event::{EventHandle, WaitResult};
use crate::memory::MemFlags;
use crate::memory::va::VaSlot;
use crate::platform::{Platform, SharedMemory};
use crate::queue::signal::{Mailbox, Signal, SignalInit};

use super::{MAX_DRIVER_SIGNALS, timeout};

pub(super) const SIGNAL_BYTES: u64 = 64;
pub(super) const POOL_BYTES: u64 = MAX_DRIVER_SIGNALS as u64 * SIGNAL_BYTES;

pub(super) struct SignalPool<M: SharedMemory> {
    pub(super) memory: Option<Allocation<M>>,
    pub(super) slots: Option<SubAllocator<[VaSlot; 2 * MAX_DRIVER_SIGNALS + 1]>>,
    pub(super) events: [Option<EventHandle>; MAX_DRIVER_SIGNALS],
}

impl<M: SharedMemory> SignalPool<M> {
    /// No pool yet (it is allocated at the first signal).
    pub(super) const fn new() -> Self {
        Self { memory: None, slots: None, events: [None; MAX_DRIVER_SIGNALS] }
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> KfdDriver<P, S>
where
    Kfd<P, S>: Send + Sync,
{
    pub(super) fn ensure_signal_pool(&self) -> Result<(), DriverError> {
        if self.signals.lock().memory.is_some() {
            return Ok(());
        }
        let node = self
            .state
            .read()
            .agents
            .iter()
            .find(|a| a.kind == AgentKind::Cpu)
            .map_or(0, |a| a.id.node);
        let flags = MemFlags::HOST_ACCESS | MemFlags::NON_PAGED | MemFlags::UNCACHED;
        let alloc = self.kfd.alloc_memory(node, POOL_BYTES, flags)?;
        if let Err(e) = self.kfd.map_memory_to_gpu(alloc.addr, MapNodes::All) {
            let _ = self.kfd.free(alloc);
            return Err(e.into());
        }
        let slots = SubAllocator::new(
            [VaSlot::EMPTY; 2 * MAX_DRIVER_SIGNALS + 1],
            alloc.addr,
            POOL_BYTES,
            6,
        );
        let mut pool = self.signals.lock();
        match (pool.memory.is_some(), slots) {
            (false, Ok(slots)) => {
                pool.memory = Some(alloc);
                pool.slots = Some(slots);
                Ok(())
            }
            (true, _) => {
                // Another thread made the pool meanwhile.
                drop(pool);
                let _ = self.kfd.free(alloc);
                Ok(())
            }
            (false, Err(_)) => {
                drop(pool);
                let _ = self.kfd.free(alloc);
                Err(DriverError::InvalidArgument("signal pool address"))
            }
        }
    }

    pub(super) fn signal_parts(
        &self,
        s: SignalId,
    ) -> Result<(P::Mapping, usize, EventHandle), DriverError> {
        let pool = self.signals.lock();
        let mem = pool.memory.as_ref().ok_or(DriverError::InvalidHandle)?;
        let offset = s.0.checked_sub(mem.addr).ok_or(DriverError::InvalidHandle)?;
        let index =
            usize::try_from(offset / SIGNAL_BYTES).map_err(|_| DriverError::InvalidHandle)?;
        if offset % SIGNAL_BYTES != 0 {
            return Err(DriverError::InvalidHandle);
        }
        let event = pool.events.get(index).copied().flatten().ok_or(DriverError::InvalidHandle)?;
        let mapping = mem.mapping.clone().ok_or(DriverError::InvalidHandle)?;
        Ok((mapping, usize::try_from(offset).map_err(|_| DriverError::InvalidHandle)?, event))
    }

    /// Carves a signal with value `initial` and its event ([`Driver::create_signal`]).
    pub(super) fn create_pool_signal(&self, initial: i64) -> Result<SignalId, DriverError> {
        self.ensure_signal_pool()?;
        let event = self.kfd.create_event(&EventDescriptor::signal())?;
        let info = match self.kfd.event_info(event) {
            Ok(i) => i,
            Err(e) => {
                let _ = self.kfd.destroy_event(event);
                return Err(e.into());
            }
        };
        let mut pool = self.signals.lock();
        let addr = match pool.slots.as_mut().map(|s| s.alloc(SIGNAL_BYTES, SIGNAL_BYTES)) {
            Some(Ok(a)) => a,
            _ => {
                drop(pool);
                let _ = self.kfd.destroy_event(event);
                return Err(DriverError::CapacityExhausted("signal"));
            }
        };
        let base = pool.memory.as_ref().map_or(0, |m| m.addr);
        // `addr` was just allocated from the pool at `base`.
        let offset = addr.saturating_sub(base);
        let index = (offset / SIGNAL_BYTES) as usize;
        // PANIC: debug builds only: the pool hands out slots of its own memory, one event entry
        // per slot. Release builds give the slot and the event back and report the pool full.
        debug_assert!(index < pool.events.len(), "signal slot {index} beyond the event entries");
        let Some(e) = pool.events.get_mut(index) else {
            if let Some(slots) = pool.slots.as_mut() {
                let _ = slots.free(addr);
            }
            drop(pool);
            let _ = self.kfd.destroy_event(event);
            return Err(DriverError::CapacityExhausted("signal"));
        };
        *e = Some(event);
        let mailbox = info.mailbox.map(|address| Mailbox { address, event_id: info.id });
        if let Some(mem) = pool.memory.as_ref().and_then(|m| m.mapping.as_ref())
            && let Ok(s) = Signal::new(mem, offset as usize)
        {
            s.init(&SignalInit::User { value: initial, mailbox });
        }
        Ok(SignalId(addr))
    }

    /// Gives `signal` and its event back ([`Driver::destroy_signal`]).
    pub(super) fn destroy_pool_signal(&self, signal: SignalId) -> Result<(), DriverError> {
        let (_, offset, event) = self.signal_parts(signal)?;
        {
            let mut pool = self.signals.lock();
            if let Some(e) = pool.events.get_mut((offset as u64 / SIGNAL_BYTES) as usize) {
                *e = None;
            }
            if let Some(slots) = pool.slots.as_mut() {
                let _ = slots.free(signal.0);
            }
        }
        self.kfd.destroy_event(event)?;
        Ok(())
    }

    /// Waits for `condition` on `signal` ([`Driver::signal_wait`]).
    pub(super) fn wait_pool_signal(
        &self,
        signal: SignalId,
        condition: SignalCondition,
        timeout_ns: u64,
    ) -> Result<Waited, DriverError> {
        let (mem, offset, event) = self.signal_parts(signal)?;
        let s = Signal::new(&mem, offset).map_err(|_| DriverError::InvalidHandle)?;
        let w =
            self.kfd.wait_signal(event, &s, condition, timeout(timeout_ns), self.wait_spin_ns)?;
        Ok(match w.result {
            WaitResult::Complete => Waited::Done(w.value),
            WaitResult::TimedOut => {
                self.poll_queue_errors();
                Waited::TimedOut
            }
        })
    }
}
