//! Writing to the terminal without panicking: the commands' results go to stdout through
//! [`emit`], whose failure is the command's failure; notes and progress go to stderr through
//! [`note!`](crate::note) and [`progress`], which never fail (a diagnostic that cannot be
//! written is dropped; `eprintln!` would panic instead).
//!
//! Exit statuses: 0 on success, 1 on failure (the message on stderr), 141 — what a shell
//! reports for a tool ended by `SIGPIPE`, as `cat` or `grep` are — when stdout's reader went
//! away (`hsakmt info | head -1`), quietly.

use std::fmt;
use std::io::Write as _;
use std::process::ExitCode;

use hsakmt_core::error::Errno;

/// The status a shell reports for a process ended by `SIGPIPE` (128 + 13).
pub(crate) const BROKEN_PIPE_STATUS: u8 = 141;

/// Why a command ended unsuccessfully.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A message for stderr.
    Message(String),
    /// stdout's reader went away: nothing more to say.
    BrokenPipe,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Self::Message(message)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Self {
        Self::Message(message.to_string())
    }
}

impl Failure {
    /// Reports the failure on stderr (unless the pipe closed) and gives the exit status.
    pub(crate) fn exit(self) -> ExitCode {
        match self {
            Self::Message(m) => {
                crate::note!("hsakmt: {m}");
                ExitCode::FAILURE
            }
            Self::BrokenPipe => ExitCode::from(BROKEN_PIPE_STATUS),
        }
    }
}

/// The words for a failed write: the errno's name and meaning when there is one.
fn describe(e: &std::io::Error) -> String {
    e.raw_os_error().map_or_else(|| e.to_string(), |n| Errno(n).to_string())
}

/// Writes `text` to stdout and flushes it.
///
/// # Errors
/// [`Failure::BrokenPipe`] when the reader went away (`EPIPE`), else a message naming the
/// errno (`ENOSPC` for `> /dev/full`).
pub(crate) fn emit(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Failure::BrokenPipe),
        Err(e) => Err(Failure::Message(format!("cannot write the output: {}", describe(&e)))),
    }
}

/// Writes `args` and a newline to stderr; a failure is ignored (there is nowhere left to
/// report it). The body of [`note!`](crate::note).
pub(crate) fn note_line(args: fmt::Arguments<'_>) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
}

/// Redraws a progress line on stderr (carriage return, no newline); failures are ignored.
pub(crate) fn progress(args: fmt::Arguments<'_>) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(b"\r").and_then(|()| err.write_fmt(args)).and_then(|()| err.flush());
}

/// `eprintln!` that never panics: a line on stderr, dropped when stderr cannot take it.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::output::note_line(format_args!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_failures_name_their_errno() {
        let full = std::io::Error::from_raw_os_error(28);
        assert_eq!(describe(&full), "ENOSPC (no space left on device)");
        let custom = std::io::Error::other("gone");
        assert_eq!(describe(&custom), "gone");
        assert!(matches!(Failure::from("x"), Failure::Message(m) if m == "x"));
    }
}
