//! The command-line tool under careless or hostile input (issue 16): every case ends in a clear
//! error or a correct answer — never a panic, a hang, or a success that did not happen.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use hsakmt_sim::Profile;
use serde_json::Value;

/// The status Rust gives a panicking `main`.
const PANIC_STATUS: i32 = 101;

fn cmd(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hsakmt"));
    c.args(args).env_remove("HSAKMT_DRIVER").env_remove("HSA_OVERRIDE_GFX_VERSION");
    c
}

fn output(c: &mut Command) -> Output {
    c.output().expect("run hsakmt")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `c` and fails the test if it does not end within `limit` (killing it).
fn within(c: &mut Command, limit: Duration) -> Output {
    let mut child = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn hsakmt");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("hsakmt did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// Fails unless the run failed (not by panicking) with `want` on stderr.
fn fails_with(out: &Output, want: &str) -> String {
    let err = text(&out.stderr);
    assert!(!out.status.success(), "must fail: {err}");
    assert_ne!(out.status.code(), Some(PANIC_STATUS), "panicked: {err}");
    assert!(err.contains(want), "want {want:?} in: {err}");
    err
}

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("hsakmt-hostile-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn str(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A written-out profile to play with.
fn tree(tag: &str, profile: &str) -> TempDir {
    let dir = TempDir::new(tag);
    Profile::embedded(profile).unwrap().write_to(dir.path()).unwrap();
    dir
}

fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .expect("mkfifo");
}

// --- Panics, crashes, hangs -------------------------------------------------------------------

#[test]
fn iteration_counts_beyond_the_limit_are_refused_up_front() {
    for n in ["18446744073709551615", "4294967296", "1000000001"] {
        let out = within(&mut cmd(&["run", "--iterations", n]), Duration::from_secs(20));
        fails_with(&out, &format!("--iterations {n}: at most 1000000000 per run"));
    }
    let out = output(&mut cmd(&["run", "--iterations", "0"]));
    fails_with(&out, "at least 1");
}

#[test]
fn scale_is_validated_with_its_bounds() {
    for bad in ["inf", "nan", "1e6", "0", "-2"] {
        let arg = format!("--scale={bad}");
        let out = within(&mut cmd(&["bench", "memory", &arg]), Duration::from_secs(20));
        fails_with(&out, "from 0.001 to 100");
    }
}

#[test]
fn a_stderr_that_cannot_be_written_never_panics() {
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    // Success with notes on stderr (the simulator fallback note of `info`): still success.
    let out = output(cmd(&["info", "--sim", "mi25-vega10-rocm18"]).stderr(full()));
    assert!(out.status.success(), "{:?}", out.status);
    let out = output(cmd(&["run", "--iterations", "3"]).stderr(full()));
    assert!(out.status.success(), "{:?}", out.status);
    // Failure: the message is lost, the status is not.
    let out = output(cmd(&["run", "--iterations", "3", "--block", "6"]).stderr(full()));
    assert_eq!(out.status.code(), Some(1));
    let out = output(cmd(&["info", "--no-such-flag"]).stderr(full()));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_stdout_that_cannot_be_written_fails_the_command() {
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    for args in [
        &["info", "--sim", "mi25-vega10-rocm18"][..],
        &["info", "--sim", "mi25-vega10-rocm18", "--json"],
        &["run", "--iterations", "3", "--json"],
        &["doctor", "--sim"],
        &["run", "--sim", "help"],
        &["--help"],
    ] {
        let out = output(cmd(args).stdout(full()));
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains("ENOSPC (no space left on device)"), "{args:?}");
    }
}

#[test]
fn a_closed_pipe_ends_the_output_quietly_with_the_sigpipe_status() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = output(cmd(&["info", "--sim", "mi25-vega10-rocm18"]).stdout(writer));
    assert_eq!(out.status.code(), Some(141));
    assert_eq!(text(&out.stderr), "", "quiet");
}

#[test]
fn a_fifo_in_the_topology_tree_is_an_error_naming_it_not_a_hang() {
    for file in ["generation_id", "nodes/1/properties", "nodes/1/mem_banks/0/properties"] {
        let dir = tree("fifo", "mi25-vega10-rocm18");
        mkfifo(&dir.path().join(file));
        let out = within(&mut cmd(&["info", "--sysfs", dir.str()]), Duration::from_secs(20));
        let report = text(&out.stdout);
        assert!(out.status.success(), "{file}: {}", text(&out.stderr));
        assert!(
            report.contains(&format!("{file}: read failed: not a regular file")),
            "{file}: {report}"
        );
    }
    // A directory where a file should be; a symbolic link that points at itself.
    let dir = tree("dir", "mi25-vega10-rocm18");
    std::fs::remove_file(dir.path().join("nodes/1/properties")).unwrap();
    std::fs::create_dir(dir.path().join("nodes/1/properties")).unwrap();
    std::fs::remove_file(dir.path().join("nodes/1/name")).unwrap();
    std::os::unix::fs::symlink("name", dir.path().join("nodes/1/name")).unwrap();
    let out = within(&mut cmd(&["info", "--sysfs", dir.str()]), Duration::from_secs(20));
    let report = text(&out.stdout);
    assert!(
        report.contains("nodes/1/properties: read failed: EISDIR (is a directory)"),
        "{report}"
    );
    assert!(
        report.contains("nodes/1/name: read failed: ELOOP (too many levels of symbolic links)"),
        "every errno is named: {report}"
    );
}

// --- Wrong answers that look right --------------------------------------------------------------

#[test]
fn a_fault_that_makes_the_policy_fall_back_fails_the_run() {
    for ioctl in ["GET_VERSION", "ACQUIRE_VM", "GET_PROCESS_APERTURES_NEW", "SET_MEMORY_POLICY"] {
        let spec = format!("{ioctl}=EIO@1");
        let out = output(&mut cmd(&["run", "--iterations", "3", "--inject", &spec]));
        fails_with(&out, &format!("--inject {spec}: the fault fired while the simulator"));
        assert!(text(&out.stderr).contains("fell back to `host`"));
        assert!(out.stdout.is_empty(), "no report of a run that did not happen");
    }
}

#[test]
fn an_injected_fault_fires_on_the_same_call_every_run() {
    for _ in 0..5 {
        let out = output(&mut cmd(&["run", "--iterations", "20", "--inject", "WAIT_EVENTS=EIO@2"]));
        fails_with(&out, "iteration 1: wait: AMDKFD_IOC_WAIT_EVENTS failed: EIO");
    }
    // The loop waits once per iteration: the 20th wait is the last.
    let out = output(&mut cmd(&["run", "--iterations", "20", "--inject", "WAIT_EVENTS=EIO@20"]));
    fails_with(&out, "iteration 19: wait");
    let out = output(&mut cmd(&["run", "--iterations", "20", "--inject", "WAIT_EVENTS=EIO@21"]));
    fails_with(
        &out,
        "WAIT_EVENTS=EIO@21: never fired: the run issued 20 WAIT_EVENTS call(s), not 21",
    );
}

#[test]
fn a_fault_that_never_fires_fails_the_run() {
    let out = output(&mut cmd(&[
        "run",
        "--iterations",
        "3",
        "--json",
        "--inject",
        "SET_TRAP_HANDLER=EIO@1",
    ]));
    fails_with(&out, "SET_TRAP_HANDLER=EIO@1: never fired: the run issued 0 SET_TRAP_HANDLER");
    // The report of what did run is still printed.
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["verified"], true);
}

