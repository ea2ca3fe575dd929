//! How waves reach memory: the [`WaveMemory`] trait (reads, writes and atomics by GPU virtual
//! address, each failing with a [`MemFault`] for an address no buffer backs), and
//! [`TestMemory`], a plain implementation over owned byte regions for tests, fuzzing and
//! benchmarks. The simulator's GPU page tables implement it in [`super::vm_memory`].

use std::fmt;

use super::limits::LANES;
use super::wave::active_lanes;

/// Why an access faulted (the failure bits of amdkfd's memory exception,
/// `kfd_hsa_memory_exception_data.failure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultCause {
    /// Nothing is mapped there for the GPU (`NotPresent`), or the access is misaligned where
    /// the hardware requires alignment (atomics).
    NotPresent,
    /// A write (store or atomic) to memory mapped without write access (`ReadOnly`: a buffer
    /// allocated without `KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE`).
    ReadOnly,
    /// An instruction fetch from memory mapped without execute access (`NoExecute`: a buffer
    /// allocated without `KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE`).
    NoExecute,
}

/// A wave touched an address it may not: nothing is mapped there, the mapping does not permit
/// the access, or the access is misaligned where the hardware requires alignment (atomics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemFault {
    /// The first faulting byte address.
    pub address: u64,
    /// Whether the access was a write (stores and atomics).
    pub write: bool,
    /// Why it faulted.
    pub cause: FaultCause,
}

impl MemFault {
    /// An access to `address` that nothing mapped backs.
    #[must_use]
    pub const fn not_present(address: u64, write: bool) -> Self {
        MemFault { address, write, cause: FaultCause::NotPresent }
    }

    /// A write to `address`, mapped read-only.
    #[must_use]
    pub const fn read_only(address: u64) -> Self {
        MemFault { address, write: true, cause: FaultCause::ReadOnly }
    }

    /// An instruction fetch at `address`, mapped without execute access.
    #[must_use]
    pub const fn no_execute(address: u64) -> Self {
        MemFault { address, write: false, cause: FaultCause::NoExecute }
    }
}

impl fmt::Display for MemFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match (self.cause, self.write) {
            (FaultCause::NotPresent, false) => "read",
            (FaultCause::NotPresent, true) => "write",
            (FaultCause::ReadOnly, _) => "write to read-only memory",
            (FaultCause::NoExecute, _) => "instruction fetch from memory without execute access",
        };
        write!(f, "GPU memory violation: {what} at {:#x}", self.address)
    }
}

impl std::error::Error for MemFault {}

/// A read-modify-write operation of the memory atomics (`*_atomic_*`, `ds_*` LDS atomics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// Exchange: the new value is the data.
    Swap,
    /// Compare and swap: store the data when the old value equals the compare value.
    CmpSwap,
    /// Wrapping add.
    Add,
    /// Wrapping subtract (old - data).
    Sub,
    /// Wrapping reverse subtract (data - old).
    RSub,
    /// Signed minimum.
    SMin,
    /// Unsigned minimum.
    UMin,
    /// Signed maximum.
    SMax,
    /// Unsigned maximum.
    UMax,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise xor.
    Xor,
    /// Increment with wrap: `old >= data ? 0 : old + 1`.
    Inc,
    /// Decrement with wrap: `old == 0 || old > data ? data : old - 1`.
    Dec,
    /// IEEE single-precision add (32-bit only).
    AddF32,
    /// IEEE double-precision add (64-bit only).
    AddF64,
}

impl AtomicOp {
    /// The new 32-bit value from the `old` one, the `data` operand and the compare value.
    #[must_use]
    pub fn apply32(self, old: u32, data: u32, cmp: u32) -> u32 {
        match self {
            Self::Swap => data,
            Self::CmpSwap => {
                if old == cmp {
                    data
                } else {
                    old
                }
            }
            Self::Add => old.wrapping_add(data),
            Self::Sub => old.wrapping_sub(data),
            Self::RSub => data.wrapping_sub(old),
            Self::SMin => (old as i32).min(data as i32) as u32,
            Self::UMin => old.min(data),
            Self::SMax => (old as i32).max(data as i32) as u32,
            Self::UMax => old.max(data),
            Self::And => old & data,
            Self::Or => old | data,
            Self::Xor => old ^ data,
            Self::Inc => {
                if old >= data {
                    0
                } else {
                    old + 1
                }
            }
            Self::Dec => {
                if old == 0 || old > data {
                    data
                } else {
                    old - 1
                }
            }
            Self::AddF32 => (f32::from_bits(old) + f32::from_bits(data)).to_bits(),
            Self::AddF64 => old,
        }
    }

