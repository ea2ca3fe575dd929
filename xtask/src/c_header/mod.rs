//! A small parser for the subset of C that the checked headers use (`uapi/kfd_ioctl.h`,
//! `uapi/kfd_sysfs.h`, `capi/include/hsakmt/hsakmttypes.h` and `hsakmt.h`):
//!
//! - directives: `#define` (object-like and function-like), `#if` / `#ifdef` / `#ifndef` /
//!   `#elif` / `#else` / `#endif` over `defined(...)`, `!`, `&&`, `||` (only `__linux__` and
//!   the header's own macros count as defined: the Linux view of the header), `#include` and
//!   `#pragma` (ignored: layouts are measured by the C compiler, not computed);
//! - top-level `struct` / `enum` definitions, `typedef`s of scalars, pointers, arrays, structs,
//!   unions and enums, function prototypes, and invocations of the header's own function-like
//!   macros as declarations (`HSA_DEFINE_UUID(name, ...);`);
//! - members of scalar, pointer, struct and array type (flexible arrays included), bitfields,
//!   anonymous unions and structs, and named members of in-place aggregate type.
//!
//! Anything else is an error: a header change the checker does not understand must be looked
//! at, not skipped.

mod directives;
mod parser;

use std::fmt;

/// A parsed header.
#[derive(Debug, Default)]
pub(crate) struct Header {
    /// File name, for messages and `#include`.
    pub(crate) file: String,
    /// Object-like and function-like `#define`s with a body, in order.
    pub(crate) defines: Vec<Define>,
    /// Struct and union definitions (tagged or typedef'd), in order.
    pub(crate) structs: Vec<CStruct>,
    /// Enum definitions (tagged or typedef'd), in order.
    pub(crate) enums: Vec<CEnum>,
    /// Typedefs of scalar, pointer and array types.
    pub(crate) typedefs: Vec<Typedef>,
    /// Function prototypes.
    pub(crate) functions: Vec<Prototype>,
    /// Objects declared through a function-like macro of the header (`HSA_DEFINE_UUID`).
    pub(crate) objects: Vec<MacroObject>,
}

/// One `#define`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Define {
    /// Macro name.
    pub(crate) name: String,
    /// Parameter names of a function-like macro; `None` for an object-like one.
    pub(crate) params: Option<Vec<String>>,
    /// Replacement text, whitespace-trimmed.
    pub(crate) body: String,
}

/// A struct or union definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CStruct {
    /// The name the checkers match: the typedef name, else the tag.
    pub(crate) name: String,
    /// How C code names the type: the typedef name, or `struct tag` / `union tag`.
    pub(crate) spelling: String,
    /// `struct` or `union`.
    pub(crate) kind: AggregateKind,
    /// Members in declaration order.
    pub(crate) members: Vec<Member>,
}

/// An enum definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CEnum {
    /// The name the checkers match: the typedef name, else the tag.
    pub(crate) name: String,
    /// How C code names the type: the typedef name, or `enum tag`.
    pub(crate) spelling: String,
    /// Enumerator names in order.
    pub(crate) members: Vec<String>,
}

/// A typedef of a scalar, pointer or array type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Typedef {
    /// The new name.
    pub(crate) name: String,
    /// What it stands for.
    pub(crate) ty: TypeRef,
    /// Array-ness.
    pub(crate) array: Array,
}

/// A function prototype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prototype {
    /// Function name.
    pub(crate) name: String,
    /// Return type.
    pub(crate) ret: TypeRef,
    /// Parameter types (array parameters as pointers); empty for `(void)`.
    pub(crate) params: Vec<TypeRef>,
}

/// An object a function-like macro declares: `MACRO(name, ...);`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MacroObject {
    /// The macro.
    pub(crate) macro_name: String,
    /// The object's name (the first argument).
    pub(crate) name: String,
}

/// A struct or union member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Member {
    /// A named member of scalar, pointer or struct type, possibly an array or a bitfield.
    Field {
        /// Member name.
        name: String,
        /// Type.
        ty: TypeRef,
        /// Array-ness.
        array: Array,
        /// Bitfield width.
        bits: Option<u32>,
    },
    /// An aggregate defined in place: `union { ... };` (anonymous, `name` is `None`) or
    /// `struct { ... } name;`.
    Aggregate {
        /// `union` or `struct`.
        kind: AggregateKind,
        /// Declarator name; `None` for an anonymous member whose members belong to the parent.
        name: Option<String>,
        /// The aggregate's members.
        members: Vec<Member>,
    },
}

/// `struct` or `union`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AggregateKind {
    /// `struct`.
    Struct,
    /// `union`.
    Union,
}

/// A type as written: a named or tagged base type, `const` on it, and pointer levels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypeRef {
    /// The base type.
    pub(crate) base: CType,
    /// `const` applies to the base type (`const void *`).
    pub(crate) is_const: bool,
    /// Levels of `*`.
    pub(crate) pointer: u32,
}

impl fmt::Display for TypeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_const {
            f.write_str("const ")?;
        }
        write!(f, "{}", self.base)?;
        for _ in 0..self.pointer {
            f.write_str(" *")?;
        }
        Ok(())
    }
}