/// Every call of every teardown ioctl failed in turn: the run never succeeds silently — it
/// fails naming the failure, or says the library worked around the fault.
#[test]
fn teardown_failures_are_reported() {
    for ioctl in ["DESTROY_QUEUE", "FREE_MEMORY_OF_GPU", "UNMAP_MEMORY_FROM_GPU", "DESTROY_EVENT"] {
        let mut n = 1;
        loop {
            let spec = format!("{ioctl}=EIO@{n}");
            let out = output(&mut cmd(&["run", "--iterations", "2", "--json", "--inject", &spec]));
            let err = text(&out.stderr);
            assert_ne!(out.status.code(), Some(PANIC_STATUS), "{spec}: {err}");
            if err.contains("never fired") {
                assert!(!out.status.success());
                break;
            }
            if out.status.success() {
                let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
                assert_eq!(doc["injected_faults"][0], spec.as_str(), "{spec} fired silently");
            } else {
                assert!(err.contains(&format!("{ioctl} failed: EIO")), "{spec}: {err}");
            }
            n += 1;
            assert!(n < 200, "{ioctl}: too many calls");
        }
        assert!(n > 1, "{ioctl} is issued at least once");
    }
    let out = output(&mut cmd(&["run", "--iterations", "2", "--inject", "DESTROY_QUEUE=EIO@1"]));
    fails_with(&out, "teardown failed:\n  agent node 2: destroying the queue");
}

