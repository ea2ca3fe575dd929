//! Translation phases 2–4 for the header subset: line splicing, comments, and the directives
//! (`#define`, conditionals, `#include`, `#pragma`).

use std::collections::HashSet;

use super::Define;

/// Macros the checked headers are read with: the Linux view.
const PREDEFINED: [&str; 1] = ["__linux__"];

/// What the directives left.
#[derive(Debug, Default)]
pub(super) struct Preprocessed {
    /// `#define`s with a body, in order.
    pub(super) defines: Vec<Define>,
    /// Object-like macros defined without a body (include guards, `HSAKMTAPI`): the parser
    /// skips them in code.
    pub(super) empty_macros: HashSet<String>,
    /// The code lines of active regions, comments replaced by spaces.
    pub(super) code: String,
}

/// One level of `#if` nesting.
#[derive(Debug, Clone, Copy)]
struct Cond {
    /// The enclosing region is active.
    outer: bool,
    /// Some branch of this conditional has been taken.
    taken: bool,
    /// The current branch is active.
    active: bool,
    /// `#else` was seen.
    in_else: bool,
}

/// Runs the directives of `text`; `defined` holds the macros defined before it (and gains its
/// own).
pub(super) fn preprocess(
    text: &str,
    defined: &mut HashSet<String>,
) -> Result<Preprocessed, String> {
    let spliced = text.replace("\\\r\n", "").replace("\\\n", "");
    let stripped = strip_comments(&spliced)?;
    let mut out = Preprocessed::default();
    defined.extend(PREDEFINED.iter().map(|s| (*s).to_owned()));
    let mut stack: Vec<Cond> = Vec::new();
    for line in stripped.lines() {
        let active = stack.last().is_none_or(|c| c.active);
        let Some(directive) = line.trim_start().strip_prefix('#') else {
            if active {
                out.code.push_str(line);
            }
            out.code.push('\n');
            continue;
        };
        out.code.push('\n');
        let directive = directive.trim();
        let keyword_len =
            directive.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(directive.len());
        let (keyword, rest) = directive.split_at(keyword_len);
        let rest = rest.trim();
        match keyword {
            "if" | "ifdef" | "ifndef" => {
                let value = match keyword {
                    "ifdef" => defined.contains(rest),
                    "ifndef" => !defined.contains(rest),
                    _ => eval(rest, defined)?,
                };
                let on = active && value;
                stack.push(Cond { outer: active, taken: on, active: on, in_else: false });
            }
            "elif" => {
                let c = stack.last_mut().ok_or("#elif without #if")?;
                if c.in_else {
                    return Err("#elif after #else".to_owned());
                }
                let on = c.outer && !c.taken && eval(rest, defined)?;
                c.taken |= on;
                c.active = on;
            }
            "else" => {
                let c = stack.last_mut().ok_or("#else without #if")?;
                if c.in_else {
                    return Err("second #else".to_owned());
                }
                c.in_else = true;
                c.active = c.outer && !c.taken;
                c.taken = true;
            }
            "endif" => {
                stack.pop().ok_or("#endif without #if")?;
            }
            _ if !active => {}
            "include" | "pragma" => {}
            "define" => {
                let define = parse_define(rest)?;
                defined.insert(define.name.clone());
                if define.body.is_empty() && define.params.is_none() {
                    out.empty_macros.insert(define.name);
                } else {
                    out.defines.push(define);
                }
            }
            _ => return Err(format!("unsupported directive `#{directive}`")),
        }
    }
    if !stack.is_empty() {
        return Err("unterminated #if".to_owned());
    }
    Ok(out)
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
                        // Keep line structure so directives stay on their own lines.
                        Some('\n') => {
                            out.push('\n');
                            prev = '\n';
                        }
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

/// Parses the text after `#define`.
fn parse_define(rest: &str) -> Result<Define, String> {
    let name_len = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
    let (name, after) = rest.split_at(name_len);
    if name.is_empty() {
        return Err(format!("#define without a name: `#define {rest}`"));
    }
    let (params, body) = if let Some(after_paren) = after.strip_prefix('(') {
        let close = after_paren
            .find(')')
            .ok_or_else(|| format!("unterminated parameter list of {name}"))?;
        let (list, body) = after_paren.split_at(close);
        let params =
            list.split(',').map(|p| p.trim().to_owned()).filter(|p| !p.is_empty()).collect();
        (Some(params), body.get(1..).unwrap_or_default())
    } else {
        (None, after)
    };
    Ok(Define { name: name.to_owned(), params, body: body.trim().to_owned() })
}

pub(super) fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Evaluates an `#if` / `#elif` condition over `defined`: `defined(X)`, `defined X`, `!`,
/// `&&`, `||`, parentheses and integer literals; any other identifier is 0, as in C.
fn eval(expr: &str, defined: &HashSet<String>) -> Result<bool, String> {
    let tokens = cond_tokens(expr)?;
    let mut p = CondParser { tokens: &tokens, pos: 0, defined };
    let v = p.or()?;
    if p.pos != tokens.len() {
        return Err(format!("cannot evaluate `#if {expr}`"));
    }
    Ok(v)
}

fn cond_tokens(expr: &str) -> Result<Vec<String>, String> {
    let mut tokens = Vec::new();
    let mut chars = expr.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if is_ident_char(c) {
            let mut word = String::new();
            while let Some(&c) = chars.peek().filter(|c| is_ident_char(**c)) {
                word.push(c);
                chars.next();
            }
            tokens.push(word);
        } else if c == '&' || c == '|' {
            chars.next();
            if chars.next() != Some(c) {
                return Err(format!("unsupported operator in `#if {expr}`"));
            }
            tokens.push(format!("{c}{c}"));
        } else if matches!(c, '!' | '(' | ')') {
            chars.next();
            tokens.push(c.to_string());
        } else {
            return Err(format!("unsupported character {c:?} in `#if {expr}`"));
        }
    }
    Ok(tokens)
}

