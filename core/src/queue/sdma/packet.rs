//! The typed SDMA packets: what a runtime (ROCr's `BlitSdma`, kfdtest, this crate's producers)
//! emits on an SDMA v4+ queue, with their field checks, encoder and strict decoder.
//!
//! # Sources of the layouts
//! Linux `drivers/gpu/drm/amd/amdgpu/vega10_sdma_pkt_open.h` and `sdma_v4_0.c`
//! (`sdma_v4_0_wait_reg_mem`: register polls carry register byte offsets, an HDP flush sets
//! `hdp_flush`), ROCr's `runtime/hsa-runtime/core/inc/sdma_registers.h` (`SDMA_PKT_*`,
//! `SDMA_OP_ATOMIC` 10 with `SDMA_ATOMIC_ADD64` 47 in header bits 25..32, `SDMA_OP_TIMESTAMP` 13
//! with `SDMA_SUBOP_TIMESTAMP_GET_GLOBAL` 2, `SDMA_OP_GCR` 17 with `SDMA_SUBOP_USER_GCR` 1,
//! `SDMA_SUBOP_COPY_LINEAR_RECT` 4 in its pre-gfx12 layout, the constant `hdp_flush_cmd`) and
//! kfdtest's `include/sdma_pkt_struct.h` (`SDMA_PKT_WRITE_UNTILED`, `COPY_LINEAR` with
//! `broadcast` at header bit 27 and a second destination).

use super::{MAX_FILL_BYTES, MAX_NOP_DWORDS, SdmaError, SdmaLimits};

/// `SDMA_OP_NOP`.
pub const SDMA_OP_NOP: u8 = 0;
/// `SDMA_OP_COPY`.
pub const SDMA_OP_COPY: u8 = 1;
/// `SDMA_OP_WRITE`.
pub const SDMA_OP_WRITE: u8 = 2;
/// `SDMA_OP_FENCE`.
pub const SDMA_OP_FENCE: u8 = 5;
/// `SDMA_OP_TRAP`.
pub const SDMA_OP_TRAP: u8 = 6;
/// `SDMA_OP_POLL_REGMEM`.
pub const SDMA_OP_POLL_REGMEM: u8 = 8;
/// `SDMA_OP_ATOMIC`.
pub const SDMA_OP_ATOMIC: u8 = 10;
/// `SDMA_OP_CONST_FILL`.
pub const SDMA_OP_CONST_FILL: u8 = 11;
/// `SDMA_OP_TIMESTAMP`.
pub const SDMA_OP_TIMESTAMP: u8 = 13;
/// `SDMA_OP_GCR` (gfx10+ cache control).
pub const SDMA_OP_GCR: u8 = 17;
/// `SDMA_SUBOP_COPY_LINEAR`.
pub const SDMA_SUBOP_COPY_LINEAR: u8 = 0;
/// `SDMA_SUBOP_COPY_LINEAR_RECT`.
pub const SDMA_SUBOP_COPY_LINEAR_RECT: u8 = 4;
/// `SDMA_SUBOP_WRITE_LINEAR`.
pub const SDMA_SUBOP_WRITE_LINEAR: u8 = 0;
/// `SDMA_SUBOP_TIMESTAMP_GET_GLOBAL`.
pub const SDMA_SUBOP_TIMESTAMP_GET_GLOBAL: u8 = 2;
/// `SDMA_SUBOP_USER_GCR`.
pub const SDMA_SUBOP_USER_GCR: u8 = 1;
/// `SDMA_ATOMIC_ADD64`: the atomic operation ROCr uses to decrement a completion signal.
pub const SDMA_ATOMIC_ADD64: u8 = 47;

/// Largest number of dwords the fixed part of one packet occupies (`COPY_LINEAR_RECT`: 13); a
/// `WRITE`'s data and a `NOP`'s payload follow their fixed part.
pub const MAX_PACKET_DWORDS: usize = 13;
/// Largest `WRITE` payload in dwords (20-bit `dwords − 1` count).
pub const MAX_WRITE_DWORDS: u32 = 1 << 20;

const FILLSIZE_DWORD: u32 = 2;
const COPY_BROADCAST: u32 = 1 << 27;

/// `func` of `POLL_REGMEM`: how `(value & mask)` compares with the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum PollFunc {
    /// Always true.
    Always = 0,
    /// `<`
    Less = 1,
    /// `<=`
    LessEqual = 2,
    /// `==`
    Equal = 3,
    /// `!=`
    NotEqual = 4,
    /// `>=`
    GreaterEqual = 5,
    /// `>`
    Greater = 6,
}

