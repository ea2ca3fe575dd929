//! ELF64 little-endian records, read bounds-checked from a byte slice (no alignment
//! assumed): the file header, program and section headers, symbols, `Elf64_Rela` and
//! `Elf64_Dyn` entries, and notes.

use super::parse_error::{CodeObjectError, ElfPart, ElfProblem};

/// `Elf64_Ehdr` size.
pub(super) const EHDR_SIZE: usize = 64;
/// `Elf64_Phdr` size.
pub(super) const PHDR_SIZE: usize = 56;
/// `Elf64_Shdr` size.
pub(super) const SHDR_SIZE: usize = 64;
/// `Elf64_Sym` size.
pub(super) const SYM_SIZE: usize = 24;
/// `Elf64_Rela` size.
pub(super) const RELA_SIZE: usize = 24;
/// `Elf64_Dyn` size.
pub(super) const DYN_SIZE: usize = 16;

/// `EM_AMDGPU`.
pub(super) const EM_AMDGPU: u16 = 224;
/// `ELFOSABI_AMDGPU_HSA`.
pub(super) const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `ET_DYN`.
pub(super) const ET_DYN: u16 = 3;

/// `PT_LOAD`.
pub(super) const PT_LOAD: u32 = 1;
/// `PT_DYNAMIC`.
pub(super) const PT_DYNAMIC: u32 = 2;
/// `PT_NOTE`.
pub(super) const PT_NOTE: u32 = 4;

/// `SHT_SYMTAB`.
pub(super) const SHT_SYMTAB: u32 = 2;
/// `SHT_NOTE`.
pub(super) const SHT_NOTE: u32 = 7;
/// `SHT_DYNSYM`.
pub(super) const SHT_DYNSYM: u32 = 11;

/// `DT_NULL`: the end of the dynamic array.
pub(super) const DT_NULL: u64 = 0;
/// `DT_RELA`: address of the `Elf64_Rela` table.
pub(super) const DT_RELA: u64 = 7;
/// `DT_RELASZ`: its size in bytes.
pub(super) const DT_RELASZ: u64 = 8;
/// `DT_RELAENT`: the size of one entry.
pub(super) const DT_RELAENT: u64 = 9;
/// `DT_REL`: an `Elf64_Rel` table (not used by AMDGPU).
pub(super) const DT_REL: u64 = 17;
/// `DT_JMPREL`: PLT relocations (not used by AMDGPU).
pub(super) const DT_JMPREL: u64 = 23;
/// `DT_RELR`: packed relative relocations (not produced by default).
pub(super) const DT_RELR: u64 = 36;

/// `n` bytes at `offset`, if inside `bytes`.
pub(super) fn slice(bytes: &[u8], offset: u64, n: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(n).ok()?)?;
    bytes.get(start..end)
}

/// A little-endian `N`-byte array at `offset`.
fn array<const N: usize>(bytes: &[u8], offset: usize) -> Option<[u8; N]> {
    bytes.get(offset..offset.checked_add(N)?)?.try_into().ok()
}

pub(super) fn u16_at(bytes: &[u8], offset: usize) -> Option<u16> {
    array(bytes, offset).map(u16::from_le_bytes)
}

pub(super) fn u32_at(bytes: &[u8], offset: usize) -> Option<u32> {
    array(bytes, offset).map(u32::from_le_bytes)
}

pub(super) fn u64_at(bytes: &[u8], offset: usize) -> Option<u64> {
    array(bytes, offset).map(u64::from_le_bytes)
}

/// The error for a malformed `part`.
pub(super) const fn malformed(part: ElfPart, problem: ElfProblem) -> CodeObjectError {
    CodeObjectError::Malformed { part, problem }
}

/// The fields of `Elf64_Ehdr` this crate uses (already checked to be an ELF64 LE file).
#[derive(Debug, Clone, Copy)]
pub(super) struct Ehdr {
    pub(super) os_abi: u8,
    pub(super) abi_version: u8,
    pub(super) e_type: u16,
    pub(super) machine: u16,
    pub(super) flags: u32,
    pub(super) phoff: u64,
    pub(super) phnum: u16,
    pub(super) shoff: u64,
    pub(super) shnum: u16,
}

