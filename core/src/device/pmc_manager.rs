//! Performance counters (`hsaKmtPmc*`) over the tables and trace bookkeeping of
//! [`crate::pmc`]: properties per GPU, trace registration with generation-checked handles, and
//! the answer to starting a trace on today's kernels ([`crate::pmc::Error::NoKernelInterface`]).

use super::{Error, Kfd};
use crate::config::MAX_PMC_TRACES;
use crate::device::MemoryStorage;
use crate::platform::Platform;
use crate::pmc::{self, CounterBlock, TraceCounter, TraceRequest};
use crate::slot_table::{SlotKey, SlotTable};

/// A registered trace (`HSATraceId`): a slot and its generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TraceHandle(u64);

impl TraceHandle {
    /// The raw id (for a C wrapper's `HSATraceId`).
    #[must_use]
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// A handle from a raw id (validated when used).
    #[must_use]
    pub const fn from_raw(raw: u64) -> Self {
        Self(raw)
    }
}

/// What `hsaKmtPmcRegisterTrace` returns (`HsaPmcTraceRoot`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TraceRoot {
    /// The trace.
    pub handle: TraceHandle,
    /// Trace buffer bytes it needs (page aligned).
    pub min_buffer_bytes: u64,
    /// Passes (always 1).
    pub passes: u32,
}

impl TraceHandle {
    fn key(self) -> SlotKey {
        SlotKey::new((self.0 & 0xFFFF_FFFF) as u32, (self.0 >> 32) as u32)
    }

    fn of(key: SlotKey) -> Self {
        Self(u64::from(key.generation()) << 32 | u64::from(key.index()))
    }
}

/// The registered traces: the node of each, named by generation-checked handles.
#[derive(Debug)]
pub(crate) struct Traces(SlotTable<u32, MAX_PMC_TRACES>);

impl Traces {
    pub(crate) const fn new() -> Self {
        Self(SlotTable::new())
    }

    fn insert(&mut self, node: u32) -> Option<TraceHandle> {
        self.0.insert(node).ok().map(TraceHandle::of)
    }

    fn get(&self, h: TraceHandle) -> Option<u32> {
        self.0.get(h.key()).copied()
    }

    fn remove(&mut self, h: TraceHandle) -> Option<u32> {
        self.0.remove(h.key())
    }

    pub(crate) fn clear(&mut self) {
        self.0.drain(drop);
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// `hsaKmtPmcGetCounterProperties`: the counter blocks of GPU `node` (its real gfx
    /// version's table).
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`]; [`Error::InvalidNode`];
    /// [`Error::Pmc`]: [`pmc::Error::NotAGpu`], [`pmc::Error::NoCounters`] (`NOT_SUPPORTED`).
    pub fn pmc_counter_blocks(&self, node: u32) -> Result<&'static [CounterBlock], Error> {
        let gfx = self
            .with_topology(|t| t.node_by_user_id(node).map(|n| n.gfx().filter(|_| n.has_gpu())))?
            .ok_or(Error::InvalidNode { node })?
            .ok_or(Error::Pmc(pmc::Error::NotAGpu))?;
        pmc::counter_blocks(gfx).map_err(Error::Pmc)
    }

    /// `hsaKmtPmcRegisterTrace`: validates the counters as upstream does and registers a
    /// trace of GPU `node`.
    ///
    /// # Errors
    /// As [`Kfd::pmc_counter_blocks`]; [`Error::Pmc`]: [`pmc::Error::InvalidCounters`],
    /// [`pmc::Error::TooManyTraces`].
    pub fn pmc_register_trace(
        &self,
        node: u32,
        counters: &[TraceCounter],
    ) -> Result<TraceRoot, Error> {
        let blocks = self.pmc_counter_blocks(node)?;
        let req = TraceRequest::new(blocks, counters).map_err(Error::Pmc)?;
        let handle =
            self.pmc_traces.lock().insert(node).ok_or(Error::Pmc(pmc::Error::TooManyTraces))?;
        Ok(TraceRoot { handle, min_buffer_bytes: req.min_buffer_bytes, passes: req.passes })
    }

    fn pmc_trace_node(&self, node: u32, trace: TraceHandle) -> Result<(), Error> {
        match self.pmc_traces.lock().get(trace) {
            Some(n) if n == node => Ok(()),
            Some(_) => Err(Error::InvalidNode { node }),
            None => Err(Error::Pmc(pmc::Error::UnknownTrace)),
        }
    }

    /// `hsaKmtPmcUnregisterTrace`.
    ///
    /// # Errors
    /// [`Error::Pmc`] ([`pmc::Error::UnknownTrace`]); [`Error::InvalidNode`] for another
    /// node's trace.
    pub fn pmc_unregister_trace(&self, node: u32, trace: TraceHandle) -> Result<(), Error> {
        self.pmc_trace_node(node, trace)?;
        self.pmc_traces.lock().remove(trace);
        Ok(())
    }

    /// `hsaKmtPmcAcquireTraceAccess` / `hsaKmtPmcReleaseTraceAccess`: upstream only validates
    /// the trace and the node.
    ///
    /// # Errors
    /// As [`Kfd::pmc_unregister_trace`].
    pub fn pmc_trace_access(&self, node: u32, trace: TraceHandle) -> Result<(), Error> {
        self.pmc_trace_node(node, trace)
    }

    /// `hsaKmtPmcStartTrace`, `QueryTrace`, `StopTrace`: no kernel interface delivers counter
    /// values to a thunk (see [`crate::pmc`]).
    ///
    /// # Errors
    /// [`Error::Pmc`]: [`pmc::Error::UnknownTrace`], else [`pmc::Error::NoKernelInterface`]
    /// (`NOT_SUPPORTED`).
    pub fn pmc_run_trace(&self, trace: TraceHandle) -> Result<(), Error> {
        if self.pmc_traces.lock().get(trace).is_none() {
            return Err(Error::Pmc(pmc::Error::UnknownTrace));
        }
        Err(Error::Pmc(pmc::Error::NoKernelInterface))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_handles_are_generation_checked() {
        let mut t = Traces::new();
        let a = t.insert(3).unwrap();
        assert_eq!(t.get(a), Some(3));
        assert_eq!(t.remove(a), Some(3));
        assert_eq!(t.get(a), None);
        let b = t.insert(4).unwrap();
        // The slot is reused with a new generation: the old handle stays dead.
        assert_ne!(a, b);
        assert_eq!(t.get(a), None);
        assert_eq!(t.get(TraceHandle::from_raw(u64::MAX)), None);
        for _ in 1..MAX_PMC_TRACES {
            assert!(t.insert(0).is_some());
        }
        assert!(t.insert(0).is_none());
        t.clear();
        assert_eq!(t.get(b), None);
    }
}
