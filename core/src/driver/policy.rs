//! Driver selection: explicit (API or `HSAKMT_DRIVER`), GPU-first, performance-first and
//! feature-first, each with a printable reason.

use core::fmt;

use super::agent::{AgentFeatures, AgentInfo, AgentKind};

/// The drivers this library knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DriverKind {
    /// amdkfd through `/dev/kfd`.
    Kfd,
    /// The in-process simulated amdkfd + GPU.
    Sim,
    /// The host CPU, executing AQL packets on host threads.
    Host,
}

impl DriverKind {
    /// Every kind, in the default preference order (GPU hardware, simulated GPU, CPU).
    pub const ALL: [DriverKind; 3] = [Self::Kfd, Self::Sim, Self::Host];

    /// The name used by `HSAKMT_DRIVER` and in reports.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Kfd => "kfd",
            Self::Sim => "sim",
            Self::Host => "host",
        }
    }

    /// Parses `kfd`, `sim` or `host` (ASCII case-insensitive, surrounding blanks ignored).
    ///
    /// # Errors
    /// [`PolicyError::UnknownDriver`] for anything else.
    pub fn parse(text: &[u8]) -> Result<Self, PolicyError> {
        let t = text.trim_ascii();
        Self::ALL
            .into_iter()
            .find(|k| t.eq_ignore_ascii_case(k.name().as_bytes()))
            .ok_or(PolicyError::UnknownDriver)
    }

    /// Whether the driver models hardware rather than being it. Simulated drivers rank below
    /// every hardware driver in the automatic policies.
    #[must_use]
    pub const fn is_simulated(self) -> bool {
        matches!(self, Self::Sim)
    }
}

impl fmt::Display for DriverKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The environment variable that overrides the policy with an explicit driver.
pub const DRIVER_ENV: &str = "HSAKMT_DRIVER";

/// How to pick one driver among the registered ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Policy {
    /// This driver, or nothing.
    Explicit(DriverKind),
    /// The GPU driver when usable, else the simulator, else the host CPU (what `hsakmt run`
    /// does).
    GpuFirst,
    /// The highest [performance score](DriverSummary::performance_score); hardware before
    /// simulation.
    PerformanceFirst,
    /// The driver whose agents offer every required feature and then the most features;
    /// hardware before simulation.
    FeatureFirst(AgentFeatures),
}

/// What a policy knows about one registered driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DriverSummary {
    /// Which driver.
    pub kind: DriverKind,
    /// GPU agents.
    pub gpus: u32,
    /// CPU agents.
    pub cpus: u32,
    /// Sum over GPU agents of compute units × max clock (MHz).
    pub gpu_cu_mhz: u64,
    /// Sum over CPU agents of cores × max clock (MHz).
    pub cpu_core_mhz: u64,
    /// Local memory of all GPU agents, bytes.
    pub local_memory: u64,
    /// GPU-to-GPU links (XGMI or PCIe peer) reported by the topology.
    pub peer_links: u32,
    /// Union of the agents' features.
    pub features: AgentFeatures,
    /// Features every GPU agent has (all features when there is no GPU).
    pub common_gpu_features: AgentFeatures,
}

/// FP32 lanes of a GCN/CDNA/RDNA compute unit (4 × SIMD16, or 2 × SIMD32).
pub const LANES_PER_CU: u64 = 64;
/// FP32 lanes of a CPU core (one 256-bit vector unit).
pub const LANES_PER_CPU_CORE: u64 = 8;

impl DriverSummary {
    /// An empty summary of driver `kind` with `peer_links` GPU-to-GPU links.
    #[must_use]
    pub const fn new(kind: DriverKind, peer_links: u32) -> Self {
        Self {
            kind,
            gpus: 0,
            cpus: 0,
            gpu_cu_mhz: 0,
            cpu_core_mhz: 0,
            local_memory: 0,
            peer_links,
            features: AgentFeatures::empty(),
            common_gpu_features: AgentFeatures::all(),
        }
    }

