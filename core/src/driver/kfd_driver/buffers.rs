//! Memory by region: allocation with the flags each region kind stands for, batches, mapping on
//! agents, and dma-buf import.

use crate::device::{Kfd, MapNodes, MemoryStorage};
use crate::driver::{
    AgentId, AgentKind, Buffer, Driver, DriverError, KfdDriver, RegionId, RegionKind,
};
use crate::memory::{MemFlags, PAGE_SIZE};
use crate::platform::Platform;

use super::MAX_AGENTS;

impl<P: Platform, S: MemoryStorage<P::Mapping>> KfdDriver<P, S>
where
    Kfd<P, S>: Send + Sync,
{
    /// The memory flags libhsakmt's callers use for each region kind.
    fn flags_for(kind: RegionKind, agent_kind: AgentKind, host: bool) -> MemFlags {
        match (kind, agent_kind) {
            (RegionKind::GlobalCoarseGrained, _) if host => {
                MemFlags::COARSE_GRAIN | MemFlags::HOST_ACCESS
            }
            (RegionKind::GlobalCoarseGrained, _) => MemFlags::COARSE_GRAIN | MemFlags::NON_PAGED,
            (RegionKind::GlobalFineGrained, AgentKind::Gpu) => MemFlags::HOST_ACCESS,
            (RegionKind::Kernarg, _) => MemFlags::HOST_ACCESS | MemFlags::EXECUTE_ACCESS,
            _ => MemFlags::HOST_ACCESS,
        }
    }

    /// Allocates `size` bytes (rounded to the granule) from `region` and maps it
    /// ([`Driver::allocate`]).
    pub(super) fn allocate_in_region(
        &self,
        region: RegionId,
        size: u64,
    ) -> Result<Buffer, DriverError> {
        let info = self.region_info(region)?;
        if !info.allocatable {
            return Err(DriverError::NotAllocatable(info.kind));
        }
        let kind = self
            .state
            .read()
            .agents
            .iter()
            .find(|a| a.id == region.agent)
            .map_or(AgentKind::Cpu, |a| a.kind);
        let flags = Self::flags_for(info.kind, kind, info.host_accessible);
        // HSA allocates any size; the kernel takes whole granules.
        let size = size
            .checked_next_multiple_of(info.granule.max(PAGE_SIZE))
            .ok_or(DriverError::InvalidArgument("size"))?;
        let alloc = self.kfd.alloc_memory(region.agent.node, size, flags)?;
        let (addr, bytes) = (alloc.addr, alloc.size);
        drop(alloc);
        if let Err(e) = self.kfd.map_memory_to_gpu(addr, MapNodes::Default) {
            let _ = self.kfd.free_memory(addr);
            return Err(e.into());
        }
        Ok(Buffer { addr, size: bytes, region })
    }

    /// Allocates `sizes.len()` buffers from `region` in one call, filling `out`; on failure
    /// frees what it allocated.
    ///
    /// # Errors
    /// As [`Driver::allocate`]; [`DriverError::InvalidArgument`] when `out` is shorter than
    /// `sizes`.
    pub fn allocate_batch(
        &self,
        region: RegionId,
        sizes: &[u64],
        out: &mut [Buffer],
    ) -> Result<(), DriverError> {
        let outs =
            out.get_mut(..sizes.len()).ok_or(DriverError::InvalidArgument("batch output"))?;
        for (i, size) in sizes.iter().enumerate() {
            match self.allocate(region, *size) {
                Ok(b) => {
                    if let Some(o) = outs.get_mut(i) {
                        *o = b;
                    }
                }
                Err(e) => {
                    for done in outs.iter().take(i) {
                        let _ = self.free(done.addr);
                    }
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Frees every buffer of `buffers`, continuing past failures; returns the first error.
    ///
    /// # Errors
    /// The first failure.
    pub fn free_batch(&self, buffers: &[Buffer]) -> Result<(), DriverError> {
        let mut first = Ok(());
        for b in buffers {
            if let Err(e) = self.free(b.addr)
                && first.is_ok()
            {
                first = Err(e);
            }
        }
        first
    }

    /// Maps `addr` on `agents` (all GPUs when empty) ([`Driver::map`]).
    pub(super) fn map_on_agents(&self, addr: u64, agents: &[AgentId]) -> Result<u64, DriverError> {
        if agents.is_empty() {
            return Ok(self.kfd.map_memory_to_gpu(addr, MapNodes::All)?);
        }
        let mut nodes: heapless::Vec<u32, MAX_AGENTS> = heapless::Vec::new();
        for a in agents {
            let n = self.gpu_node_of(*a)?;
            nodes.push(n).map_err(|_| DriverError::InvalidArgument("too many agents"))?;
        }
        Ok(self.kfd.map_memory_to_gpu(addr, MapNodes::Only(&nodes))?)
    }

    /// Imports dma-buf `fd` for `agents` ([`Driver::import_dmabuf`]).
    pub(super) fn import_dmabuf_to_agents(
        &self,
        fd: u32,
        agents: &[AgentId],
    ) -> Result<Buffer, DriverError> {
        let mut nodes: heapless::Vec<u32, MAX_AGENTS> = heapless::Vec::new();
        for a in agents {
            nodes
                .push(self.gpu_node_of(*a)?)
                .map_err(|_| DriverError::InvalidArgument("agents"))?;
        }
        let first = agents.first().copied().ok_or(DriverError::InvalidArgument("no agent"))?;
        let imported = self.kfd.import_dmabuf(fd, Some(&nodes))?;
        Ok(Buffer {
            addr: imported.addr,
            size: imported.size,
            region: RegionId { agent: first, index: 0 },
        })
    }
}
