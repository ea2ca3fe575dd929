//! AMDGPU ELF code objects (v4, v5, v6) for the HSA runtime: parsing over a borrowed byte
//! slice, with no allocation, no I/O and no panic on any input.
//!
//! [`CodeObject::parse`] checks the file once: the ELF header (`EM_AMDGPU`,
//! `ELFOSABI_AMDGPU_HSA`, `EI_ABIVERSION` 2–4, `ET_DYN`), the target in `e_flags`
//! ([`Target`]), the `PT_LOAD` segments (in order, not overlapping, inside the file), the
//! dynamic relocations (only `R_AMDGPU_RELATIVE64`, each inside the image) and the
//! `NT_AMDGPU_METADATA` note ([`Metadata`], every kernel and argument map). Kernels are found
//! by their `<name>.kd` symbol in `.dynsym` or `.symtab` ([`CodeObject::kernel`]), with the
//! 64-byte kernel descriptor decoded ([`KernelDescriptor`]). [`kernarg`] lays out kernel
//! arguments from the metadata, hidden ones included.
//!
//! # How a loader uses it
//!
//! Loading (allocating GPU memory, mapping it to agents) is the facade's; this module tells
//! it what to put there:
//!
//! 1. `let co = CodeObject::parse(bytes)?;` then
//!    `co.check_target(&AgentTarget { gfx: node.effective_gfx(), xnack, sramecc })?` — the
//!    effective gfx honours `HSA_OVERRIDE_GFX_VERSION`.
//! 2. Allocate [`CodeObject::image_size`] bytes of executable GPU memory
//!    (`EXECUTE_ACCESS`) at an address `base` aligned to [`CodeObject::image_align`] (a page
//!    boundary satisfies every object clang produces).
//! 3. Fill it: [`CodeObject::load_into`] builds the whole image for load address `base` in
//!    a caller buffer (host staging memory); [`CodeObject::load_with`] describes it as writes
//!    ([`ImagePiece`]s) for a loader writing through a CPU view of the GPU memory. By hand it
//!    is: zero the image; for each [`LoadSegment`] copy `file_bytes` to `base + vaddr` (the
//!    rest up to `mem_size` stays zero); for each [`Relocation`] write the little-endian `u64`
//!    [`Relocation::value`]`(base)` at `base + offset`. The facade does all of this:
//!    [`Kfd::load_code_object`](crate::device::Kfd::load_code_object)
//!    (`device::code_object_manager`).
//! 4. Resolve kernels: `let k = co.kernel("name")?;` the AQL packet's `kernel_object` is
//!    [`Kernel::descriptor_address`]`(base)` (= `base` + the `.kd` symbol's value); its
//!    group and private segment sizes are the metadata's (plus any dynamic LDS); lay the
//!    arguments out with [`kernarg::KernargBuilder`].
//! 5. Free the memory on unload (after every dispatch using it has completed).
//!
//! Capacities: [`MAX_LOAD_SEGMENTS`], [`MAX_METADATA_DEPTH`], [`MAX_KERNEL_ARGS`],
//! [`KERNEL_NAME_CAPACITY`].
#![deny(clippy::arithmetic_side_effects)]

pub mod descriptor;
mod elf;
mod image;
pub mod kernarg;
pub mod metadata;
pub mod msgpack;
pub mod parse_error;
pub mod target;

#[cfg(test)]
mod tests;

pub use descriptor::{KERNEL_DESCRIPTOR_SIZE, KernelDescriptor};
pub use image::ImagePiece;
pub use metadata::{KernelArg, KernelMetadata, Metadata, ValueKind};
pub use parse_error::{
    CodeObjectError, ElfPart, ElfProblem, KernelName, MetadataError, MetadataProblem,
};
pub use target::{AgentFeature, AgentTarget, FeatureMode, IsaFamily, Processor, Target};

use elf::{Ehdr, Notes, Phdr, Rela, Shdr, Sym, malformed};

pub use crate::config::{
    KERNEL_NAME_CAPACITY, MAX_KERNEL_ARGS, MAX_LOAD_SEGMENTS, MAX_METADATA_DEPTH,
};