    /// As [`AtomicOp::apply32`] for 64-bit locations.
    #[must_use]
    pub fn apply64(self, old: u64, data: u64, cmp: u64) -> u64 {
        match self {
            Self::Swap => data,
            Self::CmpSwap => {
                if old == cmp {
                    data
                } else {
                    old
                }
            }
            Self::Add => old.wrapping_add(data),
            Self::Sub => old.wrapping_sub(data),
            Self::RSub => data.wrapping_sub(old),
            Self::SMin => (old as i64).min(data as i64) as u64,
            Self::UMin => old.min(data),
            Self::SMax => (old as i64).max(data as i64) as u64,
            Self::UMax => old.max(data),
            Self::And => old & data,
            Self::Or => old | data,
            Self::Xor => old ^ data,
            Self::Inc => {
                if old >= data {
                    0
                } else {
                    old + 1
                }
            }
            Self::Dec => {
                if old == 0 || old > data {
                    data
                } else {
                    old - 1
                }
            }
            Self::AddF32 => old,
            Self::AddF64 => (f64::from_bits(old) + f64::from_bits(data)).to_bits(),
        }
    }
}

/// Memory as a wave sees it: byte-addressed GPU virtual memory. Every access is checked; a
/// range that is not wholly backed fails with [`MemFault`] and changes nothing.
///
/// Loads and stores may be at any byte alignment (gfx9 runs with unaligned access enabled);
/// atomics must be naturally aligned.
pub trait WaveMemory {
    /// Copies `dst.len()` bytes at `address` into `dst`.
    ///
    /// # Errors
    /// [`MemFault`] when a byte of the range is not backed.
    fn read(&mut self, address: u64, dst: &mut [u8]) -> Result<(), MemFault>;

    /// Copies `src` to `address`.
    ///
    /// # Errors
    /// As [`WaveMemory::read`].
    fn write(&mut self, address: u64, src: &[u8]) -> Result<(), MemFault>;

    /// Atomically applies `op` to the 32-bit word at `address`; returns the old value.
    ///
    /// # Errors
    /// As [`WaveMemory::read`], and for an address that is not 4-aligned.
    fn atomic32(
        &mut self,
        address: u64,
        op: AtomicOp,
        data: u32,
        cmp: u32,
    ) -> Result<u32, MemFault>;

    /// As [`WaveMemory::atomic32`] for the 64-bit word at `address` (8-aligned).
    ///
    /// # Errors
    /// As [`WaveMemory::atomic32`].
    fn atomic64(
        &mut self,
        address: u64,
        op: AtomicOp,
        data: u64,
        cmp: u64,
    ) -> Result<u64, MemFault>;

