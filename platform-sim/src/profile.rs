//! Topology profiles: sysfs trees from real machines, embedded at build time from
//! `platform-sim/profiles/`, or loaded from any directory.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::{fmt, fs, io};

use hsakmt_core::platform::{EntryKind, SysfsDir, SysfsFile};

use crate::archive;

/// A capture as embedded by `build.rs`: a packed [`archive`] of its tree.
pub(crate) struct EmbeddedTree {
    pub(crate) name: &'static str,
    pub(crate) archive: &'static [u8],
    pub(crate) raw_len: usize,
}

include!(concat!(env!("OUT_DIR"), "/profiles.rs"));

/// The profile used when none is named: the 8-GPU MI308X box in CPX mode (34 nodes).
pub const DEFAULT_PROFILE: &str = "mi308x-8gpu-cpx";

/// One-line descriptions of the embedded profiles (from each capture's SOURCE.md).
const DESCRIPTIONS: &[(&str, &str)] = &[
    (
        "cpu-only-virtual-crat-2021",
        "CPU-only host, virtual CRAT (ROCm DKMS 5.6, 2021): directory shape only, file contents unknown",
    ),
    (
        "mi210-8gpu-2hive",
        "dual-socket host with 8 MI210 (gfx90a) in two XGMI hives of 4; properties and links only",
    ),
    (
        "mi25-vega10-rocm18",
        "20-core host with one Radeon Instinct MI25 (Vega 10, gfx900), ROCm 1.8 driver",
    ),
    (
        "mi308x-8gpu-cpx",
        "dual-socket host with 8 MI308X (gfx942) in CPX mode: 32 GPU partitions in one XGMI hive",
    ),
];

/// A sysfs topology tree held in memory, keyed by typed paths.
#[derive(Clone)]
pub struct Profile {
    name: Arc<str>,
    files: HashMap<SysfsFile, Arc<[u8]>>,
    dirs: HashMap<SysfsDir, Vec<u32>>,
}

impl fmt::Debug for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Profile")
            .field("name", &self.name)
            .field("files", &self.files.len())
            .field("nodes", &self.node_ids().len())
            .finish()
    }
}

/// Names of every embedded profile, sorted.
#[must_use]
pub fn profile_names() -> Vec<&'static str> {
    EMBEDDED.iter().map(|t| t.name).collect()
}

/// The description of an embedded profile.
#[must_use]
pub fn profile_description(name: &str) -> Option<&'static str> {
    DESCRIPTIONS.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
}

/// Error for an unknown profile name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownProfile(pub String);

impl fmt::Display for UnknownProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no simulator profile named '{}'; known profiles: {}",
            self.0,
            profile_names().join(", ")
        )
    }
}

impl std::error::Error for UnknownProfile {}

impl Profile {
    /// The embedded profile `name`.
    ///
    /// # Errors
    /// [`UnknownProfile`] listing the known names.
    pub fn embedded(name: &str) -> Result<Self, UnknownProfile> {
        let tree =
            EMBEDDED.iter().find(|t| t.name == name).ok_or_else(|| UnknownProfile(name.into()))?;
        // build.rs wrote the archive; a failure here is a build defect, not input.
        let Some(raw) = archive::unpack(tree.archive, tree.raw_len) else {
            unreachable!("embedded profile {name} is corrupt")
        };
        let mut p = Self::empty(tree.name);
        for record in archive::records(&raw) {
            match record {
                Some(archive::Record::Dir(rel)) => p.add_dir(rel),
                Some(archive::Record::File(rel, bytes)) => p.add_file(rel, Arc::from(bytes)),
                None => unreachable!("embedded profile {name} has a malformed record"),
            }
        }
        p.finish();
        Ok(p)
    }

    /// The default profile ([`DEFAULT_PROFILE`]).
    #[must_use]
    pub fn default_profile() -> Self {
        match Self::embedded(DEFAULT_PROFILE) {
            Ok(p) => p,
            Err(e) => unreachable!("build.rs embeds the default profile: {e}"),
        }
    }

