//! SDMA (system DMA engine) packets for gfx9+ (SDMA v4 and later: [`SdmaPacket`]), a byte-indexed
//! SDMA ring producer, a copy planner, and the decoder / consumer a simulated engine uses.
//!
//! # Sources of the layouts
//! - Opcodes, sub-opcodes and field positions (of each packet: `sdma/packet.rs`): Linux `drivers/gpu/drm/amd/amdgpu/
//!   vega10_sdma_pkt_open.h` (`SDMA_OP_*`, `SDMA_PKT_*_HEADER_*`, `COPY_LINEAR` count mask
//!   `0x003FFFFF`, `NOP` count: 14 bits at bit 16), cross-checked with ROCr's
//!   `runtime/hsa-runtime/core/inc/sdma_registers.h` (`SDMA_PKT_COPY_LINEAR` with `count:22` /
//!   `count_ext:30`, `SDMA_PKT_CONSTANT_FILL` with `fillsize` at bits 30..32,
//!   `SDMA_PKT_FENCE` with `mtype` at bits 16..19, `SDMA_PKT_POLL_REGMEM` with `hdp_flush` bit
//!   26, `func` bits 28..31, `mem_poll` bit 31, `interval:16`/`retry_count:12`, `SDMA_PKT_TRAP`
//!   with `int_ctx:28`).
//! - Count encoding on SDMA v4+: `bytes − 1` (Linux `sdma_v4_0_emit_copy_buffer` /
//!   `emit_fill_buffer`; ROCr's `SizeToCountOffset = −1` for `BlitSdmaV4`/`V5`).
//! - Which families may use the 30-bit count (`SdmaLimits::for_gfx`): ROCr
//!   `GpuAgent::CreateBlitSdma` (`amd_gpu_agent.cpp`): gfx9 uses the 22-bit count except
//!   gfx90a (9.0.10); gfx10.0–10.2 use 22 bits, gfx10.3+, gfx11 and gfx12 use 30 bits.
//!   Maximum bytes per `COPY_LINEAR` follow from the field width: 2^22 (4 MiB, the value Linux
//!   uses as `copy_max_bytes` for SDMA v4) or 2^30 (1 GiB); ROCr stays one byte below each.
//!   `CONSTANT_FILL` uses the 22-bit count on every family (ROCr and Linux both cap fills at
//!   4 MiB).
//! - Ring rules (ROCr `BlitSdma`, `amd_blit_sdma.cpp`): ring size a power of two in bytes;
//!   read/write pointers are 64-bit byte counts that never wrap (gfx9+); the doorbell takes the
//!   write pointer in bytes; a packet never straddles the ring end — the producer pads to the
//!   end with NOPs; at most `size − 1` bytes are ever outstanding.
//!
//! Only the packets user-mode runtimes emit are modelled: NOP, COPY_LINEAR (also broadcast to two
//! destinations), COPY_LINEAR_RECT, CONSTANT_FILL (dword fill), WRITE (linear), FENCE, TRAP,
//! POLL_REGMEM (memory and register polls, HDP flushes), ATOMIC (64-bit add), TIMESTAMP
//! (global) and GCR — what ROCr's `BlitSdma` and kfdtest's SDMA tests write.

use core::fmt;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::error::{Error, ErrorKind};
use crate::platform::SharedMemory;

mod packet;

use packet::header;
pub use packet::{
    GcrRequest, LinearRect, MAX_PACKET_DWORDS, MAX_WRITE_DWORDS, PollFunc, RectSurface,
    RegisterPoll, SDMA_ATOMIC_ADD64, SDMA_OP_ATOMIC, SDMA_OP_CONST_FILL, SDMA_OP_COPY,
    SDMA_OP_FENCE, SDMA_OP_GCR, SDMA_OP_NOP, SDMA_OP_POLL_REGMEM, SDMA_OP_TIMESTAMP, SDMA_OP_TRAP,
    SDMA_OP_WRITE, SDMA_SUBOP_COPY_LINEAR, SDMA_SUBOP_COPY_LINEAR_RECT,
    SDMA_SUBOP_TIMESTAMP_GET_GLOBAL, SDMA_SUBOP_USER_GCR, SDMA_SUBOP_WRITE_LINEAR, SdmaPacket,
};

