//! Fault injection on every queue ioctl: the operation fails with a typed error carrying the
//! errno, nothing is leaked or half-changed, and the same operation succeeds once the fault is
//! gone. Interrupted calls (`EINTR`) are retried transparently.

use firmware_tests::queue_support::gpu_nodes;
use firmware_tests::{SimKfd, device};
use hsakmt_core::device::Error as DeviceError;
use hsakmt_core::device::queue_manager::{QueueDesc, QueueError, QueueType, RingUpdate};
use hsakmt_core::error::{Errno, Error as _, ErrorKind};
use hsakmt_core::queue::params::QueuePriority;
use hsakmt_core::uapi::{
    _IOC_NR, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, AMDKFD_IOC_ALLOC_QUEUE_GWS, AMDKFD_IOC_CREATE_QUEUE,
    AMDKFD_IOC_DESTROY_QUEUE, AMDKFD_IOC_GET_QUEUE_WAVE_STATE, AMDKFD_IOC_MAP_MEMORY_TO_GPU,
    AMDKFD_IOC_SET_CU_MASK, AMDKFD_IOC_SET_TRAP_HANDLER, AMDKFD_IOC_UPDATE_QUEUE,
};
use hsakmt_sim::{CpMode, IoctlFault, SimPlatform, Trigger};

fn open() -> Box<SimKfd> {
    let kfd = device(SimPlatform::builder().cp_mode(CpMode::Step).build());
    kfd.open().unwrap();
    kfd
}

fn arm(kfd: &SimKfd, ioctl: u32, errno: Errno) {
    kfd.platform().inject(IoctlFault { nr: Some(_IOC_NR(ioctl)), errno, trigger: Trigger::Nth(1) });
}

fn ioctl_error(e: &QueueError, name: &str, errno: Errno) {
    assert_eq!(e, &QueueError::Device(DeviceError::Ioctl { name: leak(name), errno }));
    assert_eq!(e.errno(), Some(errno));
    assert_eq!(e.kind(), errno.kind());
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

#[test]
fn create_fails_cleanly_and_then_succeeds() {
    let kfd = open();
    let node = gpu_nodes(&kfd)[0];
    // The first queue maps the node's doorbell page, which stays: count after it.
    let warm = kfd.create_queue(&QueueDesc::new(node, QueueType::Sdma, 4096)).unwrap();
    kfd.destroy_queue(warm.handle).unwrap();
    let buffers = kfd.platform().buffer_count();
    let objects = kfd.memory_usage().objects;
    for t in [QueueType::Compute, QueueType::ComputeAql, QueueType::Sdma] {
        for errno in [Errno::EINVAL, Errno::ENOMEM, Errno::ENOSPC, Errno::EIO] {
            arm(&kfd, AMDKFD_IOC_CREATE_QUEUE, errno);
            let e = kfd.create_queue(&QueueDesc::new(node, t, 4096)).unwrap_err();
            ioctl_error(&e, "CREATE_QUEUE", errno);
            assert_eq!(kfd.queue_count(), 0);
            assert!(kfd.platform().queue_ids().is_empty());
            assert_eq!(kfd.memory_usage().objects, objects);
            assert_eq!(kfd.platform().buffer_count(), buffers, "{t:?}/{errno:?}: buffers freed");
        }
        let info = kfd.create_queue(&QueueDesc::new(node, t, 4096)).unwrap();
        kfd.destroy_queue(info.handle).unwrap();
    }
    // EINTR is retried by the facade.
    arm(&kfd, AMDKFD_IOC_CREATE_QUEUE, Errno::EINTR);
    let info = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).unwrap();
    kfd.destroy_queue(info.handle).unwrap();
    // Every buffer allocation and mapping of a PM4 queue (ring, pointers, EOP, context-save
    // area) failing in turn: a typed memory error, nothing left.
    for ioctl in [AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, AMDKFD_IOC_MAP_MEMORY_TO_GPU] {
        for nth in 1..=4 {
            kfd.platform().inject(IoctlFault {
                nr: Some(_IOC_NR(ioctl)),
                errno: Errno::ENOMEM,
                trigger: Trigger::Nth(nth),
            });
            let e = kfd.create_queue(&QueueDesc::new(node, QueueType::Compute, 4096)).unwrap_err();
            assert!(matches!(e, QueueError::Memory { .. }), "{e:?}");
            assert_eq!(e.kind(), ErrorKind::OutOfResources);
            assert_eq!(e.errno(), Some(Errno::ENOMEM));
            assert_eq!(kfd.queue_count(), 0);
            assert!(kfd.platform().queue_ids().is_empty());
            assert_eq!(kfd.memory_usage().objects, objects, "{nth}");
            assert_eq!(kfd.platform().buffer_count(), buffers, "{nth}");
        }
    }
    kfd.platform().clear_faults();
    let info = kfd.create_queue(&QueueDesc::new(node, QueueType::Compute, 4096)).unwrap();
    kfd.destroy_queue(info.handle).unwrap();
    assert_eq!(kfd.platform().buffer_count(), buffers);
}

#[test]
fn destroy_failure_keeps_the_queue() {
    let kfd = open();
    let node = gpu_nodes(&kfd)[0];
    let info = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).unwrap();
    arm(&kfd, AMDKFD_IOC_DESTROY_QUEUE, Errno::EBUSY);
    let e = kfd.destroy_queue(info.handle).unwrap_err();
    ioctl_error(&e, "DESTROY_QUEUE", Errno::EBUSY);
    assert_eq!(e.kind(), ErrorKind::Busy);
    assert_eq!(kfd.queue_info(info.handle).unwrap(), info, "still there, unchanged");
    assert_eq!(kfd.platform().queue_ids(), vec![info.queue_id]);
    assert!(kfd.aql_queue(info.handle).is_ok());
    kfd.destroy_queue(info.handle).unwrap();
    assert!(kfd.platform().queue_ids().is_empty());
}

