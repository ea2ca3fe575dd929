//! Text from files, arguments and the environment, made safe to print on a terminal: control
//! characters (C0, DEL, C1 — escape sequences start with them) are shown escaped, never sent
//! raw.

use std::borrow::Cow;

/// `s` with every control character escaped as Rust does (`\n`, `\t`, `\u{1b}`); `s` itself
/// when it has none.
pub(crate) fn escape(s: &str) -> Cow<'_, str> {
    if s.chars().any(char::is_control) {
        let mut out = String::with_capacity(s.len() + 8);
        for c in s.chars() {
            if c.is_control() {
                out.extend(c.escape_debug());
            } else {
                out.push(c);
            }
        }
        Cow::Owned(out)
    } else {
        Cow::Borrowed(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape("MI300X"), "MI300X");
        assert!(matches!(escape("plain"), Cow::Borrowed(_)));
        assert_eq!(escape("a\u{1b}[2Jb\n\u{9b}c\u{7f}"), "a\\u{1b}[2Jb\\n\\u{9b}c\\u{7f}");
        assert_eq!(escape("Radeon™ ü"), "Radeon™ ü");
    }

    proptest! {
        #[test]
        fn nothing_control_survives(s in "\\PC*|[\u{0}-\u{9f}]{0,32}") {
            let e = escape(&s);
            prop_assert!(!e.chars().any(char::is_control));
            prop_assert_eq!(e == s, !s.chars().any(char::is_control));
        }
    }
}
