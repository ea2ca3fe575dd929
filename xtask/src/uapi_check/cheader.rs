//! A small parser for the subset of C that the uapi headers use: `#define`s (object-like and
//! function-like), `struct` and `enum` definitions at top level, members of scalar, struct and
//! array type (including flexible arrays), anonymous unions and anonymous structs.
//!
//! Anything else (another directive, a top-level declaration other than a struct or enum
//! definition, an unexpected token) is an error: a header change the checker does not
//! understand must be looked at, not skipped.

use std::fmt;

/// A parsed header.
#[derive(Debug, Default)]
pub(crate) struct Header {
    /// File name, for messages.
    pub(crate) file: String,
    /// `#define`s in order (include guards, which have no body, excluded).
    pub(crate) defines: Vec<Define>,
    /// Struct definitions in order.
    pub(crate) structs: Vec<CStruct>,
    /// Enum definitions in order.
    pub(crate) enums: Vec<CEnum>,
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

/// A struct definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CStruct {
    /// The struct tag.
    pub(crate) name: String,
    /// Members in declaration order.
    pub(crate) members: Vec<Member>,
}

/// An enum definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CEnum {
    /// The enum tag.
    pub(crate) name: String,
    /// Enumerator names in order.
    pub(crate) members: Vec<String>,
}

/// A struct or union member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Member {
    /// A named member of scalar or struct type, possibly an array.
    Field {
        /// Member name.
        name: String,
        /// Element type.
        ty: CType,
        /// Array-ness.
        array: Array,
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

/// The type of a [`Member::Field`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CType {
    /// A type name such as `__u32`.
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

/// A member as a C member designator relative to its outermost struct, with what the checker
/// needs to know about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldPath {
    /// Designator: `gpu_id`, `signal_event_data` (anonymous union member),
    /// `wave_state.control_stack_offset`.
    pub(crate) path: String,
    /// Element type; `None` for a member of anonymous aggregate type.
    pub(crate) ty: Option<CType>,
    /// Array-ness.
    pub(crate) array: Array,
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
            Member::Field { name, ty, array } => out.push(FieldPath {
                path: format!("{prefix}{name}"),
                ty: Some(ty.clone()),
                array: array.clone(),
            }),
            Member::Aggregate { name: None, members, .. } => flatten(members, prefix, out),
            Member::Aggregate { name: Some(name), members, .. } => {
                let path = format!("{prefix}{name}");
                out.push(FieldPath { path: path.clone(), ty: None, array: Array::No });
                flatten(members, &format!("{path}."), out);
            }
        }
    }
}

/// Parses a header's text.
pub(crate) fn parse(file: &str, text: &str) -> Result<Header, String> {
    let spliced = text.replace("\\\r\n", "").replace("\\\n", "");
    let stripped = strip_comments(&spliced).map_err(|e| format!("{file}: {e}"))?;
    let mut header = Header { file: file.to_owned(), ..Header::default() };
    let mut code = String::new();
    for line in stripped.lines() {
        let trimmed = line.trim_start();
        if let Some(directive) = trimmed.strip_prefix('#') {
            if let Some(define) = parse_directive(directive).map_err(|e| format!("{file}: {e}"))? {
                header.defines.push(define);
            }
        } else {
            code.push_str(line);
            code.push('\n');
        }
    }
    let tokens = tokenize(&code).map_err(|e| format!("{file}: {e}"))?;
    let mut parser = Parser { tokens: &tokens, pos: 0 };
    parser.top_level(&mut header).map_err(|e| format!("{file}: {e}"))?;
    Ok(header)
}

/// Replaces every comment by one space (translation phase 3), leaving literals intact.
fn strip_comments(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = '\0';
                loop {
                    match chars.next() {
                        Some('/') if prev == '*' => break,
                        Some(next) => prev = next,
                        None => return Err("unterminated comment".to_owned()),
                    }
                }
                out.push(' ');
            }
            '/' if chars.peek() == Some(&'/') => {
                for next in chars.by_ref() {
                    if next == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '"' | '\'' => {
                out.push(c);
                loop {
                    match chars.next() {
                        Some('\\') => {
                            out.push('\\');
                            if let Some(escaped) = chars.next() {
                                out.push(escaped);
                            }
                        }
                        Some(next) if next == c => {
                            out.push(next);
                            break;
                        }
                        Some('\n') | None => return Err("unterminated literal".to_owned()),
                        Some(next) => out.push(next),
                    }
                }
            }
            _ => out.push(c),
        }
    }
    Ok(out)
}

