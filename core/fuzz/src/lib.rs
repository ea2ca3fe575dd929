//! Helpers shared by the fuzz targets: a byte reader over the fuzz input and a heap-backed
//! [`SharedMemory`] for the ring consumers.
#![forbid(unsafe_code)]

pub mod lying_kernel;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use hsakmt_core::error::Errno;
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::uapi::UapiType;

/// Reads the fuzz input front to back; past its end every read yields zeros.
pub struct Input<'a>(pub &'a [u8]);

impl<'a> Input<'a> {
    /// The next `n` bytes (fewer at the end).
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, tail) = self.0.split_at(n.min(self.0.len()));
        self.0 = tail;
        head
    }

    /// The next byte.
    pub fn u8(&mut self) -> u8 {
        self.bytes(1).first().copied().unwrap_or(0)
    }

    /// The next little-endian `u32`.
    pub fn u32(&mut self) -> u32 {
        u32::read_from(self.bytes(4))
    }

    /// The next little-endian `u64`.
    pub fn u64(&mut self) -> u64 {
        u64::read_from(self.bytes(8))
    }

    /// The next value of a uapi type, from its byte image (short input zero-extended).
    pub fn uapi<T: UapiType>(&mut self) -> T {
        T::read_from(self.bytes(T::SIZE))
    }

    /// Whether input is left.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

struct Inner {
    addr: u64,
    w32: Vec<AtomicU32>,
    w64: Vec<AtomicU64>,
}

/// Memory for ring tests. As core's test memory, the 32- and 64-bit views are independent
/// arrays of the same byte length (core's `SharedMemory` contract: one access width per
/// location); `read`/`write` use the 64-bit view.
#[derive(Clone)]
pub struct Mem(Arc<Inner>);

impl Mem {
    /// `len` bytes (rounded up to 8) at address `addr`.
    pub fn new(addr: u64, len: usize) -> Self {
        let words = len.div_ceil(8);
        Mem(Arc::new(Inner {
            addr,
            w32: (0..words * 2).map(|_| AtomicU32::new(0)).collect(),
            w64: (0..words).map(|_| AtomicU64::new(0)).collect(),
        }))
    }
}

impl SharedMemory for Mem {
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
        let mut image = vec![0u8; self.len()];
        self.read(0, &mut image)?;
        let end = offset.checked_add(src.len()).filter(|&e| e <= image.len());
        let dst = end.and_then(|e| image.get_mut(offset..e)).ok_or(Errno::EFAULT)?;
        dst.copy_from_slice(src);
        for (w, chunk) in self.0.w64.iter().zip(image.chunks_exact(8)) {
            w.store(u64::read_from(chunk), Ordering::SeqCst);
        }
        Ok(())
    }
    fn read(&self, offset: usize, dst: &mut [u8]) -> Result<(), Errno> {
        let image: Vec<u8> =
            self.0.w64.iter().flat_map(|w| w.load(Ordering::SeqCst).to_ne_bytes()).collect();
        let end = offset.checked_add(dst.len()).filter(|&e| e <= image.len());
        let src = end.and_then(|e| image.get(offset..e)).ok_or(Errno::EFAULT)?;
        dst.copy_from_slice(src);
        Ok(())
    }
    fn is_shared(&self) -> bool {
        Arc::strong_count(&self.0) > 1
    }
}
