//! Address watches on the simulated GPU: the texture cache's compare (`TCP_WATCH*`) of every
//! wave memory access against the watch points a debugger set (`DBG_TRAP`'s
//! `SET_NODE_ADDRESS_WATCH`), and [`WatchedMemory`], the interpreter's memory with that
//! compare in front of it.
//!
//! A watch compares the address bits its mask selects: the kernel programs the 24-bit
//! `TCP_WATCH_CNTL.MASK` field with `mask >> 6`, so the mask's bits 6 to 29 count (64-byte
//! granularity); address bits from 30 up are always compared. Mask `0xFFFF_FFC0` watches one
//! 64-byte line and `0xFFFF_F000` one 4 KiB page. Its mode picks the accesses: reads, anything but reads,
//! atomics, or all. A hit traps the wave only when its trap mask enables address watches
//! (`SET_WAVE_LAUNCH_OVERRIDE` with `KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH`).

use hsakmt_core::uapi::{
    KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ALL, KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ATOMIC,
    KFD_DBG_TRAP_ADDRESS_WATCH_MODE_NONREAD, KFD_DBG_TRAP_ADDRESS_WATCH_MODE_READ,
};

use crate::isa::limits::LANES;
use crate::isa::memory::{AtomicOp, MemFault, WaveMemory};
use crate::isa::wave::active_lanes;

/// What a wave did to memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WatchAccess {
    /// A load.
    Read,
    /// A store.
    Write,
    /// An atomic read-modify-write.
    Atomic,
}

/// One address watch point of a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WatchPoint {
    /// The watch id (0..4).
    pub(crate) id: u32,
    /// The watched address.
    pub(crate) address: u64,
    /// The address bits compared (see the module docs).
    pub(crate) mask: u32,
    /// `KFD_DBG_TRAP_ADDRESS_WATCH_MODE_*`.
    pub(crate) mode: u32,
}

impl WatchPoint {
    /// Whether an access of `len` bytes at `address` hits the watch.
    pub(crate) fn covers(&self, address: u64, len: u64, access: WatchAccess) -> bool {
        let mode_hit = match self.mode {
            KFD_DBG_TRAP_ADDRESS_WATCH_MODE_READ => access == WatchAccess::Read,
            KFD_DBG_TRAP_ADDRESS_WATCH_MODE_NONREAD => access != WatchAccess::Read,
            KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ATOMIC => access == WatchAccess::Atomic,
            KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ALL => true,
            _ => false,
        };
        let compared = (u64::from(self.mask) & 0x3FFF_FFC0) | !0x3FFF_FFFF;
        let last = address.saturating_add(len.max(1) - 1);
        // An access spans at most a few 64-byte lines; check each line it touches.
        let mut line = address & !0x3F;
        while line <= last {
            if mode_hit && line & compared == self.address & compared {
                return true;
            }
            match line.checked_add(64) {
                Some(next) => line = next,
                None => break,
            }
        }
        false
    }
}

/// The first watch among `points` that an access hits.
pub(crate) fn first_hit(
    points: &[WatchPoint],
    address: u64,
    len: u64,
    access: WatchAccess,
) -> Option<u32> {
    points.iter().find(|w| w.covers(address, len, access)).map(|w| w.id)
}

/// A wave's memory with the watch compare in front: every access goes through, and the first
/// watch hit is remembered ([`WatchedMemory::hit`]).
pub(crate) struct WatchedMemory<'a, M: WaveMemory> {
    inner: &'a mut M,
    points: &'a [WatchPoint],
    hit: Option<u32>,
}

impl<'a, M: WaveMemory> WatchedMemory<'a, M> {
    pub(crate) fn new(inner: &'a mut M, points: &'a [WatchPoint]) -> Self {
        WatchedMemory { inner, points, hit: None }
    }

    /// The watch the first hitting access hit.
    pub(crate) fn hit(&self) -> Option<u32> {
        self.hit
    }

    fn check(&mut self, address: u64, len: u64, access: WatchAccess) {
        if self.hit.is_none() && !self.points.is_empty() {
            self.hit = first_hit(self.points, address, len, access);
        }
    }

    fn check_lanes(&mut self, addresses: &[u64; LANES], mask: u64, access: WatchAccess) {
        if self.points.is_empty() {
            return;
        }
        for l in active_lanes(mask) {
            if self.hit.is_some() {
                break;
            }
            self.check(addresses[l], 4, access);
        }
    }
}

