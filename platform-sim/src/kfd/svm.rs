//! The SVM ranges of the emulated `/dev/kfd` (amdkfd's `kfd_svm.c`): `AMDKFD_IOC_SVM`'s
//! attributes per range of pages (set, split, queried), and the simulated GPU's access to
//! them.
//!
//! GPU access: a GPU reaches the application's own pages of a range that grants it access
//! (`ACCESS` or `ACCESS_IN_PLACE`; with XNACK on, every range and the memory outside ranges,
//! as amdkfd maps them on the GPU's retry fault), read-only when the range is `GPU_RO` or the
//! CPU mapping is not writable (kfdtest's ReadOnlyRangeTest), executable when `GPU_EXEC`;
//! pages without a readable CPU mapping fault. Prefetch and migration change only the recorded location: GPU
//! VA == CPU VA, so the pages stay the process's memory wherever the range "lives". Like
//! registered memory, a range must stay mapped while a GPU uses it: the pages are checked to
//! be mapped each time an address is resolved (pages unmapped since fault), and unmapping them
//! while a dispatch runs on them is the application's error (on a GPU, a fault).

use hsakmt_core::error::Errno;
use hsakmt_core::uapi::*;
use hsakmt_hostmem as host;
use hsakmt_hostmem::HostMapping;

use super::memory::Memory;
use crate::process_maps::host_access;

/// The kernel's default SVM migration granularity (log2 pages).
const SVM_DEFAULT_GRANULARITY: u32 = 9;
const PAGE: u64 = 4096;

/// SVM attributes of a range of pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SvmAttrs {
    preferred: u32,
    prefetch: u32,
    /// Bit per GPU index.
    access: u128,
    in_place: u128,
    flags: u32,
    granularity: u32,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct SvmRange {
    start: u64,
    end: u64,
    attrs: SvmAttrs,
}

impl Memory {
    fn default_svm_attrs(&self) -> SvmAttrs {
        let all = (0..self.gpus.len().min(128)).fold(0u128, |m, i| m | (1u128 << i));
        SvmAttrs {
            preferred: KFD_IOCTL_SVM_LOCATION_UNDEFINED,
            prefetch: KFD_IOCTL_SVM_LOCATION_UNDEFINED,
            access: if self.xnack { all } else { 0 },
            in_place: 0,
            flags: KFD_IOCTL_SVM_FLAG_HOST_ACCESS | KFD_IOCTL_SVM_FLAG_COHERENT,
            granularity: SVM_DEFAULT_GRANULARITY,
        }
    }

