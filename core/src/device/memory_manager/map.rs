//! Mapping memory on GPUs: `hsaKmtMapMemoryToGPU`, `hsaKmtMapMemoryToGPUNodes`,
//! `hsaKmtUnmapMemoryToGPU` (libhsakmt `_fmm_map_to_gpu`, `_fmm_unmap_from_gpu`; scratch
//! ranges are mapped in slices, see [`scratch`](super::scratch)).
//!
//! `MAP_MEMORY_TO_GPU` takes a list of gpu_ids and reports in `n_success` how many it mapped;
//! when a signal interrupts it, the same argument is issued again and the kernel resumes after
//! the devices already done (the library never resets `n_success` between retries). When it
//! fails outright, the devices it did map are unmapped again, so the object's mapped set stays
//! what the kernel has.

use crate::config::NODE_SET_CAPACITY;
use crate::memory::kfd_flags::{BufferKind, alloc_flags};
use crate::memory::objects::{KfdHandles, MemoryHandle, MemoryKind};
use crate::memory::{self, MemFlags, NodeSet, PAGE_SIZE};
use crate::platform::{Ioctl, Platform};
use crate::uapi::{
    kfd_ioctl_alloc_memory_of_gpu_args, kfd_ioctl_free_memory_of_gpu_args,
    kfd_ioctl_map_memory_to_gpu_args, kfd_ioctl_unmap_memory_from_gpu_args,
};

use super::scratch::SliceMap;
use super::state::{MemoryState, MemoryStorage};
use super::{Error, Kfd, MapNodes};

/// What a map call decided under the lock.
enum MapStep {
    /// Nothing to ask the kernel; the GPU address.
    Done(u64),
    /// Map a slice of a scratch range: create its VRAM buffer on its GPU.
    Scratch(SliceMap),
    /// Unmap `unmap`, then map `map`, for the buffers `handles`.
    Change { gpu_va: u64, handles: KfdHandles, map: NodeSet, unmap: NodeSet },
}

impl<M, S: MemoryStorage<M>> MemoryState<M, S> {
    /// The GPU nodes named by `nodes` (validated).
    fn requested_nodes(&self, nodes: MapNodes<'_>) -> Result<Option<NodeSet>, memory::Error> {
        match nodes {
            MapNodes::Default => Ok(None),
            MapNodes::All => Ok(Some(self.gpus)),
            MapNodes::Only(list) => {
                if list.is_empty() {
                    return Err(memory::Error::NoNodes);
                }
                let mut set = NodeSet::EMPTY;
                for &n in list {
                    self.gpu(n)?;
                    set.insert(n)?;
                }
                Ok(Some(set))
            }
        }
    }

