//! The rest of the facade and what the simulated kernel answers for it: tile config, the
//! render device, performance counters, the profiler, and the ioctls the library issues only
//! raw (deprecated apertures, CRIU, secondary processes).

use firmware_tests::{first_gpu, opened};
use hsakmt_core::device::Error;
use hsakmt_core::error::{Errno, Error as _, ErrorKind};
use hsakmt_core::platform::{DbgTrapData, Ioctl};
use hsakmt_core::pmc::{self, CounterKind, PmcBlock, TraceCounter};
use hsakmt_core::uapi::*;
use hsakmt_sim::{Privileges, RENDER_FD_BASE, SimPlatform};

fn ioctl_errno(e: Error) -> Errno {
    match e {
        Error::Ioctl { errno, .. } => errno,
        other => panic!("expected an ioctl error, got {other:?}"),
    }
}

#[test]
fn tile_config_comes_from_the_profile() {
    let kfd = opened(SimPlatform::new());
    let (node, _) = first_gpu(&kfd);
    let mut tiles = [0xFFFF_FFFFu32; 40];
    let mut macros = [0xFFFF_FFFFu32; 8];
    let t = kfd.tile_config(node, &mut tiles, &mut macros).unwrap();
    // MI308X XCC: 4 arrays of one engine each, so Vega 10's golden layout stands.
    assert_eq!(t.gb_addr_config, 0x2a11_4042);
    assert_eq!((t.num_banks, t.num_ranks), (0, 0), "not set from gfx9 on");
    assert_eq!(t.num_tile_configs, 32, "cut to the 32 modes amdgpu keeps");
    assert_eq!(t.num_macro_tile_configs, 8, "as many as fit");
    assert!(tiles[..32].iter().all(|v| *v == 0) && tiles[32..].iter().all(|v| *v == u32::MAX));
    assert!(matches!(
        kfd.tile_config(0, &mut tiles, &mut macros),
        Err(Error::InvalidNode { node: 0 })
    ));
}

#[test]
fn render_devices_are_opened_once() {
    let kfd = opened(SimPlatform::new());
    let (node, _) = first_gpu(&kfd);
    let a = kfd.render_device(node).unwrap();
    let b = kfd.render_device(node).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.minor, 128);
    assert_eq!(a.fd, RENDER_FD_BASE + 128);
    assert!(matches!(kfd.render_device(0), Err(Error::InvalidNode { node: 0 })));
}

#[test]
fn counters_as_upstream_offers_them() {
    let kfd = opened(SimPlatform::new());
    let (node, _) = first_gpu(&kfd);
    let blocks = kfd.pmc_counter_blocks(node).unwrap();
    assert_eq!(blocks, pmc::GFX9_BLOCKS, "gfx942 uses the gfx9 table");
    assert!(matches!(kfd.pmc_counter_blocks(0), Err(Error::Pmc(pmc::Error::NotAGpu))));
    let sq = PmcBlock::Sq.index();
    let c = |counter, kind| TraceCounter { block: sq, counter, kind };
    let root = kfd
        .pmc_register_trace(
            node,
            &[c(4, CounterKind::PrivilegedImmediate), c(5, CounterKind::PrivilegedStreaming)],
        )
        .unwrap();
    assert_eq!((root.min_buffer_bytes, root.passes), (4096, 1));
    kfd.pmc_trace_access(node, root.handle).unwrap();
    // No kernel interface counts for a thunk: NOT_SUPPORTED, not a failure on a descriptor.
    let e = kfd.pmc_run_trace(root.handle).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported);
    // Only non-privileged counters: nothing to register (upstream's rule).
    assert!(matches!(
        kfd.pmc_register_trace(node, &[c(4, CounterKind::NonPrivilegedImmediate)]),
        Err(Error::Pmc(pmc::Error::InvalidCounters))
    ));
    let nodes: Vec<u32> = kfd.gpu_nodes().unwrap().iter().collect();
    assert!(matches!(
        kfd.pmc_unregister_trace(nodes[1], root.handle),
        Err(Error::InvalidNode { .. })
    ));
    kfd.pmc_unregister_trace(node, root.handle).unwrap();
    assert!(matches!(kfd.pmc_run_trace(root.handle), Err(Error::Pmc(pmc::Error::UnknownTrace))));
    assert!(matches!(
        kfd.pmc_trace_access(node, root.handle),
        Err(Error::Pmc(pmc::Error::UnknownTrace))
    ));
}

