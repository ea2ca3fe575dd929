//! Sharing memory as dma-bufs: `hsaKmtExportDMABufHandle` (KFD 1.12) and
//! `hsaKmtRegisterGraphicsHandleToNodes` (libhsakmt `hsakmt_fmm_export_dma_buf_fd`,
//! `hsakmt_fmm_register_graphics_handle`).

use crate::memory::dmabuf_info::{DmaBufInfo, METADATA_SIZE};
use crate::memory::objects::{KfdHandles, MemoryHandle, MemoryKind, MemoryObject};
use crate::memory::{self, NodeSet};
use crate::platform::{Ioctl, Platform};
use crate::uapi::{
    kfd_ioctl_export_dmabuf_args, kfd_ioctl_get_dmabuf_info_args, kfd_ioctl_import_dmabuf_args,
    since,
};

use super::state::{ApertureId, MemoryPayload, MemoryStorage, SvmMode};
use super::{Error, Kfd};

/// `O_CLOEXEC`, the flags libhsakmt gives exported descriptors.
const O_CLOEXEC: u32 = 0o2_000_000;

pub use crate::memory::dmabuf_info::IMAGE_ALIGN;

/// An exported dma-buf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DmaBufExport {
    /// The dma-buf file descriptor (close it with [`Kfd::close_dmabuf`]).
    pub fd: u32,
    /// Offset of the exported address inside the buffer.
    pub offset: u64,
}

/// An imported dma-buf (`HsaGraphicsResourceInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ImportedBuffer {
    /// Its address: a GPU VA when imported to nodes, else a handle in the `NoAddress` window.
    pub addr: u64,
    /// Size in bytes.
    pub size: u64,
    /// The node whose GPU holds the buffer.
    pub node: u32,
    /// The library's name of the object.
    pub handle: MemoryHandle,
    /// Size of the buffer's metadata as the kernel reported it.
    pub metadata_size: u32,
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// Exports the buffer containing `[addr, addr + size)` as a dma-buf
    /// (`hsaKmtExportDMABufHandle`); the result carries `addr`'s offset inside the buffer. The
    /// buffer's memory lives as long as the descriptor, even after it is freed here.
    ///
    /// # Errors
    /// [`Error::NotSupported`] before KFD 1.12; [`memory::Error::OutsideObject`] when the range
    /// is not inside one buffer (libhsakmt: `INVALID_PARAMETER`);
    /// [`memory::Error::NoKfdBuffer`]; [`Error::Ioctl`]; [`Error::NotOpened`] /
    /// [`Error::ForkedChild`].
    pub fn export_dmabuf(&self, addr: u64, size: u64) -> Result<DmaBufExport, Error> {
        self.check_open()?;
        self.require_minor("dma-buf export", since::EXPORT_DMABUF)?;
        let (handle, offset) = {
            let st = self.memory.lock();
            let outside = memory::Error::OutsideObject { addr, size };
            let h = st.objects.find_containing(addr).ok_or(outside)?;
            let o = st.objects.get(h)?;
            let offset = addr.saturating_sub(o.start());
            if offset.checked_add(size).is_none_or(|end| end > o.size()) {
                return Err(outside.into());
            }
            (o.kfd_handles.first().ok_or(memory::Error::NoKfdBuffer { addr: o.start() })?, offset)
        };
        let mut args = kfd_ioctl_export_dmabuf_args { handle, flags: O_CLOEXEC, dmabuf_fd: 0 };
        self.raw_ioctl(&mut Ioctl::ExportDmabuf(&mut args))?;
        Ok(DmaBufExport { fd: args.dmabuf_fd, offset })
    }

    /// Closes a dma-buf descriptor from [`Kfd::export_dmabuf`].
    pub fn close_dmabuf(&self, fd: u32) {
        self.platform.close_fd(fd);
    }

    /// Imports a dma-buf (`hsaKmtRegisterGraphicsHandleToNodes`). With `nodes`, the buffer
    /// gets a GPU address in the default SVM aperture and is registered to those nodes (map it
    /// with [`Kfd::map_memory_to_gpu`]); without, it gets a handle in the `NoAddress` window
    /// and cannot be mapped. Release it with [`Kfd::deregister_memory`] or [`Kfd::free_memory`].
    ///
    /// # Errors
    /// [`memory::Error::NoNodes`], [`memory::Error::UnknownNode`], [`memory::Error::NotAGpu`];
    /// [`memory::Error::UnknownGpu`] when the buffer belongs to a GPU this process does not use;
    /// [`memory::Error::OutOfSpace`], [`memory::Error::CapacityExhausted`]; [`Error::Ioctl`]
    /// (`GET_DMABUF_INFO`, `IMPORT_DMABUF`); [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn import_dmabuf(&self, fd: u32, nodes: Option<&[u32]>) -> Result<ImportedBuffer, Error> {
        self.check_open()?;
        let registered = match nodes {
            None => NodeSet::EMPTY,
            Some([]) => return Err(memory::Error::NoNodes.into()),
            Some(list) => {
                let st = self.memory.lock();
                let mut set = NodeSet::EMPTY;
                for &n in list {
                    st.gpu(n)?;
                    set.insert(n)?;
                }
                set
            }
        };
        let mut metadata = [0u8; METADATA_SIZE];
        let mut info = kfd_ioctl_get_dmabuf_info_args { dmabuf_fd: fd, ..Default::default() };
        self.raw_ioctl(&mut Ioctl::GetDmabufInfo { args: &mut info, metadata: &mut metadata })?;
        let (va, info) = {
            let mut st = self.memory.lock();
            let info = DmaBufInfo::from_kernel(&info, |gpu| st.node_of_gpu(gpu))?;
            let id = if registered.is_empty() { ApertureId::Handles } else { ApertureId::Default };
            let ready = match id {
                ApertureId::Handles => st.handles_ready,
                _ => st.mode != SvmMode::None,
            };
            if !ready {
                return Err(memory::Error::NotSupported.into());
            }
            st.promise_slot()?;
            match st.allocate_va(id, info.va_size, Some(IMAGE_ALIGN), None) {
                Ok(a) => ((id, a), info),
                Err(e) => {
                    st.keep_promise();
                    return Err(e.into());
                }
            }
        };
        let mut args = kfd_ioctl_import_dmabuf_args {
            va_addr: if va.0 == ApertureId::Handles { 0 } else { va.1.addr },
            handle: 0,
            gpu_id: info.gpu_id,
            dmabuf_fd: fd,
        };
        if let Err(e) = self.raw_ioctl(&mut Ioctl::ImportDmabuf(&mut args)) {
            let mut st = self.memory.lock();
            st.release_va(Some(va));
            st.keep_promise();
            return Err(e);
        }
        let mut payload = MemoryPayload::new(None, Some(va), info.gpu_id);
        payload.imported = true;
        let mut obj = MemoryObject::new(
            va.1.addr,
            va.1.size,
            MemoryKind::ImportedDmaBuf,
            info.flags,
            info.node,
            payload,
        )
        .with_kfd_handles(KfdHandles::single(args.handle));
        obj.registered_nodes = registered;
        let mut st = self.memory.lock();
        st.keep_promise();
        match st.objects.insert(obj) {
            Ok(handle) => Ok(ImportedBuffer {
                addr: va.1.addr,
                size: va.1.size,
                node: info.node,
                handle,
                metadata_size: info.metadata_size,
            }),
            Err((e, _)) => {
                drop(st);
                self.free_buffers(&[args.handle]);
                self.memory.lock().release_va(Some(va));
                Err(e.into())
            }
        }
    }
}
