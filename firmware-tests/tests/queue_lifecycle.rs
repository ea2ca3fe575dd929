//! Queue creation, update and destruction through the device facade, against the simulated
//! kernel's checks — kfdtest's `KFDQMTest` expectations (CreateDestroyCpQueue,
//! CreateDestroySdmaQueue, CreateQueueStressSingleThreaded, UserQueueBufValidation,
//! DisableCpQueueByUpdateWithNullAddress / ZeroPercentage, DisableSdmaQueueByUpdateWithNullAddress)
//! and `KFDGWSTest.Allocate`, plus the library's own checks before the ioctl.

use std::sync::atomic::Ordering;
use std::time::Duration;

use firmware_tests::queue_support::{Signals, cpu_node, gpu_nodes, host_buffer, wait_until};
use firmware_tests::{SimKfd, device};
use hsakmt_core::device::Error as DeviceError;
use hsakmt_core::device::queue_manager::{
    Engine, QueueDesc, QueueError, QueueHandle, QueuePointers, QueueType, RingSpec, RingUpdate,
    SdmaCompletion,
};
use hsakmt_core::error::{Errno, Error as _, ErrorKind};
use hsakmt_core::platform::{Ioctl, SharedMemory, SysfsFile};
use hsakmt_core::queue::aql::{AqlPacket, KernelDispatch};
use hsakmt_core::queue::params::{QueueParamError, QueuePriority};
use hsakmt_core::uapi::{
    _IOC_NR, AMDKFD_IOC_CREATE_QUEUE, KFD_IOC_QUEUE_TYPE_COMPUTE, KFD_IOC_QUEUE_TYPE_SDMA,
    kfd_ioctl_create_queue_args,
};
use hsakmt_sim::{CpMode, PM4_WRITE_DATA, Profile, SimPlatform};

const T: Duration = Duration::from_secs(20);
const CREATE: u32 = _IOC_NR(AMDKFD_IOC_CREATE_QUEUE);

fn open_with(sim: SimPlatform) -> Box<SimKfd> {
    let kfd = device(sim);
    kfd.open().unwrap();
    kfd
}

fn open(mode: CpMode) -> Box<SimKfd> {
    open_with(SimPlatform::builder().cp_mode(mode).build())
}

fn desc(node: u32, t: QueueType) -> QueueDesc<'static, hsakmt_sim::SimMapping> {
    QueueDesc::new(node, t, 4096)
}

/// PM4 `WRITE_DATA` of `values` to memory at `addr` (dst_sel 5, write confirm).
fn write_data(addr: u64, values: &[u32]) -> Vec<u32> {
    let count = values.len() as u32 + 2;
    let mut v = vec![
        (3 << 30) | (count << 16) | (PM4_WRITE_DATA << 8),
        (5 << 8) | (1 << 20),
        addr as u32,
        (addr >> 32) as u32,
    ];
    v.extend_from_slice(values);
    v
}

#[test]
fn create_destroy_every_kind_in_every_order() {
    let kfd = open(CpMode::Step);
    let node = gpu_nodes(&kfd)[0];
    let kinds = [QueueType::Compute, QueueType::ComputeAql, QueueType::Sdma];
    // The first queue on a node maps its doorbell page, which stays: count after it.
    let warm = kfd.create_queue(&desc(node, QueueType::Sdma)).unwrap();
    kfd.destroy_queue(warm.handle).unwrap();
    let (buffers, objects) = (kfd.platform().buffer_count(), kfd.memory_usage().objects);
    // Every permutation of create order × destroy order.
    let perms = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
    for create in perms {
        for destroy in perms {
            let infos: Vec<_> =
                create.iter().map(|i| kfd.create_queue(&desc(node, kinds[*i])).unwrap()).collect();
            assert_eq!(kfd.queue_count(), 3);
            assert_eq!(kfd.platform().queue_ids().len(), 3);
            let ids: std::collections::BTreeSet<_> = infos.iter().map(|i| i.queue_id).collect();
            assert_eq!(ids.len(), 3, "distinct queue ids");
            for i in destroy {
                kfd.destroy_queue(infos[i].handle).unwrap();
            }
            assert_eq!(kfd.queue_count(), 0);
            assert!(kfd.platform().queue_ids().is_empty());
        }
    }
    // 36 rounds, nothing left behind.
    assert_eq!(kfd.platform().buffer_count(), buffers);
    assert_eq!(kfd.memory_usage().objects, objects);
}

