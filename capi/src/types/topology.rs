//! Topology types: system, node, memory-bank, cache and IO-link properties.

use super::{HSAint32, HSAuint8, HSAuint16, HSAuint32, HSAuint64, bitfield, c_enums};
use crate::layout::{Description, constants, layout};

/// `HSA_PUBLIC_NAME_SIZE`: length of the node name arrays.
pub const HSA_PUBLIC_NAME_SIZE: usize = 64;
/// `HSA_CPU_SIBLINGS`: length of a cache's sibling map.
pub const HSA_CPU_SIBLINGS: usize = 256;
/// `HSA_PROCESSORID_ALL`
pub const HSA_PROCESSORID_ALL: u32 = 0xFFFF_FFFF;

/// `HsaSystemProperties` (`hsaKmtAcquireSystemProperties`).
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy, Default)]
pub struct HsaSystemProperties {
    /// Number of nodes.
    pub NumNodes: HSAuint32,
    /// `platform_oem`.
    pub PlatformOem: HSAuint32,
    /// `platform_id`.
    pub PlatformId: HSAuint32,
    /// `platform_rev`.
    pub PlatformRev: HSAuint32,
}

bitfield! {
    /// `HSA_ENGINE_ID`: firmware and gfx version of a node.
    pub struct HSA_ENGINE_ID { pub Value: HSAuint32 } "ui32." {
        uCode: 10,
        Major: 6,
        Minor: 8,
        Stepping: 8,
    }
}

bitfield! {
    /// `HSA_ENGINE_VERSION`: SDMA firmware version.
    pub struct HSA_ENGINE_VERSION { pub Value: HSAuint32 } "" {
        uCodeSDMA: 10,
        uCodeRes: 10,
        Reserved: 12,
    }
}

bitfield! {
    /// `HSA_CAPABILITY`: the node's `capability` word.
    pub struct HSA_CAPABILITY { pub Value: HSAuint32 } "ui32." {
        HotPluggable: 1,
        HSAMMUPresent: 1,
        SharedWithGraphics: 1,
        QueueSizePowerOfTwo: 1,
        QueueSize32bit: 1,
        QueueIdleEvent: 1,
        VALimit: 1,
        WatchPointsSupported: 1,
        WatchPointsTotalBits: 4,
        DoorbellType: 2,
        AQLQueueDoubleMap: 1,
        DebugTrapSupported: 1,
        WaveLaunchTrapOverrideSupported: 1,
        WaveLaunchModeSupported: 1,
        PreciseMemoryOperationsSupported: 1,
        DEPRECATED_SRAM_EDCSupport: 1,
        Mem_EDCSupport: 1,
        RASEventNotify: 1,
        ASICRevision: 4,
        SRAM_EDCSupport: 1,
        SVMAPISupported: 1,
        CoherentHostAccess: 1,
        DebugSupportedFirmware: 1,
        PreciseALUOperationsSupported: 1,
        PerQueueResetSupported: 1,
    }
}

bitfield! {
    /// `HSA_CAPABILITY2`: the node's `capability2` word.
    pub struct HSA_CAPABILITY2 { pub Value: HSAuint32 } "ui32." {
        PerSDMAQueueResetSupported: 1,
        Reserved: 31,
    }
}

bitfield! {
    /// `HSA_DEBUG_PROPERTIES`: the node's `debug_prop` word.
    pub struct HSA_DEBUG_PROPERTIES { pub Value: HSAuint64 } "" {
        WatchAddrMaskLoBit: 4,
        WatchAddrMaskHiBit: 6,
        DispatchInfoAlwaysValid: 1,
        AddressWatchpointShareKind: 1,
        Reserved: 52,
    }
}

