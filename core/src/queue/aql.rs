//! AQL (Architected Queuing Language) packets: the 64-byte commands an HSA agent's packet
//! processor (the GPU's command processor, CP) reads from a user-mode queue.
//!
//! # Sources of the layouts
//! - Packet header bits, packet types, fence scopes, the kernel-dispatch `setup` field and the
//!   four standard packet layouts: the HSA runtime header `hsa.h` (ROCm ROCR-Runtime
//!   `runtime/hsa-runtime/inc/hsa.h`: `hsa_packet_type_t`, `hsa_fence_scope_t`,
//!   `hsa_packet_header_t`/`hsa_packet_header_width_t`,
//!   `hsa_kernel_dispatch_packet_setup_t`, `hsa_kernel_dispatch_packet_t`,
//!   `hsa_agent_dispatch_packet_t`, `hsa_barrier_and_packet_t`, `hsa_barrier_or_packet_t`,
//!   large-model (64-bit pointer) variants).
//! - The AMD vendor-specific header (`hsa_amd_vendor_packet_header_t`: 16-bit header, 8-bit
//!   `AmdFormat`, 8-bit reserved) from `hsa_ext_amd.h`.
//! - The PM4 indirect-buffer vendor packet (`AMD_AQL_FORMAT_PM4_IB = 1`, four dwords of a PM4
//!   `INDIRECT_BUFFER` command at byte 4, `dw_cnt_remain = 0xA` at byte 20, completion signal at
//!   byte 56) from ROCr's `AqlQueue::ExecutePM4` (`core/runtime/amd_aql_queue.cpp`, gfx9+ path);
//!   the PM4 type-3 header and `INDIRECT_BUFFER` field positions from ROCr's
//!   `core/inc/amd_gpu_pm4.h`.
//!
//! # Word form
//! A packet travels as [`PacketWords`]: bytes 0..8 as two `u32` words (`dw[0]` = header in bits
//! 0..16 and the type-specific `setup`/format half in bits 16..32; `dw[1]` = bytes 4..8) and
//! bytes 8..64 as seven `u64` words (`qw[i]` = bytes `8 + 8 i ..`). This is the access width
//! [`SharedMemory`](crate::platform::SharedMemory) prescribes for ring slots, and `dw[0]` is
//! exactly the 32-bit word a producer publishes with one release store (see
//! [`ring`](super::ring)). All multi-byte fields are little-endian, as on every HSA agent.
//!
//! Builders ([`AqlPacket::to_words`]) validate and encode; the decoder
//! ([`AqlPacket::from_words`]) is total: any 64 bytes yield a typed packet or an [`AqlError`],
//! and a successful decode re-encodes to the same words (reserved fields must be zero).

use core::fmt;

use crate::error::{Error, ErrorKind};

/// Size of one AQL packet (and ring slot) in bytes.
pub const PACKET_SIZE: usize = 64;

/// The header+setup word of a slot that holds no packet: type `INVALID` (1), all other bits
/// zero. Rings are initialised with it, and the consumer writes it back after reading a packet.
pub const INVALID_HEADER_WORD: u32 = PacketType::Invalid as u32;

/// Bit position of the packet type in the header (`HSA_PACKET_HEADER_TYPE`), 8 bits wide.
pub const HEADER_TYPE_SHIFT: u32 = 0;
/// Bit position of the barrier bit (`HSA_PACKET_HEADER_BARRIER`), 1 bit wide.
pub const HEADER_BARRIER_SHIFT: u32 = 8;
/// Bit position of the acquire fence scope (`HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE`), 2 bits.
pub const HEADER_ACQUIRE_SHIFT: u32 = 9;
/// Bit position of the release fence scope (`HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE`), 2 bits.
pub const HEADER_RELEASE_SHIFT: u32 = 11;
/// Header bits 13..16 are reserved and must be zero.
const HEADER_RESERVED_MASK: u16 = 0xE000;

/// `AmdFormat` of the PM4 indirect-buffer vendor packet (`AMD_AQL_FORMAT_PM4_IB`).
pub const AMD_AQL_FORMAT_PM4_IB: u8 = 1;
/// `dw_cnt_remain` of the PM4-IB vendor packet: dwords of the slot after the IB command.
pub const PM4_IB_DW_CNT_REMAIN: u32 = 0xA;
/// PM4 type-3 opcode `INDIRECT_BUFFER`.
pub const PM4_OPCODE_INDIRECT_BUFFER: u32 = 0x3F;
/// Largest PM4 IB the vendor packet can describe, in dwords (20-bit `IB_SIZE` field).
pub const PM4_IB_MAX_DWORDS: u32 = 0xF_FFFF;
/// The PM4 type-3 header of a 4-dword `INDIRECT_BUFFER` command as gfx9+ expects it:
/// `TYPE = 3` (bits 30..32), `COUNT = size - 2 = 2` (bits 16..30), `IT_OPCODE = 0x3F`
/// (bits 8..16), `SHADER_TYPE = 0` (bit 1; only gfx7 sets it).
pub const PM4_IB_HEADER: u32 = (3 << 30) | (2 << 16) | (PM4_OPCODE_INDIRECT_BUFFER << 8);
/// `IB_VALID` bit of the `INDIRECT_BUFFER` size dword.
const PM4_IB_VALID: u32 = 1 << 23;

