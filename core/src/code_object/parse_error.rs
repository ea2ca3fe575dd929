//! The errors of code-object parsing: one `Copy` enum, [`CodeObjectError`], with the parts
//! of a malformed file ([`ElfPart`], [`ElfProblem`]) and of malformed metadata
//! ([`MetadataError`]) spelled out.

use core::fmt;

use super::msgpack::MsgPackError;
use super::target::{AgentTarget, EFlagsProblem, Target};
use super::{KERNEL_NAME_CAPACITY, MAX_LOAD_SEGMENTS};
use crate::error::{Error, ErrorKind};

/// Why a code object cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CodeObjectError {
    /// Not an ELF64 little-endian file (magic, class, data encoding or version).
    NotElf,
    /// An ELF file, but not for AMD GPUs (`e_machine` is not `EM_AMDGPU`).
    NotAmdgpu {
        /// `e_machine`.
        machine: u16,
    },
    /// An AMDGPU ELF file, but not for the HSA runtime (`EI_OSABI` is not
    /// `ELFOSABI_AMDGPU_HSA`, 64; PAL and Mesa objects are 65 and 66).
    NotHsa {
        /// `EI_OSABI`.
        os_abi: u8,
    },
    /// An HSA code object of a version this crate does not load (`EI_ABIVERSION` 2, 3, 4 are
    /// code objects v4, v5, v6).
    UnsupportedVersion {
        /// `EI_ABIVERSION`.
        abi_version: u8,
    },
    /// Not a shared object (`ET_DYN`): relocatable objects (`ET_REL`) need linking first.
    NotSharedObject {
        /// `e_type`.
        e_type: u16,
    },
    /// `e_flags` do not describe a target.
    BadTarget(EFlagsProblem),
    /// The code object is for another processor or feature setting than the agent.
    WrongTarget {
        /// The code object's target.
        object: Target,
        /// The agent (its effective gfx version).
        agent: AgentTarget,
    },
    /// A dynamic relocation of a type other than `R_AMDGPU_RELATIVE64` (or `R_AMDGPU_NONE`).
    UnknownRelocation {
        /// The relocation type (`ELF64_R_TYPE`).
        kind: u32,
        /// Its index in the relocation table.
        index: u32,
    },
    /// A dynamic relocation table kind this crate does not apply (`DT_REL`, `DT_RELR`,
    /// `DT_JMPREL`).
    UnsupportedDynamic {
        /// The dynamic tag.
        tag: u64,
    },
    /// No kernel of that name (no `<name>.kd` symbol in `.symtab` or `.dynsym`).
    MissingKernel {
        /// The name asked for.
        name: KernelName,
    },
    /// More `PT_LOAD` segments than [`MAX_LOAD_SEGMENTS`].
    TooManySegments,
    /// The ELF structure is inconsistent.
    Malformed {
        /// Where.
        part: ElfPart,
        /// What is wrong.
        problem: ElfProblem,
    },
    /// The `NT_AMDGPU_METADATA` note is missing or malformed.
    Metadata(MetadataError),
    /// The buffer given for the loaded image is smaller than the image.
    ImageTooSmall {
        /// The image size.
        needed: u64,
        /// The buffer length.
        got: usize,
    },
    /// The load address is not aligned to the largest segment alignment.
    MisalignedBase {
        /// The load address.
        base: u64,
        /// The required alignment.
        align: u64,
    },
}

/// A part of the ELF file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ElfPart {
    /// The file header.
    Header,
    /// The program header table.
    ProgramHeaders,
    /// Program header `n` (a segment).
    Segment(u16),
    /// The section header table.
    Sections,
    /// Section `n`.
    Section(u32),
    /// The dynamic segment.
    Dynamic,
    /// The dynamic relocation table.
    Relocations,
    /// Relocation `n`.
    Relocation(u32),
    /// Symbol `n` of a symbol table.
    Symbol(u32),
    /// A note record.
    Note,
    /// A kernel descriptor.
    Descriptor,
}

/// What is wrong with an [`ElfPart`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ElfProblem {
    /// It lies (partly) outside the file, or outside the loaded image.
    OutOfBounds,
    /// An offset or size computation overflows.
    Overflow,
    /// A record size (`e_phentsize`, `sh_entsize`, `DT_RELAENT`) is not the ELF64 one.
    EntrySize,
    /// An alignment is not a power of two.
    Alignment,
    /// A segment's file size exceeds its memory size.
    FileSizeAboveMemSize,
    /// `PT_LOAD` segments are not in ascending address order or overlap.
    Overlap,
    /// A relocation names a symbol where its type takes none.
    UnexpectedSymbol,
    /// A relocation's value (`base + addend`) would point outside the image.
    TargetOutsideImage,
    /// The image has no `PT_LOAD` segment.
    NoSegments,
    /// A kernel's code entry lies outside the executable segments.
    EntryNotExecutable,
    /// A kernel descriptor is not 64-byte aligned, or its code entry not 256-byte aligned.
    Misaligned,
}

