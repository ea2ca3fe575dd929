//! The C library symbols the compiler emits calls to (`memcpy`, `memmove`, `memset`,
//! `memcmp`, `bcmp`) or core calls (`strlen`, from `CStr::from_ptr`), for images without libc.
//!
//! Each is written with an x86 string instruction in inline assembly: a plain Rust loop could
//! be recognised by the optimiser as the very idiom it implements and compiled into a call to
//! itself. `rep movsb`/`rep stosb` are the fast-string forms on every CPU since Ivy Bridge
//! (ERMS); the compare and scan forms are slower per byte but only meet short inputs here.
//!
//! With the `rt` feature they are exported under their C names; otherwise (unit tests) they are
//! ordinary functions, so they do not replace the C library's.
//!
//! The System V ABI guarantees the direction flag is clear at every call and inline assembly
//! may rely on that; the one block that sets it (backward `memmove`) clears it again.

use core::arch::asm;
use core::ffi::{c_char, c_int};

/// Copies `n` bytes from `src` to `dest`; the areas must not overlap. Returns `dest`.
///
/// # Safety
/// The C contract: `src` readable and `dest` writable for `n` bytes, not overlapping.
#[cfg_attr(feature = "rt", unsafe(no_mangle))]
pub(crate) unsafe extern "C" fn memcpy(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: `rep movsb` with DF clear copies exactly `rcx = n` bytes forward from `rsi` to
    // `rdi`, which the caller guarantees are valid and disjoint; it changes no flags.
    unsafe {
        asm!(
            "rep movsb",
            inout("rcx") n => _,
            inout("rdi") dest => _,
            inout("rsi") src => _,
            options(nostack, preserves_flags)
        );
    }
    dest
}

/// Copies `n` bytes from `src` to `dest`; the areas may overlap. Returns `dest`.
///
/// # Safety
/// The C contract: `src` readable and `dest` writable for `n` bytes.
#[cfg_attr(feature = "rt", unsafe(no_mangle))]
pub(crate) unsafe extern "C" fn memmove(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    if (dest as usize).wrapping_sub(src as usize) >= n {
        // `dest` is below `src` or at/after its end: copying forward never overwrites a byte
        // before it is read.
        // SAFETY: as for `memcpy`; a forward copy is correct for this overlap.
        unsafe {
            asm!(
                "rep movsb",
                inout("rcx") n => _,
                inout("rdi") dest => _,
                inout("rsi") src => _,
                options(nostack, preserves_flags)
            );
        }
    } else {
        // `dest` lies inside `(src, src + n)`, so `n > 0`: copy backward from the last byte.
        // SAFETY: with DF set, `rep movsb` copies `n` bytes from `src + n - 1` down to `src`
        // into `dest + n - 1` down to `dest` (all valid per the caller), each byte read before
        // the lower-addressed destination overwrites it; `cld` restores the clear DF.
        unsafe {
            asm!(
                "std",
                "rep movsb",
                "cld",
                inout("rcx") n => _,
                inout("rdi") dest.wrapping_add(n - 1) => _,
                inout("rsi") src.wrapping_add(n - 1) => _,
                options(nostack)
            );
        }
    }
    dest
}

/// Fills `n` bytes at `dest` with the low byte of `c`. Returns `dest`.
///
/// # Safety
/// The C contract: `dest` writable for `n` bytes.
#[cfg_attr(feature = "rt", unsafe(no_mangle))]
pub(crate) unsafe extern "C" fn memset(dest: *mut u8, c: c_int, n: usize) -> *mut u8 {
    // SAFETY: `rep stosb` with DF clear stores `al` into exactly `rcx = n` bytes forward from
    // `rdi`, which the caller guarantees are writable; it changes no flags. (`c as u8` is C's
    // conversion to `unsigned char`.)
    unsafe {
        asm!(
            "rep stosb",
            inout("rcx") n => _,
            inout("rdi") dest => _,
            in("al") c as u8,
            options(nostack, preserves_flags)
        );
    }
    dest
}

/// Compares `n` bytes: 0 when equal, else the difference of the first differing bytes (as
/// unsigned).
///
/// # Safety
/// The C contract: `a` and `b` readable for `n` bytes.
#[cfg_attr(feature = "rt", unsafe(no_mangle))]
pub(crate) unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> c_int {
    if n == 0 {
        return 0;
    }
    let (end_a, end_b): (*const u8, *const u8);
    // SAFETY: `repe cmpsb` with DF clear compares bytes at `rsi` and `rdi` forward, at most
    // `rcx = n` of them (readable per the caller), stopping after the first differing pair;
    // it only reads memory.
    unsafe {
        asm!(
            "repe cmpsb",
            inout("rcx") n => _,
            inout("rsi") a => end_a,
            inout("rdi") b => end_b,
            options(nostack, readonly)
        );
    }
    // Both pointers stopped one past the last pair compared: the first differing pair, or
    // the last pair when all were equal (then the difference is 0).
    // SAFETY: `n > 0` pairs were compared, so one byte back is the last pair, inside both
    // areas.
    let (x, y) = unsafe { (*end_a.sub(1), *end_b.sub(1)) };
    c_int::from(x) - c_int::from(y)
}