/// The 64 bytes of an AQL packet in the widths a ring slot is accessed with.
///
/// `dw[0]` = bytes 0..4 (header | setup << 16), `dw[1]` = bytes 4..8, `qw[i]` = bytes
/// `8 + 8 i .. 16 + 8 i`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PacketWords {
    /// Bytes 0..8 as two little-endian `u32`s.
    pub dw: [u32; 2],
    /// Bytes 8..64 as seven little-endian `u64`s.
    pub qw: [u64; 7],
}

impl PacketWords {
    /// A slot's content before any packet: header `INVALID`, everything else zero.
    pub const INVALID: PacketWords = PacketWords { dw: [INVALID_HEADER_WORD, 0], qw: [0; 7] };

    /// The 16-bit header (bytes 0..2).
    #[must_use]
    #[inline]
    pub const fn header(&self) -> u16 {
        self.dw[0] as u16
    }

    /// The 16 bits after the header (bytes 2..4): `setup` of a kernel dispatch, `type` of an
    /// agent dispatch, `AmdFormat` + reserved of an AMD vendor packet.
    #[must_use]
    #[inline]
    pub const fn setup(&self) -> u16 {
        (self.dw[0] >> 16) as u16
    }

    /// The packet as 64 little-endian bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; PACKET_SIZE] {
        let mut out = [0u8; PACKET_SIZE];
        for (chunk, w) in out.chunks_exact_mut(4).zip(self.dw.iter()) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        for (chunk, w) in
            out.get_mut(8..).unwrap_or_default().chunks_exact_mut(8).zip(self.qw.iter())
        {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// The packet from 64 little-endian bytes.
    #[must_use]
    pub fn from_bytes(bytes: &[u8; PACKET_SIZE]) -> Self {
        let mut w = PacketWords::default();
        for (d, chunk) in w.dw.iter_mut().zip(bytes.chunks_exact(4)) {
            let mut b = [0u8; 4];
            b.copy_from_slice(chunk);
            *d = u32::from_le_bytes(b);
        }
        for (q, chunk) in w.qw.iter_mut().zip(bytes.get(8..).unwrap_or_default().chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            *q = u64::from_le_bytes(b);
        }
        w
    }
}

/// `hsa_packet_type_t`: bits 0..8 of the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum PacketType {
    /// `HSA_PACKET_TYPE_VENDOR_SPECIFIC` (0): format given by the vendor header.
    VendorSpecific = 0,
    /// `HSA_PACKET_TYPE_INVALID` (1): the slot holds no packet yet (or any more).
    Invalid = 1,
    /// `HSA_PACKET_TYPE_KERNEL_DISPATCH` (2).
    KernelDispatch = 2,
    /// `HSA_PACKET_TYPE_BARRIER_AND` (3).
    BarrierAnd = 3,
    /// `HSA_PACKET_TYPE_AGENT_DISPATCH` (4).
    AgentDispatch = 4,
    /// `HSA_PACKET_TYPE_BARRIER_OR` (5).
    BarrierOr = 5,
}

impl PacketType {
    /// The type for a raw header type field.
    ///
    /// # Errors
    /// [`AqlError::UnknownPacketType`] for values above 5.
    pub const fn from_raw(raw: u8) -> Result<Self, AqlError> {
        Ok(match raw {
            0 => Self::VendorSpecific,
            1 => Self::Invalid,
            2 => Self::KernelDispatch,
            3 => Self::BarrierAnd,
            4 => Self::AgentDispatch,
            5 => Self::BarrierOr,
            other => return Err(AqlError::UnknownPacketType(other)),
        })
    }
}

/// `hsa_fence_scope_t`: the memory scope of a packet's acquire or release fence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum FenceScope {
    /// `HSA_FENCE_SCOPE_NONE` (0): no fence.
    #[default]
    None = 0,
    /// `HSA_FENCE_SCOPE_AGENT` (1): memory visible to the agent.
    Agent = 1,
    /// `HSA_FENCE_SCOPE_SYSTEM` (2): memory visible to the whole system (host included).
    System = 2,
}

impl FenceScope {
    /// The scope for a raw 2-bit field.
    ///
    /// # Errors
    /// [`AqlError::InvalidFenceScope`] for 3 (reserved).
    pub const fn from_raw(raw: u8) -> Result<Self, AqlError> {
        match raw {
            0 => Ok(Self::None),
            1 => Ok(Self::Agent),
            2 => Ok(Self::System),
            other => Err(AqlError::InvalidFenceScope(other)),
        }
    }
}