/// Largest NOP: a 14-bit count of dwords after the header.
pub const MAX_NOP_DWORDS: u32 = 0x4000;
/// Largest `CONSTANT_FILL` in bytes (22-bit `bytes − 1` count).
pub const MAX_FILL_BYTES: u32 = 1 << 22;

/// Why an SDMA packet, plan or ring operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SdmaError {
    /// The gfx version has no SDMA v4+ engine this module drives (gfx7/8 use another count
    /// encoding).
    UnsupportedGfx,
    /// An address that must be dword-aligned is not.
    Misaligned,
    /// A byte count is 0, above the packet's maximum, or (fill) not a multiple of 4; or a
    /// NOP length outside 1..=[`MAX_NOP_DWORDS`].
    InvalidSize,
    /// A field value does not fit its field (mtype > 7, int_ctx ≥ 2^28, retry_count ≥ 2^12).
    FieldOverflow,
    /// `address + bytes` overflows 64 bits.
    AddressOverflow,
    /// The submission is larger than the ring can ever hold.
    TooLarge,
    /// Not enough free ring space right now; nothing was written.
    Full,
    /// The dwords end before the packet does.
    Truncated,
    /// An opcode / sub-opcode this module does not decode.
    UnknownOpcode {
        /// `op` (bits 0..8).
        op: u8,
        /// `sub_op` (bits 8..16).
        sub_op: u8,
    },
    /// An `ATOMIC` packet's operation is not one this module models (only
    /// [`SDMA_ATOMIC_ADD64`]).
    UnsupportedAtomic {
        /// The operation (header bits 25..32).
        operation: u8,
    },
    /// A reserved or unsupported field bit is set; `dword` is its index in the packet.
    ReservedNonZero {
        /// Dword index in the packet.
        dword: u8,
    },
    /// Ring length not a power of two (≥ 256 bytes), or a pointer/doorbell offset outside
    /// its mapping or not 8-aligned.
    InvalidRing,
}

impl fmt::Display for SdmaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnsupportedGfx => f.write_str("no SDMA v4+ engine on this gfx version"),
            Self::Misaligned => f.write_str("SDMA address not dword aligned"),
            Self::InvalidSize => f.write_str("SDMA byte count or NOP length out of range"),
            Self::FieldOverflow => f.write_str("SDMA field value does not fit its field"),
            Self::AddressOverflow => f.write_str("SDMA address range overflows"),
            Self::TooLarge => f.write_str("SDMA submission larger than the ring"),
            Self::Full => f.write_str("SDMA ring full"),
            Self::Truncated => f.write_str("SDMA packet truncated"),
            Self::UnknownOpcode { op, sub_op } => write!(f, "unknown SDMA opcode {op}/{sub_op}"),
            Self::UnsupportedAtomic { operation } => {
                write!(f, "unsupported SDMA atomic operation {operation}")
            }
            Self::ReservedNonZero { dword } => {
                write!(f, "reserved SDMA packet bits set in dword {dword}")
            }
            Self::InvalidRing => f.write_str("invalid SDMA ring memory"),
        }
    }
}

impl Error for SdmaError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::UnsupportedGfx => ErrorKind::NotSupported,
            Self::Misaligned => ErrorKind::Misaligned,
            Self::InvalidSize
            | Self::FieldOverflow
            | Self::AddressOverflow
            | Self::TooLarge
            | Self::InvalidRing => ErrorKind::InvalidArgument,
            Self::Full => ErrorKind::OutOfResources,
            Self::Truncated
            | Self::UnknownOpcode { .. }
            | Self::UnsupportedAtomic { .. }
            | Self::ReservedNonZero { .. } => ErrorKind::Malformed,
        }
    }
}

impl core::error::Error for SdmaError {}

/// Per-family limits of the SDMA packet formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SdmaLimits {
    /// Width of the `COPY_LINEAR` count field that may be used: 22 or 30.
    pub copy_count_bits: u32,
}

impl SdmaLimits {
    /// SDMA v4.0-style 22-bit copy count (4 MiB per packet).
    pub const COUNT22: SdmaLimits = SdmaLimits { copy_count_bits: 22 };
    /// 30-bit copy count (1 GiB per packet).
    pub const COUNT30: SdmaLimits = SdmaLimits { copy_count_bits: 30 };