#[test]
fn create_destroy_stress() {
    let kfd = open(CpMode::Threaded);
    let nodes = gpu_nodes(&kfd);
    let mut live: Vec<QueueHandle> = Vec::new();
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    for round in 0..600 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        if live.len() < 24 && (!seed.is_multiple_of(3) || live.is_empty()) {
            let t = [QueueType::Compute, QueueType::ComputeAql, QueueType::Sdma]
                [(seed >> 8) as usize % 3];
            let node = nodes[(seed >> 16) as usize % 4];
            let info =
                kfd.create_queue(&desc(node, t)).unwrap_or_else(|e| panic!("round {round}: {e}"));
            live.push(info.handle);
        } else {
            let h = live.swap_remove((seed >> 24) as usize % live.len());
            kfd.destroy_queue(h).unwrap();
        }
        assert_eq!(kfd.queue_count(), live.len());
        assert_eq!(kfd.platform().queue_ids().len(), live.len());
    }
    for h in live {
        kfd.destroy_queue(h).unwrap();
    }
}

#[test]
fn destroyed_handles_are_rejected() {
    let kfd = open(CpMode::Step);
    let node = gpu_nodes(&kfd)[0];
    let a = kfd.create_queue(&desc(node, QueueType::ComputeAql)).unwrap();
    kfd.destroy_queue(a.handle).unwrap();
    let b = kfd.create_queue(&desc(node, QueueType::ComputeAql)).unwrap();
    assert_eq!(a.handle.index(), b.handle.index(), "the slot is reused");
    for r in [
        kfd.destroy_queue(a.handle),
        kfd.update_queue(a.handle, 100, QueuePriority::Normal, RingUpdate::Keep),
        kfd.set_queue_cu_mask(a.handle, 32, &[1]),
        kfd.alloc_queue_gws(a.handle, 1).map(|_| ()),
        kfd.queue_info(a.handle).map(|_| ()),
        kfd.aql_queue(a.handle).map(|_| ()),
        kfd.queue_wave_state(a.handle).map(|_| ()),
    ] {
        assert_eq!(r, Err(QueueError::InvalidHandle));
    }
    assert_eq!(QueueError::InvalidHandle.kind(), ErrorKind::InvalidHandle);
    assert_eq!(kfd.queue_info(b.handle).unwrap().queue_id, b.queue_id, "the new queue is intact");
    assert_eq!(kfd.queue_info(QueueHandle::from_raw(u64::MAX)), Err(QueueError::InvalidHandle));
}

#[test]
fn cpu_nodes_and_missing_engines_are_refused_before_the_ioctl() {
    let kfd = open(CpMode::Step);
    let cpu = cpu_node(&kfd);
    let calls = kfd.platform().ioctl_calls(CREATE);
    let e = kfd.create_queue(&desc(cpu, QueueType::ComputeAql)).unwrap_err();
    assert_eq!(e, QueueError::NotAGpu { node: cpu });
    assert_eq!(e.kind(), ErrorKind::InvalidNode);
    assert_eq!(kfd.create_queue(&desc(9999, QueueType::Sdma)), Err(QueueError::InvalidNode(9999)));
    assert_eq!(kfd.set_trap_handler(cpu, 0x1000, 0x2000), Err(QueueError::NotAGpu { node: cpu }));
    // The MI308X partitions have no XGMI SDMA engines.
    let node = gpu_nodes(&kfd)[0];
    assert_eq!(
        kfd.create_queue(&desc(node, QueueType::SdmaXgmi)),
        Err(QueueError::NoEngine { node, engine: Engine::SdmaXgmi })
    );
    assert_eq!(
        kfd.create_queue(&desc(node, QueueType::SdmaEngine(2))),
        Err(QueueError::InvalidEngineId { engine_id: 2, engines: 2 })
    );
    assert_eq!(kfd.platform().ioctl_calls(CREATE), calls, "no ioctl was issued");
    assert_eq!(kfd.queue_count(), 0);
}

/// The MI210 capture lacks the `gpu_id` files; give its GPU nodes 2..=9 ids so the simulated
/// kernel exposes them.
fn mi210() -> Profile {
    let mut p = Profile::embedded("mi210-8gpu-2hive").unwrap();
    for node in 2..=9u32 {
        p.set_file(SysfsFile::GpuId(node), format!("{}\n", 40000 + node).as_bytes());
    }
    p
}

