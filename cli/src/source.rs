//! Where a command's topology and device come from: the real system, a sysfs directory, or an
//! embedded simulator profile.

use std::path::PathBuf;

use clap::Args;
use hsakmt_core::error::Errno;
use hsakmt_core::platform::{Host, Sysfs, SysfsDir, SysfsFile};
use hsakmt_linux::path::PATH_CAPACITY;
use hsakmt_linux::{KFD_TOPOLOGY_ROOT, LinuxPlatform, SysfsTree};
use hsakmt_sim::{Profile, SimPlatform};

/// Selects the topology source.
#[derive(Debug, Args, Clone)]
pub(crate) struct SourceArgs {
    /// Read the topology tree rooted at DIR (a copy of `/sys/devices/virtual/kfd/kfd/topology`).
    #[arg(long, value_name = "DIR", conflicts_with = "sim")]
    pub(crate) sysfs: Option<PathBuf>,
    /// Use an embedded simulator profile (`--sim help` lists them).
    #[arg(long, value_name = "PROFILE")]
    pub(crate) sim: Option<String>,
}

/// A platform for topology reads: the real (or a captured) tree, or the simulator.
pub(crate) enum Source {
    /// The Linux platform: the kernel's tree (`true`) or a tree on disk (`--sysfs DIR`).
    Linux(Box<LinuxPlatform>, String, bool),
    /// The simulator over a profile.
    Sim(Box<SimPlatform>, String),
}

impl Source {
    /// Resolves the arguments. Without either flag the real tree is used when it exists, else
    /// the default simulator profile, with a note on stderr.
    pub(crate) fn resolve(args: &SourceArgs) -> Result<Self, String> {
        if let Some(dir) = &args.sysfs {
            let shown = crate::text::escape(&dir.to_string_lossy()).into_owned();
            let len = dir.as_os_str().len();
            if len >= PATH_CAPACITY {
                return Err(format!(
                    "--sysfs {shown}: the path is {len} bytes long, beyond the {} bytes a \
                     topology root may have",
                    PATH_CAPACITY - 1
                ));
            }
            match std::fs::metadata(dir) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(format!("--sysfs {shown}: not a directory")),
                Err(e) => {
                    let why =
                        e.raw_os_error().map_or_else(|| e.to_string(), |n| Errno(n).to_string());
                    return Err(format!("--sysfs {shown}: {why}"));
                }
            }
            let tree = SysfsTree::at(dir.as_os_str().as_encoded_bytes())
                .map_err(|e| format!("--sysfs {shown}: {e}"))?;
            return Ok(Self::Linux(
                Box::new(LinuxPlatform::with_sysfs(tree)),
                format!("sysfs tree {shown}"),
                false,
            ));
        }
        if let Some(name) = &args.sim {
            return Self::sim(name);
        }
        if std::path::Path::new(KFD_TOPOLOGY_ROOT).is_dir() {
            return Ok(Self::Linux(
                Box::new(LinuxPlatform::new()),
                format!("this machine ({KFD_TOPOLOGY_ROOT})"),
                true,
            ));
        }
        crate::note!(
            "hsakmt: no KFD topology on this machine ({KFD_TOPOLOGY_ROOT} is absent: no amdgpu \
             driver with KFD); using the simulator profile '{}'",
            hsakmt_sim::DEFAULT_PROFILE
        );
        Self::sim(hsakmt_sim::DEFAULT_PROFILE)
    }

    /// The simulator over the embedded profile `name`.
    pub(crate) fn sim(name: &str) -> Result<Self, String> {
        let profile = Profile::embedded(name)
            .map_err(|e| crate::text::escape(&e.to_string()).into_owned())?;
        let sim = SimPlatform::builder().profile(profile).inherit_env(true).build();
        Ok(Self::Sim(Box::new(sim), format!("simulator profile {name}")))
    }

    /// A human description of the source.
    pub(crate) fn describe(&self) -> &str {
        match self {
            Self::Linux(_, d, _) | Self::Sim(_, d) => d,
        }
    }

    /// Whether this is the running kernel's tree (not a capture or a profile).
    pub(crate) fn is_live(&self) -> bool {
        matches!(self, Self::Linux(_, _, true))
    }
}

impl Sysfs for Source {
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
        match self {
            Self::Linux(p, ..) => p.read_file(file, buf),
            Self::Sim(p, _) => p.read_file(file, buf),
        }
    }

    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
        match self {
            Self::Linux(p, ..) => p.list_dir(dir, out),
            Self::Sim(p, _) => p.list_dir(dir, out),
        }
    }
}

impl Host for Source {
    fn now_ns(&self) -> u64 {
        match self {
            Self::Linux(p, ..) => p.now_ns(),
            Self::Sim(p, _) => p.now_ns(),
        }
    }

    fn process_id(&self) -> u32 {
        std::process::id()
    }

    fn env_var(&self, name: &str, buf: &mut [u8]) -> Option<usize> {
        match self {
            Self::Linux(p, ..) => p.env_var(name, buf),
            Self::Sim(p, _) => p.env_var(name, buf),
        }
    }
}