/// `HsaNodeProperties` (`hsaKmtGetNodeProperties`).
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy)]
pub struct HsaNodeProperties {
    /// CPU cores.
    pub NumCPUCores: HSAuint32,
    /// SIMDs.
    pub NumFComputeCores: HSAuint32,
    /// Neural processing units.
    pub NumNeuralCores: HSAuint32,
    /// Memory banks (plus the heaps the library adds on GPU nodes).
    pub NumMemoryBanks: HSAuint32,
    /// Caches.
    pub NumCaches: HSAuint32,
    /// IO links plus P2P links.
    pub NumIOLinks: HSAuint32,
    /// First CPU core id.
    pub CComputeIdLo: HSAuint32,
    /// First SIMD id.
    pub FComputeIdLo: HSAuint32,
    /// `capability`.
    pub Capability: HSA_CAPABILITY,
    /// `capability2`.
    pub Capability2: HSA_CAPABILITY2,
    /// Waves per SIMD.
    pub MaxWavesPerSIMD: HSAuint32,
    /// LDS size in KiB.
    pub LDSSizeInKB: HSAuint32,
    /// GDS size in KiB.
    pub GDSSizeInKB: HSAuint32,
    /// Wavefront size.
    pub WaveFrontSize: HSAuint32,
    /// Shader engines.
    pub NumShaderBanks: HSAuint32,
    /// SIMD arrays per engine.
    pub NumArrays: HSAuint32,
    /// CUs per array.
    pub NumCUPerArray: HSAuint32,
    /// SIMDs per CU.
    pub NumSIMDPerCU: HSAuint32,
    /// Scratch wave slots per CU.
    pub MaxSlotsScratchCU: HSAuint32,
    /// Firmware and gfx version.
    pub EngineId: HSA_ENGINE_ID,
    /// gfx version from `HSA_OVERRIDE_GFX_VERSION`.
    pub OverrideEngineId: HSA_ENGINE_ID,
    /// PCI vendor id.
    pub VendorId: HSAuint16,
    /// PCI device id.
    pub DeviceId: HSAuint16,
    /// PCI location (bus/device/function).
    pub LocationId: HSAuint32,
    /// Local memory size.
    pub LocalMemSize: HSAuint64,
    /// Maximum GPU engine clock, MHz.
    pub MaxEngineClockMhzFCompute: HSAuint32,
    /// Maximum CPU clock, MHz.
    pub MaxEngineClockMhzCCompute: HSAuint32,
    /// DRM render minor.
    pub DrmRenderMinor: HSAint32,
    /// Marketing name, UTF-16.
    pub MarketingName: [HSAuint16; HSA_PUBLIC_NAME_SIZE],
    /// Architecture name, ASCII.
    pub AMDName: [HSAuint8; HSA_PUBLIC_NAME_SIZE],
    /// SDMA firmware version.
    pub uCodeEngineVersions: HSA_ENGINE_VERSION,
    /// `debug_prop`.
    pub DebugProperties: HSA_DEBUG_PROPERTIES,
    /// XGMI hive.
    pub HiveID: HSAuint64,
    /// PCIe SDMA engines.
    pub NumSdmaEngines: HSAuint32,
    /// XGMI SDMA engines.
    pub NumSdmaXgmiEngines: HSAuint32,
    /// SDMA queues per engine.
    pub NumSdmaQueuesPerEngine: HSAuint8,
    /// Compute queues.
    pub NumCpQueues: HSAuint8,
    /// GWS barriers.
    pub NumGws: HSAuint8,
    /// 1 for an integrated GPU.
    pub Integrated: HSAuint8,
    /// PCI domain.
    pub Domain: HSAuint32,
    /// Unique id.
    pub UniqueID: HSAuint64,
    /// VGPR bytes per CU.
    pub VGPRSizePerCU: HSAuint32,
    /// SGPR bytes per CU.
    pub SGPRSizePerCU: HSAuint32,
    /// XCCs.
    pub NumXcc: HSAuint32,
    /// KFD gpu_id.
    pub KFDGpuID: HSAuint32,
    /// GPU family id.
    pub FamilyID: HSAuint32,
}

impl Default for HsaNodeProperties {
    fn default() -> Self {
        // SAFETY: every member is an integer or an array of integers; all-zero bytes is a
        // valid value of each.
        unsafe { core::mem::zeroed() }
    }
}

bitfield! {
    /// `HSA_MEMORYPROPERTY`: a memory bank's `flags`.
    pub struct HSA_MEMORYPROPERTY { pub MemoryProperty: HSAuint32 } "ui32." {
        HotPluggable: 1,
        NonVolatile: 1,
        Reserved: 30,
    }
}

/// The size of a memory bank, as the anonymous union of `HsaMemoryProperties` holds it.
#[repr(C, packed(4))]
#[derive(Clone, Copy)]
pub union HsaMemorySize {
    /// The size.
    pub SizeInBytes: HSAuint64,
    /// The size in halves.
    pub ui32: HsaMemorySizeHalves,
}

impl core::fmt::Debug for HsaMemorySize {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // SAFETY: both members are plain integers covering the same 8 bytes.
        let v = unsafe { self.SizeInBytes };
        f.debug_struct("HsaMemorySize").field("SizeInBytes", &v).finish()
    }
}

/// The two halves of a memory bank's size.
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy, Default)]
pub struct HsaMemorySizeHalves {
    /// Low 32 bits.
    pub SizeInBytesLow: HSAuint32,
    /// High 32 bits.
    pub SizeInBytesHigh: HSAuint32,
}