/// A base type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CType {
    /// A type name such as `__u32`, `HSAuint32` or `unsigned int` (words joined by a space).
    Named(String),
    /// `struct tag`.
    Struct(String),
}

impl CType {
    /// The Rust type the uapi crate is expected to use for this C type.
    pub(crate) fn rust_name(&self) -> Option<&str> {
        match self {
            Self::Named(name) => match name.as_str() {
                "__u8" => Some("u8"),
                "__u16" => Some("u16"),
                "__u32" => Some("u32"),
                "__u64" => Some("u64"),
                "__s8" => Some("i8"),
                "__s16" => Some("i16"),
                "__s32" => Some("i32"),
                "__s64" => Some("i64"),
                _ => None,
            },
            Self::Struct(tag) => Some(tag),
        }
    }
}

impl fmt::Display for CType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Named(name) => f.write_str(name),
            Self::Struct(tag) => write!(f, "struct {tag}"),
        }
    }
}

/// Array-ness of a member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Array {
    /// Not an array.
    No,
    /// `name[expr]`.
    Fixed(String),
    /// `name[]`, a flexible array member.
    Flexible,
}

/// A member as a C member designator relative to its outermost aggregate, with what the
/// checkers need to know about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldPath {
    /// Designator: `gpu_id`, `signal_event_data` (anonymous union member),
    /// `wave_state.control_stack_offset`.
    pub(crate) path: String,
    /// Type; `None` for a member of anonymous aggregate type.
    pub(crate) ty: Option<TypeRef>,
    /// Array-ness.
    pub(crate) array: Array,
    /// Bitfield width.
    pub(crate) bits: Option<u32>,
}

impl CStruct {
    /// Every member designator, in declaration order: members of anonymous unions/structs
    /// under their own names, members of named in-place aggregates as `outer.inner` after
    /// `outer` itself.
    pub(crate) fn field_paths(&self) -> Vec<FieldPath> {
        let mut out = Vec::new();
        flatten(&self.members, "", &mut out);
        out
    }
}

fn flatten(members: &[Member], prefix: &str, out: &mut Vec<FieldPath>) {
    for member in members {
        match member {
            Member::Field { name, ty, array, bits } => out.push(FieldPath {
                path: format!("{prefix}{name}"),
                ty: Some(ty.clone()),
                array: array.clone(),
                bits: *bits,
            }),
            Member::Aggregate { name: None, members, .. } => flatten(members, prefix, out),
            Member::Aggregate { name: Some(name), members, .. } => {
                let path = format!("{prefix}{name}");
                out.push(FieldPath { path: path.clone(), ty: None, array: Array::No, bits: None });
                flatten(members, &format!("{path}."), out);
            }
        }
    }
}

/// Parses a header's text on its own.
#[cfg(test)]
pub(crate) fn parse(file: &str, text: &str) -> Result<Header, String> {
    parse_in(file, text, &mut Macros::default())
}

/// Parses headers `(file, text)` in include order: each sees the macros of those before it, as
/// when the later ones include the earlier.
pub(crate) fn parse_all(files: &[(&str, String)]) -> Result<Vec<Header>, String> {
    let mut macros = Macros::default();
    files.iter().map(|(file, text)| parse_in(file, text, &mut macros)).collect()
}

/// Macros defined so far: every name, the ones without a body, the function-like ones.
#[derive(Debug, Default)]
pub(crate) struct Macros {
    defined: std::collections::HashSet<String>,
    empty: std::collections::HashSet<String>,
    functions: std::collections::HashSet<String>,
}

fn parse_in(file: &str, text: &str, macros: &mut Macros) -> Result<Header, String> {
    let pre =
        directives::preprocess(text, &mut macros.defined).map_err(|e| format!("{file}: {e}"))?;
    macros.empty.extend(pre.empty_macros);
    macros
        .functions
        .extend(pre.defines.iter().filter(|d| d.params.is_some()).map(|d| d.name.clone()));
    let mut header = Header { file: file.to_owned(), defines: pre.defines, ..Header::default() };
    parser::declarations(&pre.code, &macros.empty, &macros.functions, &mut header)
        .map_err(|e| format!("{file}: {e}"))?;
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
/* a comment with #define inside */
#ifndef GUARD
#define GUARD
#include <linux/types.h>
#define ANSWER 42 /* trailing */
#define SHIFTED (1 << \
    4)
#define MASK(i) (1ULL << ((i) - 1))
#define FMT(a, b)\
	"%x %s\n", (a), (b)
