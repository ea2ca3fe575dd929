//! The amdkfd user-space ABI (`kfd_ioctl.h`, `kfd_sysfs.h`, KFD 1.23).
