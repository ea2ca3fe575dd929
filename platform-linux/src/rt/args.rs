//! The command line and the environment the kernel put on the initial stack, as safe views.

use core::ffi::{CStr, c_char};
use core::fmt;

/// The program's arguments, `argv[0..argc]` (`argv[0]` is usually the program's path).
///
/// # Invariants
/// Every pointer of `argv` is non-null and points to NUL-terminated bytes that stay valid and
/// unchanged for the rest of the process (the kernel's copy on the initial stack, which no
/// code of the image writes).
#[derive(Clone, Copy)]
pub struct Args {
    argv: &'static [*const c_char],
}

/// The environment, `envp[..]` up to its NULL: entries of the form `NAME=value`, in the
/// order the kernel received them.
///
/// # Invariants
/// As for [`Args`].
#[derive(Clone, Copy)]
pub struct Env {
    envp: &'static [*const c_char],
}

// SAFETY: the strings behind the pointers are immutable for the rest of the process (the type
// invariant) and nothing else is held, so sharing or sending the view between threads cannot
// race.
unsafe impl Send for Args {}
// SAFETY: as for `Send`.
unsafe impl Sync for Args {}
// SAFETY: as for `Args`.
unsafe impl Send for Env {}
// SAFETY: as for `Args`.
unsafe impl Sync for Env {}

/// An iterator over C strings of [`Args`] or [`Env`].
#[derive(Clone)]
pub struct CStrs {
    /// Invariant: as for [`Args`].
    inner: core::slice::Iter<'static, *const c_char>,
}

/// A C string from a pointer that satisfies the [`Args`] invariant.
fn cstr(p: *const c_char) -> &'static CStr {
    // SAFETY: every pointer reaching here comes from an `Args`, `Env` or `CStrs` slice, whose
    // invariant is that it is non-null, NUL-terminated, and valid and unchanged forever.
    unsafe { CStr::from_ptr(p) }
}

impl Iterator for CStrs {
    type Item = &'static CStr;

    fn next(&mut self) -> Option<&'static CStr> {
        self.inner.next().map(|&p| cstr(p))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl DoubleEndedIterator for CStrs {
    fn next_back(&mut self) -> Option<&'static CStr> {
        self.inner.next_back().map(|&p| cstr(p))
    }
}

impl ExactSizeIterator for CStrs {}

impl Args {
    /// Views `argv`.
    ///
    /// # Safety
    /// Every pointer of `argv` is non-null and points to NUL-terminated bytes that stay valid
    /// and unchanged for the rest of the process.
    pub(crate) const unsafe fn from_raw(argv: &'static [*const c_char]) -> Self {
        Self { argv }
    }

    /// `argc`.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.argv.len()
    }

    /// Whether there are no arguments at all (not even `argv[0]`; `execve` allows it).
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.argv.is_empty()
    }

    /// `argv[index]`.
    #[must_use]
    pub fn get(&self, index: usize) -> Option<&'static CStr> {
        self.argv.get(index).map(|&p| cstr(p))
    }

    /// Every argument, `argv[0]` first.
    #[must_use]
    pub fn iter(&self) -> CStrs {
        CStrs { inner: self.argv.iter() }
    }
}

impl IntoIterator for Args {
    type Item = &'static CStr;
    type IntoIter = CStrs;
    fn into_iter(self) -> CStrs {
        self.iter()
    }
}

impl fmt::Debug for Args {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Env {
    /// Views `envp` (without its terminating NULL).
    ///
    /// # Safety
    /// As for [`Args::from_raw`].
    pub(crate) const unsafe fn from_raw(envp: &'static [*const c_char]) -> Self {
        Self { envp }
    }

    /// How many entries there are.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.envp.len()
    }

    /// Whether the environment is empty.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.envp.is_empty()
    }

    /// Every entry, `NAME=value`, in order.
    #[must_use]
    pub fn iter(&self) -> CStrs {
        CStrs { inner: self.envp.iter() }
    }

    /// The value of the first entry named `name` (as `getenv` finds it), without the name and
    /// `=`; `None` when unset, or when `name` is empty or contains `=`.
    #[must_use]
    pub fn var(&self, name: &str) -> Option<&'static CStr> {
        let name = name.as_bytes();
        if name.is_empty() || name.contains(&b'=') {
            return None;
        }
        self.iter().find_map(|entry| {
            let bytes = entry.to_bytes_with_nul();
            let rest = bytes.strip_prefix(name)?.strip_prefix(b"=")?;
            CStr::from_bytes_with_nul(rest).ok()
        })
    }
}