    fn plan_map(
        &mut self,
        addr: u64,
        size: u64,
        nodes: MapNodes<'_>,
    ) -> Result<(MemoryHandle, MapStep), memory::Error> {
        let requested = self.requested_nodes(nodes)?;
        // Registered user memory is named by its CPU start and size when the caller gives one
        // (libhsakmt's `vm_find_object_by_userptr`): the same start registered with two sizes
        // is two registrations.
        let exact = (size != 0).then(|| self.objects.find_userptr(addr, size)).flatten();
        let named = exact.or_else(|| self.find_named(addr));
        if let Some(h) = self.scratch_named(named, addr) {
            let plan = self.plan_slice_map(h, addr, size)?;
            return Ok((h, plan.map_or(MapStep::Done(addr), MapStep::Scratch)));
        }
        let h = named.ok_or(memory::Error::UnknownAddress { addr })?;
        let (all, handle_window) = (self.gpus, self.is_handle_address(addr));
        let default_peers = {
            let o = self.objects.get(h)?;
            self.gpu(o.node).ok().map(|n| n.peers)
        };
        let o = self.objects.get_mut(h)?;
        let start = o.start();
        if o.payload.busy {
            return Err(memory::Error::Busy { addr: start });
        }
        if handle_window || o.kind == MemoryKind::ReservedAddress {
            return Err(memory::Error::NotMappable { addr: start });
        }
        if o.kfd_handles.is_empty() {
            return Err(memory::Error::NotMappable { addr: start });
        }
        let gpu_va = match o.userptr() {
            Some(u) => start.saturating_add(u.addr & (PAGE_SIZE - 1)),
            None => start,
        };
        // Registered user memory is mapped once, then reference counted (libhsakmt: "changing
        // mapping nodes is not allowed").
        if o.userptr().is_some() && o.mapping_count > 0 {
            o.add_mapping()?;
            return Ok((h, MapStep::Done(gpu_va)));
        }
        let explicit = requested.is_some();
        let target = match requested {
            Some(set) => {
                if !o.registered_nodes.is_empty() && !set.is_subset(&o.registered_nodes) {
                    return Err(memory::Error::NodesNotRegistered);
                }
                set
            }
            None if !o.registered_nodes.is_empty() => o.registered_nodes,
            None => match default_peers {
                Some(peers) if o.kind != MemoryKind::RegisteredUser => peers,
                _ => all,
            },
        };
        let map = target.difference(o.mapped_nodes);
        let unmap = if explicit { o.mapped_nodes.difference(target) } else { NodeSet::EMPTY };
        if map.is_empty() && unmap.is_empty() {
            o.mapping_count = o.mapping_count.max(1);
            return Ok((h, MapStep::Done(gpu_va)));
        }
        o.payload.busy = true;
        Ok((h, MapStep::Change { gpu_va, handles: o.kfd_handles, map, unmap }))
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// Maps memory on GPUs (`hsaKmtMapMemoryToGPU` / `hsaKmtMapMemoryToGPUNodes`); returns the
    /// GPU virtual address (for registered user memory, the GPU address of `addr`).
    ///
    /// `addr` is the start of an allocation, or the CPU address registered user memory was
    /// registered with. Registered user memory is mapped once and then reference counted.
    /// Mapping a slice of a scratch range (`addr` anywhere inside it) creates VRAM of its own
    /// on its GPU, as libhsakmt's `_fmm_map_to_gpu_scratch` does.
    ///
    /// # Errors
    /// [`memory::Error::UnknownAddress`] (including interior pointers and address 0);
    /// [`memory::Error::NotMappable`] for `OnlyAddress` and `NoAddress` memory;
    /// [`memory::Error::NoNodes`], [`memory::Error::UnknownNode`], [`memory::Error::NotAGpu`],
    /// [`memory::Error::NodesNotRegistered`] for a bad node list; [`memory::Error::Busy`];
    /// [`Error::Ioctl`] (the object's mappings are then unchanged); [`Error::NotOpened`] /
    /// [`Error::ForkedChild`].
    pub fn map_memory_to_gpu(&self, addr: u64, nodes: MapNodes<'_>) -> Result<u64, Error> {
        self.map_memory_to_gpu_sized(addr, 0, nodes)
    }

    /// As [`Kfd::map_memory_to_gpu`], with the size the caller names (`hsaKmtMapMemoryToGPU`
    /// takes one): user memory registered more than once at the same CPU address with
    /// different sizes is told apart by it, as libhsakmt does; 0 names what
    /// [`Kfd::map_memory_to_gpu`] names.
    ///
    /// # Errors
    /// As [`Kfd::map_memory_to_gpu`].
    pub fn map_memory_to_gpu_sized(
        &self,
        addr: u64,
        size: u64,
        nodes: MapNodes<'_>,
    ) -> Result<u64, Error> {
        self.check_open()?;
        let (h, step) = self.memory.lock().plan_map(addr, size, nodes)?;
        match step {
            MapStep::Done(va) => Ok(va),
            MapStep::Scratch(plan) => self.map_slice(h, plan),
            MapStep::Change { gpu_va, handles, map, unmap } => {
                let result = self
                    .unmap_object(h, handles, unmap)
                    .and_then(|()| self.map_object(h, handles, map));
                let mut st = self.memory.lock();
                if let Ok(o) = st.objects.get_mut(h) {
                    o.payload.busy = false;
                    if result.is_ok() {
                        o.mapping_count = 1;
                    }
                }
                result.map(|()| gpu_va)
            }
        }
    }

    /// Unmaps memory from every GPU it is mapped on (`hsaKmtUnmapMemoryToGPU`). Address 0 and
    /// memory that is not mapped succeed (as in libhsakmt); registered user memory mapped
    /// several times only drops a reference. Inside a scratch range, `addr` names the slice
    /// starting there, whose buffer is unmapped and freed (the range's start with no slice
    /// mapped succeeds).
    ///
    /// # Errors
    /// [`memory::Error::UnknownAddress`] (inside a scratch range: no slice starts at `addr`);
    /// [`memory::Error::Busy`]; [`Error::Ioctl`] (`EBUSY`
    /// while a queue uses the memory; devices already unmapped are recorded as such);
    /// [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn unmap_memory_from_gpu(&self, addr: u64) -> Result<(), Error> {
        self.check_open()?;
        if addr == 0 {
            return Ok(());
        }
        let (h, handles, mapped) = {
            let mut st = self.memory.lock();
            let named = st.find_named(addr);
            if let Some(h) = st.scratch_named(named, addr) {
                drop(st);
                return self.unmap_slice(h, addr);
            }
            let h = named.ok_or(memory::Error::UnknownAddress { addr })?;
            let o = st.objects.get_mut(h)?;
            if o.payload.busy {
                return Err(memory::Error::Busy { addr: o.start() }.into());
            }
            if o.userptr().is_some() && o.mapping_count > 1 {
                o.drop_mapping()?;
                return Ok(());
            }
            if o.mapped_nodes.is_empty() {
                return Ok(());
            }
            o.payload.busy = true;
            (h, o.kfd_handles, o.mapped_nodes)
        };
        let result = self.unmap_object(h, handles, mapped);
        let mut st = self.memory.lock();
        if let Ok(o) = st.objects.get_mut(h) {
            o.payload.busy = false;
            if result.is_ok() {
                o.mapping_count = 0;
            }
        }
        result
    }

