//! `cargo xtask`: workspace automation for hsakmt-rs (`cargo xtask` is an alias for
//! `cargo run --quiet --package xtask --`).

mod uapi_check;

use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <command> [args]

commands:
  uapi-check   prove core::uapi equal to uapi/kfd_ioctl.h and uapi/kfd_sysfs.h (needs `cc`)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, rest) = match args.split_first() {
        Some((command, rest)) => (command.as_str(), rest),
        None => ("help", &[][..]),
    };
    let result = match command {
        "uapi-check" => uapi_check::run(rest),
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
