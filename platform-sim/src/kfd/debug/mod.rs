//! The debugger interface of the emulated amdkfd (`AMDKFD_IOC_RUNTIME_ENABLE`,
//! `AMDKFD_IOC_DBG_TRAP`), as `kfd_chardev.c` and `kfd_debug.c` implement it (KFD 1.23):
//!
//! - [`state`]: the per-process debug state — the runtime-enable state and its semaphore, the
//!   debug session (notification descriptor, subscribed exceptions), raised exceptions per
//!   process, device and queue, launch mode, flags and address watches — and how an exception
//!   is raised (`kfd_dbg_ev_raise`);
//! - [`runtime`]: `RUNTIME_ENABLE` (enable, disable, the rendezvous with an attached debugger);
//! - [`trap`]: `DBG_TRAP` — the generic checks and every operation.
//!
//! The simulated process can only debug itself (a debugger that is its own target, as
//! libhsakmt's `hsaKmtDbgEnable` is): another pid has no KFD process here (`ESRCH`), and the
//! ptrace check of a foreign target does not arise.
//!
//! Address watches are recorded per device (4 per GPU, shared by the processes on it, as the
//! hardware has). Once the trap mask enables address watches, the ISA interpreter compares
//! every memory access of a wave against them ([`crate::gpu::watch`]) and a hit raises
//! `EC_QUEUE_WAVE_TRAP` on the queue; the wave goes on (the simulator has no trap handler to
//! halt it in). Host kernels make no wave accesses: `SimPlatform::watch_access` stands in for
//! one.

pub(crate) mod runtime;
pub(crate) mod state;
pub(crate) mod trap;

pub(crate) use state::Debugger;
