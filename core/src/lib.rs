//! # hsakmt-core
//!
//! The `no_std`, allocation-free heart of hsakmt-rs: a user-mode layer over the Linux amdkfd
//! driver (`/dev/kfd`), the role ROCm's libhsakmt ("thunk") plays for ROCr.
//!
//! **Core performs no I/O.** Every effect — sysfs reads, ioctls, mmaps, the clock, the process
//! id, environment lookups — arrives through the [`platform`] traits, implemented by
//! `hsakmt-linux` (real syscalls) and `hsakmt-sim` (an in-process emulated amdkfd + GPU).
//! Core never allocates: every table has a capacity fixed at compile time, and running out is a
//! typed error.
//!
//! A tour, bottom up:
//! - [`uapi`]: the kernel's `kfd_ioctl.h` / `kfd_sysfs.h`, byte for byte.
//! - [`config`]: every capacity, one name each.
//! - [`error`]: one shared [`error::ErrorKind`], errno values, and libhsakmt status codes.
//! - [`slot_table`]: the generation-checked slot table behind the handle tables.
//! - [`platform`]: the injected I/O boundary.
//! - [`topology`]: the sysfs topology snapshot and what libhsakmt derives from it.
//! - [`memory`]: bounded-time VA allocation in apertures (libhsakmt's placement rules) and the
//!   generation-checked table of memory objects.
//! - [`queue`]: AQL/SDMA packets, the lock-free ring producer, signals, per-queue sizing.
//! - [`event`]: the event table, wait sets, exception data and the callback registry.
//! - [`device`]: [`device::Kfd`], the hsaKmt-style facade wiring all of the above over one
//!   platform.
//! - [`code_object`]: AMDGPU ELF code objects (v4–v6): target, segments, relocations, kernel
//!   descriptors, metadata, kernel-argument layout.
//! - [`driver`]: the HSA-style driver abstraction layer above devices: agents, regions, driver
//!   selection, pools.
//!
//! # Logging
//!
//! Core logs what a deployed appliance wants to see — topology warnings, retried ioctls and
//! snapshots, queue errors, GPU memory faults and resets — through one internal shim: `defmt`'s
//! macros with the `defmt` feature, the `log` facade with the `log` feature, nothing (not even
//! the formatting) by default.
//!
//! # Module names
//!
//! A capability that talks to the kernel lives at two levels, and their names say what each
//! level adds:
//! - the **bookkeeping** level is a top-level module named for the capability ([`memory`],
//!   [`queue`], [`event`]): pure state machines, formats and tables — no platform, no lock, no
//!   ioctl;
//! - the **manager** level is `device::<capability>_manager` ([`device::memory_manager`],
//!   [`device::queue_manager`], and the private event manager): the part of [`device::Kfd`] that
//!   takes the locks, issues the ioctls and mappings through the platform, and records the
//!   outcome in the bookkeeping.
//!
//! Below them, a file is named for the one thing it holds (`memory::dmabuf_info` decodes what
//! the kernel says about a dma-buf; `device::memory_manager::dmabuf` exports and imports one),
//! so no two modules of the crate share a name at different levels (test modules excepted).
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )
)]

#[cfg(test)]
extern crate std;

#[macro_use]
mod logging;

pub mod code_object;
pub mod config;
pub mod debug;
pub mod device;
pub mod driver;
pub mod error;
pub mod event;
pub mod memory;
pub mod platform;
pub mod pmc;
pub mod queue;
pub mod slot_table;
pub mod smi;
pub mod topology;
pub mod uapi;
