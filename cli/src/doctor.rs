//! `hsakmt doctor`: why can't this machine use its GPU, and what to do about it.

use std::fmt::Write as _;
use std::path::Path;

use clap::Args;
use hsakmt_core::config::DEFAULT_MEMORY_OBJECTS;
use hsakmt_core::device::{Error as DeviceError, Kfd};
use hsakmt_core::error::Error as _;
use hsakmt_core::platform::{OpenError, Platform};
use hsakmt_core::topology::NodeKind;
use hsakmt_core::uapi::{KFD_IOCTL_MINOR_VERSION, since};
use hsakmt_linux::{BoxedMemory, KFD_TOPOLOGY_ROOT, LinuxPlatform, boxed_kfd};
use hsakmt_sim::{Profile, SimPlatform};
use serde::Serialize;

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

pub(crate) fn run(args: &DoctorArgs) -> Result<bool, String> {
    let mut checks = Vec::new();
    match &args.sim {
        Some(name) => {
            let profile = Profile::embedded(name).map_err(|e| e.to_string())?;
            checks.push(check("amdgpu", Status::Ok, format!("simulated (profile {name})")));
            let sim = SimPlatform::builder().profile(profile).inherit_env(true).build();
            device_checks(sim, &mut checks, false);
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
            device_checks(LinuxPlatform::new(), &mut checks, true);
        }
    }
    host_checks(&mut checks);

    let healthy = checks.iter().all(|c| c.status != Status::Fail);
    if args.json {
        let doc = serde_json::json!({ "healthy": healthy, "checks": checks });
        let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
        crate::output::emit(&format!("{text}\n"));
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
        crate::output::emit(&s);
    }
    Ok(healthy)
}

fn device_checks<P: Platform>(platform: P, checks: &mut Vec<Check>, real: bool) {
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
        Err(e) => {
            let status = if e.kind() == hsakmt_core::error::ErrorKind::DriverMismatch {
                Status::Fail
            } else {
                Status::Warn
            };
            checks.push(check("/dev/kfd", status, e.to_string()));
        }
    }
}

fn version_check<P: Platform>(kfd: &Kfd<P, BoxedMemory>, checks: &mut Vec<Check>) {
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

fn topology_checks<P: Platform>(kfd: &Kfd<P, BoxedMemory>, checks: &mut Vec<Check>, real: bool) {
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
            let gid = rustix::fs::stat(path.as_str()).ok().map(|s| s.st_gid);
            let group = gid.and_then(hsakmt_linux::device_node::group_name);
            let who = group.map_or_else(
                || gid.map_or("its group".into(), |g| format!("group id {g}")),
                |g| format!("group '{g}' (sudo usermod -aG {g} $USER)"),
            );
            check("render node", Status::Fail, format!("{path}: permission denied; join {who}"))
        }
        Err(e) => check("render node", Status::Fail, format!("{path}: {e}")),
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
    let memlock = rustix::process::getrlimit(rustix::process::Resource::Memlock);
    checks.push(match memlock.current {
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
    let root = rustix::process::geteuid().is_root();
    checks.push(match rtprio.current {
        _ if root => check("realtime", Status::Ok, "running as root: SCHED_FIFO is permitted"),
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