/// The type-independent header bits: barrier bit and the two fence scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HeaderFlags {
    /// Bit 8: the packet processor waits for every earlier packet of the queue to complete
    /// before launching this one.
    pub barrier: bool,
    /// Bits 9..11: acquire fence applied before the packet starts.
    pub acquire: FenceScope,
    /// Bits 11..13: release fence applied after the packet completes.
    pub release: FenceScope,
}

impl HeaderFlags {
    /// The usual flags of a kernel dispatch: no barrier, system-scope acquire and release.
    pub const SYSTEM: HeaderFlags =
        HeaderFlags { barrier: false, acquire: FenceScope::System, release: FenceScope::System };

    /// Encodes a full 16-bit header with packet type `kind`.
    #[must_use]
    #[inline]
    pub const fn header(self, kind: PacketType) -> u16 {
        ((kind as u16) << HEADER_TYPE_SHIFT)
            | ((self.barrier as u16) << HEADER_BARRIER_SHIFT)
            | ((self.acquire as u16) << HEADER_ACQUIRE_SHIFT)
            | ((self.release as u16) << HEADER_RELEASE_SHIFT)
    }

    /// Decodes a 16-bit header into its type and flags.
    ///
    /// # Errors
    /// [`AqlError::UnknownPacketType`], [`AqlError::InvalidFenceScope`], or
    /// [`AqlError::ReservedNonZero`] when header bits 13..16 are set.
    pub const fn decode(header: u16) -> Result<(PacketType, HeaderFlags), AqlError> {
        if header & HEADER_RESERVED_MASK != 0 {
            return Err(AqlError::ReservedNonZero { byte: 1 });
        }
        let kind = match PacketType::from_raw(header as u8) {
            Ok(k) => k,
            Err(e) => return Err(e),
        };
        let acquire = match FenceScope::from_raw(((header >> HEADER_ACQUIRE_SHIFT) & 3) as u8) {
            Ok(s) => s,
            Err(e) => return Err(e),
        };
        let release = match FenceScope::from_raw(((header >> HEADER_RELEASE_SHIFT) & 3) as u8) {
            Ok(s) => s,
            Err(e) => return Err(e),
        };
        let barrier = (header >> HEADER_BARRIER_SHIFT) & 1 == 1;
        Ok((kind, HeaderFlags { barrier, acquire, release }))
    }
}

/// The `dw[0]` word a producer publishes: `header | setup << 16`.
#[must_use]
#[inline]
pub const fn header_word(header: u16, setup: u16) -> u32 {
    header as u32 | ((setup as u32) << 16)
}

/// `hsa_kernel_dispatch_packet_t`: launch a kernel over a 1-, 2- or 3-dimensional grid.
///
/// Byte offsets: header 0, setup 2 (bits 0..2 = dimensions), workgroup_size_x/y/z 4/6/8,
/// reserved0 10, grid_size_x/y/z 12/16/20, private_segment_size 24, group_segment_size 28,
/// kernel_object 32, kernarg_address 40, reserved2 48, completion_signal 56.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct KernelDispatch {
    /// Barrier bit and fence scopes.
    pub flags: HeaderFlags,
    /// Number of grid dimensions, 1..=3 (`setup` bits 0..2).
    pub dimensions: u8,
    /// Work-group size per dimension, each ≥ 1; unused dimensions must be 1.
    pub workgroup_size: [u16; 3],
    /// Grid size (in work-items) per dimension, each ≥ 1; unused dimensions must be 1.
    pub grid_size: [u32; 3],
    /// Private (scratch) bytes per work-item.
    pub private_segment_size: u32,
    /// Group (LDS) bytes per work-group.
    pub group_segment_size: u32,
    /// Address of the kernel code object (`amd_kernel_code_t` / kernel descriptor).
    pub kernel_object: u64,
    /// Address of the kernel arguments (16-byte aligned).
    pub kernarg_address: u64,
    /// Completion signal handle (address of an `amd_signal_t`), 0 for none.
    pub completion_signal: u64,
}

/// `hsa_agent_dispatch_packet_t`: a function call for an agent-side service.
///
/// Byte offsets: header 0, type 2, reserved0 4, return_address 8, arg\[0..4\] 16..48,
/// reserved2 48, completion_signal 56.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AgentDispatch {
    /// Barrier bit and fence scopes.
    pub flags: HeaderFlags,
    /// Application-defined function code (bytes 2..4).
    pub function: u16,
    /// Where the agent stores the return value.
    pub return_address: u64,
    /// Four arguments.
    pub args: [u64; 4],
    /// Completion signal handle, 0 for none.
    pub completion_signal: u64,
}

