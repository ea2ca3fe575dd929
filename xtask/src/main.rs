//! `cargo xtask`: workspace automation for hsakmt-rs (`cargo xtask` is an alias for
//! `cargo run --quiet --package xtask --`).
#![forbid(unsafe_code)]

mod bench;
mod c_header;
mod c_program;
mod capi_build;
mod capi_check;
mod capi_test;
mod ci;
mod elf;
mod fuzz;
mod fuzz_seeds;
mod image_test;
mod kernels;
mod size;
mod tidy;
mod tsan;
mod uapi_check;

use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo xtask <command> [args]

commands:
  ci           the whole test suite: fmt, tidy, clippy -D warnings, tests, fuzz, uapi-check,
               capi-check, capi-test, kernels --check, image-test, size, docs
  tidy         the structural rules over the sources (crate and module boundaries, unsafe
               and its SAFETY comments, file length, capacities, stack sizes); lists every
               failure as path:line: [rule] message (rules and exceptions:
               xtask/src/tidy/policy.rs)
  bench [ARGS] release build of `hsakmt bench ARGS` (e.g. `topology --json`); with no ARGS,
               `hsakmt bench --check --json` written to BENCHMARKS.md (fails on a missed goal)
  fuzz [TARGET...] [--seconds N] [--ci] [--write-seeds]
               run cargo-fuzz targets, N s each (default 60; --ci: 10 s each from the seeds;
               nightly; targets: topology apertures event_data dmabuf_info aql sdma queue_sizing
               code_object kernel_replies cp_pm4 isa);
               --write-seeds regenerates core/fuzz/seeds
  size [--json] build the no-libc image and the static `hsakmt`, report their sizes and the
               topology snapshot's (goals: image <= 128 KiB, hsakmt <= 2 MiB)
  image-test   build the image and run it against every simulator profile
  kernels [--check]
               compile kernels/cl/*.cl with clang-19 into kernels/objects (code objects for
               gfx900 gfx90a gfx942 gfx1030 gfx1100 gfx1201) and kernels/src/objects.rs;
               --check rebuilds in a temporary directory and compares byte for byte
  tsan [--seconds N]
               the thread stress test (N s, default 3) and the core unit tests under
               ThreadSanitizer (nightly with rust-src; installs the component when missing)
  uapi-check   prove core::uapi equal to uapi/kfd_ioctl.h and uapi/kfd_sysfs.h (needs `cc`)
  capi [--out DIR]
               build libhsakmt.so.1, libhsakmt.a, libdtif.so, headers, pkg-config and CMake
               files into DIR (default target/capi)
  capi-check [--keep]
               prove hsakmt-capi's types, functions and version scripts equal to the pinned
               capi/include/hsakmt headers (needs `cc`)
  capi-test    build the C library and run its C test program (linked against the .so and the
               .a) over every simulator profile, plus the DTIF dlopen test (needs `cc`)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, rest) = match args.split_first() {
        Some((command, rest)) => (command.as_str(), rest),
        None => ("help", &[][..]),
    };
    let result = match command {
        "ci" => ci::ci(),
        "tidy" => tidy::run(rest),
        "bench" => bench::bench(rest),
        "fuzz" => fuzz::fuzz(rest),
        "size" => size::size(rest),
        "image-test" => image_test::image_test(rest),
        "kernels" => kernels::kernels(rest),
        "tsan" => tsan::tsan(rest),
        "uapi-check" => uapi_check::run(rest),
        "capi" => capi_build::run(rest),
        "capi-check" => capi_check::run(rest),
        "capi-test" => capi_test::run(rest),
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown command `{other}`\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// `cargo` as invoked by the user (respects `$CARGO`), run from the workspace root.
pub(crate) fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(workspace_root());
    cmd
}

/// The workspace root (the parent of this crate's manifest directory).
pub(crate) fn workspace_root() -> std::path::PathBuf {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// Runs a command to completion, failing on a non-zero exit.
pub(crate) fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("{cmd:?} failed: {status}")) }
}
