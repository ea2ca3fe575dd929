//! Every capacity of the crate, one name each: the sizes of the fixed tables, lists and buffers
//! core keeps instead of allocating, and the bounds on repeated work (retries, batches).
//!
//! Running out of any of them is a typed error, never a panic or a block. The modules that use a
//! capacity re-export it where callers look for it (for instance [`DEFAULT_NODES`] is also
//! `topology::DEFAULT_NODES`); this module is where it is declared and explained.
//!
//! Constants that describe the kernel, the hardware or a packet format (the 4096 slots of the
//! event page, the most dwords of a PM4 indirect buffer, the largest AQL queue) are facts, not
//! choices: they stay with the format they describe.
//!
//! Capacities that are type parameters (`Topology<NODES, ..>`, `EventTable<N>`, `WaitSet<N>`, the
//! memory manager's [`MemoryStorage`](crate::device::memory_manager::MemoryStorage)) take these
//! as their defaults; a caller who needs more picks another value at the type.

// ---- topology snapshot -------------------------------------------------------------------------

/// Default node capacity of a [`Topology`](crate::topology::Topology): 16 GPUs of 8 partitions
/// each (128 GPU nodes) and 8 CPU nodes (an 8-GPU MI300X in CPX mode has 64 + 2). The caches
/// and links of such a machine exceed [`DEFAULT_CACHES`] and [`DEFAULT_LINKS`] (about 5,900 and
/// 16,500), which the snapshot's 512 KiB budget does not allow: it is read as far as those
/// tables hold, with a warning naming what was left out.
pub const DEFAULT_NODES: usize = 136;
/// Default memory-bank capacity of a snapshot (all nodes together).
pub const DEFAULT_MEM_BANKS: usize = 256;
/// Default cache capacity of a snapshot (all nodes together; the MI308X CPX capture has 1,472).
pub const DEFAULT_CACHES: usize = 1600;
/// Default link capacity of a snapshot (io + p2p + derived links of all nodes together; ~4,000
/// io_links on an 8-GPU MI300X in CPX mode).
pub const DEFAULT_LINKS: usize = 4608;
/// Default capacity of a snapshot for keys the kernel contract does not list.
pub const DEFAULT_UNKNOWN_KEYS: usize = 64;
/// Default capacity of a snapshot's warning list.
pub const DEFAULT_WARNINGS: usize = 64;
/// The most entries one directory listing may hold (nodes, or one node's banks, caches or
/// links).
pub const LISTING_CAPACITY: usize = 1024;
/// Longest node name stored, in bytes (the kernel's limit is 31).
pub const NAME_CAPACITY: usize = 32;
/// Longest unknown key name stored, in bytes.
pub const UNKNOWN_KEY_NAME_CAPACITY: usize = 32;
/// Capacity of a [`SiblingMap`](crate::topology::SiblingMap) in entries (libhsakmt's
/// `HSA_CPU_SIBLINGS`).
pub const SIBLING_MAP_CAPACITY: usize = 256;
/// The longest `HSA_OVERRIDE_GFX_VERSION` value accepted, in bytes.
pub const OVERRIDE_MAX_LEN: usize = 32;
/// Smallest read buffer [`Topology::refresh`](crate::topology::Topology::refresh) accepts: one
/// page, the most a sysfs attribute holds.
pub const MIN_READ_BUFFER: usize = 4096;
/// A read buffer large enough for [`Topology::refresh`](crate::topology::Topology::refresh) to
/// read the entry files of a directory in batches (typical files are a few hundred bytes)
/// before parsing them, which keeps the kernel's file path and the parser warm in the caches.
/// Each file is still read into a window of one page, so any size from [`MIN_READ_BUFFER`] up
/// gives the same snapshot.
pub const READ_BUFFER: usize = 4 * MIN_READ_BUFFER;
/// Entry files of one directory read back to back before they are parsed.
pub const TOPOLOGY_READ_BATCH: usize = 32;
/// How many times a snapshot is retaken when `generation_id` changed while it was read.
pub const GENERATION_RETRIES: u32 = 8;

// ---- memory ------------------------------------------------------------------------------------

