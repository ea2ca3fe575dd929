//! [`MemoryObject`]: what the table records about one allocation or registration, with its kind,
//! KFD buffer handles and user-pointer range.

use crate::memory::{Error, MemFlags, NodeSet};

use super::MAX_KFD_HANDLES;

/// What kind of memory an object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MemoryKind {
    /// Device memory (`KFD_IOC_ALLOC_MEM_FLAGS_VRAM`), possibly without an address
    /// (`NoAddress`: the start is a handle in the handle window).
    Vram,
    /// Non-paged system memory: a GTT buffer (`KFD_IOC_ALLOC_MEM_FLAGS_GTT`).
    HostGtt,
    /// Paged system memory allocated by the library as anonymous memory and made a userptr
    /// buffer (`HSA_USERPTR_FOR_PAGED_MEM`).
    HostUserptr,
    /// APU system memory from a plain `mmap`, no KFD buffer (libhsakmt's `cpuvm_aperture`).
    HostCpu,
    /// A queue doorbell page (`KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL`).
    Doorbell,
    /// The MMIO remap (HDP flush) page (`KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP`).
    Mmio,
    /// Scratch backing memory.
    Scratch,
    /// User memory registered by the application (`hsaKmtRegisterMemory*`).
    RegisteredUser,
    /// A buffer imported from a dma-buf or graphics handle.
    ImportedDmaBuf,
    /// An address range without memory (`OnlyAddress`).
    ReservedAddress,
}

/// Up to [`MAX_KFD_HANDLES`] KFD buffer handles (`handles[]` of a `vm_object`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct KfdHandles {
    len: u8,
    handles: [u64; MAX_KFD_HANDLES],
}

impl KfdHandles {
    /// No handle (e.g. `OnlyAddress` objects, APU `mmap` memory).
    pub const EMPTY: Self = Self { len: 0, handles: [0; MAX_KFD_HANDLES] };

    /// One handle.
    #[must_use]
    pub const fn single(handle: u64) -> Self {
        let mut handles = [0; MAX_KFD_HANDLES];
        handles[0] = handle;
        Self { len: 1, handles }
    }

    /// Appends a handle.
    ///
    /// # Errors
    /// [`Error::CapacityExhausted`] when [`MAX_KFD_HANDLES`] are held (unchanged).
    pub fn push(&mut self, handle: u64) -> Result<(), Error> {
        let slot = self
            .handles
            .get_mut(usize::from(self.len))
            .ok_or(Error::CapacityExhausted { capacity: MAX_KFD_HANDLES as u32 })?;
        *slot = handle;
        self.len = self.len.saturating_add(1);
        Ok(())
    }

    /// Removes and returns the last handle.
    pub fn pop(&mut self) -> Option<u64> {
        let last = usize::from(self.len.checked_sub(1)?);
        self.len = self.len.saturating_sub(1);
        self.handles.get(last).copied()
    }

    /// The handles.
    #[must_use]
    pub fn as_slice(&self) -> &[u64] {
        self.handles.get(..usize::from(self.len)).unwrap_or(&[])
    }

    /// The first handle (libhsakmt's `handles[0]`; 0 means "address only").
    #[must_use]
    pub fn first(&self) -> Option<u64> {
        self.as_slice().first().copied()
    }

    /// The number of handles.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether there is no handle.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A user-pointer range: the CPU address of registered host memory and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct UserRange {
    /// CPU address (need not be page aligned).
    pub addr: u64,
    /// Size in bytes.
    pub size: u64,
}

impl UserRange {
    /// Exclusive end.
    #[must_use]
    pub const fn end(&self) -> u64 {
        self.addr.wrapping_add(self.size)
    }
}