    /// Loads the 32-bit little-endian word at `address` (the hot path of vector loads).
    ///
    /// # Errors
    /// As [`WaveMemory::read`].
    fn load_u32(&mut self, address: u64) -> Result<u32, MemFault> {
        let mut b = [0u8; 4];
        self.read(address, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Stores the 32-bit little-endian word `value` at `address`.
    ///
    /// # Errors
    /// As [`WaveMemory::read`].
    fn store_u32(&mut self, address: u64, value: u32) -> Result<(), MemFault> {
        self.write(address, &value.to_le_bytes())
    }

    /// Loads the dword at `addresses[l]` into `out[l]` for each lane `l` of `mask` (a vector
    /// load's lanes at once: implementations serve lanes that share a page with one lookup).
    ///
    /// # Errors
    /// As [`WaveMemory::read`]; lanes before the faulting one may have been loaded.
    fn load_lanes(
        &mut self,
        addresses: &[u64; LANES],
        mask: u64,
        out: &mut [u32; LANES],
    ) -> Result<(), MemFault> {
        for l in active_lanes(mask) {
            out[l] = self.load_u32(addresses[l])?;
        }
        Ok(())
    }

    /// Stores `values[l]` at `addresses[l]` for each lane `l` of `mask`, in lane order.
    ///
    /// # Errors
    /// As [`WaveMemory::read`]; lanes before the faulting one have been stored.
    fn store_lanes(
        &mut self,
        addresses: &[u64; LANES],
        mask: u64,
        values: &[u32; LANES],
    ) -> Result<(), MemFault> {
        for l in active_lanes(mask) {
            self.store_u32(addresses[l], values[l])?;
        }
        Ok(())
    }

    /// Reads `dst.len()` bytes of machine code at `address` (an instruction fetch: the memory
    /// must permit execution). The default is [`WaveMemory::read`] (memory without
    /// permissions).
    ///
    /// # Errors
    /// As [`WaveMemory::read`], and a [`FaultCause::NoExecute`] fault for memory mapped
    /// without execute access.
    fn fetch(&mut self, address: u64, dst: &mut [u8]) -> Result<(), MemFault> {
        self.read(address, dst)
    }

    /// Forgets cached translations (between command-processor steps, so that memory the host
    /// freed in between faults instead of being reached through a stale view).
    fn flush(&mut self) {}
}

/// Memory for tests, fuzzing and benchmarks: byte regions at fixed addresses, owned.
#[derive(Debug, Clone, Default)]
pub struct TestMemory {
    regions: Vec<(u64, Vec<u8>)>,
    last: usize,
}

impl TestMemory {
    /// No memory at all.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `len` zeroed bytes at `base` (regions must not overlap; a later one overlapping an
    /// earlier one is never reached there).
    pub fn map(&mut self, base: u64, len: usize) {
        self.regions.push((base, vec![0; len]));
    }

    /// Adds a region at `base` holding `bytes`.
    pub fn map_bytes(&mut self, base: u64, bytes: &[u8]) {
        self.regions.push((base, bytes.to_vec()));
    }

    /// Adds a region at `base` holding the little-endian `words`.
    pub fn map_words(&mut self, base: u64, words: &[u32]) {
        self.regions.push((base, words.iter().flat_map(|w| w.to_le_bytes()).collect()));
    }

    fn find(&mut self, address: u64, len: usize, write: bool) -> Result<&mut [u8], MemFault> {
        let fault = MemFault::not_present(address, write);
        let end = address.checked_add(len as u64).ok_or(fault)?;
        let inside = |(base, bytes): &(u64, Vec<u8>)| {
            address >= *base && end <= base.saturating_add(bytes.len() as u64)
        };
        if !self.regions.get(self.last).is_some_and(inside) {
            self.last = self.regions.iter().position(inside).ok_or(fault)?;
        }
        let (base, bytes) = self.regions.get_mut(self.last).ok_or(fault)?;
        let at = (address - *base) as usize;
        bytes.get_mut(at..at + len).ok_or(fault)
    }

    /// The `len` bytes at `address`, or `None` when they are not all in one region.
    #[must_use]
    pub fn bytes(&self, address: u64, len: usize) -> Option<&[u8]> {
        let end = address.checked_add(len as u64)?;
        self.regions.iter().find_map(|(base, bytes)| {
            (address >= *base && end <= *base + bytes.len() as u64)
                .then(|| &bytes[(address - base) as usize..(end - base) as usize])
        })
    }

    /// The 32-bit word at `address` (0 when unmapped).
    #[must_use]
    pub fn word(&self, address: u64) -> u32 {
        self.bytes(address, 4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

impl TestMemory {
    /// The region holding every lane's dword, and its base.
    fn lanes_region(&mut self, addresses: &[u64; LANES], mask: u64) -> Option<(u64, &mut Vec<u8>)> {
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        for l in active_lanes(mask) {
            lo = lo.min(addresses[l]);
            hi = hi.max(addresses[l].checked_add(4)?);
        }
        let len = usize::try_from(hi.checked_sub(lo)?).ok()?;
        self.find(lo, len, false).ok()?;
        let (base, bytes) = self.regions.get_mut(self.last)?;
        Some((*base, bytes))
    }
}

impl WaveMemory for TestMemory {
    fn load_lanes(
        &mut self,
        addresses: &[u64; LANES],
        mask: u64,
        out: &mut [u32; LANES],
    ) -> Result<(), MemFault> {
        if let Some((base, bytes)) = self.lanes_region(addresses, mask) {
            for l in active_lanes(mask) {
                let at = (addresses[l] - base) as usize;
                out[l] =
                    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
            }
            return Ok(());
        }
        for l in active_lanes(mask) {
            out[l] = self.load_u32(addresses[l])?;
        }
        Ok(())
    }

    fn store_lanes(
        &mut self,
        addresses: &[u64; LANES],
        mask: u64,
        values: &[u32; LANES],
    ) -> Result<(), MemFault> {
        if let Some((base, bytes)) = self.lanes_region(addresses, mask) {
            for l in active_lanes(mask) {
                let at = (addresses[l] - base) as usize;
                bytes[at..at + 4].copy_from_slice(&values[l].to_le_bytes());
            }
            return Ok(());
        }
        for l in active_lanes(mask) {
            self.store_u32(addresses[l], values[l])?;
        }
        Ok(())
    }

    fn read(&mut self, address: u64, dst: &mut [u8]) -> Result<(), MemFault> {
        dst.copy_from_slice(self.find(address, dst.len(), false)?);
        Ok(())
    }

    fn write(&mut self, address: u64, src: &[u8]) -> Result<(), MemFault> {
        self.find(address, src.len(), true)?.copy_from_slice(src);
        Ok(())
    }

    fn atomic32(
        &mut self,
        address: u64,
        op: AtomicOp,
        data: u32,
        cmp: u32,
    ) -> Result<u32, MemFault> {
        if !address.is_multiple_of(4) {
            return Err(MemFault::not_present(address, true));
        }
        let b = self.find(address, 4, true)?;
        let old = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        b.copy_from_slice(&op.apply32(old, data, cmp).to_le_bytes());
        Ok(old)
    }

    fn atomic64(
        &mut self,
        address: u64,
        op: AtomicOp,
        data: u64,
        cmp: u64,
    ) -> Result<u64, MemFault> {
        if !address.is_multiple_of(8) {
            return Err(MemFault::not_present(address, true));
        }
        let b = self.find(address, 8, true)?;
        let mut w = [0u8; 8];
        w.copy_from_slice(b);
        let old = u64::from_le_bytes(w);
        b.copy_from_slice(&op.apply64(old, data, cmp).to_le_bytes());
        Ok(old)
    }
}