impl IntoIterator for Env {
    type Item = &'static CStr;
    type IntoIter = CStrs;
    fn into_iter(self) -> CStrs {
        self.iter()
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Views the command line and environment of the initial process stack.
///
/// # Safety
/// `sp` points to a System V AMD64 initial process stack (ABI §3.4.1): `argc` (a `usize`),
/// then `argc` non-null pointers to NUL-terminated strings, a NULL, then the environment's
/// pointers to NUL-terminated strings and a NULL; all of it valid and unchanged for the rest of
/// the process.
pub(crate) unsafe fn from_initial_stack(sp: *const usize) -> (Args, Env) {
    // SAFETY: `sp` points to `argc` (the contract).
    let argc = unsafe { *sp };
    // SAFETY: `argv` starts one word above `argc`; pointers and `usize` have the same size and
    // alignment on x86_64.
    let argv = unsafe { sp.add(1) }.cast::<*const c_char>();
    // SAFETY: `argv[argc]` is the NULL after the arguments, `envp` starts after it; all within
    // the initial stack.
    let envp = unsafe { argv.add(argc + 1) };
    let mut envc = 0;
    // SAFETY: the environment is NULL-terminated, so every index up to and including the NULL
    // is inside it.
    while !unsafe { *envp.add(envc) }.is_null() {
        envc += 1;
    }
    // SAFETY: `argv[0..argc]` are initialised pointers inside the initial stack, valid forever.
    let argv = unsafe { core::slice::from_raw_parts(argv, argc) };
    // SAFETY: as for `argv`, `envp[0..envc]` (the NULL excluded).
    let envp = unsafe { core::slice::from_raw_parts(envp, envc) };
    // SAFETY: the strings' validity is the contract of this function.
    unsafe { (Args::from_raw(argv), Env::from_raw(envp)) }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::boxed::Box;
    use std::vec::Vec;

    use super::*;

    /// A fake initial stack; strings are leaked C-string literals.
    fn stack(args: &[&'static CStr], env: &[&'static CStr]) -> &'static [usize] {
        let mut words = Vec::new();
        words.push(args.len());
        words.extend(args.iter().map(|s| s.as_ptr() as usize));
        words.push(0);
        words.extend(env.iter().map(|s| s.as_ptr() as usize));
        words.push(0);
        words.extend([0, 0]); // AT_NULL auxiliary entry
        Box::leak(words.into_boxed_slice())
    }

    #[test]
    fn reads_the_initial_stack() {
        let sp = stack(
            &[c"/bin/image", c"/tmp/topo"],
            &[c"HOME=/root", c"HSA_OVERRIDE_GFX_VERSION=9.4.2", c"EMPTY=", c"HOME=/second"],
        );
        // SAFETY: `stack` builds the layout `from_initial_stack` requires, leaked forever.
        let (args, env) = unsafe { from_initial_stack(sp.as_ptr()) };
        assert_eq!(args.len(), 2);
        assert_eq!(args.get(0), Some(c"/bin/image"));
        assert_eq!(args.get(1), Some(c"/tmp/topo"));
        assert_eq!(args.get(2), None);
        assert_eq!(args.iter().next_back(), Some(c"/tmp/topo"));
        assert_eq!(env.len(), 4);
        assert_eq!(env.var("HOME"), Some(c"/root"));
        assert_eq!(env.var("HSA_OVERRIDE_GFX_VERSION"), Some(c"9.4.2"));
        assert_eq!(env.var("EMPTY"), Some(c""));
        assert_eq!(env.var("HOM"), None);
        assert_eq!(env.var(""), None);
        assert_eq!(env.var("HOME=/root"), None);
        assert_eq!(env.into_iter().count(), 4);
        assert_eq!(std::format!("{args:?}"), r#"["/bin/image", "/tmp/topo"]"#);
    }

    #[test]
    fn empty_command_line_and_environment() {
        let sp = stack(&[], &[]);
        // SAFETY: as above.
        let (args, env) = unsafe { from_initial_stack(sp.as_ptr()) };
        assert!(args.is_empty() && env.is_empty());
        assert_eq!(args.get(0), None);
        assert_eq!(env.var("PATH"), None);
    }
}