/// One memory object (libhsakmt `struct vm_object`).
///
/// The address fields (`start`, `size`, `userptr`) are keys of the table's indexes and are
/// therefore read-only once the object is in a table; everything else may be updated through
/// [`ObjectTable::get_mut`](super::ObjectTable::get_mut).
///
/// The fields are laid out in declaration order (`repr(C)`), those a free and a removal read
/// first — kind, start, user range, payload, buffer handles, mapped nodes — so that they share
/// as few cache lines as the record allows; the rest come after them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(C)]
pub struct MemoryObject<T> {
    /// The kind of memory.
    pub kind: MemoryKind,
    /// The allocation flags (libhsakmt stores the `HsaMemFlags`, not the ioctl flags).
    pub flags: MemFlags,
    /// The owning topology node.
    pub node: u32,
    /// How many times the user range was registered (`registration_count`).
    pub registration_count: u32,
    pub(super) start: u64,
    pub(super) size: u64,
    pub(super) userptr: Option<UserRange>,
    /// Caller-defined payload (e.g. the CPU mapping, the aperture allocation).
    pub payload: T,
    /// KFD buffer handle(s).
    pub kfd_handles: KfdHandles,
    /// Nodes the memory is mapped on (`mapped_node_id_array`).
    pub mapped_nodes: NodeSet,
    /// How many times the object was mapped (`mapping_count`; userptr objects are mapped once
    /// and then reference counted).
    pub mapping_count: u32,
    /// The mmap offset the kernel returned for the buffer (render-node or kfd offset).
    pub mmap_offset: u64,
    /// Opaque user data (`user_data`).
    pub user_data: u64,
    /// Nodes the memory is registered to (`registered_node_id_array`).
    pub registered_nodes: NodeSet,
}

impl<T> MemoryObject<T> {
    /// An object covering `[start, start + size)` with no KFD handle, no user range, empty node
    /// sets and zero counts.
    #[must_use]
    pub const fn new(
        start: u64,
        size: u64,
        kind: MemoryKind,
        flags: MemFlags,
        node: u32,
        payload: T,
    ) -> Self {
        Self {
            start,
            size,
            userptr: None,
            kind,
            flags,
            node,
            kfd_handles: KfdHandles::EMPTY,
            mmap_offset: 0,
            registered_nodes: NodeSet::EMPTY,
            mapped_nodes: NodeSet::EMPTY,
            registration_count: 0,
            mapping_count: 0,
            user_data: 0,
            payload,
        }
    }

    /// This object with a user-pointer range (registered host memory).
    #[must_use]
    pub fn with_userptr(mut self, addr: u64, size: u64) -> Self {
        self.userptr = Some(UserRange { addr, size });
        self
    }

    /// This object with its KFD handle(s).
    #[must_use]
    pub fn with_kfd_handles(mut self, handles: KfdHandles) -> Self {
        self.kfd_handles = handles;
        self
    }

    /// First GPU virtual address (a handle for `NoAddress` objects).
    #[must_use]
    pub const fn start(&self) -> u64 {
        self.start
    }

    /// Size in bytes.
    #[must_use]
    pub const fn size(&self) -> u64 {
        self.size
    }

    /// Exclusive end of the GPU range (wrapping; a table never holds a range reaching 2^64).
    #[must_use]
    pub const fn end(&self) -> u64 {
        self.start.wrapping_add(self.size)
    }

    /// Whether `addr` lies in the GPU range.
    #[must_use]
    pub const fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end()
    }

    /// The user-pointer range, for registered host memory.
    #[must_use]
    pub const fn userptr(&self) -> Option<UserRange> {
        self.userptr
    }

    /// Increments the registration count; returns the new count.
    ///
    /// # Errors
    /// [`Error::RefcountOverflow`] (unchanged).
    pub fn add_registration(&mut self) -> Result<u32, Error> {
        self.registration_count =
            self.registration_count.checked_add(1).ok_or(Error::RefcountOverflow)?;
        Ok(self.registration_count)
    }

    /// Decrements the registration count; returns the new count (0: last registration gone).
    ///
    /// # Errors
    /// [`Error::RefcountUnderflow`] when it is already 0 (unchanged).
    pub fn drop_registration(&mut self) -> Result<u32, Error> {
        self.registration_count =
            self.registration_count.checked_sub(1).ok_or(Error::RefcountUnderflow)?;
        Ok(self.registration_count)
    }

    /// Increments the mapping count; returns the new count.
    ///
    /// # Errors
    /// [`Error::RefcountOverflow`] (unchanged).
    pub fn add_mapping(&mut self) -> Result<u32, Error> {
        self.mapping_count = self.mapping_count.checked_add(1).ok_or(Error::RefcountOverflow)?;
        Ok(self.mapping_count)
    }

    /// Decrements the mapping count; returns the new count.
    ///
    /// # Errors
    /// [`Error::RefcountUnderflow`] when it is already 0 (unchanged).
    pub fn drop_mapping(&mut self) -> Result<u32, Error> {
        self.mapping_count = self.mapping_count.checked_sub(1).ok_or(Error::RefcountUnderflow)?;
        Ok(self.mapping_count)
    }
}