impl Ehdr {
    /// Reads the header: `NotElf` unless the file starts with an ELF64, little-endian,
    /// version-1 identification.
    pub(super) fn read(bytes: &[u8]) -> Result<Self, CodeObjectError> {
        let ident = bytes.get(..16).ok_or(CodeObjectError::NotElf)?;
        // EI_MAG, EI_CLASS = ELFCLASS64, EI_DATA = ELFDATA2LSB, EI_VERSION = EV_CURRENT.
        if ident.get(..7) != Some(&[0x7f, b'E', b'L', b'F', 2, 1, 1][..]) {
            return Err(CodeObjectError::NotElf);
        }
        let field = || malformed(ElfPart::Header, ElfProblem::OutOfBounds);
        let h = bytes.get(..EHDR_SIZE).ok_or_else(field)?;
        let get16 = |o| u16_at(h, o).ok_or_else(field);
        let get64 = |o| u64_at(h, o).ok_or_else(field);
        let ehdr = Self {
            os_abi: *ident.get(7).ok_or_else(field)?,
            abi_version: *ident.get(8).ok_or_else(field)?,
            e_type: get16(16)?,
            machine: get16(18)?,
            flags: u32_at(h, 48).ok_or_else(field)?,
            phoff: get64(32)?,
            phnum: get16(56)?,
            shoff: get64(40)?,
            shnum: get16(60)?,
        };
        // Entry sizes other than the ELF64 ones would mean a different record layout.
        let phentsize = get16(54)?;
        let shentsize = get16(58)?;
        if ehdr.phnum != 0 && usize::from(phentsize) != PHDR_SIZE {
            return Err(malformed(ElfPart::ProgramHeaders, ElfProblem::EntrySize));
        }
        if ehdr.shnum != 0 && usize::from(shentsize) != SHDR_SIZE {
            return Err(malformed(ElfPart::Sections, ElfProblem::EntrySize));
        }
        Ok(ehdr)
    }
}

/// An `Elf64_Phdr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Phdr {
    pub(super) p_type: u32,
    pub(super) flags: u32,
    pub(super) offset: u64,
    pub(super) vaddr: u64,
    pub(super) filesz: u64,
    pub(super) memsz: u64,
    pub(super) align: u64,
}

impl Phdr {
    /// Program header `index` of a table at `phoff` (the table is inside the file: checked
    /// when the code object was parsed).
    pub(super) fn read(bytes: &[u8], phoff: u64, index: u16) -> Option<Self> {
        let at = u64::from(index).checked_mul(PHDR_SIZE as u64)?.checked_add(phoff)?;
        let r = slice(bytes, at, PHDR_SIZE as u64)?;
        Some(Self {
            p_type: u32_at(r, 0)?,
            flags: u32_at(r, 4)?,
            offset: u64_at(r, 8)?,
            vaddr: u64_at(r, 16)?,
            filesz: u64_at(r, 32)?,
            memsz: u64_at(r, 40)?,
            align: u64_at(r, 48)?,
        })
    }

    /// The segment's file bytes.
    pub(super) fn file_bytes<'a>(&self, bytes: &'a [u8]) -> Option<&'a [u8]> {
        slice(bytes, self.offset, self.filesz)
    }
}

/// An `Elf64_Shdr` (the fields this crate uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shdr {
    pub(super) sh_type: u32,
    pub(super) offset: u64,
    pub(super) size: u64,
    pub(super) link: u32,
    pub(super) entsize: u64,
}

impl Shdr {
    /// Section header `index` of a table at `shoff` (inside the file: checked at parse).
    pub(super) fn read(bytes: &[u8], shoff: u64, index: u32) -> Option<Self> {
        let at = u64::from(index).checked_mul(SHDR_SIZE as u64)?.checked_add(shoff)?;
        let r = slice(bytes, at, SHDR_SIZE as u64)?;
        Some(Self {
            sh_type: u32_at(r, 4)?,
            offset: u64_at(r, 24)?,
            size: u64_at(r, 32)?,
            link: u32_at(r, 40)?,
            entsize: u64_at(r, 56)?,
        })
    }

    /// The section's file bytes.
    pub(super) fn file_bytes<'a>(&self, bytes: &'a [u8]) -> Option<&'a [u8]> {
        slice(bytes, self.offset, self.size)
    }
}

/// An `Elf64_Sym`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sym {
    pub(super) name: u32,
    pub(super) info: u8,
    pub(super) shndx: u16,
    pub(super) value: u64,
    pub(super) size: u64,
}

impl Sym {
    pub(super) fn read(entry: &[u8]) -> Option<Self> {
        Some(Self {
            name: u32_at(entry, 0)?,
            info: *entry.get(4)?,
            shndx: u16_at(entry, 6)?,
            value: u64_at(entry, 8)?,
            size: u64_at(entry, 16)?,
        })
    }
}