#[test]
fn xgmi_and_engine_id_queues_copy_on_mi210() {
    let sim = SimPlatform::builder().profile(mi210()).cp_mode(CpMode::Step).build();
    let kfd = open_with(sim);
    let node = gpu_nodes(&kfd)[0];
    let sim = kfd.platform();
    let src = host_buffer(&kfd, 1 << 20);
    let dst = host_buffer(&kfd, 1 << 20);
    for (i, w) in src.u64s().iter().enumerate() {
        w.store(i as u64 * 0x9E37_79B9, Ordering::Relaxed);
    }
    for t in [QueueType::SdmaXgmi, QueueType::SdmaEngine(0), QueueType::SdmaEngine(4)] {
        let info = kfd.create_queue(&desc(node, t)).unwrap();
        let mut q = kfd.sdma_queue(info.handle).unwrap();
        let ticket = q.copy(dst.addr(), src.addr(), 1 << 20, SdmaCompletion::Fence, || {}).unwrap();
        wait_until(sim, T, "the copy", || q.is_complete(ticket));
        assert!(
            src.u64s()
                .iter()
                .zip(dst.u64s())
                .all(|(a, b)| a.load(Ordering::Relaxed) == b.load(Ordering::Relaxed))
        );
        dst.u64s().iter().for_each(|w| w.store(0, Ordering::Relaxed));
        drop(q);
        kfd.destroy_queue(info.handle).unwrap();
    }
    assert_eq!(
        kfd.create_queue(&desc(node, QueueType::SdmaEngine(5))),
        Err(QueueError::InvalidEngineId { engine_id: 5, engines: 5 })
    );
    // gfx90a compute queues: the library's context-save sizing satisfies the kernel's.
    let aql = kfd.create_queue(&desc(node, QueueType::ComputeAql)).unwrap();
    assert_eq!(aql.eop.1, 4096);
    assert!(aql.ctx_save_sizes.unwrap().ctx_save_restore_size > 104 * 0x80000);
    kfd.destroy_queue(aql.handle).unwrap();
    // KFD 1.16 predates SDMA_BY_ENG_ID.
    let old = open_with(SimPlatform::builder().profile(mi210()).kfd_version(1, 16).build());
    let e = old.create_queue(&desc(node, QueueType::SdmaEngine(0))).unwrap_err();
    assert!(
        matches!(e, QueueError::Device(DeviceError::NotSupported { needs_minor: 17, .. })),
        "{e:?}"
    );
}

#[test]
fn ring_parameters_are_checked_before_the_ioctl() {
    let kfd = open(CpMode::Step);
    let node = gpu_nodes(&kfd)[0];
    let calls = kfd.platform().ioctl_calls(CREATE);
    let ring = host_buffer(&kfd, 4096);
    let addr = |address, size| RingSpec::Address { address, size };
    let cases = [
        (addr(ring.addr(), 3000), QueueParamError::RingSizeNotPowerOfTwo),
        (addr(ring.addr(), 512), QueueParamError::RingTooSmall),
        (addr(ring.addr() + 64, 1024), QueueParamError::RingMisaligned),
        (addr(0, 4096), QueueParamError::RingMisaligned),
    ];
    for (spec, want) in cases {
        for t in [QueueType::Compute, QueueType::ComputeAql, QueueType::Sdma] {
            let e = kfd.create_queue(&desc(node, t).with_ring(spec)).unwrap_err();
            assert_eq!(e, QueueError::Param(want), "{t:?}");
        }
    }
    let e = kfd
        .create_queue(
            &desc(node, QueueType::Sdma)
                .with_ring(RingSpec::Mapped { mapping: &*ring, size: 8192 }),
        )
        .unwrap_err();
    assert_eq!(e, QueueError::RingOutsideMapping { ring_size: 8192, mapping_len: 4096 });
    assert_eq!(
        kfd.create_queue(&desc(node, QueueType::ComputeAql).with_percentage(101)),
        Err(QueueError::InvalidPercentage(101))
    );
    assert_eq!(kfd.platform().ioctl_calls(CREATE), calls);
    assert_eq!(kfd.queue_count(), 0);
}

