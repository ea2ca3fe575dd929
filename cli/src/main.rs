//! `hsakmt`: the hsakmt-rs command-line tool.
#![forbid(unsafe_code)]

mod bench;
mod dispatch;
mod doctor;
mod embedded_kernels;
mod env;
mod histogram;
mod info;
mod info_derived;
mod inject;
mod output;
mod platform;
mod profiles;
mod run;
mod source;
mod text;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use hsakmt_hostmem::CountingAllocator;

/// The heap, counted: `hsakmt bench` proves its hot paths allocate nothing.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator::new();

/// Heap allocations the process has made so far.
pub(crate) fn allocations() -> u64 {
    ALLOCATOR.allocations()
}

/// User-mode amdkfd layer: topology, memory, queues, events — on real hardware or simulated.
#[derive(Debug, Parser)]
#[command(name = "hsakmt", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The end-to-end job: a control loop (host → device copy, barrier, compute, copy back,
    /// verify) on the best usable driver, with latency and throughput.
    Run(run::RunArgs),
    /// Run one kernel of a code object with arguments given on the command line and print
    /// its buffers afterwards.
    Dispatch(dispatch::DispatchArgs),
    /// Print the KFD topology (rocminfo-like report, JSON, or Graphviz).
    Info(info::InfoArgs),
    /// Run benchmarks; every figure is reported next to a reference measured in the same run.
    Bench(bench::BenchArgs),
    /// Diagnose why this machine cannot use its GPU, and say what to do.
    Doctor(doctor::DoctorArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage(&e),
    };
    let result = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Dispatch(args) => dispatch::run(&args),
        Command::Info(args) => info::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Doctor(args) => match doctor::run(&args) {
            Ok(true) => Ok(()),
            Ok(false) => return ExitCode::FAILURE,
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => e.exit(),
    }
}

/// Help and version go to stdout (a failed write is a failure), usage errors to stderr.
fn usage(e: &clap::Error) -> ExitCode {
    let text = e.render().to_string();
    if e.use_stderr() {
        note!("{}", text.trim_end());
        return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
    }
    match output::emit(&text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => f.exit(),
    }
}
