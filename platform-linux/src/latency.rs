//! Latency controls for dedicated appliances: lock memory, pin the submitting thread to a CPU,
//! realtime scheduling. Each returns the kernel's errno when not permitted, so a caller can
//! report what it could not do.

use hsakmt_core::error::Errno;
use linux_raw_sys::general::SCHED_FIFO;

use crate::errno::from_rustix;

/// Locks the process's current and future memory (`mlockall(MCL_CURRENT | MCL_FUTURE)`), so
/// page faults cannot stall the loop.
///
/// # Errors
/// `ENOMEM` when the memlock limit is too small, `EPERM` without permission.
pub fn lock_memory() -> Result<(), Errno> {
    rustix::mm::mlockall(rustix::mm::MlockAllFlags::CURRENT | rustix::mm::MlockAllFlags::FUTURE)
        .map_err(from_rustix)
}

/// Pins the calling thread to CPU `cpu`.
///
/// # Errors
/// `EINVAL` for a CPU the thread may not use.
pub fn pin_current_thread(cpu: usize) -> Result<(), Errno> {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set).map_err(from_rustix)
}

/// The CPUs the calling thread may run on, lowest first (at most `out.len()`); returns how
/// many were stored.
///
/// # Errors
/// The errno of `sched_getaffinity`.
pub fn allowed_cpus(out: &mut [usize]) -> Result<usize, Errno> {
    let set = rustix::thread::sched_getaffinity(None).map_err(from_rustix)?;
    let mut n = 0;
    for cpu in 0..rustix::thread::CpuSet::MAX_CPU {
        if set.is_set(cpu) {
            let Some(slot) = out.get_mut(n) else { break };
            *slot = cpu;
            n += 1;
        }
    }
    Ok(n)
}

/// Runs the calling thread under `SCHED_FIFO` at `priority` (1–99).
///
/// # Errors
/// `EPERM` without `CAP_SYS_NICE` or an `RLIMIT_RTPRIO` of at least `priority`; `EINVAL` for a
/// priority out of range; `ENOSYS` on architectures this crate has no system-call entry for.
pub fn set_realtime(priority: u32) -> Result<(), Errno> {
    if !(1..=99).contains(&priority) {
        return Err(Errno::EINVAL);
    }
    let param: [i32; 1] = [i32::try_from(priority).map_err(|_| Errno::EINVAL)?];
    sched_setscheduler(SCHED_FIFO as usize, &param)
}

#[cfg(target_arch = "x86_64")]
fn sched_setscheduler(policy: usize, param: &[i32; 1]) -> Result<(), Errno> {
    use linux_raw_sys::general::__NR_sched_setscheduler;

    let ret: isize;
    // SAFETY: `sched_setscheduler(0, policy, &param)` reads one `struct sched_param` (a single
    // int) from `param`, which is a live, initialised `[i32; 1]` borrowed for the call; the
    // syscall writes no user memory, and rcx/r11 are declared clobbered as the `syscall`
    // instruction requires.
    unsafe {
        core::arch::asm!(
            "syscall",
            inlateout("rax") __NR_sched_setscheduler as isize => ret,
            in("rdi") 0usize,
            in("rsi") policy,
            in("rdx") param.as_ptr(),
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    if ret < 0 { Err(Errno(i32::try_from(-ret).unwrap_or(i32::MAX))) } else { Ok(()) }
}

#[cfg(not(target_arch = "x86_64"))]
fn sched_setscheduler(_policy: usize, _param: &[i32; 1]) -> Result<(), Errno> {
    Err(Errno::ENOSYS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_and_affinity() {
        let mut cpus = [0usize; 64];
        let n = allowed_cpus(&mut cpus).unwrap();
        assert!(n >= 1);
        std::thread::spawn(move || pin_current_thread(cpus[0])).join().unwrap().unwrap();
        assert_eq!(set_realtime(0), Err(Errno::EINVAL));
        // Realtime needs permission; either way the call reports a result, not a crash.
        let r = std::thread::spawn(|| set_realtime(1)).join().unwrap();
        assert!(r.is_ok() || r == Err(Errno::EPERM), "{r:?}");
    }
}
