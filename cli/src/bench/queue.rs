//! `queue.*`: the submit path, the simulated command processor's latency, and SDMA copies.
//!
//! - `queue.aql_submit.*`: see [`super::submit`].
//! - `queue.dispatch_complete.sim`: threaded command processor, from the doorbell of a one
//!   work-group dispatch of an empty host kernel to the completion signal observed at 0;
//!   reference: a round trip between two threads through two atomics.
//! - `queue.sdma_copy.sim`: bytes/s of a 64 MiB copy through a simulated SDMA engine (16 × 4 MiB
//!   `COPY_LINEAR` packets and a fence), next to one `memcpy` of the same source buffer into a
//!   pre-faulted buffer of the same size.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use hsakmt_core::config::DEFAULT_MEMORY_OBJECTS;
use hsakmt_core::device::queue_manager::{AqlQueue, QueueDesc, QueueType, SdmaCompletion};
use hsakmt_core::device::{Kfd, MapNodes};
use hsakmt_core::memory::MemFlags;
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::aql::{AqlPacket, KernelDispatch};
use hsakmt_core::queue::signal::{Signal, SignalInit};
use hsakmt_core::topology::NodeKind;
use hsakmt_linux::{BoxedMemory, boxed_kfd};
use hsakmt_sim::{CpMode, SimPlatform};

use super::{Row, Samples};
use crate::platform::{AnyMapping, AnyPlatform};

pub(crate) fn run(scale: f64) -> Result<Vec<Row>, String> {
    measure(scale)
}

pub(super) fn open(mode: CpMode) -> Result<(Box<Kfd<AnyPlatform, BoxedMemory>>, u32), String> {
    let sim = AnyPlatform::Sim(SimPlatform::builder().cp_mode(mode).build());
    let kfd = boxed_kfd(sim, DEFAULT_MEMORY_OBJECTS);
    kfd.open().map_err(|e| e.to_string())?;
    let node = kfd
        .with_topology(|t| {
            t.nodes().filter(|n| n.node().kind() != NodeKind::Cpu).find_map(|n| n.node().user_id())
        })
        .map_err(|e| e.to_string())?
        .ok_or("the simulated machine has no GPU")?;
    Ok((kfd, node))
}

/// Non-paged system memory on a CPU node, mapped on every GPU, with its CPU view.
pub(super) fn buffer(kfd: &Kfd<AnyPlatform, BoxedMemory>, size: u64) -> Result<AnyMapping, String> {
    let cpu = kfd
        .with_topology(|t| {
            t.nodes().find(|n| n.node().kind() == NodeKind::Cpu).and_then(|n| n.node().user_id())
        })
        .map_err(|e| e.to_string())?
        .ok_or("the simulated machine has no CPU node")?;
    let a = kfd
        .alloc_memory(cpu, size, MemFlags::NON_PAGED | MemFlags::HOST_ACCESS)
        .map_err(|e| e.to_string())?;
    kfd.map_memory_to_gpu(a.addr, MapNodes::All).map_err(|e| e.to_string())?;
    a.mapping.ok_or_else(|| "host memory without a CPU view".to_string())
}

pub(super) fn aql(
    kfd: &Kfd<AnyPlatform, BoxedMemory>,
    node: u32,
    slots: u64,
) -> Result<AqlQueue<AnyMapping>, String> {
    let info = kfd
        .create_queue(&QueueDesc::new(node, QueueType::ComputeAql, slots * 64))
        .map_err(|e| e.to_string())?;
    kfd.aql_queue(info.handle).map_err(|e| e.to_string())
}

fn measure(scale: f64) -> Result<Vec<Row>, String> {
    let mut rows = super::submit::rows(scale)?;
    rows.push(dispatch_complete(scale)?);
    rows.push(sdma_copy(scale)?);
    rows.push(super::kernels::dispatch_isa(scale)?);
    Ok(rows)
}

