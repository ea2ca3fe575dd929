//! Helpers for the queue scenarios: GPU-visible host buffers, VRAM, signals, waits.

use std::ops::Deref;
use std::time::{Duration, Instant};

use hsakmt_core::device::{Allocation, MapNodes};
use hsakmt_core::memory::MemFlags;
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::signal::{Signal, SignalInit};
use hsakmt_core::topology::NodeKind;
use hsakmt_sim::{KernelRegistry, SimMapping, SimPlatform};

use crate::SimKfd;

/// A buffer from the memory API, with its CPU view.
#[derive(Debug)]
pub struct Buf {
    /// The allocation.
    pub alloc: Allocation<SimMapping>,
}

impl Deref for Buf {
    type Target = SimMapping;
    fn deref(&self) -> &SimMapping {
        self.alloc.mapping.as_ref().expect("a host-visible buffer")
    }
}

/// A zeroed buffer of `size` bytes (rounded up to a page) of non-paged system memory on the
/// first CPU node, mapped on every GPU (GPU VA == CPU VA), readable, writable and executable
/// (tests put shaders in these, as kfdtest does in its `isExec` buffers).
///
/// # Panics
/// When the memory API refuses.
#[must_use]
pub fn host_buffer(kfd: &SimKfd, size: u64) -> Buf {
    host_buffer_with(kfd, size, MemFlags::EXECUTE_ACCESS)
}

/// As [`host_buffer`], with `extra` memory flags instead of `EXECUTE_ACCESS` (`READ_ONLY`:
/// the GPU may not write it; without `EXECUTE_ACCESS` waves may not run code from it).
///
/// # Panics
/// When the memory API refuses.
#[must_use]
pub fn host_buffer_with(kfd: &SimKfd, size: u64, extra: MemFlags) -> Buf {
    let size = size.next_multiple_of(4096);
    let alloc = kfd
        .alloc_memory(cpu_node(kfd), size, MemFlags::NON_PAGED | MemFlags::HOST_ACCESS | extra)
        .expect("host memory");
    kfd.map_memory_to_gpu(alloc.addr, MapNodes::All).expect("mapped on the GPUs");
    Buf { alloc }
}

/// `size` bytes of GPU `node`'s VRAM, CPU-visible when `host_access` (large BAR), mapped on
/// the GPUs in `map_on`.
///
/// # Panics
/// When the memory API refuses.
#[must_use]
pub fn vram(
    kfd: &SimKfd,
    node: u32,
    size: u64,
    host_access: bool,
    map_on: &[u32],
) -> Allocation<SimMapping> {
    let mut flags = MemFlags::NON_PAGED | MemFlags::COARSE_GRAIN;
    if host_access {
        flags |= MemFlags::HOST_ACCESS;
    }
    let alloc = kfd.alloc_memory(node, size.next_multiple_of(4096), flags).expect("VRAM");
    kfd.map_memory_to_gpu(alloc.addr, MapNodes::Only(map_on)).expect("mapped");
    alloc
}

/// User node ids of the GPU nodes, in order.
///
/// # Panics
/// When the device is not open.
#[must_use]
pub fn gpu_nodes(kfd: &SimKfd) -> Vec<u32> {
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
pub fn cpu_node(kfd: &SimKfd) -> u32 {
    kfd.with_topology(|t| {
        t.nodes().find(|n| n.node().kind() == NodeKind::Cpu).and_then(|n| n.node().user_id())
    })
    .expect("open")
    .expect("a CPU node")
}

/// `n` HSA signals in one buffer.
pub struct Signals {
    /// The memory.
    pub mem: Buf,
}

impl Signals {
    /// `n` user signals, each with `value`.
    ///
    /// # Panics
    /// When the buffer cannot be made.
    #[must_use]
    pub fn new(kfd: &SimKfd, n: usize, value: i64) -> Self {
        let mem = host_buffer(kfd, (n as u64 * 64).max(4096));
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
        Signal::new(&*self.mem, i * 64).expect("signal")
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

/// Registers `vadd` — `c[i] = a[i] + b[i]` over u32s, kernargs `[a, b, c]` — in `kernels`
/// (a simulator's [`SimPlatform::kernels`] or a host driver's registry: one helper serves
/// both); returns its kernel-object address.
pub fn register_vadd(kernels: &KernelRegistry) -> u64 {
    kernels.register("vadd", |ctx| {
        let (a, b, c) = (ctx.kernarg_u64(0)?, ctx.kernarg_u64(1)?, ctx.kernarg_u64(2)?);
        for [x, _, _] in ctx.work_items() {
            let off = 4 * u64::from(x);
            let v = ctx.load_u32(a + off)?.wrapping_add(ctx.load_u32(b + off)?);
            ctx.store_u32(c + off, v)?;
        }
        Ok(())
    })
}
