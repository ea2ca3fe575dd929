//! A heap-backed [`SharedMemory`] for unit tests.
//!
//! Core forbids `unsafe`, so the 32-bit and 64-bit atomic views cannot alias one buffer: this
//! memory keeps two independent arrays of the same byte length. That is exactly enough under
//! the trait's one-width-per-location invariant, and it *enforces* the invariant: a location
//! written through one width and read through the other reads zero and the test fails. The
//! byte methods `read`/`write` operate on the 64-bit view.

extern crate std;

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::vec::Vec;

use crate::error::Errno;
use crate::platform::SharedMemory;

struct Inner {
    addr: u64,
    w32: Vec<AtomicU32>,
    w64: Vec<AtomicU64>,
    doorbells: AtomicU64,
    last_doorbell: AtomicU64,
}

/// Test memory: `len` bytes (rounded up to 8) at a fake, 4096-aligned address.
#[derive(Clone)]
pub(crate) struct TestMem(Arc<Inner>);

impl TestMem {
    pub(crate) fn new(len: usize) -> Self {
        Self::at(0x7f00_0000_0000, len)
    }

    pub(crate) fn at(addr: u64, len: usize) -> Self {
        let words = len.div_ceil(8);
        TestMem(Arc::new(Inner {
            addr,
            w32: (0..words * 2).map(|_| AtomicU32::new(0)).collect(),
            w64: (0..words).map(|_| AtomicU64::new(0)).collect(),
            doorbells: AtomicU64::new(0),
            last_doorbell: AtomicU64::new(u64::MAX),
        }))
    }

    /// How many times a doorbell of this mapping was rung.
    pub(crate) fn doorbell_count(&self) -> u64 {
        self.0.doorbells.load(Ordering::SeqCst)
    }

    /// The value of the last doorbell write (`u64::MAX` before any).
    pub(crate) fn last_doorbell(&self) -> u64 {
        self.0.last_doorbell.load(Ordering::SeqCst)
    }
}

impl SharedMemory for TestMem {
    fn addr(&self) -> u64 {
        self.0.addr
    }
    fn len(&self) -> usize {
        self.0.w64.len() * 8
    }
    fn u32s(&self) -> &[AtomicU32] {
        &self.0.w32
    }
    fn u64s(&self) -> &[AtomicU64] {
        &self.0.w64
    }
    fn write(&self, offset: usize, src: &[u8]) -> Result<(), Errno> {
        if offset.checked_add(src.len()).is_none_or(|end| end > self.len()) {
            return Err(Errno::EFAULT);
        }
        for (i, b) in src.iter().enumerate() {
            let at = offset + i;
            let word = &self.0.w64[at / 8];
            let shift = (at % 8) * 8;
            let mut cur = word.load(Ordering::Relaxed);
            loop {
                let new = (cur & !(0xFF << shift)) | (u64::from(*b) << shift);
                match word.compare_exchange(cur, new, Ordering::SeqCst, Ordering::Relaxed) {
                    Ok(_) => break,
                    Err(c) => cur = c,
                }
            }
        }
        Ok(())
    }
    fn read(&self, offset: usize, dst: &mut [u8]) -> Result<(), Errno> {
        if offset.checked_add(dst.len()).is_none_or(|end| end > self.len()) {
            return Err(Errno::EFAULT);
        }
        for (i, b) in dst.iter_mut().enumerate() {
            let at = offset + i;
            *b = (self.0.w64[at / 8].load(Ordering::SeqCst) >> ((at % 8) * 8)) as u8;
        }
        Ok(())
    }
    fn ring_doorbell64(&self, offset: usize, value: u64) {
        self.0.w64[offset / 8].store(value, Ordering::SeqCst);
        self.0.doorbells.fetch_add(1, Ordering::SeqCst);
        self.0.last_doorbell.store(value, Ordering::SeqCst);
    }
    fn is_shared(&self) -> bool {
        Arc::strong_count(&self.0) > 1
    }
}
