//! A small Rust scanner for the tidy rules: tokens (identifiers, punctuation, literals) with
//! their lines, comments apart, and which tokens are test code.
//!
//! It knows what the rules need and no more: nested block comments, doc comments, every string
//! form (`"…"`, `r#"…"#`, `b"…"`, `c"…"`), char literals against lifetimes, the items under a
//! test attribute (`#[cfg(test)]`, `#[cfg(all(test, …))]`, `#[test]`, and an inner
//! `#![cfg(test)]` for the whole file), inline `mod name { … }` blocks and out-of-line
//! `mod name;` declarations. It does not build a syntax tree: an item under a test attribute
//! ends at its first `;` or its first brace block outside parentheses and brackets, which is
//! exact for modules, functions, `use` and `impl` blocks, the items the workspace puts under
//! test attributes.

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An identifier or keyword (`r#` stripped from raw identifiers).
    Ident,
    /// A lifetime or loop label (`'a`).
    Lifetime,
    /// A string literal of any form (its text is the raw source).
    Str,
    /// A char or byte literal.
    Char,
    /// A number (integer or float, with its suffix).
    Number,
    /// One punctuation character.
    Punct,
}

/// One token of code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    pub(crate) kind: Kind,
    pub(crate) text: String,
    /// 1-based line of the token's first character.
    pub(crate) line: usize,
    /// Whether the token is test code (under a test attribute, or the whole file is).
    pub(crate) test: bool,
}

impl Token {
    pub(crate) fn is(&self, text: &str) -> bool {
        self.kind != Kind::Str && self.kind != Kind::Char && self.text == text
    }

    pub(crate) fn is_ident(&self, text: &str) -> bool {
        self.kind == Kind::Ident && self.text == text
    }
}

/// One comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Comment {
    /// Its text without the `//`, `///`, `//!` or `/* */` markers, trimmed.
    pub(crate) text: String,
    pub(crate) first_line: usize,
    pub(crate) last_line: usize,
    /// A doc comment (`///`, `//!`, `/** */`, `/*! */`).
    pub(crate) doc: bool,
}

/// An out-of-line module declaration (`mod name;`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ModDecl {
    /// The inline modules it sits in, outermost first, then its own name.
    pub(crate) path: Vec<String>,
    pub(crate) line: usize,
    /// Declared under a test attribute.
    pub(crate) test: bool,
}

/// An inline module (`mod name { … }`): its name and the token range of its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InlineMod {
    pub(crate) name: String,
    /// Index of the `{` token.
    pub(crate) open: usize,
    /// Index of the matching `}` token (the last token when unbalanced).
    pub(crate) close: usize,
}

/// A scanned source file.
#[derive(Debug, Default)]
pub(crate) struct Scanned {
    pub(crate) tokens: Vec<Token>,
    pub(crate) comments: Vec<Comment>,
    /// Number of lines of the file.
    pub(crate) lines: usize,
    /// The whole file is test code (`#![cfg(test)]`).
    pub(crate) test_file: bool,
    pub(crate) mod_decls: Vec<ModDecl>,
    pub(crate) inline_mods: Vec<InlineMod>,
    /// Per line (index = line number): what the line holds.
    line_info: Vec<LineInfo>,
}

/// What one line holds.
#[derive(Debug, Clone, Copy, Default)]
struct LineInfo {
    /// Some code (a token, or part of a multi-line string).
    code: bool,
    /// Some comment.
    comment: bool,
}

impl Scanned {
    /// Scans `text`.
    pub(crate) fn new(text: &str) -> Self {
        let mut s = lex(text);
        s.mark_tests();
        s.find_mods();
        s.index_lines();
        s
    }

    fn index_lines(&mut self) {
        let last = self
            .tokens
            .iter()
            .map(|t| t.line + t.text.matches('\n').count())
            .chain(self.comments.iter().map(|c| c.last_line))
            .max()
            .unwrap_or(0)
            .max(self.lines);
        let mut info = vec![LineInfo::default(); last + 2];
        for t in &self.tokens {
            let span = if t.kind == Kind::Str { t.text.matches('\n').count() } else { 0 };
            for l in &mut info[t.line..=t.line + span] {
                l.code = true;
            }
        }
        for c in &self.comments {
            for l in &mut info[c.first_line..=c.last_line] {
                l.comment = true;
            }
        }
        self.line_info = info;
    }

