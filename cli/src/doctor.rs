//! `hsakmt doctor`: why can't this machine use its GPU, and what to do about it.

use std::fmt::Write as _;
use std::path::Path;

use clap::Args;
use hsakmt_core::config::DEFAULT_MEMORY_OBJECTS;
use hsakmt_core::device::{Error as DeviceError, Kfd};
use hsakmt_core::error::Errno;
use hsakmt_core::platform::{AccessAdvice, OpenError};
use hsakmt_core::topology::{self, NodeKind};
use hsakmt_core::uapi::{KFD_IOCTL_MINOR_VERSION, since};
use hsakmt_linux::{BoxedMemory, KFD_TOPOLOGY_ROOT, LinuxPlatform, boxed_kfd};
use hsakmt_sim::{Profile, SimPlatform};
use serde::Serialize;

use crate::output::Failure;
use crate::platform::AnyPlatform;

/// Arguments of `hsakmt doctor`.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Diagnose the simulator instead of this machine's device (shows what a healthy machine
    /// reports); host checks (limits) still read this machine.
    #[arg(long, value_name = "PROFILE", num_args = 0..=1, default_missing_value = hsakmt_sim::DEFAULT_PROFILE)]
    sim: Option<String>,
    /// Print `{"healthy": bool, "checks": [...]}`.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Status {
    Ok,
    Warn,
    Fail,
}

#[derive(Debug, Serialize)]
struct Check {
    name: &'static str,
    status: Status,
    detail: String,
}

fn check(name: &'static str, status: Status, detail: impl Into<String>) -> Check {
    Check { name, status, detail: detail.into() }
}

/// KFD features by the minor version that introduced them (KERNEL-CONTRACT §3).
const FEATURES: &[(u32, &str)] = &[
    (since::SVM, "SVM API"),
    (since::AVAILABLE_MEMORY, "available-memory query"),
    (since::EXPORT_DMABUF, "dma-buf export"),
    (since::DEBUGGER, "runtime enable / debugger"),
    (since::EVENT_AGE, "event age"),
    (since::ALLOC_MEM_FLAGS_CONTIGUOUS, "contiguous VRAM"),
    (since::QUEUE_TYPE_SDMA_BY_ENG_ID, "SDMA queues by engine id"),
    (since::CREATE_PROCESS, "secondary processes"),
    (since::CREATE_QUEUE_METADATA_RING_SIZE, "queue metadata ring"),
    (since::PROFILER, "profiler control"),
];

pub(crate) fn run(args: &DoctorArgs) -> Result<bool, Failure> {
    if args.sim.as_deref() == Some(crate::profiles::HELP) {
        return crate::profiles::print().map(|()| true);
    }
    let mut checks = Vec::new();
    match &args.sim {
        Some(name) => {
            let profile = Profile::embedded(name)
                .map_err(|e| crate::text::escape(&e.to_string()).into_owned())?;
            checks.push(check("amdgpu", Status::Ok, format!("simulated (profile {name})")));
            let sim = SimPlatform::builder().profile(profile).inherit_env(true).build();
            device_checks(AnyPlatform::Sim(sim), &mut checks, false);
        }
        None => {
            checks.push(if Path::new("/sys/module/amdgpu").is_dir() {
                check("amdgpu", Status::Ok, "the amdgpu kernel module is loaded")
            } else {
                check(
                    "amdgpu",
                    Status::Fail,
                    "the amdgpu kernel module is not loaded: install the driver (amdgpu-dkms \
                     or your distribution's kernel) and run `sudo modprobe amdgpu`",
                )
            });
            device_checks(AnyPlatform::from(LinuxPlatform::new()), &mut checks, true);
        }
    }
    host_checks(&mut checks);

    let healthy = checks.iter().all(|c| c.status != Status::Fail);
    if args.json {
        let doc = serde_json::json!({ "healthy": healthy, "checks": checks });
        let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
        crate::output::emit(&format!("{text}\n"))?;
    } else {
        let mut s = String::new();
        for c in &checks {
            let tag = match c.status {
                Status::Ok => "ok  ",
                Status::Warn => "warn",
                Status::Fail => "FAIL",
            };
            let _ = writeln!(s, "{tag}  {:<16} {}", c.name, c.detail);
        }
        let _ = writeln!(
            s,
            "\n{}",
            if healthy {
                "This machine can use the GPU through hsakmt."
            } else {
                "This machine cannot use the GPU yet: fix the FAIL lines above."
            }
        );
        crate::output::emit(&s)?;
    }
    Ok(healthy)
}