    /// `svm_range_check_attr`.
    fn check_svm_attrs(&self, attrs: &[kfd_ioctl_svm_attribute]) -> Result<(), Errno> {
        for a in attrs {
            let gpu_valid = |v| self.gpu_index(v).map(|_| ()).ok_or(Errno::EINVAL);
            match a.r#type {
                KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => {
                    if a.value != KFD_IOCTL_SVM_LOCATION_SYSMEM
                        && a.value != KFD_IOCTL_SVM_LOCATION_UNDEFINED
                    {
                        gpu_valid(a.value)?;
                    }
                }
                KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => {
                    if a.value != KFD_IOCTL_SVM_LOCATION_SYSMEM {
                        gpu_valid(a.value)?;
                    }
                }
                KFD_IOCTL_SVM_ATTR_ACCESS
                | KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE
                | KFD_IOCTL_SVM_ATTR_NO_ACCESS => gpu_valid(a.value)?,
                KFD_IOCTL_SVM_ATTR_SET_FLAGS
                | KFD_IOCTL_SVM_ATTR_CLR_FLAGS
                | KFD_IOCTL_SVM_ATTR_GRANULARITY => {}
                _ => return Err(Errno::EINVAL),
            }
        }
        Ok(())
    }

    /// `kfd_ioctl_svm`.
    pub(crate) fn svm(
        &mut self,
        args: &kfd_ioctl_svm_args,
        attrs: &mut [kfd_ioctl_svm_attribute],
    ) -> Result<(), Errno> {
        let (start, size) = (args.start_addr, args.size);
        if start % PAGE != 0 || size % PAGE != 0 || start == 0 || size == 0 {
            return Err(Errno::EINVAL);
        }
        let end = start.checked_add(size).ok_or(Errno::EINVAL)?;
        match args.op {
            KFD_IOCTL_SVM_OP_SET_ATTR => {
                self.check_svm_attrs(attrs)?;
                if !host::is_mapped(start, size) {
                    return Err(Errno::EFAULT);
                }
                if self.by_va.range(..end).next_back().is_some_and(|(&va, h)| {
                    self.bos.get(h).is_some_and(|b| va.saturating_add(b.size) > start)
                }) {
                    // svm_range_check_vm: the range overlaps a KFD buffer.
                    return Err(Errno::EADDRINUSE);
                }
                self.svm_set(start, end, attrs);
                Ok(())
            }
            KFD_IOCTL_SVM_OP_GET_ATTR => {
                if !host::is_mapped(start, size) {
                    return Err(Errno::EINVAL);
                }
                self.svm_get(start, end, attrs)
            }
            _ => Err(Errno::EINVAL),
        }
    }

    fn svm_set(&mut self, start: u64, end: u64, attrs: &[kfd_ioctl_svm_attribute]) {
        // Split existing ranges at the boundaries, fill the gaps with default ranges.
        let default = self.default_svm_attrs();
        let mut pieces = Vec::with_capacity(self.svm.len() + 2);
        for r in std::mem::take(&mut self.svm) {
            for (s, e) in [
                (r.start, r.end.min(start)),
                (r.start.max(start), r.end.min(end)),
                (r.start.max(end), r.end),
            ] {
                if s < e {
                    pieces.push(SvmRange { start: s, end: e, attrs: r.attrs });
                }
            }
        }
        let mut cursor = start;
        let mut covered: Vec<(u64, u64)> = pieces
            .iter()
            .filter(|r| r.start < end && r.end > start)
            .map(|r| (r.start, r.end))
            .collect();
        covered.sort_unstable();
        for (s, e) in covered {
            if s > cursor {
                pieces.push(SvmRange { start: cursor, end: s, attrs: default });
            }
            cursor = cursor.max(e);
        }
        if cursor < end {
            pieces.push(SvmRange { start: cursor, end, attrs: default });
        }
        let index = |v: u32| self.gpu_index(v).map_or(0, |i| 1u128 << i);
        for r in pieces.iter_mut().filter(|r| r.start >= start && r.end <= end) {
            for a in attrs {
                let bit = index(a.value);
                let t = &mut r.attrs;
                match a.r#type {
                    KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => t.preferred = a.value,
                    KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => t.prefetch = a.value,
                    KFD_IOCTL_SVM_ATTR_ACCESS => {
                        t.access |= bit;
                        t.in_place &= !bit;
                    }
                    KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE => {
                        t.access |= bit;
                        t.in_place |= bit;
                    }
                    KFD_IOCTL_SVM_ATTR_NO_ACCESS => {
                        t.access &= !bit;
                        t.in_place &= !bit;
                    }
                    KFD_IOCTL_SVM_ATTR_SET_FLAGS => t.flags |= a.value,
                    KFD_IOCTL_SVM_ATTR_CLR_FLAGS => t.flags &= !a.value,
                    _ => t.granularity = a.value.min(0x3F),
                }
            }
        }
        pieces.sort_by_key(|r| r.start);
        self.svm = pieces;
    }

    /// The prefetch location of the SVM range holding `addr` (`UNDEFINED` outside every range).
    pub(crate) fn svm_location(&self, addr: u64) -> u32 {
        self.svm
            .iter()
            .find(|r| r.start <= addr && addr < r.end)
            .map_or(KFD_IOCTL_SVM_LOCATION_UNDEFINED, |r| r.attrs.prefetch)
    }

    /// The preferred location of the SVM range holding `addr` (`UNDEFINED` outside every
    /// range).
    pub(crate) fn svm_preferred(&self, addr: u64) -> u32 {
        self.svm
            .iter()
            .find(|r| r.start <= addr && addr < r.end)
            .map_or(KFD_IOCTL_SVM_LOCATION_UNDEFINED, |r| r.attrs.preferred)
    }

    fn svm_get(
        &self,
        start: u64,
        end: u64,
        attrs: &mut [kfd_ioctl_svm_attribute],
    ) -> Result<(), Errno> {
        let ranges: Vec<SvmAttrs> =
            self.svm.iter().filter(|r| r.start < end && r.end > start).map(|r| r.attrs).collect();
        let ranges = if ranges.is_empty() { vec![self.default_svm_attrs()] } else { ranges };
        let same = |f: fn(&SvmAttrs) -> u32| {
            let first = ranges.first().map_or(KFD_IOCTL_SVM_LOCATION_UNDEFINED, f);
            if ranges.iter().all(|r| f(r) == first) {
                first
            } else {
                KFD_IOCTL_SVM_LOCATION_UNDEFINED
            }
        };
        for a in attrs.iter_mut() {
            match a.r#type {
                KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => a.value = same(|r| r.preferred),
                KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => a.value = same(|r| r.prefetch),
                KFD_IOCTL_SVM_ATTR_ACCESS
                | KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE
                | KFD_IOCTL_SVM_ATTR_NO_ACCESS => {
                    let bit = 1u128 << self.gpu_index(a.value).ok_or(Errno::EINVAL)?;
                    a.r#type = if ranges.iter().all(|r| r.in_place & bit != 0) {
                        KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE
                    } else if ranges.iter().all(|r| r.access & bit != 0) {
                        KFD_IOCTL_SVM_ATTR_ACCESS
                    } else {
                        KFD_IOCTL_SVM_ATTR_NO_ACCESS
                    };
                }
                KFD_IOCTL_SVM_ATTR_SET_FLAGS => {
                    a.value = ranges.iter().fold(u32::MAX, |m, r| m & r.flags);
                }
                KFD_IOCTL_SVM_ATTR_CLR_FLAGS => {
                    a.value = !ranges.iter().fold(0, |m, r| m | r.flags);
                }
                KFD_IOCTL_SVM_ATTR_GRANULARITY => {
                    a.value = ranges
                        .iter()
                        .map(|r| r.granularity)
                        .min()
                        .unwrap_or(SVM_DEFAULT_GRANULARITY);
                }
                _ => return Err(Errno::EINVAL),
            }
        }
        Ok(())
    }

    /// Whether any page of `[start, last]` is in an SVM range.
    pub(super) fn svm_overlaps(&self, start: u64, last: u64) -> bool {
        self.svm.iter().any(|r| r.start <= last && start < r.end)
    }

    /// The application's pages behind `[va, va + len)` as GPU `gpu_id` reaches them through
    /// SVM ranges (see the module docs), with the allocation flags giving their permissions;
    /// `EFAULT` (a GPU page fault) when a page is not accessible to that GPU, lies in a KFD
    /// buffer or is not mapped.
    pub(super) fn resolve_svm(
        &self,
        gpu_id: u32,
        va: u64,
        len: u64,
    ) -> Result<(HostMapping, u64, u32), Errno> {
        let bit = 1u128 << self.gpu_index(gpu_id).ok_or(Errno::EFAULT)?;
        let end = va.checked_add(len).ok_or(Errno::EFAULT)?;
        if len == 0 || self.by_va.range(va..end).next().is_some() {
            return Err(Errno::EFAULT);
        }
        let (mut read_only, mut executable) = (false, true);
        let mut cursor = va;
        let first = self.svm.partition_point(|r| r.end <= va);
        for r in self.svm.get(first..).unwrap_or(&[]) {
            if r.start >= end {
                break;
            }
            if r.start > cursor {
                // A gap: with XNACK on, a range with the default attributes (not executable).
                if !self.xnack {
                    return Err(Errno::EFAULT);
                }
                executable = false;
            }
            if (r.attrs.access | r.attrs.in_place) & bit == 0 {
                return Err(Errno::EFAULT);
            }
            read_only |= r.attrs.flags & KFD_IOCTL_SVM_FLAG_GPU_RO != 0;
            executable &= r.attrs.flags & KFD_IOCTL_SVM_FLAG_GPU_EXEC != 0;
            cursor = r.end;
        }
        if cursor < end {
            if !self.xnack {
                return Err(Errno::EFAULT);
            }
            executable = false;
        }
        let first_page = va & !(PAGE - 1);
        // As the CPU mapping allows: a fault where there is none, read-only where it is.
        let host = host_access(first_page, end).ok_or(Errno::EFAULT)?;
        read_only |= !host.writable;
        let size = usize::try_from(end - first_page).map_err(|_| Errno::EFAULT)?;
        let view = HostMapping::registered(first_page, size).map_err(|_| Errno::EFAULT)?;
        let mut flags = 0;
        if !read_only {
            flags |= KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
        }
        if executable {
            flags |= KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
        }
        Ok((view, va - first_page, flags))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kfd::memory::GpuMemory;
    use hsakmt_core::platform::SharedMemory;
    use hsakmt_hostmem::{map_anonymous, reserve};

    const G0: u32 = 0x1000;
    const G1: u32 = 0x2000;
    const W: u32 = KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    const X: u32 = KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;

    fn memory() -> Memory {
        let gpu =
            |gpu_id| GpuMemory { gpu_id, vram_size: 1 << 30, large_bar: true, xnack_capable: true };
        Memory::new(vec![gpu(G0), gpu(G1)])
    }

    fn set(m: &mut Memory, start: u64, size: u64, attrs: &[(u32, u32)]) {
        let op = KFD_IOCTL_SVM_OP_SET_ATTR;
        let args = kfd_ioctl_svm_args { start_addr: start, size, op, ..Default::default() };
        let mut a: Vec<kfd_ioctl_svm_attribute> = attrs
            .iter()
            .map(|&(r#type, value)| kfd_ioctl_svm_attribute { r#type, value })
            .collect();
        m.svm(&args, &mut a).unwrap();
    }

    fn flags(m: &mut Memory, gpu_id: u32, va: u64, len: u64) -> Result<u32, Errno> {
        m.resolve(gpu_id, va, len).map(|(_, _, f)| f)
    }

    #[test]
    fn gpus_reach_the_pages_of_ranges_they_may_access() {
        let base = reserve(None, 8 * PAGE, PAGE).unwrap();
        let pages = map_anonymous(base, 8 * PAGE).unwrap();
        let mut m = memory();
        assert_eq!(flags(&mut m, G0, base, 4), Err(Errno::EFAULT), "no range, XNACK off");
        set(&mut m, base, 4 * PAGE, &[(KFD_IOCTL_SVM_ATTR_ACCESS, G0)]);
        let ro_exec = KFD_IOCTL_SVM_FLAG_GPU_RO | KFD_IOCTL_SVM_FLAG_GPU_EXEC;
        set(&mut m, base + 2 * PAGE, 2 * PAGE, &[(KFD_IOCTL_SVM_ATTR_SET_FLAGS, ro_exec)]);
        // The application's own pages, at any offset.
        let (view, offset, f) = m.resolve(G0, base + 8, 16).unwrap();
        assert_eq!((view.addr() + offset, f), (base + 8, W));
        view.write(offset as usize, &[7; 16]).unwrap();
        let mut back = [0; 16];
        pages.read(8, &mut back).unwrap();
        assert_eq!(back, [7; 16]);
        assert_eq!(flags(&mut m, G0, base + 2 * PAGE, PAGE), Ok(X), "GPU_RO, GPU_EXEC");
        assert_eq!(flags(&mut m, G0, base + PAGE, 2 * PAGE), Ok(0), "the strictest piece wins");
        // Another GPU, past the range's end, and a range with no access fault.
        assert_eq!(flags(&mut m, G1, base, 4), Err(Errno::EFAULT));
        assert_eq!(flags(&mut m, G0, base + 3 * PAGE, 2 * PAGE), Err(Errno::EFAULT));
        set(&mut m, base + 6 * PAGE, PAGE, &[(KFD_IOCTL_SVM_ATTR_NO_ACCESS, G0)]);
        // XNACK on: memory outside ranges too (default attributes: not executable), but not
        // ranges that deny the GPU access.
        m.xnack = true;
        assert_eq!(flags(&mut m, G0, base + 3 * PAGE, 2 * PAGE), Ok(0));
        assert_eq!(flags(&mut m, G1, base + 4 * PAGE, PAGE), Ok(W));
        assert_eq!(flags(&mut m, G1, base, 4), Err(Errno::EFAULT));
        assert_eq!(flags(&mut m, G0, base + 5 * PAGE, 2 * PAGE), Err(Errno::EFAULT));
        assert_eq!(flags(&mut m, 0x3000, base, 4), Err(Errno::EFAULT), "unknown GPU");
        assert_eq!(flags(&mut m, G0, base, 0), Err(Errno::EFAULT), "empty");
        // The CPU mapping's protection: a read-only page (of this program's constants) is
        // read-only for the GPU too.
        static CONSTANT: [u64; 1] = [0x5a5a];
        let ro = std::ptr::addr_of!(CONSTANT) as u64 & !(PAGE - 1);
        set(&mut m, ro, PAGE, &[(KFD_IOCTL_SVM_ATTR_ACCESS, G0)]);
        assert_eq!(flags(&mut m, G0, ro, PAGE).map(|f| f & W), Ok(0));
        drop(pages);
        hsakmt_hostmem::release(base, 8 * PAGE).unwrap();
    }
}
