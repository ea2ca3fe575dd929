//! `memory.*`: the cost of an allocate + free pair through the whole library over the
//! simulator (`memory.alloc_free.*`), the library's own share of it with every platform call
//! answered instantly (`memory.bookkeeping.*`), each next to the simulator's two ioctls issued
//! directly with the same arguments, at 1, 1,000 and 100,000 live allocations. The platform
//! calls one pair makes are counted by kind.
//!
//! The live allocations are 4 KiB CPU-invisible VRAM buffers (they cost the simulator no host
//! mapping, so 100,000 of them fit under the kernel's map-count limit); the measured pair is
//! the named kind. Every sample includes one pair of `Instant::now` calls (reported as
//! `timer_ns`). Process-id reads (fork detection) are counted but are no system call on Linux
//! (a wipe-on-fork cache) nor in the simulator.
//!
//! The measured pairs repeat one shape, so after the warm-up every allocation is served by the
//! memory manager's recycle cache (the freed pair's address range and object slot, reused in
//! `O(1)`; see `hsakmt_core::device::memory_manager`); each row also reports how many freed
//! allocations the cache held after the run (`recycled`). The bookkeeping goal counts the
//! timer; the maximum of a run is bounded by the host's scheduling and interrupts, not by the
//! library (whose worst cases are documented in `hsakmt_core::memory`), so the bookkeeping rows
//! also give `over_2us`, the number of pairs above the 2 us bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use hsakmt_core::device::Kfd;
use hsakmt_core::error::Errno;
use hsakmt_core::memory::MemFlags;
use hsakmt_core::memory::kfd_flags::{BufferKind, alloc_flags};
use hsakmt_core::platform::{
    Access, Host, Ioctl, KfdDevice, OpenError, SharedMemory, Sysfs, SysfsDir, SysfsFile,
};
use hsakmt_core::uapi::{kfd_ioctl_alloc_memory_of_gpu_args, kfd_ioctl_free_memory_of_gpu_args};
use hsakmt_linux::{BoxedMemory, boxed_tables};
use hsakmt_sim::SimPlatform;

use super::{Row, Samples};
use crate::platform::AnyPlatform;

/// Object capacity of the benchmark's device facades.
const CAPACITY: usize = 131_072;
const LIVE: [(usize, &str); 3] = [(1, "live_1"), (1_000, "live_1k"), (100_000, "live_100k")];
/// The CPU node's id.
pub(super) const CPU_NODE: u32 = 0;

#[derive(Debug, Clone, Copy)]
struct Case {
    name: &'static str,
    host: bool,
    size: u64,
    flags: MemFlags,
}

const CASES: [Case; 3] = [
    Case {
        name: "vram_4k",
        host: false,
        size: 4 << 10,
        flags: MemFlags::NON_PAGED.union(MemFlags::COARSE_GRAIN),
    },
    Case {
        name: "vram_2m",
        host: false,
        size: 2 << 20,
        flags: MemFlags::NON_PAGED.union(MemFlags::COARSE_GRAIN),
    },
    Case {
        name: "host_64k",
        host: true,
        size: 64 << 10,
        flags: MemFlags::NON_PAGED.union(MemFlags::HOST_ACCESS),
    },
];

const LIVE_FLAGS: MemFlags = MemFlags::NON_PAGED.union(MemFlags::COARSE_GRAIN);

// ---- a platform that counts its calls ----------------------------------------------------

const KINDS: [&str; 13] = [
    "ioctl",
    "open",
    "close",
    "open_render_node",
    "close_fd",
    "reserve_va",
    "release_va",
    "map_kfd",
    "map_buffer",
    "map_anonymous",
    "read_file",
    "list_dir",
    "process_id",
];

/// The simulator, counting every platform call by kind (clock and environment reads too).
pub(crate) struct Counting {
    inner: SimPlatform,
    counts: Arc<[AtomicU64; 15]>,
}

impl Counting {
    /// `inner` counted, and a second handle on the counts.
    fn new(inner: SimPlatform) -> (Self, Self) {
        let counts = Arc::new(std::array::from_fn(|_| AtomicU64::new(0)));
        let handle = Counting { inner: inner.clone(), counts: Arc::clone(&counts) };
        (Counting { inner, counts }, handle)
    }

    /// The simulator counted.
    pub(crate) fn inner(&self) -> &SimPlatform {
        &self.inner
    }