fn device_checks(platform: AnyPlatform, checks: &mut Vec<Check>, real: bool) {
    // The facade's tables on the heap: no large stack needed.
    let kfd = boxed_kfd(platform, DEFAULT_MEMORY_OBJECTS);
    match kfd.open() {
        Ok(_) => {
            checks.push(check("/dev/kfd", Status::Ok, "opened read-write"));
            version_check(&kfd, checks);
            topology_checks(&kfd, checks, real);
            let _ = kfd.close();
        }
        Err(DeviceError::Open(e)) => {
            let status = Status::Fail;
            checks.push(check("/dev/kfd", status, e.to_string()));
            if matches!(e, OpenError::NotPresent) && real && !Path::new(KFD_TOPOLOGY_ROOT).is_dir()
            {
                checks.push(check(
                    "topology",
                    Status::Fail,
                    format!("{KFD_TOPOLOGY_ROOT} is absent: KFD is not running"),
                ));
            }
        }
        // The device opened but the library could not start on it (an incompatible kernel,
        // an unreadable topology, a malformed HSA_OVERRIDE_GFX_VERSION): it cannot be used.
        Err(e @ DeviceError::Topology(topology::Error::GfxOverride { .. })) => {
            checks.push(check("environment", Status::Fail, e.to_string()));
        }
        Err(e) => checks.push(check("/dev/kfd", Status::Fail, e.to_string())),
    }
}

fn version_check(kfd: &Kfd<AnyPlatform, BoxedMemory>, checks: &mut Vec<Check>) {
    let Ok(v) = kfd.version() else { return };
    let missing: Vec<String> = FEATURES
        .iter()
        .filter(|(minor, _)| !v.supports(*minor))
        .map(|(minor, name)| format!("{name} (1.{minor})"))
        .collect();
    checks.push(if missing.is_empty() {
        check(
            "kfd version",
            Status::Ok,
            format!(
                "{}.{} (this library knows up to 1.{KFD_IOCTL_MINOR_VERSION})",
                v.major, v.minor
            ),
        )
    } else {
        check(
            "kfd version",
            Status::Warn,
            format!(
                "{}.{}: the kernel lacks {}; a newer kernel or amdgpu-dkms adds them",
                v.major,
                v.minor,
                missing.join(", ")
            ),
        )
    });
}

fn topology_checks(kfd: &Kfd<AnyPlatform, BoxedMemory>, checks: &mut Vec<Check>, real: bool) {
    let Ok((nodes, gpus, warnings, hidden, minors)) = kfd.with_topology(|t| {
        let hidden = t.nodes().filter(|n| !n.is_accessible()).count();
        let minors: Vec<u32> = t
            .nodes()
            .filter(|n| n.kind() != NodeKind::Cpu)
            .filter_map(|n| n.drm_render_minor())
            .collect();
        (t.node_count(), t.gpu_count(), t.warnings().len(), hidden, minors)
    }) else {
        return;
    };
    checks.push(check(
        "topology",
        if warnings == 0 { Status::Ok } else { Status::Warn },
        format!("{nodes} nodes, {gpus} GPUs, {warnings} inconsistencies (see `hsakmt info`)"),
    ));
    checks.push(if hidden == 0 {
        check("device cgroup", Status::Ok, "no GPU is hidden from this process")
    } else {
        check(
            "device cgroup",
            Status::Warn,
            format!(
                "{hidden} GPU node(s) are hidden by the device cgroup (EPERM): this container \
                 was given only some /dev/dri/renderD* nodes"
            ),
        )
    });
    if gpus == 0 {
        checks.push(check("gpus", Status::Fail, "KFD reports no GPU (CPU-only topology)"));
    }
    if real {
        for minor in minors {
            checks.push(render_node_check(minor));
        }
    } else {
        checks.push(check("render nodes", Status::Ok, format!("{gpus} simulated")));
    }
}

fn render_node_check(minor: u32) -> Check {
    let path = format!("/dev/dri/renderD{minor}");
    match std::fs::OpenOptions::new().read(true).write(true).open(&path) {
        Ok(_) => check("render node", Status::Ok, format!("{path} opens read-write")),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            let st = rustix::fs::stat(path.as_str()).ok();
            let gid = st.as_ref().map(|s| s.st_gid);
            let group = gid.and_then(hsakmt_linux::device_node::group_name);
            let advice =
                AccessAdvice { gid, group: group.as_deref(), mode: st.map(|s| s.st_mode & 0o7777) };
            check("render node", Status::Fail, format!("{path}: permission denied; {advice}"))
        }
        Err(e) => {
            let why = e.raw_os_error().map_or_else(|| e.to_string(), |n| Errno(n).to_string());
            check("render node", Status::Fail, format!("{path}: {why}"))
        }
    }
}