    /// Counts one agent in.
    pub fn add(&mut self, a: &AgentInfo) {
        self.features |= a.features;
        // Two 32-bit factors: the product fits 64 bits.
        let work = u64::from(a.compute_units).saturating_mul(u64::from(a.max_clock_mhz));
        match a.kind {
            AgentKind::Gpu => {
                self.gpus = self.gpus.saturating_add(1);
                self.gpu_cu_mhz = self.gpu_cu_mhz.saturating_add(work);
                self.local_memory = self.local_memory.saturating_add(a.local_memory_bytes);
                self.common_gpu_features &= a.features;
            }
            AgentKind::Cpu => {
                self.cpus = self.cpus.saturating_add(1);
                self.cpu_core_mhz = self.cpu_core_mhz.saturating_add(work);
            }
        }
    }

    /// Summarises a driver's agents; `peer_links` is counted by the caller from the topology.
    pub fn from_agents<'a>(
        kind: DriverKind,
        agents: impl IntoIterator<Item = &'a AgentInfo>,
        peer_links: u32,
    ) -> Self {
        let mut s = Self::new(kind, peer_links);
        for a in agents {
            s.add(a);
        }
        s
    }

    /// An estimate of peak throughput plus memory and interconnect:
    /// `lanes × MHz` of every agent (64 FP32 lanes per GPU compute unit, 8 per CPU core),
    /// plus 16 points per GiB of device memory, plus 1024 per GPU peer link. Only the order
    /// matters: it ranks a machine of many large GPUs above one small GPU, and any GPU above
    /// the host CPU.
    #[must_use]
    pub fn performance_score(&self) -> u64 {
        let gpu = self.gpu_cu_mhz.saturating_mul(LANES_PER_CU);
        let cpu = self.cpu_core_mhz.saturating_mul(LANES_PER_CPU_CORE);
        let memory = (self.local_memory >> 30).saturating_mul(16);
        let links = u64::from(self.peer_links).saturating_mul(1024);
        gpu.saturating_add(cpu).saturating_add(memory).saturating_add(links)
    }
}

/// Why a driver was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Reason {
    /// Named by the caller.
    Explicit,
    /// Named by `HSAKMT_DRIVER`.
    Environment,
    /// The first usable one in GPU-first order; `skipped` lists how many preferred kinds were
    /// not usable.
    GpuFirst {
        /// Preferred kinds that were not registered.
        skipped: u8,
    },
    /// The highest performance score.
    Performance {
        /// Its score.
        score: u64,
        /// The runner-up's score, if any.
        runner_up: Option<u64>,
    },
    /// The most features with every required one.
    Features {
        /// Features offered.
        count: u32,
    },
}

/// The chosen driver and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Choice {
    /// Index into the summaries given to [`choose`].
    pub index: usize,
    /// Its kind.
    pub kind: DriverKind,
    /// Why.
    pub reason: Reason,
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "driver `{}`: ", self.kind)?;
        match self.reason {
            Reason::Explicit => f.write_str("requested explicitly"),
            Reason::Environment => write!(f, "requested by {DRIVER_ENV}"),
            Reason::GpuFirst { skipped: 0 } => f.write_str("the preferred driver (GPU first)"),
            Reason::GpuFirst { .. } if self.kind == DriverKind::Sim => f.write_str(
                "no usable /dev/kfd, so the simulated GPU is used (GPU first, then simulator)",
            ),
            Reason::GpuFirst { .. } => {
                f.write_str("no usable GPU driver, so the host CPU is used (GPU first)")
            }
            Reason::Performance { score, runner_up: Some(r) } => {
                write!(f, "highest performance score {score} (next {r})")
            }
            Reason::Performance { score, runner_up: None } => {
                write!(f, "performance score {score}, the only candidate")
            }
            Reason::Features { count } => {
                write!(f, "offers every required feature and {count} in all")
            }
        }
    }
}

