//! Events: `hsaKmtCreateEvent`, `hsaKmtDestroyEvent`, `hsaKmtSetEvent`, `hsaKmtResetEvent`,
//! `hsaKmtQueryEventState`, `hsaKmtWaitOnEvent[_Ext]`, `hsaKmtWaitOnMultipleEvents[_Ext]`.
//!
//! The library allocates each `HsaEvent` (see [`event_slots`]) with `EventId` and
//! `EventData.HWData1` the kernel's event id, `EventData.HWData2` the event's mailbox address in
//! the event page (signal and debug events; what ROCr writes a GPU's completion to) and
//! `EventData.HWData3` the kernel's trigger data.

use hsakmt_core::device::{EventDescriptor, Kfd, MemoryStorage};
use hsakmt_core::event::{EventData, EventType, ResetMode, Timeout, WaitMode, WaitResult, WaitSet};
use hsakmt_core::platform::Platform;
use hsakmt_core::uapi::since;

use super::status::device_status;
use super::{event_slots, opened, require, tri};
use crate::config::MAX_WAIT_EVENTS;
use crate::device::with_kfd;
use crate::types::*;

/// The facade's timeout for a C timeout in milliseconds.
fn timeout(ms: HSAuint32) -> Timeout {
    match ms {
        HSA_EVENTTIMEOUT_IMMEDIATE => Timeout::Immediate,
        HSA_EVENTTIMEOUT_INFINITE => Timeout::Infinite,
        ms => Timeout::Millis(ms),
    }
}

/// `hsaKmtCreateEvent`: creates an event and allocates the `HsaEvent` describing it.
///
/// # Safety
/// `EventDesc` is NULL or valid for reads; `Event` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtCreateEvent(
    EventDesc: *mut HsaEventDescriptor,
    ManualReset: bool,
    IsSignaled: bool,
    Event: *mut *mut HsaEvent,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    tri!(with_kfd!(dev, k => k.check_open().map_err(|e| device_status("hsaKmtCreateEvent", &e))));
    require!(EventDesc, HSAKMT_STATUS_INVALID_PARAMETER);
    require!(Event, HSAKMT_STATUS_INVALID_PARAMETER);
    // SAFETY: non-NULL and valid for reads, as the caller guarantees.
    let desc = unsafe { EventDesc.read_unaligned() };
    let Some(event_type) = EventType::from_code(desc.EventType) else {
        return HSAKMT_STATUS_INVALID_PARAMETER;
    };
    // Upstream sets only signal and debug events at creation (the kernel refuses the debug
    // ones); it ignores `IsSignaled` for the others.
    let signaled = IsSignaled && event_type.has_slot();
    let request = EventDescriptor {
        event_type,
        node: desc.NodeId,
        reset: if ManualReset { ResetMode::Manual } else { ResetMode::Auto },
        signaled,
    };
    let made = with_kfd!(dev, k => create(k, &request, desc.SyncVar));
    match made {
        Ok(p) => {
            // SAFETY: non-NULL and valid for writes, as the caller guarantees.
            unsafe { Event.write(p) };
            HSAKMT_STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

fn create<P: Platform, S: MemoryStorage<P::Mapping>>(
    k: &Kfd<P, S>,
    request: &EventDescriptor,
    sync: HsaSyncVar,
) -> Result<*mut HsaEvent, HSAKMT_STATUS> {
    let handle = k.create_event(request).map_err(|e| match e {
        hsakmt_core::device::Error::Event(_) | hsakmt_core::device::Error::Ioctl { .. } => {
            device_status("hsaKmtCreateEvent", &e);
            HSAKMT_STATUS_ERROR
        }
        e => device_status("hsaKmtCreateEvent", &e),
    })?;
    let info = k.event_info(handle).map_err(|e| device_status("hsaKmtCreateEvent", &e))?;
    let mut ev = HsaEvent::zeroed();
    ev.EventId = info.id;
    ev.EventData.EventType = request.event_type.code();
    ev.EventData.EventData.SyncVar = sync;
    ev.EventData.HWData1 = u64::from(info.id);
    ev.EventData.HWData2 = info.mailbox.unwrap_or(0);
    ev.EventData.HWData3 = info.trigger_data;
    event_slots::publish(handle, ev).ok_or_else(|| {
        let _ = k.destroy_event(handle);
        HSAKMT_STATUS_ERROR
    })
}

/// `hsaKmtDestroyEvent`: destroys an event and frees its `HsaEvent`.
///
/// # Safety
/// `Event` is any pointer: only events this library created are accepted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDestroyEvent(Event: *mut HsaEvent) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    tri!(with_kfd!(dev, k => k.check_open().map_err(|e| device_status("hsaKmtDestroyEvent", &e))));
    let Some((index, handle)) = event_slots::lookup(Event) else {
        return HSAKMT_STATUS_INVALID_HANDLE;
    };
    with_kfd!(dev, k => match k.destroy_event(handle) {
        Ok(()) => {
            event_slots::retire(index, handle);
            HSAKMT_STATUS_SUCCESS
        }
        Err(hsakmt_core::device::Error::Ioctl { .. }) => HSAKMT_STATUS_ERROR,
        Err(e) => device_status("hsaKmtDestroyEvent", &e),
    })
}

/// Set or reset, as upstream: system event types answer `HSAKMT_STATUS_ERROR`.
fn set_or_reset(Event: *mut HsaEvent, set: bool) -> HSAKMT_STATUS {
    let what = if set { "hsaKmtSetEvent" } else { "hsaKmtResetEvent" };
    let dev = tri!(opened());
    tri!(with_kfd!(dev, k => k.check_open().map_err(|e| device_status(what, &e))));
    let Some((_, handle)) = event_slots::lookup(Event) else {
        return HSAKMT_STATUS_INVALID_HANDLE;
    };
    let r = with_kfd!(dev, k => if set { k.set_event(handle) } else { k.reset_event(handle) });
    match r {
        Ok(()) => HSAKMT_STATUS_SUCCESS,
        Err(hsakmt_core::device::Error::Event(hsakmt_core::event::Error::InvalidHandle)) => {
            HSAKMT_STATUS_INVALID_HANDLE
        }
        Err(e) => {
            device_status(what, &e);
            HSAKMT_STATUS_ERROR
        }
    }
}

/// `hsaKmtSetEvent`: sets a signal event.
///
/// # Safety
/// `Event` is any pointer: only events this library created are accepted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetEvent(Event: *mut HsaEvent) -> HSAKMT_STATUS {
    set_or_reset(Event, true)
}