fn dispatch_complete(scale: f64) -> Result<Row, String> {
    let n = ((4000.0 * scale) as usize).clamp(100, 200_000);
    let (kfd, node) = open(CpMode::Threaded)?;
    let sim = kfd.platform().sim().ok_or("not the simulator")?;
    let k = sim.register_kernel("empty", |_| Ok(()));
    let sig = buffer(&kfd, 4096)?;
    let s = Signal::new(&sig, 0).map_err(|e| e.to_string())?;
    s.init(&SignalInit::User { value: 1, mailbox: None });
    let q = aql(&kfd, node, 1024)?;
    let mut d = KernelDispatch::linear(k, 64, 64);
    d.completion_signal = s.handle();
    let w = AqlPacket::KernelDispatch(d).to_words().map_err(|e| e.to_string())?;
    let mut lat = Samples::with_capacity(n);
    for i in 0..n + 50 {
        s.store_relaxed(1);
        let t = Instant::now();
        q.submit(&w, std::hint::spin_loop);
        while s.load_acquire() != 0 {
            std::hint::spin_loop();
        }
        if i >= 50 {
            lat.push(t.elapsed().as_nanos() as f64);
        }
    }
    drop(q);
    // Reference: one round trip between two threads through two atomics.
    let (ping, pong) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut rt = Samples::with_capacity(n);
    std::thread::scope(|sc| {
        let (ping2, pong2) = (ping.clone(), pong.clone());
        let total = (n + 50) as u64;
        sc.spawn(move || {
            for i in 1..=total {
                while ping2.load(Ordering::Acquire) != i {
                    std::hint::spin_loop();
                }
                pong2.store(i, Ordering::Release);
            }
        });
        for i in 1..=total {
            let t = Instant::now();
            ping.store(i, Ordering::Release);
            while pong.load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
            if i > 50 {
                rt.push(t.elapsed().as_nanos() as f64);
            }
        }
    });
    Ok(Row::latency("queue.dispatch_complete.sim", &lat)
        .against("thread round trip through two atomics", &rt))
}

fn sdma_copy(scale: f64) -> Result<Row, String> {
    const BYTES: u64 = 64 << 20;
    let reps = ((20.0 * scale) as usize).clamp(3, 1000);
    let (kfd, node) = open(CpMode::Threaded)?;
    let (src, dst) = (buffer(&kfd, BYTES)?, buffer(&kfd, BYTES)?);
    for (i, w) in src.u64s().iter().enumerate() {
        w.store(i as u64 ^ 0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    }
    for w in dst.u64s() {
        w.store(0, Ordering::Relaxed);
    }
    let info = kfd
        .create_queue(&QueueDesc::new(node, QueueType::Sdma, 64 * 1024))
        .map_err(|e| e.to_string())?;
    let mut q = kfd.sdma_queue(info.handle).map_err(|e| e.to_string())?;
    let mut host = vec![0u8; BYTES as usize];
    let (mut engine, mut memcpy) = (Samples::with_capacity(reps), Samples::with_capacity(reps));
    for r in 0..reps + 1 {
        let t = Instant::now();
        let ticket = q
            .copy(dst.addr(), src.addr(), BYTES, SdmaCompletion::Fence, std::hint::spin_loop)
            .map_err(|e| e.to_string())?;
        q.wait(ticket, std::hint::spin_loop);
        let e = BYTES as f64 / t.elapsed().as_secs_f64();
        let t = Instant::now();
        src.read(0, &mut host).map_err(|e| e.to_string())?;
        let m = BYTES as f64 / t.elapsed().as_secs_f64();
        if r > 0 {
            engine.push(e);
            memcpy.push(m);
        }
    }
    let ok = src
        .u64s()
        .iter()
        .zip(dst.u64s())
        .all(|(a, b)| a.load(Ordering::Relaxed) == b.load(Ordering::Relaxed));
    if !ok {
        return Err("the simulated SDMA copy did not reproduce its source".into());
    }
    let mut row =
        Row::latency("queue.sdma_copy.sim", &engine).against("memcpy of the source", &memcpy);
    row.unit = "B/s";
    row.extra.insert("bytes".into(), BYTES.into());
    Ok(row)
}
