//! Opening and closing the device: reference counting, version checks, and errors a person can
//! act on.

use firmware_tests::device;
use hsakmt_core::device::{Error, Opened};
use hsakmt_core::error::{Errno, Error as _, ErrorKind};
use hsakmt_core::platform::OpenError;
use hsakmt_core::uapi::{_IOC_NR, AMDKFD_IOC_GET_VERSION, KfdVersion};
use hsakmt_sim::{DeviceState, IoctlFault, SimPlatform, Trigger};

const GET_VERSION: u32 = _IOC_NR(AMDKFD_IOC_GET_VERSION);

#[test]
fn open_is_reference_counted() {
    let kfd = device(SimPlatform::new());
    assert_eq!(kfd.version(), Err(Error::NotOpened));
    assert_eq!(kfd.open(), Ok(Opened::First));
    assert_eq!(kfd.open(), Ok(Opened::Again { count: 2 }));
    assert_eq!(kfd.open_count(), 2);
    assert_eq!(kfd.version(), Ok(KfdVersion::new(1, 23)));
    assert_eq!(kfd.with_topology(|t| t.gpu_count()), Ok(32));
    kfd.close().unwrap();
    assert_eq!(kfd.version(), Ok(KfdVersion::new(1, 23)), "one open left");
    kfd.close().unwrap();
    assert_eq!(kfd.version(), Err(Error::NotOpened));
    assert_eq!(kfd.close(), Err(Error::NotOpened), "unbalanced close is an error");
    // Only the first open reached the device.
    assert_eq!(kfd.platform().device_opens(), 1);
    assert_eq!(kfd.platform().ioctl_calls(GET_VERSION), 1);
    // And it can be opened again.
    assert_eq!(kfd.open(), Ok(Opened::First));
    assert_eq!(kfd.platform().device_opens(), 2);
}

#[test]
fn missing_device_says_what_to_do() {
    let kfd = device(SimPlatform::builder().device(DeviceState::Absent).build());
    let err = kfd.open().unwrap_err();
    assert_eq!(err, Error::Open(OpenError::NotPresent));
    assert_eq!(err.kind(), ErrorKind::NoDevice);
    assert!(err.to_string().contains("amdgpu"), "{err}");
    assert_eq!(kfd.open_count(), 0);
}

#[test]
fn permission_denied_names_the_group() {
    let state = DeviceState::PermissionDenied { group: "render".into() };
    let kfd = device(SimPlatform::builder().device(state).build());
    let err = kfd.open().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied);
    let text = err.to_string();
    assert!(text.contains("'render'") && text.contains("usermod -aG render"), "{text}");
}

#[test]
fn wrong_major_version_is_refused_and_leaves_the_device_closed() {
    let kfd = device(SimPlatform::builder().kfd_version(2, 0).build());
    let err = kfd.open().unwrap_err();
    assert_eq!(err, Error::VersionMismatch { kernel: KfdVersion::new(2, 0) });
    assert_eq!(err.kind(), ErrorKind::DriverMismatch);
    assert_eq!(kfd.version(), Err(Error::NotOpened));
}

#[test]
fn old_minor_versions_gate_features() {
    let kfd = device(SimPlatform::builder().kfd_version(1, 11).build());
    kfd.open().unwrap();
    assert_eq!(kfd.require_minor("event age", 14).unwrap_err().kind(), ErrorKind::NotSupported);
    assert!(kfd.require_minor("SVM", 5).is_ok());
}

#[test]
fn interrupted_ioctls_are_retried_and_other_errors_reported() {
    let sim = SimPlatform::new();
    let fault = IoctlFault { nr: Some(GET_VERSION), errno: Errno::EINTR, trigger: Trigger::Nth(1) };
    sim.inject(fault);
    let kfd = device(sim);
    assert_eq!(kfd.open(), Ok(Opened::First));
    assert_eq!(kfd.platform().ioctl_calls(GET_VERSION), 2, "EINTR retried once");
    kfd.close().unwrap();

    kfd.platform().inject(IoctlFault {
        nr: Some(GET_VERSION),
        errno: Errno::ENOTTY,
        trigger: Trigger::Nth(1),
    });
    assert_eq!(kfd.open(), Err(Error::Open(OpenError::NotKfd)));
    kfd.platform().inject(IoctlFault {
        nr: Some(GET_VERSION),
        errno: Errno::EIO,
        trigger: Trigger::Nth(1),
    });
    assert_eq!(kfd.open(), Err(Error::Ioctl { name: "GET_VERSION", errno: Errno::EIO }));
    // Once the fault is gone the same operation succeeds.
    assert_eq!(kfd.open(), Ok(Opened::First));
}

#[test]
fn hidden_gpus_are_reported_not_fatal() {
    let kfd = device(SimPlatform::builder().hide_node(5).build());
    kfd.open().unwrap();
    let (hidden, gpus) = kfd
        .with_topology(|t| (t.node_by_sysfs_id(5).map(|n| n.is_accessible()), t.gpu_count()))
        .unwrap();
    assert_eq!(hidden, Some(false));
    assert_eq!(gpus, 31, "a hidden node's kind cannot be known");
    assert_eq!(kfd.platform().gpu_ids().len(), 31, "the kernel exposes 31 usable GPUs");
}

/// Dropping an open device closes it — queues and events destroyed, the kernel's state ended —
/// and gives its address reservations back to the process; nothing outlives the facade.
#[test]
fn dropping_an_open_device_closes_it_and_returns_its_address_space() {
    use hsakmt_core::device::queue_manager::{QueueDesc, QueueType};
    use hsakmt_core::device::{EventDescriptor, MapNodes};
    use hsakmt_core::memory::MemFlags;
    use hsakmt_sim::SimAccounting;
    let mapped = |addr: u64| {
        std::fs::read_to_string("/proc/self/maps").unwrap().lines().any(|l| {
            let r = l.split_whitespace().next().unwrap();
            let (a, b) = r.split_once('-').unwrap();
            (u64::from_str_radix(a, 16).unwrap()..u64::from_str_radix(b, 16).unwrap())
                .contains(&addr)
        })
    };
    let sim = SimPlatform::new();
    let kfd = device(sim.clone());
    kfd.open().unwrap();
    assert_eq!(kfd.open(), Ok(Opened::Again { count: 2 }));
    let node = kfd.gpu_nodes().unwrap().first().unwrap();
    let flags = MemFlags::NON_PAGED | MemFlags::HOST_ACCESS;
    let a = kfd.alloc_memory(0, 8192, flags).unwrap();
    kfd.map_memory_to_gpu(a.addr, MapNodes::All).unwrap();
    let addr = a.addr;
    drop(a);
    kfd.create_queue(&QueueDesc::new(node, QueueType::ComputeAql, 4096)).unwrap();
    kfd.create_event(&EventDescriptor::signal()).unwrap();
    assert!(mapped(addr));
    drop(kfd);
    assert_eq!(sim.accounting(), SimAccounting::default(), "the kernel's state ended");
    assert!(!mapped(addr), "the reservation holding the buffer was given back");
}