    fn bump(&self, kind: usize) {
        if let Some(c) = self.counts.get(kind) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn snapshot(&self) -> [u64; 15] {
        std::array::from_fn(|i| self.counts[i].load(Ordering::Relaxed))
    }
}

impl Sysfs for Counting {
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
        self.bump(10);
        self.inner.read_file(file, buf)
    }
    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
        self.bump(11);
        self.inner.list_dir(dir, out)
    }
}

impl Host for Counting {
    fn now_ns(&self) -> u64 {
        self.bump(13);
        self.inner.now_ns()
    }
    fn process_id(&self) -> u32 {
        self.bump(12);
        self.inner.process_id()
    }
    fn env_var(&self, name: &str, buf: &mut [u8]) -> Option<usize> {
        self.bump(14);
        self.inner.env_var(name, buf)
    }
}

impl KfdDevice for Counting {
    type Mapping = <SimPlatform as KfdDevice>::Mapping;
    fn open(&self) -> Result<(), OpenError> {
        self.bump(1);
        self.inner.open()
    }
    fn close(&self) {
        self.bump(2);
        self.inner.close();
    }
    fn ioctl(&self, request: &mut Ioctl<'_>) -> Result<(), Errno> {
        self.bump(0);
        self.inner.ioctl(request)
    }
    fn open_render_node(&self, minor: u32) -> Result<u32, Errno> {
        self.bump(3);
        self.inner.open_render_node(minor)
    }
    fn close_fd(&self, fd: u32) {
        self.bump(4);
        self.inner.close_fd(fd);
    }
    fn poll_fd(&self, fd: u32, timeout_ms: i32) -> Result<bool, Errno> {
        self.inner.poll_fd(fd, timeout_ms)
    }
    fn read_fd(&self, fd: u32, buf: &mut [u8]) -> Result<usize, Errno> {
        self.inner.read_fd(fd, buf)
    }
    fn write_fd(&self, fd: u32, data: &[u8]) -> Result<usize, Errno> {
        self.inner.write_fd(fd, data)
    }
    fn create_pipe(&self) -> Result<(u32, u32), Errno> {
        self.inner.create_pipe()
    }
    fn reserve_va(&self, hint: Option<u64>, size: u64, align: u64) -> Result<u64, Errno> {
        self.bump(5);
        self.inner.reserve_va(hint, size, align)
    }
    fn release_va(&self, addr: u64, size: u64) -> Result<(), Errno> {
        self.bump(6);
        self.inner.release_va(addr, size)
    }
    fn map_kfd(
        &self,
        offset: u64,
        size: u64,
        addr: Option<u64>,
        access: Access,
    ) -> Result<Self::Mapping, Errno> {
        self.bump(7);
        self.inner.map_kfd(offset, size, addr, access)
    }
    fn map_buffer(
        &self,
        render_fd: u32,
        offset: u64,
        size: u64,
        addr: u64,
        access: Access,
    ) -> Result<Self::Mapping, Errno> {
        self.bump(8);
        self.inner.map_buffer(render_fd, offset, size, addr, access)
    }
    fn map_anonymous(&self, addr: u64, size: u64) -> Result<Self::Mapping, Errno> {
        self.bump(9);
        self.inner.map_anonymous(addr, size)
    }
}

// ---- a platform whose memory calls cost nothing ------------------------------------------

/// A CPU "mapping" that maps nothing (the bookkeeping rows never touch memory).
#[derive(Debug, Clone)]
pub(super) struct NoMapping {
    addr: u64,
    len: usize,
}

impl SharedMemory for NoMapping {
    fn addr(&self) -> u64 {
        self.addr
    }
    fn len(&self) -> usize {
        self.len
    }
    fn u32s(&self) -> &[std::sync::atomic::AtomicU32] {
        &[]
    }
    fn u64s(&self) -> &[AtomicU64] {
        &[]
    }
    fn write(&self, _offset: usize, _src: &[u8]) -> Result<(), Errno> {
        Err(Errno::EFAULT)
    }
    fn read(&self, _offset: usize, _dst: &mut [u8]) -> Result<(), Errno> {
        Err(Errno::EFAULT)
    }
    fn is_shared(&self) -> bool {
        false
    }
}

