//! What the library knows about an address: `hsaKmtQueryPointerInfo` and
//! `hsaKmtSetMemoryUserData` (libhsakmt `hsakmt_fmm_get_mem_info`,
//! `hsakmt_fmm_set_mem_user_data`).

use crate::memory::objects::{MemoryHandle, MemoryKind, MemoryObject};
use crate::memory::{self, MemFlags, NodeSet, PAGE_SIZE};
use crate::platform::Platform;

use super::state::{MemoryPayload, MemoryStorage};
use super::{Error, Kfd};

/// `HSA_POINTER_TYPE`: what kind of memory an address belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PointerKind {
    /// Allocated by the library (`HSA_POINTER_ALLOCATED`).
    Allocated,
    /// Application memory registered for GPU access (`HSA_POINTER_REGISTERED_USER`).
    RegisteredUser,
    /// An imported dma-buf / graphics buffer (`HSA_POINTER_REGISTERED_GRAPHICS`).
    RegisteredGraphics,
    /// An address range without memory (`HSA_POINTER_RESERVED_ADDR`, `OnlyAddress`).
    ReservedAddress,
}

/// `HsaPointerInfo`, with node sets instead of heap arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PointerInfo {
    /// What kind of memory.
    pub kind: PointerKind,
    /// The owning node.
    pub node: u32,
    /// The allocation flags as requested (libhsakmt records `HsaMemFlags`, not ioctl flags).
    pub flags: MemFlags,
    /// The CPU address: the registered user pointer, or the start of memory the CPU can access;
    /// `None` for memory without a CPU mapping.
    pub cpu_address: Option<u64>,
    /// The GPU address (for registered user memory, of the user pointer itself).
    pub gpu_address: u64,
    /// Size in bytes (for registered user memory, the registered size).
    pub size: u64,
    /// Nodes the memory is registered to.
    pub registered_nodes: NodeSet,
    /// Nodes the memory is mapped on.
    pub mapped_nodes: NodeSet,
    /// The value set with [`Kfd::set_user_data`].
    pub user_data: u64,
    /// The library's name of the object.
    pub handle: MemoryHandle,
}

fn info_of<M>(handle: MemoryHandle, o: &MemoryObject<MemoryPayload<M>>) -> PointerInfo {
    let kind = match o.kind {
        MemoryKind::RegisteredUser => PointerKind::RegisteredUser,
        MemoryKind::ImportedDmaBuf => PointerKind::RegisteredGraphics,
        MemoryKind::ReservedAddress => PointerKind::ReservedAddress,
        _ => PointerKind::Allocated,
    };
    let mut info = PointerInfo {
        kind,
        node: o.node,
        flags: o.flags,
        cpu_address: None,
        gpu_address: o.start(),
        size: o.size(),
        registered_nodes: o.registered_nodes,
        mapped_nodes: o.mapped_nodes,
        user_data: o.user_data,
        handle,
    };
    if let Some(u) = o.userptr() {
        info.cpu_address = Some(u.addr);
        info.size = u.size;
        info.gpu_address += u.addr & (PAGE_SIZE - 1);
    } else if o.payload.mapping.is_some() || o.payload.view_out {
        info.cpu_address = Some(o.start());
    }
    info
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// What the library knows about the memory containing `addr` (`hsaKmtQueryPointerInfo`):
    /// any address inside an allocation (its GPU range) or inside registered user memory (its
    /// CPU range) resolves to that object.
    ///
    /// # Errors
    /// [`memory::Error::UnknownAddress`] (libhsakmt's `HSA_POINTER_UNKNOWN`);
    /// [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn pointer_info(&self, addr: u64) -> Result<PointerInfo, Error> {
        self.check_open()?;
        let st = self.memory.lock();
        let h = st.find_containing(addr).ok_or(memory::Error::UnknownAddress { addr })?;
        Ok(info_of(h, st.objects.get(h)?))
    }

    /// As [`Kfd::pointer_info`] for the object `handle` names.
    ///
    /// # Errors
    /// [`memory::Error::StaleHandle`] / [`memory::Error::InvalidHandle`] when it names no live
    /// object; [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn handle_info(&self, handle: MemoryHandle) -> Result<PointerInfo, Error> {
        self.check_open()?;
        let st = self.memory.lock();
        Ok(info_of(handle, st.objects.get(handle)?))
    }

    /// Attaches an opaque value to the memory starting at `addr` (or registered at CPU address
    /// `addr`), returned by [`Kfd::pointer_info`] (`hsaKmtSetMemoryUserData`).
    ///
    /// # Errors
    /// [`memory::Error::UnknownAddress`]; [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn set_user_data(&self, addr: u64, user_data: u64) -> Result<(), Error> {
        self.check_open()?;
        let mut st = self.memory.lock();
        let h = st.find_named(addr).ok_or(memory::Error::UnknownAddress { addr })?;
        st.objects.get_mut(h)?.user_data = user_data;
        Ok(())
    }
}