impl PollFunc {
    pub(super) const fn from_raw(raw: u32) -> Option<Self> {
        Some(match raw {
            0 => Self::Always,
            1 => Self::Less,
            2 => Self::LessEqual,
            3 => Self::Equal,
            4 => Self::NotEqual,
            5 => Self::GreaterEqual,
            6 => Self::Greater,
            _ => return None,
        })
    }

    /// Whether `(value & mask) func reference` holds.
    #[must_use]
    pub const fn holds(self, value: u32, mask: u32, reference: u32) -> bool {
        let v = value & mask;
        match self {
            Self::Always => true,
            Self::Less => v < reference,
            Self::LessEqual => v <= reference,
            Self::Equal => v == reference,
            Self::NotEqual => v != reference,
            Self::GreaterEqual => v >= reference,
            Self::Greater => v > reference,
        }
    }
}

/// One side of a `COPY_LINEAR_RECT`: a surface of elements addressed as
/// `addr + ((offset.x + x) + (offset.y + y) · pitch + (offset.z + z) · slice_pitch) · element`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RectSurface {
    /// Base address, dword-aligned.
    pub addr: u64,
    /// Offset of the copied box in elements: x and y below 2^14, z below 2^11.
    pub offset: [u32; 3],
    /// Elements from one row to the next, 1..=2^19.
    pub pitch: u32,
    /// Elements from one slice to the next, 1..=2^28.
    pub slice_pitch: u32,
}

impl RectSurface {
    /// The byte address of the first element of row `y` of slice `z` of the copied box, or
    /// `None` when it does not fit 64 bits.
    #[must_use]
    pub const fn row_address(&self, element_log2: u8, y: u32, z: u32) -> Option<u64> {
        let x = self.offset[0] as u64;
        let y = (self.offset[1] as u64).saturating_add(y as u64).saturating_mul(self.pitch as u64);
        let z = (self.offset[2] as u64)
            .saturating_add(z as u64)
            .saturating_mul(self.slice_pitch as u64);
        // At most 2^14 + 2^15·2^19 + 2^12·2^28 elements of 2^4 bytes: no overflow before the add.
        let elements = x.saturating_add(y).saturating_add(z);
        self.addr.checked_add(elements << element_log2)
    }

    const fn check(&self) -> Result<(), SdmaError> {
        if !self.addr.is_multiple_of(4) {
            return Err(SdmaError::Misaligned);
        }
        if self.offset[0] >> 14 != 0
            || self.offset[1] >> 14 != 0
            || self.offset[2] >> 11 != 0
            || self.pitch == 0
            || self.pitch > 1 << 19
            || self.slice_pitch == 0
            || self.slice_pitch > 1 << 28
        {
            return Err(SdmaError::FieldOverflow);
        }
        Ok(())
    }

    /// Its five dwords of a `COPY_LINEAR_RECT` (validated: pitches are at least 1).
    const fn encode(&self) -> [u32; 5] {
        [
            self.addr as u32,
            (self.addr >> 32) as u32,
            self.offset[0] | (self.offset[1] << 16),
            self.offset[2] | (self.pitch.saturating_sub(1) << 13),
            self.slice_pitch.saturating_sub(1),
        ]
    }

    /// Decodes its five dwords of a `COPY_LINEAR_RECT` (address, offsets, pitches), which
    /// start at dword `at` of the packet.
    fn decode(d: [u32; 5], at: u8) -> Result<Self, SdmaError> {
        let [lo, hi, p1, p2, p3] = d;
        if p1 & 0xC000_C000 != 0 {
            return Err(SdmaError::ReservedNonZero { dword: at.saturating_add(2) });
        }
        if p2 & 0x1800 != 0 {
            return Err(SdmaError::ReservedNonZero { dword: at.saturating_add(3) });
        }
        if p3 >> 28 != 0 {
            return Err(SdmaError::ReservedNonZero { dword: at.saturating_add(4) });
        }
        Ok(RectSurface {
            addr: lo as u64 | ((hi as u64) << 32),
            offset: [p1 & 0x3FFF, (p1 >> 16) & 0x3FFF, p2 & 0x7FF],
            pitch: (p2 >> 13).saturating_add(1),
            slice_pitch: p3.saturating_add(1),
        })
    }
}

