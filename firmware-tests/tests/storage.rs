//! Where the device facade keeps its large tables (the memory manager's arrays, the topology
//! snapshot, the queue and event tables): with heap storage the facade and the driver are built,
//! opened and used on a thread with the default stack; a `static` [`TopologyCell`] serves as the
//! snapshot's storage.

use std::mem::size_of;

use firmware_tests::{SimDriver, SimKfd, device, driver};
use hsakmt_core::device::memory_manager::{MemoryPayload, MemoryStorage, MemoryTables};
use hsakmt_core::device::{HandleTables, Kfd, MapNodes};
use hsakmt_core::driver::{Driver, DriverKind};
use hsakmt_core::memory::MemFlags;
use hsakmt_core::memory::objects::{IndexNode, ObjectSlot};
use hsakmt_core::memory::va::VaSlot;
use hsakmt_core::topology::{Topology, TopologyCell};
use hsakmt_sim::SimPlatform;

#[test]
fn heap_backed_facade_and_driver_run_on_a_default_stack() {
    // `thread::spawn` gives the platform's default stack (2 MiB unless `RUST_MIN_STACK` says
    // otherwise); debug builds need about 0.5 MiB to build the facade and 0.75 MiB the driver.
    std::thread::spawn(|| {
        let kfd = device(SimPlatform::new());
        kfd.open().unwrap();
        assert!(kfd.with_topology(Topology::node_count).unwrap() > 1);
        let a = kfd.alloc_memory(0, 4096, MemFlags::NON_PAGED | MemFlags::HOST_ACCESS).unwrap();
        kfd.map_memory_to_gpu(a.addr, MapNodes::All).unwrap();
        kfd.free(a).unwrap();
        kfd.close().unwrap();

        let d = driver(DriverKind::Sim, SimPlatform::new());
        d.init().unwrap();
        assert!(d.agent_count() > 1);
        d.shutdown().unwrap();
    })
    .join()
    .unwrap();
}

#[test]
fn with_heap_storage_the_facade_and_the_driver_are_small() {
    assert!(size_of::<SimKfd>() <= 64 << 10, "facade: {} bytes", size_of::<SimKfd>());
    // The driver was 262,136 bytes before the memory manager's scratch slices (2 KiB inline)
    // came; the default-stack test above is what matters.
    assert!(size_of::<SimDriver>() <= 264 << 10, "driver: {} bytes", size_of::<SimDriver>());
    // Everything inline (for a facade in a `static`): the tables are the bulk of it.
    assert!(size_of::<Kfd<SimPlatform>>() > 1 << 20);
}

/// Heap arrays, but the snapshot in a `static` cell.
struct StaticSnapshot;

impl<M: Send + Sync> MemoryStorage<M> for StaticSnapshot {
    type IndexNodes = Box<[IndexNode]>;
    type Slots = Box<[ObjectSlot<MemoryPayload<M>>]>;
    type VaSlots = Box<[VaSlot]>;
    type Topology = &'static mut Topology;
    type HandleTables = Box<HandleTables<M>>;
}

#[test]
fn a_static_cell_holds_the_facades_snapshot() {
    static SNAPSHOT: TopologyCell = TopologyCell::new();
    let topology = SNAPSHOT.take().expect("the cell's first take");
    assert!(SNAPSHOT.take().is_none(), "a cell gives its snapshot out once");
    let va = || vec![VaSlot::EMPTY; 256].into_boxed_slice();
    let tables: MemoryTables<_, StaticSnapshot> = MemoryTables {
        index: vec![IndexNode::EMPTY; 64].into_boxed_slice(),
        slots: (0..64).map(|_| ObjectSlot::new()).collect(),
        default_va: va(),
        coherent_va: va(),
        handle_va: va(),
        topology,
        handle_tables: Box::new(const { HandleTables::new() }),
    };
    let kfd = Kfd::with_memory(SimPlatform::new(), tables);
    kfd.open().unwrap();
    let nodes = kfd.with_topology(Topology::node_count).unwrap();
    assert_eq!(nodes, firmware_tests::snapshot(kfd.platform()).node_count());
    kfd.close().unwrap();
}