/// `hsa_barrier_and_packet_t` / `hsa_barrier_or_packet_t`: wait until all (AND) or any (OR)
/// of up to five signals reach 0.
///
/// Byte offsets: header 0, reserved0 2, reserved1 4, dep_signal\[0..5\] 8..48, reserved2 48,
/// completion_signal 56. A zero dependency handle is ignored (AND) / never satisfied (OR).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Barrier {
    /// Barrier bit and fence scopes.
    pub flags: HeaderFlags,
    /// Dependency signal handles, 0 for an unused entry.
    pub dep_signals: [u64; 5],
    /// Completion signal handle, 0 for none.
    pub completion_signal: u64,
}

/// AMD vendor-specific packet with format `AMD_AQL_FORMAT_PM4_IB`: the CP executes a PM4
/// indirect buffer (gfx9+; gfx8 rings take raw PM4 instead).
///
/// Byte offsets: header 0 (type `VENDOR_SPECIFIC`), AmdFormat 2 (= 1), reserved 3,
/// `INDIRECT_BUFFER` command dwords 4..20, dw_cnt_remain 20 (= 0xA), reserved 24..56,
/// completion_signal 56.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Pm4IndirectBuffer {
    /// Barrier bit and fence scopes.
    pub flags: HeaderFlags,
    /// GPU address of the PM4 commands: 4-byte aligned, below 2^48.
    pub ib_address: u64,
    /// Length of the PM4 commands in dwords, 1..=[`PM4_IB_MAX_DWORDS`].
    pub ib_size_dwords: u32,
    /// Completion signal handle, 0 for none.
    pub completion_signal: u64,
}

/// A typed AQL packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AqlPacket {
    /// Kernel dispatch.
    KernelDispatch(KernelDispatch),
    /// Agent dispatch.
    AgentDispatch(AgentDispatch),
    /// Barrier-AND.
    BarrierAnd(Barrier),
    /// Barrier-OR.
    BarrierOr(Barrier),
    /// AMD vendor packet running a PM4 indirect buffer.
    Pm4IndirectBuffer(Pm4IndirectBuffer),
}

/// Why an AQL packet could not be built or decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AqlError {
    /// Header type above 5.
    UnknownPacketType(u8),
    /// The slot holds `HSA_PACKET_TYPE_INVALID`: nothing published there.
    InvalidPacket,
    /// A fence scope field holds 3.
    InvalidFenceScope(u8),
    /// A reserved field or bit is not zero; `byte` is the offset of the field.
    ReservedNonZero {
        /// Byte offset (in the packet) of the offending field.
        byte: u8,
    },
    /// Kernel dispatch `dimensions` outside 1..=3.
    InvalidDimensions(u8),
    /// A work-group or grid size is 0, or an unused dimension's size is not 1.
    InvalidGeometry,
    /// Vendor-specific packet whose `AmdFormat` this crate does not decode.
    UnsupportedVendorFormat(u8),
    /// PM4 IB address not 4-byte aligned or not below 2^48.
    InvalidIbAddress,
    /// PM4 IB size 0 or above [`PM4_IB_MAX_DWORDS`].
    InvalidIbSize,
    /// The PM4 command inside the vendor packet is not the expected `INDIRECT_BUFFER` form.
    MalformedPm4,
}

impl fmt::Display for AqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownPacketType(t) => write!(f, "unknown AQL packet type {t}"),
            Self::InvalidPacket => f.write_str("AQL slot holds an INVALID packet"),
            Self::InvalidFenceScope(s) => write!(f, "invalid AQL fence scope {s}"),
            Self::ReservedNonZero { byte } => {
                write!(f, "reserved AQL packet field at byte {byte} is not zero")
            }
            Self::InvalidDimensions(d) => write!(f, "kernel dispatch dimensions {d} not in 1..=3"),
            Self::InvalidGeometry => f.write_str("invalid work-group or grid size"),
            Self::UnsupportedVendorFormat(v) => {
                write!(f, "unsupported AMD vendor packet format {v}")
            }
            Self::InvalidIbAddress => f.write_str("PM4 IB address misaligned or above 2^48"),
            Self::InvalidIbSize => f.write_str("PM4 IB size 0 or too large"),
            Self::MalformedPm4 => f.write_str("vendor packet does not hold a PM4 INDIRECT_BUFFER"),
        }
    }
}

impl Error for AqlError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidIbAddress => ErrorKind::Misaligned,
            Self::UnsupportedVendorFormat(_) => ErrorKind::NotSupported,
            Self::UnknownPacketType(_)
            | Self::InvalidPacket
            | Self::InvalidFenceScope(_)
            | Self::ReservedNonZero { .. }
            | Self::MalformedPm4 => ErrorKind::Malformed,
            Self::InvalidDimensions(_) | Self::InvalidGeometry | Self::InvalidIbSize => {
                ErrorKind::InvalidArgument
            }
        }
    }
}

impl core::error::Error for AqlError {}

#[inline]
const fn lo(v: u64) -> u32 {
    v as u32
}

#[inline]
const fn hi(v: u64) -> u32 {
    (v >> 32) as u32
}

#[inline]
const fn join(lo: u32, hi: u32) -> u64 {
    lo as u64 | ((hi as u64) << 32)
}

