//! # hsakmt-capi
//!
//! libhsakmt's C ABI (`hsakmt.h` of ROCm's rocm-systems at commit 1b1610fc, pinned in
//! `capi/include/hsakmt/`) over the hsakmt-rs device facade, so C programs written for
//! libhsakmt — ROCr, kfdtest, tools — run on hsakmt-rs unchanged.
//!
//! - [`types`]: every type of `hsakmttypes.h`, byte for byte.
//! - [`api`]: the 92 functions of `hsakmt.h` (plus `hsaKmtQueueRingDoorbell`), each mapped
//!   onto [`hsakmt_core::device::Kfd`].
//! - [`inproc`]: the exported functions called from Rust in-process (`hsakmt bench capi`).
//! - [`layout`] and [`abi`]: the machine-readable description `cargo xtask capi-check`
//!   compares with the C compiler's view of the headers.
//!
//! `cargo xtask capi` builds `libhsakmt.so.1`, `libhsakmt.a` and `libdtif.so` (with the `dtif`
//! feature: ROCr's DTIF hook) under `target/capi/`; `capi/README.md` says how to use them.
//!
//! This is one of the workspace's three places allowed `unsafe`: C hands over raw pointers.
//! Every block says why it is sound (`// SAFETY:`); pointers are checked for NULL where
//! upstream checks them, and library-owned objects (events, queues) are named by handles the
//! library validates, never trusted as pointers.
#![deny(missing_docs)]
#![expect(
    non_snake_case,
    non_camel_case_types,
    non_upper_case_globals,
    reason = "C names, so the code reads like hsakmt.h"
)]

pub mod abi;
pub mod api;
mod config;
mod device;
pub mod drm;
#[cfg(feature = "dtif")]
pub mod dtif;
pub mod inproc;
pub mod layout;
pub mod types;
