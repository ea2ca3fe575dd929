//! AQL queues end to end: create through the device facade, submit with the owned producers,
//! execute on the simulated command processor (registered host kernels, barriers, completion
//! signals), in threaded and step mode.

use std::sync::atomic::Ordering;
use std::time::Duration;

use firmware_tests::queue_support::{Signals, gpu_nodes, host_buffer, register_vadd, wait_until};
use firmware_tests::{SimKfd, device};
use hsakmt_core::device::Kfd;
use hsakmt_core::device::queue_manager::{QueueDesc, QueueType};
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::queue::aql::{AqlPacket, Barrier, HeaderFlags, KernelDispatch};
use hsakmt_sim::{CpMode, KernelFault, SimPlatform};

const T: Duration = Duration::from_secs(20);

fn open(mode: CpMode) -> Box<SimKfd> {
    let kfd = device(SimPlatform::builder().cp_mode(mode).build());
    kfd.open().unwrap();
    kfd
}

fn vadd_runs(mode: CpMode) {
    let kfd = open(mode);
    let sim = kfd.platform();
    let node = gpu_nodes(&kfd)[0];
    let kernel = register_vadd(&sim.kernels());
    let n = 4096u64;
    let data = host_buffer(&kfd, 3 * 4 * n);
    for i in 0..n as usize {
        data.u32s()[i].store(i as u32, Ordering::Relaxed);
        data.u32s()[n as usize + i].store(1000, Ordering::Relaxed);
    }
    let args = host_buffer(&kfd, 4096);
    for (i, v) in [data.addr(), data.addr() + 4 * n, data.addr() + 8 * n].iter().enumerate() {
        args.u64s()[i].store(*v, Ordering::Relaxed);
    }
    let signals = Signals::new(&kfd, 1, 1);
    let info = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).unwrap();
    let q = kfd.aql_queue(info.handle).unwrap();
    let mut k = KernelDispatch::linear(kernel, n as u32, 256);
    k.kernarg_address = args.addr();
    k.completion_signal = signals.handle(0);
    let words = AqlPacket::KernelDispatch(k).to_words().unwrap();
    assert_eq!(q.submit(&words, || {}), 0);
    wait_until(sim, T, "the dispatch", || signals.get(0).load_acquire() == 0);
    for i in 0..n as usize {
        assert_eq!(data.u32s()[2 * n as usize + i].load(Ordering::Relaxed), i as u32 + 1000);
    }
    assert_eq!(q.read_index(), 1);
    drop(q);
    kfd.destroy_queue(info.handle).unwrap();
}

#[test]
fn vector_add_threaded() {
    vadd_runs(CpMode::Threaded);
}

#[test]
fn vector_add_step_mode() {
    vadd_runs(CpMode::Step);
}

