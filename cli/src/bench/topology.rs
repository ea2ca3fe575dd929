//! `topology.*`: the cost of a topology snapshot read from files, next to its floor in the same
//! run — the fastest plain reading of the same files: every directory holding one already open
//! (opened once, outside the timed region), then for each file one `openat` of its bare name,
//! one read, one close (no listing, no parsing); and the in-memory parse through the simulator.
//! Goals: ratio ≤ 1.2 on every profile of 100 files or more, ≤ 1.5 on smaller trees.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::time::Instant;

use hsakmt_core::topology::{READ_BUFFER, Topology};
use hsakmt_linux::{LinuxPlatform, SysfsTree};
use hsakmt_sim::{Profile, SimPlatform, profile_names, relative_path};
use rustix::fs::{Mode, OFlags};

use super::{Row, Samples};
use crate::platform::AnyPlatform;

/// The files of a tree as (held directory, bare name): what the floor opens.
struct FloorFiles {
    dirs: Vec<OwnedFd>,
    files: Vec<(usize, CString)>,
}

impl FloorFiles {
    /// Opens every directory holding one of `paths` (relative to `root`) once.
    fn open(root: &std::path::Path, paths: &[String]) -> Result<Self, String> {
        let mut index: BTreeMap<&str, usize> = BTreeMap::new();
        let mut dirs = Vec::new();
        let mut files = Vec::new();
        for p in paths {
            let (dir, name) = p.rsplit_once('/').unwrap_or(("", p.as_str()));
            let at = match index.get(dir) {
                Some(&i) => i,
                None => {
                    let path = root.join(dir);
                    let fd = rustix::fs::open(
                        &path,
                        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                        Mode::empty(),
                    )
                    .map_err(|e| format!("opening {}: {e}", path.display()))?;
                    dirs.push(fd);
                    index.insert(dir, dirs.len() - 1);
                    dirs.len() - 1
                }
            };
            files.push((at, CString::new(name).map_err(|e| e.to_string())?));
        }
        Ok(Self { dirs, files })
    }

    /// Opens (by bare name, in its held directory), reads (one buffer) and closes every file:
    /// what any reader of the tree must pay.
    fn read(&self, buf: &mut [u8]) -> usize {
        let mut total = 0;
        for (dir, name) in &self.files {
            let Some(dir) = self.dirs.get(*dir) else { continue };
            if let Ok(fd) = rustix::fs::openat(
                dir,
                name.as_c_str(),
                OFlags::RDONLY | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                total += rustix::io::read(&fd, &mut *buf).unwrap_or(0);
            }
        }
        total
    }
}

/// Profiles with fewer files than this have the looser goal.
const LARGE_TREE: usize = 100;

fn iterations(one: f64, budget_ns: f64, scale: f64) -> usize {
    ((budget_ns / one.max(1.0)) * scale).clamp(5.0, 20_000.0) as usize
}

pub(crate) fn run(scale: f64) -> Result<Vec<Row>, String> {
    measure(scale)
}

fn measure(scale: f64) -> Result<Vec<Row>, String> {
    let tmp = std::env::temp_dir().join(format!("hsakmt-bench-topology-{}", std::process::id()));
    let mut rows = Vec::new();
    // As `info::snapshot`: a constant in debug builds, allocated first in release builds.
    #[cfg(debug_assertions)]
    let mut topo: Box<Topology> = Box::new(const { Topology::new() });
    #[cfg(not(debug_assertions))]
    let mut topo: Box<Topology> = Box::write(Box::new_uninit(), Topology::new());
    let mut buf = vec![0u8; READ_BUFFER];
    for name in profile_names() {
        let profile = Profile::embedded(name).map_err(|e| e.to_string())?;
        let dir = tmp.join(name);
        profile.write_to(&dir).map_err(|e| format!("writing {}: {e}", dir.display()))?;
        let paths: Vec<String> = profile.files().map(|(f, _)| relative_path(f)).collect();
        let floor_files = FloorFiles::open(&dir, &paths)?;
        let tree = SysfsTree::at(dir.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
        let linux = AnyPlatform::from(LinuxPlatform::with_sysfs(tree));

        // Warm the page cache and size the run.
        let t = Instant::now();
        for _ in 0..3 {
            let _ = topo.refresh(&linux, &linux, &mut buf);
            floor_files.read(&mut buf);
        }
        let n = iterations(t.elapsed().as_nanos() as f64 / 6.0, 1e9, scale);
        let mut snap = Samples::with_capacity(n);
        let mut floor = Samples::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            let ok = topo.refresh(&linux, &linux, &mut buf).is_ok();
            snap.push(t.elapsed().as_nanos() as f64);
            let t = Instant::now();
            std::hint::black_box(floor_files.read(&mut buf));
            floor.push(t.elapsed().as_nanos() as f64);
            if !ok && name != "cpu-only-virtual-crat-2021" {
                return Err(format!("snapshot of {name} failed"));
            }
        }
        let mut row = Row::latency(format!("topology.snapshot.{name}"), &snap)
            .against("openat in held directories, read, close", &floor);
        row.extra.insert("files".into(), paths.len().into());
        row.extra.insert("iterations".into(), n.into());
        row = row.goal(if paths.len() >= LARGE_TREE { "ratio <= 1.2" } else { "ratio <= 1.5" });
        rows.push(row);

        // In memory: the same tree served by the simulator, so only parsing is measured.
        let sim = AnyPlatform::Sim(SimPlatform::builder().profile(profile).build());
        let t = Instant::now();
        let _ = topo.refresh(&sim, &sim, &mut buf);
        let n = iterations(t.elapsed().as_nanos() as f64, 5e8, scale);
        let mut parse = Samples::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            let _ = std::hint::black_box(topo.refresh(&sim, &sim, &mut buf));
            parse.push(t.elapsed().as_nanos() as f64);
        }
        let mut row = Row::latency(format!("topology.parse.{name}"), &parse);
        row.extra.insert("iterations".into(), n.into());
        rows.push(row);
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(rows)
}