/// kfdtest `UserQueueBufValidation`: a ring larger than its buffer, or a null ring, is refused
/// by the kernel for CP and SDMA queues; a live queue's buffers cannot be released; after
/// destruction they can.
#[test]
fn user_queue_buffer_validation() {
    let kfd = open(CpMode::Step);
    let node = gpu_nodes(&kfd)[0];
    let sim = kfd.platform();
    let ring = host_buffer(&kfd, 4096);
    for t in [QueueType::Compute, QueueType::Sdma] {
        // Through the facade with a bare address: the kernel sees a 2-page ring on a 1-page
        // buffer.
        let e = kfd
            .create_queue(
                &desc(node, t).with_ring(RingSpec::Address { address: ring.addr(), size: 8192 }),
            )
            .unwrap_err();
        assert_eq!(e.errno(), Some(Errno::EINVAL), "{t:?}: {e}");
        assert_eq!(
            e,
            QueueError::Device(DeviceError::Ioctl { name: "CREATE_QUEUE", errno: Errno::EINVAL })
        );
        assert_eq!(kfd.queue_count(), 0);
    }
    // The kernel's own answer to a null ring (the facade refuses it earlier).
    let pointers = host_buffer(&kfd, 4096);
    for queue_type in [KFD_IOC_QUEUE_TYPE_COMPUTE, KFD_IOC_QUEUE_TYPE_SDMA] {
        let mut a = kfd_ioctl_create_queue_args {
            ring_base_address: 0,
            ring_size: 4096,
            read_pointer_address: pointers.addr(),
            write_pointer_address: pointers.addr() + 8,
            gpu_id: kfd.platform().gpu_ids()[0],
            queue_type,
            queue_percentage: 100,
            queue_priority: 7,
            ..Default::default()
        };
        let e = kfd.ioctl(&mut Ioctl::CreateQueue(&mut a)).unwrap_err();
        assert_eq!(e, DeviceError::Ioctl { name: "CREATE_QUEUE", errno: Errno::EINVAL });
    }
    assert!(kfd.platform().queue_ids().is_empty());
    // A live queue pins its ring in the kernel: unmapping or freeing it fails with EBUSY
    // until the queue is gone (nobody holds a CPU view of this bare-address ring).
    let ring_addr = ring.addr();
    let mut ring = ring.alloc;
    drop(ring.mapping.take());
    for t in [QueueType::Compute, QueueType::Sdma] {
        let info = kfd
            .create_queue(
                &desc(node, t).with_ring(RingSpec::Address { address: ring_addr, size: 4096 }),
            )
            .unwrap();
        let e = kfd.unmap_memory_from_gpu(ring_addr).unwrap_err();
        assert_eq!(e, DeviceError::Ioctl { name: "UNMAP_MEMORY_FROM_GPU", errno: Errno::EBUSY });
        let e = kfd.free_memory(ring_addr).unwrap_err();
        assert!(
            matches!(e, DeviceError::Ioctl { errno: Errno::EBUSY, .. }),
            "{t:?}: freeing a live queue's ring: {e:?}"
        );
        kfd.destroy_queue(info.handle).unwrap();
    }
    let _ = sim;
    // With a mapped ring the queue also holds a view: the library refuses first.
    let mapped = host_buffer(&kfd, 4096);
    let info = kfd
        .create_queue(
            &desc(node, QueueType::Sdma)
                .with_ring(RingSpec::Mapped { mapping: &*mapped, size: 4096 }),
        )
        .unwrap();
    let addr = mapped.addr();
    let e = kfd.free(mapped.alloc).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy, "{e:?}");
    kfd.destroy_queue(info.handle).unwrap();
    kfd.free_memory(addr).unwrap();
    // After destruction the pinned ring goes too.
    kfd.free(ring).unwrap();
    kfd.free(pointers.alloc).unwrap();
}