/// `R_AMDGPU_NONE`.
const R_AMDGPU_NONE: u32 = 0;
/// `R_AMDGPU_RELATIVE64`: `base + addend`, 64 bits.
const R_AMDGPU_RELATIVE64: u32 = 13;
/// `NT_AMDGPU_METADATA`.
const NT_AMDGPU_METADATA: u32 = 32;
/// The alignment of a kernel descriptor (an AQL packet's `kernel_object`).
const DESCRIPTOR_ALIGN: u64 = 64;
/// The alignment of a kernel's first instruction (`COMPUTE_PGM_LO` holds `address >> 8`),
/// and so the least alignment of a load address.
const ENTRY_ALIGN: u64 = 256;
/// `PF_X`, `PF_W`, `PF_R`.
const PF_X: u32 = 1;
const PF_W: u32 = 2;
const PF_R: u32 = 4;

/// A code object version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CodeObjectVersion {
    /// v4 (`EI_ABIVERSION` 2): hidden arguments are the global offsets and runtime pointers.
    V4,
    /// v5 (`EI_ABIVERSION` 3): adds the dispatch-geometry hidden arguments (block counts,
    /// group sizes, remainders, grid dimensions, ...).
    V5,
    /// v6 (`EI_ABIVERSION` 4): adds generic targets (`gfx9-generic`, ...).
    V6,
}

impl CodeObjectVersion {
    /// The version number (4, 5, 6).
    #[must_use]
    pub const fn number(self) -> u8 {
        match self {
            Self::V4 => 4,
            Self::V5 => 5,
            Self::V6 => 6,
        }
    }
}

/// A segment's access flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SegmentFlags {
    /// `PF_R`.
    pub read: bool,
    /// `PF_W`.
    pub write: bool,
    /// `PF_X`: machine code.
    pub execute: bool,
}

/// A `PT_LOAD` segment: `file_bytes` go to `base + vaddr`, followed by zeros up to
/// `mem_size`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct LoadSegment<'a> {
    /// Index of the program header.
    pub index: u16,
    /// Offset of the segment in the image.
    pub vaddr: u64,
    /// Bytes the segment occupies in the image (`file_bytes.len()` or more).
    pub mem_size: u64,
    /// The bytes copied from the file.
    pub file_bytes: &'a [u8],
    /// Access flags.
    pub flags: SegmentFlags,
}

/// The segment's placement, not its bytes.
impl core::fmt::Debug for LoadSegment<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LoadSegment")
            .field("index", &self.index)
            .field("vaddr", &self.vaddr)
            .field("mem_size", &self.mem_size)
            .field("file_bytes", &self.file_bytes.len())
            .field("flags", &self.flags)
            .finish()
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for LoadSegment<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "LoadSegment {{ {=u16}: {=u64:#x} +{=u64:#x}, {=usize} file bytes, {} }}",
            self.index,
            self.vaddr,
            self.mem_size,
            self.file_bytes.len(),
            self.flags
        );
    }
}

impl LoadSegment<'_> {
    /// Zero bytes following the file bytes.
    #[must_use]
    pub fn zero_fill(&self) -> u64 {
        self.mem_size.saturating_sub(self.file_bytes.len() as u64)
    }
}

/// An `R_AMDGPU_RELATIVE64` relocation: the image's `u64` at `offset` becomes
/// `base + addend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Relocation {
    /// Index in the relocation table.
    pub index: u32,
    /// Offset of the 8 bytes to write, from the image start.
    pub offset: u64,
    /// The addend.
    pub addend: i64,
}

impl Relocation {
    /// The value to store for load address `base` (`None` if it overflows 64 bits).
    #[must_use]
    pub const fn value(&self, base: u64) -> Option<u64> {
        base.checked_add_signed(self.addend)
    }
}

/// A kernel of a code object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Kernel<'a> {
    /// The `.kd` symbol's value: the descriptor's offset in the image.
    pub descriptor_offset: u64,
    /// The offset of the kernel's first instruction in the image.
    pub entry_offset: u64,
    /// The decoded kernel descriptor.
    pub descriptor: KernelDescriptor,
    /// The kernel's metadata (name, arguments, segment sizes, ...).
    pub metadata: KernelMetadata<'a>,
}

impl<'a> Kernel<'a> {
    /// The kernel's source name.
    #[must_use]
    pub const fn name(&self) -> &'a str {
        self.metadata.name
    }

    /// The kernel object (descriptor address) for an image loaded at `base`.
    #[must_use]
    pub const fn descriptor_address(&self, base: u64) -> Option<u64> {
        base.checked_add(self.descriptor_offset)
    }

    /// The address of the first instruction for an image loaded at `base`.
    #[must_use]
    pub const fn entry_address(&self, base: u64) -> Option<u64> {
        base.checked_add(self.entry_offset)
    }
}

