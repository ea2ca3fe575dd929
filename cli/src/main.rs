//! `hsakmt`: the hsakmt-rs command-line tool.

mod bench;
mod info;
mod source;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// User-mode amdkfd layer: topology, memory, queues, events — on real hardware or simulated.
#[derive(Debug, Parser)]
#[command(name = "hsakmt", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the KFD topology (rocminfo-like report, JSON, or Graphviz).
    Info(info::InfoArgs),
    /// Run benchmarks; every figure is reported next to a reference measured in the same run.
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info(args) => info::run(&args),
        Command::Bench(args) => bench::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hsakmt: {e}");
            ExitCode::FAILURE
        }
    }
}
