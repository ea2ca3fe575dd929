//! The amdkfd user-space ABI: `kfd_ioctl.h` and `kfd_sysfs.h` of KFD interface 1.23
//! (Linux 7.3-rc7), byte for byte.
//!
//! Every item keeps its C name, so C sources, kernel code and this crate grep alike, and
//! everything is re-exported here, flat like the C namespace:
//! - [`ioctl`]: the `#[repr(C)]` argument structs, the `_IOC` request-code encoding, the 40
//!   `AMDKFD_IOC_*` request codes and the [`IOCTLS`] table (direction, size, introducing
//!   version; [`ioctl_by_nr`]);
//! - [`consts`]: the `#define`s and enums of `kfd_ioctl.h` (enum tags are type aliases), its
//!   function-like macros as `const fn`s and its `KFD_EVENT_FMT_*` formats as `&str`;
//! - [`sysfs`]: the `HSA_*` bits and codes of `kfd_sysfs.h`;
//! - [`version`]: [`KfdVersion`] and the minor version that introduced each later addition
//!   ([`since`]);
//! - [`bytes`]: [`UapiType`], the byte image of every struct (what the kernel copies), built
//!   without `unsafe`;
//! - [`layout`]: machine-readable tables of all of the above ([`LAYOUTS`], [`CONSTANTS`],
//!   [`ENUMS`], [`FUNCTION_MACROS`]).
//!
//! # C unions
//!
//! `core` forbids `unsafe`, and reading a Rust `union` needs it. Each anonymous C union is
//! therefore a struct of raw storage with the union's size and alignment, named
//! `<parent>_union` (a Rust-only name), with one getter per C member and `From<Member>`:
//!
//! ```
//! use hsakmt_core::uapi::{kfd_event_data, kfd_hsa_signal_event_data};
//!
//! let mut event = kfd_event_data { event_id: 7, ..Default::default() };
//! event.data = kfd_hsa_signal_event_data { last_event_age: 42 }.into();
//! assert_eq!(event.data.signal_event_data().last_event_age, 42);
//! ```
//!
//! The anonymous struct type of `kfd_context_save_area_header::wave_state` is likewise named
//! `kfd_context_save_area_header_wave_state`.
//!
//! # Proof against the C header
//!
//! `cargo xtask uapi-check` parses both headers, compiles a C program that prints `sizeof`,
//! `_Alignof` and `offsetof` of every struct and member, and the value of every constant,
//! enumerator, request code and function-like macro, and compares the output with the tables
//! of [`layout`]. Any difference, and any C item without a Rust counterpart (or vice versa),
//! fails the check.
//!
//! The request codes use the generic Linux `_IOC` encoding (x86-64, arm64, riscv64,
//! loongarch64); powerpc, mips and sparc use their own field widths and direction values,
//! selected by `target_arch`.

#[macro_use]
mod macros;

pub mod bytes;
pub mod consts;
pub mod ioctl;
pub mod layout;
pub mod sysfs;
pub mod version;

#[cfg(test)]
mod tests;

pub use bytes::UapiType;
pub use consts::*;
pub use ioctl::*;
pub use layout::{Constant, EnumInfo, FieldLayout, FunctionMacro, MacroKind, StructLayout};
pub use sysfs::*;
pub use version::{KfdVersion, since};

/// The parts of [`CONSTANTS`], in order.
const CONSTANT_PARTS: &[&[Constant]] = &[
    consts::IOCTL_H_DEFINES,
    consts::IOCTL_H_ENUM_CONSTANTS,
    ioctl::IOCTL_H_REQUEST_CODES,
    sysfs::SYSFS_H_DEFINES,
];

/// Every integer constant of both headers with its value: the object-like `#define`s and the
/// enumerators of `kfd_ioctl.h`, its 40 `AMDKFD_IOC_*` request codes, and the `#define`s of
/// `kfd_sysfs.h`.
pub const CONSTANTS: &[Constant] = &layout::concat::<Constant, CONSTANT_COUNT>(
    CONSTANT_PARTS,
    Constant { name: "", value: 0, bits: 0, signed: false },
);

/// Length of [`CONSTANTS`].
const CONSTANT_COUNT: usize = layout::total_len(CONSTANT_PARTS);

/// Every enum of `kfd_ioctl.h` (`kfd_sysfs.h` has none) with its enumerators.
pub const ENUMS: &[EnumInfo] = consts::IOCTL_H_ENUMS;

/// The parts of [`FUNCTION_MACROS`], in order.
const FUNCTION_MACRO_PARTS: &[&[FunctionMacro]] =
    &[ioctl::IOCTL_H_REQUEST_MACROS, consts::IOCTL_H_FUNCTION_MACROS];

/// Every function-like macro of `kfd_ioctl.h` with a way to evaluate its Rust counterpart.
pub const FUNCTION_MACROS: &[FunctionMacro] = &layout::concat::<FunctionMacro, MACRO_COUNT>(
    FUNCTION_MACRO_PARTS,
    FunctionMacro { name: "", kind: MacroKind::Format("") },
);

/// Length of [`FUNCTION_MACROS`].
const MACRO_COUNT: usize = layout::total_len(FUNCTION_MACRO_PARTS);