#[test]
fn the_remaining_ioctls_answer_like_amdkfd() {
    let kfd = opened(SimPlatform::new());
    let sim = kfd.platform();
    let (node, _) = first_gpu(&kfd);
    // The deprecated apertures ioctl fills at most 7 GPUs inline.
    let mut a = kfd_ioctl_get_process_apertures_args::default();
    kfd.ioctl(&mut Ioctl::GetProcessApertures(&mut a)).unwrap();
    assert_eq!(a.num_of_nodes, 7);
    assert!(a.process_apertures.iter().all(|p| p.gpu_id != 0 && p.gpuvm_limit > p.gpuvm_base));
    // CRIU needs CAP_CHECKPOINT_RESTORE.
    let mut c = kfd_ioctl_criu_args { op: KFD_CRIU_OP_PROCESS_INFO, ..Default::default() };
    assert_eq!(ioctl_errno(kfd.ioctl(&mut Ioctl::CriuOp(&mut c)).unwrap_err()), Errno::EACCES);
    // The profiler: version; PMC needs CAP_PERFMON; the simulated GPUs have no peak-TOPS
    // limiter.
    assert_eq!(kfd.profiler_version().unwrap(), KFD_IOC_PROFILER_VERSION_NUM);
    assert_eq!(ioctl_errno(kfd.profiler_lock(node, true).unwrap_err()), Errno::EPERM);
    assert_eq!(ioctl_errno(kfd.profiler_ptl(node, false).unwrap_err()), Errno::EOPNOTSUPP);
    assert!(matches!(kfd.profiler_ptl(0, true), Err(Error::InvalidNode { node: 0 })));
    // The raw ioctl: an unknown gpu_id, an unknown operation.
    let mut ptl = kfd_ioctl_profiler_args {
        op: KFD_IOC_PROFILER_PTL_CONTROL,
        op_args: kfd_ioctl_ptl_control { gpu_id: 1, enable: 0 }.into(),
    };
    assert_eq!(ioctl_errno(kfd.ioctl(&mut Ioctl::Profiler(&mut ptl)).unwrap_err()), Errno::ENODEV);
    let mut bad = kfd_ioctl_profiler_args { op: 1, ..Default::default() };
    assert_eq!(ioctl_errno(kfd.ioctl(&mut Ioctl::Profiler(&mut bad)).unwrap_err()), Errno::EINVAL);
    // DBG_TRAP with memory of the wrong kind for the operation: EINVAL, nothing happens.
    let mut ids = [0u32; 2];
    let mut t =
        kfd_ioctl_dbg_trap_args { pid: 1, op: KFD_IOC_DBG_TRAP_ENABLE, ..Default::default() };
    let e = kfd.debug_trap_raw(&mut t, DbgTrapData::QueueIds(&mut ids)).unwrap_err();
    assert_eq!(ioctl_errno(e), Errno::EINVAL);
    assert!(!sim.debug_state().enabled);

    // A secondary process: a new, empty process on the descriptor.
    kfd.ioctl(&mut Ioctl::CreateProcess).unwrap();
    assert!(sim.is_secondary_process());
    assert_eq!(sim.buffer_count(), 0);
    assert_eq!(ioctl_errno(kfd.ioctl(&mut Ioctl::CreateProcess).unwrap_err()), Errno::EINVAL);
    // It cannot be debugged.
    let pid = hsakmt_core::platform::Host::process_id(sim);
    let (r, w) = hsakmt_core::platform::KfdDevice::create_pipe(sim).unwrap();
    let e = kfd.debugger(pid).enable(hsakmt_core::debug::ExceptionMask::NONE, w).unwrap_err();
    assert_eq!(ioctl_errno(e), Errno::EOPNOTSUPP);
    hsakmt_core::platform::KfdDevice::close_fd(sim, r);
    hsakmt_core::platform::KfdDevice::close_fd(sim, w);
}

#[test]
fn a_perfmon_capable_process_locks_gpus_for_profiling() {
    let sim = SimPlatform::builder().privileges(Privileges { perfmon: true }).build();
    let kfd = opened(sim);
    let (node, gpu_id) = first_gpu(&kfd);
    kfd.profiler_lock(node, true).unwrap();
    assert_eq!(kfd.platform().profiler_lock(gpu_id), Some(true));
    assert_eq!(ioctl_errno(kfd.profiler_lock(node, false).unwrap_err()), Errno::EALREADY);
    kfd.profiler_unlock(node).unwrap();
    assert_eq!(kfd.platform().profiler_lock(gpu_id), None);
    assert_eq!(ioctl_errno(kfd.profiler_unlock(node).unwrap_err()), Errno::EINVAL);
    kfd.profiler_lock(node, false).unwrap();
    assert_eq!(kfd.platform().profiler_lock(gpu_id), Some(false), "perfcount off");
    // An unknown gpu_id through the raw ioctl.
    let mut pmc = kfd_ioctl_profiler_args {
        op: KFD_IOC_PROFILER_PMC,
        op_args: kfd_ioctl_pmc_settings { gpu_id: 7, lock: 1, perfcount_enable: 1 }.into(),
    };
    assert_eq!(ioctl_errno(kfd.ioctl(&mut Ioctl::Profiler(&mut pmc)).unwrap_err()), Errno::EINVAL);
    // A kernel before 1.23 has no profiler.
    let old = opened(SimPlatform::builder().kfd_version(1, 22).build());
    assert!(matches!(old.profiler_version(), Err(Error::NotSupported { needs_minor: 23, .. })));
}
