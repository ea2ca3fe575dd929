//! # hsakmt-sim
//!
//! The hsakmt-rs platform as an in-process model of amdkfd and a GPU, so every code path of
//! `hsakmt-core` runs without hardware. The topology comes from real machines' sysfs trees
//! ([`Profile`]s embedded from `platform-sim/profiles/`, or any directory).
#![deny(missing_docs)]

mod profile;
mod sysfs;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

pub use profile::{
    DEFAULT_PROFILE, Profile, UnknownProfile, parse_file_path, profile_description, profile_names,
    relative_path,
};

/// KFD ioctl interface version the simulator reports unless configured otherwise (Linux 7.2/7.3).
pub const DEFAULT_KFD_VERSION: (u32, u32) = (1, 23);

/// Builder for a [`SimPlatform`].
#[derive(Debug, Clone)]
pub struct SimBuilder {
    profile: Option<Profile>,
    kfd_version: (u32, u32),
    env: HashMap<String, String>,
    inherit_env: bool,
    hidden_nodes: HashSet<u32>,
}

impl Default for SimBuilder {
    fn default() -> Self {
        Self {
            profile: None,
            kfd_version: DEFAULT_KFD_VERSION,
            env: HashMap::new(),
            inherit_env: false,
            hidden_nodes: HashSet::new(),
        }
    }
}

impl SimBuilder {
    /// Uses `profile` as the topology (default: [`DEFAULT_PROFILE`]).
    #[must_use]
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = Some(profile);
        self
    }

    /// The KFD ioctl version `AMDKFD_IOC_GET_VERSION` answers (default 1.23).
    #[must_use]
    pub fn kfd_version(mut self, major: u32, minor: u32) -> Self {
        self.kfd_version = (major, minor);
        self
    }

    /// Sets an environment variable as the library sees it (the process environment is not
    /// consulted unless [`SimBuilder::inherit_env`] is set).
    #[must_use]
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }

    /// Also look variables up in the real process environment (after the ones set here).
    #[must_use]
    pub fn inherit_env(mut self, inherit: bool) -> Self {
        self.inherit_env = inherit;
        self
    }

    /// Makes every file of node `node` fail with `EPERM`, as the kernel does for a GPU the
    /// caller's device cgroup hides (a container).
    #[must_use]
    pub fn hide_node(mut self, node: u32) -> Self {
        self.hidden_nodes.insert(node);
        self
    }

    /// Builds the platform.
    #[must_use]
    pub fn build(self) -> SimPlatform {
        SimPlatform {
            profile: Arc::new(self.profile.unwrap_or_else(Profile::default_profile)),
            kfd_version: self.kfd_version,
            env: self.env,
            inherit_env: self.inherit_env,
            hidden_nodes: self.hidden_nodes,
            epoch: Instant::now(),
        }
    }
}

/// The simulated platform: sysfs topology, host services and (in later layers) the emulated
/// `/dev/kfd`.
#[derive(Debug)]
pub struct SimPlatform {
    profile: Arc<Profile>,
    kfd_version: (u32, u32),
    env: HashMap<String, String>,
    inherit_env: bool,
    hidden_nodes: HashSet<u32>,
    epoch: Instant,
}

impl SimPlatform {
    /// A builder with the defaults (MI308X profile, KFD 1.23, empty environment).
    #[must_use]
    pub fn builder() -> SimBuilder {
        SimBuilder::default()
    }

    /// The simulator over the default profile with every other setting at its default.
    #[must_use]
    pub fn new() -> Self {
        SimBuilder::default().build()
    }

    /// The topology profile.
    #[must_use]
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The KFD version reported by `GET_VERSION`.
    #[must_use]
    pub fn kfd_version(&self) -> (u32, u32) {
        self.kfd_version
    }
}

impl Default for SimPlatform {
    fn default() -> Self {
        Self::new()
    }
}

impl hsakmt_core::platform::Host for SimPlatform {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn process_id(&self) -> u32 {
        std::process::id()
    }

    fn env_var(&self, name: &str, buf: &mut [u8]) -> Option<usize> {
        let owned;
        let value = match self.env.get(name) {
            Some(v) => v.as_str(),
            None if self.inherit_env => {
                owned = std::env::var(name).ok()?;
                owned.as_str()
            }
            None => return None,
        };
        let n = value.len().min(buf.len());
        buf[..n].copy_from_slice(&value.as_bytes()[..n]);
        Some(value.len())
    }
}
