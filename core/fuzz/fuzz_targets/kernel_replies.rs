//! Kernel replies are input too: drives the device facade ([`Kfd`]) over [`LyingKernel`], an
//! amdkfd whose every success value comes from the fuzz input — `GET_VERSION`, the
//! apertures, `ALLOC_MEMORY_OF_GPU`'s handle and mmap offset, `MAP`/`UNMAP`'s success counts,
//! `CREATE_QUEUE`'s queue id and doorbell offset, `CREATE_EVENT`'s page offset, slot and
//! trigger data, `WAIT_EVENTS`' result and event data, `GET_CLOCK_COUNTERS`,
//! `GET_QUEUE_WAVE_STATE`, SVM attributes, `AVAILABLE_MEMORY`, `GET_DMABUF_INFO` /
//! `IMPORT_DMABUF` — and fails some calls. The input's even bytes choose the operations, its
//! odd bytes are the kernel's replies. A lying kernel must give typed errors: nothing may
//! panic (slice indexing beyond a mapping, arithmetic overflow), every view the facade hands
//! out stays inside what the platform mapped, and the facade's tables stay consistent after
//! every operation.
#![no_main]

use hsakmt_core::device::queue_manager::{QueueDesc, QueueHandle, QueueType};
use hsakmt_core::device::{Allocation, EventDescriptor, Kfd, MapNodes};
use hsakmt_core::event::{EventHandle, EventType, Timeout, WaitMode, WaitSet};
use hsakmt_core::memory::MemFlags;
use hsakmt_core::memory::svm_attributes::SvmAttribute;
use hsakmt_core::platform::SharedMemory;
use hsakmt_core_fuzz::Mem;
use hsakmt_core_fuzz::lying_kernel::{GPU_NODE, LyingKernel, MAX_MAPPING};
use libfuzzer_sys::fuzz_target;

/// Memory kinds to allocate: VRAM (CPU-invisible), host-visible VRAM, system memory.
const FLAGS: [MemFlags; 3] = [
    MemFlags::NON_PAGED.union(MemFlags::COARSE_GRAIN),
    MemFlags::NON_PAGED.union(MemFlags::COARSE_GRAIN).union(MemFlags::HOST_ACCESS),
    MemFlags::NON_PAGED.union(MemFlags::HOST_ACCESS),
];

/// A view must lie inside the mapping the platform made, and be usable end to end.
fn check_view(view: &Mem) {
    let len = view.len();
    assert!(len as u64 <= MAX_MAPPING);
    assert_eq!(view.u64s().len() * 8, len);
    if len > 0 {
        let mut b = [0u8; 1];
        view.write(len - 1, &[0xA5]).expect("last byte of a view");
        view.read(len - 1, &mut b).expect("last byte of a view");
        assert_eq!(b[0], 0xA5);
    }
}

fn check_allocation(a: &Allocation<Mem>) {
    if let Some(view) = a.mapping.as_ref() {
        assert_eq!(view.addr(), a.addr, "a view starts at its allocation");
        check_view(view);
    }
}

fuzz_target!(|data: &[u8]| {
    let ops: Vec<u8> = data.iter().step_by(2).copied().collect();
    let replies: Vec<u8> = data.iter().skip(1).step_by(2).copied().collect();
    let kfd = Box::new(Kfd::new(LyingKernel::new(&replies)));
    if kfd.open().is_err() {
        return;
    }
    let mut memory: Vec<Allocation<Mem>> = Vec::new();
    let mut queues: Vec<QueueHandle> = Vec::new();
    let mut events: Vec<EventHandle> = Vec::new();
    let mut ops = ops.into_iter();
    while let Some(op) = ops.next() {
        let arg = ops.next().unwrap_or(0);
        let pick = |n: usize| usize::from(arg) % n.max(1);
        match op % 16 {
            0 => {
                let size = 4096u64 << (arg % 10);
                let node = if arg & 0x80 != 0 { 0 } else { GPU_NODE };
                if let Ok(a) = kfd.alloc_memory(node, size, FLAGS[usize::from(arg >> 4) % 3]) {
                    check_allocation(&a);
                    memory.push(a);
                }
            }
            1 if !memory.is_empty() => {
                let _ = kfd.map_memory_to_gpu(memory[pick(memory.len())].addr, MapNodes::All);
            }
            2 if !memory.is_empty() => {
                let _ = kfd.unmap_memory_from_gpu(memory[pick(memory.len())].addr);
            }
            3 if !memory.is_empty() => {
                let a = memory.swap_remove(pick(memory.len()));
                let _ = kfd.free(a);
            }
            4 => {
                let t = if arg & 1 == 0 { QueueType::ComputeAql } else { QueueType::Sdma };
                if let Ok(info) = kfd.create_queue(&QueueDesc::new(GPU_NODE, t, 4096)) {
                    queues.push(info.handle);
                }
            }
            5 if !queues.is_empty() => {
                let h = queues.swap_remove(pick(queues.len()));
                let _ = kfd.destroy_queue(h);
            }
            6 => {
                let desc = match arg % 3 {
                    0 => EventDescriptor::signal(),
                    1 => EventDescriptor::new(EventType::Memory),
                    _ => EventDescriptor::new(EventType::HwException),
                };
                if let Ok(h) = kfd.create_event(&desc) {
                    events.push(h);
                }
            }
            7 if !events.is_empty() => {
                let _ = kfd.set_event(events[pick(events.len())]);
            }
            8 if !events.is_empty() => {
                let mut set: WaitSet<4> = WaitSet::new();
                for h in events.iter().take(4) {
                    let _ = set.push(*h);
                }
                let mode = if arg & 1 == 0 { WaitMode::Any } else { WaitMode::All };
                let _ = kfd.wait_events(&mut set, mode, Timeout::Millis(u32::from(arg >> 1)));
            }
            9 if !events.is_empty() => {
                let h = events.swap_remove(pick(events.len()));
                let _ = kfd.destroy_event(h);
            }
            10 => {
                let _ = kfd.clock_counters(GPU_NODE);
            }
            11 if !queues.is_empty() => {
                let _ = kfd.queue_wave_state(queues[pick(queues.len())]);
            }
            12 if !memory.is_empty() => {
                let a = &memory[pick(memory.len())];
                let mut attrs =
                    [SvmAttribute::Granularity(0), SvmAttribute::SetFlags(Default::default())];
                let _ = kfd.svm_get_attributes(a.addr, 4096, &mut attrs);
            }
            13 => {
                let _ = kfd.available_memory(GPU_NODE);
            }
            14 => {
                let nodes = [GPU_NODE];
                if let Ok(i) = kfd.import_dmabuf(3, (arg & 1 == 1).then_some(&nodes[..])) {
                    let _ = kfd.free_memory(i.addr);
                }
            }
            15 if !memory.is_empty() => {
                let a = &memory[pick(memory.len())];
                if let Ok(e) = kfd.export_dmabuf(a.addr, a.size) {
                    kfd.close_dmabuf(e.fd);
                }
            }
            _ => {}
        }
        assert_eq!(kfd.check_invariants(), Ok(()), "tables consistent after op {op}");
    }
    for a in memory {
        let _ = kfd.free(a);
    }
    let _ = kfd.close();
});
