//! The SVM ranges of the emulated `/dev/kfd` (amdkfd's `kfd_svm.c`): `AMDKFD_IOC_SVM`'s
//! attributes per range of pages (set, split, queried), and the simulated GPU's access to
//! them.
//!
//! GPU access: a GPU reaches the application's own pages of a range that grants it access
//! (`ACCESS` or `ACCESS_IN_PLACE`; with XNACK on, every range and the memory outside ranges,
//! as amdkfd maps them on the GPU's retry fault), read-only when the range is `GPU_RO`,
//! executable when `GPU_EXEC`. Prefetch and migration change only the recorded location: GPU
//! VA == CPU VA, so the pages stay the process's memory wherever the range "lives". Like
//! registered memory, a range must stay mapped while a GPU uses it: the pages are checked to
//! be mapped each time an address is resolved (pages unmapped since fault), and unmapping them
//! while a dispatch runs on them is the application's error (on a GPU, a fault).

use hsakmt_core::error::Errno;
use hsakmt_core::uapi::*;
use hsakmt_hostmem as host;
use hsakmt_hostmem::HostMapping;

use super::memory::Memory;

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
