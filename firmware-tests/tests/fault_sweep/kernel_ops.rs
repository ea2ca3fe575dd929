//! The sweep's operations over the newer ioctls: runtime enable/disable (`RUNTIME_ENABLE`),
//! every debugger operation (`DBG_TRAP`) and libhsakmt's debugger calls on top, SMI streams
//! (`SMI_EVENTS`), the tile configuration (`GET_TILE_CONFIG`), and re-reading the topology
//! after it changed (the memory manager's ioctls again), the profiler's version (`PROFILER`).
//!
//! Their errnos (amdkfd `kfd_chardev.c` `kfd_ioctl_runtime_enable` / `runtime_enable`,
//! `kfd_ioctl_set_debug_trap`, `kfd_debug.c`, `kfd_smi_events.c` `kfd_smi_event_open`,
//! `kfd_ioctl_get_tile_config`), on top of every ioctl's generic ones:
//! - `RUNTIME_ENABLE`: `EBUSY` (already enabled), `EEXIST` (queues exist);
//! - `DBG_TRAP`: `ESRCH` (no such process), `EPERM` (before the runtime is enabled, or not
//!   ptraced), `EACCES` (a flag or override a GPU cannot do), `ENODEV` (a GPU without debugger
//!   support), `EALREADY` (a session exists), `EBUSY` (GWS in use), `EOPNOTSUPP` (a secondary
//!   process), `ENODATA` (no exception data). `EAGAIN` is an answer here ("no event" of
//!   `QUERY_DEBUG_EVENT`), so the library does not retry it on `DBG_TRAP`;
//! - `SMI_EVENTS`: `EMFILE` (no descriptor for the stream).

use hsakmt_core::debug::{
    DebugFlags, ExceptionCode as Ec, ExceptionMask, TrapMask, TrapOverride, WatchMode,
    WaveLaunchMode,
};
use hsakmt_core::device::{AddressWatch, SmiStream};
use hsakmt_core::platform::{Host, KfdDevice};

use super::*;

/// What the newer operations leave behind, released by [`cleanup`].
#[derive(Default)]
pub(super) struct KernelFx {
    runtime: bool,
    /// A session of `Debugger::enable` (the test's own pipe).
    session: bool,
    /// A session of `Kfd::dbg_enable` (the library's pipe).
    compat: bool,
    pipe: Option<(u32, u32)>,
    /// Queues may be suspended: resume every queue first.
    suspended: bool,
    smi: Vec<SmiStream>,
    /// The system properties may be released: acquire them (a failed acquire leaves them
    /// released, the memory manager down, until an acquire succeeds).
    reacquire: bool,
}

/// The debugger, runtime and stream state the simulated kernel keeps for the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Session {
    debugging: bool,
    runtime_state: u32,
    raised: u64,
    flags: u32,
    launch_mode: u32,
    watches: usize,
    files: usize,
    smi_clients: usize,
}

pub(super) fn session(kfd: &K) -> Session {
    let sim = kfd.platform();
    let d = sim.debug_state();
    Session {
        debugging: d.enabled,
        runtime_state: d.runtime.runtime_state,
        raised: d.raised,
        flags: d.flags,
        launch_mode: d.launch_mode,
        watches: sim.address_watches().len(),
        files: sim.open_files(),
        smi_clients: sim.smi_clients(),
    }
}

/// The errnos `DBG_TRAP`, `RUNTIME_ENABLE` and `SMI_EVENTS` add (see the module docs).
pub(super) fn errnos(nr: u32) -> &'static [Errno] {
    use Errno as E;
    match nr {
        n if n == _IOC_NR(AMDKFD_IOC_RUNTIME_ENABLE) => &[E::EBUSY, E::EEXIST],
        n if n == _IOC_NR(AMDKFD_IOC_DBG_TRAP) => &[
            E::ESRCH,
            E::EPERM,
            E::EACCES,
            E::ENODEV,
            E::EALREADY,
            E::EBUSY,
            E::EOPNOTSUPP,
            E::ENODATA,
        ],
        n if n == _IOC_NR(AMDKFD_IOC_SMI_EVENTS) => &[E::EMFILE],
        _ => &[],
    }
}

/// Whether the library issues `nr` again after `errno` (it retries `EINTR` on every ioctl, and
/// `EAGAIN` on every ioctl but `DBG_TRAP`).
pub(super) fn retried(nr: u32, errno: Errno) -> bool {
    match errno {
        Errno::EINTR => true,
        Errno::EAGAIN => nr != _IOC_NR(AMDKFD_IOC_DBG_TRAP),
        _ => false,
    }
}

