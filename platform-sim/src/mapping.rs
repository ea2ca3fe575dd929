//! [`SimMapping`]: CPU mappings handed to core. Memory is real host memory at the GPU virtual
//! address (made with `hsakmt-hostmem`), so what the CPU writes is what the
//! simulated GPU reads; doorbell pages additionally wake the simulated command processor.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64};

use hsakmt_core::error::Errno;
use hsakmt_core::platform::SharedMemory;
use hsakmt_hostmem::HostMapping;

/// Receives doorbell writes of a simulated doorbell page.
pub(crate) trait DoorbellSink: Send + Sync {
    /// The doorbell at byte `offset` of the page was written with `value`.
    fn rung(&self, offset: usize, value: u64);
}

/// A CPU mapping of simulated GPU-shared memory.
#[derive(Clone)]
pub struct SimMapping {
    memory: HostMapping,
    doorbell: Option<Arc<dyn DoorbellSink>>,
    /// Counts this mapping's clones alone: the simulator keeps its own reference to the
    /// memory behind a buffer, which must not make core think a caller still holds a view.
    clones: Arc<()>,
}

impl fmt::Debug for SimMapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimMapping")
            .field("addr", &format_args!("{:#x}", self.memory.addr()))
            .field("len", &self.memory.len())
            .field("doorbell", &self.doorbell.is_some())
            .finish()
    }
}

impl SimMapping {
    pub(crate) fn new(memory: HostMapping) -> Self {
        Self { memory, doorbell: None, clones: Arc::new(()) }
    }

    /// The host memory behind the mapping.
    pub(crate) fn memory(&self) -> &HostMapping {
        &self.memory
    }

    /// A doorbell page: writes through [`SharedMemory::ring_doorbell64`] (and `32`) reach
    /// `sink`, which wakes the simulated command processor.
    pub(crate) fn doorbell(memory: HostMapping, sink: Arc<dyn DoorbellSink>) -> Self {
        Self { memory, doorbell: Some(sink), clones: Arc::new(()) }
    }
}

impl SharedMemory for SimMapping {
    fn addr(&self) -> u64 {
        self.memory.addr()
    }
    fn len(&self) -> usize {
        self.memory.len()
    }
    fn u32s(&self) -> &[AtomicU32] {
        self.memory.u32s()
    }
    fn u64s(&self) -> &[AtomicU64] {
        self.memory.u64s()
    }
    fn write(&self, offset: usize, src: &[u8]) -> Result<(), Errno> {
        self.memory.write(offset, src)
    }
    fn read(&self, offset: usize, dst: &mut [u8]) -> Result<(), Errno> {
        self.memory.read(offset, dst)
    }
    fn ring_doorbell64(&self, offset: usize, value: u64) {
        self.memory.ring_doorbell64(offset, value);
        if let Some(sink) = &self.doorbell {
            sink.rung(offset, value);
        }
    }
    fn ring_doorbell32(&self, offset: usize, value: u32) {
        self.memory.ring_doorbell32(offset, value);
        if let Some(sink) = &self.doorbell {
            sink.rung(offset, u64::from(value));
        }
    }
    fn is_shared(&self) -> bool {
        Arc::strong_count(&self.clones) > 1
    }
}