/// `hsaKmtResetEvent`: resets a signal event.
///
/// # Safety
/// `Event` is any pointer: only events this library created are accepted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtResetEvent(Event: *mut HsaEvent) -> HSAKMT_STATUS {
    set_or_reset(Event, false)
}

/// `hsaKmtQueryEventState`: upstream answers success for any non-NULL event without asking the
/// kernel; this checks that the event is live (the facade's query makes no system call).
///
/// # Safety
/// `Event` is any pointer: only events this library created are accepted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtQueryEventState(Event: *mut HsaEvent) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    let Some((_, handle)) = event_slots::lookup(Event) else {
        return HSAKMT_STATUS_INVALID_HANDLE;
    };
    with_kfd!(dev, k => match k.check_open().and_then(|()| k.query_event(handle)) {
        Ok(_) => HSAKMT_STATUS_SUCCESS,
        Err(e) => device_status("hsaKmtQueryEventState", &e),
    })
}

/// `hsaKmtWaitOnEvent`: waits for one event.
///
/// # Safety
/// `Event` is any pointer: only events this library created are accepted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtWaitOnEvent(
    Event: *mut HsaEvent,
    Milliseconds: HSAuint32,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract, with no age array.
    unsafe { hsaKmtWaitOnEvent_Ext(Event, Milliseconds, core::ptr::null_mut()) }
}