/// Releases what the newer operations left, fault-free, in the order the kernel needs:
/// queues resumed before the session ends, the session ended before the runtime is disabled
/// (a disable with a debugger attached waits for it).
pub(super) fn cleanup(kfd: &K, k: &mut KernelFx) -> Result<(), String> {
    let d = kfd.debugger(kfd.platform().process_id());
    if std::mem::take(&mut k.suspended) && (k.session || k.compat) {
        d.resume_queues(None).map_err(|e| format!("cleanup: resume: {e:?}"))?;
    }
    if std::mem::take(&mut k.session) {
        d.disable().map_err(|e| format!("cleanup: debugger disable: {e:?}"))?;
    }
    if std::mem::take(&mut k.compat) {
        kfd.dbg_disable().map_err(|e| format!("cleanup: dbg_disable: {e:?}"))?;
    }
    if let Some((r, w)) = k.pipe.take() {
        kfd.platform().close_fd(r);
        kfd.platform().close_fd(w);
    }
    for s in k.smi.drain(..) {
        kfd.close_smi(s);
    }
    if std::mem::take(&mut k.reacquire) {
        kfd.acquire_system_properties().map_err(|e| format!("cleanup: acquire: {e:?}"))?;
    }
    if std::mem::take(&mut k.runtime) {
        kfd.runtime_disable().map_err(|e| format!("cleanup: runtime disable: {e:?}"))?;
    }
    Ok(())
}

fn runtime(kfd: &K, fx: &mut Fx) {
    kfd.runtime_enable(0x1000, true).unwrap();
    fx.kernel.runtime = true;
}

/// A session subscribed to every exception, notifying the test's pipe.
fn attach(kfd: &K, fx: &mut Fx) {
    let pipe = kfd.platform().create_pipe().unwrap();
    fx.kernel.pipe = Some(pipe);
    kfd.debugger(kfd.platform().process_id()).enable(ExceptionMask::ALL, pipe.1).unwrap();
    fx.kernel.session = true;
}

/// Runtime enabled, a session, and a queue the debugger has seen (`EC_QUEUE_NEW` cleared).
fn seen_queue(kfd: &K, fx: &mut Fx) {
    runtime(kfd, fx);
    attach(kfd, fx);
    let _ = fx.queue(kfd, QueueType::ComputeAql);
    let mut snap = [kfd_queue_snapshot_entry::default(); 4];
    dbg(kfd).queue_snapshot(Ec::QueueNew.mask(), &mut snap).unwrap();
}

fn dbg(kfd: &K) -> hsakmt_core::device::Debugger<'_, SimPlatform, hsakmt_linux::BoxedMemory> {
    kfd.debugger(kfd.platform().process_id())
}

fn queue_id(kfd: &K, fx: &Fx) -> u32 {
    kfd.queue_info(*fx.queues.last().unwrap()).unwrap().queue_id
}

fn watch() -> AddressWatch {
    AddressWatch { address: 0x10_0000, mask: 0xFFF, mode: WatchMode::All }
}

