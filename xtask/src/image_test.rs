//! `cargo xtask image-test`: builds the no-libc image (as `cargo xtask size` does) and runs it
//! against every embedded simulator profile written to a temporary directory, checking its
//! summary against the snapshot the std build of hsakmt-core and hsakmt-linux takes of the same
//! tree, and against facts known from the captures (`shared/fixtures/topology/*/EXPECTED.md`).
//! Also checks the `HSA_OVERRIDE_GFX_VERSION` path (the image's environment), the error exits,
//! that `/dev/kfd` is reported either way, and the runtime itself through `rt-smoke` (command
//! line bytes, environment, long writes, overlapping copies, `exit`, the panic handler).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use hsakmt_core::error::Errno;
use hsakmt_core::platform::Host;
use hsakmt_core::topology::{MIN_READ_BUFFER, NodeKind, Topology};
use hsakmt_linux::SysfsTree;
use hsakmt_sim::{Profile, profile_names};

use crate::size;

/// Facts of the captures: profile, node count, GPU count, the gfx of every GPU.
const KNOWN: &[(&str, usize, usize, &str)] = &[
    ("cpu-only-virtual-crat-2021", 1, 0, ""),
    ("mi210-8gpu-2hive", 10, 8, "gfx90a"),
    ("mi25-vega10-rocm18", 2, 1, "gfx900"),
    ("mi308x-8gpu-cpx", 34, 32, "gfx942"),
];

pub(crate) fn image_test(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!("image-test: unknown argument `{a}` (it takes none)"));
    }
    let started = Instant::now();
    let image = size::build_image()?;
    println!(
        "==> image: {} ({} bytes, {})",
        image.path.display(),
        image.bytes,
        image.linkage.describe()
    );
    let tmp = std::env::temp_dir().join(format!("hsakmt-image-test-{}", std::process::id()));
    let result = run_all(&image.path, &tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    result?;
    println!("==> image-test: passed in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

fn run_all(image: &Path, tmp: &Path) -> Result<(), String> {
    let mut failures = Vec::new();
    let mut dirs = BTreeMap::new();
    for name in profile_names() {
        let dir = tmp.join(name);
        let profile = Profile::embedded(name).map_err(|e| e.to_string())?;
        profile.write_to(&dir).map_err(|e| format!("writing {name} to {}: {e}", dir.display()))?;
        let out = run(image, &[dir.as_os_str()], &[])?;
        let mut problems = check_profile(name, &dir, &out);
        if problems.is_empty() {
            let s = stdout(&out);
            let line = s.lines().find(|l| l.starts_with("nodes: ")).unwrap_or_default();
            println!("ok   {name}: {line}");
        } else {
            problems.insert(0, format!("{name}: image output:\n{}{}", stdout(&out), stderr(&out)));
            failures.extend(problems);
        }
        dirs.insert(name, dir);
    }
    if let Some(dir) = dirs.get("mi25-vega10-rocm18") {
        failures.extend(check_override(image, dir)?);
    }
    failures.extend(check_errors(image, tmp)?);
    failures.extend(check_runtime(&image.with_file_name("rt-smoke"))?);
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("image-test failed:\n  {}", failures.join("\n  ")))
    }
}

