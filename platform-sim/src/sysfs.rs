//! The profile's tree served through [`hsakmt_core::platform::Sysfs`], with what can change on
//! a running machine: nodes a device cgroup hides (`EPERM`), render nodes a container does not
//! expose, and the topology's `generation_id` (a hot plug or repartition advances it).

use std::collections::{HashMap, HashSet};

use hsakmt_core::error::Errno;
use hsakmt_core::platform::{Sysfs, SysfsDir, SysfsFile};

use crate::SimPlatform;

/// The changeable part of the simulated sysfs and `/dev/dri`.
#[derive(Debug, Default)]
pub(crate) struct SysfsState {
    /// Nodes whose files fail with `EPERM`.
    pub(crate) hidden: HashSet<u32>,
    /// Added to the profile's `generation_id`.
    pub(crate) generation_bump: u32,
    /// Render minors whose open fails, and with what.
    pub(crate) closed_render_nodes: HashMap<u32, Errno>,
}

impl SimPlatform {
    fn state(&self) -> std::sync::RwLockReadGuard<'_, SysfsState> {
        self.sysfs_state.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn state_mut(&self) -> std::sync::RwLockWriteGuard<'_, SysfsState> {
        self.sysfs_state.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Hides (`true`) or shows node `node`'s files from now on (a device cgroup changed).
    pub fn set_node_hidden(&self, node: u32, hidden: bool) {
        let mut s = self.state_mut();
        if hidden {
            s.hidden.insert(node);
        } else {
            s.hidden.remove(&node);
        }
    }

    /// The topology changed (a GPU was plugged, removed or repartitioned): `generation_id`
    /// advances.
    pub fn bump_generation(&self) {
        let mut s = self.state_mut();
        s.generation_bump = s.generation_bump.wrapping_add(1);
    }

    /// Makes opening render node `minor` fail with `errno` from now on (`None`: open it).
    pub fn set_render_node_unavailable(&self, minor: u32, errno: Option<Errno>) {
        let mut s = self.state_mut();
        match errno {
            Some(e) => s.closed_render_nodes.insert(minor, e),
            None => s.closed_render_nodes.remove(&minor),
        };
    }

    /// Why opening render node `minor` fails, if it does.
    pub(crate) fn render_node_refusal(&self, minor: u32) -> Option<Errno> {
        self.state().closed_render_nodes.get(&minor).copied()
    }
}

fn file_node(file: SysfsFile) -> Option<u32> {
    match file {
        SysfsFile::GenerationId | SysfsFile::SystemProperties => None,
        SysfsFile::GpuId(n) | SysfsFile::Name(n) | SysfsFile::NodeProperties(n) => Some(n),
        SysfsFile::EntryProperties { node, .. } => Some(node),
    }
}

impl Sysfs for SimPlatform {
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
        let bump = {
            let s = self.state();
            if file_node(file).is_some_and(|n| s.hidden.contains(&n)) {
                return Err(Errno::EPERM);
            }
            s.generation_bump
        };
        let bytes = self.profile.file(file).ok_or(Errno::ENOENT)?;
        if file == SysfsFile::GenerationId && bump != 0 {
            let text = String::from_utf8_lossy(bytes);
            let g: u32 = text.trim().parse().unwrap_or(0);
            let bumped = format!("{}\n", g.wrapping_add(bump));
            let n = bumped.len().min(buf.len());
            buf[..n].copy_from_slice(&bumped.as_bytes()[..n]);
            return Ok(n);
        }
        let n = bytes.len().min(buf.len());
        buf[..n].copy_from_slice(&bytes[..n]);
        Ok(n)
    }

    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
        if let SysfsDir::Entries { node, .. } = dir
            && self.state().hidden.contains(&node)
        {
            return Err(Errno::EPERM);
        }
        let entries = self.profile.dir(dir);
        for (slot, e) in out.iter_mut().zip(entries) {
            *slot = *e;
        }
        Ok(entries.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsakmt_core::platform::{EntryKind, Host};

    #[test]
    fn serves_files_and_hides_nodes() {
        let sim = SimPlatform::builder().hide_node(3).env("A", "value").build();
        let mut buf = [0u8; 4096];
        let n = sim.read_file(SysfsFile::GpuId(2), &mut buf).unwrap();
        assert_eq!(&buf[..n], b"24248\n");
        assert_eq!(sim.read_file(SysfsFile::GpuId(3), &mut buf), Err(Errno::EPERM));
        let caches = SysfsDir::Entries { node: 3, kind: EntryKind::Cache };
        assert_eq!(sim.list_dir(caches, &mut [0; 4]), Err(Errno::EPERM));
        assert_eq!(sim.read_file(SysfsFile::GpuId(99), &mut buf), Err(Errno::ENOENT));
        let mut ids = [0u32; 40];
        assert_eq!(sim.list_dir(SysfsDir::Nodes, &mut ids), Ok(34));
        assert_eq!(ids[33], 33);
        let mut v = [0u8; 3];
        assert_eq!(sim.env_var("A", &mut v), Some(5));
        assert_eq!(&v, b"val");
        assert_eq!(sim.env_var("PATH", &mut v), None);
    }
}
