//! Injected faults meet the same calls on every run when the simulated GPU runs on waits
//! ([`CpMode::OnWait`]): each wait of the library is exactly one `AMDKFD_IOC_WAIT_EVENTS`, so
//! `WAIT_EVENTS` fault `N` fails the `N`th wait — what `hsakmt run --inject` relies on. With
//! threaded engines a copy may finish while the waiter still spins, and the count of
//! `WAIT_EVENTS` calls depends on the host's speed.

use firmware_tests::driver;
use hsakmt_core::device::SignalCondition;
use hsakmt_core::driver::{AgentKind, Driver, DriverError, DriverKind, RegionKind, Waited};
use hsakmt_core::error::Errno;
use hsakmt_core::uapi::{_IOC_NR, AMDKFD_IOC_WAIT_EVENTS};
use hsakmt_sim::{CpMode, IoctlFault, Profile, SimPlatform, Trigger};

const SECOND: u64 = 1_000_000_000;

fn on_wait_sim() -> SimPlatform {
    SimPlatform::builder()
        .profile(Profile::embedded("mi308x-8gpu-cpx").expect("profile"))
        .cp_mode(CpMode::OnWait)
        .build()
}

/// `rounds` host → device copies, each waited for; returns each wait's outcome and the
/// `WAIT_EVENTS` calls each one issued.
fn copy_and_wait(sim: &SimPlatform, rounds: usize) -> Vec<(Result<(), DriverError>, u64)> {
    let waits = || sim.ioctl_calls(_IOC_NR(AMDKFD_IOC_WAIT_EVENTS));
    let d = driver(DriverKind::Sim, sim.clone());
    d.init().expect("init");
    let gpu = (0..d.agent_count())
        .filter_map(|i| d.agent(i))
        .find(|a| a.kind == AgentKind::Gpu)
        .expect("a GPU");
    let cpu = d.nearest_cpu(gpu.id).expect("a CPU");
    let host = d
        .regions(cpu)
        .unwrap()
        .iter()
        .find(|r| r.kind == RegionKind::GlobalFineGrained)
        .unwrap()
        .id;
    let vram = d
        .regions(gpu.id)
        .unwrap()
        .iter()
        .find(|r| r.kind == RegionKind::GlobalCoarseGrained)
        .unwrap()
        .id;
    let (src, dst) = (d.allocate(host, 4096).unwrap(), d.allocate(vram, 4096).unwrap());
    let done = d.create_signal(1).unwrap();
    let mut out = Vec::new();
    for _ in 0..rounds {
        d.signal_store(done, 1).unwrap();
        d.copy(gpu.id, dst.addr, src.addr, 4096, &[], done).unwrap();
        let before = waits();
        let r = d.signal_wait(done, SignalCondition::Eq(0), SECOND).map(|w| {
            assert!(matches!(w, Waited::Done(0)), "{w:?}");
        });
        out.push((r, waits() - before));
    }
    d.shutdown().expect("shutdown");
    out
}

#[test]
fn each_wait_is_one_wait_events_call() {
    let sim = on_wait_sim();
    let waits = copy_and_wait(&sim, 6);
    assert!(waits.iter().all(|(r, calls)| r.is_ok() && *calls == 1), "{waits:?}");
}

#[test]
fn a_wait_events_fault_fails_the_same_wait_every_run() {
    for _ in 0..3 {
        let sim = on_wait_sim();
        let id = sim.inject(IoctlFault {
            nr: Some(_IOC_NR(AMDKFD_IOC_WAIT_EVENTS)),
            errno: Errno::EIO,
            trigger: Trigger::Nth(3),
        });
        let waits = copy_and_wait(&sim, 5);
        let failed: Vec<usize> =
            waits.iter().enumerate().filter(|(_, (r, _))| r.is_err()).map(|(i, _)| i).collect();
        assert_eq!(failed, [2], "{waits:?}");
        assert!(waits[2].0.as_ref().unwrap_err().to_string().contains("EIO"));
        let record = sim.fault_record(id).unwrap();
        assert_eq!((record.calls, record.fired), (3, 1));
    }
}