fn aql_disable_and_resume(disable: RingUpdate, percentage: u32) {
    let kfd = open(CpMode::Step);
    let node = gpu_nodes(&kfd)[0];
    let sim = kfd.platform();
    let flag = host_buffer(&kfd, 4096);
    let k = sim.register_kernel("set", |ctx| ctx.store_u64(ctx.kernarg_u64(0)?, 7));
    flag.u64s()[1].store(flag.addr(), Ordering::Relaxed);
    let info = kfd.create_queue(&desc(node, QueueType::ComputeAql)).unwrap();
    let q = kfd.aql_queue(info.handle).unwrap();
    kfd.update_queue(info.handle, percentage, QueuePriority::High, disable).unwrap();
    assert!(!kfd.queue_info(info.handle).unwrap().active);
    let st = sim.queue_state(info.queue_id).unwrap();
    assert!(!st.active);
    assert_eq!(st.priority, 11);
    let mut d = KernelDispatch::linear(k, 1, 1);
    d.kernarg_address = flag.addr() + 8;
    q.submit(&AqlPacket::KernelDispatch(d).to_words().unwrap(), || {});
    sim.run_until_idle();
    assert_eq!(flag.u64s()[0].load(Ordering::Relaxed), 0, "a disabled queue does not fetch");
    assert_eq!(q.read_index(), 0);
    kfd.update_queue(info.handle, 100, QueuePriority::Normal, RingUpdate::Restore).unwrap();
    assert!(kfd.queue_info(info.handle).unwrap().active);
    sim.run_until_idle();
    assert_eq!(flag.u64s()[0].load(Ordering::Relaxed), 7, "re-enabled, it resumes");
    assert_eq!(q.read_index(), 1);
}

#[test]
fn aql_queue_disabled_by_null_ring_resumes() {
    aql_disable_and_resume(RingUpdate::Disable, 100);
}

#[test]
fn aql_queue_disabled_by_zero_percent_resumes() {
    aql_disable_and_resume(RingUpdate::Keep, 0);
}

#[test]
fn pm4_queue_disabled_by_update_resumes() {
    for (ring, pct) in [(RingUpdate::Disable, 100), (RingUpdate::Keep, 0)] {
        let kfd = open(CpMode::Threaded);
        let node = gpu_nodes(&kfd)[0];
        let sim = kfd.platform();
        let dst = host_buffer(&kfd, 4096);
        let info = kfd.create_queue(&desc(node, QueueType::Compute)).unwrap();
        let mut q = kfd.pm4_queue(info.handle).unwrap();
        q.submit(&write_data(dst.addr(), &[1, 2]), || {}).unwrap();
        wait_until(sim, T, "the first write", || dst.u32s()[1].load(Ordering::Acquire) == 2);
        kfd.update_queue(info.handle, pct, QueuePriority::Normal, ring).unwrap();
        q.submit(&write_data(dst.addr() + 16, &[3]), || {}).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        sim.run_until_idle();
        assert_eq!(dst.u32s()[4].load(Ordering::Acquire), 0, "disabled: not executed");
        kfd.update_queue(info.handle, 100, QueuePriority::Normal, RingUpdate::Restore).unwrap();
        // The processor writes the data before it moves the read pointer past the packet:
        // wait for the packet to be consumed, not only for its write.
        wait_until(sim, T, "the resumed packet consumed", || q.pending() == 0);
        assert_eq!(dst.u32s()[4].load(Ordering::Acquire), 3, "the resumed write");
    }
}

#[test]
fn sdma_queue_disabled_by_null_ring_resumes() {
    let kfd = open(CpMode::Step);
    let node = gpu_nodes(&kfd)[0];
    let sim = kfd.platform();
    let info = kfd.create_queue(&desc(node, QueueType::Sdma)).unwrap();
    let mut q = kfd.sdma_queue(info.handle).unwrap();
    let dst = host_buffer(&kfd, 4096);
    kfd.update_queue(info.handle, 100, QueuePriority::Normal, RingUpdate::Disable).unwrap();
    let t = q.fill(dst.addr(), 0xABCD, 4096, SdmaCompletion::Fence, || {}).unwrap();
    sim.run_until_idle();
    assert!(!q.is_complete(t));
    assert_eq!(dst.u32s()[0].load(Ordering::Relaxed), 0);
    kfd.update_queue(info.handle, 100, QueuePriority::Normal, RingUpdate::Restore).unwrap();
    sim.run_until_idle();
    assert!(q.is_complete(t));
    assert!(dst.u32s().iter().all(|w| w.load(Ordering::Relaxed) == 0xABCD));
}