/// `COPY_LINEAR_RECT` (13 dwords, the layout before gfx12): a box of `extent` elements of
/// `1 << element_log2` bytes from `src` to `dst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LinearRect {
    /// log2 of the element size in bytes, 0..=4.
    pub element_log2: u8,
    /// The source surface.
    pub src: RectSurface,
    /// The destination surface.
    pub dst: RectSurface,
    /// Elements copied along x and y (1..=2^14 each) and z (1..=2^11).
    pub extent: [u32; 3],
}

impl LinearRect {
    /// Bytes of one row of the box.
    #[must_use]
    pub const fn row_bytes(&self) -> u64 {
        (self.extent[0] as u64) << self.element_log2
    }

    const fn check(&self) -> Result<(), SdmaError> {
        if self.element_log2 > 4 {
            return Err(SdmaError::FieldOverflow);
        }
        if self.extent[0] == 0
            || self.extent[0] > 1 << 14
            || self.extent[1] == 0
            || self.extent[1] > 1 << 14
            || self.extent[2] == 0
            || self.extent[2] > 1 << 11
        {
            return Err(SdmaError::InvalidSize);
        }
        if let Err(e) = self.src.check() {
            return Err(e);
        }
        if let Err(e) = self.dst.check() {
            return Err(e);
        }
        // The last row of each side must end inside the address space.
        if !self.ends_in_range(&self.src) || !self.ends_in_range(&self.dst) {
            return Err(SdmaError::AddressOverflow);
        }
        Ok(())
    }

    const fn ends_in_range(&self, s: &RectSurface) -> bool {
        match s.row_address(
            self.element_log2,
            self.extent[1].saturating_sub(1),
            self.extent[2].saturating_sub(1),
        ) {
            Some(a) => a.checked_add(self.row_bytes()).is_some(),
            None => false,
        }
    }
}

/// A `POLL_REGMEM` on registers (6 dwords): with `hdp_flush`, the HDP flush of
/// `sdma_v4_0_ring_emit_hdp_flush` (write the request register, poll the done register); else a
/// register poll. ROCr's `hdp_flush_cmd` is the register poll `{0x8, 0, 0x80000000, 0, 0, 0}`
/// (`func` always), which the SDMA microcode from version 0x1A5 treats as an HDP flush.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RegisterPoll {
    /// Header bit 26: flush the HDP first.
    pub hdp_flush: bool,
    /// Comparison.
    pub func: PollFunc,
    /// Dwords 1 and 2 as the packet carries them (register byte offsets: the written request
    /// register and the polled register of an HDP flush).
    pub registers: [u32; 2],
    /// Reference value.
    pub reference: u32,
    /// Mask applied to the register value.
    pub mask: u32,
    /// Poll interval (16 bits).
    pub interval: u16,
    /// Retries before giving up (12 bits; 0xFFF = forever).
    pub retry_count: u16,
}

/// `GCR` with `USER_GCR` (5 dwords, gfx10+): write back and/or invalidate the GPU caches over
/// `[base_va, limit_va]`, or all lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GcrRequest {
    /// Start of the range: 48 bits, 128-byte aligned.
    pub base_va: u64,
    /// End of the range: 48 bits, 128-byte aligned.
    pub limit_va: u64,
    /// `GCR_CONTROL` bits 0..16 (dword 2 bits 16..32: GLI/GL1/GLM/GLK/GLV/GL2 invalidate,
    /// write-back and range controls).
    pub control: u16,
    /// The range is physical.
    pub range_is_pa: bool,
    /// `GCR_CONTROL_SEQ` (2 bits).
    pub seq: u8,
    /// VMID (4 bits).
    pub vmid: u8,
}

