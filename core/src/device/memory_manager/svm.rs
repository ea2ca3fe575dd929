//! Shared virtual memory attributes and XNACK mode: `hsaKmtSVMSetAttr`, `hsaKmtSVMGetAttr`,
//! `hsaKmtSetXNACKMode`, `hsaKmtGetXNACKMode` (libhsakmt `svm.c`; KFD 1.5).

use crate::error::Errno;
use crate::memory::svm_attributes::{MAX_SVM_ATTRIBUTES, SvmAttribute, SvmFlags, SvmLocation};
use crate::memory::{self, PAGE_SIZE};
use crate::platform::{Ioctl, Platform};
use crate::uapi::*;

use super::state::{MemoryState, MemoryStorage};
use super::{Error, Kfd};

impl<M, S: MemoryStorage<M>> MemoryState<M, S> {
    /// Whether every GPU supports the SVM API (libhsakmt `is_svm_api_supported`).
    fn svm_api(&self) -> bool {
        !self.gpus.is_empty()
            && self.gpus.iter().all(|n| self.nodes.get(n as usize).is_some_and(|i| i.svm_api))
    }

    fn location_to_kernel(&self, loc: SvmLocation) -> Result<u32, memory::Error> {
        Ok(match loc {
            SvmLocation::System => KFD_IOCTL_SVM_LOCATION_SYSMEM,
            SvmLocation::Undefined => KFD_IOCTL_SVM_LOCATION_UNDEFINED,
            // A CPU node means system memory (libhsakmt: its gpu_id is 0).
            SvmLocation::Node(n) => self.node(n)?.gpu_id,
        })
    }

    fn location_from_kernel(&self, value: u32) -> Result<SvmLocation, memory::Error> {
        Ok(match value {
            KFD_IOCTL_SVM_LOCATION_SYSMEM => SvmLocation::System,
            KFD_IOCTL_SVM_LOCATION_UNDEFINED => SvmLocation::Undefined,
            gpu_id => SvmLocation::Node(
                self.node_of_gpu(gpu_id).ok_or(memory::Error::UnknownGpu { gpu_id })?,
            ),
        })
    }

    fn attribute_to_kernel(
        &self,
        a: SvmAttribute,
    ) -> Result<kfd_ioctl_svm_attribute, memory::Error> {
        let gpu = |n: u32| self.gpu(n).map(|i| i.gpu_id);
        let (ty, value) = match a {
            SvmAttribute::PreferredLocation(l) => {
                (KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, self.location_to_kernel(l)?)
            }
            SvmAttribute::PrefetchLocation(l) => {
                (KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, self.location_to_kernel(l)?)
            }
            SvmAttribute::Access(n) => (KFD_IOCTL_SVM_ATTR_ACCESS, gpu(n)?),
            SvmAttribute::AccessInPlace(n) => (KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, gpu(n)?),
            SvmAttribute::NoAccess(n) => (KFD_IOCTL_SVM_ATTR_NO_ACCESS, gpu(n)?),
            SvmAttribute::SetFlags(f) => (KFD_IOCTL_SVM_ATTR_SET_FLAGS, f.bits()),
            SvmAttribute::ClearFlags(f) => (KFD_IOCTL_SVM_ATTR_CLR_FLAGS, f.bits()),
            SvmAttribute::Granularity(g) => (KFD_IOCTL_SVM_ATTR_GRANULARITY, g),
        };
        Ok(kfd_ioctl_svm_attribute { r#type: ty, value })
    }

    fn attribute_from_kernel(
        &self,
        a: kfd_ioctl_svm_attribute,
    ) -> Result<SvmAttribute, memory::Error> {
        let node = |gpu_id| self.node_of_gpu(gpu_id).ok_or(memory::Error::UnknownGpu { gpu_id });
        Ok(match a.r#type {
            KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => {
                SvmAttribute::PreferredLocation(self.location_from_kernel(a.value)?)
            }
            KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => {
                SvmAttribute::PrefetchLocation(self.location_from_kernel(a.value)?)
            }
            KFD_IOCTL_SVM_ATTR_ACCESS => SvmAttribute::Access(node(a.value)?),
            KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE => SvmAttribute::AccessInPlace(node(a.value)?),
            KFD_IOCTL_SVM_ATTR_NO_ACCESS => SvmAttribute::NoAccess(node(a.value)?),
            KFD_IOCTL_SVM_ATTR_SET_FLAGS => {
                SvmAttribute::SetFlags(SvmFlags::from_bits_truncate(a.value))
            }
            KFD_IOCTL_SVM_ATTR_CLR_FLAGS => {
                SvmAttribute::ClearFlags(SvmFlags::from_bits_truncate(a.value))
            }
            _ => SvmAttribute::Granularity(a.value),
        })
    }
}

fn check_range(addr: u64, size: u64, attrs: usize) -> Result<(), memory::Error> {
    if size == 0 {
        return Err(memory::Error::ZeroSize);
    }
    for v in [addr, size] {
        if !v.is_multiple_of(PAGE_SIZE) {
            return Err(memory::Error::Misaligned { value: v });
        }
    }
    addr.checked_add(size).ok_or(memory::Error::SizeOverflow)?;
    if attrs > MAX_SVM_ATTRIBUTES {
        return Err(memory::Error::CapacityExhausted { capacity: MAX_SVM_ATTRIBUTES as u32 });
    }
    Ok(())
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    fn svm_prepare(
        &self,
        addr: u64,
        size: u64,
        attrs: &[SvmAttribute],
        out: &mut [kfd_ioctl_svm_attribute; MAX_SVM_ATTRIBUTES],
    ) -> Result<usize, Error> {
        self.check_open()?;
        self.require_minor("SVM", since::SVM)?;
        check_range(addr, size, attrs.len())?;
        let st = self.memory.lock();
        if !st.svm_api() {
            return Err(memory::Error::NotSupported.into());
        }
        for (slot, &a) in out.iter_mut().zip(attrs) {
            *slot = st.attribute_to_kernel(a)?;
        }
        Ok(attrs.len())
    }

    /// Sets SVM attributes of the page-aligned range `[addr, addr + size)`
    /// (`hsaKmtSVMSetAttr`); node ids are translated to gpu_ids.
    ///
    /// # Errors
    /// [`Error::NotSupported`] before KFD 1.5; [`memory::Error::NotSupported`] when some GPU
    /// lacks the SVM API; [`memory::Error::ZeroSize`], [`memory::Error::Misaligned`],
    /// [`memory::Error::CapacityExhausted`] (more than [`MAX_SVM_ATTRIBUTES`]);
    /// [`memory::Error::UnknownNode`] / [`memory::Error::NotAGpu`]; [`Error::Ioctl`] (`EFAULT`
    /// for a range that is not mapped, `EINVAL` for attributes the kernel rejects);
    /// [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn svm_set_attributes(
        &self,
        addr: u64,
        size: u64,
        attrs: &[SvmAttribute],
    ) -> Result<(), Error> {
        let mut raw = [kfd_ioctl_svm_attribute::default(); MAX_SVM_ATTRIBUTES];
        let n = self.svm_prepare(addr, size, attrs, &mut raw)?;
        let mut args = kfd_ioctl_svm_args {
            start_addr: addr,
            size,
            op: KFD_IOCTL_SVM_OP_SET_ATTR,
            ..Default::default()
        };
        let attrs = raw.get_mut(..n).unwrap_or(&mut []);
        self.raw_ioctl(&mut Ioctl::Svm { args: &mut args, attrs })
    }