    /// The limits for a gfx version (`major.minor.stepping`), per ROCr's `CreateBlitSdma`.
    ///
    /// # Errors
    /// [`SdmaError::UnsupportedGfx`] for gfx < 9 and unknown majors (> 12).
    pub const fn for_gfx(major: u8, minor: u8, stepping: u8) -> Result<Self, SdmaError> {
        match major {
            9 if minor == 0 && stepping == 10 => Ok(Self::COUNT30),
            9 => Ok(Self::COUNT22),
            10 if minor < 3 => Ok(Self::COUNT22),
            10..=12 => Ok(Self::COUNT30),
            _ => Err(SdmaError::UnsupportedGfx),
        }
    }

    /// Largest byte count of one `COPY_LINEAR` packet: `2^copy_count_bits`.
    #[must_use]
    #[inline]
    pub const fn max_copy_bytes(&self) -> u32 {
        1 << self.copy_count_bits
    }

    #[inline]
    const fn copy_count_mask(&self) -> u32 {
        (1u32 << self.copy_count_bits).wrapping_sub(1)
    }

    /// Number of `COPY_LINEAR` packets a copy of `bytes` needs.
    #[must_use]
    #[inline]
    pub const fn copy_packets(&self, bytes: u64) -> u64 {
        bytes.div_ceil(1 << self.copy_count_bits)
    }

    /// Plans a linear copy of `bytes` from `src` to `dst` as `COPY_LINEAR` packets of at most
    /// [`SdmaLimits::max_copy_bytes`] each, in address order.
    ///
    /// # Errors
    /// [`SdmaError::InvalidSize`] for 0 bytes, [`SdmaError::AddressOverflow`] when either range
    /// wraps the address space.
    pub fn plan_copy(&self, src: u64, dst: u64, bytes: u64) -> Result<CopyPlan, SdmaError> {
        if bytes == 0 {
            return Err(SdmaError::InvalidSize);
        }
        if src.checked_add(bytes).is_none() || dst.checked_add(bytes).is_none() {
            return Err(SdmaError::AddressOverflow);
        }
        Ok(CopyPlan { src, dst, remaining: bytes, max: self.max_copy_bytes() as u64 })
    }

    /// Plans a dword fill of `bytes` (a multiple of 4) at `dst` (dword-aligned) as
    /// `CONSTANT_FILL` packets of at most [`MAX_FILL_BYTES`].
    ///
    /// # Errors
    /// [`SdmaError::InvalidSize`], [`SdmaError::Misaligned`], [`SdmaError::AddressOverflow`].
    pub fn plan_fill(&self, dst: u64, data: u32, bytes: u64) -> Result<FillPlan, SdmaError> {
        if bytes == 0 || !bytes.is_multiple_of(4) {
            return Err(SdmaError::InvalidSize);
        }
        if !dst.is_multiple_of(4) {
            return Err(SdmaError::Misaligned);
        }
        if dst.checked_add(bytes).is_none() {
            return Err(SdmaError::AddressOverflow);
        }
        Ok(FillPlan { dst, data, remaining: bytes })
    }
}

/// Iterator over the `COPY_LINEAR` packets of a planned copy.
#[derive(Debug, Clone)]
pub struct CopyPlan {
    src: u64,
    dst: u64,
    remaining: u64,
    max: u64,
}

impl Iterator for CopyPlan {
    type Item = SdmaPacket;

    #[inline]
    fn next(&mut self) -> Option<SdmaPacket> {
        if self.remaining == 0 {
            return None;
        }
        let chunk = if self.remaining < self.max { self.remaining } else { self.max };
        let p = SdmaPacket::CopyLinear { src: self.src, dst: self.dst, bytes: chunk as u32 };
        // Bounded: `plan_copy` checked that neither range wraps, and `chunk <= remaining`.
        self.src = self.src.saturating_add(chunk);
        self.dst = self.dst.saturating_add(chunk);
        self.remaining = self.remaining.saturating_sub(chunk);
        Some(p)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.remaining.div_ceil(self.max.max(1)) as usize;
        (n, Some(n))
    }
}

/// Iterator over the `CONSTANT_FILL` packets of a planned fill.
#[derive(Debug, Clone)]
pub struct FillPlan {
    dst: u64,
    data: u32,
    remaining: u64,
}

