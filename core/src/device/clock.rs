//! GPU clock counters (`hsaKmtGetClockCounters`).

use super::{Error, Kfd, MemoryStorage};
use crate::memory;
use crate::platform::{Ioctl, Platform};
use crate::uapi::kfd_ioctl_get_clock_counters_args;

/// One sample of a GPU's counter next to the CPU and system clocks
/// (`AMDKFD_IOC_GET_CLOCK_COUNTERS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ClockSample {
    /// The GPU's timestamp counter.
    pub gpu: u64,
    /// The CPU timestamp (`CLOCK_MONOTONIC_RAW`, ns, on current kernels).
    pub cpu: u64,
    /// The system timestamp (`CLOCK_BOOTTIME`, ns, on current kernels).
    pub system: u64,
    /// Frequency of the system timestamp, Hz.
    pub system_frequency: u64,
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// Samples GPU node `node`'s clock counters.
    ///
    /// # Errors
    /// [`memory::Error::NotAGpu`] for a node without a usable GPU; [`Error::Ioctl`];
    /// [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn clock_counters(&self, node: u32) -> Result<ClockSample, Error> {
        let gpu_id = self
            .with_topology(|t| t.node_by_user_id(node).and_then(|n| n.gpu_id()))?
            .filter(|g| *g != 0)
            .ok_or(Error::Memory(memory::Error::NotAGpu { node }))?;
        let mut args = kfd_ioctl_get_clock_counters_args { gpu_id, ..Default::default() };
        self.ioctl(&mut Ioctl::GetClockCounters(&mut args))?;
        Ok(ClockSample {
            gpu: args.gpu_clock_counter,
            cpu: args.cpu_clock_counter,
            system: args.system_clock_counter,
            system_frequency: args.system_clock_freq,
        })
    }
}