/// Where in the metadata a problem is, and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MetadataError {
    /// Index of the kernel in `amdhsa.kernels`, if the problem is inside one.
    pub kernel: Option<u32>,
    /// Index of the argument in the kernel's `.args`, if the problem is inside one.
    pub arg: Option<u32>,
    /// The key concerned (`""` when none).
    pub key: &'static str,
    /// What is wrong.
    pub problem: MetadataProblem,
}

/// The kinds of metadata problems.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MetadataProblem {
    /// The file has no `NT_AMDGPU_METADATA` note (owner `AMDGPU`, type 32).
    NoNote,
    /// The MessagePack data itself is malformed.
    Syntax(MsgPackError),
    /// A value has the wrong type (or the document or a kernel is not a map).
    WrongType,
    /// A required key is absent.
    MissingKey,
    /// A value is out of range (too large, not a power of two, argument past the kernarg
    /// segment, ...).
    OutOfRange,
    /// `amdhsa.version` is not 1.x.
    UnsupportedVersion,
    /// `amdhsa.target` names another processor or feature setting than `e_flags`.
    TargetMismatch,
    /// A kernel symbol has no `amdhsa.kernels` entry.
    NoKernelEntry,
}

impl MetadataError {
    /// A problem with the document as a whole (or a top-level key).
    pub(super) const fn top(key: &'static str, problem: MetadataProblem) -> Self {
        Self { kernel: None, arg: None, key, problem }
    }
}

impl From<MetadataError> for CodeObjectError {
    fn from(e: MetadataError) -> Self {
        Self::Metadata(e)
    }
}

/// A kernel name kept inside an error (the first [`KERNEL_NAME_CAPACITY`] bytes, cut at a
/// character boundary).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct KernelName {
    bytes: [u8; KERNEL_NAME_CAPACITY],
    len: u8,
    truncated: bool,
}

impl KernelName {
    /// Keeps (a prefix of) `name`.
    #[must_use]
    pub fn new(name: &str) -> Self {
        let mut len = name.len().min(KERNEL_NAME_CAPACITY);
        while !name.is_char_boundary(len) {
            len = len.saturating_sub(1);
        }
        let mut bytes = [0u8; KERNEL_NAME_CAPACITY];
        if let (Some(dst), Some(src)) = (bytes.get_mut(..len), name.as_bytes().get(..len)) {
            dst.copy_from_slice(src);
        }
        Self { bytes, len: u8::try_from(len).unwrap_or(u8::MAX), truncated: len < name.len() }
    }

    /// The kept name.
    #[must_use]
    pub fn as_str(&self) -> &str {
        let kept = self.bytes.get(..usize::from(self.len)).unwrap_or(&[]);
        core::str::from_utf8(kept).unwrap_or("")
    }

    /// Whether the name was longer than what is kept.
    #[must_use]
    pub const fn is_truncated(&self) -> bool {
        self.truncated
    }
}

impl fmt::Debug for KernelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl fmt::Display for KernelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())?;
        if self.truncated { f.write_str("...") } else { Ok(()) }
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for KernelName {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=str}", self.as_str());
    }
}

/// The name of an AMDGPU relocation type (`R_AMDGPU_*`), if it has one.
#[must_use]
pub const fn relocation_name(kind: u32) -> Option<&'static str> {
    Some(match kind {
        0 => "R_AMDGPU_NONE",
        1 => "R_AMDGPU_ABS32_LO",
        2 => "R_AMDGPU_ABS32_HI",
        3 => "R_AMDGPU_ABS64",
        4 => "R_AMDGPU_REL32",
        5 => "R_AMDGPU_REL64",
        6 => "R_AMDGPU_ABS32",
        7 => "R_AMDGPU_GOTPCREL",
        8 => "R_AMDGPU_GOTPCREL32_LO",
        9 => "R_AMDGPU_GOTPCREL32_HI",
        10 => "R_AMDGPU_REL32_LO",
        11 => "R_AMDGPU_REL32_HI",
        13 => "R_AMDGPU_RELATIVE64",
        14 => "R_AMDGPU_REL16",
        _ => return None,
    })
}

impl fmt::Display for ElfPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Header => f.write_str("ELF header"),
            Self::ProgramHeaders => f.write_str("program header table"),
            Self::Segment(n) => write!(f, "program header {n}"),
            Self::Sections => f.write_str("section header table"),
            Self::Section(n) => write!(f, "section {n}"),
            Self::Dynamic => f.write_str("dynamic segment"),
            Self::Relocations => f.write_str("dynamic relocation table"),
            Self::Relocation(n) => write!(f, "relocation {n}"),
            Self::Symbol(n) => write!(f, "symbol {n}"),
            Self::Note => f.write_str("note record"),
            Self::Descriptor => f.write_str("kernel descriptor"),
        }
    }
}