impl Iterator for FillPlan {
    type Item = SdmaPacket;

    #[inline]
    fn next(&mut self) -> Option<SdmaPacket> {
        if self.remaining == 0 {
            return None;
        }
        let max = MAX_FILL_BYTES as u64;
        let chunk = if self.remaining < max { self.remaining } else { max };
        let p = SdmaPacket::ConstantFill { dst: self.dst, data: self.data, bytes: chunk as u32 };
        // Bounded: `plan_fill` checked that the range does not wrap, and `chunk <= remaining`.
        self.dst = self.dst.saturating_add(chunk);
        self.remaining = self.remaining.saturating_sub(chunk);
        Some(p)
    }
}

/// The memory of one SDMA queue.
#[derive(Debug, Clone)]
pub struct SdmaRingMemory<M> {
    /// The ring: a power-of-two number of bytes (≥ 256), accessed as `u32` dwords.
    pub ring: M,
    /// The mapping holding the 64-bit read and write pointers (libhsakmt's `struct queue`).
    pub pointers: M,
    /// Byte offset of the read pointer (written by the engine), 8-aligned.
    pub rptr_offset: usize,
    /// Byte offset of the write pointer, 8-aligned.
    pub wptr_offset: usize,
    /// The doorbell mapping.
    pub doorbell: M,
    /// Byte offset of the queue's 64-bit doorbell, 8-aligned.
    pub doorbell_offset: usize,
}

/// Validated geometry shared by producer and consumer.
#[derive(Debug, Clone)]
struct SdmaGeometry<M> {
    mem: SdmaRingMemory<M>,
    size: u64,
    mask: u64,
}

impl<M: SharedMemory> SdmaGeometry<M> {
    fn new(mem: SdmaRingMemory<M>) -> Result<Self, SdmaError> {
        let len = mem.ring.len();
        if len < 256 || !len.is_power_of_two() || mem.ring.u32s().len() < len / 4 {
            return Err(SdmaError::InvalidRing);
        }
        let p = mem.pointers.u64s().len();
        if !mem.rptr_offset.is_multiple_of(8)
            || !mem.wptr_offset.is_multiple_of(8)
            || !mem.doorbell_offset.is_multiple_of(8)
            || mem.rptr_offset / 8 >= p
            || mem.wptr_offset / 8 >= p
            || mem.doorbell_offset / 8 >= mem.doorbell.u64s().len()
        {
            return Err(SdmaError::InvalidRing);
        }
        Ok(SdmaGeometry { size: len as u64, mask: (len as u64).wrapping_sub(1), mem })
    }

    #[inline]
    fn rptr(&self) -> Option<&AtomicU64> {
        self.mem.pointers.u64s().get(self.mem.rptr_offset / 8)
    }

    #[inline]
    fn wptr(&self) -> Option<&AtomicU64> {
        self.mem.pointers.u64s().get(self.mem.wptr_offset / 8)
    }

    #[inline]
    fn dword(&self, byte_pos: u64) -> Option<&AtomicU32> {
        self.mem.ring.u32s().get(((byte_pos & self.mask) / 4) as usize)
    }
}

/// Single-producer SDMA ring: packets are appended at the 64-bit byte write pointer, never
/// straddling the ring end (NOP padding), and submitted by storing the write pointer and
/// ringing the doorbell with it.
///
/// # Invariants
/// The holder of `&mut self` is the only writer of the ring and the write pointer (share one
/// engine queue between threads behind a lock, or give each thread its own queue). Bytes
/// `rptr..wptr` belong to the engine; the producer writes only `wptr..rptr + size − 1`, and
/// only after an acquire load of the read pointer showed them free.
#[derive(Debug)]
pub struct SdmaRing<M> {
    geo: SdmaGeometry<M>,
    limits: SdmaLimits,
    wptr: u64,
    rptr_cache: u64,
}

impl<M: SharedMemory> SdmaRing<M> {
    /// A producer over `mem`, continuing from the write pointer stored there.
    ///
    /// # Errors
    /// [`SdmaError::InvalidRing`] for a ring size that is not a power of two ≥ 256 bytes or
    /// offsets outside their mappings / not 8-aligned.
    pub fn new(mem: SdmaRingMemory<M>, limits: SdmaLimits) -> Result<Self, SdmaError> {
        let geo = SdmaGeometry::new(mem)?;
        let wptr = geo.wptr().map_or(0, |w| w.load(Ordering::Acquire));
        let rptr_cache = geo.rptr().map_or(0, |r| r.load(Ordering::Acquire));
        Ok(SdmaRing { geo, limits, wptr, rptr_cache })
    }

