//! `hsakmt info` end to end: every value of every capture file appears under its key in
//! `--json`; `--sysfs` on a written-out tree gives the same document as `--sim`; `--dot` draws
//! every link.

use std::process::Command;

use hsakmt_core::platform::{EntryKind, SysfsFile};
use hsakmt_sim::{Profile, profile_names};
use serde_json::Value;

fn hsakmt(args: &[&str]) -> (String, String, bool) {
    let out = Command::new(env!("CARGO_BIN_EXE_hsakmt")).args(args).output().expect("run hsakmt");
    (
        String::from_utf8(out.stdout).expect("utf-8 stdout"),
        String::from_utf8(out.stderr).expect("utf-8 stderr"),
        out.status.success(),
    )
}

fn json(args: &[&str]) -> Value {
    let (out, err, ok) = hsakmt(args);
    assert!(ok, "hsakmt {args:?} failed: {err}");
    serde_json::from_str(&out).expect("valid JSON")
}

/// The node of sysfs directory `n`.
fn node(doc: &Value, n: u32) -> &Value {
    doc["nodes"].as_array().unwrap().iter().find(|v| v["sysfs_node"] == n).expect("node in JSON")
}

/// `doc` without what only an opened device reports (`device`, each GPU's `heaps` and
/// `num_memory_banks`; the MMIO page's address differs between runs).
fn without_device(mut doc: Value) -> Value {
    doc.as_object_mut().unwrap().remove("device");
    for n in doc["nodes"].as_array_mut().unwrap() {
        let n = n.as_object_mut().unwrap();
        n.remove("heaps");
        n.remove("num_memory_banks");
    }
    doc
}

fn expect_value(obj: &Value, key: &str, value: &str, what: &str) {
    if key == "sibling_map" {
        let want: Vec<Value> =
            value.split(',').map(|b| Value::from(b.parse::<u64>().unwrap())).collect();
        assert_eq!(obj[key], Value::Array(want), "{what} {key}");
    } else {
        assert_eq!(obj[key], Value::from(value.parse::<u64>().unwrap()), "{what} {key}");
    }
}

#[test]
fn every_capture_value_is_in_the_json() {
    let mut checked = 0;
    for name in profile_names() {
        let doc = json(&["info", "--sim", name, "--json"]);
        let profile = Profile::embedded(name).unwrap();
        assert_eq!(doc["system"]["num_nodes"], profile.node_ids().len());
        for (file, bytes) in profile.files() {
            let text = String::from_utf8_lossy(bytes);
            let what = format!("{name} {file:?}");
            let obj = match file {
                SysfsFile::GenerationId => {
                    if let Ok(v) = text.trim().parse::<u64>() {
                        assert_eq!(doc["system"]["generation_id"], v, "{what}");
                        checked += 1;
                    }
                    continue;
                }
                SysfsFile::GpuId(n) => {
                    if let Ok(v) = text.trim().parse::<u64>() {
                        assert_eq!(node(&doc, n)["gpu_id"], v, "{what}");
                        checked += 1;
                    }
                    continue;
                }
                SysfsFile::Name(n) => {
                    if !bytes.is_empty() {
                        assert_eq!(node(&doc, n)["name"], text.trim_end_matches('\n'), "{what}");
                        checked += 1;
                    }
                    continue;
                }
                SysfsFile::SystemProperties => &doc["system"],
                SysfsFile::NodeProperties(n) => node(&doc, n),
                SysfsFile::EntryProperties { node: n, kind, index } => {
                    let list = match kind {
                        EntryKind::MemBank => "mem_banks",
                        EntryKind::Cache => "caches",
                        EntryKind::IoLink => "io_links",
                        EntryKind::P2pLink => "p2p_links",
                    };
                    let entries = node(&doc, n)[list].as_array().unwrap();
                    // Entries are listed in directory order; index them by position.
                    let pos = profile
                        .dir(hsakmt_core::platform::SysfsDir::Entries { node: n, kind })
                        .iter()
                        .position(|i| *i == index)
                        .unwrap();
                    &entries[pos]
                }
            };
            for line in text.lines() {
                let Some((k, v)) = line.split_once(' ') else { continue };
                expect_value(obj, k, v.trim(), &what);
                checked += 1;
            }
        }
    }
    assert!(checked > 30_000, "only {checked} values checked");
}

#[test]
fn sysfs_dir_reads_the_same_tree_as_the_simulator() {
    let dir = std::env::temp_dir().join(format!("hsakmt-cli-info-{}", std::process::id()));
    let profile = Profile::embedded("mi25-vega10-rocm18").unwrap();
    profile.write_to(&dir).unwrap();
    let from_dir = json(&["info", "--sysfs", dir.to_str().unwrap(), "--json"]);
    let from_sim = json(&["info", "--sim", "mi25-vega10-rocm18", "--json"]);
    std::fs::remove_dir_all(&dir).unwrap();
    // A captured tree has no device: no heaps.
    assert_eq!(from_dir.get("device"), None);
    assert!(from_sim["device"]["opened"].as_bool().unwrap());
    assert_eq!(from_dir, without_device(from_sim.clone()));
    assert_eq!(node(&from_sim, 1)["gfx"], "gfx900");
    assert_eq!(node(&from_sim, 1)["kind"], "gpu");
    assert_eq!(node(&from_sim, 0)["kind"], "cpu");
}

#[test]
fn report_dot_and_errors() {
    let (out, _, ok) = hsakmt(&["info", "--sim", "mi210-8gpu-2hive"]);
    assert!(ok);
    assert!(out.contains("gfx90a") && out.contains("warning"), "{out}");
    let (dot, _, ok) = hsakmt(&["info", "--sim", "mi210-8gpu-2hive", "--dot"]);
    assert!(ok);
    // 42 io_links + 48 p2p_links in the capture.
    assert_eq!(dot.matches(" -> ").count(), 90, "{dot}");
    assert!(dot.contains("Xgmi w15"));
    let (_, err, ok) = hsakmt(&["info", "--sim", "no-such-profile"]);
    assert!(!ok && err.contains("mi308x-8gpu-cpx"), "{err}");
    let (_, err, ok) = hsakmt(&["info", "--sysfs", "/nonexistent/dir"]);
    assert!(!ok && err.contains("/nonexistent/dir: ENOENT (no such file or directory)"), "{err}");
}

#[test]
fn malformed_gfx_override_is_an_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_hsakmt"))
        .args(["info", "--sim", "mi25-vega10-rocm18"])
        .env("HSA_OVERRIDE_GFX_VERSION", "nine")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("HSA_OVERRIDE_GFX_VERSION"));
    let out = Command::new(env!("CARGO_BIN_EXE_hsakmt"))
        .args(["info", "--sim", "mi25-vega10-rocm18", "--json"])
        .env("HSA_OVERRIDE_GFX_VERSION", "9.0.6")
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(node(&doc, 1)["gfx"], "gfx900");
    assert_eq!(node(&doc, 1)["gfx_override"], "gfx906");
}
