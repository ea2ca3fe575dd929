//! [`Executable`]: a code object loaded through a [`Driver`] — parsed from the caller's bytes,
//! checked against the agents, loaded ([`Driver::load_code_object`]), its kernels resolved by
//! name to kernel objects, and freed on unload.
//!
//! A dispatch with it: [`Executable::load`] the bytes for the agent, resolve the kernel
//! ([`Executable::kernel`]), lay its arguments out for the dispatch geometry
//! ([`LoadedKernel::write_kernargs`]) and copy them into kernarg memory, build the packet
//! ([`LoadedKernel::packet`]) and [`Driver::submit`] it; once its completion signal says so,
//! [`Executable::unload`].

use crate::code_object::CodeObject;
use crate::device::code_object_manager::{LoadError, LoadedKernel, resolve};

use super::agent::AgentId;
use super::api::{CodeImage, Driver, DriverError};

/// A code object loaded for some agents of a driver, borrowing the caller's bytes (the symbol
/// table and metadata are read from them when kernels are resolved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Executable<'a> {
    object: CodeObject<'a>,
    image: CodeImage,
}

impl<'a> Executable<'a> {
    /// Parses `bytes` and loads the code object for `agents`.
    ///
    /// # Errors
    /// [`DriverError::CodeObject`] for a file that is not a valid AMDGPU HSA code object
    /// (see [`crate::code_object::CodeObjectError`]), or whose target does not run on an
    /// agent; every error of [`Driver::load_code_object`].
    pub fn load(
        driver: &dyn Driver,
        bytes: &'a [u8],
        agents: &[AgentId],
    ) -> Result<Self, DriverError> {
        let object = CodeObject::parse(bytes).map_err(LoadError::Object)?;
        let image = driver.load_code_object(&object, agents)?;
        Ok(Self { object, image })
    }

    /// The parsed code object.
    #[must_use]
    pub const fn object(&self) -> &CodeObject<'a> {
        &self.object
    }

    /// Where it is loaded.
    #[must_use]
    pub const fn image(&self) -> CodeImage {
        self.image
    }

    /// The kernel called `name`, with its kernel object.
    ///
    /// # Errors
    /// [`DriverError::CodeObject`] with [`crate::code_object::CodeObjectError::MissingKernel`]
    /// (or the defect that stops the kernel from resolving).
    pub fn kernel(&self, name: &str) -> Result<LoadedKernel<'a>, DriverError> {
        let kernel = self.object.kernel(name).map_err(LoadError::Object)?;
        Ok(resolve(kernel, self.image.base)?)
    }

    /// Frees the image (every dispatch of its kernels must have completed).
    ///
    /// # Errors
    /// As [`Driver::free`].
    pub fn unload(self, driver: &dyn Driver) -> Result<(), DriverError> {
        driver.free(self.image.base)
    }
}
