//! Error numbers: rustix's turned into core's [`Errno`], and core's named numbers proved equal
//! to the kernel's (`linux-raw-sys`, generated from the uapi headers) at compile time.

use hsakmt_core::error::Errno;

/// Core's errno for a rustix one (the same number).
pub(crate) fn from_rustix(e: rustix::io::Errno) -> Errno {
    Errno(e.raw_os_error())
}

/// Fails to compile when one of core's named errnos is not the kernel's number.
macro_rules! same_as_kernel {
    ($($name:ident),* $(,)?) => {
        /// The named errnos checked against the kernel's.
        #[cfg(test)]
        const CHECKED: &[Errno] = &[$(Errno::$name),*];
        $(
            const _: () = assert!(
                Errno::$name.0 as u32 == linux_raw_sys::errno::$name,
                concat!("core's ", stringify!($name), " is not the kernel's")
            );
        )*
    };
}

same_as_kernel! {
    EPERM, ENOENT, ESRCH, EINTR, EIO, ENXIO, E2BIG, EBADF, EAGAIN, ENOMEM, EACCES, EFAULT,
    EBUSY, EEXIST, ENODEV, ENOTDIR, EISDIR, EINVAL, ENFILE, EMFILE, ENOTTY, ENOSPC, EPIPE, ERANGE,
    ENOSYS, ENODATA, ETIME, EOVERFLOW, EOPNOTSUPP, EADDRINUSE, EALREADY, ETIMEDOUT, ECANCELED,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_errno_is_checked_but_the_kernel_internal_one() {
        let unchecked: Vec<&Errno> = Errno::ALL.iter().filter(|e| !CHECKED.contains(e)).collect();
        // `ERESTARTSYS` (512) lives in the kernel's private `linux/errno.h`, not in the uapi.
        assert_eq!(unchecked, [&Errno::ERESTARTSYS]);
        assert_eq!(from_rustix(rustix::io::Errno::NOTTY), Errno::ENOTTY);
    }
}