struct CondParser<'a> {
    tokens: &'a [String],
    pos: usize,
    defined: &'a HashSet<String>,
}

impl CondParser<'_> {
    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.pos).map(String::as_str)
    }

    fn next(&mut self) -> Result<&str, String> {
        let t = self.tokens.get(self.pos).ok_or("unexpected end of #if condition")?;
        self.pos += 1;
        Ok(t)
    }

    fn or(&mut self) -> Result<bool, String> {
        let mut v = self.and()?;
        while self.peek() == Some("||") {
            self.pos += 1;
            let rhs = self.and()?;
            v = v || rhs;
        }
        Ok(v)
    }

    fn and(&mut self) -> Result<bool, String> {
        let mut v = self.unary()?;
        while self.peek() == Some("&&") {
            self.pos += 1;
            let rhs = self.unary()?;
            v = v && rhs;
        }
        Ok(v)
    }

    fn unary(&mut self) -> Result<bool, String> {
        match self.next()? {
            "!" => Ok(!self.unary()?),
            "(" => {
                let v = self.or()?;
                match self.next()? {
                    ")" => Ok(v),
                    t => Err(format!("expected `)` in #if, found `{t}`")),
                }
            }
            "defined" => {
                let paren = self.peek() == Some("(");
                if paren {
                    self.pos += 1;
                }
                let name = self.next()?.to_owned();
                if paren && self.next()? != ")" {
                    return Err("expected `)` after defined(".to_owned());
                }
                Ok(self.defined.contains(&name))
            }
            t if t.starts_with(|c: char| c.is_ascii_digit()) => Ok(t
                .trim_end_matches(['u', 'U', 'l', 'L'])
                .parse::<u64>()
                .map_err(|e| format!("bad number `{t}` in #if: {e}"))?
                != 0),
            t if t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') => Ok(false),
            t => Err(format!("unexpected `{t}` in #if")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions() {
        let defined: HashSet<String> = ["A".to_owned(), "__linux__".to_owned()].into();
        assert!(eval("defined(A)", &defined).unwrap());
        assert!(!eval("defined B", &defined).unwrap());
        assert!(eval("defined(B) || defined(__linux__)", &defined).unwrap());
        assert!(!eval("defined(A) && !defined(__linux__)", &defined).unwrap());
        assert!(eval("!(0) && 1", &defined).unwrap());
        assert!(!eval("SOMETHING", &defined).unwrap());
        assert!(eval("defined(A) +", &defined).is_err());
    }

    #[test]
    fn inactive_regions_are_dropped() {
        let text = "#ifdef X\n#define A 1\nint a;\n#else\n#define A 2\n#endif\n";
        let p = preprocess(text, &mut HashSet::new()).unwrap();
        assert_eq!(p.defines.len(), 1);
        assert_eq!(p.defines[0].body, "2");
        assert!(!p.code.contains("int a"));
    }
}
