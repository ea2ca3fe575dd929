//! Errors shared by every module: the [`ErrorKind`] each module's small error type maps to, the
//! Linux [`Errno`] values a platform reports, and libhsakmt's [`HsakmtStatus`] codes.
//!
//! Each module has its own small `Copy` error enum (for example `topology::Error`); all of
//! them implement [`Error`], so callers can branch on [`Error::kind`] without knowing the module.

use core::fmt;

/// What went wrong, independent of the module that reported it.
///
/// New kinds may be added; match with a wildcard arm.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ErrorKind {
    /// An argument is out of range, malformed, or inconsistent with another argument.
    InvalidArgument,
    /// A handle is unknown, stale (its slot was reused) or belongs to another object kind.
    InvalidHandle,
    /// A node id does not name a node of the topology (or the node lacks the needed agent).
    InvalidNode,
    /// A fixed compile-time capacity is exhausted.
    CapacityExhausted,
    /// The device or an address space has no room left (VRAM, VA aperture, ring).
    OutOfResources,
    /// The kernel (or the version it reported) does not support the operation.
    NotSupported,
    /// The resource is in use and cannot change now (queues alive, buffer referenced).
    Busy,
    /// `/dev/kfd` is not open in this process (never opened, closed, or this is a forked child).
    NotOpened,
    /// `/dev/kfd` was already open; the open count was incremented.
    AlreadyOpened,
    /// The kernel driver is missing (amdgpu/amdkfd not loaded, no `/dev/kfd`).
    NoDevice,
    /// The caller lacks permission (device node group, cgroup, capability).
    PermissionDenied,
    /// The kernel interface version is incompatible.
    DriverMismatch,
    /// Text or binary data from the kernel or a file does not have the expected form.
    Malformed,
    /// The kernel state changed while it was being read, and retries ran out.
    Inconsistent,
    /// A wait ended because its timeout expired.
    Timeout,
    /// A wait failed.
    WaitFailed,
    /// Memory is already registered.
    AlreadyRegistered,
    /// Memory is not registered / not known to the library.
    NotRegistered,
    /// An address or size is not aligned as required.
    Misaligned,
    /// The GPU or a queue reported an error (queue fault, reset).
    DeviceFault,
    /// A call libhsakmt declares but no longer implements.
    NotImplemented,
    /// An I/O or system call failed with an errno not covered by a more specific kind.
    Io,
}

impl ErrorKind {
    /// The libhsakmt status code a C caller would see for this kind.
    #[must_use]
    pub const fn status(self) -> HsakmtStatus {
        match self {
            Self::InvalidArgument | Self::Malformed => HsakmtStatus::InvalidParameter,
            Self::InvalidHandle => HsakmtStatus::InvalidHandle,
            Self::InvalidNode => HsakmtStatus::InvalidNodeUnit,
            Self::CapacityExhausted | Self::OutOfResources => HsakmtStatus::OutOfResources,
            Self::NotSupported => HsakmtStatus::NotSupported,
            Self::Busy => HsakmtStatus::Unavailable,
            Self::NotOpened => HsakmtStatus::KernelIoChannelNotOpened,
            Self::AlreadyOpened => HsakmtStatus::KernelAlreadyOpened,
            Self::NoDevice | Self::PermissionDenied | Self::Io => {
                HsakmtStatus::KernelCommunicationError
            }
            Self::DriverMismatch => HsakmtStatus::DriverMismatch,
            Self::Inconsistent | Self::DeviceFault => HsakmtStatus::Error,
            Self::Timeout => HsakmtStatus::WaitTimeout,
            Self::WaitFailed => HsakmtStatus::WaitFailure,
            Self::AlreadyRegistered => HsakmtStatus::MemoryAlreadyRegistered,
            Self::NotRegistered => HsakmtStatus::MemoryNotRegistered,
            Self::Misaligned => HsakmtStatus::MemoryAlignment,
            Self::NotImplemented => HsakmtStatus::NotImplemented,
        }
    }
}

/// Implemented by every error type of this crate.
pub trait Error: fmt::Debug + fmt::Display {
    /// The shared classification of this error.
    fn kind(&self) -> ErrorKind;
}