/// Object capacity of a [`Kfd`](crate::device::Kfd) built with `Kfd::new`: an application with
/// up to a thousand live buffers (about 0.7 MiB of tables, inline, small enough for a `Box::new`
/// through an ordinary 8 MiB main-thread stack in debug builds). Build with
/// [`Kfd::with_memory`](crate::device::Kfd::with_memory) for more.
pub const DEFAULT_MEMORY_OBJECTS: usize = 1024;
/// A memory-object table capacity that serves 100,000 live allocations (for callers who size
/// an [`ObjectTable`](crate::memory::objects::ObjectTable) of their own).
pub const OBJECT_TABLE_CAPACITY: usize = 1 << 17;
/// A [`VaAllocator`](crate::memory::va::VaAllocator) descriptor capacity that comfortably
/// serves 100,000 live allocations (each allocation can leave one free fragment beside it).
pub const VA_ALLOCATOR_CAPACITY: usize = 1 << 18;
/// The most disjoint address ranges one VA allocator manages — and so the most reserved ranges
/// (slabs, or the reserved-mode range) a device facade keeps for its life.
pub const MAX_VA_RANGES: usize = 64;
/// The number of node ids a [`NodeSet`](crate::memory::NodeSet) holds (ids `0..128`), and so
/// the most topology nodes the memory manager tracks. A multiple of 64.
pub const NODE_SET_CAPACITY: usize = 128;
/// The number of KFD buffer handles one memory object can hold. libhsakmt splits userptr
/// ranges larger than
/// [`BIGGEST_SINGLE_BUF_SIZE`](crate::memory::aperture::BIGGEST_SINGLE_BUF_SIZE)
/// (512 GiB − 2 MiB) into several buffers; four cover 2 TiB.
pub const MAX_KFD_HANDLES: usize = 4;
/// The most mapped slices of scratch ranges a process holds at once, over all its GPUs
/// ([`ScratchSlices`](crate::memory::scratch_slices::ScratchSlices)): libhsakmt gives every
/// slice mapped with `hsaKmtMapMemoryToGPU` a buffer of its own; a runtime maps one per queue
/// that needs scratch, kfdtest three.
pub const SCRATCH_SLICE_CAPACITY: usize = 64;
/// How many allocation shapes (node, size, alignment, flags) the recycle cache tells apart.
pub const RECYCLE_SHAPES: usize = 16;
/// How many freed allocations of one shape the recycle cache keeps.
pub const RECYCLE_DEPTH: usize = 8;
/// How many freed allocations the recycle cache keeps in all: the most address ranges and
/// object slots it holds back, and the most it releases in one flush.
pub const RECYCLE_CAPACITY: usize = 64;
/// Frees that can publish their completion without taking the memory lock a second time at
/// once (more concurrent frees take the lock again, as without this mechanism).
pub const PENDING_FREE_SLOTS: usize = 16;
/// The most SVM attributes one call can carry (the platform assembles the ioctl argument in a
/// fixed buffer).
pub const MAX_SVM_ATTRIBUTES: usize = 64;
/// Longest value of a memory setting read from the environment (`HSA_SVM_GUARD_PAGES`, …), in
/// bytes; a longer value is read truncated.
pub const SETTING_VALUE_CAPACITY: usize = 32;

// ---- queues ------------------------------------------------------------------------------------

/// Capacity of a device facade's queue table (amdkfd allows 127 queues per GPU — 255 on
/// gfx9.4.3+ — and 1024 per process).
pub const MAX_DEVICE_QUEUES: usize = 256;
/// Buffers of destroyed queues the device facade keeps to free later; beyond this many, a
/// buffer stays with the memory manager until the last close.
pub const MAX_ORPHANED_BUFFERS: usize = 64;
/// SDMA packets an SDMA producer builds on its stack before it submits them (a copy or fill
/// larger than this many packets is submitted in several batches).
pub const SDMA_SUBMIT_BATCH: usize = 64;

// ---- events ------------------------------------------------------------------------------------

