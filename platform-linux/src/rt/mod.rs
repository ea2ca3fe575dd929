//! A freestanding runtime for `#![no_std]`, `#![no_main]`, no-libc static x86_64 Linux
//! images (cargo feature `rt`, which needs the `std` feature off).
//!
//! Everything an image needs besides the library itself, with all of its `unsafe` here (each
//! block with a `// SAFETY:` comment), so the image can `#![forbid(unsafe_code)]`:
//! - the process entry point `_start`: it clears the frame pointer, realigns the stack the
//!   kernel hands over and calls the function named with [`entry!`] with the command line
//!   ([`Args`]) and the environment ([`Env`]) as safe views of `&'static CStr`; the function's
//!   return value is the exit code;
//! - [`exit`] (the `exit_group` system call);
//! - buffered [`stdout`] / [`stderr`] writers implementing [`core::fmt::Write`] (no
//!   allocation) and the [`println!`], [`print!`], [`eprintln!`] macros;
//! - the symbols the compiler expects from a C library: `memcpy`, `memmove`, `memset`,
//!   `memcmp`, `bcmp`, `strlen` (string instructions in inline assembly, so the optimiser cannot
//!   turn them back into calls to themselves);
//! - a panic handler that prints the message and location to stderr and exits with 101.
//!
//! Building an image (what `cargo xtask size` does): name the host target explicitly so the
//! flags reach the image only, not build scripts, and link without start files:
//!
//! ```text
//! CARGO_ENCODED_RUSTFLAGS=$'-Clink-arg=-nostartfiles\x1f-Clink-arg=-static\x1f-Crelocation-model=static' \
//!   cargo build -p hsakmt-image --features image --profile min --target x86_64-unknown-linux-gnu
//! ```
//!
//! The profile must have `panic = "abort"`.
//!
//! ```ignore
//! #![no_std]
//! #![no_main]
//! #![forbid(unsafe_code)]
//!
//! use hsakmt_linux::rt::{self, Args, Env};
//!
//! rt::entry!(main);
//!
//! fn main(args: Args, env: Env) -> i32 {
//!     rt::println!("{} arguments, HOME={:?}", args.len(), env.var("HOME"));
//!     0
//! }
//! ```

mod args;
mod io;
mod mem;
#[cfg(feature = "rt")]
mod start;

pub use args::{Args, CStrs, Env};
pub use io::{Writer, stderr, stdout};

#[doc(inline)]
pub use crate::__rt_entry as entry;
#[doc(inline)]
pub use crate::__rt_eprintln as eprintln;
#[doc(inline)]
pub use crate::__rt_print as print;
#[doc(inline)]
pub use crate::__rt_println as println;

/// Ends the process (all threads) with `code`, without running destructors. The stdout and
/// stderr writers flush on every line and on drop, so output written before is not lost.
pub fn exit(code: i32) -> ! {
    // SAFETY: `exit_group` takes one integer argument, reads no memory of this process and
    // never returns, which `noreturn` states; the `syscall` instruction clobbers only rcx and
    // r11, and it does not return at all.
    unsafe {
        core::arch::asm!(
            "syscall",
            in("rax") linux_raw_sys::general::__NR_exit_group as usize,
            in("rdi") i64::from(code),
            options(noreturn, nostack)
        )
    }
}

/// Names the image's main function: `fn main(args: Args, env: Env) -> i32`, called once by
/// the runtime's `_start`; the value it returns is the process's exit code.
///
/// ```ignore
/// hsakmt_linux::rt::entry!(main);
/// fn main(args: hsakmt_linux::rt::Args, env: hsakmt_linux::rt::Env) -> i32 { 0 }
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! __rt_entry {
    ($main:path) => {
        /// The image's entry, called once by the runtime's `_start` (from `rt::entry!`).
        #[doc(hidden)]
        // The runtime declares this symbol with exactly this signature; `entry!` is the only
        // intended definition.
        #[unsafe(no_mangle)]
        pub fn __hsakmt_rt_main(args: $crate::rt::Args, env: $crate::rt::Env) -> i32 {
            let main: fn($crate::rt::Args, $crate::rt::Env) -> i32 = $main;
            main(args, env)
        }
    };
}

/// Prints to stdout (buffered per call, written before the macro returns); errors are ignored.
#[doc(hidden)]
#[macro_export]
macro_rules! __rt_print {
    ($($arg:tt)*) => {
        $crate::rt::__write_fmt($crate::rt::stdout(), ::core::format_args!($($arg)*))
    };
}

/// Prints a line to stdout (buffered per call, written before the macro returns); errors are
/// ignored.
#[doc(hidden)]
#[macro_export]
macro_rules! __rt_println {
    () => {
        $crate::rt::__write_fmt($crate::rt::stdout(), ::core::format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::rt::__write_fmt(
            $crate::rt::stdout(),
            ::core::format_args!("{}\n", ::core::format_args!($($arg)*)),
        )
    };
}

/// Prints a line to stderr (buffered per call, written before the macro returns); errors are
/// ignored.
#[doc(hidden)]
#[macro_export]
macro_rules! __rt_eprintln {
    () => {
        $crate::rt::__write_fmt($crate::rt::stderr(), ::core::format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::rt::__write_fmt(
            $crate::rt::stderr(),
            ::core::format_args!("{}\n", ::core::format_args!($($arg)*)),
        )
    };
}

/// Used by the print macros: formats into `w` and flushes it, ignoring errors (there is
/// nowhere left to report a failing stdout).
#[doc(hidden)]
pub fn __write_fmt(mut w: Writer, args: core::fmt::Arguments<'_>) {
    let _ = core::fmt::Write::write_fmt(&mut w, args);
    let _ = w.flush();
}
