//! The macros that turn one description of the header into Rust items *and* the
//! machine-readable tables of [`super::layout`], so the two cannot drift apart.
//!
//! - [`uapi_structs!`] — every struct of `kfd_ioctl.h` plus [`super::LAYOUTS`];
//! - [`uapi_consts!`] — `#define` constants plus a [`super::Constant`] table;
//! - [`uapi_enums!`] — C enums (a type alias plus one constant per enumerator) plus tables;
//! - [`uapi_ioctls!`] — the request codes plus [`super::IOCTLS`] and each argument struct's
//!   [`super::IoctlArg`].

/// Defines `#[repr(C)]` structs and the `LAYOUTS` table describing them.
///
/// Field forms (every field ends with a comma):
/// - `pub name: Type,` — an ordinary member;
/// - `pub name: union Storage(RawTy) { member: Type, ... },` — a C anonymous union. `Storage`
///   becomes a struct holding `RawTy` (same size and alignment as the C union, proved at compile
///   time) with one getter per member and `From<MemberType>`; the layout table lists the *C
///   members* (all at the union's offset), not `name`;
/// - `pub name: struct Nested { pub field: Type, ... },` — a member whose type is an anonymous C
///   struct; `Nested` is defined from the listed fields and the layout table lists `name` and
///   `name.field` paths.
macro_rules! uapi_structs {
    ($(
        $(#[$meta:meta])*
        pub struct $name:ident { $($body:tt)* }
    )*) => {
        $( uapi_struct!(@munch [$(#[$meta])*] $name [] [] [] $($body)*); )*

        /// Layout of every struct of `kfd_ioctl.h`, in header order, computed by the compiler
        /// from the Rust definitions (`size_of`, `align_of`, `offset_of!`).
        ///
        /// Members of anonymous unions are listed under their C names, all at the union's offset;
        /// members of an anonymous struct appear as `outer.inner` paths. `cargo xtask uapi-check`
        /// compares this table with what the C compiler computes for the header.
        pub const LAYOUTS: &[$crate::uapi::layout::StructLayout] = &[
            $( $crate::uapi::layout::StructLayout {
                name: stringify!($name),
                size: ::core::mem::size_of::<$name>(),
                align: ::core::mem::align_of::<$name>(),
                fields: uapi_rows!(@munch $name [] $($body)*),
            }, )*
        ];
    };
}

/// Defines one struct (tt-muncher over the field list; see [`uapi_structs!`]).
macro_rules! uapi_struct {
    // An anonymous union member.
    (@munch [$($attrs:tt)*] $name:ident [$($fields:tt)*] [$($io:tt)*] [$($items:tt)*]
        $(#[$fm:meta])* pub $f:ident : union $u:ident ( $store:ty ) {
            $( $(#[$mm:meta])* $m:ident : $mt:ty ),* $(,)?
        }, $($rest:tt)*
    ) => {
        uapi_struct!(@munch [$($attrs)*] $name
            [$($fields)* $(#[$fm])* pub $f: $u,]
            [$($io)* $f: $u,]
            [$($items)* uapi_union! { $name $u ($store) { $( $(#[$mm])* $m: $mt, )* } }]
            $($rest)*);
    };
    // A member of anonymous struct type.
    (@munch [$($attrs:tt)*] $name:ident [$($fields:tt)*] [$($io:tt)*] [$($items:tt)*]
        $(#[$fm:meta])* pub $f:ident : struct $n:ident { $($nbody:tt)* }, $($rest:tt)*
    ) => {
        uapi_struct!(@munch [$($attrs)*] $name
            [$($fields)* $(#[$fm])* pub $f: $n,]
            [$($io)* $f: $n,]
            [$($items)* uapi_struct!(@munch [
                #[doc = concat!(
                    "Type of [`", stringify!($name), "::", stringify!($f),
                    "`]: an anonymous struct in C (the name is Rust-only)."
                )]
            ] $n [] [] [] $($nbody)*);]
            $($rest)*);
    };
    // An ordinary member.
    (@munch [$($attrs:tt)*] $name:ident [$($fields:tt)*] [$($io:tt)*] [$($items:tt)*]
        $(#[$fm:meta])* pub $f:ident : $t:ty, $($rest:tt)*
    ) => {
        uapi_struct!(@munch [$($attrs)*] $name
            [$($fields)* $(#[$fm])* pub $f: $t,]
            [$($io)* $f: $t,]
            [$($items)*]
            $($rest)*);
    };
    // All members consumed: emit the struct, its byte image and the collected helper items.
    (@munch [$($attrs:tt)*] $name:ident [$($fields:tt)*] [$($f:ident : $t:ty,)*]
        [$($items:tt)*]
    ) => {
        $($attrs)*
        #[repr(C)]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        pub struct $name { $($fields)* }

        impl $crate::uapi::bytes::UapiType for $name {
            const SIZE: usize = ::core::mem::size_of::<Self>();

            fn read_from(bytes: &[u8]) -> Self {
                Self {
                    $( $f: <$t as $crate::uapi::bytes::UapiType>::read_from(
                        $crate::uapi::bytes::tail(bytes, ::core::mem::offset_of!(Self, $f)),
                    ), )*
                }
            }

            fn write_to(&self, out: &mut [u8]) {
                $crate::uapi::bytes::zero_prefix(out, Self::SIZE);
                $( <$t as $crate::uapi::bytes::UapiType>::write_to(
                    &self.$f,
                    $crate::uapi::bytes::tail_mut(out, ::core::mem::offset_of!(Self, $f)),
                ); )*
            }
        }

        $($items)*
    };
}

/// Builds the `&[FieldLayout]` of one struct (tt-muncher mirroring [`uapi_struct!`]).
macro_rules! uapi_rows {
    (@munch $name:ident [$($rows:tt)*]
        $(#[$fm:meta])* pub $f:ident : union $u:ident ( $store:ty ) {
            $( $(#[$mm:meta])* $m:ident : $mt:ty ),* $(,)?
        }, $($rest:tt)*
    ) => {
        uapi_rows!(@munch $name [$($rows)* $(
            $crate::uapi::layout::FieldLayout {
                name: $crate::uapi::layout::c_name(stringify!($m)),
                offset: ::core::mem::offset_of!($name, $f),
                size: ::core::mem::size_of::<$mt>(),
                align: ::core::mem::align_of::<$mt>(),
                rust_type: stringify!($mt),
            },
        )*] $($rest)*)
    };
    (@munch $name:ident [$($rows:tt)*]
        $(#[$fm:meta])* pub $f:ident : struct $n:ident {
            $( $(#[$nm:meta])* pub $nf:ident : $nt:ty ),* $(,)?
        }, $($rest:tt)*
    ) => {
        uapi_rows!(@munch $name [$($rows)*
            $crate::uapi::layout::FieldLayout {
                name: $crate::uapi::layout::c_name(stringify!($f)),
                offset: ::core::mem::offset_of!($name, $f),
                size: ::core::mem::size_of::<$n>(),
                align: ::core::mem::align_of::<$n>(),
                rust_type: stringify!($n),
            },
            $( $crate::uapi::layout::FieldLayout {
                name: concat!(stringify!($f), ".", stringify!($nf)),
                offset: ::core::mem::offset_of!($name, $f.$nf),
                size: ::core::mem::size_of::<$nt>(),
                align: ::core::mem::align_of::<$nt>(),
                rust_type: stringify!($nt),
            }, )*
        ] $($rest)*)
    };
    (@munch $name:ident [$($rows:tt)*]
        $(#[$fm:meta])* pub $f:ident : $t:ty, $($rest:tt)*
    ) => {
        uapi_rows!(@munch $name [$($rows)*
            $crate::uapi::layout::FieldLayout {
                name: $crate::uapi::layout::c_name(stringify!($f)),
                offset: ::core::mem::offset_of!($name, $f),
                size: ::core::mem::size_of::<$t>(),
                align: ::core::mem::align_of::<$t>(),
                rust_type: stringify!($t),
            },
        ] $($rest)*)
    };
    (@munch $name:ident [$($rows:tt)*]) => {
        &[$($rows)*]
    };
}

/// Defines the storage type of one anonymous C union (see [`uapi_structs!`]).
macro_rules! uapi_union {
    ($parent:ident $u:ident ($store:ty) { $( $(#[$mm:meta])* $m:ident : $mt:ty, )* }) => {
        #[doc = concat!(
            "The anonymous union inside [`", stringify!($parent), "`] (the name is Rust-only)."
        )]
        ///
        /// `core` forbids `unsafe`, and reading a Rust `union` needs it, so the union is raw
        /// storage with the size and alignment of the C union (checked at compile time). Read a
        /// member with the getter of the same name (a byte copy of the union's leading bytes);
        /// build the union from a member with `From`/`into()` — the bytes the member does not
        /// cover are zero.
        #[repr(C)]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        pub struct $u {
            raw: $store,
        }

        const _: () = {
            let mut size = 0;
            let mut align = 1;
            $(
                if ::core::mem::size_of::<$mt>() > size {
                    size = ::core::mem::size_of::<$mt>();
                }
                if ::core::mem::align_of::<$mt>() > align {
                    align = ::core::mem::align_of::<$mt>();
                }
            )*
            assert!(::core::mem::size_of::<$u>() == size.next_multiple_of(align));
            assert!(::core::mem::align_of::<$u>() == align);
        };

        impl $u {
            $(
                $(#[$mm])*
                ///
                /// Reads this member: a byte copy of the union's leading bytes.
                #[must_use]
                pub fn $m(&self) -> $mt {
                    let mut bytes = [0u8; ::core::mem::size_of::<$u>()];
                    $crate::uapi::bytes::UapiType::write_to(&self.raw, &mut bytes);
                    <$mt as $crate::uapi::bytes::UapiType>::read_from(&bytes)
                }
            )*
        }

        $(
            impl From<$mt> for $u {
                fn from(member: $mt) -> Self {
                    let mut bytes = [0u8; ::core::mem::size_of::<$u>()];
                    $crate::uapi::bytes::UapiType::write_to(&member, &mut bytes);
                    Self { raw: <$store as $crate::uapi::bytes::UapiType>::read_from(&bytes) }
                }
            }
        )*

        impl $crate::uapi::bytes::UapiType for $u {
            const SIZE: usize = ::core::mem::size_of::<Self>();

            fn read_from(bytes: &[u8]) -> Self {
                Self { raw: <$store as $crate::uapi::bytes::UapiType>::read_from(bytes) }
            }

            fn write_to(&self, out: &mut [u8]) {
                $crate::uapi::bytes::UapiType::write_to(&self.raw, out);
            }
        }
    };
}

/// Defines integer constants and a `&[Constant]` table listing them.
///
/// `table NAME;` comes first and names the table.
macro_rules! uapi_consts {
    (
        table $table:ident;
        $(
            $(#[$m:meta])*
            pub const $name:ident : $t:ty = $v:expr;
        )*
    ) => {
        $( $(#[$m])* pub const $name: $t = $v; )*

        pub(crate) const $table: &[$crate::uapi::layout::Constant] = &[
            $( $crate::uapi::layout::Constant {
                name: stringify!($name),
                value: $name as i128,
                bits: <$t>::BITS,
                signed: <$t>::MIN != 0,
            }, )*
        ];
    };
}

/// Defines C enums — a type alias named like the enum plus one constant per enumerator — and
/// two tables: the enumerators as `&[Constant]` and the enums as `&[EnumInfo]`.
macro_rules! uapi_enums {
    (
        tables $consts:ident, $enums:ident;
        $(
            $(#[$em:meta])*
            pub enum $ename:ident : $et:ty {
                $( $(#[$m:meta])* $name:ident = $v:expr, )*
            }
        )*
    ) => {
        $(
            $(#[$em])*
            pub type $ename = $et;
            $( $(#[$m])* pub const $name: $ename = $v; )*
        )*

        pub(crate) const $consts: &[$crate::uapi::layout::Constant] = &[
            $( $( $crate::uapi::layout::Constant {
                name: stringify!($name),
                value: $name as i128,
                bits: <$et>::BITS,
                signed: <$et>::MIN != 0,
            }, )* )*
        ];

        pub(crate) const $enums: &[$crate::uapi::layout::EnumInfo] = &[
            $( $crate::uapi::layout::EnumInfo {
                name: stringify!($ename),
                members: &[$( stringify!($name) ),*],
            }, )*
        ];
    };
}

/// Defines the `AMDKFD_IOC_*` request codes, the `IOCTLS` table and, for each argument struct,
/// its [`IoctlArg`](super::IoctlArg) impl (checked at compile time).
///
/// Entry form: `NAME = DIR(nr, ArgStruct), since = MINOR;` with `DIR` one of `IO` (no argument
/// struct), `IOR`, `IOW`, `IOWR`; append `, deprecated` for ioctls the kernel only rejects.
macro_rules! uapi_ioctls {
    ($(
        $(#[$m:meta])*
        $name:ident = $dir:ident ( $nr:literal $(, $arg:ident)? ), since = $since:expr
            $(, $dep:ident)?;
    )*) => {
        $(
            $(#[$m])*
            pub const $name: u32 = uapi_ioctls!(@code $dir $nr $($arg)?);
            uapi_ioctls!(@arg $name $($arg)?);
        )*

        /// Every amdkfd ioctl, ordered by number (dense from [`AMDKFD_COMMAND_START`] to
        /// [`AMDKFD_COMMAND_END`]` - 1`), with direction, argument size and the KFD minor version
        /// that introduced it.
        pub const IOCTLS: [IoctlInfo; (AMDKFD_COMMAND_END - AMDKFD_COMMAND_START) as usize] = [
            $( IoctlInfo {
                name: stringify!($name),
                nr: $nr,
                request: $name,
                dir: uapi_ioctls!(@dir $dir),
                arg_type: uapi_ioctls!(@argname $($arg)?),
                arg_size: uapi_ioctls!(@argsize $($arg)?),
                since_minor: $since,
                deprecated: uapi_ioctls!(@deprecated $($dep)?),
            }, )*
        ];

        pub(crate) const IOCTL_H_REQUEST_CODES: &[$crate::uapi::layout::Constant] = &[
            $( $crate::uapi::layout::Constant {
                name: stringify!($name),
                value: $name as i128,
                bits: u32::BITS,
                signed: false,
            }, )*
        ];
    };
    (@arg $name:ident) => {};
    (@arg $name:ident $arg:ident) => {
        impl IoctlArg for $arg {
            const REQUEST: u32 = $name;
        }
        // Evaluated here, so a code that does not fit its argument fails to build the crate.
        const _: u32 = <$arg as IoctlArg>::CHECKED_REQUEST;
    };
    (@code IO $nr:literal) => { AMDKFD_IO($nr) };
    (@code IOR $nr:literal $arg:ident) => { AMDKFD_IOR::<$arg>($nr) };
    (@code IOW $nr:literal $arg:ident) => { AMDKFD_IOW::<$arg>($nr) };
    (@code IOWR $nr:literal $arg:ident) => { AMDKFD_IOWR::<$arg>($nr) };
    (@dir IO) => { IoctlDir::None };
    (@dir IOR) => { IoctlDir::Read };
    (@dir IOW) => { IoctlDir::Write };
    (@dir IOWR) => { IoctlDir::ReadWrite };
    (@argname) => { None };
    (@argname $arg:ident) => { Some(stringify!($arg)) };
    (@argsize) => { 0 };
    (@argsize $arg:ident) => { ::core::mem::size_of::<$arg>() };
    (@deprecated) => { false };
    (@deprecated deprecated) => { true };
}
