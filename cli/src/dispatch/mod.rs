//! `hsakmt dispatch CODE_OBJECT KERNEL --grid .. --workgroup .. [--arg SPEC].. [--sim P]
//! [--json]`: runs one kernel of any code object, for people checking a kernel on a box.
//!
//! Everything the command line and the code object say is checked before a device is touched
//! (the file, the kernel, the geometry against the kernel's limits, every argument against the
//! kernel's metadata, sizes); the driver the policy picks (or the simulator with `--sim`)
//! must run code objects, and one of its GPU agents must be the object's target. Then: the
//! object is loaded for that agent, each buffer argument allocated in the agent's device
//! memory (host-visible VRAM; staged through host memory and the DMA engine when the CPU
//! cannot see it) and initialised, the arguments laid out in kernarg memory, the dispatch
//! submitted on a queue sized for the kernel's private segment and waited for; every buffer
//! is printed afterwards.

mod device;
mod spec;

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use hsakmt_core::code_object::CodeObject;
use serde::Serialize;

use crate::output::Failure;

use spec::{ArgSpec, MAX_GRID_ITEMS, MAX_SIM_GRID_ITEMS, check_against, geometry};

/// The largest code object file read, in bytes.
const MAX_CODE_OBJECT_BYTES: u64 = 64 << 20;
/// The largest kernel-argument segment laid out, in bytes (real kernels need a few hundred).
const MAX_KERNARG_BYTES: u32 = 64 << 10;

/// Arguments of `hsakmt dispatch`.
#[derive(Debug, Args)]
pub(crate) struct DispatchArgs {
    /// The code object: an AMDGPU HSA ELF file (code object v4, v5 or v6).
    code_object: PathBuf,
    /// The kernel to run (its source name).
    kernel: String,
    /// Grid size in work-items: X, X,Y or X,Y,Z.
    #[arg(long, value_name = "X[,Y[,Z]]")]
    grid: String,
    /// Work-group size: X, X,Y or X,Y,Z (at most 1024 work-items).
    #[arg(long, value_name = "X[,Y[,Z]]")]
    workgroup: String,
    /// A kernel argument, one per explicit argument in order: u32:V, i32:V, u64:V, i64:V,
    /// f32:V, f64:V, or buf:TYPE:COUNT[:zero|iota|fill=V] (TYPE u8 i8 u16 i16 u32 i32 u64 i64
    /// f32 f64) for a buffer in device memory passed by address.
    #[arg(long = "arg", value_name = "SPEC")]
    args: Vec<String>,
    /// Use the simulator with this embedded profile instead of detecting a driver.
    #[arg(long, value_name = "PROFILE")]
    sim: Option<String>,
    /// Seconds to wait for the kernel to complete.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    timeout: u64,
    /// Print one JSON object instead of the report.
    #[arg(long)]
    json: bool,
}

/// A buffer after the dispatch.
#[derive(Debug, Serialize)]
struct BufferReport {
    /// The explicit argument index.
    arg: usize,
    /// The argument's name in the metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(rename = "type")]
    ty: &'static str,
    count: u64,
    values: Vec<serde_json::Value>,
}

#[derive(Debug, Serialize)]
struct Report {
    driver: String,
    agent: String,
    kernel: String,
    time_ns: u64,
    buffers: Vec<BufferReport>,
}

