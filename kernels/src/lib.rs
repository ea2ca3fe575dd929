//! # hsakmt-kernels
//!
//! The project's GPU kernels as AMDGPU code objects, embedded: the sources are OpenCL C in
//! `kernels/cl/`, compiled by `cargo xtask kernels` with Debian's `clang-19`/`lld-19` and
//! committed under `kernels/objects/`, so nothing here needs a compiler. `cargo xtask kernels
//! --check` (part of `cargo xtask ci`) proves the committed bytes are what the sources build
//! to. See `kernels/README.md` for each kernel's arguments and semantics.
//!
//! Each kernel set is built for [`PROCESSORS`] as code object v5; a few extra objects cover
//! code object v4 and v6 (a generic target, explicit xnack/sramecc settings).
//!
//! ```
//! use hsakmt_kernels::{KernelSet, find};
//! let object = find(KernelSet::Control, "gfx942").unwrap();
//! assert_eq!(object.version, 5);
//! assert_eq!(&object.bytes[..4], b"\x7fELF");
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod objects;

/// The processors every kernel set is built for (as code object v5).
pub const PROCESSORS: &[&str] = &["gfx900", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1201"];

/// The code object version of the default objects.
pub const DEFAULT_VERSION: u8 = 5;

/// A group of kernels built into one code object per target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelSet {
    /// `control.cl`: the compute step of `hsakmt run`.
    Control,
    /// `blit.cl`: byte-granular copy and fill (ROCr's blit kernels, for agents without DMA
    /// engines).
    Blit,
    /// `test.cl`: kernels that exercise what an ISA interpreter or a loader must cover.
    Test,
}

impl KernelSet {
    /// Every set.
    pub const ALL: [KernelSet; 3] = [KernelSet::Control, KernelSet::Blit, KernelSet::Test];

    /// The set's name (its object directory and source file stem).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Control => "control",
            Self::Blit => "blit",
            Self::Test => "test",
        }
    }

    /// The kernels of the set, in source order.
    #[must_use]
    pub const fn kernels(self) -> &'static [&'static str] {
        match self {
            Self::Control => &[control::STEP],
            Self::Blit => &[blit::COPY_BYTES, blit::FILL_BYTES],
            Self::Test => &[
                test::VECTOR_ADD,
                test::LDS_REDUCE,
                test::ATOMICS,
                test::TRANSPOSE_2D,
                test::LOCAL_SIZE_2D,
                test::FLOAT_MATH,
                test::INT_DIVISION,
                test::UINT_DIVISION64,
                test::PRIVATE_ARRAY,
                test::LOOKUP_TABLE,
            ],
        }
    }
}

/// Kernel names of [`KernelSet::Control`].
pub mod control {
    /// `control_step(in, out, words: ulong, seed: ulong)`: `out[i] = in[i] * 3 + (uint)seed`
    /// for `i < words`, one work-item per word.
    pub const STEP: &str = "control_step";
}

/// Kernel names of [`KernelSet::Blit`].
pub mod blit {
    /// `copy_bytes(src, dst, bytes: ulong)`: any alignment and length; 16-byte chunks with a
    /// grid-stride loop.
    pub const COPY_BYTES: &str = "copy_bytes";
    /// `fill_bytes(dst, pattern: uint, bytes: ulong)`: `dst[k]` = byte `k % 4` of `pattern`.
    pub const FILL_BYTES: &str = "fill_bytes";
}

/// Kernel names of [`KernelSet::Test`] (semantics in `kernels/cl/test.cl`).
pub mod test {
    /// Vector add of `uint`s.
    pub const VECTOR_ADD: &str = "vector_add";
    /// LDS tree reduction with barriers and an LDS atomic (work-groups of 256).
    pub const LDS_REDUCE: &str = "lds_reduce";
    /// Global atomics: add with return, add, max, min, or, xor, and, compare-exchange, 64-bit
    /// add.
    pub const ATOMICS: &str = "atomics";
    /// 2-D transpose.
    pub const TRANSPOSE_2D: &str = "transpose_2d";
    /// The enqueued work-group size in 2-D (partial groups too), read from the hidden
    /// arguments (v5) or the packet (v4).
    pub const LOCAL_SIZE_2D: &str = "local_size_2d";
    /// Float math: sqrt, fma, division, floor, min, max, conversions.
    pub const FLOAT_MATH: &str = "float_math";
    /// 32-bit signed and unsigned division and remainder.
    pub const INT_DIVISION: &str = "int_division";
    /// 64-bit unsigned division and remainder.
    pub const UINT_DIVISION64: &str = "uint_division64";
    /// A private (scratch) array indexed by data.
    pub const PRIVATE_ARRAY: &str = "private_array";
    /// A table of pointers resolved by `R_AMDGPU_RELATIVE64` relocations.
    pub const LOOKUP_TABLE: &str = "lookup_table";
}

/// One committed code object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeObjectFile {
    /// The kernel set.
    pub set: KernelSet,
    /// The processor (`gfx942`, `gfx9-generic`).
    pub processor: &'static str,
    /// The target ID it was built for (`gfx942:sramecc+:xnack-`; just the processor when no
    /// feature is named).
    pub target_id: &'static str,
    /// The code object version (4, 5, 6).
    pub version: u8,
    /// Its path under `kernels/objects/`.
    pub path: &'static str,
    /// The ELF file.
    pub bytes: &'static [u8],
}

/// Every committed code object.
#[must_use]
pub const fn all() -> &'static [CodeObjectFile] {
    objects::ALL
}

/// The default (v5, no feature named) object of `set` for `processor`.
#[must_use]
pub fn find(set: KernelSet, processor: &str) -> Option<&'static CodeObjectFile> {
    all().iter().find(|o| o.set == set && o.target_id == processor && o.version == DEFAULT_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_set_is_built_for_every_processor() {
        for set in KernelSet::ALL {
            for p in PROCESSORS {
                let o = find(set, p).unwrap();
                assert_eq!(o.processor, *p);
                assert!(o.path.starts_with(set.name()));
                assert_eq!(o.bytes.get(..4), Some(&b"\x7fELF"[..]));
            }
        }
        assert!(all().iter().any(|o| o.version == 4));
        assert!(all().iter().any(|o| o.version == 6 && o.processor == "gfx9-generic"));
    }
}