/// Compares `n` bytes: 0 when equal, non-zero otherwise.
///
/// # Safety
/// As for [`memcmp`].
#[cfg_attr(feature = "rt", unsafe(no_mangle))]
pub(crate) unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> c_int {
    // SAFETY: same contract.
    unsafe { memcmp(a, b, n) }
}

/// The number of bytes before the first NUL at `s`.
///
/// # Safety
/// The C contract: `s` points to a NUL-terminated byte string.
#[cfg_attr(feature = "rt", unsafe(no_mangle))]
pub(crate) unsafe extern "C" fn strlen(s: *const c_char) -> usize {
    let left: usize;
    // SAFETY: `repne scasb` with DF clear reads bytes forward from `rdi` until one equals
    // `al = 0`; the caller guarantees a NUL terminates the string, so it reads only inside
    // it. It only reads memory.
    unsafe {
        asm!(
            "repne scasb",
            inout("rcx") usize::MAX => left,
            inout("rdi") s => _,
            in("al") 0u8,
            options(nostack, readonly)
        );
    }
    // `rcx` counted down once per byte scanned, NUL included.
    !left - 1
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use super::*;

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + 3) as u8).collect()
    }

    #[test]
    fn copy_set_and_compare() {
        for n in [0, 1, 7, 8, 63, 64, 65, 1000] {
            let src = pattern(n);
            let mut dst = std::vec![0u8; n];
            // SAFETY: both buffers hold `n` bytes and are distinct.
            let r = unsafe { memcpy(dst.as_mut_ptr(), src.as_ptr(), n) };
            assert_eq!(r, dst.as_mut_ptr());
            assert_eq!(dst, src);
            // SAFETY: as above.
            assert_eq!(unsafe { memcmp(dst.as_ptr(), src.as_ptr(), n) }, 0);
            // SAFETY: `dst` holds `n` bytes.
            unsafe { memset(dst.as_mut_ptr(), 0x1ab, n) };
            assert!(dst.iter().all(|&b| b == 0xab));
        }
    }

    #[test]
    fn compare_orders_as_unsigned_bytes() {
        let a = [1u8, 2, 3, 0x80];
        let b = [1u8, 2, 4, 0x00];
        // SAFETY: all arrays hold 4 bytes.
        unsafe {
            assert!(memcmp(a.as_ptr(), b.as_ptr(), 4) < 0);
            assert!(memcmp(b.as_ptr(), a.as_ptr(), 4) > 0);
            assert_eq!(memcmp(a.as_ptr(), b.as_ptr(), 2), 0);
            // Difference in the last byte only; 0x80 > 0x00 as unsigned.
            assert!(memcmp(a.as_ptr(), [1u8, 2, 3, 0].as_ptr(), 4) > 0);
            assert_ne!(bcmp(a.as_ptr(), b.as_ptr(), 4), 0);
            assert_eq!(bcmp(a.as_ptr(), b.as_ptr(), 0), 0);
        }
    }

    #[test]
    fn move_handles_both_overlaps() {
        for n in [1usize, 5, 64, 300] {
            for shift in [1usize, 3, n] {
                let base = pattern(n + shift);
                // dest after src
                let mut buf = base.clone();
                // SAFETY: src `[0, n)` and dest `[shift, shift + n)` lie inside `buf`.
                unsafe { memmove(buf.as_mut_ptr().add(shift), buf.as_ptr(), n) };
                assert_eq!(&buf[shift..], &base[..n], "forward overlap n={n} shift={shift}");
                // dest before src
                let mut buf = base.clone();
                // SAFETY: src `[shift, shift + n)` and dest `[0, n)` lie inside `buf`.
                unsafe { memmove(buf.as_mut_ptr(), buf.as_ptr().add(shift), n) };
                assert_eq!(&buf[..n], &base[shift..], "backward overlap n={n} shift={shift}");
            }
        }
    }

    #[test]
    fn string_length() {
        // SAFETY: C-string literals are NUL-terminated.
        unsafe {
            assert_eq!(strlen(c"".as_ptr()), 0);
            assert_eq!(strlen(c"HSA_OVERRIDE_GFX_VERSION=9.4.2".as_ptr()), 30);
        }
    }
}
