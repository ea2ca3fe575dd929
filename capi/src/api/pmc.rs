//! Performance counters (`hsaKmtPmc*`) over the device facade's counter tables and trace
//! bookkeeping (`Kfd::pmc_counter_blocks`, `Kfd::pmc_register_trace` …), with upstream's
//! statuses (`libhsakmt/src/perfctr.c`).
//!
//! `hsaKmtPmcGetCounterProperties` returns upstream's variable-length `HsaCounterProperties`
//! of the GPU's family (gfx9, gfx10), built once per table and kept by the library for the
//! life of the process (the caller does not free it, as upstream). A GPU without a table
//! (gfx11 and later) or a CPU node answers `HSAKMT_STATUS_NOT_SUPPORTED`. Traces register
//! as upstream validates them; starting, querying and stopping one answers
//! `HSAKMT_STATUS_NOT_SUPPORTED`, since no kernel interface gives counter values to the thunk
//! (see `hsakmt_core::pmc`).

use std::collections::BTreeMap;
use std::sync::Mutex;

use hsakmt_core::device::{Error as DeviceError, Kfd, MemoryStorage, TraceHandle};
use hsakmt_core::platform::Platform;
use hsakmt_core::pmc::{self, COUNTER_BITS, CounterBlock, CounterKind, PmcBlock, TraceCounter};

use super::status::device_status;
use super::{opened, require, tri};
use crate::config::MAX_TRACE_COUNTERS;
use crate::device::with_kfd;
use crate::types::*;

/// The `HsaCounterProperties` built for each counter table: the table's address to the
/// properties' (leaked: callers keep the pointer for the life of the process).
static PROPERTIES: Mutex<BTreeMap<usize, usize>> = Mutex::new(BTreeMap::new());

/// The header's UUID of a block (the CPC block has none: zeros, as upstream leaves it unset).
fn block_uuid(b: PmcBlock) -> HSA_UUID {
    match b {
        PmcBlock::Cb => HSA_PROFILEBLOCK_AMD_CB,
        PmcBlock::Cpc => HSA_UUID::default(),
        PmcBlock::Cpf => HSA_PROFILEBLOCK_AMD_CPF,
        PmcBlock::Cpg => HSA_PROFILEBLOCK_AMD_CPG,
        PmcBlock::Db => HSA_PROFILEBLOCK_AMD_DB,
        PmcBlock::Gds => HSA_PROFILEBLOCK_AMD_GDS,
        PmcBlock::Grbm => HSA_PROFILEBLOCK_AMD_GRBM,
        PmcBlock::GrbmSe => HSA_PROFILEBLOCK_AMD_GRBMSE,
        PmcBlock::Ia => HSA_PROFILEBLOCK_AMD_IA,
        PmcBlock::Mc => HSA_PROFILEBLOCK_AMD_MC,
        PmcBlock::PaSc => HSA_PROFILEBLOCK_AMD_PASC,
        PmcBlock::PaSu => HSA_PROFILEBLOCK_AMD_PASU,
        PmcBlock::Spi => HSA_PROFILEBLOCK_AMD_SPI,
        PmcBlock::Srbm => HSA_PROFILEBLOCK_AMD_SRBM,
        PmcBlock::Sq => HSA_PROFILEBLOCK_AMD_SQ,
        PmcBlock::Sx => HSA_PROFILEBLOCK_AMD_SX,
        PmcBlock::Ta => HSA_PROFILEBLOCK_AMD_TA,
        PmcBlock::Tca => HSA_PROFILEBLOCK_AMD_TCA,
        PmcBlock::Tcc => HSA_PROFILEBLOCK_AMD_TCC,
        PmcBlock::Tcp => HSA_PROFILEBLOCK_AMD_TCP,
        PmcBlock::Tcs => HSA_PROFILEBLOCK_AMD_TCS,
        PmcBlock::Td => HSA_PROFILEBLOCK_AMD_TD,
        PmcBlock::Vgt => HSA_PROFILEBLOCK_AMD_VGT,
        PmcBlock::Wd => HSA_PROFILEBLOCK_AMD_WD,
    }
}

