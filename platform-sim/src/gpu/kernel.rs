//! Host kernels: Rust functions registered on the simulator (or the host-CPU driver) that
//! stand in for GPU code objects.
//!
//! [`KernelRegistry::register`] (and [`SimPlatform::register_kernel`](crate::SimPlatform::register_kernel),
//! [`HostDriver::register_kernel`](crate::HostDriver::register_kernel)) returns a
//! *kernel-object address* to put in an AQL kernel-dispatch packet's `kernel_object` field.
//! The command processor runs the function once per work-group of the dispatch with a
//! [`KernelCtx`]: the grid and work-group geometry, the work-group's id, the kernarg address,
//! and GPU memory access by virtual address. Every access goes through the GPU's page tables,
//! so touching an address no buffer backs is a [`KernelFault`] — the queue goes into error
//! with a memory violation, as on hardware.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use hsakmt_core::platform::SharedMemory;

use super::vm::{GpuVm, MemRange};

/// Base of the kernel-object addresses the registry hands out: kernel address space, so no
/// buffer of the process can ever live there.
pub const KERNEL_OBJECT_BASE: u64 = 0xFFFF_A000_0000_0000;
/// Spacing of kernel-object addresses (a kernel descriptor's size and alignment).
pub(crate) const KERNEL_OBJECT_STRIDE: u64 = 64;

/// Why a host kernel stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelFault {
    /// It touched an address no buffer backs (a GPU page fault).
    Memory {
        /// The faulting address.
        address: u64,
        /// Whether the access was a write.
        write: bool,
    },
    /// It executed a trap (`s_trap`) with this id.
    Trap(u32),
    /// It hit an illegal instruction (a kernel's way to say "abort").
    IllegalInstruction,
}

impl fmt::Display for KernelFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Memory { address, write } => write!(
                f,
                "GPU memory violation: {} at {address:#x}",
                if *write { "write" } else { "read" }
            ),
            Self::Trap(id) => write!(f, "wave trap {id}"),
            Self::IllegalInstruction => f.write_str("illegal instruction"),
        }
    }
}

impl std::error::Error for KernelFault {}

/// What a host kernel sees while it runs one work-group.
pub struct KernelCtx<'a> {
    /// The work-group's id (`[x, y, z]`).
    pub workgroup_id: [u32; 3],
    /// Work-items per work-group.
    pub workgroup_size: [u32; 3],
    /// Work-items in the grid.
    pub grid_size: [u32; 3],
    /// The dispatch's kernarg segment address.
    pub kernarg_address: u64,
    /// The dispatch packet's index in its queue.
    pub dispatch_index: u64,
    /// The kernel's gpu_id.
    pub gpu_id: u32,
    /// The kernel's queue id.
    pub queue_id: u32,
    pub(crate) vm: &'a dyn GpuVm,
}

impl fmt::Debug for KernelCtx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelCtx")
            .field("workgroup_id", &self.workgroup_id)
            .field("workgroup_size", &self.workgroup_size)
            .field("grid_size", &self.grid_size)
            .field("kernarg_address", &format_args!("{:#x}", self.kernarg_address))
            .finish_non_exhaustive()
    }
}