impl KernelDispatch {
    /// A 1-dimensional dispatch of `grid` work-items in work-groups of `workgroup`, with
    /// system-scope fences and no segments, arguments or signal.
    #[must_use]
    pub const fn linear(kernel_object: u64, grid: u32, workgroup: u16) -> Self {
        KernelDispatch {
            flags: HeaderFlags::SYSTEM,
            dimensions: 1,
            workgroup_size: [workgroup, 1, 1],
            grid_size: [grid, 1, 1],
            private_segment_size: 0,
            group_segment_size: 0,
            kernel_object,
            kernarg_address: 0,
            completion_signal: 0,
        }
    }

    fn validate(&self) -> Result<(), AqlError> {
        if !(1..=3).contains(&self.dimensions) {
            return Err(AqlError::InvalidDimensions(self.dimensions));
        }
        let used = usize::from(self.dimensions);
        for (i, (&wg, &grid)) in self.workgroup_size.iter().zip(self.grid_size.iter()).enumerate() {
            let ok = if i < used { wg != 0 && grid != 0 } else { wg == 1 && grid == 1 };
            if !ok {
                return Err(AqlError::InvalidGeometry);
            }
        }
        Ok(())
    }

    fn encode(&self) -> PacketWords {
        let [wx, wy, wz] = self.workgroup_size;
        let [gx, gy, gz] = self.grid_size;
        PacketWords {
            dw: [
                header_word(self.flags.header(PacketType::KernelDispatch), self.dimensions as u16),
                wx as u32 | ((wy as u32) << 16),
            ],
            qw: [
                wz as u64 | ((gx as u64) << 32), // wz @8, reserved0 @10 = 0, grid_x @12
                join(gy, gz),
                join(self.private_segment_size, self.group_segment_size),
                self.kernel_object,
                self.kernarg_address,
                0,
                self.completion_signal,
            ],
        }
    }

    fn decode(flags: HeaderFlags, w: &PacketWords) -> Result<Self, AqlError> {
        let setup = w.setup();
        if setup & !3 != 0 {
            return Err(AqlError::ReservedNonZero { byte: 2 });
        }
        if (w.qw[0] >> 16) & 0xFFFF != 0 {
            return Err(AqlError::ReservedNonZero { byte: 10 });
        }
        if w.qw[5] != 0 {
            return Err(AqlError::ReservedNonZero { byte: 48 });
        }
        let p = KernelDispatch {
            flags,
            dimensions: setup as u8,
            workgroup_size: [w.dw[1] as u16, (w.dw[1] >> 16) as u16, w.qw[0] as u16],
            grid_size: [hi(w.qw[0]), lo(w.qw[1]), hi(w.qw[1])],
            private_segment_size: lo(w.qw[2]),
            group_segment_size: hi(w.qw[2]),
            kernel_object: w.qw[3],
            kernarg_address: w.qw[4],
            completion_signal: w.qw[6],
        };
        p.validate()?;
        Ok(p)
    }
}

impl AgentDispatch {
    fn encode(&self) -> PacketWords {
        PacketWords {
            dw: [header_word(self.flags.header(PacketType::AgentDispatch), self.function), 0],
            qw: [
                self.return_address,
                self.args[0],
                self.args[1],
                self.args[2],
                self.args[3],
                0,
                self.completion_signal,
            ],
        }
    }

    fn decode(flags: HeaderFlags, w: &PacketWords) -> Result<Self, AqlError> {
        if w.dw[1] != 0 {
            return Err(AqlError::ReservedNonZero { byte: 4 });
        }
        if w.qw[5] != 0 {
            return Err(AqlError::ReservedNonZero { byte: 48 });
        }
        Ok(AgentDispatch {
            flags,
            function: w.setup(),
            return_address: w.qw[0],
            args: [w.qw[1], w.qw[2], w.qw[3], w.qw[4]],
            completion_signal: w.qw[6],
        })
    }
}

impl Barrier {
    /// A barrier with no dependencies and no completion signal: completes at once, so it
    /// is the no-op packet a producer writes into slots it reserved but will not use.
    pub const NOP: Barrier = Barrier {
        flags: HeaderFlags { barrier: false, acquire: FenceScope::None, release: FenceScope::None },
        dep_signals: [0; 5],
        completion_signal: 0,
    };

    fn encode(&self, kind: PacketType) -> PacketWords {
        let d = self.dep_signals;
        PacketWords {
            dw: [header_word(self.flags.header(kind), 0), 0],
            qw: [d[0], d[1], d[2], d[3], d[4], 0, self.completion_signal],
        }
    }

    fn decode(flags: HeaderFlags, w: &PacketWords) -> Result<Self, AqlError> {
        if w.setup() != 0 {
            return Err(AqlError::ReservedNonZero { byte: 2 });
        }
        if w.dw[1] != 0 {
            return Err(AqlError::ReservedNonZero { byte: 4 });
        }
        if w.qw[5] != 0 {
            return Err(AqlError::ReservedNonZero { byte: 48 });
        }
        Ok(Barrier {
            flags,
            dep_signals: [w.qw[0], w.qw[1], w.qw[2], w.qw[3], w.qw[4]],
            completion_signal: w.qw[6],
        })
    }
}

