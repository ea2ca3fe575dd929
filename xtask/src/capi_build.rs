//! `cargo xtask capi [--out DIR]`: builds the C libraries and an install tree (default
//! `target/capi/`):
//!
//! ```text
//! lib/libhsakmt.so.1.0.0        soname libhsakmt.so.1, version script capi/link/libhsakmt.map
//! lib/libhsakmt.so.1, .so        symlinks
//! lib/libhsakmt.a               the same library, static (link it with its Libs.private)
//! lib/libdtif.so                the library with the `dtif` feature (capi/link/libdtif.map)
//! lib/pkgconfig/libhsakmt.pc    upstream's pkg-config name; hsakmt.pc: the same under our name
//! lib/cmake/hsakmt/             hsakmt-config.cmake (targets hsakmt::hsakmt and
//!                               hsakmt::hsakmt_static), hsakmt-config-version.cmake
//! include/hsakmt/               hsakmt.h, hsakmttypes.h, hsakmt_rs.h, LICENSE-MIT.txt,
//!                               linux/kfd_ioctl.h (from uapi/)
//! ```
//!
//! Cargo cannot set a soname, nor give a `cdylib` a version script of its own (rustc passes its
//! own anonymous one), nor link one crate into two shared libraries. So the crate is built as a
//! static library (`cargo rustc --crate-type staticlib`, once plain, once with the `dtif`
//! feature), and each shared library is linked from it with `cc -shared`: the soname, the
//! version script (which hides everything but its names), `-z nodelete`, and `-u` for each
//! exported name so the linker pulls in exactly what they need. The builds share a target
//! directory of their own (`$CARGO_TARGET_DIR/xtask-capi`), so ordinary builds of the workspace
//! are not disturbed. After linking, the exported dynamic symbols of each shared library are
//! compared with its version script.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{cargo, workspace_root};

/// The version `hsakmt-config-version.cmake` and the `.pc` files report: the CMake project
/// version of the pinned upstream libhsakmt, so `find_package(hsakmt 1.x)` accepts ours.
const PACKAGE_VERSION: &str = "1.9.0";

/// Where the libraries and headers were put.
#[derive(Debug)]
pub(crate) struct Installed {
    /// The install tree.
    pub(crate) root: PathBuf,
    /// The libraries a static link needs after `libhsakmt.a` (`-lpthread -ldl ...`).
    pub(crate) static_libs: Vec<String>,
}

impl Installed {
    /// `lib/` of the tree.
    pub(crate) fn lib(&self) -> PathBuf {
        self.root.join("lib")
    }

    /// `include/` of the tree.
    pub(crate) fn include(&self) -> PathBuf {
        self.root.join("include")
    }
}

/// Runs `cargo xtask capi`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let out = match args {
        [] => crate::size::target_dir().join("capi"),
        [flag, dir] if flag == "--out" => PathBuf::from(dir),
        _ => return Err("usage: cargo xtask capi [--out DIR]".to_owned()),
    };
    let installed = build(&out)?;
    println!("capi: libraries and headers in {}", installed.root.display());
    Ok(())
}

/// Builds everything into `root`.
pub(crate) fn build(root: &Path) -> Result<Installed, String> {
    let lib = root.join("lib");
    let include = root.join("include").join("hsakmt");
    for d in [&lib, &include.join("linux"), &lib.join("pkgconfig"), &lib.join("cmake/hsakmt")] {
        std::fs::create_dir_all(d).map_err(|e| format!("creating {}: {e}", d.display()))?;
    }
    let link = workspace_root().join("capi").join("link");
    let (a, static_libs) = staticlib(false)?;
    copy(&a, &lib.join("libhsakmt.a"))?;
    let so = lib.join("libhsakmt.so.1.0.0");
    shared(
        &lib.join("libhsakmt.a"),
        "libhsakmt.so.1",
        &link.join("libhsakmt.map"),
        &static_libs,
        &so,
    )?;
    symlink("libhsakmt.so.1.0.0", &lib.join("libhsakmt.so.1"))?;
    symlink("libhsakmt.so.1", &lib.join("libhsakmt.so"))?;
    check_exports(&so, &link.join("libhsakmt.map"))?;
    let (dtif_a, _) = staticlib(true)?;
    let dtif = lib.join("libdtif.so");
    shared(&dtif_a, "libdtif.so", &link.join("libdtif.map"), &static_libs, &dtif)?;
    check_exports(&dtif, &link.join("libdtif.map"))?;
    install_headers(&include)?;
    write(&lib.join("pkgconfig/libhsakmt.pc"), &pkg_config(&static_libs))?;
    write(&lib.join("pkgconfig/hsakmt.pc"), &pkg_config(&static_libs))?;
    write(&lib.join("cmake/hsakmt/hsakmt-config.cmake"), &cmake_config(&static_libs))?;
    write(&lib.join("cmake/hsakmt/hsakmt-config-version.cmake"), &cmake_version())?;
    Ok(Installed { root: root.to_path_buf(), static_libs })
}