/// A typed SDMA packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SdmaPacket {
    /// `NOP` spanning `dwords` dwords in total (header included), 1..=[`MAX_NOP_DWORDS`].
    Nop {
        /// Total length in dwords.
        dwords: u32,
    },
    /// `COPY_LINEAR` (7 dwords): copy `bytes` from `src` to `dst`.
    CopyLinear {
        /// Source address.
        src: u64,
        /// Destination address.
        dst: u64,
        /// Byte count, 1..=[`SdmaLimits::max_copy_bytes`].
        bytes: u32,
    },
    /// `COPY_LINEAR` with `broadcast` (9 dwords): copy `bytes` from `src` to both destinations.
    CopyLinearBroadcast {
        /// Source address.
        src: u64,
        /// The two destination addresses.
        dst: [u64; 2],
        /// Byte count, 1..=[`SdmaLimits::max_copy_bytes`].
        bytes: u32,
    },
    /// `COPY_LINEAR_RECT` (13 dwords): a sub-box of one pitched surface to another.
    CopyLinearRect(LinearRect),
    /// `CONSTANT_FILL` with dword fill size (5 dwords): write `data` over `bytes` at `dst`.
    ConstantFill {
        /// Destination address, dword-aligned.
        dst: u64,
        /// The dword written.
        data: u32,
        /// Byte count: a multiple of 4, 4..=[`MAX_FILL_BYTES`].
        bytes: u32,
    },
    /// `WRITE` linear (4 dwords, then `dwords` data dwords): the data following the packet's
    /// header is written to `dst`.
    Write {
        /// Destination, dword-aligned.
        dst: u64,
        /// Data dwords, 1..=[`MAX_WRITE_DWORDS`].
        dwords: u32,
    },
    /// `FENCE` (4 dwords): write `data` (32 bits) to `addr` once earlier packets completed.
    Fence {
        /// Destination, dword-aligned.
        addr: u64,
        /// The value written.
        data: u32,
        /// Memory type of the write (3 bits; ROCr uses 3 = uncached on gfx10+, else 0).
        mtype: u8,
    },
    /// `TRAP` (2 dwords): raise an interrupt with context `int_ctx` (28 bits; the KFD event
    /// id when used for events).
    Trap {
        /// Interrupt context.
        int_ctx: u32,
    },
    /// `POLL_REGMEM` on memory (6 dwords): wait until `(mem[addr] & mask) func reference`.
    PollRegMem {
        /// Polled address, dword-aligned.
        addr: u64,
        /// Reference value.
        reference: u32,
        /// Mask applied to the memory value.
        mask: u32,
        /// Comparison.
        func: PollFunc,
        /// Poll interval (16 bits, in engine clock units of 16 cycles).
        interval: u16,
        /// Retries before giving up (12 bits; 0xFFF = forever).
        retry_count: u16,
    },
    /// `POLL_REGMEM` on registers (6 dwords), an HDP flush among them.
    PollRegister(RegisterPoll),
    /// `ATOMIC` with `SDMA_ATOMIC_ADD64` (8 dwords): `mem[addr] += value` as one 64-bit atomic
    /// (ROCr decrements a completion signal with `value = −1`).
    AtomicAdd64 {
        /// The 64-bit location, 8-byte aligned.
        addr: u64,
        /// The addend (two's complement).
        value: u64,
    },
    /// `TIMESTAMP` with `GET_GLOBAL` (3 dwords): write the 64-bit global GPU timestamp to
    /// `addr`.
    Timestamp {
        /// Destination, 8-byte aligned.
        addr: u64,
    },
    /// `GCR` (5 dwords): cache write-back / invalidation.
    Gcr(GcrRequest),
}

/// The first `N` dwords of `dw` as an array.
fn take<const N: usize>(dw: &[u32]) -> Result<[u32; N], SdmaError> {
    dw.get(..N).and_then(|d| <[u32; N]>::try_from(d).ok()).ok_or(SdmaError::Truncated)
}

#[inline]
pub(super) const fn header(op: u8, sub_op: u8) -> u32 {
    op as u32 | ((sub_op as u32) << 8)
}

const fn check_copy(limits: SdmaLimits, src: u64, dst: u64, bytes: u32) -> Result<(), SdmaError> {
    if bytes == 0 || bytes > limits.max_copy_bytes() {
        return Err(SdmaError::InvalidSize);
    }
    if src.checked_add(bytes as u64).is_none() || dst.checked_add(bytes as u64).is_none() {
        return Err(SdmaError::AddressOverflow);
    }
    Ok(())
}

const fn aligned(addr: u64, to: u64) -> Result<(), SdmaError> {
    if addr.is_multiple_of(to) { Ok(()) } else { Err(SdmaError::Misaligned) }
}

impl SdmaPacket {
    /// Length in dwords (a `WRITE` with its data, a `NOP` with its payload).
    #[must_use]
    #[inline]
    pub const fn dwords(&self) -> u32 {
        match self {
            Self::Nop { dwords } => *dwords,
            Self::CopyLinear { .. } => 7,
            Self::CopyLinearBroadcast { .. } => 9,
            Self::CopyLinearRect(_) => 13,
            Self::ConstantFill { .. } => 5,
            Self::Write { dwords, .. } => dwords.saturating_add(4),
            Self::Fence { .. } => 4,
            Self::Trap { .. } => 2,
            Self::PollRegMem { .. } | Self::PollRegister(_) => 6,
            Self::AtomicAdd64 { .. } => 8,
            Self::Timestamp { .. } => 3,
            Self::Gcr(_) => 5,
        }
    }

