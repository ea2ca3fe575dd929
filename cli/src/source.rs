//! Where a command's topology and device come from: the real system, a sysfs directory, or an
//! embedded simulator profile.

use std::path::PathBuf;

use clap::Args;
use hsakmt_core::error::Errno;
use hsakmt_linux::path::PATH_CAPACITY;
use hsakmt_linux::{KFD_TOPOLOGY_ROOT, LinuxPlatform, SysfsTree};
use hsakmt_sim::{Profile, SimPlatform};

use crate::platform::AnyPlatform;

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
pub(crate) struct Source {
    /// [`AnyPlatform::Linux`] (the kernel's tree or a tree on disk) or [`AnyPlatform::Sim`].
    pub(crate) platform: AnyPlatform,
    /// What it is, for people.
    description: String,
    /// Whether it is the running kernel's tree.
    live: bool,
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
            return Ok(Self {
                platform: AnyPlatform::from(LinuxPlatform::with_sysfs(tree)),
                description: format!("sysfs tree {shown}"),
                live: false,
            });
        }
        if let Some(name) = &args.sim {
            return Self::sim(name);
        }
        if std::path::Path::new(KFD_TOPOLOGY_ROOT).is_dir() {
            return Ok(Self {
                platform: AnyPlatform::from(LinuxPlatform::new()),
                description: format!("this machine ({KFD_TOPOLOGY_ROOT})"),
                live: true,
            });
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
        Ok(Self::simulator(sim, format!("simulator profile {name}")))
    }

    /// The simulator `sim`, described as `description`.
    pub(crate) fn simulator(sim: SimPlatform, description: String) -> Self {
        Self { platform: AnyPlatform::Sim(sim), description, live: false }
    }

    /// A human description of the source.
    pub(crate) fn describe(&self) -> &str {
        &self.description
    }

    /// Whether this is the running kernel's tree (not a capture or a profile).
    pub(crate) fn is_live(&self) -> bool {
        self.live
    }
}
