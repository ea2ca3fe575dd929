//! # hsakmt-linux
//!
//! The hsakmt-rs platform over real Linux system calls, made with `rustix` (no libc needed):
//! the KFD sysfs topology tree and `/dev/kfd`. All of the workspace's `unsafe` for talking to the
//! kernel lives in this crate, each block with a `// SAFETY:` comment naming its guarantee.
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]

pub mod device_node;
#[cfg(feature = "std")]
pub mod fork;
pub mod kfd;
#[cfg(feature = "std")]
pub mod mapping;
#[cfg(feature = "std")]
pub mod monitor;
pub mod path;
#[cfg(feature = "std")]
mod platform;
pub mod sysfs;

pub use device_node::{KFD_DEVICE, open_device};
#[cfg(feature = "std")]
pub use mapping::LinuxMapping;
#[cfg(feature = "std")]
pub use monitor::{EventMonitor, MonitorError};
#[cfg(feature = "std")]
pub use platform::LinuxPlatform;
pub use sysfs::{KFD_TOPOLOGY_ROOT, SysfsTree};