    /// Maps every buffer of an object on `nodes` and records them as mapped; on failure unmaps
    /// what the kernel did map (recording whatever could not be undone). Leaves `busy` alone.
    pub(super) fn map_object(
        &self,
        h: MemoryHandle,
        handles: KfdHandles,
        nodes: NodeSet,
    ) -> Result<(), Error> {
        if nodes.is_empty() {
            return Ok(());
        }
        let mut ids = [0u32; NODE_SET_CAPACITY];
        let n = self.memory.lock().gpu_ids(nodes, &mut ids);
        let ids = ids.get(..n).unwrap_or(&[]);
        for (i, &handle) in handles.as_slice().iter().enumerate() {
            let mut args = kfd_ioctl_map_memory_to_gpu_args {
                handle,
                device_ids_array_ptr: 0,
                n_devices: 0,
                n_success: 0,
            };
            if let Err(e) =
                self.raw_ioctl(&mut Ioctl::MapMemoryToGpu { args: &mut args, devices: ids })
            {
                // Undo: earlier buffers on every device, this one on the devices it reached.
                let mut undone = true;
                for &earlier in handles.as_slice().iter().take(i) {
                    undone &= self.kfd_unmap(earlier, ids).is_ok();
                }
                let reached = ids.get(..args.n_success as usize).unwrap_or(&[]);
                if !reached.is_empty() {
                    undone &= self.kfd_unmap(handle, reached).is_ok();
                }
                if !undone {
                    // The kernel keeps some mappings: record them (conservatively, all of
                    // `nodes`) so that a later unmap or free removes them.
                    if let Ok(o) = self.memory.lock().objects.get_mut(h) {
                        o.mapped_nodes = o.mapped_nodes.union(nodes);
                    }
                }
                return Err(e);
            }
        }
        if let Ok(o) = self.memory.lock().objects.get_mut(h) {
            o.mapped_nodes = o.mapped_nodes.union(nodes);
        }
        Ok(())
    }

    /// Unmaps every buffer of an object from `nodes` and records the result (on failure, the
    /// devices the kernel reports done are recorded as unmapped). Leaves `busy` alone.
    pub(super) fn unmap_object(
        &self,
        h: MemoryHandle,
        handles: KfdHandles,
        nodes: NodeSet,
    ) -> Result<(), Error> {
        if nodes.is_empty() {
            return Ok(());
        }
        let mut ids = [0u32; NODE_SET_CAPACITY];
        let n = self.memory.lock().gpu_ids(nodes, &mut ids);
        let ids = ids.get(..n).unwrap_or(&[]);
        for &handle in handles.as_slice() {
            if let Err((e, done)) = self.kfd_unmap(handle, ids) {
                // With several buffers the first ones are fully unmapped; record the devices
                // this one reached only when it is the single buffer (the common case).
                if handles.len() == 1 {
                    let mut st = self.memory.lock();
                    let reached = nodes.iter().take(done as usize);
                    if let Ok(o) = st.objects.get_mut(h) {
                        for node in reached {
                            o.mapped_nodes.remove(node);
                        }
                    }
                }
                return Err(e);
            }
        }
        if let Ok(o) = self.memory.lock().objects.get_mut(h) {
            o.mapped_nodes = o.mapped_nodes.difference(nodes);
            if o.mapped_nodes.is_empty() {
                o.mapping_count = 0;
            }
        }
        Ok(())
    }

    /// `UNMAP_MEMORY_FROM_GPU`; on failure also how many devices were done.
    pub(super) fn kfd_unmap(&self, handle: u64, devices: &[u32]) -> Result<(), (Error, u32)> {
        let mut args = kfd_ioctl_unmap_memory_from_gpu_args {
            handle,
            device_ids_array_ptr: 0,
            n_devices: 0,
            n_success: 0,
        };
        self.raw_ioctl(&mut Ioctl::UnmapMemoryFromGpu { args: &mut args, devices })
            .map_err(|e| (e, args.n_success))
    }

    /// Creates and maps the VRAM of a scratch slice on its GPU (`_fmm_map_to_gpu_scratch`).
    pub(super) fn map_scratch(&self, gpu_va: u64, size: u64, gpu_id: u32) -> Result<u64, Error> {
        let mut args = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: gpu_va,
            size,
            handle: 0,
            mmap_offset: 0,
            gpu_id,
            flags: alloc_flags(BufferKind::ScratchVram, MemFlags::empty(), false),
        };
        self.raw_ioctl(&mut Ioctl::AllocMemoryOfGpu(&mut args))?;
        let handle = args.handle;
        let mut map = kfd_ioctl_map_memory_to_gpu_args {
            handle,
            device_ids_array_ptr: 0,
            n_devices: 0,
            n_success: 0,
        };
        if let Err(e) =
            self.raw_ioctl(&mut Ioctl::MapMemoryToGpu { args: &mut map, devices: &[gpu_id] })
        {
            let mut free = kfd_ioctl_free_memory_of_gpu_args { handle };
            let _ = self.raw_ioctl(&mut Ioctl::FreeMemoryOfGpu(&mut free));
            return Err(e);
        }
        Ok(handle)
    }
}
