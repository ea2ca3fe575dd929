//! The profile's tree served through [`hsakmt_core::platform::Sysfs`].

use hsakmt_core::error::Errno;
use hsakmt_core::platform::{Sysfs, SysfsDir, SysfsFile};

use crate::SimPlatform;

fn file_node(file: SysfsFile) -> Option<u32> {
    match file {
        SysfsFile::GenerationId | SysfsFile::SystemProperties => None,
        SysfsFile::GpuId(n) | SysfsFile::Name(n) | SysfsFile::NodeProperties(n) => Some(n),
        SysfsFile::EntryProperties { node, .. } => Some(node),
    }
}

impl Sysfs for SimPlatform {
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
        if file_node(file).is_some_and(|n| self.hidden_nodes.contains(&n)) {
            return Err(Errno::EPERM);
        }
        let bytes = self.profile.file(file).ok_or(Errno::ENOENT)?;
        let n = bytes.len().min(buf.len());
        buf[..n].copy_from_slice(&bytes[..n]);
        Ok(n)
    }

    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
        if let SysfsDir::Entries { node, .. } = dir
            && self.hidden_nodes.contains(&node)
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