/// libhsakmt's `HSAKMT_STATUS` values (`hsakmttypes.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u32)]
pub enum HsakmtStatus {
    /// `HSAKMT_STATUS_SUCCESS`
    Success = 0,
    /// `HSAKMT_STATUS_ERROR`
    Error = 1,
    /// `HSAKMT_STATUS_DRIVER_MISMATCH`
    DriverMismatch = 2,
    /// `HSAKMT_STATUS_INVALID_PARAMETER`
    InvalidParameter = 3,
    /// `HSAKMT_STATUS_INVALID_HANDLE`
    InvalidHandle = 4,
    /// `HSAKMT_STATUS_INVALID_NODE_UNIT`
    InvalidNodeUnit = 5,
    /// `HSAKMT_STATUS_NO_MEMORY`
    NoMemory = 6,
    /// `HSAKMT_STATUS_BUFFER_TOO_SMALL`
    BufferTooSmall = 7,
    /// `HSAKMT_STATUS_NOT_IMPLEMENTED`
    NotImplemented = 10,
    /// `HSAKMT_STATUS_NOT_SUPPORTED`
    NotSupported = 11,
    /// `HSAKMT_STATUS_UNAVAILABLE`
    Unavailable = 12,
    /// `HSAKMT_STATUS_OUT_OF_RESOURCES`
    OutOfResources = 13,
    /// `HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED`
    KernelIoChannelNotOpened = 20,
    /// `HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR`
    KernelCommunicationError = 21,
    /// `HSAKMT_STATUS_KERNEL_ALREADY_OPENED`
    KernelAlreadyOpened = 22,
    /// `HSAKMT_STATUS_HSAMMU_UNAVAILABLE`
    HsammuUnavailable = 23,
    /// `HSAKMT_STATUS_WAIT_FAILURE`
    WaitFailure = 30,
    /// `HSAKMT_STATUS_WAIT_TIMEOUT`
    WaitTimeout = 31,
    /// `HSAKMT_STATUS_MEMORY_ALREADY_REGISTERED`
    MemoryAlreadyRegistered = 35,
    /// `HSAKMT_STATUS_MEMORY_NOT_REGISTERED`
    MemoryNotRegistered = 36,
    /// `HSAKMT_STATUS_MEMORY_ALIGNMENT`
    MemoryAlignment = 37,
}

/// A Linux error number, as a platform reports the failure of a system call.
///
/// The values are the asm-generic numbers used by x86_64 and aarch64 Linux. Every number of
/// the uapi headers (`asm-generic/errno-base.h`, `asm-generic/errno.h`: 1 to 133) has a name
/// and a meaning here — the aliases `EWOULDBLOCK`, `EDEADLOCK` and `ENOTSUP` share the numbers
/// of `EAGAIN`, `EDEADLK` and `EOPNOTSUPP` — plus the kernel-internal `ERESTARTSYS`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Errno(pub i32);

macro_rules! errnos {
    ($($name:ident = $val:expr, $text:expr;)*) => {
        impl Errno {
            $(
                #[doc = $text]
                pub const $name: Errno = Errno($val);
            )*
            /// Every errno this crate names, for sweeps over failure modes.
            pub const ALL: &'static [Errno] = &[$(Errno::$name),*];

            /// The symbolic name (`"EPERM"`), or `None` for a number this crate does not name.
            #[must_use]
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($val => Some(stringify!($name)),)*
                    _ => None,
                }
            }

            /// A short description (`"operation not permitted"`).
            #[must_use]
            pub const fn description(self) -> &'static str {
                match self.0 {
                    $($val => $text,)*
                    _ => "unknown error",
                }
            }
        }
    };
}

