//! The embedded-archive format: files (and directories) packed into one DEFLATE-compressed
//! blob at build time, so data that compresses well costs the binary a fraction of its size.
//! The simulator's `build.rs` packs its topology profiles with it (sysfs text compresses about
//! 15:1) and `hsakmt`'s packs the code objects `hsakmt run` dispatches; both include this file
//! (`#[path]`) to write archives, and unpack them at run time with [`unpack`] and [`records`].
//!
//! Records, back to back: a tag byte (`f` file, `d` directory), the path length (`u32` LE),
//! the path (UTF-8), and for files the content length (`u32` LE) and the content.

/// One record of an archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// A directory, by path.
    Dir(&'a str),
    /// A file: its path and its bytes.
    File(&'a str, &'a [u8]),
}

/// Appends a record to `archive`: a file when `content` is given, else a directory.
///
/// # Panics
/// For a path or content longer than 4 GiB (build time only).
#[allow(dead_code, reason = "used by the build scripts that include this file")]
pub fn write_record(archive: &mut Vec<u8>, path: &str, content: Option<&[u8]>) {
    archive.push(if content.is_some() { b'f' } else { b'd' });
    let len = |n: usize| u32::try_from(n).expect("an archive entry below 4 GiB").to_le_bytes();
    archive.extend_from_slice(&len(path.len()));
    archive.extend_from_slice(path.as_bytes());
    if let Some(c) = content {
        archive.extend_from_slice(&len(c.len()));
        archive.extend_from_slice(c);
    }
}

/// Compresses an archive (DEFLATE, best compression).
#[allow(dead_code, reason = "used by the build scripts that include this file")]
#[must_use]
pub fn pack(archive: &[u8]) -> Vec<u8> {
    miniz_oxide::deflate::compress_to_vec(archive, 9)
}

/// Decompresses a packed archive of `raw_len` bytes (`None` when it is corrupt or longer).
#[allow(dead_code, reason = "not every includer unpacks")]
#[must_use]
pub fn unpack(packed: &[u8], raw_len: usize) -> Option<Vec<u8>> {
    miniz_oxide::inflate::decompress_to_vec_with_limit(packed, raw_len).ok()
}

/// The records of an unpacked archive; `None` at the first malformed byte (and nothing after).
#[allow(dead_code, reason = "not every includer unpacks")]
pub fn records(mut bytes: &[u8]) -> impl Iterator<Item = Option<Record<'_>>> {
    fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, tail) = (bytes.get(..n)?, bytes.get(n..)?);
        *bytes = tail;
        Some(head)
    }
    fn len(bytes: &mut &[u8]) -> Option<usize> {
        let b: [u8; 4] = take(bytes, 4)?.try_into().ok()?;
        usize::try_from(u32::from_le_bytes(b)).ok()
    }
    std::iter::from_fn(move || {
        if bytes.is_empty() {
            return None;
        }
        let mut parse = || {
            let tag = *take(&mut bytes, 1)?.first()?;
            let n = len(&mut bytes)?;
            let path = std::str::from_utf8(take(&mut bytes, n)?).ok()?;
            match tag {
                b'd' => Some(Record::Dir(path)),
                b'f' => {
                    let n = len(&mut bytes)?;
                    Some(Record::File(path, take(&mut bytes, n)?))
                }
                _ => None,
            }
        };
        let r = parse();
        if r.is_none() {
            bytes = &[];
        }
        Some(r)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_malformed_input() {
        let mut a = Vec::new();
        write_record(&mut a, "nodes", None);
        write_record(&mut a, "nodes/0/properties", Some(b"simd_count 4\n"));
        let packed = pack(&a);
        let raw = unpack(&packed, a.len()).unwrap();
        let got: Vec<_> = records(&raw).collect();
        assert_eq!(
            got,
            [
                Some(Record::Dir("nodes")),
                Some(Record::File("nodes/0/properties", b"simd_count 4\n"))
            ]
        );
        assert_eq!(unpack(&packed, a.len() - 1), None, "longer than announced");
        assert_eq!(records(&raw[..raw.len() - 2]).last(), Some(None), "truncated");
        assert_eq!(records(b"x\0\0\0\0").collect::<Vec<_>>(), [None], "unknown tag");
    }
}
