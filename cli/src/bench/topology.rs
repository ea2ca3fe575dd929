//! `topology.*`: the cost of a topology snapshot read from files, next to the floor of plainly
//! opening, reading and closing the same files (no listing, no parsing) in the same run; and
//! the in-memory parse through the simulator.

use std::ffi::CString;
use std::time::Instant;

use hsakmt_core::topology::{READ_BUFFER, Topology};
use hsakmt_linux::{LinuxPlatform, SysfsTree};
use hsakmt_sim::{Profile, SimPlatform, profile_names, relative_path};
use rustix::fs::{Mode, OFlags};

use super::{Row, Samples};

/// Open, read (one page) and close every file: what any reader of the tree must pay.
fn read_floor(paths: &[CString], buf: &mut [u8]) -> usize {
    let mut total = 0;
    for p in paths {
        let fd = rustix::fs::open(p.as_c_str(), OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
            .expect("capture file opens");
        total += rustix::io::read(&fd, &mut *buf).unwrap_or(0);
    }
    total
}

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
        let paths: Vec<CString> = profile
            .files()
            .map(|(f, _)| {
                CString::new(dir.join(relative_path(f)).into_os_string().into_encoded_bytes())
            })
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        let tree = SysfsTree::at(dir.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
        let linux = LinuxPlatform::with_sysfs(tree);

        // Warm the page cache and size the run.
        let t = Instant::now();
        for _ in 0..3 {
            let _ = topo.refresh(&linux, &linux, &mut buf);
            read_floor(&paths, &mut buf);
        }
        let n = iterations(t.elapsed().as_nanos() as f64 / 6.0, 1e9, scale);
        let mut snap = Samples::with_capacity(n);
        let mut floor = Samples::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            let ok = topo.refresh(&linux, &linux, &mut buf).is_ok();
            snap.push(t.elapsed().as_nanos() as f64);
            let t = Instant::now();
            std::hint::black_box(read_floor(&paths, &mut buf));
            floor.push(t.elapsed().as_nanos() as f64);
            if !ok && name != "cpu-only-virtual-crat-2021" {
                return Err(format!("snapshot of {name} failed"));
            }
        }
        let mut row = Row::latency(format!("topology.snapshot.{name}"), &snap)
            .against("file-read-floor", &floor);
        row.extra.insert("files".into(), paths.len().into());
        row.extra.insert("iterations".into(), n.into());
        if name == hsakmt_sim::DEFAULT_PROFILE {
            row = row.goal("ratio <= 1.2");
        }
        rows.push(row);

        // In memory: the same tree served by the simulator, so only parsing is measured.
        let sim = SimPlatform::builder().profile(profile).build();
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
