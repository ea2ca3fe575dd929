//! # hsakmt-linux
//!
//! The hsakmt-rs platform over real Linux system calls, made with `rustix` (no libc needed):
//! the KFD sysfs topology tree and `/dev/kfd`. The workspace's `unsafe` for talking to the kernel
//! lives in this crate (and host memory in `hsakmt-hostmem`), each block with a `// SAFETY:`
//! comment naming its guarantee. Doorbells are rung as on a GPU: a release fence and one plain
//! volatile store to the uncached doorbell page ([`doorbell`]).
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]

#[cfg(all(feature = "rt", feature = "std"))]
compile_error!(
    "the `rt` feature is the runtime of no-libc images and clashes with std: depend on \
     hsakmt-linux with `default-features = false` (see firmware-tests/image)"
);
#[cfg(all(feature = "rt", not(all(target_arch = "x86_64", target_os = "linux"))))]
compile_error!("the `rt` runtime supports x86_64 Linux only");

#[cfg(feature = "std")]
pub mod descriptor;
pub mod device_node;
#[cfg(feature = "std")]
pub mod doorbell;
mod errno;
pub mod kfd;
pub mod latency;
#[cfg(feature = "std")]
pub mod mapping;
#[cfg(feature = "std")]
pub mod monitor;
pub mod path;
#[cfg(feature = "std")]
mod platform;
#[cfg(any(feature = "rt", all(test, target_arch = "x86_64", target_os = "linux")))]
pub mod rt;
#[cfg(feature = "std")]
pub mod storage;
pub mod sysfs;

pub use device_node::{KFD_DEVICE, open_device};
#[cfg(feature = "std")]
pub use mapping::LinuxMapping;
#[cfg(feature = "std")]
pub use monitor::{EventMonitor, MonitorError};
#[cfg(feature = "std")]
pub use platform::LinuxPlatform;
#[cfg(feature = "std")]
pub use storage::{BoxedMemory, boxed_driver, boxed_kfd, boxed_tables};
pub use sysfs::{KFD_TOPOLOGY_ROOT, SysfsTree};
