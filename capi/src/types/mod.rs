//! Every type, enum, constant and macro of `hsakmttypes.h` (pinned copy in
//! `capi/include/hsakmt/`), byte for byte.
//!
//! - The whole header is under `#pragma pack(push, 4)`: structs and unions are
//!   `#[repr(C, packed(4))]`, so 64-bit members may sit at 4-byte offsets.
//! - A bitfield aggregate (`HSA_CAPABILITY`, `HsaMemFlags`, …) is one integer with a [`Bits`]
//!   constant per C bitfield (GCC allocates bitfields from the least significant bit of one
//!   `unsigned int`, or `HSAuint64`, unit); read and write them with `get` / `set` / `with`.
//! - A C enum is an integer type alias of the size and signedness the C compiler gives it, plus
//!   one constant per enumerator.
//! - Names are the C names, so code reads like the header.
//!
//! `cargo xtask capi-check` proves all of it against the C compiler (see [`crate::layout`]).

mod debug;
mod event;
mod memory;
mod profile;
mod queue;
mod topology;

pub use debug::*;
pub use event::*;
pub use memory::*;
pub use profile::*;
pub use queue::*;
pub use topology::*;

use crate::layout::{Description, constants, layout, scalars};

/// `HSAuint8`
pub type HSAuint8 = u8;
/// `HSAint8`
pub type HSAint8 = i8;
/// `HSAuint16`
pub type HSAuint16 = u16;
/// `HSAint16`
pub type HSAint16 = i16;
/// `HSAuint32`
pub type HSAuint32 = u32;
/// `HSAint32`
pub type HSAint32 = i32;
/// `HSAint64`
pub type HSAint64 = i64;
/// `HSAuint64`
pub type HSAuint64 = u64;
/// `HSA_HANDLE`: an opaque pointer.
pub type HSA_HANDLE = *mut core::ffi::c_void;
/// `HSA_QUEUEID`: names a queue (in this library a generation-checked handle, never a pointer).
pub type HSA_QUEUEID = HSAuint64;

/// `HSAKMT_VERSION_MAJOR`
pub const HSAKMT_VERSION_MAJOR: u32 = 0;
/// `HSAKMT_VERSION_MINOR`
pub const HSAKMT_VERSION_MINOR: u32 = 99;
/// `INVALID_QUEUEID`: never a valid queue id.
pub const INVALID_QUEUEID: u64 = 0xFFFF_FFFF_FFFF_FFFF;
/// `INVALID_PID`: never a valid process id.
pub const INVALID_PID: u32 = 0xFFFF_FFFF;
/// `INVALID_NODEID`: never a valid node id.
pub const INVALID_NODEID: u32 = 0xFFFF_FFFF;

/// A bitfield of a C bitfield aggregate: `width` bits from bit `shift` of its integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bits {
    /// Lowest bit.
    pub shift: u32,
    /// Width in bits (1..=64).
    pub width: u32,
}

impl Bits {
    /// The mask of the field's bits, in place.
    #[must_use]
    pub const fn mask(self) -> u64 {
        let ones = if self.width >= 64 { u64::MAX } else { (1u64 << self.width) - 1 };
        ones << self.shift
    }
}

