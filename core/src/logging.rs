//! The logging shim: one set of crate-internal macros over `defmt` (feature `defmt`), the `log`
//! facade (feature `log`), or nothing (the default; the arguments are still evaluated by
//! reference, so no variable goes unused and nothing is formatted).
//!
//! Messages use the format syntax both back ends accept: a literal with `{}` / `{:?}`
//! placeholders, and arguments that implement `defmt::Format` (under `defmt`) and
//! `Debug`/`Display` (under `log`). Every logged type of core derives both.

/// Logs at `$level` (`error`, `warn`, `info`, `debug`, `trace`) through the enabled back end.
macro_rules! log_at {
    ($level:ident, $fmt:literal $(, $arg:expr)* $(,)?) => {{
        #[cfg(feature = "defmt")]
        ::defmt::$level!($fmt $(, $arg)*);
        #[cfg(all(feature = "log", not(feature = "defmt")))]
        ::log::$level!(target: "hsakmt", $fmt $(, $arg)*);
        #[cfg(not(any(feature = "log", feature = "defmt")))]
        {
            $(let _ = &$arg;)*
        }
    }};
}

/// A failure the caller also gets as an error, worth an operator's attention (a queue error,
/// a GPU fault).
macro_rules! log_warn {
    ($($t:tt)*) => { log_at!(warn, $($t)*) };
}

/// Something recovered from (a retried snapshot or ioctl).
macro_rules! log_debug {
    ($($t:tt)*) => { log_at!(debug, $($t)*) };
}

#[cfg(test)]
mod tests {
    /// By default the shim borrows its arguments (none is moved, so they stay usable) and
    /// evaluates each once.
    #[cfg(not(any(feature = "log", feature = "defmt")))]
    #[test]
    fn arguments_are_borrowed_and_evaluated_once() {
        let mut n = 0;
        let mut count = || {
            n += 1;
            n
        };
        let owned = std::string::String::from("kept");
        log_warn!("plain");
        log_warn!("one {} {}", count(), owned);
        log_debug!("two {} {:?},", count(), owned,);
        assert_eq!((n, owned.as_str()), (2, "kept"));
    }
}
