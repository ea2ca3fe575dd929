//! Real code objects — loading them (`kernels.*`), and running them through the simulator's
//! ISA interpreter (`queue.dispatch_isa.sim`, in the queue group).
//!
//! - `kernels.code_object_load.<set>.<processor>`: for each code object `hsakmt` carries (the control
//!   step and the blit kernels of every processor), ns to parse the ELF file and its metadata,
//!   lay the image out with its relocations applied into memory already allocated, and resolve
//!   every kernel to its descriptor — a load without the GPU memory allocation and mapping,
//!   which are the memory benchmarks' figures. Reference: copying the file's bytes. Goal
//!   ≤ 50 µs.
//! - `queue.dispatch_isa.sim`: nanoseconds per lane-instruction of the ISA interpreter running the
//!   `control_step` code object (gfx942, the default profile) over 2^18 words: an AQL
//!   dispatch through the simulator's command processor in step mode on this thread — one
//!   core — from the doorbell to the completion signal, counted by the interpreter's own
//!   counters, per second of this thread's CPU time (so other processes on the machine do not
//!   count; `lane_instructions_per_s` is its inverse, `wall_ns_p50` the same per wall-clock
//!   nanosecond). Reference: the same step in native Rust over the same words (ns per word).
//!   Goal ≥ 500 M lane-instructions/s: p50 ≤ 2 ns.

use std::sync::atomic::Ordering;
use std::time::Instant;

use rustix::time::{ClockId, clock_gettime};

use hsakmt_core::code_object::CodeObject;
use hsakmt_core::code_object::kernarg::{ArgValue, Dispatch};
use hsakmt_core::platform::SharedMemory as _;
use hsakmt_core::queue::aql::AqlPacket;
use hsakmt_core::queue::signal::{Signal, SignalInit};
use hsakmt_kernels::{KernelSet, PROCESSORS, control};
use hsakmt_sim::CpMode;

use super::queue::{aql, buffer, open};
use super::{Row, Samples};
use crate::embedded_kernels;

/// Words the ISA benchmark's dispatch computes.
const ISA_WORDS: u32 = 1 << 18;
/// Work-items per work-group of that dispatch.
const ISA_WORKGROUP: u16 = 256;
/// The processor of the default simulator profile.
const ISA_PROCESSOR: &str = "gfx942";

pub(crate) fn run(scale: f64) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for set in [KernelSet::Control, KernelSet::Blit] {
        for p in PROCESSORS {
            rows.push(load(scale, set, p)?);
        }
    }
    Ok(rows)
}

