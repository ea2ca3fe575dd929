//! Fuzzes the simulator's command processor on a PM4 (compute) queue, in process: the input's
//! dwords are submitted to a fresh PM4 queue of a simulated MI210 (step mode) and the
//! processor runs until idle. Packets may address a 64 KiB host buffer mapped on the GPUs at
//! the fixed address [`BUFFER`] (also the place an `INDIRECT_BUFFER` can point to). The
//! processor must never panic; afterwards the queue has consumed everything, is blocked on a
//! memory poll, or is stopped with an error.
//!
//! Built only with `--features sim` (it pulls in the simulator and the Linux platform):
//! `cargo +nightly fuzz run --features sim cp_pm4`.
#![no_main]

use std::sync::OnceLock;

use hsakmt_core::device::Kfd;
use hsakmt_core::device::memory_manager::MapNodes;
use hsakmt_core::device::queue_manager::{QueueDesc, QueueType};
use hsakmt_core::memory::MemFlags;
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::topology::NodeKind;
use hsakmt_sim::{CpMode, SimMapping, SimPlatform};
use libfuzzer_sys::fuzz_target;

/// Where the host buffer lives, so that inputs can name it.
const BUFFER: u64 = 0x7e00_0000_0000;
const BUFFER_SIZE: u64 = 64 << 10;
/// Dwords of the queue's ring (4 KiB); a submission fills at most half of it.
const RING_BYTES: u64 = 4096;

struct World {
    kfd: Box<Kfd<SimPlatform>>,
    gpu: u32,
    buffer: SimMapping,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let sim = SimPlatform::builder().cp_mode(CpMode::Step).inherit_env(false).build();
        let kfd = Box::new(Kfd::new(sim));
        kfd.open().expect("open the simulated device");
        let (cpu, gpu) = kfd
            .with_topology(|t| {
                let id = |cpu: bool| {
                    t.nodes()
                        .filter(|n| (n.node().kind() == NodeKind::Cpu) == cpu)
                        .find_map(|n| n.node().user_id())
                };
                (id(true), id(false))
            })
            .expect("topology");
        let (cpu, gpu) = (cpu.expect("a CPU node"), gpu.expect("a GPU node"));
        let flags = MemFlags::NON_PAGED | MemFlags::HOST_ACCESS;
        let alloc = kfd
            .alloc_memory_at(cpu, BUFFER, BUFFER_SIZE, flags)
            .expect("host buffer at its fixed address");
        kfd.map_memory_to_gpu(alloc.addr, MapNodes::All).expect("mapped on the GPUs");
        let buffer = alloc.mapping.expect("a CPU view");
        World { kfd, gpu, buffer }
    })
}

fuzz_target!(|data: &[u8]| {
    let w = world();
    let dwords: Vec<u32> = data
        .chunks(4)
        .take(RING_BYTES as usize / 8)
        .map(|c| {
            let mut b = [0u8; 4];
            b[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(b)
        })
        .collect();
    if dwords.is_empty() {
        return;
    }
    let sim = w.kfd.platform();
    let info = w
        .kfd
        .create_queue(&QueueDesc::new(w.gpu, QueueType::Compute, RING_BYTES))
        .expect("create a PM4 queue");
    let mut q = w.kfd.pm4_queue(info.handle).expect("PM4 producer");
    q.submit(&dwords, || {}).expect("room for half a ring");
    sim.run_until_idle();
    let done = q.pending() == 0;
    let fault = sim.queue_fault(info.queue_id);
    if !done && fault.is_none() {
        // Only a poll that is not met may hold the queue.
        assert!(
            dwords.iter().any(|d| d >> 30 == 3 && (d >> 8) & 0xFF == 0x3C),
            "queue stalled without a WAIT_REG_MEM: rptr {} wptr {}",
            q.rptr(),
            q.wptr()
        );
    }
    drop(q);
    w.kfd.destroy_queue(info.handle).expect("destroy the queue");
    // Leave the buffer as the next input expects it.
    for word in w.buffer.u64s() {
        word.store(0, std::sync::atomic::Ordering::Relaxed);
    }
});
