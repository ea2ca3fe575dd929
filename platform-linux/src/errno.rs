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
    EPERM, ENOENT, ESRCH, EINTR, EIO, ENXIO, E2BIG, ENOEXEC, EBADF, ECHILD, EAGAIN, ENOMEM,
    EACCES, EFAULT, ENOTBLK, EBUSY, EEXIST, EXDEV, ENODEV, ENOTDIR, EISDIR, EINVAL, ENFILE,
    EMFILE, ENOTTY, ETXTBSY, EFBIG, ENOSPC, ESPIPE, EROFS, EMLINK, EPIPE, EDOM, ERANGE, EDEADLK,
    ENAMETOOLONG, ENOLCK, ENOSYS, ENOTEMPTY, ELOOP, ENOMSG, EIDRM, ECHRNG, EL2NSYNC, EL3HLT,
    EL3RST, ELNRNG, EUNATCH, ENOCSI, EL2HLT, EBADE, EBADR, EXFULL, ENOANO, EBADRQC, EBADSLT,
    EBFONT, ENOSTR, ENODATA, ETIME, ENOSR, ENONET, ENOPKG, EREMOTE, ENOLINK, EADV, ESRMNT,
    ECOMM, EPROTO, EMULTIHOP, EDOTDOT, EBADMSG, EOVERFLOW, ENOTUNIQ, EBADFD, EREMCHG, ELIBACC,
    ELIBBAD, ELIBSCN, ELIBMAX, ELIBEXEC, EILSEQ, ERESTART, ESTRPIPE, EUSERS, ENOTSOCK,
    EDESTADDRREQ, EMSGSIZE, EPROTOTYPE, ENOPROTOOPT, EPROTONOSUPPORT, ESOCKTNOSUPPORT,
    EOPNOTSUPP, EPFNOSUPPORT, EAFNOSUPPORT, EADDRINUSE, EADDRNOTAVAIL, ENETDOWN, ENETUNREACH,
    ENETRESET, ECONNABORTED, ECONNRESET, ENOBUFS, EISCONN, ENOTCONN, ESHUTDOWN, ETOOMANYREFS,
    ETIMEDOUT, ECONNREFUSED, EHOSTDOWN, EHOSTUNREACH, EALREADY, EINPROGRESS, ESTALE, EUCLEAN,
    ENOTNAM, ENAVAIL, EISNAM, EREMOTEIO, EDQUOT, ENOMEDIUM, EMEDIUMTYPE, ECANCELED, ENOKEY,
    EKEYEXPIRED, EKEYREVOKED, EKEYREJECTED, EOWNERDEAD, ENOTRECOVERABLE, ERFKILL, EHWPOISON,
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