    /// Checks the packet against the field ranges of `limits`.
    ///
    /// # Errors
    /// [`SdmaError::InvalidSize`], [`SdmaError::Misaligned`], [`SdmaError::FieldOverflow`],
    /// [`SdmaError::AddressOverflow`].
    pub const fn validate(&self, limits: SdmaLimits) -> Result<(), SdmaError> {
        match *self {
            Self::Nop { dwords } => {
                if dwords == 0 || dwords > MAX_NOP_DWORDS {
                    return Err(SdmaError::InvalidSize);
                }
                Ok(())
            }
            Self::CopyLinear { bytes, src, dst } => check_copy(limits, src, dst, bytes),
            Self::CopyLinearBroadcast { src, dst, bytes } => {
                if let Err(e) = check_copy(limits, src, dst[0], bytes) {
                    return Err(e);
                }
                check_copy(limits, src, dst[1], bytes)
            }
            Self::CopyLinearRect(r) => r.check(),
            Self::ConstantFill { dst, bytes, .. } => {
                if bytes == 0 || !bytes.is_multiple_of(4) || bytes > MAX_FILL_BYTES {
                    return Err(SdmaError::InvalidSize);
                }
                aligned(dst, 4)
            }
            Self::Write { dst, dwords } => {
                if dwords == 0 || dwords > MAX_WRITE_DWORDS {
                    return Err(SdmaError::InvalidSize);
                }
                if dst.checked_add((dwords as u64).saturating_mul(4)).is_none() {
                    return Err(SdmaError::AddressOverflow);
                }
                aligned(dst, 4)
            }
            Self::Fence { addr, mtype, .. } => {
                if mtype > 7 {
                    return Err(SdmaError::FieldOverflow);
                }
                aligned(addr, 4)
            }
            Self::Trap { int_ctx } => {
                if int_ctx >> 28 != 0 {
                    return Err(SdmaError::FieldOverflow);
                }
                Ok(())
            }
            Self::PollRegMem { addr, retry_count, .. } => {
                if retry_count >> 12 != 0 {
                    return Err(SdmaError::FieldOverflow);
                }
                aligned(addr, 4)
            }
            Self::PollRegister(p) => {
                if p.retry_count >> 12 != 0 {
                    return Err(SdmaError::FieldOverflow);
                }
                Ok(())
            }
            Self::AtomicAdd64 { addr, .. } | Self::Timestamp { addr } => aligned(addr, 8),
            Self::Gcr(g) => {
                if g.base_va >> 48 != 0 || g.limit_va >> 48 != 0 || g.seq > 3 || g.vmid > 15 {
                    return Err(SdmaError::FieldOverflow);
                }
                if let Err(e) = aligned(g.base_va, 128) {
                    return Err(e);
                }
                aligned(g.limit_va, 128)
            }
        }
    }

    /// Encodes the packet (validated) into the first [`SdmaPacket::dwords`] dwords of `out`;
    /// a NOP is its header followed by zero dwords, a `WRITE` its four header dwords followed by
    /// zero data (write the data after them).
    ///
    /// # Errors
    /// The [`SdmaPacket::validate`] errors; [`SdmaError::Truncated`] when `out` is too short.
    pub fn encode(&self, limits: SdmaLimits, out: &mut [u32]) -> Result<usize, SdmaError> {
        self.validate(limits)?;
        let n = self.dwords() as usize;
        let out = out.get_mut(..n).ok_or(SdmaError::Truncated)?;
        let mut buf = [0u32; MAX_PACKET_DWORDS];
        let len = self.encode_fixed(&mut buf);
        out.fill(0);
        for (o, w) in out.iter_mut().zip(buf.iter().take(len)) {
            *o = *w;
        }
        Ok(n)
    }