#[test]
fn update_cu_mask_gws_wave_state_and_trap_failures_change_nothing() {
    let kfd = open();
    let node = gpu_nodes(&kfd)[0];
    let info = kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).unwrap();
    let sim = kfd.platform();

    arm(&kfd, AMDKFD_IOC_UPDATE_QUEUE, Errno::EIO);
    let e = kfd.update_queue(info.handle, 0, QueuePriority::Low, RingUpdate::Disable).unwrap_err();
    ioctl_error(&e, "UPDATE_QUEUE", Errno::EIO);
    assert_eq!(kfd.queue_info(info.handle).unwrap(), info);
    assert!(sim.queue_state(info.queue_id).unwrap().active);
    kfd.update_queue(info.handle, 0, QueuePriority::Low, RingUpdate::Disable).unwrap();
    assert!(!sim.queue_state(info.queue_id).unwrap().active);

    arm(&kfd, AMDKFD_IOC_SET_CU_MASK, Errno::ENOMEM);
    let e = kfd.set_queue_cu_mask(info.handle, 32, &[3]).unwrap_err();
    ioctl_error(&e, "SET_CU_MASK", Errno::ENOMEM);
    assert_eq!(kfd.queue_info(info.handle).unwrap().cu_mask_bits, 0);
    assert_eq!(sim.queue_cu_mask(info.queue_id), None);
    kfd.set_queue_cu_mask(info.handle, 32, &[3]).unwrap();
    assert_eq!(sim.queue_cu_mask(info.queue_id), Some(vec![3]));

    arm(&kfd, AMDKFD_IOC_ALLOC_QUEUE_GWS, Errno::ENODEV);
    let e = kfd.alloc_queue_gws(info.handle, 1).unwrap_err();
    ioctl_error(&e, "ALLOC_QUEUE_GWS", Errno::ENODEV);
    assert_eq!(kfd.queue_info(info.handle).unwrap().gws, None);
    assert_eq!(kfd.alloc_queue_gws(info.handle, 1), Ok(0));

    arm(&kfd, AMDKFD_IOC_GET_QUEUE_WAVE_STATE, Errno::EFAULT);
    let e = kfd.queue_wave_state(info.handle).unwrap_err();
    ioctl_error(&e, "GET_QUEUE_WAVE_STATE", Errno::EFAULT);
    assert!(kfd.queue_wave_state(info.handle).is_ok());

    arm(&kfd, AMDKFD_IOC_SET_TRAP_HANDLER, Errno::EINVAL);
    let e = kfd.set_trap_handler(node, 0x1000, 0x2000).unwrap_err();
    ioctl_error(&e, "SET_TRAP_HANDLER", Errno::EINVAL);
    assert_eq!(sim.trap_handler(info.gpu_id), None);
    kfd.set_trap_handler(node, 0x1000, 0x2000).unwrap();
    assert_eq!(sim.trap_handler(info.gpu_id), Some((0x1000, 0x2000)));

    kfd.destroy_queue(info.handle).unwrap();
    assert_eq!(sim.injected_faults(), 5);
}

#[test]
fn random_faults_never_leak() {
    let kfd = open();
    let node = gpu_nodes(&kfd)[0];
    let warm = kfd.create_queue(&QueueDesc::new(node, QueueType::Sdma, 4096)).unwrap();
    kfd.destroy_queue(warm.handle).unwrap();
    let buffers = kfd.platform().buffer_count();
    // The queue ioctls and buffer allocation fail at random (freeing never does: a buffer
    // the kernel refuses to free stays allocated, as in libhsakmt).
    for (seed, ioctl) in [
        AMDKFD_IOC_CREATE_QUEUE,
        AMDKFD_IOC_DESTROY_QUEUE,
        AMDKFD_IOC_UPDATE_QUEUE,
        AMDKFD_IOC_ALLOC_MEMORY_OF_GPU,
        AMDKFD_IOC_MAP_MEMORY_TO_GPU,
    ]
    .into_iter()
    .enumerate()
    {
        kfd.platform().inject(IoctlFault {
            nr: Some(_IOC_NR(ioctl)),
            errno: Errno::ENOMEM,
            trigger: Trigger::Probability { per_million: 150_000, seed: 42 + seed as u64 },
        });
    }
    let mut live = Vec::new();
    for i in 0..400u32 {
        let t = [QueueType::Compute, QueueType::ComputeAql, QueueType::Sdma][i as usize % 3];
        match i % 4 {
            0 | 1 => {
                if let Ok(info) = kfd.create_queue(&QueueDesc::new(node, t, 4096)) {
                    live.push(info.handle);
                }
            }
            2 => {
                if let Some(h) = live.last() {
                    let _ = kfd.update_queue(*h, i % 101, QueuePriority::Normal, RingUpdate::Keep);
                }
            }
            _ => {
                if let Some(h) = live.pop()
                    && kfd.destroy_queue(h).is_err()
                {
                    live.push(h);
                }
            }
        }
        assert_eq!(kfd.queue_count(), live.len());
        assert_eq!(kfd.platform().queue_ids().len(), live.len());
    }
    kfd.platform().clear_faults();
    assert!(kfd.platform().injected_faults() > 50);
    for h in live {
        kfd.destroy_queue(h).unwrap();
    }
    assert_eq!(kfd.platform().buffer_count(), buffers);
}