/// Appends the bytes of a packed header struct.
fn push<T: Copy>(out: &mut Vec<u8>, v: &T) {
    // SAFETY: `T` is one of the header's `packed(4)` structs of integers (no padding), every
    // byte of which is initialised.
    let bytes =
        unsafe { core::slice::from_raw_parts((v as *const T).cast::<u8>(), size_of::<T>()) };
    out.extend_from_slice(bytes);
}

/// `HsaCounterProperties` of `blocks`, laid out as upstream lays it out: the header, then each
/// block's properties followed by its counters.
fn properties_of(blocks: &[CounterBlock]) -> Vec<u8> {
    let mut out = Vec::new();
    let concurrent = blocks.iter().map(|b| b.concurrent).sum::<u32>();
    push(&mut out, &(blocks.len() as u32));
    push(&mut out, &concurrent);
    for b in blocks {
        push(&mut out, &block_uuid(b.block));
        push(&mut out, &b.counter_count());
        push(&mut out, &b.concurrent);
        for id in b.counter_ids() {
            let c = HsaCounter {
                Type: HSA_PROFILE_TYPE_NONPRIV_IMMEDIATE,
                CounterId: u64::from(id),
                CounterSizeInBits: COUNTER_BITS,
                CounterMask: u64::MAX,
                // Global.
                Flags: HsaCounterFlags { Value: 1 },
                BlockIndex: b.block.index(),
            };
            push(&mut out, &c);
        }
    }
    out
}

/// The library's copy of `blocks`' properties.
fn properties(blocks: &'static [CounterBlock]) -> *mut HsaCounterProperties {
    let mut map = PROPERTIES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let at = map.entry(blocks.as_ptr() as usize).or_insert_with(|| {
        // In words, for the structs' 4-byte alignment.
        let words: Box<[u32]> = properties_of(blocks)
            .chunks(4)
            .map(|c| {
                let mut w = [0u8; 4];
                w.get_mut(..c.len()).unwrap_or_default().copy_from_slice(c);
                u32::from_ne_bytes(w)
            })
            .collect();
        Box::leak(words).as_mut_ptr() as usize
    });
    *at as *mut HsaCounterProperties
}

/// The status of a counter request's failure.
fn pmc_status(what: &str, e: &DeviceError) -> HSAKMT_STATUS {
    let s = device_status(what, e);
    match e {
        DeviceError::InvalidNode { .. } => HSAKMT_STATUS_INVALID_NODE_UNIT,
        DeviceError::Pmc(p) => match p {
            pmc::Error::NoCounters { .. } | pmc::Error::NotAGpu => HSAKMT_STATUS_NOT_SUPPORTED,
            pmc::Error::NoKernelInterface => HSAKMT_STATUS_NOT_SUPPORTED,
            pmc::Error::InvalidCounters => HSAKMT_STATUS_INVALID_PARAMETER,
            pmc::Error::UnknownTrace => HSAKMT_STATUS_INVALID_HANDLE,
            pmc::Error::TooManyTraces => HSAKMT_STATUS_NO_MEMORY,
        },
        _ => s,
    }
}

/// After the open check: `HSAKMT_STATUS_INVALID_NODE_UNIT` for an unknown node.
fn check_node<P: Platform, S: MemoryStorage<P::Mapping>>(
    k: &Kfd<P, S>,
    what: &str,
    node: HSAuint32,
) -> Result<(), HSAKMT_STATUS> {
    k.check_open().map_err(|e| device_status(what, &e))?;
    match k.with_topology(|t| t.node_by_user_id(node).is_some()) {
        Ok(true) => Ok(()),
        Ok(false) => Err(HSAKMT_STATUS_INVALID_NODE_UNIT),
        Err(e) => Err(device_status(what, &e)),
    }
}