/// Events an [`EventTable`](crate::event::EventTable) holds unless told otherwise — and the
/// device facade's capacity: the kernel's limit on signal events at once (4095, ids 1..4096)
/// plus one.
pub const DEFAULT_EVENT_CAPACITY: usize = 4096;
/// Callbacks a [`CallbackRegistry`](crate::event::CallbackRegistry) holds unless told
/// otherwise — and the device facade's capacity.
pub const DEFAULT_CALLBACK_CAPACITY: usize = 32;
/// Events one [`WaitSet`](crate::event::WaitSet) holds unless told otherwise: 64, the maximum
/// libhsakmt documents for `hsaKmtWaitOnMultipleEvents` (the kernel itself has no limit beyond
/// its allocation).
pub const MAX_WAIT_EVENTS: usize = 64;
/// Events destroyed per round at the last close (the table lock is released for each round's
/// ioctls).
pub const EVENT_TEARDOWN_BATCH: usize = 64;

// ---- code objects ------------------------------------------------------------------------------

/// The most `PT_LOAD` segments a code object may have (clang/lld produce 3–4).
pub const MAX_LOAD_SEGMENTS: usize = 16;
/// The deepest nesting of a code object's MessagePack metadata accepted (deeper is an error,
/// so skipping a value needs no recursion).
pub const MAX_METADATA_DEPTH: usize = 16;
/// The most arguments (hidden ones included) a kernel may have for the kernarg builder.
pub const MAX_KERNEL_ARGS: usize = 256;
/// The bytes of a kernel name kept in a
/// [`CodeObjectError::MissingKernel`](crate::code_object::CodeObjectError::MissingKernel).
pub const KERNEL_NAME_CAPACITY: usize = 48;

// ---- performance counters ---------------------------------------------------------------------

/// Performance-counter traces a device facade keeps registered at once
/// (`hsaKmtPmcRegisterTrace`).
pub const MAX_PMC_TRACES: usize = 16;

// ---- debugger ----------------------------------------------------------------------------------

/// Most reads `Kfd::wait_debug_event` makes to drain the debugger's notification pipe (a
/// Linux pipe holds 64 KiB: 1,024 of its 64-byte reads), so a descriptor that never runs dry
/// cannot hold the caller.
pub const DEBUG_EVENT_DRAIN_READS: usize = 1024;

// ---- drivers -----------------------------------------------------------------------------------

/// How many drivers a [`Registry`](crate::driver::Registry) holds by default (one per
/// [`DriverKind`](crate::driver::DriverKind), and room to spare).
pub const DEFAULT_DRIVERS: usize = 4;
/// Most agents a driver exposes: one per topology node.
pub const MAX_AGENTS: usize = DEFAULT_NODES;
/// At most this many regions per agent (one of each
/// [`RegionKind`](crate::driver::RegionKind)).
pub const MAX_REGIONS: usize = 5;
/// Longest agent name stored, in bytes.
pub const AGENT_NAME_CAPACITY: usize = 32;
/// Most AQL queues a [`KfdDriver`](crate::driver::KfdDriver) keeps (each also uses a slot of
/// the facade's [`MAX_DEVICE_QUEUES`]).
pub const MAX_DRIVER_QUEUES: usize = 64;
/// Completion signals in a `KfdDriver`'s pool (64 bytes each, one 64 KiB allocation).
pub const MAX_DRIVER_SIGNALS: usize = 1024;
/// Destroyed queues' rings a `KfdDriver` keeps for reuse.
pub const DRIVER_RING_CACHE: usize = 8;
/// Events a `KfdDriver`'s user can create (each also uses a slot of the facade's
/// [`DEFAULT_EVENT_CAPACITY`]).
pub const MAX_DRIVER_EVENTS: usize = 256;

// ---- retries -----------------------------------------------------------------------------------

/// How many times an ioctl interrupted by a signal (`EINTR`, `EAGAIN`) is issued again before
/// the error is returned.
pub const IOCTL_RETRIES: u32 = 64;

const _: () = assert!(READ_BUFFER >= MIN_READ_BUFFER);
const _: () = assert!(NODE_SET_CAPACITY.is_multiple_of(64) && NODE_SET_CAPACITY > 0);
const _: () = assert!(MAX_DRIVER_QUEUES <= MAX_DEVICE_QUEUES);
const _: () = assert!(MAX_DRIVER_EVENTS + MAX_DRIVER_SIGNALS < DEFAULT_EVENT_CAPACITY);