    /// The write pointer in bytes (monotonic).
    #[must_use]
    #[inline]
    pub fn wptr(&self) -> u64 {
        self.wptr
    }

    /// The packet limits this ring encodes with.
    #[must_use]
    pub fn limits(&self) -> SdmaLimits {
        self.limits
    }

    /// Ring size in bytes.
    #[must_use]
    pub fn size(&self) -> u64 {
        self.geo.size
    }

    /// Bytes the packets would occupy from the current write pointer, padding included.
    fn layout<I: Iterator<Item = SdmaPacket>>(&self, packets: I) -> Result<u64, SdmaError> {
        let mut pos = self.wptr;
        for p in packets {
            p.validate(self.limits)?;
            let len = u64::from(p.dwords()).saturating_mul(4);
            let to_end = self.geo.size.saturating_sub(pos & self.geo.mask);
            if len > to_end {
                pos = pos.wrapping_add(to_end);
            }
            pos = pos.wrapping_add(len);
            if pos.wrapping_sub(self.wptr) >= self.geo.size {
                return Err(SdmaError::TooLarge);
            }
        }
        Ok(pos.wrapping_sub(self.wptr))
    }

    #[inline]
    fn has_room(&mut self, bytes: u64) -> bool {
        let end = self.wptr.wrapping_add(bytes);
        if end.wrapping_sub(self.rptr_cache) < self.geo.size {
            return true;
        }
        self.rptr_cache = self.geo.rptr().map_or(self.rptr_cache, |r| r.load(Ordering::Acquire));
        end.wrapping_sub(self.rptr_cache) < self.geo.size
    }

    #[inline]
    fn store(&self, pos: u64, value: u32) {
        if let Some(d) = self.geo.dword(pos) {
            d.store(value, Ordering::Relaxed);
        }
    }

    fn write_nop(&self, pos: u64, dwords: u64) {
        let mut at = pos;
        let mut left = dwords;
        while left > 0 {
            let n = left.min(u64::from(MAX_NOP_DWORDS));
            self.store(at, header(SDMA_OP_NOP, 0) | ((n.saturating_sub(1) as u32) << 16));
            for i in 1..n {
                self.store(at.wrapping_add(i.wrapping_mul(4)), 0);
            }
            at = at.wrapping_add(n.wrapping_mul(4));
            left = left.saturating_sub(n);
        }
    }

    fn write_all<I: Iterator<Item = SdmaPacket>>(&mut self, packets: I) {
        let mut buf = [0u32; MAX_PACKET_DWORDS];
        for p in packets {
            let len = u64::from(p.dwords()).saturating_mul(4);
            let to_end = self.geo.size.saturating_sub(self.wptr & self.geo.mask);
            if len > to_end {
                self.write_nop(self.wptr, to_end / 4);
                self.wptr = self.wptr.wrapping_add(to_end);
            }
            if let SdmaPacket::Nop { dwords } = p {
                self.write_nop(self.wptr, u64::from(dwords));
            } else {
                let n = p.encode_fixed(&mut buf);
                for (i, w) in buf.iter().take(n).enumerate() {
                    self.store(self.wptr.wrapping_add((i as u64).wrapping_mul(4)), *w);
                }
                // A WRITE's data: zeros, as `SdmaPacket::encode` gives.
                for i in n as u64..len / 4 {
                    self.store(self.wptr.wrapping_add(i.wrapping_mul(4)), 0);
                }
            }
            self.wptr = self.wptr.wrapping_add(len);
        }
    }

    fn commit(&self) {
        if let Some(w) = self.geo.wptr() {
            w.store(self.wptr, Ordering::Release);
        }
        self.geo.mem.doorbell.ring_doorbell64(self.geo.mem.doorbell_offset, self.wptr);
    }

