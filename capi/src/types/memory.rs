//! Memory types: allocation and mapping flags, pointer info, graphics and shared handles, SVM
//! attributes, tile configuration.

use core::ffi::c_void;

use super::{HSAuint32, HSAuint64, bitfield, c_enums};
use crate::layout::{Description, layout, scalars};

bitfield! {
    /// `HsaMemFlags`: allocation flags (`hsaKmtAllocMemory`). The same bits as
    /// [`hsakmt_core::memory::MemFlags`].
    pub struct HsaMemFlags { pub Value: HSAuint32 } "ui32." {
        NonPaged: 1,
        CachePolicy: 2,
        ReadOnly: 1,
        PageSize: 2,
        HostAccess: 1,
        NoSubstitute: 1,
        GDSMemory: 1,
        Scratch: 1,
        AtomicAccessFull: 1,
        AtomicAccessPartial: 1,
        ExecuteAccess: 1,
        CoarseGrain: 1,
        AQLQueueMemory: 1,
        FixedAddress: 1,
        NoNUMABind: 1,
        Uncached: 1,
        NoAddress: 1,
        OnlyAddress: 1,
        ExtendedCoherent: 1,
        GTTAccess: 1,
        Contiguous: 1,
        ExecuteBlit: 1,
        Reserved: 8,
    }
}

bitfield! {
    /// `HsaMemMapFlags`: mapping flags (`hsaKmtMapMemoryToGPUNodes`).
    pub struct HsaMemMapFlags { pub Value: HSAuint32 } "ui32." {
        Reserved1: 1,
        CachePolicy: 2,
        ReadOnly: 1,
        PageSize: 2,
        HostAccess: 1,
        Migrate: 1,
        Probe: 1,
        Reserved: 23,
    }
}

bitfield! {
    /// `HSA_REGISTER_MEM_FLAGS` (`hsaKmtRegisterGraphicsHandleToNodesExt`).
    pub struct HSA_REGISTER_MEM_FLAGS { pub Value: HSAuint32 } "ui32." {
        requiresVAddr: 1,
    }
}

/// `HsaGraphicsResourceInfo`: what `hsaKmtRegisterGraphicsHandleToNodes` reports.
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy)]
pub struct HsaGraphicsResourceInfo {
    /// Where the buffer is mapped.
    pub MemoryAddress: *mut c_void,
    /// Buffer size.
    pub SizeInBytes: HSAuint64,
    /// The buffer's metadata (owned by the library).
    pub Metadata: *const c_void,
    /// Metadata size.
    pub MetadataSizeInBytes: HSAuint32,
    /// Node of the GPU that exported the buffer.
    pub NodeId: HSAuint32,
}

/// `HsaPointerInfo` (`hsaKmtQueryPointerInfo`).
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy)]
pub struct HsaPointerInfo {
    /// What the pointer is.
    pub Type: HSA_POINTER_TYPE,
    /// Owning node.
    pub Node: HSAuint32,
    /// Allocation flags.
    pub MemFlags: HsaMemFlags,
    /// CPU address of the start.
    pub CPUAddress: *mut c_void,
    /// GPU address of the start.
    pub GPUAddress: HSAuint64,
    /// Size.
    pub SizeInBytes: HSAuint64,
    /// Entries of `RegisteredNodes`.
    pub NRegisteredNodes: HSAuint32,
    /// Entries of `MappedNodes`.
    pub NMappedNodes: HSAuint32,
    /// Nodes the memory is registered to (owned by the library).
    pub RegisteredNodes: *const HSAuint32,
    /// Nodes the memory is mapped on (owned by the library).
    pub MappedNodes: *const HSAuint32,
    /// User data.
    pub UserData: *mut c_void,
}

/// `HsaSharedMemoryHandle`: an IPC handle.
pub type HsaSharedMemoryHandle = [HSAuint32; 8];

/// `HsaMemoryRange`.
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy)]
pub struct HsaMemoryRange {
    /// Start.
    pub MemoryAddress: *mut c_void,
    /// Size.
    pub SizeInBytes: HSAuint64,
}

/// `HSA_SVM_ATTRIBUTE`: one SVM attribute (`hsaKmtSVMSetAttr`).
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy, Default)]
pub struct HSA_SVM_ATTRIBUTE {
    /// An `HSA_SVM_ATTR_TYPE`.
    pub r#type: HSAuint32,
    /// Its value.
    pub value: HSAuint32,
}

/// `HsaGpuTileConfig` (`hsaKmtGetTileConfig`).
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy)]
pub struct HsaGpuTileConfig {
    /// Caller's array for the tile configs.
    pub TileConfig: *mut HSAuint32,
    /// Caller's array for the macro tile configs.
    pub MacroTileConfig: *mut HSAuint32,
    /// In: entries of `TileConfig`; out: entries filled.
    pub NumTileConfigs: HSAuint32,
    /// In: entries of `MacroTileConfig`; out: entries filled.
    pub NumMacroTileConfigs: HSAuint32,
    /// `GB_ADDR_CONFIG`.
    pub GbAddrConfig: HSAuint32,
    /// Memory banks.
    pub NumBanks: HSAuint32,
    /// Memory ranks.
    pub NumRanks: HSAuint32,
    /// Reserved.
    pub Reserved: [HSAuint32; 7],
}