/// The simulator for opening (topology, apertures, VMs), answering the memory ioctls and CPU
/// mappings instantly: what is left of an alloc + free pair is the library's own work.
pub(super) struct Instant0 {
    inner: SimPlatform,
    next: AtomicU64,
    /// With `Some`, address-space reservations are only counted out of a notional window
    /// from this address on, never made (see [`Instant0::unreserved`]).
    notional_va: Option<AtomicU64>,
}

/// Where [`Instant0::unreserved`] hands out its notional reservations: above what a user
/// process maps on x86-64 Linux below 2^47 by default, and canonical.
const NOTIONAL_VA_BASE: u64 = 0x4000_0000_0000;

impl Instant0 {
    /// Over a default simulator.
    pub(super) fn new() -> Self {
        Instant0 { inner: SimPlatform::new(), next: AtomicU64::new(1), notional_va: None }
    }

    /// As [`Instant0::new`], but address-space reservations are answered from a notional
    /// window and not made: the library's bookkeeping is the same, and a tool with a small
    /// address space of its own (valgrind) can run 100,000 live allocations (hundreds of GiB
    /// of address space).
    pub(super) fn unreserved() -> Self {
        Instant0 { notional_va: Some(AtomicU64::new(NOTIONAL_VA_BASE)), ..Self::new() }
    }
}

impl Sysfs for Instant0 {
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
        self.inner.read_file(file, buf)
    }
    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
        self.inner.list_dir(dir, out)
    }
}

impl Host for Instant0 {
    fn now_ns(&self) -> u64 {
        self.inner.now_ns()
    }
    fn process_id(&self) -> u32 {
        self.inner.process_id()
    }
    fn env_var(&self, name: &str, buf: &mut [u8]) -> Option<usize> {
        self.inner.env_var(name, buf)
    }
}

impl KfdDevice for Instant0 {
    type Mapping = NoMapping;
    fn open(&self) -> Result<(), OpenError> {
        self.inner.open()
    }
    fn close(&self) {
        self.inner.close();
    }
    fn ioctl(&self, request: &mut Ioctl<'_>) -> Result<(), Errno> {
        match request {
            Ioctl::AllocMemoryOfGpu(a) => {
                // The benchmark is single-threaded: no locked read-modify-write.
                let n = self.next.load(Ordering::Relaxed);
                self.next.store(n + 1, Ordering::Relaxed);
                a.handle = (u64::from(a.gpu_id) << 32) | (n & 0xffff_ffff);
                a.mmap_offset = n << 12;
                Ok(())
            }
            Ioctl::FreeMemoryOfGpu(_) => Ok(()),
            _ => self.inner.ioctl(request),
        }
    }
    fn open_render_node(&self, minor: u32) -> Result<u32, Errno> {
        self.inner.open_render_node(minor)
    }
    fn close_fd(&self, fd: u32) {
        self.inner.close_fd(fd);
    }
    fn poll_fd(&self, fd: u32, timeout_ms: i32) -> Result<bool, Errno> {
        self.inner.poll_fd(fd, timeout_ms)
    }
    fn read_fd(&self, fd: u32, buf: &mut [u8]) -> Result<usize, Errno> {
        self.inner.read_fd(fd, buf)
    }
    fn write_fd(&self, fd: u32, data: &[u8]) -> Result<usize, Errno> {
        self.inner.write_fd(fd, data)
    }
    fn create_pipe(&self) -> Result<(u32, u32), Errno> {
        self.inner.create_pipe()
    }
    fn reserve_va(&self, hint: Option<u64>, size: u64, align: u64) -> Result<u64, Errno> {
        let Some(next) = &self.notional_va else {
            return self.inner.reserve_va(hint, size, align);
        };
        // Single-threaded, like the rest of the benchmark.
        let base = next.load(Ordering::Relaxed).next_multiple_of(align.max(4096));
        let end = base.checked_add(size).filter(|&e| e <= 1 << 47).ok_or(Errno::ENOMEM)?;
        next.store(end, Ordering::Relaxed);
        Ok(base)
    }
    fn release_va(&self, addr: u64, size: u64) -> Result<(), Errno> {
        match self.notional_va {
            Some(_) => Ok(()),
            None => self.inner.release_va(addr, size),
        }
    }
    fn map_kfd(&self, _: u64, size: u64, addr: Option<u64>, _: Access) -> Result<NoMapping, Errno> {
        Ok(NoMapping { addr: addr.unwrap_or(0), len: usize::try_from(size).unwrap_or(0) })
    }
    fn map_buffer(
        &self,
        _: u32,
        _: u64,
        size: u64,
        addr: u64,
        _: Access,
    ) -> Result<NoMapping, Errno> {
        Ok(NoMapping { addr, len: usize::try_from(size).unwrap_or(0) })
    }
    fn map_anonymous(&self, addr: u64, size: u64) -> Result<NoMapping, Errno> {
        Ok(NoMapping { addr, len: usize::try_from(size).unwrap_or(0) })
    }
}