/// Seconds of CPU time this thread has used.
fn thread_cpu_secs() -> f64 {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// Loads one carried object repeatedly (see the module docs).
fn load(scale: f64, set: KernelSet, processor: &str) -> Result<Row, String> {
    let name = format!("kernels.code_object_load.{}.{processor}", set.name());
    let bytes =
        embedded_kernels::find(set, processor).ok_or_else(|| format!("{name}: no object"))?;
    let n = ((2000.0 * scale) as usize).clamp(20, 200_000);
    let size = CodeObject::parse(bytes).map_err(|e| format!("{name}: {e}"))?.image_size();
    let mut image = vec![0u8; usize::try_from(size).map_err(|_| "image too large")?];
    let mut copy = vec![0u8; bytes.len()];
    let base = 0x7f00_0000_0000u64;
    let (mut loads, mut copies) = (Samples::with_capacity(n), Samples::with_capacity(n));
    let mut kernels = 0;
    for _ in 0..n + 10 {
        let t = Instant::now();
        let object = CodeObject::parse(bytes).map_err(|e| format!("{name}: {e}"))?;
        object.load_into(&mut image, base).map_err(|e| format!("{name}: {e}"))?;
        kernels = 0;
        for k in object.kernels() {
            let k = k.map_err(|e| format!("{name}: {e}"))?;
            k.descriptor_address(base).ok_or_else(|| format!("{name}: descriptor beyond 2^64"))?;
            kernels += 1;
        }
        let l = t.elapsed().as_nanos() as f64;
        let t = Instant::now();
        copy.copy_from_slice(std::hint::black_box(bytes));
        std::hint::black_box(&copy);
        let c = t.elapsed().as_nanos() as f64;
        loads.push(l);
        copies.push(c);
    }
    if kernels != set.kernels().len() {
        return Err(format!(
            "{name}: {kernels} kernels resolved, {} expected",
            set.kernels().len()
        ));
    }
    let mut row = Row::latency(name, &loads)
        .against("copying the file's bytes", &copies)
        .goal("p50 <= 50 us");
    row.extra.insert("bytes".into(), bytes.len().into());
    Ok(row)
}

/// The interpreter's throughput on the compute kernel (see the module docs).
pub(super) fn dispatch_isa(scale: f64) -> Result<Row, String> {
    let rounds = ((10.0 * scale) as usize).clamp(3, 1000);
    let e = |what: &'static str| move |err: &dyn std::fmt::Display| format!("{what}: {err}");
    let (kfd, node) = open(CpMode::Step)?;
    let sim = kfd.platform().sim().ok_or("not the simulator")?;
    let bytes = embedded_kernels::find(KernelSet::Control, ISA_PROCESSOR)
        .ok_or("no control object for gfx942")?;
    let object = CodeObject::parse(bytes).map_err(|err| e("code object")(&err))?;
    let loaded = kfd.load_code_object(&object, &[node]).map_err(|err| e("loading")(&err))?;
    let kernel = loaded.kernel(control::STEP).map_err(|err| e("kernel")(&err))?;
    let words = u64::from(ISA_WORDS);
    let (input, output) = (buffer(&kfd, 4 * words)?, buffer(&kfd, 4 * words)?);
    for (i, w) in input.u32s().iter().enumerate() {
        w.store(i as u32 ^ 0x5bd1_e995, Ordering::Relaxed);
    }
    let dispatch = Dispatch::new(1, [ISA_WORKGROUP, 1, 1], [ISA_WORDS, 1, 1]);
    let args = buffer(&kfd, 4096)?;
    let mut kernargs = vec![0u8; kernel.kernarg_size() as usize];
    let seed = 77u32;
    let values = [
        ArgValue::Pointer(input.addr()),
        ArgValue::Pointer(output.addr()),
        ArgValue::U64(words),
        ArgValue::U64(u64::from(seed)),
    ];
    kernel.write_kernargs(&mut kernargs, &values, &dispatch).map_err(|err| e("kernargs")(&err))?;
    args.write(0, &kernargs).map_err(|err| e("kernargs")(&err))?;
    let sig = buffer(&kfd, 4096)?;
    let done = Signal::new(&sig, 0).map_err(|err| e("signal")(&err))?;
    done.init(&SignalInit::User { value: 1, mailbox: None });
    let q = aql(&kfd, node, 64)?;
    let packet =
        kernel.packet(&dispatch, args.addr(), done.handle()).map_err(|err| e("packet")(&err))?;
    let w = AqlPacket::KernelDispatch(packet).to_words().map_err(|err| e("packet")(&err))?;
    let (mut interp, mut native) = (Samples::with_capacity(rounds), Samples::with_capacity(rounds));
    let mut wall = Samples::with_capacity(rounds);
    let mut host = vec![0u32; ISA_WORDS as usize];
    let source: Vec<u32> = input.u32s().iter().map(|w| w.load(Ordering::Relaxed)).collect();
    for _ in 0..rounds {
        for w in output.u32s() {
            w.store(0, Ordering::Relaxed);
        }
        done.store_relaxed(1);
        let before = sim.isa_count().lane_instructions;
        let (t, cpu) = (Instant::now(), thread_cpu_secs());
        q.submit(&w, std::hint::spin_loop);
        while done.load_acquire() != 0 {
            sim.run_until_idle();
        }
        let (secs, cpu) = (t.elapsed().as_secs_f64(), thread_cpu_secs() - cpu);
        let lanes = sim.isa_count().lane_instructions.saturating_sub(before) as f64;
        interp.push(cpu * 1e9 / lanes.max(1.0));
        wall.push(secs * 1e9 / lanes.max(1.0));
        let ok = source
            .iter()
            .zip(output.u32s())
            .all(|(i, o)| o.load(Ordering::Relaxed) == i.wrapping_mul(3).wrapping_add(seed));
        if !ok {
            return Err(
                "queue.dispatch_isa.sim: the interpreted kernel computed wrong words".into()
            );
        }
        let cpu = thread_cpu_secs();
        for (o, i) in host.iter_mut().zip(std::hint::black_box(&source)) {
            *o = i.wrapping_mul(3).wrapping_add(seed);
        }
        std::hint::black_box(&host);
        native.push((thread_cpu_secs() - cpu) * 1e9 / f64::from(ISA_WORDS));
    }
    drop(q);
    let _ = kfd.unload_code_object(loaded);
    let mut row = Row::latency("queue.dispatch_isa.sim", &interp)
        .against("the step in native Rust (ns per word)", &native)
        .goal("p50 <= 2 ns");
    row.unit = "ns/lane-instr";
    let p50 = interp.percentile(50.0);
    row.extra.insert("words".into(), ISA_WORDS.into());
    row.extra.insert("lane_instructions_per_s".into(), (1e9 / p50.max(1e-9)).into());
    row.extra.insert("wall_ns_p50".into(), wall.percentile(50.0).into());
    Ok(row)
}