impl KernelCtx<'_> {
    /// The global ids of this work-group's work-items that lie inside the grid, x fastest.
    pub fn work_items(&self) -> impl Iterator<Item = [u32; 3]> + '_ {
        let base = [0, 1, 2].map(|d| self.workgroup_id[d] * self.workgroup_size[d]);
        let end = [0, 1, 2].map(|d| (base[d] + self.workgroup_size[d]).min(self.grid_size[d]));
        (base[2]..end[2]).flat_map(move |z| {
            (base[1]..end[1]).flat_map(move |y| (base[0]..end[0]).map(move |x| [x, y, z]))
        })
    }

    /// `len` bytes of GPU memory at `address`, for many accesses with one lookup.
    ///
    /// # Errors
    /// [`KernelFault::Memory`] when the range is not inside one buffer.
    pub fn memory(&self, address: u64, len: u64, write: bool) -> Result<MemRange, KernelFault> {
        self.vm.resolve(self.gpu_id, address, len).ok_or(KernelFault::Memory { address, write })
    }

    fn word32(&self, address: u64, write: bool) -> Result<MemRange, KernelFault> {
        let r = self.memory(address, 4, write)?;
        if r.u32s().is_empty() {
            return Err(KernelFault::Memory { address, write });
        }
        Ok(r)
    }

    fn word64(&self, address: u64, write: bool) -> Result<MemRange, KernelFault> {
        let r = self.memory(address, 8, write)?;
        if r.u64s().is_empty() {
            return Err(KernelFault::Memory { address, write });
        }
        Ok(r)
    }

    /// Loads the aligned 32-bit word at `address`.
    ///
    /// # Errors
    /// [`KernelFault::Memory`] for an unbacked or misaligned address.
    pub fn load_u32(&self, address: u64) -> Result<u32, KernelFault> {
        let r = self.word32(address, false)?;
        Ok(r.u32s().first().map_or(0, |w| w.load(Ordering::Relaxed)))
    }

    /// Stores the aligned 32-bit word at `address`.
    ///
    /// # Errors
    /// As [`KernelCtx::load_u32`].
    pub fn store_u32(&self, address: u64, value: u32) -> Result<(), KernelFault> {
        let r = self.word32(address, true)?;
        if let Some(w) = r.u32s().first() {
            w.store(value, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Loads the aligned 64-bit word at `address`.
    ///
    /// # Errors
    /// As [`KernelCtx::load_u32`].
    pub fn load_u64(&self, address: u64) -> Result<u64, KernelFault> {
        let r = self.word64(address, false)?;
        Ok(r.u64s().first().map_or(0, |w| w.load(Ordering::Relaxed)))
    }

    /// Stores the aligned 64-bit word at `address`.
    ///
    /// # Errors
    /// As [`KernelCtx::load_u32`].
    pub fn store_u64(&self, address: u64, value: u64) -> Result<(), KernelFault> {
        let r = self.word64(address, true)?;
        if let Some(w) = r.u64s().first() {
            w.store(value, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Atomically adds `value` to the aligned 64-bit word at `address`; returns the old value.
    ///
    /// # Errors
    /// As [`KernelCtx::load_u32`].
    pub fn atomic_add_u64(&self, address: u64, value: u64) -> Result<u64, KernelFault> {
        let r = self.word64(address, true)?;
        Ok(r.u64s().first().map_or(0, |w| w.fetch_add(value, Ordering::AcqRel)))
    }

    /// The `index`th 64-bit word of the kernarg segment.
    ///
    /// # Errors
    /// As [`KernelCtx::load_u32`].
    pub fn kernarg_u64(&self, index: u64) -> Result<u64, KernelFault> {
        let at = self
            .kernarg_address
            .checked_add(index.saturating_mul(8))
            .ok_or(KernelFault::Memory { address: u64::MAX, write: false })?;
        self.load_u64(at)
    }

    /// Copies `dst.len()` bytes from `address`.
    ///
    /// # Errors
    /// [`KernelFault::Memory`] when the range is not inside one buffer.
    pub fn read(&self, address: u64, dst: &mut [u8]) -> Result<(), KernelFault> {
        let r = self.memory(address, dst.len() as u64, false)?;
        r.read(0, dst).map_err(|_| KernelFault::Memory { address, write: false })
    }

    /// Copies `src` to `address`.
    ///
    /// # Errors
    /// As [`KernelCtx::read`].
    pub fn write(&self, address: u64, src: &[u8]) -> Result<(), KernelFault> {
        let r = self.memory(address, src.len() as u64, true)?;
        r.write(0, src).map_err(|_| KernelFault::Memory { address, write: true })
    }
}

/// A registered host kernel.
pub(crate) type HostKernel = Arc<dyn Fn(&KernelCtx<'_>) -> Result<(), KernelFault> + Send + Sync>;

/// The registry: kernel-object address → (name, function).
#[derive(Default)]
struct Kernels {
    by_address: HashMap<u64, (String, HostKernel)>,
}

/// Host kernels by kernel-object address, shared by everything that executes them: the
/// simulator's command processors ([`SimPlatform::register_kernel`](crate::SimPlatform::register_kernel))
/// and the host-CPU driver ([`HostDriver`](crate::HostDriver)).
///
/// Clones are handles to one registry, so one registration serves every platform and driver
/// built over the same registry ([`SimBuilder::kernels`](crate::SimBuilder::kernels),
/// [`HostDriver::with_kernels`](crate::HostDriver::with_kernels)), with the same
/// kernel-object address everywhere.
#[derive(Clone, Default)]
pub struct KernelRegistry(Arc<RwLock<Kernels>>);

impl fmt::Debug for KernelRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = self.read();
        f.debug_map().entries(k.by_address.iter().map(|(a, (n, _))| (a, n))).finish()
    }
}

impl KernelRegistry {
    /// An empty registry.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> RwLockReadGuard<'_, Kernels> {
        self.0.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `kernel` under `name`; returns its kernel-object address (what an AQL
    /// kernel-dispatch packet carries in `kernel_object`). The packet processor calls `kernel`
    /// once per work-group of each dispatch.
    pub fn register(
        &self,
        name: &str,
        kernel: impl Fn(&KernelCtx<'_>) -> Result<(), KernelFault> + Send + Sync + 'static,
    ) -> u64 {
        let mut k = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let address = KERNEL_OBJECT_BASE + KERNEL_OBJECT_STRIDE * k.by_address.len() as u64;
        k.by_address.insert(address, (name.to_string(), Arc::new(kernel)));
        address
    }

    /// The kernel at `address`.
    pub(crate) fn get(&self, address: u64) -> Option<HostKernel> {
        self.read().by_address.get(&address).map(|(_, k)| k.clone())
    }

    /// The name the kernel at `address` was registered under.
    #[must_use]
    pub fn name(&self, address: u64) -> Option<String> {
        self.read().by_address.get(&address).map(|(n, _)| n.clone())
    }

    /// How many kernels are registered.
    #[must_use]
    pub fn len(&self) -> usize {
        self.read().by_address.len()
    }

    /// Whether no kernel is registered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