/// An `Elf64_Rela`: offset, type (low 32 bits of `r_info`), symbol index (high 32 bits),
/// addend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rela {
    pub(super) offset: u64,
    pub(super) kind: u32,
    pub(super) symbol: u32,
    pub(super) addend: i64,
}

impl Rela {
    pub(super) fn read(entry: &[u8]) -> Option<Self> {
        let info = u64_at(entry, 8)?;
        let [k0, k1, k2, k3, s0, s1, s2, s3] = info.to_le_bytes();
        Some(Self {
            offset: u64_at(entry, 0)?,
            kind: u32::from_le_bytes([k0, k1, k2, k3]),
            symbol: u32::from_le_bytes([s0, s1, s2, s3]),
            addend: i64::from_le_bytes(array(entry, 16)?),
        })
    }
}

/// One note record: owner name (without its NUL), type, descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Note<'a> {
    pub(super) name: &'a [u8],
    pub(super) kind: u32,
    pub(super) desc: &'a [u8],
}

/// The records of a note segment or section whose entries are aligned to `align` (4 or 8)
/// bytes. A truncated record yields one `Err` and ends the walk.
pub(super) struct Notes<'a> {
    data: &'a [u8],
    align: usize,
}

impl<'a> Notes<'a> {
    pub(super) fn new(data: &'a [u8], align: u64) -> Self {
        Self { data, align: if align == 8 { 8 } else { 4 } }
    }

    /// `n` rounded up to the record alignment.
    fn padded(&self, n: usize) -> Option<usize> {
        let mask = self.align.checked_sub(1)?;
        Some(n.checked_add(mask)? & !mask)
    }

    fn record(&self) -> Option<(Note<'a>, &'a [u8])> {
        let namesz = usize::try_from(u32_at(self.data, 0)?).ok()?;
        let descsz = usize::try_from(u32_at(self.data, 4)?).ok()?;
        let kind = u32_at(self.data, 8)?;
        let name_at = 12usize;
        let name = self.data.get(name_at..name_at.checked_add(namesz)?)?;
        let desc_at = self.padded(name_at.checked_add(namesz)?)?;
        let desc = self.data.get(desc_at..desc_at.checked_add(descsz)?)?;
        let next = self.padded(desc_at.checked_add(descsz)?)?.min(self.data.len());
        let name = name.strip_suffix(&[0]).unwrap_or(name);
        Some((Note { name, kind, desc }, self.data.get(next..)?))
    }
}

impl<'a> Iterator for Notes<'a> {
    type Item = Result<Note<'a>, CodeObjectError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.data.is_empty() {
            return None;
        }
        match self.record() {
            Some((note, rest)) => {
                self.data = rest;
                Some(Ok(note))
            }
            None => {
                self.data = &[];
                Some(Err(malformed(ElfPart::Note, ElfProblem::OutOfBounds)))
            }
        }
    }
}

/// The NUL-terminated string at `offset` of string table `table`.
pub(super) fn string_at(table: &[u8], offset: u32) -> Option<&[u8]> {
    let tail = table.get(usize::try_from(offset).ok()?..)?;
    let len = tail.iter().position(|b| *b == 0)?;
    tail.get(..len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_walk_and_stop_at_truncation() {
        // Two records (4-byte alignment): "AMDGPU\0" type 32 with 3 bytes, then a short one.
        let mut data = std::vec::Vec::new();
        data.extend_from_slice(&7u32.to_le_bytes());
        data.extend_from_slice(&3u32.to_le_bytes());
        data.extend_from_slice(&32u32.to_le_bytes());
        data.extend_from_slice(b"AMDGPU\0\0");
        data.extend_from_slice(&[1, 2, 3, 0]);
        data.extend_from_slice(&[9, 9]);
        let mut notes = Notes::new(&data, 4);
        let first = notes.next().unwrap().unwrap();
        assert_eq!((first.name, first.kind, first.desc), (&b"AMDGPU"[..], 32, &[1u8, 2, 3][..]));
        assert!(notes.next().unwrap().is_err());
        assert!(notes.next().is_none());
    }

    #[test]
    fn strings_need_a_terminator() {
        let table = b"\0abc\0de";
        assert_eq!(string_at(table, 1), Some(&b"abc"[..]));
        assert_eq!(string_at(table, 0), Some(&b""[..]));
        assert_eq!(string_at(table, 5), None);
        assert_eq!(string_at(table, 99), None);
    }
}