/// `HsaMemoryProperties` (`hsaKmtGetNodeMemoryProperties`).
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy)]
pub struct HsaMemoryProperties {
    /// Kind of heap.
    pub HeapType: HSA_HEAPTYPE,
    /// Size (C: an anonymous union).
    pub Size: HsaMemorySize,
    /// Flags.
    pub Flags: HSA_MEMORYPROPERTY,
    /// Bus width.
    pub Width: HSAuint32,
    /// Maximum memory clock, MHz.
    pub MemoryClockMax: HSAuint32,
    /// Virtual base address (reported apertures), else 0.
    pub VirtualBaseAddress: HSAuint64,
}

impl Default for HsaMemoryProperties {
    fn default() -> Self {
        Self {
            HeapType: 0,
            Size: HsaMemorySize { SizeInBytes: 0 },
            Flags: HSA_MEMORYPROPERTY::default(),
            Width: 0,
            MemoryClockMax: 0,
            VirtualBaseAddress: 0,
        }
    }
}

bitfield! {
    /// `HsaCacheType`: a cache's `type`.
    pub struct HsaCacheType { pub Value: HSAuint32 } "ui32." {
        Data: 1,
        Instruction: 1,
        CPU: 1,
        HSACU: 1,
        Reserved: 28,
    }
}

/// `HsaCacheProperties` (`hsaKmtGetNodeCacheProperties`).
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy)]
pub struct HsaCacheProperties {
    /// First processor id.
    pub ProcessorIdLow: HSAuint32,
    /// Level.
    pub CacheLevel: HSAuint32,
    /// Size (KiB).
    pub CacheSize: HSAuint32,
    /// Line size in bytes.
    pub CacheLineSize: HSAuint32,
    /// Lines per tag.
    pub CacheLinesPerTag: HSAuint32,
    /// Associativity.
    pub CacheAssociativity: HSAuint32,
    /// Latency, ns.
    pub CacheLatency: HSAuint32,
    /// Type.
    pub CacheType: HsaCacheType,
    /// Processors sharing the cache, one bit each.
    pub SiblingMap: [HSAuint32; HSA_CPU_SIBLINGS],
}

impl Default for HsaCacheProperties {
    fn default() -> Self {
        // SAFETY: every member is an integer or an array of integers.
        unsafe { core::mem::zeroed() }
    }
}

/// `HsaCComputeProperties`.
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy)]
pub struct HsaCComputeProperties {
    /// Sibling map.
    pub SiblingMap: [HSAuint32; HSA_CPU_SIBLINGS],
}

bitfield! {
    /// `HSA_LINKPROPERTY`: an IO link's `flags`.
    pub struct HSA_LINKPROPERTY { pub LinkProperty: HSAuint32 } "ui32." {
        Override: 1,
        NonCoherent: 1,
        NoAtomics32bit: 1,
        NoAtomics64bit: 1,
        NoPeerToPeerDMA: 1,
        Reserved: 27,
    }
}

/// `HsaIoLinkProperties` (`hsaKmtGetNodeIoLinkProperties`).
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy, Default)]
pub struct HsaIoLinkProperties {
    /// Link type.
    pub IoLinkType: HSA_IOLINKTYPE,
    /// Bus interface major version.
    pub VersionMajor: HSAuint32,
    /// Bus interface minor version.
    pub VersionMinor: HSAuint32,
    /// Source node.
    pub NodeFrom: HSAuint32,
    /// Destination node.
    pub NodeTo: HSAuint32,
    /// Weight.
    pub Weight: HSAuint32,
    /// Minimum latency, ns.
    pub MinimumLatency: HSAuint32,
    /// Maximum latency, ns.
    pub MaximumLatency: HSAuint32,
    /// Minimum bandwidth, MB/s.
    pub MinimumBandwidth: HSAuint32,
    /// Maximum bandwidth, MB/s.
    pub MaximumBandwidth: HSAuint32,
    /// Recommended transfer size.
    pub RecTransferSize: HSAuint32,
    /// Recommended SDMA engines.
    pub RecSdmaEngIdMask: HSAuint32,
    /// Flags.
    pub Flags: HSA_LINKPROPERTY,
}

