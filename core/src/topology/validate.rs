//! Checks across the snapshot once the walk is done: GPU nodes that cannot be reached by their
//! `gpu_id` (0, or another node's), `gfx_target_version` values that are no gfx version, and
//! the tables that were full, each as a warning.

use crate::platform::{SysfsDir, SysfsFile};

use super::Table;
use super::diag::{Diagnostics, Location, WarningKind};
use super::gfx::GfxVersion;
use super::node::Node;
use super::snapshot::{LISTING_CAPACITY, Topology};

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Warns when a GPU node's `gfx_target_version` does not decode to a gfx version.
pub(super) fn check_gfx_target_version<const W: usize>(node: &Node, diag: &mut Diagnostics<W>) {
    if let Some(v) = node.props.gfx_target_version()
        && v != 0
        && GfxVersion::from_target_version(v).is_none()
    {
        diag.file(
            SysfsFile::NodeProperties(node.sysfs_id),
            WarningKind::ImpossibleGfxVersion { value: u64::from(v) },
        );
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
    /// Warns about GPU nodes that cannot be reached by their `gpu_id`: 0, or one an earlier
    /// node already has.
    pub(super) fn check_gpu_ids(&mut self) {
        for (i, node) in self.nodes.iter().enumerate() {
            let Some(gpu_id) = node.gpu_id else { continue };
            let file = SysfsFile::GpuId(node.sysfs_id);
            if gpu_id == 0 {
                if node.has_gpu() {
                    self.diag.file(file, WarningKind::GpuIdZero);
                }
                continue;
            }
            let earlier = self.nodes.get(..i).unwrap_or_default();
            if let Some(first) = earlier.iter().find(|n| n.gpu_id == Some(gpu_id)) {
                self.diag
                    .file(file, WarningKind::DuplicateGpuId { gpu_id, first_node: first.sysfs_id });
            }
        }
    }

    /// Counts `n` entries left out of a full `table` (warned about once per table when the
    /// walk ends).
    pub(super) fn leave_out(&mut self, table: Table, n: usize) {
        if let Some(c) = self.left_out.get_mut(table as usize) {
            *c = c.saturating_add(to_u32(n));
        }
    }

    /// One [`WarningKind::Truncated`] per table that was full.
    pub(super) fn warn_truncated(&mut self) {
        for table in Table::ALL {
            let left_out = self.left_out.get(table as usize).copied().unwrap_or(0);
            if left_out > 0 {
                let capacity = to_u32(match table {
                    Table::Nodes => NODES,
                    Table::MemBanks => BANKS,
                    Table::Caches => CACHES,
                    Table::Links => LINKS,
                    Table::Listing => LISTING_CAPACITY,
                });
                self.diag.warn(
                    Location::Dir(SysfsDir::Nodes),
                    WarningKind::Truncated { table, capacity, left_out },
                );
            }
        }
    }
}