/// The build directory of these libraries.
fn build_dir() -> PathBuf {
    crate::size::target_dir().join("xtask-capi")
}

/// `cargo rustc -p hsakmt-capi --release` with `extra` before `--` and `rustc_args` after.
fn cargo_rustc(extra: &[&str], rustc_args: &[String]) -> Result<std::process::Output, String> {
    let mut cmd = cargo();
    cmd.args(["rustc", "-p", "hsakmt-capi", "--lib", "--release"])
        .args(extra)
        .arg("--")
        .args(["-C", "strip=debuginfo"])
        .args(rustc_args)
        .env("CARGO_TARGET_DIR", build_dir());
    let output = cmd.output().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(output)
}

/// The crate as a static library (with the `dtif` feature or not), and the native libraries a
/// static link needs.
fn staticlib(dtif: bool) -> Result<(PathBuf, Vec<String>), String> {
    let mut extra = vec!["--crate-type", "staticlib"];
    if dtif {
        extra.extend(["--features", "dtif"]);
    }
    let out = cargo_rustc(&extra, &["--print".to_owned(), "native-static-libs".to_owned()])?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let libs = stderr
        .lines()
        .find_map(|l| l.split_once("native-static-libs:").map(|(_, v)| v.trim().to_owned()))
        .map(|v| v.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .ok_or("rustc did not print the native static libraries")?;
    let built = build_dir().join("release").join("libhsakmt_capi.a");
    // The next build overwrites it: keep this one (without debug information: 30 of its
    // 40-odd MB).
    let kept = build_dir().join(if dtif { "libhsakmt_capi-dtif.a" } else { "libhsakmt_capi.a" });
    let mut strip = Command::new("strip");
    strip.arg("--strip-debug").arg("-o").arg(&kept).arg(&built);
    let output = strip.output().map_err(|e| format!("cannot run {strip:?}: {e}"))?;
    if !output.status.success() {
        return Err(format!("{strip:?} failed: {}", String::from_utf8_lossy(&output.stderr)));
    }
    Ok((kept, libs))
}

/// Links shared library `out` with soname `soname` from `archive`, exporting the names of the
/// version script `map`.
fn shared(
    archive: &Path,
    soname: &str,
    map: &Path,
    static_libs: &[String],
    out: &Path,
) -> Result<(), String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let mut cmd = Command::new(&cc);
    cmd.arg("-shared")
        .arg("-o")
        .arg(out)
        .arg(format!("-Wl,-soname,{soname}"))
        .arg(format!("-Wl,--version-script={}", map.display()))
        // Never unloaded: the device (and the simulator's threads) live as long as the process.
        .arg("-Wl,-z,nodelete")
        .arg("-Wl,-z,now")
        .arg("-Wl,--gc-sections")
        .arg("-Wl,--strip-debug");
    for name in script_names(map)?.iter().filter(|n| !n.ends_with("_1")) {
        cmd.arg(format!("-Wl,-u,{name}"));
    }
    cmd.arg(archive).args(static_libs);
    let output = cmd.output().map_err(|e| format!("running {cc}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "linking {} failed:\n{}",
            out.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    let _ = std::fs::remove_file(to);
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))
}