/// Why no driver could be chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PolicyError {
    /// No driver is registered.
    NoDriver,
    /// The requested driver is not registered (not usable here).
    NotAvailable(DriverKind),
    /// `HSAKMT_DRIVER` names no known driver.
    UnknownDriver,
    /// No driver offers the required features.
    MissingFeatures,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoDriver => f.write_str("no driver is usable on this machine"),
            Self::NotAvailable(k) => write!(f, "the `{k}` driver is not usable on this machine"),
            Self::UnknownDriver => {
                write!(f, "{DRIVER_ENV} must be one of `kfd`, `sim`, `host`")
            }
            Self::MissingFeatures => f.write_str("no driver offers every required feature"),
        }
    }
}

impl crate::error::Error for PolicyError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            Self::NoDriver | Self::NotAvailable(_) => crate::error::ErrorKind::NoDevice,
            Self::UnknownDriver => crate::error::ErrorKind::InvalidArgument,
            Self::MissingFeatures => crate::error::ErrorKind::NotSupported,
        }
    }
}

/// Chooses among `drivers` by `policy`; `env` is the value of [`DRIVER_ENV`] when set, which
/// overrides every policy.
///
/// # Errors
/// A [`PolicyError`] saying why nothing fits.
pub fn choose(
    policy: Policy,
    env: Option<&[u8]>,
    drivers: &[DriverSummary],
) -> Result<Choice, PolicyError> {
    if let Some(value) = env {
        let kind = DriverKind::parse(value)?;
        return explicit(kind, drivers, Reason::Environment);
    }
    if drivers.is_empty() {
        return Err(PolicyError::NoDriver);
    }
    match policy {
        Policy::Explicit(kind) => explicit(kind, drivers, Reason::Explicit),
        Policy::GpuFirst => DriverKind::ALL
            .into_iter()
            .zip(0u8..)
            .find_map(|(kind, skipped)| {
                let index = drivers.iter().position(|d| d.kind == kind)?;
                Some(Choice { index, kind, reason: Reason::GpuFirst { skipped } })
            })
            .ok_or(PolicyError::NoDriver),
        Policy::PerformanceFirst => {
            let rank = |d: &DriverSummary| (!d.kind.is_simulated(), d.performance_score());
            let (index, best) = drivers
                .iter()
                .enumerate()
                .max_by_key(|(_, d)| rank(d))
                .ok_or(PolicyError::NoDriver)?;
            let runner_up = drivers
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != index)
                .map(|(_, d)| d.performance_score())
                .max();
            Ok(Choice {
                index,
                kind: best.kind,
                reason: Reason::Performance { score: best.performance_score(), runner_up },
            })
        }
        Policy::FeatureFirst(required) => {
            let (index, best) = drivers
                .iter()
                .enumerate()
                .filter(|(_, d)| d.features.contains(required))
                .max_by_key(|(_, d)| (!d.kind.is_simulated(), d.features.bits().count_ones()))
                .ok_or(PolicyError::MissingFeatures)?;
            Ok(Choice {
                index,
                kind: best.kind,
                reason: Reason::Features { count: best.features.bits().count_ones() },
            })
        }
    }
}

