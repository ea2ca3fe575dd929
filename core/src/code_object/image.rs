//! The loaded image of a code object: what a loader writes where for a load address.
//!
//! [`CodeObject::load_with`] describes the image as writes, in order: zeros and each
//! `PT_LOAD` segment's file bytes covering `0..image_size` exactly once (segments in address
//! order, zeros between and after them), then one little-endian `u64` per relocation. A loader
//! writing through a CPU view of GPU memory (which may hold stale bytes: recycled memory is not
//! cleared) uses it directly; [`CodeObject::load_into`] builds the image in a byte slice.

use super::CodeObject;
use super::elf::malformed;
use super::parse_error::{CodeObjectError, ElfPart, ElfProblem};

/// One write of a loaded image, at an offset from the image start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImagePiece<'a> {
    /// Bytes copied from the file.
    Bytes(&'a [u8]),
    /// This many zero bytes.
    Zeros(u64),
    /// A relocated value: these 8 bytes (a little-endian `u64`).
    Word([u8; 8]),
}

impl<'a> CodeObject<'a> {
    /// Emits the image for load address `base` as writes `put(offset, piece)` (see the module
    /// docs for the order); stops at the first error `put` returns.
    ///
    /// # Errors
    /// [`CodeObjectError::MisalignedBase`] when `base` is not a multiple of
    /// [`image_align`](Self::image_align); [`Malformed`](CodeObjectError::Malformed)
    /// (`Relocations`/`Relocation(n)`, `Overflow`) when `base` puts the image or a relocated
    /// value past 2^64 — both before anything is written; `put`'s own errors.
    pub fn load_with<E: From<CodeObjectError>>(
        &self,
        base: u64,
        mut put: impl FnMut(u64, ImagePiece<'a>) -> Result<(), E>,
    ) -> Result<(), E> {
        if base & self.image_align().wrapping_sub(1) != 0 {
            return Err(CodeObjectError::MisalignedBase { base, align: self.image_align() }.into());
        }
        if base.checked_add(self.image_size()).is_none() {
            return Err(malformed(ElfPart::Relocations, ElfProblem::Overflow).into());
        }
        for r in self.relocations() {
            r.value(base).ok_or(malformed(ElfPart::Relocation(r.index), ElfProblem::Overflow))?;
        }
        let mut at = 0u64;
        for s in self.segments() {
            // Segments are in address order and do not overlap (checked by `parse`).
            if let Some(gap) = s.vaddr.checked_sub(at).filter(|g| *g > 0) {
                put(at, ImagePiece::Zeros(gap))?;
            }
            if !s.file_bytes.is_empty() {
                put(s.vaddr, ImagePiece::Bytes(s.file_bytes))?;
            }
            at = s.vaddr.saturating_add(s.file_bytes.len() as u64);
        }
        if let Some(tail) = self.image_size().checked_sub(at).filter(|t| *t > 0) {
            put(at, ImagePiece::Zeros(tail))?;
        }
        for r in self.relocations() {
            let value = r
                .value(base)
                .ok_or(malformed(ElfPart::Relocation(r.index), ElfProblem::Overflow))?;
            put(r.offset, ImagePiece::Word(value.to_le_bytes()))?;
        }
        Ok(())
    }

    /// Builds the loaded image for load address `base` in `image[..image_size]`: zeros, the
    /// segments' file bytes, the relocations applied. Bytes past the image are untouched.
    ///
    /// # Errors
    /// [`CodeObjectError::MisalignedBase`], [`ImageTooSmall`](CodeObjectError::ImageTooSmall),
    /// or [`Malformed`](CodeObjectError::Malformed) (`Relocation(n)`, `Overflow`) when
    /// `base` puts the image or a relocated value past 2^64. On error `image` may be
    /// partly written.
    pub fn load_into(&self, image: &mut [u8], base: u64) -> Result<(), CodeObjectError> {
        let too_small =
            CodeObjectError::ImageTooSmall { needed: self.image_size(), got: image.len() };
        let size = usize::try_from(self.image_size()).map_err(|_| too_small)?;
        let image = image.get_mut(..size).ok_or(too_small)?;
        self.load_with(base, |offset, piece| {
            let range = |len: u64| {
                let start = usize::try_from(offset).ok()?;
                Some(start..start.checked_add(usize::try_from(len).ok()?)?)
            };
            let out_of_bounds = malformed(ElfPart::Relocations, ElfProblem::OutOfBounds);
            let len = match piece {
                ImagePiece::Bytes(b) => b.len() as u64,
                ImagePiece::Zeros(n) => n,
                ImagePiece::Word(_) => 8,
            };
            let dst = range(len).and_then(|r| image.get_mut(r)).ok_or(out_of_bounds)?;
            match piece {
                ImagePiece::Bytes(b) => dst.copy_from_slice(b),
                ImagePiece::Zeros(_) => dst.fill(0),
                ImagePiece::Word(w) => dst.copy_from_slice(&w),
            }
            Ok(())
        })
    }
}