pub(super) fn operations() -> Vec<Op> {
    vec![
        // Runtime.
        op!("runtime enable", nothing, |k, fx| {
            k.runtime_enable(0x1000, true)?;
            fx.kernel.runtime = true;
            Ok(())
        }),
        op!("runtime disable", runtime, |k, fx| {
            k.runtime_disable()?;
            fx.kernel.runtime = false;
            Ok(())
        }),
        // The debugger.
        op!(
            "debugger enable",
            |k, fx| fx.kernel.pipe = Some(k.platform().create_pipe().unwrap()),
            |k, fx| {
                let w = fx.kernel.pipe.unwrap().1;
                dbg(k).enable(ExceptionMask::ALL, w)?;
                fx.kernel.session = true;
                Ok(())
            }
        ),
        op!("debugger disable", attach, |k, fx| {
            dbg(k).disable()?;
            fx.kernel.session = false;
            Ok(())
        }),
        op!("debugger exceptions enabled", attach, |k, _| {
            dbg(k).set_exceptions_enabled(ExceptionMask::DEVICE).map_err(Into::into)
        }),
        op!("debugger send runtime event", seen_queue, |k, fx| {
            let q = queue_id(k, fx);
            dbg(k).send_runtime_event(fx.node, q, Ec::QueueWaveAbort.mask()).map_err(Into::into)
        }),
        op!(
            "debugger suspend queues",
            |k, fx| {
                seen_queue(k, fx);
                fx.kernel.suspended = true;
            },
            |k, fx| {
                let mut ids = [queue_id(k, fx)];
                let n = dbg(k).suspend_queues(&mut ids, 0, ExceptionMask::NONE)?;
                assert_eq!(n, 1);
                Ok(())
            }
        ),
        op!(
            "debugger resume queues",
            |k, fx| {
                seen_queue(k, fx);
                fx.kernel.suspended = true;
                let mut ids = [queue_id(k, fx)];
                dbg(k).suspend_queues(&mut ids, 0, ExceptionMask::NONE).unwrap();
            },
            |k, fx| {
                let mut ids = [queue_id(k, fx)];
                assert_eq!(dbg(k).resume_queues(Some(&mut ids))?, 1);
                Ok(())
            }
        ),
        op!("debugger queue snapshot", seen_queue, |k, _| {
            let mut snap = [kfd_queue_snapshot_entry::default(); 4];
            assert_eq!(dbg(k).queue_snapshot(ExceptionMask::NONE, &mut snap)?, 1);
            Ok(())
        }),
        op!("debugger device snapshot", attach, |k, _| {
            let mut devs = [kfd_dbg_device_info_entry::default(); 64];
            dbg(k).device_snapshot(ExceptionMask::DEVICE, &mut devs).map(drop).map_err(Into::into)
        }),
        op!(
            "debugger set address watch",
            |k, fx| {
                runtime(k, fx);
                attach(k, fx);
            },
            |k, fx| dbg(k).set_address_watch(fx.node, watch()).map(drop).map_err(Into::into)
        ),
        op!(
            "debugger clear address watch",
            |k, fx| {
                runtime(k, fx);
                attach(k, fx);
                dbg(k).set_address_watch(fx.node, watch()).unwrap();
            },
            |k, fx| dbg(k).clear_address_watch(fx.node, 0).map_err(Into::into)
        ),
        op!(
            "debugger set flags",
            |k, fx| {
                runtime(k, fx);
                attach(k, fx);
            },
            |k, _| dbg(k).set_flags(DebugFlags::SINGLE_MEMORY_OP).map(drop).map_err(Into::into)
        ),
        op!(
            "debugger launch override",
            |k, fx| {
                runtime(k, fx);
                attach(k, fx);
            },
            |k, _| {
                let w = TrapMask::ADDRESS_WATCH;
                dbg(k)
                    .set_wave_launch_override(TrapOverride::Or, w, w)
                    .map(drop)
                    .map_err(Into::into)
            }
        ),
        op!(
            "debugger launch mode",
            |k, fx| {
                runtime(k, fx);
                attach(k, fx);
            },
            |k, _| dbg(k).set_wave_launch_mode(WaveLaunchMode::Halt).map_err(Into::into)
        ),
        op!(
            "debugger query event",
            |k, fx| {
                attach(k, fx);
                let _ = fx.queue(k, QueueType::ComputeAql);
            },
            |k, _| match dbg(k).query_debug_event(ExceptionMask::NONE)? {
                Some(_) => Ok(()),
                // The kernel's EAGAIN, which the library reports as "nothing pending".
                None => Err(Error::Ioctl { name: "DBG_TRAP", errno: Errno::EAGAIN }.into()),
            }
        ),
        op!(
            "debugger query exception info",
            |k, fx| {
                attach(k, fx);
                let _ = fx.queue(k, QueueType::ComputeAql);
            },
            |k, fx| {
                let q = queue_id(k, fx);
                let mut info = [0u8; 64];
                dbg(k).query_exception_info(Ec::QueueNew, q, false, &mut info).map(drop)?;
                Ok(())
            }
        ),
        // libhsakmt's debugger calls.
        op!("dbg enable", nothing, |k, fx| {
            k.dbg_enable()?;
            fx.kernel.compat = true;
            Ok(())
        }),
        op!(
            "dbg disable",
            |k, fx| {
                k.dbg_enable().unwrap();
                fx.kernel.compat = true;
            },
            |k, fx| {
                fx.kernel.compat = false;
                k.dbg_disable().map_err(|e| {
                    // The library closed its pipe; the kernel's session lives until disabled.
                    fx.kernel.session = true;
                    e.into()
                })
            }
        ),
        op!(
            "dbg device data",
            |k, fx| {
                k.dbg_enable().unwrap();
                fx.kernel.compat = true;
            },
            |k, _| {
                let mut devs = [kfd_dbg_device_info_entry::default(); 64];
                k.dbg_device_data(&mut devs).map(drop).map_err(Into::into)
            }
        ),
        op!(
            "dbg queue data and suspend",
            |k, fx| {
                runtime(k, fx);
                let _ = fx.queue(k, QueueType::ComputeAql);
                k.dbg_enable().unwrap();
                fx.kernel.compat = true;
                fx.kernel.suspended = true;
            },
            |k, _| {
                let mut snap = [kfd_queue_snapshot_entry::default(); 4];
                assert_eq!(k.dbg_queue_data(&mut snap, true)?, 1);
                Ok(())
            }
        ),
        // SMI streams and the tile configuration.
        op!("smi open", nothing, |k, fx| {
            let s = k.open_smi(fx.node)?;
            fx.kernel.smi.push(s);
            Ok(())
        }),
        op!("profiler version", nothing, |k, _| k.profiler_version().map(drop).map_err(Into::into)),
        op!("tile config", nothing, |k, fx| {
            let (mut tile, mut macro_tile) = ([0u32; 32], [0u32; 16]);
            k.tile_config(fx.node, &mut tile, &mut macro_tile).map(drop).map_err(Into::into)
        }),
        // The topology changed while released: re-acquiring sets the memory manager up again.
        op!(
            "acquire changed system properties",
            |k, fx| {
                k.release_system_properties().unwrap();
                k.platform().bump_generation();
                fx.kernel.reacquire = true;
            },
            |k, _| k.acquire_system_properties().map(drop).map_err(Into::into)
        ),
    ]
}
