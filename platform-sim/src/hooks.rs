//! What tests and tools can do to, and see of, the simulated kernel's debugger, SMI and
//! profiler state, and a stand-in for a wave memory access (address watches).

use hsakmt_core::uapi::kfd_runtime_info;

use crate::SimPlatform;
use crate::gpu::watch::WatchAccess;

/// One address watch point a debugger set (`DBG_TRAP_SET_NODE_ADDRESS_WATCH`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressWatch {
    /// The GPU.
    pub gpu_id: u32,
    /// The watch id (0..4).
    pub id: u32,
    /// The watched address.
    pub address: u64,
    /// The address mask.
    pub mask: u32,
    /// `KFD_DBG_TRAP_ADDRESS_WATCH_MODE_*`.
    pub mode: u32,
}

/// The simulated kernel's debug state of the process, for tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DebugSnapshot {
    /// Whether a debug session is on (`debug_trap_enabled`).
    pub enabled: bool,
    /// The runtime info (`r_debug`, runtime state, trap temporaries).
    pub runtime: kfd_runtime_info,
    /// Exceptions the debugger subscribed to.
    pub exception_enable_mask: u64,
    /// Raised exceptions of the process, its devices and its queues together.
    pub raised: u64,
    /// `KFD_DBG_TRAP_FLAG_*` set.
    pub flags: u32,
    /// The wave launch mode set.
    pub launch_mode: u32,
}

impl SimPlatform {
    /// The simulated kernel's debug state of the process.
    #[must_use]
    pub fn debug_state(&self) -> DebugSnapshot {
        let s = self.kfd.debug.lock();
        DebugSnapshot {
            enabled: s.enabled,
            runtime: s.runtime,
            exception_enable_mask: s.exception_enable_mask,
            raised: s.all_raised(),
            flags: s.flags,
            launch_mode: s.launch_mode,
        }
    }

    /// The address watches the debugger set, by GPU and id.
    #[must_use]
    pub fn address_watches(&self) -> Vec<AddressWatch> {
        let s = self.kfd.debug.lock();
        s.watches
            .iter()
            .map(|(&(gpu_id, id), w)| AddressWatch {
                gpu_id,
                id,
                address: w.address,
                mask: w.mask,
                mode: w.mode,
            })
            .collect()
    }

    /// Queue `queue_id` on GPU `gpu_id` makes the access `access` (`(address, len, kind)`), as
    /// a wave of the ISA interpreter would: when an armed address watch covers it (a debug
    /// session whose trap mask enables address watches), the queue raises
    /// `EC_QUEUE_WAVE_TRAP` to the debugger and the watch id is returned. (Host kernels make
    /// no wave accesses; this stands in for one.)
    pub fn watch_access(
        &self,
        gpu_id: u32,
        queue_id: u32,
        access: (u64, u64, WatchAccess),
    ) -> Option<u32> {
        self.kfd.debug.watch_access(&self.kfd.files, gpu_id, queue_id, access)
    }

    /// The kernel evicts the process's queues (memory moved under them, `trigger` a
    /// `KFD_QUEUE_EVICTION_*` reason): they stop executing and every GPU's SMI clients see
    /// `QUEUE_EVICTION`.
    pub fn evict_queues(&self, trigger: u32) {
        self.kfd.evict_queues(trigger);
    }

    /// The kernel restores queues it evicted: they resume and SMI clients see
    /// `QUEUE_RESTORE`.
    pub fn restore_queues(&self) {
        self.kfd.restore_queues();
    }

    /// Whether the process holds GPU `gpu_id` for profiling (`PROFILER` `PMC` lock), and with
    /// perfcount forced on.
    #[must_use]
    pub fn profiler_lock(&self, gpu_id: u32) -> Option<bool> {
        self.kfd.profiler_lock(gpu_id)
    }

    /// Pipes and SMI streams open in the simulated process.
    #[must_use]
    pub fn open_files(&self) -> usize {
        self.kfd.files.count()
    }

    /// SMI clients still open, on every GPU.
    #[must_use]
    pub fn smi_clients(&self) -> usize {
        self.kfd.smi.open_clients()
    }

    /// Whether `AMDKFD_IOC_CREATE_PROCESS` made the descriptor's process a secondary one.
    #[must_use]
    pub fn is_secondary_process(&self) -> bool {
        self.kfd.is_secondary()
    }
}
