//! `cargo xtask capi-test`: the C library under a C program, over the simulator.
//!
//! 1. Builds the libraries (`cargo xtask capi`).
//! 2. Compiles `capi/tests/c/*.c` with `cc` against the installed headers twice: linked
//!    against `libhsakmt.so.1` and against `libhsakmt.a`.
//! 3. Runs both over every embedded simulator profile (`HSAKMT_DRIVER=sim
//!    HSAKMT_SIM_PROFILE=...`) and once over a topology directory (`HSAKMT_SIM_SYSFS`); each run
//!    must pass all its checks, and the topology it prints must equal, field by field, what
//!    `hsakmt info --sim PROFILE --json` reports ([`topology`]).
//! 4. Checks that a bad `HSAKMT_DRIVER` or profile makes the open fail as upstream's does.
//! 5. Builds the README's example as a consumer would: with `pkg-config --cflags --libs
//!    libhsakmt`, and with CMake's `find_package(hsakmt)` (`hsakmt::hsakmt` and
//!    `hsakmt::hsakmt_static`; skipped when `cmake` is missing), and runs each.
//! 6. Runs `capi/tests/c/dtif_dlopen.c`, ROCr's DTIF loader in miniature, against `libdtif.so`.

mod topology;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::capi_build::{self, Installed};
use crate::workspace_root;

/// The test program's sources.
const SOURCES: [&str; 9] = [
    "main.c",
    "topology.c",
    "memory.c",
    "queues.c",
    "events.c",
    "bad_input.c",
    "misc.c",
    "debug.c",
    "consumers.c",
];

/// Runs the test.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err("usage: cargo xtask capi-test".to_owned());
    }
    let target = crate::size::target_dir();
    let installed = capi_build::build(&target.join("capi"))?;
    let work = target.join("capi-test");
    std::fs::create_dir_all(&work).map_err(|e| format!("creating {}: {e}", work.display()))?;
    let shared = compile(&installed, &work.join("hsakmt_test_shared"), Link::Shared)?;
    let statik = compile(&installed, &work.join("hsakmt_test_static"), Link::Static)?;
    let dtif = compile_dtif(&installed, &work.join("dtif_dlopen"))?;

    let mut runs = 0;
    let mut fields = 0;
    for profile in hsakmt_sim::profile_names() {
        let expected = topology::expected(profile)?;
        for (exe, how) in [(&shared, "shared"), (&statik, "static")] {
            let out = run_test(exe, &[("HSAKMT_SIM_PROFILE", profile)])?;
            let what = format!("{profile} ({how})");
            fields += topology::compare(&what, &out, &expected)?;
            println!("capi-test: {what}: {}", result_line(&out));
            runs += 1;
        }
    }
    // A topology directory instead of an embedded profile.
    let dir = work.join("sysfs");
    let _ = std::fs::remove_dir_all(&dir);
    let profile = hsakmt_sim::Profile::embedded("mi25-vega10-rocm18").map_err(|e| e.to_string())?;
    profile.write_to(&dir).map_err(|e| format!("writing {}: {e}", dir.display()))?;
    let dir_text = dir.to_string_lossy().into_owned();
    let out = run_test(&shared, &[("HSAKMT_SIM_SYSFS", dir_text.as_str())])?;
    fields +=
        topology::compare("HSAKMT_SIM_SYSFS", &out, &topology::expected("mi25-vega10-rocm18")?)?;
    println!("capi-test: HSAKMT_SIM_SYSFS: {}", result_line(&out));
    runs += 1;

    open_fails(&shared, &[("HSAKMT_DRIVER", "gpu")])?;
    // Set means valid, as for the `hsakmt` tool: empty is not "unset"; `host` has no KFD.
    open_fails(&shared, &[("HSAKMT_DRIVER", "")])?;
    open_fails(&shared, &[("HSAKMT_DRIVER", "host")])?;
    open_fails(&shared, &[("HSAKMT_DRIVER", "sim"), ("HSAKMT_SIM_PROFILE", "no-such-profile")])?;

    consumers(&installed, &work)?;

    let mut dtif_cmd = Command::new(&dtif);
    dtif_cmd
        .env("HSAKMT_DRIVER", "sim")
        .env("HSAKMT_SIM_PROFILE", "mi308x-8gpu-cpx")
        .env("LD_LIBRARY_PATH", installed.lib());
    let out = output(&mut dtif_cmd)?;
    println!("capi-test: dtif_dlopen: {}", out.trim().replace('\n', "; "));
    println!(
        "capi-test: {runs} runs passed, {fields} topology fields equal to `hsakmt info --json`"
    );
    Ok(())
}

