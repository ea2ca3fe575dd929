//! The command processor's interrupts, delivered to the events model: what a completion
//! signal's mailbox, an SDMA `TRAP`, a `RELEASE_MEM` interrupt and a GPU page fault do in
//! amdkfd (`kfd_signal_event_interrupt`, `kfd_signal_vm_fault_event`). Every interrupt is also
//! recorded for tests ([`RecordedEvents`]).

use std::sync::Arc;

use hsakmt_core::event::{
    FaultFlags, HwException, MemoryError, MemoryFault, ResetCause, ResetType,
};

use super::debug::Debugger;
use super::event::SimEvents;
use super::files::Files;
use super::smi::{Smi, task_name};
use crate::gpu::vm::{GPU_PAGE, GpuVm};
use crate::gpu::watch::WatchPoint;
use crate::gpu::{EventHooks, QueueFault, RecordedEvents};
use crate::isa::{FaultCause, MemFault};

/// The reset cause amdgpu reports for a reset the KFD scheduler asked for
/// (`amdgpu_reset_get_desc` of `AMDGPU_RESET_SRC_HWS`).
pub(crate) const HWS_HANG: &str = "HWS hang";

/// [`EventHooks`] over the events model, the debugger and the SMI clients.
#[derive(Debug)]
pub(crate) struct CpEvents {
    record: Arc<RecordedEvents>,
    events: Arc<SimEvents>,
    debug: Arc<Debugger>,
    files: Arc<Files>,
    smi: Arc<Smi>,
}

impl CpEvents {
    pub(crate) fn new(
        record: Arc<RecordedEvents>,
        events: Arc<SimEvents>,
        debug: Arc<Debugger>,
        files: Arc<Files>,
        smi: Arc<Smi>,
    ) -> Self {
        CpEvents { record, events, debug, files, smi }
    }
}

impl EventHooks for CpEvents {
    fn signal_event(&self, event_id: u32) {
        self.record.signal_event(event_id);
        // The context id carries the event id (28 bits are valid, as for SDMA traps).
        self.events.interrupt(Some(event_id & 0x0FFF_FFFF));
    }

    fn mailbox(&self, vm: &dyn GpuVm, gpu_id: u32, address: u64, event_id: u32) {
        self.record.signal_event(event_id);
        let slot = self.events.page().and_then(|(base, _)| {
            let off = address.checked_sub(base).filter(|o| o % 8 == 0)?;
            u32::try_from(off / 8).ok()
        });
        match slot {
            // A slot of the event page: the model owns those words.
            Some(slot) if self.events.write_mailbox(slot, u64::from(event_id)) => {}
            // Anywhere else: a plain GPU write.
            _ => {
                if let Some(r) = vm.resolve(gpu_id, address, 4)
                    && let Some(w) = hsakmt_core::platform::SharedMemory::u32s(&r).first()
                {
                    w.store(event_id, std::sync::atomic::Ordering::Release);
                }
            }
        }
        self.events.interrupt(Some(event_id));
    }

    fn set_event(&self, event_id: u32) {
        self.record.signal_event(event_id);
        let _ = self.events.set(event_id);
    }

    fn memory_fault(&self, gpu_id: u32, fault: MemFault) {
        self.record.memory_fault(gpu_id, fault);
        self.smi.vm_fault(gpu_id, std::process::id(), &task_name());
        // As amdkfd's SoC15 fault interrupt: the faulting page's address (`page_addr <<
        // PAGE_SHIFT`), the failure bit of the cause, precise.
        let flags = match fault.cause {
            FaultCause::NotPresent => FaultFlags::NOT_PRESENT,
            FaultCause::ReadOnly => FaultFlags::READ_ONLY,
            FaultCause::NoExecute => FaultFlags::NO_EXECUTE,
        };
        let fault = MemoryFault {
            gpu_id,
            node: None,
            address: fault.address & !(GPU_PAGE - 1),
            flags,
            error: MemoryError::None,
            fatal: true,
        };
        self.events.memory_fault(fault.to_kernel());
    }

    fn queue_error(&self, fault: &QueueFault) {
        self.record.queue_error(fault);
    }

    fn debug_exception(&self, fault: &QueueFault) -> bool {
        self.debug.queue_fault(
            &self.files,
            fault.queue_id,
            fault.gpu_id,
            fault.exception,
            fault.address,
        )
    }

    fn address_watches(&self, gpu_id: u32) -> Vec<WatchPoint> {
        self.debug.armed_watches(gpu_id)
    }

    fn address_watch_hit(&self, _gpu_id: u32, queue_id: u32, _id: u32) {
        self.debug.watch_hit(&self.files, queue_id);
    }

    fn gpu_hang(&self, gpu_id: u32) {
        self.record.gpu_hang(gpu_id);
        self.smi.gpu_reset(gpu_id, false, HWS_HANG);
        let hw = HwException {
            gpu_id,
            node: None,
            reset: ResetType::WholeGpu,
            cause: ResetCause::GpuHang,
            memory_lost: false,
        };
        self.events.gpu_reset(hw.to_kernel());
        self.smi.gpu_reset(gpu_id, true, HWS_HANG);
    }
}