/// `hsaKmtWaitOnEvent_Ext`: waits for one event, with its age.
///
/// # Safety
/// `Event` is any pointer; `event_age` is NULL or valid for reads and writes of one `u64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtWaitOnEvent_Ext(
    Event: *mut HsaEvent,
    Milliseconds: HSAuint32,
    event_age: *mut u64,
) -> HSAKMT_STATUS {
    require!(Event, HSAKMT_STATUS_INVALID_HANDLE);
    let mut events = [Event];
    // SAFETY: `events` holds one pointer; `event_age` is NULL or valid for one u64.
    unsafe { hsaKmtWaitOnMultipleEvents_Ext(events.as_mut_ptr(), 1, true, Milliseconds, event_age) }
}

/// `hsaKmtWaitOnMultipleEvents`: waits for any or all of `NumEvents` events.
///
/// # Safety
/// `Events` is NULL or valid for reads of `NumEvents` pointers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtWaitOnMultipleEvents(
    Events: *mut *mut HsaEvent,
    NumEvents: HSAuint32,
    WaitOnAll: bool,
    Milliseconds: HSAuint32,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract, with no age array.
    unsafe {
        hsaKmtWaitOnMultipleEvents_Ext(
            Events,
            NumEvents,
            WaitOnAll,
            Milliseconds,
            core::ptr::null_mut(),
        )
    }
}

/// `hsaKmtWaitOnMultipleEvents_Ext`: waits for any or all of `NumEvents` events, with the ages
/// of the signal events; reports memory-fault and HW-exception data into the events, as
/// upstream.
///
/// # Safety
/// `Events` is NULL or valid for reads of `NumEvents` pointers; `event_age` is NULL or valid for
/// reads and writes of `NumEvents` `u64`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtWaitOnMultipleEvents_Ext(
    Events: *mut *mut HsaEvent,
    NumEvents: HSAuint32,
    WaitOnAll: bool,
    Milliseconds: HSAuint32,
    event_age: *mut u64,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    tri!(
        with_kfd!(dev, k => k.check_open().map_err(|e| device_status("hsaKmtWaitOnMultipleEvents", &e)))
    );
    require!(Events, HSAKMT_STATUS_INVALID_HANDLE);
    let n = NumEvents as usize;
    if n == 0 {
        return HSAKMT_STATUS_INVALID_PARAMETER;
    }
    if n > MAX_WAIT_EVENTS {
        return HSAKMT_STATUS_NO_MEMORY;
    }
    // SAFETY: non-NULL and valid for `NumEvents` pointers, as the caller guarantees.
    let pointers = unsafe { core::slice::from_raw_parts(Events, n) };
    let mut slots = [0usize; MAX_WAIT_EVENTS];
    let mut handles = [None; MAX_WAIT_EVENTS];
    for (i, p) in pointers.iter().enumerate() {
        let Some((slot, handle)) = event_slots::lookup(*p) else {
            return HSAKMT_STATUS_INVALID_HANDLE;
        };
        slots[i] = slot;
        handles[i] = Some(handle);
    }
    let ages: Option<&mut [u64]> = if event_age.is_null() {
        None
    } else {
        // SAFETY: non-NULL and valid for reads and writes of `NumEvents` u64s, as the caller
        // guarantees; no other reference to it exists during the call.
        Some(unsafe { core::slice::from_raw_parts_mut(event_age, n) })
    };
    let mode = if WaitOnAll { WaitMode::All } else { WaitMode::Any };
    let (handles, slots, t) = (&handles[..n], &slots[..n], timeout(Milliseconds));
    // The kernel's array lives in the wait set, on this stack: a small one for the usual case.
    with_kfd!(dev, k => if n <= SMALL_WAIT {
        wait::<_, _, SMALL_WAIT>(k, handles, slots, ages, mode, t)
    } else {
        wait::<_, _, MAX_WAIT_EVENTS>(k, handles, slots, ages, mode, t)
    })
}

/// Events of the wait sets most waits use (upstream's callers wait on at most 64).
const SMALL_WAIT: usize = 64;