/// A parsed, validated code object borrowing its bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CodeObject<'a> {
    bytes: &'a [u8],
    version: CodeObjectVersion,
    target: Target,
    family: IsaFamily,
    phoff: u64,
    phnum: u16,
    shoff: u64,
    shnum: u16,
    image_size: u64,
    image_align: u64,
    relocations: &'a [u8],
    metadata: Metadata<'a>,
}

/// The object's properties, not its bytes.
impl core::fmt::Debug for CodeObject<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CodeObject")
            .field("bytes", &self.bytes.len())
            .field("version", &self.version)
            .field("target", &self.target)
            .field("image_size", &self.image_size)
            .field("image_align", &self.image_align)
            .field("relocations", &self.relocations.len().checked_div(elf::RELA_SIZE))
            .field("kernels", &self.metadata.kernel_count())
            .finish()
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for CodeObject<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "CodeObject {{ v{=u8}, {}, image {=u64} bytes, {=u32} kernels }}",
            self.version.number(),
            self.target,
            self.image_size,
            self.metadata.kernel_count()
        );
    }
}

/// Program header `i`, or a malformed-table error.
fn phdr(bytes: &[u8], phoff: u64, i: u16) -> Result<Phdr, CodeObjectError> {
    Phdr::read(bytes, phoff, i).ok_or(malformed(ElfPart::ProgramHeaders, ElfProblem::OutOfBounds))
}