impl Pm4IndirectBuffer {
    fn validate(&self) -> Result<(), AqlError> {
        if self.ib_address & 3 != 0 || self.ib_address >> 48 != 0 {
            return Err(AqlError::InvalidIbAddress);
        }
        if self.ib_size_dwords == 0 || self.ib_size_dwords > PM4_IB_MAX_DWORDS {
            return Err(AqlError::InvalidIbSize);
        }
        Ok(())
    }

    fn encode(&self) -> PacketWords {
        // INDIRECT_BUFFER dwords: [1] IB_BASE_LO = address bits 2..32 in bits 2..32,
        // [2] IB_BASE_HI = address bits 32..48 in bits 0..16, [3] IB_SIZE (dwords) in bits
        // 0..20 | IB_VALID (bit 23).
        let ib1 = lo(self.ib_address) & !3;
        let ib2 = hi(self.ib_address) & 0xFFFF;
        let ib3 = self.ib_size_dwords | PM4_IB_VALID;
        PacketWords {
            dw: [
                header_word(
                    self.flags.header(PacketType::VendorSpecific),
                    AMD_AQL_FORMAT_PM4_IB as u16,
                ),
                PM4_IB_HEADER,
            ],
            qw: [
                join(ib1, ib2),
                join(ib3, PM4_IB_DW_CNT_REMAIN),
                0,
                0,
                0,
                0,
                self.completion_signal,
            ],
        }
    }

    fn decode(flags: HeaderFlags, w: &PacketWords) -> Result<Self, AqlError> {
        if w.dw[1] != PM4_IB_HEADER || hi(w.qw[1]) != PM4_IB_DW_CNT_REMAIN {
            return Err(AqlError::MalformedPm4);
        }
        let (ib1, ib2, ib3) = (lo(w.qw[0]), hi(w.qw[0]), lo(w.qw[1]));
        if ib1 & 3 != 0
            || ib2 >> 16 != 0
            || ib3 & PM4_IB_VALID == 0
            || ib3 & 0x7F_0000 != 0
            || ib3 >> 24 != 0
        {
            return Err(AqlError::MalformedPm4);
        }
        for (i, q) in w.qw.iter().enumerate().take(6).skip(2) {
            if *q != 0 {
                return Err(AqlError::ReservedNonZero {
                    byte: (i as u8).saturating_mul(8).saturating_add(8),
                });
            }
        }
        let p = Pm4IndirectBuffer {
            flags,
            ib_address: join(ib1, ib2),
            ib_size_dwords: ib3 & PM4_IB_MAX_DWORDS,
            completion_signal: w.qw[6],
        };
        p.validate()?;
        Ok(p)
    }
}

impl AqlPacket {
    /// The packet type written in the header.
    #[must_use]
    pub const fn packet_type(&self) -> PacketType {
        match self {
            Self::KernelDispatch(_) => PacketType::KernelDispatch,
            Self::AgentDispatch(_) => PacketType::AgentDispatch,
            Self::BarrierAnd(_) => PacketType::BarrierAnd,
            Self::BarrierOr(_) => PacketType::BarrierOr,
            Self::Pm4IndirectBuffer(_) => PacketType::VendorSpecific,
        }
    }

    /// The completion signal handle (0 for none).
    #[must_use]
    pub const fn completion_signal(&self) -> u64 {
        match self {
            Self::KernelDispatch(p) => p.completion_signal,
            Self::AgentDispatch(p) => p.completion_signal,
            Self::BarrierAnd(p) | Self::BarrierOr(p) => p.completion_signal,
            Self::Pm4IndirectBuffer(p) => p.completion_signal,
        }
    }

    /// The header flags.
    #[must_use]
    pub const fn flags(&self) -> HeaderFlags {
        match self {
            Self::KernelDispatch(p) => p.flags,
            Self::AgentDispatch(p) => p.flags,
            Self::BarrierAnd(p) | Self::BarrierOr(p) => p.flags,
            Self::Pm4IndirectBuffer(p) => p.flags,
        }
    }

    /// Validates and encodes the packet, header included.
    ///
    /// # Errors
    /// [`AqlError::InvalidDimensions`] / [`AqlError::InvalidGeometry`] for a malformed kernel
    /// dispatch, [`AqlError::InvalidIbAddress`] / [`AqlError::InvalidIbSize`] for a malformed
    /// PM4 IB.
    pub fn to_words(&self) -> Result<PacketWords, AqlError> {
        Ok(match self {
            Self::KernelDispatch(p) => {
                p.validate()?;
                p.encode()
            }
            Self::AgentDispatch(p) => p.encode(),
            Self::BarrierAnd(p) => p.encode(PacketType::BarrierAnd),
            Self::BarrierOr(p) => p.encode(PacketType::BarrierOr),
            Self::Pm4IndirectBuffer(p) => {
                p.validate()?;
                p.encode()
            }
        })
    }