fn wait<P: Platform, S: MemoryStorage<P::Mapping>, const N: usize>(
    k: &Kfd<P, S>,
    handles: &[Option<hsakmt_core::event::EventHandle>],
    slots: &[usize],
    ages: Option<&mut [u64]>,
    mode: WaitMode,
    timeout: Timeout,
) -> HSAKMT_STATUS {
    let with_ages = k.version().is_ok_and(|v| v.supports(since::EVENT_AGE));
    let mut set: WaitSet<N> = WaitSet::new();
    let mut signal = [false; N];
    for (i, h) in handles.iter().enumerate() {
        let Some(h) = *h else { return HSAKMT_STATUS_INVALID_HANDLE };
        let is_signal = k.event_info(h).is_ok_and(|info| info.event_type == EventType::Signal);
        signal[i] = is_signal;
        let age = match (&ages, is_signal && with_ages) {
            (Some(a), true) => a.get(i).copied().unwrap_or(0),
            _ => 0,
        };
        let pushed = if age != 0 { set.push_with_age(h, age) } else { set.push(h) };
        if pushed.is_err() {
            return HSAKMT_STATUS_NO_MEMORY;
        }
    }
    let result = match k.wait_events(&mut set, mode, timeout) {
        Ok(r) => r,
        Err(hsakmt_core::device::Error::Event(hsakmt_core::event::Error::InvalidHandle)) => {
            return HSAKMT_STATUS_INVALID_HANDLE;
        }
        Err(e) => {
            device_status("hsaKmtWaitOnMultipleEvents", &e);
            return HSAKMT_STATUS_ERROR;
        }
    };
    let mut status = match result {
        WaitResult::Complete => HSAKMT_STATUS_SUCCESS,
        WaitResult::TimedOut => HSAKMT_STATUS_WAIT_TIMEOUT,
    };
    if result == WaitResult::Complete {
        for (i, &slot) in slots.iter().enumerate() {
            if let Some(data) = set.data(i)
                && let Err(s) = report(slot, &data)
            {
                status = s;
                break;
            }
        }
    }
    if let Some(a) = ages {
        for (i, age) in a.iter_mut().enumerate() {
            if signal.get(i) == Some(&true) {
                *age = set.age(i);
            }
        }
    }
    status
}

/// Writes exception data into the event of slot `slot`, as upstream fills the caller's event.
fn report(slot: usize, data: &EventData) -> Result<(), HSAKMT_STATUS> {
    let p = event_slots::event_ptr(slot).ok_or(HSAKMT_STATUS_ERROR)?;
    match data {
        EventData::MemoryFault(f) => {
            use hsakmt_core::event::FaultFlags;
            let failure = HsaAccessAttributeFailure::default()
                .with(
                    HsaAccessAttributeFailure::NotPresent,
                    f.flags.contains(FaultFlags::NOT_PRESENT).into(),
                )
                .with(
                    HsaAccessAttributeFailure::ReadOnly,
                    f.flags.contains(FaultFlags::READ_ONLY).into(),
                )
                .with(
                    HsaAccessAttributeFailure::NoExecute,
                    f.flags.contains(FaultFlags::NO_EXECUTE).into(),
                )
                .with(
                    HsaAccessAttributeFailure::Imprecise,
                    f.flags.contains(FaultFlags::IMPRECISE).into(),
                )
                .with(HsaAccessAttributeFailure::ErrorType, f.error.code())
                .with(HsaAccessAttributeFailure::ECC, f.is_ecc().into());
            let fault = HsaMemoryAccessFault {
                NodeId: f.node.ok_or(HSAKMT_STATUS_INVALID_NODE_UNIT)?,
                VirtualAddress: f.address,
                Failure: failure,
                Flags: HSA_EVENTID_MEMORY_FATAL_PROCESS,
            };
            // SAFETY: `p` points at a slot's event (static storage); the packed field is
            // written unaligned, as upstream writes the caller's event.
            unsafe { (&raw mut (*p).EventData.EventData.MemoryAccessFault).write_unaligned(fault) };
        }
        EventData::HwException(x) => {
            let exception = HsaHwException {
                NodeId: x.node.ok_or(HSAKMT_STATUS_INVALID_NODE_UNIT)?,
                ResetType: x.reset.code(),
                MemoryLost: x.memory_lost.into(),
                ResetCause: x.cause.code(),
            };
            // SAFETY: as above.
            unsafe { (&raw mut (*p).EventData.EventData.HwException).write_unaligned(exception) };
        }
    }
    Ok(())
}