#[test]
fn a_malformed_gfx_override_is_an_error_for_run_and_doctor() {
    let out = output(cmd(&["run", "--iterations", "3"]).env("HSA_OVERRIDE_GFX_VERSION", "garbage"));
    fails_with(&out, "HSA_OVERRIDE_GFX_VERSION is invalid");
    assert!(out.stdout.is_empty());
    let out = output(cmd(&["doctor", "--sim", "--json"]).env("HSA_OVERRIDE_GFX_VERSION", "x"));
    assert!(!out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["healthy"], false);
    let env = doc["checks"].as_array().unwrap().iter().find(|c| c["name"] == "environment");
    assert_eq!(env.unwrap()["status"], "fail");
}

#[test]
fn more_gpus_than_iterations_is_refused() {
    let out = output(&mut cmd(&["run", "--iterations", "3", "--gpus", "32"]));
    fails_with(&out, "--gpus 32 with --iterations 3: every GPU needs at least one iteration");
    let out = output(&mut cmd(&["run", "--iterations", "3", "--gpus", "all"]));
    fails_with(&out, "--gpus 32 with --iterations 3");
    // Exactly what ran is reported.
    let out = output(&mut cmd(&["run", "--iterations", "5", "--gpus", "5", "--json"]));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((doc["gpus"].as_u64(), doc["iterations"].as_u64()), (Some(5), Some(5)));
}

