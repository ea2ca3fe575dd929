//! GPU memory permissions as amdkfd maps them, enforced on waves of the ISA interpreter: a
//! buffer allocated read-only (`HSA` `ReadOnly`: no `KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE`) can be
//! read but a store to it is a memory violation, and code in a buffer allocated without
//! `ExecuteAccess` (no `KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE`) cannot be fetched. Each fault puts
//! the queue into error with the faulting address and sets the process's memory event with
//! the faulting page and the failure bit of its cause (`ReadOnly`, `NoExecute`), as
//! kfdtest's `KFDExceptionTest.PermissionFault` expects.
//!
//! The shader (`llvm-mc-19 -arch=amdgcn -mcpu=gfx900`, `gfx90a` and `gfx942 -show-encoding`: the
//! same words on the three targets):
//! ```text
//! v_mov_b32 v2, SRC_LO; v_mov_b32 v3, SRC_HI; flat_load_dword v0, v[2:3]
//! s_waitcnt vmcnt(0) lgkmcnt(0)
//! v_mov_b32 v4, DST_LO; v_mov_b32 v5, DST_HI; flat_store_dword v[4:5], v0
//! s_waitcnt vmcnt(0); s_endpgm
//! ```

use std::sync::atomic::Ordering;
use std::time::Duration;

use firmware_tests::SimKfd;
use firmware_tests::isa_support::{TARGETS, open};
use firmware_tests::queue_support::{Buf, gpu_nodes, host_buffer, host_buffer_with, wait_until};
use hsakmt_core::device::EventDescriptor;
use hsakmt_core::device::queue_manager::{QueueDesc, QueueType};
use hsakmt_core::event::{
    EventData, EventType, FaultFlags, Timeout, WaitMode, WaitResult, WaitSet,
};
use hsakmt_core::memory::MemFlags;
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::aql::{AqlPacket, KernelDispatch};
use hsakmt_core::uapi::EC_QUEUE_WAVE_MEMORY_VIOLATION;
use hsakmt_sim::isa::FaultCause;
use hsakmt_sim::{CpMode, QueueFault};

const T: Duration = Duration::from_secs(20);
const PAGE: u64 = 4096;

/// The copy shader above, from `src` to `dst`.
fn copy_dword(src: u64, dst: u64) -> [u32; 15] {
    let (lo, hi) = (|a: u64| a as u32, |a: u64| (a >> 32) as u32);
    [
        0x7E04_02FF,
        lo(src),
        0x7E06_02FF,
        hi(src),
        0xDC50_0000,
        0x0000_0002,
        0xBF8C_0070,
        0x7E08_02FF,
        lo(dst),
        0x7E0A_02FF,
        hi(dst),
        0xDC70_0000,
        0x0000_0004,
        0xBF8C_0F70,
        0xBF81_0000,
    ]
}

/// A 64-byte kernel descriptor whose entry is `0x100` bytes on (no SGPRs, one VGPR block).
fn descriptor() -> [u8; 64] {
    let mut b = [0u8; 64];
    b[16..24].copy_from_slice(&0x100i64.to_le_bytes());
    b
}

/// What one dispatch did: the queue's fault (`None`: the kernel ended) and the memory event's
/// data (`None`: not set).
struct Outcome {
    fault: Option<QueueFault>,
    event: Option<EventData>,
}

/// Runs `code` (one wave) from an AQL packet with the descriptor and code in `code_buf`.
fn run(kfd: &SimKfd, code_buf: &Buf, code: &[u32], done: impl Fn() -> bool) -> Outcome {
    let sim = kfd.platform();
    let node = gpu_nodes(kfd)[0];
    code_buf.write(0, &descriptor()).expect("fits");
    for (k, w) in code.iter().enumerate() {
        code_buf.u32s()[0x40 + k].store(*w, Ordering::Relaxed);
    }
    let memory = kfd.create_event(&EventDescriptor::new(EventType::Memory)).expect("event");
    let info = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).expect("queue");
    let q = kfd.aql_queue(info.handle).expect("AQL queue");
    q.submit(
        &AqlPacket::KernelDispatch(KernelDispatch::linear(code_buf.addr(), 64, 64))
            .to_words()
            .expect("packet"),
        || {},
    );
    wait_until(sim, T, "the kernel or its fault", || {
        sim.queue_fault(info.queue_id).is_some() || done()
    });
    let fault = sim.queue_fault(info.queue_id);
    let mut set: WaitSet<1> = WaitSet::new();
    set.push(memory).expect("room");
    let wait = if fault.is_some() { 10_000 } else { 0 };
    let r = kfd.wait_events(&mut set, WaitMode::All, Timeout::Millis(wait)).expect("wait");
    let event = (r == WaitResult::Complete).then(|| set.data(0)).flatten();
    drop(q);
    let _ = kfd.destroy_queue(info.handle);
    kfd.destroy_event(memory).expect("destroy the event");
    Outcome { fault, event }
}