/// Parses the text after `#`; returns the definition of a `#define` with a body.
fn parse_directive(directive: &str) -> Result<Option<Define>, String> {
    let directive = directive.trim_start();
    let keyword_len = directive.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(directive.len());
    let (keyword, rest) = directive.split_at(keyword_len);
    match keyword {
        "ifndef" | "endif" | "include" => Ok(None),
        "define" => {
            let rest = rest.trim_start();
            let name_len = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
            let (name, after) = rest.split_at(name_len);
            if name.is_empty() {
                return Err(format!("#define without a name: `#{directive}`"));
            }
            let (params, body) = if let Some(after_paren) = after.strip_prefix('(') {
                let close = after_paren
                    .find(')')
                    .ok_or_else(|| format!("unterminated parameter list of {name}"))?;
                let (list, body) = after_paren.split_at(close);
                let params = list
                    .split(',')
                    .map(|p| p.trim().to_owned())
                    .filter(|p| !p.is_empty())
                    .collect();
                (Some(params), body.get(1..).unwrap_or_default())
            } else {
                (None, after)
            };
            let body = body.trim();
            if body.is_empty() && params.is_none() {
                return Ok(None); // include guard
            }
            Ok(Some(Define { name: name.to_owned(), params, body: body.to_owned() }))
        }
        _ => Err(format!("unsupported directive `#{}`", directive.trim_end())),
    }
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// A token of C code.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    Number(String),
    Punct(char),
    Literal(String),
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ident(s) | Self::Number(s) | Self::Literal(s) => f.write_str(s),
            Self::Punct(c) => write!(f, "{c}"),
        }
    }
}

fn tokenize(code: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = code.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c.is_ascii_alphabetic() || c == '_' {
            let mut ident = String::new();
            while let Some(&c) = chars.peek().filter(|c| is_ident_char(**c)) {
                ident.push(c);
                chars.next();
            }
            tokens.push(Token::Ident(ident));
        } else if c.is_ascii_digit() {
            let mut number = String::new();
            while let Some(&c) = chars.peek().filter(|c| is_ident_char(**c)) {
                number.push(c);
                chars.next();
            }
            tokens.push(Token::Number(number));
        } else if c == '"' || c == '\'' {
            let mut literal = String::new();
            literal.push(c);
            chars.next();
            while let Some(next) = chars.next() {
                literal.push(next);
                if next == '\\' {
                    if let Some(escaped) = chars.next() {
                        literal.push(escaped);
                    }
                } else if next == c {
                    break;
                }
            }
            tokens.push(Token::Literal(literal));
        } else if c.is_ascii_punctuation() {
            tokens.push(Token::Punct(c));
            chars.next();
        } else {
            return Err(format!("unexpected character {c:?}"));
        }
    }
    Ok(tokens)
}

