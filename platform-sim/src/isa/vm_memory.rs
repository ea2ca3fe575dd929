//! [`WaveMemory`] over the simulator's GPU page tables (`GpuVm`): every access is resolved
//! for the queue's GPU, so an address no buffer mapped on that GPU backs is a memory
//! violation ([`FaultCause::NotPresent`](super::memory::FaultCause)). Mappings carry the
//! permissions amdkfd gives a buffer from its allocation flags: a store or atomic to a buffer
//! allocated without `WRITABLE` faults as [`FaultCause::ReadOnly`](super::memory::FaultCause),
//! an instruction fetch from one without `EXECUTABLE` as
//! [`FaultCause::NoExecute`](super::memory::FaultCause); reads are always permitted. Translations are cached per window ([`TLB_WINDOW`] bytes, [`TLB_ENTRIES`] of
//! them) for the duration of one command-processor step and forgotten by
//! [`WaveMemory::flush`], so memory the host frees between steps faults instead of being
//! reached through a stale view.

use std::sync::atomic::{AtomicU32, Ordering};

use hsakmt_core::platform::SharedMemory;

use super::limits::{LANES, TLB_ENTRIES, TLB_WINDOW};
use super::memory::{AtomicOp, MemFault, WaveMemory};
use super::wave::active_lanes;
use crate::gpu::vm::{GpuVm, MemRange};

/// A GPU's view of the process memory, with a small translation cache.
pub struct VmMemory<'a> {
    vm: &'a dyn GpuVm,
    gpu_id: u32,
    tlb: [Option<(u64, MemRange)>; TLB_ENTRIES],
    victim: usize,
}

impl std::fmt::Debug for VmMemory<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VmMemory").field("gpu_id", &self.gpu_id).finish_non_exhaustive()
    }
}

impl<'a> VmMemory<'a> {
    /// GPU `gpu_id`'s view through `vm`.
    pub(crate) fn new(vm: &'a dyn GpuVm, gpu_id: u32) -> Self {
        VmMemory { vm, gpu_id, tlb: std::array::from_fn(|_| None), victim: 0 }
    }

    /// The cached window holding `[address, address + len)`, resolving it when needed;
    /// `None` when the access crosses windows or the window is not wholly backed.
    #[inline]
    fn window(&mut self, address: u64, len: u64) -> Option<(&MemRange, usize)> {
        let base = address & !(TLB_WINDOW - 1);
        if (address - base).checked_add(len)? > TLB_WINDOW {
            return None;
        }
        let hit = self.tlb.iter().position(|e| e.as_ref().is_some_and(|(b, _)| *b == base));
        let k = match hit {
            Some(k) => k,
            None => {
                let r = self.vm.resolve(self.gpu_id, base, TLB_WINDOW)?;
                let k = self.victim;
                self.victim = (self.victim + 1) % TLB_ENTRIES;
                self.tlb[k] = Some((base, r));
                k
            }
        };
        let (_, r) = self.tlb[k].as_ref()?;
        Some((r, (address - base) as usize))
    }

    /// The words of the one window every lane of `mask` addresses an aligned dword in, and
    /// the window's base; `None` when the lanes spread over windows or are unaligned, or for a
    /// `write` to a window mapped read-only (the lanes then fault one by one).
    #[inline]
    fn common_window(
        &mut self,
        addresses: &[u64; LANES],
        mask: u64,
        write: bool,
    ) -> Option<(&[AtomicU32], u64)> {
        if mask == 0 {
            return None;
        }
        let first = addresses[mask.trailing_zeros() as usize];
        let base = first & !(TLB_WINDOW - 1);
        let mut ok = true;
        for l in active_lanes(mask) {
            ok &= addresses[l] & !(TLB_WINDOW - 1) == base && addresses[l] & 3 == 0;
        }
        if !ok {
            return None;
        }
        let (r, _) = self.window(base, TLB_WINDOW)?;
        if write && !r.access().writable {
            return None;
        }
        let words = r.u32s();
        (words.len() as u64 * 4 >= TLB_WINDOW).then_some((words, base))
    }

    /// The exact range, resolved without the cache (accesses that cross windows, buffers
    /// smaller than a window), checked to permit a write when `write`.
    fn exact(&self, address: u64, len: u64, write: bool) -> Result<MemRange, MemFault> {
        let r = self
            .vm
            .resolve(self.gpu_id, address, len)
            .ok_or(MemFault::not_present(address, write))?;
        writable(&r, address, write)?;
        Ok(r)
    }

    /// The range of a store or atomic of `len` bytes at `address`, cached or exact, and the
    /// offset of `address` in it; it must permit writing.
    fn for_write(&mut self, address: u64, len: u64) -> Result<(MemRange, usize), MemFault> {
        match self.window(address, len) {
            Some((r, off)) => {
                writable(r, address, true)?;
                Ok((r.clone(), off))
            }
            None => Ok((self.exact(address, len, true)?, 0)),
        }
    }
}

/// A write to `r` (at `address`) faults as read-only when the mapping does not permit it.
#[inline]
fn writable(r: &MemRange, address: u64, write: bool) -> Result<(), MemFault> {
    if write && !r.access().writable {
        return Err(MemFault::read_only(address));
    }
    Ok(())
}