impl fmt::Display for ElfProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::OutOfBounds => "lies outside the file or the image",
            Self::Overflow => "offset or size overflows",
            Self::EntrySize => "entry size is not the ELF64 one",
            Self::Alignment => "alignment is not a power of two",
            Self::FileSizeAboveMemSize => "file size exceeds memory size",
            Self::Overlap => "load segments out of order or overlapping",
            Self::UnexpectedSymbol => "relocation of this type names a symbol",
            Self::TargetOutsideImage => "relocation points outside the image",
            Self::NoSegments => "no PT_LOAD segment",
            Self::EntryNotExecutable => "kernel code entry is not in an executable segment",
            Self::Misaligned => "descriptor not 64-byte or code entry not 256-byte aligned",
        })
    }
}

impl fmt::Display for MetadataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AMDGPU metadata")?;
        if let Some(k) = self.kernel {
            write!(f, ", kernel {k}")?;
        }
        if let Some(a) = self.arg {
            write!(f, ", argument {a}")?;
        }
        if !self.key.is_empty() {
            write!(f, ", key `{}`", self.key)?;
        }
        f.write_str(": ")?;
        match self.problem {
            MetadataProblem::NoNote => f.write_str("no NT_AMDGPU_METADATA note"),
            MetadataProblem::Syntax(e) => write!(f, "{e}"),
            MetadataProblem::WrongType => f.write_str("value has the wrong type"),
            MetadataProblem::MissingKey => f.write_str("required key missing"),
            MetadataProblem::OutOfRange => f.write_str("value out of range"),
            MetadataProblem::UnsupportedVersion => f.write_str("version is not 1.x"),
            MetadataProblem::TargetMismatch => f.write_str("target differs from the ELF header's"),
            MetadataProblem::NoKernelEntry => f.write_str("kernel has no metadata entry"),
        }
    }
}

impl fmt::Display for CodeObjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::NotElf => f.write_str("not an ELF64 little-endian file"),
            Self::NotAmdgpu { machine } => {
                write!(f, "not an AMDGPU code object (e_machine {machine}, expected 224)")
            }
            Self::NotHsa { os_abi } => {
                write!(f, "not an HSA code object (EI_OSABI {os_abi}, expected 64)")
            }
            Self::UnsupportedVersion { abi_version } => write!(
                f,
                "unsupported code object version (EI_ABIVERSION {abi_version}; v4, v5, v6 are 2, 3, 4)"
            ),
            Self::NotSharedObject { e_type } => {
                write!(f, "not a loadable shared object (e_type {e_type}, expected ET_DYN 3)")
            }
            Self::BadTarget(p) => match p {
                EFlagsProblem::ReservedBits => f.write_str("e_flags: reserved bits set"),
                EFlagsProblem::UnknownProcessor => f.write_str("e_flags: unknown processor"),
                EFlagsProblem::GenericVersion => {
                    f.write_str("e_flags: generic version inconsistent with the processor")
                }
            },
            Self::WrongTarget { object, agent } => {
                write!(f, "code object is for {object}, the agent is {agent}")
            }
            Self::UnknownRelocation { kind, index } => match relocation_name(kind) {
                Some(n) => write!(f, "relocation {index}: unsupported type {n} ({kind})"),
                None => write!(f, "relocation {index}: unknown type {kind}"),
            },
            Self::UnsupportedDynamic { tag } => {
                write!(f, "unsupported dynamic relocation table (tag {tag})")
            }
            Self::MissingKernel { name } => write!(f, "no kernel `{name}` (no `{name}.kd` symbol)"),
            Self::TooManySegments => {
                write!(f, "more than {MAX_LOAD_SEGMENTS} PT_LOAD segments")
            }
            Self::Malformed { part, problem } => write!(f, "{part}: {problem}"),
            Self::Metadata(e) => write!(f, "{e}"),
            Self::ImageTooSmall { needed, got } => {
                write!(f, "image buffer of {got} bytes is below the image size {needed}")
            }
            Self::MisalignedBase { base, align } => {
                write!(f, "load address {base:#x} is not {align}-byte aligned")
            }
        }
    }
}

impl Error for CodeObjectError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::NotElf
            | Self::NotAmdgpu { .. }
            | Self::NotHsa { .. }
            | Self::NotSharedObject { .. }
            | Self::BadTarget(_)
            | Self::Malformed { .. }
            | Self::Metadata(_) => ErrorKind::Malformed,
            Self::UnsupportedVersion { .. }
            | Self::WrongTarget { .. }
            | Self::UnknownRelocation { .. }
            | Self::UnsupportedDynamic { .. } => ErrorKind::NotSupported,
            Self::MissingKernel { .. } | Self::ImageTooSmall { .. } => ErrorKind::InvalidArgument,
            Self::TooManySegments => ErrorKind::CapacityExhausted,
            Self::MisalignedBase { .. } => ErrorKind::Misaligned,
        }
    }
}

impl core::error::Error for CodeObjectError {}