/// Defines a bitfield aggregate as one integer: `pub struct T { pub Value: u32 } "ui32." { A: 1,
/// B: 4, }` — the storage member (named like the C union's integer member when there is one;
/// a private `bits` when C has none), the C path prefix of the bitfields (`"ui32."` when they sit
/// in a named struct, `""` in an anonymous one), then the bitfields in declaration order.
macro_rules! bitfield {
    (
        $(#[$meta:meta])*
        pub struct $name:ident { $vis:vis $store:ident : $int:ty } $prefix:literal {
            $( $(#[$fm:meta])* $field:ident : $width:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[repr(C, packed(4))]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $name {
            #[doc = concat!("The whole `", stringify!($int), "`.")]
            $vis $store: $int,
        }

        impl $name {
            bitfield!(@consts $int; 0; $( $(#[$fm])* $field : $width, )*);

            /// Every bitfield with its C member designator, in declaration order.
            pub const FIELDS: &'static [(&'static str, $crate::types::Bits)] = &[
                $( (concat!($prefix, stringify!($field)), Self::$field), )*
            ];

            /// The value of bitfield `b`.
            #[must_use]
            pub const fn get(self, b: $crate::types::Bits) -> $int {
                ((self.$store as u64 & b.mask()) >> b.shift) as $int
            }

            /// Sets bitfield `b` to `v` (truncated to its width).
            pub const fn set(&mut self, b: $crate::types::Bits, v: $int) {
                let keep = self.$store as u64 & !b.mask();
                self.$store = (keep | ((v as u64) << b.shift & b.mask())) as $int;
            }

            /// The same with bitfield `b` set to `v`.
            #[must_use]
            pub const fn with(mut self, b: $crate::types::Bits, v: $int) -> Self {
                self.set(b, v);
                self
            }

            /// Its rows for [`crate::layout`].
            fn describe(d: &mut $crate::layout::Description) {
                let mut fields = Vec::new();
                if !$prefix.is_empty() {
                    fields.push($crate::layout::FieldRow {
                        path: $prefix.trim_end_matches('.'),
                        offset: 0,
                        size: ::core::mem::size_of::<$int>(),
                        align: ::core::mem::align_of::<$int>(),
                        rust_type: stringify!($name),
                    });
                }
                // A private storage member has no C counterpart.
                if !stringify!($vis).is_empty() {
                    fields.push($crate::layout::FieldRow {
                        path: stringify!($store),
                        offset: ::core::mem::offset_of!(Self, $store),
                        size: ::core::mem::size_of::<$int>(),
                        align: ::core::mem::align_of::<$int>(),
                        rust_type: ::core::any::type_name::<$int>(),
                    });
                }
                d.types.push($crate::layout::TypeLayout {
                    name: stringify!($name),
                    size: ::core::mem::size_of::<Self>(),
                    align: ::core::mem::align_of::<Self>(),
                    fields,
                    bits: Self::FIELDS
                        .iter()
                        .map(|(path, b)| $crate::layout::BitRow {
                            path,
                            shift: b.shift,
                            width: b.width,
                        })
                        .collect(),
                });
            }
        }
    };
    (@consts $int:ty; $shift:expr; ) => {};
    (@consts $int:ty; $shift:expr; $(#[$fm:meta])* $field:ident : $width:literal, $($rest:tt)*) => {
        $(#[$fm])*
        #[doc = concat!("Bitfield `", stringify!($field), "` (", stringify!($width), " bits).")]
        pub const $field: $crate::types::Bits =
            $crate::types::Bits { shift: $shift, width: $width };
        bitfield!(@consts $int; $shift + $width; $($rest)*);
    };
}

/// Defines C enums: each `pub enum NAME: u32 { A = 0, B = 1, }` becomes `pub type NAME = u32`
/// and one constant per enumerator; `fn $describe` adds their rows to a [`Description`].
macro_rules! c_enums {
    (
        fn $describe:ident;
        $(
            $(#[$meta:meta])*
            pub enum $name:ident : $int:ty { $( $(#[$m:meta])* $member:ident = $value:expr, )* }
        )*
    ) => {
        $(
            $(#[$meta])*
            pub type $name = $int;
            $(
                $(#[$m])*
                #[doc = concat!("`", stringify!($member), "`")]
                pub const $member: $name = $value;
            )*
        )*

        /// Adds the rows of this module's enums.
        fn $describe(d: &mut $crate::layout::Description) {
            $( d.enums.push($crate::layout::EnumLayout {
                name: stringify!($name),
                size: ::core::mem::size_of::<$name>(),
                signed: <$name>::MIN != 0,
                members: vec![$( (stringify!($member), $member as i128) ),*],
            }); )*
        }
    };
}

pub(crate) use {bitfield, c_enums};

c_enums! {
    fn describe_enums;

    /// `HSAKMT_STATUS`: what every function returns.
    pub enum HSAKMT_STATUS: u32 {
        HSAKMT_STATUS_SUCCESS = 0,
        HSAKMT_STATUS_ERROR = 1,
        HSAKMT_STATUS_DRIVER_MISMATCH = 2,
        HSAKMT_STATUS_INVALID_PARAMETER = 3,
        HSAKMT_STATUS_INVALID_HANDLE = 4,
        HSAKMT_STATUS_INVALID_NODE_UNIT = 5,
        HSAKMT_STATUS_NO_MEMORY = 6,
        HSAKMT_STATUS_BUFFER_TOO_SMALL = 7,
        HSAKMT_STATUS_NOT_IMPLEMENTED = 10,
        HSAKMT_STATUS_NOT_SUPPORTED = 11,
        HSAKMT_STATUS_UNAVAILABLE = 12,
        HSAKMT_STATUS_OUT_OF_RESOURCES = 13,
        HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED = 20,
        HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR = 21,
        HSAKMT_STATUS_KERNEL_ALREADY_OPENED = 22,
        HSAKMT_STATUS_HSAMMU_UNAVAILABLE = 23,
        HSAKMT_STATUS_WAIT_FAILURE = 30,
        HSAKMT_STATUS_WAIT_TIMEOUT = 31,
        HSAKMT_STATUS_MEMORY_ALREADY_REGISTERED = 35,
        HSAKMT_STATUS_MEMORY_NOT_REGISTERED = 36,
        HSAKMT_STATUS_MEMORY_ALIGNMENT = 37,
    }
}

/// `HsaVersionInfo`: the kernel's KFD interface version.
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy, Default)]
pub struct HsaVersionInfo {
    /// Major version (1).
    pub KernelInterfaceMajorVersion: HSAuint32,
    /// Minor version.
    pub KernelInterfaceMinorVersion: HSAuint32,
}

/// Adds the rows of every type of this module to `d`.
pub(crate) fn describe(d: &mut Description) {
    scalars!(
        d,
        HSAuint8,
        HSAint8,
        HSAuint16,
        HSAint16,
        HSAuint32,
        HSAint32,
        HSAint64,
        HSAuint64,
        HSA_HANDLE,
        HSA_QUEUEID,
    );
    constants!(d, HSAKMT_VERSION_MAJOR, HSAKMT_VERSION_MINOR, INVALID_QUEUEID, INVALID_PID);
    constants!(d, INVALID_NODEID);
    describe_enums(d);
    layout!(d, HsaVersionInfo { KernelInterfaceMajorVersion, KernelInterfaceMinorVersion });
    topology::describe(d);
    memory::describe(d);
    queue::describe(d);
    debug::describe(d);
    event::describe(d);
    profile::describe(d);
}