    /// Encodes the fixed part into a buffer (a NOP: its header; a `WRITE`: its four header
    /// dwords). Returns the dwords written.
    #[inline]
    pub(super) fn encode_fixed(&self, b: &mut [u32; MAX_PACKET_DWORDS]) -> usize {
        let lo = |v: u64| v as u32;
        let hi = |v: u64| (v >> 32) as u32;
        match *self {
            Self::Nop { dwords } => {
                b[0] = header(SDMA_OP_NOP, 0) | (dwords.saturating_sub(1) << 16);
                1
            }
            Self::CopyLinear { src, dst, bytes } => {
                b[0] = header(SDMA_OP_COPY, SDMA_SUBOP_COPY_LINEAR);
                b[1] = bytes.saturating_sub(1);
                b[2] = 0;
                b[3] = lo(src);
                b[4] = hi(src);
                b[5] = lo(dst);
                b[6] = hi(dst);
                7
            }
            Self::CopyLinearBroadcast { src, dst, bytes } => {
                b[0] = header(SDMA_OP_COPY, SDMA_SUBOP_COPY_LINEAR) | COPY_BROADCAST;
                b[1] = bytes.saturating_sub(1);
                b[2] = 0;
                b[3] = lo(src);
                b[4] = hi(src);
                b[5] = lo(dst[0]);
                b[6] = hi(dst[0]);
                b[7] = lo(dst[1]);
                b[8] = hi(dst[1]);
                9
            }
            Self::CopyLinearRect(r) => {
                let [s0, s1, s2, s3, s4] = r.src.encode();
                let [d0, d1, d2, d3, d4] = r.dst.encode();
                *b = [
                    header(SDMA_OP_COPY, SDMA_SUBOP_COPY_LINEAR_RECT)
                        | ((r.element_log2 as u32) << 29),
                    s0,
                    s1,
                    s2,
                    s3,
                    s4,
                    d0,
                    d1,
                    d2,
                    d3,
                    d4,
                    r.extent[0].saturating_sub(1) | (r.extent[1].saturating_sub(1) << 16),
                    r.extent[2].saturating_sub(1),
                ];
                13
            }
            Self::ConstantFill { dst, data, bytes } => {
                b[0] = header(SDMA_OP_CONST_FILL, 0) | (FILLSIZE_DWORD << 30);
                b[1] = lo(dst);
                b[2] = hi(dst);
                b[3] = data;
                b[4] = bytes.saturating_sub(1);
                5
            }
            Self::Write { dst, dwords } => {
                b[0] = header(SDMA_OP_WRITE, SDMA_SUBOP_WRITE_LINEAR);
                b[1] = lo(dst);
                b[2] = hi(dst);
                b[3] = dwords.saturating_sub(1);
                4
            }
            Self::Fence { addr, data, mtype } => {
                b[0] = header(SDMA_OP_FENCE, 0) | ((mtype as u32) << 16);
                b[1] = lo(addr);
                b[2] = hi(addr);
                b[3] = data;
                4
            }
            Self::Trap { int_ctx } => {
                b[0] = header(SDMA_OP_TRAP, 0);
                b[1] = int_ctx;
                2
            }
            Self::PollRegMem { addr, reference, mask, func, interval, retry_count } => {
                b[0] = header(SDMA_OP_POLL_REGMEM, 0) | ((func as u32) << 28) | (1 << 31);
                b[1] = lo(addr);
                b[2] = hi(addr);
                b[3] = reference;
                b[4] = mask;
                b[5] = interval as u32 | ((retry_count as u32) << 16);
                6
            }
            Self::PollRegister(p) => {
                b[0] = header(SDMA_OP_POLL_REGMEM, 0)
                    | ((p.hdp_flush as u32) << 26)
                    | ((p.func as u32) << 28);
                b[1] = p.registers[0];
                b[2] = p.registers[1];
                b[3] = p.reference;
                b[4] = p.mask;
                b[5] = p.interval as u32 | ((p.retry_count as u32) << 16);
                6
            }
            Self::AtomicAdd64 { addr, value } => {
                b[0] = header(SDMA_OP_ATOMIC, 0) | ((SDMA_ATOMIC_ADD64 as u32) << 25);
                b[1] = lo(addr);
                b[2] = hi(addr);
                b[3] = lo(value);
                b[4] = hi(value);
                b[5] = 0;
                b[6] = 0;
                b[7] = 0;
                8
            }
            Self::Timestamp { addr } => {
                b[0] = header(SDMA_OP_TIMESTAMP, SDMA_SUBOP_TIMESTAMP_GET_GLOBAL);
                b[1] = lo(addr);
                b[2] = hi(addr);
                3
            }
            Self::Gcr(g) => {
                b[0] = header(SDMA_OP_GCR, SDMA_SUBOP_USER_GCR);
                b[1] = lo(g.base_va);
                b[2] = (hi(g.base_va) & 0xFFFF) | ((g.control as u32) << 16);
                b[3] = (g.range_is_pa as u32) | ((g.seq as u32) << 1) | lo(g.limit_va);
                b[4] = (hi(g.limit_va) & 0xFFFF) | ((g.vmid as u32) << 24);
                5
            }
        }
    }

