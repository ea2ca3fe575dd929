//! A machine-readable description of the C types ([`crate::types`]) and the exported functions
//! ([`crate::abi`]), made from the Rust definitions themselves: sizes, alignments and offsets
//! come from the compiler (`size_of`, `align_of`, `offset_of!`), bit positions from the same
//! constants the accessors use, type names from `type_name`.
//!
//! `cargo xtask capi-check` compiles the vendored `hsakmt.h` / `hsakmttypes.h` with the system C
//! compiler and compares every struct, union, field, bitfield, enum, typedef, constant, macro
//! and function prototype with [`describe`], both ways.

/// One member of a struct or union, as C names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRow {
    /// C member designator relative to the type: `NumNodes`, `ui32.uCode` (a member of a named
    /// in-place aggregate), `SizeInBytes` (a member of an anonymous union).
    pub path: &'static str,
    /// `offsetof` in bytes.
    pub offset: usize,
    /// `sizeof` in bytes.
    pub size: usize,
    /// Alignment of the member's type.
    pub align: usize,
    /// The Rust type, as `core::any::type_name` spells it.
    pub rust_type: &'static str,
}

/// One bitfield: where [`crate::types::Bits`] puts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BitRow {
    /// C member designator (`ui32.HotPluggable`).
    pub path: &'static str,
    /// Position of the lowest bit, counted from bit 0 of the type's first byte.
    pub shift: u32,
    /// Width in bits.
    pub width: u32,
}

/// A struct or union (or a bitfield type, which Rust represents as one integer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeLayout {
    /// The C typedef name (also the Rust type name).
    pub name: &'static str,
    /// `sizeof`.
    pub size: usize,
    /// `_Alignof`.
    pub align: usize,
    /// Members with a byte offset.
    pub fields: Vec<FieldRow>,
    /// Bitfield members.
    pub bits: Vec<BitRow>,
}

/// A C enum: a Rust integer type alias plus one constant per enumerator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumLayout {
    /// The typedef name.
    pub name: &'static str,
    /// Size of the alias's integer type.
    pub size: usize,
    /// Whether the alias's integer type is signed.
    pub signed: bool,
    /// Enumerators in declaration order, with their values.
    pub members: Vec<(&'static str, i128)>,
}

/// A typedef of a scalar, pointer or array type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalarLayout {
    /// The typedef name.
    pub name: &'static str,
    /// `sizeof`.
    pub size: usize,
    /// `_Alignof`.
    pub align: usize,
    /// The Rust type the alias stands for.
    pub rust_type: &'static str,
}

/// An object-like `#define` with an integer value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstRow {
    /// The macro name (the Rust constant's name).
    pub name: &'static str,
    /// Its value.
    pub value: i128,
}

/// A constant object the header defines (the `HSA_DEFINE_UUID` block ids), by its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRow {
    /// The object's name.
    pub name: &'static str,
    /// Its bytes in memory.
    pub bytes: Vec<u8>,
}

/// A function-like macro of one integer argument and its Rust `const fn`.
#[derive(Debug, Clone, Copy)]
pub struct MacroRow {
    /// The macro name.
    pub name: &'static str,
    /// Evaluates the Rust counterpart.
    pub eval: fn(u64) -> u64,
    /// Smallest argument the macro is defined for.
    pub first: u64,
    /// Largest argument the macro is defined for.
    pub last: u64,
}

/// An exported function: its symbol and parameter types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionRow {
    /// The symbol.
    pub name: &'static str,
    /// The Rust parameter types (`type_name`), in order.
    pub params: Vec<&'static str>,
    /// The Rust return type (`type_name`).
    pub ret: &'static str,
}

/// Everything [`describe`] reports.
#[derive(Debug, Clone, Default)]
pub struct Description {
    /// Structs, unions and bitfield types.
    pub types: Vec<TypeLayout>,
    /// Enums.
    pub enums: Vec<EnumLayout>,
    /// Scalar, pointer and array typedefs.
    pub scalars: Vec<ScalarLayout>,
    /// Object-like macros.
    pub constants: Vec<ConstRow>,
    /// Constant objects.
    pub objects: Vec<ObjectRow>,
    /// Function-like macros.
    pub macros: Vec<MacroRow>,
    /// The functions of `hsakmt.h` this library exports.
    pub functions: Vec<FunctionRow>,
}

/// The description of every C type, constant and exported function of this crate.
#[must_use]
pub fn describe() -> Description {
    let mut d = Description::default();
    crate::types::describe(&mut d);
    crate::abi::describe(&mut d);
    d
}

/// `(size, align, type_name)` of the type a place expression has; the closure is never called.
pub(crate) fn field_type<S, F>(_place: fn(&S) -> *const F) -> (usize, usize, &'static str) {
    (core::mem::size_of::<F>(), core::mem::align_of::<F>(), core::any::type_name::<F>())
}

/// Rows of one struct or union: `layout!(d, Type { Field, "c.path" => rust.path, ... })`. A bare
/// field name is both the C designator and the Rust path.
macro_rules! layout {
    ($d:ident, $ty:ident { $($row:tt)* }) => {{
        let mut fields = Vec::new();
        layout!(@rows $ty fields $($row)*);
        $d.types.push($crate::layout::TypeLayout {
            name: stringify!($ty),
            size: ::core::mem::size_of::<$ty>(),
            align: ::core::mem::align_of::<$ty>(),
            fields,
            bits: Vec::new(),
        });
    }};
    (@rows $ty:ident $fields:ident) => {};
    (@rows $ty:ident $fields:ident $c:literal => $($f:ident).+) => {
        layout!(@row $ty $fields $c, $($f).+);
    };
    (@rows $ty:ident $fields:ident $f:ident) => {
        layout!(@row $ty $fields stringify!($f), $f);
    };
    (@rows $ty:ident $fields:ident $c:literal => $($f:ident).+ , $($rest:tt)*) => {
        layout!(@row $ty $fields $c, $($f).+);
        layout!(@rows $ty $fields $($rest)*);
    };
    (@rows $ty:ident $fields:ident $f:ident , $($rest:tt)*) => {
        layout!(@row $ty $fields stringify!($f), $f);
        layout!(@rows $ty $fields $($rest)*);
    };
    (@row $ty:ident $fields:ident $c:expr, $($f:ident).+) => {{
        #[allow(unused_unsafe, reason = "only paths through a union need it")]
        // SAFETY: the closure only names the place (to learn its type) and is never called.
        let (size, align, rust_type) = $crate::layout::field_type(|s: &$ty| unsafe {
            &raw const s.$($f).+
        });
        $fields.push($crate::layout::FieldRow {
            path: $c,
            offset: ::core::mem::offset_of!($ty, $($f).+),
            size,
            align,
            rust_type,
        });
    }};
}

/// Rows of a scalar typedef: `scalars!(d, HSAuint32, HSA_QUEUEID, ...)`.
macro_rules! scalars {
    ($d:ident, $($ty:ident),* $(,)?) => {
        $( $d.scalars.push($crate::layout::ScalarLayout {
            name: stringify!($ty),
            size: ::core::mem::size_of::<$ty>(),
            align: ::core::mem::align_of::<$ty>(),
            rust_type: ::core::any::type_name::<$ty>(),
        }); )*
    };
}

/// Rows of object-like macros: `constants!(d, NAME, ...)`.
macro_rules! constants {
    ($d:ident, $($name:ident),* $(,)?) => {
        $( $d.constants.push($crate::layout::ConstRow {
            name: stringify!($name),
            value: $name as i128,
        }); )*
    };
}

pub(crate) use {constants, layout, scalars};