struct Parser<'t> {
    tokens: &'t [Token],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Result<&Token, String> {
        let token = self.tokens.get(self.pos).ok_or("unexpected end of header")?;
        self.pos += 1;
        Ok(token)
    }

    fn at_punct(&self, c: char) -> bool {
        self.peek() == Some(&Token::Punct(c))
    }

    fn at_ident(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Token::Ident(s)) if s == word)
    }

    fn expect_punct(&mut self, c: char) -> Result<(), String> {
        match self.next()? {
            Token::Punct(p) if *p == c => Ok(()),
            other => Err(format!("expected `{c}`, found `{other}`")),
        }
    }

    fn ident(&mut self) -> Result<String, String> {
        match self.next()? {
            Token::Ident(s) => Ok(s.clone()),
            other => Err(format!("expected an identifier, found `{other}`")),
        }
    }

    fn top_level(&mut self, header: &mut Header) -> Result<(), String> {
        while self.peek().is_some() {
            let keyword = self.ident()?;
            let name = self.ident()?;
            self.expect_punct('{')?;
            match keyword.as_str() {
                "struct" => {
                    let members = self.members().map_err(|e| format!("struct {name}: {e}"))?;
                    header.structs.push(CStruct { name, members });
                }
                "enum" => {
                    let members = self.enumerators().map_err(|e| format!("enum {name}: {e}"))?;
                    header.enums.push(CEnum { name, members });
                }
                other => return Err(format!("unsupported top-level declaration `{other} {name}`")),
            }
            self.expect_punct(';')?;
        }
        Ok(())
    }

    /// Members up to and including the closing `}`.
    fn members(&mut self) -> Result<Vec<Member>, String> {
        let mut members = Vec::new();
        while !self.at_punct('}') {
            let kind = if self.at_ident("struct") {
                Some(AggregateKind::Struct)
            } else if self.at_ident("union") {
                Some(AggregateKind::Union)
            } else {
                None
            };
            let member = match kind {
                Some(kind) => {
                    self.pos += 1;
                    if self.at_punct('{') {
                        self.pos += 1;
                        let inner = self.members()?;
                        let name = if self.at_punct(';') { None } else { Some(self.ident()?) };
                        Member::Aggregate { kind, name, members: inner }
                    } else if kind == AggregateKind::Struct {
                        let tag = self.ident()?;
                        self.declarator(CType::Struct(tag))?
                    } else {
                        return Err("named union types are not supported".to_owned());
                    }
                }
                None => {
                    let ty = self.ident()?;
                    self.declarator(CType::Named(ty))?
                }
            };
            self.expect_punct(';')?;
            members.push(member);
        }
        self.expect_punct('}')?;
        Ok(members)
    }

    fn declarator(&mut self, ty: CType) -> Result<Member, String> {
        let name = self.ident()?;
        let array = if self.at_punct('[') {
            self.pos += 1;
            let mut expr = Vec::new();
            while !self.at_punct(']') {
                expr.push(self.next()?.to_string());
            }
            self.pos += 1;
            if expr.is_empty() { Array::Flexible } else { Array::Fixed(expr.join(" ")) }
        } else {
            Array::No
        };
        Ok(Member::Field { name, ty, array })
    }

    /// Enumerator names up to and including the closing `}`.
    fn enumerators(&mut self) -> Result<Vec<String>, String> {
        let mut names = Vec::new();
        while !self.at_punct('}') {
            names.push(self.ident()?);
            if self.at_punct('=') {
                self.pos += 1;
                let mut depth = 0usize;
                loop {
                    match self.peek() {
                        Some(Token::Punct('(')) => depth += 1,
                        Some(Token::Punct(')')) => depth = depth.saturating_sub(1),
                        Some(Token::Punct(',' | '}')) if depth == 0 => break,
                        Some(_) => {}
                        None => return Err("unterminated enumerator value".to_owned()),
                    }
                    self.pos += 1;
                }
            }
            if self.at_punct(',') {
                self.pos += 1;
            }
        }
        self.expect_punct('}')?;
        Ok(names)
    }
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
        let paths: Vec<_> = header.structs[0].field_paths().into_iter().map(|f| f.path).collect();
        assert_eq!(paths, ["a", "o", "first", "second", "named", "named.inner", "flex"]);
        let fields = header.structs[0].field_paths();
        assert_eq!(fields[1].array, Array::Fixed("NUM".to_owned()));
        assert_eq!(fields[1].ty, Some(CType::Struct("other".to_owned())));
        assert_eq!(fields[6].array, Array::Flexible);
        assert_eq!(fields[6].ty.as_ref().and_then(CType::rust_name), Some("i32"));
    }

    #[test]
    fn rejects_what_it_does_not_understand() {
        assert!(parse("x.h", "#if 1\n#endif\n").is_err());
        assert!(parse("x.h", "typedef int foo;\n").is_err());
        assert!(parse("x.h", "struct s { int a };\n").is_err());
        assert!(parse("x.h", "/* open").is_err());
    }
}