/// Runs `hsakmt dispatch`.
///
/// # Errors
/// A message for anything wrong with the input, the device or the kernel's run; a failed
/// write of the report.
pub(crate) fn run(args: &DispatchArgs) -> Result<(), Failure> {
    let path = args.code_object.display();
    let len = std::fs::metadata(&args.code_object).map_err(|e| format!("{path}: {e}"))?.len();
    if len > MAX_CODE_OBJECT_BYTES {
        return Err(format!(
            "{path}: {len} bytes, more than the {} MiB a code object may have",
            MAX_CODE_OBJECT_BYTES >> 20
        )
        .into());
    }
    let bytes = std::fs::read(&args.code_object).map_err(|e| format!("{path}: {e}"))?;
    let object = CodeObject::parse(&bytes)
        .map_err(|e| format!("{path}: not a loadable code object: {e}"))?;
    let kernel = object.kernel(&args.kernel).map_err(|e| {
        let names: Vec<&str> = object.metadata().kernels().map(|k| k.name).collect();
        format!("{path}: {e} (kernels: {})", names.join(", "))
    })?;
    let specs: Vec<ArgSpec> =
        args.args.iter().map(|s| ArgSpec::parse(s)).collect::<Result<_, _>>()?;
    check_against(&kernel.metadata, &specs)?;
    // The geometry is checked for both limits now, and for the simulator's once it is chosen.
    let dispatch = geometry(&args.grid, &args.workgroup, MAX_GRID_ITEMS)?;
    let kernarg_size = kernel.metadata.kernarg_segment_size;
    if kernarg_size > MAX_KERNARG_BYTES {
        return Err(format!(
            "kernel {}: a kernel-argument segment of {kernarg_size} bytes, more than the {} KiB \
             hsakmt dispatch lays out",
            args.kernel,
            MAX_KERNARG_BYTES >> 10
        )
        .into());
    }
    // The kernel's own limits (work-group size, required sizes, uniform grids): a dry run.
    let values: Vec<_> = specs.iter().map(|s| s.value(0)).collect();
    let mut dry_run = vec![0u8; kernarg_size as usize];
    hsakmt_core::code_object::kernarg::write_kernargs(
        &kernel.metadata,
        &mut dry_run,
        &values,
        &dispatch,
    )
    .map_err(|e| format!("kernel {}: {e}", args.kernel))?;

    let devices = device::Devices::detect(args.sim.as_deref())?;
    let outcome = (|| {
        let (driver, agent) = devices.choose(&object)?;
        if driver.kind() == hsakmt_core::driver::DriverKind::Sim {
            geometry(&args.grid, &args.workgroup, MAX_SIM_GRID_ITEMS)?;
        }
        let timeout = Duration::from_secs(args.timeout.max(1));
        let run =
            device::run(&devices, driver, agent, &bytes, &args.kernel, &specs, &dispatch, timeout)?;
        let buffers = run
            .buffers
            .into_iter()
            .map(|(arg, bytes)| {
                let ArgSpec::Buffer { ty, count, .. } = specs[arg] else { unreachable!() };
                let name = kernel.metadata.args.explicit().nth(arg).and_then(|a| a.name);
                BufferReport {
                    arg,
                    name: name.map(str::to_string),
                    ty: ty.name(),
                    count,
                    values: bytes.chunks_exact(ty.size()).map(|c| ty.decode(c)).collect(),
                }
            })
            .collect();
        Ok::<_, String>(Report {
            driver: driver.kind().name().to_string(),
            agent: run.agent,
            kernel: args.kernel.clone(),
            time_ns: run.time_ns,
            buffers,
        })
    })();
    devices.shutdown();
    let report = outcome?;
    if args.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        crate::output::emit(&format!("{text}\n"))
    } else {
        print_report(&report)
    }
}

fn print_report(r: &Report) -> Result<(), Failure> {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "hsakmt dispatch: {} on {} ({}) in {:.1} us",
        r.kernel,
        r.agent,
        r.driver,
        r.time_ns as f64 / 1000.0
    );
    for b in &r.buffers {
        let values: Vec<String> = b
            .values
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect();
        let name = b.name.as_deref().map(|n| format!(" {n}")).unwrap_or_default();
        let _ = writeln!(s, "  arg {}{}: {} x {}", b.arg, name, b.ty, b.count);
        let _ = writeln!(s, "    [{}]", values.join(", "));
    }
    crate::output::emit(&s)
}
