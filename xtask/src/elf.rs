//! Just enough ELF64 reading to tell whether an executable is static: no `PT_INTERP`, no
//! `DT_NEEDED`, and whether it still has a symbol table.

use std::path::Path;

/// What `readelf -l -d -S` would show about linkage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Linkage {
    /// `ET_EXEC` (2) or `ET_DYN` (3, a PIE or static PIE).
    pub(crate) elf_type: u16,
    /// The `PT_INTERP` path, when there is one.
    pub(crate) interpreter: Option<String>,
    /// Whether there is a `PT_DYNAMIC` segment (a static PIE has one for self-relocation).
    pub(crate) dynamic: bool,
    /// `DT_NEEDED` entries (as string-table offsets; any entry means shared libraries).
    pub(crate) needed: usize,
    /// Whether a `.symtab` section is present (not stripped).
    pub(crate) symtab: bool,
}

impl Linkage {
    /// Static: no interpreter, no shared libraries.
    pub(crate) fn is_static(&self) -> bool {
        self.interpreter.is_none() && self.needed == 0
    }

    /// `static`, `static-pie` or `dynamic`, for reports.
    pub(crate) fn describe(&self) -> &'static str {
        match (self.is_static(), self.elf_type, self.dynamic) {
            (false, _, _) => "dynamic",
            (true, 3, _) => "static-pie",
            (true, _, false) => "static",
            (true, _, true) => "static (with a dynamic section)",
        }
    }
}

const PT_DYNAMIC: u32 = 2;
const PT_INTERP: u32 = 3;
const DT_NEEDED: u64 = 1;
const SHT_SYMTAB: u32 = 2;

fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(off..off + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
}
fn usize_at(b: &[u8], off: usize) -> Option<usize> {
    usize::try_from(u64_at(b, off)?).ok()
}

/// Reads the linkage facts of the little-endian ELF64 file at `path`.
pub(crate) fn linkage(path: &Path) -> Result<Linkage, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&bytes).ok_or_else(|| format!("{} is not a little-endian ELF64 file", path.display()))
}

fn parse(b: &[u8]) -> Option<Linkage> {
    if b.get(..4)? != b"\x7fELF" || *b.get(4)? != 2 || *b.get(5)? != 1 {
        return None;
    }
    let elf_type = u16_at(b, 16)?;
    let (phoff, phentsize, phnum) =
        (usize_at(b, 32)?, usize::from(u16_at(b, 54)?), usize::from(u16_at(b, 56)?));
    let (shoff, shentsize, shnum) =
        (usize_at(b, 40)?, usize::from(u16_at(b, 58)?), usize::from(u16_at(b, 60)?));
    let mut linkage =
        Linkage { elf_type, interpreter: None, dynamic: false, needed: 0, symtab: false };
    for i in 0..phnum {
        let ph = phoff + i * phentsize;
        let (offset, filesz) = (usize_at(b, ph + 8)?, usize_at(b, ph + 32)?);
        let contents = b.get(offset..offset.checked_add(filesz)?)?;
        match u32_at(b, ph)? {
            PT_INTERP => {
                let path = contents.split(|&c| c == 0).next().unwrap_or_default();
                linkage.interpreter = Some(String::from_utf8_lossy(path).into_owned());
            }
            PT_DYNAMIC => {
                linkage.dynamic = true;
                linkage.needed += contents
                    .chunks_exact(16)
                    .filter(|entry| u64_at(entry, 0) == Some(DT_NEEDED))
                    .count();
            }
            _ => {}
        }
    }
    for i in 0..shnum {
        if u32_at(b, shoff + i * shentsize + 4)? == SHT_SYMTAB {
            linkage.symtab = true;
        }
    }
    Some(linkage)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_test_binary_is_dynamic_or_static_pie() {
        let exe = std::env::current_exe().unwrap();
        let l = linkage(&exe).unwrap();
        // Test binaries are linked against libc the ordinary way.
        assert!(l.interpreter.is_some() || l.elf_type == 3, "{l:?}");
        assert!(parse(b"not an elf").is_none());
    }
}
