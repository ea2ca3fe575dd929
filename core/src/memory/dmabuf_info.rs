//! What `AMDKFD_IOC_GET_DMABUF_INFO` reports about a dma-buf, decoded the way the import path
//! (`hsaKmtRegisterGraphicsHandleToNodes`, libhsakmt `hsakmt_fmm_register_graphics_handle`)
//! consumes it: the owning GPU's node, the size to reserve address space for, and the memory
//! flags recorded for the imported object.
//!
//! ```
//! use hsakmt_core::memory::dmabuf_info::{DmaBufInfo, IMAGE_ALIGN};
//! use hsakmt_core::memory::MemFlags;
//! use hsakmt_core::uapi::{KFD_IOC_ALLOC_MEM_FLAGS_VRAM, KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE, kfd_ioctl_get_dmabuf_info_args};
//!
//! let reply = kfd_ioctl_get_dmabuf_info_args {
//!     size: 3 << 20,
//!     metadata_size: 0,
//!     gpu_id: 0x1234,
//!     flags: KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
//!     ..Default::default()
//! };
//! let info = DmaBufInfo::from_kernel(&reply, |gpu| (gpu == 0x1234).then_some(1))?;
//! assert_eq!(info.node, 1);
//! assert_eq!(info.va_size, 3 << 20);
//! assert!(info.flags.contains(MemFlags::COARSE_GRAIN));
//! assert!(!info.flags.contains(MemFlags::READ_ONLY));
//! assert_eq!(IMAGE_ALIGN, 256 << 10);
//! # Ok::<(), hsakmt_core::memory::Error>(())
//! ```

use super::kfd_flags::mem_flags_from_alloc;
use super::{Error, MemFlags};
use crate::uapi::kfd_ioctl_get_dmabuf_info_args;

/// Alignment of imported buffers' addresses (libhsakmt's `IMAGE_ALIGN`).
pub const IMAGE_ALIGN: u64 = 256 << 10;

/// Metadata bytes the import path offers the kernel (libhsakmt's
/// `GRAPHICS_METADATA_DEFAULT_SIZE`).
pub const METADATA_SIZE: usize = 64;

/// A `GET_DMABUF_INFO` reply, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DmaBufInfo {
    /// The GPU holding the buffer.
    pub gpu_id: u32,
    /// Its node.
    pub node: u32,
    /// Size of the buffer in bytes, as the kernel reported it.
    pub size: u64,
    /// Bytes of address space the import reserves: `size` (the aperture rounds it up to pages
    /// and aligns it to [`IMAGE_ALIGN`]).
    pub va_size: u64,
    /// The flags recorded for the imported object: `fmm_translate_ioc_to_hsa_flags` of the
    /// buffer's `KFD_IOC_ALLOC_MEM_FLAGS_*`, plus `CoarseGrain`.
    pub flags: MemFlags,
    /// Size of the buffer's metadata as the kernel reported it.
    pub metadata_size: u32,
}

impl DmaBufInfo {
    /// Decodes the reply `args`, mapping its `gpu_id` to a node with `node_of_gpu`.
    ///
    /// # Errors
    /// [`Error::UnknownGpu`] when the buffer belongs to a GPU `node_of_gpu` does not know.
    pub fn from_kernel(
        args: &kfd_ioctl_get_dmabuf_info_args,
        node_of_gpu: impl FnOnce(u32) -> Option<u32>,
    ) -> Result<Self, Error> {
        let node = node_of_gpu(args.gpu_id).ok_or(Error::UnknownGpu { gpu_id: args.gpu_id })?;
        Ok(Self {
            gpu_id: args.gpu_id,
            node,
            size: args.size,
            va_size: args.size,
            flags: mem_flags_from_alloc(args.flags).union(MemFlags::COARSE_GRAIN),
            metadata_size: args.metadata_size,
        })
    }

    /// How many bytes of the [`METADATA_SIZE`]-byte metadata buffer the kernel filled.
    #[must_use]
    pub const fn metadata_len(&self) -> usize {
        let n = self.metadata_size as usize;
        if n < METADATA_SIZE { n } else { METADATA_SIZE }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uapi::{
        KFD_IOC_ALLOC_MEM_FLAGS_COHERENT, KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT,
        KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC, KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
    };

    fn reply(gpu_id: u32, flags: u32, metadata_size: u32) -> kfd_ioctl_get_dmabuf_info_args {
        kfd_ioctl_get_dmabuf_info_args {
            size: 5000,
            metadata_size,
            gpu_id,
            flags,
            ..Default::default()
        }
    }

    #[test]
    fn unknown_gpu_is_refused() {
        let e = DmaBufInfo::from_kernel(&reply(9, 0, 0), |_| None);
        assert_eq!(e, Err(Error::UnknownGpu { gpu_id: 9 }));
    }

    #[test]
    fn flags_follow_libhsakmt_and_are_coarse_grained() {
        let node = |_| Some(3);
        let ro = DmaBufInfo::from_kernel(&reply(1, 0, 0), node).unwrap();
        assert_eq!(ro.flags, MemFlags::READ_ONLY | MemFlags::COARSE_GRAIN);
        let all = KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
            | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT
            | KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT
            | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC;
        let rw = DmaBufInfo::from_kernel(&reply(1, all, 0), node).unwrap();
        assert_eq!(
            rw.flags,
            MemFlags::COARSE_GRAIN | MemFlags::EXTENDED_COHERENT | MemFlags::HOST_ACCESS
        );
        assert_eq!((rw.node, rw.size, rw.va_size), (3, 5000, 5000));
    }

    #[test]
    fn metadata_length_is_bounded_by_the_buffer() {
        let node = |_| Some(0);
        assert_eq!(DmaBufInfo::from_kernel(&reply(1, 0, 0), node).unwrap().metadata_len(), 0);
        assert_eq!(DmaBufInfo::from_kernel(&reply(1, 0, 40), node).unwrap().metadata_len(), 40);
        let big = DmaBufInfo::from_kernel(&reply(1, 0, u32::MAX), node).unwrap();
        assert_eq!((big.metadata_size, big.metadata_len()), (u32::MAX, METADATA_SIZE));
    }
}
