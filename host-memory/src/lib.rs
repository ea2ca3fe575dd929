//! # hsakmt-hostmem
//!
//! Host memory for both hsakmt-rs platforms: the real one (`hsakmt-linux`) and the simulated
//! one (`hsakmt-sim`) use these primitives, so neither depends on the other.
//!
//! - [`space`]: address-space reservations (`PROT_NONE`, at a hint or aligned anywhere), their
//!   release, and whether a range is mapped — what core's VA apertures sit on.
//! - [`mapping`] (feature `std`): [`HostMapping`], a reference-counted CPU mapping that
//!   implements core's [`SharedMemory`](hsakmt_core::platform::SharedMemory): anonymous
//!   private or shared memory at an address inside a reservation, shared memory anywhere, a
//!   mapping of a device file, a second mapping of shared pages, a view of memory an application
//!   registered; bounds-checked copies between mappings.
//! - [`placed`] (feature `std`): the registry of live mappings placed inside reservations,
//!   which lets a reservation be released before or after the mappings in it are dropped.
//! - [`counting`] (feature `std`): [`CountingAllocator`], the system allocator counting its
//!   allocations (how the benchmarks prove a hot path allocates nothing).
//! - [`fork`]: [`PidCache`], the process id cached in a page a fork wipes (fork detection
//!   without a system call per check).
//!
//! This crate and `hsakmt-linux` are the only places of the workspace where `unsafe` lives;
//! every block carries a `// SAFETY:` comment naming the guarantee it relies on. Without the
//! `std` feature the crate is `no_std` (the static no-libc image links it that way).
//!
//! A doorbell written through a [`HostMapping`] is a store to ordinary memory (core's default
//! [`ring_doorbell64`](hsakmt_core::platform::SharedMemory::ring_doorbell64)); the MMIO
//! doorbell store of a real GPU is `hsakmt-linux`'s, and the simulator wraps these mappings in
//! its own doorbell that wakes its command processor.
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(feature = "std")]
pub mod counting;
pub mod fork;
#[cfg(feature = "std")]
pub mod mapping;
#[cfg(feature = "std")]
pub mod placed;
pub mod space;

#[cfg(feature = "std")]
pub use counting::{CountingAllocator, thread_allocations};
pub use fork::PidCache;
#[cfg(feature = "std")]
pub use mapping::{HostMapping, map_anonymous, map_fd, map_shared, map_shared_anywhere};
pub use space::{PAGE_SIZE, is_mapped, release, reserve};

#[cfg(test)]
extern crate std;

/// Serialises this crate's tests that map or unmap: a test that releases a range and then
/// looks at it would otherwise see another test thread's mapping the kernel placed there.
#[cfg(test)]
fn serial_test() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Core's errno for a rustix one.
fn errno(e: rustix::io::Errno) -> hsakmt_core::error::Errno {
    hsakmt_core::error::Errno(e.raw_os_error())
}