    /// Writes `packets` (validated first: all or nothing), stores the write pointer and rings
    /// the doorbell with it. Returns the new write pointer.
    ///
    /// # Errors
    /// [`SdmaError::Full`] when the free space does not suffice now (nothing written);
    /// [`SdmaError::TooLarge`] when it never could; the [`SdmaPacket::validate`] errors.
    pub fn try_submit<I>(&mut self, packets: I) -> Result<u64, SdmaError>
    where
        I: IntoIterator<Item = SdmaPacket>,
        I::IntoIter: Clone,
    {
        let it = packets.into_iter();
        let bytes = self.layout(it.clone())?;
        if !self.has_room(bytes) {
            return Err(SdmaError::Full);
        }
        self.write_all(it);
        self.commit();
        Ok(self.wptr)
    }

    /// As [`SdmaRing::try_submit`], waiting (calling `relax`) while the ring is full.
    ///
    /// # Errors
    /// [`SdmaError::TooLarge`] and the [`SdmaPacket::validate`] errors.
    pub fn submit<I>(&mut self, packets: I, mut relax: impl FnMut()) -> Result<u64, SdmaError>
    where
        I: IntoIterator<Item = SdmaPacket>,
        I::IntoIter: Clone,
    {
        let it = packets.into_iter();
        let bytes = self.layout(it.clone())?;
        while !self.has_room(bytes) {
            relax();
        }
        self.write_all(it);
        self.commit();
        Ok(self.wptr)
    }
}

/// The engine's side of an SDMA ring (the simulator, and tests): decodes packets between the
/// read and write pointers and advances the read pointer.
///
/// # Invariants
/// One consumer per ring; it alone stores the read pointer.
#[derive(Debug)]
pub struct SdmaConsumer<M> {
    geo: SdmaGeometry<M>,
    limits: SdmaLimits,
}

impl<M: SharedMemory> SdmaConsumer<M> {
    /// A consumer over `mem`.
    ///
    /// # Errors
    /// [`SdmaError::InvalidRing`] as for [`SdmaRing::new`].
    pub fn new(mem: SdmaRingMemory<M>, limits: SdmaLimits) -> Result<Self, SdmaError> {
        Ok(SdmaConsumer { geo: SdmaGeometry::new(mem)?, limits })
    }

    /// The read pointer in bytes.
    #[must_use]
    pub fn rptr(&self) -> u64 {
        self.geo.rptr().map_or(0, |r| r.load(Ordering::Relaxed))
    }

    /// Decodes the next packet, if the write pointer is past the read pointer, and advances the
    /// read pointer past it (release). NOPs are returned like any packet.
    ///
    /// On a decode error the read pointer stays where it is (a real engine would raise an
    /// illegal-command interrupt and stop); the caller decides what happens next.
    ///
    /// Both pointers live in memory the process can write, so any values are handled: the
    /// positions are taken modulo 2^64 (like the write pointer's distance from the read
    /// pointer), and a write pointer behind the read pointer reads as far ahead.
    ///
    /// # Errors
    /// The [`SdmaPacket::decode`] errors; [`SdmaError::Truncated`] when a packet extends
    /// past the write pointer or the ring end.
    pub fn pop(&self) -> Option<Result<SdmaPacket, SdmaError>> {
        let rptr = self.rptr();
        let wptr = self.geo.wptr().map_or(0, |w| w.load(Ordering::Acquire));
        if wptr == rptr {
            return None;
        }
        let avail =
            (wptr.wrapping_sub(rptr)).min(self.geo.size.saturating_sub(rptr & self.geo.mask)) / 4;
        let mut buf = [0u32; MAX_PACKET_DWORDS];
        let n = (avail as usize).min(MAX_PACKET_DWORDS);
        for (i, b) in buf.iter_mut().take(n).enumerate() {
            let at = rptr.wrapping_add((i as u64).wrapping_mul(4));
            *b = self.geo.dword(at).map_or(0, |d| d.load(Ordering::Relaxed));
        }
        let (p, len) = match SdmaPacket::decode(self.limits, buf.get(..n).unwrap_or_default()) {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
        };
        if len as u64 > avail {
            return Some(Err(SdmaError::Truncated));
        }
        if let Some(r) = self.geo.rptr() {
            r.store(rptr.wrapping_add((len as u64).wrapping_mul(4)), Ordering::Release);
        }
        Some(Ok(p))
    }
}

#[cfg(test)]
mod tests;