/// The failure bits and address of a memory event.
fn memory_fault(e: Option<EventData>) -> (FaultFlags, u64) {
    match e {
        Some(EventData::MemoryFault(f)) => (f.flags, f.address),
        other => panic!("a memory fault event, not {other:?}"),
    }
}

#[test]
fn read_only_memory_is_read_but_a_store_faults_with_read_only() {
    let kfd = open(TARGETS[1].0, CpMode::Threaded);
    let read_only = host_buffer_with(&kfd, PAGE, MemFlags::READ_ONLY);
    let writable = host_buffer(&kfd, PAGE);
    // The CPU writes read-only buffers through its own mapping; the GPU reads them.
    read_only.u32s()[4].store(0xAA55_AA55, Ordering::Relaxed);
    writable.u32s()[8].store(0x1234_5678, Ordering::Relaxed);

    let copied = || writable.u32s()[0].load(Ordering::Relaxed) == 0xAA55_AA55;
    let code = host_buffer(&kfd, PAGE);
    let o = run(&kfd, &code, &copy_dword(read_only.addr() + 16, writable.addr()), copied);
    assert!(o.fault.is_none(), "a load from read-only memory: {:?}", o.fault);
    assert!(copied(), "the value was copied");
    assert!(o.event.is_none(), "no memory fault: {:?}", o.event);

    // A store to it: the queue's memory violation at the address, the write refused.
    let dst = read_only.addr() + 0x10;
    let code = host_buffer(&kfd, PAGE);
    let o = run(&kfd, &code, &copy_dword(writable.addr() + 32, dst), || false);
    let f = o.fault.expect("a fault");
    assert_eq!((f.exception, f.address), (EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(dst)));
    let m = f.wave.and_then(|w| w.memory_fault()).expect("the wave's memory fault");
    assert_eq!((m.address, m.write, m.cause), (dst, true, FaultCause::ReadOnly));
    assert!(f.wave.unwrap().to_string().contains("write to read-only memory"), "{f:?}");
    assert_eq!(read_only.u32s()[4].load(Ordering::Relaxed), 0xAA55_AA55, "unchanged");
    // The memory event: the page, ReadOnly (the page is present).
    let (flags, address) = memory_fault(o.event);
    assert_eq!((flags, address), (FaultFlags::READ_ONLY, dst & !(PAGE - 1)));
}

#[test]
fn code_without_execute_access_faults_with_no_execute() {
    for (profile, gfx) in TARGETS {
        let kfd = open(profile, CpMode::Threaded);
        let (src, dst) = (host_buffer(&kfd, PAGE), host_buffer(&kfd, PAGE));
        // Readable and writable, not executable: the descriptor is read, the first
        // instruction fetch faults.
        let code = host_buffer_with(&kfd, PAGE, MemFlags::empty());
        let o = run(&kfd, &code, &copy_dword(src.addr(), dst.addr()), || false);
        let f = o.fault.unwrap_or_else(|| panic!("{gfx}: a fault"));
        let entry = code.addr() + 0x100;
        assert_eq!((f.exception, f.address), (EC_QUEUE_WAVE_MEMORY_VIOLATION, Some(entry)));
        let m = f.wave.and_then(|w| w.memory_fault()).expect("the wave's memory fault");
        assert_eq!((m.write, m.cause), (false, FaultCause::NoExecute), "{gfx}");
        let (flags, address) = memory_fault(o.event);
        assert_eq!((flags, address), (FaultFlags::NO_EXECUTE, code.addr()), "{gfx}");
        // The same code in an executable buffer runs.
        let code = host_buffer(&kfd, PAGE);
        src.u32s()[0].store(7, Ordering::Relaxed);
        let copied = || dst.u32s()[0].load(Ordering::Relaxed) == 7;
        let o = run(&kfd, &code, &copy_dword(src.addr(), dst.addr()), copied);
        assert!(o.fault.is_none() && copied(), "{gfx}: {:?}", o.fault);
    }
}