    /// Decodes the 64 bytes of a slot.
    ///
    /// # Errors
    /// [`AqlError::InvalidPacket`] for an `INVALID` header; any other [`AqlError`] for
    /// malformed words (unknown type, reserved fence scope, reserved bits set, bad geometry,
    /// vendor formats other than PM4-IB).
    pub fn from_words(w: &PacketWords) -> Result<Self, AqlError> {
        let (kind, flags) = HeaderFlags::decode(w.header())?;
        Ok(match kind {
            PacketType::Invalid => return Err(AqlError::InvalidPacket),
            PacketType::KernelDispatch => Self::KernelDispatch(KernelDispatch::decode(flags, w)?),
            PacketType::AgentDispatch => Self::AgentDispatch(AgentDispatch::decode(flags, w)?),
            PacketType::BarrierAnd => Self::BarrierAnd(Barrier::decode(flags, w)?),
            PacketType::BarrierOr => Self::BarrierOr(Barrier::decode(flags, w)?),
            PacketType::VendorSpecific => {
                let setup = w.setup();
                let format = setup as u8;
                if format != AMD_AQL_FORMAT_PM4_IB {
                    return Err(AqlError::UnsupportedVendorFormat(format));
                }
                if setup >> 8 != 0 {
                    return Err(AqlError::ReservedNonZero { byte: 3 });
                }
                Self::Pm4IndirectBuffer(Pm4IndirectBuffer::decode(flags, w)?)
            }
        })
    }
}

impl From<KernelDispatch> for AqlPacket {
    fn from(p: KernelDispatch) -> Self {
        Self::KernelDispatch(p)
    }
}

impl From<AgentDispatch> for AqlPacket {
    fn from(p: AgentDispatch) -> Self {
        Self::AgentDispatch(p)
    }
}