/// Queue A's dispatch `i` adds `i` to `acc[i % 8]` and signals `sa[i]`; queue B waits on it
/// with a barrier-AND, then records twice `acc[i % 8]` into `out[i]` and signals `sb[i]`. The
/// recorded values are only within bounds if every barrier held. 2000 rounds over 256-slot
/// rings, so both rings wrap many times.
fn chained_queues(mode: CpMode) {
    let kfd = open(mode);
    let sim = kfd.platform();
    let node = gpu_nodes(&kfd)[0];
    let rounds = 2000usize;
    let acc = host_buffer(&kfd, 4096);
    let out = host_buffer(&kfd, (rounds as u64 * 8).next_multiple_of(4096));
    // Per round 32 bytes of kernargs: [acc slot, i] for the add, [acc slot, out slot] for the
    // record.
    let args = host_buffer(&kfd, (rounds as u64 * 32).next_multiple_of(4096));
    let sa = Signals::new(&kfd, rounds, 1);
    let sb = Signals::new(&kfd, rounds, 1);
    let add = sim.register_kernel("add", |ctx| {
        let (slot, i) = (ctx.kernarg_u64(0)?, ctx.kernarg_u64(1)?);
        ctx.atomic_add_u64(slot, i)?;
        Ok(())
    });
    let record = sim.register_kernel("record", |ctx| {
        let (slot, dst) = (ctx.kernarg_u64(0)?, ctx.kernarg_u64(1)?);
        let v = ctx.load_u64(slot)?;
        ctx.store_u64(dst, v * 2)?;
        Ok(())
    });
    let qa = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 256 * 64)).unwrap();
    let qb = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 256 * 64)).unwrap();
    let (pa, pb) = (kfd.aql_queue(qa.handle).unwrap(), kfd.aql_queue(qb.handle).unwrap());
    assert_eq!((pa.slots(), pb.slots()), (256, 256));
    let relax = || {
        if mode == CpMode::Step {
            sim.run_until_idle();
        }
        std::thread::yield_now();
    };
    let w = |i: usize, k: usize, v: u64| args.u64s()[4 * i + k].store(v, Ordering::Relaxed);
    for i in 0..rounds {
        let slot = acc.addr() + 8 * (i % 8) as u64;
        let block = args.addr() + 32 * i as u64;
        w(i, 0, slot);
        w(i, 1, i as u64);
        w(i, 2, slot);
        w(i, 3, out.addr() + 8 * i as u64);
        let mut k = KernelDispatch::linear(add, 1, 1);
        k.kernarg_address = block;
        k.completion_signal = sa.handle(i);
        pa.submit(&AqlPacket::KernelDispatch(k).to_words().unwrap(), relax);

        let mut b =
            Barrier { flags: HeaderFlags::SYSTEM, dep_signals: [0; 5], completion_signal: 0 };
        b.dep_signals[0] = sa.handle(i);
        pb.submit(&AqlPacket::BarrierAnd(b).to_words().unwrap(), relax);
        let mut r = KernelDispatch::linear(record, 1, 1);
        r.kernarg_address = block + 16;
        r.completion_signal = sb.handle(i);
        pb.submit(&AqlPacket::KernelDispatch(r).to_words().unwrap(), relax);
    }
    wait_until(sim, T, "the last record", || sb.get(rounds - 1).load_acquire() == 0);
    let mut expect = [0u64; 8];
    for i in 0..rounds {
        expect[i % 8] += i as u64;
        let seen = out.u64s()[i].load(Ordering::Relaxed);
        // Everything up to add `i` happened before (the barrier); later adds may have too.
        let lower = 2 * (0..=i).filter(|j| j % 8 == i % 8).map(|j| j as u64).sum::<u64>();
        let upper = 2 * (0..rounds).filter(|j| j % 8 == i % 8).map(|j| j as u64).sum::<u64>();
        assert!((lower..=upper).contains(&seen), "round {i}: {seen} not in {lower}..={upper}");
        assert_eq!(sa.get(i).load_acquire(), 0);
        assert_eq!(sb.get(i).load_acquire(), 0);
    }
    for (k, e) in expect.iter().enumerate() {
        assert_eq!(acc.u64s()[k].load(Ordering::Relaxed), *e);
    }
    assert_eq!((pa.read_index(), pb.read_index()), (rounds as u64, 2 * rounds as u64));
    drop((pa, pb));
    kfd.destroy_queue(qa.handle).unwrap();
    kfd.destroy_queue(qb.handle).unwrap();
}

#[test]
fn barriers_chain_two_queues_threaded() {
    chained_queues(CpMode::Threaded);
}

#[test]
fn barriers_chain_two_queues_step_mode() {
    chained_queues(CpMode::Step);
}

#[test]
fn faulting_kernel_puts_queue_in_error() {
    let kfd = open(CpMode::Step);
    let sim = kfd.platform();
    let node = gpu_nodes(&kfd)[0];
    let bad = sim.register_kernel("bad", |ctx| {
        ctx.store_u32(0x10, 1)?;
        Err(KernelFault::IllegalInstruction)
    });
    let info = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).unwrap();
    let q = kfd.aql_queue(info.handle).unwrap();
    q.submit(
        &AqlPacket::KernelDispatch(KernelDispatch::linear(bad, 1, 1)).to_words().unwrap(),
        || {},
    );
    sim.run_until_idle();
    let fault = sim.queue_fault(info.queue_id).expect("queue in error");
    assert_eq!(fault.exception, hsakmt_core::uapi::EC_QUEUE_WAVE_MEMORY_VIOLATION);
    assert_eq!(fault.address, Some(0x10));
    assert_eq!(sim.memory_faults(), vec![(info.gpu_id, 0x10, false)]);
}

#[test]
fn a_panicking_kernel_is_an_illegal_instruction() {
    let kfd = open(CpMode::Threaded);
    let sim = kfd.platform();
    let node = gpu_nodes(&kfd)[0];
    let k = sim.register_kernel("panics", |_| panic!("kernel bug"));
    let info = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).unwrap();
    let q = kfd.aql_queue(info.handle).unwrap();
    q.submit(
        &AqlPacket::KernelDispatch(KernelDispatch::linear(k, 1, 1)).to_words().unwrap(),
        || {},
    );
    wait_until(sim, T, "the queue error", || sim.queue_fault(info.queue_id).is_some());
    let f = sim.queue_fault(info.queue_id).unwrap();
    assert_eq!(f.exception, hsakmt_core::uapi::EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION);
    drop(q);
    kfd.destroy_queue(info.handle).unwrap();
}

#[test]
fn facade_and_producers_are_send_and_sync() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Kfd<SimPlatform>>();
    shareable::<hsakmt_core::device::queue_manager::AqlQueue<hsakmt_sim::SimMapping>>();
    fn sendable<T: Send>() {}
    sendable::<hsakmt_core::device::queue_manager::SingleAqlQueue<hsakmt_sim::SimMapping>>();
    sendable::<hsakmt_core::device::queue_manager::SdmaQueue<hsakmt_sim::SimMapping>>();
    sendable::<hsakmt_core::device::queue_manager::Pm4Queue<hsakmt_sim::SimMapping>>();
}