#[test]
fn hsakmt_driver_set_means_valid() {
    use std::os::unix::ffi::OsStrExt as _;
    let bytes = std::ffi::OsStr::from_bytes(b"si\xffm");
    let out = output(cmd(&["run", "--iterations", "3"]).env("HSAKMT_DRIVER", bytes));
    fails_with(&out, r#"HSAKMT_DRIVER="si\xffm" names no driver"#);
    let out = output(cmd(&["run", "--iterations", "3"]).env("HSAKMT_DRIVER", ""));
    fails_with(&out, "HSAKMT_DRIVER is set but empty");
    let out = output(cmd(&["run", "--sim", "mi25-vega10-rocm18"]).env("HSAKMT_DRIVER", "host"));
    let err = fails_with(&out, "--sim mi25-vega10-rocm18 runs the simulator, but HSAKMT_DRIVER");
    assert!(!err.contains("not usable on this machine"), "{err}");
    let out = output(
        cmd(&["run", "--sim", "mi25-vega10-rocm18", "--iterations", "3"])
            .env("HSAKMT_DRIVER", "sim"),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

// --- Messages a person can act on -------------------------------------------------------------

#[test]
fn sim_help_lists_profiles_and_says_which_cannot_run() {
    for args in
        [&["run", "--sim", "help"][..], &["info", "--sim", "help"], &["doctor", "--sim", "help"]]
    {
        let out = output(&mut cmd(args));
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        let list = text(&out.stdout);
        assert!(list.contains("mi210-8gpu-2hive"), "{list}");
        assert!(list.contains("cannot run on it: the capture has no gpu_id"), "{list}");
    }
    let out = output(&mut cmd(&["run", "--sim", "mi210-8gpu-2hive", "--iterations", "3"]));
    fails_with(&out, "`--sim help` lists the profiles that have one");
}

#[test]
fn an_overlong_sysfs_path_says_so() {
    let long = format!("/tmp/{}", "d".repeat(600));
    let out = output(&mut cmd(&["info", "--sysfs", &long]));
    let err = fails_with(&out, "the path is 605 bytes long, beyond the 511 bytes");
    assert!(!err.contains("E2BIG"), "{err}");
}

#[test]
fn control_characters_of_a_name_are_escaped() {
    let dir = tree("name", "mi25-vega10-rocm18");
    std::fs::write(dir.path().join("nodes/1/name"), "evil\u{1b}]0;pwned\u{7}\u{1b}[2J\n").unwrap();
    let out = output(&mut cmd(&["info", "--sysfs", dir.str()]));
    let report = text(&out.stdout);
    assert!(out.status.success());
    assert!(!report.contains('\u{1b}') && !report.contains('\u{7}'), "{report:?}");
    assert!(report.contains("evil\\u{1b}]0;pwned\\u{7}\\u{1b}[2J"), "{report}");
    let out = output(&mut cmd(&["info", "--sysfs", dir.str(), "--json"]));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["nodes"][1]["name"], "evil\u{1b}]0;pwned\u{7}\u{1b}[2J");
}

/// Exit statuses are never the panic status, whatever the arguments.
#[test]
fn odd_arguments_never_panic() {
    let cases: &[&[&str]] = &[
        &["run", "--gpus", ""],
        &["run", "--gpus", "-1"],
        &["run", "--gpus", "99999999999999999999999"],
        &["run", "--inject", "=@"],
        &["run", "--inject", "WAIT_EVENTS=EIO@99999999999999999999"],
        &["run", "--block", "4294967292", "--iterations", "1"],
        &["info", "--sim", ""],
        &["info", "--sysfs", ""],
        &["doctor", "--sim", "\u{1b}[2J"],
    ];
    for args in cases {
        let out = within(&mut cmd(args), Duration::from_secs(60));
        let status: ExitStatus = out.status;
        assert_ne!(status.code(), Some(PANIC_STATUS), "{args:?}: {}", text(&out.stderr));
        assert!(!text(&out.stderr).contains('\u{1b}'), "{args:?}: raw escape");
    }
}

// --- Trees no kernel makes ----------------------------------------------------------------------

/// Replaces `key`'s line in the `properties` file at `rel` with `key value`.
fn set_key(dir: &TempDir, rel: &str, key: &str, value: &str) {
    let path = dir.path().join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out: Vec<String> = text
        .lines()
        .filter(|l| l.split_whitespace().next() != Some(key))
        .map(str::to_string)
        .collect();
    out.push(format!("{key} {value}"));
    std::fs::write(path, out.join("\n") + "\n").unwrap();
}

fn info_json(dir: &TempDir) -> Value {
    let out = output(&mut cmd(&["info", "--sysfs", dir.str(), "--json"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn warnings(doc: &Value) -> Vec<String> {
    doc["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_string()).collect()
}

#[test]
fn counts_that_disagree_with_the_directories_are_warned_and_nothing_is_hidden() {
    let dir = tree("counts", "mi308x-8gpu-cpx");
    set_key(&dir, "nodes/2/properties", "mem_banks_count", "0");
    set_key(&dir, "nodes/3/properties", "caches_count", "2");
    let doc = info_json(&dir);
    let node = |n: u64| doc["nodes"].as_array().unwrap().iter().find(|v| v["node"] == n).unwrap();
    assert_eq!(node(2)["mem_banks"].as_array().unwrap().len(), 1, "the bank is still read");
    assert_eq!(node(3)["caches"].as_array().unwrap().len(), 46, "every cache is read");
    let w = warnings(&doc);
    assert!(
        w.contains(&"nodes/2/mem_banks/: `mem_banks_count` is 0 but 1 directories exist".into()),
        "{w:#?}"
    );
    assert!(
        w.contains(&"nodes/3/caches/: `caches_count` is 2 but 46 directories exist".into()),
        "{w:#?}"
    );
}

#[test]
fn a_phantom_node_directory_is_not_a_node() {
    let dir = tree("phantom", "mi25-vega10-rocm18");
    std::fs::rename(dir.path().join("nodes/1"), dir.path().join("nodes/01")).unwrap();
    let doc = info_json(&dir);
    let ids: Vec<u64> =
        doc["nodes"].as_array().unwrap().iter().map(|n| n["node"].as_u64().unwrap()).collect();
    assert_eq!(ids, [0], "nodes/01 is not node 1");
    assert!(warnings(&doc).iter().any(|w| w.contains("node_to 1 is no node")), "{doc}");
}

#[test]
fn impossible_values_are_warned_about() {
    let dir = tree("values", "mi308x-8gpu-cpx");
    std::fs::write(dir.path().join("nodes/3/gpu_id"), "24248\n").unwrap(); // node 2's
    std::fs::write(dir.path().join("nodes/4/gpu_id"), "0\n").unwrap();
    std::fs::write(dir.path().join("nodes/5/name"), b"bad\xff\xfename\n").unwrap();
    set_key(&dir, "nodes/6/properties", "gfx_target_version", "12345678");
    set_key(&dir, "nodes/7/io_links/0/properties", "node_to", "7");
    set_key(&dir, "nodes/8/io_links/0/properties", "type", "77");
    set_key(&dir, "nodes/9/properties", "simd_count", "123456789012345678901234567890");
    std::fs::write(dir.path().join("generation_id"), "x1\n").unwrap();
    let doc = info_json(&dir);
    let w = warnings(&doc);
    for want in [
        "nodes/3/gpu_id: gpu_id 24248 is also node 2's",
        "nodes/4/gpu_id: a GPU with gpu_id 0 cannot be reached",
        "nodes/5/name: name is not UTF-8",
        "nodes/6/properties: gfx_target_version 12345678 is no gfx version",
        "nodes/7/io_links/0/properties: links the node to itself",
        "nodes/8/io_links/0/properties: link type 77 is not a known type",
        "`simd_count` does not fit 64 bits",
        "generation_id: is not a decimal number",
    ] {
        assert!(w.iter().any(|x| x.contains(want)), "{want:?} in {w:#?}");
    }
    let node5 = doc["nodes"].as_array().unwrap().iter().find(|v| v["node"] == 5).unwrap();
    assert_eq!(node5["name"], "bad\u{fffd}\u{fffd}name", "shown, not null");
}

#[test]
fn a_tree_beyond_the_node_capacity_is_read_as_far_as_it_allows() {
    let dir = TempDir::new("wide");
    std::fs::write(dir.path().join("generation_id"), "1\n").unwrap();
    for n in 0..140 {
        let node = dir.path().join(format!("nodes/{n}"));
        std::fs::create_dir_all(&node).unwrap();
        std::fs::write(node.join("gpu_id"), "0\n").unwrap();
        std::fs::write(node.join("name"), "\n").unwrap();
        std::fs::write(node.join("properties"), "cpu_cores_count 1\nsimd_count 0\n").unwrap();
    }
    let doc = info_json(&dir);
    assert_eq!(doc["nodes"].as_array().unwrap().len(), 136);
    assert_eq!(doc["nodes"][135]["node"], 135, "the lowest-numbered nodes are kept");
    let w = warnings(&doc);
    assert!(
        w.contains(&"nodes/: the `nodes` table is full (capacity 136): 4 left out".into()),
        "{w:#?}"
    );
}
