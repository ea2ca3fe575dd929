//! `rt-smoke [panic | exit | ARG...]`: exercises the no-libc runtime of `hsakmt_linux::rt` for
//! `cargo xtask image-test`: the command line (bytes, not necessarily UTF-8), the environment,
//! writes longer than the writer's buffer, overlapping copies, `exit`, and the panic handler
//! (message on stderr, exit code 101).
#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use core::ffi::CStr;
use core::fmt::Write as _;

use hsakmt_linux::rt::{self, Args, Env, println};

rt::entry!(main);

fn main(args: Args, env: Env) -> i32 {
    match args.get(1).map(CStr::to_bytes) {
        Some(b"panic") => panic!("smoke panic with {} arguments", args.len()),
        Some(b"exit") => rt::exit(7),
        _ => {}
    }
    println!("argc {}", args.len());
    for (i, a) in args.iter().enumerate() {
        println!("arg {i}: {} bytes {:?}", a.count_bytes(), a);
    }
    println!("envc {}", env.len());
    match env.var("SMOKE") {
        Some(v) => println!("SMOKE={v:?}"),
        None => println!("SMOKE unset"),
    }
    // One write larger than the writer's buffer, in pieces, ending in a newline.
    let mut out = rt::stdout();
    let _ = out.write_str("long ");
    for _ in 0..40 {
        let _ = out.write_str("0123456789");
    }
    let _ = out.write_str("\n");
    let _ = out.flush();
    // Overlapping copies in both directions (`memmove` forward and backward).
    let mut buf = *b"abcdefghij";
    buf.copy_within(0..8, 2);
    let mut back = *b"abcdefghij";
    back.copy_within(2..10, 0);
    println!("moved {:?} {:?}", core::str::from_utf8(&buf), core::str::from_utf8(&back));
    0
}