fn run(image: &Path, args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> Result<Output, String> {
    let mut cmd = Command::new(image);
    // A clean environment, so the caller's HSA_OVERRIDE_GFX_VERSION cannot change results.
    cmd.args(args).env_clear().envs(env.iter().copied());
    cmd.output().map_err(|e| format!("cannot run {}: {e}", image.display()))
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// What the image printed, parsed.
#[derive(Debug, Default, PartialEq, Eq)]
struct Summary {
    /// `nodes: N (cpu a, gpu b, apu c); gpus usable: g` as `[N, a, b, c, g]`.
    counts: Vec<usize>,
    /// `node ID: KIND key=value ...` (without `name=`), by sysfs id.
    nodes: BTreeMap<u32, (String, BTreeMap<String, String>)>,
    /// `warnings: W (+D dropped)` as `[W, D]`.
    warnings: Vec<usize>,
    /// Whether a `kfd: ` line was printed.
    kfd: bool,
}

fn numbers(s: &str) -> Vec<usize> {
    s.split(|c: char| !c.is_ascii_digit()).filter_map(|t| t.parse().ok()).collect()
}

fn parse_summary(text: &str) -> Summary {
    let mut s = Summary::default();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("nodes: ") {
            s.counts = numbers(rest);
        } else if let Some(rest) = line.strip_prefix("warnings: ") {
            s.warnings = numbers(rest);
        } else if line.starts_with("kfd: ") {
            s.kfd = true;
        } else if let Some(rest) = line.strip_prefix("node ") {
            let Some((id, rest)) = rest.split_once(": ") else { continue };
            let Ok(id) = id.parse() else { continue };
            let rest = rest.split_once(" name=").map_or(rest, |(fields, _)| fields);
            let mut words = rest.split_whitespace();
            let kind = words.next().unwrap_or_default().to_string();
            let fields = words
                .filter_map(|w| w.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            s.nodes.insert(id, (kind, fields));
        }
    }
    s
}

/// No environment: what the image sees under `env_clear`.
struct NoEnv;

impl Host for NoEnv {
    fn now_ns(&self) -> u64 {
        0
    }
    fn process_id(&self) -> u32 {
        std::process::id()
    }
    fn env_var(&self, _: &str, _: &mut [u8]) -> Option<usize> {
        None
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "?".to_string(), |v| v.to_string())
}

/// The summary the image should print for the tree at `dir`, from the std build.
fn expected(dir: &Path) -> Result<Summary, String> {
    let tree = SysfsTree::at(dir.as_os_str().as_encoded_bytes())
        .map_err(|e: Errno| format!("{}: {e}", dir.display()))?;
    let mut topo: Box<Topology> = Box::new(const { Topology::new() });
    let mut buf = vec![0u8; MIN_READ_BUFFER];
    topo.refresh(&tree, &NoEnv, &mut buf).map_err(|e| format!("{}: {e}", dir.display()))?;
    let count = |k: NodeKind| topo.nodes().filter(|n| n.kind() == k).count();
    let mut s = Summary {
        counts: vec![
            topo.node_count(),
            count(NodeKind::Cpu),
            count(NodeKind::Gpu),
            count(NodeKind::Apu),
            topo.gpu_count(),
        ],
        warnings: vec![topo.warnings().len(), topo.warnings_dropped() as usize],
        kfd: true,
        ..Summary::default()
    };
    for n in topo.nodes() {
        let mut fields = BTreeMap::new();
        if n.kind() == NodeKind::Cpu {
            fields.insert("cores".into(), opt(n.cpu_cores_count()));
        } else {
            fields.insert("gfx".into(), opt(n.gfx()));
            fields.insert("cus".into(), opt(n.cu_count()));
            fields.insert("vram_mib".into(), opt(n.vram_bytes().map(|b| b >> 20)));
            fields.insert("gpu_id".into(), opt(n.gpu_id()));
        }
        s.nodes.insert(n.sysfs_id(), (n.kind().name().to_string(), fields));
    }
    Ok(s)
}

fn check_profile(name: &str, dir: &Path, out: &Output) -> Vec<String> {
    let mut problems = Vec::new();
    if !out.status.success() {
        problems.push(format!("{name}: exit status {}", out.status));
    }
    let got = parse_summary(&stdout(out));
    match expected(dir) {
        Ok(want) if want != got => {
            problems.push(format!("{name}: summary differs from the std snapshot"));
            problems.push(format!("  expected {want:?}"));
            problems.push(format!("  printed  {got:?}"));
        }
        Ok(_) => {}
        Err(e) => problems.push(format!("{name}: std snapshot failed: {e}")),
    }
    if let Some(&(_, nodes, gpus, gfx)) = KNOWN.iter().find(|k| k.0 == name) {
        if got.counts.first() != Some(&nodes) || got.counts.get(4) != Some(&gpus) {
            problems.push(format!("{name}: expected {nodes} nodes and {gpus} GPUs"));
        }
        for (id, (kind, fields)) in &got.nodes {
            if kind != "cpu" && fields.get("gfx").map(String::as_str) != Some(gfx) {
                problems.push(format!("{name}: node {id} should be {gfx}: {fields:?}"));
            }
        }
    }
    problems
}

/// `HSA_OVERRIDE_GFX_VERSION` reaches the snapshot through the image's environment; a
/// malformed one fails the snapshot.
fn check_override(image: &Path, dir: &Path) -> Result<Vec<String>, String> {
    let mut problems = Vec::new();
    let out = run(image, &[dir.as_os_str()], &[("HSA_OVERRIDE_GFX_VERSION", "9.4.2")])?;
    let got = parse_summary(&stdout(&out));
    let gpu = got.nodes.get(&1).map(|(_, f)| f);
    let (gfx, over) = (
        gpu.and_then(|f| f.get("gfx")).map(String::as_str),
        gpu.and_then(|f| f.get("override")).map(String::as_str),
    );
    if !out.status.success() || gfx != Some("gfx900") || over != Some("gfx942") {
        problems.push(format!(
            "override: expected node 1 gfx=gfx900 override=gfx942, got {gpu:?} ({})\n{}",
            out.status,
            stdout(&out)
        ));
    } else {
        println!("ok   HSA_OVERRIDE_GFX_VERSION=9.4.2: node 1 gfx=gfx900 override=gfx942");
    }
    let out = run(image, &[dir.as_os_str()], &[("HSA_OVERRIDE_GFX_VERSION", "9.x")])?;
    if out.status.code() != Some(1) || !stderr(&out).contains("HSA_OVERRIDE_GFX_VERSION") {
        problems.push(format!("malformed override: expected exit 1, got {}", out.status));
    } else {
        println!("ok   HSA_OVERRIDE_GFX_VERSION=9.x: exit 1, {}", stderr(&out).trim());
    }
    Ok(problems)
}

/// Exit codes and messages of the failure paths.
fn check_errors(image: &Path, tmp: &Path) -> Result<Vec<String>, String> {
    let mut problems = Vec::new();
    let missing: PathBuf = tmp.join("no-such-topology");
    let cases: [(&str, Vec<&std::ffi::OsStr>, i32, &str); 3] = [
        ("missing tree", vec![missing.as_os_str()], 1, "failed"),
        ("two arguments", vec!["a".as_ref(), "b".as_ref()], 2, "usage"),
        ("--help", vec!["--help".as_ref()], 0, "usage"),
    ];
    for (what, args, code, text) in cases {
        let out = run(image, &args, &[])?;
        let all = stdout(&out) + &stderr(&out);
        if out.status.code() != Some(code) || !all.contains(text) {
            problems.push(format!("{what}: expected exit {code} and `{text}`, got {}", out.status));
        } else {
            println!("ok   {what}: exit {code}");
        }
    }
    let out = run(image, &[missing.as_os_str()], &[])?;
    match stdout(&out).lines().find(|l| l.starts_with("kfd: ")) {
        Some(line) => println!("ok   {line}"),
        None => problems.push("no `kfd:` line (open /dev/kfd or say why not)".to_string()),
    }
    Ok(problems)
}

/// The runtime through `rt-smoke`: arguments as bytes, environment, a write longer than the
/// writer's buffer, overlapping copies, `exit`, and a panic (message on stderr, exit 101).
fn check_runtime(smoke: &Path) -> Result<Vec<String>, String> {
    use std::os::unix::ffi::OsStrExt;
    let mut problems = Vec::new();
    let odd = std::ffi::OsStr::from_bytes(b"\xff\xfe");
    let out = run(smoke, &["hello".as_ref(), odd, "".as_ref()], &[("SMOKE", "on")])?;
    let text = stdout(&out);
    let long = format!("long {}", "0123456789".repeat(40));
    let want = [
        "argc 4",
        "arg 1: 5 bytes \"hello\"",
        "arg 2: 2 bytes \"\\xff\\xfe\"",
        "arg 3: 0 bytes \"\"",
        "envc 1",
        "SMOKE=\"on\"",
        long.as_str(),
        "moved Ok(\"ababcdefgh\") Ok(\"cdefghijij\")",
    ];
    let missing: Vec<_> = want.iter().filter(|w| !text.lines().any(|l| l == **w)).collect();
    if !out.status.success() || !missing.is_empty() {
        problems.push(format!("rt-smoke: {} missing {missing:?} in:\n{text}", out.status));
    } else {
        println!("ok   rt-smoke: arguments, environment, long write, overlapping copies");
    }
    let out = run(smoke, &["exit".as_ref()], &[])?;
    if out.status.code() == Some(7) {
        println!("ok   rt-smoke exit: exit 7");
    } else {
        problems.push(format!("rt-smoke exit: expected exit 7, got {}", out.status));
    }
    let out = run(smoke, &["panic".as_ref()], &[])?;
    let err = stderr(&out);
    if out.status.code() == Some(101)
        && err.contains("panicked at ")
        && err.contains("smoke panic with 2 arguments")
    {
        println!("ok   rt-smoke panic: exit 101, {}", err.lines().last().unwrap_or_default());
    } else {
        problems.push(format!(
            "rt-smoke panic: expected exit 101 and the message, got {}: {err}",
            out.status
        ));
    }
    Ok(problems)
}