impl<'a> CodeObject<'a> {
    /// Parses and validates a code object.
    ///
    /// # Errors
    /// [`CodeObjectError::NotElf`], [`NotAmdgpu`](CodeObjectError::NotAmdgpu),
    /// [`NotHsa`](CodeObjectError::NotHsa),
    /// [`UnsupportedVersion`](CodeObjectError::UnsupportedVersion),
    /// [`NotSharedObject`](CodeObjectError::NotSharedObject),
    /// [`BadTarget`](CodeObjectError::BadTarget),
    /// [`TooManySegments`](CodeObjectError::TooManySegments),
    /// [`UnknownRelocation`](CodeObjectError::UnknownRelocation),
    /// [`UnsupportedDynamic`](CodeObjectError::UnsupportedDynamic),
    /// [`Malformed`](CodeObjectError::Malformed) (where and what), or
    /// [`Metadata`](CodeObjectError::Metadata) (missing or malformed note, or a target that
    /// differs from `e_flags`).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, CodeObjectError> {
        let ehdr = Ehdr::read(bytes)?;
        if ehdr.machine != elf::EM_AMDGPU {
            return Err(CodeObjectError::NotAmdgpu { machine: ehdr.machine });
        }
        if ehdr.os_abi != elf::ELFOSABI_AMDGPU_HSA {
            return Err(CodeObjectError::NotHsa { os_abi: ehdr.os_abi });
        }
        let version = match ehdr.abi_version {
            2 => CodeObjectVersion::V4,
            3 => CodeObjectVersion::V5,
            4 => CodeObjectVersion::V6,
            abi_version => return Err(CodeObjectError::UnsupportedVersion { abi_version }),
        };
        if ehdr.e_type != elf::ET_DYN {
            return Err(CodeObjectError::NotSharedObject { e_type: ehdr.e_type });
        }
        let target = Target::from_e_flags(ehdr.flags, version >= CodeObjectVersion::V6)
            .map_err(CodeObjectError::BadTarget)?;
        let family = target
            .processor
            .family()
            .ok_or(CodeObjectError::BadTarget(target::EFlagsProblem::UnknownProcessor))?;
        table_in_file(
            bytes,
            ehdr.phoff,
            ehdr.phnum.into(),
            elf::PHDR_SIZE,
            ElfPart::ProgramHeaders,
        )?;
        table_in_file(bytes, ehdr.shoff, ehdr.shnum.into(), elf::SHDR_SIZE, ElfPart::Sections)?;
        let mut co = Self {
            bytes,
            version,
            target,
            family,
            phoff: ehdr.phoff,
            phnum: ehdr.phnum,
            shoff: ehdr.shoff,
            shnum: ehdr.shnum,
            image_size: 0,
            image_align: ENTRY_ALIGN,
            relocations: &[],
            metadata: Metadata::EMPTY,
        };
        co.check_segments()?;
        co.relocations = co.relocation_table()?;
        for r in co.relocation_entries() {
            co.check_relocation(r?)?;
        }
        co.metadata = co.find_metadata()?;
        if !matches_target(co.metadata.target, &target) {
            return Err(MetadataError::top("amdhsa.target", MetadataProblem::TargetMismatch).into());
        }
        Ok(co)
    }

    /// The code object version.
    #[must_use]
    pub const fn version(&self) -> CodeObjectVersion {
        self.version
    }

    /// The target from `e_flags`.
    #[must_use]
    pub const fn target(&self) -> Target {
        self.target
    }

    /// The ISA family of the target (kernel descriptor layout).
    #[must_use]
    pub const fn family(&self) -> IsaFamily {
        self.family
    }

    /// Checks that the code object runs on `agent` (see [`Target::runs_on`]).
    ///
    /// # Errors
    /// [`CodeObjectError::WrongTarget`], naming both.
    pub fn check_target(&self, agent: &AgentTarget) -> Result<(), CodeObjectError> {
        if self.target.runs_on(agent) {
            Ok(())
        } else {
            Err(CodeObjectError::WrongTarget { object: self.target, agent: *agent })
        }
    }

    /// The bytes the loaded image occupies: from offset 0 to the end of the last `PT_LOAD`
    /// segment's memory.
    #[must_use]
    pub const fn image_size(&self) -> u64 {
        self.image_size
    }

    /// The alignment the load address needs: the largest `PT_LOAD` alignment, at least 256
    /// (kernel code addresses are programmed in 256-byte units).
    #[must_use]
    pub const fn image_align(&self) -> u64 {
        self.image_align
    }

    /// The parsed metadata.
    #[must_use]
    pub const fn metadata(&self) -> &Metadata<'a> {
        &self.metadata
    }

    /// The `PT_LOAD` segments, in address order (validated by [`parse`](Self::parse)).
    pub fn segments(&self) -> impl Iterator<Item = LoadSegment<'a>> + 'a {
        let (bytes, phoff) = (self.bytes, self.phoff);
        (0..self.phnum)
            .filter_map(move |i| Phdr::read(bytes, phoff, i).map(|p| (i, p)))
            .filter(|(_, p)| p.p_type == elf::PT_LOAD)
            .filter_map(move |(index, p)| {
                Some(LoadSegment {
                    index,
                    vaddr: p.vaddr,
                    mem_size: p.memsz,
                    file_bytes: p.file_bytes(bytes)?,
                    flags: SegmentFlags {
                        read: p.flags & PF_R != 0,
                        write: p.flags & PF_W != 0,
                        execute: p.flags & PF_X != 0,
                    },
                })
            })
    }

    /// The relocations to apply (validated by [`parse`](Self::parse); `R_AMDGPU_NONE`
    /// entries are left out).
    pub fn relocations(&self) -> impl Iterator<Item = Relocation> + 'a {
        (0u32..)
            .zip(self.relocations.chunks_exact(elf::RELA_SIZE))
            .filter_map(|(index, e)| Rela::read(e).map(|r| (index, r)))
            .filter(|(_, r)| r.kind == R_AMDGPU_RELATIVE64)
            .map(|(index, r)| Relocation { index, offset: r.offset, addend: r.addend })
    }

    /// The kernel called `name` (its `<name>.kd` symbol, its metadata and descriptor).
    ///
    /// # Errors
    /// [`CodeObjectError::MissingKernel`]; [`Metadata`](CodeObjectError::Metadata) with
    /// [`MetadataProblem::NoKernelEntry`] when the symbol has no metadata;
    /// [`Malformed`](CodeObjectError::Malformed) for a broken symbol table or a descriptor
    /// outside the file or pointing outside the code.
    pub fn kernel(&self, name: &str) -> Result<Kernel<'a>, CodeObjectError> {
        let wanted = |sym: &[u8]| sym.strip_suffix(b".kd") == Some(name.as_bytes());
        let Some((symbol, sym)) = self.find_symbol(wanted)? else {
            return Err(CodeObjectError::MissingKernel { name: KernelName::new(name) });
        };
        let metadata = self.metadata.by_symbol(symbol).ok_or(MetadataError {
            kernel: None,
            arg: None,
            key: ".symbol",
            problem: MetadataProblem::NoKernelEntry,
        })?;
        self.kernel_at(sym.value, metadata)
    }

    /// Every kernel the metadata lists, resolved through its `.symbol` (an `Err` for one
    /// that cannot be resolved; the walk goes on).
    pub fn kernels(&self) -> impl Iterator<Item = Result<Kernel<'a>, CodeObjectError>> + '_ {
        self.metadata.kernels().map(|meta| {
            let wanted = |sym: &[u8]| sym == meta.symbol.as_bytes();
            match self.find_symbol(wanted)? {
                Some((_, sym)) => self.kernel_at(sym.value, meta),
                None => Err(CodeObjectError::MissingKernel { name: KernelName::new(meta.name) }),
            }
        })
    }

    /// The kernel whose descriptor is at image offset `offset`.
    fn kernel_at(
        &self,
        offset: u64,
        metadata: KernelMetadata<'a>,
    ) -> Result<Kernel<'a>, CodeObjectError> {
        let bad = |problem| malformed(ElfPart::Descriptor, problem);
        // An AQL kernel object is 64-byte aligned.
        if !offset.is_multiple_of(DESCRIPTOR_ALIGN) {
            return Err(bad(ElfProblem::Misaligned));
        }
        let bytes = self
            .image_bytes(offset, KERNEL_DESCRIPTOR_SIZE as u64)
            .ok_or(bad(ElfProblem::OutOfBounds))?;
        let raw: &[u8; KERNEL_DESCRIPTOR_SIZE] =
            bytes.try_into().map_err(|_| bad(ElfProblem::OutOfBounds))?;
        let descriptor = KernelDescriptor::decode(raw, self.family);
        let entry = offset
            .checked_add_signed(descriptor.kernel_code_entry_byte_offset)
            .ok_or(bad(ElfProblem::Overflow))?;
        let executable = self.segments().any(|s| {
            s.flags.execute
                && entry >= s.vaddr
                && entry.checked_sub(s.vaddr).is_some_and(|o| o < s.mem_size)
        });
        if !executable {
            return Err(bad(ElfProblem::EntryNotExecutable));
        }
        // COMPUTE_PGM_LO/HI take the code address in 256-byte units.
        if !entry.is_multiple_of(ENTRY_ALIGN) {
            return Err(bad(ElfProblem::Misaligned));
        }
        Ok(Kernel { descriptor_offset: offset, entry_offset: entry, descriptor, metadata })
    }

    /// `len` bytes at image offset `vaddr`, if they lie in one segment's file bytes.
    fn image_bytes(&self, vaddr: u64, len: u64) -> Option<&'a [u8]> {
        self.segments().find_map(|s| {
            let start = vaddr.checked_sub(s.vaddr)?;
            elf::slice(s.file_bytes, start, len)
        })
    }

    /// The first defined symbol of `.dynsym` or `.symtab` (in section order) whose name
    /// satisfies `wanted`, with its name.
    fn find_symbol(
        &self,
        wanted: impl Fn(&[u8]) -> bool,
    ) -> Result<Option<(&'a [u8], Sym)>, CodeObjectError> {
        for i in 0..u32::from(self.shnum) {
            let section = self.section(i)?;
            if section.sh_type != elf::SHT_SYMTAB && section.sh_type != elf::SHT_DYNSYM {
                continue;
            }
            if section.entsize != elf::SYM_SIZE as u64 {
                return Err(malformed(ElfPart::Section(i), ElfProblem::EntrySize));
            }
            let table = section
                .file_bytes(self.bytes)
                .ok_or(malformed(ElfPart::Section(i), ElfProblem::OutOfBounds))?;
            let strings = self.section(section.link)?;
            let strings = strings
                .file_bytes(self.bytes)
                .ok_or(malformed(ElfPart::Section(section.link), ElfProblem::OutOfBounds))?;
            for (n, entry) in (0u32..).zip(table.chunks_exact(elf::SYM_SIZE)) {
                let sym = Sym::read(entry)
                    .ok_or(malformed(ElfPart::Symbol(n), ElfProblem::OutOfBounds))?;
                if sym.shndx == 0 {
                    continue; // undefined
                }
                let name = elf::string_at(strings, sym.name)
                    .ok_or(malformed(ElfPart::Symbol(n), ElfProblem::OutOfBounds))?;
                if wanted(name) {
                    return Ok(Some((name, sym)));
                }
            }
        }
        Ok(None)
    }

    /// Section header `i`.
    fn section(&self, i: u32) -> Result<Shdr, CodeObjectError> {
        if i >= u32::from(self.shnum) {
            return Err(malformed(ElfPart::Section(i), ElfProblem::OutOfBounds));
        }
        Shdr::read(self.bytes, self.shoff, i)
            .ok_or(malformed(ElfPart::Sections, ElfProblem::OutOfBounds))
    }

    /// Checks the `PT_LOAD` segments and sets the image size and alignment.
    fn check_segments(&mut self) -> Result<(), CodeObjectError> {
        let mut count = 0usize;
        let mut end = 0u64;
        for i in 0..self.phnum {
            let p = phdr(self.bytes, self.phoff, i)?;
            if p.p_type != elf::PT_LOAD {
                continue;
            }
            count = count.saturating_add(1);
            if count > MAX_LOAD_SEGMENTS {
                return Err(CodeObjectError::TooManySegments);
            }
            let bad = |problem| malformed(ElfPart::Segment(i), problem);
            if p.filesz > p.memsz {
                return Err(bad(ElfProblem::FileSizeAboveMemSize));
            }
            p.file_bytes(self.bytes).ok_or(bad(ElfProblem::OutOfBounds))?;
            if p.align > 1 && !p.align.is_power_of_two() {
                return Err(bad(ElfProblem::Alignment));
            }
            if p.vaddr < end {
                return Err(bad(ElfProblem::Overlap));
            }
            end = p.vaddr.checked_add(p.memsz).ok_or(bad(ElfProblem::Overflow))?;
            self.image_align = self.image_align.max(p.align);
        }
        if count == 0 {
            return Err(malformed(ElfPart::ProgramHeaders, ElfProblem::NoSegments));
        }
        // The image must be addressable on this host (it is built in a slice).
        usize::try_from(end)
            .map_err(|_| malformed(ElfPart::ProgramHeaders, ElfProblem::Overflow))?;
        self.image_size = end;
        Ok(())
    }

    /// The bytes of the `DT_RELA` table (empty when there is none).
    fn relocation_table(&self) -> Result<&'a [u8], CodeObjectError> {
        let mut dynamic = None;
        for i in 0..self.phnum {
            let p = phdr(self.bytes, self.phoff, i)?;
            if p.p_type == elf::PT_DYNAMIC {
                dynamic = Some(
                    p.file_bytes(self.bytes)
                        .ok_or(malformed(ElfPart::Dynamic, ElfProblem::OutOfBounds))?,
                );
                break;
            }
        }
        let Some(dynamic) = dynamic else { return Ok(&[]) };
        let (mut rela, mut size, mut entry) = (None, 0u64, elf::RELA_SIZE as u64);
        for d in dynamic.chunks_exact(elf::DYN_SIZE) {
            let (tag, value) = match (elf::u64_at(d, 0), elf::u64_at(d, 8)) {
                (Some(t), Some(v)) => (t, v),
                _ => return Err(malformed(ElfPart::Dynamic, ElfProblem::OutOfBounds)),
            };
            match tag {
                elf::DT_NULL => break,
                elf::DT_RELA => rela = Some(value),
                elf::DT_RELASZ => size = value,
                elf::DT_RELAENT => entry = value,
                elf::DT_REL | elf::DT_JMPREL | elf::DT_RELR => {
                    return Err(CodeObjectError::UnsupportedDynamic { tag });
                }
                _ => {}
            }
        }
        let Some(rela) = rela else { return Ok(&[]) };
        if entry != elf::RELA_SIZE as u64 || size.checked_rem(elf::RELA_SIZE as u64) != Some(0) {
            return Err(malformed(ElfPart::Relocations, ElfProblem::EntrySize));
        }
        self.image_bytes(rela, size).ok_or(malformed(ElfPart::Relocations, ElfProblem::OutOfBounds))
    }

    /// The raw relocation entries.
    fn relocation_entries(
        &self,
    ) -> impl Iterator<Item = Result<(u32, Rela), CodeObjectError>> + 'a {
        (0u32..).zip(self.relocations.chunks_exact(elf::RELA_SIZE)).map(|(i, e)| {
            Rela::read(e)
                .map(|r| (i, r))
                .ok_or(malformed(ElfPart::Relocation(i), ElfProblem::OutOfBounds))
        })
    }

    /// Checks one relocation: a supported type, 8 bytes inside one segment's memory, a value
    /// inside the image.
    fn check_relocation(&self, (index, r): (u32, Rela)) -> Result<(), CodeObjectError> {
        match r.kind {
            R_AMDGPU_NONE => return Ok(()),
            R_AMDGPU_RELATIVE64 => {}
            kind => return Err(CodeObjectError::UnknownRelocation { kind, index }),
        }
        let bad = |problem| malformed(ElfPart::Relocation(index), problem);
        if r.symbol != 0 {
            return Err(bad(ElfProblem::UnexpectedSymbol));
        }
        // The value is an address in the image (up to one past its end).
        if u64::try_from(r.addend).is_ok_and(|a| a > self.image_size) || r.addend < 0 {
            return Err(bad(ElfProblem::TargetOutsideImage));
        }
        let end = r.offset.checked_add(8).ok_or(bad(ElfProblem::Overflow))?;
        let inside = self.segments().any(|s| {
            r.offset >= s.vaddr && s.vaddr.checked_add(s.mem_size).is_some_and(|e| end <= e)
        });
        if inside { Ok(()) } else { Err(bad(ElfProblem::OutOfBounds)) }
    }

    /// The `NT_AMDGPU_METADATA` note of the `PT_NOTE` segments (or, without those, of the
    /// `SHT_NOTE` sections), parsed.
    fn find_metadata(&self) -> Result<Metadata<'a>, CodeObjectError> {
        let mut found_segment = false;
        for i in 0..self.phnum {
            let p = phdr(self.bytes, self.phoff, i)?;
            if p.p_type != elf::PT_NOTE {
                continue;
            }
            found_segment = true;
            let data = p
                .file_bytes(self.bytes)
                .ok_or(malformed(ElfPart::Segment(i), ElfProblem::OutOfBounds))?;
            if let Some(m) = metadata_note(data, p.align)? {
                return Ok(m);
            }
        }
        if !found_segment {
            for i in 0..u32::from(self.shnum) {
                let s = self.section(i)?;
                if s.sh_type != elf::SHT_NOTE {
                    continue;
                }
                let data = s
                    .file_bytes(self.bytes)
                    .ok_or(malformed(ElfPart::Section(i), ElfProblem::OutOfBounds))?;
                if let Some(m) = metadata_note(data, 4)? {
                    return Ok(m);
                }
            }
        }
        Err(MetadataError::top("", MetadataProblem::NoNote).into())
    }
}