/// `hsaKmtPmcGetCounterProperties`: the counter blocks of GPU `NodeId` (its family's table).
///
/// # Safety
/// `CounterProperties` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPmcGetCounterProperties(
    NodeId: HSAuint32,
    CounterProperties: *mut *mut HsaCounterProperties,
) -> HSAKMT_STATUS {
    const WHAT: &str = "hsaKmtPmcGetCounterProperties";
    let dev = tri!(opened());
    require!(CounterProperties, HSAKMT_STATUS_INVALID_PARAMETER);
    let blocks = with_kfd!(dev, k => {
        tri!(check_node(k, WHAT, NodeId));
        k.pmc_counter_blocks(NodeId)
    });
    match blocks {
        Ok(b) => {
            // SAFETY: non-NULL (checked) and valid for writes, as the caller guarantees.
            unsafe { CounterProperties.write_unaligned(properties(b)) };
            HSAKMT_STATUS_SUCCESS
        }
        Err(e) => pmc_status(WHAT, &e),
    }
}

/// How upstream reads a counter's `Type` (values past the privileged ones are not registered).
fn counter_kind(t: HSA_PROFILE_TYPE) -> CounterKind {
    match t {
        HSA_PROFILE_TYPE_PRIVILEGED_IMMEDIATE => CounterKind::PrivilegedImmediate,
        HSA_PROFILE_TYPE_PRIVILEGED_STREAMING => CounterKind::PrivilegedStreaming,
        HSA_PROFILE_TYPE_NONPRIV_IMMEDIATE => CounterKind::NonPrivilegedImmediate,
        _ => CounterKind::NonPrivilegedStreaming,
    }
}

/// `hsaKmtPmcRegisterTrace`: registers a trace of `NumberOfCounters` counters on GPU
/// `NodeId`: `INVALID_PARAMETER` for no counters, a block index past the last, a block the GPU
/// lacks, more counters of a block than it counts at once or no privileged counter;
/// `NO_MEMORY` past 512 counters or when the trace table is full.
///
/// # Safety
/// `Counters` is NULL or holds `NumberOfCounters` counters; `TraceRoot` is NULL or valid for
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPmcRegisterTrace(
    NodeId: HSAuint32,
    NumberOfCounters: HSAuint32,
    Counters: *mut HsaCounter,
    TraceRoot: *mut HsaPmcTraceRoot,
) -> HSAKMT_STATUS {
    const WHAT: &str = "hsaKmtPmcRegisterTrace";
    let dev = tri!(opened());
    if NumberOfCounters == 0 || Counters.is_null() || TraceRoot.is_null() {
        return HSAKMT_STATUS_INVALID_PARAMETER;
    }
    let r = with_kfd!(dev, k => {
        tri!(check_node(k, WHAT, NodeId));
        if NumberOfCounters > MAX_TRACE_COUNTERS {
            return HSAKMT_STATUS_NO_MEMORY;
        }
        // SAFETY: the caller guarantees `NumberOfCounters` counters at `Counters`.
        let given = unsafe { core::slice::from_raw_parts(Counters, NumberOfCounters as usize) };
        let counters: Vec<TraceCounter> = given
            .iter()
            .map(|c| TraceCounter {
                block: c.BlockIndex,
                counter: u32::try_from(c.CounterId).unwrap_or(u32::MAX),
                kind: counter_kind(c.Type),
            })
            .collect();
        k.pmc_register_trace(NodeId, &counters)
    });
    match r {
        Ok(root) => {
            let out = HsaPmcTraceRoot {
                TraceBufferMinSizeBytes: root.min_buffer_bytes,
                NumberOfPasses: root.passes,
                TraceId: root.handle.raw(),
            };
            // SAFETY: non-NULL (checked) and valid for writes, as the caller guarantees.
            unsafe { TraceRoot.write_unaligned(out) };
            HSAKMT_STATUS_SUCCESS
        }
        Err(e) => pmc_status(WHAT, &e),
    }
}

