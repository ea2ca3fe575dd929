//! Code objects through the facade's loader (`device::code_object_manager`): the agents'
//! targets, and images loaded for a set of GPU agents. The driver keeps no record of an image:
//! it is memory like any other, freed with [`Driver::free`](crate::driver::Driver::free).

use crate::code_object::{AgentTarget, CodeObject};
use crate::device::{Kfd, MemoryStorage};
use crate::driver::{AgentId, CodeImage, DriverError, KfdDriver};
use crate::platform::Platform;

use super::MAX_AGENTS;

impl<P: Platform, S: MemoryStorage<P::Mapping>> KfdDriver<P, S>
where
    Kfd<P, S>: Send + Sync,
{
    /// The target code objects must match on GPU agent `agent`
    /// ([`Driver::agent_target`](crate::driver::Driver::agent_target)).
    pub(super) fn target_of(&self, agent: AgentId) -> Result<AgentTarget, DriverError> {
        let node = self.gpu_node_of(agent)?;
        Ok(self.kfd.agent_target(node)?)
    }

    /// Loads `object` for the GPU agents `agents`
    /// ([`Driver::load_code_object`](crate::driver::Driver::load_code_object)).
    pub(super) fn load_for_agents(
        &self,
        object: &CodeObject<'_>,
        agents: &[AgentId],
    ) -> Result<CodeImage, DriverError> {
        let mut nodes: heapless::Vec<u32, MAX_AGENTS> = heapless::Vec::new();
        for a in agents {
            let node = self.gpu_node_of(*a)?;
            if !nodes.contains(&node) {
                nodes.push(node).map_err(|_| DriverError::InvalidArgument("too many agents"))?;
            }
        }
        let loaded = self.kfd.load_code_object(object, &nodes)?;
        let image = CodeImage { base: loaded.base(), size: loaded.size() };
        // The memory manager keeps the memory; `Driver::free(base)` releases it.
        drop(loaded.into_allocation());
        Ok(image)
    }
}
