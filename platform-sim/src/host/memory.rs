//! The host driver's memory: allocations and registrations of the application (tracked by
//! address, backed by the shared [`HostVm`] table the packet processors resolve through), and
//! the completion-signal pool carved by core's [`SubAllocator`].

use std::collections::{BTreeMap, HashSet};

use hsakmt_core::driver::{DriverError, RegionId, SignalId};
use hsakmt_core::error::{Errno, ErrorKind};
use hsakmt_core::memory::va::VaSlot;
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::signal::{SIGNAL_SIZE, Signal, SignalInit};
use hsakmt_hostmem::{HostMapping, is_mapped, map_shared_anywhere};

use crate::gpu::vm::HostVm;
use hsakmt_core::driver::SubAllocator;

/// Page size: the allocation granule and alignment of host memory.
pub const HOST_PAGE: u64 = 4096;
/// Completion signals in the pool (64 bytes each: 256 KiB of host memory).
pub const MAX_HOST_SIGNALS: usize = 4096;

const POOL_BYTES: u64 = MAX_HOST_SIGNALS as u64 * SIGNAL_SIZE as u64;

/// What an application address names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// Memory allocated from a region.
    Allocated(RegionId),
    /// The application's memory, registered at this (unaligned) address for this many bytes.
    Registered {
        /// The recorded (page-aligned) mapping's start.
        base: u64,
    },
}

/// Application memory by address.
#[derive(Debug, Default)]
pub(crate) struct Buffers {
    by_addr: BTreeMap<u64, Use>,
}

fn failed(kind: ErrorKind, what: &'static str) -> DriverError {
    DriverError::Failed { kind, what }
}

impl Buffers {
    /// Allocates `size` bytes (rounded up to pages) of zeroed host memory and records it in
    /// `vm`; returns the address and rounded size.
    pub(crate) fn allocate(
        &mut self,
        vm: &HostVm,
        region: RegionId,
        size: u64,
    ) -> Result<(u64, u64), DriverError> {
        let bytes = size
            .checked_next_multiple_of(HOST_PAGE)
            .filter(|b| *b > 0)
            .ok_or(DriverError::InvalidArgument("allocation size"))?;
        let mapping = new_mapping(bytes)?;
        let addr = mapping.addr();
        vm.insert(mapping, false).map_err(|_| failed(ErrorKind::Inconsistent, "memory table"))?;
        self.by_addr.insert(addr, Use::Allocated(region));
        Ok((addr, bytes))
    }

    /// Frees an allocation.
    pub(crate) fn free(&mut self, vm: &HostVm, addr: u64) -> Result<(), DriverError> {
        match self.by_addr.get(&addr) {
            Some(Use::Allocated(_)) => {}
            _ => return Err(DriverError::InvalidHandle),
        }
        vm.remove(addr).map_err(|_| failed(ErrorKind::Busy, "free"))?;
        self.by_addr.remove(&addr);
        Ok(())
    }

    /// Records the application's `[addr, addr + size)` (its pages, which must be mapped) for
    /// device access; the device address is `addr`.
    pub(crate) fn register(
        &mut self,
        vm: &HostVm,
        addr: u64,
        size: u64,
    ) -> Result<u64, DriverError> {
        let base = addr & !(HOST_PAGE - 1);
        let end = addr
            .checked_add(size)
            .filter(|_| size > 0 && addr != 0)
            .and_then(|e| e.checked_next_multiple_of(HOST_PAGE))
            .ok_or(DriverError::InvalidArgument("registration range"))?;
        if self.by_addr.contains_key(&addr) {
            return Err(failed(ErrorKind::AlreadyRegistered, "register"));
        }
        if !is_mapped(base, end - base) {
            return Err(DriverError::InvalidArgument("registered memory is not mapped"));
        }
        let len = usize::try_from(end - base)
            .map_err(|_| DriverError::InvalidArgument("registration range"))?;
        // Registering memory promises to keep it mapped, readable and writable until it is
        // deregistered (libhsakmt's contract for `hsaKmtRegisterMemory`, which this call
        // models); it is mapped now (checked above), the view starts on a page boundary, and
        // the memory table checks it is still mapped whenever a packet processor resolves it.
        let view = HostMapping::registered(base, len)
            .map_err(|_| DriverError::InvalidArgument("registered memory is not mapped"))?;
        vm.insert(view, true).map_err(|_| failed(ErrorKind::AlreadyRegistered, "register"))?;
        self.by_addr.insert(addr, Use::Registered { base });
        Ok(addr)
    }

