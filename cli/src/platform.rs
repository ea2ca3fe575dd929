//! The platform the command-line tool runs the library over, chosen at run time.
//!
//! The library is generic over its [`Platform`](hsakmt_core::platform::Platform): a program
//! that links one platform (the appliance's control loop over `/dev/kfd`) gets the facade and
//! the driver layer compiled for it alone, with every platform call a direct one. `hsakmt`
//! reaches several — the real device, the simulator, a counting simulator — and picks among
//! them while it runs. Instantiating the facade, the driver layer and the topology reader once
//! per platform put two to four copies of each into the static binary; over [`AnyPlatform`]
//! they are compiled once, and each platform call pays a `match` on the variant, which is
//! nothing beside the system call or the simulated kernel behind it. The mappings are
//! [`AnyMapping`] likewise; every method of both traits is forwarded, the doorbell writes
//! included, so each platform keeps its own (the MMIO store of `hsakmt-linux`, the
//! simulator's wake-up).
//!
//! One exception: the memory bookkeeping rows of `hsakmt bench`, which time the library's own
//! work per allocation (tens of nanoseconds), run over their concrete platform, as a program
//! linking one platform gets the library; through the enum the same pair measured about 35 ns
//! more (lost inlining across the dispatch).

use hsakmt_core::error::Errno;
use hsakmt_core::platform::{
    Access, Host, Ioctl, KfdDevice, OpenError, SharedMemory, Sysfs, SysfsDir, SysfsFile,
};
use hsakmt_linux::{LinuxMapping, LinuxPlatform};
use hsakmt_sim::{SimMapping, SimPlatform};
use std::sync::atomic::{AtomicU32, AtomicU64};

use crate::bench::memory::Counting;

/// A platform of the command-line tool (see the module docs).
pub(crate) enum AnyPlatform {
    /// `/dev/kfd` and the host's sysfs (or a sysfs tree on disk); boxed, as it holds its
    /// path buffers.
    Linux(Box<LinuxPlatform>),
    /// The simulator.
    Sim(SimPlatform),
    /// The simulator with every platform call counted by kind (`hsakmt bench memory`).
    Counted(Counting),
}

/// A CPU mapping of an [`AnyPlatform`].
#[derive(Clone)]
pub(crate) enum AnyMapping {
    /// Of [`AnyPlatform::Linux`].
    Linux(LinuxMapping),
    /// Of [`AnyPlatform::Sim`] and [`AnyPlatform::Counted`].
    Sim(SimMapping),
}

/// `$body` with `$p` bound to the platform inside `$self`, whichever it is.
macro_rules! each_platform {
    ($self:expr, $p:ident => $body:expr) => {
        match $self {
            AnyPlatform::Linux($p) => $body,
            AnyPlatform::Sim($p) => $body,
            AnyPlatform::Counted($p) => $body,
        }
    };
}

/// `$body` with `$m` bound to the mapping inside `$self`, whichever it is.
macro_rules! each_mapping {
    ($self:expr, $m:ident => $body:expr) => {
        match $self {
            AnyMapping::Linux($m) => $body,
            AnyMapping::Sim($m) => $body,
        }
    };
}

impl AnyPlatform {
    /// The simulator inside, when the platform is one.
    pub(crate) fn sim(&self) -> Option<&SimPlatform> {
        match self {
            AnyPlatform::Sim(p) => Some(p),
            AnyPlatform::Counted(p) => Some(p.inner()),
            AnyPlatform::Linux(_) => None,
        }
    }
}

/// Why a queue of the simulator stopped, when one did: the exception, the packet and the
/// wave's fault.
pub(crate) fn queue_fault_text(sim: &SimPlatform) -> Option<String> {
    sim.queue_ids().into_iter().find_map(|q| sim.queue_fault(q)).map(|f| {
        let wave = f.wave.map(|w| format!(": {w}")).unwrap_or_default();
        format!("exception {} at packet {}{wave}", f.exception, f.packet)
    })
}

impl From<LinuxPlatform> for AnyPlatform {
    fn from(p: LinuxPlatform) -> Self {
        AnyPlatform::Linux(Box::new(p))
    }
}

impl From<SimPlatform> for AnyPlatform {
    fn from(p: SimPlatform) -> Self {
        AnyPlatform::Sim(p)
    }
}

impl Sysfs for AnyPlatform {
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
        each_platform!(self, p => p.read_file(file, buf))
    }
    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
        each_platform!(self, p => p.list_dir(dir, out))
    }
    fn walk_done(&self) {
        each_platform!(self, p => p.walk_done());
    }
}

impl Host for AnyPlatform {
    fn now_ns(&self) -> u64 {
        each_platform!(self, p => p.now_ns())
    }
    fn process_id(&self) -> u32 {
        each_platform!(self, p => p.process_id())
    }
    fn env_var(&self, name: &str, buf: &mut [u8]) -> Option<usize> {
        each_platform!(self, p => p.env_var(name, buf))
    }
}

impl KfdDevice for AnyPlatform {
    type Mapping = AnyMapping;