impl<M: WaveMemory> WaveMemory for WatchedMemory<'_, M> {
    fn read(&mut self, address: u64, dst: &mut [u8]) -> Result<(), MemFault> {
        self.inner.read(address, dst)?;
        self.check(address, dst.len() as u64, WatchAccess::Read);
        Ok(())
    }

    fn write(&mut self, address: u64, src: &[u8]) -> Result<(), MemFault> {
        self.inner.write(address, src)?;
        self.check(address, src.len() as u64, WatchAccess::Write);
        Ok(())
    }

    fn atomic32(
        &mut self,
        address: u64,
        op: AtomicOp,
        data: u32,
        cmp: u32,
    ) -> Result<u32, MemFault> {
        let old = self.inner.atomic32(address, op, data, cmp)?;
        self.check(address, 4, WatchAccess::Atomic);
        Ok(old)
    }

    fn atomic64(
        &mut self,
        address: u64,
        op: AtomicOp,
        data: u64,
        cmp: u64,
    ) -> Result<u64, MemFault> {
        let old = self.inner.atomic64(address, op, data, cmp)?;
        self.check(address, 8, WatchAccess::Atomic);
        Ok(old)
    }

    fn load_u32(&mut self, address: u64) -> Result<u32, MemFault> {
        let v = self.inner.load_u32(address)?;
        self.check(address, 4, WatchAccess::Read);
        Ok(v)
    }

    fn store_u32(&mut self, address: u64, value: u32) -> Result<(), MemFault> {
        self.inner.store_u32(address, value)?;
        self.check(address, 4, WatchAccess::Write);
        Ok(())
    }

    fn load_lanes(
        &mut self,
        addresses: &[u64; LANES],
        mask: u64,
        out: &mut [u32; LANES],
    ) -> Result<(), MemFault> {
        self.inner.load_lanes(addresses, mask, out)?;
        self.check_lanes(addresses, mask, WatchAccess::Read);
        Ok(())
    }

    fn store_lanes(
        &mut self,
        addresses: &[u64; LANES],
        mask: u64,
        values: &[u32; LANES],
    ) -> Result<(), MemFault> {
        self.inner.store_lanes(addresses, mask, values)?;
        self.check_lanes(addresses, mask, WatchAccess::Write);
        Ok(())
    }

    fn fetch(&mut self, address: u64, dst: &mut [u8]) -> Result<(), MemFault> {
        // An instruction fetch is no data access: no watch sees it, the mapping's execute
        // permission still decides.
        self.inner.fetch(address, dst)
    }

    fn flush(&mut self) {
        self.inner.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::memory::TestMemory;

    const LINE: u32 = 0xFFFF_FFC0;

    fn point(address: u64, mask: u32, mode: u32) -> WatchPoint {
        WatchPoint { id: 2, address, mask, mode }
    }

    #[test]
    fn the_mask_selects_the_compared_bits_at_64_byte_granularity() {
        let w = point(0x1_0000_1040, LINE, KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ALL);
        assert!(w.covers(0x1_0000_1040, 4, WatchAccess::Read));
        assert!(w.covers(0x1_0000_107C, 4, WatchAccess::Write), "same line");
        assert!(!w.covers(0x1_0000_1080, 4, WatchAccess::Read), "next line");
        assert!(w.covers(0x1_0000_103C, 8, WatchAccess::Read), "straddles into the line");
        assert!(!w.covers(0x2_0000_1040, 4, WatchAccess::Read), "high bits always compared");
        let page = point(0x5000, 0xFFFF_F000, KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ALL);
        assert!(page.covers(0x5FF0, 4, WatchAccess::Read));
        assert!(!page.covers(0x6000, 4, WatchAccess::Read));
        assert!(!page.covers(u64::MAX - 3, 4, WatchAccess::Read));
        // Mask bits 30 and 31 do not fit the register: address bits 30 up are compared anyway.
        let gib = point(0x4000_0000, 0, KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ALL);
        assert!(gib.covers(0x7FFF_FFF0, 4, WatchAccess::Read));
        assert!(!gib.covers(0x8000_0000, 4, WatchAccess::Read));
        assert!(!gib.covers(0x3FFF_FFF0, 4, WatchAccess::Read));
    }

    #[test]
    fn the_mode_selects_the_accesses() {
        use WatchAccess::*;
        let at = |mode| point(0x4000, LINE, mode);
        let hits = |mode| [Read, Write, Atomic].map(|a| at(mode).covers(0x4000, 4, a));
        assert_eq!(hits(KFD_DBG_TRAP_ADDRESS_WATCH_MODE_READ), [true, false, false]);
        assert_eq!(hits(KFD_DBG_TRAP_ADDRESS_WATCH_MODE_NONREAD), [false, true, true]);
        assert_eq!(hits(KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ATOMIC), [false, false, true]);
        assert_eq!(hits(KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ALL), [true, true, true]);
        assert_eq!(hits(9), [false, false, false]);
    }

    #[test]
    fn watched_memory_passes_accesses_through_and_keeps_the_first_hit() {
        let mut mem = TestMemory::new();
        mem.map(0x1000, 0x200);
        let points = [
            WatchPoint { id: 1, address: 0x1100, mask: LINE, mode: 1 },
            WatchPoint { id: 3, address: 0x1000, mask: LINE, mode: 0 },
        ];
        let mut w = WatchedMemory::new(&mut mem, &points);
        w.store_u32(0x1000, 7).unwrap();
        assert_eq!(w.hit(), None, "a store, the watch on that line is for reads");
        let mut lanes = [0u64; LANES];
        lanes[5] = 0x1104;
        w.store_lanes(&lanes, 1 << 5, &[9; LANES]).unwrap();
        assert_eq!(w.hit(), Some(1));
        assert_eq!(w.load_u32(0x1000).unwrap(), 7);
        assert_eq!(w.hit(), Some(1), "the first hit stays");
        assert!(w.load_u32(0x9000).is_err(), "faults pass through");
        assert_eq!(mem.word(0x1104), 9);
    }
}
