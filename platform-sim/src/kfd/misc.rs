//! The remaining ioctls of the emulated `/dev/kfd`, as `kfd_chardev.c` answers them:
//!
//! - `GET_TILE_CONFIG` (`kfd_ioctl_get_tile_config`): unknown gpu_id `EINVAL`; the counts are
//!   cut to the 32 tile and 16 macro-tile modes amdgpu keeps, whose values are 0 on gfx9 and
//!   later ("not set from GFX9 onwards", as are `num_banks` and `num_ranks`); `gb_addr_config`
//!   comes from the profile ([`gb_addr_config`]).
//! - `SMI_EVENTS`: unknown gpu_id `EINVAL`; else a new stream ([`super::smi`]).
//! - `CREATE_PROCESS` (1.19): on a secondary process `EINVAL`; else the descriptor's process
//!   becomes a new, empty one. The primary's buffers, queues, events and debug state can no
//!   longer be reached through the descriptor; the simulator ends them at once (amdkfd keeps
//!   them until the process exits — nothing can tell the difference but memory accounting).
//!   A secondary process has no VM until it acquires one, and cannot be debugged.
//! - `PROFILER` (1.23): `VERSION` answers 1; `PMC` needs `CAP_PERFMON` (`EPERM`, see
//!   [`super::Privileges`]), then locks or unlocks the GPU for this process (`EALREADY` when it
//!   holds it, `EINVAL` for an unknown gpu_id or an unlock it does not hold) and records the
//!   perfcount setting; `PTL_CONTROL` answers `ENODEV` for an unknown gpu_id and `EOPNOTSUPP`
//!   otherwise (only gfx 9.4.4 has the peak-TOPS limiter); other operations `EINVAL`.
//! - `SVM` goes to the memory model; a `SET_ATTR` that changes a range's prefetch location
//!   migrates it, which SMI clients see as `MIGRATE_START`/`MIGRATE_END` (trigger prefetch).

use std::collections::BTreeMap;

use hsakmt_core::error::Errno;
use hsakmt_core::uapi::*;

use super::smi::Migration;
use super::{KfdModel, lock};

/// Tile modes amdgpu keeps (`tile_mode_array`).
const TILE_MODES: u32 = 32;
/// Macro-tile modes amdgpu keeps (`macrotile_mode_array`).
const MACRO_TILE_MODES: u32 = 16;

/// Vega 10's golden `GB_ADDR_CONFIG` (`VEGA10_GB_ADDR_CONFIG_GOLDEN`, amdgpu `gfx_v9_0.c`).
pub(crate) const GFX9_GB_ADDR_CONFIG_GOLDEN: u32 = 0x2a11_4042;
/// `GB_ADDR_CONFIG.NUM_SHADER_ENGINES` (log2), bits 19..20.
const NUM_SHADER_ENGINES_SHIFT: u32 = 19;
const NUM_SHADER_ENGINES_MASK: u32 = 0x3 << NUM_SHADER_ENGINES_SHIFT;

/// The `gb_addr_config` a simulated GPU reports: Vega 10's golden value with its shader-engine
/// count replaced by the profile's (`array_count / simd_arrays_per_engine` per XCC, as log2).
/// The other fields (pipes, pipe interleave, banks, render backends) are not in the sysfs
/// topology and keep the golden value.
pub(crate) fn gb_addr_config(array_count_per_xcc: u32, arrays_per_engine: u32) -> u32 {
    let engines = array_count_per_xcc.checked_div(arrays_per_engine).unwrap_or(1).max(1);
    let log2 = engines.ilog2().min(3);
    (GFX9_GB_ADDR_CONFIG_GOLDEN & !NUM_SHADER_ENGINES_MASK) | (log2 << NUM_SHADER_ENGINES_SHIFT)
}

/// Profiler locks (`kfd_dev.profiler_process`) and perfcount settings per GPU.
#[derive(Debug, Default)]
pub(crate) struct Profiler {
    /// gpu_id → perfcount enabled, for the GPUs this process locked.
    locked: BTreeMap<u32, bool>,
}

impl KfdModel {
    /// `AMDKFD_IOC_GET_TILE_CONFIG`.
    pub(crate) fn tile_config(
        &self,
        args: &mut kfd_ioctl_get_tile_config_args,
        tile_config: &mut [u32],
        macro_tile_config: &mut [u32],
    ) -> Result<(), Errno> {
        let g = self.gpu(args.gpu_id)?;
        args.gb_addr_config = gb_addr_config(g.facts.array_count, g.facts.simd_arrays_per_engine);
        args.num_banks = 0;
        args.num_ranks = 0;
        let tiles = u32::try_from(tile_config.len()).unwrap_or(u32::MAX).min(TILE_MODES);
        let macros =
            u32::try_from(macro_tile_config.len()).unwrap_or(u32::MAX).min(MACRO_TILE_MODES);
        tile_config.iter_mut().take(tiles as usize).for_each(|t| *t = 0);
        macro_tile_config.iter_mut().take(macros as usize).for_each(|t| *t = 0);
        args.num_tile_configs = tiles;
        args.num_macro_tile_configs = macros;
        Ok(())
    }

    /// `AMDKFD_IOC_SMI_EVENTS`.
    pub(crate) fn smi_events(&self, args: &mut kfd_ioctl_smi_events_args) -> Result<(), Errno> {
        self.gpu(args.gpuid)?;
        let client = self.smi.open(args.gpuid, self.process_id());
        args.anon_fd = self.files.smi(client);
        Ok(())
    }

