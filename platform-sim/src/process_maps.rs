//! The protection of the process's own pages, as `/proc/self/maps` lists them: what the
//! simulated GPU may do with application memory it reaches without a buffer of its own (SVM
//! ranges). amdkfd maps such pages on the GPU as the CPU mapping allows (`svm_range_validate_and_map`:
//! read-only when the VMA is not writable, a fault when there is none); the simulator must
//! know it before touching them, as a store to a read-only page would kill the process.

use std::fs;

/// What the CPU mapping of a range permits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HostAccess {
    /// Every page may be written.
    pub(crate) writable: bool,
}

/// The access every page of `[start, end)` permits: `None` when a page is not mapped or not
/// readable (including `PROT_NONE` reservations), or the map cannot be read.
pub(crate) fn host_access(start: u64, end: u64) -> Option<HostAccess> {
    let maps = fs::read_to_string("/proc/self/maps").ok()?;
    access_in(&maps, start, end)
}

/// [`host_access`] over the text of a maps file (lines `start-end perms offset dev inode path`,
/// in address order).
fn access_in(maps: &str, start: u64, end: u64) -> Option<HostAccess> {
    if start >= end {
        return None;
    }
    let mut cursor = start;
    let mut writable = true;
    for line in maps.lines() {
        let mut fields = line.split_ascii_whitespace();
        let (range, perms) = (fields.next()?, fields.next()?);
        let (lo, hi) = range.split_once('-')?;
        let lo = u64::from_str_radix(lo, 16).ok()?;
        let hi = u64::from_str_radix(hi, 16).ok()?;
        if hi <= cursor {
            continue;
        }
        if lo > cursor || !perms.starts_with('r') {
            return None;
        }
        writable &= perms.as_bytes().get(1) == Some(&b'w');
        cursor = hi;
        if cursor >= end {
            return Some(HostAccess { writable });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
1000-3000 rw-p 00000000 00:00 0
3000-4000 r--p 00000000 00:00 0
4000-5000 ---p 00000000 00:00 0
6000-8000 rw-s 00000000 00:05 12 /dev/zero (deleted)
";

    #[test]
    fn ranges_take_the_strictest_protection_of_their_pages() {
        let w = Some(HostAccess { writable: true });
        let r = Some(HostAccess { writable: false });
        assert_eq!(access_in(MAPS, 0x1000, 0x3000), w);
        assert_eq!(access_in(MAPS, 0x2008, 0x2010), w);
        assert_eq!(access_in(MAPS, 0x2000, 0x4000), r, "one read-only page");
        assert_eq!(access_in(MAPS, 0x3000, 0x4000), r);
        assert_eq!(access_in(MAPS, 0x3000, 0x4001), None, "PROT_NONE");
        assert_eq!(access_in(MAPS, 0x5000, 0x6000), None, "not mapped");
        assert_eq!(access_in(MAPS, 0x6000, 0x8000), w);
        assert_eq!(access_in(MAPS, 0x7000, 0x9000), None, "past the last mapping");
        assert_eq!(access_in(MAPS, 0x0, 0x1000), None);
        assert_eq!(access_in(MAPS, 0x1000, 0x1000), None, "empty");
        assert_eq!(access_in("garbage", 0x1000, 0x2000), None);
    }

    #[test]
    fn this_process_own_pages() {
        let v = vec![0u8; 1 << 16];
        let a = v.as_ptr() as u64;
        assert_eq!(host_access(a, a + v.len() as u64), Some(HostAccess { writable: true }));
        assert_eq!(host_access(0, 4096), None, "page 0 is never mapped");
    }
}
