//! The exported C entry points called in-process from Rust, for `hsakmt bench capi`: the C
//! ABI's cost measured next to the facade's on the same calls, without C code and without
//! `unsafe` in the caller.
//!
//! Every call goes through a function pointer hidden from the optimiser
//! ([`core::hint::black_box`]), so it is an out-of-line call of the exported function, as a C
//! caller's through the PLT, never inlined into the caller.
//!
//! The process has one C device (built at its first open); [`use_simulator`] chooses the simulator
//! for it before its first open, as `HSAKMT_DRIVER=sim HSAKMT_SIM_PROFILE=<name>` would.

use core::ffi::c_void;
use core::hint::black_box;

use crate::api::{
    hsaKmtAcquireSystemProperties, hsaKmtAllocMemory, hsaKmtCloseKFD, hsaKmtCreateEvent,
    hsaKmtCreateQueue, hsaKmtDestroyEvent, hsaKmtDestroyQueue, hsaKmtFreeMemory,
    hsaKmtGetNodeProperties, hsaKmtGetQueueInfo, hsaKmtMapMemoryToGPU, hsaKmtOpenKFD,
    hsaKmtQueryEventState, hsaKmtUnmapMemoryToGPU,
};
use crate::types::*;

/// Chooses the simulator over embedded profile `profile` for this process's C device, in place
/// of the environment; takes effect at the first `hsaKmtOpenKFD` (an error after it).
///
/// # Errors
/// The device was built already.
pub fn use_simulator(profile: &str) -> Result<(), String> {
    crate::device::choose_simulator(profile)
}

/// A status as a `Result`.
fn ok(s: HSAKMT_STATUS, what: &str) -> Result<(), String> {
    if s == HSAKMT_STATUS_SUCCESS { Ok(()) } else { Err(format!("{what}: status {s}")) }
}

/// An open of the library (`hsaKmtOpenKFD`), closed when dropped.
#[derive(Debug)]
pub struct Library {
    _open: (),
}

impl Library {
    /// `hsaKmtOpenKFD`.
    ///
    /// # Errors
    /// The status, when not `HSAKMT_STATUS_SUCCESS`.
    pub fn open() -> Result<Self, String> {
        // SAFETY: no arguments.
        ok(unsafe { black_box(hsaKmtOpenKFD as unsafe extern "C" fn() -> _)() }, "open")?;
        Ok(Self { _open: () })
    }

    /// The first GPU node (with a gpu_id), as `hsaKmtGetNodeProperties` reports it.
    ///
    /// # Errors
    /// A failed call, or no GPU.
    pub fn first_gpu(&self) -> Result<u32, String> {
        let mut sp = HsaSystemProperties::default();
        // SAFETY: `sp` is valid for writes.
        ok(unsafe { hsaKmtAcquireSystemProperties(&raw mut sp) }, "system properties")?;
        for node in 0..sp.NumNodes {
            let mut p = HsaNodeProperties::default();
            // SAFETY: `p` is valid for writes.
            ok(unsafe { hsaKmtGetNodeProperties(node, &raw mut p) }, "node properties")?;
            if p.KFDGpuID != 0 {
                return Ok(node);
            }
        }
        Err("no GPU node".to_owned())
    }

    /// One `hsaKmtAllocMemory` + `hsaKmtFreeMemory` pair.
    ///
    /// # Errors
    /// The failing call's status.
    pub fn alloc_free(&self, node: u32, size: u64, flags: HsaMemFlags) -> Result<(), String> {
        let alloc = black_box(hsaKmtAllocMemory as unsafe extern "C" fn(_, _, _, _) -> _);
        let free = black_box(hsaKmtFreeMemory as unsafe extern "C" fn(_, _) -> _);
        let mut p: *mut c_void = core::ptr::null_mut();
        // SAFETY: `p` is valid for writes.
        ok(unsafe { alloc(node, size, flags, &raw mut p) }, "alloc")?;
        // SAFETY: `p` is the allocation just made, of `size` bytes.
        ok(unsafe { free(p, size) }, "free")
    }