    /// Loads a topology root from disk (the layout of `/sys/devices/virtual/kfd/kfd/topology`).
    /// Files other than the ones KFD defines are ignored.
    ///
    /// # Errors
    /// Any I/O error while walking the directory.
    pub fn from_dir(root: &Path) -> io::Result<Self> {
        let name = root.display().to_string();
        let mut p = Self::empty(&name);
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(&dir)? {
                let path = entry?.path();
                let Ok(rel) = path.strip_prefix(root) else { continue };
                let rel = rel.to_string_lossy().replace('\\', "/");
                if path.is_dir() {
                    p.add_dir(&rel);
                    stack.push(path);
                } else {
                    match fs::read(&path) {
                        Ok(bytes) => p.add_file(&rel, Arc::from(bytes)),
                        // Unreadable files (permissions) are treated as absent.
                        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        p.finish();
        Ok(p)
    }

    fn empty(name: &str) -> Self {
        Self { name: Arc::from(name), files: HashMap::new(), dirs: HashMap::new() }
    }

    /// The profile's name (embedded name, or the directory it was loaded from).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Node directory numbers, ascending.
    #[must_use]
    pub fn node_ids(&self) -> Vec<u32> {
        self.dirs.get(&SysfsDir::Nodes).cloned().unwrap_or_default()
    }

    /// The bytes of a file, if the tree has it.
    #[must_use]
    pub fn file(&self, file: SysfsFile) -> Option<&[u8]> {
        self.files.get(&file).map(|b| &b[..])
    }

    /// The numeric entries of a directory, ascending (empty when absent).
    #[must_use]
    pub fn dir(&self, dir: SysfsDir) -> &[u32] {
        self.dirs.get(&dir).map_or(&[], |v| &v[..])
    }

    /// Every file of the tree with its typed path, in no particular order.
    pub fn files(&self) -> impl Iterator<Item = (SysfsFile, &[u8])> {
        self.files.iter().map(|(k, v)| (*k, &v[..]))
    }

    /// Replaces (or adds) a file's contents; used by tests and fault scenarios.
    pub fn set_file(&mut self, file: SysfsFile, bytes: &[u8]) {
        self.files.insert(file, Arc::from(bytes));
        self.note_file_dirs(file);
        self.finish();
    }

    /// Writes the tree to `dir` in sysfs layout (used by benchmarks and `--sysfs` tests).
    ///
    /// # Errors
    /// Any I/O error.
    pub fn write_to(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir.join("nodes"))?;
        for (file, bytes) in &self.files {
            let path = dir.join(relative_path(*file));
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)?;
            }
            fs::write(path, bytes)?;
        }
        for (d, entries) in &self.dirs {
            for e in entries {
                let sub = match d {
                    SysfsDir::Nodes => format!("nodes/{e}"),
                    SysfsDir::Entries { node, kind } => {
                        format!("nodes/{node}/{}/{e}", kind.dir_name())
                    }
                };
                fs::create_dir_all(dir.join(sub))?;
            }
        }
        Ok(())
    }

    fn add_file(&mut self, rel: &str, bytes: Arc<[u8]>) {
        if let Some(file) = parse_file_path(rel) {
            self.files.insert(file, bytes);
            self.note_file_dirs(file);
        }
    }

    fn note_file_dirs(&mut self, file: SysfsFile) {
        match file {
            SysfsFile::GenerationId | SysfsFile::SystemProperties => {}
            SysfsFile::GpuId(n) | SysfsFile::Name(n) | SysfsFile::NodeProperties(n) => {
                self.dirs.entry(SysfsDir::Nodes).or_default().push(n);
            }
            SysfsFile::EntryProperties { node, kind, index } => {
                self.dirs.entry(SysfsDir::Nodes).or_default().push(node);
                self.dirs.entry(SysfsDir::Entries { node, kind }).or_default().push(index);
            }
        }
    }