/// `HsaAMDGPUDeviceHandle`: a libdrm `amdgpu_device_handle`.
pub type HsaAMDGPUDeviceHandle = *mut c_void;

c_enums! {
    fn describe_enums;

    /// `HSA_CACHING_TYPE`
    pub enum HSA_CACHING_TYPE: u32 {
        HSA_CACHING_CACHED = 0,
        HSA_CACHING_NONCACHED = 1,
        HSA_CACHING_WRITECOMBINED = 2,
        HSA_CACHING_RESERVED = 3,
        HSA_CACHING_NUM_CACHING = 4,
        HSA_CACHING_SIZE = 0xFFFF_FFFF,
    }

    /// `HSA_PAGE_SIZE`
    pub enum HSA_PAGE_SIZE: u32 {
        HSA_PAGE_SIZE_4KB = 0,
        HSA_PAGE_SIZE_64KB = 1,
        HSA_PAGE_SIZE_2MB = 2,
        HSA_PAGE_SIZE_1GB = 3,
    }

    /// `HSA_DEVICE`
    pub enum HSA_DEVICE: u32 {
        HSA_DEVICE_CPU = 0,
        HSA_DEVICE_GPU = 1,
        MAX_HSA_DEVICE = 2,
    }

    /// `HSA_POINTER_TYPE`
    pub enum HSA_POINTER_TYPE: u32 {
        HSA_POINTER_UNKNOWN = 0,
        HSA_POINTER_ALLOCATED = 1,
        HSA_POINTER_REGISTERED_USER = 2,
        HSA_POINTER_REGISTERED_GRAPHICS = 3,
        HSA_POINTER_REGISTERED_SHARED = 4,
        HSA_POINTER_RESERVED_ADDR = 5,
    }

    /// `HSA_SVM_FLAGS`
    pub enum HSA_SVM_FLAGS: u32 {
        HSA_SVM_FLAG_HOST_ACCESS = 0x01,
        HSA_SVM_FLAG_COHERENT = 0x02,
        HSA_SVM_FLAG_HIVE_LOCAL = 0x04,
        HSA_SVM_FLAG_GPU_RO = 0x08,
        HSA_SVM_FLAG_GPU_EXEC = 0x10,
        HSA_SVM_FLAG_GPU_READ_MOSTLY = 0x20,
        HSA_SVM_FLAG_GPU_ALWAYS_MAPPED = 0x40,
        HSA_SVM_FLAG_EXT_COHERENT = 0x80,
    }

    /// `HSA_SVM_ATTR_TYPE`
    pub enum HSA_SVM_ATTR_TYPE: u32 {
        HSA_SVM_ATTR_PREFERRED_LOC = 0,
        HSA_SVM_ATTR_PREFETCH_LOC = 1,
        HSA_SVM_ATTR_ACCESS = 2,
        HSA_SVM_ATTR_ACCESS_IN_PLACE = 3,
        HSA_SVM_ATTR_NO_ACCESS = 4,
        HSA_SVM_ATTR_SET_FLAGS = 5,
        HSA_SVM_ATTR_CLR_FLAGS = 6,
        HSA_SVM_ATTR_GRANULARITY = 7,
    }
}

/// Adds this module's rows.
pub(crate) fn describe(d: &mut Description) {
    describe_enums(d);
    scalars!(d, HsaSharedMemoryHandle, HsaAMDGPUDeviceHandle);
    HsaMemFlags::describe(d);
    HsaMemMapFlags::describe(d);
    HSA_REGISTER_MEM_FLAGS::describe(d);
    layout!(
        d,
        HsaGraphicsResourceInfo {
            MemoryAddress,
            SizeInBytes,
            Metadata,
            MetadataSizeInBytes,
            NodeId,
        }
    );
    layout!(
        d,
        HsaPointerInfo {
            Type,
            Node,
            MemFlags,
            CPUAddress,
            GPUAddress,
            SizeInBytes,
            NRegisteredNodes,
            NMappedNodes,
            RegisteredNodes,
            MappedNodes,
            UserData,
        }
    );
    layout!(d, HsaMemoryRange { MemoryAddress, SizeInBytes });
    layout!(d, HSA_SVM_ATTRIBUTE { "type" => r#type, value, });
    layout!(
        d,
        HsaGpuTileConfig {
            TileConfig,
            MacroTileConfig,
            NumTileConfigs,
            NumMacroTileConfigs,
            GbAddrConfig,
            NumBanks,
            NumRanks,
            Reserved,
        }
    );
}