/// The README's example, built through the pkg-config and CMake files, runs over the simulator.
fn consumers(installed: &Installed, work: &Path) -> Result<(), String> {
    let tests = workspace_root().join("capi").join("tests");
    let pc_path = installed.lib().join("pkgconfig");
    let mut pc = Command::new("pkg-config");
    pc.args(["--cflags", "--libs", "libhsakmt"]).env("PKG_CONFIG_PATH", &pc_path);
    let flags = output(&mut pc)?;
    let exe = work.join("example_pkgconfig");
    let mut cmd = cc();
    cmd.arg(tests.join("c").join("example.c"))
        .args(flags.split_whitespace())
        .arg(format!("-Wl,-rpath,{}", installed.lib().display()))
        .arg("-o")
        .arg(&exe);
    output(&mut cmd)?;
    let mut built = vec![("pkg-config", exe)];
    if Command::new("cmake").arg("--version").output().is_ok_and(|o| o.status.success()) {
        let dir = work.join("cmake");
        let _ = std::fs::remove_dir_all(&dir);
        let mut configure = Command::new("cmake");
        configure
            .arg("-S")
            .arg(tests.join("cmake"))
            .arg("-B")
            .arg(&dir)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", installed.root.display()));
        output(&mut configure)?;
        output(Command::new("cmake").arg("--build").arg(&dir))?;
        built.push(("CMake hsakmt::hsakmt", dir.join("example_shared")));
        built.push(("CMake hsakmt::hsakmt_static", dir.join("example_static")));
    } else {
        println!("capi-test: cmake not found, the CMake package is not tried");
    }
    for (how, exe) in built {
        let out = output(Command::new(&exe).env("HSAKMT_DRIVER", "sim"))?;
        if !out.starts_with("KFD 1.") {
            return Err(format!("the example built with {how} printed {out:?}"));
        }
        println!("capi-test: example built with {how}: {}", out.trim());
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Link {
    Shared,
    Static,
}

fn cc() -> Command {
    Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".to_owned()))
}

fn compile(installed: &Installed, exe: &Path, link: Link) -> Result<PathBuf, String> {
    let src = workspace_root().join("capi").join("tests").join("c");
    let mut cmd = cc();
    cmd.args(["-std=gnu11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-pthread"])
        .arg("-I")
        .arg(installed.include())
        .arg("-I")
        .arg(drm_shim(exe)?)
        .arg("-o")
        .arg(exe);
    for s in SOURCES {
        cmd.arg(src.join(s));
    }
    match link {
        Link::Shared => {
            cmd.arg("-L").arg(installed.lib()).arg("-lhsakmt");
            cmd.arg(format!("-Wl,-rpath,{}", installed.lib().display()));
        }
        Link::Static => {
            cmd.arg(installed.lib().join("libhsakmt.a")).args(&installed.static_libs);
        }
    }
    output(&mut cmd)?;
    Ok(exe.to_path_buf())
}

/// A directory holding `drm/drm.h` for `hsakmt/linux/kfd_ioctl.h`, which includes the kernel's
/// `<drm/drm.h>`: Debian ships that header only as libdrm's `<libdrm/drm.h>` (package
/// `libdrm-dev`), so where `/usr/include/drm/drm.h` is missing the shim includes libdrm's,
/// and where that is missing too (a fresh machine), `<linux/types.h>` (from the C library's
/// kernel headers): `kfd_ioctl.h` takes only the `__u32`-style types from `drm.h`.
fn drm_shim(exe: &Path) -> Result<PathBuf, String> {
    let dir = exe.with_extension("shim");
    let drm = dir.join("drm");
    std::fs::create_dir_all(&drm).map_err(|e| format!("creating {}: {e}", drm.display()))?;
    let text = if Path::new("/usr/include/drm/drm.h").exists() {
        "#include_next <drm/drm.h>\n"
    } else if Path::new("/usr/include/libdrm/drm.h").exists() {
        "#include <libdrm/drm.h>\n"
    } else {
        "#include <linux/types.h>\n"
    };
    let file = drm.join("drm.h");
    std::fs::write(&file, text).map_err(|e| format!("writing {}: {e}", file.display()))?;
    Ok(dir)
}

fn compile_dtif(installed: &Installed, exe: &Path) -> Result<PathBuf, String> {
    let src = workspace_root().join("capi").join("tests").join("c").join("dtif_dlopen.c");
    let mut cmd = cc();
    cmd.args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(installed.include())
        .args(["-I", "/usr/include/libdrm", "-o"])
        .arg(exe)
        .arg(src)
        .arg("-ldl");
    output(&mut cmd)?;
    Ok(exe.to_path_buf())
}

/// Runs a command, failing with its output when it fails; returns its stdout.
fn output(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            stdout.lines().rev().take(5).collect::<Vec<_>>().join("\n")
        ));
    }
    Ok(stdout)
}

fn run_test(exe: &Path, env: &[(&str, &str)]) -> Result<String, String> {
    let mut cmd = Command::new(exe);
    cmd.env("HSAKMT_DRIVER", "sim").env_remove("HSAKMT_SIM_PROFILE").env_remove("HSAKMT_SIM_SYSFS");
    for (k, v) in env {
        cmd.env(k, v);
    }
    output(&mut cmd)
}

fn result_line(out: &str) -> &str {
    out.lines().rev().find(|l| l.starts_with("RESULT")).unwrap_or("no RESULT line")
}

/// A misconfigured environment makes the first open answer "not opened".
fn open_fails(exe: &Path, env: &[(&str, &str)]) -> Result<(), String> {
    let mut cmd = Command::new(exe);
    cmd.arg("--expect-open-failure").env_remove("HSAKMT_SIM_PROFILE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    output(&mut cmd).map(|_| ())
}
