//! Test-only platform doubles: an in-memory sysfs tree (from strings or from a directory on
//! disk) and a host with a fixed environment.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::string::String;
use std::vec::Vec;

use crate::error::Errno;
use crate::platform::{EntryKind, Host, Sysfs, SysfsDir, SysfsFile};

/// A sysfs tree held in memory. Directories are implied by the files in them; empty ones can
/// be added explicitly. Any file or directory can be made to fail with an errno.
#[derive(Default, Clone)]
pub(crate) struct MemSysfs {
    files: HashMap<SysfsFile, Result<Vec<u8>, Errno>>,
    dirs: HashMap<SysfsDir, BTreeSet<u32>>,
    dir_errors: HashMap<SysfsDir, Errno>,
    pub(crate) reads: Cell<usize>,
    pub(crate) lists: Cell<usize>,
}

/// Parses `nodes/3/io_links/2/properties` and friends.
pub(crate) fn parse_path(path: &str) -> Option<SysfsFile> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let num = |s: &str| s.parse::<u32>().ok();
    Some(match parts.as_slice() {
        ["generation_id"] => SysfsFile::GenerationId,
        ["system_properties"] => SysfsFile::SystemProperties,
        ["nodes", n, "gpu_id"] => SysfsFile::GpuId(num(n)?),
        ["nodes", n, "name"] => SysfsFile::Name(num(n)?),
        ["nodes", n, "properties"] => SysfsFile::NodeProperties(num(n)?),
        ["nodes", n, dir, i, "properties"] => {
            let kind = EntryKind::ALL.into_iter().find(|k| k.dir_name() == *dir)?;
            SysfsFile::EntryProperties { node: num(n)?, kind, index: num(i)? }
        }
        _ => return None,
    })
}

impl MemSysfs {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// A tree from `(path, content)` pairs.
    pub(crate) fn from_files(files: &[(&str, &str)]) -> Self {
        let mut t = Self::new();
        for (p, c) in files {
            t.insert(p, c.as_bytes());
        }
        t
    }

    fn register(&mut self, file: SysfsFile) {
        let node = match file {
            SysfsFile::GenerationId | SysfsFile::SystemProperties => return,
            SysfsFile::GpuId(n) | SysfsFile::Name(n) | SysfsFile::NodeProperties(n) => n,
            SysfsFile::EntryProperties { node, kind, index } => {
                self.dirs.entry(SysfsDir::Entries { node, kind }).or_default().insert(index);
                node
            }
        };
        self.dirs.entry(SysfsDir::Nodes).or_default().insert(node);
    }

    pub(crate) fn insert(&mut self, path: &str, content: &[u8]) {
        let file = parse_path(path).unwrap_or_else(|| panic!("bad path {path}"));
        self.insert_file(file, content);
    }

    pub(crate) fn insert_file(&mut self, file: SysfsFile, content: &[u8]) {
        self.register(file);
        self.files.insert(file, Ok(content.to_vec()));
    }

    /// Makes reading `file` fail (the file is listed as existing).
    pub(crate) fn fail_file(&mut self, file: SysfsFile, errno: Errno) {
        self.register(file);
        self.files.insert(file, Err(errno));
    }

    pub(crate) fn remove_file(&mut self, file: SysfsFile) {
        self.files.remove(&file);
    }

    /// Adds a directory entry without files (an empty entry directory or node).
    pub(crate) fn add_dir_entry(&mut self, dir: SysfsDir, entry: u32) {
        if let SysfsDir::Entries { node, .. } = dir {
            self.dirs.entry(SysfsDir::Nodes).or_default().insert(node);
        }
        self.dirs.entry(dir).or_default().insert(entry);
    }

    pub(crate) fn fail_dir(&mut self, dir: SysfsDir, errno: Errno) {
        self.dir_errors.insert(dir, errno);
    }

