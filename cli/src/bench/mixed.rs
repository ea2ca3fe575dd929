//! `memory.bookkeeping.mixed.{live_1k,live_100k}`: the library's own share of allocation and
//! free (every platform call answered instantly, as `memory.bookkeeping.*`) when shapes do not
//! repeat, so the recycle cache has nothing to give and the VA allocator and the address index
//! do their work. `live` allocations of log-uniform random sizes from 4 KiB to 64 MiB, VRAM and
//! system memory mixed, are made first; then each sample frees a random live allocation and
//! makes a new random one in its place (one timer pair per free + allocate). Goals at 100,000
//! live: p50 ≤ 250 ns, p99.9 ≤ 2 µs; every row reports `over_2us`, the samples above 2 µs (a
//! VM's `max` measures its hypervisor, so no goal rests on it).

use std::time::Instant;

use hsakmt_core::device::Kfd;
use hsakmt_core::memory::MemFlags;
use hsakmt_linux::{BoxedMemory, boxed_tables};

use super::memory::{CPU_NODE, Instant0};
use super::{Row, Samples};

/// Object capacity of the benchmark's facade (above the largest live count).
const CAPACITY: usize = 131_072;
const LIVE: [(usize, &str); 2] = [(1_000, "live_1k"), (100_000, "live_100k")];
/// log2 of the smallest and largest sizes: 4 KiB and 64 MiB.
const SIZE_LOG2: (f64, f64) = (12.0, 26.0);
const VRAM: MemFlags = MemFlags::NON_PAGED.union(MemFlags::COARSE_GRAIN);
const SYSTEM: MemFlags = MemFlags::NON_PAGED.union(MemFlags::HOST_ACCESS);

/// xorshift64*: reproducible random shapes without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A page-rounded log-uniform size and a kind (VRAM or system memory).
    fn shape(&mut self) -> (u64, bool) {
        let log2 = SIZE_LOG2.0 + (SIZE_LOG2.1 - SIZE_LOG2.0) * self.unit();
        let size = (log2.exp2() as u64).next_multiple_of(4096);
        (size, self.next() & 1 == 0)
    }
}

type Book = Kfd<Instant0, BoxedMemory>;

fn alloc(kfd: &Book, gpu: u32, (size, vram): (u64, bool)) -> Result<u64, String> {
    let (node, flags) = if vram { (gpu, VRAM) } else { (CPU_NODE, SYSTEM) };
    kfd.alloc_memory(node, size, flags)
        .map(|a| a.addr)
        .map_err(|e| format!("{} of {size} bytes: {e}", if vram { "VRAM" } else { "system" }))
}

/// Populates `live` allocations of random shapes, then makes `pairs` random free + allocate
/// pairs (as the rows do, untimed) and exits: nothing else depends on `pairs`, so under
/// cachegrind the difference of two runs' counts over the difference of pairs is the cost of
/// one pair. Address-space reservations are notional ([`Instant0::unreserved`]), so that
/// valgrind can hold the address space of 100,000 allocations.
///
/// # Errors
/// An allocation or free that fails.
pub(super) fn mixed_only(live: usize, pairs: usize) -> Result<(), String> {
    let book: Box<Book> =
        Box::new(Kfd::with_memory(Instant0::unreserved(), boxed_tables(CAPACITY)));
    book.open().map_err(|e| e.to_string())?;
    let gpu = book.gpu_nodes().map_err(|e| e.to_string())?.first().ok_or("no GPU")?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut held: Vec<u64> = Vec::with_capacity(live.max(1));
    while held.len() < live.max(1) {
        held.push(alloc(&book, gpu, rng.shape())?);
    }
    for _ in 0..pairs {
        let slot = (rng.next() % held.len() as u64) as usize;
        let shape = rng.shape();
        book.free_memory(held[slot]).map_err(|e| e.to_string())?;
        held[slot] = alloc(&book, gpu, shape)?;
    }
    Ok(())
}

pub(super) fn rows(scale: f64) -> Result<Vec<Row>, String> {
    let n = ((20_000.0 * scale) as usize).max(100);
    let book: Box<Book> = Box::new(Kfd::with_memory(Instant0::new(), boxed_tables(CAPACITY)));
    book.open().map_err(|e| e.to_string())?;
    let gpu = book.gpu_nodes().map_err(|e| e.to_string())?.first().ok_or("no GPU")?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut live: Vec<u64> = Vec::with_capacity(CAPACITY);
    let mut rows = Vec::new();
    for (target, suffix) in LIVE {
        while live.len() < target {
            live.push(alloc(&book, gpu, rng.shape())?);
        }
        let mut samples = Samples::with_capacity(n);
        for i in 0..n + n / 10 {
            let slot = (rng.next() % live.len() as u64) as usize;
            let shape = rng.shape();
            let t = Instant::now();
            book.free_memory(live[slot]).map_err(|e| e.to_string())?;
            live[slot] = alloc(&book, gpu, shape)?;
            let ns = t.elapsed().as_nanos() as f64;
            if i >= n / 10 {
                samples.push(ns);
            }
        }
        let mut row = Row::latency(format!("memory.bookkeeping.mixed.{suffix}"), &samples);
        if target == 100_000 {
            row = row.goal("p50 <= 250 ns, p99.9 <= 2 us");
        }
        row.extra.insert("iterations".into(), n.into());
        row.extra.insert("over_2us".into(), samples.count_above(2_000.0).into());
        rows.push(row);
    }
    for addr in live {
        book.free_memory(addr).map_err(|e| e.to_string())?;
    }
    Ok(rows)
}