    fn line(&self, line: usize) -> LineInfo {
        self.line_info.get(line).copied().unwrap_or_default()
    }

    /// Index of the token matching the open bracket at `open` (the last token when none).
    pub(crate) fn matching(&self, open: usize) -> usize {
        let mut depth = 0usize;
        for (i, t) in self.tokens.iter().enumerate().skip(open) {
            if t.kind != Kind::Punct {
                continue;
            }
            match t.text.as_str() {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return i;
                    }
                }
                _ => {}
            }
        }
        self.tokens.len().saturating_sub(1)
    }

    /// The inline modules token `i` is inside, outermost first.
    pub(crate) fn inline_path(&self, i: usize) -> Vec<&str> {
        self.inline_mods
            .iter()
            .filter(|m| m.open < i && i < m.close)
            .map(|m| m.name.as_str())
            .collect()
    }

    /// Whether line `line` holds a comment and no code.
    pub(crate) fn comment_only(&self, line: usize) -> bool {
        let info = self.line(line);
        info.comment && !info.code
    }

    /// The comments of the block of comment-only lines that ends on the line just above
    /// `line`, nearest first (empty when that line is not comment-only).
    pub(crate) fn comments_above(&self, line: usize) -> Vec<&Comment> {
        let mut first = line;
        while first > 1 && self.comment_only(first - 1) {
            first -= 1;
        }
        let mut found: Vec<&Comment> =
            self.comments.iter().filter(|c| c.first_line >= first && c.last_line < line).collect();
        found.reverse();
        found
    }

    /// The lines of the file that are not test code, in order: every line but those from the
    /// first to the last line of each run of test tokens (a test module with its attribute, a
    /// test function), and none at all for a test file.
    pub(crate) fn non_test_lines(&self) -> Vec<usize> {
        if self.test_file {
            return Vec::new();
        }
        let mut covered = vec![false; self.lines + 2];
        let mut run: Option<(usize, usize)> = None;
        for t in &self.tokens {
            match (&mut run, t.test) {
                (Some((_, last)), true) => *last = t.line,
                (None, true) => run = Some((t.line, t.line)),
                (Some((first, last)), false) => {
                    for c in covered.iter_mut().take(*last + 1).skip(*first) {
                        *c = true;
                    }
                    run = None;
                }
                (None, false) => {}
            }
        }
        if let Some((first, last)) = run {
            for c in covered.iter_mut().take(last + 1).skip(first) {
                *c = true;
            }
        }
        (1..=self.lines).filter(|l| !covered.get(*l).copied().unwrap_or(false)).collect()
    }

    fn mark_tests(&mut self) {
        let n = self.tokens.len();
        let mut i = 0;
        while i < n {
            if !self.tokens[i].is("#") {
                i += 1;
                continue;
            }
            let inner = self.tokens.get(i + 1).is_some_and(|t| t.is("!"));
            let open = if inner { i + 2 } else { i + 1 };
            if !self.tokens.get(open).is_some_and(|t| t.is("[")) {
                i += 1;
                continue;
            }
            let close = self.matching(open);
            let test = test_attribute(&self.tokens[open + 1..close]);
            if inner {
                if test && self.enclosing_depth(i) == 0 {
                    self.test_file = true;
                }
                i = close + 1;
                continue;
            }
            if !test {
                i = close + 1;
                continue;
            }
            let end = self.item_end(close + 1);
            for t in &mut self.tokens[i..=end.min(n - 1)] {
                t.test = true;
            }
            i = end + 1;
        }
        if self.test_file {
            for t in &mut self.tokens {
                t.test = true;
            }
        }
    }

    /// Brace/paren/bracket depth at token `i` (0 at file level).
    fn enclosing_depth(&self, i: usize) -> usize {
        let mut depth = 0usize;
        for t in &self.tokens[..i] {
            if t.kind == Kind::Punct {
                match t.text.as_str() {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" | "}" => depth = depth.saturating_sub(1),
                    _ => {}
                }
            }
        }
        depth
    }

    /// The last token of the item that starts at `start` (after its attributes): its first
    /// `;` outside brackets, or the end of its first brace block outside parentheses and
    /// brackets, or the token before a closing bracket of the enclosing scope.
    fn item_end(&self, start: usize) -> usize {
        let mut i = start;
        while i < self.tokens.len() {
            let t = &self.tokens[i];
            if t.kind == Kind::Punct {
                match t.text.as_str() {
                    ";" => return i,
                    "{" => return self.matching(i),
                    "(" | "[" => {
                        i = self.matching(i) + 1;
                        continue;
                    }
                    ")" | "]" | "}" => return i.saturating_sub(1).max(start),
                    _ => {}
                }
            }
            i += 1;
        }
        self.tokens.len().saturating_sub(1)
    }

    fn find_mods(&mut self) {
        let n = self.tokens.len();
        for i in 0..n {
            if !self.tokens[i].is_ident("mod") {
                continue;
            }
            let Some(name) = self.tokens.get(i + 1).filter(|t| t.kind == Kind::Ident) else {
                continue;
            };
            let name = name.text.clone();
            match self.tokens.get(i + 2) {
                Some(t) if t.is("{") => {
                    let close = self.matching(i + 2);
                    self.inline_mods.push(InlineMod { name, open: i + 2, close });
                }
                Some(t) if t.is(";") => {
                    let mut path: Vec<String> =
                        self.inline_path(i).into_iter().map(str::to_string).collect();
                    path.push(name);
                    let decl =
                        ModDecl { path, line: self.tokens[i].line, test: self.tokens[i].test };
                    self.mod_decls.push(decl);
                }
                _ => {}
            }
        }
    }
}

