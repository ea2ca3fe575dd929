//! Code objects on a [`Kfd`]: loading a parsed [`CodeObject`] into executable GPU memory for
//! the GPU nodes that run it, resolving its kernels to kernel objects, and unloading it — the
//! part of ROCr's loader that touches memory, over the pure [`code_object`](crate::code_object)
//! module.
//!
//! [`Kfd::load_code_object`]:
//! 1. checks the object's target against every node ([`Kfd::agent_target`]: the node's
//!    effective gfx version — `HSA_OVERRIDE_GFX_VERSION` applied — the process's XNACK mode
//!    and the node's SRAM ECC setting);
//! 2. allocates [`CodeObject::image_size`] bytes of non-paged system memory on the CPU node
//!    nearest the first GPU (a GTT buffer; the GPU node itself when the topology names no CPU
//!    node) with `EXECUTE_ACCESS` and `HOST_ACCESS`, aligned to the image's alignment;
//! 3. writes the image through the CPU view ([`CodeObject::load_with`]: zeros, segments,
//!    relocations applied for the load address);
//! 4. maps it on exactly the given nodes.
//!
//! ROCr puts code in the agent's coarse-grained VRAM, built in a host staging buffer and copied
//! by DMA (or by the CPU over a large BAR). System memory the CPU writes directly needs neither
//! a staging buffer nor a copy engine, works on every GPU (small BAR or none), and instruction
//! fetches are served from the GPU's instruction cache after the first; the kernel object
//! address is all a dispatch needs either way.
//!
//! [`LoadedCodeObject::kernel`] resolves a kernel by name: its kernel object is the load
//! address plus its `.kd` symbol's value; [`LoadedKernel::packet`] builds the AQL
//! kernel-dispatch packet (segment sizes from the metadata) and
//! [`LoadedKernel::write_kernargs`] lays out its arguments.
//! [`Kfd::unload_code_object`] frees the memory (after every dispatch using it completed).

#![deny(clippy::arithmetic_side_effects)]

mod load_error;

use crate::code_object::kernarg::{self, ArgValue, KernargError, KernargLayout};
use crate::code_object::{
    AgentFeature, AgentTarget, CodeObject, CodeObjectError, ElfPart, ElfProblem, ImagePiece, Kernel,
};
use crate::error::Errno;
use crate::memory::{MemFlags, PAGE_SIZE};
use crate::platform::{Platform, SharedMemory};
use crate::queue::aql::KernelDispatch;
use crate::topology::Capability;

use super::{Allocation, Error, Kfd, MapNodes, MemoryStorage};

pub use load_error::LoadError;

/// Bytes of zeros written at a time while an image is loaded.
const ZERO_CHUNK: usize = 256;

/// A code object loaded into GPU memory.
///
/// Dropping it leaves the memory allocated (the memory manager still owns it; free it with
/// [`Kfd::free_memory`] at [`base`](Self::base)); [`Kfd::unload_code_object`] frees it.
#[derive(Debug)]
pub struct LoadedCodeObject<'a, M> {
    object: CodeObject<'a>,
    memory: Allocation<M>,
}

/// A kernel of a loaded code object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LoadedKernel<'a> {
    /// The kernel (descriptor and metadata).
    pub kernel: Kernel<'a>,
    /// The AQL packet's `kernel_object`: the address of its kernel descriptor.
    pub kernel_object: u64,
}

impl<'a, M> LoadedCodeObject<'a, M> {
    /// A loaded object from its parts: `object` loaded at `memory.addr` (as
    /// [`Kfd::load_code_object`] did).
    pub const fn from_parts(object: CodeObject<'a>, memory: Allocation<M>) -> Self {
        Self { object, memory }
    }

    /// The parsed code object.
    #[must_use]
    pub const fn object(&self) -> &CodeObject<'a> {
        &self.object
    }

    /// The load address.
    #[must_use]
    pub const fn base(&self) -> u64 {
        self.memory.addr
    }

    /// Bytes of memory holding the image (page rounded).
    #[must_use]
    pub const fn size(&self) -> u64 {
        self.memory.size
    }

    /// The memory holding the image.
    #[must_use]
    pub fn into_allocation(self) -> Allocation<M> {
        self.memory
    }

    /// The kernel called `name`.
    ///
    /// # Errors
    /// [`LoadError::Object`] with [`CodeObjectError::MissingKernel`] (or the object's defect
    /// that stops the kernel from resolving).
    pub fn kernel(&self, name: &str) -> Result<LoadedKernel<'a>, LoadError> {
        let kernel = self.object.kernel(name)?;
        resolve(kernel, self.base())
    }
}

