//! [`VmMemory`] over mappings with permissions: every write path (bytes, dwords, a vector
//! store's lanes in one window and across windows, 32- and 64-bit atomics) refuses a
//! read-only mapping with a `ReadOnly` fault at the first address it would write, reads are
//! always allowed, an instruction fetch needs an executable mapping, and an address nothing
//! maps is `NotPresent` whatever the access.

use hsakmt_core::error::Errno;
use hsakmt_core::platform::SharedMemory;
use hsakmt_hostmem::HostMapping;

use super::super::limits::LANES;
use super::super::memory::{AtomicOp, FaultCause, MemFault, WaveMemory};
use super::super::vm_memory::VmMemory;
use crate::gpu::vm::{Access, GpuVm, MemRange, Pin};

/// One 16 KiB mapping with the given permissions.
#[derive(Debug)]
struct OneMapping {
    memory: HostMapping,
    access: Access,
}

impl OneMapping {
    fn new(access: Access) -> Self {
        let addr = hsakmt_hostmem::reserve(None, 16 << 10, 4096).unwrap();
        OneMapping { memory: hsakmt_hostmem::map_anonymous(addr, 16 << 10).unwrap(), access }
    }
}

impl GpuVm for OneMapping {
    fn resolve(&self, _gpu_id: u32, va: u64, len: u64) -> Option<MemRange> {
        let off = va.checked_sub(self.memory.addr())?;
        MemRange::new(self.memory.clone(), usize::try_from(off).ok()?, usize::try_from(len).ok()?)
            .map(|r| r.with_access(self.access))
    }
    fn queue_buffer_get(&self, _gpu_id: u32, _va: u64, _expected: u64) -> Result<Pin, Errno> {
        Err(Errno::EINVAL)
    }
    fn queue_buffer_put(&self, _pin: Pin) {}
}

const READ_ONLY: Access = Access { writable: false, executable: false };
const READ_EXECUTE: Access = Access { writable: false, executable: true };
const READ_WRITE: Access = Access { writable: true, executable: false };

#[test]
fn every_write_path_refuses_a_read_only_mapping() {
    let vm = OneMapping::new(READ_ONLY);
    let base = vm.memory.addr();
    vm.memory.u32s()[1].store(0x1234_5678, std::sync::atomic::Ordering::Relaxed);
    let mut m = VmMemory::new(&vm, 1);
    let ro = |address| Err::<(), _>(MemFault::read_only(address));
    // Reads: allowed.
    assert_eq!(m.load_u32(base + 4), Ok(0x1234_5678));
    let mut b = [0u8; 8];
    assert_eq!(m.read(base + 4090, &mut b), Ok(()), "across windows");
    let mut out = [0u32; LANES];
    let addrs: [u64; LANES] = std::array::from_fn(|l| base + 4 * l as u64);
    assert_eq!(m.load_lanes(&addrs, u64::MAX, &mut out), Ok(()));
    assert_eq!(out[1], 0x1234_5678);
    // Writes: refused at the first address written, nothing changed.
    assert_eq!(m.store_u32(base + 4, 7), ro(base + 4));
    assert_eq!(m.store_u32(base + 4097, 7), ro(base + 4097), "unaligned");
    assert_eq!(m.write(base + 4094, &[1, 2, 3, 4]), ro(base + 4094), "across windows");
    let values = [9u32; LANES];
    assert_eq!(m.store_lanes(&addrs, u64::MAX << 3, &values), ro(base + 12), "one window");
    let spread: [u64; LANES] = std::array::from_fn(|l| base + 1024 * l as u64 % (16 << 10));
    assert_eq!(m.store_lanes(&spread, 0b110, &values), ro(base + 1024), "several windows");
    assert_eq!(m.atomic32(base + 4, AtomicOp::Add, 1, 0).map(drop), ro(base + 4));
    assert_eq!(m.atomic64(base + 8192, AtomicOp::Swap, 1, 0).map(drop), ro(base + 8192));
    assert_eq!(m.load_u32(base + 4), Ok(0x1234_5678), "unchanged");
    assert!(
        vm.memory.u32s().iter().skip(2).all(|w| w.load(std::sync::atomic::Ordering::Relaxed) == 0)
    );
    // No execute access: a fetch faults, whatever the cached window.
    assert_eq!(m.fetch(base, &mut b), Err(MemFault::no_execute(base)));
    let f = m.fetch(base + 4094, &mut b).unwrap_err();
    assert_eq!((f.cause, f.write), (FaultCause::NoExecute, false));
    // Nothing mapped: NotPresent.
    assert_eq!(
        m.store_u32(base + (16 << 10), 1),
        Err(MemFault::not_present(base + (16 << 10), true))
    );
}

#[test]
fn permitted_accesses_go_through() {
    let vm = OneMapping::new(READ_EXECUTE);
    let base = vm.memory.addr();
    let mut m = VmMemory::new(&vm, 1);
    let mut b = [0u8; 12];
    assert_eq!(m.fetch(base + 4090, &mut b), Ok(()), "code may be fetched");
    assert_eq!(m.store_u32(base, 1).map_err(|f| f.cause), Err(FaultCause::ReadOnly));

    let vm = OneMapping::new(READ_WRITE);
    let base = vm.memory.addr();
    let mut m = VmMemory::new(&vm, 1);
    let addrs: [u64; LANES] = std::array::from_fn(|l| base + 4 * l as u64);
    let values: [u32; LANES] = std::array::from_fn(|l| l as u32);
    assert_eq!(m.store_lanes(&addrs, u64::MAX, &values), Ok(()));
    assert_eq!(m.atomic32(base + 8, AtomicOp::Add, 5, 0), Ok(2));
    assert_eq!(m.write(base + 4094, &[1, 2, 3, 4]), Ok(()));
    assert_eq!(m.load_u32(base + 8), Ok(7));
    assert_eq!(m.fetch(base, &mut b).map_err(|f| f.cause), Err(FaultCause::NoExecute));
}