errnos! {
    EPERM = 1, "operation not permitted";
    ENOENT = 2, "no such file or directory";
    ESRCH = 3, "no such process";
    EINTR = 4, "interrupted system call";
    EIO = 5, "input/output error";
    ENXIO = 6, "no such device or address";
    E2BIG = 7, "argument list too long";
    ENOEXEC = 8, "exec format error";
    EBADF = 9, "bad file descriptor";
    ECHILD = 10, "no child processes";
    EAGAIN = 11, "resource temporarily unavailable";
    ENOMEM = 12, "cannot allocate memory";
    EACCES = 13, "permission denied";
    EFAULT = 14, "bad address";
    ENOTBLK = 15, "block device required";
    EBUSY = 16, "device or resource busy";
    EEXIST = 17, "file exists";
    EXDEV = 18, "cross-device link";
    ENODEV = 19, "no such device";
    ENOTDIR = 20, "not a directory";
    EISDIR = 21, "is a directory";
    EINVAL = 22, "invalid argument";
    ENFILE = 23, "too many open files in system";
    EMFILE = 24, "too many open files";
    ENOTTY = 25, "inappropriate ioctl for device";
    ETXTBSY = 26, "text file busy";
    EFBIG = 27, "file too large";
    ENOSPC = 28, "no space left on device";
    ESPIPE = 29, "illegal seek";
    EROFS = 30, "read-only file system";
    EMLINK = 31, "too many links";
    EPIPE = 32, "broken pipe";
    EDOM = 33, "numerical argument out of domain";
    ERANGE = 34, "numerical result out of range";
    EDEADLK = 35, "resource deadlock avoided";
    ENAMETOOLONG = 36, "file name too long";
    ENOLCK = 37, "no locks available";
    ENOSYS = 38, "function not implemented";
    ENOTEMPTY = 39, "directory not empty";
    ELOOP = 40, "too many levels of symbolic links";
    ENOMSG = 42, "no message of desired type";
    EIDRM = 43, "identifier removed";
    ECHRNG = 44, "channel number out of range";
    EL2NSYNC = 45, "level 2 not synchronized";
    EL3HLT = 46, "level 3 halted";
    EL3RST = 47, "level 3 reset";
    ELNRNG = 48, "link number out of range";
    EUNATCH = 49, "protocol driver not attached";
    ENOCSI = 50, "no CSI structure available";
    EL2HLT = 51, "level 2 halted";
    EBADE = 52, "invalid exchange";
    EBADR = 53, "invalid request descriptor";
    EXFULL = 54, "exchange full";
    ENOANO = 55, "no anode";
    EBADRQC = 56, "invalid request code";
    EBADSLT = 57, "invalid slot";
    EBFONT = 59, "bad font file format";
    ENOSTR = 60, "device not a stream";
    ENODATA = 61, "no data available";
    ETIME = 62, "timer expired";
    ENOSR = 63, "out of streams resources";
    ENONET = 64, "machine is not on the network";
    ENOPKG = 65, "package not installed";
    EREMOTE = 66, "object is remote";
    ENOLINK = 67, "link has been severed";
    EADV = 68, "advertise error";
    ESRMNT = 69, "srmount error";
    ECOMM = 70, "communication error on send";
    EPROTO = 71, "protocol error";
    EMULTIHOP = 72, "multihop attempted";
    EDOTDOT = 73, "RFS specific error";
    EBADMSG = 74, "bad message";
    EOVERFLOW = 75, "value too large for defined data type";
    ENOTUNIQ = 76, "name not unique on network";
    EBADFD = 77, "file descriptor in bad state";
    EREMCHG = 78, "remote address changed";
    ELIBACC = 79, "can not access a needed shared library";
    ELIBBAD = 80, "accessing a corrupted shared library";
    ELIBSCN = 81, ".lib section in a.out corrupted";
    ELIBMAX = 82, "attempting to link in too many shared libraries";
    ELIBEXEC = 83, "cannot exec a shared library directly";
    EILSEQ = 84, "invalid or incomplete multibyte or wide character";
    ERESTART = 85, "interrupted system call should be restarted";
    ESTRPIPE = 86, "streams pipe error";
    EUSERS = 87, "too many users";
    ENOTSOCK = 88, "socket operation on non-socket";
    EDESTADDRREQ = 89, "destination address required";
    EMSGSIZE = 90, "message too long";
    EPROTOTYPE = 91, "protocol wrong type for socket";
    ENOPROTOOPT = 92, "protocol not available";
    EPROTONOSUPPORT = 93, "protocol not supported";
    ESOCKTNOSUPPORT = 94, "socket type not supported";
    EOPNOTSUPP = 95, "operation not supported";
    EPFNOSUPPORT = 96, "protocol family not supported";
    EAFNOSUPPORT = 97, "address family not supported by protocol";
    EADDRINUSE = 98, "address already in use";
    EADDRNOTAVAIL = 99, "cannot assign requested address";
    ENETDOWN = 100, "network is down";
    ENETUNREACH = 101, "network is unreachable";
    ENETRESET = 102, "network dropped connection on reset";
    ECONNABORTED = 103, "software caused connection abort";
    ECONNRESET = 104, "connection reset by peer";
    ENOBUFS = 105, "no buffer space available";
    EISCONN = 106, "transport endpoint is already connected";
    ENOTCONN = 107, "transport endpoint is not connected";
    ESHUTDOWN = 108, "cannot send after transport endpoint shutdown";
    ETOOMANYREFS = 109, "too many references: cannot splice";
    ETIMEDOUT = 110, "connection timed out";
    ECONNREFUSED = 111, "connection refused";
    EHOSTDOWN = 112, "host is down";
    EHOSTUNREACH = 113, "no route to host";
    EALREADY = 114, "operation already in progress";
    EINPROGRESS = 115, "operation now in progress";
    ESTALE = 116, "stale file handle";
    EUCLEAN = 117, "structure needs cleaning";
    ENOTNAM = 118, "not a XENIX named type file";
    ENAVAIL = 119, "no XENIX semaphores available";
    EISNAM = 120, "is a named type file";
    EREMOTEIO = 121, "remote I/O error";
    EDQUOT = 122, "disk quota exceeded";
    ENOMEDIUM = 123, "no medium found";
    EMEDIUMTYPE = 124, "wrong medium type";
    ECANCELED = 125, "operation canceled";
    ENOKEY = 126, "required key not available";
    EKEYEXPIRED = 127, "key has expired";
    EKEYREVOKED = 128, "key has been revoked";
    EKEYREJECTED = 129, "key was rejected by service";
    EOWNERDEAD = 130, "owner died";
    ENOTRECOVERABLE = 131, "state not recoverable";
    ERFKILL = 132, "operation not possible due to RF-kill";
    EHWPOISON = 133, "memory page has hardware error";
    ERESTARTSYS = 512, "interrupted, restart (kernel-internal)";
}

