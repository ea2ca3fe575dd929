//! Address watches fire on the ISA interpreter's memory accesses: a kernel (the project's
//! `copy_bytes` blit, on gfx942 and gfx90a) reads one buffer and writes another; a debugger
//! watching a line of the source for reads, or of the destination for writes, gets
//! `EC_QUEUE_WAVE_TRAP` on the queue once its trap mask enables address watches — and not
//! before, not for the other kind of access, not for a line the kernel does not touch.

use firmware_tests::SimKfd;
use firmware_tests::isa_support::{IsaQueue, Loaded, TARGETS, open};
use firmware_tests::queue_support::{Buf, gpu_nodes, host_buffer};
use hsakmt_core::code_object::kernarg::{ArgValue, Dispatch};
use hsakmt_core::debug::{
    ExceptionCode as Ec, ExceptionMask, QueueOutcome, TrapMask, TrapOverride, WatchMode,
};
use hsakmt_core::device::AddressWatch;
use hsakmt_core::platform::{Host, KfdDevice, SharedMemory};
use hsakmt_core::uapi::kfd_queue_snapshot_entry;
use hsakmt_kernels::{KernelSet, all, blit};
use hsakmt_sim::CpMode;
use std::time::Duration;

const T: Duration = Duration::from_secs(60);
const LINE: u32 = 0xFFFF_FFC0;

fn object(gfx: &str) -> &'static [u8] {
    let path = format!("{}/{gfx}.co", KernelSet::Blit.name());
    all().iter().find(|o| o.path == path).map(|o| o.bytes).expect("a committed object")
}

/// Copies 4 KiB from `src` to `dst` on the queue; whether the debugger was told.
fn copy(kfd: &SimKfd, q: &IsaQueue, code: &Loaded<'_>, src: &Buf, dst: &Buf, notify: u32) -> bool {
    let args = [ArgValue::Pointer(src.addr()), ArgValue::Pointer(dst.addr()), ArgValue::U64(4096)];
    q.run(kfd, code.kernel(blit::COPY_BYTES), &args, &Dispatch::linear(256, 64), T)
        .expect("the copy runs to the end");
    let sim = kfd.platform();
    let mut told = false;
    let mut b = [0u8; 64];
    while sim.poll_fd(notify, 0).unwrap() && sim.read_fd(notify, &mut b).unwrap_or(0) > 0 {
        told = true;
    }
    told
}

fn watches_fire_on(profile: &str, gfx: &str) {
    let kfd = open(profile, CpMode::Step);
    let sim = kfd.platform();
    let node = gpu_nodes(&kfd)[0];
    let code = Loaded::new(&kfd, object(gfx));
    kfd.runtime_enable(0, true).unwrap();
    let q = IsaQueue::new(&kfd, node);
    // The destination has a second page the copy does not touch.
    let (src, dst) = (host_buffer(&kfd, 4096), host_buffer(&kfd, 8192));
    src.write(0, &[0x5A; 4096]).unwrap();
    let d = kfd.debugger(sim.process_id());
    let (r, w) = sim.create_pipe().unwrap();
    d.enable(ExceptionMask::NONE.with(Ec::QueueWaveTrap), w).unwrap();
    let mut snap = [kfd_queue_snapshot_entry::default(); 2];
    d.queue_snapshot(Ec::QueueNew.mask(), &mut snap).unwrap();
    let trap = |what: &str| {
        let ev = d.query_debug_event(Ec::QueueWaveTrap.mask()).unwrap();
        let ev = ev.unwrap_or_else(|| panic!("{what} on {gfx}: no debug event"));
        assert!(ev.exceptions.contains(Ec::QueueWaveTrap), "{what} on {gfx}");
    };

    // A read watch on a source line and a write watch on a destination line.
    let at = |b: &Buf, mode| AddressWatch { address: b.addr() + 0x440, mask: LINE, mode };
    let read = d.set_address_watch(node, at(&src, WatchMode::Read)).unwrap();
    let write = d.set_address_watch(node, at(&dst, WatchMode::NonRead)).unwrap();
    assert!(!copy(&kfd, &q, &code, &src, &dst, r), "traps disabled: nothing on {gfx}");
    assert_eq!(d.query_debug_event(ExceptionMask::ALL).unwrap(), None);

    let aw = TrapMask::ADDRESS_WATCH;
    d.set_wave_launch_override(TrapOverride::Or, aw, aw).unwrap();
    assert!(copy(&kfd, &q, &code, &src, &dst, r), "the watches trap on {gfx}");
    trap("read or write watch");
    // Only the read watch: the kernel reads the source.
    d.clear_address_watch(node, write).unwrap();
    assert!(copy(&kfd, &q, &code, &src, &dst, r));
    trap("read watch");
    // A read watch on the destination: the kernel only writes it.
    d.clear_address_watch(node, read).unwrap();
    d.set_address_watch(node, at(&dst, WatchMode::Read)).unwrap();
    assert!(!copy(&kfd, &q, &code, &src, &dst, r), "no read of the destination on {gfx}");
    // A watch for any access on the destination's second page, which the copy does not touch.
    let past = AddressWatch { address: dst.addr() + 4096, mask: 0xFFFF_F000, mode: WatchMode::All };
    d.set_address_watch(node, past).unwrap();
    assert!(!copy(&kfd, &q, &code, &src, &dst, r), "beyond the copy on {gfx}");

    // The wave went on: the copy is complete, and the queue did not stop.
    let mut out = vec![0u8; 8192];
    dst.read(0, &mut out).unwrap();
    assert!(out[..4096].iter().all(|b| *b == 0x5A), "copied on {gfx}");
    assert!(out[4096..].iter().all(|b| *b == 0), "nothing past the copy on {gfx}");
    let mut ids = [q.info.queue_id];
    assert_eq!(d.suspend_queues(&mut ids, 0, ExceptionMask::NONE).unwrap(), 1);
    assert_eq!(QueueOutcome::of(ids[0]), QueueOutcome::Done);
    d.disable().unwrap();
    sim.close_fd(r);
    sim.close_fd(w);
}

#[test]
fn address_watches_fire_on_kernel_accesses_gfx942() {
    watches_fire_on(TARGETS[2].0, TARGETS[2].1);
}

#[test]
fn address_watches_fire_on_kernel_accesses_gfx90a() {
    // gfx9 before 9.4.2 accepts only OR overrides of the address-watch bit: enough here.
    watches_fire_on(TARGETS[1].0, TARGETS[1].1);
}
