//! Which nodes libhsakmt's users see: libhsakmt opens each GPU's render node while it walks the
//! topology (`topology_sysfs_check_node_supported`) and hides the GPUs whose node it cannot
//! open with `ENOENT` or `EPERM` (a container given only some `/dev/dri/renderD*`); any other
//! errno fails the snapshot. Nodes whose files the kernel refuses with `EPERM` (a device
//! cgroup) are hidden too. The remaining nodes are numbered densely (user node ids), and links
//! to hidden nodes are dropped.

use crate::error::Errno;
use crate::platform::{Host, KfdDevice, Sysfs};

use super::node::{Link, Node};
use super::refresh::Options;
use super::snapshot::{NodeView, Topology};
use super::{Error, MIN_READ_BUFFER};

/// Why a node is hidden from libhsakmt's users.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Hidden {
    /// The kernel refused the node's files (`EPERM`): the caller's device cgroup does not
    /// allow the GPU.
    Cgroup,
    /// Its render node `/dev/dri/renderD<minor>` could not be opened (`ENOENT`: not in this
    /// container; `EPERM`).
    RenderNode {
        /// `N` of `/dev/dri/renderD<N>`.
        minor: u32,
        /// The errno of the open.
        errno: Errno,
    },
}

impl Node {
    /// Why the node is hidden from libhsakmt's users (`None`: visible, with a
    /// [`user_id`](Node::user_id)).
    #[must_use]
    pub const fn hidden(&self) -> Option<Hidden> {
        match (self.accessible, self.render_hidden) {
            (_, Some((minor, errno))) => Some(Hidden::RenderNode { minor, errno }),
            (false, None) => Some(Hidden::Cgroup),
            (true, None) => None,
        }
    }
}

impl<
    const NODES: usize,
    const BANKS: usize,
    const CACHES: usize,
    const LINKS: usize,
    const UNKNOWN: usize,
    const WARNINGS: usize,
> Topology<NODES, BANKS, CACHES, LINKS, UNKNOWN, WARNINGS>
{
    /// [`Topology::refresh`] as libhsakmt's users see the machine: every GPU's render node
    /// is opened through `render` (the platform keeps it open for the process, as libhsakmt
    /// does), and a GPU whose node fails with `ENOENT` or `EPERM` is hidden before the user
    /// node ids, the gfx overrides and the derived links are computed.
    ///
    /// # Errors
    /// As [`Topology::refresh`]; [`Error::RenderNode`] for any other errno of an open. On error
    /// the snapshot is left empty.
    pub fn refresh_visible<S: Sysfs + ?Sized, H: Host + ?Sized, K: KfdDevice + ?Sized>(
        &mut self,
        sysfs: &S,
        host: &H,
        render: &K,
        buf: &mut [u8],
    ) -> Result<(), Error> {
        self.refresh_visible_with(sysfs, host, render, buf, &Options::DEFAULT)
    }

    /// [`refresh_visible`](Self::refresh_visible) with explicit [`Options`].
    ///
    /// # Errors
    /// As [`refresh_visible`](Self::refresh_visible).
    pub fn refresh_visible_with<S: Sysfs + ?Sized, H: Host + ?Sized, K: KfdDevice + ?Sized>(
        &mut self,
        sysfs: &S,
        host: &H,
        render: &K,
        buf: &mut [u8],
        options: &Options,
    ) -> Result<(), Error> {
        if buf.len() < MIN_READ_BUFFER {
            return self.refresh_with(sysfs, host, buf, options);
        }
        let probe = |minor: u32| render.open_render_node(minor).map(|_| ());
        let result = self.take(sysfs, host, buf, options, Some(&probe));
        self.settle(result)
    }

    /// Opens the render node of every accessible GPU node through `probe` and hides the nodes
    /// whose open fails with `ENOENT`/`EPERM`.
    pub(super) fn hide_unopenable(
        &mut self,
        probe: &dyn Fn(u32) -> Result<(), Errno>,
    ) -> Result<(), Error> {
        for node in &mut self.nodes {
            if !node.accessible || node.gpu_id.is_none_or(|g| g == 0) {
                continue;
            }
            let minor = node.props.drm_render_minor().unwrap_or(0);
            match probe(minor) {
                Ok(()) => {}
                Err(errno @ (Errno::ENOENT | Errno::EPERM)) => {
                    node.accessible = false;
                    node.render_hidden = Some((minor, errno));
                }
                Err(errno) => {
                    return Err(Error::RenderNode { node: node.sysfs_id, minor, errno });
                }
            }
        }
        Ok(())
    }

    /// The hidden nodes, with why.
    pub fn hidden_nodes(&self) -> impl Iterator<Item = (NodeView<'_>, Hidden)> + '_ {
        self.nodes().filter_map(|v| Some((v, v.node().hidden()?)))
    }
}

impl<'a> NodeView<'a> {
    /// The links libhsakmt's users see: [`NodeView::links`] without those to hidden nodes
    /// (`is_node_supported` check of libhsakmt's link walk).
    pub fn visible_links<
        const N: usize,
        const B: usize,
        const C: usize,
        const L: usize,
        const U: usize,
        const W: usize,
    >(
        &self,
        topology: &'a Topology<N, B, C, L, U, W>,
    ) -> impl Iterator<Item = &'a Link> + 'a {
        self.links().filter(move |l| {
            l.node_to()
                .and_then(|to| topology.node_by_sysfs_id(to))
                .is_some_and(|n| n.node().hidden().is_none())
        })
    }
}
