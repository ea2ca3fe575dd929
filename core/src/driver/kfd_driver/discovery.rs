//! Agents and regions: discovered from the facade's topology when the driver initialises, and
//! the driver's answers about them (regions, system, nearest CPU, capabilities).

use crate::device::{Kfd, MemoryStorage};
use crate::driver::{
    AgentId, AgentInfo, AgentKind, Capabilities, Driver, DriverError, DriverKind, KfdDriver,
    RegionId, RegionInfo, RegionKind, Regions, SystemInfo, regions_of,
};
use crate::platform::Platform;
use crate::topology::{IoLinkType, NodeKind, SystemKey};

impl<P: Platform, S: MemoryStorage<P::Mapping>> KfdDriver<P, S>
where
    Kfd<P, S>: Send + Sync,
{
    /// Opens the device and builds the agents and the peer-link count ([`Driver::init`]).
    pub(super) fn discover(&self) -> Result<(), DriverError> {
        if self.state.read().initialized {
            return Ok(());
        }
        self.kfd.open()?;
        let built = self.kfd.with_topology(|t| {
            let mut agents = heapless::Vec::new();
            for n in t.nodes() {
                if let Some(a) = AgentInfo::from_node(self.id, &n) {
                    let _ = agents.push(a);
                }
            }
            let peer_links = t
                .nodes()
                .filter(|n| n.kind() != NodeKind::Cpu)
                .flat_map(|n| n.io_links().iter().chain(n.p2p_links()))
                .filter(|l| {
                    l.node_to()
                        .and_then(|to| t.node_by_sysfs_id(to))
                        .is_some_and(|to| to.kind() != NodeKind::Cpu)
                        || l.link_type() == Some(IoLinkType::Xgmi)
                })
                .count();
            (agents, u32::try_from(peer_links).unwrap_or(u32::MAX))
        });
        let (agents, peer_links) = match built {
            Ok(v) => v,
            Err(e) => {
                let _ = self.kfd.close();
                return Err(e.into());
            }
        };
        let mut st = self.state.write();
        st.agents = agents;
        st.peer_links = peer_links;
        st.initialized = true;
        Ok(())
    }

    /// What the kernel (and the driver kind) supports ([`Driver::capabilities`]).
    pub(super) fn kernel_capabilities(&self) -> Capabilities {
        let mut c = Capabilities::KERNEL_DISPATCH
            | Capabilities::DMA_COPY
            | Capabilities::REGISTER
            | Capabilities::CU_MASK
            | Capabilities::CLOCKS
            | Capabilities::CODE_OBJECTS;
        let v = self.kfd.version().unwrap_or(crate::uapi::KfdVersion::new(0, 0));
        if v.supports(crate::uapi::since::SVM) {
            c |= Capabilities::SVM;
        }
        if v.supports(crate::uapi::since::EXPORT_DMABUF) {
            c |= Capabilities::DMABUF;
        }
        if v.supports(crate::uapi::since::EVENT_AGE) {
            c |= Capabilities::EVENT_AGE;
        }
        if self.kind == DriverKind::Sim {
            c |= Capabilities::HOST_KERNELS;
        }
        c
    }

    /// The regions of `agent` ([`Driver::regions`]).
    pub(super) fn agent_regions(&self, agent: AgentId) -> Result<Regions, DriverError> {
        let node = self.node_of(agent)?;
        let info = self
            .state
            .read()
            .agents
            .iter()
            .find(|a| a.id == agent)
            .cloned()
            .ok_or(DriverError::InvalidAgent(agent))?;
        self.kfd
            .with_topology(|t| t.node_by_user_id(node).map(|n| regions_of(&info, &n)))?
            .ok_or(DriverError::InvalidAgent(agent))
    }

    /// The system description ([`Driver::system`]).
    pub(super) fn system_info(&self) -> SystemInfo {
        let agents = u32::try_from(self.agent_count()).unwrap_or(u32::MAX);
        self.kfd
            .with_topology(|t| {
                let p = t.system_properties();
                SystemInfo {
                    agents,
                    platform_oem: p.get(SystemKey::PlatformOem),
                    platform_id: p.get(SystemKey::PlatformId),
                    platform_rev: p.get(SystemKey::PlatformRev),
                    generation: t.generation_id(),
                }
            })
            .unwrap_or(SystemInfo { agents, ..SystemInfo::default() })
    }

    /// The CPU agent nearest to `agent` ([`Driver::nearest_cpu`]).
    pub(super) fn nearest_cpu_agent(&self, agent: AgentId) -> Option<AgentId> {
        let node = self.node_of(agent).ok()?;
        let cpu = self
            .kfd
            .with_topology(|t| {
                let n = t.node_by_user_id(node)?;
                if n.kind() == NodeKind::Cpu {
                    return Some(node);
                }
                t.nearest_cpu(n.index()).and_then(|(i, _)| t.node(i)?.user_id())
            })
            .ok()??;
        Some(AgentId { driver: self.id, node: cpu })
    }

    pub(super) fn node_of(&self, agent: AgentId) -> Result<u32, DriverError> {
        let st = self.state.read();
        if !st.initialized {
            return Err(DriverError::NotInitialized);
        }
        if agent.driver != self.id || !st.agents.iter().any(|a| a.id == agent) {
            return Err(DriverError::InvalidAgent(agent));
        }
        Ok(agent.node)
    }

    pub(super) fn gpu_node_of(&self, agent: AgentId) -> Result<u32, DriverError> {
        let node = self.node_of(agent)?;
        let st = self.state.read();
        match st.agents.iter().find(|a| a.id == agent) {
            Some(a) if a.kind == AgentKind::Gpu => Ok(node),
            _ => Err(DriverError::InvalidAgent(agent)),
        }
    }

    /// The region description `region`, checked.
    pub(super) fn region_info(&self, region: RegionId) -> Result<RegionInfo, DriverError> {
        let regions = self.regions(region.agent)?;
        regions.iter().copied().find(|r| r.id == region).ok_or(DriverError::InvalidRegion(region))
    }

    /// The system-memory region nearest to `agent` (by NUMA link weight): where to place a
    /// GPU's host buffers.
    ///
    /// # Errors
    /// [`DriverError::InvalidAgent`] when the agent has no CPU near it.
    pub fn nearest_system_region(&self, agent: AgentId) -> Result<RegionId, DriverError> {
        let cpu = self.nearest_cpu(agent).ok_or(DriverError::InvalidAgent(agent))?;
        let regions = self.regions(cpu)?;
        regions
            .iter()
            .find(|r| r.kind == RegionKind::GlobalFineGrained)
            .map(|r| r.id)
            .ok_or(DriverError::InvalidAgent(cpu))
    }
}
