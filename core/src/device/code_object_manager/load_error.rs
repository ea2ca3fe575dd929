//! [`LoadError`]: why a code object cannot be loaded, or one of its kernels not dispatched.

use core::fmt;

use crate::code_object::kernarg::KernargError;
use crate::code_object::{AgentTarget, CodeObjectError, Target};
use crate::device::Error;
use crate::error::ErrorKind;

/// Why a code object cannot be loaded, or one of its kernels not dispatched.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum LoadError {
    /// The code object itself: not an AMDGPU HSA object, an unknown relocation, a missing
    /// kernel, a malformed file (see [`CodeObjectError`]).
    Object(CodeObjectError),
    /// No node to load it for.
    NoNodes,
    /// The node is unknown or not a GPU.
    NotAGpu {
        /// The node.
        node: u32,
    },
    /// The GPU's gfx version is unknown, so no code object can be checked against it.
    UnknownTarget {
        /// The node.
        node: u32,
    },
    /// The code object is for another target than the node (its effective gfx version, XNACK
    /// or SRAM ECC setting).
    WrongTarget {
        /// The node.
        node: u32,
        /// The code object's target.
        object: Target,
        /// The node's.
        agent: AgentTarget,
    },
    /// The kernel-argument buffer is smaller than the kernel's segment.
    KernargTooSmall {
        /// `.kernarg_segment_size`.
        needed: u32,
        /// The buffer's size.
        got: u64,
    },
    /// The kernel arguments or the dispatch do not fit the kernel.
    Kernarg(KernargError),
    /// The device facade failed (memory, mapping, a closed device).
    Device(Error),
}

impl From<CodeObjectError> for LoadError {
    fn from(e: CodeObjectError) -> Self {
        Self::Object(e)
    }
}

impl From<KernargError> for LoadError {
    fn from(e: KernargError) -> Self {
        Self::Kernarg(e)
    }
}

impl From<Error> for LoadError {
    fn from(e: Error) -> Self {
        Self::Device(e)
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Object(e) => e.fmt(f),
            Self::NoNodes => f.write_str("no GPU to load the code object for"),
            Self::NotAGpu { node } => write!(f, "node {node} is not a GPU"),
            Self::UnknownTarget { node } => {
                write!(f, "the gfx version of GPU node {node} is unknown")
            }
            Self::WrongTarget { node, object, agent } => write!(
                f,
                "the code object is for {object}, GPU node {node} is {agent} (effective target, \
                 HSA_OVERRIDE_GFX_VERSION applied)"
            ),
            Self::KernargTooSmall { needed, got } => {
                write!(f, "the kernel arguments need {needed} bytes, the buffer has {got}")
            }
            Self::Kernarg(e) => e.fmt(f),
            Self::Device(e) => e.fmt(f),
        }
    }
}

impl crate::error::Error for LoadError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::Object(e) => e.kind(),
            Self::NoNodes | Self::KernargTooSmall { .. } | Self::WrongTarget { .. } => {
                ErrorKind::InvalidArgument
            }
            Self::NotAGpu { .. } => ErrorKind::InvalidNode,
            Self::UnknownTarget { .. } => ErrorKind::NotSupported,
            Self::Kernarg(e) => e.kind(),
            Self::Device(e) => e.kind(),
        }
    }
}

impl core::error::Error for LoadError {}