    /// Forgets a registration.
    pub(crate) fn deregister(&mut self, vm: &HostVm, addr: u64) -> Result<(), DriverError> {
        let Some(Use::Registered { base }) = self.by_addr.get(&addr).copied() else {
            return Err(failed(ErrorKind::NotRegistered, "deregister"));
        };
        vm.remove(base).map_err(|_| failed(ErrorKind::Busy, "deregister"))?;
        self.by_addr.remove(&addr);
        Ok(())
    }

    /// What `addr` names.
    pub(crate) fn get(&self, addr: u64) -> Option<Use> {
        self.by_addr.get(&addr).copied()
    }

    /// Forgets everything recorded here (and its memory-table entries).
    pub(crate) fn clear(&mut self, vm: &HostVm) {
        for (addr, u) in std::mem::take(&mut self.by_addr) {
            let _ = vm.remove(match u {
                Use::Allocated(_) => addr,
                Use::Registered { base } => base,
            });
        }
    }
}

/// Zeroed, page-aligned host memory that stays at its address until the last view of it goes.
pub(crate) fn new_mapping(bytes: u64) -> Result<HostMapping, DriverError> {
    map_shared_anywhere(bytes).map_err(|e| {
        failed(
            if e == Errno::ENOMEM { ErrorKind::OutOfResources } else { ErrorKind::Io },
            "host memory allocation",
        )
    })
}

/// The completion signals: `amd_signal_t`s in one block of host memory the packet processors
/// resolve, handed out by a bounded-time sub-allocator.
#[derive(Default)]
pub(crate) struct SignalPool {
    memory: Option<HostMapping>,
    slots: Option<SubAllocator<Vec<VaSlot>>>,
    live: HashSet<u64>,
}

impl std::fmt::Debug for SignalPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignalPool").field("live", &self.live.len()).finish_non_exhaustive()
    }
}

impl SignalPool {
    /// Creates a signal with `initial` value, making the pool on first use.
    pub(crate) fn create(&mut self, vm: &HostVm, initial: i64) -> Result<SignalId, DriverError> {
        if self.memory.is_none() {
            let memory = new_mapping(POOL_BYTES)?;
            let slots = SubAllocator::new(
                vec![VaSlot::EMPTY; 2 * MAX_HOST_SIGNALS + 1],
                memory.addr(),
                POOL_BYTES,
                6,
            )
            .map_err(|_| DriverError::InvalidArgument("signal pool address"))?;
            vm.insert(memory.clone(), false)
                .map_err(|_| failed(ErrorKind::Inconsistent, "memory table"))?;
            self.memory = Some(memory);
            self.slots = Some(slots);
        }
        let (Some(memory), Some(slots)) = (self.memory.as_ref(), self.slots.as_mut()) else {
            return Err(DriverError::NotInitialized);
        };
        let addr = slots
            .alloc(SIGNAL_SIZE as u64, SIGNAL_SIZE as u64)
            .map_err(|_| DriverError::CapacityExhausted("signal"))?;
        let offset = usize::try_from(addr - memory.addr()).unwrap_or(usize::MAX);
        if let Ok(s) = Signal::new(memory, offset) {
            s.init(&SignalInit::User { value: initial, mailbox: None });
        }
        self.live.insert(addr);
        Ok(SignalId(addr))
    }

    /// Destroys a signal.
    pub(crate) fn destroy(&mut self, signal: SignalId) -> Result<(), DriverError> {
        let (memory, offset) = self.view(signal)?;
        if let Ok(s) = Signal::new(&memory, offset) {
            s.invalidate();
        }
        self.live.remove(&signal.0);
        if let Some(slots) = self.slots.as_mut() {
            let _ = slots.free(signal.0);
        }
        Ok(())
    }

    /// The pool memory and the signal's offset in it (the mapping is a clone: it keeps the
    /// memory alive while the caller uses it).
    pub(crate) fn view(&self, signal: SignalId) -> Result<(HostMapping, usize), DriverError> {
        let memory = self.memory.as_ref().ok_or(DriverError::InvalidHandle)?;
        if !self.live.contains(&signal.0) {
            return Err(DriverError::InvalidHandle);
        }
        let offset =
            usize::try_from(signal.0 - memory.addr()).map_err(|_| DriverError::InvalidHandle)?;
        Ok((memory.clone(), offset))
    }

    /// Destroys every signal (waiters see them invalid) and drops the pool.
    pub(crate) fn clear(&mut self, vm: &HostVm) {
        if let Some(m) = self.memory.take() {
            for addr in self.live.drain() {
                let offset = usize::try_from(addr - m.addr()).unwrap_or(usize::MAX);
                if let Ok(s) = Signal::new(&m, offset) {
                    s.invalidate();
                }
            }
            let _ = vm.remove(m.addr());
        }
        self.slots = None;
        self.live.clear();
    }
}
