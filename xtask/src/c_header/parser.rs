//! Declarations: tokens of the active code, then top-level definitions, typedefs, prototypes
//! and macro-declared objects.

use std::collections::HashSet;
use std::fmt;

use super::directives::is_ident_char;
use super::{
    AggregateKind, Array, CEnum, CStruct, CType, Header, MacroObject, Member, Prototype, TypeRef,
    Typedef,
};

/// Words that may make up a type name (`unsigned int`, `long long`, `signed char`).
const TYPE_WORDS: [&str; 7] = ["unsigned", "signed", "int", "short", "long", "char", "double"];

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

/// Parses the declarations of `code` into `header`; identifiers in `empty_macros` are skipped,
/// and an invocation of one of `function_macros` at top level declares an object.
pub(super) fn declarations(
    code: &str,
    empty_macros: &HashSet<String>,
    function_macros: &HashSet<String>,
    header: &mut Header,
) -> Result<(), String> {
    let tokens: Vec<Token> = tokenize(code)?
        .into_iter()
        .filter(|t| !matches!(t, Token::Ident(s) if empty_macros.contains(s)))
        .collect();
    let mut parser = Parser { tokens: &tokens, pos: 0 };
    parser.top_level(header, function_macros)
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

/// A declarator: name, pointer levels, array-ness, bitfield width.
struct Declarator {
    name: String,
    pointer: u32,
    array: Array,
    bits: Option<u32>,
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

    fn eat_punct(&mut self, c: char) -> bool {
        let at = self.at_punct(c);
        if at {
            self.pos += 1;
        }
        at
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

    fn top_level(
        &mut self,
        header: &mut Header,
        function_macros: &HashSet<String>,
    ) -> Result<(), String> {
        while self.peek().is_some() {
            if self.at_ident("typedef") {
                self.pos += 1;
                self.typedef(header)?;
            } else if let Some(Token::Ident(m)) =
                self.peek().filter(|t| matches!(t, Token::Ident(s) if function_macros.contains(s)))
            {
                let macro_name = m.clone();
                self.pos += 1;
                let name = self.macro_object()?;
                header.objects.push(MacroObject { macro_name, name });
            } else if (self.at_ident("struct") || self.at_ident("enum") || self.at_ident("union"))
                && matches!(self.tokens.get(self.pos + 2), Some(Token::Punct('{')))
            {
                self.tagged_definition(header)?;
            } else {
                self.prototype(header)?;
            }
        }
        Ok(())
    }

    /// `struct tag { ... };` / `enum tag { ... };`
    fn tagged_definition(&mut self, header: &mut Header) -> Result<(), String> {
        let keyword = self.ident()?;
        let tag = self.ident()?;
        self.expect_punct('{')?;
        match keyword.as_str() {
            "struct" | "union" => {
                let kind =
                    if keyword == "struct" { AggregateKind::Struct } else { AggregateKind::Union };
                let members = self.members().map_err(|e| format!("{keyword} {tag}: {e}"))?;
                let spelling = format!("{keyword} {tag}");
                header.structs.push(CStruct { name: tag, spelling, kind, members });
            }
            _ => {
                let members = self.enumerators().map_err(|e| format!("enum {tag}: {e}"))?;
                let spelling = format!("enum {tag}");
                header.enums.push(CEnum { name: tag, spelling, members });
            }
        }
        self.expect_punct(';')
    }

    /// After `typedef`: an aggregate or enum definition, or a type and a declarator.
    fn typedef(&mut self, header: &mut Header) -> Result<(), String> {
        let keyword = match self.peek() {
            Some(Token::Ident(s)) if s == "struct" || s == "union" || s == "enum" => s.clone(),
            _ => String::new(),
        };
        let defines_body = !keyword.is_empty()
            && (matches!(self.tokens.get(self.pos + 1), Some(Token::Punct('{')))
                || matches!(self.tokens.get(self.pos + 2), Some(Token::Punct('{'))));
        if defines_body {
            self.pos += 1;
            if !self.at_punct('{') {
                self.ident()?; // the tag; the typedef name is what users spell
            }
            self.expect_punct('{')?;
            if keyword == "enum" {
                let members = self.enumerators().map_err(|e| format!("typedef enum: {e}"))?;
                let name = self.ident()?;
                header.enums.push(CEnum { spelling: name.clone(), name, members });
            } else {
                let kind =
                    if keyword == "struct" { AggregateKind::Struct } else { AggregateKind::Union };
                let members = self.members().map_err(|e| format!("typedef {keyword}: {e}"))?;
                let name = self.ident()?;
                header.structs.push(CStruct { spelling: name.clone(), name, kind, members });
            }
            return self.expect_punct(';');
        }
        let (base, is_const) = self.type_specifier()?;
        let d = self.declarator()?;
        if d.bits.is_some() {
            return Err(format!("typedef {}: a bitfield", d.name));
        }
        header.typedefs.push(Typedef {
            name: d.name,
            ty: TypeRef { base, is_const, pointer: d.pointer },
            array: d.array,
        });
        self.expect_punct(';')
    }

    /// After the macro name of `MACRO(name, args...);`: the object's name.
    fn macro_object(&mut self) -> Result<String, String> {
        self.expect_punct('(')?;
        let name = self.ident()?;
        let mut depth = 1usize;
        while depth > 0 {
            match self.next()? {
                Token::Punct('(') => depth += 1,
                Token::Punct(')') => depth -= 1,
                _ => {}
            }
        }
        self.expect_punct(';')?;
        Ok(name)
    }

    /// `RET name(params);`
    fn prototype(&mut self, header: &mut Header) -> Result<(), String> {
        let (base, is_const) = self.type_specifier()?;
        let mut pointer = 0;
        while self.eat_punct('*') {
            pointer += 1;
        }
        let name = self.ident()?;
        if !self.at_punct('(') {
            return Err(format!("unsupported top-level declaration of `{name}`"));
        }
        self.pos += 1;
        let mut params = Vec::new();
        if self.at_ident("void") && self.tokens.get(self.pos + 1) == Some(&Token::Punct(')')) {
            self.pos += 1;
        }
        while !self.at_punct(')') {
            let (base, is_const) = self.type_specifier()?;
            let mut d = self.declarator()?;
            if d.array != Array::No {
                d.pointer += 1; // an array parameter is a pointer
            }
            params.push(TypeRef { base, is_const, pointer: d.pointer });
            if !self.eat_punct(',') {
                break;
            }
        }
        self.expect_punct(')').map_err(|e| format!("{name}: {e}"))?;
        self.expect_punct(';').map_err(|e| format!("{name}: {e}"))?;
        let ret = TypeRef { base, is_const, pointer };
        header.functions.push(Prototype { name, ret, params });
        Ok(())
    }

    /// Qualifiers and a base type: `const volatile unsigned int`, `struct tag`, `HSAuint32`.
    fn type_specifier(&mut self) -> Result<(CType, bool), String> {
        let mut is_const = false;
        loop {
            if self.at_ident("const") {
                is_const = true;
            } else if !self.at_ident("volatile") {
                break;
            }
            self.pos += 1;
        }
        if self.at_ident("struct") || self.at_ident("union") {
            self.pos += 1;
            return Ok((CType::Struct(self.ident()?), is_const));
        }
        let mut words = vec![self.ident()?];
        if TYPE_WORDS.contains(&words[0].as_str()) {
            while let Some(Token::Ident(w)) = self.peek() {
                if !TYPE_WORDS.contains(&w.as_str()) {
                    break;
                }
                words.push(w.clone());
                self.pos += 1;
            }
        }
        Ok((CType::Named(words.join(" ")), is_const))
    }

    /// `*...name[expr]` or `*...name : width`.
    fn declarator(&mut self) -> Result<Declarator, String> {
        let mut pointer = 0;
        while self.eat_punct('*') {
            pointer += 1;
            while self.at_ident("const") || self.at_ident("volatile") {
                self.pos += 1;
            }
        }
        let name = self.ident()?;
        let array = if self.eat_punct('[') {
            let mut expr = Vec::new();
            while !self.at_punct(']') {
                expr.push(self.next()?.to_string());
            }
            self.pos += 1;
            if expr.is_empty() { Array::Flexible } else { Array::Fixed(expr.join(" ")) }
        } else {
            Array::No
        };
        let bits = if self.eat_punct(':') {
            match self.next()? {
                Token::Number(n) => {
                    Some(n.parse().map_err(|e| format!("bitfield width `{n}` of {name}: {e}"))?)
                }
                other => return Err(format!("bitfield width of {name}: `{other}`")),
            }
        } else {
            None
        };
        Ok(Declarator { name, pointer, array, bits })
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
            let in_place =
                kind.is_some() && matches!(self.tokens.get(self.pos + 1), Some(Token::Punct('{')));
            let member = match kind {
                Some(kind) if in_place => {
                    self.pos += 2;
                    let inner = self.members()?;
                    let name = if self.at_punct(';') { None } else { Some(self.ident()?) };
                    Member::Aggregate { kind, name, members: inner }
                }
                _ => {
                    let (base, is_const) = self.type_specifier()?;
                    let d = self.declarator()?;
                    let ty = TypeRef { base, is_const, pointer: d.pointer };
                    Member::Field { name: d.name, ty, array: d.array, bits: d.bits }
                }
            };
            self.expect_punct(';')?;
            members.push(member);
        }
        self.expect_punct('}')?;
        Ok(members)
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