    /// Makes every file and directory of node `n` fail with `EPERM`.
    pub(crate) fn deny_node(&mut self, n: u32) {
        let keys: Vec<SysfsFile> = self.files.keys().copied().collect();
        for f in keys {
            let owner = match f {
                SysfsFile::GpuId(x) | SysfsFile::Name(x) | SysfsFile::NodeProperties(x) => x,
                SysfsFile::EntryProperties { node, .. } => node,
                _ => continue,
            };
            if owner == n {
                self.files.insert(f, Err(Errno::EPERM));
            }
        }
        for kind in EntryKind::ALL {
            self.dir_errors.insert(SysfsDir::Entries { node: n, kind }, Errno::EPERM);
        }
    }

    /// Loads a capture directory (the `topology/` root). Files other than the tree's are
    /// ignored (e.g. `mem_banks/0/used_memory`).
    pub(crate) fn from_dir(root: &Path) -> Self {
        let mut t = Self::new();
        let mut stack = std::vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let entry = entry.unwrap();
                let path = entry.path();
                if entry.file_type().unwrap().is_dir() {
                    // Register numeric directories so that empty ones are listed.
                    let rel: String =
                        path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                    let parts: Vec<&str> = rel.split('/').collect();
                    match parts.as_slice() {
                        ["nodes", n] => {
                            if let Ok(n) = n.parse() {
                                t.dirs.entry(SysfsDir::Nodes).or_default().insert(n);
                            }
                        }
                        ["nodes", n, kind, i] => {
                            let k = EntryKind::ALL.into_iter().find(|k| k.dir_name() == *kind);
                            if let (Ok(n), Some(kind), Ok(i)) = (n.parse(), k, i.parse()) {
                                t.add_dir_entry(SysfsDir::Entries { node: n, kind }, i);
                            }
                        }
                        _ => {}
                    }
                    stack.push(path);
                } else {
                    let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                    if let Some(file) = parse_path(&rel) {
                        t.insert_file(file, &std::fs::read(&path).unwrap());
                    }
                }
            }
        }
        t
    }

    pub(crate) fn file_count(&self) -> usize {
        self.files.len()
    }

    /// Every file, for tests that mutate trees.
    pub(crate) fn files(&self) -> BTreeMap<String, SysfsFile> {
        self.files.keys().map(|f| (std::format!("{f:?}"), *f)).collect()
    }
}

impl Sysfs for MemSysfs {
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
        self.reads.set(self.reads.get() + 1);
        match self.files.get(&file) {
            None => Err(Errno::ENOENT),
            Some(Err(e)) => Err(*e),
            Some(Ok(data)) => {
                let n = data.len().min(buf.len());
                buf[..n].copy_from_slice(&data[..n]);
                Ok(n)
            }
        }
    }

    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
        self.lists.set(self.lists.get() + 1);
        if let Some(e) = self.dir_errors.get(&dir) {
            return Err(*e);
        }
        let Some(set) = self.dirs.get(&dir) else { return Ok(0) };
        // The smallest numbers when they do not all fit (the `Sysfs` contract), in reverse
        // order: callers must sort.
        let room = out.len();
        for (slot, v) in out.iter_mut().zip(set.iter().take(room).rev()) {
            *slot = *v;
        }
        Ok(set.len())
    }
}

/// A host with a fixed environment.
#[derive(Default)]
pub(crate) struct TestHost {
    pub(crate) env: BTreeMap<String, String>,
}

impl TestHost {
    pub(crate) fn with(vars: &[(&str, &str)]) -> Self {
        Self { env: vars.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect() }
    }
}

impl Host for TestHost {
    fn now_ns(&self) -> u64 {
        0
    }
    fn process_id(&self) -> u32 {
        1
    }
    fn env_var(&self, name: &str, buf: &mut [u8]) -> Option<usize> {
        let v = self.env.get(name)?.as_bytes();
        let n = v.len().min(buf.len());
        buf[..n].copy_from_slice(&v[..n]);
        Some(v.len())
    }
}

/// The directory of a profile capture in platform-sim.
pub(crate) fn profile_dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../platform-sim/profiles").join(name)
}
