//! Writing the commands' results to stdout: a closed pipe (`hsakmt info | head`) ends the
//! output quietly instead of panicking.

use std::io::Write as _;

/// Writes `text` to stdout; a reader that went away is not an error.
pub(crate) fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}
