//! `hsakmt doctor`: on the simulator every device check passes; on a machine without the
//! driver the device checks fail with instructions and the exit status says so.

use std::process::Command;

use serde_json::Value;

fn doctor(args: &[&str]) -> (Value, bool) {
    let out = Command::new(env!("CARGO_BIN_EXE_hsakmt"))
        .arg("doctor")
        .args(args)
        .arg("--json")
        .output()
        .expect("run hsakmt doctor");
    (serde_json::from_slice(&out.stdout).expect("JSON"), out.status.success())
}

fn status<'a>(doc: &'a Value, name: &str) -> &'a str {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("check {name} in {doc}"))["status"]
        .as_str()
        .unwrap()
}

#[test]
fn simulator_is_a_healthy_machine() {
    let (doc, ok) = doctor(&["--sim"]);
    assert!(ok, "{doc}");
    assert_eq!(doc["healthy"], true);
    for name in ["amdgpu", "/dev/kfd", "kfd version", "topology", "device cgroup"] {
        assert_eq!(status(&doc, name), "ok", "{name}: {doc}");
    }
    // Host limits are real checks of this machine: present with a verdict.
    for name in ["vm.max_map_count", "memlock limit", "realtime"] {
        assert!(["ok", "warn", "fail"].contains(&status(&doc, name)));
    }
}

#[test]
fn a_cpu_only_profile_has_no_gpu() {
    let (doc, ok) = doctor(&["--sim", "cpu-only-virtual-crat-2021"]);
    assert!(!ok);
    assert_eq!(status(&doc, "gpus"), "fail");
}

#[test]
fn this_machine_reports_the_device_state() {
    let (doc, ok) = doctor(&[]);
    let kfd = status(&doc, "/dev/kfd");
    if std::path::Path::new("/dev/kfd").exists() {
        assert!(["ok", "fail", "warn"].contains(&kfd));
    } else {
        assert_eq!(kfd, "fail");
        assert!(!ok, "no device means not healthy");
    }
}