    fn add_dir(&mut self, rel: &str) {
        let parts: Vec<&str> = rel.split('/').collect();
        match parts.as_slice() {
            ["nodes", n] => {
                if let Ok(n) = n.parse() {
                    self.dirs.entry(SysfsDir::Nodes).or_default().push(n);
                }
            }
            ["nodes", n, kind, i] => {
                if let (Ok(n), Some(kind), Ok(i)) = (n.parse(), entry_kind(kind), i.parse()) {
                    self.dirs.entry(SysfsDir::Nodes).or_default().push(n);
                    self.dirs.entry(SysfsDir::Entries { node: n, kind }).or_default().push(i);
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self) {
        for v in self.dirs.values_mut() {
            v.sort_unstable();
            v.dedup();
        }
    }
}

fn entry_kind(name: &str) -> Option<EntryKind> {
    EntryKind::ALL.into_iter().find(|k| k.dir_name() == name)
}

/// Maps a path relative to the topology root to the typed file it names, if KFD defines it.
#[must_use]
pub fn parse_file_path(rel: &str) -> Option<SysfsFile> {
    let parts: Vec<&str> = rel.split('/').collect();
    Some(match parts.as_slice() {
        ["generation_id"] => SysfsFile::GenerationId,
        ["system_properties"] => SysfsFile::SystemProperties,
        ["nodes", n, "gpu_id"] => SysfsFile::GpuId(n.parse().ok()?),
        ["nodes", n, "name"] => SysfsFile::Name(n.parse().ok()?),
        ["nodes", n, "properties"] => SysfsFile::NodeProperties(n.parse().ok()?),
        ["nodes", n, kind, i, "properties"] => SysfsFile::EntryProperties {
            node: n.parse().ok()?,
            kind: entry_kind(kind)?,
            index: i.parse().ok()?,
        },
        _ => return None,
    })
}

/// The path of a typed file relative to the topology root.
#[must_use]
pub fn relative_path(file: SysfsFile) -> String {
    match file {
        SysfsFile::GenerationId => "generation_id".into(),
        SysfsFile::SystemProperties => "system_properties".into(),
        SysfsFile::GpuId(n) => format!("nodes/{n}/gpu_id"),
        SysfsFile::Name(n) => format!("nodes/{n}/name"),
        SysfsFile::NodeProperties(n) => format!("nodes/{n}/properties"),
        SysfsFile::EntryProperties { node, kind, index } => {
            format!("nodes/{node}/{}/{index}/properties", kind.dir_name())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_capture_is_embedded() {
        let names = profile_names();
        assert_eq!(
            names,
            [
                "cpu-only-virtual-crat-2021",
                "mi210-8gpu-2hive",
                "mi25-vega10-rocm18",
                "mi308x-8gpu-cpx"
            ]
        );
        for n in names {
            assert!(profile_description(n).is_some(), "{n} has a description");
        }
    }

    #[test]
    fn mi308x_shape() {
        let p = Profile::default_profile();
        assert_eq!(p.node_ids(), (0..34).collect::<Vec<_>>());
        assert_eq!(p.file(SysfsFile::GenerationId), Some(&b"33\n"[..]));
        let caches = p.dir(SysfsDir::Entries { node: 2, kind: EntryKind::Cache });
        assert_eq!(caches.len(), 46);
        let links = p.dir(SysfsDir::Entries { node: 2, kind: EntryKind::IoLink });
        assert_eq!(links, (0..32).collect::<Vec<_>>());
        // DKMS-only files are not part of the KFD contract and are dropped.
        assert_eq!(parse_file_path("nodes/2/mem_banks/0/used_memory"), None);
    }

    #[test]
    fn listing_only_profile_has_shape() {
        let p = Profile::embedded("cpu-only-virtual-crat-2021").unwrap();
        assert_eq!(p.node_ids(), [0]);
        assert_eq!(p.dir(SysfsDir::Entries { node: 0, kind: EntryKind::MemBank }), [0]);
        assert_eq!(p.file(SysfsFile::NodeProperties(0)), Some(&b""[..]));
    }

    #[test]
    fn paths_round_trip_and_dir_round_trip() {
        let p = Profile::embedded("mi25-vega10-rocm18").unwrap();
        for (f, _) in p.files() {
            assert_eq!(parse_file_path(&relative_path(f)), Some(f));
        }
        let dir = std::env::temp_dir().join(format!("hsakmt-sim-profile-{}", std::process::id()));
        p.write_to(&dir).unwrap();
        let q = Profile::from_dir(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(q.files.len(), p.files.len());
        for (f, bytes) in p.files() {
            assert_eq!(q.file(f), Some(bytes));
        }
        assert_eq!(q.node_ids(), p.node_ids());
        assert!(Profile::embedded("nope").unwrap_err().to_string().contains("mi308x-8gpu-cpx"));
    }
}
