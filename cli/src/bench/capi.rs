//! `capi.*`: the C ABI's cost over the Rust facade on the same calls, side by side in one run.
//!
//! The C side calls the exported `extern "C"` functions of hsakmt-capi in-process
//! ([`hsakmt_capi::inproc`], out-of-line calls as from C) on the library's own device; the Rust
//! side calls [`Kfd`] on a facade of its own with the same object capacity. Both run over the
//! simulator with the default profile. Rounds alternate the two so they share the machine's
//! noise; the first round warms up and is dropped. Goal for each row: ratio ≤ 1.10.
//!
//! - `capi.alloc_free.vram_4k`: `hsaKmtAllocMemory` + `hsaKmtFreeMemory` of 4 KiB of
//!   CPU-invisible VRAM, against `Kfd::alloc_memory` + `Kfd::free`.
//! - `capi.event_query`: `hsaKmtQueryEventState` against `Kfd::query_event` (no system call).
//! - `capi.queue_info`: `hsaKmtGetQueueInfo` of an inactive compute queue against
//!   `Kfd::queue_wave_state` (one ioctl each).

use std::sync::OnceLock;
use std::time::Instant;

use hsakmt_capi::inproc::{self, Library};
use hsakmt_capi::types::HsaMemFlags;
use hsakmt_core::device::queue_manager::{QueueDesc, QueueType};
use hsakmt_core::device::{EventDescriptor, Kfd};
use hsakmt_core::memory::MemFlags;
use hsakmt_linux::{BoxedMemory, boxed_tables};
use hsakmt_sim::{DEFAULT_PROFILE, SimPlatform};

use super::{Row, Samples};
use crate::platform::AnyPlatform;

type Dev = Kfd<AnyPlatform, BoxedMemory>;

/// The C library's object capacity, given to the Rust facade too.
const OBJECTS: usize = 16_384;
/// Calls per sample of the cheap calls (the timer costs more than a query).
const BATCH: usize = 1000;
/// The goal of every row.
const GOAL: &str = "ratio <= 1.10";

pub(crate) fn run(scale: f64) -> Result<Vec<Row>, String> {
    measure(scale)
}

fn measure(scale: f64) -> Result<Vec<Row>, String> {
    // The C library's device is built once per process, at its first open: chosen once, so
    // that `--check` can measure the rows again.
    static CHOSEN: OnceLock<Result<(), String>> = OnceLock::new();
    CHOSEN.get_or_init(|| inproc::use_simulator(DEFAULT_PROFILE)).clone()?;
    let lib = Library::open()?;
    let c_gpu = lib.first_gpu()?;
    let kfd: Box<Dev> =
        Box::new(Kfd::with_memory(AnyPlatform::Sim(SimPlatform::new()), boxed_tables(OBJECTS)));
    kfd.open().map_err(|e| e.to_string())?;
    let gpu = kfd.gpu_nodes().map_err(|e| e.to_string())?.first().ok_or("no GPU")?;
    if gpu != c_gpu {
        return Err(format!("the C library's first GPU is node {c_gpu}, the facade's {gpu}"));
    }

    let c_event = lib.create_event()?;
    let event = kfd.create_event(&EventDescriptor::signal()).map_err(|e| e.to_string())?;
    let c_queue = lib.create_idle_queue(gpu)?;
    let queue = kfd
        .create_queue(&QueueDesc::new(gpu, QueueType::Compute, 4096).with_percentage(0))
        .map_err(|e| e.to_string())?
        .handle;

    let vram_c = HsaMemFlags::default().with(HsaMemFlags::NonPaged, 1);
    let vram = MemFlags::NON_PAGED;
    let n = ((2000.0 * scale) as usize).max(50);
    let rounds = 5;
    let per = (n / (rounds - 1)).max(10);
    let mut s: [Samples; 6] = Default::default();
    for round in 0..rounds {
        let mut r: [Samples; 6] = Default::default();
        for _ in 0..per {
            let t = Instant::now();
            lib.alloc_free(gpu, 4096, vram_c)?;
            r[0].push(t.elapsed().as_nanos() as f64);
            let t = Instant::now();
            let a = kfd.alloc_memory(gpu, 4096, vram).map_err(|e| e.to_string())?;
            kfd.free(a).map_err(|e| e.to_string())?;
            r[1].push(t.elapsed().as_nanos() as f64);
        }
        for _ in 0..per {
            let t = Instant::now();
            for _ in 0..BATCH {
                c_event.query()?;
            }
            r[2].push(t.elapsed().as_nanos() as f64 / BATCH as f64);
            let t = Instant::now();
            for _ in 0..BATCH {
                std::hint::black_box(
                    kfd.query_event(std::hint::black_box(event)).map_err(|e| e.to_string())?,
                );
            }
            r[3].push(t.elapsed().as_nanos() as f64 / BATCH as f64);
        }
        for _ in 0..per {
            let t = Instant::now();
            std::hint::black_box(c_queue.info()?);
            r[4].push(t.elapsed().as_nanos() as f64);
            let t = Instant::now();
            std::hint::black_box(kfd.queue_wave_state(queue).map_err(|e| e.to_string())?);
            r[5].push(t.elapsed().as_nanos() as f64);
        }
        if round > 0 {
            for (all, this) in s.iter_mut().zip(&r) {
                all.extend(this);
            }
        }
    }

    drop(c_queue);
    drop(c_event);
    drop(lib);
    kfd.destroy_queue(queue).map_err(|e| e.to_string())?;
    kfd.destroy_event(event).map_err(|e| e.to_string())?;
    kfd.close().map_err(|e| e.to_string())?;

    let row = |name: &str, c: &Samples, rust: &'static str, r: &Samples| {
        let mut row = Row::latency(name, c).against(rust, r).goal(GOAL);
        row.extra.insert("iterations".into(), (per * (rounds - 1)).into());
        row
    };
    let mut query = row("capi.event_query", &s[2], "facade.query_event", &s[3]);
    query.extra.insert("batch".into(), BATCH.into());
    Ok(vec![
        row("capi.alloc_free.vram_4k", &s[0], "facade.alloc_free.vram_4k", &s[1]),
        query,
        row("capi.queue_info", &s[4], "facade.queue_wave_state", &s[5]),
    ])
}
