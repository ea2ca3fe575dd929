//! The driver registry: detection registers every driver whose initialisation succeeds and
//! records, for every one that fails, why — nothing is hidden.

use super::agent::{AgentId, AgentInfo, DriverId};
use super::api::{Driver, DriverError};
use super::policy::{self, Choice, DriverKind, DriverSummary, Policy, PolicyError};

pub use crate::config::DEFAULT_DRIVERS;

/// What detection found for one candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Detection {
    /// The candidate.
    pub kind: DriverKind,
    /// Its registry id, or why it could not be used.
    pub outcome: Result<DriverId, DriverError>,
}

/// Drivers that initialised, in registration order, plus the detection report.
pub struct Registry<'a, const N: usize = DEFAULT_DRIVERS> {
    drivers: heapless::Vec<&'a dyn Driver, N>,
    report: heapless::Vec<Detection, N>,
}

impl<const N: usize> core::fmt::Debug for Registry<'_, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Registry").field("report", &self.report).finish_non_exhaustive()
    }
}

impl<const N: usize> Default for Registry<'_, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a, const N: usize> Registry<'a, N> {
    /// An empty registry.
    #[must_use]
    pub const fn new() -> Self {
        Self { drivers: heapless::Vec::new(), report: heapless::Vec::new() }
    }

    /// Initialises `driver` and registers it when that succeeds; either way the outcome is
    /// recorded in the [report](Self::report). Returns the outcome.
    ///
    /// # Errors
    /// The driver's initialisation error, or [`DriverError::CapacityExhausted`] when the
    /// registry is full (the driver is then shut down again).
    pub fn detect(&mut self, driver: &'a dyn Driver) -> Result<DriverId, DriverError> {
        let kind = driver.kind();
        let outcome = match driver.init() {
            Ok(()) => match u8::try_from(self.drivers.len()) {
                Ok(id) if self.drivers.push(driver).is_ok() => Ok(DriverId(id)),
                _ => {
                    let _ = driver.shutdown();
                    Err(DriverError::CapacityExhausted("driver in the registry"))
                }
            },
            Err(e) => Err(e),
        };
        // The report has the same capacity as the registry; a report entry only fails to fit
        // when the registry was already full, which the outcome above says.
        let _ = self.report.push(Detection { kind, outcome: outcome.clone() });
        outcome
    }

    /// Records a candidate that could not even be constructed (e.g. no `/dev/kfd`), so the
    /// report says why it is missing.
    pub fn record_unavailable(&mut self, kind: DriverKind, why: DriverError) {
        let _ = self.report.push(Detection { kind, outcome: Err(why) });
    }

    /// What detection found, in detection order.
    #[must_use]
    pub fn report(&self) -> &[Detection] {
        &self.report
    }

    /// The registered drivers.
    pub fn drivers(&self) -> impl ExactSizeIterator<Item = (DriverId, &'a dyn Driver)> + '_ {
        self.drivers.iter().enumerate().map(|(i, d)| (DriverId(u8::try_from(i).unwrap_or(0)), *d))
    }

    /// The driver registered as `id`.
    #[must_use]
    pub fn driver(&self, id: DriverId) -> Option<&'a dyn Driver> {
        self.drivers.get(usize::from(id.0)).copied()
    }

    /// The registered driver of kind `kind`, if any.
    #[must_use]
    pub fn by_kind(&self, kind: DriverKind) -> Option<(DriverId, &'a dyn Driver)> {
        self.drivers().find(|(_, d)| d.kind() == kind)
    }

    /// Calls `f` for every agent of every registered driver (agents carry their driver's id);
    /// stops early when `f` returns `false`.
    pub fn for_each_agent(&self, mut f: impl FnMut(DriverId, &AgentInfo) -> bool) {
        for (id, d) in self.drivers() {
            for i in 0..d.agent_count() {
                if let Some(mut a) = d.agent(i) {
                    a.id.driver = id;
                    if !f(id, &a) {
                        return;
                    }
                }
            }
        }
    }

    /// The agent `id`.
    #[must_use]
    pub fn agent(&self, id: AgentId) -> Option<AgentInfo> {
        let d = self.driver(id.driver)?;
        (0..d.agent_count()).filter_map(|i| d.agent(i)).find(|a| a.id.node == id.node).map(
            |mut a| {
                a.id.driver = id.driver;
                a
            },
        )
    }

    /// Summaries of the registered drivers, for the selection policy.
    #[must_use]
    pub fn summaries(&self) -> heapless::Vec<DriverSummary, N> {
        let mut out = heapless::Vec::new();
        for (_, d) in self.drivers() {
            let mut s = DriverSummary::new(d.kind(), d.peer_links());
            for a in (0..d.agent_count()).filter_map(|i| d.agent(i)) {
                s.add(&a);
            }
            let _ = out.push(s);
        }
        out
    }

    /// Chooses a driver by `policy` (the value of `HSAKMT_DRIVER`, when given as `env`,
    /// overrides it).
    ///
    /// # Errors
    /// A [`PolicyError`] saying why nothing fits.
    pub fn choose(
        &self,
        policy: Policy,
        env: Option<&[u8]>,
    ) -> Result<(Choice, &'a dyn Driver), PolicyError> {
        let summaries = self.summaries();
        let choice = policy::choose(policy, env, &summaries)?;
        let driver = self.drivers.get(choice.index).copied().ok_or(PolicyError::NoDriver)?;
        Ok((choice, driver))
    }
}
