//! Every capacity and fixed setting of the C library, one name each.

/// Live memory objects the library holds (allocations, registrations, imports, queue buffers):
/// the device facade's table capacity, on the heap.
pub(crate) const MEMORY_OBJECTS: usize = 16_384;

/// Events one `hsaKmtWaitOnMultipleEvents` call may name (the kernel has no smaller limit;
/// upstream's callers use at most 64).
pub(crate) const MAX_WAIT_EVENTS: usize = 256;

/// The `HSAKMT_DEBUG_LEVEL` from which errors are printed to stderr (upstream's `pr_err`).
pub(crate) const DEBUG_LEVEL_ERR: i32 = 3;

/// Counters one `hsaKmtPmcRegisterTrace` registers (upstream's `MAX_COUNTERS`; more is
/// `HSAKMT_STATUS_NO_MEMORY`, as upstream).
pub(crate) const MAX_TRACE_COUNTERS: u32 = 512;
