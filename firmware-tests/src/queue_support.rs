//! Helpers for the queue scenarios: GPU-visible host buffers, signals, waits.

use std::time::{Duration, Instant};

use hsakmt_core::device::Kfd;
use hsakmt_core::platform::{KfdDevice, SharedMemory};
use hsakmt_core::queue::signal::{Signal, SignalInit};
use hsakmt_core::topology::NodeKind;
use hsakmt_sim::{SimMapping, SimPlatform};

/// A zeroed buffer of `size` bytes the simulated GPUs can reach (GPU VA == CPU VA).
///
/// # Panics
/// When the platform cannot map it.
#[must_use]
pub fn host_buffer(sim: &SimPlatform, size: u64) -> SimMapping {
    let addr = sim.reserve_va(None, size, 4096).expect("reserve");
    sim.map_anonymous(addr, size).expect("map")
}

/// Returns a buffer made by [`host_buffer`].
pub fn free_host_buffer(sim: &SimPlatform, buf: SimMapping) {
    let (addr, len) = (buf.addr(), buf.len() as u64);
    drop(buf);
    let _ = sim.release_va(addr, len);
}

/// User node ids of the GPU nodes, in order.
///
/// # Panics
/// When the device is not open.
#[must_use]
pub fn gpu_nodes(kfd: &Kfd<SimPlatform>) -> Vec<u32> {
    kfd.with_topology(|t| {
        t.nodes()
            .filter(|n| n.node().kind() != NodeKind::Cpu)
            .filter_map(|n| n.node().user_id())
            .collect()
    })
    .expect("open")
}

/// User node id of the first CPU node.
///
/// # Panics
/// When the device is not open or has no CPU node.
#[must_use]
pub fn cpu_node(kfd: &Kfd<SimPlatform>) -> u32 {
    kfd.with_topology(|t| {
        t.nodes().find(|n| n.node().kind() == NodeKind::Cpu).and_then(|n| n.node().user_id())
    })
    .expect("open")
    .expect("a CPU node")
}

/// `n` HSA signals in one buffer.
pub struct Signals {
    /// The memory.
    pub mem: SimMapping,
}

impl Signals {
    /// `n` user signals, each with `value`.
    ///
    /// # Panics
    /// When the buffer cannot be made.
    #[must_use]
    pub fn new(sim: &SimPlatform, n: usize, value: i64) -> Self {
        let mem = host_buffer(sim, (n as u64 * 64).max(4096));
        let s = Signals { mem };
        for i in 0..n {
            s.get(i).init(&SignalInit::User { value, mailbox: None });
        }
        s
    }

    /// Signal `i`.
    ///
    /// # Panics
    /// Out of range.
    #[must_use]
    pub fn get(&self, i: usize) -> Signal<'_, SimMapping> {
        Signal::new(&self.mem, i * 64).expect("signal")
    }

    /// The handle (address) of signal `i`.
    #[must_use]
    pub fn handle(&self, i: usize) -> u64 {
        self.mem.addr() + i as u64 * 64
    }
}

/// Waits until `cond` holds, running the simulator's queues meanwhile (so it works in step
/// mode too).
///
/// # Panics
/// After `timeout`.
pub fn wait_until(
    sim: &SimPlatform,
    timeout: Duration,
    what: &str,
    mut cond: impl FnMut() -> bool,
) {
    let start = Instant::now();
    while !cond() {
        sim.run_until_idle();
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::yield_now();
    }
}