    /// `AMDKFD_IOC_CREATE_PROCESS`.
    pub(crate) fn create_process(&self) -> Result<(), Errno> {
        if self.is_secondary() {
            return Err(Errno::EINVAL);
        }
        self.events.end_all();
        self.end_process_state();
        lock(&self.session).vms.clear();
        self.secondary.store(true, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// `AMDKFD_IOC_PROFILER`.
    pub(crate) fn profiler(&self, args: &mut kfd_ioctl_profiler_args) -> Result<(), Errno> {
        match args.op {
            KFD_IOC_PROFILER_VERSION => {
                args.op_args = KFD_IOC_PROFILER_VERSION_NUM.into();
                Ok(())
            }
            KFD_IOC_PROFILER_PMC => {
                if !self.privileges.perfmon {
                    return Err(Errno::EPERM);
                }
                let pmc = args.op_args.pmc();
                self.gpu(pmc.gpu_id)?;
                let mut p = lock(&self.profiler);
                match (pmc.lock, p.locked.contains_key(&pmc.gpu_id)) {
                    (1, true) => return Err(Errno::EALREADY),
                    (1, false) => {
                        p.locked.insert(pmc.gpu_id, false);
                    }
                    (0, true) => {
                        p.locked.remove(&pmc.gpu_id);
                    }
                    _ => return Err(Errno::EINVAL),
                }
                if let Some(perf) = p.locked.get_mut(&pmc.gpu_id) {
                    *perf = pmc.perfcount_enable != 0;
                }
                Ok(())
            }
            KFD_IOC_PROFILER_PTL_CONTROL => {
                self.gpu(args.op_args.ptl().gpu_id).map_err(|_| Errno::ENODEV)?;
                Err(Errno::EOPNOTSUPP)
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// Whether this process holds GPU `gpu_id` for profiling, and with perfcount on.
    pub(crate) fn profiler_lock(&self, gpu_id: u32) -> Option<bool> {
        lock(&self.profiler).locked.get(&gpu_id).copied()
    }

    /// `AMDKFD_IOC_SVM`, with the migrations a prefetch-location change causes.
    pub(crate) fn svm(
        &self,
        args: &kfd_ioctl_svm_args,
        attrs: &mut [kfd_ioctl_svm_attribute],
    ) -> Result<(), Errno> {
        let prefetch = attrs
            .iter()
            .rev()
            .find(|a| a.r#type == KFD_IOCTL_SVM_ATTR_PREFETCH_LOC)
            .map(|a| a.value);
        let mut memory = lock(&self.memory);
        let before = match (args.op, prefetch) {
            (KFD_IOCTL_SVM_OP_SET_ATTR, Some(_)) => Some(memory.svm_location(args.start_addr)),
            _ => None,
        };
        memory.svm(args, attrs)?;
        let preferred = memory.svm_preferred(args.start_addr);
        drop(memory);
        let (Some(from), Some(to)) = (before, prefetch) else { return Ok(()) };
        let at = |loc: u32| if loc == KFD_IOCTL_SVM_LOCATION_UNDEFINED { 0 } else { loc };
        let (from, to) = (at(from), at(to));
        if from == to {
            return Ok(());
        }
        let m = Migration {
            pid: self.process_id(),
            start: args.start_addr >> 12,
            pages: args.size >> 12,
            from,
            to,
            prefetch_loc: to,
            preferred_loc: preferred,
            trigger: KFD_MIGRATE_TRIGGER_PREFETCH,
        };
        // The device doing the migration reports it: the destination, or the source when
        // pages go back to system memory.
        let device = if to != 0 { to } else { from };
        self.smi.migration_start(device, &m);
        self.smi.migration_end(device, &m, 0);
        Ok(())
    }

    /// Evicts the process's queues on every GPU (a TTM move, a userptr invalidation, …):
    /// each GPU's SMI clients see `QUEUE_EVICTION` with `trigger`; the queues stop until
    /// [`KfdModel::restore_queues`].
    pub(crate) fn evict_queues(&self, trigger: u32) {
        for qid in self.gpu.queue_ids() {
            if let Some(q) = self.gpu.queue(qid) {
                q.set_evicted(true);
            }
        }
        for g in &self.gpus {
            self.smi.queue_eviction(g.gpu_id, self.process_id(), trigger);
        }
    }

    /// Restores queues evicted by [`KfdModel::evict_queues`]: `QUEUE_RESTORE` on every GPU.
    pub(crate) fn restore_queues(&self) {
        for qid in self.gpu.queue_ids() {
            if let Some(q) = self.gpu.queue(qid) {
                q.set_evicted(false);
            }
        }
        for g in &self.gpus {
            self.smi.queue_restore(g.gpu_id, self.process_id(), false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gb_addr_config_keeps_the_golden_value_for_four_engines() {
        // Vega 10 (MI25): 4 shader engines of one array each.
        assert_eq!(gb_addr_config(4, 1), GFX9_GB_ADDR_CONFIG_GOLDEN);
        // MI308X XCC: 4 arrays, one per engine → 4 engines, the same field.
        assert_eq!(gb_addr_config(4, 1) >> 19 & 3, 2);
        // MI210: 8 arrays → 8 engines (log2 3).
        assert_eq!(gb_addr_config(8, 1) >> 19 & 3, 3);
        // Nonsense counts fall back to one engine.
        assert_eq!(gb_addr_config(0, 0) >> 19 & 3, 0);
    }
}