impl From<Pm4IndirectBuffer> for AqlPacket {
    fn from(p: Pm4IndirectBuffer) -> Self {
        Self::Pm4IndirectBuffer(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn field(bytes: &[u8; 64], off: usize, len: usize) -> u64 {
        let mut v = 0u64;
        for i in (0..len).rev() {
            v = (v << 8) | u64::from(bytes[off + i]);
        }
        v
    }

    #[test]
    fn header_bits_match_hsa_h() {
        let f =
            HeaderFlags { barrier: true, acquire: FenceScope::Agent, release: FenceScope::System };
        let h = f.header(PacketType::KernelDispatch);
        assert_eq!(h & 0xFF, 2);
        assert_eq!((h >> 8) & 1, 1);
        assert_eq!((h >> 9) & 3, 1);
        assert_eq!((h >> 11) & 3, 2);
        assert_eq!(h, 2 | 1 << 8 | 1 << 9 | 2 << 11);
        assert_eq!(HeaderFlags::decode(h), Ok((PacketType::KernelDispatch, f)));
        assert_eq!(HeaderFlags::decode(3 << 9 | 2), Err(AqlError::InvalidFenceScope(3)));
        assert_eq!(HeaderFlags::decode(6), Err(AqlError::UnknownPacketType(6)));
        assert_eq!(HeaderFlags::decode(0x8002), Err(AqlError::ReservedNonZero { byte: 1 }));
        assert_eq!(INVALID_HEADER_WORD, 1);
    }

    #[test]
    fn kernel_dispatch_field_offsets() {
        let p = KernelDispatch {
            flags: HeaderFlags::SYSTEM,
            dimensions: 3,
            workgroup_size: [0x101, 0x202, 0x303],
            grid_size: [0x1111_1111, 0x2222_2222, 0x3333_3333],
            private_segment_size: 0x4444_4444,
            group_segment_size: 0x5555_5555,
            kernel_object: 0x6666_6666_6666_6666,
            kernarg_address: 0x7777_7777_7777_7777,
            completion_signal: 0x8888_8888_8888_8888,
        };
        let b = AqlPacket::from(p).to_words().unwrap().to_bytes();
        assert_eq!(
            field(&b, 0, 2),
            u64::from(HeaderFlags::SYSTEM.header(PacketType::KernelDispatch))
        );
        assert_eq!(field(&b, 2, 2), 3);
        assert_eq!(field(&b, 4, 2), 0x101);
        assert_eq!(field(&b, 6, 2), 0x202);
        assert_eq!(field(&b, 8, 2), 0x303);
        assert_eq!(field(&b, 10, 2), 0);
        assert_eq!(field(&b, 12, 4), 0x1111_1111);
        assert_eq!(field(&b, 16, 4), 0x2222_2222);
        assert_eq!(field(&b, 20, 4), 0x3333_3333);
        assert_eq!(field(&b, 24, 4), 0x4444_4444);
        assert_eq!(field(&b, 28, 4), 0x5555_5555);
        assert_eq!(field(&b, 32, 8), 0x6666_6666_6666_6666);
        assert_eq!(field(&b, 40, 8), 0x7777_7777_7777_7777);
        assert_eq!(field(&b, 48, 8), 0);
        assert_eq!(field(&b, 56, 8), 0x8888_8888_8888_8888);
        let w = PacketWords::from_bytes(&b);
        assert_eq!(AqlPacket::from_words(&w), Ok(AqlPacket::KernelDispatch(p)));
    }

    #[test]
    fn barrier_and_agent_offsets() {
        let b = Barrier {
            flags: HeaderFlags::default(),
            dep_signals: [1, 2, 3, 4, 5],
            completion_signal: 9,
        };
        let bytes = AqlPacket::BarrierOr(b).to_words().unwrap().to_bytes();
        assert_eq!(field(&bytes, 0, 2), 5);
        for i in 0..5 {
            assert_eq!(field(&bytes, 8 + 8 * i, 8), i as u64 + 1);
        }
        assert_eq!(field(&bytes, 48, 8), 0);
        assert_eq!(field(&bytes, 56, 8), 9);

        let a = AgentDispatch {
            flags: HeaderFlags::SYSTEM,
            function: 0x1234,
            return_address: 0xAA,
            args: [1, 2, 3, 4],
            completion_signal: 7,
        };
        let bytes = AqlPacket::AgentDispatch(a).to_words().unwrap().to_bytes();
        assert_eq!(field(&bytes, 0, 2) & 0xFF, 4);
        assert_eq!(field(&bytes, 2, 2), 0x1234);
        assert_eq!(field(&bytes, 8, 8), 0xAA);
        assert_eq!(field(&bytes, 16, 8), 1);
        assert_eq!(field(&bytes, 40, 8), 4);
        assert_eq!(field(&bytes, 56, 8), 7);
    }

    #[test]
    fn pm4_ib_layout_matches_rocr() {
        let p = Pm4IndirectBuffer {
            flags: HeaderFlags::SYSTEM,
            ib_address: 0x0000_1234_5678_9ABC,
            ib_size_dwords: 0x40,
            completion_signal: 0x99,
        };
        let b = AqlPacket::from(p).to_words().unwrap().to_bytes();
        assert_eq!(field(&b, 0, 2) & 0xFF, 0); // VENDOR_SPECIFIC
        assert_eq!(field(&b, 2, 1), 1); // AMD_AQL_FORMAT_PM4_IB
        assert_eq!(field(&b, 4, 4), 0xC002_3F00);
        assert_eq!(field(&b, 8, 4), 0x5678_9ABC);
        assert_eq!(field(&b, 12, 4), 0x1234);
        assert_eq!(field(&b, 16, 4), 0x40 | 1 << 23);
        assert_eq!(field(&b, 20, 4), 0xA);
        assert_eq!(field(&b, 56, 8), 0x99);
        assert_eq!(
            AqlPacket::from_words(&PacketWords::from_bytes(&b)),
            Ok(AqlPacket::Pm4IndirectBuffer(p))
        );
        let bad = Pm4IndirectBuffer { ib_address: 2, ..p };
        assert_eq!(AqlPacket::from(bad).to_words(), Err(AqlError::InvalidIbAddress));
        let bad = Pm4IndirectBuffer { ib_size_dwords: 0, ..p };
        assert_eq!(AqlPacket::from(bad).to_words(), Err(AqlError::InvalidIbSize));
    }

    #[test]
    fn geometry_validation() {
        let mut p = KernelDispatch::linear(0x1000, 64, 64);
        assert!(AqlPacket::from(p).to_words().is_ok());
        p.dimensions = 0;
        assert_eq!(AqlPacket::from(p).to_words(), Err(AqlError::InvalidDimensions(0)));
        p.dimensions = 1;
        p.grid_size[1] = 2;
        assert_eq!(AqlPacket::from(p).to_words(), Err(AqlError::InvalidGeometry));
        assert_eq!(AqlPacket::from_words(&PacketWords::INVALID), Err(AqlError::InvalidPacket));
    }

    proptest! {
        /// Decoding is total, and whatever decodes re-encodes to the same words.
        #[test]
        fn decode_is_total_and_round_trips(dw0 in any::<u32>(), dw1 in any::<u32>(), qw in any::<[u64; 7]>(), sparse in any::<bool>()) {
            // Bias towards decodable words: clear reserved areas half the time.
            let mut w = PacketWords { dw: [dw0, dw1], qw };
            if sparse {
                w.dw[0] = ((dw0 & 0xFF) % 6) | (dw0 & 0x1F00) | (((dw0 >> 16) & 3) << 16);
                w.qw[5] = 0;
            }
            if let Ok(p) = AqlPacket::from_words(&w) {
                prop_assert_eq!(p.to_words(), Ok(w));
            }
        }
    }
}