    /// Decodes the packet starting at `dw[0]`. Returns the packet and its length in dwords. A
    /// NOP's payload and a `WRITE`'s data are not inspected (they need not be present in `dw`).
    /// The decoder is strict: a decoded packet re-encodes ([`SdmaPacket::encode`]) to the
    /// dwords it came from (a NOP: to its header; a `WRITE`: to its four header dwords).
    ///
    /// # Errors
    /// [`SdmaError::Truncated`] when `dw` ends early, [`SdmaError::UnknownOpcode`] (other
    /// opcodes and sub-opcodes: tiled copies, byte fills, local timestamps ...),
    /// [`SdmaError::UnsupportedAtomic`], [`SdmaError::ReservedNonZero`] for set bits this
    /// module does not model (TMZ, swaps, cache policies, a compare value of an add), and the
    /// [`SdmaPacket::validate`] errors.
    pub fn decode(limits: SdmaLimits, dw: &[u32]) -> Result<(SdmaPacket, usize), SdmaError> {
        let h = *dw.first().ok_or(SdmaError::Truncated)?;
        let (op, sub_op) = (h as u8, (h >> 8) as u8);
        let join = |lo: u32, hi: u32| lo as u64 | ((hi as u64) << 32);
        let reserved = |cond: bool, dword: u8| {
            if cond { Err(SdmaError::ReservedNonZero { dword }) } else { Ok(()) }
        };
        let p = match (op, sub_op) {
            (SDMA_OP_NOP, 0) => {
                reserved(h >> 30 != 0, 0)?;
                SdmaPacket::Nop { dwords: ((h >> 16) & 0x3FFF).saturating_add(1) }
            }
            (SDMA_OP_COPY, SDMA_SUBOP_COPY_LINEAR) if h & COPY_BROADCAST != 0 => {
                let d: [u32; 9] = take(dw)?;
                reserved((h & !COPY_BROADCAST) >> 16 != 0, 0)?;
                reserved(d[1] & !limits.copy_count_mask() != 0, 1)?;
                reserved(d[2] != 0, 2)?;
                SdmaPacket::CopyLinearBroadcast {
                    src: join(d[3], d[4]),
                    dst: [join(d[5], d[6]), join(d[7], d[8])],
                    bytes: d[1].saturating_add(1),
                }
            }
            (SDMA_OP_COPY, SDMA_SUBOP_COPY_LINEAR) => {
                let d: [u32; 7] = take(dw)?;
                reserved(h >> 16 != 0, 0)?;
                reserved(d[1] & !limits.copy_count_mask() != 0, 1)?;
                reserved(d[2] != 0, 2)?;
                SdmaPacket::CopyLinear {
                    src: join(d[3], d[4]),
                    dst: join(d[5], d[6]),
                    bytes: d[1].saturating_add(1),
                }
            }
            (SDMA_OP_COPY, SDMA_SUBOP_COPY_LINEAR_RECT) => {
                let d: [u32; 13] = take(dw)?;
                reserved(h & 0x1FFF_0000 != 0, 0)?;
                reserved(d[11] & 0xC000_C000 != 0, 11)?;
                // rect_z, then the swaps (not modelled) and reserved bits.
                reserved(d[12] >> 11 != 0, 12)?;
                SdmaPacket::CopyLinearRect(LinearRect {
                    element_log2: (h >> 29) as u8,
                    src: RectSurface::decode([d[1], d[2], d[3], d[4], d[5]], 1)?,
                    dst: RectSurface::decode([d[6], d[7], d[8], d[9], d[10]], 6)?,
                    extent: [
                        (d[11] & 0x3FFF).saturating_add(1),
                        ((d[11] >> 16) & 0x3FFF).saturating_add(1),
                        d[12].saturating_add(1),
                    ],
                })
            }
            (SDMA_OP_CONST_FILL, 0) => {
                let d: [u32; 5] = take(dw)?;
                reserved(h & 0x3FFF_0000 != 0 || h >> 30 != FILLSIZE_DWORD, 0)?;
                reserved(d[4] >> 22 != 0, 4)?;
                // A dword fill covers whole dwords: the count (`bytes − 1`) ends in 0b11.
                if d[4] & 3 != 3 {
                    return Err(SdmaError::InvalidSize);
                }
                SdmaPacket::ConstantFill {
                    dst: join(d[1], d[2]),
                    data: d[3],
                    bytes: (d[4] >> 2).saturating_add(1).saturating_mul(4),
                }
            }
            (SDMA_OP_WRITE, SDMA_SUBOP_WRITE_LINEAR) => {
                let d: [u32; 4] = take(dw)?;
                reserved(h >> 16 != 0, 0)?;
                reserved(d[3] >> 20 != 0, 3)?;
                SdmaPacket::Write { dst: join(d[1], d[2]), dwords: d[3].saturating_add(1) }
            }
            (SDMA_OP_FENCE, 0) => {
                let d: [u32; 4] = take(dw)?;
                reserved(h >> 19 != 0, 0)?;
                SdmaPacket::Fence {
                    addr: join(d[1], d[2]),
                    data: d[3],
                    mtype: ((h >> 16) & 7) as u8,
                }
            }
            (SDMA_OP_TRAP, 0) => {
                let d: [u32; 2] = take(dw)?;
                reserved(h >> 16 != 0, 0)?;
                reserved(d[1] >> 28 != 0, 1)?;
                SdmaPacket::Trap { int_ctx: d[1] }
            }
            (SDMA_OP_POLL_REGMEM, 0) => {
                let d: [u32; 6] = take(dw)?;
                let func = PollFunc::from_raw((h >> 28) & 7)
                    .ok_or(SdmaError::ReservedNonZero { dword: 0 })?;
                reserved(d[5] >> 28 != 0, 5)?;
                let (interval, retry_count) = (d[5] as u16, ((d[5] >> 16) & 0xFFF) as u16);
                if h >> 31 == 1 {
                    // Memory: hdp_flush (bit 26) and the other header bits clear.
                    reserved(h & 0x0FFF_0000 != 0, 0)?;
                    SdmaPacket::PollRegMem {
                        addr: join(d[1], d[2]),
                        reference: d[3],
                        mask: d[4],
                        func,
                        interval,
                        retry_count,
                    }
                } else {
                    reserved(h & 0x0BFF_0000 != 0, 0)?;
                    SdmaPacket::PollRegister(RegisterPoll {
                        hdp_flush: h & (1 << 26) != 0,
                        func,
                        registers: [d[1], d[2]],
                        reference: d[3],
                        mask: d[4],
                        interval,
                        retry_count,
                    })
                }
            }
            (SDMA_OP_ATOMIC, 0) => {
                let d: [u32; 8] = take(dw)?;
                let operation = (h >> 25) as u8;
                if operation != SDMA_ATOMIC_ADD64 {
                    return Err(SdmaError::UnsupportedAtomic { operation });
                }
                // The loop bit, reserved bits, compare value and loop interval: an add has none.
                reserved(h & 0x01FF_0000 != 0, 0)?;
                reserved(d[5] != 0, 5)?;
                reserved(d[6] != 0, 6)?;
                reserved(d[7] != 0, 7)?;
                SdmaPacket::AtomicAdd64 { addr: join(d[1], d[2]), value: join(d[3], d[4]) }
            }
            (SDMA_OP_TIMESTAMP, SDMA_SUBOP_TIMESTAMP_GET_GLOBAL) => {
                let d: [u32; 3] = take(dw)?;
                reserved(h >> 16 != 0, 0)?;
                SdmaPacket::Timestamp { addr: join(d[1], d[2]) }
            }
            (SDMA_OP_GCR, SDMA_SUBOP_USER_GCR) => {
                let d: [u32; 5] = take(dw)?;
                reserved(h >> 16 != 0, 0)?;
                reserved(d[1] & 0x7F != 0, 1)?;
                reserved(d[3] & 0x78 != 0, 3)?;
                reserved(d[4] & 0xF0FF_0000 != 0, 4)?;
                SdmaPacket::Gcr(GcrRequest {
                    base_va: join(d[1], d[2] & 0xFFFF),
                    limit_va: join(d[3] & !0x7F, d[4] & 0xFFFF),
                    control: (d[2] >> 16) as u16,
                    range_is_pa: d[3] & 1 != 0,
                    seq: ((d[3] >> 1) & 3) as u8,
                    vmid: ((d[4] >> 24) & 0xF) as u8,
                })
            }
            (op, sub_op) => return Err(SdmaError::UnknownOpcode { op, sub_op }),
        };
        p.validate(limits)?;
        Ok((p, p.dwords() as usize))
    }
}

#[cfg(test)]
mod tests;
