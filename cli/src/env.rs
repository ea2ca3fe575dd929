//! The environment variables the tool reads itself: `HSAKMT_DRIVER`.
//!
//! One rule: a variable that is set must be valid — empty, unknown or non-UTF-8 values are
//! errors, never taken for "unset".

use hsakmt_core::driver::DriverKind;
use hsakmt_core::driver::policy::DRIVER_ENV;

/// The driver `HSAKMT_DRIVER` names; `None` when it is unset.
///
/// # Errors
/// A message quoting the value (non-UTF-8 bytes and control characters escaped) when it is
/// set but names no driver.
pub(crate) fn driver() -> Result<Option<DriverKind>, String> {
    std::env::var_os(DRIVER_ENV).map(|v| parse_driver(v.as_encoded_bytes())).transpose()
}

/// Parses a value of `HSAKMT_DRIVER` (see [`DriverKind::parse`]).
///
/// # Errors
/// As [`driver`].
pub(crate) fn parse_driver(value: &[u8]) -> Result<DriverKind, String> {
    DriverKind::parse(value).map_err(|_| {
        let names = DriverKind::ALL.map(DriverKind::name).join("`, `");
        if value.is_empty() {
            format!("{DRIVER_ENV} is set but empty: set it to one of `{names}`, or unset it")
        } else {
            format!(
                "{DRIVER_ENV}=\"{}\" names no driver: set it to one of `{names}`, or unset it",
                value.escape_ascii()
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn set_means_valid() {
        assert_eq!(parse_driver(b"sim"), Ok(DriverKind::Sim));
        assert_eq!(parse_driver(b" Host\n"), Ok(DriverKind::Host));
        let empty = parse_driver(b"").unwrap_err();
        assert!(empty.contains("set but empty"), "{empty}");
        let bytes = parse_driver(b"s\xffm").unwrap_err();
        assert!(bytes.contains("\"s\\xffm\" names no driver"), "{bytes}");
        let escape = parse_driver(b"\x1b[2J").unwrap_err();
        assert!(!escape.contains('\u{1b}'), "{escape:?}");
    }

    proptest! {
        /// Any bytes: a driver or a message, never a panic or a raw control character.
        #[test]
        fn any_bytes_name_a_driver_or_say_why(value in proptest::collection::vec(any::<u8>(), 0..24)) {
            match parse_driver(&value) {
                Ok(k) => prop_assert!(value.trim_ascii().eq_ignore_ascii_case(k.name().as_bytes())),
                Err(e) => prop_assert!(!e.chars().any(char::is_control)),
            }
        }
    }
}