/// `INVALID_PARAMETER` for trace 0, else what `call` answers for the trace.
fn with_trace(
    what: &str,
    trace: HSATraceId,
    call: impl FnOnce(TraceHandle) -> Result<Result<(), DeviceError>, HSAKMT_STATUS>,
) -> HSAKMT_STATUS {
    if trace == 0 {
        return HSAKMT_STATUS_INVALID_PARAMETER;
    }
    match call(TraceHandle::from_raw(trace)) {
        Ok(Ok(())) => HSAKMT_STATUS_SUCCESS,
        Ok(Err(e)) => pmc_status(what, &e),
        Err(s) => s,
    }
}

/// `hsaKmtPmcUnregisterTrace`: forgets the trace (`INVALID_HANDLE` for an unknown one,
/// `INVALID_NODE_UNIT` for another node's).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPmcUnregisterTrace(
    NodeId: HSAuint32,
    TraceId: HSATraceId,
) -> HSAKMT_STATUS {
    const WHAT: &str = "hsaKmtPmcUnregisterTrace";
    let dev = tri!(opened());
    with_trace(WHAT, TraceId, |t| {
        with_kfd!(dev, k => {
            check_node(k, WHAT, NodeId)?;
            Ok(k.pmc_unregister_trace(NodeId, t))
        })
    })
}

/// `hsaKmtPmcAcquireTraceAccess`: validates the trace and the node, as upstream (which
/// acquires nothing more).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPmcAcquireTraceAccess(
    NodeId: HSAuint32,
    TraceId: HSATraceId,
) -> HSAKMT_STATUS {
    const WHAT: &str = "hsaKmtPmcAcquireTraceAccess";
    let dev = tri!(opened());
    with_trace(WHAT, TraceId, |t| {
        with_kfd!(dev, k => {
            check_node(k, WHAT, NodeId)?;
            Ok(k.pmc_trace_access(NodeId, t))
        })
    })
}

/// `hsaKmtPmcReleaseTraceAccess`: as [`hsaKmtPmcAcquireTraceAccess`].
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPmcReleaseTraceAccess(
    NodeId: HSAuint32,
    TraceId: HSATraceId,
) -> HSAKMT_STATUS {
    const WHAT: &str = "hsaKmtPmcReleaseTraceAccess";
    let dev = tri!(opened());
    with_trace(WHAT, TraceId, |t| {
        with_kfd!(dev, k => {
            check_node(k, WHAT, NodeId)?;
            Ok(k.pmc_trace_access(NodeId, t))
        })
    })
}

/// Start, query and stop: `INVALID_HANDLE` for an unknown trace, else `NOT_SUPPORTED`.
fn run_trace(what: &str, trace: HSATraceId) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    with_trace(what, trace, |t| Ok(with_kfd!(dev, k => k.pmc_run_trace(t))))
}

/// `hsaKmtPmcStartTrace`: `INVALID_PARAMETER` for trace 0, no buffer or a zero size,
/// `INVALID_HANDLE` for an unknown trace, else `NOT_SUPPORTED` (no kernel interface).
///
/// # Safety
/// `TraceBuffer` is not dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPmcStartTrace(
    TraceId: HSATraceId,
    TraceBuffer: *mut core::ffi::c_void,
    TraceBufferSizeBytes: HSAuint64,
) -> HSAKMT_STATUS {
    if TraceBuffer.is_null() || TraceBufferSizeBytes == 0 {
        return HSAKMT_STATUS_INVALID_PARAMETER;
    }
    run_trace("hsaKmtPmcStartTrace", TraceId)
}

/// `hsaKmtPmcQueryTrace`: as [`hsaKmtPmcStartTrace`].
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPmcQueryTrace(TraceId: HSATraceId) -> HSAKMT_STATUS {
    run_trace("hsaKmtPmcQueryTrace", TraceId)
}

/// `hsaKmtPmcStopTrace`: as [`hsaKmtPmcStartTrace`].
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPmcStopTrace(TraceId: HSATraceId) -> HSAKMT_STATUS {
    run_trace("hsaKmtPmcStopTrace", TraceId)
}
