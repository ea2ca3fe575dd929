//! A NUL-terminated path in a fixed buffer, so building sysfs and device paths never allocates.

use core::ffi::CStr;

use hsakmt_core::error::Errno;

/// Capacity in bytes, including the terminating NUL.
pub const PATH_CAPACITY: usize = 512;

/// A path of at most `PATH_CAPACITY - 1` bytes, always NUL-terminated.
#[derive(Clone)]
pub struct FixedPath {
    buf: [u8; PATH_CAPACITY],
    len: usize,
}

impl Default for FixedPath {
    fn default() -> Self {
        Self { buf: [0; PATH_CAPACITY], len: 0 }
    }
}

impl FixedPath {
    /// A path holding `bytes` (which must not contain NUL).
    ///
    /// # Errors
    /// [`Errno::EINVAL`] for an interior NUL, [`Errno::ENAMETOOLONG`] when it does not fit.
    pub fn new(bytes: &[u8]) -> Result<Self, Errno> {
        let mut p = Self::default();
        p.append(bytes)?;
        Ok(p)
    }

    /// The path without its NUL.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }

    /// The path as a C string.
    #[must_use]
    pub fn as_c_str(&self) -> &CStr {
        // The buffer always holds a NUL at `len` and none before it.
        self.buf
            .get(..=self.len)
            .and_then(|b| CStr::from_bytes_with_nul(b).ok())
            .unwrap_or_default()
    }

    fn append(&mut self, bytes: &[u8]) -> Result<(), Errno> {
        if bytes.contains(&0) {
            return Err(Errno::EINVAL);
        }
        let end = self.len + bytes.len();
        // Keep one byte for the NUL.
        let dst = self.buf.get_mut(self.len..end).filter(|_| end < PATH_CAPACITY);
        let dst = dst.ok_or(Errno::ENAMETOOLONG)?;
        dst.copy_from_slice(bytes);
        self.len = end;
        if let Some(nul) = self.buf.get_mut(end) {
            *nul = 0;
        }
        Ok(())
    }

    /// Appends `/` (unless the path is empty or already ends with one) and `component`.
    ///
    /// # Errors
    /// As [`FixedPath::new`].
    pub fn push_str(&mut self, component: &str) -> Result<(), Errno> {
        if self.len > 0 && self.as_bytes().last() != Some(&b'/') {
            self.append(b"/")?;
        }
        self.append(component.as_bytes())
    }

    /// Appends `/` and the decimal form of `n`.
    ///
    /// # Errors
    /// As [`FixedPath::new`].
    pub fn push_num(&mut self, n: u32) -> Result<(), Errno> {
        let mut digits = [0u8; 10];
        let text = decimal(n, &mut digits);
        self.push_str(core::str::from_utf8(text).map_err(|_| Errno::EINVAL)?)
    }
}

/// `n` in decimal, written at the end of `digits` (a `u32` has at most 10).
pub(crate) fn decimal(n: u32, digits: &mut [u8; 10]) -> &[u8] {
    let mut i = digits.len();
    let mut v = n;
    loop {
        i -= 1;
        if let Some(d) = digits.get_mut(i) {
            // `v % 10 < 10`, so the cast cannot truncate.
            *d = b'0' + (v % 10) as u8;
        }
        v /= 10;
        if v == 0 {
            break;
        }
    }
    digits.get(i..).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_paths() {
        let mut p = FixedPath::new(b"/sys/x/").unwrap();
        p.push_str("nodes").unwrap();
        p.push_num(0).unwrap();
        p.push_num(4_294_967_295).unwrap();
        assert_eq!(p.as_bytes(), b"/sys/x/nodes/0/4294967295");
        assert_eq!(p.as_c_str().to_bytes(), p.as_bytes());
        assert_eq!(FixedPath::new(b"a\0b").err(), Some(Errno::EINVAL));
        let long = [b'a'; PATH_CAPACITY];
        assert_eq!(FixedPath::new(&long).err(), Some(Errno::ENAMETOOLONG));
        assert!(FixedPath::new(&long[..PATH_CAPACITY - 1]).is_ok());
    }
}
