//! The constants of `kfd_sysfs.h`: bits and codes found in the sysfs topology files
//! (`nodes/N/properties` `capability`, `capability2`, `debug_prop`; `mem_banks/M/properties`
//! `heap_type`, `flags`; `caches/C/properties` `type`; `io_links/L/properties` `type`, `flags`).

uapi_consts! {
    table SYSFS_H_DEFINES;

    /// `capability`: the node is hot-pluggable.
    pub const HSA_CAP_HOT_PLUGGABLE: u32 = 0x0000_0001;
    /// `capability`: ATS (IOMMUv2 address translation) present; always cleared by current
    /// kernels.
    pub const HSA_CAP_ATS_PRESENT: u32 = 0x0000_0002;
    /// `capability`: shared with graphics.
    pub const HSA_CAP_SHARED_WITH_GRAPHICS: u32 = 0x0000_0004;
    /// `capability`: queue sizes must be powers of two.
    pub const HSA_CAP_QUEUE_SIZE_POW2: u32 = 0x0000_0008;
    /// `capability`: queue sizes are limited to 32 bits.
    pub const HSA_CAP_QUEUE_SIZE_32BIT: u32 = 0x0000_0010;
    /// `capability`: queue idle events supported.
    pub const HSA_CAP_QUEUE_IDLE_EVENT: u32 = 0x0000_0020;
    /// `capability`: virtual address limit.
    pub const HSA_CAP_VA_LIMIT: u32 = 0x0000_0040;
    /// `capability`: address watch points supported.
    pub const HSA_CAP_WATCH_POINTS_SUPPORTED: u32 = 0x0000_0080;
    /// `capability`: log2 of the number of watch points (field mask).
    pub const HSA_CAP_WATCH_POINTS_TOTALBITS_MASK: u32 = 0x0000_0f00;
    /// `capability`: shift of [`HSA_CAP_WATCH_POINTS_TOTALBITS_MASK`].
    pub const HSA_CAP_WATCH_POINTS_TOTALBITS_SHIFT: u32 = 8;
    /// `capability`: doorbell type (field mask), `HSA_CAP_DOORBELL_TYPE_*`.
    pub const HSA_CAP_DOORBELL_TYPE_TOTALBITS_MASK: u32 = 0x0000_3000;
    /// `capability`: shift of [`HSA_CAP_DOORBELL_TYPE_TOTALBITS_MASK`].
    pub const HSA_CAP_DOORBELL_TYPE_TOTALBITS_SHIFT: u32 = 12;

    /// Doorbell type field value: pre-1.0 doorbells.
    pub const HSA_CAP_DOORBELL_TYPE_PRE_1_0: u32 = 0x0;
    /// Doorbell type field value: 1.0 doorbells (32-bit, gfx8 and older).
    pub const HSA_CAP_DOORBELL_TYPE_1_0: u32 = 0x1;
    /// Doorbell type field value: 2.0 doorbells (64-bit, gfx9 and later).
    pub const HSA_CAP_DOORBELL_TYPE_2_0: u32 = 0x2;
    /// `capability`: AQL queue rings are mapped twice (wrap-around without split packets).
    pub const HSA_CAP_AQL_QUEUE_DOUBLE_MAP: u32 = 0x0000_4000;

    /// `capability`: trap debugging supported (KFD 1.13).
    pub const HSA_CAP_TRAP_DEBUG_SUPPORT: u32 = 0x0000_8000;
    /// `capability`: wave launch trap override supported (KFD 1.13).
    pub const HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_TRAP_OVERRIDE_SUPPORTED: u32 = 0x0001_0000;
    /// `capability`: wave launch mode supported (KFD 1.13).
    pub const HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_MODE_SUPPORTED: u32 = 0x0002_0000;
    /// `capability`: precise memory operations supported (KFD 1.13).
    pub const HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED: u32 = 0x0004_0000;

    /// `capability`: the old SRAM EDC bit; old user mode depends on it being 0.
    pub const HSA_CAP_RESERVED_WAS_SRAM_EDCSUPPORTED: u32 = 0x0008_0000;

    /// `capability`: memory EDC supported.
    pub const HSA_CAP_MEM_EDCSUPPORTED: u32 = 0x0010_0000;
    /// `capability`: RAS event notification supported.
    pub const HSA_CAP_RASEVENTNOTIFY: u32 = 0x0020_0000;
    /// `capability`: ASIC revision (field mask).
    pub const HSA_CAP_ASIC_REVISION_MASK: u32 = 0x03c0_0000;
    /// `capability`: shift of [`HSA_CAP_ASIC_REVISION_MASK`].
    pub const HSA_CAP_ASIC_REVISION_SHIFT: u32 = 22;
    /// `capability`: SRAM EDC supported (KFD 1.4).
    pub const HSA_CAP_SRAM_EDCSUPPORTED: u32 = 0x0400_0000;
    /// `capability`: the SVM API is supported.
    pub const HSA_CAP_SVMAPI_SUPPORTED: u32 = 0x0800_0000;
    /// `capability`: the host can access device memory coherently.
    pub const HSA_CAP_FLAGS_COHERENTHOSTACCESS: u32 = 0x1000_0000;
    /// `capability`: the firmware supports trap debugging (KFD 1.13).
    pub const HSA_CAP_TRAP_DEBUG_FIRMWARE_SUPPORTED: u32 = 0x2000_0000;
    /// `capability`: precise ALU operations supported.
    pub const HSA_CAP_TRAP_DEBUG_PRECISE_ALU_OPERATIONS_SUPPORTED: u32 = 0x4000_0000;
    /// `capability`: per-queue reset supported.
    pub const HSA_CAP_PER_QUEUE_RESET_SUPPORTED: u32 = 0x8000_0000;
    /// `capability`: reserved bits (0xe00f8000 before those bits were assigned).
    pub const HSA_CAP_RESERVED: u32 = 0x000f_8000;

    /// `capability2`: per-SDMA-queue reset supported.
    pub const HSA_CAP2_PER_SDMA_QUEUE_RESET_SUPPORTED: u32 = 0x0000_0001;
    /// `capability2`: LDS out-of-address-range exceptions can be subscribed (KFD 1.21).
    pub const HSA_CAP2_TRAP_DEBUG_LDS_OUT_OF_ADDR_RANGE_SUPPORTED: u32 = 0x0000_0002;
    /// `capability2`: reserved bits.
    pub const HSA_CAP2_RESERVED: u32 = 0xffff_fffc;

    /// `debug_prop`: low bit of the watch address mask (field mask).
    pub const HSA_DBG_WATCH_ADDR_MASK_LO_BIT_MASK: u64 = 0x0000_000f;
    /// `debug_prop`: shift of [`HSA_DBG_WATCH_ADDR_MASK_LO_BIT_MASK`].
    pub const HSA_DBG_WATCH_ADDR_MASK_LO_BIT_SHIFT: u32 = 0;
    /// `debug_prop`: high bit of the watch address mask (field mask).
    pub const HSA_DBG_WATCH_ADDR_MASK_HI_BIT_MASK: u64 = 0x0000_03f0;
    /// `debug_prop`: shift of [`HSA_DBG_WATCH_ADDR_MASK_HI_BIT_MASK`].
    pub const HSA_DBG_WATCH_ADDR_MASK_HI_BIT_SHIFT: u32 = 4;
    /// `debug_prop`: dispatch info is always valid.
    pub const HSA_DBG_DISPATCH_INFO_ALWAYS_VALID: u64 = 0x0000_0400;
    /// `debug_prop`: watch points are exclusive.
    pub const HSA_DBG_WATCHPOINTS_EXCLUSIVE: u64 = 0x0000_0800;
    /// `debug_prop`: reserved bits.
    pub const HSA_DBG_RESERVED: u64 = 0xffff_ffff_ffff_f000;

    /// `heap_type`: system memory.
    pub const HSA_MEM_HEAP_TYPE_SYSTEM: u32 = 0;
    /// `heap_type`: CPU-visible VRAM (large BAR).
    pub const HSA_MEM_HEAP_TYPE_FB_PUBLIC: u32 = 1;
    /// `heap_type`: VRAM, not entirely CPU-visible.
    pub const HSA_MEM_HEAP_TYPE_FB_PRIVATE: u32 = 2;
    /// `heap_type`: GDS.
    pub const HSA_MEM_HEAP_TYPE_GPU_GDS: u32 = 3;
    /// `heap_type`: LDS.
    pub const HSA_MEM_HEAP_TYPE_GPU_LDS: u32 = 4;
    /// `heap_type`: scratch.
    pub const HSA_MEM_HEAP_TYPE_GPU_SCRATCH: u32 = 5;

    /// Memory bank `flags`: hot-pluggable.
    pub const HSA_MEM_FLAGS_HOT_PLUGGABLE: u32 = 0x0000_0001;
    /// Memory bank `flags`: non-volatile.
    pub const HSA_MEM_FLAGS_NON_VOLATILE: u32 = 0x0000_0002;
    /// Memory bank `flags`: reserved bits.
    pub const HSA_MEM_FLAGS_RESERVED: u32 = 0xffff_fffc;

    /// Cache `type`: data cache.
    pub const HSA_CACHE_TYPE_DATA: u32 = 0x0000_0001;
    /// Cache `type`: instruction cache.
    pub const HSA_CACHE_TYPE_INSTRUCTION: u32 = 0x0000_0002;
    /// Cache `type`: CPU cache.
    pub const HSA_CACHE_TYPE_CPU: u32 = 0x0000_0004;
    /// Cache `type`: HSA compute unit cache.
    pub const HSA_CACHE_TYPE_HSACU: u32 = 0x0000_0008;
    /// Cache `type`: reserved bits.
    pub const HSA_CACHE_TYPE_RESERVED: u32 = 0xffff_fff0;

    /// IO link `type` (CRAT link types): undefined.
    pub const HSA_IOLINK_TYPE_UNDEFINED: u32 = 0;
    /// IO link `type`: HyperTransport (AMD CPU to CPU).
    pub const HSA_IOLINK_TYPE_HYPERTRANSPORT: u32 = 1;
    /// IO link `type`: PCI Express.
    pub const HSA_IOLINK_TYPE_PCIEXPRESS: u32 = 2;
    /// IO link `type`: AMBA.
    pub const HSA_IOLINK_TYPE_AMBA: u32 = 3;
    /// IO link `type`: MIPI.
    pub const HSA_IOLINK_TYPE_MIPI: u32 = 4;
    /// IO link `type`: QPI 1.1 (Intel CPU to CPU).
    pub const HSA_IOLINK_TYPE_QPI_1_1: u32 = 5;
    /// IO link `type`: reserved.
    pub const HSA_IOLINK_TYPE_RESERVED1: u32 = 6;
    /// IO link `type`: reserved.
    pub const HSA_IOLINK_TYPE_RESERVED2: u32 = 7;
    /// IO link `type`: RapidIO.
    pub const HSA_IOLINK_TYPE_RAPID_IO: u32 = 8;
    /// IO link `type`: InfiniBand.
    pub const HSA_IOLINK_TYPE_INFINIBAND: u32 = 9;
    /// IO link `type`: reserved.
    pub const HSA_IOLINK_TYPE_RESERVED3: u32 = 10;
    /// IO link `type`: XGMI (GPU to GPU, or CPU to GPU on some systems).
    pub const HSA_IOLINK_TYPE_XGMI: u32 = 11;
    /// IO link `type`: XGOP.
    pub const HSA_IOLINK_TYPE_XGOP: u32 = 12;
    /// IO link `type`: GZ.
    pub const HSA_IOLINK_TYPE_GZ: u32 = 13;
    /// IO link `type`: Ethernet RDMA.
    pub const HSA_IOLINK_TYPE_ETHERNET_RDMA: u32 = 14;
    /// IO link `type`: other RDMA.
    pub const HSA_IOLINK_TYPE_RDMA_OTHER: u32 = 15;
    /// IO link `type`: other.
    pub const HSA_IOLINK_TYPE_OTHER: u32 = 16;

    /// IO link `flags` (CRAT flags): the link is enabled.
    pub const HSA_IOLINK_FLAGS_ENABLED: u32 = 1 << 0;
    /// IO link `flags`: not coherent.
    pub const HSA_IOLINK_FLAGS_NON_COHERENT: u32 = 1 << 1;
    /// IO link `flags`: no 32-bit atomics over the link.
    pub const HSA_IOLINK_FLAGS_NO_ATOMICS_32_BIT: u32 = 1 << 2;
    /// IO link `flags`: no 64-bit atomics over the link.
    pub const HSA_IOLINK_FLAGS_NO_ATOMICS_64_BIT: u32 = 1 << 3;
    /// IO link `flags`: no peer-to-peer DMA over the link.
    pub const HSA_IOLINK_FLAGS_NO_PEER_TO_PEER_DMA: u32 = 1 << 4;
    /// IO link `flags`: reserved bits.
    pub const HSA_IOLINK_FLAGS_RESERVED: u32 = 0xffff_ffe0;
}