    /// A signal event (`hsaKmtCreateEvent`, auto reset, not signaled).
    ///
    /// # Errors
    /// The status.
    pub fn create_event(&self) -> Result<Event<'_>, String> {
        let mut d = HsaEventDescriptor { EventType: HSA_EVENTTYPE_SIGNAL, ..Default::default() };
        let mut e: *mut HsaEvent = core::ptr::null_mut();
        // SAFETY: both valid for the call.
        ok(unsafe { hsaKmtCreateEvent(&raw mut d, false, false, &raw mut e) }, "event")?;
        Ok(Event { event: e, _lib: self })
    }

    /// An inactive (0 %) PM4 compute queue on `node` over a one-page ring in GTT, mapped to
    /// the GPU: what `hsaKmtGetQueueInfo` needs.
    ///
    /// # Errors
    /// The failing call's status.
    pub fn create_idle_queue(&self, node: u32) -> Result<Queue<'_>, String> {
        const RING: u64 = 4096;
        let flags =
            HsaMemFlags::default().with(HsaMemFlags::HostAccess, 1).with(HsaMemFlags::NonPaged, 1);
        let mut ring: *mut c_void = core::ptr::null_mut();
        // SAFETY: `ring` is valid for writes.
        ok(unsafe { hsaKmtAllocMemory(node, RING, flags, &raw mut ring) }, "ring")?;
        // SAFETY: `ring` is the allocation just made; no alternate VA wanted.
        let mapped = unsafe { hsaKmtMapMemoryToGPU(ring, RING, core::ptr::null_mut()) };
        let mut res = HsaQueueResource::default();
        let created = if mapped == HSAKMT_STATUS_SUCCESS {
            // SAFETY: `ring` is RING bytes of GPU-mapped memory; `res` is valid for writes.
            unsafe {
                hsaKmtCreateQueue(
                    node,
                    HSA_QUEUE_COMPUTE,
                    0,
                    HSA_QUEUE_PRIORITY_NORMAL,
                    ring,
                    RING,
                    core::ptr::null_mut(),
                    &raw mut res,
                )
            }
        } else {
            mapped
        };
        if created != HSAKMT_STATUS_SUCCESS {
            release_ring(ring, RING);
            return Err(format!("queue: status {created}"));
        }
        Ok(Queue { id: res.QueueId, ring, ring_size: RING, _lib: self })
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: no arguments.
        let _ = unsafe { hsaKmtCloseKFD() };
    }
}

/// Unmaps and frees a ring.
fn release_ring(ring: *mut c_void, size: u64) {
    // SAFETY: `ring` is an allocation of this library (or NULL, which both calls refuse).
    unsafe {
        let _ = hsaKmtUnmapMemoryToGPU(ring);
        let _ = hsaKmtFreeMemory(ring, size);
    }
}

/// An event of [`Library::create_event`], destroyed when dropped.
#[derive(Debug)]
pub struct Event<'a> {
    event: *mut HsaEvent,
    _lib: &'a Library,
}

impl Event<'_> {
    /// `hsaKmtQueryEventState`.
    ///
    /// # Errors
    /// The status.
    pub fn query(&self) -> Result<(), String> {
        let query = black_box(hsaKmtQueryEventState as unsafe extern "C" fn(_) -> _);
        // SAFETY: the event is live (destroyed only on drop).
        ok(unsafe { query(self.event) }, "query")
    }
}

impl Drop for Event<'_> {
    fn drop(&mut self) {
        // SAFETY: the event is live and destroyed once.
        let _ = unsafe { hsaKmtDestroyEvent(self.event) };
    }
}

/// A queue of [`Library::create_idle_queue`], destroyed (and its ring freed) when dropped.
#[derive(Debug)]
pub struct Queue<'a> {
    id: HSA_QUEUEID,
    ring: *mut c_void,
    ring_size: u64,
    _lib: &'a Library,
}

impl Queue<'_> {
    /// `hsaKmtGetQueueInfo`: the saved wave state and CU mask; returns the control-stack bytes
    /// in use.
    ///
    /// # Errors
    /// The status.
    pub fn info(&self) -> Result<u64, String> {
        let get = black_box(hsaKmtGetQueueInfo as unsafe extern "C" fn(_, _) -> _);
        let mut info = HsaQueueInfo::default();
        // SAFETY: `info` is valid for writes.
        ok(unsafe { get(self.id, &raw mut info) }, "queue info")?;
        Ok(info.ControlStackUsedInBytes)
    }
}

impl Drop for Queue<'_> {
    fn drop(&mut self) {
        // SAFETY: a queue id, destroyed once.
        let _ = unsafe { hsaKmtDestroyQueue(self.id) };
        release_ring(self.ring, self.ring_size);
    }
}