fn symlink(target: &str, link: &Path) -> Result<(), String> {
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(target, link)
        .map_err(|e| format!("linking {} -> {target}: {e}", link.display()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

fn install_headers(include: &Path) -> Result<(), String> {
    let src = workspace_root().join("capi").join("include").join("hsakmt");
    for f in ["hsakmt.h", "hsakmttypes.h", "hsakmt_rs.h", "LICENSE-MIT.txt"] {
        copy(&src.join(f), &include.join(f))?;
    }
    // Programs written for libhsakmt include the kernel header from here too.
    copy(&workspace_root().join("uapi").join("kfd_ioctl.h"), &include.join("linux/kfd_ioctl.h"))
}

/// The names a version script exports, and its version nodes themselves.
fn script_names(map: &Path) -> Result<BTreeSet<String>, String> {
    let text = std::fs::read_to_string(map).map_err(|e| format!("{}: {e}", map.display()))?;
    let mut names: BTreeSet<String> = crate::capi_check::version_nodes(&text)
        .into_iter()
        .flat_map(|(node, exports)| std::iter::once(node).chain(exports))
        .collect();
    names.remove("*");
    Ok(names)
}

/// Every name of the version script is exported, and nothing else.
fn check_exports(lib: &Path, map: &Path) -> Result<(), String> {
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib)
        .output()
        .map_err(|e| format!("running nm: {e}"))?;
    if !out.status.success() {
        return Err(format!("nm {} failed", lib.display()));
    }
    let exported: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .map(|s| s.split('@').next().unwrap_or(s).to_owned())
        .collect();
    let wanted = script_names(map)?;
    let mut problems = String::new();
    for n in wanted.difference(&exported) {
        let _ = writeln!(problems, "  {} does not export `{n}`", lib.display());
    }
    for n in exported.difference(&wanted) {
        let _ = writeln!(
            problems,
            "  {} exports `{n}`, which its version script does not list",
            lib.display()
        );
    }
    if problems.is_empty() {
        println!(
            "capi: {} exports exactly the {} names of {}",
            lib.display(),
            wanted.len(),
            map.display()
        );
        Ok(())
    } else {
        Err(format!("exported symbols differ from the version script:\n{problems}"))
    }
}

fn pkg_config(static_libs: &[String]) -> String {
    format!(
        "prefix=${{pcfiledir}}/../..\nexec_prefix=${{prefix}}\nlibdir=${{prefix}}/lib\n\
         includedir=${{prefix}}/include\n\n\
         Name: libhsakmt\n\
         Description: HSA Kernel Mode Thunk library for AMD KFD support (hsakmt-rs)\n\
         Version: {PACKAGE_VERSION}\n\n\
         Libs: -L${{libdir}} -lhsakmt\n\
         Libs.private: {}\n\
         Cflags: -I${{includedir}}\n",
        static_libs.join(" ")
    )
}

fn cmake_config(static_libs: &[String]) -> String {
    let libs: Vec<String> =
        static_libs.iter().map(|l| l.trim_start_matches("-l").to_owned()).collect();
    format!(
        "# hsakmt-rs: the targets of upstream libhsakmt's package.\n\
         get_filename_component(_HSAKMT_PREFIX \"${{CMAKE_CURRENT_LIST_DIR}}/../../..\" ABSOLUTE)\n\
         if(NOT TARGET hsakmt::hsakmt)\n\
         \x20 add_library(hsakmt::hsakmt SHARED IMPORTED)\n\
         \x20 set_target_properties(hsakmt::hsakmt PROPERTIES\n\
         \x20   IMPORTED_LOCATION \"${{_HSAKMT_PREFIX}}/lib/libhsakmt.so.1\"\n\
         \x20   IMPORTED_SONAME \"libhsakmt.so.1\"\n\
         \x20   INTERFACE_INCLUDE_DIRECTORIES \"${{_HSAKMT_PREFIX}}/include\")\n\
         endif()\n\
         if(NOT TARGET hsakmt::hsakmt_static)\n\
         \x20 add_library(hsakmt::hsakmt_static STATIC IMPORTED)\n\
         \x20 set_target_properties(hsakmt::hsakmt_static PROPERTIES\n\
         \x20   IMPORTED_LOCATION \"${{_HSAKMT_PREFIX}}/lib/libhsakmt.a\"\n\
         \x20   INTERFACE_INCLUDE_DIRECTORIES \"${{_HSAKMT_PREFIX}}/include\"\n\
         \x20   INTERFACE_LINK_LIBRARIES \"{}\")\n\
         endif()\n\
         set(hsakmt_FOUND TRUE)\n\
         unset(_HSAKMT_PREFIX)\n",
        libs.join(";")
    )
}

fn cmake_version() -> String {
    format!(
        "set(PACKAGE_VERSION \"{PACKAGE_VERSION}\")\n\
         set(PACKAGE_VERSION_COMPATIBLE FALSE)\n\
         if(NOT PACKAGE_FIND_VERSION OR \n\
         \x20  (PACKAGE_FIND_VERSION_MAJOR EQUAL 1 AND NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION))\n\
         \x20 set(PACKAGE_VERSION_COMPATIBLE TRUE)\n\
         endif()\n\
         if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)\n\
         \x20 set(PACKAGE_VERSION_EXACT TRUE)\n\
         endif()\n"
    )
}
