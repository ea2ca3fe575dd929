//! The process entry point and the panic handler (only in `rt` builds: they would clash with
//! the C runtime and std).

use core::fmt::Write as _;

use super::{Args, Env};

// SAFETY: `entry!` defines this symbol with exactly this signature, and it is safe to call: a
// plain Rust function taking two `Copy` views. A program without `entry!` fails to link.
unsafe extern "Rust" {
    /// Defined by [`entry!`](crate::rt::entry) in the image, with exactly this signature.
    safe fn __hsakmt_rt_main(args: Args, env: Env) -> i32;
}

/// The kernel jumps here after `execve` with `rsp` pointing at `argc` (System V AMD64 ABI
/// §3.4.1: `argc`, `argv[0..argc]`, NULL, `envp[..]`, NULL, auxiliary vector), `rbp`
/// undefined and no return address. Clears `rbp` (the end of frame-pointer chains), passes
/// the initial `rsp` in `rdi`, aligns `rsp` to 16 bytes and calls [`start`], so `start` sees
/// the alignment the ABI promises at a call (SSE spills of aligned values fault otherwise).
// SAFETY: the body is only the assembly below, which sets up what the Rust calling convention
// needs (aligned stack, first argument in rdi) and never returns (`start` does not; `ud2`
// traps if it ever did).
#[unsafe(naked)]
// SAFETY: `_start` is the ELF entry symbol; the C runtime's start files, which also define it,
// are not linked (`-nostartfiles`), so this is the only definition.
#[unsafe(no_mangle)]
extern "C" fn _start() -> ! {
    core::arch::naked_asm!(
        "xor ebp, ebp",
        "mov rdi, rsp",
        "and rsp, -16",
        "call {start}",
        "ud2",
        start = sym start,
    )
}

/// Builds [`Args`] and [`Env`] from the initial stack, runs the image's main and exits with
/// its return value.
///
/// # Safety
/// Called once, by `_start`, with the stack pointer the kernel passed to the process.
unsafe extern "C" fn start(sp: *const usize) -> ! {
    // SAFETY: `sp` is the kernel's initial stack pointer (the contract of this function), whose
    // layout is what `from_initial_stack` requires; that memory is never freed or reused, as
    // the bottom frame (this one) never returns.
    let (args, env) = unsafe { super::args::from_initial_stack(sp) };
    super::exit(__hsakmt_rt_main(args, env))
}

/// Writes `panicked at FILE:LINE:COL:` and the message to stderr, then exits with 101 (the
/// code a Rust program exits with after a panic on the main thread).
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    let mut err = super::stderr();
    let _ = match info.location() {
        Some(l) => writeln!(err, "panicked at {}:{}:{}:", l.file(), l.line(), l.column()),
        None => writeln!(err, "panicked:"),
    };
    let _ = writeln!(err, "{}", info.message());
    let _ = err.flush();
    super::exit(101)
}
