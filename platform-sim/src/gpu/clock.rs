//! The simulated GPUs' clock: one counter that `AMDKFD_IOC_GET_CLOCK_COUNTERS` reports and that
//! the engines write where a packet asks for a timestamp (PM4 `RELEASE_MEM` with `DATA_SEL` 3,
//! SDMA `TIMESTAMP`), so a GPU timestamp and the library's clock sample compare as on hardware.

use std::time::Instant;

/// The GPU counter's rate: 100 MHz, the reference clock amdgpu reports for gfx9+
/// `GPU_TIMESTAMP` (`gpu_counter_freq` 100000 kHz).
pub(crate) const GPU_COUNTER_HZ: u64 = 100_000_000;

/// The simulated machine's clocks, counting from its creation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GpuClock {
    epoch: Instant,
}

impl GpuClock {
    /// A clock starting now.
    pub(crate) fn new() -> Self {
        GpuClock { epoch: Instant::now() }
    }

    /// Nanoseconds since the clock started (the CPU and system counters).
    pub(crate) fn nanos(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// The GPU counter: [`GPU_COUNTER_HZ`] ticks per second since the clock started.
    pub(crate) fn counter(&self) -> u64 {
        self.nanos() / (1_000_000_000 / GPU_COUNTER_HZ)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counter runs at 100 MHz: a tenth of the nanoseconds, never backwards.
    #[test]
    fn counter_is_a_tenth_of_the_nanoseconds() {
        let c = GpuClock::new();
        let (t0, n0) = (c.counter(), c.nanos());
        std::thread::sleep(std::time::Duration::from_millis(2));
        let (t1, n1) = (c.counter(), c.nanos());
        assert!(t1 >= t0 + 200_000 - 1, "2 ms are at least 200000 ticks: {t0} -> {t1}");
        assert!(t0 <= n0 / 10 + 1 && t1 <= n1 / 10);
    }
}