#define IOC AMDKFD_IOWR(0x02, struct thing)
enum colour { RED, GREEN = 5, BLUE = (1 << 2), };
struct thing {
	__u32 a; // line comment
	struct other o[NUM];
	union {
		struct x first;
		__u64 second;
	};
	struct {
		__u32 inner;
	} named;
	__s32 flex[];
};
#endif
"#;

    #[test]
    fn parses_the_header_subset() {
        let header = parse("sample.h", SAMPLE).expect("parse");
        let names: Vec<_> = header.defines.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["ANSWER", "SHIFTED", "MASK", "FMT", "IOC"]);
        assert_eq!(header.defines[0].body, "42");
        assert_eq!(header.defines[1].body, "(1 <<     4)");
        assert_eq!(header.defines[2].params.as_deref(), Some(&["i".to_owned()][..]));
        assert_eq!(header.defines[3].body, "\"%x %s\\n\", (a), (b)");
        assert_eq!(header.enums[0].members, ["RED", "GREEN", "BLUE"]);
        assert_eq!(header.enums[0].spelling, "enum colour");
        let paths: Vec<_> = header.structs[0].field_paths().into_iter().map(|f| f.path).collect();
        assert_eq!(paths, ["a", "o", "first", "second", "named", "named.inner", "flex"]);
        assert_eq!(header.structs[0].spelling, "struct thing");
        let fields = header.structs[0].field_paths();
        assert_eq!(fields[1].array, Array::Fixed("NUM".to_owned()));
        assert_eq!(fields[1].ty.as_ref().map(|t| &t.base), Some(&CType::Struct("other".into())));
        assert_eq!(fields[6].array, Array::Flexible);
        assert_eq!(fields[6].ty.as_ref().and_then(|t| t.base.rust_name()), Some("i32"));
    }

    const TYPEDEFS: &str = r#"
#ifndef _T_H_
#define _T_H_
#ifdef __cplusplus
extern "C" {
#endif
#if defined(_WIN32) || defined(_WIN64)
    typedef unsigned __int32 U32;
#elif defined(__linux__)
    #define API
    typedef uint32_t U32;
#endif
typedef void* HANDLE;
typedef U32 IDS[8];
#pragma pack(push, t_h, 4)
typedef union
{
    U32 Value;
    struct
    {
        unsigned int Low : 10;
        unsigned int High : 22;
    } ui32;
} WORD;
typedef struct _Thing
{
    WORD w;
    volatile long long *Reason;
    const void *Meta;
    union { U32 a; U32 *b; };
} Thing;
typedef enum _Colour { RED = -1, SIZE = 0xFFFFFFFF } Colour;
#define MAKE(name, v) static const U32 name = v
MAKE(ANSWER, 42);
#ifndef DEFINE_GUID
#define GUID_SIZE 16
#else
#define GUID_SIZE 17
#endif
U32 API f(void);
U32 API g(const IDS *ids, Thing* things[], unsigned int n);
#pragma pack(pop, t_h)
#ifdef __cplusplus
}
#endif
#endif
"#;

    #[test]
    fn parses_typedefs_bitfields_and_prototypes() {
        let h = parse("t.h", TYPEDEFS).expect("parse");
        let typedefs: Vec<_> = h.typedefs.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(typedefs, ["U32", "HANDLE", "IDS"]);
        assert_eq!(h.typedefs[0].ty.base, CType::Named("uint32_t".into()));
        assert_eq!(h.typedefs[1].ty.pointer, 1);
        assert_eq!(h.typedefs[2].array, Array::Fixed("8".into()));
        let word = &h.structs[0];
        assert_eq!((word.name.as_str(), word.spelling.as_str()), ("WORD", "WORD"));
        assert_eq!(word.kind, AggregateKind::Union);
        let paths = word.field_paths();
        assert_eq!(paths[2].path, "ui32.Low");
        assert_eq!(paths[2].bits, Some(10));
        assert_eq!(paths[2].ty.as_ref().map(ToString::to_string).as_deref(), Some("unsigned int"));
        let thing = &h.structs[1];
        assert_eq!(thing.name, "Thing");
        let paths = thing.field_paths();
        assert_eq!(paths[1].ty.as_ref().map(|t| t.pointer), Some(1));
        assert_eq!(paths[1].ty.as_ref().map(|t| t.base.to_string()).as_deref(), Some("long long"));
        assert!(paths[2].ty.as_ref().is_some_and(|t| t.is_const));
        assert_eq!(paths[4].path, "b");
        assert_eq!(h.enums[0].name, "Colour");
        assert_eq!(h.enums[0].members, ["RED", "SIZE"]);
        assert_eq!(h.objects, [MacroObject { macro_name: "MAKE".into(), name: "ANSWER".into() }]);
        let guid = h.defines.iter().find(|d| d.name == "GUID_SIZE").map(|d| d.body.as_str());
        assert_eq!(guid, Some("16"));
        assert_eq!(h.functions.len(), 2);
        assert!(h.functions[0].params.is_empty());
        let g = &h.functions[1];
        assert_eq!(g.params.len(), 3);
        assert!(g.params[0].is_const);
        assert_eq!(g.params[1].pointer, 2, "an array parameter is a pointer");
        assert_eq!(g.params[2].base, CType::Named("unsigned int".into()));
    }

    #[test]
    fn rejects_what_it_does_not_understand() {
        assert!(parse("x.h", "#if 1\n").is_err(), "unterminated #if");
        assert!(parse("x.h", "#warning hi\n").is_err());
        assert!(parse("x.h", "struct s { int a };\n").is_err());
        assert!(parse("x.h", "/* open").is_err());
        assert!(parse("x.h", "int x = 3;\n").is_err());
    }
}
