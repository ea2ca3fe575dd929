//! User-mode queues, the pure layer: AQL and SDMA packet formats, the lock-free AQL ring
//! protocol, HSA signals in memory, and the per-queue parameters libhsakmt computes before
//! creating a queue.
//!
//! Everything here works on [`SharedMemory`](crate::platform::SharedMemory) views (or, for the
//! ring protocol, any [`ring::AqlRingCells`]) and never allocates, locks or makes a system call.
//! Queue creation (ioctls, allocation of rings, EOP and context-save areas) is built on top.
//!
//! - [`aql`]: AQL packet types, header encoding, builders and a total decoder.
//! - [`amd_queue`]: ROCr's `amd_queue_t` descriptor beside the ring: layout and the fields a
//!   runtime fills.
//! - [`scratch`]: a queue's private (scratch) memory: sizes, limits, `COMPUTE_TMPRING_SIZE` and
//!   the scratch resource descriptor per gfx family.
//! - [`signal`]: `amd_signal_t` layout and atomic operations; the CP completion contract.
//! - [`ring`]: multi- and single-producer AQL submission, and the consumer side.
//! - [`sdma`]: SDMA v4+ packets, copy/fill planning, the byte-indexed SDMA ring and its consumer.
//! - [`params`]: priorities, ring and CU-mask checks, doorbell placement, EOP and CWSR sizes.

pub mod amd_queue;
pub mod aql;
pub mod params;
pub mod ring;
pub mod scratch;
pub mod sdma;
pub mod signal;

#[cfg(test)]
pub(crate) mod test_mem;