#[test]
fn update_checks() {
    let kfd = open(CpMode::Step);
    let node = gpu_nodes(&kfd)[0];
    let info = kfd.create_queue(&desc(node, QueueType::ComputeAql)).unwrap();
    assert_eq!(
        kfd.update_queue(info.handle, 101, QueuePriority::Normal, RingUpdate::Keep),
        Err(QueueError::InvalidPercentage(101))
    );
    assert_eq!(
        kfd.update_queue(
            info.handle,
            50,
            QueuePriority::Normal,
            RingUpdate::Replace { address: 0x1000, size: 1000 }
        ),
        Err(QueueError::Param(QueueParamError::RingSizeNotPowerOfTwo))
    );
    // A replacement ring that is not a buffer: the kernel answers EFAULT, nothing changes.
    let e = kfd
        .update_queue(
            info.handle,
            50,
            QueuePriority::Low,
            RingUpdate::Replace { address: 0x7000_0000_0000, size: 4096 },
        )
        .unwrap_err();
    assert_eq!(e.errno(), Some(Errno::EFAULT));
    let i = kfd.queue_info(info.handle).unwrap();
    assert_eq!((i.percentage, i.priority), (100, QueuePriority::Normal));
    let st = kfd.platform().queue_state(info.queue_id).unwrap();
    assert_eq!((st.ring_address, st.percentage, st.priority), (i.ring_address, 100, 7));
    kfd.update_queue(info.handle, 30, QueuePriority::Maximum, RingUpdate::Keep).unwrap();
    let st = kfd.platform().queue_state(info.queue_id).unwrap();
    assert_eq!((st.percentage, st.priority, st.active), (30, 15, true));
}

#[test]
fn cu_masks_are_validated() {
    let kfd = open(CpMode::Step);
    let node = gpu_nodes(&kfd)[0];
    let info = kfd.create_queue(&desc(node, QueueType::ComputeAql)).unwrap();
    // 80 SIMDs / 4 per CU = 20 CUs on an MI308X CPX partition.
    let cases: [(u32, &[u32], QueueParamError); 5] = [
        (0, &[1], QueueParamError::InvalidCuMaskCount(0)),
        (33, &[1, 1], QueueParamError::InvalidCuMaskCount(33)),
        (64, &[1], QueueParamError::InvalidCuMaskCount(64)),
        (32, &[1 << 20], QueueParamError::CuMaskOutOfRange { bit: 20 }),
        (32, &[0], QueueParamError::CuMaskEmpty),
    ];
    for (count, mask, want) in cases {
        assert_eq!(kfd.set_queue_cu_mask(info.handle, count, mask), Err(QueueError::Param(want)));
    }
    assert_eq!(kfd.platform().queue_cu_mask(info.queue_id), None, "nothing reached the kernel");
    kfd.set_queue_cu_mask(info.handle, 32, &[0x000F_F00F, 0xFFFF]).unwrap();
    assert_eq!(kfd.platform().queue_cu_mask(info.queue_id), Some(vec![0x000F_F00F]));
    assert_eq!(kfd.queue_info(info.handle).unwrap().cu_mask_bits, 32);
}

/// kfdtest `KFDGWSTest.Allocate`: the first GWS entry is 0; one queue per process holds them.
#[test]
fn gws_allocation() {
    let kfd = open(CpMode::Step);
    let node = gpu_nodes(&kfd)[0];
    let a = kfd.create_queue(&desc(node, QueueType::ComputeAql)).unwrap();
    let b = kfd.create_queue(&desc(node, QueueType::Compute)).unwrap();
    let s = kfd.create_queue(&desc(node, QueueType::Sdma)).unwrap();
    assert_eq!(kfd.alloc_queue_gws(a.handle, 64), Ok(0));
    assert_eq!(kfd.queue_info(a.handle).unwrap().gws, Some(0));
    assert_eq!(kfd.platform().gws_owner(a.gpu_id), Some(a.queue_id));
    let e = kfd.alloc_queue_gws(b.handle, 64).unwrap_err();
    assert_eq!(e.errno(), Some(Errno::EBUSY));
    assert_eq!(kfd.alloc_queue_gws(s.handle, 64), Err(QueueError::WrongQueueKind));
    kfd.destroy_queue(a.handle).unwrap();
    assert_eq!(kfd.alloc_queue_gws(b.handle, 64), Ok(0), "the destroyed queue released them");
    // A profile without GWS.
    let old = open_with(
        SimPlatform::builder().profile(Profile::embedded("mi25-vega10-rocm18").unwrap()).build(),
    );
    let n = gpu_nodes(&old)[0];
    let q = old.create_queue(&desc(n, QueueType::ComputeAql)).unwrap();
    assert_eq!(old.alloc_queue_gws(q.handle, 1), Err(QueueError::NoGws { node: n }));
}