/// The kernel object of `kernel` in an image loaded at `base`.
///
/// # Errors
/// [`LoadError::Object`] when the address overflows (an image loaded at `base` cannot hold it).
pub fn resolve(kernel: Kernel<'_>, base: u64) -> Result<LoadedKernel<'_>, LoadError> {
    let overflow =
        CodeObjectError::Malformed { part: ElfPart::Descriptor, problem: ElfProblem::Overflow };
    let kernel_object = kernel.descriptor_address(base).ok_or(overflow)?;
    Ok(LoadedKernel { kernel, kernel_object })
}

impl<'a> LoadedKernel<'a> {
    /// The kernel's name.
    #[must_use]
    pub const fn name(&self) -> &'a str {
        self.kernel.metadata.name
    }

    /// Bytes of its kernel-argument segment (`.kernarg_segment_size`).
    #[must_use]
    pub const fn kernarg_size(&self) -> u32 {
        self.kernel.metadata.kernarg_segment_size
    }

    /// The alignment its kernel-argument segment needs (at least 16).
    #[must_use]
    pub fn kernarg_align(&self) -> u32 {
        self.kernel.metadata.kernarg_segment_align.max(16)
    }

    /// Private (scratch) bytes per work-item it uses.
    #[must_use]
    pub const fn private_segment_size(&self) -> u32 {
        self.kernel.metadata.private_segment_fixed_size
    }

    /// Lays out the explicit arguments `values` and the hidden ones for `dispatch` into
    /// `buf` (see [`kernarg::write_kernargs`]).
    ///
    /// # Errors
    /// [`LoadError::KernargTooSmall`] when `buf` is shorter than the kernel's segment;
    /// [`LoadError::Kernarg`] for arguments that do not fit the kernel.
    pub fn write_kernargs(
        &self,
        buf: &mut [u8],
        values: &[ArgValue<'_>],
        dispatch: &kernarg::Dispatch,
    ) -> Result<KernargLayout, LoadError> {
        let needed = self.kernarg_size();
        if usize::try_from(needed).map_or(true, |n| buf.len() < n) {
            return Err(LoadError::KernargTooSmall { needed, got: buf.len() as u64 });
        }
        Ok(kernarg::write_kernargs(&self.kernel.metadata, buf, values, dispatch)?)
    }

    /// The AQL kernel-dispatch packet for `dispatch` with arguments at `kernarg_address`:
    /// group segment = the fixed size plus `dispatch.dynamic_lds_size`, private segment = the
    /// fixed size.
    ///
    /// # Errors
    /// [`LoadError::Kernarg`] ([`KernargError::Geometry`]) when the group segment (fixed plus
    /// dynamic LDS) overflows 32 bits.
    pub fn packet(
        &self,
        dispatch: &kernarg::Dispatch,
        kernarg_address: u64,
        completion_signal: u64,
    ) -> Result<KernelDispatch, LoadError> {
        let m = &self.kernel.metadata;
        let group = m
            .group_segment_fixed_size
            .checked_add(dispatch.dynamic_lds_size)
            .ok_or(LoadError::Kernarg(KernargError::Geometry))?;
        Ok(KernelDispatch {
            dimensions: dispatch.dimensions,
            workgroup_size: dispatch.workgroup_size,
            grid_size: dispatch.grid_size,
            private_segment_size: m.private_segment_fixed_size,
            group_segment_size: group,
            kernarg_address,
            completion_signal,
            ..KernelDispatch::linear(self.kernel_object, 1, 1)
        })
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// What a code object must match to run on GPU node `node`: the effective gfx version
    /// (`HSA_OVERRIDE_GFX_VERSION` applied), XNACK as the process has it (unknown when the
    /// kernel cannot say), SRAM ECC as the node reports it (unknown when the node has no
    /// capability word).
    ///
    /// # Errors
    /// [`LoadError::NotAGpu`] for an unknown or CPU node, [`LoadError::UnknownTarget`] for a
    /// GPU whose gfx version is unknown, [`LoadError::Device`] for a closed device.
    pub fn agent_target(&self, node: u32) -> Result<AgentTarget, LoadError> {
        let (gfx, sramecc) = self.with_topology(|t| {
            let n = t.node_by_user_id(node).ok_or(LoadError::NotAGpu { node })?;
            let n = n.node();
            if !n.has_gpu() {
                return Err(LoadError::NotAGpu { node });
            }
            let gfx = n.effective_gfx().ok_or(LoadError::UnknownTarget { node })?;
            let sramecc = match n.capability() {
                Some(c) if c.contains(Capability::SRAM_EDC_SUPPORTED) => AgentFeature::On,
                Some(_) => AgentFeature::Off,
                None => AgentFeature::Unknown,
            };
            Ok((gfx, sramecc))
        })??;
        let xnack = match self.xnack_mode() {
            Ok(true) => AgentFeature::On,
            Ok(false) => AgentFeature::Off,
            Err(_) => AgentFeature::Unknown,
        };
        Ok(AgentTarget { gfx, xnack, sramecc })
    }

    /// Loads `object` into executable GPU memory for the GPU nodes `nodes` (see the module
    /// docs).
    ///
    /// # Errors
    /// [`LoadError::NoNodes`]; [`LoadError::NotAGpu`], [`LoadError::UnknownTarget`],
    /// [`LoadError::WrongTarget`] (checked for every node before anything is allocated);
    /// [`LoadError::Device`] when the memory cannot be allocated, written or mapped. Nothing
    /// stays allocated on error.
    pub fn load_code_object<'a>(
        &self,
        object: &CodeObject<'a>,
        nodes: &[u32],
    ) -> Result<LoadedCodeObject<'a, P::Mapping>, LoadError> {
        let first = *nodes.first().ok_or(LoadError::NoNodes)?;
        for &node in nodes {
            let agent = self.agent_target(node)?;
            if !object.target().runs_on(&agent) {
                return Err(LoadError::WrongTarget { node, object: object.target(), agent });
            }
        }
        let host = self.with_topology(|t| {
            let v = t.node_by_user_id(first)?;
            t.nearest_cpu(v.index()).and_then(|(i, _)| t.node(i)?.node().user_id())
        })?;
        let exec = MemFlags::NON_PAGED | MemFlags::HOST_ACCESS | MemFlags::EXECUTE_ACCESS;
        let (owner, flags) = match host {
            Some(cpu) => (cpu, exec),
            None => (first, exec | MemFlags::GTT_ACCESS),
        };
        let size = object.image_size().max(1);
        let memory = if object.image_align() > PAGE_SIZE {
            self.alloc_memory_align(owner, size, object.image_align(), flags)?
        } else {
            self.alloc_memory(owner, size, flags)?
        };
        let written = match memory.mapping.as_ref() {
            Some(m) => write_image(object, m, memory.addr),
            None => Err(LoadError::Device(Error::Platform(Errno::EFAULT))),
        };
        let mapped =
            written.and_then(|()| Ok(self.map_memory_to_gpu(memory.addr, MapNodes::Only(nodes))?));
        match mapped {
            Ok(_) => Ok(LoadedCodeObject { object: *object, memory }),
            Err(e) => {
                let _ = self.free(memory);
                Err(e)
            }
        }
    }

    /// Unloads a code object: frees its memory. Every dispatch of its kernels must have
    /// completed.
    ///
    /// # Errors
    /// As [`Kfd::free`]; the memory then stays allocated (free it by address with
    /// [`Kfd::free_memory`]).
    pub fn unload_code_object(
        &self,
        loaded: LoadedCodeObject<'_, P::Mapping>,
    ) -> Result<(), Error> {
        self.free(loaded.memory)
    }
}

/// Writes `object`'s image for load address `base` through the CPU view `m` of its memory.
fn write_image<M: SharedMemory>(
    object: &CodeObject<'_>,
    m: &M,
    base: u64,
) -> Result<(), LoadError> {
    let zeros = [0u8; ZERO_CHUNK];
    let at = |offset: u64| {
        usize::try_from(offset).map_err(|_| LoadError::Device(Error::Platform(Errno::EFAULT)))
    };
    object.load_with(base, |offset, piece| {
        let start = at(offset)?;
        let write =
            |o: usize, b: &[u8]| m.write(o, b).map_err(|e| LoadError::Device(Error::Platform(e)));
        match piece {
            ImagePiece::Bytes(b) => write(start, b),
            ImagePiece::Word(w) => write(start, &w),
            ImagePiece::Zeros(n) => {
                let (mut o, mut left) = (start, at(n)?);
                while left > 0 {
                    let k = left.min(ZERO_CHUNK);
                    write(o, zeros.get(..k).unwrap_or_default())?;
                    o = o.saturating_add(k);
                    left = left.saturating_sub(k);
                }
                Ok(())
            }
        }
    })
}
