//! `hsaKmtGetAMDGPUDeviceHandle`: the DRM render node of a GPU node, opened once for the life
//! of the process (the platform caches the descriptor per minor; the GPU's VM is bound to it).
//! libhsakmt returns a libdrm `amdgpu_device_handle` made from that descriptor; this library
//! has no libdrm and gives the descriptor itself, from which a C wrapper can make one.

use super::{Error, Kfd};
use crate::device::MemoryStorage;
use crate::platform::{KfdDevice, Platform};

/// A GPU's render node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RenderDevice {
    /// The user node id.
    pub node: u32,
    /// `N` of `/dev/dri/renderD<N>`.
    pub minor: u32,
    /// The descriptor (on the simulator a fake number).
    pub fd: u32,
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// The render node of GPU `node`, opened once.
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`]; [`Error::InvalidNode`] for a CPU node or
    /// a node without a render minor; [`Error::Platform`] with the errno of the open.
    pub fn render_device(&self, node: u32) -> Result<RenderDevice, Error> {
        let minor = self
            .with_topology(|t| {
                let n = t.node_by_user_id(node)?;
                n.gpu_id().filter(|g| *g != 0)?;
                n.drm_render_minor().filter(|m| *m != 0)
            })?
            .ok_or(Error::InvalidNode { node })?;
        let fd = KfdDevice::open_render_node(&self.platform, minor).map_err(Error::Platform)?;
        Ok(RenderDevice { node, minor, fd })
    }
}