/// Whether the tokens inside `#[…]` make the item test code: `test`, `cfg(test)`, or
/// `cfg(all(…))` with `test` among the arguments of `all`.
pub(crate) fn test_attribute(inside: &[Token]) -> bool {
    let words: Vec<&str> = inside.iter().map(|t| t.text.as_str()).collect();
    match words.as_slice() {
        ["test"] => true,
        ["cfg", "(", "test", ")"] => true,
        ["cfg", "(", "all", "(", rest @ ..] => {
            let mut depth = 0usize;
            for w in rest {
                match *w {
                    "(" => depth += 1,
                    ")" if depth == 0 => return false,
                    ")" => depth -= 1,
                    "test" if depth == 0 => return true,
                    _ => {}
                }
            }
            false
        }
        _ => false,
    }
}

/// Splits `text` into tokens and comments.
fn lex(text: &str) -> Scanned {
    let chars: Vec<char> = text.chars().collect();
    let mut s = Scanned { lines: text.lines().count(), ..Scanned::default() };
    let mut line = 1usize;
    let mut i = 0usize;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        let start_line = line;
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            let end = chars[i..].iter().position(|&c| c == '\n').map_or(chars.len(), |p| i + p);
            let body: String = chars[i + 2..end].iter().collect();
            let doc = (body.starts_with('/') && !body.starts_with("//")) || body.starts_with('!');
            let body = if doc { &body[1..] } else { body.as_str() };
            s.comments.push(Comment {
                text: body.trim().to_string(),
                first_line: line,
                last_line: line,
                doc,
            });
            i = end;
        } else if c == '/' && at(i + 1) == '*' {
            let doc =
                (at(i + 2) == '*' && at(i + 3) != '/' && at(i + 3) != '*') || at(i + 2) == '!';
            let mut depth = 0usize;
            let mut j = i;
            while j < chars.len() {
                if chars[j] == '/' && at(j + 1) == '*' {
                    depth += 1;
                    j += 2;
                } else if chars[j] == '*' && at(j + 1) == '/' {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[j] == '\n' {
                        line += 1;
                    }
                    j += 1;
                }
            }
            let inner_start = (i + if doc { 3 } else { 2 }).min(j);
            let inner_end = j.saturating_sub(2).max(inner_start);
            let body: String = chars[inner_start..inner_end].iter().collect();
            s.comments.push(Comment {
                text: body.trim().to_string(),
                first_line: start_line,
                last_line: line,
                doc,
            });
            i = j;
        } else if let Some(end) = string_end(&chars, i) {
            let lit: String = chars[i..end].iter().collect();
            line += lit.matches('\n').count();
            s.tokens.push(Token { kind: Kind::Str, text: lit, line: start_line, test: false });
            i = end;
        } else if c == 'b' && at(i + 1) == '\'' {
            let end = char_end(&chars, i + 1);
            let lit: String = chars[i..end].iter().collect();
            s.tokens.push(Token { kind: Kind::Char, text: lit, line, test: false });
            i = end;
        } else if c == 'r' && at(i + 1) == '#' && is_ident_start(at(i + 2)) {
            let end = ident_end(&chars, i + 2);
            let text: String = chars[i + 2..end].iter().collect();
            s.tokens.push(Token { kind: Kind::Ident, text, line, test: false });
            i = end;
        } else if is_ident_start(c) {
            let end = ident_end(&chars, i);
            let text: String = chars[i..end].iter().collect();
            s.tokens.push(Token { kind: Kind::Ident, text, line, test: false });
            i = end;
        } else if c.is_ascii_digit() {
            let mut j = i + 1;
            while j < chars.len()
                && (chars[j].is_ascii_alphanumeric()
                    || chars[j] == '_'
                    || (chars[j] == '.' && at(j + 1).is_ascii_digit() && at(j - 1) != '.'))
            {
                j += 1;
            }
            let text: String = chars[i..j].iter().collect();
            s.tokens.push(Token { kind: Kind::Number, text, line, test: false });
            i = j;
        } else if c == '\'' {
            // A char literal ('a', '\n', '\u{1F600}') or a lifetime/label ('a, 'static).
            let is_char = at(i + 1) == '\\' || (at(i + 1) != '\'' && at(i + 2) == '\'');
            if is_char {
                let end = char_end(&chars, i);
                let lit: String = chars[i..end].iter().collect();
                s.tokens.push(Token { kind: Kind::Char, text: lit, line, test: false });
                i = end;
            } else {
                let end = ident_end(&chars, i + 1);
                let text: String = chars[i..end].iter().collect();
                s.tokens.push(Token { kind: Kind::Lifetime, text, line, test: false });
                i = end.max(i + 1);
            }
        } else {
            s.tokens.push(Token { kind: Kind::Punct, text: c.to_string(), line, test: false });
            i += 1;
        }
    }
    s
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn ident_end(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() && (chars[i] == '_' || chars[i].is_alphanumeric()) {
        i += 1;
    }
    i
}