// ---- measurement ---------------------------------------------------------------------------

/// Allocates live buffers until `live` are held (keeping the vector's allocations).
fn populate<P, F>(live: &mut Vec<u64>, target: usize, mut alloc: F) -> Result<(), String>
where
    F: FnMut() -> Result<u64, P>,
    P: std::fmt::Display,
{
    while live.len() < target {
        live.push(alloc().map_err(|e| format!("populating live allocations: {e}"))?);
    }
    Ok(())
}

fn timer_overhead() -> f64 {
    let mut s = Samples::with_capacity(10_000);
    for _ in 0..10_000 {
        let t = Instant::now();
        s.push(t.elapsed().as_nanos() as f64);
    }
    s.percentile(50.0)
}

macro_rules! pairs {
    ($kfd:expr, $case:expr, $node:expr, $n:expr) => {{
        let mut samples = Samples::with_capacity($n);
        for _ in 0..$n {
            let t = Instant::now();
            let a = $kfd
                .alloc_memory($node, $case.size, $case.flags)
                .map_err(|e| format!("{}: {e}", $case.name))?;
            $kfd.free(a).map_err(|e| format!("{}: {e}", $case.name))?;
            samples.push(t.elapsed().as_nanos() as f64);
        }
        samples
    }};
}

/// ALLOC + FREE issued directly on the simulator with the arguments the library uses.
fn ioctl_reference(
    sim: &SimPlatform,
    case: Case,
    gpu_id: u32,
    va: u64,
    n: usize,
) -> Result<Samples, String> {
    let kind = if case.host { BufferKind::Gtt } else { BufferKind::Vram };
    let flags = alloc_flags(kind, case.flags, false);
    let mut s = Samples::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: va,
            size: case.size,
            gpu_id,
            flags,
            ..Default::default()
        };
        sim.ioctl(&mut Ioctl::AllocMemoryOfGpu(&mut a))
            .map_err(|e| format!("reference alloc: {e}"))?;
        let mut f = kfd_ioctl_free_memory_of_gpu_args { handle: a.handle };
        sim.ioctl(&mut Ioctl::FreeMemoryOfGpu(&mut f))
            .map_err(|e| format!("reference free: {e}"))?;
        s.push(t.elapsed().as_nanos() as f64);
    }
    Ok(s)
}

pub(crate) fn run(scale: f64) -> Result<Vec<Row>, String> {
    measure(scale)
}