    /// Queries SVM attributes of a range (`hsaKmtSVMGetAttr`): each attribute of `attrs` names
    /// what to ask (the node of an access attribute selects the GPU) and is replaced by the
    /// answer; gpu_ids are translated back to node ids.
    ///
    /// # Errors
    /// As [`Kfd::svm_set_attributes`], plus [`memory::Error::UnknownGpu`] when the kernel
    /// answers with a GPU this process does not use.
    pub fn svm_get_attributes(
        &self,
        addr: u64,
        size: u64,
        attrs: &mut [SvmAttribute],
    ) -> Result<(), Error> {
        let mut raw = [kfd_ioctl_svm_attribute::default(); MAX_SVM_ATTRIBUTES];
        let n = self.svm_prepare(addr, size, attrs, &mut raw)?;
        let mut args = kfd_ioctl_svm_args {
            start_addr: addr,
            size,
            op: KFD_IOCTL_SVM_OP_GET_ATTR,
            ..Default::default()
        };
        let answers = raw.get_mut(..n).unwrap_or(&mut []);
        self.raw_ioctl(&mut Ioctl::Svm { args: &mut args, attrs: answers })?;
        let st = self.memory.lock();
        for (out, &a) in attrs.iter_mut().zip(answers.iter()) {
            *out = st.attribute_from_kernel(a)?;
        }
        Ok(())
    }

    /// Whether XNACK (recoverable GPU page faults) is on for this process
    /// (`hsaKmtGetXNACKMode`).
    ///
    /// # Errors
    /// [`Error::NotSupported`] before KFD 1.5; [`Error::Ioctl`]; [`Error::NotOpened`] /
    /// [`Error::ForkedChild`].
    pub fn xnack_mode(&self) -> Result<bool, Error> {
        Ok(self.xnack(-1)? > 0)
    }

    /// Turns XNACK on or off (`hsaKmtSetXNACKMode`); the process must have no queues.
    ///
    /// # Errors
    /// [`Error::NotSupported`] before KFD 1.5; [`memory::Error::NotSupported`] when some GPU
    /// cannot do it (the kernel's `EPERM`); [`Error::Ioctl`] with `EBUSY` while queues exist;
    /// [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn set_xnack_mode(&self, enabled: bool) -> Result<(), Error> {
        self.xnack(i32::from(enabled)).map(|_| ())
    }

    fn xnack(&self, value: i32) -> Result<i32, Error> {
        self.check_open()?;
        self.require_minor("XNACK mode", since::SVM)?;
        let mut args = kfd_ioctl_set_xnack_mode_args { xnack_enabled: value };
        match self.raw_ioctl(&mut Ioctl::SetXnackMode(&mut args)) {
            Ok(()) => Ok(args.xnack_enabled),
            Err(Error::Ioctl { errno: Errno::EPERM, .. }) => {
                Err(memory::Error::NotSupported.into())
            }
            Err(e) => Err(e),
        }
    }
}