impl WaveMemory for VmMemory<'_> {
    fn read(&mut self, address: u64, dst: &mut [u8]) -> Result<(), MemFault> {
        let fault = MemFault::not_present(address, false);
        if let Some((r, off)) = self.window(address, dst.len() as u64) {
            return r.read(off, dst).map_err(|_| fault);
        }
        self.exact(address, dst.len() as u64, false)?.read(0, dst).map_err(|_| fault)
    }

    fn write(&mut self, address: u64, src: &[u8]) -> Result<(), MemFault> {
        let fault = MemFault::not_present(address, true);
        if let Some((r, off)) = self.window(address, src.len() as u64) {
            writable(r, address, true)?;
            return r.write(off, src).map_err(|_| fault);
        }
        self.exact(address, src.len() as u64, true)?.write(0, src).map_err(|_| fault)
    }

    fn fetch(&mut self, address: u64, dst: &mut [u8]) -> Result<(), MemFault> {
        let fault = MemFault::not_present(address, false);
        let executable = |r: &MemRange| {
            if r.access().executable { Ok(()) } else { Err(MemFault::no_execute(address)) }
        };
        if let Some((r, off)) = self.window(address, dst.len() as u64) {
            executable(r)?;
            return r.read(off, dst).map_err(|_| fault);
        }
        let r = self.exact(address, dst.len() as u64, false)?;
        executable(&r)?;
        r.read(0, dst).map_err(|_| fault)
    }

    #[inline]
    fn load_u32(&mut self, address: u64) -> Result<u32, MemFault> {
        if address.is_multiple_of(4)
            && let Some((r, off)) = self.window(address, 4)
            && let Some(w) = r.u32s().get(off / 4)
        {
            return Ok(w.load(Ordering::Relaxed));
        }
        let mut b = [0u8; 4];
        self.read(address, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    #[inline]
    fn store_u32(&mut self, address: u64, value: u32) -> Result<(), MemFault> {
        if address.is_multiple_of(4)
            && let Some((r, off)) = self.window(address, 4)
            && let Some(w) = r.u32s().get(off / 4)
        {
            writable(r, address, true)?;
            w.store(value, Ordering::Relaxed);
            return Ok(());
        }
        self.write(address, &value.to_le_bytes())
    }

    fn load_lanes(
        &mut self,
        addresses: &[u64; LANES],
        mask: u64,
        out: &mut [u32; LANES],
    ) -> Result<(), MemFault> {
        if let Some((words, base)) = self.common_window(addresses, mask, false) {
            for l in active_lanes(mask) {
                out[l] = words[((addresses[l] - base) / 4) as usize].load(Ordering::Relaxed);
            }
            return Ok(());
        }
        for l in active_lanes(mask) {
            out[l] = self.load_u32(addresses[l])?;
        }
        Ok(())
    }

    fn store_lanes(
        &mut self,
        addresses: &[u64; LANES],
        mask: u64,
        values: &[u32; LANES],
    ) -> Result<(), MemFault> {
        if let Some((words, base)) = self.common_window(addresses, mask, true) {
            for l in active_lanes(mask) {
                words[((addresses[l] - base) / 4) as usize].store(values[l], Ordering::Relaxed);
            }
            return Ok(());
        }
        for l in active_lanes(mask) {
            self.store_u32(addresses[l], values[l])?;
        }
        Ok(())
    }

    fn atomic32(
        &mut self,
        address: u64,
        op: AtomicOp,
        data: u32,
        cmp: u32,
    ) -> Result<u32, MemFault> {
        let fault = MemFault::not_present(address, true);
        if !address.is_multiple_of(4) {
            return Err(fault);
        }
        let range = self.for_write(address, 4)?;
        let cell = range.0.u32s().get(range.1 / 4).ok_or(fault)?;
        let old = match op {
            AtomicOp::Add => cell.fetch_add(data, Ordering::AcqRel),
            AtomicOp::Sub => cell.fetch_sub(data, Ordering::AcqRel),
            AtomicOp::And => cell.fetch_and(data, Ordering::AcqRel),
            AtomicOp::Or => cell.fetch_or(data, Ordering::AcqRel),
            AtomicOp::Xor => cell.fetch_xor(data, Ordering::AcqRel),
            AtomicOp::Swap => cell.swap(data, Ordering::AcqRel),
            AtomicOp::UMin => cell.fetch_min(data, Ordering::AcqRel),
            AtomicOp::UMax => cell.fetch_max(data, Ordering::AcqRel),
            _ => cell
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| {
                    Some(op.apply32(old, data, cmp))
                })
                .unwrap_or_else(|v| v),
        };
        Ok(old)
    }

    fn atomic64(
        &mut self,
        address: u64,
        op: AtomicOp,
        data: u64,
        cmp: u64,
    ) -> Result<u64, MemFault> {
        let fault = MemFault::not_present(address, true);
        if !address.is_multiple_of(8) {
            return Err(fault);
        }
        let range = self.for_write(address, 8)?;
        let cell = range.0.u64s().get(range.1 / 8).ok_or(fault)?;
        let old = match op {
            AtomicOp::Add => cell.fetch_add(data, Ordering::AcqRel),
            AtomicOp::Swap => cell.swap(data, Ordering::AcqRel),
            _ => cell
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| {
                    Some(op.apply64(old, data, cmp))
                })
                .unwrap_or_else(|v| v),
        };
        Ok(old)
    }

    fn flush(&mut self) {
        self.tlb = std::array::from_fn(|_| None);
    }
}