fn measure(scale: f64) -> Result<Vec<Row>, String> {
    let n = ((20_000.0 * scale) as usize).max(100);
    let timer = timer_overhead();

    let sim = SimPlatform::new();
    let full: Box<Kfd<AnyPlatform, BoxedMemory>> =
        Box::new(Kfd::with_memory(AnyPlatform::Sim(sim.clone()), boxed_tables(CAPACITY)));
    full.open().map_err(|e| e.to_string())?;
    let gpu_node = full.gpu_nodes().map_err(|e| e.to_string())?.first().ok_or("no GPU")?;
    let gpu_id = sim.gpu_ids().first().copied().ok_or("no GPU")?;

    // The library as a program linking one platform gets it: not through the tool's
    // platform enum, whose dispatch would be timed with the bookkeeping.
    let book: Box<Kfd<Instant0, BoxedMemory>> =
        Box::new(Kfd::with_memory(Instant0::new(), boxed_tables(CAPACITY)));
    book.open().map_err(|e| e.to_string())?;

    // Platform calls of one pair, by kind.
    let (counting, counter) = Counting::new(SimPlatform::new());
    let counted: Box<Kfd<AnyPlatform, BoxedMemory>> =
        Box::new(Kfd::with_memory(AnyPlatform::Counted(counting), boxed_tables(64)));
    counted.open().map_err(|e| e.to_string())?;
    let mut calls = std::collections::BTreeMap::new();
    for case in CASES {
        let node = if case.host { CPU_NODE } else { gpu_node };
        let _ = counted.alloc_memory(node, case.size, case.flags).and_then(|a| counted.free(a)); // warm
        let before = counter.snapshot();
        let a = counted.alloc_memory(node, case.size, case.flags).map_err(|e| e.to_string())?;
        counted.free(a).map_err(|e| e.to_string())?;
        let after = counter.snapshot();
        let per: serde_json::Map<String, serde_json::Value> = KINDS
            .iter()
            .chain(["now_ns", "env_var"].iter())
            .zip(after.iter().zip(before.iter()))
            .filter(|(_, (a, b))| a > b)
            .map(|(k, (a, b))| ((*k).to_string(), (a - b).into()))
            .collect();
        calls.insert(case.name, per);
    }

    let mut rows = Vec::new();
    let mut live_full = Vec::new();
    let mut live_book = Vec::new();
    let reference_va = reference_range(&sim)?;
    for (live, suffix) in LIVE {
        populate(&mut live_full, live, || {
            full.alloc_memory(gpu_node, 4096, LIVE_FLAGS).map(|a| a.addr)
        })?;
        populate(&mut live_book, live, || {
            book.alloc_memory(gpu_node, 4096, LIVE_FLAGS).map(|a| a.addr)
        })?;
        for case in CASES {
            let node = if case.host { CPU_NODE } else { gpu_node };
            // Warm up, then measure the three in the same run.
            let warm = (n / 10).max(10);
            let _ = pairs!(full, case, node, warm);
            let _ = pairs!(book, case, node, warm);
            let reference = ioctl_reference(&sim, case, gpu_id, reference_va, n)?;
            let whole = pairs!(full, case, node, n);
            let own = pairs!(book, case, node, n);
            let per_pair = calls.get(case.name).cloned().unwrap_or_default();
            let ioctls = per_pair.get("ioctl").and_then(serde_json::Value::as_u64).unwrap_or(0);
            let pid = per_pair.get("process_id").and_then(serde_json::Value::as_u64).unwrap_or(0);
            let others: u64 = per_pair
                .iter()
                .filter(|(k, _)| k.as_str() != "ioctl" && k.as_str() != "process_id")
                .filter_map(|(_, v)| v.as_u64())
                .sum();
            let mut row = Row::latency(format!("memory.alloc_free.{}.{suffix}", case.name), &whole)
                .against("sim-alloc+free-ioctls", &reference);
            if !case.host {
                // 2 ioctls and no other system call (process-id reads are cached, no syscall).
                row = row.goal("ioctls <= 2, other_platform_calls <= 0");
            }
            row.extra.insert("ioctls".into(), ioctls.into());
            row.extra.insert("other_platform_calls".into(), others.into());
            row.extra.insert("process_id_reads".into(), pid.into());
            row.extra.insert("platform_calls_per_pair".into(), per_pair.clone().into());
            row.extra.insert("iterations".into(), n.into());
            row.extra.insert("timer_ns".into(), timer.into());
            rows.push(row);
            let mut row = Row::latency(format!("memory.bookkeeping.{}.{suffix}", case.name), &own)
                .against("sim-alloc+free-ioctls", &reference);
            if live == 100_000 {
                // The timer is included; no goal rests on `max`, which on a VM measures the
                // hypervisor.
                row = row.goal("p50 <= 100 ns, p99.9 <= 2 us");
            }
            row.extra.insert("iterations".into(), n.into());
            row.extra.insert("timer_ns".into(), timer.into());
            row.extra.insert("recycled".into(), book.memory_usage().recycled.into());
            // How rare the tail is: the maximum of a run is set by the host's interrupts and
            // preemption, so say how many pairs went over the 2 us bound.
            row.extra.insert("over_2us".into(), own.count_above(2_000.0).into());
            rows.push(row);
        }
    }
    for addr in live_full {
        full.free_memory(addr).map_err(|e| e.to_string())?;
    }
    for addr in live_book {
        book.free_memory(addr).map_err(|e| e.to_string())?;
    }
    let _ = sim.release_va(reference_va, REFERENCE_RANGE);
    drop((full, book));
    rows.extend(super::mixed::rows(scale)?);
    Ok(rows)
}

const REFERENCE_RANGE: u64 = 4 << 20;

/// An address range for the reference ioctls (the simulator only records the address).
fn reference_range(sim: &SimPlatform) -> Result<u64, String> {
    sim.reserve_va(None, REFERENCE_RANGE, 2 << 20).map_err(|e| format!("reserving: {e}"))
}
