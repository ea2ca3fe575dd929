//! Byte images of uapi values: what `copy_from_user` / `copy_to_user` move, built without
//! `unsafe`.

/// A value with a fixed C layout that converts to and from its byte image.
///
/// The image is native-endian and laid out exactly like the C type: fields at their
/// `offsetof`, padding bytes zero. Both directions are total and follow amdkfd's rules for user
/// structs of a different size (`kfd_ioctl` in `kfd_chardev.c` copies `_IOC_SIZE(cmd)` bytes in,
/// zero-fills up to its own size, and copies `_IOC_SIZE(cmd)` bytes back):
/// - [`read_from`](Self::read_from) reads bytes missing from a short input as zero and ignores
///   bytes beyond [`SIZE`](Self::SIZE);
/// - [`write_to`](Self::write_to) writes only the bytes that fit.
///
/// Implemented for the fixed-width integers, arrays of implementors, every uapi struct and the
/// storage types of the anonymous unions.
pub trait UapiType: Copy {
    /// `sizeof` of the C type, in bytes.
    const SIZE: usize;

    /// Builds a value from its byte image (short input zero-extended, extra bytes ignored).
    fn read_from(bytes: &[u8]) -> Self;

    /// Writes the byte image to the first `min(SIZE, out.len())` bytes of `out`, padding as
    /// zero; the rest of `out` is left untouched.
    fn write_to(&self, out: &mut [u8]);

    /// The byte image in an array of `N` bytes (truncated, or zero-extended past
    /// [`SIZE`](Self::SIZE)).
    #[must_use]
    fn to_bytes<const N: usize>(&self) -> [u8; N] {
        let mut out = [0u8; N];
        self.write_to(&mut out);
        out
    }
}

/// `bytes[offset..]`, or an empty slice past the end.
pub(crate) fn tail(bytes: &[u8], offset: usize) -> &[u8] {
    bytes.get(offset..).unwrap_or(&[])
}

/// `out[offset..]`, or an empty slice past the end.
pub(crate) fn tail_mut(out: &mut [u8], offset: usize) -> &mut [u8] {
    match out.get_mut(offset..) {
        Some(rest) => rest,
        None => &mut [],
    }
}

/// Zeroes the first `len` bytes of `out` (fewer if `out` is shorter).
pub(crate) fn zero_prefix(out: &mut [u8], len: usize) {
    for byte in out.iter_mut().take(len) {
        *byte = 0;
    }
}

/// Copies as many bytes as both slices hold.
fn copy_prefix(dst: &mut [u8], src: &[u8]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s;
    }
}

macro_rules! impl_uapi_int {
    ($($t:ty),*) => {$(
        impl UapiType for $t {
            const SIZE: usize = ::core::mem::size_of::<$t>();

            fn read_from(bytes: &[u8]) -> Self {
                let mut image = [0u8; ::core::mem::size_of::<$t>()];
                copy_prefix(&mut image, bytes);
                <$t>::from_ne_bytes(image)
            }

            fn write_to(&self, out: &mut [u8]) {
                copy_prefix(out, &self.to_ne_bytes());
            }
        }
    )*};
}

impl_uapi_int!(u8, u16, u32, u64, i8, i16, i32, i64);

impl<T: UapiType, const N: usize> UapiType for [T; N] {
    const SIZE: usize = T::SIZE * N;

    fn read_from(bytes: &[u8]) -> Self {
        core::array::from_fn(|i| T::read_from(tail(bytes, i.saturating_mul(T::SIZE))))
    }

    fn write_to(&self, out: &mut [u8]) {
        for (i, element) in self.iter().enumerate() {
            element.write_to(tail_mut(out, i.saturating_mul(T::SIZE)));
        }
    }
}