impl Errno {
    /// The shared [`ErrorKind`] for a failed system call with this errno.
    #[must_use]
    pub const fn kind(self) -> ErrorKind {
        match self {
            Self::EPERM | Self::EACCES => ErrorKind::PermissionDenied,
            Self::ENOENT | Self::ENODEV | Self::ENXIO => ErrorKind::NoDevice,
            Self::EINVAL
            | Self::EFAULT
            | Self::E2BIG
            | Self::ERANGE
            | Self::EOVERFLOW
            | Self::ENAMETOOLONG => ErrorKind::InvalidArgument,
            Self::ENOMEM | Self::ENOSPC => ErrorKind::OutOfResources,
            Self::EBUSY | Self::EAGAIN | Self::EEXIST | Self::EADDRINUSE | Self::EALREADY => {
                ErrorKind::Busy
            }
            Self::ENOTTY | Self::ENOSYS | Self::EOPNOTSUPP => ErrorKind::NotSupported,
            Self::EBADF | Self::ESRCH => ErrorKind::NotOpened,
            Self::ETIME | Self::ETIMEDOUT => ErrorKind::Timeout,
            _ => ErrorKind::Io,
        }
    }

    /// Whether an ioctl failing with this errno should simply be issued again (a signal
    /// interrupted it), as libhsakmt's `hsakmt_ioctl` does.
    #[must_use]
    pub const fn is_retryable(self) -> bool {
        matches!(self, Self::EINTR | Self::EAGAIN | Self::ERESTARTSYS)
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "Errno({})", self.0),
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n} ({})", self.description()),
            None => write!(f, "errno {} (not a Linux error number)", self.0),
        }
    }
}

impl Error for Errno {
    fn kind(&self) -> ErrorKind {
        Errno::kind(*self)
    }
}

impl core::error::Error for Errno {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_names_round_trip() {
        for e in Errno::ALL {
            let name = e.name().unwrap();
            assert!(name.starts_with('E'));
            assert_ne!(e.description(), "unknown error");
        }
        assert_eq!(Errno(9999).name(), None);
        assert_eq!(std::format!("{}", Errno(9999)), "errno 9999 (not a Linux error number)");
        // Every number of the uapi headers has a name, but the two aliases' own slots.
        let unnamed: std::vec::Vec<i32> =
            (1..=133).filter(|n| Errno(*n).name().is_none()).collect();
        assert_eq!(unnamed, [41, 58]);
        assert_eq!(std::format!("{}", Errno(40)), "ELOOP (too many levels of symbolic links)");
        assert_eq!(Errno::EPERM.kind(), ErrorKind::PermissionDenied);
        assert!(Errno::EINTR.is_retryable());
        assert!(!Errno::EINVAL.is_retryable());
    }

    #[test]
    fn status_codes_match_hsakmttypes() {
        assert_eq!(ErrorKind::Timeout.status() as u32, 31);
        assert_eq!(ErrorKind::NotOpened.status() as u32, 20);
        assert_eq!(ErrorKind::AlreadyOpened.status() as u32, 22);
        assert_eq!(ErrorKind::InvalidNode.status() as u32, 5);
    }
}