    fn open(&self) -> Result<(), OpenError> {
        each_platform!(self, p => p.open())
    }
    fn close(&self) {
        each_platform!(self, p => p.close());
    }
    fn ioctl(&self, request: &mut Ioctl<'_>) -> Result<(), Errno> {
        each_platform!(self, p => p.ioctl(request))
    }
    fn open_render_node(&self, minor: u32) -> Result<u32, Errno> {
        each_platform!(self, p => p.open_render_node(minor))
    }
    fn close_fd(&self, fd: u32) {
        each_platform!(self, p => p.close_fd(fd));
    }
    fn poll_fd(&self, fd: u32, timeout_ms: i32) -> Result<bool, Errno> {
        each_platform!(self, p => p.poll_fd(fd, timeout_ms))
    }
    fn read_fd(&self, fd: u32, buf: &mut [u8]) -> Result<usize, Errno> {
        each_platform!(self, p => p.read_fd(fd, buf))
    }
    fn write_fd(&self, fd: u32, data: &[u8]) -> Result<usize, Errno> {
        each_platform!(self, p => p.write_fd(fd, data))
    }
    fn create_pipe(&self) -> Result<(u32, u32), Errno> {
        each_platform!(self, p => p.create_pipe())
    }
    fn reserve_va(&self, hint: Option<u64>, size: u64, align: u64) -> Result<u64, Errno> {
        each_platform!(self, p => p.reserve_va(hint, size, align))
    }
    fn release_va(&self, addr: u64, size: u64) -> Result<(), Errno> {
        each_platform!(self, p => p.release_va(addr, size))
    }
    fn map_kfd(
        &self,
        offset: u64,
        size: u64,
        addr: Option<u64>,
        access: Access,
    ) -> Result<AnyMapping, Errno> {
        match self {
            AnyPlatform::Linux(p) => p.map_kfd(offset, size, addr, access).map(AnyMapping::Linux),
            AnyPlatform::Sim(p) => p.map_kfd(offset, size, addr, access).map(AnyMapping::Sim),
            AnyPlatform::Counted(p) => p.map_kfd(offset, size, addr, access).map(AnyMapping::Sim),
        }
    }
    fn map_buffer(
        &self,
        render_fd: u32,
        offset: u64,
        size: u64,
        addr: u64,
        access: Access,
    ) -> Result<AnyMapping, Errno> {
        match self {
            AnyPlatform::Linux(p) => {
                p.map_buffer(render_fd, offset, size, addr, access).map(AnyMapping::Linux)
            }
            AnyPlatform::Sim(p) => {
                p.map_buffer(render_fd, offset, size, addr, access).map(AnyMapping::Sim)
            }
            AnyPlatform::Counted(p) => {
                p.map_buffer(render_fd, offset, size, addr, access).map(AnyMapping::Sim)
            }
        }
    }
    fn map_anonymous(&self, addr: u64, size: u64) -> Result<AnyMapping, Errno> {
        match self {
            AnyPlatform::Linux(p) => p.map_anonymous(addr, size).map(AnyMapping::Linux),
            AnyPlatform::Sim(p) => p.map_anonymous(addr, size).map(AnyMapping::Sim),
            AnyPlatform::Counted(p) => p.map_anonymous(addr, size).map(AnyMapping::Sim),
        }
    }
}

impl SharedMemory for AnyMapping {
    fn addr(&self) -> u64 {
        each_mapping!(self, m => m.addr())
    }
    fn len(&self) -> usize {
        each_mapping!(self, m => m.len())
    }
    fn is_empty(&self) -> bool {
        each_mapping!(self, m => m.is_empty())
    }
    fn u32s(&self) -> &[AtomicU32] {
        each_mapping!(self, m => m.u32s())
    }
    fn u64s(&self) -> &[AtomicU64] {
        each_mapping!(self, m => m.u64s())
    }
    fn write(&self, offset: usize, src: &[u8]) -> Result<(), Errno> {
        each_mapping!(self, m => m.write(offset, src))
    }
    fn read(&self, offset: usize, dst: &mut [u8]) -> Result<(), Errno> {
        each_mapping!(self, m => m.read(offset, dst))
    }
    fn ring_doorbell64(&self, offset: usize, value: u64) {
        each_mapping!(self, m => m.ring_doorbell64(offset, value));
    }
    fn ring_doorbell32(&self, offset: usize, value: u32) {
        each_mapping!(self, m => m.ring_doorbell32(offset, value));
    }
    fn is_shared(&self) -> bool {
        each_mapping!(self, m => m.is_shared())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_platform_call_reaches_the_platform_inside() {
        let sim = SimPlatform::new();
        let any = AnyPlatform::from(sim.clone());
        assert!(any.sim().is_some());
        let before = sim.device_calls();
        let addr = any.reserve_va(None, 1 << 21, 1 << 21).unwrap();
        let mapping = any.map_anonymous(addr, 4096).unwrap();
        assert_eq!((mapping.addr(), mapping.len()), (addr, 4096));
        mapping.write(8, &[1, 2, 3]).unwrap();
        let mut back = [0u8; 3];
        mapping.read(8, &mut back).unwrap();
        assert_eq!(back, [1, 2, 3]);
        assert!(sim.device_calls() > before, "the simulator counted the calls");
        assert_eq!(any.process_id(), sim.process_id());
        let linux = AnyPlatform::from(LinuxPlatform::new());
        assert!(linux.sim().is_none());
    }
}