#[test]
fn wave_state_of_a_disabled_compute_queue() {
    let kfd = open(CpMode::Step);
    let node = gpu_nodes(&kfd)[0];
    let info = kfd.create_queue(&desc(node, QueueType::ComputeAql)).unwrap();
    let e = kfd.queue_wave_state(info.handle).unwrap_err();
    assert_eq!(e.errno(), Some(Errno::EINVAL), "active queues have no saved state");
    kfd.update_queue(info.handle, 0, QueuePriority::Normal, RingUpdate::Keep).unwrap();
    let w = kfd.queue_wave_state(info.handle).unwrap();
    let sizes = info.ctx_save_sizes.unwrap();
    assert_eq!(w.save_area_header, info.ctx_save_address);
    assert_eq!(w.user_context_save_area, info.ctx_save_address + u64::from(sizes.ctl_stack_size));
    assert_eq!((w.control_stack_used, w.save_area_used), (0, 0));
    let s = kfd.create_queue(&desc(node, QueueType::Sdma)).unwrap();
    assert_eq!(kfd.queue_wave_state(s.handle), Err(QueueError::NoContextSaveArea));
}

#[test]
fn trap_handler_reaches_the_kernel() {
    let kfd = open(CpMode::Step);
    let node = gpu_nodes(&kfd)[1];
    kfd.set_trap_handler(node, 0x10_0000, 0x20_0000).unwrap();
    let gpu = kfd.with_topology(|t| t.node_by_user_id(node).unwrap().node().gpu_id()).unwrap();
    assert_eq!(kfd.platform().trap_handler(gpu.unwrap()), Some((0x10_0000, 0x20_0000)));
}

#[test]
fn queue_limits_per_gpu() {
    let kfd = open(CpMode::Step);
    let node = gpu_nodes(&kfd)[0];
    // 2 SDMA engines × 8 queues each.
    let sdma: Vec<_> =
        (0..16).map(|_| kfd.create_queue(&desc(node, QueueType::Sdma)).unwrap()).collect();
    let e = kfd.create_queue(&desc(node, QueueType::Sdma)).unwrap_err();
    assert_eq!(e.errno(), Some(Errno::ENOMEM));
    assert_eq!(kfd.queue_count(), 16);
    // gfx942 allows 255 queues per GPU in all.
    let mut aql = Vec::new();
    for _ in 16..255 {
        aql.push(
            kfd.create_queue(
                &desc(node, QueueType::ComputeAql).with_ring(RingSpec::Allocate { size: 4096 }),
            )
            .unwrap(),
        );
    }
    let e = kfd.create_queue(&desc(node, QueueType::ComputeAql)).unwrap_err();
    assert_eq!(e.errno(), Some(Errno::ENOSPC));
    // Another GPU is not affected.
    let other = kfd.create_queue(&desc(gpu_nodes(&kfd)[1], QueueType::ComputeAql)).unwrap();
    for i in sdma.iter().chain(&aql).chain([&other]) {
        kfd.destroy_queue(i.handle).unwrap();
    }
}

#[test]
fn close_destroys_remaining_queues() {
    let kfd = open(CpMode::Threaded);
    let node = gpu_nodes(&kfd)[0];
    let objects = kfd.memory_usage().objects;
    let a = kfd.create_queue(&desc(node, QueueType::ComputeAql)).unwrap();
    let b = kfd.create_queue(&desc(node, QueueType::Sdma)).unwrap();
    assert!(kfd.memory_usage().objects > objects);
    assert_eq!(kfd.platform().doorbell_pages(), 1, "the GPU's doorbell page is watched");
    // A producer holds views of the queue's memory: the close refuses, destroying the
    // queues but keeping the device open until the producer goes.
    let p = kfd.sdma_queue(b.handle).unwrap();
    assert!(kfd.close().is_err());
    assert!(kfd.platform().queue_ids().is_empty());
    assert_eq!(kfd.queue_count(), 0);
    drop(p);
    kfd.close().unwrap();
    assert_eq!(kfd.open_count(), 0);
    // The page is a view of address space the process releases after the close: a view kept
    // past it would later be put back as PROT_NONE over whatever took the range meanwhile.
    assert_eq!(
        kfd.platform().doorbell_pages(),
        0,
        "no view of the doorbell page outlives the close"
    );
    kfd.open().unwrap();
    assert_eq!(kfd.memory_usage().objects, objects);
    assert_eq!(kfd.queue_count(), 0);
    assert_eq!(kfd.queue_info(a.handle), Err(QueueError::InvalidHandle));
}