fn host_checks(checks: &mut Vec<Check>) {
    match std::fs::read_to_string("/proc/sys/vm/max_map_count") {
        Ok(text) => {
            let n: u64 = text.trim().parse().unwrap_or(0);
            checks.push(if n >= 65_530 {
                check("vm.max_map_count", Status::Ok, format!("{n}"))
            } else {
                check(
                    "vm.max_map_count",
                    Status::Warn,
                    format!("{n}: below the kernel default 65530; many GPU allocations may fail (sysctl -w vm.max_map_count=262144)"),
                )
            });
        }
        Err(e) => checks.push(check("vm.max_map_count", Status::Warn, format!("unreadable: {e}"))),
    }
    let caps = effective_capabilities();
    let memlock = rustix::process::getrlimit(rustix::process::Resource::Memlock);
    checks.push(match memlock.current {
        // CAP_IPC_LOCK (root has it) lifts the limit for mlockall, as `hsakmt run` finds.
        _ if caps.is_some_and(|c| c & CAP_IPC_LOCK != 0) => check(
            "memlock limit",
            Status::Ok,
            "CAP_IPC_LOCK (root): mlockall is not bound by the memlock limit",
        ),
        None => {
            check("memlock limit", Status::Ok, "unlimited (mlockall for a realtime loop works)")
        }
        Some(n) if n >= 1 << 30 => check("memlock limit", Status::Ok, format!("{} MiB", n >> 20)),
        Some(n) => check(
            "memlock limit",
            Status::Warn,
            format!(
                "{} KiB: too small to lock a control loop's memory (mlockall); raise `memlock` in \
                 /etc/security/limits.conf or LimitMEMLOCK= in the service unit",
                n >> 10
            ),
        ),
    });
    let rtprio = rustix::process::getrlimit(rustix::process::Resource::Rtprio);
    checks.push(match rtprio.current {
        _ if caps.is_some_and(|c| c & CAP_SYS_NICE != 0) => {
            check("realtime", Status::Ok, "CAP_SYS_NICE (root): SCHED_FIFO is permitted")
        }
        Some(0) => check(
            "realtime",
            Status::Warn,
            "RLIMIT_RTPRIO is 0: the loop cannot use SCHED_FIFO; grant `rtprio` in \
             /etc/security/limits.conf, LimitRTPRIO= in the unit, or CAP_SYS_NICE",
        ),
        Some(n) => check("realtime", Status::Ok, format!("SCHED_FIFO up to priority {n}")),
        None => check("realtime", Status::Ok, "RLIMIT_RTPRIO unlimited"),
    });
}

/// `CAP_IPC_LOCK` (bit 14): locking memory beyond `RLIMIT_MEMLOCK`.
const CAP_IPC_LOCK: u64 = 1 << 14;
/// `CAP_SYS_NICE` (bit 23): realtime scheduling beyond `RLIMIT_RTPRIO`.
const CAP_SYS_NICE: u64 = 1 << 23;

/// The effective capability set of this process (`CapEff` of `/proc/self/status`).
fn effective_capabilities() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_cap_eff(&status)
}

fn parse_cap_eff(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(line.trim(), 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_are_read_from_cap_eff() {
        let status = "Name:\thsakmt\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        let caps = parse_cap_eff(status).unwrap();
        assert_ne!(caps & CAP_IPC_LOCK, 0);
        assert_ne!(caps & CAP_SYS_NICE, 0);
        assert_eq!(parse_cap_eff("CapEff:\t0000000000004000\n"), Some(CAP_IPC_LOCK));
        assert_eq!(parse_cap_eff("CapEff: zz\n"), None);
        assert_eq!(parse_cap_eff(""), None);
    }

    /// With CAP_IPC_LOCK (root) `hsakmt run` locks its memory whatever the limit, so doctor
    /// does not warn about the limit (checked where the test runs with the capability).
    #[test]
    fn memlock_verdict_agrees_with_mlockall() {
        let mut checks = Vec::new();
        host_checks(&mut checks);
        let memlock = checks.iter().find(|c| c.name == "memlock limit").unwrap();
        if effective_capabilities().is_some_and(|c| c & CAP_IPC_LOCK != 0) {
            assert_eq!(memlock.status, Status::Ok, "{}", memlock.detail);
            assert!(memlock.detail.contains("CAP_IPC_LOCK"), "{}", memlock.detail);
        }
    }
}
