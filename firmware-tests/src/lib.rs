//! Scenario tests of `hsakmt-core` over `hsakmt-sim` (the tests live in `tests/`), and the
//! helpers they share.
#![forbid(unsafe_code)]

pub mod isa_support;
pub mod queue_support;

use hsakmt_core::config::DEFAULT_MEMORY_OBJECTS;
use hsakmt_core::device::{Error, Kfd, MemoryStorage};
use hsakmt_core::driver::{DriverId, DriverKind, KfdDriver};
use hsakmt_core::memory;
use hsakmt_core::topology::{READ_BUFFER, Topology};
use hsakmt_linux::{BoxedMemory, boxed_driver, boxed_kfd};
use hsakmt_sim::{Profile, SimMapping, SimPlatform};

/// A snapshot of `sim`'s topology.
///
/// # Panics
/// When the snapshot fails.
#[must_use]
pub fn snapshot(sim: &SimPlatform) -> Box<Topology> {
    let mut topo = Box::new(const { Topology::new() });
    let mut buf = vec![0u8; READ_BUFFER];
    topo.refresh(sim, sim, &mut buf).expect("snapshot");
    topo
}

/// A simulator over the embedded profile `name`.
///
/// # Panics
/// For an unknown profile.
#[must_use]
pub fn sim(name: &str) -> SimPlatform {
    SimPlatform::builder().profile(Profile::embedded(name).expect("embedded profile")).build()
}

/// The device facade the scenarios use: the simulator, with the facade's tables (memory
/// manager and topology snapshot) on the heap, so any thread's stack will do.
pub type SimKfd = Kfd<SimPlatform, BoxedMemory>;

/// The KFD driver the scenarios use, over [`SimKfd`].
pub type SimDriver = KfdDriver<SimPlatform, BoxedMemory>;

/// A boxed, closed device facade over `sim`, with room for [`DEFAULT_MEMORY_OBJECTS`] memory
/// objects (as `Kfd::new`).
#[must_use]
pub fn device(sim: SimPlatform) -> Box<SimKfd> {
    boxed_kfd(sim, DEFAULT_MEMORY_OBJECTS)
}

/// A boxed KFD driver of `kind` over `sim` (driver id 0), with room for
/// [`DEFAULT_MEMORY_OBJECTS`] memory objects.
#[must_use]
pub fn driver(kind: DriverKind, sim: SimPlatform) -> Box<SimDriver> {
    boxed_driver(kind, DriverId(0), sim, DEFAULT_MEMORY_OBJECTS)
}

/// A boxed device facade over `sim`, already opened.
///
/// # Panics
/// When the open fails.
#[must_use]
pub fn opened(sim: SimPlatform) -> Box<SimKfd> {
    let kfd = device(sim);
    kfd.open().expect("open the simulated device");
    kfd
}

/// The first GPU node of an open device (user node id), and its gpu_id.
///
/// # Panics
/// When the device has no GPU.
#[must_use]
pub fn first_gpu<S: MemoryStorage<SimMapping>>(kfd: &Kfd<SimPlatform, S>) -> (u32, u32) {
    let node = kfd.gpu_nodes().expect("open").first().expect("a GPU");
    let gpu_id = kfd
        .with_topology(|t| t.node_by_user_id(node).and_then(|v| v.node().gpu_id()))
        .expect("open")
        .expect("gpu_id");
    (node, gpu_id)
}

/// The bookkeeping error inside a device error.
///
/// # Panics
/// When `e` is another kind of error.
#[must_use]
pub fn memory_error(e: &Error) -> memory::Error {
    match e {
        Error::Memory(m) => *m,
        other => panic!("expected a memory error, got {other:?}"),
    }
}

/// The ioctl numbers the memory scenarios count.
pub mod nr {
    use hsakmt_core::uapi::*;
    /// `ALLOC_MEMORY_OF_GPU`
    pub const ALLOC: u32 = _IOC_NR(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU);
    /// `FREE_MEMORY_OF_GPU`
    pub const FREE: u32 = _IOC_NR(AMDKFD_IOC_FREE_MEMORY_OF_GPU);
    /// `MAP_MEMORY_TO_GPU`
    pub const MAP: u32 = _IOC_NR(AMDKFD_IOC_MAP_MEMORY_TO_GPU);
    /// `UNMAP_MEMORY_FROM_GPU`
    pub const UNMAP: u32 = _IOC_NR(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU);
    /// `EXPORT_DMABUF`
    pub const EXPORT: u32 = _IOC_NR(AMDKFD_IOC_EXPORT_DMABUF);
    /// `IMPORT_DMABUF`
    pub const IMPORT: u32 = _IOC_NR(AMDKFD_IOC_IMPORT_DMABUF);
    /// `GET_DMABUF_INFO`
    pub const DMABUF_INFO: u32 = _IOC_NR(AMDKFD_IOC_GET_DMABUF_INFO);
    /// `AVAILABLE_MEMORY`
    pub const AVAILABLE: u32 = _IOC_NR(AMDKFD_IOC_AVAILABLE_MEMORY);
    /// `SVM`
    pub const SVM: u32 = _IOC_NR(AMDKFD_IOC_SVM);
    /// `SET_XNACK_MODE`
    pub const XNACK: u32 = _IOC_NR(AMDKFD_IOC_SET_XNACK_MODE);
    /// `SET_SCRATCH_BACKING_VA`
    pub const SCRATCH: u32 = _IOC_NR(AMDKFD_IOC_SET_SCRATCH_BACKING_VA);
    /// `ACQUIRE_VM`
    pub const ACQUIRE_VM: u32 = _IOC_NR(AMDKFD_IOC_ACQUIRE_VM);
    /// `SET_MEMORY_POLICY`
    pub const MEMORY_POLICY: u32 = _IOC_NR(AMDKFD_IOC_SET_MEMORY_POLICY);
    /// `GET_PROCESS_APERTURES_NEW`
    pub const APERTURES: u32 = _IOC_NR(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW);
}

/// Every `key value` line of a sysfs attribute file, as text pairs.
#[must_use]
pub fn key_values(bytes: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().to_string()))
        })
        .collect()
}
