//! Scenario tests of `hsakmt-core` over `hsakmt-sim` (the tests live in `tests/`), and the
//! helpers they share.

pub mod queue_support;

use hsakmt_core::device::Kfd;
use hsakmt_core::topology::{MIN_READ_BUFFER, Topology};
use hsakmt_sim::{Profile, SimPlatform};

/// Runs `f` on a thread with a 64 MiB stack: the topology snapshot and the device facade are
/// large values, and debug builds move them through the stack.
pub fn with_big_stack<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn_scoped(s, f)
            .expect("spawn test thread")
            .join()
            .expect("test thread panicked")
    })
}

/// A snapshot of `sim`'s topology.
///
/// # Panics
/// When the snapshot fails.
#[must_use]
pub fn snapshot(sim: &SimPlatform) -> Box<Topology> {
    let mut topo = Box::new(Topology::new());
    let mut buf = vec![0u8; MIN_READ_BUFFER];
    topo.refresh(sim, sim, &mut buf).expect("snapshot");
    topo
}

/// A simulator over the embedded profile `name`.
///
/// # Panics
/// For an unknown profile.
#[must_use]
pub fn sim(name: &str) -> SimPlatform {
    SimPlatform::builder().profile(Profile::embedded(name).expect("embedded profile")).build()
}

/// A boxed, closed device facade over `sim`.
#[must_use]
pub fn device(sim: SimPlatform) -> Box<Kfd<SimPlatform>> {
    Box::new(Kfd::new(sim))
}

/// Every `key value` line of a sysfs attribute file, as text pairs.
#[must_use]
pub fn key_values(bytes: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().to_string()))
        })
        .collect()
}