/// The end (exclusive) of a char literal whose opening quote is at `i`.
fn char_end(chars: &[char], i: usize) -> usize {
    let mut j = i + 1;
    while j < chars.len() && chars[j] != '\'' && chars[j] != '\n' {
        if chars[j] == '\\' {
            j += 1;
        }
        j += 1;
    }
    (j + 1).min(chars.len())
}

/// If a string literal starts at `i` (`"…"`, `b"…"`, `c"…"`, `r"…"`, `r#"…"#`, `br…`, `cr…`),
/// the index just past it.
fn string_end(chars: &[char], i: usize) -> Option<usize> {
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    // An identifier character before a prefix means the prefix is part of an identifier.
    if chars[i] != '"' && i > 0 && (chars[i - 1] == '_' || chars[i - 1].is_alphanumeric()) {
        return None;
    }
    let mut j = i;
    if at(j) == 'b' || at(j) == 'c' {
        j += 1;
    }
    let raw = at(j) == 'r';
    if raw {
        j += 1;
    }
    let mut hashes = 0;
    if raw {
        while at(j) == '#' {
            hashes += 1;
            j += 1;
        }
    }
    if at(j) != '"' {
        return None;
    }
    j += 1;
    while j < chars.len() {
        match chars[j] {
            '\\' if !raw => j += 2,
            '"' => {
                let closes = (1..=hashes).all(|k| at(j + k) == '#');
                if closes {
                    return Some(j + 1 + hashes);
                }
                j += 1;
            }
            _ => j += 1,
        }
    }
    Some(chars.len())
}