c_enums! {
    fn describe_enums;

    /// `HSA_HEAPTYPE`: kind of memory heap.
    pub enum HSA_HEAPTYPE: u32 {
        HSA_HEAPTYPE_SYSTEM = 0,
        HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC = 1,
        HSA_HEAPTYPE_FRAME_BUFFER_PRIVATE = 2,
        HSA_HEAPTYPE_GPU_GDS = 3,
        HSA_HEAPTYPE_GPU_LDS = 4,
        HSA_HEAPTYPE_GPU_SCRATCH = 5,
        HSA_HEAPTYPE_DEVICE_SVM = 6,
        HSA_HEAPTYPE_MMIO_REMAP = 7,
        HSA_HEAPTYPE_NUMHEAPTYPES = 8,
        HSA_HEAPTYPE_SIZE = 0xFFFF_FFFF,
    }

    /// `HSA_IOLINKTYPE`: kind of IO link.
    pub enum HSA_IOLINKTYPE: u32 {
        HSA_IOLINKTYPE_UNDEFINED = 0,
        HSA_IOLINKTYPE_HYPERTRANSPORT = 1,
        HSA_IOLINKTYPE_PCIEXPRESS = 2,
        HSA_IOLINKTYPE_AMBA = 3,
        HSA_IOLINKTYPE_MIPI = 4,
        HSA_IOLINK_TYPE_QPI_1_1 = 5,
        HSA_IOLINK_TYPE_RESERVED1 = 6,
        HSA_IOLINK_TYPE_RESERVED2 = 7,
        HSA_IOLINK_TYPE_RAPID_IO = 8,
        HSA_IOLINK_TYPE_INFINIBAND = 9,
        HSA_IOLINK_TYPE_RESERVED3 = 10,
        HSA_IOLINK_TYPE_XGMI = 11,
        HSA_IOLINK_TYPE_XGOP = 12,
        HSA_IOLINK_TYPE_GZ = 13,
        HSA_IOLINK_TYPE_ETHERNET_RDMA = 14,
        HSA_IOLINK_TYPE_RDMA_OTHER = 15,
        HSA_IOLINK_TYPE_OTHER = 16,
        HSA_IOLINKTYPE_NUMIOLINKTYPES = 17,
        HSA_IOLINKTYPE_SIZE = 0xFFFF_FFFF,
    }
}

/// Adds this module's rows.
pub(crate) fn describe(d: &mut Description) {
    constants!(d, HSA_PUBLIC_NAME_SIZE, HSA_CPU_SIBLINGS, HSA_PROCESSORID_ALL);
    describe_enums(d);
    layout!(d, HsaSystemProperties { NumNodes, PlatformOem, PlatformId, PlatformRev });
    HSA_ENGINE_ID::describe(d);
    HSA_ENGINE_VERSION::describe(d);
    HSA_CAPABILITY::describe(d);
    HSA_CAPABILITY2::describe(d);
    HSA_DEBUG_PROPERTIES::describe(d);
    layout!(
        d,
        HsaNodeProperties {
            NumCPUCores,
            NumFComputeCores,
            NumNeuralCores,
            NumMemoryBanks,
            NumCaches,
            NumIOLinks,
            CComputeIdLo,
            FComputeIdLo,
            Capability,
            Capability2,
            MaxWavesPerSIMD,
            LDSSizeInKB,
            GDSSizeInKB,
            WaveFrontSize,
            NumShaderBanks,
            NumArrays,
            NumCUPerArray,
            NumSIMDPerCU,
            MaxSlotsScratchCU,
            EngineId,
            OverrideEngineId,
            VendorId,
            DeviceId,
            LocationId,
            LocalMemSize,
            MaxEngineClockMhzFCompute,
            MaxEngineClockMhzCCompute,
            DrmRenderMinor,
            MarketingName,
            AMDName,
            uCodeEngineVersions,
            DebugProperties,
            HiveID,
            NumSdmaEngines,
            NumSdmaXgmiEngines,
            NumSdmaQueuesPerEngine,
            NumCpQueues,
            NumGws,
            Integrated,
            Domain,
            UniqueID,
            VGPRSizePerCU,
            SGPRSizePerCU,
            NumXcc,
            KFDGpuID,
            FamilyID,
        }
    );
    HSA_MEMORYPROPERTY::describe(d);
    layout!(d, HsaMemoryProperties {
        HeapType,
        "SizeInBytes" => Size.SizeInBytes,
        "ui32" => Size.ui32,
        "ui32.SizeInBytesLow" => Size.ui32.SizeInBytesLow,
        "ui32.SizeInBytesHigh" => Size.ui32.SizeInBytesHigh,
        Flags,
        Width,
        MemoryClockMax,
        VirtualBaseAddress,
    });
    HsaCacheType::describe(d);
    layout!(
        d,
        HsaCacheProperties {
            ProcessorIdLow,
            CacheLevel,
            CacheSize,
            CacheLineSize,
            CacheLinesPerTag,
            CacheAssociativity,
            CacheLatency,
            CacheType,
            SiblingMap,
        }
    );
    layout!(d, HsaCComputeProperties { SiblingMap });
    HSA_LINKPROPERTY::describe(d);
    layout!(
        d,
        HsaIoLinkProperties {
            IoLinkType,
            VersionMajor,
            VersionMinor,
            NodeFrom,
            NodeTo,
            Weight,
            MinimumLatency,
            MaximumLatency,
            MinimumBandwidth,
            MaximumBandwidth,
            RecTransferSize,
            RecSdmaEngIdMask,
            Flags,
        }
    );
}