fn explicit(
    kind: DriverKind,
    drivers: &[DriverSummary],
    reason: Reason,
) -> Result<Choice, PolicyError> {
    drivers
        .iter()
        .position(|d| d.kind == kind)
        .map(|index| Choice { index, kind, reason })
        .ok_or(PolicyError::NotAvailable(kind))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    fn summary(
        kind: DriverKind,
        gpus: u32,
        cu: u32,
        mhz: u32,
        features: AgentFeatures,
    ) -> DriverSummary {
        DriverSummary {
            kind,
            gpus,
            cpus: 1,
            gpu_cu_mhz: u64::from(gpus * cu * mhz),
            cpu_core_mhz: 16 * 3000,
            local_memory: u64::from(gpus) << 34,
            peer_links: 0,
            features,
            common_gpu_features: features,
        }
    }

    #[test]
    fn env_overrides_and_is_validated() {
        let d = [summary(DriverKind::Sim, 8, 80, 1400, AgentFeatures::empty())];
        let c = choose(Policy::PerformanceFirst, Some(b" SIM\n"), &d).unwrap();
        assert_eq!((c.kind, c.reason), (DriverKind::Sim, Reason::Environment));
        assert_eq!(
            choose(Policy::GpuFirst, Some(b"kfd"), &d),
            Err(PolicyError::NotAvailable(DriverKind::Kfd))
        );
        assert_eq!(choose(Policy::GpuFirst, Some(b"cuda"), &d), Err(PolicyError::UnknownDriver));
        assert_eq!(choose(Policy::GpuFirst, None, &[]), Err(PolicyError::NoDriver));
    }

    #[test]
    fn gpu_first_prefers_hardware_then_sim_then_host() {
        let host = summary(DriverKind::Host, 0, 0, 0, AgentFeatures::AGENT_DISPATCH);
        let sim = summary(DriverKind::Sim, 32, 20, 1420, AgentFeatures::KERNEL_DISPATCH);
        let kfd = summary(DriverKind::Kfd, 1, 60, 2100, AgentFeatures::KERNEL_DISPATCH);
        let c = choose(Policy::GpuFirst, None, &[host, sim, kfd]).unwrap();
        assert_eq!((c.index, c.reason), (2, Reason::GpuFirst { skipped: 0 }));
        let c = choose(Policy::GpuFirst, None, &[host, sim]).unwrap();
        assert_eq!((c.kind, c.reason), (DriverKind::Sim, Reason::GpuFirst { skipped: 1 }));
        assert!(c.to_string().contains("simulated"), "{c}");
        let c = choose(Policy::GpuFirst, None, &[host]).unwrap();
        assert_eq!(c.kind, DriverKind::Host);
    }

    #[test]
    fn performance_ranks_hardware_first_then_score() {
        let host = summary(DriverKind::Host, 0, 0, 0, AgentFeatures::AGENT_DISPATCH);
        let sim = summary(DriverKind::Sim, 32, 20, 1420, AgentFeatures::KERNEL_DISPATCH);
        let small = summary(DriverKind::Kfd, 1, 8, 1000, AgentFeatures::KERNEL_DISPATCH);
        // The simulated MI308X box scores far higher than the host CPU, but is not hardware.
        assert!(sim.performance_score() > host.performance_score());
        let c = choose(Policy::PerformanceFirst, None, &[sim, host]).unwrap();
        assert_eq!(c.kind, DriverKind::Host);
        // A real small GPU beats the host CPU.
        assert!(small.performance_score() > host.performance_score());
        let c = choose(Policy::PerformanceFirst, None, &[host, small]).unwrap();
        assert_eq!(c.kind, DriverKind::Kfd);
        assert!(matches!(c.reason, Reason::Performance { runner_up: Some(_), .. }));
        // Only simulation: it is chosen.
        let c = choose(Policy::PerformanceFirst, None, &[sim]).unwrap();
        assert_eq!(c.kind, DriverKind::Sim);
    }

    #[test]
    fn feature_first_requires_and_counts() {
        let rich = AgentFeatures::KERNEL_DISPATCH | AgentFeatures::SVM | AgentFeatures::DMA_COPY;
        let host = summary(DriverKind::Host, 0, 0, 0, AgentFeatures::AGENT_DISPATCH);
        let kfd = summary(DriverKind::Kfd, 1, 8, 1000, rich);
        let c = choose(Policy::FeatureFirst(AgentFeatures::SVM), None, &[host, kfd]).unwrap();
        assert_eq!((c.kind, c.reason), (DriverKind::Kfd, Reason::Features { count: 3 }));
        assert_eq!(
            choose(Policy::FeatureFirst(AgentFeatures::ECC), None, &[host, kfd]),
            Err(PolicyError::MissingFeatures)
        );
        let c = choose(Policy::FeatureFirst(AgentFeatures::empty()), None, &[host, kfd]).unwrap();
        assert_eq!(c.kind, DriverKind::Kfd);
    }

    #[test]
    fn driver_names_round_trip() {
        for k in DriverKind::ALL {
            assert_eq!(DriverKind::parse(k.name().as_bytes()), Ok(k));
        }
        assert_eq!(DriverKind::parse(b""), Err(PolicyError::UnknownDriver));
    }
}
