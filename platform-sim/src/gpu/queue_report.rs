//! What the simulated hardware reports about a queue: its state and the error that stopped it.

/// Why a queue stopped with an error, as the kernel would report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueFault {
    /// The kernel's queue id.
    pub queue_id: u32,
    /// The queue's GPU.
    pub gpu_id: u32,
    /// The exception code (`EC_QUEUE_*` / `EC_DEVICE_*` of `kfd_ioctl.h`); the kernel writes
    /// `KFD_EC_MASK(exception)` to the queue's error payload.
    pub exception: u32,
    /// The packet's index in the queue (AQL), or the read pointer (PM4/SDMA).
    pub packet: u64,
    /// The faulting address of a memory violation.
    pub address: Option<u64>,
    /// For a fault of a kernel the ISA interpreter ran: the wave's fault (instruction,
    /// opcode and mnemonic of an illegal instruction, the access of a memory violation).
    pub wave: Option<crate::isa::WaveFault>,
}

/// A queue as the simulated hardware holds it (for tests and tools).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueState {
    /// The GPU.
    pub gpu_id: u32,
    /// The ring the queue fetches from (0 when disabled by a null ring).
    pub ring_address: u64,
    /// Its size in bytes.
    pub ring_size: u64,
    /// Queue percentage.
    pub percentage: u32,
    /// Priority 0..=15.
    pub priority: u32,
    /// Whether the queue fetches packets (a ring, a non-zero percentage, no error).
    pub active: bool,
    /// Packets consumed so far.
    pub packets: u64,
    /// The doorbell's index in the GPU's doorbell page.
    pub doorbell_index: u32,
    /// The error that stopped the queue.
    pub fault: Option<QueueFault>,
    /// Whether the queue is hung by injection ([`crate::SimPlatform::hang_queue`]).
    pub hung: bool,
    /// Whether a debugger suspended the queue (`DBG_TRAP_SUSPEND_QUEUES`).
    pub suspended: bool,
}