#[test]
fn destroy_waits_for_producers() {
    let kfd = open(CpMode::Step);
    let node = gpu_nodes(&kfd)[0];
    let info = kfd.create_queue(&desc(node, QueueType::ComputeAql)).unwrap();
    let q = kfd.aql_queue(info.handle).unwrap();
    assert_eq!(kfd.destroy_queue(info.handle), Err(QueueError::Busy));
    assert_eq!(kfd.sdma_queue(info.handle).map(|_| ()), Err(QueueError::WrongQueueKind));
    drop(q);
    kfd.destroy_queue(info.handle).unwrap();
    // A queue on caller pointers cannot get a producer.
    let page = host_buffer(&kfd, 4096);
    let mut d = desc(node, QueueType::ComputeAql);
    d.pointers = QueuePointers::Caller { read: page.addr() + 128, write: page.addr() + 56 };
    let i = kfd.create_queue(&d).unwrap();
    assert_eq!(kfd.aql_queue(i.handle).map(|_| ()), Err(QueueError::WrongQueueKind));
    assert_eq!((i.read_pointer, i.write_pointer), (page.addr() + 128, page.addr() + 56));
}

#[test]
fn queue_errors_reach_the_payload_and_event() {
    let kfd = open(CpMode::Step);
    let node = gpu_nodes(&kfd)[0];
    let sim = kfd.platform();
    let payload = Signals::new(&kfd, 1, 0);
    let mut d = desc(node, QueueType::ComputeAql);
    d.error.payload_address = payload.handle(0) + 8;
    d.error.event_id = 77;
    let info = kfd.create_queue(&d).unwrap();
    let q = kfd.aql_queue(info.handle).unwrap();
    // A kernel-object address nobody registered.
    q.submit(
        &AqlPacket::KernelDispatch(KernelDispatch::linear(0xDEAD_0000, 64, 64)).to_words().unwrap(),
        || {},
    );
    sim.run_until_idle();
    let f = sim.queue_fault(info.queue_id).unwrap();
    assert_eq!(f.exception, hsakmt_core::uapi::EC_QUEUE_PACKET_DISPATCH_CODE_INVALID);
    assert_eq!(payload.get(0).load_acquire() as u64, 1 << (f.exception - 1));
    assert!(sim.raised_events().contains(&77));
    assert!(!sim.queue_state(info.queue_id).unwrap().active);
    // An undecodable packet on another queue: reserved bits set.
    let info2 = kfd.create_queue(&desc(node, QueueType::ComputeAql)).unwrap();
    let q2 = kfd.aql_queue(info2.handle).unwrap();
    let mut w = AqlPacket::KernelDispatch(KernelDispatch::linear(1, 1, 1)).to_words().unwrap();
    w.qw[0] |= 1 << 16; // reserved0 (bytes 10..12)
    q2.submit(&w, || {});
    sim.run_until_idle();
    assert_eq!(
        sim.queue_fault(info2.queue_id).unwrap().exception,
        hsakmt_core::uapi::EC_QUEUE_PACKET_RESERVED
    );
}

/// Without `ACQUIRE_VM` for the GPU, amdkfd cannot bind the process to it: `ESRCH`.
#[test]
fn queues_need_the_gpus_vm() {
    let sim = SimPlatform::builder().cp_mode(CpMode::Step).build();
    hsakmt_core::platform::KfdDevice::open(&sim).unwrap();
    let gpu_id = sim.gpu_ids()[0];
    let mut a = kfd_ioctl_create_queue_args {
        gpu_id,
        queue_type: KFD_IOC_QUEUE_TYPE_SDMA,
        ring_size: 4096,
        queue_percentage: 100,
        ..Default::default()
    };
    let r = hsakmt_core::platform::KfdDevice::ioctl(&sim, &mut Ioctl::CreateQueue(&mut a));
    assert_eq!(r, Err(Errno::ESRCH));
    let mut t = hsakmt_core::uapi::kfd_ioctl_set_trap_handler_args { gpu_id, ..Default::default() };
    let r = hsakmt_core::platform::KfdDevice::ioctl(&sim, &mut Ioctl::SetTrapHandler(&mut t));
    assert_eq!(r, Err(Errno::ESRCH));
}