/// The metadata of the first `AMDGPU` / `NT_AMDGPU_METADATA` record of a note area.
fn metadata_note(data: &[u8], align: u64) -> Result<Option<Metadata<'_>>, CodeObjectError> {
    for note in Notes::new(data, align) {
        let note = note?;
        if note.name == b"AMDGPU" && note.kind == NT_AMDGPU_METADATA {
            return Ok(Some(Metadata::parse(note.desc)?));
        }
    }
    Ok(None)
}

/// Checks that a table of `count` entries of `size` bytes at `offset` lies in the file.
fn table_in_file(
    bytes: &[u8],
    offset: u64,
    count: u64,
    size: usize,
    part: ElfPart,
) -> Result<(), CodeObjectError> {
    if count == 0 {
        return Ok(());
    }
    let len = count.checked_mul(size as u64).ok_or(malformed(part, ElfProblem::Overflow))?;
    elf::slice(bytes, offset, len).map(|_| ()).ok_or(malformed(part, ElfProblem::OutOfBounds))
}

/// Whether `amdhsa.target` is `amdgcn-amd-amdhsa--` followed by the canonical target ID of
/// `target`.
fn matches_target(text: &str, target: &Target) -> bool {
    use core::fmt::Write as _;
    /// Compares formatted output with a string, piece by piece.
    struct Expect<'s>(Option<&'s str>);
    impl core::fmt::Write for Expect<'_> {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            self.0 = self.0.and_then(|rest| rest.strip_prefix(s));
            Ok(())
        }
    }
    let mut expect = Expect(text.strip_prefix("amdgcn-amd-amdhsa--"));
    let _ = write!(expect, "{target}");
    expect.0 == Some("")
}
